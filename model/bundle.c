/*
 * bundle.c — model bundles: architecture presets, the weight list, loading
 * with SHA-256 pinning and strict validation, writing, and the canary.
 *
 * A bundle is a safetensors file whose metadata says what the weights mean
 * (docs/model.md "Model bundle"). The loader trusts nothing: every key it
 * needs must be present and equal to what this build computes, every weight
 * must be there with its exact shape, nothing unexpected may be there, and
 * the identity is the SHA-256 of the bytes, so a config that pins a digest
 * gets exactly that model or an error — never a silent substitute.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "model/internal.h"
#include "model/model.h"

struct sf_bundle {
    sf_tensorfile *tf;
    char sha256[65];
    char *path;
    sf_arch arch;
    sf_positions *canary; /* NULL when the bundle has none */
    sf_net_out *expected; /* [canary count]               */
    int format_version;
    sf_canary_tol tol[SF_PRECISIONS]; /* with a canary         */
};

/* ---------------------------------------------------------------------------
 * Architecture
 * ------------------------------------------------------------------------- */
int sf_arch_preset(const char *name, sf_arch *out) {
    static const sf_arch presets[] = {
        {"tiny", 64, 2, 4, 256, 64, 64, 64},
        {"base", 256, 8, 8, 1024, 256, 256, 256},
    };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].name, name) == 0) {
            *out = presets[i];
            return SF_OK;
        }
    return SF_ENOTFOUND;
}

int sf_arch_validate(const sf_arch *a, sf_err *err) {
    const struct {
        const char *key;
        int v, hi;
    } f[] = {
        {"d_model", a->d_model, SF_ARCH_MAX_DMODEL},
        {"n_layers", a->n_layers, SF_ARCH_MAX_LAYERS},
        {"n_heads", a->n_heads, 256},
        {"d_ff", a->d_ff, SF_ARCH_MAX_HIDDEN},
        {"d_value", a->d_value, SF_ARCH_MAX_HIDDEN},
        {"d_forecast", a->d_forecast, SF_ARCH_MAX_HIDDEN},
        {"d_policy", a->d_policy, SF_ARCH_MAX_HIDDEN},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].v < 1 || f[i].v > f[i].hi)
            return sf_err_set(err, SF_EINVAL, "arch %s = %d out of range 1..%d", f[i].key, f[i].v,
                              f[i].hi);
    if (a->d_model % a->n_heads != 0)
        return sf_err_set(err, SF_EINVAL, "arch d_model %d is not divisible by n_heads %d",
                          a->d_model, a->n_heads);
    return SF_OK;
}

int sf_arch_weights(const sf_arch *a, sf_arch_weight_fn fn, void *ctx) {
    char name[96];
    int64_t d = a->d_model, n = 0;
#define W1(nm, s0)              \
    do {                        \
        int64_t sh[1] = {(s0)}; \
        fn(ctx, nm, 1, sh);     \
        n++;                    \
    } while (0)
#define W2(nm, s0, s1)                \
    do {                              \
        int64_t sh[2] = {(s0), (s1)}; \
        fn(ctx, nm, 2, sh);           \
        n++;                          \
    } while (0)
    W2("embed.type.weight", SF_FEAT_NTYPES, d);
    for (int j = 0; j < SF_FEAT_NCAT; j++) {
        snprintf(name, sizeof name, "embed.cat%d.weight", j);
        W2(name, sf_feat_vocab[j], d);
    }
    W2("embed.cont.weight", d, SF_FEAT_NCONT);
    W1("embed.cont.bias", d);
    for (int l = 0; l < a->n_layers; l++) {
        const struct {
            const char *sub;
            int64_t s0, s1; /* s1 == 0: a vector */
        } blk[] = {
            {"ln1.weight", d, 0},           {"ln1.bias", d, 0},
            {"attn.qkv.weight", 3 * d, d},  {"attn.qkv.bias", 3 * d, 0},
            {"attn.out.weight", d, d},      {"attn.out.bias", d, 0},
            {"ln2.weight", d, 0},           {"ln2.bias", d, 0},
            {"mlp.fc1.weight", a->d_ff, d}, {"mlp.fc1.bias", a->d_ff, 0},
            {"mlp.fc2.weight", d, a->d_ff}, {"mlp.fc2.bias", d, 0},
        };
        for (size_t i = 0; i < sizeof blk / sizeof blk[0]; i++) {
            snprintf(name, sizeof name, "blocks.%d.%s", l, blk[i].sub);
            if (blk[i].s1)
                W2(name, blk[i].s0, blk[i].s1);
            else
                W1(name, blk[i].s0);
        }
    }
    W1("ln_f.weight", d);
    W1("ln_f.bias", d);
    W2("value.fc.weight", a->d_value, d);
    W1("value.fc.bias", a->d_value);
    W2("value.bins.weight", SF_NET_VALUE_BINS, a->d_value);
    W1("value.bins.bias", SF_NET_VALUE_BINS);
    W2("value.win.weight", 1, a->d_value);
    W1("value.win.bias", 1);
    W2("forecast.fc.weight", a->d_forecast, d);
    W1("forecast.fc.bias", a->d_forecast);
    W2("forecast.out.weight", SF_NET_FORECASTS, a->d_forecast);
    W1("forecast.out.bias", SF_NET_FORECASTS);
    W2("policy.fc1.weight", a->d_policy, SF_POLICY_IN(d));
    W1("policy.fc1.bias", a->d_policy);
    W2("policy.fc2.weight", 1, a->d_policy);
    W1("policy.fc2.bias", 1);
#undef W1
#undef W2
    return (int)n;
}

static void count_params(void *ctx, const char *name, int ndim, const int64_t *shape) {
    (void)name;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    *(int64_t *)ctx += n;
}

int64_t sf_arch_params(const sf_arch *a) {
    int64_t n = 0;
    sf_arch_weights(a, count_params, &n);
    return n;
}

double sf_arch_flops(const sf_arch *a, int T, int Q) {
    double d = a->d_model, t = T, q = Q, dh = (double)a->d_model / a->n_heads;
    double per_layer = 2.0 * t * d * (3 * d) /* qkv */ + 2.0 * t * d * d /* out */ +
                       2.0 * 2.0 * t * d * a->d_ff /* mlp */ +
                       2.0 * 2.0 * a->n_heads * t * t * dh /* scores and weighted sum */;
    double embed = 2.0 * t * SF_FEAT_NCONT * d;
    double heads = 2.0 * d * a->d_value + 2.0 * a->d_value * (SF_NET_VALUE_BINS + 1) +
                   2.0 * d * a->d_forecast + 2.0 * a->d_forecast * SF_NET_FORECASTS +
                   2.0 * q * SF_POLICY_IN(d) * a->d_policy + 2.0 * q * a->d_policy;
    return embed + a->n_layers * per_layer + heads;
}

/* ---------------------------------------------------------------------------
 * Loading
 * ------------------------------------------------------------------------- */
void sf_bundle_free(sf_bundle *b) {
    if (!b)
        return;
    sf_tensorfile_free(b->tf);
    sf_positions_free(b->canary);
    free(b->expected);
    free(b->path);
    free(b);
}

const char *sf_bundle_sha256(const sf_bundle *b) {
    return b->sha256;
}
const char *sf_bundle_path(const sf_bundle *b) {
    return b->path;
}
const sf_arch *sf_bundle_arch(const sf_bundle *b) {
    return &b->arch;
}
const sf_tensorfile *sf_bundle_file(const sf_bundle *b) {
    return b->tf;
}
const sf_positions *sf_bundle_canary(const sf_bundle *b) {
    return b->canary;
}
const sf_canary_tol *sf_bundle_canary_tolerance(const sf_bundle *b, sf_precision p) {
    return b->canary && (unsigned)p < SF_PRECISIONS ? &b->tol[p] : NULL;
}
int sf_bundle_format_version(const sf_bundle *b) {
    return b->format_version;
}

void sf_bundle_canary_expected(const sf_bundle *b, int i, sf_net_out *out) {
    *out = b->expected[i];
}

const float *sf_bundle_weight(const sf_bundle *b, const char *name) {
    const sf_tensor *t = sf_tensorfile_find(b->tf, name);
    return t && t->dtype == SF_DT_F32 ? (const float *)t->data : NULL;
}

static int meta_int(const sf_tensorfile *tf, const char *key, int *out, sf_err *err) {
    const char *v = sf_tensorfile_meta(tf, key);
    if (!v)
        return sf_err_set(err, SF_ECONFIG, "metadata \"%s\" is missing", key);
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end != '\0' || x < -1000000000L || x > 1000000000L)
        return sf_err_set(err, SF_ECONFIG, "metadata \"%s\" = \"%.32s\" is not an integer", key, v);
    *out = (int)x;
    return SF_OK;
}

/* Metadata `key` must equal `want` exactly; `code` on mismatch. */
static int meta_equal(const sf_tensorfile *tf, const char *key, const char *want, int code,
                      sf_err *err) {
    const char *v = sf_tensorfile_meta(tf, key);
    if (!v || strcmp(v, want) != 0)
        return sf_err_set(err, code, "metadata \"%s\" is \"%.80s\"; this build reads \"%s\"", key,
                          v ? v : "(missing)", want);
    return SF_OK;
}

typedef struct {
    const sf_tensorfile *tf;
    sf_err *err;
    int rc;
} check_ctx;

static void fmt_shape(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t p = 0;
    p += (size_t)snprintf(buf + p, cap - p, "[");
    for (int i = 0; i < ndim && p < cap; i++)
        p += (size_t)snprintf(buf + p, cap - p, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (p < cap)
        snprintf(buf + p, cap - p, "]");
}

static void check_weight(void *vctx, const char *name, int ndim, const int64_t *shape) {
    check_ctx *c = vctx;
    if (c->rc != SF_OK)
        return;
    char want[96], got[96];
    fmt_shape(want, sizeof want, ndim, shape);
    const sf_tensor *t = sf_tensorfile_find(c->tf, name);
    if (!t) {
        c->rc =
            sf_err_set(c->err, SF_ENOTFOUND, "missing tensor '%s' (expected F32 %s)", name, want);
        return;
    }
    fmt_shape(got, sizeof got, t->ndim, t->shape);
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++)
        same = t->shape[i] == shape[i];
    if (t->dtype != SF_DT_F32 || !same) {
        c->rc = sf_err_set(c->err, SF_EFORMAT, "tensor '%s' is %s %s, expected F32 %s", name,
                           sf_dtype_name(t->dtype), got, want);
        return;
    }
    const float *v = t->data;
    size_t n = t->nbytes / 4;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) {
            c->rc =
                sf_err_set(c->err, SF_EFORMAT, "tensor '%s' element %zu is not finite", name, i);
            return;
        }
}

typedef struct {
    const char *name;
    int found;
} find_ctx;

static void find_weight(void *vctx, const char *name, int ndim, const int64_t *shape) {
    (void)ndim;
    (void)shape;
    find_ctx *f = vctx;
    if (strcmp(f->name, name) == 0)
        f->found = 1;
}

static const char *const canary_out_names[4] = {"canary.value", "canary.p_win", "canary.forecast",
                                                "canary.policy"};

static int is_canary_name(const char *name) {
    static const char *const pos[7] = {"n_tokens", "n_queries", "type", "cat",
                                       "cont",     "query",     "qcont"};
    if (strncmp(name, "canary.", 7) != 0)
        return 0;
    for (int i = 0; i < 7; i++)
        if (strcmp(name + 7, pos[i]) == 0)
            return 1;
    for (int i = 0; i < 4; i++)
        if (strcmp(name, canary_out_names[i]) == 0)
            return 1;
    return 0;
}

/* ---------------------------------------------------------------------------
 * Canary tolerances in the metadata
 * ------------------------------------------------------------------------- */

/* NULL when a tolerance's parts lie in their ranges (abs in (0, 1e6], rel
 * in [0, 1]), else what is wrong, for a message. */
static const char *tol_part_problem(double a, double r) {
    if (!isfinite(a) || !(a > 0.0) || a > 1e6)
        return "\"abs\" must be a number in (0, 1e6]";
    if (!isfinite(r) || !(r >= 0.0) || r > 1.0)
        return "\"rel\" must be a number in [0, 1]";
    return NULL;
}

/* Parse one precision's JSON object: exactly the four outputs, each
 * exactly {"abs": number, "rel": number}. */
static int parse_tol(const char *key, const char *text, sf_canary_tol *out, sf_err *err) {
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    int rc = SF_OK;
    if (!root) {
        return sf_err_set(err, SF_EFORMAT, "metadata \"%s\" is not JSON (%s at column %d)", key,
                          je.text, je.column);
    }
    if (!json_is_object(root)) {
        rc = sf_err_set(err, SF_EFORMAT, "metadata \"%s\" is not a JSON object", key);
        goto done;
    }
    const char *name;
    json_t *v;
    json_object_foreach(root, name, v) {
        int known = 0;
        for (int o = 0; o < SF_CANARY_OUTPUTS; o++)
            known |= strcmp(name, sf_canary_output_name((sf_canary_output)o)) == 0;
        if (!known) {
            rc = sf_err_set(err, SF_EFORMAT,
                            "metadata \"%s\": unknown output \"%.40s\" (expected value, p_win, "
                            "forecast, policy)",
                            key, name);
            goto done;
        }
    }
    for (int o = 0; o < SF_CANARY_OUTPUTS; o++) {
        const char *on = sf_canary_output_name((sf_canary_output)o);
        json_t *t = json_object_get(root, on);
        if (!t) {
            rc = sf_err_set(err, SF_EFORMAT, "metadata \"%s\": output \"%s\" is missing", key, on);
            goto done;
        }
        json_t *ja = json_is_object(t) ? json_object_get(t, SF_CANARY_TOL_ABS) : NULL;
        json_t *jr = json_is_object(t) ? json_object_get(t, SF_CANARY_TOL_REL) : NULL;
        if (!json_is_number(ja) || !json_is_number(jr) || json_object_size(t) != 2) {
            rc = sf_err_set(err, SF_EFORMAT,
                            "metadata \"%s\": output \"%s\" must be {\"abs\": number, "
                            "\"rel\": number} and nothing else",
                            key, on);
            goto done;
        }
        double a = json_number_value(ja), r = json_number_value(jr);
        const char *why = tol_part_problem(a, r);
        if (why) {
            rc = sf_err_set(err, SF_EFORMAT,
                            "metadata \"%s\": output \"%s\": %s (is abs %g, rel %g)", key, on, why,
                            a, r);
            goto done;
        }
        out->out[o] = (sf_tol){a, r};
    }
done:
    json_decref(root);
    return rc;
}

/* The tolerances of a bundle with a canary. Format 2: one JSON object per
 * precision; the format-1 key is refused, so no bundle says two things.
 * Format 1: its one absolute tolerance, mapped as evald.h says. */
static int load_tolerances(sf_bundle *b, sf_err *err) {
    const char *v1 = sf_tensorfile_meta(b->tf, SF_CANARY_TOL_V1_KEY);
    if (b->format_version == 1) {
        char *end = NULL;
        double tv = v1 ? strtod(v1, &end) : -1.0;
        if (!v1 || end == v1 || *end != '\0' || !(tv > 0.0) || tv > 1.0)
            return sf_err_set(err, SF_EFORMAT,
                              "metadata \"%s\" is \"%.32s\"; need a number in (0, 1] (bundle "
                              "format 1)",
                              SF_CANARY_TOL_V1_KEY, v1 ? v1 : "(missing)");
        for (int p = 0; p < SF_PRECISIONS; p++)
            for (int o = 0; o < SF_CANARY_OUTPUTS; o++)
                b->tol[p].out[o] = (sf_tol){p == SF_PREC_FP32 || tv >= 2e-2 ? tv : 2e-2, 0.0};
        return SF_OK;
    }
    if (v1)
        return sf_err_set(err, SF_EFORMAT,
                          "metadata \"%s\" is a bundle format 1 key; format %d records "
                          "\"%s\", \"%s\" and \"%s\" instead",
                          SF_CANARY_TOL_V1_KEY, b->format_version, sf_canary_tol_key(SF_PREC_FP32),
                          sf_canary_tol_key(SF_PREC_TF32), sf_canary_tol_key(SF_PREC_BF16));
    for (int p = 0; p < SF_PRECISIONS; p++) {
        const char *key = sf_canary_tol_key((sf_precision)p);
        const char *text = sf_tensorfile_meta(b->tf, key);
        if (!text)
            return sf_err_set(err, SF_EFORMAT,
                              "metadata \"%s\" is missing (the canary's %s tolerances)", key,
                              sf_precision_name((sf_precision)p));
        int rc = parse_tol(key, text, &b->tol[p], err);
        if (rc != SF_OK)
            return rc;
    }
    return SF_OK;
}

static int load_canary(sf_bundle *b, sf_err *err) {
    int any = 0;
    for (int i = 0; i < sf_tensorfile_count(b->tf); i++)
        if (strncmp(sf_tensorfile_at(b->tf, i)->name, "canary.", 7) == 0)
            any = 1;
    if (!any)
        return SF_OK;
    int rc = sf_positions_from_file(b->tf, "canary.", &b->canary, err);
    if (rc != SF_OK)
        return rc == SF_ENOTFOUND ? sf_err_prefix(err, "incomplete canary") : rc;
    int64_t g = sf_positions_count(b->canary);
    const int64_t want[4][3] = {{2, SF_NET_VALUE_BINS, 0},
                                {1, 0, 0},
                                {3, SF_NET_HORIZONS, SF_NET_FORECAST_TARGETS},
                                {2, SF_FEAT_MAX_QUERIES, 0}};
    const sf_tensor *t[4];
    for (int i = 0; i < 4; i++) {
        t[i] = sf_tensorfile_find(b->tf, canary_out_names[i]);
        if (!t[i])
            return sf_err_set(err, SF_EFORMAT, "incomplete canary: missing tensor '%s'",
                              canary_out_names[i]);
        int ok = t[i]->dtype == SF_DT_F32 && t[i]->ndim == want[i][0] && t[i]->shape[0] == g;
        for (int k = 1; ok && k < want[i][0]; k++)
            ok = t[i]->shape[k] == want[i][k];
        if (!ok)
            return sf_err_set(err, SF_EFORMAT,
                              "tensor '%s' has the wrong dtype or shape for %lld golden positions",
                              canary_out_names[i], (long long)g);
        const float *v = t[i]->data;
        for (size_t k = 0; k < t[i]->nbytes / 4; k++)
            if (!isfinite(v[k]))
                return sf_err_set(err, SF_EFORMAT, "tensor '%s' element %zu is not finite",
                                  canary_out_names[i], k);
    }
    b->expected = calloc(g > 0 ? (size_t)g : 1, sizeof *b->expected);
    if (!b->expected)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    const float *val = t[0]->data, *pw = t[1]->data, *fc = t[2]->data, *pol = t[3]->data;
    for (int64_t i = 0; i < g; i++) {
        sf_net_out *o = &b->expected[i];
        memcpy(o->value, val + i * SF_NET_VALUE_BINS, sizeof o->value);
        o->p_win = pw[i];
        memcpy(o->forecast, fc + i * SF_NET_FORECASTS, sizeof o->forecast);
        o->n_queries = sf_positions_get(b->canary, (int)i).n_queries;
        memcpy(o->policy, pol + i * SF_FEAT_MAX_QUERIES, sizeof o->policy);
        for (int q = o->n_queries; q < SF_FEAT_MAX_QUERIES; q++)
            o->policy[q] = 0.0f;
    }
    return load_tolerances(b, err);
}

static int validate(sf_bundle *b, sf_err *err) {
    const sf_tensorfile *tf = b->tf;
    int rc;
    const char *fmt = sf_tensorfile_meta(tf, "format");
    if (!fmt || strcmp(fmt, SF_BUNDLE_FORMAT) != 0)
        return sf_err_set(err, SF_EFORMAT,
                          "not a spirefleet model bundle (metadata \"format\" is \"%.40s\", "
                          "expected \"%s\")",
                          fmt ? fmt : "(missing)", SF_BUNDLE_FORMAT);
    int v = 0;
    if ((rc = meta_int(tf, "format_version", &v, err)) != SF_OK)
        return rc;
    if (v != 1 && v != SF_BUNDLE_FORMAT_VERSION)
        return sf_err_set(err, SF_EVERSION,
                          "bundle format version %d unsupported (this build "
                          "reads 1 and %d)",
                          v, SF_BUNDLE_FORMAT_VERSION);
    b->format_version = v;
    const char *tv = sf_tensorfile_meta(tf, "tokenizer_version");
    if (!tv || atoi(tv) != SF_FEAT_VERSION || strspn(tv, "0123456789") != strlen(tv))
        return sf_err_set(err, SF_EVERSION,
                          "unsupported tokenizer version \"%.16s\" (this build reads %d)",
                          tv ? tv : "(missing)", SF_FEAT_VERSION);
    char vocab[64];
    snprintf(vocab, sizeof vocab, "%d,%d,%d,%d", SF_FEAT_VOCAB0, SF_FEAT_VOCAB1, SF_FEAT_VOCAB2,
             SF_FEAT_VOCAB3);
    /* What this build computes, checked in this order: a number (text
     * NULL) or a text, and the status of a mismatch. The heads' targets mean
     * what the label contract of this version says (a value head trained on
     * another bin layout would be misread). */
    const struct {
        const char *key;
        int num;
        const char *text;
        int rc;
    } fixed[] = {
        {"feat_ntypes", SF_FEAT_NTYPES, NULL, SF_EVERSION},
        {"feat_vocab", 0, vocab, SF_EVERSION},
        {"feat_ncont", SF_FEAT_NCONT, NULL, SF_EVERSION},
        {"feat_nqcont", SF_FEAT_NQCONT, NULL, SF_EVERSION},
        {"value_bins", SF_NET_VALUE_BINS, NULL, SF_EFORMAT},
        {"label_schema_version", SF_LABEL_SCHEMA_VERSION, NULL, SF_EVERSION},
        {"forecast_horizons", SF_NET_HORIZONS, NULL, SF_EFORMAT},
        {"forecast_targets", 0, sf_forecast_column_list(), SF_EFORMAT},
        {"gelu", 0, "erf", SF_EFORMAT},
        {"pooling", 0, "mean", SF_EFORMAT},
        {"policy_input", 0, SF_POLICY_INPUT, SF_EFORMAT},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        char num[24];
        const char *want = fixed[i].text;
        if (!want) {
            snprintf(num, sizeof num, "%d", fixed[i].num);
            want = num;
        }
        if ((rc = meta_equal(tf, fixed[i].key, want, fixed[i].rc, err)) != SF_OK)
            return rc;
    }
    const char *eps = sf_tensorfile_meta(tf, "layernorm_eps");
    if (!eps || strtod(eps, NULL) != 1e-5)
        return sf_err_set(err, SF_EFORMAT,
                          "metadata \"layernorm_eps\" is \"%.32s\"; this build computes 1e-05",
                          eps ? eps : "(missing)");

    sf_arch *a = &b->arch;
    const char *name = sf_tensorfile_meta(tf, "arch");
    snprintf(a->name, sizeof a->name, "%s", name ? name : "custom");
    const struct {
        const char *key;
        int *dst;
    } ints[] = {{"d_model", &a->d_model},  {"n_layers", &a->n_layers},
                {"n_heads", &a->n_heads},  {"d_ff", &a->d_ff},
                {"d_value", &a->d_value},  {"d_forecast", &a->d_forecast},
                {"d_policy", &a->d_policy}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if ((rc = meta_int(tf, ints[i].key, ints[i].dst, err)) != SF_OK)
            return rc;
    if ((rc = sf_arch_validate(a, err)) != SF_OK) {
        if (err)
            err->code = SF_ECONFIG;
        return SF_ECONFIG;
    }

    check_ctx c = {tf, err, SF_OK};
    sf_arch_weights(a, check_weight, &c);
    if (c.rc != SF_OK)
        return c.rc;
    for (int i = 0; i < sf_tensorfile_count(tf); i++) {
        const char *tn = sf_tensorfile_at(tf, i)->name;
        if (is_canary_name(tn))
            continue;
        find_ctx f = {tn, 0};
        sf_arch_weights(a, find_weight, &f);
        if (!f.found)
            return sf_err_set(err, SF_EFORMAT,
                              "unexpected tensor '%s' (not a weight of a %d-layer network)", tn,
                              a->n_layers);
    }
    return load_canary(b, err);
}

static int finish_load(sf_tensorfile *tf, const uint8_t sha[32], const char *name, sf_bundle **out,
                       sf_err *err) {
    sf_bundle *b = calloc(1, sizeof *b);
    char *path = malloc(strlen(name) + 1);
    if (!b || !path) {
        free(b);
        free(path);
        sf_tensorfile_free(tf);
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory", name);
    }
    strcpy(path, name);
    b->tf = tf;
    b->path = path;
    sf_hex(sha, 32, b->sha256);
    int rc = validate(b, err);
    if (rc != SF_OK) {
        sf_err_prefix(err, "%s", name);
        sf_bundle_free(b);
        return rc;
    }
    *out = b;
    return SF_OK;
}

int sf_bundle_load(const char *path, const char *pin, sf_bundle **out, sf_err *err) {
    *out = NULL;
    uint8_t *bytes;
    size_t n;
    int rc = sf_evald_read_file(path, &bytes, &n, err);
    if (rc != SF_OK)
        return rc;
    rc = sf_bundle_load_mem(bytes, n, path, pin, out, err);
    free(bytes);
    return rc;
}

int sf_bundle_load_mem(const uint8_t *bytes, size_t n, const char *name, const char *pin,
                       sf_bundle **out, sf_err *err) {
    *out = NULL;
    uint8_t sha[SF_SHA256_BYTES];
    int hrc = sf_sha256(bytes, n, sha, err);
    if (hrc < 0)
        return sf_err_prefix(err, "%s", name);
    /* Check the pin before parsing: a mismatch is reported as such even when
     * the file is not a bundle at all. */
    if (pin) {
        char hex[65], want[65];
        sf_hex(sha, 32, hex);
        /* a pin a person typed: either case (common.h) */
        if (sf_sha256_hex_parse(pin, want, err) != SF_OK)
            return sf_err_prefix(err, "%s: pinned SHA-256", name);
        if (strcmp(want, hex) != 0)
            return sf_err_set(err, SF_ECORRUPT,
                              "%s: SHA-256 mismatch: the file is %s, the pin expects %s", name, hex,
                              want);
    }
    sf_tensorfile *tf;
    int rc = sf_tensorfile_parse(bytes, n, name, &tf, err);
    if (rc != SF_OK)
        return rc;
    return finish_load(tf, sha, name, out, err);
}

/* ---------------------------------------------------------------------------
 * Writing
 * ------------------------------------------------------------------------- */
typedef struct {
    const sf_tensor *given;
    int n_given;
    sf_tensor *out;
    int n;
    int rc;
    sf_err *err;
} collect_ctx;

static void collect_weight(void *vctx, const char *name, int ndim, const int64_t *shape) {
    collect_ctx *c = vctx;
    if (c->rc != SF_OK)
        return;
    for (int i = 0; i < c->n_given; i++) {
        const sf_tensor *t = &c->given[i];
        if (strcmp(t->name, name) != 0)
            continue;
        int same = t->dtype == SF_DT_F32 && t->ndim == ndim;
        for (int k = 0; same && k < ndim; k++)
            same = t->shape[k] == shape[k];
        if (!same) {
            c->rc = sf_err_set(c->err, SF_EINVAL, "weight '%s' has the wrong dtype or shape", name);
            return;
        }
        c->out[c->n++] = *t;
        return;
    }
    c->rc = sf_err_set(c->err, SF_EINVAL, "weight '%s' is missing", name);
}

/* The shortest "%.Ng" that reads back as x exactly. */
static void fmt_shortest(char *buf, size_t cap, double x) {
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

/* One precision's tolerances as the JSON object the loader reads, keys in
 * output order ({"value":{"abs":0.0001,"rel":1e-05},"p_win":...}). */
static void fmt_tol(char *buf, size_t cap, const sf_canary_tol *t) {
    size_t n = 0;
    n += (size_t)snprintf(buf + n, cap - n, "{");
    for (int o = 0; o < SF_CANARY_OUTPUTS && n < cap; o++) {
        char a[32], r[32];
        fmt_shortest(a, sizeof a, t->out[o].abs);
        fmt_shortest(r, sizeof r, t->out[o].rel);
        n +=
            (size_t)snprintf(buf + n, cap - n,
                             "%s\"%s\":{\"" SF_CANARY_TOL_ABS "\":%s,\"" SF_CANARY_TOL_REL "\":%s}",
                             o ? "," : "", sf_canary_output_name((sf_canary_output)o), a, r);
    }
    if (n < cap)
        snprintf(buf + n, cap - n, "}");
}

int sf_bundle_write(const char *path, const sf_arch *arch, const sf_tensor *weights, int n_weights,
                    const sf_positions *canary, const sf_net_out *expected,
                    const sf_canary_tol *tolerances, const sf_meta_kv *extra, int n_extra,
                    sf_err *err) {
    int rc = sf_arch_validate(arch, err);
    if (rc != SF_OK)
        return rc;
    if (canary && !tolerances)
        return sf_err_set(err, SF_EINVAL, "%s: a canary needs its tolerances (one per precision)",
                          path);
    for (int p = 0; canary && p < SF_PRECISIONS; p++)
        for (int o = 0; o < SF_CANARY_OUTPUTS; o++) {
            const sf_tol *t = &tolerances[p].out[o];
            const char *why = tol_part_problem(t->abs, t->rel);
            if (why)
                return sf_err_set(err, SF_EINVAL, "%s: %s tolerance of %s: %s (is abs %g, rel %g)",
                                  path, sf_precision_name((sf_precision)p),
                                  sf_canary_output_name((sf_canary_output)o), why, t->abs, t->rel);
        }
    int n_arch = sf_arch_weights(arch, find_weight, &(find_ctx){"", 0});
    if (n_weights != n_arch)
        return sf_err_set(err, SF_EINVAL, "%s: %d weights given, the architecture has %d", path,
                          n_weights, n_arch);
    int g = canary ? sf_positions_count(canary) : 0;
    sf_tensor *all = calloc((size_t)n_arch + 11, sizeof *all);
    float *val = calloc(g ? (size_t)g * SF_NET_VALUE_BINS : 1, sizeof(float));
    float *pw = calloc(g ? (size_t)g : 1, sizeof(float));
    float *fc = calloc(g ? (size_t)g * SF_NET_FORECASTS : 1, sizeof(float));
    float *pol = calloc(g ? (size_t)g * SF_FEAT_MAX_QUERIES : 1, sizeof(float));
    if (!all || !val || !pw || !fc || !pol) {
        rc = sf_err_set(err, SF_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    collect_ctx c = {weights, n_weights, all, 0, SF_OK, err};
    sf_arch_weights(arch, collect_weight, &c);
    if ((rc = c.rc) != SF_OK)
        goto done;
    int n = c.n;
    char names[7][32], out_names[4][32];
    if (canary) {
        n += sf_positions_tensors(canary, "canary.", names, all + n);
        for (int i = 0; i < g; i++) {
            memcpy(val + (size_t)i * SF_NET_VALUE_BINS, expected[i].value,
                   sizeof expected[i].value);
            pw[i] = expected[i].p_win;
            memcpy(fc + (size_t)i * SF_NET_FORECASTS, expected[i].forecast,
                   sizeof expected[i].forecast);
            int nq = sf_positions_get(canary, i).n_queries;
            memcpy(pol + (size_t)i * SF_FEAT_MAX_QUERIES, expected[i].policy,
                   (size_t)nq * sizeof(float));
        }
        n += sf_net_out_tensors(g, "canary.", val, pw, fc, pol, out_names, all + n);
    }
    char tol[SF_PRECISIONS][512];
    for (int p = 0; canary && p < SF_PRECISIONS; p++)
        fmt_tol(tol[p], sizeof tol[p], &tolerances[p]);
    /* what every bundle carries (docs/model.md "Metadata"), then the
     * canary's tolerances and the caller's extra entries */
    char vocab[32];
    snprintf(vocab, sizeof vocab, "%d,%d,%d,%d", SF_FEAT_VOCAB0, SF_FEAT_VOCAB1, SF_FEAT_VOCAB2,
             SF_FEAT_VOCAB3);
    const sf_meta_kv strings[] = {
        {"format", SF_BUNDLE_FORMAT},
        {"feat_vocab", vocab},
        {"forecast_targets", sf_forecast_column_list()},
        {"gelu", "erf"},
        {"pooling", "mean"},
        {"policy_input", SF_POLICY_INPUT},
        {"layernorm_eps", "1e-05"},
        {"arch", arch->name},
    };
    const struct {
        const char *key;
        int value;
    } numbers[] = {
        {"format_version", SF_BUNDLE_FORMAT_VERSION},
        {"tokenizer_version", SF_FEAT_VERSION},
        {"feat_ntypes", SF_FEAT_NTYPES},
        {"feat_ncont", SF_FEAT_NCONT},
        {"feat_nqcont", SF_FEAT_NQCONT},
        {"value_bins", SF_NET_VALUE_BINS},
        {"forecast_horizons", SF_NET_HORIZONS},
        {"label_schema_version", SF_LABEL_SCHEMA_VERSION},
        {"d_model", arch->d_model},
        {"n_layers", arch->n_layers},
        {"n_heads", arch->n_heads},
        {"d_ff", arch->d_ff},
        {"d_value", arch->d_value},
        {"d_forecast", arch->d_forecast},
        {"d_policy", arch->d_policy},
        {"canary_count", g},
    };
    enum { N_NUMBERS = sizeof numbers / sizeof numbers[0] };
    char num[N_NUMBERS][16];
    sf_meta_kv meta[64];
    int nm = 0;
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        meta[nm++] = strings[i];
    for (int i = 0; i < N_NUMBERS; i++) {
        snprintf(num[i], sizeof num[i], "%d", numbers[i].value);
        meta[nm++] = (sf_meta_kv){numbers[i].key, num[i]};
    }
    for (int p = 0; canary && p < SF_PRECISIONS; p++)
        meta[nm++] = (sf_meta_kv){sf_canary_tol_key((sf_precision)p), tol[p]};
    for (int i = 0; i < n_extra && nm < 64; i++) {
        if (strcmp(extra[i].key, SF_CANARY_TOL_V1_KEY) == 0 ||
            (strncmp(extra[i].key, SF_CANARY_TOL_KEY_PREFIX, strlen(SF_CANARY_TOL_KEY_PREFIX)) ==
                 0 &&
             strcmp(extra[i].key, SF_CANARY_TOL_SOURCE_KEY) != 0)) {
            rc = sf_err_set(err, SF_EINVAL,
                            "%s: extra metadata \"%s\" would stand beside the canary "
                            "tolerances; pass them as `tolerances`",
                            path, extra[i].key);
            goto done;
        }
        meta[nm++] = extra[i];
    }
    rc = sf_tensorfile_write(path, meta, nm, all, n, err);
done:
    free(all);
    free(val);
    free(pw);
    free(fc);
    free(pol);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Random bundles (machines without PyTorch)
 * ------------------------------------------------------------------------- */
typedef struct {
    sf_tensor *t;
    float **bufs;
    char **names;
    int n;
    uint64_t seed;
    int rc;
} rand_ctx;

static void rand_weight(void *vctx, const char *name, int ndim, const int64_t *shape) {
    rand_ctx *c = vctx;
    if (c->rc != SF_OK)
        return;
    size_t n = sf_shape_elems(ndim, shape);
    float *buf = malloc(n * sizeof(float));
    char *nm = malloc(strlen(name) + 1);
    if (!buf || !nm) {
        free(buf);
        free(nm);
        c->rc = SF_ENOMEM;
        return;
    }
    strcpy(nm, name);
    /* Scales of docs/model.md: embedding tables U(-0.8, 0.8); a Linear's
     * weight and bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)); LayerNorm gain
     * 1 + U(-0.15, 0.15) and shift U(-0.15, 0.15). Weights come in the
     * order of sf_arch_weights(), so a bias follows its weight, whose
     * fan-in is that weight's second dimension. */
    size_t len = strlen(name);
    int is_bias = len > 5 && strcmp(name + len - 5, ".bias") == 0;
    float base = 0.0f, scale;
    if (strncmp(name, "ln_f.", 5) == 0 || strstr(name, ".ln1.") || strstr(name, ".ln2.")) {
        scale = 0.15f;
        base = is_bias ? 0.0f : 1.0f;
    } else if (strncmp(name, "embed.", 6) == 0 && strncmp(name, "embed.cont.", 11) != 0) {
        scale = 0.8f;
    } else {
        int64_t fan_in = ndim == 2 ? shape[1] : (c->n > 0 ? c->t[c->n - 1].shape[1] : 1);
        scale = 1.0f / sqrtf((float)fan_in);
    }
    uint64_t stream = sf_mix64(c->seed ^ sf_mix64((uint64_t)c->n + 1));
    for (size_t i = 0; i < n; i++) {
        uint64_t r = sf_mix64(stream ^ sf_mix64(i));
        float u = (float)(r >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
        buf[i] = base + scale * u;
    }
    c->t[c->n] = sf_tensor_f32(nm, ndim, shape, buf);
    c->bufs[c->n] = buf;
    c->names[c->n] = nm;
    c->n++;
}

int sf_bundle_write_random(const char *path, const sf_arch *arch, uint64_t seed, int canary_n,
                           sf_err *err) {
    int rc = sf_arch_validate(arch, err);
    if (rc != SF_OK)
        return rc;
    int nw = sf_arch_weights(arch, find_weight, &(find_ctx){"", 0});
    rand_ctx c = {calloc((size_t)nw, sizeof(sf_tensor)),
                  calloc((size_t)nw, sizeof(float *)),
                  calloc((size_t)nw, sizeof(char *)),
                  0,
                  seed,
                  SF_OK};
    sf_positions *canary = NULL;
    sf_net_out *expected = NULL;
    sf_bundle *b = NULL;
    sf_net *net = NULL;
    if (!c.t || !c.bufs || !c.names) {
        rc = sf_err_set(err, SF_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    sf_arch_weights(arch, rand_weight, &c);
    if (c.rc != SF_OK) {
        rc = sf_err_set(err, c.rc, "%s: out of memory for the weights", path);
        goto done;
    }
    char seedbuf[32];
    snprintf(seedbuf, sizeof seedbuf, "%llu", (unsigned long long)seed);
    sf_meta_kv extra[3] = {{"seed", seedbuf},
                           {"created_by", "sf-model random"},
                           {SF_CANARY_TOL_SOURCE_KEY,
                            "measured: cpu emulation of tf32 (truncated) and bf16 (rounded) "
                            "GEMM inputs against the cpu backend's fp32 outputs, margin 4"}};
    /* First without a canary, to compute the expected outputs with the cpu
     * backend from the very bytes that will be served. */
    if ((rc = sf_bundle_write(path, arch, c.t, c.n, NULL, NULL, NULL, extra, 2, err)) != SF_OK)
        goto done;
    if (canary_n <= 0)
        goto done;
    if ((rc = sf_bundle_load(path, NULL, &b, err)) != SF_OK)
        goto done;
    sf_net_opts o = {0};
    if ((rc = sf_net_create(b, &o, &net, err)) != SF_OK)
        goto done;
    if ((rc = sf_positions_synthetic(sf_mix64(seed ^ 0xca4a), canary_n, &canary, err)) != SF_OK)
        goto done;
    expected = calloc((size_t)canary_n, sizeof *expected);
    sf_pos *pos = calloc((size_t)canary_n, sizeof *pos);
    if (!expected || !pos) {
        free(pos);
        rc = sf_err_set(err, SF_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    for (int i = 0; i < canary_n; i++)
        pos[i] = sf_positions_get(canary, i);
    rc = sf_net_eval(net, pos, canary_n, expected, err);
    free(pos);
    if (rc != SF_OK)
        goto done;
    /* The tolerances: each precision emulated on these very weights and
     * golden positions (sf_canary_tol_measure). */
    sf_canary_tol tol[SF_PRECISIONS];
    if ((rc = sf_canary_tol_measure(b, canary, expected, tol, NULL, err)) != SF_OK)
        goto done;
    rc = sf_bundle_write(path, arch, c.t, c.n, canary, expected, tol, extra, 3, err);
done:
    sf_net_free(net);
    sf_bundle_free(b);
    sf_positions_free(canary);
    free(expected);
    for (int i = 0; i < c.n; i++) {
        free(c.bufs[i]);
        free(c.names[i]);
    }
    free(c.t);
    free(c.bufs);
    free(c.names);
    return rc;
}
