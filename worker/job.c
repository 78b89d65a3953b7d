/*
 * job.c — playing a job: seeds -> fights -> searched decisions -> label
 * records -> one sealed shard (worker.h).
 *
 * Each thread keeps `fights_per_thread` fights in flight ("slots"). A slot
 * advances its fight until its search needs leaf evaluations; the thread
 * then evaluates every waiting leaf of every slot as one batch and feeds
 * the answers back. Labels are kept per seed and written in seed order at
 * the end, so the shard does not depend on which thread played what.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "build_id.h"
#include "shard/shard.h"
#include "worker/worker.h"

#define MAX_FIGHTS_PER_SEED (SF_GAUNTLET_MAX)
#define FORECAST_H          SF_FORECAST_H
#define FORECAST_COLS       SF_FORECAST_COLS

/* ------------------------------------------------------------------------
 * Records kept until the shard is written
 * ---------------------------------------------------------------------- */

typedef struct label {
    uint32_t fight_index, ply, turn;
    int T, Q, searched, n_trees;
    uint32_t chosen, simulations, fallbacks, rollouts_cut_off;
    float leaf_mix;
    float root_raw_value, root_search_value;
    float tree_value[SF_SEARCH_MAX_TREES];
    float forecast[FORECAST_H][FORECAST_COLS];
    uint8_t mask[FORECAST_H];
    int teacher_n;
    float teacher[FORECAST_H][FORECAST_COLS];
    float coverage[FORECAST_H];
    /* variable part, one allocation: see label_new() */
    float *cont, *qcont, *q, *cq, *pi;
    uint32_t *codes, *visits;
    uint16_t *cat, *query;
    uint8_t *type;
} label;

typedef struct obs5 {
    int seen;
    float v[FORECAST_COLS];
} obs5;

typedef struct fight_rec {
    int encounter;
    sf_outcome outcome;
    label **labels;
    int n_labels, cap_labels;
    /* At the first decision of each turn 0..n_turn_obs-1 (the turn cap):
     * while the fight is played; freed when it ends (finish_fight). */
    obs5 *turn_obs;
    int n_turn_obs;
    sf_fight_spec start;                /* what the fight started from          */
    char start_text[SF_START_TEXT_MAX]; /* its text form (labels' ids.start) */
} fight_rec;

/* Gate runs play each seed twice: side 0 the champion, side 1 the
 * candidate; self-play runs have one side. */
#define MAX_SIDES 2

typedef struct seed_rec {
    uint64_t game_seed;
    int n_fights[MAX_SIDES];
    fight_rec *fights[MAX_SIDES][MAX_FIGHTS_PER_SEED];
} seed_rec;

static label *label_new(int T, int Q) {
    size_t fl = (size_t)T * SF_FEAT_NCONT + (size_t)Q * SF_FEAT_NQCONT + 3u * (size_t)Q;
    size_t u32 = 2u * (size_t)Q;
    size_t u16 = (size_t)T * SF_FEAT_NCAT + 2u * (size_t)Q;
    size_t bytes = sizeof(label) + fl * 4 + u32 * 4 + u16 * 2 + (size_t)T + 8;
    label *l = calloc(1, bytes);
    if (!l)
        return NULL;
    uint8_t *p = (uint8_t *)(l + 1);
    l->cont = (float *)p, p += (size_t)T * SF_FEAT_NCONT * 4;
    l->qcont = (float *)p, p += (size_t)Q * SF_FEAT_NQCONT * 4;
    l->q = (float *)p, p += (size_t)Q * 4;
    l->cq = (float *)p, p += (size_t)Q * 4;
    l->pi = (float *)p, p += (size_t)Q * 4;
    l->codes = (uint32_t *)p, p += (size_t)Q * 4;
    l->visits = (uint32_t *)p, p += (size_t)Q * 4;
    l->cat = (uint16_t *)p, p += (size_t)T * SF_FEAT_NCAT * 2;
    l->query = (uint16_t *)p, p += (size_t)Q * 4;
    l->type = p;
    l->T = T;
    l->Q = Q;
    return l;
}

static void fight_free(fight_rec *f) {
    if (!f)
        return;
    free(f->turn_obs);
    for (int i = 0; i < f->n_labels; i++)
        free(f->labels[i]);
    free(f->labels);
    free(f);
}

static int fight_push(fight_rec *f, label *l) {
    if (f->n_labels == f->cap_labels) {
        int cap = f->cap_labels ? f->cap_labels * 2 : 32;
        label **nl = realloc(f->labels, sizeof *nl * (size_t)cap);
        if (!nl)
            return SF_ENOMEM;
        f->labels = nl;
        f->cap_labels = cap;
    }
    f->labels[f->n_labels++] = l;
    return SF_OK;
}

/* The forecast columns of label/label.h, observed at the first decision of
 * a turn. The block column is the block the player met the monsters' turn
 * with (just before this one): the block held now has just been reset. */
static void observe5(const sf_state *s, float out[FORECAST_COLS]) {
    sf_observation o;
    sf_engine_observe(s, &o);
    out[SF_FORECAST_PLAYER_HP] = (float)o.hp;
    out[SF_FORECAST_BLOCK_AT_ENEMY_TURN] = (float)o.block_at_enemy_turn;
    out[SF_FORECAST_INCOMING_DAMAGE] = (float)o.incoming_damage;
    out[SF_FORECAST_MONSTER_HP_TOTAL] = (float)o.monster_hp_total;
    out[SF_FORECAST_MONSTERS_ALIVE] = (float)o.monsters_alive;
}

/* ------------------------------------------------------------------------
 * Configuration mapping
 * ---------------------------------------------------------------------- */

int sf_job_encounter(const sf_run_config *cfg, uint64_t game_seed) {
    uint64_t h = sf_seed_derive(cfg->run_seed, game_seed, 0x656e63ull, 0);
    double u = (double)(h >> 11) * (1.0 / 9007199254740992.0);
    if (cfg->play.n_encounters == 0)
        return (int)(u * sf_encounter_count());
    double total = 0;
    for (int i = 0; i < cfg->play.n_encounters; i++)
        total += cfg->play.encounters[i].weight;
    double x = u * total, acc = 0;
    for (int i = 0; i < cfg->play.n_encounters; i++) {
        acc += cfg->play.encounters[i].weight;
        if (x < acc)
            return cfg->play.encounters[i].id;
    }
    return cfg->play.encounters[cfg->play.n_encounters - 1].id;
}

/* The UCT constant of a run's search.c_schedule for `simulations`: the
 * search's own schedule rule (sf_uct_c_schedule). A schedule that names no
 * c for this budget (empty, or its last step bounded below it) gives the
 * library's middle constant, sqrt(2) rounded (SF_SEARCH_DEFAULT_UCT_C_MID). */
static double c_for_budget(const sf_run_config *cfg, uint32_t simulations) {
    sf_uct_c_step steps[SF_CFG_MAX_CSCHED];
    int n = cfg->search.n_c_schedule;
    for (int i = 0; i < n; i++)
        steps[i] = (sf_uct_c_step){cfg->search.c_schedule[i].below, cfg->search.c_schedule[i].c};
    return sf_uct_c_schedule(simulations, steps, n, SF_SEARCH_DEFAULT_UCT_C_MID);
}

int sf_job_side_external(const sf_run_config *cfg, int side) {
    if (side < 0)
        return !strcmp(cfg->search.evaluator, "net");
    return !strcmp(sf_config_gate_side(cfg, side)->evaluator, "net");
}

/* The search of a self-play run (side < 0) or of a gate side: the search
 * section, then the side's overrides (0 / -1 / "same": keep). */
static void search_config(const sf_run_config *cfg, int side, sf_search_config *sc) {
    const struct sf_cfg_gate_side *g = side >= 0 ? sf_config_gate_side(cfg, side) : NULL;
    int external = sf_job_side_external(cfg, side);
    uint32_t sims = g && g->simulations ? g->simulations : cfg->search.simulations;
    sf_search_config_default(sc);
    sc->simulations = (int)sims;
    _Static_assert(SF_SEARCH_MAX_TREES == 64, "fleet/config.c bounds search.trees by 64");
    sc->trees = (int)(g && g->trees ? g->trees : cfg->search.trees);
    sc->evaluator = external ? SF_EVAL_EXTERNAL : SF_EVAL_ROLLOUT;
    sc->select = cfg->search.gumbel ? SF_SELECT_GUMBEL : SF_SELECT_AUTO;
    int side_select = g ? sf_search_select_lookup(g->select) : SF_ENOTFOUND; /* "same": none */
    if (side_select >= 0)
        sc->select = side_select;
    sc->root = cfg->search.clairvoyant ? SF_ROOT_CLAIRVOYANT : SF_ROOT_BELIEF;
    sc->uct_c = c_for_budget(cfg, sims);
    sc->pw_end_turn_c = sc->pw_other_c =
        g && g->widening_c > 0 ? g->widening_c : cfg->search.widening_c;
    sc->pw_end_turn_alpha = sc->pw_other_alpha =
        g && g->widening_alpha >= 0 ? g->widening_alpha : cfg->search.widening_alpha;
    sc->rollout_tau = cfg->search.rollout_tau;
    sc->rollout_max_plies = (int)cfg->search.max_rollout_plies;
    sc->gumbel_m = (int)cfg->search.gumbel_m;
    sc->gumbel_c_visit = cfg->search.gumbel_c_visit;
    sc->gumbel_c_scale = cfg->search.gumbel_c_scale;
    sc->leaf_mix = sf_config_leaf_mix(cfg, side);
    if (cfg->search.puct_c > 0)
        sc->puct_c1 = cfg->search.puct_c;
    sc->cvar_alpha = cfg->search.cvar_alpha;
    sc->cvar_lambda = cfg->search.cvar_lambda;
    sc->distributional = cfg->search.cvar_lambda > 0 || external;
}

static int base_spec(const sf_run_config *cfg, sf_fight_spec *spec, sf_err *err) {
    sf_fight_spec_default(spec);
    int rc = sf_deck_parse(cfg->play.deck, spec, err);
    if (rc < 0)
        return rc;
    spec->relics_n = 0;
    for (int i = 0; i < cfg->play.n_relics; i++)
        spec->relics[spec->relics_n++] = (uint8_t)sf_relic_lookup(cfg->play.relics[i]);
    memset(spec->potions, 0, sizeof spec->potions);
    for (int i = 0; i < cfg->play.n_potions; i++)
        spec->potions[i] = (uint8_t)sf_potion_lookup(cfg->play.potions[i]);
    spec->hp = (int)cfg->play.hp;
    spec->max_hp = (int)cfg->play.max_hp;
    spec->ascension = (int)cfg->play.ascension;
    spec->max_turns = (int)cfg->play.max_turns;
    return SF_OK;
}

/* ------------------------------------------------------------------------
 * The shared job state and a thread's slots
 * ---------------------------------------------------------------------- */

typedef struct job_ctx {
    const sf_run_config *cfg;
    const char *digest;
    const sf_job_spec *job;
    const sf_job_opts *opts;
    int sides; /* 1: self-play; 2: a gate (champion, candidate) */
    sf_search_config scfg[MAX_SIDES];
    uint64_t salt[MAX_SIDES]; /* mixed into a gate side's search seeds */
    const sf_batch_evaluator *ev[MAX_SIDES];
    sf_fight_spec base;
    int rewards; /* play.start rewards                    */
    sf_start_opts start;
    int gauntlet;
    seed_rec *seeds;
    atomic_uint_fast64_t next_seed;
    atomic_uint_fast64_t fights_done, labels_done;
    atomic_uint_fast64_t simulations, fallbacks_search, fallbacks_eval, decisions, searched;
    atomic_uint_fast64_t wins, engine_limits, turn_limits, unsearched_dropped, rollouts_cut_off;
    int keep_unsearched;
    atomic_int failed;
    pthread_mutex_t err_lock;
    sf_err err;
} job_ctx;

typedef struct slot {
    int active;
    uint64_t seed_index;
    seed_rec *rec;
    fight_rec *fight;
    sf_gauntlet g;
    int fight_index;
    sf_fight_spec spec;
    sf_state truth;
    uint32_t ply;
    int in_search;           /* a search is begun and not yet finished */
    uint32_t eval_fallbacks; /* leaves of the current search answered by the heuristic */
    int side;                /* the side playing (0 for self-play)       */
    sf_search *search;       /* searches[side]                            */
    sf_search *searches[MAX_SIDES];
} slot;

static void job_fail(job_ctx *jc, int code, const char *what, const sf_err *e) {
    pthread_mutex_lock(&jc->err_lock);
    if (!atomic_load(&jc->failed)) {
        sf_err_set(&jc->err, code, "%s: %s", what, e ? e->msg : sf_strerror(code));
        atomic_store(&jc->failed, code);
    }
    pthread_mutex_unlock(&jc->err_lock);
}

static int stopped(const job_ctx *jc) {
    return atomic_load(&jc->failed) != 0 || (jc->opts->stop && *jc->opts->stop);
}

/* Start the fight `sl->fight_index` of the slot's seed. */
static int start_fight(job_ctx *jc, slot *sl, sf_err *err) {
    fight_rec *f = calloc(1, sizeof *f);
    if (!f)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    sl->rec->fights[sl->side][sl->rec->n_fights[sl->side]++] = f;
    sl->fight = f;
    sf_start_desc *desc = NULL;
    if (sl->fight_index == 0) {
        sl->spec = jc->base;
        if (jc->gauntlet) {
            sf_gauntlet_generate(sl->rec->game_seed, &sl->g);
            sl->spec.encounter = sl->g.encounters[0];
            sl->spec.floor = 1;
        } else {
            sl->spec.encounter = sf_job_encounter(jc->cfg, sl->rec->game_seed);
            sl->spec.floor = 0;
        }
        if (jc->rewards) {
            /* a realistic start: an Act-1 prefix by the reward rules, on
             * streams of its own (engine.h "Starting positions") */
            if (!(desc = malloc(sizeof *desc)))
                return sf_err_set(err, SF_ENOMEM, "out of memory");
            int rc = sf_start_sample(&jc->start, jc->cfg->run_seed, sl->rec->game_seed,
                                     sl->spec.encounter, &sl->spec, desc, err);
            if (rc < 0) {
                free(desc);
                return sf_err_prefix(err, "seed %llu: start",
                                     (unsigned long long)sl->rec->game_seed);
            }
        }
        sl->spec.seed = sl->rec->game_seed;
        sl->spec.max_turns = jc->base.max_turns; /* a sampled start has the default cap */
    }
    f->encounter = sl->spec.encounter;
    f->start = sl->spec;
    int rc = sf_start_format(&sl->spec, desc, f->start_text, sizeof f->start_text);
    free(desc);
    if (rc < 0)
        return sf_err_set(err, rc, "seed %llu: the start does not fit its text form",
                          (unsigned long long)sl->rec->game_seed);
    sl->ply = 0;
    sl->in_search = 0;
    f->n_turn_obs = (sl->spec.max_turns ? sl->spec.max_turns : SF_MAX_TURNS_DEFAULT) + 1;
    if (!(f->turn_obs = calloc((size_t)f->n_turn_obs, sizeof *f->turn_obs)))
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    return sf_engine_init(&sl->truth, &sl->spec, err);
}

/* The searches of a decision derive their seeds from this. A gate side's
 * salt changes them (equal salts: both sides search alike). */
static uint64_t decision_seed(const job_ctx *jc, const slot *sl) {
    uint64_t s = sf_seed_derive(jc->cfg->run_seed, sl->rec->game_seed, (uint64_t)sl->fight_index,
                                0x736561726368ull);
    uint64_t salt = jc->salt[sl->side];
    return salt ? sf_seed_derive(s, salt, 0, 0x73616c74ull) : s;
}

/* Teacher forecasts: n determinised rollouts of the heuristic policy from
 * the belief root of the decision, observed at the starts of turns t+1..t+4. */
static void teacher(const job_ctx *jc, const slot *sl, label *l) {
    int n = (int)jc->cfg->search.teacher_rollouts;
    if (n <= 0)
        return;
    double sum[FORECAST_H][FORECAST_COLS] = {{0}};
    int reached[FORECAST_H] = {0};
    int t0 = (int)l->turn;
    for (int r = 0; r < n; r++) {
        uint64_t seed =
            sf_seed_derive(decision_seed(jc, sl), sl->ply, (uint64_t)r, 0x7465616368ull);
        sf_state s;
        sf_engine_belief_root(&sl->truth, seed, &s);
        uint64_t rng = sf_mix64(seed);
        int last_turn = t0;
        for (int ply = 0; ply < 1000 && !sf_engine_is_terminal(&s); ply++) {
            sf_observation o;
            sf_engine_observe(&s, &o);
            if (o.turn > last_turn) {
                last_turn = o.turn;
                int h = o.turn - t0 - 1;
                if (h >= FORECAST_H)
                    break;
                float v[FORECAST_COLS];
                observe5(&s, v);
                for (int c = 0; c < FORECAST_COLS; c++)
                    sum[h][c] += v[c];
                reached[h]++;
            }
            sf_action a;
            if (sf_search_rollout_action(&s, jc->cfg->search.rollout_tau, &rng, &a) < 0 ||
                sf_engine_apply(&s, a, NULL) < 0)
                break;
        }
    }
    l->teacher_n = n;
    for (int h = 0; h < FORECAST_H; h++) {
        l->coverage[h] = (float)reached[h] / (float)n;
        for (int c = 0; c < FORECAST_COLS; c++)
            l->teacher[h][c] = reached[h] ? (float)(sum[h][c] / reached[h]) : 0.0f;
    }
}

/* Observe the first decision of each turn (the forecasts' source). */
static void note_turn(slot *sl) {
    sf_observation o;
    sf_engine_observe(&sl->truth, &o);
    if (o.turn >= 0 && o.turn < sl->fight->n_turn_obs && !sl->fight->turn_obs[o.turn].seen) {
        sl->fight->turn_obs[o.turn].seen = 1;
        observe5(&sl->truth, sl->fight->turn_obs[o.turn].v);
    }
}

static int apply_chosen(job_ctx *jc, slot *sl, sf_action chosen, sf_err *err) {
    atomic_fetch_add(&jc->decisions, 1);
    if (sf_engine_apply(&sl->truth, chosen, NULL) < 0)
        return sf_err_set(err, SF_EINVAL, "seed %llu: the search chose an illegal action",
                          (unsigned long long)sl->rec->game_seed);
    sl->ply++;
    return SF_OK;
}

/* A decision with one legal action under labels.unsearched = drop: no
 * label, but the turn is still observed for the others' forecasts. */
static int skip_and_apply(job_ctx *jc, slot *sl, sf_action chosen, sf_err *err) {
    note_turn(sl);
    atomic_fetch_add(&jc->unsearched_dropped, 1);
    return apply_chosen(jc, sl, chosen, err);
}

/* Record the decision the slot is at (with `res`, or unsearched when
 * res == NULL) and apply `chosen`. */
static int record_and_apply(job_ctx *jc, slot *sl, const sf_action *actions, int n,
                            const sf_search_result *res, sf_action chosen, sf_err *err) {
    if (jc->sides > 1) { /* a gate labels nothing: its result is the pairs */
        if (res)
            atomic_fetch_add(&jc->simulations, res->simulations);
        return apply_chosen(jc, sl, chosen, err);
    }
    if (!res && !jc->keep_unsearched)
        return skip_and_apply(jc, sl, chosen, err);
    const int max_q = SF_FEAT_MAX_QUERIES;
    sf_feat *feat = malloc(sizeof *feat);
    if (!feat)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    int q = n < max_q ? n : max_q;
    sf_engine_feat(&sl->truth, actions, q, feat); /* SF_EFULL keeps what fits */
    label *l = label_new(feat->n_tokens, feat->n_queries);
    if (!l) {
        free(feat);
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    }
    sf_observation o;
    sf_engine_observe(&sl->truth, &o);
    l->fight_index = (uint32_t)sl->fight_index;
    l->ply = sl->ply;
    l->turn = (uint32_t)o.turn;
    memcpy(l->type, feat->type, (size_t)l->T);
    memcpy(l->cat, feat->cat, sizeof(uint16_t) * SF_FEAT_NCAT * (size_t)l->T);
    memcpy(l->cont, feat->cont, sizeof(float) * SF_FEAT_NCONT * (size_t)l->T);
    memcpy(l->query, feat->query, sizeof(uint16_t) * 2 * (size_t)l->Q);
    memcpy(l->qcont, feat->qcont, sizeof(float) * SF_FEAT_NQCONT * (size_t)l->Q);
    free(feat);
    for (int i = 0; i < l->Q; i++)
        l->codes[i] = sf_action_code(actions[i]);
    l->chosen = 0;
    for (int i = 0; i < l->Q; i++)
        if (sf_action_code(actions[i]) == sf_action_code(chosen))
            l->chosen = (uint32_t)i;
    if (res) {
        l->searched = res->searched;
        for (int i = 0; i < l->Q && i < res->n_actions; i++) {
            l->visits[i] = res->actions[i].visits;
            l->q[i] = (float)res->actions[i].q;
            l->cq[i] = (float)res->actions[i].completed_q;
            l->pi[i] = (float)res->actions[i].policy;
        }
        l->root_raw_value = (float)res->root_raw_value;
        l->root_search_value = (float)res->root_search_value;
        l->rollouts_cut_off = (uint32_t)res->rollouts_cut_off;
        l->leaf_mix = (float)jc->scfg[sl->side].leaf_mix;
        atomic_fetch_add(&jc->rollouts_cut_off, res->rollouts_cut_off);
        l->fallbacks = sl->eval_fallbacks;
        l->simulations = (uint32_t)res->simulations;
        l->n_trees = res->n_trees;
        for (int t = 0; t < res->n_trees && t < SF_SEARCH_MAX_TREES; t++)
            l->tree_value[t] = (float)res->tree_value[t];
        atomic_fetch_add(&jc->simulations, res->simulations);
        if (res->searched)
            atomic_fetch_add(&jc->searched, 1);
    } else {
        /* a single legal action: not searched; the policy is that action */
        l->pi[0] = 1.0f;
        l->n_trees = 0;
    }
    note_turn(sl);
    teacher(jc, sl, l);
    int rc = fight_push(sl->fight, l);
    if (rc < 0) {
        free(l);
        return sf_err_set(err, rc, "out of memory");
    }
    return apply_chosen(jc, sl, chosen, err);
}

/* The fight ended: outcome and forecast targets for every decision. */
static void finish_fight(job_ctx *jc, slot *sl) {
    fight_rec *f = sl->fight;
    sf_engine_outcome(&sl->truth, &f->outcome);
    if (f->outcome.won)
        atomic_fetch_add(&jc->wins, 1);
    if (f->outcome.engine_limit)
        atomic_fetch_add(&jc->engine_limits, 1);
    if (f->outcome.turn_limit)
        atomic_fetch_add(&jc->turn_limits, 1);
    for (int i = 0; i < f->n_labels; i++) {
        label *l = f->labels[i];
        for (int h = 0; h < FORECAST_H; h++) {
            int t = (int)l->turn + h + 1;
            if (t < f->n_turn_obs && f->turn_obs[t].seen) {
                l->mask[h] = 1;
                memcpy(l->forecast[h], f->turn_obs[t].v, sizeof l->forecast[h]);
            }
        }
    }
    free(f->turn_obs); /* the forecasts are filled in */
    f->turn_obs = NULL;
    f->n_turn_obs = 0;
    atomic_fetch_add(&jc->fights_done, 1);
    atomic_fetch_add(&jc->labels_done, (uint64_t)f->n_labels);
    if (jc->opts->on_progress)
        jc->opts->on_progress(jc->opts->progress_ctx, atomic_load(&jc->fights_done),
                              atomic_load(&jc->labels_done));
}

/* Take the next (seed, side) into an empty slot; 0 when none is left. */
static int fill_slot(job_ctx *jc, slot *sl, sf_err *err) {
    uint64_t u = atomic_fetch_add(&jc->next_seed, 1);
    uint64_t i = u / (uint64_t)jc->sides;
    if (i >= jc->job->seed_count)
        return 0;
    sl->active = 1;
    sl->seed_index = i;
    sl->side = (int)(u % (uint64_t)jc->sides);
    sl->search = sl->searches[sl->side];
    sl->rec = &jc->seeds[i];
    sl->rec->game_seed = jc->job->seed_start + i;
    sl->fight_index = 0;
    int rc = start_fight(jc, sl, err);
    return rc < 0 ? rc : 1;
}

/* Advance a slot until it waits for evaluations (returns the number of
 * requests appended to reqs) or its seed is finished (slot inactive). */
static int advance(job_ctx *jc, slot *sl, const sf_eval_request **reqs, int cap, int *n_reqs,
                   sf_err *err) {
    for (;;) {
        if (!sl->active)
            return SF_OK;
        if (sf_engine_is_terminal(&sl->truth)) {
            finish_fight(jc, sl);
            sf_outcome *o = &sl->fight->outcome;
            if (jc->gauntlet && o->won && sl->fight_index + 1 < sl->g.n) {
                sf_engine_carry_over(&sl->truth, &sl->g, sl->fight_index + 1, &sl->spec);
                sl->fight_index++;
                int rc = start_fight(jc, sl, err);
                if (rc < 0)
                    return rc;
                continue;
            }
            sl->active = 0;
            return SF_OK;
        }
        sf_action actions[SF_MAX_ACTIONS];
        int n = sf_engine_enumerate(&sl->truth, actions, SF_MAX_ACTIONS);
        if (n == 1 && !sl->in_search) {
            int rc = record_and_apply(jc, sl, actions, n, NULL, actions[0], err);
            if (rc < 0)
                return rc;
            continue;
        }
        if (!sl->in_search) {
            sf_err e = {0};
            if (sf_search_begin(sl->search, &sl->truth, decision_seed(jc, sl), sl->ply, &e) < 0) {
                atomic_fetch_add(&jc->fallbacks_search, 1);
                goto fallback;
            }
            sl->in_search = 1;
            sl->eval_fallbacks = 0;
        }
        int got = 0;
        sf_err e = {0};
        int rc = sf_search_step(sl->search, reqs + *n_reqs, cap - *n_reqs, &got, &e);
        if (rc == SF_SEARCH_PENDING) {
            *n_reqs += got;
            return SF_OK;
        }
        sl->in_search = 0;
        sf_search_result *res = malloc(sizeof *res);
        if (rc == SF_SEARCH_DONE && res && sf_search_result_get(sl->search, res, &e) == SF_OK) {
            rc = record_and_apply(jc, sl, actions, n, res, res->chosen_action, err);
            free(res);
            if (rc < 0)
                return rc;
            continue;
        }
        free(res);
        atomic_fetch_add(&jc->fallbacks_search, 1);
    fallback : {
        /* nothing usable: play the heuristic move, record no label */
        uint64_t rng = sf_seed_derive(decision_seed(jc, sl), sl->ply, 0x66616c6cull, 0);
        sf_action a;
        if (sf_search_rollout_action(&sl->truth, jc->cfg->search.rollout_tau, &rng, &a) < 0 ||
            sf_engine_apply(&sl->truth, a, NULL) < 0)
            return sf_err_set(err, SF_ESTATE, "seed %llu: no legal move",
                              (unsigned long long)sl->rec->game_seed);
        sl->ply++;
    }
    }
}

/* The batch's leaves waiting in their searches (meanwhile_ctx of a
 * mixed evaluation). */
typedef struct batch_leaves {
    const sf_eval_request **reqs;
    int n;
} batch_leaves;

/* With a leaf mix, play the batch's leaf rollouts (search.h
 * sf_search_leaf_rollouts): while gpu-evald works on the batch. */
static void play_leaf_rollouts(void *p) {
    const batch_leaves *b = p;
    for (int i = 0; i < b->n; i++)
        sf_search_leaf_rollouts(((slot *)b->reqs[i]->user)->search);
}

/* Answer a batch of leaf requests of one side: the network, or (when it
 * fails) the rollout heuristic for each, counted as fallbacks. With a
 * leaf mix the leaves' own rollouts are played while the batch is away. */
static void evaluate(job_ctx *jc, int side, void *session, const sf_eval_request **reqs, int n,
                     sf_eval_answer *ans) {
    const sf_batch_evaluator *ev = jc->ev[side];
    batch_leaves leaves = {reqs, n};
    int mixed = jc->scfg[side].leaf_mix > 0.0;
    if (ev && session) {
        int rc;
        if (mixed && ev->eval_overlap) {
            rc = ev->eval_overlap(session, reqs, n, ans, play_leaf_rollouts, &leaves);
        } else {
            if (mixed)
                play_leaf_rollouts(&leaves);
            rc = ev->eval(session, reqs, n, ans);
        }
        if (rc == SF_OK)
            return;
    }
    for (int i = 0; i < n; i++) {
        sf_state s = *reqs[i]->state;
        uint64_t rng = sf_seed_derive(reqs[i]->ticket, (uint64_t)reqs[i]->tree, 0x65766c, 0);
        memset(&ans[i], 0, sizeof ans[i]);
        int cut_off = 0;
        ans[i].value = sf_search_rollout(&s, jc->cfg->search.rollout_tau,
                                         (int)jc->cfg->search.max_rollout_plies, &rng, &cut_off);
        atomic_fetch_add(&jc->rollouts_cut_off, (uint64_t)cut_off);
        atomic_fetch_add(&jc->fallbacks_eval, 1);
        ((slot *)reqs[i]->user)->eval_fallbacks++;
    }
}

static void *thread_main(void *arg) {
    job_ctx *jc = arg;
    /* Several fights per thread only pay off when their leaves share a
     * network batch; with the rollout evaluator a thread plays one fight at
     * a time, which also keeps the threads' shares of a job even. */
    int external = 0, trees = 1;
    for (int s = 0; s < jc->sides; s++) {
        external |= jc->scfg[s].evaluator == SF_EVAL_EXTERNAL;
        trees = jc->scfg[s].trees > trees ? jc->scfg[s].trees : trees;
    }
    int g = external ? jc->opts->fights_per_thread : 1;
    int cap = g * trees;
    slot *slots = calloc((size_t)g, sizeof *slots);
    const sf_eval_request **reqs = calloc((size_t)cap, sizeof *reqs);
    const sf_eval_request **side_reqs = calloc((size_t)cap, sizeof *side_reqs);
    sf_eval_answer *ans = calloc((size_t)cap, sizeof *ans);
    sf_err err = {0};
    void *session[MAX_SIDES] = {NULL, NULL};
    int opened[MAX_SIDES] = {0, 0};
    if (!slots || !reqs || !side_reqs || !ans) {
        job_fail(jc, SF_ENOMEM, "worker thread", NULL);
        goto out;
    }
    for (int s = 0; s < jc->sides; s++) {
        const sf_batch_evaluator *ev = jc->ev[s];
        session[s] = ev ? ev->ctx : NULL;
        /* a session that cannot open is not fatal: its leaves fall back to
         * the heuristic, and every one is counted */
        if (ev && ev->open) {
            if (ev->open(ev->ctx, &session[s], &err) == SF_OK)
                opened[s] = 1;
            else
                session[s] = NULL;
        }
    }
    for (int i = 0; i < g; i++)
        for (int s = 0; s < jc->sides; s++) {
            if (sf_search_create(&jc->scfg[s], &slots[i].searches[s], &err) < 0) {
                job_fail(jc, err.code, "search", &err);
                goto out;
            }
            sf_search_set_user(slots[i].searches[s], &slots[i]);
        }
    int seeds_left = 1;
    while (!stopped(jc)) {
        int active = 0, n_reqs = 0;
        for (int i = 0; i < g && !stopped(jc); i++) {
            if (!slots[i].active && seeds_left) {
                int rc = fill_slot(jc, &slots[i], &err);
                if (rc < 0) {
                    job_fail(jc, rc, "fight setup", &err);
                    break;
                }
                if (rc == 0)
                    seeds_left = 0;
            }
            int rc = advance(jc, &slots[i], reqs, cap, &n_reqs, &err);
            if (rc < 0) {
                job_fail(jc, rc, "playing", &err);
                break;
            }
            active += slots[i].active;
        }
        /* each side's leaves as one batch to its evaluator */
        for (int s = 0; s < jc->sides && n_reqs > 0; s++) {
            int k = 0;
            for (int i = 0; i < n_reqs; i++)
                if (((slot *)reqs[i]->user)->side == s)
                    side_reqs[k++] = reqs[i];
            if (k == 0)
                continue;
            evaluate(jc, s, session[s], side_reqs, k, ans);
            for (int i = 0; i < k; i++) {
                slot *sl = side_reqs[i]->user;
                if (sf_search_feed(sl->search, side_reqs[i], &ans[i], &err) < 0) {
                    job_fail(jc, err.code, "feeding an evaluation", &err);
                    break;
                }
            }
        }
        if (!active && !seeds_left)
            break;
    }
out:
    for (int s = 0; s < jc->sides; s++)
        if (opened[s] && jc->ev[s]->close)
            jc->ev[s]->close(session[s]);
    for (int i = 0; slots && i < g; i++)
        for (int s = 0; s < jc->sides; s++)
            sf_search_destroy(slots[i].searches[s]);
    free(slots);
    free(reqs);
    free(side_reqs);
    free(ans);
    return NULL;
}

/* ------------------------------------------------------------------------
 * Writing the shard
 * ---------------------------------------------------------------------- */

typedef struct tensor_buf {
    Spirefleet__Tensor t;
    uint32_t shape[2];
} tensor_buf;

static Spirefleet__Tensor *tensor(tensor_buf *b, const char *dtype, const void *data, size_t bytes,
                                  uint32_t d0, uint32_t d1) {
    spirefleet__tensor__init(&b->t);
    b->t.dtype = (char *)dtype;
    b->shape[0] = d0;
    b->shape[1] = d1;
    b->t.n_shape = d1 ? 2 : 1;
    b->t.shape = b->shape;
    b->t.data.data = (uint8_t *)data;
    b->t.data.len = bytes;
    return &b->t;
}

static int write_label(job_ctx *jc, sf_shard_writer *w, const seed_rec *sr, const fight_rec *f,
                       const label *l, sf_err *err) {
    Spirefleet__LabelRecord rec = SPIREFLEET__LABEL_RECORD__INIT;
    Spirefleet__LabelIds ids = SPIREFLEET__LABEL_IDS__INIT;
    Spirefleet__Inputs in = SPIREFLEET__INPUTS__INIT;
    Spirefleet__SearchResult sr_msg = SPIREFLEET__SEARCH_RESULT__INIT;
    Spirefleet__Outcome out = SPIREFLEET__OUTCOME__INIT;
    Spirefleet__Forecast fc = SPIREFLEET__FORECAST__INIT;
    Spirefleet__TeacherForecast tf = SPIREFLEET__TEACHER_FORECAST__INIT;
    tensor_buf tb[10];
    const char *model = jc->opts->evaluator && jc->opts->evaluator->model_sha256
                            ? jc->opts->evaluator->model_sha256
                            : "rollout";

    ids.run_id = (char *)jc->cfg->name;
    ids.job_id = jc->job->job_id;
    ids.game_seed = sr->game_seed;
    ids.fight_index = l->fight_index;
    ids.decision_index = l->ply;
    ids.turn = l->turn;
    ids.encounter_id = (uint32_t)f->encounter;
    ids.encounter = (char *)sf_encounter_name(f->encounter);
    ids.engine_version = SF_ENGINE_VERSION;
    ids.tokenizer_version = SF_FEAT_VERSION;
    ids.model_sha256 = (char *)model;
    ids.config_digest = (char *)jc->digest;
    ids.ascension = jc->cfg->play.ascension;
    ids.start = (char *)f->start_text;
    ids.start_version = SF_START_VERSION;

    uint32_t T = (uint32_t)l->T, Q = (uint32_t)l->Q;
    in.token_type = tensor(&tb[0], "u8", l->type, T, T, 0);
    in.token_cat = tensor(&tb[1], "u16", l->cat, T * SF_FEAT_NCAT * 2u, T, SF_FEAT_NCAT);
    in.token_cont = tensor(&tb[2], "f32", l->cont, T * SF_FEAT_NCONT * 4u, T, SF_FEAT_NCONT);
    in.query = tensor(&tb[3], "u16", l->query, Q * 4u, Q, 2);
    in.query_cont = tensor(&tb[4], "f32", l->qcont, Q * SF_FEAT_NQCONT * 4u, Q, SF_FEAT_NQCONT);
    in.action_code = tensor(&tb[5], "u32", l->codes, Q * 4u, Q, 0);

    sr_msg.n_visits = Q;
    sr_msg.visits = l->visits;
    sr_msg.n_q = Q;
    sr_msg.q = l->q;
    sr_msg.n_completed_q = Q;
    sr_msg.completed_q = l->cq;
    sr_msg.n_policy = Q;
    sr_msg.policy = l->pi;
    sr_msg.chosen = l->chosen;
    sr_msg.root_raw_value = l->root_raw_value;
    sr_msg.root_search_value = l->root_search_value;
    sr_msg.rollouts_cut_off = l->rollouts_cut_off;
    sr_msg.leaf_mix = l->leaf_mix;
    sr_msg.simulations = l->simulations;
    sr_msg.trees = (uint32_t)l->n_trees;
    sr_msg.n_tree_root_values = (size_t)l->n_trees;
    sr_msg.tree_root_values = (float *)l->tree_value;
    sr_msg.searched = l->searched;
    sr_msg.fallbacks = l->fallbacks;

    float bins[SF_VALUE_BINS];
    double y = sf_value_of_outcome(&f->outcome);
    sf_value_project(y, bins);
    out.won = f->outcome.won;
    out.final_hp = (uint32_t)(f->outcome.hp > 0 ? f->outcome.hp : 0);
    out.max_hp = (uint32_t)f->outcome.max_hp;
    out.turns = (uint32_t)f->outcome.turns;
    out.potions_used = (uint32_t)f->outcome.potions_used;
    out.potions_left = (uint32_t)f->outcome.potions_left;
    out.monster_hp_left = (uint32_t)f->outcome.monster_hp_left;
    out.monster_hp_pool = (uint32_t)f->outcome.monster_hp_pool;
    out.engine_limit = f->outcome.engine_limit != 0;
    out.turn_limit = f->outcome.turn_limit != 0;
    out.escaped = f->outcome.escaped != 0;
    out.n_value_bins = SF_VALUE_BINS;
    out.value_bins = bins;
    out.value = (float)y;

    fc.target = tensor(&tb[6], "f32", l->forecast, sizeof l->forecast, FORECAST_H, FORECAST_COLS);
    fc.mask = tensor(&tb[7], "u8", l->mask, sizeof l->mask, FORECAST_H, 0);

    rec.schema_version = SF_LABEL_SCHEMA_VERSION;
    rec.ids = &ids;
    rec.inputs = &in;
    rec.search = &sr_msg;
    rec.outcome = &out;
    rec.forecast = &fc;
    if (l->teacher_n > 0) {
        tf.rollouts = (uint32_t)l->teacher_n;
        tf.mean = tensor(&tb[8], "f32", l->teacher, sizeof l->teacher, FORECAST_H, FORECAST_COLS);
        tf.coverage = tensor(&tb[9], "f32", l->coverage, sizeof l->coverage, FORECAST_H, 0);
        rec.teacher = &tf;
    }
    return sf_shard_writer_append(w, &rec, err);
}

/* The pair of seed `sr`: each side's result (docs/gate.md "What a pair
 * records"): a fight's won and graded score; a gauntlet's won = cleared,
 * and y within the label contract's ranges: cleared, the last (boss)
 * fight's score; died in fight k of n, (0.2 (k - 1) + that fight's score)
 * / n, in [0, 0.2) and increasing with the fights won. */
static void side_result(const job_ctx *jc, const seed_rec *sr, int side, int *won, double *y) {
    int n = sr->n_fights[side];
    const fight_rec *last = sr->fights[side][n - 1];
    double yl = sf_value_of_outcome(&last->outcome);
    *won = last->outcome.won;
    *y = yl;
    if (jc->gauntlet) {
        sf_gauntlet g;
        sf_gauntlet_generate(sr->game_seed, &g);
        *won = last->outcome.won && n == g.n;
        if (!*won)
            *y = (SF_VALUE_LOSS_MAX * (double)(n - 1) + yl) / (double)g.n;
    }
}

static int write_pair(job_ctx *jc, sf_shard_writer *w, const seed_rec *sr, sf_err *err) {
    Spirefleet__GatePair p = SPIREFLEET__GATE_PAIR__INIT;
    p.game_seed = sr->game_seed;
    int won[2];
    double y[2];
    for (int s = 0; s < 2; s++) {
        if (sr->n_fights[s] == 0)
            return sf_err_set(err, SF_ESTATE, "seed %llu: side %d played no fight",
                              (unsigned long long)sr->game_seed, s);
        side_result(jc, sr, s, &won[s], &y[s]);
    }
    const fight_rec *f0 = sr->fights[0][0];
    _Static_assert((int)SF_POOL_WEAK == (int)SF_SHARD_GATE_WEAK &&
                       (int)SF_POOL_STRONG == (int)SF_SHARD_GATE_STRONG &&
                       (int)SF_POOL_ELITE == (int)SF_SHARD_GATE_ELITE &&
                       (int)SF_POOL_BOSS == (int)SF_SHARD_GATE_BOSS,
                   "a fight pair's class is its encounter's pool");
    p.class_id = jc->gauntlet ? SF_SHARD_GATE_GAUNTLET : (uint32_t)sf_encounter_pool(f0->encounter);
    p.encounter = (char *)(jc->gauntlet ? "gauntlet" : sf_encounter_name(f0->encounter));
    p.won_champion = won[0];
    p.won_candidate = won[1];
    p.y_champion = (float)y[0];
    p.y_candidate = (float)y[1];
    return sf_shard_writer_add_gate_pair(w, &p, err);
}

/* The job's starts in counters: fights, sums of deck cards, relics, potions,
 * floor, HP and max HP, and how many copies of each card the decks held. */
#define START_COUNTERS_MAX (8 + SF_PICK_CARDS)
typedef struct start_summary {
    int n;
    char name[START_COUNTERS_MAX][SF_CFG_NAME + 16];
    uint64_t value[START_COUNTERS_MAX];
} start_summary;

static void summarise_starts(const job_ctx *jc, start_summary *out) {
    uint64_t v[7] = {0}, cards[SF_PICK_CARDS] = {0};
    for (uint64_t i = 0; i < jc->job->seed_count; i++)
        for (int k = 0; k < jc->seeds[i].n_fights[0]; k++) {
            const sf_fight_spec *sp = &jc->seeds[i].fights[0][k]->start;
            int potions = 0;
            for (int p = 0; p < SF_MAX_POTION_SLOTS; p++)
                potions += sp->potions[p] != 0;
            v[0]++;
            v[1] += (uint64_t)sp->deck_n;
            v[2] += (uint64_t)sp->relics_n;
            v[3] += (uint64_t)potions;
            v[4] += (uint64_t)sp->floor;
            v[5] += (uint64_t)sp->hp;
            v[6] += (uint64_t)sp->max_hp;
            for (int c = 0; c < sp->deck_n; c++)
                if (sp->deck[c].id < SF_PICK_CARDS)
                    cards[sp->deck[c].id]++;
        }
    static const char *const names[7] = {"start.fights",    "start.deck_cards", "start.relics",
                                         "start.potions",   "start.floor_sum",  "start.hp_sum",
                                         "start.max_hp_sum"};
    out->n = 0;
    for (int k = 0; k < 7; k++) {
        snprintf(out->name[out->n], sizeof out->name[0], "%s", names[k]);
        out->value[out->n++] = v[k];
    }
    for (int c = 0; c < SF_PICK_CARDS && out->n < START_COUNTERS_MAX; c++)
        if (cards[c]) {
            snprintf(out->name[out->n], sizeof out->name[0], "start.card.%s", sf_card_name(c));
            out->value[out->n++] = cards[c];
        }
}

static void counter(Spirefleet__Counter *cs, Spirefleet__Counter **cp, size_t *n, const char *name,
                    uint64_t value) {
    spirefleet__counter__init(&cs[*n]);
    cs[*n].name = (char *)name;
    cs[*n].value = value;
    cp[*n] = &cs[*n];
    (*n)++;
}

/* sf_job_run, step 1: the options, and an evaluator for every side whose
 * search uses a network. */
static int check_job(const sf_run_config *cfg, const sf_job_spec *job, const sf_job_opts *opts,
                     sf_err *err) {
    if (!opts || opts->threads < 1 || opts->fights_per_thread < 1 || job->seed_count == 0)
        return sf_err_set(err, SF_EINVAL, "job %llu: bad options (threads, fights, seeds)",
                          (unsigned long long)job->job_id);
    int gate = !strcmp(cfg->kind, "gate"), sides = gate ? 2 : 1;
    for (int s = 0; s < sides; s++)
        if (sf_job_side_external(cfg, gate ? s : -1) &&
            !(gate ? opts->side_evaluator[s] : opts->evaluator))
            return sf_err_set(
                err, SF_EINVAL, "job %llu: the run's %s uses a network but no evaluator was given",
                (unsigned long long)job->job_id, gate ? (s ? "candidate" : "champion") : "search");
    return SF_OK;
}

/* Step 2: the shared job state: each side's search, the start rules, the
 * base fight and one record per seed. On failure the caller still frees it
 * (job_ctx_free). */
static int job_ctx_init(job_ctx *jc, const sf_run_config *cfg, const char *config_digest,
                        const sf_job_spec *job, const sf_job_opts *opts, sf_err *err) {
    int gate = !strcmp(cfg->kind, "gate");
    jc->cfg = cfg;
    jc->digest = config_digest;
    jc->job = job;
    jc->opts = opts;
    jc->gauntlet = !strcmp(cfg->play.mode, "gauntlet");
    jc->keep_unsearched = !strcmp(cfg->labels.unsearched, "keep");
    jc->sides = gate ? 2 : 1;
    for (int s = 0; s < jc->sides; s++) {
        search_config(cfg, gate ? s : -1, &jc->scfg[s]);
        jc->salt[s] = gate ? sf_config_gate_side(cfg, s)->salt : 0;
        jc->ev[s] = gate ? opts->side_evaluator[s] : opts->evaluator;
    }
    sf_start_opts_default(&jc->start);
    jc->rewards = !strcmp(cfg->play.start, "rewards");
    jc->start.start = jc->rewards ? SF_START_REWARDS : SF_START_STARTER;
    jc->start.picker = sf_picker_lookup(cfg->play.picker);
    jc->start.ascension = (int)cfg->play.ascension;
    pthread_mutex_init(&jc->err_lock, NULL);
    int rc = base_spec(cfg, &jc->base, err);
    if (rc == SF_OK && !(jc->seeds = calloc(job->seed_count, sizeof *jc->seeds)))
        rc = sf_err_set(err, SF_ENOMEM, "out of memory");
    return rc;
}

static void job_ctx_free(job_ctx *jc) {
    if (jc->seeds) {
        for (uint64_t i = 0; i < jc->job->seed_count; i++)
            for (int s = 0; s < MAX_SIDES; s++)
                for (int k = 0; k < jc->seeds[i].n_fights[s]; k++)
                    fight_free(jc->seeds[i].fights[s][k]);
        free(jc->seeds);
    }
    pthread_mutex_destroy(&jc->err_lock);
    free(jc);
}

/* Step 3: play every seed on opts->threads threads (at most 256). Fails
 * when a thread failed, no thread started, or the job was stopped. */
static int play_seeds(job_ctx *jc, sf_err *err) {
    pthread_t th[256];
    int nt = jc->opts->threads > 256 ? 256 : jc->opts->threads, started = 0, why = 0;
    for (int i = 0; i < nt; i++) {
        int e = pthread_create(&th[started], NULL, thread_main, jc);
        if (e == 0)
            started++;
        else
            why = e;
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (started == 0) {
        sf_err reason = {0};
        sf_err_set(&reason, SF_EIO, "%s", strerror(why));
        job_fail(jc, SF_EIO, "cannot start worker threads", &reason);
    }
    unsigned long long id = (unsigned long long)jc->job->job_id;
    if (atomic_load(&jc->failed))
        return sf_err_set(err, atomic_load(&jc->failed), "job %llu: %s", id, jc->err.msg);
    if (jc->opts->stop && *jc->opts->stop)
        return sf_err_set(err, SF_ESTATE, "job %llu: abandoned", id);
    return SF_OK;
}

/* Step 4: open the shard, its header naming the run, the job, the versions,
 * the model and the worker. */
static int open_shard(const job_ctx *jc, const char *shard_path, sf_shard_writer **w, sf_err *err) {
    const sf_job_opts *opts = jc->opts;
    const char *model = jc->sides == 2 ? "rollout"
                        : opts->evaluator && opts->evaluator->model_sha256
                            ? opts->evaluator->model_sha256
                            : "rollout";
    sf_shard_info info = {.run_id = jc->cfg->name,
                          .job_id = jc->job->job_id,
                          .engine_version = SF_ENGINE_VERSION,
                          .tokenizer_version = SF_FEAT_VERSION,
                          .model_sha256 = model,
                          .config_digest = jc->digest,
                          .worker_id = opts->worker_id ? opts->worker_id : "local",
                          .worker_key_id = opts->worker_key_id,
                          .worker_host = opts->worker_host,
                          .build_id = SF_BUILD_ID};
    sf_shard_writer_opts wopts = {.zstd_level = jc->cfg->shard.zstd_level};
    return sf_shard_writer_open(shard_path, &info, &wopts, w, err);
}

/* Step 5: every label in (seed, fight, decision) order; a gate's pairs in
 * seed order. */
static int write_records(job_ctx *jc, sf_shard_writer *w, sf_err *err) {
    int rc = SF_OK;
    for (uint64_t i = 0; i < jc->job->seed_count && rc == SF_OK; i++) {
        if (jc->sides == 2) {
            rc = write_pair(jc, w, &jc->seeds[i], err);
            continue;
        }
        for (int k = 0; k < jc->seeds[i].n_fights[0] && rc == SF_OK; k++) {
            const fight_rec *f = jc->seeds[i].fights[0][k];
            for (int d = 0; d < f->n_labels && rc == SF_OK; d++)
                rc = write_label(jc, w, &jc->seeds[i], f, f->labels[d], err);
        }
    }
    return rc;
}

/* Step 6: the job's totals into `res` and the shard's stats, and the seal
 * (t0: when the job began, for the wall time). */
static int seal_shard(job_ctx *jc, sf_shard_writer *w, uint64_t t0, sf_job_result *res,
                      sf_err *err) {
    res->records = sf_shard_writer_count(w);
    res->fights = atomic_load(&jc->fights_done);
    res->wins = atomic_load(&jc->wins);
    res->decisions = atomic_load(&jc->decisions);
    res->searched = atomic_load(&jc->searched);
    res->simulations = atomic_load(&jc->simulations);
    res->fallbacks_search = atomic_load(&jc->fallbacks_search);
    res->fallbacks_eval = atomic_load(&jc->fallbacks_eval);
    Spirefleet__JobStats st = SPIREFLEET__JOB_STATS__INIT;
    Spirefleet__Counter kinds[2] = {SPIREFLEET__COUNTER__INIT, SPIREFLEET__COUNTER__INIT};
    Spirefleet__Counter *kp[2] = {&kinds[0], &kinds[1]};
    /* Counters a trainer filters or checks by (docs/format.md "Job
     * counters"), then the distribution of starts. */
    start_summary sum;
    summarise_starts(jc, &sum);
    Spirefleet__Counter cs[4 + START_COUNTERS_MAX];
    Spirefleet__Counter *cp[4 + START_COUNTERS_MAX];
    size_t ncs = 0;
    counter(cs, cp, &ncs, SF_SHARD_COUNTER_ENGINE_LIMIT, atomic_load(&jc->engine_limits));
    counter(cs, cp, &ncs, SF_SHARD_COUNTER_TURN_LIMIT, atomic_load(&jc->turn_limits));
    counter(cs, cp, &ncs, "rollouts_cut_off", atomic_load(&jc->rollouts_cut_off));
    counter(cs, cp, &ncs, "unsearched_dropped", atomic_load(&jc->unsearched_dropped));
    for (int k = 0; k < sum.n; k++)
        counter(cs, cp, &ncs, sum.name[k], sum.value[k]);
    st.n_counters = ncs;
    st.counters = cp;
    kinds[0].name = (char *)"search";
    kinds[0].value = res->fallbacks_search;
    kinds[1].name = (char *)"evaluator";
    kinds[1].value = res->fallbacks_eval;
    st.fights = res->fights;
    st.fights_won = res->wins;
    st.decisions = res->decisions;
    st.simulations = res->simulations;
    st.fallbacks = res->fallbacks_search + res->fallbacks_eval;
    st.n_fallback_by_kind = 2;
    st.fallback_by_kind = kp;
    res->seconds = (double)(sf_now_ns() - t0) / 1e9;
    st.wall_seconds = res->seconds; /* stats are outside the content digest */
    return sf_shard_writer_seal(w, &st, res->digest, err);
}

int sf_job_run(const sf_run_config *cfg, const char *config_digest, const sf_job_spec *job,
               const sf_job_opts *opts, const char *shard_path, sf_job_result *res, sf_err *err) {
    memset(res, 0, sizeof *res);
    int rc = check_job(cfg, job, opts, err);
    if (rc < 0)
        return rc;
    uint64_t t0 = sf_now_ns();
    job_ctx *jc = calloc(1, sizeof *jc);
    if (!jc)
        return sf_err_set(err, SF_ENOMEM, "out of memory");
    rc = job_ctx_init(jc, cfg, config_digest, job, opts, err);
    if (rc == SF_OK)
        rc = play_seeds(jc, err);
    sf_shard_writer *w = NULL;
    if (rc == SF_OK)
        rc = open_shard(jc, shard_path, &w, err);
    if (rc == SF_OK) {
        rc = write_records(jc, w, err);
        if (rc < 0)
            sf_shard_writer_abort(w);
        else
            rc = seal_shard(jc, w, t0, res, err);
    }
    job_ctx_free(jc);
    return rc;
}
