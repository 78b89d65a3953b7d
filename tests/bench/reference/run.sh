#!/bin/sh
# Items against the reference engine: bench-items (spirefleet) and
# lightspeed_items.cpp (gamerpuppy/sts_lightspeed) on the same item names,
# compared item by item by compare.py (docs/benchmarks.md "Items against
# the reference engine").
#
#   tests/bench/reference/run.sh LIGHTSPEED_DIR [BUILD_DIR] [--fights N] [--seed S]
#
# LIGHTSPEED_DIR is a checkout (or `git archive`) of sts_lightspeed; the
# driver is compiled against its include/ and src/ (the save-file and
# console code left out, so its json submodule is not needed) into a
# scratch directory, never into this repository: $REFBENCH_SCRATCH, by
# default ${TMPDIR:-/tmp}/spirefleet-refbench-$(id -u), one subdirectory
# per lightspeed source tree. Lightspeed's objects are kept there (under a
# minute to build once). BUILD_DIR
# (default build) is a meson build of this repository; bench-items is built
# in it. Compiles run one at a time under nice.
#
# Prints compare.py's JSON lines and table. Exits 0 whatever the engines
# disagree on (a benchmark, not a test); 2 on a usage error; 1 when a
# build or a run fails.
set -eu

usage() {
    cat >&2 <<'EOF'
usage: tests/bench/reference/run.sh LIGHTSPEED_DIR [BUILD_DIR] [--fights N] [--seed S]

Needs a checkout of the reference engine, gamerpuppy/sts_lightspeed (C++17;
its submodules are not needed), e.g.
    git clone https://github.com/gamerpuppy/sts_lightspeed /tmp/lightspeed
and a C++17 compiler (g++ or $CXX) and python3. The driver is compiled
against LIGHTSPEED_DIR in a scratch directory; nothing is written into
this repository. BUILD_DIR (default: build) is this repository's meson
build directory.
EOF
    exit 2
}

[ $# -ge 1 ] || usage
case $1 in -h | --help | --*) usage ;; esac
ls_dir=$1
shift
build=build
if [ $# -ge 1 ]; then
    case $1 in --*) ;; *) build=$1; shift ;; esac
fi
fights=2000
seed=1
while [ $# -gt 0 ]; do
    case $1 in
    --fights) [ $# -ge 2 ] || usage; fights=$2; shift 2 ;;
    --seed) [ $# -ge 2 ] || usage; seed=$2; shift 2 ;;
    *) usage ;;
    esac
done
if [ ! -f "$ls_dir/include/combat/BattleContext.h" ] || [ ! -d "$ls_dir/src/combat" ]; then
    echo "run.sh: $ls_dir is not an sts_lightspeed checkout (no include/combat/BattleContext.h)" >&2
    usage
fi

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
ls_dir=$(cd "$ls_dir" && pwd)
cxx=${CXX:-g++}
py=/usr/bin/python3
[ -x "$py" ] || py=python3

# One scratch subdirectory per lightspeed source tree (its path and the
# contents of its headers and sources), so a changed checkout never reuses
# stale objects.
key=$( (printf '%s\n' "$ls_dir" && find "$ls_dir/include" "$ls_dir/src" -type f \
    \( -name '*.h' -o -name '*.cpp' \) | LC_ALL=C sort | xargs cat) | cksum | cut -d' ' -f1)
scratch=${REFBENCH_SCRATCH:-${TMPDIR:-/tmp}/spirefleet-refbench-$(id -u)}/$key
mkdir -p "$scratch/obj"

# Lightspeed's library: combat, game (no SaveFile: it needs nlohmann/json),
# the search actions (the choice-screen options) and the print helpers they
# call. Its own warnings are not ours to fix: -w.
objs=
for src in "$ls_dir"/src/combat/*.cpp "$ls_dir"/src/game/*.cpp "$ls_dir"/src/sim/search/*.cpp \
    "$ls_dir"/src/sim/PrintHelpers.cpp; do
    case $src in */SaveFile.cpp) continue ;; esac
    obj=$scratch/obj/$(basename "$(dirname "$src")")_$(basename "$src" .cpp).o
    if [ ! -f "$obj" ] || [ -n "$(find "$src" -newer "$obj")" ]; then
        echo "run.sh: compiling $src" >&2
        nice "$cxx" -std=c++17 -O2 -DNDEBUG -w -I"$ls_dir/include" -c "$src" -o "$obj.tmp"
        mv "$obj.tmp" "$obj"
    fi
    objs="$objs $obj"
done
# shellcheck disable=SC2086
nice "$cxx" -std=c++17 -O2 -DNDEBUG -Wall -Wextra -Werror -isystem "$ls_dir/include" \
    "$here/lightspeed_items.cpp" $objs -o "$scratch/lightspeed-items"

cd "$root"
nice ninja -C "$build" -j1 tests/bench/bench-items >&2

"$build/tests/bench/bench-items" --fights "$fights" --seed "$seed" >"$scratch/ours.jsonl"
"$scratch/lightspeed-items" --fights "$fights" --seed "$seed" >"$scratch/ref.jsonl"
"$py" "$here/compare.py" "$scratch/ours.jsonl" "$scratch/ref.jsonl"
