/*
 * sf_check.h — the shared main() of every Check test executable: the
 * runner (sf_check_run) and, for the common shape of one test case,
 * sf_check_tests.
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

/* One test case of one suite: the names, Check's per-test timeout in
 * seconds (0: Check's default) and a checked fixture run around every test
 * in its own process (NULL: none). */
typedef struct sf_check_case {
    const char *suite, *tcase;
    int timeout_s;
    SFun setup, teardown;
} sf_check_case;

/* The whole main() of most test executables: the tests[0..n) as test case
 * `c`, run and reported by sf_check_run. Pass the tests with
 * SF_CHECK_LIST(a, b, c). */
static inline int sf_check_tests(sf_check_case c, const TTest *const *tests, size_t n) {
    Suite *s = suite_create(c.suite);
    TCase *tc = tcase_create(c.tcase);
    if (c.timeout_s > 0)
        tcase_set_timeout(tc, c.timeout_s);
    if (c.setup || c.teardown)
        tcase_add_checked_fixture(tc, c.setup, c.teardown);
    for (size_t i = 0; i < n; i++)
        tcase_add_test(tc, tests[i]);
    suite_add_tcase(s, tc);
    return sf_check_run(s, c.suite);
}

/* The whole main() of a test executable whose tests are SF_TESTS (the
 * generated test-<name>.tests.h: every START_TEST of the file), as one test
 * case: `SF_CHECK_MAIN("config", "config", 0, NULL, NULL)`. */
#define SF_CHECK_MAIN(suite, tcase, timeout_s, setup, teardown)        \
    int main(void) {                                                   \
        sf_check_case c_ = {suite, tcase, timeout_s, setup, teardown}; \
        return sf_check_tests(c_, SF_CHECK_LIST(SF_TESTS));            \
    }

/* The tests of sf_check_tests(), in the order they run. */
#define SF_CHECK_LIST(...)               \
    (const TTest *const[]){__VA_ARGS__}, \
        sizeof((const TTest *const[]){__VA_ARGS__}) / sizeof(const TTest *)

#endif
