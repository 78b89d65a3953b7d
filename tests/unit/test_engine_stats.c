/*
 * test_engine_stats.c — monster move probabilities and encounter
 * composition, checked statistically.
 *
 * For each monster and each history that matters (the last move, and
 * whether the last two were equal), the exact distribution of the next
 * intent follows from its getMove(num) with num = aiRng.random(99) uniform
 * on 0..99 and the in-move coin flips (game-rules §5). We draw N = 20000
 * independent aiRng streams (RandomXS128 seeded from sf_seed_derive), call
 * rollMove once on each, and require every observed frequency to lie within
 * the two-sided 99.9% normal interval p +- 3.2905 sqrt(p(1-p)/N) of its
 * exact probability; impossible outcomes (p = 0, the "not three in a row"
 * rules) must never appear and certain ones always. The seeds are fixed, so
 * the outcome is reproducible.
 *
 * randomBoolean(p) is nextFloat() < p with nextFloat = k / 2^24, so its
 * exact probability is ceil(p * 2^24) / 2^24 for the float p (fprob()).
 */
#include <math.h>

#include "engine_fixture.h"
#include "sf_check.h"

#define N_SAMPLES 20000
#define Z999      3.2905

static double fprob(float p) {
    return ceil((double)p * 16777216.0) / 16777216.0;
}

typedef struct history {
    int move, prev; /* the current intent (last set move) and the one before */
    int ai[4];      /* per-monster counters to set */
} history;

/* Roll monster `id` N times from `h`; counts[move] += 1 per outcome. */
static void sample(int id, const history *h, int asc, uint64_t base, int *counts) {
    memset(counts, 0, sizeof(int) * MV_COUNT);
    for (int k = 0; k < N_SAMPLES; k++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 0);
        c->ascension = (uint8_t)asc;
        fx_mon(c, id, 50, h->move);
        sf_monster *mo = &c->mon[0];
        mo->hist[0] = (uint8_t)h->prev;
        for (int i = 0; i < 4; i++)
            mo->ai[i] = (uint8_t)h->ai[i];
        sf_rng_seed(&c->rng[SF_STREAM_AI], sf_seed_derive(base, (uint64_t)k, (uint64_t)id, 0));
        monster_roll_move(c, 0);
        counts[mo->move]++;
    }
}

typedef struct expect {
    int move;
    double p;
} expect;

static void check(const char *what, const int *counts, const expect *e, int n) {
    double total = 0;
    int seen = 0;
    for (int i = 0; i < n; i++) {
        total += e[i].p;
        int got = counts[e[i].move];
        seen += got;
        double p = e[i].p, f = (double)got / N_SAMPLES;
        if (p <= 0.0) {
            ck_assert_msg(got == 0, "%s: move %d appeared %d times, must never", what, e[i].move,
                          got);
        } else if (p >= 1.0) {
            ck_assert_msg(got == N_SAMPLES, "%s: move %d only %d times, must always", what,
                          e[i].move, got);
        } else {
            double tol = Z999 * sqrt(p * (1 - p) / N_SAMPLES);
            ck_assert_msg(fabs(f - p) <= tol, "%s: move %d freq %.4f, want %.4f +- %.4f", what,
                          e[i].move, f, p, tol);
        }
    }
    ck_assert_msg(fabs(total - 1.0) < 1e-9, "%s: expectations sum to %f", what, total);
    ck_assert_msg(seen == N_SAMPLES, "%s: %d samples fell outside the listed moves", what,
                  N_SAMPLES - seen);
}

/* ------------------------------------------------------------------------ */

START_TEST(jaw_worm_transitions) {
    /* num<25 Chomp (after Chomp: Bellow p=0.5625 else Thrash); num<55
     * Thrash (after two Thrash: Chomp p=0.357 else Bellow); else Bellow
     * (after Bellow: Chomp p=0.416 else Thrash). */
    const double a = fprob(0.5625f), b = fprob(0.357f), d = fprob(0.416f);
    int counts[MV_COUNT];
    history h = {MV_CHOMP, MV_THRASH, {0, 1, 0, 0}};
    sample(MON_JAW_WORM, &h, 0, 1, counts);
    expect e1[3] = {{MV_CHOMP, 0}, {MV_BELLOW, .25 * a + .45}, {MV_THRASH, .25 * (1 - a) + .30}};
    check("jaw worm after Chomp", counts, e1, 3);

    h = (history){MV_THRASH, MV_THRASH, {0, 1, 0, 0}};
    sample(MON_JAW_WORM, &h, 0, 2, counts);
    expect e2[3] = {{MV_CHOMP, .25 + .30 * b}, {MV_BELLOW, .30 * (1 - b) + .45}, {MV_THRASH, 0}};
    check("jaw worm after Thrash Thrash", counts, e2, 3);

    h = (history){MV_THRASH, MV_CHOMP, {0, 1, 0, 0}};
    sample(MON_JAW_WORM, &h, 0, 3, counts);
    expect e3[3] = {{MV_CHOMP, .25}, {MV_THRASH, .30}, {MV_BELLOW, .45}};
    check("jaw worm after Chomp Thrash", counts, e3, 3);

    h = (history){MV_BELLOW, MV_CHOMP, {0, 1, 0, 0}};
    sample(MON_JAW_WORM, &h, 0, 4, counts);
    expect e4[3] = {{MV_CHOMP, .25 + .45 * d}, {MV_THRASH, .30 + .45 * (1 - d)}, {MV_BELLOW, 0}};
    check("jaw worm after Bellow", counts, e4, 3);

    /* first move: always Chomp */
    h = (history){MV_NONE, MV_NONE, {0, 0, 0, 0}};
    sample(MON_JAW_WORM, &h, 0, 5, counts);
    expect e5[1] = {{MV_CHOMP, 1}};
    check("jaw worm first move", counts, e5, 1);
}
END_TEST

START_TEST(louse_transitions) {
    /* num<25 Grow (Spit Web) unless lastTwo(Grow); else Bite unless lastTwo(Bite). */
    int counts[MV_COUNT];
    for (int green = 0; green <= 1; green++) {
        int id = green ? MON_GREEN_LOUSE : MON_RED_LOUSE;
        int buff = green ? MV_SPIT_WEB : MV_LOUSE_GROW;
        history h = {MV_LOUSE_BITE, buff, {1, 0, 0, 0}};
        sample(id, &h, 0, 10 + (uint64_t)green, counts);
        expect e1[2] = {{buff, .25}, {MV_LOUSE_BITE, .75}};
        check("louse after buff, Bite", counts, e1, 2);
        h = (history){MV_LOUSE_BITE, MV_LOUSE_BITE, {1, 0, 0, 0}};
        sample(id, &h, 0, 12 + (uint64_t)green, counts);
        expect e2[2] = {{buff, 1}, {MV_LOUSE_BITE, 0}};
        check("louse after Bite Bite", counts, e2, 2);
        h = (history){buff, buff, {1, 0, 0, 0}};
        sample(id, &h, 0, 14 + (uint64_t)green, counts);
        expect e3[2] = {{buff, 0}, {MV_LOUSE_BITE, 1}};
        check("louse after buff buff", counts, e3, 2);
    }
}
END_TEST

START_TEST(acid_slime_medium_and_large_transitions) {
    const double p4 = fprob(0.4f);
    int counts[MV_COUNT];
    for (int large = 0; large <= 1; large++) {
        int id = large ? MON_ACID_SLIME_L : MON_ACID_SLIME_M;
        uint64_t b = 20 + 10 * (uint64_t)large;
        history h = {MV_ACID_SPIT, MV_ACID_SPIT, {0}};
        sample(id, &h, 0, b + 1, counts);
        /* <30: coin Tackle/Lick; 30-69: Tackle; 70+: Lick */
        expect e1[3] = {{MV_ACID_SPIT, 0}, {MV_ACID_TACKLE, .15 + .40}, {MV_ACID_LICK, .15 + .30}};
        check("acid after Spit Spit", counts, e1, 3);
        h = (history){MV_ACID_SPIT, MV_ACID_LICK, {0}};
        sample(id, &h, 0, b + 2, counts);
        expect e2[3] = {{MV_ACID_SPIT, .30}, {MV_ACID_TACKLE, .40}, {MV_ACID_LICK, .30}};
        check("acid after Lick Spit", counts, e2, 3);
        h = (history){MV_ACID_TACKLE, MV_ACID_SPIT, {0}};
        sample(id, &h, 0, b + 3, counts);
        expect e3[3] = {{MV_ACID_SPIT, .30 + .40 * p4},
                        {MV_ACID_TACKLE, 0},
                        {MV_ACID_LICK, .40 * (1 - p4) + .30}};
        check("acid after Tackle", counts, e3, 3);
        h = (history){MV_ACID_LICK, MV_ACID_LICK, {0}};
        sample(id, &h, 0, b + 4, counts);
        expect e4[3] = {{MV_ACID_SPIT, .30 + .30 * p4},
                        {MV_ACID_TACKLE, .40 + .30 * (1 - p4)},
                        {MV_ACID_LICK, 0}};
        check("acid after Lick Lick", counts, e4, 3);
    }
}
END_TEST

START_TEST(acid_slime_small_first_move_is_a_coin) {
    int counts[MV_COUNT];
    history h = {MV_NONE, MV_NONE, {0}};
    sample(MON_ACID_SLIME_S, &h, 0, 40, counts);
    expect e[2] = {{MV_ACID_TACKLE, .5}, {MV_ACID_LICK, .5}};
    check("acid slime (S) first move", counts, e, 2);
}
END_TEST

START_TEST(spike_slime_medium_and_large_transitions) {
    int counts[MV_COUNT];
    for (int large = 0; large <= 1; large++) {
        int id = large ? MON_SPIKE_SLIME_L : MON_SPIKE_SLIME_M;
        uint64_t b = 50 + 10 * (uint64_t)large;
        history h = {MV_FLAME_TACKLE, MV_FLAME_TACKLE, {0}};
        sample(id, &h, 0, b + 1, counts);
        expect e1[2] = {{MV_FLAME_TACKLE, 0}, {MV_SPIKE_LICK, 1}};
        check("spike after FT FT", counts, e1, 2);
        h = (history){MV_SPIKE_LICK, MV_SPIKE_LICK, {0}};
        sample(id, &h, 0, b + 2, counts);
        expect e2[2] = {{MV_FLAME_TACKLE, 1}, {MV_SPIKE_LICK, 0}};
        check("spike after Lick Lick", counts, e2, 2);
        h = (history){MV_SPIKE_LICK, MV_FLAME_TACKLE, {0}};
        sample(id, &h, 0, b + 3, counts);
        expect e3[2] = {{MV_FLAME_TACKLE, .30}, {MV_SPIKE_LICK, .70}};
        check("spike after FT Lick", counts, e3, 2);
    }
}
END_TEST

START_TEST(fungi_beast_transitions) {
    /* <60 Bite unless lastTwo(Bite); else Grow unless last(Grow). */
    int counts[MV_COUNT];
    history h = {MV_FUNGI_GROW, MV_FUNGI_BITE, {0}};
    sample(MON_FUNGI_BEAST, &h, 0, 70, counts);
    expect e1[2] = {{MV_FUNGI_BITE, 1}, {MV_FUNGI_GROW, 0}};
    check("fungi after Grow", counts, e1, 2);
    h = (history){MV_FUNGI_BITE, MV_FUNGI_BITE, {0}};
    sample(MON_FUNGI_BEAST, &h, 0, 71, counts);
    expect e2[2] = {{MV_FUNGI_BITE, 0}, {MV_FUNGI_GROW, 1}};
    check("fungi after Bite Bite", counts, e2, 2);
    h = (history){MV_FUNGI_BITE, MV_FUNGI_GROW, {0}};
    sample(MON_FUNGI_BEAST, &h, 0, 72, counts);
    expect e3[2] = {{MV_FUNGI_BITE, .60}, {MV_FUNGI_GROW, .40}};
    check("fungi after Grow Bite", counts, e3, 2);
}
END_TEST

START_TEST(slaver_transitions) {
    int counts[MV_COUNT];
    /* Blue: num>=40 and not lastTwo(Stab) -> Stab; else Rake unless lastTwo(Rake). */
    history h = {MV_STAB, MV_STAB, {0}};
    sample(MON_BLUE_SLAVER, &h, 0, 80, counts);
    expect e1[2] = {{MV_STAB, 0}, {MV_RAKE, 1}};
    check("blue slaver after Stab Stab", counts, e1, 2);
    h = (history){MV_RAKE, MV_RAKE, {0}};
    sample(MON_BLUE_SLAVER, &h, 0, 81, counts);
    expect e2[2] = {{MV_STAB, 1}, {MV_RAKE, 0}};
    check("blue slaver after Rake Rake", counts, e2, 2);
    h = (history){MV_RAKE, MV_STAB, {0}};
    sample(MON_BLUE_SLAVER, &h, 0, 82, counts);
    expect e3[2] = {{MV_STAB, .60}, {MV_RAKE, .40}};
    check("blue slaver mixed", counts, e3, 2);

    /* Red, before Entangle: num>=75 Entangle, else Scrape (Stab after two
     * Scrapes). After Entangle: num>=55 Stab unless lastTwo(Stab), else
     * Scrape unless lastTwo(Scrape). */
    h = (history){MV_SCRAPE, MV_STAB, {0, 1, 0, 0}};
    sample(MON_RED_SLAVER, &h, 0, 83, counts);
    expect e4[3] = {{MV_ENTANGLE, .25}, {MV_SCRAPE, .75}, {MV_STAB, 0}};
    check("red slaver before Entangle", counts, e4, 3);
    h = (history){MV_SCRAPE, MV_SCRAPE, {0, 1, 0, 0}};
    sample(MON_RED_SLAVER, &h, 0, 84, counts);
    expect e5[3] = {{MV_ENTANGLE, .25}, {MV_SCRAPE, 0}, {MV_STAB, .75}};
    check("red slaver before Entangle, Scrape Scrape", counts, e5, 3);
    h = (history){MV_SCRAPE, MV_ENTANGLE, {1, 1, 0, 0}};
    sample(MON_RED_SLAVER, &h, 0, 85, counts);
    expect e6[3] = {{MV_ENTANGLE, 0}, {MV_SCRAPE, .55}, {MV_STAB, .45}};
    check("red slaver after Entangle", counts, e6, 3);
    h = (history){MV_STAB, MV_STAB, {1, 1, 0, 0}};
    sample(MON_RED_SLAVER, &h, 0, 86, counts);
    expect e7[3] = {{MV_ENTANGLE, 0}, {MV_SCRAPE, 1}, {MV_STAB, 0}};
    check("red slaver after Entangle, Stab Stab", counts, e7, 3);
    h = (history){MV_SCRAPE, MV_SCRAPE, {1, 1, 0, 0}};
    sample(MON_RED_SLAVER, &h, 0, 87, counts);
    expect e8[3] = {{MV_ENTANGLE, 0}, {MV_SCRAPE, 0}, {MV_STAB, 1}};
    check("red slaver after Entangle, Scrape Scrape", counts, e8, 3);
}
END_TEST

START_TEST(gremlin_nob_transitions) {
    /* after Bellow: num<33 Skull Bash; else Skull Bash after two Rushes, else Rush */
    int counts[MV_COUNT];
    history h = {MV_RUSH, MV_SKULL_BASH, {1, 0, 0, 0}};
    sample(MON_GREMLIN_NOB, &h, 0, 90, counts);
    expect e1[2] = {{MV_SKULL_BASH, .33}, {MV_RUSH, .67}};
    check("nob mixed", counts, e1, 2);
    h = (history){MV_RUSH, MV_RUSH, {1, 0, 0, 0}};
    sample(MON_GREMLIN_NOB, &h, 0, 91, counts);
    expect e2[2] = {{MV_SKULL_BASH, 1}, {MV_RUSH, 0}};
    check("nob after Rush Rush", counts, e2, 2);
}
END_TEST

START_TEST(looter_smoke_bomb_or_lunge_is_a_coin) {
    /* After the second Mug: randomBoolean(0.5f) (p = 0.5 exactly). */
    int smoke = 0;
    for (int k = 0; k < N_SAMPLES; k++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 0);
        c->hp = c->max_hp = 999;
        fx_mon(c, MON_LOOTER, 48, MV_MUG);
        c->mon[0].ai[0] = 1;
        fx_mon(c, MON_CULTIST, 50, MV_INCANTATION);
        sf_rng_seed(&c->rng[SF_STREAM_AI], sf_seed_derive(95, (uint64_t)k, 0, 0));
        monster_take_turn(c, 0);
        smoke += c->mon[0].move == MV_SMOKE_BOMB;
        ck_assert(c->mon[0].move == MV_SMOKE_BOMB || c->mon[0].move == MV_LUNGE);
    }
    double f = (double)smoke / N_SAMPLES;
    ck_assert(fabs(f - .5) <= Z999 * sqrt(.25 / N_SAMPLES));
}
END_TEST

START_TEST(shield_gremlin_protect_target_is_uniform) {
    /* Three others: each gets the block with p = 1/3 (aiRng.random(2)). */
    int got[4] = {0};
    for (int k = 0; k < N_SAMPLES; k++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 0);
        c->hp = c->max_hp = 999;
        fx_mon(c, MON_SHIELD_GREMLIN, 13, MV_PROTECT);
        for (int i = 0; i < 3; i++)
            fx_mon(c, MON_SNEAKY_GREMLIN, 12, MV_PUNCTURE);
        sf_rng_seed(&c->rng[SF_STREAM_AI], sf_seed_derive(96, (uint64_t)k, 0, 0));
        monster_take_turn(c, 0);
        for (int m = 0; m < 4; m++)
            if (c->mon[m].block)
                got[m]++;
    }
    ck_assert_int_eq(got[0], 0);
    double tol = Z999 * sqrt((1.0 / 3) * (2.0 / 3) / N_SAMPLES);
    for (int m = 1; m < 4; m++)
        ck_assert(fabs((double)got[m] / N_SAMPLES - 1.0 / 3) <= tol);
}
END_TEST

/* ------------------------------------------------------------------------
 * Encounter composition (miscRng, game-rules §6)
 * ---------------------------------------------------------------------- */

static void check_freq(const char *what, int got, double p) {
    double f = (double)got / N_SAMPLES, tol = Z999 * sqrt(p * (1 - p) / N_SAMPLES);
    ck_assert_msg(fabs(f - p) <= tol, "%s: %.4f, want %.4f +- %.4f", what, f, p, tol);
}

SF_TCASE(encounters, 120);

START_TEST(two_louse_small_slimes_large_slime_coins) {
    int red = 0, spike_small = 0, acid_large = 0;
    for (int k = 0; k < N_SAMPLES; k++) {
        sf_state s;
        uint64_t seed = sf_seed_derive(100, (uint64_t)k, 0, 0);
        s = fx_fight(ENC_2_LOUSE, seed);
        red += ccombat_of(&s)->mon[0].id == MON_RED_LOUSE;
        s = fx_fight(ENC_SMALL_SLIMES, seed);
        const sf_combat *c = ccombat_of(&s);
        ck_assert_int_eq(c->n_mon, 2);
        if (c->mon[0].id == MON_SPIKE_SLIME_S) {
            spike_small++;
            ck_assert_int_eq(c->mon[1].id, MON_ACID_SLIME_M);
        } else {
            ck_assert_int_eq(c->mon[0].id, MON_ACID_SLIME_S);
            ck_assert_int_eq(c->mon[1].id, MON_SPIKE_SLIME_M);
        }
        s = fx_fight(ENC_LARGE_SLIME, seed);
        acid_large += ccombat_of(&s)->mon[0].id == MON_ACID_SLIME_L;
    }
    check_freq("red louse", red, .5);
    check_freq("spike small + acid medium", spike_small, .5);
    check_freq("acid large", acid_large, .5);
}
END_TEST

START_TEST(gremlin_gang_and_lots_of_slimes_draw_without_replacement) {
    /* Gang: 4 of {Mad, Mad, Sneaky, Sneaky, Fat, Fat, Shield, Wizard}:
     * P(Wizard in) = P(Shield in) = 1 - C(7,4)/C(8,4) = 1/2; P(two Mad) =
     * C(6,2)/C(8,4) = 15/70. Lots of Slimes: always 3 Spike (S) and 2 Acid
     * (S); the first is Acid with p = 2/5. */
    int wizard = 0, shield = 0, two_mad = 0, acid_first = 0;
    for (int k = 0; k < N_SAMPLES; k++) {
        sf_state s;
        uint64_t seed = sf_seed_derive(101, (uint64_t)k, 0, 0);
        s = fx_fight(ENC_GREMLIN_GANG, seed);
        const sf_combat *c = ccombat_of(&s);
        ck_assert_int_eq(c->n_mon, 4);
        int mad = 0, w = 0, sh = 0, sn = 0, fat = 0;
        for (int m = 0; m < 4; m++) {
            mad += c->mon[m].id == MON_MAD_GREMLIN;
            w += c->mon[m].id == MON_GREMLIN_WIZARD;
            sh += c->mon[m].id == MON_SHIELD_GREMLIN;
            sn += c->mon[m].id == MON_SNEAKY_GREMLIN;
            fat += c->mon[m].id == MON_FAT_GREMLIN;
        }
        ck_assert(mad <= 2 && sn <= 2 && fat <= 2 && w <= 1 && sh <= 1);
        ck_assert_int_eq(mad + w + sh + sn + fat, 4);
        wizard += w;
        shield += sh;
        two_mad += mad == 2;
        s = fx_fight(ENC_LOTS_OF_SLIMES, seed);
        c = ccombat_of(&s);
        ck_assert_int_eq(c->n_mon, 5);
        int spikes = 0;
        for (int m = 0; m < 5; m++)
            spikes += c->mon[m].id == MON_SPIKE_SLIME_S;
        ck_assert_int_eq(spikes, 3);
        acid_first += c->mon[0].id == MON_ACID_SLIME_S;
    }
    check_freq("wizard in gang", wizard, .5);
    check_freq("shield in gang", shield, .5);
    check_freq("two mad gremlins", two_mad, 15.0 / 70);
    check_freq("acid slime first", acid_first, .4);
}
END_TEST

START_TEST(thugs_and_wildlife_pick_uniformly_among_candidates) {
    /* Thugs: weak wildlife (louse 1/3 split red/green, Spike M 1/3, Acid M
     * 1/3) + strong humanoid (Cultist 1/3, Red or Blue Slaver 1/6 each,
     * Looter 1/3). Wildlife: Fungi or Jaw Worm 1/2 + weak wildlife. */
    int louse = 0, spike_m = 0, cultist = 0, red = 0, looter = 0, fungi = 0;
    for (int k = 0; k < N_SAMPLES; k++) {
        sf_state s;
        uint64_t seed = sf_seed_derive(102, (uint64_t)k, 0, 0);
        s = fx_fight(ENC_EXORDIUM_THUGS, seed);
        const sf_combat *c = ccombat_of(&s);
        ck_assert_int_eq(c->n_mon, 2);
        int w = c->mon[0].id, h = c->mon[1].id;
        ck_assert(w == MON_RED_LOUSE || w == MON_GREEN_LOUSE || w == MON_SPIKE_SLIME_M ||
                  w == MON_ACID_SLIME_M);
        ck_assert(h == MON_CULTIST || h == MON_RED_SLAVER || h == MON_BLUE_SLAVER ||
                  h == MON_LOOTER);
        louse += w == MON_RED_LOUSE || w == MON_GREEN_LOUSE;
        spike_m += w == MON_SPIKE_SLIME_M;
        cultist += h == MON_CULTIST;
        red += h == MON_RED_SLAVER;
        looter += h == MON_LOOTER;
        s = fx_fight(ENC_EXORDIUM_WILDLIFE, seed);
        c = ccombat_of(&s);
        ck_assert(c->mon[0].id == MON_FUNGI_BEAST || c->mon[0].id == MON_JAW_WORM);
        fungi += c->mon[0].id == MON_FUNGI_BEAST;
    }
    check_freq("thugs louse", louse, 1.0 / 3);
    check_freq("thugs spike M", spike_m, 1.0 / 3);
    check_freq("thugs cultist", cultist, 1.0 / 3);
    check_freq("thugs red slaver", red, 1.0 / 6);
    check_freq("thugs looter", looter, 1.0 / 3);
    check_freq("wildlife fungi", fungi, .5);
}
END_TEST

START_TEST(thugs_construct_every_candidate) {
    /* bottomGetWeakWildlife builds a louse (HP + bite), a Spike M and an
     * Acid M; bottomGetStrongHumanoid a Cultist, a slaver and a Looter: 7
     * monsterHpRng calls before the kept pair's pre-battle rolls (a kept
     * louse adds its Curl Up roll: 8). */
    for (uint64_t seed = 1; seed <= 40; seed++) {
        sf_state s;
        s = fx_fight(ENC_EXORDIUM_THUGS, seed);
        const sf_combat *c = ccombat_of(&s);
        int louse = c->mon[0].id == MON_RED_LOUSE || c->mon[0].id == MON_GREEN_LOUSE;
        ck_assert_uint_eq(c->rng[SF_STREAM_MONSTER_HP].counter, 7u + (unsigned)louse);
        s = fx_fight(ENC_EXORDIUM_WILDLIFE, seed);
        c = ccombat_of(&s);
        louse = c->mon[1].id == MON_RED_LOUSE || c->mon[1].id == MON_GREEN_LOUSE;
        /* Fungi, Jaw Worm, then louse (2), Spike M, Acid M: 6 (+1 Curl Up) */
        ck_assert_uint_eq(c->rng[SF_STREAM_MONSTER_HP].counter, 6u + (unsigned)louse);
    }
}
END_TEST

#include "test-engine-stats.tests.h" /* SF_TESTS: every test above (tests/meson.build) */
SF_CHECK_MAIN("engine-stats", "moves", 120, NULL, NULL)
