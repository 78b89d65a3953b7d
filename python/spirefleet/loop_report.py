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

HEADS = ("value", "policy", "forecast")


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
    gens = [g for g in state.get("generations", []) if g.get("train")]
    fig, axes = plt.subplots(1, len(HEADS) + 3, figsize=(4.2 * (len(HEADS) + 3), 3.6))
    xs = [g["generation"] for g in gens]
    ax = axes[0]
    played = [g for g in state.get("generations", []) if g.get("labels") is not None]
    ax.bar([g["generation"] for g in played], [g["labels"] for g in played], color="#9fb8d0",
           label="self-play labels")
    ax.plot(xs, [g["train"].get("labels") for g in gens], "o-", color="#1f4e79",
            label="trained on (window)")
    ax.set_title("labels")
    ax.set_xlabel("generation")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_xticks([g["generation"] for g in state.get("generations", [])])
    for ax, head in zip(axes[1:], HEADS):
        val = [g["train"].get("val", {}).get(head) for g in gens]
        base = [g["train"].get("baseline", {}).get(head) for g in gens]
        ax.plot(xs, val, "o-", color="#1f4e79", label="validation loss")
        ax.plot(xs, base, "s--", color="#b0413e", label="baseline")
        ax.set_title(head)
        ax.set_xlabel("generation")
        ax.grid(alpha=0.3)
        if xs:
            ax.set_xticks(xs)
    axes[1].legend(fontsize=8)
    ax = axes[len(HEADS) + 1]
    sib = [g for g in gens if (g.get("siblings") or {}).get("net_pairwise_accuracy") is not None]
    sx = [g["generation"] for g in sib]
    ax.plot(sx, [g["siblings"]["net_pairwise_accuracy"] for g in sib], "o-", color="#1f4e79",
            label="network")
    ax.plot(sx, [g["siblings"]["rollout_pairwise_accuracy"] for g in sib], "s--",
            color="#b0413e", label="one rollout")
    ax.axhline(0.5, color="black", lw=0.6, ls=":")
    ax.set_title("sibling ranking (pairwise agreement)")
    ax.set_xlabel("generation")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if sx:
        ax.set_xticks(sx)
    ax = axes[-1]
    gx = [g["generation"] for g in state.get("generations", []) if "score_diff" in g]
    gy = [g["score_diff"] for g in state.get("generations", []) if "score_diff" in g]
    verdicts = {h["generation"]: h.get("verdict") for h in state.get("history", [])}
    colours = ["#2e7d32" if verdicts.get(x) == "promote" else "#9e9e9e" for x in gx]
    ax.bar(gx, gy, color=colours)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_title("gate: score difference vs champion")
    ax.set_xlabel("generation (green: promoted)")
    ax.grid(alpha=0.3)
    if gx:
        ax.set_xticks(gx)
    fig.suptitle("Loop %s" % state.get("run", ""))
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
    history = {h["generation"]: h for h in state.get("history", [])}
    for g in state.get("generations", []):
        t = g.get("train") or {}
        h = history.get(g["generation"], {})
        rows.append({"bench": "loop.generation", "generation": g["generation"],
                     "labels": g.get("labels"), "selfplay_model": g.get("selfplay_model"),
                     "val": t.get("val"), "baseline": t.get("baseline"),
                     "train_records": t.get("train_records"),
                     "siblings": g.get("siblings"),
                     "verdict": h.get("verdict"), "against": h.get("champion"),
                     "pairs": h.get("pairs"), "score_diff": h.get("score_diff"),
                     "win_rate_diff": h.get("win_rate_diff"),
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
        for g in state.get("generations", []):
            d = os.path.join(a.run_dir, "gen%d" % g["generation"], "gate")
            if os.path.exists(os.path.join(d, "gate", "verdict.json")):
                gate_report.write_report(d)
    except ValueError as e:
        print("spirefleet.loop_report: %s" % e, file=sys.stderr)
        return 1
    print(os.path.join(a.run_dir, "learning.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
