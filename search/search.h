/*
 * search.h — honest Monte-Carlo graph search (MCGS) over engine states: the
 * decision maker behind every label.
 *
 * What it is
 *   One `sf_search` searches one decision: from the position the player sees,
 *   it runs K independent root-parallel trees, sums their root statistics and
 *   returns, per legal root action, visits, mean Q, completed-Q, the improved
 *   policy pi' and the chosen action (sf_search_result). Each tree is a graph:
 *   decision nodes (the player to move), chance nodes (an action applied whose
 *   randomness has not yet been drawn) and edges, all in arrays allocated once
 *   and linked by index; a transposition table keyed by the engine's 128-bit
 *   sf_identity merges positions reached by different play orders.
 *   Algorithm reference: docs/search-algorithm.md (cited as "search-algorithm §n").
 *
 * Honesty
 *   By default the root is sf_engine_belief_root(truth, seed): the hidden draw
 *   order becomes chance events and every random stream is re-seeded from a
 *   seed that depends only on (run seed, decision index), so the result is a
 *   function of what the player can see. SF_ROOT_CLAIRVOYANT searches the true
 *   state with its true streams; it exists only to measure the cost of honesty.
 *
 * Chance and common random numbers (search-algorithm §4)
 *   Whenever sf_engine_apply() reports advanced streams, the edge leads to a
 *   chance node. Before every apply inside a tree, every stream is re-seeded
 *   with salt = sf_seed_derive(tree seed, chance key, draw index, stream),
 *   chance key = sf_seed_derive(identity.lo, identity.hi, action code, 0) of
 *   the position the action is applied to. So two lines that reach the same
 *   chance state face the same outcome sequence, and a run replays exactly.
 *   Outcomes are keyed by sf_engine_identity() (identical ones merge) and
 *   widened progressively: at most ceil(C*(v+1)^alpha) distinct outcomes
 *   after v visits (end of turn C = 5.79, alpha = 0.44). Once the cap binds,
 *   an existing outcome o is revisited by the deterministic tracking rule
 *   argmax m(o)/sum m - n(o)/(1 + sum n) (search-algorithm §4.2, [design]). A chance node
 *   backs up the plain mean of its outcomes.
 *
 * Values (the label contract, label/label.h and docs/search.md)
 *   Every value is the outcome score y in [0, 1] of label/label.h: a win in
 *   [0.5, 1] graded by HP and potions kept, a loss in [0, 0.2) graded by the
 *   monster HP removed and the turns survived, so any win outranks any loss
 *   and a doomed position still ranks its moves. The 21-bin categorical
 *   (bins 0..4 losses, 5..20 wins) projects two-hot, so E[z] = y exactly.
 *   Node values follow the idempotent recomputation of search-algorithm §5.2:
 *   Q(n) = (U(n) + sum_a N(n,a)*Q(child_a)) / (1 + sum_a N(n,a)), the same
 *   mixture for 21-bin histograms. Selection reads edge visits N(n,a), never
 *   a child's own count (search-algorithm §1.2). Bands (search-algorithm §7.3) rank a proven win
 *   above everything and a proven loss below everything; a chance node is
 *   never proven (its outcome set is only ever a sample). A rollout cut off
 *   at its ply limit is valued strictly below any win (and counted).
 *
 * Allocation
 *   sf_search_create() allocates everything, sized from the configured
 *   budget (through the caller's sf_search_allocator if given). Nothing else
 *   allocates: begin, step, feed, run and result reuse those arrays, so a
 *   simulation never allocates (tests/unit/test_search_engine.c counts
 *   malloc calls to prove it). sf_search_run() with threads > 1 creates
 *   threads (one pthread_create per thread per phase), outside simulations.
 *
 * Threading and determinism
 *   An sf_search is used by one thread at a time; distinct searches are
 *   independent. Tree k's seed is sf_seed_derive(run seed, decision index,
 *   k, 1); trees share nothing but the read-only root, and their statistics
 *   are summed in tree order, so the result bytes are identical whatever the
 *   number of threads, the scheduling, or the batch composition of an
 *   external evaluator. Nothing reads the clock.
 *
 * The resumable API (for a network evaluator)
 *   With SF_EVAL_EXTERNAL the search never blocks: sf_search_step() runs
 *   simulations until every tree needs a leaf evaluated (or is finished) and
 *   returns those requests (tokens from sf_engine_feat() plus the legal
 *   actions); sf_search_feed() gives one answer (value or 21-bin
 *   distribution, priors over the legal actions) and the next step()
 *   continues. A worker thread steps many searches, sends one batch for all
 *   their requests, feeds the answers back, and steps again:
 *
 *       for each search s: sf_search_step(s, reqs + k, cap - k, &n, &e); k += n;
 *       ...evaluate reqs[0..k) as one batch...
 *       for each i: sf_search_feed(owner(i), reqs[i], &answers[i], &e);
 *
 *   sf_search_run() is the synchronous wrapper: built-in evaluators need no
 *   callback; an external evaluator is called back per request.
 *
 * Errors
 *   Functions that can fail return SF_OK or a negative SF_E* code
 *   (common/common.h) and fill the optional sf_err; step() returns the
 *   positive statuses SF_SEARCH_DONE / SF_SEARCH_PENDING.
 */
#ifndef SF_SEARCH_H
#define SF_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "common/search_defaults.h"
#include "engine/engine.h"
#include "label/label.h"

/* ---------------------------------------------------------------------------
 * Values: the label contract (label/label.h) applied to engine outcomes
 * ------------------------------------------------------------------------- */
_Static_assert(SF_VALUE_POTION_SLOTS == SF_POTION_SLOTS,
               "the contract scores the engine's default slots");
_Static_assert(SF_VALUE_POTIONS_MAX == SF_MAX_POTION_SLOTS,
               "a record holds as many potions as the engine's slots");

/* The label contract's facts of a finished fight (o->won, hp, max_hp,
 * potions_left, turns, monster_hp_left, monster_hp_pool). */
sf_fight_facts sf_fight_facts_of(const sf_outcome *o);

/* sf_value_score() of a finished fight. */
double sf_value_of_outcome(const sf_outcome *o);

/* The highest value a rollout cut off before the fight's end can get
 * (below SF_VALUE_WIN_MIN: an unfinished line never outranks a real win). */
#define SF_VALUE_CUTOFF_MAX 0.45

/* The value of a position whose rollout was cut off at its ply limit:
 * L + p*(SF_VALUE_CUTOFF_MAX - L), with L the loss score the fight would
 * get if it were lost now and p = hp / (hp + monster HP left), a crude
 * chance of winning. In [0, SF_VALUE_CUTOFF_MAX], so strictly below any
 * win. */
double sf_value_cutoff(const sf_state *s);

/* CVaR_alpha of a discrete distribution, lower tail (search-algorithm §7.2,
 * Acerbi-Tasche 2002): the mean of the worst alpha of the mass, the atom at
 * the VaR split fractionally. `z` ascending, `p` non-negative with sum 1,
 * k >= 1 atoms, alpha in (0, 1] (clamped; alpha <= 0 gives z[first atom with
 * mass]). CVaR_1 = mean. */
double sf_value_cvar(const double *z, const double *p, int k, double alpha);

/* sf_value_cvar() on the 21-bin support of sf_value_support(). */
double sf_value_cvar21(const float p[SF_VALUE_BINS], double alpha);

/* ---------------------------------------------------------------------------
 * Bands (search-algorithm §7.3): ranking only, never averaged into a mean.
 * ------------------------------------------------------------------------- */
enum {
    SF_BAND_LOSS = 0,      /* proven loss: every line loses                  */
    SF_BAND_UNCERTAIN = 1, /* not proven                                     */
    SF_BAND_WIN = 2        /* proven win: some line wins whatever happens    */
};

/* Lexicographic rank key (band, score): returns >0 when (band_a, score_a)
 * ranks above (band_b, score_b), <0 below, 0 when equal. A proven loss never
 * outranks an uncertain line, whatever the scores (search-algorithm §11.7). */
int sf_band_compare(int band_a, double score_a, int band_b, double score_b);

/* ---------------------------------------------------------------------------
 * Formulas (exact, allocation-free; every one is reproduced against the test
 * vectors of search-algorithm §10 in tests/unit/test_search_math.c).
 * ------------------------------------------------------------------------- */

/* UCT (Kocsis & Szepesvari 2006; search-algorithm §3.1): q + c*sqrt(ln(n_parent)/n);
 * +INFINITY when n == 0 (every child is visited once first). */
double sf_uct_score(double q, uint32_t n, uint32_t n_parent, double c);

/* The UCT constant by budget (search-algorithm §3.1 [design]; issue table): c_low below
 * budget_mid, c_mid below budget_high, c_high from budget_high (budget >=
 * 0, a simulation count). With the
 * defaults of sf_search_config_default(): 0.8 below 500 simulations, 1.41
 * below 1,000, 2.5 from 1,000. */
double sf_uct_c_for_budget(int budget, int budget_mid, int budget_high, double c_low, double c_mid,
                           double c_high);

/* The same rule over any number of steps (a fleet run's search.c_schedule):
 * the c of the first of steps[0..n) whose `below` is 0 (any budget) or
 * above `budget`; `fallback` when none is (an empty schedule, or one whose
 * last step is bounded below the budget). sf_uct_c_for_budget() is this
 * rule over the steps {budget_mid, c_low}, {budget_high, c_mid}, {0, c_high}
 * (a bound <= 0 is a step no budget is below, and is skipped). */
typedef struct sf_uct_c_step {
    uint32_t below; /* budgets below this many simulations take c; 0 = all */
    double c;
} sf_uct_c_step;

double sf_uct_c_schedule(uint32_t budget, const sf_uct_c_step *steps, int n, double fallback);

/* PUCT (search-algorithm §3.2): MuZero's exploration factor with KataGo's offset under
 * the square root,
 *   q + prior * sqrt(n_parent + sqrt_offset) / (1 + n) * (c1 + ln((n_parent + c2 + 1) / c2)),
 * n = the edge's visits, n_parent = the sum of the node's edge visits (0 on
 * the node's first selection). c1 = 1.25, c2 = 19652 (MuZero);
 * sqrt_offset = 0.01 (KataGo search: its TOTALCHILDWEIGHT_PUCT_OFFSET). The
 * offset keeps the prior term positive when n_parent = 0, so the prior
 * ranks a node's children from its first visit; with sqrt_offset = 0 (the
 * plain MuZero form) every child scores q there and ties go to the first
 * edge. */
double sf_puct_score(double q, double prior, uint32_t n, uint32_t n_parent, double c1, double c2,
                     double sqrt_offset);

/* First-play urgency (FPU) of PUCT, KataGo search's FPU reduction: the value
 * an unvisited child is scored with,
 *   parent_q - reduction * sqrt(visited_prior),
 * visited_prior = the sum of the priors of the node's edges with visits > 0
 * (clamped to [0, 1]). On a node's first selection nothing is visited and
 * the FPU is the parent's Q; the more prior mass has been explored, the
 * lower the untried rest is presumed. reduction = 0.1 by default
 * (sf_search_config.puct_fpu_reduction). */
double sf_puct_fpu(double parent_q, double visited_prior, double reduction);

/* Progressive-widening cap K(v) = ceil(C*(v+1)^alpha) (search-algorithm §4.1, §10.3):
 * the most distinct outcomes a chance node may hold after v visits. */
uint32_t sf_widen_cap(double C, double alpha, uint32_t v);

/* v_mix (search-algorithm §2.3, MCTX qtransforms._compute_mixed_value, Gumbel paper
 * App. D) over n actions: (v_hat + S * sum_{N>0} pi~*q / sum_{N>0} pi~) /
 * (S + 1), S = sum visits, pi~ = max(prior, DBL_MIN). Unvisited q[] are not
 * read. Returns v_hat when S = 0. */
double sf_gumbel_vmix(int n, const double *prior, const uint32_t *visits, const double *q,
                      double v_hat);

/* completedQ(a) = q(a) if visits(a) > 0 else v_mix (search-algorithm §2.3). Writes
 * out[0..n). `valid` (may be NULL = all valid) masks actions: invalid ones
 * get out = v_mix and are ignored by v_mix. Returns v_mix. */
double sf_gumbel_completed_q(int n, const double *prior, const uint32_t *visits, const double *q,
                             const unsigned char *valid, double v_hat, double *out);

/* sigma (search-algorithm §2.4): sigma(a) = (c_visit + max_b visits(b)) * c_scale *
 * cq(a), where cq = completedQ min-max rescaled over the valid actions
 * (denominator at least 1e-8) when `rescale`, else completedQ as is (our
 * values already lie in the known bounds [0, 1], search-algorithm §2.4 option (c)).
 * Invalid actions get sigma = 0. */
void sf_gumbel_sigma(int n, const double *completed_q, const uint32_t *visits,
                     const unsigned char *valid, double c_visit, double c_scale, int rescale,
                     double *sigma);

/* Improved policy pi' = softmax(logit + sigma) over valid actions (spec
 * §2.5); invalid actions get 0. No Gumbel noise enters pi'. */
void sf_gumbel_policy(int n, const double *logit, const double *sigma, const unsigned char *valid,
                      double *pi);

/* Deterministic non-root Gumbel selection (search-algorithm §2.6): argmax_a
 * pi'(a) - visits(a)/(1 + sum visits), lowest index on ties, valid only.
 * Returns -1 when no action is valid. */
int sf_gumbel_select_interior(int n, const double *pi, const uint32_t *visits,
                              const unsigned char *valid);

/* The sequential-halving schedule of MCTX seq_halving (search-algorithm §2.2, §10.1):
 * writes the considered visit count c_t for t = 0..n_sims-1 into out (at
 * least n_sims entries) for m considered actions. Returns n_sims, or
 * SF_EINVAL for m < 1 or n_sims < 0. */
int sf_gumbel_schedule(int m, int n_sims, uint32_t *out);

/* The same schedule as phases: phase p visits each of k[p] surviving
 * actions extra[p] times (the last phase may be cut short: its visits stop
 * at n_sims in total). Writes at most cap phases; returns the number of
 * phases, SF_EFULL if cap is too small, SF_EINVAL for bad m / n_sims. */
int sf_gumbel_phases(int m, int n_sims, int *k, int *extra, int cap);

/* ---------------------------------------------------------------------------
 * Configuration
 * ------------------------------------------------------------------------- */
#define SF_SEARCH_MAX_TREES 64

enum {
    SF_SELECT_AUTO = 0, /* UCT with the rollout evaluator, PUCT with priors   */
    SF_SELECT_UCT = 1,
    SF_SELECT_PUCT = 2,
    SF_SELECT_GUMBEL = 3 /* Gumbel root + sequential halving, search-algorithm §2        */
};

/* The selection rules by name, one table for every reader (the tools'
 * --select, a gate side's champion.select / candidate.select): "auto",
 * "uct", "puct", "gumbel". sf_search_select_name() gives "auto" for a code
 * that is no rule; sf_search_select_lookup() gives the SF_SELECT_* code of
 * a name, or SF_ENOTFOUND. */
const char *sf_search_select_name(int select);
int sf_search_select_lookup(const char *name);

enum {
    SF_EVAL_ROLLOUT = 0, /* heuristic rollout to the end (or 200 plies)     */
    SF_EVAL_UNIFORM = 1, /* value 0.5, uniform priors                       */
    SF_EVAL_EXTERNAL = 2 /* a network, through step/feed (or a callback)    */
};

enum {
    SF_ROOT_BELIEF = 0,     /* honest: sf_engine_belief_root()               */
    SF_ROOT_CLAIRVOYANT = 1 /* true state and streams, for measuring only    */
};

/* Where the arrays come from. alloc(ctx, bytes) returns zeroed or unzeroed
 * memory aligned for any type (like malloc), or NULL; free(ctx, p) releases
 * it. Leave both NULL for malloc/free. */
typedef struct sf_search_allocator {
    void *(*alloc)(void *ctx, size_t bytes);
    void (*free)(void *ctx, void *p);
    void *ctx;
} sf_search_allocator;

typedef struct sf_search_config {
    int simulations; /* budget per decision, all trees together; >= 1        */
    int trees;       /* K root-parallel trees, 1..SF_SEARCH_MAX_TREES        */
    int select;      /* SF_SELECT_*                                          */
    int evaluator;   /* SF_EVAL_*                                            */
    int root;        /* SF_ROOT_*                                            */

    /* UCT: c < 0 picks c by budget from the table below. */
    double uct_c;
    int uct_budget_mid, uct_budget_high;     /* 500, 1000                       */
    double uct_c_low, uct_c_mid, uct_c_high; /* 0.8, 1.41, 2.5              */

    /* PUCT (sf_puct_score, sf_puct_fpu): MuZero's c1 and c2 and KataGo's
     * offset under the square root; unvisited children are scored with the
     * FPU parent Q - puct_fpu_reduction * sqrt(prior mass of the visited
     * children) (KataGo's FPU reduction). KataGo uses 0.2 on utilities in
     * [-1, 1]; our values lie in [0, 1], half that span, so the same
     * fraction of the range is 0.1. The root uses the same rule and
     * constant (KataGo halves it at the root, and drops it when it adds
     * root noise; our PUCT root has no noise and no separate constant).
     * puct_sqrt_offset = 0 gives the plain MuZero scaling, where a node's
     * first selection ignores the prior; puct_fpu_reduction = 0 scores
     * unvisited children with the parent's Q. Both must be finite, >= 0. */
    double puct_c1, puct_c2;   /* 1.25, 19652                                */
    double puct_sqrt_offset;   /* 0.01                                       */
    double puct_fpu_reduction; /* 0.1                                        */

    /* Gumbel root (search-algorithm §2). Q normalisation: by default our values already
     * lie in the known bounds [0, 1] (search-algorithm §2.4 option (c)), so sigma uses
     * the raw completed Q with the paper's c_scale = 1.0; with
     * gumbel_rescale = 1 it rescales per node (MCTX default) and c_scale
     * should be 0.1. Never mix c_scale 1.0 with rescaling (search-algorithm §2.4). */
    int gumbel_m;          /* considered actions, 16                     */
    double gumbel_c_visit; /* 50                                         */
    double gumbel_c_scale; /* 1.0                                        */
    int gumbel_rescale;    /* 0                                          */
    double gumbel_noise;   /* scale of the Gumbel noise, 1.0 (0 = none)  */

    /* Progressive widening (search-algorithm §4): end-of-turn and other chance nodes. */
    double pw_end_turn_c, pw_end_turn_alpha; /* 5.79, 0.44                   */
    double pw_other_c, pw_other_alpha;       /* 5.79, 0.44                   */

    /* Values. distributional = 1 keeps 21-bin histograms on every node;
     * cvar_lambda > 0 then ranks root actions by (1-lambda)*mean +
     * lambda*CVaR_alpha (search-algorithm §7.2; root only, never nested). */
    int distributional;
    double cvar_alpha;  /* 0.25                                              */
    double cvar_lambda; /* 0 (plain mean)                                    */

    /* Heuristic rollout: softmax over sf_action_info.priority / tau, card
     * plays before END_TURN (the hand is emptied first), no potions, at most
     * rollout_max_plies plies. */
    double rollout_tau;    /* 32                                             */
    int rollout_max_plies; /* 200                                            */

    /* Mixed leaf evaluation (AlphaGo's mixing of value network and rollout,
     * Silver et al. 2016, "Mastering the game of Go with deep neural
     * networks and tree search"): with SF_EVAL_EXTERNAL, a leaf's value is
     *     (1 - leaf_mix) * v_net + leaf_mix * z_rollout,
     * the network's priors kept (a 21-bin answer is mixed with the
     * rollout's two-hot projection, so its mean is the same mixture).
     * z_rollout is the rollout the built-in evaluator would give that leaf
     * in that tree (the same seed rule), so it does not depend on batching.
     * 0 (the default): the network's value alone, no rollout played; 1:
     * the network's priors with rollout values. In [0, 1]; ignored by the
     * built-in evaluators. docs/search.md "Mixed leaf evaluation". */
    double leaf_mix;

    /* Choosing the action (issue rule): choose_margin 0.02, guards on. */
    double choose_margin;
    int end_turn_guards;

    /* Search horizon: a position at player turn >= root turn +
     * horizon_turns is a leaf valued once by the evaluator and never
     * expanded. 0 = no horizon (the fight's end). */
    int horizon_turns;

    /* KataGo's "stop the playout when the child has more visits than the
     * edge" (search-algorithm §5.2): back up the child's value without descending. */
    int stop_at_transposition; /* 1                                         */

    /* External evaluator requests carry sf_engine_feat() tokens (1, the
     * default, for a network). 0 skips tokenizing for callers that evaluate
     * request->state themselves (feat is then NULL). */
    int request_feat;

    /* Arena sizing: edges per decision node on average (the edge pool holds
     * edges_per_node * nodes + SF_MAX_ACTIONS edges; nodes = simulations per
     * tree + 2; chance nodes and outcomes 2 * simulations + 64). A leaf found
     * when the edge pool is full is valued but not expanded, and a
     * simulation that needs a chance node or outcome when none is left ends
     * early (both counted in edge_pool_full); nothing fails. */
    int edges_per_node; /* 24                                                */

    sf_search_allocator allocator;
} sf_search_config;

/* Fill `cfg` with the defaults named in the comments above: the numbers
 * are SF_SEARCH_DEFAULT_* of common/search_defaults.h (their one home,
 * shared with the fleet's config table), with SF_SELECT_AUTO,
 * SF_EVAL_ROLLOUT, SF_ROOT_BELIEF, uct_c -1 (the budget table), and
 * distributional 0, horizon_turns 0, guards, transposition stops and
 * request tokens on. */
void sf_search_config_default(sf_search_config *cfg);

/* Check a configuration; the message names the offending field. */
int sf_search_config_validate(const sf_search_config *cfg, sf_err *err);

/* ---------------------------------------------------------------------------
 * Evaluation requests and answers (the resumable API)
 * ------------------------------------------------------------------------- */

/* A leaf that needs evaluating. Everything it points to is owned by the
 * search and stays valid until the request is fed or the search is begun
 * again or destroyed. Query q of `feat` scores actions[q]. */
typedef struct sf_eval_request {
    int tree;                 /* the tree that waits (pass the request back) */
    uint64_t ticket;          /* unique within the search; checked by feed   */
    const sf_state *state;    /* the leaf position (belief state)            */
    const sf_action *actions; /* its legal actions, engine order             */
    int n_actions;            /* 1..SF_MAX_ACTIONS                           */
    const sf_feat *feat;      /* sf_engine_feat(state, actions, n_actions);
                                 NULL when cfg.request_feat = 0             */
    void *user;               /* sf_search_set_user() of the owning search   */
} sf_eval_request;

/* An evaluator's answer. Set has_dist to give a 21-bin distribution over
 * the support of sf_value_support() (value is then ignored and taken as
 * its mean), else value is the scalar in [0, 1]. has_priors = 1 gives
 * priors[i] >= 0 for request->actions[i] (normalised by the search; at
 * least one must be > 0); 0 means uniform. */
typedef struct sf_eval_answer {
    int has_dist;
    double value;
    float dist[SF_VALUE_BINS];
    int has_priors;
    float priors[SF_MAX_ACTIONS];
} sf_eval_answer;

/* A synchronous external evaluator for sf_search_run(): fill `answer` for
 * `request`; return SF_OK or a negative SF_E* (which aborts the run). Called
 * from several threads at once when run with threads > 1. */
typedef int (*sf_eval_fn)(void *ctx, const sf_eval_request *request, sf_eval_answer *answer);

/* ---------------------------------------------------------------------------
 * The result of a decision
 * ------------------------------------------------------------------------- */
enum {
    SF_CHOSEN_SINGLE = 0,       /* one legal action: not searched            */
    SF_CHOSEN_PROVEN_WIN = 1,   /* best-scoring proven win                   */
    SF_CHOSEN_BEST_MEAN = 2,    /* best mean (or rho) and also most visited  */
    SF_CHOSEN_MOST_VISITED = 3, /* most visited within choose_margin of best */
    SF_CHOSEN_GUARD_BLOCK = 4,  /* END_TURN swapped for an equal block card  */
    SF_CHOSEN_GUARD_FREE = 5,   /* END_TURN swapped for an equal 0-cost play */
    SF_CHOSEN_GUMBEL = 6,       /* Gumbel final action (search-algorithm §2.2)           */
    SF_CHOSEN_ALL_LOST = 7      /* every action proven lost: most visited    */
};

/* Per root action, in the engine's canonical order. */
typedef struct sf_root_stat {
    sf_action action;
    uint32_t visits;           /* summed over trees                                */
    int band;                  /* SF_BAND_* (a proof in any tree holds in all)     */
    double q;                  /* mean value: sum_t N_t*Q_t / N (0 if unvisited)   */
    double completed_q;        /* q if visited else v_mix (search-algorithm §2.3)              */
    double score;              /* what ranks it: q, or (1-l)*q + l*CVaR            */
    double prior;              /* root prior (uniform without priors)              */
    double policy;             /* pi' = softmax(log prior + sigma(completedQ))     */
    float dist[SF_VALUE_BINS]; /* mixture histogram (distributional mode)   */
} sf_root_stat;

typedef struct sf_search_result {
    int searched; /* 0 when the root had a single legal action         */
    int n_actions;
    sf_root_stat actions[SF_MAX_ACTIONS];
    int chosen; /* index into actions                                */
    sf_action chosen_action;
    int chosen_reason;        /* SF_CHOSEN_*                                       */
    int select;               /* the selection rule that ran (SF_SELECT_*)         */
    double root_raw_value;    /* v_hat: mean over trees of the evaluator's value
                                 of the root (before any search)               */
    double root_search_value; /* the search's value of the root: each tree's
                                 Q(root) weighted by its N(root) (search-algorithm §5.2)   */
    double v_mix;
    int n_trees;
    double tree_value[SF_SEARCH_MAX_TREES]; /* Q(root) of each tree          */
    uint64_t simulations;                   /* completed simulations, all trees             */
    uint64_t evaluations;                   /* leaves evaluated (roots included)            */
    uint64_t node_creations;                /* decision nodes created                       */
    uint64_t merges;                        /* transposition hits (existing node reused)    */
    double merge_ratio;                     /* merges / node_creations                      */
    uint64_t chance_nodes;
    uint64_t widen_new;           /* chance visits that drew a new outcome        */
    uint64_t widen_merged;        /* draws that landed on an existing outcome     */
    uint64_t widen_capped;        /* chance visits at the cap: existing outcome   */
    uint64_t transposition_stops; /* playouts stopped at a transposition     */
    uint64_t edge_pool_full;      /* leaves not expanded / simulations cut short
                                     for lack of pool room (edges, chance nodes)  */
    uint64_t feat_truncated;      /* requests whose tokens hit SF_FEAT_MAX_TOKENS */
    uint64_t rollouts_cut_off;    /* rollouts stopped at rollout_max_plies, valued
                                     by sf_value_cutoff() (below any win)          */
    uint32_t max_depth;           /* deepest path (decision plies)                */
} sf_search_result;

/* ---------------------------------------------------------------------------
 * The search object
 * ------------------------------------------------------------------------- */
typedef struct sf_search sf_search;

/* Positive statuses of sf_search_step(). */
#define SF_SEARCH_DONE    1 /* every tree finished: read the result          */
#define SF_SEARCH_PENDING 2 /* waiting for fed answers (requests returned)   */

/* Allocate a search for `cfg` (validated; copied). All memory is allocated
 * here, sized from cfg->simulations and cfg->trees. Errors: SF_EINVAL /
 * SF_ECONFIG for a bad field (named in err), SF_ENOMEM. */
int sf_search_create(const sf_search_config *cfg, sf_search **out, sf_err *err);

/* Release everything; NULL is fine. */
void sf_search_destroy(sf_search *s);

/* The configuration in use (read-only). */
const sf_search_config *sf_search_get_config(const sf_search *s);

/* Bytes allocated by create (for memory benchmarks). */
size_t sf_search_memory(const sf_search *s);

/* An opaque pointer copied into every request (e.g. the owning fight). */
void sf_search_set_user(sf_search *s, void *user);

/* Start searching the decision at `truth` (a non-terminal position): build
 * the root (belief root seeded from (run_seed, decision_index), or the
 * truth itself in clairvoyant mode), derive the tree seeds, clear every
 * tree. A root with one legal action is not searched (step returns DONE at
 * once). Errors: SF_ESTATE if `truth` is terminal or has no legal action. */
int sf_search_begin(sf_search *s, const sf_state *truth, uint64_t run_seed, uint64_t decision_index,
                    sf_err *err);

/* Run simulations until every unfinished tree waits for an evaluation.
 * Writes pointers to the new requests into reqs[0..*n_out) (at most `cap`;
 * at most one per tree, so cap >= trees always suffices; requests that do
 * not fit are returned by the next call). Returns SF_SEARCH_DONE when
 * finished, SF_SEARCH_PENDING while answers are awaited, or a negative
 * error (SF_ESTATE before begin). With a built-in evaluator one call runs
 * the whole search and returns SF_SEARCH_DONE. */
int sf_search_step(sf_search *s, const sf_eval_request **reqs, int cap, int *n_out, sf_err *err);

/* Answer request `req` (from this search's latest step, not yet fed).
 * The answer is validated before anything changes: a non-finite or
 * out-of-range value, a distribution that does not sum to 1 within 1e-3, or
 * bad priors give SF_EINVAL naming the field, and the request stays open.
 * A stale or foreign ticket gives SF_ESTATE. Never runs simulations itself;
 * call step() again. */
int sf_search_feed(sf_search *s, const sf_eval_request *req, const sf_eval_answer *answer,
                   sf_err *err);

/* With leaf_mix > 0: play now the rollouts of every leaf this search has
 * waiting for an answer (those not played yet), so that they run while a
 * caller's batch is being evaluated elsewhere (a remote gpu-evald);
 * sf_search_feed() plays any that were not. Returns how many it played.
 * The results do not depend on whether or when this is called. Never
 * allocates. */
int sf_search_leaf_rollouts(sf_search *s);

/* The synchronous wrapper: run the begun search to the end on `threads`
 * threads (>= 1; trees are spread over threads; the result does not depend
 * on the count). With SF_EVAL_EXTERNAL, `fn(ctx, ...)` answers each request
 * (required); built-in evaluators ignore fn. */
int sf_search_run(sf_search *s, int threads, sf_eval_fn fn, void *ctx, sf_err *err);

/* Fill `out` (zeroed first, so equal searches give equal bytes) from the
 * summed root statistics: visits, q, completed-Q, pi' and the chosen action
 * by the issue rule: a proven win if any (best score); else the best score
 * among unproven actions, and among actions within choose_margin of it the
 * most visited (SF_SELECT_GUMBEL: the Gumbel final action, search-algorithm §2.2); then
 * the end-turn guards: when END_TURN is chosen and the announced damage
 * exceeds the block, an equally good (within choose_margin) block card that
 * can be paid for replaces it; else an equally good 0-cost play does.
 * Errors: SF_ESTATE if the search is not finished. */
int sf_search_result_get(const sf_search *s, sf_search_result *out, sf_err *err);

/* One call for simple callers: create, begin, run on `threads` threads,
 * fill `out`, destroy. Allocates (create); loops that decide often should
 * keep one sf_search and call begin/run/result_get instead. */
int sf_search_decide(const sf_search_config *cfg, const sf_state *truth, uint64_t run_seed,
                     uint64_t decision_index, int threads, sf_eval_fn fn, void *ctx,
                     sf_search_result *out, sf_err *err);

/* ---------------------------------------------------------------------------
 * Built-in policies (also used by sf-arena)
 * ------------------------------------------------------------------------- */

/* Play one heuristic-rollout move from `s` (softmax over priority/tau among
 * card plays and choices; END_TURN only when nothing else; no potions),
 * drawing from the 64-bit generator state *rng. Writes the action; returns
 * SF_OK or SF_ESTATE when `s` has no legal action. The same policy as
 * sf_engine_heuristic_action(), which it calls. */
int sf_search_rollout_action(const sf_state *s, double tau, uint64_t *rng, sf_action *out);

/* Play the fight out from `s` (modified in place) with the rollout policy
 * for at most max_plies plies and return the value: the outcome score when
 * the fight ended, else sf_value_cutoff() (strictly below any win).
 * *cut_off (may be NULL) receives 1 in the second case, else 0. */
double sf_search_rollout(sf_state *s, double tau, int max_plies, uint64_t *rng, int *cut_off);

#endif
