/*
 * sf_tmpdir.h — a scratch directory for one Check suite: created under /tmp
 * with a name that starts with `prefix`, removed with everything in it.
 */
#ifndef SF_TMPDIR_H
#define SF_TMPDIR_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

static inline void sf_tmpdir_make(char *dir, size_t cap, const char *prefix) {
    snprintf(dir, cap, "/tmp/%s-XXXXXX", prefix);
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static inline void sf_tmpdir_remove(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* The scratch directory of a test source: `static char tmpdir[256]`, made
 * by tmpdir_make() (name prefix `prefix`) and removed with everything in it
 * by tmpdir_remove(), the setup and teardown of a checked fixture or called
 * by a test itself. */
#define SF_TMPDIR_OF_TESTS(prefix)                     \
    static char tmpdir[256];                           \
    static inline void tmpdir_make(void) {             \
        sf_tmpdir_make(tmpdir, sizeof tmpdir, prefix); \
    }                                                  \
    static inline void tmpdir_remove(void) {           \
        sf_tmpdir_remove(tmpdir);                      \
    }

#endif
