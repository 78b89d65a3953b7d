#!/bin/sh
# Model distribution without a shared filesystem (TAP; docs/operator.md
# "Model distribution"): the coordinator serves its registry's bundles at
# /models/<sha256>; workers started with --fetch-models fetch each job's
# bundle from there into their own cache (giving the job back meanwhile,
# so a long download costs no lease), verify it and evaluate it
# in-process. A worker whose mirror lacks the model is not quarantined for
# it. After a promotion, a worker that holds only the old champion
# keeps playing it (the job is bound to it in the ledger) while it fetches
# the new one in the background, and its next job plays the new one. A
# gpu-evald started with an empty --models dir and --models-url fetches a
# model when a worker first asks for it.
#
# usage: test_fleet_fetch.sh SF_FLEET SF_SHARD BUNDLE SF_MODEL GPU_EVALD
set -u
fleet=$1
shard=$2
bundle=$3
sf_model=$4
evald_exe=$5
sha=$(sha256sum "$bundle" | cut -d' ' -f1)
. "$(dirname "$0")/tap.sh"
tap_scratch sf-fleet-fetch

"$sf_model" random --arch tiny --seed 2 "$tmp/tiny2.safetensors" > /dev/null 2>&1
sha2=$(sha256sum "$tmp/tiny2.safetensors" | cut -d' ' -f1)
mkdir -p "$tmp/reg"
cp "$bundle" "$tmp/reg/$sha.safetensors"
echo "$sha" > "$tmp/reg/champion"
ep="ipc://$tmp/coord.sock"
cat > "$tmp/fetch.yaml" <<EOC
run: {name: fetchtest, output_dir: "$tmp/run", seed: 5}
seeds: {start: 40, count: 32, job_size: 4}
play: {mode: fights, encounters: {weak: 1, strong: 1}}
search: {simulations: 40, trees: 2, evaluator: net}
model: {champion: "$tmp/reg/champion", stagger_s: 0}
evald: {endpoint: "ipc://$tmp/evald.sock", spawn: false, backend: cpu, max_wait_us: 200}
workers: {count: 0, threads: 1, fights_per_thread: 4}
coordinator: {endpoint: "$ep", heartbeat_ms: 200, heartbeat_liveness: 10}
EOC
"$fleet" keygen "$tmp/run/keys" > /dev/null
export SF_KEYS="$tmp/run/keys"
"$fleet" coordinator "$tmp/fetch.yaml" --metrics-port '*' > "$tmp/coord.log" 2>&1 &
pids="$pids $!"
until_true 30 logged "$tmp/coord.log" "metrics http://" || notok "no metrics address" "$(cat "$tmp/coord.log")"
port=$(sed -n 's|.*metrics http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$tmp/coord.log" | head -1)
url="http://127.0.0.1:$port/models/{sha256}"
model_of() { "$shard" stat "$1" | awk '$1 == "model" { print $2 }'; }

# 1. A fresh worker fetches the champion, then plays job 1 with it.
"$fleet" worker --connect "$ep" --id f1 --fetch-models --model-url "$url" \
  --model-cache "$tmp/cache" --max-jobs 1 --scratch "$tmp/w-f1" > "$tmp/worker-f1.log" 2>&1
if [ -s "$tmp/cache/$sha.safetensors" ] && cmp -s "$tmp/cache/$sha.safetensors" "$bundle" &&
  grep -q "job 1: model ${sha%"${sha#????????????}"}... is not here; given back while it is fetched" "$tmp/worker-f1.log" &&
  grep -q "model ${sha%"${sha#????????????}"}... ready: fetched" "$tmp/worker-f1.log"; then
  ok "a worker without the registry gave its first job back, fetched the champion holding no lease, then played"
else
  notok "first fetch" "$(tail -4 "$tmp/worker-f1.log")"
fi
wait_status "$ep" '$1 == "jobs:" && $2 == 1' 30 || notok "job 1 did not finish" "$(tail -3 "$tmp/worker-f1.log")"

# 2. Promotion: the worker holds only the old champion when it asks.
cp "$tmp/tiny2.safetensors" "$tmp/reg/$sha2.safetensors"
echo "$sha2" > "$tmp/reg/champion.tmp" && mv "$tmp/reg/champion.tmp" "$tmp/reg/champion"
"$fleet" worker --connect "$ep" --id f2 --fetch-models --model-url "$url" \
  --model-cache "$tmp/cache" --scratch "$tmp/w-f2" > "$tmp/worker-f2.log" 2>&1 &
pids="$pids $!"
wait_status "$ep" '/COMPLETE/' 90 || notok "the run did not complete" "$(tail -3 "$tmp/worker-f2.log")"
# f2 held only the first champion when it asked: its first job (job 3;
# job 1, bound to the first champion at f1's first lease and given back,
# and job 2, f1's, came before) plays that one while the new one is
# fetched in the background. Every job f2 took after its log says the new
# one is ready, but job 1, plays the new one. Nothing here races the
# fetch: how many jobs come before "ready" is the machine's business.
first=$(sed -n 's/.* worker f2: job \([0-9]*\): seeds .*/\1/p' "$tmp/worker-f2.log" | head -1)
after=$(awk '/ worker f2: model .* ready: fetched/ { r = 1 }
             r && match($0, / worker f2: job [0-9]+: seeds /) {
               split(substr($0, RSTART), a, /[ :]+/); if (a[5] != 1) print a[5] }' "$tmp/worker-f2.log")
bad=""
for j in $after; do
  [ "$(model_of "$tmp/run/shards/fetchtest-job$(printf %06d "$j").shard")" = "$sha2" ] || bad="$bad $j"
done
if [ "$first" = 3 ] && [ "$(model_of "$tmp/run/shards/fetchtest-job000003.shard")" = "$sha" ] &&
  [ -n "$after" ] && [ -z "$bad" ]; then
  ok "job 3 played the old champion while the new one was fetched; jobs $(echo $after | tr ' ' ,) the new one"
else
  notok "models per job: first $first, after the fetch '$after', not the new one '$bad'" "$(grep -E 'job [0-9]+: seeds|ready' "$tmp/worker-f2.log")"
fi
if grep -q "model ${sha2%"${sha2#????????????}"}... ready: fetched" "$tmp/worker-f2.log" &&
  cmp -s "$tmp/cache/$sha2.safetensors" "$tmp/tiny2.safetensors"; then
  ok "the new champion was fetched in the background and verified"
else
  notok "background fetch" "$(grep -i model "$tmp/worker-f2.log" | tail -4)"
fi
metrics=$(curl -s "http://127.0.0.1:$port/metrics")
prev=$(echo "$metrics" | sed -n 's/^spirefleet_leases_on_previous_model_total{run="fetchtest"} \([0-9]*\)$/\1/p')
if echo "$metrics" | grep -q '^spirefleet_model_requests_total{run="fetchtest"} 2$' &&
  [ "${prev:-0}" -ge 1 ]; then
  ok "the coordinator served two bundles and bound $prev lease(s) to the previous champion"
else
  notok "model metrics" "$(echo "$metrics" | grep -E 'model')"
fi
if "$fleet" status "$ep" | grep -q "^champion ${sha2%"${sha2#????????????}"}...: $prev lease(s) went to an earlier champion while workers fetched it"; then
  ok "status says so too"
else
  notok "status: leases on the earlier champion" "$("$fleet" status "$ep" 2>&1 | head -8)"
fi
"$fleet" stop "$ep" > /dev/null 2>&1

# 3. gpu-evald with an empty models dir fetches what a worker asks for.
sed "s|output_dir: \"$tmp/run\"|output_dir: \"$tmp/run2\"|; s|coord.sock|coord2.sock|" "$tmp/fetch.yaml" > "$tmp/fetch2.yaml"
mkdir -p "$tmp/run2" "$tmp/evald-models" && cp -r "$tmp/run/keys" "$tmp/run2/keys"
"$fleet" coordinator "$tmp/fetch2.yaml" --metrics-port '*' > "$tmp/coord2.log" 2>&1 &
pids="$pids $!"
until_true 30 logged "$tmp/coord2.log" "metrics http://" || notok "no metrics address (2)" "$(cat "$tmp/coord2.log")"
port2=$(sed -n 's|.*metrics http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$tmp/coord2.log" | head -1)
"$evald_exe" --backend cpu --models "$tmp/evald-models" \
  --models-url "http://127.0.0.1:$port2/models/{sha256}" --keys "$SF_KEYS" \
  --bind "ipc://$tmp/evald.sock" --max-wait-us 200 > "$tmp/evald.log" 2>&1 &
pids="$pids $!"
# A worker whose mirror lacks the model: its jobs go back uncounted, it
# backs off between tries, and it is not quarantined.
"$fleet" worker --connect "ipc://$tmp/coord2.sock" --id nomirror --fetch-models \
  --model-url "http://127.0.0.1:$port2/none/{sha256}" --model-cache "$tmp/cache-none" \
  --scratch "$tmp/w-none" > "$tmp/worker-none.log" 2>&1 &
nomirror=$!
pids="$pids $nomirror"
three_tries() { [ "$(grep -c 'fetch failed' "$tmp/worker-none.log")" -ge 3 ]; }
until_true 60 three_tries || notok "the worker without a mirror never tried" "$(tail -3 "$tmp/worker-none.log")"
workers=$(curl -s "http://127.0.0.1:$port2/api/workers")
if kill -0 "$nomirror" 2>/dev/null && echo "$workers" | grep -q '"worker_id":"nomirror"' &&
  echo "$workers" | grep -q '"failures":0,"quarantined":false' &&
  grep -q "HTTP status 404" "$tmp/worker-none.log"; then
  ok "a model the mirror lacks is no job failure: three tries, no failure counted, not quarantined"
else
  notok "a missing model counted against the worker" "$workers $(tail -3 "$tmp/worker-none.log")"
fi
kill "$nomirror" 2>/dev/null
wait "$nomirror" 2>/dev/null
"$fleet" worker --connect "ipc://$tmp/coord2.sock" --id g1 --evald "ipc://$tmp/evald.sock" \
  --scratch "$tmp/w-g1" > "$tmp/worker-g1.log" 2>&1 &
pids="$pids $!"
if wait_status "ipc://$tmp/coord2.sock" '/COMPLETE/' 120; then
  ok "a run through a gpu-evald that fetched its model completes"
else
  notok "the gpu-evald run did not complete" "$(tail -3 "$tmp/worker-g1.log"; tail -3 "$tmp/evald.log")"
fi
if grep -q "model $sha2 fetched into" "$tmp/evald.log" && grep -q "model $sha2 hot-loaded" "$tmp/evald.log" &&
  grep -q "does not serve model ${sha2%"${sha2#????????????}"}... yet" "$tmp/worker-g1.log"; then
  ok "gpu-evald fetched the champion into its models dir and hot-loaded it; the worker said it waited for that"
else
  notok "gpu-evald fetch" "$(tail -5 "$tmp/evald.log")"
fi
"$fleet" stop "ipc://$tmp/coord2.sock" > /dev/null 2>&1

tap_done
