#!/usr/bin/python3
"""The trainer on real self-play labels: python3 -m spirefleet.train and
python3 -m spirefleet.export (docs/trainer.md).

usage: test_train.py SF_FLEET SF_SHARD SF_MODEL SOURCE_ROOT   (TAP on stdout)

A tiny self-play run (sf-fleet run: 16 fights of honest search at 100
simulations, two shards) provides the labels. The tests: the train section
comes from `sf-fleet check --json`; overfitting one shard drives every loss
far below its baseline; the exported bundle passes `sf-model verify` with
the printed SHA-256, carries its lineage, and the C cpu backend matches
PyTorch on the validation positions (`sf-model parity`, cuda against cpu,
where a GPU is usable); a run stopped or killed mid-way and rerun ends with
the weights of an uninterrupted one, bit for bit; the window takes whole
shards newest first; bad config values and damaged shards are reported
with their file.
"""

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from pytap import main, scratch, test
from selfplay import fights_config

from spirefleet import model as M
from spirefleet.batch import WindowRecords
from spirefleet.config import load_config
from spirefleet.train import load_checkpoint, positions_of, train
from spirefleet.window import Records, WindowError, find_shards, select_window, split_by_seed

SF_FLEET, SF_SHARD, SF_MODEL, ROOT = sys.argv[1:5]
os.environ["SF_FLEET"] = SF_FLEET
WORK = tempfile.mkdtemp(prefix="sf-train-test-")
OUT = os.path.join(WORK, "run")
PY = "/usr/bin/python3"
PARENT = "ab" * 32

GEN = fights_config("trt", OUT, seed=11, count=16, job_size=8, simulations=100, trees=2,
                    workers=2)


def write_config(name, train, d=WORK):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(GEN + "train: {%s}\n" % train)
    return path


def run_train(args, check=True, timeout=300):
    r = subprocess.run([PY, "-m", "spirefleet.train"] + args, capture_output=True, text=True,
                       timeout=timeout)
    if check:
        assert r.returncode == 0, "train %s: exit %d\n%s" % (args, r.returncode, r.stderr)
    return r


def final_json(r):
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1, "stdout: %r" % r.stdout
    return json.loads(lines[0])


def shard_digests():
    """{path: (records, digest)} from sf-shard verify."""
    r = subprocess.run([SF_SHARD, "verify", os.path.join(OUT, "shards")], capture_output=True,
                       text=True, check=True)
    out = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "ok":
            out[os.path.abspath(parts[1])] = (int(parts[2]), parts[4])
    return out


r = subprocess.run([SF_FLEET, "run", write_config("gen.yaml", "")], capture_output=True,
                   text=True)
assert r.returncode == 0, r.stderr[-2000:]
SHARDS = sorted(shard_digests())
assert len(SHARDS) == 2, SHARDS
OVERFIT = write_config("overfit.yaml", "steps: 300, warmup: 20, batch: 32, lr: 0.003, "
                       "weight_decay: 0, checkpoint_every: 0, val_fraction: 0.25, "
                       "canary_positions: 8")
KEEP = write_config("keep.yaml", "steps: 300, warmup: 20, batch: 32, lr: 0.003, "
                    "weight_decay: 0, checkpoint_every: 50, val_fraction: 0.25, "
                    "canary_positions: 8")
RESUME = write_config("resume.yaml", "steps: 60, warmup: 10, batch: 32, lr: 0.003, "
                      "checkpoint_every: 10, val_fraction: 0.25, canary_positions: 8")
AUX = write_config("aux.yaml", "steps: 40, warmup: 10, batch: 32, lr: 0.003, "
                   "checkpoint_every: 10, val_fraction: 0.25, canary_positions: 8, "
                   "weight_q: 0.5, surprise: 0.3")


# Fixtures: built on first use by whichever case asks first (the cases run
# in any order: pytap), read-only afterwards.

@functools.cache
def overfit():
    """(result, checkpoint dir, seconds) of 300 steps on one shard."""
    ck = os.path.join(WORK, "ck-overfit")
    t0 = time.time()
    res = final_json(run_train([OVERFIT, "--shards", SHARDS[0], "--checkpoint", ck,
                                "--threads", "1", "--parent-sha256", PARENT]))
    return res, ck, time.time() - t0


@functools.cache
def bundle():
    """The overfit network exported as a bundle."""
    out = os.path.join(WORK, "overfit.safetensors")
    r = subprocess.run([PY, "-m", "spirefleet.export", overfit()[1], out], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    return out


@functools.cache
def reference():
    """(result, checkpoint dir) of the uninterrupted 60-step run on the
    default window (every shard under <run.output_dir>/shards)."""
    ck = os.path.join(WORK, "ck-ref")
    return final_json(run_train([RESUME, "--checkpoint", ck, "--threads", "1"])), ck


@test
def train_section_comes_from_sf_fleet_check_json():
    """The effective config (every key, the C schema's defaults) through
    sf-fleet check --json, and the digest sf-fleet prints."""
    cfg, digest = load_config(OVERFIT)
    t = cfg["train"]
    assert t["steps"] == 300 and t["batch"] == 32 and t["lr"] == 0.003, t
    assert t["window_labels"] == 200000 and t["arch"] == "tiny", t   # defaults filled
    assert t["weight_value"] == 1 and t["weight_forecast"] == 0.25, t
    r = subprocess.run([SF_FLEET, "check", OVERFIT], capture_output=True, text=True, check=True)
    assert ("config digest %s" % digest) in r.stdout
    assert set(cfg) >= {"run", "seeds", "play", "search", "labels", "train"}, sorted(cfg)


@test
def overfitting_one_shard_beats_every_baseline():
    """300 steps on one shard's training split: every head's loss on the
    training records well below what knowing nothing of the position
    reaches (value: within half the gap from the best baseline to the
    target's entropy; policy: the same against uniform; forecast: under a
    quarter of persistence and of the column means)."""
    res, _, secs = overfit()
    tr, b = res["train"], res["train_baseline"]
    best_value = min(b["value"], b["value_encounter"])
    floor_v, floor_p = b["value_target_entropy"], b["policy_target_entropy"]
    assert tr["value"] - floor_v <= 0.5 * (best_value - floor_v), (tr, b)
    assert tr["policy"] - floor_p <= 0.5 * (b["policy"] - floor_p), (tr, b)
    assert tr["forecast"] <= 0.25 * min(b["forecast"], b["forecast_mean"]), (tr, b)
    assert res["labels"] == res["train_records"] + res["val_records"]
    assert res["shards"] == [shard_digests()[SHARDS[0]][1]]
    assert set(res["val"]) == {"value", "policy", "forecast", "win"}
    assert {"value", "value_encounter", "policy", "forecast"} <= set(res["baseline"])
    return ("%.1f s; train value %.3f (marginal %.3f, per encounter %.3f, floor %.3f), "
            "policy %.3f (uniform %.3f, floor %.3f), forecast %.3f (persistence %.3f, means %.3f)"
            % (secs, tr["value"], b["value"], b["value_encounter"], floor_v, tr["policy"],
               b["policy"], floor_p, tr["forecast"], b["forecast"], b["forecast_mean"]))


@test
def metrics_are_json_lines_per_step_epoch_and_final():
    path = os.path.join(overfit()[1], "metrics.jsonl")
    lines = [json.loads(ln) for ln in open(path)]
    steps = [d["step"] for d in lines if d["kind"] == "step"]
    assert steps == list(range(300)), steps[:5]
    assert any(d["kind"] == "epoch" for d in lines)
    final = [d for d in lines if d["kind"] == "final"]
    assert len(final) == 1 and "baseline_value_encounter" in final[0], final
    assert final[0]["val_value"] == overfit()[0]["val"]["value"]


@test
def keep_best_exports_the_checkpoint_with_the_lowest_validation_loss():
    """train.keep best (the default) on a window one shard small enough to
    overfit: the validation losses logged every 50 steps rise after their
    minimum; final.pt holds that step's weights (its validation losses
    are the ones logged there, recomputed), not the last step's. With
    keep last the same run ends on step 300."""
    wv, wp, wf, ww = 1, 1, 0.25, 0.25  # the train.weight_* defaults
    ck = os.path.join(scratch(), "ck-keep")
    res = final_json(run_train([KEEP, "--shards", SHARDS[0], "--checkpoint", ck,
                                "--threads", "1"]))
    lines = [json.loads(ln) for ln in open(os.path.join(ck, "metrics.jsonl"))]
    vals = {d["step"] + 1: d for d in lines if d["kind"] == "val"}
    assert sorted(vals) == [50, 100, 150, 200, 250], sorted(vals)
    final = [d for d in lines if d["kind"] == "final"][0]
    total = {s: wv * d["val_value"] + wp * d["val_policy"] + wf * d["val_forecast"]
             + ww * d["val_win"] for s, d in vals.items()}
    total[300] = final["val_loss_last_step"]
    want = min(total, key=total.get)
    assert want < 300, ("the window did not overfit; the test needs it to", total)
    assert res["kept_step"] == want == final["kept_step"], (res["kept_step"], total)
    for head in ("value", "policy", "forecast", "win"):
        assert abs(res["val"][head] - vals[want]["val_" + head]) < 1e-9, (head, res["val"])
    last = write_config("keep-last.yaml", "steps: 300, warmup: 20, batch: 32, lr: 0.003, "
                        "weight_decay: 0, checkpoint_every: 50, val_fraction: 0.25, "
                        "canary_positions: 8, keep: last", scratch())
    res_last = final_json(run_train([last, "--shards", SHARDS[0], "--checkpoint",
                                     os.path.join(scratch(), "ck-keep-last"), "--threads",
                                     "1"]))
    assert res_last["kept_step"] == 300, res_last["kept_step"]
    last_total = (wv * res_last["val"]["value"] + wp * res_last["val"]["policy"]
                  + wf * res_last["val"]["forecast"] + ww * res_last["val"]["win"])
    assert abs(last_total - total[300]) < 1e-9, (last_total, total[300])
    return "kept step %d of 300: validation loss %.3f against %.3f at the end" % (
        want, total[want], total[300])


@test
def rerun_after_the_end_prints_the_result_again():
    first, ck, _ = overfit()
    res = final_json(run_train([OVERFIT, "--shards", SHARDS[0], "--checkpoint", ck]))
    assert res == first, (res, first)


@test
def export_passes_sf_model_verify_and_carries_its_lineage():
    overfit_res, ck, _ = overfit()
    out = os.path.join(scratch(), "overfit.safetensors")
    r = subprocess.run([PY, "-m", "spirefleet.export", ck, out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["bundle"] == out and res["sha256"] == M.sha256_file(out), res
    v = subprocess.run([SF_MODEL, "verify", "--sha256", res["sha256"], out], capture_output=True,
                       text=True)
    assert v.returncode == 0, v.stdout + v.stderr
    _, _, _, meta, canary, _ = M.load_bundle(out)
    records, digest = shard_digests()[SHARDS[0]]
    _, cfg_digest = load_config(OVERFIT)
    assert meta["parent_sha256"] == PARENT, meta["parent_sha256"]
    assert meta["trained_on_shards"] == digest, meta["trained_on_shards"]
    assert meta["trained_on_labels"] == str(records), (meta["trained_on_labels"], records)
    assert meta["config_digest"] == cfg_digest
    assert json.loads(meta["val_losses"])["value"] == round(overfit_res["val"]["value"], 6)
    assert json.loads(meta["train_config"])["steps"] == 300
    assert len(canary["n_tokens"]) == 8 and canary["n_queries"].min() >= 1
    # the canary is real positions of the validation split
    rec = WindowRecords(find_shards([SHARDS[0]]))
    _, va = split_by_seed(rec, 0.25, 0)
    ck_ = load_checkpoint(os.path.join(ck, "final.pt"))
    assert set(ck_["canary_rows"].tolist()) <= set(va.tolist())
    # overrides on the command line win
    out2 = os.path.join(scratch(), "overfit2.safetensors")
    r = subprocess.run([PY, "-m", "spirefleet.export", os.path.join(ck, "final.pt"), out2,
                        "--parent-sha256", "cd" * 32, "--config-digest", "ef" * 32],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    meta2 = M.load_bundle(out2)[3]
    assert meta2["parent_sha256"] == "cd" * 32 and meta2["config_digest"] == "ef" * 32
    return "sha256 %s" % res["sha256"][:16]


@test
def cpu_backend_matches_pytorch_on_validation_positions():
    """sf-model eval (the C cpu backend) against the PyTorch float64
    reference on every validation position, within the bundle's fp32
    tolerances."""
    out = bundle()
    _, arch, weights, meta, _, _ = M.load_bundle(out)
    rec = WindowRecords(find_shards([SHARDS[0]]))
    _, va = split_by_seed(rec, 0.25, 0)
    pos = positions_of(rec, va)
    pfile = os.path.join(scratch(), "val-positions.safetensors")
    M.write_positions(pfile, pos)
    ofile = os.path.join(scratch(), "val-outputs.safetensors")
    r = subprocess.run([SF_MODEL, "eval", out, pfile, ofile], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got, _ = M.read_safetensors(ofile)
    want = M.evaluate(M.model_from_weights(arch, weights, torch.float64), pos)
    res = M.check_tolerance(got, want, pos, M.bundle_tolerances(meta)["fp32"])
    worst = max(v[1] for v in res.values())
    assert worst <= 1, res
    return "%d positions, at most %.2f of the fp32 tolerance" % (len(va), worst)


@test
def parity_cuda_against_cpu_where_a_gpu_is_usable():
    r = subprocess.run([SF_MODEL, "parity", bundle()], capture_output=True, text=True)
    if r.returncode != 0 and ("cuda" in r.stderr.lower() or "gpu" in r.stderr.lower()):
        return "SKIP no usable GPU (%s)" % r.stderr.strip().splitlines()[-1][:80]
    assert r.returncode == 0, r.stdout + r.stderr


def weights_of(ckdir):
    return load_checkpoint(os.path.join(ckdir, "final.pt"))["model"]


def assert_same_weights(a, b):
    wa, wb = weights_of(a), weights_of(b)
    assert list(wa) == list(wb)
    for k in wa:
        assert torch.equal(wa[k], wb[k]), "%s differs" % k


def metric_lines(ckdir):
    out = []
    for ln in open(os.path.join(ckdir, "metrics.jsonl")):
        d = json.loads(ln)
        if d["kind"] == "resume":
            continue
        d.pop("seconds", None)
        out.append(d)
    return out


@test
def uninterrupted_reference_run():
    """The reference: 60 steps on the default window (every shard under
    <run.output_dir>/shards), checkpoints every 10 steps."""
    res, ck = reference()
    assert len(res["shards"]) == 2 and res["labels"] == sum(
        n for n, _ in shard_digests().values())
    assert not [f for f in os.listdir(ck) if f.startswith("ckpt-")]


@test
def stopped_and_rerun_gives_the_same_weights_bit_for_bit():
    ref, ref_ck = reference()
    ck = os.path.join(scratch(), "ck-stop")
    r = run_train([RESUME, "--checkpoint", ck, "--threads", "1", "--stop-after-steps", "25"],
                  check=False)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert r.stdout == ""
    files = sorted(os.listdir(ck))
    assert files == ["ckpt-00000010.pt", "ckpt-00000020.pt", "metrics.jsonl"], files
    res = final_json(run_train([RESUME, "--checkpoint", ck, "--threads", "1"]))
    assert_same_weights(ref_ck, ck)
    for k in ("val", "baseline", "train", "shards", "labels", "train_records"):
        assert res[k] == ref[k], (k, res[k], ref[k])
    assert metric_lines(ck) == metric_lines(ref_ck)


@test
def killed_and_rerun_gives_the_same_weights_bit_for_bit():
    ref_ck = reference()[1]
    ck = os.path.join(scratch(), "ck-kill")
    p = subprocess.Popen([PY, "-m", "spirefleet.train", RESUME, "--checkpoint", ck,
                          "--threads", "1"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    first = os.path.join(ck, "ckpt-00000010.pt")
    deadline = time.time() + 120
    while not os.path.exists(first) and p.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert p.returncode == -signal.SIGKILL, p.returncode
    assert not os.path.exists(os.path.join(ck, "final.pt")), "finished before the kill"
    done = [f for f in os.listdir(ck) if f.startswith("ckpt-") and f.endswith(".pt")]
    run_train([RESUME, "--checkpoint", ck, "--threads", "1"])
    assert_same_weights(ref_ck, ck)
    return "killed with %s written" % ", ".join(sorted(done))


@test
def q_target_is_the_chosen_moves_completed_q_as_sf_shard_reads_it():
    """WindowRecords.q_chosen (the auxiliary target) against the C decoder's JSON:
    search.completed_q[search.chosen] of every searched record, in shard
    order (0, masked out by q_searched, for one a single action made)."""
    info = find_shards([SHARDS[0]])
    rec = WindowRecords(info)
    r = subprocess.run([SF_SHARD, "cat", SHARDS[0], "--json"], capture_output=True, text=True,
                       check=True)
    want, searched = [], []
    for line in r.stdout.splitlines():
        d = json.loads(line)["record"]
        if d["outcome"].get("engine_limit"):
            continue
        sr = d["search"]
        searched.append(bool(sr.get("searched")))
        want.append(sr["completed_q"][sr["chosen"]] if searched[-1] else 0.0)
    assert len(want) == rec.n, (len(want), rec.n)
    assert rec.q_searched.tolist() == searched
    assert max(abs(a - b) for a, b in zip(want, rec.q_chosen.tolist())) < 1e-6
    assert len(set(want)) > 1


@test
def surprise_weights_by_hand():
    """Two records: the value head certain of a win (E[v] = 1) against a
    Q of 0.5, and certain of bin 5 (0.5) against Q 0.5: surprises 0.5 and
    0, so with strength 0.3 the weights are 0.7 + 0.3 * s / 0.25 = 1.3 and
    0.7 (mean 1); strength 0 weighs nothing."""
    from spirefleet.train import surprise_weights
    logits = torch.full((2, 21), -1e4)
    logits[0, 20] = 0.0
    logits[1, 5] = 0.0
    q = torch.tensor([0.5, 0.5])
    w = surprise_weights(logits, q, 0.3)
    assert torch.allclose(w, torch.tensor([1.3, 0.7]), atol=1e-5), w
    assert surprise_weights(logits, q, 0.0) is None
    # a third record the search did not search (one legal action, Q 0 as
    # stored) weighs 1 and leaves the others' mean surprise alone
    logits3 = torch.cat([logits, logits[:1]])
    q3 = torch.tensor([0.5, 0.5, 0.0])
    w3 = surprise_weights(logits3, q3, 0.3, torch.tensor([True, True, False]))
    assert torch.allclose(w3, torch.tensor([1.3, 0.7, 1.0]), atol=1e-5), w3


@test
def auxiliary_q_head_trains_resumes_bit_for_bit_and_stays_out_of_the_bundle():
    """train.weight_q and train.surprise: the step metrics carry the Q head's
    loss, a run stopped after 25 steps and rerun ends with the weights of an
    uninterrupted one (the head's own weights restored from the checkpoint),
    and the exported bundle holds exactly the network's weights."""
    ref, ck = os.path.join(scratch(), "ck-aux-ref"), os.path.join(scratch(), "ck-aux")
    res = final_json(run_train([AUX, "--checkpoint", ref, "--threads", "1"]))
    steps = [d for d in metric_lines(ref) if d["kind"] == "step"]
    assert len(steps) == 40 and all("train_q" in d for d in steps), steps[0]
    first = sum(d["train_q"] for d in steps[:10]) / 10
    last = sum(d["train_q"] for d in steps[-10:]) / 10
    assert last < first, (first, last)
    r = run_train([AUX, "--checkpoint", ck, "--threads", "1", "--stop-after-steps", "25"],
                  check=False)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert load_checkpoint(os.path.join(ck, "ckpt-00000020.pt"))["aux"] is not None
    again = final_json(run_train([AUX, "--checkpoint", ck, "--threads", "1"]))
    assert_same_weights(ref, ck)
    assert again["val"] == res["val"], (again["val"], res["val"])
    out = os.path.join(scratch(), "aux.safetensors")
    e = subprocess.run([PY, "-m", "spirefleet.export", os.path.join(ref, "final.pt"), out],
                       capture_output=True, text=True)
    assert e.returncode == 0, e.stderr
    names = set(M.load_bundle(out)[2])
    want = {s[0] for s in M.weight_specs(M.ARCHS["tiny"])}
    assert names == want, sorted(names ^ want)
    return "Q loss %.4f -> %.4f over 40 steps" % (first, last)


@test
def window_takes_whole_shards_newest_first():
    found = find_shards([os.path.join(OUT, "shards")])
    assert len(found) == 2
    key = [(i["run_id"], i["job_id"]) for i in found]  # never a clock
    assert key == sorted(key, reverse=True), key
    assert [i["path"] for i in select_window(found, 1)] == [found[0]["path"]]
    n0 = found[0]["labels"]
    assert len(select_window(found, n0)) == 1
    assert len(select_window(found, n0 + 1)) == 2
    # files are taken in the order given (newest first), found twice once
    both = find_shards([found[1]["path"], found[0]["path"], found[1]["path"]])
    assert [i["path"] for i in both] == [found[1]["path"], found[0]["path"]]


@test
def labels_of_another_tokenizer_stay_out_of_training():
    """The window refuses a shard whose labels another tokenizer version
    wrote, naming the file; the shards of this build's version load."""
    found = find_shards([SHARDS[0]])
    for reader in (WindowRecords, Records):
        assert len(reader(found, tokenizer_version=M.FEAT_VERSION)) > 0
        try:
            reader(found, tokenizer_version=M.FEAT_VERSION + 1)
        except WindowError as e:
            msg = str(e)
        else:
            raise AssertionError("a shard of another tokenizer version was read")
        assert msg.startswith(SHARDS[0] + ": labels of tokenizer version %d"
                              % M.FEAT_VERSION), msg
        assert "reads tokenizer version %d" % (M.FEAT_VERSION + 1) in msg, msg


@test
def bad_train_value_names_file_line_and_column():
    bad = os.path.join(ROOT, "tests", "fixtures", "configs", "bad", "train-lr.yaml")
    r = run_train([bad], check=False)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "train-lr.yaml:6:7: train.lr: 0 is out of range" in r.stderr, r.stderr
    assert r.stdout == ""


@test
def damaged_shard_is_an_error_naming_the_file():
    dmg = os.path.join(scratch(), "damaged.shard")
    shutil.copy(SHARDS[0], dmg)
    with open(dmg, "r+b") as f:
        f.truncate(os.path.getsize(dmg) - 100)
    ck = os.path.join(scratch(), "ck-dmg")
    r = run_train([OVERFIT, "--shards", dmg, "--checkpoint", ck], check=False)
    assert r.returncode == 1 and dmg in r.stderr, (r.returncode, r.stderr)


@test
def flag_form_trains_and_exports_a_bundle():
    """python3 -m spirefleet.train --shards ... --out ... (no config): the
    flags become a train section checked by sf-fleet."""
    out = os.path.join(scratch(), "flags.safetensors")
    res = final_json(run_train(["--shards", SHARDS[1], "--out", out, "--steps", "20",
                                "--threads", "1", "--val-fraction", "0.3"]))
    assert res["sha256"] == M.sha256_file(out) and res["checkpoint"] is None, res
    v = subprocess.run([SF_MODEL, "verify", "--sha256", res["sha256"], out], capture_output=True,
                       text=True)
    assert v.returncode == 0, v.stdout + v.stderr
    assert json.loads(M.load_bundle(out)[3]["train_config"])["steps"] == 20
    r = run_train(["--shards", SHARDS[1], "--out", out, "--steps", "0"], check=False)
    assert r.returncode == 2 and "train.steps: 0 is out of range" in r.stderr, r.stderr


PER_RECORD = ("value_bins", "forecast", "forecast_mask", "won", "game_seed", "encounter_id",
              "q_chosen", "q_searched", "n_tokens", "n_queries", "persist", "policy_plogp")


@test
def c_window_batches_equal_the_python_oracle():
    """WindowRecords (the trainer's reader: the C batch path) against
    window.Records (decoded and padded in Python) on both shards: the same
    per-record arrays (dtype and values), and for batches of a shuffled
    order, of single records and of the whole window the same keys, dtypes,
    shapes and values."""
    found = find_shards([os.path.join(OUT, "shards")])
    c, py = WindowRecords(found), Records(found)
    assert len(c) == len(py) > 0
    for k in PER_RECORD:
        a, b = getattr(c, k), getattr(py, k)
        assert a.dtype == b.dtype and np.array_equal(a, b), k
    order = np.random.Generator(np.random.PCG64([5, 0])).permutation(len(c))
    batches = [order[i:i + 32] for i in range(0, len(order), 32)]
    batches += [order[:1], np.arange(len(c)), order[::-1]]
    for idx in batches:
        got, want = c.batch(idx), py.batch(idx)
        assert set(want) <= set(got), sorted(set(want) - set(got))
        for k, w in want.items():
            g = got[k]
            assert g.dtype == w.dtype and g.shape == w.shape, (k, g.dtype, g.shape, w.dtype,
                                                               w.shape)
            assert np.array_equal(g, w), k
    return "%d records, %d batches" % (len(c), len(batches))


@test
def training_through_the_c_reader_equals_the_python_oracle_bit_for_bit():
    """train() with the C batch path (the default) and with window.Records
    (the pure-Python oracle) as the window's reader: the same weights, bit
    for bit, the same result (losses, baselines) and the same metrics."""
    cfg, digest = load_config(AUX)
    cfg["train"]["steps"] = 30
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        runs = {}
        for name, reader in (("c", WindowRecords), ("python", Records)):
            ck = os.path.join(scratch(), "ck-" + name)
            res = train(cfg, digest, [SHARDS[1], SHARDS[0]], ck, device="cpu", reader=reader)
            runs[name] = (res, ck)
    finally:
        torch.set_num_threads(threads)
    (rc, ckc), (rp, ckp) = runs["c"], runs["python"]
    assert_same_weights(ckc, ckp)
    for k in ("val", "baseline", "train", "train_baseline", "labels", "train_records",
              "val_seeds", "kept_step"):
        assert rc[k] == rp[k], (k, rc[k], rp[k])
    assert metric_lines(ckc) == metric_lines(ckp)
    cc, cp = load_checkpoint(os.path.join(ckc, "final.pt")), load_checkpoint(
        os.path.join(ckp, "final.pt"))
    for k in cc["canary"]:
        assert np.array_equal(cc["canary"][k], cp["canary"][k]), k


if __name__ == "__main__":
    sys.exit(main(lambda: shutil.rmtree(WORK, ignore_errors=True)))
