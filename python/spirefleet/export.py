"""Export a training checkpoint as a sealed model bundle (docs/trainer.md).

    python3 -m spirefleet.export CHECKPOINT OUT [--parent-sha256 HEX]
        [--config-digest HEX]

CHECKPOINT is a checkpoint file of `python3 -m spirefleet.train` (its
`final.pt`, or a step checkpoint) or its directory (then its final.pt).
OUT is written atomically (a temporary file beside it, renamed): a bundle
whose canary is the checkpoint's train.canary_positions real positions from
the validation labels, with their expected outputs computed in float64 and
tolerances per output and precision measured as spirefleet.model does, and
lineage metadata:

    parent_sha256        the bundle this one succeeds, or "rollout"
    trained_on_shards    the window's shard content digests, newest first
    trained_on_labels    labels in the window (training + validation)
    trained_on_records   training records; validation_records
    config_digest        the run config's digest
    val_losses           the validation losses at that step (JSON)
    baseline_losses      the baselines on the validation split (JSON)
    train_config         the config's train section (JSON)
    run, steps, seed, checkpoint_step, created_by, canary_reference

Prints one JSON line {"bundle": OUT, "sha256": HEX}. `sf-model verify
--sha256 HEX OUT` checks it on the cpu backend.
"""

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from . import model as M
from .facts import EXPORT_RESULT_SHA256, LOOP_ROLLOUT
from .train import FINAL, TrainError, load_checkpoint


def _hex64(s: str, what: str) -> str:
    h = s.lower()
    if len(h) != 64 or any(c not in "0123456789abcdef" for c in h):
        raise ValueError("%s: expected 64 hex digits, got %r" % (what, s))
    return h


def _losses_json(d: dict[str, Any] | None) -> str:
    return json.dumps({k: round(float(v), 6) for k, v in d.items()}, sort_keys=True) \
        if d is not None else "null"


def lineage(ck: dict[str, Any], parent_sha256: str | None = None,
            config_digest: str | None = None) -> dict[str, str]:
    """The lineage metadata of a checkpoint's bundle (str -> str)."""
    w = ck["window"]
    tc = ck["train_config"]
    return {
        "created_by": "spirefleet.export",
        "parent_sha256": parent_sha256 or ck.get("parent_sha256") or LOOP_ROLLOUT,
        "trained_on_shards": ",".join(s["digest"] for s in w["shards"]),
        "trained_on_labels": str(w["labels"]),
        "trained_on_records": str(w["train_records"]),
        "validation_records": str(w["val_records"]),
        "config_digest": config_digest or ck["config_digest"],
        "val_losses": _losses_json(ck.get("val")),
        "baseline_losses": _losses_json(ck.get("baseline")),
        "train_config": json.dumps(tc, sort_keys=True),
        "run": ck["run"],
        "steps": str(tc["steps"]),
        "seed": str(tc["seed"]),
        "checkpoint_step": str(ck["step"]),
        "weights_step": str(ck.get("kept_step", ck["step"])),  # train.keep best: its step
        "canary_reference": "pytorch %s float64, positions from the validation labels"
                            % torch.__version__.split("+")[0],
    }


def export(checkpoint: str, out: str, parent_sha256: str | None = None,
           config_digest: str | None = None) -> str:
    """Write the bundle of `checkpoint` at `out`; returns its SHA-256."""
    path = os.path.join(checkpoint, FINAL) if os.path.isdir(checkpoint) else checkpoint
    if not os.path.exists(path):
        raise TrainError("%s: no such checkpoint%s" % (
            path, " (training has not finished: no final.pt)" if os.path.isdir(checkpoint)
            else ""))
    ck = load_checkpoint(path)
    if parent_sha256 is not None and parent_sha256 != LOOP_ROLLOUT:
        parent_sha256 = _hex64(parent_sha256, "--parent-sha256")
    if config_digest is not None:
        config_digest = _hex64(config_digest, "--config-digest")
    arch_name = ck["arch"]
    arch = M.ARCHS[arch_name]
    weights = {k: v.detach().to(torch.float32).numpy().copy() for k, v in ck["model"].items()}
    canary = {k: np.asarray(v) for k, v in ck["canary"].items()}
    expected = M.evaluate(M.model_from_weights(arch, weights, torch.float64), canary)
    out = os.fspath(out)
    tmp = "%s.%d.tmp" % (out, os.getpid())
    try:
        M.save_bundle(tmp, arch_name, arch, weights, canary, expected, None,
                      lineage(ck, parent_sha256, config_digest))
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    d = os.open(os.path.dirname(os.path.abspath(out)), os.O_RDONLY)
    try:
        os.fsync(d)
    finally:
        os.close(d)
    return M.sha256_file(out)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m spirefleet.export",
                                description="export a training checkpoint as a model bundle")
    p.add_argument("checkpoint", help="checkpoint file, or its directory (its final.pt)")
    p.add_argument("out", help="bundle to write")
    p.add_argument("--parent-sha256", help="the bundle this one succeeds (default: the "
                   "checkpoint's, else rollout)")
    p.add_argument("--config-digest", help="the run config's digest (default: the checkpoint's)")
    a = p.parse_args(argv)
    try:
        sha = export(a.checkpoint, a.out, a.parent_sha256, a.config_digest)
    except (TrainError, ValueError, KeyError, OSError) as e:
        print("spirefleet.export: %s" % e, file=sys.stderr)
        return 1
    print(json.dumps({"bundle": a.out, EXPORT_RESULT_SHA256: sha}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
