#!/bin/sh
# Parity of the cpu backend with the PyTorch reference (python/spirefleet/
# model.py, run by Debian's /usr/bin/python3 with python3-torch), TAP output.
#   1-2  `init` is deterministic per seed, and seeds differ
#   3-4  the canaries of PyTorch-made tiny and base bundles (float64 outputs)
#        pass on the cpu backend: max abs error <= 1e-4 on every output
#   5-6  recorded positions (a synthetic positions file): PyTorch `eval` vs
#        `sf-model eval`, every output of every position within 1e-4, tiny
#        and base
#   7-8  the same on real engine positions (sf_engine_feat during random
#        play, written by the engine-positions fixture)
#   9    golden positions taken from a file of engine positions (the
#        pluggable source)
#   10   a bundle written by C (sf-model random) evaluates the same in PyTorch
# usage: test_evald_parity.sh SF_MODEL ENGINE_POSITIONS
#        (PYTHONPATH: <build>/python; ENGINE_POSITIONS: the fixture program)
set -u
sfm=$1
engpos=$2
. "$(dirname "$0")/tap.sh"
tap_scratch sf-evald-parity

if ! $py -c 'import torch, numpy' 2>"$tmp/err"; then
  echo "Bail out! $py cannot import torch and numpy (python3-torch, python3-numpy in scripts/packages.txt): $(tail -1 "$tmp/err")"
  exit 1
fi

$py -m spirefleet.model init --arch tiny --seed 11 "$tmp/a.safetensors" >"$tmp/a.out" 2>&1
$py -m spirefleet.model init --arch tiny --seed 11 "$tmp/b.safetensors" >/dev/null 2>&1
if cmp -s "$tmp/a.safetensors" "$tmp/b.safetensors"; then
  ok "init --arch tiny --seed 11 twice gives identical bytes ($(cut -c1-16 "$tmp/a.out"))"
else
  notok "init --seed 11 is not deterministic: $(cat "$tmp/a.out")"
fi
$py -m spirefleet.model init --arch tiny --seed 12 "$tmp/c.safetensors" >/dev/null 2>&1
if [ -f "$tmp/c.safetensors" ] && ! cmp -s "$tmp/a.safetensors" "$tmp/c.safetensors"; then
  ok "another seed gives another bundle"
else
  notok "seed 12 gave the same bundle as seed 11 (or failed)"
fi

for arch in tiny base; do
  f="$tmp/$arch.safetensors"
  if [ "$arch" = tiny ]; then cp "$tmp/a.safetensors" "$f"; else
    $py -m spirefleet.model init --arch base --seed 13 --canary 8 "$f" >/dev/null 2>"$tmp/err" ||
      echo "# init base failed: $(tail -2 "$tmp/err")"
  fi
  if "$sfm" verify "$f" >"$tmp/v.out" 2>&1; then
    ok "$arch canary (PyTorch float64) on the cpu backend: $(grep canary "$tmp/v.out" | sed 's/^canary *//')"
  else
    notok "$arch canary: $(cat "$tmp/v.out")"
  fi
done

compare() { # compare REF GOT LABEL
  $py - "$1" "$2" <<'PYEOF'
import sys
import numpy as np
from spirefleet.model import read_safetensors
ref, _ = read_safetensors(sys.argv[1])
got, _ = read_safetensors(sys.argv[2])
assert (ref["n_queries"] == got["n_queries"]).all(), "query counts differ"
worst, where = 0.0, ""
for k in ("value", "p_win", "forecast", "policy"):
    r, g = ref[k].astype(np.float64), got[k].astype(np.float64)
    if k == "policy":
        mask = np.arange(r.shape[1])[None, :] < ref["n_queries"][:, None]
        r, g = np.where(mask, r, 0), np.where(mask, g, 0)
    d = np.abs(r - g)
    if d.max() > worst:
        worst = float(d.max()); where = f"{k} at {np.unravel_index(d.argmax(), d.shape)}"
print(f"{len(ref['p_win'])} positions, max |error| {worst:.3g} ({where})")
sys.exit(0 if worst <= 1e-4 else 1)
PYEOF
}

$py -m spirefleet.model positions --seed 5 --count 48 "$tmp/synthetic.safetensors" 2>"$tmp/err"
"$engpos" 5 64 "$tmp/engine.safetensors" >/dev/null 2>>"$tmp/err"
for src in synthetic engine; do
  for arch in tiny base; do
    f="$tmp/$arch.safetensors"
    pos="$tmp/$src.safetensors"
    if $py -m spirefleet.model eval "$f" "$pos" "$tmp/ref.safetensors" >/dev/null 2>"$tmp/err" &&
      "$sfm" eval "$f" "$pos" "$tmp/got.safetensors" >/dev/null 2>>"$tmp/err" &&
      compare "$tmp/ref.safetensors" "$tmp/got.safetensors" >"$tmp/cmp.out" 2>>"$tmp/err"; then
      ok "$arch, $src positions, PyTorch vs cpu backend: $(cat "$tmp/cmp.out")"
    else
      notok "$arch, $src positions: $(cat "$tmp/cmp.out" "$tmp/err" 2>/dev/null | tail -3)"
    fi
  done
done

"$engpos" 21 6 "$tmp/golden.safetensors" >/dev/null 2>"$tmp/err"
if $py -m spirefleet.model init --arch tiny --seed 14 --positions "$tmp/golden.safetensors" \
    "$tmp/g.safetensors" >/dev/null 2>>"$tmp/err" &&
  "$sfm" verify "$tmp/g.safetensors" >"$tmp/v.out" 2>&1 &&
  "$sfm" info "$tmp/g.safetensors" | grep -q "canary      6 golden positions"; then
  ok "golden engine positions from a positions file: $(grep canary "$tmp/v.out" | sed 's/^canary *//')"
else
  notok "golden positions from a file: $(cat "$tmp/err" "$tmp/v.out" 2>/dev/null | tail -3)"
fi

"$sfm" random --arch tiny --seed 3 --canary 12 "$tmp/r.safetensors" >/dev/null 2>"$tmp/err"
if $py - "$tmp/r.safetensors" >"$tmp/r.out" 2>>"$tmp/err" <<'PYEOF'; then
import sys
import numpy as np
import torch
from spirefleet.model import load_bundle, model_from_weights, evaluate
name, arch, weights, meta, canary, expected = load_bundle(sys.argv[1])
out = evaluate(model_from_weights(arch, weights, torch.float64), canary)
worst = 0.0
for k in ("value", "p_win", "forecast", "policy"):
    d = np.abs(out[k].astype(np.float64) - expected[k].astype(np.float64))
    if k == "policy":
        d = np.where(np.arange(d.shape[1])[None, :] < canary["n_queries"][:, None], d, 0)
    worst = max(worst, float(d.max()))
print(f"{len(canary['n_tokens'])} positions, max |error| {worst:.3g}")
sys.exit(0 if worst <= 1e-4 else 1)
PYEOF
  ok "a C-written bundle (sf-model random) evaluates the same in PyTorch: $(cat "$tmp/r.out")"
else
  notok "C-written bundle in PyTorch: $(cat "$tmp/r.out" "$tmp/err" 2>/dev/null | tail -3)"
fi

tap_done
