/* test_fleet_wire.c — the fleet's envelopes (fleet/wire.h): decoding
 * untrusted bytes, and one request / one answer on a DEALER with the error
 * convention every client of a coordinator shares. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "fleet/wire.h"
#include "sf_check.h"

/* The bytes of `env` (sf_wire_encode, which sets its version and must
 * succeed; free them). */
static uint8_t *encoded(Spirefleet__Envelope *env, size_t *n) {
    uint8_t *bytes = NULL;
    ck_assert_int_eq(sf_wire_encode(env, &bytes, n), SF_OK);
    return bytes;
}

/* Goodbye (a worker leaving a run for another, docs/operator.md "Fairness
 * between runs") is field 25 of the envelope: its bytes are written out
 * here, so a renumbering that would break older peers fails. */
START_TEST(goodbye_round_trips_with_its_field_number) {
    Spirefleet__Envelope out = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Goodbye g = SPIREFLEET__GOODBYE__INIT;
    g.worker_id = "w1";
    g.reason = "x";
    out.body_case = SPIREFLEET__ENVELOPE__BODY_GOODBYE;
    out.goodbye = &g;
    size_t n;
    uint8_t *bytes = encoded(&out, &n);
    /* version 1 (08 01); field 25, length-delimited: tag (25 << 3 | 2) =
     * 0xca 0x01, length 7; worker_id (0a 02 "w1"), reason (12 01 "x") */
    const uint8_t want[] = {0x08, 0x01, 0xca, 0x01, 0x07, 0x0a, 0x02, 'w', '1', 0x12, 0x01, 'x'};
    ck_assert_uint_eq(n, sizeof want);
    ck_assert_mem_eq(bytes, want, sizeof want);
    Spirefleet__Envelope *env = NULL;
    sf_err e = {0};
    ck_assert_int_eq(sf_wire_decode(bytes, n, &env, &e), SF_OK);
    ck_assert_int_eq(env->body_case, SPIREFLEET__ENVELOPE__BODY_GOODBYE);
    ck_assert_str_eq(env->goodbye->worker_id, "w1");
    ck_assert_str_eq(env->goodbye->reason, "x");
    ck_assert_str_eq(sf_wire_body_name(env), "goodbye");
    sf_wire_free(env);
    free(bytes);
}
END_TEST

START_TEST(envelope_decode_refuses_garbage_and_other_versions) {
    sf_err e = {0};
    Spirefleet__Envelope *env = NULL;
    const uint8_t garbage[] = {0xff, 0xff, 0xff, 0x01, 0x02};
    ck_assert_int_eq(sf_wire_decode(garbage, sizeof garbage, &env, &e), SF_EFORMAT);
    ck_assert_ptr_null(env);
    Spirefleet__Envelope out = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Heartbeat hb = SPIREFLEET__HEARTBEAT__INIT;
    hb.worker_id = "w";
    out.body_case = SPIREFLEET__ENVELOPE__BODY_HEARTBEAT;
    out.heartbeat = &hb;
    size_t n;
    uint8_t *bytes = encoded(&out, &n);
    ck_assert_int_eq(sf_wire_decode(bytes, n, &env, &e), SF_OK);
    ck_assert_int_eq(env->body_case, SPIREFLEET__ENVELOPE__BODY_HEARTBEAT);
    ck_assert_str_eq(env->heartbeat->worker_id, "w");
    sf_wire_free(env);
    free(bytes);
    out.version = 99; /* encode forces the version; pack by hand */
    n = spirefleet__envelope__get_packed_size(&out);
    bytes = malloc(n);
    spirefleet__envelope__pack(&out, bytes);
    ck_assert_int_eq(sf_wire_decode(bytes, n, &env, &e), SF_EVERSION);
    ck_assert_ptr_nonnull(strstr(e.msg, "protocol version 99"));
    free(bytes);
    /* an envelope with no body */
    Spirefleet__Envelope empty = SPIREFLEET__ENVELOPE__INIT;
    empty.version = SF_PROTOCOL_VERSION;
    n = spirefleet__envelope__get_packed_size(&empty);
    bytes = malloc(n + 1);
    spirefleet__envelope__pack(&empty, bytes);
    ck_assert_int_eq(sf_wire_decode(bytes, n, &env, &e), SF_EFORMAT);
    free(bytes);
}
END_TEST

/* A peer that answers the first request it gets with an ErrorReply, and
 * a second one with two frames (a DEALER's peer sends one). */
typedef struct peer {
    void *router;
} peer;

static void *answer_twice(void *p) {
    void *router = ((peer *)p)->router;
    for (int round = 0; round < 2; round++) {
        zmq_msg_t id, body;
        zmq_msg_init(&id);
        zmq_msg_init(&body);
        zmq_msg_recv(&id, router, 0);
        zmq_msg_recv(&body, router, 0);
        Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
        Spirefleet__ErrorReply e = SPIREFLEET__ERROR_REPLY__INIT;
        Spirefleet__Stop st = SPIREFLEET__STOP__INIT;
        if (round == 0) {
            e.code = SF_ESTATE;
            e.message = "unknown worker: send Hello first";
            env.body_case = SPIREFLEET__ENVELOPE__BODY_ERROR;
            env.error = &e;
        } else {
            st.reason = "stopping";
            env.body_case = SPIREFLEET__ENVELOPE__BODY_STOP;
            env.stop = &st;
        }
        size_t n;
        uint8_t *bytes = encoded(&env, &n);
        zmq_send(router, zmq_msg_data(&id), zmq_msg_size(&id), ZMQ_SNDMORE);
        zmq_send(router, bytes, n, round == 1 ? ZMQ_SNDMORE : 0);
        if (round == 1)
            zmq_send(router, "extra", 5, 0);
        free(bytes);
        zmq_msg_close(&id);
        zmq_msg_close(&body);
    }
    return NULL;
}

START_TEST(ask_names_the_endpoint_and_what_failed) {
    void *ctx = zmq_ctx_new();
    void *s = NULL;
    sf_err e = {0};
    ck_assert_int_eq(sf_wire_dealer(ctx, "tcp://no such host", &s, &e), SF_EINVAL);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(e.msg, "tcp://no such host: not a valid endpoint: "), "%s", e.msg);

    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__StatusRequest sr = SPIREFLEET__STATUS_REQUEST__INIT;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_STATUS_REQUEST;
    req.status_request = &sr;
    ck_assert_str_eq(sf_wire_body_name(&req), "status_request");
    Spirefleet__Envelope *rep = NULL;
    /* nobody listens on inproc://nobody: the request waits, nothing answers */
    ck_assert_int_eq(sf_wire_dealer(ctx, "inproc://nobody", &s, &e), SF_OK);
    ck_assert_int_eq(sf_wire_ask(s, "inproc://nobody", &req, 20, &rep, &e), SF_ETIMEOUT);
    ck_assert_ptr_null(rep);
    ck_assert_str_eq(e.msg, "inproc://nobody: no answer to status_request within 20 ms");
    ck_assert_int_eq(sf_wire_recv(s, "inproc://nobody", 0, &rep, &e), SF_ETIMEOUT);
    ck_assert_str_eq(e.msg, "inproc://nobody: no message within 0 ms");
    zmq_close(s);

    peer p = {zmq_socket(ctx, ZMQ_ROUTER)};
    ck_assert_int_eq(zmq_bind(p.router, "inproc://peer"), 0);
    pthread_t th;
    pthread_create(&th, NULL, answer_twice, &p);
    ck_assert_int_eq(sf_wire_dealer(ctx, "inproc://peer", &s, &e), SF_OK);
    /* an ErrorReply to a request is an error carrying the peer's reason */
    ck_assert_int_eq(sf_wire_ask(s, "inproc://peer", &req, 5000, &rep, &e), SF_EREMOTE);
    ck_assert_ptr_null(rep);
    ck_assert_str_eq(e.msg, "inproc://peer: the coordinator answered status_request with an "
                            "error: unknown worker: send Hello first");
    /* frames after the first are dropped */
    ck_assert_int_eq(sf_wire_ask(s, "inproc://peer", &req, 5000, &rep, &e), SF_OK);
    ck_assert_int_eq(rep->body_case, SPIREFLEET__ENVELOPE__BODY_STOP);
    sf_wire_free(rep);
    ck_assert_int_eq(sf_wire_recv(s, "inproc://peer", 50, &rep, &e), SF_ETIMEOUT);
    pthread_join(th, NULL);
    zmq_close(s);
    zmq_close(p.router);
    zmq_ctx_term(ctx);
}
END_TEST

START_TEST(recv_hands_on_an_error_reply_and_names_a_bad_frame) {
    void *ctx = zmq_ctx_new();
    void *router = zmq_socket(ctx, ZMQ_ROUTER), *s;
    ck_assert_int_eq(zmq_bind(router, "inproc://bad"), 0);
    sf_err e = {0};
    ck_assert_int_eq(sf_wire_dealer(ctx, "inproc://bad", &s, &e), SF_OK);
    zmq_send(s, "hi", 2, 0); /* the router learns the dealer's routing id */
    zmq_msg_t id, body;
    zmq_msg_init(&id);
    zmq_msg_init(&body);
    ck_assert_int_ge(zmq_msg_recv(&id, router, 0), 0);
    ck_assert_int_ge(zmq_msg_recv(&body, router, 0), 0);
    zmq_send(router, zmq_msg_data(&id), zmq_msg_size(&id), ZMQ_SNDMORE);
    zmq_send(router, "\xff\xff\xff", 3, 0);
    Spirefleet__Envelope *rep;
    ck_assert_int_eq(sf_wire_recv(s, "inproc://bad", 5000, &rep, &e), SF_EFORMAT);
    ck_assert_ptr_null(rep);
    ck_assert_msg(!strncmp(e.msg, "inproc://bad: malformed envelope", 32), "%s", e.msg);
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ErrorReply er = SPIREFLEET__ERROR_REPLY__INIT;
    er.code = SF_ESTATE;
    er.message = "send Hello first";
    env.body_case = SPIREFLEET__ENVELOPE__BODY_ERROR;
    env.error = &er;
    ck_assert_int_eq(sf_wire_send(router, zmq_msg_data(&id), zmq_msg_size(&id), &env, 0), SF_OK);
    ck_assert_int_eq(sf_wire_recv(s, "inproc://bad", 5000, &rep, &e), SF_OK);
    ck_assert_int_eq(rep->body_case, SPIREFLEET__ENVELOPE__BODY_ERROR);
    ck_assert_int_eq(rep->error->code, SF_ESTATE);
    sf_wire_free(rep);
    zmq_msg_close(&id);
    zmq_msg_close(&body);
    zmq_close(s);
    zmq_close(router);
    zmq_ctx_term(ctx);
}
END_TEST

/* ---- the handshake watch --------------------------------------------------
 * A CURVE server (the coordinator's ZAP handler, common/zsec.h) refuses a
 * client in the handshake and never answers it; the watch tells the client
 * how it was refused, so that it can say what to do at once instead of
 * after its request's timeout. Before the watch, a refused client learnt
 * nothing until its timeout, and then only "no answer". */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* The outcome of a DEALER with `sec` connecting to `endpoint`: the first
 * that is not pending, waited for up to 20 s (the handshake takes a round
 * trip or two; the bound is for a loaded machine), and its message. */
static sf_wire_handshake outcome(void *ctx, const char *endpoint, const sf_zsec_client *sec,
                                 sf_err *msg) {
    void *s = NULL;
    sf_wire_watch w;
    sf_err e = {0};
    ck_assert_int_eq(sf_wire_dealer_watched(ctx, endpoint, sec, &s, &w, &e), SF_OK);
    sf_wire_handshake hs = SF_WIRE_HS_PENDING;
    for (int i = 0; i < 200 && hs == SF_WIRE_HS_PENDING; i++)
        hs = sf_wire_watch_poll(&w, 100);
    sf_wire_handshake_error(&w, "coordinator", endpoint, msg);
    sf_wire_watch_close(&w);
    zmq_close(s);
    return hs;
}

/* A ROUTER bound to an OS-assigned loopback port, its endpoint in `ep`
 * (`cap` bytes); secured by `zs` when given, plain otherwise. */
static void *loopback_router(void *ctx, sf_zsec_server *zs, char *ep, size_t cap) {
    void *router = zmq_socket(ctx, ZMQ_ROUTER);
    int zero = 0;
    zmq_setsockopt(router, ZMQ_LINGER, &zero, sizeof zero);
    sf_err e = {0};
    if (zs)
        ck_assert_int_eq(sf_zsec_server_apply(zs, router, &e), SF_OK);
    ck_assert_int_eq(zmq_bind(router, "tcp://127.0.0.1:*"), 0);
    ck_assert_int_eq(zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, ep, &cap), 0);
    return router;
}

START_TEST(a_refused_handshake_is_told_with_what_to_do) {
    char dir[] = "/tmp/sf-wire-keys-XXXXXX", run[64], other[64], ep[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(other, sizeof other, "%s/other", dir);
    sf_err e = {0};
    ck_assert_int_eq(sf_zsec_ensure_dir(run, &e), SF_OK);
    void *ctx = zmq_ctx_new();
    sf_zsec_server *zs = NULL;
    ck_assert_int_eq(sf_zsec_server_open(ctx, run, NULL, NULL, &zs, &e), SF_OK);
    void *router = loopback_router(ctx, zs, ep, sizeof ep);

    /* the run's worker key: admitted */
    sf_zsec_client worker;
    ck_assert_int_eq(sf_zsec_client_load(run, SF_ZSEC_WORKER_NAME, &worker, &e), SF_OK);
    sf_err m = {0};
    ck_assert_int_eq(outcome(ctx, ep, &worker, &m), SF_WIRE_HS_OK);
    ck_assert_str_eq(m.msg, ""); /* not a failure: nothing said */

    /* no keys: CURVE on one side only (or, when the server hangs up
     * first, a handshake that never completes); either way: --keys */
    sf_zsec_client plain = {0};
    sf_wire_handshake hs = outcome(ctx, ep, &plain, &m);
    ck_assert_msg(hs == SF_WIRE_HS_MISMATCH || hs == SF_WIRE_HS_FAILED, "outcome %d", (int)hs);
    ck_assert_msg(strstr(m.msg, ep) && strstr(m.msg, "pass --keys DIR (the run's keys directory, "
                                                     "see docs/operator.md \"Security\")"),
                  "%s", m.msg);
    if (hs == SF_WIRE_HS_MISMATCH)
        ck_assert_msg(strstr(m.msg, "refused the connection's security handshake: this run "
                                    "uses CURVE keys"),
                      "%s", m.msg);

    /* a key the server does not list (with the server's public key): the
     * ZAP handler refuses it, and counts it */
    sf_zsec_client stranger = worker;
    ck_assert_int_eq(sf_zsec_keygen(other, SF_ZSEC_WORKER_NAME, &stranger.me, &e), SF_OK);
    ck_assert_int_eq(outcome(ctx, ep, &stranger, &m), SF_WIRE_HS_REFUSED);
    ck_assert_msg(strstr(m.msg, "refused the connection's security handshake: this client's "
                                "key is not in the run's keys/clients/"),
                  "%s", m.msg);
    sf_zsec_counts counts;
    sf_zsec_server_counts(zs, &counts);
    ck_assert_uint_ge(counts.handshakes_denied, 1);

    zmq_close(router);
    sf_zsec_server_close(zs);
    zmq_ctx_term(ctx);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
END_TEST

START_TEST(keys_against_a_plain_server_say_to_leave_them_out) {
    char dir[] = "/tmp/sf-wire-keys-XXXXXX", ep[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    sf_err e = {0};
    ck_assert_int_eq(sf_zsec_ensure_dir(dir, &e), SF_OK);
    void *ctx = zmq_ctx_new();
    void *router = loopback_router(ctx, NULL, ep, sizeof ep);
    sf_zsec_client worker;
    ck_assert_int_eq(sf_zsec_client_load(dir, SF_ZSEC_WORKER_NAME, &worker, &e), SF_OK);
    sf_err m = {0};
    sf_wire_handshake hs = outcome(ctx, ep, &worker, &m);
    ck_assert_msg(hs == SF_WIRE_HS_MISMATCH || hs == SF_WIRE_HS_FAILED, "outcome %d", (int)hs);
    ck_assert_msg(strstr(m.msg, "does not use CURVE (security.mode none") &&
                      strstr(m.msg, "leave out --keys"),
                  "%s", m.msg);
    zmq_close(router);
    zmq_ctx_term(ctx);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
END_TEST

#include "test-fleet-wire.tests.h" /* SF_TESTS: every START_TEST above (tests/meson.build) */
SF_CHECK_MAIN("fleet-wire", "fleet-wire", 30, NULL, NULL)
