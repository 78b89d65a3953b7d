#!/bin/sh
# tests/gpu/run.sh — the GPU check, as one script for a machine with an
# NVIDIA GPU (docs/benchmarks.md, "GPU"). It
#   1. builds sf-model with the cuda backend (-Dgpu=enabled, release) in
#      build-gpu/ (or $GPU_BUILD),
#   2. writes random tiny and base bundles (sf-model random: no PyTorch
#      needed; their canaries come from the cpu backend),
#   3. checks parity: each bundle's canary on cuda/fp32, then cuda against
#      cpu on 256 synthetic positions: <= 1e-4 in fp32 (TF32 off), <= 2e-2
#      in tf32 and bf16,
#   4. prints evals/s, matmul GFLOP/s and p50/p99 latency of `base` on cuda at
#      batch 64, 256 and 1024 (48-token positions) for bf16, tf32 and fp32,
#      with the cpu backend at batch 64 for comparison.
# Everything it prints (and the bundles) also goes to $OUT (default: a new
# temporary directory). Exit status 0 only if every parity check passed.
# Budget: a few minutes on an H100/H200 class machine (the build is most of
# it); every step is bounded by `timeout`.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-$(mktemp -d)}
build=${GPU_BUILD:-build-gpu}
mkdir -p "$out"
log() { echo "gpu-check: $*" | tee -a "$out/summary.txt"; }
status=0

missing=""
for tool in meson ninja nvcc pkg-config; do
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
  log "missing tools:$missing (scripts/packages.txt lists the Debian packages; CUDA's bin/ must be on PATH)"
  exit 1
fi
{ nvidia-smi -L || echo "nvidia-smi not available"; } 2>&1 | tee "$out/gpus.txt"

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

timeout 120 "$sfm" random --arch tiny --seed 1 --canary 16 "$out/tiny.safetensors" | tee -a "$out/summary.txt"
timeout 300 "$sfm" random --arch base --seed 2 --canary 32 "$out/base.safetensors" | tee -a "$out/summary.txt"

check() { # check LABEL -- command...
  label=$1
  shift 2
  if timeout 300 "$@" >"$out/step.txt" 2>&1; then
    log "PASS $label: $(grep -v '^{' "$out/step.txt" | tail -1)"
  else
    log "FAIL $label: $(tail -3 "$out/step.txt")"
    status=1
  fi
  grep '^{' "$out/step.txt" >>"$out/results.jsonl" || true
}

for arch in tiny base; do
  b="$out/$arch.safetensors"
  check "$arch canary on cuda/fp32" -- "$sfm" verify --backend cuda --precision fp32 "$b"
  check "$arch parity cuda/fp32 vs cpu (<= 1e-4)" -- "$sfm" parity --precision fp32 "$b"
  check "$arch parity cuda/tf32 vs cpu (<= 2e-2)" -- "$sfm" parity --precision tf32 "$b"
  check "$arch parity cuda/bf16 vs cpu (<= 2e-2)" -- "$sfm" parity --precision bf16 "$b"
done

log "benchmarks: base, 48 tokens and 8 queries per position"
for prec in bf16 tf32 fp32; do
  timeout 300 "$sfm" bench --backend cuda --precision "$prec" --batch 64,256,1024 --seconds 4 \
    --tokens 48 --queries 8 "$out/base.safetensors" >"$out/step.txt" 2>&1 || status=1
  grep -v '^{' "$out/step.txt" | tee -a "$out/summary.txt"
  grep '^{' "$out/step.txt" >>"$out/results.jsonl" || true
done
timeout 120 "$sfm" bench --backend cpu --batch 64 --seconds 3 --tokens 48 --queries 8 \
  "$out/base.safetensors" >"$out/step.txt" 2>&1
grep -v '^{' "$out/step.txt" | tee -a "$out/summary.txt"
grep '^{' "$out/step.txt" >>"$out/results.jsonl" || true

if [ "$status" = 0 ]; then log "all GPU checks passed; figures in $out/results.jsonl"; else
  log "some GPU checks FAILED; see $out/summary.txt"; fi
exit $status
