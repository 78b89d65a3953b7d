#!/bin/sh
# sf-model and gpu-evald on the command line, TAP output: exit statuses and
# messages for good and bad bundles, SHA pins, canary refusal, and a real
# server start, metrics scrape and SIGTERM stop.
# usage: test_evald_cli.sh SF_MODEL GPU_EVALD  (PYTHONPATH: <build>/python)
set -u
sfm=$1
evald=$2
. "$(dirname "$0")/tap.sh"
tap_scratch sf-evald-cli

mkdir "$tmp/models" "$tmp/bad"
"$sfm" random --arch tiny --seed 1 --canary 4 "$tmp/models/tiny.safetensors" >"$tmp/r.out"
sha=$(cut -d' ' -f1 "$tmp/r.out")
wrong=0000000000000000000000000000000000000000000000000000000000000000
expect 0 "sha256      $sha" "sf-model info shows the digest sf-model random printed" -- \
  "$sfm" info "$tmp/models/tiny.safetensors"
expect 0 "arch        tiny (d_model 64, n_layers 2, n_heads 4" "sf-model info shows the arch" -- \
  "$sfm" info "$tmp/models/tiny.safetensors"
expect 0 "(matches the pin)" "verify with the right pin" -- \
  "$sfm" verify --sha256 "$sha" "$tmp/models/tiny.safetensors"
expect 1 "SHA-256 mismatch: the file is $sha, the pin expects $wrong" "verify with a wrong pin" -- \
  "$sfm" verify --sha256 "$wrong" "$tmp/models/tiny.safetensors"
upper=$(printf '%s' "$sha" | tr a-f A-F)
expect 0 "(matches the pin)" "verify with the right pin typed in upper case" -- \
  "$sfm" verify --sha256 "$upper" "$tmp/models/tiny.safetensors"
expect 2 "sf-model: --sha256: 'xyz' is not 64 hex digits (it has 3 characters)" \
  "a malformed --sha256 is a usage error that says why" -- \
  "$sfm" verify --sha256 xyz "$tmp/models/tiny.safetensors"
printf 'not a bundle\n' >"$tmp/text.safetensors"
expect 1 "header length" "a text file is not a bundle" -- "$sfm" info "$tmp/text.safetensors"
# An input path that is no regular file is refused before any read, naming
# it: a FIFO would block the open until a writer came (timeout 10: the bound
# a regression runs into, exit 124).
mkfifo "$tmp/fifo.safetensors"
expect 1 "fifo.safetensors: not a regular file (a FIFO)" "sf-model verify refuses a FIFO at once" \
  -- timeout 10 "$sfm" verify "$tmp/fifo.safetensors"
expect 1 "fifo.safetensors: not a regular file (a FIFO)" "sf-model info refuses a FIFO at once" \
  -- timeout 10 "$sfm" info "$tmp/fifo.safetensors"
expect 1 "fifo.safetensors: not a regular file (a FIFO)" "gpu-evald --model refuses a FIFO at once" \
  -- timeout 10 "$evald" --backend cpu --model "$tmp/fifo.safetensors" --bind tcp://127.0.0.1:0
expect 1 "models: not a regular file (a directory)" "sf-model verify refuses a directory" -- \
  timeout 10 "$sfm" verify "$tmp/models"
expect 2 "usage: sf-model" "no arguments is a usage error" -- "$sfm"
expect 2 "usage: sf-model" "an unknown command is a usage error" -- "$sfm" frobnicate x
expect 2 "expected cpu or cuda" "an unknown backend is a usage error" -- \
  "$sfm" verify --backend tpu "$tmp/models/tiny.safetensors"

# A bundle whose canary says something the network does not compute.
$py - "$tmp/models/tiny.safetensors" "$tmp/bad/tampered.safetensors" <<'PYEOF'
import sys
from spirefleet.model import read_safetensors, write_safetensors
t, m = read_safetensors(sys.argv[1])
t["canary.p_win"][1] += 0.5
write_safetensors(sys.argv[2], t, m)
PYEOF
expect 1 "canary failed on the cpu backend in fp32: golden position 1 output p_win" \
  "verify names the canary failure" -- "$sfm" verify "$tmp/bad/tampered.safetensors"
expect 1 "(fp32 tolerance of p_win: abs 0.0001 + rel 1e-05 x |expected|)" \
  "verify names the tolerance that refused it, both parts" -- \
  "$sfm" verify "$tmp/bad/tampered.safetensors"
expect 3 "refusing to serve" "gpu-evald with only a canary-failing model refuses to serve" -- \
  "$evald" --backend cpu --models "$tmp/bad" --bind tcp://127.0.0.1:0 --max-batch 8 \
  --max-wait-us 100
grep -q "canary FAILED for model" "$tmp/out" && ok "its log line says canary FAILED" ||
  notok "no 'canary FAILED' log line: $(head -c 300 "$tmp/out")"
expect 1 "SHA-256 mismatch" "gpu-evald --model PATH@WRONG_SHA is a load error" -- \
  "$evald" --backend cpu --model "$tmp/models/tiny.safetensors@$wrong" \
  --bind tcp://127.0.0.1:0 --max-batch 8 --max-wait-us 100
expect 1 "the pin expects ${wrong%??}ab" "gpu-evald keeps a pin typed in upper case in lower case" \
  -- "$evald" --backend cpu --model "$tmp/models/tiny.safetensors@${wrong%??}AB" \
  --bind tcp://127.0.0.1:0 --max-batch 8 --max-wait-us 100
expect 2 "usage: gpu-evald" "gpu-evald without --bind is a usage error" -- \
  "$evald" --backend cpu --models "$tmp/models"
expect 2 "--max-batch 0: expected an integer in 1..65536" "a zero max batch is refused" -- \
  "$evald" --backend cpu --models "$tmp/models" --bind tcp://127.0.0.1:0 --max-batch 0 \
  --max-wait-us 100
expect 1 "cuda backend" "gpu-evald --backend cuda without a GPU says so" -- \
  "$evald" --backend cuda --models "$tmp/models" --bind tcp://127.0.0.1:0 --max-batch 8 \
  --max-wait-us 100

mkdir "$tmp/empty"
expect 1 "models dir $tmp/nope: No such file or directory" "a missing models dir is named" -- \
  "$evald" --backend cpu --models "$tmp/nope" --bind tcp://127.0.0.1:0
expect 1 "models dir $tmp/empty holds no \*.safetensors bundle" "an empty models dir is an error" -- \
  "$evald" --backend cpu --models "$tmp/empty" --bind tcp://127.0.0.1:0
expect 2 "'xyz' after '@' is not a 64-digit hex SHA-256" "a malformed pin is a usage error" -- \
  "$evald" --backend cpu --model "$tmp/models/tiny.safetensors@xyz" --bind tcp://127.0.0.1:0
expect 2 "unknown or ambiguous option --bogus" "an unknown last option is named as unknown" -- \
  "$evald" --backend cpu --bogus
expect 2 "gpu-evald: --bind needs a value" "a last option without its value is named" -- \
  "$evald" --backend cpu --models "$tmp/models" --bind
expect 2 "unexpected argument extra" "a stray argument is a usage error" -- \
  "$evald" --backend cpu --models "$tmp/models" --bind tcp://127.0.0.1:0 extra
expect 1 "models dir $tmp/nope" "--option=value is read as --option value" -- \
  "$evald" --backend=cpu --models="$tmp/nope" --bind=tcp://127.0.0.1:0
expect 0 "usage: sf-model info BUNDLE" "sf-model --help exits 0" -- "$sfm" --help
expect 2 "sf-model: --canary 0: bad value" "a count out of range names its option" -- \
  "$sfm" random --arch tiny --canary 0 "$tmp/c.safetensors"
expect 2 "sf-model: unknown or ambiguous option --bogus" "sf-model names an unknown option" -- \
  "$sfm" info --bogus
expect 2 "--tolerance abc: expected a number" "sf-model checks numeric flags" -- \
  "$sfm" parity --tolerance abc "$tmp/models/tiny.safetensors"

# A real start: serve, scrape /metrics, stop with SIGTERM.
"$evald" --backend cpu --models "$tmp/models" --bind 'tcp://127.0.0.1:*' --max-batch 8 \
  --max-wait-us 100 --metrics-port '*' >"$tmp/serve.log" 2>&1 &
pid=$!
pids=$pid
for _ in $(seq 1 100); do
  grep -q "serving 1 model" "$tmp/serve.log" && break
  sleep 0.1
done
port=$(sed -n 's|.*metrics http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$tmp/serve.log")
if [ -n "$port" ] && $py -c 'import sys, urllib.request
sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
    "http://127.0.0.1:$port/metrics" >"$tmp/metrics" &&
  grep -q "sf_evald_canary_ok{model=\"$sha\"} 1" "$tmp/metrics" &&
  grep -q "sf_evald_canary_tolerance_ratio{model=\"$sha\"} 0$" "$tmp/metrics"; then
  ok "gpu-evald serves and /metrics shows the model's canary ok (0 of its tolerance)"
else
  notok "no metrics: $(cat "$tmp/serve.log")"
fi
kill -TERM "$pid"
wait "$pid"
st=$?
pids=
if [ "$st" = 0 ] && grep -q "gpu-evald: stopped" "$tmp/serve.log"; then
  ok "SIGTERM stops gpu-evald cleanly (exit 0)"
else
  notok "stop: exit $st: $(tail -3 "$tmp/serve.log")"
fi

# Without --keys anyone who reaches --bind is served: gpu-evald binds only an
# address of this machine alone then (loopback tcp://, ipc://, inproc://),
# and refuses any other before it loads a model, unless --security none
# (security.mode: none's flag) says plain ZeroMQ on purpose. (timeout: a
# gpu-evald that served instead would never exit.)
expect 2 "gpu-evald: --bind tcp://0.0.0.0:\* is reachable from other machines and there are no keys" \
  "without --keys a non-loopback --bind is refused, naming the address" -- \
  timeout 20 "$evald" --backend cpu --models "$tmp/models" --bind 'tcp://0.0.0.0:*' --max-batch 8 \
  --max-wait-us 100
if grep -q "Pass --keys DIR (a key directory made with \`sf-fleet keygen DIR\`), or --security none" \
  "$tmp/out" && ! grep -q "canary" "$tmp/out"; then
  ok "the refusal says to pass --keys DIR or --security none, before loading a model"
else
  notok "the refusal's advice: $(head -c 300 "$tmp/out")"
fi
expect 2 "gpu-evald: --security curve: the only value is none (CURVE is --keys DIR)" \
  "--security takes none only" -- \
  timeout 20 "$evald" --backend cpu --models "$tmp/models" --bind 'tcp://0.0.0.0:*' --security curve
expect 2 "gpu-evald: --keys and --security none contradict each other" \
  "--keys with --security none is a usage error" -- \
  timeout 20 "$evald" --backend cpu --models "$tmp/models" --bind 'tcp://0.0.0.0:*' --security none \
  --keys "$tmp/keys"

# serves LOG ARGS...: start gpu-evald with ARGS (logging to LOG), wait until
# it serves (10 s at most), stop it with SIGTERM; 0 when it served and
# stopped cleanly.
serves() {
  log=$1
  shift
  "$evald" --backend cpu --models "$tmp/models" --max-batch 8 --max-wait-us 100 "$@" \
    >"$log" 2>&1 &
  pid=$!
  pids=$pid
  i=0
  while [ $i -lt 100 ] && ! grep -q "serving 1 model" "$log" && kill -0 "$pid" 2>/dev/null; do
    sleep 0.1
    i=$((i + 1))
  done
  grep -q "serving 1 model" "$log"
  up=$?
  kill -TERM "$pid" 2>/dev/null
  wait "$pid"
  st=$?
  pids=
  [ "$up" = 0 ] && [ "$st" = 0 ]
}
if serves "$tmp/plain.log" --bind 'tcp://0.0.0.0:*' --security none &&
  grep -q "WARNING: no --keys: plain ZeroMQ" "$tmp/plain.log"; then
  ok "--security none serves plain on tcp://0.0.0.0:* (warned) and stops on SIGTERM"
else
  notok "--security none: $(tail -3 "$tmp/plain.log")"
fi
if serves "$tmp/ipc.log" --bind "ipc://$tmp/evald.sock"; then
  ok "ipc:// needs no --keys"
else
  notok "ipc:// without --keys: $(tail -3 "$tmp/ipc.log")"
fi

tap_done
