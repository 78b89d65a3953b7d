/*
 * bench_evald.c — gpu-evald's cpu-side figures (docs/benchmarks.md):
 *   1. cpu backend evals/s versus batch size, tiny and base;
 *   2. matrix-multiply GFLOP/s of the forward pass against plain OpenBLAS
 *      sgemm on the same per-position shapes and on one batched product;
 *   3. remote (ZeroMQ loopback, gpu-evald in a thread) versus in-process
 *      evaluator throughput for a multiplexed search's request pattern;
 *   4. with the gpu-evald binary given as the first argument: a peer that
 *      sends requests as fast as it can and never reads a reply, against a
 *      gpu-evald process (cpu backend, tiny): the server's resident memory
 *      before and at its peak, and another client's round-trip time for one
 *      position meanwhile.
 *   5. CURVE versus plain: evals/s of 64-position requests (8 in flight)
 *      to a gpu-evald (in a thread) with --keys against one without, in the
 *      same run (target >= 0.8).
 * usage: bench-evald [GPU_EVALD [flood]]   ("flood": that figure alone)
 *        bench-evald curve ARCH              (figure 5 alone, ARCH tiny|base)
 * Positions have 48 tokens and 8 action queries (about an Act-1 fight's
 * token count). Each figure is the median of 5 runs; one JSON line per
 * figure, then a human line.
 */
#include <cblas.h>
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
#include "common/zsec.h"
#include "gpu-evald/evald.h"
#include "gpu-evald/neteval.h"
#include "gpu-evald/wire.h"
#include "proc.h"

#define RUNS   5
#define TOKENS 48
#define QUERY  8

static void die(const char *what, const sf_err *e) {
    fprintf(stderr, "bench_evald: %s: %s\n", what, e ? e->msg : "");
    exit(1);
}

static void report(const char *name, double v, const char *unit, const char *human) {
    printf("{\"bench\":\"evald.%s\",\"value\":%.4g,\"unit\":\"%s\",\"n\":%d,\"median\":%.4g}\n",
           name, v, unit, RUNS, v);
    printf("evald.%s: %.4g %s — %s\n", name, v, unit, human);
    fflush(stdout);
}

/* Valid positions of exactly TOKENS tokens and QUERY queries. */
static sf_positions *fixed_positions(uint64_t seed, int count) {
    sf_positions *syn, *ps;
    sf_err e = {0};
    if (sf_positions_synthetic(seed, count * 8, &syn, &e) || sf_positions_create(count, &ps, &e))
        die("positions", &e);
    static sf_feat f;
    for (int i = 0, k = 0; i < count; k++) {
        sf_pos s = sf_positions_get(syn, k);
        if (s.n_tokens < TOKENS || s.n_queries < 1)
            continue;
        memset(&f, 0, sizeof f);
        f.n_tokens = TOKENS;
        f.n_queries = QUERY;
        memcpy(f.type, s.type, TOKENS);
        memcpy(f.cat, s.cat, sizeof f.cat[0] * TOKENS);
        memcpy(f.cont, s.cont, sizeof f.cont[0] * TOKENS);
        for (int q = 0; q < QUERY; q++) {
            f.query[q][0] = (uint16_t)((q * 5 + i) % TOKENS);
            f.query[q][1] = (uint16_t)((q * 3 + 1) % TOKENS);
            f.qcont[q][0] = 0.25f * (float)q;
        }
        sf_pos p = sf_pos_from_feat(&f);
        if (sf_positions_add(ps, &p, &e))
            die("positions", &e);
        i++;
    }
    sf_positions_free(syn);
    return ps;
}

/* evals/s of sf_net_eval on batches of n, median of `runs` runs. */
static double evals_per_s(sf_net *net, const sf_positions *ps, int n, double min_s, int runs) {
    sf_pos *pos = calloc((size_t)n, sizeof *pos);
    sf_net_out *out = calloc((size_t)n, sizeof *out);
    for (int i = 0; i < n; i++)
        pos[i] = sf_positions_get(ps, i % sf_positions_count(ps));
    sf_err e = {0};
    if (sf_net_eval(net, pos, n, out, &e))
        die("eval", &e);
    double r[RUNS];
    for (int k = 0; k < runs; k++) {
        uint64_t t0 = sf_now_ns();
        long done = 0;
        do {
            sf_net_eval(net, pos, n, out, NULL);
            done += n;
        } while ((double)(sf_now_ns() - t0) < min_s * 1e9);
        r[k] = (double)done / ((double)(sf_now_ns() - t0) / 1e9);
    }
    free(pos);
    free(out);
    return median(r, runs);
}

typedef struct {
    int m, n, k;
    int lda, ldb, transb;
    int count;
} gemm_shape;

/* GFLOP/s of plain cblas_sgemm over a list of shapes, median of RUNS. Each
 * of a shape's `count` calls gets its own B operand (as each layer has its
 * own weights), so the weights stream through the caches as they do in the
 * forward pass rather than staying resident. */
static double sgemm_gflops(const gemm_shape *sh, int ns, double min_s, int runs) {
    size_t abig = 0, cbig = 0;
    float **bs[16];
    for (int i = 0; i < ns; i++) {
        size_t a = (size_t)sh[i].m * (size_t)sh[i].lda, c = (size_t)sh[i].m * (size_t)sh[i].n;
        abig = a > abig ? a : abig;
        cbig = c > cbig ? c : cbig;
        size_t bsz = (size_t)(sh[i].transb ? sh[i].n : sh[i].k) * (size_t)sh[i].ldb;
        bs[i] = calloc((size_t)sh[i].count, sizeof(float *));
        for (int c2 = 0; c2 < sh[i].count; c2++) {
            bs[i][c2] = malloc(bsz * 4);
            for (size_t j = 0; j < bsz; j++)
                bs[i][c2][j] = (float)((j + (size_t)c2) % 17) / 17.0f;
        }
    }
    float *A = calloc(abig, 4), *C = calloc(cbig, 4);
    for (size_t i = 0; i < abig; i++)
        A[i] = (float)(i % 13) / 13.0f;
    double flops = 0;
    for (int i = 0; i < ns; i++)
        flops += 2.0 * sh[i].m * sh[i].n * sh[i].k * sh[i].count;
    double r[RUNS];
    for (int k = 0; k < runs; k++) {
        uint64_t t0 = sf_now_ns();
        long reps = 0;
        do {
            for (int i = 0; i < ns; i++)
                for (int c = 0; c < sh[i].count; c++)
                    cblas_sgemm(CblasRowMajor, CblasNoTrans,
                                sh[i].transb ? CblasTrans : CblasNoTrans, sh[i].m, sh[i].n, sh[i].k,
                                1.0f, A, sh[i].lda, bs[i][c], sh[i].ldb, 1.0f, C, sh[i].n);
            reps++;
        } while ((double)(sf_now_ns() - t0) < min_s * 1e9);
        r[k] = flops * (double)reps / ((double)(sf_now_ns() - t0) / 1e9) / 1e9;
    }
    for (int i = 0; i < ns; i++) {
        for (int c2 = 0; c2 < sh[i].count; c2++)
            free(bs[i][c2]);
        free(bs[i]);
    }
    free(A);
    free(C);
    return median(r, runs);
}

/* The products the cpu backend issues for one position (cpu.c), with
 * M = rows: T tokens, or the batched M = T * positions for the layers. */
static int forward_shapes(const sf_arch *a, int rows, int per_position, gemm_shape *out) {
    int d = a->d_model, dh = d / a->n_heads, L = a->n_layers, n = 0, T = TOKENS;
    out[n++] = (gemm_shape){rows, d, SF_FEAT_NCONT, SF_FEAT_NCONT, SF_FEAT_NCONT, 1, 1};
    out[n++] = (gemm_shape){rows, 3 * d, d, d, d, 1, L};
    out[n++] = (gemm_shape){rows, d, d, d, d, 1, L};
    out[n++] = (gemm_shape){rows, a->d_ff, d, d, d, 1, L};
    out[n++] = (gemm_shape){rows, d, a->d_ff, a->d_ff, a->d_ff, 1, L};
    if (per_position) {
        out[n++] = (gemm_shape){T, T, dh, 3 * d, 3 * d, 1, L * a->n_heads};
        out[n++] = (gemm_shape){T, dh, T, T, 3 * d, 0, L * a->n_heads};
        out[n++] = (gemm_shape){1, a->d_value, d, d, d, 1, 1};
        out[n++] = (gemm_shape){1, SF_NET_VALUE_BINS + 1, a->d_value, a->d_value, a->d_value, 1, 1};
        out[n++] = (gemm_shape){1, a->d_forecast, d, d, d, 1, 1};
        out[n++] =
            (gemm_shape){1, SF_NET_FORECASTS, a->d_forecast, a->d_forecast, a->d_forecast, 1, 1};
        out[n++] = (gemm_shape){QUERY, a->d_policy, 2 * d + 8, 2 * d + 8, 2 * d + 8, 1, 1};
        out[n++] = (gemm_shape){QUERY, 1, a->d_policy, a->d_policy, a->d_policy, 1, 1};
    }
    return n;
}

static void bench_cpu(const char *dir, const char *arch_name, const int *batches, int nb,
                      double min_s) {
    sf_arch a;
    sf_arch_preset(arch_name, &a);
    char path[512], name[128], human[256];
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, arch_name);
    sf_err e = {0};
    sf_bundle *b;
    sf_net *net;
    if (sf_bundle_write_random(path, &a, 1, 0, &e) || sf_bundle_load(path, NULL, &b, &e) ||
        sf_net_create(b, NULL, &net, &e))
        die(arch_name, &e);
    sf_positions *ps = fixed_positions(11, 256);
    double flops = sf_arch_flops(&a, TOKENS, QUERY), last = 0;
    for (int i = 0; i < nb; i++) {
        last = evals_per_s(net, ps, batches[i], min_s, RUNS);
        snprintf(name, sizeof name, "cpu_%s_evals_per_s_b%d", arch_name, batches[i]);
        snprintf(human, sizeof human, "cpu backend, %s, batch %d, %d tokens/%d queries, 1 thread",
                 arch_name, batches[i], TOKENS, QUERY);
        report(name, last, "evals/s", human);
    }
    sf_net *net2;
    sf_net_opts o2 = {.threads = 2};
    if (sf_net_create(b, &o2, &net2, &e))
        die("threads", &e);
    int bmax = batches[nb - 1];
    double t2 = evals_per_s(net2, ps, bmax, min_s, RUNS);
    snprintf(name, sizeof name, "cpu_%s_evals_per_s_b%d_t2", arch_name, bmax);
    snprintf(human, sizeof human, "cpu backend, %s, batch %d, 2 threads over positions", arch_name,
             bmax);
    report(name, t2, "evals/s", human);
    sf_net_free(net2);

    /* Forward and sgemm runs interleaved, so that a busy machine slows all
     * three alike and the ratios stay meaningful. */
    gemm_shape same_sh[16], batch_sh[16];
    int ns_same = forward_shapes(&a, TOKENS, 1, same_sh);
    int ns_batch = forward_shapes(&a, TOKENS * 64, 0, batch_sh);
    double fwd[RUNS], same[RUNS], batched[RUNS], r_same[RUNS], r_batch[RUNS];
    for (int k = 0; k < RUNS; k++) {
        fwd[k] = evals_per_s(net, ps, bmax, min_s, 1) * flops / 1e9;
        same[k] = sgemm_gflops(same_sh, ns_same, min_s, 1);
        batched[k] = sgemm_gflops(batch_sh, ns_batch, min_s, 1);
        r_same[k] = fwd[k] / same[k];
        r_batch[k] = fwd[k] / batched[k];
    }
    snprintf(name, sizeof name, "cpu_%s_forward_gflops", arch_name);
    snprintf(human, sizeof human, "forward pass at batch %d: %.3g matmul FLOP per position", bmax,
             flops);
    report(name, median(fwd, RUNS), "GFLOP/s", human);
    snprintf(name, sizeof name, "cpu_%s_sgemm_same_shapes_gflops", arch_name);
    report(name, median(same, RUNS), "GFLOP/s",
           "plain OpenBLAS sgemm, the per-position shapes the forward uses");
    snprintf(name, sizeof name, "cpu_%s_sgemm_batched_gflops", arch_name);
    report(name, median(batched, RUNS), "GFLOP/s",
           "plain OpenBLAS sgemm, the layer products batched over 64 positions (M = 3072)");
    snprintf(name, sizeof name, "cpu_%s_forward_vs_sgemm_same_shapes", arch_name);
    report(name, median(r_same, RUNS), "ratio",
           "forward GFLOP/s / sgemm on the same shapes (target >= 0.7)");
    snprintf(name, sizeof name, "cpu_%s_forward_vs_sgemm_batched", arch_name);
    report(name, median(r_batch, RUNS), "ratio", "forward GFLOP/s / one batched sgemm (stricter)");
    sf_positions_free(ps);
    sf_net_free(net);
    sf_bundle_free(b);
    remove(path);
}

/* ---- remote versus in-process ---- */
typedef struct {
    sf_evald *ev;
    int rc;
} srv_arg;

static void *serve(void *p) {
    srv_arg *s = p;
    s->rc = sf_evald_run(s->ev, NULL);
    return NULL;
}

/* A search thread's pattern: `inflight` requests of `per_req` leaf
 * positions outstanding, refilled as they complete, `total` positions. */
static double multiplexed(sf_neteval *ev, const sf_positions *ps, int per_req, int inflight,
                          int total) {
    sf_pos *pos = calloc((size_t)per_req, sizeof *pos);
    sf_net_out *out = calloc((size_t)per_req * (size_t)inflight, sizeof *out);
    int sent = 0, done = 0, slot_of[1024] = {0}, free_slots[64], nfree = 0;
    uint64_t tick[64];
    for (int i = 0; i < inflight; i++)
        free_slots[nfree++] = i;
    uint64_t t0 = sf_now_ns();
    sf_err e = {0};
    while (done < total) {
        while (sent < total && nfree > 0) {
            int slot = free_slots[--nfree];
            for (int i = 0; i < per_req; i++)
                pos[i] = sf_positions_get(ps, (sent + i) % sf_positions_count(ps));
            if (sf_neteval_submit(ev, pos, per_req, out + (size_t)slot * per_req, &tick[slot], &e))
                die("submit", &e);
            slot_of[tick[slot] % 1024] = slot;
            sent += per_req;
        }
        sf_neteval_done d[64];
        int k = sf_neteval_poll(ev, 1000, d, 64, &e);
        if (k < 0)
            die("poll", &e);
        for (int i = 0; i < k; i++) {
            if (d[i].status != SF_OK)
                die(d[i].error, NULL);
            free_slots[nfree++] = slot_of[d[i].ticket % 1024];
            done += per_req;
        }
    }
    double r = (double)done / ((double)(sf_now_ns() - t0) / 1e9);
    free(pos);
    free(out);
    return r;
}

static void bench_remote(const char *dir, const char *arch_name, int total) {
    sf_arch a;
    sf_arch_preset(arch_name, &a);
    char path[512], name[128];
    snprintf(path, sizeof path, "%s/%s-remote.safetensors", dir, arch_name);
    sf_err e = {0};
    sf_bundle *b;
    if (sf_bundle_write_random(path, &a, 2, 4, &e) || sf_bundle_load(path, NULL, &b, &e))
        die("bundle", &e);
    FILE *devnull = fopen("/dev/null", "w");
    sf_evald_opts so = {.bind = "tcp://127.0.0.1:*",
                        .max_batch = 256,
                        .max_wait_us = 500,
                        .metrics_port = SF_METRICS_OFF,
                        .log = devnull};
    sf_evald *ev;
    if (sf_evald_create(&so, &ev, &e) || sf_evald_add_model(ev, path, NULL, NULL, &e) ||
        sf_evald_bind(ev, &e))
        die("server", &e);
    srv_arg sa = {ev, 0};
    pthread_t th;
    pthread_create(&th, NULL, serve, &sa);
    sf_positions *ps = fixed_positions(12, 256);
    sf_neteval_opts ro = {.endpoint = sf_evald_endpoint(ev),
                          .model_sha256 = sf_bundle_sha256(b),
                          .max_inflight = 8,
                          .timeout_ms = 60000};
    sf_neteval *remote = NULL, *local = NULL;
    if (sf_neteval_connect(&ro, NULL, &remote, &e) || sf_neteval_open_local(b, NULL, &local, &e))
        die("evaluator", &e);
    multiplexed(remote, ps, 32, 8, 256); /* warm-up */
    multiplexed(local, ps, 32, 8, 256);
    double rr[RUNS], lr[RUNS], ratio[RUNS];
    for (int k = 0; k < RUNS; k++) { /* interleaved: both see the same load */
        rr[k] = multiplexed(remote, ps, 32, 8, total);
        lr[k] = multiplexed(local, ps, 32, 8, total);
        ratio[k] = rr[k] / lr[k];
    }
    double r = median(rr, RUNS), l = median(lr, RUNS);
    snprintf(name, sizeof name, "remote_%s_evals_per_s", arch_name);
    report(name, r, "evals/s",
           "neteval over ZeroMQ loopback to gpu-evald (cpu backend, 1 thread), 8 requests of 32 "
           "positions in flight");
    snprintf(name, sizeof name, "inprocess_%s_evals_per_s", arch_name);
    report(name, l, "evals/s", "the same pattern through the in-process evaluator");
    snprintf(name, sizeof name, "remote_vs_inprocess_%s", arch_name);
    report(name, median(ratio, RUNS), "ratio", "remote / in-process (target >= 0.8)");
    sf_neteval_close(remote);
    sf_neteval_close(local);
    sf_evald_stop(ev);
    pthread_join(th, NULL);
    sf_evald_free(ev);
    fclose(devnull);
    sf_positions_free(ps);
    sf_bundle_free(b);
    remove(path);
}

/* ---- CURVE versus plain --------------------------------------------------- */

/* A gpu-evald in a thread on tcp loopback, with keys_dir (NULL: plain). */
static sf_evald *curve_server(const char *path, const char *keys_dir, FILE *log, pthread_t *th,
                              srv_arg *sa) {
    sf_err e = {0};
    sf_evald_opts so = {.bind = "tcp://127.0.0.1:*",
                        .max_batch = 256,
                        .max_wait_us = 500,
                        .metrics_port = SF_METRICS_OFF,
                        .log = log,
                        .keys_dir = keys_dir};
    sf_evald *ev;
    if (sf_evald_create(&so, &ev, &e) || sf_evald_add_model(ev, path, NULL, NULL, &e) ||
        sf_evald_bind(ev, &e))
        die("server", &e);
    *sa = (srv_arg){ev, 0};
    pthread_create(th, NULL, serve, sa);
    return ev;
}

static void bench_curve(const char *dir, const char *arch_name, int total) {
    sf_arch a;
    sf_arch_preset(arch_name, &a);
    char path[512], keys[600], name[128];
    snprintf(path, sizeof path, "%s/%s-curve.safetensors", dir, arch_name);
    snprintf(keys, sizeof keys, "%s/keys", dir);
    sf_err e = {0};
    sf_bundle *b;
    if (sf_bundle_write_random(path, &a, 2, 4, &e) || sf_bundle_load(path, NULL, &b, &e) ||
        sf_zsec_ensure_dir(keys, &e))
        die("bundle and keys", &e);
    FILE *devnull = fopen("/dev/null", "w");
    pthread_t tc, tp;
    srv_arg sc, sp;
    sf_evald *evc = curve_server(path, keys, devnull, &tc, &sc);
    sf_evald *evp = curve_server(path, NULL, devnull, &tp, &sp);
    sf_zsec_client sec;
    if (sf_zsec_client_load(keys, SF_ZSEC_WORKER_NAME, &sec, &e))
        die("client key", &e);
    sf_positions *ps = fixed_positions(13, 256);
    sf_neteval_opts oc = {.endpoint = sf_evald_endpoint(evc),
                          .model_sha256 = sf_bundle_sha256(b),
                          .max_inflight = 8,
                          .timeout_ms = 60000,
                          .curve = &sec};
    sf_neteval_opts op = oc;
    op.endpoint = sf_evald_endpoint(evp);
    op.curve = NULL;
    sf_neteval *c = NULL, *pl = NULL;
    if (sf_neteval_connect(&oc, NULL, &c, &e) || sf_neteval_connect(&op, NULL, &pl, &e))
        die("evaluator", &e);
    multiplexed(c, ps, 64, 8, 1024); /* warm-up, and the CURVE handshake */
    multiplexed(pl, ps, 64, 8, 1024);
    double cr[RUNS], pr[RUNS], ratio[RUNS];
    for (int k = 0; k < RUNS; k++) { /* interleaved: both see the same load */
        cr[k] = multiplexed(c, ps, 64, 8, total);
        pr[k] = multiplexed(pl, ps, 64, 8, total);
        ratio[k] = cr[k] / pr[k];
    }
    snprintf(name, sizeof name, "curve_%s_64_evals_per_s", arch_name);
    report(name, median(cr, RUNS), "evals/s",
           "neteval with CURVE to gpu-evald --keys (cpu backend), 8 requests of 64 in flight");
    snprintf(name, sizeof name, "plain_%s_64_evals_per_s", arch_name);
    report(name, median(pr, RUNS), "evals/s", "the same without CURVE");
    snprintf(name, sizeof name, "curve_vs_plain_%s_64", arch_name);
    report(name, median(ratio, RUNS), "ratio", "CURVE / plain (target >= 0.8)");
    sf_neteval_close(c);
    sf_neteval_close(pl);
    sf_evald_stop(evc);
    sf_evald_stop(evp);
    pthread_join(tc, NULL);
    pthread_join(tp, NULL);
    sf_evald_free(evc);
    sf_evald_free(evp);
    fclose(devnull);
    sf_positions_free(ps);
    sf_bundle_free(b);
    remove(path);
    bench_rm_rf(keys);
}

/* ---- a peer that never reads -------------------------------------------- */

typedef struct flood_arg {
    const char *endpoint;
    const uint8_t *req;
    size_t len;
    atomic_int stop;
} flood_arg;

static void *flood_peer(void *p) {
    flood_arg *a = p;
    void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_DEALER);
    int one = 1, zero = 0, big = 1000000;
    /* One reply taken into this process, no more: ZeroMQ then stops reading
     * the connection, as a stuck or hostile client would. */
    zmq_setsockopt(s, ZMQ_RCVHWM, &one, sizeof one);
    zmq_setsockopt(s, ZMQ_SNDHWM, &big, sizeof big);
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_connect(s, a->endpoint);
    while (!atomic_load(&a->stop)) {
        if (zmq_send(s, a->req, a->len, ZMQ_DONTWAIT) < 0)
            usleep(100);
    }
    zmq_close(s);
    zmq_ctx_term(ctx);
    return NULL;
}

/* One figure of a single measurement (its own median), as report() prints. */
static void flood_figure(const char *name, double v, const char *unit, int n) {
    printf("{\"bench\":\"evald.%s\",\"value\":%.4g,\"unit\":\"%s\",\"n\":%d,\"median\":%.4g}\n",
           name, v, unit, n, v);
}

/* Returns 0, or -1 when the server could not be started or reached. */
static int bench_flood(const char *evald_bin, const char *dir, double seconds) {
    sf_arch a;
    sf_arch_preset("tiny", &a);
    char path[512], log[512];
    snprintf(path, sizeof path, "%s/flood.safetensors", dir);
    snprintf(log, sizeof log, "%s/flood-evald.log", dir);
    sf_err e = {0};
    sf_bundle *b;
    if (sf_bundle_write_random(path, &a, 3, 4, &e) || sf_bundle_load(path, NULL, &b, &e))
        die("bundle", &e);
    /* Everything that can fail is prepared before the server starts. The
     * flood: requests of 64 positions, a quarter of max_batch. */
    sf_positions *ps = fixed_positions(21, 64);
    sf_pos pos[64];
    for (int i = 0; i < 64; i++)
        pos[i] = sf_positions_get(ps, i);
    sf_buf scratch = {0}, msg = {0};
    if (sf_wire_request_encode(1, sf_bundle_sha256(b), pos, 64, &scratch, &msg, &e))
        die("encode", &e);
    char *const argv[] = {
        (char *)evald_bin,   "--backend",   "cpu", "--model",       path,  "--bind",
        "tcp://127.0.0.1:*", "--max-batch", "256", "--max-wait-us", "500", NULL};
    char endpoint[256];
    pid_t pid = sf_proc_spawn_server(argv, log, "model(s) on ", endpoint);
    sf_neteval *probe = NULL;
    sf_neteval_opts ro = {.endpoint = endpoint,
                          .model_sha256 = sf_bundle_sha256(b),
                          .max_inflight = 1,
                          .timeout_ms = 2000,
                          .max_retries = 0};
    sf_net_out out;
    int rc = -1;
    if (pid > 0 && sf_neteval_connect(&ro, NULL, &probe, &e) != SF_OK)
        fprintf(stderr, "bench_evald: %s\n", e.msg);
    else if (pid > 0 && sf_neteval_eval(probe, pos, 1, &out, &e) != SF_OK)
        fprintf(stderr, "bench_evald: the first probe failed: %s\n", e.msg);
    else if (pid > 0)
        rc = 0;
    if (rc == 0) {
        flood_arg fa = {.endpoint = endpoint, .req = msg.p, .len = msg.len};
        atomic_init(&fa.stop, 0);
        double before = sf_proc_rss_mib(pid), peak = before, lat[4096];
        pthread_t th;
        pthread_create(&th, NULL, flood_peer, &fa);
        int n = 0, asked = 0;
        uint64_t t0 = sf_now_ns();
        while ((double)(sf_now_ns() - t0) / 1e9 < seconds) {
            uint64_t a0 = sf_now_ns();
            asked++;
            if (sf_neteval_eval(probe, pos, 1, &out, &e) == SF_OK && n < 4096)
                lat[n++] = (double)(sf_now_ns() - a0) / 1e6;
            double m = sf_proc_rss_mib(pid);
            peak = m > peak ? m : peak;
            usleep(50000);
        }
        atomic_store(&fa.stop, 1);
        pthread_join(th, NULL);
        qsort(lat, (size_t)n, sizeof lat[0], bench_cmp_double);
        /* nearest-rank median; with a few dozen probes the tail is the maximum */
        double p50 = n ? lat[(n + 1) / 2 - 1] : -1, max = n ? lat[n - 1] : -1;
        flood_figure("flood_rss_before_mib", before, "MiB", 1);
        flood_figure("flood_rss_peak_mib", peak, "MiB", 1);
        flood_figure("flood_probe_p50_ms", p50, "ms", n);
        flood_figure("flood_probe_max_ms", max, "ms", n);
        flood_figure("flood_probes_unanswered", asked - n, "probes", asked);
        printf("evald.flood: a client sent requests of 64 positions for %.0f s and read no reply; "
               "gpu-evald's RSS went from %.1f to at most %.1f MiB and it answered %d of %d "
               "one-position probes from another client (median %.2f ms, max %.2f ms)\n",
               seconds, before, peak, n, asked, p50, max);
        fflush(stdout);
    }
    sf_neteval_close(probe);
    if (pid > 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
    sf_buf_free(&scratch);
    sf_buf_free(&msg);
    sf_positions_free(ps);
    sf_bundle_free(b);
    remove(path);
    remove(log);
    return rc;
}

int main(int argc, char **argv) {
    char dir[] = "/tmp/sf-bench-evald-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    if (argc > 2 && !strcmp(argv[1], "curve")) {
        bench_curve(dir, argv[2], !strcmp(argv[2], "base") ? 2048 : 16384);
        rmdir(dir);
        return 0;
    }
    if (argc > 2 && !strcmp(argv[2], "flood")) {
        int rc = bench_flood(argv[1], dir, 10.0);
        rmdir(dir);
        return rc == 0 ? 0 : 1;
    }
    const int tiny_b[] = {1, 16, 64, 256};
    const int base_b[] = {1, 16, 64};
    bench_cpu(dir, "tiny", tiny_b, 4, 0.3);
    bench_cpu(dir, "base", base_b, 3, 0.6);
    bench_remote(dir, "tiny", 4096);
    bench_remote(dir, "base", 512);
    bench_curve(dir, "tiny", 16384);
    bench_curve(dir, "base", 2048);
    int rc = argc > 1 ? bench_flood(argv[1], dir, 10.0) : 0;
    rmdir(dir);
    return rc == 0 ? 0 : 1;
}
