#!/bin/sh
# Backups (TAP), against an uninterrupted run's shard content digests:
#   - `sf-fleet backup` of a run whose coordinator is serving and whose
#     worker is playing: a compacted ledger copy, the shard manifest, the
#     shards, config and keys, and the coordinator goes on to complete;
#   - `sf-fleet restore` of that backup, resumed to completion, stores the
#     uninterrupted run's digests; so does a backup without its shards
#     (the done jobs are played again);
#   - an absent or damaged ledger (no LMDB file, truncated, a flipped byte
#     in a record) is an error naming the file, and leaves no DEST; a DEST
#     that exists and is not empty is refused, so is a restore into one, and a
#     restore from a directory that is no whole backup.
#
# usage: test_fleet_backup.sh SF_FLEET SF_SHARD
set -u
fleet=$1
shard=$2
. "$(dirname "$0")/tap.sh"
tap_scratch sf-backup-test

# as_uninterrupted DIR WHAT: the shards in DIR have the uninterrupted run's digests
as_uninterrupted() {
  digests "$1" > "$tmp/d.cmp"
  if cmp -s "$tmp/d.cmp" "$tmp/d.ref"; then
    ok "$2: the uninterrupted run's digests"
  else
    notok "$2: digests differ" "$(diff "$tmp/d.cmp" "$tmp/d.ref" | head -4)"
  fi
}
# manifest_digests FILE: "shard digest" lines of a backup manifest, sorted
manifest_digests() { awk '!/^#/ { print $2, $3 }' "$1" | sort; }

# The uninterrupted run.
ftest_config ref "$tmp/ref" "tcp://127.0.0.1:*" 1
"$fleet" run "$tmp/ref.yaml" > "$tmp/ref.log" 2>&1
digests "$tmp/ref/shards" > "$tmp/d.ref"
if [ "$(wc -l < "$tmp/d.ref")" = 6 ]; then ok "the uninterrupted run stores 6 shards"; else
  notok "the uninterrupted run" "$(tail -3 "$tmp/ref.log")"; fi

# 1. A live run: a coordinator serving one worker that plays 2 of the 6
# jobs; the backups are taken once one is done, while it plays the next.
ftest_config live "$tmp/live" "tcp://127.0.0.1:*" 0
"$fleet" coordinator "$tmp/live.yaml" --endpoint-file "$tmp/live.ep" > "$tmp/coord.log" 2>&1 &
coord=$!
pids="$pids $coord"
until_true 30 test -s "$tmp/live.ep"
ep=$(cat "$tmp/live.ep")
export SF_KEYS="$tmp/live/keys" # a local run's keys (docs/operator.md "Security")
"$fleet" worker --connect-file "$tmp/live.ep" --id w1 --max-jobs 2 --scratch "$tmp/w1" \
  > "$tmp/w1.log" 2>&1 &
w1=$!
pids="$pids $w1"
if wait_status "$ep" '/^jobs:/ && $2 >= 1' 60; then
  expect 0 "backup of run ftest in .*, [12] of 6 jobs done, [12] shards (. linked, 0 copied), keys" \
    "a backup with shards while the coordinator serves a playing worker" -- \
    "$fleet" backup "$tmp/live" "$tmp/bk" --with-shards
  expect 0 "shards listed in shards.manifest, not copied" "a backup without shards, live too" -- \
    "$fleet" backup "$tmp/live" "$tmp/bk-ledger"
  if kill -0 "$coord" 2>/dev/null && status_has "$ep" '/^jobs:/'; then
    ok "the coordinator still serves after the backups"
  else
    notok "the coordinator stopped" "$(tail -3 "$tmp/coord.log")"
  fi
  manifest_digests "$tmp/bk/shards.manifest" > "$tmp/m.bk"
  lines=$(wc -l < "$tmp/m.bk")
  if [ "$lines" -ge 1 ] && [ "$lines" -le 2 ] && [ -z "$(comm -23 "$tmp/m.bk" "$tmp/d.ref")" ] &&
    [ "$(digests "$tmp/bk/shards")" = "$(cat "$tmp/m.bk")" ]; then
    ok "the manifest lists the $lines stored shards with the uninterrupted run's digests"
  else
    notok "the manifest" "$(cat "$tmp/bk/shards.manifest")"
  fi
  if [ -s "$tmp/bk/ledger.lmdb" ] && [ -s "$tmp/bk/config.yaml" ] &&
    cmp -s "$tmp/bk/keys/server.key" "$tmp/live/keys/server.key"; then
    ok "the backup holds the ledger, the config and the keys"
  else
    notok "the backup's files" "$(ls -R "$tmp/bk" | head -20)"
  fi
  # the live run goes on to complete with another worker
  wait "$w1"
  "$fleet" worker --connect-file "$tmp/live.ep" --id w2 --scratch "$tmp/w2" > "$tmp/w2.log" 2>&1 &
  pids="$pids $!"
  if wait_status "$ep" '/COMPLETE/' 120; then ok "the live run completes"; else
    notok "the live run did not complete" "$(tail -3 "$tmp/coord.log")"; fi
  "$fleet" stop "$ep" > /dev/null 2>&1
  wait "$coord"
  unset SF_KEYS
  as_uninterrupted "$tmp/live/shards" "the run that was backed up"

  # 2. Restore and resume.
  expect 0 "restored run ftest into $tmp/rest: ledger, [12] shards, keys" \
    "restore the backup into a new run directory" -- "$fleet" restore "$tmp/bk" "$tmp/rest"
  expect 0 "complete" "the restored run resumes to completion" -- \
    "$fleet" run "$tmp/rest/config.yaml" --workers 1
  as_uninterrupted "$tmp/rest/shards" "the restored run"
  if grep -q "is missing" "$tmp/out"; then
    notok "the restored run played a backed-up job again" "$(grep "is missing" "$tmp/out" | head -2)"
  else
    ok "the restored run kept the backed-up shards"
  fi
  expect 0 "restored run ftest into $tmp/rest2: ledger, 0 shards, keys" \
    "restore a backup without shards" -- "$fleet" restore "$tmp/bk-ledger" "$tmp/rest2"
  expect 0 "complete" "it resumes to completion (done jobs played again)" -- \
    "$fleet" run "$tmp/rest2/config.yaml" --workers 1
  as_uninterrupted "$tmp/rest2/shards" "the restored run without shards"
else
  notok "no job was done by the live run" "$(tail -3 "$tmp/coord.log")"
fi

# 3. Refusals and errors.
expect 1 "$tmp/none/ledger.lmdb: no ledger" "a run directory without a ledger: named" -- \
  "$fleet" backup "$tmp/none" "$tmp/bk-none"
mkdir "$tmp/garbage" "$tmp/cut"
head -c 8192 /dev/zero | tr '\0' 'x' > "$tmp/garbage/ledger.lmdb"
expect 1 "$tmp/garbage/ledger.lmdb: .*not an LMDB file" "a ledger that is no LMDB file: named" -- \
  "$fleet" backup "$tmp/garbage" "$tmp/bk-garbage"
head -c 12288 "$tmp/ref/ledger.lmdb" > "$tmp/cut/ledger.lmdb"
expect 1 "$tmp/cut/ledger.lmdb: the ledger is damaged" "a truncated ledger: named" -- \
  "$fleet" backup "$tmp/cut" "$tmp/bk-cut"
cp -r "$tmp/ref" "$tmp/flip"
flip_ledger_record "$tmp/flip/ledger.lmdb" "$(awk 'NR == 2 { print $2 }' "$tmp/d.ref")"
expect 1 "$tmp/flip/ledger.lmdb: the ledger is damaged: a job record does not check" \
  "a flipped byte in a done job's record: named" -- "$fleet" backup "$tmp/flip" "$tmp/bk-flip"
if [ ! -e "$tmp/bk-flip" ] && [ ! -e "$tmp/bk-none" ] && [ ! -e "$tmp/bk-garbage" ] && [ ! -e "$tmp/bk-cut" ]; then
  ok "a failed backup leaves no DEST"
else
  notok "a failed backup made its DEST"
fi
mkdir "$tmp/full"
touch "$tmp/full/x"
expect 2 "$tmp/full: exists and is not empty" "a DEST that exists and is not empty is refused" -- \
  "$fleet" backup "$tmp/ref" "$tmp/full"
expect 2 "$tmp/full: exists and is not empty" "a restore into a non-empty directory is refused" -- \
  "$fleet" restore "$tmp/bk" "$tmp/full"
expect 1 "$tmp/ref/shards.manifest: .*not a complete backup" \
  "a restore from a directory that is no whole backup is refused" -- \
  "$fleet" restore "$tmp/ref" "$tmp/rest3"
tap_done
