/*
 * test_engine_start.c — starting positions (engine.h sf_start_sample, run.c)
 * checked against the reward rules of docs/game-rules.md §11, not against
 * recorded outputs.
 *
 * Frequencies: N independent streams (RandomXS128 seeded from
 * sf_seed_derive), each observed frequency inside the two-sided 99.9 %
 * normal interval p +- 3.2905 sqrt(p(1-p)/N) of the probability the rule
 * gives (worked out exactly in the test); a probability of 0 must never be
 * observed. The seeds are fixed, so every outcome is reproducible.
 */
#include <math.h>
#include <stdio.h>

#include "engine_fixture.h"
#include "sf_check.h"

#define N_SAMPLES 20000
#define Z999      3.2905

static void expect_freq(int count, int n, double p, const char *what) {
    double f = (double)count / n;
    if (p == 0.0) {
        ck_assert_msg(count == 0, "%s: probability 0, seen %d times in %d", what, count, n);
        return;
    }
    double half = Z999 * sqrt(p * (1.0 - p) / n);
    ck_assert_msg(fabs(f - p) <= half, "%s: frequency %.4f, rule %.4f +- %.4f (n %d)", what, f, p,
                  half, n);
}

static sf_rng stream(uint64_t base, int i) {
    sf_rng r;
    sf_rng_seed(&r, sf_seed_derive(base, (uint64_t)i, 0, 0));
    return r;
}

/* ---- card rewards ------------------------------------------------------ */

/* The chance of each rarity for roll = random(99) + b: rare below `rare`,
 * uncommon below `unc` (normal 3 / 40, elite 10 / 50). */
static void rarity_probs(int b, int elite, double p[4]) {
    int rare = elite ? 10 : 3, unc = elite ? 50 : 40;
    int nr = 0, nu = 0;
    for (int r = 0; r < 100; r++) {
        nr += r + b < rare;
        nu += r + b >= rare && r + b < unc;
    }
    p[RAR_RARE] = nr / 100.0;
    p[RAR_UNCOMMON] = nu / 100.0;
    p[RAR_COMMON] = 1.0 - p[RAR_RARE] - p[RAR_UNCOMMON];
}

START_TEST(pools_hold_every_ironclad_card_once_at_its_rarity) {
    int seen[CARD_COUNT] = {0};
    static const int sizes[] = {[RAR_COMMON] = 20, [RAR_UNCOMMON] = 36, [RAR_RARE] = 16};
    for (int rar = RAR_COMMON; rar <= RAR_RARE; rar++) {
        int n;
        const uint8_t *pool = run_card_pool(rar, &n);
        ck_assert_int_eq(n, sizes[rar]);
        for (int i = 0; i < n; i++) {
            ck_assert_int_eq(sf_cards[pool[i]].rarity, rar);
            seen[pool[i]]++;
        }
    }
    /* the colorless cards (their own pool, combat.c) are never offered */
    for (int id = 1; id < CARD_COUNT; id++) {
        int r = sf_cards[id].rarity;
        int in_pool = (r == RAR_COMMON || r == RAR_UNCOMMON || r == RAR_RARE) &&
                      !(id >= CARD_FIRST_COLORLESS && id <= CARD_LAST_COLORLESS);
        ck_assert_msg(seen[id] == in_pool, "%s appears %d times in the pools", sf_cards[id].name,
                      seen[id]);
    }
    int n;
    ck_assert_ptr_null(run_card_pool(RAR_BASIC, &n));
}
END_TEST

/* The first reward of a run (b = 5): R/U/C 0/35/65 % (normal), 5/40/55 %
 * (elite); at b = -40: 43/37/20 % and 50/40/10 % (§11). */
static void first_card_rarities(int b0, int elite, const double want[4]) {
    int count[4] = {0};
    for (int i = 0; i < N_SAMPLES; i++) {
        sf_rng r = stream(0x5EED + (uint64_t)b0 * 7 + (uint64_t)elite, i);
        int b = b0;
        sf_card_spec out[3];
        run_card_reward(&r, &b, elite, out);
        count[sf_cards[out[0].id].rarity]++;
    }
    static const char *names[4] = {"basic", "common", "uncommon", "rare"};
    for (int rar = RAR_COMMON; rar <= RAR_RARE; rar++) {
        char what[64];
        snprintf(what, sizeof what, "b=%d %s first card %s", b0, elite ? "elite" : "normal",
                 names[rar]);
        expect_freq(count[rar], N_SAMPLES, want[rar], what);
    }
}

START_TEST(first_reward_rarities_follow_the_offset_b) {
    double p[4];
    rarity_probs(5, 0, p);
    ck_assert(fabs(p[RAR_RARE] - 0.00) < 1e-9 && fabs(p[RAR_UNCOMMON] - 0.35) < 1e-9);
    first_card_rarities(5, 0, p);
    rarity_probs(5, 1, p);
    ck_assert(fabs(p[RAR_RARE] - 0.05) < 1e-9 && fabs(p[RAR_UNCOMMON] - 0.40) < 1e-9);
    first_card_rarities(5, 1, p);
    rarity_probs(-40, 0, p);
    ck_assert(fabs(p[RAR_RARE] - 0.43) < 1e-9 && fabs(p[RAR_UNCOMMON] - 0.37) < 1e-9);
    first_card_rarities(-40, 0, p);
    rarity_probs(-40, 1, p);
    ck_assert(fabs(p[RAR_RARE] - 0.50) < 1e-9 && fabs(p[RAR_UNCOMMON] - 0.40) < 1e-9);
    first_card_rarities(-40, 1, p);
}
END_TEST

/* b carries across the cards of a reward and across rewards: a common
 * lowers it by 1 (not below -40), a rare resets it to 5, an uncommon leaves
 * it. The exact rarity distribution of every card of 6 consecutive
 * rewards (elites 2 and 5), from b = 5, by dynamic programming over b;
 * and b after each reward equals the rule applied to the rarities drawn. */
START_TEST(rarities_follow_b_across_a_sequence_of_rewards) {
    enum { REWARDS = 6, CARDS = 3 * REWARDS, B_SPAN = 46 }; /* b in -40..5 */
    static const int elite_of[REWARDS] = {0, 0, 1, 0, 0, 1};
    double dist[B_SPAN] = {0}, want[CARDS][4] = {{0}};
    dist[5 + 40] = 1.0;
    for (int k = 0; k < CARDS; k++) {
        double next[B_SPAN] = {0};
        for (int bi = 0; bi < B_SPAN; bi++) {
            if (dist[bi] == 0.0)
                continue;
            double p[4];
            rarity_probs(bi - 40, elite_of[k / 3], p);
            for (int rar = RAR_COMMON; rar <= RAR_RARE; rar++)
                want[k][rar] += dist[bi] * p[rar];
            next[5 + 40] += dist[bi] * p[RAR_RARE];
            next[bi] += dist[bi] * p[RAR_UNCOMMON];
            next[bi > 0 ? bi - 1 : 0] += dist[bi] * p[RAR_COMMON];
        }
        memcpy(dist, next, sizeof dist);
    }
    int count[CARDS][4] = {{0}};
    for (int i = 0; i < N_SAMPLES; i++) {
        sf_rng r = stream(0xB1122, i);
        int b = 5;
        for (int w = 0; w < REWARDS; w++) {
            sf_card_spec out[3];
            int b_rule = b;
            run_card_reward(&r, &b, elite_of[w], out);
            for (int c = 0; c < 3; c++) {
                int rar = sf_cards[out[c].id].rarity;
                count[3 * w + c][rar]++;
                b_rule = rar == RAR_RARE     ? 5
                         : rar == RAR_COMMON ? (b_rule - 1 < -40 ? -40 : b_rule - 1)
                                             : b_rule;
            }
            ck_assert_int_eq(b, b_rule);
        }
    }
    for (int k = 0; k < CARDS; k++)
        for (int rar = RAR_COMMON; rar <= RAR_RARE; rar++) {
            char what[64];
            snprintf(what, sizeof what, "card %d of the sequence, rarity %d", k + 1, rar);
            expect_freq(count[k][rar], N_SAMPLES, want[k][rar], what);
        }
}
END_TEST

/* No card twice in one reward; within a rarity every pool card equally
 * likely (the first card, which no earlier card can exclude); Exordium never
 * upgrades a reward (chance 0.0). */
START_TEST(rewards_are_distinct_uniform_within_rarity_and_never_upgraded) {
    int count[CARD_COUNT] = {0}, by_rarity[4] = {0};
    for (int i = 0; i < N_SAMPLES; i++) {
        sf_rng r = stream(0xD15, i);
        int b = -40; /* all three rarities common enough to count */
        sf_card_spec out[3];
        run_card_reward(&r, &b, 1, out);
        ck_assert(out[0].id != out[1].id && out[0].id != out[2].id && out[1].id != out[2].id);
        for (int c = 0; c < 3; c++)
            ck_assert_int_eq(out[c].upgrades, 0);
        count[out[0].id]++;
        by_rarity[sf_cards[out[0].id].rarity]++;
    }
    for (int rar = RAR_COMMON; rar <= RAR_RARE; rar++) {
        int n;
        const uint8_t *pool = run_card_pool(rar, &n);
        for (int k = 0; k < n; k++)
            expect_freq(count[pool[k]], by_rarity[rar], 1.0 / n, sf_cards[pool[k]].name);
    }
}
END_TEST

/* The cardRng draws of one reward in the order of §11, replayed by hand:
 * 3 x (rarity roll, card draw, redraws while repeated), then one upgrade
 * roll per non-rare card. */
START_TEST(a_reward_draws_cardrng_in_the_game_order) {
    for (int i = 0; i < 2000; i++) {
        sf_rng a = stream(0x0D0E, i), b = a;
        int off_a = (i % 46) - 40, off_b = off_a;
        sf_card_spec got[3];
        run_card_reward(&a, &off_a, i & 1, got);
        int ids[3];
        for (int c = 0; c < 3; c++) {
            int roll = sf_rng_random(&b, 99) + off_b;
            int rare = i & 1 ? 10 : 3, unc = i & 1 ? 50 : 40;
            int rar = roll < rare ? RAR_RARE : roll < unc ? RAR_UNCOMMON : RAR_COMMON;
            if (rar == RAR_RARE)
                off_b = 5;
            if (rar == RAR_COMMON)
                off_b = off_b - 1 < -40 ? -40 : off_b - 1;
            int n;
            const uint8_t *pool = run_card_pool(rar, &n);
            int dup;
            do {
                ids[c] = pool[sf_rng_random(&b, n - 1)];
                dup = 0;
                for (int k = 0; k < c; k++)
                    dup |= ids[k] == ids[c];
            } while (dup);
        }
        for (int c = 0; c < 3; c++)
            if (sf_cards[ids[c]].rarity != RAR_RARE)
                ck_assert(!sf_rng_random_bool_p(&b, 0.0f));
        for (int c = 0; c < 3; c++)
            ck_assert_int_eq(got[c].id, ids[c]);
        ck_assert_int_eq(off_a, off_b);
        ck_assert_uint_eq(a.counter, b.counter);
        ck_assert(a.s0 == b.s0 && a.s1 == b.s1);
    }
}
END_TEST

/* ---- potions ----------------------------------------------------------- */

/* Ten fights in a row from M = 0: the drop chance of fight k is the mix of
 * 40 + M over the exact distribution of M (drop: M - 10, else M + 10). */
START_TEST(potion_drops_follow_40_plus_m) {
    enum { FIGHTS = 10, M_SPAN = 2 * FIGHTS + 1 }; /* M = 10 (j - FIGHTS) */
    double dist[M_SPAN] = {0}, want[FIGHTS] = {0};
    dist[FIGHTS] = 1.0;
    for (int k = 0; k < FIGHTS; k++) {
        double next[M_SPAN] = {0};
        for (int j = 0; j < M_SPAN; j++) {
            if (dist[j] == 0.0)
                continue;
            int chance = 40 + 10 * (j - FIGHTS);
            double p = chance < 0 ? 0.0 : chance > 100 ? 1.0 : chance / 100.0;
            want[k] += dist[j] * p;
            next[j - 1] += dist[j] * p;
            next[j + 1] += dist[j] * (1.0 - p);
        }
        memcpy(dist, next, sizeof dist);
    }
    ck_assert(fabs(want[0] - 0.40) < 1e-12);
    ck_assert(fabs(want[1] - (0.4 * 0.3 + 0.6 * 0.5)) < 1e-12);
    int count[FIGHTS] = {0};
    for (int i = 0; i < N_SAMPLES; i++) {
        sf_rng r = stream(0x9071, i);
        int m = 0;
        for (int k = 0; k < FIGHTS; k++) {
            int before = m;
            int item = run_potion_drop(&r, &m, 0);
            count[k] += item > 0;
            ck_assert_int_eq(m, item > 0 ? before - 10 : before + 10);
        }
    }
    for (int k = 0; k < FIGHTS; k++) {
        char what[48];
        snprintf(what, sizeof what, "potion drop at fight %d", k + 1);
        expect_freq(count[k], N_SAMPLES, want[k], what);
    }
    /* every monster escaped: no potion, and M still rises by 10 */
    for (int i = 0; i < 200; i++) {
        sf_rng r = stream(0xE5C, i);
        int m = 500;
        ck_assert_int_eq(run_potion_drop(&r, &m, 1), 0);
        ck_assert_int_eq(m, 510);
    }
}
END_TEST

/* A dropped potion is common / uncommon / rare 65 / 25 / 10 %, uniform
 * within its rarity group of 17 / 9 / 7 (3.8 / 2.8 / 1.4 % each). */
START_TEST(potion_rarities_are_65_25_10_and_uniform_within) {
    int count[64] = {0}, by_rarity[4] = {0}, group[4] = {0};
    for (int p = 1; p < sf_run_potion_count(); p++)
        group[run_potion_rarity(p)]++;
    ck_assert_int_eq(group[1], 17);
    ck_assert_int_eq(group[2], 9);
    ck_assert_int_eq(group[3], 7);
    for (int i = 0; i < N_SAMPLES; i++) {
        sf_rng r = stream(0x9A7E, i);
        int m = 60; /* chance 100 */
        int item = run_potion_drop(&r, &m, 0);
        ck_assert_int_gt(item, 0);
        count[item]++;
        by_rarity[run_potion_rarity(item)]++;
    }
    expect_freq(by_rarity[1], N_SAMPLES, 0.65, "common potions");
    expect_freq(by_rarity[2], N_SAMPLES, 0.25, "uncommon potions");
    expect_freq(by_rarity[3], N_SAMPLES, 0.10, "rare potions");
    static const double share[4] = {0, 0.65, 0.25, 0.10};
    for (int p = 1; p < sf_run_potion_count(); p++)
        expect_freq(count[p], N_SAMPLES, share[run_potion_rarity(p)] / group[run_potion_rarity(p)],
                    sf_run_potion_name(p));
}
END_TEST

/* ---- relics, rest ------------------------------------------------------ */

START_TEST(elite_relic_tiers_are_50_33_17) {
    int count[4] = {0};
    for (int i = 0; i < N_SAMPLES; i++) {
        sf_rng r = stream(0x7E1C, i);
        count[run_elite_relic_tier(&r)]++;
    }
    expect_freq(count[1], N_SAMPLES, 0.50, "common relic");
    expect_freq(count[2], N_SAMPLES, 0.33, "uncommon relic");
    expect_freq(count[3], N_SAMPLES, 0.17, "rare relic");
    ck_assert_int_eq(count[0], 0);
}
END_TEST

START_TEST(relic_pools_are_the_ironclad_pools) {
    int tiers[4] = {0};
    for (int i = 1; i < sf_run_relic_count(); i++)
        tiers[run_relic_tier(i)]++;
    ck_assert_int_eq(tiers[0], 1); /* Burning Blood */
    ck_assert_int_eq(tiers[1], 33);
    ck_assert_int_eq(tiers[2], 30);
    ck_assert_int_eq(tiers[3], 28);
    /* every engine relic of the pools is a run relic with the same name,
     * which a start holds in its spec; the shop and event relics are
     * engine-only (a start never buys relics or plays events) */
    int engine_only = 0;
    for (int e = 1; e < RELIC_COUNT; e++) {
        int item = sf_run_relic_lookup(sf_relic_name(e));
        if (sf_relics[e].source != RS_POOL) {
            ck_assert_int_eq(item, SF_ENOTFOUND);
            engine_only++;
            continue;
        }
        ck_assert_int_gt(item, 0);
        ck_assert_int_eq(sf_run_relic_engine(item), e);
    }
    ck_assert_int_eq(engine_only, 17 + 10); /* 17 shop, 10 event (game-rules §7) */
    ck_assert_int_eq(sf_run_relic_engine(sf_run_relic_lookup("Whetstone")), SF_ENOTFOUND);
    /* every relic of the pools is played by its rules: 62 in a fight, the
     * other 29 on pickup or on the run */
    int fight = 0;
    for (int i = 1; i < sf_run_relic_count(); i++) {
        ck_assert_msg(sf_run_relic_modelled(i), "%s", sf_run_relic_name(i));
        fight += sf_run_relic_engine(i) > 0;
    }
    ck_assert_int_eq(fight, 62);
    ck_assert_int_eq(sf_run_relic_modelled(0), 0);
    ck_assert_int_eq(sf_run_relic_modelled(sf_run_relic_count()), 0);
    /* every potion of the Ironclad list is the engine's, under its name */
    for (int p = 1; p < sf_run_potion_count(); p++) {
        int e = sf_run_potion_engine(p);
        ck_assert_msg(e > 0, "%s", sf_run_potion_name(p));
        ck_assert_str_eq(sf_potion_name(e), sf_run_potion_name(p));
    }
    ck_assert_int_eq(sf_run_potion_lookup("Ghost in a Jar"), SF_ENOTFOUND); /* the Silent's */
}
END_TEST

START_TEST(rest_heals_30_percent_of_max_hp_rounded_down) {
    ck_assert_int_eq(run_rest_heal(80), 24);
    ck_assert_int_eq(run_rest_heal(87), 26); /* 26.1 */
    ck_assert_int_eq(run_rest_heal(89), 26); /* 26.7 */
    ck_assert_int_eq(run_rest_heal(90), 27);
    ck_assert_int_eq(run_rest_heal(9), 2);
    ck_assert_int_eq(run_rest_heal(10), 3);
}
END_TEST

/* The map model: its fixed rooms and placement rules always hold, and its
 * statistics are the [sim] figures of §11 (elites per path 21/52/24/3 %,
 * floor 6 elite 36 % / rest 52 %; means as fitted: 6.7 monster rooms,
 * 0.6 "?" fights). */
START_TEST(the_map_model_keeps_the_rules_and_the_sim_statistics) {
    int elites[5] = {0}, f6_elite = 0, f6_rest = 0;
    double monsters = 0, q_fights = 0;
    for (int i = 0; i < N_SAMPLES; i++) {
        sf_rng map = stream(0x3A9, i), ev = stream(0xE7E, i);
        uint8_t rooms[RUN_BOSS_FLOOR + 1];
        char path[RUN_BOSS_FLOOR + 1];
        run_path_sample(&map, &ev, rooms, path);
        ck_assert_int_eq(rooms[1], ROOM_MONSTER);
        ck_assert_int_eq(rooms[9], ROOM_TREASURE);
        ck_assert_int_eq(rooms[15], ROOM_REST);
        ck_assert_int_eq(rooms[16], ROOM_BOSS);
        int ne = 0;
        for (int f = 1; f <= 15; f++) {
            char c = path[f - 1];
            if (f <= 5)
                ck_assert(c != 'R' && c != 'E');
            if (f == 14)
                ck_assert(c != 'R');
            if (f > 1 && (c == 'R' || c == '$' || c == 'E'))
                ck_assert_msg(path[f - 2] != c, "floor %d repeats '%c' in %s", f, c, path);
            ne += c == 'E';
            monsters += c == 'M';
            q_fights += c == 'm';
        }
        ck_assert_int_le(ne, 3);
        elites[ne]++;
        f6_elite += path[5] == 'E';
        f6_rest += path[5] == 'R';
    }
    expect_freq(elites[0], N_SAMPLES, 0.21, "paths with no elite");
    expect_freq(elites[1], N_SAMPLES, 0.52, "paths with 1 elite");
    expect_freq(elites[2], N_SAMPLES, 0.24, "paths with 2 elites");
    expect_freq(elites[3], N_SAMPLES, 0.03, "paths with 3 elites");
    expect_freq(f6_elite, N_SAMPLES, 0.36, "floor 6 elite");
    expect_freq(f6_rest, N_SAMPLES, 0.52, "floor 6 rest");
    ck_assert_msg(fabs(monsters / N_SAMPLES - 6.7) < 0.15, "monster rooms %.2f",
                  monsters / N_SAMPLES);
    ck_assert_msg(fabs(q_fights / N_SAMPLES - 0.6) < 0.1, "\"?\" fights %.2f",
                  q_fights / N_SAMPLES);
}
END_TEST

/* The spec of sf_start_sample, which must succeed. */
static sf_fight_spec sample(const sf_start_opts *o, uint64_t run_seed, uint64_t game_seed,
                            int encounter, sf_start_desc *d) {
    sf_fight_spec spec;
    sf_err e = {0};
    int rc = sf_start_sample(o, run_seed, game_seed, encounter, &spec, d, &e);
    ck_assert_msg(rc == SF_OK, "start %d of run %llu, game %llu: %s", encounter,
                  (unsigned long long)run_seed, (unsigned long long)game_seed, e.msg);
    return spec;
}

/* A picker that heals at every rest site (remembering the HP it saw) and
 * otherwise takes nothing. */
typedef struct healer {
    int hp, max_hp, rests, calls;
} healer;

static int pick_heal(void *ctx, const sf_start_choice *c, uint64_t *rng) {
    (void)rng;
    healer *h = ctx;
    h->calls++;
    if (c->kind == SF_CHOICE_REST) {
        h->hp = c->player->hp;
        h->max_hp = c->player->max_hp;
        h->rests++;
        return 0;
    }
    return c->can_skip ? c->n_options : 0;
}

SF_TCASE(starts, 300);

/* The boss fight follows the rest site of floor 15: its HP is the HP at
 * that rest plus floor(0.3 max HP), at most the maximum. */
START_TEST(a_start_after_a_rest_has_the_healed_hp) {
    sf_start_opts o;
    sf_start_opts_default(&o);
    o.start = SF_START_REWARDS;
    o.picker = SF_PICK_CALLBACK;
    o.pick = pick_heal;
    int checked = 0;
    for (uint64_t g = 0; g < 60; g++) {
        healer h = {0};
        o.pick_ctx = &h;
        sf_start_desc d;
        sf_fight_spec spec = sample(&o, 3, g, SF_START_CLASS(SF_POOL_BOSS), &d);
        ck_assert_int_eq(d.path[14], 'R');
        ck_assert_int_gt(h.rests, 0);
        int pillow = 0; /* Regal Pillow: 15 more */
        for (int i = 0; i < d.relics_n; i++)
            pillow += strcmp(sf_run_relic_name(d.relics[i]), "Regal Pillow") == 0 ? 15 : 0;
        int want = h.hp + (int)(h.max_hp * 3 / 10) + pillow;
        ck_assert_int_eq(spec.hp, want > h.max_hp ? h.max_hp : want);
        /* nothing but heals: no card taken, none smithed, none removed */
        ck_assert_int_eq(d.cards_taken, 0);
        ck_assert_int_eq(d.smiths + d.removals, 0);
        ck_assert_int_ge(d.rests, 1); /* h counts the rests of runs that died too */
        checked += want < h.max_hp;
    }
    ck_assert_int_gt(checked, 5); /* some heals were not capped */
}
END_TEST

/* ---- whole starts ------------------------------------------------------- */

static sf_start_opts rewards_opts(int picker) {
    sf_start_opts o;
    sf_start_opts_default(&o);
    o.start = SF_START_REWARDS;
    o.picker = picker;
    return o;
}

/* Beyond the starter cards (at most 5 Strike, 4 Defend, 1 Bash), a deck
 * holds only cards of the three Ironclad pools: no status, curse or extra
 * basic card; one upgrade at most except Searing Blow. */
START_TEST(decks_hold_only_cards_the_ironclad_pools_offer) {
    for (int picker = SF_PICK_RANDOM; picker <= SF_PICK_GREEDY; picker++) {
        sf_start_opts o = rewards_opts(picker);
        for (int cls = 0; cls < 4; cls++)
            for (uint64_t g = 0; g < 150; g++) {
                sf_start_desc d;
                sf_fight_spec spec = sample(&o, 11, g, SF_START_CLASS(cls), &d);
                int basic[4] = {0};
                for (int k = 0; k < spec.deck_n; k++) {
                    const card_def *cd = &sf_cards[spec.deck[k].id];
                    ck_assert(cd->type != CT_STATUS && cd->type != CT_CURSE);
                    ck_assert(cd->rarity != RAR_SPECIAL);
                    if (cd->rarity == RAR_BASIC)
                        basic[spec.deck[k].id]++;
                    ck_assert(spec.deck[k].upgrades <= 1 || spec.deck[k].id == CARD_SEARING_BLOW);
                    if (k > 0)
                        ck_assert(spec.deck[k - 1].id <= spec.deck[k].id);
                }
                ck_assert_int_le(basic[CARD_STRIKE], 5);
                ck_assert_int_le(basic[CARD_DEFEND], 4);
                ck_assert_int_le(basic[CARD_BASH], 1);
                ck_assert_int_eq(spec.relics[0], RELIC_BURNING_BLOOD);
                ck_assert_int_eq(spec.seed, 0);
                ck_assert_int_eq(sf_encounter_pool(spec.encounter), cls);
            }
    }
}
END_TEST

/* Potion Belt (PotionBelt.onEquip: potionSlots += 2): a start holding it
 * has 5 potion slots in its spec, every other start 3; drops fill the slots in order, so a potion
 * past the third slot appears only with the belt. */
START_TEST(potion_belt_gives_a_start_five_slots) {
    sf_start_opts o = rewards_opts(SF_PICK_GREEDY);
    int belts = 0, fifth = 0;
    for (uint64_t g = 0; g < 400; g++) {
        sf_start_desc d;
        sf_fight_spec spec = sample(&o, 21, g, SF_START_CLASS(SF_POOL_BOSS), &d);
        int belt = 0;
        for (int i = 0; i < d.relics_n; i++)
            belt |= strcmp(sf_run_relic_name(d.relics[i]), "Potion Belt") == 0;
        belts += belt;
        int slots = spec.potion_slots ? spec.potion_slots : SF_POTION_SLOTS;
        ck_assert_int_eq(slots, belt ? SF_MAX_POTION_SLOTS : SF_POTION_SLOTS);
        for (int k = SF_POTION_SLOTS; k < SF_MAX_POTION_SLOTS; k++) {
            ck_assert(belt || d.potions[k] == 0);
            ck_assert(belt || spec.potions[k] == 0);
            fifth += d.potions[k] != 0;
        }
        sf_state st;
        sf_err e = {0};
        spec.seed = g;
        ck_assert_msg(sf_engine_init(&st, &spec, &e) == SF_OK, "%s", e.msg);
    }
    ck_assert_int_gt(belts, 0); /* the sample holds belts ... */
    ck_assert_int_gt(fifth, 0); /* ... some with a 4th or 5th potion */
    ck_assert_int_lt(belts, 400);
}
END_TEST

/* The text form gives a belt's 5 slots, and refuses a 4th potion without
 * one, naming why. */
START_TEST(the_text_form_knows_potion_belts_slots) {
    sf_fight_spec s;
    sf_fight_spec_default(&s);
    sf_start_desc d;
    sf_err e = {0};
    const char *belt = "Strike*5,Defend*4,Bash|Burning Blood,Potion Belt|Fire Potion,,,,Block "
                       "Potion|floor 3|hp 60/80|gold 99";
    ck_assert_int_eq(sf_start_parse(belt, &s, &d, &e), SF_OK);
    ck_assert_int_eq(s.potion_slots, SF_MAX_POTION_SLOTS);
    ck_assert_int_eq(s.potions[0], POTION_FIRE);
    ck_assert_int_eq(s.potions[4], POTION_BLOCK);
    ck_assert_int_eq(d.potions[4], sf_run_potion_lookup("Block Potion"));
    char text[512];
    ck_assert_int_gt(sf_start_format(&s, &d, text, sizeof text), 0);
    ck_assert_str_eq(text, belt);
    ck_assert_int_eq(sf_start_parse("Strike*5,Defend*4,Bash|Burning Blood|Fire Potion,,,Block "
                                    "Potion|floor 3",
                                    &s, &d, &e),
                     SF_EINVAL);
    ck_assert_str_eq(e.msg, "start text: potions: more than 3 slots (no Potion Belt)");
}
END_TEST

/* Where each class's fight falls (desc.path, one letter per floor up to the
 * fight's): weak among the first 3 monster fights, strong after them, an
 * elite on floor 6 or later, the boss on floor 16 after 15 floors. */
START_TEST(fights_fall_where_their_class_is_met) {
    sf_start_opts o = rewards_opts(SF_PICK_GREEDY);
    for (int cls = 0; cls < 4; cls++)
        for (uint64_t g = 0; g < 200; g++) {
            sf_start_desc d;
            sf_fight_spec spec = sample(&o, 5, g, SF_START_CLASS(cls), &d);
            ck_assert_int_eq((int)strlen(d.path), spec.floor);
            ck_assert_int_eq(d.floor, spec.floor);
            char last = d.path[spec.floor - 1];
            int fights_before = 0, elites_before = 0;
            for (int f = 0; f < spec.floor - 1; f++) {
                fights_before += d.path[f] == 'M' || d.path[f] == 'm';
                elites_before += d.path[f] == 'E';
            }
            switch (cls) {
            case SF_POOL_WEAK:
                ck_assert(last == 'M' || last == 'm');
                ck_assert_int_lt(fights_before, 3);
                break;
            case SF_POOL_STRONG:
                ck_assert(last == 'M' || last == 'm');
                ck_assert_int_ge(fights_before, 3);
                break;
            case SF_POOL_ELITE:
                ck_assert_int_eq(last, 'E');
                ck_assert_int_ge(spec.floor, 6);
                break;
            default:
                ck_assert_int_eq(spec.floor, 16);
                ck_assert_int_eq(last, 'B');
                ck_assert_int_eq(d.path[0], 'M');
                ck_assert_int_eq(d.path[8], 'T');
                ck_assert_int_eq(d.path[14], 'R');
                break;
            }
            /* every fight before it was played and won */
            ck_assert_int_eq(d.fights, fights_before + elites_before);
            ck_assert_int_eq(d.elites, elites_before);
        }
}
END_TEST

static void expect_same_spec(const sf_fight_spec *a, const sf_fight_spec *b) {
    ck_assert_int_eq(a->deck_n, b->deck_n);
    for (int k = 0; k < a->deck_n; k++) {
        ck_assert_int_eq(a->deck[k].id, b->deck[k].id);
        ck_assert_int_eq(a->deck[k].upgrades, b->deck[k].upgrades);
    }
    ck_assert_int_eq(a->relics_n, b->relics_n);
    ck_assert_mem_eq(a->relics, b->relics, (size_t)a->relics_n);
    ck_assert_mem_eq(a->potions, b->potions, SF_POTION_SLOTS);
    ck_assert_int_eq(a->hp, b->hp);
    ck_assert_int_eq(a->max_hp, b->max_hp);
    ck_assert_int_eq(a->gold, b->gold);
    ck_assert_int_eq(a->floor, b->floor);
    for (int i = 0; i < a->relics_n; i++)
        ck_assert_int_eq(a->relic_counters[i], b->relic_counters[i]);
}

START_TEST(the_same_seeds_give_the_same_start) {
    sf_start_opts o = rewards_opts(SF_PICK_RANDOM);
    int differ = 0;
    for (int cls = 0; cls < 4; cls++)
        for (uint64_t g = 0; g < 40; g++) {
            sf_fight_spec a, b;
            sf_start_desc da, db, dc;
            int enc = sf_encounter_lookup(cls == 0   ? "Cultist"
                                          : cls == 1 ? "Looter"
                                          : cls == 2 ? "Lagavulin"
                                                     : "Hexaghost");
            a = sample(&o, 9, g, enc, &da);
            b = sample(&o, 9, g, enc, &db);
            expect_same_spec(&a, &b);
            ck_assert_int_eq(a.encounter, enc);
            ck_assert_str_eq(da.text, db.text);
            ck_assert_str_eq(da.path, db.path);
            ck_assert_int_eq(da.attempts, db.attempts);
            sample(&o, 10, g, enc, &dc); /* only its text is compared */
            differ += strcmp(da.text, dc.text) != 0;
        }
    ck_assert_int_gt(differ, 100); /* another run seed: other starts */
}
END_TEST

/* The text form round-trips: parse(format(start)) gives the same spec and
 * item lists, and formats to the same text. */
START_TEST(the_text_form_round_trips) {
    for (int picker = SF_PICK_RANDOM; picker <= SF_PICK_GREEDY; picker++) {
        sf_start_opts o = rewards_opts(picker);
        for (int cls = 0; cls < 4; cls++)
            for (uint64_t g = 0; g < 60; g++) {
                sf_fight_spec a, b;
                sf_start_desc da, db;
                a = sample(&o, 21, g, SF_START_CLASS(cls), &da);
                sf_fight_spec_default(&b);
                memset(&db, 0, sizeof db);
                sf_err e = {0};
                ck_assert_msg(sf_start_parse(da.text, &b, &db, &e) == SF_OK, "%s: %s", da.text,
                              e.msg);
                expect_same_spec(&a, &b);
                ck_assert_int_eq(db.relics_n, da.relics_n);
                ck_assert_mem_eq(db.relics, da.relics, (size_t)da.relics_n);
                for (int i = 0; i < da.relics_n; i++)
                    if (sf_relic_counter_max(sf_relic_lookup(sf_run_relic_name(da.relics[i]))))
                        ck_assert_int_eq(db.relic_counters[i], da.relic_counters[i]);
                ck_assert_mem_eq(db.potions, da.potions, SF_POTION_SLOTS);
                char text[SF_START_TEXT_MAX];
                ck_assert_int_gt(sf_start_format(&b, &db, text, sizeof text), 0);
                ck_assert_str_eq(text, da.text);
            }
    }
}
END_TEST

START_TEST(the_text_form_reads_a_hand_written_start) {
    sf_fight_spec s;
    sf_fight_spec_default(&s);
    sf_start_desc d;
    memset(&d, 0, sizeof d);
    sf_err e = {0};
    ck_assert_int_eq(
        sf_start_parse("Strike*5,Defend*3,Bash,Inflame+,Pommel Strike|Burning Blood,Vajra,Meal "
                       "Ticket,Pen Nib:7|Colorless Potion,Fire Potion|floor 7",
                       &s, &d, &e),
        SF_OK);
    ck_assert_int_eq(s.deck_n, 11);
    ck_assert_int_eq(s.deck[9].id, CARD_INFLAME);
    ck_assert_int_eq(s.deck[9].upgrades, 1);
    /* Meal Ticket is held (desc) but has no engine effect (spec) */
    ck_assert_int_eq(d.relics_n, 4);
    ck_assert_int_eq(s.relics_n, 3);
    ck_assert_int_eq(s.relics[1], RELIC_VAJRA);
    ck_assert_int_eq(s.relics[2], RELIC_PEN_NIB);
    ck_assert_int_eq(s.relic_counters[2], 7);
    ck_assert_int_eq(s.relic_counters[1], 0);
    /* slot 0 holds the Colorless Potion, the engine's */
    ck_assert_int_eq(d.potions[0], sf_run_potion_lookup("Colorless Potion"));
    ck_assert_int_eq(s.potions[0], POTION_COLORLESS);
    ck_assert_int_eq(s.potions[1], POTION_FIRE);
    ck_assert_int_eq(s.floor, 7);
    ck_assert_int_eq(s.hp, 80); /* no hp section: untouched */
    ck_assert_int_eq(sf_start_parse("Bash|Burning Blood||floor 1|hp 30/75|gold 12", &s, NULL, &e),
                     SF_OK);
    ck_assert_int_eq(s.hp, 30);
    ck_assert_int_eq(s.max_hp, 75);
    ck_assert_int_eq(s.gold, 12);
    ck_assert_int_eq(s.relics_n, 1);
    ck_assert_int_eq(s.relic_counters[0], 0);
    char text[256];
    ck_assert_int_gt(sf_start_format(&s, NULL, text, sizeof text), 0);
    ck_assert_str_eq(text, "Bash|Burning Blood||floor 1|hp 30/75|gold 12");
    ck_assert_int_eq(sf_start_format(&s, NULL, text, 10), SF_EFULL);
    ck_assert_int_eq((int)strlen(text), 9);
}
END_TEST

START_TEST(the_text_form_refuses_bad_parts_by_name) {
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"Strike*5,Fireball|Burning Blood||floor 1", "unknown card 'Fireball'"},
        {"Strike|Burning Blood,Moon Stone||floor 1", "unknown relic 'Moon Stone'"},
        {"Strike|Vajra:3||floor 1", "Vajra keeps no counter"},
        {"Strike|Burning Blood|Fire Potion,Elixir,Elixir,Elixir|floor 1", "more than 3 slots"},
        {"Strike|Burning Blood|Tea|floor 1", "unknown potion 'Tea'"},
        {"Strike|Burning Blood||level 1", "want 'floor F'"},
        {"Strike|Burning Blood||floor 1|hp 90/80", "want 'hp H/M'"},
        {"Strike|Burning Blood||floor 1|gold -5", "want 'gold G'"},
        {"Strike|Burning Blood||floor 1|mana 3", "section 5"},
        {"Strike|Burning Blood", "2 sections"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sf_fight_spec s;
        sf_fight_spec_default(&s);
        sf_err e = {0};
        ck_assert_int_eq(sf_start_parse(bad[i].text, &s, NULL, &e), SF_EINVAL);
        ck_assert_msg(strstr(e.msg, bad[i].msg), "'%s': message '%s' lacks '%s'", bad[i].text,
                      e.msg, bad[i].msg);
        ck_assert_int_eq(s.deck_n, 10); /* a failed parse leaves the spec alone */
    }
}
END_TEST

/* A start is an ordinary spec: the fight from it is the fight from the same
 * spec written out by hand (its text parsed onto the default spec), step
 * for step, byte for byte — the prefix's streams leave nothing behind in the
 * fight, whose streams come from spec.seed and spec.floor alone. */
START_TEST(a_sampled_start_plays_like_the_same_spec_given_by_hand) {
    sf_start_opts o = rewards_opts(SF_PICK_GREEDY);
    for (int cls = 0; cls < 4; cls++)
        for (uint64_t g = 0; g < 10; g++) {
            sf_fight_spec a, b;
            sf_start_desc d;
            a = sample(&o, 77, g, SF_START_CLASS(cls), &d);
            sf_fight_spec_default(&b);
            ck_assert_int_eq(sf_start_parse(d.text, &b, NULL, NULL), SF_OK);
            b.encounter = a.encounter;
            a.seed = b.seed = 1000 + g;
            sf_state sa, sb;
            ck_assert_int_eq(sf_engine_init(&sa, &a, NULL), SF_OK);
            ck_assert_int_eq(sf_engine_init(&sb, &b, NULL), SF_OK);
            uint64_t ra = 5, rb = 5;
            for (int ply = 0; ply < 3000; ply++) {
                ck_assert_mem_eq(sa.opaque, sb.opaque, SF_STATE_BYTES);
                if (sf_engine_is_terminal(&sa))
                    break;
                sf_action x, y;
                ck_assert_int_eq(sf_engine_heuristic_action(&sa, 0.0, &ra, &x), SF_OK);
                ck_assert_int_eq(sf_engine_heuristic_action(&sb, 0.0, &rb, &y), SF_OK);
                ck_assert_int_eq(sf_action_code(x), sf_action_code(y));
                ck_assert_int_eq(sf_engine_apply(&sa, x, NULL), SF_OK);
                ck_assert_int_eq(sf_engine_apply(&sb, y, NULL), SF_OK);
            }
            ck_assert(sf_engine_is_terminal(&sa));
        }
}
END_TEST

START_TEST(start_and_picker_names_round_trip) {
    for (int k = 0; k < 2; k++)
        ck_assert_int_eq(sf_start_kind_lookup(sf_start_kind_name(k)), k);
    for (int k = 0; k < 3; k++)
        ck_assert_int_eq(sf_picker_lookup(sf_picker_name(k)), k);
    ck_assert_str_eq(sf_start_kind_name(SF_START_REWARDS), "rewards");
    ck_assert_str_eq(sf_picker_name(SF_PICK_GREEDY), "greedy");
    ck_assert_int_eq(sf_start_kind_lookup("prefix"), SF_ENOTFOUND);
    ck_assert_int_eq(sf_picker_lookup(NULL), SF_ENOTFOUND);
    ck_assert_ptr_null(sf_picker_name(3));
}
END_TEST

START_TEST(the_starter_start_is_the_default_spec) {
    sf_start_opts o;
    sf_start_opts_default(&o);
    sf_fight_spec s, want;
    sf_start_desc d;
    int enc = sf_encounter_lookup("Jaw Worm");
    s = sample(&o, 1, 2, enc, &d);
    sf_fight_spec_default(&want);
    want.encounter = enc;
    expect_same_spec(&s, &want);
    ck_assert_int_eq(s.floor, 0);
    ck_assert_str_eq(d.text, "Strike*5,Defend*4,Bash|Burning Blood||floor 0|hp 80/80|gold 99");
    ck_assert_int_eq(d.fights, 0);
    /* a class lets the run's encounter list choose */
    s = sample(&o, 1, 2, SF_START_CLASS(SF_POOL_ELITE), &d);
    ck_assert_int_eq(sf_encounter_pool(s.encounter), SF_POOL_ELITE);
}
END_TEST

/* The greedy picker follows its table: with a skip threshold above every
 * worth it never takes a card, with rest_below 0 it smiths whenever it can,
 * with remove_below 0 it never removes. */
START_TEST(the_greedy_picker_follows_its_table) {
    sf_pick_table t;
    sf_pick_table_default(&t);
    ck_assert_int_gt(t.take[CARD_POMMEL_STRIKE], t.take[CARD_STRIKE]);
    t.skip_below = 101;
    t.rest_below = t.rest_below_boss = 0;
    t.remove_below = 0;
    sf_start_opts o = rewards_opts(SF_PICK_GREEDY);
    o.table = &t;
    int smiths = 0;
    for (uint64_t g = 0; g < 40; g++) {
        sf_start_desc d;
        sf_fight_spec s = sample(&o, 4, g, SF_START_CLASS(SF_POOL_BOSS), &d);
        ck_assert_int_eq(d.cards_taken, 0);
        ck_assert_int_eq(d.removals, 0);
        ck_assert_int_eq(d.rests, 0); /* the starter deck always has something to upgrade */
        ck_assert_int_eq(s.deck_n, 10);
        smiths += d.smiths;
    }
    ck_assert_int_gt(smiths, 40);
}
END_TEST

static int pick_bad(void *ctx, const sf_start_choice *c, uint64_t *rng) {
    (void)rng;
    int mode = *(int *)ctx;
    return mode == 0 ? c->n_options + 1 : SF_ETIMEOUT;
}

START_TEST(bad_options_and_bad_picks_are_refused_by_name) {
    sf_start_opts o = rewards_opts(SF_PICK_GREEDY);
    sf_fight_spec s;
    sf_err e = {0};
    o.start = 7;
    ck_assert_int_eq(sf_start_sample(&o, 1, 1, 0, &s, NULL, &e), SF_EINVAL);
    ck_assert(strstr(e.msg, "start 7"));
    o = rewards_opts(9);
    ck_assert_int_eq(sf_start_sample(&o, 1, 1, 0, &s, NULL, &e), SF_EINVAL);
    ck_assert(strstr(e.msg, "picker 9"));
    o = rewards_opts(SF_PICK_CALLBACK);
    ck_assert_int_eq(sf_start_sample(&o, 1, 1, 0, &s, NULL, &e), SF_EINVAL);
    ck_assert(strstr(e.msg, "no pick function"));
    o = rewards_opts(SF_PICK_GREEDY);
    ck_assert_int_eq(sf_start_sample(&o, 1, 1, ENC_COUNT, &s, NULL, &e), SF_EINVAL);
    ck_assert(strstr(e.msg, "encounter"));
    ck_assert_int_eq(sf_start_sample(&o, 1, 1, SF_START_CLASS(4), &s, NULL, &e), SF_EINVAL);
    o.ascension = 10;
    ck_assert_int_eq(sf_start_sample(&o, 1, 1, 0, &s, NULL, &e), SF_EUNSUPPORTED);
    int mode = 0;
    o = rewards_opts(SF_PICK_CALLBACK);
    o.pick = pick_bad;
    o.pick_ctx = &mode;
    ck_assert_int_eq(sf_start_sample(&o, 1, 1, SF_START_CLASS(SF_POOL_BOSS), &s, NULL, &e),
                     SF_EINVAL);
    ck_assert(strstr(e.msg, "picker answered option"));
    mode = 1;
    ck_assert_int_eq(sf_start_sample(&o, 1, 1, SF_START_CLASS(SF_POOL_BOSS), &s, NULL, &e),
                     SF_ETIMEOUT);
    ck_assert(strstr(e.msg, "picker failed"));
}
END_TEST

/* ---- relics in the prefix ---------------------------------------------- */

SF_TCASE(relics, 300);

/* A picker that records every choice and answers by a plan. */
typedef struct rec {
    int rest;    /* SF_REST_* wanted at a rest site (option 0 when absent) */
    int card;    /* card reward: an option, -1 skip, -2 Singing Bowl       */
    int toke_id; /* SF_CHOICE_TOKE: this card id (else option 0)           */
    int remove;  /* shop: 1 removes option 0                               */
    int n;       /* choices seen                                           */
    int kinds[64];
    int options[64];
    int bowl[64];
    uint8_t rest_seen[64][SF_REST_OPTIONS];
    sf_card_spec cards[64][4];
    int hp[64];
} rec;

static int pick_rec(void *ctx, const sf_start_choice *c, uint64_t *rng) {
    (void)rng;
    rec *r = ctx;
    if (r->n < 64) {
        r->kinds[r->n] = c->kind;
        r->options[r->n] = c->n_options;
        r->bowl[r->n] = c->bowl;
        memcpy(r->rest_seen[r->n], c->rest, SF_REST_OPTIONS);
        memcpy(r->cards[r->n], c->cards, sizeof r->cards[0]);
        r->hp[r->n] = c->player->hp;
    }
    r->n++;
    switch (c->kind) {
    case SF_CHOICE_REST:
        for (int i = 0; i < c->n_options; i++)
            if (c->rest[i] == r->rest)
                return i;
        return 0;
    case SF_CHOICE_CARD:
        return r->card == -1 ? c->n_options : r->card == -2 ? c->n_options + 1 : r->card;
    case SF_CHOICE_TOKE:
        for (int i = 0; i < c->n_options; i++)
            if (c->cards[i].id == r->toke_id)
                return i;
        return 0;
    case SF_CHOICE_REMOVE: return r->remove ? 0 : c->n_options;
    default: return 0;
    }
}

/* Play a script that must succeed. */
static sf_fight_spec script(rec *pr, uint64_t seed, const char *start, const char *rooms,
                            sf_start_desc *d) {
    sf_start_opts o = rewards_opts(pr ? SF_PICK_CALLBACK : SF_PICK_GREEDY);
    o.pick = pick_rec;
    o.pick_ctx = pr;
    sf_fight_spec out;
    sf_err e = {0};
    int rc = run_script(&o, 77, seed, start, rooms, &out, d, &e);
    ck_assert_msg(rc == SF_OK, "%s / %s: %s", start, rooms, e.msg);
    return out;
}

#define STARTER "Strike*5,Defend*4,Bash"

static int deck_copies_of(const sf_fight_spec *s, int id) {
    int n = 0;
    for (int i = 0; i < s->deck_n; i++)
        n += s->deck[i].id == id;
    return n;
}

static int holds(const sf_start_desc *d, const char *name) {
    int n = 0;
    for (int i = 0; i < d->relics_n; i++)
        n += strcmp(sf_run_relic_name(d->relics[i]), name) == 0;
    return n;
}

static int counter_of(const sf_start_desc *d, const char *name) {
    for (int i = 0; i < d->relics_n; i++)
        if (strcmp(sf_run_relic_name(d->relics[i]), name) == 0)
            return d->relic_counters[i];
    return -1;
}

/* CampfireSleepEffect: (int)(0.3 max HP) + 15 with Regal Pillow. */
START_TEST(regal_pillow_rest_heals_30_percent_plus_15) {
    rec r = {.rest = SF_REST_HEAL};
    sf_fight_spec s =
        script(&r, 1, STARTER "|Burning Blood,Regal Pillow||floor 5|hp 20/80", "R", NULL);
    ck_assert_int_eq(s.hp, 20 + 24 + 15);
    s = script(&r, 1, STARTER "|Burning Blood,Regal Pillow||floor 5|hp 60/87", "R", NULL);
    ck_assert_int_eq(s.hp, 87); /* 60 + 26 + 15, capped */
    s = script(&r, 1, STARTER "|Burning Blood||floor 5|hp 20/80", "R", NULL);
    ck_assert_int_eq(s.hp, 44);
}
END_TEST

/* EternalFeather.onEnterRoom: a rest site heals deck size / 5 * 3 on
 * entering, before the choice; MealTicket.justEnteredRoom: a shop heals 15. */
START_TEST(eternal_feather_and_meal_ticket_heal_on_entering) {
    rec r = {.rest = SF_REST_SMITH};
    sf_fight_spec s =
        script(&r, 1, STARTER "|Burning Blood,Eternal Feather||floor 5|hp 40/80", "R", NULL);
    ck_assert_int_eq(r.hp[0], 46); /* 10 cards: 10 / 5 * 3 */
    ck_assert_int_eq(s.hp, 46);
    r.n = 0;
    s = script(&r, 1,
               STARTER ",Anger,Cleave,Flex,Warcry|Burning Blood,Eternal Feather||floor 5|hp 40/80",
               "R", NULL);
    ck_assert_int_eq(s.hp, 40 + 6); /* 14 cards: 14 / 5 * 3 = 6 */
    s = script(NULL, 1, STARTER "|Burning Blood,Meal Ticket||floor 5|hp 30/80|gold 10", "$", NULL);
    ck_assert_int_eq(s.hp, 45);
    s = script(NULL, 1, STARTER "|Burning Blood,Meal Ticket||floor 5|hp 70/80|gold 10", "$R", NULL);
    ck_assert_int_eq(s.hp, 80); /* capped; no heal from Meal Ticket at the rest site */
}
END_TEST

/* MawBank: +12 gold on entering any room until gold is spent in a shop;
 * ShopScreen: removal 50 with Smiling Mask, 75 / 100 times 0.8 with
 * Courier. */
START_TEST(maw_bank_smiling_mask_and_courier_price_the_run) {
    rec r = {.rest = SF_REST_SMITH, .remove = 1};
    sf_start_desc d;
    sf_fight_spec s =
        script(&r, 1, STARTER "|Burning Blood,Maw Bank||floor 5|hp 80/80|gold 0", "RR", &d);
    ck_assert_int_eq(s.gold, 24);
    s = script(&r, 1, STARTER "|Burning Blood,Maw Bank||floor 5|hp 80/80|gold 70", "R$R", &d);
    ck_assert_int_eq(s.gold, 70 + 12 + 12 - 75); /* the removal uses it up: no gold at the 2nd R */
    ck_assert_int_eq(s.deck_n, 9);
    s = script(&r, 1, STARTER "|Burning Blood,Maw Bank||floor 5|hp 80/80|gold 70", "RRR", &d);
    ck_assert_int_eq(s.gold, 70 + 36);
    s = script(&r, 1, STARTER "|Burning Blood,Smiling Mask||floor 5|hp 80/80|gold 120", "$$", &d);
    ck_assert_int_eq(s.gold, 20); /* 50 twice */
    ck_assert_int_eq(s.deck_n, 8);
    s = script(&r, 1, STARTER "|Burning Blood,Courier||floor 5|hp 80/80|gold 150", "$$", &d);
    ck_assert_int_eq(s.gold, 150 - 60 - 80);
    s = script(&r, 1, STARTER "|Burning Blood,Courier,Smiling Mask||floor 5|hp 80/80|gold 60", "$",
               &d);
    ck_assert_int_eq(s.gold, 10); /* the mask's 50 after the discount */
    s = script(&r, 1, STARTER "|Burning Blood||floor 5|hp 80/80|gold 74", "$", &d);
    ck_assert_int_eq(s.gold, 74); /* 75 is more than the gold: no removal */
    ck_assert_int_eq(s.deck_n, 10);
}
END_TEST

/* Dream Catcher: resting (not smithing) is followed by a card reward at a
 * normal fight's odds; Question Card makes it 4 cards; Singing Bowl adds
 * +2 max HP as an answer; Ceramic Fish gives 9 gold a card taken. */
START_TEST(dream_catcher_question_card_singing_bowl_ceramic_fish) {
    rec r = {.rest = SF_REST_HEAL, .card = 0};
    sf_start_desc d;
    sf_fight_spec s =
        script(&r, 2, STARTER "|Burning Blood,Dream Catcher,Ceramic Fish||floor 5|hp 30/80|gold 5",
               "R", &d);
    ck_assert_int_eq(r.n, 2);
    ck_assert_int_eq(r.kinds[1], SF_CHOICE_CARD);
    ck_assert_int_eq(r.options[1], 3);
    ck_assert_int_eq(r.bowl[1], 0);
    ck_assert_int_eq(s.deck_n, 11);
    ck_assert_int_eq(s.gold, 14);
    ck_assert_int_eq(s.hp, 54);
    r = (rec){.rest = SF_REST_SMITH, .card = 0};
    s = script(&r, 2, STARTER "|Burning Blood,Dream Catcher||floor 5|hp 30/80|gold 5", "R", &d);
    ck_assert_int_eq(r.n, 2); /* rest, smith: no card reward */
    ck_assert_int_eq(r.kinds[1], SF_CHOICE_SMITH);
    r = (rec){.rest = SF_REST_HEAL, .card = -2};
    s = script(&r, 2,
               STARTER "|Burning Blood,Dream Catcher,Question Card,Singing Bowl||floor 5|hp 30/80",
               "R", &d);
    ck_assert_int_eq(r.options[1], 4);
    ck_assert_int_eq(r.bowl[1], 1);
    ck_assert_int_eq(s.max_hp, 82);
    ck_assert_int_eq(s.hp, 30 + 24 + 2);
    ck_assert_int_eq(s.deck_n, 10);
    ck_assert_int_eq(d.bowls, 1);
    /* the 4 cards are distinct */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < i; j++)
            ck_assert_int_ne(r.cards[1][i].id, r.cards[1][j].id);
}
END_TEST

/* The eggs: every offered card of the egg's type comes upgraded, no other;
 * the card taken is in the deck upgraded. */
START_TEST(eggs_upgrade_the_cards_of_their_type) {
    static const char *const eggs[3] = {"Molten Egg", "Toxic Egg", "Frozen Egg"};
    static const int types[3] = {CT_ATTACK, CT_SKILL, CT_POWER};
    for (int k = 0; k < 3; k++) {
        int seen = 0, upgraded_taken = 0;
        for (uint64_t g = 0; g < 60; g++) {
            rec r = {.rest = SF_REST_HEAL, .card = 0};
            char start[256];
            snprintf(start, sizeof start,
                     STARTER "|Burning Blood,Dream Catcher,%s||floor 5|hp 30/80", eggs[k]);
            sf_fight_spec s = script(&r, g, start, "R", NULL);
            for (int i = 0; i < 3; i++) {
                sf_card_spec c = r.cards[1][i];
                int want = sf_cards[c.id].type == types[k];
                ck_assert_int_eq(c.upgrades, want);
                seen += want;
            }
            for (int i = 0; i < s.deck_n; i++)
                upgraded_taken += s.deck[i].id == r.cards[1][0].id && s.deck[i].upgrades == 1;
            ck_assert_int_eq(upgraded_taken > 0, r.cards[1][0].upgrades == 1);
            upgraded_taken = 0;
        }
        ck_assert_int_gt(seen, 3);
    }
}
END_TEST

/* Prayer Wheel: two card rewards after a monster fight, one after an elite;
 * White Beast Statue: a potion after every fight. */
START_TEST(prayer_wheel_and_white_beast_statue_add_rewards) {
    int fights = 0;
    for (uint64_t g = 0; g < 10; g++) {
        rec r = {.card = -1};
        sf_start_desc d;
        sf_start_opts o = rewards_opts(SF_PICK_CALLBACK);
        o.pick = pick_rec;
        o.pick_ctx = &r;
        sf_fight_spec out;
        sf_err e = {0};
        int rc = run_script(&o, 5, g,
                            "Strike*5,Defend*4,Bash+,Inflame+,Shrug It Off+,Pommel Strike+|Burning "
                            "Blood,Prayer Wheel,White Beast Statue||floor 0|hp 80/80",
                            "ME", &out, &d, &e);
        if (rc != SF_OK)
            continue; /* the elite killed the player */
        fights++;
        ck_assert_int_eq(r.n, 3);
        for (int i = 0; i < 3; i++)
            ck_assert_int_eq(r.kinds[i], SF_CHOICE_CARD);
        ck_assert_int_eq(d.potions_dropped, 2);
        ck_assert_int_eq(d.fights, 2);
    }
    ck_assert_int_gt(fights, 5);
}
END_TEST

/* Tiny Chest: the 4th "?" is a chest (a relic more); Juzu Bracelet: no "?"
 * is a fight. */
START_TEST(tiny_chest_and_juzu_bracelet_change_the_question_rooms) {
    int q_fights = 0;
    for (uint64_t g = 0; g < 200; g++) {
        sf_start_desc d;
        script(NULL, g, STARTER "|Burning Blood,Tiny Chest,Juzu Bracelet||floor 0|hp 80/80",
               "????????", &d);
        ck_assert_int_eq(d.path[3], 't');
        ck_assert_int_eq(d.path[7], 't');
        ck_assert_ptr_null(strchr(d.path, 'm'));
        ck_assert_int_ge(d.relics_n, 5);
        sf_start_desc e;
        rec r = {.card = -1};
        sf_start_opts o = rewards_opts(SF_PICK_CALLBACK);
        o.pick = pick_rec;
        o.pick_ctx = &r;
        sf_fight_spec out;
        sf_err err = {0};
        if (run_script(&o, 77, g, STARTER "|Burning Blood||floor 0|hp 80/80", "????", &out, &e,
                       &err) == SF_OK)
            q_fights += strchr(e.path, 'm') != NULL;
    }
    ck_assert_int_gt(q_fights, 50); /* without Juzu, "?" fights happen */
}
END_TEST

/* Matryoshka: each of the next 2 chests gives a common (75 %) or uncommon
 * relic besides its own. */
START_TEST(matryoshka_adds_a_relic_to_two_chests) {
    int tiers[4] = {0};
    for (uint64_t g = 0; g < 300; g++) {
        sf_start_desc d;
        script(NULL, g, STARTER "|Burning Blood,Matryoshka||floor 8|hp 80/80", "TTT", &d);
        ck_assert_int_eq(d.relics_n, 2 + 2 + 2 + 1);
        tiers[run_relic_tier(d.relics[2])]++; /* the first Matryoshka relic */
    }
    ck_assert_int_eq(tiers[3], 0);
    expect_freq(tiers[1], 300, 0.75, "Matryoshka common");
}
END_TEST

/* Girya: lift raises its counter, 3 times at most; Ancient Tea Set: a rest
 * site charges it (counter 1) and the next fight spends it; both in the
 * text form. */
START_TEST(girya_lifts_and_tea_set_charges_are_counters) {
    rec r = {.rest = SF_REST_LIFT};
    sf_start_desc d;
    sf_fight_spec s =
        script(&r, 1, STARTER "|Burning Blood,Girya,Ancient Tea Set||floor 5|hp 80/80", "RRRR", &d);
    ck_assert_int_eq(counter_of(&d, "Girya"), 3);
    ck_assert_int_eq(d.lifts, 3);
    ck_assert_int_eq(d.rests, 1); /* the 4th rest site offers no lift: option 0 */
    ck_assert_int_eq(r.options[3], 2);
    ck_assert_int_eq(counter_of(&d, "Ancient Tea Set"), 1);
    ck_assert(strstr(d.text, "Girya:3,Ancient Tea Set:1|"));
    sf_fight_spec b;
    sf_fight_spec_default(&b);
    sf_start_desc db;
    memset(&db, 0, sizeof db);
    sf_err e = {0};
    ck_assert_int_eq(sf_start_parse(d.text, &b, &db, &e), SF_OK);
    ck_assert_int_eq(db.relic_counters[1], 3);
    ck_assert_int_eq(db.relic_counters[2], 1);
    expect_same_spec(&s, &b);
    ck_assert_int_eq(sf_start_parse(STARTER "|Girya:4||floor 1", &b, &db, &e), SF_EINVAL);
    ck_assert(strstr(e.msg, "Girya counter 4"));
    /* the tea set's charge is spent by the next fight */
    int spent = 0;
    for (uint64_t g = 0; g < 5; g++) {
        sf_start_opts o = rewards_opts(SF_PICK_GREEDY);
        sf_fight_spec out;
        if (run_script(&o, 77, g, STARTER "|Burning Blood,Ancient Tea Set||floor 5|hp 80/80", "RM",
                       &out, &d, &e) != SF_OK)
            continue;
        ck_assert_int_eq(counter_of(&d, "Ancient Tea Set"), 0);
        spent++;
    }
    ck_assert_int_gt(spent, 0);
}
END_TEST

/* Peace Pipe (toke: remove a card, never a bottled one) and Shovel (dig: a
 * relic) at the rest site. */
START_TEST(peace_pipe_tokes_and_shovel_digs) {
    rec r = {.rest = SF_REST_TOKE, .toke_id = CARD_POMMEL_STRIKE};
    sf_start_desc d;
    /* deck sorted: Strike*5 (0-4), Defend*4 (5-8), Bash (9), Pommel Strike:
     * Bottled Flame holds Pommel Strike */
    char start[256];
    int pommel = 0;
    sf_fight_spec probe;
    sf_fight_spec_default(&probe);
    sf_err e = {0};
    ck_assert_int_eq(sf_deck_parse(STARTER ",Pommel Strike", &probe, &e), SF_OK);
    for (int i = 0; i < probe.deck_n; i++)
        if (probe.deck[i].id == CARD_POMMEL_STRIKE)
            pommel = i + 1;
    snprintf(start, sizeof start,
             STARTER ",Pommel Strike|Burning Blood,Peace Pipe,Bottled Flame:%d||floor 5|hp 80/80",
             pommel);
    sf_fight_spec s = script(&r, 1, start, "R", &d);
    ck_assert_int_eq(s.deck_n, 10);
    ck_assert_int_eq(d.tokes, 1);
    ck_assert_int_eq(r.kinds[1], SF_CHOICE_TOKE);
    for (int i = 0; i < r.options[1] && i < 4; i++)
        ck_assert_int_ne(r.cards[1][i].id, CARD_POMMEL_STRIKE); /* bottled: not offered */
    ck_assert_int_eq(deck_copies_of(&s, CARD_POMMEL_STRIKE), 1);
    r = (rec){.rest = SF_REST_DIG};
    s = script(&r, 1, STARTER "|Burning Blood,Shovel||floor 5|hp 80/80", "RR", &d);
    ck_assert_int_eq(d.relics_n, 4);
    ck_assert_int_eq(d.digs, 2);
}
END_TEST

/* A Bottled relic's counter is 1 + its card's index in the sorted deck,
 * and follows the card as the deck changes (cards added before it, the
 * card smithed). */
START_TEST(a_bottle_counter_follows_its_card) {
    for (uint64_t g = 0; g < 40; g++) {
        rec r = {.rest = g % 2 ? SF_REST_HEAL : SF_REST_SMITH, .card = 0};
        sf_start_desc d;
        sf_fight_spec probe;
        sf_fight_spec_default(&probe);
        sf_err e = {0};
        ck_assert_int_eq(sf_deck_parse(STARTER ",Uppercut", &probe, &e), SF_OK);
        int at = 0;
        for (int i = 0; i < probe.deck_n; i++)
            at = probe.deck[i].id == CARD_UPPERCUT ? i + 1 : at;
        char start[256];
        snprintf(start, sizeof start,
                 STARTER ",Uppercut|Burning Blood,Bottled Flame:%d,Dream Catcher||floor 5|hp 30/80",
                 at);
        sf_fight_spec s = script(&r, g, start, "RRR", &d);
        int v = counter_of(&d, "Bottled Flame");
        ck_assert_int_gt(v, 0);
        ck_assert_int_eq(s.deck[v - 1].id, CARD_UPPERCUT);
        ck_assert(strstr(d.text, "Bottled Flame:"));
    }
}
END_TEST

/* canSpawn, as returnRandomRelicKey applies it: with only basic cards no
 * Bottled relic is ever dug; holding Shovel and Girya, Peace Pipe never is
 * (2 campfire relics); both do come once their condition holds. */
START_TEST(can_spawn_keeps_forbidden_relics_out) {
    int bottles = 0, pipes = 0, digs = 0;
    for (uint64_t g = 0; g < 300; g++) {
        rec r = {.rest = SF_REST_DIG};
        sf_start_desc d;
        script(&r, g, STARTER "|Burning Blood,Shovel,Girya||floor 1|hp 80/80", "RRRRRRRRRRRRR", &d);
        digs += d.digs;
        for (int i = 3; i < d.relics_n; i++) {
            const char *n = sf_run_relic_name(d.relics[i]);
            ck_assert_msg(strncmp(n, "Bottled", 7) != 0 && strcmp(n, "Peace Pipe") != 0, "%s", n);
        }
        /* with a non-basic Attack, a Skill and a Power, and one campfire
         * relic, they come */
        r = (rec){.rest = SF_REST_DIG};
        sf_start_desc e;
        script(&r, g, STARTER ",Anger,Shrug It Off,Inflame|Burning Blood,Shovel||floor 1|hp 80/80",
               "RRRRRRRRRRRRR", &e);
        for (int i = 2; i < e.relics_n; i++) {
            const char *n = sf_run_relic_name(e.relics[i]);
            bottles += strncmp(n, "Bottled", 7) == 0;
            pipes += strcmp(n, "Peace Pipe") == 0 || strcmp(n, "Girya") == 0;
        }
    }
    ck_assert_int_gt(digs, 2000);
    ck_assert_int_gt(bottles, 20);
    ck_assert_int_gt(pipes, 5);
}
END_TEST

/* returnRandomRelicKey by hand: the front relic, or, when it cannot spawn,
 * the back of the same pool (the refused ones leave it), an empty pool
 * passing to the next tier's front. */
START_TEST(a_relic_that_cannot_spawn_gives_way_to_the_back_of_its_pool) {
    sf_fight_spec starter;
    sf_fight_spec_default(&starter);
    uint8_t held[3] = {(uint8_t)sf_run_relic_lookup("Burning Blood"),
                       (uint8_t)sf_run_relic_lookup("Shovel"),
                       (uint8_t)sf_run_relic_lookup("Peace Pipe")};
#define R(name) ((uint8_t)sf_run_relic_lookup(name))
    run_pools p;
    memset(&p, 0, sizeof p);
    /* rare: Girya (3rd campfire relic: refused), Mango, Shovel, Old Coin */
    uint8_t rare[4] = {R("Girya"), R("Mango"), R("Shovel"), R("Old Coin")};
    memcpy(p.item[3], rare, 4);
    p.n[3] = 4;
    ck_assert_int_eq(run_take_relic(&p, 3, &starter, held, 3, 6), R("Old Coin"));
    ck_assert_int_eq(p.n[3], 2); /* Girya and Old Coin left it */
    ck_assert_int_eq(p.item[3][0], R("Mango"));
    ck_assert_int_eq(run_take_relic(&p, 3, &starter, held, 3, 6), R("Mango"));
    ck_assert_int_eq(run_take_relic(&p, 3, &starter, held, 3, 6), 0); /* Shovel refused, empty */
    ck_assert_int_eq(p.n[3], 0);
    /* uncommon: with only basic cards no Bottled relic may come; the back
     * is tried again and again */
    uint8_t unc[5] = {R("Bottled Flame"), R("Kunai"), R("Pear"), R("Bottled Tornado"),
                      R("Bottled Lightning")};
    memcpy(p.item[2], unc, 5);
    p.n[2] = 5;
    uint8_t rare2[2] = {R("Lizard Tail"), R("Ginger")};
    memcpy(p.item[3], rare2, 2);
    p.n[3] = 2;
    ck_assert_int_eq(run_take_relic(&p, 2, &starter, held, 1, 6), R("Pear"));
    ck_assert_int_eq(p.n[2], 1);
    ck_assert_int_eq(p.item[2][0], R("Kunai"));
    ck_assert_int_eq(run_take_relic(&p, 1, &starter, held, 1, 6), R("Kunai")); /* common empty */
    ck_assert_int_eq(run_take_relic(&p, 1, &starter, held, 1, 6), R("Lizard Tail"));
    /* with a non-basic Attack the Bottled Flame is the front relic taken */
    sf_fight_spec deck = starter;
    sf_err e = {0};
    ck_assert_int_eq(sf_deck_parse("Strike*5,Defend*4,Bash,Anger", &deck, &e), SF_OK);
    p.item[2][0] = R("Bottled Flame");
    p.item[2][1] = R("Bottled Lightning");
    p.n[2] = 2;
    ck_assert_int_eq(run_take_relic(&p, 2, &deck, held, 1, 6), R("Bottled Flame"));
    ck_assert_int_eq(run_take_relic(&p, 2, &deck, held, 1, 6), R("Ginger")); /* Lightning refused */
    /* floor limits: Tiny Chest until 35, Matryoshka 40 */
    ck_assert(run_relic_can_spawn(R("Tiny Chest"), &starter, held, 1, 35));
    ck_assert(!run_relic_can_spawn(R("Tiny Chest"), &starter, held, 1, 36));
    ck_assert(!run_relic_can_spawn(R("Matryoshka"), &starter, held, 1, 41));
    ck_assert(run_relic_can_spawn(R("Bottled Tornado"), &deck, held, 1, 6) == 0);
#undef R
}
END_TEST

/* Sampled starts: every bottle holds a card of its type; a campfire relic
 * is never a third; relic counters are in bounds; the same seeds give the
 * same start. */
START_TEST(sampled_starts_keep_the_relic_rules) {
    int bottled = 0;
    for (int picker = SF_PICK_RANDOM; picker <= SF_PICK_GREEDY; picker++) {
        sf_start_opts o = rewards_opts(picker);
        for (uint64_t g = 0; g < 150; g++) {
            sf_start_desc d, d2;
            sf_fight_spec s = sample(&o, 31, g, SF_START_CLASS(SF_POOL_BOSS), &d);
            sf_fight_spec s2 = sample(&o, 31, g, SF_START_CLASS(SF_POOL_BOSS), &d2);
            expect_same_spec(&s, &s2);
            ck_assert_str_eq(d.text, d2.text);
            ck_assert_int_le(holds(&d, "Girya") + holds(&d, "Shovel") + holds(&d, "Peace Pipe"), 2);
            static const char *const bottles[3] = {"Bottled Flame", "Bottled Lightning",
                                                   "Bottled Tornado"};
            static const int types[3] = {CT_ATTACK, CT_SKILL, CT_POWER};
            for (int k = 0; k < 3; k++) {
                if (!holds(&d, bottles[k]))
                    continue;
                int v = counter_of(&d, bottles[k]);
                ck_assert_int_gt(v, 0);
                ck_assert_int_le(v, s.deck_n);
                ck_assert_int_eq(sf_cards[s.deck[v - 1].id].type, types[k]);
                bottled++;
            }
        }
    }
    ck_assert_int_gt(bottled, 0);
}
END_TEST

#include "test-engine-start.tests.h" /* SF_TESTS: every test above (tests/meson.build) */
SF_CHECK_MAIN("engine-start", "rules", 120, NULL, NULL)
