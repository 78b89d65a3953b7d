/* test_search_math.c — the search's formulas against the test vectors of
 * docs/search-algorithm.md §10 (computed with SciPy / MCTX) and hand computations:
 * the value convention, 21-bin projection, CVaR, bands, UCT/PUCT and FPU, the
 * widening cap, completed-Q / v_mix / sigma / pi', sequential halving. */
#include <math.h>
#include <string.h>

#include "search/search.h"
#include "sf_check.h"

#define EPS 1e-6

/* ---------------------------------------------------------------- values */

/* A lost fight at `hp` of 80 HP on turn `turns`, `left` of the monsters'
 * 100 HP standing; turn_limit: it ended at the turn cap. */
static sf_outcome lost(int hp, int turns, int left, int turn_limit) {
    return (sf_outcome){.over = 1,
                        .won = 0,
                        .hp = hp,
                        .max_hp = 80,
                        .turns = turns,
                        .monster_hp_left = left,
                        .monster_hp_pool = 100,
                        .turn_limit = turn_limit};
}

START_TEST(value_of_outcome_applies_the_label_contract) {
    /* The contract's own arithmetic is tested in test_label.c; here, that
     * an engine outcome reaches it field for field. */
    sf_outcome o = {.over = 1, .won = 1, .hp = 60, .max_hp = 80, .potions_left = 2, .turns = 4};
    /* won on turn 4: 0.999^3 = 0.997002999 of the margin 0.3375 + 0.0333... */
    ck_assert_double_eq_tol(sf_value_of_outcome(&o), 0.5 + 0.997002999 * (0.45 * 0.75 + 0.1 / 3.0),
                            1e-12);
    /* a turn-limit end is a loss, graded as one */
    sf_outcome t = lost(31, 50, 100, 1);
    /* 0.2*(0.75*0 + 0.25*50/60) = 0.041666... */
    ck_assert_double_eq_tol(sf_value_of_outcome(&t), 0.2 * 0.25 * 50.0 / 60.0, 1e-12);
    sf_outcome l = lost(0, 10, 25, 0);
    /* 0.2*(0.75*0.75 + 0.25*10/20) = 0.1375 */
    ck_assert_double_eq_tol(sf_value_of_outcome(&l), 0.1375, 1e-12);
    sf_fight_facts f = sf_fight_facts_of(&l);
    ck_assert_int_eq(f.turns, 10);
    ck_assert_int_eq(f.monster_hp_left, 25);
    ck_assert_int_eq(f.monster_hp_pool, 100);
    /* a Smoke Bomb escape: won, 80/80 HP kept, scored at the win floor */
    sf_outcome e = {.over = 1, .won = 1, .escaped = 1, .hp = 80, .max_hp = 80, .turns = 1};
    ck_assert_double_eq(sf_value_of_outcome(&e), SF_VALUE_WIN_MIN);
    ck_assert_int_eq(sf_fight_facts_of(&e).escaped, 1);
}
END_TEST

START_TEST(cvar_matches_spec_10_4) {
    /* search-algorithm §10.4: 21 bins on z_i = i/20; p(0.0) = 0.1, p(0.5) = 0.3,
     * p(0.8) = 0.4, p(1.0) = 0.2; mean 0.67. */
    double z[21], p[21] = {0};
    for (int i = 0; i < 21; i++)
        z[i] = i / 20.0;
    p[0] = 0.1;
    p[10] = 0.3;
    p[16] = 0.4;
    p[20] = 0.2;
    ck_assert_double_eq_tol(sf_value_cvar(z, p, 21, 1.0), 0.67, 1e-12);
    ck_assert_double_eq_tol(sf_value_cvar(z, p, 21, 0.5), 0.46, 1e-12);
    ck_assert_double_eq_tol(sf_value_cvar(z, p, 21, 0.25), 0.30, 1e-12);
    ck_assert_double_eq_tol(sf_value_cvar(z, p, 21, 0.1), 0.0, 1e-12);
    ck_assert_double_eq_tol(sf_value_cvar(z, p, 21, 0.05), 0.0, 1e-12);
}
END_TEST

START_TEST(cvar_equals_rockafellar_uryasev_form) {
    /* CVaR_a = max_nu nu - E[(nu - X)+]/a, maximum at a support point: check
     * both forms agree on a spread distribution over our 21-bin support. */
    float h[SF_VALUE_BINS] = {0};
    h[0] = 0.15f;
    h[3] = 0.05f;
    h[7] = 0.2f;
    h[12] = 0.35f;
    h[19] = 0.25f;
    const double alphas[] = {0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.77, 1.0};
    for (size_t ai = 0; ai < sizeof alphas / sizeof alphas[0]; ai++) {
        double a = alphas[ai], best = -INFINITY;
        for (int j = 0; j < SF_VALUE_BINS; j++) {
            double nu = sf_value_support(j), tail = 0.0;
            for (int i = 0; i < SF_VALUE_BINS; i++) {
                double d = nu - sf_value_support(i);
                if (d > 0)
                    tail += h[i] * d;
            }
            if (nu - tail / a > best)
                best = nu - tail / a;
        }
        ck_assert_double_eq_tol(sf_value_cvar21(h, a), best, 1e-6);
    }
    ck_assert_double_eq_tol(sf_value_cvar21(h, 1.0), sf_value_mean(h), 1e-6);
}
END_TEST

START_TEST(band_rank_puts_uncertain_above_proven_loss) {
    /* search-algorithm §11.7: every uncertain line has mean < the proven-loss line's raw
     * value, and the uncertain line still ranks first. */
    ck_assert_int_gt(sf_band_compare(SF_BAND_UNCERTAIN, 0.05, SF_BAND_LOSS, 0.9), 0);
    ck_assert_int_lt(sf_band_compare(SF_BAND_LOSS, 0.9, SF_BAND_UNCERTAIN, 0.05), 0);
    ck_assert_int_gt(sf_band_compare(SF_BAND_WIN, 0.5, SF_BAND_UNCERTAIN, 0.99), 0);
    ck_assert_int_gt(sf_band_compare(SF_BAND_UNCERTAIN, 0.6, SF_BAND_UNCERTAIN, 0.5), 0);
    ck_assert_int_eq(sf_band_compare(SF_BAND_WIN, 0.7, SF_BAND_WIN, 0.7), 0);
}
END_TEST

/* ------------------------------------------------------------ selection */

SF_TCASE(selection, 0);

START_TEST(uct_score_by_hand) {
    ck_assert(isinf(sf_uct_score(0.3, 0, 10, 1.41)));
    /* 0.5 + 1.41*sqrt(ln 100 / 10) = 0.5 + 1.41*0.678614... = 1.456846 */
    ck_assert_double_eq_tol(sf_uct_score(0.5, 10, 100, 1.41), 0.5 + 1.41 * sqrt(log(100.0) / 10.0),
                            1e-12);
    ck_assert_double_eq_tol(sf_uct_score(0.5, 10, 100, 1.41), 1.4568458, 1e-6);
}
END_TEST

START_TEST(uct_constant_follows_the_budget_table) {
    /* 0.8 below 500 simulations, 1.41 below 1,000, 2.5 from 1,000. */
    ck_assert_double_eq(sf_uct_c_for_budget(1, 500, 1000, 0.8, 1.41, 2.5), 0.8);
    ck_assert_double_eq(sf_uct_c_for_budget(499, 500, 1000, 0.8, 1.41, 2.5), 0.8);
    ck_assert_double_eq(sf_uct_c_for_budget(500, 500, 1000, 0.8, 1.41, 2.5), 1.41);
    ck_assert_double_eq(sf_uct_c_for_budget(999, 500, 1000, 0.8, 1.41, 2.5), 1.41);
    ck_assert_double_eq(sf_uct_c_for_budget(1000, 500, 1000, 0.8, 1.41, 2.5), 2.5);
    ck_assert_double_eq(sf_uct_c_for_budget(8000, 500, 1000, 0.8, 1.41, 2.5), 2.5);
}
END_TEST

START_TEST(uct_constant_schedule_takes_the_first_step_above_the_budget) {
    /* A fleet schedule {below 300: 0.5}, {below 600: 1.0}, {2.0}: the first
     * step whose bound is above the budget, the unbounded one after. */
    const sf_uct_c_step three[] = {{300, 0.5}, {600, 1.0}, {0, 2.0}};
    ck_assert_double_eq(sf_uct_c_schedule(299, three, 3, 9.0), 0.5);
    ck_assert_double_eq(sf_uct_c_schedule(300, three, 3, 9.0), 1.0);
    ck_assert_double_eq(sf_uct_c_schedule(600, three, 3, 9.0), 2.0);
    /* No step for the budget (bounded only, or empty): the fallback. */
    ck_assert_double_eq(sf_uct_c_schedule(600, three, 2, 9.0), 9.0);
    ck_assert_double_eq(sf_uct_c_schedule(1, NULL, 0, 9.0), 9.0);
    /* The library's default table through the named defaults: 0.8 below 500. */
    ck_assert_double_eq(
        sf_uct_c_for_budget(200, SF_SEARCH_DEFAULT_UCT_BUDGET_MID,
                            SF_SEARCH_DEFAULT_UCT_BUDGET_HIGH, SF_SEARCH_DEFAULT_UCT_C_LOW,
                            SF_SEARCH_DEFAULT_UCT_C_MID, SF_SEARCH_DEFAULT_UCT_C_HIGH),
        0.8);
}
END_TEST

START_TEST(selection_rules_round_trip_by_name) {
    /* One table names the rules for the tools and a gate side's select. */
    const char *names[] = {"auto", "uct", "puct", "gumbel"};
    const int codes[] = {SF_SELECT_AUTO, SF_SELECT_UCT, SF_SELECT_PUCT, SF_SELECT_GUMBEL};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(sf_search_select_lookup(names[i]), codes[i]);
        ck_assert_str_eq(sf_search_select_name(codes[i]), names[i]);
    }
    ck_assert_int_eq(sf_search_select_lookup("same"), SF_ENOTFOUND);
    ck_assert_int_eq(sf_search_select_lookup(NULL), SF_ENOTFOUND);
    ck_assert_str_eq(sf_search_select_name(99), "auto");
}
END_TEST

START_TEST(puct_score_by_hand) {
    /* q + P*sqrt(Np + offset)/(1+n)*(c1 + ln((Np + c2 + 1)/c2)).
     * The plain MuZero form (offset 0): q 0.4, P 0.25, n 3, Np 16:
     * 0.4 + 0.25*4/4*(1.25 + ln(19669/19652)) = 0.7127162. */
    double want = 0.4 + 0.25 * 4.0 / 4.0 * (1.25 + log(19669.0 / 19652.0));
    ck_assert_double_eq_tol(sf_puct_score(0.4, 0.25, 3, 16, 1.25, 19652.0, 0.0), want, 1e-12);
    ck_assert_double_eq_tol(want, 0.7127162, 1e-6);
    /* With the default offset 0.01: sqrt(16.01)/4 = 1.0003125 instead of 1,
     * 0.4 + 0.25*1.0003125*1.2508647 = 0.7128139. */
    ck_assert_double_eq_tol(sf_puct_score(0.4, 0.25, 3, 16, 1.25, 19652.0, 0.01), 0.7128139, 1e-6);
    /* A node's first selection (Np = 0, n = 0): sqrt(0.01) = 0.1, so
     * 0.4 + 0.25*0.1*(1.25 + ln(19653/19652)) = 0.4 + 0.025*1.2500509 =
     * 0.4312513: the prior counts. Without the offset the score is q
     * exactly, so every child ties. */
    ck_assert_double_eq_tol(sf_puct_score(0.4, 0.25, 0, 0, 1.25, 19652.0, 0.01), 0.4312513, 1e-6);
    ck_assert_double_eq(sf_puct_score(0.4, 0.25, 0, 0, 1.25, 19652.0, 0.0), 0.4);
    ck_assert_double_gt(sf_puct_score(0.4, 0.5, 0, 0, 1.25, 19652.0, 0.01),
                        sf_puct_score(0.4, 0.25, 0, 0, 1.25, 19652.0, 0.01));
}
END_TEST

START_TEST(puct_fpu_by_hand) {
    /* FPU = parent Q - reduction*sqrt(prior mass of the visited children). */
    ck_assert_double_eq(sf_puct_fpu(0.6, 0.0, 0.1), 0.6); /* nothing visited yet */
    /* a quarter of the prior visited: 0.6 - 0.1*0.5 = 0.55 */
    ck_assert_double_eq_tol(sf_puct_fpu(0.6, 0.25, 0.1), 0.55, 1e-12);
    /* 0.64 visited: 0.6 - 0.1*0.8 = 0.52 */
    ck_assert_double_eq_tol(sf_puct_fpu(0.6, 0.64, 0.1), 0.52, 1e-12);
    /* all of it (float priors may sum a little above 1: clamped): 0.5 */
    ck_assert_double_eq_tol(sf_puct_fpu(0.6, 1.0, 0.1), 0.5, 1e-12);
    ck_assert_double_eq_tol(sf_puct_fpu(0.6, 1.0000001, 0.1), 0.5, 1e-12);
    /* reduction 0: the parent's Q whatever was visited */
    ck_assert_double_eq(sf_puct_fpu(0.6, 0.64, 0.0), 0.6);
}
END_TEST

START_TEST(widen_cap_matches_spec_10_3) {
    /* search-algorithm §10.3: K(v) = ceil(5.79 (v+1)^0.44). */
    const uint32_t v[] = {0, 1, 2, 3, 5, 10, 15, 20, 22, 23, 25, 30, 50, 100, 200, 500, 1000};
    const uint32_t k[] = {6, 8, 10, 11, 13, 17, 20, 23, 24, 24, 25, 27, 33, 45, 60, 90, 122};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        ck_assert_uint_eq(sf_widen_cap(5.79, 0.44, v[i]), k[i]);
    /* It first binds at v = 24: K(v) >= v + 1 for every v <= 23, K(24) = 24. */
    for (uint32_t i = 0; i <= 23; i++)
        ck_assert_uint_ge(sf_widen_cap(5.79, 0.44, i), i + 1);
    ck_assert_uint_eq(sf_widen_cap(5.79, 0.44, 24), 24);
}
END_TEST

/* ---------------------------------------------------------------- Gumbel */

/* search-algorithm §10.2: logits [1, 0.5, 0, -1]; N = [3, 1, 0, 0]; q = [0.6, 0.8]; v_hat 0.5. */
static void spec_10_2(double *prior, double *logit, uint32_t *n, double *q) {
    const double l[4] = {1.0, 0.5, 0.0, -1.0};
    double mx = 1.0, sum = 0.0;
    for (int a = 0; a < 4; a++)
        sum += exp(l[a] - mx);
    for (int a = 0; a < 4; a++) {
        logit[a] = l[a];
        prior[a] = exp(l[a] - mx) / sum;
    }
    n[0] = 3;
    n[1] = 1;
    n[2] = n[3] = 0;
    q[0] = 0.6;
    q[1] = 0.8;
    q[2] = q[3] = 0.0;
}

SF_TCASE(gumbel, 0);

START_TEST(completed_q_and_vmix_match_spec_10_2) {
    double prior[4], logit[4], q[4], cq[4];
    uint32_t n[4];
    spec_10_2(prior, logit, n, q);
    ck_assert_double_eq_tol(prior[0], 0.473991, EPS);
    ck_assert_double_eq_tol(prior[1], 0.287490, EPS);
    ck_assert_double_eq_tol(prior[2], 0.174371, EPS);
    ck_assert_double_eq_tol(prior[3], 0.064148, EPS);
    double vmix = sf_gumbel_vmix(4, prior, n, q, 0.5);
    ck_assert_double_eq_tol(vmix, 0.6404065070, 1e-10);
    double vmix2 = sf_gumbel_completed_q(4, prior, n, q, NULL, 0.5, cq);
    ck_assert_double_eq_tol(vmix2, 0.6404065070, 1e-10);
    ck_assert_double_eq_tol(cq[0], 0.6, 1e-12);
    ck_assert_double_eq_tol(cq[1], 0.8, 1e-12);
    ck_assert_double_eq_tol(cq[2], 0.640407, EPS);
    ck_assert_double_eq_tol(cq[3], 0.640407, EPS);
    /* S = 0: v_mix = v_hat */
    uint32_t zero[4] = {0};
    ck_assert_double_eq(sf_gumbel_vmix(4, prior, zero, q, 0.37), 0.37);
}
END_TEST

START_TEST(vmix_floors_a_zero_prior) {
    /* search-algorithm §11.2: a visited action with prior 0 must not give NaN. */
    double prior[2] = {0.0, 0.0}, q[2] = {0.4, 0.6};
    uint32_t n[2] = {1, 1};
    double v = sf_gumbel_vmix(2, prior, n, q, 0.5);
    ck_assert(isfinite(v));
    ck_assert_double_eq_tol(v, (0.5 + 2.0 * 0.5) / 3.0, 1e-12);
}
END_TEST

/* sigma and the improved policy on the §10.2 example under two settings:
 * mctx's defaults (rescaled Q, c_scale 0.1) and ours (known bounds [0, 1],
 * no rescale, c_scale 1.0); c_visit 50 in both. */
static const struct {
    const char *what;
    double c_scale;
    int rescale;
    double sigma[4], pi[4], pi_tol[4];
    int interior; /* the interior choice (search-algorithm §2.6); -1: not checked */
} sigma_rows[] = {
    {"mctx defaults",
     0.1,
     1,
     {0.0, 5.3, 1.070772, 1.070772},
     {0.008066, 0.980092, 0.008657, 0.003185},
     {EPS, EPS, EPS, EPS},
     1},
    {"known bounds",
     1.0,
     0,
     {31.8, 42.4, 33.941545, 33.941545},
     {4.1e-5, 0.999783, 1.29e-4, 4.7e-5},
     {0.05e-5, EPS, 0.005e-4, 0.05e-5},
     -1},
};

SF_LOOP_TEST(sigma_and_policy_match_spec_10_2, 0, (int)(sizeof sigma_rows / sizeof sigma_rows[0])) {
    double prior[4], logit[4], q[4], cq[4], sigma[4], pi[4];
    uint32_t n[4];
    spec_10_2(prior, logit, n, q);
    sf_gumbel_completed_q(4, prior, n, q, NULL, 0.5, cq);
    sf_gumbel_sigma(4, cq, n, NULL, 50.0, sigma_rows[_i].c_scale, sigma_rows[_i].rescale, sigma);
    sf_gumbel_policy(4, logit, sigma, NULL, pi);
    for (int a = 0; a < 4; a++) {
        ck_assert_msg(fabs(sigma[a] - sigma_rows[_i].sigma[a]) < EPS, "%s: sigma[%d] %.9g",
                      sigma_rows[_i].what, a, sigma[a]);
        ck_assert_msg(fabs(pi[a] - sigma_rows[_i].pi[a]) < sigma_rows[_i].pi_tol[a],
                      "%s: pi[%d] %.9g", sigma_rows[_i].what, a, pi[a]);
    }
    if (sigma_rows[_i].interior >= 0)
        ck_assert_int_eq(sf_gumbel_select_interior(4, pi, n, NULL), sigma_rows[_i].interior);
}
END_TEST

START_TEST(policy_equals_prior_when_q_is_flat) {
    /* search-algorithm §2.5: all completed Q equal -> sigma = 0 (rescaled) and pi' = pi. */
    double prior[3] = {0.5, 0.3, 0.2}, logit[3], q[3] = {0.7, 0.7, 0.0}, cq[3], sigma[3], pi[3];
    uint32_t n[3] = {2, 5, 0};
    for (int a = 0; a < 3; a++)
        logit[a] = log(prior[a]);
    /* v_mix = (0.7 + 7*0.7)/8 = 0.7, so the unvisited one completes to 0.7 */
    sf_gumbel_completed_q(3, prior, n, q, NULL, 0.7, cq);
    sf_gumbel_sigma(3, cq, n, NULL, 50.0, 0.1, 1, sigma);
    sf_gumbel_policy(3, logit, sigma, NULL, pi);
    /* (up to rounding: v_mix differs from 0.7 in the last bit, and the
     * rescaling denominator is floored at 1e-8) */
    for (int a = 0; a < 3; a++)
        ck_assert_double_eq_tol(pi[a], prior[a], 1e-6);
}
END_TEST

START_TEST(policy_masks_invalid_actions) {
    double logit[3] = {0.0, 5.0, 0.0}, sigma[3] = {0.0, 0.0, 0.0}, pi[3];
    const unsigned char valid[3] = {1, 0, 1};
    sf_gumbel_policy(3, logit, sigma, valid, pi);
    ck_assert_double_eq(pi[1], 0.0);
    ck_assert_double_eq_tol(pi[0], 0.5, 1e-12);
    ck_assert_double_eq_tol(pi[2], 0.5, 1e-12);
}
END_TEST

/* Run-length "level x count" of a schedule, e.g. "0x8 1x4 2x4". */
static void runs(const uint32_t *seq, int n, char *out, size_t cap) {
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && seq[j] == seq[i])
            j++;
        len += (size_t)snprintf(out + len, cap - len, "%s%ux%d", len ? " " : "", seq[i], j - i);
        i = j;
    }
}

/* The schedule of m considered actions over n simulations, as runs. */
static const struct {
    int m, n;
    const char *runs;
} schedules[] = {
    {8, 24, "0x8 1x4 2x4 3x2 4x2 5x2 6x2"},
    {16, 64, "0x16 1x8 2x8 3x4 4x4 5x4 6x4 7x2 8x2 9x2 10x2 11x2 12x2 13x2 14x2"},
    {16, 100,
     "0x16 1x8 2x8 3x8 4x4 5x4 6x4 7x4 8x4 9x4 10x2 11x2 12x2 13x2 14x2 "
     "15x2 16x2 17x2 18x2 19x2 20x2 21x2 22x2 23x2 24x2 25x2 26x2 27x2"},
    {4, 32, "0x4 1x4 2x4 3x4 4x2 5x2 6x2 7x2 8x2 9x2 10x2 11x2"},
    {6, 20, "0x6 1x3 2x3 3x2 4x2 5x2 6x2"},
};

START_TEST(sequential_halving_matches_spec_10_1) {
    uint32_t seq[128];
    char got[1024];
    for (size_t k = 0; k < sizeof schedules / sizeof schedules[0]; k++) {
        ck_assert_int_eq(sf_gumbel_schedule(schedules[k].m, schedules[k].n, seq), schedules[k].n);
        runs(seq, schedules[k].n, got, sizeof got);
        ck_assert_str_eq(got, schedules[k].runs);
    }

    /* m = 1: c_t = t */
    ck_assert_int_eq(sf_gumbel_schedule(1, 5, seq), 5);
    for (uint32_t t = 0; t < 5; t++)
        ck_assert_uint_eq(seq[t], t);
    ck_assert_int_eq(sf_gumbel_schedule(0, 5, seq), SF_EINVAL);
}
END_TEST

START_TEST(phases_expand_to_the_schedule) {
    /* Phase p: k[p] survivors each visited extra[p] times, cut at n. The
     * levels they produce are exactly the schedule (search-algorithm §10.1, m=16 n=100). */
    int k[32], extra[32];
    int np = sf_gumbel_phases(16, 100, k, extra, 32);
    /* 16x1, 8x3, 4x6, then pairs of 12 levels until 100 (the last cut at 6) */
    ck_assert_int_eq(np, 5);
    ck_assert_int_eq(k[0], 16);
    ck_assert_int_eq(extra[0], 1);
    ck_assert_int_eq(k[1], 8);
    ck_assert_int_eq(extra[1], 3);
    ck_assert_int_eq(k[2], 4);
    ck_assert_int_eq(extra[2], 6);
    ck_assert_int_eq(k[3], 2);
    ck_assert_int_eq(extra[3], 12);
    ck_assert_int_eq(k[4], 2);
    ck_assert_int_eq(extra[4], 12);
    const int ms[] = {2, 3, 4, 6, 8, 16, 16};
    const int ns[] = {10, 17, 32, 20, 24, 64, 1000};
    for (size_t c = 0; c < sizeof ms / sizeof ms[0]; c++) {
        uint32_t want[1000], got[1000];
        int n = ns[c];
        sf_gumbel_schedule(ms[c], n, want);
        np = sf_gumbel_phases(ms[c], n, k, extra, 32);
        ck_assert_int_gt(np, 0);
        int t = 0;
        uint32_t level = 0;
        for (int p = 0; p < np; p++)
            for (int r = 0; r < extra[p]; r++, level++)
                for (int i = 0; i < k[p] && t < n; i++)
                    got[t++] = level;
        ck_assert_int_eq(t, n);
        ck_assert_mem_eq(got, want, sizeof(uint32_t) * (size_t)n);
    }
    ck_assert_int_eq(sf_gumbel_phases(16, 100, k, extra, 2), SF_EFULL);
}
END_TEST

#include "test-search-math.tests.h" /* SF_TESTS: every test above (tests/meson.build) */
SF_CHECK_MAIN("search-math", "values", 0, NULL, NULL)
