/*
 * test_engine_play.c — whole fights: invariants under random play, bit-exact
 * replay, and golden digests.
 *
 * Random play draws a deck from every Ironclad card (random upgrades),
 * random relics, potions, HP and ascension, cycles through all 20 Act-1
 * encounters and picks uniformly among the legal actions. After every step
 * it checks HP bounds, pile bounds, card ids, monster slots, that every
 * card is accounted for (hand + draw + discard + exhaust + the card in play
 * = deck + cards made - cards that left play), and that the fight ends
 * within a step bound. Some fights continue from a belief root (belief
 * mode). The default run plays SF_SOAK_DEFAULT fights; the environment
 * variable SF_ENGINE_SOAK_FIGHTS raises it (the engine-soak benchmark,
 * `make bench`, runs 100000).
 */
#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>

#include "engine_fixture.h"
#include "sf_check.h"

#define SF_SOAK_DEFAULT 2000

/* Check's ck_assert* report a "mark point" to the parent process on every
 * call (a pipe write in fork mode); the per-step checks below run millions
 * of times in a soak, so they only call into Check on failure. */
#define REQUIRE(cond, ...)             \
    do {                               \
        if (!(cond))                   \
            ck_abort_msg(__VA_ARGS__); \
    } while (0)
#define MAX_STEPS 4000

static uint64_t next_u64(uint64_t *x) {
    *x += 0x9E3779B97F4A7C15ull;
    return sf_mix64(*x);
}

static int pick(uint64_t *x, int n) {
    return (int)(next_u64(x) % (uint64_t)n);
}

/* A random but legal fight spec for fight number k. */
static void random_spec(uint64_t seed, int k, sf_fight_spec *spec) {
    uint64_t x = sf_seed_derive(seed, (uint64_t)k, 1, 0);
    sf_fight_spec_default(spec);
    spec->encounter = k % ENC_COUNT;
    spec->seed = next_u64(&x);
    spec->floor = pick(&x, 17);
    spec->ascension = pick(&x, 4) == 0 ? pick(&x, SF_MAX_ASCENSION + 1) : 0;
    if (pick(&x, 3)) {
        /* keep the starter deck and add up to 20 random cards */
        int add = pick(&x, 21);
        for (int i = 0; i < add && spec->deck_n < SF_MAX_DECK; i++) {
            int id = 1 + pick(&x, CARD_SLIMED - 1);
            int upg = pick(&x, 3) == 0;
            if (id == CARD_SEARING_BLOW && upg)
                upg = 1 + pick(&x, 4);
            spec->deck[spec->deck_n++] = (sf_card_spec){(uint8_t)id, (uint8_t)upg};
        }
    } else {
        spec->deck_n = 5 + pick(&x, 25);
        /* the Ironclad cards and the colorless ones (ids after the statuses) */
        int colorless = CARD_LAST_COLORLESS - CARD_FIRST_COLORLESS + 1;
        for (int i = 0; i < spec->deck_n; i++) {
            int id = 1 + pick(&x, CARD_SLIMED - 1 + colorless);
            if (id >= CARD_SLIMED)
                id += CARD_FIRST_COLORLESS - CARD_SLIMED;
            spec->deck[i] = (sf_card_spec){(uint8_t)id, (uint8_t)(pick(&x, 2))};
        }
        for (int i = 0; i < spec->deck_n; i++)
            if (spec->deck[i].id == CARD_SEARING_BLOW && spec->deck[i].upgrades)
                spec->deck[i].upgrades = (uint8_t)(1 + pick(&x, 4));
    }
    int nrel = pick(&x, 5);
    for (int i = 0; i < nrel; i++) {
        int r = 2 + pick(&x, RELIC_COUNT - 2);
        int dup = 0;
        for (int j = 0; j < spec->relics_n; j++)
            dup |= spec->relics[j] == r;
        if (!dup)
            spec->relics[spec->relics_n++] = (uint8_t)r;
    }
    spec->potion_slots = pick(&x, 4) ? SF_POTION_SLOTS : SF_MAX_POTION_SLOTS; /* Potion Belt */
    for (int i = 0; i < spec->potion_slots; i++)
        spec->potions[i] = (uint8_t)(pick(&x, 2) ? 0 : 1 + pick(&x, POTION_COUNT - 1));
    spec->max_hp = 50 + pick(&x, 60);
    spec->hp = pick(&x, 8) ? spec->max_hp / 3 + pick(&x, spec->max_hp - spec->max_hp / 3) + 1
                           : 1 + pick(&x, spec->max_hp);
    for (int i = 0; i < spec->relics_n; i++) {
        int max = sf_relic_counter_max(spec->relics[i]);
        spec->relic_counters[i] = max ? pick(&x, max) : 0;
        if (max == SF_MAX_DECK + 1) /* a Bottled relic: 1 + a deck index, or 0 */
            spec->relic_counters[i] %= spec->deck_n + 1;
    }
}

static int zero_tail(const sf_card *pile, int n, int cap) {
    static const sf_card zero;
    for (int i = n; i < cap; i++)
        if (memcmp(&pile[i], &zero, sizeof zero))
            return 0;
    return 1;
}

static void check_pile(const sf_card *pile, int n, int cap, const char *name) {
    REQUIRE(n >= 0 && n <= cap, "%s: %d cards", name, n);
    for (int i = 0; i < n; i++) {
        REQUIRE(pile[i].id > CARD_NONE && pile[i].id < CARD_COUNT, "%s[%d]: id %d", name, i,
                pile[i].id);
        int cost = pile[i].cost;
        REQUIRE(cost == COST_X || cost == COST_UNPLAYABLE || (cost >= 0 && cost <= 4),
                "%s[%d]: cost %d", name, i, cost);
    }
    REQUIRE(zero_tail(pile, n, cap), "%s: unused slots not zero", name);
}

/* Every invariant of a state reached by legal play. `deck_n` is the size
 * of the deck the fight started with. */
static void check_invariants(const sf_state *s, int deck_n, const char *where) {
    const sf_combat *c = ccombat_of(s);
    REQUIRE(c->max_hp >= 1 && c->max_hp <= 999, "%s: max HP %d", where, c->max_hp);
    REQUIRE(c->hp >= 0 && c->hp <= c->max_hp, "%s: HP %d/%d", where, c->hp, c->max_hp);
    REQUIRE(c->block >= 0 && c->block <= 999, "%s: block %d", where, c->block);
    REQUIRE(c->hp > 0 || c->phase == PH_OVER, "%s: dead but playing", where);
    REQUIRE(c->phase <= PH_OVER, "%s: phase %d", where, c->phase);
    check_pile(c->hand, c->hand_n, SF_MAX_HAND, "hand");
    check_pile(c->draw, c->draw_n, SF_MAX_PILE, "draw");
    check_pile(c->discard, c->discard_n, SF_MAX_PILE, "discard");
    check_pile(c->exhaust, c->exhaust_n, SF_MAX_PILE, "exhaust");
    REQUIRE(c->draw_known <= c->draw_n, "%s: draw_known %d > %d", where, c->draw_known, c->draw_n);
    REQUIRE(c->n_mon <= SF_MAX_MONSTERS, "%s: %d monsters", where, c->n_mon);
    for (int m = 0; m < c->n_mon; m++) {
        const sf_monster *mo = &c->mon[m];
        REQUIRE(mo->id > MON_NONE && mo->id < MON_COUNT, "%s: monster %d id %d", where, m, mo->id);
        REQUIRE(mo->move < MV_COUNT, "%s: monster %d move %d", where, m, mo->move);
        /* every move a monster ever announces is one of its own (the
         * state loader's table, checked against the move rules here) */
        REQUIRE(monster_has_move(mo->id, mo->move) && monster_has_move(mo->id, mo->hist[0]) &&
                    monster_has_move(mo->id, mo->hist[1]),
                "%s: monster %d (%s) has move %s/%s/%s", where, m, sf_monsters[mo->id].name,
                sf_moves[mo->move].name, sf_moves[mo->hist[0]].name, sf_moves[mo->hist[1]].name);
        REQUIRE(mo->block >= 0 && mo->block <= 999, "%s: monster block", where);
        if (combat_alive(c, m))
            REQUIRE(mo->hp > 0 && mo->hp <= mo->max_hp, "%s: monster %d HP %d/%d", where, m, mo->hp,
                    mo->max_hp);
    }
    if (c->phase != PH_OVER) {
        /* between steps only living monsters remain (dead ones compacted) */
        if (c->phase == PH_PLAYER)
            for (int m = 0; m < c->n_mon; m++)
                REQUIRE(combat_alive(c, m), "%s: dead monster %d kept", where, m);
        REQUIRE(combat_alive_count(c) > 0, "%s: no monster but not over", where);
        REQUIRE(c->defer_n == 0 || c->phase == PH_CHOICE, "%s: %d deferred effects left", where,
                c->defer_n);
        /* a card's screen has its card in limbo, a potion's has none */
        REQUIRE(c->phase == PH_CHOICE
                    ? c->pending.active == !combat_choice_cardless(c->pending.kind)
                    : !c->pending.active,
                "%s: card in limbo outside a card's choice", where);
        int in_play = (c->pending.active && !c->pending.copy) + c->pending.queue_n;
        int cards = c->hand_n + c->draw_n + c->discard_n + c->exhaust_n + in_play;
        int want = deck_n + c->cards_created - c->cards_removed - c->cards_dropped;
        REQUIRE(cards == want, "%s: %d cards, want %d (deck %d + %d made - %d gone - %d dropped)",
                where, cards, want, deck_n, c->cards_created, c->cards_removed, c->cards_dropped);
    } else {
        REQUIRE(!!(c->flags & FL_WON) + !!(c->flags & FL_LOST) == 1, "%s: outcome", where);
    }
}

typedef struct fight_log {
    int n;
    uint32_t codes[MAX_STEPS];
} fight_log;

/* Play one fight with uniformly random legal actions from `s`. Returns the
 * number of steps. When `log` is given the actions are recorded. When
 * `belief_at` >= 0, the state is replaced by its belief root at that step
 * (the invariants hold in belief mode too). */
static int monster_hp(const sf_state *s) {
    sf_observation o;
    sf_engine_observe(s, &o);
    return o.monster_hp_total;
}

/* A fight with no turn limit can be endless (a deck that cannot hurt the
 * monsters, behind Barricade and Metallicize). After ATTACK_FIRST steps the
 * policy plays an Attack whenever it can; a fight that reaches MAX_STEPS is
 * accepted only as such a stalemate: no monster HP lost over the last
 * STALL_WINDOW steps. Returns the steps, or -1 for a stalemate. */
#define ATTACK_FIRST 1000
#define STALL_WINDOW 1000

static int random_fight(sf_state *s, int deck_n, uint64_t x, fight_log *log, int belief_at) {
    sf_action acts[SF_MAX_ACTIONS];
    int steps = 0, hp_mark = 0;
    char where[64];
    while (!sf_engine_is_terminal(s)) {
        if (steps == MAX_STEPS - STALL_WINDOW)
            hp_mark = monster_hp(s);
        if (steps == MAX_STEPS) {
            REQUIRE(monster_hp(s) == hp_mark, "fight did not end in %d steps", MAX_STEPS);
            return -1;
        }
        if (steps == belief_at) {
            /* the belief root resets the card counters: re-baseline */
            sf_engine_belief_root(s, next_u64(&x), s);
            const sf_combat *c = ccombat_of(s);
            deck_n = c->hand_n + c->draw_n + c->discard_n + c->exhaust_n +
                     (c->pending.active && !c->pending.copy) + c->pending.queue_n;
        }
        int n = sf_engine_enumerate(s, acts, SF_MAX_ACTIONS);
        REQUIRE(n > 0, "no legal action");
        for (int i = 0; i < n; i++) {
            sf_action_info info;
            REQUIRE(sf_engine_action_info(s, acts[i], &info) == SF_OK, "action info");
        }
        /* END_TURN is last: odd fights pick uniformly, even ones play a card
         * three times in four when they can (longer fights) */
        int i = (x & 1) || n == 1 || pick(&x, 4) == 0 ? pick(&x, n) : pick(&x, n - 1);
        if (steps >= ATTACK_FIRST) {
            for (int k = 0; k < n; k++) {
                sf_action_info info;
                sf_engine_action_info(s, acts[k], &info);
                if (info.card_type == SF_CARD_ATTACK || acts[k].kind == SF_ACT_CHOOSE) {
                    i = k;
                    break;
                }
            }
        }
        sf_action a = acts[i];
        uint32_t mask = 0;
        REQUIRE(sf_engine_apply(s, a, &mask) == SF_OK, "apply");
        REQUIRE(mask >> SF_NUM_STREAMS == 0, "stream mask");
        if (log)
            log->codes[log->n++] = sf_action_code(a);
        snprintf(where, sizeof where, "step %d", steps);
        check_invariants(s, deck_n, where);
        steps++;
    }
    REQUIRE(sf_engine_enumerate(s, acts, SF_MAX_ACTIONS) == 0, "actions after the end");
    return steps;
}

static int soak_fights(void) {
    const char *e = getenv("SF_ENGINE_SOAK_FIGHTS");
    if (e && *e) {
        long v = strtol(e, NULL, 10);
        if (v > 0)
            return (int)v;
    }
    return SF_SOAK_DEFAULT;
}

START_TEST(random_fights_keep_every_invariant) {
    int fights = soak_fights();
    long steps = 0, won = 0, stalled = 0, full = 0;
    uint64_t t0 = sf_now_ns();
    for (int k = 0; k < fights; k++) {
        sf_fight_spec spec;
        random_spec(0x50A4, k, &spec);
        sf_state s;
        sf_err err = {0};
        ck_assert_msg(sf_engine_init(&s, &spec, &err) == SF_OK, "fight %d: %s", k, err.msg);
        check_invariants(&s, spec.deck_n, "init");
        uint64_t x = sf_seed_derive(0x50A4, (uint64_t)k, 2, 0);
        int belief_at = k % 5 == 0 ? (int)(x % 40) : -1;
        int n = random_fight(&s, spec.deck_n, x, NULL, belief_at);
        if (n < 0) {
            stalled++;
            continue;
        }
        steps += n;
        full += ccombat_of(&s)->cards_dropped > 0;
        sf_outcome o;
        sf_engine_outcome(&s, &o);
        ck_assert(o.over);
        won += o.won;
    }
    double secs = (double)(sf_now_ns() - t0) / 1e9;
    fprintf(stderr,
            "soak: %d fights, %ld steps, %ld won, %ld endless stalemates, %ld filled a pile\n",
            fights, steps, won, stalled, full);
    if (getenv("SF_ENGINE_SOAK_FIGHTS")) {
        /* the engine-soak benchmark's figure (docs/benchmarks.md format) */
        printf("{\"bench\":\"engine.soak_fights_checked\",\"value\":%d,\"unit\":\"fights\","
               "\"n\":1,\"median\":%d}\n",
               fights, fights);
        printf("engine soak: %d random fights (%ld steps) kept every invariant in %.1f s; "
               "%ld won, %ld endless stalemates, %ld filled a pile\n",
               fights, steps, secs, won, stalled, full);
    }
    ck_assert_int_le(stalled * 200, fights); /* rare: under 0.5% */
    ck_assert_int_gt(won, 0);
    ck_assert_int_lt(won, fights);
}
END_TEST

START_TEST(fights_replay_bit_exactly_from_seed_and_actions) {
    static fight_log log;
    for (int k = 0; k < 100; k++) {
        sf_fight_spec spec;
        random_spec(0xEE, k, &spec);
        sf_state a, b;
        ck_assert_int_eq(sf_engine_init(&a, &spec, NULL), SF_OK);
        ck_assert_int_eq(sf_engine_init(&b, &spec, NULL), SF_OK);
        ck_assert(!memcmp(&a, &b, sizeof a));
        log.n = 0;
        sf_state start = a;
        random_fight(&a, spec.deck_n, sf_seed_derive(0xEE, (uint64_t)k, 3, 0), &log, -1);
        /* replay the recorded actions on the fresh copy, step by step */
        sf_state replay = start;
        for (int i = 0; i < log.n; i++)
            ck_assert_int_eq(sf_engine_apply(&replay, sf_action_decode(log.codes[i]), NULL), SF_OK);
        ck_assert(!memcmp(&replay, &a, sizeof a));
    }
}
END_TEST

SF_TCASE(golden, 0);

/* ------------------------------------------------------------------------
 * Golden digests. Each row is a fight played with a fixed, seeded choice
 * among the legal actions; `chain` is XXH3-64 folded over the 16-byte
 * sf_engine_identity after every step (seeded with the previous value),
 * `bytes` XXH3-64 of the whole final state (random streams included).
 * They were generated once from this engine (run the test with
 * SF_ENGINE_PRINT_GOLDEN=1 to print the table) after the rules were checked
 * against the game rules (docs/game-rules.md) and the suites above; a change here means a
 * replay-visible rule change, which must bump SF_ENGINE_VERSION.
 * ---------------------------------------------------------------------- */
typedef struct golden {
    int encounter;
    uint64_t seed;
    const char *deck;
    int steps, hp, won;
    uint64_t chain, bytes;
} golden;

#define KITCHEN                                                                               \
    "Bash,Strike*2,Defend*2,Armaments,Headbutt,True Grit+,Warcry,Burning Pact,Dual Wield,"    \
    "Exhume,Feel No Pain,Dark Embrace,Havoc,Double Tap,Whirlwind,Sword Boomerang,Juggernaut," \
    "Rupture,Hemokinesis,Second Wind,Fiend Fire,Rage,Wild Strike,Infernal Blade"

static const golden goldens[] = {
#include "engine_golden.inc"
};

static void play_golden(const golden *g, int *steps, int *hp, int *won, uint64_t *chain,
                        uint64_t *bytes) {
    sf_fight_spec spec = fx_spec();
    if (g->deck)
        REQUIRE(sf_deck_parse(g->deck, &spec, NULL) == SF_OK, "deck");
    spec.relics[spec.relics_n++] = RELIC_BRONZE_SCALES;
    spec.potions[0] = POTION_FIRE;
    spec.potions[1] = POTION_SWIFT;
    spec.encounter = g->encounter;
    spec.seed = g->seed;
    spec.floor = 3;
    sf_state s;
    REQUIRE(sf_engine_init(&s, &spec, NULL) == SF_OK, "init");
    uint64_t h = 0, x = g->seed;
    int n = 0;
    sf_action acts[SF_MAX_ACTIONS];
    while (!sf_engine_is_terminal(&s) && n < MAX_STEPS) {
        int k = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
        /* favour cards over ending the turn so fights end */
        int i = pick(&x, k > 1 && pick(&x, 4) ? k - 1 : k);
        REQUIRE(sf_engine_apply(&s, acts[i], NULL) == SF_OK, "apply");
        sf_identity id = sf_engine_identity(&s);
        h = XXH3_64bits_withSeed(&id, sizeof id, h);
        n++;
    }
    sf_outcome o;
    sf_engine_outcome(&s, &o);
    *steps = n;
    *hp = o.hp;
    *won = o.won;
    *chain = h;
    *bytes = XXH3_64bits(&s, sizeof s);
}

SF_LOOP_TEST(golden_fight_digests, 0, (int)(sizeof goldens / sizeof goldens[0])) {
    const golden *g = &goldens[_i];
    int steps, hp, won;
    uint64_t chain, bytes;
    play_golden(g, &steps, &hp, &won, &chain, &bytes);
    ck_assert_msg(steps == g->steps && hp == g->hp && won == g->won && chain == g->chain &&
                      bytes == g->bytes,
                  "fight %d (%s, seed %llu): got {%d, %d, %d, 0x%016llx, 0x%016llx}", _i,
                  sf_encounter_name(g->encounter), (unsigned long long)g->seed, steps, hp, won,
                  (unsigned long long)chain, (unsigned long long)bytes);
}
END_TEST

/* With SF_ENGINE_PRINT_GOLDEN set, print the table rows for the fights
 * listed in engine_golden.inc (same encounters, seeds and decks). */
static void print_golden(void) {
    for (size_t k = 0; k < sizeof goldens / sizeof goldens[0]; k++) {
        const golden *g = &goldens[k];
        int steps, hp, won;
        uint64_t chain, bytes;
        play_golden(g, &steps, &hp, &won, &chain, &bytes);
        printf("    {%d, %lluull, %s, %d, %d, %d, 0x%016llxull, 0x%016llxull},\n", g->encounter,
               (unsigned long long)g->seed, g->deck ? "KITCHEN" : "NULL", steps, hp, won,
               (unsigned long long)chain, (unsigned long long)bytes);
    }
}

#include "test-engine-play.tests.h" /* SF_TESTS: every test above (tests/meson.build) */

int main(void) {
    const char *p = getenv("SF_ENGINE_PRINT_GOLDEN");
    if (p && *p) {
        print_golden();
        return 0;
    }
    return SF_CHECK_ALL("engine-play", "soak", 3600, NULL, NULL);
}
