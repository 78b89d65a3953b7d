/*
 * search_fixture.h — what the search tests (test_search_toy.c on the toy
 * duel, test_search_engine.c on the real engine) share: counting every
 * allocation (the test links with -Wl,--wrap=malloc, calloc, realloc and
 * aligned_alloc), a default config with a given budget, and one decision
 * that fails the test on an error. Include it in one source of a test.
 */
#ifndef SEARCH_FIXTURE_H
#define SEARCH_FIXTURE_H

#include <check.h>
#include <stdint.h>

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

#endif
