/* test_gate_stats.c — the gate's statistics (gate/stats.h) against values
 * worked out by hand (the arithmetic is in the comments), against
 * independent computations (exact integer counts, brute-force enumeration,
 * long-double sums, a direct maximisation of the likelihood), and for the
 * properties a gate relies on: identical sides are never promoted, the SPRT
 * stops at exactly the pair where a bound is crossed, the bootstrap gives the
 * same bytes for the same seed. tests/integration/test_gate_stats.py checks
 * the same functions against scipy.stats. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gate/stats.h"
#include "sf_check.h"

/* bootstrap_golden_bytes: the interval of fill_scores(d, 500, 42) with 999
 * resamples at 95 %, seed 7 (-0.0184057614106069..., 0.0281856259983303...). */
#define GOLDEN_LO -0x1.2d8f5bd4421efp-6
#define GOLDEN_HI 0x1.cdcb157853d28p-6

/* ---- the sign test ------------------------------------------------------ */

START_TEST(sign_test_by_hand) {
    sf_gate_sign s;
    /* b = 7, c = 2: m = 9, P(X >= 7) = (C(9,7) + C(9,8) + C(9,9)) / 2^9
     * = (36 + 9 + 1)/512 = 46/512 = 0.08984375; two-sided: the mirror tail
     * P(X <= 2) is the same 46/512, so 92/512 = 0.1796875. */
    ck_assert_int_eq(sf_gate_sign_test(7, 2, &s, NULL), SF_OK);
    ck_assert_double_eq_tol(s.p_greater, 46.0 / 512, 1e-15);
    ck_assert_double_eq_tol(s.p_two_sided, 92.0 / 512, 1e-15);
    ck_assert_double_eq_tol(s.log_p_greater, log(46.0 / 512), 1e-14);
    /* b = 2, c = 7: P(X >= 2) = 1 - (C(9,0) + C(9,1))/512 = 502/512; the
     * two-sided p does not depend on the direction. */
    ck_assert_int_eq(sf_gate_sign_test(2, 7, &s, NULL), SF_OK);
    ck_assert_double_eq_tol(s.p_greater, 502.0 / 512, 1e-15);
    ck_assert_double_eq_tol(s.p_two_sided, 92.0 / 512, 1e-15);
    /* b = c = 5: P(X >= 5) = (252 + 210 + 120 + 45 + 10 + 1)/1024 = 638/1024;
     * b = m/2 is the centre: two-sided p = 1. */
    ck_assert_int_eq(sf_gate_sign_test(5, 5, &s, NULL), SF_OK);
    ck_assert_double_eq_tol(s.p_greater, 638.0 / 1024, 1e-15);
    ck_assert_double_eq(s.p_two_sided, 1.0);
    /* b = 10, c = 0: 2^-10 one-sided, 2 * 2^-10 two-sided. */
    ck_assert_int_eq(sf_gate_sign_test(10, 0, &s, NULL), SF_OK);
    ck_assert_double_eq_tol(s.p_greater, 1.0 / 1024, 1e-18);
    ck_assert_double_eq_tol(s.p_two_sided, 2.0 / 1024, 1e-18);
    /* b = 4, c = 3 (m odd, next to the centre): P(X >= 4) = (C(7,4) +
     * C(7,5) + C(7,6) + C(7,7))/128 = (35 + 21 + 7 + 1)/128 = 1/2; the
     * two-sided p is 2 * 1/2 = 1. */
    ck_assert_int_eq(sf_gate_sign_test(4, 3, &s, NULL), SF_OK);
    ck_assert_double_eq_tol(s.p_greater, 0.5, 1e-15);
    ck_assert_double_eq(s.p_two_sided, 1.0);
}
END_TEST

START_TEST(no_discordant_pairs_gives_p_one) {
    sf_gate_sign s;
    ck_assert_int_eq(sf_gate_sign_test(0, 0, &s, NULL), SF_OK);
    ck_assert_double_eq(s.p_greater, 1.0);
    ck_assert_double_eq(s.p_two_sided, 1.0);
    ck_assert_double_eq(s.log_p_greater, 0.0);
}
END_TEST

START_TEST(sign_test_refuses_bad_counts) {
    sf_gate_sign s;
    sf_err e = {0};
    ck_assert_int_eq(sf_gate_sign_test(-1, 3, &s, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "b=-1"));
    ck_assert_int_eq(sf_gate_sign_test(SF_GATE_BINOM_N_MAX, 1, &s, NULL), SF_EINVAL);
    ck_assert_int_eq(sf_gate_sign_test(1, 1, NULL, NULL), SF_EINVAL);
}
END_TEST

/* P(X >= b), X ~ Bin(n, 1/2), summed term by term in long double from
 * lgammal: a different algorithm from the module's (Loader's expansion and a
 * ratio recurrence). */
static long double tail_lgammal(int64_t b, int64_t n) {
    long double lfn = lgammal((long double)n + 1), ln2 = logl(2.0L), s = 0;
    for (int64_t k = b; k <= n; k++) {
        long double t =
            expl(lfn - lgammal((long double)k + 1) - lgammal((long double)(n - k) + 1) - n * ln2);
        s += t;
        if (k > n / 2 + 10 && t < s * 1e-22L)
            break;
    }
    return s;
}

START_TEST(sign_test_exact_at_a_million_pairs) {
    sf_gate_sign s;
    /* 500,500 of 10^6: z = (500500 - 500000)/500 = 1, p near 0.1587. */
    ck_assert_int_eq(sf_gate_sign_test(500500, 499500, &s, NULL), SF_OK);
    double ref = (double)tail_lgammal(500500, 1000000);
    ck_assert_double_eq_tol(s.p_greater, ref, 1e-9 * ref);
    ck_assert_double_eq_tol(s.p_two_sided, 2 * ref, 2e-9 * ref);
    ck_assert_double_gt(s.p_greater, 0.158);
    ck_assert_double_lt(s.p_greater, 0.160);
    /* 502,000 of 10^6: four standard deviations, p near 3e-5. */
    ck_assert_int_eq(sf_gate_sign_test(502000, 498000, &s, NULL), SF_OK);
    ref = (double)tail_lgammal(502000, 1000000);
    ck_assert_double_eq_tol(s.p_greater, ref, 1e-9 * ref);
    /* All 10^6 discordant pairs to the candidate: p = 2^-10^6, which no
     * double holds, but its log is exact: -10^6 ln 2 = -693147.1805599453. */
    ck_assert_int_eq(sf_gate_sign_test(1000000, 0, &s, NULL), SF_OK);
    ck_assert_double_eq(s.p_greater, 0.0);
    ck_assert_double_eq_tol(s.log_p_greater, -1e6 * M_LN2, 1e-8);
}
END_TEST

START_TEST(binomial_tails_are_complementary) {
    /* P(X >= k) + P(X <= k - 1) = 1, for either side of the mean. */
    const int64_t n[] = {1, 9, 100, 1001, 100000};
    const double p[] = {0.5, 0.03, 0.97, 0.3333};
    for (size_t i = 0; i < sizeof n / sizeof *n; i++)
        for (size_t j = 0; j < sizeof p / sizeof *p; j++)
            for (int64_t k = 0; k <= n[i]; k += 1 + n[i] / 37) {
                double ge = exp(sf_gate_binom_log_sf(k, n[i], p[j]));
                double le = exp(sf_gate_binom_log_cdf(k - 1, n[i], p[j]));
                ck_assert_double_eq_tol(ge + le, 1.0, 1e-13);
            }
    ck_assert(isnan(sf_gate_binom_log_sf(1, -1, 0.5)));
    ck_assert(isnan(sf_gate_binom_log_pmf(1, 3, 1.5)));
}
END_TEST

START_TEST(binomial_pmf_against_exact_counts) {
    /* C(n, k) exactly in 64 bits for n <= 60, times p^k q^(n-k). */
    for (int n = 1; n <= 60; n++) {
        uint64_t c = 1;
        for (int k = 0; k <= n; k++) {
            for (int pi = 1; pi <= 3; pi++) {
                double p = pi == 1 ? 0.5 : pi == 2 ? 0.1 : 0.77;
                double want = (double)c * pow(p, k) * pow(1 - p, n - k);
                double got = exp(sf_gate_binom_log_pmf(k, n, p));
                ck_assert_double_eq_tol(got, want, 1e-13 * want);
            }
            c = c * (uint64_t)(n - k) / (uint64_t)(k + 1); /* < 2^62 for n <= 60 */
        }
    }
}
END_TEST

/* ---- Clopper-Pearson and the win-rate difference ------------------------ */

START_TEST(clopper_pearson_closed_forms) {
    double lo, hi;
    /* x = 0 of 10 at 95 %: (1 - hi)^10 = 0.025, hi = 1 - 0.025^(1/10). */
    ck_assert_int_eq(sf_gate_clopper_pearson(0, 10, 0.95, &lo, &hi, NULL), SF_OK);
    ck_assert_double_eq(lo, 0.0);
    ck_assert_double_eq_tol(hi, 1 - pow(0.025, 0.1), 1e-15);
    /* x = n = 10: lo^10 = 0.025. */
    ck_assert_int_eq(sf_gate_clopper_pearson(10, 10, 0.95, &lo, &hi, NULL), SF_OK);
    ck_assert_double_eq_tol(lo, pow(0.025, 0.1), 1e-15);
    ck_assert_double_eq(hi, 1.0);
    /* 1 of 1: P(X >= 1 | lo) = lo = 0.025. */
    ck_assert_int_eq(sf_gate_clopper_pearson(1, 1, 0.95, &lo, &hi, NULL), SF_OK);
    ck_assert_double_eq_tol(lo, 0.025, 1e-15);
    /* 1 of 2: 1 - (1 - lo)^2 = 0.025 and 1 - hi^2 = 0.025, so
     * lo = 1 - sqrt(0.975), hi = sqrt(0.975). */
    ck_assert_int_eq(sf_gate_clopper_pearson(1, 2, 0.95, &lo, &hi, NULL), SF_OK);
    ck_assert_double_eq_tol(lo, 1 - sqrt(0.975), 1e-15);
    ck_assert_double_eq_tol(hi, sqrt(0.975), 1e-15);
    /* No trials: [0, 1]. */
    ck_assert_int_eq(sf_gate_clopper_pearson(0, 0, 0.95, &lo, &hi, NULL), SF_OK);
    ck_assert_double_eq(lo, 0.0);
    ck_assert_double_eq(hi, 1.0);
    ck_assert_int_eq(sf_gate_clopper_pearson(3, 2, 0.95, &lo, &hi, NULL), SF_EINVAL);
    ck_assert_int_eq(sf_gate_clopper_pearson(1, 2, 1.0, &lo, &hi, NULL), SF_EINVAL);
}
END_TEST

START_TEST(clopper_pearson_solves_its_equations) {
    /* At lo, P(X >= x) = a; at hi, P(X <= x) = a (a = 0.05 at 90 %). */
    const int64_t x[] = {1, 7, 115, 4000, 49999};
    const int64_t n[] = {3, 9, 200, 10000, 100000};
    for (int i = 0; i < 5; i++) {
        double lo, hi;
        ck_assert_int_eq(sf_gate_clopper_pearson(x[i], n[i], 0.9, &lo, &hi, NULL), SF_OK);
        ck_assert_double_eq_tol(exp(sf_gate_binom_log_sf(x[i], n[i], lo)), 0.05, 1e-12);
        ck_assert_double_eq_tol(exp(sf_gate_binom_log_cdf(x[i], n[i], hi)), 0.05, 1e-12);
        ck_assert_double_lt(lo, (double)x[i] / n[i]);
        ck_assert_double_gt(hi, (double)x[i] / n[i]);
    }
}
END_TEST

START_TEST(winrate_interval_by_hand) {
    sf_gate_winrate w;
    /* b = 7, c = 2 in n = 100 pairs: Delta = 5/100; the interval is
     * 9/100 * (2 theta - 1) at the Clopper-Pearson ends for 7 of 9. */
    ck_assert_int_eq(sf_gate_winrate_diff(7, 2, 100, 0.95, &w, NULL), SF_OK);
    double lo, hi;
    sf_gate_clopper_pearson(7, 9, 0.95, &lo, &hi, NULL);
    ck_assert_double_eq_tol(w.diff, 0.05, 1e-15);
    ck_assert_double_eq_tol(w.lo, 0.09 * (2 * lo - 1), 1e-15);
    ck_assert_double_eq_tol(w.hi, 0.09 * (2 * hi - 1), 1e-15);
    ck_assert_double_eq(w.theta_lo, lo);
    /* The two-sided p of 7 vs 2 is 0.18 > 0.05, so 0 is inside. */
    ck_assert_double_lt(w.lo, 0.0);
    ck_assert_double_gt(w.hi, 0.0);
    /* 10 vs 0: two-sided p = 2/1024 < 0.05, so 0 is outside. */
    ck_assert_int_eq(sf_gate_winrate_diff(10, 0, 100, 0.95, &w, NULL), SF_OK);
    ck_assert_double_gt(w.lo, 0.0);
    /* No discordant pair: [0, 0]. */
    ck_assert_int_eq(sf_gate_winrate_diff(0, 0, 50, 0.95, &w, NULL), SF_OK);
    ck_assert_double_eq(w.diff, 0.0);
    ck_assert_double_eq(w.lo, 0.0);
    ck_assert_double_eq(w.hi, 0.0);
    ck_assert_int_eq(sf_gate_winrate_diff(30, 30, 50, 0.95, &w, NULL), SF_EINVAL);
}
END_TEST

START_TEST(winrate_interval_agrees_with_the_sign_test) {
    /* 0 outside the 95 % interval exactly when two-sided p < 0.05. */
    for (int64_t m = 1; m <= 120; m += 7)
        for (int64_t b = 0; b <= m; b++) {
            sf_gate_winrate w;
            sf_gate_sign s;
            ck_assert_int_eq(sf_gate_winrate_diff(b, m - b, 500, 0.95, &w, NULL), SF_OK);
            ck_assert_int_eq(sf_gate_sign_test(b, m - b, &s, NULL), SF_OK);
            ck_assert_int_eq(w.lo > 0 || w.hi < 0, s.p_two_sided < 0.05);
        }
}
END_TEST

/* ---- Wilcoxon, the mean, the bootstrap ---------------------------------- */

/* The Wilcoxon test of d[0..n) (scratch: sf_gate_wilcoxon_test's). */
static sf_gate_wilcoxon wilcoxon_of(const double *d, size_t n, double *scratch) {
    sf_gate_wilcoxon w;
    ck_assert_int_eq(sf_gate_wilcoxon_test(d, n, scratch, &w, NULL), SF_OK);
    return w;
}

START_TEST(wilcoxon_exact_by_hand) {
    /* Darwin's corn differences (SciPy's example): ranks of |d| are 1..15
     * in the order listed, the negatives -48 and -67 have ranks 10 and 14,
     * so r_minus = 24 and r_plus = 120 - 24 = 96. P(R+ >= 96) = P(R- <= 24)
     * = (sign patterns of {1..15} with negative-rank sum <= 24)/2^15; the
     * count is 676 (enumerated below), so p = 676/32768 = 0.0206298828125
     * and the two-sided p is twice that, 0.041259765625. */
    const double d[15] = {6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75};
    sf_gate_wilcoxon w = wilcoxon_of(d, 15, NULL);
    ck_assert_int_eq(w.exact, 1);
    ck_assert_double_eq(w.r_plus, 96);
    ck_assert_double_eq(w.r_minus, 24);
    int count = 0;
    for (unsigned mask = 0; mask < 1u << 15; mask++) {
        int s = 0;
        for (int r = 1; r <= 15; r++)
            if (mask >> (r - 1) & 1)
                s += r;
        count += s <= 24;
    }
    ck_assert_int_eq(count, 676);
    ck_assert_double_eq(w.p_greater, 676.0 / 32768);
    ck_assert_double_eq(w.p_two_sided, 2 * 676.0 / 32768);
}
END_TEST

START_TEST(wilcoxon_exact_small_cases) {
    /* n = 1, d = {0.3}: R+ is 0 or 1 with probability 1/2 each; r_plus = 1:
     * p_greater = 1/2, two-sided min(1, 2 * 1/2) = 1. n = 3 all positive:
     * r_plus = 6, the maximum, p = 1/8, two-sided 1/4. */
    const double one[1] = {0.3}, three[3] = {0.1, 0.2, 0.3};
    sf_gate_wilcoxon w = wilcoxon_of(one, 1, NULL);
    ck_assert_double_eq(w.p_greater, 0.5);
    ck_assert_double_eq(w.p_two_sided, 1.0);
    w = wilcoxon_of(three, 3, NULL);
    ck_assert_double_eq(w.p_greater, 0.125);
    ck_assert_double_eq(w.p_two_sided, 0.25);
}
END_TEST

START_TEST(wilcoxon_approximation_with_ties_and_zeros_by_hand) {
    /* d = {1, -1, 2, 3, 0}: the zero is dropped (m = 4); |d| = 1, 1, 2, 3
     * ranks 1.5, 1.5, 3, 4; r_plus = 1.5 + 3 + 4 = 8.5, r_minus = 1.5; one
     * tie group of t = 2: t^3 - t = 6. mu = 4*5/4 = 5, sigma^2 = 4*5*9/24 -
     * 6/48 = 7.5 - 0.125 = 7.375. One-sided z = (8.5 - 5 - 0.5)/sqrt(7.375)
     * = 1.1046895...; two-sided T = 1.5, z2 = (1.5 - 5 + 0.5)/sigma = -z. */
    const double d[5] = {1, -1, 2, 3, 0};
    double scratch[5];
    sf_gate_wilcoxon w = wilcoxon_of(d, 5, scratch);
    ck_assert_int_eq(w.exact, 0);
    ck_assert_uint_eq(w.n, 4);
    ck_assert_uint_eq(w.zeros, 1);
    ck_assert_double_eq(w.r_plus, 8.5);
    ck_assert_double_eq(w.r_minus, 1.5);
    ck_assert_double_eq(w.tie_term, 6);
    double z = 3.0 / sqrt(7.375);
    ck_assert_double_eq_tol(w.z, z, 1e-15);
    ck_assert_double_eq_tol(w.p_greater, 0.5 * erfc(z / sqrt(2.0)), 1e-15);
    ck_assert_double_eq_tol(w.p_two_sided, erfc(z / sqrt(2.0)), 1e-15);
    /* The same without the zero but with the tie: still the approximation
     * (stats.h: ties never use the exact table). */
    w = wilcoxon_of(d, 4, NULL);
    ck_assert_int_eq(w.exact, 0);
    ck_assert_double_eq_tol(w.z, z, 1e-15);
}
END_TEST

START_TEST(wilcoxon_all_zero_is_no_evidence) {
    const double d[4] = {0, 0, 0, 0};
    sf_gate_wilcoxon w = wilcoxon_of(d, 4, NULL);
    ck_assert_uint_eq(w.n, 0);
    ck_assert_uint_eq(w.zeros, 4);
    ck_assert_double_eq(w.p_greater, 1.0);
    ck_assert_double_eq(w.p_two_sided, 1.0);
    const double bad[2] = {0.1, NAN};
    ck_assert_int_eq(sf_gate_wilcoxon_test(bad, 2, NULL, &w, NULL), SF_EINVAL);
}
END_TEST

START_TEST(mean_is_compensated) {
    /* Plain summation of {1e16, 1, -1e16} gives 0; the exact mean is 1/3. */
    const double d[3] = {1e16, 1, -1e16};
    ck_assert_double_eq_tol(sf_gate_mean(d, 3), 1.0 / 3, 1e-16);
    ck_assert(isnan(sf_gate_mean(d, 0)));
}
END_TEST

static void fill_scores(double *d, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) {
        double u = (double)(sf_mix64(seed + i) >> 11) * 0x1p-53;
        d[i] = u < 0.1 ? 0.6 : u > 0.9 ? -0.6 : (u - 0.5) * 0.2;
    }
}

START_TEST(bootstrap_is_byte_identical_for_a_seed) {
    double d[500], s1[999], s2[999];
    fill_scores(d, 500, 42);
    sf_gate_interval a, b, c;
    ck_assert_int_eq(sf_gate_bootstrap_mean(d, 500, 999, 0.95, 7, s1, &a, NULL), SF_OK);
    ck_assert_int_eq(sf_gate_bootstrap_mean(d, 500, 999, 0.95, 7, NULL, &b, NULL), SF_OK);
    ck_assert_mem_eq(&a, &b, sizeof a);
    ck_assert_int_eq(sf_gate_bootstrap_mean(d, 500, 999, 0.95, 7, s2, &b, NULL), SF_OK);
    ck_assert_mem_eq(s1, s2, sizeof s1); /* the sorted resample means too */
    ck_assert_int_eq(sf_gate_bootstrap_mean(d, 500, 999, 0.95, 8, NULL, &c, NULL), SF_OK);
    ck_assert(a.lo != c.lo || a.hi != c.hi);
    ck_assert_double_eq(a.mean, c.mean);
    ck_assert_double_lt(a.lo, a.mean);
    ck_assert_double_gt(a.hi, a.mean);
    /* The interval's width is near 2 * 1.96 * sd/sqrt(n) (the sample's sd
     * is about 0.27 here): well inside a factor of 1.3 either way. */
    double ss = 0;
    for (int i = 0; i < 500; i++)
        ss += (d[i] - a.mean) * (d[i] - a.mean);
    double want = 2 * 1.96 * sqrt(ss / 499) / sqrt(500.0);
    ck_assert_double_gt(a.hi - a.lo, want / 1.3);
    ck_assert_double_lt(a.hi - a.lo, want * 1.3);
}
END_TEST

START_TEST(bootstrap_golden_bytes) {
    /* The documented stream pinned: these bits change only if the generator,
     * the index mapping, the summation or the quantile rule changes (then
     * the gate's reports change too, and docs/gate.md should say so). */
    double d[500];
    fill_scores(d, 500, 42);
    sf_gate_interval a;
    ck_assert_int_eq(sf_gate_bootstrap_mean(d, 500, 999, 0.95, 7, NULL, &a, NULL), SF_OK);
    ck_assert_double_eq(a.lo, GOLDEN_LO);
    ck_assert_double_eq(a.hi, GOLDEN_HI);
}
END_TEST

START_TEST(bootstrap_degenerate_cases) {
    /* One difference: every resample is that difference. */
    const double one[1] = {0.25};
    sf_gate_interval a;
    ck_assert_int_eq(sf_gate_bootstrap_mean(one, 1, 100, 0.95, 1, NULL, &a, NULL), SF_OK);
    ck_assert_double_eq(a.lo, 0.25);
    ck_assert_double_eq(a.hi, 0.25);
    /* {0, 1} with many resamples of 2: means 0, 1/2, 1 with probabilities
     * 1/4, 1/2, 1/4, so the 2.5 % and 97.5 % quantiles are 0 and 1. */
    const double two[2] = {0, 1};
    ck_assert_int_eq(sf_gate_bootstrap_mean(two, 2, 10000, 0.95, 1, NULL, &a, NULL), SF_OK);
    ck_assert_double_eq(a.lo, 0.0);
    ck_assert_double_eq(a.hi, 1.0);
    ck_assert_int_eq(sf_gate_bootstrap_mean(two, 0, 100, 0.95, 1, NULL, &a, NULL), SF_EINVAL);
    ck_assert_int_eq(sf_gate_bootstrap_mean(two, 2, 1, 0.95, 1, NULL, &a, NULL), SF_EINVAL);
}
END_TEST

/* ---- the trinomial MLE and the LLR -------------------------------------- */

START_TEST(trinomial_mle_by_hand) {
    /* Counts n- = 1, n0 = 2, n+ = 3 (pi = 1/6, 2/6, 3/6, mean 1/3). */
    double p[3], lam;
    /* delta = 0: the quadratic's A = 0, so lambda = -C/B with
     * C = 1/3, B = -(pi- + pi+) = -2/3: lambda = 1/2, and p =
     * (1/6)/(1 - 1/2), (2/6)/1, (3/6)/(1 + 1/2) = 1/3 each. */
    ck_assert_int_eq(sf_gate_trinomial_mle(1, 2, 3, 0.0, p, &lam), SF_OK);
    ck_assert_double_eq_tol(lam, 0.5, 1e-15);
    for (int i = 0; i < 3; i++)
        ck_assert_double_eq_tol(p[i], 1.0 / 3, 1e-15);
    /* delta = 0.2: u, v, w = -1.2, -0.2, 0.8; A = uvw = 24/125,
     * B = (1/6)(-1.2)(0.6) + (2/6)(-0.2)(-0.4) + (3/6)(0.8)(-1.4) = -49/75,
     * C = 1/3 - 0.2 = 2/15; B^2 - 4AC = 2401/5625 - 576/5625 = 73/225, and
     * the root in (-1/0.8, 1/1.2) is lambda = 5 (49 - 5 sqrt 73)/144 =
     * 0.2180549... */
    ck_assert_int_eq(sf_gate_trinomial_mle(1, 2, 3, 0.2, p, &lam), SF_OK);
    ck_assert_double_eq_tol(lam, 5 * (49 - 5 * sqrt(73.0)) / 144, 1e-15);
    ck_assert_double_eq_tol(p[0] + p[1] + p[2], 1.0, 1e-15);
    ck_assert_double_eq_tol(p[2] - p[0], 0.2, 1e-15);
    ck_assert_int_eq(sf_gate_trinomial_mle(1, 2, 3, 1.0, p, &lam), SF_EINVAL);
}
END_TEST

/* The constrained log-likelihood n+ ln p+ + n- ln(p+ - delta) + n0 ln(1 -
 * 2 p+ + delta), maximised over p+ by golden-section search: a direct
 * computation that shares nothing with the Lagrange solution. */
static double direct_mle_plus(double nm, double nz, double np, double delta) {
    double lo = fmax(delta, 0.0) + 1e-15, hi = (1 + delta) / 2 - 1e-15;
    const double g = (sqrt(5.0) - 1) / 2;
    for (int it = 0; it < 200; it++) {
        double a = hi - g * (hi - lo), b = lo + g * (hi - lo);
        double fa = np * log(a) + nm * log(a - delta) + nz * log(1 - 2 * a + delta);
        double fb = np * log(b) + nm * log(b - delta) + nz * log(1 - 2 * b + delta);
        if (fa < fb)
            lo = a;
        else
            hi = b;
    }
    return (lo + hi) / 2;
}

START_TEST(trinomial_mle_against_direct_maximisation) {
    const uint64_t c[][3] = {{85, 800, 115},  {115, 800, 85}, {3, 40, 9},
                             {500, 200, 300}, {1, 1, 1},      {20, 9000, 31}};
    const double deltas[] = {-0.05, 0.0, 0.03, 0.1};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        for (size_t j = 0; j < sizeof deltas / sizeof *deltas; j++) {
            double p[3], lam;
            ck_assert_int_eq(sf_gate_trinomial_mle(c[i][0], c[i][1], c[i][2], deltas[j], p, &lam),
                             SF_OK);
            double want =
                direct_mle_plus((double)c[i][0], (double)c[i][1], (double)c[i][2], deltas[j]);
            ck_assert_double_eq_tol(p[2], want, 1e-7);
            ck_assert_double_eq_tol(p[2] - p[0], deltas[j], 1e-14);
        }
}
END_TEST

START_TEST(llr_by_hand) {
    /* Counts (1, 2, 3), delta0 = 0 (lambda0 = 1/2), delta1 = 0.2 (lambda1
     * above): LLR = sum_i n_i [ln(1 + lambda0 (a_i - delta0)) - ln(1 +
     * lambda1 (a_i - delta1))]
     *   = 3 [ln 1.5 - ln(1 + 0.8 l1)] + 2 [0 - ln(1 - 0.2 l1)]
     *     + 1 [ln 0.5 - ln(1 - 1.2 l1)]  = 0.43340...  */
    double l1 = 5 * (49 - 5 * sqrt(73.0)) / 144;
    double want =
        3 * (log(1.5) - log(1 + 0.8 * l1)) - 2 * log(1 - 0.2 * l1) + (log(0.5) - log(1 - 1.2 * l1));
    ck_assert_double_eq_tol(sf_gate_llr_trinomial(1, 2, 3, 0.0, 0.2), want, 1e-14);
    ck_assert_double_eq_tol(want, 0.4334037, 1e-7);
    /* LLR_alt2: mu = 1/3, sigma^2 = 4/6 - 1/9 = 5/9, N = 6:
     * 6 * 0.2 * (2/3 - 0.2) / (2 * 5/9) = 0.504. */
    ck_assert_double_eq_tol(sf_gate_llr_trinomial_normal(1, 2, 3, 0.0, 0.2), 0.504, 1e-14);
    /* Swapping the hypotheses negates the LLR. */
    ck_assert_double_eq_tol(sf_gate_llr_trinomial(1, 2, 3, 0.2, 0.0), -want, 1e-14);
    /* A zero count is regularized to 1e-3: counts (0, 2, 3) at delta0 = 0
     * give pi = (1e-3, 2, 3)/5.001 and lambda0 = (3 - 1e-3)/(3 + 1e-3). */
    double p[3], lam;
    sf_gate_trinomial_mle(0, 2, 3, 0.0, p, &lam);
    ck_assert_double_eq_tol(lam, (3 - 1e-3) / (3 + 1e-3), 1e-15);
    ck_assert_double_eq(sf_gate_llr_trinomial(0, 0, 0, 0.0, 0.03), 0.0);
    ck_assert(isnan(sf_gate_llr_trinomial(1, 2, 3, -1.0, 0.03)));
}
END_TEST

START_TEST(llr_without_discordant_pairs_is_negative) {
    /* Only D = 0: the regularized mean is exactly 0 = delta0, so the H0
     * projection is the empirical distribution itself and the LLR is minus
     * the divergence to the H1 projection; for N pairs it falls about
     * N ln(1 - delta1), -0.0305 per pair at delta1 = 0.03. */
    for (uint64_t n = 1; n <= 100000; n *= 10) {
        double llr = sf_gate_llr_trinomial(0, n, 0, 0.0, 0.03);
        ck_assert_double_lt(llr, 0.0);
        if (n >= 1000)
            ck_assert_double_eq_tol(llr / (double)n, log(1 - 0.03), 2e-3);
    }
}
END_TEST

/* ---- the SPRT ----------------------------------------------------------- */

static sf_gate_rule rule_of(int metric, double d0, double d1, uint32_t min_pairs,
                            uint32_t max_pairs) {
    sf_gate_rule r = sf_gate_rule_default();
    r.alpha = r.beta = 0.05; /* Wald's bounds -ln 19, ln 19 */
    r.metric = metric;
    r.delta0 = d0;
    r.delta1 = d1;
    r.min_pairs = min_pairs;
    r.max_pairs = max_pairs;
    return r;
}

/* A test under `r` just started (history: sf_sprt_init's). */
static sf_sprt sprt_of(const sf_gate_rule *r, double *history, size_t cap) {
    sf_sprt s;
    ck_assert_int_eq(sf_sprt_init(&s, r, history, cap, NULL), SF_OK);
    return s;
}

START_TEST(wald_bounds) {
    /* alpha = beta = 0.05: ln(0.05/0.95) = -ln 19 and ln(0.95/0.05) = ln 19. */
    sf_gate_rule r = rule_of(SF_GATE_METRIC_WIN, 0, 0.03, 1, 10);
    sf_sprt s = sprt_of(&r, NULL, 0);
    ck_assert_double_eq_tol(s.lower, -log(19.0), 1e-15);
    ck_assert_double_eq_tol(s.upper, log(19.0), 1e-15);
    /* alpha = 0.01, beta = 0.1: ln(0.1/0.99), ln(0.9/0.01) = ln 90. */
    r.alpha = 0.01;
    r.beta = 0.1;
    s = sprt_of(&r, NULL, 0);
    ck_assert_double_eq_tol(s.lower, log(0.1 / 0.99), 1e-15);
    ck_assert_double_eq_tol(s.upper, log(90.0), 1e-15);
}
END_TEST

START_TEST(score_sprt_promotes_at_the_pair_it_crosses) {
    /* d alternates +0.3, -0.1 (delta0 = 0, delta1 = 0.05, ln 19 =
     * 2.944439). After an even n = 2k: mean 0.1, s^2 = 0.04, so LLR =
     * n * 0.05 * (0.2 - 0.05)/0.08 = 0.09375 n (2.8125 at n = 30). After an
     * odd n = 2k + 1: sum = 0.2k + 0.3, sum of squares 0.1k + 0.09, so at
     * n = 27: mean 2.9/27, s^2 = (1.39*27 - 2.9^2)/27^2 = 29.12/729,
     * LLR = 0.05 (5.8 - 1.35) 729 / 58.24 = 2.78508 < ln 19;
     * n = 29: mean 3.1/29, s^2 = (1.49*29 - 3.1^2)/29^2 = 33.6/841,
     * LLR = 0.05 (6.2 - 1.45) 841 / 67.2 = 2.97229 >= ln 19: the first
     * crossing (n = 1 has s^2 = 0, floored, so min_pairs = 2 here). */
    sf_gate_rule r = rule_of(SF_GATE_METRIC_SCORE, 0.0, 0.05, 2, 100);
    double hist[100];
    sf_sprt s = sprt_of(&r, hist, 100);
    int i = 0;
    while (sf_sprt_decision(&s) == SF_GATE_CONTINUE)
        ck_assert_int_eq(sf_sprt_add(&s, i++ % 2 ? -0.1 : 0.3), SF_OK);
    ck_assert_int_eq(sf_sprt_decision(&s), SF_GATE_PROMOTE);
    ck_assert_uint_eq(s.stop_pair, 29);
    ck_assert_double_eq_tol(sf_sprt_llr(&s), 0.05 * 4.75 * 841 / 67.2, 1e-12);
    size_t len;
    const double *h = sf_sprt_history(&s, &len);
    ck_assert_uint_eq(len, 29);
    ck_assert_double_eq_tol(h[26], 0.05 * 4.45 * 729 / 58.24, 1e-12);
    ck_assert_double_eq_tol(h[27], 0.09375 * 28, 1e-12);
    /* The test has decided: no more pairs. */
    ck_assert_int_eq(sf_sprt_add(&s, 0.3), SF_ESTATE);
    /* min_pairs = 30 hides the crossing at 29 (and n = 30 is 2.8125, below
     * the bound); n = 31: mean 3.3/31, s^2 = (1.59*31 - 3.3^2)/31^2 =
     * 38.4/961, LLR = 0.05 (6.6 - 1.55) 961/76.8 = 3.15957: stops at 31. */
    r.min_pairs = 30;
    s = sprt_of(&r, NULL, 0);
    i = 0;
    while (sf_sprt_decision(&s) == SF_GATE_CONTINUE)
        sf_sprt_add(&s, i++ % 2 ? -0.1 : 0.3);
    ck_assert_uint_eq(s.stop_pair, 31);
    ck_assert_double_eq_tol(sf_sprt_llr(&s), 0.05 * 5.05 * 961 / 76.8, 1e-12);
}
END_TEST

START_TEST(win_sprt_stops_exactly_at_the_first_crossing) {
    /* A fixed pattern of 20 outcomes with 3 candidate-only wins and 1
     * champion-only win (true Delta = +0.1), repeated; the expected stopping
     * pair is found from the pure LLR function, pair by pair. */
    const int pat[20] = {0, 1, 0, 0, 0, -1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
    sf_gate_rule r = rule_of(SF_GATE_METRIC_WIN, 0.0, 0.03, 50, 5000);
    uint64_t c[3] = {0, 0, 0};
    uint32_t want = 0;
    double lower = -log(19.0), upper = log(19.0);
    for (uint32_t n = 1; n <= 5000 && !want; n++) {
        c[pat[(n - 1) % 20] + 1]++;
        double l = sf_gate_llr_trinomial(c[0], c[1], c[2], 0.0, 0.03);
        if (n >= 50 && (l >= upper || l <= lower))
            want = n;
    }
    ck_assert_uint_gt(want, 50);
    sf_sprt s = sprt_of(&r, NULL, 0);
    for (uint32_t n = 1; sf_sprt_decision(&s) == SF_GATE_CONTINUE; n++) {
        ck_assert_int_eq(sf_sprt_add(&s, pat[(n - 1) % 20]), SF_OK);
        if (n < want)
            ck_assert_int_eq(sf_sprt_decision(&s), SF_GATE_CONTINUE);
    }
    ck_assert_int_eq(sf_sprt_decision(&s), SF_GATE_PROMOTE);
    ck_assert_uint_eq(s.stop_pair, want);
    ck_assert_double_ge(sf_sprt_llr(&s), upper);
    /* The mirror image, the champion better by as much, rejects. */
    s = sprt_of(&r, NULL, 0);
    for (uint32_t n = 1; sf_sprt_decision(&s) == SF_GATE_CONTINUE; n++)
        sf_sprt_add(&s, -pat[(n - 1) % 20]);
    ck_assert_int_eq(sf_sprt_decision(&s), SF_GATE_REJECT);
}
END_TEST

START_TEST(sprt_inconclusive_at_max_pairs) {
    /* A pattern of 67 pairs with 3 candidate-only and 2 champion-only wins:
     * mean 1/67 = 0.0149, halfway between delta0 = 0 and delta1 = 0.03,
     * where the LLR has no drift (LLR_alt2 after 402 pairs: 402 * 0.03 *
     * (2/67 - 0.03)/(2 * 0.0746) = -0.012). max_pairs = 402: inconclusive
     * at pair 402. */
    sf_gate_rule r = rule_of(SF_GATE_METRIC_WIN, 0.0, 0.03, 10, 402);
    sf_sprt s = sprt_of(&r, NULL, 0);
    for (int n = 0; n < 402; n++) {
        int k = n % 67;
        double d = k == 3 || k == 20 || k == 40 ? 1 : k == 10 || k == 50 ? -1 : 0;
        ck_assert_int_eq(sf_sprt_add(&s, d), SF_OK);
    }
    ck_assert_int_eq(sf_sprt_decision(&s), SF_GATE_INCONCLUSIVE);
    ck_assert_uint_eq(s.stop_pair, 402);
    ck_assert_double_gt(sf_sprt_llr(&s), s.lower);
    ck_assert_double_lt(sf_sprt_llr(&s), s.upper);
    ck_assert_int_eq(sf_sprt_add(&s, 0), SF_ESTATE);
}
END_TEST

START_TEST(sprt_refuses_bad_outcomes) {
    sf_gate_rule r = rule_of(SF_GATE_METRIC_WIN, 0.0, 0.03, 1, 10);
    sf_sprt s;
    double small[5];
    ck_assert_int_eq(sf_sprt_init(&s, &r, small, 5, NULL), SF_EINVAL);
    s = sprt_of(&r, NULL, 0);
    ck_assert_int_eq(sf_sprt_add(&s, 0.5), SF_EINVAL);
    ck_assert_int_eq(sf_sprt_add(&s, 2), SF_EINVAL);
    ck_assert_int_eq(sf_sprt_add(&s, NAN), SF_EINVAL);
    ck_assert_uint_eq(sf_sprt_pairs(&s), 0);
    r.metric = SF_GATE_METRIC_SCORE;
    s = sprt_of(&r, NULL, 0);
    ck_assert_int_eq(sf_sprt_add(&s, 1.5), SF_EINVAL);
    ck_assert_int_eq(sf_sprt_add(&s, -0.25), SF_OK);
    ck_assert_uint_eq(sf_sprt_pairs(&s), 1);
}
END_TEST

START_TEST(rule_check_names_the_field) {
    sf_err e = {0};
    sf_gate_rule r = sf_gate_rule_default();
    ck_assert_int_eq(sf_gate_rule_check(&r, NULL), SF_OK);
    r.alpha = 0;
    ck_assert_int_eq(sf_gate_rule_check(&r, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "alpha"));
    r = sf_gate_rule_default();
    r.delta1 = r.delta0;
    ck_assert_int_eq(sf_gate_rule_check(&r, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "delta0"));
    r = sf_gate_rule_default();
    r.min_pairs = r.max_pairs + 1;
    ck_assert_int_eq(sf_gate_rule_check(&r, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "min_pairs"));
    r = sf_gate_rule_default();
    r.metric = 2;
    ck_assert_int_eq(sf_gate_rule_check(&r, &e), SF_EINVAL);
    r = sf_gate_rule_default();
    r.boot_resamples = 1;
    ck_assert_int_eq(sf_gate_rule_check(&r, &e), SF_EINVAL);
    ck_assert_str_eq(sf_gate_decision_name(SF_GATE_PROMOTE), "promote");
    ck_assert_str_eq(sf_gate_decision_name(SF_GATE_INCONCLUSIVE), "inconclusive");
    /* the words round-trip; anything else is not a decision */
    for (int d = SF_GATE_CONTINUE; d <= SF_GATE_INCONCLUSIVE; d++)
        ck_assert_int_eq(sf_gate_decision_lookup(sf_gate_decision_name(d)), d);
    ck_assert_int_eq(sf_gate_decision_lookup("Promote"), SF_ENOTFOUND);
    ck_assert_int_eq(sf_gate_decision_lookup("promoted"), SF_ENOTFOUND);
    ck_assert_int_eq(sf_gate_decision_lookup(""), SF_ENOTFOUND);
    ck_assert_int_eq(sf_gate_decision_lookup(NULL), SF_ENOTFOUND);
}
END_TEST

/* ---- the verdict -------------------------------------------------------- */

static sf_gate_pair pair_of(int won_a, int won_b, int class_id, uint64_t h) {
    double u = (double)(sf_mix64(h) >> 11) * 0x1p-53, v = (double)(sf_mix64(~h) >> 11) * 0x1p-53;
    sf_gate_pair p = {.won_a = (uint8_t)won_a, .won_b = (uint8_t)won_b, .class_id = class_id};
    p.y_a = won_a ? 0.5 + 0.5 * u : 0.199 * u;
    p.y_b = won_b ? 0.5 + 0.5 * v : 0.199 * v;
    return p;
}

START_TEST(identical_sides_are_never_promoted) {
    /* The same side twice plays every seed identically: won_a = won_b and
     * y_a = y_b, no discordant pair, every d = 0. */
    enum { N = 3000 };
    sf_gate_pair *p = malloc(N * sizeof *p);
    ck_assert_ptr_nonnull(p);
    for (int i = 0; i < N; i++) {
        p[i] = pair_of(sf_mix64((uint64_t)i) % 3 != 0, 0, i % 4, (uint64_t)i);
        p[i].won_b = p[i].won_a;
        p[i].y_b = p[i].y_a;
    }
    for (int metric = 0; metric < 2; metric++) {
        sf_gate_rule r = sf_gate_rule_default();
        r.metric = metric;
        sf_gate_verdict v;
        ck_assert_int_eq(sf_gate_verdict_compute(p, N, &r, NULL, 0, NULL, 0, &v, NULL), SF_OK);
        ck_assert_int_eq(v.decision, SF_GATE_REJECT);
        ck_assert_uint_eq(v.stop_pair, r.min_pairs); /* far below the bound by then */
        ck_assert_uint_eq(v.only_a, 0);
        ck_assert_uint_eq(v.only_b, 0);
        ck_assert_double_eq(v.sign.p_greater, 1.0);
        ck_assert_double_eq(v.wilcoxon.p_greater, 1.0);
        ck_assert_double_eq(v.p_value, 1.0);
        ck_assert_double_eq(v.winrate.diff, 0.0);
        ck_assert_double_eq(v.winrate.lo, 0.0);
        ck_assert_double_eq(v.winrate.hi, 0.0);
        ck_assert_double_eq(v.score_diff, 0.0);
        ck_assert_double_eq(v.score_diff_lo, 0.0);
        ck_assert_double_eq(v.score_diff_hi, 0.0);
        ck_assert_double_lt(v.llr, 0.0);
    }
    /* Nor at any prefix length the LLR stays at or below 0. */
    sf_gate_rule r = sf_gate_rule_default();
    sf_sprt s;
    sf_sprt_init(&s, &r, NULL, 0, NULL);
    for (int i = 0; i < 150; i++) {
        sf_sprt_add(&s, 0);
        ck_assert_double_le(sf_sprt_llr(&s), 0.0);
    }
    free(p);
}
END_TEST

START_TEST(verdict_numbers_agree_with_the_parts) {
    /* 2000 pairs in 3 classes, candidate-only wins 2 in 16, champion-only 1
     * in 16: a true Delta of +1/16, enough to promote well before the end. */
    enum { N = 2000 };
    sf_gate_pair *p = malloc(N * sizeof *p);
    ck_assert_ptr_nonnull(p);
    for (int i = 0; i < N; i++) {
        uint64_t h = sf_mix64(1000 + (uint64_t)i);
        int k = (int)(h % 16), both = (h >> 8) % 2;
        int wa = k < 2 ? 1 : k == 2 ? 0 : both, wb = k < 2 ? 0 : k == 2 ? 1 : both;
        p[i] = pair_of(wa, wb, i % 3, h);
    }
    sf_gate_rule r = sf_gate_rule_default();
    size_t bytes = sf_gate_verdict_work_bytes(N, &r);
    ck_assert_uint_eq(bytes, (2 * N + r.boot_resamples) * sizeof(double));
    double *work = malloc(bytes), hist[N];
    sf_gate_verdict v, w;
    ck_assert_int_eq(sf_gate_verdict_compute(p, N, &r, work, bytes, hist, N, &v, NULL), SF_OK);
    ck_assert_int_eq(v.decision, SF_GATE_PROMOTE);
    ck_assert_uint_eq(v.pairs_given, N);
    ck_assert_uint_eq(v.pairs_used, v.stop_pair);
    ck_assert_uint_ge(v.stop_pair, r.min_pairs);
    /* The same SPRT by hand. */
    sf_sprt s;
    sf_sprt_init(&s, &r, NULL, 0, NULL);
    for (int i = 0; sf_sprt_decision(&s) == SF_GATE_CONTINUE; i++)
        sf_sprt_add(&s, (double)p[i].won_a - (double)p[i].won_b);
    ck_assert_uint_eq(s.stop_pair, v.stop_pair);
    ck_assert_double_eq(sf_sprt_llr(&s), v.llr);
    ck_assert_double_eq(hist[v.stop_pair - 1], v.llr);
    /* Counts, the breakdown and the parts, on the pairs used. */
    uint64_t oa = 0, ob = 0, cls[3] = {0};
    double *d = malloc(v.pairs_used * sizeof *d);
    for (size_t i = 0; i < v.pairs_used; i++) {
        oa += p[i].won_a && !p[i].won_b;
        ob += !p[i].won_a && p[i].won_b;
        cls[p[i].class_id]++;
        d[i] = p[i].y_a - p[i].y_b;
    }
    ck_assert_uint_eq(v.only_a, oa);
    ck_assert_uint_eq(v.only_b, ob);
    ck_assert_uint_eq(v.only_a + v.only_b + v.both + v.neither, v.pairs_used);
    ck_assert_uint_eq(v.n_classes, 3);
    uint64_t sum = 0;
    for (int c = 0; c < 3; c++) {
        ck_assert_uint_eq(v.classes[c].pairs, cls[c]);
        sum += v.classes[c].only_a;
    }
    ck_assert_uint_eq(sum, oa);
    sf_gate_sign sg;
    sf_gate_sign_test((int64_t)oa, (int64_t)ob, &sg, NULL);
    ck_assert_double_eq(v.sign.p_greater, sg.p_greater);
    ck_assert_double_eq(v.p_value, sg.p_greater);
    ck_assert_double_eq(v.winrate.diff, ((double)oa - (double)ob) / (double)v.pairs_used);
    ck_assert_double_eq(v.score_diff, sf_gate_mean(d, v.pairs_used));
    sf_gate_interval iv;
    sf_gate_bootstrap_mean(d, v.pairs_used, r.boot_resamples, r.level, r.boot_seed, NULL, &iv,
                           NULL);
    ck_assert_double_eq(v.score_diff_lo, iv.lo);
    ck_assert_double_eq(v.score_diff_hi, iv.hi);
    sf_gate_wilcoxon wx;
    sf_gate_wilcoxon_test(d, v.pairs_used, NULL, &wx, NULL);
    ck_assert_double_eq(v.wilcoxon.p_greater, wx.p_greater);
    /* A malloc'ed workspace gives the same bytes as the caller's. */
    ck_assert_int_eq(sf_gate_verdict_compute(p, N, &r, NULL, 0, NULL, 0, &w, NULL), SF_OK);
    ck_assert_mem_eq(&v, &w, sizeof v);
    /* Too small a workspace or history is refused, not overrun. */
    ck_assert_int_eq(sf_gate_verdict_compute(p, N, &r, work, bytes - 8, NULL, 0, &w, NULL),
                     SF_EFULL);
    ck_assert_int_eq(sf_gate_verdict_compute(p, N, &r, work, bytes, hist, 10, &w, NULL), SF_EFULL);
    free(d);
    free(work);
    free(p);
}
END_TEST

START_TEST(verdict_continue_and_empty) {
    sf_gate_rule r = sf_gate_rule_default();
    sf_gate_verdict v;
    ck_assert_int_eq(sf_gate_verdict_compute(NULL, 0, &r, NULL, 0, NULL, 0, &v, NULL), SF_OK);
    ck_assert_int_eq(v.decision, SF_GATE_CONTINUE);
    ck_assert_uint_eq(v.pairs_used, 0);
    ck_assert_double_eq(v.p_value, 1.0);
    ck_assert(isnan(v.score_diff));
    /* 50 pairs < min_pairs: continue, with the numbers on the 50. */
    sf_gate_pair p[50];
    for (int i = 0; i < 50; i++)
        p[i] = pair_of(i % 5 == 0, i % 7 == 0, 0, (uint64_t)i);
    ck_assert_int_eq(sf_gate_verdict_compute(p, 50, &r, NULL, 0, NULL, 0, &v, NULL), SF_OK);
    ck_assert_int_eq(v.decision, SF_GATE_CONTINUE);
    ck_assert_uint_eq(v.pairs_used, 50);
    ck_assert_uint_eq(v.stop_pair, 0);
}
END_TEST

START_TEST(verdict_refuses_bad_pairs) {
    sf_gate_rule r = sf_gate_rule_default();
    sf_gate_verdict v;
    sf_err e = {0};
    sf_gate_pair p[3] = {pair_of(1, 0, 0, 1), pair_of(0, 0, 1, 2), pair_of(1, 1, 2, 3)};
    p[1].y_a = 0.3; /* a loss must score below 0.2 */
    ck_assert_int_eq(sf_gate_verdict_compute(p, 3, &r, NULL, 0, NULL, 0, &v, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "pair 1: y_a"));
    p[1].y_a = 0.1;
    p[2].won_b = 2;
    ck_assert_int_eq(sf_gate_verdict_compute(p, 3, &r, NULL, 0, NULL, 0, &v, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "pair 2"));
    p[2].won_b = 1;
    p[0].class_id = SF_GATE_CLASSES_MAX;
    ck_assert_int_eq(sf_gate_verdict_compute(p, 3, &r, NULL, 0, NULL, 0, &v, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "class_id"));
    p[0].class_id = 0;
    ck_assert_int_eq(sf_gate_verdict_compute(p, 3, &r, NULL, 0, NULL, 0, &v, &e), SF_OK);
}
END_TEST

#include "test-gate-stats.tests.h" /* SF_TESTS: every test above (tests/meson.build) */
SF_CHECK_MAIN("gate-stats", "stats", 120, NULL, NULL)
