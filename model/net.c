/*
 * net.c — the network object: binds a bundle's weights to a backend,
 * validates inputs, dispatches evaluation, and runs the canary.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"
#include "model/model.h"

struct sf_net {
    const sf_bundle *bundle;
    sf_arch arch;
    sf_net_opts opts;
    int emulated; /* cpu backend emulating opts.precision (sf_net_create_emulated) */
    sf_weights w;
    sf_cpu *cpu;
    sf_cuda *cuda;
};

int sf_backend_parse(const char *s, sf_backend *out) {
    if (strcmp(s, "cpu") == 0)
        *out = SF_BACKEND_CPU;
    else if (strcmp(s, "cuda") == 0)
        *out = SF_BACKEND_CUDA;
    else
        return SF_EINVAL;
    return SF_OK;
}

int sf_precision_parse(const char *s, sf_precision *out) {
    if (strcmp(s, "fp32") == 0)
        *out = SF_PREC_FP32;
    else if (strcmp(s, "tf32") == 0)
        *out = SF_PREC_TF32;
    else if (strcmp(s, "bf16") == 0)
        *out = SF_PREC_BF16;
    else
        return SF_EINVAL;
    return SF_OK;
}

const char *sf_backend_name(sf_backend b) {
    return b == SF_BACKEND_CUDA ? "cuda" : "cpu";
}

const char *sf_precision_name(sf_precision p) {
    return p == SF_PREC_BF16 ? "bf16" : p == SF_PREC_TF32 ? "tf32" : "fp32";
}

void sf_weights_bind(const sf_bundle *b, sf_weights *w) {
    const sf_arch *a = sf_bundle_arch(b);
    char n[96];
    memset(w, 0, sizeof *w);
    w->type_emb = sf_bundle_weight(b, "embed.type.weight");
    for (int j = 0; j < SF_FEAT_NCAT; j++) {
        snprintf(n, sizeof n, "embed.cat%d.weight", j);
        w->cat_emb[j] = sf_bundle_weight(b, n);
    }
    w->cont_w = sf_bundle_weight(b, "embed.cont.weight");
    w->cont_b = sf_bundle_weight(b, "embed.cont.bias");
    for (int l = 0; l < a->n_layers; l++) {
        sf_layer_w *L = &w->layer[l];
#define BIND(field, sub)                               \
    do {                                               \
        snprintf(n, sizeof n, "blocks.%d.%s", l, sub); \
        L->field = sf_bundle_weight(b, n);             \
    } while (0)
        BIND(ln1_w, "ln1.weight");
        BIND(ln1_b, "ln1.bias");
        BIND(qkv_w, "attn.qkv.weight");
        BIND(qkv_b, "attn.qkv.bias");
        BIND(out_w, "attn.out.weight");
        BIND(out_b, "attn.out.bias");
        BIND(ln2_w, "ln2.weight");
        BIND(ln2_b, "ln2.bias");
        BIND(fc1_w, "mlp.fc1.weight");
        BIND(fc1_b, "mlp.fc1.bias");
        BIND(fc2_w, "mlp.fc2.weight");
        BIND(fc2_b, "mlp.fc2.bias");
#undef BIND
    }
    w->lnf_w = sf_bundle_weight(b, "ln_f.weight");
    w->lnf_b = sf_bundle_weight(b, "ln_f.bias");
    w->vfc_w = sf_bundle_weight(b, "value.fc.weight");
    w->vfc_b = sf_bundle_weight(b, "value.fc.bias");
    w->vbins_w = sf_bundle_weight(b, "value.bins.weight");
    w->vbins_b = sf_bundle_weight(b, "value.bins.bias");
    w->vwin_w = sf_bundle_weight(b, "value.win.weight");
    w->vwin_b = sf_bundle_weight(b, "value.win.bias");
    w->ffc_w = sf_bundle_weight(b, "forecast.fc.weight");
    w->ffc_b = sf_bundle_weight(b, "forecast.fc.bias");
    w->fout_w = sf_bundle_weight(b, "forecast.out.weight");
    w->fout_b = sf_bundle_weight(b, "forecast.out.bias");
    w->pfc1_w = sf_bundle_weight(b, "policy.fc1.weight");
    w->pfc1_b = sf_bundle_weight(b, "policy.fc1.bias");
    w->pfc2_w = sf_bundle_weight(b, "policy.fc2.weight");
    w->pfc2_b = sf_bundle_weight(b, "policy.fc2.bias");
}

static int net_create(const sf_bundle *b, const sf_net_opts *opts, int emulate, sf_net **out,
                      sf_err *err) {
    *out = NULL;
    sf_net_opts o = opts ? *opts : (sf_net_opts){0};
    if (o.max_batch <= 0)
        o.max_batch = 1024;
    if (o.threads < 0 || o.threads > 256)
        return sf_err_set(err, SF_EINVAL, "threads %d out of range 0..256", o.threads);
    if (o.backend != SF_BACKEND_CPU && o.backend != SF_BACKEND_CUDA)
        return sf_err_set(err, SF_EINVAL, "unknown backend %d", (int)o.backend);
    if (o.precision != SF_PREC_FP32 && o.precision != SF_PREC_TF32 && o.precision != SF_PREC_BF16)
        return sf_err_set(err, SF_EINVAL, "unknown precision %d", (int)o.precision);
    if (o.backend == SF_BACKEND_CPU && o.precision != SF_PREC_FP32 && !emulate)
        return sf_err_set(err, SF_EINVAL, "the cpu backend computes in fp32 only (asked for %s)",
                          sf_precision_name(o.precision));
    sf_net *net = calloc(1, sizeof *net);
    if (!net)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    net->bundle = b;
    net->arch = *sf_bundle_arch(b);
    net->opts = o;
    net->emulated = emulate;
    sf_weights_bind(b, &net->w);
    int rc;
    if (o.backend == SF_BACKEND_CPU)
        rc = sf_cpu_create(&net->arch, &net->w, o.threads, o.precision, &net->cpu, err);
    else
        rc = sf_cuda_create(&net->arch, &net->w, &o, &net->cuda, err);
    if (rc != SF_OK) {
        free(net);
        return rc;
    }
    *out = net;
    return SF_OK;
}

int sf_net_create(const sf_bundle *b, const sf_net_opts *opts, sf_net **out, sf_err *err) {
    return net_create(b, opts, 0, out, err);
}

int sf_net_create_emulated(const sf_bundle *b, sf_precision p, int threads, sf_net **out,
                           sf_err *err) {
    sf_net_opts o = {.backend = SF_BACKEND_CPU, .precision = p, .threads = threads};
    return net_create(b, &o, 1, out, err);
}

void sf_net_free(sf_net *net) {
    if (!net)
        return;
    sf_cpu_free(net->cpu);
    sf_cuda_free(net->cuda);
    free(net);
}

const sf_arch *sf_net_arch(const sf_net *net) {
    return &net->arch;
}
sf_backend sf_net_backend(const sf_net *net) {
    return net->opts.backend;
}
sf_precision sf_net_precision(const sf_net *net) {
    return net->opts.precision;
}

int sf_net_eval(sf_net *net, const sf_pos *pos, int n, sf_net_out *out, sf_err *err) {
    if (n < 0)
        return sf_err_set(err, SF_EINVAL, "batch of %d positions", n);
    for (int i = 0; i < n; i++) {
        int rc = sf_pos_validate(&pos[i], err);
        if (rc != SF_OK)
            return sf_err_prefix(err, "position %d", i);
    }
    if (n == 0)
        return SF_OK;
    if (net->cpu) {
        sf_cpu_eval(net->cpu, pos, n, out);
        return SF_OK;
    }
    if (n > net->opts.max_batch)
        return sf_err_set(err, SF_EFULL, "batch of %d positions exceeds the cuda max_batch %d", n,
                          net->opts.max_batch);
    return sf_cuda_eval(net->cuda, pos, n, out, err);
}

const sf_canary_tol *sf_net_canary_tolerance(const sf_net *net, const sf_bundle *b) {
    return sf_bundle_canary_tolerance(b, net->opts.precision);
}

void sf_net_out_priors(const sf_net_out *o, float *priors) {
    int n = o->n_queries;
    if (n <= 0)
        return;
    float mx = o->policy[0];
    for (int q = 1; q < n; q++)
        mx = o->policy[q] > mx ? o->policy[q] : mx;
    double sum = 0.0;
    for (int q = 0; q < n; q++)
        sum += exp((double)o->policy[q] - mx);
    for (int q = 0; q < n; q++)
        priors[q] = (float)(exp((double)o->policy[q] - mx) / sum);
}

double sf_net_out_max_diff(const sf_net_out *a, const sf_net_out *b, char *where) {
    double worst = -1.0;
    char name[40] = "";
#define CMP(x, y, ...)                                \
    do {                                              \
        double dd = fabs((double)(x) - (double)(y));  \
        if (!(dd <= worst)) { /* also catches NaN */  \
            worst = isnan(dd) ? INFINITY : dd;        \
            snprintf(name, sizeof name, __VA_ARGS__); \
        }                                             \
    } while (0)
    for (int i = 0; i < SF_NET_VALUE_BINS; i++)
        CMP(a->value[i], b->value[i], "value[%d]", i);
    CMP(a->p_win, b->p_win, "p_win");
    for (int h = 0; h < SF_NET_HORIZONS; h++)
        for (int k = 0; k < SF_NET_FORECAST_TARGETS; k++)
            CMP(a->forecast[h][k], b->forecast[h][k], "forecast[%d][%d]", h, k);
    int nq = a->n_queries < b->n_queries ? a->n_queries : b->n_queries;
    for (int q = 0; q < nq; q++)
        CMP(a->policy[q], b->policy[q], "policy[%d]", q);
#undef CMP
    if (a->n_queries != b->n_queries) {
        worst = INFINITY;
        snprintf(name, sizeof name, "n_queries");
    }
    if (where)
        memcpy(where, name, sizeof name);
    return worst;
}

/* ---------------------------------------------------------------------------
 * Canary tolerances
 * ------------------------------------------------------------------------- */
const double sf_canary_tol_rel[SF_PRECISIONS] = {1e-5, 2e-3, 8e-3};
const double sf_canary_tol_abs_floor[SF_PRECISIONS] = {1e-4, 1e-3, 1e-2};

const char *sf_canary_output_name(sf_canary_output o) {
    static const char *const names[SF_CANARY_OUTPUTS] = {"value", "p_win", "forecast", "policy"};
    return (unsigned)o < SF_CANARY_OUTPUTS ? names[o] : "?";
}

const char *sf_canary_tol_key(sf_precision p) {
    static const char *const keys[SF_PRECISIONS] = {SF_CANARY_TOL_KEY_PREFIX "fp32",
                                                    SF_CANARY_TOL_KEY_PREFIX "tf32",
                                                    SF_CANARY_TOL_KEY_PREFIX "bf16"};
    return (unsigned)p < SF_PRECISIONS ? keys[p] : "?";
}

/* One element into the running comparison. */
static void cmp_one(sf_out_cmp *c, float got, float want, const sf_tol *t, sf_canary_output head,
                    const char *fmt, int i, int j) {
    double err = fabs((double)got - (double)want);
    double limit = t->abs + t->rel * fabs((double)want);
    if (isnan(err))
        err = INFINITY; /* a NaN is as far off as anything can be */
    double ratio = err / limit;
    if (err > c->max_abs_err)
        c->max_abs_err = err;
    if (err > c->head_max_abs_err[head])
        c->head_max_abs_err[head] = err;
    if (ratio > c->head_max_ratio[head])
        c->head_max_ratio[head] = ratio;
    if (ratio > c->ratio || c->where[0] == '\0') {
        c->ratio = ratio;
        c->err = err;
        c->limit = limit;
        c->head = head;
        c->got = got;
        c->want = want;
        snprintf(c->where, sizeof c->where, fmt, i, j);
    }
}

double sf_net_out_compare(const sf_net_out *got, const sf_net_out *want, const sf_canary_tol *tol,
                          sf_out_cmp *cmp) {
    memset(cmp, 0, sizeof *cmp);
    const sf_tol *t = tol->out;
    for (int i = 0; i < SF_NET_VALUE_BINS; i++)
        cmp_one(cmp, got->value[i], want->value[i], &t[SF_CANARY_VALUE], SF_CANARY_VALUE,
                "value[%d]", i, 0);
    cmp_one(cmp, got->p_win, want->p_win, &t[SF_CANARY_P_WIN], SF_CANARY_P_WIN, "p_win", 0, 0);
    for (int h = 0; h < SF_NET_HORIZONS; h++)
        for (int k = 0; k < SF_NET_FORECAST_TARGETS; k++)
            cmp_one(cmp, got->forecast[h][k], want->forecast[h][k], &t[SF_CANARY_FORECAST],
                    SF_CANARY_FORECAST, "forecast[%d][%d]", h, k);
    int nq = got->n_queries < want->n_queries ? got->n_queries : want->n_queries;
    for (int q = 0; q < nq; q++)
        cmp_one(cmp, got->policy[q], want->policy[q], &t[SF_CANARY_POLICY], SF_CANARY_POLICY,
                "policy[%d]", q, 0);
    if (got->n_queries != want->n_queries) {
        cmp->ratio = cmp->err = cmp->max_abs_err = INFINITY;
        cmp->head_max_abs_err[SF_CANARY_POLICY] = cmp->head_max_ratio[SF_CANARY_POLICY] = INFINITY;
        cmp->limit = 0;
        cmp->head = SF_CANARY_POLICY;
        cmp->got = (float)got->n_queries;
        cmp->want = (float)want->n_queries;
        snprintf(cmp->where, sizeof cmp->where, "n_queries");
    }
    return cmp->ratio;
}

/* Evaluate every position of `ps` on `net` into out[], in chunks the
 * backend accepts. */
static int eval_positions(sf_net *net, const sf_positions *ps, sf_net_out *out, sf_err *err) {
    int g = sf_positions_count(ps);
    sf_pos *pos = calloc(g > 0 ? (size_t)g : 1, sizeof *pos);
    if (!pos)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    for (int i = 0; i < g; i++)
        pos[i] = sf_positions_get(ps, i);
    int step = net->cpu ? (g > 0 ? g : 1) : net->opts.max_batch, rc = SF_OK;
    for (int i = 0; i < g && rc == SF_OK; i += step)
        rc = sf_net_eval(net, pos + i, g - i < step ? g - i : step, out + i, err);
    free(pos);
    return rc;
}

/* The precision a net's canary names: "bf16", or "bf16 (emulated)" on a
 * cpu net emulating it. */
static const char *prec_label(const sf_net *net, char buf[32]) {
    snprintf(buf, 32, "%s%s", sf_precision_name(net->opts.precision),
             net->emulated ? " (emulated)" : "");
    return buf;
}

int sf_net_canary(sf_net *net, const sf_bundle *b, sf_canary_report *rep, sf_err *err) {
    const sf_positions *ps = sf_bundle_canary(b);
    sf_canary_report r = {0};
    r.precision = net->opts.precision;
    r.worst_position = -1;
    const sf_canary_tol *tol = sf_net_canary_tolerance(net, b);
    if (!ps || sf_positions_count(ps) == 0 || !tol) {
        if (rep)
            *rep = r;
        return sf_err_set(err, SF_ENOTFOUND, "%s: the bundle has no canary (golden positions)",
                          sf_bundle_path(b));
    }
    r.tol = *tol;
    int g = sf_positions_count(ps);
    sf_net_out *got = calloc((size_t)g, sizeof *got);
    if (!got)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    int rc = eval_positions(net, ps, got, err);
    if (rc == SF_OK) {
        r.positions = g;
        for (int i = 0; i < g; i++) {
            sf_net_out want;
            sf_bundle_canary_expected(b, i, &want);
            sf_out_cmp c;
            sf_net_out_compare(&got[i], &want, &r.tol, &c);
            if (c.ratio > r.max_ratio || r.worst_position < 0) {
                r.max_ratio = c.ratio;
                r.worst_position = i;
                r.worst = c;
            }
            if (c.max_abs_err > r.max_abs_err)
                r.max_abs_err = c.max_abs_err;
            for (int o = 0; o < SF_CANARY_OUTPUTS; o++) {
                if (c.head_max_abs_err[o] > r.head_max_abs_err[o])
                    r.head_max_abs_err[o] = c.head_max_abs_err[o];
                if (c.head_max_ratio[o] > r.head_max_ratio[o])
                    r.head_max_ratio[o] = c.head_max_ratio[o];
            }
        }
        r.passed = r.max_ratio <= 1.0;
        if (!r.passed) {
            char pl[32];
            const sf_tol *t = &r.tol.out[r.worst.head];
            rc = sf_err_set(err, SF_ECORRUPT,
                            "%s: canary failed on the %s backend in %s: golden position %d output "
                            "%s = %.9g, expected %.9g: |error| %.3g > limit %.3g (%s tolerance of "
                            "%s: abs %.3g + rel %.3g x |expected|)",
                            sf_bundle_path(b), sf_backend_name(net->opts.backend),
                            prec_label(net, pl), r.worst_position, r.worst.where,
                            (double)r.worst.got, (double)r.worst.want, r.worst.err, r.worst.limit,
                            sf_precision_name(r.precision), sf_canary_output_name(r.worst.head),
                            t->abs, t->rel);
        }
    }
    free(got);
    if (rep)
        *rep = r;
    return rc;
}

/* x rounded up to two significant digits (x > 0 and finite), so a
 * tolerance reads "0.24" rather than "0.2317..."; the last-digit guard
 * keeps 0.24 itself at 0.24. */
static double round_up_2sig(double x) {
    if (!(x > 0.0) || !isfinite(x))
        return x;
    double s = floor(log10(x)) - 1.0;
    /* c / 10^k with 10^k exact is the double nearest the decimal c e-k, so
     * the value prints back as two digits. */
    double c = ceil((s < 0 ? x * pow(10.0, -s) : x / pow(10.0, s)) * (1.0 - 1e-12));
    return s < 0 ? c / pow(10.0, -s) : c * pow(10.0, s);
}

int sf_canary_tol_measure(const sf_bundle *b, const sf_positions *canary,
                          const sf_net_out *expected, sf_canary_tol *out,
                          double measured[SF_PRECISIONS][SF_CANARY_OUTPUTS], sf_err *err) {
    int g = sf_positions_count(canary);
    sf_net_out *got = calloc(g > 0 ? (size_t)g : 1, sizeof *got);
    if (!got)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    int rc = SF_OK;
    for (int p = 0; p < SF_PRECISIONS && rc == SF_OK; p++) {
        sf_net *net = NULL;
        if ((rc = sf_net_create_emulated(b, (sf_precision)p, 0, &net, err)) != SF_OK)
            break;
        rc = eval_positions(net, canary, got, err);
        sf_net_free(net);
        if (rc != SF_OK)
            break;
        /* need[o]: the largest margin |err| - rel |want| over output o; a
         * tolerance of {need, rel} gives every element `margin` times its
         * emulated error. */
        double rel = sf_canary_tol_rel[p], need[SF_CANARY_OUTPUTS], maxerr[SF_CANARY_OUTPUTS];
        for (int o = 0; o < SF_CANARY_OUTPUTS; o++)
            need[o] = maxerr[o] = 0.0;
#define ELEM(o, gv, wv)                                                   \
    do {                                                                  \
        double e_ = fabs((double)(gv) - (double)(wv));                    \
        if (isnan(e_))                                                    \
            e_ = INFINITY;                                                \
        double n_ = SF_CANARY_TOL_MARGIN * e_ - rel * fabs((double)(wv)); \
        need[o] = n_ > need[o] ? n_ : need[o];                            \
        maxerr[o] = e_ > maxerr[o] ? e_ : maxerr[o];                      \
    } while (0)
        for (int i = 0; i < g; i++) {
            const sf_net_out *x = &got[i], *w = &expected[i];
            for (int k = 0; k < SF_NET_VALUE_BINS; k++)
                ELEM(SF_CANARY_VALUE, x->value[k], w->value[k]);
            ELEM(SF_CANARY_P_WIN, x->p_win, w->p_win);
            for (int h = 0; h < SF_NET_HORIZONS; h++)
                for (int k = 0; k < SF_NET_FORECAST_TARGETS; k++)
                    ELEM(SF_CANARY_FORECAST, x->forecast[h][k], w->forecast[h][k]);
            int nq = sf_positions_get(canary, i).n_queries;
            for (int q = 0; q < nq; q++)
                ELEM(SF_CANARY_POLICY, x->policy[q], w->policy[q]);
        }
#undef ELEM
        for (int o = 0; o < SF_CANARY_OUTPUTS; o++) {
            double a = need[o] > sf_canary_tol_abs_floor[p] ? need[o] : sf_canary_tol_abs_floor[p];
            out[p].out[o] = (sf_tol){round_up_2sig(a), rel};
            if (measured)
                measured[p][o] = maxerr[o];
        }
    }
    free(got);
    return rc;
}
