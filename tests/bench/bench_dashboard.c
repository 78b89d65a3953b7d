/*
 * bench_dashboard.c — the coordinator's lease latency while dashboards
 * refresh (coordinator/dashboard.h: the endpoints run on the HTTP server's
 * thread and must never hold up the coordinator's loop).
 *
 *   dashboard.lease_p50_ms_none, dashboard.lease_p99_ms_none
 *                        JobRequest -> Job round trips of 50 DEALER clients
 *                        on loopback (security.mode none; each lease given
 *                        back at once with JobFailed, so the loop commits
 *                        to its ledger all the time) with no dashboard open
 *   dashboard.lease_p50_ms_paced, dashboard.lease_p99_ms_paced
 *                        the same while 20 dashboards refresh as the page
 *                        does: GET /api/status, /api/workers and /api/rate
 *                        every SF_DASH_REFRESH_MS (2 s) each
 *   dashboard.lease_p50_ms_flat, dashboard.lease_p99_ms_flat
 *                        the same while 20 dashboards refresh back to back,
 *                        as fast as the server answers (a stress far past
 *                        any real use: on a machine of few cores these
 *                        clients take CPU time from the loop too)
 *   dashboard.p99_paced_over_none, dashboard.p99_flat_over_none
 *                        the ratios (1 within noise: the loop is not held)
 *   dashboard.gets_per_s_flat   dashboard requests answered per second
 *                        during the flat phase (every one must be a 200)
 *
 * The phases alternate none, paced, flat, none, paced, flat, ... in
 * slices of `seconds` / 3, so a drift of the machine's load falls on every
 * phase alike.
 *
 * usage: bench-dashboard [seconds per phase (9)]
 * JSON lines first, then a line in words.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "bench.h"
#include "bench_coord.h"
#include "bench_http.h"
#include "common/metrics_http.h"
#include "coordinator/coordinator.h"
#include "coordinator/dashboard.h"

#define CLIENTS    50
#define DASHBOARDS 20
#define SLICES     3

enum { NONE, PACED, FLAT, PHASES };
static const char *const PHASE_NAME[PHASES] = {"none", "paced", "flat"};

/* The dashboards: each refreshes as the phase says until told to stop. */
typedef struct dashes {
    int port;
    atomic_int phase; /* NONE: idle, PACED, FLAT; -1: exit */
    atomic_long gets, bad;
} dashes;

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *dash_main(void *p) {
    dashes *d = p;
    static const char *const PATHS[] = {"/api/status", "/api/workers", "/api/rate"};
    char *buf = malloc(1 << 20);
    if (!buf)
        return NULL;
    while (atomic_load(&d->phase) >= 0) {
        int ph = atomic_load(&d->phase);
        if (ph == NONE) {
            nap_ms(20);
            continue;
        }
        uint64_t t0 = sf_now_ns();
        for (int k = 0; k < 3; k++) {
            size_t got;
            int ok = bench_http_get(d->port, PATHS[k], buf, 1 << 20, &got);
            if (atomic_load(&d->phase) == FLAT)
                atomic_fetch_add(ok ? &d->gets : &d->bad, 1);
            else if (!ok)
                atomic_fetch_add(&d->bad, 1);
        }
        /* paced: the page's refresh period, in short naps so a phase
         * change is seen */
        while (atomic_load(&d->phase) == PACED &&
               sf_now_ns() - t0 < (uint64_t)SF_DASH_REFRESH_MS * 1000000u)
            nap_ms(20);
    }
    free(buf);
    return NULL;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 9;
    char tmp[] = "/tmp/bench-dashboard-XXXXXX";
    if (!mkdtemp(tmp))
        return 1;
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "run: {name: dashbench, output_dir: '%s/run'}\n"
             "seeds: {count: 2000000, job_size: 1}\n"
             "coordinator: {endpoint: 'tcp://127.0.0.1:*', lease_seconds: 600,"
             " heartbeat_ms: 60000}\n"
             "security: {mode: none, audit_fraction: 0}\n",
             tmp);
    sf_run_config cfg;
    sf_err e = {0};
    sf_coordinator *co;
    sf_coord_opts o = {.metrics_port = SF_METRICS_ANY_PORT};
    if (sf_config_parse(yaml, strlen(yaml), "dashboard", &cfg, &e) < 0 ||
        sf_coordinator_open(&cfg, &o, &co, &e) < 0) {
        fprintf(stderr, "bench-dashboard: %s\n", e.msg);
        bench_rm_rf(tmp);
        return 1;
    }
    serve_arg arg = {co, 0};
    pthread_t th, dth[DASHBOARDS];
    pthread_create(&th, NULL, serve, &arg);
    dashes d = {.port = sf_coordinator_metrics_port(co)};
    atomic_store(&d.phase, NONE);
    for (int i = 0; i < DASHBOARDS; i++)
        pthread_create(&dth[i], NULL, dash_main, &d);
    void *ctx = zmq_ctx_new();
    void *socks[CLIENTS];
    zmq_pollitem_t items[CLIENTS];
    uint64_t sent[CLIENTS];
    bench_lease_clients_open(ctx, sf_coordinator_endpoint(co), NULL, socks, items, CLIENTS);
    bench_lat l[PHASES] = {{0}};
    double flat_s = 0;
    int welcomed = 0, slice = -1; /* slice k: phase k % PHASES */
    double slice_s = seconds / SLICES;
    uint64_t slice_t0 = 0, start = sf_now_ns();
    while (slice < SLICES * PHASES) {
        uint64_t now = sf_now_ns();
        if ((double)(now - start) / 1e9 > 60 + 2 * PHASES * seconds)
            break;
        if (slice >= 0 && (double)(now - slice_t0) / 1e9 >= slice_s) {
            if (slice % PHASES == FLAT)
                flat_s += (double)(now - slice_t0) / 1e9;
            slice++;
            slice_t0 = now;
            atomic_store(&d.phase, slice % PHASES);
        }
        bench_lat *into = slice >= 0 && slice < SLICES * PHASES ? &l[slice % PHASES] : NULL;
        int before = welcomed;
        bench_lease_turn(socks, items, sent, CLIENTS, &welcomed, 20,
                         into ? bench_lat_on_lease : NULL, into);
        if (before < CLIENTS && welcomed == CLIENTS) {
            slice = 0;
            slice_t0 = sf_now_ns();
        }
    }
    atomic_store(&d.phase, -1);
    for (int i = 0; i < DASHBOARDS; i++)
        pthread_join(dth[i], NULL);
    arg.stop = 1;
    pthread_join(th, NULL);
    for (int i = 0; i < CLIENTS; i++)
        zmq_close(socks[i]);
    zmq_ctx_term(ctx);
    sf_coordinator_close(co);
    bench_rm_rf(tmp);
    double p50[PHASES], p99[PHASES];
    for (int k = 0; k < PHASES; k++) {
        p50[k] = bench_lat_pct(&l[k], 0.5);
        p99[k] = bench_lat_pct(&l[k], 0.99);
        printf("{\"bench\":\"dashboard.lease_p50_ms_%s\",\"value\":%.3f,\"unit\":\"ms\","
               "\"n\":%d}\n",
               PHASE_NAME[k], p50[k], l[k].n);
        printf("{\"bench\":\"dashboard.lease_p99_ms_%s\",\"value\":%.3f,\"unit\":\"ms\","
               "\"n\":%d}\n",
               PHASE_NAME[k], p99[k], l[k].n);
    }
    double gps = flat_s > 0 ? (double)atomic_load(&d.gets) / flat_s : 0;
    long bad = atomic_load(&d.bad);
    printf("{\"bench\":\"dashboard.p99_paced_over_none\",\"value\":%.3f,\"unit\":\"ratio\","
           "\"n\":1}\n",
           p99[NONE] > 0 ? p99[PACED] / p99[NONE] : 0);
    printf("{\"bench\":\"dashboard.p99_flat_over_none\",\"value\":%.3f,\"unit\":\"ratio\","
           "\"n\":1}\n",
           p99[NONE] > 0 ? p99[FLAT] / p99[NONE] : 0);
    printf("{\"bench\":\"dashboard.gets_per_s_flat\",\"value\":%.1f,\"unit\":\"requests/s\","
           "\"n\":%ld,\"failed\":%ld}\n",
           gps, atomic_load(&d.gets), bad);
    printf("dashboard: lease p50/p99 %.2f/%.2f ms with no dashboard, %.2f/%.2f ms with %d "
           "refreshing every %d ms, %.2f/%.2f ms with %d refreshing back to back (%.0f "
           "requests/s, %ld failed); %d clients, %d welcomed\n",
           p50[NONE], p99[NONE], p50[PACED], p99[PACED], DASHBOARDS, SF_DASH_REFRESH_MS, p50[FLAT],
           p99[FLAT], DASHBOARDS, gps, bad, CLIENTS, welcomed);
    return welcomed == CLIENTS && bad == 0 && l[NONE].n > 0 && l[PACED].n > 0 && l[FLAT].n > 0 ? 0
                                                                                               : 1;
}
