/* tree.c — one root-parallel tree: the simulation loop (select, apply with
 * common random numbers, chance nodes with progressive widening, expansion,
 * backup by recomputation), written as a resumable state machine so that a
 * simulation can stop at a leaf, hand out an evaluation request, and continue
 * when the answer is fed. No allocation after sf_tree_alloc(). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/internal.h"

/* Salt for the rollout streams of a leaf (distinct from chance salts, whose
 * last coordinate is a stream index < SF_NUM_STREAMS). */
#define SF_ROLLOUT_TAG 0x524F4C4C4F555453ull

/* ---------------------------------------------------------------------------
 * Allocation
 * ------------------------------------------------------------------------- */
static void *xalloc(sf_search *s, size_t bytes) {
    if (s->cfg.allocator.alloc)
        return s->cfg.allocator.alloc(s->cfg.allocator.ctx, bytes);
    return malloc(bytes);
}

static void xfree(sf_search *s, void *p) {
    if (!p)
        return;
    if (s->cfg.allocator.free)
        s->cfg.allocator.free(s->cfg.allocator.ctx, p);
    else
        free(p);
}

int sf_tree_alloc(sf_search *s, sf_tree *t, uint32_t sims_cap, sf_err *err) {
    const sf_search_config *c = &s->cfg;
    uint32_t node_cap = sims_cap + 2;
    uint64_t edge_cap = (uint64_t)c->edges_per_node * node_cap + SF_MAX_ACTIONS;
    if (edge_cap > UINT32_MAX / 2)
        return sf_err_set(err, SF_EINVAL, "search: edges_per_node * simulations too large");
    /* With the transposition stop a simulation creates at most one chance
     * node and one outcome; without it, one per new edge into a known node.
     * Twice the budget covers both; a full pool ends a simulation early
     * (counted in edge_pool_full) rather than failing. */
    uint32_t chance_cap = 2 * sims_cap + 64, outcome_cap = 2 * sims_cap + 64;
    size_t bytes =
        sf_graph_bytes(node_cap, (uint32_t)edge_cap, chance_cap, outcome_cap, c->distributional);
    t->mem = xalloc(s, bytes);
    if (!t->mem)
        return sf_err_set(err, SF_ENOMEM, "search: cannot allocate %zu bytes for a tree", bytes);
    s->memory += bytes;
    sf_graph_init(&t->g, t->mem, node_cap, (uint32_t)edge_cap, chance_cap, outcome_cap,
                  c->distributional);
    t->owner = s;
    return SF_OK;
}

void sf_tree_free(sf_search *s, sf_tree *t) {
    xfree(s, t->mem);
    t->mem = NULL;
}

/* ---------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------- */
uint64_t sf_chance_key(sf_identity id, sf_action a) {
    return sf_seed_derive(id.lo, id.hi, sf_action_code(a), 0);
}

/* Common random numbers (search-algorithm §4.4): every stream re-seeded from (tree seed,
 * chance key, draw index, stream) before the apply that draws an outcome. */
static void reseed_all(sf_state *st, uint64_t tree_seed, uint64_t key, uint32_t draw) {
    for (int k = 0; k < SF_NUM_STREAMS; k++)
        sf_engine_reseed(st, k, sf_seed_derive(tree_seed, key, draw, (uint64_t)k));
}

int sf_chance_draw(uint64_t tree_seed, sf_state *st, sf_action a, uint32_t draw,
                   uint32_t *streams) {
    reseed_all(st, tree_seed, sf_chance_key(sf_engine_identity(st), a), draw);
    return sf_engine_apply(st, a, streams);
}

static int tree_fail(sf_tree *t, int code) {
    if (t->error == 0)
        t->error = code;
    return code;
}

/* Find or create the node of the position in t->work. New terminal nodes
 * get their exact value; new positions past the horizon become leaves.
 * Returns the node index or a negative error. */
static int32_t node_for_work(sf_tree *t, int *created_out) {
    sf_graph *g = &t->g;
    const sf_search *s = t->owner;
    int created = 0;
    int32_t idx = sf_graph_node(g, sf_engine_identity(&t->work), &created);
    if (idx < 0)
        return tree_fail(t, SF_EFULL);
    *created_out = created;
    if (!created)
        return idx;
    sf_node *n = &g->nodes[idx];
    if (sf_engine_is_terminal(&t->work)) {
        sf_outcome o;
        sf_engine_outcome(&t->work, &o);
        double y = sf_value_of_outcome(&o);
        n->u = (float)y;
        n->flags = SF_NODE_EVALUATED | SF_NODE_TERMINAL;
        n->band = o.won ? SF_BAND_WIN : SF_BAND_LOSS;
        if (g->distributional)
            sf_value_project(y, &g->node_udist[(size_t)idx * SF_VALUE_BINS]);
        sf_graph_recompute_node(g, (uint32_t)idx);
    } else if (s->cfg.horizon_turns > 0) {
        sf_observation ob;
        sf_engine_observe(&t->work, &ob);
        if (ob.turn >= s->root_turn + s->cfg.horizon_turns)
            n->flags = SF_NODE_LEAF;
    }
    return idx;
}

/* Pick an edge: a forced root action (Gumbel phases) or the rule. */
static int select_edge(sf_tree *t, uint32_t node, int at_root) {
    if (at_root && t->forced)
        return t->forced_pos < t->forced_n ? t->forced[t->forced_pos++] : 0;
    return sf_graph_select(&t->g, node, &t->owner->sel, at_root);
}

#define CHANCE_NO_ROOM (-1000)

/* A chance node already exists: widen (draw a new outcome) while it holds
 * fewer than K(v) distinct outcomes, else revisit an existing one by the
 * deterministic tracking rule. Leaves the outcome's position in t->work.
 * Returns the outcome index or a negative error. */
static int32_t chance_visit(sf_tree *t, uint32_t xi, sf_action a) {
    sf_graph *g = &t->g;
    const sf_search *s = t->owner;
    int clairvoyant = s->cfg.root == SF_ROOT_CLAIRVOYANT;
    sf_chance *x = &g->chance[xi];
    double C = x->end_turn ? s->cfg.pw_end_turn_c : s->cfg.pw_other_c;
    double alpha = x->end_turn ? s->cfg.pw_end_turn_alpha : s->cfg.pw_other_alpha;
    int room = g->n_outcomes < g->outcome_cap;
    if (clairvoyant || (room && x->n_outcomes < sf_widen_cap(C, alpha, x->n))) {
        uint32_t d = x->draws++;
        if (!clairvoyant)
            reseed_all(&t->work, t->seed, x->key, d);
        if (sf_engine_apply(&t->work, a, NULL) != SF_OK)
            return tree_fail(t, SF_ESTATE);
        int created = 0;
        int32_t child = node_for_work(t, &created);
        if (child < 0)
            return child;
        x->mass++;
        for (int32_t j = x->first; j >= 0; j = g->outcomes[j].next) {
            if (g->outcomes[j].child == child) { /* identical outcome: merge */
                g->outcomes[j].m++;
                t->widen_merged++;
                return j;
            }
        }
        if (!room) { /* clairvoyant, a new outcome and no room for it */
            t->edge_pool_full++;
            return CHANCE_NO_ROOM;
        }
        int32_t o = sf_graph_outcome(g, xi, child, d);
        g->outcomes[o].m = 1;
        t->widen_new++;
        t->merges += !created; /* a new outcome that is a known position */
        return o;
    }
    /* At the cap: argmax m(o)/sum m - n(o)/(1 + sum n), first on ties. */
    int32_t best = -1;
    double best_score = -INFINITY;
    for (int32_t j = x->first; j >= 0; j = g->outcomes[j].next) {
        const sf_chance_edge *o = &g->outcomes[j];
        double sc = (double)o->m / (double)x->mass - (double)o->n / (1.0 + (double)x->n);
        if (best < 0 || sc > best_score) {
            best = j;
            best_score = sc;
        }
    }
    reseed_all(&t->work, t->seed, x->key, g->outcomes[best].draw);
    if (sf_engine_apply(&t->work, a, NULL) != SF_OK)
        return tree_fail(t, SF_ESTATE);
    t->widen_capped++;
    return best;
}

/* ---------------------------------------------------------------------------
 * One simulation
 * ------------------------------------------------------------------------- */
enum { SIM_BACKUP = 0, SIM_EVAL = 1 };

static void push(sf_tree *t, uint32_t node, uint32_t edge, int kind) {
    sf_path_step *p = &t->path[t->depth++];
    p->node = node;
    p->edge = edge;
    p->kind = (uint8_t)kind;
}

/* Descend from the root. Returns SIM_EVAL with t->leaf set when a node needs
 * its evaluation, SIM_BACKUP when the path ends at a known value, or a
 * negative error. */
static int descend(sf_tree *t) {
    const sf_search *s = t->owner;
    sf_graph *g = &t->g;
    int clairvoyant = s->cfg.root == SF_ROOT_CLAIRVOYANT;
    uint32_t stamp = ++t->sim;
    t->work = s->root;
    t->depth = 0;
    uint32_t node = 0;
    g->nodes[0].stamp = stamp;
    uint32_t plies = 0;
    for (;;) {
        sf_node *n = &g->nodes[node];
        if (!(n->flags & SF_NODE_EVALUATED)) {
            t->leaf = node;
            return SIM_EVAL;
        }
        if (!(n->flags & SF_NODE_EXPANDED))
            return SIM_BACKUP; /* terminal, horizon, or no edge room */
        if (t->depth >= SF_SEARCH_MAX_DEPTH - 2)
            return SIM_BACKUP;
        int ei = select_edge(t, node, node == 0);
        if (ei < 0)
            return SIM_BACKUP;
        uint32_t eidx = n->first_edge + (uint32_t)ei;
        sf_edge *e = &g->edges[eidx];
        push(t, node, eidx, SF_STEP_DECISION);
        plies++;
        uint32_t through; /* visits of the edge that leads to `next` */
        int32_t next;
        if (e->child == SF_CHILD_NONE) {
            uint64_t key = sf_chance_key(n->id, e->action);
            if (!clairvoyant)
                reseed_all(&t->work, t->seed, key, 0);
            uint32_t streams = 0;
            if (sf_engine_apply(&t->work, e->action, &streams) != SF_OK)
                return tree_fail(t, SF_ESTATE);
            int created = 0;
            next = node_for_work(t, &created);
            if (next < 0)
                return next;
            t->merges += !created; /* a transposition: another order got here */
            if (streams && (g->n_chance >= g->chance_cap || g->n_outcomes >= g->outcome_cap)) {
                t->depth--; /* no room: end here, the edge stays untried */
                t->edge_pool_full++;
                return SIM_BACKUP;
            }
            if (streams) {
                int32_t xi = sf_graph_chance(g, key, e->action.kind == SF_ACT_END_TURN);
                int32_t o = sf_graph_outcome(g, (uint32_t)xi, next, 0);
                g->chance[xi].draws = 1;
                g->chance[xi].mass = 1;
                g->outcomes[o].m = 1;
                e->child = sf_child_chance((uint32_t)xi);
                t->chance_nodes++;
                t->widen_new++;
                push(t, (uint32_t)xi, (uint32_t)o, SF_STEP_CHANCE);
                through = 0;
            } else {
                e->child = next;
                through = e->n;
            }
        } else if (sf_child_is_chance(e->child)) {
            uint32_t xi = sf_child_chance_index(e->child);
            int32_t o = chance_visit(t, xi, e->action);
            if (o == CHANCE_NO_ROOM) {
                t->depth--; /* end at this node; its edge count is untouched */
                return SIM_BACKUP;
            }
            if (o < 0)
                return o;
            push(t, xi, (uint32_t)o, SF_STEP_CHANCE);
            next = g->outcomes[o].child;
            through = g->outcomes[o].n;
        } else {
            /* Deterministic edge: no stream is read, so no reseed needed. */
            if (sf_engine_apply(&t->work, e->action, NULL) != SF_OK)
                return tree_fail(t, SF_ESTATE);
            next = e->child;
            through = e->n;
        }
        if (plies > t->max_depth)
            t->max_depth = plies;
        sf_node *c = &g->nodes[next];
        if (c->stamp == stamp)
            return SIM_BACKUP; /* a cycle: back up the child's value */
        if (s->cfg.stop_at_transposition && (c->flags & SF_NODE_EXPANDED) && c->n > through) {
            t->transposition_stops++; /* search-algorithm §5.2: reached more often elsewhere */
            return SIM_BACKUP;
        }
        c->stamp = stamp;
        node = (uint32_t)next;
    }
}

/* Edge counts up, then idempotent recomputation from the deepest node up. */
static void backup(sf_tree *t) {
    sf_graph *g = &t->g;
    for (int i = t->depth - 1; i >= 0; i--) {
        const sf_path_step *p = &t->path[i];
        if (p->kind == SF_STEP_DECISION) {
            g->edges[p->edge].n++;
            sf_graph_recompute_node(g, p->node);
        } else {
            g->outcomes[p->edge].n++;
            sf_graph_recompute_chance(g, p->node);
        }
    }
}

/* Priority of each action for the expansion order. */
static void expansion_order(const sf_state *st, const sf_action *acts, int n, int *order) {
    int prio[SF_MAX_ACTIONS];
    for (int i = 0; i < n; i++) {
        sf_action_info info;
        prio[i] = sf_engine_action_info(st, acts[i], &info) == SF_OK ? info.priority : 0;
        order[i] = i;
    }
    /* Stable insertion sort, higher priority first (n <= 64). */
    for (int i = 1; i < n; i++) {
        int v = order[i], j = i;
        while (j > 0 && prio[order[j - 1]] < prio[v]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
}

/* Give the leaf its evaluation and its edges. */
static void expand(sf_tree *t) {
    sf_graph *g = &t->g;
    uint32_t idx = t->leaf;
    sf_node *n = &g->nodes[idx];
    const sf_eval_answer *a = &t->answer;
    double u = a->has_dist ? sf_value_mean(a->dist) : a->value;
    n->u = (float)u;
    n->flags |= SF_NODE_EVALUATED;
    if (g->distributional) {
        float *hu = &g->node_udist[(size_t)idx * SF_VALUE_BINS];
        if (a->has_dist)
            memcpy(hu, a->dist, sizeof a->dist);
        else
            sf_value_project(u, hu);
    }
    t->evaluations++;
    int k = t->leaf_n;
    if (!(n->flags & SF_NODE_LEAF) && k > 0) {
        int64_t first = sf_graph_edges(g, (uint32_t)k);
        if (first < 0) {
            n->flags |= SF_NODE_LEAF;
            t->edge_pool_full++;
        } else {
            int order[SF_MAX_ACTIONS];
            expansion_order(&t->work, t->leaf_actions, k, order);
            double psum = 0.0;
            if (a->has_priors)
                for (int i = 0; i < k; i++)
                    psum += a->priors[i];
            for (int i = 0; i < k; i++) {
                sf_edge *e = &g->edges[first + i];
                int j = order[i];
                e->action = t->leaf_actions[j];
                e->prior =
                    a->has_priors && psum > 0.0 ? (float)(a->priors[j] / psum) : (float)(1.0 / k);
                e->n = 0;
                e->child = SF_CHILD_NONE;
            }
            n->first_edge = (uint32_t)first;
            n->n_edges = (uint16_t)k;
            n->flags |= SF_NODE_EXPANDED;
        }
    } else if (k == 0) {
        n->flags |= SF_NODE_LEAF;
    }
    sf_graph_recompute_node(g, idx);
}

/* The rollout seed of the leaf t->leaf in this tree: from the tree seed and
 * the leaf's identity (search.h "Evaluators"). */
static uint64_t leaf_seed(const sf_tree *t) {
    const sf_identity id = t->g.nodes[t->leaf].id;
    return sf_seed_derive(t->seed, id.lo, id.hi, SF_ROLLOUT_TAG);
}

int sf_tree_mix_rollout(sf_tree *t) {
    if (t->state != SF_TREE_WAITING || t->mix_ready || !(t->owner->cfg.leaf_mix > 0.0))
        return 0;
    int cut_off = 0;
    t->mix_z = sf_eval_rollout(&t->owner->cfg, &t->work, leaf_seed(t), &cut_off);
    t->rollouts_cut_off += (uint64_t)cut_off;
    t->mix_ready = 1;
    return 1;
}

/* Prepare the leaf's legal actions and either evaluate it now (built-in) or
 * publish the request. Returns SF_TREE_READY or SF_TREE_WAITING. */
static int prepare_eval(sf_tree *t) {
    sf_search *s = t->owner;
    t->leaf_n = sf_engine_enumerate(&t->work, t->leaf_actions, SF_MAX_ACTIONS);
    if (t->leaf_n < 0)
        t->leaf_n = 0;
    if (s->cfg.evaluator != SF_EVAL_EXTERNAL) {
        t->rollouts_cut_off += (uint64_t)sf_eval_builtin(&s->cfg, &t->work, t->leaf_actions,
                                                         t->leaf_n, leaf_seed(t), &t->answer);
        return SF_TREE_READY;
    }
    t->mix_ready = 0;
    if (s->cfg.request_feat &&
        sf_engine_feat(&t->work, t->leaf_actions, t->leaf_n, &t->feat) == SF_EFULL)
        t->feat_truncated++;
    t->req.tree = t->index;
    t->req.ticket = atomic_fetch_add_explicit(&s->ticket, 1, memory_order_relaxed) + 1;
    t->req.state = &t->work;
    t->req.actions = t->leaf_actions;
    t->req.n_actions = t->leaf_n;
    t->req.feat = s->cfg.request_feat ? &t->feat : NULL;
    t->req.user = s->user;
    t->req_out = 0;
    return SF_TREE_WAITING;
}

void sf_tree_reset(sf_tree *t, uint64_t seed) {
    sf_graph_clear(&t->g);
    t->seed = seed;
    t->state = SF_TREE_IDLE;
    t->sim = t->sims_done = t->sims_target = 0;
    t->forced = NULL;
    t->forced_n = t->forced_pos = 0;
    t->depth = 0;
    t->evaluations = t->chance_nodes = t->widen_new = t->widen_merged = t->widen_capped = 0;
    t->transposition_stops = t->edge_pool_full = t->feat_truncated = t->merges = 0;
    t->rollouts_cut_off = 0;
    t->max_depth = 0;
    t->error = 0;
    memset(&t->req, 0, sizeof t->req);
    t->req_out = 0;
    t->work = t->owner->root;
    (void)sf_graph_node(&t->g, sf_engine_identity(&t->work), NULL); /* the root, index 0 */
}

int sf_tree_advance(sf_tree *t) {
    if (t->error)
        return t->error;
    for (;;) {
        if (t->state == SF_TREE_WAITING)
            return SF_TREE_WAITING;
        if (t->state == SF_TREE_READY) {
            int root_eval =
                t->leaf == 0 && t->depth == 0 && !(t->g.nodes[0].flags & SF_NODE_EVALUATED);
            expand(t);
            backup(t);
            if (!root_eval)
                t->sims_done++;
            t->state = SF_TREE_IDLE;
        }
        if (!(t->g.nodes[0].flags & SF_NODE_EVALUATED)) {
            /* The root's own evaluation comes first (not a simulation). */
            t->work = t->owner->root;
            t->depth = 0;
            t->leaf = 0;
            int st = prepare_eval(t);
            if (st < 0)
                return st;
            t->state = st;
            continue;
        }
        if (t->sims_done >= t->sims_target) {
            t->state = SF_TREE_PHASE;
            return SF_TREE_PHASE;
        }
        int rc = descend(t);
        if (rc < 0)
            return rc;
        if (rc == SIM_BACKUP) {
            backup(t);
            t->sims_done++;
            continue;
        }
        int st = prepare_eval(t);
        if (st < 0)
            return st;
        t->state = st;
    }
}

int sf_tree_feed(sf_tree *t, const sf_eval_answer *a, sf_err *err) {
    if (t->state != SF_TREE_WAITING)
        return sf_err_set(err, SF_ESTATE, "search: tree %d has no open request", t->index);
    int rc = sf_eval_answer_check(a, t->leaf_n, err);
    if (rc < 0)
        return rc;
    t->answer = *a;
    double lambda = t->owner->cfg.leaf_mix;
    if (lambda > 0.0) {
        /* (1 - lambda) * v_net + lambda * z_rollout (search.h leaf_mix) */
        sf_tree_mix_rollout(t);
        sf_eval_answer *m = &t->answer;
        double v = m->has_dist ? sf_value_mean(m->dist) : m->value;
        m->value = (1.0 - lambda) * v + lambda * t->mix_z;
        if (m->has_dist) {
            float z[SF_VALUE_BINS];
            sf_value_project(t->mix_z, z);
            for (int i = 0; i < SF_VALUE_BINS; i++)
                m->dist[i] = (float)((1.0 - lambda) * m->dist[i] + lambda * z[i]);
        }
    }
    t->state = SF_TREE_READY;
    return SF_OK;
}

void sf_tree_root_stats(const sf_tree *t, const sf_action *acts, int n, sf_tree_root_stat *out) {
    const sf_graph *g = &t->g;
    const sf_node *r = &g->nodes[0];
    for (int i = 0; i < n; i++) {
        out[i].n = 0;
        out[i].q = 0.0;
        out[i].band = SF_BAND_UNCERTAIN;
        out[i].dist = NULL;
        out[i].prior = n > 0 ? 1.0 / n : 0.0;
        if (!(r->flags & SF_NODE_EXPANDED))
            continue;
        for (uint32_t j = 0; j < r->n_edges; j++) {
            const sf_edge *e = &g->edges[r->first_edge + j];
            if (sf_action_code(e->action) != sf_action_code(acts[i]))
                continue;
            out[i].n = e->n;
            out[i].prior = e->prior;
            if (e->child != SF_CHILD_NONE) {
                out[i].q = sf_graph_child_q(g, e->child);
                out[i].band = sf_graph_child_band(g, e->child);
                out[i].dist = sf_graph_child_dist(g, e->child);
            }
            break;
        }
    }
}
