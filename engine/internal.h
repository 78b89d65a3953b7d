/*
 * internal.h — the engine's inside: state layout, content tables and the
 * shared rule helpers. For the engine sources and the engine's white-box tests only;
 * everything else goes through engine.h.
 *
 * Layout rule: the whole state is one struct of fixed-size arrays of small
 * integers, zeroed at init, so that (a) copying is one memcpy, (b) unused
 * slots and padding are always zero and the identity hash is canonical, and
 * (c) nothing points anywhere. Everything up to `rng` is "core" and decides
 * the future; `rng` and `stats` are excluded from the identity.
 */
#ifndef SF_ENGINE_INTERNAL_H
#define SF_ENGINE_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "engine/engine.h"

/* ---------------------------------------------------------------------------
 * Random generators (rng.c). docs/game-rules.md §0.
 * ------------------------------------------------------------------------- */

/* libGDX RandomXS128 wrapped by the game's random/Random.java (a call counter). */
typedef struct sf_rng {
    uint64_t s0, s1;
    uint32_t counter;
    uint32_t pad; /* always 0 */
} sf_rng;

void sf_rng_seed(sf_rng *r, uint64_t seed);         /* new Random(seed)            */
uint64_t sf_rng_next_long(sf_rng *r);               /* RandomXS128.nextLong, raw   */
int sf_rng_random(sf_rng *r, int range);            /* random(range): 0..range     */
int sf_rng_random_range(sf_rng *r, int lo, int hi); /* random(lo, hi), inclusive */
int sf_rng_random_bool(sf_rng *r);                  /* randomBoolean()             */
int sf_rng_random_bool_p(sf_rng *r, float p);       /* randomBoolean(p): nextFloat < p */
float sf_rng_random_float(sf_rng *r);               /* random(): nextFloat         */
int64_t sf_rng_random_long(sf_rng *r);              /* randomLong()                */

/* java.util.Random (48-bit LCG), used by Collections.shuffle. */
typedef struct sf_jrand {
    uint64_t seed;
} sf_jrand;

void sf_jrand_seed(sf_jrand *j, int64_t seed);
int sf_jrand_next_int(sf_jrand *j, int bound); /* nextInt(bound)                 */

/* Content names compare ignoring case, spaces, '-', '_' and apostrophes
 * (engine.c), so "pommel_strike" and "Pommel Strike" match. */
int engine_name_eq(const char *a, const char *b);

/* Text printed into a fixed buffer (render.c): once a piece does not fit
 * the text is cut there (NUL-terminated when cap > 0), `full` is set and
 * later pieces are dropped. engine_text_result: the length written, or
 * SF_EFULL. */
typedef struct engine_text {
    char *buf;
    size_t cap, len;
    int full;
} engine_text;
void engine_text_put(engine_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int engine_text_result(const engine_text *t);

/* ---------------------------------------------------------------------------
 * Cards (cards.c)
 * ------------------------------------------------------------------------- */

/* One card in a pile: 5 bytes, compared bytewise. */
typedef struct sf_card {
    uint8_t id;    /* CARD_*; 0 (CARD_NONE) only in empty slots               */
    uint8_t upg;   /* upgrade count                                           */
    int8_t cost;   /* combat cost: >= 0, COST_X or COST_UNPLAYABLE             */
    uint8_t flags; /* CF_*                                                    */
    uint8_t misc;  /* per-card number: Rampage's added damage                 */
} sf_card;

#define COST_X          (-1)
#define COST_UNPLAYABLE (-2)

enum {
    CF_FREE_TURN = 1 << 0, /* costs 0 until the end of this turn (Infernal Blade) */
    CF_ONE_TURN = 1 << 1,  /* costs at most 1 until the end of this turn (Enlightenment) */
    CF_FREE_ONCE = 1 << 2, /* costs 0 until it is played (Forethought: freeToPlayOnce) */
};
/* The "this turn" cost flags: resetAttributes ends them. */
#define CF_TURN_FLAGS (CF_FREE_TURN | CF_ONE_TURN)
#define CF_ALL_FLAGS  (CF_TURN_FLAGS | CF_FREE_ONCE)

enum card_id {
    CARD_NONE = 0,
    /* starter */
    CARD_STRIKE,
    CARD_DEFEND,
    CARD_BASH,
    /* common */
    CARD_ANGER,
    CARD_ARMAMENTS,
    CARD_BODY_SLAM,
    CARD_CLASH,
    CARD_CLEAVE,
    CARD_CLOTHESLINE,
    CARD_FLEX,
    CARD_HAVOC,
    CARD_HEADBUTT,
    CARD_HEAVY_BLADE,
    CARD_IRON_WAVE,
    CARD_PERFECTED_STRIKE,
    CARD_POMMEL_STRIKE,
    CARD_SHRUG_IT_OFF,
    CARD_SWORD_BOOMERANG,
    CARD_THUNDERCLAP,
    CARD_TRUE_GRIT,
    CARD_TWIN_STRIKE,
    CARD_WARCRY,
    CARD_WILD_STRIKE,
    /* uncommon */
    CARD_BATTLE_TRANCE,
    CARD_BLOOD_FOR_BLOOD,
    CARD_BLOODLETTING,
    CARD_BURNING_PACT,
    CARD_CARNAGE,
    CARD_COMBUST,
    CARD_DARK_EMBRACE,
    CARD_DISARM,
    CARD_DROPKICK,
    CARD_DUAL_WIELD,
    CARD_ENTRENCH,
    CARD_EVOLVE,
    CARD_FEEL_NO_PAIN,
    CARD_FIRE_BREATHING,
    CARD_FLAME_BARRIER,
    CARD_GHOSTLY_ARMOR,
    CARD_HEMOKINESIS,
    CARD_INFERNAL_BLADE,
    CARD_INFLAME,
    CARD_INTIMIDATE,
    CARD_METALLICIZE,
    CARD_POWER_THROUGH,
    CARD_PUMMEL,
    CARD_RAGE,
    CARD_RAMPAGE,
    CARD_RECKLESS_CHARGE,
    CARD_RUPTURE,
    CARD_SEARING_BLOW,
    CARD_SECOND_WIND,
    CARD_SEEING_RED,
    CARD_SENTINEL,
    CARD_SEVER_SOUL,
    CARD_SHOCKWAVE,
    CARD_SPOT_WEAKNESS,
    CARD_UPPERCUT,
    CARD_WHIRLWIND,
    /* rare */
    CARD_BARRICADE,
    CARD_BERSERK,
    CARD_BLUDGEON,
    CARD_BRUTALITY,
    CARD_CORRUPTION,
    CARD_DEMON_FORM,
    CARD_DOUBLE_TAP,
    CARD_EXHUME,
    CARD_FEED,
    CARD_FIEND_FIRE,
    CARD_IMMOLATE,
    CARD_IMPERVIOUS,
    CARD_JUGGERNAUT,
    CARD_LIMIT_BREAK,
    CARD_OFFERING,
    CARD_REAPER,
    /* status */
    CARD_SLIMED,
    CARD_DAZED,
    CARD_WOUND,
    CARD_BURN,
    /* colorless (cards/colorless): the pool the Colorless Potion, Jack of
     * All Trades, Magnetism and Transmutation draw from, in card-name order;
     * the draw order is combat.c's colorless pool */
    CARD_BANDAGE_UP,
    CARD_BLIND,
    CARD_DARK_SHACKLES,
    CARD_DEEP_BREATH,
    CARD_DISCOVERY,
    CARD_DRAMATIC_ENTRANCE,
    CARD_ENLIGHTENMENT,
    CARD_FINESSE,
    CARD_FLASH_OF_STEEL,
    CARD_FORETHOUGHT,
    CARD_GOOD_INSTINCTS,
    CARD_IMPATIENCE,
    CARD_JACK_OF_ALL_TRADES,
    CARD_MADNESS,
    CARD_MIND_BLAST,
    CARD_PANACEA,
    CARD_PANIC_BUTTON,
    CARD_PURITY,
    CARD_SWIFT_STRIKE,
    CARD_TRIP,
    CARD_APOTHEOSIS,
    CARD_CHRYSALIS,
    CARD_HAND_OF_GREED,
    CARD_MAGNETISM,
    CARD_MASTER_OF_STRATEGY,
    CARD_MAYHEM,
    CARD_METAMORPHOSIS,
    CARD_PANACHE,
    CARD_SADISTIC_NATURE,
    CARD_SECRET_TECHNIQUE,
    CARD_SECRET_WEAPON,
    CARD_THE_BOMB,
    CARD_THINKING_AHEAD,
    CARD_TRANSMUTATION,
    CARD_VIOLENCE,
    CARD_COUNT
};
#define CARD_FIRST_COLORLESS CARD_BANDAGE_UP
#define CARD_LAST_COLORLESS  CARD_VIOLENCE

enum card_type {
    CT_ATTACK = SF_CARD_ATTACK,
    CT_SKILL = SF_CARD_SKILL,
    CT_POWER = SF_CARD_POWER,
    CT_STATUS = SF_CARD_STATUS,
    CT_CURSE = SF_CARD_CURSE
};

/* How a card picks its target when played. */
enum card_target { TGT_NONE = 0, TGT_ENEMY = 1, TGT_ALL = 2 };

enum card_rarity { RAR_BASIC, RAR_COMMON, RAR_UNCOMMON, RAR_RARE, RAR_SPECIAL };

enum card_def_flags {
    CD_EXHAUST = 1 << 0,       /* exhausts when played                            */
    CD_EXHAUST_BASE = 1 << 1,  /* exhausts only when not upgraded (Limit Break)  */
    CD_ETHEREAL = 1 << 2,      /* exhausted from hand at end of turn              */
    CD_INNATE_UP = 1 << 3,     /* innate when upgraded (Brutality+)               */
    CD_STRIKE = 1 << 4,        /* STRIKE tag (Perfected Strike)                   */
    CD_HEALING = 1 << 5,       /* HEALING tag (excluded from random generation)   */
    CD_MULTI_UPGRADE = 1 << 6, /* can be upgraded repeatedly (Searing Blow)    */
    CD_INNATE = 1 << 7,        /* innate (Dramatic Entrance, Mind Blast)           */
    CD_ALL_UP = 1 << 8,        /* targets every monster when upgraded (Blind+, Trip+) */
};

struct sf_combat;

/* What playing a card will do by its own numbers, known before it is
 * played: the card table's answer to the tokenizer's playmath (engine/feat.c
 * reads nothing else about a card's effect). card_predict() fills it from
 * the card's row and, for the cards whose numbers are computed, from the
 * same helpers the card's effect plays with (cards.c), so a rule lives in
 * one place. Only what the player can see goes in: no draw, no random pick.
 * Modifiers are not applied here: damage goes through combat_card_damage(),
 * block through combat_card_block(). */
typedef struct card_pred {
    int base;      /* damage per hit before modifiers                          */
    int hits;      /* hits per play (Twin Strike 2, Whirlwind X, ...), >= 0    */
    int aim;       /* AIM_*: who is hit; AIM_NONE: the card deals no damage    */
    int block;     /* block per gain before Dexterity and Frail; 0: none       */
    int gains;     /* block gains per play (Second Wind: one per card exhausted) */
    int raw_block; /* block gained as is, without Dexterity or Frail (Entrench) */
    int self_hp;   /* HP the play costs the player (Hemokinesis, Offering, ...) */
    int weak;      /* Weak each monster hit receives after the damage          */
    int vuln;      /* Vulnerable each monster hit receives after it (and Weak) */
    int grow;      /* damage a later play of this card gains (Rampage, to 250) */
    int exhausts;  /* 1 if the card exhausts itself when played (card_exhausts) */
    int others;    /* EXO_*: which cards in hand the play exhausts besides itself */
    int exhausted; /* how many those are now (the card itself not counted)     */
    int no_block;  /* NoBlockPower the play gives after its block (Panic Button) */
} card_pred;

/* card_pred.aim: the card's target rule for damage (TGT_* values), plus a
 * uniformly random living monster per hit (Sword Boomerang). */
enum card_aim { AIM_NONE = TGT_NONE, AIM_ENEMY = TGT_ENEMY, AIM_ALL = TGT_ALL, AIM_RANDOM = 3 };

/* card_pred.others: the cards in hand a play exhausts besides itself. */
enum card_exhaust_others {
    EXO_NONE = 0,
    EXO_NON_ATTACKS, /* every non-Attack (Second Wind, Sever Soul)                 */
    EXO_HAND,        /* every card (Fiend Fire)                                   */
    EXO_ONE,         /* one card, if there is any (True Grit, Burning Pact)       */
};

/* Where the card stands when card_predict() is asked about it. */
enum card_view {
    CV_HAND,    /* in c->hand, about to be played from it                       */
    CV_PILE,    /* in the draw or discard pile (as it would play once drawn)     */
    CV_EXHAUST, /* in the exhaust pile (as it would play if it came back)        */
    CV_COPY,    /* a Double Tap copy, in limbo: not in any pile of `c`          */
};

/* A card's static data. Numbers are (base, upgraded). `play` runs the card's
 * own effect (after energy is paid and before the card moves to its pile);
 * NULL for unplayable cards. `predict` adjusts card_predict()'s defaults for
 * a card whose row alone does not say what it does (NULL: an Attack deals
 * `dmg` once to its target, a random monster when it has none; any card
 * gains `blk` once). */
typedef struct card_def {
    const char *name;
    uint8_t type, rarity, target;
    uint16_t flags; /* CD_*                                            */
    int8_t cost, cost_up;
    int16_t dmg, dmg_up; /* damage per hit                                   */
    int16_t blk, blk_up; /* block                                            */
    int16_t mag, mag_up; /* the card's magic number (hits, stacks, draws ...) */
    uint8_t priority;    /* rollout/expansion priority, 0..100               */
    void (*play)(struct sf_combat *c, const sf_card *card, int target);
    void (*predict)(const struct sf_combat *c, const sf_card *card, int view, card_pred *p);
} card_def;

extern const card_def sf_cards[CARD_COUNT];

/* What playing `card` from `view` (CV_*) will do in `c`, by the card's own
 * numbers (card_pred). Reads only what the player can see; never allocates. */
void card_predict(const struct sf_combat *c, const sf_card *card, int view, card_pred *out);

/* 1 if `card` exhausts when played (its row's flags, or Corruption on a
 * Skill); play.c adds the cards Havoc plays. */
int card_exhausts(const struct sf_combat *c, const sf_card *card);

/* THORNS damage `card` deals the player when the turn ends in hand (Burn:
 * its magic number, 2 or 4; play.c play_end_turn); 0 for every other card. */
int card_end_turn_damage(const sf_card *card);

static inline const card_def *card_def_of(int id) {
    return &sf_cards[id];
}

/* The target rule of a card instance (TGT_*): its row's, or TGT_ALL for an
 * upgraded card whose upgrade() sets CardTarget.ALL_ENEMY (cards/colorless
 * Blind, Trip). */
static inline int card_target(const sf_card *k) {
    const card_def *d = &sf_cards[k->id];
    return (d->flags & CD_ALL_UP) && k->upg ? TGT_ALL : d->target;
}

/* Value of a (base, upgraded) pair for a card instance. */
#define CARD_NUM(card, field) \
    ((card)->upg ? sf_cards[(card)->id].field##_up : sf_cards[(card)->id].field)

/* ---------------------------------------------------------------------------
 * Powers. One enum for both sides; monsters store only the first PW_MON_N.
 * ------------------------------------------------------------------------- */
enum power {
    /* shared */
    PW_STR,
    PW_DEX,
    PW_WEAK,
    PW_VULN,
    PW_FRAIL,
    PW_ARTIFACT,
    PW_METALLICIZE,
    PW_PLATED,
    PW_THORNS,
    PW_RITUAL,
    PW_INTANGIBLE,
    /* monster-side */
    PW_CURL_UP,
    PW_ANGRY,
    PW_ENRAGE,
    PW_SHARP_HIDE,
    PW_SPORE_CLOUD,
    PW_MODE_SHIFT,
    PW_SHACKLED, /* GainStrengthPower: Strength back at the end of its turn (Dark Shackles) */
    PW_MON_N,
    /* player-side */
    PW_VIGOR = PW_MON_N,
    PW_ENTANGLED,
    PW_NO_DRAW,
    PW_BARRICADE,
    PW_RAGE,
    PW_DOUBLE_TAP,
    PW_LOSE_STR,
    PW_LOSE_DEX,
    PW_DEMON_FORM,
    PW_DARK_EMBRACE,
    PW_FNP,
    PW_RUPTURE,
    PW_COMBUST,
    PW_COMBUST_HP,
    PW_JUGGERNAUT,
    PW_EVOLVE,
    PW_FIRE_BREATHING,
    PW_BRUTALITY,
    PW_CORRUPTION,
    PW_BERSERK,
    PW_FLAME_BARRIER,
    PW_REGEN,
    PW_PEN_NIB,
    PW_DUPLICATION,
    PW_NO_BLOCK,    /* NoBlockPower: cards give no block (Panic Button)          */
    PW_MAGNETISM,   /* colorless cards to hand at each turn start                */
    PW_MAYHEM,      /* top cards played at each turn start                       */
    PW_PANACHE,     /* PanachePower's damage                                     */
    PW_PANACHE_CNT, /* PanachePower's amount: cards until it fires (5 down to 1) */
    PW_SADISTIC,    /* THORNS damage per debuff the player applies               */
    PW_BOMB_1,      /* The Bomb: damage exploding at the end of this turn        */
    PW_BOMB_2,      /* ... of the next turn                                      */
    PW_BOMB_3,      /* ... of the turn after                                     */
    PW_N
};

extern const char *const sf_power_names[PW_N];

enum { PANACHE_CARDS = 5 }; /* PanachePower.CARD_AMT: the cards it counts */

/* justApplied bits (game-rules §1 "Debuff durations"). */
enum { JA_WEAK = 1, JA_VULN = 2, JA_FRAIL = 4, JA_RITUAL = 8, JA_INTANGIBLE = 16 };

/* ---------------------------------------------------------------------------
 * Monsters (monsters.c)
 * ------------------------------------------------------------------------- */
enum monster_id {
    MON_NONE = 0,
    MON_CULTIST,
    MON_JAW_WORM,
    MON_RED_LOUSE,
    MON_GREEN_LOUSE,
    MON_ACID_SLIME_S,
    MON_ACID_SLIME_M,
    MON_ACID_SLIME_L,
    MON_SPIKE_SLIME_S,
    MON_SPIKE_SLIME_M,
    MON_SPIKE_SLIME_L,
    MON_FUNGI_BEAST,
    MON_LOOTER,
    MON_MAD_GREMLIN,
    MON_SNEAKY_GREMLIN,
    MON_FAT_GREMLIN,
    MON_SHIELD_GREMLIN,
    MON_GREMLIN_WIZARD,
    MON_BLUE_SLAVER,
    MON_RED_SLAVER,
    MON_GREMLIN_NOB,
    MON_LAGAVULIN,
    MON_SENTRY,
    MON_GUARDIAN,
    MON_HEXAGHOST,
    MON_SLIME_BOSS,
    MON_COUNT
};

/* Intent kinds, as the player sees them. */
enum intent {
    INT_NONE = 0,
    INT_ATTACK,
    INT_ATTACK_BUFF,
    INT_ATTACK_DEBUFF,
    INT_ATTACK_DEFEND,
    INT_BUFF,
    INT_DEBUFF,
    INT_STRONG_DEBUFF,
    INT_DEFEND,
    INT_DEFEND_BUFF,
    INT_DEFEND_DEBUFF,
    INT_ESCAPE,
    INT_SLEEP,
    INT_STUN,
    INT_UNKNOWN,
    INT_MAGIC,
    INT_COUNT
};

/* Moves: one global enum so moves are tokens of their own. */
enum move_id {
    MV_NONE = 0,
    /* Cultist */ MV_INCANTATION,
    MV_DARK_STRIKE,
    /* Jaw Worm */ MV_CHOMP,
    MV_THRASH,
    MV_BELLOW,
    /* Louse */ MV_LOUSE_BITE,
    MV_LOUSE_GROW,
    MV_SPIT_WEB,
    /* Slimes */ MV_ACID_SPIT,
    MV_ACID_TACKLE,
    MV_ACID_LICK,
    MV_SPIKE_TACKLE,
    MV_FLAME_TACKLE,
    MV_SPIKE_LICK,
    MV_SPLIT,
    /* Fungi */ MV_FUNGI_BITE,
    MV_FUNGI_GROW,
    /* Looter */ MV_MUG,
    MV_LUNGE,
    MV_SMOKE_BOMB,
    MV_ESCAPE,
    /* Gremlins */ MV_SCRATCH,
    MV_PUNCTURE,
    MV_SMASH,
    MV_PROTECT,
    MV_SHIELD_BASH,
    MV_CHARGING,
    MV_ULTIMATE_BLAST,
    /* Slavers */ MV_STAB,
    MV_RAKE,
    MV_SCRAPE,
    MV_ENTANGLE,
    /* Nob */ MV_BELLOW_NOB,
    MV_RUSH,
    MV_SKULL_BASH,
    /* Lagavulin */ MV_SLEEP,
    MV_LAGA_STUN,
    MV_LAGA_ATTACK,
    MV_SIPHON_SOUL,
    /* Sentry */ MV_BOLT,
    MV_BEAM,
    /* Guardian */ MV_CHARGING_UP,
    MV_FIERCE_BASH,
    MV_VENT_STEAM,
    MV_WHIRLWIND,
    MV_CLOSE_UP,
    MV_ROLL_ATTACK,
    MV_TWIN_SLAM,
    /* Hexaghost */ MV_ACTIVATE,
    MV_DIVIDER,
    MV_SEAR,
    MV_HEX_TACKLE,
    MV_HEX_INFLAME,
    MV_INFERNO,
    /* Slime Boss */ MV_GOOP_SPRAY,
    MV_PREPARING,
    MV_SLAM,
    MV_BOSS_SPLIT,
    MV_COUNT
};

struct move_def;

/* A move's effect (takeTurn's case for it): monster m executes the move whose
 * numbers are `d`. Returns 1 when takeTurn then queues a RollMoveAction, 0
 * when it queues none (the effect set the next intent itself, or the monster
 * is gone). A move with a `next` never rolls, whatever its effect returns. */
typedef int (*move_fn)(struct sf_combat *c, int m, const struct move_def *d);

enum move_def_flags {
    MD_DMG_VAL = 1 << 0, /* damage per hit is the monster's val[0] (a louse's D, Divider's) */
};

/* A move: what the player sees and what it does, as a card_def is a card's.
 * Numbers are pairs (A0, raised); the raised number applies from ascension
 * `asc` on (the game's `ascensionLevel >= asc`; for damage the monster
 * kind's bump: normal A2, elite A3, boss A4). `dmg` is the damage per hit,
 * < 0 for non-attacks; `hits` is 0 for them. `blk` is block the move gives,
 * `mag` its magic number (stacks, cards, gold; a louse's highest D).
 * `next` is the move takeTurn sets itself before the move resolves (setMove,
 * SetMoveAction); MV_NONE when a RollMoveAction picks it afterwards. */
typedef struct move_def {
    const char *name;
    uint8_t intent;
    uint8_t hits;
    int16_t dmg, dmg_asc;
    int16_t blk, blk_asc;
    int16_t mag, mag_asc;
    uint8_t asc;   /* ascension level from which the raised numbers apply   */
    uint8_t flags; /* MD_*                                                   */
    uint8_t next;  /* MV_*: the scripted next move, MV_NONE to roll         */
    move_fn take;
} move_def;

extern const move_def sf_moves[MV_COUNT];

/* Value of an (A0, raised) pair of move row `d` at the fight's ascension. */
#define MOVE_NUM(c, d, field) ((c)->ascension >= (d)->asc ? (d)->field##_asc : (d)->field)

/* A move several monsters share (one token, one intent) whose numbers,
 * successor or effect differ by monster: the slimes' sizes, the two
 * Slavers' Stab. The row replaces those columns of sf_moves[move] when
 * `monster` executes it; name, intent, hits, asc and flags stay the move's. */
typedef struct move_variant {
    uint8_t monster, move;
    int16_t dmg, dmg_asc;
    int16_t blk, blk_asc;
    int16_t mag, mag_asc;
    uint8_t next;
    move_fn take;
} move_variant;

extern const move_variant sf_move_variants[];
extern const int sf_move_variant_n;

enum monster_kind { MK_NORMAL = 0, MK_ELITE = 1, MK_BOSS = 2 };

typedef struct monster_def {
    const char *name;
    uint8_t kind;                 /* MK_*: decides which ascension bumps apply */
    int16_t hp_lo, hp_hi;         /* A0                                        */
    int16_t hp_lo_asc, hp_hi_asc; /* from A7 (normal) / A8 (elite) / A9 (boss) */
    uint64_t moves;               /* bit MV_x: a move this monster can have   */
} monster_def;

extern const monster_def sf_monsters[MON_COUNT];

_Static_assert(MV_COUNT <= 64, "monster_def.moves holds one bit per move");

/* 1 when `mv` is MV_NONE (no move yet) or one of monster `id`'s moves. */
static inline int monster_has_move(int id, int mv) {
    return mv == MV_NONE || (mv < MV_COUNT && (sf_monsters[id].moves >> mv) & 1u);
}

enum monster_flags {
    MF_ESCAPED = 1 << 0,    /* left the fight (Looter)                           */
    MF_DEAD = 1 << 1,       /* HP reached 0; removed at the next compaction       */
    MF_ASLEEP = 1 << 2,     /* Lagavulin before waking                           */
    MF_SPLIT_DONE = 1 << 3, /* a Large slime / Slime Boss has already triggered   */
    MF_NO_ACT = 1 << 4,     /* spawned this monster phase: does not act           */
    MF_DEFENSIVE = 1 << 5,  /* Guardian in Defensive Mode                         */
    MF_ESCAPING = 1 << 6,   /* Looter after Smoke Bomb                            */
    MF_ACTED = 1 << 7,      /* has taken its turn in the current monster phase    */
};

typedef struct sf_monster {
    int16_t hp, max_hp, block;
    int16_t pw[PW_MON_N];
    uint8_t id;      /* MON_*                                                   */
    uint8_t move;    /* current intent = the most recently set move            */
    uint8_t hist[2]; /* hist[0]: move set before `move`; hist[1]: before that  */
    uint8_t flags;   /* MF_*                                                    */
    uint8_t just;    /* JA_* bits                                               */
    uint8_t ai[4];   /* per-monster counters (see monsters.c)                   */
    int16_t val[2];  /* per-monster values (bite damage, stolen gold, ...)      */
} sf_monster;

/* ---------------------------------------------------------------------------
 * Relics and potions (items.c)
 * ------------------------------------------------------------------------- */
enum relic_id {
    RELIC_NONE = 0,
    RELIC_BURNING_BLOOD,
    RELIC_ANCHOR,
    RELIC_BAG_OF_MARBLES,
    RELIC_VAJRA,
    RELIC_ODDLY_SMOOTH_STONE,
    RELIC_LANTERN,
    RELIC_BLOOD_VIAL,
    RELIC_BRONZE_SCALES,
    RELIC_AKABEKO,
    RELIC_ORICHALCUM,
    RELIC_HAPPY_FLOWER,
    RELIC_PEN_NIB,
    RELIC_KUNAI,
    RELIC_SHURIKEN,
    RELIC_ORNAMENTAL_FAN,
    RELIC_RED_SKULL,
    RELIC_MEAT_ON_THE_BONE,
    RELIC_BOOT,
    RELIC_BAG_OF_PREPARATION,
    RELIC_ANCIENT_TEA_SET,
    RELIC_PRESERVED_INSECT,
    RELIC_ART_OF_WAR,
    RELIC_CENTENNIAL_PUZZLE,
    RELIC_NUNCHAKU,
    RELIC_TOY_ORNITHOPTER,
    RELIC_BOTTLED_TORNADO,
    RELIC_SUNDIAL,
    RELIC_BLUE_CANDLE,
    RELIC_STRIKE_DUMMY,
    RELIC_INK_BOTTLE,
    RELIC_BOTTLED_LIGHTNING,
    RELIC_GREMLIN_HORN,
    RELIC_HORN_CLEAT,
    RELIC_LETTER_OPENER,
    RELIC_BOTTLED_FLAME,
    RELIC_MUMMIFIED_HAND,
    RELIC_PANTOGRAPH,
    RELIC_MERCURY_HOURGLASS,
    RELIC_SELF_FORMING_CLAY,
    RELIC_PAPER_PHROG,
    RELIC_GINGER,
    RELIC_BIRD_FACED_URN,
    RELIC_UNCEASING_TOP,
    RELIC_TORII,
    RELIC_STONE_CALENDAR,
    RELIC_THREAD_AND_NEEDLE,
    RELIC_TURNIP,
    RELIC_ICE_CREAM,
    RELIC_CALIPERS,
    RELIC_LIZARD_TAIL,
    RELIC_GIRYA,
    RELIC_DEAD_BRANCH,
    RELIC_DU_VU_DOLL,
    RELIC_POCKETWATCH,
    RELIC_INCENSE_BURNER,
    RELIC_GAMBLING_CHIP,
    RELIC_CAPTAINS_WHEEL,
    RELIC_FOSSILIZED_HELIX,
    RELIC_TUNGSTEN_ROD,
    RELIC_MAGIC_FLOWER,
    RELIC_CHARONS_ASHES,
    RELIC_CHAMPION_BELT,
    /* shop relics an Ironclad can buy (RelicTier.SHOP, shared and red) */
    RELIC_ABACUS,
    RELIC_BRIMSTONE,
    RELIC_CAULDRON,
    RELIC_CHEMICAL_X,
    RELIC_CLOCKWORK_SOUVENIR,
    RELIC_DOLLYS_MIRROR,
    RELIC_FROZEN_EYE,
    RELIC_HAND_DRILL,
    RELIC_LEES_WAFFLE,
    RELIC_MEDICAL_KIT,
    RELIC_MEMBERSHIP_CARD,
    RELIC_ORANGE_PELLETS,
    RELIC_ORRERY,
    RELIC_PRISMATIC_SHARD,
    RELIC_SLING_OF_COURAGE,
    RELIC_STRANGE_SPOON,
    RELIC_TOOLBOX,
    /* relics of Act-1 events and Neow (RelicTier.SPECIAL) */
    RELIC_GOLDEN_IDOL,
    RELIC_NEOWS_LAMENT,
    RELIC_ODD_MUSHROOM,
    RELIC_FACE_OF_CLERIC,
    RELIC_CULTIST_MASK,
    RELIC_GREMLIN_MASK,
    RELIC_NLOTHS_MASK,
    RELIC_SSSERPENT_HEAD,
    RELIC_WARPED_TONGS,
    RELIC_SPIRIT_POOP,
    RELIC_COUNT
};

enum potion_id {
    POTION_NONE = 0,
    POTION_BLOCK,
    POTION_STRENGTH,
    POTION_DEXTERITY,
    POTION_ENERGY,
    POTION_SWIFT,
    POTION_FIRE,
    POTION_EXPLOSIVE,
    POTION_FEAR,
    POTION_WEAK,
    POTION_FLEX,
    POTION_SPEED,
    POTION_ANCIENT,
    POTION_REGEN,
    POTION_HEART_OF_IRON,
    POTION_ESSENCE_OF_STEEL,
    POTION_LIQUID_BRONZE,
    POTION_GHOST_IN_A_JAR,
    POTION_FRUIT_JUICE,
    POTION_FAIRY,
    POTION_BLOOD,
    POTION_ATTACK,
    POTION_SKILL,
    POTION_POWER,
    POTION_BLESSING_OF_THE_FORGE,
    POTION_DISTILLED_CHAOS,
    POTION_DUPLICATION,
    POTION_ELIXIR,
    POTION_ENTROPIC_BREW,
    POTION_GAMBLERS_BREW,
    POTION_LIQUID_MEMORIES,
    POTION_SNECKO_OIL,
    POTION_SMOKE_BOMB,
    POTION_CULTIST,
    POTION_COLORLESS,
    POTION_COUNT
};

/* Where a run gets a relic: RS_POOL, the Ironclad relic pools (a run relic,
 * engine/run.c run_relics[]); RS_SHOP, bought in a shop; RS_EVENT, an Act-1
 * event or Neow. Shop and event relics are engine-only: the start generator
 * never buys relics or plays events. */
enum relic_source { RS_POOL = 0, RS_SHOP, RS_EVENT };

/* A relic as data. counter_max > 0: the relic keeps a counter between
 * combats (the game's AbstractRelic.counter, carried by the run), always in
 * [0, counter_max); sf_fight_spec.relic_counters[] and the start text give
 * it, and sf_combat.relic_counter[] holds it during the fight. Relics with
 * counter_max 0 start every combat at counter 0 and may use it within the
 * fight. */
typedef struct relic_def {
    const char *name;
    int16_t counter_max;
    uint8_t source; /* RS_*: where a run gets it (game-rules §7)         */
} relic_def;

/* A potion's row. `use` runs what the potion does (potions/<Name>.use)
 * after the slot is emptied; NULL for a potion that is never drunk (Fairy
 * in a Bottle). `choice` is the CH_* screen the effect opens, if any
 * (CH_NONE: none). */
typedef struct potion_def {
    const char *name;
    uint8_t target;    /* TGT_ENEMY or TGT_NONE                                 */
    uint8_t drinkable; /* 0 for Fairy in a Bottle (it triggers on death)         */
    int16_t potency;   /* getPotency() without Sacred Bark                      */
    uint8_t no_boss;   /* 1: canUse is false while a boss is in the fight (Smoke Bomb) */
    void (*use)(struct sf_combat *c, int potency, int target);
} potion_def;

extern const relic_def sf_relics[RELIC_COUNT];
extern const potion_def sf_potions[POTION_COUNT];

/* ---------------------------------------------------------------------------
 * Encounters (monsters.c)
 * ------------------------------------------------------------------------- */
enum encounter_id {
    ENC_CULTIST,
    ENC_JAW_WORM,
    ENC_2_LOUSE,
    ENC_SMALL_SLIMES,
    ENC_GREMLIN_GANG,
    ENC_LOTS_OF_SLIMES,
    ENC_RED_SLAVER,
    ENC_EXORDIUM_THUGS,
    ENC_EXORDIUM_WILDLIFE,
    ENC_BLUE_SLAVER,
    ENC_LOOTER,
    ENC_LARGE_SLIME,
    ENC_3_LOUSE,
    ENC_2_FUNGI_BEASTS,
    ENC_GREMLIN_NOB,
    ENC_LAGAVULIN,
    ENC_3_SENTRIES,
    ENC_GUARDIAN,
    ENC_HEXAGHOST,
    ENC_SLIME_BOSS,
    ENC_COUNT
};

typedef struct encounter_def {
    const char *name;
    uint8_t pool; /* SF_POOL_*                                                  */
} encounter_def;

extern const encounter_def sf_encounters[ENC_COUNT];

/* The act's encounter lists as Exordium.generateMonsters makes them from a
 * monsterRng seeded with `seed` (engine.c; docs/game-rules.md §6): 3 weak
 * then 13 strong normal fights, 10 elites, the boss. */
enum { ACT1_NORMAL = 16, ACT1_ELITE = 10 };
typedef struct act1_lists {
    int normal[ACT1_NORMAL];
    int elite[ACT1_ELITE];
    int boss;
} act1_lists;
void act1_encounter_lists(uint64_t seed, act1_lists *out);

/* ---------------------------------------------------------------------------
 * The combat state
 * ------------------------------------------------------------------------- */
enum phase {
    PH_PLAYER = 0, /* the player's turn: play, drink, end turn                 */
    PH_CHOICE = 1, /* a choice screen is open                                  */
    PH_OVER = 2    /* the fight has ended                                      */
};

/* Choice screens. Each resumes its card's effect when resolved. */
enum choice_kind {
    CH_NONE = 0,
    CH_ARMAMENTS,    /* upgrade a card in hand                                 */
    CH_HEADBUTT,     /* discard -> top of draw                                 */
    CH_TRUE_GRIT,    /* exhaust a card in hand                                 */
    CH_WARCRY,       /* hand -> top of draw                                    */
    CH_BURNING_PACT, /* exhaust a card in hand, then draw `amount`             */
    CH_DUAL_WIELD,   /* copy an Attack or Power in hand `amount` times         */
    CH_EXHUME,       /* exhaust pile -> hand                                   */
    /* Screens a potion opens (no card in limbo: pending.active is 0). */
    CH_DISCOVERY,       /* one of pending.offer[] -> hand, costs 0 this turn (Attack,
                           Skill, Power Potion)                                 */
    CH_LIQUID_MEMORIES, /* discard -> hand, costs 0 this turn                    */
    CH_ELIXIR,          /* multi-select: exhaust the picked hand cards          */
    CH_GAMBLE,          /* multi-select: discard the picked hand cards, draw as many
                           (Gambler's Brew, Gambling Chip: GamblingChipAction) */
    /* Colorless cards' screens (a card in limbo). */
    CH_DISCOVERY_CARD,  /* Discovery: one of pending.offer[] -> hand, costs 0 this turn */
    CH_PURITY,          /* multi-select of up to `amount`: exhaust the picked hand cards */
    CH_FORETHOUGHT,     /* a hand card -> bottom of draw, free until played       */
    CH_FORETHOUGHT_ANY, /* multi-select: the picked hand cards -> bottom of draw   */
    CH_SECRET_SKILL,    /* a Skill of the draw pile -> hand (Secret Technique)     */
    CH_SECRET_ATTACK,   /* an Attack of the draw pile -> hand (Secret Weapon)      */
    /* Toolbox's screen before the opening draw (no card in limbo;
     * pending.amount holds the turn-1 cards put on top, play_first_turn). */
    CH_TOOLBOX, /* one of pending.offer[] (colorless) -> hand, its cost kept */
    CH_COUNT
};

/* A choice screen's name (the JSON "choice.kind") and the verb of its
 * options in action names ("Choose Strike (exhaust)"). */
typedef struct choice_def {
    const char *name;
    const char *verb;
} choice_def;
extern const choice_def sf_choices[CH_COUNT];

/* The option that ends a multi-select screen (CH_ELIXIR, CH_GAMBLE): past
 * every hand position. */
#define CHOICE_DONE SF_MAX_HAND

/* 1 for the screens that wait with no card in limbo: those a potion opens,
 * and Gambling Chip's (CH_GAMBLE, opened by a relic). */
int combat_choice_cardless(int kind);
/* Where the options of screen `kind` live: ZONE_HAND, ZONE_DISCARD,
 * ZONE_EXHAUST or ZONE_OFFER (pending.offer). */
int combat_choice_zone(int kind);

/* Where a choice's options live. */
enum { ZONE_HAND = 0, ZONE_DRAW = 1, ZONE_DISCARD = 2, ZONE_EXHAUST = 3, ZONE_OFFER = 4 };

enum combat_flags {
    FL_BELIEF = 1 << 0, /* draws from the unknown draw region are chance        */
    FL_WON = 1 << 1,
    FL_LOST = 1 << 2,
    FL_ESCAPED_ALL = 1 << 3, /* every monster escaped (no reward)               */
    FL_RED_SKULL_ON = 1 << 4,
    FL_TURN_ENDED = 1 << 5, /* the game's turnHasEnded (monster phase)         */
    FL_FAIRY_USED = 1 << 6,
    FL_MONSTER_DIED = 1 << 7, /* a monster died this combat (not every one escaped) */
};

/* The game's action queue, reduced to what can be pending behind the action
 * that is running: effects the game adds to the *bottom* of its queue from
 * inside another action (a power's onExhaust, onGainedBlock, onCardDraw, a
 * monster's onAttacked or damage() hook). They run, first in first out,
 * after the current card has moved to its pile (game-rules §2.3 step 3) or
 * after the current turn stage; engine code drains the queue at exactly
 * those points (combat_drain). Amounts are captured when queued, as the
 * game's action constructors capture them. */
enum deferred_kind {
    DQ_NONE = 0,
    DQ_BLOCK,          /* player GainBlockAction(arg) (Feel No Pain)           */
    DQ_DRAW,           /* DrawCardAction(arg) (Dark Embrace, Evolve)          */
    DQ_JUGGERNAUT,     /* DamageRandomEnemyAction(arg THORNS) (Juggernaut)     */
    DQ_FIRE_BREATHING, /* DamageAllEnemiesAction(arg THORNS)                   */
    DQ_CURL_UP,        /* monster arg gains its Curl Up block, loses Curl Up   */
    DQ_GUARDIAN,       /* monster arg (The Guardian) changes to Defensive Mode */
    DQ_ENERGY,         /* player GainEnergyAction(arg) (Gremlin Horn)          */
    DQ_ADD_CARD,       /* MakeTempCardInHandAction of card id arg (Dead Branch) */
    DQ_SADISTIC,       /* DamageAction(THORNS, Sadistic Nature's amount) at monster arg */
    DQ_HAND_DRILL,     /* monster arg gains Vulnerable 2 (Hand Drill)          */
};
#define SF_DEFER_CAP 32
typedef struct sf_deferred {
    uint8_t kind; /* DQ_*                                                      */
    uint8_t arg;  /* amount, or a monster slot                               */
} sf_deferred;

/* The card being played. While its effect runs (and while a choice screen it
 * opened is waiting) the card sits here, "in limbo", as in the game. */
/* Cards waiting to autoplay: Distilled Chaos's 2 and a Havoc's, or 2
 * Havocs' when Duplication copies one. More ends the fight as an
 * engine-limit loss (play.c). */
#define SF_CARD_QUEUE 4
#define SF_OFFER_N    3 /* cards a Discovery screen offers                          */
typedef struct sf_pending {
    sf_card card; /* the played card                                         */
    /* Cards queued to autoplay after this one, first to play first: Havoc's
     * top card, Distilled Chaos's cards (the game's card queue). Bit i of
     * queue_exhaust: entry i exhausts when played (Havoc's). */
    sf_card queue[SF_CARD_QUEUE];
    uint8_t queue_target[SF_CARD_QUEUE];
    uint8_t queue_n;
    uint8_t queue_exhaust;
    sf_card offer[SF_OFFER_N]; /* CH_DISCOVERY: the offered cards, distinct       */
    uint16_t picked;           /* CH_ELIXIR / CH_GAMBLE: picked hand positions (bits) */
    uint8_t kind;              /* CH_* of an open choice screen                           */
    uint8_t amount;            /* the choice's parameter (draws after, copies to make)    */
    uint8_t target;            /* the play's target                                       */
    uint8_t repeats;           /* further plays of the same card queued (Double Tap)      */
    uint8_t x;                 /* X for X-cost cards (Whirlwind)                          */
    uint8_t copy;              /* 1 while a Double Tap copy plays (purged afterwards)     */
    uint8_t forced_exhaust;    /* played by Havoc: exhausts                         */
    uint8_t active;            /* 1 while a card is in limbo                              */
    uint8_t from_hand;         /* played from the hand (Perfected Strike counts itself)  */
    uint8_t sharp;             /* monster slots (bits) whose Sharp Hide answers this play */
    uint8_t panache;           /* THORNS damage Panache deals every monster behind this play */
} sf_pending;

typedef struct sf_combat {
    /* ---- core: everything below decides the future and is hashed ---- */
    int16_t hp, max_hp, block;
    int16_t pw[PW_N];
    uint16_t turn;      /* player turn number, from 1                     */
    uint16_t max_turns; /* the turn cap: no turn starts after this one    */
    uint8_t just;       /* JA_* for the player                            */
    uint8_t energy;
    uint8_t phase; /* PH_*                                                */
    uint8_t flags; /* FL_*                                                */
    uint8_t encounter, ascension;
    uint8_t n_mon;
    sf_monster mon[SF_MAX_MONSTERS];

    uint8_t hand_n, draw_n, discard_n, exhaust_n;
    uint8_t draw_known;     /* cards on top of the draw pile whose identity is known */
    uint8_t cards_played;   /* this turn                                           */
    uint8_t attacks_played; /* this turn (Kunai, Shuriken, Ornamental Fan)       */
    uint8_t hp_losses;      /* times the player lost HP this combat (Blood for Blood) */
    sf_card hand[SF_MAX_HAND];
    sf_card draw[SF_MAX_PILE]; /* top = draw[draw_n-1]                           */
    sf_card discard[SF_MAX_PILE];
    sf_card exhaust[SF_MAX_PILE];

    sf_pending pending;
    uint8_t relics[SF_MAX_RELICS];
    uint8_t relic_n;
    uint8_t potions[SF_MAX_POTION_SLOTS];
    uint8_t potion_slots;                 /* slots this fight has (3; 5 with Potion Belt)      */
    int16_t relic_counter[SF_MAX_RELICS]; /* relics[i]'s counter (relic_def)    */
    int16_t gold;
    uint8_t potions_used;
    uint8_t floor;
    uint8_t defer_n; /* entries in `defer`; the rest are zero                    */
    sf_deferred defer[SF_DEFER_CAP];

    /* ---- excluded from identity ---- */
    sf_rng rng[SF_NUM_STREAMS];
    uint32_t streams_used; /* bits of streams advanced since the last apply      */
    uint32_t damage_dealt; /* statistics                                         */
    uint16_t cards_played_total;
    uint16_t gold_stolen_lost;
    uint16_t cards_created; /* cards made during the fight (statuses, copies, ...) */
    uint16_t cards_removed; /* cards that left every pile (powers played, purged)  */
    uint16_t cards_dropped; /* cards lost to a full pile (SF_MAX_PILE)             */
    /* The loss grade's inputs and the forecast's block (label/label.h). They
     * never change what happens next, so identity leaves them out. */
    uint16_t mon_hp_pool;     /* HP every monster entered the fight with     */
    int16_t block_enemy_turn; /* block when the monsters last began a turn   */
    uint8_t engine_limit;     /* 1: the fight ended on a full pile           */
    uint8_t turn_limit;       /* 1: the fight ended at its length cap        */
    uint8_t escaped;          /* 1: the player escaped (Smoke Bomb)          */
    uint16_t turn_actions;    /* actions applied since this turn began       */
} sf_combat;

_Static_assert(sizeof(sf_combat) <= SF_STATE_BYTES, "sf_combat must fit in sf_state");

#define SF_COMBAT_CORE_BYTES offsetof(sf_combat, rng)

static inline sf_combat *combat_of(sf_state *s) {
    return (sf_combat *)(void *)s->opaque;
}
static inline const sf_combat *ccombat_of(const sf_state *s) {
    return (const sf_combat *)(const void *)s->opaque;
}

/* ---------------------------------------------------------------------------
 * Rule helpers shared by cards, monsters, relics and potions (combat.c).
 * "Source" rules (game-rules §1): damage types NORMAL, THORNS, HP_LOSS.
 * ------------------------------------------------------------------------- */
enum dmg_type { DT_NORMAL = 0, DT_THORNS = 1, DT_HP_LOSS = 2 };

/* Draw from a random stream, recording it in streams_used. */
sf_rng *combat_rng(sf_combat *c, int stream);

/* Card damage to monster m after the player's and m's modifiers (§1 damage
 * formula, floor once). m < 0: no target modifiers (display for ALL cards). */
int combat_card_damage(const sf_combat *c, const sf_card *card, int base, int m);
/* Block a card gives after Dexterity and Frail. */
int combat_card_block(const sf_combat *c, int base);
/* A monster's attack damage to the player after modifiers. */
int combat_monster_damage(const sf_combat *c, int m, int base);

/* The player attacks monster m with already-modified damage `dmg` (NORMAL):
 * block, HP loss, Curl Up, Angry, split checks, Sharp Hide etc. Returns the HP
 * lost by the monster. */
int combat_player_hits(sf_combat *c, int m, int dmg);
/* THORNS damage from the player side to monster m (Combust, Juggernaut, ...). */
int combat_thorns_to_monster(sf_combat *c, int m, int dmg);
/* The same THORNS damage to every living monster in slot order
 * (DamageAllEnemiesAction with a THORNS matrix: Explosive Potion, Fire
 * Breathing, Combust, Panache, The Bomb, Letter Opener, Mercury Hourglass,
 * Stone Calendar, Charon's Ashes). */
void combat_thorns_all(sf_combat *c, int dmg);
/* Damage to the player: type DT_*, attacker monster index or -1. */
int combat_damage_player(sf_combat *c, int dmg, int type, int attacker);
/* The player loses HP directly (Bloodletting, Hemokinesis, Offering): HP_LOSS
 * from a source the player owns (Rupture counts it). */
void combat_lose_hp(sf_combat *c, int amount);
void combat_heal(sf_combat *c, int amount);
/* Gain block from a card/relic/potion (already modified); triggers Juggernaut. */
void combat_gain_block(sf_combat *c, int amount);

/* Apply a power to the player / to monster m, honouring Artifact for debuffs
 * and the justApplied rule. `from_monster` is the game's isSourceMonster. */
/* 1 if applying `amount` of power `pw` is a debuff (Artifact blocks it). */
int combat_is_debuff(int pw, int amount);
void combat_power_player(sf_combat *c, int pw, int amount, int from_monster);
void combat_power_monster(sf_combat *c, int m, int pw, int amount);

/* Piles */
void combat_draw(sf_combat *c, int n);
/* Pile insertions return 1 when the card was stored (0: the pile was full). */
int combat_add_to_hand(sf_combat *c, const sf_card *card); /* full hand: to discard */
int combat_add_to_discard(sf_combat *c, const sf_card *card);
int combat_add_to_draw_top(sf_combat *c, const sf_card *card); /* known position */
int combat_add_to_draw_random(sf_combat *c, sf_card card);     /* random spot, not top */
/* A card made during the fight (a status, a copy, a generated card) enters
 * `zone` (ZONE_HAND, ZONE_DISCARD or ZONE_DRAW at a random spot); counted
 * in cards_created so card totals can be checked. */
void combat_add_new(sf_combat *c, int zone, sf_card card);
/* Upgrade one card (AbstractCard.upgrade with the cost rules). */
void combat_upgrade_card(sf_card *k);
/* Sort n cards bytewise (insertion sort: the piles are short): the
 * canonical order of an unknown multiset. */
void combat_sort_cards(sf_card *cards, int n);
/* Collections.shuffle(list, new java.util.Random(shuffleRng.randomLong()))
 * over n elements of `size` bytes at `base` (a pile, or indices into
 * one): one randomLong of the shuffle stream, even for n < 2. Inline so
 * that each caller's constant size makes the swaps plain moves. */
static inline void combat_java_shuffle(sf_combat *c, void *base, int n, size_t size) {
    unsigned char *v = base, t[sizeof(sf_card) > sizeof(int) ? sizeof(sf_card) : sizeof(int)];
    sf_jrand j;
    sf_jrand_seed(&j, sf_rng_random_long(combat_rng(c, SF_STREAM_SHUFFLE)));
    for (int i = n; i > 1; i--) {
        int k = sf_jrand_next_int(&j, i);
        memcpy(t, v + (size_t)(i - 1) * size, size);
        memcpy(v + (size_t)(i - 1) * size, v + (size_t)k * size, size);
        memcpy(v + (size_t)k * size, t, size);
    }
}
/* AbstractCard.canUpgrade: not a status or curse, not upgraded (Searing
 * Blow always). */
int combat_can_upgrade(const sf_card *k);
void combat_remove_hand(sf_combat *c, int i, sf_card *out);
void combat_exhaust_card(sf_combat *c, sf_card card); /* to exhaust pile, with triggers */
void combat_exhaust_from_hand(sf_combat *c, int i);
/* drawPile.removeCard(draw[i]) (Secret Technique, Secret Weapon,
 * Violence: DrawPileToHandAction): the card leaves the draw pile; the other
 * known top cards stay known. */
void combat_remove_draw(sf_combat *c, int i, sf_card *out);
/* CardGroup.moveToBottomOfDeck (Forethought): the card goes under the
 * draw pile. In belief mode it joins the unknown multiset (its place is
 * not kept; docs/engine.md). */
int combat_add_to_draw_bottom(sf_combat *c, const sf_card *card);
/* Deep Breath: EmptyDeckShuffleAction (onShuffle relics; the discard pile
 * shuffled with shuffleRng and put on top of the draw pile) then
 * ShuffleAction(drawPile): the whole draw pile shuffled with shuffleRng. */
void combat_shuffle_discard_into_draw(sf_combat *c);
sf_card combat_make_card(const sf_combat *c, int id, int upg);
int combat_card_cost(const sf_combat *c, const sf_card *card); /* energy to play now */

/* Deferred effects (see sf_deferred): queue one, or run the queue until it
 * is empty or the fight is over. */
void combat_defer(sf_combat *c, int kind, int arg);
void combat_drain(sf_combat *c);

/* Open a choice screen for the card in limbo; returns 1 if opened, 0 when
 * the choice resolved at once (zero or one distinct option). */
int combat_open_choice(sf_combat *c, int kind, int amount);

/* Monsters */
int combat_alive(const sf_combat *c, int m); /* not dead, not escaped          */
int combat_alive_count(const sf_combat *c);
int combat_random_monster(sf_combat *c);                        /* cardRandomRng; -1 if none      */
int combat_spawn_monster(sf_combat *c, int at, int id, int hp); /* split children */
void combat_compact(sf_combat *c);                              /* drop dead/escaped monsters     */
int combat_pop_draw(sf_combat *c, sf_card *out);                /* Havoc: next draw-pile card */
int combat_choice_options(const sf_combat *c, int kind, uint8_t *opts, sf_card *cards);
int combat_choose(sf_combat *c, int option);
void combat_check_end(sf_combat *c);
/* End the fight now as a loss that is not one of the game's own endings
 * (a full pile, the turn cap): phase over, FL_LOST, nothing pending. The
 * caller sets the flag that says which (engine_limit, turn_limit). A fight
 * already over is left as it is. */
void combat_stop(sf_combat *c);

/* AbstractDungeon.returnTrulyRandomCardInCombat(type): a card of type
 * CT_* (any type when type < 0: the no-argument overload) from the
 * Ironclad common, uncommon and rare source pools (each the reverse of
 * run_card_pool's order), HEALING-tagged cards left out, by one
 * cardRandomRng.random(size - 1). Returns the card id. Infernal Blade's
 * random Attack, the Attack / Skill / Power Potions' offers, Dead Branch. */
int combat_random_card(sf_combat *c, int type);
/* AbstractDungeon.returnTrulyRandomColorlessCardInCombat(): a card of
 * srcColorlessCardPool (the colorless uncommons and rares, HEALING-tagged
 * Bandage Up left out) by one cardRandomRng.random(size - 1). Returns the
 * card id. The Colorless Potion's offers, Jack of All Trades, Magnetism,
 * Transmutation. */
int combat_random_colorless(sf_combat *c);
/* DiscoveryAction: three distinct cards, each one draw of `pool` (a CT_*
 * type or -1 for any type: combat_random_card; DISCOVER_COLORLESS:
 * combat_random_colorless), a duplicate re-drawn, offered on screen `kind`
 * (CH_DISCOVERY for a potion, CH_DISCOVERY_CARD for the Discovery card). */
#define DISCOVER_COLORLESS (-2)
void combat_discover(sf_combat *c, int kind, int pool);
static inline int combat_random_attack(sf_combat *c) {
    return combat_random_card(c, CT_ATTACK);
}
/* The player escapes (Smoke Bomb): the fight ends as endBattle ends it,
 * relics' onVictory included; counted as won (sf_outcome.escaped). */
void combat_player_escape(sf_combat *c);

/* Monster AI (monsters.c) */
/* Construct monster `id` in slot m: HP roll from monsterHpRng unless hp > 0
 * (split children take their parent's HP), per-kind setup. */
void monster_init(sf_combat *c, int m, int id, int hp);
void monster_roll_move(sf_combat *c, int m);                      /* rollMove: aiRng num      */
void monster_set_move(sf_combat *c, int m, int mv);               /* setMove + history        */
void monster_pre_battle(sf_combat *c, int m);                     /* usePreBattleAction       */
void monster_take_turn(sf_combat *c, int m);                      /* the move, then next intent */
void monster_on_hp_loss(sf_combat *c, int m, int lost, int type); /* split / wake / mode shift */
void monster_on_death(sf_combat *c, int m);
void monster_guardian_defensive(sf_combat *c, int m);            /* TheGuardian.changeState  */
int monster_intent_damage(const sf_combat *c, int m, int *hits); /* per hit, after modifiers */
void encounter_build(sf_combat *c, int encounter);               /* miscRng composition      */
/* The row monster `id` executes for move `mv`: sf_moves[mv] with the
 * monster's sf_move_variants columns, if it has a row there. */
move_def monster_move(int id, int mv);

/* Run rules for starting positions (run.c; docs/game-rules.md §11). */
#define RUN_UPGRADE_CHANCE 0.0f /* Exordium's cardUpgradedChance at every ascension */
/* The Ironclad card pool of a rarity (RAR_COMMON/UNCOMMON/RARE) in the
 * game's index order; *n its size. NULL for other rarities. */
const uint8_t *run_card_pool(int rarity, int *n);
/* One card reward (3 cards) from cardRng with the offset *b (updated). */
void run_card_reward(sf_rng *card_rng, int *b, int elite, sf_card_spec out[3]);
void run_card_reward_n(sf_rng *card_rng, int *b, int elite, int n_cards, sf_card_spec *out);
/* A fight's potion roll with the offset *m (updated): a run potion id or 0. */
int run_potion_drop(sf_rng *potion_rng, int *m, int no_chance);
int run_potion_drop_chance(sf_rng *potion_rng, int *m, int chance); /* chance in % */
/* An elite's relic tier: 1 common, 2 uncommon, 3 rare. */
int run_elite_relic_tier(sf_rng *relic_rng);
int run_rest_heal(int max_hp);   /* HP a rest heals                        */
int run_potion_rarity(int item); /* 1..3 for a run potion id, 0 otherwise  */
int run_relic_tier(int item);    /* 0 starter, 1..3, -1 out of range       */
/* A run's relic pools by tier (1 common, 2 uncommon, 3 rare; run relic
 * ids, front first), as AbstractDungeon keeps them. */
enum { RUN_POOL_MAX = 33 };
typedef struct run_pools {
    uint8_t item[4][RUN_POOL_MAX];
    int n[4];
} run_pools;
/* relics/<Name>.canSpawn of run relic `item` for a player with this deck,
 * these run relics held, on this floor. */
int run_relic_can_spawn(int item, const sf_fight_spec *player, const uint8_t *relics, int relics_n,
                        int floor);
/* AbstractDungeon.returnRandomRelicKey from `pools` at `tier`: the front
 * relic; one that cannot spawn leaves the pool and the back of the pool is
 * taken instead, until one can; an empty pool passes to the next tier's
 * front. The run relic id, or 0 when every pool from `tier` on is empty. */
int run_take_relic(run_pools *pools, int tier, const sf_fight_spec *player, const uint8_t *relics,
                   int relics_n, int floor);
/* A scripted prefix for tests: the player of `start` (text form: deck,
 * relics with counters, potions, floor, hp, gold; relics are held, not
 * picked up again) enters and plays `rooms`, one letter a floor from the
 * start's floor + 1 on: 'M' monster, 'E' elite, 'R' rest, '$' shop, 'T'
 * chest, '?' a "?" room (rolled), on the streams of (run_seed, game_seed)
 * and the options' picker. *out and *desc (may be NULL) get the player
 * after the last room. Errors: a bad letter or text (SF_EINVAL), death
 * (SF_ESTATE), the picker's. */
int run_script(const sf_start_opts *opts, uint64_t run_seed, uint64_t game_seed, const char *start,
               const char *rooms, sf_fight_spec *out, sf_start_desc *desc, sf_err *err);
/* One path of the map model: rooms[f] (ROOM_*) for floors 1..16, "?"
 * rooms resolved by the event roll (a plain event becomes ROOM_NONE), and
 * path[f - 1] its letter (sf_start_desc.path). */
enum {
    ROOM_NONE = 0,
    ROOM_MONSTER,
    ROOM_ELITE,
    ROOM_REST,
    ROOM_SHOP,
    ROOM_TREASURE,
    ROOM_EVENT, /* "?" before it is resolved */
    ROOM_BOSS
};
#define RUN_BOSS_FLOOR 16
void run_path_sample(sf_rng *map, sf_rng *event, uint8_t rooms[RUN_BOSS_FLOOR + 1],
                     char path[RUN_BOSS_FLOOR + 1]);

/* Turn flow (play.c) */
int play_from_hand(sf_combat *c, int hand_index, int target); /* SF_OK / SF_EINVAL */
int play_choose(sf_combat *c, int option);
int play_can_play(const sf_combat *c, int hand_index); /* 1 if legal now    */
/* After an Attack's own actions, before the card moves (the actions the
 * game's UseCardAction constructor queued behind them): Rage's block, Vigor
 * and Pen Nib spent, the relics' onUseCard (Pen Nib, Kunai, Shuriken,
 * Ornamental Fan); then Sharp Hide's THORNS damage from the monsters in
 * `sharp` (bits: those alive when the play began), returning the HP it
 * cost. The tokenizer runs them on a scratch copy to follow a play. */
void play_attack_hooks(sf_combat *c);
int play_sharp_hide(sf_combat *c, unsigned sharp);
void play_end_turn(sf_combat *c);
/* Turn 1; `on_top` is the number of cards initializeDeck put on top
 * (Innate or bottled): a surplus over 5 is drawn too. */
void play_first_turn(sf_combat *c, int on_top);

/* Relic and potion hooks (items.c): each runs the held relics' hook of
 * the game's name in relic (acquisition) order. */
int combat_has_relic(const sf_combat *c, int relic);
/* The slot of `relic` in c->relics (its counter is relic_counter[slot]), or
 * -1 when the player does not hold it. */
int combat_relic_slot(const sf_combat *c, int relic);
void relics_at_pre_battle(sf_combat *c);
void relics_at_battle_start(sf_combat *c); /* after the opening draw is queued */
/* atTurnStart, after the turn's block loss and energy recharge; `first`
 * on turn 1. */
void relics_at_turn_start(sf_combat *c, int first);
/* atTurnStartPostDraw: `played` is the count of cards played in the turn
 * before (Pocketwatch); `first` on turn 1 (Gambling Chip's screen). */
void relics_at_turn_start_post_draw(sf_combat *c, int played, int first);
void relics_on_player_end_turn(sf_combat *c);
/* onUseCard of an Attack, the parts the tokenizer follows (play.c
 * play_attack_hooks): Pen Nib, Kunai, Shuriken, Ornamental Fan, Nunchaku,
 * Art of War. They never draw or read a random stream. */
void relics_on_attack_played(sf_combat *c);
/* onUseCard of any card of type `type` (CT_*) that draws, heals, deals
 * damage or reads a random stream: Ink Bottle, Letter Opener, Mummified
 * Hand, Bird-Faced Urn. Runs before the card moves to its pile. */
void relics_on_card_played(sf_combat *c, int type);
void relics_on_exhaust(sf_combat *c);       /* Charon's Ashes, Dead Branch  */
void relics_on_monster_death(sf_combat *c); /* Gremlin Horn                 */
void relics_on_shuffle(sf_combat *c);       /* Sundial                      */
void relics_on_potion_used(sf_combat *c);   /* Toy Ornithopter              */
void relics_on_refresh_hand(sf_combat *c);  /* Unceasing Top                */
void relics_was_hp_lost(sf_combat *c);      /* Centennial Puzzle, Self-Forming Clay */
/* Lizard Tail at 0 HP (after Fairy in a Bottle): 1 if it revived the player. */
int relics_on_death(sf_combat *c);
/* A heal of `amount` as the player receives it (onPlayerHeal: Magic Flower). */
int relics_heal_amount(const sf_combat *c, int amount);
void relics_on_victory(sf_combat *c);
void relics_on_hp_change(sf_combat *c); /* Red Skull                       */
/* Chemical X: an X-cost card's X is 2 more (every play, free ones too). */
int relics_x_bonus(const sf_combat *c);
/* Hand Drill: monster m's block was broken by damage. */
void relics_on_block_broken(sf_combat *c, int m);
/* Frozen Eye: 1 when a shuffled draw pile is seen in order (true mode). */
int relics_draw_order_seen(const sf_combat *c);
/* Medical Kit: a status card (unplayable by its row) can be played, for 0. */
int relics_status_playable(const sf_combat *c, const sf_card *k);
/* Strange Spoon: a used card that would exhaust (not a Power) goes to the
 * discard pile instead on cardRandomRng.randomBoolean(); 1 if it does. */
int relics_spoon_keeps(sf_combat *c, const sf_card *k);
int potion_use(sf_combat *c, int slot, int target); /* SF_OK or SF_EINVAL      */
int potion_needs_target(int potion);
/* 1 if potion `potion` can be drunk now (drinkable, and canUse: Smoke Bomb
 * not with a boss in the fight). */
int potion_can_use(const sf_combat *c, int potion);
/* After a potion's choice screen resolved (play_choose): its queued effects
 * run and the fight may end. */
void potion_after_choice(sf_combat *c);
/* Distilled Chaos and Havoc: start the next queued autoplay in
 * pending.queue, if any (play.c). */
void play_next_queued(sf_combat *c);
/* A PlayTopCardAction takes its card: the top of the draw pile (reshuffled
 * first when empty) joins the card queue, to play at monster `target` (< 0:
 * none). 0 when no card is left; the caller checks there is room. */
int play_queue_top(sf_combat *c, int target);

#endif
