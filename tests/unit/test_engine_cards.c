/*
 * test_engine_cards.c — every Ironclad card (base and upgraded) and the
 * status cards, each in a hand-built scenario with the expected numbers
 * worked out in the comments.
 *
 * Formulas (game-rules §1): card damage = floor((base + Str [+ Vigor]) x2
 * (Pen Nib) x0.75 (Weak) x1.5 (target Vulnerable)), floored once; block
 * from a card = floor((base + Dex) x0.75 (Frail)). Card numbers: facts
 * sheet §3, §4 ("X (Y)" = base (upgraded)).
 */
#include "engine_fixture.h"
#include "sf_check.h"

/* ------------------------------------------------------------------------
 * Single-target attacks. Scenario: energy 5, player Strength 2, the card
 * alone in hand, target a 200-HP Cultist with Vulnerable 1 and 4 block.
 * Damage d = floor((base + 2) x 1.5); HP lost = d - 4 on the first hit.
 * ---------------------------------------------------------------------- */
typedef struct attack_row {
    const char *name;
    int id, upg, cost;
    int hp_lost;      /* from 200 */
    int block_after;  /* the Cultist's block after the card */
    int energy_after; /* from 5 */
} attack_row;

static const attack_row attack_rows[] = {
    /* Strike 6 (9): (6+2)x1.5 = 12, -4 block = 8; (9+2)x1.5 = 16.5 -> 16, 12 */
    {"Strike", CARD_STRIKE, 0, 1, 8, 0, 4},
    {"Strike+", CARD_STRIKE, 1, 1, 12, 0, 4},
    /* Bash 8 (10): 10x1.5 = 15 -> 11; 12x1.5 = 18 -> 14 */
    {"Bash", CARD_BASH, 0, 2, 11, 0, 3},
    {"Bash+", CARD_BASH, 1, 2, 14, 0, 3},
    /* Anger 6 (8), cost 0: 12 -> 8; 10x1.5 = 15 -> 11 */
    {"Anger", CARD_ANGER, 0, 0, 8, 0, 5},
    {"Anger+", CARD_ANGER, 1, 0, 11, 0, 5},
    /* Clash 14 (18), cost 0: 16x1.5 = 24 -> 20; 20x1.5 = 30 -> 26 */
    {"Clash", CARD_CLASH, 0, 0, 20, 0, 5},
    {"Clash+", CARD_CLASH, 1, 0, 26, 0, 5},
    /* Clothesline 12 (14): 14x1.5 = 21 -> 17; 16x1.5 = 24 -> 20 */
    {"Clothesline", CARD_CLOTHESLINE, 0, 2, 17, 0, 3},
    {"Clothesline+", CARD_CLOTHESLINE, 1, 2, 20, 0, 3},
    /* Headbutt 9 (12): 11x1.5 = 16.5 -> 16, 12; 14x1.5 = 21 -> 17 */
    {"Headbutt", CARD_HEADBUTT, 0, 1, 12, 0, 4},
    {"Headbutt+", CARD_HEADBUTT, 1, 1, 17, 0, 4},
    /* Heavy Blade 14, Strength x3 (x5): (14+6)x1.5 = 30 -> 26; (14+10)x1.5 = 36 -> 32 */
    {"Heavy Blade", CARD_HEAVY_BLADE, 0, 2, 26, 0, 3},
    {"Heavy Blade+", CARD_HEAVY_BLADE, 1, 2, 32, 0, 3},
    /* Iron Wave 5 (7): 7x1.5 = 10.5 -> 10, 6; 9x1.5 = 13.5 -> 13, 9 */
    {"Iron Wave", CARD_IRON_WAVE, 0, 1, 6, 0, 4},
    {"Iron Wave+", CARD_IRON_WAVE, 1, 1, 9, 0, 4},
    /* Perfected Strike 6 + 2 (3) per Strike card, itself the only one:
     * 8 -> 10x1.5 = 15 -> 11; 9 -> 11x1.5 = 16.5 -> 16 -> 12 */
    {"Perfected Strike", CARD_PERFECTED_STRIKE, 0, 2, 11, 0, 3},
    {"Perfected Strike+", CARD_PERFECTED_STRIKE, 1, 2, 12, 0, 3},
    /* Pommel Strike 9 (10): 11x1.5 = 16 -> 12; 12x1.5 = 18 -> 14 */
    {"Pommel Strike", CARD_POMMEL_STRIKE, 0, 1, 12, 0, 4},
    {"Pommel Strike+", CARD_POMMEL_STRIKE, 1, 1, 14, 0, 4},
    /* Twin Strike 5 (7) x2: 7x1.5 = 10 per hit: (10-4) + 10 = 16; 9x1.5 = 13: 9 + 13 = 22 */
    {"Twin Strike", CARD_TWIN_STRIKE, 0, 1, 16, 0, 4},
    {"Twin Strike+", CARD_TWIN_STRIKE, 1, 1, 22, 0, 4},
    /* Wild Strike 12 (17): 14x1.5 = 21 -> 17; 19x1.5 = 28.5 -> 28 -> 24 */
    {"Wild Strike", CARD_WILD_STRIKE, 0, 1, 17, 0, 4},
    {"Wild Strike+", CARD_WILD_STRIKE, 1, 1, 24, 0, 4},
    /* Blood for Blood 18 (22), cost 4 (3): 20x1.5 = 30 -> 26; 24x1.5 = 36 -> 32 */
    {"Blood for Blood", CARD_BLOOD_FOR_BLOOD, 0, 4, 26, 0, 1},
    {"Blood for Blood+", CARD_BLOOD_FOR_BLOOD, 1, 3, 32, 0, 2},
    /* Carnage 20 (28): 22x1.5 = 33 -> 29; 30x1.5 = 45 -> 41 */
    {"Carnage", CARD_CARNAGE, 0, 2, 29, 0, 3},
    {"Carnage+", CARD_CARNAGE, 1, 2, 41, 0, 3},
    /* Dropkick 5 (8): 7x1.5 = 10.5 -> 10, 6; 10x1.5 = 15, 11. The target is
     * Vulnerable: +1 energy back (5 - 1 + 1 = 5) */
    {"Dropkick", CARD_DROPKICK, 0, 1, 6, 0, 5},
    {"Dropkick+", CARD_DROPKICK, 1, 1, 11, 0, 5},
    /* Hemokinesis 15 (20): 17x1.5 = 25.5 -> 25, 21; 22x1.5 = 33, 29 */
    {"Hemokinesis", CARD_HEMOKINESIS, 0, 1, 21, 0, 4},
    {"Hemokinesis+", CARD_HEMOKINESIS, 1, 1, 29, 0, 4},
    /* Pummel 2 x4 (x5): 4x1.5 = 6 per hit: (6-4) + 3x6 = 20; (6-4) + 4x6 = 26 */
    {"Pummel", CARD_PUMMEL, 0, 1, 20, 0, 4},
    {"Pummel+", CARD_PUMMEL, 1, 1, 26, 0, 4},
    /* Rampage 8 (both): 10x1.5 = 15 -> 11 */
    {"Rampage", CARD_RAMPAGE, 0, 1, 11, 0, 4},
    {"Rampage+", CARD_RAMPAGE, 1, 1, 11, 0, 4},
    /* Reckless Charge 7 (10), cost 0: 9x1.5 = 13.5 -> 13, 9; 12x1.5 = 18, 14 */
    {"Reckless Charge", CARD_RECKLESS_CHARGE, 0, 0, 9, 0, 5},
    {"Reckless Charge+", CARD_RECKLESS_CHARGE, 1, 0, 14, 0, 5},
    /* Searing Blow 12, +1 upgrade: 12 + 1x8/2 = 16: 14x1.5 = 21, 17; 18x1.5 = 27, 23 */
    {"Searing Blow", CARD_SEARING_BLOW, 0, 2, 17, 0, 3},
    {"Searing Blow+", CARD_SEARING_BLOW, 1, 2, 23, 0, 3},
    /* Sever Soul 16 (22): 18x1.5 = 27, 23; 24x1.5 = 36, 32 */
    {"Sever Soul", CARD_SEVER_SOUL, 0, 2, 23, 0, 3},
    {"Sever Soul+", CARD_SEVER_SOUL, 1, 2, 32, 0, 3},
    /* Uppercut 13 (both): 15x1.5 = 22.5 -> 22, 18 */
    {"Uppercut", CARD_UPPERCUT, 0, 2, 18, 0, 3},
    {"Uppercut+", CARD_UPPERCUT, 1, 2, 18, 0, 3},
    /* Bludgeon 32 (42), cost 3: 34x1.5 = 51, 47; 44x1.5 = 66, 62 */
    {"Bludgeon", CARD_BLUDGEON, 0, 3, 47, 0, 2},
    {"Bludgeon+", CARD_BLUDGEON, 1, 3, 62, 0, 2},
    /* Feed 10 (12): 12x1.5 = 18, 14; 14x1.5 = 21, 17 (no kill: no max HP) */
    {"Feed", CARD_FEED, 0, 1, 14, 0, 4},
    {"Feed+", CARD_FEED, 1, 1, 17, 0, 4},
    /* Body Slam: base = the player's block, 0 here: (0+2)x1.5 = 3, all
     * absorbed by the 4 block (1 left); cost 1 (0) */
    {"Body Slam", CARD_BODY_SLAM, 0, 1, 0, 1, 4},
    {"Body Slam+", CARD_BODY_SLAM, 1, 0, 0, 1, 5},
};

SF_LOOP_TEST(single_target_attack_numbers, 0, (int)(sizeof attack_rows / sizeof attack_rows[0])) {
    const attack_row *r = &attack_rows[_i];
    sf_state s;
    sf_combat *c = fx_new(&s, 7);
    fx_mon(c, MON_CULTIST, 200, MV_INCANTATION);
    c->mon[0].pw[PW_VULN] = 1;
    c->mon[0].block = 4;
    c->pw[PW_STR] = 2;
    c->energy = 5;
    fx_hand(c, r->id, r->upg);
    ck_assert_msg(combat_card_cost(c, &c->hand[0]) == r->cost, "%s cost", r->name);
    FX_PLAY(&s, 0, 0);
    ck_assert_msg(c->mon[0].hp == 200 - r->hp_lost, "%s: HP %d, want %d", r->name, c->mon[0].hp,
                  200 - r->hp_lost);
    ck_assert_msg(c->mon[0].block == r->block_after, "%s: block %d, want %d", r->name,
                  c->mon[0].block, r->block_after);
    ck_assert_msg(c->energy == r->energy_after, "%s: energy %d, want %d", r->name, c->energy,
                  r->energy_after);
}
END_TEST

/* ------------------------------------------------------------------------
 * Block cards. Scenario: energy 5, Dexterity 2, Frail 1, the card alone in
 * hand. Block = floor((base + 2) x 0.75).
 * ---------------------------------------------------------------------- */
typedef struct block_row {
    const char *name;
    int id, upg, cost, block;
} block_row;

static const block_row block_rows[] = {
    /* Defend 5 (8): 7x0.75 = 5.25 -> 5; 10x0.75 = 7.5 -> 7 */
    {"Defend", CARD_DEFEND, 0, 1, 5},
    {"Defend+", CARD_DEFEND, 1, 1, 7},
    /* Shrug It Off 8 (11): 10x0.75 = 7; 13x0.75 = 9.75 -> 9 */
    {"Shrug It Off", CARD_SHRUG_IT_OFF, 0, 1, 7},
    {"Shrug It Off+", CARD_SHRUG_IT_OFF, 1, 1, 9},
    /* True Grit 7 (9): 9x0.75 = 6.75 -> 6; 11x0.75 = 8.25 -> 8 */
    {"True Grit", CARD_TRUE_GRIT, 0, 1, 6},
    {"True Grit+", CARD_TRUE_GRIT, 1, 1, 8},
    /* Flame Barrier 12 (16), cost 2: 14x0.75 = 10.5 -> 10; 18x0.75 = 13.5 -> 13 */
    {"Flame Barrier", CARD_FLAME_BARRIER, 0, 2, 10},
    {"Flame Barrier+", CARD_FLAME_BARRIER, 1, 2, 13},
    /* Ghostly Armor 10 (13): 12x0.75 = 9; 15x0.75 = 11.25 -> 11 */
    {"Ghostly Armor", CARD_GHOSTLY_ARMOR, 0, 1, 9},
    {"Ghostly Armor+", CARD_GHOSTLY_ARMOR, 1, 1, 11},
    /* Power Through 15 (20): 17x0.75 = 12.75 -> 12; 22x0.75 = 16.5 -> 16 */
    {"Power Through", CARD_POWER_THROUGH, 0, 1, 12},
    {"Power Through+", CARD_POWER_THROUGH, 1, 1, 16},
    /* Sentinel 5 (8): 5; 7 */
    {"Sentinel", CARD_SENTINEL, 0, 1, 5},
    {"Sentinel+", CARD_SENTINEL, 1, 1, 7},
    /* Impervious 30 (40), cost 2: 32x0.75 = 24; 42x0.75 = 31.5 -> 31 */
    {"Impervious", CARD_IMPERVIOUS, 0, 2, 24},
    {"Impervious+", CARD_IMPERVIOUS, 1, 2, 31},
    /* Armaments 5 (5): 7x0.75 = 5.25 -> 5 */
    {"Armaments", CARD_ARMAMENTS, 0, 1, 5},
    {"Armaments+", CARD_ARMAMENTS, 1, 1, 5},
};

SF_LOOP_TEST(block_card_numbers, 0, (int)(sizeof block_rows / sizeof block_rows[0])) {
    const block_row *r = &block_rows[_i];
    sf_state s;
    sf_combat *c = fx_new(&s, 7);
    fx_mon(c, MON_CULTIST, 200, MV_INCANTATION);
    c->pw[PW_DEX] = 2;
    c->pw[PW_FRAIL] = 1;
    c->energy = 5;
    fx_hand(c, r->id, r->upg);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_msg(c->block == r->block, "%s: block %d, want %d", r->name, c->block, r->block);
    ck_assert_msg(c->energy == 5 - r->cost, "%s: energy %d", r->name, c->energy);
}
END_TEST

/* ------------------------------------------------------------------------
 * Attacks on ALL. Scenario: two 200-HP Cultists, only the first
 * Vulnerable, player Strength 2, energy 5.
 * ---------------------------------------------------------------------- */
typedef struct aoe_row {
    const char *name;
    int id, upg, cost, lost0, lost1;
} aoe_row;

static const aoe_row aoe_rows[] = {
    /* Cleave 8 (11): (10x1.5 = 15, 10); (13x1.5 = 19.5 -> 19, 13) */
    {"Cleave", CARD_CLEAVE, 0, 1, 15, 10},
    {"Cleave+", CARD_CLEAVE, 1, 1, 19, 13},
    /* Thunderclap 4 (7): (6x1.5 = 9, 6); (9x1.5 = 13.5 -> 13, 9) */
    {"Thunderclap", CARD_THUNDERCLAP, 0, 1, 9, 6},
    {"Thunderclap+", CARD_THUNDERCLAP, 1, 1, 13, 9},
    /* Immolate 21 (28), cost 2: (23x1.5 = 34.5 -> 34, 23); (30x1.5 = 45, 30) */
    {"Immolate", CARD_IMMOLATE, 0, 2, 34, 23},
    {"Immolate+", CARD_IMMOLATE, 1, 2, 45, 30},
    /* Reaper 4 (5), cost 2: (6x1.5 = 9, 6); (7x1.5 = 10.5 -> 10, 7) */
    {"Reaper", CARD_REAPER, 0, 2, 9, 6},
    {"Reaper+", CARD_REAPER, 1, 2, 10, 7},
};

SF_LOOP_TEST(all_enemy_attack_numbers, 0, (int)(sizeof aoe_rows / sizeof aoe_rows[0])) {
    const aoe_row *r = &aoe_rows[_i];
    sf_state s;
    sf_combat *c = fx_new(&s, 7);
    fx_mon(c, MON_CULTIST, 200, MV_INCANTATION);
    fx_mon(c, MON_CULTIST, 200, MV_INCANTATION);
    c->mon[0].pw[PW_VULN] = 1;
    c->pw[PW_STR] = 2;
    c->energy = 5;
    fx_hand(c, r->id, r->upg);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_msg(c->mon[0].hp == 200 - r->lost0, "%s: first %d", r->name, c->mon[0].hp);
    ck_assert_msg(c->mon[1].hp == 200 - r->lost1, "%s: second %d", r->name, c->mon[1].hp);
    ck_assert_int_eq(c->energy, 5 - r->cost);
}
END_TEST

/* ------------------------------------------------------------------------
 * Powers and power-like skills. Scenario: energy 5, the card alone in hand.
 * The power's stack after the play, and the energy spent.
 * ---------------------------------------------------------------------- */
typedef struct power_row {
    const char *name;
    int id, upg, cost, pw, amount;
} power_row;

static const power_row power_rows[] = {
    {"Barricade", CARD_BARRICADE, 0, 3, PW_BARRICADE, 1},
    {"Barricade+", CARD_BARRICADE, 1, 2, PW_BARRICADE, 1},
    {"Berserk", CARD_BERSERK, 0, 0, PW_BERSERK, 1},
    {"Berserk+", CARD_BERSERK, 1, 0, PW_BERSERK, 1},
    {"Brutality", CARD_BRUTALITY, 0, 0, PW_BRUTALITY, 1},
    {"Brutality+", CARD_BRUTALITY, 1, 0, PW_BRUTALITY, 1},
    {"Combust", CARD_COMBUST, 0, 1, PW_COMBUST, 5},
    {"Combust+", CARD_COMBUST, 1, 1, PW_COMBUST, 7},
    {"Corruption", CARD_CORRUPTION, 0, 3, PW_CORRUPTION, 1},
    {"Corruption+", CARD_CORRUPTION, 1, 2, PW_CORRUPTION, 1},
    {"Dark Embrace", CARD_DARK_EMBRACE, 0, 2, PW_DARK_EMBRACE, 1},
    {"Dark Embrace+", CARD_DARK_EMBRACE, 1, 1, PW_DARK_EMBRACE, 1},
    {"Demon Form", CARD_DEMON_FORM, 0, 3, PW_DEMON_FORM, 2},
    {"Demon Form+", CARD_DEMON_FORM, 1, 3, PW_DEMON_FORM, 3},
    {"Evolve", CARD_EVOLVE, 0, 1, PW_EVOLVE, 1},
    {"Evolve+", CARD_EVOLVE, 1, 1, PW_EVOLVE, 2},
    {"Feel No Pain", CARD_FEEL_NO_PAIN, 0, 1, PW_FNP, 3},
    {"Feel No Pain+", CARD_FEEL_NO_PAIN, 1, 1, PW_FNP, 4},
    {"Fire Breathing", CARD_FIRE_BREATHING, 0, 1, PW_FIRE_BREATHING, 6},
    {"Fire Breathing+", CARD_FIRE_BREATHING, 1, 1, PW_FIRE_BREATHING, 10},
    {"Inflame", CARD_INFLAME, 0, 1, PW_STR, 2},
    {"Inflame+", CARD_INFLAME, 1, 1, PW_STR, 3},
    {"Juggernaut", CARD_JUGGERNAUT, 0, 2, PW_JUGGERNAUT, 5},
    {"Juggernaut+", CARD_JUGGERNAUT, 1, 2, PW_JUGGERNAUT, 7},
    {"Metallicize", CARD_METALLICIZE, 0, 1, PW_METALLICIZE, 3},
    {"Metallicize+", CARD_METALLICIZE, 1, 1, PW_METALLICIZE, 4},
    {"Rupture", CARD_RUPTURE, 0, 1, PW_RUPTURE, 1},
    {"Rupture+", CARD_RUPTURE, 1, 1, PW_RUPTURE, 2},
    /* skills that set a power */
    {"Rage", CARD_RAGE, 0, 0, PW_RAGE, 3},
    {"Rage+", CARD_RAGE, 1, 0, PW_RAGE, 5},
    {"Double Tap", CARD_DOUBLE_TAP, 0, 1, PW_DOUBLE_TAP, 1},
    {"Double Tap+", CARD_DOUBLE_TAP, 1, 1, PW_DOUBLE_TAP, 2},
    {"Flex", CARD_FLEX, 0, 0, PW_LOSE_STR, 2},
    {"Flex+", CARD_FLEX, 1, 0, PW_LOSE_STR, 4},
    {"Flame Barrier", CARD_FLAME_BARRIER, 0, 2, PW_FLAME_BARRIER, 4},
    {"Flame Barrier+", CARD_FLAME_BARRIER, 1, 2, PW_FLAME_BARRIER, 6},
    {"Battle Trance", CARD_BATTLE_TRANCE, 0, 0, PW_NO_DRAW, 1},
    {"Battle Trance+", CARD_BATTLE_TRANCE, 1, 0, PW_NO_DRAW, 1},
};

SF_LOOP_TEST(power_card_numbers, 0, (int)(sizeof power_rows / sizeof power_rows[0])) {
    const power_row *r = &power_rows[_i];
    sf_state s;
    sf_combat *c = fx_new(&s, 7);
    fx_mon(c, MON_CULTIST, 200, MV_INCANTATION);
    c->energy = 5;
    fx_hand(c, r->id, r->upg);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_msg(c->pw[r->pw] == r->amount, "%s: power %d, want %d", r->name, c->pw[r->pw],
                  r->amount);
    ck_assert_msg(c->energy == 5 - r->cost, "%s: energy %d", r->name, c->energy);
    int power = sf_cards[r->id].type == CT_POWER;
    ck_assert_int_eq(c->cards_removed, power);
    ck_assert_int_eq(c->discard_n, !power);
}
END_TEST

START_TEST(brutality_plus_is_innate) {
    /* Innate cards go on top after the shuffle; six of them: 5 + 1 drawn. */
    sf_fight_spec spec = fx_spec();
    ck_assert_int_eq(sf_deck_parse("Strike*9,Brutality+", &spec, NULL), SF_OK);
    sf_state s;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        spec.seed = seed;
        ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
        ck_assert_int_eq(fx_count(ccombat_of(&s)->hand, 5, CARD_BRUTALITY), 1);
    }
    ck_assert_int_eq(sf_deck_parse("Strike*9,Brutality+*6", &spec, NULL), SF_OK);
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    ck_assert_int_eq(ccombat_of(&s)->hand_n, 6);
    ck_assert_int_eq(fx_count(ccombat_of(&s)->hand, 6, CARD_BRUTALITY), 6);
}
END_TEST

START_TEST(seeing_red_gives_two_energy_and_exhausts) {
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 7);
        fx_mon(c, MON_CULTIST, 200, MV_INCANTATION);
        fx_hand(c, CARD_SEEING_RED, upg);
        FX_PLAY(&s, 0, SF_NO_TARGET); /* cost 1 (0) */
        ck_assert_int_eq(c->energy, upg ? 5 : 4);
        ck_assert_int_eq(c->exhaust_n, 1);
    }
}
END_TEST

/* ------------------------------------------------------------------------
 * Damage formula corners
 * ---------------------------------------------------------------------- */

START_TEST(weak_attacker_on_vulnerable_target_floors_once) {
    /* docs/game-rules.md §1's example: 9 damage, Weak attacker, Vulnerable target:
     * 9 x 0.75 x 1.5 = 10.125 -> 10 (Headbutt has base 9). */
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->mon[0].pw[PW_VULN] = 1;
    c->pw[PW_WEAK] = 1;
    fx_hand(c, CARD_HEADBUTT, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 90);
}
END_TEST

START_TEST(negative_strength_clamps_damage_at_zero) {
    /* Strike 6 with Strength -8: 6 - 8 = -2 -> 0 damage. */
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_STR] = -8;
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 100);
}
END_TEST

START_TEST(dexterity_below_zero_gives_zero_block) {
    /* Defend 5 with Dexterity -7: 5 - 7 < 0 -> 0, then Frail 0 x 0.75 = 0. */
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_DEX] = -7;
    fx_hand(c, CARD_DEFEND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->block, 0);
}
END_TEST

START_TEST(vigor_and_pen_nib_apply_in_order_and_are_spent) {
    /* Akabeko's 8 Vigor and Pen Nib: (6 + 1 Str + 8 Vigor) x 2 = 30 on the
     * first Attack; both are gone for the second: 6 + 1 = 7. */
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_STR] = 1;
    c->pw[PW_VIGOR] = 8;
    c->pw[PW_PEN_NIB] = 1;
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 70);
    ck_assert_int_eq(c->pw[PW_VIGOR], 0);
    ck_assert_int_eq(c->pw[PW_PEN_NIB], 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 63);
}
END_TEST

/* ------------------------------------------------------------------------
 * Attack side effects
 * ---------------------------------------------------------------------- */

SF_TCASE(attacks, 0);

START_TEST(bash_applies_vulnerable_after_its_damage) {
    /* Bash 8 on a fresh target: 8 (no Vulnerable yet), then 2 Vulnerable;
     * Bash+ 10, then 3. */
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 1);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_BASH, upg);
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->mon[0].hp, upg ? 90 : 92);
        ck_assert_int_eq(c->mon[0].pw[PW_VULN], upg ? 3 : 2);
    }
}
END_TEST

START_TEST(clothesline_and_uppercut_debuffs) {
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 1);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        c->energy = 4;
        fx_hand(c, CARD_CLOTHESLINE, upg);
        fx_hand(c, CARD_UPPERCUT, upg);
        FX_PLAY(&s, 0, 0); /* Clothesline: 2 (3) Weak */
        ck_assert_int_eq(c->mon[0].pw[PW_WEAK], upg ? 3 : 2);
        FX_PLAY(&s, 0, 1); /* Uppercut: 1 (2) Weak and 1 (2) Vulnerable */
        ck_assert_int_eq(c->mon[1].pw[PW_WEAK], upg ? 2 : 1);
        ck_assert_int_eq(c->mon[1].pw[PW_VULN], upg ? 2 : 1);
    }
}
END_TEST

START_TEST(anger_puts_a_stat_equal_copy_in_discard) {
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_ANGER, 1);
    FX_PLAY(&s, 0, 0);
    /* the played Anger+ and its copy */
    ck_assert_int_eq(c->discard_n, 2);
    ck_assert_int_eq(c->discard[0].id, CARD_ANGER);
    ck_assert_int_eq(c->discard[0].upg, 1);
    ck_assert_int_eq(c->discard[1].id, CARD_ANGER);
    ck_assert_int_eq(c->cards_created, 1);
}
END_TEST

START_TEST(clash_needs_an_all_attack_hand) {
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_CLASH, 0);
    fx_hand(c, CARD_STRIKE, 0);
    ck_assert_int_eq(play_can_play(c, 0), 1);
    fx_hand(c, CARD_DEFEND, 0);
    ck_assert_int_eq(play_can_play(c, 0), 0);
    ck_assert_int_eq(fx_apply(&s, SF_ACT_PLAY, 0, 0), SF_EINVAL);
}
END_TEST

START_TEST(iron_wave_blocks_once_before_its_damage) {
    /* Iron Wave with Dexterity 1 and Frail: block floor((5+1) x 0.75) = 4,
     * gained once (game-rules §4), then 5 damage. */
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_DEX] = 1;
    c->pw[PW_FRAIL] = 1;
    fx_hand(c, CARD_IRON_WAVE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->block, 4);
    ck_assert_int_eq(c->mon[0].hp, 95);
}
END_TEST

START_TEST(perfected_strike_counts_strike_cards_in_hand_draw_discard) {
    /* Strike cards: itself, Strike and Twin Strike in hand, Pommel Strike in
     * draw, Wild Strike in discard, a Strike in exhaust (not counted): 5.
     * 6 + 2 x 5 = 16; Perfected Strike+ 6 + 3 x 5 = 21. */
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 1);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_PERFECTED_STRIKE, upg);
        fx_hand(c, CARD_STRIKE, 0);
        fx_hand(c, CARD_TWIN_STRIKE, 0);
        fx_hand(c, CARD_DEFEND, 0);
        fx_draw(c, CARD_POMMEL_STRIKE, 0);
        fx_discard(c, CARD_WILD_STRIKE, 0);
        fx_exhaust(c, CARD_STRIKE, 0);
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->mon[0].hp, upg ? 79 : 84);
    }
}
END_TEST

START_TEST(pommel_strike_and_shrug_draw) {
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    for (int i = 0; i < 5; i++)
        fx_draw(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_POMMEL_STRIKE, 1);
    fx_hand(c, CARD_SHRUG_IT_OFF, 0);
    FX_PLAY(&s, 0, 0); /* Pommel Strike+ draws 2 */
    ck_assert_int_eq(c->hand_n, 3);
    ck_assert_int_eq(c->draw_n, 3);
    FX_PLAY(&s, 0, SF_NO_TARGET); /* Shrug It Off draws 1 */
    ck_assert_int_eq(c->hand_n, 3);
    ck_assert_int_eq(c->draw_n, 2);
}
END_TEST

START_TEST(wild_strike_and_reckless_charge_insert_below_the_top) {
    /* addToRandomSpot: index random(size-1) of the pile before insertion,
     * so the known top card stays on top and the pile grows by one. */
    for (int which = 0; which < 2; which++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 99);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_draw(c, CARD_DEFEND, 0);
        fx_draw(c, CARD_BASH, 0);
        fx_draw(c, CARD_STRIKE, 1); /* top */
        c->draw_known = 1;
        fx_hand(c, which ? CARD_RECKLESS_CHARGE : CARD_WILD_STRIKE, 0);
        uint32_t counter = c->rng[SF_STREAM_CARD_RANDOM].counter;
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->draw_n, 4);
        ck_assert_int_eq(c->draw[3].id, CARD_STRIKE);
        ck_assert_int_eq(fx_count(c->draw, 4, which ? CARD_DAZED : CARD_WOUND), 1);
        ck_assert_uint_eq(c->rng[SF_STREAM_CARD_RANDOM].counter, counter + 1);
        ck_assert_int_eq(c->draw_known, 1);
    }
}
END_TEST

START_TEST(wild_strike_into_empty_draw_pile_spends_no_rng) {
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_WILD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->draw_n, 1);
    ck_assert_int_eq(c->draw[0].id, CARD_WOUND);
    ck_assert_uint_eq(c->rng[SF_STREAM_CARD_RANDOM].counter, 0);
}
END_TEST

START_TEST(dropkick_needs_vulnerable_when_played) {
    /* Without Vulnerable: no energy, no draw. With it: +1 energy and a draw,
     * even when the hit kills the target's last HP... here it does not. */
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_draw(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_DROPKICK, 0);
    fx_hand(c, CARD_DROPKICK, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->energy, 2);
    ck_assert_int_eq(c->hand_n, 1);
    c->mon[0].pw[PW_VULN] = 1;
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->energy, 2);
    ck_assert_int_eq(c->hand_n, 1);
    ck_assert_int_eq(c->hand[0].id, CARD_DEFEND);
}
END_TEST

START_TEST(dropkick_killing_its_vulnerable_target_still_refunds) {
    /* DropkickAction checks Vulnerable before queueing its damage. Two
     * monsters so the fight goes on. */
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 5, MV_INCANTATION);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->mon[0].pw[PW_VULN] = 1;
    fx_draw(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_DROPKICK, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->n_mon, 1); /* dead slot compacted away */
    ck_assert_int_eq(c->energy, 3);
    ck_assert_int_eq(c->hand_n, 1);
}
END_TEST

START_TEST(hemokinesis_loses_hp_first_with_damage_fixed_at_play) {
    /* Rupture 1: Hemokinesis's 2 HP loss gives +1 Strength, but its damage
     * was computed at play: 15, not 16. The next Strike gets 6 + 1 = 7. */
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_RUPTURE] = 1;
    fx_hand(c, CARD_HEMOKINESIS, 0);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->hp, 78);
    ck_assert_int_eq(c->pw[PW_STR], 1);
    ck_assert_int_eq(c->mon[0].hp, 85);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 78);
}
END_TEST

START_TEST(pummel_and_feed_exhaust) {
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_PUMMEL, 0);
    fx_hand(c, CARD_FEED, 0);
    FX_PLAY(&s, 0, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->exhaust_n, 2);
    ck_assert_int_eq(c->discard_n, 0);
}
END_TEST

START_TEST(feed_kill_raises_max_hp_and_heals) {
    /* Feed 10 kills a 10-HP Cultist: +3 max HP and heal 3 (Feed+: 4). */
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 1);
        fx_mon(c, MON_CULTIST, 10, MV_INCANTATION);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        c->hp = 50;
        fx_hand(c, CARD_FEED, upg);
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->max_hp, upg ? 84 : 83);
        ck_assert_int_eq(c->hp, upg ? 54 : 53);
    }
}
END_TEST

START_TEST(rampage_grows_every_play) {
    /* Rampage 8 +5: 8, then 13, then 18 (Rampage+ +8: 8, 16). */
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 200, MV_INCANTATION);
    c->energy = 9;
    fx_hand(c, CARD_RAMPAGE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 192);
    ck_assert_int_eq(c->discard[0].misc, 5);
    c->hand[c->hand_n++] = c->discard[0];
    c->discard_n = 0;
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 179);
    c->hand[c->hand_n++] = c->discard[0];
    c->discard_n = 0;
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 161);
    /* upgraded: +8 */
    fx_hand(c, CARD_RAMPAGE, 1);
    c->discard_n = 0;
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->discard[0].misc, 8);
}
END_TEST

START_TEST(rampage_double_tap_copy_raises_the_original_too) {
    /* ModifyDamageAction raises every instance with the card's uuid: the
     * original hits 8, the copy 13, and the original ends at +10 (18). */
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 200, MV_INCANTATION);
    c->pw[PW_DOUBLE_TAP] = 1;
    fx_hand(c, CARD_RAMPAGE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 200 - 8 - 13);
    ck_assert_int_eq(c->discard_n, 1);
    ck_assert_int_eq(c->discard[0].misc, 10);
}
END_TEST

START_TEST(searing_blow_grows_with_each_upgrade) {
    /* 12 + n(n+7)/2: n=2 -> 21, n=3 -> 27. */
    int want[2] = {21, 27};
    for (int n = 2; n <= 3; n++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 1);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_SEARING_BLOW, n);
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->mon[0].hp, 100 - want[n - 2]);
    }
}
END_TEST

START_TEST(body_slam_uses_current_block) {
    /* 13 block, Strength 1: 13 + 1 = 14. */
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->block = 13;
    c->pw[PW_STR] = 1;
    fx_hand(c, CARD_BODY_SLAM, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 86);
}
END_TEST

START_TEST(sever_soul_exhausts_non_attacks_then_hits) {
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_SEVER_SOUL, 0);
    fx_hand(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_INFLAME, 0);
    fx_hand(c, CARD_WOUND, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 84);
    ck_assert_int_eq(c->hand_n, 1);
    ck_assert_int_eq(c->hand[0].id, CARD_STRIKE);
    ck_assert_int_eq(c->exhaust_n, 3);
}
END_TEST

START_TEST(fiend_fire_exhausts_hand_at_random_then_hits_per_card) {
    /* Four other cards: four random exhausts (cardRandomRng random(3),
     * random(2), random(1), random(0): four calls), then 4 hits of 7 (10),
     * and Fiend Fire exhausts itself: 5 cards in exhaust. */
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_FIEND_FIRE, upg);
        fx_hand(c, CARD_DEFEND, 0);
        fx_hand(c, CARD_STRIKE, 0);
        fx_hand(c, CARD_BASH, 0);
        fx_hand(c, CARD_WOUND, 0);
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->mon[0].hp, 100 - 4 * (upg ? 10 : 7));
        ck_assert_int_eq(c->hand_n, 0);
        ck_assert_int_eq(c->exhaust_n, 5);
        ck_assert_uint_eq(c->rng[SF_STREAM_CARD_RANDOM].counter, 4);
    }
}
END_TEST

START_TEST(sword_boomerang_hits_random_living_enemies) {
    /* 3 (4) hits of 3 at random targets (cardRandomRng, one call each).
     * Against one monster every hit lands on it: 9 (12). */
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_SWORD_BOOMERANG, upg);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->mon[0].hp, upg ? 88 : 91);
        ck_assert_uint_eq(c->rng[SF_STREAM_CARD_RANDOM].counter, upg ? 4 : 3);
    }
    /* Two monsters: the hits split between them, 9 damage in all. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_SWORD_BOOMERANG, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->mon[0].hp + c->mon[1].hp, 191);
}
END_TEST

START_TEST(whirlwind_hits_x_times_for_all_energy) {
    /* X = 3 energy: 5 (8) per hit to each of two monsters, 3 times. */
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_WHIRLWIND, upg);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->energy, 0);
        ck_assert_int_eq(c->mon[0].hp, 100 - 3 * (upg ? 8 : 5));
        ck_assert_int_eq(c->mon[1].hp, 100 - 3 * (upg ? 8 : 5));
    }
    /* X = 0 is legal and does nothing */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->energy = 0;
    fx_hand(c, CARD_WHIRLWIND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->mon[0].hp, 100);
    ck_assert_int_eq(c->discard_n, 1);
}
END_TEST

START_TEST(thunderclap_vulnerable_and_reaper_heal) {
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_mon(c, MON_CULTIST, 3, MV_INCANTATION);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->mon[0].block = 2;
    c->hp = 60;
    fx_hand(c, CARD_THUNDERCLAP, 0);
    fx_hand(c, CARD_REAPER, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    /* Thunderclap 4: 2 through the first one's block, kills the 3-HP one
     * (compacted), then 1 Vulnerable to the living */
    ck_assert_int_eq(c->n_mon, 2);
    ck_assert_int_eq(c->mon[0].hp, 98);
    ck_assert_int_eq(c->mon[1].hp, 96);
    ck_assert_int_eq(c->mon[0].pw[PW_VULN], 1);
    ck_assert_int_eq(c->mon[1].pw[PW_VULN], 1);
    /* Reaper 4 x 1.5 = 6 each, heals the 12 unblocked HP taken */
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->mon[0].hp, 92);
    ck_assert_int_eq(c->mon[1].hp, 90);
    ck_assert_int_eq(c->hp, 72);
    ck_assert_int_eq(c->exhaust_n, 1);
}
END_TEST

START_TEST(immolate_adds_a_burn_to_discard) {
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_IMMOLATE, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(fx_count(c->discard, c->discard_n, CARD_BURN), 1);
    ck_assert_int_eq(fx_count(c->discard, c->discard_n, CARD_IMMOLATE), 1);
}
END_TEST

START_TEST(blood_for_blood_cost_drops_per_hp_loss_event) {
    /* Two HP-loss events (a Bloodletting and a monster hit) take Blood for
     * Blood from 4 to 2 in hand, draw and discard, not in exhaust. A copy
     * made now (Infernal Blade-style make) starts at 4 - 2 = 2; upgrading a
     * reduced copy takes 1 more off (2 -> 1); an unreduced one goes 4 -> 3. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_JAW_WORM, 100, MV_CHOMP);
    fx_hand(c, CARD_BLOOD_FOR_BLOOD, 0);
    fx_hand(c, CARD_BLOODLETTING, 0);
    fx_draw(c, CARD_BLOOD_FOR_BLOOD, 0);
    fx_discard(c, CARD_BLOOD_FOR_BLOOD, 0);
    fx_exhaust(c, CARD_BLOOD_FOR_BLOOD, 0);
    FX_PLAY(&s, 1, SF_NO_TARGET); /* Bloodletting: -3 HP */
    ck_assert_int_eq(c->hand[0].cost, 3);
    ck_assert_int_eq(c->draw[0].cost, 3);
    ck_assert_int_eq(c->discard[0].cost, 3);
    ck_assert_int_eq(c->exhaust[0].cost, 4);
    sf_card made = combat_make_card(c, CARD_BLOOD_FOR_BLOOD, 0);
    ck_assert_int_eq(made.cost, 3);
    combat_upgrade_card(&made);
    ck_assert_int_eq(made.cost, 2);
    sf_card fresh = {CARD_BLOOD_FOR_BLOOD, 0, 4, 0, 0};
    combat_upgrade_card(&fresh);
    ck_assert_int_eq(fresh.cost, 3);
    /* a fully blocked hit is no HP loss */
    c->block = 50;
    combat_damage_player(c, 11, DT_NORMAL, 0);
    ck_assert_int_eq(c->hand[0].cost, 3);
}
END_TEST

START_TEST(carnage_and_ghostly_armor_are_ethereal) {
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    for (int i = 0; i < 5; i++)
        fx_draw(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_CARNAGE, 0);
    fx_hand(c, CARD_GHOSTLY_ARMOR, 1);
    fx_hand(c, CARD_DAZED, 0);
    fx_hand(c, CARD_STRIKE, 0);
    FX_END(&s);
    ck_assert_int_eq(c->exhaust_n, 3);
    ck_assert_int_eq(c->discard_n, 1);
    ck_assert_int_eq(c->discard[0].id, CARD_STRIKE);
}
END_TEST

/* ------------------------------------------------------------------------
 * Skills
 * ---------------------------------------------------------------------- */

SF_TCASE(skills, 0);

START_TEST(battle_trance_draws_then_blocks_draws) {
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        for (int i = 0; i < 8; i++)
            fx_draw(c, CARD_STRIKE, 0);
        fx_hand(c, CARD_BATTLE_TRANCE, upg);
        fx_hand(c, CARD_POMMEL_STRIKE, 0);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->hand_n, 1 + (upg ? 4 : 3));
        ck_assert_int_eq(c->pw[PW_NO_DRAW], 1);
        FX_PLAY(&s, 0, 0); /* Pommel Strike's draw is blocked */
        ck_assert_int_eq(c->hand_n, upg ? 4 : 3);
    }
}
END_TEST

START_TEST(bloodletting_and_offering) {
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        for (int i = 0; i < 8; i++)
            fx_draw(c, CARD_STRIKE, 0);
        fx_hand(c, CARD_BLOODLETTING, upg);
        fx_hand(c, CARD_OFFERING, upg);
        FX_PLAY(&s, 0, SF_NO_TARGET); /* -3 HP, +2 (3) energy */
        ck_assert_int_eq(c->hp, 77);
        ck_assert_int_eq(c->energy, upg ? 6 : 5);
        FX_PLAY(&s, 0, SF_NO_TARGET); /* -6 HP, +2 energy, draw 3 (5), exhaust */
        ck_assert_int_eq(c->hp, 71);
        ck_assert_int_eq(c->energy, upg ? 8 : 7);
        ck_assert_int_eq(c->hand_n, upg ? 5 : 3);
        ck_assert_int_eq(c->exhaust_n, 1);
    }
}
END_TEST

START_TEST(seeing_red_and_double_tap) {
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_SEEING_RED, 1); /* cost 0 upgraded */
    fx_hand(c, CARD_DOUBLE_TAP, 1);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->energy, 5);
    ck_assert_int_eq(c->exhaust_n, 1);
    FX_PLAY(&s, 0, SF_NO_TARGET); /* Double Tap+: next 2 Attacks twice */
    ck_assert_int_eq(c->pw[PW_DOUBLE_TAP], 2);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 88);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 76);
    ck_assert_int_eq(c->pw[PW_DOUBLE_TAP], 0);
    ck_assert_int_eq(c->discard_n, 3); /* Double Tap and two Strikes; copies purged */
    ck_assert_int_eq(c->cards_played, 6);
}
END_TEST

START_TEST(double_tap_copy_fizzles_when_its_target_died) {
    /* The copy keeps the original target; with it dead the copy is not
     * played (no retarget), so the second Cultist is untouched. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 6, MV_INCANTATION);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_DOUBLE_TAP] = 1;
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->n_mon, 1);
    ck_assert_int_eq(c->mon[0].hp, 100);
    ck_assert_int_eq(c->cards_played, 1);
}
END_TEST

START_TEST(double_tap_copies_whirlwind_with_the_same_x) {
    /* Whirlwind with X = 2, copied: 4 hits of 5; energy 0. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_DOUBLE_TAP] = 1;
    c->energy = 2;
    fx_hand(c, CARD_WHIRLWIND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->mon[0].hp, 80);
    ck_assert_int_eq(c->energy, 0);
}
END_TEST

START_TEST(double_tap_perfected_strike_copy_does_not_count_itself) {
    /* Original: itself + 1 Strike in hand = 2 strikes: 6 + 4 = 10. The
     * copy is in limbo; the original is in the discard pile by then:
     * Strike + original = 2: 10 again. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_DOUBLE_TAP] = 1;
    fx_hand(c, CARD_PERFECTED_STRIKE, 0);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 80);
}
END_TEST

START_TEST(flex_strength_lasts_the_turn) {
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_FLEX, upg);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->pw[PW_STR], upg ? 4 : 2);
        FX_END(&s);
        ck_assert_int_eq(c->pw[PW_STR], 0);
    }
}
END_TEST

START_TEST(flex_with_artifact_keeps_its_strength) {
    /* Artifact eats Flex's LoseStrength (a debuff): +2 Strength for good. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_ARTIFACT] = 1;
    fx_hand(c, CARD_FLEX, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_ARTIFACT], 0);
    FX_END(&s);
    ck_assert_int_eq(c->pw[PW_STR], 2);
}
END_TEST

START_TEST(disarm_intimidate_shockwave) {
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_mon(c, MON_SENTRY, 40, MV_BOLT);
        c->mon[1].pw[PW_ARTIFACT] = 1;
        fx_hand(c, CARD_DISARM, upg);
        fx_hand(c, CARD_INTIMIDATE, upg);
        fx_hand(c, CARD_SHOCKWAVE, upg);
        FX_PLAY(&s, 0, 0); /* -2 (-3) Strength */
        ck_assert_int_eq(c->mon[0].pw[PW_STR], upg ? -3 : -2);
        FX_PLAY(&s, 0, SF_NO_TARGET); /* 1 (2) Weak to all; Artifact eats one */
        ck_assert_int_eq(c->mon[0].pw[PW_WEAK], upg ? 2 : 1);
        ck_assert_int_eq(c->mon[1].pw[PW_WEAK], 0);
        ck_assert_int_eq(c->mon[1].pw[PW_ARTIFACT], 0);
        FX_PLAY(&s, 0, SF_NO_TARGET); /* 3 (5) Weak and Vulnerable to all */
        ck_assert_int_eq(c->mon[0].pw[PW_WEAK], upg ? 7 : 4);
        ck_assert_int_eq(c->mon[1].pw[PW_VULN], upg ? 5 : 3);
        ck_assert_int_eq(c->exhaust_n, 3);
    }
}
END_TEST

START_TEST(entrench_doubles_block) {
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->block = 7;
    fx_hand(c, CARD_ENTRENCH, 0);
    fx_hand(c, CARD_ENTRENCH, 1);
    FX_PLAY(&s, 0, SF_NO_TARGET); /* cost 2 */
    ck_assert_int_eq(c->block, 14);
    ck_assert_int_eq(c->energy, 1);
    FX_PLAY(&s, 0, SF_NO_TARGET); /* cost 1 */
    ck_assert_int_eq(c->block, 28);
}
END_TEST

START_TEST(rage_blocks_per_attack_after_it) {
    /* Rage 3 (5): each later Attack this turn gives 3 (5) block; gone at end of turn. */
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_RAGE, upg);
        fx_hand(c, CARD_STRIKE, 0);
        fx_hand(c, CARD_DEFEND, 0);
        fx_hand(c, CARD_STRIKE, 0);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->energy, 3);
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->block, upg ? 5 : 3);
        FX_PLAY(&s, 0, SF_NO_TARGET); /* Defend: 5, no Rage */
        ck_assert_int_eq(c->block, upg ? 10 : 8);
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->block, upg ? 15 : 11);
        FX_END(&s);
        ck_assert_int_eq(c->pw[PW_RAGE], 0);
    }
}
END_TEST

START_TEST(spot_weakness_needs_an_attack_intent) {
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_mon(c, MON_JAW_WORM, 100, MV_CHOMP);
        fx_hand(c, CARD_SPOT_WEAKNESS, upg);
        fx_hand(c, CARD_SPOT_WEAKNESS, upg);
        FX_PLAY(&s, 0, 0); /* Incantation: no */
        ck_assert_int_eq(c->pw[PW_STR], 0);
        FX_PLAY(&s, 0, 1); /* Chomp: +3 (4) */
        ck_assert_int_eq(c->pw[PW_STR], upg ? 4 : 3);
    }
}
END_TEST

START_TEST(limit_break_doubles_strength_and_exhausts_unless_upgraded) {
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        c->pw[PW_STR] = 3;
        fx_hand(c, CARD_LIMIT_BREAK, upg);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->pw[PW_STR], 6);
        ck_assert_int_eq(c->exhaust_n, upg ? 0 : 1);
        ck_assert_int_eq(c->discard_n, upg ? 1 : 0);
    }
    /* negative Strength doubles too, unless Artifact eats it */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_STR] = -2;
    fx_hand(c, CARD_LIMIT_BREAK, 1);
    fx_hand(c, CARD_LIMIT_BREAK, 1);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_STR], -4);
    c->pw[PW_ARTIFACT] = 1;
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_STR], -4);
    ck_assert_int_eq(c->pw[PW_ARTIFACT], 0);
}
END_TEST

START_TEST(infernal_blade_makes_a_free_attack_for_this_turn) {
    /* cost 1 (0); one cardRandomRng call over the 28-card Attack pool; the
     * made card costs 0 until the end of turn, then its own cost. */
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 3 + (uint64_t)upg);
        fx_mon(c, MON_CULTIST, 300, MV_INCANTATION);
        fx_hand(c, CARD_INFERNAL_BLADE, upg);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->energy, upg ? 3 : 2);
        ck_assert_int_eq(c->exhaust_n, 1);
        ck_assert_int_eq(c->hand_n, 1);
        ck_assert_int_eq(sf_cards[c->hand[0].id].type, CT_ATTACK);
        ck_assert(!(sf_cards[c->hand[0].id].flags & CD_HEALING));
        int cost = combat_card_cost(c, &c->hand[0]);
        ck_assert(cost == 0 || cost == COST_X);
        ck_assert_uint_eq(c->rng[SF_STREAM_CARD_RANDOM].counter, 1);
        ck_assert_int_eq(c->cards_created, 1);
        FX_END(&s);
        /* discarded at end of turn, then reshuffled and drawn back: the
         * "free this turn" mark is gone */
        ck_assert_int_eq(c->hand_n, 1);
        ck_assert_int_eq(c->hand[0].flags & CF_FREE_TURN, 0);
    }
}
END_TEST

START_TEST(infernal_blade_pool_follows_the_game_order) {
    /* Index 0 of the pool is Sword Boomerang, 13 Anger, 14 Uppercut, 27
     * Immolate (initializeCardPools order, docs/engine.md). Force the roll
     * by choosing seeds whose first random(27) gives those indices. */
    static const struct {
        int index, card;
    } want[] = {{0, CARD_SWORD_BOOMERANG},
                {13, CARD_ANGER},
                {14, CARD_UPPERCUT},
                {25, CARD_BLUDGEON},
                {27, CARD_IMMOLATE}};
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        int found = 0;
        for (uint64_t seed = 1; seed < 100000 && !found; seed++) {
            sf_rng r;
            sf_rng_seed(&r, seed);
            if (sf_rng_random(&r, 27) != want[w].index)
                continue;
            sf_state s;
            sf_combat *c = fx_new(&s, 0);
            sf_rng_seed(&c->rng[SF_STREAM_CARD_RANDOM], seed);
            ck_assert_int_eq(combat_random_attack(c), want[w].card);
            found = 1;
        }
        ck_assert(found);
    }
}
END_TEST

START_TEST(power_through_wounds_first_then_block) {
    /* hand of 9 + Power Through in limbo: one Wound fits, one goes to
     * discard; 15 block. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_POWER_THROUGH, 0);
    for (int i = 0; i < 9; i++)
        fx_hand(c, CARD_DEFEND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hand_n, 10);
    ck_assert_int_eq(c->hand[9].id, CARD_WOUND);
    ck_assert_int_eq(fx_count(c->discard, c->discard_n, CARD_WOUND), 1);
    ck_assert_int_eq(c->block, 15);
    ck_assert_int_eq(c->cards_created, 2);
}
END_TEST

START_TEST(sentinel_gives_energy_when_exhausted) {
    /* Sentinel exhausted by True Grit+ (choice) gives 2 (Sentinel+ 3). */
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_TRUE_GRIT, 1);
        fx_hand(c, CARD_SENTINEL, upg);
        FX_PLAY(&s, 0, SF_NO_TARGET); /* one card left: exhausted at once */
        ck_assert_int_eq(c->energy, 2 + (upg ? 3 : 2));
    }
}
END_TEST

START_TEST(second_wind_blocks_per_non_attack) {
    /* Second Wind 5 (7): three non-attacks exhausted (Defend, Wound,
     * Inflame), Strike kept: 3 x 5 = 15 (21). With Dexterity 1: 3 x 6. */
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_SECOND_WIND, upg);
        fx_hand(c, CARD_DEFEND, 0);
        fx_hand(c, CARD_STRIKE, 0);
        fx_hand(c, CARD_WOUND, 0);
        fx_hand(c, CARD_INFLAME, 0);
        c->pw[PW_DEX] = 1;
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->block, 3 * (upg ? 8 : 6));
        ck_assert_int_eq(c->hand_n, 1);
        ck_assert_int_eq(c->exhaust_n, 3);
    }
}
END_TEST

START_TEST(havoc_plays_the_top_card_and_exhausts_it) {
    /* Havoc (cost 1, Havoc+ 0): the top card (Strike+, 9) is played at the
     * only monster for free and exhausted; Havoc goes to discard. */
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_draw(c, CARD_DEFEND, 0);
        fx_draw(c, CARD_STRIKE, 1);
        fx_hand(c, CARD_HAVOC, upg);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->energy, upg ? 3 : 2);
        ck_assert_int_eq(c->mon[0].hp, 91);
        ck_assert_int_eq(c->exhaust_n, 1);
        ck_assert_int_eq(c->exhaust[0].id, CARD_STRIKE);
        ck_assert_int_eq(c->discard_n, 1);
        ck_assert_int_eq(c->discard[0].id, CARD_HAVOC);
        ck_assert_int_eq(c->draw_n, 1);
        ck_assert_int_eq(c->cards_played, 2);
    }
}
END_TEST

START_TEST(havoc_reshuffles_an_empty_draw_pile_and_exhausts_unplayables) {
    /* Draw pile empty, discard holds one Wound: reshuffle (shuffleRng), the
     * Wound cannot be played and is exhausted without effect. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_discard(c, CARD_WOUND, 0);
    fx_hand(c, CARD_HAVOC, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_uint_eq(c->rng[SF_STREAM_SHUFFLE].counter, 1);
    ck_assert_int_eq(c->exhaust_n, 1);
    ck_assert_int_eq(c->exhaust[0].id, CARD_WOUND);
    ck_assert_int_eq(c->discard_n, 1);
    ck_assert_int_eq(c->cards_played, 1);
}
END_TEST

START_TEST(havoc_x_cost_card_uses_all_energy_as_x_for_free) {
    /* Whirlwind played by Havoc: X = the energy left (2), no energy spent. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_draw(c, CARD_WHIRLWIND, 0);
    fx_hand(c, CARD_HAVOC, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->mon[0].hp, 90);
    ck_assert_int_eq(c->energy, 2);
}
END_TEST

START_TEST(havoc_clash_fails_with_a_skill_in_hand) {
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_draw(c, CARD_CLASH, 0);
    fx_hand(c, CARD_HAVOC, 0);
    fx_hand(c, CARD_DEFEND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->mon[0].hp, 100);
    ck_assert_int_eq(c->exhaust[0].id, CARD_CLASH);
}
END_TEST

/* ------------------------------------------------------------------------
 * Choice screens
 * ---------------------------------------------------------------------- */

SF_TCASE(choices, 0);

START_TEST(armaments_upgrades_a_chosen_card_and_regroups_the_hand) {
    /* Hand after Armaments leaves it: Strike, Wound, Bash, Defend+. Eligible
     * (canUpgrade): Strike, Bash. Choosing Bash (option = hand index 2): the
     * game leaves the eligible cards not chosen, puts the chosen one back on
     * top, then the ineligible ones: Strike, Bash+, Wound, Defend+. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_ARMAMENTS, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_WOUND, 0);
    fx_hand(c, CARD_BASH, 0);
    fx_hand(c, CARD_DEFEND, 1);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->phase, PH_CHOICE);
    sf_action acts[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(acts[0].index, 0);
    ck_assert_int_eq(acts[1].index, 2);
    FX_CHOOSE(&s, 2);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->hand_n, 4);
    ck_assert_int_eq(c->hand[0].id, CARD_STRIKE);
    ck_assert_int_eq(c->hand[1].id, CARD_BASH);
    ck_assert_int_eq(c->hand[1].upg, 1);
    ck_assert_int_eq(c->hand[2].id, CARD_WOUND);
    ck_assert_int_eq(c->hand[3].id, CARD_DEFEND);
    ck_assert_int_eq(c->block, 5);
}
END_TEST

START_TEST(armaments_one_eligible_card_is_upgraded_in_place) {
    /* Burn is a status: canUpgrade() is false for it. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_ARMAMENTS, 0);
    fx_hand(c, CARD_BURN, 0);
    fx_hand(c, CARD_HAVOC, 0);
    fx_hand(c, CARD_DEFEND, 1);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->hand[0].id, CARD_BURN);
    ck_assert_int_eq(c->hand[0].upg, 0);
    ck_assert_int_eq(c->hand[1].id, CARD_HAVOC);
    ck_assert_int_eq(c->hand[1].upg, 1);
    ck_assert_int_eq(c->hand[1].cost, 0); /* Havoc+ costs 0 */
}
END_TEST

START_TEST(armaments_identical_options_collapse_to_one_screen_pick) {
    /* Two unupgraded Strikes and a Wound: one distinct option; the engine
     * resolves it, with the screen's order: Strike, Strike+, Wound. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_ARMAMENTS, 0);
    fx_hand(c, CARD_WOUND, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->hand[0].upg, 0);
    ck_assert_int_eq(c->hand[1].upg, 1);
    ck_assert_int_eq(c->hand[2].id, CARD_WOUND);
}
END_TEST

START_TEST(armaments_plus_upgrades_every_upgradable_card) {
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->hp_losses = 1;
    fx_hand(c, CARD_ARMAMENTS, 1);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_BURN, 0);
    fx_hand(c, CARD_SEARING_BLOW, 1);
    fx_hand(c, CARD_BLOOD_FOR_BLOOD, 0); /* cost 4 - 1 = 3 */
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hand[0].upg, 1);
    ck_assert_int_eq(c->hand[1].upg, 0); /* Burn: not upgradable */
    ck_assert_int_eq(c->hand[2].upg, 2); /* Searing Blow: again */
    ck_assert_int_eq(c->hand[3].upg, 1);
    ck_assert_int_eq(c->hand[3].cost, 2); /* reduced copy: 3 -> 2 */
}
END_TEST

START_TEST(headbutt_puts_a_chosen_discard_card_on_top) {
    /* Discard options are numbered in sorted (canonical) card order. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_discard(c, CARD_DEFEND, 0);
    fx_discard(c, CARD_BASH, 0);
    fx_discard(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_HEADBUTT, 1);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 88);
    ck_assert_int_eq(c->phase, PH_CHOICE);
    uint8_t opts[SF_MAX_PILE];
    sf_card cards[SF_MAX_PILE];
    int n = combat_choice_options(c, CH_HEADBUTT, opts, cards);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(cards[0].id, CARD_STRIKE); /* card ids: Strike 1, Defend 2, Bash 3 */
    ck_assert_int_eq(cards[2].id, CARD_BASH);
    FX_CHOOSE(&s, 2);
    ck_assert_int_eq(c->draw_n, 1);
    ck_assert_int_eq(c->draw[0].id, CARD_BASH);
    ck_assert_int_eq(c->draw_known, 1);
    ck_assert_int_eq(c->discard_n, 3); /* Defend, Strike, Headbutt */
}
END_TEST

START_TEST(headbutt_single_discard_card_needs_no_choice) {
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_discard(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_HEADBUTT, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->draw[0].id, CARD_DEFEND);
    ck_assert_int_eq(c->discard_n, 1);
    ck_assert_int_eq(c->discard[0].id, CARD_HEADBUTT);
}
END_TEST

START_TEST(true_grit_random_exhaust_and_upgraded_choice) {
    /* Base: one random card (cardRandomRng) of a 3-card hand; with one card
     * it is exhausted with no random call. Upgraded: a choice. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_TRUE_GRIT, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_BASH, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hand_n, 2);
    ck_assert_int_eq(c->exhaust_n, 1);
    ck_assert_uint_eq(c->rng[SF_STREAM_CARD_RANDOM].counter, 1);

    c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_TRUE_GRIT, 0);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hand_n, 0);
    ck_assert_int_eq(c->exhaust[0].id, CARD_STRIKE);
    ck_assert_uint_eq(c->rng[SF_STREAM_CARD_RANDOM].counter, 0);

    c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_TRUE_GRIT, 1);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_WOUND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->phase, PH_CHOICE);
    FX_CHOOSE(&s, 1); /* the Wound (hand position 1) */
    ck_assert_int_eq(c->hand_n, 1);
    ck_assert_int_eq(c->hand[0].id, CARD_STRIKE);
    ck_assert_int_eq(c->exhaust[0].id, CARD_WOUND);
    ck_assert_int_eq(c->block, 9);
}
END_TEST

START_TEST(warcry_draws_then_puts_a_card_on_top) {
    /* Warcry+ draws 2 (Bash, Defend), then one chosen hand card goes on top
     * (known); Warcry exhausts. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_draw(c, CARD_DEFEND, 0);
    fx_draw(c, CARD_BASH, 0);
    fx_hand(c, CARD_WARCRY, 1);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->phase, PH_CHOICE);
    ck_assert_int_eq(c->hand_n, 3);
    FX_CHOOSE(&s, 1); /* hand: Strike, Bash, Defend -> Bash on top */
    ck_assert_int_eq(c->draw_n, 1);
    ck_assert_int_eq(c->draw[0].id, CARD_BASH);
    ck_assert_int_eq(c->draw_known, 1);
    ck_assert_int_eq(c->exhaust_n, 1);
}
END_TEST

START_TEST(warcry_with_one_card_spends_a_card_random_call) {
    /* PutOnDeckAction moves the single card with getRandomCard(cardRandomRng). */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_draw(c, CARD_BASH, 0);
    fx_hand(c, CARD_WARCRY, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->hand_n, 0);
    ck_assert_int_eq(c->draw[0].id, CARD_BASH);
    ck_assert_uint_eq(c->rng[SF_STREAM_CARD_RANDOM].counter, 1);
}
END_TEST

START_TEST(burning_pact_exhausts_a_chosen_card_then_draws) {
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        for (int i = 0; i < 4; i++)
            fx_draw(c, CARD_STRIKE, 0);
        fx_hand(c, CARD_BURNING_PACT, upg);
        fx_hand(c, CARD_DEFEND, 0);
        fx_hand(c, CARD_WOUND, 0);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        FX_CHOOSE(&s, 1);
        ck_assert_int_eq(c->exhaust[0].id, CARD_WOUND);
        ck_assert_int_eq(c->hand_n, 1 + (upg ? 3 : 2));
    }
}
END_TEST

START_TEST(dual_wield_copies_and_regroups) {
    /* Hand: Strike, Defend, Inflame, Bash; eligible (Attack or Power):
     * Strike, Inflame, Bash. Choosing Inflame (index 2) with Dual Wield+:
     * Strike, Bash (eligible not chosen), Defend (set aside), then Inflame
     * and 2 copies. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_DUAL_WIELD, 1);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_INFLAME, 0);
    fx_hand(c, CARD_BASH, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->phase, PH_CHOICE);
    FX_CHOOSE(&s, 2);
    static const int want[6] = {CARD_STRIKE,  CARD_BASH,    CARD_DEFEND,
                                CARD_INFLAME, CARD_INFLAME, CARD_INFLAME};
    ck_assert_int_eq(c->hand_n, 6);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(c->hand[i].id, want[i]);
    ck_assert_int_eq(c->cards_created, 2);
}
END_TEST

START_TEST(dual_wield_single_attack_copies_in_place) {
    /* one eligible card: copied without a screen, original stays first */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_DUAL_WIELD, 0);
    fx_hand(c, CARD_STRIKE, 1);
    fx_hand(c, CARD_DEFEND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->hand_n, 3);
    ck_assert_int_eq(c->hand[0].id, CARD_STRIKE);
    ck_assert_int_eq(c->hand[1].id, CARD_DEFEND);
    ck_assert_int_eq(c->hand[2].id, CARD_STRIKE);
    ck_assert_int_eq(c->hand[2].upg, 1);
}
END_TEST

START_TEST(exhume_returns_a_chosen_exhausted_card) {
    /* Exhume cannot pick another Exhume; one eligible card comes back at
     * once; with a full hand nothing happens. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_exhaust(c, CARD_EXHUME, 0);
    fx_exhaust(c, CARD_OFFERING, 0);
    fx_hand(c, CARD_EXHUME, 1);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->energy, 3);
    ck_assert_int_eq(c->hand_n, 1);
    ck_assert_int_eq(c->hand[0].id, CARD_OFFERING);
    ck_assert_int_eq(c->exhaust_n, 2); /* old Exhume and this one */

    c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_exhaust(c, CARD_OFFERING, 0);
    fx_exhaust(c, CARD_IMPERVIOUS, 0);
    fx_hand(c, CARD_EXHUME, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->phase, PH_CHOICE);
    FX_CHOOSE(&s, 1); /* options in card order: Impervious, Offering */
    ck_assert_int_eq(c->hand_n, 1);
    ck_assert_int_eq(c->hand[0].id, CARD_OFFERING);
}
END_TEST

START_TEST(exhume_with_a_full_hand_does_nothing) {
    /* Corruption + Dark Embrace: Havoc (free, exhausted) draws one card
     * through Dark Embrace before the card it took from the top plays; that
     * fills the hand to 10, so the Exhume Havoc plays finds a full hand and
     * returns nothing (ExhumeAction). Offering stays exhausted. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_CORRUPTION] = 1;
    c->pw[PW_DARK_EMBRACE] = 1;
    fx_exhaust(c, CARD_OFFERING, 0);
    fx_draw(c, CARD_STRIKE, 0);
    fx_draw(c, CARD_EXHUME, 0); /* top */
    fx_hand(c, CARD_HAVOC, 0);
    for (int i = 0; i < 9; i++)
        fx_hand(c, CARD_DEFEND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hand_n, 10);
    ck_assert_int_eq(c->hand[9].id, CARD_STRIKE);
    ck_assert_int_eq(fx_count(c->exhaust, c->exhaust_n, CARD_OFFERING), 1);
    ck_assert_int_eq(fx_count(c->exhaust, c->exhaust_n, CARD_EXHUME), 1);
    ck_assert_int_eq(fx_count(c->exhaust, c->exhaust_n, CARD_HAVOC), 1);
}
END_TEST

START_TEST(choice_auto_resolves_when_zero_or_one_option) {
    /* Burning Pact on an empty hand still draws; Exhume with an empty
     * exhaust pile does nothing; Dual Wield with no Attack/Power does
     * nothing. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_draw(c, CARD_STRIKE, 0);
    fx_draw(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_BURNING_PACT, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hand_n, 2);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    fx_hand(c, CARD_EXHUME, 0);
    FX_PLAY(&s, 2, SF_NO_TARGET);
    ck_assert_int_eq(c->hand_n, 2);
    c->hand_n = 0;
    fx_hand(c, CARD_DUAL_WIELD, 0);
    fx_hand(c, CARD_DEFEND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hand_n, 1);
    ck_assert_int_eq(c->phase, PH_PLAYER);
}
END_TEST

/* ------------------------------------------------------------------------
 * Powers
 * ---------------------------------------------------------------------- */

SF_TCASE(powers, 0);

START_TEST(inflame_demon_form_and_metallicize) {
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->energy = 10;
    fx_hand(c, CARD_INFLAME, 1);     /* +3 Str */
    fx_hand(c, CARD_DEMON_FORM, 0);  /* +2 Str after each turn-start draw */
    fx_hand(c, CARD_METALLICIZE, 1); /* 4 block at end of turn */
    FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_STR], 3);
    ck_assert_int_eq(c->cards_removed, 3);
    ck_assert_int_eq(c->discard_n + c->exhaust_n, 0); /* powers leave play */
    c->mon[0].move = MV_DARK_STRIKE;                  /* 6 + 0 Str */
    FX_END(&s);
    /* Metallicize 4 absorbed 4 of the 6; Demon Form at turn 2: 3 + 2 */
    ck_assert_int_eq(c->hp, 78);
    ck_assert_int_eq(c->pw[PW_STR], 5);
}
END_TEST

START_TEST(barricade_keeps_block_across_turns) {
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_BARRICADE, 1); /* cost 2 */
    fx_hand(c, CARD_DEFEND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->energy, 1);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_END(&s);
    ck_assert_int_eq(c->block, 5);
}
END_TEST

START_TEST(berserk_vulnerable_ticks_the_same_round_and_gives_energy) {
    /* Berserk: 2 (1) Vulnerable on yourself (player-applied: ticks at this
     * end of round), +1 energy at each later turn start. */
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_BERSERK, upg);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->pw[PW_VULN], upg ? 1 : 2);
        FX_END(&s);
        ck_assert_int_eq(c->pw[PW_VULN], upg ? 0 : 1);
        ck_assert_int_eq(c->energy, 4);
    }
    /* Artifact eats the self-applied Vulnerable */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_ARTIFACT] = 1;
    fx_hand(c, CARD_BERSERK, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_VULN], 0);
    ck_assert_int_eq(c->pw[PW_ARTIFACT], 0);
}
END_TEST

START_TEST(brutality_draws_and_loses_hp_after_the_turn_draw) {
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    for (int i = 0; i < 8; i++)
        fx_draw(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_BRUTALITY, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_END(&s);
    ck_assert_int_eq(c->hand_n, 6);
    ck_assert_int_eq(c->hp, 79);
    ck_assert_int_eq(c->hp_losses, 1);
}
END_TEST

START_TEST(corruption_makes_skills_free_and_exhausts_them) {
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_CORRUPTION, 1); /* cost 2 */
    fx_hand(c, CARD_IMPERVIOUS, 0);
    fx_hand(c, CARD_DEFEND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->energy, 1);
    ck_assert_int_eq(combat_card_cost(c, &c->hand[0]), 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->energy, 1);
    ck_assert_int_eq(c->block, 35);
    ck_assert_int_eq(c->exhaust_n, 2);
}
END_TEST

START_TEST(feel_no_pain_and_dark_embrace_trigger_after_the_card) {
    /* Second Wind exhausts Defend and Wound with FNP 3 and Dark Embrace:
     * the draws come after Second Wind has finished, so the drawn Defend is
     * not exhausted by it; block 2 x 5 + 2 x 3 = 16. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_FNP] = 3;
    c->pw[PW_DARK_EMBRACE] = 1;
    fx_draw(c, CARD_DEFEND, 0);
    fx_draw(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_SECOND_WIND, 0);
    fx_hand(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_WOUND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->block, 16);
    ck_assert_int_eq(c->hand_n, 2);
    ck_assert_int_eq(c->exhaust_n, 2);
    ck_assert_int_eq(c->defer_n, 0);
}
END_TEST

START_TEST(dark_embrace_ethereal_exhaust_draws_after_discard) {
    /* End of turn: Dazed exhausts (Ethereal), the hand is discarded, then
     * Dark Embrace draws 1 card, which stays in hand into the next turn
     * (5 drawn then: 6 in hand). */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_DARK_EMBRACE] = 1;
    for (int i = 0; i < 7; i++)
        fx_draw(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DAZED, 0);
    fx_hand(c, CARD_DEFEND, 0);
    FX_END(&s);
    ck_assert_int_eq(c->hand_n, 6);
    ck_assert_int_eq(c->discard_n, 1);
    ck_assert_int_eq(c->exhaust_n, 1);
}
END_TEST

START_TEST(dark_embrace_and_burning_pact_order) {
    /* Burning Pact: exhaust (DE draw queued), its own draw 2, the card to
     * discard, then DE's draw: 3 Strikes in hand in draw order. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_DARK_EMBRACE] = 1;
    fx_draw(c, CARD_BASH, 0);
    fx_draw(c, CARD_STRIKE, 0);
    fx_draw(c, CARD_STRIKE, 1);
    fx_hand(c, CARD_BURNING_PACT, 0);
    fx_hand(c, CARD_WOUND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hand_n, 3);
    ck_assert_int_eq(c->hand[0].upg, 1);
    ck_assert_int_eq(c->hand[2].id, CARD_BASH);
}
END_TEST

START_TEST(combust_loses_hp_then_hits_all_as_thorns) {
    /* Combust 5 (7), stacking adds damage and +1 HP loss; THORNS ignore
     * Vulnerable, block absorbs. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->mon[0].pw[PW_VULN] = 2;
    c->mon[1].block = 3;
    fx_hand(c, CARD_COMBUST, 0);
    fx_hand(c, CARD_COMBUST, 1);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_COMBUST], 12);
    ck_assert_int_eq(c->pw[PW_COMBUST_HP], 2);
    FX_END(&s);
    ck_assert_int_eq(c->hp, 78);
    ck_assert_int_eq(c->mon[0].hp, 88);
    ck_assert_int_eq(c->mon[1].hp, 91);
}
END_TEST

START_TEST(rupture_counts_only_self_inflicted_hp_loss) {
    /* Rupture 2 (upgraded): Bloodletting +2 Str; a monster hit +0; a Burn
     * at end of turn (THORNS from the player) +2; Combust +2. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_JAW_WORM, 100, MV_CHOMP);
    fx_hand(c, CARD_RUPTURE, 1);
    fx_hand(c, CARD_BLOODLETTING, 0);
    fx_hand(c, CARD_BURN, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_STR], 2);
    FX_END(&s); /* Burn 2 (+2 Str), Chomp 11 (no Str) */
    ck_assert_int_eq(c->pw[PW_STR], 4);
    ck_assert_int_eq(c->hp, 80 - 3 - 2 - 11);
}
END_TEST

START_TEST(juggernaut_hits_a_random_enemy_after_block_gains) {
    /* Juggernaut 5 (7): each block gain deals 5 (7) THORNS to a random
     * living enemy (cardRandomRng), queued after the card. */
    for (int upg = 0; upg <= 1; upg++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_JUGGERNAUT, upg);
        fx_hand(c, CARD_DEFEND, 0);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->mon[0].hp, upg ? 93 : 95);
        ck_assert_uint_eq(c->rng[SF_STREAM_CARD_RANDOM].counter, 1);
    }
}
END_TEST

START_TEST(evolve_and_fire_breathing_on_status_draw) {
    /* Evolve 1, Fire Breathing 6: drawing a Wound deals 6 to all and draws 1
     * more (after the draw in progress). */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_EVOLVE, 0);
    fx_hand(c, CARD_FIRE_BREATHING, 0);
    fx_hand(c, CARD_SHRUG_IT_OFF, 0);
    fx_draw(c, CARD_STRIKE, 0);
    fx_draw(c, CARD_WOUND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hand_n, 2);
    ck_assert_int_eq(c->mon[0].hp, 94);
}
END_TEST

/* ------------------------------------------------------------------------
 * Status cards
 * ---------------------------------------------------------------------- */

SF_TCASE(status, 0);

START_TEST(slimed_costs_one_and_exhausts) {
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_SLIMED, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->energy, 2);
    ck_assert_int_eq(c->exhaust_n, 1);
}
END_TEST

START_TEST(dazed_wound_burn_are_unplayable) {
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_DAZED, 0);
    fx_hand(c, CARD_WOUND, 0);
    fx_hand(c, CARD_BURN, 1);
    sf_action acts[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(acts[0].kind, SF_ACT_END_TURN);
    ck_assert_int_eq(fx_apply(&s, SF_ACT_PLAY, 0, SF_NO_TARGET), SF_EINVAL);
}
END_TEST

START_TEST(burn_in_hand_deals_thorns_damage_at_end_of_turn) {
    /* Burn 2 and Burn+ 4 at end of turn: 6 THORNS, the 4 block takes 4;
     * both go to discard; no card counted as played. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->block = 4;
    for (int i = 0; i < 5; i++)
        fx_draw(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_BURN, 0);
    fx_hand(c, CARD_BURN, 1);
    FX_END(&s);
    ck_assert_int_eq(c->hp, 78);
    ck_assert_int_eq(fx_count(c->discard, c->discard_n, CARD_BURN), 2);
    ck_assert_int_eq(c->hp_losses, 1);
}
END_TEST

/* ------------------------------------------------------------------------
 * Colorless cards (cards/colorless/<Name>.java; game-rules §4 "Colorless
 * cards"). Numbers "X (Y)" = base (upgraded).
 * ---------------------------------------------------------------------- */

SF_TCASE(colorless, 0);

/* The next colorless card the card stream of `c` gives (one random(33)). */
static int next_colorless(sf_rng *r) {
    return fx_colorless_src[sf_rng_random(r, 33)];
}

START_TEST(colorless_random_card_walks_the_source_pool) {
    for (uint64_t seed = 1; seed < 200; seed++) {
        sf_state s;
        sf_combat *c = fx_new(&s, seed);
        sf_rng r = c->rng[SF_STREAM_CARD_RANDOM];
        ck_assert_int_eq(combat_random_colorless(c), next_colorless(&r));
        ck_assert_int_ne(combat_random_colorless(c), CARD_BANDAGE_UP);
    }
    /* every colorless card is in the list but Bandage Up (HEALING) */
    for (int id = CARD_FIRST_COLORLESS; id <= CARD_LAST_COLORLESS; id++) {
        int n = 0;
        for (int i = 0; i < 34; i++)
            n += fx_colorless_src[i] == id;
        ck_assert_int_eq(n, id != CARD_BANDAGE_UP);
    }
    ck_assert(sf_cards[CARD_BANDAGE_UP].flags & CD_HEALING);
}
END_TEST

START_TEST(swift_strike_and_flash_of_steel) {
    /* Swift Strike 7 (10), Flash of Steel 3 (6) and draw 1, both cost 0,
     * at a 100-HP Cultist: 93 then 90; 90 then 84. */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_draw(c, CARD_DEFEND, 0);
        fx_hand(c, CARD_SWIFT_STRIKE, u);
        fx_hand(c, CARD_FLASH_OF_STEEL, u);
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->mon[0].hp, u ? 90 : 93);
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->mon[0].hp, u ? 84 : 90);
        ck_assert_int_eq(c->hand_n, 1);
        ck_assert_int_eq(c->hand[0].id, CARD_DEFEND);
        ck_assert_int_eq(c->energy, 3);
        ck_assert_int_eq(c->discard_n, 2);
    }
    ck_assert(sf_cards[CARD_SWIFT_STRIKE].flags & CD_STRIKE);
}
END_TEST

START_TEST(dramatic_entrance_hits_all_exhausts_and_is_innate) {
    /* 8 (12) to each monster, cost 0, exhausts. */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_mon(c, MON_JAW_WORM, 100, MV_CHOMP);
        fx_hand(c, CARD_DRAMATIC_ENTRANCE, u);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->mon[0].hp, u ? 88 : 92);
        ck_assert_int_eq(c->mon[1].hp, u ? 88 : 92);
        ck_assert_int_eq(c->exhaust_n, 1);
        ck_assert_int_eq(c->energy, 3);
    }
    /* Innate: in the opening hand whatever the shuffle (Mind Blast too). */
    sf_fight_spec spec = fx_spec();
    ck_assert_int_eq(sf_deck_parse("Strike*9,Dramatic Entrance,Mind Blast", &spec, NULL), SF_OK);
    for (uint64_t seed = 1; seed <= 10; seed++) {
        sf_state s;
        spec.seed = seed;
        ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
        const sf_combat *c = ccombat_of(&s);
        ck_assert_int_eq(fx_count(c->hand, c->hand_n, CARD_DRAMATIC_ENTRANCE), 1);
        ck_assert_int_eq(fx_count(c->hand, c->hand_n, CARD_MIND_BLAST), 1);
    }
}
END_TEST

START_TEST(mind_blast_deals_the_draw_pile_size) {
    /* 7 cards in the draw pile, Strength 2: 9 damage; cost 2 (1). */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        for (int i = 0; i < 7; i++)
            fx_draw(c, CARD_DEFEND, 0);
        c->pw[PW_STR] = 2;
        fx_hand(c, CARD_MIND_BLAST, u);
        card_pred p;
        card_predict(c, &c->hand[0], CV_HAND, &p);
        ck_assert_int_eq(p.base, 7);
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->mon[0].hp, 91);
        ck_assert_int_eq(c->energy, u ? 2 : 1);
        ck_assert_int_eq(c->discard_n, 1);
    }
}
END_TEST

START_TEST(hand_of_greed_gains_gold_on_a_kill) {
    /* 20 (25) damage, cost 2; a kill gives 20 (25) gold (fx gold 99). */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, u ? 25 : 20, MV_INCANTATION);
        fx_mon(c, MON_JAW_WORM, 100, MV_CHOMP);
        fx_hand(c, CARD_HAND_OF_GREED, u);
        fx_hand(c, CARD_HAND_OF_GREED, u);
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->gold, u ? 124 : 119);
        ck_assert_int_eq(c->energy, 1);
        /* no kill: no gold (the Cultist's slot went, the Jaw Worm is 0) */
        c->energy = 2;
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->mon[0].hp, u ? 75 : 80);
        ck_assert_int_eq(c->gold, u ? 124 : 119);
    }
}
END_TEST

START_TEST(good_instincts_and_finesse_block) {
    /* Good Instincts 6 (9); Finesse 2 (4) and draw 1; Dexterity 1. */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        c->pw[PW_DEX] = 1;
        fx_draw(c, CARD_STRIKE, 0);
        fx_hand(c, CARD_GOOD_INSTINCTS, u);
        fx_hand(c, CARD_FINESSE, u);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->block, u ? 10 : 7);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->block, u ? 15 : 10);
        ck_assert_int_eq(c->hand_n, 1);
        ck_assert_int_eq(c->hand[0].id, CARD_STRIKE);
        ck_assert_int_eq(c->energy, 3);
    }
}
END_TEST

START_TEST(blind_and_trip_hit_every_monster_once_upgraded) {
    /* Blind: 2 Weak on the target (every monster upgraded); Trip: 2
     * Vulnerable the same way; both cost 0, neither exhausts. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_mon(c, MON_JAW_WORM, 100, MV_CHOMP);
    fx_hand(c, CARD_BLIND, 0);
    fx_hand(c, CARD_TRIP, 0);
    FX_PLAY(&s, 0, 1);
    FX_PLAY(&s, 0, 1);
    ck_assert_int_eq(c->mon[1].pw[PW_WEAK], 2);
    ck_assert_int_eq(c->mon[1].pw[PW_VULN], 2);
    ck_assert_int_eq(c->mon[0].pw[PW_WEAK] + c->mon[0].pw[PW_VULN], 0);
    ck_assert_int_eq(c->discard_n, 2);
    fx_hand(c, CARD_BLIND, 1);
    fx_hand(c, CARD_TRIP, 1);
    ck_assert_int_eq(card_target(&c->hand[0]), TGT_ALL);
    ck_assert_int_eq(fx_apply(&s, SF_ACT_PLAY, 0, 0), SF_EINVAL); /* no target now */
    FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->mon[0].pw[PW_WEAK], 2);
    ck_assert_int_eq(c->mon[0].pw[PW_VULN], 2);
    ck_assert_int_eq(c->mon[1].pw[PW_WEAK], 4);
    ck_assert_int_eq(c->mon[1].pw[PW_VULN], 4);
    ck_assert_int_eq(c->energy, 3);
}
END_TEST

START_TEST(dark_shackles_takes_strength_for_one_monster_turn) {
    /* -9 (-15) Strength, then Shackled gives it back at the end of the
     * monster's turn. Chomp 11 - 9 = 2 damage (11 - 15 < 0: none). */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_JAW_WORM, 100, MV_CHOMP);
        fx_hand(c, CARD_DARK_SHACKLES, u);
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->mon[0].pw[PW_STR], u ? -15 : -9);
        ck_assert_int_eq(c->mon[0].pw[PW_SHACKLED], u ? 15 : 9);
        ck_assert_int_eq(c->exhaust_n, 1);
        FX_END(&s);
        ck_assert_int_eq(c->hp, u ? 80 : 78);
        ck_assert_int_eq(c->mon[0].pw[PW_STR], 0);
        ck_assert_int_eq(c->mon[0].pw[PW_SHACKLED], 0);
    }
    /* Artifact, seen when the card is played: it eats the Strength loss and
     * no Shackled follows. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_JAW_WORM, 100, MV_CHOMP);
    c->mon[0].pw[PW_ARTIFACT] = 1;
    fx_hand(c, CARD_DARK_SHACKLES, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].pw[PW_ARTIFACT], 0);
    ck_assert_int_eq(c->mon[0].pw[PW_STR], 0);
    ck_assert_int_eq(c->mon[0].pw[PW_SHACKLED], 0);
}
END_TEST

START_TEST(deep_breath_shuffles_the_discard_in_and_draws) {
    /* Draw pile 1 card, discard 3: all 4 shuffled into the draw pile (two
     * shuffleRng longs: the discard's shuffle, then the whole pile's), then
     * draw 1 (2). */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_draw(c, CARD_STRIKE, 0);
        c->draw_known = 1;
        for (int i = 0; i < 3; i++)
            fx_discard(c, CARD_DEFEND, 0);
        fx_hand(c, CARD_DEEP_BREATH, u);
        uint32_t before = c->rng[SF_STREAM_SHUFFLE].counter;
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_uint_eq(c->rng[SF_STREAM_SHUFFLE].counter, before + 2);
        ck_assert_int_eq(c->hand_n, u ? 2 : 1);
        ck_assert_int_eq(c->draw_n, u ? 2 : 3);
        ck_assert_int_eq(c->draw_known, 0);
        ck_assert_int_eq(c->discard_n, 1); /* Deep Breath itself */
        ck_assert_int_eq(c->discard[0].id, CARD_DEEP_BREATH);
        ck_assert_int_eq(c->energy, 3);
    }
    /* An empty discard pile: no shuffle, just the draw. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_draw(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEEP_BREATH, 0);
    uint32_t before = c->rng[SF_STREAM_SHUFFLE].counter;
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_uint_eq(c->rng[SF_STREAM_SHUFFLE].counter, before);
    ck_assert_int_eq(c->hand[0].id, CARD_STRIKE);
}
END_TEST

START_TEST(discovery_offers_three_ironclad_cards) {
    /* DiscoveryAction(): three distinct returnTrulyRandomCardInCombat()
     * draws (any type); the pick costs 0 this turn. Discovery costs 1 and
     * exhausts (not upgraded). */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 9);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_DISCOVERY, u);
        sf_state copy = s;
        int want[3];
        for (int n = 0; n < 3;) {
            int id = combat_random_card(combat_of(&copy), -1);
            if ((n < 1 || want[0] != id) && (n < 2 || want[1] != id))
                want[n++] = id;
        }
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->phase, PH_CHOICE);
        ck_assert_int_eq(c->pending.kind, CH_DISCOVERY_CARD);
        ck_assert_int_eq(c->pending.active, 1);
        for (int i = 0; i < 3; i++)
            ck_assert_int_eq(c->pending.offer[i].id, want[i]);
        FX_CHOOSE(&s, 2);
        ck_assert_int_eq(c->phase, PH_PLAYER);
        ck_assert_int_eq(c->hand_n, 1);
        ck_assert_int_eq(c->hand[0].id, want[2]);
        ck_assert(c->hand[0].cost < 0 || combat_card_cost(c, &c->hand[0]) == 0);
        ck_assert_int_eq(c->energy, 2);
        ck_assert_int_eq(c->exhaust_n, u ? 0 : 1);
        ck_assert_int_eq(c->discard_n, u ? 1 : 0);
    }
}
END_TEST

START_TEST(enlightenment_caps_costs_at_one) {
    /* Bludgeon 3 and Bash 2 cost 1 this turn; Strike 1 and Whirlwind X
     * unchanged. Enlightenment+ makes it 1 for the combat too. */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_ENLIGHTENMENT, u);
        fx_hand(c, CARD_BLUDGEON, 0);
        fx_hand(c, CARD_BASH, 0);
        fx_hand(c, CARD_STRIKE, 0);
        fx_hand(c, CARD_WHIRLWIND, 0);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(combat_card_cost(c, &c->hand[0]), 1);
        ck_assert_int_eq(combat_card_cost(c, &c->hand[1]), 1);
        ck_assert_int_eq(combat_card_cost(c, &c->hand[2]), 1);
        ck_assert_int_eq(combat_card_cost(c, &c->hand[3]), COST_X);
        ck_assert_int_eq(c->hand[0].cost, u ? 1 : 3);
        FX_PLAY(&s, 0, 0); /* Bludgeon for 1 */
        ck_assert_int_eq(c->energy, 2);
        ck_assert_int_eq(c->mon[0].hp, 68);
        /* the turn ends: the turn's cost goes (the Bash is in the discard) */
        FX_END(&s);
        int i = c->discard_n - 1;
        while (i >= 0 && c->discard[i].id != CARD_BASH)
            i--;
        if (i >= 0) {
            ck_assert_int_eq(combat_card_cost(c, &c->discard[i]), u ? 1 : 2);
        } else {
            for (i = 0; c->hand[i].id != CARD_BASH; i++)
                ;
            ck_assert_int_eq(combat_card_cost(c, &c->hand[i]), u ? 1 : 2);
        }
    }
}
END_TEST

START_TEST(forethought_puts_a_card_under_the_draw_pile_free_once) {
    /* The chosen card goes to the bottom of the draw pile and is free until
     * played (its cost is above 0); it stays free across the turn's end. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_draw(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_FORETHOUGHT, 0);
    fx_hand(c, CARD_BLUDGEON, 0);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->pending.kind, CH_FORETHOUGHT);
    FX_CHOOSE(&s, 0); /* Bludgeon, hand position 0 */
    ck_assert_int_eq(c->draw_n, 2);
    ck_assert_int_eq(c->draw[0].id, CARD_BLUDGEON);
    ck_assert(c->draw[0].flags & CF_FREE_ONCE);
    ck_assert_int_eq(combat_card_cost(c, &c->draw[0]), 0);
    FX_END(&s); /* next turn: Defend, Bludgeon, Strike, Forethought drawn */
    int b = 0;
    while (c->hand[b].id != CARD_BLUDGEON)
        b++;
    ck_assert(c->hand[b].flags & CF_FREE_ONCE);
    int energy = c->energy;
    FX_PLAY(&s, b, 0);
    ck_assert_int_eq(c->energy, energy);
    ck_assert_int_eq(c->discard[c->discard_n - 1].flags, 0);
    ck_assert_int_eq(combat_card_cost(c, &c->discard[c->discard_n - 1]), 3);

    /* Forethought+: any number, moved in the order picked; Anger (cost 0)
     * is not made free. */
    c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_draw(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_FORETHOUGHT, 1);
    fx_hand(c, CARD_BLUDGEON, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_ANGER, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->pending.kind, CH_FORETHOUGHT_ANY);
    FX_CHOOSE(&s, 0);
    FX_CHOOSE(&s, 2); /* nothing after the last card: the screen is done */
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->hand_n, 1);
    ck_assert_int_eq(c->hand[0].id, CARD_STRIKE);
    ck_assert_int_eq(c->draw_n, 3);
    ck_assert_int_eq(c->draw[0].id, CARD_ANGER);
    ck_assert_int_eq(c->draw[0].flags, 0);
    ck_assert_int_eq(c->draw[1].id, CARD_BLUDGEON);
    ck_assert(c->draw[1].flags & CF_FREE_ONCE);
    ck_assert_int_eq(c->draw[2].id, CARD_DEFEND);
    ck_assert_int_eq(c->discard_n, 1); /* Forethought+ itself */
}
END_TEST

START_TEST(impatience_draws_only_without_attacks_in_hand) {
    /* 2 (3) cards, only when the hand holds no Attack. */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        for (int i = 0; i < 4; i++)
            fx_draw(c, CARD_DEFEND, 0);
        fx_hand(c, CARD_IMPATIENCE, u);
        fx_hand(c, CARD_IMPATIENCE, u);
        fx_hand(c, CARD_STRIKE, 0);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->hand_n, 2); /* Strike in hand: nothing */
        FX_PLAY(&s, 1, 0);              /* the Strike */
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->hand_n, u ? 3 : 2);
    }
}
END_TEST

START_TEST(jack_of_all_trades_adds_random_colorless_cards) {
    /* 1 (2) random colorless cards to the hand; exhausts; cost 0. */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 11);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_JACK_OF_ALL_TRADES, u);
        sf_rng r = c->rng[SF_STREAM_CARD_RANDOM];
        int a = next_colorless(&r), b = next_colorless(&r);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->hand_n, u ? 2 : 1);
        ck_assert_int_eq(c->hand[0].id, a);
        if (u)
            ck_assert_int_eq(c->hand[1].id, b);
        ck_assert_int_eq(c->hand[0].upg, 0);
        ck_assert_int_eq(c->exhaust_n, 1);
        ck_assert_int_eq(c->energy, 3);
    }
}
END_TEST

START_TEST(madness_makes_a_random_costly_card_free) {
    /* Hand (after Madness leaves it): Anger 0, Defend 1, Bludgeon 3. The
     * picks hand.getRandomCard(cardRandomRng) until one costs more than 0
     * this turn; it costs 0 for the combat. Madness 1 (0), exhausts. */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 7);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_MADNESS, u);
        fx_hand(c, CARD_ANGER, 0);
        fx_hand(c, CARD_DEFEND, 0);
        fx_hand(c, CARD_BLUDGEON, 0);
        sf_rng r = c->rng[SF_STREAM_CARD_RANDOM];
        int pick;
        do
            pick = sf_rng_random(&r, 2);
        while (pick == 0);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->energy, u ? 3 : 2);
        ck_assert_int_eq(c->hand[pick].cost, 0);
        ck_assert_int_eq(c->hand[3 - pick].cost, pick == 1 ? 3 : 1);
        ck_assert_int_eq(c->exhaust_n, 1);
        ck_assert_uint_eq(c->rng[SF_STREAM_CARD_RANDOM].counter, r.counter);
    }
}
END_TEST

START_TEST(panacea_gives_artifact) {
    /* Artifact 1 (2), exhausts; then a Weak Potion's... the monster's Weak
     * is stopped: here Battle Trance's No Draw is. */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_PANACEA, u);
        fx_hand(c, CARD_BATTLE_TRANCE, 0);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->pw[PW_ARTIFACT], u ? 2 : 1);
        ck_assert_int_eq(c->exhaust_n, 1);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->pw[PW_NO_DRAW], 0);
        ck_assert_int_eq(c->pw[PW_ARTIFACT], u ? 1 : 0);
    }
}
END_TEST

START_TEST(panic_button_blocks_then_cards_give_none_for_two_turns) {
    /* 30 (40) block, exhausts; No Block 2: Defends give nothing this turn
     * and next, and 5 again the turn after. */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        for (int i = 0; i < 12; i++)
            fx_draw(c, CARD_DEFEND, 0);
        fx_hand(c, CARD_PANIC_BUTTON, u);
        fx_hand(c, CARD_DEFEND, 0);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->block, u ? 40 : 30);
        ck_assert_int_eq(c->pw[PW_NO_BLOCK], 2);
        ck_assert_int_eq(c->exhaust_n, 1);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->block, u ? 40 : 30);
        FX_END(&s);
        ck_assert_int_eq(c->pw[PW_NO_BLOCK], 1);
        c->block = 0;
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->block, 0);
        FX_END(&s);
        ck_assert_int_eq(c->pw[PW_NO_BLOCK], 0);
        c->block = 0;
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->block, 5);
    }
}
END_TEST

START_TEST(purity_exhausts_up_to_three_chosen_cards) {
    /* Hand after Purity leaves it: Wound, Dazed, Strike, Defend. Picks stop
     * at 3 (5 upgraded); Purity exhausts too. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_PURITY, 0);
    fx_hand(c, CARD_WOUND, 0);
    fx_hand(c, CARD_DAZED, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEFEND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->pending.kind, CH_PURITY);
    FX_CHOOSE(&s, 0);
    FX_CHOOSE(&s, 1);
    FX_CHOOSE(&s, 2); /* the third: the screen is done */
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->hand_n, 1);
    ck_assert_int_eq(c->hand[0].id, CARD_DEFEND);
    ck_assert_int_eq(c->exhaust_n, 4);
    /* Purity+: one pick, then done */
    c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_PURITY, 1);
    fx_hand(c, CARD_WOUND, 0);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_CHOOSE(&s, 0);
    FX_CHOOSE(&s, CHOICE_DONE);
    ck_assert_int_eq(c->hand_n, 1);
    ck_assert_int_eq(c->hand[0].id, CARD_STRIKE);
    ck_assert_int_eq(c->exhaust_n, 2);
    ck_assert_int_eq(sf_cards[CARD_PURITY].mag_up, 5);
}
END_TEST

START_TEST(bandage_up_heals_and_exhausts) {
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        c->hp = 60;
        fx_hand(c, CARD_BANDAGE_UP, u);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->hp, u ? 66 : 64);
        ck_assert_int_eq(c->exhaust_n, 1);
        ck_assert_int_eq(c->energy, 3);
    }
}
END_TEST

START_TEST(apotheosis_upgrades_every_pile) {
    /* Cost 2 (1), exhausts; every card that can be upgraded in hand, draw,
     * discard and exhaust (statuses cannot; Searing Blow again). */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_hand(c, CARD_APOTHEOSIS, u);
        fx_hand(c, CARD_STRIKE, 0);
        fx_hand(c, CARD_WOUND, 0);
        fx_draw(c, CARD_BODY_SLAM, 0);
        fx_discard(c, CARD_SEARING_BLOW, 1);
        fx_exhaust(c, CARD_DEFEND, 0);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->energy, u ? 2 : 1);
        ck_assert_int_eq(c->hand[0].upg, 1);
        ck_assert_int_eq(c->hand[1].upg, 0);
        ck_assert_int_eq(c->draw[0].upg, 1);
        ck_assert_int_eq(c->draw[0].cost, 0); /* Body Slam+ */
        ck_assert_int_eq(c->discard[0].upg, 2);
        ck_assert_int_eq(c->exhaust[0].upg, 1);
        ck_assert_int_eq(c->exhaust[1].id, CARD_APOTHEOSIS);
    }
}
END_TEST

START_TEST(chrysalis_and_metamorphosis_shuffle_in_free_cards) {
    /* 3 (5) random Skills / Attacks, each costing 0 for the combat when
     * above 0, into random spots of the draw pile; cost 2; exhaust. */
    for (int m = 0; m < 2; m++)
        for (int u = 0; u < 2; u++) {
            sf_state s;
            sf_combat *c = fx_new(&s, 13);
            fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
            fx_draw(c, CARD_STRIKE, 1);
            fx_hand(c, m ? CARD_METAMORPHOSIS : CARD_CHRYSALIS, u);
            sf_state copy = s;
            int want[5], n = u ? 5 : 3;
            for (int i = 0; i < n; i++)
                want[i] = combat_random_card(combat_of(&copy), m ? CT_ATTACK : CT_SKILL);
            FX_PLAY(&s, 0, SF_NO_TARGET);
            ck_assert_int_eq(c->energy, 1);
            ck_assert_int_eq(c->draw_n, 1 + n);
            ck_assert_int_eq(c->exhaust_n, 1);
            int seen = 0;
            for (int i = 0; i < c->draw_n; i++) {
                const sf_card *k = &c->draw[i];
                if (k->id == CARD_STRIKE && k->upg)
                    continue;
                ck_assert_int_eq(sf_cards[k->id].type, m ? CT_ATTACK : CT_SKILL);
                ck_assert(k->cost == 0 || k->cost == COST_X);
                seen++;
            }
            ck_assert_int_eq(seen, n);
            for (int i = 0; i < n; i++)
                ck_assert_int_ge(fx_count(c->draw, c->draw_n, want[i]), 1);
        }
}
END_TEST

START_TEST(magnetism_adds_a_colorless_card_before_each_draw) {
    /* Cost 2 (1); at the next turn's start one random colorless card
     * reaches the hand, then the 5 cards are drawn. */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        for (int i = 0; i < 6; i++)
            fx_draw(c, CARD_DEFEND, 0);
        fx_hand(c, CARD_MAGNETISM, u);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->energy, u ? 2 : 1);
        ck_assert_int_eq(c->pw[PW_MAGNETISM], 1);
        sf_rng r = c->rng[SF_STREAM_CARD_RANDOM];
        FX_END(&s);
        ck_assert_int_eq(c->hand_n, 6);
        ck_assert_int_eq(c->hand[0].id, next_colorless(&r));
        ck_assert_int_eq(fx_count(c->hand, 6, CARD_DEFEND), 5);
    }
}
END_TEST

START_TEST(master_of_strategy_draws_and_exhausts) {
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        for (int i = 0; i < 6; i++)
            fx_draw(c, CARD_DEFEND, 0);
        fx_hand(c, CARD_MASTER_OF_STRATEGY, u);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->hand_n, u ? 4 : 3);
        ck_assert_int_eq(c->exhaust_n, 1);
        ck_assert_int_eq(c->energy, 3);
    }
}
END_TEST

START_TEST(mayhem_plays_the_top_card_after_the_draw) {
    /* Cost 2 (1). Next turn: the 5 Defends on top are drawn, then the card
     * under them (a Strike) plays free at the only monster: 100 - 6. */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_draw(c, CARD_STRIKE, 0);
        for (int i = 0; i < 5; i++)
            fx_draw(c, CARD_DEFEND, 0);
        fx_hand(c, CARD_MAYHEM, u);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->energy, u ? 2 : 1);
        FX_END(&s);
        ck_assert_int_eq(c->phase, PH_PLAYER);
        ck_assert_int_eq(c->hand_n, 5);
        ck_assert_int_eq(fx_count(c->hand, 5, CARD_DEFEND), 5);
        ck_assert_int_eq(c->mon[0].hp, 94);
        ck_assert_int_eq(c->discard_n, 1);
        ck_assert_int_eq(c->discard[0].id, CARD_STRIKE);
        ck_assert_int_eq(c->energy, 3);
    }
}
END_TEST

START_TEST(panache_hits_everything_every_fifth_card) {
    /* 10 (14) THORNS to every monster on each 5th card played in a turn
     * after Panache; the count restarts each turn. Strikes 6 each. */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 200, MV_INCANTATION);
        fx_mon(c, MON_JAW_WORM, 100, MV_CHOMP);
        c->energy = 10;
        fx_hand(c, CARD_PANACHE, u);
        for (int i = 0; i < 6; i++)
            fx_hand(c, CARD_STRIKE, 0);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->pw[PW_PANACHE], u ? 14 : 10);
        ck_assert_int_eq(c->pw[PW_PANACHE_CNT], 5);
        for (int i = 0; i < 4; i++)
            FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->mon[0].hp, 176);
        ck_assert_int_eq(c->mon[1].hp, 100);
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->mon[0].hp, u ? 156 : 160);
        ck_assert_int_eq(c->mon[1].hp, u ? 86 : 90);
        ck_assert_int_eq(c->pw[PW_PANACHE_CNT], 5);
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->pw[PW_PANACHE_CNT], 4);
        FX_END(&s);
        ck_assert_int_eq(c->pw[PW_PANACHE_CNT], 5);
    }
}
END_TEST

START_TEST(sadistic_nature_punishes_each_debuff) {
    /* 5 (7) THORNS per debuff the player lands on a monster without
     * Artifact. Bash 8 + Vulnerable: 100 - 8 - 5 = 87 (85). */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_JAW_WORM, 100, MV_CHOMP);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        c->mon[1].pw[PW_ARTIFACT] = 1;
        c->energy = 5;
        fx_hand(c, CARD_SADISTIC_NATURE, u);
        fx_hand(c, CARD_BASH, 0);
        fx_hand(c, CARD_BASH, 0);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        FX_PLAY(&s, 0, 0);
        ck_assert_int_eq(c->mon[0].hp, u ? 85 : 87);
        FX_PLAY(&s, 0, 1); /* Artifact stops the Vulnerable: no damage */
        ck_assert_int_eq(c->mon[1].hp, 92);
        ck_assert_int_eq(c->mon[1].pw[PW_ARTIFACT], 0);
    }
}
END_TEST

START_TEST(secret_technique_and_weapon_fetch_from_the_draw_pile) {
    for (int w = 0; w < 2; w++) {
        int id = w ? CARD_SECRET_WEAPON : CARD_SECRET_TECHNIQUE;
        int one = w ? CARD_BASH : CARD_DEFEND, two = w ? CARD_ANGER : CARD_SHRUG_IT_OFF;
        int other = w ? CARD_DEFEND : CARD_STRIKE;
        /* one card of the type: it comes at once (no random draw) */
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_draw(c, other, 0);
        fx_draw(c, one, 0);
        fx_draw(c, other, 0);
        fx_hand(c, id, 0);
        uint32_t before = c->rng[SF_STREAM_CARD_RANDOM].counter;
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_uint_eq(c->rng[SF_STREAM_CARD_RANDOM].counter, before);
        ck_assert_int_eq(c->hand_n, 1);
        ck_assert_int_eq(c->hand[0].id, one);
        ck_assert_int_eq(c->draw_n, 2);
        ck_assert_int_eq(c->exhaust_n, 1);
        /* none left: unplayable */
        fx_hand(c, id, 0);
        ck_assert_int_eq(fx_apply(&s, SF_ACT_PLAY, 1, SF_NO_TARGET), SF_EINVAL);
        /* two: one addToRandomSpot draw, then a choice; upgraded: discard */
        c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_draw(c, one, 0);
        fx_draw(c, other, 0);
        fx_draw(c, two, 0);
        fx_hand(c, id, 1);
        before = c->rng[SF_STREAM_CARD_RANDOM].counter;
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_uint_eq(c->rng[SF_STREAM_CARD_RANDOM].counter, before + 1);
        ck_assert_int_eq(c->pending.kind, w ? CH_SECRET_ATTACK : CH_SECRET_SKILL);
        int opts[SF_MAX_PILE], n = 0;
        sf_action acts[SF_MAX_ACTIONS];
        n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
        ck_assert_int_eq(n, 2);
        for (int i = 0; i < n; i++) {
            sf_action_info info;
            ck_assert_int_eq(sf_engine_action_info(&s, acts[i], &info), SF_OK);
            opts[i] = info.card_id;
        }
        ck_assert(opts[0] == two || opts[1] == two);
        int pick = opts[0] == two ? acts[0].index : acts[1].index;
        FX_CHOOSE(&s, pick);
        ck_assert_int_eq(c->hand_n, 1);
        ck_assert_int_eq(c->hand[0].id, two);
        ck_assert_int_eq(c->draw_n, 2);
        ck_assert_int_eq(c->discard_n, 1);
        ck_assert_int_eq(c->exhaust_n, 0);
    }
}
END_TEST

START_TEST(the_bomb_explodes_at_the_end_of_the_third_turn) {
    /* Cost 2; 40 (50) THORNS to every monster at the end of the turn two
     * turns after the one it is played. */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        c->hp = c->max_hp = 200;
        fx_mon(c, MON_JAW_WORM, 120, MV_BELLOW);
        fx_hand(c, CARD_THE_BOMB, u);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->energy, 1);
        ck_assert_int_eq(c->pw[PW_BOMB_3], u ? 50 : 40);
        ck_assert_int_eq(c->discard_n, 1);
        FX_END(&s);
        ck_assert_int_eq(c->pw[PW_BOMB_2], u ? 50 : 40);
        FX_END(&s);
        ck_assert_int_eq(c->pw[PW_BOMB_1], u ? 50 : 40);
        int block = c->mon[0].block;
        ck_assert_int_eq(c->mon[0].hp, 120);
        FX_END(&s);
        ck_assert_int_eq(c->pw[PW_BOMB_1], 0);
        ck_assert_int_eq(c->mon[0].hp, 120 - ((u ? 50 : 40) - block));
    }
}
END_TEST

START_TEST(thinking_ahead_draws_two_then_puts_one_back) {
    sf_state s;
    for (int u = 0; u < 2; u++) {
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_draw(c, CARD_DEFEND, 0);
        fx_draw(c, CARD_BASH, 0);
        fx_hand(c, CARD_THINKING_AHEAD, u);
        fx_hand(c, CARD_STRIKE, 0);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->pending.kind, CH_WARCRY);
        ck_assert_int_eq(c->hand_n, 3);
        FX_CHOOSE(&s, 0); /* the Strike to the top */
        ck_assert_int_eq(c->draw_n, 1);
        ck_assert_int_eq(c->draw[0].id, CARD_STRIKE);
        ck_assert_int_eq(c->draw_known, 1);
        ck_assert_int_eq(c->exhaust_n, u ? 0 : 1);
        ck_assert_int_eq(c->discard_n, u ? 1 : 0);
    }
    /* an empty hand when it is played: PutOnDeckAction is never queued, so
     * the two cards drawn stay */
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_draw(c, CARD_DEFEND, 0);
    fx_draw(c, CARD_BASH, 0);
    fx_hand(c, CARD_THINKING_AHEAD, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->hand_n, 2);
    ck_assert_int_eq(c->draw_n, 0);
}
END_TEST

START_TEST(transmutation_makes_x_free_colorless_cards) {
    /* X = 2: two random colorless cards, free this turn, upgraded when
     * Transmutation is; exhausts; all energy spent. */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 17);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        c->energy = 2;
        fx_hand(c, CARD_TRANSMUTATION, u);
        sf_rng r = c->rng[SF_STREAM_CARD_RANDOM];
        int a = next_colorless(&r), b = next_colorless(&r);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->energy, 0);
        ck_assert_int_eq(c->hand_n, 2);
        ck_assert_int_eq(c->hand[0].id, a);
        ck_assert_int_eq(c->hand[1].id, b);
        for (int i = 0; i < 2; i++) {
            ck_assert_int_eq(c->hand[i].upg, u);
            ck_assert(c->hand[i].cost == COST_X || combat_card_cost(c, &c->hand[i]) == 0);
        }
        ck_assert_int_eq(c->exhaust_n, 1);
    }
}
END_TEST

START_TEST(violence_takes_random_attacks_from_the_draw_pile) {
    /* 3 (4) Attacks of the draw pile to the hand; exhausts. */
    for (int u = 0; u < 2; u++) {
        sf_state s;
        sf_combat *c = fx_new(&s, 5);
        fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
        fx_draw(c, CARD_STRIKE, 0);
        fx_draw(c, CARD_DEFEND, 0);
        fx_draw(c, CARD_BASH, 0);
        fx_draw(c, CARD_ANGER, 0);
        fx_draw(c, CARD_DEFEND, 0);
        fx_draw(c, CARD_POMMEL_STRIKE, 0);
        fx_hand(c, CARD_VIOLENCE, u);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->hand_n, u ? 4 : 3);
        for (int i = 0; i < c->hand_n; i++)
            ck_assert_int_eq(sf_cards[c->hand[i].id].type, CT_ATTACK);
        ck_assert_int_eq(c->draw_n, u ? 2 : 3);
        ck_assert_int_eq(fx_count(c->draw, c->draw_n, CARD_DEFEND), 2);
        ck_assert_int_eq(c->exhaust_n, 1);
    }
}
END_TEST

#include "test-engine-cards.tests.h" /* SF_TESTS: every test above (tests/meson.build) */
SF_CHECK_MAIN("engine-cards", "numbers", 0, NULL, NULL)
