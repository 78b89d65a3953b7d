/* search.c — one decision: K root-parallel trees, the resumable step/feed
 * API, the synchronous runner with threads, the Gumbel root's sequential
 * halving in lockstep phases (search-algorithm §2.7), root aggregation (search-algorithm §6.2) and
 * the choice of the action. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "search/internal.h"

/* Last seed coordinate: tells tree seeds, the belief-root seed and the Gumbel
 * noise seed apart (sf_seed_derive(run, decision, index, tag)). */
enum { SEED_TREE = 1, SEED_BELIEF = 2, SEED_GUMBEL = 3 };

/* The defaults (common/search_defaults.h names the numbers). Static, so
 * the padding is zero too and equal configurations compare equal
 * byte for byte. */
static const sf_search_config search_defaults = {
    .simulations = SF_SEARCH_DEFAULT_SIMULATIONS,
    .trees = SF_SEARCH_DEFAULT_TREES,
    .select = SF_SELECT_AUTO,
    .evaluator = SF_EVAL_ROLLOUT,
    .root = SF_ROOT_BELIEF,
    .uct_c = -1.0,
    .uct_budget_mid = SF_SEARCH_DEFAULT_UCT_BUDGET_MID,
    .uct_budget_high = SF_SEARCH_DEFAULT_UCT_BUDGET_HIGH,
    .uct_c_low = SF_SEARCH_DEFAULT_UCT_C_LOW,
    .uct_c_mid = SF_SEARCH_DEFAULT_UCT_C_MID,
    .uct_c_high = SF_SEARCH_DEFAULT_UCT_C_HIGH,
    .puct_c1 = SF_SEARCH_DEFAULT_PUCT_C1,
    .puct_c2 = SF_SEARCH_DEFAULT_PUCT_C2,
    .puct_sqrt_offset = SF_SEARCH_DEFAULT_PUCT_SQRT_OFFSET,
    .puct_fpu_reduction = SF_SEARCH_DEFAULT_PUCT_FPU_REDUCTION,
    .gumbel_m = SF_SEARCH_DEFAULT_GUMBEL_M,
    .gumbel_c_visit = SF_SEARCH_DEFAULT_GUMBEL_C_VISIT,
    .gumbel_c_scale = SF_SEARCH_DEFAULT_GUMBEL_C_SCALE,
    .gumbel_rescale = 0,
    .gumbel_noise = SF_SEARCH_DEFAULT_GUMBEL_NOISE,
    .pw_end_turn_c = SF_SEARCH_DEFAULT_WIDENING_C,
    .pw_end_turn_alpha = SF_SEARCH_DEFAULT_WIDENING_ALPHA,
    .pw_other_c = SF_SEARCH_DEFAULT_WIDENING_C,
    .pw_other_alpha = SF_SEARCH_DEFAULT_WIDENING_ALPHA,
    .distributional = 0,
    .cvar_alpha = SF_SEARCH_DEFAULT_CVAR_ALPHA,
    .cvar_lambda = SF_SEARCH_DEFAULT_CVAR_LAMBDA,
    .rollout_tau = SF_SEARCH_DEFAULT_ROLLOUT_TAU,
    .rollout_max_plies = SF_SEARCH_DEFAULT_ROLLOUT_MAX_PLIES,
    .leaf_mix = SF_SEARCH_DEFAULT_LEAF_MIX,
    .choose_margin = SF_SEARCH_DEFAULT_CHOOSE_MARGIN,
    .end_turn_guards = 1,
    .horizon_turns = 0,
    .stop_at_transposition = 1,
    .request_feat = 1,
    .edges_per_node = SF_SEARCH_DEFAULT_EDGES_PER_NODE,
};

void sf_search_config_default(sf_search_config *c) {
    memcpy(c, &search_defaults, sizeof *c);
}

static int bad(sf_err *err, const char *field, const char *why) {
    return sf_err_set(err, SF_ECONFIG, "search config: %s %s", field, why);
}

int sf_search_config_validate(const sf_search_config *c, sf_err *err) {
    if (!c)
        return sf_err_set(err, SF_EINVAL, "search config: NULL");
    if (c->simulations < 1 || c->simulations > 50000000)
        return bad(err, "simulations", "must be in 1..50000000");
    if (c->trees < 1 || c->trees > SF_SEARCH_MAX_TREES)
        return bad(err, "trees", "must be in 1..64");
    if ((uint64_t)c->trees > (uint64_t)c->simulations)
        return bad(err, "trees", "must not exceed simulations (each tree runs at least one)");
    if (c->select < SF_SELECT_AUTO || c->select > SF_SELECT_GUMBEL)
        return bad(err, "select", "must be auto, uct, puct or gumbel");
    if (c->evaluator < SF_EVAL_ROLLOUT || c->evaluator > SF_EVAL_EXTERNAL)
        return bad(err, "evaluator", "must be rollout, uniform or external");
    if (c->root != SF_ROOT_BELIEF && c->root != SF_ROOT_CLAIRVOYANT)
        return bad(err, "root", "must be belief or clairvoyant");
    if (!(c->uct_c < 0.0 || isfinite(c->uct_c)))
        return bad(err, "uct_c", "must be finite (or negative for the budget table)");
    if (c->uct_budget_mid > c->uct_budget_high)
        return bad(err, "uct_budget_mid", "must not exceed uct_budget_high");
    if (!(c->uct_c_low >= 0.0 && c->uct_c_mid >= 0.0 && c->uct_c_high >= 0.0) ||
        !isfinite(c->uct_c_low + c->uct_c_mid + c->uct_c_high))
        return bad(err, "uct_c_low/mid/high", "must be finite and >= 0");
    if (!(c->puct_c1 >= 0.0) || !(c->puct_c2 > 0.0) || !isfinite(c->puct_c1 + c->puct_c2))
        return bad(err, "puct_c1/puct_c2", "must be finite, c1 >= 0, c2 > 0");
    if (!(c->puct_sqrt_offset >= 0.0) || !isfinite(c->puct_sqrt_offset))
        return bad(err, "puct_sqrt_offset", "must be finite and >= 0");
    if (!(c->puct_fpu_reduction >= 0.0) || !isfinite(c->puct_fpu_reduction))
        return bad(err, "puct_fpu_reduction", "must be finite and >= 0");
    if (c->gumbel_rescale && c->select != SF_SELECT_GUMBEL)
        return bad(err, "gumbel_rescale", "applies to select = gumbel only");
    if (c->gumbel_m < 2 || c->gumbel_m > SF_MAX_ACTIONS)
        return bad(err, "gumbel_m", "must be in 2..64");
    if (!(c->gumbel_c_visit >= 0.0) || !(c->gumbel_c_scale >= 0.0) || !(c->gumbel_noise >= 0.0) ||
        !isfinite(c->gumbel_c_visit + c->gumbel_c_scale + c->gumbel_noise))
        return bad(err, "gumbel_c_visit/c_scale/noise", "must be finite and >= 0");
    if (!(c->pw_end_turn_c >= 1.0) || !(c->pw_other_c >= 1.0) ||
        !(c->pw_end_turn_alpha >= 0.0 && c->pw_end_turn_alpha <= 1.0) ||
        !(c->pw_other_alpha >= 0.0 && c->pw_other_alpha <= 1.0))
        return bad(err, "pw_*", "need C >= 1 and alpha in [0, 1]");
    if (!(c->cvar_alpha > 0.0 && c->cvar_alpha <= 1.0))
        return bad(err, "cvar_alpha", "must be in (0, 1]");
    if (!(c->cvar_lambda >= 0.0 && c->cvar_lambda <= 1.0))
        return bad(err, "cvar_lambda", "must be in [0, 1]");
    if (c->cvar_lambda > 0.0 && !c->distributional)
        return bad(err, "cvar_lambda", "needs distributional = 1");
    if (!(c->rollout_tau >= 0.0) || !isfinite(c->rollout_tau))
        return bad(err, "rollout_tau", "must be finite and >= 0");
    if (c->rollout_max_plies < 0 || c->rollout_max_plies > 100000)
        return bad(err, "rollout_max_plies", "must be in 0..100000");
    if (!(c->choose_margin >= 0.0 && c->choose_margin <= 1.0))
        return bad(err, "choose_margin", "must be in [0, 1]");
    if (c->horizon_turns < 0)
        return bad(err, "horizon_turns", "must be >= 0");
    if (!(c->leaf_mix >= 0.0 && c->leaf_mix <= 1.0))
        return bad(err, "leaf_mix", "must be in [0, 1]");
    if (c->edges_per_node < 1 || c->edges_per_node > SF_MAX_ACTIONS)
        return bad(err, "edges_per_node", "must be in 1..64");
    if ((c->allocator.alloc == NULL) != (c->allocator.free == NULL))
        return bad(err, "allocator", "needs both alloc and free, or neither");
    return SF_OK;
}

/* ---------------------------------------------------------------------------
 * Life cycle
 * ------------------------------------------------------------------------- */
static void *salloc(const sf_search_config *c, size_t bytes) {
    return c->allocator.alloc ? c->allocator.alloc(c->allocator.ctx, bytes) : malloc(bytes);
}

static void sfree(const sf_search_config *c, void *p) {
    if (!p)
        return;
    if (c->allocator.free)
        c->allocator.free(c->allocator.ctx, p);
    else
        free(p);
}

/* Simulations one tree may run: its share plus one per Gumbel phase (the
 * round-robin split of a phase can give a tree one more than an even share). */
static uint32_t tree_sims_cap(const sf_search_config *c) {
    uint32_t share = (uint32_t)((c->simulations + c->trees - 1) / c->trees);
    return share + SF_GUMBEL_MAX_PHASES;
}

int sf_search_create(const sf_search_config *cfg, sf_search **out, sf_err *err) {
    *out = NULL;
    int rc = sf_search_config_validate(cfg, err);
    if (rc < 0)
        return rc;
    sf_search *s = salloc(cfg, sizeof *s);
    if (!s)
        return sf_err_set(err, SF_ENOMEM, "search: cannot allocate the search object");
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->memory = sizeof *s;
    s->n_trees = cfg->trees;
    s->trees = salloc(cfg, sizeof(sf_tree) * (size_t)cfg->trees);
    uint32_t cap = tree_sims_cap(cfg);
    s->forced_cap = cap;
    s->forced_buf = salloc(cfg, sizeof(uint16_t) * (size_t)cap * (size_t)cfg->trees);
    if (!s->trees || !s->forced_buf) {
        sfree(cfg, s->trees);
        sfree(cfg, s->forced_buf);
        sfree(cfg, s);
        return sf_err_set(err, SF_ENOMEM, "search: cannot allocate %d trees", cfg->trees);
    }
    memset(s->trees, 0, sizeof(sf_tree) * (size_t)cfg->trees);
    s->memory += sizeof(sf_tree) * (size_t)cfg->trees + sizeof(uint16_t) * cap * cfg->trees;
    for (int k = 0; k < cfg->trees; k++) {
        s->trees[k].index = k;
        s->trees[k].owner = s;
        rc = sf_tree_alloc(s, &s->trees[k], cap, err);
        if (rc < 0) {
            sf_search_destroy(s);
            return rc;
        }
    }
    *out = s;
    return SF_OK;
}

void sf_search_destroy(sf_search *s) {
    if (!s)
        return;
    sf_search_config c = s->cfg;
    if (s->trees)
        for (int k = 0; k < s->n_trees; k++)
            sf_tree_free(s, &s->trees[k]);
    sfree(&c, s->trees);
    sfree(&c, s->forced_buf);
    sfree(&c, s);
}

const sf_search_config *sf_search_get_config(const sf_search *s) {
    return &s->cfg;
}

size_t sf_search_memory(const sf_search *s) {
    return s->memory;
}

void sf_search_set_user(sf_search *s, void *user) {
    s->user = user;
}

int sf_search_begin(sf_search *s, const sf_state *truth, uint64_t run_seed, uint64_t decision_index,
                    sf_err *err) {
    s->begun = 0;
    s->finished = 0;
    if (sf_engine_is_terminal(truth))
        return sf_err_set(err, SF_ESTATE, "search: the position is terminal");
    s->truth = *truth;
    if (s->cfg.root == SF_ROOT_CLAIRVOYANT)
        s->root = *truth;
    else
        sf_engine_belief_root(truth, sf_seed_derive(run_seed, decision_index, 0, SEED_BELIEF),
                              &s->root);
    s->n_root = sf_engine_enumerate(&s->root, s->root_actions, SF_MAX_ACTIONS);
    if (s->n_root <= 0)
        return sf_err_set(err, SF_ESTATE, "search: the position has no legal action");
    sf_observation ob;
    sf_engine_observe(&s->root, &ob);
    s->root_turn = ob.turn;
    s->run_seed = run_seed;
    s->decision_index = decision_index;
    s->budget = s->cfg.simulations;
    s->select = s->cfg.select;
    if (s->select == SF_SELECT_AUTO)
        s->select = s->cfg.evaluator == SF_EVAL_ROLLOUT ? SF_SELECT_UCT : SF_SELECT_PUCT;
    const sf_search_config *c = &s->cfg;
    s->uct_c = c->uct_c >= 0.0
                   ? c->uct_c
                   : sf_uct_c_for_budget(s->budget, c->uct_budget_mid, c->uct_budget_high,
                                         c->uct_c_low, c->uct_c_mid, c->uct_c_high);
    s->sel.rule = s->select;
    s->sel.uct_c = s->uct_c;
    s->sel.puct_c1 = c->puct_c1;
    s->sel.puct_c2 = c->puct_c2;
    s->sel.puct_sqrt_offset = c->puct_sqrt_offset;
    s->sel.puct_fpu_reduction = c->puct_fpu_reduction;
    s->sel.c_visit = c->gumbel_c_visit;
    s->sel.c_scale = c->gumbel_c_scale;
    s->sel.rescale = c->gumbel_rescale;
    s->sel.cvar_alpha = c->cvar_alpha;
    s->sel.cvar_lambda = c->distributional ? c->cvar_lambda : 0.0;
    for (int k = 0; k < s->n_trees; k++)
        sf_tree_reset(&s->trees[k],
                      sf_seed_derive(run_seed, decision_index, (uint64_t)k, SEED_TREE));
    s->begun = 1;
    if (s->n_root == 1) { /* a single legal action is not searched */
        s->finished = 1;
        return SF_OK;
    }
    if (s->select == SF_SELECT_GUMBEL) {
        /* Phase -1: every tree evaluates its root; then the halving phases. */
        s->phase = -1;
        s->n_phases = 0;
        for (int k = 0; k < s->n_trees; k++)
            s->trees[k].sims_target = 0;
    } else {
        s->phase = 0;
        s->n_phases = 1;
        for (int k = 0; k < s->n_trees; k++)
            s->trees[k].sims_target =
                (uint32_t)(s->budget / s->n_trees + (k < s->budget % s->n_trees ? 1 : 0));
    }
    return SF_OK;
}

/* ---------------------------------------------------------------------------
 * Root aggregation (search-algorithm §6.2): N = sum N_t; Q = sum N_t Q_t / N; H likewise.
 * ------------------------------------------------------------------------- */
void sf_search_root_sum(const sf_search *s, sf_root_sum *out) {
    int n = s->n_root;
    double w[SF_MAX_ACTIONS] = {0};
    double h[SF_MAX_ACTIONS][SF_VALUE_BINS];
    memset(h, 0, sizeof h);
    int win[SF_MAX_ACTIONS] = {0}, loss[SF_MAX_ACTIONS] = {0};
    memset(out, 0, sizeof *out);
    double vsum = 0.0;
    sf_tree_root_stat st[SF_MAX_ACTIONS];
    for (int k = 0; k < s->n_trees; k++) {
        const sf_tree *t = &s->trees[k];
        sf_tree_root_stats(t, s->root_actions, n, st);
        vsum += t->g.nodes[0].u;
        for (int a = 0; a < n; a++) {
            out->n[a] += st[a].n;
            w[a] += (double)st[a].n * st[a].q;
            win[a] |= st[a].band == SF_BAND_WIN;
            loss[a] |= st[a].band == SF_BAND_LOSS;
            if (k == 0)
                out->prior[a] = st[a].prior;
            if (st[a].dist && st[a].n)
                for (int b = 0; b < SF_VALUE_BINS; b++)
                    h[a][b] += (double)st[a].n * st[a].dist[b];
        }
    }
    out->v_hat = vsum / s->n_trees;
    const sf_search_config *c = &s->cfg;
    for (int a = 0; a < n; a++) {
        out->q[a] = out->n[a] ? w[a] / out->n[a] : 0.0;
        out->band[a] = win[a] ? SF_BAND_WIN : loss[a] ? SF_BAND_LOSS : SF_BAND_UNCERTAIN;
        for (int b = 0; b < SF_VALUE_BINS; b++)
            out->dist[a][b] = out->n[a] ? (float)(h[a][b] / out->n[a]) : 0.0f;
        out->score[a] = out->q[a];
        if (c->distributional && c->cvar_lambda > 0.0 && out->n[a])
            out->score[a] = (1.0 - c->cvar_lambda) * out->q[a] +
                            c->cvar_lambda * sf_value_cvar21(out->dist[a], c->cvar_alpha);
    }
}

/* ---------------------------------------------------------------------------
 * Gumbel phases (search-algorithm §2.2, §2.7): one shared Gumbel vector and candidate set
 * for all trees; each phase's visits are dealt round-robin to the trees; at
 * the barrier the summed statistics pick the survivors.
 * ------------------------------------------------------------------------- */

/* Valid root actions for Gumbel: not proven lost (unless all are). */
static void root_valid(const sf_root_sum *r, int n, unsigned char *valid) {
    int any = 0;
    for (int a = 0; a < n; a++) {
        valid[a] = r->band[a] != SF_BAND_LOSS;
        any |= valid[a];
    }
    if (!any)
        memset(valid, 1, (size_t)n);
}

/* g + logit + sigma(completedQ) over the summed statistics. */
static void gumbel_scores(const sf_search *s, const sf_root_sum *r, const unsigned char *valid,
                          double *score, double *cq_out, double *pi_out, double *vmix_out) {
    int n = s->n_root;
    double cq[SF_MAX_ACTIONS], sigma[SF_MAX_ACTIONS], logit[SF_MAX_ACTIONS];
    double vmix = sf_gumbel_completed_q(n, r->prior, r->n, r->score, valid, r->v_hat, cq);
    sf_gumbel_sigma(n, cq, r->n, valid, s->cfg.gumbel_c_visit, s->cfg.gumbel_c_scale,
                    s->cfg.gumbel_rescale, sigma);
    for (int a = 0; a < n; a++)
        logit[a] = log(r->prior[a] > 1e-30 ? r->prior[a] : 1e-30);
    if (score)
        for (int a = 0; a < n; a++)
            score[a] = valid[a] ? s->gumbel[a] + logit[a] + sigma[a] : -INFINITY;
    if (cq_out)
        memcpy(cq_out, cq, sizeof(double) * (size_t)n);
    if (pi_out)
        sf_gumbel_policy(n, logit, sigma, valid, pi_out);
    if (vmix_out)
        *vmix_out = vmix;
}

/* Order `idx[0..k)` by score descending, lower index first on ties. */
static void sort_by_score(int *idx, int k, const double *score) {
    for (int i = 1; i < k; i++) {
        int v = idx[i], j = i;
        while (j > 0 && (score[idx[j - 1]] < score[v] ||
                         (score[idx[j - 1]] == score[v] && idx[j - 1] > v))) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
}

/* Root edge offset (expansion order) of each root action (engine order). */
static void root_edge_offsets(const sf_search *s, int *off) {
    const sf_graph *g = &s->trees[0].g;
    const sf_node *r = &g->nodes[0];
    for (int a = 0; a < s->n_root; a++) {
        off[a] = 0;
        for (uint32_t j = 0; j < r->n_edges; j++)
            if (sf_action_code(g->edges[r->first_edge + j].action) ==
                sf_action_code(s->root_actions[a]))
                off[a] = (int)j;
    }
}

/* Deal the visits of phase p to the trees. */
static void deal_phase(sf_search *s, int p) {
    int off[SF_MAX_ACTIONS];
    root_edge_offsets(s, off);
    long remaining = s->budget - s->phase_visits_done;
    long items = (long)s->n_survivors * s->phase_extra[p];
    if (items > remaining)
        items = remaining;
    for (int k = 0; k < s->n_trees; k++) {
        sf_tree *t = &s->trees[k];
        t->forced = s->forced_buf + (size_t)k * s->forced_cap;
        t->forced_n = 0;
        t->forced_pos = 0;
    }
    for (long i = 0; i < items; i++) {
        int a = s->survivors[i % s->n_survivors];
        sf_tree *t = &s->trees[i % s->n_trees];
        uint16_t *buf = (uint16_t *)t->forced;
        if (t->forced_n < s->forced_cap)
            buf[t->forced_n++] = (uint16_t)off[a];
    }
    for (int k = 0; k < s->n_trees; k++) {
        sf_tree *t = &s->trees[k];
        t->sims_target = t->sims_done + t->forced_n;
        t->state = SF_TREE_IDLE;
    }
    s->phase_visits_done += items;
}

/* Called when every tree finished the current phase. */
static void next_phase(sf_search *s) {
    if (s->select != SF_SELECT_GUMBEL) {
        s->finished = 1;
        return;
    }
    sf_root_sum r;
    sf_search_root_sum(s, &r);
    int n = s->n_root;
    unsigned char valid[SF_MAX_ACTIONS];
    root_valid(&r, n, valid);
    if (s->phase == -1) {
        /* Gumbel-top-m (search-algorithm §2.1): one noise vector for the decision. */
        uint64_t rng = sf_seed_derive(s->run_seed, s->decision_index, 0, SEED_GUMBEL);
        int n_valid = 0;
        for (int a = 0; a < n; a++) {
            rng = sf_mix64(rng);
            double u = ((double)(rng >> 11) + 0.5) * 0x1.0p-53;
            s->gumbel[a] = s->cfg.gumbel_noise * -log(-log(u));
            s->logit[a] = log(r.prior[a] > 1e-30 ? r.prior[a] : 1e-30);
            n_valid += valid[a];
        }
        int m = s->cfg.gumbel_m < n_valid ? s->cfg.gumbel_m : n_valid;
        int idx[SF_MAX_ACTIONS], k = 0;
        double sc[SF_MAX_ACTIONS];
        for (int a = 0; a < n; a++) {
            sc[a] = s->gumbel[a] + s->logit[a];
            if (valid[a])
                idx[k++] = a;
        }
        sort_by_score(idx, k, sc);
        s->n_survivors = m;
        memcpy(s->survivors, idx, sizeof(int) * (size_t)m);
        s->n_phases =
            sf_gumbel_phases(m, s->budget, s->phase_k, s->phase_extra, SF_GUMBEL_MAX_PHASES);
        s->phase_visits_done = 0;
        if (s->n_phases <= 0) {
            s->finished = 1;
            return;
        }
        s->phase = 0;
        deal_phase(s, 0);
        return;
    }
    if (s->phase + 1 >= s->n_phases || s->phase_visits_done >= s->budget) {
        s->finished = 1;
        return;
    }
    /* Survivors: the best phase_k[p+1] of the current ones by g + logit +
     * sigma(completedQ) on the summed statistics. */
    double sc[SF_MAX_ACTIONS];
    gumbel_scores(s, &r, valid, sc, NULL, NULL, NULL);
    sort_by_score(s->survivors, s->n_survivors, sc);
    s->phase++;
    int keep = s->phase_k[s->phase];
    if (keep < s->n_survivors)
        s->n_survivors = keep;
    deal_phase(s, s->phase);
}

/* ---------------------------------------------------------------------------
 * Resumable API
 * ------------------------------------------------------------------------- */
int sf_search_step(sf_search *s, const sf_eval_request **reqs, int cap, int *n_out, sf_err *err) {
    *n_out = 0;
    if (!s->begun)
        return sf_err_set(err, SF_ESTATE, "search: step before begin");
    for (;;) {
        if (s->finished)
            return SF_SEARCH_DONE;
        int waiting = 0;
        for (int k = 0; k < s->n_trees; k++) {
            sf_tree *t = &s->trees[k];
            if (t->state == SF_TREE_PHASE)
                continue;
            int rc = sf_tree_advance(t);
            if (rc < 0)
                return sf_err_set(err, rc, "search: tree %d failed: %s", k, sf_strerror(rc));
            if (rc == SF_TREE_WAITING) {
                waiting++;
                /* Each request is handed out once; one that did not fit in
                 * `reqs` is handed out by the next step. */
                if (!t->req_out && *n_out < cap) {
                    reqs[(*n_out)++] = &t->req;
                    t->req_out = 1;
                }
            }
        }
        if (waiting)
            return SF_SEARCH_PENDING;
        next_phase(s);
    }
}

int sf_search_leaf_rollouts(sf_search *s) {
    int played = 0;
    for (int k = 0; s->begun && k < s->n_trees; k++)
        played += sf_tree_mix_rollout(&s->trees[k]);
    return played;
}

int sf_search_feed(sf_search *s, const sf_eval_request *req, const sf_eval_answer *answer,
                   sf_err *err) {
    if (!s->begun || !req || req->tree < 0 || req->tree >= s->n_trees)
        return sf_err_set(err, SF_ESTATE, "search: feed for an unknown request");
    sf_tree *t = &s->trees[req->tree];
    if (t->state != SF_TREE_WAITING || t->req.ticket != req->ticket)
        return sf_err_set(err, SF_ESTATE, "search: stale request ticket %llu for tree %d",
                          (unsigned long long)req->ticket, req->tree);
    return sf_tree_feed(t, answer, err);
}

/* ---------------------------------------------------------------------------
 * Synchronous runner
 * ------------------------------------------------------------------------- */
typedef struct run_job {
    sf_search *s;
    atomic_int *next; /* the next tree index to take (shared by a phase's jobs) */
    sf_eval_fn fn;
    void *ctx;
    int rc;
    sf_err err;
} run_job;

/* Run trees through the current phase, taking the next unclaimed tree each
 * time (trees cost different amounts; a fixed split would leave a thread
 * idle). Who runs a tree does not change its result. */
static void *run_trees(void *arg) {
    run_job *j = arg;
    sf_search *s = j->s;
    for (int k; j->rc == SF_OK && (k = atomic_fetch_add(j->next, 1)) < s->n_trees;) {
        sf_tree *t = &s->trees[k];
        for (;;) {
            int rc = sf_tree_advance(t);
            if (rc < 0) {
                j->rc = sf_err_set(&j->err, rc, "search: tree %d failed: %s", k, sf_strerror(rc));
                break;
            }
            if (rc == SF_TREE_PHASE)
                break;
            sf_eval_answer ans;
            memset(&ans, 0, sizeof ans);
            rc = j->fn(j->ctx, &t->req, &ans);
            if (rc < 0) {
                j->rc = sf_err_set(&j->err, rc, "search: evaluator failed on tree %d", k);
                break;
            }
            rc = sf_tree_feed(t, &ans, &j->err);
            if (rc < 0) {
                j->rc = rc;
                break;
            }
        }
    }
    return NULL;
}

int sf_search_run(sf_search *s, int threads, sf_eval_fn fn, void *ctx, sf_err *err) {
    if (!s->begun)
        return sf_err_set(err, SF_ESTATE, "search: run before begin");
    if (threads < 1)
        return sf_err_set(err, SF_EINVAL, "search: threads must be >= 1 (got %d)", threads);
    if (s->cfg.evaluator == SF_EVAL_EXTERNAL && !fn)
        return sf_err_set(err, SF_EINVAL, "search: an external evaluator needs a callback");
    if (threads > s->n_trees)
        threads = s->n_trees;
    if (threads > SF_SEARCH_MAX_TREES)
        threads = SF_SEARCH_MAX_TREES;
    while (!s->finished) {
        run_job jobs[SF_SEARCH_MAX_TREES];
        pthread_t tid[SF_SEARCH_MAX_TREES];
        int started[SF_SEARCH_MAX_TREES] = {0};
        atomic_int next = 0;
        for (int i = 0; i < threads; i++) {
            jobs[i].s = s;
            jobs[i].next = &next;
            jobs[i].fn = fn;
            jobs[i].ctx = ctx;
            jobs[i].rc = SF_OK;
            jobs[i].err.code = 0;
            jobs[i].err.msg[0] = 0;
        }
        for (int i = 1; i < threads; i++)
            started[i] = pthread_create(&tid[i], NULL, run_trees, &jobs[i]) == 0;
        /* The calling thread takes job 0 and any job whose thread did not
         * start (the result does not depend on who runs a tree). */
        run_trees(&jobs[0]);
        for (int i = 1; i < threads; i++) {
            if (started[i])
                pthread_join(tid[i], NULL);
            else
                run_trees(&jobs[i]);
        }
        for (int i = 0; i < threads; i++) {
            if (jobs[i].rc < 0) {
                if (err)
                    *err = jobs[i].err;
                return jobs[i].rc;
            }
        }
        next_phase(s);
    }
    return SF_OK;
}

/* ---------------------------------------------------------------------------
 * The result and the choice
 * ------------------------------------------------------------------------- */
static int is_better(const sf_root_stat *a, const sf_root_stat *b) {
    if (a->score != b->score)
        return a->score > b->score;
    return a->visits > b->visits;
}

void sf_search_choose(const sf_search *s, sf_search_result *r, const unsigned char *valid) {
    int n = r->n_actions;
    const sf_root_stat *st = r->actions;
    int best = -1;
    /* 1. a proven win: the best-scoring one. */
    for (int a = 0; a < n; a++)
        if (st[a].band == SF_BAND_WIN && st[a].visits && (best < 0 || is_better(&st[a], &st[best])))
            best = a;
    if (best >= 0) {
        r->chosen = best;
        r->chosen_reason = SF_CHOSEN_PROVEN_WIN;
        return;
    }
    int any_valid = 0;
    for (int a = 0; a < n; a++)
        any_valid |= st[a].band != SF_BAND_LOSS;
    if (!any_valid) {
        for (int a = 0; a < n; a++)
            if (best < 0 || st[a].visits > st[best].visits)
                best = a;
        r->chosen = best;
        r->chosen_reason = SF_CHOSEN_ALL_LOST;
        return;
    }
    const double margin = s->cfg.choose_margin;
    if (s->select == SF_SELECT_GUMBEL) {
        /* Final action (search-algorithm §2.2): among the most visited valid actions,
         * argmax g + logit + sigma(completedQ). */
        sf_root_sum rs;
        sf_search_root_sum(s, &rs);
        double sc[SF_MAX_ACTIONS];
        gumbel_scores(s, &rs, valid, sc, NULL, NULL, NULL);
        uint32_t maxn = 0;
        for (int a = 0; a < n; a++)
            if (valid[a] && st[a].visits > maxn)
                maxn = st[a].visits;
        for (int a = 0; a < n; a++)
            if (valid[a] && st[a].visits == maxn && (best < 0 || sc[a] > sc[best]))
                best = a;
        r->chosen_reason = SF_CHOSEN_GUMBEL;
    } else {
        /* 2. the best mean (or rho) over visited unproven actions; among
         * those within `margin` of it, the most visited. */
        int top = -1;
        for (int a = 0; a < n; a++)
            if (st[a].band != SF_BAND_LOSS && st[a].visits &&
                (top < 0 || is_better(&st[a], &st[top])))
                top = a;
        if (top < 0) { /* nothing visited (cannot happen after a search) */
            for (int a = 0; a < n; a++)
                if (st[a].band != SF_BAND_LOSS && top < 0)
                    top = a;
        }
        best = top;
        for (int a = 0; a < n; a++)
            if (st[a].band != SF_BAND_LOSS && st[a].visits &&
                st[a].score >= st[top].score - margin &&
                (st[a].visits > st[best].visits ||
                 (st[a].visits == st[best].visits && st[a].score > st[best].score)))
                best = a;
        r->chosen_reason = best == top ? SF_CHOSEN_BEST_MEAN : SF_CHOSEN_MOST_VISITED;
    }
    r->chosen = best;
    /* 3. end-turn guards: never end the turn when an equally good block
     * card answers announced damage, or when an equally good free card is
     * left (only observable facts are read: the root is the belief state). */
    if (!s->cfg.end_turn_guards || st[best].action.kind != SF_ACT_END_TURN)
        return;
    sf_observation ob;
    sf_engine_observe(&s->root, &ob);
    double floor_score = st[best].score - margin;
    int block = -1, freebie = -1;
    for (int a = 0; a < n; a++) {
        if (st[a].action.kind != SF_ACT_PLAY || !st[a].visits || st[a].band == SF_BAND_LOSS ||
            st[a].score < floor_score)
            continue;
        sf_action_info info;
        if (sf_engine_action_info(&s->root, st[a].action, &info) != SF_OK)
            continue;
        if (info.gains_block && info.cost <= ob.energy &&
            (block < 0 || is_better(&st[a], &st[block])))
            block = a;
        if (info.cost == 0 && (freebie < 0 || is_better(&st[a], &st[freebie])))
            freebie = a;
    }
    if (ob.incoming_damage > ob.block && block >= 0) {
        r->chosen = block;
        r->chosen_reason = SF_CHOSEN_GUARD_BLOCK;
    } else if (freebie >= 0) {
        r->chosen = freebie;
        r->chosen_reason = SF_CHOSEN_GUARD_FREE;
    }
}

int sf_search_result_get(const sf_search *s, sf_search_result *r, sf_err *err) {
    memset(r, 0, sizeof *r);
    if (!s->begun || !s->finished)
        return sf_err_set(err, SF_ESTATE, "search: result before the search finished");
    int n = s->n_root;
    r->n_actions = n;
    r->select = s->select;
    r->n_trees = s->n_trees;
    if (n == 1) {
        r->searched = 0;
        r->actions[0].action = s->root_actions[0];
        r->actions[0].prior = 1.0;
        r->actions[0].policy = 1.0;
        r->actions[0].band = SF_BAND_UNCERTAIN;
        r->chosen = 0;
        r->chosen_action = s->root_actions[0];
        r->chosen_reason = SF_CHOSEN_SINGLE;
        return SF_OK;
    }
    r->searched = 1;
    sf_root_sum rs;
    sf_search_root_sum(s, &rs);
    unsigned char valid[SF_MAX_ACTIONS];
    root_valid(&rs, n, valid);
    double cq[SF_MAX_ACTIONS], pi[SF_MAX_ACTIONS], vmix;
    gumbel_scores(s, &rs, valid, NULL, cq, pi, &vmix);
    for (int a = 0; a < n; a++) {
        sf_root_stat *st = &r->actions[a];
        st->action = s->root_actions[a];
        st->visits = rs.n[a];
        st->band = rs.band[a];
        st->q = rs.q[a];
        st->completed_q = cq[a];
        st->score = rs.score[a];
        st->prior = rs.prior[a];
        st->policy = pi[a];
        memcpy(st->dist, rs.dist[a], sizeof st->dist);
    }
    r->root_raw_value = rs.v_hat;
    r->v_mix = vmix;
    double q_sum = 0.0, n_sum = 0.0;
    for (int k = 0; k < s->n_trees; k++) {
        const sf_tree *t = &s->trees[k];
        r->tree_value[k] = t->g.nodes[0].q;
        r->simulations += t->sims_done;
        r->evaluations += t->evaluations;
        r->node_creations += t->g.node_creations;
        r->merges += t->merges;
        r->chance_nodes += t->chance_nodes;
        r->widen_new += t->widen_new;
        r->widen_merged += t->widen_merged;
        r->widen_capped += t->widen_capped;
        r->transposition_stops += t->transposition_stops;
        r->edge_pool_full += t->edge_pool_full;
        r->feat_truncated += t->feat_truncated;
        r->rollouts_cut_off += t->rollouts_cut_off;
        if (t->max_depth > r->max_depth)
            r->max_depth = t->max_depth;
        q_sum += (double)t->g.nodes[0].n * t->g.nodes[0].q;
        n_sum += (double)t->g.nodes[0].n;
    }
    r->root_search_value = n_sum > 0.0 ? q_sum / n_sum : r->root_raw_value;
    r->merge_ratio = r->node_creations ? (double)r->merges / (double)r->node_creations : 0.0;
    sf_search_choose(s, r, valid);
    r->chosen_action = r->actions[r->chosen].action;
    return SF_OK;
}

int sf_search_decide(const sf_search_config *cfg, const sf_state *truth, uint64_t run_seed,
                     uint64_t decision_index, int threads, sf_eval_fn fn, void *ctx,
                     sf_search_result *out, sf_err *err) {
    sf_search *s = NULL;
    int rc = sf_search_create(cfg, &s, err);
    if (rc < 0)
        return rc;
    rc = sf_search_begin(s, truth, run_seed, decision_index, err);
    if (rc == SF_OK)
        rc = sf_search_run(s, threads, fn, ctx, err);
    if (rc == SF_OK)
        rc = sf_search_result_get(s, out, err);
    sf_search_destroy(s);
    return rc;
}
