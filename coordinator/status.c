/*
 * status.c — a run's status: the counters, rates, ETA and SLOW jobs
 * (sf_coordinator_status), and its StatusReply on the wire.
 */

#include <stdio.h>
#include <stdlib.h>

#include "coordinator/internal.h"

/* The StatusReply fields that carry the sf_coord_status field of the same
 * name, converted as by assignment; the rest are set by hand below. */
/* clang-format off */
#define STATUS_SAME_NAME(X)                                                       \
    X(jobs_total) X(jobs_pending) X(jobs_leased) X(jobs_done)                     \
    X(fights) X(labels) X(labels_per_s) X(workers_alive)                          \
    X(eta_s) X(complete) X(bytes_stored) X(lease_expiries)                        \
    X(reissues) X(decode_errors) X(protocol_errors) X(jobs_quarantined)           \
    X(workers_quarantined) X(uploads_deferred) X(uploads_paused) X(cannot_finish) \
    X(auth_denied) X(auth_refused) X(shards_quarantined) X(audits_opened)         \
    X(audits_passed) X(audits_mismatched) X(audits_caught) X(fights_turn_limit)   \
    X(jobs_slow) X(job_median_s) X(longest_running_s) X(audits_open)              \
    X(audits_differ) X(keys_failing) X(keys_known) X(no_workers)                  \
    X(workers_waiting) X(worker_limit) X(workers_admitted) X(workers_refused_limit)   \
    X(leases_on_previous_model)
#define GATE_SAME_NAME(X)                                 \
    X(gate_pairs) X(gate_llr) X(gate_lower) X(gate_upper) \
    X(gate_min_pairs) X(gate_max_pairs)
/* clang-format on */
#define COPY_FIELD(f) r->f = st->f;

void status_reply_fill(const sf_coordinator *co, const sf_coord_status *st, status_scratch *sc,
                       Spirefleet__StatusReply *r) {
    STATUS_SAME_NAME(COPY_FIELD)
    r->run = (char *)co->cfg.name;
    r->fallbacks = (uint32_t)st->fallbacks;
    r->output_dir = (char *)co->cfg.output_dir;
    r->config_digest = (char *)co->digest;
    r->curve = co->zsec != NULL;
    r->last_failure = (char *)st->last_failure;
    r->champion = (char *)co->champion;
    snprintf(sc->waiting_reason, sizeof sc->waiting_reason, "%s", st->waiting_reason);
    r->waiting_reason = sc->waiting_reason;
    r->n_slow_jobs = (size_t)st->n_slow;
    r->slow_jobs = sc->slow_ptrs;
    for (int k = 0; k < st->n_slow; k++) {
        spirefleet__slow_job__init(&sc->slow_msgs[k]);
        sc->slow_msgs[k].job_id = st->slow[k].job_id;
        snprintf(sc->slow_ids[k], sizeof sc->slow_ids[k], "%s", st->slow[k].worker_id);
        sc->slow_msgs[k].worker_id = sc->slow_ids[k];
        sc->slow_msgs[k].running_s = st->slow[k].running_s;
        sc->slow_ptrs[k] = &sc->slow_msgs[k];
    }
    r->n_undecided_audits = (size_t)st->n_undecided;
    r->undecided_audits = sc->aud_ptrs;
    for (int k = 0; k < st->n_undecided; k++) {
        Spirefleet__UndecidedAudit *a = &sc->aud_msgs[k];
        spirefleet__undecided_audit__init(a);
        a->job_id = st->undecided[k].job_id;
        a->stage = (uint32_t)st->undecided[k].stage;
        a->n_key_ids = (size_t)(st->undecided[k].stage < 3 ? 2 : 3);
        for (size_t c = 0; c < a->n_key_ids; c++) {
            snprintf(sc->aud_who[k][c], sizeof sc->aud_who[k][c], "%s", st->undecided[k].who[c]);
            sc->aud_who_ptrs[k][c] = sc->aud_who[k][c];
        }
        a->key_ids = sc->aud_who_ptrs[k];
        sc->aud_ptrs[k] = a;
    }
    if (st->gate) {
        r->gate = 1;
        GATE_SAME_NAME(COPY_FIELD)
        snprintf(sc->gate_decision, sizeof sc->gate_decision, "%s", st->gate_decision);
        r->gate_decision = sc->gate_decision;
    }
}

void co_on_status(sf_coordinator *co, const uint8_t *ident, size_t len) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__StatusReply r = SPIREFLEET__STATUS_REPLY__INIT;
    sf_coord_status st; /* the reply points into it until it is queued */
    sf_coordinator_status(co, &st);
    status_reply_fill(co, &st, &co->status_sc, &r);
    env.body_case = SPIREFLEET__ENVELOPE__BODY_STATUS_REPLY;
    env.status_reply = &r;
    co_queue_reply(co, ident, len, &env);
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
    st->model_requests = __atomic_load_n(&co->model_requests, __ATOMIC_RELAXED);
    st->model_bytes_served = __atomic_load_n(&co->model_bytes_served, __ATOMIC_RELAXED);
    st->jobs_total = co->njobs;
    st->jobs_leased = co->n_leased;
    st->jobs_pending = co->njobs - co->n_leased - st->jobs_done;
    uint64_t prog_labels = 0, prog_fights = 0;
    for (uint64_t k = 0; k < co->n_leased; k++) {
        const cjob *j = &co->jobs[co->leased[k] - 1];
        prog_labels += j->prog_labels;
        prog_fights += j->prog_fights;
    }
    /* a worker that waits (for its gpu-evald) plays nothing: counted apart,
     * with its reason, so that "no workers" says why */
    st->workers_alive = 0;
    st->workers_waiting = 0;
    st->waiting_reason[0] = '\0';
    for (int i = 0; i < co->nworkers; i++) {
        const cworker *w = &co->workers[i];
        if (w->alive && w->waiting[0] && !st->workers_waiting++)
            snprintf(st->waiting_reason, sizeof st->waiting_reason, "%s", w->waiting);
        else if (w->alive && !w->waiting[0])
            st->workers_alive++;
    }
    st->worker_limit = co->cfg.coordinator.max_workers;
    st->workers_admitted = co_workers_admitted(co);
    st->complete = co_all_done(co);
    /* rates over completions in the last 60 s (or since the start) */
    uint64_t now = sf_now_ns(), window = 60ull * CO_NS_PER_S, labels = 0, jobs = 0, oldest = now;
    for (int k = 0; k < co->done_n; k++) {
        int idx = (co->done_head - 1 - k + 256) % 256;
        if (now - co->done_t[idx] > window)
            break;
        labels += co->done_labels[idx];
        jobs++;
        oldest = co->done_t[idx];
    }
    double span = (double)(now - co->started_ns) / 1e9;
    if (span > 60.0)
        span = 60.0;
    /* more than the ring's 256 completions in the window: the rate is over
     * the time they cover, not the whole minute */
    if (jobs == 256 && (double)(now - oldest) / 1e9 < span)
        span = (double)(now - oldest) / 1e9;
    if (span < 1e-3)
        span = 1e-3;
    st->labels_per_s = (double)labels / span;
    double jobs_per_s = (double)jobs / span;
    uint64_t left = co->njobs - st->jobs_done;
    st->eta_s = left == 0 ? 0.0 : jobs_per_s > 0 ? (double)left / jobs_per_s : -1.0;
    st->jobs_quarantined = 0;
    for (uint64_t k = 0; k < co->n_failing; k++) {
        const cjob *j = &co->jobs[co->failing[k] - 1];
        st->jobs_quarantined += j->state == JS_PENDING && co_job_failed_out(co, j);
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

void co_note_error(sf_coordinator *co, const char *who, const char *what, const char *detail) {
    struct co_error *e = &co->errors[co->errors_total % SF_COORD_ERRORS_KEPT];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    e->unix_s = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    sf_str_printable(e->who, sizeof e->who, who ? who : "run");
    snprintf(e->what, sizeof e->what, "%s", what);
    sf_str_printable(e->detail, sizeof e->detail, detail ? detail : "");
    co->errors_total++;
}
