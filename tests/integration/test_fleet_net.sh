#!/bin/sh
# Search with the network evaluator end to end (TAP): a fleet run whose
# leaves go to a spawned gpu-evald (cpu backend, the tiny bundle) produces
# verifying shards stamped with the model's SHA-256 and no fallback; the same
# jobs with the network evaluated in-process by the workers give the same
# shard content digests (remote == in-process for the cpu backend).
#
# usage: test_fleet_net.sh SF_FLEET SF_SHARD BUNDLE
set -u
fleet=$1
shard=$2
bundle=$3
sha=$(sha256sum "$bundle" | cut -d' ' -f1)
. "$(dirname "$0")/tap.sh"
tap_scratch sf-fleet-net

config() { # NAME OUTDIR COORD WORKERS SPAWN
  cat > "$tmp/$1.yaml" <<EOC
run: {name: nettest, output_dir: "$2", seed: 5}
seeds: {start: 40, count: 8, job_size: 4}
play: {mode: fights, encounters: {weak: 1, strong: 1}}
search: {simulations: 40, trees: 2, evaluator: net}
model: {bundle: "$bundle", sha256: "$sha"}
evald: {endpoint: "ipc://$tmp/evald.sock", spawn: $5, backend: cpu, max_wait_us: 200}
workers: {count: $4, threads: 1, fights_per_thread: 4}
coordinator: {endpoint: "$3", heartbeat_ms: 200, heartbeat_liveness: 10}
EOC
}

digests() {
  "$shard" verify "$1" | awk '$1 == "ok" { n = split($2, p, "/"); print p[n], $5 }' | sort
}

# 1. Remote: sf-fleet run spawns gpu-evald and two workers.
config remote "$tmp/remote" "tcp://127.0.0.1:*" 2 true
if "$fleet" run "$tmp/remote.yaml" > "$tmp/remote.log" 2>&1; then
  ok "a net run through a spawned gpu-evald completes"
else
  notok "the net run failed" "$(tail -5 "$tmp/remote.log")"
fi
digests "$tmp/remote/shards" > "$tmp/d.remote"
if [ "$(wc -l < "$tmp/d.remote")" = 2 ]; then ok "2 jobs -> 2 verifying shards"; else notok "shards" "$(cat "$tmp/d.remote")"; fi
stat=$("$shard" stat "$tmp/remote/shards/nettest-job000001.shard")
if echo "$stat" | grep -q "^model *$sha"; then ok "labels carry the model SHA-256"; else notok "model in the manifest" "$(echo "$stat" | grep model)"; fi
if echo "$stat" | grep -q "fallbacks 0,"; then ok "no evaluator fallback"; else notok "fallbacks" "$(echo "$stat" | grep fallback)"; fi
if grep -q "passed its canary" "$tmp/remote/logs/evald.log"; then ok "gpu-evald checked the canary before serving"; else notok "no canary line" "$(cat "$tmp/remote/logs/evald.log")"; fi

# 2. In-process: the workers evaluate with the cpu backend themselves.
ep="ipc://$tmp/coord.sock"
config local "$tmp/local" "$ep" 0 false
"$fleet" coordinator "$tmp/local.yaml" > "$tmp/local-coord.log" 2>&1 &
coord=$!
pids="$pids $coord"
for w in a b; do
  "$fleet" worker --connect "$ep" --id "$w" --local-net "$bundle" --scratch "$tmp/local/w-$w" \
    > "$tmp/worker-$w.log" 2>&1 &
  pids="$pids $!"
done
i=0
until "$fleet" status "$ep" 2>/dev/null | grep -q COMPLETE || [ $i -ge 600 ]; do sleep 0.1; i=$((i + 1)); done
"$fleet" stop "$ep" > /dev/null 2>&1
digests "$tmp/local/shards" > "$tmp/d.local"
if [ -s "$tmp/d.local" ] && cmp -s "$tmp/d.local" "$tmp/d.remote"; then
  ok "in-process and remote evaluation give the same shard digests"
else
  notok "digests differ between in-process and remote" "$(diff "$tmp/d.local" "$tmp/d.remote" | head -4)"
fi
if grep -q "in-process cpu backend" "$tmp/worker-a.log"; then ok "the worker evaluated in-process"; else notok "worker log" "$(cat "$tmp/worker-a.log")"; fi

tap_done
