#include "chmqtt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    __typeof__(&mosquitto_max_inflight_messages_set) max_inflight_messages_set;
    __typeof__(&mosquitto_connect_async) connect_async;
    __typeof__(&mosquitto_disconnect) disconnect;
    __typeof__(&mosquitto_publish) publish;
    __typeof__(&mosquitto_subscribe) subscribe;
    __typeof__(&mosquitto_strerror) strerror;
    __typeof__(&mosquitto_connack_string) connack_string;
    __typeof__(&mosquitto_connect_callback_set) connect_callback_set;
    __typeof__(&mosquitto_disconnect_callback_set) disconnect_callback_set;
    __typeof__(&mosquitto_publish_callback_set) publish_callback_set;
    __typeof__(&mosquitto_message_callback_set) message_callback_set;
    __typeof__(&mosquitto_loop) loop;
    __typeof__(&mosquitto_reconnect_async) reconnect_async;
    __typeof__(&mosquitto_threaded_set) threaded_set;
    __typeof__(&mosquitto_log_callback_set) log_callback_set;
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
    RESOLVE(max_inflight_messages_set, "mosquitto_max_inflight_messages_set");
    RESOLVE(connect_async, "mosquitto_connect_async");
    RESOLVE(disconnect, "mosquitto_disconnect");
    RESOLVE(publish, "mosquitto_publish");
    RESOLVE(subscribe, "mosquitto_subscribe");
    RESOLVE(strerror, "mosquitto_strerror");
    RESOLVE(connack_string, "mosquitto_connack_string");
    RESOLVE(connect_callback_set, "mosquitto_connect_callback_set");
    RESOLVE(disconnect_callback_set, "mosquitto_disconnect_callback_set");
    RESOLVE(publish_callback_set, "mosquitto_publish_callback_set");
    RESOLVE(message_callback_set, "mosquitto_message_callback_set");
    RESOLVE(loop, "mosquitto_loop");
    RESOLVE(reconnect_async, "mosquitto_reconnect_async");
    RESOLVE(threaded_set, "mosquitto_threaded_set");
    RESOLVE(log_callback_set, "mosquitto_log_callback_set");
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
int chmqtt_max_inflight_messages_set(struct mosquitto *mosq, unsigned int max_inflight_messages) {
    return mqtt.max_inflight_messages_set(mosq, max_inflight_messages);
}
int chmqtt_connect_async(struct mosquitto *mosq, const char *host, int port, int keepalive) {
    return mqtt.connect_async(mosq, host, port, keepalive);
}
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

struct chmqtt_runner {
    struct mosquitto *mosq;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping;
    unsigned int delay;
    unsigned int delay_max;
    unsigned long attempts;
    chmqtt_failure_callback on_failure;
    chmqtt_attempt_callback on_attempt;
    void *obj;
};

static bool runner_stopping(struct chmqtt_runner *runner) {
    pthread_mutex_lock(&runner->lock);
    bool stopping = runner->stopping;
    pthread_mutex_unlock(&runner->lock);
    return stopping;
}

/* Waits the current back-off (or until stopped), then doubles it up to delay_max. False: stopped. */
static bool runner_wait(struct chmqtt_runner *runner) {
    pthread_mutex_lock(&runner->lock);
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += runner->delay;
    while (!runner->stopping) {
        if (pthread_cond_timedwait(&runner->wake, &runner->lock, &deadline) == ETIMEDOUT) break;
    }
    bool stopping = runner->stopping;
    runner->delay = runner->delay * 2 > runner->delay_max ? runner->delay_max : runner->delay * 2;
    pthread_mutex_unlock(&runner->lock);
    return !stopping;
}

static void *runner_main(void *argument) {
    struct chmqtt_runner *runner = argument;
    struct timespec stop_started = {0, 0};
    for (;;) {
        /* The connection, until it ends (or the stop's DISCONNECT has gone). */
        for (;;) {
            bool stopping = runner_stopping(runner);
            if (stopping) {
                struct timespec now;
                clock_gettime(CLOCK_MONOTONIC, &now);
                if (stop_started.tv_sec == 0) stop_started = now;
                if (now.tv_sec - stop_started.tv_sec >= 5) return NULL;
            }
            int rc = mqtt.loop(runner->mosq, stopping ? 100 : 1000, 1);
            if (rc != MOSQ_ERR_SUCCESS) {
                if (!stopping && runner->on_failure) runner->on_failure(runner->obj, rc, true);
                break;
            }
        }
        /* Ended: again after the back-off, whatever the reason was (TLS, protocol, refused). */
        for (;;) {
            if (!runner_wait(runner)) return NULL;
            pthread_mutex_lock(&runner->lock);
            unsigned long attempt = ++runner->attempts;
            pthread_mutex_unlock(&runner->lock);
            if (runner->on_attempt) runner->on_attempt(runner->obj, attempt);
            int rc = mqtt.reconnect_async(runner->mosq);
            if (rc == MOSQ_ERR_SUCCESS) break;
            if (runner->on_failure) runner->on_failure(runner->obj, rc, false);
        }
    }
}

struct chmqtt_runner *chmqtt_runner_start(
    struct mosquitto *mosq, unsigned int delay_max, chmqtt_failure_callback on_failure, chmqtt_attempt_callback on_attempt,
    void *obj) {
    struct chmqtt_runner *runner = calloc(1, sizeof *runner);
    if (!runner) return NULL;
    runner->mosq = mosq;
    runner->delay = 1;
    runner->delay_max = delay_max < 1 ? 1 : delay_max;
    runner->attempts = 1; /* the first: connect_async, before the runner */
    runner->on_failure = on_failure;
    runner->on_attempt = on_attempt;
    runner->obj = obj;
    pthread_mutex_init(&runner->lock, NULL);
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&runner->wake, &attributes);
    pthread_condattr_destroy(&attributes);
    mqtt.threaded_set(mosq, true);
    if (pthread_create(&runner->thread, NULL, runner_main, runner) != 0) {
        pthread_cond_destroy(&runner->wake);
        pthread_mutex_destroy(&runner->lock);
        free(runner);
        return NULL;
    }
    return runner;
}

void chmqtt_runner_connected(struct chmqtt_runner *runner) {
    pthread_mutex_lock(&runner->lock);
    runner->delay = 1;
    pthread_mutex_unlock(&runner->lock);
}

void chmqtt_runner_stop(struct chmqtt_runner *runner) {
    pthread_mutex_lock(&runner->lock);
    runner->stopping = true;
    pthread_cond_broadcast(&runner->wake);
    pthread_mutex_unlock(&runner->lock);
    mqtt.disconnect(runner->mosq);
    pthread_join(runner->thread, NULL);
    pthread_cond_destroy(&runner->wake);
    pthread_mutex_destroy(&runner->lock);
    free(runner);
}

void chmqtt_log_callback_set(struct mosquitto *mosq, chmqtt_log_callback on_log) { mqtt.log_callback_set(mosq, on_log); }
