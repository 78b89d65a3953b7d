"""ShardDataset: the records of many shards as one map-style dataset.

Deterministic, frame-aware shuffling: a shard holds its records in zstd
frames of up to 16 consecutive records (format 2), and reading one record
decodes its whole frame, so a per-record global shuffle would decode a
frame per record. The order of ``dataset[0..len)`` instead (1) permutes the
frames of all shards (in ``shard_order_key`` order: file name, then content
digest) with numpy's PCG64 seeded with
(seed, epoch), then (2) cuts that frame order into windows of ``window``
consecutive frames (SHUFFLE_WINDOW, 256) and permutes the records within
each window with the same generator: a shuffle buffer over frames, as
streaming data loaders shuffle shards and then a buffer of their samples.
A reader that keeps ``window`` decoded frames decodes every frame once an
epoch. The same shard set, seed, epoch and window give the same order on
every machine, whatever order the paths were given in and wherever the
shards live. Call ``set_epoch(e)`` between epochs for a new order. With
``shuffle=False`` the order is shard by shard (the same shard order),
record by record.

Fights that ended on the engine's pile capacity (``outcome.engine_limit``,
not a game outcome) are left out by default (``skip_engine_limit``); the
manifests' ``engine_limit_fights`` counter says which shards hold any, so
only those are scanned. ``skipped_engine_limit`` counts the records left
out. Fights that ended at the turn cap (``outcome.turn_limit``: a loss the
search values as one) are kept by default; ``skip_turn_limit=True`` leaves
them out the same way (``turn_limit_fights``, ``skipped_turn_limit``).

A shard found in a directory must have its canonical name (the
coordinator's "<run>-job<NNNNNN>.shard" of its manifest's run and job):
a copy under another name is refused with an error naming the file and
the name expected (a file named on its own may have any name). A shard
whose content digest another file already gave (a copy in a second
directory, or named twice) is read once: the first in shard order is
kept, each other is skipped with a warning on stderr naming both files,
and listed in ``skipped_duplicates``.

When PyTorch is importable the class is a ``torch.utils.data.Dataset`` and
works with a DataLoader (use the default sampler: the dataset shuffles
itself). Shards are opened lazily in whichever process reads them, so
DataLoader workers started by fork() each open their own.
"""

import glob
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .contract import VALUE_BINS, FORECAST_H, FORECAST_COLUMNS
from .facts import COUNTER_ENGINE_LIMIT, COUNTER_TURN_LIMIT
from .shard import (SHARD_SUFFIX, FrameCache, Shard, check_canonical_name, load_quarantine,
                    open_shard, quarantined, read_before)

# Frames per shuffle window (docs/trainer.md "Shuffling"): 256 frames of 16
# records mix 4,096 records from 256 places in the data; a batch of 1,024
# then holds about 4 records of any one frame (16 consecutive decisions of
# one fight), and a reader's cache of 256 decoded frames is ~9-18 MB.
SHUFFLE_WINDOW = 256

try:  # optional: a PyTorch-style dataset when torch is there
    from torch.utils.data import Dataset as _Base
except ImportError:  # pragma: no cover - exercised where torch is absent
    _Base = object  # type: ignore[misc,assignment]


def expand_paths(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                 include_quarantined: bool = False, skipped: list[str] | None = None,
                 in_dir: set[str] | None = None) -> list[str]:
    """Shard files from files and directories (a directory contributes its
    ``*.shard`` files), sorted, each file once however often and under
    whatever spellings it was given (``os.path.realpath``: "d", "./d" and
    its absolute path are one directory; a duplicate keeps its smallest
    spelling). A shard whose directory's QUARANTINE list names it is left
    out, whether it came from the directory or was named itself, unless
    ``include_quarantined``. ``skipped`` (a list) receives the paths left
    out as quarantined, each once. ``in_dir`` (a set) receives the returned
    paths that a directory contributed: those the canonical-name rule
    applies to (``check_canonical_name``)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    candidates: list[tuple[str, str]] = []  # (file, the directory whose QUARANTINE applies)
    dir_keys: set[str] = set()  # realpaths of the files a directory contributed
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            files = glob.glob(os.path.join(glob.escape(p), "*" + SHARD_SUFFIX))
            candidates += [(f, p) for f in sorted(files)]
            dir_keys.update(os.path.realpath(f) for f in files)
        else:
            candidates.append((p, os.path.dirname(p) or os.curdir))
    quarantines: dict[str, dict[str, set[str]]] = {}  # a directory's realpath -> its
    #                                                   QUARANTINE list (load_quarantine)
    kept: dict[str, str] = {}  # a file's realpath -> its smallest spelling
    left_out: dict[str, str] = {}
    for f, d in candidates:
        key = os.path.realpath(f)
        for seen in (kept, left_out):
            if key in seen:
                seen[key] = min(seen[key], f)
                break
        else:
            bad = {}
            if not include_quarantined:
                dkey = os.path.realpath(d)
                if dkey not in quarantines:
                    quarantines[dkey] = load_quarantine(d)
                bad = quarantines[dkey]
            if bad:
                with open_shard(f) as s:
                    if quarantined(bad, s.manifest["content_digest"],
                                   s.manifest["worker_key_id"]):
                        left_out[key] = f
                        continue
            kept[key] = f
    if skipped is not None:
        skipped.extend(sorted(left_out.values()))
    if in_dir is not None:
        in_dir.update(f for k, f in kept.items() if k in dir_keys)
    return sorted(kept.values())


def shard_order_key(path: str, manifest: dict[str, Any]) -> tuple[str, str, str]:
    """Where a shard comes in a dataset's order (its shard order before the
    shuffle, and the order with ``shuffle=False``): by file name, then
    content digest, then (only to break a tie between copies of the same
    bytes) the path. Nothing about where the shard lives decides the order,
    so the same shards under any directory layout, on any machine, give the
    same order."""
    return (os.path.basename(path), manifest["content_digest"], path)


class ShardDataset(_Base):
    """Records of a list of shards (files or directories).

    dataset[i] -> transform(record dict) (``spirefleet.shard.record_to_dict``
    layout; transform defaults to the identity).
    """

    def __init__(self, paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                 shuffle: bool = True, seed: int = 0,
                 transform: Callable[[dict[str, Any]], Any] | None = None,
                 skip_engine_limit: bool = True, include_quarantined: bool = False,
                 window: int = SHUFFLE_WINDOW, skip_turn_limit: bool = False) -> None:
        self.skipped_quarantined: list[str] = []  # shards a QUARANTINE list names, left out
        # (path, the path read instead): the same content digest
        self.skipped_duplicates: list[tuple[str, str]] = []
        in_dir: set[str] = set()
        self.paths = expand_paths(paths, include_quarantined, self.skipped_quarantined, in_dir)
        if self.skipped_quarantined:
            sys.stderr.write("ShardDataset: %d quarantined shard(s) skipped (QUARANTINE)\n"
                             % len(self.skipped_quarantined))
        if not self.paths:
            raise ValueError("ShardDataset: no shards in %r" % (paths,))
        self.shuffle = shuffle
        self.seed = int(seed)
        self.window = int(window)
        if self.window < 1:
            raise ValueError("ShardDataset: window %r < 1" % (window,))
        self.transform = transform
        self.skipped_engine_limit = 0
        self.skipped_turn_limit = 0
        shards = []  # (order key, path, manifest, keep, kept count, frames, record frames,
        #              (engine-limit, turn-limit records left out))
        for p in self.paths:
            with open_shard(p) as s:
                if p in in_dir:  # a directory holds a shard under its own name only
                    check_canonical_name(p, s.manifest["run_id"], s.manifest["job_id"])
                counters = (s.manifest.get("stats") or {}).get("counters") or {}
                skip_engine = skip_engine_limit and counters.get(COUNTER_ENGINE_LIMIT, 0)
                skip_turn = skip_turn_limit and counters.get(COUNTER_TURN_LIMIT, 0)
                keep = None
                skipped = [0, 0]
                if skip_engine or skip_turn:
                    kept = []
                    for i in range(len(s)):
                        o = s.record(i).outcome
                        if skip_engine and o.engine_limit:
                            skipped[0] += 1
                        elif skip_turn and o.turn_limit:
                            skipped[1] += 1
                        else:
                            kept.append(i)
                    keep = np.array(kept, np.int64)
                first, _ = s.frames()
                local = np.arange(len(s), dtype=np.int64) if keep is None else keep
                shards.append((shard_order_key(p, s.manifest), p, s.manifest, keep, len(local),
                               len(first), np.searchsorted(first, local, "right") - 1, skipped))
        shards.sort(key=lambda t: t[0])
        # one file per content digest: the first in shard order is read
        read: dict[str, str] = {}
        unique = []
        for t in shards:
            first_read = (read_before(read, t[2]["content_digest"], t[1], "ShardDataset")
                          if t[2]["record_count"] else None)
            if first_read is not None:
                self.skipped_duplicates.append((t[1], first_read))
                continue
            unique.append(t)
            self.skipped_engine_limit += t[7][0]
            self.skipped_turn_limit += t[7][1]
        shards = unique
        self.paths = [t[1] for t in shards]
        self.manifests = [t[2] for t in shards]
        self._keep = [t[3] for t in shards]  # per shard: None (every record) or the kept indices
        counts = [t[4] for t in shards]
        item_frames = []  # per shard: the global frame of each kept record
        n_frames = 0
        for t in shards:
            item_frames.append(n_frames + t[6])
            n_frames += t[5]
        self.offsets = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
        self.n_frames = n_frames
        self._item_frame = (np.concatenate(item_frames) if item_frames
                            else np.zeros(0, np.int64))
        self._cache = FrameCache(self.window)
        self.epoch = 0
        self._order = np.zeros(0, np.int64)  # set_epoch's
        self._readers: dict[str, Shard] = {}
        self._pid: int | None = None
        self.set_epoch(0)

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def set_epoch(self, epoch: int) -> None:
        """Draw the order for `epoch` (a pure function of the shards, seed,
        epoch and window; the module's doc says how)."""
        self.epoch = int(epoch)
        n = len(self)
        if self.shuffle:
            rng = np.random.Generator(np.random.PCG64([self.seed, self.epoch]))
            rank = np.empty(self.n_frames, np.int64)
            rank[rng.permutation(self.n_frames)] = np.arange(self.n_frames)
            win = rank[self._item_frame] // self.window
            # within a window, records in the order of a random permutation
            self._order = np.lexsort((rng.permutation(n), win))
        else:
            self._order = np.arange(n)

    def locate(self, i: int) -> tuple[str, int]:
        """(shard path, record index in it) of dataset item i."""
        j = int(self._order[i])
        k = int(np.searchsorted(self.offsets, j, side="right")) - 1
        local = j - int(self.offsets[k])
        keep = self._keep[k]
        return self.paths[k], local if keep is None else int(keep[local])

    def _reader(self, path: str) -> Shard:
        if self._pid != os.getpid():  # a forked worker: open our own
            self._readers = {}
            self._pid = os.getpid()
        r = self._readers.get(path)
        if r is None:
            r = self._readers[path] = open_shard(path, self._cache)
            r.frames()  # the frame index: a cached frame needs no block lookup
        return r

    def __getitem__(self, i: int) -> Any:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("ShardDataset: item %d out of range (%d records)" % (i, n))
        path, local = self.locate(i)
        rec = self._reader(path)[local]
        return self.transform(rec) if self.transform else rec

    def __getstate__(self) -> dict[str, Any]:  # picklable for spawn-based DataLoader workers
        state = dict(self.__dict__)
        state["_readers"] = {}
        state["_pid"] = None
        state["_cache"] = FrameCache(self.window)
        return state


def pad_batch(records: Sequence[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Stack record dicts into padded numpy arrays for a network batch.

    Tokens are padded to the longest T (token_type 0 = PAD, ``token_mask``
    marks real tokens), queries to the longest Q (``query_mask``; padded
    queries point at token 0 and have policy 0). Returns a dict of arrays:
    token_type [B,T], token_cat [B,T,C], token_cont [B,T,F], token_mask
    [B,T], query [B,Q,2], query_cont [B,Q,G], query_mask [B,Q], policy
    [B,Q], value_bins [B,21], forecast [B,4,5], forecast_mask [B,4].

    The reference in Python: the C batch reader (spirefleet.batch, what the
    trainer reads through) is tested against it, key by key, bit for bit.
    """
    b = len(records)
    t_max = max(r["inputs"]["token_type"].shape[0] for r in records)
    q_max = max(r["inputs"]["query"].shape[0] for r in records)
    r0 = records[0]["inputs"]
    c, f = r0["token_cat"].shape[1], r0["token_cont"].shape[1]
    g = r0["query_cont"].shape[1]
    out: dict[str, np.ndarray] = {
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
