/*
 * test_engine_json.c — sf_engine_to_json / sf_engine_from_json: exact round
 * trips, readable fields, and a clear error for every malformed document.
 */
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/internal.h"
#include "sf_check.h"

static sf_state fight(int encounter, uint64_t seed) {
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    spec.encounter = encounter;
    spec.seed = seed;
    spec.potions[1] = POTION_FIRE;
    sf_state s;
    sf_err err = {0};
    ck_assert_msg(sf_engine_init(&s, &spec, &err) == SF_OK, "%s", err.msg);
    return s;
}

static void round_trip(const sf_state *s) {
    json_t *doc = sf_engine_to_json(s);
    ck_assert_ptr_nonnull(doc);
    /* Through text, as a file would carry it. */
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    ck_assert_ptr_nonnull(text);
    json_error_t jerr;
    json_t *back = json_loads(text, 0, &jerr);
    free(text);
    ck_assert_ptr_nonnull(back);
    sf_state t;
    memset(&t, 0x5A, sizeof t);
    sf_err err = {0};
    ck_assert_msg(sf_engine_from_json(back, &t, &err) == SF_OK, "%s", err.msg);
    json_decref(back);
    ck_assert_mem_eq(&t, s, sizeof t);
}

/* Every state of random play loads back: the loader's rules for a legal
 * position (living player and monsters, outcome flags, a legal action)
 * must never refuse one the engine made. 8 fights per encounter. */
START_TEST(round_trip_is_byte_identical_through_random_play) {
    int states = 0, over = 0; /* the starter deck opens no choice screen: see below */
    for (int f = 0; f < ENC_COUNT * 8; f++) {
        int enc = f % ENC_COUNT;
        sf_state s = fight(enc, 31 + (uint64_t)f);
        uint64_t r = 0x2545F4914F6CDD1Dull + (uint64_t)f;
        for (;;) {
            round_trip(&s);
            states++;
            if (sf_engine_is_terminal(&s)) {
                over++;
                break;
            }
            sf_action acts[SF_MAX_ACTIONS];
            int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            ck_assert_int_eq(sf_engine_apply(&s, acts[r % (uint64_t)n], NULL), SF_OK);
        }
    }
    ck_assert_int_eq(over, ENC_COUNT * 8);
    ck_assert_int_gt(states, 1600);
    /* five slots of the potions with screens and queues, drunk at random */
    for (int f = 0; f < ENC_COUNT * 2; f++) {
        sf_fight_spec spec;
        sf_fight_spec_default(&spec);
        spec.encounter = f % ENC_COUNT;
        spec.seed = 500 + (uint64_t)f;
        spec.potion_slots = SF_MAX_POTION_SLOTS;
        for (int i = 0; i < SF_MAX_POTION_SLOTS; i++)
            spec.potions[i] =
                (uint8_t)(POTION_ATTACK + (f + 3 * i) % (POTION_COUNT - POTION_ATTACK));
        sf_state s;
        ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
        uint64_t r = 0x9E3779B97F4A7C15ull + (uint64_t)f;
        while (!sf_engine_is_terminal(&s)) {
            round_trip(&s);
            sf_action acts[SF_MAX_ACTIONS];
            int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            ck_assert_int_eq(sf_engine_apply(&s, acts[r % (uint64_t)n], NULL), SF_OK);
        }
        round_trip(&s);
    }
    /* belief-mode states round-trip too */
    sf_state s = fight(ENC_CULTIST, 3), root;
    sf_engine_belief_root(&s, 17, &root);
    round_trip(&root);
}
END_TEST

START_TEST(choice_screen_state_round_trips) {
    sf_state s = fight(ENC_JAW_WORM, 9);
    sf_combat *c = combat_of(&s);
    c->hand[0] = combat_make_card(c, CARD_ARMAMENTS, 0);
    ck_assert_int_eq(sf_engine_apply(&s, (sf_action){SF_ACT_PLAY, 0, SF_NO_TARGET, 0}, NULL),
                     SF_OK);
    if (c->phase != PH_CHOICE)
        ck_abort_msg("Armaments did not open a choice (hand had < 2 distinct upgradable cards)");
    round_trip(&s);
    json_t *doc = sf_engine_to_json(&s);
    json_t *choice = json_object_get(doc, "choice");
    ck_assert_str_eq(json_string_value(json_object_get(choice, "kind")), "armaments");
    ck_assert_str_eq(json_string_value(json_object_get(choice, "card")), "Armaments");
    json_decref(doc);
}
END_TEST

/* Gambling Chip's screen (no card in limbo) at the start of a fight and
 * after a pick round-trips too. */
START_TEST(gambling_chip_screen_round_trips) {
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    spec.encounter = ENC_CULTIST;
    spec.relics[spec.relics_n++] = RELIC_GAMBLING_CHIP;
    sf_state s;
    ck_assert_int_eq(sf_engine_init(&s, &spec, NULL), SF_OK);
    ck_assert_int_eq(combat_of(&s)->phase, PH_CHOICE);
    round_trip(&s);
    json_t *doc = sf_engine_to_json(&s);
    json_t *choice = json_object_get(doc, "choice");
    ck_assert_str_eq(json_string_value(json_object_get(choice, "kind")), "gamble");
    ck_assert_ptr_null(json_object_get(choice, "card"));
    json_decref(doc);
    ck_assert_int_eq(sf_engine_apply(&s, (sf_action){SF_ACT_CHOOSE, 1, SF_NO_TARGET, 0}, NULL),
                     SF_OK);
    ck_assert_int_eq(combat_of(&s)->phase, PH_CHOICE);
    round_trip(&s);
}
END_TEST

/* A potion's screen (no card in limbo), a multi-select with a pick made,
 * and Distilled Chaos's queue behind a card's screen load back exactly. */
START_TEST(potion_screens_round_trip) {
    static const struct {
        int potion, armaments;
        const char *kind;
    } cases[] = {{POTION_SKILL, 0, "discovery"},
                 {POTION_ELIXIR, 0, "elixir"},
                 {POTION_GAMBLERS_BREW, 0, "gamble"},
                 {POTION_LIQUID_MEMORIES, 0, "liquid_memories"},
                 {POTION_DISTILLED_CHAOS, 1, "armaments"}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        sf_state s = fight(ENC_JAW_WORM, 9);
        sf_combat *c = combat_of(&s);
        c->potions[0] = (uint8_t)cases[k].potion;
        c->discard[c->discard_n++] = combat_make_card(c, CARD_BASH, 0);
        c->discard[c->discard_n++] = combat_make_card(c, CARD_INFLAME, 0);
        if (cases[k].armaments) {
            c->draw[c->draw_n - 2] = combat_make_card(c, CARD_WOUND, 0);
            c->draw[c->draw_n - 1] = combat_make_card(c, CARD_ARMAMENTS, 0);
        }
        ck_assert_int_eq(sf_engine_apply(&s, (sf_action){SF_ACT_POTION, 0, SF_NO_TARGET, 0}, NULL),
                         SF_OK);
        ck_assert_int_eq(c->phase, PH_CHOICE);
        round_trip(&s);
        if (cases[k].potion == POTION_ELIXIR) { /* one pick made */
            sf_action a[SF_MAX_ACTIONS];
            ck_assert_int_gt(sf_engine_enumerate(&s, a, SF_MAX_ACTIONS), 2);
            ck_assert_int_eq(sf_engine_apply(&s, a[0], NULL), SF_OK);
            ck_assert_int_eq(c->phase, PH_CHOICE);
            ck_assert_int_ne(c->pending.picked, 0);
            round_trip(&s);
        }
        json_t *doc = sf_engine_to_json(&s);
        json_t *choice = json_object_get(doc, "choice");
        ck_assert_str_eq(json_string_value(json_object_get(choice, "kind")), cases[k].kind);
        ck_assert(cases[k].armaments == (json_object_get(choice, "card") != NULL));
        if (cases[k].potion == POTION_SKILL)
            ck_assert_int_eq(json_array_size(json_object_get(choice, "offer")), 3);
        json_decref(doc);
    }
}
END_TEST

/* The colorless cards' screens (a card in limbo: Discovery's offers, Purity
 * and Forethought+ with a pick made, Forethought, Secret Technique's draw
 * pile) and the Colorless Potion's load back exactly. */
START_TEST(colorless_screens_round_trip) {
    static const struct {
        int card, upg;
        const char *kind;
    } cases[] = {
        {CARD_DISCOVERY, 0, "discovery_card"},          {CARD_PURITY, 0, "purity"},
        {CARD_FORETHOUGHT, 0, "forethought"},           {CARD_FORETHOUGHT, 1, "forethought_any"},
        {CARD_SECRET_TECHNIQUE, 0, "secret_technique"}, {0, 0, "discovery"}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        sf_state s = fight(ENC_JAW_WORM, 9);
        sf_combat *c = combat_of(&s);
        c->draw[0] = combat_make_card(c, CARD_DEFEND, 0);
        c->draw[1] = combat_make_card(c, CARD_SHRUG_IT_OFF, 0);
        sf_action play = {SF_ACT_PLAY, 0, SF_NO_TARGET, 0};
        if (cases[k].card) {
            c->hand[0] = combat_make_card(c, cases[k].card, cases[k].upg);
            c->hand[1] = combat_make_card(c, CARD_BASH, 0);
        } else {
            c->potions[0] = POTION_COLORLESS;
            play.kind = SF_ACT_POTION;
        }
        ck_assert_int_eq(sf_engine_apply(&s, play, NULL), SF_OK);
        ck_assert_int_eq(c->phase, PH_CHOICE);
        round_trip(&s);
        if (cases[k].card == CARD_PURITY || cases[k].upg) { /* one pick made */
            sf_action a[SF_MAX_ACTIONS];
            ck_assert_int_gt(sf_engine_enumerate(&s, a, SF_MAX_ACTIONS), 2);
            ck_assert_int_eq(sf_engine_apply(&s, a[0], NULL), SF_OK);
            ck_assert_int_eq(c->phase, PH_CHOICE);
            round_trip(&s);
        }
        json_t *doc = sf_engine_to_json(&s);
        json_t *choice = json_object_get(doc, "choice");
        ck_assert_str_eq(json_string_value(json_object_get(choice, "kind")), cases[k].kind);
        ck_assert((cases[k].card != 0) == (json_object_get(choice, "card") != NULL));
        if (cases[k].card == CARD_DISCOVERY || !cases[k].card)
            ck_assert_int_eq(json_array_size(json_object_get(choice, "offer")), 3);
        json_decref(doc);
    }
}
END_TEST

START_TEST(readable_fields_describe_the_state) {
    sf_state s = fight(ENC_JAW_WORM, 42);
    sf_combat *c = combat_of(&s);
    c->hand[1].upg = 1;
    c->pw[PW_STR] = 3;
    json_t *doc = sf_engine_to_json(&s);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "engine_version")), SF_ENGINE_VERSION);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "encounter")), "Jaw Worm");
    ck_assert_str_eq(json_string_value(json_object_get(doc, "phase")), "player");
    json_t *pl = json_object_get(doc, "player");
    ck_assert_int_eq(json_integer_value(json_object_get(pl, "hp")), 80);
    ck_assert_int_eq(json_integer_value(json_object_get(pl, "energy")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(pl, "powers"), "Strength")),
                     3);
    json_t *mon = json_array_get(json_object_get(doc, "monsters"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(mon, "name")), "Jaw Worm");
    ck_assert_int_eq(json_integer_value(json_object_get(mon, "hp")), c->mon[0].hp);
    json_t *hand = json_object_get(doc, "hand");
    ck_assert_int_eq((int)json_array_size(hand), 5);
    char want[64];
    snprintf(want, sizeof want, "%s+", sf_cards[c->hand[1].id].name);
    ck_assert_str_eq(json_string_value(json_array_get(hand, 1)), want);
    ck_assert_int_eq((int)json_array_size(json_object_get(doc, "draw")), 5);
    json_t *potions = json_object_get(doc, "potions");
    ck_assert(json_is_null(json_array_get(potions, 0)));
    ck_assert_str_eq(json_string_value(json_array_get(potions, 1)), "Fire Potion");
    ck_assert_int_eq((int)strlen(json_string_value(json_object_get(doc, "identity"))), 32);
    json_decref(doc);
}
END_TEST

/* Load `doc` into a state pre-filled with a marker and check the error code,
 * a message fragment, and that the target was not touched. */
static void expect_error(json_t *doc, int code, const char *fragment) {
    sf_state t, marker;
    memset(&marker, 0x77, sizeof marker);
    t = marker;
    sf_err err = {0};
    ck_assert_int_eq(sf_engine_from_json(doc, &t, &err), code);
    ck_assert_int_eq(err.code, code);
    ck_assert_msg(strstr(err.msg, fragment) != NULL, "message '%s' lacks '%s'", err.msg, fragment);
    ck_assert_mem_eq(&t, &marker, sizeof t);
}

/* A saved state whose raw bytes were changed by `edit`: the good document
 * with "raw" re-encoded and "identity" dropped, so the structural check is
 * what must refuse it. (sf_engine_to_json is never given the bad state.) */
static json_t *edited(const sf_state *s, void (*edit)(sf_combat *)) {
    sf_state t = *s;
    edit(combat_of(&t));
    char raw[sodium_base64_ENCODED_LEN(SF_STATE_BYTES, sodium_base64_VARIANT_ORIGINAL)];
    sodium_bin2base64(raw, sizeof raw, t.opaque, SF_STATE_BYTES, sodium_base64_VARIANT_ORIGINAL);
    json_t *doc = sf_engine_to_json(s);
    json_object_set_new(doc, "raw", json_string(raw));
    json_object_del(doc, "identity");
    return doc;
}

static void bad_card(sf_combat *c) {
    c->hand[0].id = 200;
}
static void bad_monster_count(sf_combat *c) {
    c->n_mon = 9;
}
static void bad_draw_known(sf_combat *c) {
    c->draw_known = (uint8_t)(c->draw_n + 1);
}
static void dirty_unused_slot(sf_combat *c) {
    c->discard[63].id = CARD_STRIKE;
}
static void bad_move(sf_combat *c) {
    c->mon[0].move = 250;
}
static void stray_pending(sf_combat *c) {
    c->pending.active = 1;
}
/* Impossible positions: each breaks one rule legal play keeps. */
static void dead_player_playing(sf_combat *c) {
    c->hp = 0;
}
static void monster_at_zero_hp(sf_combat *c) {
    c->mon[0].hp = 0;
}
static void no_monster_left(sf_combat *c) {
    c->mon[0].flags |= MF_DEAD;
}
static void both_outcomes(sf_combat *c) {
    c->flags |= FL_WON | FL_LOST;
}
static void over_without_outcome(sf_combat *c) {
    c->phase = PH_OVER;
}
static void turn_zero(sf_combat *c) {
    c->turn = 0;
}
static void past_the_turn_cap(sf_combat *c) {
    c->turn = (uint16_t)(c->max_turns + 1);
}
static void no_turn_cap(sf_combat *c) {
    c->max_turns = 0;
}
static void turn_limit_in_play(sf_combat *c) {
    c->turn_limit = 1;
}
static void turn_limit_won(sf_combat *c) {
    c->phase = PH_OVER;
    c->flags |= FL_WON;
    c->turn_limit = 1;
}
static void endless_turn(sf_combat *c) {
    c->turn_actions = SF_MAX_TURN_ACTIONS;
}
static void energy_255(sf_combat *c) {
    c->energy = 255;
}
/* A Jaw Worm announcing the Slime Boss's Slam, or Nob's Bellow (a name
 * its own Bellow shares), or with Slam in its history. */
static void foreign_move(sf_combat *c) {
    c->mon[0].move = MV_SLAM;
}
static void foreign_move_same_name(sf_combat *c) {
    c->mon[0].move = MV_BELLOW_NOB;
}
static void foreign_move_in_history(sf_combat *c) {
    c->mon[0].hist[1] = MV_SLAM;
}

START_TEST(malformed_documents_get_clear_errors) {
    sf_state s = fight(ENC_JAW_WORM, 5);
    json_t *good = sf_engine_to_json(&s);

    json_t *arr = json_array();
    expect_error(arr, SF_EFORMAT, "not an object");
    json_decref(arr);

    /* A field deleted (value NULL) or replaced by the JSON value given. */
    static const struct {
        const char *key, *value, *msg;
    } fields[] = {
        {"raw", NULL, "\"raw\" is missing"},
        {"raw", "5", "\"raw\" is not a string"},
        {"raw", "\"@@@@\"", "not base64"},
        {"raw", "\"AAAA\"", "holds 3 bytes"}, /* base64 of 3 bytes */
        {"engine_version", NULL, "\"engine_version\" is missing"},
        {"engine_version", "\"1\"", "not an integer"},
        {"identity", "5", "\"identity\" is not a string"},
    };
    json_t *d;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        d = json_deep_copy(good);
        if (fields[i].value) {
            json_t *v = json_loads(fields[i].value, JSON_DECODE_ANY, NULL);
            ck_assert_ptr_nonnull(v);
            json_object_set_new(d, fields[i].key, v);
        } else {
            json_object_del(d, fields[i].key);
        }
        expect_error(d, SF_EFORMAT, fields[i].msg);
        json_decref(d);
    }

    d = json_deep_copy(good);
    json_object_set_new(d, "engine_version", json_integer(SF_ENGINE_VERSION + 1));
    expect_error(d, SF_EVERSION, "does not match this engine");
    json_decref(d);

    /* An edited state with its old identity: the digest check refuses it. */
    sf_state t = s;
    combat_of(&t)->hp = 1;
    d = sf_engine_to_json(&t);
    json_object_set(d, "identity", json_object_get(good, "identity"));
    expect_error(d, SF_ECORRUPT, "identity");
    json_decref(d);

    /* Structurally impossible bytes are refused with the field named, and
     * impossible positions too, so no search labels them. */
    static const struct {
        void (*edit)(sf_combat *);
        const char *msg;
    } rules[] = {
        {bad_card, "hand[0]: card id 200"},
        {bad_monster_count, "monster count 9"},
        {bad_draw_known, "draw_known"},
        {dirty_unused_slot, "discard: unused slots"},
        {bad_move, "monster[0]: move ids 250"},
        {stray_pending, "in play outside a choice"},
        {dead_player_playing, "player hp 0 in phase player"},
        {monster_at_zero_hp, "monster[0]: hp 0 but not dead"},
        {no_monster_left, "no living monster in phase player"},
        {both_outcomes, "outcome flags say won 1, lost 1"},
        {over_without_outcome, "the fight is over but its outcome flags say won 0, lost 0"},
        {turn_zero, "turn 0: turns count from 1"},
        {past_the_turn_cap, "turn 51 is past the turn cap 50"},
        {no_turn_cap, "max_turns 0 out of 1..1000"},
        {turn_limit_in_play, "turn_limit set in phase player (it ends the fight)"},
        {turn_limit_won, "a turn-limit end that is not a loss"},
        {endless_turn, "turn_actions 250: a turn ends at 250"},
        {energy_255, "energy 255 out of 0..99"},
        {foreign_move,
         "monster[0] (Jaw Worm): announced move \"Slam\" (Slime Boss's) is not one of its moves"},
        {foreign_move_same_name, "monster[0] (Jaw Worm): announced move \"Bellow\" (Gremlin "
                                 "Nob's) is not one of its moves"},
        {foreign_move_in_history,
         "monster[0] (Jaw Worm): earlier move \"Slam\" (Slime Boss's) is not one of its moves"},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        d = edited(&s, rules[i].edit);
        expect_error(d, SF_EFORMAT, rules[i].msg);
        json_decref(d);
    }

    json_decref(good);
}
END_TEST

START_TEST(a_loaded_state_plays_on_identically) {
    sf_state s = fight(ENC_3_SENTRIES, 8);
    json_t *doc = sf_engine_to_json(&s);
    sf_state t;
    ck_assert_int_eq(sf_engine_from_json(doc, &t, NULL), SF_OK);
    json_decref(doc);
    uint64_t r = 12345;
    while (!sf_engine_is_terminal(&s)) {
        sf_action acts[SF_MAX_ACTIONS];
        int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        sf_action a = acts[r % (uint64_t)n];
        uint32_t m1 = 0, m2 = 0;
        ck_assert_int_eq(sf_engine_apply(&s, a, &m1), SF_OK);
        ck_assert_int_eq(sf_engine_apply(&t, a, &m2), SF_OK);
        ck_assert_uint_eq(m1, m2);
        ck_assert_mem_eq(&s, &t, sizeof s);
    }
}
END_TEST

/* sf_engine_load_file: a missing file is SF_ENOTFOUND; a directory or an
 * oversized file is no state file (SF_EFORMAT), not an OS failure. */
START_TEST(load_file_names_what_is_wrong) {
    char dir[] = "/tmp/sf-engine-json-XXXXXX", big[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    sf_state s;
    sf_err e = {0};
    snprintf(big, sizeof big, "%s/none.json", dir);
    ck_assert_int_eq(sf_engine_load_file(big, &s, &e), SF_ENOTFOUND);
    ck_assert_int_eq(sf_engine_load_file(dir, &s, &e), SF_EFORMAT);
    ck_assert_msg(strstr(e.msg, "is a directory, not a state file"), "%s", e.msg);
    snprintf(big, sizeof big, "%s/big.json", dir);
    FILE *f = fopen(big, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, (1 << 20) + 1, SEEK_SET), 0);
    fputc(' ', f);
    fclose(f);
    ck_assert_int_eq(sf_engine_load_file(big, &s, &e), SF_EFORMAT);
    ck_assert_msg(strstr(e.msg, "a state file is at most 1 MiB"), "%s", e.msg);
    unlink(big);
    rmdir(dir);
}
END_TEST

#include "test-engine-json.tests.h" /* SF_TESTS: every test above (tests/meson.build) */
SF_CHECK_MAIN("engine-json", "json", 120, NULL, NULL)
