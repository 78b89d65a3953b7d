#!/bin/sh
# The fleet end to end (TAP): a 2-worker run completes with every shard
# sealed and verifying; the same config on 1 and on 3 workers gives the same
# shard content digests; a worker killed with -9 mid-job and a coordinator
# killed with -9 mid-run (then restarted) both end with the same digests as
# the undisturbed run, no job missing or duplicated, nothing left in temp.
#
# usage: test_fleet.sh SF_FLEET SF_SHARD
set -u
fleet=$1
shard=$2
. "$(dirname "$0")/tap.sh"
tap_scratch sf-fleet-test

# config NAME OUTDIR ENDPOINT WORKERS THREADS
config() { ftest_config "$@"; }

# 1. Two workers, everything on one machine.
config two "$tmp/two" "tcp://127.0.0.1:*" 2 1
if "$fleet" run "$tmp/two.yaml" > "$tmp/two.log" 2>&1; then
  ok "sf-fleet run with 2 workers completes"
else
  notok "sf-fleet run with 2 workers completes" "$(tail -5 "$tmp/two.log")"
fi
shards=$(ls "$tmp/two/shards" | wc -l)
good=$("$shard" verify "$tmp/two/shards" | grep -c '^ok ')
if [ "$shards" = 6 ] && [ "$good" = 6 ]; then
  ok "6 jobs -> 6 sealed shards, all verify"
else
  notok "6 jobs -> 6 sealed shards, all verify" "shards=$shards good=$good"
fi
records=$(grep -o 'records [0-9]*' "$tmp/two.log" | head -1 | awk '{print $2}')
sum=$("$shard" verify "$tmp/two/shards" | awk '$1 == "ok" { s += $3 } END { print s }')
decisions=$(for f in "$tmp"/two/shards/*.shard; do "$shard" stat "$f"; done |
  awk '/^job stats/ { for (i = 1; i <= NF; i++) if ($i == "decisions") { v = $(i + 1); sub(",", "", v); s += v } } END { print s }')
# labels.unsearched = drop (the default): decisions with one legal action
# are played but not labelled, and counted.
dropped=$(for f in "$tmp"/two/shards/*.shard; do "$shard" stat "$f"; done |
  awk '$1 == "unsearched_dropped" { s += $2 } END { print s + 0 }')
if [ -n "$records" ] && [ "$records" = "$sum" ] && [ $((sum + dropped)) = "$decisions" ] &&
  [ "$sum" -gt 0 ] && [ "$dropped" -gt 0 ]; then
  ok "records in shards ($sum) = labels reported = decisions ($decisions) - unsearched ($dropped)"
else
  notok "records = labels = decisions - unsearched" \
    "summary=$records shards=$sum decisions=$decisions dropped=$dropped"
fi
leftover=$(find "$tmp/two/incoming" "$tmp/two/work" -type f 2>/dev/null | wc -l)
if [ "$leftover" = 0 ]; then ok "nothing left in incoming/ or worker scratch"; else notok "temp files left" "$leftover files"; fi
digests "$tmp/two/shards" > "$tmp/d.two"

# 2. Determinism: 1 worker and 3 workers (2 threads each).
config one "$tmp/one" "tcp://127.0.0.1:*" 1 1
config three "$tmp/three" "tcp://127.0.0.1:*" 3 2
SF_PROGRESS_MS=100 "$fleet" run "$tmp/one.yaml" > "$tmp/one.log" 2>&1
"$fleet" run "$tmp/three.yaml" > "$tmp/three.log" 2>&1
digests "$tmp/one/shards" > "$tmp/d.one"
digests "$tmp/three/shards" > "$tmp/d.three"
if [ -s "$tmp/d.one" ] && cmp -s "$tmp/d.one" "$tmp/d.two" && cmp -s "$tmp/d.one" "$tmp/d.three"; then
  ok "1, 2 and 3 workers give the same content digests"
else
  notok "content digests depend on the worker count" "$(diff "$tmp/d.one" "$tmp/d.three" | head -4)"
fi

# The progress line counts stored labels, as status does: with one worker
# jobs are stored in order, so a line saying "jobs K/6 ... labels L" must
# have L = the records of the first K shards.
"$shard" ls "$tmp/one/shards" | awk '$1 ~ /\.shard$/ { print $2 }' > "$tmp/one.records"
bad=$(grep '^progress:' "$tmp/one.log" | awk -v f="$tmp/one.records" '
  BEGIN { while ((getline r < f) > 0) { k++; cum[k] = cum[k - 1] + r } }
  { split($4, j, "/"); if ($8 != cum[j[1]]) print; n++ }
  END { if (n < 2) print "only " n " progress lines" }')
if [ -z "$bad" ] && [ -s "$tmp/one.records" ]; then
  ok "every progress line counts the labels of the shards stored ($(grep -c '^progress:' "$tmp/one.log") lines)"
else
  notok "progress counts what is not stored" "$bad"
fi

# coordinator NAME LOG: the coordinator of $tmp/NAME.yaml, started in the
# background (its pid in $coord).
coordinator() {
  "$fleet" coordinator "$tmp/$1.yaml" > "$2" 2>&1 &
  coord=$!
  pids="$pids $coord"
}

# worker ENDPOINT ID SCRATCH LOG: a worker started in the background (its
# pid in $worker).
worker() {
  "$fleet" worker --connect "$1" --id "$2" --scratch "$3" > "$4" 2>&1 &
  worker=$!
  pids="$pids $worker"
}

# same_digests ENDPOINT NAME WHAT: stops the run at ENDPOINT (and waits
# for its coordinator, $coord, to exit); its shards ($tmp/NAME/shards) must
# have the digests of the one-worker run.
same_digests() {
  "$fleet" stop "$1" > /dev/null 2>&1
  i=0
  while kill -0 "$coord" 2>/dev/null && [ $i -lt $((100 * wait_scale)) ]; do
    sleep 0.1
    i=$((i + 1))
  done
  digests "$tmp/$2/shards" > "$tmp/d.$2"
  if cmp -s "$tmp/d.$2" "$tmp/d.one"; then
    ok "after $3: same digests, no job missing or duplicated"
  else
    notok "digests differ after $3" "$(diff "$tmp/d.$2" "$tmp/d.one" | head -4)"
  fi
}

# keys NAME: the run's key directory, made before its coordinator starts
# (a coordinator would make it too, but the workers start beside it), and
# SF_KEYS pointing at it: workers, status and stop then use CURVE.
keys() {
  "$fleet" keygen "$tmp/$1/keys" > /dev/null
  export SF_KEYS="$tmp/$1/keys"
}

# 3. kill -9 a worker mid-job.
ep="ipc://$tmp/k.sock"
config kill "$tmp/kill" "$ep" 0 1
keys kill
coordinator kill "$tmp/kill-coord.log"
worker "$ep" victim "$tmp/kill/w-victim" "$tmp/victim.log"
victim=$worker
if wait_status "$ep" '/^jobs:/ && $4 >= 1' 20; then
  kill -9 "$victim"
  worker "$ep" rescuer "$tmp/kill/w-rescuer" "$tmp/rescuer.log"
  if wait_status "$ep" '/COMPLETE/' 60; then
    ok "a worker killed with -9 mid-job: the run still completes"
    if wait_status "$ep" '/^leases:/ && $2 >= 1 && $4 >= 1' 5; then
      ok "the victim's lease expired and its job was re-issued"
    else
      notok "no lease expiry / re-issue recorded" "$("$fleet" status "$ep" 2>&1 | tail -1)"
    fi
  else
    notok "run did not complete after a worker was killed" "$(tail -3 "$tmp/kill-coord.log")"
  fi
else
  notok "no job was ever leased to the victim"
fi
same_digests "$ep" kill "the worker kill"

# 4. kill -9 the coordinator mid-run, restart it.
ep2="ipc://$tmp/c.sock"
config crash "$tmp/crash" "$ep2" 0 1
keys crash
coordinator crash "$tmp/crash-coord1.log"
worker "$ep2" wa "$tmp/crash/w-a" "$tmp/wa.log"
worker "$ep2" wb "$tmp/crash/w-b" "$tmp/wb.log"
if wait_status "$ep2" '/^jobs:/ && $2 >= 2' 30; then
  kill -9 "$coord"
  wait "$coord" 2>/dev/null # gone, its lock on the run released
  coordinator crash "$tmp/crash-coord2.log"
  if wait_status "$ep2" '/COMPLETE/' 90; then
    ok "coordinator killed with -9 and restarted: the run completes"
  else
    notok "run did not complete after the coordinator restart" "$(tail -3 "$tmp/crash-coord2.log")"
  fi
else
  notok "the coordinator never had 2 jobs done"
fi
same_digests "$ep2" crash "the coordinator crash"
leftover=$(find "$tmp/crash/incoming" -type f | wc -l)
if [ "$leftover" = 0 ]; then ok "no half-received upload left after the restart"; else notok "uploads left in incoming/" "$leftover"; fi

# One Ctrl-C through timeout(1), which delivers it to the process and to
# its group, is one interrupt: a clean stop (exit 3), not an abort (130).
# (Before this was handled, most such runs ended with 130; two tries.)
config intr "$tmp/intr" "tcp://127.0.0.1:*" 1 1
intr_ok=0
for try in 1 2; do
  rm -rf "$tmp/intr"
  timeout 300 "$fleet" run "$tmp/intr.yaml" > "$tmp/intr.log" 2>&1 &
  tpid=$!
  # the run has begun (however long that takes): then the interrupt
  while ! grep -q "sf-fleet: run ftest" "$tmp/intr.log" && kill -0 "$tpid" 2>/dev/null; do
    sleep 0.1
  done
  sleep 0.5
  kill -INT "$tpid"
  wait "$tpid"
  st=$?
  [ "$st" = 3 ] && grep -q "stopped" "$tmp/intr.log" && intr_ok=$((intr_ok + 1))
done
if [ "$intr_ok" = 2 ]; then
  ok "Ctrl-C through timeout(1) stops the run cleanly (exit 3, twice)"
else
  notok "Ctrl-C through timeout(1): $intr_ok of 2 clean stops (last exit $st)" "$(tail -3 "$tmp/intr.log")"
fi

# Operator mistakes on the command line: exit 2 and a message naming the input.
usage_err() { # usage_err LABEL PATTERN -- command...
  label=$1 pat=$2
  shift 3
  "$@" > "$tmp/u.out" 2>&1
  st=$?
  if [ "$st" = 2 ] && grep -q -- "$pat" "$tmp/u.out"; then ok "$label (exit 2)"; else
    notok "$label: exit $st" "$(head -c 300 "$tmp/u.out")"; fi
}
usage_err "worker --connect with a malformed endpoint" "--connect garbage: not a tcp://" -- \
  "$fleet" worker --connect garbage
usage_err "status of an inproc endpoint" "inproc:// reaches only threads of one process" -- \
  "$fleet" status inproc://x
usage_err "check of a directory" "is a directory, not a config file" -- "$fleet" check "$tmp"
config manyw "$tmp/manyw" "ipc://$tmp/manyw.sock" 1 1
printf 'security: {max_workers_per_key: 3}\n' >> "$tmp/manyw.yaml"
usage_err "run --workers past what one key may hold" \
  "4 workers would share the run's one worker key, above security.max_workers_per_key (3)" -- \
  "$fleet" run "$tmp/manyw.yaml" --workers 4

# keygen --add makes a new key and never changes what an existing one may
# do: adding the shared worker key as an operator would let every worker
# host stop the run (before, it printed success and listed it in operators/).
"$fleet" keygen "$tmp/kg" > /dev/null
tap_dir=$tmp
expect 1 "worker.key exists: --add makes a new key" "keygen --add of an existing key is refused" -- \
  "$fleet" keygen "$tmp/kg" --add worker --operator
if [ ! -e "$tmp/kg/operators/worker.pub" ]; then ok "the worker key did not become an operator"; else
  notok "operators/worker.pub was written"; fi
expect 0 "kg/alice.key: an operator key" "keygen --add of a new operator key" -- \
  "$fleet" keygen "$tmp/kg" --add alice --operator
expect 1 "'server' is the server's key" "keygen --add server is refused" -- \
  "$fleet" keygen "$tmp/kg2" --add server

tap_done
