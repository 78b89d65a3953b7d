#!/usr/bin/python3
"""Python reader speed: records/s for sequential and random reads.

usage: bench_python_reader.py SHARD_FIXTURE [RECORDS]   (default 20000)

SHARD_FIXTURE writes one shard of typical synthetic records with the C
writer; this reads it with spirefleet. Each figure is the median of 3 runs;
one JSON line per figure, then a human line.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from spirefleet import ShardDataset, open_shard


def emit(name, value, unit, n, human):
    print('{"bench":"python.%s","value":%.6g,"unit":"%s","n":%d,"median":%.6g}'
          % (name, value, unit, n, value))
    print("  %s: %.4g %s  (%s)" % (name, value, unit, human))


def timed(fn, runs=3):
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main():
    fixture = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    work = tempfile.mkdtemp(prefix="sf-bench-py-")
    try:
        subprocess.run([fixture, work, str(n)], check=True)
        path = os.path.join(work, "a.shard")
        s = open_shard(path)
        raw_mb = s.manifest["raw_bytes"] / 1e6
        step = 7919

        def seq():
            for i in range(n):
                s[i]

        def rand():
            for k in range(n):
                s[(k * step + 17) % n]

        def raw():
            for i in range(n):
                s.raw(i)

        t = timed(seq)
        emit("read_seq_records_per_s", n / t, "records/s", 3, "open_shard()[i] in order, "
             "dict of numpy arrays, %d records" % n)
        emit("read_seq_mb_per_s", raw_mb / t, "MB/s", 3, "uncompressed record bytes")
        t = timed(rand)
        emit("read_random_records_per_s", n / t, "records/s", 3, "scattered order")
        t = timed(raw)
        emit("read_raw_records_per_s", n / t, "records/s", 3,
             "raw(i): decompressed protobuf bytes, not decoded")
        s.close()
        ds = ShardDataset([path], seed=1)
        t = timed(lambda: [ds[i] for i in range(n)])
        emit("dataset_shuffled_records_per_s", n / t, "records/s", 3,
             "ShardDataset[i], shuffled order")
        t = timed(lambda: open_shard(path).close(), runs=21)
        emit("open_ms", t * 1e3, "ms", 21, "open_shard + close of a %.0f MB shard"
             % (os.path.getsize(path) / 1e6))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
