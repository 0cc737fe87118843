#include "chmqtt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/*
 * libmosquitto is loaded on first use, as libcrypto is (see chcrypto.c): the functions come
 * from libmosquitto.so.1 through dlsym, typed by Debian's header.
 */
static struct {
    __typeof__(&mosquitto_lib_init) lib_init;
    __typeof__(&mosquitto_new) new_client;
    __typeof__(&mosquitto_destroy) destroy;
    __typeof__(&mosquitto_user_data_set) user_data_set;
    __typeof__(&mosquitto_will_set) will_set;
    __typeof__(&mosquitto_username_pw_set) username_pw_set;
    __typeof__(&mosquitto_tls_set) tls_set;
    __typeof__(&mosquitto_reconnect_delay_set) reconnect_delay_set;
    __typeof__(&mosquitto_max_inflight_messages_set) max_inflight_messages_set;
    __typeof__(&mosquitto_connect_async) connect_async;
    __typeof__(&mosquitto_loop_start) loop_start;
    __typeof__(&mosquitto_loop_stop) loop_stop;
    __typeof__(&mosquitto_disconnect) disconnect;
    __typeof__(&mosquitto_publish) publish;
    __typeof__(&mosquitto_subscribe) subscribe;
    __typeof__(&mosquitto_strerror) strerror;
    __typeof__(&mosquitto_connack_string) connack_string;
    __typeof__(&mosquitto_connect_callback_set) connect_callback_set;
    __typeof__(&mosquitto_disconnect_callback_set) disconnect_callback_set;
    __typeof__(&mosquitto_publish_callback_set) publish_callback_set;
    __typeof__(&mosquitto_message_callback_set) message_callback_set;
} mqtt;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_result = -1;
static char load_error[256];

#define RESOLVE(field, name)                                                                   \
    do {                                                                                       \
        *(void **)(&mqtt.field) = dlsym(library, name);                                        \
        if (!mqtt.field) {                                                                     \
            snprintf(load_error, sizeof load_error, "libmosquitto.so.1 has no %s", name);      \
            return;                                                                            \
        }                                                                                      \
    } while (0)

static void load(void) {
    void *library = dlopen("libmosquitto.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char *reason = dlerror();
        snprintf(load_error, sizeof load_error, "%s", reason ? reason : "cannot open libmosquitto.so.1");
        return;
    }
    RESOLVE(lib_init, "mosquitto_lib_init");
    RESOLVE(new_client, "mosquitto_new");
    RESOLVE(destroy, "mosquitto_destroy");
    RESOLVE(user_data_set, "mosquitto_user_data_set");
    RESOLVE(will_set, "mosquitto_will_set");
    RESOLVE(username_pw_set, "mosquitto_username_pw_set");
    RESOLVE(tls_set, "mosquitto_tls_set");
    RESOLVE(reconnect_delay_set, "mosquitto_reconnect_delay_set");
    RESOLVE(max_inflight_messages_set, "mosquitto_max_inflight_messages_set");
    RESOLVE(connect_async, "mosquitto_connect_async");
    RESOLVE(loop_start, "mosquitto_loop_start");
    RESOLVE(loop_stop, "mosquitto_loop_stop");
    RESOLVE(disconnect, "mosquitto_disconnect");
    RESOLVE(publish, "mosquitto_publish");
    RESOLVE(subscribe, "mosquitto_subscribe");
    RESOLVE(strerror, "mosquitto_strerror");
    RESOLVE(connack_string, "mosquitto_connack_string");
    RESOLVE(connect_callback_set, "mosquitto_connect_callback_set");
    RESOLVE(disconnect_callback_set, "mosquitto_disconnect_callback_set");
    RESOLVE(publish_callback_set, "mosquitto_publish_callback_set");
    RESOLVE(message_callback_set, "mosquitto_message_callback_set");
    int rc = mqtt.lib_init();
    if (rc != MOSQ_ERR_SUCCESS) {
        snprintf(load_error, sizeof load_error, "mosquitto_lib_init failed (%d)", rc);
        return;
    }
    load_result = 0;
}

int chmqtt_load(void) {
    pthread_once(&load_once, load);
    return load_result;
}

const char *chmqtt_load_error(void) { return load_error; }

struct mosquitto *chmqtt_new(const char *id, bool clean_session, void *obj) { return mqtt.new_client(id, clean_session, obj); }
void chmqtt_destroy(struct mosquitto *mosq) { mqtt.destroy(mosq); }
void chmqtt_user_data_set(struct mosquitto *mosq, void *obj) { mqtt.user_data_set(mosq, obj); }
int chmqtt_will_set(struct mosquitto *mosq, const char *topic, int payloadlen, const void *payload, int qos, bool retain) {
    return mqtt.will_set(mosq, topic, payloadlen, payload, qos, retain);
}
int chmqtt_username_pw_set(struct mosquitto *mosq, const char *username, const char *password) {
    return mqtt.username_pw_set(mosq, username, password);
}
int chmqtt_tls_set(struct mosquitto *mosq, const char *cafile, const char *capath) {
    return mqtt.tls_set(mosq, cafile, capath, NULL, NULL, NULL);
}
int chmqtt_reconnect_delay_set(struct mosquitto *mosq, unsigned int delay, unsigned int delay_max, bool exponential) {
    return mqtt.reconnect_delay_set(mosq, delay, delay_max, exponential);
}
int chmqtt_max_inflight_messages_set(struct mosquitto *mosq, unsigned int max_inflight_messages) {
    return mqtt.max_inflight_messages_set(mosq, max_inflight_messages);
}
int chmqtt_connect_async(struct mosquitto *mosq, const char *host, int port, int keepalive) {
    return mqtt.connect_async(mosq, host, port, keepalive);
}
int chmqtt_loop_start(struct mosquitto *mosq) { return mqtt.loop_start(mosq); }
int chmqtt_loop_stop(struct mosquitto *mosq, bool force) { return mqtt.loop_stop(mosq, force); }
int chmqtt_disconnect(struct mosquitto *mosq) { return mqtt.disconnect(mosq); }
int chmqtt_publish(struct mosquitto *mosq, int *mid, const char *topic, int payloadlen, const void *payload, int qos, bool retain) {
    return mqtt.publish(mosq, mid, topic, payloadlen, payload, qos, retain);
}
int chmqtt_subscribe(struct mosquitto *mosq, int *mid, const char *pattern, int qos) { return mqtt.subscribe(mosq, mid, pattern, qos); }
const char *chmqtt_strerror(int error) { return mqtt.strerror(error); }
const char *chmqtt_connack_string(int code) { return mqtt.connack_string(code); }

void chmqtt_callbacks_set(
    struct mosquitto *mosq, chmqtt_connect_callback on_connect, chmqtt_disconnect_callback on_disconnect,
    chmqtt_publish_callback on_publish, chmqtt_message_callback on_message) {
    mqtt.connect_callback_set(mosq, on_connect);
    mqtt.disconnect_callback_set(mosq, on_disconnect);
    mqtt.publish_callback_set(mosq, on_publish);
    mqtt.message_callback_set(mosq, on_message);
}
