/*
 * client.c — short-lived operator and trainer clients of a coordinator:
 * status, stop, and a tcp:// shard source for `sf-shard pull`.
 */
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "coordinator/coordinator.h"
#include "shard/shard.h"

/* One request, one reply (sf_wire_ask), on a DEALER of its own: an
 * operator's status or stop is a single question, so nothing outlives it.
 * A reply other than `expect` (SPIREFLEET__ENVELOPE__BODY__NOT_SET: any)
 * is SF_EFORMAT, "unexpected reply to <what>". */
static int roundtrip(const char *endpoint, const char *keys, Spirefleet__Envelope *req,
                     Spirefleet__Envelope__BodyCase expect, const char *what, int timeout_ms,
                     Spirefleet__Envelope **out, sf_err *err) {
    *out = NULL;
    sf_zsec_client sec;
    int rc = sf_zsec_client_load_any(keys, &sec, err);
    if (rc < 0)
        return rc;
    void *ctx = zmq_ctx_new(), *s = NULL;
    if (!ctx)
        return sf_err_set(err, SF_EIO, "%s: cannot start ZeroMQ: %s", endpoint,
                          zmq_strerror(zmq_errno()));
    /* the handshake first: a CURVE coordinator that refuses this client
     * never answers, and the watch says why at once (fleet/wire.h) */
    sf_wire_watch watch;
    rc = sf_wire_dealer_watched(ctx, endpoint, &sec, &s, &watch, err);
    int waited = 0;
    for (; rc == SF_OK && waited < timeout_ms; waited += 50) {
        sf_wire_handshake hs = sf_wire_watch_poll(&watch, 50);
        if (hs == SF_WIRE_HS_OK)
            break;
        if (hs != SF_WIRE_HS_PENDING)
            rc = sf_wire_handshake_error(&watch, "coordinator", endpoint, err);
    }
    if (rc == SF_OK && waited >= timeout_ms) /* no connection at all */
        rc = sf_err_set(err, SF_ETIMEOUT, "%s: no answer to %s within %d ms", endpoint,
                        sf_wire_body_name(req), timeout_ms);
    if (rc == SF_OK)
        rc = sf_wire_ask(s, endpoint, req, timeout_ms - waited, out, err);
    if (rc == SF_ETIMEOUT && err) {
        /* a CURVE server says nothing to a key it refuses: say what to check */
        char m[SF_ERR_MSG_MAX];
        snprintf(m, sizeof m, "%s", err->msg);
        sf_err_set(err, rc, "%.300s (%s)", m,
                   sec.on ? "is this key in the coordinator's clients/ or operators/, and "
                            "server.pub its key?"
                          : "a coordinator with CURVE answers only clients given --keys DIR");
    }
    if (s) {
        sf_wire_watch_close(&watch);
        zmq_close(s);
    }
    zmq_ctx_term(ctx);
    if (rc == SF_OK && expect != SPIREFLEET__ENVELOPE__BODY__NOT_SET &&
        (*out)->body_case != expect) {
        sf_wire_free(*out);
        *out = NULL;
        return sf_err_set(err, SF_EFORMAT, "%s: unexpected reply to %s", endpoint, what);
    }
    return rc;
}

int sf_fleet_status(const char *endpoint, const char *keys, int timeout_ms,
                    Spirefleet__Envelope **env, Spirefleet__StatusReply **reply, sf_err *err) {
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__StatusRequest sr = SPIREFLEET__STATUS_REQUEST__INIT;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_STATUS_REQUEST;
    req.status_request = &sr;
    int rc = roundtrip(endpoint, keys, &req, SPIREFLEET__ENVELOPE__BODY_STATUS_REPLY,
                       "a status request", timeout_ms, env, err);
    if (rc < 0)
        return rc;
    *reply = (*env)->status_reply;
    return SF_OK;
}

int sf_fleet_api(const char *endpoint, const char *keys, const char *path, int timeout_ms,
                 Spirefleet__Envelope **env, Spirefleet__ApiReply **reply, sf_err *err) {
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ApiRequest ar = SPIREFLEET__API_REQUEST__INIT;
    ar.path = (char *)path;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_API_REQUEST;
    req.api_request = &ar;
    int rc = roundtrip(endpoint, keys, &req, SPIREFLEET__ENVELOPE__BODY_API_REPLY,
                       "a dashboard request", timeout_ms, env, err);
    if (rc < 0)
        return rc;
    *reply = (*env)->api_reply;
    return SF_OK;
}

int sf_fleet_stop(const char *endpoint, const char *keys, int timeout_ms, sf_err *err) {
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Stop st = SPIREFLEET__STOP__INIT;
    st.reason = (char *)"operator";
    req.body_case = SPIREFLEET__ENVELOPE__BODY_STOP;
    req.stop = &st;
    Spirefleet__Envelope *env;
    int rc = roundtrip(endpoint, keys, &req, SPIREFLEET__ENVELOPE__BODY__NOT_SET, "a stop",
                       timeout_ms, &env, err);
    if (rc == SF_OK)
        sf_wire_free(env);
    return rc;
}

int sf_fleet_quarantine(const char *endpoint, const char *keys, const char *key_id,
                        int64_t since_unix, int timeout_ms, uint32_t *shards, uint32_t *jobs,
                        uint32_t *workers_alive, sf_err *err) {
    Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__Quarantine q = SPIREFLEET__QUARANTINE__INIT;
    q.key_id = (char *)key_id;
    q.since_unix = since_unix;
    req.body_case = SPIREFLEET__ENVELOPE__BODY_QUARANTINE;
    req.quarantine = &q;
    Spirefleet__Envelope *env;
    int rc = roundtrip(endpoint, keys, &req, SPIREFLEET__ENVELOPE__BODY_QUARANTINE_REPLY,
                       "a quarantine", timeout_ms, &env, err);
    if (rc < 0)
        return rc;
    *shards = env->quarantine_reply->shards;
    *jobs = env->quarantine_reply->jobs_reissued;
    *workers_alive = env->quarantine_reply->workers_alive;
    sf_wire_free(env);
    return SF_OK;
}

/* What keeps workers from playing, said where `status` says "workers":
 * " (1 waiting: gpu-evald tcp://... does not answer (12 s))", or "". */
static void waiting_note(const Spirefleet__StatusReply *s, char *out, size_t cap) {
    char why[160]; /* from the network: printable only */
    sf_str_printable(why, sizeof why, s->waiting_reason);
    if (s->workers_waiting)
        snprintf(out, cap, " (%u waiting: %s)", s->workers_waiting, why);
    else
        snprintf(out, cap, "%s", "");
}

/* The lines that say why nothing happens and what to do: workers that wait
 * for their gpu-evald, and handshakes the coordinator refused (a client
 * without --keys, or with a key not in clients/ or operators/). */
static void print_explanations(const Spirefleet__StatusReply *s, FILE *o) {
    if (s->workers_waiting) {
        char why[160];
        sf_str_printable(why, sizeof why, s->waiting_reason);
        fprintf(o,
                "WAITING: %u worker(s) connected but take no job: %s; start gpu-evald there, "
                "or fix evald.endpoint in the run's config (or the workers' --evald / "
                "--evald-file)\n",
                s->workers_waiting, why);
    }
    if (s->curve && s->auth_denied)
        fprintf(o,
                "REFUSED HANDSHAKES: %llu connection(s) failed the CURVE handshake: a client "
                "without --keys, or whose key is not in the run's keys/clients/ or "
                "keys/operators/; give workers and tools --keys DIR (docs/operator.md "
                "\"Security\")\n",
                (unsigned long long)s->auth_denied);
}

void sf_fleet_print_status(const Spirefleet__StatusReply *s, FILE *o) {
    fprintf(o, "run %s (config %.12s)  %s\n", s->run, s->config_digest,
            s->complete                           ? "COMPLETE"
            : s->cannot_finish                    ? "CANNOT FINISH"
            : s->n_undecided_audits > 0           ? "running, AUDIT UNDECIDED"
            : s->no_workers && s->workers_waiting ? "running, WORKERS WAITING"
            : s->no_workers                       ? "running, NO WORKERS"
                                                  : "running");
    fprintf(o, "jobs: %llu done, %llu leased, %llu pending of %llu\n",
            (unsigned long long)s->jobs_done, (unsigned long long)s->jobs_leased,
            (unsigned long long)s->jobs_pending, (unsigned long long)s->jobs_total);
    fprintf(o, "fights %llu", (unsigned long long)s->fights);
    if (s->fights_turn_limit)
        fprintf(o, " (%llu ended at the turn cap, play.max_turns)",
                (unsigned long long)s->fights_turn_limit);
    fprintf(o, ", labels %llu (%.1f labels/s), fallbacks %u\n", (unsigned long long)s->labels,
            s->labels_per_s, s->fallbacks);
    char waiting[200];
    waiting_note(s, waiting, sizeof waiting);
    fprintf(o, "workers alive %u%s, stored %.1f MB in %s/shards", s->workers_alive, waiting,
            (double)s->bytes_stored / 1e6, s->output_dir);
    if (!s->complete && s->eta_s >= 0)
        fprintf(o, ", ETA %.0f s", s->eta_s);
    fprintf(o, "\n");
    if (s->worker_limit)
        fprintf(o,
                "worker limit %u (coordinator.max_workers): %u admitted, %llu Hello(s) refused "
                "at the limit\n",
                s->worker_limit, s->workers_admitted, (unsigned long long)s->workers_refused_limit);
    if (s->leases_on_previous_model)
        fprintf(o,
                "champion %.12s...: %llu lease(s) went to an earlier champion while workers "
                "fetched it (model.url; a number that keeps growing: they cannot fetch it)\n",
                s->champion, (unsigned long long)s->leases_on_previous_model);
    if (s->jobs_quarantined)
        fprintf(o,
                "FAILING: %llu job(s) failed on 3 workers each and are not issued again; "
                "last: %s\n",
                (unsigned long long)s->jobs_quarantined, s->last_failure);
    if (s->cannot_finish && s->jobs_quarantined >= s->jobs_total - s->jobs_done)
        fprintf(o,
                "CANNOT FINISH: every job left (%llu) is quarantined; fix the cause and restart "
                "the coordinator to issue them again\n",
                (unsigned long long)(s->jobs_total - s->jobs_done));
    else if (s->cannot_finish)
        fprintf(o,
                "CANNOT FINISH: every key that connected (%u) is quarantined for failure reports "
                "or by an operator; fix the cause, or connect workers with another key\n",
                s->keys_known);
    if (s->keys_failing)
        fprintf(o,
                "FAILING KEYS: %u key(s) reported %d more failures than stored jobs; their "
                "workers get no more jobs\n",
                s->keys_failing, SF_COORD_MAX_KEY_FAILURES);
    for (size_t k = 0; k < s->n_undecided_audits; k++) {
        const Spirefleet__UndecidedAudit *a = s->undecided_audits[k];
        char who[3][24] = {"", "", ""}; /* key ids from the coordinator: printable only */
        for (size_t c = 0; c < a->n_key_ids && c < 3; c++)
            sf_str_printable(who[c], sizeof who[c], a->key_ids[c]);
        if (a->stage >= 3)
            fprintf(o,
                    "AUDIT UNDECIDED: job %llu, keys %s/%s/%s: three different copies; the run "
                    "is held until an operator quarantines the wrong key(s) (sf-fleet "
                    "quarantine)\n",
                    (unsigned long long)a->job_id, who[0], who[1], who[2]);
        else
            fprintf(o,
                    "AUDIT UNDECIDED: job %llu, keys %s/%s: the copies differ; waiting for a "
                    "worker of a third key (or an operator's sf-fleet quarantine of one)\n",
                    (unsigned long long)a->job_id, who[0], who[1]);
    }
    if (s->audits_differ > s->n_undecided_audits)
        fprintf(o, "AUDIT UNDECIDED: %llu more\n",
                (unsigned long long)(s->audits_differ - s->n_undecided_audits));
    if (s->audits_open > s->audits_differ && !s->complete)
        fprintf(o,
                "AUDITS OPEN: %llu audit(s) wait for a copy from a worker of another key; "
                "the run completes once they are decided\n",
                (unsigned long long)(s->audits_open - s->audits_differ));
    print_explanations(s, o);
    if (s->no_workers && !s->workers_waiting)
        fprintf(o, "NO WORKERS: jobs wait and no worker is connected; start workers (sf-fleet "
                   "worker --connect ENDPOINT --keys DIR)\n");
    if (s->uploads_paused)
        fprintf(o,
                "UPLOADS PAUSED: the coordinator's disk is full; workers keep their shards "
                "and retry (%llu upload(s) deferred so far)\n",
                (unsigned long long)s->uploads_deferred);
    for (size_t k = 0; k < s->n_slow_jobs; k++) {
        char who[64]; /* a name from the network: printable only */
        sf_str_printable(who, sizeof who, s->slow_jobs[k]->worker_id);
        fprintf(o,
                "SLOW: job %llu on worker %s has run %.0f s, %.0f x the median job (%.1f s); "
                "its fights end at the turn cap at the latest\n",
                (unsigned long long)s->slow_jobs[k]->job_id, who, s->slow_jobs[k]->running_s,
                s->job_median_s > 0 ? s->slow_jobs[k]->running_s / s->job_median_s : 0.0,
                s->job_median_s);
    }
    if (s->jobs_slow > s->n_slow_jobs)
        fprintf(o, "SLOW: %llu more job(s)\n", (unsigned long long)(s->jobs_slow - s->n_slow_jobs));
    if (s->workers_quarantined)
        fprintf(o,
                "QUARANTINED: %llu worker(s) get no more jobs (5 failure reports, or their key "
                "was quarantined)\n",
                (unsigned long long)s->workers_quarantined);
    fprintf(o, "leases: %llu expired, %llu re-issued; frames: %llu undecodable, %llu refused\n",
            (unsigned long long)s->lease_expiries, (unsigned long long)s->reissues,
            (unsigned long long)s->decode_errors, (unsigned long long)s->protocol_errors);
    fprintf(o,
            "security: %s; %llu connection(s) and %llu message(s) refused; %llu shard(s) "
            "quarantined; audits %llu opened, %llu agreed, %llu mismatched, %llu caught\n",
            s->curve ? "CURVE" : "NONE (security.mode none: anyone may connect)",
            (unsigned long long)s->auth_denied, (unsigned long long)s->auth_refused,
            (unsigned long long)s->shards_quarantined, (unsigned long long)s->audits_opened,
            (unsigned long long)s->audits_passed, (unsigned long long)s->audits_mismatched,
            (unsigned long long)s->audits_caught);
    if (s->gate) {
        int provisional = !strcmp(s->gate_decision, "continue");
        fprintf(
            o, "gate: %llu pairs in seed order (min %u, max %u), LLR %.3f in [%.3f, %.3f]: %s%s\n",
            (unsigned long long)s->gate_pairs, s->gate_min_pairs, s->gate_max_pairs, s->gate_llr,
            s->gate_lower, s->gate_upper, provisional ? "no decision yet" : s->gate_decision,
            provisional ? "" : " (gate/verdict.json)");
    }
}
