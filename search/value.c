/* value.c — engine outcomes scored by the label contract (label/label.h),
 * CVaR and bands (search.h "Values", search-algorithm §7). */
#include <math.h>

#include "search/search.h"

sf_fight_facts sf_fight_facts_of(const sf_outcome *o) {
    sf_fight_facts f = {.won = o->won,
                        .escaped = o->won && o->escaped,
                        .hp = o->hp,
                        .max_hp = o->max_hp,
                        .potions_left = o->potions_left,
                        .turns = o->turns,
                        .monster_hp_left = o->monster_hp_left,
                        .monster_hp_pool = o->monster_hp_pool};
    return f;
}

double sf_value_of_outcome(const sf_outcome *o) {
    sf_fight_facts f = sf_fight_facts_of(o);
    return sf_value_score(&f);
}

/* j = min{k : sum_{i<=k} p_i >= alpha};
 * CVaR = (sum_{i<j} p_i z_i + (alpha - sum_{i<j} p_i) z_j) / alpha. */
double sf_value_cvar(const double *z, const double *p, int k, double alpha) {
    if (k <= 0)
        return 0.0;
    if (alpha > 1.0)
        alpha = 1.0;
    if (!(alpha > 0.0)) {
        for (int i = 0; i < k; i++)
            if (p[i] > 0.0)
                return z[i];
        return z[k - 1];
    }
    double below = 0.0, acc = 0.0;
    for (int j = 0; j < k; j++) {
        /* A tiny tolerance so alpha = 0.1 with p_0 = 0.1 in binary floating
         * point still ends at atom 0 (the VaR), as exact arithmetic does. */
        if (below + p[j] >= alpha - 1e-12 || j == k - 1) {
            double take = alpha - below;
            if (take < 0.0)
                take = 0.0;
            return (acc + take * z[j]) / alpha;
        }
        below += p[j];
        acc += p[j] * z[j];
    }
    return acc / alpha; /* not reached */
}

double sf_value_cvar21(const float p[SF_VALUE_BINS], double alpha) {
    double z[SF_VALUE_BINS], q[SF_VALUE_BINS];
    for (int i = 0; i < SF_VALUE_BINS; i++) {
        z[i] = sf_value_support(i);
        q[i] = (double)p[i];
    }
    return sf_value_cvar(z, q, SF_VALUE_BINS, alpha);
}

int sf_band_compare(int band_a, double score_a, int band_b, double score_b) {
    if (band_a != band_b)
        return band_a > band_b ? 1 : -1;
    if (score_a > score_b)
        return 1;
    if (score_a < score_b)
        return -1;
    return 0;
}
