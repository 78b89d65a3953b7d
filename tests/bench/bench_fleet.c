/*
 * bench_fleet.c — fleet benchmarks (issue: coordinator + worker + sf-fleet).
 *
 *   fleet.bare_labels_per_s_core  the jobs of configs/local.yaml played
 *                                 in-process by workers.count threads that
 *                                 take whole jobs, as the fleet's workers
 *                                 do (no coordinator, processes or upload):
 *                                 the bare search rate on the same fights
 *                                 and cores, labels per second per thread
 *   fleet.e2e_labels_per_s_core   `sf-fleet run configs/local.yaml` end to end
 *                                 (coordinator + workers.count processes),
 *                                 labels / wall second / worker
 *   fleet.e2e_over_bare           the ratio (target >= 0.9)
 *   fleet.lease_ops_per_s         JobRequest -> Job round trips per second, each
 *                                 lease given back at once (JobFailed, abandoned)
 *                                 served by one coordinator to 200 DEALER
 *                                 clients on loopback with CURVE (target
 *                                 >= 5000); _plain the same with
 *                                 security.mode none, in the same run, and
 *                                 lease_curve_over_plain their ratio
 *   fleet.flood_*                 a peer that asks for 1 MiB shard chunks as
 *                                 fast as it can and never reads its replies,
 *                                 against `sf-fleet coordinator` serving the
 *                                 last end-to-end run: the coordinator's
 *                                 resident memory before and at its peak, and
 *                                 how fast it answers another client's status
 *                                 requests meanwhile (docs/operator.md: what
 *                                 one peer can make it hold)
 *
 * usage: bench-fleet SF_FLEET SOURCE_ROOT [runs] [lease]   (lease: only the
 *        lease figures)
 * Each figure is the median of `runs` (default 3) runs; JSON lines first.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "bench.h"
#include "bench_coord.h"
#include "coordinator/coordinator.h"
#include "proc.h"
#include "worker/worker.h"

static void emit(const char *name, double value, const char *unit, int n) {
    printf("{\"bench\":\"fleet.%s\",\"value\":%.3f,\"unit\":\"%s\",\"n\":%d,\"median\":%.3f}\n",
           name, value, unit, n, value);
}

/* Bare: the run's jobs played in-process by `workers` threads that take
 * whole jobs as they free up, exactly as the fleet's workers do, each job
 * with sf_job_run on workers.threads threads; no coordinator, no processes,
 * no upload. */
typedef struct bare_ctx {
    const sf_run_config *cfg;
    const char *digest, *tmp;
    uint64_t njobs;
    atomic_uint_fast64_t next, labels;
} bare_ctx;

static void *bare_worker(void *p) {
    bare_ctx *b = p;
    const sf_run_config *cfg = b->cfg;
    for (uint64_t j; (j = atomic_fetch_add(&b->next, 1)) < b->njobs;) {
        sf_job_spec spec = {j + 1, cfg->seed_start + j * cfg->job_size, cfg->job_size};
        if (j * cfg->job_size + spec.seed_count > cfg->seed_count)
            spec.seed_count = (uint32_t)(cfg->seed_count - j * cfg->job_size);
        sf_job_opts o = {.threads = (int)cfg->workers.threads,
                         .fights_per_thread = (int)cfg->workers.fights_per_thread,
                         .worker_id = "bench"};
        char path[1200];
        snprintf(path, sizeof path, "%s/bare-%llu.shard", b->tmp, (unsigned long long)j);
        sf_job_result res;
        sf_err e = {0};
        if (sf_job_run(cfg, b->digest, &spec, &o, path, &res, &e) < 0) {
            fprintf(stderr, "bench-fleet: %s\n", e.msg);
            exit(1);
        }
        atomic_fetch_add(&b->labels, res.records);
        unlink(path);
    }
    return NULL;
}

static double bare_rate(const sf_run_config *cfg, const char *tmp, int threads) {
    char digest[65];
    sf_config_digest(cfg, digest);
    bare_ctx b = {.cfg = cfg, .digest = digest, .tmp = tmp};
    b.njobs = (cfg->seed_count + cfg->job_size - 1) / cfg->job_size;
    atomic_init(&b.next, 0);
    atomic_init(&b.labels, 0);
    int workers = (int)cfg->workers.count;
    pthread_t th[64];
    uint64_t t0 = sf_now_ns();
    for (int i = 0; i < workers && i < 64; i++)
        pthread_create(&th[i], NULL, bare_worker, &b);
    for (int i = 0; i < workers && i < 64; i++)
        pthread_join(th[i], NULL);
    double secs = (double)(sf_now_ns() - t0) / 1e9;
    return (double)atomic_load(&b.labels) / secs / threads;
}

/* End to end: sf-fleet run in a fresh output dir; labels from the shards. */
static double e2e_rate(const char *fleet, const char *config, const char *tmp, int workers,
                       uint64_t *labels_out) {
    char yaml[2048], path[1200];
    snprintf(path, sizeof path, "%s/e2e.yaml", tmp);
    FILE *in = fopen(config, "r"), *out = fopen(path, "w");
    if (!in || !out) {
        fprintf(stderr, "bench-fleet: cannot copy %s\n", config);
        exit(1);
    }
    /* same run, output in the temp dir */
    while (fgets(yaml, sizeof yaml, in)) {
        if (strstr(yaml, "output_dir:"))
            fprintf(out, "  output_dir: %s/e2e-run\n", tmp);
        else
            fputs(yaml, out);
    }
    fclose(in);
    fclose(out);
    char rundir[1200];
    snprintf(rundir, sizeof rundir, "%s/e2e-run", tmp);
    bench_rm_rf(rundir);
    uint64_t t0 = sf_now_ns();
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        freopen("/dev/null", "w", stderr);
        execl(fleet, fleet, "run", path, (char *)NULL);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    double secs = (double)(sf_now_ns() - t0) / 1e9;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench-fleet: sf-fleet run failed (status %d)\n", status);
        exit(1);
    }
    sf_run_config cfg;
    sf_err e = {0};
    sf_config_load(path, &cfg, &e);
    sf_coordinator *co;
    sf_coord_opts o = {.bind = "tcp://127.0.0.1:*", .metrics_port = 0};
    if (sf_coordinator_open(&cfg, &o, &co, &e) < 0) {
        fprintf(stderr, "bench-fleet: %s\n", e.msg);
        exit(1);
    }
    sf_coord_status st;
    sf_coordinator_status(co, &st);
    sf_coordinator_close(co);
    *labels_out = st.labels;
    return (double)st.labels / secs / workers; /* per search thread */
}

/* ---- lease throughput ---------------------------------------------------- */

static double lease_rate(const char *tmp, int clients, double seconds, int curve) {
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "run: {name: leasebench, output_dir: '%s/lease'}\n"
             "seeds: {count: 2000000, job_size: 1}\n"
             "coordinator: {endpoint: 'tcp://127.0.0.1:*', lease_seconds: 600,"
             " heartbeat_ms: 60000}\n"
             "security: {mode: %s, audit_fraction: 0}\n",
             tmp, curve ? "curve" : "none");
    sf_run_config cfg;
    sf_err e = {0};
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/lease", tmp);
    bench_rm_rf(dir);
    if (sf_config_parse(yaml, strlen(yaml), "lease", &cfg, &e) < 0) {
        fprintf(stderr, "bench-fleet: %s\n", e.msg);
        exit(1);
    }
    sf_coordinator *co;
    sf_coord_opts o = {.metrics_port = 0};
    if (sf_coordinator_open(&cfg, &o, &co, &e) < 0) {
        fprintf(stderr, "bench-fleet: %s\n", e.msg);
        exit(1);
    }
    serve_arg arg = {co, 0};
    pthread_t th;
    pthread_create(&th, NULL, serve, &arg);
    void *ctx = zmq_ctx_new();
    void **socks = calloc((size_t)clients, sizeof *socks);
    zmq_pollitem_t *items = calloc((size_t)clients, sizeof *items);
    char keys[SF_CFG_PATH + 8];
    sf_config_keys_dir(&cfg, keys, sizeof keys); /* "" with mode none: plain */
    sf_zsec_client sec;
    if (sf_zsec_client_load(keys, SF_ZSEC_WORKER_NAME, &sec, &e) < 0) {
        fprintf(stderr, "bench-fleet: %s\n", e.msg);
        exit(1);
    }
    bench_lease_clients_open(ctx, sf_coordinator_endpoint(co), &sec, socks, items, clients);
    uint64_t leases = 0, t0 = 0, start = sf_now_ns();
    uint64_t *sent = calloc((size_t)clients, sizeof *sent);
    int welcomed = 0;
    while (!t0 || (double)(sf_now_ns() - t0) / 1e9 < seconds) {
        if ((double)(sf_now_ns() - start) / 1e9 > 30 + seconds)
            break;
        int before = welcomed,
            got = bench_lease_turn(socks, items, sent, clients, &welcomed, 100, NULL, NULL);
        if (t0) /* leases once every client is welcomed */
            leases += (uint64_t)got;
        if (before < clients && welcomed == clients)
            t0 = sf_now_ns();
    }
    free(sent);
    double secs = t0 ? (double)(sf_now_ns() - t0) / 1e9 : 1.0;
    arg.stop = 1;
    pthread_join(th, NULL);
    for (int i = 0; i < clients; i++)
        zmq_close(socks[i]);
    zmq_ctx_term(ctx);
    free(socks);
    free(items);
    sf_coordinator_close(co);
    bench_rm_rf(dir);
    return (double)leases / secs;
}

/* ---- a peer that never reads -------------------------------------------- */

/* One request/reply on `s`; the decoded reply or NULL after timeout_ms. */
static Spirefleet__Envelope *ask(void *s, Spirefleet__Envelope *req, int timeout_ms) {
    /* a reply that came after an earlier timeout belongs to that request */
    zmq_msg_t stale;
    zmq_msg_init(&stale);
    while (zmq_msg_recv(&stale, s, ZMQ_DONTWAIT) >= 0)
        ;
    zmq_msg_close(&stale);
    Spirefleet__Envelope *env;
    return sf_wire_ask(s, "the coordinator", req, timeout_ms, &env, NULL) == SF_OK ? env : NULL;
}

typedef struct flood_arg {
    void *ctx;
    const char *endpoint, *shard;
    const sf_zsec_client *sec; /* the run's keys: a listed peer, not a stranger */
    atomic_int stop;
} flood_arg;

static void *flood_peer(void *p) {
    flood_arg *a = p;
    void *s = zmq_socket(a->ctx, ZMQ_DEALER);
    int one = 1, zero = 0, big = 1000000;
    /* Take one reply into this process and no more: ZeroMQ then stops
     * reading the connection, as a stuck or hostile peer would. */
    zmq_setsockopt(s, ZMQ_RCVHWM, &one, sizeof one);
    zmq_setsockopt(s, ZMQ_RCVBUF, &big, sizeof big);
    zmq_setsockopt(s, ZMQ_SNDHWM, &big, sizeof big);
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    sf_zsec_client_apply(a->sec, s, NULL);
    zmq_connect(s, a->endpoint);
    Spirefleet__Envelope env = SPIREFLEET__ENVELOPE__INIT;
    Spirefleet__ShardFetch f = SPIREFLEET__SHARD_FETCH__INIT;
    f.name = (char *)a->shard;
    f.length = 1u << 20;
    env.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_FETCH;
    env.shard_fetch = &f;
    uint8_t *buf;
    size_t len;
    if (sf_wire_encode(&env, &buf, &len) != SF_OK) {
        zmq_close(s);
        return NULL;
    }
    while (!atomic_load(&a->stop)) {
        if (zmq_send(s, buf, len, ZMQ_DONTWAIT) < 0)
            usleep(100);
    }
    free(buf);
    zmq_close(s);
    return NULL;
}

typedef struct flood_result {
    double rss_before, rss_peak, status_p50, status_max;
    int answered, asked;
} flood_result;

/* `sf-fleet coordinator CONFIG` on the finished run of `config`, flooded for
 * `seconds` by one peer that never reads, while another asks for the status
 * every 50 ms (2 s timeout). */
static int flood(const char *fleet, const char *config, const char *tmp, double seconds,
                 flood_result *r) {
    char log[1200];
    snprintf(log, sizeof log, "%s/flood-coordinator.log", tmp);
    char *const args[] = {(char *)fleet, "coordinator",       (char *)config,
                          "--bind",      "tcp://127.0.0.1:*", NULL};
    char endpoint[256];
    pid_t pid = sf_proc_spawn_server(args, log, "serving on ", endpoint);
    if (pid < 0)
        return -1;
    int ok;
    void *ctx = zmq_ctx_new();
    void *st = NULL;
    char shard[256] = "", keys[1300];
    snprintf(keys, sizeof keys, "%s/e2e-run/keys", tmp); /* made by the e2e run */
    sf_zsec_client sec;
    ok = sf_zsec_client_load_any(keys, &sec, NULL) == SF_OK &&
         sf_wire_dealer_secure(ctx, endpoint, &sec, &st, NULL) == SF_OK;
    if (ok) {
        Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
        Spirefleet__ShardListRequest lr = SPIREFLEET__SHARD_LIST_REQUEST__INIT;
        req.body_case = SPIREFLEET__ENVELOPE__BODY_SHARD_LIST_REQUEST;
        req.shard_list_request = &lr;
        Spirefleet__Envelope *rep = ask(st, &req, 5000);
        uint64_t biggest = 0;
        if (rep && rep->body_case == SPIREFLEET__ENVELOPE__BODY_SHARD_LIST)
            for (size_t i = 0; i < rep->shard_list->n_shards; i++)
                if (rep->shard_list->shards[i]->size > biggest) {
                    biggest = rep->shard_list->shards[i]->size;
                    snprintf(shard, sizeof shard, "%s", rep->shard_list->shards[i]->name);
                }
        if (rep)
            sf_wire_free(rep);
        ok = shard[0] != 0;
    }
    if (!ok) {
        fprintf(stderr, "bench-fleet: the flood's coordinator did not come up (see %s)\n", log);
    } else {
        r->rss_before = r->rss_peak = sf_proc_rss_mib(pid);
        flood_arg fa = {.ctx = ctx, .endpoint = endpoint, .shard = shard, .sec = &sec};
        atomic_init(&fa.stop, 0);
        pthread_t th;
        pthread_create(&th, NULL, flood_peer, &fa);
        double lat[4096];
        int n = 0;
        Spirefleet__Envelope req = SPIREFLEET__ENVELOPE__INIT;
        Spirefleet__StatusRequest sr = SPIREFLEET__STATUS_REQUEST__INIT;
        req.body_case = SPIREFLEET__ENVELOPE__BODY_STATUS_REQUEST;
        req.status_request = &sr;
        uint64_t t0 = sf_now_ns();
        r->asked = r->answered = 0;
        while ((double)(sf_now_ns() - t0) / 1e9 < seconds) {
            uint64_t a0 = sf_now_ns();
            Spirefleet__Envelope *rep = ask(st, &req, 2000);
            r->asked++;
            if (rep && rep->body_case == SPIREFLEET__ENVELOPE__BODY_STATUS_REPLY && n < 4096) {
                lat[n++] = (double)(sf_now_ns() - a0) / 1e6;
                r->answered++;
            }
            if (rep)
                sf_wire_free(rep);
            double m = sf_proc_rss_mib(pid);
            if (m > r->rss_peak)
                r->rss_peak = m;
            usleep(50000);
        }
        atomic_store(&fa.stop, 1);
        pthread_join(th, NULL);
        qsort(lat, (size_t)n, sizeof lat[0], bench_cmp_double);
        /* nearest-rank median; with ~100 samples the tail is the maximum */
        r->status_p50 = n ? lat[(n + 1) / 2 - 1] : -1;
        r->status_max = n ? lat[n - 1] : -1;
    }
    if (st)
        zmq_close(st);
    zmq_ctx_term(ctx);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    return ok ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench-fleet SF_FLEET SOURCE_ROOT [runs]\n");
        return 2;
    }
    int runs = argc > 3 ? atoi(argv[3]) : 3;
    if (runs < 1)
        runs = 1;
    char config[1024], tmp[] = "/tmp/sf-bench-fleet-XXXXXX";
    snprintf(config, sizeof config, "%s/configs/local.yaml", argv[2]);
    if (!mkdtemp(tmp))
        return 1;
    sf_run_config cfg;
    sf_err e = {0};
    if (sf_config_load(config, &cfg, &e) < 0) {
        fprintf(stderr, "bench-fleet: %s\n", e.msg);
        return 1;
    }
    double bare[16], e2e[16], lease[16], plain[16];
    uint64_t labels = 0;
    int only_lease = argc > 4 && !strcmp(argv[4], "lease");
    for (int r = 0; r < runs && r < 16; r++) {
        int threads = (int)(cfg.workers.count * cfg.workers.threads);
        if (!only_lease) {
            bare[r] = bare_rate(&cfg, tmp, threads);
            e2e[r] = e2e_rate(argv[1], config, tmp, threads, &labels);
        }
        /* CURVE and plain alternate, so both see the same machine */
        lease[r] = lease_rate(tmp, 200, 3.0, 1);
        plain[r] = lease_rate(tmp, 200, 3.0, 0);
    }
    double l = median(lease, runs), lp = median(plain, runs);
    emit("lease_ops_per_s", l, "leases/s", runs);
    emit("lease_ops_per_s_plain", lp, "leases/s", runs);
    emit("lease_curve_over_plain", l / lp, "ratio", runs);
    if (only_lease) {
        printf("fleet: coordinator %.0f leases/s with 200 CURVE clients, %.0f plain (%.2f)\n", l,
               lp, l / lp);
        bench_rm_rf(tmp);
        return 0;
    }
    double b = median(bare, runs), x = median(e2e, runs);
    emit("bare_labels_per_s_core", b, "labels/s", runs);
    emit("e2e_labels_per_s_core", x, "labels/s", runs);
    emit("e2e_over_bare", x / b, "ratio", runs);
    printf("fleet: configs/local.yaml (%llu labels): bare %.0f labels/s/core, end to end %.0f "
           "labels/s/core (%u workers) = %.2f of bare; coordinator %.0f leases/s with 200 "
           "clients\n",
           (unsigned long long)labels, b, x, cfg.workers.count, x / b, l);
    /* The flood runs once, on the last end-to-end run's output. */
    char e2e_cfg[1200];
    snprintf(e2e_cfg, sizeof e2e_cfg, "%s/e2e.yaml", tmp);
    flood_result fr = {0};
    int rc = 0;
    if (flood(argv[1], e2e_cfg, tmp, 10.0, &fr) == 0) {
        emit("flood_coordinator_rss_before_mib", fr.rss_before, "MiB", 1);
        emit("flood_coordinator_rss_peak_mib", fr.rss_peak, "MiB", 1);
        emit("flood_status_p50_ms", fr.status_p50, "ms", fr.answered);
        emit("flood_status_max_ms", fr.status_max, "ms", fr.answered);
        printf("fleet: a peer asked for 1 MiB shard chunks for 10 s and read no reply; the "
               "coordinator's RSS went from %.1f to at most %.1f MiB and it answered %d of %d "
               "status requests meanwhile (median %.1f ms, max %.1f ms)\n",
               fr.rss_before, fr.rss_peak, fr.answered, fr.asked, fr.status_p50, fr.status_max);
    } else {
        rc = 1;
    }
    bench_rm_rf(tmp);
    return rc;
}
