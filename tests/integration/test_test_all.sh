#!/bin/sh
# scripts/test-all (`make test` after setup) runs both halves whatever the
# first one does, prints both summaries, and fails at the end if either
# half failed. The halves are replaced by stand-ins (SF_TEST_MAIN,
# SF_TEST_ASAN) that fail or pass on demand and write a meson test log of
# one suite; nothing is built. TAP output.
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$(dirname "$0")/tap.sh"
tap_scratch sf-test-all
cd "$tmp" || exit 1

# a half that ran one suite: its log (one line of what meson writes), then
# its status
cat >log.json <<'LOG'
{"name": "unit-x", "result": "OK", "duration": 1.5, "stdout": "ok 1 - a\nok 2 - b\n"}
LOG
half() { # DIR STATUS
  echo "mkdir -p $1/meson-logs && cp log.json $1/meson-logs/testlog.json && touch $1.ran && exit $2"
}
run() { # MAIN ASAN: scripts/test-all b a with those halves; output in out
  rm -rf b a b.ran a.ran
  SF_TEST_MAIN=$1 SF_TEST_ASAN=$2 "$root/scripts/test-all" b a >out 2>&1
}

# 1. The first half fails: the second runs anyway, both are summarised,
#    and the exit status is the failure's.
run "$(half b 3)" "$(half a 0)"
rc=$?
if [ "$rc" = 3 ] && [ -e a.ran ] && grep -q '^summary \[b\] unit-x .*checks=2 failures=0' out &&
  grep -q '^summary \[a\] unit-x' out && grep -q 'FAILED: b (exit 3)$' out; then
  ok "first half fails: second ran, both summaries, exit 3"
else
  notok "first half fails: exit $rc, ran: $(ls ./*.ran 2>/dev/null)" "$(cat out)"
fi

# 2. The first half cannot even build (no log): the second still runs,
#    and the summary says the first ran nothing.
run false "$(half a 0)"
rc=$?
if [ "$rc" = 1 ] && [ -e a.ran ] && grep -q '^summary \[b\] no test ran (exit 1' out &&
  grep -q '^summary \[a\] unit-x' out; then
  ok "first half ran nothing: second ran, exit 1"
else
  notok "first half ran nothing: exit $rc" "$(cat out)"
fi

# 3. Only the sanitizer half fails: non-zero, and it is named.
run "$(half b 0)" "$(half a 2)"
rc=$?
if [ "$rc" = 2 ] && grep -q 'FAILED: a (exit 2)$' out && grep -q '^summary \[b\] unit-x' out; then
  ok "second half fails: exit 2, named"
else
  notok "second half fails: exit $rc" "$(cat out)"
fi

# 4. Both fail: the first one's status, both named.
run "$(half b 4)" "$(half a 5)"
rc=$?
if [ "$rc" = 4 ] && grep -q 'FAILED: b (exit 4) and a (exit 5)$' out; then
  ok "both fail: exit 4, both named"
else
  notok "both fail: exit $rc" "$(cat out)"
fi

# 5. Both pass: exit 0.
run "$(half b 0)" "$(half a 0)"
rc=$?
if [ "$rc" = 0 ] && grep -q 'both halves passed' out && ! grep -q FAILED out; then
  ok "both pass: exit 0"
else
  notok "both pass: exit $rc" "$(cat out)"
fi

# 6. A log left by an earlier run is not summarised as this run's.
rm -rf b a
mkdir -p b/meson-logs
echo '{"name": "stale", "result": "OK", "duration": 1, "stdout": ""}' >b/meson-logs/testlog.json
SF_TEST_MAIN=false SF_TEST_ASAN=true "$root/scripts/test-all" b a >out 2>&1
if ! grep -q stale out && grep -q '^summary \[b\] no test ran' out; then
  ok "an earlier run's log is not summarised"
else
  notok "an earlier run's log is not summarised" "$(cat out)"
fi

# 7. The halves' own commands (no stand-ins): ninja and meson test, each on
#    its build dir, the second with the sanitizers' options; ninja and
#    meson are recording stubs here.
mkdir -p bin
cat >bin/ninja <<'STUB'
#!/bin/sh
echo "ninja $*" >>calls
STUB
cat >bin/meson-test <<'STUB'
#!/bin/sh
echo "meson-test $* asan=${ASAN_OPTIONS:-} ubsan=${UBSAN_OPTIONS:-}" >>calls
STUB
chmod +x bin/ninja bin/meson-test
rm -f calls
PATH="$tmp/bin:$PATH" MESON_TEST="$tmp/bin/meson-test" "$root/scripts/test-all" b a >out 2>&1
rc=$?
want="ninja -C b
meson-test -C b asan= ubsan=
ninja -C a
meson-test -C a --suite unit asan=detect_leaks=1 ubsan=halt_on_error=1:print_stacktrace=1"
if [ "$rc" = 0 ] && [ "$(cat calls 2>/dev/null)" = "$want" ]; then
  ok "the default halves: ninja and meson test on b, then on a under the sanitizers"
else
  notok "the default halves: exit $rc" "$(cat calls 2>/dev/null) / $(cat out)"
fi

# 8. `make test` is scripts/test-all on the checked and sanitizer builds.
if make -n -C "$root" test 2>/dev/null | grep -q 'scripts/test-all build build-asan'; then
  ok "make test runs scripts/test-all"
else
  notok "make test runs scripts/test-all" "$(make -n -C "$root" test 2>&1 | tail -5)"
fi

tap_done
