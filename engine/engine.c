/*
 * engine.c — the public API of engine.h: names, fight setup, enumerate /
 * apply, outcome and observation, identity, re-seeding, the belief root,
 * and the Act-1 gauntlet.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "engine/internal.h"

_Static_assert(sizeof(sf_card) == 5, "sf_card is 5 packed bytes");

/* ------------------------------------------------------------------------
 * Names
 * ---------------------------------------------------------------------- */

/* Compare names ignoring case, spaces, '-', '_' and apostrophes, so
 * "pommel_strike", "Pommel Strike" and "POMMELSTRIKE" all match. */
int engine_name_eq(const char *a, const char *b) {
    for (;;) {
        while (*a && (*a == ' ' || *a == '-' || *a == '_' || *a == '\''))
            a++;
        while (*b && (*b == ' ' || *b == '-' || *b == '_' || *b == '\''))
            b++;
        if (!*a || !*b)
            return !*a && !*b;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
        a++, b++;
    }
}

int sf_card_lookup(const char *name) {
    for (int i = 1; i < CARD_COUNT; i++)
        if (name && engine_name_eq(name, sf_cards[i].name))
            return i;
    return SF_ENOTFOUND;
}
const char *sf_card_name(int id) {
    return id >= 0 && id < CARD_COUNT ? sf_cards[id].name : NULL;
}
int sf_card_count(void) {
    return CARD_COUNT;
}
_Static_assert((int)RAR_BASIC == SF_RARITY_BASIC && (int)RAR_COMMON == SF_RARITY_COMMON &&
                   (int)RAR_UNCOMMON == SF_RARITY_UNCOMMON && (int)RAR_RARE == SF_RARITY_RARE &&
                   (int)RAR_SPECIAL == SF_RARITY_SPECIAL,
               "SF_RARITY_* are the card table's rarities");
int sf_card_rarity(int id) {
    return id > 0 && id < CARD_COUNT ? sf_cards[id].rarity : SF_EINVAL;
}
int sf_relic_lookup(const char *name) {
    for (int i = 1; i < RELIC_COUNT; i++)
        if (name && engine_name_eq(name, sf_relics[i].name))
            return i;
    return SF_ENOTFOUND;
}
const char *sf_relic_name(int id) {
    return id >= 0 && id < RELIC_COUNT ? sf_relics[id].name : NULL;
}
int sf_relic_count(void) {
    return RELIC_COUNT;
}
int sf_relic_counter_max(int id) {
    return id > 0 && id < RELIC_COUNT ? sf_relics[id].counter_max : 0;
}
int sf_potion_lookup(const char *name) {
    for (int i = 1; i < POTION_COUNT; i++)
        if (name && engine_name_eq(name, sf_potions[i].name))
            return i;
    return SF_ENOTFOUND;
}
const char *sf_potion_name(int id) {
    return id >= 0 && id < POTION_COUNT ? sf_potions[id].name : NULL;
}
int sf_potion_count(void) {
    return POTION_COUNT;
}
int sf_monster_count(void) {
    return MON_COUNT;
}
const char *sf_monster_name(int id) {
    return id >= 0 && id < MON_COUNT ? sf_monsters[id].name : NULL;
}
int sf_encounter_lookup(const char *name) {
    for (int i = 0; i < ENC_COUNT; i++)
        if (name && engine_name_eq(name, sf_encounters[i].name))
            return i;
    return SF_ENOTFOUND;
}
const char *sf_encounter_name(int id) {
    return id >= 0 && id < ENC_COUNT ? sf_encounters[id].name : NULL;
}
int sf_encounter_count(void) {
    return ENC_COUNT;
}
int sf_encounter_pool(int id) {
    return id >= 0 && id < ENC_COUNT ? sf_encounters[id].pool : SF_EINVAL;
}

/* ------------------------------------------------------------------------
 * Fight setup
 * ---------------------------------------------------------------------- */

void sf_fight_spec_default(sf_fight_spec *spec) {
    memset(spec, 0, sizeof *spec);
    for (int i = 0; i < 5; i++)
        spec->deck[spec->deck_n++] = (sf_card_spec){CARD_STRIKE, 0};
    for (int i = 0; i < 4; i++)
        spec->deck[spec->deck_n++] = (sf_card_spec){CARD_DEFEND, 0};
    spec->deck[spec->deck_n++] = (sf_card_spec){CARD_BASH, 0};
    spec->relics[spec->relics_n++] = RELIC_BURNING_BLOOD;
    spec->hp = spec->max_hp = 80;
    spec->gold = 99;
    spec->max_turns = SF_MAX_TURNS_DEFAULT;
    spec->encounter = ENC_JAW_WORM;
}

int sf_deck_parse(const char *text, sf_fight_spec *spec, sf_err *err) {
    if (!text)
        return sf_err_set(err, SF_EINVAL, "deck: no deck list given");
    int n = 0;
    const char *p = text;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[64];
        if (len >= sizeof item)
            return sf_err_set(err, SF_EINVAL, "deck: item '%.*s...' is too long", 20, p);
        memcpy(item, p, len);
        item[len] = '\0';
        int copies = 1, upg = 0;
        char *star = strchr(item, '*');
        if (star) {
            char *e;
            long v = strtol(star + 1, &e, 10);
            if (e == star + 1 || *e || v < 1 || v > SF_MAX_DECK)
                return sf_err_set(err, SF_EINVAL,
                                  "deck: bad count in '%s' (want NAME*N, N in 1..%d)", item,
                                  SF_MAX_DECK);
            copies = (int)v;
            *star = '\0';
        }
        size_t l = strlen(item);
        while (l > 0 && item[l - 1] == ' ')
            item[--l] = '\0';
        while (l > 0 && item[l - 1] == '+') {
            upg++;
            item[--l] = '\0';
        }
        int id = sf_card_lookup(item);
        if (id < 0 || sf_cards[id].type == CT_STATUS)
            return sf_err_set(err, SF_EINVAL, "deck: unknown card '%s'", item);
        if (upg > 1 && !(sf_cards[id].flags & CD_MULTI_UPGRADE))
            return sf_err_set(err, SF_EINVAL, "deck: '%s' can be upgraded only once", item);
        for (int k = 0; k < copies; k++) {
            if (n >= SF_MAX_DECK)
                return sf_err_set(err, SF_EINVAL, "deck: more than %d cards", SF_MAX_DECK);
            spec->deck[n++] = (sf_card_spec){(uint8_t)id, (uint8_t)upg};
        }
        p += len;
    }
    if (n == 0)
        return sf_err_set(err, SF_EINVAL, "deck: empty deck list");
    spec->deck_n = n;
    return SF_OK;
}

/* "A,B, C" through `lookup` into out[0..cap): the count, or SF_EINVAL
 * naming the list ("<what>s: ...") and the item. */
static int parse_names(const char *text, int (*lookup)(const char *), uint8_t *out, int cap,
                       const char *what, sf_err *err) {
    if (!text)
        return sf_err_set(err, SF_EINVAL, "%ss: no list given", what);
    char buf[1024];
    if (strlen(text) >= sizeof buf)
        return sf_err_set(err, SF_EINVAL, "%ss: list is too long", what);
    snprintf(buf, sizeof buf, "%s", text);
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        int id = lookup(tok);
        if (id < 0)
            return sf_err_set(err, SF_EINVAL, "%ss: unknown %s '%s'", what, what, tok);
        if (n >= cap)
            return sf_err_set(err, SF_EINVAL, "%ss: more than %d", what, cap);
        out[n++] = (uint8_t)id;
    }
    return n;
}

int sf_relics_parse(const char *text, sf_fight_spec *spec, sf_err *err) {
    uint8_t ids[SF_MAX_RELICS];
    int n = parse_names(text, sf_relic_lookup, ids, SF_MAX_RELICS, "relic", err);
    if (n < 0)
        return n;
    memcpy(spec->relics, ids, (size_t)n);
    spec->relics_n = n;
    return SF_OK;
}

int sf_potions_parse(const char *text, sf_fight_spec *spec, sf_err *err) {
    uint8_t ids[SF_MAX_POTION_SLOTS] = {0};
    int slots = spec->potion_slots > 0 && spec->potion_slots <= SF_MAX_POTION_SLOTS
                    ? spec->potion_slots
                    : SF_POTION_SLOTS;
    int n = parse_names(text, sf_potion_lookup, ids, slots, "potion", err);
    if (n < 0)
        return n;
    memcpy(spec->potions, ids, sizeof ids);
    return SF_OK;
}

static int is_bottle(int relic) {
    return relic == RELIC_BOTTLED_FLAME || relic == RELIC_BOTTLED_LIGHTNING ||
           relic == RELIC_BOTTLED_TORNADO;
}

static int validate_spec(const sf_fight_spec *spec, sf_err *err) {
    if (spec->deck_n < 0 || spec->deck_n > SF_MAX_DECK)
        return sf_err_set(err, SF_EINVAL, "deck_n %d out of range 0..%d", spec->deck_n,
                          SF_MAX_DECK);
    for (int i = 0; i < spec->deck_n; i++) {
        int id = spec->deck[i].id;
        if (id <= CARD_NONE || id >= CARD_COUNT || sf_cards[id].type == CT_STATUS)
            return sf_err_set(err, SF_EINVAL, "deck[%d]: invalid card id %d", i, id);
        if (spec->deck[i].upgrades > 1 && !(sf_cards[id].flags & CD_MULTI_UPGRADE))
            return sf_err_set(err, SF_EINVAL, "deck[%d]: %s cannot have %d upgrades", i,
                              sf_cards[id].name, spec->deck[i].upgrades);
        if (spec->deck[i].upgrades > 15)
            return sf_err_set(err, SF_EINVAL, "deck[%d]: more than 15 upgrades", i);
    }
    if (spec->relics_n < 0 || spec->relics_n > SF_MAX_RELICS)
        return sf_err_set(err, SF_EINVAL, "relics_n %d out of range 0..%d", spec->relics_n,
                          SF_MAX_RELICS);
    for (int i = 0; i < spec->relics_n; i++) {
        if (spec->relics[i] <= RELIC_NONE || spec->relics[i] >= RELIC_COUNT)
            return sf_err_set(err, SF_EINVAL, "relics[%d]: invalid relic id %d", i,
                              spec->relics[i]);
        int max = sf_relics[spec->relics[i]].counter_max;
        int v = spec->relic_counters[i];
        if (max ? v < 0 || v >= max : v != 0)
            return sf_err_set(err, SF_EINVAL, "relic_counters[%d]: %s counter %d outside 0..%d", i,
                              sf_relics[spec->relics[i]].name, v, max ? max - 1 : 0);
        if (is_bottle(spec->relics[i]) && v > spec->deck_n)
            return sf_err_set(err, SF_EINVAL,
                              "relic_counters[%d]: %s holds deck card %d, the deck has %d", i,
                              sf_relics[spec->relics[i]].name, v - 1, spec->deck_n);
    }
    if (spec->potion_slots < 0 || spec->potion_slots > SF_MAX_POTION_SLOTS)
        return sf_err_set(err, SF_EINVAL, "potion_slots %d out of range 1..%d (0: the default, %d)",
                          spec->potion_slots, SF_MAX_POTION_SLOTS, SF_POTION_SLOTS);
    int slots = spec->potion_slots ? spec->potion_slots : SF_POTION_SLOTS;
    for (int i = 0; i < SF_MAX_POTION_SLOTS; i++) {
        if (spec->potions[i] >= POTION_COUNT)
            return sf_err_set(err, SF_EINVAL, "potions[%d]: invalid potion id %d", i,
                              spec->potions[i]);
        if (i >= slots && spec->potions[i] != POTION_NONE)
            return sf_err_set(err, SF_EINVAL, "potions[%d]: a potion past the fight's %d slots", i,
                              slots);
    }
    if (spec->max_hp < 1 || spec->max_hp > 999)
        return sf_err_set(err, SF_EINVAL, "max_hp %d out of range 1..999", spec->max_hp);
    if (spec->hp < 1 || spec->hp > spec->max_hp)
        return sf_err_set(err, SF_EINVAL, "hp %d out of range 1..max_hp (%d)", spec->hp,
                          spec->max_hp);
    if (spec->encounter < 0 || spec->encounter >= ENC_COUNT)
        return sf_err_set(err, SF_EINVAL, "encounter %d out of range 0..%d", spec->encounter,
                          ENC_COUNT - 1);
    if (spec->ascension < 0 || spec->ascension > SF_MAX_ASCENSION)
        return sf_err_set(err, SF_EUNSUPPORTED,
                          "ascension %d is not supported (A0..A%d are modelled)", spec->ascension,
                          SF_MAX_ASCENSION);
    if (spec->floor < 0 || spec->floor > 255)
        return sf_err_set(err, SF_EINVAL, "floor %d out of range 0..255", spec->floor);
    if (spec->gold < 0 || spec->gold > 30000)
        return sf_err_set(err, SF_EINVAL, "gold %d out of range 0..30000", spec->gold);
    if (spec->max_turns < 0 || spec->max_turns > SF_MAX_TURNS_LIMIT)
        return sf_err_set(err, SF_EINVAL, "max_turns %d out of range 1..%d (0: the default, %d)",
                          spec->max_turns, SF_MAX_TURNS_LIMIT, SF_MAX_TURNS_DEFAULT);
    return SF_OK;
}

/* CardGroup.initializeDeck: shuffle a copy of the master deck with
 * java.util.Random(shuffleRng.randomLong()), add the other cards in that
 * order, then the Innate and the bottled ones on top (a Bottled relic's
 * counter is 1 + the deck index of its card). Returns how many went on
 * top. */
static int initialize_deck(sf_combat *c, const sf_fight_spec *spec) {
    sf_card deck[SF_MAX_DECK];
    uint8_t top[SF_MAX_DECK] = {0};
    int n = spec->deck_n, on_top = 0;
    for (int i = 0; i < n; i++) {
        deck[i] = combat_make_card(c, spec->deck[i].id, spec->deck[i].upgrades);
        top[i] = ((sf_cards[deck[i].id].flags & CD_INNATE_UP) && deck[i].upg) ||
                 (sf_cards[deck[i].id].flags & CD_INNATE);
    }
    for (int r = 0; r < spec->relics_n; r++)
        if (is_bottle(spec->relics[r]) && spec->relic_counters[r] > 0)
            top[spec->relic_counters[r] - 1] = 1;
    /* deck and top shuffled together: the permutation of their indices */
    uint8_t at[SF_MAX_DECK];
    for (int i = 0; i < n; i++)
        at[i] = (uint8_t)i;
    combat_java_shuffle(c, at, n, sizeof at[0]);
    c->draw_n = 0;
    for (int i = 0; i < n; i++)
        if (!top[at[i]])
            c->draw[c->draw_n++] = deck[at[i]];
    for (int i = 0; i < n; i++) {
        if (top[at[i]]) {
            c->draw[c->draw_n++] = deck[at[i]];
            on_top++;
        }
    }
    c->draw_known = 0;
    return on_top;
}

int sf_engine_init(sf_state *s, const sf_fight_spec *spec, sf_err *err) {
    int rc = validate_spec(spec, err);
    if (rc < 0)
        return rc;
    memset(s, 0, sizeof *s);
    sf_combat *c = combat_of(s);
    c->hp = (int16_t)spec->hp;
    c->max_hp = (int16_t)spec->max_hp;
    c->gold = (int16_t)spec->gold;
    c->encounter = (uint8_t)spec->encounter;
    c->ascension = (uint8_t)spec->ascension;
    c->floor = (uint8_t)spec->floor;
    c->max_turns = (uint16_t)(spec->max_turns ? spec->max_turns : SF_MAX_TURNS_DEFAULT);
    for (int i = 0; i < spec->relics_n; i++) {
        c->relic_counter[c->relic_n] = (int16_t)spec->relic_counters[i];
        c->relics[c->relic_n++] = spec->relics[i];
    }
    memcpy(c->potions, spec->potions, sizeof c->potions);
    c->potion_slots = (uint8_t)(spec->potion_slots ? spec->potion_slots : SF_POTION_SLOTS);

    /* Per-floor streams: new Random(seed + floorNum), all five the same. */
    uint64_t floor_seed = spec->seed + (uint64_t)spec->floor;
    sf_rng_seed(&c->rng[SF_STREAM_MONSTER_HP], floor_seed);
    sf_rng_seed(&c->rng[SF_STREAM_AI], floor_seed);
    sf_rng_seed(&c->rng[SF_STREAM_SHUFFLE], floor_seed);
    sf_rng_seed(&c->rng[SF_STREAM_CARD_RANDOM], floor_seed);
    sf_rng_seed(&c->rng[SF_STREAM_MISC], floor_seed);
    sf_rng_seed(&c->rng[SF_STREAM_POTION], spec->seed);

    /* §2.1: monsters built (HP rolls), first intents in list order, deck
     * shuffled, pre-battle actions in list order, relics, then turn 1. */
    encounter_build(c, spec->encounter);
    for (int m = 0; m < c->n_mon; m++)
        monster_roll_move(c, m);
    int on_top = initialize_deck(c, spec);
    for (int m = 0; m < c->n_mon; m++)
        monster_pre_battle(c, m);
    relics_at_pre_battle(c);
    c->phase = PH_PLAYER;
    play_first_turn(c, on_top);
    c->streams_used = 0;
    return SF_OK;
}

/* ------------------------------------------------------------------------
 * Enumerate / apply
 * ---------------------------------------------------------------------- */

/* A card's five bytes as one number: two cards are bytewise equal exactly
 * when their keys are (one compare where memcmp did five). Built from a
 * 4-byte and a 1-byte load in registers: copying the five bytes into a
 * zeroed 8-byte slot and reading it back made every key wait on a failed
 * store-to-load forwarding (two narrow stores, one wide load), 44 % of
 * enumerate's samples. */
static uint64_t card_key(const sf_card *k) {
    _Static_assert(sizeof(sf_card) == 5 && offsetof(sf_card, misc) == 4,
                   "a card is four bytes and misc");
    uint32_t lo;
    memcpy(&lo, k, sizeof lo);
    return (uint64_t)lo | (uint64_t)k->misc << 32;
}

int sf_engine_enumerate(const sf_state *s, sf_action *out, int cap) {
    const sf_combat *c = ccombat_of(s);
    int n = 0;
    if (c->phase == PH_OVER)
        return 0;
    if (c->phase == PH_CHOICE) {
        uint8_t opts[SF_MAX_PILE];
        int k = combat_choice_options(c, c->pending.kind, opts, NULL);
        for (int i = 0; i < k && n < cap; i++)
            out[n++] = (sf_action){SF_ACT_CHOOSE, opts[i], SF_NO_TARGET, 0};
        return n;
    }
    uint64_t key[SF_MAX_HAND];
    for (int i = 0; i < c->hand_n; i++) {
        key[i] = card_key(&c->hand[i]);
        int dup = 0;
        for (int j = 0; j < i && !dup; j++)
            dup = key[j] == key[i];
        if (dup || !play_can_play(c, i))
            continue;
        if (card_target(&c->hand[i]) == TGT_ENEMY) {
            for (int m = 0; m < c->n_mon; m++)
                if (combat_alive(c, m) && n < cap)
                    out[n++] = (sf_action){SF_ACT_PLAY, (uint8_t)i, (uint8_t)m, 0};
        } else if (n < cap) {
            out[n++] = (sf_action){SF_ACT_PLAY, (uint8_t)i, SF_NO_TARGET, 0};
        }
    }
    for (int slot = 0; slot < c->potion_slots; slot++) {
        int p = c->potions[slot];
        if (!potion_can_use(c, p))
            continue;
        int dup = 0;
        for (int j = 0; j < slot && !dup; j++)
            dup = c->potions[j] == p;
        if (dup)
            continue;
        if (potion_needs_target(p)) {
            for (int m = 0; m < c->n_mon; m++)
                if (combat_alive(c, m) && n < cap)
                    out[n++] = (sf_action){SF_ACT_POTION, (uint8_t)slot, (uint8_t)m, 0};
        } else if (n < cap) {
            out[n++] = (sf_action){SF_ACT_POTION, (uint8_t)slot, SF_NO_TARGET, 0};
        }
    }
    if (n < cap)
        out[n++] = (sf_action){SF_ACT_END_TURN, 0, SF_NO_TARGET, 0};
    return n;
}

int sf_engine_apply(sf_state *s, sf_action a, uint32_t *streams) {
    sf_combat *c = combat_of(s);
    uint32_t before = c->streams_used;
    uint16_t turn = c->turn;
    c->streams_used = 0;
    int rc = SF_EINVAL;
    if (c->phase == PH_OVER || a.reserved != 0) {
        rc = SF_EINVAL;
    } else if (c->phase == PH_CHOICE) {
        if (a.kind == SF_ACT_CHOOSE)
            rc = play_choose(c, a.index);
    } else {
        switch (a.kind) {
        case SF_ACT_END_TURN:
            if (a.index == 0 && a.target == SF_NO_TARGET) {
                play_end_turn(c);
                rc = SF_OK;
            }
            break;
        case SF_ACT_PLAY: rc = play_from_hand(c, a.index, a.target); break;
        case SF_ACT_POTION:
            if (a.index < c->potion_slots &&
                (potion_needs_target(c->potions[a.index]) || a.target == SF_NO_TARGET))
                rc = potion_use(c, a.index, a.target);
            break;
        default: break;
        }
    }
    if (rc == SF_OK && !c->pending.active) {
        relics_on_refresh_hand(c); /* the queue is empty: Unceasing Top */
        combat_compact(c);
    }
    /* The backstop of the turn cap: a turn that never ends (no real turn
     * comes near SF_MAX_TURN_ACTIONS) ends the fight as a turn-limit loss,
     * so every fight ends within max_turns * SF_MAX_TURN_ACTIONS actions. */
    if (rc == SF_OK && c->phase != PH_OVER && c->turn == turn &&
        ++c->turn_actions >= SF_MAX_TURN_ACTIONS) {
        c->turn_limit = 1;
        combat_stop(c);
    }
    if (rc != SF_OK)
        c->streams_used = before; /* an illegal action leaves every byte as it was */
    if (streams)
        *streams = rc == SF_OK ? c->streams_used : 0;
    return rc;
}

int sf_engine_is_terminal(const sf_state *s) {
    return ccombat_of(s)->phase == PH_OVER;
}

void sf_engine_outcome(const sf_state *s, sf_outcome *out) {
    const sf_combat *c = ccombat_of(s);
    out->over = c->phase == PH_OVER;
    out->won = (c->flags & FL_WON) != 0;
    out->escaped = c->escaped;
    out->hp = c->hp;
    out->max_hp = c->max_hp;
    out->turns = c->turn;
    int left = 0;
    for (int i = 0; i < SF_MAX_POTION_SLOTS; i++)
        left += c->potions[i] != POTION_NONE;
    out->potions_left = left;
    out->potions_used = c->potions_used;
    out->monster_hp_left = 0;
    for (int m = 0; m < c->n_mon; m++)
        if (combat_alive(c, m))
            out->monster_hp_left += c->mon[m].hp;
    out->monster_hp_pool = c->mon_hp_pool;
    out->engine_limit = c->engine_limit;
    out->turn_limit = c->turn_limit;
}

void sf_engine_observe(const sf_state *s, sf_observation *o) {
    const sf_combat *c = ccombat_of(s);
    memset(o, 0, sizeof *o);
    o->turn = c->turn;
    o->hp = c->hp;
    o->max_hp = c->max_hp;
    o->block = c->block;
    o->energy = c->energy;
    for (int m = 0; m < c->n_mon; m++) {
        if (!combat_alive(c, m))
            continue;
        o->monsters_alive++;
        o->monster_hp_total += c->mon[m].hp;
        int hits = 0, dmg = monster_intent_damage(c, m, &hits);
        if (dmg > 0)
            o->incoming_damage += dmg * hits;
    }
    o->hand_n = c->hand_n;
    o->draw_n = c->draw_n;
    o->discard_n = c->discard_n;
    o->exhaust_n = c->exhaust_n;
    o->choice_open = c->phase == PH_CHOICE;
    o->encounter = c->encounter;
    for (int i = 0; i < SF_MAX_POTION_SLOTS; i++)
        o->potions_left += c->potions[i] != POTION_NONE;
    o->block_at_enemy_turn = c->block_enemy_turn;
}

int sf_engine_action_info(const sf_state *s, sf_action a, sf_action_info *out) {
    const sf_combat *c = ccombat_of(s);
    memset(out, 0, sizeof *out);
    out->kind = a.kind;
    out->card_id = -1;
    out->potion_id = -1;
    out->card_type = -1;
    switch (a.kind) {
    case SF_ACT_END_TURN: out->priority = 0; return SF_OK;
    case SF_ACT_PLAY: {
        if (a.index >= c->hand_n)
            return SF_EINVAL;
        const sf_card *k = &c->hand[a.index];
        const card_def *d = &sf_cards[k->id];
        out->card_id = k->id;
        out->card_type = d->type;
        int cost = combat_card_cost(c, k);
        out->cost = cost == COST_X ? c->energy : cost;
        out->gains_block = (k->upg ? d->blk_up : d->blk) > 0 || k->id == CARD_ENTRENCH;
        out->priority = d->priority;
        return SF_OK;
    }
    case SF_ACT_POTION: {
        if (a.index >= c->potion_slots || c->potions[a.index] == POTION_NONE)
            return SF_EINVAL;
        out->potion_id = c->potions[a.index];
        out->gains_block = out->potion_id == POTION_BLOCK;
        out->priority = 20; /* potions are kept unless the search wants them */
        return SF_OK;
    }
    case SF_ACT_CHOOSE: {
        if (c->phase != PH_CHOICE)
            return SF_EINVAL;
        uint8_t opts[SF_MAX_PILE];
        sf_card cards[SF_MAX_PILE];
        int n = combat_choice_options(c, c->pending.kind, opts, cards);
        for (int i = 0; i < n; i++) {
            if (opts[i] == a.index && cards[i].id == CARD_NONE) {
                /* a multi-select's "done": cards whose inverted priority
                 * beats it (the weak ones) are picked first */
                out->priority = 50;
                return SF_OK;
            }
            if (opts[i] == a.index) {
                out->card_id = cards[i].id;
                out->card_type = sf_cards[cards[i].id].type;
                out->priority = sf_cards[cards[i].id].priority;
                /* exhausting or burying a weak card is the better choice */
                if (c->pending.kind == CH_TRUE_GRIT || c->pending.kind == CH_BURNING_PACT ||
                    c->pending.kind == CH_WARCRY || c->pending.kind == CH_ELIXIR ||
                    c->pending.kind == CH_GAMBLE || c->pending.kind == CH_PURITY ||
                    c->pending.kind == CH_FORETHOUGHT || c->pending.kind == CH_FORETHOUGHT_ANY)
                    out->priority = 100 - out->priority;
                return SF_OK;
            }
        }
        return SF_EINVAL;
    }
    default: return SF_EINVAL;
    }
}

/* Each choice screen's JSON name and its options' verb (internal.h). */
const choice_def sf_choices[CH_COUNT] = {
    [CH_NONE] = {"none", ""},
    [CH_ARMAMENTS] = {"armaments", "upgrade"},
    [CH_HEADBUTT] = {"headbutt", "to top of draw"},
    [CH_TRUE_GRIT] = {"true_grit", "exhaust"},
    [CH_WARCRY] = {"warcry", "to top of draw"},
    [CH_BURNING_PACT] = {"burning_pact", "exhaust"},
    [CH_DUAL_WIELD] = {"dual_wield", "copy"},
    [CH_EXHUME] = {"exhume", "return to hand"},
    [CH_DISCOVERY] = {"discovery", "to hand, free this turn"},
    [CH_LIQUID_MEMORIES] = {"liquid_memories", "to hand, free this turn"},
    [CH_ELIXIR] = {"elixir", "exhaust"},
    [CH_GAMBLE] = {"gamble", "discard"}, /* Gambler's Brew, Gambling Chip */
    [CH_DISCOVERY_CARD] = {"discovery_card", "to hand, free this turn"},
    [CH_PURITY] = {"purity", "exhaust"},
    [CH_FORETHOUGHT] = {"forethought", "to bottom of draw"},
    [CH_FORETHOUGHT_ANY] = {"forethought_any", "to bottom of draw"},
    [CH_SECRET_SKILL] = {"secret_technique", "to hand"},
    [CH_SECRET_ATTACK] = {"secret_weapon", "to hand"},
    [CH_TOOLBOX] = {"toolbox", "to hand"},
};

int sf_engine_action_name(const sf_state *s, sf_action a, char *buf, size_t cap) {
    const sf_combat *c = ccombat_of(s);
    char target[48] = "";
    if (a.target != SF_NO_TARGET && a.target < c->n_mon)
        snprintf(target, sizeof target, " -> %s[%d]", sf_monsters[c->mon[a.target].id].name,
                 a.target);
    switch (a.kind) {
    case SF_ACT_END_TURN: return snprintf(buf, cap, "End turn");
    case SF_ACT_PLAY:
        if (a.index >= c->hand_n)
            break;
        return snprintf(buf, cap, "%s%s%s", sf_cards[c->hand[a.index].id].name,
                        c->hand[a.index].upg ? "+" : "", target);
    case SF_ACT_POTION:
        if (a.index >= c->potion_slots)
            break;
        return snprintf(buf, cap, "Drink %s%s", sf_potions[c->potions[a.index]].name, target);
    case SF_ACT_CHOOSE: {
        sf_action_info info;
        if (sf_engine_action_info(s, a, &info) < 0)
            break;
        if (info.card_id < 0)
            return snprintf(buf, cap, "Done (%s)", sf_choices[c->pending.kind].verb);
        return snprintf(buf, cap, "Choose %s (%s)", sf_cards[info.card_id].name,
                        sf_choices[c->pending.kind].verb);
    }
    default: break;
    }
    return snprintf(buf, cap, "(invalid action)");
}

/* ------------------------------------------------------------------------
 * Identity, randomness, belief
 * ---------------------------------------------------------------------- */

static void sort_pile(sf_card *cards, int n) {
    for (int i = 1; i < n; i++) {
        sf_card k = cards[i];
        int j = i - 1;
        while (j >= 0 && memcmp(&cards[j], &k, sizeof k) > 0) {
            cards[j + 1] = cards[j];
            j--;
        }
        cards[j + 1] = k;
    }
}

sf_identity sf_engine_identity(const sf_state *s) {
    /* Discard and exhaust are multisets for the future (reshuffles and
     * choices never depend on their order once canonicalised: choice
     * options over them are numbered in sorted order), so hash them sorted.
     * The hand keeps its order: action indices are hand positions. */
    sf_state tmp;
    memcpy(&tmp, s, SF_COMBAT_CORE_BYTES);
    sf_combat *c = combat_of(&tmp);
    sort_pile(c->discard, c->discard_n);
    sort_pile(c->exhaust, c->exhaust_n);
    XXH128_hash_t h = XXH3_128bits(&tmp, SF_COMBAT_CORE_BYTES);
    return (sf_identity){h.low64, h.high64};
}

void sf_engine_reseed(sf_state *s, int stream, uint64_t salt) {
    if (stream < 0 || stream >= SF_NUM_STREAMS)
        return;
    sf_rng_seed(&combat_of(s)->rng[stream], salt);
}

int sf_engine_is_belief(const sf_state *s) {
    return (ccombat_of(s)->flags & FL_BELIEF) != 0;
}

void sf_engine_belief_root(const sf_state *truth, uint64_t seed, sf_state *out) {
    if (out != truth)
        memcpy(out, truth, sizeof *out);
    sf_combat *c = combat_of(out);
    c->flags |= FL_BELIEF;
    sort_pile(c->draw, c->draw_n - c->draw_known);
    /* A louse's bite damage is unseen until an intent has shown it: forget
     * it; monster_set_move() draws it when a Bite intent first appears. */
    for (int m = 0; m < c->n_mon; m++) {
        sf_monster *mo = &c->mon[m];
        if ((mo->id == MON_RED_LOUSE || mo->id == MON_GREEN_LOUSE) && !mo->ai[0])
            mo->val[0] = 0;
    }
    for (int i = 0; i < SF_NUM_STREAMS; i++)
        sf_rng_seed(&c->rng[i], sf_seed_derive(seed, (uint64_t)i, 0x62656c696566ull, 0));
    c->streams_used = 0;
    c->damage_dealt = 0;
    c->cards_played_total = 0;
    c->gold_stolen_lost = 0;
    c->cards_created = 0;
    c->cards_removed = 0;
    c->cards_dropped = 0;
}

/* ------------------------------------------------------------------------
 * Gauntlet (game-rules §6: Exordium monster lists)
 * ---------------------------------------------------------------------- */

typedef struct monster_info {
    int encounter;
    float weight;
} monster_info;

/* MonsterInfo.normalizeWeights: divide by the total, then a stable sort by
 * weight ascending. */
static void normalize(monster_info *list, int n) {
    float total = 0;
    for (int i = 0; i < n; i++)
        total += list[i].weight;
    for (int i = 0; i < n; i++)
        list[i].weight /= total;
    for (int i = 1; i < n; i++) {
        monster_info k = list[i];
        int j = i - 1;
        while (j >= 0 && list[j].weight > k.weight) {
            list[j + 1] = list[j];
            j--;
        }
        list[j + 1] = k;
    }
}

/* MonsterInfo.roll(list, monsterRng.random()): first cumulative weight above. */
static int roll(sf_rng *r, const monster_info *list, int n) {
    float x = sf_rng_random_float(r), acc = 0;
    for (int i = 0; i < n; i++) {
        acc += list[i].weight;
        if (x < acc)
            return list[i].encounter;
    }
    return list[n - 1].encounter;
}

/* AbstractDungeon.populateMonsterList: a normal encounter may not repeat
 * either of the two previous entries; an elite may not repeat the last. */
static void populate(sf_rng *r, const monster_info *pool, int np, int *list, int *n, int count,
                     int elite) {
    for (int i = 0; i < count; i++) {
        for (;;) {
            int e = roll(r, pool, np);
            if (*n > 0 && e == list[*n - 1])
                continue;
            if (!elite && *n > 1 && e == list[*n - 2])
                continue;
            list[(*n)++] = e;
            break;
        }
    }
}

enum { GAUNTLET_WEAK = 3, GAUNTLET_STRONG = 4 };

void act1_encounter_lists(uint64_t seed, act1_lists *out) {
    sf_rng r;
    sf_rng_seed(&r, seed);
    monster_info weak[4] = {
        {ENC_CULTIST, 1}, {ENC_JAW_WORM, 1}, {ENC_2_LOUSE, 1}, {ENC_SMALL_SLIMES, 1}};
    monster_info strong[10] = {
        {ENC_BLUE_SLAVER, 2},          {ENC_GREMLIN_GANG, 1},   {ENC_LOOTER, 2},
        {ENC_LARGE_SLIME, 2},          {ENC_LOTS_OF_SLIMES, 1}, {ENC_EXORDIUM_THUGS, 1.5f},
        {ENC_EXORDIUM_WILDLIFE, 1.5f}, {ENC_RED_SLAVER, 1},     {ENC_3_LOUSE, 2},
        {ENC_2_FUNGI_BEASTS, 2}};
    monster_info elites[3] = {{ENC_GREMLIN_NOB, 1}, {ENC_LAGAVULIN, 1}, {ENC_3_SENTRIES, 1}};
    normalize(weak, 4);
    normalize(strong, 10);
    normalize(elites, 3);

    int n = 0;
    populate(&r, weak, 4, out->normal, &n, 3, 0);
    /* populateFirstStrongEnemy: re-roll while in the last weak fight's
     * exclusion set (Small Slimes -> Large Slime, Lots of Slimes; 2 Louse ->
     * 3 Louse). */
    for (;;) {
        int e = roll(&r, strong, 10);
        int last = out->normal[n - 1];
        if (last == ENC_SMALL_SLIMES && (e == ENC_LARGE_SLIME || e == ENC_LOTS_OF_SLIMES))
            continue;
        if (last == ENC_2_LOUSE && e == ENC_3_LOUSE)
            continue;
        out->normal[n++] = e;
        break;
    }
    populate(&r, strong, 10, out->normal, &n, ACT1_NORMAL - 4, 0);
    int ne = 0;
    populate(&r, elites, 3, out->elite, &ne, ACT1_ELITE, 1);
    /* Boss: the list shuffled with java.util.Random(monsterRng.randomLong())
     * and the first taken (a profile that has seen all three bosses). */
    int bosses[3] = {ENC_GUARDIAN, ENC_HEXAGHOST, ENC_SLIME_BOSS};
    sf_jrand j;
    sf_jrand_seed(&j, sf_rng_random_long(&r));
    for (int i = 3; i > 1; i--) {
        int k = sf_jrand_next_int(&j, i);
        int t = bosses[i - 1];
        bosses[i - 1] = bosses[k];
        bosses[k] = t;
    }
    out->boss = bosses[0];
}

void sf_gauntlet_generate(uint64_t seed, sf_gauntlet *g) {
    act1_lists l;
    act1_encounter_lists(seed, &l);
    g->n = 0;
    for (int i = 0; i < GAUNTLET_WEAK + GAUNTLET_STRONG; i++)
        g->encounters[g->n++] = l.normal[i];
    g->encounters[g->n++] = l.elite[0];
    g->encounters[g->n++] = l.boss;
}

void sf_engine_carry_over(const sf_state *finished, const sf_gauntlet *g, int index,
                          sf_fight_spec *next) {
    const sf_combat *c = ccombat_of(finished);
    next->hp = c->hp > 0 ? c->hp : 1;
    next->max_hp = c->max_hp;
    next->gold = c->gold;
    memcpy(next->potions, c->potions, sizeof next->potions);
    /* the finished fight's relics are next's (the spec's order) */
    for (int i = 0; i < c->relic_n && i < SF_MAX_RELICS; i++)
        next->relic_counters[i] = sf_relics[c->relics[i]].counter_max ? c->relic_counter[i] : 0;
    next->potion_slots = c->potion_slots;
    next->max_turns = c->max_turns;
    if (g && index >= 0 && index < g->n)
        next->encounter = g->encounters[index];
    next->floor = index + 1;
}
