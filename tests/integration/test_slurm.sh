#!/bin/sh
# Slurm for real (TAP): a single-node Slurm (slurmctld, slurmd and munged
# started here as root, from a slurm.conf written under a temporary
# directory; no systemd) runs a small net fleet from the scripts
# `sf-fleet slurm` writes: the coordinator, gpu-evald (cpu backend, on a
# GPU partition whose one GPU is declared, not real) and a 4-task worker
# array, chained by dependencies. Mid-run one worker task is cancelled, one
# is requeued (it comes back with its restart count raised), and one gets
# the pre-time-limit signal and drains. The run must finish, every shard
# verify, and the content digests equal those of `sf-fleet run` of the same
# config on this machine. Every daemon started here is stopped by pid.
#
# usage: test_slurm.sh SF_FLEET SF_SHARD BUNDLE
# (SF_TEST_KEEP=1 keeps the temporary directory, with every log, for a look
# after a failure.)
set -u
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
fleet=$(abs "$1") # the jobs run in another directory
shard=$2
bundle=$(abs "$3")
. "$(dirname "$0")/tap.sh"

if [ "$(id -u)" != 0 ]; then
  echo "1..0 # SKIP slurmd and slurmctld are started as root (make test runs as root)"
  exit 0
fi
missing=
for t in slurmctld slurmd munged sbatch scontrol squeue scancel sinfo python3; do
  command -v "$t" >/dev/null 2>&1 || missing="$missing $t"
done
if [ -n "$missing" ]; then
  notok "missing:$missing (scripts/packages.txt lists slurm-wlm and munge)"
  tap_done
fi

t_start=$(date +%s)
tmp=$(mktemp -d /tmp/sf-slurm-XXXXXX)
chmod 755 "$tmp" # munged wants the socket's directories traversable by all
conf=$tmp/slurm.conf
# Only the commands below see SLURM_CONF (and the jobs, which inherit it
# from sbatch): so the sweep at the end can tell this cluster's processes
# by their environment without matching this script.
sl() { SLURM_CONF=$conf "$@"; }
munge_pid='' ctld_pid='' slurmd_pid=''

# stop PID: SIGTERM, up to 5 s, then SIGKILL.
stop() {
  [ -n "$1" ] || return 0
  kill "$1" 2>/dev/null || return 0
  for _ in $(seq 1 50); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -9 "$1" 2>/dev/null
}

# Every process of this cluster: the jobs and their slurmstepd carry
# SLURM_CONF=$conf in their environment.
cluster_pids() {
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = $$ ] && continue
    { tr '\0' '\n' <"$d/environ"; } 2>/dev/null | grep -qx "SLURM_CONF=$conf" && echo "$p"
  done
}

stop_cluster() {
  if [ -n "$ctld_pid" ]; then
    sl scancel --quiet --user=root 2>/dev/null
    for _ in $(seq 1 100); do # the jobs' epilogues
      [ -z "$(sl squeue -h -t R,CG 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  stop "$slurmd_pid"
  stop "$ctld_pid"
  for p in $(cluster_pids); do kill -9 "$p" 2>/dev/null; done
  stop "$munge_pid"
  munge_pid='' ctld_pid='' slurmd_pid=''
}
cleanup() {
  stop_cluster
  [ -n "${SF_TEST_KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- the cluster ------------------------------------------------------------
mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/log"
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 700 "$tmp/munge"
chmod 600 "$tmp/munge/munge.key"
munged --foreground --force --socket="$tmp/munge/socket" --key-file="$tmp/munge/munge.key" \
  --pid-file="$tmp/munge/pid" --seed-file="$tmp/munge/seed" --log-file="$tmp/munge/log" \
  >"$tmp/munge/out" 2>&1 &
munge_pid=$!
# Two free ports for slurmctld and slurmd (Slurm takes fixed ports).
ports=$(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
set -- $ports
cat >"$conf" <<EOF
ClusterName=sftest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$1
SlurmdPort=$2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/socket
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# More CPUs than the machine has: the jobs here are small.
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=600
KillWait=5
JobRequeue=1
GresTypes=gpu
NodeName=sfnode NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=8 RealMemory=4000 Gres=gpu:1 State=UNKNOWN
PartitionName=cpu Nodes=sfnode Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=sfnode MaxTime=INFINITE State=UP
EOF
# A GPU in name only: gpu-evald runs its cpu backend inside the allocation.
echo "NodeName=sfnode Name=gpu File=/dev/null" >"$tmp/gres.conf"
t_cluster=$(date +%s.%N)
sl slurmctld -D -i -f "$conf" >"$tmp/log/slurmctld.out" 2>&1 &
ctld_pid=$!
sl slurmd -D -N sfnode -f "$conf" >"$tmp/log/slurmd.out" 2>&1 &
slurmd_pid=$!
up=0
for _ in $(seq 1 200); do
  if sl sinfo -h -o %t 2>/dev/null | grep -q idle; then up=1; break; fi
  sleep 0.1
done
t_up=$(python3 -c "import time; print('%.1f' % (time.time() - $t_cluster))")
if [ "$up" = 1 ]; then
  ok "a single-node Slurm is up in $t_up s (slurmctld $ctld_pid, slurmd $slurmd_pid, munged $munge_pid)"
else
  notok "Slurm did not come up" "$(tail -n 5 "$tmp/log/slurmctld.log" "$tmp/log/slurmd.log" 2>&1)"
  tap_done
fi

# ---- the fleet ----------------------------------------------------------------
sha=$(sha256sum "$bundle" | cut -d' ' -f1)
config() { # FILE OUTPUT_DIR EVALD_ENDPOINT SPAWN
  cat >"$1" <<EOF
run: {name: slurmtest, output_dir: "$2", seed: 11}
seeds: {start: 300, count: 40, job_size: 2}
play: {mode: fights, encounters: {weak: 1, strong: 1}}
search: {simulations: 48, trees: 1, evaluator: net}
model: {bundle: "$bundle", sha256: "$sha"}
evald: {endpoint: "$3", spawn: $4, backend: cpu, max_wait_us: 200}
workers: {count: 2, threads: 1, fights_per_thread: 2}
coordinator: {endpoint: "tcp://127.0.0.1:*", lease_seconds: 20, heartbeat_ms: 200, heartbeat_liveness: 5}
slurm: {partition: cpu, gpu_partition: gpu, worker_time: "10", signal_seconds: 120, workers: 4, workdir: "$tmp"}
EOF
}
config "$tmp/fleet.yaml" run "tcp://127.0.0.1:*" false
if "$fleet" slurm "$tmp/fleet.yaml" --out "$tmp/slurm" >"$tmp/gen.out" 2>&1 &&
  [ -x "$tmp/slurm/submit.sh" ] && [ -f "$tmp/slurm/evald.sbatch" ]; then
  ok "sf-fleet slurm writes fleet.yaml, coordinator, evald and worker scripts and submit.sh"
else
  notok "sf-fleet slurm" "$(head -c 400 "$tmp/gen.out")"
fi
if grep -q -- "--gres=gpu:1" "$tmp/slurm/evald.sbatch" && grep -q -- "--array=0-3" "$tmp/slurm/worker.sbatch" &&
  grep -q -- "--signal=B:USR1@120" "$tmp/slurm/worker.sbatch" &&
  [ "$(grep -c -- "--requeue" "$tmp"/slurm/*.sbatch | awk -F: '{ s += $2 } END { print s }')" = 3 ]; then
  ok "the scripts ask for the GPU, the array, the pre-time-limit signal and --requeue"
else
  notok "sbatch options missing" "$(grep -h '^#SBATCH' "$tmp"/slurm/*.sbatch | tr '\n' ' ')"
fi
if command -v shellcheck >/dev/null 2>&1; then
  if shellcheck "$tmp"/slurm/*.sbatch "$tmp/slurm/submit.sh" >"$tmp/shellcheck.out" 2>&1; then
    ok "shellcheck finds nothing in the scripts"
  else
    notok "shellcheck" "$(head -c 600 "$tmp/shellcheck.out")"
  fi
fi

if sl "$tmp/slurm/submit.sh" >"$tmp/submit.out" 2>&1; then
  ok "submit.sh submits the coordinator, gpu-evald and the worker array"
else
  notok "submit.sh" "$(head -c 400 "$tmp/submit.out")"
  tap_done
fi
coord=$(awk '$1 == "coordinator" { print $2 }' "$tmp/slurm/jobs")
evald=$(awk '$1 == "evald" { print $2 }' "$tmp/slurm/jobs")
array=$(awk '$1 == "workers" { print $2 }' "$tmp/slurm/jobs")
logs=$tmp/slurm/logs
wlog() { echo "$logs/worker-${array}_$1.out"; }
field() { # JOB FIELD: one field of `scontrol show job`
  sl scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}
# until SECONDS COMMAND...: true once the command is, polling every 0.2 s
# (for at most SECONDS x $wait_scale: tap.sh)
until_true() {
  limit=$(($1 * wait_scale * 5))
  shift
  i=0
  while [ $i -lt $limit ]; do
    "$@" && return 0
    sleep 0.2
    i=$((i + 1))
  done
  return 1
}
# Whether worker task $1 holds a job it took less than a second ago (its
# log's last job line starts one): a job lasts about two seconds here, so
# a signal sent now reaches the worker while the job is in hand.
holds_new_job() {
  now=$(date -u +%H:%M:%S.%N)
  grep -E 'worker slurmtest-w[0-9]+-r[0-9]+: job [0-9]+: ' "$(wlog "$1")" 2>/dev/null | tail -n 1 |
    awk -v now="$now" 'function sec(t, p) { split(t, p, ":"); return p[1] * 3600 + p[2] * 60 + p[3] }
      / seeds / { d = sec(now) - sec($1); if (d < 0) d += 86400; found = d < 1.0 }
      END { exit !found }'
}

if until_true 30 holds_new_job 1; then
  ok "the coordinator, gpu-evald and the workers run; task 1 has just taken a job"
else
  notok "worker task 1 never held a job" "$(sl squeue 2>&1 | tail -n 6 | tr '\n' ';') $(tail -n 3 "$(wlog 1)" 2>&1)"
fi
# Task 1: cancelled. Task 2: requeued (and let go after two seconds,
# instead of the two minutes Slurm holds a requeued job back). Task 3: the signal that
# --signal=B:USR1@120 sends before the time limit, sent now through the
# same path (to the batch shell).
sl scancel "${array}_1"
until_true 30 holds_new_job 2
sl scontrol requeue "${array}_2"
sl scancel --signal=USR1 --batch "${array}_3"
requeued_again() { [ "$(field "${array}_2" JobState)" = PENDING ]; }
# (Released in the same second as the requeue, slurmd would refuse the new
# start: the old run's credential is revoked with one-second resolution.)
until_true 20 requeued_again && sleep 2 && sl scontrol update jobid="${array}_2" StartTime=now
restarted() { grep -q "worker slurmtest-w2-r1: job " "$(wlog 2)" 2>/dev/null; }
if until_true 60 restarted && [ "$(field "${array}_2" Restarts)" = 1 ]; then
  ok "the requeued task came back with restart count 1 (worker slurmtest-w2-r1) and plays"
else
  notok "the requeued task did not come back" "state $(field "${array}_2" JobState) restarts $(field "${array}_2" Restarts): $(tail -n 3 "$(wlog 2)" 2>&1)"
fi

coord_done() {
  case $(field "$coord" JobState) in COMPLETED | FAILED | CANCELLED | TIMEOUT) return 0 ;; esac
  return 1
}
if until_true 90 coord_done && [ "$(field "$coord" JobState)" = COMPLETED ] &&
  [ "$(field "$coord" ExitCode)" = 0:0 ]; then
  ok "the coordinator job completes (exit 0) when the run does"
else
  notok "coordinator job $(field "$coord" JobState) $(field "$coord" ExitCode)" "$(tail -n 4 "$logs/coordinator-$coord.out" 2>&1)"
fi
clog=$logs/coordinator-$coord.out
ended() {
  for j in "$evald" "${array}_0" "${array}_1" "${array}_2" "${array}_3"; do
    case $(field "$j" JobState) in PENDING | RUNNING | COMPLETING | CONFIGURING | REQUEUED) return 1 ;; esac
  done
}
until_true 30 ended
states="evald=$(field "$evald" JobState)"
for t in 0 1 2 3; do states="$states w$t=$(field "${array}_$t" JobState)"; done
if ended && [ "$(field "${array}_1" JobState)" = CANCELLED ]; then
  ok "every job ended: $states"
else
  notok "jobs left: $states"
fi
if grep -q "abandoned on slurmtest-w1-r0" "$clog" && grep -q "abandoned on slurmtest-w2-r0" "$clog"; then
  ok "the cancelled and the requeued worker each gave their job back (abandoned, re-issued at once)"
else
  notok "no abandonment logged" "$(grep -E 'abandoned|expired' "$clog" | head -n 4)"
fi
w3=$(wlog 3)
if grep -q "drained after " "$w3" && grep -q "worker slurmtest-w3-r0: exit 3" "$w3" &&
  [ "$(field "${array}_3" JobState)" = COMPLETED ] && ! grep -q "abandoned on slurmtest-w3" "$clog"; then
  ok "the signalled worker drained: finished and uploaded its job, then left (COMPLETED)"
else
  notok "the signalled worker did not drain" "$(field "${array}_3" JobState): $(tail -n 3 "$w3" 2>&1)"
fi
t_slurm=$(($(date +%s) - t_start))
stop_cluster
if [ -z "$(cluster_pids)" ]; then
  ok "every daemon and job process of the cluster is gone"
else
  notok "processes left: $(cluster_pids | tr '\n' ' ')"
fi

# ---- the shards against a local run of the same config ------------------------
digests() { # DIR: "name digest" lines, sorted (a shard that does not verify is left out)
  "$shard" verify "$1" | awk '$1 == "ok" { n = split($2, p, "/"); print p[n], $5 }' | sort
}
"$shard" verify "$tmp/run/shards" >"$tmp/verify.out" 2>&1
good=$(grep -c '^ok ' "$tmp/verify.out")
if [ "$good" = 20 ] && [ "$(ls "$tmp/run/shards" | wc -l)" = 20 ]; then
  ok "20 jobs -> 20 shards, every one verifies"
else
  notok "shards: $good of $(ls "$tmp/run/shards" | wc -l) verify" "$(grep -v '^ok ' "$tmp/verify.out" | head -n 3)"
fi
config "$tmp/local.yaml" "$tmp/local" "ipc://$tmp/evald.sock" true
d_slurm=$("$fleet" check "$tmp/fleet.yaml" | sed -n 's/.*config digest //p')
d_local=$("$fleet" check "$tmp/local.yaml" | sed -n 's/.*config digest //p')
"$fleet" run "$tmp/local.yaml" --workers 2 >"$tmp/local.out" 2>&1
digests "$tmp/run/shards" >"$tmp/d.slurm"
digests "$tmp/local/shards" >"$tmp/d.local"
if [ -n "$d_slurm" ] && [ "$d_slurm" = "$d_local" ] && [ -s "$tmp/d.local" ] &&
  cmp -s "$tmp/d.slurm" "$tmp/d.local"; then
  ok "the same config run locally (digest ${d_local%"${d_local#????????????}"}...) gives the same shard content digests"
else
  notok "digests differ from the local run" "$(diff "$tmp/d.slurm" "$tmp/d.local" | head -n 4) $(tail -n 2 "$tmp/local.out")"
fi
echo "# slurm part ${t_slurm} s, whole test $(($(date +%s) - t_start)) s"
tap_done
