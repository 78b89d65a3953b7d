/* value.c — the value convention shared with the label records, the 21-bin
 * projection, CVaR and bands (search.h "Value convention", spec §7). */
#include <math.h>

#include "search/search.h"

double sf_value_score(int won, int hp, int max_hp, int potions_left) {
    if (!won)
        return 0.0;
    double frac = 0.0;
    if (max_hp > 0) {
        int h = hp < 0 ? 0 : hp > max_hp ? max_hp : hp;
        frac = (double)h / (double)max_hp;
    }
    int p = potions_left < 0 ? 0 : potions_left > SF_POTION_SLOTS ? SF_POTION_SLOTS : potions_left;
    return 0.5 + 0.45 * frac + 0.05 * (double)p / (double)SF_POTION_SLOTS;
}

double sf_value_of_outcome(const sf_outcome *o) {
    return sf_value_score(o->won, o->hp, o->max_hp, o->potions_left);
}

double sf_value_support(int i) {
    if (i <= 0 || i >= SF_VALUE_BINS)
        return 0.0;
    return 0.5 + 0.5 * (double)(i - 1) / 19.0;
}

void sf_value_project(double y, float p[SF_VALUE_BINS]) {
    for (int i = 0; i < SF_VALUE_BINS; i++)
        p[i] = 0.0f;
    if (!(y > 0.0)) { /* also NaN */
        p[0] = 1.0f;
        return;
    }
    if (y >= 1.0) {
        p[SF_VALUE_BINS - 1] = 1.0f;
        return;
    }
    if (y < 0.5) { /* between death (z_0 = 0) and z_1 = 0.5 */
        double w = y / 0.5;
        p[0] = (float)(1.0 - w);
        p[1] = (float)w;
        return;
    }
    /* A win: x = 1 + 19*(y-0.5)/0.5 in [1, 20), two-hot over bins 1..20. */
    double x = 1.0 + 19.0 * (y - 0.5) / 0.5;
    int l = (int)floor(x);
    if (l >= SF_VALUE_BINS - 1) {
        p[SF_VALUE_BINS - 1] = 1.0f;
        return;
    }
    double w = x - (double)l;
    p[l] = (float)(1.0 - w);
    p[l + 1] = (float)w;
}

double sf_value_mean(const float p[SF_VALUE_BINS]) {
    double m = 0.0;
    for (int i = 1; i < SF_VALUE_BINS; i++)
        m += (double)p[i] * sf_value_support(i);
    return m;
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
