/*
 * metrics.c — Prometheus metrics over HTTP (common/metrics_http.h: the
 * port and address convention, GET /metrics). The server runs on its own
 * thread and renders a snapshot that the coordinator's loop publishes under
 * a mutex after every step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator/internal.h"

#define RENDER_CAP 16384

int metrics_render(const sf_coord_status *s, const char *run, char *buf, size_t cap) {
    int n = snprintf(
        buf, cap,
        "# HELP spirefleet_jobs Jobs of the run by state.\n"
        "# TYPE spirefleet_jobs gauge\n"
        "spirefleet_jobs{run=\"%s\",state=\"pending\"} %llu\n"
        "spirefleet_jobs{run=\"%s\",state=\"leased\"} %llu\n"
        "spirefleet_jobs{run=\"%s\",state=\"done\"} %llu\n"
        "# HELP spirefleet_labels_total Label records stored in verified shards.\n"
        "# TYPE spirefleet_labels_total counter\n"
        "spirefleet_labels_total{run=\"%s\"} %llu\n"
        "# HELP spirefleet_labels_per_second Labels stored per second over the last minute.\n"
        "# TYPE spirefleet_labels_per_second gauge\n"
        "spirefleet_labels_per_second{run=\"%s\"} %.3f\n"
        "# HELP spirefleet_fights_total Fights played in stored shards.\n"
        "# TYPE spirefleet_fights_total counter\n"
        "spirefleet_fights_total{run=\"%s\"} %llu\n"
        "# HELP spirefleet_workers_alive Workers heard from within the liveness window.\n"
        "# TYPE spirefleet_workers_alive gauge\n"
        "spirefleet_workers_alive{run=\"%s\"} %u\n"
        "# HELP spirefleet_leases_granted_total Job leases granted.\n"
        "# TYPE spirefleet_leases_granted_total counter\n"
        "spirefleet_leases_granted_total{run=\"%s\"} %llu\n"
        "# HELP spirefleet_lease_expiries_total Leases that expired or whose worker died.\n"
        "# TYPE spirefleet_lease_expiries_total counter\n"
        "spirefleet_lease_expiries_total{run=\"%s\"} %llu\n"
        "# HELP spirefleet_reissues_total Jobs leased again after an earlier attempt.\n"
        "# TYPE spirefleet_reissues_total counter\n"
        "spirefleet_reissues_total{run=\"%s\"} %llu\n"
        "# HELP spirefleet_decode_errors_total Frames that did not decode.\n"
        "# TYPE spirefleet_decode_errors_total counter\n"
        "spirefleet_decode_errors_total{run=\"%s\"} %llu\n"
        "# HELP spirefleet_protocol_errors_total Well-formed messages out of order or refused.\n"
        "# TYPE spirefleet_protocol_errors_total counter\n"
        "spirefleet_protocol_errors_total{run=\"%s\"} %llu\n"
        "# HELP spirefleet_bytes_stored_total Bytes of verified shards stored.\n"
        "# TYPE spirefleet_bytes_stored_total counter\n"
        "spirefleet_bytes_stored_total{run=\"%s\"} %llu\n"
        "# HELP spirefleet_shards_rejected_total Uploaded shards that failed verification.\n"
        "# TYPE spirefleet_shards_rejected_total counter\n"
        "spirefleet_shards_rejected_total{run=\"%s\"} %llu\n"
        "# HELP spirefleet_duplicates_dropped_total Results for jobs already done.\n"
        "# TYPE spirefleet_duplicates_dropped_total counter\n"
        "spirefleet_duplicates_dropped_total{run=\"%s\"} %llu\n"
        "# HELP spirefleet_fallbacks_total Search and evaluator fallbacks in stored shards.\n"
        "# TYPE spirefleet_fallbacks_total counter\n"
        "spirefleet_fallbacks_total{run=\"%s\"} %llu\n",
        run, (unsigned long long)s->jobs_pending, run, (unsigned long long)s->jobs_leased, run,
        (unsigned long long)s->jobs_done, run, (unsigned long long)s->labels, run, s->labels_per_s,
        run, (unsigned long long)s->fights, run, s->workers_alive, run,
        (unsigned long long)s->leases_granted, run, (unsigned long long)s->lease_expiries, run,
        (unsigned long long)s->reissues, run, (unsigned long long)s->decode_errors, run,
        (unsigned long long)s->protocol_errors, run, (unsigned long long)s->bytes_stored, run,
        (unsigned long long)s->shards_rejected, run, (unsigned long long)s->duplicates_dropped, run,
        (unsigned long long)s->fallbacks);
    if (n < 0 || (size_t)n >= cap)
        return SF_EFULL;
    int m = snprintf(
        buf + n, cap - (size_t)n,
        "# HELP spirefleet_uploads_deferred_total Uploads answered retry-later: the disk was "
        "full.\n"
        "# TYPE spirefleet_uploads_deferred_total counter\n"
        "spirefleet_uploads_deferred_total{run=\"%s\"} %llu\n"
        "# HELP spirefleet_uploads_paused 1 while uploads wait for disk space.\n"
        "# TYPE spirefleet_uploads_paused gauge\n"
        "spirefleet_uploads_paused{run=\"%s\"} %d\n"
        "# HELP spirefleet_cannot_finish 1 when every job left is quarantined.\n"
        "# TYPE spirefleet_cannot_finish gauge\n"
        "spirefleet_cannot_finish{run=\"%s\"} %d\n",
        run, (unsigned long long)s->uploads_deferred, run, s->uploads_paused, run,
        s->cannot_finish);
    if (m < 0 || (size_t)(n + m) >= cap)
        return SF_EFULL;
    n += m;
    m = snprintf(
        buf + n, cap - (size_t)n,
        "# HELP spirefleet_auth_denied_total Handshakes the ZAP handler refused (a key "
        "not listed).\n"
        "# TYPE spirefleet_auth_denied_total counter\n"
        "spirefleet_auth_denied_total{run=\"%s\"} %llu\n"
        "# HELP spirefleet_auth_refused_total Messages refused for their connection's "
        "key.\n"
        "# TYPE spirefleet_auth_refused_total counter\n"
        "spirefleet_auth_refused_total{run=\"%s\"} %llu\n"
        "# HELP spirefleet_shards_quarantined_total Shards removed by quarantine.\n"
        "# TYPE spirefleet_shards_quarantined_total counter\n"
        "spirefleet_shards_quarantined_total{run=\"%s\"} %llu\n"
        "# HELP spirefleet_audits_total Audits by re-execution, by outcome.\n"
        "# TYPE spirefleet_audits_total counter\n"
        "spirefleet_audits_total{run=\"%s\",outcome=\"opened\"} %llu\n"
        "spirefleet_audits_total{run=\"%s\",outcome=\"agreed\"} %llu\n"
        "spirefleet_audits_total{run=\"%s\",outcome=\"mismatched\"} %llu\n"
        "spirefleet_audits_total{run=\"%s\",outcome=\"caught\"} %llu\n"
        "# HELP spirefleet_lease_limit_waits_total Job requests answered Wait: the "
        "worker held its most leases.\n"
        "# TYPE spirefleet_lease_limit_waits_total counter\n"
        "spirefleet_lease_limit_waits_total{run=\"%s\"} %llu\n",
        run, (unsigned long long)s->auth_denied, run, (unsigned long long)s->auth_refused, run,
        (unsigned long long)s->shards_quarantined, run, (unsigned long long)s->audits_opened, run,
        (unsigned long long)s->audits_passed, run, (unsigned long long)s->audits_mismatched, run,
        (unsigned long long)s->audits_caught, run, (unsigned long long)s->lease_limit_waits);
    if (m < 0 || (size_t)(n + m) >= cap)
        return SF_EFULL;
    n += m;
    m = snprintf(buf + n, cap - (size_t)n,
                 "# HELP spirefleet_audits_open Audits open now (the run is not complete "
                 "while one is).\n"
                 "# TYPE spirefleet_audits_open gauge\n"
                 "spirefleet_audits_open{run=\"%s\"} %llu\n"
                 "# HELP spirefleet_audits_undecided Open audits whose copies differ (AUDIT "
                 "UNDECIDED).\n"
                 "# TYPE spirefleet_audits_undecided gauge\n"
                 "spirefleet_audits_undecided{run=\"%s\"} %llu\n"
                 "# HELP spirefleet_keys_failing Keys whose workers get no more jobs for their "
                 "failure reports.\n"
                 "# TYPE spirefleet_keys_failing gauge\n"
                 "spirefleet_keys_failing{run=\"%s\"} %u\n",
                 run, (unsigned long long)s->audits_open, run, (unsigned long long)s->audits_differ,
                 run, s->keys_failing);
    if (m < 0 || (size_t)(n + m) >= cap)
        return SF_EFULL;
    n += m;
    m = snprintf(buf + n, cap - (size_t)n,
                 "# HELP spirefleet_fights_turn_limit_total Fights in stored shards that ended "
                 "at the turn cap.\n"
                 "# TYPE spirefleet_fights_turn_limit_total counter\n"
                 "spirefleet_fights_turn_limit_total{run=\"%s\"} %llu\n"
                 "# HELP spirefleet_job_median_seconds Median seconds from lease to stored shard "
                 "over the last 256 jobs.\n"
                 "# TYPE spirefleet_job_median_seconds gauge\n"
                 "spirefleet_job_median_seconds{run=\"%s\"} %.3f\n"
                 "# HELP spirefleet_job_longest_running_seconds Seconds the oldest lease held "
                 "now has run.\n"
                 "# TYPE spirefleet_job_longest_running_seconds gauge\n"
                 "spirefleet_job_longest_running_seconds{run=\"%s\"} %.3f\n"
                 "# HELP spirefleet_jobs_slow Leased jobs running %d times the median job and "
                 "longer (SLOW).\n"
                 "# TYPE spirefleet_jobs_slow gauge\n"
                 "spirefleet_jobs_slow{run=\"%s\"} %llu\n"
                 "# HELP spirefleet_job_slow_seconds Seconds each SLOW job has run (the %d "
                 "longest), by job and worker.\n"
                 "# TYPE spirefleet_job_slow_seconds gauge\n",
                 run, (unsigned long long)s->fights_turn_limit, run, s->job_median_s, run,
                 s->longest_running_s, SF_COORD_SLOW_FACTOR, run, (unsigned long long)s->jobs_slow,
                 SF_COORD_SLOW_SHOWN);
    for (int k = 0; k < s->n_slow && m >= 0 && (size_t)(n + m) < cap; k++) {
        n += m;
        m = snprintf(buf + n, cap - (size_t)n,
                     "spirefleet_job_slow_seconds{run=\"%s\",job=\"%llu\",worker=\"%s\"} %.3f\n",
                     run, (unsigned long long)s->slow[k].job_id, s->slow[k].worker_id,
                     s->slow[k].running_s);
    }
    return m < 0 || (size_t)(n + m) >= cap ? SF_EFULL : n + m;
}

/* The page, from the snapshot the loop publishes (libmicrohttpd's thread). */
static char *render_page(void *ctx, size_t *len) {
    sf_coordinator *co = ctx;
    char *buf = malloc(RENDER_CAP);
    if (!buf)
        return NULL;
    pthread_mutex_lock(&co->snap_lock);
    sf_coord_status snap = co->snap;
    pthread_mutex_unlock(&co->snap_lock);
    int n = metrics_render(&snap, co->cfg.name, buf, RENDER_CAP);
    *len = n < 0 ? 0 : (size_t)n;
    return buf;
}

int metrics_start(sf_coordinator *co, int port, sf_err *err) {
    return sf_metrics_http_start(co->cfg.security.metrics_public ? co->endpoint : NULL, port,
                                 render_page, co, &co->http, err);
}

void metrics_stop(sf_coordinator *co) {
    sf_metrics_http_stop(co->http);
    co->http = NULL;
}

void metrics_publish(sf_coordinator *co) {
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    pthread_mutex_lock(&co->snap_lock);
    co->snap = st;
    pthread_mutex_unlock(&co->snap_lock);
}
