/*
 * metrics.c — Prometheus metrics over HTTP (common/metrics_http.h: the
 * port and address convention, GET /metrics). The server runs on its own
 * thread and renders a snapshot that the coordinator's loop publishes under
 * a mutex every 250 ms. The same server carries the dashboard's routes
 * (dashboard.c), which read the snapshots published beside it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/io.h"
#include "coordinator/internal.h"

#define RENDER_CAP 16384

/* The kind of a status field a metric reads. */
enum { M_U64, M_U32, M_INT, M_DBL, M_NONE };

/* A sample of a family: the value of its label (NULL: the family's only
 * sample has no label of its own) and the sf_coord_status field it shows. */
typedef struct metric_sample {
    const char *value;
    size_t off;
} metric_sample;

/* One metric family of the page, in page order: its name, type, the
 * label that tells its samples apart (NULL: one sample), the kind of its
 * fields (M_NONE: its samples follow the table), its help text and its
 * samples (the list ends at a NULL value after the first). */
typedef struct metric_family {
    const char *name, *type, *label;
    int kind;
    const char *help;
    metric_sample s[4];
} metric_family;

#define STR_(x) #x
#define STR(x)  STR_(x)
#define AT(f)   offsetof(sf_coord_status, f)

/* clang-format off */
#define ONE(f)  {NULL, AT(f)}
#define S(v, f) {v, AT(f)}
static const metric_family METRICS[] = {
    {"spirefleet_jobs", "gauge", "state", M_U64,
     "Jobs of the run by state.",
     {S("pending", jobs_pending), S("leased", jobs_leased), S("done", jobs_done)}},
    {"spirefleet_labels_total", "counter", NULL, M_U64,
     "Label records stored in verified shards.",
     {ONE(labels)}},
    {"spirefleet_labels_per_second", "gauge", NULL, M_DBL,
     "Labels stored per second over the last minute.",
     {ONE(labels_per_s)}},
    {"spirefleet_fights_total", "counter", NULL, M_U64,
     "Fights played in stored shards.",
     {ONE(fights)}},
    {"spirefleet_workers_alive", "gauge", NULL, M_U32,
     "Workers heard from within the liveness window that take jobs.",
     {ONE(workers_alive)}},
    {"spirefleet_workers_waiting", "gauge", NULL, M_U32,
     "Workers alive that take no job while they wait (for their gpu-evald).",
     {ONE(workers_waiting)}},
    {"spirefleet_worker_limit", "gauge", NULL, M_U32,
     "coordinator.max_workers: live workers admitted at once (0: no limit).",
     {ONE(worker_limit)}},
    {"spirefleet_workers_refused_limit_total", "counter", NULL, M_U64,
     "Hellos refused because the run was at coordinator.max_workers.",
     {ONE(workers_refused_limit)}},
    {"spirefleet_leases_granted_total", "counter", NULL, M_U64,
     "Job leases granted.",
     {ONE(leases_granted)}},
    {"spirefleet_lease_expiries_total", "counter", NULL, M_U64,
     "Leases that expired or whose worker died.",
     {ONE(lease_expiries)}},
    {"spirefleet_reissues_total", "counter", NULL, M_U64,
     "Jobs leased again after an earlier attempt.",
     {ONE(reissues)}},
    {"spirefleet_decode_errors_total", "counter", NULL, M_U64,
     "Frames that did not decode.",
     {ONE(decode_errors)}},
    {"spirefleet_protocol_errors_total", "counter", NULL, M_U64,
     "Well-formed messages out of order or refused.",
     {ONE(protocol_errors)}},
    {"spirefleet_bytes_stored_total", "counter", NULL, M_U64,
     "Bytes of verified shards stored.",
     {ONE(bytes_stored)}},
    {"spirefleet_shards_rejected_total", "counter", NULL, M_U64,
     "Uploaded shards that failed verification.",
     {ONE(shards_rejected)}},
    {"spirefleet_duplicates_dropped_total", "counter", NULL, M_U64,
     "Results for jobs already done.",
     {ONE(duplicates_dropped)}},
    {"spirefleet_fallbacks_total", "counter", NULL, M_U64,
     "Search and evaluator fallbacks in stored shards.",
     {ONE(fallbacks)}},
    {"spirefleet_uploads_deferred_total", "counter", NULL, M_U64,
     "Uploads answered retry-later: the disk was full.",
     {ONE(uploads_deferred)}},
    {"spirefleet_uploads_paused", "gauge", NULL, M_INT,
     "1 while uploads wait for disk space.",
     {ONE(uploads_paused)}},
    {"spirefleet_cannot_finish", "gauge", NULL, M_INT,
     "1 when every job left is quarantined.",
     {ONE(cannot_finish)}},
    {"spirefleet_auth_denied_total", "counter", NULL, M_U64,
     "Handshakes the ZAP handler refused (a key not listed).",
     {ONE(auth_denied)}},
    {"spirefleet_auth_refused_total", "counter", NULL, M_U64,
     "Messages refused for their connection's key.",
     {ONE(auth_refused)}},
    {"spirefleet_shards_quarantined_total", "counter", NULL, M_U64,
     "Shards removed by quarantine.",
     {ONE(shards_quarantined)}},
    {"spirefleet_audits_total", "counter", "outcome", M_U64,
     "Audits by re-execution, by outcome.",
     {S("opened", audits_opened), S("agreed", audits_passed),
      S("mismatched", audits_mismatched), S("caught", audits_caught)}},
    {"spirefleet_lease_limit_waits_total", "counter", NULL, M_U64,
     "Job requests answered Wait: the worker held its most leases.",
     {ONE(lease_limit_waits)}},
    {"spirefleet_model_requests_total", "counter", NULL, M_U64,
     "Model bundles served by GET /models/<sha256>.",
     {ONE(model_requests)}},
    {"spirefleet_model_bytes_served_total", "counter", NULL, M_U64,
     "Bytes of model bundles served (coordinator egress for models).",
     {ONE(model_bytes_served)}},
    {"spirefleet_leases_on_previous_model_total", "counter", NULL, M_U64,
     "Leases bound to an earlier champion while the worker fetched the new one.",
     {ONE(leases_on_previous_model)}},
    {"spirefleet_audits_open", "gauge", NULL, M_U64,
     "Audits open now (the run is not complete while one is).",
     {ONE(audits_open)}},
    {"spirefleet_audits_undecided", "gauge", NULL, M_U64,
     "Open audits whose copies differ (AUDIT UNDECIDED).",
     {ONE(audits_differ)}},
    {"spirefleet_keys_failing", "gauge", NULL, M_U32,
     "Keys whose workers get no more jobs for their failure reports.",
     {ONE(keys_failing)}},
    {"spirefleet_fights_turn_limit_total", "counter", NULL, M_U64,
     "Fights in stored shards that ended at the turn cap.",
     {ONE(fights_turn_limit)}},
    {"spirefleet_job_median_seconds", "gauge", NULL, M_DBL,
     "Median seconds from lease to stored shard over the last 256 jobs.",
     {ONE(job_median_s)}},
    {"spirefleet_job_longest_running_seconds", "gauge", NULL, M_DBL,
     "Seconds the oldest lease held now has run.",
     {ONE(longest_running_s)}},
    {"spirefleet_jobs_slow", "gauge", NULL, M_U64,
     "Leased jobs running " STR(SF_COORD_SLOW_FACTOR) " times the median job and longer (SLOW).",
     {ONE(jobs_slow)}},
    {"spirefleet_job_slow_seconds", "gauge", NULL, M_NONE,
     "Seconds each SLOW job has run (the " STR(SF_COORD_SLOW_SHOWN) " longest), by job and worker.",
     {{NULL, 0}}},
};
/* clang-format on */

/* Append to buf[*n..cap): -1 once it does not fit (or an encoding error). */
static int append(char *buf, size_t cap, int *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int append(char *buf, size_t cap, int *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + *n, cap - (size_t)*n, fmt, ap);
    va_end(ap);
    if (m < 0 || (size_t)(*n + m) >= cap)
        return -1;
    *n += m;
    return 0;
}

/* One family of METRICS: its HELP and TYPE lines, then its samples. */
static int render_family(const metric_family *f, const sf_coord_status *s, const char *run,
                         char *buf, size_t cap, int *n) {
    if (append(buf, cap, n, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, f->type) < 0)
        return -1;
    for (int k = 0; f->kind != M_NONE && k < 4 && (k == 0 || f->s[k].value); k++) {
        char label[64] = "";
        if (f->label)
            snprintf(label, sizeof label, ",%s=\"%s\"", f->label, f->s[k].value);
        const char *v = (const char *)s + f->s[k].off;
        int rc = 0;
        switch (f->kind) {
        case M_U64:
            rc = append(buf, cap, n, "%s{run=\"%s\"%s} %llu\n", f->name, run, label,
                        (unsigned long long)*(const uint64_t *)v);
            break;
        case M_U32:
            rc = append(buf, cap, n, "%s{run=\"%s\"%s} %u\n", f->name, run, label,
                        *(const uint32_t *)v);
            break;
        case M_INT:
            rc = append(buf, cap, n, "%s{run=\"%s\"%s} %d\n", f->name, run, label, *(const int *)v);
            break;
        default:
            rc = append(buf, cap, n, "%s{run=\"%s\"%s} %.3f\n", f->name, run, label,
                        *(const double *)v);
            break;
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

int metrics_render(const sf_coord_status *s, const char *run, char *buf, size_t cap) {
    int n = 0;
    if (cap == 0)
        return SF_EFULL;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof METRICS / sizeof METRICS[0]; i++)
        if (render_family(&METRICS[i], s, run, buf, cap, &n) < 0)
            return SF_EFULL;
    for (int k = 0; k < s->n_slow; k++)
        if (append(buf, cap, &n,
                   "spirefleet_job_slow_seconds{run=\"%s\",job=\"%llu\",worker=\"%s\"} %.3f\n", run,
                   (unsigned long long)s->slow[k].job_id, s->slow[k].worker_id,
                   s->slow[k].running_s) < 0)
            return SF_EFULL;
    return n;
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

/* The routes besides /metrics, in the order they are tried. The
 * dashboard's come last: its page, "/", is a prefix of every path. */
static int routes(sf_coordinator *co, sf_http_route *r) {
    int n = 0;
    r[n++] = (sf_http_route){"/models/", co_models_route, co}; /* model bundles (models.c) */
    return dashboard_routes(co, r, n);
}

int metrics_start(sf_coordinator *co, int port, sf_err *err) {
    /* the dashboard's snapshots, also without an HTTP server: operators
     * reach its documents through the CURVE socket (co_on_api_request) */
    int rc = dashboard_open(co, err);
    if (rc < 0 || port == SF_METRICS_OFF)
        return rc;
    sf_http_route r[SF_HTTP_MAX_ROUTES];
    if (rc == SF_OK)
        rc = sf_metrics_http_start_routes(co->cfg.security.metrics_public ? co->endpoint : NULL,
                                          port, render_page, co, r, routes(co, r), &co->http, err);
    if (rc < 0)
        dashboard_close(co);
    return rc;
}

void metrics_stop(sf_coordinator *co) {
    sf_metrics_http_stop(co->http);
    co->http = NULL;
    dashboard_close(co);
}

void metrics_publish(sf_coordinator *co) {
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    pthread_mutex_lock(&co->snap_lock);
    co->snap = st;
    pthread_mutex_unlock(&co->snap_lock);
    dashboard_publish(co, &st);
}

/* The largest file an ApiReply carries (a frame is at most 8 MiB). */
#define API_FILE_MAX (4u << 20)

void co_on_api_request(sf_coordinator *co, const uint8_t *ident, size_t len,
                       const Spirefleet__ApiRequest *q, int role) {
    if (role != SF_ZSEC_OPERATOR) {
        co->st.auth_refused++;
        sf_log(co->log, co->log_ctx,
               "coordinator: refused a dashboard request from a key that is not an operator's");
        co_reply_error(co, ident, len, SF_ESTATE,
                       "the dashboard through the coordinator's socket needs an operator key "
                       "(<keys>/operators)");
        return;
    }
    sf_http_route r[SF_HTTP_MAX_ROUTES];
    int n = dashboard_routes(co, r, 0); /* not /models/: bundles go over HTTP only */
    sf_http_reply rep;
    int m = co->dash ? sf_http_dispatch(r, n, q->path ? q->path : "", &rep) : 0;
    if (m < 0) {
        co_reply_error(co, ident, len, SF_ENOMEM, "dashboard: out of memory");
        return;
    }
    if (m > 0 && rep.fd >= 0) { /* a file (loop.json): its bytes, bounded by a frame */
        free(rep.body);
        rep.body = rep.file_size <= API_FILE_MAX ? malloc(rep.file_size + 1) : NULL;
        size_t got = 0;
        if (rep.body && sf_read_full(rep.fd, rep.body, rep.file_size, &got) == SF_OK)
            rep.len = got;
        else
            m = 0, free(rep.body), rep.body = NULL;
        close(rep.fd);
        rep.fd = -1;
    }
    static const char none[] = "not found: the dashboard's pages are / and /api/...\n";
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ApiReply a = SPIREFLEET__API_REPLY__INIT;
    if (m == 0) {
        a.status = 404;
        a.content_type = (char *)"text/plain; charset=utf-8";
        a.body.data = (uint8_t *)none;
        a.body.len = sizeof none - 1;
        rep.body = NULL;
    } else {
        a.status = rep.status;
        a.content_type =
            (char *)(rep.content_type ? rep.content_type : "text/plain; charset=utf-8");
        a.body.data = (uint8_t *)rep.body;
        a.body.len = rep.body ? rep.len : 0;
    }
    env.body_case = SPIREFLEET__ENVELOPE__BODY_API_REPLY;
    env.api_reply = &a;
    co_queue_reply(co, ident, len, &env);
    free(rep.body);
}
