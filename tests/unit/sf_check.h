/*
 * sf_check.h — the shared main() of every Check test executable.
 *
 * Output is TAP on stdout (meson counts each test case) and a one-line
 * summary on stderr. The process exits non-zero when any case fails or when
 * no case ran at all.
 */
#ifndef SF_CHECK_H
#define SF_CHECK_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

static inline int sf_check_run(Suite *suite, const char *name) {
    SRunner *sr = srunner_create(suite);
    srunner_set_tap(sr, "-");
    srunner_run_all(sr, CK_SILENT);
    int run = srunner_ntests_run(sr);
    int failed = srunner_ntests_failed(sr);
    fprintf(stderr, "suite %s: %d checks, %d failures\n", name, run, failed);
    srunner_free(sr);
    return failed == 0 && run > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
