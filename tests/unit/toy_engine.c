/* toy_engine.c — the toy duel of toy_engine.h behind the engine.h functions
 * the search calls. Test-only. */
#include "toy_engine.h"

#include <string.h>

#define TOY_MAGIC 0x31594F54u /* "TOY1" */

static const int card_cost[TOY_NCARDS] = {1, 1, 2, 0};
static const int card_prio[TOY_NCARDS] = {20, 10, 30, 25};
static const int card_type[TOY_NCARDS] = {SF_CARD_ATTACK, SF_CARD_SKILL, SF_CARD_ATTACK,
                                          SF_CARD_ATTACK};

void toy_init(sf_state *s, int hp, int max_hp, int mon_hp, int intent, const int *hand, int hand_n,
              const int *draw, int draw_n, int potions, uint64_t seed) {
    memset(s, 0, sizeof *s);
    toy_state *t = toy(s);
    t->magic = TOY_MAGIC;
    t->hp = (int16_t)hp;
    t->max_hp = (int16_t)max_hp;
    t->energy = 3;
    t->mon_hp = (int16_t)mon_hp;
    t->mon_hp0 = (int16_t)mon_hp;
    t->intent = (int16_t)intent;
    t->turn = 1;
    t->potions = (uint8_t)potions;
    for (int i = 0; i < hand_n; i++)
        t->hand[hand[i]]++;
    for (int i = 0; i < draw_n; i++)
        t->draw[i] = (uint8_t)draw[i];
    t->draw_n = (uint8_t)draw_n;
    for (int k = 0; k < SF_NUM_STREAMS; k++)
        t->rng[k] = sf_mix64(seed ^ (uint64_t)(k + 1) * 0x9E37u);
}

/* A uniform pick in [0, n) from stream k (or the forced sequence). */
static int toy_rand(toy_state *t, int k, int n, uint32_t *mask) {
    *mask |= 1u << k;
    if (t->forcing) {
        int v = t->force_pos < t->force_n ? t->force[t->force_pos] : 0;
        if (t->log_n < sizeof t->log_range)
            t->log_range[t->log_n++] = (uint8_t)n;
        t->force_pos++;
        return v < n ? v : n - 1;
    }
    t->rng[k] = sf_mix64(t->rng[k]);
    return (int)(t->rng[k] % (uint64_t)n);
}

static void sort_pile(toy_state *t) {
    for (int i = 1; i < t->draw_n; i++) {
        uint8_t v = t->draw[i];
        int j = i;
        while (j > 0 && t->draw[j - 1] > v) {
            t->draw[j] = t->draw[j - 1];
            j--;
        }
        t->draw[j] = v;
    }
}

static void refill(toy_state *t, uint32_t *mask) {
    for (int c = 0; c < TOY_NCARDS; c++)
        while (t->discard[c]) {
            t->discard[c]--;
            t->draw[t->draw_n++] = (uint8_t)c;
        }
    if (t->belief) {
        sort_pile(t);
        return;
    }
    for (int i = t->draw_n - 1; i > 0; i--) { /* Fisher-Yates */
        int j = toy_rand(t, SF_STREAM_SHUFFLE, i + 1, mask);
        uint8_t tmp = t->draw[i];
        t->draw[i] = t->draw[j];
        t->draw[j] = tmp;
    }
}

static void draw_one(toy_state *t, uint32_t *mask) {
    if (t->draw_n == 0)
        refill(t, mask);
    if (t->draw_n == 0)
        return;
    int pos = t->draw_n - 1;
    if (t->belief) /* the order is unknown: a uniform pick */
        pos = toy_rand(t, SF_STREAM_SHUFFLE, t->draw_n, mask);
    uint8_t c = t->draw[pos];
    memmove(&t->draw[pos], &t->draw[pos + 1], (size_t)(t->draw_n - pos - 1));
    t->draw_n--;
    t->hand[c]++;
}

static void hit_monster(toy_state *t, int dmg) {
    if (t->vuln > 0)
        dmg = dmg * 3 / 2;
    t->mon_hp = (int16_t)(t->mon_hp - dmg);
    if (t->mon_hp <= 0) {
        t->mon_hp = 0;
        t->over = 1;
        t->won = 1;
    }
}

int sf_engine_enumerate(const sf_state *s, sf_action *out, int cap) {
    const toy_state *t = toy_c(s);
    if (t->over)
        return 0;
    int n = 0;
    for (int c = 0; c < TOY_NCARDS && n < cap; c++)
        if (t->hand[c] && card_cost[c] <= t->energy)
            out[n++] = (sf_action){SF_ACT_PLAY, (uint8_t)c, 0, 0};
    if (t->potions && n < cap)
        out[n++] = (sf_action){SF_ACT_POTION, 0, 0, 0};
    if (n < cap)
        out[n++] = (sf_action){SF_ACT_END_TURN, 0, SF_NO_TARGET, 0};
    return n;
}

int sf_engine_apply(sf_state *s, sf_action a, uint32_t *streams) {
    toy_state *t = toy(s);
    uint32_t mask = 0;
    if (t->over)
        return SF_EINVAL;
    if (a.kind == SF_ACT_PLAY) {
        int c = a.index;
        if (c >= TOY_NCARDS || !t->hand[c] || card_cost[c] > t->energy)
            return SF_EINVAL;
        t->hand[c]--;
        t->discard[c]++;
        t->energy = (int16_t)(t->energy - card_cost[c]);
        switch (c) {
        case TOY_STRIKE: hit_monster(t, 6); break;
        case TOY_DEFEND: t->block = (int16_t)(t->block + 5); break;
        case TOY_BASH:
            hit_monster(t, 8);
            t->vuln = (int16_t)(t->vuln + 2);
            break;
        case TOY_FLASH: hit_monster(t, 3); break;
        }
    } else if (a.kind == SF_ACT_POTION) {
        if (!t->potions)
            return SF_EINVAL;
        t->potions--;
        hit_monster(t, 10);
    } else if (a.kind == SF_ACT_END_TURN) {
        for (int c = 0; c < TOY_NCARDS; c++) {
            t->discard[c] = (uint8_t)(t->discard[c] + t->hand[c]);
            t->hand[c] = 0;
        }
        int through = t->intent - t->block;
        if (through > 0)
            t->hp = (int16_t)(t->hp - through);
        if (t->hp <= 0) {
            t->hp = 0;
            t->over = 1;
            t->won = 0;
        } else {
            t->block = 0;
            if (t->vuln > 0)
                t->vuln--;
            t->intent = toy_rand(t, SF_STREAM_AI, 2, &mask) ? 9 : 5;
            t->turn++;
            t->energy = 3;
            for (int i = 0; i < 3; i++)
                draw_one(t, &mask);
        }
    } else {
        return SF_EINVAL;
    }
    if (streams)
        *streams = mask;
    return SF_OK;
}

int sf_engine_is_terminal(const sf_state *s) {
    return toy_c(s)->over;
}

void sf_engine_outcome(const sf_state *s, sf_outcome *o) {
    const toy_state *t = toy_c(s);
    *o = (sf_outcome){.over = t->over,
                      .won = t->won,
                      .hp = t->hp,
                      .max_hp = t->max_hp,
                      .turns = t->turn,
                      .potions_left = t->potions,
                      .monster_hp_left = t->mon_hp > 0 ? t->mon_hp : 0,
                      .monster_hp_pool = t->mon_hp0};
}

void sf_engine_observe(const sf_state *s, sf_observation *o) {
    const toy_state *t = toy_c(s);
    *o = (sf_observation){.turn = t->turn,
                          .hp = t->hp,
                          .max_hp = t->max_hp,
                          .block = t->block,
                          .energy = t->energy,
                          .incoming_damage = t->intent,
                          .monster_hp_total = t->mon_hp,
                          .monsters_alive = t->mon_hp > 0,
                          .draw_n = t->draw_n,
                          .potions_left = t->potions};
    for (int c = 0; c < TOY_NCARDS; c++) {
        o->hand_n += t->hand[c];
        o->discard_n += t->discard[c];
    }
}

int sf_engine_action_info(const sf_state *s, sf_action a, sf_action_info *out) {
    (void)s;
    memset(out, 0, sizeof *out);
    out->kind = a.kind;
    out->card_id = -1;
    out->potion_id = -1;
    out->card_type = -1;
    if (a.kind == SF_ACT_PLAY && a.index < TOY_NCARDS) {
        out->card_id = a.index;
        out->card_type = card_type[a.index];
        out->cost = card_cost[a.index];
        out->gains_block = a.index == TOY_DEFEND;
        out->priority = card_prio[a.index];
    } else if (a.kind == SF_ACT_POTION) {
        out->potion_id = 1;
        out->priority = 5;
    }
    return SF_OK;
}

/* 128-bit identity of everything but the streams and oracle fields: two
 * independent SplitMix chains over the decisive bytes. */
sf_identity sf_engine_identity(const sf_state *s) {
    const toy_state *t = toy_c(s);
    uint8_t buf[64];
    size_t n = 0;
    buf[n++] = t->belief;
    buf[n++] = t->over;
    buf[n++] = t->won;
    buf[n++] = t->potions;
    const int16_t f[8] = {t->hp,     t->max_hp, t->block,  t->energy,
                          t->mon_hp, t->vuln,   t->intent, t->turn};
    memcpy(buf + n, f, sizeof f);
    n += sizeof f;
    memcpy(buf + n, t->hand, TOY_NCARDS);
    n += TOY_NCARDS;
    memcpy(buf + n, t->discard, TOY_NCARDS);
    n += TOY_NCARDS;
    buf[n++] = t->draw_n;
    sf_identity id = {0x1234, 0x5678};
    for (size_t i = 0; i < n; i++) {
        id.lo = sf_mix64(id.lo ^ buf[i]);
        id.hi = sf_mix64(id.hi + buf[i] * 0x9E3779B97F4A7C15ull);
    }
    for (int i = 0; i < t->draw_n; i++) {
        id.lo = sf_mix64(id.lo ^ (uint64_t)(t->draw[i] + 16));
        id.hi = sf_mix64(id.hi + (uint64_t)(t->draw[i] + 16) * 0xD6E8FEB86659FD93ull);
    }
    return id;
}

void sf_engine_reseed(sf_state *s, int stream, uint64_t salt) {
    if (stream < 0 || stream >= SF_NUM_STREAMS)
        return;
    toy(s)->rng[stream] = salt;
}

void sf_engine_belief_root(const sf_state *truth, uint64_t seed, sf_state *out) {
    if (out != truth)
        *out = *truth;
    toy_state *t = toy(out);
    t->belief = 1;
    sort_pile(t);
    for (int k = 0; k < SF_NUM_STREAMS; k++)
        t->rng[k] = sf_seed_derive(seed, (uint64_t)k, 0, 0);
}

int sf_engine_is_belief(const sf_state *s) {
    return toy_c(s)->belief;
}

int sf_engine_feat(const sf_state *s, const sf_action *actions, int n_actions, sf_feat *out) {
    const toy_state *t = toy_c(s);
    if (n_actions > SF_FEAT_MAX_QUERIES)
        return SF_EINVAL;
    memset(out, 0, sizeof *out);
    int n = 0;
    out->type[n] = SF_TOK_CTX;
    out->cont[n][0] = (float)t->turn;
    n++;
    out->type[n] = SF_TOK_PLAYER;
    out->cont[n][0] = (float)t->hp / (float)t->max_hp;
    out->cont[n][1] = (float)t->block;
    out->cont[n][2] = (float)t->energy;
    n++;
    out->type[n] = SF_TOK_MONSTER;
    out->cont[n][0] = (float)t->mon_hp;
    out->cont[n][1] = (float)t->intent;
    n++;
    int card_tok[TOY_NCARDS] = {0};
    for (int c = 0; c < TOY_NCARDS; c++) {
        if (!t->hand[c])
            continue;
        card_tok[c] = n;
        out->type[n] = SF_TOK_CARD_HAND;
        out->cat[n][0] = (uint16_t)c;
        out->cont[n][0] = (float)t->hand[c];
        n++;
    }
    out->n_tokens = n;
    out->n_queries = n_actions;
    for (int q = 0; q < n_actions; q++) {
        const sf_action a = actions[q];
        out->query[q][0] =
            (uint16_t)(a.kind == SF_ACT_PLAY && a.index < TOY_NCARDS ? card_tok[a.index] : 0);
        out->query[q][1] = 2;
    }
    return SF_OK;
}
