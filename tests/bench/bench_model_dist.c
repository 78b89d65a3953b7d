/*
 * bench_model_dist.c — a new champion's bundle reaching N simulated
 * workers (docs/benchmarks.md "Model distribution"; docs/operator.md
 * "Model distribution").
 *
 * One coordinator, in-process, follows a registry whose champion is a
 * small model A that every simulated worker holds. The simulated workers
 * (DEALER sockets multiplexed on one thread) lease jobs, "play" each for
 * --job-seconds (uniform in 0.5x..1.5x) and give it back, asking again at
 * once. After --warmup seconds a bundle B of --mib MiB is promoted. Each
 * worker learns of B from its next Job (Job.next_model_sha256) and
 * downloads it over HTTP — the coordinator's GET /models/<sha256>, or a
 * separate server standing for a CDN — after a random stagger in
 * [0, --stagger-s), on a second thread (libcurl multi; the bytes are
 * counted and the first copy's SHA-256 checked, not written to disk: the
 * workers' disks are not the coordinator's cost).
 *
 * Three modes, each a fresh coordinator:
 *   ready     workers report what they hold (JobRequest.ready_models) and
 *             the coordinator binds a job to B only once they hold it: the
 *             worker plays A meanwhile (what spirefleet does)
 *   blind     workers do not report: jobs are bound to B at once, and a
 *             worker handed a job of a model it lacks fetches it now (no
 *             stagger) and is idle until it is here (the baseline)
 *   cdn       as ready, with the URL template pointing at the CDN stand-in
 *
 * Figures (JSON lines, one per mode, then one human line each):
 *   dist.<mode>.egress_mib        bytes of models the coordinator served
 *   dist.<mode>.egress_ratio      that over N x the bundle (1: each once)
 *   dist.<mode>.t50_s / t95_s     from the promotion until 50 % / 95 % of
 *                                 the workers have played a job of B
 *   dist.<mode>.idle_worker_s     worker-seconds with no job to play
 *                                 (waiting for a model)
 *   dist.<mode>.lease_p99_before_ms / lease_p99_during_ms
 *                                 JobRequest -> Job before the promotion
 *                                 and while the bundle is being fetched
 *   dist.<mode>.fetch_retries     downloads that failed and were retried
 *
 * usage: bench-model-dist [--workers N] [--mib M] [--stagger-s S]
 *        [--job-seconds J] [--warmup S] [--modes ready,blind,cdn]
 * Defaults (what `make bench` runs): N 1000, 50 MiB, stagger 20 s, jobs
 * of 2 s, 3 s warm-up, all three modes.
 */
#include <curl/curl.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "bench.h"
#include "bench_coord.h"
#include "common/metrics_http.h"
#include "common/registry.h"
#include "common/sha256.h"
#include "coordinator/coordinator.h"
#include "fleet/config.h"

#define MAX_LAT 400000

typedef struct opts {
    int workers, mib;
    double stagger_s, job_s, warmup_s;
    const char *modes;
} opts;

enum { M_READY, M_BLIND, M_CDN };
static const char *const mode_names[] = {"ready", "blind", "cdn"};

/* A simulated worker. `has_b` and `dl_state` are shared with the
 * download thread. */
typedef struct sim {
    void *s;
    int welcomed;
    uint64_t job;        /* the job in hand (0: none)                   */
    int job_b;           /* it is bound to B                            */
    double due;          /* when the job in hand is "played"            */
    double asked;        /* when the JobRequest went                    */
    double idle_from;    /* waiting for a model since (blind), or -1    */
    double first_b;      /* first Job of B received (-1: none yet)      */
    atomic_int has_b;    /* B is here                                   */
    atomic_int dl_state; /* 0 none, 1 queued, 2 running, 3 done         */
    double dl_at;        /* when the download may start                 */
} sim;

typedef struct run {
    const opts *o;
    int mode;
    sim *w;
    char url[256];
    char a[65], b[65];
    uint64_t b_bytes;
    double t_promote; /* seconds since t0; 0 before */
    uint64_t t0;
    atomic_int stop;
    atomic_uint_fast64_t retries;
    atomic_int b_checked; /* the first copy's digest: 1 matched, -1 did not */
    double lat_before[MAX_LAT], lat_during[MAX_LAT];
    int n_before, n_during;
    double idle_s;
    uint64_t waits; /* JobRequests answered Wait */
    char reg[700];  /* the registry whose champion is promoted */
} run;

static double now_s(const run *r) {
    return (double)(sf_now_ns() - r->t0) / 1e9;
}

static double uniform(uint64_t *x) {
    return (double)(xorshift(x) >> 11) / 9007199254740992.0;
}

/* ---- downloads (libcurl multi on a thread of its own) ------------------ */

typedef struct xfer {
    run *r;
    int i;
    uint64_t got;
    sf_sha256_ctx *h; /* the first copy only */
} xfer;

static size_t on_data(char *p, size_t size, size_t n, void *ud) {
    xfer *x = ud;
    x->got += size * n;
    if (x->h)
        sf_sha256_update(x->h, p, size * n);
    return size * n;
}

static void start_xfer(CURLM *m, run *r, int i, int check) {
    xfer *x = calloc(1, sizeof *x);
    x->r = r;
    x->i = i;
    if (check)
        sf_sha256_new(&x->h, NULL);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, r->url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(c, CURLOPT_PRIVATE, x);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_multi_add_handle(m, c);
    atomic_store(&r->w[i].dl_state, 2);
}

static void *downloads(void *p) {
    run *r = p;
    CURLM *m = curl_multi_init();
    int first = 1;
    while (!atomic_load(&r->stop)) {
        double t = now_s(r);
        for (int i = 0; i < r->o->workers; i++)
            if (atomic_load(&r->w[i].dl_state) == 1 && r->w[i].dl_at <= t) {
                start_xfer(m, r, i, first);
                first = 0;
            }
        int running = 0;
        curl_multi_perform(m, &running);
        curl_multi_poll(m, NULL, 0, 20, NULL);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            CURL *c = msg->easy_handle;
            xfer *x;
            curl_easy_getinfo(c, CURLINFO_PRIVATE, (char **)&x);
            sim *w = &r->w[x->i];
            if (msg->data.result == CURLE_OK && x->got == r->b_bytes) {
                if (x->h) {
                    uint8_t d[SF_SHA256_BYTES];
                    char hex[65];
                    sf_sha256_final(x->h, d, NULL);
                    sf_hex(d, sizeof d, hex);
                    atomic_store(&r->b_checked, strcmp(hex, r->b) ? -1 : 1);
                }
                atomic_store(&w->has_b, 1);
                atomic_store(&w->dl_state, 3);
            } else { /* refused (connection limit) or cut: again in a second */
                atomic_fetch_add(&r->retries, 1);
                w->dl_at = now_s(r) + 1.0;
                atomic_store(&w->dl_state, 1);
            }
            sf_sha256_free(x->h);
            free(x);
            curl_multi_remove_handle(m, c);
            curl_easy_cleanup(c);
        }
    }
    curl_multi_cleanup(m);
    return NULL;
}

/* ---- the simulated workers' leases -------------------------------------- */

static void ask(run *r, sim *w) {
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__JobRequest jr = SPIREFLEET__JOB_REQUEST__INIT;
    char *ready[2];
    size_t n = 0;
    if (atomic_load(&w->has_b))
        ready[n++] = r->b;
    ready[n++] = r->a;
    if (r->mode != M_BLIND) {
        jr.fetches_models = 1;
        jr.ready_models = ready;
        jr.n_ready_models = n;
    }
    env.body_case = SPIREFLEET__ENVELOPE__BODY_JOB_REQUEST;
    env.job_request = &jr;
    send_env(w->s, &env);
    w->asked = now_s(r);
}

/* Only this thread moves a download out of state 0; dl_at is written
 * before the state that publishes it. */
static void queue_download(run *r, sim *w, double delay) {
    if (atomic_load(&w->dl_state) != 0)
        return;
    w->dl_at = now_s(r) + delay;
    atomic_store(&w->dl_state, 1);
}

static void on_job(run *r, sim *w, const Spirefleet__Job *j, uint64_t *rng) {
    double t = now_s(r), ms = (t - w->asked) * 1e3;
    if (r->t_promote == 0 && r->n_before < MAX_LAT)
        r->lat_before[r->n_before++] = ms;
    else if (r->t_promote > 0 && r->n_during < MAX_LAT)
        r->lat_during[r->n_during++] = ms;
    w->job = j->job_id;
    w->job_b = !strcmp(j->model_sha256, r->b);
    w->due = t + r->o->job_s * (0.5 + uniform(rng));
    w->idle_from = -1;
    if (w->job_b && w->first_b < 0 && atomic_load(&w->has_b))
        w->first_b = t; /* plays it now (blind: once it is here, below) */
    if (j->next_model_sha256 && !strcmp(j->next_model_sha256, r->b))
        queue_download(r, w, r->mode == M_BLIND ? 0 : r->o->stagger_s * uniform(rng));
    if (w->job_b && !atomic_load(&w->has_b)) { /* blind: fetch now, idle meanwhile */
        queue_download(r, w, 0);
        w->idle_from = t;
    }
}

static void simulate(run *r, void *ctx, const char *endpoint) {
    const opts *o = r->o;
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    zmq_pollitem_t *items = calloc((size_t)o->workers, sizeof *items);
    for (int i = 0; i < o->workers; i++) {
        sim *w = &r->w[i];
        w->s = zmq_socket(ctx, ZMQ_DEALER);
        int linger = 0;
        zmq_setsockopt(w->s, ZMQ_LINGER, &linger, sizeof linger);
        zmq_connect(w->s, endpoint);
        char id[24];
        snprintf(id, sizeof id, "sim%05d", i);
        send_hello(w->s, id, 0);
        w->first_b = w->idle_from = -1;
        items[i].socket = w->s;
        items[i].events = ZMQ_POLLIN;
    }
    for (;;) {
        double t = now_s(r);
        int b_everywhere = 1;
        for (int i = 0; i < o->workers; i++)
            b_everywhere &= r->w[i].first_b >= 0;
        if (r->t_promote > 0 && b_everywhere)
            break;
        if (t > o->warmup_s + o->stagger_s + 240) /* a run that cannot end: say so below */
            break;
        if (r->t_promote == 0 && t >= o->warmup_s) {
            sf_err e = {0};
            if (sf_registry_champion_write(r->reg, r->b, &e) != SF_OK)
                fprintf(stderr, "bench-model-dist: %s\n", e.msg);
            r->t_promote = now_s(r);
        }
        zmq_poll(items, o->workers, 5);
        t = now_s(r);
        for (int i = 0; i < o->workers; i++) {
            sim *w = &r->w[i];
            Spirefleet__Envelope *env;
            while (sf_wire_recv(w->s, "the coordinator", 0, &env, NULL) == SF_OK) {
                if (env->body_case == SPIREFLEET__ENVELOPE__BODY_WELCOME) {
                    w->welcomed = 1;
                    ask(r, w);
                } else if (env->body_case == SPIREFLEET__ENVELOPE__BODY_JOB) {
                    on_job(r, w, env->job, &rng);
                } else if (env->body_case == SPIREFLEET__ENVELOPE__BODY_WAIT) {
                    r->waits++; /* a worker with nothing to play */
                    ask(r, w);
                }
                sf_wire_free(env);
            }
            if (w->job && w->idle_from >= 0) { /* blind: its model is on its way */
                if (atomic_load(&w->has_b)) {
                    r->idle_s += t - w->idle_from;
                    if (w->first_b < 0)
                        w->first_b = t;
                    w->idle_from = -1;
                    w->due = t + o->job_s;
                }
                continue;
            }
            if (w->job && t >= w->due) {
                send_abandon(w->s, w->job);
                w->job = 0;
                ask(r, w);
            }
        }
    }
    atomic_store(&r->stop, 1);
    for (int i = 0; i < o->workers; i++)
        zmq_close(r->w[i].s);
    free(items);
}

static double pct(double *v, int n, double q) {
    if (n == 0)
        return -1;
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    int k = (int)(q * (n - 1) + 0.5);
    return v[k];
}

/* The CDN stand-in: serves B from its own HTTP server. */
static int cdn_route(void *ctx, const sf_http_request *req, sf_http_reply *rep) {
    const char *path = ctx;
    (void)req;
    rep->fd = open(path, O_RDONLY);
    struct stat sb;
    if (rep->fd < 0 || fstat(rep->fd, &sb) != 0)
        return -1;
    rep->file_size = (uint64_t)sb.st_size;
    rep->content_type = "application/octet-stream";
    return 0;
}

static char *empty_page(void *ctx, size_t *len) {
    (void)ctx;
    *len = 0;
    return strdup("");
}

static int one_mode(const opts *o, int mode, const char *dir) {
    run *r = calloc(1, sizeof *r);
    r->o = o;
    r->mode = mode;
    r->w = calloc((size_t)o->workers, sizeof *r->w);
    char *reg = r->reg, path[800], champion[800], yaml[2048];
    snprintf(r->reg, sizeof r->reg, "%s/reg-%s", dir, mode_names[mode]);
    sf_mkdir_p(reg);
    /* A: a few bytes every worker holds; B: --mib MiB of noise */
    memset(r->a, 'a', 64);
    uint64_t x = 88172645463325252ull;
    size_t nb = (size_t)o->mib << 20;
    uint8_t *buf = malloc(nb);
    for (size_t i = 0; i + 8 <= nb; i += 8) {
        uint64_t v = xorshift(&x);
        memcpy(buf + i, &v, 8);
    }
    uint8_t d[SF_SHA256_BYTES];
    sf_sha256(buf, nb, d, NULL);
    sf_hex(d, sizeof d, r->b);
    r->b_bytes = nb;
    snprintf(path, sizeof path, "%s/%s.safetensors", reg, r->b);
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, nb, f);
    fclose(f);
    free(buf);
    snprintf(champion, sizeof champion, "%s/champion", reg);
    sf_registry_champion_write(reg, r->a, NULL);
    snprintf(yaml, sizeof yaml,
             "run: {name: dist, output_dir: '%s/run-%s'}\n"
             "seeds: {start: 0, count: %d, job_size: 1}\n"
             "search: {evaluator: net}\n"
             "model: {champion: '%s'}\n"
             "coordinator: {endpoint: 'tcp://127.0.0.1:*', lease_seconds: 600, heartbeat_ms: "
             "1000, heartbeat_liveness: 120}\n"
             "security: {mode: none, audit_fraction: 0, audit_first_jobs: 0, "
             "max_lease_share: 1}\n",
             dir, mode_names[mode], o->workers * 60, champion);
    sf_run_config cfg;
    sf_err e = {0};
    if (sf_config_parse(yaml, strlen(yaml), "bench", &cfg, &e) != SF_OK) {
        fprintf(stderr, "bench-model-dist: %s\n", e.msg);
        return 1;
    }
    sf_coord_opts co_o = {.metrics_port = SF_METRICS_ANY_PORT, .max_workers = o->workers + 16};
    sf_coordinator *co;
    if (sf_coordinator_open(&cfg, &co_o, &co, &e) != SF_OK) {
        fprintf(stderr, "bench-model-dist: %s\n", e.msg);
        return 1;
    }
    sf_metrics_http *cdn = NULL;
    if (mode == M_CDN) {
        sf_http_route rt[] = {{"/cdn/", cdn_route, path}};
        if (sf_metrics_http_start_routes(NULL, SF_METRICS_ANY_PORT, empty_page, NULL, rt, 1, &cdn,
                                         &e) != SF_OK) {
            fprintf(stderr, "bench-model-dist: %s\n", e.msg);
            return 1;
        }
        snprintf(r->url, sizeof r->url, "http://127.0.0.1:%d/cdn/%s", sf_metrics_http_port(cdn),
                 r->b);
    } else {
        snprintf(r->url, sizeof r->url, "http://127.0.0.1:%d/models/%s",
                 sf_coordinator_metrics_port(co), r->b);
    }
    char endpoint[256];
    snprintf(endpoint, sizeof endpoint, "%s", sf_coordinator_endpoint(co));
    serve_arg sa = {.co = co};
    pthread_t th_serve, th_dl;
    pthread_create(&th_serve, NULL, serve, &sa);
    r->t0 = sf_now_ns();
    pthread_create(&th_dl, NULL, downloads, r);
    void *ctx = zmq_ctx_new();
    zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, o->workers + 64);
    simulate(r, ctx, endpoint);
    pthread_join(th_dl, NULL);
    sa.stop = 1;
    pthread_join(th_serve, NULL);
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    sf_coordinator_close(co);
    sf_metrics_http_stop(cdn);
    zmq_ctx_term(ctx);

    double *tb = malloc((size_t)o->workers * sizeof *tb);
    int n_b = 0;
    for (int i = 0; i < o->workers; i++)
        if (r->w[i].first_b >= 0)
            tb[n_b++] = r->w[i].first_b - r->t_promote;
    double t50 = n_b * 2 >= o->workers ? pct(tb, n_b, 0.5 * o->workers / n_b) : -1;
    double t95 = n_b * 100 >= 95 * o->workers ? pct(tb, n_b, 0.95 * o->workers / n_b) : -1;
    double egress = (double)st.model_bytes_served;
    double ratio = egress / ((double)o->workers * (double)r->b_bytes);
    double p99b = pct(r->lat_before, r->n_before, 0.99);
    double p99d = pct(r->lat_during, r->n_during, 0.99);
    const char *m = mode_names[mode];
    printf("{\"bench\":\"dist.%s.egress_mib\",\"value\":%.1f,\"workers\":%d,\"bundle_mib\":%d}\n",
           m, egress / 1048576.0, o->workers, o->mib);
    printf("{\"bench\":\"dist.%s.egress_ratio\",\"value\":%.3f}\n", m, ratio);
    printf("{\"bench\":\"dist.%s.t50_s\",\"value\":%.2f,\"stagger_s\":%.0f}\n", m, t50,
           o->stagger_s);
    printf("{\"bench\":\"dist.%s.t95_s\",\"value\":%.2f,\"stagger_s\":%.0f}\n", m, t95,
           o->stagger_s);
    printf("{\"bench\":\"dist.%s.idle_worker_s\",\"value\":%.1f,\"waits\":%llu}\n", m, r->idle_s,
           (unsigned long long)r->waits);
    printf("{\"bench\":\"dist.%s.lease_p99_before_ms\",\"value\":%.2f,\"leases\":%d}\n", m, p99b,
           r->n_before);
    printf("{\"bench\":\"dist.%s.lease_p99_during_ms\",\"value\":%.2f,\"leases\":%d}\n", m, p99d,
           r->n_during);
    printf("{\"bench\":\"dist.%s.fetch_retries\",\"value\":%llu}\n", m,
           (unsigned long long)atomic_load(&r->retries));
    printf("# %s: %d workers, %d MiB: coordinator egress %.0f MiB (%.2fx the bundle per worker), "
           "95%% on the new model after %.1f s, %.0f idle worker-s, lease p99 %.2f -> %.2f ms, "
           "%llu retries, %d workers never got it, first copy %s\n",
           m, o->workers, o->mib, egress / 1048576.0, ratio, t95, r->idle_s, p99b, p99d,
           (unsigned long long)atomic_load(&r->retries), o->workers - n_b,
           atomic_load(&r->b_checked) == 1 ? "verified" : "NOT VERIFIED");
    fflush(stdout);
    int bad = n_b < o->workers || atomic_load(&r->b_checked) != 1;
    free(tb);
    free(r->w);
    free(r);
    unlink(path);
    return bad;
}

int main(int argc, char **argv) {
    opts o = {.workers = 1000,
              .mib = 50,
              .stagger_s = 20,
              .job_s = 2,
              .warmup_s = 3,
              .modes = "ready,blind,cdn"};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--workers"))
            o.workers = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--mib"))
            o.mib = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--stagger-s"))
            o.stagger_s = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--job-seconds"))
            o.job_s = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup"))
            o.warmup_s = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--modes"))
            o.modes = argv[i + 1];
        else {
            fprintf(stderr, "bench-model-dist: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (o.workers < 1 || o.mib < 1) {
        fprintf(stderr, "bench-model-dist: --workers and --mib must be at least 1\n");
        return 2;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char dir[] = "/tmp/sf-bench-dist-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("bench-model-dist: mkdtemp");
        return 1;
    }
    int bad = 0;
    for (int mode = M_READY; mode <= M_CDN; mode++)
        if (strstr(o.modes, mode_names[mode]))
            bad |= one_mode(&o, mode, dir);
    bench_rm_rf(dir);
    curl_global_cleanup();
    return bad;
}
