/* test_coordinator.c — the coordinator's ledger, leases, shard intake,
 * untrusted frames, restart, metrics and the trainers' pull, driven by
 * in-process DEALER clients speaking fleet.proto. Shards are real sealed
 * shards built from synthetic records (tests/support/label_synth.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zmq.h>

#include "common/metrics_http.h"
#include "common/registry.h"
#include "config_fixture.h"
#include "coordinator/internal.h"
#include "label_synth.h"
#include "sf_check.h"
#include "sf_http.h"
#include "sf_tmpdir.h"
#include "shard/cli/cli.h"

SF_TMPDIR_OF_TESTS("sf-coord")

/* A run whose workers count as alive for `liveness` heartbeats of 100 ms
 * of silence. */
static void make_cfg_window(sf_run_config *cfg, const char *sub, int lease_s, int seeds,
                            int liveness, const char *extra) {
    config_of(cfg,
              "run: {name: ctest, output_dir: '%s/%s'}\n"
              "seeds: {start: 100, count: %d, job_size: 4}\n"
              "coordinator: {endpoint: 'tcp://127.0.0.1:*', lease_seconds: %d, heartbeat_ms: 100,"
              " heartbeat_liveness: %d}\n%s%s",
              tmpdir, sub, seeds, lease_s, liveness, extra ? extra : "",
              /* no audits where a test counts jobs (the audit tests ask
               * for them) */
              extra && strstr(extra, "security:")
                  ? ""
                  : "security: {audit_fraction: 0, audit_first_jobs: 0}\n");
}

static void make_cfg_n(sf_run_config *cfg, const char *sub, int lease_s, int seeds,
                       const char *extra) {
    make_cfg_window(cfg, sub, lease_s, seeds, 3, extra);
}

/* A run (60 s leases) whose workers stay alive for 30 s of silence: for
 * tests of what keys may do, where a worker falling silent for the 300 ms
 * of make_cfg_n's liveness window on a loaded machine would change which
 * keys count as present (audits and lease shares need two alive). */
static void make_cfg_live(sf_run_config *cfg, const char *sub, int seeds, const char *extra) {
    config_of(cfg,
              "run: {name: ctest, output_dir: '%s/%s'}\n"
              "seeds: {start: 100, count: %d, job_size: 4}\n"
              "coordinator: {endpoint: 'tcp://127.0.0.1:*', lease_seconds: 60, heartbeat_ms: 1000,"
              " heartbeat_liveness: 30}\n%s%s",
              tmpdir, sub, seeds, extra ? extra : "",
              extra && strstr(extra, "security:")
                  ? ""
                  : "security: {audit_fraction: 0, audit_first_jobs: 0}\n");
}

static void make_cfg(sf_run_config *cfg, const char *sub, int lease_s, const char *extra) {
    make_cfg_n(cfg, sub, lease_s, 12, extra);
}

typedef struct client {
    void *ctx, *sock;
} client;

/* A DEALER with the key `name` of the run's key directory
 * (<output_dir>/keys, made by the coordinator: common/zsec.h). */
static void client_open_as(client *c, sf_coordinator *co, const char *name) {
    c->ctx = zmq_ctx_new();
    sf_err e = {0};
    char dir[400];
    sf_config_keys_dir(&co->cfg, dir, sizeof dir);
    sf_zsec_client sec;
    ck_assert_msg(sf_zsec_client_load(dir, name, &sec, &e) == SF_OK, "%s", e.msg);
    ck_assert_msg(sf_wire_dealer_secure(c->ctx, sf_coordinator_endpoint(co), &sec, &c->sock, &e) ==
                      SF_OK,
                  "%s", e.msg);
}

/* A worker's connection. */
static void client_open(client *c, sf_coordinator *co) {
    client_open_as(c, co, SF_ZSEC_WORKER_NAME);
}

static void client_close(client *c) {
    zmq_close(c->sock);
    zmq_ctx_term(c->ctx);
}

/* How long a test waits for something it expects before it fails. Every
 * wait ends as soon as its condition holds, so a pass never waits this out
 * and a loaded machine only makes the waits longer, not the test fail;
 * only a failure costs the whole bound (well under Check's 600 s). */
#define WAIT_NS (120ull * 1000000000ull)

/* Pump the coordinator until one reply reaches `c` (or WAIT_NS pass). */
static Spirefleet__Envelope *pump(sf_coordinator *co, client *c) {
    sf_err e = {0};
    uint64_t t0 = sf_now_ns();
    do {
        ck_assert_int_eq(sf_coordinator_step(co, 10, &e), SF_OK);
        Spirefleet__Envelope *env;
        int rc = sf_wire_recv(c->sock, "the coordinator", 0, &env, &e);
        if (rc == SF_ETIMEOUT)
            continue;
        ck_assert_msg(rc == SF_OK, "reply does not decode: %s", e.msg);
        return env;
    } while (sf_now_ns() - t0 < WAIT_NS);
    ck_abort_msg("no reply from the coordinator");
    return NULL;
}

static Spirefleet__Envelope *rpc(sf_coordinator *co, client *c, Spirefleet__Envelope *req) {
    ck_assert_int_eq(sf_wire_send(c->sock, NULL, 0, req, 0), SF_OK);
    return pump(co, c);
}

/* Hello as `id` from process `pid` (0: not said). */
static void send_hello_pid(client *c, const char *id, uint32_t pid) {
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Hello h = SPIREFLEET__HELLO__INIT;
    h.protocol_version = SF_PROTOCOL_VERSION;
    h.worker_id = (char *)id;
    h.pid = pid;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_HELLO;
    req.hello = &h;
    ck_assert_int_eq(sf_wire_send(c->sock, NULL, 0, &req, 0), SF_OK);
}

static void send_hello(client *c, const char *id) {
    send_hello_pid(c, id, 0);
}

/* A Hello, then 7 bytes that are no envelope, offered by a peer whose
 * handshake the coordinator refuses: never a blocking send. Once its
 * handshake has failed, the DEALER has no peer left (libzmq does not
 * connect again after a refused handshake), and a blocking send would
 * wait for one forever: whether the messages were queued before that is
 * a race the test does not depend on. */
static void offer_hello_and_garbage(client *c, const char *id) {
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Hello h = SPIREFLEET__HELLO__INIT;
    h.protocol_version = SF_PROTOCOL_VERSION;
    h.worker_id = (char *)id;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_HELLO;
    req.hello = &h;
    int rc = sf_wire_send(c->sock, NULL, 0, &req, 1);
    ck_assert_msg(rc == SF_OK || rc == SF_EFULL, "sf_wire_send: %d", rc);
    ck_assert(zmq_send(c->sock, "garbage", 7, ZMQ_DONTWAIT) == 7 || zmq_errno() == EAGAIN);
}

/* Hello as `id`; the coordinator's answer (free it). */
static Spirefleet__Envelope *hello_answer(sf_coordinator *co, client *c, const char *id) {
    send_hello(c, id);
    return pump(co, c);
}

static void hello(sf_coordinator *co, client *c, const char *id) {
    Spirefleet__Envelope *r = hello_answer(co, c, id);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_WELCOME);
    sf_wire_free(r);
}

/* The RunComplete the coordinator tells each live worker when the last
 * job is done: waited for, not just given a while to arrive. */
static void expect_run_complete(sf_coordinator *co, client *c) {
    Spirefleet__Envelope *r = pump(co, c);
    ck_assert_msg(r->body_case == SPIREFLEET__ENVELOPE__BODY_RUN_COMPLETE, "got %s",
                  sf_wire_body_name(r));
    sf_wire_free(r);
}

static Spirefleet__Envelope *request_job(sf_coordinator *co, client *c) {
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__JobRequest jr = SPIREFLEET__JOB_REQUEST__INIT;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_JOB_REQUEST;
    req.job_request = &jr;
    return rpc(co, c, &req);
}

/* Expect a Job for `c`: job `id`, attempt `attempt`, playing `model`. */
static void expect_job(sf_coordinator *co, client *c, uint64_t id, uint32_t attempt,
                       const char *model) {
    Spirefleet__Envelope *r = request_job(co, c);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    ck_assert_uint_eq(r->job->job_id, id);
    ck_assert_uint_eq(r->job->attempt, attempt);
    ck_assert_str_eq(r->job->model_sha256, model);
    sf_wire_free(r);
}

static void expect_wait(sf_coordinator *co, client *c) {
    Spirefleet__Envelope *r = request_job(co, c);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_WAIT);
    sf_wire_free(r);
}

/* Ask for the run's status as `sf-fleet status` does and print it into
 * shown[cap]; the reply (the caller frees it with sf_wire_free). */
static Spirefleet__Envelope *status_shown(sf_coordinator *co, client *c, char *shown, size_t cap) {
    Spirefleet__Envelope sreq = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__StatusRequest sr = SPIREFLEET__STATUS_REQUEST__INIT;
    sreq.body_case = SPIREFLEET__ENVELOPE__BODY_STATUS_REQUEST;
    sreq.status_request = &sr;
    Spirefleet__Envelope *env = rpc(co, c, &sreq);
    ck_assert_int_eq(env->body_case, SPIREFLEET__ENVELOPE__BODY_STATUS_REPLY);
    FILE *mem = fmemopen(shown, cap, "w");
    sf_fleet_print_status(env->status_reply, mem);
    fclose(mem);
    return env;
}

/* A sealed shard for job `job` of the run in co (n synthetic records),
 * made by the run's key `key_name`, its labels made with `model` (NULL:
 * rollouts); `tamper`: one label changed; every `turn_limit_every`-th
 * fight ended at the turn cap (label_synth.h; 0: none); `stats` the
 * manifest's (NULL: none). */
static void make_shard_full(sf_coordinator *co, uint64_t job, uint64_t seed, int n,
                            const char *path, uint8_t digest[32], const char *key_name, int tamper,
                            const char *model, int turn_limit_every,
                            const Spirefleet__JobStats *stats) {
    synth_params p;
    synth_params_default(&p);
    p.turn_limit_every = turn_limit_every;
    if (model)
        p.model_sha256 = model;
    p.run_id = co->cfg.name;
    p.job_id = job;
    p.seed_base = seed;
    p.config_digest = co->digest;
    sf_shard_info info;
    synth_info(&p, &info);
    /* made by the run's worker key, as a worker's shard says (label.proto) */
    char dir[400], key_id[SF_ZSEC_ID_LEN + 1];
    sf_config_keys_dir(&co->cfg, dir, sizeof dir);
    sf_zsec_client me;
    sf_err ke = {0};
    ck_assert_msg(sf_zsec_client_load(dir, key_name, &me, &ke) == SF_OK, "%s", ke.msg);
    sf_zsec_key_id(me.me.pub, key_id);
    info.worker_key_id = key_id;
    info.worker_host = "test-host";
    sf_shard_writer *w;
    sf_err e = {0};
    ck_assert_msg(sf_shard_writer_open(path, &info, NULL, &w, &e) == SF_OK, "%s", e.msg);
    synth_record *r = malloc(sizeof *r);
    for (int i = 0; i < n; i++) {
        synth_fill(r, &p, (uint64_t)i);
        if (tamper && i == 3) { /* one label changed: two actions' policy targets swapped */
            float t = r->policy[0];
            r->policy[0] = r->policy[1];
            r->policy[1] = t;
        }
        ck_assert_msg(sf_shard_writer_append(w, &r->rec, &e) == SF_OK, "%s", e.msg);
    }
    free(r);
    ck_assert_msg(sf_shard_writer_seal(w, stats, digest, &e) == SF_OK, "%s", e.msg);
}

static void make_shard_as(sf_coordinator *co, uint64_t job, uint64_t seed, int n, const char *path,
                          uint8_t digest[32], const char *key_name, int tamper, const char *model) {
    make_shard_full(co, job, seed, n, path, digest, key_name, tamper, model, 0, NULL);
}

/* A shard made by the run's worker key, its labels made with `model`. */
static void make_shard_of(sf_coordinator *co, uint64_t job, uint64_t seed, int n, const char *path,
                          uint8_t digest[32], const char *model) {
    make_shard_as(co, job, seed, n, path, digest, SF_ZSEC_WORKER_NAME, 0, model);
}

/* A shard made by the run's worker key. */
static void make_shard(sf_coordinator *co, uint64_t job, uint64_t seed, int n, const char *path,
                       uint8_t digest[32]) {
    make_shard_of(co, job, seed, n, path, digest, NULL);
}

static size_t slurp(const char *path, uint8_t **out) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc((size_t)n + 1); /* NUL-terminated, for text files */
    ck_assert_uint_eq(fread(*out, 1, (size_t)n, f), (size_t)n);
    (*out)[n] = 0;
    fclose(f);
    return (size_t)n;
}

/* Offer `n` bytes as job `job`'s shard (content digest `digest`); returns
 * the ShardAck envelope. */
static Spirefleet__Envelope *offer_bytes(sf_coordinator *co, client *c, uint64_t job,
                                         const uint8_t *bytes, size_t n, const uint8_t digest[32]) {
    uint8_t h[32];
    crypto_hash_sha256(h, bytes, n);
    char sha[65], dig[65];
    sf_hex(h, 32, sha);
    sf_hex(digest, 32, dig);
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ShardOffer of = SPIREFLEET__SHARD_OFFER__INIT;
    of.job_id = job;
    of.size = n;
    of.file_sha256 = sha;
    of.content_digest = dig;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_OFFER;
    req.shard_offer = &of;
    Spirefleet__Envelope *r = rpc(co, c, &req);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_SHARD_ACK);
    return r;
}

/* Send `n` bytes as job `job`'s chunks of 4 KiB (no reply is read). */
static void send_chunks(client *c, uint64_t job, const uint8_t *bytes, size_t n) {
    size_t chunk = 4096;
    for (size_t off = 0; off < n; off += chunk) {
        size_t len = n - off < chunk ? n - off : chunk;
        Spirefleet__Envelope ce = SPIREFLEET__ENVELOPE__INIT;
        Spirefleet__ShardChunk ch = SPIREFLEET__SHARD_CHUNK__INIT;
        ch.job_id = job;
        ch.offset = off;
        ch.data.data = (uint8_t *)bytes + off;
        ch.data.len = len;
        ch.last = off + len >= n;
        ce.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_CHUNK;
        ce.shard_chunk = &ch;
        ck_assert_int_eq(sf_wire_send(c->sock, NULL, 0, &ce, 0), SF_OK);
    }
}

/* Offer and send a shard; returns the final ShardAck envelope. `flip`
 * (>= 0) corrupts that byte in transit. */
static Spirefleet__Envelope *send_shard(sf_coordinator *co, client *c, uint64_t job,
                                        const char *path, const uint8_t digest[32], long flip) {
    uint8_t *bytes;
    size_t n = slurp(path, &bytes);
    Spirefleet__Envelope *r = offer_bytes(co, c, job, bytes, n, digest);
    if (!r->shard_ack->send) {
        free(bytes);
        return r;
    }
    sf_wire_free(r);
    if (flip >= 0)
        bytes[flip] ^= 0x40;
    send_chunks(c, job, bytes, n);
    free(bytes);
    r = pump(co, c);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_SHARD_ACK);
    return r;
}

/* Offer the shard at `path` with its file SHA-256 spelled in upper case;
 * returns the ShardAck envelope. */
static Spirefleet__Envelope *offer_upper_case(sf_coordinator *co, client *c, uint64_t job,
                                              const char *path, const uint8_t digest[32]) {
    uint8_t *bytes;
    size_t n = slurp(path, &bytes);
    uint8_t h[32];
    crypto_hash_sha256(h, bytes, n);
    free(bytes);
    char sha[65], dig[65];
    sf_hex(h, 32, sha);
    sf_hex(digest, 32, dig);
    for (int i = 0; i < 64; i++)
        if (sha[i] >= 'a' && sha[i] <= 'f')
            sha[i] = (char)(sha[i] - 'a' + 'A');
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ShardOffer of = SPIREFLEET__SHARD_OFFER__INIT;
    of.job_id = job;
    of.size = n;
    of.file_sha256 = sha;
    of.content_digest = dig;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_OFFER;
    req.shard_offer = &of;
    Spirefleet__Envelope *r = rpc(co, c, &req);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_SHARD_ACK);
    return r;
}

/* The coordinator's log lines, kept for a test to read. */
typedef struct log_lines {
    char text[8192];
    int n;
} log_lines;

static void keep_line(void *ctx, const char *line) {
    log_lines *l = ctx;
    size_t used = strlen(l->text);
    snprintf(l->text + used, sizeof l->text - used, "%s\n", line);
    l->n++;
}

/* A client holding the listed key `name` of the run (added when missing). */
static void open_keyed(client *c, sf_coordinator *co, const char *name) {
    char dir[400];
    sf_config_keys_dir(&co->cfg, dir, sizeof dir);
    sf_err e = {0};
    ck_assert_msg(sf_zsec_add_key(dir, name, SF_ZSEC_CLIENTS_DIR, &e) == SF_OK, "%s", e.msg);
    ck_assert_int_eq(sf_zsec_server_reload(co->zsec, &e), SF_OK);
    client_open_as(c, co, name);
}

static sf_coordinator *open_co_logged(const sf_run_config *cfg, log_lines *log) {
    sf_coordinator *co;
    sf_err e = {0};
    sf_coord_opts o = {.metrics_port = 0, .log = log ? keep_line : NULL, .log_ctx = log};
    ck_assert_msg(sf_coordinator_open(cfg, &o, &co, &e) == SF_OK, "%s", e.msg);
    return co;
}

static sf_coordinator *open_co(const sf_run_config *cfg) {
    return open_co_logged(cfg, NULL);
}

/* How most tests begin: a run of 12 seeds (3 jobs of 4, 60 s leases) on a
 * fresh coordinator, and a client that said Hello as w1. */
static sf_coordinator *begin(sf_run_config *cfg, client *c) {
    make_cfg(cfg, "run", 60, NULL);
    sf_coordinator *co = open_co(cfg);
    client_open(c, co);
    hello(co, c, "w1");
    return co;
}

START_TEST(job_lifecycle_lease_upload_done_complete) {
    sf_run_config cfg;
    client c;
    sf_coordinator *co = begin(&cfg, &c);
    char path[512];
    /* 12 seeds in jobs of 4 -> jobs 1..3 with seeds 100, 104, 108 */
    for (uint64_t job = 1; job <= 3; job++) {
        Spirefleet__Envelope *r = request_job(co, &c);
        ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
        ck_assert_uint_eq(r->job->job_id, job);
        ck_assert_uint_eq(r->job->seed_start, 100 + 4 * (job - 1));
        ck_assert_uint_eq(r->job->seed_count, 4);
        ck_assert_uint_eq(r->job->attempt, 1);
        ck_assert_str_eq(r->job->config_digest, co->digest);
        ck_assert_ptr_nonnull(r->job->search);
        ck_assert_uint_eq(r->job->search->simulations, 200);
        sf_wire_free(r);
        uint8_t dig[32];
        snprintf(path, sizeof path, "%s/up%llu.shard", tmpdir, (unsigned long long)job);
        make_shard(co, job, 100 + 4 * (job - 1), 30, path, dig);
        r = send_shard(co, &c, job, path, dig, -1);
        ck_assert_msg(r->shard_ack->ok && !r->shard_ack->duplicate, "%s", r->shard_ack->reason);
        sf_wire_free(r);
    }
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.jobs_done, 3);
    ck_assert_uint_eq(st.labels, 90);
    ck_assert_int_eq(st.complete, 1);
    snprintf(path, sizeof path, "%s/run/shards/ctest-job000002.shard", tmpdir);
    ck_assert_int_eq(access(path, F_OK), 0);
    sf_shard_verify_report rep;
    sf_err e = {0};
    ck_assert_int_eq(sf_shard_verify(path, &rep, &e), SF_OK);
    ck_assert_uint_eq(rep.records, 30);
    /* nothing left half-received */
    snprintf(path, sizeof path, "%s/run/incoming", tmpdir);
    ck_assert_int_eq(rmdir(path), 0);
    mkdir(path, 0755);
    Spirefleet__Envelope *r = request_job(co, &c);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_RUN_COMPLETE);
    sf_wire_free(r);
    client_close(&c);
    sf_coordinator_close(co);
}
END_TEST

START_TEST(late_and_bad_results) {
    sf_run_config cfg;
    client c;
    sf_coordinator *co = begin(&cfg, &c);
    sf_wire_free(request_job(co, &c));
    char path[512], other[512];
    uint8_t dig[32], dig2[32];
    snprintf(path, sizeof path, "%s/good.shard", tmpdir);
    make_shard(co, 1, 100, 20, path, dig);
    /* digests on the wire are in lower case (common.h): an offer spelling
     * one otherwise is refused before any byte is sent */
    Spirefleet__Envelope *r = offer_upper_case(co, &c, 1, path, dig);
    ck_assert(!r->shard_ack->ok && !r->shard_ack->send);
    ck_assert_str_eq(r->shard_ack->reason, "bad offer: size or digests");
    sf_wire_free(r);
    /* a byte flipped in transit: the file SHA-256 does not match */
    r = send_shard(co, &c, 1, path, dig, 700);
    ck_assert(!r->shard_ack->ok);
    ck_assert_ptr_nonnull(strstr(r->shard_ack->reason, "SHA-256 mismatch"));
    sf_wire_free(r);
    /* a shard of another job offered for job 1 */
    snprintf(other, sizeof other, "%s/other.shard", tmpdir);
    make_shard(co, 2, 104, 20, other, dig2);
    r = send_shard(co, &c, 1, other, dig2, -1);
    ck_assert(!r->shard_ack->ok);
    ck_assert_ptr_nonnull(strstr(r->shard_ack->reason, "another run, job or config"));
    sf_wire_free(r);
    sf_coord_status st;
    /* a failure report from a worker that does not hold the lease is a
     * protocol error and does not count towards quarantine */
    client spoof;
    client_open(&spoof, co);
    hello(co, &spoof, "w-spoof");
    uint64_t perr0;
    sf_coordinator_status(co, &st);
    perr0 = st.protocol_errors;
    for (int i = 0; i < 6; i++) {
        Spirefleet__Envelope fe = SPIREFLEET__ENVELOPE__INIT;
        Spirefleet__JobFailed jf = SPIREFLEET__JOB_FAILED__INIT;
        jf.job_id = 1;
        jf.reason = "forged";
        fe.body_case = SPIREFLEET__ENVELOPE__BODY_JOB_FAILED;
        fe.job_failed = &jf;
        ck_assert_int_eq(sf_wire_send(spoof.sock, NULL, 0, &fe, 0), SF_OK);
    }
    sf_err se = {0};
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(sf_coordinator_step(co, 10, &se), SF_OK);
    client_close(&spoof);
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.protocol_errors, perr0 + 6);
    ck_assert_uint_eq(st.jobs_failed, 0);
    ck_assert_uint_eq(co->jobs[0].failures, 0);
    ck_assert_uint_eq(st.jobs_leased, 1);
    ck_assert_uint_eq(st.shards_rejected, 2);
    ck_assert_uint_eq(st.jobs_done, 0);
    ck_assert_uint_eq(st.jobs_leased, 1);
    /* the good one lands; a second copy later is a duplicate and dropped */
    r = send_shard(co, &c, 1, path, dig, -1);
    ck_assert_msg(r->shard_ack->ok, "%s", r->shard_ack->reason);
    sf_wire_free(r);
    r = send_shard(co, &c, 1, path, dig, -1);
    ck_assert(r->shard_ack->ok && r->shard_ack->duplicate);
    sf_wire_free(r);
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.jobs_done, 1);
    ck_assert_uint_eq(st.duplicates_dropped, 1);
    ck_assert_uint_eq(st.labels, 20);
    /* a well-formed shard for a job nobody leased (a forged one carries
     * the run's public ids and config digest just as well) is refused
     * before a byte is stored; so is one for a job leased to another */
    r = send_shard(co, &c, 2, other, dig2, -1);
    ck_assert(!r->shard_ack->ok && !r->shard_ack->send);
    ck_assert_str_eq(r->shard_ack->reason, "job 2 is not leased to w1: only its lease holder "
                                           "uploads it");
    sf_wire_free(r);
    Spirefleet__Envelope *j2 = request_job(co, &c); /* job 2, now w1's */
    ck_assert_uint_eq(j2->job->job_id, 2);
    sf_wire_free(j2);
    client thief;
    client_open(&thief, co);
    hello(co, &thief, "w-thief");
    r = send_shard(co, &thief, 2, other, dig2, -1);
    ck_assert(!r->shard_ack->ok);
    ck_assert_ptr_nonnull(strstr(r->shard_ack->reason, "not leased to w-thief"));
    sf_wire_free(r);
    client_close(&thief);
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.jobs_done, 1);
    r = send_shard(co, &c, 2, other, dig2, -1); /* the holder's copy lands */
    ck_assert_msg(r->shard_ack->ok, "%s", r->shard_ack->reason);
    sf_wire_free(r);
    client_close(&c);
    sf_coordinator_close(co);
}
END_TEST

START_TEST(untrusted_frames_are_counted_and_answered) {
    sf_run_config cfg;
    make_cfg(&cfg, "run", 60, NULL);
    sf_coordinator *co = open_co(&cfg);
    client bad, good;
    client_open(&bad, co);
    client_open(&good, co);
    hello(co, &good, "w-good");
    /* garbage */
    const uint8_t junk[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x42};
    zmq_send(bad.sock, junk, sizeof junk, 0);
    Spirefleet__Envelope *r = pump(co, &bad);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_ERROR);
    ck_assert_int_eq(r->error->code, SF_EFORMAT);
    sf_wire_free(r);
    /* an empty frame, a truncated envelope, two frames in one message */
    zmq_send(bad.sock, "", 0, 0);
    sf_wire_free(pump(co, &bad));
    Spirefleet__Envelope hb = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Heartbeat h = SPIREFLEET__HEARTBEAT__INIT;
    h.worker_id = "someone";
    hb.body_case = SPIREFLEET__ENVELOPE__BODY_HEARTBEAT;
    hb.heartbeat = &h;
    uint8_t *bytes;
    size_t n;
    sf_wire_encode(&hb, &bytes, &n);
    zmq_send(bad.sock, bytes, n - 2, 0);
    sf_wire_free(pump(co, &bad));
    zmq_send(bad.sock, bytes, n, ZMQ_SNDMORE);
    zmq_send(bad.sock, bytes, n, 0);
    r = pump(co, &bad);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_ERROR);
    sf_wire_free(r);
    /* a wrong protocol version */
    hb.version = 7;
    size_t m = spirefleet__envelope__get_packed_size(&hb);
    uint8_t *v7 = malloc(m);
    spirefleet__envelope__pack(&hb, v7);
    zmq_send(bad.sock, v7, m, 0);
    r = pump(co, &bad);
    ck_assert_int_eq(r->error->code, SF_EVERSION);
    sf_wire_free(r);
    free(v7);
    /* a valid message out of order: no Hello yet */
    zmq_send(bad.sock, bytes, n, 0);
    r = pump(co, &bad);
    ck_assert_int_eq(r->error->code, SF_ESTATE);
    ck_assert_ptr_nonnull(strstr(r->error->message, "Hello"));
    sf_wire_free(r);
    free(bytes);
    /* a message only a coordinator sends */
    Spirefleet__Envelope wl = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Wait w = SPIREFLEET__WAIT__INIT;
    wl.body_case = SPIREFLEET__ENVELOPE__BODY_WAIT;
    wl.wait = &w;
    r = rpc(co, &good, &wl);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_ERROR);
    sf_wire_free(r);
    /* chunks without an offer */
    Spirefleet__Envelope ce = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ShardChunk ch = SPIREFLEET__SHARD_CHUNK__INIT;
    ch.job_id = 1;
    ce.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_CHUNK;
    ce.shard_chunk = &ch;
    r = rpc(co, &good, &ce);
    ck_assert(!r->shard_ack->ok);
    sf_wire_free(r);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.decode_errors, 5);
    ck_assert_uint_ge(st.protocol_errors, 3);
    /* a message over SF_FLEET_MAX_MSG: ZeroMQ drops the peer unread */
    client huge;
    client_open(&huge, co);
    size_t big = (size_t)SF_FLEET_MAX_MSG + 1;
    uint8_t *blob = calloc(1, big);
    ck_assert_ptr_nonnull(blob);
    ck_assert_int_eq(zmq_send(huge.sock, blob, big, 0), (int)big);
    free(blob);
    sf_err se = {0};
    for (int i = 0; i < 50; i++)
        ck_assert_int_eq(sf_coordinator_step(co, 10, &se), SF_OK);
    zmq_msg_t none;
    zmq_msg_init(&none);
    ck_assert_int_lt(zmq_msg_recv(&none, huge.sock, ZMQ_DONTWAIT), 0);
    zmq_msg_close(&none);
    client_close(&huge);
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.decode_errors, 5); /* never reached the decoder */
    /* and the real worker is still served */
    r = request_job(co, &good);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    sf_wire_free(r);
    client_close(&bad);
    client_close(&good);
    sf_coordinator_close(co);
}
END_TEST

START_TEST(expired_lease_is_reissued) {
    sf_run_config cfg;
    make_cfg_n(&cfg, "run", 1, 4, NULL); /* one job, a 1 s lease */
    sf_err e = {0};
    sf_coordinator *co = open_co(&cfg);
    client a, b;
    client_open(&a, co);
    client_open(&b, co);
    hello(co, &a, "wa");
    hello(co, &b, "wb");
    Spirefleet__Envelope *r = request_job(co, &a);
    ck_assert_uint_eq(r->job->job_id, 1);
    sf_wire_free(r);
    expect_wait(co, &b);
    /* a keeps quiet past its 1 s lease (and its liveness window) */
    for (int i = 0; i < 130; i++) {
        sf_coordinator_step(co, 10, &e);
        if (i % 10 == 0) { /* b stays alive */
            Spirefleet__Envelope hb = SPIREFLEET__ENVELOPE__INIT;
            Spirefleet__Heartbeat h = SPIREFLEET__HEARTBEAT__INIT;
            hb.body_case = SPIREFLEET__ENVELOPE__BODY_HEARTBEAT;
            hb.heartbeat = &h;
            sf_wire_send(b.sock, NULL, 0, &hb, 0);
        }
    }
    zmq_msg_t m; /* drain b's heartbeat echoes */
    zmq_msg_init(&m);
    while (zmq_msg_recv(&m, b.sock, ZMQ_DONTWAIT) >= 0)
        ;
    zmq_msg_close(&m);
    r = request_job(co, &b);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    ck_assert_uint_eq(r->job->job_id, 1);
    ck_assert_uint_eq(r->job->attempt, 2);
    sf_wire_free(r);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.lease_expiries, 1);
    ck_assert_uint_eq(st.reissues, 1);
    ck_assert_uint_eq(st.workers_alive, 1);
    /* a's late result is refused: the lease is b's now (b's copy, the
     * same bytes, is accepted) */
    char path[512];
    uint8_t dig[32];
    snprintf(path, sizeof path, "%s/late.shard", tmpdir);
    make_shard(co, 1, 100, 10, path, dig);
    r = send_shard(co, &a, 1, path, dig, -1);
    ck_assert(!r->shard_ack->ok);
    ck_assert_str_eq(r->shard_ack->reason,
                     "job 1 is not leased to wa: only its lease holder uploads it");
    sf_wire_free(r);
    r = send_shard(co, &b, 1, path, dig, -1);
    ck_assert_msg(r->shard_ack->ok, "%s", r->shard_ack->reason);
    sf_wire_free(r);
    client_close(&a);
    client_close(&b);
    sf_coordinator_close(co);
}
END_TEST

START_TEST(restart_resumes_from_the_ledger) {
    sf_run_config cfg;
    client c;
    sf_coordinator *co = begin(&cfg, &c);
    sf_wire_free(request_job(co, &c)); /* job 1 leased */
    sf_wire_free(request_job(co, &c)); /* job 2 leased */
    char path[512];
    uint8_t dig[32];
    snprintf(path, sizeof path, "%s/j1.shard", tmpdir);
    make_shard(co, 1, 100, 12, path, dig);
    Spirefleet__Envelope *r = send_shard(co, &c, 1, path, dig, -1);
    ck_assert(r->shard_ack->ok);
    sf_wire_free(r);
    /* job 3's shard reaches shards/ but not the ledger (as if the
     * coordinator died between storing and committing) */
    char stored[512];
    snprintf(stored, sizeof stored, "%s/run/shards/ctest-job000003.shard", tmpdir);
    make_shard(co, 3, 108, 7, stored, dig);
    client_close(&c);
    sf_coordinator_close(co);

    co = open_co(&cfg);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.jobs_done, 2);   /* job 1, and job 3 adopted */
    ck_assert_uint_eq(st.jobs_leased, 1); /* job 2 keeps its lease */
    ck_assert_uint_eq(st.jobs_pending, 0);
    ck_assert_uint_eq(st.labels, 19);
    sf_coordinator_close(co);

    /* the same output dir with another config is refused */
    sf_run_config other;
    make_cfg(&other, "run", 60, "search: {simulations: 999}\n");
    sf_coordinator *co2 = NULL;
    sf_err e = {0};
    sf_coord_opts o = {0};
    ck_assert_int_eq(sf_coordinator_open(&other, &o, &co2, &e), SF_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "config digest"));
    ck_assert_ptr_null(co2);
}
END_TEST

/* At restart the ledger's done jobs are checked against shards/: a shard
 * that went missing, or was replaced by another shard of the same job
 * (another content digest), sends its job back to pending, and the
 * replaced file is moved to rejected/ with its reason, not deleted. */
START_TEST(restart_rechecks_done_shards_and_sets_bad_ones_aside) {
    sf_run_config cfg;
    client c;
    sf_coordinator *co = begin(&cfg, &c);
    char path[512], stored[3][512], swap[512];
    uint8_t dig[32];
    for (uint64_t job = 1; job <= 3; job++) {
        sf_wire_free(request_job(co, &c));
        snprintf(path, sizeof path, "%s/j%llu.shard", tmpdir, (unsigned long long)job);
        make_shard(co, job, 100 + 4 * (job - 1), 4, path, dig);
        Spirefleet__Envelope *r = send_shard(co, &c, job, path, dig, -1);
        ck_assert_msg(r->shard_ack->ok, "%s", r->shard_ack->reason);
        sf_wire_free(r);
        snprintf(stored[job - 1], sizeof stored[0], "%s/run/shards/ctest-job%06llu.shard", tmpdir,
                 (unsigned long long)job);
    }
    /* another shard of job 2 (3 records instead of 4), made now */
    snprintf(swap, sizeof swap, "%s/swap.shard", tmpdir);
    make_shard(co, 2, 104, 3, swap, dig);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_int_eq(st.complete, 1);
    client_close(&c);
    sf_coordinator_close(co);
    ck_assert_int_eq(unlink(stored[0]), 0);       /* job 1's shard lost */
    ck_assert_int_eq(rename(swap, stored[1]), 0); /* job 2's replaced */

    log_lines log = {0};
    co = open_co_logged(&cfg, &log);
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.jobs_done, 1); /* job 3 */
    ck_assert_uint_eq(st.jobs_pending, 2);
    ck_assert_int_eq(st.complete, 0);
    ck_assert_msg(strstr(log.text, "ctest-job000001.shard is missing; re-issuing it"), "%s",
                  log.text);
    char aside[600], why[700];
    snprintf(aside, sizeof aside, "%s/run/rejected/ctest-job000002.shard", tmpdir);
    snprintf(why, sizeof why, "%s.why", aside);
    ck_assert_int_eq(access(aside, F_OK), 0);
    uint8_t *text = NULL;
    ck_assert_uint_gt(slurp(why, &text), 0);
    ck_assert_msg(strstr((const char *)text, "the ledger's job 2 has"), "%s", text);
    free(text);
    ck_assert_int_ne(access(stored[1], F_OK), 0);
    /* the two jobs are issued again */
    client_open(&c, co);
    hello(co, &c, "w1");
    Spirefleet__Envelope *r = request_job(co, &c);
    ck_assert_uint_eq(r->job->job_id, 1);
    sf_wire_free(r);
    r = request_job(co, &c);
    ck_assert_uint_eq(r->job->job_id, 2);
    sf_wire_free(r);
    client_close(&c);
    sf_coordinator_close(co);
}
END_TEST

/* Write zeros to the file `fill` until its filesystem is full. */
static void fill_disk(const char *fill) {
    FILE *f = fopen(fill, "wb");
    ck_assert_ptr_nonnull(f);
    static const uint8_t block[4096];
    while (fwrite(block, 1, sizeof block, f) == sizeof block)
        ;
    fclose(f);
}

/* A full disk at the coordinator: the offer (no room) and the chunks (the
 * disk fills while they arrive) are answered retry_later, with the OS
 * reason; nothing counts as a failure or a rejected shard, the lease
 * stays; once space returns the same shard is stored. Needs a small
 * tmpfs in a mount namespace (root); skipped otherwise. */
START_TEST(a_full_disk_defers_uploads_and_they_resume) {
    char mnt[400];
    snprintf(mnt, sizeof mnt, "%s/small", tmpdir);
    mkdir(mnt, 0755);
    /* in a mount namespace of this test's own process: the tmpfs goes
     * with it on every path */
    if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", mnt, "tmpfs", 0, "size=4m") != 0) {
        fprintf(stderr, "# skipped: cannot mount a tmpfs: %s\n", strerror(errno));
        return;
    }
    sf_run_config cfg;
    make_cfg(&cfg, "small/run", 60, NULL);
    sf_coordinator *co = open_co(&cfg);
    client c;
    client_open(&c, co);
    hello(co, &c, "w1");
    sf_wire_free(request_job(co, &c));
    char path[512], fill[512];
    uint8_t dig[32];
    snprintf(path, sizeof path, "%s/full-j1.shard", tmpdir);
    snprintf(fill, sizeof fill, "%s/filler", mnt);
    make_shard(co, 1, 100, 200, path, dig);
    /* 1: no room for the offer */
    fill_disk(fill);
    Spirefleet__Envelope *r = send_shard(co, &c, 1, path, dig, -1);
    ck_assert(!r->shard_ack->ok && !r->shard_ack->send && r->shard_ack->retry_later);
    ck_assert_uint_eq(r->shard_ack->retry_ms, 100);
    ck_assert_msg(strstr(r->shard_ack->reason, "No space left on device; retry later"), "%s",
                  r->shard_ack->reason);
    sf_wire_free(r);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.uploads_deferred, 1);
    ck_assert_int_eq(st.uploads_paused, 1);
    ck_assert_uint_eq(st.jobs_failed, 0);
    ck_assert_uint_eq(st.shards_rejected, 0);
    ck_assert_uint_eq(st.jobs_leased, 1);
    /* 2: room for the offer (2 MiB of headroom and the shard), then the
     * disk fills while the chunks arrive */
    ck_assert_int_eq(unlink(fill), 0);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    FILE *f = fopen(fill, "wb");
    uint8_t *block = calloc(1, 1 << 16);
    struct statvfs vs;
    for (;;) {
        statvfs(mnt, &vs);
        uint64_t avail = (uint64_t)vs.f_bavail * vs.f_frsize;
        if (avail < (uint64_t)sb.st_size + (2u << 20) + (1u << 16))
            break;
        ck_assert_uint_eq(fwrite(block, 1, 1 << 16, f), 1 << 16);
        fflush(f);
    }
    fclose(f);
    statvfs(mnt, &vs);
    ck_assert_uint_ge((uint64_t)vs.f_bavail * vs.f_frsize, (uint64_t)sb.st_size + (2u << 20));
    /* what is left after the offer: less than the shard */
    snprintf(fill, sizeof fill, "%s/filler2", mnt);
    uint8_t *bytes;
    size_t n = slurp(path, &bytes);
    r = offer_bytes(co, &c, 1, bytes, n, dig);
    ck_assert_msg(r->shard_ack->send, "%s", r->shard_ack->reason);
    sf_wire_free(r);
    fill_disk(fill); /* now nothing is left */
    send_chunks(&c, 1, bytes, n);
    free(bytes);
    r = pump(co, &c);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_SHARD_ACK);
    ck_assert_msg(r->shard_ack->retry_later && !r->shard_ack->ok, "%s", r->shard_ack->reason);
    ck_assert_msg(strstr(r->shard_ack->reason, ".part: No space left on device"), "%s",
                  r->shard_ack->reason);
    sf_wire_free(r);
    /* later chunks of the dropped upload are refused as such; drain them */
    for (int i = 0; i < 20; i++) {
        sf_err e = {0};
        sf_coordinator_step(co, 5, &e);
        Spirefleet__Envelope *x;
        while (sf_wire_recv(c.sock, "co", 0, &x, &e) == SF_OK)
            sf_wire_free(x);
    }
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.uploads_deferred, 2);
    ck_assert_uint_eq(st.jobs_failed, 0);
    ck_assert_uint_eq(st.shards_rejected, 0);
    ck_assert_uint_eq(st.jobs_leased, 1);
    char part[600];
    snprintf(part, sizeof part, "%s/run/incoming/job000001-w0.part", mnt);
    ck_assert_int_ne(access(part, F_OK), 0); /* the partial upload is gone */
    /* 3: space returns: the same shard is stored */
    unlink(fill);
    snprintf(fill, sizeof fill, "%s/filler", mnt);
    unlink(fill);
    r = send_shard(co, &c, 1, path, dig, -1);
    ck_assert_msg(r->shard_ack->ok, "%s", r->shard_ack->reason);
    sf_wire_free(r);
    sf_coordinator_status(co, &st);
    ck_assert_int_eq(st.uploads_paused, 0);
    ck_assert_uint_eq(st.jobs_done, 1);
    ck_assert_uint_eq(st.labels, 200);
    client_close(&c);
    sf_coordinator_close(co);
    free(block);
    ck_assert_int_eq(umount2(mnt, MNT_DETACH), 0);
}
END_TEST

static void job_failed(sf_coordinator *co, client *c, uint64_t job, const char *why) {
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__JobFailed jf = SPIREFLEET__JOB_FAILED__INIT;
    jf.job_id = job;
    jf.reason = (char *)why;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_JOB_FAILED;
    req.job_failed = &jf;
    ck_assert_int_eq(sf_wire_send(c->sock, NULL, 0, &req, 0), SF_OK);
    sf_err e = {0};
    for (int i = 0; i < 5; i++)
        sf_coordinator_step(co, 5, &e);
}

START_TEST(a_job_that_keeps_failing_is_quarantined) {
    sf_run_config cfg;
    make_cfg_n(&cfg, "run", 60, 4, NULL); /* one job */
    log_lines log = {0};
    sf_coordinator *co = open_co_logged(&cfg, &log);
    client c[3];
    const char *ids[3] = {"w1", "w2", "w3"};
    for (int i = 0; i < 3; i++) {
        client_open(&c[i], co);
        hello(co, &c[i], ids[i]);
    }
    /* abandoning (SIGTERM) is not a failure: job 1 comes back every time */
    for (int k = 0; k < 6; k++) {
        Spirefleet__Envelope *r = request_job(co, &c[0]);
        ck_assert_uint_eq(r->job->job_id, 1);
        sf_wire_free(r);
        job_failed(co, &c[0], 1, SF_JOB_ABANDONED);
    }
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.jobs_failed, 0);
    ck_assert_uint_eq(st.jobs_quarantined, 0);
    /* a real failure on each of three workers: job 1 is not issued again */
    for (int k = 0; k < 3; k++) {
        Spirefleet__Envelope *r = request_job(co, &c[k]);
        ck_assert_uint_eq(r->job->job_id, 1);
        sf_wire_free(r);
        job_failed(co, &c[k], 1, "disk full");
        sf_coordinator_status(co, &st);
        ck_assert_uint_eq(st.jobs_quarantined, k == 2);
        ck_assert_int_eq(st.cannot_finish, k == 2);
    }
    /* the one job left is quarantined: the run says it cannot finish */
    ck_assert(st.eta_s < 0);
    char shown[2048];
    Spirefleet__Envelope *sr_env = status_shown(co, &c[0], shown, sizeof shown);
    ck_assert(sr_env->status_reply->cannot_finish);
    ck_assert_msg(strstr(shown, "ctest (config ") && strstr(shown, "CANNOT FINISH\n") &&
                      strstr(shown, "CANNOT FINISH: every job left (1) is quarantined"),
                  "%s", shown);
    ck_assert_ptr_null(strstr(shown, "ETA"));
    sf_wire_free(sr_env);
    ck_assert_uint_eq(st.jobs_failed, 3);
    ck_assert_uint_eq(st.workers_quarantined, 0);
    ck_assert_str_eq(st.last_failure, "job 1: disk full");
    /* ... and says so through the caller's sink, one line each */
    ck_assert_msg(strstr(log.text, "coordinator: job 1 abandoned on w1: worker shutting down\n"),
                  "%s", log.text);
    ck_assert_msg(strstr(log.text,
                         "coordinator: job 1 failed on 3 workers; not issuing it again "
                         "(last: disk full)\ncoordinator: job 1 failed on w3: disk full\n"),
                  "%s", log.text);
    ck_assert_int_eq(log.n, 6 + 3 + 1);
    ck_assert_uint_eq(st.jobs_pending, 1);
    ck_assert_int_eq(st.complete, 0);
    expect_wait(co, &c[0]); /* nothing to issue: wait */
    for (int i = 0; i < 3; i++)
        client_close(&c[i]);
    sf_coordinator_close(co);
}
END_TEST

/* One worker (a key of its own) that takes every job and reports it
 * failed, as fast as it can: it is quarantined after 5 reports and gets no
 * more jobs, and no job is quarantined (each counts a worker once); another
 * key's workers then complete the run. */
START_TEST(a_flood_of_failure_reports_quarantines_the_reporter_not_the_jobs) {
    sf_run_config cfg;
    make_cfg_n(&cfg, "run", 60, 12, NULL); /* three jobs */
    sf_coordinator *co = open_co(&cfg);
    client bad, good;
    open_keyed(&bad, co, "flooder");
    client_open(&good, co);
    hello(co, &bad, "flooder");
    hello(co, &good, "w-good");
    int refused = 0;
    for (int k = 0; k < 40 && !refused; k++) {
        Spirefleet__Envelope *r = request_job(co, &bad);
        if (r->body_case == SPIREFLEET__ENVELOPE__BODY_REFUSAL) {
            ck_assert_ptr_nonnull(strstr(r->refusal->reason, "quarantined after 5 failure"));
            refused = k;
        } else {
            ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
            job_failed(co, &bad, r->job->job_id, "forged failure");
        }
        sf_wire_free(r);
    }
    ck_assert_int_eq(refused, 5);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.workers_quarantined, 1);
    ck_assert_uint_eq(st.jobs_quarantined, 0);
    ck_assert_uint_eq(st.jobs_pending, 3);
    /* every job still goes to good workers (two each at most) */
    client good2;
    client_open(&good2, co);
    hello(co, &good2, "w-good2");
    for (uint64_t want = 1; want <= 3; want++) {
        Spirefleet__Envelope *r = request_job(co, want <= 2 ? &good : &good2);
        ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
        sf_wire_free(r);
    }
    client_close(&bad);
    client_close(&good);
    client_close(&good2);
    sf_coordinator_close(co);
}
END_TEST

/* Strings from the network never reach a log line, a status or a file
 * name raw: a worker id that is not a plain name is refused at Hello (a
 * newline in one used to end up in an upload's file name), and a failure
 * reason cannot end its log line and forge the next one. */
START_TEST(client_strings_cannot_forge_log_lines_or_file_names) {
    sf_run_config cfg;
    make_cfg_n(&cfg, "run", 60, 4, NULL);
    log_lines log = {0};
    sf_coordinator *co = open_co_logged(&cfg, &log);
    client c;
    client_open(&c, co);
    const char *bad_ids[] = {"evil\nid", "../../etc", ".hidden", "a b", "tab\tid", ""};
    for (size_t k = 0; k < sizeof bad_ids / sizeof bad_ids[0]; k++) {
        Spirefleet__Envelope *r = hello_answer(co, &c, bad_ids[k]);
        ck_assert_msg(r->body_case == SPIREFLEET__ENVELOPE__BODY_REFUSAL, "'%s' was welcomed",
                      bad_ids[k]);
        ck_assert_ptr_nonnull(strstr(r->refusal->reason, "worker_id must be"));
        sf_wire_free(r);
    }
    hello(co, &c, "w1.host-2:pid@9");
    Spirefleet__Envelope *r = request_job(co, &c);
    ck_assert_uint_eq(r->job->job_id, 1);
    sf_wire_free(r);
    job_failed(co, &c, 1, "oops\ncoordinator: run run complete: 1 jobs\x1b[2J");
    ck_assert_int_eq(log.n, 1); /* one line, not two */
    ck_assert_msg(strstr(log.text, "coordinator: job 1 failed on w1.host-2:pid@9: "
                                   "oops?coordinator: run run complete: 1 jobs?[2J\n"),
                  "%s", log.text);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_ptr_null(strchr(st.last_failure, '\n'));
    client_close(&c);
    sf_coordinator_close(co);
}
END_TEST

/* model.champion: each job is bound to the registry's champion when it is
 * first leased; a re-issued job keeps its model (also across a restart),
 * new jobs take a new champion, no job is issued while there is no network
 * to follow, and a shard made with another model is refused. */
START_TEST(a_followed_champion_binds_each_job_at_its_first_lease) {
    char reg[512], champ[600], extra[900];
    snprintf(reg, sizeof reg, "%s/registry", tmpdir);
    ck_assert_int_eq(sf_mkdir_p(reg), 0);
    snprintf(champ, sizeof champ, "%s/champion", reg);
    snprintf(extra, sizeof extra, "search: {evaluator: net}\nmodel: {champion: '%s'}\n", champ);
    char a[65], b[65], cc[65];
    memset(a, 'a', 64), memset(b, 'b', 64), memset(cc, 'c', 64);
    a[64] = b[64] = cc[64] = '\0';
    sf_run_config cfg;
    make_cfg(&cfg, "follow", 1, extra); /* 3 jobs of 4 seeds, 1 s leases */
    log_lines log = {0};
    sf_coordinator *co = open_co_logged(&cfg, &log);
    client c;
    client_open(&c, co);
    hello(co, &c, "w1");
    sf_err e = {0};
    expect_wait(co, &c); /* no champion file yet */
    ck_assert_ptr_nonnull(strstr(log.text, "no job issued"));
    ck_assert_ptr_nonnull(strstr(log.text, "cannot open"));
    ck_assert_int_eq(sf_registry_champion_write(reg, SF_REGISTRY_ROLLOUT, &e), SF_OK);
    expect_wait(co, &c);
    ck_assert_ptr_nonnull(strstr(log.text, "names no network yet"));
    ck_assert_int_eq(sf_registry_champion_write(reg, a, &e), SF_OK);
    expect_job(co, &c, 1, 1, a);
    job_failed(co, &c, 1, SF_JOB_ABANDONED); /* back to the queue's tail */
    ck_assert_int_eq(sf_registry_champion_write(reg, b, &e), SF_OK);
    expect_job(co, &c, 2, 1, b);
    expect_job(co, &c, 3, 1, b);
    client d; /* c holds two leases: the most one worker may */
    client_open(&d, co);
    hello(co, &d, "w1b");
    expect_job(co, &d, 1, 2, a); /* bound at its first lease */
    ck_assert_ptr_nonnull(strstr(log.text, "jobs from 2 on play champion bbbbbbbbbbbb..."));

    char path[512];
    uint8_t dig[32];
    snprintf(path, sizeof path, "%s/follow-j1.shard", tmpdir);
    make_shard_of(co, 1, 100, 5, path, dig, b);
    Spirefleet__Envelope *r = send_shard(co, &d, 1, path, dig, -1);
    ck_assert(!r->shard_ack->ok);
    ck_assert_str_eq(r->shard_ack->reason,
                     "manifest names model bbbbbbbbbbbb..., the job's is aaaaaaaaaaaa...");
    sf_wire_free(r);
    snprintf(path, sizeof path, "%s/follow-j1a.shard", tmpdir);
    make_shard_of(co, 1, 100, 5, path, dig, a);
    r = send_shard(co, &d, 1, path, dig, -1);
    ck_assert_msg(r->shard_ack->ok, "%s", r->shard_ack->reason);
    sf_wire_free(r);
    client_close(&c);
    client_close(&d);
    sf_coordinator_close(co);

    /* restarted under a third champion: jobs 2 and 3 keep b */
    ck_assert_int_eq(sf_registry_champion_write(reg, cc, &e), SF_OK);
    co = open_co(&cfg);
    for (int i = 0; i < 130; i++) /* past the restored 1 s leases */
        sf_coordinator_step(co, 10, &e);
    client_open(&c, co);
    hello(co, &c, "w2");
    int seen = 0; /* the expiry order is the leased set's */
    for (int k = 0; k < 2; k++) {
        r = request_job(co, &c);
        ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
        ck_assert(r->job->job_id == 2 || r->job->job_id == 3);
        seen |= 1 << r->job->job_id;
        ck_assert_uint_eq(r->job->attempt, 2);
        ck_assert_str_eq(r->job->model_sha256, b);
        sf_wire_free(r);
    }
    ck_assert_int_eq(seen, (1 << 2) | (1 << 3));
    expect_wait(co, &c);
    client_close(&c);
    sf_coordinator_close(co);
}
END_TEST

/* A JobRequest from a worker that fetches its models (model.url), holding
 * `ready` (n of them). */
static Spirefleet__Envelope *request_job_holding(sf_coordinator *co, client *c, const char **ready,
                                                 size_t n) {
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__JobRequest jr = SPIREFLEET__JOB_REQUEST__INIT;
    jr.fetches_models = 1;
    jr.ready_models = (char **)ready;
    jr.n_ready_models = n;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_JOB_REQUEST;
    req.job_request = &jr;
    return rpc(co, c, &req);
}

/* Model distribution (docs/operator.md): a worker that still fetches a new
 * champion plays the previous one it holds (bound in the ledger as ever)
 * and is told which to fetch; one that holds it, or says nothing of
 * fetching, gets the champion; the coordinator serves the registry's
 * bundles by SHA-256 at /models/, Range included, and counts them. */
START_TEST(a_worker_fetching_the_new_champion_plays_the_one_it_holds) {
    char reg[512], champ[600], extra[900], path[700];
    snprintf(reg, sizeof reg, "%s/registry", tmpdir);
    ck_assert_int_eq(sf_mkdir_p(reg), 0);
    snprintf(champ, sizeof champ, "%s/champion", reg);
    snprintf(extra, sizeof extra, "search: {evaluator: net}\nmodel: {champion: '%s'}\n", champ);
    char a[65], b[65];
    memset(a, 'a', 64), memset(b, 'b', 64);
    a[64] = b[64] = '\0';
    snprintf(path, sizeof path, "%s/%s.safetensors", reg, b);
    FILE *f = fopen(path, "wb");
    ck_assert_int_eq(fwrite("0123456789", 1, 10, f), 10);
    fclose(f);
    sf_run_config cfg;
    make_cfg_n(&cfg, "fetching", 60, 24, extra); /* 6 jobs of 4 seeds */
    sf_coordinator *co;
    sf_err e = {0};
    sf_coord_opts o = {.metrics_port = SF_METRICS_ANY_PORT};
    ck_assert_msg(sf_coordinator_open(&cfg, &o, &co, &e) == SF_OK, "%s", e.msg);
    client c, d, x;
    client_open(&c, co);
    client_open(&d, co);
    client_open(&x, co);
    hello(co, &c, "fetcher");
    hello(co, &d, "holder");
    hello(co, &x, "plain");
    ck_assert_int_eq(sf_registry_champion_write(reg, a, &e), SF_OK);
    const char *has_a[] = {a}, *has_b[] = {b, a};
    Spirefleet__Envelope *r = request_job_holding(co, &c, has_a, 1);
    ck_assert_str_eq(r->job->model_sha256, a);
    ck_assert_str_eq(r->job->next_model_sha256, a);
    sf_wire_free(r);
    ck_assert_int_eq(sf_registry_champion_write(reg, b, &e), SF_OK);
    r = request_job_holding(co, &c, has_a, 1); /* b is still on its way */
    ck_assert_uint_eq(r->job->job_id, 2);
    ck_assert_str_eq(r->job->model_sha256, a);
    ck_assert_str_eq(r->job->next_model_sha256, b);
    sf_wire_free(r);
    r = request_job_holding(co, &d, has_b, 2);
    ck_assert_str_eq(r->job->model_sha256, b);
    sf_wire_free(r);
    expect_job(co, &x, 4, 1, b);              /* no word of fetching: the champion, as before */
    r = request_job_holding(co, &d, NULL, 0); /* holds nothing of this run yet */
    ck_assert_str_eq(r->job->model_sha256, b);
    sf_wire_free(r);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.leases_on_previous_model, 1);

    int port = 0;
    ck_assert_int_eq(sscanf(sf_coordinator_metrics_url(co), "http://127.0.0.1:%d/", &port), 1);
    char line[200], buf[4096];
    snprintf(line, sizeof line, "GET /models/%s", b);
    sf_test_http_headers(port, line, "Range: bytes=4-\r\n", buf, sizeof buf);
    ck_assert_msg(strstr(buf, "206 Partial Content") && strstr(buf, "\r\n\r\n456789") &&
                      strstr(buf, "immutable"),
                  "%s", buf);
    snprintf(line, sizeof line, "GET /models/%s", a); /* named, but not in the registry */
    sf_test_http(port, line, buf, sizeof buf);
    ck_assert_msg(strstr(buf, "404 Not Found"), "%s", buf);
    sf_test_http(port, "GET /models/..%2Fchampion", buf, sizeof buf);
    ck_assert_msg(strstr(buf, "404 Not Found"), "%s", buf);
    sf_coordinator_step(co, 0, &e);
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.model_requests, 1);
    ck_assert_uint_eq(st.model_bytes_served, 6);
    client_close(&c);
    client_close(&d);
    client_close(&x);
    sf_coordinator_close(co);
}
END_TEST

/* One worker holds at most CO_MAX_LEASES_PER_WORKER leases (the job it
 * plays and the one it uploads): a client asking for more while jobs are
 * pending waits, the jobs go to others, and it gets one again once it
 * delivers. */
START_TEST(one_worker_cannot_hoard_leases) {
    sf_run_config cfg;
    client a, b;
    sf_coordinator *co = begin(&cfg, &a); /* 3 jobs; a is w1 */
    expect_job(co, &a, 1, 1, "rollout");
    expect_job(co, &a, 2, 1, "rollout");
    expect_wait(co, &a); /* job 3 is pending, but a holds 2 */
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.lease_limit_waits, 1);
    ck_assert_uint_eq(st.jobs_pending, 1);
    client_open(&b, co);
    hello(co, &b, "w2");
    expect_job(co, &b, 3, 1, "rollout");
    char path[512];
    uint8_t dig[32];
    snprintf(path, sizeof path, "%s/hoard-j1.shard", tmpdir);
    make_shard(co, 1, 100, 4, path, dig);
    Spirefleet__Envelope *r = send_shard(co, &a, 1, path, dig, -1);
    ck_assert_msg(r->shard_ack->ok, "%s", r->shard_ack->reason);
    sf_wire_free(r);
    job_failed(co, &b, 3, SF_JOB_ABANDONED); /* job 3 pending again */
    expect_job(co, &a, 3, 2, "rollout");     /* a holds 1 now: it may take it */
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.lease_limit_waits, 1);
    client_close(&a);
    client_close(&b);
    sf_coordinator_close(co);
}
END_TEST

/* Clients c[0..2] of the run's worker key say Hello as w1 and w2, then c[2]
 * as a third new id, w3, which is refused with `reason`; c[2] then comes
 * back as the known w1 (a known id on a new connection), leaving 2 ids. */
static void third_new_id_is_refused(sf_coordinator *co, client c[3], const char *reason) {
    for (int i = 0; i < 3; i++)
        client_open(&c[i], co);
    hello(co, &c[0], "w1");
    hello(co, &c[1], "w2");
    Spirefleet__Envelope *r = hello_answer(co, &c[2], "w3");
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_REFUSAL);
    ck_assert_str_eq(r->refusal->reason, reason);
    sf_wire_free(r);
    hello(co, &c[2], "w1");
    ck_assert_int_eq(co->nworkers, 2);
}

/* One listed key may say Hello under any number of worker ids, each taking
 * a slot: past sf_coord_opts.max_workers a new id is refused (before it
 * gets a slot), while a known id still comes back on a new connection. */
START_TEST(new_worker_ids_past_the_limit_are_refused) {
    sf_run_config cfg;
    make_cfg(&cfg, "maxw", 60, NULL);
    sf_coordinator *co;
    sf_err e = {0};
    sf_coord_opts o = {.max_workers = 2};
    ck_assert_msg(sf_coordinator_open(&cfg, &o, &co, &e) == SF_OK, "%s", e.msg);
    client c[3];
    third_new_id_is_refused(co, c, "the run has 2 worker ids, the most it takes; reuse an id");
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.workers_refused, 1);
    for (int i = 0; i < 3; i++)
        client_close(&c[i]);
    sf_coordinator_close(co);
}
END_TEST

/* One key holds at most security.max_workers_per_key live worker ids (here
 * 2): a third new id under the run's worker key is refused naming the key,
 * its known ids still say Hello, another key's worker is let in, and once
 * the key's workers are dead a new id is let in again. The per-worker
 * lease limit alone let one key take every lease by making ids. */
START_TEST(one_key_cannot_make_worker_ids_past_its_limit) {
    sf_run_config cfg;
    /* a 3 s liveness window: w1 and w2 stay alive while w3 is refused
     * however slowly the handshakes go, and die once left silent */
    make_cfg_window(&cfg, "perkey", 60, 12, 30,
                    "security: {audit_fraction: 0, audit_first_jobs: 0, max_workers_per_key: 2}\n");
    sf_coordinator *co = open_co(&cfg);
    char id[SF_ZSEC_ID_LEN + 1], want[200], dir[400];
    sf_zsec_client sec;
    sf_err e = {0};
    sf_config_keys_dir(&cfg, dir, sizeof dir);
    ck_assert_int_eq(sf_zsec_client_load(dir, SF_ZSEC_WORKER_NAME, &sec, &e), SF_OK);
    sf_zsec_key_id(sec.me.pub, id);
    snprintf(want, sizeof want,
             "key %s has 2 live worker ids, the most security.max_workers_per_key allows; "
             "reuse an id",
             id);
    client c[5];
    third_new_id_is_refused(co, c, want);
    open_keyed(&c[3], co, "other");
    hello(co, &c[3], "w3"); /* another key */
    ck_assert_int_eq(co->nworkers, 3);
    /* only live ids count (the dead hold no lease): once w1 and w2 fall
     * silent past the liveness window (100 ms x 30), a new id is let in, as
     * a restarted worker's new host-pid id must be */
    uint64_t t0 = sf_now_ns();
    for (int live = 2; live > 0;) {
        ck_assert_msg(sf_now_ns() - t0 < WAIT_NS, "w1 and w2 never counted as dead");
        ck_assert_int_eq(sf_coordinator_step(co, 20, &e), SF_OK);
        live = 0;
        for (int i = 0; i < co->nworkers; i++)
            live += co->workers[i].alive && (!strcmp(co->workers[i].worker_id, "w1") ||
                                             !strcmp(co->workers[i].worker_id, "w2"));
    }
    client_open(&c[4], co); /* a new process: a new connection */
    hello(co, &c[4], "w4");
    ck_assert_int_eq(co->nworkers, 4);
    for (int i = 0; i < 5; i++)
        client_close(&c[i]);
    sf_coordinator_close(co);
}
END_TEST

/* The worker slot of worker id `id` (white box); -1 when none. */
static int slot_of(const sf_coordinator *co, const char *id) {
    for (int i = 0; i < co->nworkers; i++)
        if (!strcmp(co->workers[i].worker_id, id))
            return i;
    return -1;
}

/* A heartbeat from `c` (no job); its answer, if any, is left unread. */
static void send_heartbeat(client *c) {
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Heartbeat hb = SPIREFLEET__HEARTBEAT__INIT;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_HEARTBEAT;
    req.heartbeat = &hb;
    ck_assert_int_eq(sf_wire_send(c->sock, NULL, 0, &req, 0), SF_OK);
}

/* Drop whatever replies wait for `c`. */
static void drain_replies(client *c) {
    Spirefleet__Envelope *env;
    sf_err e = {0};
    while (sf_wire_recv(c->sock, "the coordinator", 0, &env, &e) == SF_OK)
        sf_wire_free(env);
}

/* Step the coordinator until worker `id` is dead, `keep` (may be NULL)
 * heartbeating meanwhile so that it stays alive. */
static void until_dead(sf_coordinator *co, const char *id, client *keep) {
    sf_err e = {0};
    uint64_t t0 = sf_now_ns(), last_hb = 0;
    while (co->workers[slot_of(co, id)].alive) {
        ck_assert_msg(sf_now_ns() - t0 < WAIT_NS, "worker %s never counted as dead", id);
        if (keep && sf_now_ns() - last_hb > 100 * CO_NS_PER_MS) {
            send_heartbeat(keep);
            last_hb = sf_now_ns();
        }
        ck_assert_int_eq(sf_coordinator_step(co, 20, &e), SF_OK);
        if (keep)
            drain_replies(keep);
    }
}

/* coordinator.max_workers (docs/operator.md "Fairness between runs"): at
 * most 2 live workers here. A third worker's Hello is refused naming the
 * limit; an admitted worker reconnecting (a new connection, the same id)
 * keeps its place; one that says Goodbye frees its place at once, and one
 * that falls silent past the liveness window (100 ms x 30) frees it too,
 * and cannot take it back with heartbeats: only through Hello, refused
 * while the run is full. Status and /metrics count the refusals. */
START_TEST(a_run_admits_at_most_max_workers_live_workers) {
    sf_run_config cfg;
    config_of(&cfg,
              "run: {name: fair, output_dir: '%s/runlimit'}\n"
              "seeds: {start: 100, count: 12, job_size: 4}\n"
              "coordinator: {endpoint: 'tcp://127.0.0.1:*', lease_seconds: 60, heartbeat_ms: 100,"
              " heartbeat_liveness: 30, max_workers: 2}\n"
              "security: {audit_fraction: 0, audit_first_jobs: 0}\n",
              tmpdir);
    sf_coordinator *co = open_co(&cfg);
    const char *full = "run fair is at its worker limit (2, coordinator.max_workers)";
    client c[6];
    for (int i = 0; i < 6; i++)
        client_open(&c[i], co);
    hello(co, &c[0], "w1");
    hello(co, &c[1], "w2");
    Spirefleet__Envelope *r = hello_answer(co, &c[2], "w3");
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_REFUSAL);
    ck_assert_str_eq(r->refusal->reason, full);
    sf_wire_free(r);
    ck_assert_int_eq(slot_of(co, "w3"), -1); /* refused before it got a slot */
    hello(co, &c[3], "w1");                  /* w1 reconnects: still admitted */
    ck_assert_uint_eq(co_workers_admitted(co), 2);
    char shown[4096];
    sf_wire_free(status_shown(co, &c[2], shown, sizeof shown));
    ck_assert_msg(strstr(shown, "worker limit 2 (coordinator.max_workers): 2 admitted, 1 "
                                "Hello(s) refused at the limit\n"),
                  "%s", shown);
    /* w2 says Goodbye: its place is free at once, and w3 takes it */
    Spirefleet__Envelope bye = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Goodbye g = SPIREFLEET__GOODBYE__INIT;
    g.worker_id = (char *)"w2";
    g.reason = (char *)"serving its next run";
    bye.body_case = SPIREFLEET__ENVELOPE__BODY_GOODBYE;
    bye.goodbye = &g;
    ck_assert_int_eq(sf_wire_send(c[1].sock, NULL, 0, &bye, 0), SF_OK);
    until_dead(co, "w2", NULL);
    hello(co, &c[2], "w3");
    /* w4 is refused while w1 and w3 live; once w1 falls silent (w3
     * heartbeating), w4 is admitted */
    r = hello_answer(co, &c[4], "w4");
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_REFUSAL);
    ck_assert_str_eq(r->refusal->reason, full);
    sf_wire_free(r);
    until_dead(co, "w1", &c[2]);
    hello(co, &c[4], "w4");
    /* w1's heartbeat does not bring it back past the limit: it is told to
     * say Hello, and its Hello is refused */
    send_heartbeat(&c[3]);
    r = pump(co, &c[3]);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_ERROR);
    ck_assert_str_eq(r->error->message, "unknown worker: send Hello first");
    sf_wire_free(r);
    r = hello_answer(co, &c[3], "w1");
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_REFUSAL);
    ck_assert_str_eq(r->refusal->reason, full);
    sf_wire_free(r);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.worker_limit, 2);
    ck_assert_uint_eq(st.workers_admitted, 2);
    ck_assert_uint_eq(st.workers_refused_limit, 3); /* w3, w4, w1 */
    for (int i = 0; i < 6; i++)
        client_close(&c[i]);
    sf_coordinator_close(co);
}
END_TEST

/* A quarantined worker (its failure reports) holds no place under
 * coordinator.max_workers: before, it kept a run of limit 1 full with
 * nobody playing, and every good worker was refused. */
START_TEST(a_quarantined_worker_frees_its_place_under_the_limit) {
    sf_run_config cfg;
    config_of(&cfg,
              "run: {name: fairq, output_dir: '%s/runlimitq'}\n"
              "seeds: {start: 100, count: 12, job_size: 4}\n"
              "coordinator: {endpoint: 'tcp://127.0.0.1:*', lease_seconds: 60, heartbeat_ms: 100,"
              " heartbeat_liveness: 30, max_workers: 1}\n"
              "security: {audit_fraction: 0, audit_first_jobs: 0}\n",
              tmpdir);
    sf_coordinator *co = open_co(&cfg);
    client bad, good;
    client_open(&bad, co);
    client_open(&good, co);
    hello(co, &bad, "bad");
    Spirefleet__Envelope *r = hello_answer(co, &good, "good");
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_REFUSAL);
    sf_wire_free(r);
    for (int k = 0; k < CO_MAX_WORKER_FAILURES; k++) {
        r = request_job(co, &bad);
        ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
        job_failed(co, &bad, r->job->job_id, "cannot play");
        sf_wire_free(r);
    }
    ck_assert_uint_eq(co_workers_admitted(co), 0);
    hello(co, &good, "good");
    r = request_job(co, &good);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    sf_wire_free(r);
    client_close(&bad);
    client_close(&good);
    sf_coordinator_close(co);
}
END_TEST

/* labels/s over the last minute when more than the 256 completions the
 * ring keeps fall in it: over the time they span. 300 jobs of 10 labels
 * done evenly over the last 10 s: the newest 256 cover 8.53 s, 300
 * labels/s; it used to divide by the whole minute (42.7 labels/s, and an
 * ETA seven times too long). */
START_TEST(labels_per_s_counts_the_span_the_ring_covers) {
    sf_run_config cfg;
    make_cfg(&cfg, "ring", 60, NULL);
    sf_coordinator *co = open_co(&cfg);
    uint64_t now = sf_now_ns(), ten = 10ull * CO_NS_PER_S;
    co->started_ns = now - 120ull * CO_NS_PER_S;
    co->done_head = co->done_n = 0;
    for (int i = 0; i < 300; i++) {
        co->done_t[co->done_head] = now - ten + ten * (uint64_t)i / 300;
        co->done_labels[co->done_head] = 10;
        co->done_head = (co->done_head + 1) % 256;
        co->done_n += co->done_n < 256;
    }
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_msg(st.labels_per_s > 295 && st.labels_per_s <= 300.01, "%f", st.labels_per_s);
    sf_coordinator_close(co);
}
END_TEST

/* A worker that said Goodbye (a pool worker moving to its next run) stays
 * on the dashboard's Workers table as gone: before, it vanished, and a
 * complete run served by such workers showed none. */
START_TEST(a_worker_that_said_goodbye_stays_on_the_dashboard) {
    sf_run_config cfg;
    make_cfg(&cfg, "byedash", 60, NULL);
    sf_coordinator *co;
    sf_err e = {0};
    sf_coord_opts o = {.metrics_port = SF_METRICS_ANY_PORT};
    ck_assert_msg(sf_coordinator_open(&cfg, &o, &co, &e) == SF_OK, "%s", e.msg);
    client c;
    client_open(&c, co);
    hello(co, &c, "leaver");
    Spirefleet__Envelope bye = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Goodbye g = SPIREFLEET__GOODBYE__INIT;
    g.worker_id = (char *)"leaver";
    g.reason = (char *)"serving its next run";
    bye.body_case = SPIREFLEET__ENVELOPE__BODY_GOODBYE;
    bye.goodbye = &g;
    ck_assert_int_eq(sf_wire_send(c.sock, NULL, 0, &bye, 0), SF_OK);
    until_dead(co, "leaver", NULL);
    metrics_publish(co);
    char buf[16384];
    sf_test_http(sf_coordinator_metrics_port(co), "GET /api/workers", buf, sizeof buf);
    ck_assert_msg(strstr(buf, "\"worker_id\":\"leaver\"") && strstr(buf, "\"alive\":false"), "%s",
                  buf);
    /* its Hello named no thread count: it plays with the run's */
    char threads[64];
    snprintf(threads, sizeof threads, "\"threads\":%u,", cfg.workers.threads);
    ck_assert_msg(cfg.workers.threads > 0 && strstr(buf, threads), "%s", buf);
    client_close(&c);
    sf_coordinator_close(co);
}
END_TEST

/* No coordinator.max_workers (the default, 0): no limit, and status says
 * nothing of one. */
START_TEST(without_max_workers_every_worker_is_admitted) {
    sf_run_config cfg;
    make_cfg(&cfg, "nolimit", 60, NULL);
    sf_coordinator *co = open_co(&cfg);
    client c[4];
    char id[8];
    for (int i = 0; i < 4; i++) {
        client_open(&c[i], co);
        snprintf(id, sizeof id, "w%d", i + 1);
        hello(co, &c[i], id);
    }
    ck_assert_uint_eq(co_workers_admitted(co), 4);
    char shown[4096];
    sf_wire_free(status_shown(co, &c[0], shown, sizeof shown));
    ck_assert_msg(!strstr(shown, "worker limit"), "%s", shown);
    for (int i = 0; i < 4; i++)
        client_close(&c[i]);
    sf_coordinator_close(co);
}
END_TEST

/* Two processes under one worker id: the newer one (another pid) takes the
 * id over and the older one's lease is given up; when the older one says
 * Hello again it is refused, naming the newer pid, instead of taking the
 * id back (before, the two took it from each other at every Hello and
 * each one's uploads were refused in turn). */
START_TEST(the_older_of_two_processes_under_one_id_is_refused) {
    sf_run_config cfg;
    make_cfg(&cfg, "twice", 60, NULL);
    sf_coordinator *co = open_co(&cfg);
    client old, newer;
    client_open(&old, co);
    client_open(&newer, co);
    send_hello_pid(&old, "w1", 100);
    Spirefleet__Envelope *r = pump(co, &old);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_WELCOME);
    sf_wire_free(r);
    r = request_job(co, &old);
    ck_assert_uint_eq(r->job->job_id, 1);
    sf_wire_free(r);
    send_hello_pid(&newer, "w1", 200);
    r = pump(co, &newer);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_WELCOME);
    sf_wire_free(r);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.jobs_pending, 3); /* job 1 given up with the old process */
    send_hello_pid(&old, "w1", 100);
    r = pump(co, &old);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_REFUSAL);
    ck_assert_str_eq(r->refusal->reason, "worker id w1 was taken over by a newer process (pid "
                                         "200); give each worker its own id");
    sf_wire_free(r);
    r = request_job(co, &newer); /* the id is still the newer one's */
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    sf_wire_free(r);
    client_close(&old);
    client_close(&newer);
    sf_coordinator_close(co);
}
END_TEST

START_TEST(one_coordinator_per_output_dir) {
    sf_run_config cfg;
    make_cfg(&cfg, "run", 60, NULL);
    sf_coordinator *co = open_co(&cfg), *co2 = NULL;
    sf_err e = {0};
    sf_coord_opts o = {0};
    ck_assert_int_eq(sf_coordinator_open(&cfg, &o, &co2, &e), SF_ESTATE);
    ck_assert_ptr_nonnull(strstr(e.msg, "another coordinator"));
    sf_coordinator_close(co);
    ck_assert_int_eq(sf_coordinator_open(&cfg, &o, &co2, &e), SF_OK);
    sf_coordinator_close(co2);
}
END_TEST

/* Keys take effect at once on an idle server (docs/operator.md, "Rotation
 * and revocation"). Before, the lists were read again only inside
 * sf_zsec_peer, i.e. when an admitted peer's message arrived: a key added
 * with `sf-fleet keygen DIR --add NAME` to a coordinator no one talked to
 * was refused for as long as that lasted, and a deleted one still let in. */

/* Step the coordinator until a reply reaches `c` or `ms` pass; NULL: none. */
static Spirefleet__Envelope *reply_within(sf_coordinator *co, client *c, int ms) {
    sf_err e = {0};
    for (uint64_t t0 = sf_now_ns(); sf_now_ns() - t0 < (uint64_t)ms * 1000000u;) {
        ck_assert_int_eq(sf_coordinator_step(co, 10, &e), SF_OK);
        Spirefleet__Envelope *env;
        int rc = sf_wire_recv(c->sock, "the coordinator", 0, &env, &e);
        if (rc == SF_ETIMEOUT)
            continue;
        ck_assert_msg(rc == SF_OK, "reply does not decode: %s", e.msg);
        return env;
    }
    return NULL;
}

START_TEST(a_key_added_to_an_idle_coordinator_is_let_in_at_its_first_hello) {
    sf_run_config cfg;
    make_cfg(&cfg, "idlehello", 60, NULL);
    sf_coordinator *co = open_co(&cfg);
    sf_err e = {0};
    for (int i = 0; i < 20; i++) /* idle: no peer has connected, nothing arrives */
        ck_assert_int_eq(sf_coordinator_step(co, 10, &e), SF_OK);
    char dir[400];
    sf_config_keys_dir(&co->cfg, dir, sizeof dir);
    /* what `sf-fleet keygen DIR --add newcomer` does (sf-fleet/sf_fleet.c) */
    ck_assert_msg(sf_zsec_add_key(dir, "newcomer", SF_ZSEC_CLIENTS_DIR, &e) == SF_OK, "%s", e.msg);
    client c;
    client_open_as(&c, co, "newcomer");
    send_hello(&c, "newcomer-1");
    /* the handshake is judged against the lists on disk, so the answer
     * comes at the first one (a wait for it, however slow the machine) */
    Spirefleet__Envelope *r = reply_within(co, &c, (int)(WAIT_NS / 1000000u));
    sf_zsec_counts zc;
    sf_zsec_server_counts(co->zsec, &zc);
    ck_assert_msg(r, "no answer to the new key's Hello (%llu handshakes refused)",
                  (unsigned long long)zc.handshakes_denied);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_WELCOME);
    sf_wire_free(r);
    ck_assert_uint_eq(zc.clients, 2); /* worker and newcomer */
    client_close(&c);
    sf_coordinator_close(co);
}
END_TEST

/* The coordinator's loop re-reads changed lists on its own within a second
 * (sf_zsec_server_check is its timer), with no handshake and no message:
 * status's key counts and the log say what is in force. */
START_TEST(an_idle_coordinator_rereads_changed_key_lists_within_a_second) {
    sf_run_config cfg;
    make_cfg(&cfg, "idletimer", 60, NULL);
    log_lines log = {0};
    sf_coordinator *co = open_co_logged(&cfg, &log);
    sf_err e = {0};
    sf_zsec_counts before, now;
    sf_zsec_server_counts(co->zsec, &before);
    char dir[400];
    sf_config_keys_dir(&co->cfg, dir, sizeof dir);
    ck_assert_msg(sf_zsec_add_key(dir, "newcomer", SF_ZSEC_CLIENTS_DIR, &e) == SF_OK, "%s", e.msg);
    uint64_t t0 = sf_now_ns();
    do {
        ck_assert_int_eq(sf_coordinator_step(co, 10, &e), SF_OK);
        sf_zsec_server_counts(co->zsec, &now);
    } while (now.clients == before.clients && sf_now_ns() - t0 < WAIT_NS);
    ck_assert_msg(now.clients == before.clients + 1,
                  "the idle coordinator still lists %u client key(s) after one was added",
                  now.clients);
    ck_assert_uint_gt(now.reloads, before.reloads);
    ck_assert_ptr_nonnull(strstr(log.text, "reloaded: 2 client key(s), 1 operator key(s)"));
    sf_coordinator_close(co);
}
END_TEST

/* The ZAP handler alone (no sf_zsec_server_check, no sf_zsec_peer: nothing
 * of the owner's thread runs) judges each handshake against the lists as
 * they are on disk: a key added a moment ago gets in, a key whose .pub was
 * deleted a moment ago is refused at its next handshake. */
static void *zsec_dealer(void *zctx, const char *dir, const char *name, const char *endpoint) {
    sf_zsec_client sec;
    sf_err e = {0};
    ck_assert_msg(sf_zsec_client_load(dir, name, &sec, &e) == SF_OK, "%s", e.msg);
    void *s = zmq_socket(zctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    ck_assert_int_eq(sf_zsec_client_apply(&sec, s, &e), SF_OK);
    ck_assert_int_eq(zmq_connect(s, endpoint), 0);
    /* never blocking: a refused key's DEALER has no peer once its
     * handshake has failed (offer_hello_and_garbage) */
    ck_assert(zmq_send(s, "hi", 2, ZMQ_DONTWAIT) == 2 || zmq_errno() == EAGAIN);
    return s;
}

START_TEST(the_zap_handler_judges_each_handshake_against_the_lists_on_disk) {
    char dir[400];
    snprintf(dir, sizeof dir, "%s/zapkeys", tmpdir);
    sf_err e = {0};
    ck_assert_msg(sf_zsec_ensure_dir(dir, &e) == SF_OK, "%s", e.msg);
    void *zctx = zmq_ctx_new();
    sf_zsec_server *zs;
    ck_assert_msg(sf_zsec_server_open(zctx, dir, NULL, NULL, &zs, &e) == SF_OK, "%s", e.msg);
    void *router = zmq_socket(zctx, ZMQ_ROUTER);
    int zero = 0;
    zmq_setsockopt(router, ZMQ_LINGER, &zero, sizeof zero);
    ck_assert_int_eq(sf_zsec_server_apply(zs, router, &e), SF_OK);
    ck_assert_int_eq(zmq_bind(router, "tcp://127.0.0.1:*"), 0);
    char ep[256];
    size_t len = sizeof ep;
    ck_assert_int_eq(zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, ep, &len), 0);
    /* added after the server read its lists */
    ck_assert_msg(sf_zsec_add_key(dir, "newcomer", SF_ZSEC_CLIENTS_DIR, &e) == SF_OK, "%s", e.msg);
    void *cctx = zmq_ctx_new();
    void *a = zsec_dealer(cctx, dir, "newcomer", ep);
    zmq_pollitem_t it = {router, 0, ZMQ_POLLIN, 0};
    ck_assert_msg(zmq_poll(&it, 1, (long)(WAIT_NS / 1000000u)) == 1,
                  "the added key's message did not arrive");
    zmq_msg_t m[2];
    for (int i = 0; i < 2; i++) {
        zmq_msg_init(&m[i]);
        ck_assert_int_ge(zmq_msg_recv(&m[i], router, 0), 0);
    }
    sf_zsec_keypair kp;
    char path[600];
    snprintf(path, sizeof path, "%s/newcomer.key", dir);
    ck_assert_int_eq(sf_zsec_read_secret(path, &kp, &e), SF_OK);
    ck_assert_str_eq(zmq_msg_gets(&m[1], "User-Id"), kp.pub);
    for (int i = 0; i < 2; i++)
        zmq_msg_close(&m[i]);
    zmq_close(a);
    /* revoked: its next handshake is refused, so its message never comes */
    sf_zsec_counts before, now;
    sf_zsec_server_counts(zs, &before);
    snprintf(path, sizeof path, "%s/%s/newcomer.pub", dir, SF_ZSEC_CLIENTS_DIR);
    ck_assert_int_eq(unlink(path), 0);
    void *b = zsec_dealer(cctx, dir, "newcomer", ep);
    uint64_t t0 = sf_now_ns();
    do {
        ck_assert_msg(zmq_poll(&it, 1, 10) == 0,
                      "a message of the deleted key arrived: its handshake was let in");
        sf_zsec_server_counts(zs, &now);
    } while (now.handshakes_denied == before.handshakes_denied && sf_now_ns() - t0 < WAIT_NS);
    ck_assert_msg(now.handshakes_denied > before.handshakes_denied,
                  "the deleted key's handshake was not refused");
    ck_assert_uint_eq(now.clients, 1);
    ck_assert_int_eq(zmq_poll(&it, 1, 0), 0);
    zmq_close(b);
    zmq_ctx_term(cctx);
    zmq_close(router);
    sf_zsec_server_close(zs);
    zmq_ctx_term(zctx);
}
END_TEST

/* defined below, with the tests of damaged ledgers */
static void run_two_of_three(sf_run_config *cfg, const char *sub, char digests[3][65]);

/* The run's stored config (the meta record "config", the packed RunConfig)
 * carries a checksum like every record; a flipped byte in it is a damaged
 * ledger naming the file and the record. Before, "digest", "format" and
 * "jobs" were checked at load and "config" never read: its damage went
 * unnoticed. */
START_TEST(a_damaged_config_record_is_a_damaged_ledger) {
    sf_run_config cfg;
    char digests[3][65];
    run_two_of_three(&cfg, "cfgrec", digests);
    char ledger[512];
    snprintf(ledger, sizeof ledger, "%s/cfgrec/ledger.lmdb", tmpdir);
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi meta;
    ck_assert_int_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 4);
    ck_assert_int_eq(mdb_env_open(env, ledger, MDB_NOSUBDIR, 0644), 0);
    ck_assert_int_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    ck_assert_int_eq(mdb_dbi_open(txn, "meta", 0, &meta), 0);
    MDB_val k = {6, "config"}, v;
    ck_assert_int_eq(mdb_get(txn, meta, &k, &v), 0);
    ck_assert_uint_gt(v.mv_size, 16 + 8);
    uint8_t *bad = malloc(v.mv_size);
    memcpy(bad, v.mv_data, v.mv_size);
    bad[(v.mv_size - 16) / 2] ^= 0x10; /* a byte of the packed config, not of its tag */
    MDB_val bv = {v.mv_size, bad};
    ck_assert_int_eq(mdb_put(txn, meta, &k, &bv, 0), 0);
    ck_assert_int_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
    free(bad);
    sf_coordinator *co = NULL;
    sf_err e = {0};
    sf_coord_opts o = {0};
    ck_assert_int_eq(sf_coordinator_open(&cfg, &o, &co, &e), SF_ECORRUPT);
    ck_assert_ptr_null(co);
    ck_assert_msg(strstr(e.msg, "cfgrec/ledger.lmdb: the ledger is damaged: the run's 'config' "
                                "record is damaged (its checksum does not match)"),
                  "%s", e.msg);
    /* the way out, as for a damaged job record */
    sf_ledger_rebuild rep;
    ck_assert_msg(sf_coordinator_rebuild_ledger(&cfg, &o, &rep, &e) == SF_OK, "%s", e.msg);
    ck_assert_uint_eq(rep.jobs_done, 2);
    co = open_co(&cfg);
    for (int i = 0; i < 2; i++)
        ck_assert_str_eq(co->jobs[i].content_digest, digests[i]);
    sf_coordinator_close(co);
}
END_TEST

START_TEST(metrics_text_exposition) {
    sf_coord_status st = {0};
    st.jobs_pending = 5;
    st.jobs_leased = 2;
    st.jobs_done = 9;
    st.labels = 1234;
    st.labels_per_s = 56.5;
    st.workers_alive = 3;
    st.lease_expiries = 1;
    st.decode_errors = 4;
    st.bytes_stored = 777;
    st.uploads_deferred = 6;
    st.uploads_paused = 1;
    st.auth_denied = 7;
    st.audits_caught = 2;
    st.lease_limit_waits = 11;
    st.audits_open = 3;
    st.audits_differ = 1;
    st.keys_failing = 2;
    char buf[8192];
    ck_assert_int_gt(metrics_render(&st, "r1", buf, sizeof buf), 0);
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_jobs{run=\"r1\",state=\"done\"} 9\n"));
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_jobs{run=\"r1\",state=\"pending\"} 5\n"));
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_labels_total{run=\"r1\"} 1234\n"));
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_labels_per_second{run=\"r1\"} 56.500\n"));
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_workers_alive{run=\"r1\"} 3\n"));
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_decode_errors_total{run=\"r1\"} 4\n"));
    ck_assert_ptr_nonnull(strstr(buf, "# TYPE spirefleet_bytes_stored_total counter\n"));
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_uploads_deferred_total{run=\"r1\"} 6\n"));
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_auth_denied_total{run=\"r1\"} 7\n"));
    ck_assert_ptr_nonnull(
        strstr(buf, "spirefleet_audits_total{run=\"r1\",outcome=\"caught\"} 2\n"));
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_lease_limit_waits_total{run=\"r1\"} 11\n"));
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_uploads_paused{run=\"r1\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_cannot_finish{run=\"r1\"} 0\n"));
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_audits_open{run=\"r1\"} 3\n"));
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_audits_undecided{run=\"r1\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_keys_failing{run=\"r1\"} 2\n"));
    ck_assert_int_eq(metrics_render(&st, "r1", buf, 100), SF_EFULL);
}
END_TEST

/* Uploads of a job whose fights ended at the turn cap, from a verified
 * shard: the run counts those fights in status and /metrics, keeps the
 * count across a restart, and refuses a manifest that hides them. */
START_TEST(turn_limit_fights_are_counted_from_verified_shards) {
    sf_run_config cfg;
    client c;
    sf_coordinator *co = begin(&cfg, &c);
    /* 30 synthetic records: fights 0 (records 0..19) and 1 (20..29), both
     * ended at the cap (label_synth.h) */
    Spirefleet__Counter k = SPIREFLEET__COUNTER__INIT, *ks[1] = {&k};
    Spirefleet__JobStats stats = SPIREFLEET__JOB_STATS__INIT;
    k.name = (char *)SF_SHARD_COUNTER_TURN_LIMIT;
    stats.n_counters = 1;
    stats.counters = ks;
    char path[512];
    uint8_t dig[32];
    expect_job(co, &c, 1, 1, "rollout");
    snprintf(path, sizeof path, "%s/hides.shard", tmpdir);
    make_shard_full(co, 1, 100, 30, path, dig, SF_ZSEC_WORKER_NAME, 0, NULL, 1, &stats);
    Spirefleet__Envelope *r = send_shard(co, &c, 1, path, dig, -1);
    ck_assert(!r->shard_ack->ok);
    ck_assert_msg(strstr(r->shard_ack->reason, "records of 2 fights ended at the turn cap, the "
                                               "manifest's turn_limit_fights says 0"),
                  "%s", r->shard_ack->reason);
    sf_wire_free(r);
    k.value = 2;
    snprintf(path, sizeof path, "%s/capped.shard", tmpdir);
    make_shard_full(co, 1, 100, 30, path, dig, SF_ZSEC_WORKER_NAME, 0, NULL, 1, &stats);
    r = send_shard(co, &c, 1, path, dig, -1);
    ck_assert_msg(r->shard_ack->ok, "%s", r->shard_ack->reason);
    sf_wire_free(r);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.fights_turn_limit, 2);
    char buf[16384];
    ck_assert_int_gt(metrics_render(&st, "ctest", buf, sizeof buf), 0);
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_fights_turn_limit_total{run=\"ctest\"} 2\n"));
    char shown[2048];
    Spirefleet__Envelope *sr_env = status_shown(co, &c, shown, sizeof shown);
    ck_assert_uint_eq(sr_env->status_reply->fights_turn_limit, 2);
    ck_assert_msg(strstr(shown, "(2 ended at the turn cap, play.max_turns)"), "%s", shown);
    sf_wire_free(sr_env);
    /* the ledger keeps the count */
    client_close(&c);
    sf_coordinator_close(co);
    co = open_co(&cfg);
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.jobs_done, 1);
    ck_assert_uint_eq(st.fights_turn_limit, 2);
    sf_coordinator_close(co);
}
END_TEST

/* One worker holds job 1 while another stores jobs 2..4 at once: once job
 * 1 has run 10 times the median stored job (and at least the 50 ms this
 * test sets instead of 30 s), status, the printed status and /metrics name
 * it SLOW with its worker. */
START_TEST(a_job_far_slower_than_its_peers_is_shown_slow) {
    sf_run_config cfg;
    make_cfg_n(&cfg, "slow", 60, 16, NULL);
    sf_coordinator *co;
    sf_err e = {0};
    sf_coord_opts o = {.slow_after_ms = 50};
    ck_assert_msg(sf_coordinator_open(&cfg, &o, &co, &e) == SF_OK, "%s", e.msg);
    client c, held;
    client_open(&held, co);
    hello(co, &held, "w2");
    client_open(&c, co);
    hello(co, &c, "w1");
    expect_job(co, &held, 1, 1, "rollout");
    sf_coord_status st;
    char path[512];
    for (uint64_t job = 2; job <= 4; job++) {
        expect_job(co, &c, job, 1, "rollout");
        sf_coordinator_status(co, &st);
        ck_assert_uint_eq(st.jobs_slow, 0); /* not before 3 peers are done */
        uint8_t dig[32];
        snprintf(path, sizeof path, "%s/s%llu.shard", tmpdir, (unsigned long long)job);
        make_shard(co, job, 100 + 4 * (job - 1), 10, path, dig);
        Spirefleet__Envelope *r = send_shard(co, &c, job, path, dig, -1);
        ck_assert_msg(r->shard_ack->ok, "%s", r->shard_ack->reason);
        sf_wire_free(r);
    }
    /* wait for the condition, however fast the machine */
    uint64_t t0 = sf_now_ns();
    do {
        sf_coordinator_status(co, &st);
        if (st.jobs_slow)
            break;
        usleep(5000);
    } while (sf_now_ns() - t0 < 120ull * 1000000000ull);
    ck_assert_uint_eq(st.jobs_done, 3);
    ck_assert(st.job_median_s > 0.0);
    ck_assert_uint_eq(st.jobs_slow, 1);
    ck_assert_int_eq(st.n_slow, 1);
    ck_assert_uint_eq(st.slow[0].job_id, 1);
    ck_assert_str_eq(st.slow[0].worker_id, "w2");
    ck_assert(st.slow[0].running_s >= 0.05);
    ck_assert(st.slow[0].running_s >= SF_COORD_SLOW_FACTOR * st.job_median_s);
    ck_assert(st.longest_running_s >= st.slow[0].running_s);
    char buf[16384];
    ck_assert_int_gt(metrics_render(&st, "ctest", buf, sizeof buf), 0);
    ck_assert_ptr_nonnull(strstr(buf, "spirefleet_jobs_slow{run=\"ctest\"} 1\n"));
    ck_assert_ptr_nonnull(
        strstr(buf, "spirefleet_job_slow_seconds{run=\"ctest\",job=\"1\",worker=\"w2\"} "));
    char shown[2048];
    Spirefleet__Envelope *sr_env = status_shown(co, &c, shown, sizeof shown);
    ck_assert_uint_eq(sr_env->status_reply->jobs_slow, 1);
    ck_assert_msg(strstr(shown, "SLOW: job 1 on worker w2 has run "), "%s", shown);
    sf_wire_free(sr_env);
    client_close(&c);
    client_close(&held);
    sf_coordinator_close(co);
}
END_TEST

typedef struct serve_arg {
    sf_coordinator *co;
    volatile sig_atomic_t stop;
} serve_arg;

static void *serve_thread(void *p) {
    serve_arg *a = p;
    sf_err e = {0};
    sf_coordinator_serve(a->co, &a->stop, &e);
    return NULL;
}

START_TEST(trainers_pull_shards_over_tcp) {
    sf_run_config cfg;
    client c;
    sf_coordinator *co = begin(&cfg, &c);
    uint8_t dig[2][32];
    for (int j = 1; j <= 2; j++) {
        sf_wire_free(request_job(co, &c));
        char path[512];
        snprintf(path, sizeof path, "%s/p%d.shard", tmpdir, j);
        make_shard(co, (uint64_t)j, (uint64_t)(100 + 4 * (j - 1)), 40, path, dig[j - 1]);
        Spirefleet__Envelope *r = send_shard(co, &c, (uint64_t)j, path, dig[j - 1], -1);
        ck_assert(r->shard_ack->ok);
        sf_wire_free(r);
    }
    client_close(&c);
    serve_arg arg = {co, 0};
    pthread_t th;
    pthread_create(&th, NULL, serve_thread, &arg);
    sf_shard_source *src;
    sf_err e = {0};
    const char *ep = sf_coordinator_endpoint(co);
    char keys[400];
    sf_config_keys_dir(&co->cfg, keys, sizeof keys);
    ck_assert_int_eq(sf_cli_open_source(ep, keys, &src, &e), SF_OK);
    char dst[512];
    snprintf(dst, sizeof dst, "%s/pulled", tmpdir);
    sf_shard_pull_report rep = {0};
    ck_assert_msg(sf_shard_pull(src, dst, &rep, &e) == SF_OK, "%s", e.msg);
    ck_assert_uint_eq(rep.copied, 2);
    /* a second pull finds both present with the same digest */
    memset(&rep, 0, sizeof rep);
    ck_assert_int_eq(sf_shard_pull(src, dst, &rep, &e), SF_OK);
    ck_assert_uint_eq(rep.copied, 0);
    ck_assert_uint_eq(rep.present, 2);
    src->ops->close(src);
    arg.stop = 1;
    pthread_join(th, NULL);
    char path[700];
    snprintf(path, sizeof path, "%s/ctest-job000002.shard", dst);
    sf_shard_verify_report vr;
    ck_assert_int_eq(sf_shard_verify(path, &vr, &e), SF_OK);
    ck_assert_mem_eq(vr.digest, dig[1], 32);
    sf_coordinator_close(co);
}
END_TEST

/* A run of 3 jobs with jobs 1 and 2 done (4 records each); the ledger's
 * bytes and the done jobs' content digests are kept for comparison. */
static void run_two_of_three(sf_run_config *cfg, const char *sub, char digests[3][65]) {
    client c;
    make_cfg(cfg, sub, 60, NULL);
    sf_coordinator *co = open_co(cfg);
    client_open(&c, co);
    hello(co, &c, "w1");
    for (uint64_t job = 1; job <= 2; job++) {
        sf_wire_free(request_job(co, &c));
        char path[512];
        uint8_t dig[32];
        snprintf(path, sizeof path, "%s/%s-j%llu.shard", tmpdir, sub, (unsigned long long)job);
        make_shard(co, job, 100 + 4 * (job - 1), 4, path, dig);
        Spirefleet__Envelope *r = send_shard(co, &c, job, path, dig, -1);
        ck_assert_msg(r->shard_ack->ok, "%s", r->shard_ack->reason);
        sf_wire_free(r);
    }
    for (int i = 0; i < 3; i++)
        snprintf(digests[i], 65, "%s", co->jobs[i].content_digest);
    client_close(&c);
    sf_coordinator_close(co);
}

static void put_bytes(const char *path, const uint8_t *b, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b, 1, n, f), n);
    fclose(f);
    char lock[600];
    snprintf(lock, sizeof lock, "%s-lock", path);
    unlink(lock);
}

/* Open the run on a damaged ledger: either a clear error naming the
 * ledger, or the very run that was stored (a flip in free space or in a
 * superseded page changes nothing; a shard the ledger lost is adopted).
 * Never a crash, never a done job with another digest. Returns 1 on error. */
static int open_damaged(const sf_run_config *cfg, char digests[3][65], const char *what, long at) {
    sf_coordinator *co = NULL;
    sf_err e = {0};
    sf_coord_opts o = {0};
    int rc = sf_coordinator_open(cfg, &o, &co, &e);
    if (rc < 0) {
        ck_assert_msg(strstr(e.msg, "ledger.lmdb"), "%s at %ld: %s", what, at, e.msg);
        ck_assert_ptr_null(co);
        return 1;
    }
    ck_assert_uint_eq(co->st.jobs_done, 2);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(!strcmp(co->jobs[i].content_digest, digests[i]),
                      "%s at %ld: job %d has digest '%s', stored '%s'", what, at, i + 1,
                      co->jobs[i].content_digest, digests[i]);
    sf_coordinator_close(co);
    return 0;
}

/* Flipped bytes across the ledger's used pages, and truncations, are each
 * an error naming the ledger or leave the run as stored; then a ledger
 * rebuilt from the shards completes the run with the same digests. */
/* A ledger from before record checksums (its run digest stored bare, no
 * format record) is refused with the way out, not called damaged, and
 * rebuild-ledger makes it usable again. */
START_TEST(a_ledger_from_before_checksums_says_rebuild_it) {
    sf_run_config cfg;
    char digests[3][65];
    run_two_of_three(&cfg, "old", digests);
    char ledger[512];
    snprintf(ledger, sizeof ledger, "%s/old/ledger.lmdb", tmpdir);
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi meta;
    ck_assert_int_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 4);
    ck_assert_int_eq(mdb_env_open(env, ledger, MDB_NOSUBDIR, 0644), 0);
    ck_assert_int_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    ck_assert_int_eq(mdb_dbi_open(txn, "meta", 0, &meta), 0);
    char digest[65];
    sf_config_digest(&cfg, digest);
    MDB_val fk = {6, "format"}, dk = {6, "digest"}, dv = {64, digest};
    ck_assert_int_eq(mdb_del(txn, meta, &fk, NULL), 0);
    ck_assert_int_eq(mdb_put(txn, meta, &dk, &dv, 0), 0);
    ck_assert_int_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
    sf_coordinator *co = NULL;
    sf_err e = {0};
    sf_coord_opts o = {0};
    ck_assert_int_eq(sf_coordinator_open(&cfg, &o, &co, &e), SF_EVERSION);
    ck_assert_msg(strstr(e.msg, "ledger.lmdb: the ledger has no format record (written before"),
                  "%s", e.msg);
    ck_assert_ptr_nonnull(strstr(e.msg, "sf-fleet rebuild-ledger CONFIG"));
    sf_ledger_rebuild rep;
    ck_assert_msg(sf_coordinator_rebuild_ledger(&cfg, &o, &rep, &e) == SF_OK, "%s", e.msg);
    ck_assert_uint_eq(rep.jobs_done, 2);
    co = open_co(&cfg);
    for (int i = 0; i < 2; i++)
        ck_assert_str_eq(co->jobs[i].content_digest, digests[i]);
    sf_coordinator_close(co);
}
END_TEST

START_TEST(a_damaged_ledger_is_an_error_not_a_crash) {
    sf_run_config cfg;
    char digests[3][65];
    run_two_of_three(&cfg, "dmg", digests);
    char ledger[512];
    snprintf(ledger, sizeof ledger, "%s/dmg/ledger.lmdb", tmpdir);
    uint8_t *orig;
    size_t n = slurp(ledger, &orig);
    /* the pages LMDB uses (the file is longer: space reserved up front) */
    size_t used = 0;
    for (size_t pg = 0; pg + 4096 <= n; pg += 4096) {
        int zero = 1;
        for (size_t i = 0; i < 4096 && zero; i++)
            zero = orig[pg + i] == 0;
        if (!zero)
            used = pg + 4096;
    }
    ck_assert_uint_ge(used, 3 * 4096);
    uint8_t *bad = malloc(n);
    int errors = 0, tries = 0;
    for (size_t at = 0; at < used; at += 53) {
        memcpy(bad, orig, n);
        bad[at] ^= (uint8_t)(1u << (at % 8));
        put_bytes(ledger, bad, n);
        errors += open_damaged(&cfg, digests, "flip", (long)at);
        tries++;
    }
    /* every byte of the last job page: the records themselves */
    for (size_t at = used - 4096; at < used; at += 7) {
        memcpy(bad, orig, n);
        bad[at] ^= 0x01;
        put_bytes(ledger, bad, n);
        errors += open_damaged(&cfg, digests, "flip", (long)at);
        tries++;
    }
    /* most flips land in free space and change nothing; these did not */
    ck_assert_int_ge(errors, 10);
    int cut = 0, cut_errors = 0;
    for (size_t len = 1; len < used; len += 1531, cut++) {
        put_bytes(ledger, orig, len);
        cut_errors += open_damaged(&cfg, digests, "truncation", (long)len);
    }
    /* a cut through pages the run still uses is an error (a cut that drops
     * only superseded pages loads the same run) */
    ck_assert_int_ge(cut_errors, cut / 2);
    ck_assert_int_gt(tries, 500);

    /* a record flipped: the ledger is refused; rebuild it from shards/ */
    memcpy(bad, orig, n);
    size_t rec = 0;
    for (size_t i = 0; i + 64 <= used && !rec; i++)
        if (!memcmp(orig + i, digests[1], 64))
            rec = i;
    ck_assert_uint_gt(rec, 0);
    bad[rec + 10] ^= 0x04; /* job 2's content digest */
    put_bytes(ledger, bad, n);
    sf_coordinator *co = NULL;
    sf_err e = {0};
    sf_coord_opts o = {0};
    ck_assert_int_eq(sf_coordinator_open(&cfg, &o, &co, &e), SF_ECORRUPT);
    ck_assert_msg(strstr(e.msg, "ledger.lmdb: the ledger is damaged: job 2's record is damaged"),
                  "%s", e.msg);
    sf_ledger_rebuild rep;
    ck_assert_msg(sf_coordinator_rebuild_ledger(&cfg, &o, &rep, &e) == SF_OK, "%s", e.msg);
    ck_assert_uint_eq(rep.jobs_total, 3);
    ck_assert_uint_eq(rep.jobs_done, 2);
    ck_assert_int_eq(access(rep.moved_to, F_OK), 0);
    co = open_co(&cfg);
    for (int i = 0; i < 2; i++)
        ck_assert_str_eq(co->jobs[i].content_digest, digests[i]);
    client c;
    client_open(&c, co);
    hello(co, &c, "w2");
    Spirefleet__Envelope *r = request_job(co, &c);
    ck_assert_uint_eq(r->job->job_id, 3);
    sf_wire_free(r);
    char path[512];
    uint8_t dig[32];
    snprintf(path, sizeof path, "%s/dmg-j3.shard", tmpdir);
    make_shard(co, 3, 108, 4, path, dig);
    r = send_shard(co, &c, 3, path, dig, -1);
    ck_assert_msg(r->shard_ack->ok, "%s", r->shard_ack->reason);
    sf_wire_free(r);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_int_eq(st.complete, 1);
    ck_assert_uint_eq(st.labels, 12);
    client_close(&c);
    sf_coordinator_close(co);
    free(bad);
    free(orig);
}
END_TEST

/* ------------------------------------------------------------------------
 * Security (common/zsec.h): CURVE with an allow-list, operator keys, the
 * identity of every message. Real keys, loopback tcp.
 * ---------------------------------------------------------------------- */

/* Step the coordinator 60 times; whether `c` got any message meanwhile.
 * Alone this proves nothing (a message may be on its way still): a test
 * that expects silence first waits for the handshakes it expects to fail
 * (handshakes_wait below), after which no message can come. */
static int heard_anything(sf_coordinator *co, client *c) {
    sf_err e = {0};
    for (int i = 0; i < 60; i++) {
        ck_assert_int_eq(sf_coordinator_step(co, 5, &e), SF_OK);
        zmq_msg_t m;
        zmq_msg_init(&m);
        int got = zmq_msg_recv(&m, c->sock, ZMQ_DONTWAIT) >= 0;
        zmq_msg_close(&m);
        if (got)
            return 1;
    }
    return 0;
}

/* A socket's handshakes from handshakes_watch() on, as its monitor reports
 * them: admitted, failed for the protocol (a plain ZeroMQ peer meets a
 * CURVE one: the mechanisms differ), refused by the ZAP handler (a key not
 * in the allow-list), and connections ended. On the coordinator's ROUTER,
 * a peer's message reaches the coordinator only through an admitted
 * handshake, and the ZAP handler's refusal is always reported there; a
 * mechanism mismatch is reported only by the side that sees it first (the
 * other one sees the connection end), so a test watches the plain peer's
 * own socket too. */
typedef struct handshakes {
    void *sock, *mon;
    unsigned ok, failed_protocol, failed_auth, failed_other, ended;
} handshakes;

static void handshakes_watch_socket(handshakes *h, void *zctx, void *sock) {
    memset(h, 0, sizeof *h);
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://ctest-handshakes-%p", (void *)h);
    ck_assert_int_eq(
        zmq_socket_monitor(sock, ep,
                           ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_DISCONNECTED),
        0);
    h->sock = sock;
    h->mon = zmq_socket(zctx, ZMQ_PAIR);
    int zero = 0;
    zmq_setsockopt(h->mon, ZMQ_LINGER, &zero, sizeof zero);
    ck_assert_int_eq(zmq_connect(h->mon, ep), 0);
}

static void handshakes_watch(handshakes *h, sf_coordinator *co) {
    handshakes_watch_socket(h, co->zctx, co->router);
}

/* Count the events the monitor has sent so far (frame 1: the event, 16
 * bits, and a 32-bit value; frame 2: the endpoint). */
static void handshakes_read(handshakes *h) {
    for (;;) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, h->mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            return;
        }
        uint16_t ev = 0;
        if (zmq_msg_size(&m) >= sizeof ev)
            memcpy(&ev, zmq_msg_data(&m), sizeof ev);
        int more = zmq_msg_more(&m);
        zmq_msg_close(&m);
        while (more) {
            zmq_msg_init(&m);
            more = zmq_msg_recv(&m, h->mon, 0) >= 0 && zmq_msg_more(&m);
            zmq_msg_close(&m);
        }
        if (ev == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
            h->ok++;
        else if (ev == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)
            h->failed_protocol++;
        else if (ev == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
            h->failed_auth++;
        else if (ev == ZMQ_EVENT_DISCONNECTED)
            h->ended++;
        else
            h->failed_other++;
    }
}

/* Step the coordinator until its ROUTER (h) has reported `auth` handshakes
 * refused by the ZAP handler and, when `plain` is given, the plain peer's
 * connection has failed or ended without a handshake: the conditions
 * themselves, however long the machine takes to get there. */
static void handshakes_wait(handshakes *h, handshakes *plain, sf_coordinator *co, unsigned auth) {
    sf_err e = {0};
    uint64_t t0 = sf_now_ns();
    for (;;) {
        handshakes_read(h);
        int plain_done = 1;
        if (plain) {
            handshakes_read(plain);
            plain_done =
                h->failed_protocol + plain->failed_protocol + plain->failed_other + plain->ended >
                0;
        }
        if (h->failed_auth >= auth && plain_done)
            return;
        ck_assert_msg(sf_now_ns() - t0 < WAIT_NS,
                      "refused by the ZAP handler: %u of %u; the plain peer's connection %s",
                      h->failed_auth, auth, plain_done ? "ended" : "still open");
        ck_assert_int_eq(sf_coordinator_step(co, 10, &e), SF_OK);
    }
}

static void handshakes_unwatch(handshakes *h) {
    zmq_socket_monitor(h->sock, NULL, 0);
    zmq_close(h->mon);
    h->mon = NULL;
}

/* A client that is not in the allow-list: plain ZeroMQ, or CURVE with a
 * key of its own (and the right server key). Neither hears anything, and
 * nothing either sends reaches the decoder or the worker table: the
 * handshake fails first. (Before CURVE, a plain Hello was welcomed.) */
START_TEST(unauthenticated_and_unknown_keys_are_refused_before_the_decoder) {
    sf_run_config cfg;
    make_cfg(&cfg, "run", 60, NULL);
    sf_coordinator *co = open_co(&cfg);
    handshakes hs, plain_hs;
    handshakes_watch(&hs, co);
    char dir[400];
    sf_config_keys_dir(&cfg, dir, sizeof dir);
    client plain, stranger, good;
    plain.ctx = zmq_ctx_new();
    sf_err e = {0};
    void *psock = zmq_socket(plain.ctx, ZMQ_DEALER); /* sf_wire_dealer's, watched */
    int zero = 0;
    zmq_setsockopt(psock, ZMQ_LINGER, &zero, sizeof zero);
    handshakes_watch_socket(&plain_hs, plain.ctx, psock);
    ck_assert_int_eq(zmq_connect(psock, sf_coordinator_endpoint(co)), 0);
    plain.sock = psock;
    stranger.ctx = zmq_ctx_new();
    sf_zsec_client sec;
    ck_assert_int_eq(sf_zsec_client_load(dir, SF_ZSEC_WORKER_NAME, &sec, &e), SF_OK);
    ck_assert_int_eq(zmq_curve_keypair(sec.me.pub, sec.me.sec), 0); /* not listed */
    ck_assert_int_eq(
        sf_wire_dealer_secure(stranger.ctx, sf_coordinator_endpoint(co), &sec, &stranger.sock, &e),
        SF_OK);
    for (int k = 0; k < 3; k++) {
        offer_hello_and_garbage(&plain, "intruder");
        offer_hello_and_garbage(&stranger, "intruder");
    }
    /* the stranger's key refused, the plain peer's connection failed:
     * nothing either sent can reach the coordinator without a handshake
     * it admits, and it admits none (checked after the steps) */
    handshakes_wait(&hs, &plain_hs, co, 1);
    ck_assert_int_eq(heard_anything(co, &plain), 0);
    ck_assert_int_eq(heard_anything(co, &stranger), 0);
    handshakes_read(&hs);
    ck_assert_uint_eq(hs.ok, 0);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.decode_errors, 0);
    ck_assert_uint_eq(st.protocol_errors, 0);
    ck_assert_int_eq(co->nworkers, 0);
    ck_assert_uint_ge(st.auth_denied, 1); /* the stranger's key, by the ZAP handler */
    /* the listed key is served */
    client_open(&good, co);
    hello(co, &good, "w1");
    ck_assert_int_eq(co->nworkers, 1);
    handshakes_read(&hs);
    ck_assert_uint_eq(hs.ok, 1);
    handshakes_unwatch(&hs);
    handshakes_unwatch(&plain_hs);
    client_close(&plain);
    client_close(&stranger);
    client_close(&good);
    sf_coordinator_close(co);
}
END_TEST

/* The ZAP handler's death is fatal: libzmq 4.3 lets any CURVE key finish
 * its handshake when no handler answers, so once the handler thread stops
 * the next step fails with SF_ESTATE naming it — with no message waiting —
 * and a stranger's key then gets nothing. (Before, the coordinator went on
 * serving until some message arrived.) */
START_TEST(a_dead_zap_handler_stops_the_coordinator) {
    sf_run_config cfg;
    client good;
    sf_coordinator *co = begin(&cfg, &good);
    ck_assert_int_eq(co->nworkers, 1);
    sf_err e = {0};
    ck_assert_int_eq(sf_coordinator_step(co, 0, &e), SF_OK);
    sf_zsec_server_fail_for_test(co->zsec);
    ck_assert_int_eq(sf_coordinator_step(co, 0, &e), SF_ESTATE);
    ck_assert_msg(strstr(e.msg, "ZAP handler has stopped") != NULL, "%s", e.msg);
    ck_assert_int_eq(sf_zsec_server_check(co->zsec, &e), SF_ESTATE);
    /* a stranger's Hello reaches no decoder: every step refuses */
    client stranger;
    stranger.ctx = zmq_ctx_new();
    char dir[400];
    sf_config_keys_dir(&cfg, dir, sizeof dir);
    sf_zsec_client sec;
    ck_assert_int_eq(sf_zsec_client_load(dir, SF_ZSEC_WORKER_NAME, &sec, &e), SF_OK);
    ck_assert_int_eq(zmq_curve_keypair(sec.me.pub, sec.me.sec), 0); /* not listed */
    ck_assert_int_eq(
        sf_wire_dealer_secure(stranger.ctx, sf_coordinator_endpoint(co), &sec, &stranger.sock, &e),
        SF_OK);
    send_hello(&stranger, "intruder");
    for (int k = 0; k < 20; k++)
        ck_assert_int_eq(sf_coordinator_step(co, 10, &e), SF_ESTATE);
    ck_assert_int_eq(co->nworkers, 1);
    client_close(&stranger);
    client_close(&good);
    sf_coordinator_close(co);
}
END_TEST

/* A second listed key: "intruder" in clients/ (sf-fleet keygen --add). */
static void open_intruder(client *c, sf_coordinator *co, const char *routing_id) {
    char dir[400];
    sf_config_keys_dir(&co->cfg, dir, sizeof dir);
    sf_err e = {0};
    ck_assert_msg(sf_zsec_add_key(dir, "intruder", SF_ZSEC_CLIENTS_DIR, &e) == SF_OK, "%s", e.msg);
    ck_assert_int_eq(sf_zsec_server_reload(co->zsec, &e), SF_OK);
    sf_zsec_client sec;
    ck_assert_int_eq(sf_zsec_client_load(dir, "intruder", &sec, &e), SF_OK);
    c->ctx = zmq_ctx_new();
    c->sock = zmq_socket(c->ctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(c->sock, ZMQ_LINGER, &zero, sizeof zero);
    if (routing_id)
        zmq_setsockopt(c->sock, ZMQ_ROUTING_ID, routing_id, strlen(routing_id));
    ck_assert_int_eq(sf_zsec_client_apply(&sec, c->sock, &e), SF_OK);
    ck_assert_int_eq(zmq_connect(c->sock, sf_coordinator_endpoint(co)), 0);
}

/* A worker with a valid key cannot act for another: it cannot say Hello
 * under the worker id another key holds, cannot upload for a job it does
 * not lease, and cannot take over the other worker's connection by
 * choosing its routing id (ZMQ_ROUTING_ID with ROUTER_HANDOVER): every
 * message is checked against the key of its connection. Before, the
 * handed-over connection's offer was accepted as the lease holder's. */
START_TEST(a_valid_key_cannot_upload_for_a_job_it_does_not_lease_or_pose_as_another_worker) {
    sf_run_config cfg;
    make_cfg(&cfg, "run", 60, NULL);
    sf_coordinator *co = open_co(&cfg);
    client w1;
    w1.ctx = zmq_ctx_new();
    char dir[400];
    sf_config_keys_dir(&cfg, dir, sizeof dir);
    sf_zsec_client sec;
    sf_err e = {0};
    ck_assert_int_eq(sf_zsec_client_load(dir, SF_ZSEC_WORKER_NAME, &sec, &e), SF_OK);
    w1.sock = zmq_socket(w1.ctx, ZMQ_DEALER);
    zmq_setsockopt(w1.sock, ZMQ_ROUTING_ID, "rid-w1", 6);
    ck_assert_int_eq(sf_zsec_client_apply(&sec, w1.sock, &e), SF_OK);
    ck_assert_int_eq(zmq_connect(w1.sock, sf_coordinator_endpoint(co)), 0);
    hello(co, &w1, "w1");
    Spirefleet__Envelope *r = request_job(co, &w1);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    uint64_t job = r->job->job_id;
    sf_wire_free(r);
    char path[512];
    uint8_t dig[32];
    snprintf(path, sizeof path, "%s/forged.shard", tmpdir);
    make_shard(co, job, 100, 20, path, dig);
    /* 1: another key says Hello as w1 */
    client in;
    open_intruder(&in, co, NULL);
    send_hello(&in, "w1");
    r = pump(co, &in);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_REFUSAL);
    ck_assert_ptr_nonnull(strstr(r->refusal->reason, "worker id w1 belongs to another key"));
    sf_wire_free(r);
    /* 2: under its own id, it offers a shard for w1's job */
    hello(co, &in, "w2");
    r = send_shard(co, &in, job, path, dig, -1);
    ck_assert(!r->shard_ack->ok && !r->shard_ack->send);
    ck_assert_ptr_nonnull(strstr(r->shard_ack->reason, "not leased to w2"));
    sf_wire_free(r);
    client_close(&in);
    /* 3: it takes over w1's routing id and offers the shard as w1 */
    client spoof;
    open_intruder(&spoof, co, "rid-w1");
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ShardOffer of = SPIREFLEET__SHARD_OFFER__INIT;
    char hex[65], sha[65];
    sf_hex(dig, 32, hex);
    uint64_t size;
    ck_assert_int_eq(sf_shard_file_sha256(path, sha, &size, &e), SF_OK);
    of.job_id = job;
    of.size = size;
    of.file_sha256 = sha;
    of.content_digest = hex;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_OFFER;
    req.shard_offer = &of;
    r = rpc(co, &spoof, &req);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_ERROR);
    ck_assert_ptr_nonnull(strstr(r->error->message, "key is not the worker's"));
    sf_wire_free(r);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.shards_stored, 0);
    ck_assert_uint_eq(st.jobs_leased, 1);
    ck_assert_uint_ge(st.auth_refused, 2);
    ck_assert_int_eq(co->jobs[job - 1].worker, 0); /* still w1's */
    client_close(&spoof);
    client_close(&w1);
    sf_coordinator_close(co);
}
END_TEST

/* Stop is an operator's: a worker key's Stop is refused and the run goes
 * on; the operator key's stops it. (Before, anyone's Stop ended the run.) */
START_TEST(stop_without_an_operator_key_is_refused) {
    sf_run_config cfg;
    make_cfg(&cfg, "run", 60, NULL);
    log_lines log = {0};
    sf_coordinator *co = open_co_logged(&cfg, &log);
    client w, op;
    client_open(&w, co);
    client_open_as(&op, co, SF_ZSEC_OPERATOR_NAME);
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Stop stop = SPIREFLEET__STOP__INIT;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_STOP;
    req.stop = &stop;
    Spirefleet__Envelope *r = rpc(co, &w, &req);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_ERROR);
    ck_assert_ptr_nonnull(strstr(r->error->message, "Stop needs an operator key"));
    sf_wire_free(r);
    ck_assert_int_eq(co->stopping, 0);
    r = rpc(co, &op, &req);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_STOP);
    sf_wire_free(r);
    ck_assert_int_eq(co->stopping, 1);
    client_close(&w);
    client_close(&op);
    sf_coordinator_close(co);
}
END_TEST

/* A key removed from clients/ is refused on the connection it already has
 * (its next message), once the lists are read again, and a new
 * connection with it hears nothing. */
START_TEST(a_revoked_key_is_refused_on_its_live_connection) {
    sf_run_config cfg;
    make_cfg(&cfg, "run", 60, NULL);
    sf_coordinator *co = open_co(&cfg);
    client in;
    open_intruder(&in, co, NULL);
    hello(co, &in, "w9");
    Spirefleet__Envelope *r = request_job(co, &in);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    sf_wire_free(r);
    char dir[400], pub[460];
    sf_config_keys_dir(&cfg, dir, sizeof dir);
    snprintf(pub, sizeof pub, "%s/clients/intruder.pub", dir);
    ck_assert_int_eq(unlink(pub), 0);
    sf_err e = {0};
    ck_assert_int_eq(sf_zsec_server_reload(co->zsec, &e), SF_OK);
    r = request_job(co, &in);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_ERROR);
    ck_assert_ptr_nonnull(strstr(r->error->message, "no longer allowed"));
    sf_wire_free(r);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.leases_granted, 1);
    ck_assert_uint_eq(st.auth_refused, 1);
    client_close(&in);
    /* reconnecting with the revoked key: the handshake fails */
    handshakes hs;
    handshakes_watch(&hs, co);
    client again;
    sf_zsec_client sec;
    ck_assert_int_eq(sf_zsec_client_load(dir, "intruder", &sec, &e), SF_OK);
    again.ctx = zmq_ctx_new();
    ck_assert_int_eq(
        sf_wire_dealer_secure(again.ctx, sf_coordinator_endpoint(co), &sec, &again.sock, &e),
        SF_OK);
    offer_hello_and_garbage(&again, "w9");
    handshakes_wait(&hs, NULL, co, 1);
    ck_assert_int_eq(heard_anything(co, &again), 0);
    handshakes_read(&hs);
    ck_assert_uint_eq(hs.ok, 0);
    handshakes_unwatch(&hs);
    client_close(&again);
    sf_coordinator_close(co);
}
END_TEST

/* Key files: a secret key group or others may read is refused, naming the
 * file (the coordinator does not start with it); a key id is the first 16
 * hex digits of SHA-256 over the 32 raw key bytes; a malformed public key
 * names its file and line. */
START_TEST(key_files_are_checked_and_named) {
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/keys-check", tmpdir);
    sf_err e = {0};
    sf_zsec_keypair kp;
    ck_assert_int_eq(sf_zsec_keygen(dir, "k", &kp, &e), SF_OK);
    ck_assert_int_eq(sf_zsec_keygen(dir, "k", NULL, &e), SF_ESTATE); /* never replaced */
    snprintf(path, sizeof path, "%s/k.key", dir);
    sf_zsec_keypair back;
    ck_assert_int_eq(sf_zsec_read_secret(path, &back, &e), SF_OK);
    ck_assert_str_eq(back.pub, kp.pub);
    /* as root (CI), the file is root's: give it to another user first, so
     * the rule for files of ordinary owners is the one checked */
    if (geteuid() == 0)
        ck_assert_int_eq(chown(path, 65534, (gid_t)-1), 0);
    ck_assert_int_eq(chmod(path, 0640), 0);
    ck_assert_int_eq(sf_zsec_read_secret(path, &back, &e), SF_ESTATE);
    char want[700];
    snprintf(want, sizeof want, "%s: mode 0640: a secret key must be readable by its owner only",
             path);
    ck_assert_msg(strstr(e.msg, want) != NULL, "%s", e.msg);
    /* a listed key keeps its list: the worker key cannot be added as an
     * operator, nor the server's key as a client */
    char kd[560];
    snprintf(kd, sizeof kd, "%s/keys-lists", tmpdir);
    ck_assert_int_eq(sf_zsec_ensure_dir(kd, &e), SF_OK);
    ck_assert_int_eq(sf_zsec_add_key(kd, SF_ZSEC_WORKER_NAME, SF_ZSEC_OPERATORS_DIR, &e),
                     SF_ESTATE);
    ck_assert_msg(strstr(e.msg, "is already listed in clients/") != NULL, "%s", e.msg);
    ck_assert_int_eq(sf_zsec_add_key(kd, SF_ZSEC_OPERATOR_NAME, SF_ZSEC_CLIENTS_DIR, &e),
                     SF_ESTATE);
    ck_assert_int_eq(sf_zsec_add_key(kd, SF_ZSEC_SERVER_NAME, SF_ZSEC_CLIENTS_DIR, &e), SF_EINVAL);
    ck_assert_int_eq(sf_zsec_add_key(kd, SF_ZSEC_WORKER_NAME, SF_ZSEC_CLIENTS_DIR, &e), SF_OK);
    /* a Kubernetes Secret with a pod fsGroup: root's, 0440, group-readable
     * (PostgreSQL's rule); group write or any access for others is not */
    ck_assert_int_eq(sf_zsec_secret_mode_ok(0100600, 1000), 1);
    ck_assert_int_eq(sf_zsec_secret_mode_ok(0100400, 1000), 1);
    ck_assert_int_eq(sf_zsec_secret_mode_ok(0100440, 1000), 0);
    ck_assert_int_eq(sf_zsec_secret_mode_ok(0100440, 0), 1);
    ck_assert_int_eq(sf_zsec_secret_mode_ok(0100640, 0), 1);
    ck_assert_int_eq(sf_zsec_secret_mode_ok(0100460, 0), 0);
    ck_assert_int_eq(sf_zsec_secret_mode_ok(0100444, 0), 0);
    ck_assert_int_eq(sf_zsec_secret_mode_ok(0100404, 0), 0);
    if (geteuid() == 0) { /* the same on a real file */
        ck_assert_int_eq(chown(path, 0, (gid_t)-1), 0);
        ck_assert_int_eq(chmod(path, 0440), 0);
        ck_assert_msg(sf_zsec_read_secret(path, &back, &e) == SF_OK, "%s", e.msg);
        ck_assert_int_eq(chmod(path, 0444), 0);
        ck_assert_int_eq(sf_zsec_read_secret(path, &back, &e), SF_ESTATE);
        ck_assert_int_eq(chmod(path, 0600), 0);
    }
    /* the id, computed independently */
    uint8_t raw[32], h[32];
    ck_assert_ptr_nonnull(zmq_z85_decode(raw, kp.pub));
    crypto_hash_sha256(h, raw, 32);
    char hex[65], id[SF_ZSEC_ID_LEN + 1];
    sf_hex(h, 32, hex);
    hex[16] = 0;
    sf_zsec_key_id(kp.pub, id);
    ck_assert_str_eq(id, hex);
    /* a public key file with a bad line */
    snprintf(path, sizeof path, "%s/bad.pub", dir);
    FILE *f = fopen(path, "w");
    fputs("# comment\n\nnot-a-key\n", f);
    fclose(f);
    char pub[SF_ZSEC_KEY_LEN + 1];
    ck_assert_int_eq(sf_zsec_read_public(path, pub, &e), SF_EFORMAT);
    snprintf(want, sizeof want, "%s:3: not a CURVE key", path);
    ck_assert_msg(strstr(e.msg, want) != NULL, "%s", e.msg);
    /* a coordinator whose server key others may read does not start */
    sf_run_config cfg;
    make_cfg(&cfg, "open-key", 60, NULL);
    char keys[400];
    sf_config_keys_dir(&cfg, keys, sizeof keys);
    ck_assert_int_eq(sf_zsec_ensure_dir(keys, &e), SF_OK);
    snprintf(path, sizeof path, "%s/server.key", keys);
    ck_assert_int_eq(chmod(path, 0644), 0);
    sf_coordinator *co;
    sf_coord_opts o = {0};
    ck_assert_int_eq(sf_coordinator_open(&cfg, &o, &co, &e), SF_ESTATE);
    ck_assert_msg(strstr(e.msg, "server.key: mode 0644") != NULL, "%s", e.msg);
}
END_TEST

/* Quarantine removes exactly one key's shards: two workers with their own
 * keys store shards; the operator quarantines one key; its shards (and
 * only those) leave shards/, join shards/QUARANTINE, and their jobs are
 * pending again; a trainer's pull skips them and lists them in its own
 * QUARANTINE, so its earlier copy is skipped by its readers too; the key
 * is refused from then on. (Before, a worker's data could only be removed
 * by hand.) */
START_TEST(quarantine_removes_exactly_that_workers_shards) {
    sf_run_config cfg;
    make_cfg_live(&cfg, "run", 12, NULL); /* jobs 1..3 */
    sf_coordinator *co = open_co(&cfg);
    client good, bad, op;
    client_open(&good, co);
    open_intruder(&bad, co, NULL);
    client_open_as(&op, co, SF_ZSEC_OPERATOR_NAME);
    hello(co, &good, "w-good");
    hello(co, &bad, "w-bad");
    uint8_t dig[4][32];
    client *by[4] = {NULL, &good, &bad, &good};
    for (uint64_t job = 1; job <= 3; job++) {
        Spirefleet__Envelope *r = request_job(co, by[job]);
        ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
        ck_assert_uint_eq(r->job->job_id, job);
        sf_wire_free(r);
        char path[512];
        snprintf(path, sizeof path, "%s/q%llu.shard", tmpdir, (unsigned long long)job);
        make_shard_as(co, job, 100 + 4 * (job - 1), 10 + (int)job, path, dig[job],
                      job == 2 ? "intruder" : SF_ZSEC_WORKER_NAME, 0, NULL);
        r = send_shard(co, by[job], job, path, dig[job], -1);
        ck_assert_msg(r->shard_ack->ok, "%s", r->shard_ack->reason);
        sf_wire_free(r);
    }
    /* a trainer's copy of all three, before */
    serve_arg arg = {co, 0};
    pthread_t th;
    pthread_create(&th, NULL, serve_thread, &arg);
    char keys[400], dst[512];
    sf_config_keys_dir(&cfg, keys, sizeof keys);
    snprintf(dst, sizeof dst, "%s/trainer", tmpdir);
    sf_shard_source *src;
    sf_err e = {0};
    ck_assert_int_eq(sf_cli_open_source(sf_coordinator_endpoint(co), keys, &src, &e), SF_OK);
    sf_shard_pull_report rep = {0};
    ck_assert_msg(sf_shard_pull(src, dst, &rep, &e) == SF_OK, "%s", e.msg);
    ck_assert_uint_eq(rep.copied, 3);
    src->ops->close(src);
    arg.stop = 1;
    pthread_join(th, NULL);
    /* the run completed meanwhile: both workers (alive: make_cfg_live) are
     * told RunComplete */
    expect_run_complete(co, &good);
    expect_run_complete(co, &bad);
    /* the operator quarantines the intruder's key */
    char kp[460], pub[SF_ZSEC_KEY_LEN + 1], id[SF_ZSEC_ID_LEN + 1];
    snprintf(kp, sizeof kp, "%s/intruder.pub", keys);
    ck_assert_int_eq(sf_zsec_read_public(kp, pub, &e), SF_OK);
    sf_zsec_key_id(pub, id);
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Quarantine q = SPIREFLEET__QUARANTINE__INIT;
    q.key_id = id;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_QUARANTINE;
    req.quarantine = &q;
    Spirefleet__Envelope *r = rpc(co, &good, &req); /* a worker key may not */
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_ERROR);
    sf_wire_free(r);
    r = rpc(co, &op, &req);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_QUARANTINE_REPLY);
    ck_assert_uint_eq(r->quarantine_reply->shards, 1);
    ck_assert_uint_eq(r->quarantine_reply->jobs_reissued, 1);
    sf_wire_free(r);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.jobs_done, 2);
    ck_assert_uint_eq(st.jobs_pending, 1);
    ck_assert_uint_eq(st.labels, 11 + 13);
    ck_assert_int_eq(co->jobs[1].state, JS_PENDING);
    /* shards/: jobs 1 and 3 stay; the list holds exactly job 2's digest */
    char path[700];
    snprintf(path, sizeof path, "%s/ctest-job000002.shard", co->shards_dir);
    ck_assert_int_ne(access(path, F_OK), 0);
    for (int j = 1; j <= 3; j += 2) {
        snprintf(path, sizeof path, "%s/ctest-job%06d.shard", co->shards_dir, j);
        ck_assert_int_eq(access(path, F_OK), 0);
    }
    sf_shard_quarantine *ql;
    ck_assert_int_eq(sf_shard_quarantine_load(co->shards_dir, &ql, &e), SF_OK);
    ck_assert_uint_eq(sf_shard_quarantine_count(ql), 1);
    ck_assert_mem_eq(sf_shard_quarantine_at(ql, 0)->digest, dig[2], 32);
    ck_assert_str_eq(sf_shard_quarantine_at(ql, 0)->key_id, id);
    ck_assert_ptr_null(sf_shard_quarantine_find(ql, dig[1], NULL));
    ck_assert_ptr_null(sf_shard_quarantine_find(ql, dig[3], NULL));
    sf_shard_quarantine_free(ql);
    /* the key is refused on its live connection */
    r = request_job(co, &bad);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_ERROR);
    sf_wire_free(r);
    /* the job goes to the good worker, which plays it to the same records
     * (the intruder's copy was honest after all): the same content digest */
    r = request_job(co, &good);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    ck_assert_uint_eq(r->job->job_id, 2);
    sf_wire_free(r);
    uint8_t again_dig[32];
    snprintf(path, sizeof path, "%s/q2-again.shard", tmpdir);
    unlink(path);
    make_shard_as(co, 2, 104, 12, path, again_dig, SF_ZSEC_WORKER_NAME, 0, NULL);
    ck_assert_mem_eq(again_dig, dig[2], 32);
    r = send_shard(co, &good, 2, path, again_dig, -1);
    ck_assert_msg(r->shard_ack->ok, "%s", r->shard_ack->reason);
    sf_wire_free(r);
    /* ... and it is not hidden by the intruder's entry: the list names a
     * digest with its key (before, by digest alone, every reader skipped
     * the good copy too) */
    snprintf(path, sizeof path, "%s/ctest-job000002.shard", co->shards_dir);
    ck_assert_int_eq(sf_shard_quarantine_load(co->shards_dir, &ql, &e), SF_OK);
    ck_assert_int_eq(sf_cli_quarantined(ql, path), 0);
    ck_assert_ptr_nonnull(sf_shard_quarantine_find(ql, dig[2], id));
    ck_assert_ptr_null(sf_shard_quarantine_find(ql, dig[2], "0123456789abcdef"));
    sf_shard_quarantine_free(ql);
    /* the trainer pulls again: the good copy replaces the intruder's (same
     * records), the quarantined entry listed */
    arg.stop = 0;
    pthread_create(&th, NULL, serve_thread, &arg);
    ck_assert_int_eq(sf_cli_open_source(sf_coordinator_endpoint(co), keys, &src, &e), SF_OK);
    memset(&rep, 0, sizeof rep);
    ck_assert_msg(sf_shard_pull(src, dst, &rep, &e) == SF_OK, "%s", e.msg);
    ck_assert_uint_eq(rep.present, 2);
    ck_assert_uint_eq(rep.copied, 1);
    ck_assert_uint_eq(rep.quarantined, 1);
    src->ops->close(src);
    arg.stop = 1;
    pthread_join(th, NULL);
    ck_assert_int_eq(sf_shard_quarantine_load(dst, &ql, &e), SF_OK);
    ck_assert_uint_eq(sf_shard_quarantine_count(ql), 1);
    ck_assert_mem_eq(sf_shard_quarantine_at(ql, 0)->digest, dig[2], 32);
    snprintf(path, sizeof path, "%s/ctest-job000002.shard", dst);
    ck_assert_int_eq(sf_cli_quarantined(ql, path), 0);
    sf_shard_quarantine_free(ql);
    /* the trainer's directory as a source: all three good copies offered */
    sf_shard_source *dsrc;
    ck_assert_int_eq(sf_shard_source_open_dir(dst, &dsrc, &e), SF_OK);
    char again[600];
    snprintf(again, sizeof again, "%s/again", tmpdir);
    memset(&rep, 0, sizeof rep);
    ck_assert_int_eq(sf_shard_pull(dsrc, again, &rep, &e), SF_OK);
    ck_assert_uint_eq(rep.copied, 3);
    ck_assert_uint_eq(rep.quarantined, 0);
    dsrc->ops->close(dsrc);
    client_close(&good);
    client_close(&bad);
    client_close(&op);
    sf_coordinator_close(co);
}
END_TEST

/* Reopen co's run (same config, same log) with fresh connections for the
 * clients cs[0..n-1], named names[k] (keys) and worker ids ids[k]. */
static sf_coordinator *restart_keyed(sf_coordinator *co, const sf_run_config *cfg, log_lines *log,
                                     client *cs, const char *const *names, const char *const *ids,
                                     int n) {
    for (int k = 0; k < n; k++)
        client_close(&cs[k]);
    sf_coordinator_close(co);
    co = open_co_logged(cfg, log);
    for (int k = 0; k < n; k++) {
        client_open_as(&cs[k], co, names[k]);
        hello(co, &cs[k], ids[k]);
    }
    return co;
}

/* An audit in progress is in the ledger: job 1's stored copy is A's; B is
 * asked for the second copy and the coordinator restarts before B
 * answers; after the restart the audit is still open (A is not asked, B
 * is), B's changed copy sends it to stage 2, a second restart keeps that
 * stage and both copies, and C's copy (agreeing with A) quarantines B.
 * (Before, a restart forgot every open audit: after it no job was audited
 * and B's copy was taken for a plain duplicate.) */
START_TEST(an_open_audit_survives_coordinator_restarts) {
    sf_run_config cfg;
    make_cfg_live(&cfg, "run", 8, "security: {audit_fraction: 1}\n"); /* jobs 1, 2 */
    log_lines log = {0};
    sf_coordinator *co = open_co_logged(&cfg, &log);
    client cs[3];
    const char *names[3] = {"wa", "wb", "wc"}, *ids[3] = {"a", "b", "c"};
    for (int k = 0; k < 3; k++) {
        open_keyed(&cs[k], co, names[k]);
        hello(co, &cs[k], ids[k]);
    }
    char honest[512], changed[512];
    uint8_t dh[32], dc[32];
    snprintf(honest, sizeof honest, "%s/restart-audit-honest.shard", tmpdir);
    snprintf(changed, sizeof changed, "%s/restart-audit-changed.shard", tmpdir);
    Spirefleet__Envelope *r = request_job(co, &cs[0]);
    ck_assert_uint_eq(r->job->job_id, 1);
    sf_wire_free(r);
    make_shard_as(co, 1, 100, 20, honest, dh, "wa", 0, NULL);
    r = send_shard(co, &cs[0], 1, honest, dh, -1);
    ck_assert(r->shard_ack->ok && !r->shard_ack->duplicate);
    sf_wire_free(r);
    r = request_job(co, &cs[1]); /* B: the audit of job 1 */
    ck_assert_uint_eq(r->job->job_id, 1);
    sf_wire_free(r);
    co = restart_keyed(co, &cfg, &log, cs, names, ids, 3);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.jobs_done, 1);
    r = request_job(co, &cs[0]); /* A made the stored copy: job 2, not the audit */
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    ck_assert_uint_eq(r->job->job_id, 2);
    sf_wire_free(r);
    r = request_job(co, &cs[1]); /* B is asked again: the audit outlived the restart */
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    ck_assert_uint_eq(r->job->job_id, 1);
    sf_wire_free(r);
    make_shard_as(co, 1, 100, 20, changed, dc, "wb", 1, NULL);
    ck_assert_int_ne(memcmp(dh, dc, 32), 0);
    r = send_shard(co, &cs[1], 1, changed, dc, -1);
    ck_assert_msg(r->shard_ack->ok && r->shard_ack->duplicate, "%s", r->shard_ack->reason);
    sf_wire_free(r);
    ck_assert_uint_eq(co->st.audits_mismatched, 1);
    co = restart_keyed(co, &cfg, &log, cs, names, ids, 3);
    r = request_job(co, &cs[1]); /* B made a copy: not asked for the third */
    ck_assert_int_ne(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    sf_wire_free(r);
    r = request_job(co, &cs[2]); /* C: the third copy, after the second restart */
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    ck_assert_uint_eq(r->job->job_id, 1);
    sf_wire_free(r);
    unlink(honest);
    make_shard_as(co, 1, 100, 20, honest, dh, "wc", 0, NULL);
    r = send_shard(co, &cs[2], 1, honest, dh, -1);
    ck_assert(r->shard_ack->ok);
    sf_wire_free(r);
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.audits_caught, 1);
    ck_assert_uint_eq(st.jobs_done, 1); /* A's shard of job 1 stays */
    ck_assert_msg(strstr(log.text, "copy disagrees with two others") != NULL, "%s", log.text);
    r = request_job(co, &cs[1]); /* B's key is refused now */
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_ERROR);
    sf_wire_free(r);
    /* and the closed audit stays closed across a restart */
    for (int k = 0; k < 3; k++)
        client_close(&cs[k]);
    sf_coordinator_close(co);
    co = open_co_logged(&cfg, &log);
    ck_assert_uint_eq(co->n_audits, 0);
    sf_coordinator_close(co);
}
END_TEST

/* Audit by re-execution (security.audit_fraction 1: every job): job 1's
 * stored shard (honest worker A) is played again by B, whose copy has one
 * label changed; the mismatch goes to C, whose copy agrees with A: B is
 * quarantined (its key refused) and A's shard stays. Then the other way
 * round: A's stored shard of job 2 is the changed one, B and C agree, and
 * A is quarantined: its shards leave shards/ and its jobs are pending
 * again. (Before, a changed label went unnoticed.) */
START_TEST(an_audit_catches_a_shard_with_one_label_changed) {
    sf_run_config cfg;
    make_cfg_live(&cfg, "run", 8, "security: {audit_fraction: 1}\n"); /* jobs 1, 2 */
    log_lines log = {0};
    sf_coordinator *co = open_co_logged(&cfg, &log);
    client a, b, c;
    open_keyed(&a, co, "wa");
    open_keyed(&b, co, "wb");
    open_keyed(&c, co, "wc");
    hello(co, &a, "a");
    hello(co, &b, "b");
    hello(co, &c, "c");
    char honest[512], changed[512];
    uint8_t dh[32], dc[32];
    snprintf(honest, sizeof honest, "%s/audit-honest.shard", tmpdir);
    snprintf(changed, sizeof changed, "%s/audit-changed.shard", tmpdir);
    /* round 1: A honest; B changed; C honest */
    Spirefleet__Envelope *r = request_job(co, &a);
    ck_assert_uint_eq(r->job->job_id, 1);
    sf_wire_free(r);
    make_shard_as(co, 1, 100, 20, honest, dh, "wa", 0, NULL);
    r = send_shard(co, &a, 1, honest, dh, -1);
    ck_assert(r->shard_ack->ok && !r->shard_ack->duplicate);
    sf_wire_free(r);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.audits_opened, 1);
    r = request_job(co, &a); /* A made the stored copy: not its audit */
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    ck_assert_uint_eq(r->job->job_id, 2);
    sf_wire_free(r);
    r = request_job(co, &b); /* B: the audit of job 1 */
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    ck_assert_uint_eq(r->job->job_id, 1);
    sf_wire_free(r);
    make_shard_as(co, 1, 100, 20, changed, dc, "wb", 1, NULL);
    ck_assert_int_ne(memcmp(dh, dc, 32), 0);
    r = send_shard(co, &b, 1, changed, dc, -1);
    ck_assert_msg(r->shard_ack->ok && r->shard_ack->duplicate, "%s", r->shard_ack->reason);
    sf_wire_free(r);
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.audits_mismatched, 1);
    r = request_job(co, &c); /* C: the third copy */
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    ck_assert_uint_eq(r->job->job_id, 1);
    sf_wire_free(r);
    unlink(honest);
    make_shard_as(co, 1, 100, 20, honest, dh, "wc", 0, NULL);
    r = send_shard(co, &c, 1, honest, dh, -1);
    ck_assert(r->shard_ack->ok);
    sf_wire_free(r);
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.audits_caught, 1);
    ck_assert_uint_eq(st.jobs_done, 1); /* A's shard of job 1 stays */
    ck_assert_msg(strstr(log.text, "copy disagrees with two others") != NULL, "%s", log.text);
    r = request_job(co, &b); /* B's key is refused now */
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_ERROR);
    sf_wire_free(r);
    /* round 2: A's stored shard of job 2 is the changed one */
    unlink(changed);
    make_shard_as(co, 2, 104, 20, changed, dc, "wa", 1, NULL);
    r = send_shard(co, &a, 2, changed, dc, -1);
    ck_assert(r->shard_ack->ok);
    sf_wire_free(r);
    ck_assert_uint_eq(co->st.jobs_done, 2);
    /* every job done, but job 2's audit is open: the run is not complete
     * (co_all_done), so C is told nothing and is given the audit */
    r = request_job(co, &c);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    ck_assert_uint_eq(r->job->job_id, 2);
    sf_wire_free(r);
    unlink(honest);
    make_shard_as(co, 2, 104, 20, honest, dh, "wc", 0, NULL);
    r = send_shard(co, &c, 2, honest, dh, -1);
    ck_assert(r->shard_ack->ok);
    sf_wire_free(r);
    ck_assert_uint_eq(co->st.audits_mismatched, 2);
    client d; /* a fourth identity settles it, agreeing with C */
    open_keyed(&d, co, "wd");
    hello(co, &d, "d");
    r = request_job(co, &d);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    ck_assert_uint_eq(r->job->job_id, 2);
    sf_wire_free(r);
    unlink(honest);
    make_shard_as(co, 2, 104, 20, honest, dh, "wd", 0, NULL);
    r = send_shard(co, &d, 2, honest, dh, -1);
    ck_assert(r->shard_ack->ok);
    sf_wire_free(r);
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.audits_caught, 2);
    ck_assert_uint_eq(st.shards_quarantined, 2); /* both of A's shards */
    ck_assert_uint_eq(st.jobs_done, 0);
    ck_assert_uint_eq(st.jobs_pending, 2);
    client_close(&a);
    client_close(&b);
    client_close(&c);
    client_close(&d);
    sf_coordinator_close(co);
}
END_TEST

/* ---- a listed key that lies (docs/operator.md "Security") ---------------- */

/* The key id of the run's key `name` (<keys>/<name>.pub). */
static void key_id_of(sf_coordinator *co, const char *name, char id[SF_ZSEC_ID_LEN + 1]) {
    char dir[400], kp[460], pub[SF_ZSEC_KEY_LEN + 1];
    sf_config_keys_dir(&co->cfg, dir, sizeof dir);
    snprintf(kp, sizeof kp, "%s/%s/%s.pub", dir, SF_ZSEC_CLIENTS_DIR, name);
    sf_err e = {0};
    if (access(kp, F_OK) != 0)
        snprintf(kp, sizeof kp, "%s/%s.pub", dir, name);
    ck_assert_msg(sf_zsec_read_public(kp, pub, &e) == SF_OK, "%s", e.msg);
    sf_zsec_key_id(pub, id);
}

/* Play job `job` (seeds from `seed`) as key `name` and upload it; the
 * ShardAck (free it). `lie`: one label changed. */
static Spirefleet__Envelope *play_as(sf_coordinator *co, client *c, const char *name, uint64_t job,
                                     uint64_t seed, int lie, uint8_t digest[32]) {
    char path[512];
    snprintf(path, sizeof path, "%s/play-%s-%llu.shard", tmpdir, name, (unsigned long long)job);
    unlink(path);
    make_shard_as(co, job, seed, 20, path, digest, name, lie, NULL);
    Spirefleet__Envelope *r = send_shard(co, c, job, path, digest, -1);
    unlink(path);
    return r;
}

/* Completion waits for trust: with one key no audit opens (no one could
 * play the copy); when a second key comes, the first key's first stored
 * job is audited (security.audit_first_jobs, here with audit_fraction 0),
 * and the run is not COMPLETE while that audit is open, even with every
 * job done; a worker asking meanwhile is told to wait, not that the run is
 * complete. When the copies differ and no third key is there, status says
 * AUDIT UNDECIDED naming both keys; the operator's quarantine of the liar
 * drops its copy and a third key's agreeing copy completes the run.
 * (Before, the run was COMPLETE with the audit undecided and the workers
 * told to exit, and a key's jobs stored while it was alone were never
 * audited.) */
START_TEST(completion_waits_for_every_open_audit) {
    sf_run_config cfg;
    make_cfg_live(&cfg, "trust", 8, "security: {audit_fraction: 0}\n"); /* jobs 1, 2 */
    log_lines log = {0};
    sf_coordinator *co = open_co_logged(&cfg, &log);
    client a, b, c;
    open_keyed(&a, co, "ha");
    hello(co, &a, "a");
    uint8_t d[32];
    expect_job(co, &a, 1, 1, "rollout");
    Spirefleet__Envelope *r = play_as(co, &a, "ha", 1, 100, 0, d);
    ck_assert(r->shard_ack->ok);
    sf_wire_free(r);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.audits_opened, 0); /* one key: no one to audit it */
    open_keyed(&b, co, "hb");
    hello(co, &b, "b");
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.audits_opened, 1); /* a's first stored job, now that b came */
    expect_job(co, &a, 2, 1, "rollout");
    r = play_as(co, &a, "ha", 2, 104, 0, d);
    ck_assert(r->shard_ack->ok);
    sf_wire_free(r);
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.jobs_done, 2);
    ck_assert_uint_eq(st.audits_opened, 1); /* job 2 is not a's first, and f is 0 */
    ck_assert_uint_eq(st.audits_open, 1);
    ck_assert_int_eq(st.complete, 0);
    char shown[4096];
    Spirefleet__Envelope *env = status_shown(co, &a, shown, sizeof shown);
    ck_assert_msg(strstr(shown, ")  running\n") && strstr(shown, "AUDITS OPEN: 1 audit(s) wait"),
                  "%s", shown);
    sf_wire_free(env);
    expect_wait(co, &a); /* a made the stored copy: it waits */
    expect_job(co, &b, 1, 101, "rollout");
    r = play_as(co, &b, "hb", 1, 100, 1, d); /* b's copy differs */
    ck_assert_msg(r->shard_ack->ok && r->shard_ack->duplicate, "%s", r->shard_ack->reason);
    sf_wire_free(r);
    char ia[SF_ZSEC_ID_LEN + 1], ib[SF_ZSEC_ID_LEN + 1], want[200];
    key_id_of(co, "ha", ia);
    key_id_of(co, "hb", ib);
    env = status_shown(co, &a, shown, sizeof shown);
    snprintf(want, sizeof want, "AUDIT UNDECIDED: job 1, keys %s/%s: the copies differ", ia, ib);
    ck_assert_msg(strstr(shown, "running, AUDIT UNDECIDED\n") && strstr(shown, want), "%s", shown);
    ck_assert(!env->status_reply->complete);
    ck_assert_uint_eq(env->status_reply->n_undecided_audits, 1);
    sf_wire_free(env);
    expect_wait(co, &a);
    expect_wait(co, &b); /* b made a copy */
    /* the operator decides: b's key is quarantined, its copy forgotten */
    co_quarantine_report qr;
    sf_err e = {0};
    ck_assert_int_eq(co_quarantine_key(co, ib, 0, "an operator", &qr, &e), SF_OK);
    ck_assert_uint_eq(qr.shards, 0);
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.audits_open, 1);
    ck_assert_int_eq(st.n_undecided, 0);
    ck_assert_int_eq(st.complete, 0);
    open_keyed(&c, co, "hc");
    hello(co, &c, "c");
    expect_job(co, &c, 1, 101, "rollout");
    r = play_as(co, &c, "hc", 1, 100, 0, d);
    ck_assert(r->shard_ack->ok);
    sf_wire_free(r);
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.audits_passed, 1);
    ck_assert_uint_eq(st.audits_open, 0);
    ck_assert_int_eq(st.complete, 1);
    client_close(&a);
    client_close(&b);
    client_close(&c);
    sf_coordinator_close(co);
}
END_TEST

/* Three different copies: the audit stays open at stage 3 (the run held,
 * status naming the three keys) across a restart, until an operator
 * quarantines the liars. (Before, it was logged and closed, and the stored
 * copy counted.) */
START_TEST(three_different_copies_hold_the_run_for_an_operator) {
    sf_run_config cfg;
    make_cfg_live(&cfg, "three", 4, "security: {audit_fraction: 1}\n"); /* job 1 */
    log_lines log = {0};
    sf_coordinator *co = open_co_logged(&cfg, &log);
    client cs[4];
    const char *names[4] = {"ka", "kb", "kc", "kd"}, *ids[4] = {"a", "b", "c", "d"};
    for (int k = 0; k < 3; k++) {
        open_keyed(&cs[k], co, names[k]);
        hello(co, &cs[k], ids[k]);
    }
    uint8_t d[32];
    for (int k = 0; k < 3; k++) { /* a stores; b and c audit; each copy its own */
        expect_job(co, &cs[k], 1, k == 0 ? 1 : 1 + 100 * (uint32_t)k, "rollout");
        char path[512];
        snprintf(path, sizeof path, "%s/three-%d.shard", tmpdir, k);
        unlink(path);
        synth_params p;
        synth_params_default(&p);
        make_shard_as(co, 1, 100, 20 + k, path, d, names[k], 0, NULL); /* 20, 21, 22 records */
        Spirefleet__Envelope *r = send_shard(co, &cs[k], 1, path, d, -1);
        ck_assert_msg(r->shard_ack->ok, "%s", r->shard_ack->reason);
        sf_wire_free(r);
    }
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.audits_undecided, 1);
    ck_assert_int_eq(st.n_undecided, 1);
    ck_assert_int_eq(st.undecided[0].stage, 3);
    ck_assert_int_eq(st.complete, 0);
    char ka[SF_ZSEC_ID_LEN + 1], kb[SF_ZSEC_ID_LEN + 1], kc[SF_ZSEC_ID_LEN + 1], want[200];
    key_id_of(co, "ka", ka);
    key_id_of(co, "kb", kb);
    key_id_of(co, "kc", kc);
    snprintf(want, sizeof want, "AUDIT UNDECIDED: job 1, keys %s/%s/%s: three different copies", ka,
             kb, kc);
    char shown[4096];
    Spirefleet__Envelope *env = status_shown(co, &cs[0], shown, sizeof shown);
    ck_assert_msg(strstr(shown, want), "%s", shown);
    sf_wire_free(env);
    /* across a restart */
    co = restart_keyed(co, &cfg, &log, cs, names, ids, 3);
    sf_coordinator_status(co, &st);
    ck_assert_int_eq(st.n_undecided, 1);
    ck_assert_int_eq(st.undecided[0].stage, 3);
    expect_wait(co, &cs[0]);
    /* the operator quarantines c: back to stage 2 (a and b differ), and d
     * decides against b */
    co_quarantine_report qr;
    sf_err e = {0};
    ck_assert_int_eq(co_quarantine_key(co, kc, 0, "an operator", &qr, &e), SF_OK);
    sf_coordinator_status(co, &st);
    ck_assert_int_eq(st.undecided[0].stage, 2);
    open_keyed(&cs[3], co, "kd");
    hello(co, &cs[3], "d");
    expect_job(co, &cs[3], 1, 201, "rollout");
    char path[512];
    snprintf(path, sizeof path, "%s/three-d.shard", tmpdir);
    unlink(path);
    make_shard_as(co, 1, 100, 20, path, d, "kd", 0, NULL); /* a's copy */
    Spirefleet__Envelope *r = send_shard(co, &cs[3], 1, path, d, -1);
    ck_assert(r->shard_ack->ok);
    sf_wire_free(r);
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.audits_caught, 1);
    ck_assert_uint_eq(st.audits_open, 0);
    ck_assert_int_eq(st.complete, 1);
    for (int k = 0; k < 4; k++)
        client_close(&cs[k]);
    sf_coordinator_close(co);
}
END_TEST

/* Failures and leases count keys, not worker ids: one key under three ids
 * reports job 1 failed three times, and while another key is there the job
 * is not failed out of the run (it goes to the other key); one key with 14
 * ids holds at most security.max_lease_share (0.5) of the jobs not done
 * while another key waits; a key whose ids report 5 more failures than
 * stored jobs gets no more jobs under any id. (Before, 3 ids of one key
 * failed a job out, 14 ids held all 25 leases, and 5 ids with one failure
 * each were never stopped.) */
START_TEST(one_key_under_many_ids_cannot_fail_jobs_out_or_hold_every_lease) {
    sf_run_config cfg;
    /* leases: 25 jobs */
    make_cfg_live(&cfg, "ids", 100, NULL);
    sf_coordinator *co = open_co(&cfg);
    client honest, bad[14];
    client_open(&honest, co);
    hello(co, &honest, "honest");
    open_keyed(&bad[0], co, "liar");
    for (int k = 0; k < 14; k++) {
        char id[16];
        if (k > 0)
            client_open_as(&bad[k], co, "liar");
        snprintf(id, sizeof id, "liar-%d", k);
        hello(co, &bad[k], id);
    }
    int jobs = 0, waits = 0; /* 14 ids, two leases each, ask for every job */
    for (int k = 0; k < 14; k++)
        for (int n = 0; n < 2; n++) { /* all alive: the 30 s liveness window */
            Spirefleet__Envelope *r = request_job(co, &bad[k]);
            jobs += r->body_case == SPIREFLEET__ENVELOPE__BODY_JOB;
            waits += r->body_case == SPIREFLEET__ENVELOPE__BODY_WAIT;
            sf_wire_free(r);
        }
    ck_assert_int_eq(jobs, 13); /* ceil(0.5 x 25 jobs not done) */
    ck_assert_int_eq(waits, 28 - 13);
    Spirefleet__Envelope *r = request_job(co, &honest);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_JOB);
    sf_wire_free(r);
    client_close(&honest);
    for (int k = 0; k < 14; k++)
        client_close(&bad[k]);
    sf_coordinator_close(co);

    /* failures: one job, failed by three ids of the liar's key */
    make_cfg_live(&cfg, "ids-fail", 4, NULL);
    co = open_co(&cfg);
    client_open(&honest, co);
    hello(co, &honest, "honest");
    open_keyed(&bad[0], co, "liar2");
    for (int k = 0; k < 6; k++) {
        char id[16];
        if (k > 0)
            client_open_as(&bad[k], co, "liar2");
        snprintf(id, sizeof id, "liar-%d", k);
        hello(co, &bad[k], id);
    }
    sf_coord_status st;
    for (int k = 0; k < 3; k++) {
        expect_job(co, &bad[k], 1, (uint32_t)k + 1, "rollout");
        job_failed(co, &bad[k], 1, "forged failure");
    }
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(co->jobs[0].failures, 3);
    ck_assert_uint_eq(st.jobs_quarantined, 0); /* three ids, one key */
    ck_assert_int_eq(st.cannot_finish, 0);
    expect_job(co, &honest, 1, 4, "rollout"); /* the job goes on */
    job_failed(co, &honest, 1, SF_JOB_ABANDONED);
    /* two more reports from new ids: 5 failures, no stored job */
    for (int k = 3; k < 5; k++) {
        expect_job(co, &bad[k], 1, (uint32_t)k + 2, "rollout");
        job_failed(co, &bad[k], 1, "forged failure");
    }
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.keys_failing, 1);
    ck_assert_uint_eq(st.workers_quarantined, 0); /* no id reported 5 */
    r = request_job(co, &bad[5]);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_REFUSAL);
    ck_assert_msg(
        strstr(r->refusal->reason, "quarantined after 5 failure reports for 0 stored job(s)"), "%s",
        r->refusal->reason);
    sf_wire_free(r);
    expect_job(co, &honest, 1, 7, "rollout");
    client_close(&honest);
    for (int k = 0; k < 6; k++)
        client_close(&bad[k]);
    sf_coordinator_close(co);
}
END_TEST

/* A quarantine after completion whose jobs no connected worker can play
 * says so: the reply counts no live worker, the log and status say NO
 * WORKERS and to start workers. (Before, status said "running, 1 pending,
 * workers alive 0" forever and nothing else.) */
START_TEST(a_quarantine_with_no_worker_left_says_to_start_workers) {
    sf_run_config cfg;
    make_cfg_n(&cfg, "nowk", 60, 4, NULL);
    log_lines log = {0};
    sf_coordinator *co = open_co_logged(&cfg, &log);
    client a, b, op;
    open_keyed(&a, co, "gone");
    open_keyed(&b, co, "stays"); /* another key's worker, which exits too */
    client_open_as(&op, co, SF_ZSEC_OPERATOR_NAME);
    hello(co, &a, "a");
    hello(co, &b, "b");
    expect_job(co, &a, 1, 1, "rollout");
    uint8_t d[32];
    Spirefleet__Envelope *r = play_as(co, &a, "gone", 1, 100, 0, d);
    ck_assert(r->shard_ack->ok);
    sf_wire_free(r);
    client_close(&a);
    client_close(&b);
    sf_coord_status st;
    sf_err e = {0};
    uint64_t until = sf_now_ns() + 30ull * 1000000000ull; /* the liveness window, 300 ms */
    do {
        ck_assert_int_eq(sf_coordinator_step(co, 20, &e), SF_OK);
        sf_coordinator_status(co, &st);
    } while (st.workers_alive > 0 && sf_now_ns() < until);
    ck_assert_uint_eq(st.workers_alive, 0);
    ck_assert_int_eq(st.complete, 1);
    ck_assert_int_eq(st.no_workers, 0); /* nothing waits */
    char kid[SF_ZSEC_ID_LEN + 1];
    key_id_of(co, "gone", kid);
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Quarantine q = SPIREFLEET__QUARANTINE__INIT;
    q.key_id = kid;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_QUARANTINE;
    req.quarantine = &q;
    r = rpc(co, &op, &req);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_QUARANTINE_REPLY);
    ck_assert_uint_eq(r->quarantine_reply->jobs_reissued, 1);
    ck_assert_uint_eq(r->quarantine_reply->workers_alive, 0);
    sf_wire_free(r);
    ck_assert_msg(strstr(log.text, "NO WORKER is connected to play them: start workers"), "%s",
                  log.text);
    char shown[4096];
    Spirefleet__Envelope *env = status_shown(co, &op, shown, sizeof shown);
    ck_assert_msg(strstr(shown, "running, NO WORKERS\n") &&
                      strstr(shown, "NO WORKERS: jobs wait and no worker is connected"),
                  "%s", shown);
    sf_wire_free(env);
    client_close(&op);
    sf_coordinator_close(co);
}
END_TEST

/* The run's totals come from the verified shard: its records' fights (60
 * records of synth_fill are fights 0, 1, 2 of one seed: 3) and its sealed
 * manifest's simulations and fallbacks, not the upload offer's claims
 * (fights 1000, fallbacks 99). (Before, the offer's numbers were added.) */
START_TEST(totals_come_from_the_verified_shard_not_the_offer) {
    sf_run_config cfg;
    client c;
    sf_coordinator *co = begin(&cfg, &c);
    expect_job(co, &c, 1, 1, "rollout");
    Spirefleet__JobStats ms = SPIREFLEET__JOB_STATS__INIT;
    ms.fights = 3;
    ms.simulations = 777;
    ms.fallbacks = 5;
    char path[512];
    uint8_t d[32];
    snprintf(path, sizeof path, "%s/totals.shard", tmpdir);
    unlink(path);
    make_shard_full(co, 1, 100, 60, path, d, SF_ZSEC_WORKER_NAME, 0, NULL, 0, &ms);
    uint8_t *bytes;
    size_t n = slurp(path, &bytes);
    uint8_t h[32];
    crypto_hash_sha256(h, bytes, n);
    char sha[65], dig[65];
    sf_hex(h, 32, sha);
    sf_hex(d, 32, dig);
    Spirefleet__JobStats lie = SPIREFLEET__JOB_STATS__INIT;
    lie.fights = 1000;
    lie.fights_won = 1000;
    lie.simulations = 1u << 30;
    lie.fallbacks = 99;
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ShardOffer of = SPIREFLEET__SHARD_OFFER__INIT;
    of.job_id = 1;
    of.size = n;
    of.file_sha256 = sha;
    of.content_digest = dig;
    of.records = 60;
    of.stats = &lie;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_OFFER;
    req.shard_offer = &of;
    Spirefleet__Envelope *r = rpc(co, &c, &req);
    ck_assert(r->shard_ack->send);
    sf_wire_free(r);
    send_chunks(&c, 1, bytes, n);
    free(bytes);
    r = pump(co, &c);
    ck_assert_msg(r->shard_ack->ok, "%s", r->shard_ack->reason);
    sf_wire_free(r);
    /* the wins, counted independently: a fight's first record's outcome */
    sf_shard_reader *rd;
    sf_err e = {0};
    ck_assert_int_eq(sf_shard_reader_open(path, &rd, &e), SF_OK);
    uint64_t wins = 0;
    for (uint64_t i = 0; i < 60; i += 20) {
        const Spirefleet__LabelRecord *rec;
        ck_assert_int_eq(sf_shard_reader_get(rd, i, &rec, &e), SF_OK);
        wins += rec->outcome->won;
    }
    sf_shard_reader_close(rd);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.fights, 3);
    ck_assert_uint_eq(st.simulations, 777);
    ck_assert_uint_eq(st.fallbacks, 5);
    ck_assert_uint_eq(co->jobs[0].wins, wins);
    client_close(&c);
    sf_coordinator_close(co);
}
END_TEST

/* The scripted attack: three keys, one of them ("liar") forging a changed
 * label into every shard and every audit copy it makes, audit settings at
 * their defaults. The run ends COMPLETE with the liar's key quarantined,
 * every shard it stored listed in shards/QUARANTINE and its job played
 * again, and every stored shard's content digest equal to the honest
 * digest of its job. */
START_TEST(one_lying_key_among_three_is_caught_and_its_jobs_played_again) {
    sf_run_config cfg;
    make_cfg_live(&cfg, "attack", 40, "security: {mode: curve}\n"); /* 10 jobs, defaults */
    ck_assert_double_eq(cfg.security.audit_fraction, 0.05);
    ck_assert_uint_eq(cfg.security.audit_first_jobs, 1);
    log_lines log = {0};
    sf_coordinator *co = open_co_logged(&cfg, &log);
    client cs[3];
    const char *names[3] = {"honest-a", "liar", "honest-b"};
    for (int k = 0; k < 3; k++) {
        open_keyed(&cs[k], co, names[k]);
        char id[16];
        snprintf(id, sizeof id, "w%d", k);
        hello(co, &cs[k], id);
    }
    int refused[3] = {0}, liar_stored = 0;
    for (uint64_t job = 1; job <= 2; job++) { /* the liar stores two forged shards first */
        expect_job(co, &cs[1], job, 1, "rollout");
        uint8_t d[32];
        Spirefleet__Envelope *r = play_as(co, &cs[1], "liar", job, 100 + 4 * (job - 1), 1, d);
        ck_assert(r->shard_ack->ok && !r->shard_ack->duplicate);
        liar_stored++;
        sf_wire_free(r);
    }
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    for (int round = 0; round < 200 && !st.complete; round++) {
        for (int k = 0; k < 3 && !st.complete; k++) {
            if (refused[k])
                continue;
            Spirefleet__Envelope *r = request_job(co, &cs[k]);
            if (r->body_case == SPIREFLEET__ENVELOPE__BODY_JOB) {
                uint64_t job = r->job->job_id, seed = r->job->seed_start;
                sf_wire_free(r);
                uint8_t d[32];
                r = play_as(co, &cs[k], names[k], job, seed, k == 1, d);
                if (k == 1 && r->body_case == SPIREFLEET__ENVELOPE__BODY_SHARD_ACK &&
                    r->shard_ack->ok && !r->shard_ack->duplicate)
                    liar_stored++;
            } else if (r->body_case == SPIREFLEET__ENVELOPE__BODY_ERROR ||
                       r->body_case == SPIREFLEET__ENVELOPE__BODY_REFUSAL) {
                refused[k] = 1;
            }
            sf_wire_free(r);
            sf_coordinator_status(co, &st);
        }
    }
    ck_assert_msg(st.complete, "%s", log.text);
    ck_assert(refused[1] && !refused[0] && !refused[2]);
    ck_assert_uint_ge(st.audits_caught, 1);
    ck_assert_uint_eq(st.shards_quarantined, (uint64_t)liar_stored);
    ck_assert_uint_eq(st.jobs_done, 10);
    /* every stored shard is the honest one */
    for (uint64_t j = 1; j <= 10; j++) {
        char path[512], want[65];
        uint8_t d[32];
        snprintf(path, sizeof path, "%s/attack-ref-%llu.shard", tmpdir, (unsigned long long)j);
        unlink(path);
        make_shard_as(co, j, 100 + 4 * (j - 1), 20, path, d, "honest-a", 0, NULL);
        unlink(path);
        sf_hex(d, 32, want);
        ck_assert_str_eq(co->jobs[j - 1].content_digest, want);
    }
    sf_shard_quarantine *ql = NULL;
    sf_err e = {0};
    ck_assert_int_eq(sf_shard_quarantine_load(co->shards_dir, &ql, &e), SF_OK);
    ck_assert_uint_eq(sf_shard_quarantine_count(ql), (size_t)liar_stored);
    sf_shard_quarantine_free(ql);
    for (int k = 0; k < 3; k++)
        client_close(&cs[k]);
    sf_coordinator_close(co);
}
END_TEST

/* A restart that finds an audited job's shard gone cancels the audit with
 * the job (before, the pending job kept its audit in the ledger, and the
 * next start refused the ledger: "has an audit at stage 1 in state 0"). */
START_TEST(a_restart_without_an_audited_shard_cancels_its_audit) {
    sf_run_config cfg;
    make_cfg_live(&cfg, "gone", 8, "security: {audit_fraction: 1}\n");
    sf_coordinator *co = open_co(&cfg);
    client a, b;
    open_keyed(&a, co, "ga");
    open_keyed(&b, co, "gb");
    hello(co, &a, "a");
    hello(co, &b, "b");
    expect_job(co, &a, 1, 1, "rollout");
    uint8_t d[32];
    Spirefleet__Envelope *r = play_as(co, &a, "ga", 1, 100, 0, d);
    ck_assert(r->shard_ack->ok);
    sf_wire_free(r);
    ck_assert_uint_eq(co->n_audits, 1);
    char path[1200];
    char name[CO_SHARD_NAME_MAX];
    snprintf(path, sizeof path, "%s/%s", co->shards_dir, co_job_shard(co, &co->jobs[0], name));
    client_close(&a);
    client_close(&b);
    sf_coordinator_close(co);
    ck_assert_int_eq(unlink(path), 0);
    co = open_co(&cfg);
    ck_assert_uint_eq(co->n_audits, 0);
    ck_assert_int_eq(co->jobs[0].state, JS_PENDING);
    sf_coordinator_close(co);
    co = open_co(&cfg); /* and the ledger it wrote opens */
    ck_assert_int_eq(co->jobs[0].audit_stage, 0);
    sf_coordinator_close(co);
}
END_TEST

/* An upload whose lease was given up while its bytes came is refused at
 * its end (before, a worker could abandon the job, keep sending, and have
 * its shard stored over the next holder's lease). */
START_TEST(an_upload_after_its_lease_is_given_up_is_refused) {
    sf_run_config cfg;
    client c;
    sf_coordinator *co = begin(&cfg, &c);
    expect_job(co, &c, 1, 1, "rollout");
    char path[512];
    uint8_t d[32];
    snprintf(path, sizeof path, "%s/given-up.shard", tmpdir);
    unlink(path);
    make_shard(co, 1, 100, 20, path, d);
    uint8_t *bytes;
    size_t n = slurp(path, &bytes);
    Spirefleet__Envelope *r = offer_bytes(co, &c, 1, bytes, n, d);
    ck_assert(r->shard_ack->send);
    sf_wire_free(r);
    job_failed(co, &c, 1, SF_JOB_ABANDONED);
    send_chunks(&c, 1, bytes, n);
    free(bytes);
    r = pump(co, &c);
    ck_assert_int_eq(r->body_case, SPIREFLEET__ENVELOPE__BODY_SHARD_ACK);
    ck_assert_msg(!r->shard_ack->ok && strstr(r->shard_ack->reason, "no longer leased to w1"), "%s",
                  r->shard_ack->reason);
    sf_wire_free(r);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    ck_assert_uint_eq(st.jobs_done, 0);
    client_close(&c);
    sf_coordinator_close(co);
}
END_TEST

#include "test-coordinator.tests.h" /* SF_TESTS: every START_TEST above (tests/meson.build) */
/* 600 s, a hang catcher only (every wait above fails by itself after
 * WAIT_NS): a_damaged_ledger_is_an_error_not_a_crash opens hundreds of
 * damaged ledgers (a probe child each): 25-40 s in build/ on a loaded
 * 2-core machine, several times that under ASan. */
SF_CHECK_MAIN("coordinator", "coordinator", 600, tmpdir_make, tmpdir_remove)
