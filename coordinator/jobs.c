/*
 * jobs.c — the coordinator's in-memory tables: jobs (the pending queue,
 * the leased set, done totals), workers and identities. Every change to a
 * job goes through job_touch, so the step's ledger commit writes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coordinator/internal.h"
#include "shard/shard.h"

/* Room for element n of the array *v (capacity *cap elements of `size`
 * bytes): doubled when full, `first` elements at first. 0, or -1 without
 * memory (*v and *cap unchanged). */
int co_room_for_one(void **v, int n, int *cap, size_t size, int first) {
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

/* open.c's open_jobs: the job table and five id arrays (queue, dirty,
 * leased, audits, failing), one entry per job each. */
uint64_t sf_coordinator_table_bytes(uint64_t njobs) {
    return njobs * (sizeof(cjob) + 5 * sizeof(uint64_t));
}

void job_touch(sf_coordinator *co, cjob *j) {
    if (!j->dirty) {
        j->dirty = 1;
        co->dirty[co->ndirty++] = j->id;
    }
}

/* The set of leased jobs, so timers and status cost O(leased), not O(jobs). */
void co_leased_add(sf_coordinator *co, cjob *j) {
    j->lease_pos = co->n_leased;
    co->leased[co->n_leased++] = j->id;
}

void co_leased_remove(sf_coordinator *co, cjob *j) {
    uint64_t last = co->leased[--co->n_leased];
    co->leased[j->lease_pos] = last;
    co->jobs[last - 1].lease_pos = j->lease_pos;
}

/* Worker wi's liveness, kept per identity too (co_ident.alive). */
void co_worker_set_alive(sf_coordinator *co, int wi, int alive) {
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

/* Every queue slot is a distinct job (j->queued), so the ring of njobs
 * never overflows. */
void co_queue_push(sf_coordinator *co, uint64_t id) {
    if (co->jobs[id - 1].queued)
        return;
    co->jobs[id - 1].queued = 1;
    co->queue[(co->q_head + co->q_len) % co->njobs] = id;
    co->q_len++;
}

uint64_t co_queue_pop(sf_coordinator *co) {
    while (co->q_len > 0) {
        uint64_t id = co->queue[co->q_head];
        co->q_head = (co->q_head + 1) % co->njobs;
        co->q_len--;
        cjob *j = &co->jobs[id - 1];
        j->queued = 0;
        if (j->state == JS_PENDING && !co_job_failed_out(co, j))
            return id;
    }
    return 0;
}

/* Give back the id co_queue_pop() just returned, at the head again. */
void co_queue_unpop(sf_coordinator *co, uint64_t id) {
    co->q_head = (co->q_head + co->njobs - 1) % co->njobs;
    co->queue[co->q_head] = id;
    co->q_len++;
    co->jobs[id - 1].queued = 1;
}

co_ident *co_ident_of(sf_coordinator *co, int wi) {
    int i = wi >= 0 && wi < co->nworkers ? co->workers[wi].who : -1;
    return i >= 0 ? &co->idents[i] : NULL;
}

/* The index of identity `id` in co->idents, added if new; -1 without
 * memory. A new identity may let failed-out jobs back in (requeue). */
int co_ident_index(sf_coordinator *co, const char *id) {
    for (int i = 0; i < co->n_idents; i++)
        if (!strcmp(co->idents[i].id, id))
            return i;
    if (co_room_for_one((void **)&co->idents, co->n_idents, &co->cap_idents, sizeof *co->idents,
                        8) < 0)
        return -1;
    co_ident *n = &co->idents[co->n_idents];
    memset(n, 0, sizeof *n);
    snprintf(n->id, sizeof n->id, "%s", id);
    co->n_idents++;
    co_requeue_failing(co);
    return co->n_idents - 1;
}

void co_shard_name(const sf_coordinator *co, uint64_t job, char *out, size_t cap) {
    sf_shard_name(co->cfg.name, job, out, cap);
}

const char *co_job_model(const sf_coordinator *co, const cjob *j) {
    return j->model ? co->models[j->model - 1] : "";
}

int co_job_set_model(sf_coordinator *co, cjob *j, const char *model) {
    if (!model[0]) {
        j->model = 0;
        return 0;
    }
    if (strlen(model) >= sizeof co->models[0])
        return -1;
    for (int k = co->n_models; k-- > 0;) /* a handful: one a champion */
        if (!strcmp(co->models[k], model)) {
            j->model = (uint32_t)k + 1;
            return 0;
        }
    if (co_room_for_one((void **)&co->models, co->n_models, &co->cap_models, sizeof co->models[0],
                        4) < 0)
        return -1;
    snprintf(co->models[co->n_models], sizeof co->models[0], "%s", model);
    j->model = (uint32_t)++co->n_models;
    return 0;
}

const char *co_job_shard(const sf_coordinator *co, const cjob *j, char out[CO_SHARD_NAME_MAX]) {
    out[0] = 0;
    if (j->state == JS_DONE)
        co_shard_name(co, j->id, out, CO_SHARD_NAME_MAX);
    return out;
}

/* FNV-1a of a routing id. */
static uint32_t ident_hash(const uint8_t *p, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

static void widx_put(sf_coordinator *co, int wi) {
    const cworker *w = &co->workers[wi];
    uint32_t mask = co->widx_cap - 1, k = ident_hash(w->ident, w->ident_len) & mask;
    while (co->widx[k] >= 0)
        k = (k + 1) & mask;
    co->widx[k] = wi;
    co->widx_used++;
}

/* Room for one more entry: the table rebuilt at four times the workers
 * (at least 64 slots) once entries and deletions fill half of it, so a
 * probe always meets an empty slot. 1 when rebuilt (every worker under its
 * current id in it), else 0. Without memory the index is dropped
 * (widx_cap 0): lookups scan. */
static int widx_room(sf_coordinator *co) {
    if (co->widx_cap && 2 * (co->widx_used + 1) <= co->widx_cap)
        return 0;
    uint32_t cap = 64;
    while (cap < 4u * (uint32_t)(co->nworkers + 1))
        cap *= 2;
    free(co->widx);
    co->widx = malloc(cap * sizeof *co->widx);
    co->widx_cap = co->widx ? cap : 0;
    co->widx_used = 0;
    if (!co->widx)
        return 1;
    memset(co->widx, 0xff, cap * sizeof *co->widx); /* -1: empty */
    for (int i = 0; i < co->nworkers; i++)
        widx_put(co, i);
    return 1;
}

int co_worker_find(sf_coordinator *co, const uint8_t *ident, size_t len) {
    if (!co->widx_cap) {
        for (int i = 0; i < co->nworkers; i++)
            if (co->workers[i].ident_len == len && !memcmp(co->workers[i].ident, ident, len))
                return i;
        return -1;
    }
    /* a routing id another key's worker held can be held by two slots: the
     * lower index, as a scan finds it */
    int best = -1;
    uint32_t mask = co->widx_cap - 1;
    for (uint32_t k = ident_hash(ident, len) & mask; co->widx[k] != -1; k = (k + 1) & mask) {
        int i = co->widx[k];
        if (i >= 0 && (best < 0 || i < best) && co->workers[i].ident_len == len &&
            !memcmp(co->workers[i].ident, ident, len))
            best = i;
    }
    return best;
}

int co_worker_add(sf_coordinator *co, const uint8_t *ident, size_t len) {
    if (co_room_for_one((void **)&co->workers, co->nworkers, &co->cap_workers, sizeof *co->workers,
                        16) < 0)
        return -1;
    cworker *w = &co->workers[co->nworkers];
    memset(w, 0, sizeof *w);
    memcpy(w->ident, ident, len);
    w->ident_len = len;
    w->who = -1;
    int wi = co->nworkers++;
    if (!widx_room(co)) /* a rebuild has it already */
        widx_put(co, wi);
    return wi;
}

void co_worker_set_ident(sf_coordinator *co, int wi, const uint8_t *ident, size_t len) {
    cworker *w = &co->workers[wi];
    if (co->widx_cap) { /* its entry under the old id: deleted */
        uint32_t mask = co->widx_cap - 1;
        for (uint32_t k = ident_hash(w->ident, w->ident_len) & mask; co->widx[k] != -1;
             k = (k + 1) & mask)
            if (co->widx[k] == wi) {
                co->widx[k] = -2;
                break;
            }
    }
    memcpy(w->ident, ident, len);
    w->ident_len = len;
    if (!widx_room(co))
        widx_put(co, wi);
}

void co_upload_discard(upload *u) {
    sf_sha256_free(u->sha);
    if (u->f)
        fclose(u->f);
    if (u->active && u->path[0])
        unlink(u->path);
    memset(u, 0, sizeof *u);
}

/* Add a done job to the run's totals. */
void co_count_done(sf_coordinator *co, const cjob *j) {
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
void co_release_job(sf_coordinator *co, cjob *j, int expired) {
    if (j->state != JS_LEASED)
        return;
    j->state = JS_PENDING;
    co_leased_remove(co, j);
    j->worker = -1;
    j->prog_fights = j->prog_labels = 0;
    job_touch(co, j);
    co_queue_push(co, j->id);
    if (expired) {
        co->st.lease_expiries++;
        char what[48];
        snprintf(what, sizeof what, "lease of job %llu expired", (unsigned long long)j->id);
        co_note_error(co, j->worker_id, what,
                      "its lease ran out or its worker fell silent; the job is issued again");
    }
}

/* Done job j pending again, its shard forgotten (committed with a sync). */
void co_job_pending(sf_coordinator *co, cjob *j) {
    j->state = JS_PENDING;
    j->content_digest[0] = j->file_sha256[0] = 0;
    j->records = j->bytes = j->fights = j->simulations = j->fallbacks = j->wins = 0;
    j->turn_limits = 0;
    job_touch(co, j);
    co->need_sync = 1;
}

/* internal.h: a done job back to pending (its shard gone from shards/), or a
 * leased one released. */
void co_job_undo(sf_coordinator *co, cjob *j) {
    if (j->state == JS_LEASED) {
        co_release_job(co, j, 0);
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
    co_job_pending(co, j);
    co_queue_push(co, j->id);
}

void co_job_replay(sf_coordinator *co, cjob *j, const char *why) {
    if (j->state != JS_DONE)
        return;
    char name[CO_SHARD_NAME_MAX];
    co_set_aside(co, co_job_shard(co, j, name), why);
    co_job_undo(co, j);
}

void co_worker_dead(sf_coordinator *co, int wi) {
    cworker *w = &co->workers[wi];
    co_worker_set_alive(co, wi, 0);
    co_upload_discard(&w->up);
    audit_expire(co, sf_now_ns(), wi);
    for (uint64_t k = co->n_leased; k-- > 0;) {
        cjob *j = &co->jobs[co->leased[k] - 1];
        if (j->worker == wi)
            co_release_job(co, j, 1);
    }
}

/* Whether the leased job j is worker wi's: leased to its slot, or restored
 * from the ledger under its worker id and not claimed yet. */
int co_lease_is(const sf_coordinator *co, const cjob *j, int wi) {
    return j->worker == wi || (j->worker < 0 && !strcmp(j->worker_id, co->workers[wi].worker_id));
}

/* co_lease_is, and then the lease is wi's slot's (a restored lease is claimed
 * by the first message of the worker id that held it). */
int co_claim_lease(sf_coordinator *co, cjob *j, int wi) {
    if (j->state != JS_LEASED || !co_lease_is(co, j, wi))
        return 0;
    j->worker = wi;
    return 1;
}

/* Every job done, or a gate's verdict written (then nothing more is
 * issued; leased jobs may still deliver, and are stored), and no audit
 * open: a shard is final only once every audit opened on it is decided, so
 * a run with an open audit is not complete (its workers wait for the
 * copies; audit.c). */
int co_all_done(const sf_coordinator *co) {
    return (co->st.jobs_done == co->njobs || gate_decided(co)) && co->n_audits == 0;
}
