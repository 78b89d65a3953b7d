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
# Following a registry's champion (model.champion): a worker plays job 1
# with the first champion; the second network is exported into the registry
# and promoted; the next worker's jobs play it, through the same gpu-evald
# (hot-loaded, no restart) and without a config edit. Jobs 2 and 3 are
# byte-identical to those of a run that followed the second network from
# its start (a job's model is bound in the ledger, so its shard does not
# depend on when it ran).
#
# usage: test_fleet_net.sh SF_FLEET SF_SHARD BUNDLE SF_MODEL GPU_EVALD
set -u
fleet=$1
shard=$2
bundle=$3
sf_model=$4
evald_exe=$5
sha=$(sha256sum "$bundle" | cut -d' ' -f1)
. "$(dirname "$0")/tap.sh"
tap_scratch sf-fleet-net

config() { # NAME OUTDIR COORD WORKERS SPAWN
  cat > "$tmp/$1.yaml" <<EOC
run: {name: nettest, output_dir: "$2", seed: 5}
seeds: {start: 40, count: 8, job_size: 4}
play: {mode: fights, encounters: {weak: 1, strong: 1}}
$(net_yaml 40 2 "ipc://$tmp/evald.sock" "$5")
workers: {count: $4, threads: 1, fights_per_thread: 4}
coordinator: {endpoint: "$3", heartbeat_ms: 200, heartbeat_liveness: 10}
EOC
}


# 0. The shipped network config pins the bundle the build makes.
root=$(cd "$(dirname "$0")/../.." && pwd)
if grep -q "sha256: \"$sha\"" "$root/configs/local-net.yaml"; then
  ok "configs/local-net.yaml pins the built tiny bundle ($sha)"
else
  notok "configs/local-net.yaml pins another model than the built bundle" "$(grep sha256 "$root/configs/local-net.yaml")"
fi

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
until "$fleet" status "$ep" 2>/dev/null | grep -q COMPLETE || [ $i -ge $((600 * wait_scale)) ]; do sleep 0.1; i=$((i + 1)); done
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
until "$fleet" status "$ep" 2>/dev/null | grep -q COMPLETE || [ $i -ge $((600 * wait_scale)) ]; do sleep 0.1; i=$((i + 1)); done
"$fleet" stop "$ep" > /dev/null 2>&1
if [ -s "$tmp/glocal/gate/verdict.json" ] && cmp -s "$tmp/glocal/gate/verdict.json" "$tmp/gremote/gate/verdict.json"; then
  ok "the gate evaluated in-process (--local-sides) writes a byte-identical verdict"
else
  notok "in-process gate verdict differs" "$(diff "$tmp/glocal/gate/verdict.json" "$tmp/gremote/gate/verdict.json" 2>&1 | head -6)"
fi

# 4. Following the champion of a registry.
follow_config() { # NAME OUTDIR COORD WORKERS SPAWN REGISTRY
  cat > "$tmp/$1.yaml" <<EOC
run: {name: nettest, output_dir: "$2", seed: 5}
seeds: {start: 40, count: 12, job_size: 4}
play: {mode: fights, encounters: {weak: 1, strong: 1}}
search: {simulations: 40, trees: 2, evaluator: net}
model: {champion: "$6/champion"}
evald: {endpoint: "ipc://$tmp/evald-$1.sock", spawn: $5, backend: cpu, max_wait_us: 200}
workers: {count: $4, threads: 1, fights_per_thread: 4}
coordinator: {endpoint: "$3", heartbeat_ms: 200, heartbeat_liveness: 10}
EOC
}
model_of() { "$shard" stat "$1" | awk '$1 == "model" { print $2 }'; }
mkdir -p "$tmp/reg"
cp "$bundle" "$tmp/reg/$sha.safetensors"
echo "$sha" > "$tmp/reg/champion"
ep="ipc://$tmp/fcoord.sock"
follow_config follow "$tmp/follow" "$ep" 0 false "$tmp/reg"
"$fleet" keygen "$tmp/follow/keys" > /dev/null
export SF_KEYS="$tmp/follow/keys"
"$fleet" coordinator "$tmp/follow.yaml" > "$tmp/follow-coord.log" 2>&1 &
pids="$pids $!"
"$evald_exe" --backend cpu --models "$tmp/reg" --keys "$SF_KEYS" \
  --bind "ipc://$tmp/evald-follow.sock" --max-wait-us 200 > "$tmp/follow-evald.log" 2>&1 &
evald=$!
pids="$pids $evald"
"$fleet" worker --connect "$ep" --id f1 --evald "ipc://$tmp/evald-follow.sock" --max-jobs 1 \
  --scratch "$tmp/follow/w-f1" > "$tmp/worker-f1.log" 2>&1
wait_status "$ep" '$1 == "jobs:" && $2 == 1' 30 || notok "job 1 did not finish" "$(tail -3 "$tmp/worker-f1.log")"
cp "$tmp/tiny2.safetensors" "$tmp/reg/$sha2.safetensors" # export, then promote
echo "$sha2" > "$tmp/reg/champion.tmp" && mv "$tmp/reg/champion.tmp" "$tmp/reg/champion"
"$fleet" worker --connect "$ep" --id f2 --evald "ipc://$tmp/evald-follow.sock" \
  --scratch "$tmp/follow/w-f2" > "$tmp/worker-f2.log" 2>&1 &
pids="$pids $!"
wait_status "$ep" '/COMPLETE/' 60 || notok "the followed run did not complete" "$(tail -3 "$tmp/worker-f2.log")"
"$fleet" stop "$ep" > /dev/null 2>&1
models=$(for j in 1 2 3; do model_of "$tmp/follow/shards/nettest-job00000$j.shard"; done | tr '\n' ' ')
if [ "$models" = "$sha $sha2 $sha2 " ]; then
  ok "job 1 played the first champion, jobs 2 and 3 the promoted one"
else
  notok "models per job" "$models"
fi
if grep -q "model $sha2 hot-loaded" "$tmp/follow-evald.log" && kill -0 "$evald" 2>/dev/null; then
  ok "the same gpu-evald hot-loaded the new champion (no restart)"
else
  notok "gpu-evald hot load" "$(tail -4 "$tmp/follow-evald.log")"
fi
if grep -q "jobs from 2 on play champion" "$tmp/follow-coord.log"; then
  ok "the coordinator logs the switch"
else
  notok "no switch in the coordinator log" "$(tail -4 "$tmp/follow-coord.log")"
fi
mkdir -p "$tmp/reg2"
cp "$tmp/tiny2.safetensors" "$tmp/reg2/$sha2.safetensors"
echo "$sha2" > "$tmp/reg2/champion"
follow_config follow2 "$tmp/follow2" "tcp://127.0.0.1:*" 1 true "$tmp/reg2"
if "$fleet" run "$tmp/follow2.yaml" > "$tmp/follow2.log" 2>&1; then
  ok "a followed run through a spawned gpu-evald (--models) completes"
else
  notok "the followed run failed" "$(tail -5 "$tmp/follow2.log")"
fi
digests "$tmp/follow/shards" | grep -v job000001 > "$tmp/d.follow"
digests "$tmp/follow2/shards" | grep -v job000001 > "$tmp/d.follow2"
if [ "$(wc -l < "$tmp/d.follow")" = 2 ] && cmp -s "$tmp/d.follow" "$tmp/d.follow2"; then
  ok "jobs bound to the same model give byte-identical shards whenever they ran"
else
  notok "followed digests differ" "$(diff "$tmp/d.follow" "$tmp/d.follow2" | head -4)"
fi

tap_done
