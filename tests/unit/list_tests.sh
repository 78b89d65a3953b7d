#!/bin/sh
# list_tests.sh SOURCE: "#define SF_TESTS a, b, c," naming every
# START_TEST(name) of a Check test source in source order, for a main() that
# runs them all (sf_check.h: SF_CHECK_LIST(SF_TESTS)). tests/meson.build
# writes it to test-<name>.tests.h.
printf '#define SF_TESTS'
sed -n 's/^START_TEST(\([A-Za-z0-9_]*\)).*/ \1,/p' "$1" | tr -d '\n'
echo
