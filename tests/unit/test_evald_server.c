/* test_evald_server.c — gpu-evald's server and the neteval client over
 * loopback TCP: many concurrent clients answered correctly and in order,
 * error replies, the canary gate, SHA pinning, batching, metrics over HTTP,
 * timeouts with retry and fallback, reconnection, and remote == in-process
 * bit for bit. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include "gpu-evald/evald.h"
#include "gpu-evald/neteval.h"
#include "gpu-evald/wire.h"
#include "model_fixture.h"
#include "sf_check.h"
#include "sf_http.h"

/* ---- a server in a thread ---- */
typedef struct {
    sf_evald *ev;
    pthread_t th;
    int rc;
    char *log;
    size_t log_len;
    FILE *logf;
} server;

static void *server_main(void *p) {
    server *s = p;
    s->rc = sf_evald_run(s->ev, NULL);
    return NULL;
}

/* Create a server with options o, logging to s->log; models are added by
 * the caller, then server_go(). */
static void server_create(server *s, sf_evald_opts o) {
    memset(s, 0, sizeof *s);
    s->logf = open_memstream(&s->log, &s->log_len);
    o.log = s->logf;
    sf_err e = {0};
    ck_assert_msg(sf_evald_create(&o, &s->ev, &e) == SF_OK, "%s", e.msg);
}

static void server_new(server *s, const char *bind, int max_batch, int max_wait_us,
                       int metrics_port) {
    server_create(s, (sf_evald_opts){.bind = bind,
                                     .max_batch = max_batch,
                                     .max_wait_us = max_wait_us,
                                     .metrics_port = metrics_port});
}

static void server_go(server *s) {
    sf_err e = {0};
    ck_assert_msg(sf_evald_bind(s->ev, &e) == SF_OK, "%s", e.msg);
    ck_assert_int_eq(pthread_create(&s->th, NULL, server_main, s), 0);
}

/* Stop, join, free; the log stays readable in s->log until server_done. */
static void server_stop(server *s) {
    sf_evald_stop(s->ev);
    pthread_join(s->th, NULL);
    ck_assert_int_eq(s->rc, SF_OK);
    sf_evald_free(s->ev);
    s->ev = NULL;
    fflush(s->logf);
}

static void server_done(server *s) {
    fclose(s->logf);
    free(s->log);
}

typedef struct {
    char dir[256];
    char path[512];
    sf_bundle *b;
    sf_net *local;
    sf_positions *ps;
} world;

static void world_new(world *w, int npos) {
    fx_tmpdir(w->dir);
    fx_random_bundle(w->dir, "tiny.safetensors", "tiny", 42, 8, w->path);
    w->b = fx_load(w->path);
    sf_err e = {0};
    ck_assert_int_eq(sf_net_create(w->b, NULL, &w->local, &e), SF_OK);
    ck_assert_int_eq(sf_positions_synthetic(4242, npos, &w->ps, &e), SF_OK);
}

static void world_free(world *w) {
    sf_positions_free(w->ps);
    sf_net_free(w->local);
    sf_bundle_free(w->b);
    fx_rmdir(w->dir);
}

/* A server with options o serving w's model, its loop started. */
static void serve_world(server *s, const world *w, sf_evald_opts o) {
    server_create(s, o);
    ck_assert_int_eq(sf_evald_add_model(s->ev, w->path, NULL, NULL, NULL), SF_OK);
    server_go(s);
}

/* A server on a loopback port serving w's model, its loop started. */
static void serve_one(server *s, const world *w, int max_batch, int max_wait_us, int metrics_port) {
    serve_world(s, w,
                (sf_evald_opts){.bind = "tcp://127.0.0.1:*",
                                .max_batch = max_batch,
                                .max_wait_us = max_wait_us,
                                .metrics_port = metrics_port});
}

static sf_neteval *connect_to(const char *endpoint, const char *sha, int timeout_ms, int retries) {
    sf_neteval_opts o = {.endpoint = endpoint,
                         .model_sha256 = sha,
                         .max_inflight = 8,
                         .timeout_ms = timeout_ms,
                         .max_retries = retries};
    sf_neteval *ev;
    sf_err e = {0};
    ck_assert_msg(sf_neteval_connect(&o, NULL, &ev, &e) == SF_OK, "%s", e.msg);
    return ev;
}

/* A world served on a loopback port by a server whose loop runs. */
typedef struct {
    world w;
    server s;
    sf_neteval *client;
    char keys[400]; /* served_curve: the key directory */
} served;

/* With `client`, r->client is a client of the server for w's model (20 s
 * timeout, no retries), which the test closes; else NULL. */
static void served_new(served *r, int npos, int max_batch, int max_wait_us, int metrics_port,
                       int client) {
    world_new(&r->w, npos);
    serve_one(&r->s, &r->w, max_batch, max_wait_us, metrics_port);
    r->client =
        client ? connect_to(sf_evald_endpoint(r->s.ev), sf_bundle_sha256(r->w.b), 20000, 0) : NULL;
}

/* Stop the server, free it and the world. */
static void served_free(served *r) {
    server_stop(&r->s);
    server_done(&r->s);
    world_free(&r->w);
}

/* A CURVE server (its keys in keys = w->dir/keys, made here) serving w's
 * model on a loopback port, its loop started. */
static void serve_curve(server *s, const world *w, char keys[400]) {
    snprintf(keys, 400, "%s/keys", w->dir);
    sf_err e = {0};
    ck_assert_int_eq(sf_zsec_ensure_dir(keys, &e), SF_OK);
    serve_world(s, w,
                (sf_evald_opts){.bind = "tcp://127.0.0.1:*",
                                .max_batch = 8,
                                .max_wait_us = 200,
                                .metrics_port = SF_METRICS_OFF,
                                .keys_dir = keys});
}

/* A world of npos positions served by a CURVE server whose keys are in
 * r->keys (serve_curve); no client. */
static void served_curve(served *r, int npos) {
    world_new(&r->w, npos);
    serve_curve(&r->s, &r->w, r->keys);
    r->client = NULL;
}

/* ev's counters now. */
static sf_neteval_stats stats_of(sf_neteval *ev) {
    sf_neteval_stats st;
    sf_neteval_stats_get(ev, &st);
    return st;
}

/* ---- many clients ---- */
typedef struct {
    const char *endpoint;
    const char *sha;
    const sf_positions *ps;
    const sf_net_out *want; /* reference outputs of every position */
    int k;                  /* client index */
    int failures;
    char why[1024];
} client_job;

static void *client_main(void *p) {
    client_job *j = p;
    sf_neteval_opts o = {.endpoint = j->endpoint,
                         .model_sha256 = j->sha,
                         .max_inflight = 4,
                         .timeout_ms = 20000,
                         .max_retries = 1};
    sf_neteval *ev;
    if (sf_neteval_connect(&o, NULL, &ev, NULL) != SF_OK) {
        j->failures++;
        return NULL;
    }
    enum { R = 6 };
    sf_net_out out[R][8];
    int first[R], size[R];
    uint64_t ticket[R];
    int sent = 0, done = 0, npos = sf_positions_count(j->ps);
    while (done < R) {
        while (sent < R && sf_neteval_inflight(ev) < 4) {
            size[sent] = 1 + (j->k + sent) % 5;
            first[sent] = (j->k * 7 + sent * 3) % (npos - 8);
            sf_pos pos[8];
            for (int i = 0; i < size[sent]; i++)
                pos[i] = sf_positions_get(j->ps, first[sent] + i);
            sf_err e = {0};
            if (sf_neteval_submit(ev, pos, size[sent], out[sent], &ticket[sent], &e) != SF_OK) {
                snprintf(j->why, sizeof j->why, "submit: %s", e.msg);
                j->failures++;
                goto out;
            }
            sent++;
        }
        sf_neteval_done d[4];
        int k = sf_neteval_poll(ev, 1000, d, 4, NULL);
        for (int i = 0; i < k; i++, done++) {
            /* Replies arrive in request order. */
            if (d[i].ticket != ticket[done] || d[i].status != SF_OK || d[i].fell_back) {
                snprintf(j->why, sizeof j->why, "ticket %llu status %d (want ticket %llu): %s",
                         (unsigned long long)d[i].ticket, d[i].status,
                         (unsigned long long)ticket[done], d[i].error);
                j->failures++;
                continue;
            }
            for (int p = 0; p < size[done]; p++)
                if (memcmp(&out[done][p], &j->want[first[done] + p], sizeof(sf_net_out)) != 0) {
                    snprintf(j->why, sizeof j->why, "request %d position %d differs", done, p);
                    j->failures++;
                }
        }
    }
out:
    sf_neteval_close(ev);
    return NULL;
}

START_TEST(many_clients_are_answered_correctly_and_in_order) {
    world w;
    world_new(&w, 64);
    static sf_net_out want[64];
    sf_pos pos[64];
    for (int i = 0; i < 64; i++)
        pos[i] = sf_positions_get(w.ps, i);
    ck_assert_int_eq(sf_net_eval(w.local, pos, 64, want, NULL), SF_OK);
    server s;
    serve_one(&s, &w, 16, 1000, SF_METRICS_OFF);
    enum { C = 12 };
    client_job jobs[C];
    pthread_t th[C];
    for (int k = 0; k < C; k++) {
        jobs[k] =
            (client_job){sf_evald_endpoint(s.ev), sf_bundle_sha256(w.b), w.ps, want, k, 0, ""};
        ck_assert_int_eq(pthread_create(&th[k], NULL, client_main, &jobs[k]), 0);
    }
    for (int k = 0; k < C; k++) {
        pthread_join(th[k], NULL);
        ck_assert_msg(jobs[k].failures == 0, "client %d: %s", k, jobs[k].why);
    }
    char *m = malloc(1 << 16);
    sf_evald_metrics_text(s.ev, m, 1 << 16);
    /* 12 clients x 6 requests of 1 + (k + r) % 5 positions: 72 requests, 213
     * positions (sum over k < 12, r < 6). */
    char want_line[160];
    snprintf(want_line, sizeof want_line, "sf_evald_requests_total{model=\"%s\"} 72",
             sf_bundle_sha256(w.b));
    ck_assert_msg(strstr(m, want_line), "%.400s", strstr(m, "sf_evald_requests_total"));
    snprintf(want_line, sizeof want_line, "sf_evald_evals_total{model=\"%s\"} 213",
             sf_bundle_sha256(w.b));
    ck_assert_msg(strstr(m, want_line), "%.400s", strstr(m, "sf_evald_requests_total"));
    free(m);
    server_stop(&s);
    server_done(&s);
    world_free(&w);
}
END_TEST

/* ---- raw DEALER helpers for malformed traffic ---- */
static void *raw_dealer(void *ctx, const char *endpoint) {
    void *d = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0, t = 10000;
    zmq_setsockopt(d, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(d, ZMQ_RCVTIMEO, &t, sizeof t);
    ck_assert_int_eq(zmq_connect(d, endpoint), 0);
    return d;
}

/* Receive one reply; returns its status and fills id and message. */
static int raw_reply(void *d, uint64_t *id, char *msg, size_t cap) {
    static uint8_t buf[1 << 20];
    int n = zmq_recv(d, buf, sizeof buf, 0);
    ck_assert_msg(n > 0, "no reply: %s", zmq_strerror(zmq_errno()));
    sf_arena arena;
    sf_arena_init(&arena, NULL);
    sf_wire_reply r;
    ck_assert_int_eq(sf_wire_reply_decode(buf, (size_t)n, &arena, &r, NULL), SF_OK);
    *id = r.id;
    snprintf(msg, cap, "%s", r.error);
    int st = r.status;
    sf_arena_free(&arena);
    return st;
}

enum { ANY_ID = -1 };

/* The next reply has status rc and request id `id` (ANY_ID: not checked),
 * and its message is `text` exactly (NULL: not checked). */
static void reply_is(void *d, int rc, int64_t id, const char *text) {
    uint64_t got_id;
    char got[512];
    ck_assert_int_eq(raw_reply(d, &got_id, got, sizeof got), rc);
    if (id != ANY_ID)
        ck_assert_uint_eq(got_id, (uint64_t)id);
    if (text)
        ck_assert_str_eq(got, text);
}

/* As reply_is, the message containing `words`. */
static void reply_has(void *d, int rc, int64_t id, const char *words) {
    uint64_t got_id;
    char got[512];
    ck_assert_int_eq(raw_reply(d, &got_id, got, sizeof got), rc);
    ck_assert_uint_eq(got_id, (uint64_t)id);
    ck_assert_ptr_nonnull(strstr(got, words));
}

START_TEST(bad_requests_get_error_replies_in_order) {
    served r;
    served_new(&r, 16, 8, 1000, SF_METRICS_OFF, 0);
    const char *sha = sf_bundle_sha256(r.w.b);
    void *ctx = zmq_ctx_new();
    void *d = raw_dealer(ctx, sf_evald_endpoint(r.s.ev));
    sf_buf scratch = {0}, msg = {0};
    sf_pos good = sf_positions_get(r.w.ps, 3);
    sf_feat badf;
    memset(&badf, 0, sizeof badf);
    badf.n_tokens = 2, badf.n_queries = 1;
    badf.type[0] = badf.type[1] = SF_TOK_CTX;
    badf.query[0][0] = 5; /* past the tokens: the client would refuse it */
    sf_pos bad = sf_pos_from_feat(&badf);
    /* valid (1), invalid position (2), valid (3), garbage, unknown model (4),
     * oversized (5): replies come back in this order. */
    ck_assert_int_eq(sf_wire_request_encode(1, sha, &good, 1, &scratch, &msg, NULL), SF_OK);
    zmq_send(d, msg.p, msg.len, 0);
    ck_assert_int_eq(sf_wire_request_encode(2, sha, &bad, 1, &scratch, &msg, NULL), SF_OK);
    zmq_send(d, msg.p, msg.len, 0);
    ck_assert_int_eq(sf_wire_request_encode(3, sha, &good, 1, &scratch, &msg, NULL), SF_OK);
    zmq_send(d, msg.p, msg.len, 0);
    zmq_send(d, "\xff\xff\xff", 3, 0);
    const char *other = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";
    ck_assert_int_eq(sf_wire_request_encode(4, other, &good, 1, &scratch, &msg, NULL), SF_OK);
    zmq_send(d, msg.p, msg.len, 0);
    sf_pos nine[9];
    for (int i = 0; i < 9; i++)
        nine[i] = good;
    ck_assert_int_eq(sf_wire_request_encode(5, sha, nine, 9, &scratch, &msg, NULL), SF_OK);
    zmq_send(d, msg.p, msg.len, 0);
    /* two payload frames in one message: still answered, in order */
    ck_assert_int_eq(sf_wire_request_encode(6, sha, &good, 1, &scratch, &msg, NULL), SF_OK);
    zmq_send(d, msg.p, msg.len, ZMQ_SNDMORE);
    zmq_send(d, msg.p, msg.len, 0);
    ck_assert_int_eq(sf_wire_request_encode(7, sha, &good, 1, &scratch, &msg, NULL), SF_OK);
    zmq_send(d, msg.p, msg.len, 0);

    reply_is(d, SF_OK, 1, NULL);
    reply_is(d, SF_EINVAL, 2, "position 0: query 0: card token 5 >= n_tokens 2");
    reply_is(d, SF_OK, 3, NULL);
    reply_has(d, SF_EFORMAT, 0, "does not decode");
    reply_has(d, SF_ENOTFOUND, 4, "unknown model ffff");
    reply_is(d, SF_EFULL, 5, "request of 9 positions exceeds max_batch 8");
    reply_is(d, SF_EFORMAT, ANY_ID, "expected one payload frame, got 2");
    reply_is(d, SF_OK, 7, NULL);

    /* The client library names the same errors. */
    sf_neteval *ev = connect_to(sf_evald_endpoint(r.s.ev), other, 5000, 0);
    sf_net_out o[9];
    sf_err e = {0};
    ck_assert_int_eq(sf_neteval_eval(ev, &good, 1, o, &e), SF_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(e.msg, "unknown model"));
    sf_neteval_stats st = stats_of(ev);
    ck_assert_uint_eq(st.server_errors, 1);
    ck_assert_uint_eq(st.failures, 1);
    sf_neteval_close(ev);
    /* A bad position never leaves the client. */
    ev = connect_to(sf_evald_endpoint(r.s.ev), sha, 5000, 0);
    ck_assert_int_eq(sf_neteval_eval(ev, &bad, 1, o, &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, "position 0: query 0: card token 5 >= n_tokens 2");
    ck_assert_int_eq(sf_neteval_eval(ev, nine, 9, o, &e), SF_EFULL);
    sf_neteval_close(ev);

    char *m = malloc(1 << 16);
    sf_evald_metrics_text(r.s.ev, m, 1 << 16);
    ck_assert_ptr_nonnull(strstr(m, "sf_evald_errors_total{model=\"\",kind=\"malformed\"} 2"));
    ck_assert_ptr_nonnull(strstr(m, "sf_evald_errors_total{model=\"\",kind=\"unknown_model\"} 2"));
    free(m);
    sf_buf_free(&scratch);
    sf_buf_free(&msg);
    zmq_close(d);
    zmq_ctx_term(ctx);
    served_free(&r);
}
END_TEST

/* Two models (champion and candidate) served side by side: requests for
 * each, interleaved from one client, get that model's outputs. */
START_TEST(two_models_are_served_side_by_side) {
    world w;
    world_new(&w, 8);
    char other[512];
    fx_random_bundle(w.dir, "other.safetensors", "tiny", 43, 4, other);
    sf_bundle *b2 = fx_load(other);
    sf_net *net2;
    ck_assert_int_eq(sf_net_create(b2, NULL, &net2, NULL), SF_OK);
    server s;
    server_new(&s, "tcp://127.0.0.1:*", 8, 1000, SF_METRICS_OFF);
    ck_assert_int_eq(sf_evald_add_model(s.ev, w.path, NULL, NULL, NULL), SF_OK);
    ck_assert_int_eq(sf_evald_add_model(s.ev, other, NULL, NULL, NULL), SF_OK);
    ck_assert_int_eq(sf_evald_models_served(s.ev), 2);
    server_go(&s);
    void *ctx = zmq_ctx_new();
    sf_neteval_opts o1 = {.endpoint = sf_evald_endpoint(s.ev),
                          .model_sha256 = sf_bundle_sha256(w.b),
                          .timeout_ms = 20000};
    sf_neteval_opts o2 = o1;
    o2.model_sha256 = sf_bundle_sha256(b2);
    sf_neteval *e1, *e2;
    ck_assert_int_eq(sf_neteval_connect(&o1, ctx, &e1, NULL), SF_OK);
    ck_assert_int_eq(sf_neteval_connect(&o2, ctx, &e2, NULL), SF_OK);
    for (int i = 0; i < 8; i++) {
        sf_pos p = sf_positions_get(w.ps, i);
        sf_net_out r1, r2, l1, l2;
        ck_assert_int_eq(sf_neteval_eval(e1, &p, 1, &r1, NULL), SF_OK);
        ck_assert_int_eq(sf_neteval_eval(e2, &p, 1, &r2, NULL), SF_OK);
        ck_assert_int_eq(sf_net_eval(w.local, &p, 1, &l1, NULL), SF_OK);
        ck_assert_int_eq(sf_net_eval(net2, &p, 1, &l2, NULL), SF_OK);
        ck_assert_mem_eq(&r1, &l1, sizeof r1);
        ck_assert_mem_eq(&r2, &l2, sizeof r2);
        ck_assert(memcmp(&r1, &r2, sizeof r1) != 0);
    }
    sf_neteval_close(e1);
    sf_neteval_close(e2);
    zmq_ctx_term(ctx);
    server_stop(&s);
    server_done(&s);
    sf_net_free(net2);
    sf_bundle_free(b2);
    world_free(&w);
}
END_TEST

/* Hot swap: a server started with models_dir serves a model copied there
 * later, named <sha256>.safetensors, on its first request (canary first,
 * no restart), with the outputs of that model; an unknown SHA-256 without
 * such a file is still an error reply; with model_idle_s 1 the hot-loaded
 * model is dropped once idle and loaded again when asked for. */
START_TEST(models_are_hot_loaded_from_the_models_dir_and_dropped_when_idle) {
    world w;
    world_new(&w, 4);
    char other[512], hot[700];
    fx_random_bundle(w.dir, "other.safetensors", "tiny", 44, 4, other);
    sf_bundle *b2 = fx_load(other);
    sf_net *net2;
    ck_assert_int_eq(sf_net_create(b2, NULL, &net2, NULL), SF_OK);
    server s;
    serve_world(&s, &w,
                (sf_evald_opts){.bind = "tcp://127.0.0.1:*",
                                .max_batch = 8,
                                .max_wait_us = 500,
                                .models_dir = w.dir,
                                .model_idle_s = 1});
    sf_err e = {0};
    /* the registry's name for the new champion */
    snprintf(hot, sizeof hot, "%s/%s.safetensors", w.dir, sf_bundle_sha256(b2));
    ck_assert_int_eq(rename(other, hot), 0);
    sf_neteval *c2 = connect_to(sf_evald_endpoint(s.ev), sf_bundle_sha256(b2), 20000, 0);
    sf_pos p = sf_positions_get(w.ps, 0);
    sf_net_out got, want;
    ck_assert_msg(sf_neteval_eval(c2, &p, 1, &got, &e) == SF_OK, "%s", e.msg);
    ck_assert_int_eq(sf_net_eval(net2, &p, 1, &want, NULL), SF_OK);
    ck_assert_mem_eq(&got, &want, sizeof got);
    /* idle for over a second: dropped; asked again: loaded again */
    usleep(2500 * 1000);
    ck_assert_msg(sf_neteval_eval(c2, &p, 1, &got, &e) == SF_OK, "%s", e.msg);
    ck_assert_mem_eq(&got, &want, sizeof got);
    sf_neteval_close(c2);
    sf_neteval *bad =
        connect_to(sf_evald_endpoint(s.ev),
                   "00000000000000000000000000000000000000000000000000000000000000aa", 20000, 0);
    ck_assert_int_ne(sf_neteval_eval(bad, &p, 1, &got, &e), SF_OK);
    ck_assert_msg(strstr(e.msg, "unknown model") != NULL, "%s", e.msg);
    sf_neteval_close(bad);
    server_stop(&s);
    ck_assert_msg(strstr(s.log, "hot-loaded") != NULL, "%s", s.log);
    ck_assert_msg(strstr(s.log, "dropped") != NULL, "%s", s.log);
    /* loaded, dropped, loaded again: two hot loads */
    const char *first = strstr(s.log, "hot-loaded");
    ck_assert_msg(strstr(first + 1, "hot-loaded") != NULL, "one hot load only:\n%s", s.log);
    server_done(&s);
    sf_net_free(net2);
    sf_bundle_free(b2);
    world_free(&w);
}
END_TEST

/* A client may keep at most client_credit positions queued: with credit 8,
 * a 5-position request waiting for its batch plus a 4-position one is over
 * it; the second is refused (after the first is answered, in order), and
 * the reply tells the client its credit. */
START_TEST(client_credit_limits_queued_positions) {
    world w;
    world_new(&w, 8);
    server s;
    serve_world(&s, &w,
                (sf_evald_opts){.bind = "tcp://127.0.0.1:*",
                                .max_batch = 8,
                                .max_wait_us = 300000,
                                .client_credit = 8,
                                .metrics_port = SF_METRICS_OFF});
    void *ctx = zmq_ctx_new();
    void *d = raw_dealer(ctx, sf_evald_endpoint(s.ev));
    sf_buf scratch = {0}, msg = {0};
    sf_pos p[5];
    for (int i = 0; i < 5; i++)
        p[i] = sf_positions_get(w.ps, i);
    const char *sha = sf_bundle_sha256(w.b);
    ck_assert_int_eq(sf_wire_request_encode(1, sha, p, 5, &scratch, &msg, NULL), SF_OK);
    zmq_send(d, msg.p, msg.len, 0);
    ck_assert_int_eq(sf_wire_request_encode(2, sha, p, 4, &scratch, &msg, NULL), SF_OK);
    zmq_send(d, msg.p, msg.len, 0);
    reply_is(d, SF_OK, 1, NULL);
    reply_is(d, SF_EFULL, 2, "over credit: 5 positions already queued for this client, credit 8");
    sf_buf_free(&scratch);
    sf_buf_free(&msg);
    zmq_close(d);
    zmq_ctx_term(ctx);
    server_stop(&s);
    server_done(&s);
    world_free(&w);
}
END_TEST

/* A model whose canary fails is refused (log line, metric, error replies);
 * a server with nothing else refuses to start. */
START_TEST(canary_failure_refuses_to_serve) {
    world w;
    world_new(&w, 4);
    char bad[512];
    snprintf(bad, sizeof bad, "%s/tampered.safetensors", w.dir);
    sf_tensor t;
    float *vals = fx_tensor_copy(w.path, "canary.value", &t);
    vals[2 * SF_NET_VALUE_BINS + 3] += 0.01f;
    fx_rewrite(w.path, bad, NULL, &t, NULL, NULL);
    free(vals);
    sf_bundle *bb = fx_load(bad);
    char bad_sha[65];
    memcpy(bad_sha, sf_bundle_sha256(bb), 65);
    sf_bundle_free(bb);

    server s;
    server_new(&s, "tcp://127.0.0.1:*", 8, 1000, SF_METRICS_OFF);
    sf_err e = {0};
    int serving = 1;
    ck_assert_int_eq(sf_evald_add_model(s.ev, bad, NULL, &serving, &e), SF_OK);
    ck_assert_int_eq(serving, 0);
    ck_assert_int_eq(e.code, SF_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(e.msg, "golden position 2 output value[3]"));
    ck_assert_int_eq(sf_evald_models_served(s.ev), 0);
    ck_assert_int_eq(sf_evald_bind(s.ev, &e), SF_ESTATE);
    ck_assert_str_eq(e.msg, "no model passed its canary; nothing to serve");
    ck_assert_int_eq(sf_evald_add_model(s.ev, w.path, NULL, &serving, &e), SF_OK);
    ck_assert_int_eq(serving, 1);
    ck_assert_int_eq(sf_evald_models_served(s.ev), 1);
    server_go(&s);
    char *m = malloc(1 << 16);
    sf_evald_metrics_text(s.ev, m, 1 << 16);
    char line[160];
    snprintf(line, sizeof line, "sf_evald_canary_ok{model=\"%s\"} 0", bad_sha);
    ck_assert_msg(strstr(m, line), "%s", m);
    snprintf(line, sizeof line, "sf_evald_canary_ok{model=\"%s\"} 1", sf_bundle_sha256(w.b));
    ck_assert_ptr_nonnull(strstr(m, line));
    /* How far past its tolerance: 0.01 off where the fp32 limit is about
     * 1e-4 + 1e-5 x value, so about 100; the good model is at 0. */
    snprintf(line, sizeof line, "sf_evald_canary_tolerance_ratio{model=\"%s\"} ", bad_sha);
    const char *at = strstr(m, line);
    ck_assert_ptr_nonnull(at);
    double ratio = strtod(at + strlen(line), NULL);
    ck_assert_msg(ratio > 90 && ratio < 101, "ratio %g", ratio);
    snprintf(line, sizeof line, "sf_evald_canary_tolerance_ratio{model=\"%s\"} 0\n",
             sf_bundle_sha256(w.b));
    ck_assert_ptr_nonnull(strstr(m, line));
    free(m);
    sf_neteval *ev = connect_to(sf_evald_endpoint(s.ev), bad_sha, 5000, 0);
    sf_pos p = sf_positions_get(w.ps, 1);
    sf_net_out o;
    ck_assert_int_eq(sf_neteval_eval(ev, &p, 1, &o, &e), SF_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(e.msg, "is refused (canary failed at load)"));
    sf_neteval_close(ev);
    server_stop(&s);
    ck_assert_ptr_nonnull(strstr(s.log, "canary FAILED for model"));
    ck_assert_ptr_nonnull(strstr(s.log, "refusing to serve this model"));
    server_done(&s);
    world_free(&w);
}
END_TEST

/* A pinned digest that does not match is a load error; nothing is served
 * in its place. */
START_TEST(sha_pin_mismatch_is_a_load_error) {
    world w;
    world_new(&w, 1);
    server s;
    server_new(&s, "tcp://127.0.0.1:*", 8, 1000, SF_METRICS_OFF);
    sf_err e = {0};
    const char *pin = "1111111111111111111111111111111111111111111111111111111111111111";
    ck_assert_int_eq(sf_evald_add_model(s.ev, w.path, pin, NULL, &e), SF_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(e.msg, "SHA-256 mismatch"));
    ck_assert_int_eq(sf_evald_models_served(s.ev), 0);
    ck_assert_int_eq(sf_evald_add_model(s.ev, w.path, sf_bundle_sha256(w.b), NULL, &e), SF_OK);
    ck_assert_int_eq(sf_evald_add_model(s.ev, w.path, NULL, NULL, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "already served"));
    sf_evald_free(s.ev);
    fclose(s.logf);
    ck_assert_ptr_nonnull(strstr(s.log, "cannot load model"));
    free(s.log);
    world_free(&w);
}
END_TEST

/* Eight one-position requests fill one batch of max_batch 8; three alone
 * wait max_wait before they run, as one batch of 3. */
START_TEST(batches_fill_to_max_batch_or_wait_max_wait) {
    served r;
    served_new(&r, 16, 8, 5000000, SF_METRICS_OFF, 1);
    sf_net_out out[8];
    uint64_t t;
    for (int i = 0; i < 8; i++) {
        sf_pos p = sf_positions_get(r.w.ps, i);
        ck_assert_int_eq(sf_neteval_submit(r.client, &p, 1, &out[i], &t, NULL), SF_OK);
    }
    int got = 0;
    sf_neteval_done d[8];
    while (got < 8) {
        int k = sf_neteval_poll(r.client, 10000, d, 8, NULL);
        ck_assert_int_gt(k, 0);
        got += k;
    }
    char *m = malloc(1 << 16), line[160];
    const char *sha = sf_bundle_sha256(r.w.b);
    sf_evald_metrics_text(r.s.ev, m, 1 << 16);
    snprintf(line, sizeof line, "sf_evald_batch_size_count{model=\"%s\"} 1", sha);
    ck_assert_msg(strstr(m, line), "%s", m);
    snprintf(line, sizeof line, "sf_evald_batch_size_sum{model=\"%s\"} 8", sha);
    ck_assert_ptr_nonnull(strstr(m, line));
    snprintf(line, sizeof line, "sf_evald_batch_size_bucket{model=\"%s\",le=\"4\"} 0", sha);
    ck_assert_ptr_nonnull(strstr(m, line));
    sf_neteval_close(r.client);
    server_stop(&r.s);
    server_done(&r.s);

    serve_one(&r.s, &r.w, 8, 60000, SF_METRICS_OFF);
    r.client = connect_to(sf_evald_endpoint(r.s.ev), sha, 20000, 0);
    sf_pos three[3] = {sf_positions_get(r.w.ps, 0), sf_positions_get(r.w.ps, 1),
                       sf_positions_get(r.w.ps, 2)};
    uint64_t t0 = sf_now_ns();
    ck_assert_int_eq(sf_neteval_eval(r.client, three, 3, out, NULL), SF_OK);
    /* Not before max_wait (60 ms) is over: a lower bound, not a speed test. */
    ck_assert_uint_ge(sf_now_ns() - t0, 60000000ull);
    sf_evald_metrics_text(r.s.ev, m, 1 << 16);
    snprintf(line, sizeof line, "sf_evald_batch_size_sum{model=\"%s\"} 3", sha);
    ck_assert_ptr_nonnull(strstr(m, line));
    free(m);
    sf_neteval_close(r.client);
    served_free(&r);
}
END_TEST

/* GET /metrics over HTTP serves the same page. */
START_TEST(metrics_are_served_over_http) {
    served r;
    served_new(&r, 8, 8, 1000, SF_METRICS_ANY_PORT, 0);
    int port = sf_evald_metrics_port(r.s.ev);
    ck_assert_int_gt(port, 0);
    sf_neteval *ev = connect_to(sf_evald_endpoint(r.s.ev), sf_bundle_sha256(r.w.b), 20000, 0);
    sf_pos p[5];
    sf_net_out o[5];
    for (int i = 0; i < 5; i++)
        p[i] = sf_positions_get(r.w.ps, i);
    ck_assert_int_eq(sf_neteval_eval(ev, p, 5, o, NULL), SF_OK);
    sf_neteval_close(ev);
    char *page = malloc(1 << 17), line[160];
    sf_test_http(port, "GET /metrics", page, 1 << 17);
    ck_assert_msg(strncmp(page, "HTTP/1.0 200", 12) == 0 || strncmp(page, "HTTP/1.1 200", 12) == 0,
                  "%.80s", page);
    ck_assert_ptr_nonnull(strstr(page, "text/plain; version=0.0.4"));
    snprintf(line, sizeof line, "sf_evald_evals_total{model=\"%s\"} 5", sf_bundle_sha256(r.w.b));
    ck_assert_msg(strstr(page, line), "%s", page);
    ck_assert_ptr_nonnull(strstr(page, "# TYPE sf_evald_batch_size histogram"));
    ck_assert_ptr_nonnull(strstr(page, "sf_evald_queue_wait_seconds{model=\""));
    ck_assert_ptr_nonnull(strstr(page, "quantile=\"0.99\""));
    ck_assert_ptr_nonnull(strstr(page, "sf_evald_clients 1"));
    sf_test_http(port, "GET /other", page, 1 << 17);
    ck_assert_ptr_nonnull(strstr(page, " 404 "));
    free(page);
    served_free(&r);
}
END_TEST

/* ---- failures on the client side ---- */
static int free_tcp_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

static int local_fallback(void *ctx, const sf_pos *pos, int n, sf_net_out *out) {
    return sf_net_eval(ctx, pos, n, out, NULL);
}

/* The counters after one request of `positions` positions timed out on
 * each of `attempts` attempts, each on a new socket (so attempts - 1
 * resends), and was then answered by the fallback, or else failed. */
static sf_neteval_stats timed_out(uint64_t positions, uint64_t attempts, int fell_back) {
    return (sf_neteval_stats){.requests = 1,
                              .positions = positions,
                              .retries = attempts - 1,
                              .reconnects = attempts,
                              .timeouts = attempts,
                              .fallbacks = fell_back ? 1 : 0,
                              .failures = fell_back ? 0 : 1};
}

/* ev's counters are exactly want, every field. */
static void stats_are(sf_neteval *ev, sf_neteval_stats want) {
    sf_neteval_stats st = stats_of(ev);
    ck_assert_msg(memcmp(&st, &want, sizeof st) == 0,
                  "requests %llu, positions %llu, replies %llu, retries %llu, reconnects %llu, "
                  "timeouts %llu, server_errors %llu, fallbacks %llu, failures %llu, "
                  "stale_replies %llu",
                  (unsigned long long)st.requests, (unsigned long long)st.positions,
                  (unsigned long long)st.replies, (unsigned long long)st.retries,
                  (unsigned long long)st.reconnects, (unsigned long long)st.timeouts,
                  (unsigned long long)st.server_errors, (unsigned long long)st.fallbacks,
                  (unsigned long long)st.failures, (unsigned long long)st.stale_replies);
}

/* No server: each attempt times out, is resent on a fresh socket twice,
 * then the fallback answers; every step is counted exactly. */
START_TEST(timeouts_retry_then_fall_back_counted) {
    world w;
    world_new(&w, 4);
    char ep[64];
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", free_tcp_port());
    sf_neteval_opts o = {.endpoint = ep,
                         .model_sha256 = sf_bundle_sha256(w.b),
                         .timeout_ms = 80,
                         .max_retries = 2,
                         .fallback = local_fallback,
                         .fallback_ctx = w.local};
    sf_neteval *ev;
    sf_err e = {0};
    ck_assert_int_eq(sf_neteval_connect(&o, NULL, &ev, &e), SF_OK);
    sf_pos p[2] = {sf_positions_get(w.ps, 2), sf_positions_get(w.ps, 3)};
    sf_net_out got[2], want[2];
    uint64_t t;
    ck_assert_int_eq(sf_neteval_submit(ev, p, 2, got, &t, &e), SF_OK);
    sf_neteval_done d;
    int k;
    while ((k = sf_neteval_poll(ev, 1000, &d, 1, &e)) == 0)
        ;
    ck_assert_int_eq(k, 1);
    ck_assert_uint_eq(d.ticket, t);
    ck_assert_int_eq(d.status, SF_OK);
    ck_assert_int_eq(d.fell_back, 1);
    ck_assert_ptr_nonnull(strstr(d.error, "no reply from"));
    ck_assert_int_eq(sf_net_eval(w.local, p, 2, want, NULL), SF_OK);
    ck_assert_mem_eq(got, want, sizeof want);
    /* one request of 2 positions: 3 attempts (max_retries 2), then the fallback */
    stats_are(ev, timed_out(2, 3, 1));
    sf_neteval_close(ev);

    /* Without a fallback the request fails with SF_ETIMEOUT. */
    o.fallback = NULL;
    o.max_retries = 1;
    ck_assert_int_eq(sf_neteval_connect(&o, NULL, &ev, &e), SF_OK);
    ck_assert_int_eq(sf_neteval_eval(ev, p, 1, got, &e), SF_ETIMEOUT);
    ck_assert_ptr_nonnull(strstr(e.msg, "after 2 attempts of 80 ms"));
    /* one request of 1 position: 2 attempts (max_retries 1), then it failed */
    stats_are(ev, timed_out(1, 2, 0));
    sf_neteval_close(ev);
    world_free(&w);
}
END_TEST

typedef struct {
    server *s;
    const char *path;
    const char *bind;
    int delay_ms;
} restart_job;

static void *restart_main(void *p) {
    restart_job *j = p;
    usleep((useconds_t)j->delay_ms * 1000);
    server_new(j->s, j->bind, 8, 1000, SF_METRICS_OFF);
    sf_evald_add_model(j->s->ev, j->path, NULL, NULL, NULL);
    server_go(j->s);
    return NULL;
}

/* The server goes away and comes back on the same port: the client's
 * retry on a fresh connection gets the answer; nothing falls back. */
START_TEST(client_recovers_when_the_server_restarts) {
    world w;
    world_new(&w, 4);
    char bind_ep[64];
    snprintf(bind_ep, sizeof bind_ep, "tcp://127.0.0.1:%d", free_tcp_port());
    server s1, s2;
    server_new(&s1, bind_ep, 8, 1000, SF_METRICS_OFF);
    ck_assert_int_eq(sf_evald_add_model(s1.ev, w.path, NULL, NULL, NULL), SF_OK);
    server_go(&s1);
    sf_neteval *ev = connect_to(bind_ep, sf_bundle_sha256(w.b), 150, 30);
    sf_pos p = sf_positions_get(w.ps, 1);
    sf_net_out o, want;
    ck_assert_int_eq(sf_neteval_eval(ev, &p, 1, &o, NULL), SF_OK);
    server_stop(&s1);
    server_done(&s1);
    /* Back after 400 ms: longer than a 150 ms attempt, so the client must
     * give up on its socket at least once. */
    restart_job j = {&s2, w.path, bind_ep, 400};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, restart_main, &j), 0);
    sf_err e = {0};
    int rc = sf_neteval_eval(ev, &p, 1, &o, &e);
    pthread_join(th, NULL);
    ck_assert_msg(rc == SF_OK, "%s", e.msg);
    ck_assert_int_eq(sf_net_eval(w.local, &p, 1, &want, NULL), SF_OK);
    ck_assert_mem_eq(&o, &want, sizeof o);
    sf_neteval_stats st = stats_of(ev);
    ck_assert_uint_ge(st.reconnects, 2);
    ck_assert_uint_ge(st.retries, 2);
    ck_assert_uint_eq(st.fallbacks, 0);
    ck_assert_uint_eq(st.failures, 0);
    sf_neteval_close(ev);
    server_stop(&s2);
    server_done(&s2);
    world_free(&w);
}
END_TEST

/* Remote (loopback) and in-process evaluation of the same 64 positions, in
 * requests of 1..13 positions, give the same SHA-256 over the outputs. */
/* gpu-evald with --keys (CURVE): a plain client and a client with an
 * unlisted key get no answer (their requests never reach the decoder:
 * the handshake fails first), and a listed worker key is served with the
 * outputs of the in-process net. (Before --keys, any client was served.) */
START_TEST(curve_admits_only_listed_keys) {
    served r;
    served_curve(&r, 8);
    sf_err e = {0};
    sf_pos p = sf_positions_get(r.w.ps, 0);
    sf_net_out got, want;
    const sf_pos one[1] = {p};
    ck_assert_int_eq(sf_net_eval(r.w.local, one, 1, &want, &e), SF_OK);
    /* plain */
    sf_neteval *plain = connect_to(sf_evald_endpoint(r.s.ev), sf_bundle_sha256(r.w.b), 300, 0);
    ck_assert_int_ne(sf_neteval_eval(plain, &p, 1, &got, &e), SF_OK);
    sf_neteval_close(plain);
    /* an unlisted key */
    sf_zsec_client sec;
    ck_assert_int_eq(sf_zsec_client_load(r.keys, SF_ZSEC_WORKER_NAME, &sec, &e), SF_OK);
    sf_zsec_client stranger = sec;
    ck_assert_int_eq(zmq_curve_keypair(stranger.me.pub, stranger.me.sec), 0);
    sf_neteval_opts co = {.endpoint = sf_evald_endpoint(r.s.ev),
                          .model_sha256 = sf_bundle_sha256(r.w.b),
                          .timeout_ms = 300,
                          .curve = &stranger};
    sf_neteval *ev;
    ck_assert_int_eq(sf_neteval_connect(&co, NULL, &ev, &e), SF_OK);
    ck_assert_int_ne(sf_neteval_eval(ev, &p, 1, &got, &e), SF_OK);
    sf_neteval_close(ev);
    /* the listed worker key */
    co.curve = &sec;
    co.timeout_ms = 20000;
    ck_assert_int_eq(sf_neteval_connect(&co, NULL, &ev, &e), SF_OK);
    ck_assert_msg(sf_neteval_eval(ev, &p, 1, &got, &e) == SF_OK, "%s", e.msg);
    ck_assert_mem_eq(&got, &want, sizeof got);
    sf_neteval_close(ev);
    server_stop(&r.s);
    ck_assert_ptr_nonnull(strstr(r.s.log, "security: refused a connection"));
    server_done(&r.s);
    world_free(&r.w);
}
END_TEST

/* A key added to --r.keys DIR while gpu-evald serves is served at its first
 * handshake, though no admitted client talks to the server: the ZAP
 * handler judges each handshake against the lists on disk, and the loop's
 * sf_zsec_server_check re-reads them within a second. (Before, the lists
 * were read again only when an admitted client's message arrived: an idle
 * gpu-evald refused the new key as long as it stayed idle.) */
START_TEST(curve_serves_a_key_added_to_an_idle_server) {
    served r;
    served_curve(&r, 8);
    sf_err e = {0};
    /* what `sf-fleet keygen DIR --add newcomer` does */
    ck_assert_msg(sf_zsec_add_key(r.keys, "newcomer", SF_ZSEC_CLIENTS_DIR, &e) == SF_OK, "%s",
                  e.msg);
    sf_zsec_client sec;
    ck_assert_int_eq(sf_zsec_client_load(r.keys, "newcomer", &sec, &e), SF_OK);
    sf_pos p = sf_positions_get(r.w.ps, 0);
    sf_net_out got, want;
    ck_assert_int_eq(sf_net_eval(r.w.local, &p, 1, &want, &e), SF_OK);
    /* generous attempts for a loaded machine; served at the first */
    sf_neteval_opts co = {.endpoint = sf_evald_endpoint(r.s.ev),
                          .model_sha256 = sf_bundle_sha256(r.w.b),
                          .timeout_ms = 5000,
                          .max_retries = 1,
                          .curve = &sec};
    sf_neteval *ev;
    ck_assert_int_eq(sf_neteval_connect(&co, NULL, &ev, &e), SF_OK);
    ck_assert_msg(sf_neteval_eval(ev, &p, 1, &got, &e) == SF_OK, "the added key: %s", e.msg);
    ck_assert_mem_eq(&got, &want, sizeof got);
    sf_neteval_close(ev);
    server_stop(&r.s);
    server_done(&r.s);
    world_free(&r.w);
}
END_TEST

START_TEST(remote_and_in_process_outputs_are_identical) {
    served r;
    served_new(&r, 64, 32, 500, SF_METRICS_OFF, 1);
    sf_neteval *local;
    sf_neteval_opts lo = {.model_sha256 = sf_bundle_sha256(r.w.b)};
    sf_err e = {0};
    ck_assert_int_eq(sf_neteval_open_local(r.w.b, &lo, &local, &e), SF_OK);
    ck_assert(sf_neteval_is_local(local));
    static sf_net_out a[64], b[64];
    int at = 0, size = 1;
    while (at < 64) {
        int n = 64 - at < size ? 64 - at : size;
        sf_pos p[13];
        for (int i = 0; i < n; i++)
            p[i] = sf_positions_get(r.w.ps, at + i);
        ck_assert_int_eq(sf_neteval_eval(r.client, p, n, a + at, &e), SF_OK);
        ck_assert_int_eq(sf_neteval_eval(local, p, n, b + at, &e), SF_OK);
        at += n;
        size = size % 13 + 1;
    }
    uint8_t da[32], db[32];
    crypto_hash_sha256(da, (const uint8_t *)a, sizeof a);
    crypto_hash_sha256(db, (const uint8_t *)b, sizeof b);
    ck_assert_mem_eq(da, db, 32);
    /* A local evaluator pinned to another digest refuses the bundle. */
    sf_neteval *wrong;
    lo.model_sha256 = "2222222222222222222222222222222222222222222222222222222222222222";
    ck_assert_int_eq(sf_neteval_open_local(r.w.b, &lo, &wrong, &e), SF_ECORRUPT);
    /* A pin typed in upper case names the same model: the r.client evaluator
     * sends it in lower case (the server knows no other spelling) and the
     * local one accepts the bundle; a malformed pin is refused as such. */
    char upper[65];
    for (int i = 0; i < 65; i++) {
        char ch = sf_bundle_sha256(r.w.b)[i];
        upper[i] = (char)(ch >= 'a' && ch <= 'f' ? ch - 'a' + 'A' : ch);
    }
    sf_neteval *shouty = connect_to(sf_evald_endpoint(r.s.ev), upper, 20000, 0);
    sf_pos p0 = sf_positions_get(r.w.ps, 0);
    ck_assert_int_eq(sf_neteval_eval(shouty, &p0, 1, b, &e), SF_OK);
    ck_assert_mem_eq(&b[0], &a[0], sizeof a[0]);
    sf_neteval_close(shouty);
    lo.model_sha256 = upper;
    ck_assert_msg(sf_neteval_open_local(r.w.b, &lo, &wrong, &e) == SF_OK, "%s", e.msg);
    sf_neteval_close(wrong);
    lo.model_sha256 = "abc";
    ck_assert_int_eq(sf_neteval_open_local(r.w.b, &lo, &wrong, &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, "model_sha256: 'abc' is not 64 hex digits (it has 3 characters)");
    sf_neteval_opts ro = {.endpoint = sf_evald_endpoint(r.s.ev), .model_sha256 = "abc"};
    ck_assert_int_eq(sf_neteval_connect(&ro, NULL, &wrong, &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, "model_sha256: 'abc' is not 64 hex digits (it has 3 characters)");
    sf_neteval_close(local);
    sf_neteval_close(r.client);
    served_free(&r);
}
END_TEST

/* A models dir with no bundle is almost always a wrong path: SF_ENOTFOUND,
 * and one that cannot be opened is the OS's failure (SF_EIO). */
START_TEST(an_empty_models_dir_is_not_found) {
    char dir[] = "/tmp/sf-evald-empty-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    sf_evald_opts o = {.bind = "tcp://127.0.0.1:*", .max_batch = 8, .metrics_port = SF_METRICS_OFF};
    sf_evald *ev = NULL;
    sf_err e = {0};
    ck_assert_msg(sf_evald_create(&o, &ev, &e) == SF_OK, "%s", e.msg);
    int served = -1;
    ck_assert_int_eq(sf_evald_add_models_dir(ev, dir, &served, &e), SF_ENOTFOUND);
    ck_assert_msg(strstr(e.msg, "holds no *.safetensors bundle"), "%s", e.msg);
    ck_assert_int_eq(served, 0);
    ck_assert_int_eq(sf_evald_add_models_dir(ev, "/nonexistent/models", NULL, &e), SF_EIO);
    sf_evald_free(ev);
    rmdir(dir);
}
END_TEST

#include "test-evald-server.tests.h" /* SF_TESTS: every START_TEST above (tests/meson.build) */
SF_CHECK_MAIN("evald-server", "server", 120, NULL, NULL)
