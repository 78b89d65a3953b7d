#!/usr/bin/python3
"""Write the seed corpora of the shard fuzz targets from real shards.

usage: PYTHONPATH=<build>/python make_corpus.py SHARD_DIR CORPUS_DIR

SHARD_DIR holds a.shard and b.shard from `shard-fixture`. Seeds:
  record-decode/   mode byte 0 + a packed LabelRecord; mode byte 1 + a
                   small format-1 block value, mode byte 3 + a format-2 one
                   (the formats of docs/format.md, built here with
                   zstandard and zlib from those records)
  manifest-decode/ the manifests of both shards, and one without stats

The shard-file seeds are real self-play shards, not written here: when the
label schema version changes, re-seal them with reseal_shard.py.
"""
import os
import struct
import sys
import zlib

import zstandard

from spirefleet import label_pb2, open_shard


def block(first, raws):
    c = zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=True)
    frames = [c.compress(r) for r in raws]
    ends, off = [], 0
    for f in frames:
        off += len(f)
        ends.append(off)
    hdr = struct.pack("<IIQ", 0x31424653, len(raws), first) + struct.pack(
        "<%dI" % len(ends), *ends)
    return hdr + struct.pack("<I", zlib.crc32(hdr)) + b"".join(frames)


def block_v2(first, raws, per_frame):
    """A format-2 block: frames of `per_frame` records."""
    c = zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=True)
    groups = [raws[k:k + per_frame] for k in range(0, len(raws), per_frame)]
    frames = [c.compress(b"".join(g)) for g in groups]
    recs, ends, rec_ends, nrec, off = [], [], [], 0, 0
    for g, f in zip(groups, frames):
        nrec += len(g)
        off += len(f)
        recs.append(nrec)
        ends.append(off)
        e = 0
        for r in g:
            e += len(r)
            rec_ends.append(e)
    m, n = len(frames), len(raws)
    hdr = struct.pack("<IIQI", 0x32424653, n, first, m) + struct.pack(
        "<%dI" % (2 * m + n), *(recs + ends + rec_ends))
    return hdr + struct.pack("<I", zlib.crc32(hdr)) + b"".join(frames)


def main():
    src, out = sys.argv[1], sys.argv[2]
    rd, md = os.path.join(out, "record-decode"), os.path.join(out, "manifest-decode")
    os.makedirs(rd, exist_ok=True)
    os.makedirs(md, exist_ok=True)
    with open_shard(os.path.join(src, "a.shard")) as a, \
            open_shard(os.path.join(src, "b.shard")) as b:
        seeds = {
            "raw-a0": b"\x00" + a.raw(0),
            "raw-a2-teacher": b"\x00" + a.raw(2),
            "raw-b1-dense": b"\x00" + b.raw(1),
            "block-a0-a1": b"\x01" + block(0, [a.raw(0), a.raw(1)]),
            "block-a7": b"\x01" + block(7, [a.raw(7)]),
            "block-v2-a0-a4": b"\x03" + block_v2(0, [a.raw(i) for i in range(5)], 2),
            "block-v2-b3": b"\x03" + block_v2(3, [b.raw(3)], 16),
        }
        for name, data in seeds.items():
            with open(os.path.join(rd, name), "wb") as f:
                f.write(data)
        for name, s in (("manifest-a", a), ("manifest-b", b)):
            with open(os.path.join(md, name), "wb") as f:
                f.write(s._manifest_pb.SerializeToString())
        m = label_pb2.ShardManifest()
        m.CopyFrom(a._manifest_pb)
        m.ClearField("stats")
        with open(os.path.join(md, "manifest-no-stats"), "wb") as f:
            f.write(m.SerializeToString())


if __name__ == "__main__":
    main()
