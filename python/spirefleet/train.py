"""Train the spirefleet network on label shards (docs/trainer.md).

    python3 -m spirefleet.train CONFIG [--shards PATH ...] [--checkpoint DIR]
        [--metrics FILE] [--parent-sha256 HEX] [--out BUNDLE]
        [--device cpu|cuda] [--threads N] [--stop-after-steps N]
    python3 -m spirefleet.train --shards PATH ... --out BUNDLE
        [--arch tiny|base] [--steps N] [--batch B] [--lr LR] [--seed S]
        [--val-fraction F] [--weights v,p,f,w] [--checkpoint DIR] [--metrics FILE]

CONFIG is a fleet YAML file; its `train:` section (docs/operator.md) says
how to train, read with every default through `sf-fleet check --json`
(spirefleet.config): the defaults live in the C schema only. Without
CONFIG (the second form) the flags become a `train:` section checked the
same way.

* The window: shards newest first (--shards, listed newest first, a
  directory's shards newest first by manifest; default every sealed shard
  under <run.output_dir>/shards, the coordinator's verified store: not a
  worker's undelivered attempt in work/ nor a shard set aside in
  quarantined/ or rejected/), whole shards from the front until
  train.window_labels labels are in (spirefleet.window), read through the
  C batch reader (spirefleet.batch.WindowRecords): every batch the trainer
  steps or evaluates on is assembled in C.
* Split by game seed (a game's labels never straddle it), train.val_fraction
  of the seeds held out; batches from a permutation drawn by numpy's PCG64
  seeded with (train.seed, epoch), so step s always trains on the same
  records.
* Losses per head: value cross-entropy on the 21-bin target, policy
  cross-entropy against pi' over the legal queries, forecast squared error
  standardised per column by the training set's mean and deviation (masked
  where the fight ended sooner), P(win) binary cross-entropy; the total is
  their weighted sum (train.weight_*). AdamW, linear warm-up then cosine
  decay, gradient-norm clipping.
* Checkpoints (model, optimizer, RNG, step, the window, the split's
  statistics, the canary) every train.checkpoint_every steps, written
  atomically; rerunning the same command resumes from the latest one and
  ends with the same weights, bit for bit, as a run never interrupted.
  `final.pt` is the end; a rerun after it only prints the result again.
* train.keep best (the default): final.pt holds the weights, among the
  checkpoints and the last step, with the lowest weighted validation loss
  (the same weighted sum as the training loss), so a small window that
  starts to overfit exports its best network, not its last; `last` keeps
  the last step's. The checkpoints carry the best so far, so a resumed run
  keeps the same one.
* Metrics as JSON lines (--metrics, default <checkpoint>/metrics.jsonl): a
  line per step, per epoch, per validation and a final one with the
  validation losses beside the baselines; a progress bar on stderr when it
  is a terminal. One JSON line on stdout at the end.
* Export: python3 -m spirefleet.export (or --out here).
"""

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from . import model as M  # noqa: E402
from .batch import WindowRecords  # noqa: E402
from .config import ConfigError, load_config, load_config_text  # noqa: E402
from .contract import FORECAST_COLUMNS, VALUE_SUPPORT  # noqa: E402
from .facts import (EXPORT_RESULT_SHA256, LOOP_ROLLOUT, TRAIN_RESULT_BASELINE,  # noqa: E402
                    TRAIN_RESULT_CHECKPOINT, TRAIN_RESULT_LABELS, TRAIN_RESULT_TRAIN_RECORDS,
                    TRAIN_RESULT_VAL, TRAIN_RESULT_VAL_SEEDS)
from .window import WindowError, find_shards, select_window, split_by_seed  # noqa: E402

CHECKPOINT_FORMAT = "spirefleet-train-checkpoint"
CHECKPOINT_VERSION = 1
FINAL = "final.pt"
KEEP_CHECKPOINTS = 2
TRAIN_SAMPLE = 4096      # training records the final report evaluates
EVAL_BATCH = 256
ENCOUNTER_PRIOR = 1.0    # pseudo-labels of the overall marginal per encounter
HEADS = ("value", "policy", "forecast", "win")
EXIT_STOPPED = 3


class TrainError(Exception):
    """A problem the trainer reports and exits 1 on (names the file)."""


class Stopped(Exception):
    """--stop-after-steps reached (exit 3, as if the process had died)."""


# ---------------------------------------------------------------------------
# Tensors, losses, baselines
# ---------------------------------------------------------------------------


# to_torch's tensors: the model's key for each batch field, and the dtype
# the fields that need one are converted to first (the rest keep their own)
TORCH_KEYS = {"token_type": "type", "token_cat": "cat", "token_cont": "cont",
              "token_mask": "mask", "query": "query", "query_cont": "qcont",
              "query_mask": "qmask", "policy": "policy", "value_bins": "value_bins",
              "forecast": "forecast", "forecast_mask": "forecast_mask", "won": "won",
              "q_chosen": "q_chosen", "q_searched": "q_searched"}
TORCH_DTYPES = {"token_type": np.int64, "token_cat": np.int64, "query": np.int64,
                "forecast_mask": np.float32}


def to_torch(b: dict[str, np.ndarray], device: torch.device) -> dict[str, torch.Tensor]:
    out = {}
    for field, key in TORCH_KEYS.items():
        v = b[field]
        if field in TORCH_DTYPES:
            v = v.astype(TORCH_DTYPES[field])
        out[key] = torch.from_numpy(v).to(device)
    return out


class AuxQ(torch.nn.Module):
    """A training-only head: the search's completed-Q of the chosen move,
    read from the trunk's pooled position (a value in [0, 1]). It shapes the
    trunk towards what ranks sibling moves; it is not part of the bundle
    (docs/trainer.md "Auxiliary targets")."""

    def __init__(self, d: int, hidden: int) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(d, hidden)
        self.out = torch.nn.Linear(hidden, 1)

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.out(F.gelu(self.fc(pooled))).squeeze(-1))


# the supports of the 21 value bins, as a tensor (the label contract's)
_SUPPORT = torch.tensor(VALUE_SUPPORT, dtype=torch.float32)


def surprise_weights(value_logits: torch.Tensor, q_chosen: torch.Tensor, strength: float,
                     searched: torch.Tensor | None = None) -> torch.Tensor | None:
    """Per-record loss weights: (1 - strength) + strength * s / mean(s) with
    s = |E[v] - Q(chosen)|, the value head's surprise at the search's own
    verdict (detached), the mean over searched records; a record the search
    did not search (`searched` False: one legal action, no Q) weighs 1.
    strength 0: every record alike (None)."""
    if strength <= 0:
        return None
    with torch.no_grad():
        ev = (torch.softmax(value_logits, -1) * _SUPPORT.to(value_logits.device)).sum(-1)
        s = (ev - q_chosen).abs()
        if searched is None:
            searched = torch.ones_like(s, dtype=torch.bool)
        mean = s[searched].mean() if bool(searched.any()) else s.new_tensor(1.0)
        w = (1.0 - strength) + strength * s / mean.clamp(min=1e-6)
        return torch.where(searched, w, torch.ones_like(w))


def losses(net: torch.nn.Module, t: dict[str, torch.Tensor], fc_mean: torch.Tensor,
           fc_std: torch.Tensor, aux: AuxQ | None = None,
           surprise: float = 0.0) -> dict[str, torch.Tensor]:
    """Per-head mean losses of a batch (dict of scalar tensors); with `aux`
    (an AuxQ) also "q", its squared error on the chosen move's Q; with
    surprise > 0 the value and policy losses weigh each record by
    surprise_weights()."""
    out = net(t["type"], t["cat"], t["cont"], t["mask"], t["query"], t["qcont"], t["qmask"])
    w = surprise_weights(out["value_logits"], t["q_chosen"], surprise, t["q_searched"])
    value_r = -(t["value_bins"] * F.log_softmax(out["value_logits"], -1)).sum(-1)
    value = value_r.mean() if w is None else (w * value_r).mean()
    win = F.binary_cross_entropy_with_logits(out["win_logit"], t["won"])
    logits = out["policy"].masked_fill(~t["qmask"], float("-inf"))
    logp = F.log_softmax(logits, -1).masked_fill(~t["qmask"], 0.0)
    policy_r = -(t["policy"] * logp).sum(-1)
    policy = policy_r.mean() if w is None else (w * policy_r).mean()
    z_pred = (out["forecast"] - fc_mean) / fc_std
    z_true = (t["forecast"] - fc_mean) / fc_std
    m = t["forecast_mask"].unsqueeze(-1)
    denom = (m.sum() * len(FORECAST_COLUMNS)).clamp(min=1.0)
    forecast = (((z_pred - z_true) ** 2) * m).sum() / denom
    res = {"value": value, "policy": policy, "forecast": forecast, "win": win}
    if aux is not None:
        m = t["q_searched"].float()  # an unsearched decision has no Q to learn
        res["q"] = (((aux(out["pooled"]) - t["q_chosen"]) ** 2) * m).sum() / m.sum().clamp(min=1.0)
    return res


def forecast_stats(rec: Any, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and deviation of the realised forecasts of records
    idx, shaped [1, 1, C] (float32)."""
    f = rec.forecast[idx]
    m = rec.forecast_mask[idx].astype(bool)
    rows = f[m]
    c = len(FORECAST_COLUMNS)
    if len(rows) == 0:
        return np.zeros((1, 1, c), np.float32), np.ones((1, 1, c), np.float32)
    mean = rows.astype(np.float64).mean(0).reshape(1, 1, -1)
    std = np.maximum(rows.astype(np.float64).std(0), 1e-3).reshape(1, 1, -1)
    return mean.astype(np.float32), std.astype(np.float32)


def baselines(rec: Any, train_idx: np.ndarray, idx: np.ndarray, fc_mean: np.ndarray,
              fc_std: np.ndarray) -> dict[str, float]:
    """Losses, on records idx, of predictors that know nothing of the
    position beyond what they name, in the units of the net's losses:

    value            the training set's marginal value distribution (with
                     one pseudo-label spread evenly over the bins, so a bin
                     it never saw is not infinitely surprising)
    value_encounter  the marginal of the position's encounter in the training
                     set (with ENCOUNTER_PRIOR pseudo-labels of the overall
                     marginal, so an encounter it never saw gets that)
    policy           the uniform distribution over the legal queries
    forecast         persistence: every horizon's value is the current one
                     (read from the position's tokens)
    forecast_mean    the training set's column means
    win              the training set's win rate

    and the floors under the value and policy losses, the targets' own
    entropies (value_target_entropy, policy_target_entropy): a perfect
    predictor's cross-entropy.
    """
    tv = rec.value_bins[train_idx].astype(np.float64)
    marg = (tv.sum(0) + 1.0 / tv.shape[1]) / (len(tv) + 1.0)
    vb = rec.value_bins[idx].astype(np.float64)
    value = float(-(vb * np.log(marg)).sum(1).mean())
    enc_tr, enc = rec.encounter_id[train_idx], rec.encounter_id[idx]
    per = np.empty_like(vb)
    for e in np.unique(enc):
        sel = enc_tr == e
        p = (tv[sel].sum(0) + ENCOUNTER_PRIOR * marg) / (sel.sum() + ENCOUNTER_PRIOR)
        per[enc == e] = p / p.sum()
    value_enc = float(-(vb * np.log(per + 1e-12)).sum(1).mean())
    policy = float(np.log(np.maximum(rec.n_queries[idx], 1)).mean())
    mean = fc_mean.astype(np.float64).reshape(1, 1, -1)
    std = fc_std.astype(np.float64).reshape(1, 1, -1)
    target = rec.forecast[idx].astype(np.float64)
    m = rec.forecast_mask[idx][..., None].astype(np.float64)
    denom = max(1.0, m.sum() * len(FORECAST_COLUMNS))
    pers = rec.persist[idx].astype(np.float64)[:, None, :]
    forecast = float((((pers - target) / std) ** 2 * m).sum() / denom)
    forecast_mean = float((((target - mean) / std) ** 2 * m).sum() / denom)
    p = min(max(float(rec.won[train_idx].mean()), 1e-6), 1 - 1e-6)
    y = rec.won[idx].astype(np.float64)
    win = float(-(y * math.log(p) + (1 - y) * math.log(1 - p)).mean())
    # The floors no predictor goes below: the targets' own entropies.
    value_floor = float(-(vb * np.log(np.where(vb > 0, vb, 1.0))).sum(1).mean())
    pol_floor = 0.0
    for i in idx:  # each record's sum of p log p (the readers' policy_plogp)
        pol_floor -= float(rec.policy_plogp[i])
    return {"value": value, "value_encounter": value_enc, "policy": policy,
            "forecast": forecast, "forecast_mean": forecast_mean, "win": win,
            "value_target_entropy": value_floor,
            "policy_target_entropy": pol_floor / max(1, len(idx))}


def evaluate_losses(net: torch.nn.Module, rec: Any, idx: np.ndarray, fc_mean: np.ndarray,
                    fc_std: np.ndarray, device: torch.device) -> dict[str, float]:
    """Mean per-head losses of the net on records idx (eval mode)."""
    was = net.training
    net.eval()
    sums, n = dict.fromkeys(HEADS, 0.0), 0
    fm, fs = torch.from_numpy(fc_mean).to(device), torch.from_numpy(fc_std).to(device)
    with torch.no_grad():
        for s in range(0, len(idx), EVAL_BATCH):
            part = idx[s:s + EVAL_BATCH]
            ls = losses(net, to_torch(rec.batch(part), device), fm, fs)
            for k in HEADS:
                sums[k] += float(ls[k]) * len(part)
            n += len(part)
    net.train(was)
    return {k: v / max(1, n) for k, v in sums.items()}


def lr_at(step: int, steps: int, lr: float, warmup: int) -> float:
    """Linear warm-up over `warmup` steps, then cosine decay to 0 at `steps`."""
    if step < warmup:
        return lr * (step + 1) / warmup
    p = (step - warmup) / max(1, steps - warmup)
    return lr * 0.5 * (1.0 + math.cos(math.pi * min(1.0, p)))


def positions_of(rec: Any, rows: np.ndarray) -> dict[str, np.ndarray]:
    """Records `rows` as a positions dict (the bundle canary's layout),
    read as one batch of the window's reader."""
    pos = M.empty_positions(len(rows))
    if len(rows) == 0:
        return pos
    b = rec.batch(rows)
    for k, i in enumerate(rows):
        t, q = int(rec.n_tokens[i]), int(rec.n_queries[i])
        pos["n_tokens"][k], pos["n_queries"][k] = t, q
        pos["type"][k, :t] = b["token_type"][k, :t]
        pos["cat"][k, :t] = b["token_cat"][k, :t]
        pos["cont"][k, :t] = b["token_cont"][k, :t]
        pos["query"][k, :q] = b["query"][k, :q]
        pos["qcont"][k, :q] = b["query_cont"][k, :q]
    return pos


def init_net(arch: str, seed: int, fc_mean: np.ndarray, fc_std: np.ndarray) -> M.SpireNet:
    """A fresh network (torch's init seeded with `seed`) whose forecast head
    starts at the training means with the columns' deviations as scale."""
    torch.manual_seed(seed)
    net = M.SpireNet(M.ARCHS[arch])
    mean = torch.from_numpy(np.broadcast_to(fc_mean.reshape(1, -1),
                                            (M.HORIZONS, len(FORECAST_COLUMNS))).reshape(-1).copy())
    std = torch.from_numpy(np.broadcast_to(fc_std.reshape(1, -1),
                                           (M.HORIZONS, len(FORECAST_COLUMNS))).reshape(-1).copy())
    with torch.no_grad():
        net.forecast.out.weight.mul_(std[:, None])
        net.forecast.out.bias.mul_(std).add_(mean)
    return net


# ---------------------------------------------------------------------------
# Checkpoints and metrics
# ---------------------------------------------------------------------------


def _fsync_dir(d: str) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def save_atomic(obj: Any, path: str) -> None:
    """torch.save to a temporary file beside `path`, fsync, rename."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(os.path.abspath(path)))


def load_checkpoint(path: str) -> dict[str, Any]:
    """A checkpoint dict, or raises TrainError naming the file."""
    try:
        ck = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as e:  # pickle, zip and I/O errors alike
        raise TrainError("%s: not a readable checkpoint (%s)" % (path, e)) from None
    if not isinstance(ck, dict) or ck.get("format") != CHECKPOINT_FORMAT:
        raise TrainError("%s: not a spirefleet training checkpoint" % path)
    if ck.get("version") != CHECKPOINT_VERSION:
        raise TrainError("%s: checkpoint version %s; this trainer reads %d"
                         % (path, ck.get("version"), CHECKPOINT_VERSION))
    return ck


def _ckpt_name(step: int) -> str:
    return "ckpt-%08d.pt" % step


def checkpoints_in(d: str) -> list[tuple[int, str]]:
    """(step, path) of the step checkpoints in d, oldest first."""
    out = []
    if os.path.isdir(d):
        for f in os.listdir(d):
            if f.startswith("ckpt-") and f.endswith(".pt") and f[5:-3].isdigit():
                out.append((int(f[5:-3]), os.path.join(d, f)))
    return sorted(out)


class Metrics:
    """JSON lines appended to a file (flushed per line)."""

    def __init__(self, path: str, resume_step: int | None = None) -> None:
        self.path = path
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        if resume_step is not None and os.path.exists(path):
            # Lines past the checkpoint are redone: drop them, so the file
            # reads as if the run had never stopped.
            kept = []
            with open(path) as f:
                for line in f:
                    try:
                        d_ = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut short by the kill
                    if d_.get("step", -1) < resume_step:
                        kept.append(line if line.endswith("\n") else line + "\n")
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                f.writelines(kept)
            os.replace(tmp, path)
        elif resume_step is None and os.path.exists(path):
            os.unlink(path)  # a fresh run starts a fresh file
        self.f = open(path, "a")

    def write(self, d: dict[str, Any]) -> None:
        self.f.write(json.dumps(d, sort_keys=True) + "\n")
        self.f.flush()

    def close(self) -> None:
        self.f.close()


class Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, total: int, start: int) -> None:
        self.on = sys.stderr.isatty()
        self.total, self.start, self.t0, self.last = total, start, time.time(), 0.0

    def update(self, step: int, loss: float) -> None:
        if not self.on:
            return
        now = time.time()
        if now - self.last < 0.2 and step + 1 < self.total:
            return
        self.last = now
        done = step + 1
        rate = (done - self.start) / max(1e-9, now - self.t0)
        eta = (self.total - done) / rate if rate > 0 else 0
        width = 30
        fill = int(width * done / self.total)
        sys.stderr.write("\r[%s%s] %d/%d loss %.4f %.1f steps/s ETA %dm%02ds "
                         % ("#" * fill, "." * (width - fill), done, self.total, loss, rate,
                            eta // 60, eta % 60))
        sys.stderr.flush()

    def close(self) -> None:
        if self.on:
            sys.stderr.write("\n")


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------


def _shard_desc(infos: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: i[k] for k in ("path", "digest", "run_id", "job_id", "created_unix",
                               "model_sha256", "config_digest", "records", "labels")}
            for i in infos]


def _result(ck: dict[str, Any], path: str) -> dict[str, Any]:
    w = ck["window"]
    return {TRAIN_RESULT_CHECKPOINT: os.path.abspath(path), TRAIN_RESULT_VAL: ck["val"],
            TRAIN_RESULT_BASELINE: ck["baseline"],
            "train": ck["train_eval"], "train_baseline": ck["train_baseline"],
            TRAIN_RESULT_TRAIN_RECORDS: w["train_records"], "val_records": w["val_records"],
            "shards": [s["digest"] for s in w["shards"]], TRAIN_RESULT_LABELS: w["labels"],
            TRAIN_RESULT_VAL_SEEDS: w.get("val_seeds", []),
            "steps": ck["step"], "kept_step": ck.get("kept_step", ck["step"]),
            "seconds": round(ck["seconds"], 3)}


def _same_train_config(ck: dict[str, Any], train_cfg: dict[str, Any], path: str) -> None:
    old = ck["train_config"]
    for k in sorted(set(old) | set(train_cfg)):
        if old.get(k) != train_cfg.get(k):
            raise TrainError("%s: made with train.%s = %s; the config says %s (train into "
                             "another --checkpoint directory, or remove this one)"
                             % (path, k, json.dumps(old.get(k)), json.dumps(train_cfg.get(k))))


def _latest_checkpoint(ckdir: str) -> tuple[dict[str, Any] | None, str | None]:
    """The newest readable step checkpoint in ckdir and its path (None,
    None without one), after removing a save the process died in."""
    for f in os.listdir(ckdir):
        if ".pt.tmp." in f:
            os.unlink(os.path.join(ckdir, f))
    for _, path in reversed(checkpoints_in(ckdir)):
        try:
            return load_checkpoint(path), path
        except TrainError as e:
            print("spirefleet.train: %s; trying an older checkpoint" % e, file=sys.stderr)
    return None, None


def _choose_window(run: dict[str, Any], shards: Sequence[str] | None,
                   window_labels: int) -> list[dict[str, Any]]:
    """The window of a fresh run: the newest shards of `shards` (default
    the coordinator's store) holding window_labels labels."""
    # the coordinator's store only: output_dir also holds workers'
    # undelivered attempts (work/, never verified) and shards set aside
    # (quarantined/, rejected/)
    sources = list(shards) if shards else [os.path.join(run["output_dir"], "shards")]
    try:
        found = find_shards(sources)
    except WindowError as e:
        raise TrainError(str(e)) from None
    if not found:
        raise TrainError("no sealed shards with labels in %s" % ", ".join(sources))
    return _shard_desc(select_window(found, window_labels))


class _Data:
    """The window's records, their split by game seed and the training
    set's forecast statistics."""

    def __init__(self, window: list[dict[str, Any]], tc: dict[str, Any],
                 reader: Callable[..., Any]) -> None:
        self.window = window
        try:
            self.rec = reader(window, tokenizer_version=M.FEAT_VERSION)
        except WindowError as e:
            raise TrainError(str(e)) from None
        rec = self.rec
        self.tr_idx, self.va_idx = split_by_seed(rec, tc["val_fraction"], tc["seed"])
        if len(self.tr_idx) == 0 or len(self.va_idx) == 0:
            n_seeds = len(np.unique(rec.game_seed))
            raise TrainError("the window (%d labels of %d game seed%s) cannot be split into "
                             "training and validation: it needs two game seeds at least"
                             % (len(rec), n_seeds, "" if n_seeds == 1 else "s"))
        self.fc_mean, self.fc_std = forecast_stats(rec, self.tr_idx)
        n_tr = len(self.tr_idx)
        self.desc = {"shards": window, "labels": int(len(rec)), "train_records": int(n_tr),
                     "val_records": int(len(self.va_idx)), "split": "game seed",
                     "train_sample": min(TRAIN_SAMPLE, n_tr),
                     # the held-out games (a sibling-ranking measure reads only these)
                     "val_seeds": sorted(int(s) for s in np.unique(rec.game_seed[self.va_idx]))}


class _Training:
    """One training run's state: the network (and the auxiliary Q head),
    the optimizer, the canary, the best weights so far, and the steps,
    checkpoints and final report that advance it (train())."""

    def __init__(self, cfg: dict[str, Any], digest: str, data: _Data, ckdir: str,
                 parent_sha256: str | None, device: str | None) -> None:
        tc = self.tc = dict(cfg["train"])
        self.run_name, self.digest = cfg["run"]["name"], digest
        self.data, self.ckdir, self.parent_sha256 = data, ckdir, parent_sha256
        torch.use_deterministic_algorithms(True, warn_only=True)
        self.dev = dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.net = init_net(tc["arch"], tc["seed"], data.fc_mean, data.fc_std).to(dev)
        self.net.train()
        arch = M.ARCHS[tc["arch"]]
        self.aux = AuxQ(arch["d_model"], arch["d_value"]).to(dev) if tc["weight_q"] > 0 else None
        self.params = list(self.net.parameters()) + (
            list(self.aux.parameters()) if self.aux is not None else [])
        self.opt = torch.optim.AdamW(self.params, lr=tc["lr"], weight_decay=tc["weight_decay"])
        va_idx = data.va_idx
        k = min(tc["canary_positions"], len(va_idx))
        rng = np.random.Generator(np.random.PCG64([tc["seed"], 3]))
        self.canary_rows = np.sort(va_idx[rng.choice(len(va_idx), size=k, replace=False)])
        self.canary = positions_of(data.rec, self.canary_rows)
        self.start, self.seconds = 0, 0.0
        self.epoch_acc: dict[str, Any] | None = None
        self.best: dict[str, Any] | None = None
        self.per_epoch = max(1, len(data.tr_idx) // tc["batch"])
        self.fm = torch.from_numpy(data.fc_mean).to(dev)
        self.fs = torch.from_numpy(data.fc_std).to(dev)
        self.t0 = time.time()

    def restore(self, resume: dict[str, Any], resume_path: str) -> None:
        """Continue from a step checkpoint (weights, optimizer, RNG, step)."""
        self.best = resume.get("best")
        self.net.load_state_dict(resume["model"])
        if self.aux is not None:
            self.aux.load_state_dict(resume["aux"])
        self.opt.load_state_dict(resume["optimizer"])
        torch.set_rng_state(resume["rng"]["torch"])
        self.start, self.seconds = resume["step"], resume["seconds"]
        self.epoch_acc = resume["epoch_acc"]
        threads = torch.get_num_threads()
        if resume.get("device") != str(self.dev) or resume.get("threads") != threads:
            print("spirefleet.train: note: %s was written on %s with %s threads, this run uses "
                  "%s with %d; the weights may differ in the last bits from an uninterrupted run"
                  % (resume_path, resume.get("device"), resume.get("threads"), self.dev,
                     torch.get_num_threads()), file=sys.stderr)

    def weighted(self, v: dict[str, Any]) -> Any:
        """The weighted sum of per-head losses (train.weight_*)."""
        tc = self.tc
        return (tc["weight_value"] * v["value"] + tc["weight_policy"] * v["policy"]
                + tc["weight_forecast"] * v["forecast"] + tc["weight_win"] * v["win"])

    def weights(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().cpu().clone() for k, v in self.net.state_dict().items()}

    def state(self, step: int, val: dict[str, float] | None = None) -> dict[str, Any]:
        """A checkpoint of the run after `step` steps."""
        d = self.data
        return {"val": val, "best": self.best, "format": CHECKPOINT_FORMAT,
                "version": CHECKPOINT_VERSION, "step": step,
                "model": self.weights(),
                "aux": self.aux.state_dict() if self.aux is not None else None,
                "optimizer": self.opt.state_dict(), "rng": {"torch": torch.get_rng_state()},
                "train_config": self.tc, "run": self.run_name, "config_digest": self.digest,
                "parent_sha256": self.parent_sha256 or LOOP_ROLLOUT, "arch": self.tc["arch"],
                "window": d.desc, "fc_mean": d.fc_mean, "fc_std": d.fc_std,
                "canary": self.canary, "canary_rows": self.canary_rows,
                "epoch_acc": self.epoch_acc, "device": str(self.dev),
                "threads": torch.get_num_threads(),
                "seconds": self.seconds + (time.time() - self.t0), "torch": torch.__version__}

    def evaluate(self, idx: np.ndarray) -> dict[str, float]:
        d = self.data
        return evaluate_losses(self.net, d.rec, idx, d.fc_mean, d.fc_std, self.dev)

    def step(self, step: int, order: np.ndarray) -> dict[str, Any]:
        """One optimizer step on the records of `step`'s place in the
        epoch's permutation `order`; returns its metrics line."""
        tc, d = self.tc, self.data
        epoch, pos = step // self.per_epoch, (step % self.per_epoch) * tc["batch"]
        idx = d.tr_idx[order[pos:pos + tc["batch"]]]
        lr = lr_at(step, tc["steps"], tc["lr"], tc["warmup"])
        for g in self.opt.param_groups:
            g["lr"] = lr
        ls = losses(self.net, to_torch(d.rec.batch(idx), self.dev), self.fm, self.fs, self.aux,
                    tc["surprise"])
        total = self.weighted(ls) + (tc["weight_q"] * ls["q"] if self.aux is not None else 0.0)
        self.opt.zero_grad(set_to_none=True)
        total.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(
            self.params, tc["clip"] if tc["clip"] > 0 else float("inf"))
        self.opt.step()
        vals = {k: float(v) for k, v in ls.items()}
        line = {"kind": "step", "step": step, "epoch": epoch, "lr": lr,
                "loss": float(total), "grad_norm": float(gnorm),
                "seconds": round(self.seconds + time.time() - self.t0, 3)}
        line.update({"train_" + k: v for k, v in vals.items()})
        return line

    def end_of_epoch(self, step: int, line: dict[str, Any], metrics: Metrics) -> None:
        """Add the step's losses to its epoch's; the epoch's line after its
        last step."""
        epoch = line["epoch"]
        if self.epoch_acc is None or self.epoch_acc["epoch"] != epoch:
            self.epoch_acc = {"epoch": epoch, "n": 0, **dict.fromkeys(HEADS, 0.0)}
        acc = self.epoch_acc
        acc["n"] += 1
        for k in HEADS:
            acc[k] += line["train_" + k]
        if (step + 1) % self.per_epoch == 0:
            metrics.write({"kind": "epoch", "step": step, "epoch": epoch, "steps": acc["n"],
                           **{"train_" + k: acc[k] / acc["n"] for k in HEADS}})

    def checkpoint(self, step: int, metrics: Metrics) -> None:
        """Validate, remember the best weights, write a step checkpoint and
        drop all but the newest KEEP_CHECKPOINTS."""
        val = self.evaluate(self.data.va_idx)
        if self.best is None or self.weighted(val) < self.best["loss"]:
            self.best = {"step": step + 1, "loss": self.weighted(val), "model": self.weights()}
        metrics.write({"kind": "val", "step": step, "val_loss": self.weighted(val),
                       **{"val_" + k: v for k, v in val.items()}})
        save_atomic(self.state(step + 1, val), os.path.join(self.ckdir, _ckpt_name(step + 1)))
        for _, old in checkpoints_in(self.ckdir)[:-KEEP_CHECKPOINTS]:
            os.unlink(old)

    def run_steps(self, metrics: Metrics, stop_after: int | None,
                  log: Callable[[dict[str, Any]], None] | None) -> None:
        """Steps from the start (or the resumed step) to train.steps."""
        tc, n_tr = self.tc, len(self.data.tr_idx)
        steps, every = tc["steps"], tc["checkpoint_every"]
        progress = Progress(steps, self.start)
        order_epoch, order = -1, np.zeros(0, np.int64)
        try:
            for step in range(self.start, steps):
                epoch = step // self.per_epoch
                if epoch != order_epoch:
                    order = np.random.Generator(
                        np.random.PCG64([tc["seed"], epoch])).permutation(n_tr)
                    order_epoch = epoch
                line = self.step(step, order)
                metrics.write(line)
                if log:
                    log(line)
                self.end_of_epoch(step, line, metrics)
                progress.update(step, line["loss"])
                if every and (step + 1) % every == 0 and step + 1 < steps:
                    self.checkpoint(step, metrics)
                if stop_after is not None and step + 1 >= stop_after and step + 1 < steps:
                    raise Stopped("stopped after step %d of %d (--stop-after-steps)"
                                  % (step + 1, steps))
        finally:
            progress.close()
            metrics.close()

    def finish(self, final_path: str, metrics_path: str) -> dict[str, Any]:
        """The kept weights (train.keep), their losses beside the baselines
        on validation and a training sample, final.pt and the final
        metrics line; removes the step checkpoints."""
        tc, d = self.tc, self.data
        steps, n_tr = tc["steps"], len(d.tr_idx)
        val = self.evaluate(d.va_idx)
        last_loss, kept = self.weighted(val), steps
        if tc["keep"] == "best" and self.best is not None and self.best["loss"] < last_loss:
            self.net.load_state_dict(self.best["model"])
            kept = self.best["step"]
            val = self.evaluate(d.va_idx)
        base = baselines(d.rec, d.tr_idx, d.va_idx, d.fc_mean, d.fc_std)
        if n_tr > TRAIN_SAMPLE:
            rng = np.random.Generator(np.random.PCG64([tc["seed"], 4]))
            sample = np.sort(d.tr_idx[rng.choice(n_tr, size=TRAIN_SAMPLE, replace=False)])
        else:
            sample = d.tr_idx
        tr_eval = self.evaluate(sample)
        tr_base = baselines(d.rec, d.tr_idx, sample, d.fc_mean, d.fc_std)
        ck = self.state(steps)
        ck.update({"final": True, "val": val, "baseline": base, "train_eval": tr_eval,
                   "train_baseline": tr_base, "kept_step": kept, "best": None})
        save_atomic(ck, final_path)
        with open(metrics_path, "a") as f:
            f.write(json.dumps({"kind": "final", "step": steps,
                                **{"val_" + k: v for k, v in val.items()},
                                **{"baseline_" + k: v for k, v in base.items()},
                                **{"train_" + k: v for k, v in tr_eval.items()},
                                **{"train_baseline_" + k: v for k, v in tr_base.items()},
                                "train_records": n_tr, "val_records": int(len(d.va_idx)),
                                "labels": d.desc["labels"], "kept_step": kept,
                                "val_loss": self.weighted(val), "val_loss_last_step": last_loss,
                                "seconds": round(ck["seconds"], 3)}, sort_keys=True) + "\n")
        for _, old in checkpoints_in(self.ckdir):
            os.unlink(old)
        return _result(ck, final_path)


def train(cfg: dict[str, Any], digest: str, shards: Sequence[str] | None = None,
          checkpoint_dir: str | None = None, metrics_path: str | None = None,
          parent_sha256: str | None = None, device: str | None = None,
          stop_after: int | None = None, log: Callable[[dict[str, Any]], None] | None = None,
          reader: Callable[..., Any] = WindowRecords) -> dict[str, Any]:
    """Train as `cfg` (the effective config dict, `sf-fleet check --json`)
    says; returns the final result dict (see main()). Resumes from the
    newest checkpoint in checkpoint_dir. `reader` reads the window
    (spirefleet.batch.WindowRecords, the C batch path; tests pass the
    pure-Python oracle window.Records to show both train alike)."""
    tc = dict(cfg["train"])
    run = cfg["run"]
    ckdir = checkpoint_dir or os.path.join(run["output_dir"], "train")
    os.makedirs(ckdir, exist_ok=True)
    final_path = os.path.join(ckdir, FINAL)
    if os.path.exists(final_path):  # done: print the result again
        ck = load_checkpoint(final_path)
        _same_train_config(ck, tc, final_path)
        return _result(ck, final_path)

    resume, resume_path = _latest_checkpoint(ckdir)
    if resume is not None and resume_path is not None:
        _same_train_config(resume, tc, resume_path)
        window = resume["window"]["shards"]
        if shards:
            print("spirefleet.train: resuming %s on the window it records (%d shards); "
                  "--shards is not read" % (resume_path, len(window)), file=sys.stderr)
        if parent_sha256 is None:
            parent_sha256 = resume.get("parent_sha256")
    else:
        window = _choose_window(run, shards, tc["window_labels"])
    data = _Data(window, tc, reader)
    run_ = _Training(cfg, digest, data, ckdir, parent_sha256, device)
    if resume is not None and resume_path is not None:
        run_.restore(resume, resume_path)
    metrics = Metrics(metrics_path or os.path.join(ckdir, "metrics.jsonl"),
                      run_.start if resume is not None else None)
    if resume is not None and resume_path is not None:
        metrics.write({"kind": "resume", "step": run_.start,
                       "from": os.path.basename(resume_path)})
    else:
        metrics.write({"kind": "start", "step": 0, "labels": data.desc["labels"],
                       "train_records": len(data.tr_idx), "val_records": len(data.va_idx),
                       "shards": len(window), "arch": tc["arch"], "steps": tc["steps"],
                       "device": str(run_.dev)})
    run_.t0 = time.time()
    run_.run_steps(metrics, stop_after, log)
    return run_.finish(final_path, metrics.path)


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------

_LEGACY = (("arch", "arch"), ("steps", "steps"), ("batch", "batch"), ("lr", "lr"),
           ("seed", "seed"), ("val_fraction", "val_fraction"))


def _legacy_config(a: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """The flags of the config-less form as a config, checked by sf-fleet."""
    lines = ["run: {name: train}", "seeds: {count: 1}", "train:"]
    for flag, key in _LEGACY:
        v = getattr(a, flag)
        if v is not None:
            lines.append("  %s: %s" % (key, json.dumps(v)))
    if a.weights is not None:
        w = a.weights.split(",")
        if len(w) != 4:
            raise ConfigError("--weights: expected four numbers value,policy,forecast,win, got %r"
                              % a.weights)
        for k, v in zip(("value", "policy", "forecast", "win"), w):
            lines.append("  weight_%s: %s" % (k, json.dumps(v.strip())))
    if a.steps is not None and a.steps < 100:
        lines.append("  warmup: %d" % max(0, a.steps // 10))
    return load_config_text("\n".join(lines) + "\n", "the command line's flags")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m spirefleet.train",
                                description="train a network on label shards (docs/trainer.md)")
    p.add_argument("config", nargs="?", help="fleet YAML config (its train: section)")
    p.add_argument("--shards", nargs="+", help="shard files or directories, newest first "
                   "(default: every shard under <run.output_dir>/shards)")
    p.add_argument("--checkpoint", help="checkpoint directory (default <output_dir>/train)")
    p.add_argument("--metrics", help="metrics JSON lines (default <checkpoint>/metrics.jsonl)")
    p.add_argument("--parent-sha256", help="SHA-256 of the bundle this one succeeds (lineage)")
    p.add_argument("--out", help="also export the final network as a bundle here")
    p.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when torch sees one")
    p.add_argument("--threads", type=int, help="torch CPU threads (torch.set_num_threads)")
    p.add_argument("--stop-after-steps", type=int, metavar="N",
                   help="stop after step N without a checkpoint, as if killed (exit 3; tests)")
    g = p.add_argument_group("without CONFIG: the train section from flags")
    g.add_argument("--arch", choices=sorted(M.ARCHS))
    g.add_argument("--steps", type=int)
    g.add_argument("--batch", type=int)
    g.add_argument("--lr", type=float)
    g.add_argument("--seed", type=int)
    g.add_argument("--val-fraction", type=float)
    g.add_argument("--weights", help="loss weights value,policy,forecast,win")
    a = p.parse_args(argv)
    legacy_given = [f for f, _ in _LEGACY if getattr(a, f) is not None] + (
        ["weights"] if a.weights is not None else [])
    if a.config and legacy_given:
        p.error("with CONFIG set train.* in the file, not --%s"
                % legacy_given[0].replace("_", "-"))
    if not a.config and not (a.shards and a.out):
        p.error("give CONFIG, or --shards and --out")
    if a.parent_sha256 is not None:
        h = a.parent_sha256.lower()
        if h != LOOP_ROLLOUT and (len(h) != 64 or any(c not in "0123456789abcdef" for c in h)):
            p.error("--parent-sha256: expected 64 hex digits (or rollout), got %r"
                    % a.parent_sha256)
        a.parent_sha256 = h
    if a.threads is not None:
        if a.threads < 1:
            p.error("--threads must be >= 1")
        torch.set_num_threads(a.threads)
    tmpdir = None
    try:
        cfg, digest = load_config(a.config) if a.config else _legacy_config(a)
        ckdir = a.checkpoint
        if not a.config and not ckdir:
            tmpdir = ckdir = tempfile.mkdtemp(prefix="spirefleet-train-")
        res = train(cfg, digest, a.shards, ckdir, a.metrics, a.parent_sha256, a.device,
                    a.stop_after_steps)
        if a.out:
            from .export import export
            res["bundle"] = os.path.abspath(a.out)
            res[EXPORT_RESULT_SHA256] = export(res[TRAIN_RESULT_CHECKPOINT], a.out)
            if tmpdir:
                res[TRAIN_RESULT_CHECKPOINT] = None
    except Stopped as e:
        print("spirefleet.train: %s" % e, file=sys.stderr)
        return EXIT_STOPPED
    except (ConfigError, TrainError, WindowError, OSError, ValueError) as e:
        print("spirefleet.train: %s" % e, file=sys.stderr)
        return 2 if isinstance(e, ConfigError) else 1
    finally:
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
    print(json.dumps(res, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
