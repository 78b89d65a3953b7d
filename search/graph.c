/* graph.c — the preallocated search graph: decision nodes, edges, chance
 * nodes and outcomes linked by index, the transposition table keyed by
 * sf_identity, and the idempotent node-value recomputation of search-algorithm §5.2.
 * Nothing here allocates or calls the engine. */
#include <string.h>

#include "search/internal.h"

#define ALIGN 64

static size_t align_up(size_t x) {
    return (x + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

static uint32_t tt_capacity(uint32_t node_cap) {
    uint32_t c = 16;
    while (c < 2u * node_cap && c < (1u << 31))
        c <<= 1;
    return c;
}

size_t sf_graph_bytes(uint32_t node_cap, uint32_t edge_cap, uint32_t chance_cap,
                      uint32_t outcome_cap, int distributional) {
    size_t b = 0;
    b += align_up((size_t)node_cap * sizeof(sf_node));
    b += align_up((size_t)edge_cap * sizeof(sf_edge));
    b += align_up((size_t)chance_cap * sizeof(sf_chance));
    b += align_up((size_t)outcome_cap * sizeof(sf_chance_edge));
    b += align_up((size_t)tt_capacity(node_cap) * sizeof(sf_tt_slot));
    if (distributional) {
        b += 2 * align_up((size_t)node_cap * SF_VALUE_BINS * sizeof(float));
        b += align_up((size_t)chance_cap * SF_VALUE_BINS * sizeof(float));
    }
    return b;
}

void sf_graph_init(sf_graph *g, void *mem, uint32_t node_cap, uint32_t edge_cap,
                   uint32_t chance_cap, uint32_t outcome_cap, int distributional) {
    memset(g, 0, sizeof *g);
    unsigned char *p = mem;
    g->node_cap = node_cap;
    g->edge_cap = edge_cap;
    g->chance_cap = chance_cap;
    g->outcome_cap = outcome_cap;
    g->tt_cap = tt_capacity(node_cap);
    g->distributional = distributional;
    g->nodes = (sf_node *)p;
    p += align_up((size_t)node_cap * sizeof(sf_node));
    g->edges = (sf_edge *)p;
    p += align_up((size_t)edge_cap * sizeof(sf_edge));
    g->chance = (sf_chance *)p;
    p += align_up((size_t)chance_cap * sizeof(sf_chance));
    g->outcomes = (sf_chance_edge *)p;
    p += align_up((size_t)outcome_cap * sizeof(sf_chance_edge));
    g->tt = (sf_tt_slot *)p;
    p += align_up((size_t)g->tt_cap * sizeof(sf_tt_slot));
    if (distributional) {
        g->node_dist = (float *)p;
        p += align_up((size_t)node_cap * SF_VALUE_BINS * sizeof(float));
        g->node_udist = (float *)p;
        p += align_up((size_t)node_cap * SF_VALUE_BINS * sizeof(float));
        g->chance_dist = (float *)p;
    }
    sf_graph_clear(g);
}

void sf_graph_clear(sf_graph *g) {
    g->n_nodes = g->n_edges = g->n_chance = g->n_outcomes = 0;
    g->node_creations = g->merges = 0;
    for (uint32_t i = 0; i < g->tt_cap; i++)
        g->tt[i].node = -1;
}

/* XXH3-128 output is already uniform; mixing both halves keeps the table
 * sound even if a future identity is weaker in its low bits. */
static uint32_t tt_home(const sf_graph *g, sf_identity id) {
    return (uint32_t)(sf_mix64(id.lo ^ (id.hi * 0x9E3779B97F4A7C15ull)) & (g->tt_cap - 1));
}

int32_t sf_graph_find(const sf_graph *g, sf_identity id) {
    uint32_t mask = g->tt_cap - 1;
    for (uint32_t i = tt_home(g, id);; i = (i + 1) & mask) {
        const sf_tt_slot *s = &g->tt[i];
        if (s->node < 0)
            return -1;
        if (sf_identity_eq(s->id, id))
            return s->node;
    }
}

/* A new entry of a pool (`size` bytes an entry at `base`, *n of `cap` in
 * use), zeroed: its index, or -1 when the pool is full. */
static int32_t pool_new(void *base, size_t size, uint32_t *n, uint32_t cap) {
    if (*n >= cap)
        return -1;
    memset((char *)base + (size_t)*n * size, 0, size);
    return (int32_t)(*n)++;
}

int32_t sf_graph_node(sf_graph *g, sf_identity id, int *created) {
    uint32_t mask = g->tt_cap - 1;
    uint32_t i = tt_home(g, id);
    for (;; i = (i + 1) & mask) {
        sf_tt_slot *s = &g->tt[i];
        if (s->node < 0)
            break;
        if (sf_identity_eq(s->id, id)) {
            g->merges++;
            if (created)
                *created = 0;
            return s->node;
        }
    }
    int32_t idx = pool_new(g->nodes, sizeof *g->nodes, &g->n_nodes, g->node_cap);
    if (idx < 0)
        return -1;
    g->nodes[idx].id = id;
    g->nodes[idx].band = SF_BAND_UNCERTAIN;
    g->tt[i].id = id;
    g->tt[i].node = idx;
    g->node_creations++;
    if (created)
        *created = 1;
    return idx;
}

int64_t sf_graph_edges(sf_graph *g, uint32_t k) {
    if (k > g->edge_cap - g->n_edges)
        return -1;
    int64_t first = g->n_edges;
    g->n_edges += k;
    return first;
}

int32_t sf_graph_chance(sf_graph *g, uint64_t key, int end_turn) {
    int32_t idx = pool_new(g->chance, sizeof *g->chance, &g->n_chance, g->chance_cap);
    if (idx < 0)
        return -1;
    sf_chance *x = &g->chance[idx];
    x->key = key;
    x->first = -1;
    x->last = -1;
    x->end_turn = (uint8_t)(end_turn != 0);
    if (g->distributional)
        memset(&g->chance_dist[(size_t)idx * SF_VALUE_BINS], 0, SF_VALUE_BINS * sizeof(float));
    return idx;
}

int32_t sf_graph_outcome(sf_graph *g, uint32_t x, int32_t child, uint32_t draw) {
    if (g->n_outcomes >= g->outcome_cap)
        return -1;
    int32_t idx = (int32_t)g->n_outcomes++;
    sf_chance_edge *o = &g->outcomes[idx];
    o->child = child;
    o->n = 0;
    o->m = 0;
    o->draw = draw;
    /* Append at the tail so outcomes stay in draw order (determinism of the
     * tie-breaks in the tracking rule). */
    o->next = -1;
    sf_chance *c = &g->chance[x];
    if (c->first < 0)
        c->first = idx;
    else
        g->outcomes[c->last].next = idx;
    c->last = idx;
    c->n_outcomes++;
    return idx;
}

double sf_graph_child_q(const sf_graph *g, int32_t child) {
    if (child >= 0)
        return g->nodes[child].q;
    if (sf_child_is_chance(child))
        return g->chance[sf_child_chance_index(child)].q;
    return 0.0;
}

int sf_graph_child_band(const sf_graph *g, int32_t child) {
    if (child >= 0)
        return g->nodes[child].band;
    return SF_BAND_UNCERTAIN; /* chance nodes are never proven (search-algorithm §7.3) */
}

const float *sf_graph_child_dist(const sf_graph *g, int32_t child) {
    if (!g->distributional)
        return NULL;
    if (child >= 0)
        return &g->node_dist[(size_t)child * SF_VALUE_BINS];
    if (sf_child_is_chance(child))
        return &g->chance_dist[(size_t)sf_child_chance_index(child) * SF_VALUE_BINS];
    return NULL;
}

void sf_graph_recompute_node(sf_graph *g, uint32_t idx) {
    sf_node *n = &g->nodes[idx];
    if (!(n->flags & SF_NODE_EXPANDED)) {
        /* Terminal, horizon or unexpanded leaf: its value is U alone. */
        n->n = (n->flags & SF_NODE_EVALUATED) ? 1 : 0;
        n->q = n->u;
        if (g->distributional)
            memcpy(&g->node_dist[(size_t)idx * SF_VALUE_BINS],
                   &g->node_udist[(size_t)idx * SF_VALUE_BINS], SF_VALUE_BINS * sizeof(float));
        return;
    }
    uint64_t total = 1;
    double sum = n->u;
    int any_win = 0, all_lost = 1;
    const sf_edge *e = &g->edges[n->first_edge];
    for (uint32_t i = 0; i < n->n_edges; i++) {
        int band =
            e[i].child == SF_CHILD_NONE ? SF_BAND_UNCERTAIN : sf_graph_child_band(g, e[i].child);
        any_win |= band == SF_BAND_WIN;
        all_lost &= band == SF_BAND_LOSS;
        if (e[i].n == 0)
            continue;
        total += e[i].n;
        sum += (double)e[i].n * sf_graph_child_q(g, e[i].child);
    }
    n->n = (uint32_t)total;
    n->q = sum / (double)total;
    n->band = any_win                        ? SF_BAND_WIN
              : (all_lost && n->n_edges > 0) ? SF_BAND_LOSS
                                             : SF_BAND_UNCERTAIN;
    if (g->distributional) {
        double h[SF_VALUE_BINS];
        const float *hu = &g->node_udist[(size_t)idx * SF_VALUE_BINS];
        for (int b = 0; b < SF_VALUE_BINS; b++)
            h[b] = hu[b];
        for (uint32_t i = 0; i < n->n_edges; i++) {
            if (e[i].n == 0)
                continue;
            const float *hc = sf_graph_child_dist(g, e[i].child);
            for (int b = 0; b < SF_VALUE_BINS; b++)
                h[b] += (double)e[i].n * hc[b];
        }
        float *out = &g->node_dist[(size_t)idx * SF_VALUE_BINS];
        for (int b = 0; b < SF_VALUE_BINS; b++)
            out[b] = (float)(h[b] / (double)total);
    }
}

void sf_graph_recompute_chance(sf_graph *g, uint32_t xi) {
    sf_chance *x = &g->chance[xi];
    uint64_t total = 0;
    double sum = 0.0;
    for (int32_t j = x->first; j >= 0; j = g->outcomes[j].next) {
        const sf_chance_edge *o = &g->outcomes[j];
        if (o->n == 0)
            continue;
        total += o->n;
        sum += (double)o->n * g->nodes[o->child].q;
    }
    x->n = (uint32_t)total;
    x->q = total ? sum / (double)total : 0.0;
    if (g->distributional) {
        double h[SF_VALUE_BINS] = {0};
        for (int32_t j = x->first; j >= 0; j = g->outcomes[j].next) {
            const sf_chance_edge *o = &g->outcomes[j];
            if (o->n == 0)
                continue;
            const float *hc = &g->node_dist[(size_t)o->child * SF_VALUE_BINS];
            for (int b = 0; b < SF_VALUE_BINS; b++)
                h[b] += (double)o->n * hc[b];
        }
        float *out = &g->chance_dist[(size_t)xi * SF_VALUE_BINS];
        for (int b = 0; b < SF_VALUE_BINS; b++)
            out[b] = total ? (float)(h[b] / (double)total) : 0.0f;
    }
}
