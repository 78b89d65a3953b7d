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
  train.window_labels labels are in (spirefleet.window).
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

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from . import model as M  # noqa: E402
from .config import ConfigError, load_config, load_config_text  # noqa: E402
from .contract import FORECAST_COLUMNS, VALUE_SUPPORT  # noqa: E402
from .facts import (EXPORT_RESULT_SHA256, LOOP_ROLLOUT, TRAIN_RESULT_BASELINE,  # noqa: E402
                    TRAIN_RESULT_CHECKPOINT, TRAIN_RESULT_LABELS, TRAIN_RESULT_TRAIN_RECORDS,
                    TRAIN_RESULT_VAL, TRAIN_RESULT_VAL_SEEDS)
from .window import (Records, WindowError, find_shards, select_window,  # noqa: E402
                     split_by_seed)

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


def to_torch(b, device):
    return {
        "type": torch.from_numpy(b["token_type"].astype(np.int64)).to(device),
        "cat": torch.from_numpy(b["token_cat"].astype(np.int64)).to(device),
        "cont": torch.from_numpy(b["token_cont"]).to(device),
        "mask": torch.from_numpy(b["token_mask"]).to(device),
        "query": torch.from_numpy(b["query"].astype(np.int64)).to(device),
        "qcont": torch.from_numpy(b["query_cont"]).to(device),
        "qmask": torch.from_numpy(b["query_mask"]).to(device),
        "policy": torch.from_numpy(b["policy"]).to(device),
        "value_bins": torch.from_numpy(b["value_bins"]).to(device),
        "forecast": torch.from_numpy(b["forecast"]).to(device),
        "forecast_mask": torch.from_numpy(b["forecast_mask"].astype(np.float32)).to(device),
        "won": torch.from_numpy(b["won"]).to(device),
        "q_chosen": torch.from_numpy(b["q_chosen"]).to(device),
        "q_searched": torch.from_numpy(b["q_searched"]).to(device),
    }


class AuxQ(torch.nn.Module):
    """A training-only head: the search's completed-Q of the chosen move,
    read from the trunk's pooled position (a value in [0, 1]). It shapes the
    trunk towards what ranks sibling moves; it is not part of the bundle
    (docs/trainer.md "Auxiliary targets")."""

    def __init__(self, d, hidden):
        super().__init__()
        self.fc = torch.nn.Linear(d, hidden)
        self.out = torch.nn.Linear(hidden, 1)

    def forward(self, pooled):
        return torch.sigmoid(self.out(F.gelu(self.fc(pooled))).squeeze(-1))


# the supports of the 21 value bins, as a tensor (the label contract's)
_SUPPORT = torch.tensor(VALUE_SUPPORT, dtype=torch.float32)


def surprise_weights(value_logits, q_chosen, strength, searched=None):
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


def losses(net, t, fc_mean, fc_std, aux=None, surprise=0.0):
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


def forecast_stats(rec, idx):
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


def baselines(rec, train_idx, idx, fc_mean, fc_std):
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
    for i in idx:
        pi = rec.policy[rec.q_off[i]:rec.q_off[i + 1]].astype(np.float64)
        pol_floor -= float((pi[pi > 0] * np.log(pi[pi > 0])).sum())
    return {"value": value, "value_encounter": value_enc, "policy": policy,
            "forecast": forecast, "forecast_mean": forecast_mean, "win": win,
            "value_target_entropy": value_floor,
            "policy_target_entropy": pol_floor / max(1, len(idx))}


def evaluate_losses(net, rec, idx, fc_mean, fc_std, device):
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


def lr_at(step, steps, lr, warmup):
    """Linear warm-up over `warmup` steps, then cosine decay to 0 at `steps`."""
    if step < warmup:
        return lr * (step + 1) / warmup
    p = (step - warmup) / max(1, steps - warmup)
    return lr * 0.5 * (1.0 + math.cos(math.pi * min(1.0, p)))


def positions_of(rec, rows):
    """Records `rows` as a positions dict (the bundle canary's layout)."""
    pos = M.empty_positions(len(rows))
    for k, i in enumerate(rows):
        t0, t1 = rec.tok_off[i], rec.tok_off[i + 1]
        q0, q1 = rec.q_off[i], rec.q_off[i + 1]
        t, q = int(t1 - t0), int(q1 - q0)
        pos["n_tokens"][k], pos["n_queries"][k] = t, q
        pos["type"][k, :t] = rec.token_type[t0:t1]
        pos["cat"][k, :t] = rec.token_cat[t0:t1]
        pos["cont"][k, :t] = rec.token_cont[t0:t1]
        pos["query"][k, :q] = rec.query[q0:q1]
        pos["qcont"][k, :q] = rec.query_cont[q0:q1]
    return pos


def init_net(arch, seed, fc_mean, fc_std):
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


def _fsync_dir(d):
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


def save_atomic(obj, path):
    """torch.save to a temporary file beside `path`, fsync, rename."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(os.path.abspath(path)))


def load_checkpoint(path):
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


def _ckpt_name(step):
    return "ckpt-%08d.pt" % step


def checkpoints_in(d):
    """(step, path) of the step checkpoints in d, oldest first."""
    out = []
    if os.path.isdir(d):
        for f in os.listdir(d):
            if f.startswith("ckpt-") and f.endswith(".pt") and f[5:-3].isdigit():
                out.append((int(f[5:-3]), os.path.join(d, f)))
    return sorted(out)


class Metrics:
    """JSON lines appended to a file (flushed per line)."""

    def __init__(self, path, resume_step=None):
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

    def write(self, d):
        self.f.write(json.dumps(d, sort_keys=True) + "\n")
        self.f.flush()

    def close(self):
        self.f.close()


class Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, total, start):
        self.on = sys.stderr.isatty()
        self.total, self.start, self.t0, self.last = total, start, time.time(), 0.0

    def update(self, step, loss):
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

    def close(self):
        if self.on:
            sys.stderr.write("\n")


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------


def _shard_desc(infos):
    return [{k: i[k] for k in ("path", "digest", "run_id", "job_id", "created_unix",
                               "model_sha256", "config_digest", "records", "labels")}
            for i in infos]


def _result(ck, path):
    w = ck["window"]
    return {TRAIN_RESULT_CHECKPOINT: os.path.abspath(path), TRAIN_RESULT_VAL: ck["val"],
            TRAIN_RESULT_BASELINE: ck["baseline"],
            "train": ck["train_eval"], "train_baseline": ck["train_baseline"],
            TRAIN_RESULT_TRAIN_RECORDS: w["train_records"], "val_records": w["val_records"],
            "shards": [s["digest"] for s in w["shards"]], TRAIN_RESULT_LABELS: w["labels"],
            TRAIN_RESULT_VAL_SEEDS: w.get("val_seeds", []),
            "steps": ck["step"], "kept_step": ck.get("kept_step", ck["step"]),
            "seconds": round(ck["seconds"], 3)}


def _same_train_config(ck, train_cfg, path):
    old = ck["train_config"]
    for k in sorted(set(old) | set(train_cfg)):
        if old.get(k) != train_cfg.get(k):
            raise TrainError("%s: made with train.%s = %s; the config says %s (train into "
                             "another --checkpoint directory, or remove this one)"
                             % (path, k, json.dumps(old.get(k)), json.dumps(train_cfg.get(k))))


def train(cfg, digest, shards=None, checkpoint_dir=None, metrics_path=None,
          parent_sha256=None, device=None, stop_after=None, log=None):
    """Train as `cfg` (the effective config dict, `sf-fleet check --json`)
    says; returns the final result dict (see main()). Resumes from the
    newest checkpoint in checkpoint_dir."""
    tc = dict(cfg["train"])
    run = cfg["run"]
    ckdir = checkpoint_dir or os.path.join(run["output_dir"], "train")
    os.makedirs(ckdir, exist_ok=True)
    final_path = os.path.join(ckdir, FINAL)
    if os.path.exists(final_path):
        ck = load_checkpoint(final_path)
        _same_train_config(ck, tc, final_path)
        return _result(ck, final_path)

    for f in os.listdir(ckdir):  # a save the process died in
        if ".pt.tmp." in f:
            os.unlink(os.path.join(ckdir, f))
    resume = None
    for step, path in reversed(checkpoints_in(ckdir)):
        try:
            resume = load_checkpoint(path)
            resume_path = path
            break
        except TrainError as e:
            print("spirefleet.train: %s; trying an older checkpoint" % e, file=sys.stderr)
    if resume is not None:
        _same_train_config(resume, tc, resume_path)
        window = resume["window"]["shards"]
        if shards:
            print("spirefleet.train: resuming %s on the window it records (%d shards); "
                  "--shards is not read" % (resume_path, len(window)), file=sys.stderr)
        if parent_sha256 is None:
            parent_sha256 = resume.get("parent_sha256")
    else:
        # the coordinator's store only: output_dir also holds workers'
        # undelivered attempts (work/, never verified) and shards set aside
        # (quarantined/, rejected/)
        sources = shards if shards else [os.path.join(run["output_dir"], "shards")]
        try:
            found = find_shards(sources)
        except WindowError as e:
            raise TrainError(str(e)) from None
        if not found:
            raise TrainError("no sealed shards with labels in %s" % ", ".join(sources))
        window = _shard_desc(select_window(found, tc["window_labels"]))
    try:
        rec = Records(window, tokenizer_version=M.FEAT_VERSION)
    except WindowError as e:
        raise TrainError(str(e)) from None
    tr_idx, va_idx = split_by_seed(rec, tc["val_fraction"], tc["seed"])
    if len(tr_idx) == 0 or len(va_idx) == 0:
        raise TrainError("the window (%d labels of %d game seed%s) cannot be split into "
                         "training and validation: it needs two game seeds at least"
                         % (len(rec), len(np.unique(rec.game_seed)),
                            "" if len(np.unique(rec.game_seed)) == 1 else "s"))
    fc_mean, fc_std = forecast_stats(rec, tr_idx)

    torch.use_deterministic_algorithms(True, warn_only=True)
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    net = init_net(tc["arch"], tc["seed"], fc_mean, fc_std).to(dev)
    net.train()
    arch = M.ARCHS[tc["arch"]]
    wq, surprise = tc["weight_q"], tc["surprise"]
    aux = AuxQ(arch["d_model"], arch["d_value"]).to(dev) if wq > 0 else None
    params = list(net.parameters()) + (list(aux.parameters()) if aux is not None else [])
    opt = torch.optim.AdamW(params, lr=tc["lr"], weight_decay=tc["weight_decay"])
    k = min(tc["canary_positions"], len(va_idx))
    rng = np.random.Generator(np.random.PCG64([tc["seed"], 3]))
    canary_rows = np.sort(va_idx[rng.choice(len(va_idx), size=k, replace=False)])
    canary = positions_of(rec, canary_rows)

    start, seconds, epoch_acc, best = 0, 0.0, None, None
    if resume is not None:
        best = resume.get("best")
        net.load_state_dict(resume["model"])
        if aux is not None:
            aux.load_state_dict(resume["aux"])
        opt.load_state_dict(resume["optimizer"])
        torch.set_rng_state(resume["rng"]["torch"])
        start, seconds, epoch_acc = resume["step"], resume["seconds"], resume["epoch_acc"]
        if resume.get("device") != str(dev) or resume.get("threads") != torch.get_num_threads():
            print("spirefleet.train: note: %s was written on %s with %s threads, this run uses "
                  "%s with %d; the weights may differ in the last bits from an uninterrupted run"
                  % (resume_path, resume.get("device"), resume.get("threads"), dev,
                     torch.get_num_threads()), file=sys.stderr)
    metrics = Metrics(metrics_path or os.path.join(ckdir, "metrics.jsonl"),
                      start if resume is not None else None)
    wv, wp = tc["weight_value"], tc["weight_policy"]
    wf, ww = tc["weight_forecast"], tc["weight_win"]
    steps, batch = tc["steps"], tc["batch"]
    n_tr = len(tr_idx)
    per_epoch = max(1, n_tr // batch)
    fm, fs = torch.from_numpy(fc_mean).to(dev), torch.from_numpy(fc_std).to(dev)
    window_desc = {"shards": window, "labels": int(len(rec)), "train_records": int(n_tr),
                   "val_records": int(len(va_idx)), "split": "game seed",
                   "train_sample": min(TRAIN_SAMPLE, n_tr),
                   # the held-out games (a sibling-ranking measure reads only these)
                   "val_seeds": sorted(int(s) for s in np.unique(rec.game_seed[va_idx]))}

    def weighted(v):
        return wv * v["value"] + wp * v["policy"] + wf * v["forecast"] + ww * v["win"]

    def weights():
        return {k_: v.detach().cpu().clone() for k_, v in net.state_dict().items()}

    def state(step, t, val=None):
        return {"val": val, "best": best, "format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, "step": step,
                "model": weights(),
                "aux": aux.state_dict() if aux is not None else None,
                "optimizer": opt.state_dict(), "rng": {"torch": torch.get_rng_state()},
                "train_config": tc, "run": run["name"], "config_digest": digest,
                "parent_sha256": parent_sha256 or LOOP_ROLLOUT, "arch": tc["arch"],
                "window": window_desc, "fc_mean": fc_mean, "fc_std": fc_std,
                "canary": canary, "canary_rows": canary_rows, "epoch_acc": epoch_acc,
                "device": str(dev), "threads": torch.get_num_threads(),
                "seconds": seconds + (time.time() - t), "torch": torch.__version__}

    if resume is not None:
        metrics.write({"kind": "resume", "step": start, "from": os.path.basename(resume_path)})
    else:
        metrics.write({"kind": "start", "step": 0, "labels": window_desc["labels"],
                       "train_records": n_tr, "val_records": len(va_idx),
                       "shards": len(window), "arch": tc["arch"], "steps": steps,
                       "device": str(dev)})
    progress = Progress(steps, start)
    t0 = time.time()
    order_epoch, order = -1, None
    try:
        for step in range(start, steps):
            epoch, pos = step // per_epoch, (step % per_epoch) * batch
            if epoch != order_epoch:
                order = np.random.Generator(np.random.PCG64([tc["seed"], epoch])).permutation(n_tr)
                order_epoch = epoch
            idx = tr_idx[order[pos:pos + batch]]
            lr = lr_at(step, steps, tc["lr"], tc["warmup"])
            for g in opt.param_groups:
                g["lr"] = lr
            ls = losses(net, to_torch(rec.batch(idx), dev), fm, fs, aux, surprise)
            total = weighted(ls) + (wq * ls["q"] if aux is not None else 0.0)
            opt.zero_grad(set_to_none=True)
            total.backward()
            gnorm = torch.nn.utils.clip_grad_norm_(
                params, tc["clip"] if tc["clip"] > 0 else float("inf"))
            opt.step()
            vals = {k_: float(v) for k_, v in ls.items()}
            line = {"kind": "step", "step": step, "epoch": epoch, "lr": lr,
                    "loss": float(total), "grad_norm": float(gnorm),
                    "seconds": round(seconds + time.time() - t0, 3)}
            line.update({"train_" + k_: v for k_, v in vals.items()})
            metrics.write(line)
            if log:
                log(line)
            if epoch_acc is None or epoch_acc["epoch"] != epoch:
                epoch_acc = {"epoch": epoch, "n": 0, **dict.fromkeys(HEADS, 0.0)}
            epoch_acc["n"] += 1
            for k_ in HEADS:
                epoch_acc[k_] += vals[k_]
            if (step + 1) % per_epoch == 0:
                metrics.write({"kind": "epoch", "step": step, "epoch": epoch,
                               "steps": epoch_acc["n"],
                               **{"train_" + k_: epoch_acc[k_] / epoch_acc["n"] for k_ in HEADS}})
            progress.update(step, float(total))
            every = tc["checkpoint_every"]
            if every and (step + 1) % every == 0 and step + 1 < steps:
                val = evaluate_losses(net, rec, va_idx, fc_mean, fc_std, dev)
                if best is None or weighted(val) < best["loss"]:
                    best = {"step": step + 1, "loss": weighted(val), "model": weights()}
                metrics.write({"kind": "val", "step": step, "val_loss": weighted(val),
                               **{"val_" + k_: v for k_, v in val.items()}})
                save_atomic(state(step + 1, t0, val), os.path.join(ckdir, _ckpt_name(step + 1)))
                for _, old in checkpoints_in(ckdir)[:-KEEP_CHECKPOINTS]:
                    os.unlink(old)
            if stop_after is not None and step + 1 >= stop_after and step + 1 < steps:
                raise Stopped("stopped after step %d of %d (--stop-after-steps)"
                              % (step + 1, steps))
    finally:
        progress.close()
        metrics.close()

    val = evaluate_losses(net, rec, va_idx, fc_mean, fc_std, dev)
    last_loss, kept = weighted(val), steps
    if tc["keep"] == "best" and best is not None and best["loss"] < last_loss:
        net.load_state_dict(best["model"])
        kept = best["step"]
        val = evaluate_losses(net, rec, va_idx, fc_mean, fc_std, dev)
    base = baselines(rec, tr_idx, va_idx, fc_mean, fc_std)
    if n_tr > TRAIN_SAMPLE:
        rng = np.random.Generator(np.random.PCG64([tc["seed"], 4]))
        sample = np.sort(tr_idx[rng.choice(n_tr, size=TRAIN_SAMPLE, replace=False)])
    else:
        sample = tr_idx
    tr_eval = evaluate_losses(net, rec, sample, fc_mean, fc_std, dev)
    tr_base = baselines(rec, tr_idx, sample, fc_mean, fc_std)
    ck = state(steps, t0)
    ck.update({"final": True, "val": val, "baseline": base, "train_eval": tr_eval,
               "train_baseline": tr_base, "kept_step": kept, "best": None})
    save_atomic(ck, final_path)
    with open(metrics.path, "a") as f:
        f.write(json.dumps({"kind": "final", "step": steps,
                            **{"val_" + k_: v for k_, v in val.items()},
                            **{"baseline_" + k_: v for k_, v in base.items()},
                            **{"train_" + k_: v for k_, v in tr_eval.items()},
                            **{"train_baseline_" + k_: v for k_, v in tr_base.items()},
                            "train_records": n_tr, "val_records": int(len(va_idx)),
                            "labels": window_desc["labels"], "kept_step": kept,
                            "val_loss": weighted(val), "val_loss_last_step": last_loss,
                            "seconds": round(ck["seconds"], 3)}, sort_keys=True) + "\n")
    for _, old in checkpoints_in(ckdir):
        os.unlink(old)
    return _result(ck, final_path)


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------

_LEGACY = (("arch", "arch"), ("steps", "steps"), ("batch", "batch"), ("lr", "lr"),
           ("seed", "seed"), ("val_fraction", "val_fraction"))


def _legacy_config(a):
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


def main(argv=None):
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
