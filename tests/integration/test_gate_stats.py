#!/usr/bin/python3
"""The gate statistics (gate/stats.h) against scipy.stats (TAP).

usage: test_gate_stats.py GATE_STATS_DRIVER

Every statistic is computed twice: by the C module, through
tests/integration/gate_stats_driver.c (one request per line), and here,
independently, with scipy.stats (python3-scipy): binom.sf and binomtest for
the sign test and the Clopper-Pearson interval, wilcoxon for the signed-rank
test, and a re-implementation of fishtest's LLRcalc.py (Brent's method on the
secular equation) for the SPRT's log-likelihood ratio. The bootstrap uses its
own generator, so it is checked for determinism, against
scipy.stats.bootstrap within Monte Carlo error, and for coverage by
simulation.
"""

import math
import subprocess
import sys
import warnings
import zlib

import numpy as np
from pytap import main, test
from scipy import optimize, stats

DRIVER = sys.argv[1]
# SciPy warns about small samples and zeros (the switch to the normal
# approximation is what the C module documents) and divides by zero in
# binom.pmf at the edges; none of it is a failure here.
warnings.simplefilter("ignore")
RNG = np.random.default_rng(20260419)


def seed_case(case):
    """Each case draws from its own generator, seeded by its name: what it
    draws does not depend on which cases ran before it."""
    global RNG
    RNG = np.random.default_rng([20260419, zlib.crc32(case.__name__.encode())])


def ask(lines):
    """Send request lines to one driver process; its answer lines, split."""
    p = subprocess.run([DRIVER], input="\n".join(lines) + "\n", stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=240, check=True)
    out = p.stdout.splitlines()
    assert len(out) == len(lines), (len(out), len(lines), p.stderr)
    for req, ans in zip(lines, out):
        assert not ans.startswith("error"), (req[:80], ans)
    return [a.split() for a in out]


def close(a, b, rel, abs_=0.0, what=""):
    assert math.isclose(a, b, rel_tol=rel, abs_tol=abs_), "%s: C %r, reference %r" % (what, a, b)


def fmt(xs):
    return " ".join(repr(float(x)) for x in xs)


@test
def sign_test_matches_binomtest():
    cases = [(7, 2), (2, 7), (5, 5), (10, 0), (0, 10), (1, 0), (3, 4), (60, 40), (230, 170),
             (1040, 960), (5100, 4900), (50500, 49500), (500500, 499500), (499000, 501000),
             (501800, 498200), (123456, 120000), (30, 0), (0, 1)]
    for _ in range(40):
        m = int(RNG.integers(1, 20000))
        b = int(RNG.binomial(m, 0.5 + RNG.uniform(-0.05, 0.05)))
        cases.append((b, m - b))
    out = ask(["sign %d %d" % bc for bc in cases])
    for (b, c), (p1, lp1, p2) in zip(cases, out):
        m = b + c
        ref1 = stats.binom.sf(b - 1, m, 0.5)
        ref2 = stats.binomtest(b, m, 0.5, alternative="two-sided").pvalue
        close(float(p1), ref1, 1e-11, 1e-300, "p_greater b=%d c=%d" % (b, c))
        close(float(p2), ref2, 1e-11, 1e-300, "p_two_sided b=%d c=%d" % (b, c))
        if ref1 > 1e-300:
            close(float(lp1), math.log(ref1), 1e-11, 1e-12, "log p b=%d c=%d" % (b, c))
    return "%d (b, c) pairs, b + c up to 10^6" % len(cases)


@test
def sign_test_exact_arithmetic():
    """Against exact integer arithmetic, where SciPy's own error would show:
    P(X >= b) = sum_k C(m, k) / 2^m in Python integers."""
    out = ask(["sign 10100 9900", "sign 1000000 0", "sign 0 0"])
    m, b = 20000, 10100
    s, c = 0, math.comb(m, b)
    for k in range(b, m + 1):
        s += c
        c = c * (m - k) // (k + 1)
    exact = (s * 10**30 // (1 << m)) / 1e30
    close(float(out[0][0]), exact, 1e-13, 0, "b=10100 c=9900")
    close(float(out[0][2]), 2 * exact, 1e-13, 0, "two-sided b=10100 c=9900")
    # b = m = 10^6: p = 2^-10^6 underflows; its log is -10^6 ln 2.
    assert float(out[1][0]) == 0.0 and float(out[1][2]) == 0.0
    close(float(out[1][1]), -1e6 * math.log(2), 1e-14, 0, "log 2^-10^6")
    assert out[2] == ["1", "0", "1"], out[2]
    return "p(10100 of 20000) = %.17g" % exact


@test
def clopper_pearson_matches_binomtest():
    cases = [(0, 10, 0.95), (10, 10, 0.95), (7, 9, 0.95), (1, 1, 0.95), (1, 2, 0.9),
             (0, 1, 0.99), (500, 1000, 0.95), (3, 100000, 0.95), (99990, 100000, 0.95)]
    for _ in range(60):
        n = int(RNG.integers(1, 50000))
        cases.append((int(RNG.integers(0, n + 1)), n, float(RNG.choice([0.8, 0.9, 0.95, 0.99]))))
    out = ask(["cp %d %d %r" % c for c in cases])
    for (x, n, level), (lo, hi) in zip(cases, out):
        ci = stats.binomtest(x, n).proportion_ci(confidence_level=level, method="exact")
        close(float(lo), ci.low, 1e-9, 1e-11, "lo x=%d n=%d" % (x, n))
        close(float(hi), ci.high, 1e-9, 1e-11, "hi x=%d n=%d" % (x, n))
    # Closed forms: (1 - hi)^n = a for x = 0, lo^n = a for x = n.
    a = 0.025
    close(float(out[0][1]), 1 - a ** 0.1, 1e-14, 0, "0 of 10")
    close(float(out[1][0]), a ** 0.1, 1e-14, 0, "10 of 10")
    return "%d intervals" % len(cases)


@test
def winrate_interval_is_conditional_clopper_pearson():
    cases = [(7, 2, 100), (115, 85, 1000), (230, 170, 2000), (0, 0, 50), (40, 0, 40)]
    out = ask(["winrate %d %d %d 0.95" % c for c in cases])
    for (b, c, n), (diff, lo, hi) in zip(cases, out):
        m = b + c
        close(float(diff), (b - c) / n, 1e-15, 0, "diff")
        if m == 0:
            assert float(lo) == 0 and float(hi) == 0
            continue
        ci = stats.binomtest(b, m).proportion_ci(0.95, "exact")
        close(float(lo), m / n * (2 * ci.low - 1), 1e-9, 1e-11, "lo %r" % ((b, c, n),))
        close(float(hi), m / n * (2 * ci.high - 1), 1e-9, 1e-11, "hi %r" % ((b, c, n),))
        # Consistency with the sign test: 0 is inside iff two-sided p >= 0.05.
        p2 = stats.binomtest(b, m).pvalue
        assert (float(lo) > 0 or float(hi) < 0) == (p2 < 0.05), (b, c, n, p2)


def wilcoxon_requests(datasets):
    return ["wilcoxon %d %s" % (len(d), fmt(d)) for d in datasets]


@test
def wilcoxon_exact_matches_scipy_auto():
    """No zeros, no ties, n <= 50: SciPy's 'auto' takes the exact table."""
    sets = [np.array([6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75], float)]
    for n in (1, 2, 3, 5, 10, 20, 37, 50):
        for _ in range(4):
            sets.append(RNG.normal(RNG.uniform(-0.3, 0.6), 1.0, n))
    out = ask(wilcoxon_requests(sets))
    for d, r in zip(sets, out):
        assert r[5] == "1", "exact expected for n=%d" % len(d)
        g = stats.wilcoxon(d, alternative="greater", correction=True, method="auto")
        t = stats.wilcoxon(d, alternative="two-sided", correction=True, method="auto")
        assert float(r[2]) == g.statistic, (float(r[2]), g.statistic)
        close(float(r[7]), g.pvalue, 1e-12, 1e-300, "greater n=%d" % len(d))
        close(float(r[8]), t.pvalue, 1e-12, 1e-300, "two-sided n=%d" % len(d))
    assert out[0][7] == "0.0206298828125" and out[0][8] == "0.041259765625", out[0]
    return "%d exact cases" % len(sets)


@test
def wilcoxon_normal_approximation_matches_scipy():
    """Zeros, ties (values rounded to 0.05, as graded scores often tie) or
    n > 50: the normal approximation with tie and continuity corrections."""
    sets = []
    for n in (51, 100, 1000, 5000):
        sets.append(RNG.normal(0.02, 0.3, n))
    for n in (12, 30, 50, 80, 400, 2000):
        for _ in range(3):
            d = np.round(RNG.normal(0.01, 0.2, n) / 0.05) * 0.05
            sets.append(d)  # zeros and ties both
            nz = d[d != 0]
            sets.append(nz)  # ties only
    out = ask(wilcoxon_requests(sets))
    auto_differs = 0
    for d, r in zip(sets, out):
        nz = d[d != 0]
        if len(nz) == 0:
            continue
        assert r[5] == "0", "normal approximation expected for n=%d" % len(d)
        kw = dict(zero_method="wilcox", correction=True, method="approx")
        g = stats.wilcoxon(d, alternative="greater", **kw)
        t = stats.wilcoxon(d, alternative="two-sided", **kw)
        assert int(r[0]) == len(nz) and int(r[1]) == len(d) - len(nz)
        close(float(r[2]), g.statistic, 1e-15, 0, "r_plus")
        close(float(r[6]), g.zstatistic, 1e-12, 1e-14, "z n=%d" % len(d))
        close(float(r[7]), g.pvalue, 1e-10, 1e-300, "greater n=%d" % len(d))
        close(float(r[8]), t.pvalue, 1e-10, 1e-300, "two-sided n=%d" % len(d))
        if len(d) <= 50 and len(nz) == len(d) and float(r[4]) > 0:
            # Ties without zeros at n <= 50: SciPy 1.10's 'auto' looks up the
            # exact table at int(r_plus); stats.h documents the difference.
            a = stats.wilcoxon(d, alternative="greater", method="auto")
            auto_differs += not math.isclose(a.pvalue, g.pvalue, rel_tol=1e-9)
    return "%d cases; SciPy 1.10 'auto' (truncated exact table) differs on %d tied ones" % (
        len(sets), auto_differs)


def gate_like_differences(n, shift):
    """y_a - y_b for pairs drawn like a gate's: 80 % concordant, wins scored
    in [0.5, 1], losses in [0, 0.2)."""
    u = RNG.uniform(size=n)
    only_a, only_b = u < 0.1 + shift / 2, u > 0.9 + shift / 2
    both = (~only_a) & (~only_b) & (RNG.uniform(size=n) < 0.6)
    won_a, won_b = only_a | both, only_b | both
    ya = np.where(won_a, 0.5 + 0.5 * RNG.beta(3, 2, n), 0.2 * RNG.beta(2, 2, n) * 0.999)
    yb = np.where(won_b, 0.5 + 0.5 * RNG.beta(3, 2, n), 0.2 * RNG.beta(2, 2, n) * 0.999)
    return ya - yb


@test
def bootstrap_is_deterministic_and_agrees_with_scipy():
    d = gate_like_differences(300, 0.03)
    req = "boot 12345 4000 0.95 %d %s" % (len(d), fmt(d))
    first, again = ask([req])[0], ask([req])[0]
    assert first == again, (first, again)
    other = ask(["boot 12346 4000 0.95 %d %s" % (len(d), fmt(d))])[0]
    assert other != first
    close(float(first[0]), float(np.mean(d)), 1e-14, 1e-15, "mean")
    se = np.std(d, ddof=1) / math.sqrt(len(d))
    ref = stats.bootstrap((d,), np.mean, n_resamples=4000, confidence_level=0.95,
                          method="percentile", random_state=np.random.default_rng(7))
    # Each end's Monte Carlo sd is about 0.06 se at 4000 resamples.
    assert abs(float(first[1]) - ref.confidence_interval.low) < 0.35 * se, (first, ref)
    assert abs(float(first[2]) - ref.confidence_interval.high) < 0.35 * se, (first, ref)
    return "C [%s, %s], SciPy [%.6f, %.6f]" % (first[1], first[2], ref.confidence_interval.low,
                                               ref.confidence_interval.high)


@test
def bootstrap_coverage():
    """1000 simulated gates of 150 pairs each, true mean difference known:
    the 95 % percentile interval should cover it about 95 % of the time
    (slightly less is the method's known small-sample bias)."""
    shift = 0.03
    big = gate_like_differences(2_000_000, shift)
    truth = float(np.mean(big))  # the distribution's mean to +-0.0003
    reqs = []
    for k in range(1000):
        d = gate_like_differences(150, shift)
        reqs.append("boot %d 1000 0.95 %d %s" % (k, len(d), fmt(d)))
    out = ask(reqs)
    covered = sum(float(lo) <= truth <= float(hi) for _, lo, hi in out)
    ci = stats.binomtest(covered, len(out)).proportion_ci(0.95, "exact")
    assert 0.92 <= covered / len(out) <= 0.975, covered
    return "coverage %.3f [%.3f, %.3f] of 1000" % (covered / len(out), ci.low, ci.high)


# --- fishtest's LLRcalc.py, re-implemented on the D scale ------------------

def fishtest_mle(pdf, s):
    """MLE_expected: values a_i, probabilities p_i; mean s."""
    a = [ai - s for ai, _ in pdf]
    lo, hi = -1 / max(a), -1 / min(a)

    def f(x):
        return sum(pi * ai / (1 + x * ai) for ai, (_, pi) in zip(a, pdf))

    eps = (hi - lo) * 1e-15
    x = optimize.brentq(f, lo + eps, hi - eps, xtol=1e-16, rtol=8.9e-16, maxiter=500)
    return [(v, pi / (1 + x * (v - s))) for v, pi in pdf], x


def fishtest_llr(counts, d0, d1):
    results = [c if c else 1e-3 for c in counts]  # regularize()
    n = sum(results)
    pdf = [(v, c / n) for v, c in zip((-1.0, 0.0, 1.0), results)]
    p0, x0 = fishtest_mle(pdf, d0)
    p1, x1 = fishtest_mle(pdf, d1)
    llr = n * sum(pi * (math.log(q1) - math.log(q0))
                  for (_, pi), (_, q0), (_, q1) in zip(pdf, p0, p1))
    mu = sum(v * pi for v, pi in pdf)
    var = sum(pi * (v - mu) ** 2 for v, pi in pdf)
    alt2 = n * (d1 - d0) * (2 * mu - d0 - d1) / var / 2  # LLR_alt2
    return llr, alt2, x0, x1


@test
def trinomial_llr_matches_fishtest():
    cases = [(1, 2, 3, 0.0, 0.2), (0, 500, 0, 0.0, 0.03), (85, 800, 115, 0.0, 0.03),
             (115, 800, 85, 0.0, 0.03), (0, 0, 7, 0.0, 0.03), (30, 0, 0, -0.02, 0.05),
             (170, 1660, 230, 0.0, 0.03), (1000, 8000, 1000, 0.01, 0.02)]
    for _ in range(50):
        n = int(RNG.integers(1, 20000))
        p = RNG.dirichlet([1, 8, 1])
        c = RNG.multinomial(n, p)
        d0 = float(RNG.uniform(-0.1, 0.05))
        cases.append((int(c[0]), int(c[1]), int(c[2]), d0, d0 + float(RNG.uniform(0.005, 0.1))))
    out = ask(["llr %d %d %d %r %r" % c for c in cases])
    for c, (llr, alt2, x0, x1) in zip(cases, out):
        rl, ra, r0, r1 = fishtest_llr(c[:3], c[3], c[4])
        scale = max(1.0, abs(rl))
        close(float(llr), rl, 1e-9, 1e-9 * scale, "llr %r" % (c,))
        close(float(alt2), ra, 1e-12, 1e-12, "alt2 %r" % (c,))
        close(float(x0), r0, 1e-9, 1e-12, "lambda0 %r" % (c,))
        close(float(x1), r1, 1e-9, 1e-12, "lambda1 %r" % (c,))
    return "%d count vectors" % len(cases)


@test
def sprt_histories_and_stops_match_reference():
    alpha, beta = 0.05, 0.05
    lower, upper = math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)
    # Win metric: 600 pairs at a true +6 points; every LLR against fishtest.
    u = RNG.uniform(size=600)
    dvals = np.where(u < 0.13, 1.0, np.where(u > 0.93, -1.0, 0.0))
    r = ask(["sprt 0 %r %r 0 0.03 50 600 %d %s" % (alpha, beta, len(dvals), fmt(dvals))])[0]
    counts, stop = [0, 0, 0], None
    for i, dv in enumerate(dvals):
        counts[int(dv) + 1] += 1
        ref = fishtest_llr(counts, 0.0, 0.03)[0]
        if i < len(r) - 3:
            close(float(r[3 + i]), ref, 1e-9, 1e-9, "win llr after pair %d" % (i + 1))
        if stop is None and i + 1 >= 50 and (ref >= upper or ref <= lower):
            stop = (i + 1, "promote" if ref >= upper else "reject")
    if stop is None:  # the draw never crossed a bound: every pair read
        stop = (600, "inconclusive")
    assert (int(r[1]), r[0]) == stop, (r[:3], stop)
    assert len(r) - 3 == stop[0]
    # Score metric: LLR_alt2 on d with the population variance.
    d = gate_like_differences(800, 0.08)
    r2 = ask(["sprt 1 %r %r 0 0.03 100 800 %d %s" % (alpha, beta, len(d), fmt(d))])[0]
    stop2 = None
    for i in range(len(d)):
        x = d[: i + 1]
        var = max(float(np.var(x)), 1e-6)
        ref = (i + 1) * 0.03 * (2 * float(np.mean(x)) - 0.03) / (2 * var)
        if i < len(r2) - 3:
            close(float(r2[3 + i]), ref, 1e-9, 1e-9, "score llr after pair %d" % (i + 1))
        if stop2 is None and i + 1 >= 100 and (ref >= upper or ref <= lower):
            stop2 = (i + 1, "promote" if ref >= upper else "reject")
    if stop2 is None:
        stop2 = (800, "inconclusive")
    assert (int(r2[1]), r2[0]) == stop2, (r2[:3], stop2)
    return "win: %s at pair %d; score: %s at pair %d" % (stop[1], stop[0], stop2[1], stop2[0])


sys.exit(main(before_each=seed_case))
