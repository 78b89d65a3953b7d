#!/bin/sh
# Missing services are explained, by the tools that meet them (TAP):
#   - a worker whose gpu-evald does not answer says so on its stderr, naming
#     the endpoint and what to do, while it keeps retrying; it tells the
#     coordinator, and `sf-fleet status` shows "workers alive 0 (1 waiting:
#     gpu-evald at ... does not answer (N s))" and a WAITING line;
#   - `sf-shard pull` without --keys, or with a key the run does not list,
#     against a CURVE coordinator says the coordinator refused the
#     connection's security handshake and to pass --keys DIR, and exits 4
#     (exit 4 comes only from the handshake's verdict: a pull that waited
#     out its 30 s bound for a connection exits 3);
#   - status then counts the refused handshakes with a hint;
#   - a worker without --keys says the same on its stderr and keeps
#     retrying.
# Every wait is for a condition, with a generous bound.
#
# usage: test_fleet_explain.sh SF_FLEET SF_SHARD BUNDLE
set -u
fleet=$1
shard=$2
bundle=$3
sha=$(sha256sum "$bundle" | cut -d' ' -f1)
. "$(dirname "$0")/tap.sh"
tap_scratch sf-explain

# A net run whose gpu-evald is never started (ipc: nothing listens there).
evald="ipc://$tmp/no-evald.sock"
cat > "$tmp/c.yaml" <<EOC
run: {name: explain, output_dir: "$tmp/run", seed: 5}
seeds: {start: 40, count: 8, job_size: 4}
play: {mode: fights, encounters: {weak: 1, strong: 1}}
search: {simulations: 40, trees: 2, evaluator: net}
model: {bundle: "$bundle", sha256: "$sha"}
evald: {endpoint: "$evald", spawn: false, backend: cpu}
workers: {count: 1, threads: 1, fights_per_thread: 4}
coordinator: {endpoint: "tcp://127.0.0.1:*", heartbeat_ms: 200, heartbeat_liveness: 10}
EOC
"$fleet" keygen "$tmp/run/keys" > /dev/null # CURVE (docs/operator.md "Security")
export SF_KEYS="$tmp/run/keys"


"$fleet" coordinator "$tmp/c.yaml" --endpoint-file "$tmp/coord.ep" > "$tmp/coord.log" 2>&1 &
coord=$!
pids="$pids $coord"
if until_true 60 test -s "$tmp/coord.ep"; then ep=$(cat "$tmp/coord.ep"); else
  notok "the coordinator did not start" "$(tail -3 "$tmp/coord.log")"
  tap_done
fi

# 1. No gpu-evald: the worker's stderr, then status.
"$fleet" worker --connect "$ep" --id w-noevald --scratch "$tmp/w1" > "$tmp/w1.log" 2>&1 &
w1=$!
pids="$pids $w1"
said="gpu-evald at $evald does not answer ([0-9]* s): start it, or check evald.endpoint in the run's config; retrying"
ok_when_logged 60 "$tmp/w1.log" "$said" \
  "a worker without its gpu-evald says so on stderr, naming the endpoint"
if wait_status "$ep" "/^workers alive 0 \\(1 waiting: gpu-evald at ipc:.*no-evald.sock does not answer \\([0-9]+ s\\)\\)/" 60; then
  ok "status: workers alive 0 (1 waiting: gpu-evald at ... does not answer)"
else
  notok "status does not show the waiting worker" "$("$fleet" status "$ep" 2>&1 | head -5)"
fi
if "$fleet" status "$ep" 2>&1 | grep -q "^WAITING: 1 worker(s) connected but take no job: gpu-evald at"; then
  ok "status: a WAITING line with the reason and what to do"
else
  notok "no WAITING line" "$("$fleet" status "$ep" 2>&1)"
fi
if "$fleet" status "$ep" 2>&1 | head -1 | grep -q "running, WORKERS WAITING"; then
  ok "status's headline says workers wait, not that none is connected"
else
  notok "headline" "$("$fleet" status "$ep" 2>&1 | head -1)"
fi
if kill -0 "$w1" 2>/dev/null; then ok "the worker keeps retrying"; else notok "the worker left"; fi

# 2. sf-shard pull against the CURVE coordinator: no keys, then a key the
# run does not list (the run's server.pub with a key of its own).
# (a refusal the client reads as a mechanism mismatch, or as a hang-up
# before the handshake completed: which depends on who is faster)
expect 4 "coordinator at $ep refused the connection's security handshake.*CURVE keys; pass --keys DIR (the run's keys directory" \
  "pull without --keys: the refused handshake and --keys DIR" -- \
  env -u SF_KEYS "$shard" pull "$ep" "$tmp/pulled"
"$fleet" keygen "$tmp/stranger" > /dev/null
cp "$tmp/run/keys/server.pub" "$tmp/stranger/server.pub"
expect 4 "refused the connection's security handshake: this client's key is not in the run's keys/clients/" \
  "pull with a key the run does not list: refused, said at once" -- \
  "$shard" pull "$ep" "$tmp/pulled" --keys "$tmp/stranger"
expect 0 "0 copied" "pull with the run's keys works" -- "$shard" pull "$ep" "$tmp/pulled"
if wait_status "$ep" '/^REFUSED HANDSHAKES: [1-9][0-9]* connection\(s\) failed the CURVE handshake/' 30 &&
  "$fleet" status "$ep" 2>&1 | grep "^REFUSED HANDSHAKES" | grep -q "give workers and tools --keys DIR"; then
  ok "status counts refused handshakes, with the hint"
else
  notok "no REFUSED HANDSHAKES line" "$("$fleet" status "$ep" 2>&1)"
fi

# 3. A worker without --keys says what is wrong within its first tries.
env -u SF_KEYS "$fleet" worker --connect "$ep" --id w-nokeys --scratch "$tmp/w2" > "$tmp/w2.log" 2>&1 &
w2=$!
pids="$pids $w2"
ok_when_logged 60 "$tmp/w2.log" "coordinator at $ep .*pass --keys DIR (the run's keys directory, see docs/operator.md \"Security\"); retrying in" \
  "a worker without --keys says to pass --keys DIR"

# Every process this script started, by its id.
for p in $w2 $w1 $coord; do kill "$p" 2>/dev/null; done
for p in $w2 $w1 $coord; do wait "$p" 2>/dev/null; done
pids=""
tap_done
