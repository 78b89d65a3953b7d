#!/bin/sh
# test_o3_werror.sh — the engine and the search compile warning-free at -O3
# with assertions on (-Werror), as the release build's -O3 needs: GCC 12's
# -O3 inlining once raised a false array-bounds error in engine/combat.c
# (reshuffle), hidden in the release build only by -DNDEBUG.
#
#   test_o3_werror.sh SOURCE_ROOT BUILD_ROOT CC [CC ARGS...]
#
# TAP: one line per source file.
set -u
src=$1
bld=$2
shift 2
files=$(cd "$src" && ls engine/*.c search/*.c)
n=$(echo "$files" | wc -l)
echo "1..$n"
i=0
status=0
for f in $files; do
  i=$((i + 1))
  if out=$("$@" -std=c17 -O3 -Wall -Wextra -Wpedantic -Werror -fno-strict-aliasing \
      -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I"$src" -I"$bld" -I"$bld/proto" \
      -c "$src/$f" -o /dev/null 2>&1); then
    echo "ok $i - $f at -O3, assertions on"
  else
    echo "not ok $i - $f at -O3, assertions on"
    echo "$out" | sed 's/^/# /'
    status=1
  fi
done
exit $status
