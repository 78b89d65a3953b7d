/*
 * bench.h — what the benchmarks share: the median of their runs.
 */
#ifndef SF_BENCH_H
#define SF_BENCH_H

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

#endif
