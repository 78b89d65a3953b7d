/*
 * gate/stats.h — the statistics of a promotion gate: does a candidate
 * (network bundle or search setting) beat the champion?
 *
 * A gate plays paired matches on common random numbers: every seed is played
 * by both sides from the same start with the same random streams, so each
 * seed gives one *pair*. Side a is the candidate, side b the champion. Each
 * side's result is (won in {0,1}, graded score y in [0,1]) with the label
 * contract's ranges (label/label.h: a win scores in [0.5, 1], a loss in
 * [0, 0.2)). What one pair says:
 *
 *   D = won_a - won_b in {-1, 0, +1}   (+1: only the candidate won,
 *                                       -1: only the champion won,
 *                                        0: both won or both lost)
 *   d = y_a - y_b in [-1, 1]           (the graded-score difference)
 *
 * The counts used throughout: b = pairs with D = +1 (the candidate's
 * discordant wins), c = pairs with D = -1 (the champion's), n = all pairs.
 * The paired win-rate difference is Delta = E[D], estimated by (b - c)/n.
 *
 * What is here, and its source:
 *   1. The exact sign test (McNemar's test in its exact, conditional form):
 *      given m = b + c discordant pairs, b ~ Binomial(m, 1/2) under H0.
 *      McNemar (1947) Psychometrika 12:153; the exact form: Fagerland,
 *      Lydersen & Laake (2013) BMC Med Res Methodol 13:91.
 *   2. The paired graded-score difference: its mean, the Wilcoxon
 *      signed-rank test as SciPy 1.10's scipy.stats.wilcoxon computes it
 *      (with the one documented exception below), and a deterministic
 *      bootstrap percentile interval of the mean.
 *   3. An interval for Delta: the conditional Clopper-Pearson method.
 *   4. A sequential probability ratio test over pair outcomes, the
 *      generalized SPRT as fishtest computes it (LLRcalc.py).
 *   5. The verdict: all of the above on one gate's pairs in seed order.
 *
 * Invariants. Every function is pure and reentrant: no globals, no clock, no
 * I/O, and the same inputs give the same output bytes on every build (the
 * arithmetic is IEEE double with no contraction: the project builds C17,
 * where GCC does not fuse multiply-adds). Nothing allocates except where a
 * function says so (a NULL workspace is then malloc'ed and freed before the
 * function returns). Invalid input is an SF_EINVAL with a message naming
 * the argument, the pair or the field.
 */
#ifndef SF_GATE_STATS_H
#define SF_GATE_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* ---------------------------------------------------------------------------
 * Binomial probabilities
 *
 * pmf(k; n, p) = C(n,k) p^k (1-p)^(n-k), computed by Loader's saddle-point
 * expansion (C. Loader, "Fast and Accurate Computation of Binomial
 * Probabilities", 2000; the algorithm of R's dbinom_raw: Stirling-series
 * remainders plus the deviance term bd0), which has a relative error of a
 * few ulps for every n, where C(n,k) or lgamma differences would lose up to
 * log10(n!) digits. Tails are sums of pmf terms from the tail's inner end
 * outwards (the terms decrease there): a recurrence on the term ratio
 * (n-j)p / ((j+1)(1-p)), re-anchored on Loader's value every 256 terms, and
 * stopped once the geometric bound on what is left falls below 2^-60 of the
 * sum, so a tail costs O(sqrt(n p (1-p))) terms, not O(n). The side of the
 * distribution beyond the mean is always summed directly and the other side
 * taken as the complement, so small tails keep their relative precision.
 * Everything is carried as a logarithm: 2^-1000000 is representable as
 * its log even where the double underflows to 0.
 *
 * n runs up to SF_GATE_BINOM_N_MAX. These return NaN for arguments out of
 * range (n < 0 or n > the maximum, p outside [0, 1] or NaN).
 * ------------------------------------------------------------------------- */
#define SF_GATE_BINOM_N_MAX 1000000000LL

/* log pmf(k; n, p); -INFINITY where the probability is 0 (k < 0, k > n, or
 * p in {0, 1} with k not the certain value). */
double sf_gate_binom_log_pmf(int64_t k, int64_t n, double p);

/* log P(X >= k) for X ~ Binomial(n, p) (0 for k <= 0, -INFINITY for k > n):
 * SciPy's log(binom.sf(k - 1, n, p)). */
double sf_gate_binom_log_sf(int64_t k, int64_t n, double p);

/* log P(X <= k) (0 for k >= n, -INFINITY for k < 0): log(binom.cdf(k, n, p)). */
double sf_gate_binom_log_cdf(int64_t k, int64_t n, double p);

/* ---------------------------------------------------------------------------
 * 1. The exact sign test on the discordant pairs (exact McNemar)
 *
 * Under H0 (the sides are equally strong) a discordant pair is equally likely
 * to go either way, whatever the discordance rate, so conditional on
 * m = b + c, b ~ Binomial(m, 1/2). Concordant pairs carry no information
 * about the difference and do not enter.
 *
 *   p_greater   = P(X >= b), X ~ Bin(m, 1/2): the one-sided p-value for
 *                 "the candidate is better" (scipy.stats.binomtest(b, m,
 *                 alternative='greater')).
 *   p_two_sided = the exact two-sided rule of scipy.stats.binomtest (SciPy
 *                 1.10, _binomtest.py): the sum of pmf(j) over every j whose
 *                 probability is at most the observed one's, pmf(j) <=
 *                 pmf(b) * (1 + 1e-7) (SciPy's relative tolerance, there so
 *                 that the mirror-image term counts despite rounding), capped
 *                 at 1; 1 exactly when b = m/2. At p = 1/2 the mirror term
 *                 pmf(m - b) equals pmf(b), and the next one beyond it is
 *                 larger by a factor of at least 1 + 1/(m - b + 1) > 1 + 1e-7
 *                 for m < 2*10^7, so there the rule is exactly twice the
 *                 smaller tail (capped at 1); the code applies the rule as
 *                 stated for every m.
 *   log_p_greater = log(p_greater), finite where p_greater underflows
 *                 (b = m = 10^6 gives -693147.18...).
 *
 * With m = 0 (no discordant pair: identical sides) both p-values are 1.
 * ------------------------------------------------------------------------- */
typedef struct sf_gate_sign {
    int64_t b, c;         /* discordant pairs: candidate-only, champion-only wins */
    double p_greater;     /* one-sided p, candidate better                       */
    double log_p_greater; /* its natural log                                     */
    double p_two_sided;   /* exact two-sided p (SciPy's rule)                    */
} sf_gate_sign;

/* The sign test on b and c (b, c >= 0, b + c <= SF_GATE_BINOM_N_MAX).
 * Returns SF_OK or SF_EINVAL. Cost O(sqrt(b + c)). */
int sf_gate_sign_test(int64_t b, int64_t c, sf_gate_sign *out, sf_err *err);

/* ---------------------------------------------------------------------------
 * The Clopper-Pearson interval (Clopper & Pearson 1934, Biometrika 26:404)
 *
 * For x successes in n trials at confidence `level` (two-sided, e.g. 0.95,
 * so a = (1 - level)/2 in each tail): lo solves P(X >= x | lo) = a (lo = 0
 * when x = 0) and hi solves P(X <= x | hi) = a (hi = 1 when x = n); n = 0
 * gives [0, 1]. Equivalently lo = Beta^-1(a; x, n-x+1), hi =
 * Beta^-1(1-a; x+1, n-x), the values of scipy.stats.binomtest(x, n)
 * .proportion_ci(level, method='exact'). Found by bisection on the exact
 * tails above until the bracket stops shrinking (to the last bit; at most
 * 200 halvings). 0 <= x <= n <= SF_GATE_BINOM_N_MAX, 0 < level < 1.
 * ------------------------------------------------------------------------- */
int sf_gate_clopper_pearson(int64_t x, int64_t n, double level, double *lo, double *hi,
                            sf_err *err);

/* ---------------------------------------------------------------------------
 * 3. The win-rate difference and its interval: the conditional method
 *
 * Delta = P(D = +1) - P(D = -1) = pi_d (2 theta - 1), where pi_d is the
 * discordance rate and theta = P(D = +1 | discordant). Given m = b + c,
 * b ~ Bin(m, theta) exactly, so a Clopper-Pearson interval [theta_lo,
 * theta_hi] for theta has at least the nominal coverage, and the interval
 * reported for Delta is
 *
 *   [ (m/n)(2 theta_lo - 1), (m/n)(2 theta_hi - 1) ]  around  (b - c)/n,
 *
 * the observed discordance m/n standing in for pi_d. Why this method: its
 * core is exact and it agrees with the test the gate uses: the interval
 * excludes 0 exactly when the two-sided exact sign test above has p below
 * 1 - level (both are twice the same binomial tail), so the report never
 * shows a "significant" interval beside a non-significant p or the
 * reverse. It is cheap (two bisections) and deterministic. What it does not
 * do: it treats m/n as known, so its coverage for Delta (not theta) is
 * conditional on the discordance; with n in the hundreds or more the
 * relative error of m/n is small against that of 2 theta - 1, and the gate
 * benchmark measures the coverage at the design point (docs/gate.md).
 * Unconditional intervals (Tango's score interval, Stat Med 1998 17:891;
 * exact unconditional ones that maximise the coverage over the nuisance
 * pi_d) cover Delta directly but are costlier and can disagree with the
 * conditional test at the boundary; Fagerland, Lydersen & Laake (Stat Med
 * 2014 33:2850) review both families. With m = 0 the interval is [0, 0]: the
 * conditional method has nothing to say beyond "no discordant pair".
 * ------------------------------------------------------------------------- */
typedef struct sf_gate_winrate {
    int64_t n, b, c;           /* pairs; candidate-only, champion-only wins */
    double diff;               /* (b - c) / n                              */
    double lo, hi;             /* the interval for Delta                   */
    double theta_lo, theta_hi; /* Clopper-Pearson for b of b + c           */
} sf_gate_winrate;

/* b, c >= 0, b + c <= n <= SF_GATE_BINOM_N_MAX, n >= 1, 0 < level < 1. */
int sf_gate_winrate_diff(int64_t b, int64_t c, int64_t n, double level, sf_gate_winrate *out,
                         sf_err *err);

/* ---------------------------------------------------------------------------
 * 2. The paired graded-score difference
 *
 * The Wilcoxon signed-rank test on d_1..d_n (Wilcoxon 1945, Biometrics
 * Bulletin 1:80), as scipy.stats.wilcoxon(d, zero_method='wilcox',
 * correction=True, method='auto') computes it in SciPy 1.10:
 *   - zeros are dropped (Wilcoxon's own "wilcox" zero method); m = the
 *     number of nonzero differences;
 *   - |d| is ranked 1..m, ties (exactly equal |d|) given the average of the
 *     ranks they span; r_plus = sum of the ranks of d > 0, r_minus of d < 0
 *     (r_plus + r_minus = m(m+1)/2);
 *   - exact null distribution when m <= 50 and there were no zeros and no
 *     ties: the 2^m equally likely sign patterns, counted by the subset-sum
 *     recurrence c_k(s) = c_{k-1}(s) + c_{k-1}(s - k) in 64-bit integers
 *     (exact: c <= 2^50), p_greater = P(R+ >= r_plus), p_two_sided =
 *     min(1, 2 min(P(R+ <= r_plus), P(R+ >= r_plus)));
 *   - otherwise the normal approximation with the tie correction and a
 *     continuity correction of 0.5 (Lehmann 1975, Nonparametrics, ch. 3):
 *     mu = m(m+1)/4, sigma^2 = m(m+1)(2m+1)/24 - sum_t (t^3 - t)/48 over tie
 *     groups of size t; one-sided z = (r_plus - mu - 0.5)/sigma,
 *     p_greater = 1 - Phi(z); two-sided T = min(r_plus, r_minus),
 *     z2 = (T - mu - 0.5 sign(T - mu))/sigma, p_two_sided = 2 (1 - Phi(|z2|)).
 * The one difference from SciPy 1.10: with ties and no zeros at m <= 50,
 * SciPy's 'auto' still uses the exact table, looking it up at int(r_plus)
 * (a half-integer rank sum truncated; SciPy later switched such cases to
 * the approximation); here ties always select the normal approximation,
 * which is scipy.stats.wilcoxon(..., method='approx', correction=True).
 * With m = 0 (every difference zero) SciPy raises; here both p-values are 1
 * and z = 0. Phi is computed as erfc(-z/sqrt 2)/2.
 * ------------------------------------------------------------------------- */
#define SF_GATE_WILCOXON_EXACT_MAX 50

typedef struct sf_gate_wilcoxon {
    size_t n;           /* nonzero differences ranked                        */
    size_t zeros;       /* differences exactly 0, dropped                    */
    double r_plus;      /* rank sum of the positive differences              */
    double r_minus;     /* rank sum of the negative differences              */
    double tie_term;    /* sum over tie groups of t^3 - t (0: no ties)       */
    int exact;          /* 1: exact null distribution; 0: normal approx      */
    double z;           /* (r_plus - mu - 0.5)/sigma (0 when exact or n = 0) */
    double p_greater;   /* one-sided p: the candidate's scores are higher   */
    double p_two_sided; /* two-sided p                                       */
} sf_gate_wilcoxon;

/* The signed-rank test on d[0..n) (every d finite). `scratch` holds n
 * doubles (overwritten); NULL has the function malloc and free it
 * (SF_ENOMEM if that fails). O(n log n): the nonzero d sorted by |d| with
 * qsort (tie groups get one average rank, so the order qsort leaves inside
 * a group does not change a result bit). */
int sf_gate_wilcoxon_test(const double *d, size_t n, double *scratch, sf_gate_wilcoxon *out,
                          sf_err *err);

/* The mean of d[0..n) by compensated (Neumaier) summation in index order;
 * NaN for n = 0. */
double sf_gate_mean(const double *d, size_t n);

/* The bootstrap percentile interval of the mean (Efron & Tibshirani 1993,
 * An Introduction to the Bootstrap, ch. 13):
 *   - resample r = 0..B-1 draws n indices uniformly with replacement from a
 *     counter-based SplitMix64 stream: key_r = sf_seed_derive(seed, r, 0, 0)
 *     and word j of the resample's stream is u_j = sf_mix64(key_r + j *
 *     0x9E3779B97F4A7C15) (SplitMix64's j-th output from state key_r). Each
 *     index takes the next word and maps it to [0, n) by Lemire's
 *     multiply-shift with rejection (ACM TOMACS 29(1), 2019): the high word
 *     of the 128-bit product u * n, the word skipped and the next one taken
 *     when the low word is below 2^64 mod n, so the index is exactly uniform;
 *   - the resample's mean is the plain left-to-right sum of its d divided by
 *     n; the B means are sorted;
 *   - lo, hi are the (1-level)/2 and (1+level)/2 quantiles of the B means by
 *     linear interpolation between order statistics (Hyndman & Fan 1996
 *     type 7: h = (B-1) q, x_floor(h) + (h - floor(h)) (x_ceil(h) - x_floor(h)),
 *     NumPy's default, which scipy.stats.bootstrap(method='percentile') uses).
 * The same (d, n, B, level, seed) give the same interval bytes on every run
 * and build. Not comparable draw for draw with SciPy (other generator);
 * coverage is checked by simulation (tests/integration/test_gate_stats.py).
 * n >= 1, B >= 2, 0 < level < 1; `scratch` holds B doubles (NULL: malloc'ed
 * and freed). Cost O(B n). */
typedef struct sf_gate_interval {
    double mean; /* the sample mean (sf_gate_mean) */
    double lo, hi;
} sf_gate_interval;

int sf_gate_bootstrap_mean(const double *d, size_t n, uint32_t resamples, double level,
                           uint64_t seed, double *scratch, sf_gate_interval *out, sf_err *err);

/* ---------------------------------------------------------------------------
 * 4. The sequential probability ratio test
 *
 * Hypotheses on E[D] (metric win) or E[d] (metric score):
 *   H0: mean = delta0   against   H1: mean = delta1,   delta0 < delta1,
 * e.g. delta0 = 0, delta1 = 0.03 ("at least 3 points better"). After each
 * pair, in seed order, the log-likelihood ratio LLR is compared with Wald's
 * bounds (Wald 1945, Ann Math Stat 16:117)
 *   lower = ln(beta / (1 - alpha)),   upper = ln((1 - beta) / alpha):
 * LLR >= upper: promote (accept H1); LLR <= lower: reject (accept H0); the
 * test stops only at a crossing with at least min_pairs pairs in. A test
 * that reaches max_pairs with no crossing (at that pair included) is
 * inconclusive. alpha is the intended false-promotion rate at delta0, beta
 * the intended miss rate at delta1.
 *
 * Metric win: the exact generalized SPRT on the trinomial. Each pair is one
 * independent observation of D in {-1, 0, +1}: the pairing already removes
 * the correlation that fishtest's pentanomial model (game pairs with colours
 * reversed) exists for, and pairs on distinct seeds are independent, so the
 * trinomial with free probabilities (p-, p0, p+) is the exact model and a
 * pentanomial on two pairs would only group independent observations. The
 * LLR is fishtest's LLR_logistic(results = [n-, n0, n+]) on the D scale
 * (server/fishtest/stats/LLRcalc.py; M. Van den Bergh, "Comments on
 * Normalized Elo" and "support_MLE_multinomial.pdf", Proposition 1.1):
 *   - counts are regularized as fishtest's regularize(): a zero count is
 *     replaced by 1e-3, so every outcome has positive mass; N = the
 *     regularized total and pi_i = count_i / N;
 *   - for each hypothesis delta, the maximum-likelihood trinomial with mean
 *     delta is p_i = pi_i / (1 + lambda (a_i - delta)), a_i in {-1, 0, +1},
 *     where the Lagrange multiplier lambda solves the secular equation
 *     f(lambda) = sum_i pi_i (a_i - delta) / (1 + lambda (a_i - delta)) = 0
 *     on (-1/(1 - delta), 1/(1 + delta)), where f falls from +inf to -inf;
 *     with three support points f = 0 is a quadratic
 *     A lambda^2 + B lambda + C = 0 after clearing denominators:
 *       A = u v w,  B = pi- u (v + w) + pi0 v (u + w) + pi+ w (u + v),
 *       C = mean(pi) - delta,  with u, v, w = -1 - delta, -delta, 1 - delta,
 *     solved in closed form (the cancellation-free pair of root formulas,
 *     the root in the interval taken) and polished by safeguarded Newton
 *     steps: the exact MLE, where fishtest runs Brent's method on f;
 *   - LLR = sum_i count_i ln(p1_i / p0_i)
 *         = sum_i count_i [ln(1 + lambda0 (a_i - delta0))
 *                          - ln(1 + lambda1 (a_i - delta1))]
 *     (regularized counts, as fishtest's N * sum_i pi_i ln(p1_i/p0_i)).
 *   This exact LLR decides. Its normal approximation, reported beside it as
 *   llr_normal, is fishtest's LLR_alt2 (GSPRT_approximation.pdf):
 *     N (delta1 - delta0)(2 mu - delta0 - delta1) / (2 sigma^2)
 *   with mu, sigma^2 the mean and variance of the regularized empirical
 *   distribution. With delta0 >= 0, zero discordant pairs give mu = 0 <=
 *   delta0, where the exact LLR is negative: identical sides are never
 *   promoted.
 *
 * Metric score: the GSPRT on the mean of d_i in [-1, 1] with the normal
 * approximation and the empirical variance, fishtest's LLR_alt2 applied to
 * the score differences:
 *   LLR = n (delta1 - delta0)(2 dbar - delta0 - delta1) / (2 s^2),
 *   dbar the mean, s^2 = sum (d_i - dbar)^2 / n (Welford's update), floored
 *   at SF_GATE_SCORE_VAR_MIN so that all-equal differences (identical sides:
 *   every d = 0) give a finite, strongly negative LLR instead of 0/0. The
 *   first pair always has s^2 = 0 (floored: a huge |LLR|), and the variance
 *   settles only over some dozens of pairs, which is what min_pairs is for.
 * (fishtest's LLR_normalized puts its hypotheses on the t-value
 * (mu - 1/2)/sigma instead; the gate's bounds are in score points, so the
 * expectation form is the one used here.)
 * ------------------------------------------------------------------------- */
#define SF_GATE_REGULARIZE    1e-3 /* fishtest's regularize() epsilon        */
#define SF_GATE_SCORE_VAR_MIN 1e-6 /* floor on s^2 for the score metric      */

enum { SF_GATE_METRIC_WIN = 0, SF_GATE_METRIC_SCORE = 1 };

/* Decisions; SF_GATE_CONTINUE only while a test has neither crossed a bound
 * nor reached max_pairs. */
enum {
    SF_GATE_CONTINUE = 0,
    SF_GATE_PROMOTE = 1,
    SF_GATE_REJECT = 2,
    SF_GATE_INCONCLUSIVE = 3,
};

/* The decisions' words (verdict.json's "verdict", the loop's history). */
#define SF_GATE_WORD_CONTINUE     "continue"
#define SF_GATE_WORD_PROMOTE      "promote"
#define SF_GATE_WORD_REJECT       "reject"
#define SF_GATE_WORD_INCONCLUSIVE "inconclusive"

/* SF_GATE_WORD_* of a decision; "?" otherwise. Static. */
const char *sf_gate_decision_name(int decision);
/* The decision a name says (exactly as sf_gate_decision_name writes it:
 * verdict.json's "verdict"), or SF_ENOTFOUND for any other string or NULL:
 * a reader treats an unknown word as an error, never as "not promoted". */
int sf_gate_decision_lookup(const char *name);

/* Keys of a gate run's verdict.json (written by coordinator/gate.c,
 * docs/gate.md) that its readers use: the gate report needs every key of
 * SF_GATE_VERDICT_REQUIRED; the loop records the verdict, pairs, llr,
 * score_diff and win_rate_diff of each gate. */
#define SF_GATE_VKEY_VERDICT       "verdict"
#define SF_GATE_VKEY_PAIRS         "pairs"
#define SF_GATE_VKEY_CHAMPION      "champion"
#define SF_GATE_VKEY_CANDIDATE     "candidate"
#define SF_GATE_VKEY_P_VALUE       "p_value"
#define SF_GATE_VKEY_LLR           "llr"
#define SF_GATE_VKEY_LLR_BOUNDS    "llr_bounds"
#define SF_GATE_VKEY_SCORE_DIFF    "score_diff"
#define SF_GATE_VKEY_SCORE_DIFF_CI "score_diff_ci"
#define SF_GATE_VKEY_WIN_RATE_DIFF "win_rate_diff"
#define SF_GATE_VKEY_PER_CLASS     "per_class"
/* An initializer: the keys every verdict.json holds, in this order. */
#define SF_GATE_VERDICT_REQUIRED                                                                 \
    {                                                                                            \
        SF_GATE_VKEY_VERDICT, SF_GATE_VKEY_PAIRS, SF_GATE_VKEY_CHAMPION, SF_GATE_VKEY_CANDIDATE, \
            SF_GATE_VKEY_P_VALUE, SF_GATE_VKEY_LLR, SF_GATE_VKEY_LLR_BOUNDS,                     \
            SF_GATE_VKEY_SCORE_DIFF, SF_GATE_VKEY_SCORE_DIFF_CI, SF_GATE_VKEY_WIN_RATE_DIFF,     \
            SF_GATE_VKEY_PER_CLASS                                                               \
    }

/* Keys of a gate run's pairs.jsonl (one line per pair, coordinator/gate.c)
 * that the gate report plots; SF_GATE_PAIRS_REQUIRED is an initializer of
 * them all. */
#define SF_GATE_PKEY_PAIR       "pair"
#define SF_GATE_PKEY_LLR        "llr"
#define SF_GATE_PKEY_SCORE_DIFF "score_diff"
#define SF_GATE_PKEY_SCORE_LO   "score_lo"
#define SF_GATE_PKEY_SCORE_HI   "score_hi"
#define SF_GATE_PAIRS_REQUIRED                                                               \
    {                                                                                        \
        SF_GATE_PKEY_PAIR, SF_GATE_PKEY_LLR, SF_GATE_PKEY_SCORE_DIFF, SF_GATE_PKEY_SCORE_LO, \
            SF_GATE_PKEY_SCORE_HI                                                            \
    }

/* The gate's rule. sf_gate_rule_default() gives the defaults chosen by
 * simulation (docs/gate.md, "Statistics and their validation"). */
typedef struct sf_gate_rule {
    double alpha;            /* false-promotion rate at delta0, (0, 0.5)          */
    double beta;             /* miss rate at delta1, (0, 0.5)                      */
    double delta0, delta1;   /* hypotheses on the mean, -1 < delta0 < delta1 < 1   */
    uint32_t min_pairs;      /* no decision before this many pairs                 */
    uint32_t max_pairs;      /* inconclusive here without a crossing (>= 1)        */
    int metric;              /* SF_GATE_METRIC_WIN or SF_GATE_METRIC_SCORE         */
    double level;            /* two-sided confidence of reported intervals (0,1)  */
    uint32_t boot_resamples; /* B for the score-difference interval; 0: none       */
    uint64_t boot_seed;      /* the bootstrap's seed                               */
} sf_gate_rule;

/* alpha = beta = 0.04, delta0 = 0, delta1 = 0.03, min_pairs = 200,
 * max_pairs = 8000, metric win, level 0.95, 2000 resamples, seed 0: by
 * simulation at a discordance of 0.2, false promotions 3.8-3.9 % at
 * Delta = 0 and 96 % promotions at Delta = +0.03 after 1,310-1,320 pairs on
 * average (a fixed 2000-pair exact McNemar test: 83 % two-sided, 89 %
 * one-sided); docs/gate.md has every figure and the command. */
sf_gate_rule sf_gate_rule_default(void);

/* SF_OK, or SF_EINVAL naming the first field out of range. */
int sf_gate_rule_check(const sf_gate_rule *rule, sf_err *err);

/* The exact trinomial GSPRT log-likelihood ratio above for counts n_minus,
 * n_zero, n_plus (of D = -1, 0, +1), and its LLR_alt2 approximation.
 * NaN when -1 < delta0 < 1, -1 < delta1 < 1 fails. 0 for no pairs. */
double sf_gate_llr_trinomial(uint64_t n_minus, uint64_t n_zero, uint64_t n_plus, double delta0,
                             double delta1);
double sf_gate_llr_trinomial_normal(uint64_t n_minus, uint64_t n_zero, uint64_t n_plus,
                                    double delta0, double delta1);

/* The maximum-likelihood trinomial (p[0..2] for D = -1, 0, +1) with mean
 * `delta` given the counts, regularized as above, and its multiplier.
 * SF_EINVAL when delta is outside (-1, 1). With no pairs at all the
 * regularized counts are (1e-3, 1e-3, 1e-3). */
int sf_gate_trinomial_mle(uint64_t n_minus, uint64_t n_zero, uint64_t n_plus, double delta,
                          double p[3], double *lambda);

/* The score metric's LLR for n differences with mean `mean` and population
 * variance `var` (floored at SF_GATE_SCORE_VAR_MIN). 0 for n = 0. */
double sf_gate_llr_score(uint64_t n, double mean, double var, double delta0, double delta1);

/* The SPRT state: caller-owned, updated pair by pair. Fields are read
 * through the functions below. */
typedef struct sf_sprt {
    sf_gate_rule rule;
    double lower, upper; /* Wald's bounds                                     */
    uint64_t n;          /* pairs added                                       */
    uint64_t count[3];   /* D = -1, 0, +1 (metric win)                        */
    double mean, m2;     /* Welford's running mean and sum of squares (score) */
    double llr;          /* after the last pair (0 before any)                */
    double llr_normal;   /* its normal approximation                          */
    int decision;        /* SF_GATE_*                                         */
    uint64_t stop_pair;  /* 1-based pair of the decision; 0 while continuing  */
    double *history;     /* llr after pair i at history[i - 1], or NULL       */
    size_t history_cap;
} sf_sprt;

/* Start a test under `rule` (checked). `history`, when not NULL, receives the
 * LLR after every pair (for plots) and must hold at least rule->max_pairs
 * doubles (SF_EINVAL otherwise); it stays the caller's. */
int sf_sprt_init(sf_sprt *s, const sf_gate_rule *rule, double *history, size_t history_cap,
                 sf_err *err);

/* Add the next pair's outcome: metric win, d = D in {-1, 0, +1} exactly;
 * metric score, d = y_a - y_b in [-1, 1]. Updates the LLR and the decision.
 * SF_EINVAL for a d out of range (the state is unchanged), SF_ESTATE once
 * the test has decided (promote, reject or inconclusive). */
int sf_sprt_add(sf_sprt *s, double d);

double sf_sprt_llr(const sf_sprt *s);        /* the deciding LLR          */
double sf_sprt_llr_normal(const sf_sprt *s); /* LLR_alt2 (= llr on score) */
int sf_sprt_decision(const sf_sprt *s);      /* SF_GATE_*                 */
uint64_t sf_sprt_pairs(const sf_sprt *s);    /* pairs added               */

/* The LLR history so far (sf_sprt_pairs() values) or NULL without one. */
const double *sf_sprt_history(const sf_sprt *s, size_t *len);

/* ---------------------------------------------------------------------------
 * 5. The verdict
 * ------------------------------------------------------------------------- */

/* One seed's pair. Side a = candidate, side b = champion. won in {0,1}; y in
 * the label contract's range for the outcome (won: [0.5, 1], lost: [0, 0.2)).
 * class_id groups seeds for the breakdown (e.g. encounter class), in
 * [0, SF_GATE_CLASSES_MAX). */
typedef struct sf_gate_pair {
    uint8_t won_a, won_b;
    double y_a, y_b;
    int32_t class_id;
} sf_gate_pair;

/* SF_OK when pair `p` keeps the ranges above (won 0 or 1, y in the win or
 * loss range its won says, class_id in [0, SF_GATE_CLASSES_MAX)); else
 * SF_EINVAL naming pair `i` (the caller's index) and the field. */
int sf_gate_pair_check(const sf_gate_pair *p, size_t i, sf_err *err);

#define SF_GATE_CLASSES_MAX 16

typedef struct sf_gate_class_stats {
    uint64_t pairs;
    uint64_t only_a, only_b; /* discordant: only the candidate / champion won */
    uint64_t both, neither;  /* concordant                                    */
    double win_rate_diff;    /* (only_a - only_b) / pairs (0 with no pairs)   */
    double score_diff;       /* mean of y_a - y_b (0 with no pairs)           */
} sf_gate_class_stats;

typedef struct sf_gate_verdict {
    int decision;         /* promote, reject, inconclusive, or continue (the
                             pairs ran out before max_pairs)                  */
    int metric;           /* the rule's                                       */
    uint64_t pairs_given; /* n passed in                                      */
    uint64_t pairs_used;  /* the pairs every number below is computed on: up
                             to the stopping pair, else min(n, max_pairs)     */
    uint64_t stop_pair;   /* 1-based pair of the SPRT's decision, 0 if none   */
    uint64_t only_a, only_b, both, neither;
    double win_rate_a, win_rate_b; /* each side's win rate                     */
    double score_a, score_b;       /* each side's mean y                       */
    double p_value;                /* the metric's one-sided fixed-sample p at
                                      pairs_used: sign.p_greater (win) or
                                      wilcoxon.p_greater (score). Nominal only: after
                                      sequential stopping it is not a valid p-value.  */
    sf_gate_sign sign;
    sf_gate_wilcoxon wilcoxon;
    double llr, llr_normal; /* at pairs_used                                    */
    double llr_lower, llr_upper;
    double score_diff;                   /* mean of d = y_a - y_b                            */
    double score_diff_lo, score_diff_hi; /* bootstrap percentile interval (NaN
                                            without resamples or pairs)         */
    sf_gate_winrate winrate;             /* (b - c)/n and its conditional exact interval    */
    uint32_t n_classes;                  /* 1 + the largest class_id among the pairs used    */
    sf_gate_class_stats classes[SF_GATE_CLASSES_MAX];
} sf_gate_verdict;

/* The workspace sf_gate_verdict() needs for n pairs under `rule`, in bytes:
 * (2 min(n, max_pairs) + boot_resamples) doubles. */
size_t sf_gate_verdict_work_bytes(size_t n, const sf_gate_rule *rule);

/* The verdict on pairs[0..n) in seed order under `rule`: the SPRT of the
 * rule's metric run pair by pair (sf_sprt) until it decides, then every
 * statistic above on the pairs up to the stopping pair (or on
 * min(n, max_pairs) pairs when it does not stop). `work` is caller-owned,
 * aligned for double, with at least sf_gate_verdict_work_bytes(n, rule)
 * bytes (SF_EFULL if fewer); NULL has it malloc'ed and freed before return
 * (SF_ENOMEM). `history`, when not NULL, receives the LLR after each pair
 * used and must hold min(n, max_pairs) doubles (SF_EFULL if fewer). With no
 * pairs the decision is continue, the counts 0, p-values 1, the win-rate
 * interval [0, 0], and the rates and score numbers NaN. SF_EINVAL for a bad rule or pair (the
 * message names the pair's 0-based index and field). Pure and deterministic. */
int sf_gate_verdict_compute(const sf_gate_pair *pairs, size_t n, const sf_gate_rule *rule,
                            void *work, size_t work_bytes, double *history, size_t history_cap,
                            sf_gate_verdict *out, sf_err *err);

#endif
