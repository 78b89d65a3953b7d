/*
 * sf_check.h — the shared main() of every Check test executable: the
 * runner (sf_check_run) and the registration of every test of a source by
 * source order (SF_CHECK_MAIN over the generated SF_TESTS).
 *
 * A source's tests are its START_TESTs and SF_LOOP_TESTs, in source order
 * (tests/unit/list_tests.sh writes them to test-<name>.tests.h). They run in
 * the test case that SF_CHECK_MAIN names until the first SF_TCASE line, then
 * in the test case of the SF_TCASE above them:
 *
 *     START_TEST(a) { ... } END_TEST          -- test case "numbers"
 *     SF_LOOP_TEST(b, 0, ROWS) { ... } END_TEST  -- "numbers", _i in [0, ROWS)
 *     SF_TCASE(attacks, 120);
 *     START_TEST(c) { ... } END_TEST          -- "attacks", 120 s timeout
 *     #include "test-cards.tests.h"
 *     SF_CHECK_MAIN("cards", "numbers", 0, NULL, NULL)
 *
 * Output is TAP on stdout (meson counts each test case) and a one-line
 * summary on stderr. The process exits non-zero when any case fails or when
 * no case ran at all.
 *
 * SF_CHECK_TEST=<test name> runs that one test alone (with Check's own
 * CK_RUN_SUITE and CK_RUN_CASE, which select whole test cases):
 *
 *     SF_CHECK_TEST=a_damaged_ledger_is_an_error_not_a_crash build/tests/test-coordinator
 */
#ifndef SF_CHECK_H
#define SF_CHECK_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Check's per-test timeouts only turn a hung test into a failure; no pass
 * may depend on them (a test waits for conditions, tests/meson.build). So
 * a test case that names none gets this, not Check's 4 s, which a
 * test of a second under ASan/UBSan on a loaded machine can exceed.
 * CK_DEFAULT_TIMEOUT still overrides it, CK_TIMEOUT_MULTIPLIER scales
 * every timeout (Check's own variables). */
#define SF_CHECK_DEFAULT_TIMEOUT_S 60

/* The first test case of a suite: the names, Check's per-test timeout in
 * seconds (0: SF_CHECK_DEFAULT_TIMEOUT_S) and a checked fixture run around
 * every test in its own process (NULL: none). */
typedef struct sf_check_case {
    const char *suite, *tcase;
    int timeout_s;
    SFun setup, teardown;
} sf_check_case;

/* A later test case: SF_TCASE(name, timeout_s); above its first test. */
typedef struct sf_check_tcase {
    const char *name;
    int timeout_s;
} sf_check_tcase;

#define SF_TCASE(name, timeout_s) static const sf_check_tcase sf_tcase_##name = {#name, timeout_s}

/* A test run once for each _i in [lo, hi) (Check's loop test): the bounds
 * are integer constant expressions. */
#define SF_LOOP_TEST(name, lo, hi)                               \
    enum { sf_loop_lo_##name = (lo), sf_loop_hi_##name = (hi) }; \
    START_TEST(name)

/* One line of SF_TESTS: a test case begins (tcase), or a test runs once for
 * each _i in [lo, hi) (a plain test: [0, 1), as tcase_add_test). */
typedef struct sf_check_entry {
    const sf_check_tcase *tcase;
    const TTest *test;
    int lo, hi;
} sf_check_entry;

#define SF_C_(name) {.tcase = &sf_tcase_##name},
#define SF_T_(name) {.test = name, .lo = 0, .hi = 1},
#define SF_L_(name) {.test = name, .lo = sf_loop_lo_##name, .hi = sf_loop_hi_##name},

static inline TCase *sf_check_tcase_add(Suite *s, const char *name, int timeout_s, SFun setup,
                                        SFun teardown) {
    TCase *tc = tcase_create(name);
    if (timeout_s > 0)
        tcase_set_timeout(tc, timeout_s);
    else if (!getenv("CK_DEFAULT_TIMEOUT"))
        tcase_set_timeout(tc, SF_CHECK_DEFAULT_TIMEOUT_S);
    if (setup || teardown)
        tcase_add_checked_fixture(tc, setup, teardown);
    suite_add_tcase(s, tc);
    return tc;
}

/* Suite c.suite of the entries e[0..n), its first test case c, run and
 * reported by sf_check_run. */
static inline int sf_check_entries(sf_check_case c, const sf_check_entry *e, size_t n) {
    Suite *s = suite_create(c.suite);
    TCase *tc = NULL;
    const char *only = getenv("SF_CHECK_TEST");
    for (size_t i = 0; i < n; i++) {
        if (e[i].tcase) {
            tc = sf_check_tcase_add(s, e[i].tcase->name, e[i].tcase->timeout_s, NULL, NULL);
            continue;
        }
        if (only && *only && strcmp(only, e[i].test->name) != 0)
            continue;
        if (!tc)
            tc = sf_check_tcase_add(s, c.tcase, c.timeout_s, c.setup, c.teardown);
        tcase_add_loop_test(tc, e[i].test, e[i].lo, e[i].hi);
    }
    return sf_check_run(s, c.suite);
}

/* Every test of the source (SF_TESTS: the generated test-<name>.tests.h,
 * included above), run: the exit status of main(). */
#define SF_CHECK_ALL(suite, tcase, timeout_s, setup, teardown)                  \
    sf_check_entries((sf_check_case){suite, tcase, timeout_s, setup, teardown}, \
                     (const sf_check_entry[]){SF_TESTS},                        \
                     sizeof((const sf_check_entry[]){SF_TESTS}) / sizeof(sf_check_entry))

/* The whole main() of a test executable:
 * `SF_CHECK_MAIN("config", "config", 0, NULL, NULL)`. */
#define SF_CHECK_MAIN(suite, tcase, timeout_s, setup, teardown)        \
    int main(void) {                                                   \
        return SF_CHECK_ALL(suite, tcase, timeout_s, setup, teardown); \
    }

#endif
