#ifndef CHMQTT_H
#define CHMQTT_H

/*
 * A thin shim over Debian's libmosquitto (libmosquitto-dev for the header, libmosquitto1 at run
 * time): the library is opened with dlopen on first use (only `gateway --mqtt` needs it, and
 * every other gattclient start stays free of it), and each function below forwards to the
 * library's own of the same name without the `ch` prefix. The callbacks take the client's
 * `obj` (the Swift side's context).
 */

#include <mosquitto.h>
#include <stdbool.h>

/* Opens libmosquitto.so.1 and initialises it (once; thread-safe). 0, or -1 with the reason in
 * chmqtt_load_error(). */
int chmqtt_load(void);
const char *chmqtt_load_error(void);

struct mosquitto *chmqtt_new(const char *id, bool clean_session, void *obj);
void chmqtt_destroy(struct mosquitto *mosq);
void chmqtt_user_data_set(struct mosquitto *mosq, void *obj);
int chmqtt_will_set(struct mosquitto *mosq, const char *topic, int payloadlen, const void *payload, int qos, bool retain);
int chmqtt_username_pw_set(struct mosquitto *mosq, const char *username, const char *password);
int chmqtt_tls_set(struct mosquitto *mosq, const char *cafile, const char *capath);
int chmqtt_max_inflight_messages_set(struct mosquitto *mosq, unsigned int max_inflight_messages);
int chmqtt_connect_async(struct mosquitto *mosq, const char *host, int port, int keepalive);
int chmqtt_disconnect(struct mosquitto *mosq);
int chmqtt_publish(struct mosquitto *mosq, int *mid, const char *topic, int payloadlen, const void *payload, int qos, bool retain);
int chmqtt_subscribe(struct mosquitto *mosq, int *mid, const char *pattern, int qos);
const char *chmqtt_strerror(int error);
const char *chmqtt_connack_string(int code);

typedef void (*chmqtt_connect_callback)(struct mosquitto *mosq, void *obj, int rc);
typedef void (*chmqtt_disconnect_callback)(struct mosquitto *mosq, void *obj, int rc);
typedef void (*chmqtt_publish_callback)(struct mosquitto *mosq, void *obj, int mid);
typedef void (*chmqtt_message_callback)(struct mosquitto *mosq, void *obj, const struct mosquitto_message *message);

/*
 * The network thread, ours rather than mosquitto_loop_start's: libmosquitto's own thread
 * (mosquitto_loop_forever) ends for good after a "fatal" error — a TLS failure such as a
 * certificate name mismatch, a protocol error — and nothing restarts it. This one runs
 * mosquitto_loop until the connection ends, then waits (1 s, doubling to delay_max seconds;
 * back to 1 s after chmqtt_runner_connected) and connects again (mosquitto_reconnect_async),
 * for every failure, until chmqtt_runner_stop. Publishing from other threads is safe: the
 * client is put in threaded mode (mosquitto_threaded_set), so their packets are queued and the
 * loop, woken, writes them. on_failure is called on this thread with mosquitto_loop's code
 * when the connection ends (`ended` true: libmosquitto may have called on_disconnect for it
 * too, but not for a failure before the connection was up, such as a TLS handshake's), and
 * with mosquitto_reconnect_async's when a new connection cannot even start (`ended` false);
 * on_attempt before every connection attempt after the first (its count: 2, 3, …).
 */
typedef void (*chmqtt_failure_callback)(void *obj, int rc, bool ended);
typedef void (*chmqtt_attempt_callback)(void *obj, unsigned long attempt);
struct chmqtt_runner;
struct chmqtt_runner *chmqtt_runner_start(
    struct mosquitto *mosq, unsigned int delay_max, chmqtt_failure_callback on_failure, chmqtt_attempt_callback on_attempt,
    void *obj);
/* A connection was accepted (CONNACK success): the next wait starts at 1 s again. */
void chmqtt_runner_connected(struct chmqtt_runner *runner);
/* Disconnects (DISCONNECT sent when connected: no last will), ends the thread (at most 5 s
 * more on a connection that does not close) and frees the runner. */
void chmqtt_runner_stop(struct chmqtt_runner *runner);

/* All four at once (any may be NULL). */
void chmqtt_callbacks_set(
    struct mosquitto *mosq, chmqtt_connect_callback on_connect, chmqtt_disconnect_callback on_disconnect,
    chmqtt_publish_callback on_publish, chmqtt_message_callback on_message);

/* libmosquitto's log lines (level MOSQ_LOG_*): an OpenSSL error's text comes only this way. */
typedef void (*chmqtt_log_callback)(struct mosquitto *mosq, void *obj, int level, const char *text);
void chmqtt_log_callback_set(struct mosquitto *mosq, chmqtt_log_callback on_log);

#endif
