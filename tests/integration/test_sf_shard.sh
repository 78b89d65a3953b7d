#!/bin/sh
# sf-shard end to end (TAP): every command on shards the C writer made, its
# exit codes (0 ok, 1 bad shard, 2 usage, 3 other) and its messages.
# usage: test_sf_shard.sh SHARD_FIXTURE SF_SHARD
set -u
fixture=$1
sf=$2
work=$(mktemp -d /tmp/sf-shard-cli-XXXXXX)
trap 'rm -rf "$work"' EXIT
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; sed 's/^/# /' "$work/out" 2>/dev/null | head -20; }
# check NAME EXPECTED_RC GREP_PATTERN -- CMD...: run CMD, want its exit code and a line matching.
check() {
  name=$1 want=$2 pat=$3
  shift 4
  "$@" >"$work/out" 2>&1
  rc=$?
  if [ "$rc" = "$want" ] && grep -q -- "$pat" "$work/out"; then ok "$name"; else
    echo "exit $rc (wanted $want), pattern '$pat'" >>"$work/out"; not_ok "$name"; fi
}

echo "1..44"
mkdir -p "$work/src"
"$fixture" "$work/src" >/dev/null || { echo "Bail out! fixture failed"; exit 1; }
digest_a=$(sed -n 's/.*"shard": "a.shard", "digest": "\([0-9a-f]*\)".*/\1/p' "$work/src/expected.jsonl")
rm "$work/src/expected.jsonl"
# The fixture's a.shard and b.shard are jobs 7 and 8 of run synth-run under
# names a person gave them; a directory holds a shard only under its
# canonical name (shard.h sf_shard_check_canonical_name): canon/ has them so.
a7=synth-run-job000007.shard
b8=synth-run-job000008.shard
mkdir "$work/canon"
cp "$work/src/a.shard" "$work/canon/$a7"
cp "$work/src/b.shard" "$work/canon/$b8"

check "help lists the exit codes" 0 "2  usage error" -- "$sf" --help
check "unknown command is a usage error" 2 "unknown command 'bogus'" -- "$sf" bogus
check "every command has --help" 0 "usage: sf-shard pull SRC DST" -- sh -c \
  "for c in ls stat verify cat export pull; do \"$sf\" \$c --help || exit 1; done"
check "ls shows both shards sealed" 0 "b.shard *120 .* yes" -- "$sf" ls "$work/src"

# An unsealed writer's file: the LMDB data of a.shard without its trailer.
data_end=$(python3 -c "import struct,sys;f=open(sys.argv[1],'rb');f.seek(-64,2);print(struct.unpack_from('<Q',f.read(),16)[0])" "$work/src/a.shard")
head -c "$data_end" "$work/src/a.shard" >"$work/src/c.shard.77.deadbeef.tmp"
check "ls marks a writer's temp file unsealed" 0 "c.shard.77.deadbeef.tmp .* unsealed" -- "$sf" ls "$work/src"
check "ls explains why" 0 "not sealed: a writer's temporary file" -- "$sf" ls "$work/src"
rm "$work/src/c.shard.77.deadbeef.tmp"
# A sealed file still under its temporary name (the writer died between
# sealing and renaming): complete bytes, but no reader takes it.
cp "$work/src/a.shard" "$work/src/d.shard.78.feedface.tmp"
check "ls does not count a sealed temp file" 0 "3 files, 2 sealed, 420 records" -- "$sf" ls "$work/src"
check "stat refuses a sealed temp file" 1 "d.shard.78.feedface.tmp: not sealed: a writer's temporary file" -- \
  "$sf" stat "$work/src/d.shard.78.feedface.tmp"
rm "$work/src/d.shard.78.feedface.tmp"
mkdir "$work/app"
cp "$work/src/a.shard" "$work/app/a.shard" && printf 'x' >>"$work/app/a.shard"
check "verify names bytes appended after the seal" 1 "1 byte follows its seal trailer" -- \
  "$sf" verify "$work/app/a.shard"
check "stat of a directory is not a usage error" 3 "app: not a regular file (a directory)" -- "$sf" stat "$work/app"
# A FIFO named like a shard: every reader refuses it without blocking on
# open() (timeout turns a hang into a failure, exit 124).
mkdir "$work/fifo"
mkfifo "$work/fifo/x.shard"
check "verify refuses a FIFO without blocking" 3 "x.shard: not a regular file (a FIFO)" -- \
  timeout 5 "$sf" verify "$work/fifo/x.shard"
check "stat refuses a FIFO without blocking" 3 "x.shard: not a regular file (a FIFO)" -- \
  timeout 5 "$sf" stat "$work/fifo/x.shard"
check "cat refuses a FIFO without blocking" 3 "x.shard: not a regular file (a FIFO)" -- \
  timeout 5 "$sf" cat "$work/fifo/x.shard"
check "ls of a directory with a FIFO names it" 0 "x.shard: not a regular file" -- \
  timeout 5 "$sf" ls "$work/fifo"
check "verify of a directory with a FIFO counts it bad" 3 "1 shards, 0 good, 1 bad" -- \
  timeout 5 "$sf" verify "$work/fifo"
check "pull from a directory with a FIFO copies nothing" 1 "0 copied" -- \
  timeout 5 "$sf" pull "$work/fifo" "$work/fifodst"
check "export into a directory names the flag" 2 "is a directory; give a file name" -- \
  "$sf" export "$work/src/a.shard" --npz "$work/app"

check "stat summarises the labels" 0 "value target (mean mass per bin" -- "$sf" stat "$work/src/a.shard"
check "stat counts records" 0 "records     300 in" -- "$sf" stat "$work/src/a.shard"
"$sf" stat --json "$work/src/a.shard" >"$work/stat.json" 2>&1
if python3 -c "
import json,os,sys; s=json.load(open(sys.argv[1])); l=s['labels']
assert l['records']==300 and len(l['value_histogram'])==21
assert abs(sum(l['value_histogram'])-1)<1e-4 and len(l['forecast_coverage'])==4
assert l['forecast_coverage'][0]>=l['forecast_coverage'][3]
assert s['manifest']['content_digest']==sys.argv[2]
# the ratio is the file's bytes over the frames' (300 records: 215 KB of
# frames beside ~35 KB of LMDB pages and trailer that any shard has)
assert abs(s['file_over_payload']-s['file_bytes']/int(s['manifest']['payload_bytes']))<1e-6
assert s['file_bytes']==os.path.getsize(sys.argv[3]) and s['file_over_payload']<=1.2
" "$work/stat.json" "$digest_a" "$work/src/a.shard" >"$work/out" 2>&1; then ok "stat --json is parseable and adds up"; else not_ok "stat --json is parseable and adds up"; fi

check "verify a good shard prints its digest" 0 "ok .*a.shard 300 records $digest_a" -- "$sf" verify "$work/src/a.shard"
check "verify of a shard under a name of its own notes the canonical one" 0 \
  "note: .*/a.shard is not its shard's canonical name 'synth-run-job000007.shard'" -- \
  "$sf" verify "$work/src/a.shard"
check "verify a directory" 0 "2 shards, 2 good, 0 bad" -- "$sf" verify "$work/canon"
# In a directory, a shard under any other name is refused, naming the name
# it should have: a person's copy, a worker's attempt, another job's name.
check "verify DIR refuses shards not under their canonical names" 1 \
  "FAIL: .*/src/a.shard: not the canonical name of its shard: expected 'synth-run-job000007.shard' (run 'synth-run', job 7)" -- \
  "$sf" verify "$work/src"
mkdir "$work/renamed"
cp "$work/canon/$a7" "$work/canon/$b8" "$work/renamed/"
cp "$work/canon/$a7" "$work/renamed/copy-of-7.shard"
cp "$work/canon/$a7" "$work/renamed/synth-run-job000007-a2.shard"
cp "$work/canon/$a7" "$work/renamed/synth-run-job000009.shard"
"$sf" verify "$work/renamed" >"$work/renamed.out" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -q "^5 shards, 2 good, 3 bad" "$work/renamed.out" &&
  grep -q "^FAIL: .*/copy-of-7.shard: not the canonical name of its shard: expected 'synth-run-job000007.shard'" "$work/renamed.out" &&
  grep -q "^FAIL: .*/synth-run-job000007-a2.shard: not the canonical name of its shard: expected 'synth-run-job000007.shard'" "$work/renamed.out" &&
  grep -q "^FAIL: .*/synth-run-job000009.shard: not the canonical name of its shard: expected 'synth-run-job000007.shard'" "$work/renamed.out" &&
  [ "$(grep -c '^ok ' "$work/renamed.out")" = 2 ]; then
  ok "verify DIR reads a copy of job 7 under three other names as 3 bad, job 7 once"
else
  cp "$work/renamed.out" "$work/out"; echo "exit $rc" >>"$work/out"
  not_ok "verify DIR reads a copy of job 7 under three other names as 3 bad, job 7 once"
fi
check "a copy under another job's canonical name is refused alone too" 1 \
  "the name says run 'synth-run' job 9, the manifest run 'synth-run' job 7 (a renamed or swapped shard)" -- \
  "$sf" verify "$work/renamed/synth-run-job000009.shard"
check "pull does not copy a shard under another name" 1 \
  "FAILED *copy-of-7.shard: .*not the canonical name of its shard: expected 'synth-run-job000007.shard'" -- \
  "$sf" pull "$work/renamed" "$work/renameddst"
if [ ! -e "$work/renameddst/copy-of-7.shard" ] && [ -e "$work/renameddst/$a7" ]; then
  ok "pull copied job 7 under its name only"; else ls "$work/renameddst" >"$work/out" 2>&1; not_ok "pull copied job 7 under its name only"; fi

mkdir "$work/bad"
cp "$work/canon/$a7" "$work/bad/$a7"
cp "$work/canon/$b8" "$work/bad/$b8"
# Flip a byte in the middle of a.shard's record data.
python3 -c "
import sys; p=sys.argv[1]; f=open(p,'r+b'); f.seek(int(sys.argv[2])); b=f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0]^64]))
" "$work/bad/$a7" $((data_end / 2))
check "verify names the page and record of a flipped byte" 1 "FAIL: .*$a7: page [0-9]*: CRC mismatch.*record" -- "$sf" verify "$work/bad"
check "verify goes on to the other shards" 1 "2 shards, 1 good, 1 bad" -- "$sf" verify "$work/bad"
check "a missing shard exits 3" 3 "no such shard" -- "$sf" verify "$work/nope.shard"
truncate -s -100 "$work/bad/$b8"
check "cat refuses a truncated shard" 1 "$b8: truncated" -- "$sf" cat "$work/bad/$b8"

check "cat prints one line per record" 0 "#299 seed=" -- "$sf" cat "$work/src/a.shard"
"$sf" cat --json --index 5 "$work/src/a.shard" >"$work/rec.json" 2>&1
if python3 -c "
import json,sys; lines=open(sys.argv[1]).read().splitlines(); assert len(lines)==1
o=json.loads(lines[0]); r=o['record']; assert o['index']=='5'
assert r['ids']['game_seed']=='1000' and r['ids']['decision_index']==5
t=r['inputs']['token_cont']; assert t['dtype']=='f32' and len(t['data'])==t['shape'][0]*t['shape'][1]
assert len(r['outcome']['value_bins'])==21
" "$work/rec.json" >"$work/out" 2>&1; then ok "cat --json --index gives that record as JSON"; else not_ok "cat --json --index gives that record as JSON"; fi
check "cat --index past the end is a usage error" 2 "record 300 out of range" -- "$sf" cat --index 300 "$work/src/a.shard"

check "pull copies sealed shards" 0 "2 copied" -- "$sf" pull "$work/canon" "$work/dst"
check "pull again finds them present" 0 "0 copied .*, 2 present, 0 failed" -- "$sf" pull "file://$work/canon" "$work/dst"
cp "$work/canon/$b8" "$work/bad/$a7"
check "pull never replaces a different shard" 1 "conflict $a7: .*another content digest" -- "$sf" pull "$work/canon" "$work/bad"
check "a malformed tcp:// source is refused" 2 "not a valid endpoint" -- "$sf" pull "tcp://no such host" "$work/dst"

# A quarantine list (sf-fleet quarantine) names a.shard by its content
# digest: verify, export and pull of the directory skip it and say so.
mkdir -p "$work/q"
cp "$work/canon/$a7" "$work/canon/$b8" "$work/q/"
qdig=$("$sf" verify "$work/q/$a7" | awk '$1 == "ok" { print $5 }')
echo "$qdig $a7 0123456789abcdef 1700000000" > "$work/q/QUARANTINE"
check "verify skips a quarantined shard and says so" 0 "1 shards, 1 good, 0 bad, 1 quarantined" -- "$sf" verify "$work/q"
check "ls marks it" 0 "^$a7 .*yes, QUARANTINED" -- "$sf" ls "$work/q"
check "export refuses a quarantined shard" 1 "quarantined (listed in" -- "$sf" export "$work/q/$a7" --npz "$work/q.npz"
check "pull skips it and lists it in the destination" 0 "1 copied .*1 quarantined" -- "$sf" pull "$work/q" "$work/qdst"
check "the destination's list names it" 0 "$qdig $a7" -- cat "$work/qdst/QUARANTINE"

[ "$fails" = 0 ]
