/* bench_gate.c — the gate's SPRT validated by simulation (gate/stats.h,
 * docs/gate.md "Statistics and their validation").
 *
 *   bench-gate [--gates N] [--seed S] [--alpha A] [--beta B] [--delta1 D]
 *              [--min-pairs M] [--max-pairs X] [--discordance Q]
 *
 * Every simulated gate draws pairs with independent trinomial outcomes:
 * P(only the candidate wins) = (Q + Delta)/2, P(only the champion wins) =
 * (Q - Delta)/2, P(both or neither) = 1 - Q (default Q = 0.2), from a
 * counter-based stream (sf_seed_derive(seed, scenario, gate, 0) keyed,
 * SplitMix64 per pair). For each true Delta it runs the default rule's SPRT
 * (or the one given on the command line) to its decision, and on the same
 * pairs (common random numbers) the SPRT deciding on the normal
 * approximation instead, a fixed 2000-pair exact McNemar test (one-sided and
 * two-sided, at the rule's alpha and at 0.05), the coverage of the 95 %
 * win-rate interval at 2000 pairs, and the "candidate's score >= 0.5, ties to the
 * candidate" rule at 200 and 2000 pairs. Rates come with their 95 %
 * Clopper-Pearson interval. Then the score metric on graded scores (wins in
 * [0.5, 1], losses in [0, 0.2)): its false promotion rate at Delta = 0.
 * Prints one JSON line per figure and a human line. Default 10000 gates per
 * scenario (about 30 s on one core). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate/stats.h"

#define FIXED_N 2000

typedef struct opts {
    uint32_t gates;
    uint64_t seed;
    double discordance;
    sf_gate_rule rule;
} opts;

static double unif(uint64_t key, uint64_t i) {
    return (double)(sf_mix64(key + i * 0x9E3779B97F4A7C15ull) >> 11) * 0x1p-53;
}

static int outcome(double u, double q, double delta) {
    double pp = (q + delta) / 2, pm = (q - delta) / 2;
    return u < pp ? 1 : u < pp + pm ? -1 : 0;
}

static void ci(uint64_t k, uint64_t n, double *lo, double *hi) {
    if (sf_gate_clopper_pearson((int64_t)k, (int64_t)n, 0.95, lo, hi, NULL) < 0)
        *lo = *hi = NAN;
}

static void emit_rate(const char *name, uint64_t k, uint64_t n, const char *what) {
    double lo, hi;
    ci(k, n, &lo, &hi);
    printf("{\"bench\":\"gate.%s\",\"value\":%.4f,\"unit\":\"fraction\",\"n\":%" PRIu64
           ",\"ci95\":[%.4f,%.4f]}\n",
           name, (double)k / (double)n, n, lo, hi);
    printf("  %-38s %.4f [%.4f, %.4f]  (%s, %" PRIu64 " gates)\n", name, (double)k / (double)n, lo,
           hi, what, n);
}

static void emit(const char *name, double v, const char *unit, uint64_t n, const char *what) {
    printf("{\"bench\":\"gate.%s\",\"value\":%.6g,\"unit\":\"%s\",\"n\":%" PRIu64 "}\n", name, v,
           unit, n);
    printf("  %-38s %.6g %s  (%s)\n", name, v, unit, what);
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

typedef struct tally {
    uint64_t promote, reject, inconclusive;
    uint64_t promote_normal, disagree;
    uint64_t fixed_one, fixed_two;     /* McNemar at FIXED_N, p <= alpha       */
    uint64_t fixed_one05, fixed_two05; /* the same at alpha = 0.05          */
    uint64_t half_200, half_2000;      /* b >= c at 200 and 2000 pairs         */
    uint64_t ci_cover;                 /* Delta inside the FIXED_N interval    */
    double pairs_sum, pairs_normal_sum;
    uint32_t *pairs; /* per gate, for the median             */
} tally;

/* One scenario: `gates` gates at true Delta. */
static void run_scenario(const opts *o, int scenario, double delta, tally *t) {
    const sf_gate_rule *r = &o->rule;
    double lower = log(r->beta / (1 - r->alpha)), upper = log((1 - r->beta) / r->alpha);
    memset(t, 0, sizeof *t);
    t->pairs = malloc(o->gates * sizeof *t->pairs);
    if (!t->pairs)
        exit(1);
    for (uint32_t g = 0; g < o->gates; g++) {
        uint64_t key = sf_seed_derive(o->seed, (uint64_t)scenario, g, 0);
        sf_sprt s;
        if (sf_sprt_init(&s, r, NULL, 0, NULL) < 0)
            exit(1);
        uint64_t c[3] = {0, 0, 0};
        int normal_dec = SF_GATE_CONTINUE;
        uint32_t normal_stop = 0;
        for (uint32_t i = 0;; i++) {
            int d = outcome(unif(key, i), o->discordance, delta);
            c[d + 1]++;
            uint64_t n = (uint64_t)i + 1;
            if (sf_sprt_decision(&s) == SF_GATE_CONTINUE)
                sf_sprt_add(&s, d);
            if (normal_dec == SF_GATE_CONTINUE) {
                double l = sf_gate_llr_trinomial_normal(c[0], c[1], c[2], r->delta0, r->delta1);
                if (n >= r->min_pairs && l >= upper)
                    normal_dec = SF_GATE_PROMOTE;
                else if (n >= r->min_pairs && l <= lower)
                    normal_dec = SF_GATE_REJECT;
                else if (n >= r->max_pairs)
                    normal_dec = SF_GATE_INCONCLUSIVE;
                if (normal_dec != SF_GATE_CONTINUE)
                    normal_stop = (uint32_t)n;
            }
            if (n == 200)
                t->half_200 += c[2] >= c[0];
            if (n == FIXED_N) {
                sf_gate_sign sg;
                sf_gate_sign_test((int64_t)c[2], (int64_t)c[0], &sg, NULL);
                t->fixed_one += sg.p_greater <= r->alpha;
                t->fixed_two += sg.p_two_sided <= r->alpha;
                t->fixed_one05 += sg.p_greater <= 0.05;
                t->fixed_two05 += sg.p_two_sided <= 0.05;
                t->half_2000 += c[2] >= c[0];
                sf_gate_winrate w;
                sf_gate_winrate_diff((int64_t)c[2], (int64_t)c[0], FIXED_N, 0.95, &w, NULL);
                t->ci_cover += w.lo <= delta && delta <= w.hi;
            }
            if (n >= FIXED_N && sf_sprt_decision(&s) != SF_GATE_CONTINUE &&
                normal_dec != SF_GATE_CONTINUE)
                break;
        }
        int dec = sf_sprt_decision(&s);
        t->promote += dec == SF_GATE_PROMOTE;
        t->reject += dec == SF_GATE_REJECT;
        t->inconclusive += dec == SF_GATE_INCONCLUSIVE;
        t->promote_normal += normal_dec == SF_GATE_PROMOTE;
        t->disagree += normal_dec != dec;
        t->pairs[g] = (uint32_t)s.stop_pair;
        t->pairs_sum += (double)s.stop_pair;
        t->pairs_normal_sum += normal_stop;
    }
    qsort(t->pairs, o->gates, sizeof *t->pairs, cmp_u32);
}

/* A graded score for a side: wins in [0.5, 1] (more often high), losses in
 * [0, 0.2). */
static double graded(int won, double u) {
    return won ? 0.5 + 0.5 * sqrt(u) : 0.2 * u * 0.999;
}

/* The score metric at Delta (in win rate): false promotions at 0, power. */
static void run_score(const opts *o, int scenario, double delta, uint64_t *promote,
                      double *mean_pairs, double *mean_d) {
    sf_gate_rule r = o->rule;
    r.metric = SF_GATE_METRIC_SCORE;
    *promote = 0;
    *mean_pairs = 0;
    double dsum = 0;
    uint64_t dn = 0;
    for (uint32_t g = 0; g < o->gates; g++) {
        uint64_t key = sf_seed_derive(o->seed, (uint64_t)scenario, g, 1);
        sf_sprt s;
        sf_sprt_init(&s, &r, NULL, 0, NULL);
        for (uint32_t i = 0; sf_sprt_decision(&s) == SF_GATE_CONTINUE; i++) {
            int d = outcome(unif(key, 4 * (uint64_t)i), o->discordance, delta);
            int both = unif(key, 4 * (uint64_t)i + 1) < 0.5;
            int wa = d == 1 || (d == 0 && both), wb = d == -1 || (d == 0 && both);
            double y = graded(wa, unif(key, 4 * (uint64_t)i + 2)) -
                       graded(wb, unif(key, 4 * (uint64_t)i + 3));
            sf_sprt_add(&s, y);
            dsum += y;
            dn++;
        }
        *promote += sf_sprt_decision(&s) == SF_GATE_PROMOTE;
        *mean_pairs += (double)s.stop_pair;
    }
    *mean_pairs /= o->gates;
    *mean_d = dsum / (double)dn;
}

static void usage(void) {
    fprintf(stderr, "usage: bench-gate [--gates N] [--seed S] [--alpha A] [--beta B] "
                    "[--delta1 D] [--min-pairs M] [--max-pairs X] [--discordance Q]\n");
    exit(2);
}

int main(int argc, char **argv) {
    opts o = {.gates = 10000, .seed = 1, .discordance = 0.2, .rule = sf_gate_rule_default()};
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            usage();
        const char *k = argv[i], *v = argv[++i];
        if (!strcmp(k, "--gates"))
            o.gates = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(k, "--seed"))
            o.seed = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--alpha"))
            o.rule.alpha = strtod(v, NULL);
        else if (!strcmp(k, "--beta"))
            o.rule.beta = strtod(v, NULL);
        else if (!strcmp(k, "--delta1"))
            o.rule.delta1 = strtod(v, NULL);
        else if (!strcmp(k, "--min-pairs"))
            o.rule.min_pairs = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(k, "--max-pairs"))
            o.rule.max_pairs = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(k, "--discordance"))
            o.discordance = strtod(v, NULL);
        else
            usage();
    }
    sf_err e = {0};
    if (o.gates < 1 || sf_gate_rule_check(&o.rule, &e) < 0) {
        fprintf(stderr, "bench-gate: %s\n", o.gates < 1 ? "--gates must be >= 1" : e.msg);
        return 2;
    }
    const sf_gate_rule *r = &o.rule;
    printf("gate SPRT: delta0 %g, delta1 %g, alpha %g, beta %g, min_pairs %u, max_pairs %u; "
           "discordance %g; %u gates per scenario, seed %" PRIu64 "\n",
           r->delta0, r->delta1, r->alpha, r->beta, r->min_pairs, r->max_pairs, o.discordance,
           o.gates, o.seed);
    printf("{\"bench\":\"gate.rule\",\"delta0\":%g,\"delta1\":%g,\"alpha\":%g,\"beta\":%g,"
           "\"min_pairs\":%u,\"max_pairs\":%u,\"discordance\":%g,\"gates\":%u}\n",
           r->delta0, r->delta1, r->alpha, r->beta, r->min_pairs, r->max_pairs, o.discordance,
           o.gates);
    const double deltas[] = {0.0, 0.03, 0.015, -0.03, 0.05};
    const char *tags[] = {"d0", "d+3", "d+1.5", "d-3", "d+5"};
    uint64_t t0 = sf_now_ns();
    for (int sc = 0; sc < 5; sc++) {
        tally t;
        run_scenario(&o, sc, deltas[sc], &t);
        printf("true Delta = %+g:\n", deltas[sc]);
        char what[160];
        snprintf(what, sizeof what, "SPRT promotes, true Delta %+g", deltas[sc]);
        /* fractions of the gates (rate), or pair counts */
        const struct {
            const char *name;
            int rate;
            double v;
            const char *what;
        } figures[] = {
            {"sprt_promote", 1, t.promote, what},
            {"sprt_inconclusive", 1, t.inconclusive, "no bound by max_pairs"},
            {"sprt_pairs_mean", 0, t.pairs_sum / o.gates, "mean pairs to a decision"},
            {"sprt_pairs_median", 0, t.pairs[o.gates / 2], "median pairs to a decision"},
            {"sprt_pairs_p90", 0, t.pairs[(size_t)(0.9 * (o.gates - 1))],
             "90th percentile of pairs"},
            {"sprt_normal_promote", 1, t.promote_normal, "the same SPRT deciding on LLR_alt2"},
            {"sprt_normal_pairs_mean", 0, t.pairs_normal_sum / o.gates, "its mean pairs"},
            {"sprt_normal_disagree", 1, t.disagree, "decisions that differ, exact vs normal"},
            {"mcnemar2000_one_sided", 1, t.fixed_one,
             "fixed 2000 pairs, exact one-sided p <= alpha"},
            {"mcnemar2000_two_sided", 1, t.fixed_two,
             "fixed 2000 pairs, exact two-sided p <= alpha"},
            {"mcnemar2000_one_sided_a05", 1, t.fixed_one05, "the same, one-sided p <= 0.05"},
            {"mcnemar2000_two_sided_a05", 1, t.fixed_two05, "the same, two-sided p <= 0.05"},
            {"winrate_ci_coverage", 1, t.ci_cover,
             "95 % conditional interval at 2000 covers Delta"},
        };
        for (size_t k = 0; k < sizeof figures / sizeof figures[0]; k++) {
            char name[96];
            snprintf(name, sizeof name, "%s.%s", tags[sc], figures[k].name);
            if (figures[k].rate)
                emit_rate(name, (uint64_t)figures[k].v, o.gates, figures[k].what);
            else
                emit(name, figures[k].v, "pairs", o.gates, figures[k].what);
        }
        if (sc == 0) {
            emit_rate("d0.half_rule_200", t.half_200, o.gates,
                      "'>= 0.5, ties to the candidate' promotes, 200 pairs");
            emit_rate("d0.half_rule_2000", t.half_2000, o.gates,
                      "'>= 0.5, ties to the candidate' promotes, 2000 pairs");
        }
        free(t.pairs);
    }
    /* Fixed-size exact McNemar needed for the SPRT's power at +3 points: the
     * normal approximation n = (z_{1-alpha} + z_{power})^2 var(D) / Delta^2,
     * var(D) = Q - Delta^2. */
    double var = o.discordance - 0.03 * 0.03;
    double n_one = pow(1.6448536269514722 * 2, 2) * var / (0.03 * 0.03);
    double n_two = pow(1.959963984540054 + 1.6448536269514722, 2) * var / (0.03 * 0.03);
    emit("fixed_pairs_for_95pct_power_one_sided", ceil(n_one), "pairs", 1,
         "McNemar, alpha 0.05 one-sided, power 0.95 at +3 (normal approximation)");
    emit("fixed_pairs_for_95pct_power_two_sided", ceil(n_two), "pairs", 1,
         "McNemar, alpha 0.05 two-sided, power 0.95 at +3 (normal approximation)");

    uint64_t sp;
    double mp, md;
    printf("score metric (graded scores, delta in score points):\n");
    run_score(&o, 10, 0.0, &sp, &mp, &md);
    emit_rate("score.d0.sprt_promote", sp, o.gates, "score SPRT promotes, true mean d = 0");
    emit("score.d0.sprt_pairs_mean", mp, "pairs", o.gates, "its mean pairs");
    run_score(&o, 11, 0.05, &sp, &mp, &md);
    char what[160];
    snprintf(what, sizeof what, "score SPRT promotes at win-rate +5 points (mean d %.4f)", md);
    emit_rate("score.d+5.sprt_promote", sp, o.gates, what);
    emit("score.d+5.sprt_pairs_mean", mp, "pairs", o.gates, "its mean pairs");
    emit("seconds", (double)(sf_now_ns() - t0) / 1e9, "s", 1, "wall time of the simulation");
    return 0;
}
