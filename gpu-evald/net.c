/*
 * net.c — the network object: binds a bundle's weights to a backend,
 * validates inputs, dispatches evaluation, and runs the canary.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu-evald/evald.h"
#include "gpu-evald/internal.h"

struct sf_net {
    const sf_bundle *bundle;
    sf_arch arch;
    sf_net_opts opts;
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

int sf_net_create(const sf_bundle *b, const sf_net_opts *opts, sf_net **out, sf_err *err) {
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
    if (o.backend == SF_BACKEND_CPU && o.precision != SF_PREC_FP32)
        return sf_err_set(err, SF_EINVAL, "the cpu backend computes in fp32 only (asked for %s)",
                          sf_precision_name(o.precision));
    sf_net *net = calloc(1, sizeof *net);
    if (!net)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    net->bundle = b;
    net->arch = *sf_bundle_arch(b);
    net->opts = o;
    sf_weights_bind(b, &net->w);
    int rc;
    if (o.backend == SF_BACKEND_CPU)
        rc = sf_cpu_create(&net->arch, &net->w, o.threads, &net->cpu, err);
    else
        rc = sf_cuda_create(&net->arch, &net->w, &o, &net->cuda, err);
    if (rc != SF_OK) {
        free(net);
        return rc;
    }
    *out = net;
    return SF_OK;
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

double sf_net_canary_tolerance(const sf_net *net, const sf_bundle *b) {
    double tol = sf_bundle_canary_tolerance(b);
    if (net->opts.backend == SF_BACKEND_CUDA && net->opts.precision != SF_PREC_FP32 && tol < 2e-2)
        tol = 2e-2;
    return tol;
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

int sf_net_canary(sf_net *net, const sf_bundle *b, sf_canary_report *rep, sf_err *err) {
    const sf_positions *ps = sf_bundle_canary(b);
    sf_canary_report r = {0};
    r.tolerance = sf_net_canary_tolerance(net, b);
    r.worst_position = -1;
    if (!ps || sf_positions_count(ps) == 0) {
        if (rep)
            *rep = r;
        return sf_err_set(err, SF_ENOTFOUND, "%s: the bundle has no canary (golden positions)",
                          sf_bundle_path(b));
    }
    int g = sf_positions_count(ps);
    sf_pos *pos = calloc((size_t)g, sizeof *pos);
    sf_net_out *got = calloc((size_t)g, sizeof *got);
    if (!pos || !got) {
        free(pos);
        free(got);
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    }
    for (int i = 0; i < g; i++)
        pos[i] = sf_positions_get(ps, i);
    /* The cuda backend takes at most max_batch positions per call. */
    int step = net->cpu ? g : net->opts.max_batch, rc = SF_OK;
    for (int i = 0; i < g && rc == SF_OK; i += step)
        rc = sf_net_eval(net, pos + i, g - i < step ? g - i : step, got + i, err);
    if (rc == SF_OK) {
        r.positions = g;
        for (int i = 0; i < g; i++) {
            sf_net_out want;
            sf_bundle_canary_expected(b, i, &want);
            char where[40];
            double d = sf_net_out_max_diff(&got[i], &want, where);
            if (d > r.max_abs_err || r.worst_position < 0) {
                r.max_abs_err = d;
                r.worst_position = i;
                memcpy(r.worst_output, where, sizeof where);
                /* Recover the two values for the message. */
                const float *gv = NULL, *wv = NULL;
                int idx = 0, h = 0, k = 0;
                if (sscanf(where, "value[%d]", &idx) == 1)
                    gv = &got[i].value[idx], wv = &want.value[idx];
                else if (strcmp(where, "p_win") == 0)
                    gv = &got[i].p_win, wv = &want.p_win;
                else if (sscanf(where, "forecast[%d][%d]", &h, &k) == 2)
                    gv = &got[i].forecast[h][k], wv = &want.forecast[h][k];
                else if (sscanf(where, "policy[%d]", &idx) == 1)
                    gv = &got[i].policy[idx], wv = &want.policy[idx];
                r.got = gv ? *gv : NAN;
                r.expected = wv ? *wv : NAN;
            }
        }
        r.passed = r.max_abs_err <= r.tolerance;
        if (!r.passed)
            rc = sf_err_set(err, SF_ECORRUPT,
                            "%s: canary failed on the %s backend: golden position %d output %s = "
                            "%.9g, expected %.9g (|error| %.3g > tolerance %.3g)",
                            sf_bundle_path(b), sf_backend_name(net->opts.backend), r.worst_position,
                            r.worst_output, (double)r.got, (double)r.expected, r.max_abs_err,
                            r.tolerance);
    }
    free(pos);
    free(got);
    if (rep)
        *rep = r;
    return rc;
}
