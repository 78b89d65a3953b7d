"""Train the spirefleet network on label shards and export a model bundle.

    python3 -m spirefleet.train --shards DIR_OR_FILE [...] --out BUNDLE
        [--arch tiny|base] [--steps N] [--batch B] [--lr LR] [--seed S]
        [--val-fraction F] [--metrics FILE.jsonl] [--weights v,p,f,w]

What it does (docs/trainer.md, "Training a network"):

* Data: every record of the shards (engine-limit fights left out), split
  into training and validation by game seed (a game's decisions are
  correlated: they never straddle the split), shuffled per epoch with
  numpy's PCG64 seeded by (seed, epoch), so a run is a function of its
  inputs and flags.
* Losses, one per head, against the label contract's targets: value
  cross-entropy on the 21-bin target, P(win) binary cross-entropy on the
  outcome, policy cross-entropy against pi' over the legal queries, and
  forecast regression (squared error of each column standardised by the
  training set's mean and deviation, masked where the fight ended sooner).
  The total is their weighted sum (--weights, default 1,1,0.25,0.25).
* AdamW with a linear warm-up then cosine decay, gradient-norm clipping at
  1.0, float32 on the CPU (or a GPU when torch sees one).
* Metrics as JSON lines: every --log-every steps the training losses, and at
  the end the validation losses next to baselines that a net that learned
  nothing would reach (the training set's marginal value distribution, a
  uniform policy, forecasts equal to the column means), so a trainer sees at
  once whether it learned anything.
* Export: a bundle whose canary is a set of real positions from the
  validation records with their expected outputs computed in float64
  (gpu-evald refuses a bundle whose outputs it cannot reproduce), and
  provenance metadata (the shards' content digests, the label count, the
  steps and the final validation losses).
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from . import model as M
from .contract import FORECAST_COLUMNS
from .dataset import ShardDataset, pad_batch

DEFAULT_WEIGHTS = (1.0, 1.0, 0.25, 0.25)  # value, policy, forecast, win


def split_by_seed(dataset, val_fraction, seed):
    """(train indices, validation indices) of `dataset`, by game seed: a
    seed is in validation when a hash of (seed, game seed) falls below
    val_fraction, so the split does not depend on the shard order."""
    train, val = [], []
    for i in range(len(dataset)):
        path, local = dataset.locate(i)
        rec = dataset._reader(path).record(local)
        g = rec.ids.game_seed
        h = (g * 0x9E3779B97F4A7C15 + seed * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        h ^= h >> 31
        h = (h * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        h ^= h >> 29
        (val if (h >> 11) / float(1 << 53) < val_fraction else train).append(i)
    return np.array(train, np.int64), np.array(val, np.int64)


def load_batches(dataset, indices):
    """Every record of `indices` as one padded batch (numpy), plus `won`."""
    recs = [dataset[int(i)] for i in indices]
    b = pad_batch(recs)
    b["won"] = np.array([r["outcome"]["won"] for r in recs], np.float32)
    b["game_seed"] = np.array([r["ids"]["game_seed"] for r in recs], np.uint64)
    b["encounter_id"] = np.array([r["ids"]["encounter_id"] for r in recs], np.int64)
    return b


def _take(b, idx):
    """Rows idx of a padded batch, re-trimmed to their own longest T and Q."""
    t = int(b["token_mask"][idx].sum(1).max())
    q = max(1, int(b["query_mask"][idx].sum(1).max()))
    out = {}
    for k, v in b.items():
        v = v[idx]
        if k in ("token_type", "token_cat", "token_cont", "token_mask"):
            v = v[:, :t]
        elif k in ("query", "query_cont", "query_mask", "policy"):
            v = v[:, :q]
        out[k] = v
    return out


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
    }


def losses(net, t, fc_mean, fc_std):
    """Per-head mean losses of a batch (dict of scalar tensors)."""
    out = net(t["type"], t["cat"], t["cont"], t["mask"], t["query"], t["qcont"], t["qmask"])
    value = -(t["value_bins"] * F.log_softmax(out["value_logits"], -1)).sum(-1).mean()
    win = F.binary_cross_entropy_with_logits(out["win_logit"], t["won"])
    logits = out["policy"].masked_fill(~t["qmask"], float("-inf"))
    logp = F.log_softmax(logits, -1).masked_fill(~t["qmask"], 0.0)
    policy = -(t["policy"] * logp).sum(-1).mean()
    z_pred = (out["forecast"] - fc_mean) / fc_std
    z_true = (t["forecast"] - fc_mean) / fc_std
    m = t["forecast_mask"].unsqueeze(-1)
    denom = (m.sum() * len(FORECAST_COLUMNS)).clamp(min=1.0)
    forecast = (((z_pred - z_true) ** 2) * m).sum() / denom
    return {"value": value, "policy": policy, "forecast": forecast, "win": win}


def baselines(train, val):
    """Validation losses of predictors that know nothing of the position:
    the training set's marginal value distribution, the uniform policy over
    the legal actions, and forecasts equal to the training means (0 in
    standardised units, so the loss is the validation variance ratio)."""
    marg = train["value_bins"].mean(0).astype(np.float64) + 1e-12
    marg /= marg.sum()
    value = float(-(val["value_bins"] * np.log(marg)).sum(1).mean())
    nq = val["query_mask"].sum(1)
    policy = float(np.log(np.maximum(nq, 1)).mean())
    mean, std = forecast_stats(train)
    z = (val["forecast"] - mean) / std
    m = val["forecast_mask"][..., None].astype(np.float64)
    forecast = float(((z ** 2) * m).sum() / max(1.0, m.sum() * len(FORECAST_COLUMNS)))
    p = float(train["won"].mean())
    p = min(max(p, 1e-6), 1 - 1e-6)
    y = val["won"]
    win = float(-(y * math.log(p) + (1 - y) * math.log(1 - p)).mean())
    return {"value": value, "policy": policy, "forecast": forecast, "win": win}


def forecast_stats(b):
    """Per-column mean and deviation of the realised forecasts [1, 1, C]."""
    m = b["forecast_mask"].astype(bool)
    rows = b["forecast"][m]  # [n, C]
    if len(rows) == 0:
        return np.zeros((1, 1, len(FORECAST_COLUMNS))), np.ones((1, 1, len(FORECAST_COLUMNS)))
    mean = rows.mean(0).reshape(1, 1, -1)
    std = np.maximum(rows.std(0), 1e-3).reshape(1, 1, -1)
    return mean.astype(np.float32), std.astype(np.float32)


def lr_at(step, steps, lr, warmup):
    if step < warmup:
        return lr * (step + 1) / warmup
    p = (step - warmup) / max(1, steps - warmup)
    return lr * 0.5 * (1.0 + math.cos(math.pi * min(1.0, p)))


def positions_of(b, rows):
    """Padded batch rows as a positions dict (the bundle canary's layout)."""
    pos = M.empty_positions(len(rows))
    for k, i in enumerate(rows):
        t = int(b["token_mask"][i].sum())
        q = int(b["query_mask"][i].sum())
        pos["n_tokens"][k], pos["n_queries"][k] = t, q
        pos["type"][k, :t] = b["token_type"][i, :t]
        pos["cat"][k, :t] = b["token_cat"][i, :t]
        pos["cont"][k, :t] = b["token_cont"][i, :t]
        pos["query"][k, :q] = b["query"][i, :q]
        pos["qcont"][k, :q] = b["query_cont"][i, :q]
    return pos


def evaluate_losses(net, b, fc_mean, fc_std, device, batch=256):
    net.eval()
    sums, n = {}, 0
    with torch.no_grad():
        for s in range(0, len(b["won"]), batch):
            idx = np.arange(s, min(len(b["won"]), s + batch))
            t = to_torch(_take(b, idx), device)
            ls = losses(net, t, fc_mean, fc_std)
            for k, v in ls.items():
                sums[k] = sums.get(k, 0.0) + float(v) * len(idx)
            n += len(idx)
    net.train()
    return {k: v / max(1, n) for k, v in sums.items()}


def train(shards, out, arch="tiny", steps=2000, batch=128, lr=1e-3, seed=0,
          val_fraction=0.1, weights=DEFAULT_WEIGHTS, log=None, log_every=100,
          canary_count=16, warmup=100, weight_decay=1e-4):
    """Train a network on `shards` and write its bundle to `out`. Returns a
    dict with the final validation losses, their baselines and the bundle's
    SHA-256. `log` (callable, may be None) receives each metrics dict."""
    torch.manual_seed(seed)
    np.random.seed(seed % (1 << 32))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ds = ShardDataset(shards, shuffle=False)
    tr_idx, va_idx = split_by_seed(ds, val_fraction, seed)
    if len(tr_idx) == 0 or len(va_idx) == 0:
        raise ValueError("train: %d training and %d validation records; need both "
                         "(more shards or another --val-fraction)" % (len(tr_idx), len(va_idx)))
    tr, va = load_batches(ds, tr_idx), load_batches(ds, va_idx)
    mean, std = forecast_stats(tr)
    fc_mean = torch.from_numpy(mean).to(device)
    fc_std = torch.from_numpy(std).to(device)
    a = M.ARCHS[arch]
    net = M.SpireNet(a).to(device)
    net.train()
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=weight_decay)
    wv, wp, wf, ww = weights
    rng = np.random.Generator(np.random.PCG64([seed, 0]))
    order, pos, epoch = rng.permutation(len(tr_idx)), 0, 0
    t0 = time.time()
    for step in range(steps):
        if pos + batch > len(order):
            epoch += 1
            order = np.random.Generator(np.random.PCG64([seed, epoch])).permutation(len(tr_idx))
            pos = 0
        idx = order[pos:pos + batch]
        pos += batch
        t = to_torch(_take(tr, idx), device)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, lr, warmup)
        ls = losses(net, t, fc_mean, fc_std)
        total = wv * ls["value"] + wp * ls["policy"] + wf * ls["forecast"] + ww * ls["win"]
        opt.zero_grad()
        total.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        if log and (step % log_every == 0 or step == steps - 1):
            log({"step": step, "epoch": epoch, "lr": opt.param_groups[0]["lr"],
                 "loss": float(total), "grad_norm": float(gnorm),
                 **{"train_" + k: float(v) for k, v in ls.items()},
                 "seconds": round(time.time() - t0, 3)})
    val = evaluate_losses(net, va, fc_mean, fc_std, device)
    base = baselines(tr, va)
    result = {"val": val, "baseline": base, "train_records": int(len(tr_idx)),
              "val_records": int(len(va_idx)), "steps": steps,
              "seconds": round(time.time() - t0, 3)}
    if log:
        log({"final": True, **{"val_" + k: v for k, v in val.items()},
             **{"baseline_" + k: v for k, v in base.items()},
             "train_records": result["train_records"], "val_records": result["val_records"]})
    weights_np = {k: v.detach().to("cpu", torch.float32).numpy().copy()
                  for k, v in net.state_dict().items()}
    rows = np.arange(min(canary_count, len(va_idx)))
    canary = positions_of(va, rows)
    ref = M.model_from_weights(a, weights_np, torch.float64)
    expected = M.evaluate(ref, canary)
    digests = ",".join(m["content_digest"] for m in ds.manifests)
    extra = {"created_by": "spirefleet.train", "seed": str(seed), "steps": str(steps),
             "trained_on_records": str(len(tr_idx)), "trained_on_shards": digests,
             "val_losses": json.dumps({k: round(v, 6) for k, v in val.items()}),
             "canary_reference": f"pytorch {torch.__version__.split('+')[0]} float64, "
                                 "positions from the validation labels"}
    M.save_bundle(out, arch, a, weights_np, canary, expected, None, extra)  # tolerances measured
    result["sha256"] = M.sha256_file(out)
    return result


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m spirefleet.train",
                                description="train a network on label shards")
    p.add_argument("--shards", nargs="+", required=True, help="shard files or directories")
    p.add_argument("--out", required=True, help="bundle to write")
    p.add_argument("--arch", default="tiny", choices=sorted(M.ARCHS))
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--val-fraction", type=float, default=0.1)
    p.add_argument("--weights", default=",".join(str(w) for w in DEFAULT_WEIGHTS),
                   help="loss weights value,policy,forecast,win")
    p.add_argument("--metrics", help="also append the metrics JSON lines to this file")
    p.add_argument("--log-every", type=int, default=100)
    a = p.parse_args(argv)
    try:
        w = tuple(float(x) for x in a.weights.split(","))
    except ValueError:
        p.error("--weights: expected four numbers, got %r" % a.weights)
    if len(w) != 4 or any(x < 0 or not math.isfinite(x) for x in w):
        p.error("--weights: expected four non-negative numbers value,policy,forecast,win")
    if a.steps < 1 or a.batch < 1 or not (0 < a.val_fraction < 1) or not a.lr > 0:
        p.error("--steps and --batch must be >= 1, --val-fraction in (0, 1), --lr > 0")
    mf = open(a.metrics, "a") if a.metrics else None

    def log(d):
        line = json.dumps(d, sort_keys=True)
        print(line, flush=True)
        if mf:
            mf.write(line + "\n")
            mf.flush()
    try:
        res = train(a.shards, a.out, a.arch, a.steps, a.batch, a.lr, a.seed, a.val_fraction, w,
                    log, a.log_every)
    except (ValueError, OSError) as e:
        print("spirefleet.train: %s" % e, file=sys.stderr)
        return 1
    finally:
        if mf:
            mf.close()
    print("wrote %s (sha256 %s)" % (a.out, res["sha256"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
