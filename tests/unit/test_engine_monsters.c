/*
 * test_engine_monsters.c — every Act-1 monster move: exact damage, block and
 * debuffs at A0 and with the ascension bumps, first-turn rules and the
 * scripted sequences (game-rules §5, §2.5).
 *
 * Scenarios use a 999-HP player with an empty deck, so each END_TURN runs
 * one monster phase, the end of round and a turn start with nothing drawn.
 * Monster-applied Weak/Frail (and Vulnerable during the monster phase) are
 * "justApplied": they survive the first end-of-round tick.
 */
#include "engine_fixture.h"
#include "sf_check.h"

static sf_combat *setup(sf_state *s, uint64_t seed) {
    sf_combat *c = fx_new(s, seed);
    c->hp = c->max_hp = 999;
    return c;
}

/* Per-hit intent damage of monster m (after modifiers) and its hits. */
static int intent(const sf_combat *c, int m, int *hits) {
    return monster_intent_damage(c, m, hits);
}

/* ------------------------------------------------------------------------
 * Move damage at A0 and with the damage ascension (normal A2, elite A3,
 * boss A4; game-rules §5 "X (Y)")
 * ---------------------------------------------------------------------- */
typedef struct dmg_row {
    const char *name;
    int mon, move, hits, a0, asc, asc_level;
} dmg_row;

static const dmg_row dmg_rows[] = {
    {"Cultist Dark Strike", MON_CULTIST, MV_DARK_STRIKE, 1, 6, 6, 2},
    {"Jaw Worm Chomp", MON_JAW_WORM, MV_CHOMP, 1, 11, 12, 2},
    {"Jaw Worm Thrash", MON_JAW_WORM, MV_THRASH, 1, 7, 7, 2},
    {"Acid Slime (S) Tackle", MON_ACID_SLIME_S, MV_ACID_TACKLE, 1, 3, 4, 2},
    {"Acid Slime (M) Corrosive Spit", MON_ACID_SLIME_M, MV_ACID_SPIT, 1, 7, 8, 2},
    {"Acid Slime (M) Tackle", MON_ACID_SLIME_M, MV_ACID_TACKLE, 1, 10, 12, 2},
    {"Acid Slime (L) Corrosive Spit", MON_ACID_SLIME_L, MV_ACID_SPIT, 1, 11, 12, 2},
    {"Acid Slime (L) Tackle", MON_ACID_SLIME_L, MV_ACID_TACKLE, 1, 16, 18, 2},
    {"Spike Slime (S) Tackle", MON_SPIKE_SLIME_S, MV_SPIKE_TACKLE, 1, 5, 6, 2},
    {"Spike Slime (M) Flame Tackle", MON_SPIKE_SLIME_M, MV_FLAME_TACKLE, 1, 8, 10, 2},
    {"Spike Slime (L) Flame Tackle", MON_SPIKE_SLIME_L, MV_FLAME_TACKLE, 1, 16, 18, 2},
    {"Fungi Beast Bite", MON_FUNGI_BEAST, MV_FUNGI_BITE, 1, 6, 6, 2},
    {"Looter Mug", MON_LOOTER, MV_MUG, 1, 10, 11, 2},
    {"Looter Lunge", MON_LOOTER, MV_LUNGE, 1, 12, 14, 2},
    {"Mad Gremlin Scratch", MON_MAD_GREMLIN, MV_SCRATCH, 1, 4, 5, 2},
    {"Sneaky Gremlin Puncture", MON_SNEAKY_GREMLIN, MV_PUNCTURE, 1, 9, 10, 2},
    {"Fat Gremlin Smash", MON_FAT_GREMLIN, MV_SMASH, 1, 4, 5, 2},
    {"Shield Gremlin Shield Bash", MON_SHIELD_GREMLIN, MV_SHIELD_BASH, 1, 6, 8, 2},
    {"Gremlin Wizard Ultimate Blast", MON_GREMLIN_WIZARD, MV_ULTIMATE_BLAST, 1, 25, 30, 2},
    {"Blue Slaver Stab", MON_BLUE_SLAVER, MV_STAB, 1, 12, 13, 2},
    {"Blue Slaver Rake", MON_BLUE_SLAVER, MV_RAKE, 1, 7, 8, 2},
    {"Red Slaver Stab", MON_RED_SLAVER, MV_STAB, 1, 13, 14, 2},
    {"Red Slaver Scrape", MON_RED_SLAVER, MV_SCRAPE, 1, 8, 9, 2},
    {"Gremlin Nob Rush", MON_GREMLIN_NOB, MV_RUSH, 1, 14, 16, 3},
    {"Gremlin Nob Skull Bash", MON_GREMLIN_NOB, MV_SKULL_BASH, 1, 6, 8, 3},
    {"Lagavulin Attack", MON_LAGAVULIN, MV_LAGA_ATTACK, 1, 18, 20, 3},
    {"Sentry Beam", MON_SENTRY, MV_BEAM, 1, 9, 10, 3},
    {"Guardian Fierce Bash", MON_GUARDIAN, MV_FIERCE_BASH, 1, 32, 36, 4},
    {"Guardian Whirlwind", MON_GUARDIAN, MV_WHIRLWIND, 4, 5, 5, 4},
    {"Guardian Roll Attack", MON_GUARDIAN, MV_ROLL_ATTACK, 1, 9, 10, 4},
    {"Guardian Twin Slam", MON_GUARDIAN, MV_TWIN_SLAM, 2, 8, 8, 4},
    {"Hexaghost Sear", MON_HEXAGHOST, MV_SEAR, 1, 6, 6, 4},
    {"Hexaghost Tackle", MON_HEXAGHOST, MV_HEX_TACKLE, 2, 5, 6, 4},
    {"Hexaghost Inferno", MON_HEXAGHOST, MV_INFERNO, 6, 2, 3, 4},
    {"Slime Boss Slam", MON_SLIME_BOSS, MV_SLAM, 1, 35, 38, 4},
};

SF_LOOP_TEST(move_damage_at_a0_and_ascension, 0, (int)(sizeof dmg_rows / sizeof dmg_rows[0])) {
    const dmg_row *r = &dmg_rows[_i];
    for (int asc = 0; asc <= 1; asc++) {
        sf_state s;
        sf_combat *c = setup(&s, 3);
        /* one below the bump keeps A0 numbers, the bump level raises them */
        c->ascension = (uint8_t)(asc ? r->asc_level : r->asc_level - 1);
        fx_mon(c, r->mon, 300, r->move);
        int hits = 0;
        int d = intent(c, 0, &hits);
        ck_assert_msg(d == (asc ? r->asc : r->a0), "%s at A%d: %d", r->name, c->ascension, d);
        ck_assert_int_eq(hits, r->hits);
        /* and the move really deals it */
        FX_END(&s);
        ck_assert_msg(c->hp == 999 - r->hits * (asc ? r->asc : r->a0), "%s: HP %d", r->name, c->hp);
    }
}
END_TEST

/* ------------------------------------------------------------------------
 * HP ranges at A0 and at the HP ascension (normal A7, elite A8, boss A9)
 * ---------------------------------------------------------------------- */
typedef struct hp_row {
    int mon, lo, hi, lo_asc, hi_asc, level;
} hp_row;

static const hp_row hp_rows[] = {
    {MON_CULTIST, 48, 54, 50, 56, 7},        {MON_JAW_WORM, 40, 44, 42, 46, 7},
    {MON_RED_LOUSE, 10, 15, 11, 16, 7},      {MON_GREEN_LOUSE, 11, 17, 12, 18, 7},
    {MON_ACID_SLIME_S, 8, 12, 9, 13, 7},     {MON_ACID_SLIME_M, 28, 32, 29, 34, 7},
    {MON_ACID_SLIME_L, 65, 69, 68, 72, 7},   {MON_SPIKE_SLIME_S, 10, 14, 11, 15, 7},
    {MON_SPIKE_SLIME_M, 28, 32, 29, 34, 7},  {MON_SPIKE_SLIME_L, 64, 70, 67, 73, 7},
    {MON_FUNGI_BEAST, 22, 28, 24, 28, 7},    {MON_LOOTER, 44, 48, 46, 50, 7},
    {MON_MAD_GREMLIN, 20, 24, 21, 25, 7},    {MON_SNEAKY_GREMLIN, 10, 14, 11, 15, 7},
    {MON_FAT_GREMLIN, 13, 17, 14, 18, 7},    {MON_SHIELD_GREMLIN, 12, 15, 13, 17, 7},
    {MON_GREMLIN_WIZARD, 21, 25, 22, 26, 7}, {MON_BLUE_SLAVER, 46, 50, 48, 52, 7},
    {MON_RED_SLAVER, 46, 50, 48, 52, 7},     {MON_GREMLIN_NOB, 82, 86, 85, 90, 8},
    {MON_LAGAVULIN, 109, 111, 112, 115, 8},  {MON_SENTRY, 38, 42, 39, 45, 8},
    {MON_GUARDIAN, 240, 240, 250, 250, 9},   {MON_HEXAGHOST, 250, 250, 264, 264, 9},
    {MON_SLIME_BOSS, 140, 140, 150, 150, 9},
};

SF_LOOP_TEST(hp_rolls_cover_exactly_the_range, 0, (int)(sizeof hp_rows / sizeof hp_rows[0])) {
    /* setHp(min, max) = monsterHpRng.random(min, max): over 400 rolls every
     * value of a range of <= 7 values appears (a value is missed with
     * probability below 7 x (6/7)^400 < 1e-25) and nothing outside. One
     * call per roll, even for fixed-HP bosses. */
    const hp_row *r = &hp_rows[_i];
    for (int asc = 0; asc <= 1; asc++) {
        int lo = asc ? r->lo_asc : r->lo, hi = asc ? r->hi_asc : r->hi;
        int seen[400] = {0};
        sf_state s;
        sf_combat *c = setup(&s, 11);
        c->ascension = (uint8_t)(asc ? r->level : r->level - 1);
        for (int k = 0; k < 400; k++) {
            uint32_t before = c->rng[SF_STREAM_MONSTER_HP].counter;
            monster_init(c, 0, r->mon, 0);
            ck_assert_int_ge(c->mon[0].hp, lo);
            ck_assert_int_le(c->mon[0].hp, hi);
            ck_assert_int_eq(c->mon[0].max_hp, c->mon[0].hp);
            seen[c->mon[0].hp - lo] = 1;
            int calls = r->mon == MON_RED_LOUSE || r->mon == MON_GREEN_LOUSE ? 2 : 1;
            ck_assert_uint_eq(c->rng[SF_STREAM_MONSTER_HP].counter, before + (uint32_t)calls);
        }
        for (int v = lo; v <= hi; v++)
            ck_assert_msg(seen[v - lo], "monster %d A%d: HP %d never rolled", r->mon, c->ascension,
                          v);
    }
}
END_TEST

/* ------------------------------------------------------------------------
 * The move table: every move has an effect, and the damage an intent
 * announces is the damage the move deals
 * ---------------------------------------------------------------------- */

static int is_attack_intent(int intent) {
    return intent == INT_ATTACK || intent == INT_ATTACK_BUFF || intent == INT_ATTACK_DEBUFF ||
           intent == INT_ATTACK_DEFEND;
}

/* The damage ascension of a monster kind: normal A2, elite A3, boss A4. */
static int damage_level(int mon) {
    int k = sf_monsters[mon].kind;
    return k == MK_BOSS ? 4 : k == MK_ELITE ? 3 : 2;
}

START_TEST(move_table_rows_are_complete) {
    int owners[MV_COUNT] = {0};
    for (int mv = 0; mv < MV_COUNT; mv++) {
        const move_def *d = &sf_moves[mv];
        ck_assert_msg(d->name != NULL, "move %d has no row", mv);
        ck_assert_msg(d->take != NULL, "%s (%d) has no effect", d->name, mv);
        int attack = d->dmg >= 0 && d->hits > 0;
        ck_assert_msg(attack == is_attack_intent(d->intent) && attack == (d->hits > 0),
                      "%s: intent %d, %d hits, damage %d", d->name, d->intent, d->hits, d->dmg);
    }
    for (int i = 0; i < sf_move_variant_n; i++) {
        const move_variant *v = &sf_move_variants[i];
        ck_assert_msg(
            v->move != MV_NONE && v->monster != MON_NONE && monster_has_move(v->monster, v->move),
            "variant %d: %s is not a move of monster %d", i, sf_moves[v->move].name, v->monster);
        ck_assert_msg(v->take != NULL, "variant %d has no effect", i);
        ck_assert_msg((v->dmg >= 0) == (sf_moves[v->move].dmg >= 0),
                      "variant %d: an attack for one owner only", i);
        for (int j = 0; j < i; j++)
            ck_assert_msg(sf_move_variants[j].monster != v->monster ||
                              sf_move_variants[j].move != v->move,
                          "variants %d and %d are the same pair", j, i);
    }
    for (int id = MON_NONE + 1; id < MON_COUNT; id++) {
        for (int mv = MV_NONE + 1; mv < MV_COUNT; mv++) {
            if (!((sf_monsters[id].moves >> mv) & 1u))
                continue;
            owners[mv]++;
            move_def d = monster_move(id, mv);
            ck_assert_msg(d.take != NULL, "%s: %s has no effect", sf_monsters[id].name, d.name);
            ck_assert_msg(d.next == MV_NONE || monster_has_move(id, d.next),
                          "%s: %s scripts %s, not one of its moves", sf_monsters[id].name, d.name,
                          sf_moves[d.next].name);
            if (d.dmg != d.dmg_asc)
                ck_assert_msg(d.asc == damage_level(id), "%s: %s's damage rises at A%d, not A%d",
                              sf_monsters[id].name, d.name, d.asc, damage_level(id));
        }
    }
    for (int mv = MV_NONE + 1; mv < MV_COUNT; mv++)
        ck_assert_msg(owners[mv] > 0, "%s is no monster's move", sf_moves[mv].name);
}
END_TEST

/* Modifiers on both sides of the hit (player HP 999, no thorns). */
typedef struct hit_case {
    const char *name;
    int str, weak;             /* the monster's Strength and Weak          */
    int vuln, intangible, blk; /* the player's Vulnerable, Intangible, block */
} hit_case;

static const hit_case hit_cases[] = {
    {"no modifiers", 0, 0, 0, 0, 0},
    {"Strength", 4, 0, 0, 0, 0},
    {"Weak", 0, 1, 0, 0, 0},
    {"Vulnerable", 0, 0, 2, 0, 0},
    {"Strength, Weak and Vulnerable", 3, 2, 1, 0, 0},
    {"negative Strength and Weak", -3, 1, 0, 0, 0},
    {"Strength below the damage", -40, 0, 0, 0, 0},
    {"Intangible and Vulnerable", 2, 0, 1, 1, 0},
    {"block", 1, 0, 0, 0, 9},
};

SF_LOOP_TEST(intent_damage_is_the_damage_dealt, MON_NONE + 1, MON_COUNT) {
    /* Monster _i executes each of its moves at A0..A9 under each case: the
     * damage that reaches the player (HP lost plus block used) is the
     * intent's per-hit damage times its hits, and a move announced without
     * damage deals none. Plated Armor (one stack lost per unblocked hit)
     * counts the hits. The move runs directly (monster_take_turn), so
     * nothing between the intent and the hits changes the modifiers. */
    int id = _i;
    for (int mv = MV_NONE + 1; mv < MV_COUNT; mv++) {
        if (!((sf_monsters[id].moves >> mv) & 1u))
            continue;
        for (int asc = 0; asc <= SF_MAX_ASCENSION; asc++) {
            for (size_t k = 0; k < sizeof hit_cases / sizeof hit_cases[0]; k++) {
                const hit_case *hc = &hit_cases[k];
                sf_state s;
                sf_combat *c = setup(&s, 17 + (uint64_t)asc);
                c->ascension = (uint8_t)asc;
                int m = fx_mon(c, id, 300, mv);
                sf_monster *mo = &c->mon[m];
                if (mv == MV_DIVIDER)
                    mo->val[0] = 7; /* as Activate at 72 HP */
                mo->pw[PW_STR] = (int16_t)hc->str;
                mo->pw[PW_WEAK] = (int16_t)hc->weak;
                c->pw[PW_VULN] = (int16_t)hc->vuln;
                c->pw[PW_INTANGIBLE] = (int16_t)hc->intangible;
                c->pw[PW_PLATED] = 50;
                c->block = (int16_t)hc->blk;
                int hits = -1, per_hit = intent(c, m, &hits);
                monster_take_turn(c, m);
                int dealt = (999 - c->hp) + (hc->blk - c->block);
                const char *who = sf_monsters[id].name, *what = sf_moves[mv].name;
                if (per_hit < 0) {
                    ck_assert_msg(hits == 0 && dealt == 0, "%s %s A%d, %s: no intent, %d dealt",
                                  who, what, asc, hc->name, dealt);
                    continue;
                }
                ck_assert_msg(hits == sf_moves[mv].hits && hits > 0, "%s %s: %d hits", who, what,
                              hits);
                ck_assert_msg(dealt == per_hit * hits, "%s %s A%d, %s: intent %d x %d, dealt %d",
                              who, what, asc, hc->name, per_hit, hits, dealt);
                if (hc->blk == 0 && per_hit > 0)
                    ck_assert_msg(50 - c->pw[PW_PLATED] == hits, "%s %s A%d, %s: %d hits landed",
                                  who, what, asc, hc->name, 50 - c->pw[PW_PLATED]);
            }
        }
    }
}
END_TEST

/* ------------------------------------------------------------------------
 * First moves (init rolls in list order, game-rules §2.1)
 * ---------------------------------------------------------------------- */

static int first_move(int encounter, uint64_t seed, int slot) {
    sf_state s = fx_fight(encounter, seed);
    return ccombat_of(&s)->mon[slot].move;
}

START_TEST(scripted_first_moves) {
    for (uint64_t seed = 1; seed <= 20; seed++) {
        ck_assert_int_eq(first_move(ENC_CULTIST, seed, 0), MV_INCANTATION);
        ck_assert_int_eq(first_move(ENC_JAW_WORM, seed, 0), MV_CHOMP);
        ck_assert_int_eq(first_move(ENC_RED_SLAVER, seed, 0), MV_STAB);
        ck_assert_int_eq(first_move(ENC_LOOTER, seed, 0), MV_MUG);
        ck_assert_int_eq(first_move(ENC_GREMLIN_NOB, seed, 0), MV_BELLOW_NOB);
        ck_assert_int_eq(first_move(ENC_LAGAVULIN, seed, 0), MV_SLEEP);
        ck_assert_int_eq(first_move(ENC_3_SENTRIES, seed, 0), MV_BOLT);
        ck_assert_int_eq(first_move(ENC_3_SENTRIES, seed, 1), MV_BEAM);
        ck_assert_int_eq(first_move(ENC_3_SENTRIES, seed, 2), MV_BOLT);
        ck_assert_int_eq(first_move(ENC_GUARDIAN, seed, 0), MV_CHARGING_UP);
        ck_assert_int_eq(first_move(ENC_HEXAGHOST, seed, 0), MV_ACTIVATE);
        ck_assert_int_eq(first_move(ENC_SLIME_BOSS, seed, 0), MV_GOOP_SPRAY);
    }
}
END_TEST

START_TEST(init_rolls_spend_ai_rng_in_list_order) {
    /* Every monster's init rollMove spends one aiRng.random(99), even the
     * scripted ones; the Acid Slime (S) adds its coin flip. 3 Sentries: 3
     * calls. Gremlin Gang: 4. */
    sf_fight_spec spec = fx_spec();
    spec.seed = 5;
    sf_state s;
    spec.encounter = ENC_3_SENTRIES;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    ck_assert_uint_eq(ccombat_of(&s)->rng[SF_STREAM_AI].counter, 3);
    spec.encounter = ENC_GREMLIN_GANG;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    ck_assert_uint_eq(ccombat_of(&s)->rng[SF_STREAM_AI].counter, 4);
    spec.encounter = ENC_GUARDIAN;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    ck_assert_uint_eq(ccombat_of(&s)->rng[SF_STREAM_AI].counter, 1);
}
END_TEST

/* ------------------------------------------------------------------------
 * Cultist, Jaw Worm
 * ---------------------------------------------------------------------- */

SF_TCASE(normal, 0);

START_TEST(cultist_ritual_skips_the_first_end_of_round) {
    /* Incantation turn 1 (Ritual 3, A2: 4), then Dark Strike 6 on turn 2,
     * 9 on turn 3, 12 on turn 4 (A2: 6, 10, 14). */
    for (int asc = 0; asc <= 2; asc += 2) {
        sf_state s;
        sf_combat *c = setup(&s, 4);
        c->ascension = (uint8_t)asc;
        fx_mon(c, MON_CULTIST, 50, MV_NONE);
        monster_roll_move(c, 0);
        ck_assert_int_eq(c->mon[0].move, MV_INCANTATION);
        FX_END(&s);
        ck_assert_int_eq(c->mon[0].pw[PW_RITUAL], asc ? 4 : 3);
        ck_assert_int_eq(c->mon[0].pw[PW_STR], 0);
        ck_assert_int_eq(c->mon[0].move, MV_DARK_STRIKE);
        int r = asc ? 4 : 3;
        int hp = 999;
        for (int turn = 2; turn <= 4; turn++) {
            FX_END(&s);
            hp -= 6 + r * (turn - 2);
            ck_assert_int_eq(c->hp, hp);
        }
    }
}
END_TEST

START_TEST(jaw_worm_moves) {
    sf_state s;
    sf_combat *c = setup(&s, 4);
    fx_mon(c, MON_JAW_WORM, 44, MV_THRASH);
    c->mon[0].ai[1] = 1;
    FX_END(&s); /* Thrash: 7 damage, 5 block (kept through the player's turn) */
    ck_assert_int_eq(c->hp, 992);
    ck_assert_int_eq(c->mon[0].block, 5);
    c->mon[0].move = MV_BELLOW;
    FX_END(&s); /* Bellow: +3 Strength, 6 block */
    ck_assert_int_eq(c->mon[0].pw[PW_STR], 3);
    ck_assert_int_eq(c->mon[0].block, 6);
    c->mon[0].move = MV_CHOMP;
    FX_END(&s); /* Chomp 11 + 3 */
    ck_assert_int_eq(c->hp, 978);
    /* A2: Bellow +4 */
    c = setup(&s, 4);
    c->ascension = 2;
    fx_mon(c, MON_JAW_WORM, 44, MV_BELLOW);
    FX_END(&s);
    ck_assert_int_eq(c->mon[0].pw[PW_STR], 4);
}
END_TEST

/* ------------------------------------------------------------------------
 * Lice
 * ---------------------------------------------------------------------- */

START_TEST(louse_bite_grow_and_spit_web) {
    sf_state s;
    sf_combat *c = setup(&s, 4);
    fx_mon(c, MON_RED_LOUSE, 15, MV_LOUSE_BITE);
    c->mon[0].val[0] = 6;
    fx_mon(c, MON_GREEN_LOUSE, 15, MV_SPIT_WEB);
    FX_END(&s);
    ck_assert_int_eq(c->hp, 993);        /* Bite D = 6 */
    ck_assert_int_eq(c->pw[PW_WEAK], 2); /* justApplied: survived the tick */
    c->mon[0].move = MV_LOUSE_GROW;
    c->mon[1].move = MV_LOUSE_GROW; /* a green louse never rolls Grow, but the move works */
    FX_END(&s);
    ck_assert_int_eq(c->mon[0].pw[PW_STR], 3);
    ck_assert_int_eq(c->pw[PW_WEAK], 1);
    c->mon[0].move = MV_LOUSE_BITE;
    c->mon[1].move = MV_SPIT_WEB;
    FX_END(&s); /* 6 + 3 Str */
    ck_assert_int_eq(c->hp, 984);
}
END_TEST

START_TEST(louse_curl_up_blocks_once_after_the_card) {
    /* Curl Up 5: Twin Strike 5 x2 on a 15-HP louse: both hits land (10 HP
     * lost), the 5 block comes after the card; a later Strike 6 loses 5 to
     * that block (1 HP). Curl Up is then gone. */
    sf_state s;
    sf_combat *c = setup(&s, 4);
    fx_mon(c, MON_RED_LOUSE, 15, MV_LOUSE_GROW);
    c->mon[0].pw[PW_CURL_UP] = 5;
    fx_hand(c, CARD_TWIN_STRIKE, 0);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 5);
    ck_assert_int_eq(c->mon[0].block, 5);
    ck_assert_int_eq(c->mon[0].pw[PW_CURL_UP], 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 4);
    ck_assert_int_eq(c->mon[0].block, 0);
}
END_TEST

START_TEST(louse_curl_up_needs_non_lethal_normal_hp_damage) {
    sf_state s;
    /* lethal: 6 damage on 6 HP kills, no block */
    sf_combat *c = setup(&s, 4);
    fx_mon(c, MON_RED_LOUSE, 6, MV_LOUSE_GROW);
    fx_mon(c, MON_RED_LOUSE, 30, MV_LOUSE_GROW);
    c->mon[0].pw[PW_CURL_UP] = 5;
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->n_mon, 1);
    /* THORNS (Fire Potion) does not trigger it; a fully blocked hit neither */
    c = setup(&s, 4);
    fx_mon(c, MON_RED_LOUSE, 30, MV_LOUSE_GROW);
    c->mon[0].pw[PW_CURL_UP] = 5;
    c->mon[0].block = 10;
    c->potions[0] = POTION_FIRE;
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].pw[PW_CURL_UP], 5);
    ck_assert_int_eq(c->mon[0].block, 4);
    c->mon[0].block = 0;
    FX_DRINK(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 10);
    ck_assert_int_eq(c->mon[0].pw[PW_CURL_UP], 5);
    ck_assert_int_eq(c->mon[0].block, 0);
}
END_TEST

/* ------------------------------------------------------------------------
 * Slimes
 * ---------------------------------------------------------------------- */

START_TEST(acid_slime_small_alternates_without_rolling) {
    /* First move: aiRng.random(99) then a coin flip (2 calls). Then Tackle
     * and Lick alternate with no RollMoveAction (no aiRng). */
    sf_state s;
    sf_combat *c = setup(&s, 4);
    fx_mon(c, MON_ACID_SLIME_S, 10, MV_NONE);
    monster_roll_move(c, 0);
    ck_assert_uint_eq(c->rng[SF_STREAM_AI].counter, 2);
    c->mon[0].move = MV_ACID_TACKLE;
    FX_END(&s);
    ck_assert_int_eq(c->hp, 996); /* Tackle 3 */
    ck_assert_int_eq(c->mon[0].move, MV_ACID_LICK);
    FX_END(&s);
    ck_assert_int_eq(c->pw[PW_WEAK], 1); /* Lick: 1 Weak, justApplied */
    ck_assert_int_eq(c->mon[0].move, MV_ACID_TACKLE);
    ck_assert_uint_eq(c->rng[SF_STREAM_AI].counter, 2);
}
END_TEST

START_TEST(acid_and_spike_slime_medium_and_large_moves) {
    sf_state s;
    sf_combat *c = setup(&s, 4);
    for (int i = 0; i < 5; i++)
        fx_draw(c, CARD_DEFEND, 0); /* keep the statuses in discard */
    fx_mon(c, MON_ACID_SLIME_M, 30, MV_ACID_SPIT);
    fx_mon(c, MON_ACID_SLIME_L, 300, MV_ACID_SPIT);
    fx_mon(c, MON_SPIKE_SLIME_M, 30, MV_FLAME_TACKLE);
    fx_mon(c, MON_SPIKE_SLIME_L, 300, MV_FLAME_TACKLE);
    FX_END(&s);
    /* 7 + 11 + 8 + 16 = 42 damage; 1 + 2 + 1 + 2 Slimed */
    ck_assert_int_eq(c->hp, 957);
    ck_assert_int_eq(fx_count(c->discard, c->discard_n, CARD_SLIMED), 6);
    ck_assert_int_eq(c->cards_created, 6);
    c->mon[0].move = MV_ACID_LICK;
    c->mon[1].move = MV_ACID_LICK;
    c->mon[2].move = MV_SPIKE_LICK;
    c->mon[3].move = MV_SPIKE_LICK;
    FX_END(&s);
    /* 1 + 2 Weak, 1 + 2 Frail (stacked onto a fresh power: justApplied) */
    ck_assert_int_eq(c->pw[PW_WEAK], 3);
    ck_assert_int_eq(c->pw[PW_FRAIL], 3);
}
END_TEST

START_TEST(large_slime_split_threshold_is_a_float_half) {
    /* Acid Slime (L) with 65 max HP: 33 HP does not split (33 > 32.5), 32
     * does; the intent becomes Split at once. */
    sf_state s;
    sf_combat *c = setup(&s, 4);
    fx_mon(c, MON_ACID_SLIME_L, 65, MV_ACID_TACKLE);
    c->mon[0].hp = 34;
    c->potions[0] = POTION_FIRE;
    combat_thorns_to_monster(c, 0, 1);
    ck_assert_int_eq(c->mon[0].hp, 33);
    ck_assert_int_eq(c->mon[0].move, MV_ACID_TACKLE);
    combat_thorns_to_monster(c, 0, 1);
    ck_assert_int_eq(c->mon[0].move, MV_SPLIT);
    /* Spike Slime (L) with 67 max: 33 splits, 34 does not */
    c = setup(&s, 4);
    fx_mon(c, MON_SPIKE_SLIME_L, 67, MV_FLAME_TACKLE);
    c->mon[0].hp = 35;
    combat_thorns_to_monster(c, 0, 1);
    ck_assert_int_eq(c->mon[0].move, MV_FLAME_TACKLE);
    combat_thorns_to_monster(c, 0, 1);
    ck_assert_int_eq(c->mon[0].move, MV_SPLIT);
}
END_TEST

START_TEST(acid_slime_large_splits_into_two_mediums_with_its_hp) {
    /* Split at 30 HP: the L dies and two Acid Slime (M) with 30/30 HP take
     * its place (left, right), rolling their intents (aiRng: 2 calls, the L
     * none). They do not act this round; the Cultist after them does. */
    sf_state s;
    sf_combat *c = setup(&s, 4);
    fx_mon(c, MON_ACID_SLIME_L, 65, MV_ACID_TACKLE);
    fx_mon(c, MON_CULTIST, 50, MV_DARK_STRIKE);
    c->mon[1].ai[1] = 1;
    c->mon[0].hp = 33;
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0); /* 6 -> 27 HP: split */
    ck_assert_int_eq(c->mon[0].move, MV_SPLIT);
    uint32_t ai = c->rng[SF_STREAM_AI].counter;
    FX_END(&s);
    ck_assert_int_eq(c->n_mon, 3);
    ck_assert_int_eq(c->mon[0].id, MON_ACID_SLIME_M);
    ck_assert_int_eq(c->mon[1].id, MON_ACID_SLIME_M);
    ck_assert_int_eq(c->mon[2].id, MON_CULTIST);
    for (int m = 0; m < 2; m++) {
        ck_assert_int_eq(c->mon[m].hp, 27);
        ck_assert_int_eq(c->mon[m].max_hp, 27);
    }
    ck_assert_int_eq(c->hp, 993); /* only the Cultist's Dark Strike */
    /* 2 child rolls + the Cultist's roll */
    ck_assert_uint_eq(c->rng[SF_STREAM_AI].counter, ai + 3);
    ck_assert(c->flags & FL_MONSTER_DIED);
}
END_TEST

START_TEST(spike_slime_large_split_spends_one_more_ai_call) {
    sf_state s;
    sf_combat *c = setup(&s, 4);
    fx_mon(c, MON_SPIKE_SLIME_L, 70, MV_SPLIT);
    c->mon[0].hp = 30;
    uint32_t ai = c->rng[SF_STREAM_AI].counter;
    FX_END(&s);
    ck_assert_int_eq(c->n_mon, 2);
    ck_assert_int_eq(c->mon[0].id, MON_SPIKE_SLIME_M);
    ck_assert_int_eq(c->mon[1].hp, 30);
    /* 2 child rolls + the dead L's RollMoveAction */
    ck_assert_uint_eq(c->rng[SF_STREAM_AI].counter, ai + 3);
}
END_TEST

START_TEST(split_triggered_by_thorns_during_its_own_move_still_rolls) {
    /* An Acid Slime (L) at 34/65 attacks into Flame Barrier 4: it drops to
     * 30 and splits during its own move. Its RollMoveAction still runs (one
     * aiRng call) and the queued SetMoveAction restores Split. */
    sf_state s;
    sf_combat *c = setup(&s, 4);
    fx_mon(c, MON_ACID_SLIME_L, 65, MV_ACID_TACKLE);
    c->mon[0].hp = 34;
    c->pw[PW_FLAME_BARRIER] = 4;
    uint32_t ai = c->rng[SF_STREAM_AI].counter;
    FX_END(&s);
    ck_assert_int_eq(c->hp, 999 - 16);
    ck_assert_int_eq(c->mon[0].hp, 30);
    ck_assert_int_eq(c->mon[0].move, MV_SPLIT);
    ck_assert_uint_eq(c->rng[SF_STREAM_AI].counter, ai + 1);
}
END_TEST

/* ------------------------------------------------------------------------
 * Fungi Beast: Spore Cloud
 * ---------------------------------------------------------------------- */

START_TEST(fungi_beast_bite_and_grow) {
    for (int asc = 0; asc <= 2; asc += 2) {
        sf_state s;
        sf_combat *c = setup(&s, 4);
        c->ascension = (uint8_t)asc;
        fx_mon(c, MON_FUNGI_BEAST, 25, MV_FUNGI_GROW);
        FX_END(&s);
        ck_assert_int_eq(c->mon[0].pw[PW_STR], asc ? 4 : 3);
        c->mon[0].move = MV_FUNGI_BITE;
        FX_END(&s);
        ck_assert_int_eq(c->hp, 999 - 6 - (asc ? 4 : 3));
    }
}
END_TEST

START_TEST(spore_cloud_vulnerable_on_death_not_on_the_last) {
    /* Killed by a card during the player's turn: 2 Vulnerable, not
     * justApplied (turnHasEnded is false): 1 left after the round. */
    sf_state s;
    sf_combat *c = setup(&s, 4);
    fx_mon(c, MON_FUNGI_BEAST, 6, MV_FUNGI_GROW);
    fx_mon(c, MON_FUNGI_BEAST, 25, MV_FUNGI_GROW);
    c->mon[0].pw[PW_SPORE_CLOUD] = 2;
    c->mon[1].pw[PW_SPORE_CLOUD] = 2;
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->pw[PW_VULN], 2);
    ck_assert_int_eq(c->just & JA_VULN, 0);
    FX_END(&s);
    ck_assert_int_eq(c->pw[PW_VULN], 1);
    /* the last one dying ends the battle: no Vulnerable */
    c->mon[0].hp = 6;
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->pw[PW_VULN], 1);
    ck_assert(sf_engine_is_terminal(&s));
}
END_TEST

START_TEST(spore_cloud_during_the_monster_phase_is_just_applied) {
    /* Flame Barrier kills an attacking Fungi Beast in the monster phase:
     * the Vulnerable is justApplied and survives the round's tick. */
    sf_state s;
    sf_combat *c = setup(&s, 4);
    fx_mon(c, MON_FUNGI_BEAST, 4, MV_FUNGI_BITE);
    fx_mon(c, MON_FUNGI_BEAST, 25, MV_FUNGI_GROW);
    c->mon[0].pw[PW_SPORE_CLOUD] = 2;
    c->pw[PW_FLAME_BARRIER] = 4;
    uint32_t ai = c->rng[SF_STREAM_AI].counter;
    FX_END(&s);
    ck_assert_int_eq(c->n_mon, 1);
    ck_assert_int_eq(c->pw[PW_VULN], 2);
    ck_assert_int_eq(c->hp, 993);
    /* the dead one's RollMoveAction still rolled, then the other's */
    ck_assert_uint_eq(c->rng[SF_STREAM_AI].counter, ai + 2);
}
END_TEST

/* ------------------------------------------------------------------------
 * Looter
 * ---------------------------------------------------------------------- */

START_TEST(looter_mug_mug_then_smoke_bomb_or_lunge) {
    /* Gold 99: each Mug takes min(15, gold). First Mug spends an aiRng call
     * (60% dialog check), the second a 50% pick (Smoke Bomb if true). The
     * expected branch is recomputed from a copy of the stream. */
    for (uint64_t seed = 1; seed <= 8; seed++) {
        sf_state s;
        sf_combat *c = setup(&s, seed);
        fx_mon(c, MON_LOOTER, 48, MV_NONE);
        monster_roll_move(c, 0);
        ck_assert_int_eq(c->mon[0].move, MV_MUG);
        sf_rng ai = c->rng[SF_STREAM_AI];
        (void)sf_rng_random_bool_p(&ai, 0.6f);
        int smoke = sf_rng_random_bool_p(&ai, 0.5f);
        FX_END(&s);
        ck_assert_int_eq(c->hp, 989);
        ck_assert_int_eq(c->gold, 84);
        ck_assert_int_eq(c->mon[0].move, MV_MUG);
        FX_END(&s);
        ck_assert_int_eq(c->hp, 979);
        ck_assert_int_eq(c->gold, 69);
        ck_assert_int_eq(c->mon[0].val[0], 30);
        ck_assert_int_eq(c->mon[0].move, smoke ? MV_SMOKE_BOMB : MV_LUNGE);
        ck_assert(!memcmp(&ai, &c->rng[SF_STREAM_AI], sizeof ai));
        if (!smoke) {
            FX_END(&s); /* Lunge 12, steals 15 more */
            ck_assert_int_eq(c->hp, 967);
            ck_assert_int_eq(c->gold, 54);
            ck_assert_int_eq(c->mon[0].move, MV_SMOKE_BOMB);
        }
        FX_END(&s); /* Smoke Bomb: 6 block, then Escape */
        ck_assert_int_eq(c->mon[0].block, 6);
        ck_assert_int_eq(c->mon[0].move, MV_ESCAPE);
        FX_END(&s);
        ck_assert(sf_engine_is_terminal(&s));
        ck_assert(c->flags & FL_WON);
        ck_assert(c->flags & FL_ESCAPED_ALL);
        ck_assert_int_eq(c->gold, smoke ? 69 : 54);
    }
}
END_TEST

START_TEST(looter_returns_stolen_gold_when_killed_and_steals_what_is_left) {
    sf_state s;
    sf_combat *c = setup(&s, 1);
    c->gold = 20;
    fx_mon(c, MON_LOOTER, 48, MV_MUG);
    fx_mon(c, MON_CULTIST, 50, MV_INCANTATION);
    c->block = 50; /* the theft happens even when the hit is blocked */
    FX_END(&s);
    ck_assert_int_eq(c->gold, 5);
    FX_END(&s);
    ck_assert_int_eq(c->gold, 0);
    ck_assert_int_eq(c->mon[0].val[0], 20);
    combat_thorns_to_monster(c, 0, 48);
    ck_assert_int_eq(c->gold, 20);
}
END_TEST

START_TEST(escape_of_one_monster_is_not_an_escape_of_all) {
    /* Exordium Thugs style: the louse dies, the Looter escapes: the fight
     * is won but not "every monster escaped". */
    sf_state s;
    sf_combat *c = setup(&s, 1);
    fx_mon(c, MON_LOOTER, 48, MV_ESCAPE);
    fx_mon(c, MON_RED_LOUSE, 5, MV_LOUSE_GROW);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 1);
    ck_assert_int_eq(c->n_mon, 1);
    FX_END(&s);
    ck_assert(c->flags & FL_WON);
    ck_assert(!(c->flags & FL_ESCAPED_ALL));
}
END_TEST

/* ------------------------------------------------------------------------
 * Gremlins
 * ---------------------------------------------------------------------- */

START_TEST(mad_gremlin_angry_on_normal_hp_damage_only) {
    sf_state s;
    sf_combat *c = setup(&s, 1);
    fx_mon(c, MON_MAD_GREMLIN, 50, MV_SCRATCH);
    c->mon[0].pw[PW_ANGRY] = 1;
    c->potions[0] = POTION_FIRE;
    fx_hand(c, CARD_TWIN_STRIKE, 0);
    FX_PLAY(&s, 0, 0); /* two hits: +2 Strength */
    ck_assert_int_eq(c->mon[0].pw[PW_STR], 2);
    FX_DRINK(&s, 0, 0); /* THORNS: no */
    ck_assert_int_eq(c->mon[0].pw[PW_STR], 2);
    FX_END(&s); /* Scratch 4 + 2 */
    ck_assert_int_eq(c->hp, 993);
    ck_assert_int_eq(c->mon[0].move, MV_SCRATCH);
}
END_TEST

START_TEST(fat_gremlin_smash_and_sneaky_puncture) {
    sf_state s;
    sf_combat *c = setup(&s, 1);
    fx_mon(c, MON_FAT_GREMLIN, 15, MV_SMASH);
    fx_mon(c, MON_SNEAKY_GREMLIN, 12, MV_PUNCTURE);
    uint32_t ai = c->rng[SF_STREAM_AI].counter;
    FX_END(&s);
    ck_assert_int_eq(c->hp, 999 - 4 - 9);
    ck_assert_int_eq(c->pw[PW_WEAK], 1);
    /* the Fat Gremlin rolls (always Smash), the Sneaky one sets its move */
    ck_assert_uint_eq(c->rng[SF_STREAM_AI].counter, ai + 1);
    ck_assert_int_eq(c->mon[0].move, MV_SMASH);
    ck_assert_int_eq(c->mon[1].move, MV_PUNCTURE);
}
END_TEST

START_TEST(shield_gremlin_protects_another_then_bashes_alone) {
    sf_state s;
    sf_combat *c = setup(&s, 1);
    fx_mon(c, MON_SHIELD_GREMLIN, 13, MV_PROTECT);
    fx_mon(c, MON_MAD_GREMLIN, 20, MV_SCRATCH);
    uint32_t ai = c->rng[SF_STREAM_AI].counter;
    FX_END(&s);
    ck_assert_int_eq(c->mon[1].block, 7); /* the only other: aiRng.random(0) */
    ck_assert_int_eq(c->mon[0].block, 0);
    ck_assert_uint_eq(c->rng[SF_STREAM_AI].counter, ai + 1);
    ck_assert_int_eq(c->mon[0].move, MV_PROTECT);
    combat_thorns_to_monster(c, 1, 100);
    FX_END(&s); /* alone: the block goes on itself, then Shield Bash */
    ck_assert_int_eq(c->mon[0].block, 7);
    ck_assert_int_eq(c->mon[0].move, MV_SHIELD_BASH);
    FX_END(&s); /* Shield Bash 6; the Mad Gremlin's Scratch 4 came on turn 1 */
    ck_assert_int_eq(c->hp, 989);
    ck_assert_int_eq(c->mon[0].move, MV_SHIELD_BASH);
    /* A7: 8 block */
    c = setup(&s, 1);
    c->ascension = 7;
    fx_mon(c, MON_SHIELD_GREMLIN, 13, MV_PROTECT);
    FX_END(&s);
    ck_assert_int_eq(c->mon[0].block, 8);
}
END_TEST

START_TEST(gremlin_wizard_charge_cycle) {
    /* Charge, Charge, Blast, Charge, Charge, Charge, Blast. */
    static const int seq[7] = {MV_CHARGING, MV_CHARGING, MV_ULTIMATE_BLAST, MV_CHARGING,
                               MV_CHARGING, MV_CHARGING, MV_ULTIMATE_BLAST};
    sf_state s;
    sf_combat *c = setup(&s, 1);
    fx_mon(c, MON_GREMLIN_WIZARD, 22, MV_NONE);
    c->mon[0].ai[0] = 1;
    monster_roll_move(c, 0);
    int hp = 999;
    for (int i = 0; i < 7; i++) {
        ck_assert_int_eq(c->mon[0].move, seq[i]);
        FX_END(&s);
        if (seq[i] == MV_ULTIMATE_BLAST)
            hp -= 25;
        ck_assert_int_eq(c->hp, hp);
    }
}
END_TEST

/* ------------------------------------------------------------------------
 * Slavers
 * ---------------------------------------------------------------------- */

START_TEST(blue_slaver_rake_weakens) {
    sf_state s;
    sf_combat *c = setup(&s, 1);
    fx_mon(c, MON_BLUE_SLAVER, 48, MV_RAKE);
    FX_END(&s);
    ck_assert_int_eq(c->hp, 992);
    ck_assert_int_eq(c->pw[PW_WEAK], 1);
}
END_TEST

START_TEST(red_slaver_scrape_and_entangle) {
    sf_state s;
    sf_combat *c = setup(&s, 1);
    fx_mon(c, MON_RED_SLAVER, 48, MV_SCRAPE);
    c->mon[0].ai[1] = 1;
    FX_END(&s);
    ck_assert_int_eq(c->hp, 991);
    ck_assert_int_eq(c->pw[PW_VULN], 1); /* justApplied in the monster phase */
    c->mon[0].move = MV_ENTANGLE;
    FX_END(&s);
    ck_assert_int_eq(c->pw[PW_ENTANGLED], 1);
    ck_assert_int_eq(c->mon[0].ai[0], 1);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEFEND, 0);
    ck_assert_int_eq(play_can_play(c, 0), 0);
    ck_assert_int_eq(play_can_play(c, 1), 1);
    FX_END(&s);
    ck_assert_int_eq(c->pw[PW_ENTANGLED], 0); /* gone at the end of that turn */
    /* Artifact blocks Entangle */
    c = setup(&s, 1);
    fx_mon(c, MON_RED_SLAVER, 48, MV_ENTANGLE);
    c->pw[PW_ARTIFACT] = 1;
    FX_END(&s);
    ck_assert_int_eq(c->pw[PW_ENTANGLED], 0);
    ck_assert_int_eq(c->pw[PW_ARTIFACT], 0);
}
END_TEST

/* ------------------------------------------------------------------------
 * Elites
 * ---------------------------------------------------------------------- */

SF_TCASE(elites, 0);

START_TEST(gremlin_nob_enrage_on_skills_before_their_effect) {
    sf_state s;
    sf_combat *c = setup(&s, 1);
    fx_mon(c, MON_GREMLIN_NOB, 85, MV_BELLOW_NOB);
    FX_END(&s);
    ck_assert_int_eq(c->mon[0].pw[PW_ENRAGE], 2);
    c->mon[0].move = MV_RUSH;
    fx_hand(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_SPOT_WEAKNESS, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET); /* Skill: +2 */
    ck_assert_int_eq(c->mon[0].pw[PW_STR], 2);
    FX_PLAY(&s, 0, 0); /* Attack: nothing */
    ck_assert_int_eq(c->mon[0].pw[PW_STR], 2);
    FX_PLAY(&s, 0, 0); /* Spot Weakness sees Rush: +3 Strength for us */
    ck_assert_int_eq(c->mon[0].pw[PW_STR], 4);
    ck_assert_int_eq(c->pw[PW_STR], 3);
    FX_END(&s); /* Rush 14 + 4 - 5 block */
    ck_assert_int_eq(c->hp, 999 - 13);
    c->mon[0].move = MV_SKULL_BASH;
    FX_END(&s); /* Skull Bash 6 + 4, then 2 Vulnerable (justApplied) */
    ck_assert_int_eq(c->hp, 999 - 13 - 10);
    ck_assert_int_eq(c->pw[PW_VULN], 2);
}
END_TEST

START_TEST(lagavulin_sleeps_two_turns_then_wakes_and_attacks) {
    /* Turns 1-2: Sleep (aiRng roll each), Metallicize 8 at each end of
     * round. Turn 3: wakes (Metallicize gone), intent Attack (scripted, no
     * roll); attacks on turn 4 for 18, then Attack, Siphon Soul, repeat. */
    sf_state s;
    sf_combat *c = setup(&s, 1);
    fx_mon(c, MON_LAGAVULIN, 110, MV_NONE);
    monster_pre_battle(c, 0);
    monster_roll_move(c, 0);
    ck_assert_int_eq(c->mon[0].block, 8);
    ck_assert_int_eq(c->mon[0].move, MV_SLEEP);
    uint32_t ai = c->rng[SF_STREAM_AI].counter;
    FX_END(&s);
    ck_assert_int_eq(c->mon[0].block, 8); /* lost at phase start, Metallicize at round end */
    ck_assert_int_eq(c->mon[0].move, MV_SLEEP);
    FX_END(&s);
    ck_assert_int_eq(c->mon[0].move, MV_SLEEP);
    ck_assert_uint_eq(c->rng[SF_STREAM_AI].counter, ai + 2);
    FX_END(&s);
    ck_assert_int_eq(c->mon[0].move, MV_LAGA_ATTACK);
    ck_assert_int_eq(c->mon[0].pw[PW_METALLICIZE], 0);
    ck_assert_int_eq(c->mon[0].block, 0);
    ck_assert_uint_eq(c->rng[SF_STREAM_AI].counter, ai + 2);
    ck_assert_int_eq(c->hp, 999);
    static const int seq[6] = {MV_LAGA_ATTACK, MV_LAGA_ATTACK, MV_SIPHON_SOUL,
                               MV_LAGA_ATTACK, MV_LAGA_ATTACK, MV_SIPHON_SOUL};
    int hp = 999;
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(c->mon[0].move, seq[i]);
        FX_END(&s);
        if (seq[i] == MV_LAGA_ATTACK)
            hp -= 18;
        ck_assert_int_eq(c->hp, hp);
    }
    /* two Siphon Souls: -2 Dexterity, -2 Strength */
    ck_assert_int_eq(c->pw[PW_DEX], -2);
    ck_assert_int_eq(c->pw[PW_STR], -2);
}
END_TEST

START_TEST(lagavulin_woken_by_hp_loss_is_stunned) {
    /* Block-only hits do not wake it; losing HP does: Metallicize removed,
     * intent Stun; the Stun turn rolls Attack. */
    sf_state s;
    sf_combat *c = setup(&s, 1);
    fx_mon(c, MON_LAGAVULIN, 110, MV_SLEEP);
    monster_pre_battle(c, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].block, 2);
    ck_assert_int_eq(c->mon[0].move, MV_SLEEP);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 106);
    ck_assert_int_eq(c->mon[0].move, MV_LAGA_STUN);
    ck_assert_int_eq(c->mon[0].pw[PW_METALLICIZE], 0);
    FX_END(&s);
    ck_assert_int_eq(c->hp, 999);
    ck_assert_int_eq(c->mon[0].move, MV_LAGA_ATTACK);
    ck_assert_int_eq(c->mon[0].block, 0);
}
END_TEST

START_TEST(lagavulin_siphon_soul_blocked_by_artifact) {
    sf_state s;
    sf_combat *c = setup(&s, 1);
    fx_mon(c, MON_LAGAVULIN, 110, MV_SIPHON_SOUL);
    c->mon[0].ai[2] = 1;
    c->pw[PW_ARTIFACT] = 1;
    FX_END(&s); /* Artifact eats the Dexterity loss, Strength still drops */
    ck_assert_int_eq(c->pw[PW_DEX], 0);
    ck_assert_int_eq(c->pw[PW_STR], -1);
}
END_TEST

START_TEST(sentries_alternate_bolt_and_beam) {
    sf_fight_spec spec = fx_spec();
    spec.encounter = ENC_3_SENTRIES;
    spec.seed = 9;
    spec.hp = spec.max_hp = 999;
    sf_state s;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    sf_combat *c = combat_of(&s);
    for (int m = 0; m < 3; m++)
        ck_assert_int_eq(c->mon[m].pw[PW_ARTIFACT], 1);
    int hp = c->hp;
    FX_END(&s);
    /* Bolt, Beam, Bolt: 9 damage, 4 Dazed into the discard pile */
    ck_assert_int_eq(c->hp, hp - 9);
    ck_assert_int_eq(fx_count(c->hand, c->hand_n, CARD_DAZED) +
                         fx_count(c->discard, c->discard_n, CARD_DAZED) +
                         fx_count(c->draw, c->draw_n, CARD_DAZED),
                     4);
    ck_assert_int_eq(c->mon[0].move, MV_BEAM);
    ck_assert_int_eq(c->mon[1].move, MV_BOLT);
    ck_assert_int_eq(c->mon[2].move, MV_BEAM);
    hp = c->hp;
    FX_END(&s);
    ck_assert_int_eq(c->hp, hp - 18);
}
END_TEST

START_TEST(sentry_bolt_adds_two_dazed) {
    sf_state s;
    sf_combat *c = setup(&s, 1);
    for (int i = 0; i < 5; i++)
        fx_draw(c, CARD_DEFEND, 0);
    fx_mon(c, MON_SENTRY, 40, MV_BOLT);
    c->mon[0].ai[0] = 1; /* first move done */
    FX_END(&s);
    ck_assert_int_eq(fx_count(c->discard, c->discard_n, CARD_DAZED), 2);
    ck_assert_int_eq(c->mon[0].move, MV_BEAM);
}
END_TEST

/* ------------------------------------------------------------------------
 * Slime Boss
 * ---------------------------------------------------------------------- */

SF_TCASE(bosses, 0);

START_TEST(slime_boss_goop_prepare_slam_cycle) {
    sf_state s;
    sf_combat *c = setup(&s, 4);
    for (int i = 0; i < 5; i++)
        fx_draw(c, CARD_DEFEND, 0);
    fx_mon(c, MON_SLIME_BOSS, 140, MV_GOOP_SPRAY);
    uint32_t ai = c->rng[SF_STREAM_AI].counter;
    FX_END(&s);
    ck_assert_int_eq(fx_count(c->discard, c->discard_n, CARD_SLIMED), 3);
    ck_assert_int_eq(c->mon[0].move, MV_PREPARING);
    FX_END(&s);
    ck_assert_int_eq(c->hp, 999);
    ck_assert_int_eq(c->mon[0].move, MV_SLAM);
    FX_END(&s);
    ck_assert_int_eq(c->hp, 964);
    ck_assert_int_eq(c->mon[0].move, MV_GOOP_SPRAY);
    ck_assert_uint_eq(c->rng[SF_STREAM_AI].counter, ai); /* scripted: no rolls */
}
END_TEST

START_TEST(slime_boss_splits_into_spike_and_acid_large) {
    /* 140 max: 70 HP splits. Spike Slime (L) left, Acid Slime (L) right,
     * each 70/70; they split again at 35 or less. */
    sf_state s;
    sf_combat *c = setup(&s, 4);
    fx_mon(c, MON_SLIME_BOSS, 140, MV_PREPARING);
    c->mon[0].hp = 80;
    c->potions[0] = POTION_EXPLOSIVE;
    FX_DRINK(&s, 0, SF_NO_TARGET); /* 10 THORNS: 70 */
    ck_assert_int_eq(c->mon[0].move, MV_BOSS_SPLIT);
    FX_END(&s);
    ck_assert_int_eq(c->n_mon, 2);
    ck_assert_int_eq(c->mon[0].id, MON_SPIKE_SLIME_L);
    ck_assert_int_eq(c->mon[1].id, MON_ACID_SLIME_L);
    ck_assert_int_eq(c->mon[0].hp, 70);
    ck_assert_int_eq(c->mon[1].max_hp, 70);
    combat_thorns_to_monster(c, 1, 35);
    ck_assert_int_eq(c->mon[1].move, MV_SPLIT);
}
END_TEST

START_TEST(slime_boss_split_by_thorns_during_slam_keeps_split) {
    /* Slam sets Goop Spray as the next intent before the hit resolves;
     * Bronze Scales' 3 THORNS then drop it from 72 to 69 (<= 70): Split. */
    sf_state s;
    sf_combat *c = setup(&s, 4);
    fx_mon(c, MON_SLIME_BOSS, 140, MV_SLAM);
    c->mon[0].hp = 72;
    c->pw[PW_THORNS] = 3;
    FX_END(&s);
    ck_assert_int_eq(c->hp, 964);
    ck_assert_int_eq(c->mon[0].hp, 69);
    ck_assert_int_eq(c->mon[0].move, MV_BOSS_SPLIT);
}
END_TEST

/* ------------------------------------------------------------------------
 * The Guardian
 * ---------------------------------------------------------------------- */

START_TEST(guardian_offensive_cycle) {
    /* Charging Up (9 block) -> Fierce Bash 32 -> Vent Steam (2 Weak, 2
     * Vulnerable) -> Whirlwind 5 x4 -> Charging Up ..., all scripted. */
    sf_state s;
    sf_combat *c = setup(&s, 1);
    fx_mon(c, MON_GUARDIAN, 240, MV_NONE);
    monster_pre_battle(c, 0);
    monster_roll_move(c, 0);
    ck_assert_int_eq(c->mon[0].pw[PW_MODE_SHIFT], 30);
    ck_assert_int_eq(c->mon[0].move, MV_CHARGING_UP);
    uint32_t ai = c->rng[SF_STREAM_AI].counter;
    FX_END(&s);
    ck_assert_int_eq(c->mon[0].block, 9);
    ck_assert_int_eq(c->mon[0].move, MV_FIERCE_BASH);
    FX_END(&s);
    ck_assert_int_eq(c->hp, 967);
    FX_END(&s);
    ck_assert_int_eq(c->pw[PW_WEAK], 2);
    ck_assert_int_eq(c->pw[PW_VULN], 2);
    ck_assert_int_eq(c->mon[0].move, MV_WHIRLWIND);
    FX_END(&s); /* Vulnerable: 5 x 1.5 = 7 per hit */
    ck_assert_int_eq(c->hp, 967 - 28);
    ck_assert_int_eq(c->mon[0].move, MV_CHARGING_UP);
    ck_assert_uint_eq(c->rng[SF_STREAM_AI].counter, ai);
}
END_TEST

START_TEST(guardian_mode_shift_and_defensive_cycle) {
    /* 30 HP lost (after block) in Offensive Mode: after the card, 20 block,
     * threshold 40, intent Close Up. Close Up: Sharp Hide 3. Roll Attack 9.
     * Twin Slam 8 x2: back to Offensive (Mode Shift 40, block lost, Sharp
     * Hide gone), then Whirlwind. */
    sf_state s;
    sf_combat *c = setup(&s, 1);
    fx_mon(c, MON_GUARDIAN, 240, MV_FIERCE_BASH);
    monster_pre_battle(c, 0);
    c->mon[0].block = 9;
    c->energy = 9;
    for (int i = 0; i < 20; i++)
        fx_draw(c, CARD_WOUND, 0); /* turn draws: no reshuffle of the played cards */
    fx_hand(c, CARD_BLUDGEON, 0);  /* 32: 9 blocked, 23 lost */
    fx_hand(c, CARD_STRIKE, 0);    /* 6: 29 */
    fx_hand(c, CARD_TWIN_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].pw[PW_MODE_SHIFT], 7);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].pw[PW_MODE_SHIFT], 1);
    FX_PLAY(&s, 0, 0); /* Twin Strike: the first hit crosses 30; the second still lands */
    ck_assert_int_eq(c->mon[0].hp, 240 - 23 - 6 - 10);
    ck_assert_int_eq(c->mon[0].block, 20);
    ck_assert_int_eq(c->mon[0].val[0], 40);
    ck_assert_int_eq(c->mon[0].move, MV_CLOSE_UP);
    FX_END(&s); /* Close Up; the 20 block is lost at the monster phase start */
    ck_assert_int_eq(c->hp, 999);
    ck_assert_int_eq(c->mon[0].pw[PW_SHARP_HIDE], 3);
    ck_assert_int_eq(c->mon[0].move, MV_ROLL_ATTACK);
    /* Sharp Hide: 3 THORNS to the player per Attack played, blocked first */
    c->block = 1;
    int strike = fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEFEND, 0);
    FX_PLAY(&s, strike, 0);
    ck_assert_int_eq(c->hp, 997);
    FX_PLAY(&s, strike, SF_NO_TARGET);
    ck_assert_int_eq(c->hp, 997);
    FX_END(&s); /* Roll Attack 9 against the Defend's 5 block */
    ck_assert_int_eq(c->hp, 993);
    ck_assert_int_eq(c->mon[0].move, MV_TWIN_SLAM);
    c->mon[0].block = 15; /* lost again at the phase start; Twin Slam clears any */
    FX_END(&s);           /* Twin Slam 8 x2 */
    ck_assert_int_eq(c->hp, 977);
    ck_assert_int_eq(c->mon[0].pw[PW_SHARP_HIDE], 0);
    ck_assert_int_eq(c->mon[0].pw[PW_MODE_SHIFT], 40);
    ck_assert_int_eq(c->mon[0].block, 0);
    ck_assert_int_eq(c->mon[0].move, MV_WHIRLWIND);
    ck_assert(!(c->mon[0].flags & MF_DEFENSIVE));
}
END_TEST

START_TEST(guardian_sharp_hide_answers_a_killing_blow) {
    /* Sharp Hide's damage is queued when the Attack is played, before the
     * Attack kills the Guardian: it still lands. */
    sf_state s;
    sf_combat *c = setup(&s, 1);
    fx_mon(c, MON_GUARDIAN, 240, MV_ROLL_ATTACK);
    c->mon[0].hp = 5;
    c->mon[0].flags |= MF_DEFENSIVE;
    c->mon[0].pw[PW_SHARP_HIDE] = 3;
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert(c->flags & FL_WON);
    ck_assert_int_eq(c->hp, 996);
}
END_TEST

START_TEST(guardian_mode_shift_from_thorns_in_its_own_turn) {
    /* Fierce Bash into Flame Barrier 6 with 5 HP left to the threshold:
     * the Defensive change runs after its move and is not overwritten by
     * Vent Steam. */
    sf_state s;
    sf_combat *c = setup(&s, 1);
    fx_mon(c, MON_GUARDIAN, 240, MV_FIERCE_BASH);
    monster_pre_battle(c, 0);
    c->mon[0].val[1] = 25;
    c->mon[0].pw[PW_MODE_SHIFT] = 5;
    c->pw[PW_FLAME_BARRIER] = 6;
    FX_END(&s);
    ck_assert_int_eq(c->mon[0].move, MV_CLOSE_UP);
    ck_assert_int_eq(c->mon[0].block, 20); /* gained in the monster phase: kept */
    ck_assert(c->mon[0].flags & MF_DEFENSIVE);
}
END_TEST

/* ------------------------------------------------------------------------
 * Hexaghost
 * ---------------------------------------------------------------------- */

START_TEST(hexaghost_activate_divider_and_orb_cycle) {
    /* Activate reads the current HP on its turn: 80 -> 80/12 + 1 = 7 per
     * hit x6 on turn 2. Then Sear, Tackle, Sear, Inflame, Tackle, Sear,
     * Inferno, Sear. Each Sear adds a Burn to the discard pile; Inferno
     * (2 x6) upgrades them and adds 3 Burn+; the last Sear adds a Burn+.
     * 60 Defends keep the Burns out of the hand (no reshuffle). */
    static const int cycle[8] = {MV_SEAR,       MV_HEX_TACKLE, MV_SEAR,    MV_HEX_INFLAME,
                                 MV_HEX_TACKLE, MV_SEAR,       MV_INFERNO, MV_SEAR};
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    c->hp = c->max_hp = 80;
    for (int i = 0; i < 60; i++)
        fx_draw(c, CARD_DEFEND, 0);
    fx_mon(c, MON_HEXAGHOST, 250, MV_NONE);
    monster_roll_move(c, 0);
    ck_assert_int_eq(c->mon[0].move, MV_ACTIVATE);
    FX_END(&s);
    ck_assert_int_eq(c->mon[0].move, MV_DIVIDER);
    int hits = 0;
    ck_assert_int_eq(intent(c, 0, &hits), 7);
    ck_assert_int_eq(hits, 6);
    c->hp = c->max_hp = 900; /* the per-hit damage was fixed at Activate */
    FX_END(&s);
    ck_assert_int_eq(c->hp, 858);
    int hp = 858, str = 0;
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(c->mon[0].move, cycle[i]);
        FX_END(&s);
        switch (cycle[i]) {
        case MV_SEAR: hp -= 6 + str; break;
        case MV_HEX_TACKLE: hp -= 2 * (5 + str); break;
        case MV_HEX_INFLAME: str += 2; break;
        case MV_INFERNO: hp -= 6 * (2 + str); break;
        default: break;
        }
        ck_assert_msg(c->hp == hp, "step %d: HP %d, want %d", i, c->hp, hp);
        if (cycle[i] == MV_HEX_INFLAME) {
            ck_assert_int_eq(c->mon[0].block, 12);
            ck_assert_int_eq(c->mon[0].pw[PW_STR], 2);
        }
    }
    int burns = 0, plus = 0;
    for (int i = 0; i < c->discard_n; i++)
        if (c->discard[i].id == CARD_BURN) {
            burns++;
            plus += c->discard[i].upg;
        }
    ck_assert_int_eq(burns, 7);
    ck_assert_int_eq(plus, 7);
}
END_TEST

START_TEST(hexaghost_inferno_upgrades_draw_and_discard_burns_only) {
    /* A Burn can be in hand during the monster phase only if drawn after
     * the end-of-turn discard: Dark Embrace on an exhausted Dazed draws the
     * Burn on top. Inferno then upgrades the Burns in the draw pile (the one
     * at the bottom) and the discard pile, not that one, and adds 3 Burn+. */
    sf_state s;
    sf_combat *c = setup(&s, 1);
    fx_mon(c, MON_HEXAGHOST, 250, MV_INFERNO);
    c->mon[0].ai[0] = 1; /* activated */
    c->pw[PW_DARK_EMBRACE] = 1;
    fx_draw(c, CARD_BURN, 0); /* bottom */
    for (int i = 0; i < 5; i++)
        fx_draw(c, CARD_DEFEND, 0);
    fx_draw(c, CARD_BURN, 0); /* top */
    fx_discard(c, CARD_BURN, 0);
    fx_hand(c, CARD_DAZED, 0);
    FX_END(&s);
    ck_assert_int_eq(c->hp, 999 - 12);
    ck_assert_int_eq(c->hand_n, 6);
    ck_assert_int_eq(c->hand[0].id, CARD_BURN);
    ck_assert_int_eq(c->hand[0].upg, 0);
    ck_assert_int_eq(c->draw_n, 1);
    ck_assert_int_eq(c->draw[0].id, CARD_BURN);
    ck_assert_int_eq(c->draw[0].upg, 1);
    ck_assert_int_eq(fx_count(c->discard, c->discard_n, CARD_BURN), 4);
    for (int i = 0; i < c->discard_n; i++)
        ck_assert_int_eq(c->discard[i].upg, 1);
    ck_assert_int_eq(c->mon[0].ai[2], 1);
    ck_assert_int_eq(c->mon[0].move, MV_SEAR);
}
END_TEST

#include "test-engine-monsters.tests.h" /* SF_TESTS: every test above (tests/meson.build) */
SF_CHECK_MAIN("engine-monsters", "numbers", 0, NULL, NULL)
