#!/usr/bin/python3
"""Canary tolerances per output and precision, in Python and in C (TAP).

usage: test_canary_tolerance.py SF_MODEL SOURCE_ROOT
       (PYTHONPATH: <build>/python)

Checks that python/spirefleet/model.py and the C model runtime (model/)
agree on the metadata keys, the output names and the rule of the measured
defaults; that each reads what the other wrote; and, on the trained
fixture (tests/fixtures/models/trained-tiny.safetensors, made by
train_tiny.py):
(a) the cpu backend passes its canary in fp32, (b) PyTorch's tf32 and bf16
emulation stays within the recorded tolerances while the old single
absolute 0.02 would refuse it, (c) an output moved beyond its tolerance is
refused by sf-model with a message naming it.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from pytap import main, scratch, test
import torch

from spirefleet import model as M

SF_MODEL, ROOT = sys.argv[1], sys.argv[2]
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "models", "trained-tiny.safetensors")
WORK = tempfile.mkdtemp(prefix="sf-canary-tol-")


def run(*args):
    p = subprocess.run([SF_MODEL, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=600)
    return p.returncode, p.stdout


def info_tolerances(text):
    """{precision: {output: {abs, rel}}} from `sf-model info` lines."""
    res = {}
    for line in text.splitlines():
        m = re.match(r"\s+(fp32|tf32|bf16)\s+(value .*)$", line)
        if m:
            res[m.group(1)] = {
                o: {"abs": float(a), "rel": float(r)}
                for o, a, r in re.findall(r"(\w+) abs (\S+) rel ([^,\s]+)", m.group(2))}
    return res


def c_bundle(name, seed):
    path = os.path.join(scratch(), name)
    rc, out = run("random", "--arch", "tiny", "--seed", str(seed), "--canary", "8", path)
    assert rc == 0, out
    return path


def fixture():
    return M.load_bundle(FIXTURE)


@test
def key_names_and_rule_agree_with_the_c_sources():
    """The names and numbers Python uses are the ones the model runtime compiles."""
    with open(os.path.join(ROOT, "model", "net.c")) as f:
        net_c = f.read()
    with open(os.path.join(ROOT, "model", "model.h")) as f:
        model_h = f.read()

    def c_array(name):
        m = re.search(r"const double %s\[SF_PRECISIONS\] = \{([^}]*)\};" % name, net_c)
        assert m, name + " not found in net.c"
        return [float(x) for x in m.group(1).split(",")]
    assert c_array("sf_canary_tol_rel") == [M.TOL_REL[p] for p in M.PRECISIONS]
    assert c_array("sf_canary_tol_abs_floor") == [M.TOL_ABS_FLOOR[p] for p in M.PRECISIONS]
    m = re.search(r"#define SF_CANARY_TOL_MARGIN ([0-9.]+)", model_h)
    assert m and float(m.group(1)) == M.TOL_MARGIN
    m = re.search(r'static const char \*const names\[SF_CANARY_OUTPUTS\] = \{([^}]*)\}', net_c)
    assert m and tuple(re.findall(r'"(\w+)"', m.group(1))) == M.OUTPUT_ARRAYS
    m = re.search(r"typedef enum sf_precision \{([^}]*)\}", model_h)
    assert m and tuple(x.lower() for x in re.findall(r"SF_PREC_(\w+)", m.group(1))) == M.PRECISIONS
    for macro, value in (("SF_CANARY_TOL_KEY_PREFIX", M.TOLERANCE_KEY_PREFIX),
                         ("SF_CANARY_TOL_V1_KEY", M.TOLERANCE_V1_KEY),
                         ("SF_CANARY_TOL_SOURCE_KEY", M.TOLERANCE_SOURCE_KEY)):
        m = re.search(r'#define %s\s+"([^"]*)"' % macro, model_h)
        assert m and m.group(1) == value, (macro, m and m.group(1), value)
    m = re.search(r"#define SF_BUNDLE_FORMAT_VERSION (\d+)", model_h)
    assert m and int(m.group(1)) == M.BUNDLE_FORMAT_VERSION


@test
def c_written_tolerances_read_in_python():
    """sf-model random records exactly TOLERANCE_KEYS (+ the source), with
    the outputs in order, rel = TOL_REL, fp32 at the floors (the cpu made
    the expected outputs, so it measures 0) and some output of every
    precision at its floor."""
    path = c_bundle("c.safetensors", 4)
    tensors, meta = M.read_safetensors(path)
    keys = {k for k in meta if k.startswith("canary_tolerance")}
    assert keys == set(M.TOLERANCE_KEYS) | {M.TOLERANCE_SOURCE_KEY}, keys
    assert meta["format_version"] == str(M.BUNDLE_FORMAT_VERSION)
    for key in M.TOLERANCE_KEYS:
        assert tuple(json.loads(meta[key])) == M.OUTPUT_ARRAYS, meta[key]
    tol = M.bundle_tolerances(meta, path)
    for p in M.PRECISIONS:
        assert all(tol[p][k]["rel"] == M.TOL_REL[p] for k in M.OUTPUT_ARRAYS), tol[p]
        assert min(tol[p][k]["abs"] for k in M.OUTPUT_ARRAYS) == M.TOL_ABS_FLOOR[p], tol[p]
    assert all(tol["fp32"][k]["abs"] == M.TOL_ABS_FLOOR["fp32"] for k in M.OUTPUT_ARRAYS)
    rc, out = run("info", path)
    assert rc == 0 and info_tolerances(out) == tol, out
    # PyTorch's measurement of the C bundle gives the same rule's numbers
    # within a factor of 2 (the two emulations differ in summation order).
    _, arch, weights, _, canary, expected = M.load_bundle(path)
    mine, _ = M.measure_tolerances(arch, weights, canary, expected)
    for p in ("tf32", "bf16"):
        for k in M.OUTPUT_ARRAYS:
            a, b = mine[p][k]["abs"], tol[p][k]["abs"]
            assert a <= 2 * b and b <= 2 * a, (p, k, a, b)
    return "C tf32 forecast abs %g, PyTorch %g" % (tol["tf32"]["forecast"]["abs"],
                                                   mine["tf32"]["forecast"]["abs"])


@test
def python_written_tolerances_read_in_c():
    """spirefleet.model init measures and records them; sf-model info shows
    the same numbers and verify passes."""
    path = os.path.join(scratch(), "py.safetensors")
    M.init_bundle(path, "tiny", 21, canary_count=8)
    _, _, _, meta, _, _ = M.load_bundle(path)
    tol = M.bundle_tolerances(meta, path)
    assert meta[M.TOLERANCE_SOURCE_KEY].startswith("measured: spirefleet.model emulation")
    rc, out = run("info", path)
    assert rc == 0 and info_tolerances(out) == tol, out
    rc, out = run("verify", path)
    assert rc == 0 and ": ok" in out, out


@test
def the_rule_on_known_errors():
    # bf16, rel 0.008: need = max(4*0.1 - 0.008*100, 4*0.01 - 0.008*0.5) = 0.036
    t = M.derive_tolerance("bf16", np.array([0.1, 0.01]), np.array([100.0, 0.5]))
    assert t == {"abs": 0.036, "rel": 0.008}, t
    t = M.derive_tolerance("tf32", np.array([1e-6]), np.array([3.0]))
    assert t == {"abs": M.TOL_ABS_FLOOR["tf32"], "rel": 0.002}, t
    t = M.derive_tolerance("fp32", np.array([0.0123 / 4]), np.array([0.0]))
    assert t == {"abs": 0.013, "rel": 1e-5}, t
    assert [M.round_up_2sig(x) for x in (0.2317, 0.24, 1e-4, 7.001)] == [0.24, 0.24, 1e-4, 7.1]


@test
def trained_fixture_has_real_magnitudes_and_passes_fp32_on_cpu():
    """(a) the fixture is a trained model (raw-unit forecasts of tens, a
    peaked value distribution, confident logits) and its canary passes on
    the cpu backend within the recorded fp32 tolerances."""
    _, _, _, meta, canary, exp = fixture()
    nq = canary["n_queries"]
    legal = np.arange(M.MAX_QUERIES)[None, :] < nq[:, None]
    assert np.abs(exp["forecast"]).max() > 50, np.abs(exp["forecast"]).max()
    assert exp["value"].max(axis=1).mean() > 0.5
    assert np.abs(np.where(legal, exp["policy"], 0)).max() > 10
    rc, out = run("verify", FIXTURE)
    assert rc == 0 and "on cpu/fp32" in out and ": ok" in out, out
    return out.splitlines()[2][:110]


@test
def emulated_tf32_bf16_within_recorded_tolerances_old_limit_refuses():
    """(b) PyTorch emulation of the fixture in tf32 (truncated and rounded
    conversions) and bf16 stays within the recorded tolerances; its raw-unit
    errors exceed the old single absolute 0.02, so the old scheme would
    refuse the model on a GPU."""
    _, arch, weights, meta, canary, exp = fixture()
    tol = M.bundle_tolerances(meta, FIXTURE)
    old = {k: {"abs": 0.02, "rel": 0.0} for k in M.OUTPUT_ARRAYS}
    notes = []
    for p, mode in (("tf32", "trunc"), ("tf32", "rne"), ("bf16", "trunc")):  # mode: tf32 only
        out = M.evaluate(M.emulated_model(arch, weights, p, mode), canary)
        res = M.check_tolerance(out, exp, canary, tol[p])
        worst = max(r[1] for r in res.values())
        assert worst <= 1.0, (p, mode, res)
        old_worst = max(r[1] for r in M.check_tolerance(out, exp, canary, old).values())
        if mode == "trunc":
            assert res["forecast"][0] > 0.02 and old_worst > 1.0, (p, res, old_worst)
        notes.append("%s forecast %.3g (%.2f of tolerance, %.1f of old 0.02)"
                     % (p + "/" + mode if p == "tf32" else p, res["forecast"][0],
                        res["forecast"][1], old_worst))
    rc, out = run("emulate", FIXTURE)
    assert rc == 0 and out.count(": ok") == 3, out
    # The same bundle read as format 1 (one canary_tolerance 1e-4 -> 0.02 in
    # tf32/bf16) fails the C emulation, naming the output.
    t, m = M.read_safetensors(FIXTURE)
    for k in M.TOLERANCE_KEYS + (M.TOLERANCE_SOURCE_KEY,):
        del m[k]
    m.update({"format_version": "1", M.TOLERANCE_V1_KEY: "0.0001"})
    v1 = os.path.join(scratch(), "v1.safetensors")
    M.write_safetensors(v1, t, m)
    rc, out = run("emulate", v1)
    assert rc == 1 and "in tf32 (emulated)" in out and "abs 0.02 + rel 0 x" in out, out
    return "; ".join(notes)


@test
def perturbed_output_beyond_tolerance_is_refused_naming_it():
    """(c) a policy logit of the fixture's canary moved by twice its fp32
    limit: sf-model verify exits 1 naming the position, the output, the
    precision and both parts; Python's check agrees."""
    t, m = M.read_safetensors(FIXTURE)
    tol = M.bundle_tolerances(m, FIXTURE)["fp32"]["policy"]
    pos, q = 6, 2
    want = float(t["canary.policy"][pos, q])
    t["canary.policy"][pos, q] += np.float32(2 * (tol["abs"] + tol["rel"] * abs(want)))
    bad = os.path.join(scratch(), "perturbed.safetensors")
    M.write_safetensors(bad, t, m)
    rc, out = run("verify", bad)
    assert rc == 1, out
    assert ("canary failed on the cpu backend in fp32: golden position %d output policy[%d]"
            % (pos, q)) in out, out
    assert "(fp32 tolerance of policy: abs 0.0001 + rel 1e-05 x |expected|)" in out, out
    _, arch, weights, _, canary, exp = M.load_bundle(bad)
    res = M.check_tolerance(M.evaluate(M.model_from_weights(arch, weights, torch.float64),
                                       canary), exp, canary, M.bundle_tolerances(m)["fp32"])
    assert 1.8 < res["policy"][1] < 2.2, res


@test
def python_reader_refuses_bad_tolerances_naming_them():
    _, m = M.read_safetensors(FIXTURE)
    good = json.loads(m["canary_tolerance_bf16"])

    def refused(change, words):
        mm = dict(m)
        change(mm)
        try:
            M.bundle_tolerances(mm, "x.safetensors")
        except ValueError as e:
            assert words in str(e) and "x.safetensors" in str(e), str(e)
            return
        raise AssertionError("accepted: " + words)
    refused(lambda mm: mm.pop("canary_tolerance_tf32"),
            'metadata "canary_tolerance_tf32" is missing')
    refused(lambda mm: mm.update(canary_tolerance_bf16=json.dumps(
        {k: v for k, v in good.items() if k != "policy"})),
        'metadata "canary_tolerance_bf16": output "policy" is missing')
    refused(lambda mm: mm.update(
        canary_tolerance_bf16=json.dumps(dict(good, logits=good["value"]))),
            'unknown output "logits"')
    refused(lambda mm: mm.update(canary_tolerance_bf16=json.dumps(
        dict(good, forecast={"abs": -1, "rel": 0}))), 'output "forecast": "abs" must be')
    refused(lambda mm: mm.update(canary_tolerance_bf16='{"value": 1'), "is not JSON")
    refused(lambda mm: mm.update(canary_tolerance="0.02"),
            'metadata "canary_tolerance" is a bundle format 1 key')
    try:
        M.save_bundle(os.path.join(scratch(), "f.safetensors"), "tiny", M.ARCHS["tiny"], {}, None,
                      None, 0.02)
        raise AssertionError("a float tolerance was accepted")
    except ValueError as e:
        assert "bundle format 1" in str(e), str(e)


@test
def parity_without_a_gpu_fails_cleanly():
    rc, out = run("parity", "--precision", "bf16", FIXTURE)
    if rc == 0:
        return "a GPU is present: " + out.splitlines()[-1]
    assert rc == 1 and "cuda backend" in out, out
    assert "Segmentation" not in out and "Aborted" not in out, out
    return out.strip().splitlines()[-1][:100]


if __name__ == "__main__":
    sys.exit(main(lambda: shutil.rmtree(WORK, ignore_errors=True)))
