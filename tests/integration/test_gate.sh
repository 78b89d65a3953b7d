#!/bin/sh
# Gate runs end to end (TAP): a clearly stronger candidate is promoted and
# nothing is issued after the decision; identical sides have no discordant
# pair and are rejected; the verdict's counts equal those recomputed from
# the shards' pairs by the Python reader (whose digest over the pairs equals
# sf-shard's); `sf-fleet status` shows the sequential test; a gate whose
# coordinator and one worker are killed with -9 mid-run ends with
# byte-identical verdict.json and pairs.jsonl; the HTML report renders in
# headless Chromium.
#
# usage: test_gate.sh SF_FLEET SF_SHARD GATE_REPORT_TEST   (PYTHONPATH: the
#        build's python/ directory)
set -u
fleet=$1
shard=$2
report_test=$3
. "$(dirname "$0")/tap.sh"
tap_scratch sf-gate-test

# config NAME OUTDIR ENDPOINT CHAMPION CANDIDATE SEEDS MIN MAX [WORKERS]
config() {
  cat > "$tmp/$1.yaml" <<EOF
run: {name: gtest, output_dir: "$2", seed: 11, kind: gate}
seeds: {start: 7000, count: $6, job_size: 10}
play: {mode: fights, encounters: {weak: 1, strong: 2, elite: 2}}
search: {simulations: 40, trees: 1}
champion: $4
candidate: $5
gate: {min_pairs: $7, max_pairs: $8, delta1: 0.1}
workers: {count: ${9:-2}, threads: 1, fights_per_thread: 4}
coordinator: {endpoint: "$3", lease_seconds: 30, heartbeat_ms: 100, heartbeat_liveness: 5}
EOF
}

# json FILE EXPR: a value of a JSON file (Python expression on `v`)
json() {
  $py -c "import json,sys; v = json.load(open(sys.argv[1])); print($2)" "$1"
}

# 1. A stronger candidate (100 simulations against 3) is promoted.
config strong "$tmp/strong" "tcp://127.0.0.1:*" "{evaluator: rollout, simulations: 3}" \
  "{evaluator: rollout, simulations: 100, trees: 2}" 400 40 400
expect 0 "gate: stopped early at pair [0-9]* of 400: promote" "a stronger candidate is promoted, early" -- "$fleet" run "$tmp/strong.yaml"
v=$tmp/strong/gate/verdict.json
if [ -f "$v" ] && [ "$(json "$v" 'v["verdict"], v["pairs"] == v["stop_pair"] >= 40')" = "promote True" ]; then
  ok "verdict.json: promote at the stopping pair, after min_pairs"
else
  notok "verdict.json: promote at the stopping pair" "$(head -c 300 "$v" 2>&1)"
fi
pairs=$(json "$v" 'v["pairs"]')
lines=$(wc -l < "$tmp/strong/gate/pairs.jsonl")
shards=$(ls "$tmp/strong/shards" | wc -l)
if [ "$lines" = "$pairs" ] && [ "$shards" -lt 40 ]; then
  ok "pairs.jsonl has one line per pair used ($lines); $shards of 40 jobs were played"
else
  notok "pairs.jsonl lines / jobs after the decision" "lines=$lines pairs=$pairs shards=$shards"
fi
good=$("$shard" verify "$tmp/strong/shards" | grep -c '^ok ')
if [ "$good" = "$shards" ]; then ok "every gate shard verifies ($good)"; else notok "gate shards verify" "$good of $shards"; fi

# The verdict's counts from the shards, independently: the Python reader's
# pairs in seed order, cut at the verdict's pair count; and its content
# digest (over the pairs) against sf-shard's.
cat > "$tmp/recount.py" <<'EOF'
import glob, json, subprocess, sys
from spirefleet import open_shard
run, sf_shard = sys.argv[1], sys.argv[2]
v = json.load(open(run + "/gate/verdict.json"))
pairs = []
for path in sorted(glob.glob(run + "/shards/*.shard")):
    with open_shard(path) as s:
        assert len(s) == 0, path
        pairs += s.manifest["gate_pairs"]
        out = subprocess.run([sf_shard, "verify", path], capture_output=True, text=True).stdout
        assert s.content_digest() in out, (path, s.content_digest(), out)
pairs.sort(key=lambda p: p["game_seed"])
seeds = [p["game_seed"] for p in pairs]
assert seeds[:v["pairs"]] == list(range(7000, 7000 + v["pairs"])), "seed order"
used = pairs[:v["pairs"]]
count = lambda f: sum(1 for p in used if f(p))
c = v["counts"]
assert c["only_candidate"] == count(lambda p: p["won_candidate"] and not p["won_champion"]), c
assert c["only_champion"] == count(lambda p: p["won_champion"] and not p["won_candidate"]), c
assert c["both"] == count(lambda p: p["won_champion"] and p["won_candidate"]), c
d = sum(p["y_candidate"] - p["y_champion"] for p in used) / len(used)
assert abs(d - v["score_diff"]) < 1e-9, (d, v["score_diff"])
wr = (c["only_candidate"] - c["only_champion"]) / len(used)
assert abs(wr - v["win_rate_diff"]) < 1e-12, (wr, v["win_rate_diff"])
for name, k in v["per_class"].items():
    assert k["pairs"] == sum(1 for p in used if p["class_id"] == ["weak", "strong", "elite", "boss", "gauntlet"].index(name))
print("recounted", len(used), "pairs")
EOF
expect 0 "recounted" "verdict counts, score and win-rate differences recomputed from the shards" -- \
  $py "$tmp/recount.py" "$tmp/strong" "$shard"

# 2. Identical sides: every pair concordant, never promoted.
config same "$tmp/same" "tcp://127.0.0.1:*" "{evaluator: rollout}" "{evaluator: rollout}" 120 60 120
"$fleet" run "$tmp/same.yaml" > "$tmp/same.log" 2>&1
v=$tmp/same/gate/verdict.json
got=$(json "$v" 'v["verdict"], v["counts"]["only_candidate"] + v["counts"]["only_champion"], v["pairs"], v["llr"] < 0' 2>&1)
if [ "$got" = "reject 0 60 True" ]; then
  ok "identical sides: 0 discordant pairs, rejected at min_pairs with a negative LLR"
else
  notok "identical sides" "$got"
fi

# 3. Kill -9 mid-gate: the coordinator (restarted) and one worker.
config clean "$tmp/clean" "tcp://127.0.0.1:*" "{evaluator: rollout, simulations: 60}" \
  "{evaluator: rollout, simulations: 60, salt: 3}" 300 150 300
"$fleet" run "$tmp/clean.yaml" > "$tmp/clean.log" 2>&1
ep="ipc://$tmp/k.sock"
config crash "$tmp/crash" "$ep" "{evaluator: rollout, simulations: 60}" \
  "{evaluator: rollout, simulations: 60, salt: 3}" 300 150 300 0
"$fleet" keygen "$tmp/crash/keys" > /dev/null # CURVE (docs/operator.md "Security")
export SF_KEYS="$tmp/crash/keys"
"$fleet" coordinator "$tmp/crash.yaml" > "$tmp/coord1.log" 2>&1 &
coord=$!
pids="$pids $coord"
"$fleet" worker --connect "$ep" --id wa --scratch "$tmp/crash/w-a" > "$tmp/wa.log" 2>&1 &
victim=$!
pids="$pids $victim"
"$fleet" worker --connect "$ep" --id wb --scratch "$tmp/crash/w-b" > "$tmp/wb.log" 2>&1 &
pids="$pids $!"
if wait_status "$ep" '/^gate:/ && $2 >= 20' 60; then
  ok "sf-fleet status shows the gate's pairs and LLR while it runs"
  kill -9 "$coord" "$victim"
  wait "$coord" "$victim" 2>/dev/null # gone, its lock on the run released
  "$fleet" coordinator "$tmp/crash.yaml" > "$tmp/coord2.log" 2>&1 &
  coord=$!
  pids="$pids $coord"
  "$fleet" worker --connect "$ep" --id wc --scratch "$tmp/crash/w-c" > "$tmp/wc.log" 2>&1 &
  pids="$pids $!"
  if wait_status "$ep" '/COMPLETE/' 120; then
    ok "killed coordinator (restarted) and worker: the gate completes"
  else
    notok "the gate did not complete after the kills" "$(tail -3 "$tmp/coord2.log")"
  fi
else
  notok "the gate never showed 20 pairs" "$("$fleet" status "$ep" 2>&1 | tail -2)"
fi
"$fleet" stop "$ep" > /dev/null 2>&1
i=0
while kill -0 "$coord" 2>/dev/null && [ $i -lt $((100 * wait_scale)) ]; do # stopped: files final
  sleep 0.1
  i=$((i + 1))
done
if [ -s "$tmp/clean/gate/verdict.json" ] && cmp -s "$tmp/clean/gate/verdict.json" "$tmp/crash/gate/verdict.json" &&
  cmp -s "$tmp/clean/gate/pairs.jsonl" "$tmp/crash/gate/pairs.jsonl"; then
  ok "after kill -9 of the coordinator and a worker: verdict.json and pairs.jsonl byte-identical ($(json "$tmp/clean/gate/verdict.json" 'v["verdict"], v["pairs"]'))"
else
  notok "verdict files differ after the kills" "$(diff "$tmp/clean/gate/verdict.json" "$tmp/crash/gate/verdict.json" 2>&1 | head -6)"
fi

# 3b. Two keys, every job audited (security.audit_fraction 1): each job's
# shard is played again by a worker of the other key and the copies agree
# byte for byte; the verdict, written only once no audit is open, is the
# one-key run's.
ep="ipc://$tmp/a.sock"
config aud "$tmp/aud" "$ep" "{evaluator: rollout, simulations: 60}" \
  "{evaluator: rollout, simulations: 60, salt: 3}" 300 150 300 0
printf 'security: {audit_fraction: 1}\n' >> "$tmp/aud.yaml"
"$fleet" keygen "$tmp/aud/keys" > /dev/null
"$fleet" keygen "$tmp/aud/keys" --add second > /dev/null
mkdir -p "$tmp/kb"
cp "$tmp/aud/keys/server.pub" "$tmp/kb/"
cp "$tmp/aud/keys/second.key" "$tmp/kb/worker.key"
chmod 600 "$tmp/kb/worker.key"
export SF_KEYS="$tmp/aud/keys"
"$fleet" coordinator "$tmp/aud.yaml" > "$tmp/aud-coord.log" 2>&1 &
pids="$pids $!"
"$fleet" worker --connect "$ep" --id ka --scratch "$tmp/aud/w-a" > "$tmp/ka.log" 2>&1 &
pids="$pids $!"
"$fleet" worker --connect "$ep" --id kb --keys "$tmp/kb" --scratch "$tmp/aud/w-b" > "$tmp/kb.log" 2>&1 &
pids="$pids $!"
if wait_status "$ep" '/COMPLETE/' 180; then
  "$fleet" status "$ep" > "$tmp/aud.st" 2>&1
  # "... audits N opened, A agreed, M mismatched, C caught"
  audits=$(sed -n 's/.*audits \([0-9]*\) opened, \([0-9]*\) agreed, \([0-9]*\) mismatched.*/\1 \2 \3/p' "$tmp/aud.st")
  a_open=$(echo "$audits" | awk '{print $1 + 0}')
  a_agreed=$(echo "$audits" | awk '{print $2 + 0}')
  a_mis=$(echo "$audits" | awk '{print $3 + 0}')
  if cmp -s "$tmp/clean/gate/verdict.json" "$tmp/aud/gate/verdict.json" &&
    cmp -s "$tmp/clean/gate/pairs.jsonl" "$tmp/aud/gate/pairs.jsonl" &&
    [ "$a_open" -gt 0 ] && [ "$a_open" = "$a_agreed" ] && [ "$a_mis" = 0 ]; then
    ok "two keys, every job audited ($a_open audits, all agreed): the verdict is the one-key run's"
  else
    notok "the audited gate" "$(cat "$tmp/aud.st"; diff "$tmp/clean/gate/verdict.json" "$tmp/aud/gate/verdict.json" 2>&1 | head -4)"
  fi
else
  notok "the audited gate never completed" "$("$fleet" status "$ep" 2>&1 | head -12)"
fi
"$fleet" stop "$ep" > /dev/null 2>&1

# 4. The report, in a real browser.
if command -v chromium > /dev/null; then
  "$py" "$report_test" "$tmp/strong" > "$tmp/report.tap" 2>&1
  st=$?
  if [ "$st" = 0 ]; then
    ok "the report renders in headless Chromium ($(grep -c '^ok' "$tmp/report.tap") checks)"
  else
    notok "the report in headless Chromium" "$(grep -v '^ok' "$tmp/report.tap" | head -5)"
  fi
else
  notok "chromium is not installed (scripts/packages.txt lists it)"
fi
expect 0 "report.html" "sf-fleet gate report writes the page" -- "$fleet" gate report "$tmp/strong" --out "$tmp/rep"
expect 1 "verdict.json" "sf-fleet gate report on a run without a verdict names the file" -- \
  "$fleet" gate report "$tmp/nothing"

tap_done
