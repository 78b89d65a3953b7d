#!/usr/bin/python3
"""Give a committed shard another label schema version, and seal it again.

usage: PYTHONPATH=<build>/python reseal_shard.py --schema N SHARD [OUT]

When the label schema version changes (label/label.h
SF_LABEL_SCHEMA_VERSION), the shards kept as test inputs (the shard-file
fuzz corpus: a format-1 and a format-2 self-play shard) are refused by
every reader. This rewrites SHARD (or writes OUT) with every record's and
the manifest's schema_version set to N and nothing else of the content
changed, so the tests that read them still mean what they say (an old
block format still reads; the records hash to the manifest's digest):

  - each record's bytes differ only in schema_version (field 1): every
    record and the manifest must re-serialize byte for byte before the
    edit, or nothing is written;
  - the blocks keep their records, their frames (which records share a
    zstd frame) and the shard's format version; frames are compressed
    again at the manifest's compression_level, with zstd's content size
    and checksum as the writer sets them;
  - the manifest keeps every field (run, job, worker, created_unix, stats,
    gate pairs) but schema_version, content_digest (over the new records,
    docs/format.md) and payload_bytes (the new frames' sizes);
  - the LMDB file is written fresh (the `records` blocks in key order and
    the manifest in one transaction, as shard/writer.c does) and sealed
    with a trailer listing as structure pages every page that holds no
    record-block bytes.

The old file must be intact: its footer, its records' digest and every
block header are checked first. Check the result with `sf-shard verify`.
"""
import argparse
import hashlib
import os
import shutil
import struct
import sys
import tempfile
import zlib

import lmdb
import zstandard

from spirefleet import label_pb2

FOOTER = 64
MAGIC = {1: 0x31424653, 2: 0x32424653}
PAGEHDR = 16      # LMDB's page header: an overflow value starts after it
P_OVERFLOW = 0x04  # LMDB mp_flags (u16 at byte 10 of a page)


def fail(msg):
    sys.exit("reseal_shard: " + msg)


def lmdb_data(path):
    """The LMDB part of a sealed shard (the trailer checked) and its page size."""
    with open(path, "rb") as f:
        buf = f.read()
    foot = buf[-FOOTER:]
    if len(buf) < FOOTER or foot[:8] != b"SFSEAL01" or \
            zlib.crc32(foot[:60]) != struct.unpack_from("<I", foot, 60)[0]:
        fail("%s: not a sealed shard (no intact seal trailer)" % path)
    psize, data, npages, nstruct = struct.unpack_from("<IQQQ", foot, 12)
    if data != npages * psize or data + 4 * (npages + nstruct) + FOOTER != len(buf):
        fail("%s: the seal trailer does not describe the file" % path)
    return buf[:data], psize


def split_block(v, fmt, key):
    """A block's (n, first, frames): frames is a list of (record count,
    compressed frame)."""
    magic, n, first = struct.unpack_from("<IIQ", v, 0)
    if magic != MAGIC[fmt] or first != key:
        fail("block at %d: not a format-%d block" % (key, fmt))
    if fmt == 1:
        m, hdr = n, 16 + 4 * n
        ends = struct.unpack_from("<%dI" % n, v, 16)
        counts = [1] * n
    else:
        m = struct.unpack_from("<I", v, 16)[0]
        hdr = 20 + 8 * m + 4 * n
        recs = struct.unpack_from("<%dI" % m, v, 20)
        ends = struct.unpack_from("<%dI" % m, v, 20 + 4 * m)
        counts = [b - a for a, b in zip((0,) + recs, recs)]
    if zlib.crc32(v[:hdr]) != struct.unpack_from("<I", v, hdr)[0]:
        fail("block at %d: header CRC mismatch" % key)
    area = v[hdr + 4:]
    if ends[-1] != len(area):
        fail("block at %d: frames do not end with the value" % key)
    frames = [(c, area[a:b]) for c, a, b in zip(counts, (0,) + ends[:-1], ends)]
    return n, first, frames


def record_ends(v, fmt):
    """Format 2: each record's end within its frame's content."""
    n = struct.unpack_from("<I", v, 4)[0]
    m = struct.unpack_from("<I", v, 16)[0]
    return struct.unpack_from("<%dI" % n, v, 20 + 8 * m)


def build_block(fmt, first, frames):
    """frames: list of (compressed frame, record ends within its content)."""
    n = sum(len(e) for _, e in frames)
    ends, off = [], 0
    for f, _ in frames:
        off += len(f)
        ends.append(off)
    if fmt == 1:
        hdr = struct.pack("<IIQ", MAGIC[1], n, first) + struct.pack("<%dI" % n, *ends)
    else:
        recs, k = [], 0
        for _, e in frames:
            k += len(e)
            recs.append(k)
        rec_ends = [x for _, e in frames for x in e]
        m = len(frames)
        hdr = struct.pack("<IIQI", MAGIC[2], n, first, m) + struct.pack(
            "<%dI" % (2 * m + n), *(recs + ends + rec_ends))
    return hdr + struct.pack("<I", zlib.crc32(hdr)) + b"".join(f for f, _ in frames)


def exact(cls, raw, what):
    """raw parsed as cls; refused unless it serializes back to the same bytes
    (so an edit of one field changes only that field's bytes)."""
    msg = cls.FromString(raw)
    if msg.SerializeToString() != raw:
        fail("%s does not re-serialize byte for byte; not editing it" % what)
    return msg


def structure_pages(data, psize, values):
    """Pages that hold no record-block bytes (shard/writer.c structure_pages):
    all but the overflow runs of the `records` values; an inline value lives
    in a leaf page, which stays a structure page."""
    npages = len(data) // psize
    is_data = bytearray(npages)
    for v in values:
        off = data.find(v)
        if off < 0:
            fail("a block written is not in the file")
        if off % psize != PAGEHDR:
            continue  # inline, inside a leaf page
        pg = off // psize
        pgno, flags = struct.unpack_from("<QxxH", data, pg * psize)
        if pgno != pg or not flags & P_OVERFLOW or data.find(v, off + 1) >= 0:
            fail("page %d: not the one overflow run of its block" % pg)
        for p in range(pg, (off + len(v) - 1) // psize + 1):
            is_data[p] = 1
    return [p for p in range(npages) if not is_data[p]]


def seal(data, psize, spages):
    npages = len(data) // psize
    crcs = [zlib.crc32(data[k * psize:(k + 1) * psize]) for k in range(npages)]
    table = struct.pack("<%dI" % (npages + len(spages)), *(crcs + spages))
    footer = b"SFSEAL01" + struct.pack("<IIQQQI", 1, psize, len(data), npages, len(spages),
                                       zlib.crc32(table)) + bytes(16)
    return data + table + footer + struct.pack("<I", zlib.crc32(footer))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schema", type=int, required=True, help="the new schema_version")
    ap.add_argument("shard")
    ap.add_argument("out", nargs="?", help="where to write it (default: replace SHARD)")
    a = ap.parse_args()
    if not 0 < a.schema < 128:
        fail("--schema %d: expected 1..127 (a one-byte varint, as every version so far)"
             % a.schema)
    out = a.out or a.shard
    data, psize = lmdb_data(a.shard)
    work = tempfile.mkdtemp(prefix="reseal-")
    try:
        old = os.path.join(work, "old.lmdb")
        with open(old, "wb") as f:
            f.write(data)
        env = lmdb.open(old, subdir=False, readonly=True, lock=False, max_dbs=2)
        with env.begin() as txn:
            mraw = txn.get(b"manifest", db=env.open_db(b"meta", txn=txn, create=False))
            blocks = list(txn.cursor(db=env.open_db(b"records", txn=txn, create=False)))
        env.close()
        if mraw is None:
            fail("%s: no manifest" % a.shard)
        m = exact(label_pb2.ShardManifest, mraw, "the manifest")
        fmt, was = m.format_version, m.schema_version
        if fmt not in MAGIC:
            fail("format_version %d, expected 1 or 2" % fmt)
        dctx = zstandard.ZstdDecompressor()
        cctx = zstandard.ZstdCompressor(level=m.compression_level or 3, write_checksum=True,
                                        write_content_size=True)
        h_old, h_new = hashlib.sha256(), hashlib.sha256()
        new_blocks, raw_bytes, payload, count = [], 0, 0, 0
        for key, v in blocks:
            first = struct.unpack(">Q", key)[0]
            n, first, frames = split_block(v, fmt, first)
            rends = record_ends(v, fmt) if fmt == 2 else None
            out_frames, k = [], 0
            for c, frame in frames:
                content = dctx.decompress(frame)
                if fmt == 1:
                    raws = [content]
                else:
                    offs = (0,) + tuple(rends[k:k + c])
                    if offs[-1] != len(content):
                        fail("block at %d: a frame's records do not end with it" % first)
                    raws = [content[x:y] for x, y in zip(offs, offs[1:])]
                k += c
                new_raws = []
                for raw in raws:
                    i = count + len(new_raws)  # the record's index in the shard
                    h_old.update(struct.pack("<Q", len(raw)) + raw)
                    rec = exact(label_pb2.LabelRecord, raw, "record %d" % i)
                    if rec.schema_version != was:
                        fail("record %d: schema_version %d, the manifest says %d"
                             % (i, rec.schema_version, was))
                    rec.schema_version = a.schema
                    nraw = rec.SerializeToString()
                    if len(nraw) != len(raw):
                        fail("record %d: its size would change" % i)
                    h_new.update(struct.pack("<Q", len(nraw)) + nraw)
                    raw_bytes += len(nraw)
                    new_raws.append(nraw)
                count += len(new_raws)
                nf = cctx.compress(b"".join(new_raws))
                payload += len(nf)
                e, ends = 0, []
                for r in new_raws:
                    e += len(r)
                    ends.append(e)
                out_frames.append((nf, ends))
            new_blocks.append((key, build_block(fmt, first, out_frames)))
        for p in m.gate_pairs:
            praw = p.SerializeToString()
            h_old.update(struct.pack("<Q", len(praw)) + praw)
            h_new.update(struct.pack("<Q", len(praw)) + praw)
        if count != m.record_count or len(blocks) != m.block_count:
            fail("%d records in %d blocks, the manifest says %d in %d"
                 % (count, len(blocks), m.record_count, m.block_count))
        if h_old.digest() != m.content_digest:
            fail("%s: its records do not hash to its manifest's content_digest" % a.shard)
        if raw_bytes != m.raw_bytes:
            fail("raw_bytes %d, the manifest says %d" % (raw_bytes, m.raw_bytes))
        m.schema_version = a.schema
        m.content_digest = h_new.digest()
        m.payload_bytes = payload

        new = os.path.join(work, "new.lmdb")
        env = lmdb.open(new, subdir=False, lock=False, max_dbs=2, sync=False, metasync=False,
                        map_size=max(64 << 20, 4 * len(data)))
        with env.begin(write=True) as txn:
            rdb = env.open_db(b"records", txn=txn)
            mdb = env.open_db(b"meta", txn=txn)
        with env.begin(write=True) as txn:
            for key, v in new_blocks:
                txn.put(key, v, db=rdb, append=True)
            txn.put(b"manifest", m.SerializeToString(), db=mdb)
        env.sync(True)
        npages = env.info()["last_pgno"] + 1
        if env.stat()["psize"] != psize:
            fail("LMDB page size %d here, the shard has %d" % (env.stat()["psize"], psize))
        env.close()
        with open(new, "rb") as f:
            ndata = f.read()
        if len(ndata) != npages * psize:
            fail("%d bytes on disk, LMDB reports %d pages" % (len(ndata), npages))
        sealed = seal(ndata, psize, structure_pages(ndata, psize, [v for _, v in new_blocks]))
        tmp = os.path.join(work, "sealed")
        with open(tmp, "wb") as f:
            f.write(sealed)
        shutil.move(tmp, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("%s: schema_version %d -> %d, %d records, content_digest %s"
          % (out, was, a.schema, count, m.content_digest.hex()))


if __name__ == "__main__":
    main()
