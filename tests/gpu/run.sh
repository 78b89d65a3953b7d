#!/bin/sh
# tests/gpu/run.sh — the GPU check, as one script for a machine with an
# NVIDIA GPU (docs/benchmarks.md, "GPU"). It
#   1. uses gpu-pack/sf-model when tests/gpu/pack.sh made one, else builds
#      sf-model with the cuda backend (-Dgpu=enabled, release) in build-gpu/
#      (or $GPU_BUILD),
#   2. writes random tiny and base bundles (sf-model random: no PyTorch
#      needed; their canaries come from the cpu backend),
#   3. checks parity: each bundle's canary on cuda/fp32, then cuda against
#      cpu on 256 synthetic positions: <= 1e-4 in fp32 (TF32 off), <= 2e-2
#      in tf32 and bf16,
#   4. prints evals/s, matmul GFLOP/s and p50/p99 latency of `base` on cuda at
#      batch 64, 256 and 1024 (48-token positions) for bf16, tf32 and fp32,
#      with the cpu backend at batch 64 for comparison.
# Everything it prints also goes to $OUT/summary.txt and every figure as a
# JSON line to $OUT/results.jsonl ($OUT defaults to a new temporary
# directory). Exit status 0 only if every parity check passed.
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
  if ! timeout 600 ninja -C "$build" gpu-evald/sf-model >"$out/build.log" 2>&1; then
    tail -30 "$out/build.log"
    log "build failed (see $out/build.log)"
    exit 1
  fi
  sfm="$build/gpu-evald/sf-model"
fi
if ldd "$sfm" | grep -q 'not found'; then
  ldd "$sfm" | grep 'not found' | tee -a "$out/summary.txt"
  log "sf-model cannot find the libraries above (LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-})"
  exit 1
fi

timeout 60 "$sfm" random --arch tiny --seed 1 --canary 16 "$work/tiny.safetensors" | tee -a "$out/summary.txt"
timeout 120 "$sfm" random --arch base --seed 2 --canary 32 "$work/base.safetensors" | tee -a "$out/summary.txt"

check() { # check LABEL -- command...
  label=$1
  shift 2
  t=$(budget 90)
  if [ "$t" = 0 ]; then
    log "SKIP $label: past the deadline"
    status=1
    return
  fi
  if timeout "$t" "$@" >"$work/step.txt" 2>&1; then
    log "PASS $label: $(grep -v '^{' "$work/step.txt" | tail -1)"
  else
    log "FAIL $label: $(tail -3 "$work/step.txt")"
    status=1
  fi
  grep '^{' "$work/step.txt" >>"$out/results.jsonl" || true
}

for arch in tiny base; do
  b="$work/$arch.safetensors"
  check "$arch canary on cuda/fp32" -- "$sfm" verify --backend cuda --precision fp32 "$b"
  check "$arch parity cuda/fp32 vs cpu (<= 1e-4)" -- "$sfm" parity --precision fp32 "$b"
  check "$arch parity cuda/tf32 vs cpu (<= 2e-2)" -- "$sfm" parity --precision tf32 "$b"
  check "$arch parity cuda/bf16 vs cpu (<= 2e-2)" -- "$sfm" parity --precision bf16 "$b"
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
