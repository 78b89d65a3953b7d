/*
 * cuda_abi.h — the boundary between the C side of the cuda backend
 * (cuda.c) and its CUDA C++ side (cuda.cu). Plain types only, valid in C and
 * C++, so nvcc never has to read the C-only project headers. cuda.c checks
 * at compile time that these sizes equal the tokenizer's (engine/engine.h).
 * Internal to gpu-evald.
 *
 * Layout of one batch (ragged, packed by cuda.c into pinned host memory):
 *   tok_off[b]..tok_off[b+1]   position b's tokens in the token arrays
 *   q_off[b]..q_off[b+1]       position b's queries in the query arrays
 *   query[2q], query[2q+1]     card and target token as indices into the
 *                              whole batch's token arrays (already offset)
 */
#ifndef SF_EVALD_CUDA_ABI_H
#define SF_EVALD_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SF_CU_NCAT        4
#define SF_CU_NCONT       16
#define SF_CU_NQCONT      8
#define SF_CU_NTYPES      12
#define SF_CU_MAX_TOKENS  128
#define SF_CU_MAX_QUERIES 80
#define SF_CU_VALUE_BINS  21
#define SF_CU_FORECASTS   20
#define SF_CU_MAX_LAYERS  64

enum { SF_CU_OK = 0, SF_CU_ENOGPU = -1, SF_CU_EDEVICE = -2, SF_CU_EINVAL = -3, SF_CU_ENOMEM = -4 };
enum { SF_CU_FP32 = 0, SF_CU_TF32 = 1, SF_CU_BF16 = 2 };

typedef struct sf_cu_arch {
    int d_model, n_layers, n_heads, d_ff, d_value, d_forecast, d_policy;
    int vocab[SF_CU_NCAT];
} sf_cu_arch;

/* Host pointers to the weights, row-major as the bundle stores them. */
typedef struct sf_cu_layer {
    const float *ln1_w, *ln1_b, *qkv_w, *qkv_b, *out_w, *out_b;
    const float *ln2_w, *ln2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
} sf_cu_layer;

typedef struct sf_cu_weights {
    const float *type_emb;
    const float *cat_emb[SF_CU_NCAT];
    const float *cont_w, *cont_b;
    sf_cu_layer layer[SF_CU_MAX_LAYERS];
    const float *lnf_w, *lnf_b;
    const float *vfc_w, *vfc_b, *vbins_w, *vbins_b, *vwin_w, *vwin_b;
    const float *ffc_w, *ffc_b, *fout_w, *fout_b;
    const float *pfc1_w, *pfc1_b, *pfc2_w, *pfc2_b;
} sf_cu_weights;

/* Pinned host staging buffers for one batch (capacities from max_batch). */
typedef struct sf_cu_inputs {
    int32_t *tok_off; /* [max_batch + 1]                */
    int32_t *q_off;   /* [max_batch + 1]                */
    uint8_t *type;    /* [max_batch * 128]              */
    uint16_t *cat;    /* [max_batch * 128 * 4]          */
    float *cont;      /* [max_batch * 128 * 16]         */
    int32_t *query;   /* [max_batch * 80 * 2]           */
    float *qcont;     /* [max_batch * 80 * 8]           */
} sf_cu_inputs;

/* Pinned host results of the last run. */
typedef struct sf_cu_results {
    const float *value;    /* [n, 21] probabilities   */
    const float *p_win;    /* [n]                     */
    const float *forecast; /* [n, 20]                 */
    const float *policy;   /* [total queries] logits  */
} sf_cu_results;

typedef struct sf_cu sf_cu;

/* Pick the device, upload the weights, size every buffer for max_batch
 * positions. On failure returns SF_CU_E* and writes a message. */
int sf_cu_create(const sf_cu_arch *a, const sf_cu_weights *w, int precision, int max_batch,
                 int device, sf_cu **out, char *msg, size_t cap);

sf_cu_inputs sf_cu_staging(sf_cu *c);

/* Run the batch staged in sf_cu_staging(): n positions, `tokens` tokens and
 * `queries` queries in all. Synchronous. */
int sf_cu_run(sf_cu *c, int n, int tokens, int queries, char *msg, size_t cap);

sf_cu_results sf_cu_results_get(const sf_cu *c);

void sf_cu_free(sf_cu *c);

#ifdef __cplusplus
}
#endif

#endif
