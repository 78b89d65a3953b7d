/*
 * internal.h — search internals: the graph arena, the transposition table,
 * trees and the search object. For the search sources and their white-box tests only;
 * callers use search.h.
 *
 * The graph (one per tree) is four arrays allocated once:
 *   nodes[]    decision nodes (the player to move), index 0 = root;
 *   edges[]    each expanded node owns a contiguous run of edges, one per
 *              legal action, in expansion (card-priority) order;
 *   chance[]   chance nodes, one per edge whose action advanced a stream;
 *   outcomes[] chance edges, a singly linked list per chance node.
 * An edge's child is a decision node (>= 0), a chance node (encoded as
 * -2 - index) or none (-1). The transposition table maps sf_identity to a
 * node index by open addressing (linear probing, power-of-two capacity,
 * at most half full).
 */
#ifndef SF_SEARCH_INTERNAL_H
#define SF_SEARCH_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "search/search.h"

#define SF_CHILD_NONE (-1)
static inline int32_t sf_child_chance(uint32_t idx) {
    return -2 - (int32_t)idx;
}
static inline int sf_child_is_chance(int32_t c) {
    return c <= -2;
}
static inline uint32_t sf_child_chance_index(int32_t c) {
    return (uint32_t)(-2 - c);
}

enum {
    SF_NODE_EVALUATED = 1 << 0, /* U (and priors) known                     */
    SF_NODE_EXPANDED = 1 << 1,  /* edges created                            */
    SF_NODE_TERMINAL = 1 << 2,  /* the fight is over: exact value           */
    SF_NODE_LEAF = 1 << 3,      /* horizon or no edge room: never expanded  */
};

typedef struct sf_node {
    sf_identity id;
    double q;            /* Q(n), search-algorithm §5.2                                  */
    float u;             /* U(n): evaluator value (or exact terminal value)  */
    uint32_t n;          /* N(n) = 1 + sum of edge visits (0: unevaluated)   */
    uint32_t first_edge; /* edges[first_edge .. first_edge + n_edges)        */
    uint16_t n_edges;
    uint8_t flags;  /* SF_NODE_*                                        */
    uint8_t band;   /* SF_BAND_*                                        */
    uint32_t stamp; /* simulation that last put it on the path          */
} sf_node;

typedef struct sf_edge {
    sf_action action;
    float prior;
    uint32_t n;    /* N(n, a): times this parent chose this edge              */
    int32_t child; /* SF_CHILD_NONE, a node index, or sf_child_chance(i)     */
} sf_edge;

typedef struct sf_chance {
    uint64_t key;   /* chance key: salts derive from it (CRN)             */
    double q;       /* sum_o n(o) Q(o) / sum_o n(o)                        */
    uint32_t n;     /* sum of outcome visits                              */
    uint32_t draws; /* outcome draws made so far (next draw index)        */
    uint32_t mass;  /* sum of m(o)                                        */
    int32_t first;  /* head of the outcome list, -1 when empty            */
    int32_t last;   /* its tail (outcomes stay in draw order)             */
    uint32_t n_outcomes;
    uint8_t end_turn; /* END_TURN chance node: its own widening constants   */
} sf_chance;

typedef struct sf_chance_edge {
    int32_t child; /* decision node                                          */
    uint32_t n;    /* visits through this outcome                            */
    uint32_t m;    /* sample mass: draws that produced it                    */
    uint32_t draw; /* first draw index that produced it (to replay it)       */
    int32_t next;  /* next outcome of the same chance node, -1 at the end    */
} sf_chance_edge;

typedef struct sf_tt_slot {
    sf_identity id;
    int32_t node; /* -1 = empty */
} sf_tt_slot;

/* Graph capacities and storage. `dist` arrays exist only in distributional
 * mode: 21 floats per decision node (H), per node raw (H_U), per chance. */
typedef struct sf_graph {
    uint32_t node_cap, edge_cap, chance_cap, outcome_cap, tt_cap; /* tt_cap: 2^k */
    uint32_t n_nodes, n_edges, n_chance, n_outcomes;
    sf_node *nodes;
    sf_edge *edges;
    sf_chance *chance;
    sf_chance_edge *outcomes;
    sf_tt_slot *tt;
    int distributional;
    float *node_dist;   /* [node_cap][21] H(n)                               */
    float *node_udist;  /* [node_cap][21] H_U(n)                             */
    float *chance_dist; /* [chance_cap][21]                                  */
    /* counters */
    uint64_t node_creations, merges;
} sf_graph;

/* Bytes needed for a graph of these capacities (tt_cap rounded inside). */
size_t sf_graph_bytes(uint32_t node_cap, uint32_t edge_cap, uint32_t chance_cap,
                      uint32_t outcome_cap, int distributional);
/* Carve the arrays out of `mem` (sf_graph_bytes() bytes, 16-aligned). */
void sf_graph_init(sf_graph *g, void *mem, uint32_t node_cap, uint32_t edge_cap,
                   uint32_t chance_cap, uint32_t outcome_cap, int distributional);
/* Forget every node (O(tt_cap) for the table). */
void sf_graph_clear(sf_graph *g);

/* Find the node of `id`; -1 if absent. */
int32_t sf_graph_find(const sf_graph *g, sf_identity id);
/* Find or create the node of `id`. *created = 1 when new. Returns the
 * index, or -1 when the node array is full. Counts merges/creations. */
int32_t sf_graph_node(sf_graph *g, sf_identity id, int *created);
/* Reserve `k` contiguous edges; returns the first index or -1 if full. */
int64_t sf_graph_edges(sf_graph *g, uint32_t k);
/* New chance node for `key`; -1 if full. */
int32_t sf_graph_chance(sf_graph *g, uint64_t key, int end_turn);
/* Append an outcome to chance node x; -1 if full. */
int32_t sf_graph_outcome(sf_graph *g, uint32_t x, int32_t child, uint32_t draw);

/* The value Q and band of a child reference (node or chance). */
double sf_graph_child_q(const sf_graph *g, int32_t child);
int sf_graph_child_band(const sf_graph *g, int32_t child);
/* The histogram of a child reference (distributional mode). */
const float *sf_graph_child_dist(const sf_graph *g, int32_t child);

/* Idempotent recomputation (search-algorithm §5.2): N(n) = 1 + sum N(n,a); Q(n) =
 * (U + sum N(n,a) Q(child)) / N(n); the same for H; band from the children
 * (a proven-win child proves a win; all legal actions expanded and proven
 * lost proves a loss). Terminal and leaf nodes keep Q = U. */
void sf_graph_recompute_node(sf_graph *g, uint32_t node);
/* Q(x) = sum_o n(o) Q(o) / sum_o n(o) (plain mean, search-algorithm §5.3), same for H. */
void sf_graph_recompute_chance(sf_graph *g, uint32_t x);

/* Selection at a decision node (select.c). */
typedef struct sf_select_params {
    int rule; /* SF_SELECT_UCT, _PUCT or _GUMBEL (interior) */
    double uct_c;
    double puct_c1, puct_c2;
    double puct_sqrt_offset;   /* sf_puct_score                             */
    double puct_fpu_reduction; /* sf_puct_fpu                               */
    double c_visit, c_scale;   /* Gumbel interior sigma                     */
    int rescale;
    double cvar_alpha, cvar_lambda; /* root ranking (distributional graphs)     */
} sf_select_params;

/* The edge (offset into the node's run) a simulation takes from expanded
 * node `node`. Reads edge visits and child values only, never a child's own
 * visit count (search-algorithm §1.2, §11.4). Proven-loss edges are skipped unless all
 * are (search-algorithm §7.3). UCT visits every edge once first, in expansion order.
 * PUCT (also a Gumbel root without forced visits) ranks by sf_puct_score
 * with puct_sqrt_offset, scoring unvisited edges with the FPU of
 * sf_puct_fpu (parent Q less puct_fpu_reduction * sqrt(prior mass of the
 * visited edges)), at the root as elsewhere. The Gumbel interior rule is
 * search-algorithm §2.6 with the node's own raw value as v_hat. At the root
 * (at_root = 1) with cvar_lambda > 0, edges are scored by rho (search-algorithm §7.2).
 * Returns -1 for a node without edges. */
int sf_graph_select(const sf_graph *g, uint32_t node, const sf_select_params *p, int at_root);

/* ---------------------------------------------------------------------------
 * Trees and the search
 * ------------------------------------------------------------------------- */
#define SF_SEARCH_MAX_DEPTH  512 /* path entries (decision + chance steps)  */
#define SF_GUMBEL_MAX_PHASES 64

enum { SF_STEP_DECISION = 0, SF_STEP_CHANCE = 1 };

typedef struct sf_path_step {
    uint32_t node; /* decision node index, or chance node index          */
    uint32_t edge; /* edge index (decision) or outcome index (chance)    */
    uint8_t kind;  /* SF_STEP_*                                           */
} sf_path_step;

enum {
    SF_TREE_IDLE = 0,    /* ready to run its next simulation               */
    SF_TREE_WAITING = 1, /* a request is out                               */
    SF_TREE_READY = 2,   /* an answer was fed; expand and back up          */
    SF_TREE_PHASE = 3,   /* finished its share of the current phase        */
};

typedef struct sf_tree {
    struct sf_search *owner;
    int index;
    uint64_t seed;
    sf_graph g;
    void *mem;
    int state;
    uint32_t sim;         /* simulations started (stamp source)            */
    uint32_t sims_done;   /* simulations completed                          */
    uint32_t sims_target; /* completed simulations wanted by this phase     */
    /* Gumbel: this tree's forced root edges for the phase, in order. */
    const uint16_t *forced;
    uint32_t forced_n, forced_pos;
    /* the simulation in flight */
    sf_state work;
    sf_path_step path[SF_SEARCH_MAX_DEPTH];
    int depth;
    uint32_t leaf; /* node waiting for its evaluation                */
    sf_action leaf_actions[SF_MAX_ACTIONS];
    int leaf_n;
    sf_eval_request req;
    int req_out; /* req handed out by step()                   */
    sf_eval_answer answer;
    sf_feat feat;
    /* leaf_mix > 0: the waiting leaf's rollout value (mix_ready once played;
     * sf_tree_mix_rollout) */
    double mix_z;
    int mix_ready;
    /* counters */
    uint64_t evaluations, chance_nodes, widen_new, widen_merged, widen_capped;
    uint64_t transposition_stops, edge_pool_full, feat_truncated, rollouts_cut_off;
    uint64_t merges; /* transpositions: a new edge or outcome found a known node */
    uint32_t max_depth;
    int error; /* first error (negative), sticky                */
} sf_tree;

struct sf_search {
    sf_search_config cfg;
    void *user;
    int begun, finished;
    sf_state truth, root;
    int root_turn;
    int n_root;
    sf_action root_actions[SF_MAX_ACTIONS];
    int select; /* resolved SF_SELECT_* (AUTO resolved at begin)   */
    double uct_c;
    sf_select_params sel; /* what the trees' selection reads                */
    uint64_t run_seed, decision_index;
    _Atomic uint64_t ticket; /* requests' tickets: trees on several threads take them */
    int n_trees;
    sf_tree *trees; /* [n_trees]                                       */
    size_t memory;
    /* phases: UCT/PUCT have one; Gumbel has the sequential-halving ones
     * preceded by phase 0 = root evaluation. */
    int phase, n_phases;
    int phase_k[SF_GUMBEL_MAX_PHASES], phase_extra[SF_GUMBEL_MAX_PHASES];
    int budget; /* simulations of the whole decision               */
    /* Gumbel state */
    double gumbel[SF_MAX_ACTIONS];
    double logit[SF_MAX_ACTIONS];
    int survivors[SF_MAX_ACTIONS], n_survivors;
    uint16_t *forced_buf; /* [n_trees][forced_cap]                          */
    uint32_t forced_cap;
    long phase_visits_done;
};

/* Common random numbers (search-algorithm §4.4). The chance key of applying `a` to a
 * position with identity `id`, and draw number `draw` of that chance node:
 * every stream re-seeded with sf_seed_derive(tree_seed, key, draw, stream),
 * then the action applied. The outcome depends on (tree seed, identity,
 * action, draw) only, never on the streams the position arrived with. */
uint64_t sf_chance_key(sf_identity id, sf_action a);
int sf_chance_draw(uint64_t tree_seed, sf_state *st, sf_action a, uint32_t draw, uint32_t *streams);

/* Tree-level machinery (tree.c). */
int sf_tree_alloc(sf_search *s, sf_tree *t, uint32_t sims_cap, sf_err *err);
void sf_tree_free(sf_search *s, sf_tree *t);
void sf_tree_reset(sf_tree *t, uint64_t seed);
/* Advance: run simulations until the phase target is met (returns
 * SF_TREE_PHASE) or a request is out (SF_TREE_WAITING). With a built-in
 * evaluator it never waits. Negative on error. */
int sf_tree_advance(sf_tree *t);
/* Validate and store an answer for the outstanding request. */
int sf_tree_feed(sf_tree *t, const sf_eval_answer *a, sf_err *err);

/* Root statistics of one tree for the root action list (engine order). */
typedef struct sf_tree_root_stat {
    uint32_t n;
    double q;
    int band;
    const float *dist;
    double prior;
} sf_tree_root_stat;
void sf_tree_root_stats(const sf_tree *t, const sf_action *acts, int n, sf_tree_root_stat *out);

/* Built-in evaluators (eval.c): fill the answer for a leaf state. Returns 1
 * when the value is a rollout's cut-off estimate, else 0. */
int sf_eval_builtin(const sf_search_config *cfg, const sf_state *leaf, const sf_action *acts, int n,
                    uint64_t seed, sf_eval_answer *out);

/* The rollout evaluator's value of `leaf` for the leaf seed `seed` (the
 * rollout evaluator's answer, whatever cfg->evaluator is); *cut_off gets 1
 * for a cut-off estimate. */
double sf_eval_rollout(const sf_search_config *cfg, const sf_state *leaf, uint64_t seed,
                       int *cut_off);

/* leaf_mix > 0 and a request waiting: play the leaf's rollout now (once;
 * sf_tree_feed mixes it in). Returns 1 when it played one, else 0. */
int sf_tree_mix_rollout(sf_tree *t);

/* Validate an external answer (fields named in err). */
int sf_eval_answer_check(const sf_eval_answer *a, int n_actions, sf_err *err);

/* The choice rule of sf_search_result_get() over filled r->actions (valid =
 * not proven lost, or all). White-box tests call it directly. */
void sf_search_choose(const sf_search *s, sf_search_result *r, const unsigned char *valid);

/* Summed root statistics (search.c), used by Gumbel phases and results. */
typedef struct sf_root_sum {
    uint32_t n[SF_MAX_ACTIONS];
    double q[SF_MAX_ACTIONS];
    double score[SF_MAX_ACTIONS];
    int band[SF_MAX_ACTIONS];
    double prior[SF_MAX_ACTIONS];
    float dist[SF_MAX_ACTIONS][SF_VALUE_BINS];
    double v_hat;
} sf_root_sum;
void sf_search_root_sum(const sf_search *s, sf_root_sum *out);

#endif
