#!/usr/bin/python3
"""The C batch reader (spirefleet.batch over shard/batch.h) gives the values
of the per-record reader: every batch equal to pad_batch of ShardDataset's
records in the same order, and the label ids equal to the records'.

usage: test_batch_reader.py SF_FLEET SHARD_FIXTURE   (TAP on stdout)

Real shards come from a tiny self-play run (sf-fleet run: 16 fights of
rollout search at 100 simulations, two shards); the fixture's synthetic
shards add records of engine-limit fights, which both readers leave out.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from pytap import main, test
from selfplay import fights_config

from spirefleet import ShardDataset, ShardError, open_shard, pad_batch
from spirefleet.batch import BatchError, BatchReader, batch_fields

SF_FLEET, FIXTURE = sys.argv[1:3]
WORK = tempfile.mkdtemp(prefix="sf-batch-test-")
RUN = os.path.join(WORK, "run")
CONFIG = fights_config("brt", RUN, seed=7, count=16, job_size=8, simulations=100, trees=2,
                       workers=2, start="rewards")
IDS = ("game_seed", "job_id", "fight_index", "decision_index", "turn", "encounter_id",
       "ascension")


def real_shards():
    if not os.path.isdir(os.path.join(RUN, "shards")):
        cfg = os.path.join(WORK, "run.yaml")
        with open(cfg, "w") as f:
            f.write(CONFIG)
        r = subprocess.run([SF_FLEET, "run", cfg], capture_output=True, text=True, timeout=240)
        assert r.returncode == 0, "sf-fleet run: exit %d\n%s" % (r.returncode, r.stderr)
    return os.path.join(RUN, "shards")


def fixture_shards():
    d = os.path.join(WORK, "fixture")
    if not os.path.isdir(d):
        os.makedirs(d)
        subprocess.run([FIXTURE, d], check=True, capture_output=True)
    return [os.path.join(d, "a.shard"), os.path.join(d, "b.shard")]


def compare(ds, reader):
    """Every batch of reader against pad_batch of ds's records; returns the
    records compared."""
    n = 0
    b = reader.batch_size
    for k in range(len(reader)):
        got = reader.batch(k)
        recs = [ds[i] for i in range(k * b, min(len(ds), (k + 1) * b))]
        want = pad_batch(recs)
        for key, w in want.items():
            g = got[key]
            assert g.dtype == w.dtype and g.shape == w.shape, \
                "batch %d: %s is %s %s, pad_batch gives %s %s" % (k, key, g.dtype, g.shape,
                                                                  w.dtype, w.shape)
            assert np.array_equal(g, w), "batch %d: %s values differ" % (k, key)
        for key in IDS:
            want_ids = np.array([r["ids"][key] for r in recs], got[key].dtype)
            assert np.array_equal(got[key], want_ids), "batch %d: ids.%s differ" % (k, key)
        for key in ("won", "value"):
            w = np.array([r["outcome"][key] for r in recs], np.float32)
            assert np.array_equal(got[key], w), "batch %d: outcome.%s differs" % (k, key)
        nt = [r["inputs"]["token_type"].shape[0] for r in recs]
        nq = [r["inputs"]["query"].shape[0] for r in recs]
        assert list(got["n_tokens"]) == nt and list(got["n_queries"]) == nq, k
        assert not got["engine_limit"].any(), "batch %d: an engine-limit record" % k
        n += len(recs)
    return n


@test
def real_shards_equal_the_per_record_reader_over_two_epochs():
    ds = ShardDataset(real_shards(), seed=5)
    reader = BatchReader(ds, 37)  # not a divisor: the last batch is smaller
    assert len(reader) == -(-len(ds) // 37)
    n = 0
    for epoch in (0, 1):
        reader.set_epoch(epoch)
        n += compare(ds, reader)
    assert n == 2 * len(ds) and len(ds) > 100, (n, len(ds))
    reader.close()
    return "%d records, %d shards" % (len(ds), len(ds.paths))


@test
def engine_limit_records_are_left_out_as_shard_dataset_does():
    paths = fixture_shards()
    for shuffle in (True, False):
        ds = ShardDataset(paths, seed=2, shuffle=shuffle)
        assert ds.skipped_engine_limit > 0
        reader = BatchReader(ds, 64)
        assert compare(ds, reader) == len(ds) == 420 - ds.skipped_engine_limit
    # drop_last and paths given directly
    reader = BatchReader(paths, 64, drop_last=True, seed=2)
    assert len(reader) == len(reader.dataset) // 64
    assert reader.batch(len(reader) - 1)["token_type"].shape[0] == 64


def frame_of_items(ds):
    """(shard, first record of its frame) of every dataset item, in order,
    from each shard's own frame list."""
    firsts = {}
    out = []
    for i in range(len(ds)):
        path, local = ds.locate(i)
        if path not in firsts:
            with open_shard(path) as s:
                firsts[path] = s.frames()[0]
        f = firsts[path]
        out.append((path, int(f[np.searchsorted(f, local, "right") - 1])))
    return out


@test
def the_shuffle_is_a_frame_windowed_permutation_fixed_by_seed_and_epoch():
    """Every record once an epoch; the order a function of (seed, epoch)
    alone (not of the order the paths come in); records of one frame never
    spread over more than one window of `window` frames, and a window mixes
    its frames' records; shuffle off: file order."""
    paths = fixture_shards()
    for window in (1, 4, 256):
        ds = ShardDataset(paths, seed=11, window=window)
        again = ShardDataset(list(reversed(paths)), seed=11, window=window)
        orders = []
        for epoch in (0, 1):
            ds.set_epoch(epoch)
            again.set_epoch(epoch)
            assert sorted(ds._order.tolist()) == list(range(len(ds))), "not a permutation"
            assert np.array_equal(ds._order, again._order)
            orders.append(ds._order.copy())
            # each frame's items span positions [lo, hi]; windows do not
            # interleave, so overlapping spans merge into groups of at most
            # `window` frames
            span = {}
            for pos, key in enumerate(frame_of_items(ds)):
                lo, hi = span.get(key, (pos, pos))
                span[key] = (min(lo, pos), max(hi, pos))
            groups, end, size = [], -1, 0
            for lo, hi in sorted(span.values()):
                if lo > end and size:
                    groups.append(size)
                    size = 0
                size += 1
                end = max(end, hi)
            groups.append(size)
            assert max(groups) <= window, (window, max(groups))
            if window == 1:  # frame by frame, each frame's records in some order
                assert len(groups) == len(span)
        assert not np.array_equal(orders[0], orders[1]), "epochs 0 and 1 in the same order"
    ds = ShardDataset(paths, seed=11, window=4)
    pos = np.empty(len(ds), np.int64)
    pos[ds._order] = np.arange(len(ds))
    assert (np.diff(pos) < 0).any(), "records within a window kept in file order"
    assert np.array_equal(ShardDataset(paths, seed=11, shuffle=False)._order, np.arange(len(ds)))
    other = ShardDataset(paths, seed=12, window=4)
    assert not np.array_equal(other._order, ds._order)


@test
def each_frame_is_decoded_once_an_epoch():
    """With the window's frames cached, the C batch reader and the Python
    per-record path each decompress every frame holding a kept record
    once an epoch (the first epoch exactly once each; a later one may find
    up to a window of frames still cached from the epoch before)."""
    window = 4
    ds = ShardDataset(fixture_shards(), seed=3, window=window)
    used = len(set(frame_of_items(ds)))
    assert used * 8 < len(ds) and used > 3 * window, (used, len(ds))
    reader = BatchReader(ds, 50)
    for epoch in (0, 1, 2):
        reader.set_epoch(epoch)
        before = reader.frames_decoded()
        for _ in reader:
            pass
        got = reader.frames_decoded() - before
        assert got == used if epoch == 0 else used - window <= got <= used, (epoch, got, used)
        before = ds._cache.decoded
        for i in range(len(ds)):
            ds[i]
        got = ds._cache.decoded - before
        assert got == used if epoch == 0 else used - window <= got <= used, (epoch, got, used)
    reader.close()
    return "%d records in %d frames" % (len(ds), used)


@test
def the_field_table_covers_pad_batch():
    names = [f[0] for f in batch_fields()]
    recs = [ShardDataset(fixture_shards(), shuffle=False)[i] for i in range(3)]
    missing = set(pad_batch(recs)) - set(names)
    assert not missing, missing
    assert len(set(names)) == len(names)


@test
def torch_tensors_share_memory_and_ids_become_int64():
    import torch
    reader = BatchReader(fixture_shards(), 16, shuffle=False)
    b = reader.batch(0)
    t = reader.to_torch(b)
    assert t["token_cont"].dtype == torch.float32
    assert t["token_cont"].data_ptr() == b["token_cont"].ctypes.data
    assert t["token_cat"].dtype == torch.int64 and t["query"].dtype == torch.int64
    assert torch.equal(t["token_cat"], torch.from_numpy(b["token_cat"].astype(np.int64)))
    assert t["game_seed"].dtype == torch.int64
    assert [int(x) for x in t["game_seed"]] == [int(x) for x in b["game_seed"]]


@test
def a_damaged_record_is_refused_with_its_shard_and_record():
    src = fixture_shards()[0]
    size = os.path.getsize(src)
    data = open(src, "rb").read()
    for off in range(size // 3, 2 * size // 3, 997):
        bad = os.path.join(WORK, "bad-%d.shard" % off)
        with open(bad, "wb") as f:
            f.write(data[:off] + bytes([data[off] ^ 0x40]) + data[off + 1:])
        try:
            open_shard(bad).close()  # the structure pages still check out
        except ShardError:
            os.unlink(bad)
            continue
        reader = BatchReader([bad], 50, shuffle=False)
        try:
            for _ in reader:
                pass
        except BatchError as e:
            assert bad in str(e) and "record" in str(e), str(e)
            return "byte %d" % off
        finally:
            reader.close()
        os.unlink(bad)
    raise AssertionError("no flipped byte in a record frame was caught")


@test
def out_of_range_items_are_errors():
    reader = BatchReader(fixture_shards(), 8)
    for k in (-1, len(reader)):
        try:
            reader.batch(k)
        except IndexError:
            continue
        raise AssertionError("batch %d accepted" % k)
    try:
        BatchReader(fixture_shards(), 0)
    except ValueError:
        return
    raise AssertionError("batch_size 0 accepted")


sys.exit(main(cleanup=lambda: shutil.rmtree(WORK, ignore_errors=True)))
