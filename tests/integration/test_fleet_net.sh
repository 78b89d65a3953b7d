#!/bin/sh
# Search with the network evaluator end to end (TAP): a fleet run whose
# leaves go to a spawned gpu-evald (cpu backend, the tiny bundle) produces
# verifying shards stamped with the model's SHA-256 and no fallback; the same
# jobs with the network evaluated in-process by the workers give the same
# shard content digests (remote == in-process for the cpu backend).
#
# A gate of two networks (the tiny bundle against another tiny one) through
# one spawned gpu-evald serving both: the verdict names both SHA-256s, and
# the same gate evaluated in-process (worker --local-sides) writes a
# byte-identical verdict.
#
# usage: test_fleet_net.sh SF_FLEET SF_SHARD BUNDLE SF_MODEL
set -u
fleet=$1
shard=$2
bundle=$3
sf_model=$4
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
"$fleet" keygen "$tmp/local/keys" > /dev/null # CURVE (docs/operator.md "Security")
export SF_KEYS="$tmp/local/keys"
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

# 3. A gate of two networks: one gpu-evald serves both.
"$sf_model" random --arch tiny --seed 2 "$tmp/tiny2.safetensors" > /dev/null 2>&1
sha2=$(sha256sum "$tmp/tiny2.safetensors" | cut -d' ' -f1)
gate_config() { # NAME OUTDIR COORD WORKERS SPAWN
  cat > "$tmp/$1.yaml" <<EOC
run: {name: netgate, output_dir: "$2", seed: 5, kind: gate}
seeds: {start: 40, count: 12, job_size: 4}
play: {mode: fights, encounters: {weak: 1, strong: 1}}
search: {simulations: 24, trees: 2}
champion: {evaluator: net, bundle: "$bundle", sha256: "$sha"}
candidate: {evaluator: net, bundle: "$tmp/tiny2.safetensors", sha256: "$sha2"}
gate: {min_pairs: 4, max_pairs: 12}
evald: {endpoint: "ipc://$tmp/evald2.sock", spawn: $5, backend: cpu, max_wait_us: 200}
workers: {count: $4, threads: 1, fights_per_thread: 4}
coordinator: {endpoint: "$3", heartbeat_ms: 200, heartbeat_liveness: 10}
EOC
}
gate_config gremote "$tmp/gremote" "tcp://127.0.0.1:*" 2 true
if "$fleet" run "$tmp/gremote.yaml" > "$tmp/gremote.log" 2>&1 && [ -s "$tmp/gremote/gate/verdict.json" ]; then
  ok "a gate of two networks through one spawned gpu-evald decides"
else
  notok "the network gate failed" "$(tail -5 "$tmp/gremote.log")"
fi
both=$(/usr/bin/python3 -c 'import json,sys; v = json.load(open(sys.argv[1])); print(v["champion"]["sha256"] == sys.argv[2] and v["candidate"]["sha256"] == sys.argv[3])' \
  "$tmp/gremote/gate/verdict.json" "$sha" "$sha2" 2>&1)
if [ "$both" = True ]; then ok "the verdict records both SHA-256s"; else notok "verdict SHA-256s" "$both"; fi
if [ "$(grep -c "passed its canary" "$tmp/gremote/logs/evald.log")" = 2 ]; then
  ok "the one gpu-evald loaded and checked both models"
else
  notok "gpu-evald models" "$(cat "$tmp/gremote/logs/evald.log")"
fi
if grep -q "  fallbacks 0," "$tmp/gremote.log"; then
  ok "no evaluator fallback in the gate"
else
  notok "gate fallbacks" "$(grep fallbacks "$tmp/gremote.log")"
fi
ep="ipc://$tmp/gcoord.sock"
gate_config glocal "$tmp/glocal" "$ep" 0 false
"$fleet" keygen "$tmp/glocal/keys" > /dev/null
export SF_KEYS="$tmp/glocal/keys"
"$fleet" coordinator "$tmp/glocal.yaml" > "$tmp/glocal-coord.log" 2>&1 &
pids="$pids $!"
"$fleet" worker --connect "$ep" --id g --local-sides --scratch "$tmp/glocal/w-g" > "$tmp/worker-g.log" 2>&1 &
pids="$pids $!"
i=0
until "$fleet" status "$ep" 2>/dev/null | grep -q COMPLETE || [ $i -ge 600 ]; do sleep 0.1; i=$((i + 1)); done
"$fleet" stop "$ep" > /dev/null 2>&1
if [ -s "$tmp/glocal/gate/verdict.json" ] && cmp -s "$tmp/glocal/gate/verdict.json" "$tmp/gremote/gate/verdict.json"; then
  ok "the gate evaluated in-process (--local-sides) writes a byte-identical verdict"
else
  notok "in-process gate verdict differs" "$(diff "$tmp/glocal/gate/verdict.json" "$tmp/gremote/gate/verdict.json" 2>&1 | head -6)"
fi

tap_done
