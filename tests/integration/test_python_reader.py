#!/usr/bin/python3
"""The Python reader reads what the C writer wrote: every value equal.

usage: test_python_reader.py SHARD_FIXTURE SF_SHARD SF_PLAY   (TAP on stdout)

SHARD_FIXTURE writes two shards and expected.jsonl (every record as the C
generator built it, before the writer saw it); this test reads the shards
with spirefleet (lmdb + zstandard + protobuf + numpy) and compares every
field, the manifest and the content digest (recomputed with hashlib), then
checks the reader's refusals, ShardDataset's deterministic shuffling, a
PyTorch DataLoader, pad_batch and `sf-shard export --npz`.
"""

import contextlib
import glob
import hashlib
import io
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np
from pytap import main, scratch, test

import spirefleet
from spirefleet import ShardDataset, ShardError, open_shard, pad_batch

FIXTURE, SF_SHARD, SF_PLAY = sys.argv[1], sys.argv[2], sys.argv[3]
DTYPES = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "i32": np.int32,
          "f32": np.float32}
U64_FIELDS = {"job_id", "game_seed"}


def tensor(t):
    return np.array(t["data"], dtype=DTYPES[t["dtype"]]).reshape(t["shape"])


def assert_array(got, want, what):
    assert got.dtype == want.dtype, "%s: dtype %s, expected %s" % (what, got.dtype, want.dtype)
    assert got.shape == want.shape, "%s: shape %s, expected %s" % (what, got.shape, want.shape)
    assert np.array_equal(got, want), "%s: values differ" % what


def compare_record(got, want, where):
    """Every field of one record dict against the generator's JSON."""
    assert got["schema_version"] == want["schema_version"], where
    for k, v in want["ids"].items():
        w = int(v) if k in U64_FIELDS else v
        assert got["ids"][k] == w, "%s: ids.%s = %r, expected %r" % (where, k, got["ids"][k], w)
    for k, v in want["inputs"].items():
        assert_array(got["inputs"][k], tensor(v), "%s: inputs.%s" % (where, k))
    s, ws = got["search"], want["search"]
    assert_array(s["visits"], np.array(ws["visits"], np.uint32), where + ": search.visits")
    for k in ("q", "completed_q", "policy", "tree_root_values"):
        assert_array(s[k], np.array(ws[k], np.float32), "%s: search.%s" % (where, k))
    for k in ("chosen", "simulations", "trees", "searched", "fallbacks", "rollouts_cut_off"):
        assert s[k] == ws.get(k, 0), "%s: search.%s = %r, expected %r" % (where, k, s[k], ws[k])
    for k in ("root_raw_value", "root_search_value"):
        assert s[k] == np.float32(ws[k]), "%s: search.%s" % (where, k)
    o, wo = got["outcome"], want["outcome"]
    for k in ("won", "final_hp", "max_hp", "turns", "potions_used", "potions_left",
              "monster_hp_left", "monster_hp_pool", "engine_limit", "turn_limit"):
        assert o[k] == wo.get(k, 0), "%s: outcome.%s = %r, expected %r" % (where, k, o[k], wo[k])
    assert o["value"] == np.float32(wo["value"]), where + ": outcome.value"
    assert_array(o["value_bins"], np.array(wo["value_bins"], np.float32),
                 where + ": outcome.value_bins")
    assert_array(got["forecast"]["target"], tensor(want["forecast"]["target"]),
                 where + ": forecast.target")
    assert_array(got["forecast"]["mask"], tensor(want["forecast"]["mask"]),
                 where + ": forecast.mask")
    if want["teacher"] is None:
        assert got["teacher"] is None, where + ": teacher present, expected none"
    else:
        t, wt = got["teacher"], want["teacher"]
        assert t is not None, where + ": teacher missing"
        assert t["rollouts"] == wt["rollouts"], where + ": teacher.rollouts"
        assert_array(t["mean"], tensor(wt["mean"]), where + ": teacher.mean")
        assert_array(t["coverage"], tensor(wt["coverage"]), where + ": teacher.coverage")


def load_expected(path):
    shards, records = {}, {}
    with open(path) as f:
        for line in f:
            o = json.loads(line)
            if "record" in o:
                records.setdefault(o["shard"], []).append(o["record"])
            else:
                shards[o["shard"]] = o
    return shards, records


WORK = tempfile.mkdtemp(prefix="sf-py-reader-")
subprocess.run([FIXTURE, WORK], check=True)
EXPECTED, RECORDS = load_expected(os.path.join(WORK, "expected.jsonl"))
A = os.path.join(WORK, "a.shard")
B = os.path.join(WORK, "b.shard")
# A and B are jobs 7 and 8 of run synth-run under names a person gave them;
# a directory holds a shard only under its canonical name (the coordinator's,
# shard.h sf_shard_name): CANON has copies so named.
NA, NB = "synth-run-job000007.shard", "synth-run-job000008.shard"
CANON = os.path.join(WORK, "canon")
CA, CB = os.path.join(CANON, NA), os.path.join(CANON, NB)
os.makedirs(CANON)
shutil.copyfile(A, CA)
shutil.copyfile(B, CB)


@test
def every_value_equal():
    n = 0
    for name in ("a.shard", "b.shard"):
        with open_shard(os.path.join(WORK, name)) as s:
            want = RECORDS[name]
            assert len(s) == len(want) == EXPECTED[name]["records"]
            for i, rec in enumerate(s):
                compare_record(rec, want[i], "%s record %d" % (name, i))
                n += 1
            # random access too, backwards across blocks
            for i in range(len(s) - 1, -1, -7):
                compare_record(s[i], want[i], "%s record %d (random)" % (name, i))
    assert n == 420


@test
def manifest_and_digest_match_the_writer():
    for name, path in (("a.shard", A), ("b.shard", B)):
        e = EXPECTED[name]
        with open_shard(path) as s:
            m = s.manifest
            assert m["content_digest"] == e["digest"], (m["content_digest"], e["digest"])
            assert m["record_count"] == e["records"]
            assert m["job_id"] == e["job_id"]
            assert m["seed_first"] == e["seed_first"] and m["seed_last"] == e["seed_last"]
            assert m["run_id"] == "synth-run" and m["model_sha256"] == "rollout"
            assert m["schema_version"] == spirefleet.SCHEMA_VERSION
            assert m["compression"] == "zstd"
            assert m["stats"]["fallback_by_kind"] == {"eval_timeout": 1}
            assert m["stats"]["decisions"] == e["records"]
            # the digest, recomputed here with hashlib from the raw records
            h = hashlib.sha256()
            for i in range(len(s)):
                raw = s.raw(i)
                h.update(struct.pack("<Q", len(raw)) + raw)
            assert h.hexdigest() == e["digest"]
            assert s.content_digest() == e["digest"]
            s.verify()
    with open_shard(B) as s:
        assert s.manifest["compression_level"] == 9


def copy(name):
    os.makedirs(os.path.join(scratch(), "broken"), exist_ok=True)
    dst = os.path.join(scratch(), "broken", name)
    shutil.copyfile(A, dst)
    return dst


def raised(kind, what, fn, *args):
    """The `kind` exception fn(*args) raises; an AssertionError saying
    `what` when it returns instead."""
    try:
        fn(*args)
    except kind as e:
        return e
    raise AssertionError(what)


def refused(path, kind):
    e = raised(ShardError, "%s was not refused" % path, lambda: open_shard(path).close())
    assert e.kind == kind, "%s: kind %s (%s), expected %s" % (path, e.kind, e, kind)
    assert path in str(e), str(e)
    return str(e)


def trailer_start(path):
    with open(path, "rb") as f:
        f.seek(-64, 2)
        footer = f.read(64)
    return struct.unpack_from("<Q", footer, 16)[0]


@test
def truncated_unsealed_missing_are_refused():
    t = copy("trunc.shard")
    os.truncate(t, os.path.getsize(t) - 1)
    assert "trailer is cut short" in refused(t, "truncated")
    # the footer's magic damaged, the rest of it intact: corrupt, not cut
    m = copy("magic.shard")
    flip(m, os.path.getsize(m) - 64)
    assert "seal trailer footer damaged" in refused(m, "corrupt")
    os.truncate(m, os.path.getsize(m) - 64)  # the footer cut off whole
    assert "trailer is cut short" in refused(m, "truncated")
    os.truncate(t, os.path.getsize(t) // 2)
    assert "LMDB data needs" in refused(t, "truncated")
    g = copy("grown.shard")
    with open(g, "ab") as f:
        f.write(b"xyz")
    assert "3 bytes follow its seal trailer" in refused(g, "format")
    s = copy("a.shard.4243.5ea1ed00.tmp")  # sealed, but never renamed
    assert "a writer's temporary file" in refused(s, "unsealed")
    u = copy("a.shard.4242.0badcafe.tmp")
    os.truncate(u, trailer_start(u))  # LMDB data only: what a writer leaves
    assert "a writer's temporary file" in refused(u, "unsealed")
    assert "no such shard" in refused(os.path.join(scratch(), "nope.shard"), "missing")
    e = raised(ShardError, "a dataset over broken shards was built", ShardDataset,
               os.path.join(scratch(), "broken"))
    assert e.kind in ("truncated", "corrupt", "format"), str(e)


def _hang(signum, frame):
    raise AssertionError("blocked on a FIFO")


@test
def a_fifo_is_refused_without_blocking():
    """A FIFO named like a shard is refused as not a regular file before
    anything opens it (an open() of a FIFO blocks until a writer comes);
    an alarm turns a hang into a failure."""
    d = os.path.join(scratch(), "fifo")
    os.makedirs(d, exist_ok=True)
    x = os.path.join(d, "x.shard")
    os.mkfifo(x)
    old = signal.signal(signal.SIGALRM, _hang)
    signal.alarm(5)
    try:
        assert "not a regular file" in refused(x, "format")
        e = raised(ShardError, "a dataset over a FIFO was built", ShardDataset, d)
        assert e.kind == "format" and "x.shard: not a regular file" in str(e), str(e)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        os.unlink(x)


@test
def renamed_or_swapped_shards_are_refused():
    """The file name binds a shard to its run and job, as sf-shard verify
    checks: the same bytes under another job's or another run's stored name
    are refused, and sf-shard verify says the same."""
    with open_shard(A) as s:
        run, job = s.manifest["run_id"], s.manifest["job_id"]
    for name in ("%s-job%06d.shard" % (run, job + 1), "other-job%06d.shard" % job):
        p = copy(name)
        msg = refused(p, "corrupt")
        assert "(a renamed or swapped shard)" in msg, msg
        r = subprocess.run([SF_SHARD, "verify", p], capture_output=True, text=True)
        assert r.returncode != 0 and "renamed or swapped" in r.stdout + r.stderr, r
    ok = copy("%s-job%06d-a2.shard" % (run, job))
    with open_shard(ok) as s:
        assert len(s) > 0


@test
def a_directory_refuses_shards_not_under_their_canonical_names():
    """A shard found in a directory must have its canonical name: the
    fixture's a.shard, a worker's attempt name and a copy under a made-up
    name are refused by ShardDataset and the training window, naming the
    file and the name expected; the same file named on its own is read."""
    from spirefleet.window import WindowError, find_shards
    want = ("not the canonical name of its shard: expected 'synth-run-job000007.shard' "
            "(run 'synth-run', job 7); a directory holds each shard only under that name")
    for name in ("a.shard", "synth-run-job000007-a2.shard", "copy-of-7.shard"):
        d = os.path.join(scratch(), "named-" + name)
        os.makedirs(d)
        shutil.copyfile(CB, os.path.join(d, NB))
        bad = os.path.join(d, name)
        shutil.copyfile(A, bad)
        e = raised(ShardError, "ShardDataset read %s" % bad, ShardDataset, d)
        assert e.kind == "corrupt" and str(e) == "%s: %s" % (bad, want), str(e)
        e = raised(WindowError, "find_shards read %s" % bad, find_shards, d)
        assert str(e) == "%s: %s" % (os.path.abspath(bad), want), str(e)
        alone = ShardDataset([bad], shuffle=False, skip_engine_limit=False)
        assert len(alone) == 300 and alone.paths == [bad]
        assert [i["records"] for i in find_shards([bad])] == [300]


@test
def a_shard_found_twice_is_read_once_with_a_warning():
    """Two files with one content digest (copies under canonical names in
    two directories, a copy in a subdirectory the window searches, a copy
    beside the file named on its own): each record is read once, and a
    warning names both files."""
    d1, d2 = os.path.join(scratch(), "dup1"), os.path.join(scratch(), "dup1", "again")
    os.makedirs(d2)
    for f in (CA, CB):
        shutil.copyfile(f, os.path.join(d1, os.path.basename(f)))
    shutil.copyfile(CA, os.path.join(d2, NA))
    top, sub = os.path.join(d1, NA), os.path.join(d2, NA)
    with open_shard(A) as s:
        digest = s.manifest["content_digest"]
    # ShardDataset keeps the first in shard order (file name, digest, path):
    # ".../dup1/again/..." sorts before ".../dup1/synth-run-..."
    with contextlib.redirect_stderr(io.StringIO()) as err:
        ds = ShardDataset([d1, d2], shuffle=False, skip_engine_limit=False)
    assert len(ds) == 420, len(ds)  # 300 + 120, not 300 twice
    assert ds.paths == [sub, os.path.join(d1, NB)], ds.paths
    assert ds.skipped_duplicates == [(top, sub)], ds.skipped_duplicates
    assert err.getvalue() == ("ShardDataset: %s holds the content of %s (the same content digest "
                              "%s): skipped, its records are read once\n" % (top, sub, digest)), \
        err.getvalue()
    assert sorted(ds.locate(i) for i in range(len(ds))) == \
        sorted([(sub, i) for i in range(300)] + [(os.path.join(d1, NB), i) for i in range(120)])
    # engine-limit records of a skipped copy are not counted either
    with contextlib.redirect_stderr(io.StringIO()):
        twice_b = ShardDataset([CB, os.path.join(d1, NB)], shuffle=False)
    assert len(twice_b) == 80 and twice_b.skipped_engine_limit == 40
    # the window searches d1 recursively (top-down), again/ holds the copy
    from spirefleet.window import find_shards
    with contextlib.redirect_stderr(io.StringIO()) as err:
        found = find_shards(d1)
    assert [(i["path"], i["records"]) for i in found] == \
        [(os.path.join(d1, NB), 120), (top, 300)], found
    assert err.getvalue() == ("window: %s holds the content of %s (the same content digest %s): "
                              "skipped, its records are read once\n" % (sub, top, digest)), \
        err.getvalue()
    # a file named on its own beside a directory holding its copy
    with contextlib.redirect_stderr(io.StringIO()) as err:
        mixed = ShardDataset([A, CANON], shuffle=False, skip_engine_limit=False)
    assert len(mixed) == 420 and mixed.paths == [A, CB], mixed.paths
    assert mixed.skipped_duplicates == [(CA, A)]
    assert "%s holds the content of %s" % (CA, A) in err.getvalue(), err.getvalue()


@test
def damage_is_found():
    d = copy("damaged.shard")
    data_end = trailer_start(d)
    with open(d, "r+b") as f:  # a byte in the middle of the record data
        f.seek(data_end // 2)
        b = f.read(1)
        f.seek(data_end // 2)
        f.write(bytes([b[0] ^ 0x40]))

    def verify():
        with open_shard(d) as s:
            s.verify()
    e = raised(ShardError, "a flipped byte went unnoticed", verify)
    assert e.kind == "corrupt" and "page %d" % (data_end // 2 // 4096) in str(e), str(e)


def reseal_manifest(name, edit):
    """A copy of a.shard named `name` whose manifest bytes are edit(bytes),
    sealed again; returns its path."""
    import lmdb
    v = copy(name)
    os.truncate(v, trailer_start(v))
    env = lmdb.open(v, subdir=False, lock=False, max_dbs=2)
    meta = env.open_db(b"meta")
    with env.begin(write=True) as txn:
        txn.put(b"manifest", edit(bytes(txn.get(b"manifest", db=meta))), db=meta)
    env.close()
    # Seal it again (docs/format.md: every page a structure page is allowed).
    with open(v, "r+b") as f:
        data = f.read()
        npages = len(data) // 4096
        crcs = [zlib.crc32(data[k * 4096:(k + 1) * 4096]) for k in range(npages)]
        table = struct.pack("<%dI" % (2 * npages), *(crcs + list(range(npages))))
        footer = b"SFSEAL01" + struct.pack("<IIQQQI", 1, 4096, len(data), npages, npages,
                                           zlib.crc32(table)) + bytes(16)
        f.write(table + footer + struct.pack("<I", zlib.crc32(footer)))
    return v


@test
def wrong_schema_version_is_refused():
    from spirefleet import label_pb2

    def v1(raw):
        m = label_pb2.ShardManifest.FromString(raw)
        m.schema_version = 1
        return m.SerializeToString()
    v = reseal_manifest("version.shard", v1)
    # a schema this one replaced: refused, saying what changed
    assert "schema_version 1, this reader knows 4 (schema 1 scored every loss 0" in \
        refused(v, "version")
    r = subprocess.run([SF_SHARD, "stat", v], capture_output=True, text=True)
    assert r.returncode == 1 and "schema_version 1" in r.stderr, (r.returncode, r.stderr)

    def v3(raw):
        m = label_pb2.ShardManifest.FromString(raw)
        m.schema_version = 3
        return m.SerializeToString()
    # the schema before this one: labels of an engine whose relics and
    # potions mostly did nothing, potions_left at most 3
    v = reseal_manifest("version3.shard", v3)
    msg = refused(v, "version")
    assert "manifest: schema_version 3, this reader knows 4 (schema 3 labels came from an " \
        "engine in which most relics and potions did nothing" in msg, msg
    assert "potions_left at most 3: regenerate these labels" in msg, msg


@test
def a_manifest_with_a_stray_end_group_tag_is_refused():
    """An end-group tag (field 1, wire type 4: 0x0c) where no group is open:
    protobuf-c refuses the manifest; Python's protobuf used to stop there
    with only a RuntimeWarning, keeping the fields before it (payload_bytes
    read 0). Both readers refuse it; so does one appended after the last
    field, which Python's protobuf parses whole but warns about."""
    with open_shard(A) as s:
        payload = int(s.manifest["payload_bytes"])
    varint = bytearray()
    while True:
        varint.append((payload & 0x7f) | (0x80 if payload > 0x7f else 0))
        payload >>= 7
        if not payload:
            break
    field = b"\x98\x01" + bytes(varint)  # payload_bytes = 19, varint

    def stray(raw):
        assert raw.count(field) == 1
        return raw.replace(field, b"\x0c" + field)
    for name, edit in (("stray.shard", stray), ("tail.shard", lambda raw: raw + b"\x0c")):
        v = reseal_manifest(name, edit)
        assert "manifest: does not decode" in refused(v, "format")
        r = subprocess.run([SF_SHARD, "verify", v], capture_output=True, text=True)
        assert r.returncode == 1 and "does not decode" in r.stdout + r.stderr, \
            (r.returncode, r.stdout, r.stderr)


@test
def format_1_shards_read_the_same():
    """Shards written before format 2 (a zstd frame per record) read as
    before: the fixture written as format 1 gives every record and the
    digests of the format-2 fixture, and a committed format-1 shard (a real
    self-play shard, kept in the shard-file fuzz corpus) keeps its digest."""
    d = os.path.join(scratch(), "v1")
    os.makedirs(d)
    subprocess.run([FIXTURE, "--format=1", d], check=True)
    for name in ("a.shard", "b.shard"):
        with open_shard(os.path.join(d, name)) as s1, open_shard(os.path.join(WORK, name)) as s2:
            assert s1.format_version == 1 and s2.format_version == spirefleet.FORMAT_VERSION == 2
            assert s1.manifest["content_digest"] == s2.manifest["content_digest"] == \
                EXPECTED[name]["digest"]
            assert s1.content_digest() == EXPECTED[name]["digest"]
            for i in range(len(s1) - 1, -1, -1):
                compare_record(s1[i], RECORDS[name][i], "v1 %s record %d" % (name, i))
            f1, n1 = s1.frames()
            assert list(n1) == [1] * len(s1)
            f2, n2 = s2.frames()
            assert n2.sum() == len(s2) and n2.max() == 16 and len(f2) < len(s2) // 8
            s1.verify()
            # sharing zstd's window across a frame's records: smaller
            assert s2.manifest["payload_bytes"] < 0.9 * s1.manifest["payload_bytes"]
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    with open(os.path.join(root, "shard", "shard.h")) as f:  # one format number, C's
        assert "#define SF_SHARD_FORMAT_VERSION %d\n" % spirefleet.FORMAT_VERSION in f.read()
    corpus = os.path.join(root, "tests", "fuzz", "corpus", "shard-file", "run-job1.shard")
    dst = os.path.join(d, "lfuzz-v1.shard")  # its run is "lfuzz": a name of no stored form
    shutil.copyfile(corpus, dst)
    with open_shard(dst) as s:
        assert s.format_version == 1 and len(s) == 43
        want = "2dc148172bc1619a083e6ee01341f45a126f45a97a100b3accbb0fac6eab4b87"
        assert s.manifest["content_digest"] == want and s.content_digest() == want
        assert all(s[i]["ids"]["run_id"] == "lfuzz" for i in range(43))
        s.verify()
    # It was re-sealed for schema 4 by tests/fuzz/reseal_shard.py, which
    # changes schema_version and nothing else of the content: sealed back
    # for schema 3 it has the digest it was committed with before, and this
    # reader refuses it; sealed again for 4, the digest above.
    reseal = os.path.join(root, "tests", "fuzz", "reseal_shard.py")
    old = os.path.join(d, "old", "lfuzz-v1.shard")
    again = os.path.join(d, "again", "lfuzz-v1.shard")
    os.makedirs(os.path.dirname(old))
    os.makedirs(os.path.dirname(again))
    for args in ((3, dst, old), (4, old, again)):
        subprocess.run([sys.executable, reseal, "--schema", str(args[0]), args[1], args[2]],
                       check=True, capture_output=True)
    msg = refused(old, "version")
    assert "manifest: schema_version 3, this reader knows 4 (schema 3" in msg, msg
    r = subprocess.run([SF_SHARD, "stat", old], capture_output=True, text=True)
    assert r.returncode == 1 and "schema_version 3, this reader knows 4" in r.stderr, \
        (r.returncode, r.stderr)
    from spirefleet import label_pb2
    import lmdb
    env = lmdb.open(old, subdir=False, readonly=True, lock=False, max_dbs=2)
    with env.begin() as txn:
        m = label_pb2.ShardManifest.FromString(
            txn.get(b"manifest", db=env.open_db(b"meta", txn=txn, create=False)))
    env.close()
    assert m.schema_version == 3 and m.content_digest.hex() == \
        "b80b9cf8b3d226dbdf8207b3b2900009ee9827cbf77cffbd9d790cacb85437d8"
    with open_shard(again) as s:
        assert s.manifest["content_digest"] == want and s.content_digest() == want
        s.verify()


def flip(path, off):
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0x40]))


@test
def damaged_format_2_frames_and_headers_are_named():
    """A flipped byte in a frame's compressed bytes: every record of the
    frame is refused, naming itself and the frame's records; a flipped byte
    in a block's frame table: the header CRC names the block."""
    p = copy("frame.shard")
    data = open(p, "rb").read()
    at = data.find(b"SFB2")  # the first block's header
    n, first, m = struct.unpack_from("<IQI", data, at + 4)
    assert first == 0 and 1 < m <= n, (n, first, m)
    frames = at + 20 + 8 * m + 4 * n + 4
    end0 = struct.unpack_from("<I", data, at + 20 + 4 * m)[0]
    flip(p, frames + end0 // 2)  # inside frame 0 (records 0..15)
    with open_shard(p) as s:
        for i in (0, 7, 15):
            e = raised(ShardError, "record %d of a damaged frame was read" % i, s.raw, i)
            assert e.kind == "corrupt", e
            assert "record %d (in the frame of records 0..15): zstd" % i in str(e), str(e)
        assert s[16]["ids"]["decision_index"] == RECORDS["a.shard"][16]["ids"].get(
            "decision_index", 0)
    h = copy("header.shard")
    flip(h, at + 20)  # frame 0's record count
    with open_shard(h) as s:
        e = raised(ShardError, "a damaged frame table was read", s.__getitem__, 3)
        assert e.kind == "corrupt" and "block at record 0: header CRC mismatch" in str(e), e


@test
def contract_is_the_c_one():
    # The generated contract module against the supports written out by hand
    # (label/label.h): losses 0.05*i, wins 0.5 + (i-5)/30.
    from spirefleet import contract
    assert contract.SCHEMA_VERSION == 4 and contract.VALUE_BINS == 21
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    with open(os.path.join(root, "label", "label.h")) as f:  # one schema number, C's
        assert "#define SF_LABEL_SCHEMA_VERSION %d\n" % contract.SCHEMA_VERSION in f.read()
    assert contract.schema_note(3).startswith("schema 3 labels came from an engine in which "
                                              "most relics and potions did nothing")
    want = [0.05 * i for i in range(5)] + [0.5 + (i - 5) / 30 for i in range(5, 21)]
    assert np.allclose(contract.VALUE_SUPPORT, want, rtol=0, atol=1e-15)
    assert contract.FORECAST_COLUMNS[1] == "block_at_enemy_turn"
    # Every record's bins encode its value, and its class: any win >= 0.5 >
    # 0.2 > any loss.
    n = 0
    for path in (A, B):
        with open_shard(path) as s:
            for rec in s:
                o = rec["outcome"]
                assert abs(spirefleet.value_of_bins(o["value_bins"]) - o["value"]) < 1e-6
                assert (o["value"] >= contract.VALUE_WIN_MIN) == bool(o["won"])
                assert o["won"] or o["value"] < contract.VALUE_LOSS_MAX
                n += 1
    assert n == 420


@test
def dataset_skips_engine_limit_fights():
    # b.shard: 2 of its 6 fights (40 records) ended on the engine's pile cap.
    with open_shard(B) as s:
        limited = [i for i, r in enumerate(s) if r["outcome"]["engine_limit"]]
        assert s.manifest["stats"]["counters"]["engine_limit_fights"] == 2
    assert len(limited) == 40
    d = ShardDataset([A, B], shuffle=False)
    assert len(d) == 380 and d.skipped_engine_limit == 40
    assert all(not d[i]["outcome"]["engine_limit"] for i in range(len(d)))
    assert {d.locate(i) for i in range(300, 380)} == \
        {(B, i) for i in range(120) if i not in limited}
    every = ShardDataset([A, B], shuffle=False, skip_engine_limit=False)
    assert len(every) == 420 and every.skipped_engine_limit == 0


@test
def turn_limit_fights_are_kept_unless_asked():
    # b.shard: 1 of its 6 fights (20 records) ended at a turn cap of 50.
    with open_shard(B) as s:
        capped = [i for i, r in enumerate(s) if r["outcome"]["turn_limit"]]
        assert s.manifest["stats"]["counters"]["turn_limit_fights"] == 1
        o = s[capped[0]]["outcome"]
    assert len(capped) == 20
    # a loss, graded as one: 0.2*(0.75*(1 - left/pool) + 0.25*turns/(turns + 10))
    assert not o["won"] and o["turns"] == 50 and not o["engine_limit"]
    want = 0.2 * (0.75 * (1 - o["monster_hp_left"] / o["monster_hp_pool"]) + 0.25 * 50 / 60)
    assert abs(float(o["value"]) - want) < 1e-6, (o["value"], want)
    kept = ShardDataset([A, B], shuffle=False)  # kept by default
    assert len(kept) == 380 and kept.skipped_turn_limit == 0
    assert sum(bool(kept[i]["outcome"]["turn_limit"]) for i in range(len(kept))) == 20
    left = ShardDataset([A, B], shuffle=False, skip_turn_limit=True)
    assert len(left) == 360 and left.skipped_turn_limit == 20 and left.skipped_engine_limit == 40
    assert not any(left[i]["outcome"]["turn_limit"] for i in range(len(left)))


@test
def stat_prints_the_contracts_bin_supports():
    # sf-shard stat once printed schema 1's supports (bins 1..4 as wins at
    # z = 0.50..0.58); the supports now come from label/, as contract.py's.
    from spirefleet import contract
    r = subprocess.run([SF_SHARD, "stat", B, "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    labels = json.loads(r.stdout)["labels"]
    # printed with 9 significant digits
    assert np.allclose(labels["value_supports"], contract.VALUE_SUPPORT, rtol=0, atol=1e-9)
    assert labels["turn_limit_records"] == 20 and labels["engine_limit_records"] == 40
    r = subprocess.run([SF_SHARD, "stat", B], capture_output=True, text=True)
    z = [float(x) for x in re.findall(r"z=([0-9.]+)", r.stdout)]
    assert len(z) == 21 and np.allclose(z, contract.VALUE_SUPPORT, rtol=0, atol=5e-4), z
    assert "engine limit 40, turn cap 20" in r.stdout, r.stdout


@test
def quarantined_shards_are_skipped():
    # a directory whose QUARANTINE lists b.shard's digest (sf-fleet
    # quarantine): the dataset and the window leave it out and say so
    d = os.path.join(scratch(), "quarantine")
    os.makedirs(d, exist_ok=True)
    for f in (CA, CB):
        shutil.copyfile(f, os.path.join(d, os.path.basename(f)))
    with open_shard(B) as s:
        digest = s.manifest["content_digest"]
    with open(os.path.join(d, "QUARANTINE"), "w") as f:
        f.write("# quarantined\n%s %s 0123456789abcdef 1700000000\n" % (digest, NB))
    ds = ShardDataset(d, shuffle=False)
    assert ds.paths == [os.path.join(d, NA)]
    assert ds.skipped_quarantined == [os.path.join(d, NB)]
    assert len(ds) == 300
    every = ShardDataset(d, shuffle=False, include_quarantined=True, skip_engine_limit=False)
    assert len(every) == 420
    # named file by file (a glob of the directory), the directory's list
    # still applies, counted the same way
    files = sorted(glob.glob(os.path.join(d, "*.shard")))
    assert len(files) == 2
    by_file = ShardDataset(files, shuffle=False)
    assert by_file.paths == [os.path.join(d, NA)]
    assert by_file.skipped_quarantined == [os.path.join(d, NB)]
    assert len(by_file) == 300
    assert len(ShardDataset(files, include_quarantined=True, skip_engine_limit=False)) == 420
    both = ShardDataset([d] + files, shuffle=False)  # skipped once, not twice
    assert both.skipped_quarantined == [os.path.join(d, NB)] and len(both) == 300
    from spirefleet.window import find_shards
    assert [i["path"] for i in find_shards(d)] == [os.path.join(d, NA)]
    with open(os.path.join(d, "QUARANTINE"), "a") as f:
        f.write("garbage\n")
    e = raised(ShardError, "a malformed QUARANTINE line was accepted", ShardDataset, d)
    assert e.kind == "format" and "QUARANTINE:3" in str(e), str(e)
    # by digest and key: the same records played again by another key are
    # not skipped; "-" and a shard that names no key match any entry
    from spirefleet.shard import quarantined
    ql = {"ab" * 32: {"0123456789abcdef"}, "cd" * 32: {"-"}}
    assert quarantined(ql, "ab" * 32, "0123456789abcdef")
    assert not quarantined(ql, "ab" * 32, "fedcba9876543210")
    assert quarantined(ql, "ab" * 32, "")
    assert quarantined(ql, "cd" * 32, "fedcba9876543210")
    assert not quarantined(ql, "ef" * 32, "")


@test
def dataset_shuffles_deterministically():
    d1 = ShardDataset([B, A], seed=11, skip_engine_limit=False)  # order of paths does not matter
    d2 = ShardDataset([WORK + "/a.shard", WORK + "/b.shard"], seed=11, skip_engine_limit=False)
    assert len(d1) == 420 and d1.paths == sorted([A, B])
    order1 = [d1.locate(i) for i in range(len(d1))]
    assert order1 == [d2.locate(i) for i in range(len(d2))]
    assert sorted(order1) == sorted([(A, i) for i in range(300)] + [(B, i) for i in range(120)])
    d3 = ShardDataset([A, B], seed=12, skip_engine_limit=False)
    assert [d3.locate(i) for i in range(len(d3))] != order1
    d1.set_epoch(1)
    epoch1 = [d1.locate(i) for i in range(len(d1))]
    assert epoch1 != order1
    d1.set_epoch(0)
    assert [d1.locate(i) for i in range(len(d1))] == order1
    plain = ShardDataset(CANON, shuffle=False, skip_engine_limit=False)  # a directory
    assert plain.locate(0) == (CA, 0) and plain.locate(300) == (CB, 0)
    # items are the records they name
    for i in (0, 1, 57, 419):
        path, local = d1.locate(i)
        compare_record(d1[i], RECORDS[os.path.basename(path)][local], "dataset item %d" % i)


@test
def dataset_order_does_not_depend_on_where_shards_live():
    """The same shards copied under two directory layouts (a.shard's
    directory sorting after b.shard's in one, before it in the other) give
    the same order, shuffled or not: the order follows file names and
    content digests, not paths."""
    layouts = {"one": ("zz", "aa"), "two": ("aa", "zz")}
    orders = {}
    for name, (da, db) in layouts.items():
        paths = []
        for f, sub in ((A, da), (B, db)):
            dst = os.path.join(scratch(), "layout-" + name, sub, os.path.basename(f))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(f, dst)
            paths.append(dst)
        for shuffle in (True, False):
            d = ShardDataset(paths, seed=11, shuffle=shuffle, skip_engine_limit=False)
            assert [os.path.basename(p) for p in d.paths] == ["a.shard", "b.shard"], d.paths
            orders[name, shuffle] = [(os.path.basename(p), k) for p, k in
                                     (d.locate(i) for i in range(len(d)))]
    assert orders["one", True] == orders["two", True]
    assert orders["one", False] == orders["two", False]
    assert orders["one", False][:2] == [("a.shard", 0), ("a.shard", 1)]
    assert orders["one", True] != orders["one", False]


@test
def dataset_reads_each_shard_once_however_spelled():
    """The same directory or file under several spellings (relative, ./,
    absolute, a trailing slash, a symbolic link) is read once."""
    rel = os.path.relpath(CANON)
    link = os.path.join(tempfile.gettempdir(), "sf-py-reader-link-%d" % os.getpid())
    os.symlink(CANON, link)
    try:
        for spellings in ([CANON, rel, "./" + rel, CANON + "/"], [CA, CANON + "//" + NA, CANON],
                          [link, CANON], [os.path.join(link, NB), CB, CA]):
            with contextlib.redirect_stderr(io.StringIO()) as err:
                d = ShardDataset(spellings, shuffle=False, skip_engine_limit=False)
            assert len(d) == 420, (spellings, len(d), d.paths)
            assert len(d.paths) == 2 and {os.path.basename(p) for p in d.paths} == \
                {NA, NB}, d.paths
            assert d.skipped_duplicates == [] and err.getvalue() == "", err.getvalue()
    finally:
        os.unlink(link)


@test
def torch_dataloader_reads_every_record():
    try:
        import torch
    except ImportError:
        return "SKIP torch not importable"
    ds = ShardDataset([A, B], seed=5, skip_engine_limit=False)
    assert isinstance(ds, torch.utils.data.Dataset)
    loader = torch.utils.data.DataLoader(ds, batch_size=16, num_workers=2,
                                         collate_fn=pad_batch)
    seen = 0
    first = None
    for batch in loader:
        assert batch["token_type"].shape[0] == batch["token_mask"].shape[0]
        if first is None:
            first = batch
        seen += batch["value_bins"].shape[0]
    assert seen == 420
    want = pad_batch([ds[i] for i in range(16)])
    for k in want:
        assert np.array_equal(first[k], want[k]), k


@test
def pad_batch_pads_and_masks():
    with open_shard(A) as s:
        recs = [s[0], s[1], s[2]]
    b = pad_batch(recs)
    t = [r["inputs"]["token_type"].shape[0] for r in recs]
    q = [r["inputs"]["query"].shape[0] for r in recs]
    assert b["token_type"].shape == (3, max(t)) and b["query"].shape == (3, max(q), 2)
    for k in range(3):
        assert b["token_mask"][k].sum() == t[k] and b["query_mask"][k].sum() == q[k]
        assert np.all(b["token_type"][k, t[k]:] == 0)
        assert np.array_equal(b["token_cont"][k, :t[k]], recs[k]["inputs"]["token_cont"])
        assert abs(b["policy"][k].sum() - 1) < 1e-5


@test
def npz_export_matches_the_reader():
    out = os.path.join(scratch(), "a.npz")
    r = subprocess.run([SF_SHARD, "export", A, "--npz", out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    z = np.load(out)
    with open_shard(A) as s:
        recs = list(s)
    n = len(recs)
    to, qo = z["token_offsets"], z["query_offsets"]
    assert to.shape == (n + 1,) and qo.shape == (n + 1,) and to[0] == 0
    for i, rec in enumerate(recs):
        inp = rec["inputs"]
        assert np.array_equal(z["token_cont"][to[i]:to[i + 1]], inp["token_cont"])
        assert np.array_equal(z["token_cat"][to[i]:to[i + 1]], inp["token_cat"])
        assert np.array_equal(z["query"][qo[i]:qo[i + 1]], inp["query"])
        assert np.array_equal(z["policy"][qo[i]:qo[i + 1]], rec["search"]["policy"])
        assert np.array_equal(z["visits"][qo[i]:qo[i + 1]], rec["search"]["visits"])
        assert z["game_seed"][i] == rec["ids"]["game_seed"]
        assert z["chosen"][i] == rec["search"]["chosen"]
        assert np.array_equal(z["value_bins"][i], rec["outcome"]["value_bins"])
        assert np.array_equal(z["forecast"][i], rec["forecast"]["target"])
        if rec["teacher"] is None:
            assert z["teacher_rollouts"][i] == 0 and not z["teacher_mean"][i].any()
        else:
            assert np.array_equal(z["teacher_mean"][i], rec["teacher"]["mean"])
    assert z["token_type"].dtype == np.uint8 and z["token_cont"].dtype == np.float32
    assert z["game_seed"].dtype == np.uint64 and z["value_bins"].shape == (n, 21)


@test
def start_text_parses():
    """parse_start on the text form of docs/starts.md, field by field."""
    d = spirefleet.parse_start(
        "Strike*4,Defend*4,Bash+,Cleave,Pommel Strike,Shrug It Off,Inflame|Burning Blood,"
        "Pen Nib:3,Art of War|Fire Potion,,Elixir|floor 16|hp 57/80|gold 131")
    assert d["deck"] == [("Strike", 0, 4), ("Defend", 0, 4), ("Bash", 1, 1), ("Cleave", 0, 1),
                         ("Pommel Strike", 0, 1), ("Shrug It Off", 0, 1), ("Inflame", 0, 1)]
    assert d["relics"] == [("Burning Blood", 0), ("Pen Nib", 3), ("Art of War", 0)]
    assert d["potions"] == ["Fire Potion", None, "Elixir"]
    assert (d["floor"], d["hp"], d["max_hp"], d["gold"]) == (16, 57, 80, 131)
    assert spirefleet.parse_start("") is None
    for bad in ("Strike|floor 1", "a|b|c|flor 2|hp 1/2|gold 3", "a|b|c|floor x|hp 1/2|gold 3"):
        e = raised(ValueError, "parse_start(%r) did not fail" % bad, spirefleet.parse_start, bad)
        assert str(e).startswith("start %r" % bad), e


@test
def start_text_from_the_engine_parses():
    """Starts the engine samples (sf-play --start rewards prints the text a
    label records) parse into a deck the size the engine printed."""
    for seed in range(1, 9):
        enc = ("Jaw Worm", "Gremlin Nob", "Lagavulin", "Hexaghost")[seed % 4]
        r = subprocess.run([SF_PLAY, "--start", "rewards", "--encounter", enc, "--seed",
                            str(seed)], input="q\n", capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("Start (")][0]
        text = line.split("): ", 1)[1]
        d = spirefleet.parse_start(text)
        assert d["deck"][0][0] == "Strike" and sum(n for _, _, n in d["deck"]) >= 10, text
        assert 0 < d["hp"] <= d["max_hp"] and 1 <= d["floor"] <= 16, text
        assert d["relics"][0] == ("Burning Blood", 0), text
        assert len(d["potions"]) <= 3, text


if __name__ == "__main__":
    sys.exit(main(lambda: shutil.rmtree(WORK, ignore_errors=True)))
