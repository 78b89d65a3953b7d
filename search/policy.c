/* policy.c — the selection rules' names, selection formulas: UCT, PUCT and its FPU, the widening
 * cap, and the Gumbel root (completed-Q, v_mix, sigma, pi', sequential halving). Every function is
 * pure and allocation-free; search-algorithm §2-§4 and §10 give the sources and vectors. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "search/search.h"

static const char *const select_names[] = {
    [SF_SELECT_AUTO] = "auto",
    [SF_SELECT_UCT] = "uct",
    [SF_SELECT_PUCT] = "puct",
    [SF_SELECT_GUMBEL] = "gumbel",
};
#define N_SELECT (int)(sizeof select_names / sizeof select_names[0])

const char *sf_search_select_name(int select) {
    return select >= 0 && select < N_SELECT ? select_names[select] : select_names[SF_SELECT_AUTO];
}

int sf_search_select_lookup(const char *name) {
    for (int i = 0; i < N_SELECT; i++)
        if (name && strcmp(name, select_names[i]) == 0)
            return i;
    return SF_ENOTFOUND;
}

double sf_uct_score(double q, uint32_t n, uint32_t n_parent, double c) {
    if (n == 0)
        return INFINITY;
    double lnp = n_parent > 1 ? log((double)n_parent) : 0.0;
    return q + c * sqrt(lnp / (double)n);
}

double sf_uct_c_schedule(uint32_t budget, const sf_uct_c_step *steps, int n, double fallback) {
    for (int i = 0; i < n; i++)
        if (steps[i].below == 0 || budget < steps[i].below)
            return steps[i].c;
    return fallback;
}

double sf_uct_c_for_budget(int budget, int budget_mid, int budget_high, double c_low, double c_mid,
                           double c_high) {
    sf_uct_c_step steps[3];
    int n = 0;
    if (budget_mid > 0)
        steps[n++] = (sf_uct_c_step){(uint32_t)budget_mid, c_low};
    if (budget_high > 0)
        steps[n++] = (sf_uct_c_step){(uint32_t)budget_high, c_mid};
    steps[n++] = (sf_uct_c_step){0, c_high};
    return sf_uct_c_schedule(budget > 0 ? (uint32_t)budget : 0, steps, n, c_high);
}

double sf_puct_score(double q, double prior, uint32_t n, uint32_t n_parent, double c1, double c2,
                     double sqrt_offset) {
    double np = (double)n_parent;
    double c = c1 + log((np + c2 + 1.0) / c2);
    return q + prior * sqrt(np + sqrt_offset) / (1.0 + (double)n) * c;
}

double sf_puct_fpu(double parent_q, double visited_prior, double reduction) {
    double m = visited_prior > 0.0 ? (visited_prior < 1.0 ? visited_prior : 1.0) : 0.0;
    return parent_q - reduction * sqrt(m);
}

uint32_t sf_widen_cap(double C, double alpha, uint32_t v) {
    double k = ceil(C * pow((double)v + 1.0, alpha));
    if (!(k >= 1.0))
        return 1;
    if (k > 4294967295.0)
        return UINT32_MAX;
    return (uint32_t)k;
}

double sf_gumbel_vmix(int n, const double *prior, const uint32_t *visits, const double *q,
                      double v_hat) {
    double s = 0.0, wsum = 0.0, wq = 0.0;
    for (int a = 0; a < n; a++) {
        s += (double)visits[a];
        if (visits[a] > 0) {
            double p = prior[a] > DBL_MIN ? prior[a] : DBL_MIN;
            wsum += p;
            wq += p * q[a];
        }
    }
    if (s == 0.0)
        return v_hat;
    return (v_hat + s * (wq / wsum)) / (s + 1.0);
}

double sf_gumbel_completed_q(int n, const double *prior, const uint32_t *visits, const double *q,
                             const unsigned char *valid, double v_hat, double *out) {
    double s = 0.0, wsum = 0.0, wq = 0.0;
    for (int a = 0; a < n; a++) {
        if (valid && !valid[a])
            continue;
        s += (double)visits[a];
        if (visits[a] > 0) {
            double p = prior[a] > DBL_MIN ? prior[a] : DBL_MIN;
            wsum += p;
            wq += p * q[a];
        }
    }
    double vmix = s == 0.0 ? v_hat : (v_hat + s * (wq / wsum)) / (s + 1.0);
    for (int a = 0; a < n; a++)
        out[a] = (valid && !valid[a]) || visits[a] == 0 ? vmix : q[a];
    return vmix;
}

void sf_gumbel_sigma(int n, const double *completed_q, const uint32_t *visits,
                     const unsigned char *valid, double c_visit, double c_scale, int rescale,
                     double *sigma) {
    uint32_t max_n = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (int a = 0; a < n; a++) {
        if (valid && !valid[a])
            continue;
        if (visits[a] > max_n)
            max_n = visits[a];
        if (completed_q[a] < lo)
            lo = completed_q[a];
        if (completed_q[a] > hi)
            hi = completed_q[a];
    }
    double scale = (c_visit + (double)max_n) * c_scale;
    double span = hi - lo > 1e-8 ? hi - lo : 1e-8;
    for (int a = 0; a < n; a++) {
        if (valid && !valid[a]) {
            sigma[a] = 0.0;
            continue;
        }
        double cq = rescale ? (completed_q[a] - lo) / span : completed_q[a];
        sigma[a] = scale * cq;
    }
}

void sf_gumbel_policy(int n, const double *logit, const double *sigma, const unsigned char *valid,
                      double *pi) {
    double mx = -INFINITY;
    for (int a = 0; a < n; a++)
        if ((!valid || valid[a]) && logit[a] + sigma[a] > mx)
            mx = logit[a] + sigma[a];
    double sum = 0.0;
    for (int a = 0; a < n; a++) {
        if ((valid && !valid[a]) || !isfinite(mx)) {
            pi[a] = 0.0;
            continue;
        }
        pi[a] = exp(logit[a] + sigma[a] - mx);
        sum += pi[a];
    }
    for (int a = 0; a < n; a++)
        pi[a] = sum > 0.0 ? pi[a] / sum : 0.0;
}

int sf_gumbel_select_interior(int n, const double *pi, const uint32_t *visits,
                              const unsigned char *valid) {
    double total = 0.0;
    for (int a = 0; a < n; a++)
        if (!valid || valid[a])
            total += (double)visits[a];
    int best = -1;
    double best_score = -INFINITY;
    for (int a = 0; a < n; a++) {
        if (valid && !valid[a])
            continue;
        double score = pi[a] - (double)visits[a] / (1.0 + total);
        if (best < 0 || score > best_score) {
            best = a;
            best_score = score;
        }
    }
    return best;
}

/* ceil(log2(m)) for m >= 1. */
static int ceil_log2(int m) {
    int l = 0;
    while ((1 << l) < m)
        l++;
    return l;
}

int sf_gumbel_phases(int m, int n_sims, int *k_out, int *extra_out, int cap) {
    if (m < 1 || n_sims < 0)
        return SF_EINVAL;
    int np = 0;
    if (m == 1) { /* search-algorithm §2.2: c_t = t, one action visited n times */
        if (n_sims > 0) {
            if (cap < 1)
                return SF_EFULL;
            k_out[0] = 1;
            extra_out[0] = n_sims;
            np = 1;
        }
        return np;
    }
    int L = ceil_log2(m), k = m;
    long done = 0;
    while (done < n_sims) {
        int extra = n_sims / (L * k);
        if (extra < 1)
            extra = 1;
        if (np >= cap)
            return SF_EFULL;
        k_out[np] = k;
        extra_out[np] = extra;
        np++;
        done += (long)k * extra;
        k = k / 2 > 2 ? k / 2 : 2;
    }
    return np;
}

int sf_gumbel_schedule(int m, int n_sims, uint32_t *out) {
    if (m < 1 || n_sims < 0)
        return SF_EINVAL;
    if (m == 1) {
        for (int t = 0; t < n_sims; t++)
            out[t] = (uint32_t)t;
        return n_sims;
    }
    /* visits[i] for i < k: every survivor of a phase sits at the same level,
     * so one counter per phase suffices: level = visits so far of a survivor. */
    int L = ceil_log2(m), k = m, t = 0;
    uint32_t level = 0;
    while (t < n_sims) {
        int extra = n_sims / (L * k);
        if (extra < 1)
            extra = 1;
        for (int r = 0; r < extra; r++) {
            for (int i = 0; i < k && t < n_sims; i++)
                out[t++] = level;
            level++;
        }
        k = k / 2 > 2 ? k / 2 : 2;
    }
    return n_sims;
}
