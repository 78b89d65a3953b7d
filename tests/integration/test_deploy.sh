#!/bin/sh
# deploy/systemd: the units pass `systemd-analyze verify` (warnings count as
# failures) with their ExecStart paths pointed at this build, the sysusers
# file parses, and the example environment files and the coordinator's
# ExecStartPre are accepted by the binaries. deploy/slurm: the example's
# scripts are the generator's output and pass shellcheck. TAP output.
# usage: test_deploy.sh SOURCE_ROOT SF_FLEET GPU_EVALD
set -u
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
root=$1
fleet=$(abs "$2") # unit files take absolute paths only
evald=$(abs "$3")
units="$root/deploy/systemd"
. "$(dirname "$0")/tap.sh"
tap_scratch sf-deploy

if ! command -v systemd-analyze >/dev/null 2>&1; then
  notok "systemd-analyze is missing (scripts/packages.txt lists systemd)"
  echo "1..$n"
  exit 1
fi

# The units as installed, with /usr/local/bin replaced by this build.
for f in "$units"/*.service; do
  sed -e "s#/usr/local/bin/sf-fleet#$fleet#g" -e "s#/usr/local/bin/gpu-evald#$evald#g" "$f" \
    >"$tmp/$(basename "$f")"
done
for u in spirefleet-coordinator@demo.service spirefleet-worker.service gpu-evald.service; do
  if (cd "$tmp" && systemd-analyze verify "./$u") >"$tmp/verify.out" 2>&1 &&
    [ ! -s "$tmp/verify.out" ]; then
    ok "systemd-analyze verify $u: no error or warning"
  else
    notok "systemd-analyze verify $u: $(head -c 400 "$tmp/verify.out")"
  fi
done
# The check must be able to fail: an unknown key is a warning it reports.
cp "$tmp/spirefleet-worker.service" "$tmp/broken.service"
echo "Restrat=always" >>"$tmp/broken.service"
(cd "$tmp" && systemd-analyze verify ./broken.service) >"$tmp/verify.out" 2>&1
if grep -q "Unknown key 'Restrat'" "$tmp/verify.out"; then
  ok "a misspelt key is reported"
else
  notok "a misspelt key went unreported: $(head -c 300 "$tmp/verify.out")"
fi

mkdir -p "$tmp/root/etc"
if systemd-sysusers --dry-run --root="$tmp/root" "$units/spirefleet.sysusers.conf" \
  >"$tmp/sysusers.out" 2>&1 && grep -q "Creating user 'spirefleet'" "$tmp/sysusers.out"; then
  ok "spirefleet.sysusers.conf creates the spirefleet user"
else
  notok "systemd-sysusers: $(head -c 300 "$tmp/sysusers.out")"
fi

# ExecStartPre of the coordinator unit on the shipped example config.
if "$fleet" check "$root/configs/fleet-example.yaml" >"$tmp/check.out" 2>&1; then
  ok "sf-fleet check (the coordinator's ExecStartPre) accepts configs/fleet-example.yaml"
else
  notok "sf-fleet check configs/fleet-example.yaml: $(head -c 300 "$tmp/check.out")"
fi

# The example environment files, as systemd splits them ($VAR: on spaces).
# gpu-evald: every option parses; the example's models dir does not exist
# here, which is a load error (exit 1), not a usage error (exit 2).
GPU_EVALD_OPTS=$(sed -n 's/^GPU_EVALD_OPTS=//p' "$units/gpu-evald.env.example")
# shellcheck disable=SC2086 # split on spaces, as systemd does
"$evald" $GPU_EVALD_OPTS >"$tmp/evald.out" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -q "/var/lib/spirefleet/models" "$tmp/evald.out"; then
  ok "gpu-evald.env.example: options accepted (exit 1 names the missing models dir)"
else
  notok "gpu-evald.env.example: exit $rc: $(head -c 300 "$tmp/evald.out")"
fi
# worker: with an unreachable coordinator a worker keeps retrying; still
# running after 2 s means the options were accepted (bad ones exit 2 at once).
SF_COORDINATOR=$(sed -n 's/^SF_COORDINATOR=//p' "$units/worker.env.example")
SF_WORKER_OPTS=$(sed -n 's/^SF_WORKER_OPTS=//p' "$units/worker.env.example")
case $SF_COORDINATOR in tcp://*:[0-9]*) ok "worker.env.example: SF_COORDINATOR is a tcp endpoint" ;;
*) notok "worker.env.example: SF_COORDINATOR=$SF_COORDINATOR" ;; esac
# shellcheck disable=SC2086
TMPDIR="$tmp" timeout 2 "$fleet" worker --connect tcp://127.0.0.1:9 $SF_WORKER_OPTS \
  >"$tmp/worker.out" 2>&1
rc=$?
if [ "$rc" = 124 ]; then
  ok "worker.env.example: SF_WORKER_OPTS accepted (worker waiting for its coordinator)"
else
  notok "worker.env.example: exit $rc: $(head -c 300 "$tmp/worker.out")"
fi

# deploy/slurm: the example's scripts are what `sf-fleet slurm` writes for
# deploy/slurm/example.yaml (with the default script directory), byte for
# byte; they pass shellcheck; a bad slurm: value stops the generator with
# the file, line, column and key. (test_slurm.sh runs such scripts.)
slurm_out="$tmp/slurm-example"
if "$fleet" slurm "$root/deploy/slurm/example.yaml" --out "$slurm_out" >"$tmp/slurm.out" 2>&1; then
  same=1
  for f in coordinator.sbatch evald.sbatch worker.sbatch submit.sh; do
    sed "s#$slurm_out#/shared/spirefleet/act1-slurm/slurm#g" "$slurm_out/$f" |
      cmp -s - "$root/deploy/slurm/example/$f" || { same=0; echo "# differs: deploy/slurm/example/$f"; }
  done
  cmp -s "$slurm_out/fleet.yaml" "$root/deploy/slurm/example.yaml" || same=0
  if [ "$same" = 1 ]; then
    ok "deploy/slurm/example/ is what sf-fleet slurm writes for example.yaml"
  else
    notok "deploy/slurm/example/ is stale: regenerate it (deploy/README.md)"
  fi
else
  notok "sf-fleet slurm deploy/slurm/example.yaml: $(head -c 300 "$tmp/slurm.out")"
fi
if command -v shellcheck >/dev/null 2>&1; then
  if shellcheck "$root"/deploy/slurm/example/*.sbatch "$root/deploy/slurm/example/submit.sh" \
    >"$tmp/shellcheck.out" 2>&1; then
    ok "shellcheck finds nothing in deploy/slurm/example/"
  else
    notok "shellcheck deploy/slurm/example: $(head -c 400 "$tmp/shellcheck.out")"
  fi
else
  notok "shellcheck is missing (scripts/packages.txt lists it)"
fi
printf 'run: {name: s}\nseeds: {count: 4}\nslurm:\n  worker_time: "1:00:00"\n  signal_seconds: 7200\n' \
  >"$tmp/bad-slurm.yaml"
tap_dir=$tmp
expect 2 "bad-slurm.yaml:5:19: slurm.signal_seconds: 7200 s is not below slurm.worker_time" \
  "sf-fleet slurm refuses a drain signal after the time limit" -- \
  "$fleet" slurm "$tmp/bad-slurm.yaml" --out "$tmp/never"
printf 'run: {name: s}\nseeds: {count: 4}\nsearch: {evaluator: net}\nmodel: {bundle: /m, sha256: "%s"}\nevald: {endpoint: "ipc:///tmp/e.sock"}\n' \
  "$(printf '%064d' 0)" >"$tmp/ipc-evald.yaml"
expect 2 "evald.endpoint ipc:///tmp/e.sock: gpu-evald runs as a job of its own" \
  "sf-fleet slurm refuses an ipc:// gpu-evald (another node)" -- \
  "$fleet" slurm "$tmp/ipc-evald.yaml" --out "$tmp/never"
printf 'run: {name: s}\nseeds: {count: 4}\nslurm: {workers: 300}\n' >"$tmp/many-slurm.yaml"
expect 2 "slurm.workers 300 share one worker key, above security.max_workers_per_key (256)" \
  "sf-fleet slurm refuses more array tasks than one key may hold" -- \
  "$fleet" slurm "$tmp/many-slurm.yaml" --out "$tmp/never"

tap_done
