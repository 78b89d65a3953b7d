#!/usr/bin/python3
"""Python reader speed: records/s for sequential and random reads.

usage: bench_python_reader.py SHARD_FIXTURE [RECORDS [SHARD_DIR | SF_FLEET]]
       (RECORDS default 20000)

SHARD_FIXTURE writes one shard of typical synthetic records with the C
writer; this reads it with spirefleet. Each figure is the median of 3 runs;
one JSON line per figure, then a human line.

Batches for a trainer, in the same run: the per-record path
(``pad_batch`` over ``ShardDataset[i]``, then torch tensors as
spirefleet.train's to_torch makes them) against the C batch reader
(``BatchReader``, then ``to_torch``), both shuffled, batch 1,024, one
thread; the ratio is batch reader / per-record. Both read the dataset's
frame-windowed shuffle of a new epoch (docs/trainer.md "Shuffling"), so
the batch reader decodes each zstd frame once. SHARD_DIR (optional) adds
the same two figures over the shards of a directory (real labels, e.g. a
run's shards/), named python.dir.*, and the batch reader over as many
epochs back to back as make 200,000 records (a trainer's loop).

The trainer's own reads (spirefleet.train), python.trainer_* and
python.dir.trainer_*: loading the window (every record's per-record facts)
and then batches of train.batch's default 128 records drawn from a PCG64
permutation of the whole window, as the trainer draws them, each turned
into torch tensors by spirefleet.train.to_torch, through the C batch path
(``batch.WindowRecords``, what the trainer reads through) against the
pure-Python path it replaced (``window.Records``: every record decoded by
the Python reader, batches padded in numpy). Given the
sf-fleet program instead (what `make bench` passes), it first plays
real_run below, a few seconds of self-play (480 fights from realistic
starts, 50 simulations a decision: about 6,000 real labels), and reads its
shards.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from spirefleet import ShardDataset, open_shard, pad_batch
from spirefleet.batch import BatchReader, WindowRecords

# the self-play config the integration tests play too
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from selfplay import fights_config  # noqa: E402


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


def batches(ds, n, prefix, epochs=0):
    """Per-record batches against the C batch reader over `ds`, shuffled,
    each timed pass on a new epoch's order."""
    import torch
    b = 1024
    epoch = [0]

    def new_epoch():
        epoch[0] += 1
        ds.set_epoch(epoch[0])

    def per_record():
        new_epoch()
        for k0 in range(0, n, b):
            batch = pad_batch([ds[i] for i in range(k0, min(n, k0 + b))])
            {k: torch.from_numpy(v.astype(np.int64) if v.dtype == np.uint16 else v)
             for k, v in batch.items()}

    reader = BatchReader(ds, b)

    def batched():
        new_epoch()
        for batch in reader:
            reader.to_torch(batch)

    what = "%d records of %d shard(s)" % (n, len(ds.paths))
    t_old = timed(per_record)
    emit(prefix + "per_record_batches_records_per_s", n / t_old, "records/s", 3,
         "pad_batch over ShardDataset[i], shuffled, batch %d, into torch tensors, %s" % (b, what))
    frames = reader.frames_decoded()
    t_new = timed(batched)
    frames = (reader.frames_decoded() - frames) / 3
    emit(prefix + "batch_reader_records_per_s", n / t_new, "records/s", 3,
         "BatchReader (C, ctypes), shuffled, batch %d, into torch tensors, %s, %.0f zstd frames "
         "decoded an epoch" % (b, what, frames))
    emit(prefix + "batch_reader_over_per_record", t_old / t_new, "x", 3,
         "the same batches, C batch reader / per-record reader")
    if epochs:
        # a trainer's loop: many epochs back to back, so a pass's fixed
        # costs (the epoch's shuffle, the first batch's buffers) weigh as
        # they do in training
        def many():
            for _ in range(epochs):
                batched()
        t_many = timed(many)
        emit(prefix + "batch_reader_epochs_records_per_s", epochs * n / t_many, "records/s", 3,
             "BatchReader, %d epochs back to back, into torch tensors, %s" % (epochs, what))
    reader.close()


def trainer(paths, prefix, b=128):
    """The trainer's window load and batches: the C batch path
    (WindowRecords) against the pure-Python one (window.Records)."""
    import torch
    from spirefleet.train import to_torch
    from spirefleet.window import Records, find_shards
    infos = find_shards(paths)
    dev = torch.device("cpu")
    readers = {}
    for name, cls in (("python", Records), ("c", WindowRecords)):
        t = timed(lambda: readers.__setitem__(name, cls(infos)))
        n = len(readers[name])
        emit(prefix + "trainer_window_%s_records_per_s" % name, n / t, "records/s", 3,
             "%s(find_shards(...)): the window's %d records loaded"
             % (cls.__name__, n))
    n = len(readers["c"])
    order = np.random.Generator(np.random.PCG64([0, 0])).permutation(n)
    per = {}
    for name in ("python", "c"):
        rec = readers[name]

        def epoch():
            for k in range(0, n - b + 1, b):
                to_torch(rec.batch(order[k:k + b]), dev)
        per[name] = timed(epoch)
        emit(prefix + "trainer_batches_%s_records_per_s" % name, (n // b) * b / per[name],
             "records/s", 3, "%s.batch of a permutation, batch %d, train.to_torch, %d records"
             % (type(rec).__name__, b, n))
    emit(prefix + "trainer_batches_c_over_python", per["python"] / per["c"], "x", 3,
         "the trainer's batches, C batch path / pure-Python path")


def real_run(out):
    """The self-play run whose labels the python.dir.* figures read when
    this is given sf-fleet, writing to `out`."""
    return fights_config("bench-real", out, seed=7, count=480, job_size=96, simulations=50,
                         trees=1, workers=1, start="rewards")


def real_labels(arg, work):
    """The directory of real labels `arg` names: itself, or the shards of
    real_run played by `arg` when it is the sf-fleet program."""
    if os.path.isdir(arg):
        return arg
    out = os.path.join(work, "real")
    cfg = os.path.join(work, "real.yaml")
    with open(cfg, "w") as f:
        f.write(real_run(out))
    subprocess.run([arg, "run", cfg], check=True, stdout=subprocess.DEVNULL)
    return os.path.join(out, "shards")


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
        batches(ds, n, "")
        trainer([path], "")
        if len(sys.argv) > 3:
            # a window of at most a quarter of the frames, so that every
            # epoch decodes every frame (as a data set larger than the
            # cache does) instead of finding them cached
            d = real_labels(sys.argv[3], work)
            frames = ShardDataset([d], shuffle=False).n_frames
            real = ShardDataset([d], seed=1, window=max(1, min(256, frames // 4)))
            batches(real, len(real), "dir.", epochs=max(1, 200000 // len(real)))
            trainer([d], "dir.")
        t = timed(lambda: open_shard(path).close(), runs=21)
        emit("open_ms", t * 1e3, "ms", 21, "open_shard + close of a %.0f MB shard"
             % (os.path.getsize(path) / 1e6))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
