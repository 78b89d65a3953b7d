"""The reports of a training loop (docs/loop.md): a learning curve and each
generation's gate report.

    python3 -m spirefleet.loop_report RUN_DIR

Reads RUN_DIR/loop.json (written by `sf-fleet loop`) and writes

  RUN_DIR/learning.png/.svg   the labels each generation played and each
                              candidate was trained on (its window),
                              validation losses per head and generation,
                              each beside its baseline (dashed), each
                              candidate's sibling ranking (how its value
                              orders sibling moves against the search's
                              completed-Q, beside the rollout's own), and
                              each gate's paired score difference
  RUN_DIR/gen<g>/gate/gate/report.html   every decided gate's report
                              (spirefleet.gate_report)

The numbers are the trainer's and the gates' own (loop.json records them);
this module only draws them.
"""

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from . import gate_report  # noqa: E402
from . import facts as F  # noqa: E402

HEADS = ("value", "policy", "forecast")
# loop.json's keys (sf-fleet/loop_state.h, through facts.py)
GENS, GEN, HIST = F.LOOP_KEY_GENERATIONS, F.LOOP_KEY_GENERATION, F.LOOP_KEY_HISTORY
TRAIN, SIB = F.LOOP_KEY_TRAIN, F.LOOP_KEY_SIBLINGS


def load(run_dir: str) -> dict[str, Any]:
    path = os.path.join(run_dir, "loop.json")
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise ValueError("%s: %s (is this a loop's run directory?)" % (path, e.strerror))
    except json.JSONDecodeError as e:
        raise ValueError("%s: not JSON (%s)" % (path, e))


def learning_curve(state: dict[str, Any], out_dir: str) -> list[int]:
    """Write learning.png/.svg; return the generations drawn."""
    gens = [g for g in state.get(GENS, []) if g.get(TRAIN)]
    fig, axes = plt.subplots(1, len(HEADS) + 3, figsize=(4.2 * (len(HEADS) + 3), 3.6))
    xs = [g[GEN] for g in gens]
    ax = axes[0]
    played = [g for g in state.get(GENS, []) if g.get(F.LOOP_KEY_LABELS) is not None]
    ax.bar([g[GEN] for g in played], [g[F.LOOP_KEY_LABELS] for g in played],
           color="#9fb8d0", label="self-play labels")
    ax.plot(xs, [g[TRAIN].get(F.TRAIN_RESULT_LABELS) for g in gens], "o-",
            color="#1f4e79", label="trained on (window)")
    ax.set_title("labels")
    ax.set_xlabel("generation")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_xticks([g[GEN] for g in state.get(GENS, [])])
    for ax, head in zip(axes[1:], HEADS):
        val = [g[TRAIN].get(F.TRAIN_RESULT_VAL, {}).get(head) for g in gens]
        base = [g[TRAIN].get(F.TRAIN_RESULT_BASELINE, {}).get(head) for g in gens]
        ax.plot(xs, val, "o-", color="#1f4e79", label="validation loss")
        ax.plot(xs, base, "s--", color="#b0413e", label="baseline")
        ax.set_title(head)
        ax.set_xlabel("generation")
        ax.grid(alpha=0.3)
        if xs:
            ax.set_xticks(xs)
    axes[1].legend(fontsize=8)
    ax = axes[len(HEADS) + 1]
    sib = [g for g in gens if (g.get(SIB) or {}).get(F.SIBLINGS_KEY_NET_ACCURACY) is not None]
    sx = [g[GEN] for g in sib]
    ax.plot(sx, [g[SIB][F.SIBLINGS_KEY_NET_ACCURACY] for g in sib], "o-", color="#1f4e79",
            label="network")
    ax.plot(sx, [g[SIB][F.SIBLINGS_KEY_ROLLOUT_ACCURACY] for g in sib], "s--",
            color="#b0413e", label="one rollout")
    ax.axhline(0.5, color="black", lw=0.6, ls=":")
    ax.set_title("sibling ranking (pairwise agreement)")
    ax.set_xlabel("generation")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if sx:
        ax.set_xticks(sx)
    ax = axes[-1]
    gated = [g for g in state.get(GENS, []) if F.LOOP_KEY_SCORE_DIFF in g]
    gx = [g[GEN] for g in gated]
    gy = [g[F.LOOP_KEY_SCORE_DIFF] for g in gated]
    verdicts = {h[GEN]: h.get(F.LOOP_KEY_VERDICT) for h in state.get(HIST, [])}
    colours = ["#2e7d32" if verdicts.get(x) == F.VERDICT_PROMOTE else "#9e9e9e" for x in gx]
    ax.bar(gx, gy, color=colours)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_title("gate: score difference vs champion")
    ax.set_xlabel("generation (green: promoted)")
    ax.grid(alpha=0.3)
    if gx:
        ax.set_xticks(gx)
    fig.suptitle("Loop %s" % state.get(F.LOOP_KEY_RUN, ""))
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "learning.png"), dpi=110)
    fig.savefig(os.path.join(out_dir, "learning.svg"))
    plt.close(fig)
    return xs


def figures(state: dict[str, Any]) -> list[dict[str, Any]]:
    """One dict per generation: the figures docs/benchmarks.md reports
    (labels, training time and validation losses against baselines, the
    candidate's sibling ranking, the gate's verdict and paired score
    difference against the champion it faced, seconds per stage)."""
    rows = []
    history = {h[GEN]: h for h in state.get(HIST, [])}
    for g in state.get(GENS, []):
        t = g.get(TRAIN) or {}
        h = history.get(g[GEN], {})
        rows.append({"bench": "loop.generation", "generation": g[GEN],
                     "labels": g.get(F.LOOP_KEY_LABELS),
                     "selfplay_model": g.get(F.LOOP_KEY_SELFPLAY_MODEL),
                     "val": t.get(F.TRAIN_RESULT_VAL), "baseline": t.get(F.TRAIN_RESULT_BASELINE),
                     "train_records": t.get(F.TRAIN_RESULT_TRAIN_RECORDS),
                     "siblings": g.get(SIB),
                     "verdict": h.get(F.LOOP_KEY_VERDICT), "against": h.get(F.LOOP_KEY_CHAMPION),
                     "pairs": h.get(F.LOOP_KEY_PAIRS), "score_diff": h.get(F.LOOP_KEY_SCORE_DIFF),
                     "win_rate_diff": h.get(F.LOOP_KEY_WIN_RATE_DIFF),
                     "seconds": {k[:-8]: round(v, 1) for k, v in g.items()
                                 if k.endswith("_seconds")}})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m spirefleet.loop_report",
                                description="A training loop's learning curve and gate reports.")
    p.add_argument("run_dir")
    p.add_argument("--json", action="store_true",
                   help="print one JSON line of figures per generation (docs/benchmarks.md)")
    a = p.parse_args(argv)
    try:
        state = load(a.run_dir)
        if a.json:
            for row in figures(state):
                print(json.dumps(row, sort_keys=True))
            return 0
        learning_curve(state, a.run_dir)
        for g in state.get(GENS, []):
            d = os.path.join(a.run_dir, "gen%d" % g[GEN], "gate")
            if os.path.exists(os.path.join(d, "gate", "verdict.json")):
                gate_report.write_report(d)
    except ValueError as e:
        print("spirefleet.loop_report: %s" % e, file=sys.stderr)
        return 1
    print(os.path.join(a.run_dir, "learning.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
