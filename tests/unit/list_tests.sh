#!/bin/sh
# list_tests.sh SOURCE: "#define SF_TESTS SF_T_(a) SF_L_(b) SF_C_(c) ...",
# every START_TEST(a), SF_LOOP_TEST(b, lo, hi) and SF_TCASE(c, timeout_s) of
# a Check test source in source order, for a main() that runs them all
# (sf_check.h: SF_CHECK_MAIN). tests/meson.build writes it to
# test-<name>.tests.h.
printf '#define SF_TESTS'
sed -n -e 's/^START_TEST(\([A-Za-z0-9_]*\)).*/ SF_T_(\1)/p' \
    -e 's/^SF_LOOP_TEST(\([A-Za-z0-9_]*\),.*/ SF_L_(\1)/p' \
    -e 's/^SF_TCASE(\([A-Za-z0-9_]*\),.*/ SF_C_(\1)/p' "$1" | tr -d '\n'
echo
