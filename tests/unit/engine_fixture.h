/*
 * engine_fixture.h — white-box helpers for the engine's Check suites.
 *
 * They build exact combat scenarios on top of engine/internal.h: a blank
 * combat (no monsters, empty piles, 80/80 HP, 3 energy, turn 1, the player's
 * turn), then monsters with fixed HP and intents, cards placed in chosen
 * piles, and powers set directly. Every action still goes through
 * sf_engine_apply(), so each test exercises the real turn flow (card
 * resolution, deferred effects, monster phase, end of round, compaction of
 * dead monsters — slots shift after a monster dies).
 */
#ifndef SF_ENGINE_FIXTURE_H
#define SF_ENGINE_FIXTURE_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

/* A blank combat; the streams are seeded with `seed` (+ stream index). */
static inline sf_combat *fx_new(sf_state *s, uint64_t seed) {
    memset(s, 0, sizeof *s);
    sf_combat *c = combat_of(s);
    c->hp = c->max_hp = 80;
    c->energy = 3;
    c->turn = 1;
    c->max_turns = SF_MAX_TURNS_DEFAULT;
    c->potion_slots = SF_POTION_SLOTS;
    c->phase = PH_PLAYER;
    c->gold = 99;
    c->encounter = ENC_JAW_WORM;
    for (int i = 0; i < SF_NUM_STREAMS; i++)
        sf_rng_seed(&c->rng[i], seed + (uint64_t)i);
    return c;
}

/* The default fight spec (sf_fight_spec_default: the starter deck). */
static inline sf_fight_spec fx_spec(void) {
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    return spec;
}

/* Fight `encounter` of run `seed` from the default spec (the starter
 * deck), started, which must succeed. */
static inline sf_state fx_fight(int encounter, uint64_t seed) {
    sf_state s;
    sf_err err = {0};
    sf_fight_spec spec = fx_spec();
    spec.encounter = encounter;
    spec.seed = seed;
    ck_assert_msg(sf_engine_init(&s, &spec, &err) == SF_OK, "%s", err.msg);
    return s;
}

/* Append monster `id` with exactly `hp` (max HP too) and intent `move`.
 * Per-kind construction runs (a louse still rolls its bite damage, which
 * tests then overwrite); usePreBattleAction does not. Returns the slot. */
static inline int fx_mon(sf_combat *c, int id, int hp, int move) {
    int m = c->n_mon++;
    monster_init(c, m, id, hp);
    c->mon[m].move = (uint8_t)move;
    return m;
}

static inline sf_card fx_card(const sf_combat *c, int id, int upg) {
    return combat_make_card(c, id, upg);
}

/* Put a card into a pile of *n cards; returns its index. The draw pile's
 * top is its last element, so cards pushed last are drawn first. */
static inline int fx_push(sf_combat *c, sf_card *pile, uint8_t *n, int id, int upg) {
    pile[*n] = fx_card(c, id, upg);
    return (*n)++;
}
#define fx_hand(c, id, upg)    fx_push((c), (c)->hand, &(c)->hand_n, (id), (upg))
#define fx_draw(c, id, upg)    fx_push((c), (c)->draw, &(c)->draw_n, (id), (upg))
#define fx_discard(c, id, upg) fx_push((c), (c)->discard, &(c)->discard_n, (id), (upg))
#define fx_exhaust(c, id, upg) fx_push((c), (c)->exhaust, &(c)->exhaust_n, (id), (upg))

static inline int fx_count(const sf_card *pile, int n, int id) {
    int k = 0;
    for (int i = 0; i < n; i++)
        k += pile[i].id == id;
    return k;
}

static inline int fx_apply(sf_state *s, int kind, int index, int target) {
    sf_action a = {(uint8_t)kind, (uint8_t)index, (uint8_t)target, 0};
    return sf_engine_apply(s, a, NULL);
}

/* Play hand card i at monster t (SF_NO_TARGET for untargeted cards); the
 * play must be legal. */
#define FX_PLAY(s, i, t)     ck_assert_int_eq(fx_apply((s), SF_ACT_PLAY, (i), (t)), SF_OK)
#define FX_CHOOSE(s, opt)    ck_assert_int_eq(fx_apply((s), SF_ACT_CHOOSE, (opt), SF_NO_TARGET), SF_OK)
#define FX_END(s)            ck_assert_int_eq(fx_apply((s), SF_ACT_END_TURN, 0, SF_NO_TARGET), SF_OK)
#define FX_DRINK(s, slot, t) ck_assert_int_eq(fx_apply((s), SF_ACT_POTION, (slot), (t)), SF_OK)

/* A 0-cost, effect-free filler for "the hand is not empty" scenarios
 * whose type matters: Wound (status, unplayable). */
#define FX_FILLER CARD_WOUND

/* returnTrulyRandomColorlessCardInCombat's list, written out for the
 * tests (the engine builds its own from the pool): srcColorlessCardPool, the
 * pool's index order (CardLibrary's HashMap: Dark Shackles, Sadistic
 * Nature, ..., Madness) reversed, HEALING-tagged Bandage Up left out. */
static const int fx_colorless_src[34] = {CARD_MADNESS,
                                         CARD_THINKING_AHEAD,
                                         CARD_MIND_BLAST,
                                         CARD_METAMORPHOSIS,
                                         CARD_JACK_OF_ALL_TRADES,
                                         CARD_SWIFT_STRIKE,
                                         CARD_GOOD_INSTINCTS,
                                         CARD_MASTER_OF_STRATEGY,
                                         CARD_MAGNETISM,
                                         CARD_FINESSE,
                                         CARD_DISCOVERY,
                                         CARD_CHRYSALIS,
                                         CARD_TRANSMUTATION,
                                         CARD_PANACEA,
                                         CARD_PURITY,
                                         CARD_ENLIGHTENMENT,
                                         CARD_FORETHOUGHT,
                                         CARD_FLASH_OF_STEEL,
                                         CARD_HAND_OF_GREED,
                                         CARD_MAYHEM,
                                         CARD_APOTHEOSIS,
                                         CARD_SECRET_WEAPON,
                                         CARD_PANACHE,
                                         CARD_VIOLENCE,
                                         CARD_DEEP_BREATH,
                                         CARD_SECRET_TECHNIQUE,
                                         CARD_BLIND,
                                         CARD_THE_BOMB,
                                         CARD_IMPATIENCE,
                                         CARD_DRAMATIC_ENTRANCE,
                                         CARD_TRIP,
                                         CARD_PANIC_BUTTON,
                                         CARD_SADISTIC_NATURE,
                                         CARD_DARK_SHACKLES};

#endif
