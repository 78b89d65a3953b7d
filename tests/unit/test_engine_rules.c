/*
 * test_engine_rules.c — turn structure and shared rules: debuff durations
 * and the justApplied rule, end-of-round order, block and energy, relics,
 * potions, the action API (enumerate / apply), state identity, the honest
 * belief root, and the gauntlet's pool rules.
 */
#include <jansson.h>

#include "engine_fixture.h"
#include "sf_check.h"

static sf_combat *setup(sf_state *s) {
    sf_combat *c = fx_new(s, 21);
    c->hp = c->max_hp = 999;
    return c;
}

/* ------------------------------------------------------------------------
 * Debuff durations (game-rules §1 "justApplied", §2.5)
 * ---------------------------------------------------------------------- */

START_TEST(monster_weak_lasts_through_the_next_n_player_turns) {
    /* Spit Web's 2 Weak in the monster phase: justApplied skips that
     * round's tick, so the player is Weak on turns 2 and 3, not 4. */
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_GREEN_LOUSE, 15, MV_SPIT_WEB);
    FX_END(&s); /* monster phase 1 */
    ck_assert_int_eq(c->pw[PW_WEAK], 2);
    c->mon[0].move = MV_LOUSE_GROW;
    FX_END(&s);
    ck_assert_int_eq(c->pw[PW_WEAK], 1);
    c->mon[0].move = MV_LOUSE_GROW;
    FX_END(&s);
    ck_assert_int_eq(c->pw[PW_WEAK], 0);
}
END_TEST

START_TEST(stacking_keeps_the_existing_just_applied_state) {
    /* Weak 1 left over from an earlier round (no justApplied): a monster's
     * 2 more stack to 3 and tick at once (2). A fresh Frail from a monster
     * is justApplied; a second application the same phase stacks on it and
     * the whole stack skips the tick. */
    sf_state s;
    sf_combat *c = setup(&s);
    c->pw[PW_WEAK] = 1;
    fx_mon(c, MON_GREEN_LOUSE, 15, MV_SPIT_WEB);
    fx_mon(c, MON_SPIKE_SLIME_M, 30, MV_SPIKE_LICK);
    fx_mon(c, MON_SPIKE_SLIME_M, 30, MV_SPIKE_LICK);
    FX_END(&s);
    ck_assert_int_eq(c->pw[PW_WEAK], 2);
    ck_assert_int_eq(c->pw[PW_FRAIL], 2);
    ck_assert_int_eq(c->just & JA_FRAIL, 0);
}
END_TEST

START_TEST(player_vulnerable_on_a_monster_covers_two_player_turns) {
    /* Bash's 2 Vulnerable on turn 1 ticks at the end of round 1 (1 left for
     * turn 2) and round 2 (gone on turn 3). */
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_BASH, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].pw[PW_VULN], 2);
    FX_END(&s);
    ck_assert_int_eq(c->mon[0].pw[PW_VULN], 1);
    FX_END(&s);
    ck_assert_int_eq(c->mon[0].pw[PW_VULN], 0);
}
END_TEST

START_TEST(player_weak_on_a_monster_weakens_its_next_attacks) {
    /* Clothesline's 2 Weak on turn 1: the Jaw Worm's Chomp 11 that round
     * deals floor(11 x 0.75) = 8, the next round's Chomp 8 too, then 11. */
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_JAW_WORM, 100, MV_CHOMP);
    fx_hand(c, CARD_CLOTHESLINE, 0);
    FX_PLAY(&s, 0, 0);
    int hp = c->hp;
    for (int r = 0; r < 3; r++) {
        c->mon[0].move = MV_CHOMP;
        FX_END(&s);
        hp -= r < 2 ? 8 : 11;
        ck_assert_int_eq(c->hp, hp);
    }
}
END_TEST

START_TEST(vulnerable_from_a_monster_phase_is_just_applied) {
    /* Scrape's 1 Vulnerable (monster phase): still 1 on the player's next
     * turn; a Strike-free round later it is gone. The next Chomp 11 is
     * multiplied: floor(11 x 1.5) = 16. */
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_RED_SLAVER, 100, MV_SCRAPE);
    c->mon[0].ai[1] = 1;
    FX_END(&s);
    ck_assert_int_eq(c->pw[PW_VULN], 1);
    ck_assert_int_eq(c->hp, 999 - 8);
    c->mon[0].move = MV_STAB;
    FX_END(&s); /* Stab 13 x 1.5 = 19.5 -> 19 */
    ck_assert_int_eq(c->hp, 999 - 8 - 19);
    ck_assert_int_eq(c->pw[PW_VULN], 0);
}
END_TEST

START_TEST(intangible_caps_every_hit_for_one_round) {
    /* Ghost in a Jar: 1 Intangible. Whirlwind 5 x4 deals 1 per hit; Burn
     * at end of turn (THORNS) 1; gone after the round. */
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_GUARDIAN, 240, MV_WHIRLWIND);
    c->potions[1] = POTION_GHOST_IN_A_JAR;
    fx_hand(c, CARD_BURN, 1);
    FX_DRINK(&s, 1, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_INTANGIBLE], 1);
    FX_END(&s);
    ck_assert_int_eq(c->hp, 999 - 1 - 4);
    ck_assert_int_eq(c->pw[PW_INTANGIBLE], 0);
}
END_TEST

START_TEST(thorns_and_flame_barrier_answer_every_attack_hit) {
    /* Bronze Scales' Thorns 3 and Flame Barrier 4 both answer each of the
     * Guardian's 4 Whirlwind hits with THORNS damage (block first, no
     * Vulnerable): 4 x 7 = 28, the first 5 taken by its block. Flame Barrier
     * is gone at the next turn start, Thorns stays. */
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_GUARDIAN, 240, MV_WHIRLWIND);
    c->mon[0].pw[PW_VULN] = 5;
    c->pw[PW_THORNS] = 3;
    fx_hand(c, CARD_FLAME_BARRIER, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_FLAME_BARRIER], 4);
    c->mon[0].block = 5; /* lost at the monster phase start anyway */
    FX_END(&s);
    ck_assert_int_eq(c->mon[0].hp, 240 - 28);
    ck_assert_int_eq(c->pw[PW_FLAME_BARRIER], 0);
    ck_assert_int_eq(c->pw[PW_THORNS], 3);
    /* 4 x 5 = 20 against the 12 block */
    ck_assert_int_eq(c->hp, 999 - 8);
}
END_TEST

START_TEST(combust_hp_loss_feeds_rupture_and_blood_for_blood) {
    /* Combust loses 1 HP at end of turn (a LoseHPAction the player owns):
     * Rupture +1 Strength, Blood for Blood -1 cost. */
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_COMBUST] = 5;
    c->pw[PW_COMBUST_HP] = 1;
    c->pw[PW_RUPTURE] = 1;
    for (int i = 0; i < 5; i++)
        fx_draw(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_BLOOD_FOR_BLOOD, 0);
    FX_END(&s);
    ck_assert_int_eq(c->hp, 998);
    ck_assert_int_eq(c->pw[PW_STR], 1);
    ck_assert_int_eq(c->mon[0].hp, 95);
    ck_assert_int_eq(c->discard[0].cost, 3);
}
END_TEST

START_TEST(corruption_exhaust_triggers_feel_no_pain) {
    /* Under Corruption a Defend costs 0 and exhausts: 5 block, then Feel No
     * Pain's 3 after the card. */
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->pw[PW_CORRUPTION] = 1;
    c->pw[PW_FNP] = 3;
    fx_hand(c, CARD_DEFEND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->energy, 3);
    ck_assert_int_eq(c->block, 8);
    ck_assert_int_eq(c->exhaust_n, 1);
}
END_TEST

/* ------------------------------------------------------------------------
 * Block, energy, turn order
 * ---------------------------------------------------------------------- */

SF_TCASE(turns, 0);

START_TEST(all_monsters_lose_block_before_any_acts) {
    /* Jaw Worm (slot 0) has 10 block; the Shield Gremlin (slot 1) acts
     * later and gives it 7: after the phase the Jaw Worm has 7, not 17. */
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_JAW_WORM, 40, MV_BELLOW);
    fx_mon(c, MON_SHIELD_GREMLIN, 13, MV_PROTECT);
    c->mon[0].block = 10;
    FX_END(&s);
    ck_assert_int_eq(c->mon[0].block, 6 + 7);
}
END_TEST

START_TEST(player_block_resets_each_turn_but_not_on_turn_one) {
    sf_fight_spec spec = fx_spec();
    spec.relics[spec.relics_n++] = RELIC_ANCHOR;
    spec.encounter = ENC_CULTIST; /* Incantation first: no damage on turn 1 */
    spec.seed = 2;
    sf_state s;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    sf_combat *c = combat_of(&s);
    ck_assert_int_eq(c->block, 10);
    ck_assert_int_eq(c->energy, 3);
    c->energy = 1; /* unused energy is lost: the next turn starts at 3 */
    FX_END(&s);
    ck_assert_int_eq(c->block, 0);
    ck_assert_int_eq(c->energy, 3);
    ck_assert_int_eq(c->turn, 2);
}
END_TEST

START_TEST(end_of_turn_order_orichalcum_metallicize_burn) {
    /* Orichalcum checks block 0 before Metallicize adds 4: 6 + 4 = 10;
     * then the Burn's 2 THORNS take 2 of it: 8 block meets the Chomp 11. */
    sf_state s;
    sf_combat *c = setup(&s);
    c->relics[c->relic_n++] = RELIC_ORICHALCUM;
    c->pw[PW_METALLICIZE] = 4;
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    fx_hand(c, CARD_BURN, 0);
    FX_END(&s);
    ck_assert_int_eq(c->hp, 999 - 3);
}
END_TEST

START_TEST(cards_are_discarded_from_the_top_of_the_hand) {
    /* DiscardAtEndOfTurnAction takes the last card first. */
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_CULTIST, 50, MV_INCANTATION);
    for (int i = 0; i < 5; i++)
        fx_draw(c, CARD_WOUND, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_BASH, 0);
    FX_END(&s);
    ck_assert_int_eq(c->discard_n, 3);
    ck_assert_int_eq(c->discard[0].id, CARD_BASH);
    ck_assert_int_eq(c->discard[1].id, CARD_DEFEND);
    ck_assert_int_eq(c->discard[2].id, CARD_STRIKE);
}
END_TEST

START_TEST(draws_reshuffle_the_discard_pile_mid_draw_and_stop_at_ten) {
    /* 2 in draw, 4 in discard, 6 in hand: draw 5 -> 2, reshuffle, then 2
     * more (hand full at 10). The reshuffle is one shuffleRng call. */
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_CULTIST, 50, MV_INCANTATION);
    fx_draw(c, CARD_BASH, 0);
    fx_draw(c, CARD_BASH, 0);
    for (int i = 0; i < 4; i++)
        fx_discard(c, CARD_DEFEND, 0);
    for (int i = 0; i < 6; i++)
        fx_hand(c, CARD_WOUND, 0);
    combat_draw(c, 5);
    ck_assert_int_eq(c->hand_n, 10);
    ck_assert_int_eq(fx_count(c->hand, 10, CARD_BASH), 2);
    ck_assert_int_eq(c->draw_n, 2);
    ck_assert_int_eq(c->discard_n, 0);
    ck_assert_uint_eq(c->rng[SF_STREAM_SHUFFLE].counter, 1);
    /* a full hand draws nothing; an empty draw + discard does nothing */
    combat_draw(c, 1);
    ck_assert_int_eq(c->draw_n, 2);
}
END_TEST

/* ------------------------------------------------------------------------
 * Relics (game-rules §7)
 * ---------------------------------------------------------------------- */

static sf_combat *start_with(sf_state *s, int enc, int relic, int hp) {
    sf_fight_spec spec = fx_spec();
    spec.encounter = enc;
    spec.seed = 6;
    spec.hp = hp;
    if (relic)
        spec.relics[spec.relics_n++] = (uint8_t)relic;
    ck_assert_int_eq(sf_engine_init(s, &spec, NULL), SF_OK);
    return combat_of(s);
}

SF_TCASE(relics, 0);

START_TEST(battle_start_relics) {
    sf_state s;
    sf_combat *c = start_with(&s, ENC_2_LOUSE, RELIC_BAG_OF_MARBLES, 80);
    for (int m = 0; m < c->n_mon; m++)
        ck_assert_int_eq(c->mon[m].pw[PW_VULN], 1);
    c = start_with(&s, ENC_CULTIST, RELIC_VAJRA, 80);
    ck_assert_int_eq(c->pw[PW_STR], 1);
    c = start_with(&s, ENC_CULTIST, RELIC_ODDLY_SMOOTH_STONE, 80);
    ck_assert_int_eq(c->pw[PW_DEX], 1);
    c = start_with(&s, ENC_CULTIST, RELIC_BLOOD_VIAL, 70);
    ck_assert_int_eq(c->hp, 72);
    c = start_with(&s, ENC_CULTIST, RELIC_BRONZE_SCALES, 80);
    ck_assert_int_eq(c->pw[PW_THORNS], 3);
    c = start_with(&s, ENC_CULTIST, RELIC_AKABEKO, 80);
    ck_assert_int_eq(c->pw[PW_VIGOR], 8);
    c = start_with(&s, ENC_CULTIST, RELIC_LANTERN, 80);
    ck_assert_int_eq(c->energy, 4);
    FX_END(&s);
    ck_assert_int_eq(c->energy, 3); /* first turn only */
}
END_TEST

START_TEST(burning_blood_heals_six_on_victory_capped_at_max) {
    sf_state s;
    sf_combat *c = setup(&s);
    c->hp = 50;
    c->max_hp = 80;
    c->relics[c->relic_n++] = RELIC_BURNING_BLOOD;
    fx_mon(c, MON_CULTIST, 5, MV_INCANTATION);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert(c->flags & FL_WON);
    ck_assert_int_eq(c->hp, 56);
    c = setup(&s);
    c->hp = 78;
    c->max_hp = 80;
    c->relics[c->relic_n++] = RELIC_BURNING_BLOOD;
    fx_mon(c, MON_CULTIST, 5, MV_INCANTATION);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->hp, 80);
}
END_TEST

START_TEST(meat_on_the_bone_heals_before_burning_blood) {
    /* 40/80: Meat on the Bone (HP <= 50%): +12 -> 52, Burning Blood +6 -> 58. */
    sf_state s;
    sf_combat *c = setup(&s);
    c->hp = 40;
    c->max_hp = 80;
    c->relics[c->relic_n++] = RELIC_BURNING_BLOOD;
    c->relics[c->relic_n++] = RELIC_MEAT_ON_THE_BONE;
    fx_mon(c, MON_CULTIST, 5, MV_INCANTATION);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->hp, 58);
}
END_TEST

START_TEST(happy_flower_every_third_turn) {
    /* counter 0 -> turn 1: 1, turn 2: 2, turn 3: 3 -> +1 energy, reset. */
    sf_fight_spec spec = fx_spec();
    spec.relics[spec.relics_n++] = RELIC_HAPPY_FLOWER;
    spec.encounter = ENC_CULTIST;
    spec.hp = spec.max_hp = 999;
    spec.seed = 3;
    sf_state s;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    sf_combat *c = combat_of(&s);
    ck_assert_int_eq(c->energy, 3);
    FX_END(&s);
    ck_assert_int_eq(c->energy, 3);
    FX_END(&s);
    ck_assert_int_eq(c->energy, 4);
    ck_assert_int_eq(c->relic_counter[1], 0); /* Burning Blood, Happy Flower */
    /* a carried counter of 2 fires on turn 1 */
    spec.relic_counters[1] = 2;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    ck_assert_int_eq(combat_of(&s)->energy, 4);
}
END_TEST

START_TEST(pen_nib_doubles_every_tenth_attack) {
    /* Counter 8: the 9th Attack arms Pen Nib, the 10th deals double and
     * resets the counter. A counter of 9 carried into a fight arms it at
     * battle start. */
    sf_state s;
    sf_combat *c = setup(&s);
    c->relics[c->relic_n++] = RELIC_PEN_NIB;
    c->relic_counter[0] = 8;
    c->energy = 9;
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 94);
    ck_assert_int_eq(c->pw[PW_PEN_NIB], 1);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 82);
    ck_assert_int_eq(c->relic_counter[0], 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 76);

    sf_fight_spec spec = fx_spec();
    spec.relics[spec.relics_n++] = RELIC_PEN_NIB;
    spec.relic_counters[1] = 9;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    ck_assert_int_eq(combat_of(&s)->pw[PW_PEN_NIB], 1);
}
END_TEST

START_TEST(kunai_shuriken_fan_every_third_attack_per_turn) {
    sf_state s;
    sf_combat *c = setup(&s);
    c->relics[c->relic_n++] = RELIC_KUNAI;
    c->relics[c->relic_n++] = RELIC_SHURIKEN;
    c->relics[c->relic_n++] = RELIC_ORNAMENTAL_FAN;
    c->energy = 9;
    fx_mon(c, MON_CULTIST, 200, MV_INCANTATION);
    for (int i = 0; i < 4; i++)
        fx_hand(c, CARD_ANGER, 0);
    FX_PLAY(&s, 0, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->pw[PW_STR], 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->pw[PW_STR], 1);
    ck_assert_int_eq(c->pw[PW_DEX], 1);
    ck_assert_int_eq(c->block, 4);
    FX_END(&s); /* the count resets each turn */
    ck_assert_int_eq(c->attacks_played, 0);
}
END_TEST

START_TEST(red_skull_while_at_or_below_half) {
    sf_state s;
    sf_combat *c = start_with(&s, ENC_JAW_WORM, RELIC_RED_SKULL, 40);
    ck_assert_int_eq(c->pw[PW_STR], 3); /* 40/80 at battle start */
    combat_heal(c, 1);
    ck_assert_int_eq(c->pw[PW_STR], 0);
    combat_lose_hp(c, 1);
    ck_assert_int_eq(c->pw[PW_STR], 3);
}
END_TEST

/* ---- the Ironclad Act-1 relic pools (game-rules §7) ---- */

static sf_combat *start_holding(sf_state *s, int enc, int relic, int counter) {
    sf_fight_spec spec = fx_spec();
    spec.encounter = enc;
    spec.seed = 6;
    spec.relics[spec.relics_n] = (uint8_t)relic;
    spec.relic_counters[spec.relics_n++] = counter;
    sf_err err = {0};
    ck_assert_msg(sf_engine_init(s, &spec, &err) == SF_OK, "%s", err.msg);
    return combat_of(s);
}

static sf_combat *with_relics(sf_state *s, int a, int b) {
    sf_combat *c = setup(s);
    if (a)
        c->relics[c->relic_n++] = (uint8_t)a;
    if (b)
        c->relics[c->relic_n++] = (uint8_t)b;
    return c;
}

START_TEST(battle_start_relics_of_the_act1_pools) {
    sf_state s;
    /* Bag of Preparation: 5 + 2 cards in the opening hand */
    sf_combat *c = start_holding(&s, ENC_CULTIST, RELIC_BAG_OF_PREPARATION, 0);
    ck_assert_int_eq(c->hand_n, 7);
    c = start_holding(&s, ENC_CULTIST, RELIC_THREAD_AND_NEEDLE, 0);
    ck_assert_int_eq(c->pw[PW_PLATED], 4);
    c = start_holding(&s, ENC_CULTIST, RELIC_GIRYA, 2); /* two lifts */
    ck_assert_int_eq(c->pw[PW_STR], 2);
    c = start_holding(&s, ENC_CULTIST, RELIC_GIRYA, 0);
    ck_assert_int_eq(c->pw[PW_STR], 0);
    c = start_holding(&s, ENC_CULTIST, RELIC_DU_VU_DOLL, 0); /* no curse in the deck */
    ck_assert_int_eq(c->pw[PW_STR], 0);
    c = start_holding(&s, ENC_CULTIST, RELIC_FOSSILIZED_HELIX, 0);
    ck_assert_int_eq(c->relic_counter[1], 1); /* Buffer 1 */
    /* Ancient Tea Set charged by a rest: +2 energy on turn 1 only */
    c = start_holding(&s, ENC_CULTIST, RELIC_ANCIENT_TEA_SET, 1);
    ck_assert_int_eq(c->energy, 5);
    ck_assert_int_eq(c->relic_counter[1], 0);
    FX_END(&s);
    ck_assert_int_eq(c->energy, 3);
    c = start_holding(&s, ENC_CULTIST, RELIC_ANCIENT_TEA_SET, 0);
    ck_assert_int_eq(c->energy, 3);
    /* Pantograph: 25 HP in a boss fight (50 -> 75), nothing elsewhere */
    sf_fight_spec spec = fx_spec();
    spec.relics[spec.relics_n++] = RELIC_PANTOGRAPH;
    spec.hp = 50;
    spec.encounter = ENC_HEXAGHOST;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    ck_assert_int_eq(combat_of(&s)->hp, 75);
    spec.encounter = ENC_CULTIST;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    ck_assert_int_eq(combat_of(&s)->hp, 50);
    /* Preserved Insect: an elite at (int)(max HP * 0.75), max HP kept */
    c = start_holding(&s, ENC_GREMLIN_NOB, RELIC_PRESERVED_INSECT, 0);
    ck_assert_int_eq(c->mon[0].hp, (int)((float)c->mon[0].max_hp * 0.75f));
    ck_assert_int_lt(c->mon[0].hp, c->mon[0].max_hp);
    ck_assert_int_eq(c->mon_hp_pool, c->mon[0].hp);
    c = start_holding(&s, ENC_CULTIST, RELIC_PRESERVED_INSECT, 0);
    ck_assert_int_eq(c->mon[0].hp, c->mon[0].max_hp);
    /* Mercury Hourglass: 3 THORNS to every enemy on turn 1 too */
    c = start_holding(&s, ENC_2_LOUSE, RELIC_MERCURY_HOURGLASS, 0);
    for (int m = 0; m < c->n_mon; m++) /* lice curl up only on attacks */
        ck_assert_int_eq(c->mon[m].hp, c->mon[m].max_hp - 3);
    /* Blue Candle: the engine has no curse, so nothing changes */
    c = start_holding(&s, ENC_CULTIST, RELIC_BLUE_CANDLE, 0);
    ck_assert_int_eq(c->hand_n, 5);
}
END_TEST

START_TEST(horn_cleat_turn_two_and_captains_wheel_turn_three) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_HORN_CLEAT, RELIC_CAPTAINS_WHEEL);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    FX_END(&s);
    ck_assert_int_eq(c->turn, 2);
    ck_assert_int_eq(c->block, 14); /* gained after the turn's block loss */
    FX_END(&s);
    ck_assert_int_eq(c->block, 18); /* the 14 went at the turn start */
    FX_END(&s);
    ck_assert_int_eq(c->block, 0);
}
END_TEST

START_TEST(art_of_war_energy_after_a_turn_without_attacks) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_ART_OF_WAR, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    for (int i = 0; i < 15; i++)
        fx_draw(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0); /* turn 1: an Attack */
    FX_END(&s);
    ck_assert_int_eq(c->energy, 3);
    FX_END(&s); /* turn 2: none */
    ck_assert_int_eq(c->energy, 4);
    FX_PLAY(&s, 0, 0);
    FX_END(&s);
    ck_assert_int_eq(c->energy, 3);
}
END_TEST

START_TEST(nunchaku_every_tenth_attack_and_ink_bottle_every_tenth_card) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_NUNCHAKU, RELIC_INK_BOTTLE);
    c->relic_counter[0] = 8;
    c->relic_counter[1] = 8;
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    fx_draw(c, CARD_BASH, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_STRIKE, 0);
    c->energy = 9;
    FX_PLAY(&s, 0, 0); /* 9th Attack, 9th card */
    ck_assert_int_eq(c->energy, 8);
    ck_assert_int_eq(c->relic_counter[0], 9);
    FX_PLAY(&s, 0, SF_NO_TARGET); /* Defend: 10th card -> draw 1; no Attack */
    ck_assert_int_eq(c->relic_counter[1], 0);
    ck_assert_int_eq(c->relic_counter[0], 9);
    ck_assert_int_eq(c->hand_n, 2);
    ck_assert_int_eq(c->hand[1].id, CARD_BASH);
    FX_PLAY(&s, 0, 0); /* 10th Attack: +1 energy, counter back to 0 */
    ck_assert_int_eq(c->energy, 7 - 1 + 1);
    ck_assert_int_eq(c->relic_counter[0], 0);
    ck_assert_int_eq(c->relic_counter[1], 1);
}
END_TEST

START_TEST(letter_opener_every_third_skill_in_a_turn) {
    /* 5 THORNS to every enemy, through block: 50 -> 45, and 3 block + 47
     * -> 45. The count starts over each turn. */
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_LETTER_OPENER, 0);
    fx_mon(c, MON_CULTIST, 50, MV_INCANTATION);
    fx_mon(c, MON_CULTIST, 47, MV_INCANTATION);
    c->mon[1].block = 3;
    for (int i = 0; i < 4; i++)
        fx_hand(c, CARD_DEFEND, 0);
    for (int i = 0; i < 10; i++)
        fx_draw(c, CARD_DEFEND, 0);
    c->energy = 9;
    FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->mon[0].hp, 50);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->mon[0].hp, 45);
    ck_assert_int_eq(c->mon[1].hp, 45);
    ck_assert_int_eq(c->mon[1].block, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET); /* the 4th: count 1 */
    FX_END(&s);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->mon[0].hp, 45); /* two this turn: nothing yet */
}
END_TEST

START_TEST(pocketwatch_draws_three_after_a_turn_of_three_cards_or_fewer) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_POCKETWATCH, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    for (int i = 0; i < 40; i++)
        fx_draw(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_DEFEND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET); /* 1 card on turn 1 */
    FX_END(&s);
    ck_assert_int_eq(c->hand_n, 8); /* 5 + 3, behind the turn's draw */
    c->energy = 9;
    for (int i = 0; i < 4; i++)
        FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_END(&s);
    ck_assert_int_eq(c->hand_n, 5);
}
END_TEST

START_TEST(incense_burner_sundial_and_stone_calendar) {
    sf_state s;
    /* Incense Burner at 5: turn 2 brings Intangible, which caps Chomp (11) */
    sf_combat *c = with_relics(&s, RELIC_INCENSE_BURNER, 0);
    c->relic_counter[0] = 5;
    fx_mon(c, MON_JAW_WORM, 500, MV_BELLOW);
    FX_END(&s);
    ck_assert_int_eq(c->pw[PW_INTANGIBLE], 1);
    ck_assert_int_eq(c->relic_counter[0], 0);
    c->mon[0].move = MV_CHOMP;
    FX_END(&s);
    ck_assert_int_eq(c->hp, 998);
    ck_assert_int_eq(c->pw[PW_INTANGIBLE], 0);
    /* Sundial at 2: the turn's draw shuffles the discard pile in: +2 energy */
    c = with_relics(&s, RELIC_SUNDIAL, 0);
    c->relic_counter[0] = 2;
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    for (int i = 0; i < 6; i++)
        fx_discard(c, CARD_DEFEND, 0);
    FX_END(&s);
    ck_assert_int_eq(c->energy, 5);
    ck_assert_int_eq(c->relic_counter[0], 0);
    /* Stone Calendar: 52 THORNS to every enemy at the end of turn 7 only */
    c = with_relics(&s, RELIC_STONE_CALENDAR, 0);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    c->turn = 6;
    FX_END(&s);
    ck_assert_int_eq(c->mon[0].hp, 100);
    c->mon[0].move = MV_INCANTATION;
    FX_END(&s);
    ck_assert_int_eq(c->turn, 8);
    ck_assert_int_eq(c->mon[0].hp, 48);
}
END_TEST

START_TEST(boot_raises_unblocked_hits_under_five) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_BOOT, 0);
    fx_mon(c, MON_CULTIST, 50, MV_INCANTATION);
    for (int i = 0; i < 3; i++)
        fx_hand(c, CARD_STRIKE, 0);
    c->mon[0].block = 3; /* 6 - 3 = 3 -> 5 */
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 45);
    c->pw[PW_WEAK] = 1; /* floor(6 * 0.75) = 4 -> 5 */
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 40);
    c->pw[PW_WEAK] = 0;
    c->mon[0].block = 6; /* all blocked: 0 stays 0 */
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 40);
}
END_TEST

/* Jaw Worm's Chomp (11) against `block`: the HP the player loses. */
static int chomp_loss(int a, int b, int block) {
    sf_state s;
    sf_combat *c = with_relics(&s, a, b);
    fx_mon(c, MON_JAW_WORM, 500, MV_CHOMP);
    c->block = (int16_t)block;
    FX_END(&s);
    return 999 - c->hp;
}

START_TEST(torii_then_tungsten_rod_after_block_in_either_relic_order) {
    ck_assert_int_eq(chomp_loss(0, 0, 7), 4);
    ck_assert_int_eq(chomp_loss(RELIC_TORII, 0, 7), 1);                  /* 4 -> 1 */
    ck_assert_int_eq(chomp_loss(RELIC_TUNGSTEN_ROD, 0, 7), 3);           /* 4 -> 3 */
    ck_assert_int_eq(chomp_loss(RELIC_TORII, RELIC_TUNGSTEN_ROD, 7), 0); /* 4 -> 1 -> 0 */
    ck_assert_int_eq(chomp_loss(RELIC_TUNGSTEN_ROD, RELIC_TORII, 7), 0);
    ck_assert_int_eq(chomp_loss(RELIC_TORII, RELIC_TUNGSTEN_ROD, 0), 10); /* 11 > 5 */
    ck_assert_int_eq(chomp_loss(RELIC_TORII, 0, 10), 1);                  /* 1 stays 1 */
    ck_assert_int_eq(chomp_loss(RELIC_TORII, 0, 11), 0);
    /* HP loss of any kind: Tungsten Rod, not Torii */
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_TORII, RELIC_TUNGSTEN_ROD);
    combat_lose_hp(c, 3);
    ck_assert_int_eq(c->hp, 997);
    /* Plated Armor loses a stack only when HP was lost */
    c = with_relics(&s, RELIC_TORII, RELIC_TUNGSTEN_ROD);
    fx_mon(c, MON_JAW_WORM, 500, MV_CHOMP);
    c->pw[PW_PLATED] = 4; /* 4 block at the end of the turn: 11 - 4 = 7 -> 6 */
    FX_END(&s);
    ck_assert_int_eq(c->hp, 993);
    ck_assert_int_eq(c->pw[PW_PLATED], 3);
}
END_TEST

/* The Guardian's Whirlwind (5 x 4) against `block`: the HP lost. */
static int whirlwind_loss(int a, int b, int block) {
    sf_state s;
    sf_combat *c = with_relics(&s, a, b);
    fx_mon(c, MON_GUARDIAN, 240, MV_WHIRLWIND);
    c->block = (int16_t)block;
    int helix = combat_relic_slot(c, RELIC_FOSSILIZED_HELIX);
    if (helix >= 0)
        c->relic_counter[helix] = 1;
    FX_END(&s);
    return 999 - c->hp;
}

START_TEST(fossilized_helix_buffer_eats_the_first_hit_that_gets_through) {
    ck_assert_int_eq(whirlwind_loss(0, 0, 0), 20);
    ck_assert_int_eq(whirlwind_loss(RELIC_FOSSILIZED_HELIX, 0, 0), 15);
    /* the first hit is blocked: Buffer waits for the second */
    ck_assert_int_eq(whirlwind_loss(RELIC_FOSSILIZED_HELIX, 0, 5), 10);
    /* Buffer before Torii: the first hit is gone, then 5 -> 1 three times */
    ck_assert_int_eq(whirlwind_loss(RELIC_FOSSILIZED_HELIX, RELIC_TORII, 0), 3);
    ck_assert_int_eq(whirlwind_loss(RELIC_TORII, RELIC_FOSSILIZED_HELIX, 0), 3);
    /* Buffer takes HP loss too (Bloodletting) */
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_FOSSILIZED_HELIX, 0);
    c->relic_counter[0] = 1;
    combat_lose_hp(c, 3);
    ck_assert_int_eq(c->hp, 999);
    ck_assert_int_eq(c->relic_counter[0], 0);
    combat_lose_hp(c, 3);
    ck_assert_int_eq(c->hp, 996);
}
END_TEST

START_TEST(strike_dummy_and_paper_phrog_in_the_damage_formula) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_STRIKE_DUMMY, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    sf_card strike = fx_card(c, CARD_STRIKE, 0), twin = fx_card(c, CARD_TWIN_STRIKE, 0);
    sf_card bash = fx_card(c, CARD_BASH, 0);
    ck_assert_int_eq(combat_card_damage(c, &strike, 6, 0), 9);
    ck_assert_int_eq(combat_card_damage(c, &twin, 5, 0), 8);
    ck_assert_int_eq(combat_card_damage(c, &bash, 8, 0), 8);
    c->pw[PW_WEAK] = 1; /* +3 before Weak: (6 + 3) * 0.75 = 6.75 */
    ck_assert_int_eq(combat_card_damage(c, &strike, 6, 0), 6);
    c->pw[PW_WEAK] = 0;
    c->mon[0].pw[PW_VULN] = 1; /* (6 + 3) * 1.5 = 13.5 */
    ck_assert_int_eq(combat_card_damage(c, &strike, 6, 0), 13);
    c = with_relics(&s, RELIC_PAPER_PHROG, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    c->mon[0].pw[PW_VULN] = 1;
    ck_assert_int_eq(combat_card_damage(c, &strike, 6, 0), 10); /* 6 * 1.75 = 10.5 */
    ck_assert_int_eq(combat_card_damage(c, &bash, 8, 0), 14);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 490);
    /* the player's own Vulnerable stays x1.5 */
    c->mon[0].move = MV_DARK_STRIKE;
    c->pw[PW_VULN] = 1;
    FX_END(&s);
    ck_assert_int_eq(c->hp, 999 - 9);
}
END_TEST

START_TEST(champion_belt_weak_with_vulnerable_unless_artifact) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_CHAMPION_BELT, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    c->mon[0].pw[PW_ARTIFACT] = 1;
    fx_hand(c, CARD_BASH, 0);
    fx_hand(c, CARD_BASH, 0);
    c->energy = 9;
    FX_PLAY(&s, 0, 0); /* Artifact eats the Vulnerable; no Weak either */
    ck_assert_int_eq(c->mon[0].pw[PW_ARTIFACT], 0);
    ck_assert_int_eq(c->mon[0].pw[PW_VULN], 0);
    ck_assert_int_eq(c->mon[0].pw[PW_WEAK], 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].pw[PW_VULN], 2);
    ck_assert_int_eq(c->mon[0].pw[PW_WEAK], 1);
    /* Bag of Marbles' Vulnerable is the player's too */
    c = start_holding(&s, ENC_2_LOUSE, RELIC_CHAMPION_BELT, 0);
    ck_assert_int_eq(c->mon[0].pw[PW_WEAK], 0);
    sf_fight_spec spec = fx_spec();
    spec.encounter = ENC_2_LOUSE;
    spec.relics[spec.relics_n++] = RELIC_BAG_OF_MARBLES;
    spec.relics[spec.relics_n++] = RELIC_CHAMPION_BELT;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    for (int m = 0; m < combat_of(&s)->n_mon; m++)
        ck_assert_int_eq(combat_of(&s)->mon[m].pw[PW_WEAK], 1);
}
END_TEST

START_TEST(ginger_and_turnip_stop_weak_and_frail_before_artifact) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_GINGER, RELIC_TURNIP);
    c->pw[PW_ARTIFACT] = 1;
    combat_power_player(c, PW_WEAK, 2, 1);
    combat_power_player(c, PW_FRAIL, 2, 1);
    ck_assert_int_eq(c->pw[PW_WEAK], 0);
    ck_assert_int_eq(c->pw[PW_FRAIL], 0);
    ck_assert_int_eq(c->pw[PW_ARTIFACT], 1);
    combat_power_player(c, PW_VULN, 2, 1);
    ck_assert_int_eq(c->pw[PW_ARTIFACT], 0);
}
END_TEST

START_TEST(magic_flower_and_lizard_tail) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_MAGIC_FLOWER, RELIC_BURNING_BLOOD);
    c->hp = 50;
    c->max_hp = 80;
    combat_heal(c, 5); /* round(7.5) = 8 */
    ck_assert_int_eq(c->hp, 58);
    fx_mon(c, MON_CULTIST, 5, MV_INCANTATION);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0); /* Burning Blood on victory: 6 * 1.5 = 9 */
    ck_assert(c->flags & FL_WON);
    ck_assert_int_eq(c->hp, 67);
    /* Lizard Tail: half of max HP once, a heal (x1.5 with Magic Flower) */
    c = with_relics(&s, RELIC_LIZARD_TAIL, 0);
    c->hp = 5;
    c->max_hp = 81;
    fx_mon(c, MON_JAW_WORM, 500, MV_CHOMP);
    FX_END(&s);
    ck_assert_int_eq(c->hp, 40);
    ck_assert_int_eq(c->relic_counter[0], 1);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    c->hp = 5;
    c->mon[0].move = MV_CHOMP;
    FX_END(&s);
    ck_assert(c->flags & FL_LOST);
    c = with_relics(&s, RELIC_LIZARD_TAIL, RELIC_MAGIC_FLOWER);
    c->hp = 5;
    c->max_hp = 80;
    combat_lose_hp(c, 20);
    ck_assert_int_eq(c->hp, 60);
    /* Fairy in a Bottle comes first and leaves the tail unused */
    c = with_relics(&s, RELIC_LIZARD_TAIL, 0);
    c->hp = 5;
    c->max_hp = 80;
    c->potions[0] = POTION_FAIRY;
    combat_lose_hp(c, 20);
    ck_assert_int_eq(c->hp, 24);
    ck_assert_int_eq(c->relic_counter[0], 0);
}
END_TEST

START_TEST(calipers_keep_all_but_fifteen_block_and_ice_cream_keeps_energy) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_CALIPERS, RELIC_ICE_CREAM);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    c->block = 30;
    c->energy = 2;
    FX_END(&s);
    ck_assert_int_eq(c->block, 15);
    ck_assert_int_eq(c->energy, 5);
    c->mon[0].move = MV_INCANTATION;
    c->block = 10;
    FX_END(&s);
    ck_assert_int_eq(c->block, 0);
    ck_assert_int_eq(c->energy, 8);
}
END_TEST

START_TEST(gremlin_horn_while_another_monster_lives) {
    /* The first kill: +1 energy and 1 card after the Strike resolves; the
     * last kill ends the fight instead. A split parent does not die by
     * damage (die(false)): no trigger. Act 1 has no minions. */
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_GREMLIN_HORN, 0);
    fx_mon(c, MON_MAD_GREMLIN, 5, MV_SCRATCH);
    fx_mon(c, MON_FAT_GREMLIN, 5, MV_SMASH);
    fx_draw(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->energy, 3);
    ck_assert_int_eq(c->hand_n, 2);
    ck_assert_int_eq(c->hand[1].id, CARD_DEFEND);
    ck_assert_int_eq(c->n_mon, 1);
    FX_PLAY(&s, 0, 0);
    ck_assert(c->flags & FL_WON);
    ck_assert_int_eq(c->energy, 2);
    c = with_relics(&s, RELIC_GREMLIN_HORN, 0);
    fx_mon(c, MON_ACID_SLIME_L, 60, MV_SPLIT);
    c->mon[0].hp = 30;
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    for (int i = 0; i < 10; i++)
        fx_draw(c, CARD_DEFEND, 0);
    FX_END(&s); /* the split: no card drawn during the monster phase */
    ck_assert_int_eq(c->n_mon, 3);
    ck_assert_int_eq(c->hand_n, 5);
}
END_TEST

START_TEST(charons_ashes_and_dead_branch_on_exhaust) {
    /* Impervious exhausts: Charon's Ashes deals 3 THORNS to every enemy at
     * once; Dead Branch picks returnTrulyRandomCardInCombat now
     * (cardRandomRng seeded 8: random(69) = 63, the 64th of Ironclad
     * commons, uncommons, rares, each pool reversed, Feed and Reaper left
     * out: Berserk) and the card reaches the hand after the play. */
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_CHARONS_ASHES, RELIC_DEAD_BRANCH);
    sf_rng_seed(&c->rng[SF_STREAM_CARD_RANDOM], 8);
    fx_mon(c, MON_CULTIST, 50, MV_INCANTATION);
    fx_mon(c, MON_CULTIST, 50, MV_INCANTATION);
    c->mon[1].block = 1;
    fx_hand(c, CARD_IMPERVIOUS, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->mon[0].hp, 47);
    ck_assert_int_eq(c->mon[1].hp, 48);
    ck_assert_int_eq(c->exhaust_n, 1);
    ck_assert_int_eq(c->hand_n, 1);
    ck_assert_int_eq(c->hand[0].id, CARD_BERSERK);
    ck_assert_int_eq(c->hand[0].upg, 0);
}
END_TEST

/* Play Inflame from [Strike, Inflame, Defend, Anger, Bash, Whirlwind] with
 * cardRandomRng seeded 1 and the two relics in that order. */
static sf_combat *inflame_with(sf_state *s, int a, int b) {
    sf_combat *c = with_relics(s, a, b);
    sf_rng_seed(&c->rng[SF_STREAM_CARD_RANDOM], 1);
    int ink = combat_relic_slot(c, RELIC_INK_BOTTLE);
    if (ink >= 0)
        c->relic_counter[ink] = 9;
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    fx_draw(c, CARD_CLEAVE, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_INFLAME, 0);
    fx_hand(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_ANGER, 0);
    fx_hand(c, CARD_BASH, 0);
    fx_hand(c, CARD_WHIRLWIND, 0);
    FX_PLAY(s, 1, SF_NO_TARGET);
    return c;
}

START_TEST(mummified_hand_frees_a_random_costed_card_before_ink_bottle_draws) {
    /* Candidates in hand order, the played Inflame gone: Strike, Defend,
     * Bash (Anger costs 0, Whirlwind is X). random(0, 2) with seed 1 is 2:
     * Bash costs 0 this turn. Ink Bottle's draw (Cleave) comes after the
     * pick in either relic order. */
    for (int order = 0; order < 2; order++) {
        sf_state s;
        sf_combat *c = order ? inflame_with(&s, RELIC_MUMMIFIED_HAND, RELIC_INK_BOTTLE)
                             : inflame_with(&s, RELIC_INK_BOTTLE, RELIC_MUMMIFIED_HAND);
        ck_assert_int_eq(c->hand_n, 6);
        ck_assert_int_eq(c->hand[3].id, CARD_BASH);
        ck_assert_int_eq(combat_card_cost(c, &c->hand[3]), 0);
        ck_assert_int_eq(c->hand[5].id, CARD_CLEAVE);
        for (int i = 0; i < c->hand_n; i++)
            ck_assert_int_eq((c->hand[i].flags & CF_FREE_TURN) != 0, i == 3);
        FX_END(&s); /* costs 0 this turn only */
        for (int i = 0; i < c->discard_n; i++)
            ck_assert(!(c->discard[i].flags & CF_FREE_TURN));
    }
    sf_state s;
    sf_combat *c = inflame_with(&s, RELIC_BIRD_FACED_URN, RELIC_MAGIC_FLOWER);
    ck_assert_int_eq(c->hp, 999);
    c = with_relics(&s, RELIC_BIRD_FACED_URN, 0);
    c->hp = 50;
    fx_hand(c, CARD_INFLAME, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hp, 52);
}
END_TEST

START_TEST(self_forming_clay_and_centennial_puzzle_on_hp_loss) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_SELF_FORMING_CLAY, RELIC_CENTENNIAL_PUZZLE);
    fx_mon(c, MON_JAW_WORM, 500, MV_CHOMP);
    for (int i = 0; i < 20; i++)
        fx_draw(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_BLOODLETTING, 0);
    fx_hand(c, CARD_BLOODLETTING, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET); /* 3 HP: draw 3 (once), 3 block next turn */
    ck_assert_int_eq(c->hand_n, 4);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hand_n, 3);
    ck_assert_int_eq(c->relic_counter[0], 6);
    ck_assert_int_eq(c->block, 0);
    FX_END(&s); /* Chomp: 11 more -> 9 block at the turn start */
    ck_assert_int_eq(c->hp, 999 - 3 - 3 - 11);
    ck_assert_int_eq(c->block, 9);
    ck_assert_int_eq(c->relic_counter[0], 0);
    ck_assert_int_eq(c->hand_n, 5);
}
END_TEST

START_TEST(toy_ornithopter_and_unceasing_top) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_TOY_ORNITHOPTER, RELIC_MAGIC_FLOWER);
    c->hp = 50;
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    c->potions[0] = POTION_BLOCK;
    FX_DRINK(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hp, 58); /* 5 x 1.5, rounded */
    ck_assert_int_eq(c->block, 12);
    c = with_relics(&s, RELIC_UNCEASING_TOP, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    fx_draw(c, CARD_STRIKE, 0);
    fx_draw(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_DEFEND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET); /* the hand is empty: draw 1 */
    ck_assert_int_eq(c->hand_n, 1);
    ck_assert_int_eq(c->draw_n, 1);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hand_n, 1);
    ck_assert_int_eq(c->hand[0].id, CARD_STRIKE);
    c->pw[PW_NO_DRAW] = 1;
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->hand_n, 0);
}
END_TEST

START_TEST(bottled_cards_start_in_the_opening_hand) {
    /* Bottled Flame holds Bash (deck index 9: counter 10), Bottled
     * Lightning a Defend (index 5: counter 6); 5 Strikes, 4 Defends, Bash. */
    for (uint64_t seed = 1; seed <= 20; seed++) {
        sf_fight_spec spec = fx_spec();
        spec.seed = seed;
        spec.encounter = ENC_CULTIST;
        spec.relics[spec.relics_n] = RELIC_BOTTLED_FLAME;
        spec.relic_counters[spec.relics_n++] = 10;
        spec.relics[spec.relics_n] = RELIC_BOTTLED_LIGHTNING;
        spec.relic_counters[spec.relics_n++] = 6;
        sf_state s;
        ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
        const sf_combat *c = combat_of(&s);
        ck_assert_int_eq(fx_count(c->hand, c->hand_n, CARD_BASH), 1);
        ck_assert_int_ge(fx_count(c->hand, c->hand_n, CARD_DEFEND), 1);
    }
    sf_fight_spec spec = fx_spec();
    spec.relics[spec.relics_n] = RELIC_BOTTLED_TORNADO;
    spec.relic_counters[spec.relics_n++] = 11; /* the deck has 10 cards */
    sf_state s;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_EINVAL);
}
END_TEST

START_TEST(gambling_chip_discards_any_subset_once_then_draws_as_many) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_GAMBLING_CHIP, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    for (int i = 0; i < 5; i++)
        fx_draw(c, CARD_ANGER, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_BASH, 0);
    relics_at_turn_start_post_draw(c, 0, 1);
    ck_assert_int_eq(c->phase, PH_CHOICE);
    uint8_t opts[SF_MAX_PILE];
    ck_assert_int_eq(c->pending.kind, CH_GAMBLE); /* Gambler's Brew's screen */
    int n = combat_choice_options(c, CH_GAMBLE, opts, NULL);
    ck_assert_int_eq(n, 4); /* Strike (0), Defend (2), Bash (4), done */
    ck_assert_int_eq(opts[0], 0);
    ck_assert_int_eq(opts[1], 2);
    ck_assert_int_eq(opts[2], 4);
    ck_assert_int_eq(opts[3], CHOICE_DONE);
    FX_CHOOSE(&s, 2); /* Defend: later picks come after position 2 */
    n = combat_choice_options(c, CH_GAMBLE, opts, NULL);
    ck_assert_int_eq(n, 3); /* Strike (3), Bash (4), done */
    ck_assert_int_eq(opts[0], 3);
    ck_assert_int_eq(opts[1], 4);
    ck_assert_int_eq(fx_apply(&s, SF_ACT_CHOOSE, 0, SF_NO_TARGET), SF_EINVAL);
    FX_CHOOSE(&s, 4); /* Bash, the last card: nothing after it, so done */
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->discard_n, 2);
    ck_assert_int_eq(c->discard[0].id, CARD_DEFEND);
    ck_assert_int_eq(c->discard[1].id, CARD_BASH);
    ck_assert_int_eq(c->hand_n, 5);
    ck_assert_int_eq(fx_count(c->hand, c->hand_n, CARD_ANGER), 2);
    /* at the start of a fight, after every other turn-1 draw */
    c = start_holding(&s, ENC_CULTIST, RELIC_GAMBLING_CHIP, 0);
    ck_assert_int_eq(c->phase, PH_CHOICE);
    ck_assert(!c->pending.active);
    FX_CHOOSE(&s, CHOICE_DONE);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->hand_n, 5);
    ck_assert_int_eq(c->discard_n, 0);
}
END_TEST

/* Red Skull's -3 is ApplyPowerAction(StrengthPower(-3)): a debuff, which
 * Artifact stops; the relic turns off all the same and the +3 stays. */
START_TEST(red_skull_losing_its_strength_is_a_debuff_artifact_stops) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_RED_SKULL, 0);
    c->hp = 30;
    c->max_hp = 80;
    relics_on_hp_change(c); /* bloodied: +3 */
    ck_assert_int_eq(c->pw[PW_STR], 3);
    c->pw[PW_ARTIFACT] = 1;
    combat_heal(c, 16); /* 46 of 80: no longer bloodied */
    ck_assert_int_eq(c->pw[PW_STR], 3);
    ck_assert_int_eq(c->pw[PW_ARTIFACT], 0);
    ck_assert(!(c->flags & FL_RED_SKULL_ON));
    c->hp = 30;
    relics_on_hp_change(c); /* bloodied again: +3 more */
    ck_assert_int_eq(c->pw[PW_STR], 6);
}
END_TEST

/* Fairy in a Bottle heals through heal(): Magic Flower's 1.5 (round). */
START_TEST(fairy_in_a_bottle_heal_is_raised_by_magic_flower) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_MAGIC_FLOWER, 0);
    c->hp = 5;
    c->max_hp = 80;
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    c->potions[0] = POTION_FAIRY;
    combat_damage_player(c, 10, DT_HP_LOSS, -1);
    ck_assert_int_eq(c->hp, 36); /* (int)(80 * 0.3) = 24, x 1.5 */
    ck_assert_int_eq(c->potions[0], POTION_NONE);
}
END_TEST

/* Every relic's atTurnStart runs when Mercury Hourglass's damage (only
 * queued in the game) ends the fight: Happy Flower after it still counts
 * the turn, and carries the count to the next fight. */
START_TEST(mercury_hourglass_ending_a_fight_still_lets_other_relics_count) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_MERCURY_HOURGLASS, RELIC_HAPPY_FLOWER);
    fx_mon(c, MON_CULTIST, 3, MV_INCANTATION);
    FX_END(&s);
    ck_assert(sf_engine_is_terminal(&s));
    ck_assert(c->flags & FL_WON);
    ck_assert_int_eq(c->relic_counter[1], 1);
}
END_TEST

/* ------------------------------------------------------------------------
 * Potions (game-rules §8)
 * ---------------------------------------------------------------------- */

SF_TCASE(potions, 0);

START_TEST(every_potion) {
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    for (int i = 0; i < 4; i++)
        fx_draw(c, CARD_STRIKE, 0);
    c->hp = 500;
#define DRINK(p, t)                                   \
    do {                                              \
        c->potions[0] = (p);                          \
        FX_DRINK(&s, 0, (t));                         \
        ck_assert_int_eq(c->potions[0], POTION_NONE); \
    } while (0)
    DRINK(POTION_BLOCK, SF_NO_TARGET);
    ck_assert_int_eq(c->block, 12);
    DRINK(POTION_STRENGTH, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_STR], 2);
    DRINK(POTION_DEXTERITY, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_DEX], 2);
    DRINK(POTION_ENERGY, SF_NO_TARGET);
    ck_assert_int_eq(c->energy, 5);
    DRINK(POTION_SWIFT, SF_NO_TARGET);
    ck_assert_int_eq(c->hand_n, 3);
    DRINK(POTION_FIRE, 0); /* 20 THORNS: Strength and Vulnerable do not apply */
    ck_assert_int_eq(c->mon[0].hp, 80);
    DRINK(POTION_EXPLOSIVE, SF_NO_TARGET);
    ck_assert_int_eq(c->mon[0].hp, 70);
    ck_assert_int_eq(c->mon[1].hp, 90);
    DRINK(POTION_FEAR, 1);
    ck_assert_int_eq(c->mon[1].pw[PW_VULN], 3);
    DRINK(POTION_WEAK, 1);
    ck_assert_int_eq(c->mon[1].pw[PW_WEAK], 3);
    DRINK(POTION_FLEX, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_STR], 7);
    ck_assert_int_eq(c->pw[PW_LOSE_STR], 5);
    DRINK(POTION_SPEED, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_DEX], 7);
    DRINK(POTION_ANCIENT, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_ARTIFACT], 1);
    DRINK(POTION_REGEN, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_REGEN], 5);
    DRINK(POTION_HEART_OF_IRON, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_METALLICIZE], 6);
    DRINK(POTION_ESSENCE_OF_STEEL, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_PLATED], 4);
    DRINK(POTION_LIQUID_BRONZE, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_THORNS], 3);
    DRINK(POTION_FRUIT_JUICE, SF_NO_TARGET);
    ck_assert_int_eq(c->max_hp, 1004);
    ck_assert_int_eq(c->hp, 505);
    DRINK(POTION_BLOOD, SF_NO_TARGET); /* 20% of 1004 = 200 */
    ck_assert_int_eq(c->hp, 705);
    ck_assert_int_eq(c->potions_used, 18);
    /* end of turn: Flex's and Speed's loss (Artifact eats the first, Flex's
     * Strength loss), Metallicize 6 + Plated 4 block, Regen 5 heal */
    FX_END(&s);
    ck_assert_int_eq(c->pw[PW_ARTIFACT], 0);
    ck_assert_int_eq(c->pw[PW_STR], 7);
    ck_assert_int_eq(c->pw[PW_DEX], 2);
    ck_assert_int_eq(c->pw[PW_REGEN], 4);
    ck_assert_int_eq(c->hp, 710);
#undef DRINK
}
END_TEST

START_TEST(fairy_in_a_bottle_revives_at_thirty_percent) {
    sf_state s;
    sf_combat *c = fx_new(&s, 1);
    c->hp = 5;
    c->max_hp = 81;
    c->potions[2] = POTION_FAIRY;
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    ck_assert_int_eq(fx_apply(&s, SF_ACT_POTION, 2, SF_NO_TARGET), SF_EINVAL); /* not drinkable */
    FX_END(&s);
    ck_assert_int_eq(c->hp, 24); /* floor(81 x 0.3) */
    ck_assert_int_eq(c->potions[2], POTION_NONE);
    ck_assert(!sf_engine_is_terminal(&s));
}
END_TEST

/* ---- The potions of the Ironclad pool beyond the plain ones ---- */

/* Drink the potion in `slot` through the search-facing API: the action
 * must be among sf_engine_enumerate()'s. */
static void drink_listed(sf_state *s, int slot, int target) {
    sf_action a[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(s, a, SF_MAX_ACTIONS), found = 0;
    for (int i = 0; i < n; i++)
        found |= a[i].kind == SF_ACT_POTION && a[i].index == slot && a[i].target == target;
    ck_assert_msg(found, "potion slot %d is not a legal action", slot);
    FX_DRINK(s, slot, target);
}

/* The open screen's legal choices (sf_engine_enumerate): option ids into
 * opts[], card ids (-1: "done") into ids[]; returns the count. */
static int listed_choices(const sf_state *s, int *opts, int *ids) {
    sf_action a[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(s, a, SF_MAX_ACTIONS);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(a[i].kind, SF_ACT_CHOOSE);
        sf_action_info info;
        ck_assert_int_eq(sf_engine_action_info(s, a[i], &info), SF_OK);
        opts[i] = a[i].index;
        ids[i] = info.card_id;
    }
    return n;
}

START_TEST(blessing_of_the_forge_upgrades_the_hand_in_place) {
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_BODY_SLAM, 0); /* 1 -> 0 when upgraded */
    fx_hand(c, CARD_WOUND, 0);     /* a status: not upgradable */
    fx_hand(c, CARD_BASH, 1);      /* already upgraded */
    fx_hand(c, CARD_SEARING_BLOW, 1);
    c->potions[1] = POTION_BLESSING_OF_THE_FORGE;
    drink_listed(&s, 1, SF_NO_TARGET);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->hand_n, 5);
    ck_assert_int_eq(c->hand[0].id, CARD_STRIKE);
    ck_assert_int_eq(c->hand[0].upg, 1);
    ck_assert_int_eq(c->hand[1].id, CARD_BODY_SLAM);
    ck_assert_int_eq(c->hand[1].upg, 1);
    ck_assert_int_eq(c->hand[1].cost, 0);
    ck_assert_int_eq(c->hand[2].upg, 0);
    ck_assert_int_eq(c->hand[3].upg, 1);
    ck_assert_int_eq(c->hand[4].upg, 2); /* Searing Blow upgrades again */
    ck_assert_int_eq(c->potions[1], POTION_NONE);
    ck_assert_int_eq(c->potions_used, 1);
}
END_TEST

START_TEST(cultist_potion_gains_strength_at_every_turn_end) {
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_CULTIST, 200, MV_INCANTATION);
    c->potions[0] = POTION_CULTIST;
    drink_listed(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_RITUAL], 1);
    ck_assert_int_eq(c->pw[PW_STR], 0);
    FX_END(&s); /* the turn it is drunk counts */
    ck_assert_int_eq(c->pw[PW_STR], 1);
    FX_END(&s);
    ck_assert_int_eq(c->pw[PW_STR], 2);
    ck_assert_int_eq(c->pw[PW_RITUAL], 1);
}
END_TEST

START_TEST(liquid_memories_returns_a_discard_for_free) {
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    fx_discard(c, CARD_STRIKE, 0);
    fx_discard(c, CARD_BASH, 0);
    fx_discard(c, CARD_STRIKE, 0);
    fx_discard(c, CARD_DEFEND, 0);
    c->energy = 0;
    c->potions[2] = POTION_LIQUID_MEMORIES;
    drink_listed(&s, 2, SF_NO_TARGET);
    ck_assert_int_eq(c->phase, PH_CHOICE);
    ck_assert_int_eq(c->pending.active, 0); /* no card in limbo */
    int opts[SF_MAX_ACTIONS], ids[SF_MAX_ACTIONS];
    int n = listed_choices(&s, opts, ids);
    ck_assert_int_eq(n, 3); /* Strike, Bash, Defend: the two Strikes are one option */
    int bash = -1;
    for (int i = 0; i < n; i++)
        if (ids[i] == CARD_BASH)
            bash = opts[i];
    ck_assert_int_ge(bash, 0);
    FX_CHOOSE(&s, bash);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->hand_n, 1);
    ck_assert_int_eq(c->hand[0].id, CARD_BASH);
    ck_assert_int_eq(combat_card_cost(c, &c->hand[0]), 0); /* costs 0 this turn */
    ck_assert_int_eq(c->discard_n, 3);
    ck_assert_int_eq(fx_count(c->discard, c->discard_n, CARD_BASH), 0);
    FX_PLAY(&s, 0, 0); /* with no energy: 8 damage, 2 Vulnerable */
    ck_assert_int_eq(c->mon[0].hp, 32);
    ck_assert_int_eq(c->mon[0].pw[PW_VULN], 2);
    /* a one-card discard pile moves without a screen; the flag ends with
     * the turn */
    sf_state s2;
    sf_combat *c2 = setup(&s2);
    fx_mon(c2, MON_JAW_WORM, 40, MV_CHOMP);
    fx_discard(c2, CARD_INFLAME, 0);
    c2->potions[0] = POTION_LIQUID_MEMORIES;
    drink_listed(&s2, 0, SF_NO_TARGET);
    ck_assert_int_eq(c2->phase, PH_PLAYER);
    ck_assert_int_eq(c2->hand[0].id, CARD_INFLAME);
    ck_assert(c2->hand[0].flags & CF_FREE_TURN);
    /* an empty discard pile: nothing happens, the potion is spent */
    c2->potions[1] = POTION_LIQUID_MEMORIES;
    FX_DRINK(&s2, 1, SF_NO_TARGET);
    ck_assert_int_eq(c2->phase, PH_PLAYER);
    ck_assert_int_eq(c2->hand_n, 1);
    ck_assert_int_eq(c2->potions_used, 2);
}
END_TEST

START_TEST(snecko_oil_draws_five_then_rerolls_every_cost) {
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    fx_hand(c, CARD_WHIRLWIND, 0); /* X: kept */
    fx_hand(c, CARD_WOUND, 0);     /* unplayable: kept */
    int ib = fx_hand(c, CARD_BLUDGEON, 0);
    c->hand[ib].flags |= CF_FREE_TURN; /* "costs 0 this turn" */
    fx_draw(c, CARD_OFFERING, 0);      /* the bottom: not reached by 5 draws */
    fx_draw(c, CARD_DEFEND, 0);
    fx_draw(c, CARD_DEFEND, 0);
    fx_draw(c, CARD_BASH, 0);
    fx_draw(c, CARD_INFLAME, 0);
    fx_draw(c, CARD_STRIKE, 0);
    /* The stream as RandomizeHandCostAction will read it: one random(3)
     * per card of cost >= 0, in hand order, after the draw. */
    sf_rng r = c->rng[SF_STREAM_CARD_RANDOM];
    int want[6];
    for (int i = 0; i < 6; i++)
        want[i] = sf_rng_random(&r, 3);
    c->potions[0] = POTION_SNECKO_OIL;
    drink_listed(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hand_n, 8);
    ck_assert_int_eq(c->draw_n, 1);
    ck_assert_int_eq(c->hand[0].cost, COST_X);
    ck_assert_int_eq(c->hand[1].cost, COST_UNPLAYABLE);
    /* Bludgeon, then the draws: Strike, Inflame, Bash, Defend x2 */
    static const int order[6] = {CARD_BLUDGEON, CARD_STRIKE, CARD_INFLAME,
                                 CARD_BASH,     CARD_DEFEND, CARD_DEFEND};
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(c->hand[2 + i].id, order[i]);
        ck_assert_int_eq(c->hand[2 + i].cost, want[i]);
    }
    /* seed 21 (setup), stream 3: the rolls are 2, 0, 2, 1, 2, 0 */
    static const int seed21[6] = {2, 0, 2, 1, 2, 0};
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(want[i], seed21[i]);
    /* Bludgeon's new cost 2 differs from 3: its free turn ends; Strike
     * rolls 0, Inflame 2, Bash 1, the Defends 2 and 0, for the rest of the
     * combat */
    ck_assert(!(c->hand[2].flags & CF_FREE_TURN));
    ck_assert_int_eq(combat_card_cost(c, &c->hand[2]), 2);
    ck_assert_int_eq(c->hand[3].cost, 0); /* Strike */
    ck_assert_int_eq(c->hand[4].cost, 2); /* Inflame */
    ck_assert_int_eq(c->hand[6].cost, 2); /* the first Defend */
    ck_assert_int_eq(c->hand[7].cost, 0);
    ck_assert_int_eq(c->rng[SF_STREAM_CARD_RANDOM].counter, r.counter);
}
END_TEST

START_TEST(duplication_potion_plays_the_next_card_twice) {
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    fx_hand(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_STRIKE, 0);
    c->potions[0] = POTION_DUPLICATION;
    drink_listed(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_DUPLICATION], 1);
    FX_PLAY(&s, 0, SF_NO_TARGET); /* a Skill too: 5 + 5 block, one card to discard */
    ck_assert_int_eq(c->block, 10);
    ck_assert_int_eq(c->pw[PW_DUPLICATION], 0);
    ck_assert_int_eq(c->discard_n, 1);
    ck_assert_int_eq(c->energy, 2);
    FX_PLAY(&s, 0, 0); /* the next card plays once */
    ck_assert_int_eq(c->mon[0].hp, 34);
    /* unused, it is gone after the round */
    c->potions[1] = POTION_DUPLICATION;
    FX_DRINK(&s, 1, SF_NO_TARGET);
    FX_END(&s);
    ck_assert_int_eq(c->pw[PW_DUPLICATION], 0);
}
END_TEST

START_TEST(distilled_chaos_plays_the_top_three_at_random_targets) {
    sf_state s;
    sf_combat *c = fx_new(&s, 8);
    c->hp = c->max_hp = 999;
    fx_mon(c, MON_CULTIST, 50, MV_INCANTATION);
    fx_mon(c, MON_CULTIST, 50, MV_INCANTATION);
    fx_draw(c, CARD_WHIRLWIND, 0); /* 4th: stays */
    fx_draw(c, CARD_BASH, 0);
    fx_draw(c, CARD_DEFEND, 0);
    fx_draw(c, CARD_STRIKE, 0); /* top */
    /* getRandomMonster: one cardRandomRng.random(1) per card, at use */
    sf_rng r = c->rng[SF_STREAM_CARD_RANDOM];
    int t[3];
    for (int i = 0; i < 3; i++)
        t[i] = sf_rng_random(&r, 1);
    /* seed 8, stream 3: 1, 1, 0: Strike at monster 1, Defend (its target
     * unused), Bash at monster 0 */
    ck_assert_int_eq(t[0], 1);
    ck_assert_int_eq(t[1], 1);
    ck_assert_int_eq(t[2], 0);
    c->potions[0] = POTION_DISTILLED_CHAOS;
    drink_listed(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->pending.active, 0);
    ck_assert_int_eq(c->energy, 3); /* free */
    ck_assert_int_eq(c->block, 5);
    ck_assert_int_eq(c->mon[1].hp, 50 - 6);
    ck_assert_int_eq(c->mon[0].hp, 50 - 8);
    ck_assert_int_eq(c->mon[0].pw[PW_VULN], 2);
    ck_assert_int_eq(c->draw_n, 1);
    ck_assert_int_eq(c->draw[0].id, CARD_WHIRLWIND);
    ck_assert_int_eq(c->discard_n, 3); /* they go where a played card goes */
    ck_assert_int_eq(c->cards_played, 3);
    ck_assert_int_eq(c->rng[SF_STREAM_CARD_RANDOM].counter, r.counter);
}
END_TEST

START_TEST(distilled_chaos_sends_an_unplayable_card_to_discard) {
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_JAW_WORM, 50, MV_CHOMP);
    fx_draw(c, CARD_WOUND, 0);
    fx_draw(c, CARD_ARMAMENTS, 0); /* its screen waits with Wound still queued */
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEFEND, 0);
    c->potions[0] = POTION_DISTILLED_CHAOS;
    drink_listed(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->phase, PH_CHOICE);
    ck_assert_int_eq(c->pending.active, 1);
    ck_assert_int_eq(c->pending.queue_n, 1);
    FX_CHOOSE(&s, 1); /* upgrade Defend */
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(fx_count(c->discard, c->discard_n, CARD_WOUND), 1);
    ck_assert_int_eq(fx_count(c->discard, c->discard_n, CARD_ARMAMENTS), 1);
    ck_assert_int_eq(c->exhaust_n, 0);
    ck_assert_int_eq(c->block, 5); /* Armaments */
    ck_assert_int_eq(c->draw_n, 0);
    /* Entangled: an Attack cannot be used; Fiend Fire exhausts itself all
     * the same, Strike goes to the discard pile */
    sf_state s2;
    sf_combat *c2 = setup(&s2);
    fx_mon(c2, MON_JAW_WORM, 50, MV_CHOMP);
    fx_draw(c2, CARD_STRIKE, 0);
    fx_draw(c2, CARD_FIEND_FIRE, 0);
    c2->pw[PW_ENTANGLED] = 1;
    c2->potions[0] = POTION_DISTILLED_CHAOS;
    drink_listed(&s2, 0, SF_NO_TARGET);
    ck_assert_int_eq(c2->mon[0].hp, 50);
    ck_assert_int_eq(c2->exhaust_n, 1);
    ck_assert_int_eq(c2->exhaust[0].id, CARD_FIEND_FIRE);
    ck_assert_int_eq(c2->discard_n, 1);
    ck_assert_int_eq(c2->discard[0].id, CARD_STRIKE);
    ck_assert_int_eq(c2->cards_played, 0);
}
END_TEST

/* A card whose target dies before it plays cannot be used
 * (cardPlayable: the target is dying): it goes where a used card goes, to
 * the discard pile, and nothing triggers on an exhaust (Charon's Ashes). */
START_TEST(distilled_chaos_card_whose_target_died_is_discarded) {
    sf_state s;
    sf_combat *c = fx_new(&s, 8);
    c->hp = c->max_hp = 999;
    c->relics[c->relic_n++] = RELIC_CHARONS_ASHES;
    fx_mon(c, MON_CULTIST, 6, MV_INCANTATION);
    fx_mon(c, MON_CULTIST, 40, MV_INCANTATION);
    fx_draw(c, CARD_BASH, 0);   /* third: at monster 0 */
    fx_draw(c, CARD_CLEAVE, 0); /* second: 8 to all, monster 0 dies */
    fx_draw(c, CARD_STRIKE, 0); /* top: at monster 1 */
    /* seed 8's target draws are 1, 1, 0 (the test above) */
    c->potions[0] = POTION_DISTILLED_CHAOS;
    drink_listed(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->n_mon, 1);
    ck_assert_int_eq(c->mon[0].hp, 40 - 6 - 8); /* no Ashes: nothing exhausted */
    ck_assert_int_eq(c->exhaust_n, 0);
    ck_assert_int_eq(c->discard_n, 3);
    ck_assert_int_eq(fx_count(c->discard, c->discard_n, CARD_BASH), 1);
    ck_assert_int_eq(c->cards_played, 2);
}
END_TEST

START_TEST(distilled_chaos_havoc_card_plays_after_the_other_two) {
    /* The card queue: Havoc's top card joins behind the two cards Distilled
     * Chaos already took, so Strike hits before Bash's Vulnerable. */
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_JAW_WORM, 50, MV_CHOMP);
    fx_draw(c, CARD_BASH, 0);
    fx_draw(c, CARD_DEFEND, 0);
    fx_draw(c, CARD_STRIKE, 0);
    fx_draw(c, CARD_HAVOC, 0); /* top */
    c->potions[0] = POTION_DISTILLED_CHAOS;
    drink_listed(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->mon[0].hp, 50 - 6 - 8); /* Strike 6, not 9 */
    ck_assert_int_eq(c->mon[0].pw[PW_VULN], 2);
    ck_assert_int_eq(c->block, 5);
    ck_assert_int_eq(c->exhaust_n, 1); /* Bash, which Havoc played */
    ck_assert_int_eq(c->exhaust[0].id, CARD_BASH);
    ck_assert_int_eq(c->discard_n, 3); /* Havoc, Strike, Defend */
    ck_assert_int_eq(c->cards_played, 4);
}
END_TEST

START_TEST(an_overfull_autoplay_queue_ends_the_fight_at_the_engine_limit) {
    /* Duplication twice behind Distilled Chaos's Havoc, Havoc: the second
     * Havoc's copy would queue a fifth card. */
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_JAW_WORM, 500, MV_CHOMP);
    for (int i = 0; i < 6; i++)
        fx_draw(c, CARD_DEFEND, 0);
    fx_draw(c, CARD_DEFEND, 0);
    fx_draw(c, CARD_HAVOC, 0);
    fx_draw(c, CARD_HAVOC, 0); /* top */
    c->pw[PW_DUPLICATION] = 2;
    c->potions[0] = POTION_DISTILLED_CHAOS;
    drink_listed(&s, 0, SF_NO_TARGET);
    ck_assert(sf_engine_is_terminal(&s));
    sf_outcome o;
    sf_engine_outcome(&s, &o);
    ck_assert_int_eq(o.engine_limit, 1);
    ck_assert_int_eq(o.won, 0);
}
END_TEST

START_TEST(smoke_bomb_escapes_a_fight_but_not_a_boss) {
    sf_state s;
    sf_combat *c = setup(&s);
    c->hp = 40;
    c->relics[c->relic_n++] = RELIC_BURNING_BLOOD;
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    c->potions[1] = POTION_SMOKE_BOMB;
    drink_listed(&s, 1, SF_NO_TARGET);
    ck_assert(sf_engine_is_terminal(&s));
    sf_outcome o;
    sf_engine_outcome(&s, &o);
    ck_assert_int_eq(o.won, 1);
    ck_assert_int_eq(o.escaped, 1);
    ck_assert_int_eq(o.hp, 46); /* endBattle: Burning Blood heals */
    ck_assert_int_eq(o.monster_hp_left, 40);
    ck_assert_int_eq(o.potions_left, 0);
    /* a boss in the fight: canUse is false */
    sf_state b;
    sf_combat *cb = setup(&b);
    fx_mon(cb, MON_HEXAGHOST, 250, MV_ACTIVATE);
    cb->potions[0] = POTION_SMOKE_BOMB;
    sf_action a[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(&b, a, SF_MAX_ACTIONS);
    for (int i = 0; i < n; i++)
        ck_assert_int_ne(a[i].kind, SF_ACT_POTION);
    ck_assert_int_eq(fx_apply(&b, SF_ACT_POTION, 0, SF_NO_TARGET), SF_EINVAL);
    ck_assert_int_eq(cb->potions[0], POTION_SMOKE_BOMB);
    /* a split Slime Boss: the boss has left our monster list but is still
     * in the game's, so the fight stays a boss fight */
    cb = setup(&b);
    cb->encounter = ENC_SLIME_BOSS;
    fx_mon(cb, MON_ACID_SLIME_L, 70, MV_ACID_SPIT);
    fx_mon(cb, MON_SPIKE_SLIME_L, 70, MV_FLAME_TACKLE);
    cb->potions[0] = POTION_SMOKE_BOMB;
    n = sf_engine_enumerate(&b, a, SF_MAX_ACTIONS);
    for (int i = 0; i < n; i++)
        ck_assert_int_ne(a[i].kind, SF_ACT_POTION);
}
END_TEST

/* Smoke Bomb only starts the escape: Toy Ornithopter's heal (queued by
 * onUsePotion) lands before endBattle's Meat on the Bone and Burning Blood:
 * 38 + 5 = 43 is above half HP, so no Meat, then Burning Blood's 6. */
START_TEST(smoke_bomb_heals_toy_ornithopter_before_the_end_of_combat) {
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_BURNING_BLOOD, RELIC_MEAT_ON_THE_BONE);
    c->relics[c->relic_n++] = RELIC_TOY_ORNITHOPTER;
    c->hp = 38;
    c->max_hp = 80;
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    c->potions[0] = POTION_SMOKE_BOMB;
    drink_listed(&s, 0, SF_NO_TARGET);
    ck_assert(sf_engine_is_terminal(&s));
    ck_assert_int_eq(c->hp, 49);
}
END_TEST

/* returnTrulyRandomCardInCombat(type)'s list, written out from the §11
 * pools (each reversed: the src pools' order), HEALING cards left out. */
static const int skill_list[] = {
    CARD_HAVOC,      CARD_ARMAMENTS,     CARD_SHRUG_IT_OFF,  CARD_TRUE_GRIT,   CARD_FLEX,
    CARD_WARCRY,     CARD_GHOSTLY_ARMOR, CARD_BLOODLETTING,  CARD_SECOND_WIND, CARD_BATTLE_TRANCE,
    CARD_SENTINEL,   CARD_ENTRENCH,      CARD_RAGE,          CARD_DISARM,      CARD_SEEING_RED,
    CARD_SHOCKWAVE,  CARD_BURNING_PACT,  CARD_FLAME_BARRIER, CARD_INTIMIDATE,  CARD_INFERNAL_BLADE,
    CARD_DUAL_WIELD, CARD_POWER_THROUGH, CARD_SPOT_WEAKNESS, CARD_DOUBLE_TAP,  CARD_LIMIT_BREAK,
    CARD_IMPERVIOUS, CARD_EXHUME,        CARD_OFFERING};
static const int power_list[] = {
    CARD_EVOLVE,    CARD_FIRE_BREATHING, CARD_RUPTURE,    CARD_FEEL_NO_PAIN, CARD_DARK_EMBRACE,
    CARD_COMBUST,   CARD_METALLICIZE,    CARD_INFLAME,    CARD_DEMON_FORM,   CARD_CORRUPTION,
    CARD_BARRICADE, CARD_BERSERK,        CARD_JUGGERNAUT, CARD_BRUTALITY};
static const int attack_list[] = {CARD_SWORD_BOOMERANG, CARD_PERFECTED_STRIKE,
                                  CARD_HEAVY_BLADE,     CARD_WILD_STRIKE,
                                  CARD_HEADBUTT,        CARD_CLOTHESLINE,
                                  CARD_TWIN_STRIKE,     CARD_POMMEL_STRIKE,
                                  CARD_THUNDERCLAP,     CARD_CLASH,
                                  CARD_BODY_SLAM,       CARD_IRON_WAVE,
                                  CARD_CLEAVE,          CARD_ANGER,
                                  CARD_UPPERCUT,        CARD_DROPKICK,
                                  CARD_CARNAGE,         CARD_SEARING_BLOW,
                                  CARD_WHIRLWIND,       CARD_SEVER_SOUL,
                                  CARD_RAMPAGE,         CARD_PUMMEL,
                                  CARD_BLOOD_FOR_BLOOD, CARD_HEMOKINESIS,
                                  CARD_RECKLESS_CHARGE, CARD_BLUDGEON,
                                  CARD_FIEND_FIRE,      CARD_IMMOLATE};

/* DiscoveryAction's three: draws from `r` until three distinct. */
static void expect_offers(sf_rng r, const int *list, int n, int out[3]) {
    for (int k = 0; k < 3;) {
        int id = list[sf_rng_random(&r, n - 1)];
        if ((k < 1 || out[0] != id) && (k < 2 || out[1] != id))
            out[k++] = id;
    }
}

/* Drink `potion` and check the offered three against the list, pick the
 * middle one; returns its id. */
static int discover(int potion, const int *list, int n, const int seed_want[3]) {
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    fx_hand(c, CARD_STRIKE, 0);
    c->energy = 0;
    int want[3];
    expect_offers(c->rng[SF_STREAM_CARD_RANDOM], list, n, want);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(want[i], seed_want[i]);
    c->potions[0] = (uint8_t)potion;
    drink_listed(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->phase, PH_CHOICE);
    ck_assert_int_eq(c->pending.kind, CH_DISCOVERY);
    int opts[SF_MAX_ACTIONS], ids[SF_MAX_ACTIONS];
    ck_assert_int_eq(listed_choices(&s, opts, ids), 3);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(ids[i], want[i]);
        ck_assert_int_eq(c->pending.offer[i].upg, 0);
    }
    ck_assert(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
    FX_CHOOSE(&s, opts[1]);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->hand_n, 2);
    ck_assert_int_eq(c->hand[1].id, want[1]);
    int cost = combat_card_cost(c, &c->hand[1]);
    ck_assert(cost == 0 || cost == COST_X); /* free this turn (X stays X) */
    ck_assert_int_eq(c->cards_created, 1);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(c->pending.offer[i].id, CARD_NONE);
    return want[1];
}

START_TEST(attack_skill_power_potions_offer_three_of_the_type) {
    /* seed 21 (setup): stream 3's draws over each list, by hand from the
     * same stream: */
    static const int atk[3] = {CARD_HEAVY_BLADE, CARD_CLEAVE, CARD_TWIN_STRIKE};
    static const int skl[3] = {CARD_SHRUG_IT_OFF, CARD_RAGE, CARD_GHOSTLY_ARMOR};
    static const int pwr[3] = {CARD_RUPTURE, CARD_JUGGERNAUT, CARD_METALLICIZE};
    int n_atk = (int)(sizeof attack_list / sizeof attack_list[0]);
    int n_skl = (int)(sizeof skill_list / sizeof skill_list[0]);
    int n_pwr = (int)(sizeof power_list / sizeof power_list[0]);
    ck_assert_int_eq(n_atk, 28);
    ck_assert_int_eq(n_skl, 28);
    ck_assert_int_eq(n_pwr, 14);
    discover(POTION_ATTACK, attack_list, n_atk, atk);
    discover(POTION_SKILL, skill_list, n_skl, skl);
    discover(POTION_POWER, power_list, n_pwr, pwr);
    /* every id the engine can draw is one of the list (one draw each, many
     * seeds) */
    for (uint64_t seed = 1; seed < 300; seed++) {
        sf_state s;
        sf_combat *c = fx_new(&s, seed);
        int id = combat_random_card(c, CT_SKILL);
        sf_rng r;
        sf_rng_seed(&r, seed + SF_STREAM_CARD_RANDOM);
        ck_assert_int_eq(id, skill_list[sf_rng_random(&r, n_skl - 1)]);
        c = fx_new(&s, seed);
        sf_rng_seed(&r, seed + SF_STREAM_CARD_RANDOM);
        ck_assert_int_eq(combat_random_card(c, CT_POWER), power_list[sf_rng_random(&r, n_pwr - 1)]);
        c = fx_new(&s, seed);
        sf_rng_seed(&r, seed + SF_STREAM_CARD_RANDOM);
        ck_assert_int_eq(combat_random_card(c, CT_ATTACK),
                         attack_list[sf_rng_random(&r, n_atk - 1)]);
    }
}
END_TEST

START_TEST(colorless_potion_offers_three_colorless_cards) {
    /* seed 21 (setup): stream 3 (cardRandomRng) gives random(33) = 24, 6,
     * 12: fx_colorless_src[24] Deep Breath, [6] Good Instincts, [12]
     * Transmutation, three distinct, offered in that order; the middle one
     * is picked and costs 0 this turn. */
    static const int want[3] = {CARD_DEEP_BREATH, CARD_GOOD_INSTINCTS, CARD_TRANSMUTATION};
    int n = (int)(sizeof fx_colorless_src / sizeof fx_colorless_src[0]);
    ck_assert_int_eq(n, 34);
    ck_assert_int_eq(discover(POTION_COLORLESS, fx_colorless_src, n, want), CARD_GOOD_INSTINCTS);
    /* the pick is flagged free this turn; the offers are unupgraded copies */
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    c->potions[0] = POTION_COLORLESS;
    drink_listed(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->pending.active, 0); /* a potion's screen: no card in limbo */
    FX_CHOOSE(&s, 0);
    ck_assert_int_eq(c->hand[0].id, CARD_DEEP_BREATH);
    ck_assert(c->hand[0].flags & CF_FREE_TURN);
    ck_assert_int_eq(c->potions_used, 1);
    /* the run's Colorless Potion is this one */
    ck_assert_int_eq(sf_run_potion_engine(sf_run_potion_lookup("Colorless Potion")),
                     POTION_COLORLESS);
}
END_TEST

/* returnRandomPotion(true), from the public run-potion tables. */
static int expect_potion(sf_rng *r) {
    int roll = sf_rng_random_range(r, 0, 99);
    int rarity = roll < 65 ? 1 : roll < 90 ? 2 : 3;
    int n = sf_run_potion_count() - 1;
    (void)sf_rng_random(r, n - 1); /* "limited": the first is thrown away */
    for (;;) {
        int item = 1 + sf_rng_random(r, n - 1);
        if (run_potion_rarity(item) == rarity &&
            strcmp(sf_run_potion_name(item), "Fruit Juice") != 0)
            return item;
    }
}

START_TEST(entropic_brew_fills_every_empty_slot) {
    for (int slots = SF_POTION_SLOTS; slots <= SF_MAX_POTION_SLOTS; slots += 2) {
        sf_state s;
        sf_combat *c = setup(&s);
        c->potion_slots = (uint8_t)slots;
        fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
        c->potions[0] = POTION_ENTROPIC_BREW;
        c->potions[1] = POTION_FIRE;
        sf_rng r = c->rng[SF_STREAM_POTION];
        int want[SF_MAX_POTION_SLOTS];
        for (int i = 0; i < slots; i++)
            want[i] = sf_run_potion_engine(expect_potion(&r));
        drink_listed(&s, 0, SF_NO_TARGET);
        /* one roll per slot; the empty slots take them in order, the rest
         * are lost */
        ck_assert_int_eq(c->potions[0], want[0]);
        ck_assert_int_eq(c->potions[1], POTION_FIRE);
        for (int i = 2; i < slots; i++)
            ck_assert_int_eq(c->potions[i], want[i - 1]);
        ck_assert_int_eq(c->rng[SF_STREAM_POTION].counter, r.counter);
        if (slots == SF_POTION_SLOTS) {
            /* seed 21 (stream 5): Elixir, then Energy Potion; the third
             * roll (Fire Potion) finds no slot */
            ck_assert_int_eq(want[0], POTION_ELIXIR);
            ck_assert_int_eq(want[1], POTION_ENERGY);
            ck_assert_int_eq(want[2], POTION_FIRE);
        } else {
            ck_assert_int_eq(want[3], POTION_ELIXIR); /* then Skill Potion */
            ck_assert_int_eq(want[4], POTION_SKILL);
        }
    }
}
END_TEST

/* Count the distinct ends of a multi-select screen over every line of
 * choices, and check each end is reached once. */
static int multi_leaves(const sf_state *s, sf_identity *seen, int *n_seen) {
    sf_action a[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(s, a, SF_MAX_ACTIONS);
    if (ccombat_of(s)->phase != PH_CHOICE) {
        sf_identity id = sf_engine_identity(s);
        for (int i = 0; i < *n_seen; i++)
            ck_assert(!sf_identity_eq(seen[i], id)); /* no subset twice */
        seen[(*n_seen)++] = id;
        return 1;
    }
    int leaves = 0;
    for (int i = 0; i < n; i++) {
        sf_state t = *s;
        ck_assert_int_eq(sf_engine_apply(&t, a[i], NULL), SF_OK);
        leaves += multi_leaves(&t, seen, n_seen);
    }
    return leaves;
}

START_TEST(elixir_exhausts_any_subset_once_each) {
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_WOUND, 0);
    c->pw[PW_FNP] = 3;
    c->potions[0] = POTION_ELIXIR;
    drink_listed(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->pending.kind, CH_ELIXIR);
    int opts[SF_MAX_ACTIONS], ids[SF_MAX_ACTIONS];
    /* Strike (the first), Defend, Wound, done */
    ck_assert_int_eq(listed_choices(&s, opts, ids), 4);
    ck_assert_int_eq(opts[0], 0);
    ck_assert_int_eq(opts[1], 2);
    ck_assert_int_eq(opts[2], 3);
    ck_assert_int_eq(opts[3], CHOICE_DONE);
    ck_assert_int_eq(ids[3], -1);
    /* every multiset of {Strike x2, Defend, Wound}: 3 x 2 x 2 = 12 ends */
    sf_identity seen[64];
    int n_seen = 0;
    ck_assert_int_eq(multi_leaves(&s, seen, &n_seen), 12);
    /* Strike, then Wound: nothing left after Wound, the screen closes */
    FX_CHOOSE(&s, 0);
    ck_assert_int_eq(listed_choices(&s, opts, ids), 4); /* Strike, Defend, Wound, done */
    ck_assert_int_eq(opts[0], 1);
    FX_CHOOSE(&s, 3);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->hand_n, 2);
    ck_assert_int_eq(c->hand[0].id, CARD_STRIKE);
    ck_assert_int_eq(c->hand[1].id, CARD_DEFEND);
    ck_assert_int_eq(c->exhaust_n, 2);
    ck_assert_int_eq(fx_count(c->exhaust, c->exhaust_n, CARD_WOUND), 1);
    ck_assert_int_eq(c->block, 6); /* Feel No Pain, per card */
    /* picking none is allowed */
    c->potions[1] = POTION_ELIXIR;
    FX_DRINK(&s, 1, SF_NO_TARGET);
    FX_CHOOSE(&s, CHOICE_DONE);
    ck_assert_int_eq(c->hand_n, 2);
}
END_TEST

START_TEST(gamblers_brew_discards_any_subset_and_draws_as_many) {
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_BASH, 0);
    fx_draw(c, CARD_INFLAME, 0);
    fx_draw(c, CARD_ANGER, 0);
    fx_draw(c, CARD_CLEAVE, 0); /* top */
    c->potions[2] = POTION_GAMBLERS_BREW;
    drink_listed(&s, 2, SF_NO_TARGET);
    ck_assert_int_eq(c->pending.kind, CH_GAMBLE);
    sf_identity seen[64];
    int n_seen = 0;
    ck_assert_int_eq(multi_leaves(&s, seen, &n_seen), 8); /* 2^3 subsets */
    FX_CHOOSE(&s, 0);                                     /* Strike */
    FX_CHOOSE(&s, 2);                                     /* Bash */
    ck_assert_int_eq(c->phase, PH_PLAYER);                /* nothing after Bash: done */
    ck_assert_int_eq(c->hand_n, 3);
    ck_assert_int_eq(c->hand[0].id, CARD_DEFEND);
    ck_assert_int_eq(c->hand[1].id, CARD_CLEAVE);
    ck_assert_int_eq(c->hand[2].id, CARD_ANGER);
    ck_assert_int_eq(c->discard_n, 2);
    ck_assert_int_eq(fx_count(c->discard, c->discard_n, CARD_BASH), 1);
    ck_assert_int_eq(c->draw_n, 1);
    /* an empty hand: nothing to discard, no screen */
    sf_state e;
    sf_combat *ce = setup(&e);
    fx_mon(ce, MON_JAW_WORM, 40, MV_CHOMP);
    ce->potions[0] = POTION_GAMBLERS_BREW;
    FX_DRINK(&e, 0, SF_NO_TARGET);
    ck_assert_int_eq(ce->phase, PH_PLAYER);
}
END_TEST

START_TEST(potion_belt_fights_have_five_slots) {
    sf_fight_spec spec = fx_spec();
    sf_err err = {0};
    ck_assert_int_eq(
        sf_potions_parse("Fire Potion,Block Potion,Swift Potion,Weak Potion", &spec, &err),
        SF_EINVAL);
    ck_assert_str_eq(err.msg, "potions: more than 3");
    spec.potion_slots = 5;
    ck_assert_int_eq(
        sf_potions_parse("Fire Potion,Block Potion,Swift Potion,Weak Potion,Elixir", &spec, &err),
        SF_OK);
    ck_assert_int_eq(spec.potions[4], POTION_ELIXIR);
    ck_assert_int_eq(sf_potions_parse("Elixir,Elixir,Elixir,Elixir,Elixir,Elixir", &spec, &err),
                     SF_EINVAL);
    ck_assert_str_eq(err.msg, "potions: more than 5");
    spec.encounter = ENC_CULTIST;
    spec.seed = 3;
    sf_state s;
    ck_assert_int_eq(sf_engine_init(&s, &spec, &err), SF_OK);
    sf_action a[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(&s, a, SF_MAX_ACTIONS), slots = 0;
    for (int i = 0; i < n; i++)
        slots |= a[i].kind == SF_ACT_POTION ? 1 << a[i].index : 0;
    ck_assert_int_eq(slots, 0x1F);
    ck_assert_int_eq(fx_apply(&s, SF_ACT_POTION, 4, SF_NO_TARGET), SF_OK); /* Elixir */
    ck_assert_int_eq(ccombat_of(&s)->pending.kind, CH_ELIXIR);
    sf_outcome o;
    sf_engine_outcome(&s, &o);
    ck_assert_int_eq(o.potions_left, 4);
    /* a potion past the fight's slots is refused */
    spec.potion_slots = 3;
    ck_assert_int_eq(sf_engine_init(&s, &spec, &err), SF_EINVAL);
    spec.potion_slots = 6;
    ck_assert_int_eq(sf_engine_init(&s, &spec, &err), SF_EINVAL);
}
END_TEST

/* ------------------------------------------------------------------------
 * The action API
 * ---------------------------------------------------------------------- */

SF_TCASE(api, 0);

START_TEST(enumerate_collapses_identical_cards_and_ends_with_end_turn) {
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_STRIKE, 1);
    fx_hand(c, CARD_BLUDGEON, 0); /* too expensive */
    c->potions[0] = POTION_FIRE;
    c->potions[1] = POTION_FIRE;
    c->potions[2] = POTION_BLOCK;
    c->energy = 2;
    sf_action a[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(&s, a, SF_MAX_ACTIONS);
    /* Strike x2 targets, Defend, Strike+ x2, Fire x2 (one slot), Block, End */
    static const uint8_t want[][3] = {{SF_ACT_PLAY, 0, 0},
                                      {SF_ACT_PLAY, 0, 1},
                                      {SF_ACT_PLAY, 1, SF_NO_TARGET},
                                      {SF_ACT_PLAY, 3, 0},
                                      {SF_ACT_PLAY, 3, 1},
                                      {SF_ACT_POTION, 0, 0},
                                      {SF_ACT_POTION, 0, 1},
                                      {SF_ACT_POTION, 2, SF_NO_TARGET},
                                      {SF_ACT_END_TURN, 0, SF_NO_TARGET}};
    ck_assert_int_eq(n, 9);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(a[i].kind, want[i][0]);
        ck_assert_int_eq(a[i].index, want[i][1]);
        ck_assert_int_eq(a[i].target, want[i][2]);
        ck_assert_int_eq(sf_action_decode(sf_action_code(a[i])).index, a[i].index);
    }
    /* a small buffer is never overrun */
    ck_assert_int_eq(sf_engine_enumerate(&s, a, 3), 3);
}
END_TEST

START_TEST(illegal_actions_are_rejected_and_change_nothing) {
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEFEND, 0);
    sf_state before = s;
    const sf_action bad[] = {
        {SF_ACT_PLAY, 0, SF_NO_TARGET, 0},   /* Strike needs a target */
        {SF_ACT_PLAY, 1, 0, 0},              /* Defend takes none */
        {SF_ACT_PLAY, 0, 3, 0},              /* no monster 3 */
        {SF_ACT_PLAY, 7, 0, 0},              /* no card 7 */
        {SF_ACT_POTION, 0, SF_NO_TARGET, 0}, /* empty slot */
        {SF_ACT_CHOOSE, 0, SF_NO_TARGET, 0}, /* no choice open */
        {SF_ACT_END_TURN, 1, SF_NO_TARGET, 0},
        {SF_ACT_END_TURN, 0, SF_NO_TARGET, 1}, /* reserved must be 0 */
        {9, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint32_t mask = 77;
        ck_assert_int_eq(sf_engine_apply(&s, bad[i], &mask), SF_EINVAL);
        ck_assert_uint_eq(mask, 0);
        ck_assert(!memcmp(&s, &before, sizeof s));
    }
    c->energy = 0;
    before = s;
    ck_assert_int_eq(fx_apply(&s, SF_ACT_PLAY, 0, 0), SF_EINVAL);
    ck_assert(!memcmp(&s, &before, sizeof s));
}
END_TEST

START_TEST(choice_screen_accepts_only_choices) {
    sf_state s;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_hand(c, CARD_ARMAMENTS, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_BASH, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    sf_observation o;
    sf_engine_observe(&s, &o);
    ck_assert_int_eq(o.choice_open, 1);
    ck_assert_int_eq(fx_apply(&s, SF_ACT_END_TURN, 0, SF_NO_TARGET), SF_EINVAL);
    ck_assert_int_eq(fx_apply(&s, SF_ACT_PLAY, 0, 0), SF_EINVAL);
    ck_assert_int_eq(fx_apply(&s, SF_ACT_CHOOSE, 5, SF_NO_TARGET), SF_EINVAL);
    sf_action a[SF_MAX_ACTIONS];
    ck_assert_int_eq(sf_engine_enumerate(&s, a, SF_MAX_ACTIONS), 2);
    char name[64];
    sf_engine_action_name(&s, a[1], name, sizeof name);
    ck_assert_str_eq(name, "Choose Bash (upgrade)");
}
END_TEST

START_TEST(init_rejects_bad_specs_with_a_named_field) {
    sf_fight_spec spec;
    sf_state s;
    sf_err e = {0};
    sf_fight_spec_default(&spec);
    spec.ascension = 10;
    ck_assert_int_eq(sf_engine_init(&s, &spec, &e), SF_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(e.msg, "ascension"));
    sf_fight_spec_default(&spec);
    spec.encounter = 20;
    ck_assert_int_eq(sf_engine_init(&s, &spec, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "encounter"));
    sf_fight_spec_default(&spec);
    spec.deck[3].id = CARD_WOUND;
    ck_assert_int_eq(sf_engine_init(&s, &spec, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "deck[3]"));
    sf_fight_spec_default(&spec);
    spec.hp = 81;
    ck_assert_int_eq(sf_engine_init(&s, &spec, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "hp"));
    ck_assert_int_eq(sf_deck_parse("Strike*5,Nonsense", &spec, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "Nonsense"));
    ck_assert_int_eq(sf_deck_parse("Bash++", &spec, &e), SF_EINVAL);
    ck_assert_int_eq(sf_deck_parse("Searing Blow+++,Bash+*2", &spec, &e), SF_OK);
    ck_assert_int_eq(spec.deck_n, 3);
    ck_assert_int_eq(spec.deck[0].upgrades, 3);
}
END_TEST

START_TEST(relic_and_potion_lists_name_the_bad_item) {
    sf_fight_spec spec = fx_spec();
    sf_err e = {0};
    ck_assert_int_eq(sf_relics_parse("Vajra, Anchor", &spec, &e), SF_OK);
    ck_assert_int_eq(spec.relics_n, 2);
    ck_assert_int_eq(spec.relics[0], RELIC_VAJRA);
    ck_assert_int_eq(spec.relics[1], RELIC_ANCHOR);
    ck_assert_int_eq(sf_relics_parse("Vajra,Nonsense", &spec, &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, "relics: unknown relic 'Nonsense'");
    ck_assert_int_eq(spec.relics_n, 2); /* unchanged on error */
    ck_assert_int_eq(sf_potions_parse("Fire Potion,Block Potion", &spec, &e), SF_OK);
    ck_assert_int_eq(spec.potions[0], POTION_FIRE);
    ck_assert_int_eq(spec.potions[1], POTION_BLOCK);
    ck_assert_int_eq(spec.potions[2], 0);
    ck_assert_int_eq(sf_potions_parse("Fire Potion,Fire Potion,Fire Potion,Fire Potion", &spec, &e),
                     SF_EINVAL);
    ck_assert_str_eq(e.msg, "potions: more than 3");
    ck_assert_int_eq(sf_potions_parse(NULL, &spec, &e), SF_EINVAL);
    ck_assert_int_eq(spec.potions[0], POTION_FIRE);
}
END_TEST

/* ------------------------------------------------------------------------
 * Identity (docs/architecture.md "State identity")
 * ---------------------------------------------------------------------- */

static void play_named(sf_state *s, int id, int target) {
    sf_combat *c = combat_of(s);
    for (int i = 0; i < c->hand_n; i++)
        if (c->hand[i].id == id && c->hand[i].upg == 0) {
            FX_PLAY(s, i, target);
            return;
        }
    ck_abort_msg("card %d not in hand", id);
}

static void order_start(sf_state *s, int mon) {
    sf_combat *c = setup(s);
    fx_mon(c, mon, 60, mon == MON_SENTRY ? MV_BOLT : MV_INCANTATION);
    if (mon == MON_SENTRY)
        c->mon[0].pw[PW_ARTIFACT] = 1;
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_BASH, 0);
    fx_hand(c, CARD_STRIKE, 0);
    fx_draw(c, CARD_DEFEND, 0);
    fx_discard(c, CARD_ANGER, 0);
}

SF_TCASE(identity, 0);

START_TEST(defend_strike_equals_strike_defend) {
    sf_state a, b;
    order_start(&a, MON_CULTIST);
    order_start(&b, MON_CULTIST);
    play_named(&a, CARD_DEFEND, SF_NO_TARGET);
    play_named(&a, CARD_STRIKE, 0);
    play_named(&b, CARD_STRIKE, 0);
    play_named(&b, CARD_DEFEND, SF_NO_TARGET);
    ck_assert(sf_identity_eq(sf_engine_identity(&a), sf_engine_identity(&b)));
    /* the raw bytes differ (discard order), the identity does not */
    ck_assert(memcmp(&a, &b, sizeof a) != 0);
}
END_TEST

START_TEST(bash_strike_differs_from_strike_bash) {
    sf_state a, b;
    order_start(&a, MON_CULTIST);
    order_start(&b, MON_CULTIST);
    play_named(&a, CARD_BASH, 0);
    play_named(&a, CARD_STRIKE, 0); /* 8, then 6 x 1.5 = 9 */
    play_named(&b, CARD_STRIKE, 0);
    play_named(&b, CARD_BASH, 0); /* 6, then 8 */
    ck_assert_int_eq(ccombat_of(&a)->mon[0].hp, 43);
    ck_assert_int_eq(ccombat_of(&b)->mon[0].hp, 46);
    ck_assert(!sf_identity_eq(sf_engine_identity(&a), sf_engine_identity(&b)));
}
END_TEST

START_TEST(bash_strike_equals_strike_bash_when_already_vulnerable) {
    sf_state a, b;
    order_start(&a, MON_CULTIST);
    order_start(&b, MON_CULTIST);
    combat_of(&a)->mon[0].pw[PW_VULN] = 1;
    combat_of(&b)->mon[0].pw[PW_VULN] = 1;
    play_named(&a, CARD_BASH, 0);
    play_named(&a, CARD_STRIKE, 0);
    play_named(&b, CARD_STRIKE, 0);
    play_named(&b, CARD_BASH, 0);
    ck_assert(sf_identity_eq(sf_engine_identity(&a), sf_engine_identity(&b)));
}
END_TEST

START_TEST(bash_strike_equals_strike_bash_when_artifact_eats_it) {
    sf_state a, b;
    order_start(&a, MON_SENTRY);
    order_start(&b, MON_SENTRY);
    play_named(&a, CARD_BASH, 0);
    play_named(&a, CARD_STRIKE, 0);
    play_named(&b, CARD_STRIKE, 0);
    play_named(&b, CARD_BASH, 0);
    ck_assert_int_eq(ccombat_of(&a)->mon[0].pw[PW_VULN], 0);
    ck_assert(sf_identity_eq(sf_engine_identity(&a), sf_engine_identity(&b)));
}
END_TEST

START_TEST(identity_excludes_streams_and_statistics_but_not_hand_order) {
    sf_state a, b;
    order_start(&a, MON_CULTIST);
    b = a;
    sf_engine_reseed(&b, SF_STREAM_SHUFFLE, 99);
    combat_of(&b)->damage_dealt = 1234;
    ck_assert(sf_identity_eq(sf_engine_identity(&a), sf_engine_identity(&b)));
    sf_combat *c = combat_of(&b);
    sf_card t = c->hand[0];
    c->hand[0] = c->hand[1];
    c->hand[1] = t;
    ck_assert(!sf_identity_eq(sf_engine_identity(&a), sf_engine_identity(&b)));
    b = a;
    combat_of(&b)->draw_known = 1; /* a known top is information */
    ck_assert(!sf_identity_eq(sf_engine_identity(&a), sf_engine_identity(&b)));
}
END_TEST

/* ------------------------------------------------------------------------
 * Honesty: the belief root
 * ---------------------------------------------------------------------- */

/* Two truths the player cannot tell apart: the same fight, with the unknown
 * part of the draw pile permuted and every stream re-seeded. */
static void twin_truths(sf_state *a, sf_state *b, int encounter, uint64_t seed) {
    sf_fight_spec spec = fx_spec();
    ck_assert_int_eq(sf_deck_parse("Strike*4,Defend*3,Bash,Pommel Strike,Shrug It Off,"
                                   "Wild Strike,Headbutt,Warcry,Anger,Inflame",
                                   &spec, NULL),
                     SF_OK);
    spec.encounter = encounter;
    spec.seed = seed;
    ck_assert_int_eq(sf_engine_init(a, &spec, NULL), SF_OK);
    *b = *a;
    sf_combat *c = combat_of(b);
    int unknown = c->draw_n - c->draw_known;
    for (int i = 0; i + 1 < unknown; i += 2) { /* swap neighbours */
        sf_card t = c->draw[i];
        c->draw[i] = c->draw[i + 1];
        c->draw[i + 1] = t;
    }
    for (int i = 0; i < SF_NUM_STREAMS; i++)
        sf_engine_reseed(b, i, 1000 + (uint64_t)i);
}

SF_TCASE(honesty, 0);

START_TEST(belief_root_is_byte_identical_for_indistinguishable_truths) {
    for (int enc = 0; enc < ENC_COUNT; enc++) {
        sf_state a, b, ra, rb;
        twin_truths(&a, &b, enc, 31 + (uint64_t)enc);
        sf_engine_belief_root(&a, 77, &ra);
        sf_engine_belief_root(&b, 77, &rb);
        ck_assert_msg(!memcmp(&ra, &rb, sizeof ra), "encounter %d", enc);
        ck_assert(sf_identity_eq(sf_engine_identity(&ra), sf_engine_identity(&rb)));
        ck_assert(sf_engine_is_belief(&ra));
        ck_assert(!sf_engine_is_belief(&a));
        /* a different search seed changes only the streams */
        sf_state rc;
        sf_engine_belief_root(&a, 78, &rc);
        ck_assert(sf_identity_eq(sf_engine_identity(&ra), sf_engine_identity(&rc)));
        /* in place works */
        sf_state in = a;
        sf_engine_belief_root(&in, 77, &in);
        ck_assert(!memcmp(&in, &ra, sizeof in));
    }
}
END_TEST

START_TEST(belief_root_stays_identical_after_the_same_visible_play) {
    /* Play the same first card in both truths, then take belief roots:
     * still identical (nothing hidden was revealed differently). */
    int checked = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        sf_state a, b, ra, rb;
        twin_truths(&a, &b, ENC_JAW_WORM, seed);
        sf_combat *ca = combat_of(&a), *cb = combat_of(&b);
        ck_assert(!memcmp(ca->hand, cb->hand, sizeof ca->hand));
        for (int i = 0; i < ca->hand_n; i++) {
            int id = ca->hand[i].id;
            /* cards that reveal nothing hidden (no draw) */
            if (id == CARD_DEFEND || id == CARD_STRIKE || id == CARD_BASH || id == CARD_ANGER ||
                id == CARD_INFLAME || id == CARD_WILD_STRIKE) {
                int t = sf_cards[id].target == TGT_ENEMY ? 0 : SF_NO_TARGET;
                FX_PLAY(&a, i, t);
                FX_PLAY(&b, i, t);
                sf_engine_belief_root(&a, 5, &ra);
                sf_engine_belief_root(&b, 5, &rb);
                ck_assert_msg(!memcmp(&ra, &rb, sizeof ra), "seed %llu after %s",
                              (unsigned long long)seed, sf_cards[id].name);
                checked++;
                break;
            }
        }
    }
    ck_assert_int_ge(checked, 15);
}
END_TEST

START_TEST(belief_draws_are_chance_events_on_the_shuffle_stream) {
    sf_state a, r;
    sf_fight_spec spec = fx_spec();
    spec.seed = 12;
    ck_assert_int_eq(sf_engine_init(&a, &spec, NULL), SF_OK);
    sf_engine_belief_root(&a, 3, &r);
    sf_combat *c = combat_of(&r);
    /* the unknown draw pile is sorted */
    for (int i = 1; i < c->draw_n - c->draw_known; i++)
        ck_assert(memcmp(&c->draw[i - 1], &c->draw[i], sizeof(sf_card)) <= 0);
    uint32_t mask = 0;
    sf_action e = {SF_ACT_END_TURN, 0, SF_NO_TARGET, 0};
    ck_assert_int_eq(sf_engine_apply(&r, e, &mask), SF_OK);
    ck_assert(mask & (1u << SF_STREAM_SHUFFLE));
    /* 5 draws from 5 unknown cards: picks from 5, 4, 3, 2, then the last
     * one needs no draw of chance: 4 calls */
    ck_assert_uint_eq(combat_of(&r)->rng[SF_STREAM_SHUFFLE].counter, 4);
}
END_TEST

START_TEST(known_top_cards_stay_known_and_are_drawn_first) {
    /* Headbutt puts a chosen card on top: in belief mode it is still the
     * next card drawn, without a chance event. */
    sf_state s, r;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    for (int i = 0; i < 6; i++)
        fx_draw(c, i % 2 ? CARD_STRIKE : CARD_DEFEND, 0);
    fx_discard(c, CARD_BASH, 0);
    fx_discard(c, CARD_ANGER, 0);
    fx_hand(c, CARD_HEADBUTT, 0);
    fx_hand(c, CARD_SHRUG_IT_OFF, 0);
    FX_PLAY(&s, 0, 0);
    FX_CHOOSE(&s, 1); /* options sorted: Bash (3) < Anger (4) -> Anger */
    ck_assert_int_eq(c->draw[c->draw_n - 1].id, CARD_ANGER);
    ck_assert_int_eq(c->draw_known, 1);
    sf_engine_belief_root(&s, 9, &r);
    sf_combat *b = combat_of(&r);
    ck_assert_int_eq(b->draw_known, 1);
    ck_assert_int_eq(b->draw[b->draw_n - 1].id, CARD_ANGER);
    uint32_t mask = 0;
    sf_action a = {SF_ACT_PLAY, 0, SF_NO_TARGET, 0}; /* Shrug It Off: draw 1 */
    ck_assert_int_eq(sf_engine_apply(&r, a, &mask), SF_OK);
    ck_assert_uint_eq(mask, 0);
    ck_assert_int_eq(b->hand[b->hand_n - 1].id, CARD_ANGER);
    ck_assert_int_eq(b->draw_known, 0);
}
END_TEST

START_TEST(random_insertion_joins_the_unknown_multiset_in_belief_mode) {
    /* Wild Strike's Wound: in the true state a cardRandomRng spot below the
     * top; in belief mode it joins the sorted unknown region with no random
     * call, and the known top card stays on top. */
    sf_state s, r;
    sf_combat *c = setup(&s);
    fx_mon(c, MON_CULTIST, 100, MV_INCANTATION);
    fx_draw(c, CARD_STRIKE, 0);
    fx_draw(c, CARD_DEFEND, 0);
    fx_draw(c, CARD_BASH, 0); /* known top */
    c->draw_known = 1;
    fx_hand(c, CARD_WILD_STRIKE, 0);
    sf_engine_belief_root(&s, 4, &r);
    uint32_t mask = 0;
    sf_action a = {SF_ACT_PLAY, 0, 0, 0};
    ck_assert_int_eq(sf_engine_apply(&r, a, &mask), SF_OK);
    ck_assert_uint_eq(mask, 0);
    sf_combat *b = combat_of(&r);
    ck_assert_int_eq(b->draw_n, 4);
    ck_assert_int_eq(b->draw[3].id, CARD_BASH);
    ck_assert_int_eq(b->draw_known, 1);
    for (int i = 1; i < 3; i++)
        ck_assert(memcmp(&b->draw[i - 1], &b->draw[i], sizeof(sf_card)) <= 0);
    ck_assert_int_eq(fx_count(b->draw, 4, CARD_WOUND), 1);
}
END_TEST

START_TEST(belief_root_forgets_an_unseen_louse_bite) {
    /* Two 2-Louse truths whose lice differ only in their hidden bite damage
     * (no Bite intent shown yet) give the same belief root. When a Bite
     * intent appears in belief mode the damage is drawn (monsterHpRng). */
    for (uint64_t seed = 1; seed < 200; seed++) {
        sf_state a = fx_fight(ENC_2_LOUSE, seed);
        sf_combat *c = combat_of(&a);
        if (c->mon[0].move == MV_LOUSE_BITE || c->mon[1].move == MV_LOUSE_BITE)
            continue;
        sf_state b = a, ra, rb;
        combat_of(&b)->mon[0].val[0] = c->mon[0].val[0] == 5 ? 6 : 5;
        sf_engine_belief_root(&a, 1, &ra);
        sf_engine_belief_root(&b, 1, &rb);
        ck_assert(!memcmp(&ra, &rb, sizeof ra));
        sf_combat *r = combat_of(&ra);
        ck_assert_int_eq(r->mon[0].val[0], 0);
        monster_set_move(r, 0, MV_LOUSE_BITE);
        ck_assert_int_ge(r->mon[0].val[0], 5);
        ck_assert_int_le(r->mon[0].val[0], 7);
        /* a shown Bite is kept */
        monster_set_move(c, 1, MV_LOUSE_BITE);
        sf_engine_belief_root(&a, 1, &ra);
        ck_assert_int_eq(combat_of(&ra)->mon[1].val[0], c->mon[1].val[0]);
        return;
    }
    ck_abort_msg("no seed without an opening Bite");
}
END_TEST

/* ------------------------------------------------------------------------
 * Gauntlet (game-rules §6)
 * ---------------------------------------------------------------------- */

/* An independent transcription of Exordium.generateMonsters +
 * AbstractDungeon.populateMonsterList / populateFirstStrongEnemy +
 * MonsterInfo.roll/normalizeWeights + initializeBoss (all bosses seen):
 * a sorted (weight, name-order) table walked with monsterRng.random(). */
typedef struct {
    int enc;
    float w;
} info;

static int roll_info(sf_rng *r, const info *l, int n) {
    float x = sf_rng_random_float(r), acc = 0;
    for (int i = 0; i < n; i++) {
        acc += l[i].w;
        if (x < acc)
            return l[i].enc;
    }
    return -1; /* "ERROR" */
}

static void reference_gauntlet(uint64_t seed, int *out) {
    /* normalized weights, sorted ascending by weight (stable) */
    const info weak[4] = {
        {ENC_CULTIST, .25f}, {ENC_JAW_WORM, .25f}, {ENC_2_LOUSE, .25f}, {ENC_SMALL_SLIMES, .25f}};
    const float t = 16.0f;
    const info strong[10] = {{ENC_GREMLIN_GANG, 1 / t},
                             {ENC_LOTS_OF_SLIMES, 1 / t},
                             {ENC_RED_SLAVER, 1 / t},
                             {ENC_EXORDIUM_THUGS, 1.5f / t},
                             {ENC_EXORDIUM_WILDLIFE, 1.5f / t},
                             {ENC_BLUE_SLAVER, 2 / t},
                             {ENC_LOOTER, 2 / t},
                             {ENC_LARGE_SLIME, 2 / t},
                             {ENC_3_LOUSE, 2 / t},
                             {ENC_2_FUNGI_BEASTS, 2 / t}};
    const info elite[3] = {
        {ENC_GREMLIN_NOB, 1 / 3.0f}, {ENC_LAGAVULIN, 1 / 3.0f}, {ENC_3_SENTRIES, 1 / 3.0f}};
    sf_rng r;
    sf_rng_seed(&r, seed);
    int list[16], n = 0;
    while (n < 3) {
        int e = roll_info(&r, weak, 4);
        if (n > 0 && e == list[n - 1])
            continue;
        if (n > 1 && e == list[n - 2])
            continue;
        list[n++] = e;
    }
    for (;;) {
        int e = roll_info(&r, strong, 10);
        int last = list[n - 1];
        if (last == ENC_SMALL_SLIMES && (e == ENC_LARGE_SLIME || e == ENC_LOTS_OF_SLIMES))
            continue;
        if (last == ENC_2_LOUSE && e == ENC_3_LOUSE)
            continue;
        list[n++] = e;
        break;
    }
    for (int k = 0; k < 12;) {
        int e = roll_info(&r, strong, 10);
        if (e == list[n - 1] || e == list[n - 2])
            continue;
        if (n < 16)
            list[n] = e;
        n++;
        k++;
    }
    int elites[10], ne = 0;
    while (ne < 10) {
        int e = roll_info(&r, elite, 3);
        if (ne > 0 && e == elites[ne - 1])
            continue;
        elites[ne++] = e;
    }
    int boss[3] = {ENC_GUARDIAN, ENC_HEXAGHOST, ENC_SLIME_BOSS};
    sf_jrand j;
    sf_jrand_seed(&j, sf_rng_random_long(&r));
    for (int i = 3; i > 1; i--) {
        int k = sf_jrand_next_int(&j, i), x = boss[i - 1];
        boss[i - 1] = boss[k];
        boss[k] = x;
    }
    for (int i = 0; i < 7; i++)
        out[i] = list[i];
    out[7] = elites[0];
    out[8] = boss[0];
}

SF_TCASE(gauntlet, 0);

START_TEST(gauntlet_matches_the_reference_transcription) {
    for (uint64_t seed = 1; seed <= 500; seed++) {
        sf_gauntlet g;
        sf_gauntlet_generate(seed, &g);
        int want[9];
        reference_gauntlet(seed, want);
        ck_assert_int_eq(g.n, 9);
        for (int i = 0; i < 9; i++)
            ck_assert_msg(g.encounters[i] == want[i], "seed %llu fight %d",
                          (unsigned long long)seed, i);
    }
}
END_TEST

START_TEST(gauntlet_follows_the_pool_rules) {
    int boss_seen[3] = {0}, elite_seen[3] = {0};
    for (uint64_t seed = 1; seed <= 3000; seed++) {
        sf_gauntlet g;
        sf_gauntlet_generate(seed * 7919, &g);
        ck_assert_int_eq(g.n, 9);
        for (int i = 0; i < 3; i++)
            ck_assert_int_eq(sf_encounter_pool(g.encounters[i]), SF_POOL_WEAK);
        for (int i = 3; i < 7; i++)
            ck_assert_int_eq(sf_encounter_pool(g.encounters[i]), SF_POOL_STRONG);
        for (int i = 1; i < 7; i++) {
            ck_assert_int_ne(g.encounters[i], g.encounters[i - 1]);
            if (i > 1)
                ck_assert_int_ne(g.encounters[i], g.encounters[i - 2]);
        }
        if (g.encounters[2] == ENC_SMALL_SLIMES)
            ck_assert(g.encounters[3] != ENC_LARGE_SLIME && g.encounters[3] != ENC_LOTS_OF_SLIMES);
        if (g.encounters[2] == ENC_2_LOUSE)
            ck_assert_int_ne(g.encounters[3], ENC_3_LOUSE);
        ck_assert_int_eq(sf_encounter_pool(g.encounters[7]), SF_POOL_ELITE);
        ck_assert_int_eq(sf_encounter_pool(g.encounters[8]), SF_POOL_BOSS);
        elite_seen[g.encounters[7] - ENC_GREMLIN_NOB]++;
        boss_seen[g.encounters[8] - ENC_GUARDIAN]++;
    }
    for (int i = 0; i < 3; i++) {
        ck_assert_int_gt(boss_seen[i], 800);
        ck_assert_int_gt(elite_seen[i], 800);
    }
}
END_TEST

START_TEST(gauntlet_carries_hp_gold_potions_and_relic_counters) {
    sf_gauntlet g;
    sf_gauntlet_generate(4242, &g);
    sf_fight_spec spec = fx_spec();
    spec.relics[spec.relics_n++] = RELIC_PEN_NIB;
    spec.relics[spec.relics_n++] = RELIC_HAPPY_FLOWER;
    spec.potions[1] = POTION_BLOCK;
    spec.encounter = g.encounters[0];
    spec.floor = 1;
    spec.seed = 4242;
    sf_state s;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    sf_combat *c = combat_of(&s);
    /* win the fight by hand: knock every monster out with THORNS */
    c->relic_counter[1] = 7; /* Burning Blood, Pen Nib, Happy Flower */
    c->relic_counter[2] = 2;
    c->hp = 30;
    c->gold = 120;
    for (int m = 0; m < c->n_mon; m++)
        combat_thorns_to_monster(c, m, 999);
    combat_check_end(c);
    ck_assert(c->flags & FL_WON);
    ck_assert_int_eq(c->hp, 36); /* Burning Blood */
    sf_fight_spec next = spec;
    sf_engine_carry_over(&s, &g, 1, &next);
    ck_assert_int_eq(next.hp, 36);
    ck_assert_int_eq(next.max_hp, 80);
    ck_assert_int_eq(next.gold, 120);
    ck_assert_int_eq(next.potions[1], POTION_BLOCK);
    ck_assert_int_eq(next.relic_counters[0], 0);
    ck_assert_int_eq(next.relic_counters[1], 7);
    ck_assert_int_eq(next.relic_counters[2], 2);
    ck_assert_int_eq(next.encounter, g.encounters[1]);
    ck_assert_int_eq(next.floor, 2);
    ck_assert_int_eq(sf_engine_init(&s, &next, NULL), SF_OK);
    ck_assert_int_eq(combat_of(&s)->hp, 36);
    ck_assert_int_eq(combat_of(&s)->relic_counter[1], 7);
    /* Happy Flower's carried 2 fires on turn 1 of the next fight */
    ck_assert_int_eq(combat_of(&s)->energy, 4);
}
END_TEST

/* ---- what the label contract reads (label/label.h) ---------------------- */

SF_TCASE(label_facts, 0);

START_TEST(a_full_pile_ends_the_fight_as_an_engine_limit_loss) {
    /* The game has no pile cap; ours is SF_MAX_PILE. A card that would not
     * fit used to vanish while the fight went on (a fight that is not the
     * game); now the fight ends there as an engine-limit loss. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    for (int i = 0; i < SF_MAX_PILE; i++)
        fx_discard(c, CARD_DEFEND, 0);
    int k = fx_hand(c, CARD_STRIKE, 0);
    ck_assert_int_eq(fx_apply(&s, SF_ACT_PLAY, k, 0), SF_OK);
    ck_assert(sf_engine_is_terminal(&s));
    sf_outcome o;
    sf_engine_outcome(&s, &o);
    ck_assert_int_eq(o.over, 1);
    ck_assert_int_eq(o.won, 0);
    ck_assert_int_eq(o.engine_limit, 1);
    ck_assert_int_eq(o.monster_hp_left, 34); /* the Strike landed: 40 - 6 */
    ck_assert_int_eq(o.monster_hp_pool, 40);
    ck_assert_int_eq(ccombat_of(&s)->cards_dropped, 1);
}
END_TEST

/* Play `spec` with the heuristic policy until the fight ends (at most
 * `max_actions` actions); returns the actions applied. */
static int play_heuristic(sf_state *s, const sf_fight_spec *spec, int max_actions) {
    sf_err err = {0};
    ck_assert_msg(sf_engine_init(s, spec, &err) == SF_OK, "%s", err.msg);
    uint64_t rng = 7;
    int n = 0;
    while (!sf_engine_is_terminal(s) && n < max_actions) {
        sf_action a;
        ck_assert_int_eq(sf_engine_heuristic_action(s, 0.0, &rng, &a), SF_OK);
        ck_assert_int_eq(sf_engine_apply(s, a, NULL), SF_OK);
        n++;
    }
    return n;
}

/* *s ended as a turn-limit loss after `turns` turns: terminal, lost, not
 * by the engine's own limit; its outcome in *o. */
static void ck_turn_limit_loss(const sf_state *s, int turns, sf_outcome *o) {
    ck_assert(sf_engine_is_terminal(s));
    sf_engine_outcome(s, o);
    ck_assert_int_eq(o->over, 1);
    ck_assert_int_eq(o->won, 0);
    ck_assert_int_eq(o->turn_limit, 1);
    ck_assert_int_eq(o->engine_limit, 0);
    ck_assert_int_eq(o->turns, turns);
}

/* Ten Defends against a Blue Slaver, 999 HP, the default spec otherwise. */
static void stall_spec(sf_fight_spec *spec) {
    sf_fight_spec_default(spec);
    sf_err err = {0};
    ck_assert_int_eq(sf_deck_parse("Defend*10", spec, &err), SF_OK);
    spec->hp = spec->max_hp = 999;
    spec->encounter = sf_encounter_lookup("Blue Slaver");
    spec->seed = 11;
}

START_TEST(a_fight_nobody_can_win_ends_at_the_turn_cap_as_a_loss) {
    /* Ten Defends against a Blue Slaver, 999 HP: the player deals no
     * damage and blocks most of what comes; the game would go on forever.
     * At a cap of 300 turns (past the 255 where the old 8-bit counter
     * stopped counting) the fight ends once turn 300 is over. */
    sf_fight_spec spec;
    stall_spec(&spec);
    spec.max_turns = 300;
    sf_state s;
    int actions = play_heuristic(&s, &spec, 100000);
    sf_outcome o;
    ck_turn_limit_loss(&s, 300, &o);
    ck_assert_int_gt(o.hp, 0);                              /* alive: not a death */
    ck_assert_int_eq(o.monster_hp_left, o.monster_hp_pool); /* never hurt */
    /* 300 turns of up to 3 Defends and an end turn each */
    ck_assert_int_le(actions, 300 * 4);
    ck_assert_int_gt(actions, 300);
    ck_assert_int_eq(sf_engine_enumerate(&s, NULL, 0), 0);

    /* The default cap; a spec with max_turns 0 means it too. */
    ck_assert_int_eq(SF_MAX_TURNS_DEFAULT, 50);
    stall_spec(&spec);
    ck_assert_int_eq(spec.max_turns, SF_MAX_TURNS_DEFAULT);
    for (int zero = 0; zero < 2; zero++) {
        spec.max_turns = zero ? 0 : SF_MAX_TURNS_DEFAULT;
        play_heuristic(&s, &spec, 100000);
        ck_turn_limit_loss(&s, 50, &o);
    }

    /* A cap outside 1..SF_MAX_TURNS_LIMIT is refused, naming the field. */
    spec.max_turns = SF_MAX_TURNS_LIMIT + 1;
    sf_err err = {0};
    ck_assert_int_eq(sf_engine_init(&s, &spec, &err), SF_EINVAL);
    ck_assert_msg(strstr(err.msg, "max_turns 1001 out of range 1..1000"), "%s", err.msg);
}
END_TEST

START_TEST(a_turn_that_never_ends_is_cut_at_the_action_backstop) {
    /* No real turn comes near SF_MAX_TURN_ACTIONS; a turn that got there
     * (an infinite combo the engine might one day allow) ends the fight
     * as a turn-limit loss instead of running forever. END_TURN starts a
     * new count. */
    sf_state s;
    sf_combat *c = fx_new(&s, 5);
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    fx_hand(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_DEFEND, 0);
    c->turn_actions = SF_MAX_TURN_ACTIONS - 2;
    ck_assert_int_eq(fx_apply(&s, SF_ACT_PLAY, 0, SF_NO_TARGET), SF_OK);
    ck_assert(!sf_engine_is_terminal(&s));
    ck_assert_int_eq(c->turn_actions, SF_MAX_TURN_ACTIONS - 1);
    ck_assert_int_eq(fx_apply(&s, SF_ACT_PLAY, 0, SF_NO_TARGET), SF_OK);
    sf_outcome o;
    ck_turn_limit_loss(&s, 1, &o);
    ck_assert_int_eq(o.hp, 80);
    /* such a state saves and loads back like any other */
    json_t *doc = sf_engine_to_json(&s);
    sf_state back;
    sf_err err = {0};
    ck_assert_msg(sf_engine_from_json(doc, &back, &err) == SF_OK, "%s", err.msg);
    ck_assert_int_eq(memcmp(&back, &s, sizeof s), 0);
    json_decref(doc);

    c = fx_new(&s, 5);
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    c->turn_actions = SF_MAX_TURN_ACTIONS - 1;
    ck_assert_int_eq(fx_apply(&s, SF_ACT_END_TURN, 0, SF_NO_TARGET), SF_OK);
    ck_assert(!sf_engine_is_terminal(&s));
    ck_assert_int_eq(c->turn, 2);
    ck_assert_int_eq(c->turn_actions, 0);
}
END_TEST

START_TEST(the_monster_pool_counts_split_children_so_a_split_keeps_progress) {
    /* A Spike Slime (L) of 60 HP at 30 splits into two 30-HP mediums: the
     * pool becomes 60 + 30 + 30 and the HP left 60, the same half removed
     * as just before the split. */
    sf_state s;
    sf_combat *c = fx_new(&s, 7);
    fx_mon(c, MON_SPIKE_SLIME_L, 60, MV_SPLIT);
    c->mon[0].hp = 30;
    sf_outcome o;
    sf_engine_outcome(&s, &o);
    ck_assert_int_eq(o.monster_hp_left, 30);
    ck_assert_int_eq(o.monster_hp_pool, 60);
    ck_assert_int_eq(fx_apply(&s, SF_ACT_END_TURN, 0, SF_NO_TARGET), SF_OK);
    ck_assert_int_eq(ccombat_of(&s)->n_mon, 2);
    sf_engine_outcome(&s, &o);
    ck_assert_int_eq(o.monster_hp_left, 60);
    ck_assert_int_eq(o.monster_hp_pool, 120);
}
END_TEST

START_TEST(the_block_met_at_the_enemy_turn_is_observed_the_turn_after) {
    /* Defend (5) and Metallicize 3 at the end of the turn: the Jaw Worm's
     * Chomp (11) meets 8 block. At the next turn's first decision the block
     * has reset to 0 (what the old forecast column sampled, always 0) and
     * the observation reports the 8 the monsters met. */
    sf_state s;
    sf_combat *c = fx_new(&s, 9);
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    c->pw[PW_METALLICIZE] = 3;
    int k = fx_hand(c, CARD_DEFEND, 0);
    for (int i = 0; i < 5; i++)
        fx_draw(c, CARD_STRIKE, 0);
    sf_observation ob;
    sf_engine_observe(&s, &ob);
    ck_assert_int_eq(ob.block_at_enemy_turn, 0); /* no enemy turn yet */
    ck_assert_int_eq(fx_apply(&s, SF_ACT_PLAY, k, SF_NO_TARGET), SF_OK);
    ck_assert_int_eq(fx_apply(&s, SF_ACT_END_TURN, 0, SF_NO_TARGET), SF_OK);
    sf_engine_observe(&s, &ob);
    ck_assert_int_eq(ob.turn, 2);
    ck_assert_int_eq(ob.block, 0);
    ck_assert_int_eq(ob.block_at_enemy_turn, 8);
    ck_assert_int_eq(ob.hp, 80 - (11 - 8));
}
END_TEST

/* ------------------------------------------------------------------------
 * Shop and event relics (game-rules §7 "Shop and event relics")
 * ---------------------------------------------------------------------- */

SF_TCASE(shop_event_relics, 0);

START_TEST(shop_and_event_battle_start_relics) {
    sf_state s;
    /* Clockwork Souvenir: Artifact 1 */
    sf_combat *c = start_holding(&s, ENC_CULTIST, RELIC_CLOCKWORK_SOUVENIR, 0);
    ck_assert_int_eq(c->pw[PW_ARTIFACT], 1);
    /* Sling of Courage: Strength 2 in an elite fight only */
    c = start_holding(&s, ENC_GREMLIN_NOB, RELIC_SLING_OF_COURAGE, 0);
    ck_assert_int_eq(c->pw[PW_STR], 2);
    c = start_holding(&s, ENC_CULTIST, RELIC_SLING_OF_COURAGE, 0);
    ck_assert_int_eq(c->pw[PW_STR], 0);
    /* Gremlin Visage: the player starts Weak 1 */
    c = start_holding(&s, ENC_CULTIST, RELIC_GREMLIN_MASK, 0);
    ck_assert_int_eq(c->pw[PW_WEAK], 1);
    /* Neow's Lament, 0 fights spent: every monster at 1 HP, 1 spent */
    c = start_holding(&s, ENC_2_LOUSE, RELIC_NEOWS_LAMENT, 0);
    for (int m = 0; m < c->n_mon; m++)
        ck_assert_int_eq(c->mon[m].hp, 1);
    ck_assert_int_eq(c->mon_hp_pool, c->n_mon);
    ck_assert_int_eq(c->relic_counter[1], 1);
    c = start_holding(&s, ENC_CULTIST, RELIC_NEOWS_LAMENT, 2); /* the third fight */
    ck_assert_int_eq(c->mon[0].hp, 1);
    ck_assert_int_eq(c->relic_counter[1], 3);
    c = start_holding(&s, ENC_CULTIST, RELIC_NEOWS_LAMENT, 3); /* used up */
    ck_assert_int_eq(c->mon[0].hp, c->mon[0].max_hp);
    ck_assert_int_eq(c->relic_counter[1], 3);
    /* relics with no fight effect change nothing */
    static const int none[] = {RELIC_CAULDRON,        RELIC_DOLLYS_MIRROR, RELIC_LEES_WAFFLE,
                               RELIC_MEMBERSHIP_CARD, RELIC_ORRERY,        RELIC_PRISMATIC_SHARD,
                               RELIC_GOLDEN_IDOL,     RELIC_CULTIST_MASK,  RELIC_NLOTHS_MASK,
                               RELIC_SSSERPENT_HEAD,  RELIC_SPIRIT_POOP,   RELIC_FROZEN_EYE};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        c = start_holding(&s, ENC_CULTIST, none[i], 0);
        ck_assert_int_eq(c->hand_n, 5);
        ck_assert_int_eq(c->energy, 3);
        ck_assert_int_eq(c->block, 0);
        ck_assert_int_eq(c->mon[0].hp, c->mon[0].max_hp);
    }
}
END_TEST

START_TEST(brimstone_strength_each_turn_for_both_sides) {
    /* turn 2 starts: player +2 Strength, the monster +1 */
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_BRIMSTONE, 0);
    fx_mon(c, MON_JAW_WORM, 500, MV_CHOMP);
    FX_END(&s);
    ck_assert_int_eq(c->hp, 999 - 11);
    ck_assert_int_eq(c->pw[PW_STR], 2);
    ck_assert_int_eq(c->mon[0].pw[PW_STR], 1);
    /* from a spec: turn 1's start counts too */
    c = start_holding(&s, ENC_JAW_WORM, RELIC_BRIMSTONE, 0);
    ck_assert_int_eq(c->pw[PW_STR], 2);
    ck_assert_int_eq(c->mon[0].pw[PW_STR], 1);
}
END_TEST

START_TEST(abacus_blocks_six_on_a_shuffle) {
    /* the turn-2 draw finds no draw pile: the discard pile is shuffled in */
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_ABACUS, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    for (int i = 0; i < 6; i++)
        fx_discard(c, CARD_DEFEND, 0);
    FX_END(&s);
    ck_assert_int_eq(c->hand_n, 5);
    ck_assert_int_eq(c->block, 6);
    /* no shuffle, no block */
    c = with_relics(&s, RELIC_ABACUS, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    for (int i = 0; i < 6; i++)
        fx_draw(c, CARD_DEFEND, 0);
    FX_END(&s);
    ck_assert_int_eq(c->block, 0);
}
END_TEST

START_TEST(chemical_x_adds_two_to_x) {
    /* Whirlwind with 3 energy: 3 + 2 = 5 hits of 5 */
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_CHEMICAL_X, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    fx_hand(c, CARD_WHIRLWIND, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->mon[0].hp, 500 - 25);
    ck_assert_int_eq(c->energy, 0);
    /* Transmutation with 1 energy: 1 + 2 = 3 colorless cards */
    c = with_relics(&s, RELIC_CHEMICAL_X, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    c->energy = 1;
    fx_hand(c, CARD_TRANSMUTATION, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hand_n, 3);
}
END_TEST

START_TEST(hand_drill_vulnerable_on_broken_block) {
    sf_state s;
    /* 5 block, Strike 6: the block breaks, 1 HP, then Vulnerable 2 */
    sf_combat *c = with_relics(&s, RELIC_HAND_DRILL, 0);
    fx_mon(c, MON_CULTIST, 50, MV_INCANTATION);
    c->mon[0].block = 5;
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 49);
    ck_assert_int_eq(c->mon[0].pw[PW_VULN], 2);
    /* exactly the block: broken too */
    c = with_relics(&s, RELIC_HAND_DRILL, 0);
    fx_mon(c, MON_CULTIST, 50, MV_INCANTATION);
    c->mon[0].block = 6;
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 50);
    ck_assert_int_eq(c->mon[0].pw[PW_VULN], 2);
    /* Twin Strike 5 x2 into 5 block: the second hit lands before the
     * Vulnerable (queued behind the card): 50 - 5 = 45 */
    c = with_relics(&s, RELIC_HAND_DRILL, 0);
    fx_mon(c, MON_CULTIST, 50, MV_INCANTATION);
    c->mon[0].block = 5;
    fx_hand(c, CARD_TWIN_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 45);
    ck_assert_int_eq(c->mon[0].pw[PW_VULN], 2);
    /* no block, nothing breaks; more block than damage: nothing breaks */
    c = with_relics(&s, RELIC_HAND_DRILL, 0);
    fx_mon(c, MON_CULTIST, 50, MV_INCANTATION);
    c->mon[1 - 1].block = 0;
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].pw[PW_VULN], 0);
    c->mon[0].block = 10;
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].block, 4);
    ck_assert_int_eq(c->mon[0].pw[PW_VULN], 0);
}
END_TEST

START_TEST(odd_mushroom_player_vulnerable_is_a_quarter) {
    /* Chomp 11 on a Vulnerable player: 11 * 1.25 = 13 (not 16) */
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_ODD_MUSHROOM, 0);
    fx_mon(c, MON_JAW_WORM, 500, MV_CHOMP);
    c->pw[PW_VULN] = 2;
    FX_END(&s);
    ck_assert_int_eq(c->hp, 999 - 13);
    c = with_relics(&s, 0, 0);
    fx_mon(c, MON_JAW_WORM, 500, MV_CHOMP);
    c->pw[PW_VULN] = 2;
    FX_END(&s);
    ck_assert_int_eq(c->hp, 999 - 16);
}
END_TEST

START_TEST(face_of_cleric_max_hp_on_victory) {
    /* 50/80, Burning Blood then Face of Cleric: 56, then 81 max and 57 */
    sf_state s;
    sf_combat *c = setup(&s);
    c->hp = 50;
    c->max_hp = 80;
    c->relics[c->relic_n++] = RELIC_BURNING_BLOOD;
    c->relics[c->relic_n++] = RELIC_FACE_OF_CLERIC;
    fx_mon(c, MON_CULTIST, 5, MV_INCANTATION);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert(c->flags & FL_WON);
    ck_assert_int_eq(c->max_hp, 81);
    ck_assert_int_eq(c->hp, 57);
    /* at full HP: 80/80 -> 81/81 */
    c = setup(&s);
    c->hp = c->max_hp = 80;
    c->relics[c->relic_n++] = RELIC_FACE_OF_CLERIC;
    fx_mon(c, MON_CULTIST, 5, MV_INCANTATION);
    fx_hand(c, CARD_STRIKE, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->max_hp, 81);
    ck_assert_int_eq(c->hp, 81);
}
END_TEST

START_TEST(shop_and_event_relics_parse_by_name) {
    sf_fight_spec spec = fx_spec();
    sf_err err = {0};
    ck_assert_int_eq(sf_relics_parse("The Abacus, Neow's Lament, Sling of Courage", &spec, &err),
                     SF_OK);
    ck_assert_int_eq(spec.relics_n, 3);
    ck_assert_int_eq(spec.relics[0], RELIC_ABACUS);
    ck_assert_int_eq(spec.relics[1], RELIC_NEOWS_LAMENT);
    ck_assert_int_eq(spec.relics[2], RELIC_SLING_OF_COURAGE);
    for (int r = RELIC_ABACUS; r < RELIC_COUNT; r++) {
        ck_assert_int_eq(sf_relic_lookup(sf_relic_name(r)), r);
        ck_assert_int_ne(sf_relics[r].source, RS_POOL);
    }
}
END_TEST

START_TEST(orange_pellets_clear_debuffs_after_all_three_types) {
    /* Strike, Defend, Inflame in one turn: after Inflame's use the Weak,
     * Frail, Vulnerable and Strength Down go; Inflame's +2 Strength stays */
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_ORANGE_PELLETS, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    c->pw[PW_WEAK] = 2;
    c->pw[PW_FRAIL] = 2;
    c->pw[PW_VULN] = 1;
    c->pw[PW_LOSE_STR] = 3;
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEFEND, 0);
    fx_hand(c, CARD_INFLAME, 0);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->relic_counter[0], 1);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->relic_counter[0], 3);
    ck_assert_int_eq(c->block, 3); /* Defend 5 under Frail */
    ck_assert_int_eq(c->pw[PW_WEAK], 2);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->pw[PW_WEAK], 0);
    ck_assert_int_eq(c->pw[PW_FRAIL], 0);
    ck_assert_int_eq(c->pw[PW_VULN], 0);
    ck_assert_int_eq(c->pw[PW_LOSE_STR], 0);
    ck_assert_int_eq(c->pw[PW_STR], 2);
    ck_assert_int_eq(c->relic_counter[0], 0);
    /* the types reset at each turn start: Attack and Skill on turn 1,
     * the Power on turn 2 removes nothing */
    c = with_relics(&s, RELIC_ORANGE_PELLETS, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_DEFEND, 0);
    for (int i = 0; i < 5; i++)
        fx_draw(c, CARD_INFLAME, 0);
    FX_PLAY(&s, 0, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_END(&s);
    ck_assert_int_eq(c->relic_counter[0], 0);
    c->pw[PW_WEAK] = 2;
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->relic_counter[0], 4);
    ck_assert_int_eq(c->pw[PW_WEAK], 2);
}
END_TEST

START_TEST(warped_tongs_upgrades_one_card_after_the_draw) {
    /* turn 2 draws four Wounds and a Strike: the Strike is the only card
     * that can be upgraded; one shuffleRng.randomLong() is spent */
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_WARPED_TONGS, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    fx_draw(c, CARD_STRIKE, 0);
    for (int i = 0; i < 4; i++)
        fx_draw(c, CARD_WOUND, 0);
    sf_rng r = c->rng[SF_STREAM_SHUFFLE];
    (void)sf_rng_random_long(&r);
    FX_END(&s);
    ck_assert_int_eq(c->hand_n, 5);
    for (int i = 0; i < c->hand_n; i++)
        ck_assert_int_eq(c->hand[i].upg, c->hand[i].id == CARD_STRIKE ? 1 : 0);
    ck_assert_mem_eq(&c->rng[SF_STREAM_SHUFFLE], &r, sizeof r);
    /* nothing to upgrade: no upgrade, no random number */
    c = with_relics(&s, RELIC_WARPED_TONGS, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    fx_draw(c, CARD_STRIKE, 1);
    for (int i = 0; i < 4; i++)
        fx_draw(c, CARD_WOUND, 0);
    r = c->rng[SF_STREAM_SHUFFLE];
    FX_END(&s);
    ck_assert_mem_eq(&c->rng[SF_STREAM_SHUFFLE], &r, sizeof r);
    /* the opening hand of a fight: exactly one card upgraded */
    c = start_holding(&s, ENC_CULTIST, RELIC_WARPED_TONGS, 0);
    int upgraded = 0;
    for (int i = 0; i < c->hand_n; i++)
        upgraded += c->hand[i].upg;
    ck_assert_int_eq(upgraded, 1);
}
END_TEST

START_TEST(strange_spoon_keeps_an_exhausting_card_on_a_coin) {
    /* Slimed exhausts when played: cardRandomRng.randomBoolean() true sends
     * it to the discard pile instead; over seeds both sides come up */
    int kept = 0, gone = 0;
    for (uint64_t seed = 1; seed <= 16; seed++) {
        sf_state s;
        sf_combat *c = fx_new(&s, seed);
        c->relics[c->relic_n++] = RELIC_STRANGE_SPOON;
        fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
        fx_hand(c, CARD_SLIMED, 0);
        sf_rng r = c->rng[SF_STREAM_CARD_RANDOM];
        int keep = sf_rng_random_bool(&r);
        FX_PLAY(&s, 0, SF_NO_TARGET);
        ck_assert_int_eq(c->discard_n, keep);
        ck_assert_int_eq(c->exhaust_n, !keep);
        ck_assert_mem_eq(&c->rng[SF_STREAM_CARD_RANDOM], &r, sizeof r);
        kept += keep, gone += !keep;
    }
    ck_assert_int_gt(kept, 0);
    ck_assert_int_gt(gone, 0);
    /* a card that does not exhaust, and a Power, throw no coin */
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_STRANGE_SPOON, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    fx_hand(c, CARD_STRIKE, 0);
    fx_hand(c, CARD_INFLAME, 0);
    sf_rng r = c->rng[SF_STREAM_CARD_RANDOM];
    FX_PLAY(&s, 0, 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_mem_eq(&c->rng[SF_STREAM_CARD_RANDOM], &r, sizeof r);
    ck_assert_int_eq(c->discard_n, 1);
}
END_TEST

START_TEST(medical_kit_plays_statuses_for_nothing_and_exhausts_them) {
    sf_state s;
    sf_combat *c = with_relics(&s, 0, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    fx_hand(c, CARD_WOUND, 0);
    ck_assert_int_eq(play_can_play(c, 0), 0);
    c = with_relics(&s, RELIC_MEDICAL_KIT, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    fx_hand(c, CARD_WOUND, 0);
    fx_hand(c, CARD_DAZED, 0);
    fx_hand(c, CARD_BURN, 0);
    ck_assert_int_eq(combat_card_cost(c, &c->hand[0]), 0);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    FX_PLAY(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hand_n, 0);
    ck_assert_int_eq(c->exhaust_n, 3);
    ck_assert_int_eq(c->energy, 3);
    ck_assert_int_eq(c->cards_played, 3);
    FX_END(&s); /* no Burn left in hand: no damage at the end of the turn */
    ck_assert_int_eq(c->hp, 999);
}
END_TEST

START_TEST(toolbox_offers_three_colorless_before_the_opening_draw) {
    /* seed 21 (setup): the same three as the Colorless Potion (cardRandomRng
     * 24, 6, 12); the pick goes to the hand with its cost, then the five
     * cards are drawn behind it */
    sf_state s;
    sf_combat *c = with_relics(&s, RELIC_TOOLBOX, 0);
    fx_mon(c, MON_JAW_WORM, 40, MV_CHOMP);
    for (int i = 0; i < 6; i++)
        fx_draw(c, CARD_DEFEND, 0);
    int n = (int)(sizeof fx_colorless_src / sizeof fx_colorless_src[0]), want[3];
    expect_offers(c->rng[SF_STREAM_CARD_RANDOM], fx_colorless_src, n, want);
    ck_assert_int_eq(want[0], CARD_DEEP_BREATH);
    ck_assert_int_eq(want[1], CARD_GOOD_INSTINCTS);
    ck_assert_int_eq(want[2], CARD_TRANSMUTATION);
    play_first_turn(c, 0);
    ck_assert_int_eq(c->phase, PH_CHOICE);
    ck_assert_int_eq(c->pending.kind, CH_TOOLBOX);
    ck_assert_int_eq(c->hand_n, 0);
    int opts[SF_MAX_ACTIONS], ids[SF_MAX_ACTIONS];
    ck_assert_int_eq(listed_choices(&s, opts, ids), 3);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(ids[i], want[i]);
    FX_CHOOSE(&s, opts[1]);
    ck_assert_int_eq(c->phase, PH_PLAYER);
    ck_assert_int_eq(c->hand_n, 6);
    ck_assert_int_eq(c->hand[0].id, CARD_GOOD_INSTINCTS);
    ck_assert_int_eq(c->hand[0].flags & CF_FREE_TURN, 0);
    ck_assert_int_eq(combat_card_cost(c, &c->hand[0]), 0); /* Good Instincts costs 0 anyway */
    ck_assert_int_eq(c->draw_n, 1);
    /* from a spec: the fight starts on the screen, the battle start after it */
    sf_fight_spec spec = fx_spec();
    spec.encounter = ENC_CULTIST;
    spec.relics[spec.relics_n++] = RELIC_TOOLBOX;
    spec.relics[spec.relics_n++] = RELIC_ANCHOR;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    c = combat_of(&s);
    ck_assert_int_eq(c->phase, PH_CHOICE);
    ck_assert_int_eq(c->block, 0);
    FX_CHOOSE(&s, 0);
    ck_assert_int_eq(c->hand_n, 6);
    ck_assert_int_eq(c->block, 10); /* Anchor, after the pick */
    ck_assert_int_ge(c->hand[0].id, CARD_FIRST_COLORLESS);
}
END_TEST

START_TEST(frozen_eye_shows_the_draw_order) {
    /* the opening draw leaves 5 of the starter deck's 10, every one seen */
    sf_state a, b, ra, rb;
    sf_combat *c = start_holding(&a, ENC_CULTIST, RELIC_FROZEN_EYE, 0);
    ck_assert_int_eq(c->draw_n, 5);
    ck_assert_int_eq(c->draw_known, 5);
    /* the belief root keeps the order it shows (nothing to sort), and
     * truths that differ only in their streams still give one root */
    b = a;
    for (int i = 0; i < SF_NUM_STREAMS; i++)
        sf_engine_reseed(&b, i, 500 + (uint64_t)i);
    sf_engine_belief_root(&a, 7, &ra);
    sf_engine_belief_root(&b, 7, &rb);
    ck_assert(!memcmp(&ra, &rb, sizeof ra));
    ck_assert(!memcmp(combat_of(&ra)->draw, c->draw, sizeof c->draw));
    ck_assert_int_eq(combat_of(&ra)->draw_known, 5);
    /* a different order is visible information: a different root */
    sf_combat *cb = combat_of(&b);
    int j = 0;
    while (j + 1 < cb->draw_n && !memcmp(&cb->draw[j], &cb->draw[j + 1], sizeof(sf_card)))
        j++;
    ck_assert_int_lt(j + 1, cb->draw_n);
    sf_card t = cb->draw[j];
    cb->draw[j] = cb->draw[j + 1];
    cb->draw[j + 1] = t;
    sf_engine_belief_root(&b, 7, &rb);
    ck_assert(memcmp(&ra, &rb, sizeof ra) != 0);
    /* without the relic nothing below the opening hand is seen */
    c = start_holding(&a, ENC_CULTIST, RELIC_ANCHOR, 0);
    ck_assert_int_eq(c->draw_known, 0);
    /* a true-mode shuffle stays seen */
    c = with_relics(&a, RELIC_FROZEN_EYE, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    for (int i = 0; i < 8; i++)
        fx_discard(c, CARD_DEFEND, 0);
    FX_END(&a);
    ck_assert_int_eq(c->draw_n, 3);
    ck_assert_int_eq(c->draw_known, 3);
    /* Wild Strike's Wound at a random spot: seen where it went */
    fx_hand(c, CARD_WILD_STRIKE, 0);
    FX_PLAY(&a, c->hand_n - 1, 0);
    ck_assert_int_eq(c->draw_n, 4);
    ck_assert_int_eq(c->draw_known, 4);
    /* belief mode: a shuffle the search makes is revealed by the draws */
    c = with_relics(&a, RELIC_FROZEN_EYE, 0);
    fx_mon(c, MON_CULTIST, 500, MV_INCANTATION);
    for (int i = 0; i < 4; i++)
        fx_discard(c, CARD_DEFEND, 0);
    for (int i = 0; i < 4; i++)
        fx_discard(c, CARD_STRIKE, 0);
    sf_engine_belief_root(&a, 3, &ra);
    FX_END(&ra);
    ck_assert_int_eq(combat_of(&ra)->draw_n, 3);
    ck_assert_int_eq(combat_of(&ra)->draw_known, 0);
}
END_TEST

#include "test-engine-rules.tests.h" /* SF_TESTS: every test above (tests/meson.build) */
SF_CHECK_MAIN("engine-rules", "debuffs", 0, NULL, NULL)
