/*
 * feat.c — the tokenizer: a state as a set of entity tokens plus one query
 * per legal action, with engine-computed "playmath" features.
 *
 * The layout (every token type, categorical slot, continuous column and
 * query feature) is the contract with the trainers and the inference
 * server; docs/model.md "Tokenizer (version 2)" documents it column by
 * column and must change together with this file (bump SF_FEAT_VERSION).
 *
 * Honesty: everything here reads only what the player can see. The unknown
 * part of the draw pile is read as a multiset (sorted before grouping), the
 * random streams are never touched, and monster scratch counters that the
 * game does not show (sf_monster.ai / val) are never read directly. Playmath
 * is computed analytically with the engine's own formulas
 * (combat_card_damage, combat_card_block, monster_intent_damage) rather
 * than by applying the action to a copy, which could draw hidden cards or
 * consume random numbers.
 *
 * What a card does comes from the card table only: card_predict() (cards.c)
 * gives its base damage, hits, targets, block, HP cost, Weak, Vulnerable
 * and exhausts from the same helpers its effect plays with. Nothing here
 * names a card. This file follows the turn around the card (follow_play):
 * on a scratch copy of the position it runs the engine's own hooks and
 * rules (HP loss, block gain, play.c's hooks after an Attack, Sharp Hide,
 * Feel No Pain) but never the card's effect, then plays a Double Tap copy
 * from what they leave; damage against block, Curl Up and deaths is
 * resolved here (resolve_strike).
 */
#include <math.h>

#include "engine/internal.h"

_Static_assert(SF_FEAT_ID_CARD + CARD_COUNT <= SF_FEAT_ID_MONSTER, "card ids overflow range");
_Static_assert(SF_FEAT_ID_MONSTER + MON_COUNT <= SF_FEAT_ID_MOVE, "monster ids overflow range");
_Static_assert(SF_FEAT_ID_MOVE + MV_COUNT <= SF_FEAT_ID_POWER, "move ids overflow range");
_Static_assert(SF_FEAT_ID_POWER + PW_N <= SF_FEAT_ID_RELIC, "power ids overflow range");
_Static_assert(SF_FEAT_ID_RELIC + RELIC_COUNT <= SF_FEAT_ID_POTION, "relic ids overflow range");
_Static_assert(SF_FEAT_ID_POTION + POTION_COUNT <= SF_FEAT_ID_ENCOUNTER,
               "potion ids overflow range");
_Static_assert(SF_FEAT_ID_ENCOUNTER + ENC_COUNT <= SF_FEAT_ID_END, "encounter ids overflow");
_Static_assert(SF_FEAT_ID_END <= SF_FEAT_VOCAB0, "slot-0 ids exceed SF_FEAT_VOCAB0");
_Static_assert(CH_COUNT <= SF_FEAT_VOCAB1 && SF_MAX_ASCENSION < SF_FEAT_VOCAB2 &&
                   INT_COUNT <= SF_FEAT_VOCAB2 && 1 + SF_MAX_MONSTERS <= SF_FEAT_VOCAB1 &&
                   1 + SF_MAX_MONSTERS <= SF_FEAT_VOCAB3 && SF_MAX_POTION_SLOTS <= SF_FEAT_VOCAB3,
               "categorical values exceed their vocabularies");
_Static_assert(SF_FEAT_MAX_QUERIES >= SF_MAX_ACTIONS, "one query per legal action");

/* Continuous columns of each token type (docs/model.md); CTX and PLAYER
 * are public (engine.h, SF_FEAT_CTX_*, SF_FEAT_PL_*). */
enum {
    MO_HP,
    MO_MAX_HP,
    MO_HP_FRAC,
    MO_BLOCK,
    MO_STR,
    MO_VULN,
    MO_WEAK,
    MO_ASLEEP,
    MO_ESCAPING,
    MO_DEFENSIVE,
    MO_SPLIT_DONE,
    MO_HALF_HP,
    MO_EHP,
    MO_ELITE,
    MO_BOSS,
    MO_SLOT
};
enum {
    IN_DAMAGE,
    IN_HITS,
    IN_TOTAL,
    IN_ATTACK,
    IN_REPEAT1,
    IN_REPEAT2,
    IN_SHARE,
    IN_BUFF,
    IN_DEBUFF,
    IN_DEFEND,
    IN_ESCAPE,
    IN_SLEEP,
    IN_UNKNOWN,
    IN_PREV_ATTACK
};
enum { ST_AMOUNT, ST_LOG, ST_JUST, ST_DEBUFF, ST_POSITIVE };
enum {
    CA_COUNT,
    CA_COST,
    CA_PLAYABLE,
    CA_ATTACK,
    CA_SKILL,
    CA_POWER,
    CA_STATUS,
    CA_DAMAGE,
    CA_HITS,
    CA_BLOCK,
    CA_MAGIC,
    CA_EXHAUSTS,
    CA_ETHEREAL,
    CA_TARGETED,
    CA_ALL,
    CA_MISC
};
enum { RE_COUNTER, RE_RAW, RE_ACTIVE };
enum { PO_TARGETED, PO_POTENCY, PO_DRINKABLE };

/* ------------------------------------------------------------------------
 * Token builder
 * ---------------------------------------------------------------------- */

typedef struct builder {
    sf_feat *f;
    int full;
} builder;

static uint16_t clampu(int v, int vocab) {
    return (uint16_t)(v < 0 ? 0 : v >= vocab ? vocab - 1 : v);
}

/* Append a token; returns its index, or -1 (and marks the set full). */
static int tok(builder *b, int type, int c0, int c1, int c2, int c3) {
    sf_feat *f = b->f;
    if (f->n_tokens >= SF_FEAT_MAX_TOKENS) {
        b->full = 1;
        return -1;
    }
    int t = f->n_tokens++;
    f->type[t] = (uint8_t)type;
    f->cat[t][0] = clampu(c0, SF_FEAT_VOCAB0);
    f->cat[t][1] = clampu(c1, SF_FEAT_VOCAB1);
    f->cat[t][2] = clampu(c2, SF_FEAT_VOCAB2);
    f->cat[t][3] = clampu(c3, SF_FEAT_VOCAB3);
    return t;
}

static void put(builder *b, int t, int col, float v) {
    if (t >= 0)
        b->f->cont[t][col] = v;
}

/* ------------------------------------------------------------------------
 * Shared numbers
 * ---------------------------------------------------------------------- */

static int alive(const sf_combat *c, int m) {
    return combat_alive(c, m);
}

/* Announced damage of monster m this turn: per hit after modifiers x hits. */
static int intent_total(const sf_combat *c, int m) {
    int hits = 0, dmg = monster_intent_damage(c, m, &hits);
    return dmg > 0 ? dmg * hits : 0;
}

static int incoming_total(const sf_combat *c) {
    int n = 0;
    for (int m = 0; m < c->n_mon; m++)
        if (alive(c, m))
            n += intent_total(c, m);
    return n;
}

/* Block the player gains at the end of the turn before the monsters act
 * (play_end_turn: Orichalcum when block is 0, then Metallicize, Plated). */
static int end_turn_block(const sf_combat *c) {
    int b = 0;
    if (c->block == 0 && combat_has_relic(c, RELIC_ORICHALCUM))
        b += 6;
    if (c->pw[PW_METALLICIZE] > 0)
        b += c->pw[PW_METALLICIZE];
    if (c->pw[PW_PLATED] > 0)
        b += c->pw[PW_PLATED];
    return b;
}

/* THORNS damage the player takes from Burns in hand at the end of the turn. */
static int end_turn_burns(const sf_combat *c) {
    int d = 0;
    for (int i = 0; i < c->hand_n; i++)
        d += card_end_turn_damage(&c->hand[i]);
    return d;
}

static int min_i(int a, int b) {
    return a < b ? a : b;
}
static int max_i(int a, int b) {
    return a > b ? a : b;
}

/* The card_view of a card token's pile (card_predict): a card in hand is,
 * for instance, not hit by its own Fiend Fire, and Perfected Strike in the
 * exhaust pile would count itself once back. */
static int view_of(int zone) {
    switch (zone) {
    case SF_TOK_CARD_HAND: return CV_HAND;
    case SF_TOK_CARD_EXHAUST: return CV_EXHAUST;
    default: return CV_PILE;
    }
}

/* ------------------------------------------------------------------------
 * Entity tokens
 * ---------------------------------------------------------------------- */

static int cost_bucket(int cost) {
    if (cost == COST_UNPLAYABLE)
        return 0;
    if (cost == COST_X)
        return 1;
    return 2 + (cost < 0 ? 0 : cost);
}

/* One card token: `count` copies of `k` in zone `type`; `pos` is its
 * position from the top of the draw pile (1 = top) when known, else 0. */
static int card_token(builder *b, const sf_combat *c, int type, const sf_card *k, int count,
                      int pos) {
    const card_def *d = &sf_cards[k->id];
    int cost = combat_card_cost(c, k);
    int t = tok(b, type, SF_FEAT_ID_CARD + k->id, k->upg, cost_bucket(cost), pos);
    if (t < 0)
        return t;
    int in_hand = type == SF_TOK_CARD_HAND;
    card_pred p;
    card_predict(c, k, view_of(type), &p);
    put(b, t, CA_COUNT, (float)count / 5.0f);
    put(b, t, CA_COST, cost == COST_X ? (float)c->energy / 3.0f : (float)max_i(cost, 0) / 3.0f);
    if (in_hand) {
        int playable = 0;
        for (int i = 0; i < c->hand_n && !playable; i++)
            if (!memcmp(&c->hand[i], k, sizeof *k))
                playable = play_can_play(c, i);
        put(b, t, CA_PLAYABLE, (float)playable);
    }
    put(b, t, CA_ATTACK, d->type == CT_ATTACK);
    put(b, t, CA_SKILL, d->type == CT_SKILL);
    put(b, t, CA_POWER, d->type == CT_POWER);
    put(b, t, CA_STATUS, d->type == CT_STATUS || d->type == CT_CURSE);
    if (p.aim != AIM_NONE)
        put(b, t, CA_DAMAGE, (float)combat_card_damage(c, k, p.base, -1) / 20.0f);
    put(b, t, CA_HITS, (float)p.hits / 5.0f);
    put(b, t, CA_BLOCK, p.block > 0 ? (float)combat_card_block(c, p.block) / 20.0f : 0.0f);
    put(b, t, CA_MAGIC, (float)CARD_NUM(k, mag) / 5.0f);
    put(b, t, CA_EXHAUSTS, (float)p.exhausts);
    put(b, t, CA_ETHEREAL, (d->flags & CD_ETHEREAL) != 0);
    put(b, t, CA_TARGETED, card_target(k) == TGT_ENEMY);
    put(b, t, CA_ALL, card_target(k) == TGT_ALL);
    put(b, t, CA_MISC, (float)k->misc / 10.0f);
    return t;
}

static int card_cmp(const void *a, const void *b) {
    return memcmp(a, b, sizeof(sf_card));
}

/* A pile read as a multiset: one token per distinct card, in sorted order.
 * Records (card, token) pairs in `keys`/`toks` when given (choice lookup). */
static int pile_tokens(builder *b, const sf_combat *c, int type, const sf_card *pile, int n,
                       sf_card *keys, int *toks) {
    sf_card sorted[SF_MAX_PILE];
    n = min_i(n, SF_MAX_PILE);
    memcpy(sorted, pile, sizeof(sf_card) * (size_t)n);
    combat_sort_cards(sorted, n);
    int groups = 0;
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && !card_cmp(&sorted[j], &sorted[i]))
            j++;
        int t = card_token(b, c, type, &sorted[i], j - i, 0);
        if (keys) {
            keys[groups] = sorted[i];
            toks[groups] = t;
        }
        groups++;
        i = j;
    }
    return groups;
}

static void ctx_token(builder *b, const sf_combat *c) {
    int choice = c->phase == PH_CHOICE ? c->pending.kind : CH_NONE;
    int t = tok(b, SF_TOK_CTX, SF_FEAT_ID_ENCOUNTER + c->encounter, choice, c->ascension,
                min_i(c->turn, 15));
    int incoming = incoming_total(c), hp = 0, max_hp = 0, alive_n = 0;
    for (int m = 0; m < c->n_mon; m++) {
        if (!alive(c, m))
            continue;
        alive_n++;
        hp += c->mon[m].hp;
        max_hp += c->mon[m].max_hp;
    }
    put(b, t, SF_FEAT_CTX_TURN, (float)c->turn / 10.0f);
    put(b, t, SF_FEAT_CTX_ENERGY, (float)c->energy / 5.0f);
    put(b, t, SF_FEAT_CTX_CARDS_PLAYED, (float)c->cards_played / 10.0f);
    put(b, t, SF_FEAT_CTX_ATTACKS_PLAYED, (float)c->attacks_played / 10.0f);
    put(b, t, SF_FEAT_CTX_HAND_N, (float)c->hand_n / 10.0f);
    put(b, t, SF_FEAT_CTX_DRAW_N, (float)c->draw_n / 30.0f);
    put(b, t, SF_FEAT_CTX_DISCARD_N, (float)c->discard_n / 30.0f);
    put(b, t, SF_FEAT_CTX_EXHAUST_N, (float)c->exhaust_n / 30.0f);
    put(b, t, SF_FEAT_CTX_DRAW_KNOWN, (float)c->draw_known / 10.0f);
    put(b, t, SF_FEAT_CTX_CHOICE_OPEN, c->phase == PH_CHOICE);
    put(b, t, SF_FEAT_CTX_CHOICE_AMOUNT,
        c->phase == PH_CHOICE ? (float)c->pending.amount / 5.0f : 0.0f);
    put(b, t, SF_FEAT_CTX_INCOMING, (float)incoming / SF_FEAT_SCALE_INCOMING);
    put(b, t, SF_FEAT_CTX_UNCOVERED, (float)max_i(incoming - c->block, 0) / SF_FEAT_SCALE_INCOMING);
    put(b, t, SF_FEAT_CTX_ALIVE, (float)alive_n / SF_FEAT_SCALE_ALIVE);
    put(b, t, SF_FEAT_CTX_MON_HP, (float)hp / SF_FEAT_SCALE_CTX_MON_HP);
    put(b, t, SF_FEAT_CTX_MON_HP_FRAC, max_hp > 0 ? (float)hp / (float)max_hp : 0.0f);
}

static int player_token(builder *b, const sf_combat *c) {
    int t = tok(b, SF_TOK_PLAYER, SF_FEAT_ID_PLAYER, 0, 0, SF_FEAT_OWNER_PLAYER);
    int empty = 0;
    for (int i = 0; i < c->potion_slots && i < SF_MAX_POTION_SLOTS; i++)
        empty += c->potions[i] == POTION_NONE;
    int eot_block = min_i(999, c->block + end_turn_block(c));
    int burns = end_turn_burns(c);
    int uncovered = max_i(incoming_total(c) + burns - eot_block, 0);
    put(b, t, SF_FEAT_PL_HP, (float)c->hp / SF_FEAT_SCALE_PL_HP);
    put(b, t, SF_FEAT_PL_MAX_HP, (float)c->max_hp / SF_FEAT_SCALE_PL_HP);
    put(b, t, SF_FEAT_PL_HP_FRAC, c->max_hp > 0 ? (float)c->hp / (float)c->max_hp : 0.0f);
    put(b, t, SF_FEAT_PL_BLOCK, (float)c->block / SF_FEAT_SCALE_PL_BLOCK);
    put(b, t, SF_FEAT_PL_ENERGY, (float)c->energy / 5.0f);
    put(b, t, SF_FEAT_PL_GOLD, (float)c->gold / 300.0f);
    put(b, t, SF_FEAT_PL_HP_LOSSES, (float)c->hp_losses / 10.0f);
    put(b, t, SF_FEAT_PL_POTIONS_USED, (float)c->potions_used / 3.0f);
    put(b, t, SF_FEAT_PL_EMPTY_SLOTS, (float)empty / 3.0f);
    put(b, t, SF_FEAT_PL_EOT_BLOCK, (float)end_turn_block(c) / 20.0f);
    put(b, t, SF_FEAT_PL_EOT_SELF_DAMAGE,
        (float)(burns + (c->pw[PW_COMBUST] > 0 ? c->pw[PW_COMBUST_HP] : 0)) / 10.0f);
    put(b, t, SF_FEAT_PL_DANGER, c->hp > 0 ? fminf((float)uncovered / (float)c->hp, 2.0f) : 2.0f);
    put(b, t, SF_FEAT_PL_STR, (float)c->pw[PW_STR] / 10.0f);
    put(b, t, SF_FEAT_PL_DEX, (float)c->pw[PW_DEX] / 10.0f);
    put(b, t, SF_FEAT_PL_VULN, c->pw[PW_VULN] > 0);
    put(b, t, SF_FEAT_PL_WEAK, c->pw[PW_WEAK] > 0);
    return t;
}

static int monster_token(builder *b, const sf_combat *c, int m) {
    const sf_monster *mo = &c->mon[m];
    int flags = ((mo->flags & MF_ASLEEP) ? 1 : 0) | ((mo->flags & MF_ESCAPING) ? 2 : 0) |
                ((mo->flags & MF_DEFENSIVE) ? 4 : 0) | ((mo->flags & MF_SPLIT_DONE) ? 8 : 0);
    int kind = sf_monsters[mo->id].kind;
    int t = tok(b, SF_TOK_MONSTER, SF_FEAT_ID_MONSTER + mo->id, flags, kind, 1 + m);
    put(b, t, MO_HP, (float)mo->hp / 100.0f);
    put(b, t, MO_MAX_HP, (float)mo->max_hp / 100.0f);
    put(b, t, MO_HP_FRAC, mo->max_hp > 0 ? (float)mo->hp / (float)mo->max_hp : 0.0f);
    put(b, t, MO_BLOCK, (float)mo->block / 50.0f);
    put(b, t, MO_STR, (float)mo->pw[PW_STR] / 10.0f);
    put(b, t, MO_VULN, mo->pw[PW_VULN] > 0);
    put(b, t, MO_WEAK, mo->pw[PW_WEAK] > 0);
    put(b, t, MO_ASLEEP, (mo->flags & MF_ASLEEP) != 0);
    put(b, t, MO_ESCAPING, (mo->flags & MF_ESCAPING) != 0);
    put(b, t, MO_DEFENSIVE, (mo->flags & MF_DEFENSIVE) != 0);
    put(b, t, MO_SPLIT_DONE, (mo->flags & MF_SPLIT_DONE) != 0);
    put(b, t, MO_HALF_HP, mo->hp * 2 <= mo->max_hp);
    put(b, t, MO_EHP, (float)(mo->hp + mo->block) / 100.0f);
    put(b, t, MO_ELITE, kind == MK_ELITE);
    put(b, t, MO_BOSS, kind == MK_BOSS);
    put(b, t, MO_SLOT, (float)m / 5.0f);
    return t;
}

static void intent_token(builder *b, const sf_combat *c, int m) {
    const sf_monster *mo = &c->mon[m];
    const move_def *mv = &sf_moves[mo->move];
    int t = tok(b, SF_TOK_INTENT, SF_FEAT_ID_MOVE + mo->move, 1 + m, mv->intent, 0);
    int hits = 0, dmg = monster_intent_damage(c, m, &hits);
    int total = dmg > 0 ? dmg * hits : 0;
    int in = mv->intent;
    put(b, t, IN_DAMAGE, dmg > 0 ? (float)dmg / 20.0f : 0.0f);
    put(b, t, IN_HITS, (float)hits / 5.0f);
    put(b, t, IN_TOTAL, (float)total / 50.0f);
    put(b, t, IN_ATTACK, dmg >= 0 && hits > 0);
    put(b, t, IN_REPEAT1, mo->move != MV_NONE && mo->hist[0] == mo->move);
    put(b, t, IN_REPEAT2,
        mo->move != MV_NONE && mo->hist[0] == mo->move && mo->hist[1] == mo->move);
    put(b, t, IN_SHARE,
        (float)min_i(total, 2 * (c->hp + c->block)) / (float)max_i(c->hp + c->block, 1));
    put(b, t, IN_BUFF, in == INT_BUFF || in == INT_ATTACK_BUFF || in == INT_DEFEND_BUFF);
    put(b, t, IN_DEBUFF,
        in == INT_DEBUFF || in == INT_STRONG_DEBUFF || in == INT_ATTACK_DEBUFF ||
            in == INT_DEFEND_DEBUFF);
    put(b, t, IN_DEFEND, in == INT_DEFEND || in == INT_ATTACK_DEFEND || in == INT_DEFEND_BUFF);
    put(b, t, IN_ESCAPE, in == INT_ESCAPE);
    put(b, t, IN_SLEEP, in == INT_SLEEP || in == INT_STUN);
    put(b, t, IN_UNKNOWN, in == INT_UNKNOWN || in == INT_MAGIC);
    int prev = mo->hist[0];
    put(b, t, IN_PREV_ATTACK,
        prev != MV_NONE && sf_moves[prev].hits > 0 && sf_moves[prev].dmg >= 0);
}

static int just_bit(int pw) {
    switch (pw) {
    case PW_WEAK: return JA_WEAK;
    case PW_VULN: return JA_VULN;
    case PW_FRAIL: return JA_FRAIL;
    case PW_RITUAL: return JA_RITUAL;
    case PW_INTANGIBLE: return JA_INTANGIBLE;
    default: return 0;
    }
}

static void status_tokens(builder *b, const int16_t *pw, int n, uint8_t just, int owner) {
    for (int i = 0; i < n; i++) {
        int a = pw[i];
        if (a == 0)
            continue;
        int t = tok(b, SF_TOK_STATUS, SF_FEAT_ID_POWER + i, owner, a < 0, 0);
        put(b, t, ST_AMOUNT, (float)a / 10.0f);
        put(b, t, ST_LOG, (a < 0 ? -1.0f : 1.0f) * log1pf(fabsf((float)a)) / 3.0f);
        put(b, t, ST_JUST, (just & just_bit(i)) != 0);
        put(b, t, ST_DEBUFF, combat_is_debuff(i, a));
        put(b, t, ST_POSITIVE, a > 0);
    }
}

/* A relic's token features (docs/model.md "RELIC"): `counter` is how far
 * its counter is through the cycle that triggers it (or its state as a
 * fraction), `raw` the counter itself /10, `active` whether it acts at the
 * next occasion (the next Attack, turn start, end of turn, HP loss...).
 * Every value is visible to the player (the game shows the counters). */
static int popcount(int v) {
    int n = 0;
    for (; v; v &= v - 1)
        n++;
    return n;
}

static void relic_features(const sf_combat *c, int i, float *counter, float *raw, float *active) {
    int id = c->relics[i], n = c->relic_counter[i], max = sf_relics[id].counter_max;
    int next = c->turn + 1; /* the turn that starts next */
    *counter = *raw = *active = 0.0f;
    switch (id) {
    /* cycles kept between fights: the trigger fires when the counter wraps */
    case RELIC_PEN_NIB:        /* the next Attack deals double damage */
    case RELIC_HAPPY_FLOWER:   /* energy at the next turn start */
    case RELIC_NUNCHAKU:       /* energy on the next Attack */
    case RELIC_INK_BOTTLE:     /* a draw on the next card */
    case RELIC_SUNDIAL:        /* energy at the next shuffle */
    case RELIC_INCENSE_BURNER: /* Intangible at the next turn start */
        *counter = (float)n / (float)max;
        *raw = (float)n / 10.0f;
        *active = n == max - 1;
        break;
    case RELIC_KUNAI:
    case RELIC_SHURIKEN:
    case RELIC_ORNAMENTAL_FAN:
        *counter = (float)(c->attacks_played % 3) / 3.0f;
        *raw = (float)(c->attacks_played % 3) / 10.0f;
        *active = c->attacks_played % 3 == 2; /* the next Attack triggers it */
        break;
    case RELIC_LETTER_OPENER: /* Skills this turn */
        *counter = (float)(n % 3) / 3.0f;
        *raw = (float)n / 10.0f;
        *active = n % 3 == 2;
        break;
    case RELIC_RED_SKULL: *active = (c->flags & FL_RED_SKULL_ON) != 0; break;
    case RELIC_ORICHALCUM: *active = c->block == 0; break;
    case RELIC_GIRYA: /* lifts made: Strength at battle start */
        *counter = (float)n / 3.0f;
        *raw = (float)n / 10.0f;
        break;
    case RELIC_ORANGE_PELLETS: /* card types played this turn (bits Attack, Skill, Power) */
        *counter = (float)popcount(n & 7) / 3.0f;
        *active = popcount(n & 7) == 2; /* the missing type removes the debuffs */
        break;
    case RELIC_NEOWS_LAMENT: /* fights spent at 1-HP monsters (this one counted) */
        *counter = (float)n / 3.0f;
        *raw = (float)n / 10.0f;
        *active = n < 3; /* a later fight still starts them at 1 HP */
        break;
    case RELIC_ANCIENT_TEA_SET: /* charged (1): 2 energy on turn 1 */
        *counter = (float)n;
        *active = n == 1;
        break;
    case RELIC_LIZARD_TAIL:       /* used (1): no revive left */
    case RELIC_CENTENNIAL_PUZZLE: /* used (1): no draw left this fight */
        *counter = (float)n;
        *active = n == 0;
        break;
    case RELIC_FOSSILIZED_HELIX:  /* Buffer stacks */
    case RELIC_SELF_FORMING_CLAY: /* block at the next turn start */
        *raw = (float)n / 10.0f;
        *active = n > 0;
        break;
    case RELIC_ART_OF_WAR: /* no Attack this turn yet: energy next turn */ *active = n == 0; break;
    case RELIC_POCKETWATCH: /* 3 cards or fewer this turn: 3 draws next turn */
        *counter = (float)min_i(c->cards_played, 4) / 4.0f;
        *active = c->cards_played <= 3;
        break;
    case RELIC_HORN_CLEAT: /* 14 block at turn 2's start */
        *counter = (float)min_i(c->turn, 2) / 2.0f;
        *active = next == 2;
        break;
    case RELIC_CAPTAINS_WHEEL: /* 18 block at turn 3's start */
        *counter = (float)min_i(c->turn, 3) / 3.0f;
        *active = next == 3;
        break;
    case RELIC_STONE_CALENDAR: /* 52 damage to all at the end of turn 7 */
        *counter = (float)min_i(c->turn, 7) / 7.0f;
        *active = c->turn == 7;
        break;
    case RELIC_UNCEASING_TOP: *active = c->hand_n == 0; break;
    default: break; /* always on (Boot, Torii, ...) or spent at battle start */
    }
}

static void relic_tokens(builder *b, const sf_combat *c) {
    for (int i = 0; i < c->relic_n && i < SF_MAX_RELICS; i++) {
        int t = tok(b, SF_TOK_RELIC, SF_FEAT_ID_RELIC + c->relics[i], 0, 0, i);
        float counter, raw, active;
        relic_features(c, i, &counter, &raw, &active);
        put(b, t, RE_COUNTER, counter);
        put(b, t, RE_RAW, raw);
        put(b, t, RE_ACTIVE, active);
    }
}

static void potion_tokens(builder *b, const sf_combat *c, int *tok_of_slot) {
    for (int s = 0; s < SF_MAX_POTION_SLOTS; s++) {
        int p = c->potions[s];
        tok_of_slot[s] = -1;
        if (p == POTION_NONE || p >= POTION_COUNT)
            continue;
        int targeted = potion_needs_target(p);
        int t = tok(b, SF_TOK_POTION, SF_FEAT_ID_POTION + p, 0, targeted, s);
        tok_of_slot[s] = t;
        put(b, t, PO_TARGETED, (float)targeted);
        put(b, t, PO_POTENCY, (float)sf_potions[p].potency / 20.0f);
        put(b, t, PO_DRINKABLE, sf_potions[p].drinkable);
    }
}

/* ------------------------------------------------------------------------
 * Playmath
 * ---------------------------------------------------------------------- */

/* The damage one action deals: per-hit damage per monster for each play
 * (a Double Tap copy is a second play), hits per play, which monsters; and
 * the THORNS damage every living monster takes around each play: Charon's
 * Ashes per card exhausted (before the hits for the cards the play's effect
 * exhausts, after them for the card itself), and after the hits the
 * `splash` amounts in order (Letter Opener; at the end of the turn Stone
 * Calendar, Combust). */
typedef struct strike {
    int per[2][SF_MAX_MONSTERS];
    int hits[2];
    int plays;
    int mask;   /* monsters hit (bit m) */
    int focus;  /* monsters PROGRESS is over (0: mask) */
    int thorns; /* THORNS damage (potions): no Curl Up, no Boot */
    int boot;   /* Boot: an unblocked NORMAL hit of 1..4 deals 5 */
    int ash;    /* THORNS to every monster per card exhausted (Charon's Ashes) */
    int ash_before[2], splash[2][2], ash_after[2];
} strike;

typedef struct outcome {
    int dealt;   /* damage after modifiers, before block, over every monster */
    int killed;  /* bit m: monster m dies */
    int killed1; /* bit m: monster m dies during the first play */
    int broke1;  /* bit m: monster m's block breaks during the first play */
    float progress;
} outcome;

/* THORNS damage `d` to a monster at hp/blk (DT_THORNS: block first, no
 * Curl Up, no Boot); returns what it removed. */
static int thorns_hit(int d, int *hp, int *blk, int *dealt) {
    if (*hp <= 0 || d <= 0)
        return 0;
    *dealt += d;
    int absorbed = min_i(d, *blk);
    *blk -= absorbed;
    int done = absorbed + min_i(d - absorbed, *hp);
    *hp -= d - absorbed;
    return done;
}

/* A hit of `d` that no block stops, after Boot. */
static int boot_hit(const strike *s, int d) {
    return s->boot && d > 0 && d < 5 ? 5 : d;
}

/* Resolve a strike against each monster's block and HP as combat.c does:
 * the relics' THORNS before the hits, then the hits (block absorbs first,
 * then Boot raises an unblocked 1..4 to 5), the relics' THORNS after them;
 * Curl Up's block is queued behind the card and lands before a Double Tap
 * copy plays (combat_drain in resolve_card). */
static void resolve_strike(const sf_combat *c, const strike *s, outcome *o) {
    memset(o, 0, sizeof *o);
    if (!s)
        return;
    int focus = s->focus ? s->focus : s->mask;
    int ehp_sum = 0, done_sum = 0;
    for (int m = 0; m < c->n_mon; m++) {
        int hit = (s->mask & (1 << m)) != 0;
        if (!alive(c, m))
            continue;
        const sf_monster *mo = &c->mon[m];
        int hp = mo->hp, blk = mo->block, curl = s->thorns ? 0 : mo->pw[PW_CURL_UP];
        int done = 0;
        for (int p = 0; p < s->plays && hp > 0; p++) {
            int pend = 0, blk0 = blk;
            for (int e = 0; e < s->ash_before[p]; e++)
                done += thorns_hit(s->ash, &hp, &blk, &o->dealt);
            for (int h = 0; hit && h < s->hits[p] && hp > 0; h++) {
                int d = s->per[p][m];
                int absorbed = min_i(d, blk);
                blk -= absorbed;
                int unb = d - absorbed;
                if (!s->thorns)
                    unb = boot_hit(s, unb);
                o->dealt += absorbed + unb;
                if (unb > 0 && curl > 0 && unb < hp) {
                    pend += curl;
                    curl = 0;
                }
                done += absorbed + min_i(unb, hp);
                hp -= unb;
            }
            for (int e = 0; e < 2; e++)
                done += thorns_hit(s->splash[p][e], &hp, &blk, &o->dealt);
            for (int e = 0; e < s->ash_after[p]; e++)
                done += thorns_hit(s->ash, &hp, &blk, &o->dealt);
            if (p == 0 && blk0 > 0 && blk == 0)
                o->broke1 |= 1 << m;
            blk += pend;
            if (p == 0 && hp <= 0)
                o->killed1 |= 1 << m;
        }
        if (focus & (1 << m)) {
            ehp_sum += mo->hp + mo->block;
            done_sum += done;
        }
        if (hp <= 0)
            o->killed |= 1 << m;
    }
    o->progress = ehp_sum > 0 ? fminf((float)done_sum / (float)ehp_sum, 1.0f) : 0.0f;
}

static int lowest_bit(int v) {
    for (int m = 0; m < 31; m++)
        if (v & (1 << m))
            return m;
    return -1;
}

static int alive_mask(const sf_combat *c) {
    int mask = 0;
    for (int m = 0; m < c->n_mon; m++)
        if (alive(c, m))
            mask |= 1 << m;
    return mask;
}

/* Fill the playmath row. `o` is the resolved damage (NULL: none); `target`
 * a monster slot or -1; `block` what the action adds; `block_left` the
 * player's block once it has resolved (after any THORNS damage it drew);
 * `self_hp` the HP it costs the player. */
static void fill_math(const sf_combat *c, float *q, const outcome *o, int target, int cost,
                      int block, int block_left, int self_hp) {
    outcome none = {0, 0, 0, 0, 0.0f};
    if (!o)
        o = &none;
    int living = alive_mask(c);
    int incoming = 0;
    for (int m = 0; m < c->n_mon; m++)
        if ((living & (1 << m)) && !(o->killed & (1 << m)))
            incoming += intent_total(c, m);
    q[SF_FEAT_Q_DAMAGE] = (float)o->dealt / 50.0f;
    q[SF_FEAT_Q_BLOCK] = (float)block / 50.0f;
    q[SF_FEAT_Q_COST] = (float)cost / 3.0f;
    if (target >= 0)
        q[SF_FEAT_Q_LETHAL] = (o->killed & (1 << target)) != 0;
    else
        q[SF_FEAT_Q_LETHAL] = (float)popcount(o->killed) / (float)max_i(popcount(living), 1);
    q[SF_FEAT_Q_KILLS_ALL] = living != 0 && (o->killed & living) == living;
    q[SF_FEAT_Q_UNCOVERED] = (float)max_i(incoming - block_left, 0) / 50.0f;
    q[SF_FEAT_Q_SELF_HP] = (float)self_hp / 10.0f;
    q[SF_FEAT_Q_PROGRESS] = o->progress;
}

/* fill_math for an action whose THORNS damage to the player, `thorns`,
 * comes after all the block it gives (Burns at the end of the turn). */
static void fill_math_thorns(const sf_combat *c, float *q, const outcome *o, int target, int cost,
                             int block, int self_hp, int thorns) {
    int after = min_i(999, c->block + block);
    fill_math(c, q, o, target, cost, block, max_i(after - thorns, 0),
              self_hp + max_i(thorns - after, 0));
}

/* What one play does to the player, added up while it is followed. */
typedef struct tally {
    int block;   /* block gained                                         */
    int self_hp; /* HP lost net of the heals around the play (Bird-Faced
                    Urn, Lizard Tail); with Fairy in a Bottle, the HP lost
                    before it refills them                                */
} tally;

static void gain_block(sf_combat *s, int amount, tally *t) {
    int before = s->block;
    combat_gain_block(s, amount);
    t->block += s->block - before;
}

/* Hand cards from `from` on are unknown (drawn unseen, made at random):
 * they become CARD_NONE, whose row reads as a Status without tags: a card
 * in hand (Fiend Fire counts it, Sever Soul exhausts it) that is no
 * Strike (Perfected Strike does not count it). Nothing the scratch copy
 * drew or made at random reaches the numbers but how many. */
static void unseen(sf_combat *s, int from) {
    for (int i = max_i(from, 0); i < s->hand_n; i++)
        memset(&s->hand[i], 0, sizeof s->hand[i]);
}

/* relic_splash's hooks besides relics_on_card_played (a card type). */
enum { HOOK_EXHAUST = -1, HOOK_END_TURN = -2 };

/* Run one of the engine's relic hooks `n` times on `s` (hook >= 0:
 * relics_on_card_played for a card of that type; HOOK_EXHAUST:
 * relics_on_exhaust; HOOK_END_TURN: relics_on_player_end_turn) with every
 * living monster standing in at 999 HP without block, then put the
 * monsters back: returns the THORNS damage each call dealt every monster
 * (Letter Opener, Charon's Ashes, Stone Calendar), which resolve_strike
 * lands on the real ones. What else the hook does stays on `s`: Ink
 * Bottle's draw, Dead Branch's card (queued), Bird-Faced Urn's heal,
 * Orichalcum's block, the counters. */
static int relic_splash(sf_combat *s, int hook, int n) {
    if (n <= 0)
        return 0;
    sf_monster keep[SF_MAX_MONSTERS];
    _Static_assert(sizeof keep == sizeof s->mon, "monster array");
    int n_mon = s->n_mon, probe = -1;
    memcpy(keep, s->mon, sizeof keep[0] * (size_t)n_mon);
    for (int m = 0; m < n_mon; m++) {
        if (!alive(s, m))
            continue;
        s->mon[m].hp = s->mon[m].max_hp = 999;
        s->mon[m].block = 0;
        if (probe < 0)
            probe = m;
    }
    for (int i = 0; i < n; i++) {
        if (hook >= 0)
            relics_on_card_played(s, hook);
        else if (hook == HOOK_EXHAUST)
            relics_on_exhaust(s);
        else
            relics_on_player_end_turn(s);
    }
    int dealt = probe >= 0 ? 999 - s->mon[probe].hp : 0;
    memcpy(s->mon, keep, sizeof keep[0] * (size_t)n_mon);
    if (s->n_mon > n_mon) /* none spawns on THORNS damage; keep the zeros if one did */
        memset(&s->mon[n_mon], 0, sizeof keep[0] * (size_t)(s->n_mon - n_mon));
    s->n_mon = (uint8_t)n_mon;
    return dealt / n;
}

/* Follow one play of `k` (prediction `p`) on the scratch position `s`,
 * from which the card and the cards it exhausts have left the hand
 * (take_from_hand), without running the card's effect: what it costs and
 * gives by its own numbers and the engine's own hooks around it, in
 * play.c's order. Its HP cost (before its hits, whose damage is fixed by
 * then: Hemokinesis), its block, the Weak and Vulnerable it gives the
 * monsters in `hit`, the exhaust hooks of the cards its effect exhausts
 * (relics_on_exhaust: Charon's Ashes' damage, recorded in `st` for play
 * `play`; Dead Branch's card); for an Attack the hooks behind its actions
 * (play_attack_hooks: Rage's block, Vigor and Pen Nib spent, Pen Nib's
 * counter, Kunai, Shuriken, Ornamental Fan, Nunchaku) and Sharp Hide's
 * answer from the monsters in `sharp`; the relics' onUseCard
 * (relics_on_card_played: Ink Bottle's draw, Letter Opener's damage,
 * Bird-Faced Urn's heal); the card's own exhaust unless it is a `copy`;
 * Feel No Pain's block for each card exhausted. What the exhausts queue
 * (Dead Branch's card) waits in the queue (settle_play). The rules are the engine's
 * (Intangible, Buffer, Torii, Tungsten Rod, Rupture, Red Skull, Magic
 * Flower, Lizard Tail, Frail, the 999 cap). Returns 0 when the HP cost
 * ends the fight first (the card then deals nothing: Hemokinesis). */
static int follow_play(sf_combat *s, const sf_card *k, const card_pred *p, int hit, unsigned sharp,
                       int copy, strike *st, int play, tally *t) {
    int hp0 = s->hp, potions0 = s->potions_used, lost = 0, ok = 1;
    int hand0 = s->hand_n, known0 = s->draw_known;
    int type = sf_cards[k->id].type;
    int own = copy ? 0 : p->exhausts;
    if (p->self_hp > 0)
        lost += combat_damage_player(s, p->self_hp, DT_HP_LOSS, -1);
    if (s->phase == PH_OVER) {
        ok = 0;
        goto done;
    }
    if (p->block > 0) {
        int per = combat_card_block(s, p->block);
        for (int g = 0; g < p->gains; g++)
            gain_block(s, per, t);
    }
    if (p->raw_block > 0)
        gain_block(s, p->raw_block, t);
    if (p->no_block > 0) /* Panic Button: cards give no block from now on */
        combat_power_player(s, PW_NO_BLOCK, p->no_block, 0);
    for (int m = 0; m < s->n_mon; m++) {
        if (!(hit & (1 << m)))
            continue;
        if (p->weak)
            combat_power_monster(s, m, PW_WEAK, p->weak);
        if (p->vuln)
            combat_power_monster(s, m, PW_VULN, p->vuln);
    }
    int ash = relic_splash(s, HOOK_EXHAUST, p->exhausted);
    st->ash_before[play] = p->exhausted;
    if (type == CT_ATTACK) {
        s->cards_played++;
        s->attacks_played++;
        int before = s->block;
        play_attack_hooks(s);
        t->block += s->block - before;
        lost += play_sharp_hide(s, sharp);
    }
    if (s->phase != PH_OVER) { /* Sharp Hide did not end the fight */
        st->splash[play][0] = relic_splash(s, type, 1);
        ash = max_i(ash, relic_splash(s, HOOK_EXHAUST, own));
        st->ash_after[play] = own;
    }
    st->ash = max_i(st->ash, ash);
    for (int e = 0; e < own + p->exhausted && s->pw[PW_FNP] > 0; e++)
        gain_block(s, s->pw[PW_FNP], t);
    /* The cards drawn (Ink Bottle, Centennial Puzzle) past the known top of
     * the draw pile are not known: they stand in the hand as unknown cards. */
    unseen(s, hand0 + min_i(max_i(s->hand_n - hand0, 0), known0));
done:
    t->self_hp += s->potions_used != potions0 ? lost : hp0 - s->hp;
    return ok;
}

/* Hand card i of `s` and the cards it exhausts from the hand (p->others)
 * leave it, as they have when the card's effect is done. */
static void take_from_hand(sf_combat *s, int i, const card_pred *p) {
    int n = 0;
    for (int j = 0; j < s->hand_n; j++) {
        int attack = sf_cards[s->hand[j].id].type == CT_ATTACK;
        if (j == i || p->others == EXO_HAND || (p->others == EXO_NON_ATTACKS && !attack))
            continue;
        s->hand[n++] = s->hand[j];
    }
    memset(&s->hand[n], 0, sizeof(sf_card) * (size_t)(SF_MAX_HAND - n));
    s->hand_n = (uint8_t)n;
}

/* The played card moves to the discard pile unless it exhausts. */
static void to_discard(sf_combat *s, sf_card k, const card_pred *p) {
    k.flags &= (uint8_t)~CF_ALL_FLAGS;
    if (!p->exhausts && s->discard_n < SF_MAX_PILE)
        s->discard[s->discard_n++] = k;
}

/* What happens on the scratch copy between a play and its Double Tap
 * copy: the card moves to its pile (UseCardAction), Gremlin Horn answers
 * each monster the play killed (`killed`, with the fight still on), and
 * the queue drains (Gremlin Horn's energy and draw, Dead Branch's cards);
 * what reaches the hand there is not known (unseen). */
static void settle_play(sf_combat *s, const sf_card *k, const card_pred *p, int killed) {
    to_discard(s, *k, p);
    for (int m = 0; m < s->n_mon; m++)
        if (killed & (1 << m))
            relics_on_monster_death(s);
    int hand = s->hand_n;
    combat_drain(s);
    unseen(s, hand);
}

/* Playmath of playing hand card i at monster `target` (-1: no target),
 * following play.c on a scratch copy of the position (follow_play): the
 * card's damage (computed when it is played: resolve_strike, Boot after
 * block), the relics' THORNS damage to every monster around it (Charon's
 * Ashes, Letter Opener), its block and HP cost, the hooks behind an Attack,
 * Sharp Hide's answer (from every monster alive when the play starts, even
 * one it kills), the relics' heals and Feel No Pain, Curl Up's block before
 * the next play; then a Double Tap copy, unless its target has died, in the
 * position the first play left (settle_play: the card in its pile, Rampage
 * grown, Vigor and Pen Nib spent or armed, Strength and Dexterity from
 * relics and HP loss, block after Sharp Hide, energy from Nunchaku and
 * Gremlin Horn, the cards Ink Bottle, Centennial Puzzle, Gremlin Horn and
 * Dead Branch brought to the hand, counted but not known). */
static void math_play(const sf_combat *c, int i, int target, float *q) {
    const sf_card *k = &c->hand[i];
    const card_def *d = &sf_cards[k->id];
    card_pred p;
    card_predict(c, k, CV_HAND, &p);
    int cost = combat_card_cost(c, k);
    int energy = cost == COST_X ? c->energy : max_i(cost, 0);
    int attack = d->type == CT_ATTACK;

    strike s;
    memset(&s, 0, sizeof s);
    /* Double Tap copies an Attack, Duplication any card (both at once: a
     * third play, which this math leaves out) */
    int plays = ((attack && c->pw[PW_DOUBLE_TAP] > 0) || c->pw[PW_DUPLICATION] > 0) ? 2 : 1;
    s.plays = 1;
    s.boot = combat_has_relic(c, RELIC_BOOT);
    int living = alive_mask(c);
    int random = 0;
    if (p.aim == AIM_ENEMY && target >= 0 && target < c->n_mon)
        s.mask = 1 << target;
    else if (p.aim == AIM_ALL)
        s.mask = living;
    else if (p.aim == AIM_RANDOM && popcount(living) == 1)
        s.mask = living; /* one living monster: the random pick is certain */
    else if (p.aim == AIM_RANDOM)
        random = 1;
    int aimed = card_target(k) == TGT_ENEMY && target >= 0 && target < c->n_mon;
    s.focus = aimed ? 1 << target : s.mask ? s.mask : living;
    unsigned sharp = 0;
    for (int m = 0; m < c->n_mon && attack; m++)
        if (alive(c, m) && c->mon[m].pw[PW_SHARP_HIDE] > 0)
            sharp |= 1u << m;

    /* The first play, on a scratch copy (Juggernaut off: its damage is not
     * the card's and would need a random monster; Evolve and Fire Breathing
     * off: they answer the cards drawn, which are not known). */
    sf_combat after;
    memcpy(&after, c, sizeof after);
    after.pw[PW_JUGGERNAUT] = after.pw[PW_EVOLVE] = after.pw[PW_FIRE_BREATHING] = 0;
    after.energy = (uint8_t)max_i(c->energy - energy, 0); /* paid (Nunchaku may add) */
    take_from_hand(&after, i, &p);
    tally t = {0, 0};
    if (!follow_play(&after, k, &p, s.mask, sharp, 0, &s, 0, &t)) {
        /* the HP cost ended the fight before the card's actions */
        s.mask = random = 0;
        plays = 1;
        memset(s.ash_before, 0, sizeof s.ash_before);
        memset(s.splash, 0, sizeof s.splash);
        memset(s.ash_after, 0, sizeof s.ash_after);
    }
    int hit = p.aim != AIM_NONE && (s.mask || random);
    for (int m = 0; m < c->n_mon && hit; m++)
        if (alive(c, m))
            s.per[0][m] = combat_card_damage(c, k, p.base, m);
    s.hits[0] = hit ? p.hits : 0;
    outcome o;
    resolve_strike(c, &s, &o);

    /* Does the Double Tap copy play? Not when its target died, nor when the
     * fight is already won. The copy is purged, not exhausted: Feel No Pain
     * and Charon's Ashes count only the cards it exhausts from the hand. */
    int copy = 0;
    if (plays == 2 && p.aim == AIM_ENEMY)
        copy = target >= 0 && !(o.killed1 & (1 << target));
    else if (plays == 2)
        copy = (o.killed1 & living) != living;
    card_pred p2 = p;
    if (copy) {
        settle_play(&after, k, &p, o.killed1);
        /* Hand Drill: the monsters whose block the first play broke gain
         * Vulnerable 2, queued behind it: before the copy */
        for (int m = 0; m < c->n_mon && combat_has_relic(c, RELIC_HAND_DRILL); m++)
            if ((o.broke1 & (1 << m)) && !(o.killed1 & (1 << m)))
                combat_power_monster(&after, m, PW_VULN, 2);
        sf_card k2 = *k;
        k2.misc = (uint8_t)(k2.misc + p.grow);
        uint8_t left = after.energy;
        if (cost == COST_X)
            after.energy = (uint8_t)energy; /* the copy repeats the X */
        card_predict(&after, &k2, CV_COPY, &p2);
        after.energy = left;
        for (int m = 0; m < c->n_mon && hit; m++)
            if (alive(c, m))
                s.per[1][m] = combat_card_damage(&after, &k2, p2.base, m);
        s.hits[1] = hit ? p2.hits : 0;
        take_from_hand(&after, -1, &p2);
        /* unless its HP cost ends the fight before its hit */
        if (follow_play(&after, &k2, &p2, s.mask, sharp & ~(unsigned)o.killed1, 1, &s, 1, &t)) {
            s.plays = 2;
            resolve_strike(c, &s, &o);
        }
    }

    int tgt = aimed ? target : p.aim != AIM_ALL && popcount(s.mask) == 1 ? lowest_bit(s.mask) : -1;
    fill_math(c, q, &o, tgt, energy, t.block, after.block, t.self_hp);
    if (random) {
        /* Several candidates: report the expected damage (Boot as if no
         * block stopped a hit); kills only by the relics' certain damage. */
        int sum0 = 0, sum1 = 0, ehp = 0;
        for (int m = 0; m < c->n_mon; m++) {
            if (living & (1 << m)) {
                sum0 += boot_hit(&s, s.per[0][m]);
                sum1 += boot_hit(&s, s.per[1][m]);
                ehp += c->mon[m].hp + c->mon[m].block;
            }
        }
        int total = s.hits[0] * sum0 + (s.plays == 2 ? s.hits[1] * sum1 : 0);
        int dmg = total / max_i(popcount(living), 1) + o.dealt;
        q[SF_FEAT_Q_DAMAGE] = (float)dmg / 50.0f;
        q[SF_FEAT_Q_PROGRESS] = ehp > 0 ? fminf((float)dmg / (float)ehp, 1.0f) : 0.0f;
    }
}

static void math_potion(const sf_combat *c, int slot, int target, float *q) {
    int p = c->potions[slot];
    int pot = sf_potions[p].potency;
    strike s;
    memset(&s, 0, sizeof s);
    s.plays = 1;
    s.hits[0] = 1;
    s.thorns = 1;
    int block = 0, tgt = -1;
    switch (p) {
    case POTION_FIRE: /* THORNS damage: no Strength, Weak or Vulnerable */
        if (target >= 0 && target < c->n_mon) {
            s.mask = 1 << target;
            s.per[0][target] = pot;
            tgt = target;
        }
        break;
    case POTION_EXPLOSIVE:
        s.mask = alive_mask(c);
        for (int m = 0; m < c->n_mon; m++)
            s.per[0][m] = pot;
        break;
    case POTION_BLOCK: block = pot; break;
    default: break;
    }
    outcome o;
    resolve_strike(c, s.mask ? &s : NULL, &o);
    /* Toy Ornithopter's heal after any potion (Magic Flower scales it); the
     * potion's own heal is not counted. */
    sf_combat after;
    memcpy(&after, c, sizeof after);
    relics_on_potion_used(&after);
    fill_math_thorns(c, q, &o, tgt, 0, block, c->hp - after.hp, 0);
}

/* Every monster alive in `living` dies. */
static int won(const outcome *o, int living) {
    return living != 0 && (o->killed & living) == living;
}

/* End of the turn, followed on a scratch copy as play_end_turn runs up to
 * the monsters' turn: the relics' onPlayerEndTurn (Orichalcum's block,
 * Stone Calendar's damage), Metallicize and Plated Armor, each Burn in hand
 * (THORNS damage to the player: block, Intangible, Buffer, Tungsten Rod),
 * Combust's HP loss and its damage to every monster, Regeneration's heal
 * (Magic Flower), then the Ethereal cards exhausted (Charon's Ashes, Feel
 * No Pain); nothing after the fight is won. */
static void math_end_turn(const sf_combat *c, float *q) {
    sf_combat s;
    memcpy(&s, c, sizeof s);
    s.pw[PW_JUGGERNAUT] = 0; /* its damage goes to a random monster */
    strike st;
    memset(&st, 0, sizeof st);
    st.plays = 1;
    st.focus = alive_mask(c);
    tally t = {0, 0};
    int hp0 = s.hp, potions0 = s.potions_used, lost = 0, b0 = s.block;
    st.splash[0][0] = relic_splash(&s, HOOK_END_TURN, 1);
    t.block += s.block - b0;
    if (s.pw[PW_METALLICIZE] > 0)
        gain_block(&s, s.pw[PW_METALLICIZE], &t);
    if (s.pw[PW_PLATED] > 0)
        gain_block(&s, s.pw[PW_PLATED], &t);
    outcome o;
    resolve_strike(c, &st, &o);
    int living = alive_mask(c);
    for (int i = 0; i < s.hand_n && !won(&o, living) && s.phase != PH_OVER; i++) {
        int burn = card_end_turn_damage(&s.hand[i]);
        if (burn > 0)
            lost += combat_damage_player(&s, burn, DT_THORNS, -1);
    }
    if (!won(&o, living) && s.phase != PH_OVER && s.pw[PW_COMBUST] > 0) {
        lost += combat_damage_player(&s, s.pw[PW_COMBUST_HP], DT_HP_LOSS, -1);
        if (s.phase != PH_OVER) {
            st.splash[0][1] = s.pw[PW_COMBUST];
            resolve_strike(c, &st, &o);
        }
    }
    if (!won(&o, living) && s.phase != PH_OVER) {
        if (s.pw[PW_REGEN] > 0)
            combat_heal(&s, s.pw[PW_REGEN]);
        int ethereal = 0;
        for (int i = 0; i < s.hand_n; i++)
            ethereal += (sf_cards[s.hand[i].id].flags & CD_ETHEREAL) != 0;
        st.ash = relic_splash(&s, HOOK_EXHAUST, ethereal);
        st.ash_after[0] = ethereal;
        for (int e = 0; e < ethereal && s.pw[PW_FNP] > 0; e++)
            gain_block(&s, s.pw[PW_FNP], &t);
        resolve_strike(c, &st, &o);
    }
    int self_hp = s.potions_used != potions0 ? lost : hp0 - s.hp;
    fill_math(c, q, &o, -1, 0, t.block, s.block, self_hp);
}

/* Choosing a card: True Grit's and Burning Pact's choice exhausts it
 * (relics_on_exhaust: Charon's Ashes' damage; Feel No Pain's block). */
static void math_choose(const sf_combat *c, float *q) {
    int block = 0;
    int kind = c->pending.kind;
    strike s;
    memset(&s, 0, sizeof s);
    s.plays = 1;
    s.focus = alive_mask(c);
    if (kind == CH_TRUE_GRIT || kind == CH_BURNING_PACT) {
        sf_combat after;
        memcpy(&after, c, sizeof after);
        s.ash = relic_splash(&after, HOOK_EXHAUST, 1);
        s.ash_after[0] = 1;
        block = c->pw[PW_FNP];
    }
    outcome o;
    resolve_strike(c, &s, &o);
    fill_math_thorns(c, q, &o, -1, 0, block, 0, 0);
}

/* ------------------------------------------------------------------------
 * The tokenizer
 * ---------------------------------------------------------------------- */

static int find_key(const sf_card *keys, const int *toks, int n, const sf_card *k) {
    for (int i = 0; i < n; i++)
        if (!card_cmp(&keys[i], k))
            return toks[i];
    return -1;
}

int sf_engine_feat(const sf_state *s, const sf_action *actions, int n_actions, sf_feat *out) {
    const sf_combat *c = ccombat_of(s);
    memset(out, 0, sizeof *out);
    if (n_actions < 0 || n_actions > SF_FEAT_MAX_QUERIES || (n_actions > 0 && !actions))
        return SF_EINVAL;
    builder b = {out, 0};
    int rc = SF_OK;

    /* 1. Tokens a query can name, first. */
    int ctx = out->n_tokens;
    ctx_token(&b, c);
    int player = player_token(&b, c);
    int mon_tok[SF_MAX_MONSTERS];
    int n_mon = min_i(c->n_mon, SF_MAX_MONSTERS);
    for (int m = 0; m < n_mon; m++)
        mon_tok[m] = alive(c, m) ? monster_token(&b, c, m) : -1;
    for (int m = 0; m < n_mon; m++)
        if (alive(c, m))
            intent_token(&b, c, m);

    /* Hand: one token per distinct card (bytewise, as sf_engine_enumerate
     * collapses them), in order of first appearance. */
    int hand_tok[SF_MAX_HAND];
    int hand_n = min_i(c->hand_n, SF_MAX_HAND);
    /* On a multi-select screen (Elixir, Gambler's Brew) the cards picked so
     * far are tokens of their own, slot 3 = 14 ("picked"). */
    unsigned picked = c->phase == PH_CHOICE ? c->pending.picked : 0;
    for (int i = 0; i < hand_n; i++) {
        unsigned pi = picked >> i & 1u;
        int first = i;
        for (int j = 0; j < i && first == i; j++)
            if (!card_cmp(&c->hand[j], &c->hand[i]) && (picked >> j & 1u) == pi)
                first = j;
        if (first != i) {
            hand_tok[i] = hand_tok[first];
            continue;
        }
        int count = 0;
        for (int j = i; j < hand_n; j++)
            count += !card_cmp(&c->hand[j], &c->hand[i]) && (picked >> j & 1u) == pi;
        hand_tok[i] = card_token(&b, c, SF_TOK_CARD_HAND, &c->hand[i], count, pi ? 14 : 0);
    }

    /* The open choice's pile when it is not the hand (Headbutt, Exhume,
     * Liquid Memories), or a Discovery's offered cards: hand-card tokens
     * with slot 3 = 15 ("offered"), as the pick goes to the hand. */
    int choice = c->phase == PH_CHOICE ? c->pending.kind : CH_NONE;
    int choice_zone = combat_choice_zone(choice);
    sf_card keys[SF_MAX_PILE];
    int keys_tok[SF_MAX_PILE], n_keys = 0;
    if (choice_zone == ZONE_OFFER) {
        for (int i = 0; i < SF_OFFER_N; i++) {
            keys[n_keys] = c->pending.offer[i];
            keys_tok[n_keys++] = card_token(&b, c, SF_TOK_CARD_HAND, &c->pending.offer[i], 1, 15);
        }
    } else if (choice_zone == ZONE_DISCARD)
        n_keys = pile_tokens(&b, c, SF_TOK_CARD_DISCARD, c->discard, c->discard_n, keys, keys_tok);
    else if (choice_zone == ZONE_EXHAUST)
        n_keys = pile_tokens(&b, c, SF_TOK_CARD_EXHAUST, c->exhaust, c->exhaust_n, keys, keys_tok);
    else if (choice_zone == ZONE_DRAW) /* Secret Technique, Secret Weapon */
        n_keys = pile_tokens(&b, c, SF_TOK_CARD_DRAW, c->draw, c->draw_n, keys, keys_tok);

    int potion_tok[SF_MAX_POTION_SLOTS];
    potion_tokens(&b, c, potion_tok);

    /* 2. Everything else. */
    status_tokens(&b, c->pw, PW_N, c->just, SF_FEAT_OWNER_PLAYER);
    for (int m = 0; m < n_mon; m++)
        if (alive(c, m))
            status_tokens(&b, c->mon[m].pw, PW_MON_N, c->mon[m].just, 1 + m);

    /* Draw pile: known top cards by position (1 = top), the rest as a
     * multiset. */
    int draw_n = min_i(c->draw_n, SF_MAX_PILE);
    int known = min_i(c->draw_known, draw_n);
    if (choice_zone == ZONE_DRAW)
        known = draw_n = 0; /* the whole pile is above, as a multiset */
    for (int p = 1; p <= known; p++)
        card_token(&b, c, SF_TOK_CARD_DRAW, &c->draw[draw_n - p], 1, min_i(p, 15));
    pile_tokens(&b, c, SF_TOK_CARD_DRAW, c->draw, draw_n - known, NULL, NULL);
    if (choice_zone != ZONE_DISCARD)
        pile_tokens(&b, c, SF_TOK_CARD_DISCARD, c->discard, c->discard_n, NULL, NULL);
    if (choice_zone != ZONE_EXHAUST)
        pile_tokens(&b, c, SF_TOK_CARD_EXHAUST, c->exhaust, c->exhaust_n, NULL, NULL);
    relic_tokens(&b, c);
    if (b.full)
        rc = SF_EFULL;

    /* 3. Queries. */
    uint8_t opts[SF_MAX_PILE];
    sf_card opt_cards[SF_MAX_PILE];
    int n_opts = choice != CH_NONE ? combat_choice_options(c, choice, opts, opt_cards) : 0;
    out->n_queries = n_actions;
    for (int q = 0; q < n_actions; q++) {
        sf_action a = actions[q];
        int what = -1, target = player, ok = 0;
        float *qc = out->qcont[q];
        int tgt_mon =
            a.target != SF_NO_TARGET && a.target < n_mon && alive(c, a.target) ? a.target : -1;
        if (tgt_mon >= 0)
            target = mon_tok[tgt_mon];
        switch (a.kind) {
        case SF_ACT_END_TURN:
            what = ctx;
            ok = c->phase == PH_PLAYER;
            if (ok)
                math_end_turn(c, qc);
            break;
        case SF_ACT_PLAY:
            if (c->phase == PH_PLAYER && a.index < hand_n) {
                what = hand_tok[a.index];
                ok = 1;
                math_play(c, a.index, tgt_mon, qc);
            }
            break;
        case SF_ACT_POTION:
            if (c->phase == PH_PLAYER && a.index < SF_MAX_POTION_SLOTS &&
                potion_tok[a.index] >= 0) {
                what = potion_tok[a.index];
                ok = 1;
                math_potion(c, a.index, tgt_mon, qc);
            }
            break;
        case SF_ACT_CHOOSE:
            for (int i = 0; i < n_opts && !ok; i++) {
                if (opts[i] != a.index)
                    continue;
                if (opt_cards[i].id == CARD_NONE)
                    what = ctx; /* a multi-select's "done" */
                else if (choice_zone == ZONE_HAND)
                    what = opts[i] < hand_n ? hand_tok[opts[i]] : -1;
                else
                    what = find_key(keys, keys_tok, n_keys, &opt_cards[i]);
                ok = 1;
                math_choose(c, qc);
            }
            break;
        default: break;
        }
        if (!ok) {
            memset(qc, 0, sizeof(float) * SF_FEAT_NQCONT);
            what = ctx;
            target = player;
            rc = SF_EINVAL;
        }
        out->query[q][0] = (uint16_t)(what >= 0 ? what : ctx);
        out->query[q][1] = (uint16_t)(target >= 0 ? target : player);
    }
    return rc;
}
