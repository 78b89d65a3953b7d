# tap.sh — TAP helpers for the integration scripts, which source it:
#   . "$(dirname "$0")/tap.sh"
#   ok LABEL                   a passing test line
#   notok LABEL [DIAGNOSTIC]   a failing one (the diagnostic as a "# " line)
#   expect STATUS PATTERN LABEL -- command...
#                              passes when the command exits STATUS and its
#                              output (stdout and stderr, kept in
#                              $tap_dir/out) has a line matching PATTERN;
#                              the script sets tap_dir to its scratch dir
#   tap_done                   prints the plan; exits 1 if anything failed
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
tap_done() {
  echo "1..$n"
  exit $fail
}
