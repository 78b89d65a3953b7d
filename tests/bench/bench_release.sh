#!/bin/sh
# bench_release.sh — the release build against the checked build of the same
# commit, on random Act-1 fights (bench-engine --fights-only).
#
#   tests/bench/bench_release.sh CHECKED_BUILD RELEASE_BUILD [ROUNDS [FIGHTS]]
#
# CHECKED_BUILD is build/ (-O2 -g, assertions on), RELEASE_BUILD is
# build-release/ (scripts/release: -O3, LTO, no assertions, profile-guided
# from a training run on other fights than these). Each round runs
# both builds' bench-engine once, one after the other (the order alternating
# round by round), FIGHTS fights each (default 100000; ROUNDS default 15), so
# a passing disturbance of a shared machine falls on both sides alike. Both
# must play the same fights (equal decisions and wins), or the comparison is
# refused. Prints one JSON line per figure: each side's median fights/s and
# the median over rounds of the per-round ratio release / checked; then a
# human line with the 1-minute load average before and after (on a shared
# machine the ratio holds up better than the rates).
set -eu
checked=${1:?usage: bench_release.sh CHECKED_BUILD RELEASE_BUILD [ROUNDS [FIGHTS]]}
release=${2:?usage: bench_release.sh CHECKED_BUILD RELEASE_BUILD [ROUNDS [FIGHTS]]}
rounds=${3:-15}
fights=${4:-100000}
exe=tests/bench/bench-engine
for b in "$checked" "$release"; do
  [ -x "$b/$exe" ] || { echo "bench_release: $b/$exe is not built" >&2; exit 1; }
done

one() { # build -> "fights_per_s decisions wins"
  "$1/$exe" --fights-only --runs 1 --fights "$fights" |
    awk -F'[:,]' '/^\{"bench":"engine.fights_per_s_1t"/ {r = $4}
                  /^\{"bench":"engine.fights_1t_decisions"/ {d = $4}
                  /^\{"bench":"engine.fights_1t_wins"/ {w = $4}
                  END { if (r == "" || d == "" || w == "") exit 1; print r, d, w }'
}

load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?'; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
load0=$(load)
i=0
while [ "$i" -lt "$rounds" ]; do
  if [ $((i % 2)) -eq 0 ]; then
    c=$(one "$checked"); r=$(one "$release")
  else
    r=$(one "$release"); c=$(one "$checked")
  fi
  echo "$c $r" >>"$out"
  i=$((i + 1))
done

load1=$(load)
awk -v rounds="$rounds" -v fights="$fights" -v load0="$load0" -v load1="$load1" '
  function med(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function emit(name, v, unit, what) {
    printf "{\"bench\":\"release.%s\",\"value\":%.6g,\"unit\":\"%s\",\"n\":%d,\"median\":%.6g}\n", name, v, unit, rounds, v
    printf "  release.%s: %.4g %s (%s)\n", name, v, unit, what
  }
  { n++; c[n] = $1; r[n] = $4; q[n] = $4 / $1
    if ($2 != $5 || $3 != $6) { bad = 1 } }
  END {
    if (bad) { print "bench_release: the two builds played different fights" > "/dev/stderr"; exit 1 }
    emit("checked_fights_per_s", med(c, n), "fights/s", "checked build, 1 thread, " fights " random Act-1 fights per run")
    emit("release_fights_per_s", med(r, n), "fights/s", "release build, the same fights")
    emit("speedup", med(q, n), "x", "median of the per-round ratios release / checked")
    printf "  release: load average (1 min) %s before, %s after\n", load0, load1
  }' "$out"
