/* select.c — choosing an edge at a decision node: UCT, PUCT and the Gumbel
 * interior rule over the graph's edge statistics (pure; no engine calls). */
#include <math.h>
#include <string.h>

#include "search/internal.h"

/* Child Q, or rho = (1-l)*Q + l*CVaR_alpha at the root (search-algorithm §7.2: ranking
 * at the root only, never nested). */
static double edge_score(const sf_graph *g, const sf_edge *e, const sf_select_params *p,
                         int at_root) {
    double q = sf_graph_child_q(g, e->child);
    if (at_root && p->cvar_lambda > 0.0 && g->distributional) {
        const float *h = sf_graph_child_dist(g, e->child);
        q = (1.0 - p->cvar_lambda) * q + p->cvar_lambda * sf_value_cvar21(h, p->cvar_alpha);
    }
    return q;
}

int sf_graph_select(const sf_graph *g, uint32_t node, const sf_select_params *p, int at_root) {
    const sf_node *n = &g->nodes[node];
    const sf_edge *e = &g->edges[n->first_edge];
    int k = n->n_edges;
    if (k == 0)
        return -1;
    unsigned char valid[SF_MAX_ACTIONS];
    int n_valid = 0;
    uint32_t n_parent = 0;      /* sum of this node's edge visits (KataGo) */
    double visited_prior = 0.0; /* prior mass of the edges with visits (FPU) */
    for (int i = 0; i < k; i++) {
        valid[i] =
            e[i].child == SF_CHILD_NONE || sf_graph_child_band(g, e[i].child) != SF_BAND_LOSS;
        n_valid += valid[i];
        n_parent += e[i].n;
        if (e[i].n)
            visited_prior += e[i].prior;
    }
    if (n_valid == 0)
        memset(valid, 1, (size_t)k);

    if (p->rule == SF_SELECT_UCT) {
        /* Every child once first, in expansion (card-priority) order. */
        for (int i = 0; i < k; i++)
            if (valid[i] && e[i].n == 0)
                return i;
        int best = -1;
        double best_score = -INFINITY;
        for (int i = 0; i < k; i++) {
            if (!valid[i])
                continue;
            double sc = sf_uct_score(edge_score(g, &e[i], p, at_root), e[i].n, n_parent, p->uct_c);
            if (best < 0 || sc > best_score) {
                best = i;
                best_score = sc;
            }
        }
        return best;
    }
    if (p->rule == SF_SELECT_PUCT || at_root) {
        /* PUCT, and a Gumbel root outside its forced phases (the search
         * forces every Gumbel root visit; this serves any other caller).
         * Unvisited edges are scored with the FPU: the parent's Q less
         * puct_fpu_reduction * sqrt(prior mass already visited), the same
         * at the root. sqrt(n_parent + puct_sqrt_offset) lets the prior
         * rank the children on the node's first selection too (n_parent =
         * 0), rather than a tie that the first edge in expansion order
         * would take. A proven-loss edge that was visited counts in the
         * visited mass: it has been explored. */
        double fpu = sf_puct_fpu(n->q, visited_prior, p->puct_fpu_reduction);
        int best = -1;
        double best_score = -INFINITY;
        for (int i = 0; i < k; i++) {
            if (!valid[i])
                continue;
            double q = e[i].n ? edge_score(g, &e[i], p, at_root) : fpu;
            double sc = sf_puct_score(q, e[i].prior, e[i].n, n_parent, p->puct_c1, p->puct_c2,
                                      p->puct_sqrt_offset);
            if (best < 0 || sc > best_score) {
                best = i;
                best_score = sc;
            }
        }
        return best;
    }
    /* Gumbel interior (search-algorithm §2.6): pi' from this node's prior logits, edge
     * counts, child Q and raw value; argmax pi' - N/(1 + sum N). */
    double prior[SF_MAX_ACTIONS], logit[SF_MAX_ACTIONS], q[SF_MAX_ACTIONS], cq[SF_MAX_ACTIONS];
    double sigma[SF_MAX_ACTIONS], pi[SF_MAX_ACTIONS];
    uint32_t visits[SF_MAX_ACTIONS];
    for (int i = 0; i < k; i++) {
        prior[i] = e[i].prior;
        logit[i] = log(e[i].prior > 1e-30f ? (double)e[i].prior : 1e-30);
        visits[i] = e[i].n;
        q[i] = e[i].n ? sf_graph_child_q(g, e[i].child) : 0.0;
    }
    sf_gumbel_completed_q(k, prior, visits, q, valid, n->u, cq);
    sf_gumbel_sigma(k, cq, visits, valid, p->c_visit, p->c_scale, p->rescale, sigma);
    sf_gumbel_policy(k, logit, sigma, valid, pi);
    return sf_gumbel_select_interior(k, pi, visits, valid);
}
