/*
 * audit.c — audit by re-execution (internal.h). A job's shard has the same
 * content digest wherever it runs, so a second worker of another identity
 * (another CURVE key; without CURVE another worker id) plays a sampled done
 * job again and uploads its copy, which is verified and compared, never
 * stored. Agreement closes the audit. A mismatch goes to a third worker,
 * unlike both; the one of the first two that disagrees with it is
 * quarantined (its shards removed, its jobs issued again, its key refused).
 * When all three differ the audit stays open (stage 3) until an operator
 * quarantines the wrong key(s): a run is not complete while any audit is
 * open (jobs.c co_all_done), so nothing a lying key made is called final.
 *
 * Which jobs: each identity's first security.audit_first_jobs stored jobs,
 * then a fresh random draw of security.audit_fraction per job (a worker
 * cannot tell which of its later jobs are checked); none while fewer than
 * two identities that are not quarantined have said Hello (no one could
 * play the copy). docs/operator.md "Audits" gives the detection
 * probability this buys.
 *
 * An audit's stage and copies are part of its job's ledger record, written
 * with the commit that follows each change, so a coordinator restarted
 * mid-audit asks for the missing copy again (the auditor that was playing
 * it, if any, is forgotten with its lease).
 */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator/internal.h"

const char *audit_identity(const sf_coordinator *co, int wi) {
    const cworker *w = &co->workers[wi];
    return w->key_id[0] ? w->key_id : w->worker_id;
}

static void audits_add(sf_coordinator *co, cjob *j) {
    co->audits[co->n_audits++] = j->id;
    job_touch(co, j);
}

static void audits_remove(sf_coordinator *co, cjob *j) {
    for (uint64_t k = 0; k < co->n_audits; k++)
        if (co->audits[k] == j->id) {
            co->audits[k] = co->audits[--co->n_audits];
            break;
        }
    j->audit_stage = 0;
    j->audit_worker = -1;
    job_touch(co, j);
}

void audit_cancel(sf_coordinator *co, cjob *j) {
    if (j->audit_stage)
        audits_remove(co, j);
}

void audit_restore(sf_coordinator *co, cjob *j, uint8_t stage) {
    j->audit_stage = stage;
    j->audit_worker = -1;
    co->audits[co->n_audits++] = j->id; /* as loaded: not a change */
}

/* Open an audit of done job j, whose stored copy identity `who` made. */
static void audit_open(sf_coordinator *co, cjob *j, const char *who) {
    if (!j->aud && !(j->aud = calloc(1, sizeof *j->aud))) {
        sf_log(co->log, co->log_ctx, "coordinator: no memory to audit job %llu; not audited",
               (unsigned long long)j->id);
        return;
    }
    memset(j->aud->who, 0, sizeof j->aud->who);
    memset(j->aud->digest, 0, sizeof j->aud->digest);
    snprintf(j->aud->who[0], sizeof j->aud->who[0], "%s", who);
    snprintf(j->aud->digest[0], sizeof j->aud->digest[0], "%s", j->content_digest);
    j->audit_stage = 1;
    j->audit_worker = -1;
    audits_add(co, j);
    co->st.audits_opened++;
}

void audit_on_done(sf_coordinator *co, cjob *j, int wi) {
    co_ident *id = co_ident_of(co, wi);
    if (co->audits_off || j->audit_stage || !id || co_usable_identities(co, 1) < 2)
        return;
    int early = id->early_audits < co->cfg.security.audit_first_jobs;
    double f = co->cfg.security.audit_fraction;
    /* a fresh random draw per job: a worker cannot tell which of its later
     * jobs will be checked */
    int drawn = f > 0 && (double)randombytes_uniform(1000000) < f * 1e6;
    if (!early && !drawn)
        return;
    if (early)
        id->early_audits++;
    audit_open(co, j, audit_identity(co, wi));
}

void audit_catch_up(sf_coordinator *co) {
    if (co->audits_off || co_usable_identities(co, 1) < 2)
        return;
    for (int i = 0; i < co->n_idents; i++) {
        co_ident *id = &co->idents[i];
        uint32_t want = co->cfg.security.audit_first_jobs;
        if (id->quarantined || id->early_audits >= want || id->early_audits >= id->jobs_stored)
            continue;
        /* its first stored jobs still here, in job order */
        for (uint64_t k = 0; k < co->njobs && id->early_audits < want; k++) {
            cjob *j = &co->jobs[k];
            if (j->state == JS_DONE && j->maker == i && !j->audit_stage) {
                audit_open(co, j, id->id);
                id->early_audits++;
            }
        }
        if (id->early_audits < want) /* fewer stored jobs left than asked: done */
            id->early_audits = want;
    }
}

cjob *audit_take(sf_coordinator *co, int wi) {
    const char *me = audit_identity(co, wi);
    for (uint64_t k = 0; k < co->n_audits; k++) /* one audit at a time per worker */
        if (co->jobs[co->audits[k] - 1].audit_worker == wi)
            return NULL;
    for (uint64_t k = 0; k < co->n_audits; k++) {
        cjob *j = &co->jobs[co->audits[k] - 1];
        if (j->audit_worker >= 0 || j->state != JS_DONE || j->audit_stage > 2)
            continue; /* being played, or waiting for an operator */
        int made = 0;
        for (int s = 0; s < j->audit_stage; s++)
            made |= !strcmp(j->aud->who[s], me);
        if (made)
            continue;
        j->audit_worker = wi;
        j->aud->deadline = sf_now_ns() + (uint64_t)co->cfg.coordinator.lease_seconds * CO_NS_PER_S;
        return j;
    }
    return NULL;
}

int audit_expects(const sf_coordinator *co, const cjob *j, int wi) {
    (void)co;
    return j->audit_stage && j->audit_worker == wi;
}

void audit_extend(sf_coordinator *co, cjob *j, int wi) {
    if (audit_expects(co, j, wi))
        j->aud->deadline = sf_now_ns() + (uint64_t)co->cfg.coordinator.lease_seconds * CO_NS_PER_S;
}

void audit_expire(sf_coordinator *co, uint64_t now, int dead_worker) {
    for (uint64_t k = 0; k < co->n_audits; k++) {
        cjob *j = &co->jobs[co->audits[k] - 1];
        if (j->audit_worker >= 0 && (j->audit_worker == dead_worker || now > j->aud->deadline))
            j->audit_worker = -1; /* another worker of another identity may take it */
    }
}

/* Quarantine identity `who` (a key id, or a worker id without CURVE). */
static void catch_(sf_coordinator *co, const cjob *j, const char *who) {
    co->st.audits_caught++;
    sf_log(co->log, co->log_ctx,
           "coordinator: audit of job %llu: %s's copy disagrees with two others; quarantining it",
           (unsigned long long)j->id, who);
    co_quarantine_report rep;
    sf_err e = {0};
    if (co->zsec && co_quarantine_key(co, who, 0, "an audit", &rep, &e) == SF_OK)
        return;
    /* no keys: the worker gets no more jobs (its shards stay; the operator
     * decides) */
    for (int i = 0; i < co->nworkers; i++)
        if (!strcmp(co->workers[i].worker_id, who) && !co->workers[i].quarantined) {
            co->workers[i].quarantined = 1;
            co->st.workers_quarantined++;
        }
    if (e.msg[0])
        sf_log(co->log, co->log_ctx, "coordinator: audit of job %llu: %s",
               (unsigned long long)j->id, e.msg);
}

/* Three different copies of job j (the third from worker wi):
 * with keys the audit stays open at stage 3 and holds the run until an
 * operator quarantines the wrong key(s) (audit_forget then reopens it);
 * without CURVE there is no key to quarantine by, so it is closed. */
static void undecided(sf_coordinator *co, cjob *j, int wi) {
    co->st.audits_undecided++;
    if (!co->zsec) {
        sf_log(co->log, co->log_ctx,
               "coordinator: audit of job %llu: three different copies (%s, %s, %s); no one "
               "quarantined (security.mode none)",
               (unsigned long long)j->id, j->aud->who[0], j->aud->who[1], audit_identity(co, wi));
        return;
    }
    j->audit_stage = 3; /* who[2] and digest[2] are the third copy's */
    job_touch(co, j);
    sf_log(co->log, co->log_ctx,
           "coordinator: AUDIT UNDECIDED: job %llu: three different copies (keys %s, %s, %s); "
           "the run is held until an operator quarantines the wrong key(s) (sf-fleet "
           "quarantine)",
           (unsigned long long)j->id, j->aud->who[0], j->aud->who[1], j->aud->who[2]);
}

void audit_result(sf_coordinator *co, cjob *j, int wi, const char *digest, uint64_t fallbacks) {
    int stage = j->audit_stage;
    if (fallbacks > 0) {
        /* its labels depend on when an evaluator timed out: not evidence
         * either way; another worker (or this one later) plays it again */
        j->audit_worker = -1;
        sf_log(co->log, co->log_ctx,
               "coordinator: audit of job %llu: %s's copy had %llu evaluator fallback(s); not "
               "compared",
               (unsigned long long)j->id, audit_identity(co, wi), (unsigned long long)fallbacks);
        return;
    }
    if (stage == 1 && j->fallbacks > 0 && strcmp(digest, j->aud->digest[0])) {
        /* the stored copy's labels depend on timeouts and a clean copy
         * differs: the job is played again, no one is blamed */
        char why[200];
        snprintf(why, sizeof why,
                 "audit: the stored copy had %llu evaluator fallback(s) and a copy without any "
                 "differs; the job is played again",
                 (unsigned long long)j->fallbacks);
        sf_log(co->log, co->log_ctx, "coordinator: audit of job %llu: %s",
               (unsigned long long)j->id, why);
        co->st.audits_mismatched++;
        co_job_replay(co, j, why); /* cancels the audit */
        return;
    }
    snprintf(j->aud->who[stage], sizeof j->aud->who[stage], "%s", audit_identity(co, wi));
    snprintf(j->aud->digest[stage], sizeof j->aud->digest[stage], "%s", digest);
    j->audit_worker = -1;
    if (stage == 1) {
        if (!strcmp(digest, j->aud->digest[0])) {
            co->st.audits_passed++;
            audits_remove(co, j);
            return;
        }
        co->st.audits_mismatched++;
        sf_log(co->log, co->log_ctx,
               "coordinator: audit of job %llu: %s's copy (%.12s...) differs from %s's "
               "(%.12s...); asking a third worker",
               (unsigned long long)j->id, j->aud->who[1], digest, j->aud->who[0],
               j->aud->digest[0]);
        j->audit_stage = 2;
        job_touch(co, j);
        return;
    }
    /* the third copy decides; the quarantine may undo the job (and so this
     * audit), so copy what it needs first */
    char who[2][CO_WORKER_ID_MAX];
    memcpy(who, j->aud->who, sizeof who);
    int agrees0 = !strcmp(digest, j->aud->digest[0]), agrees1 = !strcmp(digest, j->aud->digest[1]);
    if (agrees0 || agrees1 || !co->zsec)
        audits_remove(co, j);
    if (agrees0)
        catch_(co, j, who[1]);
    else if (agrees1)
        catch_(co, j, who[0]);
    else
        undecided(co, j, wi);
}

void audit_forget(sf_coordinator *co, const char *who) {
    /* an audit whose stored copy the key made stays: its job was undone
     * with the key's shards (which cancelled it), or, with quarantine
     * --since, the copy predates what was removed and is still checked */
    for (uint64_t k = 0; k < co->n_audits; k++) {
        cjob *j = &co->jobs[co->audits[k] - 1];
        int copies = j->audit_stage, kept = 1;
        for (int c = 1; c < copies; c++)
            if (strcmp(j->aud->who[c], who)) {
                if (kept != c) {
                    memcpy(j->aud->who[kept], j->aud->who[c], sizeof j->aud->who[c]);
                    memcpy(j->aud->digest[kept], j->aud->digest[c], sizeof j->aud->digest[c]);
                }
                kept++;
            }
        for (int c = kept; c < 3; c++)
            j->aud->who[c][0] = j->aud->digest[c][0] = 0;
        if (kept != copies) {
            j->audit_stage = (uint8_t)kept; /* waiting for the next copy again */
            j->audit_worker = -1;
            job_touch(co, j);
        } else if (j->audit_worker >= 0 && !strcmp(audit_identity(co, j->audit_worker), who)) {
            j->audit_worker = -1;
        }
    }
}

int audit_undecided(const sf_coordinator *co, struct sf_coord_audit *out, int cap) {
    int n = 0;
    for (uint64_t k = 0; k < co->n_audits; k++) {
        const cjob *j = &co->jobs[co->audits[k] - 1];
        if (j->audit_stage < 2)
            continue;
        if (n >= cap) {
            n++;
            continue;
        }
        memset(&out[n], 0, sizeof out[n]);
        out[n].job_id = j->id;
        out[n].stage = j->audit_stage;
        for (int c = 0; c < j->audit_stage && c < 3; c++)
            snprintf(out[n].who[c], sizeof out[n].who[c], "%s", j->aud->who[c]);
        n++;
    }
    return n;
}
