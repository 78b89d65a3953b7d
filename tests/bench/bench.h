/*
 * bench.h — what the benchmarks share: the median of their runs, the
 * xorshift stream their random playouts draw from, removing a scratch
 * directory.
 */
#ifndef SF_BENCH_H
#define SF_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* For qsort: doubles in increasing order. */
static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n), n > 0 (v is sorted in place); of an even count,
 * the mean of the middle two. */
static inline double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Marsaglia's xorshift64 (13, 7, 17): the next value of the stream *r
 * (which must not be 0). */
static inline uint64_t xorshift(uint64_t *r) {
    uint64_t x = *r;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *r = x;
}

/* Latencies in milliseconds, kept to take percentiles (a benchmark's
 * leases). Grows by doubling; exits the benchmark when memory runs out. */
typedef struct bench_lat {
    double *v;
    int n, cap;
} bench_lat;

static inline void bench_lat_add(bench_lat *l, double ms) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 4096;
        l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
        if (!l->v)
            exit(1);
    }
    l->v[l->n++] = ms;
}

/* bench_lat_add as a callback (bench_coord.h's bench_lease_turn): ctx is
 * the bench_lat. */
static inline void bench_lat_on_lease(void *ctx, double ms) {
    bench_lat_add(ctx, ms);
}

/* The p-quantile of l (sorted in place), nearest rank; 0 when empty. */
static inline double bench_lat_pct(bench_lat *l, double p) {
    if (!l->n)
        return 0;
    qsort(l->v, (size_t)l->n, sizeof *l->v, bench_cmp_double);
    return l->v[(int)(p * (l->n - 1) + 0.5)];
}

/* rm -rf DIR (a scratch directory the benchmark made); 0, or -1 with a
 * line on stderr naming it. */
static inline int bench_rm_rf(const char *dir) {
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) == 0)
        return 0;
    fprintf(stderr, "bench: could not remove %s\n", dir);
    return -1;
}

#endif
