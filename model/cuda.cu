/*
 * cuda.cu — the cuda backend's device side: weights uploaded once, every
 * matrix product through cuBLAS (cublasGemmEx: FP32 with TF32 off, TF32
 * tensor cores, or BF16 inputs with FP32 accumulation), and small kernels
 * for the rest (embedding, LayerNorm, attention, GELU, pooling, heads).
 *
 * Layout: a batch is ragged. The tokens of all positions are stacked into
 * one [S, d] matrix (S = total tokens), so every linear layer is one GEMM
 * over the whole batch; attention runs per (position, head) block over that
 * position's own tokens only, which is exactly the padding mask of the
 * reference. Results are within the parity tolerances of the cpu backend,
 * not bit-identical to it, and may depend on batch composition (cuBLAS
 * picks algorithms by shape).
 *
 * cuDNN: linked by the build, not used by this forward pass. Its fused
 * attention (the graph API's SDPA) takes FP16/BF16 only and a padded
 * [B, H, T, d_head] layout, which the FP32 parity mode and this ragged
 * layout do not fit; a BF16 cuDNN attention path is future work and must
 * first be validated on a GPU (docs/model.md, "cuda backend").
 *
 * Every CUDA and cuBLAS status is checked; a failure returns SF_CU_E* with
 * the call and the library's error text. No GPU is an SF_CU_ENOGPU at
 * creation, never a crash.
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/cuda_abi.h"

typedef __nv_bfloat16 bf16;

namespace {

struct DevLayer {
    float *ln1_w, *ln1_b, *qkv_w, *qkv_b, *out_w, *out_b;
    float *ln2_w, *ln2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
    bf16 *qkv_h, *out_h, *fc1_h, *fc2_h;
};

const int kThreads = 128;
const int kWarps = kThreads / 32;
/* Device allocations of one net: 12 per layer and 44 others in fp32/tf32,
 * 16 per layer and 51 others with the BF16 weight copies. */
const int kMaxAllocs = 16 * SF_CU_MAX_LAYERS + 64;

int fail(char *msg, size_t cap, int code, const char *fmt, ...) {
    if (msg && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, cap, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* Return a device failure naming the call (`text`) and its status unless
 * the call returns `ok`; `name` gives the status's name. */
#define CHECKED(type, ok, name, call, text)                                 \
    do {                                                                    \
        type s_ = (call);                                                   \
        if (s_ != (ok))                                                     \
            return fail(msg, cap, SF_CU_EDEVICE, "%s: %s", text, name(s_)); \
    } while (0)
#define CU(call) CHECKED(cudaError_t, cudaSuccess, cudaGetErrorString, call, #call)
#define CB(call) CHECKED(cublasStatus_t, CUBLAS_STATUS_SUCCESS, cublasGetStatusString, call, #call)

/* ---- kernels ---- */

__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    return __shfl_sync(0xffffffffu, v, 0);
}

__device__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
    return __shfl_sync(0xffffffffu, v, 0);
}

/* Sum over the block (blockDim.x == kThreads); every thread gets it. */
__device__ float block_sum(float v, float *red) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads(); /* red may still be read from a previous call */
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    float s = 0.0f;
    for (int w = 0; w < kWarps; w++)
        s += red[w];
    return s;
}

__device__ float gelu(float x) {
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

/* x[s] = type_emb[type] + sum_c cat_emb_c[cat[c]] + cont_w cont + cont_b */
__global__ void k_embed(const uint8_t *type, const uint16_t *cat, const float *cont,
                        const float *type_emb, const float *c0, const float *c1, const float *c2,
                        const float *c3, const float *cw, const float *cb, float *x, int d) {
    __shared__ float cs[SF_CU_NCONT];
    long s = blockIdx.x;
    if (threadIdx.x < SF_CU_NCONT)
        cs[threadIdx.x] = cont[s * SF_CU_NCONT + threadIdx.x];
    __syncthreads();
    const float *e0 = type_emb + (long)type[s] * d;
    const float *e1 = c0 + (long)cat[s * 4 + 0] * d, *e2 = c1 + (long)cat[s * 4 + 1] * d;
    const float *e3 = c2 + (long)cat[s * 4 + 2] * d, *e4 = c3 + (long)cat[s * 4 + 3] * d;
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        float v = cb[j];
        for (int k = 0; k < SF_CU_NCONT; k++)
            v += cw[j * SF_CU_NCONT + k] * cs[k];
        x[s * d + j] = v + e0[j] + e1[j] + e2[j] + e3[j] + e4[j];
    }
}

__global__ void k_layernorm(const float *x, const float *g, const float *b, float *y, int d) {
    __shared__ float red[kWarps];
    long r = blockIdx.x;
    const float *xr = x + r * d;
    float s = 0.0f;
    for (int j = threadIdx.x; j < d; j += blockDim.x)
        s += xr[j];
    float mean = block_sum(s, red) / (float)d;
    float v = 0.0f;
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        float c = xr[j] - mean;
        v += c * c;
    }
    float inv = 1.0f / sqrtf(block_sum(v, red) / (float)d + 1e-5f);
    for (int j = threadIdx.x; j < d; j += blockDim.x)
        y[r * d + j] = (xr[j] - mean) * inv * g[j] + b[j];
}

__global__ void k_bias_act(float *y, const float *b, long rows, int cols, int act) {
    long n = rows * cols;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x) {
        float v = y[i] + b[i % cols];
        y[i] = act ? gelu(v) : v;
    }
}

__global__ void k_to_bf16(const float *x, bf16 *y, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x)
        y[i] = __float2bfloat16(x[i]);
}

/* One block per (position, head): softmax(q k^T * scale) v over the
 * position's own tokens. A warp takes one query row at a time: lanes split
 * the keys for the scores, then the head dimensions for the output. */
__global__ void k_attention(const float *qkv, float *att, const int32_t *tok_off, int d, int H,
                            float scale) {
    extern __shared__ float sm[];
    int b = blockIdx.x, h = blockIdx.y;
    int t0 = tok_off[b], T = tok_off[b + 1] - t0;
    int dh = d / H, ks = dh + 1; /* padded K rows: no bank conflicts */
    float *K = sm, *V = sm + SF_CU_MAX_TOKENS * ks, *S = V + SF_CU_MAX_TOKENS * dh;
    long d3 = 3L * d;
    for (int i = threadIdx.x; i < T * dh; i += blockDim.x) {
        int j = i / dh, k = i % dh;
        const float *row = qkv + (t0 + j) * d3 + h * dh + k;
        K[j * ks + k] = row[d];
        V[j * dh + k] = row[2 * d];
    }
    __syncthreads();
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float *s = S + warp * SF_CU_MAX_TOKENS;
    for (int i = warp; i < T; i += kWarps) {
        const float *q = qkv + (t0 + i) * d3 + h * dh;
        float mx = -INFINITY;
        for (int j = lane; j < T; j += 32) {
            float a = 0.0f;
            for (int k = 0; k < dh; k++)
                a += q[k] * K[j * ks + k];
            a *= scale;
            s[j] = a;
            mx = fmaxf(mx, a);
        }
        mx = warp_max(mx);
        float sum = 0.0f;
        for (int j = lane; j < T; j += 32) {
            float e = expf(s[j] - mx);
            s[j] = e;
            sum += e;
        }
        sum = warp_sum(sum);
        __syncwarp();
        float inv = 1.0f / sum;
        for (int k = lane; k < dh; k += 32) {
            float a = 0.0f;
            for (int j = 0; j < T; j++)
                a += s[j] * V[j * dh + k];
            att[(long)(t0 + i) * d + h * dh + k] = a * inv;
        }
        __syncwarp();
    }
}

__global__ void k_pool(const float *h, const int32_t *tok_off, float *g, int d) {
    int b = blockIdx.x;
    int t0 = tok_off[b], t1 = tok_off[b + 1];
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        float s = 0.0f;
        for (int t = t0; t < t1; t++)
            s += h[(long)t * d + j];
        g[(long)b * d + j] = s / (float)(t1 - t0);
    }
}

/* value logits -> probabilities; win logit -> P(win). */
__global__ void k_value(float *v, float *win, int n) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= n)
        return;
    float *r = v + (long)b * SF_CU_VALUE_BINS;
    float mx = r[0];
    for (int k = 1; k < SF_CU_VALUE_BINS; k++)
        mx = fmaxf(mx, r[k]);
    float sum = 0.0f;
    for (int k = 0; k < SF_CU_VALUE_BINS; k++) {
        r[k] = expf(r[k] - mx);
        sum += r[k];
    }
    for (int k = 0; k < SF_CU_VALUE_BINS; k++)
        r[k] /= sum;
    win[b] = 1.0f / (1.0f + expf(-win[b]));
}

/* u[q] = [h[card], h[target], qcont[q]] */
__global__ void k_policy_in(const float *h, const int32_t *query, const float *qcont, float *u,
                            int d) {
    long q = blockIdx.x;
    int din = 2 * d + SF_CU_NQCONT;
    const float *c = h + (long)query[2 * q] * d, *t = h + (long)query[2 * q + 1] * d;
    float *o = u + q * din;
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        o[j] = c[j];
        o[d + j] = t[j];
    }
    if (threadIdx.x < SF_CU_NQCONT)
        o[2 * d + threadIdx.x] = qcont[q * SF_CU_NQCONT + threadIdx.x];
}

int grid_for(long n) {
    long g = (n + kThreads - 1) / kThreads;
    return (int)(g > 65535 ? 65535 : (g < 1 ? 1 : g));
}

} // namespace

struct sf_cu {
    sf_cu_arch a;
    int prec;
    int max_batch;
    int device; /* cudaSetDevice is per thread: run() and free() set it again */
    cudaStream_t stream;
    cublasHandle_t blas;
    bool have_stream, have_blas;
    size_t attn_smem;
    /* weights */
    float *type_emb, *cat_emb[SF_CU_NCAT], *cont_w, *cont_b;
    DevLayer L[SF_CU_MAX_LAYERS];
    float *lnf_w, *lnf_b, *vfc_w, *vfc_b, *vbins_w, *vbins_b, *vwin_w, *vwin_b;
    float *ffc_w, *ffc_b, *fout_w, *fout_b, *pfc1_w, *pfc1_b, *pfc2_w, *pfc2_b;
    bf16 *vfc_h, *vbins_h, *vwin_h, *ffc_h, *fout_h, *pfc1_h, *pfc2_h;
    /* device inputs */
    int32_t *tok_off, *q_off, *query;
    uint8_t *type;
    uint16_t *cat;
    float *cont, *qcont;
    /* activations */
    float *x, *h, *qkv, *att, *ff, *g, *hv, *u, *ph, *vlog, *vwin, *fo, *pl;
    bf16 *xb;
    /* pinned host */
    sf_cu_inputs in;
    float *o_value, *o_pwin, *o_fc, *o_pol;
    void *allocs[kMaxAllocs]; /* every device allocation, for sf_cu_free */
    int n_allocs;
};

namespace {

int dev_alloc(sf_cu *c, void **p, size_t bytes, char *msg, size_t cap) {
    if (c->n_allocs == kMaxAllocs)
        return fail(msg, cap, SF_CU_ENOMEM, "too many device buffers");
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 4);
    if (e != cudaSuccess)
        return fail(msg, cap, SF_CU_ENOMEM, "cudaMalloc(%zu bytes): %s", bytes,
                    cudaGetErrorString(e));
    c->allocs[c->n_allocs++] = *p;
    return SF_CU_OK;
}

/* Upload n floats; with `half` non-NULL also make a BF16 copy. */
int upload(sf_cu *c, float **dst, const float *src, size_t n, bf16 **half, char *msg, size_t cap) {
    int rc = dev_alloc(c, (void **)dst, n * sizeof(float), msg, cap);
    if (rc != SF_CU_OK)
        return rc;
    /* On the net's stream, not the legacy default stream: that stream is
     * non-blocking, so a plain cudaMemcpy (whose pageable DMA may still be
     * in flight when it returns) would not be ordered before the BF16
     * conversion below or before the first run. A pageable async copy is
     * staged before it returns, so `src` may be freed afterwards. */
    CU(cudaMemcpyAsync(*dst, src, n * sizeof(float), cudaMemcpyHostToDevice, c->stream));
    if (half) {
        rc = dev_alloc(c, (void **)half, n * sizeof(bf16), msg, cap);
        if (rc != SF_CU_OK)
            return rc;
        k_to_bf16<<<grid_for((long)n), kThreads, 0, c->stream>>>(*dst, *half, (long)n);
        CU(cudaGetLastError());
    }
    return SF_CU_OK;
}

/* Y[M, N] = X[M, K] W[N, K]^T + beta Y, row-major, in the chosen precision.
 * cuBLAS is column-major: Y^T = W X^T, with W read transposed. */
int gemm(sf_cu *c, int M, int N, int K, const float *X, const float *W, const bf16 *Wh, float *Y,
         float beta, char *msg, size_t cap) {
    if (M == 0)
        return SF_CU_OK;
    const float one = 1.0f;
    if (c->prec == SF_CU_BF16) {
        long n = (long)M * K;
        k_to_bf16<<<grid_for(n), kThreads, 0, c->stream>>>(X, c->xb, n);
        CU(cudaGetLastError());
        CB(cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, Wh, CUDA_R_16BF, K, c->xb,
                        CUDA_R_16BF, K, &beta, Y, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT));
        return SF_CU_OK;
    }
    cublasComputeType_t ct =
        c->prec == SF_CU_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    CB(cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, W, CUDA_R_32F, K, X,
                    CUDA_R_32F, K, &beta, Y, CUDA_R_32F, N, ct, CUBLAS_GEMM_DEFAULT));
    return SF_CU_OK;
}

int bias(sf_cu *c, float *y, const float *b, long rows, int cols, int act, char *msg, size_t cap) {
    if (rows == 0)
        return SF_CU_OK;
    k_bias_act<<<grid_for(rows * cols), kThreads, 0, c->stream>>>(y, b, rows, cols, act);
    CU(cudaGetLastError());
    return SF_CU_OK;
}

} // namespace

extern "C" void sf_cu_free(sf_cu *c) {
    if (!c)
        return;
    if (c->have_stream || c->n_allocs > 0)
        cudaSetDevice(c->device);
    if (c->have_stream)
        cudaStreamSynchronize(c->stream);
    for (int i = 0; i < c->n_allocs; i++)
        cudaFree(c->allocs[i]);
    void *pinned[] = {c->in.tok_off, c->in.q_off, c->in.type, c->in.cat, c->in.cont, c->in.query,
                      c->in.qcont,   c->o_value,  c->o_pwin,  c->o_fc,   c->o_pol};
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++)
        if (pinned[i])
            cudaFreeHost(pinned[i]);
    if (c->have_blas)
        cublasDestroy(c->blas);
    if (c->have_stream)
        cudaStreamDestroy(c->stream);
    free(c);
}

namespace {

/* The steps of create(), in order, like LMDB's env open: each returns
 * SF_CU_OK or a code with `msg` saying what failed; sf_cu_free() undoes
 * whatever the steps before did. */

/* Prefix `msg` with the step that failed ("uploading the weights: ...")
 * and return `rc`. */
int step_failed(char *msg, size_t cap, int rc, const char *step) {
    char was[512];
    snprintf(was, sizeof was, "%s", msg);
    return fail(msg, cap, rc, "%s: %s", step, was);
}

/* 1: the device (present, able to run the precision and the attention
 * kernel's shared memory), a stream and a cuBLAS handle on it. */
int create_device(sf_cu *c, int device, char *msg, size_t cap) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess)
        return fail(msg, cap, SF_CU_ENOGPU, "no usable GPU: cudaGetDeviceCount: %s",
                    cudaGetErrorString(e));
    if (count == 0)
        return fail(msg, cap, SF_CU_ENOGPU, "no usable GPU: no CUDA device found");
    if (device < 0 || device >= count)
        return fail(msg, cap, SF_CU_EINVAL, "device %d does not exist (%d GPUs)", device, count);
    CU(cudaSetDevice(device));
    cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, device));
    if (c->prec != SF_CU_FP32 && prop.major < 8)
        return fail(msg, cap, SF_CU_ENOGPU, "%s on %s needs compute capability 8.0 (has %d.%d)",
                    c->prec == SF_CU_BF16 ? "bf16" : "tf32", prop.name, prop.major, prop.minor);
    int dh = c->a.d_model / c->a.n_heads;
    c->attn_smem = sizeof(float) *
                   ((size_t)SF_CU_MAX_TOKENS * (2 * dh + 1) + (size_t)kWarps * SF_CU_MAX_TOKENS);
    if (c->attn_smem > prop.sharedMemPerBlockOptin)
        return fail(msg, cap, SF_CU_EINVAL,
                    "head width %d needs %zu bytes of shared memory; %s "
                    "has %zu",
                    dh, c->attn_smem, prop.name, (size_t)prop.sharedMemPerBlockOptin);
    CU(cudaFuncSetAttribute(k_attention, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)c->attn_smem));
    CU(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    c->have_stream = true;
    CB(cublasCreate(&c->blas));
    c->have_blas = true;
    CB(cublasSetStream(c->blas, c->stream));
    CB(cublasSetMathMode(c->blas, c->prec == SF_CU_FP32   ? CUBLAS_PEDANTIC_MATH
                                  : c->prec == SF_CU_TF32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                          : CUBLAS_DEFAULT_MATH));
    return SF_CU_OK;
}

/* Upload one tensor of `n` floats (and its BF16 copy when `half`). */
#define UP(dst, src, n, half)                                                           \
    do {                                                                                \
        if ((rc = upload(c, &(dst), (src), (size_t)(n), (half), msg, cap)) != SF_CU_OK) \
            return rc;                                                                  \
    } while (0)

/* 2a: one transformer block's weights. */
int upload_layer(sf_cu *c, const sf_cu_layer *s, DevLayer *D, char *msg, size_t cap) {
    const int d = c->a.d_model, ff = c->a.d_ff;
    const bool h = c->prec == SF_CU_BF16;
    int rc;
    UP(D->ln1_w, s->ln1_w, d, nullptr);
    UP(D->ln1_b, s->ln1_b, d, nullptr);
    UP(D->qkv_w, s->qkv_w, 3L * d * d, h ? &D->qkv_h : nullptr);
    UP(D->qkv_b, s->qkv_b, 3L * d, nullptr);
    UP(D->out_w, s->out_w, (long)d * d, h ? &D->out_h : nullptr);
    UP(D->out_b, s->out_b, d, nullptr);
    UP(D->ln2_w, s->ln2_w, d, nullptr);
    UP(D->ln2_b, s->ln2_b, d, nullptr);
    UP(D->fc1_w, s->fc1_w, (long)ff * d, h ? &D->fc1_h : nullptr);
    UP(D->fc1_b, s->fc1_b, ff, nullptr);
    UP(D->fc2_w, s->fc2_w, (long)d * ff, h ? &D->fc2_h : nullptr);
    UP(D->fc2_b, s->fc2_b, d, nullptr);
    return SF_CU_OK;
}

/* 2: the weights, once; BF16 copies of every GEMM weight in bf16 mode. */
int upload_weights(sf_cu *c, const sf_cu_weights *w, char *msg, size_t cap) {
    const sf_cu_arch *a = &c->a;
    const int d = a->d_model, din = 2 * d + SF_CU_NQCONT;
    const bool h = c->prec == SF_CU_BF16;
    int rc;
    UP(c->type_emb, w->type_emb, (long)SF_CU_NTYPES * d, nullptr);
    for (int j = 0; j < SF_CU_NCAT; j++)
        UP(c->cat_emb[j], w->cat_emb[j], (long)a->vocab[j] * d, nullptr);
    UP(c->cont_w, w->cont_w, (long)d * SF_CU_NCONT, nullptr);
    UP(c->cont_b, w->cont_b, d, nullptr);
    for (int l = 0; l < a->n_layers; l++)
        if ((rc = upload_layer(c, &w->layer[l], &c->L[l], msg, cap)) != SF_CU_OK)
            return rc;
    UP(c->lnf_w, w->lnf_w, d, nullptr);
    UP(c->lnf_b, w->lnf_b, d, nullptr);
    UP(c->vfc_w, w->vfc_w, (long)a->d_value * d, h ? &c->vfc_h : nullptr);
    UP(c->vfc_b, w->vfc_b, a->d_value, nullptr);
    UP(c->vbins_w, w->vbins_w, (long)SF_CU_VALUE_BINS * a->d_value, h ? &c->vbins_h : nullptr);
    UP(c->vbins_b, w->vbins_b, SF_CU_VALUE_BINS, nullptr);
    UP(c->vwin_w, w->vwin_w, a->d_value, h ? &c->vwin_h : nullptr);
    UP(c->vwin_b, w->vwin_b, 1, nullptr);
    UP(c->ffc_w, w->ffc_w, (long)a->d_forecast * d, h ? &c->ffc_h : nullptr);
    UP(c->ffc_b, w->ffc_b, a->d_forecast, nullptr);
    UP(c->fout_w, w->fout_w, (long)SF_CU_FORECASTS * a->d_forecast, h ? &c->fout_h : nullptr);
    UP(c->fout_b, w->fout_b, SF_CU_FORECASTS, nullptr);
    UP(c->pfc1_w, w->pfc1_w, (long)a->d_policy * din, h ? &c->pfc1_h : nullptr);
    UP(c->pfc1_b, w->pfc1_b, a->d_policy, nullptr);
    UP(c->pfc2_w, w->pfc2_w, a->d_policy, h ? &c->pfc2_h : nullptr);
    UP(c->pfc2_b, w->pfc2_b, 1, nullptr);
    return SF_CU_OK;
}
#undef UP

/* Elements of xb, the BF16 copy of any GEMM input: the widest of them. */
long bf16_scratch_elements(const sf_cu *c) {
    const sf_cu_arch *a = &c->a;
    long B = c->max_batch, S = B * SF_CU_MAX_TOKENS, Q = B * SF_CU_MAX_QUERIES;
    long d = a->d_model, din = 2 * d + SF_CU_NQCONT;
    long dhid = a->d_value > a->d_forecast ? a->d_value : a->d_forecast;
    long wide = d > a->d_ff ? d : a->d_ff;
    long xb = S * wide;
    if (Q * din > xb)
        xb = Q * din;
    if (B * (d > dhid ? d : dhid) > xb)
        xb = B * (d > dhid ? d : dhid);
    if (Q * a->d_policy > xb) /* the policy output layer's input */
        xb = Q * a->d_policy;
    return xb;
}

/* A buffer to allocate: where its pointer goes and its size. */
struct Buf {
    void **p;
    size_t bytes;
};

/* 3: device inputs and activations for max_batch positions of up to
 * SF_CU_MAX_TOKENS tokens and SF_CU_MAX_QUERIES queries. */
int alloc_device_buffers(sf_cu *c, char *msg, size_t cap) {
    const sf_cu_arch *a = &c->a;
    long B = c->max_batch, S = B * SF_CU_MAX_TOKENS, Q = B * SF_CU_MAX_QUERIES;
    long d = a->d_model, din = 2 * d + SF_CU_NQCONT;
    long dhid = a->d_value > a->d_forecast ? a->d_value : a->d_forecast;
    bool h = c->prec == SF_CU_BF16;
    const Buf bufs[] = {
        {(void **)&c->tok_off, sizeof(int32_t) * (B + 1)},
        {(void **)&c->q_off, sizeof(int32_t) * (B + 1)},
        {(void **)&c->query, sizeof(int32_t) * Q * 2},
        {(void **)&c->type, (size_t)S},
        {(void **)&c->cat, sizeof(uint16_t) * S * SF_CU_NCAT},
        {(void **)&c->cont, sizeof(float) * S * SF_CU_NCONT},
        {(void **)&c->qcont, sizeof(float) * Q * SF_CU_NQCONT},
        {(void **)&c->x, sizeof(float) * S * d},
        {(void **)&c->h, sizeof(float) * S * d},
        {(void **)&c->qkv, sizeof(float) * S * 3 * d},
        {(void **)&c->att, sizeof(float) * S * d},
        {(void **)&c->ff, sizeof(float) * S * a->d_ff},
        {(void **)&c->g, sizeof(float) * B * d},
        {(void **)&c->hv, sizeof(float) * B * dhid},
        {(void **)&c->u, sizeof(float) * Q * din},
        {(void **)&c->ph, sizeof(float) * Q * a->d_policy},
        {(void **)&c->vlog, sizeof(float) * B * SF_CU_VALUE_BINS},
        {(void **)&c->vwin, sizeof(float) * B},
        {(void **)&c->fo, sizeof(float) * B * SF_CU_FORECASTS},
        {(void **)&c->pl, sizeof(float) * Q},
        {(void **)&c->xb, h ? sizeof(bf16) * bf16_scratch_elements(c) : 4},
    };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        int rc = dev_alloc(c, bufs[i].p, bufs[i].bytes, msg, cap);
        if (rc != SF_CU_OK)
            return rc;
    }
    return SF_CU_OK;
}

/* 4: pinned host staging for the inputs and outputs of a batch. */
int alloc_pinned_buffers(sf_cu *c, char *msg, size_t cap) {
    long B = c->max_batch, S = B * SF_CU_MAX_TOKENS, Q = B * SF_CU_MAX_QUERIES;
    const Buf pinned[] = {
        {(void **)&c->in.tok_off, sizeof(int32_t) * (B + 1)},
        {(void **)&c->in.q_off, sizeof(int32_t) * (B + 1)},
        {(void **)&c->in.type, (size_t)S},
        {(void **)&c->in.cat, sizeof(uint16_t) * S * SF_CU_NCAT},
        {(void **)&c->in.cont, sizeof(float) * S * SF_CU_NCONT},
        {(void **)&c->in.query, sizeof(int32_t) * Q * 2},
        {(void **)&c->in.qcont, sizeof(float) * Q * SF_CU_NQCONT},
        {(void **)&c->o_value, sizeof(float) * B * SF_CU_VALUE_BINS},
        {(void **)&c->o_pwin, sizeof(float) * B},
        {(void **)&c->o_fc, sizeof(float) * B * SF_CU_FORECASTS},
        {(void **)&c->o_pol, sizeof(float) * Q},
    };
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++) {
        cudaError_t pe = cudaHostAlloc(pinned[i].p, pinned[i].bytes, cudaHostAllocDefault);
        if (pe != cudaSuccess)
            return fail(msg, cap, SF_CU_ENOMEM, "cudaHostAlloc(%zu bytes): %s", pinned[i].bytes,
                        cudaGetErrorString(pe));
    }
    return SF_CU_OK;
}

} // namespace

static int create(sf_cu *c, const sf_cu_weights *w, int device, char *msg, size_t cap) {
    int rc = create_device(c, device, msg, cap);
    if (rc != SF_CU_OK)
        return rc;
    if ((rc = upload_weights(c, w, msg, cap)) != SF_CU_OK)
        return step_failed(msg, cap, rc, "uploading the weights");
    if ((rc = alloc_device_buffers(c, msg, cap)) != SF_CU_OK)
        return step_failed(msg, cap, rc, "device buffers");
    if ((rc = alloc_pinned_buffers(c, msg, cap)) != SF_CU_OK)
        return step_failed(msg, cap, rc, "pinned host buffers");
    CU(cudaStreamSynchronize(c->stream));
    return SF_CU_OK;
}

extern "C" int sf_cu_create(const sf_cu_arch *a, const sf_cu_weights *w, int precision,
                            int max_batch, int device, sf_cu **out, char *msg, size_t cap) {
    *out = nullptr;
    if (max_batch < 1 || a->d_model % a->n_heads != 0 || a->n_layers > SF_CU_MAX_LAYERS)
        return fail(msg, cap, SF_CU_EINVAL, "bad architecture or max_batch %d", max_batch);
    sf_cu *c = (sf_cu *)calloc(1, sizeof *c);
    if (!c)
        return fail(msg, cap, SF_CU_ENOMEM, "out of host memory");
    c->a = *a;
    c->prec = precision;
    c->max_batch = max_batch;
    c->device = device;
    int rc = create(c, w, device, msg, cap);
    if (rc != SF_CU_OK) {
        sf_cu_free(c);
        return rc;
    }
    *out = c;
    return SF_CU_OK;
}

extern "C" sf_cu_inputs sf_cu_staging(sf_cu *c) {
    return c->in;
}

extern "C" sf_cu_results sf_cu_results_get(const sf_cu *c) {
    sf_cu_results r = {c->o_value, c->o_pwin, c->o_fc, c->o_pol};
    return r;
}

static int run(sf_cu *c, int n, int S, int Q, char *msg, size_t cap) {
    const sf_cu_arch *a = &c->a;
    cudaStream_t st = c->stream;
    CU(cudaSetDevice(c->device)); /* the caller's thread may not be the creator's */
    int d = a->d_model, H = a->n_heads, din = 2 * d + SF_CU_NQCONT, rc;
    float scale = 1.0f / sqrtf((float)(d / H));
    CU(cudaMemcpyAsync(c->tok_off, c->in.tok_off, sizeof(int32_t) * (n + 1), cudaMemcpyHostToDevice,
                       st));
    CU(cudaMemcpyAsync(c->q_off, c->in.q_off, sizeof(int32_t) * (n + 1), cudaMemcpyHostToDevice,
                       st));
    CU(cudaMemcpyAsync(c->type, c->in.type, (size_t)S, cudaMemcpyHostToDevice, st));
    CU(cudaMemcpyAsync(c->cat, c->in.cat, sizeof(uint16_t) * S * SF_CU_NCAT, cudaMemcpyHostToDevice,
                       st));
    CU(cudaMemcpyAsync(c->cont, c->in.cont, sizeof(float) * S * SF_CU_NCONT, cudaMemcpyHostToDevice,
                       st));
    if (Q > 0) {
        CU(cudaMemcpyAsync(c->query, c->in.query, sizeof(int32_t) * Q * 2, cudaMemcpyHostToDevice,
                           st));
        CU(cudaMemcpyAsync(c->qcont, c->in.qcont, sizeof(float) * Q * SF_CU_NQCONT,
                           cudaMemcpyHostToDevice, st));
    }
    k_embed<<<S, kThreads, 0, st>>>(c->type, c->cat, c->cont, c->type_emb, c->cat_emb[0],
                                    c->cat_emb[1], c->cat_emb[2], c->cat_emb[3], c->cont_w,
                                    c->cont_b, c->x, d);
    CU(cudaGetLastError());
#define G(...)                                                 \
    do {                                                       \
        if ((rc = gemm(c, __VA_ARGS__, msg, cap)) != SF_CU_OK) \
            return rc;                                         \
    } while (0)
#define BIAS(...)                                              \
    do {                                                       \
        if ((rc = bias(c, __VA_ARGS__, msg, cap)) != SF_CU_OK) \
            return rc;                                         \
    } while (0)
    for (int l = 0; l < a->n_layers; l++) {
        const DevLayer *L = &c->L[l];
        k_layernorm<<<S, kThreads, 0, st>>>(c->x, L->ln1_w, L->ln1_b, c->h, d);
        CU(cudaGetLastError());
        G(S, 3 * d, d, c->h, L->qkv_w, L->qkv_h, c->qkv, 0.0f);
        BIAS(c->qkv, L->qkv_b, S, 3 * d, 0);
        k_attention<<<dim3(n, H), kThreads, c->attn_smem, st>>>(c->qkv, c->att, c->tok_off, d, H,
                                                                scale);
        CU(cudaGetLastError());
        G(S, d, d, c->att, L->out_w, L->out_h, c->x, 1.0f);
        BIAS(c->x, L->out_b, S, d, 0);
        k_layernorm<<<S, kThreads, 0, st>>>(c->x, L->ln2_w, L->ln2_b, c->h, d);
        CU(cudaGetLastError());
        G(S, a->d_ff, d, c->h, L->fc1_w, L->fc1_h, c->ff, 0.0f);
        BIAS(c->ff, L->fc1_b, S, a->d_ff, 1);
        G(S, d, a->d_ff, c->ff, L->fc2_w, L->fc2_h, c->x, 1.0f);
        BIAS(c->x, L->fc2_b, S, d, 0);
    }
    k_layernorm<<<S, kThreads, 0, st>>>(c->x, c->lnf_w, c->lnf_b, c->h, d);
    CU(cudaGetLastError());
    k_pool<<<n, kThreads, 0, st>>>(c->h, c->tok_off, c->g, d);
    CU(cudaGetLastError());
    G(n, a->d_value, d, c->g, c->vfc_w, c->vfc_h, c->hv, 0.0f);
    BIAS(c->hv, c->vfc_b, n, a->d_value, 1);
    G(n, SF_CU_VALUE_BINS, a->d_value, c->hv, c->vbins_w, c->vbins_h, c->vlog, 0.0f);
    BIAS(c->vlog, c->vbins_b, n, SF_CU_VALUE_BINS, 0);
    G(n, 1, a->d_value, c->hv, c->vwin_w, c->vwin_h, c->vwin, 0.0f);
    BIAS(c->vwin, c->vwin_b, n, 1, 0);
    k_value<<<grid_for(n), kThreads, 0, st>>>(c->vlog, c->vwin, n);
    CU(cudaGetLastError());
    G(n, a->d_forecast, d, c->g, c->ffc_w, c->ffc_h, c->hv, 0.0f);
    BIAS(c->hv, c->ffc_b, n, a->d_forecast, 1);
    G(n, SF_CU_FORECASTS, a->d_forecast, c->hv, c->fout_w, c->fout_h, c->fo, 0.0f);
    BIAS(c->fo, c->fout_b, n, SF_CU_FORECASTS, 0);
    if (Q > 0) {
        k_policy_in<<<Q, kThreads, 0, st>>>(c->h, c->query, c->qcont, c->u, d);
        CU(cudaGetLastError());
        G(Q, a->d_policy, din, c->u, c->pfc1_w, c->pfc1_h, c->ph, 0.0f);
        BIAS(c->ph, c->pfc1_b, Q, a->d_policy, 1);
        G(Q, 1, a->d_policy, c->ph, c->pfc2_w, c->pfc2_h, c->pl, 0.0f);
        BIAS(c->pl, c->pfc2_b, Q, 1, 0);
        CU(cudaMemcpyAsync(c->o_pol, c->pl, sizeof(float) * Q, cudaMemcpyDeviceToHost, st));
    }
#undef G
#undef BIAS
    CU(cudaMemcpyAsync(c->o_value, c->vlog, sizeof(float) * n * SF_CU_VALUE_BINS,
                       cudaMemcpyDeviceToHost, st));
    CU(cudaMemcpyAsync(c->o_pwin, c->vwin, sizeof(float) * n, cudaMemcpyDeviceToHost, st));
    CU(cudaMemcpyAsync(c->o_fc, c->fo, sizeof(float) * n * SF_CU_FORECASTS, cudaMemcpyDeviceToHost,
                       st));
    CU(cudaStreamSynchronize(st));
    return SF_CU_OK;
}

extern "C" int sf_cu_run(sf_cu *c, int n, int tokens, int queries, char *msg, size_t cap) {
    if (n < 1 || n > c->max_batch || tokens < n || tokens > n * SF_CU_MAX_TOKENS || queries < 0 ||
        queries > n * SF_CU_MAX_QUERIES)
        return fail(msg, cap, SF_CU_EINVAL,
                    "batch of %d positions, %d tokens, %d queries "
                    "outside max_batch %d",
                    n, tokens, queries, c->max_batch);
    int rc = run(c, n, tokens, queries, msg, cap);
    /* A failure midway may leave copies from the pinned staging buffers in
     * flight: let them finish before the caller refills those buffers. */
    if (rc != SF_CU_OK)
        cudaStreamSynchronize(c->stream);
    return rc;
}
