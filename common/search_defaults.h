/*
 * search_defaults.h — the default of every search knob, named once.
 *
 * Who reads it
 *   The search library (sf_search_config_default() in search/search.c and
 *   the usage text of sf-search and sf-arena, search/cli.c) and the fleet's
 *   run configuration (the default column of fleet/config.c's key table).
 *   The fleet config library may not include search/ (docs/architecture.md
 *   "Layer map"), and both may include common/, so the numbers live here
 *   and each side derives its own spelling from them: the library assigns
 *   them, the config table writes SF_STRINGIFY() of them as the default
 *   text that `sf-fleet check` prints and docs/operator.md lists.
 *
 * Invariant
 *   Every value is one plain literal written as the config table and the
 *   docs spell it ("5.79", not "5.790" or an expression), because
 *   SF_STRINGIFY() turns the token itself into the default text and the
 *   config digest, test-config and docs/operator.md all read that text.
 *
 * Defaults that differ by purpose
 *   A standalone decision (a library caller, sf-search, sf-arena) and a
 *   fleet run disagree on three knobs, each named twice on purpose:
 *   SF_SEARCH_DEFAULT_* is the library's, SF_FLEET_DEFAULT_* the fleet's.
 *   Why each differs is written beside it. Every other knob has one default
 *   for both.
 */
#ifndef SF_SEARCH_DEFAULTS_H
#define SF_SEARCH_DEFAULTS_H

/* The budget of one decision, all trees together. A standalone search
 * spends 1,000 (sf-search and sf-arena report the strength of one
 * decision); a fleet run labels every decision of thousands of fights and
 * spends 200, the self-play budget its labels, configs and config digests
 * were made with (docs/operator.md). */
#define SF_SEARCH_DEFAULT_SIMULATIONS 1000
#define SF_FLEET_DEFAULT_SIMULATIONS  200

/* Root-parallel trees. One tree gives the library's exact single-tree
 * results (the goldens of tests/unit/test_search_engine.c); a fleet run
 * searches with two, so a label's root statistics average two independent
 * trees (result.tree_value shows their spread). */
#define SF_SEARCH_DEFAULT_TREES 1
#define SF_FLEET_DEFAULT_TREES  2

/* The UCT constant by budget (sf_uct_c_for_budget, search-algorithm §3.1
 * [design]): C_LOW below BUDGET_MID simulations, C_MID below BUDGET_HIGH,
 * C_HIGH from BUDGET_HIGH. The fleet's search.c_schedule default is the
 * same table. */
#define SF_SEARCH_DEFAULT_UCT_BUDGET_MID  500
#define SF_SEARCH_DEFAULT_UCT_BUDGET_HIGH 1000
#define SF_SEARCH_DEFAULT_UCT_C_LOW       0.8
#define SF_SEARCH_DEFAULT_UCT_C_MID       1.41
#define SF_SEARCH_DEFAULT_UCT_C_HIGH      2.5

/* PUCT (sf_puct_score, sf_puct_fpu): MuZero's c1 and c2, KataGo's offset
 * under the square root and its FPU reduction scaled to values in [0, 1]
 * (search.h explains each). */
#define SF_SEARCH_DEFAULT_PUCT_C1            1.25
#define SF_SEARCH_DEFAULT_PUCT_C2            19652
#define SF_SEARCH_DEFAULT_PUCT_SQRT_OFFSET   0.01
#define SF_SEARCH_DEFAULT_PUCT_FPU_REDUCTION 0.1

/* The Gumbel root (search-algorithm §2): considered actions, c_visit,
 * c_scale (values already in [0, 1], so no rescaling) and the noise
 * scale. */
#define SF_SEARCH_DEFAULT_GUMBEL_M       16
#define SF_SEARCH_DEFAULT_GUMBEL_C_VISIT 50
#define SF_SEARCH_DEFAULT_GUMBEL_C_SCALE 1
#define SF_SEARCH_DEFAULT_GUMBEL_NOISE   1

/* Progressive widening of chance nodes, K(v) = ceil(C*(v+1)^alpha)
 * (search-algorithm §4.1); the library's end-of-turn and other chance
 * nodes and the fleet's search.widening_c / widening_alpha alike. */
#define SF_SEARCH_DEFAULT_WIDENING_C     5.79
#define SF_SEARCH_DEFAULT_WIDENING_ALPHA 0.44

/* CVaR ranking at the root (search-algorithm §7.2): lambda 0 ranks by the
 * plain mean for both, and alpha is read only when lambda > 0. The library
 * ranks a risk-aware root by the worst quarter of the outcome mass. The
 * fleet's search.cvar_alpha has defaulted to 1 (CVaR_1 is the mean) since
 * the key was added, and every run config's digest carries it, so it stays
 * 1: a fleet run that sets search.cvar_lambda must also set
 * search.cvar_alpha below 1 for the ranking to differ from the mean. */
#define SF_SEARCH_DEFAULT_CVAR_ALPHA  0.25
#define SF_FLEET_DEFAULT_CVAR_ALPHA   1
#define SF_SEARCH_DEFAULT_CVAR_LAMBDA 0

/* The heuristic rollout: softmax temperature over action priorities and
 * its ply cap. */
#define SF_SEARCH_DEFAULT_ROLLOUT_TAU       32
#define SF_SEARCH_DEFAULT_ROLLOUT_MAX_PLIES 200

/* Mixed leaf evaluation (search.h leaf_mix): 0, the network alone. */
#define SF_SEARCH_DEFAULT_LEAF_MIX 0

/* The choice rule's margin and the arena's edges per decision node. */
#define SF_SEARCH_DEFAULT_CHOOSE_MARGIN  0.02
#define SF_SEARCH_DEFAULT_EDGES_PER_NODE 24

#endif
