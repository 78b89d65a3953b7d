#!/usr/bin/python3
"""One source of every C fact Python needs (TAP).

usage: test_facts.py SOURCE_ROOT GEN_FACTS SHARD_FIXTURE
       (PYTHONPATH: <build>/python)

spirefleet/facts.py is generated at build time by python/gen_facts.c from
the headers of the modules that own each fact. This test fails
(a) when a Python module or script restates one of those facts by hand
    instead of importing it: a shard magic, a verdict word as a string
    literal, a tuple of verdict.json or pairs.jsonl keys, a loop.json key
    read by its literal in the loop report, a (token type, column, scale)
    triple, a tokenizer size or a canary tolerance key; and
(b) when the generated values disagree with C: the module must equal what
    gen_facts writes now; the persisted columns must read back, from the
    tokenizer's real output, the engine's own observation of the same
    positions (gen_facts --probe); a shard written by the C writer must
    carry the magics, trailer and database names facts.py states; the batch
    fields must be libsfbatch.so's table; and every string the module takes
    from a #define must be that #define's text in the owning header.
"""

import ctypes
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import lmdb
import numpy as np
from pytap import main, test

from spirefleet import facts as F
from spirefleet import label_pb2, window
from spirefleet.shard import open_shard

ROOT, GEN_FACTS, FIXTURE = sys.argv[1], sys.argv[2], sys.argv[3]
PKG = os.path.dirname(F.__file__)
WORK = tempfile.mkdtemp(prefix="sf-facts-")


def python_sources():
    """The hand-written Python files: the package's modules and any script
    (a file with a python shebang) under python/ and scripts/."""
    out = sorted(glob.glob(os.path.join(ROOT, "python", "spirefleet", "*.py")))
    for top in ("python", "scripts"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                p = os.path.join(d, f)
                if p in out or p.endswith((".c", ".h", ".build")):
                    continue
                try:
                    with open(p, encoding="utf-8") as fh:
                        first = fh.readline()
                except (OSError, UnicodeDecodeError):
                    continue
                if p.endswith(".py") or (first.startswith("#!") and "python" in first):
                    out.append(p)
    return out


def restatements(path, text):
    """Every hand-written copy of a C fact in `text`, as 'file:line: what'."""
    found = []
    rel = os.path.relpath(path, ROOT)

    def hit(m, what):
        line = text.count("\n", 0, m.start()) + 1
        found.append("%s:%d: %s (%s)" % (rel, line, what, m.group(0).strip()[:60]))

    quoted = [F.TRAILER_MAGIC.decode()] + [v.to_bytes(4, "little").decode()
                                           for v in F.BLOCK_MAGIC.values()]
    for mg in quoted:  # "SFSEAL01", b"SFB2"
        for m in re.finditer(r"""b?(['"])%s\1""" % re.escape(mg), text):
            hit(m, "a shard magic")
    for v in F.BLOCK_MAGIC.values():  # 0x32424653
        for m in re.finditer(r"\b0x0*%x\b" % v, text, re.I):
            hit(m, "a shard magic")
    for w in F.VERDICT_WORDS:
        for m in re.finditer(r"""(['"])%s\1""" % re.escape(w), text):
            hit(m, "a verdict word as a string literal")
    # a tuple or list holding three or more of verdict.json's or pairs.jsonl's keys
    for keys in (F.VERDICT_KEYS, F.PAIR_KEYS):
        strs = r"""\s*(['"])(%s)\1\s*""" % "|".join(map(re.escape, keys))
        for m in re.finditer(r"[(\[](?:%s,){2,}" % strs, text):
            hit(m, "a list of verdict.json or pairs.jsonl keys")
    # (token type, feature column, scale) triples
    for m in re.finditer(r"\(\s*\d{1,2}\s*,\s*\d{1,2}\s*,\s*\d+\.\d*\s*\)", text):
        hit(m, "a (token type, column, scale) triple")
    # the tokenizer's and the shard format's numbers assigned by hand
    for m in re.finditer(r"^(FEAT_VERSION|MAX_TOKENS|NCAT|NCONT|MAX_QUERIES|NQCONT|NTYPES|VOCAB|"
                         r"FORMAT_VERSIONS?|_FOOTER|_BLOCK_MAGIC|_TRAILER_MAGIC|TOL_REL|"
                         r"TOL_ABS_FLOOR|TOL_MARGIN|PRECISIONS|VERDICT_KEYS|BUNDLE_FORMAT|"
                         r"BUNDLE_FORMAT_VERSION|POSITIONS_FORMAT|POLICY_INPUT)\s*=", text, re.M):
        hit(m, "a C fact assigned by hand")
    for m in re.finditer(r"""(['"])(%s)[a-z0-9_]*\1""" % re.escape(F.TOLERANCE_V1_KEY), text):
        hit(m, "a canary tolerance key")
    for name in (F.COUNTER_ENGINE_LIMIT, F.COUNTER_TURN_LIMIT, F.BUNDLE_FORMAT,
                 F.POSITIONS_FORMAT, F.POLICY_INPUT):
        for m in re.finditer(r"""(['"])%s\1""" % re.escape(name), text):
            hit(m, "a shard counter or bundle format name")
    # the ctypes view of sf_err and sf_batch_dims
    for m in re.finditer(r"c_char\s*\*\s*%d\b" % F.ERR_MSG_MAX, text):
        hit(m, "sf_err's message size")
    dims = r"""\s*,\s*""".join(r"""(['"])%s\%d""" % (d, i + 1) for i, d in enumerate(F.BATCH_DIMS))
    for m in re.finditer(r"[(\[]\s*" + dims, text):
        hit(m, "sf_batch_dims's fields")
    if os.path.basename(path) == "loop_report.py":  # loop.json's reader
        keys = {v for k, v in vars(F).items()
                if k.startswith(("LOOP_KEY_", "TRAIN_RESULT_", "SIBLINGS_KEY_"))}
        for m in re.finditer(r"""(\.get\(|\[)\s*(['"])(%s)\2""" % "|".join(map(re.escape, keys)),
                             text):
            hit(m, "a loop.json key read by its literal")
    return found


@test
def no_python_module_restates_a_c_fact():
    srcs = python_sources()
    assert any(p.endswith("window.py") for p in srcs), srcs
    found = []
    for p in srcs:
        with open(p, encoding="utf-8") as f:
            found += restatements(p, f.read())
    assert not found, "restated C facts (import them from spirefleet.facts):\n" + "\n".join(found)
    return "%d files" % len(srcs)


@test
def the_scan_finds_what_it_looks_for():
    # the restatements this change removed, as they were: each must be found
    old = '''
_PERSIST = {"player_hp": (2, 0, 100.0), "monsters_alive": (1, 13, 5.0)}
_TRAILER_MAGIC = b"SFSEAL01"
_BLOCK_MAGIC = {1: 0x31424653, 2: 0x32424653}  # "SFB1", "SFB2"
VERDICT_KEYS = ("verdict", "pairs", "champion", "candidate")
for k in ("pair", "llr", "score_diff", "score_lo", "score_hi"):
colours = ["a" if verdicts.get(x) == "promote" else "b"]
TOLERANCE_V1_KEY = "canary_tolerance"
NTYPES = 12
limited = counters.get("engine_limit_fights", 0)
_fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512)]
_fields_ = [(k, ctypes.c_uint32) for k in ("b", "t", "q", "c", "f", "g")]
'''
    found = restatements(os.path.join(ROOT, "example.py"), old)
    assert sum("pairs.jsonl keys" in f for f in found) == 2, found
    for what in ("triple", "shard magic", "verdict word",
                 "canary tolerance key", "assigned by hand", "shard counter",
                 "message size", "sf_batch_dims"):
        assert any(what in f for f in found), (what, found)
    found += restatements(os.path.join(ROOT, "loop_report.py"),
                          'gens = [g for g in state.get("generations", []) if g.get("train")]')
    assert sum("loop.json key" in f for f in found) == 2, found
    return "%d found" % len(found)


@test
def facts_py_is_what_gen_facts_writes():
    out = os.path.join(WORK, "facts.py")
    subprocess.run([GEN_FACTS, out], check=True)
    with open(out) as a, open(os.path.join(PKG, "facts.py")) as b:
        assert a.read() == b.read(), "the built facts.py is stale: run ninja"


@test
def persisted_columns_read_the_engines_observation():
    r = subprocess.run([GEN_FACTS, "--probe"], capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(rows) >= 20, len(rows)
    moved = {k: set() for k in F.PERSIST}
    for i, row in enumerate(rows):
        ty = np.array(row["type"], np.uint8)
        cont = np.array(row["cont"], np.float32)
        assert cont.shape[1] == F.NCONT and ty.max() < F.NTYPES and len(ty) <= F.MAX_TOKENS
        got = window.persistence(ty, cont)
        for c, name in enumerate(window.FORECAST_COLUMNS):
            want = row["obs"][name]
            assert abs(got[c] - want) < 1e-3, "position %d: %s reads %r from the tokens, the " \
                "engine says %r (PERSIST %r)" % (i, name, got[c], want, F.PERSIST[name])
            moved[name].add(want)
    # each column took several values, so a wrong column cannot pass by luck
    assert all(len(v) >= 2 for v in moved.values()), moved
    return "%d positions" % len(rows)


@test
def a_c_written_shard_has_the_stated_bytes():
    d = os.path.join(WORK, "shards")
    os.makedirs(d)
    subprocess.run([FIXTURE, d], check=True, capture_output=True)
    path = os.path.join(d, "a.shard")
    with open(path, "rb") as f:
        data = f.read()
    foot = data[-F.TRAILER_FOOTER:]
    assert foot[:8] == F.TRAILER_MAGIC, foot[:8]
    assert int.from_bytes(foot[8:12], "little") == F.TRAILER_VERSION
    data_bytes = int.from_bytes(foot[16:24], "little")
    with open(os.path.join(WORK, "data.mdb"), "wb") as f:
        f.write(data[:data_bytes])
    env = lmdb.open(os.path.join(WORK, "data.mdb"), subdir=False, readonly=True, lock=False,
                    max_dbs=4)
    with env.begin() as txn:
        meta = env.open_db(F.DB_META, txn=txn, create=False)
        m = label_pb2.ShardManifest.FromString(txn.get(F.MANIFEST_KEY, db=meta))
        assert m.format_version == F.SHARD_FORMAT_VERSION
        assert F.SHARD_FORMAT_VERSION == max(F.SHARD_FORMAT_VERSIONS)
        recs = env.open_db(F.DB_RECORDS, txn=txn, create=False)
        first = txn.cursor(db=recs)
        assert first.first()
        magic = int.from_bytes(first.value()[:4], "little")
        assert magic == F.BLOCK_MAGIC[m.format_version], hex(magic)
    env.close()
    d1 = os.path.join(WORK, "v1")
    os.makedirs(d1)
    subprocess.run([FIXTURE, "--format=1", d1], check=True, capture_output=True)
    with open_shard(os.path.join(d1, "a.shard")) as s:
        assert s.format_version == 1 and 1 in F.SHARD_FORMAT_VERSIONS


@test
def batch_fields_are_the_librarys_table():
    lib = ctypes.CDLL(os.path.join(PKG, "libsfbatch.so"))
    lib.sf_batch_field_count.restype = ctypes.c_int
    for fn in ("sf_batch_field_name", "sf_batch_field_dtype", "sf_batch_field_dims"):
        getattr(lib, fn).restype = ctypes.c_char_p
        getattr(lib, fn).argtypes = [ctypes.c_int]
    table = tuple((lib.sf_batch_field_name(i).decode(), lib.sf_batch_field_dtype(i).decode(),
                   lib.sf_batch_field_dims(i).decode())
                  for i in range(lib.sf_batch_field_count()))
    assert table == F.BATCH_FIELDS, (table, F.BATCH_FIELDS)
    from spirefleet import batch
    with open(os.path.join(ROOT, "common", "common.h")) as f:
        msg = int(re.search(r"#define SF_ERR_MSG_MAX (\d+)", f.read()).group(1))
    assert ctypes.sizeof(batch._Err) == ctypes.sizeof(ctypes.c_int) + msg == 4 + F.ERR_MSG_MAX
    with open(os.path.join(ROOT, "shard", "batch.h")) as f:
        dims = re.search(r"typedef struct sf_batch_dims \{(.*?)\}", f.read(), re.S).group(1)
    dims = re.sub(r"/\*.*?\*/", "", dims, flags=re.S)
    names = tuple(re.findall(r"\b([a-z])\b", dims.replace("uint32_t", "")))
    assert names == F.BATCH_DIMS == tuple(k for k, _ in batch._Dims._fields_), names


def header_strings(rel):
    """{macro: value} of a header's `#define NAME "text"` lines, one level
    of `#define A B` followed."""
    with open(os.path.join(ROOT, rel)) as f:
        text = f.read()
    out = dict(re.findall(r'^#define\s+(\w+)\s+"([^"]*)"', text, re.M))
    for a, b in re.findall(r"^#define\s+(\w+)\s+(SF_\w+)\s*(?:/\*.*)?$", text, re.M):
        out.setdefault(a, out.get(b))
    return out


@test
def strings_are_the_headers_defines():
    gate = header_strings("gate/stats.h")
    loop = header_strings("sf-fleet/loop_state.h")
    loop.update({k: gate[v] for k, v in re.findall(
        r"^#define\s+(SF_LOOP_KEY_\w+)\s+(SF_GATE_VKEY_\w+)", open(
            os.path.join(ROOT, "sf-fleet/loop_state.h")).read(), re.M)})
    shard = header_strings("shard/shard.h")
    model = header_strings("model/model.h")
    checks = [
        (F.VERDICT_WORDS, tuple(gate["SF_GATE_WORD_" + w] for w in
                                ("CONTINUE", "PROMOTE", "REJECT", "INCONCLUSIVE"))),
        (F.SHARD_SUFFIX, shard["SF_SHARD_SUFFIX"]),
        (F.SHARD_TEMP_SUFFIX, shard["SF_SHARD_TEMP_SUFFIX"]),
        (F.QUARANTINE_FILE, shard["SF_SHARD_QUARANTINE_FILE"]),
        (F.TRAILER_MAGIC.decode(), shard["SF_TRAILER_MAGIC"]),
        (F.DB_META.decode(), shard["SF_DB_META"]),
        (F.DB_RECORDS.decode(), shard["SF_DB_RECORDS"]),
        (F.MANIFEST_KEY.decode(), shard["SF_MANIFEST_KEY"]),
        (F.COUNTER_ENGINE_LIMIT, shard["SF_SHARD_COUNTER_ENGINE_LIMIT"]),
        (F.COUNTER_TURN_LIMIT, shard["SF_SHARD_COUNTER_TURN_LIMIT"]),
        (F.BUNDLE_FORMAT, model["SF_BUNDLE_FORMAT"]),
        (F.POSITIONS_FORMAT, model["SF_POSITIONS_FORMAT"]),
        (F.POLICY_INPUT, model["SF_POLICY_INPUT"]),
        (F.TOLERANCE_KEY_PREFIX, model["SF_CANARY_TOL_KEY_PREFIX"]),
        (F.TOLERANCE_V1_KEY, model["SF_CANARY_TOL_V1_KEY"]),
        (F.TOLERANCE_SOURCE_KEY, model["SF_CANARY_TOL_SOURCE_KEY"]),
        (F.TOLERANCE_PARTS, (model["SF_CANARY_TOL_ABS"], model["SF_CANARY_TOL_REL"])),
        (F.LOOP_STAGES, tuple(loop["SF_LOOP_STAGE_" + s] for s in
                              ("SELFPLAY", "TRAIN", "EXPORT", "GATE", "DECIDE", "DONE"))),
    ]
    n = 0
    for name in dir(F):
        for prefix in ("LOOP_KEY_", "TRAIN_RESULT_", "EXPORT_RESULT_", "LOOP_ROLLOUT",
                       "SIBLINGS_KEY_"):
            if name.startswith(prefix):
                checks.append((getattr(F, name), loop["SF_" + name]))
                n += 1
    assert n >= 25, n
    for got, want in checks:
        assert got == want, (got, want)
    keys = re.search(r"#define SF_GATE_VERDICT_REQUIRED(.*?)}", open(
        os.path.join(ROOT, "gate/stats.h")).read(), re.S).group(1)
    assert F.VERDICT_KEYS == tuple(gate[k] for k in re.findall(r"SF_GATE_VKEY_\w+", keys))
    keys = re.search(r"#define SF_GATE_PAIRS_REQUIRED(.*?)}", open(
        os.path.join(ROOT, "gate/stats.h")).read(), re.S).group(1)
    assert F.PAIR_KEYS == tuple(gate[k] for k in re.findall(r"SF_GATE_PKEY_\w+", keys))
    return "%d strings" % len(checks)


@test
def numbers_are_the_headers_defines():
    with open(os.path.join(ROOT, "engine", "engine.h")) as f:
        eng = f.read()
    num = dict(re.findall(r"^#define\s+(SF_FEAT_\w+)\s+(\d+)", eng, re.M))
    assert F.FEAT_VERSION == int(num["SF_FEAT_VERSION"])
    assert F.MAX_TOKENS == int(num["SF_FEAT_MAX_TOKENS"])
    assert (F.NCAT, F.NCONT, F.NQCONT, F.NTYPES) == tuple(
        int(num[k]) for k in ("SF_FEAT_NCAT", "SF_FEAT_NCONT", "SF_FEAT_NQCONT", "SF_FEAT_NTYPES"))
    assert F.VOCAB == tuple(int(num["SF_FEAT_VOCAB%d" % i]) for i in range(4))
    hdr = ""
    for rel in ("shard/shard.h", "model/model.h"):
        with open(os.path.join(ROOT, rel)) as f:
            hdr += f.read()
    n = dict(re.findall(r"^#define\s+(SF_\w+)\s+\(?(0x[0-9a-fA-F]+|\d+)u?", hdr, re.M))
    assert F.BUNDLE_FORMAT_VERSION == int(n["SF_BUNDLE_FORMAT_VERSION"])
    assert F.SHARD_FORMAT_VERSIONS == tuple(range(int(n["SF_SHARD_FORMAT_VERSION_MIN"]),
                                                  int(n["SF_SHARD_FORMAT_VERSION"]) + 1))
    assert F.BLOCK_MAGIC == {1: int(n["SF_BLOCK_MAGIC"], 16), 2: int(n["SF_BLOCK_MAGIC_V2"], 16)}
    assert (F.TRAILER_VERSION, F.TRAILER_FOOTER) == (int(n["SF_TRAILER_VERSION"]),
                                                     int(n["SF_TRAILER_FOOTER"]))
    assert F.MAX_BLOCK_RECORDS == int(n["SF_SHARD_MAX_BLOCK_RECORDS"])
    tok = re.findall(r"SF_TOK_(\w+) = (\d+)", eng)
    assert tuple(n.lower() for n, _ in tok) == F.TOKEN_TYPES
    assert all(int(v) == i for i, (_, v) in enumerate(tok))


if __name__ == "__main__":
    rc = main()
    subprocess.run(["rm", "-rf", WORK])
    sys.exit(rc)
