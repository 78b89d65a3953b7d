#!/usr/bin/python3
"""Two builds of the C batch reader against each other, in one process.

usage: bench_batch_ab.py SHARD_DIR LIB_A LIB_B [PAIRS]   (default 30 pairs)

LIB_A and LIB_B are two libsfbatch.so files (say, the parent commit's and
this one's); both are loaded side by side (ctypes keeps their symbols
apart) and each reads the shards of SHARD_DIR with its own BatchReader:
the same ShardDataset shuffle (seed 1, a window of a quarter of the frames
so every epoch decodes every frame), batch 1,024, into torch tensors.
Passes of three epochs alternate A, B / B, A for PAIRS pairs, so a change
in the machine's speed over the run falls on both alike; the figure to
read is the median over pairs of B's rate / A's. One JSON line per figure,
then a human line.
"""
import glob
import os
import statistics
import sys
import time

from spirefleet import batch
from spirefleet.dataset import ShardDataset


def emit(name, value, unit, n, human):
    print('{"bench":"batch_ab.%s","value":%.6g,"unit":"%s","n":%d,"median":%.6g}'
          % (name, value, unit, n, value))
    print("  %s: %.4g %s  (%s)" % (name, value, unit, human))


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__.split("\n\n")[1])
    shard_dir, lib_paths = sys.argv[1], sys.argv[2:4]
    pairs = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    paths = sorted(glob.glob(os.path.join(shard_dir, "*.shard")))
    if not paths:
        sys.exit("bench_batch_ab: no *.shard in %s" % shard_dir)
    libs = []
    for p in lib_paths:
        os.environ["SF_BATCH_LIB"] = p
        libs.append(batch._load_lib())
    frames = ShardDataset(paths, shuffle=False).n_frames
    readers = []
    for lib in libs:
        batch._lib = lib  # the library a reader's calls go to
        ds = ShardDataset(paths, seed=1, window=max(1, min(256, frames // 4)))
        readers.append(batch.BatchReader(ds, 1024))
    rate = [[], []]
    for e in range(pairs):
        for i in (0, 1) if e % 2 == 0 else (1, 0):
            batch._lib = libs[i]
            r = readers[i]
            r.set_epoch(e)
            n, t = 0, time.perf_counter()
            for _ in range(3):
                for b in r:
                    r.to_torch(b)
                    n += len(b["won"])
            rate[i].append(n / (time.perf_counter() - t))
    ratio = [b / a for a, b in zip(*rate)]
    what = "%d records of %d shard(s), %d pairs of 3-epoch passes" % (
        len(readers[0].dataset), len(paths), pairs)
    emit("a_records_per_s", statistics.median(rate[0]), "records/s", pairs,
         "LIB_A %s, %s" % (lib_paths[0], what))
    emit("b_records_per_s", statistics.median(rate[1]), "records/s", pairs,
         "LIB_B %s" % lib_paths[1])
    emit("b_over_a", statistics.median(ratio), "x", pairs,
         "median over pairs of B / A (quartiles %.3f, %.3f)"
         % tuple(statistics.quantiles(ratio)[0:3:2]) if pairs > 1 else "one pair")
    for i in (1, 0):
        batch._lib = libs[i]
        readers[i].close()


if __name__ == "__main__":
    main()
