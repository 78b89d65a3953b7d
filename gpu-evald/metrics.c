/*
 * metrics.c — Prometheus metrics for gpu-evald (see metrics.h), served over
 * HTTP by common/metrics_http.h (its port and address convention).
 *
 * Exposed (every per-model series carries model="<sha256>"):
 *   sf_evald_model_info{model,path,arch,backend}  1
 *   sf_evald_canary_ok{model}                     1 serving, 0 refused
 *   sf_evald_model_loaded{model}                  1 loaded, 0 dropped (hot swap)
 *   sf_evald_canary_max_abs_error{model}          largest |got - want| at load
 *   sf_evald_canary_tolerance_ratio{model}        largest |got - want| / (abs +
 *                                                 rel |want|) at load: <= 1
 *                                                 passed; how near the limit
 *   sf_evald_requests_total{model}                requests queued for a batch
 *   sf_evald_evals_total{model}                   positions evaluated
 *   sf_evald_batches_total{model}
 *   sf_evald_evals_per_second{model}              over the last 10 s
 *   sf_evald_batch_size{model} histogram          positions per batch
 *   sf_evald_queue_wait_seconds{model} summary    arrival to batch start,
 *                                                 quantiles 0.5 and 0.99 over
 *                                                 the last 4096 requests
 *   sf_evald_compute_seconds_total{model}         time inside the backend
 *   sf_evald_errors_total{model,kind}             kind: malformed, version,
 *                                                 invalid_position,
 *                                                 unknown_model, over_limit,
 *                                                 model_refused, backend,
 *                                                 reply_dropped (model="" when
 *                                                 no model is known)
 *   sf_evald_clients                              clients known now
 */
#include "gpu-evald/metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SF_WAIT_RING 4096
#define SF_RATE_RING 4096
#define SF_RATE_NS   10000000000ull

static const char *const kinds[] = {"malformed",     "version",      "invalid_position",
                                    "unknown_model", "over_limit",   "model_refused",
                                    "backend",       "reply_dropped"};
#define SF_NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

typedef struct {
    char sha[65];
    char path[256];
    char arch[32];
    char backend[8];
    int serving;
    int loaded; /* 0 once dropped (hot swap); its counters stay */
    double canary_err, canary_ratio;
    uint64_t requests, evals, batches;
    uint64_t *hist; /* [nb + 1]: per bucket, last is +Inf */
    double batch_sum, compute_s;
    double waits[SF_WAIT_RING];
    uint64_t n_wait;
    double wait_sum;
    uint64_t rate_t[SF_RATE_RING];
    int rate_n[SF_RATE_RING];
    int rate_head, rate_count;
    uint64_t errors[SF_NKINDS];
} model_metrics;

struct sf_metrics {
    pthread_mutex_t mu;
    int nb;
    int *bounds; /* histogram upper bounds */
    model_metrics **models;
    int n, cap;
    uint64_t errors[SF_NKINDS]; /* not attributable to a model */
    int clients;
    sf_metrics_http *http; /* NULL when not serving */
};

sf_metrics *sf_metrics_create(int max_batch) {
    sf_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    pthread_mutex_init(&m->mu, NULL);
    m->bounds = calloc(32, sizeof *m->bounds);
    if (!m->bounds) {
        free(m);
        return NULL;
    }
    for (int b = 1; b < max_batch && m->nb < 31; b *= 2)
        m->bounds[m->nb++] = b;
    m->bounds[m->nb++] = max_batch;
    return m;
}

void sf_metrics_stop(sf_metrics *m) {
    if (m) {
        sf_metrics_http_stop(m->http);
        m->http = NULL;
    }
}

void sf_metrics_free(sf_metrics *m) {
    if (!m)
        return;
    sf_metrics_stop(m);
    for (int i = 0; i < m->n; i++) {
        free(m->models[i]->hist);
        free(m->models[i]);
    }
    free(m->models);
    free(m->bounds);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static int kind_index(const char *kind) {
    for (int i = 0; i < SF_NKINDS; i++)
        if (strcmp(kinds[i], kind) == 0)
            return i;
    return SF_NKINDS - 2; /* "backend": anything else */
}

int sf_metrics_add_model(sf_metrics *m, const char *sha, const char *path, const char *arch,
                         const char *backend, int serving, double canary_err, double canary_ratio) {
    /* a model dropped and loaded again keeps its series (one per model) */
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->models[i]->sha, sha)) {
            model_metrics *old = m->models[i];
            old->serving = serving;
            old->loaded = 1;
            old->canary_err = canary_err;
            old->canary_ratio = canary_ratio;
            pthread_mutex_unlock(&m->mu);
            return i;
        }
    pthread_mutex_unlock(&m->mu);
    model_metrics *mm = calloc(1, sizeof *mm);
    uint64_t *hist = calloc((size_t)m->nb + 1, sizeof *hist);
    if (!mm || !hist) {
        free(mm);
        free(hist);
        return -1;
    }
    snprintf(mm->sha, sizeof mm->sha, "%s", sha);
    snprintf(mm->path, sizeof mm->path, "%s", path);
    snprintf(mm->arch, sizeof mm->arch, "%s", arch);
    snprintf(mm->backend, sizeof mm->backend, "%s", backend);
    mm->serving = serving;
    mm->loaded = 1;
    mm->canary_err = canary_err;
    mm->canary_ratio = canary_ratio;
    mm->hist = hist;
    pthread_mutex_lock(&m->mu);
    int id = -1;
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 4;
        model_metrics **nm = realloc(m->models, (size_t)cap * sizeof *nm);
        if (nm) {
            m->models = nm;
            m->cap = cap;
        }
    }
    if (m->n < m->cap) {
        m->models[m->n] = mm;
        id = m->n++;
    }
    pthread_mutex_unlock(&m->mu);
    if (id < 0) {
        free(hist);
        free(mm);
    }
    return id;
}

static model_metrics *get(sf_metrics *m, int id) {
    return id >= 0 && id < m->n ? m->models[id] : NULL;
}

void sf_metrics_model_dropped(sf_metrics *m, int id) {
    pthread_mutex_lock(&m->mu);
    model_metrics *mm = get(m, id);
    if (mm)
        mm->loaded = 0;
    pthread_mutex_unlock(&m->mu);
}

void sf_metrics_error(sf_metrics *m, int id, const char *kind) {
    pthread_mutex_lock(&m->mu);
    model_metrics *mm = get(m, id);
    (mm ? mm->errors : m->errors)[kind_index(kind)]++;
    pthread_mutex_unlock(&m->mu);
}

void sf_metrics_request(sf_metrics *m, int id) {
    pthread_mutex_lock(&m->mu);
    model_metrics *mm = get(m, id);
    if (mm)
        mm->requests++;
    pthread_mutex_unlock(&m->mu);
}

void sf_metrics_wait(sf_metrics *m, int id, double s) {
    pthread_mutex_lock(&m->mu);
    model_metrics *mm = get(m, id);
    if (mm) {
        mm->waits[mm->n_wait % SF_WAIT_RING] = s;
        mm->n_wait++;
        mm->wait_sum += s;
    }
    pthread_mutex_unlock(&m->mu);
}

void sf_metrics_batch(sf_metrics *m, int id, int n, double seconds, uint64_t now) {
    pthread_mutex_lock(&m->mu);
    model_metrics *mm = get(m, id);
    if (mm) {
        mm->evals += (uint64_t)n;
        mm->batches++;
        mm->batch_sum += n;
        mm->compute_s += seconds;
        int b = 0;
        while (b < m->nb && n > m->bounds[b])
            b++;
        mm->hist[b]++;
        mm->rate_t[mm->rate_head] = now;
        mm->rate_n[mm->rate_head] = n;
        mm->rate_head = (mm->rate_head + 1) % SF_RATE_RING;
        if (mm->rate_count < SF_RATE_RING)
            mm->rate_count++;
    }
    pthread_mutex_unlock(&m->mu);
}

void sf_metrics_clients(sf_metrics *m, int n) {
    pthread_mutex_lock(&m->mu);
    m->clients = n;
    pthread_mutex_unlock(&m->mu);
}

/* ---- rendering ---- */
typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static void put(sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *s, const char *fmt, ...) {
    if (s->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(s->p ? s->p + s->len : NULL, s->p ? s->cap - s->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            s->oom = 1;
            return;
        }
        if (s->p && (size_t)n < s->cap - s->len) {
            s->len += (size_t)n;
            return;
        }
        size_t cap = s->cap ? s->cap * 2 : 8192;
        while (cap < s->len + (size_t)n + 1)
            cap *= 2;
        char *np = realloc(s->p, cap);
        if (!np) {
            s->oom = 1;
            return;
        }
        s->p = np;
        s->cap = cap;
    }
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Escape a label value: backslash, double quote and newline. */
static void put_label(sbuf *s, const char *v) {
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            put(s, "\\%c", *v);
        else if (*v == '\n')
            put(s, "\\n");
        else
            put(s, "%c", *v);
    }
}

static char *render(sf_metrics *m, size_t *len) {
    sbuf s = {0};
    double *tmp = malloc(SF_WAIT_RING * sizeof *tmp);
    if (!tmp)
        return NULL;
    pthread_mutex_lock(&m->mu);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;

    put(&s, "# HELP sf_evald_model_info A model this server loaded.\n"
            "# TYPE sf_evald_model_info gauge\n");
    for (int i = 0; i < m->n; i++) {
        model_metrics *mm = m->models[i];
        put(&s, "sf_evald_model_info{model=\"%s\",path=\"", mm->sha);
        put_label(&s, mm->path);
        put(&s, "\",arch=\"");
        put_label(&s, mm->arch);
        put(&s, "\",backend=\"%s\"} 1\n", mm->backend);
    }
#define SERIES(name, type, help, fmt, expr)                              \
    do {                                                                 \
        put(&s, "# HELP " name " " help "\n# TYPE " name " " type "\n"); \
        for (int i = 0; i < m->n; i++) {                                 \
            model_metrics *mm = m->models[i];                            \
            put(&s, name "{model=\"%s\"} " fmt "\n", mm->sha, expr);     \
        }                                                                \
    } while (0)
    SERIES("sf_evald_canary_ok", "gauge", "1 if the model passed its canary and is served.", "%d",
           mm->serving);
    SERIES("sf_evald_model_loaded", "gauge",
           "1 while the model is loaded; 0 once a hot-loaded model was dropped.", "%d", mm->loaded);
    SERIES("sf_evald_canary_max_abs_error", "gauge",
           "Largest canary error on this backend at load.", "%.6g", mm->canary_err);
    SERIES("sf_evald_canary_tolerance_ratio", "gauge",
           "Largest canary error relative to its element's tolerance (abs + rel |expected|) at "
           "load; at most 1 when it passed.",
           "%.6g", mm->canary_ratio);
    SERIES("sf_evald_requests_total", "counter", "Requests queued for batching.", "%llu",
           (unsigned long long)mm->requests);
    SERIES("sf_evald_evals_total", "counter", "Positions evaluated.", "%llu",
           (unsigned long long)mm->evals);
    SERIES("sf_evald_batches_total", "counter", "Batches run.", "%llu",
           (unsigned long long)mm->batches);
    SERIES("sf_evald_compute_seconds_total", "counter", "Seconds spent in the backend.", "%.6f",
           mm->compute_s);
#undef SERIES
    put(&s, "# HELP sf_evald_evals_per_second Positions per second over the last 10 s.\n"
            "# TYPE sf_evald_evals_per_second gauge\n");
    for (int i = 0; i < m->n; i++) {
        model_metrics *mm = m->models[i];
        uint64_t sum = 0, oldest = now;
        for (int k = 0; k < mm->rate_count; k++) {
            int j = (mm->rate_head - 1 - k + SF_RATE_RING) % SF_RATE_RING;
            if (now - mm->rate_t[j] > SF_RATE_NS)
                break;
            sum += (uint64_t)mm->rate_n[j];
            oldest = mm->rate_t[j];
        }
        /* A full ring inside the window: rate over the span it covers. */
        double span = mm->rate_count == SF_RATE_RING && now - oldest < SF_RATE_NS
                          ? (double)(now - oldest) / 1e9
                          : (double)SF_RATE_NS / 1e9;
        put(&s, "sf_evald_evals_per_second{model=\"%s\"} %.3f\n", mm->sha,
            span > 0 ? (double)sum / span : 0.0);
    }
    put(&s, "# HELP sf_evald_batch_size Positions per batch.\n"
            "# TYPE sf_evald_batch_size histogram\n");
    for (int i = 0; i < m->n; i++) {
        model_metrics *mm = m->models[i];
        uint64_t cum = 0;
        for (int b = 0; b < m->nb; b++) {
            cum += mm->hist[b];
            put(&s, "sf_evald_batch_size_bucket{model=\"%s\",le=\"%d\"} %llu\n", mm->sha,
                m->bounds[b], (unsigned long long)cum);
        }
        cum += mm->hist[m->nb];
        put(&s, "sf_evald_batch_size_bucket{model=\"%s\",le=\"+Inf\"} %llu\n", mm->sha,
            (unsigned long long)cum);
        put(&s, "sf_evald_batch_size_sum{model=\"%s\"} %.0f\n", mm->sha, mm->batch_sum);
        put(&s, "sf_evald_batch_size_count{model=\"%s\"} %llu\n", mm->sha,
            (unsigned long long)mm->batches);
    }
    put(&s, "# HELP sf_evald_queue_wait_seconds Arrival to batch start, last 4096 requests.\n"
            "# TYPE sf_evald_queue_wait_seconds summary\n");
    for (int i = 0; i < m->n; i++) {
        model_metrics *mm = m->models[i];
        int k = mm->n_wait < SF_WAIT_RING ? (int)mm->n_wait : SF_WAIT_RING;
        memcpy(tmp, mm->waits, (size_t)k * sizeof *tmp);
        qsort(tmp, (size_t)k, sizeof *tmp, cmp_d);
        const double qs[2] = {0.5, 0.99};
        for (int q = 0; q < 2; q++)
            put(&s, "sf_evald_queue_wait_seconds{model=\"%s\",quantile=\"%g\"} %.6f\n", mm->sha,
                qs[q], k ? tmp[(int)(qs[q] * (k - 1))] : 0.0);
        put(&s, "sf_evald_queue_wait_seconds_sum{model=\"%s\"} %.6f\n", mm->sha, mm->wait_sum);
        put(&s, "sf_evald_queue_wait_seconds_count{model=\"%s\"} %llu\n", mm->sha,
            (unsigned long long)mm->n_wait);
    }
    put(&s, "# HELP sf_evald_errors_total Requests answered with an error, by kind.\n"
            "# TYPE sf_evald_errors_total counter\n");
    for (int k = 0; k < SF_NKINDS; k++)
        put(&s, "sf_evald_errors_total{model=\"\",kind=\"%s\"} %llu\n", kinds[k],
            (unsigned long long)m->errors[k]);
    for (int i = 0; i < m->n; i++)
        for (int k = 0; k < SF_NKINDS; k++)
            put(&s, "sf_evald_errors_total{model=\"%s\",kind=\"%s\"} %llu\n", m->models[i]->sha,
                kinds[k], (unsigned long long)m->models[i]->errors[k]);
    put(&s,
        "# HELP sf_evald_clients Clients known to the server.\n"
        "# TYPE sf_evald_clients gauge\nsf_evald_clients %d\n",
        m->clients);
    pthread_mutex_unlock(&m->mu);
    free(tmp);
    if (s.oom) {
        free(s.p);
        return NULL;
    }
    *len = s.len;
    return s.p;
}

size_t sf_metrics_text(sf_metrics *m, char *buf, size_t cap) {
    size_t len = 0;
    char *t = render(m, &len);
    if (!t) {
        if (cap)
            buf[0] = '\0';
        return 0;
    }
    if (cap) {
        size_t n = len < cap - 1 ? len : cap - 1;
        memcpy(buf, t, n);
        buf[n] = '\0';
    }
    free(t);
    return len;
}

static char *render_page(void *ctx, size_t *len) {
    return render(ctx, len);
}

int sf_metrics_start(sf_metrics *m, const char *endpoint, int port, sf_err *err) {
    return sf_metrics_http_start(endpoint, port, render_page, m, &m->http, err);
}

int sf_metrics_port(const sf_metrics *m) {
    return sf_metrics_http_port(m->http);
}

const char *sf_metrics_url(const sf_metrics *m) {
    return sf_metrics_http_url(m->http);
}
