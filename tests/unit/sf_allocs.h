/*
 * sf_allocs.h — counting the calls to malloc, calloc and realloc, for the
 * tests that check a loop allocates nothing.
 *
 * SF_COUNTED_ALLOCATORS(counter, name, real) defines name##malloc,
 * name##calloc and name##realloc, each adding one to `counter` and handing
 * the call on to real##malloc, real##calloc, real##realloc. With a
 * link-time wrap (-Wl,--wrap=malloc ...): (n, __wrap_, __real_); with an
 * interposer that replaces the C library's own: (n, , __libc_).
 */
#ifndef SF_ALLOCS_H
#define SF_ALLOCS_H

#include <stddef.h>

#define SF_COUNTED_ALLOCATORS(counter, name, real) \
    void *real##malloc(size_t n);                  \
    void *real##calloc(size_t a, size_t b);        \
    void *real##realloc(void *p, size_t n);        \
    void *name##malloc(size_t n) {                 \
        counter++;                                 \
        return real##malloc(n);                    \
    }                                              \
    void *name##calloc(size_t a, size_t b) {       \
        counter++;                                 \
        return real##calloc(a, b);                 \
    }                                              \
    void *name##realloc(void *p, size_t n) {       \
        counter++;                                 \
        return real##realloc(p, n);                \
    }

#endif
