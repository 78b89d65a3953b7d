#!/bin/sh
# tests/gpu/run.sh — the GPU check, as one script for a machine with an
# NVIDIA GPU (docs/benchmarks.md, "GPU"). It
#   1. uses gpu-pack/sf-model when tests/gpu/pack.sh made one, else builds
#      sf-model with the cuda backend (-Dgpu=enabled, release) in build-gpu/
#      (or $GPU_BUILD),
#   2. writes random tiny and base bundles (sf-model random: no PyTorch
#      needed; their canaries and tolerances come from the cpu backend) and
#      takes the trained tiny bundle tests/fixtures/models/
#      trained-tiny.safetensors (PyTorch-made: raw-unit forecasts of tens,
#      confident logits), and records what the cpu emulation of tf32 and
#      bf16 predicts for each (sf-model emulate),
#   3. checks each bundle on cuda against its own canary tolerances
#      (docs/model.md "Canary tolerances": per output |got - want| <= abs +
#      rel |want|, per precision): its canary in fp32, tf32 and bf16 (what
#      gpu-evald does before serving), then parity, cuda against cpu on 256
#      synthetic positions, in each precision (sf-model parity: the
#      bundle's tolerances of that precision),
#   4. prints evals/s, matmul GFLOP/s and p50/p99 latency of `base` on cuda at
#      batch 64, 256 and 1024 (48-token positions) for bf16, tf32 and fp32,
#      with the cpu backend at batch 64 for comparison.
# Everything it prints also goes to $OUT/summary.txt and every figure as a
# JSON line to $OUT/results.jsonl ($OUT defaults to a new temporary
# directory); the trained bundle's figures are named trained_tiny. Exit
# status 0 only if every parity check passed. On a machine without a usable
# GPU the script still runs: every cuda step is reported as FAIL with
# sf-model's "cuda backend: no usable GPU: ..." and the status is 1.
# Budget: a few minutes on an H100/H200 class machine (the build is most of
# it); every step is bounded by `timeout` and the whole check by
# $GPU_DEADLINE_S (default 720 s) counted from its start. On a machine without the
# project's build dependencies (no package registry), run tests/gpu/pack.sh
# on a build machine first and bring gpu-pack/ along: then nothing is built
# here and sf-model finds cuBLAS in this machine's CUDA (toolkit or wheels).
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-$(mktemp -d)}
# Bundles and scratch output stay out of $OUT, which keeps only the reports
# (summary.txt, results.jsonl, gpus.txt, and the build logs on failure).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build=${GPU_BUILD:-build-gpu}
mkdir -p "$out"
log() { echo "gpu-check: $*" | tee -a "$out/summary.txt"; }
status=0
# One deadline for the whole check (a GPU machine may be lent for minutes):
# each step gets at most its own limit and what is left; once the deadline
# has passed, the remaining steps are skipped and reported as such.
deadline=$(($(date +%s) + ${GPU_DEADLINE_S:-720}))
budget() { # budget STEP_LIMIT: seconds this step may take (0: skip it)
  left=$((deadline - $(date +%s)))
  if [ "$left" -lt 10 ]; then echo 0; elif [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}

# The CUDA libraries of this machine: the toolkit's and those of the NVIDIA
# Python wheels (nvidia-cublas-*, nvidia-cuda-runtime-*), whichever exist.
cuda_lib_path() {
  p=""
  for d in "${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64 \
    /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && p="$p:$d"
  done
  if command -v python3 >/dev/null 2>&1; then
    for d in $(python3 -c 'import glob, site
dirs = site.getsitepackages() + [site.getusersitepackages()]
print(" ".join(sorted({g for d in dirs for g in glob.glob(d + "/nvidia/*/lib")})))' 2>/dev/null); do
      p="$p:$d"
    done
  fi
  echo "${p#:}"
}

{ nvidia-smi -L && nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total \
  --format=csv || echo "nvidia-smi not available"; } 2>&1 | tee "$out/gpus.txt"
pack=${GPU_PACK:-gpu-pack}
if [ -x "$pack/sf-model" ]; then
  # Prebuilt by tests/gpu/pack.sh on a build machine: no compiler or
  # libraries needed here beyond CUDA's own.
  sfm="$pack/sf-model"
  export LD_LIBRARY_PATH="$pack/lib:$(cuda_lib_path)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  log "using the prebuilt $sfm (commit $(cat "$pack/commit.txt" 2>/dev/null))"
else
  missing=""
  for tool in meson ninja nvcc pkg-config; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
  done
  if [ -n "$missing" ]; then
    log "missing tools:$missing (scripts/packages.txt lists the Debian packages; CUDA's bin/ must be on PATH); or run tests/gpu/pack.sh on a build machine and bring gpu-pack/"
    exit 1
  fi
  if [ ! -f "$build/build.ninja" ]; then
    log "configuring $build (-Dgpu=enabled, release)"
    if ! timeout 300 meson setup "$build" -Dgpu=enabled -Dtests=disabled -Dbuildtype=release \
        >"$out/setup.log" 2>&1; then
      tail -30 "$out/setup.log"
      log "meson setup failed (see $out/setup.log)"
      exit 1
    fi
  fi
  log "building sf-model"
  if ! timeout 600 ninja -C "$build" model/sf-model >"$out/build.log" 2>&1; then
    tail -30 "$out/build.log"
    log "build failed (see $out/build.log)"
    exit 1
  fi
  sfm="$build/model/sf-model"
fi
if ldd "$sfm" | grep -q 'not found'; then
  ldd "$sfm" | grep 'not found' | tee -a "$out/summary.txt"
  log "sf-model cannot find the libraries above (LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-})"
  exit 1
fi

timeout 60 "$sfm" random --arch tiny --seed 1 --canary 16 "$work/tiny.safetensors" | tee -a "$out/summary.txt"
timeout 120 "$sfm" random --arch base --seed 2 --canary 32 "$work/base.safetensors" | tee -a "$out/summary.txt"
bundles="tiny base"
trained=tests/fixtures/models/trained-tiny.safetensors
if [ -f "$trained" ]; then
  cp "$trained" "$work/trained.safetensors"
  bundles="$bundles trained"
else
  log "FAIL the trained bundle $trained is missing"
  status=1
fi

# check LABEL [SED] -- command...: run one step; its JSON lines go to
# results.jsonl, edited by the sed expression SED when one is given.
check() {
  label=$1
  shift
  sedexpr=
  if [ "$1" != "--" ]; then
    sedexpr=$1
    shift
  fi
  shift
  t=$(budget 90)
  if [ "$t" = 0 ]; then
    log "SKIP $label: past the deadline"
    status=1
    return
  fi
  if timeout "$t" "$@" >"$work/step.txt" 2>&1; then
    log "PASS $label: $(grep -v '^{' "$work/step.txt" | grep -v '^  ' | tail -1)"
  else
    log "FAIL $label: $(grep -v '^{' "$work/step.txt" | tail -3)"
    status=1
  fi
  grep '^{' "$work/step.txt" | sed "${sedexpr}" >>"$out/results.jsonl" || true
}

for name in $bundles; do
  b="$work/$name.safetensors"
  # the trained bundle's arch is tiny too: name its figures trained_tiny
  rename=
  [ "$name" = trained ] && rename='s/\(evald\.[a-z_]*\)_tiny_/\1_trained_tiny_/'
  log "$name: $(timeout 60 "$sfm" info "$b" | grep -A3 '^tolerances' | tr -s ' ' | tr '\n' ';')"
  check "$name canary, cpu emulation of fp32/tf32/bf16 (the prediction)" "$rename" -- \
    "$sfm" emulate "$b"
  for prec in fp32 tf32 bf16; do
    check "$name canary on cuda/$prec (the bundle's $prec tolerances)" -- \
      "$sfm" verify --backend cuda --precision "$prec" "$b"
  done
  for prec in fp32 tf32 bf16; do
    check "$name parity cuda/$prec vs cpu (the bundle's $prec tolerances)" "$rename" -- \
      "$sfm" parity --precision "$prec" "$b"
  done
done

log "benchmarks: base, 48 tokens and 8 queries per position"
for prec in bf16 tf32 fp32; do
  t=$(budget 60)
  if [ "$t" = 0 ]; then
    log "SKIP bench $prec: past the deadline"
    status=1
    continue
  fi
  timeout "$t" "$sfm" bench --backend cuda --precision "$prec" --batch 64,256,1024 --seconds 4 \
    --tokens 48 --queries 8 "$work/base.safetensors" >"$work/step.txt" 2>&1 || status=1
  grep -v '^{' "$work/step.txt" | tee -a "$out/summary.txt"
  grep '^{' "$work/step.txt" >>"$out/results.jsonl" || true
done
t=$(budget 30)
[ "$t" != 0 ] && timeout "$t" "$sfm" bench --backend cpu --batch 64 --seconds 3 --tokens 48 \
  --queries 8 "$work/base.safetensors" >"$work/step.txt" 2>&1
grep -v '^{' "$work/step.txt" | tee -a "$out/summary.txt"
grep '^{' "$work/step.txt" >>"$out/results.jsonl" || true

if [ "$status" = 0 ]; then log "all GPU checks passed; figures in $out/results.jsonl"; else
  log "some GPU checks FAILED; see $out/summary.txt"; fi
exit $status
