/*
 * fuzz_engine_actions.c — libFuzzer target: arbitrary bytes drive fights.
 *
 * Input layout (every byte string is a valid input; missing bytes read 0):
 *   [0]      encounter (mod 20)
 *   [1]      ascension (mod SF_MAX_ASCENSION+1)
 *   [2..9]   run seed (little endian)
 *   [10]     deck: < 128 the starter deck; else 5 + (b mod 44) cards whose
 *            ids come from the following bytes (status cards skipped), with
 *            the top bit of each id byte meaning "upgraded"
 *   [..]     3 potion bytes, 1 relic-set byte
 *   then     one byte per step: b < 224 picks legal action (b mod n);
 *            b >= 224 builds a raw action from the next 3 bytes (kind,
 *            index, target), which the engine must refuse or accept without
 *            harm; every 16th step also tokenizes, hashes, belief-roots and
 *            JSON-round-trips the state.
 * Properties checked (abort on failure, naming the property): a listed
 * action is accepted; the state after any refused action is unchanged; a
 * fight that is not over has a living monster; HP and pile counts stay in
 * range; feat stays in bounds; every reachable state saves and loads back
 * exactly as JSON.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

typedef struct reader {
    const uint8_t *p;
    size_t n, i;
} reader;

static uint8_t next(reader *r) {
    return r->i < r->n ? r->p[r->i++] : 0;
}

/* Abort with the failed property named, so a crash report says which. */
#define check(ok) check_at((ok), #ok, __LINE__)
static void check_at(int ok, const char *what, int line) {
    if (!ok) {
        fprintf(stderr, "fuzz_engine_actions.c:%d: property failed: %s\n", line, what);
        abort();
    }
}

static void deep_checks(const sf_state *s, const sf_action *acts, int n) {
    static sf_feat f;
    int rc = sf_engine_feat(s, acts, n, &f);
    check(rc == SF_OK || rc == SF_EFULL);
    check(f.n_tokens <= SF_FEAT_MAX_TOKENS && f.n_queries == n);
    for (int q = 0; q < n; q++)
        check(f.query[q][0] < f.n_tokens && f.query[q][1] < f.n_tokens);
    (void)sf_engine_identity(s);
    sf_state root;
    sf_engine_belief_root(s, 5, &root);
    sf_action racts[SF_MAX_ACTIONS];
    check(sf_engine_enumerate(&root, racts, SF_MAX_ACTIONS) == n);
    json_t *doc = sf_engine_to_json(s);
    check(doc != NULL);
    sf_state back;
    sf_err err = {0};
    if (sf_engine_from_json(doc, &back, &err) != SF_OK) {
        fprintf(stderr, "a reachable state failed to load: %s\n", err.msg);
        char *text = json_dumps(doc, JSON_COMPACT);
        fprintf(stderr, "%s\n", text ? text : "");
        free(text);
        abort();
    }
    check(memcmp(&back, s, sizeof back) == 0);
    json_decref(doc);
    char text[8192];
    (void)sf_engine_render_text(s, text, sizeof text);
}

/* Rules invariants every decision point keeps. */
static void invariants(const sf_state *s) {
    const sf_combat *c = ccombat_of(s);
    check(c->hp >= 0 && c->hp <= c->max_hp);
    check(c->hand_n <= SF_MAX_HAND && c->draw_n <= SF_MAX_PILE && c->discard_n <= SF_MAX_PILE &&
          c->exhaust_n <= SF_MAX_PILE && c->draw_known <= c->draw_n);
    check(c->n_mon <= SF_MAX_MONSTERS);
    /* a fight that is not over has someone to fight */
    check(sf_engine_is_terminal(s) || combat_alive_count(c) > 0);
    for (int m = 0; m < c->n_mon; m++)
        check(c->mon[m].hp >= 0 && c->mon[m].hp <= c->mon[m].max_hp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r = {data, size, 0};
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    spec.encounter = next(&r) % ENC_COUNT;
    spec.ascension = next(&r) % (SF_MAX_ASCENSION + 1);
    uint64_t seed = 0;
    for (int i = 0; i < 8; i++)
        seed |= (uint64_t)next(&r) << (8 * i);
    spec.seed = seed;
    uint8_t deck = next(&r);
    if (deck >= 128) {
        int want = 5 + deck % 44;
        spec.deck_n = 0;
        while (spec.deck_n < want && r.i < r.n) {
            uint8_t b = next(&r);
            int id = 1 + (b & 0x7F) % (CARD_COUNT - 1);
            if (sf_cards[id].type == CT_STATUS)
                continue;
            spec.deck[spec.deck_n++] = (sf_card_spec){(uint8_t)id, (uint8_t)(b >> 7)};
        }
        if (spec.deck_n == 0)
            return 0;
    }
    for (int i = 0; i < SF_POTION_SLOTS; i++)
        spec.potions[i] = next(&r) % POTION_COUNT;
    uint8_t relics = next(&r);
    for (int k = 0; k < 8 && spec.relics_n < SF_MAX_RELICS; k++)
        if (relics & (1u << k))
            spec.relics[spec.relics_n++] = (uint8_t)(2 + (k * 2 + relics) % (RELIC_COUNT - 2));

    sf_state s;
    if (sf_engine_init(&s, &spec, NULL) < 0)
        return 0;
    for (int step = 0; step < 2000 && r.i < r.n && !sf_engine_is_terminal(&s); step++) {
        sf_action acts[SF_MAX_ACTIONS];
        int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
        check(n > 0 && n <= SF_MAX_ACTIONS);
        if (step % 16 == 0)
            deep_checks(&s, acts, n);
        uint8_t b = next(&r);
        if (b < 224) {
            uint32_t mask = 0;
            check(sf_engine_apply(&s, acts[b % n], &mask) == SF_OK);
            check(mask < (1u << SF_NUM_STREAMS));
            invariants(&s);
        } else {
            sf_action raw;
            raw.kind = next(&r) & 3;
            raw.index = next(&r);
            raw.target = next(&r);
            raw.reserved = b == 255; /* must be refused */
            sf_state before = s;
            if (sf_engine_apply(&s, raw, NULL) != SF_OK)
                check(memcmp(&before, &s, sizeof s) == 0);
        }
    }
    sf_outcome o;
    sf_engine_outcome(&s, &o);
    check(o.hp >= 0 && o.hp <= o.max_hp);
    return 0;
}
