/*
 * toy_engine.h — a tiny card duel that implements the engine.h contract the
 * search relies on, for testing the search's machinery with exactly known
 * chance probabilities. Linked only into test-search-toy (never with the
 * real engine). It keeps the contract's semantics: fixed-size state, streams
 * reported by apply, per-stream reseed, identity without stream state, a
 * belief root that hides the draw order (draws become uniform picks).
 *
 * Rules: the player (hp/max_hp, 3 energy a turn, 3 cards drawn a turn)
 * fights one monster. Cards: Strike (1 energy, 6 damage), Defend (1, 5
 * block), Bash (2, 8 damage and 2 turns of Vulnerable: x1.5 damage, floor),
 * Flash (0, 3 damage). Potion "Fire" deals 10. END_TURN: the hand is
 * discarded, the monster hits for its intent through block, block resets,
 * Vulnerable ticks down, the next intent is rolled on the AI stream (5 or
 * 9, even odds), the turn counter rises and 3 cards are drawn (an empty draw
 * pile takes the discard pile: shuffled on the shuffle stream in true mode;
 * in belief mode every draw is a uniform pick on the shuffle stream). The
 * fight ends when either side reaches 0 HP; nothing is rolled after that.
 */
#ifndef TOY_ENGINE_H
#define TOY_ENGINE_H

#include "engine/engine.h"

enum { TOY_STRIKE = 0, TOY_DEFEND = 1, TOY_BASH = 2, TOY_FLASH = 3, TOY_NCARDS = 4 };
#define TOY_PILE_MAX 24

typedef struct toy_state {
    uint32_t magic;
    uint8_t belief, over, won, potions;
    int16_t hp, max_hp, block, energy;
    int16_t mon_hp, vuln, intent, turn;
    uint8_t hand[TOY_NCARDS];    /* counts (a multiset) */
    uint8_t discard[TOY_NCARDS]; /* counts */
    uint8_t draw[TOY_PILE_MAX];  /* draw[draw_n-1] is the top */
    uint8_t draw_n;
    /* Random streams: SplitMix64 states; excluded from the identity. */
    uint64_t rng[SF_NUM_STREAMS];
    /* Oracle forcing (tests): when forcing, the k-th random pick returns
     * force[k] (0 beyond force_n) and its range is logged. Excluded from the
     * identity. */
    uint8_t forcing, force_n, force_pos, log_n;
    uint8_t force[32];
    uint8_t log_range[32];
    int16_t mon_hp0; /* the monster's starting HP (the loss grade's pool);
                        excluded from the identity like the engine's */
} toy_state;

_Static_assert(sizeof(toy_state) <= SF_STATE_BYTES, "toy state fits in sf_state");

static inline toy_state *toy(sf_state *s) {
    return (toy_state *)(void *)s->opaque;
}
static inline const toy_state *toy_c(const sf_state *s) {
    return (const toy_state *)(const void *)s->opaque;
}

/* A fresh fight at turn 1: `hand` and `draw` (top last) as card ids, intent
 * already rolled, streams seeded from `seed`. */
void toy_init(sf_state *s, int hp, int max_hp, int mon_hp, int intent, const int *hand, int hand_n,
              const int *draw, int draw_n, int potions, uint64_t seed);

#endif
