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
    int rc = SF_OK;
    if (identity_len > 0 && zmq_send(socket, identity, identity_len, flags | ZMQ_SNDMORE) < 0)
        rc = zmq_errno() == EAGAIN ? SF_EFULL : SF_EIO;
    if (rc == SF_OK && zmq_send(socket, buf, n, flags) < 0)
        rc = zmq_errno() == EAGAIN ? SF_EFULL : SF_EIO;
    free(buf);
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
