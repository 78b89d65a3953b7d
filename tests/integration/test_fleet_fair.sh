#!/bin/sh
# Fairness between runs (TAP; docs/operator.md "Fairness between runs"):
# one pool of 3 `sf-fleet worker` processes serves a gate run with
# coordinator.max_workers 1, listed first, and a self-play run. At no time
# does the gate's status show more than 1 worker; the refused workers say
# why in their logs and play self-play meanwhile, re-checking the gate
# every second between jobs; both runs complete with every job done once
# (ledger counts, one "labels from" line per job across the pool's logs,
# shards that verify), and every worker exits once both runs are over.
#
# usage: test_fleet_fair.sh SF_FLEET SF_SHARD
set -u
fleet=$1
shard=$2
. "$(dirname "$0")/tap.sh"
tap_scratch sf-fair-test

# Both runs use one key directory, as one pool of workers with one key
# serving two coordinators does.
"$fleet" keygen "$tmp/keys" > /dev/null
export SF_KEYS="$tmp/keys"
cat > "$tmp/gate.yaml" <<EOF
run: {name: fairgate, output_dir: "$tmp/gate", seed: 11, kind: gate}
seeds: {start: 7000, count: 20, job_size: 2}
play: {mode: fights, encounters: {weak: 1, strong: 2, elite: 2}}
search: {simulations: 20, trees: 1}
champion: {evaluator: rollout, simulations: 60}
candidate: {evaluator: rollout, simulations: 120}
gate: {min_pairs: 20, max_pairs: 20, delta1: 0.1}
security: {keys: "$tmp/keys"}
workers: {count: 1, threads: 1, fights_per_thread: 4}
coordinator: {endpoint: "tcp://127.0.0.1:*", lease_seconds: 30, heartbeat_ms: 100, heartbeat_liveness: 30, max_workers: 1}
EOF
# self-play's jobs last long enough (1,500 simulations) that a worker
# serving it is past --recheck 1 before the run has no job left for it:
# the re-check below does not hang on the machine's speed
cat > "$tmp/sp.yaml" <<EOF
run: {name: fairsp, output_dir: "$tmp/sp", seed: 77}
seeds: {start: 500, count: 48, job_size: 4}
play: {mode: fights, encounters: {weak: 1, strong: 1, elite: 1}}
search: {simulations: 1500, trees: 2}
security: {keys: "$tmp/keys"}
workers: {count: 2, threads: 1, fights_per_thread: 3}
coordinator: {endpoint: "tcp://127.0.0.1:*", lease_seconds: 30, heartbeat_ms: 100, heartbeat_liveness: 30}
EOF

"$fleet" coordinator "$tmp/gate.yaml" --endpoint-file "$tmp/gate.ep" > "$tmp/cg.log" 2>&1 &
cg=$!
pids="$pids $cg"
"$fleet" coordinator "$tmp/sp.yaml" --endpoint-file "$tmp/sp.ep" > "$tmp/cs.log" 2>&1 &
cs=$!
pids="$pids $cs"
if until_true 30 test -s "$tmp/gate.ep" && until_true 30 test -s "$tmp/sp.ep"; then
  ok "both coordinators serve"
else
  notok "a coordinator did not start" "$(tail -n 2 "$tmp/cg.log" "$tmp/cs.log")"
fi
gate=$(cat "$tmp/gate.ep")
sp=$(cat "$tmp/sp.ep")

# The gate's and self-play's status, sampled until the test ends.
(
  while :; do
    "$fleet" status "$gate" 2>/dev/null | awk '/^workers alive|^worker limit/' >> "$tmp/gate.samples"
    "$fleet" status "$sp" 2>/dev/null | awk '/^workers alive/' >> "$tmp/sp.samples"
  done
) &
monitor=$!
pids="$pids $monitor"

wpids=""
for w in 1 2 3; do
  "$fleet" worker --connect-file "$tmp/gate.ep" --connect-file "$tmp/sp.ep" --recheck 1 \
    --id "w$w" --scratch "$tmp/s$w" > "$tmp/w$w.log" 2>&1 &
  wpids="$wpids $!"
  pids="$pids $!"
done
workers_gone() { for p in $wpids; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
if until_true 120 workers_gone; then
  ok "every worker exits once both runs are over"
else
  notok "workers still running" "$(tail -n 3 "$tmp/w1.log")"
fi
st=0
for p in $wpids; do wait "$p" || st=$?; done
if [ "$st" = 0 ]; then ok "every worker exits 0"; else notok "a worker exited $st"; fi
kill "$monitor" 2>/dev/null
wait "$monitor" 2>/dev/null

# At no time more than one worker in the gate; at some time one.
most=$(awk '/^workers alive/ { v = $3 + 0; if (v > m) m = v }
            /^worker limit/ { v = $6 + 0; if (v > m) m = v } END { print m + 0 }' "$tmp/gate.samples")
limit_lines=$(grep -c '^worker limit 1 (coordinator.max_workers)' "$tmp/gate.samples")
if [ "$most" = 1 ] && [ "$limit_lines" -gt 0 ]; then
  ok "the gate's status never shows more than 1 worker ($limit_lines samples)"
else
  notok "the gate had $most workers at once" "$(sort -u "$tmp/gate.samples" | head -n 4)"
fi
sp_most=$(awk '/^workers alive/ { v = $3 + 0; if (v > m) m = v } END { print m + 0 }' "$tmp/sp.samples")
if [ "$sp_most" -ge 2 ]; then
  ok "self-play gets the rest of the pool ($sp_most workers at once)"
else
  notok "self-play had at most $sp_most workers" "$(sort -u "$tmp/sp.samples" | head -n 4)"
fi

# Why a worker moved on, in its log; and the re-check between jobs.
if cat "$tmp"/w?.log | grep -q "run 1 of 2 (file $tmp/gate.ep): refused by the coordinator: run fairgate is at its worker limit (1, coordinator.max_workers); trying the next run"; then
  ok "a refused worker's log names the gate's limit and moves on"
else
  notok "no refusal in the workers' logs" "$(head -n 3 "$tmp/w2.log")"
fi
if cat "$tmp"/w?.log | grep -q "served run 2 of 2 (file $tmp/sp.ep) for 1 s; re-checking the runs before it"; then
  ok "a worker serving self-play re-checks the gate after --recheck"
else
  notok "no re-check in the workers' logs" "$(tail -n 3 "$tmp/w2.log")"
fi
if logged "$tmp/cs.log" "coordinator: worker w[123] left: " && logged "$tmp/cg.log" "coordinator: worker w[123] left: "; then
  ok "leaving a run, a worker says Goodbye and its coordinator frees its place"
else
  notok "no Goodbye logged" "$(tail -n 3 "$tmp/cs.log")"
fi

# Both complete, every job done once.
"$fleet" status "$gate" > "$tmp/gate.status" 2>&1
"$fleet" status "$sp" > "$tmp/sp.status" 2>&1
if grep -q "COMPLETE" "$tmp/gate.status" && grep -q "^jobs: 10 done, 0 leased, 0 pending of 10" "$tmp/gate.status" &&
  grep -q "COMPLETE" "$tmp/sp.status" && grep -q "^jobs: 12 done, 0 leased, 0 pending of 12" "$tmp/sp.status"; then
  ok "both runs complete: gate 10 of 10 jobs, self-play 12 of 12"
else
  notok "runs not complete" "$(head -n 2 "$tmp/gate.status" "$tmp/sp.status")"
fi
played=$(cat "$tmp"/w?.log | grep -c " labels from [0-9]* fights")
gshards=$("$shard" verify "$tmp/gate/shards" | grep -c '^ok ')
sshards=$("$shard" verify "$tmp/sp/shards" | grep -c '^ok ')
if [ "$played" = 22 ] && [ "$gshards" = 10 ] && [ "$sshards" = 12 ]; then
  ok "22 jobs played once each across the pool; 10 + 12 shards verify"
else
  notok "jobs played $played (want 22), shards $gshards + $sshards"
fi
if ! logged "$tmp/cg.log" "abandoned" && ! logged "$tmp/cs.log" "abandoned" &&
  grep -q "leases: 0 expired, 0 re-issued" "$tmp/gate.status" &&
  grep -q "leases: 0 expired, 0 re-issued" "$tmp/sp.status"; then
  ok "no job abandoned, expired or re-issued"
else
  notok "a job was given back or re-issued" "$(grep '^leases' "$tmp/gate.status" "$tmp/sp.status")"
fi

"$fleet" stop "$gate" > /dev/null 2>&1
"$fleet" stop "$sp" > /dev/null 2>&1
stopped() { ! kill -0 "$cg" 2>/dev/null && ! kill -0 "$cs" 2>/dev/null; }
if until_true 30 stopped; then ok "both coordinators stop"; else notok "a coordinator did not stop"; fi
kill "$cg" "$cs" 2>/dev/null
wait "$cg" 2>/dev/null
wait "$cs" 2>/dev/null
tap_done
