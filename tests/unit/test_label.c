/* test_label.c — the label contract (label/label.h) against values computed
 * independently: hand computations, and exact integer arithmetic for every
 * (won, hp, max_hp, potions, turns, monster HP left, pool) combination in a
 * range. Before this contract the shard writer and the search each projected
 * values with their own code, and the two disagreed on 45 of 80,400 winning
 * combinations (rounding at bin edges); the exhaustive checks below would
 * catch any such disagreement, since they predict every bin exactly. */
#include <math.h>
#include <string.h>

#include "label/label.h"
#include "sf_check.h"

/* A win in one turn: no turn discount. */
static double win(int hp, int max_hp, int potions) {
    return sf_value_win_score(hp, max_hp, potions, 1);
}

START_TEST(win_score_by_hand) {
    ck_assert_double_eq_tol(win(80, 80, 3), 1.0, 1e-12);
    ck_assert_double_eq_tol(win(1, 80, 0), 0.5 + 0.45 / 80.0, 1e-12);
    /* 40/80 HP, 1 potion: 0.5 + 0.225 + 0.05/3 = 0.7416666... */
    ck_assert_double_eq_tol(win(40, 80, 1), 0.5 + 0.225 + 0.05 / 3.0, 1e-12);
    /* out-of-range inputs are clamped */
    ck_assert_double_eq_tol(win(99, 80, 7), 1.0, 1e-12);
    ck_assert_double_eq_tol(win(-5, 80, -1), 0.5, 1e-12);
    ck_assert_double_eq_tol(win(10, 0, 0), 0.5, 1e-12);
}
END_TEST

/* keep(t) of label.h, written out with pow() */
static double keep_by_hand(int t) {
    int slow = t < 12 ? t - 1 : 11, fast = t > 12 ? t - 12 : 0;
    return pow(0.999, slow) * pow(0.98, fast);
}

START_TEST(a_win_keeps_less_of_its_margin_the_longer_it_took) {
    /* 40/80 HP, 1 potion, won on turn 3: margin 0.225 + 0.05/3 =
     * 0.2416666..., kept 0.999^2 = 0.998001 of it: 0.5 + 0.2411835... */
    ck_assert_double_eq_tol(sf_value_win_score(40, 80, 1, 3), 0.5 + 0.998001 * (0.225 + 0.05 / 3.0),
                            1e-12);
    /* 80/80 with 3 potions on turn 12, the last of the slow rate:
     * 0.5 + 0.999^11 * 0.5 = 0.994520... */
    ck_assert_double_eq_tol(sf_value_win_score(80, 80, 3, 12), 0.5 + 0.5 * pow(0.999, 11), 1e-12);
    /* ... and on turn 15: 0.999^11 * 0.98^3 = 0.930498... of the margin */
    ck_assert_double_eq_tol(sf_value_win_score(80, 80, 3, 15),
                            0.5 + 0.5 * pow(0.999, 11) * 0.941192, 1e-12);
    /* turn 0 and below count as turn 1 */
    ck_assert_double_eq(sf_value_win_score(40, 80, 1, 0), win(40, 80, 1));
    ck_assert_double_eq(sf_value_win_score(40, 80, 1, -7), win(40, 80, 1));
    /* Every turn costs: the same HP one turn later scores strictly less,
     * and never reaches the win floor or any loss, up to the largest cap. */
    for (int hp = 1; hp <= 80; hp += 7)
        for (int t = 1; t < 1000; t++) {
            double now = sf_value_win_score(hp, 80, 0, t),
                   later = sf_value_win_score(hp, 80, 0, t + 1);
            ck_assert_double_lt(later, now);
            ck_assert_double_gt(later, SF_VALUE_WIN_MIN);
            ck_assert_double_eq_tol(now, 0.5 + keep_by_hand(t) * 0.45 * hp / 80.0, 1e-12);
        }
    /* A turn costs 0.1 % of the margin up to turn 12, 2 % after it. */
    double m12 = sf_value_win_score(80, 80, 0, 12) - 0.5,
           m13 = sf_value_win_score(80, 80, 0, 13) - 0.5;
    ck_assert_double_eq_tol(m13 / m12, 0.98, 1e-12);
    double m11 = sf_value_win_score(80, 80, 0, 11) - 0.5;
    ck_assert_double_eq_tol(m12 / m11, 0.999, 1e-12);
    /* An empty margin (0 HP kept is clamped, 0 potions) stays at the floor. */
    ck_assert_double_eq(sf_value_win_score(0, 80, 0, 9), SF_VALUE_WIN_MIN);
}
END_TEST

START_TEST(loss_score_by_hand) {
    /* Nothing removed, died on turn 0: 0. */
    ck_assert_double_eq(sf_value_loss_score(0, 100, 100), 0.0);
    /* Half the pool removed, 10 turns: 0.2*(0.75*0.5 + 0.25*0.5) = 0.1. */
    ck_assert_double_eq_tol(sf_value_loss_score(10, 50, 100), 0.1, 1e-12);
    /* The Slime Boss at 70/140 splits into two 70-HP slimes: pool 280, left
     * 140, the same 0.5 removed as before the split; 5 turns: 0.2*(0.375 +
     * 0.25/3) = 0.0916666... */
    ck_assert_double_eq_tol(sf_value_loss_score(5, 140, 280), 0.2 * (0.375 + 0.25 / 3.0), 1e-12);
    ck_assert_double_eq_tol(sf_value_loss_score(5, 70, 140), sf_value_loss_score(5, 140, 280),
                            1e-15);
    /* Clamps: left above the pool counts as nothing removed; no pool too. */
    ck_assert_double_eq(sf_value_loss_score(0, 500, 100), 0.0);
    ck_assert_double_eq(sf_value_loss_score(0, 0, 0), 0.0);
    ck_assert_double_eq(sf_value_loss_score(-3, 0, 0), 0.0);
    /* Everything removed and a very long fight stays below 0.2. */
    ck_assert_double_lt(sf_value_loss_score(100000, 0, 100), SF_VALUE_LOSS_MAX);
    /* More removed ranks higher; so does surviving longer. */
    ck_assert_double_gt(sf_value_loss_score(6, 10, 100), sf_value_loss_score(6, 11, 100));
    ck_assert_double_gt(sf_value_loss_score(7, 10, 100), sf_value_loss_score(6, 10, 100));
}
END_TEST

START_TEST(score_dispatches_on_won) {
    sf_fight_facts f = {.won = 1,
                        .hp = 60,
                        .max_hp = 80,
                        .potions_left = 2,
                        .turns = 7,
                        .monster_hp_left = 0,
                        .monster_hp_pool = 44};
    /* 60/80, 2 potions, won on turn 7: 0.5 + 0.999^6 * (0.3375 + 0.0333...) */
    ck_assert_double_eq_tol(sf_value_score(&f), 0.5 + pow(0.999, 6) * (0.45 * 0.75 + 0.1 / 3.0),
                            1e-12);
    /* an escape (Smoke Bomb) scores the win floor whatever it kept */
    f.escaped = 1;
    ck_assert_double_eq(sf_value_score(&f), SF_VALUE_WIN_MIN);
    f.hp = 80;
    f.turns = 1;
    ck_assert_double_eq(sf_value_score(&f), 0.5);
    float bins[SF_VALUE_BINS];
    sf_value_project(sf_value_score(&f), bins);
    ck_assert_float_eq(bins[SF_VALUE_LOSS_BINS], 1.0f); /* all in bin 5, support 0.5 */
    f.escaped = 0;
    f.hp = 60;
    f.turns = 7;
    f.won = 0;
    f.hp = 0;
    f.monster_hp_left = 11;
    ck_assert_double_eq_tol(sf_value_score(&f), 0.2 * (0.75 * 0.75 + 0.25 * 7.0 / 17.0), 1e-12);
}
END_TEST

START_TEST(supports_by_hand) {
    for (int i = 0; i < 5; i++)
        ck_assert_double_eq_tol(sf_value_support(i), 0.05 * i, 1e-15);
    for (int i = 5; i < 21; i++)
        ck_assert_double_eq_tol(sf_value_support(i), 0.5 + (i - 5) / 30.0, 1e-15);
    ck_assert_double_eq(sf_value_support(-1), 0.0);
    ck_assert_double_eq(sf_value_support(21), 0.0);
    for (int i = 0; i + 1 < SF_VALUE_BINS; i++)
        ck_assert_double_lt(sf_value_support(i), sf_value_support(i + 1));
}
END_TEST

/* Expect exactly p[l] = 1 - w, p[l+1] = w and zero elsewhere. */
static void expect_two_hot(const float *p, int l, double w, const char *what, int a, int b, int c) {
    for (int i = 0; i < SF_VALUE_BINS; i++) {
        double want = i == l ? 1.0 - w : i == l + 1 ? w : 0.0;
        ck_assert_msg(fabs((double)p[i] - want) <= 1e-6,
                      "%s (%d, %d, %d): bin %d = %.9f, want %.9f", what, a, b, c, i, (double)p[i],
                      want);
    }
}

START_TEST(every_win_projects_exactly) {
    /* x = 5 + 30*(y - 0.5) = 5 + (27*hp + p*max_hp) / (2*max_hp): the bin
     * and the weight follow from integer division, with no rounding. */
    double lowest_win = 2.0;
    long n = 0;
    for (int max_hp = 1; max_hp <= 120; max_hp++)
        for (int hp = 1; hp <= max_hp; hp++)
            for (int pots = 0; pots <= 3; pots++, n++) {
                long num = 27L * hp + (long)pots * max_hp, den = 2L * max_hp;
                int l = 5 + (int)(num / den);
                double w = (double)(num % den) / (double)den;
                if (l == 20) { /* y = 1: all mass on the last bin */
                    l = 19;
                    w = 1.0;
                }
                double y = win(hp, max_hp, pots);
                ck_assert_double_eq_tol(y, 0.5 + (double)num / (60.0 * (double)max_hp), 1e-12);
                float p[SF_VALUE_BINS];
                sf_value_project(y, p);
                expect_two_hot(p, l, w, "win", hp, max_hp, pots);
                ck_assert_double_eq_tol(sf_value_mean(p), y, 1e-6);
                if (y < lowest_win)
                    lowest_win = y;
            }
    ck_assert_int_eq(n, 120 * 121 / 2 * 4);
    ck_assert_double_ge(lowest_win, SF_VALUE_WIN_MIN);
}
END_TEST

START_TEST(every_loss_projects_exactly_and_below_every_win) {
    /* x = y / 0.05 = 3*(pool - left)/pool + t/(t + 10)
     *   = (3*(pool - left)*(t + 10) + t*pool) / (pool*(t + 10)). */
    double highest_loss = -1.0;
    for (int pool = 1; pool <= 64; pool++)
        for (int left = 0; left <= pool; left++)
            for (int t = 0; t <= 40; t++) {
                long num = 3L * (pool - left) * (t + 10) + (long)t * pool;
                long den = (long)pool * (t + 10);
                int l = (int)(num / den);
                double w = (double)(num % den) / (double)den;
                double y = sf_value_loss_score(t, left, pool);
                ck_assert_double_eq_tol(y, 0.05 * (double)num / (double)den, 1e-12);
                ck_assert_int_lt(l, 4); /* below the last loss bin: y < 0.2 */
                float p[SF_VALUE_BINS];
                sf_value_project(y, p);
                expect_two_hot(p, l, w, "loss", pool, left, t);
                if (y > highest_loss)
                    highest_loss = y;
            }
    /* Any win outranks any loss, by the whole gap between the classes. */
    ck_assert_double_lt(highest_loss, SF_VALUE_LOSS_MAX);
    ck_assert_double_lt(SF_VALUE_LOSS_MAX, SF_VALUE_WIN_MIN);
}
END_TEST

START_TEST(projection_of_estimates_and_edges) {
    float p[SF_VALUE_BINS];
    sf_value_project(0.0, p);
    ck_assert_float_eq(p[0], 1.0f);
    sf_value_project(NAN, p);
    ck_assert_float_eq(p[0], 1.0f);
    sf_value_project(-3.0, p);
    ck_assert_float_eq(p[0], 1.0f);
    sf_value_project(1.0, p);
    ck_assert_float_eq(p[20], 1.0f);
    sf_value_project(7.0, p);
    ck_assert_float_eq(p[20], 1.0f);
    /* 0.35, between the classes (an estimate): halfway from 0.2 to 0.5. */
    sf_value_project(0.35, p);
    ck_assert_float_eq_tol(p[4], 0.5f, 1e-6f);
    ck_assert_float_eq_tol(p[5], 0.5f, 1e-6f);
    /* 0.75: x = 5 + 7.5 -> bins 12 and 13 at one half each. */
    sf_value_project(0.75, p);
    ck_assert_float_eq_tol(p[12], 0.5f, 1e-6f);
    ck_assert_float_eq_tol(p[13], 0.5f, 1e-6f);
    for (int i = 0; i <= 2000; i++) {
        double y = i / 2000.0;
        sf_value_project(y, p);
        double sum = 0.0;
        for (int b = 0; b < SF_VALUE_BINS; b++)
            sum += p[b];
        ck_assert_double_eq_tol(sum, 1.0, 1e-6);
        ck_assert_double_eq_tol(sf_value_mean(p), y, 2e-6);
    }
}
END_TEST

START_TEST(forecast_columns_are_named_once) {
    ck_assert_str_eq(sf_forecast_column_name(SF_FORECAST_PLAYER_HP), "player_hp");
    ck_assert_str_eq(sf_forecast_column_name(SF_FORECAST_BLOCK_AT_ENEMY_TURN),
                     "block_at_enemy_turn");
    ck_assert_ptr_null(sf_forecast_column_name(SF_FORECAST_COLS));
    ck_assert_ptr_null(sf_forecast_column_name(-1));
    char joined[256] = "";
    for (int c = 0; c < SF_FORECAST_COLS; c++) {
        if (c)
            strcat(joined, ",");
        strcat(joined, sf_forecast_column_name(c));
    }
    ck_assert_str_eq(sf_forecast_column_list(), joined);
}
END_TEST

#include "test-label.tests.h" /* SF_TESTS: every test above (tests/meson.build) */
SF_CHECK_MAIN("label", "contract", 60, NULL, NULL)
