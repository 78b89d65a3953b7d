#!/bin/sh
# sf-search and sf-arena on the command line, TAP output: root visits add up
# to the budget, results do not depend on the thread or job count, the
# arena's Wilson bound matches its closed form, and bad flags exit 2 naming
# the flag.
# usage: test_search_cli.sh SF_SEARCH SF_ARENA SF_PLAY TINY_BUNDLE
set -u
search=$1
arena=$2
play=$3
bundle=$4
. "$(dirname "$0")/tap.sh"
tap_scratch sf-search-cli
check() { # check LABEL -- command...: passes when the command exits 0
  label=$1
  shift 2
  if "$@" >"$tmp/check" 2>&1; then ok "$label"; else notok "$label: $(head -c 300 "$tmp/check")"; fi
}

# Root visits: every simulation of a single tree passes through one root
# edge, so the visits add up to the budget exactly.
"$search" --sims 200 --seed 3 --json >"$tmp/s200.json"
check "sf-search: 200 simulations, root visits sum to 200" -- "$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
v = sum(a["visits"] for a in d["actions"])
assert d["simulations"] == 200 and v == 200, (d["simulations"], v)
' "$tmp/s200.json"

# Root parallelism: each tree has its own derived seed, so the threads that
# run the trees change nothing but the time.
"$search" --sims 800 --trees 4 --threads 1 --seed 5 --json | grep -v '"seconds"' >"$tmp/t1"
"$search" --sims 800 --trees 4 --threads 2 --seed 5 --json | grep -v '"seconds"' >"$tmp/t2"
check "sf-search: 4 trees give the same root on 1 and 2 threads" -- cmp "$tmp/t1" "$tmp/t2"

# The arena: fights are seeded by index, so --jobs changes nothing.
args="--policy search --sims 100 --fights 6 --classes weak,strong --seed 2 --json"
# shellcheck disable=SC2086
"$arena" $args --jobs 1 >"$tmp/j1"
# shellcheck disable=SC2086
"$arena" $args --jobs 2 >"$tmp/j2"
check "sf-arena: 1 and 2 jobs give the same results" -- cmp "$tmp/j1" "$tmp/j2"

# Wilson's lower bound for n wins of n fights is n / (n + z^2).
check "sf-arena: Wilson bound for 6 of 6 is 6/(6+1.96^2) = 0.6097" -- "$py" -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
weak = [r for r in rows if r["class"] == "weak"][0]
assert weak["n"] == 6 and weak["wins"] == 6, weak
want = 6 / (6 + 1.959964 ** 2)
assert abs(weak["win_lo"] - want) < 1e-4, (weak["win_lo"], want)
assert weak["win_hi"] == 1.0
' "$tmp/j1"

expect 0 "paired: search\[rollout, 50 sims\] minus clairvoyant\[rollout, 50 sims\]" "sf-arena --vs prints the paired table" -- \
  "$arena" --policy search --vs clairvoyant --sims 50 --fights 2 --classes weak --seed 1
expect 2 "unknown flag '--bogus'" "sf-search refuses an unknown flag" -- \
  "$search" --bogus 1
expect 2 "sims: expected an integer" "sf-search names a bad --sims" -- \
  "$search" --sims abc
# The turn cap: ten Defends against a Blue Slaver with 999 HP cannot end;
# the engine ends each fight once turn 9 is over, as a turn-limit loss,
# whoever plays it (here the search; the worker and gates: test_worker_job).
"$arena" --policy search --sims 40 --deck "Defend*10" --hp 999 --encounter "Blue Slaver" \
  --fights 2 --max-turns 9 --json >"$tmp/cap.json"
check "sf-arena: a fight nobody can win ends at --max-turns as a turn-limit loss" -- "$py" -c '
import json, sys
d = [json.loads(l) for l in open(sys.argv[1])][0]
assert d["n"] == 2 and d["wins"] == 0, d
assert d["turn_limit_fights"] == 2 and d["longest_fight_turns"] == 9 and d["mean_turns"] == 9, d
' "$tmp/cap.json"
expect 2 "--max-turns: expected an integer in 1..1000, got .1001." "sf-arena names a --max-turns past the limit" -- \
  "$arena" --policy greedy --max-turns 1001

# Mixed leaf evaluation: the network's value mixed with the rollout's.
"$arena" --policy search --eval net --model "$bundle" --leaf-mix 0.5 --sims 20 --fights 2 \
  --classes weak --json >"$tmp/mix.json"
check "sf-arena: --leaf-mix is reported with the network side" -- "$py" -c '
import json, sys
d = [json.loads(l) for l in open(sys.argv[1])][0]
assert d["leaf_mix"] == 0.5 and d["evaluator"] == "net" and d["n"] == 2, d
' "$tmp/mix.json"
expect 2 "leaf-mix mixes a network's leaf values: it needs --eval net" \
  "sf-arena refuses --leaf-mix without a network" -- "$arena" --policy search --leaf-mix 0.5
expect 2 "the --vs side's --vs-leaf-mix mixes a network's leaf values: it needs --vs-eval net" \
  "sf-arena refuses --vs-leaf-mix for a --vs side without a network" -- "$arena" --policy search \
  --eval net --model "$bundle" --vs search --vs-eval rollout --vs-leaf-mix 0.5
# The --vs side inherits --leaf-mix only where it has a network to mix.
"$arena" --policy search --eval net --model "$bundle" --leaf-mix 0.5 --sims 20 --fights 2 \
  --classes weak --vs search --vs-eval rollout --json >"$tmp/mixvs.json"
check "sf-arena: --leaf-mix against a rollout --vs side (which mixes nothing)" -- "$py" -c '
import json, sys
d = [json.loads(l) for l in open(sys.argv[1])]
assert d[0]["leaf_mix"] == 0.5 and d[0]["evaluator"] == "net", d[0]
assert d[1]["leaf_mix"] == 0 and d[1]["evaluator"] == "rollout", d[1]
' "$tmp/mixvs.json"
expect 2 "leaf-mix mixes a network's leaf values: it needs --eval net" \
  "sf-search refuses --leaf-mix without a network" -- "$search" --leaf-mix 0.5

expect 2 "policy: expected random, greedy, search, clairvoyant or net" "sf-arena names a bad --policy" -- \
  "$arena" --policy nope
expect 2 "needs a value" "sf-arena: a flag missing its value" -- \
  "$arena" --policy greedy --fights
expect 0 "usage: sf-arena" "sf-arena --help" -- "$arena" --help

# Flags that would have no effect are refused, not ignored.
expect 2 "must not exceed simulations" "sf-search: more trees than simulations" -- \
  "$search" --trees 8 --sims 4
expect 2 "an empty element in the list" "sf-search: an empty --play index" -- "$search" --play 0,,1
expect 2 "boss encounter, which --classes leaves out" "sf-arena: --encounter outside --classes" -- \
  "$arena" --policy greedy --fights 2 --classes weak --encounter Hexaghost
expect 2 "classes '': an empty element" "sf-arena: an empty --classes" -- \
  "$arena" --policy greedy --classes ""
expect 2 "nothing to play" "sf-arena: no fights and no gauntlets" -- "$arena" --policy greedy --fights 0
"$arena" --policy greedy --fights 3 --encounter Hexaghost --json >"$tmp/enc.json" 2>&1
check "sf-arena --encounter plays only that encounter's class" -- "$py" -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert [r["class"] for r in rows] == ["boss"], rows
assert rows[0]["n"] == 3, rows
' "$tmp/enc.json"

# sf-play --json: stdout holds one state per line, each loads back.
printf '0\n0\n' | "$play" --encounter Cultist --seed 4 --json >"$tmp/play.jsonl" 2>/dev/null
lines=$(wc -l <"$tmp/play.jsonl")
tail -n 1 "$tmp/play.jsonl" >"$tmp/last.json"
if [ "$lines" = 3 ] && echo q | "$play" --load "$tmp/last.json" >/dev/null 2>&1; then
  ok "sf-play --json: 3 states for 2 actions, the last loads back"
else
  notok "sf-play --json: $lines lines; load: $(echo q | "$play" --load "$tmp/last.json" 2>&1 | head -c 200)"
fi
expect 2 "has no effect with --state" "sf-search: a fight flag with --state" -- \
  "$search" --state "$tmp/last.json" --encounter Cultist
expect 2 "has no effect with --load" "sf-play: a fight flag with --load" -- \
  "$play" --load "$tmp/last.json" --deck Strike
expect 2 "is a directory, not a state file" "sf-search: a directory as --state" -- \
  "$search" --state "$tmp"

# Networks on either side: the prior decides a 1-simulation search, and the
# tools refuse what would be ignored or cannot work.
"$search" --encounter "Jaw Worm" --seed 3 --eval net --model "$bundle" --sims 1 --json \
  >"$tmp/net1.json" 2>&1
if $py - "$tmp/net1.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
acts = r["actions"]
top = max(range(len(acts)), key=lambda i: acts[i]["prior"])
visited = [i for i, a in enumerate(acts) if a["visits"] > 0]
assert visited == [top] and r["chosen"] == top, (visited, top, r["chosen"])
EOF
then ok "sf-search --eval net: one simulation goes to the highest prior"
else notok "sf-search --eval net: one simulation goes to the highest prior" "$(head -c 300 "$tmp/net1.json")"
fi
check "sf-arena: network search against rollout search on the same fights" -- \
  "$arena" --policy search --eval net --model "$bundle" --sims 20 --fights 2 --classes weak \
  --vs search --vs-eval rollout --jobs 2
check "sf-arena: the raw policy of a network against greedy" -- \
  "$arena" --policy net --model "$bundle" --fights 3 --vs greedy
expect 2 "needs --model" "sf-arena: --eval net without a model" -- \
  "$arena" --policy search --eval net --fights 1
expect 2 "has no effect without --eval net" "sf-arena: --model without a network side" -- \
  "$arena" --policy greedy --model "$bundle" --fights 1
expect 2 "use --jobs" "sf-arena: --threads with a network" -- \
  "$arena" --policy search --eval net --model "$bundle" --threads 2 --fights 1
expect 2 "is not a search flag" "sf-arena: --vs-FLAG must name a search flag" -- \
  "$arena" --policy greedy --vs random --vs-fights 3
expect 2 "pinned SHA-256" "sf-arena: a malformed pin" -- \
  "$arena" --policy net --model "$bundle@abc" --fights 1

# Starting positions (docs/starts.md): every fight from its own drawn start,
# the same for both sides and whatever the job count.
args="--policy greedy --start rewards --fights 8 --seed 3 --json"
# shellcheck disable=SC2086
"$arena" $args --jobs 1 >"$tmp/r1"
# shellcheck disable=SC2086
"$arena" $args --jobs 2 >"$tmp/r2"
check "sf-arena --start rewards: 1 and 2 jobs give the same results" -- cmp "$tmp/r1" "$tmp/r2"
"$arena" --policy greedy --vs greedy --start rewards --picker random --fights 6 --seed 4 \
  --json >"$tmp/rvs" 2>&1
check "sf-arena --start rewards: both sides play from the same starts" -- "$py" -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
paired = [r for r in rows if "paired" in r]
starts = [r for r in rows if "start_deck" in r]
assert len(paired) == 4 and all(r["hp_lost_diff"] == 0 for r in paired), paired
assert len(starts) == 8 and all(r["start"] == "rewards" and r["picker"] == "random" for r in starts)
boss = [r for r in starts if r["class"] == "boss"]
assert all(r["start_floor"] == 16 and r["start_deck"] > 10 for r in boss), boss
' "$tmp/rvs"
expect 2 "has no effect with --start rewards" "sf-arena: --deck with --start rewards" -- \
  "$arena" --policy greedy --start rewards --deck Strike --fights 1
expect 2 "has no effect on gauntlets" "sf-arena: --start rewards with gauntlets" -- \
  "$arena" --policy greedy --start rewards --gauntlets 1
expect 2 "needs --start rewards" "sf-arena: --picker without --start rewards" -- \
  "$arena" --policy greedy --picker random --fights 1
expect 2 "expected starter or rewards" "sf-arena names a bad --start" -- \
  "$arena" --policy greedy --start neow
expect 0 "^start (floor 16, rooms M" "sf-search --start rewards shows the start" -- \
  "$search" --encounter Hexaghost --start rewards --sims 20 --seed 2
expect 0 "^boss: 5 starts" "sf-play --starts prints the distribution per class" -- \
  "$play" --starts 5 --picker random
expect 2 "has no effect with --start rewards" "sf-play: --hp with --start rewards" -- \
  "$play" --start rewards --hp 30
tap_done
