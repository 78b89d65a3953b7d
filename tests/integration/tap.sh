# tap.sh — TAP helpers for the integration scripts, which source it:
#   . "$(dirname "$0")/tap.sh"
#   ok LABEL                   a passing test line
#   notok LABEL [DIAGNOSTIC]   a failing one (the diagnostic as a "# " line)
#   expect STATUS PATTERN LABEL -- command...
#                              passes when the command exits STATUS and its
#                              output (stdout and stderr, kept in
#                              $tap_dir/out) has a line matching PATTERN;
#                              the script sets tap_dir to its scratch dir
#                              (tap_scratch does)
#   $py                        Debian's python3 (the interpreter the
#                              packages of scripts/packages.txt are for)
#   tap_scratch NAME           makes $tmp, a new directory /tmp/NAME-XXXXXX
#                              (also tap_dir), removed at exit together with
#                              every process whose id is in $pids (kill -9)
#   until_true SECS CMD...     runs the command every 0.1 s until it
#                              succeeds (0) or SECS x $wait_scale pass (1)
#   wait_status EP COND SECS   poll `$fleet status EP` until a line meets the
#                              awk condition COND (0) or SECS x $wait_scale
#                              pass (1)
#   digests DIR                "name digest" lines of DIR's shards, sorted
#                              (`$shard verify`; a shard that does not
#                              verify has no line)
#   ftest_config NAME OUTDIR ENDPOINT WORKERS [THREADS]
#                              writes $tmp/NAME.yaml, the 6-job fights run
#                              the fleet tests play (THREADS: 1)
#   net_yaml SIMS TREES EVALD_ENDPOINT SPAWN
#                              the search:, model: and evald: lines of a
#                              config whose leaves go to a cpu gpu-evald
#                              serving $bundle (SHA-256 $sha)
#   $wait_scale                how much longer than an idle machine needs
#                              a wait may take before it fails (SF_WAIT_SCALE,
#                              default 5): a wait ends when its condition
#                              holds, so a pass never waits the bound out and
#                              a loaded machine does not fail it
#   out_has PATTERN LABEL      passes when the last expect's output has a line
#                              matching PATTERN (its first lines if not)
#   logged FILE PATTERN        FILE has a line matching PATTERN
#   ok_when_logged SECS FILE PATTERN LABEL
#                              passes once FILE has a line matching PATTERN
#                              (until_true SECS), else fails with its tail
#   flip_ledger_record LEDGER DIGEST
#                              flips a byte in every copy of the job record
#                              holding DIGEST in the ledger file LEDGER
#   tap_done                   prints the plan; exits 1 if anything failed
py=/usr/bin/python3
wait_scale=${SF_WAIT_SCALE:-5}
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() {
  n=$((n + 1))
  fail=1
  echo "not ok $n - $1"
  [ $# -gt 1 ] && echo "# $2"
  return 0
}
expect() {
  want=$1 pat=$2 label=$3
  shift 4
  out=${tap_dir:?expect needs tap_dir, a scratch directory}/out
  "$@" >"$out" 2>&1
  got=$?
  if [ "$got" = "$want" ] && grep -q -- "$pat" "$out"; then
    ok "$label (exit $got)"
  else
    notok "$label: exit $got, want $want and /$pat/: $(head -c 300 "$out")"
  fi
}
tap_scratch() {
  tmp=$(mktemp -d "/tmp/$1-XXXXXX")
  tap_dir=$tmp
  pids=""
  trap 'for p in $pids; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
}
# until_true SECONDS COMMAND...: true once the command is, polling every
# 0.1 s; false after SECONDS x $wait_scale.
until_true() {
  limit=$(($1 * wait_scale * 10))
  shift
  i=0
  while [ $i -lt $limit ]; do
    "$@" && return 0
    sleep 0.1
    i=$((i + 1))
  done
  return 1
}
out_has() {
  if grep -q -- "$1" "$tap_dir/out"; then ok "$2"; else notok "$2" "$(head -3 "$tap_dir/out")"; fi
}
logged() { grep -q -- "$2" "$1" 2>/dev/null; }
ok_when_logged() {
  if until_true "$1" logged "$2" "$3"; then ok "$4"; else notok "$4" "$(tail -3 "$2")"; fi
}
# status_has ENDPOINT AWK-CONDITION: a line of `$fleet status ENDPOINT`
# meets the condition. The script sets fleet to its sf-fleet.
status_has() {
  "${fleet:?status_has needs fleet}" status "$1" 2>/dev/null |
    awk "$2 { found = 1 } END { exit !found }"
}
# wait_status ENDPOINT AWK-CONDITION SECONDS: poll `$fleet status ENDPOINT`
# every 0.1 s until a line of it meets the awk condition (0), or give up
# after SECONDS x $wait_scale (1).
wait_status() { until_true "$3" status_has "$1" "$2"; }
# digests DIR: "name digest" lines, sorted. The script sets shard to its
# sf-shard.
digests() {
  "${shard:?digests needs shard}" verify "$1" | awk '$1 == "ok" { n = split($2, p, "/"); print p[n], $5 }' | sort
}
ftest_config() {
  cat > "$tmp/$1.yaml" <<EOF
run: {name: ftest, output_dir: "$2", seed: 77}
seeds: {start: 500, count: 24, job_size: 4}
play: {mode: fights, encounters: {weak: 1, strong: 1, elite: 1}}
search: {simulations: 600, trees: 2}
workers: {count: $4, threads: ${5:-1}, fights_per_thread: 3}
coordinator: {endpoint: "$3", lease_seconds: 30, heartbeat_ms: 100, heartbeat_liveness: 5}
EOF
}
net_yaml() {
  echo "search: {simulations: $1, trees: $2, evaluator: net}"
  echo "model: {bundle: \"${bundle:?net_yaml needs bundle}\", sha256: \"${sha:?net_yaml needs sha}\"}"
  echo "evald: {endpoint: \"$3\", spawn: $4, backend: cpu, max_wait_us: 200}"
}
# Every copy: LMDB's copy-on-write leaves older copies of a record in free
# pages, and which copy comes first in the file is LMDB's business.
flip_ledger_record() {
  $py - "$1" "$2" <<'EOP'
import sys
path, digest = sys.argv[1], sys.argv[2].encode()
b = bytearray(open(path, 'rb').read())
at = b.find(digest)
assert at > 0, 'digest not in the ledger'
while at >= 0:
    b[at + 5] ^= 0x02
    at = b.find(digest, at + 1)
open(path, 'wb').write(b)
EOP
}
tap_done() {
  echo "1..$n"
  exit $fail
}
