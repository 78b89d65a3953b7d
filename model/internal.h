/*
 * internal.h — gpu-evald internals shared by its source files and white-box
 * tests: the bound weight pointers, the backends' entry points, the erf
 * approximation and small helpers. Not part of the module's API.
 */
#ifndef SF_EVALD_INTERNAL_H
#define SF_EVALD_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model/model.h"

#define SF_ARCH_MAX_LAYERS 64
#define SF_ARCH_MAX_DMODEL 4096
#define SF_ARCH_MAX_HIDDEN 16384
#define SF_LN_EPS          1e-5f
#define SF_POLICY_IN(d)    (2 * (d) + SF_FEAT_NQCONT)

/* Pointers to one block's weights, row-major as PyTorch stores them
 * (a Linear's weight is [out, in]). */
typedef struct sf_layer_w {
    const float *ln1_w, *ln1_b;
    const float *qkv_w, *qkv_b; /* [3d, d]: rows q (d), k (d), v (d)   */
    const float *out_w, *out_b; /* [d, d]                               */
    const float *ln2_w, *ln2_b;
    const float *fc1_w, *fc1_b; /* [d_ff, d]                            */
    const float *fc2_w, *fc2_b; /* [d, d_ff]                            */
} sf_layer_w;

typedef struct sf_weights {
    const float *type_emb;              /* [SF_FEAT_NTYPES, d]          */
    const float *cat_emb[SF_FEAT_NCAT]; /* [vocab_j, d]                 */
    const float *cont_w, *cont_b;       /* [d, NCONT], [d]              */
    sf_layer_w layer[SF_ARCH_MAX_LAYERS];
    const float *lnf_w, *lnf_b;
    const float *vfc_w, *vfc_b;     /* [d_value, d]                     */
    const float *vbins_w, *vbins_b; /* [21, d_value]                    */
    const float *vwin_w, *vwin_b;   /* [1, d_value]                     */
    const float *ffc_w, *ffc_b;     /* [d_forecast, d]                  */
    const float *fout_w, *fout_b;   /* [20, d_forecast]                 */
    const float *pfc1_w, *pfc1_b;   /* [d_policy, 2d + NQCONT]          */
    const float *pfc2_w, *pfc2_b;   /* [1, d_policy]                    */
} sf_weights;

/* Vocabulary sizes of the categorical slots, in slot order. */
extern const int sf_feat_vocab[SF_FEAT_NCAT];

/* Bind every weight of `b` (already validated by the loader). */
void sf_weights_bind(const sf_bundle *b, sf_weights *w);

/* Read a whole regular file, opened without blocking (common/io.h's
 * sf_open_regular: a FIFO or a device is refused, never waited on).
 * Errors: SF_EIO (cannot open, stat or read: the OS's reason), SF_EFORMAT
 * (not a regular file, or it got shorter while being read), SF_ENOMEM. */
int sf_evald_read_file(const char *path, uint8_t **bytes, size_t *n, sf_err *err);

/* erf(x) as Eigen's float rational approximation (Eigen
 * SpecialFunctionsImpl.h, generic_fast_erf_float: odd degree-13 numerator
 * over even degree-8 denominator, input clamped to [-4, 4]); max abs error
 * about 1e-7 against the true erf, branch-free so loops vectorise. */
static inline float sf_erff(float a) {
    float x = a < -4.0f ? -4.0f : (a > 4.0f ? 4.0f : a);
    float x2 = x * x;
    float p = x2 * -2.72614225801306e-10f + 2.77068142495902e-08f;
    p = x2 * p + -2.10102402082508e-06f;
    p = x2 * p + -5.69250639462346e-05f;
    p = x2 * p + -7.34990630326855e-04f;
    p = x2 * p + -2.95459980854025e-03f;
    p = x2 * p + -1.60960333262415e-02f;
    p = x * p;
    float q = x2 * -1.45660718464996e-05f + -2.13374055278905e-04f;
    q = x2 * q + -1.68282697438203e-03f;
    q = x2 * q + -7.37332916720468e-03f;
    q = x2 * q + -1.42647390514189e-02f;
    return p / q;
}

/* exp(x) for float, branch-free so loops vectorise: Cephes expf (Moshier,
 * Cephes Math Library, expf.c): x = n ln2 + r with n the nearest integer
 * and ln2 split in two for an exact reduction, a degree-6 polynomial on
 * |r| <= ln2/2, then n put into the exponent bits. About 1 ulp on the
 * clamped range [-87, 88]; below it returns ~1.6e-38 rather than 0, which
 * only ever scales a probability; NaN stays NaN. */
static inline float sf_expf(float x) {
    float xc = x > -87.0f ? x : -87.0f; /* also maps NaN to a number here */
    xc = xc < 88.0f ? xc : 88.0f;
    float fn = floorf(xc * 1.44269504088896341f + 0.5f); /* nearest integer */
    float r = xc - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    float z = r * r;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * z + r + 1.0f;
    uint32_t bits = (uint32_t)((int32_t)fn + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return x == x ? p * scale : x; /* NaN in, NaN out */
}

/* GELU with the exact (erf) form: x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)). */
static inline float sf_gelu(float x) {
    return 0.5f * x * (1.0f + sf_erff(x * 0.70710678118654752f));
}

/* The number of elements of a tensor of this shape. */
static inline size_t sf_shape_elems(int ndim, const int64_t *shape) {
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= (size_t)shape[i];
    return n;
}

/* An F32 tensor of this name and shape over `data` (not copied). */
static inline sf_tensor sf_tensor_f32(const char *name, int ndim, const int64_t *shape,
                                      const float *data) {
    sf_tensor t = {.name = name, .dtype = SF_DT_F32, .ndim = ndim, .data = data};
    for (int i = 0; i < ndim; i++)
        t.shape[i] = shape[i];
    t.nbytes = sf_shape_elems(ndim, shape) * sizeof(float);
    return t;
}

/* ---- precision emulation (the cpu backend's, for tolerances and tests) ----
 * What the cuda backend does to the inputs of a matrix product
 * (cublasGemmEx): bf16 converts both operands with __float2bfloat16, round
 * to nearest even on 7 mantissa bits; tf32 tensor cores read 10 mantissa
 * bits, emulated here by truncation (cuBLAS does not document its
 * conversion; truncation is the larger error of the two choices).
 * Products of two such numbers are exact in fp32 and the sums stay fp32,
 * so rounding the inputs is the whole difference, up to summation order.
 * Infinities and NaNs pass through. */
static inline float sf_round_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u)
        return x;
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline float sf_trunc_tf32(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) != 0x7f800000u)
        u &= 0xffffe000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* A cpu-backend net whose matrix products emulate precision `p` as above
 * (SF_PREC_FP32: an ordinary cpu net): every GEMM input, weights and
 * activations, is rounded; the token embedding, attention, LayerNorm,
 * GELU, softmax and pooling stay fp32 as on the cuda backend.
 * sf_net_precision() reports `p`, so sf_net_canary() applies the bundle's
 * tolerances of `p` and its messages say "bf16 (emulated)". Errors as
 * sf_net_create. Not part of the API: the cpu backend serves fp32 only. */
int sf_net_create_emulated(const sf_bundle *b, sf_precision p, int threads, sf_net **out,
                           sf_err *err);

/* ---- cpu backend (cpu.c) ---- */
typedef struct sf_cpu sf_cpu;
/* `emulate`: SF_PREC_FP32, or the precision whose GEMM inputs are rounded
 * (sf_net_create_emulated). */
int sf_cpu_create(const sf_arch *a, const sf_weights *w, int threads, sf_precision emulate,
                  sf_cpu **out, sf_err *err);
/* Positions are already validated. Never allocates. */
void sf_cpu_eval(sf_cpu *c, const sf_pos *pos, int n, sf_net_out *out);
void sf_cpu_free(sf_cpu *c);

/* ---- cuda backend (cuda.cu, or cuda_none.c when not built) ---- */
typedef struct sf_cuda sf_cuda;
/* Upload the weights and size the device buffers for `max_batch`
 * positions. SF_EUNSUPPORTED when not built or no GPU. */
int sf_cuda_create(const sf_arch *a, const sf_weights *w, const sf_net_opts *o, sf_cuda **out,
                   sf_err *err);
int sf_cuda_eval(sf_cuda *c, const sf_pos *pos, int n, sf_net_out *out, sf_err *err);
void sf_cuda_free(sf_cuda *c);
/* 1 when this build contains the cuda backend. */
int sf_cuda_built(void);

/* The bundle metadata the writer and the loader share (the format names,
 * the policy input, the canary tolerance keys) is public: model.h. */

/* The net's outputs for g positions as the four F32 tensors value [g,
 * bins], p_win [g], forecast [g, horizons, targets] and policy [g, queries],
 * named with `prefix`, over the packed arrays val, pw, fc and pol. `names`
 * holds the names (4 * 32 bytes). Returns 4. */
int sf_net_out_tensors(int g, const char *prefix, const float *val, const float *pw,
                       const float *fc, const float *pol, char names[4][32], sf_tensor out[4]);

#endif
