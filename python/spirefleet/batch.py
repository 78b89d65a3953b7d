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
"""

import ctypes
import os

import numpy as np

from .dataset import ShardDataset
from .facts import BATCH_DIMS, ERR_MSG_MAX

_LIB_NAME = "libsfbatch.so"


class _Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * ERR_MSG_MAX)]


class _Dims(ctypes.Structure):
    _fields_ = [(k, ctypes.c_uint32) for k in BATCH_DIMS]


def _load_lib():
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
    lib.sf_batch_reader_close.argtypes = [vp]
    lib.sf_batch_reader_close.restype = None
    lib.sf_batch_reader_load.argtypes = [vp, vp, vp, sz, ctypes.POINTER(_Dims),
                                         ctypes.POINTER(_Err)]
    lib.sf_batch_reader_emit.argtypes = [vp, vp, sz, ctypes.POINTER(_Err)]
    return lib


_lib = None


def _library():
    global _lib
    if _lib is None:
        _lib = _load_lib()
    return _lib


def batch_fields():
    """The batch layout from the C table: a list of (name, numpy dtype,
    dims after B as a tuple of "T"/"Q"/"C"/"F"/"G" or ints)."""
    lib = _library()
    out = []
    for i in range(lib.sf_batch_field_count()):
        dims = lib.sf_batch_field_dims(i).decode()
        out.append((lib.sf_batch_field_name(i).decode(), np.dtype(lib.sf_batch_field_dtype(i).decode()),
                    tuple(int(d) if d.isdigit() else d for d in dims.split(",") if d)))
    return out


class BatchError(Exception):
    """A shard or record the C reader refused (the message names it)."""


class BatchReader:
    """Batches of `batch_size` records of `dataset` (a ShardDataset, or
    shard paths and ShardDataset's keyword arguments), in its order; the
    last batch is smaller unless ``drop_last``."""

    def __init__(self, dataset, batch_size, drop_last=False, **dataset_args):
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
        lib = _library()
        paths = [os.fsencode(p) for p in dataset.paths]
        arr = (ctypes.c_char_p * len(paths))(*paths)
        h, err = ctypes.c_void_p(), _Err()
        # a decoded frame for each frame of the shuffle window: every frame
        # is decompressed once an epoch
        if lib.sf_batch_reader_open(arr, len(paths), dataset.window, ctypes.byref(h),
                                    ctypes.byref(err)) < 0:
            raise BatchError(err.msg.decode(errors="replace"))
        self._h = h
        self._pid = os.getpid()
        # (shard, record) of every item in dataset order, for the current epoch
        self._shard = self._record = None
        self._map_epoch = None

    def close(self):
        if getattr(self, "_h", None) and self._h.value and self._pid == os.getpid():
            _library().sf_batch_reader_close(self._h)
        self._h = None

    def __del__(self):
        self.close()

    def frames_decoded(self):
        """zstd frames the C reader has decompressed since it was opened."""
        return int(_library().sf_batch_reader_frames_decoded(self._h))

    def __len__(self):
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def set_epoch(self, epoch):
        """The dataset's order for `epoch` (ShardDataset.set_epoch)."""
        self.dataset.set_epoch(epoch)

    def _locate(self, items):
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

    def batch(self, index):
        """Batch `index` as a dict of numpy arrays (pad_batch's keys and
        more, see the module's doc)."""
        n = len(self.dataset)
        lo = index * self.batch_size
        if not 0 <= index < len(self):
            raise IndexError("BatchReader: batch %d out of range (%d batches)" % (index, len(self)))
        items = np.arange(lo, min(n, lo + self.batch_size))
        shard, record = self._locate(items)
        lib = _library()
        dims, err = _Dims(), _Err()
        if lib.sf_batch_reader_load(self._h, shard.ctypes.data, record.ctypes.data, len(items),
                                    ctypes.byref(dims), ctypes.byref(err)) < 0:
            raise BatchError(err.msg.decode(errors="replace"))
        size = {"T": dims.t, "Q": dims.q, "C": dims.c, "F": dims.f, "G": dims.g}
        out = {}
        ptrs = (ctypes.c_void_p * len(self._fields))()
        for i, (name, dtype, shape) in enumerate(self._fields):
            a = np.empty((dims.b,) + tuple(size.get(d, d) for d in shape), dtype)
            out[name] = a
            ptrs[i] = a.ctypes.data
        if lib.sf_batch_reader_emit(self._h, ptrs, len(self._fields), ctypes.byref(err)) < 0:
            raise BatchError(err.msg.decode(errors="replace"))
        return out

    def __iter__(self):
        for k in range(len(self)):
            yield self.batch(k)

    @staticmethod
    def to_torch(batch):
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

    def __getstate__(self):
        raise TypeError("BatchReader holds a C reader: make one per process")
