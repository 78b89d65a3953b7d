/*
 * json.c — a state as a JSON document (jansson) and back.
 *
 * The readable fields are for people and logs; only "raw" (the exact state
 * bytes, base64 via libsodium) is read back, together with
 * "engine_version" (a saved state replays only under the engine version
 * that wrote it) and, when present, "identity" (a check that the bytes were
 * not edited). Because "raw" comes from disk, sf_engine_from_json()
 * validates every field the rules use as an index or a count before the
 * state is accepted, so no byte string can make the engine read or write
 * out of bounds.
 */
#include <errno.h>
#include <jansson.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/internal.h"

static const char *const phase_names[] = {"player", "choice", "over"};

static const char *const intent_names[INT_COUNT] = {
    [INT_NONE] = "none",
    [INT_ATTACK] = "attack",
    [INT_ATTACK_BUFF] = "attack_buff",
    [INT_ATTACK_DEBUFF] = "attack_debuff",
    [INT_ATTACK_DEFEND] = "attack_defend",
    [INT_BUFF] = "buff",
    [INT_DEBUFF] = "debuff",
    [INT_STRONG_DEBUFF] = "strong_debuff",
    [INT_DEFEND] = "defend",
    [INT_DEFEND_BUFF] = "defend_buff",
    [INT_DEFEND_DEBUFF] = "defend_debuff",
    [INT_ESCAPE] = "escape",
    [INT_SLEEP] = "sleep",
    [INT_STUN] = "stun",
    [INT_UNKNOWN] = "unknown",
    [INT_MAGIC] = "magic",
};

/* A monster's "flags", in this order. */
static const struct {
    int flag;
    const char *name;
} monster_flag_names[] = {
    {MF_DEAD, "dead"},         {MF_ESCAPED, "escaped"},     {MF_ASLEEP, "asleep"},
    {MF_ESCAPING, "escaping"}, {MF_DEFENSIVE, "defensive"}, {MF_SPLIT_DONE, "split"},
};

/* ------------------------------------------------------------------------
 * State -> JSON
 * ---------------------------------------------------------------------- */

/* jansson's setters return -1 only on allocation failure; collect them. */
typedef struct jb {
    int failed;
} jb;

static void set(jb *b, json_t *obj, const char *key, json_t *v) {
    if (!v || !obj || json_object_set_new(obj, key, v) < 0)
        b->failed = 1;
}

static void append(jb *b, json_t *arr, json_t *v) {
    if (!v || !arr || json_array_append_new(arr, v) < 0)
        b->failed = 1;
}

/* "Strike", "Bash+", "Searing Blow+3". */
static json_t *card_json(const sf_card *k) {
    const char *name = k->id < CARD_COUNT ? sf_cards[k->id].name : "?";
    if (k->upg == 0)
        return json_string(name);
    if (k->upg == 1)
        return json_sprintf("%s+", name);
    return json_sprintf("%s+%d", name, k->upg);
}

static json_t *pile_json(jb *b, const sf_card *pile, int n) {
    json_t *arr = json_array();
    for (int i = 0; i < n; i++)
        append(b, arr, card_json(&pile[i]));
    return arr;
}

static json_t *powers_json(jb *b, const int16_t *pw, int n) {
    json_t *obj = json_object();
    for (int i = 0; i < n; i++)
        if (pw[i])
            set(b, obj, sf_power_names[i], json_integer(pw[i]));
    return obj;
}

static json_t *monster_json(jb *b, const sf_combat *c, int m) {
    const sf_monster *mo = &c->mon[m];
    json_t *o = json_object();
    set(b, o, "slot", json_integer(m));
    set(b, o, "name", json_string(sf_monsters[mo->id].name));
    set(b, o, "hp", json_integer(mo->hp));
    set(b, o, "max_hp", json_integer(mo->max_hp));
    set(b, o, "block", json_integer(mo->block));
    json_t *intent = json_object();
    int hits = 0, dmg = monster_intent_damage(c, m, &hits);
    set(b, intent, "move", json_string(sf_moves[mo->move].name));
    set(b, intent, "kind", json_string(intent_names[sf_moves[mo->move].intent]));
    if (dmg >= 0) {
        set(b, intent, "damage", json_integer(dmg));
        set(b, intent, "hits", json_integer(hits));
    }
    set(b, o, "intent", intent);
    set(b, o, "powers", powers_json(b, mo->pw, PW_MON_N));
    json_t *flags = json_array();
    for (size_t i = 0; i < sizeof monster_flag_names / sizeof monster_flag_names[0]; i++)
        if (mo->flags & monster_flag_names[i].flag)
            append(b, flags, json_string(monster_flag_names[i].name));
    set(b, o, "flags", flags);
    return o;
}

/* The identity as 32 hex digits, high word first. */
static void identity_hex(const sf_state *s, char out[33]) {
    sf_identity id = sf_engine_identity(s);
    uint8_t idb[16];
    for (int i = 0; i < 8; i++) {
        idb[i] = (uint8_t)(id.hi >> (56 - 8 * i));
        idb[8 + i] = (uint8_t)(id.lo >> (56 - 8 * i));
    }
    sf_hex(idb, sizeof idb, out);
}

json_t *sf_engine_to_json(const sf_state *s) {
    const sf_combat *c = ccombat_of(s);
    jb b = {0};
    json_t *doc = json_object();
    if (!doc)
        return NULL;
    set(&b, doc, "engine_version", json_integer(SF_ENGINE_VERSION));
    set(&b, doc, "encounter", json_string(sf_encounters[c->encounter % ENC_COUNT].name));
    set(&b, doc, "ascension", json_integer(c->ascension));
    set(&b, doc, "floor", json_integer(c->floor));
    set(&b, doc, "turn", json_integer(c->turn));
    set(&b, doc, "max_turns", json_integer(c->max_turns));
    set(&b, doc, "phase", json_string(phase_names[c->phase <= PH_OVER ? c->phase : PH_OVER]));
    if (c->phase == PH_OVER)
        set(&b, doc, "won", json_boolean((c->flags & FL_WON) != 0));
    if (c->engine_limit)
        set(&b, doc, "engine_limit", json_true());
    if (c->turn_limit)
        set(&b, doc, "turn_limit", json_true());
    if (c->escaped)
        set(&b, doc, "escaped", json_true());
    set(&b, doc, "monster_hp_pool", json_integer(c->mon_hp_pool));
    if (c->phase == PH_CHOICE) {
        json_t *ch = json_object();
        set(&b, ch, "kind", json_string(sf_choices[c->pending.kind % CH_COUNT].name));
        if (c->pending.active)
            set(&b, ch, "card", card_json(&c->pending.card));
        set(&b, ch, "amount", json_integer(c->pending.amount));
        if (combat_choice_zone(c->pending.kind) == ZONE_OFFER)
            set(&b, ch, "offer", pile_json(&b, c->pending.offer, SF_OFFER_N));
        if (c->pending.picked) {
            json_t *picked = json_array();
            for (int i = 0; i < SF_MAX_HAND; i++)
                if (c->pending.picked & (1u << i))
                    append(&b, picked, json_integer(i));
            set(&b, ch, "picked", picked);
        }
        set(&b, doc, "choice", ch);
    }
    set(&b, doc, "belief", json_boolean((c->flags & FL_BELIEF) != 0));

    json_t *pl = json_object();
    set(&b, pl, "hp", json_integer(c->hp));
    set(&b, pl, "max_hp", json_integer(c->max_hp));
    set(&b, pl, "block", json_integer(c->block));
    set(&b, pl, "energy", json_integer(c->energy));
    set(&b, pl, "gold", json_integer(c->gold));
    set(&b, pl, "powers", powers_json(&b, c->pw, PW_N));
    set(&b, doc, "player", pl);

    json_t *mons = json_array();
    for (int m = 0; m < c->n_mon && m < SF_MAX_MONSTERS; m++)
        append(&b, mons, monster_json(&b, c, m));
    set(&b, doc, "monsters", mons);

    set(&b, doc, "hand", pile_json(&b, c->hand, c->hand_n));
    /* bottom first: the last element is the top of the draw pile */
    set(&b, doc, "draw", pile_json(&b, c->draw, c->draw_n));
    set(&b, doc, "draw_known", json_integer(c->draw_known));
    set(&b, doc, "discard", pile_json(&b, c->discard, c->discard_n));
    set(&b, doc, "exhaust", pile_json(&b, c->exhaust, c->exhaust_n));
    set(&b, doc, "cards_played", json_integer(c->cards_played));

    json_t *relics = json_array();
    json_t *counters = json_array();
    for (int i = 0; i < c->relic_n && i < SF_MAX_RELICS; i++) {
        append(&b, relics, json_string(sf_relics[c->relics[i] % RELIC_COUNT].name));
        append(&b, counters, json_integer(c->relic_counter[i]));
    }
    set(&b, doc, "relics", relics);
    set(&b, doc, "relic_counters", counters);
    json_t *potions = json_array();
    for (int i = 0; i < c->potion_slots && i < SF_MAX_POTION_SLOTS; i++)
        append(&b, potions,
               c->potions[i] == POTION_NONE
                   ? json_null()
                   : json_string(sf_potions[c->potions[i] % POTION_COUNT].name));
    set(&b, doc, "potions", potions);

    char idhex[33];
    identity_hex(s, idhex);
    set(&b, doc, "identity", json_string(idhex));

    char raw[sodium_base64_ENCODED_LEN(SF_STATE_BYTES, sodium_base64_VARIANT_ORIGINAL)];
    sodium_bin2base64(raw, sizeof raw, s->opaque, SF_STATE_BYTES, sodium_base64_VARIANT_ORIGINAL);
    set(&b, doc, "raw", json_string(raw));
    if (b.failed) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* ------------------------------------------------------------------------
 * JSON -> state
 * ---------------------------------------------------------------------- */

static int all_zero(const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

static int bad(sf_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(sf_err *err, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sf_err_set(err, SF_EFORMAT, "state json: raw: %s", msg);
}

static int check_card(const sf_card *k, const char *pile, int i, sf_err *err) {
    if (k->id == CARD_NONE || k->id >= CARD_COUNT)
        return bad(err, "%s[%d]: card id %d out of 1..%d", pile, i, k->id, CARD_COUNT - 1);
    if (k->cost < COST_UNPLAYABLE)
        return bad(err, "%s[%d]: cost %d", pile, i, k->cost);
    if (k->flags & ~CF_ALL_FLAGS)
        return bad(err, "%s[%d]: unknown flags 0x%x", pile, i, k->flags);
    return SF_OK;
}

static int check_pile(const sf_card *pile, int n, int cap, const char *name, sf_err *err) {
    if (n > cap)
        return bad(err, "%s count %d exceeds %d", name, n, cap);
    for (int i = 0; i < n; i++) {
        int rc = check_card(&pile[i], name, i, err);
        if (rc < 0)
            return rc;
    }
    if (!all_zero(pile + n, sizeof(sf_card) * (size_t)(cap - n)))
        return bad(err, "%s: unused slots after %d are not zero", name, n);
    return SF_OK;
}

static int check_powers(const int16_t *pw, int n, const char *who, sf_err *err) {
    for (int i = 0; i < n; i++)
        if (pw[i] < -999 || pw[i] > 999)
            return bad(err, "%s power %s = %d out of -999..999", who, sf_power_names[i], pw[i]);
    return SF_OK;
}

/* Everything the rules use as an index, a count or a table key. */
static int check_state(const sf_combat *c, const uint8_t *bytes, sf_err *err) {
    int rc;
    if (c->max_hp < 1 || c->hp < 0 || c->hp > c->max_hp)
        return bad(err, "player hp %d / max_hp %d out of range", c->hp, c->max_hp);
    if (c->block < 0 || c->block > 999)
        return bad(err, "player block %d out of 0..999", c->block);
    if ((rc = check_powers(c->pw, PW_N, "player", err)) < 0)
        return rc;
    if (c->phase > PH_OVER)
        return bad(err, "phase %d out of 0..%d", c->phase, PH_OVER);
    if (c->encounter >= ENC_COUNT)
        return bad(err, "encounter %d out of 0..%d", c->encounter, ENC_COUNT - 1);
    if (c->ascension > SF_MAX_ASCENSION)
        return bad(err, "ascension %d out of 0..%d", c->ascension, SF_MAX_ASCENSION);
    if (c->n_mon > SF_MAX_MONSTERS)
        return bad(err, "monster count %d exceeds %d", c->n_mon, SF_MAX_MONSTERS);
    for (int m = 0; m < c->n_mon; m++) {
        const sf_monster *mo = &c->mon[m];
        if (mo->id == MON_NONE || mo->id >= MON_COUNT)
            return bad(err, "monster[%d]: id %d out of 1..%d", m, mo->id, MON_COUNT - 1);
        if (mo->move >= MV_COUNT || mo->hist[0] >= MV_COUNT || mo->hist[1] >= MV_COUNT)
            return bad(err, "monster[%d]: move ids %d/%d/%d out of 0..%d", m, mo->move, mo->hist[0],
                       mo->hist[1], MV_COUNT - 1);
        /* The announced move and the two before it: moves of this monster
         * (the intent, the damage formula and the move rules index them). */
        const uint8_t mv3[3] = {mo->move, mo->hist[0], mo->hist[1]};
        for (int k = 0; k < 3; k++) {
            if (monster_has_move(mo->id, mv3[k]))
                continue;
            /* move names repeat across monsters (Bellow, Tackle): name the owner */
            int owner = MON_NONE + 1;
            while (owner < MON_COUNT && !monster_has_move(owner, mv3[k]))
                owner++;
            return bad(err, "monster[%d] (%s): %s move \"%s\" (%s's) is not one of its moves", m,
                       sf_monsters[mo->id].name, k == 0 ? "announced" : "earlier",
                       sf_moves[mv3[k]].name,
                       owner < MON_COUNT ? sf_monsters[owner].name : "no monster");
        }
        if (mo->max_hp < 1 || mo->hp < 0 || mo->hp > mo->max_hp)
            return bad(err, "monster[%d]: hp %d / max_hp %d out of range", m, mo->hp, mo->max_hp);
        if (mo->block < 0 || mo->block > 999)
            return bad(err, "monster[%d]: block %d out of 0..999", m, mo->block);
        char who[32];
        snprintf(who, sizeof who, "monster[%d]", m);
        if ((rc = check_powers(mo->pw, PW_MON_N, who, err)) < 0)
            return rc;
    }
    for (int m = c->n_mon; m < SF_MAX_MONSTERS; m++)
        if (!all_zero(&c->mon[m], sizeof c->mon[m]))
            return bad(err, "monster[%d]: unused slot is not zero", m);
    if (c->draw_known > c->draw_n)
        return bad(err, "draw_known %d exceeds draw count %d", c->draw_known, c->draw_n);
    if ((rc = check_pile(c->hand, c->hand_n, SF_MAX_HAND, "hand", err)) < 0 ||
        (rc = check_pile(c->draw, c->draw_n, SF_MAX_PILE, "draw", err)) < 0 ||
        (rc = check_pile(c->discard, c->discard_n, SF_MAX_PILE, "discard", err)) < 0 ||
        (rc = check_pile(c->exhaust, c->exhaust_n, SF_MAX_PILE, "exhaust", err)) < 0)
        return rc;

    /* Between steps a card is in limbo only while a choice screen is open. */
    const sf_pending *p = &c->pending;
    if (c->phase == PH_CHOICE) {
        /* A card's screen has its card in limbo; a potion's has none. */
        int potion = combat_choice_cardless(p->kind);
        if (p->kind == CH_NONE || p->kind >= CH_COUNT || p->active == potion)
            return bad(err, "choice screen %d open %s a card in play (active %d)", p->kind,
                       potion ? "with" : "without", p->active);
        if (p->active && (rc = check_card(&p->card, "pending", 0, err)) < 0)
            return rc;
        if (p->queue_n > SF_CARD_QUEUE)
            return bad(err, "pending queue count %d exceeds %d", p->queue_n, SF_CARD_QUEUE);
        for (int i = 0; i < p->queue_n; i++) {
            if ((rc = check_card(&p->queue[i], "pending queue", i, err)) < 0)
                return rc;
            if (p->queue_target[i] != SF_NO_TARGET && p->queue_target[i] >= SF_MAX_MONSTERS)
                return bad(err, "pending queue target %d out of 0..%d", p->queue_target[i],
                           SF_MAX_MONSTERS - 1);
        }
        if (combat_choice_zone(p->kind) == ZONE_OFFER)
            for (int i = 0; i < SF_OFFER_N; i++)
                if ((rc = check_card(&p->offer[i], "pending offer", i, err)) < 0)
                    return rc;
        if (p->picked >> c->hand_n)
            return bad(err, "pending picks 0x%x past the hand (%d cards)", p->picked, c->hand_n);
        /* Targets index the monster array (liveness is checked at use). */
        if (p->target != SF_NO_TARGET && p->target >= SF_MAX_MONSTERS)
            return bad(err, "pending target %d out of 0..%d", p->target, SF_MAX_MONSTERS - 1);
    } else if (!all_zero(p, sizeof *p)) {
        return bad(err, "a card is in play outside a choice screen (phase %d)", c->phase);
    }

    if (c->relic_n > SF_MAX_RELICS)
        return bad(err, "relic count %d exceeds %d", c->relic_n, SF_MAX_RELICS);
    for (int i = 0; i < SF_MAX_RELICS; i++) {
        int ok = i < c->relic_n ? c->relics[i] > RELIC_NONE && c->relics[i] < RELIC_COUNT
                                : c->relics[i] == RELIC_NONE && c->relic_counter[i] == 0;
        if (!ok)
            return bad(err, "relics[%d]: id %d", i, c->relics[i]);
    }
    if (c->potion_slots < 1 || c->potion_slots > SF_MAX_POTION_SLOTS)
        return bad(err, "potion slots %d out of 1..%d", c->potion_slots, SF_MAX_POTION_SLOTS);
    for (int i = 0; i < SF_MAX_POTION_SLOTS; i++)
        if (c->potions[i] >= POTION_COUNT || (i >= c->potion_slots && c->potions[i]))
            return bad(err, "potions[%d]: id %d", i, c->potions[i]);
    for (int i = 0; i < c->relic_n && i < SF_MAX_RELICS; i++) {
        int max = sf_relics[c->relics[i]].counter_max;
        if (max && (c->relic_counter[i] < 0 || c->relic_counter[i] >= max))
            return bad(err, "relic_counter[%d]: %s counter %d outside 0..%d", i,
                       sf_relics[c->relics[i]].name, c->relic_counter[i], max - 1);
    }
    if (c->gold < 0)
        return bad(err, "gold %d is negative", c->gold);
    for (int i = 0; i < SF_NUM_STREAMS; i++)
        if (c->rng[i].pad)
            return bad(err, "random stream %d: padding %d is not zero", i, (int)c->rng[i].pad);

    /* Deferred effects: known kinds, monster slots in range, unused zero. */
    if (c->defer_n > SF_DEFER_CAP)
        return bad(err, "deferred effect count %d exceeds %d", c->defer_n, SF_DEFER_CAP);
    for (int i = 0; i < c->defer_n; i++) {
        const sf_deferred *q = &c->defer[i];
        if (q->kind == DQ_NONE || q->kind > DQ_GUARDIAN)
            return bad(err, "deferred effect %d: kind %d", i, q->kind);
        if ((q->kind == DQ_CURL_UP || q->kind == DQ_GUARDIAN) && q->arg >= SF_MAX_MONSTERS)
            return bad(err, "deferred effect %d: monster slot %d", i, q->arg);
    }
    if (!all_zero(c->defer + c->defer_n, sizeof(sf_deferred) * (SF_DEFER_CAP - c->defer_n)))
        return bad(err, "deferred effects: unused entries after %d are not zero", c->defer_n);

    /* The rules of a position between steps, as legal play keeps them (the
     * engine soak test checks the same): a fight in progress has a living
     * player, at least one living monster and no outcome; one that is over
     * has exactly one outcome. Without them a search would label an
     * impossible position with full confidence. */
    if (c->turn < 1)
        return bad(err, "turn %d: turns count from 1", c->turn);
    if (c->max_turns < 1 || c->max_turns > SF_MAX_TURNS_LIMIT)
        return bad(err, "max_turns %d out of 1..%d", c->max_turns, SF_MAX_TURNS_LIMIT);
    if (c->turn > c->max_turns)
        return bad(err, "turn %d is past the turn cap %d", c->turn, c->max_turns);
    /* SF_MAX_TURN_ACTIONS itself only in the fight the backstop ended */
    if (c->turn_actions > SF_MAX_TURN_ACTIONS ||
        (c->turn_actions == SF_MAX_TURN_ACTIONS && !(c->phase == PH_OVER && c->turn_limit)))
        return bad(err, "turn_actions %d: a turn ends at %d", c->turn_actions, SF_MAX_TURN_ACTIONS);
    if (c->energy > 99)
        return bad(err, "energy %d out of 0..99", c->energy);
    int won = !!(c->flags & FL_WON), lost = !!(c->flags & FL_LOST);
    if (c->phase == PH_OVER) {
        if (won + lost != 1)
            return bad(err, "the fight is over but its outcome flags say won %d, lost %d", won,
                       lost);
        if (c->engine_limit && !lost)
            return bad(err, "an engine-limit end that is not a loss");
        if (c->turn_limit && !lost)
            return bad(err, "a turn-limit end that is not a loss");
        if (c->turn_limit && c->engine_limit)
            return bad(err, "both an engine-limit and a turn-limit end");
    } else {
        if (won || lost)
            return bad(err, "phase %s but the outcome flags say won %d, lost %d",
                       phase_names[c->phase], won, lost);
        if (c->engine_limit || c->turn_limit)
            return bad(err, "%s set in phase %s (it ends the fight)",
                       c->engine_limit ? "engine_limit" : "turn_limit", phase_names[c->phase]);
        if (c->hp < 1)
            return bad(err, "player hp 0 in phase %s (a dead player ends the fight)",
                       phase_names[c->phase]);
        if (combat_alive_count(c) < 1)
            return bad(err, "no living monster in phase %s (the fight would be over)",
                       phase_names[c->phase]);
        for (int m = 0; m < c->n_mon; m++) {
            if (combat_alive(c, m) && c->mon[m].hp < 1)
                return bad(err, "monster[%d]: hp 0 but not dead", m);
            if (c->phase == PH_PLAYER && !combat_alive(c, m))
                return bad(err, "monster[%d]: dead or escaped but kept (compacted between turns)",
                           m);
        }
    }

    /* Every living monster's HP entered the fight through the pool. */
    int living_hp = 0;
    for (int m = 0; m < c->n_mon; m++)
        if (combat_alive(c, m))
            living_hp += c->mon[m].hp;
    if (c->mon_hp_pool < living_hp)
        return bad(err, "monster_hp_pool %d is below the living monsters' HP %d", c->mon_hp_pool,
                   living_hp);

    /* Padding and the tail of the opaque buffer are zero in every state the
     * engine makes; the identity hash depends on it. */
    size_t pad0 = offsetof(sf_combat, defer) + sizeof c->defer;
    if (!all_zero(bytes + pad0, offsetof(sf_combat, rng) - pad0))
        return bad(err, "padding before the random streams is not zero");
    if (!all_zero(bytes + sizeof(sf_combat), SF_STATE_BYTES - sizeof(sf_combat)))
        return bad(err, "bytes after the state are not zero");
    return SF_OK;
}

int sf_engine_from_json(const json_t *doc, sf_state *s, sf_err *err) {
    if (!json_is_object(doc))
        return sf_err_set(err, SF_EFORMAT, "state json: not an object");
    const json_t *ver = json_object_get(doc, "engine_version");
    if (!ver)
        return sf_err_set(err, SF_EFORMAT, "state json: field \"engine_version\" is missing");
    if (!json_is_integer(ver))
        return sf_err_set(err, SF_EFORMAT,
                          "state json: field \"engine_version\" is not an integer");
    if (json_integer_value(ver) != SF_ENGINE_VERSION)
        return sf_err_set(err, SF_EVERSION,
                          "state json: engine_version %lld does not match this engine (%d); a "
                          "saved state replays only under the engine that wrote it",
                          (long long)json_integer_value(ver), SF_ENGINE_VERSION);
    const json_t *raw = json_object_get(doc, "raw");
    if (!raw)
        return sf_err_set(err, SF_EFORMAT, "state json: field \"raw\" is missing");
    if (!json_is_string(raw))
        return sf_err_set(err, SF_EFORMAT, "state json: field \"raw\" is not a string");
    const char *text = json_string_value(raw);
    size_t len = json_string_length(raw);
    _Alignas(16) uint8_t bytes[SF_STATE_BYTES];
    size_t n = 0;
    const char *end = NULL;
    if (sodium_base642bin(bytes, sizeof bytes, text, len, NULL, &n, &end,
                          sodium_base64_VARIANT_ORIGINAL) != 0 ||
        end != text + len)
        return sf_err_set(err, SF_EFORMAT,
                          "state json: field \"raw\" is not base64 of %d bytes (bad character or "
                          "too long near offset %zu)",
                          SF_STATE_BYTES, end ? (size_t)(end - text) : (size_t)0);
    if (n != SF_STATE_BYTES)
        return sf_err_set(err, SF_EFORMAT, "state json: field \"raw\" holds %zu bytes, want %d", n,
                          SF_STATE_BYTES);
    sf_state tmp;
    memcpy(tmp.opaque, bytes, SF_STATE_BYTES);
    int rc = check_state(ccombat_of(&tmp), bytes, err);
    if (rc < 0)
        return rc;
    if (!sf_engine_is_terminal(&tmp)) {
        sf_action acts[SF_MAX_ACTIONS];
        if (sf_engine_enumerate(&tmp, acts, SF_MAX_ACTIONS) < 1)
            return bad(err, "the position has no legal action (phase %s)",
                       phase_names[ccombat_of(&tmp)->phase]);
    }
    const json_t *ident = json_object_get(doc, "identity");
    if (ident) {
        char want[33];
        identity_hex(&tmp, want);
        if (!json_is_string(ident))
            return sf_err_set(err, SF_EFORMAT, "state json: field \"identity\" is not a string");
        if (strcmp(want, json_string_value(ident)) != 0)
            return sf_err_set(err, SF_ECORRUPT,
                              "state json: field \"identity\" does not match the raw bytes "
                              "(the state was edited or damaged)");
    }
    memcpy(s, &tmp, sizeof tmp);
    return SF_OK;
}

int sf_engine_load_file(const char *path, sf_state *s, sf_err *err) {
    struct stat st;
    if (stat(path, &st) != 0)
        return sf_err_set(err, errno == ENOENT ? SF_ENOTFOUND : SF_EIO, "%s: %s", path,
                          strerror(errno));
    if (S_ISDIR(st.st_mode))
        return sf_err_set(err, SF_EFORMAT, "%s: is a directory, not a state file", path);
    /* a state document is a few KiB; refuse before parsing a huge file */
    if (S_ISREG(st.st_mode) && st.st_size > (1 << 20))
        return sf_err_set(err, SF_EFORMAT, "%s: %lld bytes; a state file is at most 1 MiB", path,
                          (long long)st.st_size);
    json_error_t je;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!doc) {
        if (je.line > 0)
            return sf_err_set(err, SF_EFORMAT, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        return sf_err_set(err, SF_EFORMAT, "%s: %s", path, je.text);
    }
    int rc = sf_engine_from_json(doc, s, err);
    json_decref(doc);
    if (rc < 0)
        sf_err_prefix(err, "%s", path);
    return rc;
}
