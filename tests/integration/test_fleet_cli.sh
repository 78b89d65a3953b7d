#!/bin/sh
# What sf-fleet tells its operator (TAP): the progress bar on a terminal
# (an unknown ETA reads "ETA --"; a coordinator log line clears the bar's
# line first, never lands inside it); a gate that stops early says so;
# `check` and `slurm` warn alike about a placeholder model SHA-256;
# `status RUN_DIR` shows any run's status: from the coordinator serving it,
# else from its ledger, and names a directory that holds no run.
#
# usage: test_fleet_cli.sh SF_FLEET
set -u
fleet=$1
. "$(dirname "$0")/tap.sh"
tap_scratch sf-fleet-cli

# 1. A gate run on a terminal (script(1) gives it one): it draws the bar,
# and the coordinator logs the verdict while the bar is up.
cat >"$tmp/gate.yaml" <<EOF
run: {name: clig, output_dir: "$tmp/gate", seed: 11, kind: gate}
seeds: {start: 7000, count: 400, job_size: 10}
play: {mode: fights, encounters: {weak: 1, strong: 2, elite: 2}}
search: {simulations: 40, trees: 1}
champion: {evaluator: rollout, simulations: 3}
candidate: {evaluator: rollout, simulations: 100, trees: 2}
gate: {min_pairs: 40, max_pairs: 400, delta1: 0.1}
workers: {count: 2, threads: 1, fights_per_thread: 4}
coordinator: {endpoint: "tcp://127.0.0.1:*", lease_seconds: 30, heartbeat_ms: 100}
EOF
if command -v script >/dev/null 2>&1; then
  script -qfec "'$fleet' run '$tmp/gate.yaml'" /dev/null >"$tmp/tty.out" 2>&1
  # the first bar is drawn before any job is stored: no estimate yet
  if grep -aq 'ETA --' "$tmp/tty.out" && ! grep -aq 'ETA ?' "$tmp/tty.out"; then
    ok "an unknown ETA reads 'ETA --'"
  else
    notok "an unknown ETA reads 'ETA --'" "$(grep -ao 'ETA [^ ]*' "$tmp/tty.out" | sort -u | head -3)"
  fi
  # every coordinator line starts its terminal line: at a line start, or
  # right after the erase-line that clears the bar (ESC [ K)
  esc=$(printf '\033')
  inside=$(grep -a 'coordinator: ' "$tmp/tty.out" | grep -av "^coordinator: \|${esc}\[Kcoordinator: ")
  if grep -aq 'coordinator: gate clig: promote' "$tmp/tty.out" && [ -z "$inside" ]; then
    ok "coordinator log lines clear the progress bar's line first"
  else
    notok "a coordinator log line lands inside the progress bar" "$(printf '%s' "$inside" | tr -d '\r' | head -c 300)"
  fi
  if grep -aq 'run clig complete: the gate stopped early at pair [0-9]* of 400: promote' "$tmp/tty.out"; then
    ok "the coordinator says the gate stopped early, at which pair, with the verdict"
  else
    notok "the coordinator says the gate stopped early" "$(grep -a 'complete' "$tmp/tty.out" | head -3)"
  fi
else
  for t in "an unknown ETA reads 'ETA --'" "coordinator log lines clear the bar" "early stop said"; do
    echo "ok - # SKIP $t: no script(1)"
  done
fi

# 2. A placeholder model.sha256: `check` and `slurm` give the same warning.
zeros=0000000000000000000000000000000000000000000000000000000000000000
cat >"$tmp/ph.yaml" <<EOF
run: {name: cliph, output_dir: "$tmp/ph"}
seeds: {start: 0, count: 8, job_size: 4}
play: {mode: fights, encounters: {weak: 1}}
search: {evaluator: net, simulations: 20, trees: 1}
model: {bundle: "$tmp/none.safetensors", sha256: $zeros}
evald: {endpoint: "tcp://127.0.0.1:*"}
EOF
warning="warning: $tmp/ph.yaml: model.sha256 is all zeros, a placeholder"
expect 0 "$warning" "check warns about a placeholder model.sha256" -- "$fleet" check "$tmp/ph.yaml"
grep "$warning" "$tmp/out" >"$tmp/check.warn"
expect 0 "$warning" "slurm warns about a placeholder model.sha256" -- \
  "$fleet" slurm "$tmp/ph.yaml" --out "$tmp/slurm"
grep "$warning" "$tmp/out" >"$tmp/slurm.warn"
if [ -s "$tmp/check.warn" ] && cmp -s "$tmp/check.warn" "$tmp/slurm.warn"; then
  ok "check and slurm print the same warning line"
else
  notok "check and slurm print the same warning line" "$(cat "$tmp/check.warn" "$tmp/slurm.warn")"
fi

# 3. status RUN_DIR.
cat >"$tmp/sp.yaml" <<EOF
run: {name: clis, output_dir: "$tmp/sp", seed: 3}
seeds: {start: 0, count: 8, job_size: 4}
play: {mode: fights, encounters: {weak: 1}}
search: {simulations: 20, trees: 1}
workers: {count: 1, threads: 1, fights_per_thread: 2}
coordinator: {endpoint: "tcp://127.0.0.1:*"}
EOF
sed "s|$tmp/sp\"|$tmp/live\"|" "$tmp/sp.yaml" >"$tmp/live.yaml"
sed "s|$tmp/sp\"|$tmp/gone\"|" "$tmp/sp.yaml" >"$tmp/gone.yaml"
"$fleet" run "$tmp/sp.yaml" >"$tmp/sp.log" 2>&1
expect 0 "^jobs: 2 done, 0 leased, 0 pending of 2" \
  "status RUN_DIR of a finished self-play run: its ledger" -- "$fleet" status "$tmp/sp"
out_has "^run clis (config [0-9a-f]*)  COMPLETE" "... says COMPLETE"
if [ -d "$tmp/gate" ]; then
  expect 0 "^gate: promote after [0-9]* pairs" "status RUN_DIR of a gate run shows its verdict" -- \
    "$fleet" status "$tmp/gate"
fi

# serve DIR: a coordinator of $tmp/DIR.yaml (no workers) in the background,
# its pid in $coord, once it has published its endpoint in the output dir
serve() {
  "$fleet" coordinator "$tmp/$1.yaml" >"$tmp/$1.log" 2>&1 &
  coord=$!
  pids="$pids $coord"
  i=0
  while [ ! -s "$tmp/$1/coordinator.endpoint" ] && [ $i -lt 300 ]; do
    sleep 0.1
    i=$((i + 1))
  done
}

serve live
expect 0 "^security: CURVE" "status RUN_DIR asks the coordinator serving the run" -- \
  "$fleet" status "$tmp/live"
out_has "^jobs: 0 done, 0 leased, 2 pending of 2" "... and shows its job counts"
kill "$coord"
wait "$coord" 2>/dev/null
if [ ! -e "$tmp/live/coordinator.endpoint" ]; then
  ok "a coordinator that stops removes its endpoint file"
else
  notok "a coordinator that stops removes its endpoint file"
fi
expect 0 "STOPPED: no coordinator serves it" "status RUN_DIR of a stopped run: its ledger" -- \
  "$fleet" status "$tmp/live"

# killed with -9, a coordinator leaves its endpoint file: no answer there,
# said, then the ledger
serve gone
kill -9 "$coord"
wait "$coord" 2>/dev/null
expect 0 "STOPPED: no coordinator serves it" \
  "status RUN_DIR with a dead coordinator's endpoint file: its ledger" -- \
  "$fleet" status "$tmp/gone"
out_has "no answer from the coordinator at" "... after saying the coordinator does not answer"

mkdir "$tmp/empty"
expect 2 "status: $tmp/empty: no run here" "status of a directory without a run names it" -- \
  "$fleet" status "$tmp/empty"

tap_done
