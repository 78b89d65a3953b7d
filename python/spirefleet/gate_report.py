"""The gate report: a self-contained HTML page with plots, from a gate run.

    python3 -m spirefleet.gate_report RUN_DIR [--out DIR]

Reads RUN_DIR/gate/verdict.json and RUN_DIR/gate/pairs.jsonl (written by the
coordinator of a `run.kind: gate` run; docs/gate.md gives both formats) and
writes into DIR (default RUN_DIR/gate):

  report.html      the verdict line, the numbers, and the plots inline (SVG),
                   so the page needs no other file
  llr.png/.svg     the running log-likelihood ratio against Wald's bounds
  score.png/.svg   the paired score difference with its 95 % band as pairs
                   accumulate
  classes.png/.svg the per-encounter-class breakdown

The statistics are computed by the C gate module and written into those
files; this page only draws them (one home for every formula). Plots use
matplotlib's Agg backend: no display is needed.
"""

import argparse
import html
import io
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# The keys every verdict.json and pairs.jsonl line holds and the verdict
# words: gate/stats.h, through the generated facts.py.
from .facts import (PAIR_KEYS, VERDICT_INCONCLUSIVE, VERDICT_KEYS, VERDICT_PROMOTE,  # noqa: E402
                    VERDICT_REJECT)


def load(run_dir: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(verdict dict, list of pair dicts in seed order). ValueError names the
    file and what is wrong."""
    gate = os.path.join(run_dir, "gate")
    vpath = os.path.join(gate, "verdict.json")
    ppath = os.path.join(gate, "pairs.jsonl")
    try:
        with open(vpath) as f:
            verdict = json.load(f)
    except OSError as e:
        raise ValueError("%s: %s (is this a gate run's directory?)" % (vpath, e.strerror))
    except json.JSONDecodeError as e:
        raise ValueError("%s: not JSON (%s)" % (vpath, e))
    missing = [k for k in VERDICT_KEYS if k not in verdict]
    if missing:
        raise ValueError("%s: missing keys %s" % (vpath, ", ".join(missing)))
    pairs = []
    try:
        with open(ppath) as f:
            for i, line in enumerate(f, 1):
                if line.strip():
                    try:
                        pairs.append(json.loads(line))
                    except json.JSONDecodeError as e:
                        raise ValueError("%s:%d: not JSON (%s)" % (ppath, i, e))
    except OSError as e:
        raise ValueError("%s: %s" % (ppath, e.strerror))
    for i, p in enumerate(pairs):
        for k in PAIR_KEYS:
            if k not in p:
                raise ValueError("%s:%d: missing key %s" % (ppath, i + 1, k))
    return verdict, pairs


def _save(fig: Any, out: str, name: str) -> str:
    """Write name.png and name.svg; return the SVG text for inlining."""
    fig.savefig(os.path.join(out, name + ".png"), dpi=110, bbox_inches="tight")
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    svg = buf.getvalue()
    with open(os.path.join(out, name + ".svg"), "w") as f:
        f.write(svg)
    plt.close(fig)
    return svg[svg.index("<svg"):]  # drop the XML prolog for inlining


def plot_llr(verdict: dict[str, Any], pairs: list[dict[str, Any]], out: str) -> str:
    fig, ax = plt.subplots(figsize=(8, 3.6))
    x = [p["pair"] for p in pairs]
    ax.plot(x, [p["llr"] for p in pairs], color="#1f4e79", lw=1.4, label="LLR")
    lo, hi = verdict["llr_bounds"]
    ax.axhline(hi, color="#2e7d32", ls="--", lw=1, label="%s bound %.2f" % (VERDICT_PROMOTE, hi))
    ax.axhline(lo, color="#c62828", ls="--", lw=1, label="%s bound %.2f" % (VERDICT_REJECT, lo))
    mp = verdict.get("rule", {}).get("min_pairs")
    if mp:
        ax.axvline(mp, color="#888888", ls=":", lw=1, label="min_pairs %d" % mp)
    if verdict.get("stop_pair"):
        ax.axvline(verdict["stop_pair"], color="#000000", lw=0.8, label="decision")
    ax.set_xlabel("pairs, in seed order")
    ax.set_ylabel("log-likelihood ratio")
    ax.set_title("Sequential test: %s" % verdict["verdict"])
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)
    return _save(fig, out, "llr")


def plot_score(verdict: dict[str, Any], pairs: list[dict[str, Any]], out: str) -> str:
    fig, ax = plt.subplots(figsize=(8, 3.6))
    x = [p["pair"] for p in pairs]
    ax.fill_between(x, [p["score_lo"] for p in pairs], [p["score_hi"] for p in pairs],
                    color="#90caf9", alpha=0.6, label="95 % band")
    ax.plot(x, [p["score_diff"] for p in pairs], color="#0d47a1", lw=1.3,
            label="mean score difference (candidate − champion)")
    ax.axhline(0.0, color="#444444", lw=0.8)
    ax.set_xlabel("pairs, in seed order")
    ax.set_ylabel("score difference")
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)
    return _save(fig, out, "score")


def plot_classes(verdict: dict[str, Any], out: str) -> str:
    names = sorted(verdict["per_class"])
    wr = [verdict["per_class"][c]["win_rate_diff"] for c in names]
    sd = [verdict["per_class"][c]["score_diff"] for c in names]
    fig, ax = plt.subplots(figsize=(8, 3.2))
    xs = range(len(names))
    ax.bar([i - 0.2 for i in xs], wr, width=0.4, color="#5c6bc0", label="win-rate difference")
    ax.bar([i + 0.2 for i in xs], sd, width=0.4, color="#26a69a", label="score difference")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(["%s (%d)" % (c, verdict["per_class"][c]["pairs"]) for c in names])
    ax.axhline(0.0, color="#444444", lw=0.8)
    ax.set_ylabel("candidate − champion")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    return _save(fig, out, "classes")


def _side(s: Any) -> str:
    if isinstance(s, dict):
        return ", ".join("%s %s" % (k, v) for k, v in s.items())
    return str(s)


def _num(v: Any, fmt: str = "%.4g") -> str:
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_num(x, fmt) for x in v) + "]"
    if isinstance(v, float):
        return fmt % v
    return html.escape(str(v))


def write_report(run_dir: str, out: str | None = None) -> str:
    """Write the page and plots; return the path of report.html."""
    verdict, pairs = load(run_dir)
    out = out or os.path.join(run_dir, "gate")
    os.makedirs(out, exist_ok=True)
    svg_llr = plot_llr(verdict, pairs, out)
    svg_score = plot_score(verdict, pairs, out)
    svg_classes = plot_classes(verdict, out)
    rows = [("verdict", verdict["verdict"]), ("pairs", verdict["pairs"]),
            ("champion", _side(verdict["champion"])), ("candidate", _side(verdict["candidate"])),
            ("win-rate difference", _num(verdict["win_rate_diff"])),
            ("its exact interval", _num(verdict.get("win_rate_diff_ci", "—"))),
            ("score difference", _num(verdict["score_diff"])),
            ("its bootstrap interval", _num(verdict["score_diff_ci"])),
            ("p (one-sided)", _num(verdict["p_value"])),
            ("LLR", _num(verdict["llr"])), ("LLR bounds", _num(verdict["llr_bounds"]))]
    table = "\n".join("<tr><th>%s</th><td>%s</td></tr>" % (html.escape(k), v if k in (
        "win-rate difference", "its exact interval", "score difference", "its bootstrap interval",
        "p (one-sided)", "LLR", "LLR bounds") else html.escape(str(v))) for k, v in rows)
    cls = "\n".join(
        "<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td></tr>"
        % (html.escape(c), d["pairs"], d.get("only_candidate", 0), d.get("only_champion", 0),
           _num(d["win_rate_diff"]), _num(d["score_diff"]))
        for c, d in sorted(verdict["per_class"].items()))
    line = "%s after %d pairs: win-rate difference %s, score difference %s, LLR %s" % (
        verdict["verdict"].upper(), verdict["pairs"], _num(verdict["win_rate_diff"]),
        _num(verdict["score_diff"]), _num(verdict["llr"]))
    page = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Gate report: %(run)s</title>
<style>
body { font-family: sans-serif; max-width: 60em; margin: 2em auto; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
.verdict { font-size: 1.3em; font-weight: bold; }
%(verdict_css)s
figure { margin: 1.5em 0; }
</style></head>
<body>
<h1>Gate report: %(run)s</h1>
<p id="verdict" class="verdict %(cls)s">%(line)s</p>
<table id="numbers">%(table)s</table>
<h2>Sequential test</h2>
<figure id="plot-llr">%(llr)s</figure>
<h2>Score difference</h2>
<figure id="plot-score">%(score)s</figure>
<h2>By encounter class</h2>
<figure id="plot-classes">%(classes)s</figure>
<table id="classes"><tr><th>class</th><th>pairs</th><th>only candidate won</th>
<th>only champion won</th><th>win-rate difference</th><th>score difference</th></tr>
%(cls_rows)s</table>
</body></html>
""" % {"run": html.escape(str(verdict.get("run", os.path.basename(os.path.abspath(run_dir))))),
       "cls": html.escape(verdict["verdict"]), "line": html.escape(line), "table": table,
       "llr": svg_llr, "score": svg_score, "classes": svg_classes, "cls_rows": cls,
       "verdict_css": ".%s { color: #2e7d32; } .%s { color: #c62828; } .%s { color: #6d4c41; }"
       % (VERDICT_PROMOTE, VERDICT_REJECT, VERDICT_INCONCLUSIVE)}
    path = os.path.join(out, "report.html")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(page)
    os.replace(tmp, path)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m spirefleet.gate_report",
                                description="write a gate run's HTML report and plots")
    p.add_argument("run_dir")
    p.add_argument("--out", help="directory for the report (default RUN_DIR/gate)")
    a = p.parse_args(argv)
    try:
        path = write_report(a.run_dir, a.out)
    except ValueError as e:
        print("gate report: %s" % e, file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
