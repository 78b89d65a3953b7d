/*
 * cpu.c — the cpu backend: the network's forward pass with OpenBLAS sgemm.
 *
 * Row independence by construction
 *   A BLAS may compute a row of C = A B differently depending on how many
 *   other rows A has: OpenBLAS picks kernels, blocking and small-matrix paths
 *   from (M, N, K), and the rows at a block's edge go through other
 *   micro-kernels. So a batched product over the tokens of many positions
 *   could give a position different bits depending on its neighbours, and a
 *   shard's digest would depend on batch composition. Here every product is
 *   issued per position: its shape is (tokens of this position, layer width),
 *   its inputs are this position's activations and the weights. A position's
 *   outputs are therefore a pure function of the position (for a given
 *   OpenBLAS build and CPU), whatever batch it arrives in and whichever
 *   thread evaluates it. Measured cost against one big batched product:
 *   docs/benchmarks.md.
 *
 * Allocation
 *   Every buffer is allocated at creation, sized for SF_FEAT_MAX_TOKENS
 *   tokens and SF_FEAT_MAX_QUERIES queries, one set per thread. sf_cpu_eval()
 *   allocates nothing (OpenBLAS keeps its own buffer pool after its first
 *   call; tests/unit/test_model_net.c counts allocations).
 *
 * Threads
 *   With threads > 1 a small pool takes positions from a shared counter; the
 *   calling thread works too. Each position is computed entirely by one
 *   thread with its own workspace, so results do not depend on the split.
 *   OpenBLAS itself is set to one thread (openblas_set_num_threads(1), a
 *   process-wide setting): the parallelism is over positions, and OpenBLAS's
 *   threaded driver would both allocate a job array on every call and, on
 *   products this small, cost more in synchronisation than it gains
 *   (docs/benchmarks.md). Its result bits do not depend on its thread count
 *   (it splits M and N, never K), so the setting changes speed only.
 *
 * Precision emulation
 *   Created with emulate = SF_PREC_TF32 or SF_PREC_BF16 (only through
 *   sf_net_create_emulated, for measuring and testing canary tolerances),
 *   the backend rounds the inputs of every product the cuda backend hands
 *   to cuBLAS as it would (internal.h: sf_trunc_tf32, sf_round_bf16): the
 *   weights once, here, into a copy; the activations before each product,
 *   into the workspace's `xr`. The embedding's Linear(cont) and the
 *   attention products are custom fp32 kernels on the cuda backend and stay
 *   fp32 here too.
 */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"

/* Elementwise loops are compiled twice, for AVX2 and for baseline x86-64,
 * and the loader picks one (GCC/Clang function multiversioning). Only
 * elementwise work is vectorised: every sum keeps its sequential order
 * (no -ffast-math, no FP contraction under -std=c17), so both versions
 * give the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#define SF_VEC __attribute__((target_clones("avx2", "default")))
#else
#define SF_VEC
#endif

typedef struct sf_cpu_ws {
    float *x;   /* [T, d]      residual stream                        */
    float *h;   /* [T, d]      normalised stream                      */
    float *qkv; /* [T, 3d]                                            */
    float *att; /* [T, d]      heads' outputs, concatenated           */
    float *ff;  /* [T, d_ff]                                          */
    float *s;   /* [T, T]      one head's attention weights           */
    float *g;   /* [d]         pooled                                 */
    float *hv;  /* [max(d_value, d_forecast)]                         */
    float *u;   /* [Q, 2d + NQCONT] policy inputs                     */
    float *ph;  /* [Q, d_policy]                                      */
    float *xr;  /* a GEMM input, rounded (emulation only; else NULL)  */
    sf_precision emulate;
    float *mem;
} sf_cpu_ws;

struct sf_cpu {
    sf_arch a;
    sf_weights w;
    sf_precision emulate;
    float *wround; /* rounded copies of the GEMM weights (emulation only) */
    int threads;
    sf_cpu_ws *ws;
    /* pool */
    pthread_t *tid;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    unsigned generation;
    int busy; /* workers still on the current job */
    int quit;
    const sf_pos *job_pos;
    sf_net_out *job_out;
    int job_n;
    atomic_int next;
};

/* y[m, n] = x[m, k] w[n, k]^T + b[n]  (overwrites y) */
static void linear(const float *x, int m, int k, const float *w, const float *b, int n, float *y) {
    for (int i = 0; i < m; i++)
        memcpy(y + (size_t)i * n, b, (size_t)n * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, w, k, 1.0f, y, n);
}

SF_VEC static void vadd(float *restrict y, const float *restrict x, int n) {
    for (int j = 0; j < n; j++)
        y[j] += x[j];
}

SF_VEC static void vscale(float *y, int n, float s) {
    for (int j = 0; j < n; j++)
        y[j] *= s;
}

/* y[m, n] += x[m, k] w[n, k]^T + b[n]  (residual connection) */
static void linear_acc(const float *x, int m, int k, const float *w, const float *b, int n,
                       float *y) {
    for (int i = 0; i < m; i++)
        vadd(y + (size_t)i * n, b, n);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, w, k, 1.0f, y, n);
}

SF_VEC static void ln_apply(const float *restrict r, int d, float mean, float inv,
                            const float *restrict g, const float *restrict b, float *restrict o) {
    for (int j = 0; j < d; j++)
        o[j] = (r[j] - mean) * inv * g[j] + b[j];
}

/* Reductions in SF_LANES interleaved partial sums, combined in a fixed
 * order at the end: the order of additions is fixed by the code, not by the
 * vector width, so the result is the same on every code path, and the
 * compiler can keep the partials in one vector register. */
#define SF_LANES 8

SF_VEC static float vsum(const float *x, int n) {
    float acc[SF_LANES] = {0};
    int j = 0;
    for (; j + SF_LANES <= n; j += SF_LANES)
        for (int l = 0; l < SF_LANES; l++)
            acc[l] += x[j + l];
    for (int l = 0; j < n; j++, l++)
        acc[l] += x[j];
    float s = 0.0f;
    for (int l = 0; l < SF_LANES; l++)
        s += acc[l];
    return s;
}

/* sum_j (x[j] - c)^2 */
SF_VEC static float vsumsq(const float *x, int n, float c) {
    float acc[SF_LANES] = {0};
    int j = 0;
    for (; j + SF_LANES <= n; j += SF_LANES)
        for (int l = 0; l < SF_LANES; l++) {
            float v = x[j + l] - c;
            acc[l] += v * v;
        }
    for (int l = 0; j < n; j++, l++) {
        float v = x[j] - c;
        acc[l] += v * v;
    }
    float s = 0.0f;
    for (int l = 0; l < SF_LANES; l++)
        s += acc[l];
    return s;
}

SF_VEC static float vmax(const float *x, int n) {
    float acc[SF_LANES];
    for (int l = 0; l < SF_LANES; l++)
        acc[l] = x[0];
    int j = 0;
    for (; j + SF_LANES <= n; j += SF_LANES)
        for (int l = 0; l < SF_LANES; l++)
            acc[l] = x[j + l] > acc[l] ? x[j + l] : acc[l];
    for (; j < n; j++)
        acc[0] = x[j] > acc[0] ? x[j] : acc[0];
    float m = acc[0];
    for (int l = 1; l < SF_LANES; l++)
        m = acc[l] > m ? acc[l] : m;
    return m;
}

/* LayerNorm over the last dimension (Ba, Kiros & Hinton 2016), biased
 * variance (two passes), eps 1e-5, as torch.nn.LayerNorm. */
static void layernorm(const float *x, int m, int d, const float *g, const float *b, float *y) {
    for (int i = 0; i < m; i++) {
        const float *r = x + (size_t)i * d;
        float *o = y + (size_t)i * d;
        float mean = vsum(r, d) / (float)d;
        float var = vsumsq(r, d, mean) / (float)d;
        float inv = 1.0f / sqrtf(var + SF_LN_EPS);
        ln_apply(r, d, mean, inv, g, b, o);
    }
}

SF_VEC static void gelu_inplace(float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        x[i] = sf_gelu(x[i]);
}

SF_VEC static void vexp_shift(float *x, int n, float mx) {
    for (int i = 0; i < n; i++)
        x[i] = sf_expf(x[i] - mx);
}

static void softmax_inplace(float *x, int n) {
    vexp_shift(x, n, vmax(x, n));
    vscale(x, n, 1.0f / vsum(x, n));
}

/* The input of a matrix product as the emulated precision sees it: `x`
 * itself in fp32, else its m*k values rounded into ws->xr. */
static const float *gemm_in(const sf_cpu_ws *ws, const float *x, size_t n) {
    if (ws->emulate == SF_PREC_FP32)
        return x;
    for (size_t i = 0; i < n; i++)
        ws->xr[i] = ws->emulate == SF_PREC_BF16 ? sf_round_bf16(x[i]) : sf_trunc_tf32(x[i]);
    return ws->xr;
}

/* linear() and linear_acc() on GEMM inputs (rounded when emulating). */
#define LIN(x, m, k, ...) linear(gemm_in(ws, (x), (size_t)(m) * (size_t)(k)), (m), (k), __VA_ARGS__)
#define LINACC(x, m, k, ...) \
    linear_acc(gemm_in(ws, (x), (size_t)(m) * (size_t)(k)), (m), (k), __VA_ARGS__)

/* One position, start to finish, in workspace `ws`. */
static void forward(const sf_arch *a, const sf_weights *w, sf_cpu_ws *ws, const sf_pos *p,
                    sf_net_out *out) {
    const int T = p->n_tokens, Q = p->n_queries, d = a->d_model, H = a->n_heads;
    const int dh = d / H, d3 = 3 * d;
    const float scale = 1.0f / sqrtf((float)dh);
    float *x = ws->x, *h = ws->h;

    /* Token embedding: type + four categorical embeddings + Linear(cont). */
    linear(&p->cont[0][0], T, SF_FEAT_NCONT, w->cont_w, w->cont_b, d, x);
    for (int t = 0; t < T; t++) {
        float *r = x + (size_t)t * d;
        vadd(r, w->type_emb + (size_t)p->type[t] * d, d);
        for (int c = 0; c < SF_FEAT_NCAT; c++)
            vadd(r, w->cat_emb[c] + (size_t)p->cat[t][c] * d, d);
    }

    /* Pre-LN blocks (Xiong et al. 2020): x += Attn(LN(x)); x += MLP(LN(x)).
     * Every token is real (no padding inside one position), so the padding
     * mask of the batched reference is implicit here. */
    for (int l = 0; l < a->n_layers; l++) {
        const sf_layer_w *L = &w->layer[l];
        layernorm(x, T, d, L->ln1_w, L->ln1_b, h);
        LIN(h, T, d, L->qkv_w, L->qkv_b, d3, ws->qkv);
        for (int hh = 0; hh < H; hh++) {
            const float *q = ws->qkv + hh * dh, *k = ws->qkv + d + hh * dh;
            const float *v = ws->qkv + 2 * d + hh * dh;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, dh, scale, q, d3, k, d3,
                        0.0f, ws->s, T);
            for (int t = 0; t < T; t++)
                softmax_inplace(ws->s + (size_t)t * T, T);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, dh, T, 1.0f, ws->s, T, v, d3,
                        0.0f, ws->att + hh * dh, d);
        }
        LINACC(ws->att, T, d, L->out_w, L->out_b, d, x);
        layernorm(x, T, d, L->ln2_w, L->ln2_b, h);
        LIN(h, T, d, L->fc1_w, L->fc1_b, a->d_ff, ws->ff);
        gelu_inplace(ws->ff, (size_t)T * a->d_ff);
        LINACC(ws->ff, T, a->d_ff, L->fc2_w, L->fc2_b, d, x);
    }
    layernorm(x, T, d, w->lnf_w, w->lnf_b, h);

    /* Mean pooling over tokens. */
    for (int j = 0; j < d; j++)
        ws->g[j] = 0.0f;
    for (int t = 0; t < T; t++)
        vadd(ws->g, h + (size_t)t * d, d);
    for (int j = 0; j < d; j++)
        ws->g[j] /= (float)T;

    /* Value head: 21-bin softmax and P(win) from one hidden layer. */
    LIN(ws->g, 1, d, w->vfc_w, w->vfc_b, a->d_value, ws->hv);
    gelu_inplace(ws->hv, (size_t)a->d_value);
    LIN(ws->hv, 1, a->d_value, w->vbins_w, w->vbins_b, SF_NET_VALUE_BINS, out->value);
    softmax_inplace(out->value, SF_NET_VALUE_BINS);
    float win;
    LIN(ws->hv, 1, a->d_value, w->vwin_w, w->vwin_b, 1, &win);
    out->p_win = 1.0f / (1.0f + sf_expf(-win));

    /* Forecast head: h = 1..4 x 5 targets, raw. */
    LIN(ws->g, 1, d, w->ffc_w, w->ffc_b, a->d_forecast, ws->hv);
    gelu_inplace(ws->hv, (size_t)a->d_forecast);
    LIN(ws->hv, 1, a->d_forecast, w->fout_w, w->fout_b, SF_NET_FORECASTS, &out->forecast[0][0]);

    /* Policy head (pointer style): MLP over [card token, target token,
     * query features] per legal action query. */
    out->n_queries = Q;
    if (Q > 0) {
        const int din = SF_POLICY_IN(d);
        for (int q = 0; q < Q; q++) {
            float *u = ws->u + (size_t)q * din;
            memcpy(u, h + (size_t)p->query[q][0] * d, (size_t)d * sizeof(float));
            memcpy(u + d, h + (size_t)p->query[q][1] * d, (size_t)d * sizeof(float));
            memcpy(u + 2 * d, p->qcont[q], SF_FEAT_NQCONT * sizeof(float));
        }
        LIN(ws->u, Q, din, w->pfc1_w, w->pfc1_b, a->d_policy, ws->ph);
        gelu_inplace(ws->ph, (size_t)Q * a->d_policy);
        LIN(ws->ph, Q, a->d_policy, w->pfc2_w, w->pfc2_b, 1, out->policy);
    }
    for (int q = Q; q < SF_FEAT_MAX_QUERIES; q++)
        out->policy[q] = 0.0f;
}
#undef LIN
#undef LINACC

static int ws_init(const sf_arch *a, sf_precision emulate, sf_cpu_ws *ws) {
    const size_t T = SF_FEAT_MAX_TOKENS, Q = SF_FEAT_MAX_QUERIES, d = (size_t)a->d_model;
    size_t hv = (size_t)(a->d_value > a->d_forecast ? a->d_value : a->d_forecast);
    /* The largest GEMM input: [T, d_ff], [T, d] or [Q, 2d + NQCONT]. */
    size_t xr = T * (size_t)(a->d_ff > a->d_model ? a->d_ff : a->d_model);
    if (Q * (size_t)SF_POLICY_IN(a->d_model) > xr)
        xr = Q * (size_t)SF_POLICY_IN(a->d_model);
    if (Q * (size_t)a->d_policy > xr)
        xr = Q * (size_t)a->d_policy;
    size_t sizes[11] = {T * d,
                        T * d,
                        T * 3 * d,
                        T * d,
                        T * (size_t)a->d_ff,
                        T * T,
                        d,
                        hv,
                        Q * (size_t)SF_POLICY_IN(a->d_model),
                        Q * (size_t)a->d_policy,
                        emulate == SF_PREC_FP32 ? 0 : xr};
    size_t total = 0;
    for (int i = 0; i < 11; i++)
        total += (sizes[i] + 15) / 16 * 16; /* 64-byte aligned pieces */
    void *mem = NULL;
    if (posix_memalign(&mem, 64, total * sizeof(float)) != 0)
        return SF_ENOMEM;
    memset(mem, 0, total * sizeof(float));
    float *p = mem;
    float **dst[11] = {&ws->x, &ws->h,  &ws->qkv, &ws->att, &ws->ff, &ws->s,
                       &ws->g, &ws->hv, &ws->u,   &ws->ph,  &ws->xr};
    for (int i = 0; i < 11; i++) {
        *dst[i] = p;
        p += (sizes[i] + 15) / 16 * 16;
    }
    if (emulate == SF_PREC_FP32)
        ws->xr = NULL;
    ws->emulate = emulate;
    ws->mem = mem;
    return SF_OK;
}

/* Work on the current job until the shared counter runs out. */
static void drain(sf_cpu *c, sf_cpu_ws *ws) {
    for (;;) {
        int i = atomic_fetch_add(&c->next, 1);
        if (i >= c->job_n)
            return;
        forward(&c->a, &c->w, ws, &c->job_pos[i], &c->job_out[i]);
    }
}

typedef struct {
    sf_cpu *c;
    int k;
} worker_arg;

static void *worker(void *varg) {
    sf_cpu *c = ((worker_arg *)varg)->c;
    int k = ((worker_arg *)varg)->k;
    free(varg);
    unsigned seen = 0;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->quit && c->generation == seen)
            pthread_cond_wait(&c->cv_work, &c->mu);
        if (c->quit)
            break;
        seen = c->generation;
        pthread_mutex_unlock(&c->mu);
        drain(c, &c->ws[k]);
        pthread_mutex_lock(&c->mu);
        if (--c->busy == 0)
            pthread_cond_signal(&c->cv_done);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

void sf_cpu_free(sf_cpu *c) {
    if (!c)
        return;
    if (c->started > 0) {
        pthread_mutex_lock(&c->mu);
        c->quit = 1;
        pthread_cond_broadcast(&c->cv_work);
        pthread_mutex_unlock(&c->mu);
        for (int i = 0; i < c->started; i++)
            pthread_join(c->tid[i], NULL);
    }
    if (c->threads > 1) {
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv_work);
        pthread_cond_destroy(&c->cv_done);
    }
    for (int i = 0; c->ws && i < c->threads; i++)
        free(c->ws[i].mem);
    free(c->ws);
    free(c->tid);
    free(c->wround);
    free(c);
}

/* Count (wround NULL) or make the rounded copies of every weight the cuda
 * backend multiplies with cuBLAS, pointing c->w at them; returns the
 * number of floats. */
static size_t round_weights(sf_cpu *c, float *wround) {
    const sf_arch *a = &c->a;
    const size_t d = (size_t)a->d_model, din = (size_t)SF_POLICY_IN(a->d_model);
    size_t off = 0;
#define RW(field, n)                                                                \
    do {                                                                            \
        if (wround) {                                                               \
            float *dst_ = wround + off;                                             \
            for (size_t i_ = 0; i_ < (size_t)(n); i_++)                             \
                dst_[i_] = c->emulate == SF_PREC_BF16 ? sf_round_bf16((field)[i_])  \
                                                      : sf_trunc_tf32((field)[i_]); \
            (field) = dst_;                                                         \
        }                                                                           \
        off += (size_t)(n);                                                         \
    } while (0)
    for (int l = 0; l < a->n_layers; l++) {
        sf_layer_w *L = &c->w.layer[l];
        RW(L->qkv_w, 3 * d * d);
        RW(L->out_w, d * d);
        RW(L->fc1_w, (size_t)a->d_ff * d);
        RW(L->fc2_w, d * (size_t)a->d_ff);
    }
    sf_weights *w = &c->w;
    RW(w->vfc_w, (size_t)a->d_value * d);
    RW(w->vbins_w, (size_t)SF_NET_VALUE_BINS * (size_t)a->d_value);
    RW(w->vwin_w, (size_t)a->d_value);
    RW(w->ffc_w, (size_t)a->d_forecast * d);
    RW(w->fout_w, (size_t)SF_NET_FORECASTS * (size_t)a->d_forecast);
    RW(w->pfc1_w, (size_t)a->d_policy * din);
    RW(w->pfc2_w, (size_t)a->d_policy);
#undef RW
    return off;
}

int sf_cpu_create(const sf_arch *a, const sf_weights *w, int threads, sf_precision emulate,
                  sf_cpu **out, sf_err *err) {
    *out = NULL;
    sf_cpu *c = calloc(1, sizeof *c);
    if (!c)
        return sf_err_set(err, SF_ENOMEM, "cpu backend: out of memory");
    c->a = *a;
    c->w = *w;
    c->emulate = emulate;
    c->threads = threads > 1 ? threads : 1;
    if (emulate != SF_PREC_FP32) {
        c->wround = malloc(round_weights(c, NULL) * sizeof(float));
        if (!c->wround) {
            free(c);
            return sf_err_set(err, SF_ENOMEM, "cpu backend: out of memory for rounded weights");
        }
        round_weights(c, c->wround);
    }
    openblas_set_num_threads(1);
    c->ws = calloc((size_t)c->threads, sizeof *c->ws);
    if (!c->ws) {
        free(c);
        return sf_err_set(err, SF_ENOMEM, "cpu backend: out of memory");
    }
    for (int i = 0; i < c->threads; i++)
        if (ws_init(a, emulate, &c->ws[i]) != SF_OK) {
            sf_cpu_free(c);
            return sf_err_set(err, SF_ENOMEM, "cpu backend: out of memory for workspaces");
        }
    if (c->threads > 1) {
        pthread_mutex_init(&c->mu, NULL);
        pthread_cond_init(&c->cv_work, NULL);
        pthread_cond_init(&c->cv_done, NULL);
        c->tid = calloc((size_t)c->threads, sizeof *c->tid);
        if (!c->tid) {
            sf_cpu_free(c);
            return sf_err_set(err, SF_ENOMEM, "cpu backend: out of memory");
        }
        for (int k = 1; k < c->threads; k++) {
            worker_arg *arg = malloc(sizeof *arg);
            int why = arg ? (arg->c = c, arg->k = k,
                             pthread_create(&c->tid[c->started], NULL, worker, arg))
                          : ENOMEM;
            if (why) {
                free(arg);
                sf_cpu_free(c);
                return sf_err_set(err, SF_EIO, "cpu backend: cannot start thread %d: %s", k,
                                  strerror(why));
            }
            c->started++;
        }
    }
    *out = c;
    return SF_OK;
}

void sf_cpu_eval(sf_cpu *c, const sf_pos *pos, int n, sf_net_out *out) {
    c->job_pos = pos;
    c->job_out = out;
    c->job_n = n;
    atomic_store(&c->next, 0);
    if (c->threads == 1 || n == 1) {
        drain(c, &c->ws[0]);
        return;
    }
    pthread_mutex_lock(&c->mu);
    c->busy = c->started;
    c->generation++;
    pthread_cond_broadcast(&c->cv_work);
    pthread_mutex_unlock(&c->mu);
    drain(c, &c->ws[0]);
    pthread_mutex_lock(&c->mu);
    while (c->busy > 0)
        pthread_cond_wait(&c->cv_done, &c->mu);
    pthread_mutex_unlock(&c->mu);
}
