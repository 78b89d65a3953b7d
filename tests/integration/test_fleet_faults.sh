#!/bin/sh
# Faults at the coordinator's disk (TAP), against an undisturbed run's
# shard content digests:
#   - a full filesystem at the first start is an error naming the ledger
#     and the OS reason, not a crash (SIGBUS);
#   - a disk that fills mid-run pauses uploads (workers keep their shards,
#     nothing fails or is quarantined) and they resume when space returns;
#   - a damaged ledger stops the coordinator with a message naming it, and
#     `sf-fleet rebuild-ledger` rebuilds it from the stored shards, after
#     which the run completes (a shard lost too is played again).
# The small filesystems are tmpfs mounts in a private mount namespace of
# this script (root and unshare(1)); without them those checks are skipped.
#
# usage: test_fleet_faults.sh SF_FLEET SF_SHARD
set -u
if [ -z "${SF_FAULTS_NS:-}" ] && [ "$(id -u)" = 0 ] && unshare -m --propagation private true 2>/dev/null; then
  SF_FAULTS_NS=1 exec unshare -m --propagation private "$0" "$@"
fi
fleet=$1
shard=$2
. "$(dirname "$0")/tap.sh"
tap_scratch sf-faults-test
trap 'for p in $pids; do kill -9 "$p" 2>/dev/null; done; for m in "$tmp"/full0 "$tmp"/disk; do umount "$m" 2>/dev/null; done; rm -rf "$tmp"' EXIT

# config NAME OUTDIR ENDPOINT WORKERS
config() { ftest_config "$@"; }
# as_undisturbed DIR NAME WHAT: the shards in DIR must have the digests of
# the undisturbed run ($tmp/d.ref)
as_undisturbed() {
  digests "$1" > "$tmp/d.$2"
  if cmp -s "$tmp/d.$2" "$tmp/d.ref"; then
    ok "after $3: the undisturbed run's digests"
  else
    notok "digests differ after $3" "$(diff "$tmp/d.$2" "$tmp/d.ref" | head -4)"
  fi
}
# fill FILE: zeros until its filesystem is full
fill() { dd if=/dev/zero of="$1" bs=65536 > /dev/null 2>&1 || true; }

# The undisturbed run.
config ref "$tmp/ref" "tcp://127.0.0.1:*" 1
"$fleet" run "$tmp/ref.yaml" > "$tmp/ref.log" 2>&1
digests "$tmp/ref/shards" > "$tmp/d.ref"
if [ "$(wc -l < "$tmp/d.ref")" = 6 ]; then ok "the undisturbed run stores 6 shards"; else
  notok "the undisturbed run" "$(tail -3 "$tmp/ref.log")"; fi

mounted=0
mkdir -p "$tmp/full0" "$tmp/disk"
if [ -n "${SF_FAULTS_NS:-}" ] && mount -t tmpfs -o size=1m tmpfs "$tmp/full0" 2>/dev/null &&
  mount -t tmpfs -o size=24m tmpfs "$tmp/disk" 2>/dev/null; then
  mounted=1
fi

if [ "$mounted" = 1 ]; then
  # 1. A full filesystem at the first start.
  fill "$tmp/full0/filler"
  config full0 "$tmp/full0/run" "ipc://$tmp/f0.sock" 0
  "$fleet" coordinator "$tmp/full0.yaml" --exit-when-done > "$tmp/full0.log" 2>&1
  st=$?
  if [ "$st" = 1 ] && grep -q "ledger.lmdb: .*No space left on device" "$tmp/full0.log"; then
    ok "a full disk at the first start: exit 1 naming the ledger and ENOSPC"
  else
    notok "a full disk at the first start: exit $st" "$(head -c 300 "$tmp/full0.log")"
  fi

  # 2. The disk fills mid-run, then space returns.
  ep="ipc://$tmp/d.sock"
  config disk "$tmp/disk/run" "$ep" 0
  "$fleet" coordinator "$tmp/disk.yaml" > "$tmp/disk-coord.log" 2>&1 &
  coord=$!
  pids="$pids $coord"
  export SF_KEYS="$tmp/disk/run/keys" # a local run's keys (docs/operator.md "Security")
  "$fleet" worker --connect "$ep" --id wd --scratch "$tmp/wd" > "$tmp/wd.log" 2>&1 &
  pids="$pids $!"
  if wait_status "$ep" '/^jobs:/ && $2 >= 1' 60; then
    fill "$tmp/disk/filler"
    if wait_status "$ep" '/^UPLOADS PAUSED/' 60 && wait_status "$ep" '/^jobs:/ && $4 >= 1' 5; then
      ok "a full disk mid-run: uploads paused, jobs still leased"
    else
      notok "uploads never paused" "$("$fleet" status "$ep" 2>&1 | head -c 400)"
    fi
    sleep 1 # a few retries while full
    "$fleet" status "$ep" > "$tmp/st.full" 2>&1
    if ! grep -q "^FAILING\|^QUARANTINED\|^CANNOT" "$tmp/st.full" &&
      ! grep -q "upload attempt\|job [0-9]*: .*failed" "$tmp/wd.log" &&
      grep -q "keeping it, offering it again" "$tmp/wd.log" &&
      grep -q "No space left on device" "$tmp/wd.log"; then
      ok "while full: nothing failed or quarantined, the worker keeps its shard (ENOSPC named)"
    else
      notok "while full" "$(cat "$tmp/st.full"; tail -3 "$tmp/wd.log")"
    fi
    rm -f "$tmp/disk/filler"
    if wait_status "$ep" '/COMPLETE/' 120; then
      ok "space returns: the run completes"
    else
      notok "no completion after space returned" "$(tail -3 "$tmp/disk-coord.log")"
    fi
    "$fleet" stop "$ep" > /dev/null 2>&1
    wait "$coord"
    as_undisturbed "$tmp/disk/run/shards" disk "the full disk"
  else
    notok "no job was done before the disk was filled" "$(tail -3 "$tmp/disk-coord.log")"
  fi
else
  echo "# skipped the full-disk checks: no tmpfs in a private mount namespace (needs root)"
fi

# 3. A damaged ledger, rebuilt from the shards; one shard lost as well.
cp -r "$tmp/ref" "$tmp/dmg"
config dmg "$tmp/dmg" "ipc://$tmp/g.sock" 1
flip_ledger_record "$tmp/dmg/ledger.lmdb" "$(awk 'NR == 2 { print $2 }' "$tmp/d.ref")"
expect 1 "ledger.lmdb: the ledger is damaged: job 2's record is damaged" \
  "a flipped byte in a done job's record stops the coordinator, naming it" -- \
  "$fleet" coordinator "$tmp/dmg.yaml" --exit-when-done
rm "$tmp/dmg/shards/ftest-job000004.shard"
expect 0 "new ledger: 5 of 6 jobs done from the shards" \
  "sf-fleet rebuild-ledger adopts the 5 shards left" -- "$fleet" rebuild-ledger "$tmp/dmg.yaml"
if ls "$tmp/dmg"/ledger.lmdb.damaged-* > /dev/null 2>&1; then ok "the damaged ledger is kept aside"; else
  notok "the damaged ledger is not kept"; fi
expect 0 "complete" "the run completes from the rebuilt ledger (job 4 played again)" -- \
  "$fleet" run "$tmp/dmg.yaml"
as_undisturbed "$tmp/dmg/shards" dmg "the rebuild"
tap_done
