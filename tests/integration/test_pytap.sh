#!/bin/sh
# pytap.py stops a test's daemons on every way out (TAP): a Python test
# killed by SIGTERM, as meson's timeout does, still runs its cleanup, and
# exits 128 + 15.
#
# usage: test_pytap.sh PYTHON INTEGRATION_DIR
set -u
py=$1
dir=$2
. "$(dirname "$0")/tap.sh"
tap_scratch sf-pytap
cat > "$tmp/case.py" <<EOP
import sys, time
sys.path.insert(0, "$dir")
from pytap import main, test

@test
def waits_forever():
    open("$tmp/started", "w").close()
    time.sleep(600)

if __name__ == "__main__":
    sys.exit(main(cleanup=lambda: open("$tmp/cleaned", "w").close()))
EOP
"$py" "$tmp/case.py" > "$tmp/out" 2>&1 &
case_pid=$!
pids="$pids $case_pid"
until_true 30 test -e "$tmp/started" || notok "the case never started" "$(cat "$tmp/out")"
kill -TERM "$case_pid"
wait "$case_pid"
rc=$?
if [ "$rc" = 143 ] && [ -e "$tmp/cleaned" ]; then
  ok "SIGTERM mid-case: the cleanup ran and the exit status is 143"
else
  notok "SIGTERM: exit $rc, cleanup $( [ -e "$tmp/cleaned" ] && echo ran || echo 'did not run')" "$(cat "$tmp/out")"
fi
tap_done
