/* test_search_engine.c — the search on the real engine: an exact expectimax
 * oracle on a small fight, the only-lethal line, determinism across threads
 * and trees, honesty (indistinguishable truths), common random numbers, and
 * no allocation per simulation (malloc is wrapped at link time). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "search/internal.h"
#include "search_fixture.h"
#include "sf_check.h"

/* --------------------------------------------------------------- helpers */
static void fight(sf_state *st, const char *encounter, const char *deck, uint64_t seed) {
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    sf_err e = {0};
    spec.encounter = sf_encounter_lookup(encounter);
    ck_assert_int_ge(spec.encounter, 0);
    if (deck)
        ck_assert_msg(sf_deck_parse(deck, &spec, &e) == SF_OK, "%s", e.msg);
    spec.seed = seed;
    ck_assert_msg(sf_engine_init(st, &spec, &e) == SF_OK, "%s", e.msg);
}

static int card_of(const sf_state *st, sf_action a) {
    sf_action_info info;
    if (sf_engine_action_info(st, a, &info) != SF_OK)
        return -1;
    return a.kind == SF_ACT_PLAY ? info.card_id : -1;
}

/* ---------------------------------------------------------- exact oracle */

/* The horizon value both sides use: a finished fight's outcome score, else
 * 0.5*hp/max + 0.5*(1 - monster HP / monster HP at the root). */
typedef struct horizon {
    int mon_hp0;
} horizon;

static double horizon_value(const horizon *h, const sf_state *s) {
    if (sf_engine_is_terminal(s)) {
        sf_outcome o;
        sf_engine_outcome(s, &o);
        return sf_value_of_outcome(&o);
    }
    sf_observation ob;
    sf_engine_observe(s, &ob);
    return 0.5 * ob.hp / ob.max_hp + 0.5 * (1.0 - (double)ob.monster_hp_total / h->mon_hp0);
}

static int horizon_eval(void *ctx, const sf_eval_request *req, sf_eval_answer *ans) {
    ans->has_dist = 0;
    ans->has_priors = 0;
    ans->value = horizon_value(ctx, req->state);
    return SF_OK;
}

typedef struct oracle {
    horizon h;
    int horizon_turn;
    int draws; /* CRN draws per chance node */
    oracle_memo memo;
    long chance_nodes, max_outcomes;
} oracle;

static double oracle_v(oracle *o, const sf_state *s);

static int at_horizon(const oracle *o, const sf_state *s) {
    sf_observation ob;
    sf_engine_observe(s, &ob);
    return sf_engine_is_terminal(s) || ob.turn >= o->horizon_turn;
}

/* E[V(apply(s, a))]. A deterministic step has one outcome. A chance step's
 * outcomes are enumerated by o->draws independent re-seedings (the engine
 * draws each chance event from its streams; uniform seeds give the true
 * distribution), merged by identity and weighted by frequency. */
static double oracle_q(void *ctx, const sf_state *s, sf_action a) {
    oracle *o = ctx;
    sf_state c = *s;
    uint32_t streams = 0;
    ck_assert_int_eq(sf_chance_draw(0x0AC1E, &c, a, 0, &streams), SF_OK);
    if (!streams)
        return oracle_v(o, &c);
    o->chance_nodes++;
    enum { MAXO = 256 };
    sf_identity ids[MAXO];
    double vals[MAXO];
    int counts[MAXO], n = 0;
    int all_horizon = at_horizon(o, &c);
    /* Past the horizon the outcomes differ only in what the horizon value
     * does not read (next intents, next hand): checked below, so fewer
     * draws give the exact expectation. */
    int draws = all_horizon ? 16 : o->draws;
    for (int d = 0; d < draws; d++) {
        sf_state x = *s;
        ck_assert_int_eq(sf_chance_draw(0x0AC1E, &x, a, (uint32_t)d, NULL), SF_OK);
        sf_identity id = sf_engine_identity(&x);
        int k = 0;
        while (k < n && !sf_identity_eq(ids[k], id))
            k++;
        if (k == n) {
            ck_assert_int_lt(n, MAXO);
            ids[n] = id;
            counts[n] = 0;
            vals[n] = oracle_v(o, &x);
            n++;
        }
        counts[k]++;
    }
    if (n > o->max_outcomes)
        o->max_outcomes = n;
    double sum = 0.0;
    for (int k = 0; k < n; k++) {
        if (all_horizon)
            ck_assert_double_eq_tol(vals[k], vals[0], 1e-12);
        sum += counts[k] * vals[k];
    }
    return sum / draws;
}

static double oracle_v(oracle *o, const sf_state *s) {
    if (at_horizon(o, s))
        return horizon_value(&o->h, s);
    return oracle_best(&o->memo, s, oracle_q, o);
}

START_TEST(search_matches_exact_expectimax_on_a_small_fight) {
    /* Cultist (one weak monster), a 6-card deck, belief mode, horizon 2
     * turns. Turn 2's hand is 5 of the 6 cards (the left-out card is a
     * chance event), the Cultist's rolls are chance events. The oracle takes
     * the max over every action and the mean over every chance outcome (2,048
     * draws per chance node: outcome probabilities within ~0.02, values
     * within ~0.002), the search 200,000 simulations with the same leaves (UCT's mean backup
     * sits below the max by the exploration it still does: 0.015 at 60,000,
     * 0.006 at 200,000 on this fight). */
    sf_state truth, root;
    fight(&truth, "Cultist", "Bash,Strike,Strike,Defend,Defend,Inflame", 7);
    sf_engine_belief_root(&truth, 1, &root);
    sf_observation ob;
    sf_engine_observe(&root, &ob);
    oracle *o = calloc(1, sizeof *o);
    o->h.mon_hp0 = ob.monster_hp_total;
    o->horizon_turn = ob.turn + 2;
    o->draws = 2048;
    sf_action acts[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(&root, acts, SF_MAX_ACTIONS);
    ck_assert_int_ge(n, 3);
    double exact[SF_MAX_ACTIONS], best = -INFINITY;
    for (int k = 0; k < n; k++) {
        exact[k] = oracle_q(o, &root, acts[k]);
        if (exact[k] > best)
            best = exact[k];
    }
    ck_assert_int_gt(o->chance_nodes, 0);
    ck_assert_int_gt(o->max_outcomes, 1); /* real chance, not a single line */

    sf_search_config c = config(200000, 1);
    c.evaluator = SF_EVAL_EXTERNAL;
    c.select = SF_SELECT_UCT;
    c.uct_c = 0.25; /* convergence check: see test_search_toy.c */
    c.horizon_turns = 2;
    c.request_feat = 0; /* the callback reads request->state */
    sf_search_result r;
    decide(&c, &truth, 3, 1, horizon_eval, &o->h, &r);
    ck_assert_int_eq(r.n_actions, n);
    for (int k = 0; k < n; k++)
        for (int k = 0; k < n; k++)
            ck_assert_uint_eq(sf_action_code(r.actions[k].action), sf_action_code(acts[k]));
    /* the chosen action is an exact best one, and its Q is within 0.01 */
    ck_assert_double_ge(exact[r.chosen], best - 1e-9);
    ck_assert_double_eq_tol(r.actions[r.chosen].q, best, 0.01);
    ck_assert_double_eq_tol(r.tree_value[0], best, 0.01);
    free(o);
}
END_TEST

/* ----------------------------------------------------- only lethal line */

/* Within the current turn (no END_TURN), can some line starting with `a`
 * win? Card plays of the starter cards are deterministic (checked). */
static int lethal_from(const sf_state *s, int depth) {
    if (sf_engine_is_terminal(s)) {
        sf_outcome o;
        sf_engine_outcome(s, &o);
        return o.won;
    }
    if (depth > 10)
        return 0;
    sf_action acts[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(s, acts, SF_MAX_ACTIONS);
    for (int k = 0; k < n; k++) {
        if (acts[k].kind != SF_ACT_PLAY)
            continue;
        sf_state c = *s;
        uint32_t streams = 0;
        sf_engine_apply(&c, acts[k], &streams);
        if (streams == 0 && lethal_from(&c, depth + 1))
            return 1;
    }
    return 0;
}

START_TEST(only_lethal_line_is_found_at_a_small_budget) {
    /* Scan greedy-played Jaw Worm fights for decisions where exactly one
     * first action has a lethal line this turn and it is Bash (Bash makes
     * the monster Vulnerable, so Bash then Strike kills where Strike then
     * Bash does not). At each such decision, 64 simulations find it. */
    int bash = sf_card_lookup("Bash"), strike = sf_card_lookup("Strike");
    int found = 0;
    for (uint64_t seed = 1; seed < 400 && found < 3; seed++) {
        sf_state st;
        fight(&st, "Jaw Worm", NULL, seed);
        uint64_t rng = seed;
        while (!sf_engine_is_terminal(&st) && found < 3) {
            sf_action acts[SF_MAX_ACTIONS];
            int n = sf_engine_enumerate(&st, acts, SF_MAX_ACTIONS);
            int lethal_first = -1, n_lethal = 0, has_strike = 0;
            for (int k = 0; k < n; k++) {
                if (card_of(&st, acts[k]) == strike)
                    has_strike = 1;
                if (acts[k].kind != SF_ACT_PLAY)
                    continue;
                sf_state c = st;
                uint32_t streams = 0;
                sf_engine_apply(&c, acts[k], &streams);
                if (streams == 0 && lethal_from(&c, 1)) {
                    lethal_first = k;
                    n_lethal++;
                }
            }
            if (n_lethal == 1 && has_strike && card_of(&st, acts[lethal_first]) == bash) {
                sf_search_config c = config(64, 1);
                sf_search_result r;
                decide(&c, &st, seed, 1, NULL, NULL, &r);
                ck_assert_uint_eq(sf_action_code(r.chosen_action),
                                  sf_action_code(acts[lethal_first]));
                ck_assert_int_eq(r.chosen_reason, SF_CHOSEN_PROVEN_WIN);
                found++;
            }
            sf_action a;
            ck_assert_int_eq(sf_search_rollout_action(&st, 8.0, &rng, &a), SF_OK);
            sf_engine_apply(&st, a, NULL);
        }
    }
    ck_assert_int_ge(found, 1);
}
END_TEST

/* ---------------------------------------------------------- PUCT priors */

/* A flat value 0.5 and a prior of 0.9 on one action (by action code), the
 * rest shared evenly: what a network that likes that action would say. */
static int favour_eval(void *ctx, const sf_eval_request *req, sf_eval_answer *ans) {
    const uint32_t *code = ctx;
    ans->has_dist = 0;
    ans->value = 0.5;
    ans->has_priors = 1;
    for (int i = 0; i < req->n_actions; i++)
        ans->priors[i] = sf_action_code(req->actions[i]) == *code
                             ? 0.9f
                             : (req->n_actions > 1 ? 0.1f / (float)(req->n_actions - 1) : 1.0f);
    return SF_OK;
}

START_TEST(one_simulation_follows_the_prior_on_the_engine) {
    /* The first decision of a Jaw Worm fight: whichever action the prior
     * favours, a 1-simulation PUCT search visits it (once; the root's own
     * evaluation is not a simulation) and chooses it. Without the offset
     * under the square root every edge would tie at the parent's Q on the
     * root's first selection, and the first edge in card-priority order
     * would be chosen whatever the prior said. */
    sf_state st;
    fight(&st, "Jaw Worm", NULL, 3);
    sf_action acts[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(&st, acts, SF_MAX_ACTIONS);
    ck_assert_int_ge(n, 3);
    sf_search_config c = config(1, 1);
    c.evaluator = SF_EVAL_EXTERNAL;
    c.select = SF_SELECT_PUCT;
    for (int k = 0; k < n; k++) {
        uint32_t code = sf_action_code(acts[k]);
        sf_search_result r;
        decide(&c, &st, 4, 1, favour_eval, &code, &r);
        ck_assert_int_eq(r.n_actions, n);
        ck_assert_uint_eq(r.simulations, 1);
        ck_assert_uint_eq(sf_action_code(r.chosen_action), code);
        ck_assert_int_eq(r.chosen_reason, SF_CHOSEN_BEST_MEAN);
        for (int a = 0; a < n; a++)
            ck_assert_uint_eq(r.actions[a].visits,
                              sf_action_code(r.actions[a].action) == code ? 1u : 0u);
    }
}
END_TEST

/* ----------------------------------------------------- mixed leaf values */

/* A network that says `value` (or, with dist set, a 21-bin answer of that
 * mean: two-hot) for every leaf, with uniform priors. */
typedef struct flat_net {
    double value;
    int dist;
} flat_net;

static int flat_eval(void *ctx, const sf_eval_request *req, sf_eval_answer *ans) {
    const flat_net *f = ctx;
    ans->has_dist = f->dist;
    ans->value = f->value;
    if (f->dist)
        sf_value_project(f->value, ans->dist);
    ans->has_priors = 1;
    for (int i = 0; i < req->n_actions; i++)
        ans->priors[i] = 1.0f / (float)req->n_actions;
    return SF_OK;
}

START_TEST(a_mixed_leaf_is_one_minus_lambda_network_plus_lambda_rollout) {
    /* The root's own evaluation (root_raw_value, v-hat) of a one-tree
     * search: the rollout evaluator's value z of the root is that of the
     * same search with rollout leaves (the same seed rule); the network
     * says 0.3 (or a 21-bin answer of mean 0.3). Then, at every lambda,
     * v-hat = (1 - lambda) * 0.3 + lambda * z. */
    sf_state st;
    fight(&st, "Gremlin Nob", NULL, 5);
    sf_search_config c = config(1, 1);
    sf_search_result r;
    decide(&c, &st, 7, 1, NULL, NULL, &r);
    double z = r.root_raw_value;
    ck_assert(z > 0.0 && z < 1.0 && fabs(z - 0.3) > 0.05);
    c.evaluator = SF_EVAL_EXTERNAL;
    c.select = SF_SELECT_PUCT;
    for (int dist = 0; dist < 2; dist++) {
        c.distributional = dist;
        flat_net net = {0.3, dist};
        const double lambdas[] = {0.0, 0.25, 0.5, 1.0};
        for (int k = 0; k < 4; k++) {
            c.leaf_mix = lambdas[k];
            decide(&c, &st, 7, 1, flat_eval, &net, &r);
            ck_assert_msg(
                fabs(r.root_raw_value - ((1.0 - lambdas[k]) * 0.3 + lambdas[k] * z)) < 1e-6,
                "lambda %g dist %d: v-hat %.9f, z %.9f", lambdas[k], dist, r.root_raw_value, z);
        }
        /* lambda 1: the network's value is not read (0.3 or 0.9 alike) and
         * the leaves are exactly the rollout's: the same bytes */
        sf_search_config m = c;
        m.simulations = 300;
        m.leaf_mix = 1.0;
        sf_search_result a, b;
        flat_net low = {0.3, dist}, high = {0.9, dist};
        decide(&m, &st, 7, 1, flat_eval, &low, &a);
        decide(&m, &st, 7, 1, flat_eval, &high, &b);
        ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);
        ck_assert_double_eq(a.root_raw_value, z);
    }
    /* a mix outside [0, 1] is refused, naming the field */
    c.leaf_mix = 1.5;
    sf_search *s = NULL;
    sf_err e = {0};
    ck_assert_int_eq(sf_search_create(&c, &s, &e), SF_ECONFIG);
    ck_assert_msg(strstr(e.msg, "leaf_mix must be in [0, 1]"), "%s", e.msg);
}
END_TEST

START_TEST(leaf_rollouts_played_early_or_at_feed_give_the_same_result) {
    /* The resumable API: step, (optionally) play the waiting leaves'
     * rollouts while the batch is "away", feed. Whether and when
     * sf_search_leaf_rollouts() runs changes no byte of the result. */
    sf_state st;
    fight(&st, "Jaw Worm", NULL, 9);
    sf_search_config c = config(200, 2);
    c.evaluator = SF_EVAL_EXTERNAL;
    c.leaf_mix = 0.5;
    flat_net net = {0.6, 0};
    sf_search_result res[2];
    int played_early = 0;
    for (int early = 0; early < 2; early++) {
        sf_search *s = NULL;
        sf_err e = {0};
        ck_assert_int_eq(sf_search_create(&c, &s, &e), SF_OK);
        ck_assert_int_eq(sf_search_begin(s, &st, 11, 0, &e), SF_OK);
        const sf_eval_request *reqs[SF_SEARCH_MAX_TREES];
        for (;;) {
            int n = 0;
            int rc = sf_search_step(s, reqs, SF_SEARCH_MAX_TREES, &n, &e);
            ck_assert_int_ge(rc, 0);
            if (rc == SF_SEARCH_DONE)
                break;
            if (early) {
                played_early += sf_search_leaf_rollouts(s);
                ck_assert_int_eq(sf_search_leaf_rollouts(s), 0); /* once each */
            }
            for (int i = 0; i < n; i++) {
                sf_eval_answer a;
                memset(&a, 0, sizeof a);
                flat_eval(&net, reqs[i], &a);
                ck_assert_int_eq(sf_search_feed(s, reqs[i], &a, &e), SF_OK);
            }
        }
        ck_assert_int_eq(sf_search_result_get(s, &res[early], &e), SF_OK);
        sf_search_destroy(s);
    }
    ck_assert_int_gt(played_early, 100);
    ck_assert_int_eq(memcmp(&res[0], &res[1], sizeof res[0]), 0);
}
END_TEST

/* ------------------------------------------------------------ determinism */

START_TEST(a_cut_off_rollout_scores_below_every_win) {
    /* A rollout stopped at its ply limit has no outcome. The old estimate,
     * P(win) * (the win score now), valued a fresh Jaw Worm fight at full
     * HP at about 0.62: above a real win at low HP (0.5 + 0.45 hp/max).
     * Now: the loss score if it ended here, L, plus p = hp/(hp + monster
     * HP) of the way up to 0.45. */
    sf_state st;
    fight(&st, "Jaw Worm", NULL, 11);
    sf_observation ob;
    sf_engine_observe(&st, &ob);
    double p = (double)ob.hp / (double)(ob.hp + ob.monster_hp_total);
    double loss = 0.2 * (0.75 * 0.0 + 0.25 * 1.0 / 11.0); /* turn 1, nothing removed */
    double want = loss + p * (0.45 - loss);
    ck_assert_double_eq_tol(sf_value_cutoff(&st), want, 1e-12);
    ck_assert_double_lt(sf_value_cutoff(&st), SF_VALUE_WIN_MIN);
    /* a rollout of 3 plies cannot finish the fight: cut off, and counted */
    uint64_t rng = 5;
    int cut = -1;
    sf_state tmp = st;
    double v = sf_search_rollout(&tmp, 32.0, 3, &rng, &cut);
    ck_assert_int_eq(cut, 1);
    ck_assert_double_lt(v, SF_VALUE_WIN_MIN);
    sf_search_config c;
    sf_search_config_default(&c);
    c.simulations = 40;
    c.rollout_max_plies = 3;
    sf_search_result r;
    sf_err e = {0};
    ck_assert_int_eq(sf_search_decide(&c, &st, 1, 0, 1, NULL, NULL, &r, &e), SF_OK);
    ck_assert_uint_gt(r.rollouts_cut_off, 0);
    for (int a = 0; a < r.n_actions; a++)
        ck_assert_double_lt(r.actions[a].q, SF_VALUE_WIN_MIN);
    /* played to the end, nothing is cut off */
    c.rollout_max_plies = 200;
    ck_assert_int_eq(sf_search_decide(&c, &st, 1, 0, 1, NULL, NULL, &r, &e), SF_OK);
    ck_assert_uint_eq(r.rollouts_cut_off, 0);
}
END_TEST

/* Golden result bytes: searches of fixed positions (UCT with rollouts and a
 * Gumbel root) hashed with XXH64. A change meant to leave the search alone
 * must leave the hash equal; one that means to change results updates it
 * and says why. Printed with SF_PRINT_GOLDEN=1. */
#define GOLDEN_SEARCH_HASH 0x1073e9a79192f79eull

START_TEST(golden_search_results) {
    const char *enc[3] = {"Jaw Worm", "Hexaghost", "Gremlin Nob"};
    uint64_t h = 0;
    for (int sel = 0; sel < 2; sel++)
        for (int k = 0; k < 3; k++) {
            sf_state st;
            fight(&st, enc[k], NULL, (uint64_t)(3 + k));
            sf_search_config c;
            sf_search_config_default(&c);
            c.simulations = 300;
            c.trees = 2;
            c.select = sel ? SF_SELECT_GUMBEL : SF_SELECT_AUTO;
            sf_search_result r;
            sf_err e = {0};
            ck_assert_int_eq(sf_search_decide(&c, &st, 9, (uint64_t)k, 2, NULL, NULL, &r, &e),
                             SF_OK);
            h = XXH64(&r, sizeof r, h);
        }
    if (getenv("SF_PRINT_GOLDEN"))
        fprintf(stderr, "golden search hash 0x%016llxull\n", (unsigned long long)h);
    ck_assert_uint_eq(h, GOLDEN_SEARCH_HASH);
}
END_TEST

START_TEST(result_bytes_do_not_depend_on_threads_or_scheduling) {
    sf_state st;
    fight(&st, "Jaw Worm", NULL, 5);
    sf_search_config c = config(4000, 4);
    sf_search_result r;
    decide_on_threads(&c, &st, 11, (const int[]){1, 2, 4}, 3, &r);
    ck_assert_uint_eq(r.simulations, 4000);
    c.trees = 2;
    decide_on_threads(&c, &st, 11, (const int[]){1, 2}, 2, &r);
    c.select = SF_SELECT_GUMBEL;
    c.distributional = 1;
    decide_on_threads(&c, &st, 11, (const int[]){1, 2}, 2, &r);
}
END_TEST

/* -------------------------------------------------------------- honesty */

START_TEST(indistinguishable_truths_give_identical_results) {
    /* Two starter-deck Jaw Worm fights whose visible first positions are
     * equal (same HP roll, same hand in order) but whose hidden draw orders
     * differ: their belief roots are equal bytes and the searches agree. */
    enum { N = 3000 };
    static sf_state truth[N], belief[N];
    int a = -1, b = -1;
    for (int i = 0; i < N && a < 0; i++) {
        fight(&truth[i], "Jaw Worm", NULL, 1000 + (uint64_t)i);
        sf_engine_belief_root(&truth[i], 77, &belief[i]);
        for (int j = 0; j < i; j++) {
            if (memcmp(&belief[i], &belief[j], sizeof(sf_state)) != 0)
                continue;
            /* do the hidden draw orders differ? end the turn in both */
            sf_state x = truth[i], y = truth[j];
            const sf_action end = {SF_ACT_END_TURN, 0, SF_NO_TARGET, 0};
            sf_engine_apply(&x, end, NULL);
            sf_engine_apply(&y, end, NULL);
            sf_observation ox, oy;
            sf_engine_observe(&x, &ox);
            sf_engine_observe(&y, &oy);
            if (!sf_identity_eq(sf_engine_identity(&x), sf_engine_identity(&y))) {
                a = j;
                b = i;
                break;
            }
        }
    }
    ck_assert_int_ge(a, 0);
    ck_assert(memcmp(&truth[a], &truth[b], sizeof(sf_state)) != 0);
    sf_search_config c = config(1500, 2);
    sf_search_result ra, rb;
    decide(&c, &truth[a], 42, 1, NULL, NULL, &ra);
    decide(&c, &truth[b], 42, 1, NULL, NULL, &rb);
    ck_assert_mem_eq(&ra, &rb, sizeof ra);
    /* hidden streams alone differ: still identical */
    sf_state t2 = truth[a];
    for (int k = 0; k < SF_NUM_STREAMS; k++)
        sf_engine_reseed(&t2, k, 0xDEADBEEFull + (uint64_t)k);
    decide(&c, &t2, 42, 1, NULL, NULL, &rb);
    ck_assert_mem_eq(&ra, &rb, sizeof ra);
}
END_TEST

/* ------------------------------------------------- common random numbers */

START_TEST(two_orders_reaching_one_state_face_the_same_draws) {
    /* Defend then Strike and Strike then Defend reach the same position; with
     * different stream histories, ending the turn from either draws the same
     * outcomes for every draw index (search-algorithm §11.6). */
    sf_state st, root;
    fight(&st, "Jaw Worm", "Strike,Defend,Strike,Defend,Bash,Strike,Defend,Strike", 3);
    sf_engine_belief_root(&st, 5, &root);
    sf_action acts[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(&root, acts, SF_MAX_ACTIONS);
    int s_i = -1, d_i = -1;
    for (int k = 0; k < n; k++) {
        if (card_of(&root, acts[k]) == sf_card_lookup("Strike"))
            s_i = k;
        if (card_of(&root, acts[k]) == sf_card_lookup("Defend"))
            d_i = k;
    }
    ck_assert_int_ge(s_i, 0);
    ck_assert_int_ge(d_i, 0);
    /* line A: Strike, then the Defend now in hand; line B: Defend, Strike */
    sf_state a = root, b = root;
    sf_engine_apply(&a, acts[s_i], NULL);
    sf_engine_apply(&b, acts[d_i], NULL);
    sf_action na[SF_MAX_ACTIONS], nb[SF_MAX_ACTIONS];
    int ka = sf_engine_enumerate(&a, na, SF_MAX_ACTIONS);
    int kb = sf_engine_enumerate(&b, nb, SF_MAX_ACTIONS);
    for (int k = 0; k < ka; k++)
        if (card_of(&a, na[k]) == sf_card_lookup("Defend")) {
            sf_engine_apply(&a, na[k], NULL);
            break;
        }
    for (int k = 0; k < kb; k++)
        if (card_of(&b, nb[k]) == sf_card_lookup("Strike")) {
            sf_engine_apply(&b, nb[k], NULL);
            break;
        }
    ck_assert(sf_identity_eq(sf_engine_identity(&a), sf_engine_identity(&b)));
    for (int k = 0; k < SF_NUM_STREAMS; k++)
        sf_engine_reseed(&b, k, 1234567u + (uint64_t)k);
    const sf_action end = {SF_ACT_END_TURN, 0, SF_NO_TARGET, 0};
    int distinct = 0;
    sf_identity first = {0, 0};
    for (uint32_t d = 0; d < 24; d++) {
        sf_state xa = a, xb = b;
        uint32_t ma = 0, mb = 0;
        ck_assert_int_eq(sf_chance_draw(42, &xa, end, d, &ma), SF_OK);
        ck_assert_int_eq(sf_chance_draw(42, &xb, end, d, &mb), SF_OK);
        ck_assert_uint_ne(ma, 0);
        ck_assert_uint_eq(ma, mb);
        sf_identity ia = sf_engine_identity(&xa);
        ck_assert(sf_identity_eq(ia, sf_engine_identity(&xb)));
        sf_observation oa, ob;
        sf_engine_observe(&xa, &oa);
        sf_engine_observe(&xb, &ob);
        ck_assert_int_eq(oa.incoming_damage, ob.incoming_damage); /* same intent roll */
        if (d == 0)
            first = ia;
        else
            distinct += !sf_identity_eq(first, ia);
    }
    ck_assert_int_gt(distinct, 0); /* the draws are worlds, not one outcome */
}
END_TEST

/* ------------------------------------------------------------ allocation */

START_TEST(no_allocation_per_simulation_on_the_engine) {
    sf_state st;
    fight(&st, "Hexaghost", NULL, 2);
    sf_search_config c = config(8000, 2);
    c.distributional = 1;
    sf_search *s = NULL;
    sf_err e = {0};
    ck_assert_int_eq(sf_search_create(&c, &s, &e), SF_OK);
    uint64_t sims;
    long during = allocs_searching(s, &st, (const search_at[]){{9, 0}, {9, 1}, {9, 2}}, 3, &sims);
    ck_assert_uint_eq(sims, 24000);
    ck_assert_int_eq(during, 0);
    sf_search_destroy(s);
}
END_TEST

START_TEST(arena_memory_fits_the_budget) {
    /* The edge pool is sized 24 edges per node: a full 8,000-simulation boss
     * decision never runs out, and the whole search stays within 16 MiB. */
    sf_state st;
    fight(&st, "The Guardian", NULL, 4);
    sf_search_config c = config(8000, 1);
    sf_search *s = NULL;
    sf_err e = {0};
    ck_assert_int_eq(sf_search_create(&c, &s, &e), SF_OK);
    ck_assert_uint_lt(sf_search_memory(s), 16u << 20);
    ck_assert_int_eq(sf_search_begin(s, &st, 1, 0, &e), SF_OK);
    ck_assert_int_eq(sf_search_run(s, 1, NULL, NULL, &e), SF_OK);
    sf_search_result r;
    ck_assert_int_eq(sf_search_result_get(s, &r, &e), SF_OK);
    ck_assert_uint_eq(r.edge_pool_full, 0);
    ck_assert_uint_eq(r.simulations, 8000);
    sf_search_destroy(s);
}
END_TEST

#include "test-search-engine.tests.h" /* SF_TESTS: every test above (tests/meson.build) */
SF_CHECK_MAIN("search-engine", "engine", 300, NULL, NULL)
