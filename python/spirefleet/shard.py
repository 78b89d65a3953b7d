"""Read spirefleet label shards (docs/format.md) as dicts of numpy arrays.

A shard is one LMDB file: a ``records`` database of blocks of zstd-compressed
LabelRecord protobufs (format 2: zstd frames of up to 16 consecutive
records; format 1, still read: a frame per record), a ``meta`` database with
the manifest, and a seal trailer with a CRC-32 of every page. ``open_shard`` checks the trailer and
the CRC of every LMDB structure page before LMDB reads the file, so a
truncated, unsealed or damaged file raises ``ShardError`` instead of crashing
the trainer. Every record is checked on read (block CRC, zstd checksum,
schema version). ``Shard.verify()`` checks every page and the content digest.

Arrays returned for tensors are read-only views of the decoded record's bytes
(``numpy.frombuffer``): copy them before writing to them.
"""

import bisect
import collections
import hashlib
import os
import re
import stat
import struct
import sys
import warnings
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO, cast

import lmdb
import numpy as np
import zstandard

from . import label_pb2
from .contract import (FORECAST_COLUMNS, FORECAST_H, SCHEMA_VERSION, VALUE_BINS,  # noqa: F401
                       VALUE_SUPPORT, schema_note)

# The C writer's format version, the versions this reader reads, the file
# names and the bytes of the format: shard/shard.h, through facts.py.
from .facts import BLOCK_MAGIC as _BLOCK_MAGIC
from .facts import DB_META as _DB_META
from .facts import DB_RECORDS as _DB_RECORDS
from .facts import MANIFEST_KEY as _MANIFEST_KEY
from .facts import MAX_BLOCK_RECORDS as _MAX_BLOCK_RECORDS
from .facts import MAX_RECORD_BYTES as _MAX_RECORD_BYTES
from .facts import QUARANTINE_FILE, SHARD_SUFFIX
from .facts import SHARD_FORMAT_VERSION as FORMAT_VERSION
from .facts import SHARD_FORMAT_VERSIONS as FORMAT_VERSIONS
from .facts import SHARD_TEMP_SUFFIX as TEMP_SUFFIX
from .facts import TRAILER_FOOTER as _FOOTER
from .facts import TRAILER_MAGIC as _TRAILER_MAGIC

# A directory's quarantine list, QUARANTINE_FILE (shard/shard.h
# "Quarantine"): lines "CONTENT_DIGEST NAME WORKER_KEY_ID UNIX_TIME"; a shard
# is skipped when its content digest is listed with the key its manifest
# names ("-": any key).


def load_quarantine(directory: str) -> dict[str, set[str]]:
    """A directory's QUARANTINE list as {content digest (lowercase hex): the
    key ids listed with it}; empty when it has none. Ask it with
    ``quarantined``. Raises ShardError naming file:line for a malformed
    line."""
    path = os.path.join(directory, QUARANTINE_FILE)
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return {}
    out: dict[str, set[str]] = {}
    for no, line in enumerate(lines, 1):
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 4 or not re.fullmatch(r"[0-9a-f]{64}", parts[0]):
            raise ShardError("format", "%s:%d: expected 'CONTENT_DIGEST NAME KEY_ID UNIX_TIME'"
                             % (path, no))
        out.setdefault(parts[0], set()).add(parts[2])
    return out


def read_before(seen: dict[str, str], digest: str, path: str, reader: str) -> str | None:
    """The rule every reader of several shards follows: one file per content
    digest. `seen` maps digests to the file read for each (updated here).
    Returns None when `path` is the first with `digest` (now recorded),
    else the file read before, having said on stderr (prefixed `reader`)
    that `path` is skipped, unless both name the same file."""
    first = seen.get(digest)
    if first is None:
        seen[digest] = path
        return None
    if os.path.realpath(first) != os.path.realpath(path):
        sys.stderr.write("%s: %s holds the content of %s (the same content digest %s): "
                         "skipped, its records are read once\n" % (reader, path, first, digest))
    return first


def quarantined(qlist: dict[str, set[str]], digest: str, key: str | None) -> bool:
    """Whether a shard of content digest `digest` (lowercase hex) made by
    worker key `key` (its manifest's worker_key_id) is one a
    load_quarantine list names: the digest listed with that key, or with
    "-" (or listed at all when the shard names no key). The same records
    played again by another key are not (the re-issued job of a
    quarantined key may come back with the same digest)."""
    keys = qlist.get(digest)
    if not keys:
        return False
    return not key or "-" in keys or key in keys


_DTYPES = {"u8": np.dtype("u1"), "u16": np.dtype("<u2"), "i32": np.dtype("<i4"),
           "u32": np.dtype("<u4"), "f32": np.dtype("<f4")}


class FrameCache:
    """Decoded zstd frames, the least recently used dropped first: what a
    Shard keeps so that the records of one frame are decompressed once.
    One cache may serve several shards (ShardDataset shares one, sized to
    its shuffle window)."""

    def __init__(self, frames: int = 1) -> None:
        self.capacity = max(1, int(frames))
        self._d: collections.OrderedDict[Any, Any] = collections.OrderedDict()
        self.decoded = 0  # frames decompressed into it

    def get(self, key: Any) -> Any:
        v = self._d.get(key)
        if v is not None:
            self._d.move_to_end(key)
        return v

    def put(self, key: Any, value: Any) -> None:
        self._d[key] = value
        self.decoded += 1
        if len(self._d) > self.capacity:
            self._d.popitem(last=False)


class ShardError(Exception):
    """A shard that cannot be read. ``kind`` is one of "missing",
    "unsealed", "truncated", "corrupt", "version", "format"; the message
    starts with the file and names the page or record."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def tensor_to_numpy(t: Any) -> np.ndarray:
    """A Tensor message as a read-only numpy array of its dtype and shape."""
    dt = cast("np.dtype | None", _DTYPES.get(t.dtype))
    if dt is None:
        raise ValueError("unknown tensor dtype %r" % t.dtype)
    return np.frombuffer(t.data, dtype=dt).reshape(tuple(t.shape))


def record_to_dict(rec: Any) -> dict[str, Any]:
    """A LabelRecord as nested dicts of Python scalars and numpy arrays."""
    ids = rec.ids
    s = rec.search
    o = rec.outcome
    out = {
        "schema_version": rec.schema_version,
        "ids": {
            "run_id": ids.run_id, "job_id": ids.job_id, "game_seed": ids.game_seed,
            "fight_index": ids.fight_index, "decision_index": ids.decision_index,
            "turn": ids.turn, "encounter_id": ids.encounter_id, "encounter": ids.encounter,
            "engine_version": ids.engine_version,
            "tokenizer_version": ids.tokenizer_version,
            "model_sha256": ids.model_sha256, "config_digest": ids.config_digest,
            "ascension": ids.ascension,
            "start": ids.start, "start_version": ids.start_version,
        },
        "inputs": {name: tensor_to_numpy(getattr(rec.inputs, name))
                   for name in ("token_type", "token_cat", "token_cont", "query",
                                "query_cont", "action_code")},
        "search": {
            "visits": np.array(s.visits, dtype=np.uint32),
            "q": np.array(s.q, dtype=np.float32),
            "completed_q": np.array(s.completed_q, dtype=np.float32),
            "policy": np.array(s.policy, dtype=np.float32),
            "chosen": s.chosen,
            "root_raw_value": np.float32(s.root_raw_value),
            "root_search_value": np.float32(s.root_search_value),
            "simulations": s.simulations, "trees": s.trees,
            "tree_root_values": np.array(s.tree_root_values, dtype=np.float32),
            "searched": s.searched, "fallbacks": s.fallbacks,
            "rollouts_cut_off": s.rollouts_cut_off, "leaf_mix": np.float32(s.leaf_mix),
        },
        "outcome": {
            "won": o.won, "final_hp": o.final_hp, "max_hp": o.max_hp, "turns": o.turns,
            "potions_used": o.potions_used, "potions_left": o.potions_left,
            "monster_hp_left": o.monster_hp_left, "monster_hp_pool": o.monster_hp_pool,
            "engine_limit": o.engine_limit, "turn_limit": o.turn_limit,
            "value_bins": np.array(o.value_bins, dtype=np.float32),
            "value": np.float32(o.value),
        },
        "forecast": {
            "target": tensor_to_numpy(rec.forecast.target),
            "mask": tensor_to_numpy(rec.forecast.mask),
        },
        "teacher": None,
    }
    if rec.HasField("teacher"):
        out["teacher"] = {
            "rollouts": rec.teacher.rollouts,
            "mean": tensor_to_numpy(rec.teacher.mean),
            "coverage": tensor_to_numpy(rec.teacher.coverage),
        }
    return out


def parse_start(text: str) -> dict[str, Any] | None:
    """The start of a fight from its compact text (LabelIds.start; the form
    of docs/starts.md "The text form"): a dict with ``deck`` (a list of
    ``(card, upgrades, count)``), ``relics`` (a list of ``(relic,
    counter)``), ``potions`` (the slots in order, ``None`` for an empty
    one), ``floor``, ``hp``, ``max_hp`` and ``gold``. Trailing empty potion
    slots are not written, so ``potions`` has up to 3 entries. The empty
    text (the starter deck) gives ``None``. Raises ValueError naming the
    part that does not parse."""
    if text == "":
        return None
    parts = text.split("|")
    if len(parts) != 6:
        raise ValueError("start %r: expected 6 '|'-separated parts, got %d" % (text, len(parts)))
    deck_s, relics_s, potions_s, floor_s, hp_s, gold_s = parts
    deck_text = []
    for item in filter(None, deck_s.split(",")):
        name, _, count = item.partition("*")
        ups = len(name) - len(name.rstrip("+"))
        deck_text.append((name.rstrip("+"), ups, count or "1"))
    relics_text = []
    for item in filter(None, relics_s.split(",")):
        name, _, counter = item.rpartition(":") if ":" in item else (item, "", "0")
        relics_text.append((name, counter))
    potions = [p if p else None for p in potions_s.split(",")] if potions_s else []

    def number(s: str, what: str) -> int:
        try:
            return int(s)
        except ValueError:
            raise ValueError("start %r: %s: %r is not a number" % (text, what, s)) from None

    def field(s: str, key: str) -> str:
        if not s.startswith(key + " "):
            raise ValueError("start %r: expected '%s N', got %r" % (text, key, s))
        return s[len(key) + 1:]

    deck = [(name, ups, number(n, "deck")) for name, ups, n in deck_text]
    relics = [(name, number(n, "relic counter")) for name, n in relics_text]
    hp, _, max_hp = field(hp_s, "hp").partition("/")
    return {"deck": deck, "relics": relics, "potions": potions,
            "floor": number(field(floor_s, "floor"), "floor"), "hp": number(hp, "hp"),
            "max_hp": number(max_hp, "max_hp"), "gold": number(field(gold_s, "gold"), "gold")}


def start_summary(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """The manifest's summary of a shard's starts (the ``start.*`` job
    counters, docs/format.md "Job counters"): fights, the mean deck size,
    relics, potions, floor, HP and max HP per fight, and the copies of
    each card over all decks. ``manifest`` is a ``manifest_to_dict``
    result; ``None`` when the shard has no start counters."""
    c = manifest["stats"]["counters"]
    n = c.get("start.fights", 0)
    if not n:
        return None
    mean = {k: c.get("start." + k, 0) / n for k in ("deck_cards", "relics", "potions")}
    for k in ("floor", "hp", "max_hp"):
        mean[k] = c.get("start.%s_sum" % k, 0) / n
    cards = {k[len("start.card."):]: v for k, v in c.items() if k.startswith("start.card.")}
    return {"fights": n, "mean": mean, "cards": cards}


def value_of_bins(bins: Any) -> Any:
    """The scalar a 21-bin value distribution encodes: sum_i bins[i]*z_i over
    the label contract's supports (``contract.VALUE_SUPPORT``). Works on a
    [..., 21] array."""
    return np.asarray(bins, dtype=np.float64) @ np.asarray(VALUE_SUPPORT, dtype=np.float64)


def manifest_to_dict(m: Any) -> dict[str, Any]:
    """A ShardManifest as a dict (content_digest as lowercase hex)."""
    d = {f.name: getattr(m, f.name) for f in m.DESCRIPTOR.fields
         if f.type != f.TYPE_MESSAGE}
    d["content_digest"] = m.content_digest.hex()
    d["gate_pairs"] = [{"game_seed": p.game_seed, "class_id": p.class_id,
                        "encounter": p.encounter, "won_champion": p.won_champion,
                        "won_candidate": p.won_candidate, "y_champion": p.y_champion,
                        "y_candidate": p.y_candidate} for p in m.gate_pairs]
    st = m.stats
    d["stats"] = {
        "fights": st.fights, "fights_won": st.fights_won, "decisions": st.decisions,
        "simulations": st.simulations, "fallbacks": st.fallbacks,
        "fallback_by_kind": {c.name: c.value for c in st.fallback_by_kind},
        "counters": {c.name: c.value for c in st.counters},
        "wall_seconds": st.wall_seconds,
    } if m.HasField("stats") else None
    return d


def _lmdb_extent(path: str) -> int | None:
    """Bytes of LMDB data the file's meta pages describe, or None."""
    try:
        env = lmdb.open(path, subdir=False, readonly=True, lock=False, max_dbs=2)
    except lmdb.Error:
        return None
    try:
        return (env.info()["last_pgno"] + 1) * env.stat()["psize"]
    finally:
        env.close()


def _appended_after_seal(f: BinaryIO, start: int, size: int) -> int | None:
    """Bytes after an intact footer found past ``start`` (at most 16 MiB scanned),
    or None: the shard was sealed and then appended to."""
    if size < start + _FOOTER:
        return None
    f.seek(start)
    buf = f.read(min(size - start, 16 << 20))
    k = buf.find(_TRAILER_MAGIC)
    while 0 <= k <= len(buf) - _FOOTER:
        foot = buf[k:k + _FOOTER]
        if zlib.crc32(foot[:60]) == struct.unpack_from("<I", foot, 60)[0]:
            data, npages, nstruct = struct.unpack_from("<QQQ", foot, 16)
            if data + 4 * (npages + nstruct) == start + k:
                return size - (start + k) - _FOOTER
        k = buf.find(_TRAILER_MAGIC, k + 1)
    return None


def _footer_damaged(footer: bytes, extent: int | None, size: int) -> bool:
    """True when ``footer`` (the last 64 bytes), its magic aside, describes
    this file exactly: LMDB data of ``extent`` bytes, the page table, the
    footer (as shard/trailer.c footer_damaged)."""
    if len(footer) != _FOOTER or extent is None or size - extent < _FOOTER:
        return False
    psize, data, npages, nstruct = struct.unpack_from("<IQQQ", footer, 12)
    return (psize >= 512 and data == extent == npages * psize and 2 <= nstruct <= npages
            and data + 4 * (npages + nstruct) + _FOOTER == size)


def _read_trailer(f: BinaryIO, path: str,
                  size: int) -> tuple[int, int, np.ndarray, np.ndarray]:
    """Check the seal trailer; returns (page_size, npages, page_crc, struct_pages)."""
    footer = b""
    if size >= _FOOTER:
        f.seek(size - _FOOTER)
        footer = f.read(_FOOTER)
    if footer[:8] != _TRAILER_MAGIC:
        extent = _lmdb_extent(path)
        if extent is None:
            raise ShardError("format", "%s: not a shard (no seal trailer, and not an LMDB "
                             "file; %d bytes)" % (path, size))
        if extent > size:
            raise ShardError("truncated", "%s: truncated: LMDB data needs %d bytes, the file "
                             "has %d" % (path, extent, size))
        after = _appended_after_seal(f, extent, size)
        if after is not None:
            raise ShardError("format", "%s: %d byte%s follow%s its seal trailer (the file was "
                             "appended to after sealing; the shard before them may be intact)"
                             % (path, after, "" if after == 1 else "s", "s" if after == 1 else ""))
        if extent < size and _footer_damaged(footer, extent, size):
            raise ShardError("corrupt", "%s: seal trailer footer damaged: its magic is not %s "
                             "(footer CRC mismatch), though the rest of it describes this file"
                             % (path, _TRAILER_MAGIC.decode()))
        if extent < size:
            raise ShardError("truncated", "%s: truncated: the seal trailer is cut short" % path)
        raise ShardError("unsealed", "%s: not sealed: no seal trailer after the LMDB data"
                         % path)
    if zlib.crc32(footer[:60]) != struct.unpack_from("<I", footer, 60)[0]:
        raise ShardError("corrupt", "%s: seal trailer footer CRC mismatch" % path)
    version, psize, data, npages, nstruct, tcrc = struct.unpack_from("<IIQQQI", footer, 8)
    if version != 1:
        raise ShardError("version", "%s: seal trailer version %d" % (path, version))
    if (psize < 512 or psize > 65536 or psize & (psize - 1) or npages > size // psize
            or data != npages * psize or nstruct < 2 or nstruct > npages
            or data + 4 * (npages + nstruct) + _FOOTER != size):
        raise ShardError("truncated", "%s: truncated or damaged: the seal trailer does not "
                         "add up to the file's %d bytes" % (path, size))
    f.seek(data)
    table = f.read(4 * (npages + nstruct))
    if zlib.crc32(table) != tcrc:
        raise ShardError("corrupt", "%s: seal trailer page table CRC mismatch" % path)
    arr = np.frombuffer(table, dtype="<u4")
    page_crc, struct_pages = arr[:npages], arr[npages:]
    if (struct_pages[0] != 0 or struct_pages[1] != 1 or np.any(struct_pages >= npages)
            or np.any(np.diff(struct_pages.astype(np.int64)) <= 0)):
        raise ShardError("corrupt", "%s: seal trailer: structure page list is invalid" % path)
    return psize, npages, page_crc, struct_pages


def _parse(cls: Any, data: bytes) -> Any:
    """``data`` parsed as a ``cls`` protobuf message, all of it: raises
    protobuf's DecodeError, or ValueError when the parse warned (a stray
    end-group tag: protobuf stops there with a RuntimeWarning, keeping only
    the fields before it) or did not consume every byte. protobuf-c, the C
    readers' decoder, refuses such bytes; so does this."""
    m = cls()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        n = m.ParseFromString(data)
    for w in caught:
        if issubclass(w.category, RuntimeWarning):
            raise ValueError(str(w.message))
    if n is not None and n != len(data):
        raise ValueError("parsed %d of %d bytes" % (n, len(data)))
    return m


def _open_regular(path: str) -> BinaryIO:
    """``path`` opened for binary reading, refused (ShardError "format")
    unless a regular file: opened with O_NONBLOCK and checked with fstat
    before anything reads it (a FIFO or device named like a shard would
    otherwise block the open or a read forever), as the C reader does
    (shard/internal.h sf_shard_open_file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ShardError("missing", "%s: no such shard" % path) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ShardError("format", "%s: not a regular file" % path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


_STORED_NAME = re.compile(r"^(?P<run>.+)-job(?P<job>[0-9]+)(-a[0-9]+)?\.shard$")


def check_name(path: str, run_id: str, job_id: int) -> None:
    """A shard's file name binds it to its run and job (as sf-shard verify
    checks, shard/shard.h sf_shard_check_name): a base name of the form
    "<run>-job<digits>[-a<digits>].shard" must name the manifest's run and
    job; other names are not checked. Raises ShardError ("corrupt") for a
    renamed or swapped shard."""
    m = _STORED_NAME.match(os.path.basename(path))
    if m and (m.group("run") != run_id or int(m.group("job")) != job_id):
        raise ShardError("corrupt", "%s: the name says run '%s' job %d, the manifest run '%s' "
                         "job %d (a renamed or swapped shard)"
                         % (path, m.group("run"), int(m.group("job")), run_id, job_id))


def canonical_name(run_id: str, job_id: int) -> str:
    """The file name of job `job_id`'s shard in run `run_id`, as the
    coordinator stores it (shard/shard.h sf_shard_name):
    "<run>-job<job, 6+ digits>.shard"."""
    return "%s-job%06d%s" % (run_id, int(job_id), SHARD_SUFFIX)


def check_canonical_name(path: str, run_id: str, job_id: int) -> None:
    """The rule of every reader of a directory (shard/shard.h
    sf_shard_check_canonical_name): a shard found in a directory must have
    exactly its canonical name, so a directory holds a job's shard once.
    Raises ShardError ("corrupt") naming the file and the expected name."""
    want = canonical_name(run_id, job_id)
    if os.path.basename(path) != want:
        raise ShardError("corrupt", "%s: not the canonical name of its shard: expected '%s' "
                         "(run '%s', job %d); a directory holds each shard only under that name"
                         % (path, want, run_id, int(job_id)))


class Shard:
    """An open sealed shard. ``len(shard)`` records; ``shard[i]`` is record i
    as a dict (``record_to_dict``); iteration goes in index order;
    ``shard.manifest`` is the manifest as a dict. Not for use across fork():
    open it in the process that reads it (ShardDataset does)."""

    def __init__(self, path: str | os.PathLike[str], frame_cache: FrameCache | None = None) -> None:
        self.path = os.fspath(path)
        self._cache = frame_cache if frame_cache is not None else FrameCache(1)
        # every frame's first record and record count, once frames() ran
        self._frame_first: np.ndarray | None = None
        self._frame_n: np.ndarray | None = None
        path = self.path
        if path.endswith(TEMP_SUFFIX):  # even sealed: its writer may have died before renaming
            raise ShardError("unsealed", "%s: not sealed: a writer's temporary file (still "
                             "being written, or its writer died before renaming it to .shard)"
                             % path)
        with _open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            self.file_bytes = size
            psize, npages, page_crc, struct_pages = _read_trailer(f, path, size)
            for pg in struct_pages:
                f.seek(int(pg) * psize)
                if zlib.crc32(f.read(psize)) != int(page_crc[pg]):
                    raise ShardError("corrupt", "LMDB structure page damaged: %s: page %d: CRC "
                                     "mismatch" % (path, pg))
        self._psize, self._npages, self._page_crc = psize, npages, page_crc
        self._env = lmdb.open(path, subdir=False, readonly=True, lock=False, max_dbs=2,
                              map_size=max(npages * psize, 1 << 20))
        try:
            self._open_dbs()
        except Exception:
            self._env.close()
            raise
        self._dctx = zstandard.ZstdDecompressor()
        self._block: tuple[Any, ...] | None = None  # the block used last (_load_block)

    def _open_dbs(self) -> None:
        path = self.path
        self._txn = self._env.begin(buffers=True)
        try:
            meta = self._env.open_db(_DB_META, txn=self._txn, create=False)
            raw = self._txn.get(_MANIFEST_KEY, db=meta)
        except lmdb.NotFoundError:
            raw = None
        if raw is None:
            raise ShardError("corrupt", "%s: no manifest: the `meta` database has no "
                             "\"manifest\" entry" % path)
        try:
            m = _parse(label_pb2.ShardManifest, bytes(raw))
        except Exception as e:  # protobuf's DecodeError, or _parse's ValueError
            raise ShardError("format", "%s: manifest: does not decode (%s)" % (path, e)) from None
        if m.format_version not in FORMAT_VERSIONS:
            raise ShardError("version", "%s: manifest: format_version %d, this reader knows 1 "
                             "and %d" % (path, m.format_version, FORMAT_VERSION))
        self.format_version = m.format_version
        if m.schema_version != SCHEMA_VERSION:
            raise ShardError("version", "%s: manifest: schema_version %d, this reader knows %d (%s)"
                             % (path, m.schema_version, SCHEMA_VERSION,
                                schema_note(m.schema_version)))
        if len(m.content_digest) != 32:
            raise ShardError("corrupt", "%s: manifest: content_digest has %d bytes"
                             % (path, len(m.content_digest)))
        check_name(path, m.run_id, m.job_id)
        self._manifest_pb = m
        self.manifest = manifest_to_dict(m)
        self._records = self._env.open_db(_DB_RECORDS, txn=self._txn, create=False)
        entries = self._txn.stat(self._records)["entries"]
        if entries != m.block_count:
            raise ShardError("corrupt", "%s: %d blocks in `records`, the manifest says %d"
                             % (path, entries, m.block_count))
        self._cursor = self._txn.cursor(db=self._records)

    def close(self) -> None:
        if self._env is not None:
            self._cursor = None
            self._txn.abort()
            self._env.close()
            self._env = None

    def __enter__(self) -> "Shard":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self._manifest_pb.record_count

    def _seek_block(self, i: int) -> tuple[int, Any]:
        """The (key, value) of the block holding record i."""
        c = self._cursor
        key = struct.pack(">Q", i)
        if c.set_range(key):
            if bytes(c.key()) != key:
                ok = c.prev()
            else:
                ok = True
        else:
            ok = c.last()
        if not ok:
            raise ShardError("corrupt", "%s: record %d: no block holds it" % (self.path, i))
        return struct.unpack(">Q", bytes(c.key()))[0], c.value()

    def _parse_block(self, first: int, v: Any) -> tuple[Any, ...]:
        """Check a block's header (docs/format.md); returns (first, n,
        frame_recs, frame_ends, rec_ends, frames_offset, value): frame j
        holds records frame_recs[j-1]..frame_recs[j] of the block (format 1:
        frame_recs None, a frame per record), rec_ends (format 2) their ends
        within the frame's content."""
        where = "%s: block at record %d" % (self.path, first)
        version = self.format_version
        if len(v) < 20:
            raise ShardError("corrupt", "%s: %d bytes, too short" % (where, len(v)))
        magic, n, hfirst = struct.unpack_from("<IIQ", v, 0)
        if magic != _BLOCK_MAGIC[version] or n == 0 or n > _MAX_BLOCK_RECORDS:
            raise ShardError("corrupt", "%s: bad magic or record count (format %d)"
                             % (where, version))
        m = struct.unpack_from("<I", v, 16)[0] if version == 2 else n
        if version == 2 and not 0 < m <= n:
            raise ShardError("corrupt", "%s: %d frames for %d records" % (where, m, n))
        hdr = 20 + 8 * m + 4 * n if version == 2 else 16 + 4 * n
        if len(v) < hdr + 4:
            raise ShardError("corrupt", "%s: header does not fit" % where)
        if zlib.crc32(v[:hdr]) != struct.unpack_from("<I", v, hdr)[0]:
            raise ShardError("corrupt", "%s: header CRC mismatch" % where)
        if hfirst != first:
            raise ShardError("corrupt", "%s: header says first record %d" % (where, hfirst))
        frames_len = len(v) - hdr - 4
        if version == 1:
            # The CRC covers the offsets; each read checks its own frame's bounds.
            ends = struct.unpack_from("<%dI" % n, v, 16)
            if ends[-1] != frames_len:
                raise ShardError("corrupt", "%s: frames do not end with the value" % where)
            return (first, n, None, ends, None, hdr + 4, v)
        recs = struct.unpack_from("<%dI" % m, v, 20)
        ends = struct.unpack_from("<%dI" % m, v, 20 + 4 * m)
        rec_ends = struct.unpack_from("<%dI" % n, v, 20 + 8 * m)
        if (any(b <= a for a, b in zip((0,) + recs, recs)) or recs[-1] != n
                or any(b <= a for a, b in zip((0,) + ends, ends)) or ends[-1] != frames_len):
            raise ShardError("corrupt", "%s: frame table out of order" % where)
        lo = 0
        for hi in recs:
            prev = 0
            for k in range(lo, hi):
                if not prev < rec_ends[k] <= _MAX_RECORD_BYTES:
                    raise ShardError("corrupt", "%s: record %d: end %d within its frame is not "
                                     "after %d" % (self.path, first + k, rec_ends[k], prev))
                prev = rec_ends[k]
            lo = hi
        return (first, n, recs, ends, rec_ends, hdr + 4, v)

    def _load_block(self, i: int) -> None:
        first, v = self._seek_block(i)
        b = self._parse_block(first, v)
        if not first <= i < first + b[1]:
            raise ShardError("corrupt", "%s: record %d: missing (the block at %d holds %d)"
                             % (self.path, i, first, b[1]))
        self._block = b

    def frames(self) -> tuple[np.ndarray, np.ndarray]:
        """Every zstd frame of the shard in record order, as numpy int64
        arrays (first record, records): every block's header is read and
        checked. Format 1 has one frame per record."""
        if self._frame_first is None:
            firsts: list[int] = []
            counts: list[int] = []
            i, n_rec = 0, len(self)
            while i < n_rec:
                first, v = self._seek_block(i)
                b = self._parse_block(first, v)
                if first != i:
                    raise ShardError("corrupt", "%s: record %d: no block starts there"
                                     % (self.path, i))
                if b[2] is None:
                    firsts.extend(range(first, first + b[1]))
                    counts.extend([1] * b[1])
                else:
                    prev = 0
                    for r in b[2]:
                        firsts.append(first + prev)
                        counts.append(r - prev)
                        prev = r
                i = first + b[1]
            self._frame_first = np.array(firsts, np.int64)
            self._frame_n = np.array(counts, np.int64)
        assert self._frame_n is not None
        return self._frame_first, self._frame_n

    def _decode_frame(self, b: tuple[Any, ...], j: int, i: int) -> tuple[int, Any, Any]:
        """Frame j of block b: (first record, content, record ends or None)."""
        first, n, recs, ends, rec_ends, base, v = b
        start, end = (ends[j - 1] if j else 0), ends[j]
        lo = (recs[j - 1] if j else 0) if recs is not None else j
        hi = recs[j] if recs is not None else j + 1
        where = "%s: record %d" % (self.path, i)
        if hi - lo > 1:
            where += " (in the frame of records %d..%d)" % (first + lo, first + hi - 1)
        if not 0 <= start < end <= len(v) - base:
            raise ShardError("corrupt", "%s: frame offsets %d..%d out of order"
                             % (where, start, end))
        frame = v[base + start:base + end]
        try:
            params = zstandard.get_frame_parameters(frame)
            if not params.has_checksum:
                raise ShardError("corrupt", "%s: zstd frame without checksum" % where)
            if not 0 < params.content_size <= _MAX_RECORD_BYTES:
                raise ShardError("corrupt", "%s: content size out of range" % where)
            # zstd checks the content size and the content checksum; bytes
            # left over in the slot are `sf-shard verify`'s to find.
            out = self._dctx.decompress(frame)
        except zstandard.ZstdError as e:
            raise ShardError("corrupt", "%s: zstd: %s" % (where, e)) from None
        if len(out) != params.content_size:
            raise ShardError("corrupt", "%s: decompressed %d bytes, frame says %d"
                             % (where, len(out), params.content_size))
        offs = None
        if rec_ends is not None:
            offs = (0,) + rec_ends[lo:hi]
            if offs[-1] != len(out):
                raise ShardError("corrupt", "%s: the frame's records end at %d, its content is "
                                 "%d bytes" % (where, offs[-1], len(out)))
        return first + lo, out, offs

    def raw(self, i: int) -> bytes:
        """Record i's uncompressed protobuf bytes (what the digest covers).
        The frame holding it is decoded once and kept in the frame cache."""
        n_rec = len(self)
        if not 0 <= i < n_rec:
            raise IndexError("%s: record %d out of range (%d records)" % (self.path, i, n_rec))
        ent = None
        ff = self._frame_first
        if ff is not None:  # the frame index: a cached frame needs no block lookup
            ent = self._cache.get((self.path, int(ff[np.searchsorted(ff, i, "right") - 1])))
        if ent is None:
            b = self._block
            if b is None or not b[0] <= i < b[0] + b[1]:
                self._load_block(i)
                b = self._block
                assert b is not None
            k = i - b[0]
            j = k if b[2] is None else bisect.bisect_right(b[2], k)
            fk = b[0] + ((b[2][j - 1] if j else 0) if b[2] is not None else j)
            ent = self._cache.get((self.path, fk))
            if ent is None:
                ent = self._decode_frame(b, j, i)
                self._cache.put((self.path, fk), ent)
        fk, out, offs = ent
        if offs is None:
            return out
        k = i - fk
        return out[offs[k]:offs[k + 1]]

    def record(self, i: int) -> Any:
        """Record i as a LabelRecord message."""
        raw = self.raw(i)
        try:
            rec = _parse(label_pb2.LabelRecord, raw)
        except Exception as e:
            raise ShardError("format", "%s: record %d: does not decode (%s)"
                             % (self.path, i, e)) from None
        if rec.schema_version != SCHEMA_VERSION:
            raise ShardError("version",
                             "%s: record %d: schema_version %d, this reader knows %d (%s)"
                             % (self.path, i, rec.schema_version, SCHEMA_VERSION,
                                schema_note(rec.schema_version)))
        return rec

    def __getitem__(self, i: int) -> dict[str, Any]:
        if i < 0:
            i += len(self)
        return record_to_dict(self.record(i))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(len(self)):
            yield self[i]

    def content_digest(self) -> str:
        """Recompute the content digest (hex): SHA-256 over each record's
        length (u64 little-endian) and uncompressed bytes, in index order,
        then a gate shard's pairs the same way, in seed order."""
        h = hashlib.sha256()
        for i in range(len(self)):
            raw = self.raw(i)
            h.update(struct.pack("<Q", len(raw)))
            h.update(raw)
        for p in self._manifest_pb.gate_pairs:
            raw = p.SerializeToString()
            h.update(struct.pack("<Q", len(raw)))
            h.update(raw)
        return h.hexdigest()

    def verify(self) -> None:
        """Check every page's CRC, decode every record and compare the
        recomputed digest with the manifest's; raises ShardError naming the
        first problem. (`sf-shard verify` does the same and also names the
        record a damaged page belongs to.)"""
        with _open_regular(self.path) as f:
            for pg in range(self._npages):
                if zlib.crc32(f.read(self._psize)) != int(self._page_crc[pg]):
                    raise ShardError("corrupt", "%s: page %d: CRC mismatch" % (self.path, pg))
        for i in range(len(self)):
            self.record(i)
        digest = self.content_digest()
        if digest != self.manifest["content_digest"]:
            raise ShardError("corrupt", "%s: content digest %s, the manifest says %s"
                             % (self.path, digest, self.manifest["content_digest"]))


def open_shard(path: str | os.PathLike[str], frame_cache: FrameCache | None = None) -> Shard:
    """Open a sealed shard for reading (see ``Shard``; ``frame_cache``, a
    FrameCache, may be shared with other shards); raises ShardError."""
    return Shard(path, frame_cache)
