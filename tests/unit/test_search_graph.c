/* test_search_graph.c — the preallocated graph without the engine: the
 * transposition table, the idempotent node-value recomputation of search-algorithm §5.2
 * (scalar and 21-bin), chance-node plain means, bands, selection reading
 * edge visits only (the DAG test of search-algorithm §11.4), and PUCT's first selection
 * and FPU. Values are hand-computed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/internal.h"
#include "sf_check.h"

typedef struct fixture {
    sf_graph g;
    void *mem;
} fixture;

/* A graph of `nodes` nodes (and as many chance nodes and outcomes) and
 * `edges` edges, distributional or not; fx_free() releases it. */
static fixture fx_new(uint32_t nodes, uint32_t edges, int dist) {
    fixture f;
    size_t b = sf_graph_bytes(nodes, edges, nodes, nodes, dist);
    f.mem = aligned_alloc(64, (b + 63) & ~(size_t)63);
    ck_assert_ptr_nonnull(f.mem);
    sf_graph_init(&f.g, f.mem, nodes, edges, nodes, nodes, dist);
    return f;
}

static void fx_free(fixture *f) {
    free(f->mem);
}

static sf_identity ident(uint64_t i) {
    sf_identity id = {sf_mix64(i), sf_mix64(i ^ 0xABCDEF)};
    return id;
}

/* A node with raw value u, evaluated, not expanded. */
static uint32_t leaf(sf_graph *g, uint64_t key, double u) {
    int created = 0;
    int32_t n = sf_graph_node(g, ident(key), &created);
    ck_assert_int_ge(n, 0);
    ck_assert_int_eq(created, 1);
    g->nodes[n].u = (float)u;
    g->nodes[n].flags = SF_NODE_EVALUATED;
    if (g->distributional)
        sf_value_project(u, &g->node_udist[(size_t)n * SF_VALUE_BINS]);
    sf_graph_recompute_node(g, (uint32_t)n);
    return (uint32_t)n;
}

/* Give node `n` k edges (actions PLAY index i), children none. */
static void expand(sf_graph *g, uint32_t n, int k) {
    int64_t first = sf_graph_edges(g, (uint32_t)k);
    ck_assert_int_ge(first, 0);
    for (int i = 0; i < k; i++) {
        sf_edge *e = &g->edges[first + i];
        e->action = (sf_action){SF_ACT_PLAY, (uint8_t)i, SF_NO_TARGET, 0};
        e->prior = (float)(1.0 / k);
        e->n = 0;
        e->child = SF_CHILD_NONE;
    }
    g->nodes[n].first_edge = (uint32_t)first;
    g->nodes[n].n_edges = (uint16_t)k;
    g->nodes[n].flags |= SF_NODE_EXPANDED;
}

static sf_edge *edge(sf_graph *g, uint32_t n, int i) {
    return &g->edges[g->nodes[n].first_edge + (uint32_t)i];
}

/* A node with raw value u, evaluated and expanded into k edges. */
static uint32_t expanded(sf_graph *g, uint64_t key, double u, int k) {
    uint32_t n = leaf(g, key, u);
    expand(g, n, k);
    return n;
}

/* Edge i of node n leads to `child` and was taken `visits` times. */
static void to_child(sf_graph *g, uint32_t n, int i, int32_t child, uint32_t visits) {
    edge(g, n, i)->child = child;
    edge(g, n, i)->n = visits;
}

/* Node n's edges 0..k-1 lead to children c[i], taken visits[i] times;
 * n's value recomputed. */
static void visit_children(sf_graph *g, uint32_t n, int k, const uint32_t *c,
                           const uint32_t *visits) {
    for (int i = 0; i < k; i++)
        to_child(g, n, i, (int32_t)c[i], visits[i]);
    sf_graph_recompute_node(g, n);
}

/* The priors of node n's edges, in edge order. */
static void set_priors(sf_graph *g, uint32_t n, const float *priors) {
    for (int i = 0; i < g->nodes[n].n_edges; i++)
        edge(g, n, i)->prior = priors[i];
}

/* A root (key 1, U = 0.5) expanded into 3 edges with these priors. */
static uint32_t root_with_priors(sf_graph *g, const float priors[3]) {
    uint32_t r = expanded(g, 1, 0.5, 3);
    set_priors(g, r, priors);
    return r;
}

START_TEST(transposition_table_merges_equal_identities) {
    fixture f = fx_new(8, 16, 0);
    int created = -1;
    int32_t a = sf_graph_node(&f.g, ident(1), &created);
    ck_assert_int_eq(a, 0);
    ck_assert_int_eq(created, 1);
    int32_t b = sf_graph_node(&f.g, ident(2), &created);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(sf_graph_node(&f.g, ident(1), &created), 0);
    ck_assert_int_eq(created, 0);
    ck_assert_int_eq(sf_graph_find(&f.g, ident(2)), 1);
    ck_assert_int_eq(sf_graph_find(&f.g, ident(3)), -1);
    /* identities equal in one half only are different positions */
    sf_identity half = ident(1);
    half.hi ^= 1;
    ck_assert_int_eq(sf_graph_find(&f.g, half), -1);
    ck_assert_uint_eq(f.g.node_creations, 2);
    ck_assert_uint_eq(f.g.merges, 1);
    /* capacity: 8 nodes, then -1 */
    for (uint64_t i = 3; i <= 8; i++)
        ck_assert_int_ge(sf_graph_node(&f.g, ident(i), NULL), 0);
    ck_assert_int_eq(sf_graph_node(&f.g, ident(99), NULL), -1);
    /* still found after the table filled */
    for (uint64_t i = 1; i <= 8; i++)
        ck_assert_int_eq(sf_graph_find(&f.g, ident(i)), (int)i - 1);
    sf_graph_clear(&f.g);
    ck_assert_int_eq(sf_graph_find(&f.g, ident(1)), -1);
    fx_free(&f);
}
END_TEST

START_TEST(edge_pool_reports_full) {
    fixture f = fx_new(4, 10, 0);
    ck_assert_int_eq(sf_graph_edges(&f.g, 6), 0);
    ck_assert_int_eq(sf_graph_edges(&f.g, 4), 6);
    ck_assert_int_eq(sf_graph_edges(&f.g, 1), -1);
    fx_free(&f);
}
END_TEST

START_TEST(node_value_is_recomputed_from_edges) {
    /* search-algorithm §5.2: Q(n) = (U + sum N(n,a) Q(child)) / (1 + sum N(n,a)).
     * U = 0.5, children 0.8 (3 visits) and 0.2 (1 visit):
     * Q = (0.5 + 2.4 + 0.2) / 5 = 0.62, N = 5. */
    fixture f = fx_new(8, 16, 0);
    uint32_t r = expanded(&f.g, 1, 0.5, 3);
    uint32_t a = leaf(&f.g, 2, 0.8), b = leaf(&f.g, 3, 0.2);
    visit_children(&f.g, r, 2, (const uint32_t[]){a, b}, (const uint32_t[]){3, 1});
    ck_assert_uint_eq(f.g.nodes[r].n, 5);
    ck_assert_double_eq_tol(f.g.nodes[r].q, 0.62, 1e-7);
    /* idempotent: recomputing again changes nothing */
    sf_graph_recompute_node(&f.g, r);
    ck_assert_double_eq_tol(f.g.nodes[r].q, 0.62, 1e-7);
    ck_assert_uint_eq(f.g.nodes[r].n, 5);
    /* a child's value changes (visited through another parent): the parent
     * picks it up on its next recomputation, no matter how it changed */
    f.g.nodes[a].q = 0.6;
    sf_graph_recompute_node(&f.g, r);
    ck_assert_double_eq_tol(f.g.nodes[r].q, (0.5 + 1.8 + 0.2) / 5.0, 1e-7);
    fx_free(&f);
}
END_TEST

START_TEST(chance_value_is_the_plain_mean) {
    /* Q(x) = sum n(o) Q(o) / sum n(o): outcomes 0.9 x2, 0.3 x1, 0.6 x1 ->
     * (1.8 + 0.3 + 0.6) / 4 = 0.675 */
    fixture f = fx_new(8, 16, 0);
    uint32_t o1 = leaf(&f.g, 1, 0.9), o2 = leaf(&f.g, 2, 0.3), o3 = leaf(&f.g, 3, 0.6);
    int32_t x = sf_graph_chance(&f.g, 77, 1);
    ck_assert_int_eq(x, 0);
    int32_t e1 = sf_graph_outcome(&f.g, 0, (int32_t)o1, 0);
    int32_t e2 = sf_graph_outcome(&f.g, 0, (int32_t)o2, 1);
    int32_t e3 = sf_graph_outcome(&f.g, 0, (int32_t)o3, 4);
    f.g.outcomes[e1].n = 2;
    f.g.outcomes[e2].n = 1;
    f.g.outcomes[e3].n = 1;
    sf_graph_recompute_chance(&f.g, 0);
    ck_assert_double_eq_tol(f.g.chance[0].q, 0.675, 1e-7);
    ck_assert_uint_eq(f.g.chance[0].n, 4);
    ck_assert_uint_eq(f.g.chance[0].n_outcomes, 3);
    /* the list keeps draw order */
    ck_assert_int_eq(f.g.chance[0].first, e1);
    ck_assert_int_eq(f.g.outcomes[e1].next, e2);
    ck_assert_int_eq(f.g.outcomes[e2].next, e3);
    ck_assert_int_eq(f.g.outcomes[e3].next, -1);
    /* a parent edge into the chance node reads its mean */
    uint32_t r = expanded(&f.g, 9, 0.1, 1);
    to_child(&f.g, r, 0, sf_child_chance(0), 4);
    sf_graph_recompute_node(&f.g, r);
    ck_assert_double_eq_tol(f.g.nodes[r].q, (0.1 + 4 * 0.675) / 5.0, 1e-7);
    /* a chance node is never proven, even if every drawn outcome is a win */
    ck_assert_int_eq(sf_graph_child_band(&f.g, sf_child_chance(0)), SF_BAND_UNCERTAIN);
    fx_free(&f);
}
END_TEST

START_TEST(distribution_is_the_same_mixture) {
    /* H(n) = (H_U + sum N H(child)) / N with projected values: U = 0 (death,
     * bin 0), child A = 1.0 (bin 20) x1, child B = 0.75 (bins 12, 13 half
     * each: 0.75 = 0.5 + 7.5/30) x2. N = 4: bin0 1/4, bin20 1/4, bin12 1/4,
     * bin13 1/4. */
    fixture f = fx_new(8, 16, 1);
    uint32_t r = expanded(&f.g, 1, 0.0, 2);
    uint32_t a = leaf(&f.g, 2, 1.0), b = leaf(&f.g, 3, 0.75);
    visit_children(&f.g, r, 2, (const uint32_t[]){a, b}, (const uint32_t[]){1, 2});
    const float *h = &f.g.node_dist[(size_t)r * SF_VALUE_BINS];
    ck_assert_float_eq_tol(h[0], 0.25f, 1e-6f);
    ck_assert_float_eq_tol(h[20], 0.25f, 1e-6f);
    ck_assert_float_eq_tol(h[12], 0.25f, 1e-6f);
    ck_assert_float_eq_tol(h[13], 0.25f, 1e-6f);
    double sum = 0;
    for (int i = 0; i < SF_VALUE_BINS; i++)
        sum += h[i];
    ck_assert_double_eq_tol(sum, 1.0, 1e-6);
    /* the scalar and the histogram agree: Q = E[H] = (0 + 1 + 1.5) / 4 */
    ck_assert_double_eq_tol(f.g.nodes[r].q, 0.625, 1e-7);
    ck_assert_double_eq_tol(sf_value_mean(h), 0.625, 1e-6);
    /* and through a chance node */
    int32_t x = sf_graph_chance(&f.g, 5, 0);
    int32_t o1 = sf_graph_outcome(&f.g, (uint32_t)x, (int32_t)a, 0);
    int32_t o2 = sf_graph_outcome(&f.g, (uint32_t)x, (int32_t)b, 1);
    f.g.outcomes[o1].n = 3;
    f.g.outcomes[o2].n = 1;
    sf_graph_recompute_chance(&f.g, (uint32_t)x);
    const float *hx = sf_graph_child_dist(&f.g, sf_child_chance((uint32_t)x));
    ck_assert_float_eq_tol(hx[20], 0.75f, 1e-6f);
    ck_assert_float_eq_tol(hx[12], 0.125f, 1e-6f);
    ck_assert_float_eq_tol(hx[13], 0.125f, 1e-6f);
    ck_assert_double_eq_tol(f.g.chance[x].q, 0.9375, 1e-7);
    fx_free(&f);
}
END_TEST

START_TEST(bands_propagate_through_decisions) {
    fixture f = fx_new(16, 32, 0);
    uint32_t win = leaf(&f.g, 1, 0.9), lose1 = leaf(&f.g, 2, 0.0), lose2 = leaf(&f.g, 3, 0.0);
    f.g.nodes[win].flags |= SF_NODE_TERMINAL;
    f.g.nodes[win].band = SF_BAND_WIN;
    f.g.nodes[lose1].flags |= SF_NODE_TERMINAL;
    f.g.nodes[lose1].band = SF_BAND_LOSS;
    f.g.nodes[lose2].flags |= SF_NODE_TERMINAL;
    f.g.nodes[lose2].band = SF_BAND_LOSS;
    /* one winning line proves a win */
    uint32_t p = expanded(&f.g, 10, 0.5, 2);
    visit_children(&f.g, p, 2, (const uint32_t[]){lose1, win}, (const uint32_t[]){1, 1});
    ck_assert_int_eq(f.g.nodes[p].band, SF_BAND_WIN);
    /* every action lost proves a loss ... */
    uint32_t q = expanded(&f.g, 11, 0.5, 2);
    visit_children(&f.g, q, 2, (const uint32_t[]){lose1, lose2}, (const uint32_t[]){1, 1});
    ck_assert_int_eq(f.g.nodes[q].band, SF_BAND_LOSS);
    /* ... but an untried action leaves it uncertain */
    uint32_t u = expanded(&f.g, 12, 0.5, 3);
    visit_children(&f.g, u, 2, (const uint32_t[]){lose1, lose2}, (const uint32_t[]){1, 1});
    ck_assert_int_eq(f.g.nodes[u].band, SF_BAND_UNCERTAIN);
    fx_free(&f);
}
END_TEST

static sf_select_params uct_params(double c) {
    sf_select_params p;
    memset(&p, 0, sizeof p);
    p.rule = SF_SELECT_UCT;
    p.uct_c = c;
    p.puct_c1 = 1.25;
    p.puct_c2 = 19652.0;
    p.c_visit = 50.0;
    p.c_scale = 1.0;
    return p;
}

START_TEST(uct_tries_every_edge_first_in_expansion_order) {
    fixture f = fx_new(8, 16, 0);
    uint32_t r = expanded(&f.g, 1, 0.5, 3);
    sf_select_params p = uct_params(1.41);
    ck_assert_int_eq(sf_graph_select(&f.g, r, &p, 0), 0);
    uint32_t a = leaf(&f.g, 2, 0.9);
    to_child(&f.g, r, 0, (int32_t)a, 5);
    /* edge 0 looks great, but edges 1 and 2 are untried: 1 comes next */
    ck_assert_int_eq(sf_graph_select(&f.g, r, &p, 0), 1);
    fx_free(&f);
}
END_TEST

START_TEST(selection_skips_proven_losses_unless_all_lost) {
    fixture f = fx_new(8, 16, 0);
    uint32_t r = expanded(&f.g, 1, 0.5, 2);
    uint32_t lost = leaf(&f.g, 2, 0.0), meh = leaf(&f.g, 3, 0.1);
    f.g.nodes[lost].flags |= SF_NODE_TERMINAL;
    f.g.nodes[lost].band = SF_BAND_LOSS;
    /* give the lost child a misleadingly high value: bands still win */
    f.g.nodes[lost].q = 0.99;
    to_child(&f.g, r, 0, (int32_t)lost, 1);
    to_child(&f.g, r, 1, (int32_t)meh, 50);
    sf_select_params p = uct_params(0.0);
    ck_assert_int_eq(sf_graph_select(&f.g, r, &p, 0), 1);
    p.rule = SF_SELECT_PUCT;
    ck_assert_int_eq(sf_graph_select(&f.g, r, &p, 0), 1);
    /* all lost: fall back to every edge */
    f.g.nodes[meh].band = SF_BAND_LOSS;
    p.rule = SF_SELECT_UCT;
    ck_assert_int_eq(sf_graph_select(&f.g, r, &p, 0), 0);
    fx_free(&f);
}
END_TEST

/* search-algorithm §11.4: parent P has edges to A and B. A gets 100 visits from another
 * parent P2 (its own N grows to 101) while its value stays: P's choice must
 * not change, for each rule. */
START_TEST(dag_visits_from_another_parent_do_not_change_the_choice) {
    const int rules[3] = {SF_SELECT_UCT, SF_SELECT_PUCT, SF_SELECT_GUMBEL};
    for (int ri = 0; ri < 3; ri++) {
        fixture f = fx_new(16, 32, 0);
        uint32_t P = expanded(&f.g, 1, 0.5, 2);
        uint32_t A = leaf(&f.g, 2, 0.55), B = leaf(&f.g, 3, 0.6);
        /* A is expanded with one edge to a leaf of the same value 0.55 */
        expand(&f.g, A, 1);
        uint32_t A1 = leaf(&f.g, 4, 0.55);
        visit_children(&f.g, A, 1, (const uint32_t[]){A1}, (const uint32_t[]){2});
        visit_children(&f.g, P, 2, (const uint32_t[]){A, B}, (const uint32_t[]){3, 4});
        sf_select_params p = uct_params(1.41);
        p.rule = rules[ri];
        int before[6];
        /* the choice as edge counts grow by the rule's own picks */
        for (int s = 0; s < 6; s++) {
            before[s] = sf_graph_select(&f.g, P, &p, 0);
            edge(&f.g, P, before[s])->n++;
        }
        for (int s = 0; s < 6; s++)
            edge(&f.g, P, before[s])->n--;
        /* another parent P2 visits A 100 times */
        uint32_t P2 = expanded(&f.g, 5, 0.5, 1);
        to_child(&f.g, P2, 0, (int32_t)A, 100);
        edge(&f.g, A, 0)->n += 100;
        sf_graph_recompute_node(&f.g, A);
        ck_assert_uint_eq(f.g.nodes[A].n, 103);
        ck_assert_double_eq_tol(f.g.nodes[A].q, 0.55, 1e-6);
        for (int s = 0; s < 6; s++) {
            int now = sf_graph_select(&f.g, P, &p, 0);
            ck_assert_int_eq(now, before[s]);
            edge(&f.g, P, now)->n++;
        }
        fx_free(&f);
    }
}
END_TEST

START_TEST(puct_prior_decides_the_first_selection) {
    /* A fresh node (no edge visited, parent Q = U = 0.5), priors 0.2, 0.7,
     * 0.1. With the offset every edge scores 0.5 + P*sqrt(0.01)*1.2500509,
     * so the prior decides: edge 1. Without it all three score 0.5 and the
     * first edge would take the tie. The same at the root, where a Gumbel
     * root without forced visits uses this rule too. */
    fixture f = fx_new(8, 16, 0);
    uint32_t r = root_with_priors(&f.g, (const float[]){0.2f, 0.7f, 0.1f});
    sf_select_params p = uct_params(1.41);
    p.rule = SF_SELECT_PUCT;
    p.puct_sqrt_offset = 0.01;
    p.puct_fpu_reduction = 0.1;
    ck_assert_int_eq(sf_graph_select(&f.g, r, &p, 0), 1);
    ck_assert_int_eq(sf_graph_select(&f.g, r, &p, 1), 1);
    p.rule = SF_SELECT_GUMBEL;
    ck_assert_int_eq(sf_graph_select(&f.g, r, &p, 1), 1);
    fx_free(&f);
}
END_TEST

START_TEST(puct_fpu_lowers_unvisited_by_the_visited_prior_mass) {
    /* Priors 0.4, 0.5, 0.1; edge 0 visited once, its child at 0.5; U = 0.5,
     * so the parent Q = (0.5 + 1*0.5)/2 = 0.5. Np = 1:
     * s = sqrt(1.01)*(1.25 + ln(19654/19652)) = 1.2563367.
     *   edge 0 (visited): 0.5 + 0.4*s/2                  = 0.7512673
     *   edge 1 (unvisited): 0.5 - R*sqrt(0.4) + 0.5*s    = 1.1281684 - 0.6324555 R
     *   edge 2 (unvisited): 0.5 - R*sqrt(0.4) + 0.1*s    (always below edge 1)
     * Edge 1 wins while R < 0.3769010/0.6324555 = 0.5959. R = 0.55: edge 1
     * (0.7803178); R = 0.65: edge 0 (0.7170723 < 0.7512673). Either answer
     * would differ if the mass were the unvisited prior (sqrt(0.6): edge 0
     * at R = 0.55) or not square-rooted (0.4 R: edge 1 at R = 0.65). */
    fixture f = fx_new(8, 16, 0);
    uint32_t r = root_with_priors(&f.g, (const float[]){0.4f, 0.5f, 0.1f});
    uint32_t a = leaf(&f.g, 2, 0.5);
    visit_children(&f.g, r, 1, (const uint32_t[]){a}, (const uint32_t[]){1});
    ck_assert_double_eq_tol(f.g.nodes[r].q, 0.5, 1e-12);
    sf_select_params p = uct_params(1.41);
    p.rule = SF_SELECT_PUCT;
    p.puct_sqrt_offset = 0.01;
    p.puct_fpu_reduction = 0.0; /* FPU = parent Q: the unvisited edge 1 */
    ck_assert_int_eq(sf_graph_select(&f.g, r, &p, 0), 1);
    p.puct_fpu_reduction = 0.55;
    ck_assert_int_eq(sf_graph_select(&f.g, r, &p, 0), 1);
    p.puct_fpu_reduction = 0.65;
    ck_assert_int_eq(sf_graph_select(&f.g, r, &p, 0), 0);
    ck_assert_int_eq(sf_graph_select(&f.g, r, &p, 1), 0); /* the root alike */
    fx_free(&f);
}
END_TEST

START_TEST(root_ranking_uses_cvar_when_asked) {
    /* Two root edges with equal means 0.5: A = half death / half full HP
     * (bins 0 and 20), B = always 0.5 (bin 1). With lambda = 1 and alpha =
     * 0.25, CVaR(A) = 0 and CVaR(B) = 0.5: a zero-c UCT at the root picks B;
     * without CVaR it picks A (the first of equals). */
    fixture f = fx_new(8, 16, 1);
    uint32_t r = expanded(&f.g, 1, 0.5, 2);
    uint32_t a = leaf(&f.g, 2, 0.0), b = leaf(&f.g, 3, 0.625);
    float *ha = &f.g.node_dist[(size_t)a * SF_VALUE_BINS];
    memset(ha, 0, sizeof(float) * SF_VALUE_BINS);
    ha[0] = 0.5f;
    ha[20] = 0.5f;
    f.g.nodes[a].q = 0.5; /* E = 0.5 */
    f.g.nodes[b].q = 0.5;
    sf_value_project(0.5, &f.g.node_dist[(size_t)b * SF_VALUE_BINS]);
    to_child(&f.g, r, 0, (int32_t)a, 10);
    to_child(&f.g, r, 1, (int32_t)b, 10);
    sf_select_params p = uct_params(0.0);
    ck_assert_int_eq(sf_graph_select(&f.g, r, &p, 1), 0);
    p.cvar_lambda = 1.0;
    p.cvar_alpha = 0.25;
    ck_assert_int_eq(sf_graph_select(&f.g, r, &p, 1), 1);
    /* only at the root */
    ck_assert_int_eq(sf_graph_select(&f.g, r, &p, 0), 0);
    fx_free(&f);
}
END_TEST

#include "test-search-graph.tests.h" /* SF_TESTS: every test above (tests/meson.build) */
SF_CHECK_MAIN("search-graph", "graph", 0, NULL, NULL)
