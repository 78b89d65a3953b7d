"""The spirefleet network in PyTorch: the reference for gpu-evald's backends.

An entity-set transformer over the engine tokenizer's output (docs/model.md):

* token embedding = type embedding + the four categorical embeddings +
  Linear(16 continuous features); no positional encoding (token order carries
  no meaning);
* L pre-LayerNorm blocks: multi-head self-attention with a padding mask, then
  a GELU MLP, each added to the residual stream; a final LayerNorm;
* heads on the mean of the tokens: value (21-bin softmax over the HP-graded
  outcome, bin 0 = death, plus P(win)) and forecasts (h = 1..4 turns x 5
  targets); and a pointer-style policy head scoring each action query with an
  MLP over [card token, target token, the query's 8 continuous features].

Bundles are safetensors files (read and written here without the
`safetensors` package: JSON header plus raw little-endian data) whose
metadata names the architecture, the tokenizer version and the output layout,
and which carry golden positions with their expected outputs (the canary)
and the canary's tolerances per precision and output. Expected outputs are
computed in float64 and stored as float32; the default tolerances are
measured by emulating tf32 and bf16 matrix products on those very positions
(measure_tolerances, docs/model.md "Canary tolerances").

Command line (python3 -m spirefleet.model ...):

    init --arch tiny|base --seed N [--canary N] [--positions FILE] OUT
    eval BUNDLE POSITIONS OUT          outputs of every position (float64 -> f32)
    info BUNDLE
    emulate BUNDLE [--tf32 trunc|rne]  the canary in emulated fp32/tf32/bf16
                                       against the bundle's tolerances
    positions --seed N --count N OUT   synthetic positions file
"""

import argparse
import hashlib
import json
import math
import os
import struct
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

Positions = dict[str, np.ndarray]  # named arrays: positions, outputs, weights

# Tokenizer layout (engine/engine.h, SF_FEAT_*, through the generated
# facts.py); a bundle records these and the C loader refuses one that differs.
from .facts import (FEAT_VERSION, MAX_QUERIES, MAX_TOKENS, NCAT, NCONT,  # noqa: E402,F401
                    NQCONT, NTYPES, VOCAB)

# The heads' targets: the label contract (label/label.h, generated contract.py).
from .contract import FORECAST_COLUMNS as FORECAST_TARGETS  # noqa: E402
from .contract import FORECAST_H as HORIZONS  # noqa: E402
from .contract import SCHEMA_VERSION as LABEL_SCHEMA_VERSION  # noqa: E402
from .contract import VALUE_BINS  # noqa: E402
# Bundle and position-set metadata (model/model.h, through facts.py); this
# module writes BUNDLE_FORMAT_VERSION and reads 1 and it.
from .facts import (BUNDLE_FORMAT, BUNDLE_FORMAT_VERSION, POLICY_INPUT,  # noqa: E402
                    POSITIONS_FORMAT)
LN_EPS = 1e-5

ARCHS = {
    "tiny": dict(d_model=64, n_layers=2, n_heads=4, d_ff=256,
                 d_value=64, d_forecast=64, d_policy=64),
    "base": dict(d_model=256, n_layers=8, n_heads=8, d_ff=1024,
                 d_value=256, d_forecast=256, d_policy=256),
}
ARCH_KEYS = ("d_model", "n_layers", "n_heads", "d_ff", "d_value",
             "d_forecast", "d_policy")

POSITION_ARRAYS = ("n_tokens", "n_queries", "type", "cat", "cont", "query",
                   "qcont")
# The canary's outputs, in the order of the C enum sf_canary_output: also the
# output names of the tolerance metadata.
from .facts import CANARY_OUTPUTS as OUTPUT_ARRAYS  # noqa: E402

# Canary tolerances (docs/model.md "Canary tolerances"): the names and the
# numbers are model/model.h's, through the generated facts.py.
# Metadata TOLERANCE_KEY_PREFIX + precision holds a JSON object
# {output: {"abs": a, "rel": r}} for every output; an element passes when
# |got - want| <= a + r |want|. PRECISIONS is in sf_precision order;
# TOLERANCE_SOURCE_KEY is provenance, not read; TOLERANCE_V1_KEY is format 1's
# one absolute limit.
# The rule of the measured defaults: abs = max(TOL_ABS_FLOOR[p],
# max over elements of (TOL_MARGIN |err| - TOL_REL[p] |want|)), rel = TOL_REL[p].
from .facts import (PRECISIONS, TOL_ABS_FLOOR, TOL_MARGIN, TOL_REL,  # noqa: E402
                    TOLERANCE_KEY_PREFIX, TOLERANCE_PARTS, TOLERANCE_SOURCE_KEY,
                    TOLERANCE_V1_KEY)

TOLERANCE_KEYS = tuple(TOLERANCE_KEY_PREFIX + p for p in PRECISIONS)

# ---------------------------------------------------------------------------
# safetensors
# ---------------------------------------------------------------------------
_DTYPES: dict[str, np.dtype] = {"F32": np.dtype("<f4"), "I32": np.dtype("<i4"),
                                "U16": np.dtype("<u2"), "U8": np.dtype("u1")}


def read_safetensors(path: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Return (tensors, metadata): name -> numpy array, str -> str."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: too short for a safetensors header")
    (hlen,) = struct.unpack("<Q", blob[:8])
    if hlen > len(blob) - 8:
        raise ValueError(f"{path}: header length {hlen} exceeds the file")
    header = json.loads(blob[8:8 + hlen].decode("utf-8"))
    data = memoryview(blob)[8 + hlen:]
    meta = header.pop("__metadata__", {}) or {}
    tensors = {}
    for name, ent in header.items():
        dt = _DTYPES.get(ent["dtype"])
        if dt is None:
            raise ValueError(f"{path}: tensor {name!r}: dtype {ent['dtype']} unsupported")
        b, e = ent["data_offsets"]
        shape = tuple(ent["shape"])
        arr = np.frombuffer(data[b:e], dtype=dt)
        if arr.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{path}: tensor {name!r}: size does not match shape {shape}")
        tensors[name] = arr.reshape(shape).copy()
    return tensors, dict(meta)


def write_safetensors(path: str, tensors: dict[str, np.ndarray],
                      metadata: dict[str, str] | None) -> None:
    """Write tensors (name -> numpy array of f32/i32/u16/u8) deterministically.

    The layout matches the C writer (sf_tensorfile_write): header JSON with
    sorted keys and no whitespace, padded with spaces to a multiple of 8;
    data ordered by descending element size, then name.
    """
    arrays = {}
    for name, arr in tensors.items():
        arr = np.asarray(arr)
        key = next((k for k, v in _DTYPES.items()
                    if arr.dtype.kind == v.kind and arr.dtype.itemsize == v.itemsize), None)
        if key is None:
            raise ValueError(f"tensor {name!r}: dtype {arr.dtype} unsupported")
        arrays[name] = (key, np.ascontiguousarray(arr, dtype=_DTYPES[key]))
    order = sorted(arrays, key=lambda n: (-_DTYPES[arrays[n][0]].itemsize, n))
    header = {}
    off = 0
    for name in order:
        key, arr = arrays[name]
        header[name] = {"dtype": key, "shape": list(arr.shape),
                        "data_offsets": [off, off + arr.nbytes]}
        off += arr.nbytes
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name in order:
            f.write(arrays[name][1].tobytes())
    os.replace(tmp, path)


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

# ---------------------------------------------------------------------------
# Positions
# ---------------------------------------------------------------------------


def empty_positions(count: int) -> dict[str, np.ndarray]:
    return {
        "n_tokens": np.zeros(count, np.int32),
        "n_queries": np.zeros(count, np.int32),
        "type": np.zeros((count, MAX_TOKENS), np.uint8),
        "cat": np.zeros((count, MAX_TOKENS, NCAT), np.uint16),
        "cont": np.zeros((count, MAX_TOKENS, NCONT), np.float32),
        "query": np.zeros((count, MAX_QUERIES, 2), np.uint16),
        "qcont": np.zeros((count, MAX_QUERIES, NQCONT), np.float32),
    }


def validate_positions(pos: dict[str, np.ndarray], where: str = "positions") -> None:
    """Raise ValueError naming the position and field that is out of range."""
    g = len(pos["n_tokens"])
    for i in range(g):
        t, q = int(pos["n_tokens"][i]), int(pos["n_queries"][i])
        if not 1 <= t <= MAX_TOKENS:
            raise ValueError(f"{where} {i}: n_tokens {t} out of range 1..{MAX_TOKENS}")
        if not 0 <= q <= MAX_QUERIES:
            raise ValueError(f"{where} {i}: n_queries {q} out of range 0..{MAX_QUERIES}")
        ty = pos["type"][i, :t]
        if ty.min() < 1 or ty.max() >= NTYPES:
            raise ValueError(f"{where} {i}: token type out of range 1..{NTYPES - 1}")
        for j in range(NCAT):
            if pos["cat"][i, :t, j].max() >= VOCAB[j]:
                raise ValueError(f"{where} {i}: cat[{j}] id >= vocabulary {VOCAB[j]}")
        if not np.isfinite(pos["cont"][i, :t]).all() or not np.isfinite(pos["qcont"][i, :q]).all():
            raise ValueError(f"{where} {i}: a continuous feature is not finite")
        if q and pos["query"][i, :q].max() >= t:
            raise ValueError(f"{where} {i}: a query token index >= n_tokens {t}")


def synthetic_positions(seed: int, count: int) -> dict[str, np.ndarray]:
    """Valid, varied stand-in positions (numpy PCG64 from `seed`).

    Edge cases come first in every run of eight: one token with one query,
    a full position (128 tokens, 80 queries), a position without queries.
    Independent of the C generator (sf_positions_synthetic); neither is
    game-realistic. Real engine positions replace them via --positions.
    """
    rng = np.random.Generator(np.random.PCG64(seed))
    pos = empty_positions(count)
    for i in range(count):
        kind = i % 8
        if kind == 0:
            t, q = 1, 1
        elif kind == 1:
            t, q = MAX_TOKENS, MAX_QUERIES
        elif kind == 2:
            t, q = int(rng.integers(2, 42)), 0
        else:
            t, q = int(rng.integers(2, 64)), int(rng.integers(1, 25))
        pos["n_tokens"][i], pos["n_queries"][i] = t, q
        types = rng.integers(3, NTYPES, size=t)
        types[0] = 1
        if t > 1:
            types[1] = 2
        pos["type"][i, :t] = types
        for j in range(NCAT):
            pos["cat"][i, :t, j] = rng.integers(0, VOCAB[j], size=t)
        pos["cont"][i, :t] = rng.uniform(-2, 2, size=(t, NCONT)).astype(np.float32)
        pos["query"][i, :q] = rng.integers(0, t, size=(q, 2))
        pos["qcont"][i, :q] = rng.uniform(-1, 1, size=(q, NQCONT)).astype(np.float32)
    return pos


def read_positions(path: str, prefix: str = "") -> dict[str, np.ndarray]:
    """Positions from a safetensors positions file, a bundle (prefix
    "canary.") or an .npz with the same array names."""
    if path.endswith(".npz"):
        with np.load(path) as z:
            src = {k: z[prefix + k] for k in POSITION_ARRAYS}
    else:
        tensors, _ = read_safetensors(path)
        src = {k: tensors[prefix + k] for k in POSITION_ARRAYS}
    pos = empty_positions(len(src["n_tokens"]))
    for k in POSITION_ARRAYS:
        pos[k][...] = src[k]
    validate_positions(pos, where=path)
    return pos


def write_positions(path: str, pos: dict[str, np.ndarray]) -> None:
    validate_positions(pos)
    write_safetensors(path, pos, {"format": POSITIONS_FORMAT,
                                  "tokenizer_version": str(FEAT_VERSION)})

# ---------------------------------------------------------------------------
# The network
# ---------------------------------------------------------------------------


class Embed(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        # "type" shadows nn.Module.type(); store it under that name directly so
        # the tensor is still called embed.type.weight.
        self._modules["type"] = nn.Embedding(NTYPES, d)
        self.cat0 = nn.Embedding(VOCAB[0], d)
        self.cat1 = nn.Embedding(VOCAB[1], d)
        self.cat2 = nn.Embedding(VOCAB[2], d)
        self.cat3 = nn.Embedding(VOCAB[3], d)
        self.cont = nn.Linear(NCONT, d)

    def forward(self, type_: torch.Tensor, cat: torch.Tensor,
                cont: torch.Tensor) -> torch.Tensor:
        return (self._modules["type"](type_) + self.cat0(cat[..., 0]) + self.cat1(cat[..., 1]) +
                self.cat2(cat[..., 2]) + self.cat3(cat[..., 3]) + self.cont(cont))


class Attention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)   # rows: q (d), k (d), v (d)
        self.out = nn.Linear(d, d)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h, dh = self.heads, d // self.heads
        q, k, v = self.qkv(x).split(d, dim=-1)
        q = q.view(b, t, h, dh).transpose(1, 2)
        k = k.view(b, t, h, dh).transpose(1, 2)
        v = v.view(b, t, h, dh).transpose(1, 2)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
        scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
        att = torch.softmax(scores, dim=-1) @ v
        return self.out(att.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, d: int, d_ff: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d, d_ff)
        self.fc2 = nn.Linear(d_ff, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    """Pre-LN transformer block (Xiong et al. 2020)."""

    def __init__(self, d: int, heads: int, d_ff: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d, eps=LN_EPS)
        self.attn = Attention(d, heads)
        self.ln2 = nn.LayerNorm(d, eps=LN_EPS)
        self.mlp = MLP(d, d_ff)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), mask)
        return x + self.mlp(self.ln2(x))


class ValueHead(nn.Module):
    def __init__(self, d: int, hidden: int) -> None:
        super().__init__()
        self.fc = nn.Linear(d, hidden)
        self.bins = nn.Linear(hidden, VALUE_BINS)
        self.win = nn.Linear(hidden, 1)


class ForecastHead(nn.Module):
    def __init__(self, d: int, hidden: int) -> None:
        super().__init__()
        self.fc = nn.Linear(d, hidden)
        self.out = nn.Linear(hidden, HORIZONS * len(FORECAST_TARGETS))


class PolicyHead(nn.Module):
    def __init__(self, d: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(2 * d + NQCONT, hidden)
        self.fc2 = nn.Linear(hidden, 1)


class SpireNet(nn.Module):
    """state_dict() names are exactly the bundle's tensor names."""

    def __init__(self, arch: dict[str, int]) -> None:
        super().__init__()
        self.arch = dict(arch)
        d = arch["d_model"]
        self.embed = Embed(d)
        self.blocks = nn.ModuleList(Block(d, arch["n_heads"], arch["d_ff"])
                                    for _ in range(arch["n_layers"]))
        self.ln_f = nn.LayerNorm(d, eps=LN_EPS)
        self.value = ValueHead(d, arch["d_value"])
        self.forecast = ForecastHead(d, arch["d_forecast"])
        self.policy = PolicyHead(d, arch["d_policy"])

    def forward(self, type_: torch.Tensor, cat: torch.Tensor, cont: torch.Tensor,
                mask: torch.Tensor, query: torch.Tensor, qcont: torch.Tensor,
                qmask: torch.Tensor) -> dict[str, torch.Tensor]:
        """Padded batch in, outputs out.

        type_ [B,T] long, cat [B,T,4] long, cont [B,T,16], mask [B,T] bool
        (True for real tokens), query [B,Q,2] long, qcont [B,Q,8], qmask
        [B,Q] bool. Returns value [B,21] (probabilities), p_win [B],
        forecast [B,4,5], policy [B,Q] (logits; 0 where qmask is False),
        value_logits [B,21] and win_logit [B] (for training losses), and
        pooled [B,d] (the trunk's pooled position, which a trainer's
        auxiliary heads read).
        """
        x = self.embed(type_, cat, cont)
        for blk in self.blocks:
            x = blk(x, mask)
        z = self.ln_f(x)
        m = mask.unsqueeze(-1).to(z.dtype)
        g = (z * m).sum(1) / m.sum(1)
        hv = F.gelu(self.value.fc(g))
        value_logits = self.value.bins(hv)
        win_logit = self.value.win(hv).squeeze(-1)
        hf = F.gelu(self.forecast.fc(g))
        forecast = self.forecast.out(hf).view(-1, HORIZONS, len(FORECAST_TARGETS))
        d = z.shape[-1]
        card = torch.gather(z, 1, query[..., 0:1].expand(-1, -1, d))
        target = torch.gather(z, 1, query[..., 1:2].expand(-1, -1, d))
        u = torch.cat([card, target, qcont], dim=-1)
        logits = self.policy.fc2(F.gelu(self.policy.fc1(u))).squeeze(-1)
        logits = logits.masked_fill(~qmask, 0.0)
        return {"value": torch.softmax(value_logits, -1), "p_win": torch.sigmoid(win_logit),
                "forecast": forecast, "policy": logits,
                "value_logits": value_logits, "win_logit": win_logit, "pooled": g}


def weight_specs(arch: dict[str, int]) -> list[tuple[str, tuple[int, ...]]]:
    """(name, shape) of every weight in the C writer's order (sf_arch_weights)."""
    d = arch["d_model"]
    out: list[tuple[str, tuple[int, ...]]] = [("embed.type.weight", (NTYPES, d))]
    out += [(f"embed.cat{j}.weight", (VOCAB[j], d)) for j in range(NCAT)]
    out += [("embed.cont.weight", (d, NCONT)), ("embed.cont.bias", (d,))]
    for i in range(arch["n_layers"]):
        p = f"blocks.{i}."
        out += [(p + "ln1.weight", (d,)), (p + "ln1.bias", (d,)),
                (p + "attn.qkv.weight", (3 * d, d)), (p + "attn.qkv.bias", (3 * d,)),
                (p + "attn.out.weight", (d, d)), (p + "attn.out.bias", (d,)),
                (p + "ln2.weight", (d,)), (p + "ln2.bias", (d,)),
                (p + "mlp.fc1.weight", (arch["d_ff"], d)), (p + "mlp.fc1.bias", (arch["d_ff"],)),
                (p + "mlp.fc2.weight", (d, arch["d_ff"])), (p + "mlp.fc2.bias", (d,))]
    dv, df, dp = arch["d_value"], arch["d_forecast"], arch["d_policy"]
    nf = HORIZONS * len(FORECAST_TARGETS)
    out += [("ln_f.weight", (d,)), ("ln_f.bias", (d,)),
            ("value.fc.weight", (dv, d)), ("value.fc.bias", (dv,)),
            ("value.bins.weight", (VALUE_BINS, dv)), ("value.bins.bias", (VALUE_BINS,)),
            ("value.win.weight", (1, dv)), ("value.win.bias", (1,)),
            ("forecast.fc.weight", (df, d)), ("forecast.fc.bias", (df,)),
            ("forecast.out.weight", (nf, df)), ("forecast.out.bias", (nf,)),
            ("policy.fc1.weight", (dp, 2 * d + NQCONT)), ("policy.fc1.bias", (dp,)),
            ("policy.fc2.weight", (1, dp)), ("policy.fc2.bias", (1,))]
    return out


def init_weights(arch: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    """Deterministic random init (numpy PCG64 from `seed`, weights in
    weight_specs order): embedding tables N(0, 0.5^2); a Linear's weight
    and bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)); LayerNorm gain
    1 + N(0, 0.1^2) and shift N(0, 0.1^2). Larger than a training init on
    purpose, so the canary's outputs depend visibly on every weight."""
    rng = np.random.Generator(np.random.PCG64(seed))
    weights = {}
    fan_in = 1
    for name, shape in weight_specs(arch):
        if name.startswith(("ln_f.", )) or ".ln1." in name or ".ln2." in name:
            w = rng.normal(0.0, 0.1, size=shape)
            if name.endswith(".weight"):
                w = w + 1.0
        elif name.startswith("embed.") and not name.startswith("embed.cont."):
            w = rng.normal(0.0, 0.5, size=shape)
        else:
            if len(shape) == 2:
                fan_in = shape[1]
            bound = 1.0 / math.sqrt(fan_in)
            w = rng.uniform(-bound, bound, size=shape)
        weights[name] = w.astype(np.float32)
    return weights


def model_from_weights(arch: dict[str, int], weights: dict[str, np.ndarray],
                       dtype: torch.dtype = torch.float32) -> "SpireNet":
    net = SpireNet(arch)
    state = {k: torch.from_numpy(np.array(v)) for k, v in weights.items()}
    net.load_state_dict(state, strict=True)
    return net.to(dtype).eval()


def evaluate(net: nn.Module, pos: dict[str, np.ndarray], batch: int = 64) -> dict[str, np.ndarray]:
    """Outputs of every position as float32 numpy arrays (computed in the
    net's dtype): value [G,21], p_win [G], forecast [G,4,5], policy [G,80]."""
    dtype = next(net.parameters()).dtype
    g = len(pos["n_tokens"])
    out = {"value": np.zeros((g, VALUE_BINS), np.float32),
           "p_win": np.zeros(g, np.float32),
           "forecast": np.zeros((g, HORIZONS, len(FORECAST_TARGETS)), np.float32),
           "policy": np.zeros((g, MAX_QUERIES), np.float32)}
    with torch.no_grad():
        for s in range(0, g, batch):
            e = min(g, s + batch)
            nt = torch.from_numpy(pos["n_tokens"][s:e].astype(np.int64))
            nq = torch.from_numpy(pos["n_queries"][s:e].astype(np.int64))
            t = int(nt.max())
            mask = torch.arange(t)[None, :] < nt[:, None]
            qmask = torch.arange(MAX_QUERIES)[None, :] < nq[:, None]
            res = net(torch.from_numpy(pos["type"][s:e, :t].astype(np.int64)),
                      torch.from_numpy(pos["cat"][s:e, :t].astype(np.int64)),
                      torch.from_numpy(pos["cont"][s:e, :t]).to(dtype),
                      mask,
                      torch.from_numpy(pos["query"][s:e].astype(np.int64)),
                      torch.from_numpy(pos["qcont"][s:e]).to(dtype),
                      qmask)
            for k in OUTPUT_ARRAYS:
                out[k][s:e] = res[k].to(torch.float64).numpy().astype(np.float32)
    return out

# ---------------------------------------------------------------------------
# Precision emulation and canary tolerances
# ---------------------------------------------------------------------------


def round_to_precision(x: torch.Tensor, precision: str, tf32: str = "trunc") -> torch.Tensor:
    """A float32 tensor as a GEMM of `precision` reads it: bf16 rounded to
    nearest even on 7 mantissa bits (CUDA's __float2bfloat16); tf32 on 10
    mantissa bits, truncated (tf32="trunc": what tensor cores do with raw
    fp32 bits, the larger error) or rounded to nearest even ("rne"); fp32
    unchanged. Infinities and NaNs pass through."""
    if precision == "fp32":
        return x
    if precision == "bf16":
        return x.to(torch.bfloat16).to(torch.float32)
    if precision != "tf32":
        raise ValueError(f"precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
    bits = x.contiguous().view(torch.int32)
    special = (bits & 0x7F800000) == 0x7F800000
    if tf32 == "rne":
        r = bits.to(torch.int64)
        r = (r + 0xFFF + ((r >> 13) & 1)) & ~0x1FFF
        r = torch.where(r >= 2**31, r - 2**32, r).to(torch.int32)
    elif tf32 == "trunc":
        r = bits & -8192          # ~0x1FFF as int32
    else:
        raise ValueError(f"tf32 rounding {tf32!r}: expected trunc or rne")
    return torch.where(special, bits, r).view(torch.float32)


def emulated_model(arch: dict[str, int], weights: dict[str, np.ndarray], precision: str,
                   tf32: str = "trunc") -> nn.Module:
    """A float32 SpireNet whose matrix products emulate `precision` as the
    cuda backend runs them (cublasGemmEx): the weight and the input of every
    Linear rounded (round_to_precision), products exact and sums in fp32.
    The token embedding's Linear(cont) and attention stay fp32, as they are
    custom fp32 kernels there."""
    net = model_from_weights(arch, weights, torch.float32)
    if precision == "fp32":
        return net
    for name, mod in net.named_modules():
        if isinstance(mod, nn.Linear) and name != "embed.cont":
            with torch.no_grad():
                mod.weight.copy_(round_to_precision(mod.weight, precision, tf32))
            mod.register_forward_pre_hook(
                lambda m, args: (round_to_precision(args[0], precision, tf32),) + args[1:])
    return net


def _elements(out: dict[str, np.ndarray], expected: dict[str, np.ndarray],
              canary: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per output: (|out - expected|, |expected|) as float64 vectors over the
    compared elements (policy: the legal queries only)."""
    res = {}
    nq = np.asarray(canary["n_queries"])
    for k in OUTPUT_ARRAYS:
        o = np.asarray(out[k], np.float64)
        w = np.asarray(expected[k], np.float64)
        if k == "policy":
            mask = np.arange(o.shape[1])[None, :] < nq[:, None]
            o, w = o[mask], w[mask]
        err = np.abs(o - w).reshape(-1)
        err[np.isnan(err)] = np.inf
        res[k] = (err, np.abs(w).reshape(-1))
    return res


def round_up_2sig(x: float) -> float:
    """x > 0 rounded up to two significant digits (0.2317 -> 0.24; 0.24
    stays), as the C writer does, so a tolerance reads as two digits."""
    if not x > 0 or not math.isfinite(x):
        return x
    s = math.floor(math.log10(x)) - 1
    if s < 0:
        return math.ceil(x * 10.0 ** -s * (1 - 1e-12)) / 10.0 ** -s
    return math.ceil(x / 10.0 ** s * (1 - 1e-12)) * 10.0 ** s


def derive_tolerance(precision: str, err: np.ndarray, want: np.ndarray) -> dict[str, float]:
    """One output's tolerance from its emulated errors `err` and expected
    magnitudes `want` (float64 arrays): rel = TOL_REL[precision], abs the
    smallest value (at least TOL_ABS_FLOOR, two significant digits up) with
    abs + rel |want_i| >= TOL_MARGIN err_i for every element."""
    rel = TOL_REL[precision]
    need = float(np.max(TOL_MARGIN * err - rel * want)) if len(err) else 0.0
    return {"abs": round_up_2sig(max(TOL_ABS_FLOOR[precision], need)), "rel": rel}


def measure_tolerances(arch: dict[str, int], weights: Positions, canary: Positions,
                       expected: Positions, tf32: str = "trunc"
                       ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The default canary tolerances of a bundle: for each precision, the
    canary evaluated by emulated_model() against `expected` (the float64
    reference), then derive_tolerance() per output. Returns (tolerances,
    measured): tolerances[precision][output] = {"abs", "rel"};
    measured[precision][output] = the largest |error|."""
    tolerances, measured = {}, {}
    for p in PRECISIONS:
        out = evaluate(emulated_model(arch, weights, p, tf32), canary)
        el = _elements(out, expected, canary)
        tolerances[p] = {k: derive_tolerance(p, *el[k]) for k in OUTPUT_ARRAYS}
        measured[p] = {k: float(el[k][0].max()) if len(el[k][0]) else 0.0 for k in OUTPUT_ARRAYS}
    return tolerances, measured


def check_tolerance(out: Positions, expected: Positions, canary: Positions,
                    tol: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Compare outputs with expected under one precision's tolerances `tol`
    ({output: {"abs", "rel"}}). Returns {output: (max |error|, max ratio,
    index of the worst element)}, ratio = |error| / (abs + rel |want|): at
    most 1 passes."""
    res = {}
    for k, (err, want) in _elements(out, expected, canary).items():
        if not len(err):
            res[k] = (0.0, 0.0, -1)
            continue
        ratio = err / (tol[k]["abs"] + tol[k]["rel"] * want)
        i = int(np.argmax(ratio))
        res[k] = (float(err.max()), float(ratio[i]), i)
    return res


def format_tolerance(tol: dict[str, dict[str, float]]) -> str:
    """One precision's tolerances as the metadata's JSON text, outputs in
    OUTPUT_ARRAYS order, each {"abs", "rel"} (shortest round-trip numbers,
    as the C writer prints them)."""
    _check_tolerance_values(tol, "tolerances")
    return json.dumps({k: {"abs": float(tol[k]["abs"]), "rel": float(tol[k]["rel"])}
                       for k in OUTPUT_ARRAYS}, separators=(",", ":"))


def _check_tolerance_values(tol: Any, where: str) -> None:
    if not isinstance(tol, dict) or set(tol) != set(OUTPUT_ARRAYS):
        got = sorted(tol) if isinstance(tol, dict) else type(tol).__name__
        raise ValueError(f"{where}: need exactly the outputs {', '.join(OUTPUT_ARRAYS)}, got {got}")
    for k in OUTPUT_ARRAYS:
        t = tol[k]
        if not isinstance(t, dict) or set(t) != set(TOLERANCE_PARTS) or any(
                isinstance(t[x], bool) or not isinstance(t[x], (int, float))
                for x in TOLERANCE_PARTS):
            raise ValueError(f'{where}: output "{k}" must be {{"abs": number, "rel": number}} '
                             f"and nothing else")
        a, r = float(t["abs"]), float(t["rel"])
        if not (math.isfinite(a) and 0 < a <= 1e6):
            raise ValueError(f'{where}: output "{k}": "abs" must be a number in (0, 1e6] '
                             f"(is {a:g})")
        if not (math.isfinite(r) and 0 <= r <= 1):
            raise ValueError(f'{where}: output "{k}": "rel" must be a number in [0, 1] (is {r:g})')


def bundle_tolerances(meta: dict[str, str],
                      path: str = "bundle") -> dict[str, dict[str, dict[str, float]]]:
    """The canary tolerances a bundle's metadata records:
    {precision: {output: {"abs", "rel"}}}. Format 2: the TOLERANCE_KEYS
    (each exactly the four outputs, each exactly abs and rel), and no
    format-1 key. Format 1: its one absolute TOLERANCE_V1_KEY t, as
    {abs t, rel 0} in fp32 and {abs max(t, 0.02), rel 0} in tf32 and bf16.
    Raises ValueError naming the file, the key and the output."""
    version = meta.get("format_version")
    if version == "1":
        v = meta.get(TOLERANCE_V1_KEY)
        try:
            t = float(v) if v is not None else -1.0
        except ValueError:
            t = -1.0
        if not 0 < t <= 1:
            raise ValueError(f'{path}: metadata "{TOLERANCE_V1_KEY}" is "{v}"; need a number in '
                             f"(0, 1] (bundle format 1)")
        return {p: {k: {"abs": t if p == "fp32" else max(t, 2e-2), "rel": 0.0}
                    for k in OUTPUT_ARRAYS} for p in PRECISIONS}
    if TOLERANCE_V1_KEY in meta:
        raise ValueError(f'{path}: metadata "{TOLERANCE_V1_KEY}" is a bundle format 1 key; format '
                         f"{version} records {', '.join(TOLERANCE_KEYS)} instead")
    res = {}
    for p, key in zip(PRECISIONS, TOLERANCE_KEYS):
        if key not in meta:
            raise ValueError(f'{path}: metadata "{key}" is missing (the canary\'s {p} tolerances)')

        def no_dupes(pairs: list[tuple[str, Any]], key: str = key) -> dict[str, Any]:
            d = {}
            for k, v in pairs:
                if k in d:
                    raise ValueError(f'{path}: metadata "{key}": "{k}" appears twice')
                d[k] = v
            return d
        try:
            tol = json.loads(meta[key], object_pairs_hook=no_dupes)
        except json.JSONDecodeError as e:
            raise ValueError(f'{path}: metadata "{key}" is not JSON ({e})') from None
        if isinstance(tol, dict):
            unknown = sorted(set(tol) - set(OUTPUT_ARRAYS))
            if unknown:
                raise ValueError(f'{path}: metadata "{key}": unknown output "{unknown[0]}" '
                                 f"(expected {', '.join(OUTPUT_ARRAYS)})")
            missing = [k for k in OUTPUT_ARRAYS if k not in tol]
            if missing:
                raise ValueError(f'{path}: metadata "{key}": output "{missing[0]}" is missing')
        _check_tolerance_values(tol, f'{path}: metadata "{key}"')
        res[p] = {k: {"abs": float(tol[k]["abs"]), "rel": float(tol[k]["rel"])}
                  for k in OUTPUT_ARRAYS}
    return res

# ---------------------------------------------------------------------------
# Bundles
# ---------------------------------------------------------------------------


def bundle_metadata(arch_name: str, arch: dict[str, int], canary_count: int,
                    tolerances: dict[str, Any] | None, extra: dict[str, str] | None = None
                    ) -> dict[str, str]:
    meta = {
        "format": BUNDLE_FORMAT,
        "format_version": str(BUNDLE_FORMAT_VERSION),
        "tokenizer_version": str(FEAT_VERSION),
        "feat_ntypes": str(NTYPES),
        "feat_vocab": ",".join(str(v) for v in VOCAB),
        "feat_ncont": str(NCONT),
        "feat_nqcont": str(NQCONT),
        "value_bins": str(VALUE_BINS),
        "forecast_horizons": str(HORIZONS),
        "forecast_targets": ",".join(FORECAST_TARGETS),
        "label_schema_version": str(LABEL_SCHEMA_VERSION),
        "gelu": "erf",
        "pooling": "mean",
        "policy_input": POLICY_INPUT,
        "layernorm_eps": "1e-05",
        "arch": arch_name,
        "canary_count": str(canary_count),
    }
    for k in ARCH_KEYS:
        meta[k] = str(arch[k])
    if canary_count:
        if tolerances is None:
            raise ValueError("bundle_metadata: a canary needs its tolerances")
        for p, key in zip(PRECISIONS, TOLERANCE_KEYS):
            meta[key] = format_tolerance(tolerances[p])
    for k in extra or {}:
        if k == TOLERANCE_V1_KEY or (k.startswith(TOLERANCE_KEY_PREFIX)
                                     and k != TOLERANCE_SOURCE_KEY):
            raise ValueError(f'extra metadata "{k}" would stand beside the canary tolerances; '
                             f"pass them as tolerances")
    meta.update(extra or {})
    return meta


def save_bundle(path: str, arch_name: str, arch: dict[str, int], weights: Positions,
                canary: Positions | None = None, expected: Positions | None = None,
                tolerances: dict[str, Any] | None = None,
                extra: dict[str, str] | None = None) -> None:
    """Write a bundle (format BUNDLE_FORMAT_VERSION): weights (name ->
    float32 array, every weight_specs name), optional golden positions and
    their expected outputs (the float64 reference: evaluate() of a float64
    model), and the canary tolerances {precision: {output: {"abs", "rel"}}}
    for every precision; None measures them (measure_tolerances, recorded
    as such in TOLERANCE_SOURCE_KEY)."""
    if tolerances is not None and not isinstance(tolerances, dict):
        raise ValueError("tolerances: need {precision: {output: {abs, rel}}} for "
                         f"{', '.join(PRECISIONS)} (one absolute number is bundle format 1)")
    specs = dict(weight_specs(arch))
    if set(specs) != set(weights):
        missing = sorted(set(specs) - set(weights))
        unexpected = sorted(set(weights) - set(specs))
        raise ValueError(f"weights do not match the architecture: missing {missing[:3]}, "
                         f"unexpected {unexpected[:3]}")
    tensors = {}
    for k, shape in specs.items():
        w = np.asarray(weights[k], dtype=np.float32)
        if w.shape != tuple(shape):
            raise ValueError(f"weight {k}: shape {w.shape}, expected {tuple(shape)}")
        tensors[k] = w
    g = 0
    if canary is not None:
        validate_positions(canary, where="canary position")
        g = len(canary["n_tokens"])
        if expected is None:
            raise ValueError("save_bundle: a canary needs its expected outputs")
        for k in POSITION_ARRAYS:
            tensors["canary." + k] = canary[k]
        for k in OUTPUT_ARRAYS:
            tensors["canary." + k] = np.asarray(expected[k], np.float32)
        extra = dict(extra or {})
        if tolerances is None:
            tolerances, _ = measure_tolerances(arch, {k: tensors[k] for k in specs}, canary,
                                               {k: tensors["canary." + k] for k in OUTPUT_ARRAYS})
            extra.setdefault(TOLERANCE_SOURCE_KEY,
                             "measured: spirefleet.model emulation of tf32 (truncated) and bf16 "
                             "(rounded) GEMM inputs against the float64 reference, margin 4")
        missing = [p for p in PRECISIONS if p not in tolerances]
        if missing or set(tolerances) - set(PRECISIONS):
            raise ValueError(f"tolerances: need exactly {', '.join(PRECISIONS)}, got "
                             f"{sorted(tolerances)}")
    write_safetensors(path, tensors, bundle_metadata(arch_name, arch, g, tolerances, extra))


def load_bundle(path: str) -> tuple[str, dict[str, int], dict[str, np.ndarray], dict[str, str],
                                    dict[str, np.ndarray] | None,
                                    dict[str, np.ndarray] | None]:
    """Return (arch_name, arch, weights, metadata, canary, expected)."""
    tensors, meta = read_safetensors(path)
    if meta.get("format") != BUNDLE_FORMAT:
        raise ValueError(f"{path}: not a spirefleet model bundle")
    if meta.get("tokenizer_version") != str(FEAT_VERSION):
        raise ValueError(f"{path}: unsupported tokenizer version {meta.get('tokenizer_version')}")
    if meta.get("format_version") not in ("1", str(BUNDLE_FORMAT_VERSION)):
        raise ValueError(f"{path}: bundle format version {meta.get('format_version')} unsupported "
                         f"(this module reads 1 and {BUNDLE_FORMAT_VERSION})")
    if meta.get("label_schema_version") != str(LABEL_SCHEMA_VERSION):
        raise ValueError(f"{path}: metadata label_schema_version is "
                         f"{meta.get('label_schema_version', '(missing)')}; this reader's heads "
                         f"predict the targets of label schema {LABEL_SCHEMA_VERSION}")
    arch = {k: int(meta[k]) for k in ARCH_KEYS}
    weights = {k: tensors[k] for k, _ in weight_specs(arch)}
    canary = expected = None
    if "canary.n_tokens" in tensors:
        canary = empty_positions(len(tensors["canary.n_tokens"]))
        for k in POSITION_ARRAYS:
            canary[k][...] = tensors["canary." + k]
        expected = {k: tensors["canary." + k] for k in OUTPUT_ARRAYS}
        bundle_tolerances(meta, path)  # refuse bad tolerances on reading
    return meta.get("arch", "custom"), arch, weights, meta, canary, expected


def init_bundle(path: str, arch_name: str, seed: int, canary_count: int = 16,
                positions: str | None = None) -> str:
    """Random-init bundle whose canary outputs come from a float64 forward."""
    arch = ARCHS[arch_name]
    weights = init_weights(arch, seed)
    canary = read_positions(positions) if positions else synthetic_positions(seed, canary_count)
    net = model_from_weights(arch, weights, torch.float64)
    expected = evaluate(net, canary)
    save_bundle(path, arch_name, arch, weights, canary, expected, None,
                {"seed": str(seed), "created_by": "spirefleet.model init",
                 "canary_reference": f"pytorch {torch.__version__.split('+')[0]} float64"})
    return sha256_file(path)

# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def _cmd_init(a: argparse.Namespace) -> None:
    if a.arch not in ARCHS:
        raise SystemExit(f"model init: --arch {a.arch}: expected one of {', '.join(ARCHS)}")
    sha = init_bundle(a.out, a.arch, a.seed, a.canary, a.positions)
    print(f"{sha}  {a.out}")


def _cmd_eval(a: argparse.Namespace) -> None:
    _, arch, weights, _, _, _ = load_bundle(a.bundle)
    pos = read_positions(a.positions)
    net = model_from_weights(arch, weights, torch.float64)
    out = evaluate(net, pos)
    out["n_queries"] = pos["n_queries"].astype(np.int32)
    write_safetensors(a.out, out, {"format": "spirefleet-outputs"})
    print(f"wrote {len(pos['n_tokens'])} outputs to {a.out}")


def _cmd_info(a: argparse.Namespace) -> None:
    name, arch, weights, meta, canary, _ = load_bundle(a.bundle)
    print(f"sha256      {sha256_file(a.bundle)}")
    print(f"arch        {name} {arch}")
    print(f"parameters  {sum(w.size for w in weights.values())}")
    print(f"canary      {0 if canary is None else len(canary['n_tokens'])} golden positions")
    if canary is not None:
        print("tolerances  per element |got - want| <= abs + rel |want|")
        for p, tol in bundle_tolerances(meta, a.bundle).items():
            print(f"  {p:4}     " + ", ".join(f"{k} abs {tol[k]['abs']:g} rel {tol[k]['rel']:g}"
                                              for k in OUTPUT_ARRAYS))
    for k in sorted(meta):
        print(f"  {k:18} {meta[k]}")


def _cmd_emulate(a: argparse.Namespace) -> int:
    _, arch, weights, meta, canary, expected = load_bundle(a.bundle)
    if canary is None or expected is None:
        raise ValueError(f"{a.bundle}: the bundle has no canary")
    tols = bundle_tolerances(meta, a.bundle)
    ok = True
    for p in PRECISIONS:
        out = evaluate(emulated_model(arch, weights, p, a.tf32), canary)
        res = check_tolerance(out, expected, canary, tols[p])
        for k in OUTPUT_ARRAYS:
            err, ratio, _ = res[k]
            ok = ok and ratio <= 1
            print(json.dumps({"precision": p, "tf32": a.tf32, "output": k, "max_abs_err": err,
                              "of_tolerance": ratio, "abs": tols[p][k]["abs"],
                              "rel": tols[p][k]["rel"]}, separators=(",", ":")))
        worst = max(OUTPUT_ARRAYS, key=lambda k: res[k][1])
        print(f"{p} emulated: max |error| "
              + ", ".join(f"{k} {res[k][0]:.3g}" for k in OUTPUT_ARRAYS)
              + f"; at most {res[worst][1]:.2f} of the tolerance ({worst}): "
              + ("ok" if res[worst][1] <= 1 else "FAILED"))
    return 0 if ok else 1


def _cmd_positions(a: argparse.Namespace) -> None:
    write_positions(a.out, synthetic_positions(a.seed, a.count))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m spirefleet.model",
                                description=(__doc__ or "").split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("init", help="write a deterministic random-init bundle with its canary")
    s.add_argument("--arch", required=True)
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--canary", type=int, default=16, help="synthetic golden positions")
    s.add_argument("--positions", help="golden positions from this file (.safetensors or .npz)")
    s.add_argument("out")
    s.set_defaults(fn=_cmd_init)
    s = sub.add_parser("eval", help="reference outputs (float64) for a positions file")
    s.add_argument("bundle")
    s.add_argument("positions")
    s.add_argument("out")
    s.set_defaults(fn=_cmd_eval)
    s = sub.add_parser("info", help="describe a bundle")
    s.add_argument("bundle")
    s.set_defaults(fn=_cmd_info)
    s = sub.add_parser("emulate", help="the canary in emulated fp32/tf32/bf16 against the "
                       "bundle's tolerances (exit 1 if outside)")
    s.add_argument("bundle")
    s.add_argument("--tf32", choices=("trunc", "rne"), default="trunc",
                   help="tf32 conversion to emulate (default trunc, the larger error)")
    s.set_defaults(fn=_cmd_emulate)
    s = sub.add_parser("positions", help="write a synthetic positions file")
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--count", type=int, required=True)
    s.add_argument("out")
    s.set_defaults(fn=_cmd_positions)
    a = p.parse_args(argv)
    try:
        return a.fn(a) or 0
    except (ValueError, KeyError, OSError) as e:
        print(f"spirefleet.model: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
