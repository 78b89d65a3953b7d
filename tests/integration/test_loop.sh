#!/bin/sh
# The training loop end to end (TAP): `sf-fleet loop` on a tiny config runs
# two generations (rollout self-play, train, export into the registry, gate,
# decide, self-play, train, export, gate, decide); the registry holds both
# bundles, the champion pointer and one history line per gate; the loop's
# one gpu-evald hot-loads the second candidate without a restart;
# `sf-fleet status RUN_DIR` shows the state; the learning curve and the gate
# reports are written. The same loop with its driver killed with -9 twice
# (mid-training and mid-gate) and started again ends with byte-identical
# loop history, champion, verdicts and bundles.
#
# usage: test_loop.sh SF_FLEET   (PYTHONPATH: the build's python/ directory)
set -u
fleet=$1
tmp=$(mktemp -d /tmp/sf-loop-test-XXXXXX)
pids=""
cleanup() {
  for p in $pids; do kill -9 "$p" 2>/dev/null; done
  pkill -9 -f "$tmp/" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
. "$(dirname "$0")/tap.sh"
tap_dir=$tmp

config() { # NAME
  cat > "$tmp/$1.yaml" <<EOF
run: {name: ltest, output_dir: "$tmp/$1", seed: 3, kind: loop}
seeds: {start: 0, count: 24, job_size: 8}
play: {mode: fights, encounters: {strong: 1, elite: 1}}
search: {simulations: 30, trees: 1, leaf_mix: 0.5}
evald: {backend: cpu, max_batch: 32, max_wait_us: 200}
train: {steps: 40, batch: 32, checkpoint_every: 10, warmup: 5}
gate: {alpha: 0.05, beta: 0.05, delta1: 0.1, min_pairs: 16, max_pairs: 40}
loop: {generations: 2, gate_seeds: 40, net_simulations: 20}
workers: {count: 2, threads: 1, fights_per_thread: 2}
coordinator: {endpoint: "tcp://127.0.0.1:*", heartbeat_ms: 200, heartbeat_liveness: 10}
EOF
}

# 1. Undisturbed.
config clean
if "$fleet" loop "$tmp/clean.yaml" > "$tmp/clean.log" 2>&1; then
  ok "sf-fleet loop runs two generations to the end"
else
  notok "sf-fleet loop failed" "$(tail -5 "$tmp/clean.log")"
fi
c=$tmp/clean
state=$(/usr/bin/python3 -c 'import json,sys; s = json.load(open(sys.argv[1])); print(s["stage"], s["generation"], len(s["history"]), len(s["generations"]))' "$c/loop.json" 2>&1)
if [ "$state" = "done 2 2 3" ]; then ok "loop.json: done after generation 2, two gates, three generations recorded"; else notok "loop.json state" "$state"; fi
# Each candidate's sibling ranking, on the games its trainer held out.
sib=$(/usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
for g in s["generations"][1:]:
    r = g["siblings"]
    assert r["decisions"] > 0 and r["pairs"] > 0 and r["fights_skipped"] == 0, r
    assert 0 <= r["net_pairwise_accuracy"] <= 1 and 0.5 < r["rollout_pairwise_accuracy"] <= 1, r
    assert r["model_sha256"] == g["candidate"], (r["model_sha256"], g["candidate"])
print("ok")' "$c/loop.json" 2>&1)
if [ "$sib" = ok ]; then ok "each candidate's sibling ranking is recorded, on replayed held-out games"; else notok "sibling ranking" "$sib"; fi
bundles=$(ls "$c/models" | grep -c '^[0-9a-f]\{64\}\.safetensors$')
champ=$(cat "$c/models/champion" 2>/dev/null)
lines=$(wc -l < "$c/models/history.jsonl" 2>/dev/null)
if [ "$bundles" = 2 ] && [ "$lines" = 2 ] && { [ "$champ" = rollout ] || [ -f "$c/models/$champ.safetensors" ]; }; then
  ok "registry: 2 bundles by SHA-256, a champion pointer ($champ), 2 history lines"
else
  notok "registry" "bundles=$bundles lines=$lines champion=$champ"
fi
for b in "$c"/models/*.safetensors; do
  name=$(basename "$b" .safetensors)
  [ "$(sha256sum "$b" | cut -d' ' -f1)" = "$name" ] || notok "bundle $name is named by another digest"
done
if grep -q "hot-loaded" "$c/logs/evald.log"; then
  ok "the loop's gpu-evald hot-loaded the second candidate without a restart"
else
  notok "no hot load in the loop's gpu-evald log" "$(tail -3 "$c/logs/evald.log")"
fi
expect 0 "stage done" "sf-fleet status RUN_DIR shows the loop's state" -- "$fleet" status "$c"
if [ -s "$c/learning.png" ] && [ -s "$c/gen1/gate/gate/report.html" ] && [ -s "$c/gen2/gate/gate/report.html" ]; then
  ok "learning curve and both gate reports written"
else
  notok "reports missing" "$(ls "$c" "$c/gen1/gate/gate" 2>&1 | tr '\n' ' ')"
fi
# The derived configs: rollout self-play mixes nothing; a network side of a
# gate plays at search.leaf_mix (candidate.leaf_mix -1); network self-play
# at loop.net_simulations.
derived=$(/usr/bin/python3 -c '
import json, subprocess, sys
fleet, c = sys.argv[1:3]
def eff(p):
    return json.loads(subprocess.run([fleet, "check", "--json", p], capture_output=True,
                                     text=True, check=True).stdout)["config"]
s0 = eff(c + "/gen0/selfplay.yaml")
assert s0["search"]["leaf_mix"] == 0 and s0["search"]["evaluator"] == "rollout", s0["search"]
g1 = eff(c + "/gen1/gate.yaml")
assert g1["search"]["leaf_mix"] == 0.5 and g1["candidate"]["leaf_mix"] == -1, g1["candidate"]
assert g1["candidate"]["evaluator"] == "net" and g1["search"]["simulations"] == 30, g1
v1 = json.load(open(c + "/gen1/gate/gate/verdict.json"))
assert v1["candidate"]["leaf_mix"] == 0.5 and "leaf_mix" not in v1["champion"], v1["candidate"]
assert v1["candidate"]["puct_c"] == 0 and "puct_c" not in v1["champion"], v1["candidate"]
s1 = eff(c + "/gen1/selfplay.yaml")
champ = json.load(open(c + "/loop.json"))["history"][0]["verdict"]
if champ == "promote":
    assert s1["search"]["evaluator"] == "net" and s1["search"]["simulations"] == 20, s1["search"]
    assert s1["search"]["leaf_mix"] == 0.5, s1["search"]
else:
    assert s1["search"]["evaluator"] == "rollout" and s1["search"]["simulations"] == 30, s1
print("ok")' "$fleet" "$c" 2>&1)
if [ "$derived" = ok ]; then ok "derived configs: rollout self-play mixes nothing, gates mix, network self-play at net_simulations"; else notok "derived configs" "$derived"; fi

# 2. The driver killed with -9 mid-training and mid-gate, started again.
config crash
k=$tmp/crash
kill_at() { # LOG-LINE-PATTERN
  "$fleet" loop "$tmp/crash.yaml" >> "$tmp/crash.log" 2>&1 &
  drv=$!
  pids="$pids $drv"
  i=0
  until grep -q "$1" "$tmp/crash.log" 2>/dev/null || [ $i -ge 1200 ]; do sleep 0.1; i=$((i + 1)); done
  sleep 2
  kill -9 "$drv" 2>/dev/null
  wait "$drv" 2>/dev/null
  sleep 0.5
}
kill_at "generation 1: training"
kill_at "generation 2: gate"
if "$fleet" loop "$tmp/crash.yaml" >> "$tmp/crash.log" 2>&1; then
  ok "after two kill -9 of the driver the loop resumes and finishes"
else
  notok "the resumed loop failed" "$(tail -5 "$tmp/crash.log")"
fi
same=1
for f in models/champion models/history.jsonl gen1/gate/gate/verdict.json gen2/gate/gate/verdict.json \
  gen1/gate/gate/pairs.jsonl gen2/gate/gate/pairs.jsonl; do
  [ -s "$c/$f" ] && cmp -s "$c/$f" "$k/$f" || { same=0; echo "# differs: $f"; }
done
for b in "$c"/models/*.safetensors; do cmp -s "$b" "$k/models/$(basename "$b")" || { same=0; echo "# differs: $(basename "$b")"; }; done
if [ $same = 1 ]; then
  ok "killed and resumed: champion, history, verdicts, pairs and bundles byte-identical"
else
  notok "the resumed loop differs from the undisturbed one"
fi

tap_done
