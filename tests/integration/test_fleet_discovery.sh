#!/bin/sh
# Workers that find the coordinator through the file it publishes (TAP),
# as the Slurm scripts run them, without Slurm: a worker started before any
# coordinator waits for the file; a coordinator killed with -9 and started
# again on another port is found again through it; SIGUSR1 drains a worker
# (its job in hand is finished and uploaded, then it leaves with exit 3);
# the coordinator started with --exit-when-done exits 0 with the run and
# takes its file away. The shards equal those of `sf-fleet run`.
#
# usage: test_fleet_discovery.sh SF_FLEET SF_SHARD
set -u
fleet=$1
shard=$2
. "$(dirname "$0")/tap.sh"
tap_scratch sf-discovery

config() { # NAME OUTDIR
  cat >"$tmp/$1.yaml" <<EOF
run: {name: dtest, output_dir: "$2", seed: 31}
seeds: {start: 700, count: 24, job_size: 2}
play: {mode: fights, encounters: {weak: 1, strong: 1, elite: 1}}
search: {simulations: 1500, trees: 2}
workers: {count: 2, threads: 1, fights_per_thread: 1}
coordinator: {endpoint: "tcp://127.0.0.1:*", lease_seconds: 30, heartbeat_ms: 100, heartbeat_liveness: 5}
EOF
}
config disc "$tmp/disc"
ep=$tmp/coordinator.endpoint
# the run's keys before any process starts: workers, status and the
# coordinator use them (SF_KEYS; docs/operator.md "Security")
"$fleet" keygen "$tmp/disc/keys" > /dev/null
export SF_KEYS="$tmp/disc/keys"

"$fleet" worker --connect-file "$ep" --id wa --scratch "$tmp/wa" >"$tmp/wa.log" 2>&1 &
wa=$!
pids="$pids $wa"
if until_true 5 logged "$tmp/wa.log" "waiting for the coordinator's endpoint"; then
  ok "a worker started before its coordinator waits for the endpoint file"
else
  notok "no wait for the endpoint file" "$(head -c 300 "$tmp/wa.log")"
fi

"$fleet" coordinator "$tmp/disc.yaml" --endpoint-file "$ep" >"$tmp/c1.log" 2>&1 &
c1=$!
pids="$pids $c1"
done_jobs() { "$fleet" status "$(cat "$ep" 2>/dev/null)" 2>/dev/null | awk -v n="$1" '/^jobs:/ && $2 >= n { f = 1 } END { exit !f }'; }
if until_true 30 done_jobs 2; then
  first=$(cat "$ep")
  ok "the coordinator publishes $first; the waiting worker finds it and plays"
else
  notok "the worker never played" "$(tail -n 3 "$tmp/wa.log")"
fi

# The coordinator's node is lost: kill -9, a new one on another port.
kill -9 "$c1"
wait "$c1" 2>/dev/null
"$fleet" coordinator "$tmp/disc.yaml" --endpoint-file "$ep" --exit-when-done >"$tmp/c2.log" 2>&1 &
c2=$!
pids="$pids $c2"
moved() { [ -s "$ep" ] && [ "$(cat "$ep")" != "$first" ]; }
until_true 10 moved
if until_true 30 logged "$tmp/wa.log" "coordinator endpoint $(cat "$ep")" && until_true 30 done_jobs 5; then
  ok "after the coordinator moved to $(cat "$ep"), the worker reads the file again and goes on"
else
  notok "the worker did not follow the coordinator" "$(tail -n 3 "$tmp/wa.log")"
fi

# A second worker, drained while it holds a job.
"$fleet" worker --connect-file "$ep" --id wb --scratch "$tmp/wb" >"$tmp/wb.log" 2>&1 &
wb=$!
pids="$pids $wb"
holds_job() { tail -n 1 "$tmp/wb.log" 2>/dev/null | grep -q ": seeds "; }
until_true 30 holds_job
kill -USR1 "$wb"
wait "$wb"
st=$?
job=$(grep ": seeds " "$tmp/wb.log" | tail -n 1 | sed 's/.*: job \([0-9]*\): seeds.*/\1/')
if [ "$st" = 3 ] && logged "$tmp/wb.log" "job $job: .* labels from" && logged "$tmp/wb.log" "drained after" &&
  ! logged "$tmp/c2.log" "job $job abandoned"; then
  ok "SIGUSR1 drains a worker: job $job finished and uploaded, then exit 3"
else
  notok "drain: exit $st" "$(tail -n 3 "$tmp/wb.log")"
fi

wait "$c2"
st=$?
wait "$wa"
wst=$?
if [ "$st" = 0 ] && [ "$wst" = 0 ] && [ ! -e "$ep" ]; then
  ok "--exit-when-done: the coordinator exits 0 with the run and removes its endpoint file"
else
  notok "coordinator exit $st, worker exit $wst, file $(ls "$ep" 2>&1)" "$(tail -n 2 "$tmp/c2.log")"
fi

config ref "$tmp/ref"
"$fleet" run "$tmp/ref.yaml" >"$tmp/ref.log" 2>&1
digests "$tmp/disc/shards" >"$tmp/d.disc"
digests "$tmp/ref/shards" >"$tmp/d.ref"
if [ "$(wc -l <"$tmp/d.ref")" = 12 ] && cmp -s "$tmp/d.disc" "$tmp/d.ref"; then
  ok "12 shards verify, with the digests of sf-fleet run: nothing lost or doubled"
else
  notok "digests differ" "$(diff "$tmp/d.disc" "$tmp/d.ref" | head -n 4)"
fi
tap_done
