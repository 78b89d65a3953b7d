#!/bin/sh
# scripts/test-under-load: the command's exit status comes back, its wall
# time is printed, and the load processes are gone afterwards, whether the
# command ends or the script is stopped by a signal. One busy process
# (SF_LOAD_CPUS=1) for about a second. TAP output.
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$(dirname "$0")/tap.sh"
tap_scratch sf-under-load
export SF_LOAD_CPUS=1

# load_pids: the pids the script said it started (from its first line)
load_pids() { sed -n 's/.*(pids: *\([0-9 ]*\)).*/\1/p' "$tmp/out" | head -n 1; }
# all_gone PID...: none of them is running (waits up to 10 s x $wait_scale)
all_gone() {
  i=0
  while [ $i -lt $((100 * wait_scale)) ]; do
    alive=
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
    [ -z "$alive" ] && return 0
    sleep 0.1
    i=$((i + 1))
  done
  return 1
}

"$root/scripts/test-under-load" sh -c 'exit 3' >"$tmp/out" 2>&1
rc=$?
lp=$(load_pids)
# shellcheck disable=SC2086
if [ "$rc" = 3 ] && grep -q "exited 3 after [0-9]* s under" "$tmp/out" && [ -n "$lp" ] &&
  all_gone $lp; then
  ok "the command's status (3) and time; the load stopped"
else
  notok "status and time: exit $rc, load pids '$lp'" "$(cat "$tmp/out")"
fi

# stopped by TERM while the command runs: the load and the command stop
"$root/scripts/test-under-load" sleep 300 >"$tmp/out" 2>&1 &
script=$!
i=0 sleeper=
until { [ -n "$(load_pids)" ] && [ -n "$sleeper" ]; } || [ $i -ge $((100 * wait_scale)) ]; do
  sleep 0.1
  sleeper=$(pgrep -P "$script" -x sleep)
  i=$((i + 1))
done
lp=$(load_pids)
kill -TERM "$script"
wait "$script"
rc=$?
# shellcheck disable=SC2086
if [ "$rc" = 143 ] && [ -n "$lp" ] && [ -n "$sleeper" ] && all_gone $lp "$sleeper"; then
  ok "TERM: exit 143, the load and the command stopped"
else
  notok "TERM: exit $rc, load '$lp', command '$sleeper'" "$(cat "$tmp/out")"
  pids="$lp $sleeper"
fi

tap_done
