#!/usr/bin/python3
"""The gate report in a real browser: the page renders in headless Chromium,
its verdict line and every plot are in the DOM, the screenshot is not blank,
and a broken input names its file.

usage: test_gate_report.py RUN_DIR   (TAP; RUN_DIR holds gate/verdict.json and
gate/pairs.jsonl, e.g. from a gate run of the integration tests)
"""
import functools
import os
import shutil
import subprocess
import sys
import tempfile

from pytap import main, scratch, test

from spirefleet import gate_report

RUN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="sf-gate-report-")
CHROMIUM = shutil.which("chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium(*args):
    ud = tempfile.mkdtemp(dir=WORK, prefix="profile-")
    return subprocess.run([CHROMIUM] + FLAGS + ["--user-data-dir=" + ud] + list(args),
                          capture_output=True, text=True, timeout=120)


@functools.cache
def page():
    """The report, written once by whichever case asks first."""
    return gate_report.write_report(RUN, os.path.join(WORK, "out"))


@test
def report_is_written():
    out = os.path.dirname(page())
    for name in ("report.html", "llr.png", "llr.svg", "score.png", "score.svg",
                 "classes.png", "classes.svg"):
        p = os.path.join(out, name)
        assert os.path.getsize(p) > 1000, p


@test
def the_page_renders_with_its_plots():
    assert CHROMIUM, "chromium is not installed (scripts/packages.txt lists it)"
    r = chromium("--dump-dom", "file://" + page())
    dom = r.stdout
    assert r.returncode == 0, r.stderr[-500:]
    verdict, _ = gate_report.load(RUN)
    assert 'id="verdict"' in dom and verdict["verdict"].upper() in dom, dom[:500]
    for fig in ("plot-llr", "plot-score", "plot-classes"):
        i = dom.index('id="%s"' % fig)
        assert "<svg" in dom[i:i + 4000], fig
    # the plots' axes were drawn (matplotlib writes paths for lines and bars)
    assert dom.count("<path") > 50, dom.count("<path")


@test
def the_screenshot_is_not_blank():
    shot = os.path.join(scratch(), "shot.png")
    r = chromium("--screenshot=" + shot, "--window-size=1000,2400", "file://" + page())
    assert r.returncode == 0 and os.path.exists(shot), r.stderr[-500:]
    import matplotlib.image as mpimg
    img = mpimg.imread(shot)
    # many distinct colours: text, lines, bars (a blank page has one)
    flat = (img[..., :3] * 255).astype(int).reshape(-1, 3)
    colours = len({tuple(c) for c in flat[::97]})
    assert colours > 50, colours


@test
def a_broken_input_names_its_file():
    bad = os.path.join(scratch(), "bad", "gate")
    os.makedirs(bad)
    shutil.copy(os.path.join(RUN, "gate", "pairs.jsonl"), bad)
    with open(os.path.join(bad, "verdict.json"), "w") as f:
        f.write('{"verdict": "promote"}')
    try:
        gate_report.load(os.path.dirname(bad))
    except ValueError as e:
        assert "verdict.json: missing keys" in str(e), str(e)
    else:
        raise AssertionError("accepted a verdict without its numbers")


if __name__ == "__main__":
    sys.exit(main(lambda: shutil.rmtree(WORK, ignore_errors=True)))
