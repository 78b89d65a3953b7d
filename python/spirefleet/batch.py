"""BatchReader: padded training batches assembled by the C reader.

The C batch reader (shard/batch.h, ``libsfbatch.so`` beside this module,
reached through ctypes) decodes and checks the records of a batch and writes
every field into contiguous numpy buffers allocated here (each zstd frame
decoded once an epoch: the C reader keeps the dataset's shuffle window of
decoded frames), padded exactly as
``pad_batch`` pads: no Python object per record. The order is a
``ShardDataset``'s (its deterministic shuffle over the shards and its
engine-limit filter), so ``BatchReader(ds, b).batch(k)`` holds the same
values as ``pad_batch([ds[i] for i in range(k*b, (k+1)*b)])`` — plus the
label ids a trainer filters on (game_seed, job_id, fight_index,
decision_index, turn, encounter_id, ascension), won, value and the record
lengths. The fields, dtypes and shapes come from the library's own table
(``sf_batch_field_*``), the one place that lists them.

    ds = ShardDataset(paths, seed=0)
    reader = BatchReader(ds, 1024)
    for epoch in range(n):
        reader.set_epoch(epoch)
        for batch in reader:            # dicts of numpy arrays
            t = reader.to_torch(batch)  # zero-copy torch tensors

``WindowRecords`` is the trainer's reader (spirefleet.train): every record
of a window (spirefleet.window's shard infos) held as its (shard, record)
address and the per-record facts the trainer needs up front (split, forecast
statistics, baselines), read once through the C reader; ``batch(idx)``
assembles any records, in any order, through the same C path. The frame
cache holds every frame of the window, so each frame is decompressed once
however the trainer permutes the records. ``window.Records`` (a pure-Python
copy of every record) and ``dataset.pad_batch`` remain as the test oracles
the C batches are compared against (tests/integration/test_batch_reader.py,
test_train.py).
"""

import ctypes
import os
from collections.abc import Iterator, Sequence
from typing import Any, Union

import numpy as np

from .dataset import ShardDataset
from .facts import BATCH_DIMS, ERR_MSG_MAX
from .shard import ShardError, open_shard
from .window import WindowError, persistence_flat

Batch = dict[str, np.ndarray]
# a field of the C table: name, numpy dtype, dims after B ("T"/"Q"/... or a size)
Field = tuple[str, np.dtype, tuple[Union[str, int], ...]]

_LIB_NAME = "libsfbatch.so"


class _Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * ERR_MSG_MAX)]


class _Dims(ctypes.Structure):
    _fields_ = [(k, ctypes.c_uint32) for k in BATCH_DIMS]


def _load_lib() -> ctypes.CDLL:
    path = os.environ.get("SF_BATCH_LIB") or os.path.join(os.path.dirname(__file__), _LIB_NAME)
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise RuntimeError("spirefleet.batch: cannot load the C batch reader %s: %s "
                           "(build it with ninja; SF_BATCH_LIB names another)" % (path, e))
    vp, sz = ctypes.c_void_p, ctypes.c_size_t
    lib.sf_batch_field_count.restype = ctypes.c_int
    for f in ("sf_batch_field_name", "sf_batch_field_dtype", "sf_batch_field_dims"):
        getattr(lib, f).restype = ctypes.c_char_p
        getattr(lib, f).argtypes = [ctypes.c_int]
    lib.sf_batch_reader_open.argtypes = [ctypes.POINTER(ctypes.c_char_p), sz, sz,
                                         ctypes.POINTER(vp), ctypes.POINTER(_Err)]
    lib.sf_batch_reader_frames_decoded.argtypes = [vp]
    lib.sf_batch_reader_frames_decoded.restype = ctypes.c_uint64
    lib.sf_batch_reader_shard_count.argtypes = [vp, sz]
    lib.sf_batch_reader_shard_count.restype = ctypes.c_uint64
    lib.sf_batch_reader_close.argtypes = [vp]
    lib.sf_batch_reader_close.restype = None
    lib.sf_batch_reader_load.argtypes = [vp, vp, vp, sz, ctypes.POINTER(_Dims),
                                         ctypes.POINTER(_Err)]
    lib.sf_batch_reader_emit.argtypes = [vp, vp, sz, ctypes.POINTER(_Err)]
    return lib


_lib: ctypes.CDLL | None = None


def _library() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        _lib = _load_lib()
    return _lib


def batch_fields() -> list[Field]:
    """The batch layout from the C table: a list of (name, numpy dtype,
    dims after B as a tuple of "T"/"Q"/"C"/"F"/"G" or ints)."""
    lib = _library()
    out: list[Field] = []
    for i in range(lib.sf_batch_field_count()):
        dims = lib.sf_batch_field_dims(i).decode()
        out.append((lib.sf_batch_field_name(i).decode(),
                    np.dtype(lib.sf_batch_field_dtype(i).decode()),
                    tuple(int(d) if d.isdigit() else d for d in dims.split(",") if d)))
    return out


class BatchError(Exception):
    """A shard or record the C reader refused (the message names it)."""


def _open(paths: Sequence[str], cache_frames: int) -> ctypes.c_void_p:
    """A C batch reader over `paths` keeping `cache_frames` decoded frames."""
    encoded = [os.fsencode(p) for p in paths]
    arr = (ctypes.c_char_p * len(encoded))(*encoded)
    h, err = ctypes.c_void_p(), _Err()
    if _library().sf_batch_reader_open(arr, len(encoded), cache_frames, ctypes.byref(h),
                                       ctypes.byref(err)) < 0:
        raise BatchError(err.msg.decode(errors="replace"))
    return h


def _read(h: ctypes.c_void_p | None, fields: list[Field], shard: np.ndarray,
          record: np.ndarray) -> Batch:
    """Records (shard[k], record[k]) as one padded batch: the C reader's
    load and emit into numpy buffers sized from the field table."""
    shard = np.ascontiguousarray(shard, np.uint32)
    record = np.ascontiguousarray(record, np.uint64)
    lib = _library()
    dims, err = _Dims(), _Err()
    if lib.sf_batch_reader_load(h, shard.ctypes.data, record.ctypes.data, len(shard),
                                ctypes.byref(dims), ctypes.byref(err)) < 0:
        raise BatchError(err.msg.decode(errors="replace"))
    size = {"T": dims.t, "Q": dims.q, "C": dims.c, "F": dims.f, "G": dims.g}
    out: Batch = {}
    ptrs = (ctypes.c_void_p * len(fields))()
    for i, (name, dtype, shape) in enumerate(fields):
        a = np.empty((dims.b,) + tuple(size.get(d, d) if isinstance(d, str) else d
                                       for d in shape), dtype)
        out[name] = a
        ptrs[i] = a.ctypes.data
    if lib.sf_batch_reader_emit(h, ptrs, len(fields), ctypes.byref(err)) < 0:
        raise BatchError(err.msg.decode(errors="replace"))
    return out


class _CReaderOwner:
    """Owner of a C batch reader handle ``_h`` opened by process ``_pid``:
    ``close`` (or garbage collection) closes it once, and only in that
    process (a forked child leaves its parent's reader alone); it is never
    pickled."""

    _h: ctypes.c_void_p | None
    _pid: int

    def close(self) -> None:
        h = getattr(self, "_h", None)
        if h is not None and h.value and self._pid == os.getpid():
            _library().sf_batch_reader_close(h)
        self._h = None

    def __del__(self) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("%s holds a C reader: make one per process" % type(self).__name__)


class BatchReader(_CReaderOwner):
    """Batches of `batch_size` records of `dataset` (a ShardDataset, or
    shard paths and ShardDataset's keyword arguments), in its order; the
    last batch is smaller unless ``drop_last``."""

    def __init__(self, dataset: ShardDataset | Sequence[str] | str, batch_size: int,
                 drop_last: bool = False, **dataset_args: Any) -> None:
        if not isinstance(dataset, ShardDataset):
            dataset = ShardDataset(dataset, **dataset_args)
        elif dataset_args:
            raise TypeError("BatchReader: dataset arguments given with a ShardDataset")
        if batch_size < 1:
            raise ValueError("BatchReader: batch_size %r < 1" % (batch_size,))
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.drop_last = drop_last
        self._fields = batch_fields()
        # a decoded frame for each frame of the shuffle window: every frame
        # is decompressed once an epoch
        self._h: ctypes.c_void_p | None = _open(dataset.paths, dataset.window)
        self._pid = os.getpid()
        # (shard, record) of every item in dataset order, for the current epoch

    def frames_decoded(self) -> int:
        """zstd frames the C reader has decompressed since it was opened."""
        return int(_library().sf_batch_reader_frames_decoded(self._h))

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def set_epoch(self, epoch: int) -> None:
        """The dataset's order for `epoch` (ShardDataset.set_epoch)."""
        self.dataset.set_epoch(epoch)

    def _locate(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(shard, record) arrays of dataset items, vectorised as
        ShardDataset.locate does one by one."""
        ds = self.dataset
        j = ds._order[items]
        k = np.searchsorted(ds.offsets, j, side="right") - 1
        local = j - ds.offsets[k]
        for s in np.unique(k):
            keep = ds._keep[s]
            if keep is not None:
                sel = k == s
                local[sel] = keep[local[sel]]
        return k.astype(np.uint32), local.astype(np.uint64)

    def batch(self, index: int) -> Batch:
        """Batch `index` as a dict of numpy arrays (pad_batch's keys and
        more, see the module's doc)."""
        n = len(self.dataset)
        lo = index * self.batch_size
        if not 0 <= index < len(self):
            raise IndexError("BatchReader: batch %d out of range (%d batches)" % (index, len(self)))
        items = np.arange(lo, min(n, lo + self.batch_size))
        shard, record = self._locate(items)
        return _read(self._h, self._fields, shard, record)

    def __iter__(self) -> Iterator[Batch]:
        for k in range(len(self)):
            yield self.batch(k)

    @staticmethod
    def to_torch(batch: Batch) -> dict[str, Any]:
        """The batch's arrays as torch tensors: those of a dtype torch has
        share their memory; unsigned 16- and 32-bit ids (token_cat, query,
        the u32 label ids) become int64 (embedding indices), 64-bit ones
        (game_seed, job_id) int64 of the same bits."""
        import torch
        out = {}
        for k, v in batch.items():
            if v.dtype in (np.uint16, np.uint32):
                v = v.astype(np.int64)
            elif v.dtype == np.uint64:
                v = v.view(np.int64)
            out[k] = torch.from_numpy(v)
        return out


# Records read per C batch while WindowRecords gathers the per-record facts.
SCAN_CHUNK = 4096


class WindowRecords(_CReaderOwner):
    """Every kept record of some shards (spirefleet.window's infos, newest
    first), read through the C batch reader: ``batch(idx)`` is records
    ``idx`` (indices into the window, in shard order, engine-limit fights
    left out) as one padded batch. Beside the batches it holds, per record,
    what the trainer reads without tokens: value_bins, forecast,
    forecast_mask, won, game_seed, encounter_id, q_chosen, q_searched,
    n_tokens, n_queries, persist (the forecast columns' current values)
    and policy_plogp (sum of p log p over the search policy's nonzero
    entries). The same attributes, dtypes and batches as window.Records,
    the pure-Python oracle it is tested against.

    With ``tokenizer_version`` set, a shard whose labels another tokenizer
    wrote is a WindowError naming the file, as is a shard whose content
    changed since its info was read. Memory: the decoded frames of the
    whole window (about the records' uncompressed size)."""

    def __init__(self, infos: Sequence[dict[str, Any]],
                 tokenizer_version: int | None = None) -> None:
        if not infos:
            raise WindowError("the window holds no labels")
        paths = [i["path"] for i in infos]
        frames = 0
        for info in infos:
            frames += self._check_shard(info, tokenizer_version)
        try:
            self._h: ctypes.c_void_p | None = _open(paths, max(1, frames))
        except BatchError as e:
            raise WindowError(str(e)) from None
        self._pid = os.getpid()
        self._fields = batch_fields()
        lib = _library()
        shard, record = [], []
        for s in range(len(paths)):
            n = int(lib.sf_batch_reader_shard_count(self._h, s))
            shard.append(np.full(n, s, np.uint32))
            record.append(np.arange(n, dtype=np.uint64))
        self.n = 0
        self._gather(np.concatenate(shard), np.concatenate(record))
        if self.n == 0:
            raise WindowError("the window holds no labels")

    @staticmethod
    def _check_shard(info: dict[str, Any], tokenizer_version: int | None) -> int:
        """The checks of one shard's manifest; returns its zstd frames."""
        path = info["path"]
        try:
            with open_shard(path) as s:
                m = s.manifest
                if m["content_digest"] != info["digest"]:
                    raise WindowError("%s: content digest %s, expected %s (the shard changed)"
                                      % (path, m["content_digest"], info["digest"]))
                tv = int(m["tokenizer_version"])
                if tokenizer_version is not None and tv != tokenizer_version:
                    raise WindowError("%s: labels of tokenizer version %d; this network reads "
                                      "tokenizer version %d (labels written before the tokenizer "
                                      "changed cannot train it: leave them out of the window)"
                                      % (path, tv, tokenizer_version))
                first, _ = s.frames()
                return len(first)
        except ShardError as e:
            raise WindowError(str(e)) from None

    def _gather(self, shard: np.ndarray, record: np.ndarray) -> None:
        """Read every record once (SCAN_CHUNK at a time), keep those not
        cut short by the engine's limits, and hold their per-record facts."""
        keep_s, keep_r, parts = [], [], []
        persist, plogp = [], []
        for lo in range(0, len(shard), SCAN_CHUNK):
            s, r = shard[lo:lo + SCAN_CHUNK], record[lo:lo + SCAN_CHUNK]
            try:
                b = _read(self._h, self._fields, s, r)
            except BatchError as e:
                raise WindowError(str(e)) from None
            keep = b["engine_limit"] == 0
            b = {k: v[keep] for k, v in b.items()}
            keep_s.append(s[keep])
            keep_r.append(r[keep])
            parts.append({k: b[k] for k in _PER_RECORD})
            nt = b["n_tokens"]
            tok_off = np.concatenate([[0], np.cumsum(nt)]).astype(np.int64)
            persist.append(persistence_flat(b["token_type"][b["token_mask"]],
                                            b["token_cont"][b["token_mask"]], tok_off))
            for k, nq in enumerate(b["n_queries"]):
                pi = b["policy"][k, :nq].astype(np.float64)
                plogp.append(float((pi[pi > 0] * np.log(pi[pi > 0])).sum()))
        self._shard = np.concatenate(keep_s)
        self._record = np.concatenate(keep_r)
        self.n = len(self._shard)
        for name in _PER_RECORD:
            setattr(self, name, np.concatenate([p[name] for p in parts]))
        self.persist = np.concatenate(persist) if persist else np.zeros((0, 0), np.float32)
        self.policy_plogp = np.array(plogp, np.float64)

    def __len__(self) -> int:
        return self.n

    def batch(self, idx: Sequence[int] | np.ndarray) -> Batch:
        """Records `idx` as one padded batch (the C table's fields, plus
        persist), padded to their own longest T and Q."""
        idx = np.asarray(idx, np.int64)
        try:
            out = _read(self._h, self._fields, self._shard[idx], self._record[idx])
        except BatchError as e:
            raise WindowError(str(e)) from None
        out["persist"] = self.persist[idx]
        return out


# the per-record facts WindowRecords holds, with the C table's dtypes
_PER_RECORD = ("value_bins", "forecast", "forecast_mask", "won", "game_seed", "encounter_id",
               "q_chosen", "q_searched", "n_tokens", "n_queries")
