/* label_synth.c — synthetic label records (see label_synth.h).
 * Tensors point at the record's own arrays, which are little-endian on the
 * hosts spirefleet supports (x86-64, aarch64). */
#include "label_synth.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/common.h"

/* Token types, as engine/engine.h's SF_TOK_*. */
enum { CTX = 1, PLAYER, MONSTER, INTENT, STATUS, HAND, DRAW, DISCARD, EXHAUST, RELIC, POTION };

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r) {
    r->s += 0x9E3779B97F4A7C15ull;
    return sf_mix64(r->s);
}
static uint32_t below(rng *r, uint32_t n) {
    return (uint32_t)(next(r) % n);
}
static uint32_t range(rng *r, uint32_t lo, uint32_t hi) { /* inclusive */
    return lo + below(r, hi - lo + 1);
}
static float unit(rng *r) {
    return (float)(next(r) >> 40) / (float)(1u << 24);
}

void synth_params_default(synth_params *p) {
    memset(p, 0, sizeof *p);
    p->run_id = "synth-run";
    p->job_id = 7;
    p->seed_base = 1000;
    p->engine_version = 1;
    p->tokenizer_version = 1;
    p->model_sha256 = "rollout";
    p->config_digest = "3f6a1c0e9b2d4f5a8c7e6d5b4a3928171605f4e3d2c1b0a99887766554433221";
    p->teacher_every = 2;
}

void synth_info(const synth_params *p, sf_shard_info *info) {
    *info = (sf_shard_info){.run_id = p->run_id,
                            .job_id = p->job_id,
                            .engine_version = p->engine_version,
                            .tokenizer_version = p->tokenizer_version,
                            .model_sha256 = p->model_sha256,
                            .config_digest = p->config_digest,
                            .worker_id = "synth-worker",
                            .created_unix = 1700000000};
}

static void tensor(Spirefleet__Tensor *t, uint32_t *shape, const char *dtype, int rank, uint32_t d0,
                   uint32_t d1, void *data, size_t esize) {
    spirefleet__tensor__init(t);
    t->dtype = (char *)dtype;
    shape[0] = d0;
    shape[1] = d1;
    t->n_shape = (size_t)rank;
    t->shape = shape;
    size_t n = d0 * (rank > 1 ? d1 : 1);
    t->data.len = n * esize;
    t->data.data = data;
}

/* One token: type, categorical ids and the continuous features that token
 * kind has in the tokenizer (the rest stay zero, as in real positions). */
static void token(synth_record *s, rng *r, uint32_t k, uint8_t type, uint32_t slot) {
    uint16_t *c = &s->cat[k * 4];
    float *f = &s->cont[k * 16];
    s->type[k] = type;
    switch (type) {
    case CTX:
        c[0] = 0;
        f[0] = (float)range(r, 1, 12); /* turn */
        f[1] = (float)range(r, 0, 3);  /* energy */
        f[2] = (float)range(r, 0, 40); /* draw pile size */
        f[3] = (float)range(r, 0, 20); /* discard size */
        break;
    case PLAYER: {
        uint32_t hp = range(r, 1, 80);
        c[0] = 1;
        f[0] = (float)hp;
        f[1] = 80.0f;
        f[2] = (float)hp / 80.0f;
        f[3] = (float)(below(r, 3) ? 0 : range(r, 1, 20)); /* block */
        f[4] = (float)(below(r, 4) ? 0 : range(r, 1, 4));  /* strength */
        break;
    }
    case MONSTER: {
        uint32_t max = range(r, 10, 90), hp = range(r, 1, max);
        c[0] = (uint16_t)range(r, 300, 340);
        c[3] = (uint16_t)slot;
        f[0] = (float)hp;
        f[1] = (float)max;
        f[2] = (float)hp / (float)max;
        f[3] = (float)(below(r, 3) ? 0 : range(r, 1, 12));
        f[4] = (float)(below(r, 5) ? 0 : range(r, 1, 6));
        break;
    }
    case INTENT:
        c[0] = (uint16_t)range(r, 360, 400);
        c[2] = (uint16_t)range(r, 0, 12);
        c[3] = (uint16_t)slot;
        f[0] = (float)(below(r, 3) ? range(r, 5, 25) : 0); /* damage per hit */
        f[1] = (float)range(r, 1, 3);                      /* hits */
        break;
    case STATUS:
        c[0] = (uint16_t)range(r, 420, 460);
        c[1] = (uint16_t)range(r, 0, 6);
        f[0] = (float)range(r, 1, 5); /* stacks */
        break;
    case RELIC:
        c[0] = (uint16_t)range(r, 200, 260);
        f[0] = (float)range(r, 0, 9); /* counter */
        break;
    case POTION:
        c[0] = (uint16_t)range(r, 270, 290);
        c[3] = (uint16_t)slot;
        break;
    default: { /* a card in some zone */
        uint32_t card = range(r, 2, 80);
        c[0] = (uint16_t)card;
        c[1] = (uint16_t)(below(r, 5) == 0);
        c[2] = (uint16_t)range(r, 0, 3);
        c[3] = (uint16_t)(slot % 16);
        f[0] = (float)c[2]; /* cost */
        f[1] = card % 3 == 0 ? (float)range(r, 5, 14) : 0.0f;
        f[2] = card % 3 == 1 ? (float)range(r, 5, 12) : 0.0f;
        f[3] = (float)c[1];
        break;
    }
    }
}

void synth_fill(synth_record *s, const synth_params *p, uint64_t index) {
    rng r = {sf_seed_derive(p->seed_base, p->job_id, index, 0x5EED)};
    memset(s, 0, sizeof *s);
    spirefleet__label_record__init(&s->rec);
    spirefleet__label_ids__init(&s->ids);
    spirefleet__inputs__init(&s->inputs);
    spirefleet__search_result__init(&s->search);
    spirefleet__outcome__init(&s->outcome);
    spirefleet__forecast__init(&s->forecast);
    spirefleet__teacher_forecast__init(&s->teacher);

    /* A game of ~12 fights of ~20 decisions each. */
    Spirefleet__LabelIds *id = &s->ids;
    id->run_id = (char *)p->run_id;
    id->job_id = p->job_id;
    id->game_seed = p->seed_base + index / 240;
    id->fight_index = (uint32_t)(index / 20 % 12);
    id->decision_index = (uint32_t)(index % 20);
    id->turn = id->decision_index / 4 + 1;
    id->encounter_id = (uint32_t)(sf_mix64(id->game_seed * 13 + id->fight_index) % 20);
    snprintf(s->encounter, sizeof s->encounter, "Encounter %u", id->encounter_id);
    id->encounter = s->encounter;
    id->engine_version = p->engine_version;
    id->tokenizer_version = p->tokenizer_version;
    id->model_sha256 = (char *)p->model_sha256;
    id->config_digest = (char *)p->config_digest;

    /* Tokens. */
    uint32_t monsters = range(&r, 1, 5), k = 0, hand_first, hand_n;
    token(s, &r, k++, CTX, 0);
    token(s, &r, k++, PLAYER, 0);
    uint32_t monster_tok[5];
    for (uint32_t m = 0; m < monsters; m++) {
        monster_tok[m] = k;
        token(s, &r, k++, MONSTER, m);
        token(s, &r, k++, INTENT, m);
    }
    for (uint32_t n = range(&r, 0, 6); n > 0; n--)
        token(s, &r, k++, STATUS, 0);
    hand_first = k;
    hand_n = range(&r, 2, 10);
    for (uint32_t n = 0; n < hand_n; n++)
        token(s, &r, k++, HAND, n);
    for (uint32_t n = range(&r, 3, 30); n > 0 && k < SYNTH_MAX_T - 12; n--)
        token(s, &r, k++, DRAW, n);
    for (uint32_t n = range(&r, 0, 15); n > 0 && k < SYNTH_MAX_T - 12; n--)
        token(s, &r, k++, DISCARD, n);
    for (uint32_t n = range(&r, 0, 4); n > 0; n--)
        token(s, &r, k++, EXHAUST, n);
    for (uint32_t n = range(&r, 1, 4); n > 0; n--)
        token(s, &r, k++, RELIC, n);
    uint32_t potions = range(&r, 0, 3);
    for (uint32_t n = 0; n < potions; n++)
        token(s, &r, k++, POTION, n);
    uint32_t T = k;
    if (p->dense)
        for (uint32_t t = 0; t < T; t++)
            for (int f = 8; f < 16; f++)
                s->cont[t * 16 + f] = 2.0f * unit(&r) - 1.0f;

    /* Legal actions: some hand cards (attacks once per monster), potions,
     * END_TURN last with the CTX token and the player as target. */
    uint32_t Q = 0;
    for (uint32_t h = 0; h < hand_n && Q < SYNTH_MAX_Q - 8; h++) {
        if (below(&r, 4) == 0)
            continue; /* unplayable or a duplicate */
        uint32_t tok = hand_first + h;
        int attack = s->cont[tok * 16 + 1] > 0;
        for (uint32_t m = 0; m < (attack ? monsters : 1); m++) {
            s->query[2 * Q] = (uint16_t)tok;
            s->query[2 * Q + 1] = (uint16_t)(attack ? monster_tok[m] : 1);
            float *f = &s->qcont[8 * Q];
            f[0] = attack ? s->cont[tok * 16 + 1] + (float)below(&r, 4) : 0.0f;
            f[1] = attack ? 0.0f : s->cont[tok * 16 + 2];
            f[2] = (float)(attack && below(&r, 10) == 0); /* lethal */
            f[3] = s->cont[tok * 16];
            s->action[Q] = 1u | h << 8 | (attack ? m : 0xFFu) << 16;
            Q++;
        }
    }
    for (uint32_t n = 0; n < potions && Q < SYNTH_MAX_Q - 1; n++) {
        s->query[2 * Q] = (uint16_t)(T - potions + n);
        s->query[2 * Q + 1] = 1;
        s->action[Q] = 2u | n << 8 | 0xFFu << 16;
        Q++;
    }
    s->query[2 * Q] = 0;
    s->query[2 * Q + 1] = 1;
    s->action[Q] = 0xFFu << 16;
    Q++;

    Spirefleet__Inputs *in = &s->inputs;
    tensor(&s->t_type, s->shapes[0], "u8", 1, T, 0, s->type, 1);
    tensor(&s->t_cat, s->shapes[1], "u16", 2, T, 4, s->cat, 2);
    tensor(&s->t_cont, s->shapes[2], "f32", 2, T, 16, s->cont, 4);
    tensor(&s->t_query, s->shapes[3], "u16", 2, Q, 2, s->query, 2);
    tensor(&s->t_qcont, s->shapes[4], "f32", 2, Q, 8, s->qcont, 4);
    tensor(&s->t_action, s->shapes[5], "u32", 1, Q, 0, s->action, 4);
    in->token_type = &s->t_type;
    in->token_cat = &s->t_cat;
    in->token_cont = &s->t_cont;
    in->query = &s->t_query;
    in->query_cont = &s->t_qcont;
    in->action_code = &s->t_action;

    /* Search: 800 simulations over 4 trees, visits concentrated on a few. */
    Spirefleet__SearchResult *sr = &s->search;
    uint32_t sims = Q == 1 ? 0 : 800, left = sims, best = 0;
    float wsum = 0, w[SYNTH_MAX_Q];
    for (uint32_t a = 0; a < Q; a++) {
        w[a] = unit(&r);
        w[a] = w[a] * w[a] * w[a] + 0.01f;
        wsum += w[a];
    }
    for (uint32_t a = 0; a < Q; a++) {
        uint32_t v = a + 1 == Q ? left : (uint32_t)floorf((float)sims * w[a] / wsum);
        if (v > left)
            v = left;
        left -= v;
        s->visits[a] = v;
        s->q[a] = v ? 0.4f + 0.5f * unit(&r) : 0.0f;
        s->cq[a] = v ? s->q[a] : 0.55f;
        if (v > s->visits[best])
            best = a;
    }
    float psum = 0;
    for (uint32_t a = 0; a < Q; a++) {
        s->policy[a] = expf(4.0f * s->cq[a]);
        psum += s->policy[a];
    }
    for (uint32_t a = 0; a < Q; a++)
        s->policy[a] /= psum;
    sr->n_visits = sr->n_q = sr->n_completed_q = sr->n_policy = Q;
    sr->visits = s->visits;
    sr->q = s->q;
    sr->completed_q = s->cq;
    sr->policy = s->policy;
    sr->chosen = best;
    sr->root_raw_value = 0.5f + 0.4f * unit(&r);
    sr->root_search_value = sr->root_raw_value + 0.02f * (unit(&r) - 0.5f);
    sr->simulations = sims;
    sr->searched = Q > 1;
    sr->trees = Q > 1 ? 4 : 0;
    for (uint32_t t = 0; t < sr->trees; t++)
        s->tree_values[t] = sr->root_search_value + 0.05f * (unit(&r) - 0.5f);
    sr->n_tree_root_values = sr->trees;
    sr->tree_root_values = s->tree_values;
    sr->fallbacks = below(&r, 50) == 0;

    /* Outcome of the fight this decision belongs to (same for its plies). */
    rng fr = {sf_seed_derive(id->game_seed, id->fight_index, 0xF1, 0)};
    Spirefleet__Outcome *o = &s->outcome;
    o->won = below(&fr, 8) != 0;
    o->max_hp = 80;
    o->final_hp = o->won ? range(&fr, 1, 80) : 0;
    o->turns = range(&fr, 3, 9);
    o->potions_used = range(&fr, 0, 2);
    o->potions_left = range(&fr, 0, 3);
    if (p->engine_limit_every > 0 &&
        (id->game_seed * 12 + id->fight_index) % (uint64_t)p->engine_limit_every == 0) {
        o->won = 0;
        o->final_hp = 0;
        o->engine_limit = 1;
    } else if (p->turn_limit_every > 0 &&
               (id->game_seed * 12 + id->fight_index) % (uint64_t)p->turn_limit_every == 0) {
        o->won = 0;
        o->final_hp = 0;
        o->turn_limit = 1;
        o->turns = 50; /* a fight that reached a cap of 50 turns */
    }
    o->monster_hp_pool = range(&fr, 20, 300);
    o->monster_hp_left = o->won ? 0 : range(&fr, 1, (int)o->monster_hp_pool);
    sf_fight_facts facts = {.won = o->won,
                            .escaped = o->escaped,
                            .hp = (int)o->final_hp,
                            .max_hp = (int)o->max_hp,
                            .potions_left = (int)o->potions_left,
                            .turns = (int)o->turns,
                            .monster_hp_left = (int)o->monster_hp_left,
                            .monster_hp_pool = (int)o->monster_hp_pool};
    double y = sf_value_score(&facts);
    sf_value_project(y, s->bins);
    o->value = (float)y;
    o->n_value_bins = SF_VALUE_BINS;
    o->value_bins = s->bins;

    /* Forecasts: realised values at turns turn+1..turn+4 while the fight
     * lasts; masked (and zero) after its last turn. */
    for (uint32_t h = 0; h < SF_FORECAST_H; h++) {
        int alive = id->turn + h + 1 <= o->turns;
        s->f_mask_v[h] = (uint8_t)alive;
        if (!alive)
            continue;
        float *row = &s->f_target_v[h * SF_FORECAST_COLS];
        row[SF_FORECAST_PLAYER_HP] = (float)range(&r, 1, 80);
        row[SF_FORECAST_BLOCK_AT_ENEMY_TURN] = (float)(below(&r, 2) ? 0 : range(&r, 1, 15));
        row[SF_FORECAST_INCOMING_DAMAGE] = (float)range(&r, 0, 30);
        row[SF_FORECAST_MONSTER_HP_TOTAL] = (float)range(&r, 1, 200);
        row[SF_FORECAST_MONSTERS_ALIVE] = (float)range(&r, 1, monsters);
    }
    tensor(&s->f_target, s->shapes[6], "f32", 2, SF_FORECAST_H, SF_FORECAST_COLS, s->f_target_v, 4);
    tensor(&s->f_mask, s->shapes[7], "u8", 1, SF_FORECAST_H, 0, s->f_mask_v, 1);
    s->forecast.target = &s->f_target;
    s->forecast.mask = &s->f_mask;

    if (p->teacher_every > 0 && index % (uint64_t)p->teacher_every == 0) {
        s->teacher.rollouts = 16;
        for (uint32_t h = 0; h < SF_FORECAST_H; h++) {
            s->th_cov_v[h] = 1.0f - 0.2f * (float)h * unit(&r);
            for (uint32_t c = 0; c < SF_FORECAST_COLS; c++)
                s->th_mean_v[h * SF_FORECAST_COLS + c] = 40.0f * unit(&r);
        }
        tensor(&s->th_mean, s->shapes[8], "f32", 2, SF_FORECAST_H, SF_FORECAST_COLS, s->th_mean_v,
               4);
        tensor(&s->th_cov, s->shapes[9], "f32", 1, SF_FORECAST_H, 0, s->th_cov_v, 4);
        s->teacher.mean = &s->th_mean;
        s->teacher.coverage = &s->th_cov;
        s->rec.teacher = &s->teacher;
    }

    s->rec.schema_version = SF_LABEL_SCHEMA_VERSION;
    s->rec.ids = id;
    s->rec.inputs = in;
    s->rec.search = sr;
    s->rec.outcome = o;
    s->rec.forecast = &s->forecast;
}
