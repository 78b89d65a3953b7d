/* test_model_net.c — the network on the cpu backend: hand-computed heads,
 * the erf and exp approximations, row independence across batches, no
 * allocation after warm-up, input validation, the canary and its
 * per-output, per-precision tolerances (on a trained bundle, with tf32 and
 * bf16 emulated), and the cuda backend's behaviour without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"
#include "model/model.h"
#include "model_fixture.h"
#include "sf_allocs.h"
#include "sf_check.h"

/* ---- allocation counting (not under ASan, which owns malloc) ---- */
#if defined(__SANITIZE_ADDRESS__)
#define SF_COUNT_ALLOCS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SF_COUNT_ALLOCS 0
#endif
#endif
#ifndef SF_COUNT_ALLOCS
#define SF_COUNT_ALLOCS 1
#endif

#if SF_COUNT_ALLOCS
extern void *__libc_memalign(size_t, size_t);
static _Atomic long n_allocs;
SF_COUNTED_ALLOCATORS(n_allocs, , __libc_)
int posix_memalign(void **p, size_t align, size_t n) {
    n_allocs++;
    *p = __libc_memalign(align, n);
    return *p ? 0 : 12;
}
#endif

/* erf and exp against libm in double: the approximations of internal.h. */
START_TEST(erf_and_exp_approximations_are_accurate) {
    double worst_erf = 0, worst_exp = 0;
    for (int i = -60000; i <= 60000; i++) {
        float x = (float)i * 1e-4f;
        double d = fabs((double)sf_erff(x) - erf((double)x));
        worst_erf = d > worst_erf ? d : worst_erf;
    }
    for (int i = -8600; i <= 8800; i++) {
        float x = (float)i * 0.01f;
        double r = fabs((double)sf_expf(x) / exp((double)x) - 1.0);
        worst_exp = r > worst_exp ? r : worst_exp;
    }
    /* Measured on this grid: erf 3.7e-7 absolute (the rational form's own
     * error plus float evaluation), exp under 2e-7 relative (Cephes: about
     * 1 ulp). A wrong coefficient would show as 1e-3 or worse. */
    ck_assert_msg(worst_erf < 5e-7, "erf max abs error %g", worst_erf);
    ck_assert_msg(worst_exp < 4e-7, "exp max rel error %g", worst_exp);
    ck_assert_float_eq(sf_expf(0.0f), 1.0f);
    ck_assert(sf_expf(-1000.0f) < 1e-37f && sf_expf(-1000.0f) >= 0.0f);
}
END_TEST

/* A micro network (d 2, L 1, H 1, hidden widths 1/2) whose weights are all
 * zero except a few, so every head's output can be computed by hand:
 *   ln_f gain 0, shift (0.3, -0.2): every token's final state is (0.3,-0.2)
 *   value.fc bias 1        -> hidden GELU(1) = 0.8413447461
 *   value.bins bias_k 0.1k -> value_k = e^{0.1k} / sum_j e^{0.1j}
 *                             value_0 = 0.0146760291, value_20 = 0.1084420022
 *   value.win w 2, b -1    -> p_win = sigmoid(2*0.8413447461 - 1) = 0.6643386996
 *   forecast.fc bias 0.5   -> hidden GELU(0.5) = 0.3457312306
 *   forecast.out w_k 0.1(k+1), b_k -0.01k
 *                          -> f_0 = 0.0345731231, f_7 = 0.2065849845,
 *                             f_19 = 0.5014624613
 *   policy.fc1 w (1,0, 0,1, 0.5,0..), b 0.1; fc2 w 1.5, b 0.25
 *                          -> logit = 1.5 GELU(0.3 - 0.2 + 0.5 qcont0 + 0.1) + 0.25
 *                             qcont0 1 -> 1.0459381652, -1 -> 0.0780601400,
 *                             0.25 -> 0.5558621138
 * (GELU(x) = x Phi(x), values from the closed forms in double precision.) */
typedef struct {
    sf_tensor *t;
    float **bufs;
    int n;
} micro_ctx;

static void micro_weight(void *vctx, const char *name, int ndim, const int64_t *shape) {
    micro_ctx *c = vctx;
    float *buf = calloc(sf_shape_elems(ndim, shape), sizeof(float));
    char *nm = strdup(name);
    if (strcmp(name, "ln_f.bias") == 0)
        buf[0] = 0.3f, buf[1] = -0.2f;
    else if (strcmp(name, "value.fc.bias") == 0)
        buf[0] = 1.0f;
    else if (strcmp(name, "value.bins.bias") == 0)
        for (int k = 0; k < 21; k++)
            buf[k] = 0.1f * (float)k;
    else if (strcmp(name, "value.win.weight") == 0)
        buf[0] = 2.0f;
    else if (strcmp(name, "value.win.bias") == 0)
        buf[0] = -1.0f;
    else if (strcmp(name, "forecast.fc.bias") == 0)
        buf[0] = 0.5f;
    else if (strcmp(name, "forecast.out.weight") == 0)
        for (int k = 0; k < 20; k++)
            buf[k] = 0.1f * (float)(k + 1);
    else if (strcmp(name, "forecast.out.bias") == 0)
        for (int k = 0; k < 20; k++)
            buf[k] = -0.01f * (float)k;
    else if (strcmp(name, "policy.fc1.weight") == 0)
        buf[0] = 1.0f, buf[3] = 1.0f, buf[4] = 0.5f;
    else if (strcmp(name, "policy.fc1.bias") == 0)
        buf[0] = 0.1f;
    else if (strcmp(name, "policy.fc2.weight") == 0)
        buf[0] = 1.5f;
    else if (strcmp(name, "policy.fc2.bias") == 0)
        buf[0] = 0.25f;
    c->t[c->n] = sf_tensor_f32(nm, ndim, shape, buf);
    c->bufs[c->n++] = buf;
}

START_TEST(micro_network_heads_match_hand_computation) {
    char dir[256], path[512];
    fx_tmpdir(dir);
    snprintf(path, sizeof path, "%s/micro.safetensors", dir);
    sf_arch a = {"micro", 2, 1, 1, 2, 1, 1, 1};
    micro_ctx c = {calloc(200, sizeof(sf_tensor)), calloc(200, sizeof(float *)), 0};
    sf_arch_weights(&a, micro_weight, &c);
    sf_err e = {0};
    ck_assert_int_eq(sf_bundle_write(path, &a, c.t, c.n, NULL, NULL, NULL, NULL, 0, &e), SF_OK);
    for (int i = 0; i < c.n; i++) {
        free(c.bufs[i]);
        free((char *)c.t[i].name);
    }
    free(c.t);
    free(c.bufs);

    sf_bundle *b = fx_load(path);
    sf_net *net = fx_cpu_net(b);
    sf_feat f;
    memset(&f, 0, sizeof f);
    f.n_tokens = 3;
    f.n_queries = 3;
    f.type[0] = SF_TOK_CTX, f.type[1] = SF_TOK_PLAYER, f.type[2] = SF_TOK_MONSTER;
    f.cont[1][0] = 5.0f; /* ignored by construction (LN gain 0) */
    f.query[0][0] = 1, f.query[0][1] = 2, f.qcont[0][0] = 1.0f;
    f.query[1][0] = 0, f.query[1][1] = 0, f.qcont[1][0] = -1.0f;
    f.query[2][0] = 2, f.query[2][1] = 1, f.qcont[2][0] = 0.25f;
    sf_pos p = sf_pos_from_feat(&f);
    sf_net_out o;
    ck_assert_int_eq(sf_net_eval(net, &p, 1, &o, &e), SF_OK);
    const double tol = 2e-6;
    ck_assert_double_eq_tol(o.value[0], 0.0146760291, tol);
    ck_assert_double_eq_tol(o.value[20], 0.1084420022, tol);
    double sum = 0;
    for (int k = 0; k < 21; k++)
        sum += o.value[k];
    ck_assert_double_eq_tol(sum, 1.0, 1e-6);
    ck_assert_double_eq_tol(o.p_win, 0.6643386996, tol);
    ck_assert_double_eq_tol(o.forecast[0][0], 0.0345731231, tol);
    ck_assert_double_eq_tol(o.forecast[1][2], 0.2065849845, tol);
    ck_assert_double_eq_tol(o.forecast[3][4], 0.5014624613, tol);
    ck_assert_int_eq(o.n_queries, 3);
    ck_assert_double_eq_tol(o.policy[0], 1.0459381652, tol);
    ck_assert_double_eq_tol(o.policy[1], 0.0780601400, tol);
    ck_assert_double_eq_tol(o.policy[2], 0.5558621138, tol);
    ck_assert_float_eq(o.policy[3], 0.0f);
    sf_net_free(net);
    sf_bundle_free(b);
    fx_rmdir(dir);
}
END_TEST

static void eval_or_fail(sf_net *net, const sf_pos *p, int n, sf_net_out *o) {
    sf_err e = {0};
    int rc = sf_net_eval(net, p, n, o, &e);
    ck_assert_msg(rc == SF_OK, "%s", e.msg);
}

/* A position's outputs are the same bits alone, in a full batch, in
 * reverse order, next to other positions, and on a 3-thread net. */
START_TEST(outputs_do_not_depend_on_batch_composition) {
    fx_tiny t;
    sf_bundle *b = fx_tiny_open(&t, "tiny.safetensors", 5, 0);
    sf_net *net = fx_cpu_net(b), *net3;
    sf_err e = {0};
    sf_net_opts o3 = {.threads = 3};
    ck_assert_int_eq(sf_net_create(b, &o3, &net3, &e), SF_OK);
    enum { N = 40 };
    sf_positions *ps, *others;
    ck_assert_int_eq(sf_positions_synthetic(77, N, &ps, &e), SF_OK);
    ck_assert_int_eq(sf_positions_synthetic(78, N, &others, &e), SF_OK);
    sf_pos pos[2 * N];
    static sf_net_out alone[N], batch[N], rev[N], mixed[2 * N], threaded[N];
    for (int i = 0; i < N; i++) {
        pos[i] = sf_positions_get(ps, i);
        eval_or_fail(net, &pos[i], 1, &alone[i]);
    }
    eval_or_fail(net, pos, N, batch);
    sf_pos rpos[N];
    for (int i = 0; i < N; i++)
        rpos[i] = pos[N - 1 - i];
    eval_or_fail(net, rpos, N, rev);
    sf_pos mpos[2 * N];
    for (int i = 0; i < N; i++) {
        mpos[2 * i] = sf_positions_get(others, i);
        mpos[2 * i + 1] = pos[i];
    }
    eval_or_fail(net, mpos, 2 * N, mixed);
    eval_or_fail(net3, pos, N, threaded);
    for (int i = 0; i < N; i++) {
        ck_assert_msg(memcmp(&alone[i], &batch[i], sizeof alone[i]) == 0, "batch %d", i);
        ck_assert_msg(memcmp(&alone[i], &rev[N - 1 - i], sizeof alone[i]) == 0, "reverse %d", i);
        ck_assert_msg(memcmp(&alone[i], &mixed[2 * i + 1], sizeof alone[i]) == 0, "mixed %d", i);
        ck_assert_msg(memcmp(&alone[i], &threaded[i], sizeof alone[i]) == 0, "threads %d", i);
    }
    /* And they are not all the same (the comparison has teeth). */
    ck_assert(memcmp(&alone[3], &alone[4], sizeof alone[3]) != 0);
    sf_positions_free(ps);
    sf_positions_free(others);
    sf_net_free(net);
    sf_net_free(net3);
    fx_tiny_close(&t);
}
END_TEST

/* After one warm-up batch, evaluating allocates nothing. */
START_TEST(eval_allocates_nothing_after_warmup) {
#if SF_COUNT_ALLOCS
    fx_tiny t;
    sf_bundle *b = fx_tiny_open(&t, "tiny.safetensors", 6, 0);
    sf_net *net = fx_cpu_net(b);
    sf_err e = {0};
    sf_positions *ps;
    ck_assert_int_eq(sf_positions_synthetic(8, 16, &ps, &e), SF_OK);
    sf_pos pos[16];
    static sf_net_out out[16];
    for (int i = 0; i < 16; i++)
        pos[i] = sf_positions_get(ps, i);
    eval_or_fail(net, pos, 16, out);
    /* No Check assertion inside the measured loop: Check itself allocates
     * to report each passed assertion to its parent process. */
    long before = n_allocs;
    int bad = 0;
    for (int r = 0; r < 5; r++)
        bad |= sf_net_eval(net, pos, 16, out, NULL);
    long after = n_allocs;
    ck_assert_int_eq(bad, SF_OK);
    ck_assert_int_eq(after - before, 0);
    sf_positions_free(ps);
    sf_net_free(net);
    fx_tiny_close(&t);
#endif
}
END_TEST

/* An invalid position fails the whole call with its index; nothing runs. */
START_TEST(invalid_position_fails_the_batch_naming_it) {
    fx_tiny t;
    sf_bundle *b = fx_tiny_open(&t, "tiny.safetensors", 7, 0);
    sf_net *net = fx_cpu_net(b);
    sf_err e = {0};
    sf_feat f[2];
    memset(f, 0, sizeof f);
    f[0].n_tokens = f[1].n_tokens = 2;
    f[0].type[0] = f[0].type[1] = f[1].type[0] = SF_TOK_CTX;
    f[1].type[1] = 0;
    sf_pos p[2] = {sf_pos_from_feat(&f[0]), sf_pos_from_feat(&f[1])};
    sf_net_out o[2];
    ck_assert_int_eq(sf_net_eval(net, p, 2, o, &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, "position 1: token 1: type 0 out of range 1..11");
    sf_net_free(net);
    fx_tiny_close(&t);
}
END_TEST

/* The canary passes on the bundle it was made with and fails, naming the
 * output, when one expected value is off by more than the tolerance. */
START_TEST(canary_passes_and_catches_a_tampered_value) {
    fx_tiny t;
    char bad[512];
    sf_bundle *b = fx_tiny_open(&t, "good.safetensors", 8, 6);
    sf_net *net = fx_cpu_net(b);
    sf_err e = {0};
    sf_canary_report r;
    ck_assert_int_eq(sf_net_canary(net, b, &r, &e), SF_OK);
    ck_assert_int_eq(r.positions, 6);
    ck_assert(r.passed);
    ck_assert(r.max_abs_err == 0.0); /* made by this very backend */
    sf_net_free(net);

    sf_tensor pt;
    float *pw = fx_tensor_copy(t.path, "canary.p_win", &pt);
    pw[4] += 0.001f;
    snprintf(bad, sizeof bad, "%s/bad.safetensors", t.dir);
    fx_rewrite(t.path, bad, NULL, &pt, NULL, NULL);
    free(pw);
    sf_bundle *bb = fx_load(bad);
    ck_assert_int_eq(sf_net_create(bb, NULL, &net, &e), SF_OK);
    ck_assert_int_eq(sf_net_canary(net, bb, &r, &e), SF_ECORRUPT);
    ck_assert(!r.passed);
    ck_assert_int_eq(r.worst_position, 4);
    ck_assert_str_eq(r.worst.where, "p_win");
    ck_assert_int_eq(r.worst.head, SF_CANARY_P_WIN);
    ck_assert_double_eq_tol(r.max_abs_err, 0.001, 1e-6);
    /* limit = abs 1e-4 + rel 1e-5 x |p_win| */
    ck_assert_double_eq_tol(r.worst.limit, 1e-4 + 1e-5 * fabs((double)r.worst.want), 1e-12);
    ck_assert_double_eq_tol(r.max_ratio, r.worst.err / r.worst.limit, 1e-9);
    ck_assert(r.max_ratio > 9.0 && r.head_max_ratio[SF_CANARY_P_WIN] == r.max_ratio);
    ck_assert(r.head_max_ratio[SF_CANARY_VALUE] == 0.0);
    ck_assert_msg(strstr(e.msg, "canary failed on the cpu backend in fp32: golden position 4 "
                                "output p_win") &&
                      strstr(e.msg, "(fp32 tolerance of p_win: abs 0.0001 + rel 1e-05 x "
                                    "|expected|)"),
                  "%s", e.msg);
    sf_net_free(net);
    sf_bundle_free(bb);
    fx_tiny_close(&t);
}
END_TEST

/* The element check: |got - want| <= abs + rel |want| with each output's
 * own tolerance; the worst element by ratio is named. */
START_TEST(compare_applies_each_outputs_tolerance) {
    sf_net_out a, b;
    memset(&a, 0, sizeof a);
    a.n_queries = 2;
    a.forecast[2][0] = 60.0f;
    a.policy[1] = -10.0f;
    b = a;
    sf_canary_tol t;
    for (int o = 0; o < SF_CANARY_OUTPUTS; o++)
        t.out[o] = (sf_tol){0.01, 0.0};
    t.out[SF_CANARY_FORECAST] = (sf_tol){0.1, 0.01}; /* 0.7 at 60 */
    sf_out_cmp c;
    ck_assert(sf_net_out_compare(&a, &b, &t, &c) == 0.0);
    b.forecast[2][0] = 60.5f; /* |error| 0.5 <= 0.1 + 0.01 x 60 */
    ck_assert_double_eq_tol(sf_net_out_compare(&b, &a, &t, &c), 0.5 / 0.7, 1e-6);
    ck_assert_str_eq(c.where, "forecast[2][0]");
    ck_assert_int_eq(c.head, SF_CANARY_FORECAST);
    b.policy[1] = -10.02f; /* 0.02 > 0.01: ratio 2 */
    ck_assert_double_eq_tol(sf_net_out_compare(&b, &a, &t, &c), 2.0, 1e-4);
    ck_assert_str_eq(c.where, "policy[1]");
    ck_assert_double_eq_tol(c.head_max_ratio[SF_CANARY_FORECAST], 0.5 / 0.7, 1e-6);
    ck_assert_double_eq_tol(c.max_abs_err, 0.5, 1e-6);
    b.p_win = NAN;
    ck_assert(isinf(sf_net_out_compare(&b, &a, &t, &c)));
    ck_assert_str_eq(c.where, "p_win");
    b = a;
    b.n_queries = 3;
    ck_assert(isinf(sf_net_out_compare(&b, &a, &t, &c)));
    ck_assert_str_eq(c.where, "n_queries");
}
END_TEST

/* The rounding the emulation applies to GEMM inputs. */
START_TEST(bf16_and_tf32_rounding_bits) {
    /* 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: ties to even (1);
     * 1 + 3 * 2^-8 ties up to 1 + 2^-6. */
    ck_assert_float_eq(sf_round_bf16(1.0f + 0x1p-8f), 1.0f);
    ck_assert_float_eq(sf_round_bf16(1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);
    ck_assert_float_eq(sf_round_bf16(-1.0f - 0x1p-8f - 0x1p-20f), -1.0f - 0x1p-7f);
    /* tf32 keeps 10 mantissa bits, truncated toward zero. */
    ck_assert_float_eq(sf_trunc_tf32(1.0f + 0x1p-10f + 0x1p-11f), 1.0f + 0x1p-10f);
    ck_assert_float_eq(sf_trunc_tf32(-1.0f - 0x1p-11f), -1.0f);
    ck_assert(isinf(sf_round_bf16(INFINITY)) && isnan(sf_trunc_tf32(NAN)));
}
END_TEST

/* Largest |expected| of one canary output over a bundle's golden positions. */
static double expected_max(const sf_bundle *b, sf_canary_output o) {
    double m = 0;
    for (int i = 0; i < sf_positions_count(sf_bundle_canary(b)); i++) {
        sf_net_out w;
        sf_bundle_canary_expected(b, i, &w);
        if (o == SF_CANARY_FORECAST)
            for (int h = 0; h < SF_NET_HORIZONS; h++)
                for (int k = 0; k < SF_NET_FORECAST_TARGETS; k++)
                    m = fmax(m, fabs(w.forecast[h][k]));
        else if (o == SF_CANARY_POLICY)
            for (int q = 0; q < w.n_queries; q++)
                m = fmax(m, fabs(w.policy[q]));
        else if (o == SF_CANARY_VALUE)
            for (int k = 0; k < SF_NET_VALUE_BINS; k++)
                m = fmax(m, w.value[k]);
    }
    return m;
}

/* (a) The trained fixture (tests/fixtures/models/train_tiny.py) has the
 * magnitudes of a real model, and the cpu backend passes its canary, whose
 * expected outputs come from PyTorch in float64, within its fp32
 * tolerances. */
START_TEST(trained_bundle_passes_its_fp32_canary) {
    sf_bundle *b = fx_load(FX_TRAINED_BUNDLE);
    ck_assert_int_eq(sf_bundle_format_version(b), 2);
    ck_assert_int_eq(sf_positions_count(sf_bundle_canary(b)), 16);
    /* Raw-unit forecasts of tens of HP, a peaked value distribution,
     * confident logits. */
    ck_assert_msg(expected_max(b, SF_CANARY_FORECAST) > 50.0, "forecasts %g",
                  expected_max(b, SF_CANARY_FORECAST));
    ck_assert(expected_max(b, SF_CANARY_POLICY) > 10.0);
    ck_assert(expected_max(b, SF_CANARY_VALUE) > 0.75); /* of 21 bins */
    sf_net *net = fx_cpu_net(b);
    sf_err e = {0};
    sf_canary_report r;
    ck_assert_msg(sf_net_canary(net, b, &r, &e) == SF_OK, "%s", e.msg);
    ck_assert(r.passed && r.precision == SF_PREC_FP32 && r.positions == 16);
    /* float64 reference against fp32 arithmetic: small but not zero */
    ck_assert(r.max_abs_err > 1e-7 && r.max_ratio <= 1.0);
    ck_assert(r.tol.out[SF_CANARY_FORECAST].abs == 1e-4 &&
              r.tol.out[SF_CANARY_FORECAST].rel == 1e-5);
    sf_net_free(net);
    sf_bundle_free(b);
}
END_TEST

/* (b) tf32 and bf16 emulated on the cpu backend (this file's emulation,
 * independent of the PyTorch one that measured the recorded tolerances):
 * the trained bundle passes with its tf32/bf16 tolerances, while the old
 * scheme, one absolute 0.02 for every output, refuses it. Measuring again
 * in C gives tolerances of the same size as those PyTorch recorded. */
START_TEST(emulated_tf32_and_bf16_pass_recorded_tolerances_not_old_limit) {
    char dir[256], v1[512];
    fx_tmpdir(dir);
    snprintf(v1, sizeof v1, "%s/v1.safetensors", dir);
    /* The same bundle in format 1: canary_tolerance 0.0001, so tf32 and
     * bf16 get the old 0.02. */
    const char *kv[10] = {"format_version",        "1",  "canary_tolerance",      "0.0001",
                          "canary_tolerance_fp32", NULL, "canary_tolerance_tf32", NULL,
                          "canary_tolerance_bf16", NULL};
    fx_rewrite_meta(FX_TRAINED_BUNDLE, v1, kv, 5);
    sf_bundle *b = fx_load(FX_TRAINED_BUNDLE), *old = fx_load(v1);
    sf_err e = {0};
    for (int p = SF_PREC_TF32; p <= SF_PREC_BF16; p++) {
        sf_net *net;
        ck_assert_int_eq(sf_net_create_emulated(b, (sf_precision)p, 0, &net, &e), SF_OK);
        ck_assert_int_eq(sf_net_precision(net), p);
        sf_canary_report r;
        ck_assert_msg(sf_net_canary(net, b, &r, &e) == SF_OK, "%s: %s",
                      sf_precision_name((sf_precision)p), e.msg);
        ck_assert(r.passed && r.precision == (sf_precision)p && r.max_ratio <= 1.0);
        /* The forecasts' error in raw units is beyond the old limit... */
        ck_assert_msg(r.head_max_abs_err[SF_CANARY_FORECAST] > 0.02, "%s forecast error %g",
                      sf_precision_name((sf_precision)p), r.head_max_abs_err[SF_CANARY_FORECAST]);
        /* ...so the format-1 reading of the same bundle refuses it. */
        sf_canary_report ro;
        ck_assert_int_eq(sf_net_canary(net, old, &ro, &e), SF_ECORRUPT);
        ck_assert(ro.tol.out[ro.worst.head].abs == 0.02 && ro.tol.out[ro.worst.head].rel == 0.0);
        ck_assert_msg(strstr(e.msg, "emulated") &&
                          strstr(e.msg, ro.worst.head == SF_CANARY_FORECAST ? "output forecast["
                                                                            : "output policy["),
                      "%s", e.msg);
        sf_net_free(net);
    }
    /* The C measurement of the same bundle: errors beyond 0.02 in raw
     * units, and tolerances within a factor 2 of the recorded ones. */
    sf_canary_tol tol[SF_PRECISIONS];
    double measured[SF_PRECISIONS][SF_CANARY_OUTPUTS];
    int g = sf_positions_count(sf_bundle_canary(b));
    sf_net_out *exp = calloc((size_t)g, sizeof *exp);
    for (int i = 0; i < g; i++)
        sf_bundle_canary_expected(b, i, &exp[i]);
    ck_assert_int_eq(sf_canary_tol_measure(b, sf_bundle_canary(b), exp, tol, measured, &e), SF_OK);
    free(exp);
    for (int p = SF_PREC_TF32; p <= SF_PREC_BF16; p++) {
        ck_assert(measured[p][SF_CANARY_FORECAST] > 0.02 && measured[p][SF_CANARY_POLICY] > 0.02);
        for (int o = 0; o < SF_CANARY_OUTPUTS; o++) {
            double rec = sf_bundle_canary_tolerance(b, (sf_precision)p)->out[o].abs;
            ck_assert_msg(tol[p].out[o].abs <= 2 * rec && rec <= 2 * tol[p].out[o].abs,
                          "%s %s: C measures abs %g, PyTorch recorded %g",
                          sf_precision_name((sf_precision)p),
                          sf_canary_output_name((sf_canary_output)o), tol[p].out[o].abs, rec);
            ck_assert(tol[p].out[o].rel ==
                      sf_bundle_canary_tolerance(b, (sf_precision)p)->out[o].rel);
        }
    }
    ck_assert(measured[SF_PREC_FP32][SF_CANARY_FORECAST] < 1e-4);
    sf_bundle_free(old);
    sf_bundle_free(b);
    fx_rmdir(dir);
}
END_TEST

/* Replace canary.forecast of the trained fixture with one element moved by
 * `delta`, writing dir/name; returns the element's expected value. */
static float perturb_forecast(const char *dir, const char *name, int pos, int h, int k,
                              double delta, char out[512]) {
    sf_tensor t;
    float *f = fx_tensor_copy(FX_TRAINED_BUNDLE, "canary.forecast", &t);
    float *x = &f[(pos * SF_NET_HORIZONS + h) * SF_NET_FORECAST_TARGETS + k];
    float want = *x;
    *x = (float)(*x + delta);
    snprintf(out, 512, "%s/%s", dir, name);
    fx_rewrite(FX_TRAINED_BUNDLE, out, NULL, &t, NULL, NULL);
    free(f);
    return want;
}

/* (c) An expected output moved beyond its tolerance is refused, and the
 * message names the output element, the precision and both parts; moved by
 * less than abs + rel |want| but more than the old absolute 1e-4, it
 * passes. */
START_TEST(perturbed_output_beyond_tolerance_is_refused_naming_it) {
    char dir[256], path[512];
    fx_tmpdir(dir);
    sf_err e = {0};
    /* position 9, forecast h=1 monster_hp_total: tens of HP */
    float want = perturb_forecast(dir, "far.safetensors", 9, 0, 3, 0.0, path);
    ck_assert_msg(fabsf(want) > 20.0f, "want %g", (double)want);
    double limit = 1e-4 + 1e-5 * fabs((double)want);
    perturb_forecast(dir, "far.safetensors", 9, 0, 3, 1.5 * limit, path);
    sf_bundle *b = fx_load(path);
    sf_net *net = fx_cpu_net(b);
    sf_canary_report r;
    ck_assert_int_eq(sf_net_canary(net, b, &r, &e), SF_ECORRUPT);
    ck_assert_int_eq(r.worst_position, 9);
    ck_assert_str_eq(r.worst.where, "forecast[0][3]");
    ck_assert(r.max_ratio > 1.3 && r.max_ratio < 1.7);
    ck_assert_msg(strstr(e.msg, "canary failed on the cpu backend in fp32: golden position 9 "
                                "output forecast[0][3]") &&
                      strstr(e.msg, "(fp32 tolerance of forecast: abs 0.0001 + rel 1e-05 x "
                                    "|expected|)"),
                  "%s", e.msg);
    sf_net_free(net);
    sf_bundle_free(b);

    /* Within abs + rel |want| but past the old absolute 1e-4: passes. */
    perturb_forecast(dir, "near.safetensors", 9, 0, 3, 0.6 * limit, path);
    ck_assert(0.6 * limit > 1e-4 + 7.7e-6);
    b = fx_load(path);
    ck_assert_int_eq(sf_net_create(b, NULL, &net, &e), SF_OK);
    ck_assert_msg(sf_net_canary(net, b, &r, &e) == SF_OK, "%s", e.msg);
    ck_assert(r.max_abs_err > 1e-4);
    sf_net_free(net);
    sf_bundle_free(b);

    /* Under bf16 (emulated) the bf16 tolerance applies: 2 x its limit is
     * refused, naming bf16. */
    sf_bundle *t = fx_load(FX_TRAINED_BUNDLE);
    const sf_tol *bt = &sf_bundle_canary_tolerance(t, SF_PREC_BF16)->out[SF_CANARY_FORECAST];
    double blimit = bt->abs + bt->rel * fabs((double)want);
    char msgpart[128];
    snprintf(msgpart, sizeof msgpart, "(bf16 tolerance of forecast: abs %.3g + rel %.3g x", bt->abs,
             bt->rel);
    sf_bundle_free(t);
    perturb_forecast(dir, "bf16.safetensors", 9, 0, 3, 2.0 * blimit, path);
    b = fx_load(path);
    ck_assert_int_eq(sf_net_create_emulated(b, SF_PREC_BF16, 0, &net, &e), SF_OK);
    ck_assert_int_eq(sf_net_canary(net, b, &r, &e), SF_ECORRUPT);
    ck_assert_str_eq(r.worst.where, "forecast[0][3]");
    ck_assert_msg(strstr(e.msg, "on the cpu backend in bf16 (emulated): golden position 9 output "
                                "forecast[0][3]") &&
                      strstr(e.msg, msgpart),
                  "%s", e.msg);
    sf_net_free(net);
    sf_bundle_free(b);
    fx_rmdir(dir);
}
END_TEST

/* Priors are the softmax of the logits: (0, ln 2, ln 4) -> (1/7, 2/7, 4/7). */
START_TEST(priors_are_the_softmax_of_the_policy_logits) {
    sf_net_out o;
    memset(&o, 0, sizeof o);
    o.n_queries = 3;
    o.policy[0] = 0.0f;
    o.policy[1] = (float)log(2.0);
    o.policy[2] = (float)log(4.0);
    o.policy[3] = 100.0f; /* not a legal query: ignored */
    float pr[4] = {-1, -1, -1, -1};
    sf_net_out_priors(&o, pr);
    ck_assert_double_eq_tol(pr[0], 1.0 / 7.0, 1e-7);
    ck_assert_double_eq_tol(pr[1], 2.0 / 7.0, 1e-7);
    ck_assert_double_eq_tol(pr[2], 4.0 / 7.0, 1e-7);
    ck_assert_float_eq(pr[3], -1.0f);
}
END_TEST

/* Without a GPU (or without the cuda backend built in) the cuda backend is
 * a clear SF_EUNSUPPORTED, never a crash or a silent cpu fallback; with a
 * GPU it must agree with the cpu backend within 1e-4 in fp32. */
START_TEST(cuda_backend_fails_clearly_or_matches_cpu) {
    fx_tiny t;
    sf_bundle *b = fx_tiny_open(&t, "tiny.safetensors", 9, 8);
    sf_net *net;
    sf_err e = {0};
    sf_net_opts o = {.backend = SF_BACKEND_CUDA, .max_batch = 64};
    int rc = sf_net_create(b, &o, &net, &e);
    if (rc == SF_OK) {
        sf_canary_report r;
        ck_assert_int_eq(sf_net_canary(net, b, &r, &e), SF_OK);
        ck_assert(r.passed && r.max_ratio <= 1.0);
        sf_net_free(net);
    } else {
        ck_assert_int_eq(rc, SF_EUNSUPPORTED);
        ck_assert_ptr_null(net);
        ck_assert_msg(strstr(e.msg, "cuda backend") &&
                          (strstr(e.msg, "GPU") || strstr(e.msg, "not built")),
                      "unclear message: %s", e.msg);
    }
    /* The cpu backend refuses reduced precision instead of ignoring it. */
    sf_net_opts bad = {.backend = SF_BACKEND_CPU, .precision = SF_PREC_BF16};
    ck_assert_int_eq(sf_net_create(b, &bad, &net, &e), SF_EINVAL);
    fx_tiny_close(&t);
}
END_TEST

#include "test-model-net.tests.h" /* SF_TESTS: every START_TEST above (tests/meson.build) */
SF_CHECK_MAIN("model-net", "net", 120, NULL, NULL)
