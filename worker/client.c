/*
 * client.c — the worker's side of the fleet protocol (worker.h,
 * sf_worker_run): one DEALER to the coordinator; Hello, job requests,
 * heartbeats (ZeroMQ guide's Paranoid Pirate: a peer silent for
 * heartbeat_liveness intervals is dead; reconnect with exponential backoff),
 * progress, chunked shard upload, clean abandonment on SIGTERM, and a
 * drain (finish the job in hand, upload it, leave). The coordinator's
 * endpoint may come from a file it publishes (common/endpoint_file.h),
 * read again before every connection.
 *
 * The job itself runs on its own thread (sf_job_run); this thread keeps the
 * connection alive meanwhile.
 */
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "common/endpoint_file.h"
#include "shard/shard.h"
#include "worker/models.h"
#include "worker/worker.h"

#define HELLO_TIMEOUT_MS 5000
#define BACKOFF_MAX_MS   32000
/* With an endpoint file the next try may go elsewhere: retry sooner. */
#define BACKOFF_FILE_MAX_MS 4000
/* The longest wait between offers of a shard the coordinator could not
 * store (its disk was full). */
#define RETRY_LATER_MAX_MS 16000
/* An evaluator probe unanswered this long is said to be waited for (on
 * stderr and in heartbeats), well inside a coordinator's liveness window;
 * the probe itself goes on for evald.timeout_ms per try. */
#define EVALD_SILENT_MS 2000

typedef struct conn {
    void *zctx, *sock;
    const char *endpoint;        /* the coordinator's; points at from_file with a file */
    const char *endpoint_file;   /* sf_worker_opts.endpoint_file, or NULL          */
    char from_file[SF_CFG_PATH]; /* the endpoint last read from it              */
    int backoff_max_ms;
    sf_zsec_client curve; /* sf_worker_opts.keys_dir's worker key, or plain */
    char worker_id[64];
    uint64_t last_heard; /* monotonic ns of the last message from the coordinator */
    uint32_t hb_ms, liveness;
    int need_hello; /* the coordinator no longer knows us (it restarted) */
    /* The jobs this worker holds (the one playing, the one uploading; 0:
     * none): every wait heartbeats for them (keep_alive), so no lease runs
     * out while a shard is offered, sent or waits for its verdict. */
    uint64_t held[2];
    uint64_t last_hb; /* monotonic ns of the last keep_alive round */
    /* What the worker waits for before it can take a job ("" when
     * nothing): sent in every heartbeat, so `sf-fleet status` can say why
     * a connected worker plays nothing (a gpu-evald that does not answer). */
    char waiting[160];
    sf_wire_watch watch; /* the socket's security handshakes (fleet/wire.h) */
    sf_log_fn log;       /* sf_worker_opts.log and its context */
    void *log_ctx;
    /* sf_worker_opts.yield: an idle Hello gives up after one try, and why
     * goes here (sf_worker_exit.why) */
    int yield;
    char gave_up[SF_ERR_MSG_MAX];
} conn;

static void logf_(conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(conn *c, const char *fmt, ...) {
    if (!c->log)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%02d:%02d:%02d.%03ld worker %s: ", tm.tm_hour, tm.tm_min,
             tm.tm_sec, ts.tv_nsec / 1000000, c->worker_id);
    va_list ap;
    va_start(ap, fmt);
    sf_vlog(c->log, c->log_ctx, prefix, fmt, ap);
    va_end(ap);
}

/* A fresh DEALER to the coordinator, its handshakes watched (the old one,
 * if any, is closed). */
static int conn_open(conn *c, sf_err *err) {
    sf_wire_watch_close(&c->watch);
    if (c->sock)
        zmq_close(c->sock);
    c->sock = NULL;
    int rc = sf_wire_dealer_watched(c->zctx, c->endpoint, &c->curve, &c->sock, &c->watch, err);
    c->last_heard = sf_now_ns();
    return rc;
}

static int send_env(conn *c, Spirefleet__Envelope *env) {
    return sf_wire_send(c->sock, NULL, 0, env, 0);
}

/* Receive one envelope within timeout_ms (NULL on timeout or garbage).
 * Unlike sf_wire_ask()'s clients, the worker never fails on what it reads:
 * a frame that does not decode is logged and skipped, an ErrorReply is
 * passed on (one naming SF_ESTATE means the coordinator forgot this worker:
 * Hello again), and whatever answer it waits for may come after heartbeat
 * replies. */
static Spirefleet__Envelope *recv_env(conn *c, int timeout_ms) {
    Spirefleet__Envelope *env;
    sf_err e = {0};
    int rc = sf_wire_recv(c->sock, c->endpoint, timeout_ms, &env, &e);
    if (rc == SF_EFORMAT || rc == SF_EVERSION)
        logf_(c, "ignoring a bad frame: %s", e.msg);
    if (rc < 0)
        return NULL;
    c->last_heard = sf_now_ns();
    if (env->body_case == SPIREFLEET__ENVELOPE__BODY_ERROR && env->error->code == SF_ESTATE)
        c->need_hello = 1;
    return env;
}

/* Whether the caller asked the worker to stop (sf_worker_opts.stop). */
static int stopping(const sf_worker_opts *o) {
    return o->stop && *o->stop;
}

/* Whether the caller asked the worker to drain (sf_worker_opts.drain). */
static int draining(const sf_worker_opts *o) {
    return o->drain && *o->drain;
}

/* Whether a wait should end: on a stop request, and, when the worker holds
 * no work (`idle`), on a drain too: a worker with nothing in hand has
 * nothing left to finish. */
static int leaving(const sf_worker_opts *o, int idle) {
    return stopping(o) || (idle && draining(o));
}

/* Sleep *backoff_ms (in 100 ms steps, ending early when leaving()) and
 * double it, up to `max_ms`: the wait between tries of something that did
 * not answer. */
static void back_off(const sf_worker_opts *o, int idle, int *backoff_ms, int max_ms) {
    for (int waited = 0; waited < *backoff_ms && !leaving(o, idle); waited += 100)
        usleep(100000);
    *backoff_ms = *backoff_ms * 2 > max_ms ? max_ms : *backoff_ms * 2;
}

/* With an endpoint file: read it, so the next connection goes wherever the
 * coordinator now serves. Returns 0 (c->endpoint is usable), or -1 with
 * why not in `why` (the file is missing: the coordinator has not started,
 * or has left). */
static int refresh_endpoint(conn *c, char *why, size_t cap) {
    if (!c->endpoint_file)
        return 0;
    char ep[sizeof c->from_file];
    sf_err e = {0};
    if (sf_endpoint_file_read(c->endpoint_file, ep, sizeof ep, &e) < 0) {
        snprintf(why, cap, "%s", e.msg);
        return -1;
    }
    const char *bad = sf_endpoint_problem(ep);
    if (bad) {
        snprintf(why, cap, "%.180s: '%.180s': %s", c->endpoint_file, ep, bad);
        return -1;
    }
    if (strcmp(ep, c->from_file)) {
        memcpy(c->from_file, ep, sizeof ep);
        logf_(c, "coordinator endpoint %s (from %s)", ep, c->endpoint_file);
    }
    c->endpoint = c->from_file;
    return 0;
}

static int coordinator_dead(const conn *c) {
    return sf_now_ns() - c->last_heard > (uint64_t)c->hb_ms * c->liveness * 1000000ull;
}

static void send_heartbeat(conn *c, uint64_t job) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Heartbeat hb = SPIREFLEET__HEARTBEAT__INIT;
    hb.worker_id = c->worker_id;
    hb.job_id = job;
    hb.waiting = c->waiting;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    send_env(c, &env);
}

/* One round of heartbeats, one per held job (or one naming none), at most
 * once per heartbeat interval. */
static void keep_alive(conn *c) {
    uint64_t now = sf_now_ns();
    if (now - c->last_hb < (uint64_t)c->hb_ms * 1000000ull)
        return;
    c->last_hb = now;
    int sent = 0;
    for (int k = 0; k < 2; k++)
        if (c->held[k]) {
            send_heartbeat(c, c->held[k]);
            sent = 1;
        }
    if (!sent)
        send_heartbeat(c, 0);
}

/* ------------------------------------------------------------------------
 * Hello / Welcome
 * ---------------------------------------------------------------------- */

typedef struct session {
    sf_run_config cfg;
    char digest[65];
} session;

/* Connect and say Hello until Welcome (SF_OK), a Refusal (SF_ESTATE) or a
 * stop request, or a drain when `idle` (SF_ETIMEOUT). */
static int hello(conn *c, const sf_worker_opts *o, session *s, int idle, sf_err *err) {
    int backoff = 1000;
    char why[SF_ERR_MSG_MAX] = "", last_why[SF_ERR_MSG_MAX] = "";
    for (;;) {
        if (leaving(o, idle))
            return SF_ETIMEOUT;
        /* keys a coordinator makes at its first start may not be there yet
         * (a worker started beside it): wait for them as for its endpoint */
        sf_err ke = {0};
        int keys = o->keys_dir && !c->curve.on
                       ? sf_zsec_client_load(o->keys_dir, SF_ZSEC_WORKER_NAME, &c->curve, &ke)
                       : SF_OK;
        if (keys < 0 && keys != SF_ENOTFOUND)
            return sf_err_set(err, keys, "--keys: %s", ke.msg);
        if (keys < 0)
            snprintf(why, sizeof why, "%s", ke.msg);
        if (keys < 0 || refresh_endpoint(c, why, sizeof why) < 0) {
            if (strcmp(why, last_why)) /* say so once, not at every try */
                logf_(c, "waiting for the coordinator's %s: %s", keys < 0 ? "keys" : "endpoint",
                      why);
            memcpy(last_why, why, sizeof why);
            if (c->yield && idle) { /* another run may serve meanwhile */
                snprintf(c->gave_up, sizeof c->gave_up, "%s", why);
                return SF_ETIMEOUT;
            }
            int wait = 1000;
            back_off(o, idle, &wait, wait);
            continue;
        }
        last_why[0] = '\0';
        c->need_hello = 0;
        int opened = conn_open(c, err);
        if (opened < 0)
            return opened;
        Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
        Spirefleet__Hello h = SPIREFLEET__HELLO__INIT;
        char host[64] = "";
        gethostname(host, sizeof host - 1);
        h.protocol_version = SF_PROTOCOL_VERSION;
        h.worker_id = c->worker_id;
        h.host = host;
        h.threads = (uint32_t)(o->threads > 0 ? o->threads : 0);
        h.pid = (uint32_t)getpid();
        env.body_case = SPIREFLEET__ENVELOPE__BODY_HELLO;
        env.hello = &h;
        send_env(c, &env);
        uint64_t until = sf_now_ns() + HELLO_TIMEOUT_MS * 1000000ull;
        sf_wire_handshake hs = SF_WIRE_HS_PENDING;
        while (sf_now_ns() < until && !leaving(o, idle)) {
            Spirefleet__Envelope *r = recv_env(c, 200);
            hs = sf_wire_watch_poll(&c->watch, 0);
            if (!r && hs != SF_WIRE_HS_PENDING && hs != SF_WIRE_HS_OK)
                break; /* refused in the handshake: no answer will come */
            if (!r)
                continue;
            if (r->body_case == SPIREFLEET__ENVELOPE__BODY_WELCOME && r->welcome->config) {
                int rc = sf_config_from_proto(r->welcome->config, &s->cfg, err);
                /* this machine's keys, not the coordinator's paths, reach
                 * gpu-evald (an execution key: the digest is the same) */
                snprintf(s->cfg.security.mode, sizeof s->cfg.security.mode, "%s",
                         c->curve.on ? "curve" : "none");
                snprintf(s->cfg.security.keys, sizeof s->cfg.security.keys, "%s",
                         o->keys_dir ? o->keys_dir : "");
                char mine[65];
                if (rc == SF_OK && sf_config_digest(&s->cfg, mine) == SF_OK &&
                    r->welcome->config_digest && !strcmp(mine, r->welcome->config_digest)) {
                    snprintf(s->digest, sizeof s->digest, "%s", mine);
                    c->hb_ms = r->welcome->heartbeat_ms ? r->welcome->heartbeat_ms : 1000;
                    c->liveness =
                        r->welcome->heartbeat_liveness ? r->welcome->heartbeat_liveness : 5;
                    sf_wire_free(r);
                    return SF_OK;
                }
                if (rc == SF_OK)
                    sf_err_set(err, SF_EVERSION,
                               "the coordinator's config digest does not match this build's");
                sf_wire_free(r);
                return err ? err->code : SF_EVERSION;
            }
            if (r->body_case == SPIREFLEET__ENVELOPE__BODY_REFUSAL) {
                int rc = sf_err_set(err, SF_ESTATE, "refused by the coordinator: %s",
                                    r->refusal->reason ? r->refusal->reason : "");
                sf_wire_free(r);
                return rc;
            }
            sf_wire_free(r);
        }
        if (leaving(o, idle))
            continue;
        /* a CURVE coordinator gives a key it does not admit no answer at
         * all: the handshake fails before any message; the watch says how */
        sf_err he = {0};
        if (c->yield && idle) {
            if (sf_wire_handshake_error(&c->watch, "coordinator", c->endpoint, &he) < 0)
                snprintf(c->gave_up, sizeof c->gave_up, "%s", he.msg);
            else
                snprintf(c->gave_up, sizeof c->gave_up, "no answer from %.400s", c->endpoint);
            return SF_ETIMEOUT;
        }
        if (sf_wire_handshake_error(&c->watch, "coordinator", c->endpoint, &he) < 0) {
            logf_(c, "%s; retrying in %d ms", he.msg, backoff);
            back_off(o, idle, &backoff, c->backoff_max_ms);
            continue;
        }
        logf_(c, "no answer from %s; retrying in %d ms%s", c->endpoint, backoff,
              c->curve.on ? " (if this lasts: the coordinator may not admit this worker's key: "
                            "revoked, quarantined or never listed)"
                          : " (a coordinator with CURVE, the default, answers only workers given "
                            "--keys DIR)");
        back_off(o, idle, &backoff, c->backoff_max_ms);
    }
}

/* ------------------------------------------------------------------------
 * Running a job on a thread
 * ---------------------------------------------------------------------- */

typedef struct job_thread {
    const session *s;
    uint32_t attempt;
    sf_job_spec spec;
    sf_job_opts opts;
    char key_id[SF_ZSEC_ID_LEN + 1], host[64]; /* the manifest's provenance */
    char path[1200];
    sf_job_result res;
    sf_err err;
    int rc;
    atomic_int finished;
    atomic_uint_fast64_t fights, labels;
    volatile sig_atomic_t abandon;
} job_thread;

static void on_progress(void *ctx, uint64_t fights, uint64_t labels) {
    job_thread *jt = ctx;
    atomic_store(&jt->fights, fights);
    atomic_store(&jt->labels, labels);
}

static void *job_main(void *arg) {
    job_thread *jt = arg;
    jt->rc =
        sf_job_run(&jt->s->cfg, jt->s->digest, &jt->spec, &jt->opts, jt->path, &jt->res, &jt->err);
    atomic_store(&jt->finished, 1);
    return NULL;
}

/* ------------------------------------------------------------------------
 * Upload
 * ---------------------------------------------------------------------- */

/* Wait for a ShardAck about `job` (heartbeats and other chatter are
 * skipped), heartbeating for the held jobs meanwhile. NULL after
 * timeout_ms, or as soon as the coordinator has been silent for its
 * liveness window (it died or restarted: the caller reconnects), or when
 * it says it no longer knows this worker. */
static Spirefleet__Envelope *wait_ack(conn *c, uint64_t job, int timeout_ms) {
    uint64_t until = sf_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    while (sf_now_ns() < until && !coordinator_dead(c) && !c->need_hello) {
        keep_alive(c);
        Spirefleet__Envelope *r = recv_env(c, 100);
        if (!r)
            continue;
        if (r->body_case == SPIREFLEET__ENVELOPE__BODY_SHARD_ACK && r->shard_ack->job_id == job)
            return r;
        sf_wire_free(r);
    }
    return NULL;
}

/* A ShardAck's verdict: SF_OK when ok, SF_EFULL when the coordinator asks
 * to retry later (*retry_ms: when), else SF_ECORRUPT; the reason in err. */
static int ack_verdict(const Spirefleet__ShardAck *a, int *retry_ms, sf_err *err) {
    sf_err_set(err, SF_ECORRUPT, "%s", a->reason ? a->reason : "");
    if (a->ok)
        return SF_OK;
    if (a->retry_later) {
        *retry_ms = a->retry_ms ? (int)a->retry_ms : 1000;
        err->code = SF_EFULL;
        return SF_EFULL;
    }
    return SF_ECORRUPT;
}

/* Offer, send chunks, wait for the verdict. Returns SF_OK (stored or a
 * duplicate: the local copy may go), SF_ECORRUPT (refused), SF_EFULL (the
 * coordinator cannot store it now: keep it, try again after *retry_ms), or
 * SF_ETIMEOUT (no answer within the liveness window). */
static int upload(conn *c, const job_thread *jt, uint32_t attempt, int *retry_ms, sf_err *err) {
    char sha[65];
    uint64_t size;
    int rc = sf_shard_file_sha256(jt->path, sha, &size, err);
    if (rc < 0)
        return sf_err_prefix(err, "the sealed shard");
    char digest[65];
    sf_hex(jt->res.digest, 32, digest);
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ShardOffer of = SPIREFLEET__SHARD_OFFER__INIT;
    Spirefleet__JobStats st = SPIREFLEET__JOB_STATS__INIT;
    st.fights = jt->res.fights;
    st.fights_won = jt->res.wins;
    st.decisions = jt->res.decisions;
    st.simulations = jt->res.simulations;
    st.fallbacks = jt->res.fallbacks_search + jt->res.fallbacks_eval;
    of.job_id = jt->spec.job_id;
    of.attempt = attempt;
    of.size = size;
    of.file_sha256 = sha;
    of.content_digest = digest;
    of.records = jt->res.records;
    of.stats = &st;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_OFFER;
    env.shard_offer = &of;
    send_env(c, &env);
    int wait_ms = (int)(c->hb_ms * c->liveness);
    Spirefleet__Envelope *r = wait_ack(c, jt->spec.job_id, wait_ms);
    if (!r)
        return sf_err_set(err, SF_ETIMEOUT, "no answer to the shard offer");
    int send = r->shard_ack->send;
    rc = ack_verdict(r->shard_ack, retry_ms, err);
    sf_wire_free(r);
    if (rc == SF_OK || rc == SF_EFULL)
        return rc; /* OK: the job was already done, nothing to send */
    if (!send)
        return SF_ECORRUPT;
    FILE *f = fopen(jt->path, "rb");
    if (!f)
        return sf_err_set(err, SF_EIO, "%s: cannot open: %s", jt->path, strerror(errno));
    uint8_t *buf = malloc(SF_FLEET_CHUNK);
    uint64_t off = 0;
    rc = buf ? SF_OK : sf_err_set(err, SF_ENOMEM, "out of memory for a shard chunk");
    while (rc == SF_OK) {
        size_t n = fread(buf, 1, SF_FLEET_CHUNK, f);
        if (n < SF_FLEET_CHUNK && ferror(f)) {
            rc = sf_err_set(err, SF_EIO, "%s: cannot read: %s", jt->path, strerror(errno));
            break;
        }
        Spirefleet__Envelope ce = SPIREFLEET__ENVELOPE__INIT;
        Spirefleet__ShardChunk ch = SPIREFLEET__SHARD_CHUNK__INIT;
        ch.job_id = jt->spec.job_id;
        ch.offset = off;
        ch.data.data = buf;
        ch.data.len = n;
        ch.last = off + n >= size;
        ce.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_CHUNK;
        ce.shard_chunk = &ch;
        if (send_env(c, &ce) < 0)
            rc = sf_err_set(err, SF_EIO, "%s: cannot send shard_chunk at byte %llu: %s",
                            c->endpoint, (unsigned long long)off, zmq_strerror(errno));
        off += n;
        keep_alive(c);
        if (ch.last || n == 0)
            break;
    }
    free(buf);
    fclose(f);
    if (rc < 0)
        return rc;
    /* The coordinator verifies the whole shard before answering; a
     * coordinator that falls silent for its liveness window meanwhile is
     * reconnected to, and the shard offered again (a job it stored
     * meanwhile answers "already done"). */
    r = wait_ack(c, jt->spec.job_id, wait_ms + 120000);
    if (!r)
        return sf_err_set(err, SF_ETIMEOUT, "no verdict on the uploaded shard");
    rc = ack_verdict(r->shard_ack, retry_ms, err);
    sf_wire_free(r);
    return rc;
}

static void send_job_failed(conn *c, uint64_t job, const char *why) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__JobFailed jf = SPIREFLEET__JOB_FAILED__INIT;
    jf.job_id = job;
    jf.reason = (char *)why;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_JOB_FAILED;
    env.job_failed = &jf;
    send_env(c, &env);
}

/* Wait `ms` on the socket (stopping early on a stop request), heartbeating
 * for the held jobs. */
static void hold_on(conn *c, const sf_worker_opts *o, int ms) {
    uint64_t until = sf_now_ns() + (uint64_t)ms * 1000000ull;
    while (sf_now_ns() < until && !stopping(o) && !coordinator_dead(c) && !c->need_hello) {
        keep_alive(c);
        Spirefleet__Envelope *r = recv_env(c, 100);
        sf_wire_free(r);
    }
}

/* Upload a finished job's shard (retrying across reconnects) and free it.
 * A coordinator whose disk is full answers retry_later: the shard is kept
 * and offered again with exponential backoff (up to RETRY_LATER_MAX_MS)
 * for as long as that lasts, heartbeating meanwhile, and never reported as
 * failed. On a stop request one try is made, and a shard that could not be
 * delivered stays in the scratch dir. */
static void deliver(conn *c, const sf_worker_opts *o, job_thread *jt, sf_err *err) {
    c->held[1] = jt->spec.job_id;
    int delivered = 0, backoff = 0;
    for (int attempt = 1; attempt <= 5 && !delivered; attempt++) {
        if (o->stop && *o->stop >= 2)
            break;
        sf_err ue = {0};
        int retry_ms = 0;
        int u = upload(c, jt, jt->attempt, &retry_ms, &ue);
        if (u == SF_OK) {
            unlink(jt->path);
            delivered = 1;
            break;
        }
        if (u == SF_EFULL) {
            /* not the shard's fault: does not count as an attempt */
            attempt--;
            backoff = backoff ? backoff * 2 : retry_ms;
            if (backoff > RETRY_LATER_MAX_MS)
                backoff = RETRY_LATER_MAX_MS;
            logf_(c,
                  "job %llu: the coordinator cannot store the shard now (%s); keeping it, "
                  "offering it again in %d ms",
                  (unsigned long long)jt->spec.job_id, ue.msg, backoff);
            if (stopping(o))
                break;
            hold_on(c, o, backoff);
        } else {
            logf_(c, "job %llu: upload attempt %d failed: %s", (unsigned long long)jt->spec.job_id,
                  attempt, ue.msg);
            if (u == SF_ECORRUPT) {
                send_job_failed(c, jt->spec.job_id, ue.msg);
                unlink(jt->path);
                delivered = 1; /* refused: nothing left to deliver */
                break;
            }
            backoff = 0;
        }
        if (stopping(o) && u != SF_EFULL)
            break;
        session fresh;
        if ((coordinator_dead(c) || c->need_hello) && hello(c, o, &fresh, 0, err) < 0)
            break;
    }
    if (!delivered)
        logf_(c, "job %llu: not delivered; its shard stays at %s",
              (unsigned long long)jt->spec.job_id, jt->path);
    c->held[1] = 0;
    free(jt);
}

/* Play one job while keeping the connection alive. The previous job's shard
 * (*pending) is uploaded while this one plays; this job's shard becomes the
 * new *pending, uploaded with the next job or before the worker waits or
 * leaves (deliver()). So a worker never idles while the coordinator stores
 * and verifies a shard. */
static int do_job(conn *c, const sf_worker_opts *o, session *s, const Spirefleet__Job *job,
                  const char *scratch, sf_batch_evaluator *const ev[3], job_thread **pending,
                  sf_err *err) {
    job_thread *jt = calloc(1, sizeof *jt);
    if (!jt)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    jt->s = s;
    jt->attempt = job->attempt;
    jt->spec.job_id = job->job_id;
    jt->spec.seed_start = job->seed_start;
    jt->spec.seed_count = job->seed_count;
    jt->opts.threads = o->threads > 0 ? o->threads : (int)s->cfg.workers.threads;
    jt->opts.fights_per_thread =
        o->fights_per_thread > 0 ? o->fights_per_thread : (int)s->cfg.workers.fights_per_thread;
    jt->opts.worker_id = c->worker_id;
    sf_zsec_key_id(c->curve.on ? c->curve.me.pub : NULL, jt->key_id);
    gethostname(jt->host, sizeof jt->host - 1);
    jt->opts.worker_key_id = jt->key_id;
    jt->opts.worker_host = jt->host;
    jt->opts.evaluator = ev[0];
    jt->opts.side_evaluator[0] = ev[1];
    jt->opts.side_evaluator[1] = ev[2];
    jt->opts.stop = &jt->abandon;
    jt->opts.on_progress = on_progress;
    jt->opts.progress_ctx = jt;
    snprintf(jt->path, sizeof jt->path, "%s/%s-job%06llu-a%u.shard", scratch, s->cfg.name,
             (unsigned long long)job->job_id, job->attempt);
    unlink(jt->path); /* a leftover of an earlier attempt */
    pthread_t th;
    int why = pthread_create(&th, NULL, job_main, jt);
    if (why != 0) {
        free(jt);
        return sf_err_set(err, SF_EIO, "cannot start the job thread: %s", strerror(why));
    }
    logf_(c, "job %llu: seeds %llu..%llu", (unsigned long long)job->job_id,
          (unsigned long long)job->seed_start,
          (unsigned long long)(job->seed_start + job->seed_count - 1));
    c->held[0] = job->job_id;
    if (*pending) {
        deliver(c, o, *pending, err);
        *pending = NULL;
    }
    uint64_t last_hb = 0, sent_labels = (uint64_t)-1;
    while (!atomic_load(&jt->finished)) {
        if (stopping(o))
            jt->abandon = 1;
        uint64_t now = sf_now_ns();
        if (now - last_hb >= (uint64_t)c->hb_ms * 1000000ull) {
            send_heartbeat(c, job->job_id);
            uint64_t labels = atomic_load(&jt->labels);
            if (labels != sent_labels) {
                Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
                Spirefleet__Progress p = SPIREFLEET__PROGRESS__INIT;
                p.job_id = job->job_id;
                p.fights_done = (uint32_t)atomic_load(&jt->fights);
                p.labels_done = labels;
                env.body_case = SPIREFLEET__ENVELOPE__BODY_PROGRESS;
                env.progress = &p;
                send_env(c, &env);
                sent_labels = labels;
            }
            last_hb = now;
        }
        Spirefleet__Envelope *r = recv_env(c, 100);
        if (r) {
            if (r->body_case == SPIREFLEET__ENVELOPE__BODY_STOP)
                jt->abandon = 1;
            sf_wire_free(r);
        }
        if (coordinator_dead(c) || c->need_hello) {
            /* keep playing; reconnect so the result can be delivered */
            logf_(c, "coordinator %s; reconnecting", c->need_hello ? "restarted" : "silent");
            session fresh;
            if (hello(c, o, &fresh, 0, err) == SF_OK && strcmp(fresh.digest, s->digest))
                jt->abandon = 1;
        }
    }
    pthread_join(th, NULL);
    c->held[0] = 0;
    if (jt->rc < 0) {
        const char *why = jt->rc == SF_ESTATE ? SF_JOB_ABANDONED : jt->err.msg;
        logf_(c, "job %llu: %s", (unsigned long long)job->job_id, why);
        send_job_failed(c, job->job_id, why);
        unlink(jt->path);
        int rc = jt->abandon ? SF_ETIMEOUT : SF_OK;
        free(jt);
        return rc;
    }
    logf_(c, "job %llu: %llu labels from %llu fights in %.1f s", (unsigned long long)job->job_id,
          (unsigned long long)jt->res.records, (unsigned long long)jt->res.fights, jt->res.seconds);
    *pending = jt;
    return SF_OK;
}

/* ------------------------------------------------------------------------
 * The loop
 * ---------------------------------------------------------------------- */

/* ------------------------------------------------------------------------
 * The loop: sf_worker_run's steps
 * ---------------------------------------------------------------------- */

/* What sf_worker_run holds; its steps below share it. */
typedef struct worker {
    const sf_worker_opts *o;
    conn c;
    session *s; /* the run config and digest from Welcome */
    /* [0] the self-play network (net runs), [1] [2] the champion's and the
     * candidate's (gate sides with a net evaluator); NULL otherwise */
    sf_batch_evaluator *ev[3];
    char scratch[1024];     /* shards before upload */
    job_thread *pending;    /* a finished job whose shard is not yet uploaded */
    int jobs;               /* jobs taken */
    int welcomed;           /* the coordinator admitted it (Welcome) */
    uint64_t started;       /* monotonic ns: sf_worker_opts.serve_ms counts from here */
    sf_worker_end end;      /* how the run ended for it (sf_worker_exit) */
    sf_wm *models;          /* net self-play with model.url: fetched models (models.h) */
    int fetch_backoff_ms;   /* the wait after a failed fetch (fetch_backoff) */
    char model_cache[1100]; /* --model-cache, or <scratch>/models */
} worker;

/* Step 1: the worker's id, its scratch directory, a ZeroMQ context. */
static int worker_setup(worker *w, sf_err *err) {
    const sf_worker_opts *o = w->o;
    conn *c = &w->c;
    c->endpoint = o->endpoint;
    c->endpoint_file = o->endpoint_file;
    c->backoff_max_ms = o->endpoint_file ? BACKOFF_FILE_MAX_MS : BACKOFF_MAX_MS;
    if (c->endpoint_file)
        c->endpoint = c->from_file; /* "" until the file is read */
    c->log = o->log;
    c->log_ctx = o->log_ctx;
    c->yield = o->yield;
    c->hb_ms = 1000;
    c->liveness = 5;
    if (o->worker_id) {
        snprintf(c->worker_id, sizeof c->worker_id, "%s", o->worker_id);
    } else {
        char host[40] = "host";
        gethostname(host, sizeof host - 1);
        snprintf(c->worker_id, sizeof c->worker_id, "%s-%d", host, (int)getpid());
    }
    const char *tmp = getenv("TMPDIR");
    if (o->scratch_dir)
        snprintf(w->scratch, sizeof w->scratch, "%s", o->scratch_dir);
    else
        snprintf(w->scratch, sizeof w->scratch, "%s/spirefleet-%s", tmp && *tmp ? tmp : "/tmp",
                 c->worker_id);
    if (sf_mkdir_p(w->scratch) < 0)
        return sf_err_set(err, SF_EIO, "%s: cannot create the scratch dir: %s", w->scratch,
                          strerror(errno));
    snprintf(w->model_cache, sizeof w->model_cache, "%s%s",
             o->model_cache ? o->model_cache : w->scratch, o->model_cache ? "" : "/models");
    /* missing keys are waited for (hello()); bad ones are an error now */
    sf_err ke = {0};
    int rc = sf_zsec_client_load(o->keys_dir, SF_ZSEC_WORKER_NAME, &c->curve, &ke);
    if (rc < 0 && rc != SF_ENOTFOUND)
        return sf_err_set(err, rc, "--keys: %s", ke.msg);
    c->zctx = zmq_ctx_new();
    if (!c->zctx)
        return sf_err_set(err, SF_EIO, "cannot start ZeroMQ: %s", zmq_strerror(zmq_errno()));
    w->s = calloc(1, sizeof *w->s);
    return w->s ? SF_OK : sf_err_set(err, SF_ENOMEM, "out of memory");
}

/* Where gpu-evald serves: --evald, the file it publishes (--evald-file),
 * else the run's evald.endpoint. Returns 0, or -1 with why not in `why`
 * (the file is missing or names no usable endpoint). */
static int evald_endpoint(const worker *w, char *out, size_t cap, char *why, size_t why_cap) {
    const sf_worker_opts *o = w->o;
    if (!o->evald_file) {
        snprintf(out, cap, "%s", o->evald_endpoint ? o->evald_endpoint : w->s->cfg.evald.endpoint);
        return 0;
    }
    sf_err e = {0};
    if (sf_endpoint_file_read(o->evald_file, out, cap, &e) < 0) {
        snprintf(why, why_cap, "%s", e.msg);
        return -1;
    }
    const char *bad = sf_endpoint_problem(out);
    if (bad)
        snprintf(why, why_cap, "%.180s: '%.180s': %s", o->evald_file, out, bad);
    return bad ? -1 : 0;
}

/* ------------------------------------------------------------------------
 * Waiting for gpu-evald, and saying so
 * ---------------------------------------------------------------------- */

/* A probe of an evaluator (sf_worker_evaluator_probe) on a thread of its
 * own: it may take evald.timeout_ms per try, and meanwhile this thread
 * heartbeats, so the coordinator keeps the worker alive and learns why it
 * takes no job. */
typedef struct probe_run {
    const sf_batch_evaluator *ev;
    sf_err err;
    int rc;
    atomic_int done;
} probe_run;

static void *probe_main(void *arg) {
    probe_run *p = arg;
    p->rc = sf_worker_evaluator_probe(p->ev, &p->err);
    atomic_store(&p->done, 1);
    return NULL;
}

/* Wait up to `ms` (less when *done becomes non-zero, or on a stop or a
 * drain), heartbeating with c->waiting; a coordinator that restarted or
 * fell silent meanwhile is said Hello to again, so it learns the reason
 * too. */
static void wait_heartbeating(worker *w, int ms, const atomic_int *done) {
    conn *c = &w->c;
    uint64_t until = sf_now_ns() + (uint64_t)ms * 1000000ull;
    while (sf_now_ns() < until && !(done && atomic_load(done)) && !leaving(w->o, 1)) {
        keep_alive(c);
        sf_wire_free(recv_env(c, 100));
        if (coordinator_dead(c) || c->need_hello) {
            session *fresh = malloc(sizeof *fresh);
            sf_err he = {0};
            if (fresh)
                hello(c, w->o, fresh, 1, &he);
            free(fresh);
        }
    }
}

/* Where an evaluator's endpoint came from, for "check ..." advice. */
static const char *evald_source(const sf_worker_opts *o) {
    return o->evald_file       ? "the file --evald-file names (gpu-evald writes it when it serves)"
           : o->evald_endpoint ? "--evald"
                               : "evald.endpoint in the run's config";
}

/* Probe evaluator `ev` (`what` names it), heartbeating meanwhile; once it
 * has been silent EVALD_SILENT_MS, and again at doubling intervals, say on
 * the worker's log what it waits for and what to do, and tell the
 * coordinator (c->waiting). `since` is when the wait began (monotonic ns),
 * `*next_say_ms` the wait after which to say it next. SF_OK when it
 * answered; else the probe's error in err. A stop or a drain does not cut
 * the probe short: it ends within evald.timeout_ms per try. */
static int probe_telling(worker *w, const sf_batch_evaluator *ev, const char *what, uint64_t since,
                         int *next_say_ms, sf_err *err) {
    conn *c = &w->c;
    probe_run *p = calloc(1, sizeof *p);
    if (!p)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    p->ev = ev;
    pthread_t th;
    int why = pthread_create(&th, NULL, probe_main, p);
    if (why != 0) {
        free(p);
        return sf_err_set(err, SF_EIO, "cannot start the evaluator probe: %s", strerror(why));
    }
    while (!atomic_load(&p->done)) {
        if (leaving(w->o, 1)) { /* the probe ends within its own timeouts */
            usleep(50000);
            continue;
        }
        wait_heartbeating(w, 100, &p->done);
        int waited_ms = (int)((sf_now_ns() - since) / 1000000ull);
        if (atomic_load(&p->done) || waited_ms < EVALD_SILENT_MS)
            continue;
        snprintf(c->waiting, sizeof c->waiting, "%.130s does not answer (%d s)", what,
                 waited_ms / 1000);
        if (waited_ms < *next_say_ms)
            continue;
        logf_(c, "%s does not answer (%d s): start it, or check %s; retrying", what,
              waited_ms / 1000, evald_source(w->o));
        *next_say_ms *= 2;
    }
    pthread_join(th, NULL); /* the probe ends within its own timeouts */
    int rc = p->rc;
    if (rc < 0)
        sf_err_set(err, rc, "%s", p->err.msg);
    free(p);
    return rc;
}

/* Start one network evaluator and wait until it answers: labels or pairs
 * made of fallbacks would be worth little. A remote one goes where
 * evald_endpoint() says; with an evald file each try reads the file again,
 * so a gpu-evald that starts late is found, and so does every job's session
 * later (sf_worker_evaluator_follow): a gpu-evald restarted elsewhere
 * serves the next job. While it waits the worker heartbeats and says what
 * it waits for (probe_telling). */
static int start_one(worker *w, const char *what, const char *sha, const char *bundle,
                     sf_batch_evaluator **ev, sf_err *err) {
    const sf_worker_opts *o = w->o;
    conn *c = &w->c;
    sf_run_config *cfg = malloc(sizeof *cfg); /* the run's, with the endpoint found */
    if (!cfg)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    int follow = o->evald_file && !bundle;
    char last_why[SF_ERR_MSG_MAX] = "";
    int rc = SF_OK, next_say_ms = EVALD_SILENT_MS;
    uint64_t since = sf_now_ns();
    for (int backoff = 1000; !leaving(o, 1);) {
        char why[SF_ERR_MSG_MAX] = "";
        *cfg = w->s->cfg;
        if (!bundle && evald_endpoint(w, cfg->evald.endpoint, sizeof cfg->evald.endpoint, why,
                                      sizeof why) < 0) {
            if (strcmp(why, last_why))
                logf_(c, "waiting for gpu-evald's endpoint: %s", why);
            memcpy(last_why, why, sizeof why);
            snprintf(c->waiting, sizeof c->waiting, "gpu-evald's endpoint: %.120s", why);
            wait_heartbeating(w, 1000, NULL);
            continue;
        }
        if (!*ev) {
            rc = sf_worker_evaluator_new(cfg, sha, bundle, ev, err);
            if (rc == SF_OK && follow)
                rc = sf_worker_evaluator_follow(*ev, o->evald_file);
            if (rc < 0)
                break;
            logf_(c, "%s evaluator: %s, model %.12s...", what,
                  bundle ? "in-process cpu backend" : cfg->evald.endpoint, (*ev)->model_sha256);
        }
        char who[SF_CFG_PATH + 32];
        snprintf(who, sizeof who, "%s%s", bundle ? "the in-process network " : "gpu-evald at ",
                 bundle ? bundle : cfg->evald.endpoint);
        sf_err pe = {0};
        if (probe_telling(w, *ev, who, since, &next_say_ms, &pe) == SF_OK)
            break;
        if (leaving(o, 1))
            break;
        int waited = (int)((sf_now_ns() - since) / 1000000000ull);
        if (pe.code == SF_ENOTFOUND && !bundle) { /* it answers, but not with this model yet */
            snprintf(c->waiting, sizeof c->waiting, "%.100s: model %.12s... not served yet (%d s)",
                     who, (*ev)->model_sha256, waited);
            logf_(c,
                  "%s does not serve model %.12s... yet (%d s): it loads it from its --models "
                  "directory, or fetches it first with --models-url (its log says which); "
                  "retrying in %d ms",
                  who, (*ev)->model_sha256, waited, backoff);
        } else {
            snprintf(c->waiting, sizeof c->waiting, "%.130s does not answer (%d s)", who, waited);
            logf_(c, "%s does not answer (%d s: %s): start it, or check %s; retrying in %d ms", who,
                  waited, pe.msg, bundle ? "the bundle" : evald_source(o), backoff);
        }
        if (follow) { /* read the file again: it may name a new server */
            sf_worker_evaluator_free(*ev);
            *ev = NULL;
        }
        wait_heartbeating(w, backoff, NULL);
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
    }
    c->waiting[0] = '\0';
    free(cfg);
    return rc;
}

/* Step 3: the network evaluators the run needs, answering before any job
 * is taken: a self-play run's with search.evaluator net; a gate run's for
 * each side whose evaluator is net. */
static int worker_start_evaluator(worker *w, sf_err *err) {
    const sf_worker_opts *o = w->o;
    const sf_run_config *cfg = &w->s->cfg;
    if (strcmp(cfg->kind, "gate")) {
        int net = sf_job_side_external(cfg, -1);
        if (o->model_url) /* this worker's mirror of the run's model.url */
            snprintf(w->s->cfg.model.url, sizeof w->s->cfg.model.url, "%s", o->model_url);
        if (o->fetch_models && (!net || !cfg->model.url[0]))
            return sf_err_set(err, SF_EINVAL, "--fetch-models: this run %s",
                              net ? "sets no model.url to fetch from (or give --model-url)"
                                  : "evaluates with rollouts");
        if (net && cfg->model.url[0]) {
            int rc = sf_wm_open(cfg, o->fetch_models, w->model_cache, o->evald_endpoint,
                                sf_mix64((uint64_t)getpid() ^ sf_now_ns()), &w->models, err);
            if (rc < 0) {
                sf_err_prefix(err, "%s", o->model_url ? "--model-url" : "model.url");
                return rc;
            }
        }
        if (o->fetch_models) /* each job's model from the cache, fetched when missing:
                                job_network(), as for a followed run */
            return SF_OK;
        if (cfg->model.champion[0] && o->local_bundle)
            return sf_err_set(err, SF_EINVAL,
                              "--local-bundle pins one model, but this run follows the champion "
                              "of %s (model.champion): each job names its own",
                              cfg->model.champion);
        if (cfg->model.champion[0]) /* each job names its model: job_evaluator() */
            return SF_OK;
        return sf_job_side_external(cfg, -1)
                   ? start_one(w, "network", NULL, o->local_bundle, &w->ev[0], err)
                   : SF_OK;
    }
    if (o->local_bundle)
        return sf_err_set(err, SF_EINVAL,
                          "--local-bundle names one model; a gate run has two sides (evaluate "
                          "them in-process from their config bundles with --local-sides)");
    static const char *const names[2] = {"champion", "candidate"};
    for (int side = 0; side < 2; side++) {
        const struct sf_cfg_gate_side *g = sf_config_gate_side(cfg, side);
        if (!sf_job_side_external(cfg, side))
            continue;
        int rc = start_one(w, names[side], g->sha256, o->local_sides ? g->bundle : NULL,
                           &w->ev[1 + side], err);
        if (rc < 0)
            return rc;
    }
    return SF_OK;
}

/* The network evaluator for a self-play job: the job names its model (the
 * coordinator bound it at the first lease: the pinned one, or the
 * champion of a followed registry), and a job whose model this worker's
 * evaluator does not serve gets one that does — gpu-evald loads a new
 * champion on its first request. Returns 1 when the job can be played, 0
 * when it was given back (a model that is no SHA-256, or not the one this
 * run evaluates with; logged), or a fatal error. */
enum { FETCH_BACKOFF_MAX_MS = 60000 };

/* After a model could not be fetched: wait, heartbeating and holding no
 * lease, before asking for another job (1 s, doubling to
 * FETCH_BACKOFF_MAX_MS), so a mirror without the model costs neither a
 * stream of give-backs nor the jobs' failure counts. */
static void fetch_backoff(worker *w) {
    w->fetch_backoff_ms = w->fetch_backoff_ms ? w->fetch_backoff_ms * 2 : 1000;
    if (w->fetch_backoff_ms > FETCH_BACKOFF_MAX_MS)
        w->fetch_backoff_ms = FETCH_BACKOFF_MAX_MS;
    wait_heartbeating(w, w->fetch_backoff_ms, NULL);
}

/* Fetch model `sha` on the helper thread now, heartbeating until it is
 * here, failed, or the worker is asked to leave (the helper is cancelled
 * by sf_wm_close). Status shows the worker waiting meanwhile. */
static void fetch_heartbeating(worker *w, const char *sha) {
    conn *c = &w->c;
    char why[SF_ERR_MSG_MAX] = "", msg[SF_ERR_MSG_MAX + 128];
    snprintf(c->waiting, sizeof c->waiting, "fetching model %.12s...", sha);
    sf_wm_state st = SF_WM_NONE;
    for (int started = 0; !leaving(w->o, 1);) {
        st = sf_wm_state_of(w->models, sha, why, sizeof why);
        if (st == SF_WM_HELD || (st == SF_WM_FAILED && started))
            break;
        if (st != SF_WM_FETCHING && sf_wm_fetch_start(w->models, sha))
            started = 1; /* else the helper is busy with another: wait for it */
        if (sf_wm_poll(w->models, msg, sizeof msg))
            logf_(c, "%s", msg);
        wait_heartbeating(w, 200, NULL);
    }
    if (sf_wm_poll(w->models, msg, sizeof msg))
        logf_(c, "%s", msg);
    c->waiting[0] = '\0';
    if (st == SF_WM_HELD)
        w->fetch_backoff_ms = 0;
    else if (st == SF_WM_FAILED)
        fetch_backoff(w);
}

static int job_network(worker *w, const Spirefleet__Job *job, const char *want, sf_err *err);

static int job_evaluator(worker *w, const Spirefleet__Job *job, sf_err *err) {
    const sf_run_config *cfg = &w->s->cfg;
    if (!strcmp(cfg->kind, "gate"))
        return 1;
    const char *want = job->model_sha256 ? job->model_sha256 : "";
    int net = sf_job_side_external(cfg, -1);
    const char *why = NULL;
    if (!net && strcmp(want, "rollout"))
        why = "this run evaluates with rollouts";
    else if (net && !sf_sha256_hex_canonical(want))
        why = "not 64 lower-case hex digits";
    else if (net && !cfg->model.champion[0] && strcmp(want, cfg->model.sha256))
        why = "not the run's model.sha256";
    if (why) {
        char shown[80];
        sf_str_printable(shown, sizeof shown, want);
        logf_(&w->c, "job %llu names model '%s': %s; given back", (unsigned long long)job->job_id,
              shown, why);
        send_job_failed(&w->c, job->job_id, SF_JOB_ABANDONED);
        return 0;
    }
    if (!net)
        return 1;
    int rc = job_network(w, job, want, err);
    /* then the next champion, in the background: after the job's own
     * model is here, so the two fetches never race for one file */
    if (rc > 0 && w->models && job->next_model_sha256 &&
        sf_wm_prefetch(w->models, job->next_model_sha256))
        logf_(&w->c, "fetching model %.12s... in the background (within %u s)",
              job->next_model_sha256, cfg->model.stagger_s);
    return rc;
}

/* The network evaluator for job's model `want`: the one in hand, or a new
 * one (its bundle fetched now with --fetch-models). 1, 0 (given back), or
 * a fatal error. */
static int job_network(worker *w, const Spirefleet__Job *job, const char *want, sf_err *err) {
    if (w->ev[0] && !strcmp(w->ev[0]->model_sha256, want))
        return 1;
    sf_worker_evaluator_free(w->ev[0]);
    w->ev[0] = NULL;
    char bundle[SF_CFG_PATH + 96];
    if (w->o->fetch_models) { /* in-process: the job's bundle from the cache */
        if (sf_wm_state_of(w->models, want, NULL, 0) != SF_WM_HELD) {
            /* not here: the job goes back (not a failure: another worker
             * may hold its model) and this worker fetches it holding no
             * lease, heartbeating, so a long download costs no expiry */
            logf_(&w->c, "job %llu: model %.12s... is not here; given back while it is fetched",
                  (unsigned long long)job->job_id, want);
            send_job_failed(&w->c, job->job_id, SF_JOB_ABANDONED);
            fetch_heartbeating(w, want);
            return 0;
        }
        sf_fetch_stats st;
        sf_err fe = {0};
        int rc = sf_wm_fetch_now(w->models, want, bundle, sizeof bundle, &st, &fe);
        if (rc == SF_ENOMEM)
            return sf_err_set(err, rc, "%s", fe.msg);
        if (rc < 0) { /* the cached copy went bad and could not be fetched again */
            logf_(&w->c, "job %llu: %s; given back", (unsigned long long)job->job_id, fe.msg);
            send_job_failed(&w->c, job->job_id, SF_JOB_ABANDONED);
            fetch_backoff(w);
            return 0;
        }
        if (!st.cached)
            logf_(&w->c, "job %llu: model %.12s... fetched again (%llu bytes in %.1f s)",
                  (unsigned long long)job->job_id, want, (unsigned long long)st.downloaded,
                  st.seconds);
    }
    int rc = start_one(w, "network", want, w->o->fetch_models ? bundle : NULL, &w->ev[0], err);
    if (rc == SF_OK && w->ev[0] && w->models)
        sf_wm_mark_ready(w->models, want); /* it serves this one now */
    return rc < 0 ? rc : w->ev[0] != NULL;
}

/* Ask for a job and wait for the answer, heartbeating meanwhile. NULL when
 * asked to stop, or when the coordinator fell silent (then *rc is the
 * reconnection's result). */
static Spirefleet__Envelope *worker_ask(worker *w, int *rc, sf_err *err) {
    conn *c = &w->c;
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__JobRequest jr = SPIREFLEET__JOB_REQUEST__INIT;
    jr.worker_id = c->worker_id;
    char ready[SF_WM_READY_MAX][SF_SHA256_HEX_LEN + 1];
    char *ready_p[SF_WM_READY_MAX];
    if (w->models) { /* which models a new champion's jobs may wait for */
        char msg[SF_ERR_MSG_MAX + 128];
        if (sf_wm_poll(w->models, msg, sizeof msg))
            logf_(c, "%s", msg);
        jr.fetches_models = 1;
        jr.n_ready_models = (size_t)sf_wm_ready(w->models, ready);
        for (size_t i = 0; i < jr.n_ready_models; i++)
            ready_p[i] = ready[i];
        jr.ready_models = ready_p;
    }
    env.body_case = SPIREFLEET__ENVELOPE__BODY_JOB_REQUEST;
    env.job_request = &jr;
    send_env(c, &env);
    Spirefleet__Envelope *r = NULL;
    uint64_t asked = sf_now_ns();
    while (!r && !stopping(w->o)) {
        r = recv_env(c, 200);
        if (r && r->body_case == SPIREFLEET__ENVELOPE__BODY_HEARTBEAT) {
            sf_wire_free(r);
            r = NULL;
        }
        if (!r && sf_now_ns() - asked > (uint64_t)c->hb_ms * 1000000ull) {
            send_heartbeat(c, 0);
            asked = sf_now_ns();
        }
        if (!r && coordinator_dead(c)) {
            logf_(c, "coordinator silent; reconnecting");
            *rc = hello(c, w->o, w->s, w->pending == NULL, err);
            break;
        }
    }
    return r;
}

/* A Wait: upload the pending shard if there is one (nothing to overlap it
 * with), else wait on the socket, not asleep, for RunComplete or Stop.
 * Returns 1 when the run is over for this worker. */
static int worker_wait(worker *w, const Spirefleet__Wait *wt, sf_err *err) {
    if (w->pending) {
        deliver(&w->c, w->o, w->pending, err);
        w->pending = NULL;
        return 0;
    }
    if (w->o->yield) { /* no job here now: the caller's next run may have one */
        w->end = SF_WORKER_END_IDLE;
        return 1;
    }
    int ms = wt->retry_ms ? (int)wt->retry_ms : 500;
    uint64_t until = sf_now_ns() + (uint64_t)ms * 1000000ull;
    while (!leaving(w->o, 1) && sf_now_ns() < until) {
        Spirefleet__Envelope *p = recv_env(&w->c, 50);
        if (!p)
            continue;
        int body = p->body_case;
        sf_wire_free(p);
        if (body == SPIREFLEET__ENVELOPE__BODY_RUN_COMPLETE ||
            body == SPIREFLEET__ENVELOPE__BODY_STOP) {
            logf_(&w->c, body == SPIREFLEET__ENVELOPE__BODY_STOP ? "told to stop" : "run complete");
            return 1;
        }
    }
    return 0;
}

/* The coordinator's answer to a job request (freed here). Returns 1 when
 * the run is over for this worker; *rc receives a fatal error. */
static int worker_answer(worker *w, Spirefleet__Envelope *r, int *rc, sf_err *err) {
    int over = 0;
    switch (r->body_case) {
    case SPIREFLEET__ENVELOPE__BODY_JOB:
        if (draining(w->o)) { /* asked for before the drain began: give it back */
            logf_(&w->c, "job %llu: draining, given back", (unsigned long long)r->job->job_id);
            send_job_failed(&w->c, r->job->job_id, SF_JOB_ABANDONED);
            over = 1;
            break;
        }
        *rc = job_evaluator(w, r->job, err);
        if (*rc <= 0)
            break;
        *rc = do_job(&w->c, w->o, w->s, r->job, w->scratch, w->ev, &w->pending, err);
        if (*rc == SF_ETIMEOUT)
            *rc = SF_OK; /* abandoned on request */
        w->jobs++;
        break;
    case SPIREFLEET__ENVELOPE__BODY_WAIT: over = worker_wait(w, r->wait, err); break;
    case SPIREFLEET__ENVELOPE__BODY_RUN_COMPLETE:
        logf_(&w->c, "run complete");
        over = 1;
        break;
    case SPIREFLEET__ENVELOPE__BODY_STOP:
        logf_(&w->c, "told to stop");
        over = 1;
        break;
    case SPIREFLEET__ENVELOPE__BODY_ERROR:
        logf_(&w->c, "coordinator error: %s", r->error->message ? r->error->message : "");
        if (w->c.need_hello)
            *rc = hello(&w->c, w->o, w->s, w->pending == NULL, err); /* it forgot us: again */
        break;
    default: break;
    }
    sf_wire_free(r);
    return over;
}

/* Step 4: take, play and upload jobs until the run is over, a stop is
 * asked, max_jobs are done, a drain ends, or an error is fatal. */
static int worker_loop(worker *w, sf_err *err) {
    const sf_worker_opts *o = w->o;
    int rc = SF_OK;
    while (rc == SF_OK && !stopping(o)) {
        /* between two jobs (never in one): served long enough here */
        if (o->yield && o->serve_ms &&
            sf_now_ns() - w->started >= (uint64_t)o->serve_ms * 1000000ull) {
            w->end = SF_WORKER_END_SERVED;
            break;
        }
        if ((o->max_jobs && w->jobs >= o->max_jobs) || draining(o)) {
            w->end = SF_WORKER_END_LEFT;
            if (w->pending)
                deliver(&w->c, o, w->pending, err);
            w->pending = NULL;
            if (draining(o))
                logf_(&w->c, "drained after %d job(s); leaving", w->jobs);
            break;
        }
        Spirefleet__Envelope *r = worker_ask(w, &rc, err);
        if (r && worker_answer(w, r, &rc, err))
            break;
    }
    return rc;
}

/* Leaving a run it was admitted to with sf_worker_opts.yield: a Goodbye,
 * so that the coordinator frees the place now rather than after its
 * liveness window. Called holding nothing (the pending shard delivered);
 * the socket lingers a moment so the message leaves. */
static void say_goodbye(worker *w) {
    conn *c = &w->c;
    if (!w->o->yield || !w->welcomed || !c->sock || coordinator_dead(c))
        return;
    static const char *const why[] = {
        [SF_WORKER_END_OVER] = "the run is over for it",
        [SF_WORKER_END_LEFT] = "stopping",
        [SF_WORKER_END_IDLE] = "no job here now; serving its next run",
        [SF_WORKER_END_SERVED] = "re-checking its runs of higher priority",
    };
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Goodbye g = SPIREFLEET__GOODBYE__INIT;
    g.worker_id = c->worker_id;
    g.reason = (char *)(w->end < sizeof why / sizeof why[0] && why[w->end] ? why[w->end] : "");
    env.body_case = SPIREFLEET__ENVELOPE__BODY_GOODBYE;
    env.goodbye = &g;
    int linger = 1000;
    zmq_setsockopt(c->sock, ZMQ_LINGER, &linger, sizeof linger);
    send_env(c, &env);
}

int sf_worker_run(const sf_worker_opts *o, sf_err *err) {
    if (!o || !o->endpoint == !o->endpoint_file)
        return sf_err_set(err, SF_EINVAL, "worker: give a coordinator endpoint or its file");
    if (!!o->local_bundle + !!o->evald_endpoint + !!o->evald_file + !!o->fetch_models > 1)
        return sf_err_set(err, SF_EINVAL,
                          "worker: local_bundle, evald_endpoint, evald_file and fetch_models "
                          "exclude each other");
    if (sodium_init() < 0)
        return sf_err_set(err, SF_EIO, "libsodium failed to initialise");
    worker w = {.o = o, .started = sf_now_ns()};
    int rc = worker_setup(&w, err);
    if (rc == SF_OK) /* step 2: Hello, until Welcome */
        rc = hello(&w.c, o, w.s, 1, err);
    w.welcomed = rc == SF_OK;
    if (rc == SF_OK)
        rc = worker_start_evaluator(&w, err);
    if (rc == SF_OK)
        rc = worker_loop(&w, err);
    if (w.pending) /* finished work is never thrown away */
        deliver(&w.c, o, w.pending, err);
    if (rc == SF_ESTATE && o->yield) { /* refused (hello()): the caller's next run */
        w.end = SF_WORKER_END_REFUSED;
        snprintf(w.c.gave_up, sizeof w.c.gave_up, "%s", err ? err->msg : "refused");
        rc = SF_OK;
    } else if (w.c.gave_up[0]) {
        w.end = SF_WORKER_END_UNREACHABLE;
    } else if (rc < 0 || ((stopping(o) || draining(o)) && w.end == SF_WORKER_END_OVER)) {
        w.end = SF_WORKER_END_LEFT;
    }
    say_goodbye(&w);
    if (o->exit) {
        o->exit->end = w.end;
        snprintf(o->exit->why, sizeof o->exit->why, "%s", w.c.gave_up);
        o->exit->jobs = w.jobs;
    }
    for (int i = 0; i < 3; i++)
        sf_worker_evaluator_free(w.ev[i]);
    sf_wm_close(w.models);
    sf_wire_watch_close(&w.c.watch);
    if (w.c.sock)
        zmq_close(w.c.sock);
    if (w.c.zctx)
        zmq_ctx_term(w.c.zctx);
    free(w.s);
    return rc == SF_ETIMEOUT ? SF_OK : rc;
}
