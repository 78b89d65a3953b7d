/*
 * search_fixture.h — what the search tests (test_search_toy.c on the toy
 * duel, test_search_engine.c on the real engine) share: counting every
 * allocation (the test links with -Wl,--wrap=malloc, calloc, realloc and
 * aligned_alloc), a default config with a given budget, one decision that
 * fails the test on an error, the same decision on several thread counts,
 * the allocations of a search over several decisions, and the memo of an
 * exact expectimax oracle. Include it in one source of a test.
 */
#ifndef SEARCH_FIXTURE_H
#define SEARCH_FIXTURE_H

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "search/search.h"
#include "sf_allocs.h"

/* Calls to the allocation functions so far. */
static long g_allocs;
SF_COUNTED_ALLOCATORS(g_allocs, __wrap_, __real_)
void *__real_aligned_alloc(size_t a, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n) {
    g_allocs++;
    return __real_aligned_alloc(a, n);
}

/* The default config with `sims` simulations over `trees` trees. */
static inline sf_search_config config(int sims, int trees) {
    sf_search_config c;
    sf_search_config_default(&c);
    c.simulations = sims;
    c.trees = trees;
    return c;
}

/* sf_search_decide for decision 0 of run `seed`, which must succeed. */
static inline void decide(const sf_search_config *c, const sf_state *st, uint64_t seed, int threads,
                          sf_eval_fn fn, void *ctx, sf_search_result *out) {
    sf_err e = {0};
    int rc = sf_search_decide(c, st, seed, 0, threads, fn, ctx, out, &e);
    ck_assert_msg(rc == SF_OK, "decide: %s", e.msg);
}

/* decide() on threads[0] threads, and on each count of threads[1..n) the
 * same result byte for byte; the result in *out. */
static inline void decide_on_threads(const sf_search_config *c, const sf_state *st, uint64_t seed,
                                     const int *threads, int n, sf_search_result *out) {
    decide(c, st, seed, threads[0], NULL, NULL, out);
    for (int i = 1; i < n; i++) {
        sf_search_result r;
        decide(c, st, seed, threads[i], NULL, NULL, &r);
        ck_assert_msg(memcmp(out, &r, sizeof r) == 0, "%d threads decide otherwise than %d",
                      threads[i], threads[0]);
    }
}

/* One decision of a run: its run seed and decision index. */
typedef struct search_at {
    uint64_t seed, decision;
} search_at;

/* Searches st with s (its own evaluator, one thread) at each of at[0..n),
 * which must succeed: the calls to the allocation functions meanwhile, the
 * simulations made in *sims. Nothing is asserted inside the window, since
 * Check allocates to report an assertion. */
static inline long allocs_searching(sf_search *s, const sf_state *st, const search_at *at, int n,
                                    uint64_t *sims) {
    sf_err e = {0};
    int rc = 0;
    *sims = 0;
    long before = g_allocs;
    for (int i = 0; i < n; i++) {
        sf_search_result r;
        rc |= sf_search_begin(s, st, at[i].seed, at[i].decision, &e);
        rc |= sf_search_run(s, 1, NULL, NULL, &e);
        rc |= sf_search_result_get(s, &r, &e);
        *sims += r.simulations;
    }
    long during = g_allocs - before;
    ck_assert_msg(rc == SF_OK, "search: %s", e.msg);
    return during;
}

/* An exact expectimax's decision values by state identity: open addressing
 * over 2^ORACLE_MEMO_BITS slots, at most half of them used. */
#define ORACLE_MEMO_BITS 18
typedef struct oracle_memo {
    sf_identity id[1 << ORACLE_MEMO_BITS];
    double v[1 << ORACLE_MEMO_BITS];
    unsigned char used[1 << ORACLE_MEMO_BITS];
    long states;
} oracle_memo;

/* The value of decision node s: the best q(ctx, s, a) over its legal
 * actions, computed once per identity. */
static inline double oracle_best(oracle_memo *m, const sf_state *s,
                                 double (*q)(void *ctx, const sf_state *s, sf_action a),
                                 void *ctx) {
    sf_identity id = sf_engine_identity(s);
    uint32_t mask = (1u << ORACLE_MEMO_BITS) - 1, i = (uint32_t)id.lo & mask;
    while (m->used[i] && !sf_identity_eq(m->id[i], id))
        i = (i + 1) & mask;
    if (m->used[i])
        return m->v[i];
    sf_action acts[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(s, acts, SF_MAX_ACTIONS);
    double best = -INFINITY;
    for (int k = 0; k < n; k++) {
        double v = q(ctx, s, acts[k]);
        if (v > best)
            best = v;
    }
    ck_assert_int_lt(m->states, (1 << ORACLE_MEMO_BITS) / 2);
    m->states++;
    m->used[i] = 1;
    m->id[i] = id;
    m->v[i] = best;
    return best;
}

#endif
