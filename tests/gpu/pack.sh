#!/bin/sh
# tests/gpu/pack.sh — prepare the GPU check for a machine that cannot build.
#
# A GPU machine may have CUDA but none of the project's Debian libraries and
# no package registry to fetch them from. This script, run on a build
# machine with CUDA installed (scripts/setup has run), builds sf-model with
# the cuda backend (-Dgpu=enabled, release) and copies it with the shared
# libraries it needs that a CUDA machine does not provide (jansson,
# libsodium, OpenBLAS and its Fortran runtime, the CUDA runtime) into
# gpu-pack/ (or $GPU_PACK). cuBLAS/cuBLASLt are left to the GPU machine's
# own CUDA 13 (they are hundreds of MB); tests/gpu/run.sh finds them.
#
# Then copy gpu-pack/ to the GPU machine beside the tree and run
# tests/gpu/run.sh there: it uses gpu-pack/sf-model instead of building.
# The pack is about 40 MB; `du -sh gpu-pack` prints it at the end.
set -eu
cd "$(dirname "$0")/../.."
build=${GPU_BUILD:-build-gpu}
pack=${GPU_PACK:-gpu-pack}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dgpu=enabled -Dtests=disabled -Dbuildtype=release
fi
ninja -C "$build" model/sf-model
rm -rf "$pack"
mkdir -p "$pack/lib"
cp "$build/model/sf-model" "$pack/"
# Every resolved library except the C runtime (the GPU machine's newer glibc
# runs binaries built against an older one) and cuBLAS (too large to carry).
ldd "$pack/sf-model" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
  while read -r name path; do
    case "$name" in
    libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | ld-linux*) continue ;;
    libstdc++.so.* | libgcc_s.so.*) continue ;;
    libcublas.so.* | libcublasLt.so.*) continue ;;
    esac
    cp -L "$path" "$pack/lib/$name"
  done
# What the binary and the pack say of themselves, for the check's log.
git rev-parse HEAD >"$pack/commit.txt" 2>/dev/null || echo unknown >"$pack/commit.txt"
ls "$pack/lib" >"$pack/libs.txt"
echo "gpu-pack: $(cat "$pack/commit.txt") in $pack: sf-model and $(wc -l <"$pack/libs.txt") libraries"
du -sh "$pack"
