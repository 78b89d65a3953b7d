"""ShardDataset: the records of many shards as one map-style dataset.

Deterministic shuffling: the order of ``dataset[0..len)`` is a permutation
drawn from numpy's PCG64 seeded with (seed, epoch) over the records of the
shards sorted by path, so the same shard set, seed and epoch give the same
order on every machine, whatever order the paths were given in. Call
``set_epoch(e)`` between epochs for a new order. With ``shuffle=False`` the
order is shard by shard, record by record.

Fights that ended on the engine's pile capacity (``outcome.engine_limit``,
not a game outcome) are left out by default (``skip_engine_limit``); the
manifests' ``engine_limit_fights`` counter says which shards hold any, so
only those are scanned. ``skipped_engine_limit`` counts the records left
out.

When PyTorch is importable the class is a ``torch.utils.data.Dataset`` and
works with a DataLoader (use the default sampler: the dataset shuffles
itself). Shards are opened lazily in whichever process reads them, so
DataLoader workers started by fork() each open their own.
"""

import glob
import os
import sys

import numpy as np

from .contract import VALUE_BINS, FORECAST_H, FORECAST_COLUMNS
from .shard import SHARD_SUFFIX, load_quarantine, open_shard

try:  # optional: a PyTorch-style dataset when torch is there
    from torch.utils.data import Dataset as _Base
except ImportError:  # pragma: no cover - exercised where torch is absent
    _Base = object


def expand_paths(paths, include_quarantined=False, skipped=None):
    """Shard files from files and directories (a directory contributes its
    ``*.shard`` files but those its QUARANTINE list names, unless
    ``include_quarantined``), sorted, duplicates removed. ``skipped`` (a
    list) receives the paths left out as quarantined."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out = set()
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            files = glob.glob(os.path.join(glob.escape(p), "*" + SHARD_SUFFIX))
            bad = set() if include_quarantined else load_quarantine(p)
            for f in files:
                if bad:
                    with open_shard(f) as s:
                        if s.manifest["content_digest"] in bad:
                            if skipped is not None:
                                skipped.append(f)
                            continue
                out.add(f)
        else:
            out.add(p)
    return sorted(out)


class ShardDataset(_Base):
    """Records of a list of shards (files or directories).

    dataset[i] -> transform(record dict) (``spirefleet.shard.record_to_dict``
    layout; transform defaults to the identity).
    """

    def __init__(self, paths, shuffle=True, seed=0, transform=None, skip_engine_limit=True,
                 include_quarantined=False):
        self.skipped_quarantined = []  # shards a QUARANTINE list names, left out
        self.paths = expand_paths(paths, include_quarantined, self.skipped_quarantined)
        if self.skipped_quarantined:
            sys.stderr.write("ShardDataset: %d quarantined shard(s) skipped (QUARANTINE)\n"
                             % len(self.skipped_quarantined))
        if not self.paths:
            raise ValueError("ShardDataset: no shards in %r" % (paths,))
        self.shuffle = shuffle
        self.seed = int(seed)
        self.transform = transform
        counts = []
        self.manifests = []
        self._keep = []  # per shard: None (every record) or the kept indices
        self.skipped_engine_limit = 0
        for p in self.paths:
            with open_shard(p) as s:
                self.manifests.append(s.manifest)
                stats = s.manifest.get("stats") or {}
                limited = (stats.get("counters") or {}).get("engine_limit_fights", 0)
                keep = None
                if skip_engine_limit and limited:
                    keep = np.array([i for i in range(len(s))
                                     if not s.record(i).outcome.engine_limit], np.int64)
                    self.skipped_engine_limit += len(s) - len(keep)
                self._keep.append(keep)
                counts.append(len(s) if keep is None else len(keep))
        self.offsets = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
        self.epoch = 0
        self._order = None
        self._readers = {}
        self._pid = None
        self.set_epoch(0)

    def __len__(self):
        return int(self.offsets[-1])

    def set_epoch(self, epoch):
        """Draw the order for `epoch` (a pure function of seed and epoch)."""
        self.epoch = int(epoch)
        n = len(self)
        if self.shuffle:
            rng = np.random.Generator(np.random.PCG64([self.seed, self.epoch]))
            self._order = rng.permutation(n)
        else:
            self._order = np.arange(n)

    def locate(self, i):
        """(shard path, record index in it) of dataset item i."""
        j = int(self._order[i])
        k = int(np.searchsorted(self.offsets, j, side="right")) - 1
        local = j - int(self.offsets[k])
        keep = self._keep[k]
        return self.paths[k], local if keep is None else int(keep[local])

    def _reader(self, path):
        if self._pid != os.getpid():  # a forked worker: open our own
            self._readers = {}
            self._pid = os.getpid()
        r = self._readers.get(path)
        if r is None:
            r = self._readers[path] = open_shard(path)
        return r

    def __getitem__(self, i):
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("ShardDataset: item %d out of range (%d records)" % (i, n))
        path, local = self.locate(i)
        rec = self._reader(path)[local]
        return self.transform(rec) if self.transform else rec

    def __getstate__(self):  # picklable for spawn-based DataLoader workers
        state = dict(self.__dict__)
        state["_readers"] = {}
        state["_pid"] = None
        return state


def pad_batch(records):
    """Stack record dicts into padded numpy arrays for a network batch.

    Tokens are padded to the longest T (token_type 0 = PAD, ``token_mask``
    marks real tokens), queries to the longest Q (``query_mask``; padded
    queries point at token 0 and have policy 0). Returns a dict of arrays:
    token_type [B,T], token_cat [B,T,C], token_cont [B,T,F], token_mask
    [B,T], query [B,Q,2], query_cont [B,Q,G], query_mask [B,Q], policy
    [B,Q], value_bins [B,21], forecast [B,4,5], forecast_mask [B,4].
    """
    b = len(records)
    t_max = max(r["inputs"]["token_type"].shape[0] for r in records)
    q_max = max(r["inputs"]["query"].shape[0] for r in records)
    r0 = records[0]["inputs"]
    c, f = r0["token_cat"].shape[1], r0["token_cont"].shape[1]
    g = r0["query_cont"].shape[1]
    out = {
        "token_type": np.zeros((b, t_max), np.uint8),
        "token_cat": np.zeros((b, t_max, c), np.uint16),
        "token_cont": np.zeros((b, t_max, f), np.float32),
        "token_mask": np.zeros((b, t_max), np.bool_),
        "query": np.zeros((b, q_max, 2), np.uint16),
        "query_cont": np.zeros((b, q_max, g), np.float32),
        "query_mask": np.zeros((b, q_max), np.bool_),
        "policy": np.zeros((b, q_max), np.float32),
        "value_bins": np.zeros((b, VALUE_BINS), np.float32),
        "forecast": np.zeros((b, FORECAST_H, len(FORECAST_COLUMNS)), np.float32),
        "forecast_mask": np.zeros((b, FORECAST_H), np.uint8),
    }
    for k, r in enumerate(records):
        inp = r["inputs"]
        t, q = inp["token_type"].shape[0], inp["query"].shape[0]
        out["token_type"][k, :t] = inp["token_type"]
        out["token_cat"][k, :t] = inp["token_cat"]
        out["token_cont"][k, :t] = inp["token_cont"]
        out["token_mask"][k, :t] = True
        out["query"][k, :q] = inp["query"]
        out["query_cont"][k, :q] = inp["query_cont"]
        out["query_mask"][k, :q] = True
        out["policy"][k, :q] = r["search"]["policy"]
        out["value_bins"][k] = r["outcome"]["value_bins"]
        out["forecast"][k] = r["forecast"]["target"]
        out["forecast_mask"][k] = r["forecast"]["mask"]
    return out
