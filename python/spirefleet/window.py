"""The trainer's data: which labels (the window), held in memory, split and
batched (docs/trainer.md, "Training from a config").

* ``find_shards(paths)`` lists shards newest first: files as given, a
  directory's ``*.shard`` files (recursively) ordered by their manifests'
  run id and job id, highest job first (never by a clock: the same shards
  give the same window and the same training, whenever they were written).
  A ``.tmp`` or ``.part`` file is never a shard; a damaged ``.shard`` is
  an error naming the file, and so is a shard found in a directory under
  another name than its
  canonical one (``<run>-job<NNNNNN>.shard`` of its manifest's run and
  job; the error names the file and the name expected).
  Shards without records (a gate job's pairs) are left out, and a shard
  found twice (the same content digest: a copy in a subdirectory, or the
  same file named twice) counts once; a second file with that content is
  skipped with a warning on stderr naming both files.
* ``select_window(shards, n)`` takes whole shards from the front until n
  labels are in.
* ``Records`` holds every record of the window as flat arrays (tokens and
  queries concatenated with offsets), so a batch is padded to its own
  longest position only: the pure-Python oracle of the trainer's reader,
  ``spirefleet.batch.WindowRecords`` (the C batch path).
* ``split_by_seed`` puts each game seed wholly in training or validation.
"""

import os
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from .contract import FORECAST_COLUMNS
from .facts import COUNTER_ENGINE_LIMIT, PERSIST
from .shard import (SHARD_SUFFIX, ShardError, check_canonical_name, load_quarantine, open_shard,
                    quarantined, read_before, tensor_to_numpy)

NCOLS = len(FORECAST_COLUMNS)
# Where the current value of each forecast column is in a position's tokens:
# PERSIST[name] = (token type, feature column, scale), generated from the
# tokenizer's header (facts.py).


class WindowError(Exception):
    """No usable shards, or a shard that cannot be read (names the file)."""


def _walk(d: str) -> list[str]:
    out = []
    for root, dirs, files in os.walk(d):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(SHARD_SUFFIX):
                out.append(os.path.join(root, f))
    return out


def shard_info(path: str) -> dict[str, Any]:
    """The manifest facts the window needs, or raises WindowError."""
    try:
        with open_shard(path) as s:
            m = s.manifest
            stats = m.get("stats") or {}
            limited = (stats.get("counters") or {}).get(COUNTER_ENGINE_LIMIT, 0)
            kept = len(s)
            if limited:
                kept = sum(1 for i in range(len(s)) if not s.record(i).outcome.engine_limit)
    except ShardError as e:
        raise WindowError(str(e)) from None
    return {"path": os.path.abspath(path), "digest": m["content_digest"], "run_id": m["run_id"],
            "job_id": int(m["job_id"]), "created_unix": int(m["created_unix"]),
            "model_sha256": m["model_sha256"], "config_digest": m["config_digest"],
            "records": int(m["record_count"]), "labels": int(kept),
            "gate": bool(m["gate_pairs"]), "worker_key_id": m["worker_key_id"]}


def find_shards(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
                ) -> list[dict[str, Any]]:
    """Shard infos, newest first (see the module doc)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    infos: list[dict[str, Any]] = []
    seen: dict[str, str] = {}  # content digest -> the file read for it
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            group = [shard_info(f) for f in _walk(p)]
            # shards a QUARANTINE list of their directory names stay out
            bad = {}
            for i in group:
                d = os.path.dirname(i["path"])
                if d not in bad:
                    bad[d] = load_quarantine(d)
            kept = [i for i in group
                    if not quarantined(bad[os.path.dirname(i["path"])], i["digest"],
                                       i["worker_key_id"])]
            if len(kept) != len(group):
                sys.stderr.write("%s: %d quarantined shard(s) skipped (QUARANTINE)\n"
                                 % (p, len(group) - len(kept)))
            group = kept
            for i in group:  # a directory holds a shard under its own name only
                try:
                    check_canonical_name(i["path"], i["run_id"], i["job_id"])
                except ShardError as e:
                    raise WindowError(str(e)) from None
            group.sort(key=lambda i: (i["run_id"], i["job_id"], i["digest"]), reverse=True)
        elif os.path.exists(p):
            group = [shard_info(p)]
        else:
            raise WindowError("%s: no such shard or directory" % p)
        for i in group:
            if i["gate"] or i["records"] == 0:
                continue
            if read_before(seen, i["digest"], i["path"], "window") is None:
                infos.append(i)
    return infos


def select_window(infos: Sequence[dict[str, Any]],
                  window_labels: int) -> list[dict[str, Any]]:
    """The front of `infos` (newest first) holding at least window_labels
    labels (all of them when there are fewer)."""
    out, n = [], 0
    for i in infos:
        if n >= window_labels:
            break
        out.append(i)
        n += i["labels"]
    return out


class Records:
    """Every kept record of some shards, as flat numpy arrays, decoded and
    batched in Python: the test oracle of spirefleet.batch.WindowRecords
    (the trainer's reader, the C batch path), which holds the same
    per-record arrays and gives the same batches. With
    ``tokenizer_version`` set, a shard whose labels another tokenizer wrote
    (its manifest's tokenizer_version) is a WindowError naming the file:
    its tokens mean other things to the network."""

    def __init__(self, infos: Sequence[dict[str, Any]],
                 tokenizer_version: int | None = None) -> None:
        tt, tc, tf, q, qc, pol = [], [], [], [], [], []
        nt, nq = [], []
        vb, fc, fm, won, seed, enc, qch, qse = [], [], [], [], [], [], [], []
        for info in infos:
            path = info["path"]
            try:
                s = open_shard(path)
            except ShardError as e:
                raise WindowError(str(e)) from None
            with s:
                if s.manifest["content_digest"] != info["digest"]:
                    raise WindowError("%s: content digest %s, expected %s (the shard changed)"
                                      % (path, s.manifest["content_digest"], info["digest"]))
                tv = int(s.manifest["tokenizer_version"])
                if tokenizer_version is not None and tv != tokenizer_version:
                    raise WindowError("%s: labels of tokenizer version %d; this network reads "
                                      "tokenizer version %d (labels written before the tokenizer "
                                      "changed cannot train it: leave them out of the window)"
                                      % (path, tv, tokenizer_version))
                for i in range(len(s)):
                    try:
                        r = s.record(i)
                    except ShardError as e:
                        raise WindowError(str(e)) from None
                    if r.outcome.engine_limit:
                        continue
                    inp = r.inputs
                    ty = tensor_to_numpy(inp.token_type)
                    tt.append(ty)
                    tc.append(tensor_to_numpy(inp.token_cat))
                    tf.append(tensor_to_numpy(inp.token_cont))
                    qq = tensor_to_numpy(inp.query)
                    q.append(qq)
                    qc.append(tensor_to_numpy(inp.query_cont))
                    pol.append(np.array(r.search.policy, np.float32))
                    nt.append(len(ty))
                    nq.append(len(qq))
                    vb.append(np.array(r.outcome.value_bins, np.float32))
                    fc.append(tensor_to_numpy(r.forecast.target))
                    fm.append(tensor_to_numpy(r.forecast.mask))
                    won.append(r.outcome.won)
                    seed.append(r.ids.game_seed)
                    enc.append(r.ids.encounter_id)
                    # the search's completed-Q of the move it chose (an
                    # auxiliary value target: docs/trainer.md); a decision
                    # with one legal action was not searched and has none
                    searched = bool(r.search.searched)
                    qch.append(r.search.completed_q[r.search.chosen] if searched else 0.0)
                    qse.append(searched)
        if not nt:
            raise WindowError("the window holds no labels")
        self.n = len(nt)
        self.tok_off = np.concatenate([[0], np.cumsum(nt)]).astype(np.int64)
        self.q_off = np.concatenate([[0], np.cumsum(nq)]).astype(np.int64)
        self.token_type = np.concatenate(tt).astype(np.uint8)
        self.token_cat = np.concatenate(tc).astype(np.uint16)
        self.token_cont = np.concatenate(tf).astype(np.float32)
        self.query = np.concatenate(q).astype(np.uint16)
        self.query_cont = np.concatenate(qc).astype(np.float32)
        self.policy = np.concatenate(pol).astype(np.float32)
        self.value_bins = np.stack(vb).astype(np.float32)
        self.forecast = np.stack(fc).astype(np.float32)
        self.forecast_mask = np.stack(fm).astype(np.uint8)
        self.won = np.array(won, np.float32)
        self.game_seed = np.array(seed, np.uint64)
        self.encounter_id = np.array(enc, np.int64)
        self.q_chosen = np.array(qch, np.float32)
        self.q_searched = np.array(qse, np.bool_)
        self.n_tokens = np.asarray(nt, np.int64)
        self.n_queries = np.asarray(nq, np.int64)
        self.persist = persistence_flat(self.token_type, self.token_cont, self.tok_off)
        # per record: the sum of p log p over its search policy's nonzero
        # entries (the policy loss's floor, train.baselines)
        self.policy_plogp = np.zeros(self.n, np.float64)
        for i in range(self.n):
            pi = self.policy[self.q_off[i]:self.q_off[i + 1]].astype(np.float64)
            self.policy_plogp[i] = float((pi[pi > 0] * np.log(pi[pi > 0])).sum())

    def __len__(self) -> int:
        return self.n

    def batch(self, idx: Sequence[int] | np.ndarray) -> dict[str, np.ndarray]:
        """Records `idx` as a padded batch (pad_batch's keys, plus won,
        encounter_id and persist), padded to their own longest T and Q."""
        idx = np.asarray(idx, np.int64)
        b = len(idx)
        nt, nq = self.n_tokens[idx], self.n_queries[idx]
        t_max, q_max = int(nt.max()), max(1, int(nq.max()))
        out: dict[str, np.ndarray] = {
            "token_type": np.zeros((b, t_max), np.uint8),
            "token_cat": np.zeros((b, t_max, self.token_cat.shape[1]), np.uint16),
            "token_cont": np.zeros((b, t_max, self.token_cont.shape[1]), np.float32),
            "token_mask": np.zeros((b, t_max), np.bool_),
            "query": np.zeros((b, q_max, 2), np.uint16),
            "query_cont": np.zeros((b, q_max, self.query_cont.shape[1]), np.float32),
            "query_mask": np.zeros((b, q_max), np.bool_),
            "policy": np.zeros((b, q_max), np.float32),
        }
        for k, i in enumerate(idx):
            t0, t1 = self.tok_off[i], self.tok_off[i + 1]
            q0, q1 = self.q_off[i], self.q_off[i + 1]
            t, q = t1 - t0, q1 - q0
            out["token_type"][k, :t] = self.token_type[t0:t1]
            out["token_cat"][k, :t] = self.token_cat[t0:t1]
            out["token_cont"][k, :t] = self.token_cont[t0:t1]
            out["token_mask"][k, :t] = True
            out["query"][k, :q] = self.query[q0:q1]
            out["query_cont"][k, :q] = self.query_cont[q0:q1]
            out["query_mask"][k, :q] = True
            out["policy"][k, :q] = self.policy[q0:q1]
        out["value_bins"] = self.value_bins[idx]
        out["forecast"] = self.forecast[idx]
        out["forecast_mask"] = self.forecast_mask[idx]
        out["won"] = self.won[idx]
        out["q_chosen"] = self.q_chosen[idx]
        out["q_searched"] = self.q_searched[idx]
        out["encounter_id"] = self.encounter_id[idx]
        out["persist"] = self.persist[idx]
        return out


def persistence(token_type: np.ndarray, token_cont: np.ndarray) -> np.ndarray:
    """The current value of each forecast column, read from a position's
    tokens (the forecast persistence baseline carries it forward)."""
    out = np.zeros(NCOLS, np.float64)
    for c, name in enumerate(FORECAST_COLUMNS):
        ty, col, scale = PERSIST[name]
        rows = np.nonzero(np.asarray(token_type) == ty)[0]
        if len(rows):
            out[c] = round(float(token_cont[rows[0], col]) * scale, 3)
    return out


def persistence_flat(token_type: np.ndarray, token_cont: np.ndarray,
                     tok_off: np.ndarray) -> np.ndarray:
    """persistence() of every position of flat token arrays (positions
    delimited by tok_off), as float32 [N, C]."""
    n = len(tok_off) - 1
    owner = np.repeat(np.arange(n), np.diff(tok_off))
    out = np.zeros((n, NCOLS), np.float64)
    for c, name in enumerate(FORECAST_COLUMNS):
        ty, col, scale = PERSIST[name]
        rows = np.nonzero(token_type == ty)[0]
        recs, first = np.unique(owner[rows], return_index=True)
        out[recs, c] = np.round(token_cont[rows[first], col].astype(np.float64) * scale, 3)
    return out.astype(np.float32)


def seed_hash(game_seed: np.ndarray, seed: int) -> np.ndarray:
    """A uniform number in [0, 1) per game seed (splitmix64 of the game seed
    and the training seed): the split does not depend on the shard order."""
    g = np.asarray(game_seed, np.uint64)
    with np.errstate(over="ignore"):
        h = g * np.uint64(0x9E3779B97F4A7C15) + np.uint64(seed) * np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(31)
        h = h * np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(29)
    return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def split_by_seed(records: Any, val_fraction: float,
                  seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train indices, validation indices): a game seed is in validation
    when its hash falls below val_fraction. With two or more game seeds,
    each side gets at least one (the seed of the lowest hash goes to
    validation, of the highest to training, when one side would be empty)."""
    u = seed_hash(records.game_seed, seed)
    val = u < val_fraction
    seeds = np.unique(records.game_seed)
    if len(seeds) >= 2:
        if not val.any():
            val = u == u.min()
        elif val.all():
            val = u != u.max()
    return np.nonzero(~val)[0].astype(np.int64), np.nonzero(val)[0].astype(np.int64)


__all__ = ["NCOLS", "Records", "WindowError", "find_shards", "persistence", "persistence_flat",
           "select_window", "shard_info", "split_by_seed"]
