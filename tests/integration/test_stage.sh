#!/bin/sh
# scripts/stage, the runner behind make's quiet stages: a stage that
# succeeds prints its one line (and the sub-steps its command reports on
# fd 3), whatever its command writes goes to the log; a stage that fails
# prints the log's last lines and its path and exits with the command's
# status; V=1 and --show let everything through. Fake stage commands, a
# scratch log dir (SF_LOG_DIR). TAP output.
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$(dirname "$0")/tap.sh"
tap_scratch sf-stage
stage="$root/scripts/stage"
unset V VERBOSE  # the runner quiet unless a case asks
logs="$tmp/logs"

# The fake stage commands: 200 numbered lines on stdout, 5 on stderr, one
# sub-step on fd 3 when the runner offers it; then the given exit status.
cat >"$tmp/fake" <<'STUB'
#!/bin/sh
i=1
while [ $i -le 200 ]; do echo "out $i"; i=$((i + 1)); done
i=1
while [ $i -le 5 ]; do echo "err $i" >&2; i=$((i + 1)); done
if [ "${SF_STAGE_FD:-}" = 3 ]; then echo "      sub-step 1/1" >&3; fi
exit "$1"
STUB
chmod +x "$tmp/fake"
lines() { wc -l <"$1" | tr -d ' '; }

# 1. Success: two lines (the stage's, the sub-step's), everything in the log.
SF_LOG_DIR="$logs" "$stage" --step 1/3 good "a fine stage" "$tmp/fake" 0 \
  >"$tmp/out" 2>&1
rc=$?
printf '%s\n' "[1/3] a fine stage (log: $logs/good.log)" "      sub-step 1/1" >"$tmp/want"
if [ $rc = 0 ] && cmp -s "$tmp/out" "$tmp/want"; then
  ok "success: exit 0, two lines on the terminal"
else
  notok "success: exit $rc, printed $(lines "$tmp/out") lines" "$(head -c 300 "$tmp/out")"
fi
if [ "$(lines "$logs/good.log")" = 205 ] && grep -qx 'out 200' "$logs/good.log" &&
  grep -qx 'err 5' "$logs/good.log" && ! grep -q 'sub-step' "$logs/good.log"; then
  ok "success: the log holds all 205 lines of stdout and stderr"
else
  notok "success: log has $(lines "$logs/good.log") lines, want 205"
fi

# 2. Failure: the stage's line, a line saying it failed, the log's last 30
# lines, the log's path; the command's exit status.
SF_LOG_DIR="$logs" "$stage" --step 2/3 bad "a bad stage" "$tmp/fake" 7 \
  >"$tmp/out" 2>&1
rc=$?
{
  echo "[2/3] a bad stage (log: $logs/bad.log)"
  echo "      sub-step 1/1"
  echo "[2/3] bad failed (exit 7); the last 30 lines of $logs/bad.log:"
  i=176
  while [ $i -le 200 ]; do echo "out $i"; i=$((i + 1)); done
  i=1
  while [ $i -le 5 ]; do echo "err $i"; i=$((i + 1)); done
  echo "[2/3] bad failed; full log: $logs/bad.log (V=1 shows everything as it runs)"
} >"$tmp/want"
if [ $rc = 7 ]; then ok "failure: exit status 7 passed on"; else notok "failure: exit $rc, want 7"; fi
if cmp -s "$tmp/out" "$tmp/want"; then
  ok "failure: 34 lines: the stage, its sub-step, the log's last 30 lines between two naming the log"
else
  notok "failure: printed $(lines "$tmp/out") lines, want 34" "$(diff "$tmp/want" "$tmp/out" | head -5 | tr '\n' '|')"
fi
if [ "$(lines "$logs/bad.log")" = 205 ] && [ "$(head -n 1 "$logs/bad.log")" = "out 1" ]; then
  ok "failure: the log holds the whole output"
else
  notok "failure: log has $(lines "$logs/bad.log") lines, want 205"
fi

# 3. SF_STAGE_TAIL, and a log is overwritten by the next run of its stage.
SF_LOG_DIR="$logs" SF_STAGE_TAIL=5 "$stage" bad "again" sh -c 'echo only; exit 1' \
  >"$tmp/out" 2>&1
if [ "$(lines "$tmp/out")" = 4 ] && [ "$(cat "$logs/bad.log")" = only ] &&
  [ "$(head -n 1 "$tmp/out")" = "again (log: $logs/bad.log)" ]; then
  ok "no --step: no number; the log is overwritten; SF_STAGE_TAIL=5"
else
  notok "overwrite/tail: $(head -c 300 "$tmp/out")"
fi

# 4. The log's path is shown relative to the working directory below it.
(cd "$tmp" && SF_LOG_DIR="$logs" "$stage" rel "relative" true) >"$tmp/out" 2>&1
if [ "$(cat "$tmp/out")" = "relative (log: logs/rel.log)" ]; then
  ok "the log path is relative to the working directory"
else
  notok "relative path: $(cat "$tmp/out")"
fi

# 5. V=1 (and VERBOSE=1): everything on the terminal, the exit status kept,
# and no stale log left beside it.
for var in V VERBOSE; do
  env "$var=1" SF_LOG_DIR="$logs" "$stage" --step 3/3 good "loud" "$tmp/fake" 4 >"$tmp/out" 2>&1
  rc=$?
  if [ $rc = 4 ] && [ "$(lines "$tmp/out")" = 206 ] && [ "$(head -n 1 "$tmp/out")" = "[3/3] loud" ] &&
    grep -qx 'err 5' "$tmp/out" && ! grep -q 'out 1$' "$logs/good.log"; then
    ok "$var=1: all 205 lines shown under the stage's line, exit 4"
  else
    notok "$var=1: exit $rc, $(lines "$tmp/out") lines"
  fi
done

# 6. --show: the command's output is the point (the tests, the demo): shown,
# no log written.
SF_LOG_DIR="$logs" "$stage" --step 4/4 --show shown "showing" "$tmp/fake" 0 \
  >"$tmp/out" 2>&1
rc=$?
if [ $rc = 0 ] && [ "$(lines "$tmp/out")" = 206 ] && [ ! -e "$logs/shown.log" ]; then
  ok "--show: output through, no log"
else
  notok "--show: $(lines "$tmp/out") lines"
fi

# 7. A stage command that cannot start is a failed stage too; bad usage exits 2.
SF_LOG_DIR="$logs" "$stage" gone "missing" "$tmp/no-such-command" >"$tmp/out" 2>&1
rc=$?
if [ $rc = 127 ] && grep -q 'gone failed (exit 127)' "$tmp/out" && grep -q 'no-such-command' "$tmp/out"; then
  ok "a missing command: exit 127, its error in the tail"
else
  notok "missing command: exit $rc: $(head -c 300 "$tmp/out")"
fi
"$stage" only-a-name >/dev/null 2>&1
if [ $? = 2 ]; then ok "usage error exits 2"; else notok "usage error exit code"; fi

# 8. make demo's and make test's stages go through the runner: every recipe
# line of the quiet steps names scripts/stage, the demo's last stage --show.
if command -v make >/dev/null 2>&1; then
  demo=$(make -s -n -C "$root" demo 2>&1)
  n_stages=$(printf '%s\n' "$demo" | grep -c '^\./scripts/stage --step [1-4]/4 ')
  if [ "$n_stages" = 4 ] && printf '%s\n' "$demo" | grep -q -- '--step 4/4 --show demo' &&
    ! printf '%s\n' "$demo" | grep -q '^ninja\|^meson\|^\./scripts/setup\|^\./scripts/release'; then
    ok "make demo: four stages, all through scripts/stage"
  else
    notok "make demo: $n_stages stages" "$(printf '%s\n' "$demo" | head -5 | tr '\n' '|')"
  fi
  # setup and configure in the Makefile, both builds in scripts/test-all
  test_n=$(make -s -n -C "$root" test 2>&1 | grep -c '^\./scripts/stage --step [1-2]/4 ')
  builds=$(grep -c "/stage' --step [3-4]/4 build" "$root/scripts/test-all")
  if [ "$test_n" = 2 ] && [ "$builds" = 2 ] &&
    make -s -n -C "$root" test 2>&1 | grep -q '^MESON_TEST=.* \./scripts/test-all '; then
    ok "make test: setup, configure and both builds staged"
  else
    notok "make test: $test_n setup stages, $builds build stages in scripts/test-all"
  fi
else
  ok "# SKIP make not installed"
  ok "# SKIP make not installed"
fi

tap_done
