/*
 * server.c — the coordinator's ROUTER loop: workers, leases, shard intake,
 * status, stop and the trainers' shard listing.
 *
 * One step (sf_coordinator_step): poll, read every waiting message (each
 * handler may queue replies), expire leases of dead or late workers, commit
 * the ledger once for the whole step (synced when a job became done), then
 * send the queued replies. Replies therefore never promise what the ledger
 * has not recorded.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "common/io.h"
#include "common/registry.h"
#include "common/sha256.h"
#include "coordinator/internal.h"
#include "shard/shard.h"

#define NS_PER_MS         1000000ull
#define NS_PER_S          1000000000ull
#define MAX_MSGS_PER_STEP 4096
/* A step stops reading requests once its queued replies hold this many
 * bytes (ShardData replies are up to SF_FLEET_CHUNK each), so a flood of fetches
 * cannot make one step buffer gigabytes; the rest wait in ZeroMQ's queue. */
#define MAX_REPLY_BYTES_PER_STEP (16u << 20)

/* ------------------------------------------------------------------------
 * Small helpers
 * ---------------------------------------------------------------------- */

/* Room for element n of the array *v (capacity *cap elements of `size`
 * bytes): doubled when full, `first` elements at first. 0, or -1 without
 * memory (*v and *cap unchanged). */
static int room_for_one(void **v, int n, int *cap, size_t size, int first) {
    if (n < *cap)
        return 0;
    int want = *cap ? *cap * 2 : first;
    void *t = realloc(*v, size * (size_t)want);
    if (!t)
        return -1;
    *v = t;
    *cap = want;
    return 0;
}

void job_touch(sf_coordinator *co, cjob *j) {
    if (!j->dirty) {
        j->dirty = 1;
        co->dirty[co->ndirty++] = j->id;
    }
}

/* The set of leased jobs, so timers and status cost O(leased), not O(jobs). */
static void leased_add(sf_coordinator *co, cjob *j) {
    j->lease_pos = co->n_leased;
    co->leased[co->n_leased++] = j->id;
}

static void leased_remove(sf_coordinator *co, cjob *j) {
    uint64_t last = co->leased[--co->n_leased];
    co->leased[j->lease_pos] = last;
    co->jobs[last - 1].lease_pos = j->lease_pos;
}

int co_usable_identities(const sf_coordinator *co, int alive_only) {
    int n = 0;
    for (int i = 0; i < co->n_idents; i++)
        n += (!alive_only || co->idents[i].alive > 0) && !co->idents[i].quarantined &&
             !co->idents[i].failing;
    return n;
}

/* Worker wi's liveness, kept per identity too (co_ident.alive). */
static void worker_set_alive(sf_coordinator *co, int wi, int alive) {
    cworker *w = &co->workers[wi];
    if (w->alive == alive)
        return;
    w->alive = alive;
    co_ident *id = co_ident_of(co, wi);
    if (id)
        id->alive = alive ? id->alive + 1 : id->alive - 1;
    if (alive && id && id->alive == 1)
        audit_catch_up(co); /* a second key may be back */
}

/* Whether job j has failed out of the run: reported failed by
 * CO_MAX_FAILURES distinct workers of at least min(CO_MAX_FAILURES, the
 * identities seen) distinct identities. One key cannot fail a job out
 * whatever worker ids it uses once another key has come to play it (a job
 * it failed out before is issued again then: requeue_failing); a run of one
 * key (every local run) needs three of its workers. */
static int job_failed_out(const sf_coordinator *co, const cjob *j) {
    uint32_t seen = co->n_idents > 0 ? (uint32_t)co->n_idents : 1;
    uint32_t need = seen < CO_MAX_FAILURES ? seen : CO_MAX_FAILURES;
    return j->failures >= CO_MAX_FAILURES && j->failed_idents >= need;
}

/* Every queue slot is a distinct job (j->queued), so the ring of njobs
 * never overflows. */
static void queue_push(sf_coordinator *co, uint64_t id) {
    if (co->jobs[id - 1].queued)
        return;
    co->jobs[id - 1].queued = 1;
    co->queue[(co->q_head + co->q_len) % co->njobs] = id;
    co->q_len++;
}

static uint64_t queue_pop(sf_coordinator *co) {
    while (co->q_len > 0) {
        uint64_t id = co->queue[co->q_head];
        co->q_head = (co->q_head + 1) % co->njobs;
        co->q_len--;
        cjob *j = &co->jobs[id - 1];
        j->queued = 0;
        if (j->state == JS_PENDING && !job_failed_out(co, j))
            return id;
    }
    return 0;
}

/* Give back the id queue_pop() just returned, at the head again. */
static void queue_unpop(sf_coordinator *co, uint64_t id) {
    co->q_head = (co->q_head + co->njobs - 1) % co->njobs;
    co->queue[co->q_head] = id;
    co->q_len++;
    co->jobs[id - 1].queued = 1;
}

/* Pending jobs with failure reports that are no longer failed out (another
 * identity arrived) go back into the queue. */
static void requeue_failing(sf_coordinator *co) {
    for (uint64_t k = 0; k < co->n_failing; k++) {
        cjob *j = &co->jobs[co->failing[k] - 1];
        if (j->state == JS_PENDING && !j->queued && !job_failed_out(co, j))
            queue_push(co, j->id);
    }
}

co_ident *co_ident_of(sf_coordinator *co, int wi) {
    int i = wi >= 0 && wi < co->nworkers ? co->workers[wi].who : -1;
    return i >= 0 ? &co->idents[i] : NULL;
}

/* The index of identity `id` in co->idents, added if new; -1 without
 * memory. A new identity may let failed-out jobs back in (requeue). */
static int ident_index(sf_coordinator *co, const char *id) {
    for (int i = 0; i < co->n_idents; i++)
        if (!strcmp(co->idents[i].id, id))
            return i;
    if (room_for_one((void **)&co->idents, co->n_idents, &co->cap_idents, sizeof *co->idents, 8) <
        0)
        return -1;
    co_ident *n = &co->idents[co->n_idents];
    memset(n, 0, sizeof *n);
    snprintf(n->id, sizeof n->id, "%s", id);
    co->n_idents++;
    requeue_failing(co);
    return co->n_idents - 1;
}

static void shard_name(const sf_coordinator *co, uint64_t job, char *out, size_t cap) {
    sf_shard_name(co->cfg.name, job, out, cap);
}

/* ------------------------------------------------------------------------
 * Replies
 * ---------------------------------------------------------------------- */

static void queue_reply(sf_coordinator *co, const uint8_t *ident, size_t ident_len,
                        Spirefleet__Envelope *env) {
    uint8_t *bytes;
    size_t len;
    if (sf_wire_encode(env, &bytes, &len) < 0)
        return;
    if (room_for_one((void **)&co->replies, co->nreplies, &co->cap_replies, sizeof *co->replies,
                     64) < 0) {
        free(bytes);
        return;
    }
    reply *r = &co->replies[co->nreplies++];
    co->reply_bytes += len;
    r->worker = -1;
    memcpy(r->ident, ident, ident_len);
    r->ident_len = ident_len;
    r->bytes = bytes;
    r->len = len;
}

static void flush_replies(sf_coordinator *co) {
    for (int i = 0; i < co->nreplies; i++) {
        reply *r = &co->replies[i];
        /* ROUTER_MANDATORY is off: a reply to a vanished peer is dropped. */
        zmq_send(co->router, r->ident, r->ident_len, ZMQ_SNDMORE | ZMQ_DONTWAIT);
        zmq_send(co->router, r->bytes, r->len, ZMQ_DONTWAIT);
        free(r->bytes);
    }
    co->nreplies = 0;
    co->reply_bytes = 0;
}

static void reply_error(sf_coordinator *co, const uint8_t *ident, size_t len, int code,
                        const char *msg) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ErrorReply e = SPIREFLEET__ERROR_REPLY__INIT;
    e.code = code;
    e.message = (char *)msg;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_ERROR;
    env.error = &e;
    queue_reply(co, ident, len, &env);
}

/* ------------------------------------------------------------------------
 * Workers
 * ---------------------------------------------------------------------- */

static int worker_find(sf_coordinator *co, const uint8_t *ident, size_t len) {
    for (int i = 0; i < co->nworkers; i++)
        if (co->workers[i].ident_len == len && !memcmp(co->workers[i].ident, ident, len))
            return i;
    return -1;
}

static int worker_add(sf_coordinator *co, const uint8_t *ident, size_t len) {
    if (room_for_one((void **)&co->workers, co->nworkers, &co->cap_workers, sizeof *co->workers,
                     16) < 0)
        return -1;
    cworker *w = &co->workers[co->nworkers];
    memset(w, 0, sizeof *w);
    memcpy(w->ident, ident, len);
    w->ident_len = len;
    w->who = -1;
    return co->nworkers++;
}

static void upload_discard(upload *u) {
    sf_sha256_free(u->sha);
    if (u->f)
        fclose(u->f);
    if (u->active && u->path[0])
        unlink(u->path);
    memset(u, 0, sizeof *u);
}

/* Add a done job to the run's totals. */
static void count_done(sf_coordinator *co, const cjob *j) {
    co->st.jobs_done++;
    co->st.shards_stored++;
    co->st.bytes_stored += j->bytes;
    co->st.labels += j->records;
    co->st.fights += j->fights;
    co->st.fights_turn_limit += j->turn_limits;
    co->st.simulations += j->simulations;
    co->st.fallbacks += j->fallbacks;
}

/* Return a leased job to the queue (lease expired, worker died, job failed). */
static void release_job(sf_coordinator *co, cjob *j, int expired) {
    if (j->state != JS_LEASED)
        return;
    j->state = JS_PENDING;
    leased_remove(co, j);
    j->worker = -1;
    j->prog_fights = j->prog_labels = 0;
    job_touch(co, j);
    queue_push(co, j->id);
    if (expired)
        co->st.lease_expiries++;
}

/* internal.h: a done job back to pending (its shard gone from shards/), or a
 * leased one released. */
void co_job_undo(sf_coordinator *co, cjob *j) {
    if (j->state == JS_LEASED) {
        release_job(co, j, 0);
        return;
    }
    if (j->state != JS_DONE)
        return;
    audit_cancel(co, j);
    gate_job_undone(co, j);
    j->maker = -1;
    co->st.jobs_done--;
    co->st.shards_stored--;
    co->st.bytes_stored -= j->bytes;
    co->st.labels -= j->records;
    co->st.fights -= j->fights;
    co->st.fights_turn_limit -= j->turn_limits;
    co->st.simulations -= j->simulations;
    co->st.fallbacks -= j->fallbacks;
    j->state = JS_PENDING;
    j->content_digest[0] = j->file_sha256[0] = j->shard_name[0] = 0;
    j->records = j->bytes = j->fights = j->simulations = j->fallbacks = j->wins = 0;
    j->turn_limits = 0;
    job_touch(co, j);
    co->need_sync = 1;
    queue_push(co, j->id);
}

static void set_aside(sf_coordinator *co, const char *name, const char *why);

void co_job_replay(sf_coordinator *co, cjob *j, const char *why) {
    if (j->state != JS_DONE)
        return;
    char name[sizeof j->shard_name];
    snprintf(name, sizeof name, "%s", j->shard_name);
    set_aside(co, name, why);
    co_job_undo(co, j);
}

static void worker_dead(sf_coordinator *co, int wi) {
    cworker *w = &co->workers[wi];
    worker_set_alive(co, wi, 0);
    upload_discard(&w->up);
    audit_expire(co, sf_now_ns(), wi);
    for (uint64_t k = co->n_leased; k-- > 0;) {
        cjob *j = &co->jobs[co->leased[k] - 1];
        if (j->worker == wi)
            release_job(co, j, 1);
    }
}

/* A Refusal to the peer `ident`: why it gets nothing (sanitised text). */
static void refuse(sf_coordinator *co, const uint8_t *ident, size_t len, const char *why) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Refusal r = SPIREFLEET__REFUSAL__INIT;
    r.reason = (char *)why;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_REFUSAL;
    env.refusal = &r;
    queue_reply(co, ident, len, &env);
}

/* Whether the leased job j is worker wi's: leased to its slot, or restored
 * from the ledger under its worker id and not claimed yet. */
static int lease_is(const sf_coordinator *co, const cjob *j, int wi) {
    return j->worker == wi || (j->worker < 0 && !strcmp(j->worker_id, co->workers[wi].worker_id));
}

/* lease_is, and then the lease is wi's slot's (a restored lease is claimed
 * by the first message of the worker id that held it). */
static int claim_lease(sf_coordinator *co, cjob *j, int wi) {
    if (j->state != JS_LEASED || !lease_is(co, j, wi))
        return 0;
    j->worker = wi;
    return 1;
}

/* ------------------------------------------------------------------------
 * Handlers
 * ---------------------------------------------------------------------- */

static void on_hello(sf_coordinator *co, const uint8_t *ident, size_t len,
                     const Spirefleet__Hello *h, const char *key) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    const char *why = NULL;
    if (h->protocol_version != SF_PROTOCOL_VERSION)
        why = "protocol version mismatch";
    else if (!sf_str_is_name(h->worker_id, CO_WORKER_ID_MAX - 1))
        why = "worker_id must be 1..63 characters of A-Z a-z 0-9 . _ : @ + - (not starting "
              "with '.')";
    else if (co->stopping)
        why = "the run is stopping";
    if (why) {
        co->st.protocol_errors++;
        refuse(co, ident, len, why);
        return;
    }
    /* A worker that reconnects (new socket, new routing id) keeps its entry
     * and so its leases: match by worker id first. */
    int wi = -1;
    for (int i = 0; i < co->nworkers && wi < 0; i++)
        if (!strcmp(co->workers[i].worker_id, h->worker_id))
            wi = i;
    if (wi >= 0 && co->workers[wi].key[0] && strcmp(co->workers[wi].key, key)) {
        /* a worker id belongs to the key that first used it: another key
         * cannot take over its leases or upload in its name */
        char why[200], theirs[SF_ZSEC_ID_LEN + 1];
        sf_zsec_key_id(key, theirs);
        snprintf(why, sizeof why, "worker id %s belongs to another key (this key: %s)",
                 h->worker_id, theirs[0] ? theirs : "none");
        sf_log(co->log, co->log_ctx, "coordinator: refused a Hello: %s", why);
        co->st.auth_refused++;
        refuse(co, ident, len, why);
        return;
    }
    if (wi < 0) {
        wi = worker_find(co, ident, len);
        /* a routing id another key's worker holds is not taken over */
        if (wi >= 0 && co->workers[wi].key[0] && strcmp(co->workers[wi].key, key))
            wi = -1;
    }
    uint32_t cap = co->cfg.security.max_workers_per_key, of_key = 0;
    for (int i = 0; wi < 0 && key[0] && i < co->nworkers;
         i++) /* live ones: the dead hold no lease */
        of_key += co->workers[i].alive && !strcmp(co->workers[i].key, key);
    if (wi < 0 && key[0] && of_key >= cap) {
        /* one key cannot take the run's leases by making worker ids */
        char why[200], id[SF_ZSEC_ID_LEN + 1];
        sf_zsec_key_id(key, id);
        snprintf(why, sizeof why,
                 "key %s has %u live worker ids, the most security.max_workers_per_key "
                 "allows; reuse an id",
                 id, of_key);
        if (!co->st.workers_refused++)
            sf_log(co->log, co->log_ctx, "coordinator: refused a Hello: %s", why);
        refuse(co, ident, len, why);
        return;
    }
    if (wi < 0 && co->nworkers >= co->max_workers) {
        char why[160];
        snprintf(why, sizeof why, "the run has %d worker ids, the most it takes; reuse an id",
                 co->nworkers);
        if (!co->st.workers_refused++)
            sf_log(co->log, co->log_ctx, "coordinator: refused a Hello: %s", why);
        refuse(co, ident, len, why);
        return;
    }
    if (wi < 0)
        wi = worker_add(co, ident, len);
    if (wi < 0)
        return;
    cworker *w = &co->workers[wi];
    if (h->pid && h->pid == w->replaced_pid && !strcmp(w->worker_id, h->worker_id)) {
        /* the older of two processes under one id: it stops, instead of
         * taking the id back and forth with the newer one */
        char why[200];
        snprintf(why, sizeof why,
                 "worker id %s was taken over by a newer process (pid %u); give each worker "
                 "its own id",
                 h->worker_id, w->pid);
        sf_log(co->log, co->log_ctx, "coordinator: refused a Hello: %s", why);
        co->st.protocol_errors++;
        refuse(co, ident, len, why);
        return;
    }
    if (!w->key[0]) {
        snprintf(w->key, sizeof w->key, "%s", key);
        sf_zsec_key_id(key, w->key_id);
    }
    if (w->ident_len != len || memcmp(w->ident, ident, len)) {
        upload_discard(&w->up);
        memcpy(w->ident, ident, len);
        w->ident_len = len;
    }
    snprintf(w->worker_id, sizeof w->worker_id, "%s", h->worker_id);
    if (w->who < 0 && (w->who = ident_index(co, audit_identity(co, wi))) < 0) {
        refuse(co, ident, len, "the coordinator is out of memory");
        return;
    }
    sf_str_printable(w->host, sizeof w->host, h->host); /* shown to operators */
    w->threads = h->threads;
    w->hello = 1;
    /* A Hello from a new process under a known worker id (a restarted
     * worker): whatever the old process held is abandoned. A reconnecting
     * process (same pid) keeps its leases. The old process, should it
     * still run, is refused from now on (above). */
    if (w->pid && w->pid != h->pid) {
        for (uint64_t k = co->n_leased; k-- > 0;) {
            cjob *j = &co->jobs[co->leased[k] - 1];
            if (lease_is(co, j, wi))
                release_job(co, j, 1);
        }
        w->replaced_pid = w->pid;
    }
    w->pid = h->pid;
    worker_set_alive(co, wi, 1);
    w->last_seen = sf_now_ns();

    Spirefleet__Welcome wel = SPIREFLEET__WELCOME__INIT;
    wel.config = co->run_msg;
    wel.config_digest = co->digest;
    wel.heartbeat_ms = co->cfg.coordinator.heartbeat_ms;
    wel.heartbeat_liveness = co->cfg.coordinator.heartbeat_liveness;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_WELCOME;
    env.welcome = &wel;
    queue_reply(co, ident, len, &env);
}

/* Every job done, or a gate's verdict written (then nothing more is
 * issued; leased jobs may still deliver, and are stored), and no audit
 * open: a shard is final only once every audit opened on it is decided, so
 * a run with an open audit is not complete (its workers wait for the
 * copies; audit.c). */
static int all_done(const sf_coordinator *co) {
    return (co->st.jobs_done == co->njobs || gate_decided(co)) && co->n_audits == 0;
}

/* Bind job j to its model before its first lease: the config's pinned
 * model, "rollout", or — following a registry (model.champion) — the
 * champion of this moment. The binding is in the ledger with the lease, so
 * every later attempt of the job (and a restarted coordinator) plays the
 * same model, and its shard stays byte-identical wherever it runs.
 * Returns 0, or -1 when the champion file names no network yet or cannot
 * be read (logged when the reason changes; the job stays pending). */
static int bind_model(sf_coordinator *co, cjob *j) {
    if (co->gate || !co->cfg.model.champion[0]) { /* model.sha256 is self-play's only */
        snprintf(j->model, sizeof j->model, "%s",
                 !co->gate && co->cfg.model.sha256[0] ? co->cfg.model.sha256 : SF_REGISTRY_ROLLOUT);
        return 0;
    }
    char champ[SF_SHA256_HEX_LEN + 1], why[sizeof co->champion_why];
    sf_err e = {0};
    if (sf_registry_champion_read(co->cfg.model.champion, champ, &e) < 0)
        snprintf(why, sizeof why, "%s", e.msg);
    else if (!strcmp(champ, SF_REGISTRY_ROLLOUT))
        snprintf(why, sizeof why, "%.400s names no network yet (rollout)", co->cfg.model.champion);
    else
        why[0] = '\0';
    if (strcmp(why, co->champion_why)) {
        if (why[0])
            sf_log(co->log, co->log_ctx, "coordinator: no job issued: %s", why);
        snprintf(co->champion_why, sizeof co->champion_why, "%s", why);
    }
    if (why[0])
        return -1;
    if (strcmp(champ, co->champion))
        sf_log(co->log, co->log_ctx, "coordinator: jobs from %llu on play champion %.12s...",
               (unsigned long long)j->id, champ);
    snprintf(co->champion, sizeof co->champion, "%s", champ);
    snprintf(j->model, sizeof j->model, "%s", champ);
    job_touch(co, j);
    return 0;
}

/* The Job message of j to w (`attempt` names the worker's scratch file). */
static void send_job(sf_coordinator *co, const cworker *w, const cjob *j, uint32_t attempt) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Job job = SPIREFLEET__JOB__INIT;
    job.job_id = j->id;
    job.kind = co->gate ? SPIREFLEET__JOB_KIND__JOB_GATE : SPIREFLEET__JOB_KIND__JOB_SELFPLAY;
    job.seed_start = j->seed_start;
    job.seed_count = j->seed_count;
    job.attempt = attempt;
    job.search = co->run_msg->search;
    job.model_sha256 = (char *)j->model; /* bound at its first lease (bind_model) */
    job.config_digest = co->digest;
    job.lease_seconds = co->cfg.coordinator.lease_seconds;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_JOB;
    env.job = &job;
    queue_reply(co, w->ident, w->ident_len, &env);
}

/* The leases worker wi holds (also those restored from the ledger under
 * its id that it has not claimed yet). O(leased). */
static uint32_t leases_held(const sf_coordinator *co, int wi) {
    uint32_t n = 0;
    for (uint64_t k = 0; k < co->n_leased; k++)
        n += (uint32_t)lease_is(co, &co->jobs[co->leased[k] - 1], wi);
    return n;
}

/* The most leases one identity may hold at once: with two or more usable
 * identities, security.max_lease_share of the jobs not done (at least
 * CO_MAX_LEASES_PER_WORKER), so one key cannot hold the run's leases
 * whatever worker ids it uses; with one, no bound beyond the per-worker
 * one (a local run's workers share one key). */
static int key_may_lease(const sf_coordinator *co, int wi) {
    int me = co->workers[wi].who;
    if (me < 0 || co_usable_identities(co, 1) < 2)
        return 1;
    double cap = co->cfg.security.max_lease_share * (double)(co->njobs - co->st.jobs_done);
    uint64_t limit = (uint64_t)ceil(cap);
    if (limit < CO_MAX_LEASES_PER_WORKER)
        limit = CO_MAX_LEASES_PER_WORKER;
    uint64_t held = 0;
    for (uint64_t k = 0; k < co->n_leased; k++) {
        int w = co->jobs[co->leased[k] - 1].worker;
        held += w >= 0 && co->workers[w].who == me;
    }
    return held < limit;
}

static void on_job_request(sf_coordinator *co, int wi) {
    cworker *w = &co->workers[wi];
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    if (w->quarantined) {
        /* a worker whose jobs keep failing gets no more: the jobs go to
         * others, so one bad (or hostile) worker cannot quarantine them */
        char why[320];
        snprintf(why, sizeof why,
                 "worker %s is quarantined after %u failure reports (last: %.120s); it gets "
                 "no more jobs in this run",
                 w->worker_id, w->failures, w->last_failure);
        refuse(co, w->ident, w->ident_len, why);
        return;
    }
    const co_ident *me = co_ident_of(co, wi);
    if (me && me->failing) {
        char why[320];
        snprintf(why, sizeof why,
                 "key %s is quarantined after %u failure reports for %u stored job(s) (last: "
                 "%.120s); its workers get no more jobs in this run",
                 me->id, me->failures, me->jobs_stored, w->last_failure);
        refuse(co, w->ident, w->ident_len, why);
        return;
    }
    /* an audit first: a done job played again by another identity (also
     * once every job is done, while the coordinator serves) */
    cjob *aj = co->stopping ? NULL : audit_take(co, wi);
    if (aj) {
        send_job(co, w, aj, aj->attempt + 100 * aj->audit_stage);
        return;
    }
    if (!all_done(co) && !co->stopping && gate_decided(co)) {
        /* the verdict is written; audits still open: nothing new is issued */
        Spirefleet__Wait wt = SPIREFLEET__WAIT__INIT;
        wt.retry_ms = co->cfg.coordinator.heartbeat_ms;
        env.body_case = SPIREFLEET__ENVELOPE__BODY_WAIT;
        env.wait = &wt;
        queue_reply(co, w->ident, w->ident_len, &env);
        return;
    }
    if (all_done(co) || co->stopping) {
        Spirefleet__RunComplete rc = SPIREFLEET__RUN_COMPLETE__INIT;
        env.body_case = SPIREFLEET__ENVELOPE__BODY_RUN_COMPLETE;
        env.run_complete = &rc;
        w->told_complete = 1;
        queue_reply(co, w->ident, w->ident_len, &env);
        return;
    }
    int may = leases_held(co, wi) < CO_MAX_LEASES_PER_WORKER && key_may_lease(co, wi);
    uint64_t id = may ? queue_pop(co) : 0;
    if (!id && co->q_len > 0 && !may)
        co->st.lease_limit_waits++;
    cjob *j = id ? &co->jobs[id - 1] : NULL;
    if (j && !j->model[0] && bind_model(co, j) < 0) { /* no champion to follow yet */
        queue_unpop(co, id);
        j = NULL;
    }
    if (!j) {
        Spirefleet__Wait wt = SPIREFLEET__WAIT__INIT;
        wt.retry_ms = co->cfg.coordinator.heartbeat_ms;
        env.body_case = SPIREFLEET__ENVELOPE__BODY_WAIT;
        env.wait = &wt;
        queue_reply(co, w->ident, w->ident_len, &env);
        return;
    }
    if (j->attempt > 0)
        co->st.reissues++;
    j->state = JS_LEASED;
    leased_add(co, j);
    j->attempt++;
    j->worker = wi;
    j->leased_ns = sf_now_ns();
    j->deadline = j->leased_ns + (uint64_t)co->cfg.coordinator.lease_seconds * NS_PER_S;
    snprintf(j->worker_id, sizeof j->worker_id, "%s", w->worker_id);
    job_touch(co, j);
    co->st.leases_granted++;
    send_job(co, w, j, j->attempt);
}

static void extend_lease(sf_coordinator *co, int wi, uint64_t job_id) {
    if (job_id == 0 || job_id > co->njobs)
        return;
    cjob *j = &co->jobs[job_id - 1];
    /* a lease restored from the ledger belongs to whoever still works on it */
    if (claim_lease(co, j, wi))
        j->deadline = sf_now_ns() + (uint64_t)co->cfg.coordinator.lease_seconds * NS_PER_S;
    audit_extend(co, j, wi);
}

static void on_heartbeat(sf_coordinator *co, int wi, const Spirefleet__Heartbeat *hb) {
    cworker *w = &co->workers[wi];
    extend_lease(co, wi, hb->job_id);
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Heartbeat back = SPIREFLEET__HEARTBEAT__INIT;
    back.worker_id = (char *)"coordinator";
    env.body_case = SPIREFLEET__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &back;
    queue_reply(co, w->ident, w->ident_len, &env);
}

static void on_progress(sf_coordinator *co, int wi, const Spirefleet__Progress *p) {
    extend_lease(co, wi, p->job_id);
    if (p->job_id == 0 || p->job_id > co->njobs)
        return;
    cjob *j = &co->jobs[p->job_id - 1];
    if (j->state == JS_LEASED && j->worker == wi) {
        j->prog_fights = p->fights_done;
        j->prog_labels = p->labels_done;
    }
}

static void send_ack_full(sf_coordinator *co, int wi, uint64_t job, int ok, int dup, int send,
                          uint32_t retry_ms, const char *reason) {
    cworker *w = &co->workers[wi];
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ShardAck a = SPIREFLEET__SHARD_ACK__INIT;
    a.job_id = job;
    a.ok = ok;
    a.duplicate = dup;
    a.send = send;
    a.retry_later = retry_ms > 0;
    a.retry_ms = retry_ms;
    a.reason = (char *)(reason ? reason : "");
    env.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_ACK;
    env.shard_ack = &a;
    queue_reply(co, w->ident, w->ident_len, &env);
}

static void send_ack(sf_coordinator *co, int wi, uint64_t job, int ok, int dup, int send,
                     const char *reason) {
    send_ack_full(co, wi, job, ok, dup, send, 0, reason);
}

/* Whether errno `e` says the filesystem has no room (as opposed to a
 * fault of the upload). */
static int no_room(int e) {
    return e == ENOSPC || e == EDQUOT;
}

/* The upload cannot be stored now because the disk is full (`what`: the
 * step, `e`: the errno): drop what was received and tell the worker to
 * keep its shard and offer it again later. Not a failure of the job or the
 * worker: nothing is counted against either, and the lease is kept (the
 * worker heartbeats for it). */
static void defer_upload(sf_coordinator *co, int wi, uint64_t job, const char *what, int e) {
    upload_discard(&co->workers[wi].up);
    co->st.uploads_deferred++;
    if (!co->st.uploads_paused)
        sf_log(co->log, co->log_ctx,
               "coordinator: %s: %s: uploads paused until space returns (workers keep their "
               "shards)",
               what, strerror(e));
    co->st.uploads_paused = 1;
    char why[SF_ERR_MSG_MAX];
    snprintf(why, sizeof why, "coordinator cannot store the upload now: %s: %s; retry later", what,
             strerror(e));
    uint32_t retry = co->cfg.coordinator.heartbeat_ms;
    send_ack_full(co, wi, job, 0, 0, 0, retry ? retry : 1000, why);
}

/* Room for an upload of `size` bytes in incoming/ (and the ledger's next
 * pages beside it): 0, or -1 with errno ENOSPC. */
#define UPLOAD_HEADROOM (2u << 20)
static int room_for(const sf_coordinator *co, uint64_t size) {
    struct statvfs vs;
    if (statvfs(co->incoming_dir, &vs) != 0)
        return 0; /* unknown: the write itself will say */
    uint64_t avail = (uint64_t)vs.f_bavail * vs.f_frsize;
    if (avail >= size + UPLOAD_HEADROOM)
        return 0;
    errno = ENOSPC;
    return -1;
}

static void on_shard_offer(sf_coordinator *co, int wi, const Spirefleet__ShardOffer *o) {
    cworker *w = &co->workers[wi];
    if (o->job_id == 0 || o->job_id > co->njobs) {
        co->st.protocol_errors++;
        send_ack(co, wi, o->job_id, 0, 0, 0, "no such job");
        return;
    }
    cjob *j = &co->jobs[o->job_id - 1];
    const co_ident *me = co_ident_of(co, wi);
    if (me && (me->failing || me->quarantined)) {
        co->st.shards_rejected++;
        send_ack(co, wi, o->job_id, 0, 0, 0,
                 "this key gets no more jobs (failure reports): its shards are not taken");
        return;
    }
    int audit = j->state == JS_DONE && audit_expects(co, j, wi);
    if (j->state == JS_DONE && !audit) {
        /* idempotent by job id: the first copy stored wins */
        co->st.duplicates_dropped++;
        send_ack(co, wi, o->job_id, 1, 1, 0, "job already done");
        return;
    }
    /* Only the lease holder uploads a job's shard (a lease restored from
     * the ledger belongs to the worker id that held it): anyone else's
     * shard, however well formed, is refused before a byte is stored. */
    if (!audit && !claim_lease(co, j, wi)) {
        co->st.protocol_errors++;
        co->st.shards_rejected++;
        char why[160];
        snprintf(why, sizeof why, "job %llu is not leased to %s: only its lease holder uploads it",
                 (unsigned long long)o->job_id, w->worker_id);
        sf_log(co->log, co->log_ctx, "coordinator: refused a shard offer: %s", why);
        send_ack(co, wi, o->job_id, 0, 0, 0, why);
        return;
    }
    /* A worker writes both digests with sf_hex: the canonical spelling is the
     * only one on the wire (common.h), and the one the received file's are
     * compared with. */
    if (!sf_sha256_hex_canonical(o->file_sha256) || !sf_sha256_hex_canonical(o->content_digest) ||
        o->size == 0 || o->size > CO_MAX_UPLOAD_BYTES) {
        co->st.protocol_errors++;
        send_ack(co, wi, o->job_id, 0, 0, 0, "bad offer: size or digests");
        return;
    }
    upload_discard(&w->up);
    upload *u = &w->up;
    u->active = 1;
    u->job_id = o->job_id;
    u->size = o->size;
    snprintf(u->file_sha256, sizeof u->file_sha256, "%s", o->file_sha256);
    snprintf(u->content_digest, sizeof u->content_digest, "%s", o->content_digest);
    snprintf(u->path, sizeof u->path, "%s/job%06llu-w%d.part", co->incoming_dir,
             (unsigned long long)o->job_id, wi);
    if (room_for(co, o->size) < 0) {
        char what[1200];
        snprintf(what, sizeof what, "%s: %llu bytes offered", co->incoming_dir,
                 (unsigned long long)o->size);
        u->active = 0;
        defer_upload(co, wi, o->job_id, what, ENOSPC);
        return;
    }
    u->f = fopen(u->path, "wb");
    if (!u->f && no_room(errno)) {
        int e = errno;
        u->active = 0;
        defer_upload(co, wi, o->job_id, u->path, e);
        return;
    }
    if (!u->f) {
        char why[SF_ERR_MSG_MAX];
        snprintf(why, sizeof why, "coordinator cannot write the upload: %s", strerror(errno));
        u->active = 0;
        send_ack(co, wi, o->job_id, 0, 0, 0, why);
        return;
    }
    sf_err he = {0};
    if (sf_sha256_new(&u->sha, &he) < 0) {
        upload_discard(u);
        send_ack(co, wi, o->job_id, 0, 0, 0, he.msg);
        return;
    }
    send_ack(co, wi, o->job_id, 0, 0, 1, NULL);
}

/* The upload is complete: check, store, verify, and mark the job done. */
static void finish_upload(sf_coordinator *co, int wi) {
    upload *u = &co->workers[wi].up;
    uint64_t job_id = u->job_id;
    char why[SF_ERR_MSG_MAX + 64] = "";
    uint8_t h[32];
    char hex[65];
    sf_err he = {0};
    if (sf_sha256_final(u->sha, h, &he) < 0)
        snprintf(why, sizeof why, "coordinator cannot hash the upload: %s", he.msg);
    sf_hex(h, 32, hex);
    int ok = sf_fflush_sync(u->f) == SF_OK;
    int write_errno = errno;
    fclose(u->f);
    u->f = NULL;
    if (!ok && no_room(write_errno)) {
        char what[1100];
        snprintf(what, sizeof what, "%s", u->path);
        defer_upload(co, wi, job_id, what, write_errno);
        return;
    }
    if (!ok)
        snprintf(why, sizeof why, "coordinator could not write the upload: %s",
                 strerror(write_errno));
    else if (u->received != u->size)
        snprintf(why, sizeof why, "received %llu bytes, offered %llu",
                 (unsigned long long)u->received, (unsigned long long)u->size);
    else if (strcmp(hex, u->file_sha256))
        snprintf(why, sizeof why, "file SHA-256 mismatch (got %.12s..., offered %.12s...)", hex,
                 u->file_sha256);
    cjob *j = &co->jobs[job_id - 1];
    int audit = j->state == JS_DONE && audit_expects(co, j, wi);
    if (!why[0] && j->state == JS_DONE && !audit) {
        upload_discard(u);
        co->st.duplicates_dropped++;
        send_ack(co, wi, job_id, 1, 1, 0, "job already done");
        return;
    }
    /* the lease may have been given up (or expired) while the bytes came */
    if (!why[0] && !audit && !(j->state == JS_LEASED && lease_is(co, j, wi)))
        snprintf(why, sizeof why, "job %llu is no longer leased to %s", (unsigned long long)job_id,
                 co->workers[wi].worker_id);
    sf_shard_verify_report rep;
    sf_err verr = {0};
    uint64_t simulations = 0, fallbacks = 0; /* the sealed manifest's */
    if (!why[0] && sf_shard_verify(u->path, &rep, &verr) < 0)
        snprintf(why, sizeof why, "shard does not verify: %s", verr.msg);
    if (!why[0]) {
        char dig[65];
        sf_hex(rep.digest, 32, dig);
        if (strcmp(dig, u->content_digest))
            snprintf(why, sizeof why, "content digest mismatch");
    }
    if (!why[0]) {
        sf_shard_reader *r = NULL;
        if (sf_shard_reader_open(u->path, &r, &verr) < 0) {
            snprintf(why, sizeof why, "%s", verr.msg);
        } else {
            const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
            if (m->job_id != job_id || strcmp(m->run_id ? m->run_id : "", co->cfg.name) ||
                strcmp(m->config_digest ? m->config_digest : "", co->digest))
                snprintf(why, sizeof why, "manifest names another run, job or config");
            else if (m->seed_first < j->seed_start || m->seed_last >= j->seed_start + j->seed_count)
                snprintf(why, sizeof why, "manifest seeds lie outside the job");
            else if (!co->gate && j->model[0] &&
                     strcmp(m->model_sha256 ? m->model_sha256 : "", j->model))
                snprintf(why, sizeof why, "manifest names model %.12s..., the job's is %.12s...",
                         m->model_sha256 ? m->model_sha256 : "", j->model);
            else if (co->zsec &&
                     strcmp(m->worker_key_id ? m->worker_key_id : "", co->workers[wi].key_id))
                /* provenance must name the key that uploaded it: quarantine
                 * by key then finds every shard a key made */
                snprintf(why, sizeof why,
                         "manifest names worker key id '%.16s', the uploader's is %s",
                         m->worker_key_id ? m->worker_key_id : "", co->workers[wi].key_id);
            else
                gate_check_manifest(co, j, m, why, sizeof why);
            if (m->stats) {
                simulations = m->stats->simulations;
                fallbacks = m->stats->fallbacks;
            }
            sf_shard_reader_close(r);
        }
    }
    if (why[0]) {
        co->st.shards_rejected++;
        if (audit)
            j->audit_worker = -1; /* another worker may bring a copy that verifies */
        upload_discard(u);
        send_ack(co, wi, job_id, 0, 0, 0, why);
        return;
    }
    if (audit) {
        /* compared, never stored: the stored copy stays unless it loses */
        char dig[65];
        sf_hex(rep.digest, 32, dig);
        upload_discard(u);
        send_ack(co, wi, job_id, 1, 1, 0, "audit copy compared");
        audit_result(co, j, wi, dig, fallbacks);
        return;
    }
    char name[96], final[1200];
    shard_name(co, job_id, name, sizeof name);
    snprintf(final, sizeof final, "%s/%s", co->shards_dir, name);
    /* never replace: a file already there is an earlier copy of this job */
    if (link(u->path, final) != 0 && errno != EEXIST) {
        if (no_room(errno)) {
            defer_upload(co, wi, job_id, final, errno);
            return;
        }
        snprintf(why, sizeof why, "cannot store the shard as %.300s: %s", final, strerror(errno));
        co->st.shards_rejected++;
        upload_discard(u);
        send_ack(co, wi, job_id, 0, 0, 0, why);
        return;
    }
    unlink(u->path);
    u->path[0] = 0;
    /* Not done until the name is durable: otherwise the ledger could say
     * done for a shard a crash loses. The stored copy stays: a re-issued
     * job finds it (link: EEXIST), a restart adopts it. */
    sf_err serr = {0};
    if (sf_fsync_dir(co->shards_dir, &serr) < 0) {
        snprintf(why, sizeof why, "cannot store the shard: %s", serr.msg);
        co->st.shards_rejected++;
        upload_discard(u);
        send_ack(co, wi, job_id, 0, 0, 0, why);
        return;
    }
    if (j->state == JS_LEASED)
        leased_remove(co, j);
    j->state = JS_DONE;
    j->worker = -1;
    snprintf(j->content_digest, sizeof j->content_digest, "%s", u->content_digest);
    snprintf(j->file_sha256, sizeof j->file_sha256, "%s", u->file_sha256);
    snprintf(j->shard_name, sizeof j->shard_name, "%s", name);
    /* the totals come from the verified shard: fights and wins counted in
     * its records, simulations and fallbacks from its sealed manifest (what
     * the worker's offer said is not used) */
    j->records = rep.records;
    j->bytes = rep.file_bytes;
    j->fights = rep.fights;
    j->wins = rep.fights_won;
    j->simulations = simulations;
    j->fallbacks = fallbacks;
    j->turn_limits = rep.turn_limit_fights;
    co_ident *maker = co_ident_of(co, wi);
    if (maker)
        maker->jobs_stored++;
    j->maker = co->workers[wi].who;
    job_touch(co, j);
    co->need_sync = 1;
    count_done(co, j);
    co->done_t[co->done_head] = sf_now_ns();
    co->done_labels[co->done_head] = j->records;
    co->done_secs[co->done_head] =
        j->leased_ns ? (double)(co->done_t[co->done_head] - j->leased_ns) / 1e9 : 0.0;
    co->done_head = (co->done_head + 1) % 256;
    if (co->done_n < 256)
        co->done_n++;
    sf_sha256_free(u->sha);
    memset(u, 0, sizeof *u);
    if (co->st.uploads_paused)
        sf_log(co->log, co->log_ctx, "coordinator: stored job %llu's shard: uploads resume",
               (unsigned long long)job_id);
    co->st.uploads_paused = 0;
    send_ack(co, wi, job_id, 1, 0, 0, NULL);
    audit_on_done(co, j, wi);
}

static void on_shard_chunk(sf_coordinator *co, int wi, const Spirefleet__ShardChunk *c) {
    upload *u = &co->workers[wi].up;
    if (!u->active || u->job_id != c->job_id) {
        co->st.protocol_errors++;
        send_ack(co, wi, c->job_id, 0, 0, 0, "chunk without an accepted offer");
        return;
    }
    if (c->offset != u->received || c->data.len > SF_FLEET_CHUNK ||
        u->received + c->data.len > u->size) {
        co->st.protocol_errors++;
        upload_discard(u);
        send_ack(co, wi, c->job_id, 0, 0, 0, "chunk out of order or beyond the offered size");
        return;
    }
    if (c->data.len && fwrite(c->data.data, 1, c->data.len, u->f) != c->data.len) {
        if (no_room(errno)) {
            char what[1100];
            snprintf(what, sizeof what, "%s", u->path);
            defer_upload(co, wi, c->job_id, what, errno);
            return;
        }
        char why[SF_ERR_MSG_MAX];
        snprintf(why, sizeof why, "coordinator cannot write the upload: %s", strerror(errno));
        upload_discard(u);
        send_ack(co, wi, c->job_id, 0, 0, 0, why);
        return;
    }
    sf_sha256_update(u->sha, c->data.data, c->data.len);
    u->received += c->data.len;
    if (c->last)
        finish_upload(co, wi);
}

static void on_job_failed(sf_coordinator *co, int wi, const Spirefleet__JobFailed *f) {
    if (f->job_id == 0 || f->job_id > co->njobs) {
        co->st.protocol_errors++;
        return;
    }
    cjob *j = &co->jobs[f->job_id - 1];
    /* a reason comes from the network: printable and bounded before it
     * reaches the log, the status or the ledger */
    char why_buf[201];
    sf_str_printable(why_buf, sizeof why_buf, f->reason);
    const char *why = why_buf;
    if (j->state == JS_DONE && audit_expects(co, j, wi)) {
        j->audit_worker = -1; /* an audit given back: another worker may play it */
        return;
    }
    if (j->state != JS_LEASED || j->worker != wi) {
        /* Only the lease holder's report counts: a late one (the lease
         * expired and the job moved on) or a forged one must not push a
         * job towards quarantine. */
        co->st.protocol_errors++;
        sf_log(co->log, co->log_ctx,
               "coordinator: ignored a failure report for job %llu from %s, which "
               "does not hold its lease",
               (unsigned long long)f->job_id, co->workers[wi].worker_id);
        return;
    }
    int abandoned = f->reason && !strcmp(f->reason, SF_JOB_ABANDONED);
    if (!abandoned) {
        co->st.jobs_failed++;
        cworker *w = &co->workers[wi];
        w->failures++;
        snprintf(w->last_failure, sizeof w->last_failure, "%.150s", why);
        if (w->failures >= CO_MAX_WORKER_FAILURES && !w->quarantined) {
            w->quarantined = 1;
            co->st.workers_quarantined++;
            sf_log(co->log, co->log_ctx,
                   "coordinator: worker %s quarantined after %u failure reports; it gets no "
                   "more jobs",
                   w->worker_id, w->failures);
        }
        co_ident *id = co_ident_of(co, wi);
        if (id)
            id->failures++;
        /* with one key (every local run) the per-worker limit alone: the
         * key-wide one is against a key among others using many ids */
        if (id && co->n_idents >= 2 && !id->failing &&
            id->failures >= id->jobs_stored + SF_COORD_MAX_KEY_FAILURES) {
            id->failing = 1;
            co->st.keys_failing++;
            sf_log(co->log, co->log_ctx,
                   "coordinator: key %s quarantined after %u failure reports for %u stored "
                   "job(s); its workers get no more jobs and their leases go to others",
                   id->id, id->failures, id->jobs_stored);
            for (uint64_t k = co->n_leased; k-- > 0;) {
                cjob *lj = &co->jobs[co->leased[k] - 1];
                if (lj != j && lj->worker >= 0 && co->workers[lj->worker].who == w->who)
                    release_job(co, lj, 0);
            }
        }
        /* a job counts each worker and each identity once: one worker, or
         * one key under many worker ids, cannot fail it out */
        int seen = 0, seen_id = 0;
        if (!j->failures && !j->failed_idents)
            co->failing[co->n_failing++] = j->id;
        for (uint32_t k = 0; k < j->failures; k++)
            seen |= j->failed_by[k] == wi;
        if (!seen && j->failures < CO_MAX_FAILURES)
            j->failed_by[j->failures++] = wi;
        for (uint32_t k = 0; k < j->failed_idents; k++)
            seen_id |= j->failed_ident[k] == co->workers[wi].who;
        if (!seen_id && j->failed_idents < CO_MAX_FAILURES)
            j->failed_ident[j->failed_idents++] = co->workers[wi].who;
        snprintf(j->last_failure, sizeof j->last_failure, "%.150s", why);
        snprintf(co->st.last_failure, sizeof co->st.last_failure, "job %llu: %.130s",
                 (unsigned long long)j->id, why);
    }
    release_job(co, j, 0);
    if (job_failed_out(co, j) && !j->quarantined) {
        /* a job that fails on every worker is not issued again: the run
         * then cannot complete, which status and sf-fleet report */
        j->quarantined = 1;
        sf_log(co->log, co->log_ctx,
               "coordinator: job %llu failed on %u workers; not issuing it again (last: %.200s)",
               (unsigned long long)j->id, j->failures, why);
    }
    sf_log(co->log, co->log_ctx, "coordinator: job %llu %s on %s: %s%s",
           (unsigned long long)f->job_id, abandoned ? "abandoned" : "failed",
           co->workers[wi].worker_id, why, f->reason && strlen(f->reason) > 200 ? "..." : "");
}

static void fill_status(sf_coordinator *co, Spirefleet__StatusReply *r) {
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    r->run = co->cfg.name;
    r->jobs_total = st.jobs_total;
    r->jobs_pending = st.jobs_pending;
    r->jobs_leased = st.jobs_leased;
    r->jobs_done = st.jobs_done;
    r->fights = st.fights;
    r->labels = st.labels;
    r->labels_per_s = st.labels_per_s;
    r->workers_alive = st.workers_alive;
    r->eta_s = st.eta_s;
    r->complete = st.complete;
    r->bytes_stored = st.bytes_stored;
    r->fallbacks = (uint32_t)st.fallbacks;
    r->output_dir = co->cfg.output_dir;
    r->config_digest = co->digest;
    r->lease_expiries = st.lease_expiries;
    r->reissues = st.reissues;
    r->decode_errors = st.decode_errors;
    r->protocol_errors = st.protocol_errors;
    r->jobs_quarantined = st.jobs_quarantined;
    r->workers_quarantined = st.workers_quarantined;
    r->uploads_deferred = st.uploads_deferred;
    r->uploads_paused = st.uploads_paused;
    r->cannot_finish = st.cannot_finish;
    r->curve = co->zsec != NULL;
    r->auth_denied = st.auth_denied;
    r->auth_refused = st.auth_refused;
    r->shards_quarantined = st.shards_quarantined;
    r->audits_opened = st.audits_opened;
    r->audits_passed = st.audits_passed;
    r->audits_mismatched = st.audits_mismatched;
    r->audits_caught = st.audits_caught;
    r->last_failure = co->st.last_failure;
    r->fights_turn_limit = st.fights_turn_limit;
    r->jobs_slow = st.jobs_slow;
    r->job_median_s = st.job_median_s;
    r->longest_running_s = st.longest_running_s;
    r->n_slow_jobs = (size_t)st.n_slow;
    r->slow_jobs = co->slow_ptrs;
    for (int k = 0; k < st.n_slow; k++) {
        spirefleet__slow_job__init(&co->slow_msgs[k]);
        co->slow_msgs[k].job_id = st.slow[k].job_id;
        snprintf(co->slow_ids[k], sizeof co->slow_ids[k], "%s", st.slow[k].worker_id);
        co->slow_msgs[k].worker_id = co->slow_ids[k];
        co->slow_msgs[k].running_s = st.slow[k].running_s;
        co->slow_ptrs[k] = &co->slow_msgs[k];
    }
    r->audits_open = st.audits_open;
    r->audits_differ = st.audits_differ;
    r->keys_failing = st.keys_failing;
    r->keys_known = st.keys_known;
    r->no_workers = st.no_workers;
    r->n_undecided_audits = (size_t)st.n_undecided;
    r->undecided_audits = co->aud_ptrs;
    for (int k = 0; k < st.n_undecided; k++) {
        Spirefleet__UndecidedAudit *a = &co->aud_msgs[k];
        spirefleet__undecided_audit__init(a);
        a->job_id = st.undecided[k].job_id;
        a->stage = (uint32_t)st.undecided[k].stage;
        a->n_key_ids = (size_t)(st.undecided[k].stage < 3 ? 2 : 3);
        for (size_t c = 0; c < a->n_key_ids; c++) {
            snprintf(co->aud_who[k][c], sizeof co->aud_who[k][c], "%s", st.undecided[k].who[c]);
            co->aud_who_ptrs[k][c] = co->aud_who[k][c];
        }
        a->key_ids = co->aud_who_ptrs[k];
        co->aud_ptrs[k] = a;
    }
    if (st.gate) {
        r->gate = 1;
        r->gate_pairs = st.gate_pairs;
        r->gate_llr = st.gate_llr;
        r->gate_lower = st.gate_lower;
        r->gate_upper = st.gate_upper;
        r->gate_min_pairs = st.gate_min_pairs;
        r->gate_max_pairs = st.gate_max_pairs;
        snprintf(co->gate_decision, sizeof co->gate_decision, "%s", st.gate_decision);
        r->gate_decision = co->gate_decision;
    }
}

static void on_status(sf_coordinator *co, const uint8_t *ident, size_t len) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__StatusReply r = SPIREFLEET__STATUS_REPLY__INIT;
    fill_status(co, &r);
    env.body_case = SPIREFLEET__ENVELOPE__BODY_STATUS_REPLY;
    env.status_reply = &r;
    queue_reply(co, ident, len, &env);
}

static void on_stop(sf_coordinator *co, const uint8_t *ident, size_t len, int role) {
    if (role != SF_ZSEC_OPERATOR) {
        co->st.auth_refused++;
        sf_log(co->log, co->log_ctx,
               "coordinator: refused a Stop from a key that is not an "
               "operator's");
        reply_error(co, ident, len, SF_ESTATE, "Stop needs an operator key (<keys>/operators)");
        return;
    }
    if (!co->stopping)
        sf_log(co->log, co->log_ctx, "coordinator: stop requested; finishing");
    co->stopping = 1;
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Stop s = SPIREFLEET__STOP__INIT;
    s.reason = (char *)"stopping";
    env.body_case = SPIREFLEET__ENVELOPE__BODY_STOP;
    env.stop = &s;
    queue_reply(co, ident, len, &env);
}

static void on_shard_list(sf_coordinator *co, const uint8_t *ident, size_t len) {
    uint64_t n = co->st.jobs_done;
    Spirefleet__ShardInfo *infos = calloc(n ? n : 1, sizeof *infos);
    Spirefleet__ShardInfo **ptrs = calloc(n ? n : 1, sizeof *ptrs);
    if (!infos || !ptrs) {
        free(infos);
        free(ptrs);
        reply_error(co, ident, len, SF_ENOMEM, "out of memory");
        return;
    }
    size_t k = 0;
    for (uint64_t i = 0; i < co->njobs && k < n; i++) {
        cjob *j = &co->jobs[i];
        if (j->state != JS_DONE)
            continue;
        spirefleet__shard_info__init(&infos[k]);
        infos[k].name = j->shard_name;
        infos[k].job_id = j->id;
        infos[k].size = j->bytes;
        infos[k].file_sha256 = j->file_sha256;
        infos[k].content_digest = j->content_digest;
        infos[k].records = j->records;
        ptrs[k] = &infos[k];
        k++;
    }
    /* the run's quarantine list goes along: a puller skips those shards and
     * lists them for its own readers */
    sf_shard_quarantine *ql = NULL;
    sf_err qe = {0};
    if (sf_shard_quarantine_load(co->shards_dir, &ql, &qe) < 0)
        sf_log(co->log, co->log_ctx, "coordinator: %s", qe.msg);
    size_t nq = sf_shard_quarantine_count(ql);
    Spirefleet__ShardInfo *qinfos = calloc(nq ? nq : 1, sizeof *qinfos);
    Spirefleet__ShardInfo **all = calloc(k + nq + 1, sizeof *all);
    char(*qhex)[65] = calloc(nq ? nq : 1, sizeof *qhex);
    if (!qinfos || !all || !qhex)
        nq = 0;
    for (size_t i = 0; all && i < k; i++)
        all[i] = ptrs[i];
    for (size_t i = 0; i < nq; i++) {
        const sf_shard_quarantine_entry *q = sf_shard_quarantine_at(ql, i);
        spirefleet__shard_info__init(&qinfos[i]);
        sf_hex(q->digest, 32, qhex[i]);
        qinfos[i].name = (char *)q->name;
        qinfos[i].content_digest = qhex[i];
        qinfos[i].quarantined = 1;
        qinfos[i].key_id = (char *)q->key_id;
        qinfos[i].quarantined_unix = q->when_unix;
        all[k + i] = &qinfos[i];
    }
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ShardList l = SPIREFLEET__SHARD_LIST__INIT;
    l.n_shards = all ? k + nq : k;
    l.shards = all ? all : ptrs;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_LIST;
    env.shard_list = &l;
    queue_reply(co, ident, len, &env);
    free(infos);
    free(ptrs);
    free(qinfos);
    free(all);
    free(qhex);
    sf_shard_quarantine_free(ql);
}

static void on_shard_fetch(sf_coordinator *co, const uint8_t *ident, size_t len,
                           const Spirefleet__ShardFetch *f) {
    const cjob *j = NULL;
    for (uint64_t i = 0; i < co->njobs && f->name; i++)
        if (co->jobs[i].state == JS_DONE && !strcmp(co->jobs[i].shard_name, f->name))
            j = &co->jobs[i];
    if (!j) {
        reply_error(co, ident, len, SF_ENOTFOUND, "no stored shard of that name");
        return;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", co->shards_dir, j->shard_name);
    uint32_t want = f->length == 0 || f->length > SF_FLEET_CHUNK ? SF_FLEET_CHUNK : f->length;
    uint64_t left = f->offset < j->bytes ? j->bytes - f->offset : 0;
    size_t got = left < want ? (size_t)left : want;
    uint8_t *buf = malloc(want);
    if (!buf) {
        reply_error(co, ident, len, SF_ENOMEM, "out of memory");
        return;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int rc = fd < 0 ? SF_EIO : sf_pread_full(fd, buf, got, f->offset);
    if (rc < 0) {
        char why[256];
        snprintf(why, sizeof why, "cannot read the stored shard %s: %s", j->shard_name,
                 sf_io_reason(rc));
        reply_error(co, ident, len, SF_EIO, why);
    }
    if (fd >= 0)
        close(fd);
    if (rc < 0) {
        free(buf);
        return;
    }
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ShardData d = SPIREFLEET__SHARD_DATA__INIT;
    d.name = (char *)j->shard_name;
    d.offset = f->offset;
    d.data.data = buf;
    d.data.len = got;
    d.last = f->offset + got >= j->bytes;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_DATA;
    env.shard_data = &d;
    queue_reply(co, ident, len, &env);
    free(buf);
}

static void on_quarantine(sf_coordinator *co, const uint8_t *ident, size_t len,
                          const Spirefleet__Quarantine *q) {
    co_quarantine_report rep;
    sf_err e = {0};
    int rc = co_quarantine_key(co, q->key_id, q->since_unix, "an operator", &rep, &e);
    if (rc < 0) {
        reply_error(co, ident, len, rc, e.msg);
        return;
    }
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__QuarantineReply r = SPIREFLEET__QUARANTINE_REPLY__INIT;
    r.key_id = (char *)q->key_id;
    r.shards = rep.shards;
    r.jobs_reissued = rep.jobs;
    r.workers_alive = rep.workers_alive;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_QUARANTINE_REPLY;
    env.quarantine_reply = &r;
    queue_reply(co, ident, len, &env);
}

static void handle(sf_coordinator *co, const uint8_t *ident, size_t ilen, const uint8_t *data,
                   size_t dlen, int role, const char *key) {
    Spirefleet__Envelope *env = NULL;
    sf_err err = {0};
    int rc = sf_wire_decode(data, dlen, &env, &err);
    if (rc < 0) {
        co->st.decode_errors++;
        reply_error(co, ident, ilen, rc, err.msg);
        return;
    }
    /* Messages anyone may send. */
    switch (env->body_case) {
    case SPIREFLEET__ENVELOPE__BODY_HELLO: on_hello(co, ident, ilen, env->hello, key); goto done;
    case SPIREFLEET__ENVELOPE__BODY_STATUS_REQUEST: on_status(co, ident, ilen); goto done;
    case SPIREFLEET__ENVELOPE__BODY_STOP: on_stop(co, ident, ilen, role); goto done;
    case SPIREFLEET__ENVELOPE__BODY_QUARANTINE:
        if (role != SF_ZSEC_OPERATOR) {
            co->st.auth_refused++;
            sf_log(co->log, co->log_ctx,
                   "coordinator: refused a Quarantine from a key that is not an operator's");
            reply_error(co, ident, ilen, SF_ESTATE,
                        "Quarantine needs an operator key (<keys>/operators)");
        } else {
            on_quarantine(co, ident, ilen, env->quarantine);
        }
        goto done;
    case SPIREFLEET__ENVELOPE__BODY_SHARD_LIST_REQUEST: on_shard_list(co, ident, ilen); goto done;
    case SPIREFLEET__ENVELOPE__BODY_SHARD_FETCH:
        on_shard_fetch(co, ident, ilen, env->shard_fetch);
        goto done;
    default: break;
    }
    /* Messages only a worker that said Hello may send. */
    int wi = worker_find(co, ident, ilen);
    if (wi < 0 || !co->workers[wi].hello) {
        co->st.protocol_errors++;
        reply_error(co, ident, ilen, SF_ESTATE, "unknown worker: send Hello first");
        goto done;
    }
    cworker *w = &co->workers[wi];
    if (strcmp(w->key, key)) {
        /* another key under this worker's routing id (ZMQ_ROUTING_ID can
         * be chosen by a client): nothing it says counts */
        co->st.auth_refused++;
        reply_error(co, ident, ilen, SF_ESTATE, "this connection's key is not the worker's");
        goto done;
    }
    w->last_seen = sf_now_ns();
    worker_set_alive(co, wi, 1);
    switch (env->body_case) {
    case SPIREFLEET__ENVELOPE__BODY_JOB_REQUEST: on_job_request(co, wi); break;
    case SPIREFLEET__ENVELOPE__BODY_HEARTBEAT: on_heartbeat(co, wi, env->heartbeat); break;
    case SPIREFLEET__ENVELOPE__BODY_PROGRESS: on_progress(co, wi, env->progress); break;
    case SPIREFLEET__ENVELOPE__BODY_SHARD_OFFER: on_shard_offer(co, wi, env->shard_offer); break;
    case SPIREFLEET__ENVELOPE__BODY_SHARD_CHUNK: on_shard_chunk(co, wi, env->shard_chunk); break;
    case SPIREFLEET__ENVELOPE__BODY_JOB_FAILED: on_job_failed(co, wi, env->job_failed); break;
    default:
        co->st.protocol_errors++;
        reply_error(co, ident, ilen, SF_ESTATE, "unexpected message for a coordinator");
        break;
    }
done:
    sf_wire_free(env);
}

/* ------------------------------------------------------------------------
 * Timers: late leases and silent workers
 * ---------------------------------------------------------------------- */

static void expire(sf_coordinator *co) {
    uint64_t now = sf_now_ns();
    if (now - co->last_expire < 50 * NS_PER_MS)
        return;
    co->last_expire = now;
    uint64_t silent = (uint64_t)co->cfg.coordinator.heartbeat_ms *
                      co->cfg.coordinator.heartbeat_liveness * NS_PER_MS;
    for (int i = 0; i < co->nworkers; i++)
        if (co->workers[i].alive && now - co->workers[i].last_seen > silent)
            worker_dead(co, i);
    for (uint64_t k = co->n_leased; k-- > 0;) { /* release_job swaps from the end */
        cjob *j = &co->jobs[co->leased[k] - 1];
        if (now > j->deadline)
            release_job(co, j, 1);
    }
    audit_expire(co, now, -1);
}

/* ------------------------------------------------------------------------
 * Open / recover
 * ---------------------------------------------------------------------- */

/* Move a shard that cannot be used out of shards/ into rejected/, with a
 * <name>.why file saying why: nothing stored is deleted, and a person can
 * look at it. */
static void set_aside(sf_coordinator *co, const char *name, const char *why) {
    char from[1200], to[1200], note[1300];
    snprintf(from, sizeof from, "%s/%s", co->shards_dir, name);
    snprintf(to, sizeof to, "%s/%s", co->rejected_dir, name);
    snprintf(note, sizeof note, "%s.why", to);
    if (sf_mkdir_p(co->rejected_dir) < 0 || rename(from, to) != 0) {
        sf_log(co->log, co->log_ctx, "coordinator: cannot move %s aside (%s): %s", from,
               strerror(errno), why);
        return;
    }
    char text[SF_ERR_MSG_MAX + 8];
    int n = snprintf(text, sizeof text, "%s\n", why);
    sf_err e = {0};
    sf_write_file_durable(note, text, (size_t)n < sizeof text ? (size_t)n : sizeof text - 1, &e);
    sf_fsync_dir(co->shards_dir, &e);
    sf_log(co->log, co->log_ctx, "coordinator: moved %s to %s: %s", from, to, why);
}

/* At restart, every job the ledger calls done must still have its shard,
 * sealed and naming that job with the content digest the ledger recorded
 * (the trailer and every structure page are checked on open); a job whose
 * shard is missing or not that shard goes back to pending, and the file,
 * if any, is set aside. */
static void recheck_done_jobs(sf_coordinator *co) {
    for (uint64_t i = 0; i < co->njobs; i++) {
        cjob *j = &co->jobs[i];
        if (j->state != JS_DONE)
            continue;
        char name[96], path[400], why[SF_ERR_MSG_MAX + 64] = "";
        shard_name(co, j->id, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", co->shards_dir, name);
        sf_shard_reader *r = NULL;
        sf_err e = {0};
        int missing = access(path, F_OK) != 0;
        if (missing) {
            snprintf(why, sizeof why, "%.400s is missing", path);
        } else if (sf_shard_reader_open(path, &r, &e) < 0) {
            snprintf(why, sizeof why, "%s", e.msg);
        } else {
            const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
            char dig[65] = "";
            if (m->content_digest.len == 32)
                sf_hex(m->content_digest.data, 32, dig);
            if (m->job_id != j->id || strcmp(dig, j->content_digest))
                snprintf(
                    why, sizeof why,
                    "%.400s holds job %llu with content digest %.12s..., the ledger's job %llu "
                    "has %.12s...",
                    path, (unsigned long long)m->job_id, dig, (unsigned long long)j->id,
                    j->content_digest);
        }
        sf_shard_reader_close(r);
        if (!why[0])
            continue;
        if (!missing)
            set_aside(co, name, why);
        else
            sf_log(co->log, co->log_ctx, "coordinator: job %llu's shard: %s; re-issuing it",
                   (unsigned long long)j->id, why);
        audit_cancel(co, j); /* its copies were of a shard that is gone */
        j->state = JS_PENDING;
        j->content_digest[0] = j->file_sha256[0] = j->shard_name[0] = 0;
        j->records = j->bytes = j->fights = j->simulations = j->fallbacks = j->wins = 0;
        j->turn_limits = 0;
        job_touch(co, j);
        co->need_sync = 1;
    }
}

/* A shard in shards/ whose job the ledger does not call done: the
 * coordinator stopped between storing it and committing. Verify and adopt. */
static void adopt_stored_shards(sf_coordinator *co) {
    for (uint64_t i = 0; i < co->njobs; i++) {
        cjob *j = &co->jobs[i];
        if (j->state == JS_DONE)
            continue;
        char name[96], path[1200];
        shard_name(co, j->id, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", co->shards_dir, name);
        if (access(path, F_OK) != 0)
            continue;
        sf_shard_verify_report rep;
        sf_err e = {0};
        sf_shard_reader *r = NULL;
        int ok =
            sf_shard_verify(path, &rep, &e) == SF_OK && sf_shard_reader_open(path, &r, &e) == 0;
        if (ok) {
            const Spirefleet__ShardManifest *m = sf_shard_reader_manifest(r);
            char why[256] = "";
            ok = m->job_id == j->id &&
                 !strcmp(m->config_digest ? m->config_digest : "", co->digest) &&
                 gate_check_manifest(co, j, m, why, sizeof why) == 0;
            /* the model: the one its lease bound, else (a lost binding)
             * the manifest's, which an audit of the job then plays */
            const char *mm = m->model_sha256 ? m->model_sha256 : "";
            if (ok && !co->gate && j->model[0] && strcmp(mm, j->model)) {
                ok = 0;
                snprintf(why, sizeof why, "manifest names model %.12s..., the job's is %.12s...",
                         mm, j->model);
            }
            if (ok && !co->gate && !j->model[0])
                snprintf(j->model, sizeof j->model, "%s", mm);
            if (!ok && why[0])
                snprintf(e.msg, sizeof e.msg, "%s", why);
            if (ok && m->stats) {
                j->simulations = m->stats->simulations;
                j->fallbacks = m->stats->fallbacks;
            }
            if (ok) {
                j->fights = rep.fights;
                j->wins = rep.fights_won;
                j->turn_limits = rep.turn_limit_fights;
            }
        }
        sf_shard_reader_close(r);
        if (!ok) {
            char why[SF_ERR_MSG_MAX + 32];
            snprintf(why, sizeof why, "does not verify: %s", e.msg[0] ? e.msg : "(no reason)");
            set_aside(co, name, why);
            continue;
        }
        /* the file digest is recomputed: it is what trainers' pulls check */
        uint64_t size;
        if (sf_shard_file_sha256(path, j->file_sha256, &size, &e) < 0) {
            sf_log(co->log, co->log_ctx, "coordinator: not adopting %s: %s", path, e.msg);
            continue;
        }
        sf_hex(rep.digest, 32, j->content_digest);
        snprintf(j->shard_name, sizeof j->shard_name, "%s", name);
        j->records = rep.records;
        j->bytes = rep.file_bytes;
        j->state = JS_DONE;
        job_touch(co, j);
        co->need_sync = 1;
        sf_log(co->log, co->log_ctx, "coordinator: adopted %s for job %llu", name,
               (unsigned long long)j->id);
    }
}

static void clear_incoming(sf_coordinator *co) {
    DIR *d = opendir(co->incoming_dir);
    if (!d)
        return;
    struct dirent *e;
    char path[1400];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", co->incoming_dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

/* The steps of sf_coordinator_open(), in order, like LMDB's env open: each
 * returns SF_OK or an error whose message names the step's path or
 * endpoint, and on any error the caller frees with sf_coordinator_close(),
 * which undoes what the steps before did. */

/* 1: the coordinator, its copy of the config, the RunConfig sent to workers
 * and the digest. */
static int open_config(sf_coordinator *co, const sf_run_config *cfg, const sf_coord_opts *opts,
                       sf_err *err) {
    co->cfg = *cfg;
    co->exit_when_done = opts ? opts->exit_when_done : 0;
    co->max_workers = opts && opts->max_workers > 0 ? opts->max_workers : SF_COORD_MAX_WORKERS;
    co->slow_after_ns =
        (uint64_t)(opts && opts->slow_after_ms > 0 ? opts->slow_after_ms : SF_COORD_SLOW_AFTER_MS) *
        NS_PER_MS;
    co->log = opts ? opts->log : NULL;
    co->log_ctx = opts ? opts->log_ctx : NULL;
    co->cfg_msg = malloc(sizeof *co->cfg_msg);
    if (!co->cfg_msg)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    co->run_msg = sf_config_to_proto(&co->cfg, co->cfg_msg);
    int rc = sf_config_digest(cfg, co->digest);
    return rc < 0 ? sf_err_set(err, rc, "cannot compute the config digest") : SF_OK;
}

/* 2: <output_dir>/shards and incoming. */
static int open_dirs(sf_coordinator *co, sf_err *err) {
    const char *dir = co->cfg.output_dir;
    snprintf(co->shards_dir, sizeof co->shards_dir, "%s/shards", dir);
    snprintf(co->incoming_dir, sizeof co->incoming_dir, "%s/incoming", dir);
    snprintf(co->ledger_path, sizeof co->ledger_path, "%s/ledger.lmdb", dir);
    snprintf(co->rejected_dir, sizeof co->rejected_dir, "%s/rejected", dir);
    const char *made[] = {co->shards_dir, co->incoming_dir};
    for (int i = 0; i < 2; i++)
        if (sf_mkdir_p(made[i]) < 0)
            return sf_err_set(err, SF_EIO, "%s: cannot create: %s", made[i], strerror(errno));
    return SF_OK;
}

/* 3: the job table (every job pending) and its queues. */
static int open_jobs(sf_coordinator *co, sf_err *err) {
    const sf_run_config *cfg = &co->cfg;
    co->njobs = (cfg->seed_count + cfg->job_size - 1) / cfg->job_size;
    co->jobs = calloc(co->njobs, sizeof *co->jobs);
    co->queue = calloc(co->njobs, sizeof *co->queue);
    co->dirty = calloc(co->njobs, sizeof *co->dirty);
    co->leased = calloc(co->njobs, sizeof *co->leased);
    co->audits = calloc(co->njobs, sizeof *co->audits);
    co->failing = calloc(co->njobs, sizeof *co->failing);
    if (!co->jobs || !co->queue || !co->dirty || !co->leased || !co->audits || !co->failing)
        return sf_err_set(err, SF_ENOMEM, "out of memory for %llu jobs",
                          (unsigned long long)co->njobs);
    for (uint64_t i = 0; i < co->njobs; i++) {
        cjob *j = &co->jobs[i];
        j->id = i + 1;
        j->seed_start = cfg->seed_start + i * cfg->job_size;
        uint64_t left = cfg->seed_count - i * cfg->job_size;
        j->seed_count = (uint32_t)(left < cfg->job_size ? left : cfg->job_size);
        j->worker = -1;
        j->audit_worker = -1;
        j->maker = -1;
    }
    return SF_OK;
}

/* 4: one coordinator per output dir: an flock on coordinator.lock, which
 * holds the holder's pid for the next one's message. */
static int open_lock(sf_coordinator *co, sf_err *err) {
    char lock[400];
    snprintf(lock, sizeof lock, "%s/coordinator.lock", co->cfg.output_dir);
    co->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (co->lock_fd < 0)
        return sf_err_set(err, SF_EIO, "%s: cannot open: %s", lock, strerror(errno));
    if (flock(co->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        /* the holder writes its pid just after taking the lock, so a
         * coordinator that started at the same moment may not show one yet */
        char pid[24] = "", holder[40] = "";
        ssize_t got = pread(co->lock_fd, pid, sizeof pid - 1, 0);
        if (got > 0) {
            pid[got] = 0;
            pid[strcspn(pid, "\n")] = 0;
        }
        if (pid[0])
            snprintf(holder, sizeof holder, " (pid %s)", pid);
        return sf_err_set(err, SF_ESTATE,
                          "%s: another coordinator%s is serving this output dir; stop it first",
                          co->cfg.output_dir, holder);
    }
    char pidtxt[32];
    int pl = snprintf(pidtxt, sizeof pidtxt, "%d\n", (int)getpid());
    if (ftruncate(co->lock_fd, 0) != 0 || sf_pwrite_full(co->lock_fd, pidtxt, (size_t)pl, 0) < 0)
        sf_log(co->log, co->log_ctx, "coordinator: could not record the pid in %s: %s", lock,
               strerror(errno));
    return SF_OK;
}

/* 5: the ledger: the run found there (its digest must match), or a new one
 * with every job. */
static int open_ledger(sf_coordinator *co, sf_err *err) {
    int rc = ledger_open(co, err);
    if (rc < 0)
        return rc;
    rc = ledger_load(co, err);
    if (rc == 0)
        return ledger_create(co, err);
    return rc < 0 ? rc : SF_OK;
}

/* 6: recovery (coordinator.h "Durability"): half-received uploads go,
 * stored shards the ledger does not call done are adopted, leased jobs get
 * one liveness window, pending ones are queued; then one commit. */
static int open_recover(sf_coordinator *co, sf_err *err) {
    clear_incoming(co);
    recheck_done_jobs(co);
    adopt_stored_shards(co);
    uint64_t now = sf_now_ns();
    uint64_t window = (uint64_t)co->cfg.coordinator.heartbeat_ms *
                      co->cfg.coordinator.heartbeat_liveness * NS_PER_MS;
    for (uint64_t i = 0; i < co->njobs; i++) {
        cjob *j = &co->jobs[i];
        if (j->state == JS_PENDING) {
            queue_push(co, j->id);
        } else if (j->state == JS_LEASED) {
            leased_add(co, j);
            /* Whoever held it has one liveness window to say so (a heartbeat
             * or progress naming the job renews the full lease); otherwise
             * the job goes back to pending instead of waiting out a lease. */
            j->worker = -1;
            j->deadline = now + window;
            j->leased_ns = now;
        } else {
            count_done(co, j);
        }
    }
    return ledger_commit(co, err);
}

/* 7: security: with mode curve the key directory (made for a local run
 * when security.keys is "") and the ZAP handler, on a context of its own
 * before any socket; mode none says at every start what it lets in. */
static int open_security(sf_coordinator *co, const char *bind, sf_err *err) {
    co->zctx = zmq_ctx_new();
    if (!co->zctx)
        return sf_err_set(err, SF_EIO, "cannot start ZeroMQ: %s", zmq_strerror(zmq_errno()));
    char dir[SF_CFG_PATH + 8];
    sf_config_keys_dir(&co->cfg, dir, sizeof dir);
    if (!dir[0]) {
        sf_log(co->log, co->log_ctx,
               "coordinator: WARNING: security.mode none: anyone who reaches %s can take jobs, "
               "upload shards, read status and stop the run",
               bind);
        return SF_OK;
    }
    int rc = co->cfg.security.keys[0] ? SF_OK : sf_zsec_ensure_dir(dir, err);
    if (rc == SF_OK)
        rc = sf_zsec_server_open(co->zctx, dir, co->log, co->log_ctx, &co->zsec, err);
    if (rc == SF_OK) /* keys quarantined before a restart stay refused */
        rc = co_quarantine_open(co, err);
    return rc < 0 ? sf_err_prefix(err, "security") : SF_OK;
}

/* 8: the ROUTER, bound at `bind`; co->endpoint is what it got. */
static int open_router(sf_coordinator *co, const char *bind, sf_err *err) {
    co->router = zmq_socket(co->zctx, ZMQ_ROUTER);
    if (!co->router)
        return sf_err_set(err, SF_EIO, "%s: cannot make a socket: %s", bind,
                          zmq_strerror(zmq_errno()));
    if (co->zsec && sf_zsec_server_apply(co->zsec, co->router, err) < 0)
        return sf_err_prefix(err, "%s", bind);
    /* Per-peer queues, in messages: a peer that stops reading gets at most
     * SNDHWM replies (each at most a SF_FLEET_CHUNK ShardData) queued before the
     * rest are dropped, so it cannot grow the coordinator without bound.
     * Every legitimate peer asks and waits, so a handful would do. */
    int one = 1, zero = 0, sndhwm = 64, rcvhwm = 1000;
    zmq_setsockopt(co->router, ZMQ_ROUTER_HANDOVER, &one, sizeof one);
    zmq_setsockopt(co->router, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(co->router, ZMQ_SNDHWM, &sndhwm, sizeof sndhwm);
    zmq_setsockopt(co->router, ZMQ_RCVHWM, &rcvhwm, sizeof rcvhwm);
    int64_t maxmsg = SF_FLEET_MAX_MSG;
    zmq_setsockopt(co->router, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (zmq_bind(co->router, bind) != 0)
        return sf_err_set(err, SF_EIO, "cannot bind %s: %s", bind, zmq_strerror(zmq_errno()));
    size_t elen = sizeof co->endpoint;
    zmq_getsockopt(co->router, ZMQ_LAST_ENDPOINT, co->endpoint, &elen);
    return SF_OK;
}

/* Rename the ledger (and its LMDB lock file) out of the way. */
static int move_ledger_aside(sf_coordinator *co, sf_ledger_rebuild *rep, sf_err *err) {
    rep->moved_to[0] = 0;
    if (access(co->ledger_path, F_OK) != 0)
        return SF_OK;
    snprintf(rep->moved_to, sizeof rep->moved_to, "%.300s.damaged-%lld", co->ledger_path,
             (long long)time(NULL));
    if (rename(co->ledger_path, rep->moved_to) != 0)
        return sf_err_set(err, SF_EIO, "%s: cannot move it to %s: %s", co->ledger_path,
                          rep->moved_to, strerror(errno));
    char lock[320];
    snprintf(lock, sizeof lock, "%s-lock", co->ledger_path);
    unlink(lock);
    return sf_fsync_dir(co->cfg.output_dir, err);
}

/* A coordinator with the run's state loaded (config, dirs, jobs, the
 * output dir's lock, the ledger, the gate, recovery), not yet serving; with
 * `rebuild` the old ledger is moved aside first, so one is built from the
 * shards. *out is set even on error (close it). */
static int open_run(const sf_run_config *cfg, const sf_coord_opts *opts, sf_ledger_rebuild *rebuild,
                    sf_coordinator **out, sf_err *err) {
    *out = NULL;
    if (sodium_init() < 0)
        return sf_err_set(err, SF_EIO, "libsodium failed to initialise");
    sf_coordinator *co = calloc(1, sizeof *co);
    if (!co)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    co->lock_fd = -1;
    pthread_mutex_init(&co->snap_lock, NULL);
    *out = co;
    int rc = open_config(co, cfg, opts, err);
    if (rc == SF_OK)
        rc = open_dirs(co, err);
    if (rc == SF_OK)
        rc = open_jobs(co, err);
    if (rc == SF_OK)
        rc = open_lock(co, err);
    if (rc == SF_OK && rebuild)
        rc = move_ledger_aside(co, rebuild, err);
    if (rc == SF_OK)
        rc = open_ledger(co, err);
    if (rc == SF_OK)
        rc = gate_open(co, err);
    if (rc == SF_OK)
        rc = open_recover(co, err);
    return rc;
}

/* Whether copies of one job can differ though every worker is honest:
 * a network evaluated by the cuda backend, which is not bit-identical
 * (cuBLAS may pick algorithms by batch shape; docs/model.md "Backends").
 * Audits compare copies byte for byte, so they are off then. */
static int copies_may_differ(const sf_run_config *cfg) {
    if (strcmp(cfg->evald.backend, "cuda"))
        return 0;
    int net = !strcmp(cfg->search.evaluator, "net");
    if (!strcmp(cfg->kind, "gate"))
        for (int side = 0; side < 2; side++)
            net |= !strcmp(sf_config_gate_side(cfg, side)->evaluator, "net");
    return net;
}

int sf_coordinator_open(const sf_run_config *cfg, const sf_coord_opts *opts, sf_coordinator **out,
                        sf_err *err) {
    *out = NULL;
    sf_coordinator *co;
    const char *bind = opts && opts->bind ? opts->bind : cfg->coordinator.endpoint;
    int port = opts ? opts->metrics_port : (int)cfg->coordinator.metrics_port;
    int rc = open_run(cfg, opts, NULL, &co, err);
    if (rc == SF_OK && copies_may_differ(cfg) &&
        cfg->security.audit_fraction + cfg->security.audit_first_jobs > 0) {
        co->audits_off = 1;
        sf_log(co->log, co->log_ctx,
               "coordinator: audits are off: the cuda backend is not bit-identical, so honest "
               "copies of a job differ (docs/operator.md \"Audits\")");
    }
    if (rc == SF_OK)
        rc = gate_advance(co, err);
    if (rc == SF_OK)
        rc = open_security(co, bind, err);
    if (rc == SF_OK)
        rc = open_router(co, bind, err);
    if (rc == SF_OK)
        rc = metrics_start(co, port, err);
    if (rc < 0) {
        if (co)
            sf_coordinator_close(co);
        return rc;
    }
    co->started_ns = sf_now_ns();
    metrics_publish(co);
    *out = co;
    return SF_OK;
}

int sf_coordinator_rebuild_ledger(const sf_run_config *cfg, const sf_coord_opts *opts,
                                  sf_ledger_rebuild *rep, sf_err *err) {
    memset(rep, 0, sizeof *rep);
    sf_coordinator *co;
    int rc = open_run(cfg, opts, rep, &co, err);
    if (co) {
        rep->jobs_total = co->njobs;
        rep->jobs_done = co->st.jobs_done;
        sf_coordinator_close(co);
    }
    return rc;
}

const char *sf_coordinator_endpoint(const sf_coordinator *co) {
    return co->endpoint;
}

int sf_coordinator_metrics_port(const sf_coordinator *co) {
    return sf_metrics_http_port(co->http);
}

const char *sf_coordinator_metrics_url(const sf_coordinator *co) {
    return sf_metrics_http_url(co->http);
}

/* ------------------------------------------------------------------------
 * The loop
 * ---------------------------------------------------------------------- */

int sf_coordinator_step(sf_coordinator *co, int timeout_ms, sf_err *err) {
    zmq_pollitem_t item = {co->router, 0, ZMQ_POLLIN, 0};
    zmq_poll(&item, 1, timeout_ms);
    /* a dead ZAP handler lets any CURVE key shake hands: stop, whether or
     * not anything arrived */
    int zrc = sf_zsec_server_check(co->zsec, err);
    if (zrc < 0)
        return zrc;
    for (int n = 0; n < MAX_MSGS_PER_STEP && co->reply_bytes < MAX_REPLY_BYTES_PER_STEP; n++) {
        zmq_msg_t parts[3];
        int nparts = 0, more = 1, got = 0;
        while (more) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, co->router, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(&m);
                break;
            }
            got = 1;
            more = zmq_msg_more(&m);
            if (nparts < 3)
                parts[nparts++] = m;
            else
                zmq_msg_close(&m);
        }
        if (!got)
            break;
        /* who sent it (the key its connection authenticated with), before
         * a byte of it is decoded */
        char key[SF_ZSEC_KEY_LEN + 1];
        int role = sf_zsec_peer(co->zsec, &parts[nparts - 1], key, err);
        if (role < 0) {
            for (int i = 0; i < nparts; i++)
                zmq_msg_close(&parts[i]);
            return role; /* the ZAP handler died: nothing may be let in */
        }
        if (role == SF_ZSEC_REFUSED) {
            co->st.auth_refused++;
            if (zmq_msg_size(&parts[0]) <= 255)
                reply_error(co, zmq_msg_data(&parts[0]), zmq_msg_size(&parts[0]), SF_ESTATE,
                            "this key is no longer allowed");
        } else if (nparts == 2 && zmq_msg_size(&parts[0]) <= 255) {
            /* [identity][body]; anything else is a framing error */
            handle(co, zmq_msg_data(&parts[0]), zmq_msg_size(&parts[0]), zmq_msg_data(&parts[1]),
                   zmq_msg_size(&parts[1]), role, key);
        } else {
            co->st.decode_errors++;
            if (nparts >= 1 && zmq_msg_size(&parts[0]) <= 255)
                reply_error(co, zmq_msg_data(&parts[0]), zmq_msg_size(&parts[0]), SF_EFORMAT,
                            "expected exactly one message frame");
        }
        for (int i = 0; i < nparts; i++)
            zmq_msg_close(&parts[i]);
    }
    expire(co);
    int rc = ledger_commit(co, err);
    if (rc == SF_OK) /* after the commit: the verdict reads only durable shards */
        rc = gate_advance(co, err);
    if (rc < 0)
        return rc;
    if (all_done(co) && !co->complete_ns) {
        co->complete_ns = sf_now_ns();
        sf_log(co->log, co->log_ctx, "coordinator: run %s complete: %llu jobs, %llu labels",
               co->cfg.name, (unsigned long long)co->njobs, (unsigned long long)co->st.labels);
        /* idle workers are waiting on a Wait: tell them now */
        for (int i = 0; i < co->nworkers; i++) {
            cworker *w = &co->workers[i];
            if (!w->alive || w->told_complete)
                continue;
            Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
            Spirefleet__RunComplete rc_msg = SPIREFLEET__RUN_COMPLETE__INIT;
            env.body_case = SPIREFLEET__ENVELOPE__BODY_RUN_COMPLETE;
            env.run_complete = &rc_msg;
            w->told_complete = 1;
            queue_reply(co, w->ident, w->ident_len, &env);
        }
    }
    flush_replies(co);
    uint64_t now = sf_now_ns();
    if (now - co->last_publish > 250 * NS_PER_MS) {
        metrics_publish(co);
        co->last_publish = now;
    }
    return SF_OK;
}

int sf_coordinator_serve(sf_coordinator *co, const volatile sig_atomic_t *stop, sf_err *err) {
    while (!(stop && *stop) && !co->stopping) {
        int rc = sf_coordinator_step(co, 100, err);
        if (rc < 0)
            return rc;
        if (co->exit_when_done && co->complete_ns) {
            /* linger until every live worker has heard RunComplete, or for
             * two heartbeat periods */
            int waiting = 0;
            for (int i = 0; i < co->nworkers; i++)
                waiting |= co->workers[i].alive && !co->workers[i].told_complete;
            uint64_t grace = 2ull * co->cfg.coordinator.heartbeat_ms * NS_PER_MS;
            if (!waiting || sf_now_ns() - co->complete_ns > grace)
                break;
        }
    }
    /* a last round so that Stop and RunComplete replies go out */
    return sf_coordinator_step(co, 0, err);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The SLOW rule (coordinator.h): the median of the recent completed jobs'
 * durations, then every leased job that has run SF_COORD_SLOW_FACTOR times
 * that and at least slow_after_ns, the longest first. */
static void slow_status(const sf_coordinator *co, uint64_t now, sf_coord_status *st) {
    double secs[256];
    int n = 0;
    for (int k = 0; k < co->done_n; k++)
        if (co->done_secs[k] > 0.0)
            secs[n++] = co->done_secs[k];
    qsort(secs, (size_t)n, sizeof secs[0], cmp_double);
    st->job_median_s = n == 0 ? 0.0 : n % 2 ? secs[n / 2] : 0.5 * (secs[n / 2 - 1] + secs[n / 2]);
    st->jobs_slow = 0;
    st->n_slow = 0;
    st->longest_running_s = 0.0;
    double bound = SF_COORD_SLOW_FACTOR * st->job_median_s;
    if ((double)co->slow_after_ns / 1e9 > bound)
        bound = (double)co->slow_after_ns / 1e9;
    for (uint64_t k = 0; k < co->n_leased; k++) {
        const cjob *j = &co->jobs[co->leased[k] - 1];
        double run = j->leased_ns && now > j->leased_ns ? (double)(now - j->leased_ns) / 1e9 : 0;
        if (run > st->longest_running_s)
            st->longest_running_s = run;
        if (n < SF_COORD_SLOW_MIN_PEERS || run < bound)
            continue;
        st->jobs_slow++;
        /* keep the SF_COORD_SLOW_SHOWN longest, longest first */
        int at = st->n_slow < SF_COORD_SLOW_SHOWN ? st->n_slow++ : SF_COORD_SLOW_SHOWN;
        while (at > 0 && st->slow[at - 1].running_s < run) {
            if (at < SF_COORD_SLOW_SHOWN)
                st->slow[at] = st->slow[at - 1];
            at--;
        }
        if (at < SF_COORD_SLOW_SHOWN) {
            st->slow[at].job_id = j->id;
            snprintf(st->slow[at].worker_id, sizeof st->slow[at].worker_id, "%s", j->worker_id);
            st->slow[at].running_s = run;
        }
    }
}

void sf_coordinator_status(sf_coordinator *co, sf_coord_status *st) {
    *st = co->st;
    st->jobs_total = co->njobs;
    st->jobs_leased = co->n_leased;
    st->jobs_pending = co->njobs - co->n_leased - st->jobs_done;
    uint64_t prog_labels = 0, prog_fights = 0;
    for (uint64_t k = 0; k < co->n_leased; k++) {
        const cjob *j = &co->jobs[co->leased[k] - 1];
        prog_labels += j->prog_labels;
        prog_fights += j->prog_fights;
    }
    st->workers_alive = 0;
    for (int i = 0; i < co->nworkers; i++)
        st->workers_alive += co->workers[i].alive;
    st->complete = all_done(co);
    /* rates over completions in the last 60 s (or since the start) */
    uint64_t now = sf_now_ns(), window = 60ull * NS_PER_S, labels = 0, jobs = 0;
    for (int k = 0; k < co->done_n; k++) {
        int idx = (co->done_head - 1 - k + 256) % 256;
        if (now - co->done_t[idx] > window)
            break;
        labels += co->done_labels[idx];
        jobs++;
    }
    double span = (double)(now - co->started_ns) / 1e9;
    if (span > 60.0)
        span = 60.0;
    if (span < 1e-3)
        span = 1e-3;
    st->labels_per_s = (double)labels / span;
    double jobs_per_s = (double)jobs / span;
    uint64_t left = co->njobs - st->jobs_done;
    st->eta_s = left == 0 ? 0.0 : jobs_per_s > 0 ? (double)left / jobs_per_s : -1.0;
    st->jobs_quarantined = 0;
    for (uint64_t k = 0; k < co->n_failing; k++) {
        const cjob *j = &co->jobs[co->failing[k] - 1];
        st->jobs_quarantined += j->state == JS_PENDING && job_failed_out(co, j);
    }
    st->keys_known = (uint32_t)co->n_idents;
    int usable = co_usable_identities(co, 0);
    /* a failed-out job is never issued again: when every job left is one,
     * or every key that came is quarantined for its failure reports, the
     * run cannot finish (as things stand), and has no ETA */
    st->cannot_finish = !st->complete && left > 0 &&
                        (st->jobs_quarantined >= left || (co->n_idents > 0 && usable == 0));
    st->audits_open = co->n_audits;
    st->audits_differ = (uint64_t)audit_undecided(co, st->undecided, SF_COORD_AUDITS_SHOWN);
    st->n_undecided =
        st->audits_differ < SF_COORD_AUDITS_SHOWN ? (int)st->audits_differ : SF_COORD_AUDITS_SHOWN;
    /* work waits (a pending job, an audit wanting a copy) and no one plays it */
    uint64_t waiting = st->jobs_pending - st->jobs_quarantined;
    for (uint64_t k = 0; k < co->n_audits; k++)
        waiting += co->jobs[co->audits[k] - 1].audit_stage < 3;
    if (gate_decided(co))
        waiting = co->n_audits;
    st->no_workers = !st->complete && st->workers_alive == 0 && waiting > 0 && co->n_idents > 0;
    if (st->no_workers || (!st->complete && left == 0))
        st->eta_s = -1.0; /* no one plays, or what is left waits on audits: no estimate */
    if (st->cannot_finish)
        st->eta_s = -1.0;
    sf_zsec_counts zc;
    sf_zsec_server_counts(co->zsec, &zc);
    st->auth_denied = zc.handshakes_denied;
    st->fights_in_progress = prog_fights;
    st->labels_in_progress = prog_labels;
    slow_status(co, now, st);
    gate_status(co, st);
}

void sf_coordinator_close(sf_coordinator *co) {
    if (!co)
        return;
    metrics_stop(co);
    for (int i = 0; i < co->nworkers; i++)
        upload_discard(&co->workers[i].up);
    for (int i = 0; i < co->nreplies; i++)
        free(co->replies[i].bytes);
    if (co->router)
        zmq_close(co->router);
    sf_zsec_server_close(co->zsec);
    if (co->zctx)
        zmq_ctx_term(co->zctx);
    if (co->env) {
        sf_err e = {0};
        ledger_commit(co, &e);
        ledger_close(co);
    }
    if (co->lock_fd >= 0)
        close(co->lock_fd); /* releases the flock */
    pthread_mutex_destroy(&co->snap_lock);
    free(co->replies);
    free(co->workers);
    free(co->jobs);
    free(co->queue);
    free(co->dirty);
    free(co->leased);
    free(co->audits);
    free(co->failing);
    free(co->idents);
    free(co->cfg_msg);
    gate_close(co);
    free(co);
}
