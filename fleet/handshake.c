/*
 * handshake.c — a client's view of its security handshakes (wire.h,
 * "Watching a DEALER's security handshake").
 *
 * libzmq publishes a socket's events on an inproc PAIR
 * (zmq_socket_monitor): two frames, a 6-byte (uint16 event, uint32 value)
 * header and the endpoint. What each outcome means here:
 *   HANDSHAKE_SUCCEEDED                  the peer admitted us
 *   HANDSHAKE_FAILED_AUTH                the server's ZAP handler refused our
 *                                        key (status 400: not in its lists)
 *   HANDSHAKE_FAILED_PROTOCOL with
 *     ZMTP_MECHANISM_MISMATCH            CURVE on one side only
 *   HANDSHAKE_FAILED_* otherwise, or a   the handshake broke: most often a
 *   DISCONNECTED before any outcome      CURVE client whose server.pub is not
 *                                        the server's (it cannot decrypt us)
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "fleet/wire.h"

#define WATCHED_EVENTS                                                              \
    (ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED | \
     ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |   \
     ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)

int sf_wire_dealer_watched(void *zctx, const char *endpoint, const sf_zsec_client *sec, void **sock,
                           sf_wire_watch *w, sf_err *err) {
    memset(w, 0, sizeof *w);
    *sock = zmq_socket(zctx, ZMQ_DEALER);
    if (!*sock)
        return sf_err_set(err, SF_EIO, "%s: cannot make a socket: %s", endpoint,
                          zmq_strerror(zmq_errno()));
    /* a name of its own per watch: inproc names are per context */
    static atomic_uint serial;
    char name[96];
    snprintf(name, sizeof name, "inproc://sf-wire-watch-%ld-%u", (long)getpid(),
             atomic_fetch_add(&serial, 1));
    w->pair = zmq_socket(zctx, ZMQ_PAIR);
    if (!w->pair || zmq_socket_monitor(*sock, name, WATCHED_EVENTS) != 0 ||
        zmq_connect(w->pair, name) != 0) {
        int rc = sf_err_set(err, SF_EIO, "%s: cannot watch the connection: %s", endpoint,
                            zmq_strerror(zmq_errno()));
        if (w->pair)
            zmq_close(w->pair);
        zmq_close(*sock);
        *sock = NULL;
        memset(w, 0, sizeof *w);
        return rc;
    }
    int zero = 0;
    zmq_setsockopt(w->pair, ZMQ_LINGER, &zero, sizeof zero);
    w->sock = *sock;
    w->curve = sec && sec->on;
    /* sf_wire_dealer_secure() on the socket already made and monitored */
    zmq_setsockopt(*sock, ZMQ_LINGER, &zero, sizeof zero);
    int rc = sf_zsec_client_apply(sec, *sock, err);
    if (rc < 0)
        sf_err_prefix(err, "%s", endpoint);
    else if (zmq_connect(*sock, endpoint) != 0)
        rc = sf_err_set(err, SF_EINVAL, "%s: not a valid endpoint: %s", endpoint,
                        zmq_strerror(zmq_errno()));
    if (rc < 0) {
        sf_wire_watch_close(w);
        zmq_close(*sock);
        *sock = NULL;
    }
    return rc;
}

/* One event: the outcome it tells of. */
static void watch_event(sf_wire_watch *w, uint16_t event, uint32_t value) {
    sf_wire_handshake failed = SF_WIRE_HS_PENDING;
    switch (event) {
    case ZMQ_EVENT_CONNECTED: w->connected = 1; return;
    case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
        w->connected = 0;
        w->state = SF_WIRE_HS_OK;
        return;
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: failed = SF_WIRE_HS_REFUSED; break;
    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        failed = value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH ? SF_WIRE_HS_MISMATCH
                                                                     : SF_WIRE_HS_FAILED;
        break;
    case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL: failed = SF_WIRE_HS_FAILED; break;
    case ZMQ_EVENT_DISCONNECTED:
        if (!w->connected) { /* after a success: the peer left, no verdict */
            if (w->state == SF_WIRE_HS_OK)
                w->state = SF_WIRE_HS_PENDING;
            return;
        }
        /* dropped mid-handshake: a more specific failure seen before stays */
        failed = w->state == SF_WIRE_HS_REFUSED || w->state == SF_WIRE_HS_MISMATCH
                     ? w->state
                     : SF_WIRE_HS_FAILED;
        break;
    default: return;
    }
    w->connected = 0;
    w->state = failed;
    w->failures++;
}

sf_wire_handshake sf_wire_watch_poll(sf_wire_watch *w, int timeout_ms) {
    if (!w->pair)
        return w->state;
    for (int wait = timeout_ms;; wait = 0) {
        zmq_pollitem_t it = {w->pair, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&it, 1, wait) <= 0)
            break;
        zmq_msg_t head, where;
        zmq_msg_init(&head);
        zmq_msg_init(&where);
        if (zmq_msg_recv(&head, w->pair, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&head);
            zmq_msg_close(&where);
            break;
        }
        int more = zmq_msg_more(&head);
        if (more)
            zmq_msg_recv(&where, w->pair, 0); /* the endpoint: a monitor sends both at once */
        if (zmq_msg_size(&head) >= 6) {
            const uint8_t *b = zmq_msg_data(&head);
            uint16_t event;
            uint32_t value;
            memcpy(&event, b, 2);
            memcpy(&value, b + 2, 4);
            watch_event(w, event, value);
        }
        zmq_msg_close(&head);
        zmq_msg_close(&where);
    }
    return w->state;
}

void sf_wire_watch_close(sf_wire_watch *w) {
    if (w->sock)
        zmq_socket_monitor(w->sock, NULL, 0);
    if (w->pair)
        zmq_close(w->pair);
    w->sock = NULL;
    w->pair = NULL;
}

int sf_wire_handshake_error(const sf_wire_watch *w, const char *peer, const char *endpoint,
                            sf_err *err) {
    static const char keys_hint[] =
        "pass --keys DIR (the run's keys directory, see docs/operator.md \"Security\")";
    switch (w->state) {
    case SF_WIRE_HS_REFUSED:
        return sf_err_set(err, SF_EREMOTE,
                          "%s at %s refused the connection's security handshake: this "
                          "client's key is not in the run's keys/clients/ or keys/operators/ "
                          "(another run's key, or one revoked or quarantined); %s",
                          peer, endpoint, keys_hint);
    case SF_WIRE_HS_MISMATCH:
        if (!w->curve)
            return sf_err_set(err, SF_EREMOTE,
                              "%s at %s refused the connection's security handshake: this run "
                              "uses CURVE keys; %s",
                              peer, endpoint, keys_hint);
        return sf_err_set(err, SF_EREMOTE,
                          "%s at %s refused the connection's security handshake: it does not "
                          "use CURVE (security.mode none) and this client was given keys; "
                          "leave out --keys (and SF_KEYS)",
                          peer, endpoint);
    case SF_WIRE_HS_FAILED:
        if (w->curve)
            return sf_err_set(err, SF_EREMOTE,
                              "%s at %s drops the connection during its security handshake: "
                              "the keys' server.pub is not this %s's (keys of another run: %s), "
                              "or it does not use CURVE (security.mode none: leave out --keys)",
                              peer, endpoint, peer, keys_hint);
        /* the server hung up before the client read its greeting (it
         * does, on a mechanism mismatch): a CURVE server, most likely */
        return sf_err_set(err, SF_EREMOTE,
                          "%s at %s refused the connection's security handshake (it hung up "
                          "before completing it): this run most likely uses CURVE keys; %s",
                          peer, endpoint, keys_hint);
    default: return SF_OK;
    }
}
