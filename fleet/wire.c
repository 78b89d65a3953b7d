/*
 * wire.c — envelope framing over ZeroMQ and the endpoint check (see
 * wire.h). The run configuration, its RunConfig form and its digest are
 * config.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "fleet/wire.h"

/* ---- envelopes ------------------------------------------------------------ */

int sf_wire_encode(Spirefleet__Envelope *env, uint8_t **out, size_t *len) {
    env->version = SF_PROTOCOL_VERSION;
    size_t n = spirefleet__envelope__get_packed_size(env);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return SF_ENOMEM;
    spirefleet__envelope__pack(env, buf);
    *out = buf;
    *len = n;
    return SF_OK;
}

int sf_wire_decode(const uint8_t *data, size_t len, Spirefleet__Envelope **out, sf_err *err) {
    *out = NULL;
    Spirefleet__Envelope *env = spirefleet__envelope__unpack(NULL, len, data);
    if (!env)
        return sf_err_set(err, SF_EFORMAT, "malformed envelope (%zu bytes)", len);
    if (env->version != SF_PROTOCOL_VERSION) {
        int v = (int)env->version;
        spirefleet__envelope__free_unpacked(env, NULL);
        return sf_err_set(err, SF_EVERSION, "protocol version %d, this build speaks %d", v,
                          SF_PROTOCOL_VERSION);
    }
    if (env->body_case == SPIREFLEET__ENVELOPE__BODY__NOT_SET) {
        spirefleet__envelope__free_unpacked(env, NULL);
        return sf_err_set(err, SF_EFORMAT, "envelope has no message body");
    }
    *out = env;
    return SF_OK;
}

void sf_wire_free(Spirefleet__Envelope *env) {
    if (env)
        spirefleet__envelope__free_unpacked(env, NULL);
}

int sf_wire_send(void *socket, const uint8_t *identity, size_t identity_len,
                 Spirefleet__Envelope *env, int dontwait) {
    uint8_t *buf;
    size_t n;
    if (sf_wire_encode(env, &buf, &n) < 0)
        return SF_ENOMEM;
    int flags = dontwait ? ZMQ_DONTWAIT : 0;
    int rc = SF_OK, why = 0;
    if (identity_len > 0 && zmq_send(socket, identity, identity_len, flags | ZMQ_SNDMORE) < 0)
        why = zmq_errno();
    if (!why && zmq_send(socket, buf, n, flags) < 0)
        why = zmq_errno();
    if (why)
        rc = why == EAGAIN ? SF_EFULL : SF_EIO;
    free(buf);
    errno = why; /* the caller's message names ZeroMQ's reason */
    return rc;
}

const char *sf_wire_body_name(const Spirefleet__Envelope *env) {
    const ProtobufCFieldDescriptor *f =
        env && env->body_case != SPIREFLEET__ENVELOPE__BODY__NOT_SET
            ? protobuf_c_message_descriptor_get_field(&spirefleet__envelope__descriptor,
                                                      (unsigned)env->body_case)
            : NULL;
    return f ? f->name : "no body";
}

/* ---- a DEALER's side ------------------------------------------------------ */

int sf_wire_dealer(void *zctx, const char *endpoint, void **sock, sf_err *err) {
    return sf_wire_dealer_secure(zctx, endpoint, NULL, sock, err);
}

int sf_wire_dealer_secure(void *zctx, const char *endpoint, const sf_zsec_client *sec, void **sock,
                          sf_err *err) {
    *sock = zmq_socket(zctx, ZMQ_DEALER);
    if (!*sock)
        return sf_err_set(err, SF_EIO, "%s: cannot make a socket: %s", endpoint,
                          zmq_strerror(zmq_errno()));
    int zero = 0;
    zmq_setsockopt(*sock, ZMQ_LINGER, &zero, sizeof zero);
    if (sf_zsec_client_apply(sec, *sock, err) < 0) {
        zmq_close(*sock);
        *sock = NULL;
        return sf_err_prefix(err, "%s", endpoint);
    }
    if (zmq_connect(*sock, endpoint) != 0) {
        int rc = sf_err_set(err, SF_EINVAL, "%s: not a valid endpoint: %s", endpoint,
                            zmq_strerror(zmq_errno()));
        zmq_close(*sock);
        *sock = NULL;
        return rc;
    }
    return SF_OK;
}

/* sf_wire_recv(); `asked` names the request in a timeout's message (NULL:
 * none was sent). */
static int recv_one(void *sock, const char *endpoint, const char *asked, int timeout_ms,
                    Spirefleet__Envelope **out, sf_err *err) {
    *out = NULL;
    zmq_pollitem_t it = {sock, 0, ZMQ_POLLIN, 0};
    int ready = zmq_poll(&it, 1, timeout_ms);
    if (ready < 0)
        return sf_err_set(err, SF_EIO, "%s: waiting for a message failed: %s", endpoint,
                          zmq_strerror(zmq_errno()));
    if (ready == 0)
        return asked ? sf_err_set(err, SF_ETIMEOUT, "%s: no answer to %s within %d ms", endpoint,
                                  asked, timeout_ms)
                     : sf_err_set(err, SF_ETIMEOUT, "%s: no message within %d ms", endpoint,
                                  timeout_ms);
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, sock, ZMQ_DONTWAIT) < 0) {
        int rc =
            sf_err_set(err, SF_EIO, "%s: cannot receive: %s", endpoint, zmq_strerror(zmq_errno()));
        zmq_msg_close(&m);
        return rc;
    }
    int more = zmq_msg_more(&m);
    int rc = sf_wire_decode(zmq_msg_data(&m), zmq_msg_size(&m), out, err);
    zmq_msg_close(&m);
    while (more) { /* a DEALER's peer sends one frame; drop the rest */
        zmq_msg_init(&m);
        more = zmq_msg_recv(&m, sock, ZMQ_DONTWAIT) >= 0 && zmq_msg_more(&m);
        zmq_msg_close(&m);
    }
    if (rc < 0)
        sf_err_prefix(err, "%s", endpoint);
    return rc;
}

int sf_wire_recv(void *sock, const char *endpoint, int timeout_ms, Spirefleet__Envelope **out,
                 sf_err *err) {
    return recv_one(sock, endpoint, NULL, timeout_ms, out, err);
}

int sf_wire_ask(void *sock, const char *endpoint, Spirefleet__Envelope *req, int timeout_ms,
                Spirefleet__Envelope **out, sf_err *err) {
    *out = NULL;
    const char *what = sf_wire_body_name(req);
    int rc = sf_wire_send(sock, NULL, 0, req, 0);
    if (rc < 0)
        return sf_err_set(err, rc, "%s: cannot send %s: %s", endpoint, what,
                          rc == SF_ENOMEM ? "out of memory" : zmq_strerror(errno));
    rc = recv_one(sock, endpoint, what, timeout_ms, out, err);
    if (rc == SF_OK && (*out)->body_case == SPIREFLEET__ENVELOPE__BODY_ERROR) {
        const char *msg = (*out)->error->message ? (*out)->error->message : "no reason given";
        rc = sf_err_set(err, SF_EREMOTE, "%s: the coordinator answered %s with an error: %s",
                        endpoint, what, msg);
        sf_wire_free(*out);
        *out = NULL;
    }
    return rc;
}

/* ---- endpoints ------------------------------------------------------------ */

/* Documented in wire.h. ZeroMQ would wrap a port above 65535 silently. */
const char *sf_endpoint_problem(const char *s) {
    if (!strncmp(s, "inproc://", 9))
        return "inproc:// reaches only threads of one process, and the coordinator, workers "
               "and gpu-evald are separate processes; use tcp://HOST:PORT or ipc://PATH";
    if (!strncmp(s, "ipc://", 6)) {
        size_t l = strlen(s + 6);
        if (l == 0)
            return "ipc:// needs a socket path";
        if (l > 107)
            return "the ipc:// path is longer than 107 bytes (the Unix socket limit)";
        return NULL;
    }
    if (strncmp(s, "tcp://", 6))
        return "not a tcp://HOST:PORT or ipc://PATH endpoint";
    const char *colon = strrchr(s + 6, ':');
    if (!colon || colon == s + 6)
        return "tcp:// needs HOST:PORT (PORT a number 1..65535, or * for any free port)";
    const char *port = colon + 1;
    if (!strcmp(port, "*"))
        return NULL;
    unsigned long p = 0;
    size_t digits = 0;
    for (const char *q = port; *q; q++, digits++) {
        if (*q < '0' || *q > '9' || digits >= 6)
            return "the tcp:// port must be a number 1..65535, or *";
        p = p * 10 + (unsigned long)(*q - '0');
    }
    if (digits == 0 || p == 0 || p > 65535)
        return "the tcp:// port must be a number 1..65535, or *";
    return NULL;
}
