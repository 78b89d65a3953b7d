/*
 * limits.c — what one worker or one key may do (docs/operator.md
 * "Security"): how many workers a key keeps alive, how many leases a worker
 * and a key hold, when failure reports fail a job out or stop a key.
 * One key gains nothing by using many worker ids.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "coordinator/internal.h"

int co_usable_identities(const sf_coordinator *co, int alive_only) {
    int n = 0;
    for (int i = 0; i < co->n_idents; i++)
        n += (!alive_only || co->idents[i].alive > 0) && !co->idents[i].quarantined &&
             !co->idents[i].failing;
    return n;
}

/* Whether job j has failed out of the run: reported failed by
 * CO_MAX_FAILURES distinct workers of at least min(CO_MAX_FAILURES, the
 * identities seen) distinct identities. One key cannot fail a job out
 * whatever worker ids it uses once another key has come to play it (a job
 * it failed out before is issued again then: co_requeue_failing); a run of one
 * key (every local run) needs three of its workers. */
int co_job_failed_out(const sf_coordinator *co, const cjob *j) {
    uint32_t seen = co->n_idents > 0 ? (uint32_t)co->n_idents : 1;
    uint32_t need = seen < CO_MAX_FAILURES ? seen : CO_MAX_FAILURES;
    return j->failures >= CO_MAX_FAILURES && j->failed_idents >= need;
}

/* Pending jobs with failure reports that are no longer failed out (another
 * identity arrived) go back into the queue. */
void co_requeue_failing(sf_coordinator *co) {
    for (uint64_t k = 0; k < co->n_failing; k++) {
        cjob *j = &co->jobs[co->failing[k] - 1];
        if (j->state == JS_PENDING && !j->queued && !co_job_failed_out(co, j))
            co_queue_push(co, j->id);
    }
}

/* The leases worker wi holds (also those restored from the ledger under
 * its id that it has not claimed yet). O(leased). */
uint32_t co_leases_held(const sf_coordinator *co, int wi) {
    uint32_t n = 0;
    for (uint64_t k = 0; k < co->n_leased; k++)
        n += (uint32_t)co_lease_is(co, &co->jobs[co->leased[k] - 1], wi);
    return n;
}

/* The most leases one identity may hold at once: with two or more usable
 * identities, security.max_lease_share of the jobs not done (at least
 * CO_MAX_LEASES_PER_WORKER), so one key cannot hold the run's leases
 * whatever worker ids it uses; with one, no bound beyond the per-worker
 * one (a local run's workers share one key). */
int co_key_may_lease(const sf_coordinator *co, int wi) {
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

/* A Hello under a worker id the run does not know yet, from `key`: one
 * key cannot take the run's leases by making worker ids (at most
 * security.max_workers_per_key live ones; the dead hold no lease), and the
 * run takes at most max_workers worker ids. */
int co_may_join(sf_coordinator *co, const char *key, char *why, size_t cap) {
    uint32_t most = co->cfg.security.max_workers_per_key, of_key = 0;
    for (int i = 0; key[0] && i < co->nworkers; i++)
        of_key += co->workers[i].alive && !strcmp(co->workers[i].key, key);
    if (key[0] && of_key >= most) {
        char id[SF_ZSEC_ID_LEN + 1];
        sf_zsec_key_id(key, id);
        snprintf(why, cap,
                 "key %s has %u live worker ids, the most security.max_workers_per_key "
                 "allows; reuse an id",
                 id, of_key);
    } else if (co->nworkers >= co->max_workers) {
        snprintf(why, cap, "the run has %d worker ids, the most it takes; reuse an id",
                 co->nworkers);
    } else {
        return 0;
    }
    if (!co->st.workers_refused++)
        sf_log(co->log, co->log_ctx, "coordinator: refused a Hello: %s", why);
    return -1;
}

uint32_t co_workers_admitted(const sf_coordinator *co) {
    uint32_t n = 0;
    for (int i = 0; i < co->nworkers; i++) {
        /* a worker (or key) that gets no more jobs holds no place: it
         * would otherwise keep the run at its limit with nobody playing */
        const co_ident *id = co_ident_of((sf_coordinator *)co, i);
        n += co->workers[i].alive && !co->workers[i].quarantined &&
             !(id && (id->failing || id->quarantined));
    }
    return n;
}

/* The per-run worker limit (OpenBench's per-test worker limit), so a gate
 * and a self-play run that one pool of workers serves cannot starve each
 * other: past coordinator.max_workers live workers a Hello is refused, and
 * the worker takes its next run (sf-fleet worker with several). Liveness
 * is the coordinator's rule (heartbeat_ms x heartbeat_liveness of silence,
 * or a Goodbye). */
int co_may_admit(sf_coordinator *co, int wi, char *why, size_t cap) {
    uint32_t most = co->cfg.coordinator.max_workers;
    if (!most || (wi >= 0 && co->workers[wi].alive) || co_workers_admitted(co) < most)
        return 0;
    snprintf(why, cap, "run %s is at its worker limit (%u, coordinator.max_workers)", co->cfg.name,
             most);
    if (!co->st.workers_refused_limit++)
        sf_log(co->log, co->log_ctx, "coordinator: refused a Hello: %s", why);
    return -1;
}

void co_on_goodbye(sf_coordinator *co, int wi, const Spirefleet__Goodbye *g) {
    char why[121];
    sf_str_printable(why, sizeof why, g->reason); /* from the network: bounded */
    sf_log(co->log, co->log_ctx, "coordinator: worker %s left: %s", co->workers[wi].worker_id,
           why[0] ? why : "goodbye");
    co_worker_dead(co, wi);
    co->workers[wi].hello = 0; /* back only through Hello (and the limit) */
}

/* A failure report for job j from its lease holder wi (`why`: the
 * sanitised reason), counted against the worker (CO_MAX_WORKER_FAILURES
 * stops it), its identity (with two or more identities,
 * SF_COORD_MAX_KEY_FAILURES more than its stored jobs stops the key, and
 * its other leases go to others) and the job (each worker and identity
 * once: one worker, or one key under many worker ids, cannot fail it out). */
void co_count_failure(sf_coordinator *co, int wi, cjob *j, const char *why) {
    co->st.jobs_failed++;
    cworker *w = &co->workers[wi];
    w->failures++;
    char what[48];
    snprintf(what, sizeof what, "job %llu failed", (unsigned long long)j->id);
    co_note_error(co, w->worker_id, what, why);
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
                co_release_job(co, lj, 0);
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
    snprintf(co->st.last_failure, sizeof co->st.last_failure, "job %llu: %.130s",
             (unsigned long long)j->id, why);
}
