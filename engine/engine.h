/*
 * engine.h — the Act-1 Ironclad combat engine: the ground truth every label
 * rests on.
 *
 * What it is
 *   One fixed-size value, `sf_state`, holds a whole combat: the player, up to
 *   SF_MAX_MONSTERS monsters with their move history and intent, every card
 *   pile, relics with counters, potions, turn counters and every random
 *   stream. It has no pointers and owns no heap memory, so copying a
 *   position is one memcpy (or a plain assignment).
 *
 * Rules source
 *   Slay the Spire v2.3.2 (A0 numbers exactly; ascension as a parameter).
 *   docs/game-rules.md (cited as "game-rules §n") cites the game class
 *   behind every number; docs/engine.md records every choice made where the
 *   sheet marks a value as unsettled.
 *
 * Invariants
 *   - Nothing here allocates, blocks or touches a global: every function is
 *     reentrant and thread-safe on distinct states.
 *   - sf_engine_enumerate() and sf_engine_apply() never allocate (hot path).
 *   - Determinism: the same (spec, seed, action list) replays bit-exactly.
 *   - Random streams are kept apart as the game keeps them (SF_STREAM_*),
 *     each a libGDX RandomXS128 with a call counter; shuffles use
 *     java.util.Random seeded from the shuffle stream, like the game.
 *     sf_engine_apply() reports which streams it advanced, so a search knows
 *     a chance event when it sees one.
 *   - Honesty: sf_engine_belief_root() keeps only what the player can see;
 *     a search that starts from it can never read the hidden draw order or
 *     future rolls.
 *
 * Errors
 *   Functions that can fail return 0 (SF_OK) or a negative SF_E* code from
 *   common/common.h, and fill the optional `sf_err *` with a message that
 *   names the offending field.
 */
#ifndef SF_ENGINE_H
#define SF_ENGINE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* Bumped whenever a rule change can change a replay. Recorded in every label. */
#define SF_ENGINE_VERSION 6

/* ---------------------------------------------------------------------------
 * Capacities
 * ------------------------------------------------------------------------- */
#define SF_MAX_MONSTERS     6  /* living monsters at once (Lots of Slimes: 5)  */
#define SF_MAX_HAND         10 /* Settings.MAX_HAND_SIZE                        */
#define SF_MAX_PILE         64 /* cards in one pile (beyond: the fight ends, engine_limit) */
#define SF_MAX_DECK         48 /* master-deck cards a fight starts with         */
#define SF_MAX_RELICS       12
#define SF_POTION_SLOTS     3  /* potion slots a fight has by default (the game's 3) */
#define SF_MAX_POTION_SLOTS 5  /* slots a fight can have (Potion Belt: 3 + 2)      */
#define SF_MAX_ACTIONS      80 /* legal actions at one decision (below)          */
#define SF_GAUNTLET_MAX     12 /* fights in one generated gauntlet              */
/* SF_MAX_ACTIONS: 10 distinct cards x 5 targets + 5 potion slots x 5
 * targets + end turn = 76; Act 1 never has more than 5 monsters alive. */

/* The turn cap. The game has no turn limit, so a search that is sure of a
 * win at its current HP has no reason to end a fight it can no longer lose
 * (docs/engine.md "The turn cap"). Every fight therefore has a cap: once
 * max_turns player turns have been played (the monsters' turn after the
 * last one included), the next turn never starts and the fight ends as a
 * turn-limit loss (sf_outcome.turn_limit). A turn in which
 * SF_MAX_TURN_ACTIONS actions have been applied ends the fight the same
 * way, so no fight lasts more than max_turns * SF_MAX_TURN_ACTIONS
 * actions. The default is far beyond real play: the longest of 1,200
 * searched Act-1 fights lasted 17 turns (docs/engine.md "The turn cap"). */
#define SF_MAX_TURNS_DEFAULT 50
#define SF_MAX_TURNS_LIMIT   1000 /* the largest cap a spec may ask for       */
#define SF_MAX_TURN_ACTIONS  250  /* actions in one turn before it is cut    */

/* The size of a state in bytes. Opaque: callers copy it, never look inside. */
#define SF_STATE_BYTES 1856

/* A whole combat. Copy with `=` or memcpy; never read the bytes. */
typedef struct sf_state {
    _Alignas(16) uint8_t opaque[SF_STATE_BYTES];
} sf_state;

/* ---------------------------------------------------------------------------
 * Random streams (game-rules §0). Bit i of a stream mask is stream i.
 * ------------------------------------------------------------------------- */
enum {
    SF_STREAM_MONSTER_HP = 0,  /* monster HP rolls, louse bite/curl-up rolls   */
    SF_STREAM_AI = 1,          /* every rollMove num and in-move coin flips    */
    SF_STREAM_SHUFFLE = 2,     /* draw-pile shuffles; in belief mode, draws    */
    SF_STREAM_CARD_RANDOM = 3, /* random targets, random cards, random inserts */
    SF_STREAM_MISC = 4,        /* encounter composition                        */
    SF_STREAM_POTION = 5,      /* potion drops (unused inside a combat)        */
    SF_NUM_STREAMS = 6
};

/* ---------------------------------------------------------------------------
 * Actions
 * ------------------------------------------------------------------------- */
enum {
    SF_ACT_END_TURN = 0, /* end the player's turn; monster turns run inside   */
    SF_ACT_PLAY = 1,     /* play hand card `index` at monster `target`        */
    SF_ACT_POTION = 2,   /* drink potion slot `index` at monster `target`     */
    SF_ACT_CHOOSE = 3    /* pick option `index` on an open choice screen      */
};
#define SF_NO_TARGET 0xFF

/* One action. `index` is a hand position (PLAY), a potion slot (POTION) or a
 * choice-screen option (CHOOSE); `target` is a monster slot or SF_NO_TARGET.
 * sf_engine_enumerate() produces them; callers should not invent them. */
typedef struct sf_action {
    uint8_t kind;
    uint8_t index;
    uint8_t target;
    uint8_t reserved; /* always 0 */
} sf_action;

/* A stable 32-bit code for an action (kind, index, target), for tables,
 * hashing and the label record; sf_action_decode() inverts it. */
static inline uint32_t sf_action_code(sf_action a) {
    return (uint32_t)a.kind | (uint32_t)a.index << 8 | (uint32_t)a.target << 16;
}
static inline sf_action sf_action_decode(uint32_t code) {
    sf_action a = {(uint8_t)(code & 0xFF), (uint8_t)(code >> 8 & 0xFF),
                   (uint8_t)(code >> 16 & 0xFF), 0};
    return a;
}

/* ---------------------------------------------------------------------------
 * Content names. Ids are small integers, stable within an engine version.
 * Every lookup returns a negative SF_ENOTFOUND for an unknown name.
 * ------------------------------------------------------------------------- */
int sf_card_lookup(const char *name);  /* "Strike", "Pommel Strike", ...  */
const char *sf_card_name(int card_id); /* NULL for an out-of-range id     */
int sf_card_count(void);               /* ids are 0..count-1              */
/* A card's rarity: SF_RARITY_*, or SF_EINVAL for an out-of-range id. */
enum {
    SF_RARITY_BASIC = 0,
    SF_RARITY_COMMON = 1,
    SF_RARITY_UNCOMMON = 2,
    SF_RARITY_RARE = 3,
    SF_RARITY_SPECIAL = 4 /* statuses: never in a reward                 */
};
int sf_card_rarity(int card_id);
int sf_relic_lookup(const char *name);
const char *sf_relic_name(int relic_id);
int sf_relic_count(void);
/* The bound of the counter a relic keeps between combats: counters lie in
 * [0, max); 0 when the relic keeps none (or the id is out of range). */
int sf_relic_counter_max(int relic_id);
int sf_potion_lookup(const char *name); /* 0 is "no potion"                */
const char *sf_potion_name(int potion_id);
int sf_potion_count(void);
int sf_monster_count(void);
const char *sf_monster_name(int monster_id);

/* Encounters: the Act-1 pools of game-rules §6. */
enum { SF_POOL_WEAK = 0, SF_POOL_STRONG = 1, SF_POOL_ELITE = 2, SF_POOL_BOSS = 3 };
int sf_encounter_lookup(const char *name); /* "Jaw Worm", "3 Sentries", ...   */
const char *sf_encounter_name(int encounter_id);
int sf_encounter_count(void);            /* 20 in Act 1                     */
int sf_encounter_pool(int encounter_id); /* SF_POOL_*, or SF_EINVAL         */

/* ---------------------------------------------------------------------------
 * Starting a fight
 * ------------------------------------------------------------------------- */
typedef struct sf_card_spec {
    uint8_t id;       /* sf_card_lookup()                                      */
    uint8_t upgrades; /* 0 or 1; Searing Blow may carry more                   */
} sf_card_spec;

/* Everything a fight starts from. sf_fight_spec_default() fills the A0
 * Ironclad start: 80/80 HP, 5 Strike, 4 Defend, Bash, Burning Blood, no
 * potions, the default turn cap; the caller then sets encounter and seed. */
typedef struct sf_fight_spec {
    sf_card_spec deck[SF_MAX_DECK];
    int deck_n;
    uint8_t relics[SF_MAX_RELICS];
    int relics_n;
    uint8_t potions[SF_MAX_POTION_SLOTS]; /* potion ids; 0 = empty slot        */
    /* Potion slots of the fight: 1..SF_MAX_POTION_SLOTS (5 with Potion
     * Belt), or 0 for SF_POTION_SLOTS; slots from potion_slots on must be
     * empty. */
    int potion_slots;
    int hp, max_hp;
    int gold;
    int encounter; /* sf_encounter_lookup()                                   */
    int ascension; /* 0..SF_MAX_ASCENSION                                     */
    uint64_t seed; /* the run seed                                            */
    int floor;     /* per-floor streams are seeded with seed + floor (§0)     */
    /* relic_counters[i]: the counter relics[i] keeps between combats (the
     * game's AbstractRelic.counter: Pen Nib's Attacks, Happy Flower's
     * turns, ...), in [0, sf_relic_counter_max(relics[i])); 0 for a relic
     * that keeps none. */
    int relic_counters[SF_MAX_RELICS];
    /* The turn cap (above): 1..SF_MAX_TURNS_LIMIT, or 0 for
     * SF_MAX_TURNS_DEFAULT. */
    int max_turns;
} sf_fight_spec;

#define SF_MAX_ASCENSION 9 /* A2..A9 monster HP/damage bumps are modelled     */

void sf_fight_spec_default(sf_fight_spec *spec);

/* Parse a deck list such as "Strike*5,Defend*4,Bash" or "Bash+,Inflame"
 * ("+" = upgraded, "*N" = N copies) into spec->deck. Errors name the item. */
int sf_deck_parse(const char *text, sf_fight_spec *spec, sf_err *err);

/* Parse a relic list such as "Burning Blood,Vajra" into spec->relics and
 * relics_n, and a potion list such as "Fire Potion, Block Potion" into
 * spec->potions (the slots after the last potion empty); a list longer than
 * the spec's potion_slots (0: SF_POTION_SLOTS) is an error ("more than N").
 * Spaces after a comma are skipped. Errors name the item; spec is unchanged
 * on error. */
int sf_relics_parse(const char *text, sf_fight_spec *spec, sf_err *err);
int sf_potions_parse(const char *text, sf_fight_spec *spec, sf_err *err);

/* Start a fight: build the encounter (HP rolls), roll first intents, shuffle
 * the deck, run pre-battle powers and relics, draw the opening hand, exactly
 * in the order of game-rules §2.1. Leaves `s` at the first decision.
 * Errors: SF_EINVAL for an unknown card/relic/potion/encounter id, a deck
 * over SF_MAX_DECK, HP out of range, or an unsupported ascension. */
int sf_engine_init(sf_state *s, const sf_fight_spec *spec, sf_err *err);

/* ---------------------------------------------------------------------------
 * Gauntlet: an Act-1 sequence of fights with HP carried between them.
 * ------------------------------------------------------------------------- */
typedef struct sf_gauntlet {
    int n;                           /* number of fights                      */
    int encounters[SF_GAUNTLET_MAX]; /* in order                              */
} sf_gauntlet;

/* Generate the fight list for `seed` with the act's pool rules (game rules (docs/game-rules.md)
 * §6): 3 weak, then strong fights (no repeat of either of the previous two,
 * first-strong exclusions), one elite, then the boss; the composition is in
 * docs/engine.md. The monsterRng stream is java-seeded from `seed`. */
void sf_gauntlet_generate(uint64_t seed, sf_gauntlet *g);

/* After a won fight, carry HP (Burning Blood's heal already applied),
 * potions, gold, persistent relic counters and the turn cap into `next` and
 * point it at gauntlet fight `index` (floor index+1). */
void sf_engine_carry_over(const sf_state *finished, const sf_gauntlet *g, int index,
                          sf_fight_spec *next);

/* ---------------------------------------------------------------------------
 * Starting positions (engine/run.c; rules, sources and simplifications in
 * docs/starts.md): the deck, relics, potions, HP and gold a player has when
 * a fight begins, made by playing an Act-1 run prefix by the game's reward
 * rules (docs/game-rules.md §11) before it.
 *
 * A "rewards" start draws a path through the act (a map model matching the
 * [sim] room statistics of §11), places the fight on it by its class (weak:
 * one of the first 3 monster fights; strong: a later monster fight; elite:
 * an elite room, floor 6 or later; boss: floor 16 after the whole path),
 * and plays every room before it: monster and elite fights played by
 * sf_engine_heuristic_action() at tau 0 with HP carried, card rewards (3
 * cards by rarity with the offset b carried over the prefix), gold, potion
 * drops (40 + M), elite and chest relics, rest sites (heal 30 % or smith,
 * and the relics' lift, toke and dig) and shops (card removal only), with
 * the run-prefix effects of the relics held (eggs, Question Card, Singing
 * Bowl, Prayer Wheel, Dream Catcher, Maw Bank, ...) and their canSpawn
 * conditions (docs/starts.md "Relics in the prefix"). A picker makes every
 * choice. A run whose player dies before the fight is discarded and the
 * next attempt drawn, so the starts are those of the runs that reach the
 * fight.
 *
 * Randomness: every stream of the prefix is derived from (run seed, game
 * seed) with sf_seed_derive() under SF_START_TAG, a tag no fight stream
 * uses. The result is an ordinary sf_fight_spec: the fight it starts is the
 * same as from a spec written by hand, and its own streams come only from
 * spec.seed and spec.floor. Everything in a start is what the player can
 * see, so searches from it stay honest.
 *
 * Relics that act on the run only (Meal Ticket, ...) are kept and recorded
 * in sf_start_desc and in the text form, and have no effect in a fight; the
 * spec holds only the relics and potions a fight plays (every potion of the
 * Ironclad list, the Colorless Potion included). Items are
 * numbered in their own id spaces (sf_run_relic_*, sf_run_potion_*), which
 * name every relic and potion a start can hold.
 *
 * Nothing here allocates or touches a global; sampling costs one greedy
 * fight per prefix fight (about 9 before a boss, times the attempts).
 * ------------------------------------------------------------------------- */

#define SF_START_TAG 0x7374617274ull /* "start": the prefix's sf_seed_derive tag */

/* Bumped whenever sf_start_sample() can return another start for the same
 * arguments (a rule, table or stream change). Labels record it beside the
 * start's text, as they record SF_ENGINE_VERSION. */
#define SF_START_VERSION 2

enum {
    SF_START_STARTER = 0, /* the A0 start (sf_fight_spec_default), floor 0 */
    SF_START_REWARDS = 1  /* an Act-1 prefix played before the fight        */
};

enum {
    SF_PICK_RANDOM = 0,  /* uniform over the offered options, skip included */
    SF_PICK_GREEDY = 1,  /* the pick table (sf_pick_table)                  */
    SF_PICK_CALLBACK = 2 /* sf_start_opts.pick decides (a network, a person) */
};

/* Names for configs and flags: "starter", "rewards"; "random", "greedy",
 * "callback". Lookups return SF_ENOTFOUND for other names; name functions
 * NULL out of range. */
const char *sf_start_kind_name(int start);
int sf_start_kind_lookup(const char *name);
const char *sf_picker_name(int picker);
int sf_picker_lookup(const char *name);

/* The `encounter` argument of sf_start_sample: an encounter id, or
 * SF_START_CLASS(SF_POOL_*) to let the run's own encounter lists choose one
 * of that class where the fight falls. */
#define SF_START_CLASS(pool) (-1 - (pool))

/* Run-level items: every relic (Burning Blood and the Ironclad common,
 * uncommon and rare pools of §11, in that order) and every potion of the
 * Ironclad list (§11, getPotions order). Id 0 is "none". *_engine() gives
 * the engine's relic or potion id, or SF_ENOTFOUND when the engine does not
 * model the item. Lookups match names as sf_card_lookup() does. */
int sf_run_relic_count(void);
const char *sf_run_relic_name(int item); /* NULL out of range */
int sf_run_relic_lookup(const char *name);
int sf_run_relic_engine(int item);
/* 1 when a start plays relic `item` by its rules: in a fight (an engine
 * relic), on pickup, or on the run before the fight (docs/starts.md "Relics
 * in the prefix"); 0 for an item whose rule nothing plays, or out of range. */
int sf_run_relic_modelled(int item);
int sf_run_potion_count(void);
const char *sf_run_potion_name(int item);
int sf_run_potion_lookup(const char *name);
int sf_run_potion_engine(int item);

/* The greedy picker's table: data, one row per card id. A caller may change
 * any entry (e.g. from a config) after sf_pick_table_default(). */
#define SF_PICK_CARDS 128 /* capacity in card ids (sf_card_count() is less) */
typedef struct sf_pick_table {
    uint8_t take[SF_PICK_CARDS];  /* 0..100: worth of adding the card         */
    uint8_t smith[SF_PICK_CARDS]; /* 0..100: worth of upgrading one copy      */
    /* A reward's best card (its take less copy_penalty per copy already in
     * the deck) is taken when that is >= skip_below, else the reward is
     * skipped. A rest site heals when HP < rest_below % of max HP
     * (rest_below_boss before the boss), else smiths the card of highest
     * smith worth. A shop removes the card of least take when that is below
     * remove_below and the gold suffices. */
    int skip_below;
    int copy_penalty;
    int rest_below;
    int rest_below_boss;
    int remove_below;
} sf_pick_table;

void sf_pick_table_default(sf_pick_table *t);

/* A choice put to a picker. Options are 0..n_options-1; when can_skip is 1,
 * n_options itself means "skip" (take no card, remove nothing).
 *   SF_CHOICE_CARD: a card reward; cards[] holds the 3 cards offered (4 with
 *                   Question Card; a held egg has upgraded its type). With
 *                   `bowl` (Singing Bowl held), n_options + 1 takes +2 max
 *                   HP instead of a card.
 *   SF_CHOICE_REST: a rest site; option k is rest[k] (SF_REST_*): heal
 *                   (always option 0: 30 % of max HP, + 15 with Regal
 *                   Pillow, then Dream Catcher's card reward), smith
 *                   (option 1 when a card can be upgraded; a SF_CHOICE_SMITH
 *                   follows), then the relics' options in relic order: lift
 *                   (Girya, fewer than 3 lifts), toke (Peace Pipe; a
 *                   SF_CHOICE_TOKE follows), dig (Shovel: a relic).
 *   SF_CHOICE_SMITH: cards[] holds the distinct upgradable cards of the deck.
 *   SF_CHOICE_REMOVE: a shop; cards[] holds the distinct removable cards of
 *                   the deck (a bottled card is not), removal costs `price`.
 *   SF_CHOICE_TOKE: Peace Pipe; cards[] as for SF_CHOICE_REMOVE, no skip.
 *   SF_CHOICE_BOTTLE: a Bottled relic (`relic`, a run relic id) was
 *                   obtained; cards[] holds the distinct Attacks / Skills /
 *                   Powers of the deck, one goes in the bottle, no skip. */
enum {
    SF_CHOICE_CARD = 0,
    SF_CHOICE_REST = 1,
    SF_CHOICE_SMITH = 2,
    SF_CHOICE_REMOVE = 3,
    SF_CHOICE_TOKE = 4,
    SF_CHOICE_BOTTLE = 5
};
enum { SF_REST_HEAL = 0, SF_REST_SMITH = 1, SF_REST_LIFT = 2, SF_REST_TOKE = 3, SF_REST_DIG = 4 };
#define SF_REST_OPTIONS 8
typedef struct sf_start_choice {
    int kind; /* SF_CHOICE_*                                                */
    int n_options;
    int can_skip;
    sf_card_spec cards[SF_MAX_DECK];
    int price;                     /* SF_CHOICE_REMOVE: gold                    */
    int floor;                     /* 1..15                                     */
    int elite;                     /* SF_CHOICE_CARD: 1 after an elite          */
    int before_boss;               /* SF_CHOICE_REST: the rest site on floor 15 */
    int bowl;                      /* SF_CHOICE_CARD: Singing Bowl's option     */
    uint8_t rest[SF_REST_OPTIONS]; /* SF_CHOICE_REST: SF_REST_* per option      */
    int relic;                     /* SF_CHOICE_BOTTLE: the bottle's run id     */
    const sf_fight_spec *player;   /* the player now (deck, relics, HP, gold)   */
} sf_start_choice;

/* A picker: return an option in 0..n_options-1, n_options to skip (only when
 * can_skip), or a negative SF_E* code to abort the sample. `*rng` is a
 * SplitMix64 state of the prefix's picker stream, for pickers that draw. */
typedef int (*sf_start_pick_fn)(void *ctx, const sf_start_choice *choice, uint64_t *rng);

typedef struct sf_start_opts {
    int start;                  /* SF_START_*                                 */
    int picker;                 /* SF_PICK_*                                  */
    const sf_pick_table *table; /* SF_PICK_GREEDY: NULL = the default table   */
    sf_start_pick_fn pick;      /* SF_PICK_CALLBACK                           */
    void *pick_ctx;
    int ascension;    /* of the prefix's fights and of the result (the map
                         model is A0's; docs/starts.md)                      */
    int max_attempts; /* runs drawn before giving up; 0 = 400              */
} sf_start_opts;

void sf_start_opts_default(sf_start_opts *o); /* starter start, greedy picker */

/* What a start is, beyond its spec: for labels and statistics. */
#define SF_START_TEXT_MAX 2048
typedef struct sf_start_desc {
    int start, picker; /* as in the options                                 */
    int cls;           /* SF_POOL_* of the fight                             */
    int encounter;
    int floor; /* the fight's floor: 0 (starter), 1..15, 16 (boss)         */
    int relics_n;
    uint8_t relics[SF_MAX_RELICS]; /* run relic ids held, in pickup order  */
    /* relics[i]'s counter (AbstractRelic.counter) where the engine relic of
     * its name keeps one (Girya's lifts, Ancient Tea Set's charge, a Bottled
     * relic's 1 + deck index, Pen Nib, ...), modelled or not; else 0 */
    int relic_counters[SF_MAX_RELICS];
    uint8_t potions[SF_MAX_POTION_SLOTS]; /* run potion ids by slot (5 with Potion
                                             Belt, else 3); 0 = empty            */
    /* Rooms of floors 1..floor, one letter each: 'M' monster, 'E' elite,
     * 'R' rest, '$' shop, 'T' treasure, '?' an event, 'm' / 's' / 't' a "?"
     * that became a fight / shop / chest, 'B' the boss. The last letter is
     * the fight's room. */
    char path[17];
    /* the prefix played */
    int fights, elites, rests, smiths, removals;
    int cards_taken, cards_skipped, potions_dropped, potions_wasted;
    int bowls, lifts, tokes, digs; /* Singing Bowl taken, rest-site options   */
    int attempts;                  /* runs drawn, this one included              */
    int died;                      /* of them, runs whose player died before it  */
    char text[SF_START_TEXT_MAX];  /* sf_start_format() of the start             */
} sf_start_desc;

/* Sample the start of a fight against `encounter` (an id, or
 * SF_START_CLASS(pool)) for game `game_seed` of run `run_seed`. Writes every
 * field of *out: deck (sorted by card id, then upgrades), relics, potions,
 * hp, max_hp, gold, floor, relic counters, encounter, ascension; seed is 0
 * and max_turns the default cap (set them as after sf_fight_spec_default()).
 * *desc (may be NULL) gets the description and text. Deterministic in
 * (opts, run_seed, game_seed, encounter). Errors: SF_EINVAL for a bad option
 * or encounter (the message names it), SF_ESTATE when no run of
 * max_attempts reached the fight, or a picker's own negative code. */
int sf_start_sample(const sf_start_opts *opts, uint64_t run_seed, uint64_t game_seed, int encounter,
                    sf_fight_spec *out, sf_start_desc *desc, sf_err *err);

/* The text form of a start, one line: deck|relics|potions|floor F|hp H/M|gold G,
 * e.g. (one line)
 *     Strike*5,Defend*4,Bash,Inflame+|Burning Blood,Pen Nib:3|Fire Potion|
 *     floor 7|hp 54/80|gold 131
 * Runs of equal cards are NAME*N, "+" is one upgrade, a relic's persistent
 * counter (Pen Nib, Girya, a Bottled relic, ...) is NAME:N when not 0,
 * potion slots are in order with an empty slot left empty. With desc the
 * relics and potions are desc's (unmodelled ones included, with desc's
 * counters), else the spec's. Returns the length, or SF_EFULL when `cap`
 * is too small (the text is then truncated and NUL-terminated). */
int sf_start_format(const sf_fight_spec *spec, const sf_start_desc *desc, char *buf, size_t cap);

/* Parse the text form back: deck, relics (modelled ones, counters), potions
 * (modelled ones, by slot), floor, hp, max_hp, gold into *spec (other
 * fields untouched), and the full relic and potion lists (with every
 * relic's counter) and the floor into *desc (may be NULL; its other fields
 * untouched). "hp" and "gold" may be left out. Errors: SF_EINVAL naming the
 * section and item. */
int sf_start_parse(const char *text, sf_fight_spec *spec, sf_start_desc *desc, sf_err *err);

/* ---------------------------------------------------------------------------
 * Playing
 * ------------------------------------------------------------------------- */

/* Write the legal actions into `out` (capacity `cap`, at least
 * SF_MAX_ACTIONS is always enough) in canonical order: card plays by first
 * hand position of each distinct card (identical cards collapse to one
 * action), targets ascending; then potions by slot and target; END_TURN last.
 * On a choice screen only SF_ACT_CHOOSE actions are legal. Returns the count
 * (0 once the fight is over). Never allocates. */
int sf_engine_enumerate(const sf_state *s, sf_action *out, int cap);

/* Apply a legal action and advance to the next decision: the player's next
 * choice, or the end of the fight. Monster turns, end of round and the next
 * turn's draw run inside. `*streams` (may be NULL) receives the mask of
 * SF_STREAM_* bits the call advanced; 0 means the step was deterministic.
 * Returns SF_OK, or SF_EINVAL for an illegal action (the state is then
 * unchanged). Never allocates. */
int sf_engine_apply(sf_state *s, sf_action a, uint32_t *streams);

/* 1 when the fight is over (won, lost, every monster escaped, or ended at
 * an engine limit or the turn cap). */
int sf_engine_is_terminal(const sf_state *s);

typedef struct sf_outcome {
    int over;         /* 1 once the fight has ended                          */
    int won;          /* 1 when the player survived (escapes count as won)   */
    int escaped;      /* 1: the player left the fight (Smoke Bomb); won is 1:
                         HP kept, no reward (docs/engine.md "Smoke Bomb") */
    int hp, max_hp;   /* player HP after end-of-combat relics                */
    int turns;        /* player turns started                                */
    int potions_left; /* filled potion slots                                 */
    int potions_used;
    int monster_hp_left; /* HP of the monsters still fighting                */
    int monster_hp_pool; /* HP every monster entered the fight with, split
                            children (entering with their parent's HP) and
                            spawns included: the loss grade's denominator  */
    int engine_limit;    /* 1: ended because a pile overflowed SF_MAX_PILE
                            (a card would have been lost, which the game
                            never does); such a fight counts as lost and its
                            labels say so (docs/engine.md "Capacities")     */
    int turn_limit;      /* 1: ended at the turn cap (max_turns played, or a
                            turn of SF_MAX_TURN_ACTIONS actions): lost, and
                            graded like any loss (label/label.h)            */
} sf_outcome;

void sf_engine_outcome(const sf_state *s, sf_outcome *out);

/* What a label's forecast and a search's guards read about a position; all of
 * it visible to the player. */
typedef struct sf_observation {
    int turn; /* player turn number, from 1                      */
    int hp, max_hp, block, energy;
    int incoming_damage;  /* announced by intents, after modifiers, before block */
    int monster_hp_total; /* over living monsters                            */
    int monsters_alive;
    int hand_n, draw_n, discard_n, exhaust_n;
    int choice_open; /* 1 while a choice screen waits for SF_ACT_CHOOSE  */
    int encounter;
    int potions_left;
    int block_at_enemy_turn; /* block held when the monsters last began their
                                turn (after end-of-turn block gains, before
                                their hits); 0 before the first enemy turn */
} sf_observation;

void sf_engine_observe(const sf_state *s, sf_observation *out);

/* Facts about one legal action, for search heuristics (expansion order,
 * end-turn guards) and for names in tables. */
enum {
    SF_CARD_ATTACK = 0,
    SF_CARD_SKILL = 1,
    SF_CARD_POWER = 2,
    SF_CARD_STATUS = 3,
    SF_CARD_CURSE = 4
};
typedef struct sf_action_info {
    int kind;        /* SF_ACT_*                                              */
    int card_id;     /* card played or chosen; -1 otherwise                   */
    int potion_id;   /* potion drunk; -1 otherwise                            */
    int card_type;   /* SF_CARD_*; -1 when no card                            */
    int cost;        /* energy it spends now (X-cost: all energy)             */
    int gains_block; /* 1 if it gives the player block                        */
    int priority;    /* heuristic card priority, higher = play earlier        */
} sf_action_info;

int sf_engine_action_info(const sf_state *s, sf_action a, sf_action_info *out);

/* The heuristic policy (sf-arena's greedy at tau 0, the search's rollouts,
 * the prefix fights of sf_start_sample): card plays and choices compete by
 * softmax(priority / tau) over sf_action_info.priority (tau <= 0: the
 * highest priority, ties uniform); END_TURN only when no card can be played
 * or chosen; potions are never drunk. Draws one uniform from the SplitMix64
 * state *rng when more than one action competes. Returns SF_OK, or
 * SF_ESTATE when `s` has no legal action. Never allocates. Inline and built
 * on enumerate and action_info alone, so any implementation of this API
 * (the search's toy game included) plays it the same way. */
static inline double sf_engine_unit_draw(uint64_t *rng) {
    *rng += 0x9E3779B97F4A7C15ull;
    uint64_t z = *rng;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

static inline int sf_engine_heuristic_action(const sf_state *s, double tau, uint64_t *rng,
                                             sf_action *out) {
    sf_action acts[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(s, acts, SF_MAX_ACTIONS);
    if (n <= 0)
        return SF_ESTATE;
    int cand[SF_MAX_ACTIONS], prio[SF_MAX_ACTIONS], nc = 0, end_turn = -1;
    int pmax = 0;
    for (int i = 0; i < n; i++) {
        if (acts[i].kind == SF_ACT_END_TURN) {
            end_turn = i;
            continue;
        }
        if (acts[i].kind == SF_ACT_POTION)
            continue;
        sf_action_info info;
        int p = sf_engine_action_info(s, acts[i], &info) == SF_OK ? info.priority : 0;
        if (nc == 0 || p > pmax)
            pmax = p;
        prio[nc] = p;
        cand[nc++] = i;
    }
    if (nc == 0) {
        *out = acts[end_turn >= 0 ? end_turn : 0];
        return SF_OK;
    }
    if (nc == 1) {
        *out = acts[cand[0]];
        return SF_OK;
    }
    double w[SF_MAX_ACTIONS], sum = 0.0;
    double inv = tau > 0.0 ? 1.0 / tau : 0.0;
    for (int j = 0; j < nc; j++) {
        w[j] = tau > 0.0 ? exp((double)(prio[j] - pmax) * inv) : (prio[j] == pmax ? 1.0 : 0.0);
        sum += w[j];
    }
    double u = sf_engine_unit_draw(rng) * sum;
    int pick = nc - 1;
    for (int j = 0; j < nc; j++) {
        if (u < w[j]) {
            pick = j;
            break;
        }
        u -= w[j];
    }
    *out = acts[cand[pick]];
    return SF_OK;
}

/* "Strike -> Jaw Worm[0]", "End turn", "Choose Bash (upgrade)". */
int sf_engine_action_name(const sf_state *s, sf_action a, char *buf, size_t cap);

/* ---------------------------------------------------------------------------
 * Identity, randomness and honesty
 * ------------------------------------------------------------------------- */

/* A 128-bit hash (XXH3-128) of exactly what decides the future: discard and
 * exhaust piles as multisets (their order cannot matter), the hand in order
 * (action indices are hand positions), the draw pile in order (its unknown
 * part is canonical in belief mode), creatures, counters, relics, potions.
 * Random-stream state and statistics are excluded. Defend->Strike and Strike->Defend give the
 * same identity; Bash->Strike and Strike->Bash do not. */
typedef struct sf_identity {
    uint64_t lo, hi;
} sf_identity;

sf_identity sf_engine_identity(const sf_state *s);

static inline int sf_identity_eq(sf_identity a, sf_identity b) {
    return a.lo == b.lo && a.hi == b.hi;
}

/* Re-seed one stream from a 64-bit salt (a fresh RandomXS128, counter 0)
 * without touching the others. Searches use it to draw chance outcomes with
 * common random numbers. `stream` out of range is ignored. */
void sf_engine_reseed(sf_state *s, int stream, uint64_t salt);

/* The honest search root. Copies `truth` into `out`, keeping what the player
 * can see (hand, discard, exhaust, known cards on top of the draw pile, the
 * rest of the draw pile as a multiset, intents, every visible counter), puts
 * the unknown part of the draw pile into a canonical order, switches the
 * state to belief mode (each draw from the unknown part becomes a uniform
 * random pick from the shuffle stream) and re-seeds every stream from
 * `seed`. Two true states the player cannot tell apart give byte-identical
 * output. `out` may equal `truth`. */
void sf_engine_belief_root(const sf_state *truth, uint64_t seed, sf_state *out);

/* 1 if the state is in belief mode. */
int sf_engine_is_belief(const sf_state *s);

/* ---------------------------------------------------------------------------
 * Tokenizer (feat): network inputs. Layout reference: docs/model.md.
 * ------------------------------------------------------------------------- */
#define SF_FEAT_VERSION     3
#define SF_FEAT_MAX_TOKENS  128
#define SF_FEAT_NCAT        4  /* categorical slots per token                  */
#define SF_FEAT_NCONT       16 /* continuous features per token                */
#define SF_FEAT_MAX_QUERIES SF_MAX_ACTIONS
#define SF_FEAT_NQCONT      8  /* continuous features per action query         */
#define SF_FEAT_NTYPES      12 /* token types, SF_TOK_*                        */

/* Vocabulary size of each categorical slot (ids are < these). */
#define SF_FEAT_VOCAB0 512 /* what: card/monster/move/status/relic/potion  */
#define SF_FEAT_VOCAB1 32  /* upgrade level / owner slot / move kind       */
#define SF_FEAT_VOCAB2 32  /* cost bucket / intent kind / zone detail      */
#define SF_FEAT_VOCAB3 16  /* slot index                                   */

/* Slot-0 ("what") ids: one id space for every token type, each kind of thing
 * in its own range, id = range base + the engine's content id
 * (sf_card_lookup(), sf_monster_name() order, ...). Moves identify intents
 * more finely than intent kinds, which INTENT tokens carry in slot 2. */
enum {
    SF_FEAT_ID_NONE = 0,
    SF_FEAT_ID_PLAYER = 1,      /* the player token                           */
    SF_FEAT_ID_CARD = 16,       /* + card id        (16..159)                 */
    SF_FEAT_ID_MONSTER = 160,   /* + monster id     (160..191)                */
    SF_FEAT_ID_MOVE = 192,      /* + move id        (192..255)                */
    SF_FEAT_ID_POWER = 256,     /* + power id       (256..319)                */
    SF_FEAT_ID_RELIC = 320,     /* + relic id       (320..415)                */
    SF_FEAT_ID_POTION = 416,    /* + potion id      (416..463)                */
    SF_FEAT_ID_ENCOUNTER = 464, /* + encounter id   (464..495), CTX tokens    */
    SF_FEAT_ID_END = 496        /* first unused id (< SF_FEAT_VOCAB0)         */
};

/* Owner codes (STATUS and INTENT slot 1, PLAYER and MONSTER slot 3):
 * 0 is the player, 1 + m is monster slot m. */
#define SF_FEAT_OWNER_PLAYER 0

/* Query playmath columns (qcont[q][*]). Damage and block use the engine's
 * own formulas at the current state; docs/model.md gives every case. */
enum {
    SF_FEAT_Q_DAMAGE = 0,    /* damage to the target after modifiers, all hits (ALL cards:
                                summed over living monsters) / 50                        */
    SF_FEAT_Q_BLOCK = 1,     /* block the player gains / 50                              */
    SF_FEAT_Q_COST = 2,      /* energy spent / 3 (X-cost: all energy)                    */
    SF_FEAT_Q_LETHAL = 3,    /* 1 if the target dies (ALL: fraction of monsters killed)  */
    SF_FEAT_Q_KILLS_ALL = 4, /* 1 if every living monster dies                           */
    SF_FEAT_Q_UNCOVERED = 5, /* announced damage not covered by block afterwards / 50     */
    SF_FEAT_Q_SELF_HP = 6,   /* HP the player loses from the play itself / 10            */
    SF_FEAT_Q_PROGRESS = 7   /* damage dealt / target's HP+block, capped at 1            */
};

enum {
    SF_TOK_PAD = 0, /* never emitted; padding value for batched tensors      */
    SF_TOK_CTX = 1,
    SF_TOK_PLAYER = 2,
    SF_TOK_MONSTER = 3,
    SF_TOK_INTENT = 4,
    SF_TOK_STATUS = 5,
    SF_TOK_CARD_HAND = 6,
    SF_TOK_CARD_DRAW = 7,
    SF_TOK_CARD_DISCARD = 8,
    SF_TOK_CARD_EXHAUST = 9,
    SF_TOK_RELIC = 10,
    SF_TOK_POTION = 11
};

/* The continuous columns of the CTX and PLAYER tokens (docs/model.md "Token
 * types"), by name: the tokenizer writes them and a trainer reads a
 * position's current HP, block, incoming damage and monsters from them (the
 * forecast's persistence baseline, python/spirefleet/window.py, through the
 * generated facts.py). */
enum {
    SF_FEAT_CTX_TURN,
    SF_FEAT_CTX_ENERGY,
    SF_FEAT_CTX_CARDS_PLAYED,
    SF_FEAT_CTX_ATTACKS_PLAYED,
    SF_FEAT_CTX_HAND_N,
    SF_FEAT_CTX_DRAW_N,
    SF_FEAT_CTX_DISCARD_N,
    SF_FEAT_CTX_EXHAUST_N,
    SF_FEAT_CTX_DRAW_KNOWN,
    SF_FEAT_CTX_CHOICE_OPEN,
    SF_FEAT_CTX_CHOICE_AMOUNT,
    SF_FEAT_CTX_INCOMING,
    SF_FEAT_CTX_UNCOVERED,
    SF_FEAT_CTX_ALIVE,
    SF_FEAT_CTX_MON_HP,
    SF_FEAT_CTX_MON_HP_FRAC
};
enum {
    SF_FEAT_PL_HP,
    SF_FEAT_PL_MAX_HP,
    SF_FEAT_PL_HP_FRAC,
    SF_FEAT_PL_BLOCK,
    SF_FEAT_PL_ENERGY,
    SF_FEAT_PL_GOLD,
    SF_FEAT_PL_HP_LOSSES,
    SF_FEAT_PL_POTIONS_USED,
    SF_FEAT_PL_EMPTY_SLOTS,
    SF_FEAT_PL_EOT_BLOCK,
    SF_FEAT_PL_EOT_SELF_DAMAGE,
    SF_FEAT_PL_DANGER,
    SF_FEAT_PL_STR,
    SF_FEAT_PL_DEX,
    SF_FEAT_PL_VULN,
    SF_FEAT_PL_WEAK
};
/* The divisors of the columns a trainer reads back (value = column * scale). */
#define SF_FEAT_SCALE_PL_HP      100.0f /* SF_FEAT_PL_HP, SF_FEAT_PL_MAX_HP */
#define SF_FEAT_SCALE_PL_BLOCK   50.0f  /* SF_FEAT_PL_BLOCK                 */
#define SF_FEAT_SCALE_INCOMING   50.0f  /* SF_FEAT_CTX_INCOMING, _UNCOVERED */
#define SF_FEAT_SCALE_ALIVE      5.0f   /* SF_FEAT_CTX_ALIVE                */
#define SF_FEAT_SCALE_CTX_MON_HP 200.0f /* SF_FEAT_CTX_MON_HP               */

/* Token set plus one query per legal action. Token order carries no
 * meaning. Query q scores action q of the list passed to sf_engine_feat():
 * query[q][0] is the card (or potion, or CTX for END_TURN) token index and
 * query[q][1] the target token index (a monster token, or the player token
 * when the action has no target). Fixed capacity; about 14 KB. */
typedef struct sf_feat {
    int n_tokens;
    int n_queries;
    uint8_t type[SF_FEAT_MAX_TOKENS];
    uint16_t cat[SF_FEAT_MAX_TOKENS][SF_FEAT_NCAT];
    float cont[SF_FEAT_MAX_TOKENS][SF_FEAT_NCONT];
    uint16_t query[SF_FEAT_MAX_QUERIES][2];
    float qcont[SF_FEAT_MAX_QUERIES][SF_FEAT_NQCONT];
} sf_feat;

/* Tokenize `s` with queries for `actions[0..n_actions)` (normally the output
 * of sf_engine_enumerate()). Playmath features (damage of this card to that
 * monster after all modifiers, block after modifiers, lethal flags, incoming
 * damage) are always on. Only player-visible information is read: the
 * unknown part of the draw pile counts as a multiset, random streams are
 * never read, so two states the player cannot tell apart give identical
 * output (and sf_engine_belief_root() of a state tokenizes like the state).
 * `*out` is fully overwritten: rows at and beyond n_tokens / n_queries are
 * zero, so the whole struct is deterministic. Tokens that every query can
 * name (CTX, player, monsters, hand, potions, the open choice's pile) come
 * first, so queries stay valid when the capacity is exceeded.
 * Returns SF_OK; SF_EFULL when the token capacity would be exceeded (tokens
 * beyond it are dropped, never written out of bounds; queries are still
 * filled); SF_EINVAL for n_actions outside 0..SF_FEAT_MAX_QUERIES or an
 * action that names no card, potion or option of `s` (its query then points
 * at the CTX and player tokens with zero playmath). Never allocates. */
int sf_engine_feat(const sf_state *s, const sf_action *actions, int n_actions, sf_feat *out);

/* ---------------------------------------------------------------------------
 * Rendering
 * ------------------------------------------------------------------------- */

/* A multi-line human-readable picture of the state (piles, creatures,
 * intents, powers). Returns the length written, or SF_EFULL if `cap` was too
 * small (the text is then truncated but NUL-terminated). */
int sf_engine_render_text(const sf_state *s, char *buf, size_t cap);

/* The state as a JSON document (jansson `json_t *`, caller owns the
 * reference): readable fields plus "raw", the exact bytes in base64, so a
 * saved state loads back exactly with sf_engine_from_json(). Returns NULL
 * only on allocation failure. */
struct json_t;
struct json_t *sf_engine_to_json(const sf_state *s);

/* Load a state saved by sf_engine_to_json(). Errors: SF_EFORMAT when "raw" is
 * missing or malformed or describes an impossible position (docs/engine.md
 * lists the checks), SF_EVERSION when "engine_version" differs,
 * SF_ECORRUPT when "identity" does not match the bytes. */
int sf_engine_from_json(const struct json_t *doc, sf_state *s, sf_err *err);

/* Read a state file (one JSON document as sf_engine_to_json() writes it, at
 * most 1 MiB) into `s`. Every message starts with `path` (and the line and
 * column for JSON syntax). Errors: SF_ENOTFOUND (no such file), SF_EIO
 * (unreadable: the OS's reason), SF_EFORMAT (a directory, too large, not
 * JSON, or as sf_engine_from_json()), SF_EVERSION, SF_ECORRUPT. `s` is written only on
 * success. */
int sf_engine_load_file(const char *path, sf_state *s, sf_err *err);

#endif
