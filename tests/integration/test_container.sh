#!/bin/sh
# The container image for real (TAP), run by `make container`, not by
# `make test` (deploy/README.md says why): scripts/container builds the
# image without a registry, its programs find every library they link,
# and `sf-fleet run` of a small fleet inside it (no network but loopback)
# writes shards that verify, with the content digests of the same run on
# this machine.
#
# usage: test_container.sh SOURCE_ROOT BUILD_DIR   (a -Dgpu=disabled build dir;
# scripts/container configures it when missing)
set -u
root=$1
build=$2
fleet=$build/sf-fleet/sf-fleet
shard=$build/shard/sf-shard
image=localhost/spirefleet:latest
. "$(dirname "$0")/tap.sh"
tmp=$(mktemp -d /tmp/sf-container-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

t0=$(date +%s)
if "$root/scripts/container" "$build" >"$tmp/build.out" 2>&1; then
  ok "scripts/container builds $image in $(($(date +%s) - t0)) s"
  sed 's/^/# /' "$tmp/build.out"
else
  notok "scripts/container" "$(tail -n 5 "$tmp/build.out")"
  tap_done
fi

# How podman can start a container here: as it is, or, nested in another
# container, with runc and limits within the ones this one has.
run_opts=
for opts in "" "--runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024"; do
  # shellcheck disable=SC2086 # options, one a word
  if podman run --rm --network=none $opts "$image" sf-fleet --help >"$tmp/help.out" 2>&1; then
    run_opts=$opts
    break
  fi
done
if grep -q "usage: sf-fleet run" "$tmp/help.out"; then
  ok "the image runs sf-fleet as uid 10001 (podman run ${run_opts:-with its defaults})"
else
  notok "podman cannot run the image" "$(tail -n 3 "$tmp/help.out")"
  tap_done
fi
prun() {
  # shellcheck disable=SC2086
  podman run --rm -i --network=none $run_opts "$image" "$@"
}

prun sh -c 'for b in /usr/local/bin/*; do ldd "$b" | sed "s|^|$b: |"; done' >"$tmp/ldd.out" 2>&1
if [ -s "$tmp/ldd.out" ] && ! grep -q "not found" "$tmp/ldd.out" &&
  [ "$(prun id -u)" = 10001 ]; then
  ok "every program in the image finds its libraries (ldd), and runs as uid 10001"
else
  notok "missing libraries" "$(grep 'not found' "$tmp/ldd.out" | head -n 5)"
fi

config() { # OUTPUT_DIR
  cat <<EOF
run: {name: ctest, output_dir: "$1", seed: 21}
seeds: {start: 50, count: 12, job_size: 3}
play: {mode: fights, encounters: {weak: 1, strong: 1}}
search: {simulations: 200, trees: 2}
workers: {count: 2, threads: 1, fights_per_thread: 1}
coordinator: {endpoint: "tcp://127.0.0.1:*", heartbeat_ms: 200}
EOF
}
digests() { awk '$1 == "ok" { n = split($2, p, "/"); print p[n], $5 }' | sort; }
config /tmp/ctest | prun sh -c 'cat >/tmp/ctest.yaml && sf-fleet run /tmp/ctest.yaml >/tmp/run.log 2>&1 ||
  { cat /tmp/run.log; exit 1; }; sf-shard verify /tmp/ctest/shards' >"$tmp/inside.out" 2>&1
digests <"$tmp/inside.out" >"$tmp/d.inside"
config "$tmp/host" >"$tmp/host.yaml"
"$fleet" run "$tmp/host.yaml" >"$tmp/host.out" 2>&1
"$shard" verify "$tmp/host/shards" | digests >"$tmp/d.host"
if [ "$(wc -l <"$tmp/d.inside")" = 4 ] && cmp -s "$tmp/d.inside" "$tmp/d.host"; then
  ok "sf-fleet run inside the image: 4 shards verify, with this machine's content digests"
else
  notok "sf-fleet run inside the image" "$(head -c 600 "$tmp/inside.out")"
fi
tap_done
