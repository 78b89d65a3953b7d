/* eval.c — the built-in evaluators (heuristic rollout, uniform), the rollout
 * policy shared with sf-arena, and validation of external answers. */
#include <math.h>
#include <string.h>

#include "search/internal.h"

/* The rollout policy is the engine's heuristic (engine.h), so that sf-arena's
 * greedy, the search's rollouts and the starts' prefix fights play alike. */
int sf_search_rollout_action(const sf_state *s, double tau, uint64_t *rng, sf_action *out) {
    return sf_engine_heuristic_action(s, tau, rng, out);
}

double sf_value_cutoff(const sf_state *s) {
    sf_observation ob;
    sf_engine_observe(s, &ob);
    sf_outcome o;
    sf_engine_outcome(s, &o);
    double loss = sf_value_loss_score(ob.turn, o.monster_hp_left, o.monster_hp_pool);
    double denom = (double)ob.hp + (double)ob.monster_hp_total;
    double p = denom > 0.0 ? (double)ob.hp / denom : 0.0;
    return loss + p * (SF_VALUE_CUTOFF_MAX - loss);
}

double sf_search_rollout(sf_state *s, double tau, int max_plies, uint64_t *rng, int *cut_off) {
    for (int ply = 0; ply < max_plies && !sf_engine_is_terminal(s); ply++) {
        sf_action a;
        if (sf_search_rollout_action(s, tau, rng, &a) != SF_OK)
            break;
        if (sf_engine_apply(s, a, NULL) != SF_OK)
            break;
    }
    if (sf_engine_is_terminal(s)) {
        sf_outcome o;
        sf_engine_outcome(s, &o);
        if (cut_off)
            *cut_off = 0;
        return sf_value_of_outcome(&o);
    }
    if (cut_off)
        *cut_off = 1;
    return sf_value_cutoff(s);
}

int sf_eval_builtin(const sf_search_config *cfg, const sf_state *leaf, const sf_action *acts, int n,
                    uint64_t seed, sf_eval_answer *out) {
    (void)acts;
    (void)n;
    out->has_priors = 0;
    out->has_dist = 0;
    if (cfg->evaluator == SF_EVAL_UNIFORM) {
        out->value = 0.5;
        return 0;
    }
    int cut_off = 0;
    out->value = sf_eval_rollout(cfg, leaf, seed, &cut_off);
    return cut_off;
}

double sf_eval_rollout(const sf_search_config *cfg, const sf_state *leaf, uint64_t seed,
                       int *cut_off) {
    /* Rollout with streams drawn from (tree seed, leaf identity): the same
     * leaf gets the same rollout in a tree, whatever path reached it. In
     * clairvoyant mode the true streams are kept (that is the point). */
    sf_state tmp = *leaf;
    if (cfg->root != SF_ROOT_CLAIRVOYANT)
        for (int k = 0; k < SF_NUM_STREAMS; k++)
            sf_engine_reseed(&tmp, k, sf_seed_derive(seed, (uint64_t)k, 0, 0));
    uint64_t rng = sf_mix64(seed ^ 0x706F6C6963790000ull);
    return sf_search_rollout(&tmp, cfg->rollout_tau, cfg->rollout_max_plies, &rng, cut_off);
}

int sf_eval_answer_check(const sf_eval_answer *a, int n_actions, sf_err *err) {
    if (a->has_dist) {
        double sum = 0.0;
        for (int i = 0; i < SF_VALUE_BINS; i++) {
            float p = a->dist[i];
            if (!isfinite(p) || p < 0.0f)
                return sf_err_set(err, SF_EINVAL, "eval answer: dist[%d] = %g is not a probability",
                                  i, (double)p);
            sum += p;
        }
        if (fabs(sum - 1.0) > 1e-3)
            return sf_err_set(err, SF_EINVAL, "eval answer: dist sums to %.6f, not 1", sum);
    } else if (!isfinite(a->value) || a->value < 0.0 || a->value > 1.0) {
        return sf_err_set(err, SF_EINVAL, "eval answer: value %g outside [0, 1]", a->value);
    }
    if (a->has_priors) {
        if (n_actions > SF_MAX_ACTIONS)
            return sf_err_set(err, SF_EINVAL, "eval answer: %d actions", n_actions);
        double sum = 0.0;
        for (int i = 0; i < n_actions; i++) {
            float p = a->priors[i];
            if (!isfinite(p) || p < 0.0f)
                return sf_err_set(err, SF_EINVAL,
                                  "eval answer: priors[%d] = %g is not a probability", i,
                                  (double)p);
            sum += p;
        }
        if (n_actions > 0 && !(sum > 0.0))
            return sf_err_set(err, SF_EINVAL, "eval answer: priors sum to 0");
    }
    return SF_OK;
}
