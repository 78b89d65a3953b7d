/*
 * model.h — the model runtime: SHA-pinned model bundles, the entity-set
 * transformer that reads the engine tokenizer's output, and its cpu
 * (OpenBLAS) and cuda (cuBLAS) backends. gpu-evald's server
 * (gpu-evald/evald.h) and the in-process evaluator (gpu-evald/neteval.h,
 * used by the worker and the search tools) both run networks through it.
 * docs/model.md is the reference for the network and the bundle format.
 *
 * Pieces, lowest first
 *   sf_tensorfile  a safetensors container (8-byte little-endian header
 *                  length, a JSON header parsed with jansson, raw
 *                  little-endian tensor data), read and written.
 *   sf_positions   a set of tokenized positions (the tokenizer's sf_feat
 *                  layout) stored in a tensor file: golden positions, parity
 *                  fixtures, benchmark inputs. Real engine positions replace
 *                  the synthetic ones simply by writing such a file.
 *   sf_bundle      a validated model bundle: architecture, tokenizer
 *                  version, output layout, weights and the canary (golden
 *                  positions with their expected outputs), identified by the
 *                  SHA-256 of the file's bytes.
 *   sf_net         the network bound to a backend; evaluates a batch of
 *                  positions into sf_net_out records.
 *   The server that batches positions from many clients is gpu-evald
 *   (gpu-evald/evald.h); the worker-side client (remote and in-process) is
 *   gpu-evald/neteval.h.
 *
 * Invariants
 *   - Errors are values: every fallible call returns SF_OK or a negative
 *     SF_E* code and fills the optional sf_err with a message that names the
 *     file, tensor, metadata key, position or field at fault. Nothing falls
 *     back silently to another model or another backend.
 *   - Determinism (cpu backend): a position's outputs are a function of that
 *     position and the weights only — bit-identical whatever else is in the
 *     batch, in whatever order, on however many threads. The backend gets
 *     this by construction: every matrix product is issued per position, so
 *     the shape of each OpenBLAS call depends on that position alone (see
 *     model/cpu.c). The cuda backend is equal to the cpu backend within
 *     the bundle's per-output, per-precision canary tolerances (see
 *     "Canary tolerances" below), not bit-identical.
 *   - Allocation: loading allocates; sf_net_eval() on the cpu backend does
 *     not allocate once the net exists (its workspace is sized at creation
 *     for SF_FEAT_MAX_TOKENS tokens and SF_FEAT_MAX_QUERIES queries).
 *   - Threading: a bundle is immutable after loading and may be shared by
 *     any number of threads and nets. An sf_net is used by one thread at a
 *     time. Creating a cpu net sets OpenBLAS to one thread for the whole
 *     process (see model/cpu.c); parallelism comes from
 *     sf_net_opts.threads, over positions.
 *   - Byte order: tensor files and wire arrays are little-endian; this build
 *     refuses to compile on a big-endian host rather than misread them.
 */
#ifndef SF_MODEL_H
#define SF_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/common.h"
#include "engine/engine.h"
#include "label/label.h"

/* ---------------------------------------------------------------------------
 * Output layout (docs/model.md "Heads")
 * ------------------------------------------------------------------------- */
/* The heads predict the label contract's targets (label/label.h): the
 * 21-bin outcome score and the forecast columns SF_FORECAST_*. */
#define SF_NET_VALUE_BINS       SF_VALUE_BINS
#define SF_NET_HORIZONS         SF_FORECAST_H
#define SF_NET_FORECAST_TARGETS SF_FORECAST_COLS
#define SF_NET_FORECASTS        (SF_NET_HORIZONS * SF_NET_FORECAST_TARGETS)

/* The bundle format this build writes (metadata "format_version"). It also
 * reads format 1, whose one absolute "canary_tolerance" it maps onto the
 * per-precision tolerances of format 2 (docs/model.md "Canary tolerances"). */
#define SF_BUNDLE_FORMAT_VERSION 2

/* Metadata "format" of a bundle and of a position set, and a bundle's
 * "policy_input" (what the policy head reads). Python's model.py takes them
 * from the generated spirefleet/facts.py. */
#define SF_BUNDLE_FORMAT    "spirefleet-model"
#define SF_POSITIONS_FORMAT "spirefleet-positions"
#define SF_POLICY_INPUT     "card,target,query_cont"

/* The network's answer for one position. Fixed size (492 bytes).
 *   value[b]        P(outcome bin b), softmax over the 21 bins of
 *                   label/label.h (0..4 graded losses, 5..20 wins).
 *   p_win           P(the player wins the fight), a sigmoid.
 *   forecast[h][k]  predicted target k (SF_FORECAST_*) h+1 player turns ahead,
 *                   in the label record's units (raw regression outputs).
 *   policy[q]       logit of action query q, for q < n_queries (the rest 0);
 *                   a softmax over the legal queries gives the prior. */
typedef struct sf_net_out {
    float value[SF_NET_VALUE_BINS];
    float p_win;
    float forecast[SF_NET_HORIZONS][SF_NET_FORECAST_TARGETS];
    int n_queries;
    float policy[SF_FEAT_MAX_QUERIES];
} sf_net_out;

/* ---------------------------------------------------------------------------
 * Positions: read-only views of tokenized positions
 * ------------------------------------------------------------------------- */

/* One tokenized position as pointers into arrays owned by someone else,
 * using the tokenizer's layout (engine/engine.h, sf_feat):
 *   type[t]      token type, SF_TOK_CTX..SF_TOK_POTION (never SF_TOK_PAD)
 *   cat[t][j]    categorical id j, < SF_FEAT_VOCAB<j>
 *   cont[t][k]   continuous feature k, finite
 *   query[q]     (card token, target token), both < n_tokens
 *   qcont[q][k]  continuous query feature k, finite
 * with 1 <= n_tokens <= SF_FEAT_MAX_TOKENS, 0 <= n_queries <=
 * SF_FEAT_MAX_QUERIES. Token order carries no meaning. */
typedef struct sf_pos {
    int n_tokens;
    int n_queries;
    const uint8_t *type;
    const uint16_t (*cat)[SF_FEAT_NCAT];
    const float (*cont)[SF_FEAT_NCONT];
    const uint16_t (*query)[2];
    const float (*qcont)[SF_FEAT_NQCONT];
} sf_pos;

/* A view of an sf_feat (the engine tokenizer's output). `f` must outlive
 * the view. */
static inline sf_pos sf_pos_from_feat(const sf_feat *f) {
    sf_pos p = {f->n_tokens,
                f->n_queries,
                f->type,
                (const uint16_t(*)[SF_FEAT_NCAT])f->cat,
                (const float(*)[SF_FEAT_NCONT])f->cont,
                (const uint16_t(*)[2])f->query,
                (const float(*)[SF_FEAT_NQCONT])f->qcont};
    return p;
}

/* Check that a position obeys the ranges above. Errors: SF_EINVAL with a
 * message such as "token 5: type 14 out of range 1..11" or "query 2: target
 * token 40 >= n_tokens 31". */
int sf_pos_validate(const sf_pos *p, sf_err *err);

/* ---------------------------------------------------------------------------
 * Tensor files (safetensors)
 * ------------------------------------------------------------------------- */
typedef enum sf_dtype { SF_DT_F32 = 0, SF_DT_I32 = 1, SF_DT_U16 = 2, SF_DT_U8 = 3 } sf_dtype;

#define SF_TENSOR_MAX_DIMS 8

/* One tensor. In a loaded file `data` is 64-byte aligned and host-order
 * (little-endian); `nbytes` = product(shape) * dtype size. When writing,
 * the caller fills every field and owns `name` and `data`. */
typedef struct sf_tensor {
    const char *name;
    sf_dtype dtype;
    int ndim;
    int64_t shape[SF_TENSOR_MAX_DIMS];
    const void *data;
    size_t nbytes;
} sf_tensor;

/* A metadata entry ("__metadata__" in the header: string to string). */
typedef struct sf_meta_kv {
    const char *key;
    const char *value;
} sf_meta_kv;

typedef struct sf_tensorfile sf_tensorfile;

/* "F32", "I32", "U16", "U8"; element size in bytes. */
const char *sf_dtype_name(sf_dtype dt);
size_t sf_dtype_size(sf_dtype dt);

/* Read and parse a safetensors file. When `sha256` is non-NULL it receives
 * the SHA-256 of the whole file (libsodium). Only the dtypes above are
 * accepted; tensor data must lie inside the file and have exactly the size
 * its shape says. Errors (message names the file and the tensor or header
 * field): SF_EIO (cannot open/read), SF_EFORMAT (not a regular file,
 * truncated, bad header length, malformed JSON, bad dtype/shape/offsets),
 * SF_ENOMEM. */
int sf_tensorfile_read(const char *path, sf_tensorfile **out, uint8_t sha256[32], sf_err *err);

/* The same on bytes in memory; `name` is used in messages only. The bytes
 * are copied, so the caller may free them after the call. */
int sf_tensorfile_parse(const uint8_t *bytes, size_t n, const char *name, sf_tensorfile **out,
                        sf_err *err);

/* Free a tensor file and every tensor and string it owns. NULL is a no-op. */
void sf_tensorfile_free(sf_tensorfile *tf);

/* The tensor called `name`, or NULL. Tensors are kept in header order. */
const sf_tensor *sf_tensorfile_find(const sf_tensorfile *tf, const char *name);
int sf_tensorfile_count(const sf_tensorfile *tf);
const sf_tensor *sf_tensorfile_at(const sf_tensorfile *tf, int i);

/* Metadata value for `key`, or NULL; and iteration over all entries. */
const char *sf_tensorfile_meta(const sf_tensorfile *tf, const char *key);
int sf_tensorfile_meta_count(const sf_tensorfile *tf);
sf_meta_kv sf_tensorfile_meta_at(const sf_tensorfile *tf, int i);

/* Write a safetensors file: header JSON with sorted keys and no
 * whitespace, padded with spaces to a multiple of 8 bytes; tensor data
 * ordered by descending dtype size then name, so every tensor is naturally
 * aligned. The same inputs give the same bytes. The file is written under
 * `path`.tmp and renamed, so a reader never sees half a file. Errors:
 * SF_EINVAL (duplicate or empty name, size/shape mismatch), SF_EIO. */
int sf_tensorfile_write(const char *path, const sf_meta_kv *meta, int n_meta,
                        const sf_tensor *tensors, int n_tensors, sf_err *err);

/* ---------------------------------------------------------------------------
 * Position sets (golden positions, fixtures, benchmark inputs)
 * ------------------------------------------------------------------------- */

/* A set of positions stored padded to the tokenizer's capacities. In a
 * tensor file, for G positions and a name prefix P ("" or "canary."):
 *   P n_tokens I32 [G]         P n_queries I32 [G]
 *   P type U8 [G,128]          P cat U16 [G,128,4]       P cont F32 [G,128,16]
 *   P query U16 [G,80,2]       P qcont F32 [G,80,8]
 * Padding entries are zero. python/spirefleet/model.py reads and writes
 * the same layout (and also reads .npz files with these array names). */
typedef struct sf_positions sf_positions;

/* Read the positions stored under `prefix` in a tensor file and validate
 * every one (sf_pos_validate). Errors name the file, the tensor or the
 * position: SF_ENOTFOUND (a tensor is missing), SF_EFORMAT (wrong dtype or
 * shape), SF_EINVAL (a position out of range). */
int sf_positions_from_file(const sf_tensorfile *tf, const char *prefix, sf_positions **out,
                           sf_err *err);

/* Read a positions file (metadata format "spirefleet-positions", no
 * prefix). */
int sf_positions_read(const char *path, sf_positions **out, sf_err *err);

/* Deterministic synthetic positions: valid, varied (token counts from 1 to
 * SF_FEAT_MAX_TOKENS, query counts from 0 to SF_FEAT_MAX_QUERIES, every
 * token type, ids across each vocabulary), drawn from `seed` with
 * sf_mix64. Stand-ins until engine positions exist; never game-realistic. */
int sf_positions_synthetic(uint64_t seed, int count, sf_positions **out, sf_err *err);

/* An empty set with room for `cap` positions; fill with sf_positions_add. */
int sf_positions_create(int cap, sf_positions **out, sf_err *err);

/* Append a copy of `p` (validated first). Errors: SF_EINVAL, SF_EFULL. */
int sf_positions_add(sf_positions *ps, const sf_pos *p, sf_err *err);

int sf_positions_count(const sf_positions *ps);

/* A view of position `i` (valid while `ps` lives). */
sf_pos sf_positions_get(const sf_positions *ps, int i);

/* Describe the positions as tensors named with `prefix` (for writing a
 * bundle or a positions file). `names` must hold 7 * 32 bytes for the
 * tensor names; `out` receives 7 tensors pointing into `ps`. Returns 7. */
int sf_positions_tensors(const sf_positions *ps, const char *prefix, char names[7][32],
                         sf_tensor out[7]);

/* Write a positions file (format "spirefleet-positions"). */
int sf_positions_write(const sf_positions *ps, const char *path, sf_err *err);

void sf_positions_free(sf_positions *ps);

/* ---------------------------------------------------------------------------
 * Canary tolerances (docs/model.md "Canary tolerances")
 * ------------------------------------------------------------------------- */

/* Arithmetic of the cuda backend's matrix products (the cpu backend is
 * always fp32): FP32 with TF32 off, TF32 tensor cores, or BF16 inputs with
 * fp32 accumulation. Each has its own canary tolerances. */
typedef enum sf_precision { SF_PREC_FP32 = 0, SF_PREC_TF32 = 1, SF_PREC_BF16 = 2 } sf_precision;
#define SF_PRECISIONS 3

/* The outputs the canary compares, each with its own tolerance: the 21
 * value probabilities, p_win, the 20 forecasts (label units: HP, damage,
 * counts) and the policy logits of the legal queries. */
typedef enum sf_canary_output {
    SF_CANARY_VALUE = 0,
    SF_CANARY_P_WIN = 1,
    SF_CANARY_FORECAST = 2,
    SF_CANARY_POLICY = 3
} sf_canary_output;
#define SF_CANARY_OUTPUTS 4

/* One output's tolerance, in that output's units: an element passes when
 *   |got - want| <= abs + rel * |want|.
 * A bundle's values satisfy 0 < abs <= 1e6 and 0 <= rel <= 1. */
typedef struct sf_tol {
    double abs, rel;
} sf_tol;

/* The tolerances of one precision, out[] indexed by sf_canary_output. */
typedef struct sf_canary_tol {
    sf_tol out[SF_CANARY_OUTPUTS];
} sf_canary_tol;

/* "value", "p_win", "forecast", "policy": the names used in the metadata,
 * in messages and by python/spirefleet/model.py (OUTPUT_ARRAYS). Static
 * storage; "?" for a value out of range. */
const char *sf_canary_output_name(sf_canary_output o);

/* The metadata key holding precision p's tolerances: "canary_tolerance_"
 * then sf_precision_name(p), e.g. "canary_tolerance_bf16". Its value is a
 * JSON object with exactly the four output names, each an object with
 * exactly "abs" and "rel" (numbers). Static storage. */
const char *sf_canary_tol_key(sf_precision p);
/* Canary tolerance metadata: SF_CANARY_TOL_KEY_PREFIX + precision name
 * (sf_canary_tol_key), the format-1 key, the provenance entry (not read),
 * and the two parts of each output's tolerance. Python's model.py takes
 * them from the generated spirefleet/facts.py. */
#define SF_CANARY_TOL_KEY_PREFIX "canary_tolerance_"
#define SF_CANARY_TOL_V1_KEY     "canary_tolerance"
#define SF_CANARY_TOL_SOURCE_KEY "canary_tolerance_source"
#define SF_CANARY_TOL_ABS        "abs"
#define SF_CANARY_TOL_REL        "rel"

/* The rule of the measured default tolerances (sf_canary_tol_measure),
 * indexed by sf_precision: headroom over the emulated error, the rel part
 * (about two roundings of a GEMM input: 2^-9 for truncated tf32, 2^-7 for
 * bf16; 1e-5 for fp32) and the floor of the abs part. Python's exporter
 * (python/spirefleet/model.py: TOL_MARGIN, TOL_REL, TOL_ABS_FLOOR) uses the
 * same numbers; tests/integration/test_canary_tolerance.py checks they
 * agree. */
#define SF_CANARY_TOL_MARGIN 4.0
extern const double sf_canary_tol_rel[SF_PRECISIONS];       /* 1e-5, 2e-3, 8e-3 */
extern const double sf_canary_tol_abs_floor[SF_PRECISIONS]; /* 1e-4, 1e-3, 1e-2 */

/* Where a comparison came closest to (or went furthest beyond) its limit. */
typedef struct sf_out_cmp {
    double ratio;                               /* |got - want| / limit; <= 1 passes; INFINITY for a
                                                 * NaN or for different n_queries               */
    double err;                                 /* |got - want| at that element                   */
    double limit;                               /* abs + rel * |want| at that element             */
    double max_abs_err;                         /* the largest |got - want| over every element    */
    double head_max_abs_err[SF_CANARY_OUTPUTS]; /* the same per output      */
    double head_max_ratio[SF_CANARY_OUTPUTS];   /* largest ratio per output */
    sf_canary_output head;                      /* the output whose tolerance applied            */
    char where[40];                             /* "value[3]", "p_win", "forecast[1][4]",
                                                 * "policy[7]" or "n_queries"                     */
    float got, want;
} sf_out_cmp;

/* Compare `got` with `want` element by element under `tol` (one
 * precision's tolerances): value[0..21), p_win, forecast[4][5] and
 * policy[0..n_queries). Fills *cmp (required) with the element of the
 * largest ratio |got - want| / (abs + rel |want|) and returns that ratio:
 * <= 1 means every element is within its tolerance. Never fails. */
double sf_net_out_compare(const sf_net_out *got, const sf_net_out *want, const sf_canary_tol *tol,
                          sf_out_cmp *cmp);

/* ---------------------------------------------------------------------------
 * Architecture and bundles
 * ------------------------------------------------------------------------- */

/* Sizes of the network (docs/model.md "Network"). */
typedef struct sf_arch {
    char name[32];  /* "tiny", "base" or a custom label                 */
    int d_model;    /* token width d                                     */
    int n_layers;   /* transformer blocks L                              */
    int n_heads;    /* attention heads H; d_model % n_heads == 0         */
    int d_ff;       /* MLP hidden width (4d in the presets)              */
    int d_value;    /* value head hidden width                           */
    int d_forecast; /* forecast head hidden width                        */
    int d_policy;   /* policy MLP hidden width                           */
} sf_arch;

/* The named presets: "tiny" (d 64, L 2, H 4) for CPU, demos and tests;
 * "base" (d 256, L 8, H 8) for GPUs. Errors: SF_ENOTFOUND. */
int sf_arch_preset(const char *name, sf_arch *out);

/* Check the sizes are usable (positive, d divisible by H, within limits).
 * Errors: SF_EINVAL naming the field. */
int sf_arch_validate(const sf_arch *a, sf_err *err);

/* Number of float parameters, and matrix-multiply FLOPs (2 per multiply-
 * add) to evaluate a position of `n_tokens` tokens and `n_queries`
 * queries; for benchmarks. */
int64_t sf_arch_params(const sf_arch *a);
double sf_arch_flops(const sf_arch *a, int n_tokens, int n_queries);

typedef struct sf_bundle sf_bundle;

/* Load a model bundle. With `pin_sha256` (64 hex digits, either case: pins
 * are typed by people) non-NULL, the SHA-256 of the file must equal it.
 * Errors, each naming the file and what is wrong; none falls back to
 * anything:
 *   SF_EIO        the file cannot be read
 *   SF_ECORRUPT   SHA-256 mismatch (both digests in the message)
 *   SF_EFORMAT    not a regular file / not a safetensors file / not a
 *                 spirefleet model bundle
 *   SF_EVERSION   unsupported bundle format or tokenizer version, or
 *                 tokenizer sizes that differ from engine/engine.h
 *   SF_ENOTFOUND  a weight tensor is missing (its name and expected shape)
 *   SF_EFORMAT    a tensor has the wrong dtype or shape, an unexpected
 *                 tensor is present, a weight is not finite, or the canary
 *                 is incomplete or inconsistent
 *   SF_EINVAL     the pin is not 64 hex digits, or a golden position is out
 *                 of range
 *   SF_ECONFIG    an architecture key in the metadata is missing or bad */
int sf_bundle_load(const char *path, const char *pin_sha256, sf_bundle **out, sf_err *err);

/* The same on bytes in memory (tests, fuzzing). `name` appears in messages. */
int sf_bundle_load_mem(const uint8_t *bytes, size_t n, const char *name, const char *pin_sha256,
                       sf_bundle **out, sf_err *err);

void sf_bundle_free(sf_bundle *b);

/* The file's SHA-256 as 64 lowercase hex digits (the model's identity). */
const char *sf_bundle_sha256(const sf_bundle *b);
const char *sf_bundle_path(const sf_bundle *b);
const sf_arch *sf_bundle_arch(const sf_bundle *b);
const sf_tensorfile *sf_bundle_file(const sf_bundle *b);

/* The weight tensor `name` (F32, validated shape), or NULL. */
const float *sf_bundle_weight(const sf_bundle *b, const char *name);

/* The canary: golden positions (NULL when the bundle has none) and their
 * expected outputs, `i` < sf_positions_count(canary). */
const sf_positions *sf_bundle_canary(const sf_bundle *b);
void sf_bundle_canary_expected(const sf_bundle *b, int i, sf_net_out *out);

/* The canary tolerances the bundle records for precision `p` (metadata
 * sf_canary_tol_key(p)), owned by the bundle; NULL when it has no canary.
 * For a format-1 bundle they are its one absolute "canary_tolerance" t:
 * {abs t, rel 0} on every output in fp32 and {abs max(t, 0.02), rel 0} in
 * tf32 and bf16, exactly what format 1 meant. */
const sf_canary_tol *sf_bundle_canary_tolerance(const sf_bundle *b, sf_precision p);

/* The bundle's metadata "format_version": 1 or SF_BUNDLE_FORMAT_VERSION. */
int sf_bundle_format_version(const sf_bundle *b);

/* Write a bundle (format SF_BUNDLE_FORMAT_VERSION): `arch`, the weights
 * (every name of the architecture, F32, in the documented shapes),
 * optional golden positions with their expected outputs (both NULL for
 * none) with `tolerances`[SF_PRECISIONS] (indexed by sf_precision; required
 * with a canary, ignored without: sf_canary_tol_measure() gives the
 * default), and extra metadata (may be NULL; a "canary_tolerance_source"
 * entry there says where the tolerances came from). Errors: SF_EINVAL
 * (arch, a missing or mis-shaped weight, missing or out-of-range
 * tolerances, naming the precision and output), SF_EIO. */
int sf_bundle_write(const char *path, const sf_arch *arch, const sf_tensor *weights, int n_weights,
                    const sf_positions *canary, const sf_net_out *expected,
                    const sf_canary_tol *tolerances, const sf_meta_kv *extra, int n_extra,
                    sf_err *err);

/* The default canary tolerances of a bundle, measured (docs/model.md
 * "Canary tolerances"): the weights of `b` evaluate `canary` on the cpu
 * backend once per precision with its matrix products emulated (fp32 as
 * is; tf32 with every GEMM input truncated to 10 mantissa bits; bf16 with
 * every GEMM input rounded to nearest even on 7), each result is compared
 * with `expected` (count = sf_positions_count(canary)), and per output o
 * of precision p
 *   rel = sf_canary_tol_rel[p]
 *   abs = max(sf_canary_tol_abs_floor[p],
 *             max over elements of (SF_CANARY_TOL_MARGIN |err| - rel |want|)),
 * abs rounded up to two significant digits, so every measured element has
 * SF_CANARY_TOL_MARGIN times its error as headroom.
 * `out`[SF_PRECISIONS] receives the tolerances; `measured` (may be NULL)
 * the largest |error| per precision and output. `b` may lack a canary.
 * Errors: SF_ENOMEM, SF_EINVAL (a position of `canary` out of range). */
int sf_canary_tol_measure(const sf_bundle *b, const sf_positions *canary,
                          const sf_net_out *expected, sf_canary_tol *out,
                          double measured[SF_PRECISIONS][SF_CANARY_OUTPUTS], sf_err *err);

/* Every weight name and shape of `arch`, in a fixed order, for writers and
 * tools. Calls `fn` once per weight; returns the number of weights. */
typedef void (*sf_arch_weight_fn)(void *ctx, const char *name, int ndim, const int64_t *shape);
int sf_arch_weights(const sf_arch *a, sf_arch_weight_fn fn, void *ctx);

/* A deterministic random-weight bundle for machines without PyTorch
 * (benchmarks, GPU checks): weights drawn from `seed` (sf_mix64, the
 * scales of docs/model.md), `canary_n` synthetic golden positions,
 * expected outputs computed by the cpu backend, and canary tolerances
 * measured on them (sf_canary_tol_measure). The PyTorch init of
 * python/spirefleet/model.py is the reference; this one exists so a
 * bundle can be made where Python is not installed. */
int sf_bundle_write_random(const char *path, const sf_arch *arch, uint64_t seed, int canary_n,
                           sf_err *err);

/* ---------------------------------------------------------------------------
 * The network
 * ------------------------------------------------------------------------- */
typedef enum sf_backend { SF_BACKEND_CPU = 0, SF_BACKEND_CUDA = 1 } sf_backend;

typedef struct sf_net_opts {
    sf_backend backend;
    sf_precision precision; /* cuda only                                   */
    int max_batch;          /* cuda: most positions per sf_net_eval (0 = 1024) */
    int device;             /* cuda device index                           */
    int threads;            /* cpu: worker threads over positions (0 or 1 = the
                             * calling thread only)                         */
} sf_net_opts;

typedef struct sf_net sf_net;

/* Parse "cpu"/"cuda" and "fp32"/"tf32"/"bf16". Errors: SF_EINVAL. */
int sf_backend_parse(const char *s, sf_backend *out);
int sf_precision_parse(const char *s, sf_precision *out);
const char *sf_backend_name(sf_backend b);
const char *sf_precision_name(sf_precision p);

/* Bind `b` to a backend. The bundle must outlive the net (the cpu backend
 * reads its weights in place; the cuda backend uploads them once here).
 * Errors: SF_EUNSUPPORTED when the cuda backend is not built in or no
 * usable GPU exists (the message says which, with the CUDA error text);
 * SF_ENOMEM; SF_EINVAL for bad options. */
int sf_net_create(const sf_bundle *b, const sf_net_opts *opts, sf_net **out, sf_err *err);

/* Evaluate `n` positions into out[0..n). Every position is validated
 * first; an invalid one fails the call with SF_EINVAL naming its index and
 * field, and nothing is evaluated. The cpu backend accepts any n; the cuda
 * backend at most max_batch (SF_EFULL beyond). Other errors: SF_EIO for a
 * device failure (CUDA error text in the message). */
int sf_net_eval(sf_net *net, const sf_pos *pos, int n, sf_net_out *out, sf_err *err);

const sf_arch *sf_net_arch(const sf_net *net);
sf_backend sf_net_backend(const sf_net *net);
sf_precision sf_net_precision(const sf_net *net);

/* The tolerances the canary uses on this net: the bundle's own for the
 * net's precision (sf_net_precision; always fp32 on the cpu backend), or
 * NULL when the bundle has no canary. */
const sf_canary_tol *sf_net_canary_tolerance(const sf_net *net, const sf_bundle *b);

/* Free the net (device memory included). NULL is a no-op. */
void sf_net_free(sf_net *net);

/* The outcome of a canary run: the tolerances applied, the largest error,
 * the element nearest to (or furthest beyond) its limit, and the verdict. */
typedef struct sf_canary_report {
    int positions;
    int passed;
    sf_precision precision;                     /* whose tolerances applied                     */
    sf_canary_tol tol;                          /* those tolerances                             */
    double max_abs_err;                         /* largest |got - want| over every output        */
    double max_ratio;                           /* largest |got - want| / (abs + rel |want|):
                                                 * <= 1 passes                                   */
    double head_max_abs_err[SF_CANARY_OUTPUTS]; /* the same per output       */
    double head_max_ratio[SF_CANARY_OUTPUTS];
    int worst_position; /* golden position of max_ratio (-1: none)          */
    sf_out_cmp worst;   /* its element: name, values, error, limit          */
} sf_canary_report;

/* Run the bundle's golden positions through `net` and compare each output
 * element with its expected value under the bundle's tolerances for the
 * net's precision (sf_net_canary_tolerance). Returns SF_OK when every
 * element is within its tolerance; SF_ECORRUPT when one is not, with a
 * message naming the bundle, backend, precision, golden position, output
 * element, both values, the error, the limit and both tolerance parts
 * ("... golden position 4 output p_win = 0.6, expected 0.5: |error| 0.1 >
 * limit 0.0001 (fp32 tolerance of p_win: abs 0.0001 + rel 1e-05 x
 * |expected|)"); SF_ENOTFOUND when the bundle has no canary; or an
 * evaluation error. `rep` (may be NULL) is filled in all of the first
 * three cases. */
int sf_net_canary(sf_net *net, const sf_bundle *b, sf_canary_report *rep, sf_err *err);

/* The prior over a position's legal actions: softmax of policy[0..n_queries)
 * into priors[0..n_queries), in query order (= the engine's action order
 * when the tokenizer made the queries). With value[] this is what a search
 * evaluator answers (search/search.h: sf_eval_answer dist and priors). */
void sf_net_out_priors(const sf_net_out *o, float *priors);

/* Largest |a - b| over every output of two results with the same queries;
 * `where` (may be NULL, 40 bytes) receives the output's name. */
double sf_net_out_max_diff(const sf_net_out *a, const sf_net_out *b, char *where);

#endif
