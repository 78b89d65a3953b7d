/*
 * lease.c — the workers' conversation before the upload: Hello, job
 * requests (a model bound at the first lease), heartbeats and progress
 * that renew a lease, and failure reports.
 */

#include <stdio.h>
#include <string.h>

#include "common/registry.h"
#include "coordinator/internal.h"

/* on_hello, step 1: the worker slot a Hello from `ident` with `key` takes.
 * A worker that reconnects (new socket, new routing id) keeps its entry
 * and so its leases: match by worker id first. -1: a new slot is wanted;
 * -2: refused (answered already). */
static int hello_slot(sf_coordinator *co, const uint8_t *ident, size_t len,
                      const Spirefleet__Hello *h, const char *key) {
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
        co_refuse(co, ident, len, why);
        return -2;
    }
    if (wi < 0) {
        wi = co_worker_find(co, ident, len);
        /* a routing id another key's worker holds is not taken over */
        if (wi >= 0 && co->workers[wi].key[0] && strcmp(co->workers[wi].key, key))
            wi = -1;
    }
    return wi;
}

/* on_hello, step 3: worker slot wi is the Hello's: its key, routing id,
 * worker id, identity, and its process (a new one abandons what the old
 * one held). -1 when its identity cannot be recorded (answered already). */
static int hello_bind(sf_coordinator *co, int wi, const uint8_t *ident, size_t len,
                      const Spirefleet__Hello *h, const char *key) {
    cworker *w = &co->workers[wi];
    if (!w->key[0]) {
        snprintf(w->key, sizeof w->key, "%s", key);
        sf_zsec_key_id(key, w->key_id);
    }
    if (w->ident_len != len || memcmp(w->ident, ident, len)) {
        co_upload_discard(&w->up);
        co_worker_set_ident(co, wi, ident, len);
    }
    snprintf(w->worker_id, sizeof w->worker_id, "%s", h->worker_id);
    if (w->who < 0 && (w->who = co_ident_index(co, audit_identity(co, wi))) < 0) {
        co_refuse(co, ident, len, "the coordinator is out of memory");
        return -1;
    }
    sf_str_printable(w->host, sizeof w->host, h->host); /* shown to operators */
    /* 0: the worker plays with the run's workers.threads (it knows it only
     * from the Welcome this answers) */
    w->threads = h->threads ? h->threads : co->cfg.workers.threads;
    w->hello = 1;
    if (!w->first_hello_ns)
        w->first_hello_ns = sf_now_ns();
    w->waiting[0] = '\0'; /* until its heartbeats say otherwise */
    /* A Hello from a new process under a known worker id (a restarted
     * worker): whatever the old process held is abandoned. A reconnecting
     * process (same pid) keeps its leases. The old process, should it
     * still run, is refused from now on (co_on_hello). */
    if (w->pid && w->pid != h->pid) {
        for (uint64_t k = co->n_leased; k-- > 0;) {
            cjob *j = &co->jobs[co->leased[k] - 1];
            if (co_lease_is(co, j, wi))
                co_release_job(co, j, 1);
        }
        w->replaced_pid = w->pid;
    }
    w->pid = h->pid;
    co_worker_set_alive(co, wi, 1);
    w->last_seen = sf_now_ns();
    return 0;
}

void co_on_hello(sf_coordinator *co, const uint8_t *ident, size_t len, const Spirefleet__Hello *h,
                 const char *key) {
    const char *bad = NULL;
    if (h->protocol_version != SF_PROTOCOL_VERSION)
        bad = "protocol version mismatch";
    else if (!sf_str_is_name(h->worker_id, CO_WORKER_ID_MAX - 1))
        bad = "worker_id must be 1..63 characters of A-Z a-z 0-9 . _ : @ + - (not starting "
              "with '.')";
    else if (co->stopping)
        bad = "the run is stopping";
    if (bad) {
        co->st.protocol_errors++;
        co_refuse(co, ident, len, bad);
        return;
    }
    int wi = hello_slot(co, ident, len, h, key);
    if (wi == -2)
        return;
    char why[200];
    if (co_may_admit(co, wi, why, sizeof why) < 0 || /* step 2: limits.c */
        (wi < 0 && co_may_join(co, key, why, sizeof why) < 0)) {
        co_refuse(co, ident, len, why);
        return;
    }
    if (wi < 0)
        wi = co_worker_add(co, ident, len);
    if (wi < 0)
        return;
    cworker *w = &co->workers[wi];
    if (h->pid && h->pid == w->replaced_pid && !strcmp(w->worker_id, h->worker_id)) {
        /* the older of two processes under one id: it stops, instead of
         * taking the id back and forth with the newer one */
        snprintf(why, sizeof why,
                 "worker id %s was taken over by a newer process (pid %u); give each worker "
                 "its own id",
                 h->worker_id, w->pid);
        sf_log(co->log, co->log_ctx, "coordinator: refused a Hello: %s", why);
        co->st.protocol_errors++;
        co_refuse(co, ident, len, why);
        return;
    }
    if (hello_bind(co, wi, ident, len, h, key) < 0)
        return;
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Welcome wel = SPIREFLEET__WELCOME__INIT;
    wel.config = co->run_msg;
    wel.config_digest = co->digest;
    wel.heartbeat_ms = co->cfg.coordinator.heartbeat_ms;
    wel.heartbeat_liveness = co->cfg.coordinator.heartbeat_liveness;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_WELCOME;
    env.welcome = &wel;
    co_queue_reply(co, ident, len, &env);
}

/* Bind job j to its model before its first lease: the config's pinned
 * model, "rollout", or — following a registry (model.champion) — the
 * champion of this moment. The binding is in the ledger with the lease, so
 * every later attempt of the job (and a restarted coordinator) plays the
 * same model, and its shard stays byte-identical wherever it runs.
 * Returns 0, or -1 when the champion file names no network yet or cannot
 * be read (logged when the reason changes; the job stays pending). */
static int bind_model(sf_coordinator *co, cjob *j, const Spirefleet__JobRequest *jr) {
    if (co->gate || !co->cfg.model.champion[0]) { /* model.sha256 is self-play's only */
        return co_job_set_model(co, j,
                                !co->gate && co->cfg.model.sha256[0] ? co->cfg.model.sha256
                                                                     : SF_REGISTRY_ROLLOUT);
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
    /* a worker still fetching the new champion plays an earlier one it
     * holds meanwhile (models.c): bound in the ledger all the same */
    if (co_job_set_model(co, j, co_choose_model(co, jr, champ)) < 0)
        return -1;
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
    job.model_sha256 = (char *)co_job_model(co, j); /* bound at its first lease (bind_model) */
    job.config_digest = co->digest;
    job.lease_seconds = co->cfg.coordinator.lease_seconds;
    /* the model to fetch ahead: a followed run's champion */
    job.next_model_sha256 = co->cfg.model.champion[0] ? co->champion : (char *)"";
    env.body_case = SPIREFLEET__ENVELOPE__BODY_JOB;
    env.job = &job;
    co_queue_reply(co, w->ident, w->ident_len, &env);
}

/* A Wait to w: ask again after a heartbeat period. */
static void send_wait(sf_coordinator *co, const cworker *w) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Wait wt = SPIREFLEET__WAIT__INIT;
    wt.retry_ms = co->cfg.coordinator.heartbeat_ms;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_WAIT;
    env.wait = &wt;
    co_queue_reply(co, w->ident, w->ident_len, &env);
}

void co_tell_complete(sf_coordinator *co, cworker *w) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__RunComplete rc = SPIREFLEET__RUN_COMPLETE__INIT;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_RUN_COMPLETE;
    env.run_complete = &rc;
    w->told_complete = 1;
    co_queue_reply(co, w->ident, w->ident_len, &env);
}

void co_on_job_request(sf_coordinator *co, int wi, const Spirefleet__JobRequest *jr) {
    cworker *w = &co->workers[wi];
    w->waiting[0] = '\0'; /* it asks for work: it waits for nothing */
    if (w->quarantined) {
        /* a worker whose jobs keep failing gets no more: the jobs go to
         * others, so one bad (or hostile) worker cannot quarantine them */
        char why[320];
        snprintf(why, sizeof why,
                 "worker %s is quarantined after %u failure reports (last: %.120s); it gets "
                 "no more jobs in this run",
                 w->worker_id, w->failures, w->last_failure);
        co_refuse(co, w->ident, w->ident_len, why);
        return;
    }
    const co_ident *me = co_ident_of(co, wi);
    if (me && me->failing) {
        char why[320];
        snprintf(why, sizeof why,
                 "key %s is quarantined after %u failure reports for %u stored job(s) (last: "
                 "%.120s); its workers get no more jobs in this run",
                 me->id, me->failures, me->jobs_stored, w->last_failure);
        co_refuse(co, w->ident, w->ident_len, why);
        return;
    }
    /* an audit first: a done job played again by another identity (also
     * once every job is done, while the coordinator serves) */
    cjob *aj = co->stopping ? NULL : audit_take(co, wi);
    if (aj) {
        send_job(co, w, aj, aj->attempt + 100 * aj->audit_stage);
        return;
    }
    if (!co_all_done(co) && !co->stopping && gate_decided(co)) {
        /* the verdict is written; audits still open: nothing new is issued */
        send_wait(co, w);
        return;
    }
    if (co_all_done(co) || co->stopping) {
        co_tell_complete(co, w);
        return;
    }
    int may = co_leases_held(co, wi) < CO_MAX_LEASES_PER_WORKER && co_key_may_lease(co, wi);
    uint64_t id = may ? co_queue_pop(co) : 0;
    if (!id && co->q_len > 0 && !may)
        co->st.lease_limit_waits++;
    cjob *j = id ? &co->jobs[id - 1] : NULL;
    if (j && !j->model && bind_model(co, j, jr) < 0) { /* no champion to follow yet */
        co_queue_unpop(co, id);
        j = NULL;
    }
    if (!j) {
        send_wait(co, w);
        return;
    }
    if (j->attempt > 0)
        co->st.reissues++;
    j->state = JS_LEASED;
    co_leased_add(co, j);
    j->attempt++;
    j->worker = wi;
    j->leased_ns = sf_now_ns();
    j->deadline = j->leased_ns + (uint64_t)co->cfg.coordinator.lease_seconds * CO_NS_PER_S;
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
    if (co_claim_lease(co, j, wi))
        j->deadline = sf_now_ns() + (uint64_t)co->cfg.coordinator.lease_seconds * CO_NS_PER_S;
    audit_extend(co, j, wi);
}

void co_on_heartbeat(sf_coordinator *co, int wi, const Spirefleet__Heartbeat *hb) {
    cworker *w = &co->workers[wi];
    extend_lease(co, wi, hb->job_id);
    /* from the network: printable and bounded before status shows it */
    sf_str_printable(w->waiting, sizeof w->waiting, hb->waiting);
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Heartbeat back = SPIREFLEET__HEARTBEAT__INIT;
    back.worker_id = (char *)"coordinator";
    env.body_case = SPIREFLEET__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &back;
    co_queue_reply(co, w->ident, w->ident_len, &env);
}

void co_on_progress(sf_coordinator *co, int wi, const Spirefleet__Progress *p) {
    extend_lease(co, wi, p->job_id);
    if (p->job_id == 0 || p->job_id > co->njobs)
        return;
    cjob *j = &co->jobs[p->job_id - 1];
    if (j->state == JS_LEASED && j->worker == wi) {
        j->prog_fights = p->fights_done;
        j->prog_labels = p->labels_done;
    }
}

void co_on_job_failed(sf_coordinator *co, int wi, const Spirefleet__JobFailed *f) {
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
    if (!abandoned)
        co_count_failure(co, wi, j, why); /* limits.c */
    co_release_job(co, j, 0);
    if (co_job_failed_out(co, j) && !j->quarantined) {
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
