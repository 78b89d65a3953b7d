/* stats.c — the gate's statistics (gate/stats.h is the manual). */
#include "gate/stats.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "label/label.h"

#define LN_2PI   1.837877066409345483560659472811235279722794947275566825634
#define GOLDEN   0x9E3779B97F4A7C15ull
#define REANCHOR 256 /* tail terms between recomputations from Loader's pmf */

/* ---------------------------------------------------------------------------
 * Loader's binomial pmf
 * ------------------------------------------------------------------------- */

/* stirlerr(n) = ln n! - (n + 1/2) ln n + n - ln sqrt(2 pi) for n = 0..15,
 * computed to 25 digits with Python's decimal module (they agree with the
 * table of R's nmath/stirlerr.c at the integers). Index 0 is unused. */
static const double stirl_tab[16] = {
    0.0,
    8.1061466795327258219670264e-2,
    4.1340695955409294093822081e-2,
    2.7677925684998339148789293e-2,
    2.0790672103765093111522772e-2,
    1.6644691189821192163194865e-2,
    1.3876128823070747998745727e-2,
    1.1896709945891770095055724e-2,
    1.0411265261972096497478567e-2,
    9.2554621827127329177286366e-3,
    8.3305634333628712564693187e-3,
    7.5736754879518407949720242e-3,
    6.9428401072095298656641527e-3,
    6.4089941880042070684396311e-3,
    5.9513701127588477356244160e-3,
    5.5547335519628013710386900e-3,
};

/* The error of Stirling's formula for ln n!, n an integer >= 1: the table,
 * then the asymptotic series 1/(12n) - 1/(360n^3) + 1/(1260n^5) - ... cut
 * where its truncation error is below double precision (Loader 2000). */
static double stirlerr(double n) {
    const double s0 = 1.0 / 12, s1 = 1.0 / 360, s2 = 1.0 / 1260, s3 = 1.0 / 1680, s4 = 1.0 / 1188;
    if (n <= 15.0)
        return stirl_tab[(int)n];
    double nn = n * n;
    if (n > 500)
        return (s0 - s1 / nn) / n;
    if (n > 80)
        return (s0 - (s1 - s2 / nn) / nn) / n;
    if (n > 35)
        return (s0 - (s1 - (s2 - s3 / nn) / nn) / nn) / n;
    return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n;
}

/* The deviance term bd0(x, np) = x ln(x/np) + np - x, by its series in
 * v = (x - np)/(x + np) where x is close to np (no cancellation). */
static double bd0(double x, double np) {
    if (fabs(x - np) < 0.1 * (x + np)) {
        double v = (x - np) / (x + np);
        double s = (x - np) * v;
        if (fabs(s) < DBL_MIN)
            return s;
        double ej = 2 * x * v;
        v *= v;
        for (int j = 1; j < 1000; j++) {
            ej *= v;
            double s1 = s + ej / (2 * j + 1);
            if (s1 == s)
                return s1;
            s = s1;
        }
    }
    return x * log(x / np) + np - x;
}

/* ln pmf(k; n, p) with q = 1 - p passed separately (so q keeps its own
 * precision when p is near 1). */
static double log_pmf(int64_t k, int64_t n, double p, double q) {
    if (k < 0 || k > n)
        return -INFINITY;
    if (p == 0)
        return k == 0 ? 0.0 : -INFINITY;
    if (q == 0)
        return k == n ? 0.0 : -INFINITY;
    double dn = (double)n, dk = (double)k;
    if (k == 0) {
        if (n == 0)
            return 0.0;
        return p < 0.1 ? -bd0(dn, dn * q) - dn * p : dn * log(q);
    }
    if (k == n)
        return q < 0.1 ? -bd0(dn, dn * p) - dn * q : dn * log(p);
    double lc =
        stirlerr(dn) - stirlerr(dk) - stirlerr(dn - dk) - bd0(dk, dn * p) - bd0(dn - dk, dn * q);
    double lf = LN_2PI + log(dk) + log1p(-dk / dn);
    return lc - 0.5 * lf;
}

/* ln sum_{j >= k} pmf(j), summed upwards from k; the terms do not increase
 * from k on when k >= (n + 1) p - 1, which every caller ensures. */
static double log_tail_up(int64_t k, int64_t n, double p, double q) {
    double l0 = log_pmf(k, n, p, q);
    if (l0 == -INFINITY)
        return -INFINITY;
    double s = 1.0, t = 1.0, pq = p / q;
    for (int64_t j = k; j < n; j++) {
        double r = (double)(n - j) / (double)(j + 1) * pq; /* pmf(j+1)/pmf(j) */
        if ((j - k + 1) % REANCHOR == 0)
            t = exp(log_pmf(j + 1, n, p, q) - l0);
        else
            t *= r;
        s += t;
        /* The ratios shrink with j, so what follows t is at most
         * t r / (1 - r). */
        if (r < 1.0 && t * r <= (1.0 - r) * s * 0x1p-60)
            break;
    }
    return l0 + log(s);
}

/* ln(1 - e^x) for x <= 0, accurate at both ends. */
static double log1mexp(double x) {
    if (x == -INFINITY)
        return 0.0;
    return x > -M_LN2 ? log(-expm1(x)) : log1p(-exp(x));
}

/* ln P(X >= k), X ~ Bin(n, p). The side beyond the mean is summed, the
 * other side is the complement of the opposite tail. */
static double log_ge(int64_t k, int64_t n, double p, double q) {
    if (k <= 0)
        return 0.0;
    if (k > n)
        return -INFINITY;
    if (p == 0)
        return -INFINITY;
    if (q == 0)
        return 0.0;
    if ((double)k >= (double)(n + 1) * p)
        return log_tail_up(k, n, p, q);
    /* P(X <= k - 1) = P(n - X >= n - k + 1), n - X ~ Bin(n, q), and
     * n - k + 1 > (n + 1) q: the tail beyond the mean of n - X. */
    return log1mexp(log_tail_up(n - k + 1, n, q, p));
}

/* ln P(X <= k) = ln P(n - X >= n - k). */
static double log_le(int64_t k, int64_t n, double p, double q) {
    return log_ge(n - k, n, q, p);
}

static int binom_args_ok(int64_t n, double p) {
    return n >= 0 && n <= SF_GATE_BINOM_N_MAX && p >= 0.0 && p <= 1.0;
}

double sf_gate_binom_log_pmf(int64_t k, int64_t n, double p) {
    if (!binom_args_ok(n, p))
        return NAN;
    return log_pmf(k, n, p, 1.0 - p);
}

double sf_gate_binom_log_sf(int64_t k, int64_t n, double p) {
    if (!binom_args_ok(n, p))
        return NAN;
    return log_ge(k, n, p, 1.0 - p);
}

double sf_gate_binom_log_cdf(int64_t k, int64_t n, double p) {
    if (!binom_args_ok(n, p))
        return NAN;
    if (k >= n)
        return 0.0;
    if (k < 0)
        return -INFINITY;
    return log_le(k, n, p, 1.0 - p);
}

/* ---------------------------------------------------------------------------
 * The sign test
 * ------------------------------------------------------------------------- */

int sf_gate_sign_test(int64_t b, int64_t c, sf_gate_sign *out, sf_err *err) {
    if (!out)
        return sf_err_set(err, SF_EINVAL, "sign test: out is NULL");
    if (b < 0 || c < 0 || b > SF_GATE_BINOM_N_MAX - c)
        return sf_err_set(err, SF_EINVAL,
                          "sign test: counts b=%lld, c=%lld must be >= 0 with b + c <= %lld",
                          (long long)b, (long long)c, (long long)SF_GATE_BINOM_N_MAX);
    int64_t m = b + c;
    out->b = b;
    out->c = c;
    if (m == 0) {
        out->p_greater = out->p_two_sided = 1.0;
        out->log_p_greater = 0.0;
        return SF_OK;
    }
    out->log_p_greater = log_ge(b, m, 0.5, 0.5);
    out->p_greater = exp(out->log_p_greater);
    if (2 * b == m) {
        out->p_two_sided = 1.0;
        return SF_OK;
    }
    /* The observed count on the upper side (by symmetry), its probability
     * with SciPy's tolerance, and the last lower-side count at most as
     * likely: the mirror m - k, then whichever follow it within the
     * tolerance (none for m < 2*10^7). */
    int64_t k = b > c ? b : c;
    int64_t j = m - k;
    double ld = log_pmf(k, m, 0.5, 0.5) + log1p(1e-7);
    while (2 * (j + 1) <= m && log_pmf(j + 1, m, 0.5, 0.5) <= ld)
        j++;
    if (j + 1 >= k) { /* every outcome counted (b next to the centre) */
        out->p_two_sided = 1.0;
        return SF_OK;
    }
    double p = exp(log_ge(k, m, 0.5, 0.5)) + exp(log_le(j, m, 0.5, 0.5));
    out->p_two_sided = p < 1.0 ? p : 1.0;
    return SF_OK;
}

/* ---------------------------------------------------------------------------
 * Clopper-Pearson and the win-rate difference
 * ------------------------------------------------------------------------- */

static int level_ok(double level) {
    return level > 0.0 && level < 1.0;
}

int sf_gate_clopper_pearson(int64_t x, int64_t n, double level, double *lo, double *hi,
                            sf_err *err) {
    if (!lo || !hi)
        return sf_err_set(err, SF_EINVAL, "clopper-pearson: lo or hi is NULL");
    if (n < 0 || n > SF_GATE_BINOM_N_MAX || x < 0 || x > n)
        return sf_err_set(err, SF_EINVAL,
                          "clopper-pearson: need 0 <= x <= n <= %lld (x=%lld, n=%lld)",
                          (long long)SF_GATE_BINOM_N_MAX, (long long)x, (long long)n);
    if (!level_ok(level))
        return sf_err_set(err, SF_EINVAL, "clopper-pearson: level %g is not in (0, 1)", level);
    double la = log((1.0 - level) / 2.0);
    double ph = n > 0 ? (double)x / (double)n : 0.0;
    /* lo: P(X >= x | theta) rises with theta; at theta = x/n it is at
     * least 1/2 > a. The bracket's lower end is returned (a conservative
     * last bit). */
    double l = 0.0, h = ph;
    if (x == 0)
        *lo = 0.0;
    else {
        for (int it = 0; it < 200; it++) {
            double mid = 0.5 * (l + h);
            if (mid <= l || mid >= h)
                break;
            if (log_ge(x, n, mid, 1.0 - mid) < la)
                l = mid;
            else
                h = mid;
        }
        *lo = l;
    }
    /* hi: P(X <= x | theta) falls with theta; returns the upper end. */
    if (x == n)
        *hi = 1.0;
    else {
        l = ph;
        h = 1.0;
        for (int it = 0; it < 200; it++) {
            double mid = 0.5 * (l + h);
            if (mid <= l || mid >= h)
                break;
            if (log_le(x, n, mid, 1.0 - mid) > la)
                l = mid;
            else
                h = mid;
        }
        *hi = h;
    }
    return SF_OK;
}

int sf_gate_winrate_diff(int64_t b, int64_t c, int64_t n, double level, sf_gate_winrate *out,
                         sf_err *err) {
    if (!out)
        return sf_err_set(err, SF_EINVAL, "win-rate difference: out is NULL");
    if (b < 0 || c < 0 || n < 1 || n > SF_GATE_BINOM_N_MAX || b > n - c)
        return sf_err_set(err, SF_EINVAL,
                          "win-rate difference: need b, c >= 0, b + c <= n, 1 <= n <= %lld "
                          "(b=%lld, c=%lld, n=%lld)",
                          (long long)SF_GATE_BINOM_N_MAX, (long long)b, (long long)c, (long long)n);
    int64_t m = b + c;
    double tl, th;
    int rc = sf_gate_clopper_pearson(b, m, level, &tl, &th, err);
    if (rc < 0)
        return rc;
    double w = (double)m / (double)n;
    out->n = n;
    out->b = b;
    out->c = c;
    out->diff = (double)(b - c) / (double)n;
    out->theta_lo = tl;
    out->theta_hi = th;
    out->lo = w * (2.0 * tl - 1.0);
    out->hi = w * (2.0 * th - 1.0);
    return SF_OK;
}

/* ---------------------------------------------------------------------------
 * Wilcoxon, the mean, the bootstrap
 * ------------------------------------------------------------------------- */

static int cmp_abs(const void *pa, const void *pb) {
    double a = fabs(*(const double *)pa), b = fabs(*(const double *)pb);
    return (a > b) - (a < b);
}

/* P(Z > z) for a standard normal Z. */
static double norm_sf(double z) {
    return 0.5 * erfc(z / M_SQRT2);
}

int sf_gate_wilcoxon_test(const double *d, size_t n, double *scratch, sf_gate_wilcoxon *out,
                          sf_err *err) {
    if (!out || (n > 0 && !d))
        return sf_err_set(err, SF_EINVAL, "wilcoxon: d or out is NULL");
    for (size_t i = 0; i < n; i++)
        if (!isfinite(d[i]))
            return sf_err_set(err, SF_EINVAL, "wilcoxon: d[%zu] is not finite", i);
    memset(out, 0, sizeof *out);
    double *own = NULL;
    if (!scratch && n > 0) {
        own = malloc(n * sizeof *own);
        if (!own)
            return sf_err_set(err, SF_ENOMEM, "wilcoxon: no memory for %zu differences", n);
        scratch = own;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (d[i] != 0.0)
            scratch[m++] = d[i];
    out->n = m;
    out->zeros = n - m;
    if (m == 0) {
        free(own);
        out->p_greater = out->p_two_sided = 1.0;
        return SF_OK;
    }
    qsort(scratch, m, sizeof *scratch, cmp_abs);
    double rp = 0.0, rm = 0.0, tie = 0.0;
    for (size_t i = 0; i < m;) {
        size_t j = i, pos = 0;
        while (j < m && fabs(scratch[j]) == fabs(scratch[i])) {
            pos += scratch[j] > 0.0;
            j++;
        }
        double t = (double)(j - i), avg = ((double)(i + 1) + (double)j) / 2.0;
        rp += avg * (double)pos;
        rm += avg * (double)(j - i - pos);
        if (j - i > 1)
            tie += t * t * t - t;
        i = j;
    }
    free(own);
    out->r_plus = rp;
    out->r_minus = rm;
    out->tie_term = tie;
    double dm = (double)m;
    if (m <= SF_GATE_WILCOXON_EXACT_MAX && out->zeros == 0 && tie == 0.0) {
        /* Counts of the subsets of {1..m} by their sum: 2^m <= 2^50 in all. */
        enum { SMAX = SF_GATE_WILCOXON_EXACT_MAX * (SF_GATE_WILCOXON_EXACT_MAX + 1) / 2 };
        uint64_t cnt[SMAX + 1];
        size_t total = m * (m + 1) / 2;
        memset(cnt, 0, sizeof cnt);
        cnt[0] = 1;
        for (size_t k = 1; k <= m; k++)
            for (size_t s = k * (k + 1) / 2; s >= k; s--)
                cnt[s] += cnt[s - k];
        size_t r = (size_t)rp;
        uint64_t ge = 0, le = 0;
        for (size_t s = 0; s <= total; s++) {
            if (s >= r)
                ge += cnt[s];
            if (s <= r)
                le += cnt[s];
        }
        out->exact = 1;
        out->p_greater = ldexp((double)ge, -(int)m);
        if (r == total / 2)
            out->p_two_sided = 1.0;
        else {
            double p2 = ldexp(2.0 * (double)(ge < le ? ge : le), -(int)m);
            out->p_two_sided = p2 < 1.0 ? p2 : 1.0;
        }
        return SF_OK;
    }
    /* SciPy's order of operations: se = m(m+1)(2m+1) - tie/2, sqrt(se/24). */
    double mu = dm * (dm + 1.0) * 0.25;
    double se = dm * (dm + 1.0) * (2.0 * dm + 1.0) - 0.5 * tie;
    se = sqrt(se / 24.0);
    out->z = (rp - mu - 0.5) / se;
    out->p_greater = norm_sf(out->z);
    double t2 = rp < rm ? rp : rm;
    double cc = t2 > mu ? 0.5 : t2 < mu ? -0.5 : 0.0;
    double z2 = (t2 - mu - cc) / se;
    out->p_two_sided = 2.0 * norm_sf(fabs(z2));
    return SF_OK;
}

double sf_gate_mean(const double *d, size_t n) {
    if (n == 0 || !d)
        return NAN;
    double s = 0.0, c = 0.0;
    for (size_t i = 0; i < n; i++) {
        double t = s + d[i];
        if (fabs(s) >= fabs(d[i]))
            c += (s - t) + d[i];
        else
            c += (d[i] - t) + s;
        s = t;
    }
    return (s + c) / (double)n;
}

__extension__ typedef unsigned __int128 u128;

static int cmp_double(const void *pa, const void *pb) {
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* The type-7 quantile of sorted x[0..n). */
static double quantile7(const double *x, size_t n, double q) {
    double h = (double)(n - 1) * q;
    size_t i = (size_t)floor(h);
    if (i + 1 >= n)
        return x[n - 1];
    return x[i] + (h - (double)i) * (x[i + 1] - x[i]);
}

int sf_gate_bootstrap_mean(const double *d, size_t n, uint32_t resamples, double level,
                           uint64_t seed, double *scratch, sf_gate_interval *out, sf_err *err) {
    if (!d || !out)
        return sf_err_set(err, SF_EINVAL, "bootstrap: d or out is NULL");
    if (n == 0)
        return sf_err_set(err, SF_EINVAL, "bootstrap: no differences");
    if (resamples < 2)
        return sf_err_set(err, SF_EINVAL, "bootstrap: %u resamples (need at least 2)", resamples);
    if (!level_ok(level))
        return sf_err_set(err, SF_EINVAL, "bootstrap: level %g is not in (0, 1)", level);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(d[i]))
            return sf_err_set(err, SF_EINVAL, "bootstrap: d[%zu] is not finite", i);
    double *own = NULL;
    if (!scratch) {
        own = malloc((size_t)resamples * sizeof *own);
        if (!own)
            return sf_err_set(err, SF_ENOMEM, "bootstrap: no memory for %u means", resamples);
        scratch = own;
    }
    uint64_t nn = (uint64_t)n, reject_below = (0 - nn) % nn; /* 2^64 mod n */
    for (uint32_t r = 0; r < resamples; r++) {
        uint64_t key = sf_seed_derive(seed, r, 0, 0), ctr = 0;
        double s = 0.0;
        for (size_t i = 0; i < n; i++) {
            u128 prod;
            do
                prod = (u128)sf_mix64(key + ctr++ * GOLDEN) * nn;
            while ((uint64_t)prod < reject_below);
            s += d[(size_t)(prod >> 64)];
        }
        scratch[r] = s / (double)n;
    }
    qsort(scratch, resamples, sizeof *scratch, cmp_double);
    out->mean = sf_gate_mean(d, n);
    out->lo = quantile7(scratch, resamples, (1.0 - level) / 2.0);
    out->hi = quantile7(scratch, resamples, (1.0 + level) / 2.0);
    free(own);
    return SF_OK;
}

/* ---------------------------------------------------------------------------
 * The SPRT
 * ------------------------------------------------------------------------- */

const char *sf_gate_decision_name(int decision) {
    switch (decision) {
    case SF_GATE_CONTINUE: return SF_GATE_WORD_CONTINUE;
    case SF_GATE_PROMOTE: return SF_GATE_WORD_PROMOTE;
    case SF_GATE_REJECT: return SF_GATE_WORD_REJECT;
    case SF_GATE_INCONCLUSIVE: return SF_GATE_WORD_INCONCLUSIVE;
    default: return "?";
    }
}

int sf_gate_decision_lookup(const char *name) {
    for (int d = SF_GATE_CONTINUE; d <= SF_GATE_INCONCLUSIVE && name; d++)
        if (!strcmp(name, sf_gate_decision_name(d)))
            return d;
    return SF_ENOTFOUND;
}

sf_gate_rule sf_gate_rule_default(void) {
    return (sf_gate_rule){.alpha = 0.04,
                          .beta = 0.04,
                          .delta0 = 0.0,
                          .delta1 = 0.03,
                          .min_pairs = 200,
                          .max_pairs = 8000,
                          .metric = SF_GATE_METRIC_WIN,
                          .level = 0.95,
                          .boot_resamples = 2000,
                          .boot_seed = 0};
}

int sf_gate_rule_check(const sf_gate_rule *r, sf_err *err) {
    if (!r)
        return sf_err_set(err, SF_EINVAL, "gate rule is NULL");
    if (!(r->alpha > 0.0 && r->alpha < 0.5))
        return sf_err_set(err, SF_EINVAL, "gate rule: alpha %g is not in (0, 0.5)", r->alpha);
    if (!(r->beta > 0.0 && r->beta < 0.5))
        return sf_err_set(err, SF_EINVAL, "gate rule: beta %g is not in (0, 0.5)", r->beta);
    if (!(r->delta0 > -1.0 && r->delta1 < 1.0 && r->delta0 < r->delta1))
        return sf_err_set(err, SF_EINVAL,
                          "gate rule: need -1 < delta0 < delta1 < 1 (delta0 %g, delta1 %g)",
                          r->delta0, r->delta1);
    if (r->max_pairs < 1 || r->min_pairs > r->max_pairs)
        return sf_err_set(err, SF_EINVAL,
                          "gate rule: need 1 <= max_pairs and min_pairs <= max_pairs "
                          "(min_pairs %u, max_pairs %u)",
                          r->min_pairs, r->max_pairs);
    if (r->metric != SF_GATE_METRIC_WIN && r->metric != SF_GATE_METRIC_SCORE)
        return sf_err_set(err, SF_EINVAL, "gate rule: metric %d is neither win (0) nor score (1)",
                          r->metric);
    if (!level_ok(r->level))
        return sf_err_set(err, SF_EINVAL, "gate rule: level %g is not in (0, 1)", r->level);
    if (r->boot_resamples == 1)
        return sf_err_set(err, SF_EINVAL, "gate rule: boot_resamples must be 0 (none) or >= 2");
    return SF_OK;
}

/* The regularized counts (fishtest's regularize()) and their total. */
static double regularize(uint64_t nm, uint64_t nz, uint64_t np, double c[3]) {
    c[0] = nm ? (double)nm : SF_GATE_REGULARIZE;
    c[1] = nz ? (double)nz : SF_GATE_REGULARIZE;
    c[2] = np ? (double)np : SF_GATE_REGULARIZE;
    return c[0] + c[1] + c[2];
}

/* f(lambda) = sum pi_i a_i / (1 + lambda a_i) and its derivative, with
 * a_i already shifted by -delta; +-inf outside the domain. */
static double secular(const double pi[3], const double a[3], double lam, double *fp) {
    double f = 0.0, g = 0.0;
    for (int i = 0; i < 3; i++) {
        double den = 1.0 + lam * a[i];
        if (den <= 0.0) {
            *fp = -INFINITY;
            return a[i] > 0 ? -INFINITY : INFINITY;
        }
        f += pi[i] * a[i] / den;
        g -= pi[i] * a[i] * a[i] / (den * den);
    }
    *fp = g;
    return f;
}

/* The Lagrange multiplier of the MLE with mean delta: the root of the
 * secular equation in (-1/(1 - delta), 1/(1 + delta)). */
static double solve_lambda(const double pi[3], double delta) {
    const double a[3] = {-1.0 - delta, -delta, 1.0 - delta};
    const double lo = -1.0 / a[2], hi = -1.0 / a[0];
    double qa = a[0] * a[1] * a[2];
    double qb =
        pi[0] * a[0] * (a[1] + a[2]) + pi[1] * a[1] * (a[0] + a[2]) + pi[2] * a[2] * (a[0] + a[1]);
    double qc = pi[0] * a[0] + pi[1] * a[1] + pi[2] * a[2];
    double lam = NAN;
    if (qa == 0.0) {
        if (qb != 0.0)
            lam = -qc / qb;
    } else {
        double disc = qb * qb - 4.0 * qa * qc;
        double q = -0.5 * (qb + copysign(sqrt(disc > 0.0 ? disc : 0.0), qb));
        double r1 = q / qa, r2 = q != 0.0 ? qc / q : NAN;
        if (r1 > lo && r1 < hi)
            lam = r1;
        else if (r2 > lo && r2 < hi)
            lam = r2;
    }
    /* Polish (or, if the closed form missed, find) the root: Newton steps
     * kept inside a bracket that shrinks with every evaluation; f falls. */
    double bl = lo, bh = hi;
    if (!(lam > lo && lam < hi))
        lam = 0.5 * (lo + hi);
    for (int it = 0; it < 200; it++) {
        double fp, f = secular(pi, a, lam, &fp);
        if (f == 0.0)
            break;
        if (f > 0.0)
            bl = lam;
        else
            bh = lam;
        double next = lam - f / fp;
        if (!(next > bl && next < bh))
            next = 0.5 * (bl + bh);
        if (next == lam || next <= bl || next >= bh)
            break;
        double step = fabs(next - lam);
        lam = next;
        if (step <= 4.0 * DBL_EPSILON * fabs(lam) && it >= 1)
            break;
    }
    return lam;
}

static int delta_ok(double delta) {
    return delta > -1.0 && delta < 1.0;
}

int sf_gate_trinomial_mle(uint64_t n_minus, uint64_t n_zero, uint64_t n_plus, double delta,
                          double p[3], double *lambda) {
    if (!p || !delta_ok(delta))
        return SF_EINVAL;
    double c[3], pi[3];
    double tot = regularize(n_minus, n_zero, n_plus, c);
    for (int i = 0; i < 3; i++)
        pi[i] = c[i] / tot;
    double lam = solve_lambda(pi, delta);
    for (int i = 0; i < 3; i++)
        p[i] = pi[i] / (1.0 + lam * ((double)(i - 1) - delta));
    if (lambda)
        *lambda = lam;
    return SF_OK;
}

double sf_gate_llr_trinomial(uint64_t n_minus, uint64_t n_zero, uint64_t n_plus, double delta0,
                             double delta1) {
    if (!delta_ok(delta0) || !delta_ok(delta1))
        return NAN;
    if (n_minus + n_zero + n_plus == 0)
        return 0.0;
    double c[3], pi[3];
    double tot = regularize(n_minus, n_zero, n_plus, c);
    for (int i = 0; i < 3; i++)
        pi[i] = c[i] / tot;
    double l0 = solve_lambda(pi, delta0), l1 = solve_lambda(pi, delta1);
    double llr = 0.0;
    for (int i = 0; i < 3; i++) {
        double ai = (double)(i - 1);
        llr += c[i] * (log1p(l0 * (ai - delta0)) - log1p(l1 * (ai - delta1)));
    }
    return llr;
}

double sf_gate_llr_trinomial_normal(uint64_t n_minus, uint64_t n_zero, uint64_t n_plus,
                                    double delta0, double delta1) {
    if (!delta_ok(delta0) || !delta_ok(delta1))
        return NAN;
    if (n_minus + n_zero + n_plus == 0)
        return 0.0;
    double c[3];
    double tot = regularize(n_minus, n_zero, n_plus, c);
    double mu = (c[2] - c[0]) / tot;
    double var = 0.0;
    for (int i = 0; i < 3; i++) {
        double e = (double)(i - 1) - mu;
        var += c[i] / tot * e * e;
    }
    return tot * (delta1 - delta0) * (2.0 * mu - delta0 - delta1) / (2.0 * var);
}

double sf_gate_llr_score(uint64_t n, double mean, double var, double delta0, double delta1) {
    if (n == 0)
        return 0.0;
    if (!(var >= SF_GATE_SCORE_VAR_MIN))
        var = SF_GATE_SCORE_VAR_MIN;
    return (double)n * (delta1 - delta0) * (2.0 * mean - delta0 - delta1) / (2.0 * var);
}

int sf_sprt_init(sf_sprt *s, const sf_gate_rule *rule, double *history, size_t history_cap,
                 sf_err *err) {
    if (!s)
        return sf_err_set(err, SF_EINVAL, "sprt: state is NULL");
    int rc = sf_gate_rule_check(rule, err);
    if (rc < 0)
        return rc;
    if (history && history_cap < rule->max_pairs)
        return sf_err_set(err, SF_EINVAL, "sprt: the history holds %zu values but max_pairs is %u",
                          history_cap, rule->max_pairs);
    memset(s, 0, sizeof *s);
    s->rule = *rule;
    s->lower = log(rule->beta / (1.0 - rule->alpha));
    s->upper = log((1.0 - rule->beta) / rule->alpha);
    s->decision = SF_GATE_CONTINUE;
    s->history = history;
    s->history_cap = history ? history_cap : 0;
    return SF_OK;
}

int sf_sprt_add(sf_sprt *s, double d) {
    if (!s)
        return SF_EINVAL;
    if (s->decision != SF_GATE_CONTINUE)
        return SF_ESTATE;
    const sf_gate_rule *r = &s->rule;
    if (r->metric == SF_GATE_METRIC_WIN) {
        int i = d == -1.0 ? 0 : d == 0.0 ? 1 : d == 1.0 ? 2 : -1;
        if (i < 0)
            return SF_EINVAL;
        s->count[i]++;
        s->n++;
        s->llr = sf_gate_llr_trinomial(s->count[0], s->count[1], s->count[2], r->delta0, r->delta1);
        s->llr_normal = sf_gate_llr_trinomial_normal(s->count[0], s->count[1], s->count[2],
                                                     r->delta0, r->delta1);
    } else {
        if (!(d >= -1.0 && d <= 1.0))
            return SF_EINVAL;
        s->n++;
        double e = d - s->mean;
        s->mean += e / (double)s->n;
        s->m2 += e * (d - s->mean);
        s->llr = sf_gate_llr_score(s->n, s->mean, s->m2 / (double)s->n, r->delta0, r->delta1);
        s->llr_normal = s->llr;
    }
    if (s->history && s->n <= s->history_cap)
        s->history[s->n - 1] = s->llr;
    if (s->n >= r->min_pairs) {
        if (s->llr >= s->upper)
            s->decision = SF_GATE_PROMOTE;
        else if (s->llr <= s->lower)
            s->decision = SF_GATE_REJECT;
    }
    if (s->decision == SF_GATE_CONTINUE && s->n >= r->max_pairs)
        s->decision = SF_GATE_INCONCLUSIVE;
    if (s->decision != SF_GATE_CONTINUE)
        s->stop_pair = s->n;
    return SF_OK;
}

double sf_sprt_llr(const sf_sprt *s) {
    return s ? s->llr : NAN;
}

double sf_sprt_llr_normal(const sf_sprt *s) {
    return s ? s->llr_normal : NAN;
}

int sf_sprt_decision(const sf_sprt *s) {
    return s ? s->decision : SF_GATE_CONTINUE;
}

uint64_t sf_sprt_pairs(const sf_sprt *s) {
    return s ? s->n : 0;
}

const double *sf_sprt_history(const sf_sprt *s, size_t *len) {
    if (len)
        *len = s && s->history ? (size_t)(s->n < s->history_cap ? s->n : s->history_cap) : 0;
    return s ? s->history : NULL;
}

/* ---------------------------------------------------------------------------
 * The verdict
 * ------------------------------------------------------------------------- */

static size_t pairs_cap(size_t n, const sf_gate_rule *rule) {
    return n < rule->max_pairs ? n : (size_t)rule->max_pairs;
}

size_t sf_gate_verdict_work_bytes(size_t n, const sf_gate_rule *rule) {
    if (!rule)
        return 0;
    return (2 * pairs_cap(n, rule) + rule->boot_resamples) * sizeof(double);
}

int sf_gate_pair_check(const sf_gate_pair *p, size_t i, sf_err *err) {
    if (p->won_a > 1 || p->won_b > 1)
        return sf_err_set(err, SF_EINVAL, "pair %zu: won_a=%u, won_b=%u must be 0 or 1", i,
                          p->won_a, p->won_b);
    const double y[2] = {p->y_a, p->y_b};
    const int won[2] = {p->won_a, p->won_b};
    for (int s = 0; s < 2; s++) {
        int ok = won[s] ? y[s] >= SF_VALUE_WIN_MIN && y[s] <= 1.0
                        : y[s] >= 0.0 && y[s] < SF_VALUE_LOSS_MAX;
        if (!ok)
            return sf_err_set(
                err, SF_EINVAL, "pair %zu: y_%c=%.17g is outside the %s range %s (label/label.h)",
                i, "ab"[s], y[s], won[s] ? "win" : "loss", won[s] ? "[0.5, 1]" : "[0, 0.2)");
    }
    if (p->class_id < 0 || p->class_id >= SF_GATE_CLASSES_MAX)
        return sf_err_set(err, SF_EINVAL, "pair %zu: class_id %d is not in [0, %d)", i,
                          (int)p->class_id, SF_GATE_CLASSES_MAX);
    return SF_OK;
}

int sf_gate_verdict_compute(const sf_gate_pair *pairs, size_t n, const sf_gate_rule *rule,
                            void *work, size_t work_bytes, double *history, size_t history_cap,
                            sf_gate_verdict *out, sf_err *err) {
    if (!out || (n > 0 && !pairs))
        return sf_err_set(err, SF_EINVAL, "verdict: pairs or out is NULL");
    int rc = sf_gate_rule_check(rule, err);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        if ((rc = sf_gate_pair_check(&pairs[i], i, err)) < 0)
            return rc;
    size_t cap = pairs_cap(n, rule);
    size_t need = sf_gate_verdict_work_bytes(n, rule);
    if (history && history_cap < cap)
        return sf_err_set(err, SF_EFULL, "verdict: the history holds %zu values, need %zu",
                          history_cap, cap);
    if (work && work_bytes < need)
        return sf_err_set(err, SF_EFULL, "verdict: the workspace has %zu bytes, need %zu",
                          work_bytes, need);
    if (work && (uintptr_t)work % _Alignof(double) != 0)
        return sf_err_set(err, SF_EINVAL, "verdict: the workspace is not aligned for double");

    sf_sprt s;
    if ((rc = sf_sprt_init(&s, rule, NULL, 0, err)) < 0)
        return rc;
    s.history = history; /* holds every pair this call can add (checked above) */
    s.history_cap = history ? history_cap : 0;
    for (size_t i = 0; i < cap && s.decision == SF_GATE_CONTINUE; i++) {
        const sf_gate_pair *p = &pairs[i];
        double d = rule->metric == SF_GATE_METRIC_WIN ? (double)p->won_a - (double)p->won_b
                                                      : p->y_a - p->y_b;
        if ((rc = sf_sprt_add(&s, d)) < 0)
            return sf_err_set(err, rc, "verdict: pair %zu: the sprt refused d=%.17g", i, d);
    }

    void *own = NULL;
    if (!work && need > 0) {
        own = malloc(need);
        if (!own)
            return sf_err_set(err, SF_ENOMEM, "verdict: no memory for %zu bytes", need);
        work = own;
    }
    double *dv = work, *wscratch = dv + cap, *bscratch = wscratch + cap;

    memset(out, 0, sizeof *out);
    size_t used = (size_t)s.n;
    out->decision = s.decision;
    out->metric = rule->metric;
    out->pairs_given = n;
    out->pairs_used = used;
    out->stop_pair = s.stop_pair;
    out->llr = s.llr;
    out->llr_normal = s.llr_normal;
    out->llr_lower = s.lower;
    out->llr_upper = s.upper;
    double ya = 0.0, yb = 0.0;
    double csum[SF_GATE_CLASSES_MAX] = {0};
    for (size_t i = 0; i < used; i++) {
        const sf_gate_pair *p = &pairs[i];
        sf_gate_class_stats *k = &out->classes[p->class_id];
        k->pairs++;
        if (p->won_a && !p->won_b)
            k->only_a++;
        else if (!p->won_a && p->won_b)
            k->only_b++;
        else if (p->won_a)
            k->both++;
        else
            k->neither++;
        dv[i] = p->y_a - p->y_b;
        csum[p->class_id] += dv[i];
        ya += p->y_a;
        yb += p->y_b;
        if ((uint32_t)p->class_id + 1 > out->n_classes)
            out->n_classes = (uint32_t)p->class_id + 1;
    }
    for (int c = 0; c < SF_GATE_CLASSES_MAX; c++) {
        sf_gate_class_stats *k = &out->classes[c];
        out->only_a += k->only_a;
        out->only_b += k->only_b;
        out->both += k->both;
        out->neither += k->neither;
        if (k->pairs) {
            k->win_rate_diff = ((double)k->only_a - (double)k->only_b) / (double)k->pairs;
            k->score_diff = csum[c] / (double)k->pairs;
        }
    }
    rc = sf_gate_sign_test((int64_t)out->only_a, (int64_t)out->only_b, &out->sign, err);
    if (rc >= 0)
        rc = sf_gate_wilcoxon_test(dv, used, wscratch, &out->wilcoxon, err);
    if (rc >= 0 && used > 0)
        rc = sf_gate_winrate_diff((int64_t)out->only_a, (int64_t)out->only_b, (int64_t)used,
                                  rule->level, &out->winrate, err);
    out->score_diff = out->score_diff_lo = out->score_diff_hi = NAN;
    out->win_rate_a = out->win_rate_b = out->score_a = out->score_b = NAN;
    if (rc >= 0 && used > 0) {
        double du = (double)used;
        out->win_rate_a = (double)(out->both + out->only_a) / du;
        out->win_rate_b = (double)(out->both + out->only_b) / du;
        out->score_a = ya / du;
        out->score_b = yb / du;
        out->score_diff = sf_gate_mean(dv, used);
        if (rule->boot_resamples >= 2) {
            sf_gate_interval iv;
            rc = sf_gate_bootstrap_mean(dv, used, rule->boot_resamples, rule->level,
                                        rule->boot_seed, bscratch, &iv, err);
            if (rc >= 0) {
                out->score_diff_lo = iv.lo;
                out->score_diff_hi = iv.hi;
            }
        }
    }
    if (used == 0) {
        out->winrate.lo = out->winrate.hi = out->winrate.diff = 0.0;
        out->winrate.theta_lo = 0.0;
        out->winrate.theta_hi = 1.0;
    }
    out->p_value =
        rule->metric == SF_GATE_METRIC_WIN ? out->sign.p_greater : out->wilcoxon.p_greater;
    free(own);
    return rc < 0 ? rc : SF_OK;
}
