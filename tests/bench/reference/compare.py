#!/usr/bin/env python3
"""Compare bench-items' statistics between spirefleet and sts_lightspeed.

    compare.py OURS.jsonl REF.jsonl

OURS holds bench-items' lines ("engine":"spirefleet"), REF
lightspeed_items.cpp's ("engine":"lightspeed"). Both hold a "baseline" line
(the starter deck with no item). For every item:

  - the direct comparison, ours minus the reference: the win-rate
    difference with a 95 % two-proportion (Wald) interval; the means of
    decisions per fight and of HP left in won fights with 95 % Welch
    intervals;
  - the effect comparison: each engine's effect (the item's statistic minus
    that engine's own baseline) and the difference of the two effects,
    which cancels what the engines differ on without the item (Red
    Slaver's known divergence, say) and leaves what they differ on about
    the item itself. Within an engine, fight f of the item and fight f of
    the baseline share their seeds, and both drivers report the mean and
    standard deviation of the per-fight differences (paired_win,
    paired_decisions, paired_hp_end: HP at the end, 0 when lost); the
    effects and their intervals come from those, which removes the
    fights' common randomness (an item that changes nothing during the
    fight, Meat on the Bone, is measured almost exactly). Lines without
    the paired fields fall back to independent samples (win rate,
    decisions, HP left in won fights), a wider interval.

"agree" is true when the 95 % interval of the win-rate effect difference
holds 0; the decisions and HP effect differences are reported beside it
("agree_all": all three intervals hold 0). With some 90 items and three
intervals each, a few disagreements at 95 % are expected by chance alone:
read a disagreement as a lead to look into, not as a verdict.

An item lightspeed implements and spirefleet does not model yet has no line
in OURS: its spirefleet side is the baseline itself (the item has no
effect there, exactly) and the line says "ours":"not modelled". An item
the reference does not implement is listed, not compared.

Prints one JSON line per item
  {"bench":"items_vs_reference","item":..,"kind":..,"win_rate":[ours,ref],
   "win_rate_diff":..,"win_rate_diff_ci95":[lo,hi],"decisions_diff":..,
   "decisions_diff_ci95":[..],"hp_left_diff":..,"hp_left_diff_ci95":[..],
   "effect":[ours,ref],"effect_diff":..,"ci95":[lo,hi],
   "decisions_effect_diff":..,"decisions_effect_ci95":[..],
   "hp_effect_diff":..,"hp_effect_ci95":[..],"agree":..,"agree_all":..,
   "ours":"modelled"|"not modelled","effects_from":..}
then a table for people. Standard library only; exit status 0 unless the
input cannot be read.
"""

import json
import math
import sys

Z95 = 1.959963984540054


def t95(df):
    """The two-sided 95 % quantile of Student's t (Cornish-Fisher series in
    1/df about the normal quantile; within 0.3 % of the exact value from 5
    degrees of freedom up, exact as df grows)."""
    if not math.isfinite(df) or df > 1e6:
        return Z95
    df = max(df, 1.0)
    z = Z95
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def load(path, engine):
    items = {}
    order = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                d = json.loads(line)
            except ValueError as e:
                raise SystemExit(f"compare.py: {path}:{n}: not JSON: {e}")
            if d.get("bench") != "items":
                continue
            if d.get("engine") != engine:
                raise SystemExit(f"compare.py: {path}:{n}: engine {d.get('engine')!r}, "
                                 f"expected {engine!r}")
            items[d["item"]] = d
            order.append(d["item"])
    if "baseline" not in items:
        raise SystemExit(f"compare.py: {path} has no baseline line")
    return items, order


class Sample:
    """Summary statistics of one engine on one item."""

    def __init__(self, d):
        self.n = d["fights"]
        self.w = d["wins"]
        self.p = self.w / self.n if self.n else 0.0
        self.dec = (d["decisions_mean"], d["decisions_sd"], self.n)
        self.hp = (d["hp_left_mean_won"], d["hp_left_sd_won"], self.w)
        # (mean, sd, n) of the paired (item - baseline) differences, or None
        self.paired = None
        if all(k in d for k in ("paired_win", "paired_decisions", "paired_hp_end")):
            self.paired = {k: (d["paired_" + k][0], d["paired_" + k][1], self.n)
                           for k in ("win", "decisions", "hp_end")}

    def p_var(self):
        return self.p * (1 - self.p) / self.n if self.n else 0.0


def mean_var(m):
    """(mean, variance of the mean, n)"""
    mean, sd, n = m
    return mean, (sd * sd / n if n > 0 else 0.0), n


def welch(terms):
    """A 95 % interval for sum(sign * mean) over (sign, (mean, sd, n)) terms
    with the Welch-Satterthwaite degrees of freedom."""
    est, var, denom = 0.0, 0.0, 0.0
    for sign, m in terms:
        mean, v, n = mean_var(m)
        est += sign * mean
        var += v
        if n > 1:
            denom += v * v / (n - 1)
    df = var * var / denom if denom > 0 else float("inf")
    half = t95(df) * math.sqrt(var)
    return est, (est - half, est + half)


def prop(terms):
    """A 95 % Wald interval for sum(sign * p) over (sign, Sample) terms."""
    est = sum(s * x.p for s, x in terms)
    half = Z95 * math.sqrt(sum(x.p_var() for _, x in terms))
    return est, (est - half, est + half)


def holds0(ci):
    return ci[0] <= 0.0 <= ci[1]


def r(x, k=4):
    return round(x, k)


def diff_ci(key, ci_key, d, ci, k=4):
    """A difference and its 95% interval, rounded alike, under two keys."""
    return {key: r(d, k), ci_key: [r(ci[0], k), r(ci[1], k)]}


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    ours, ours_order = load(argv[1], "spirefleet")
    ref, ref_order = load(argv[2], "lightspeed")
    names = ours_order + [n for n in ref_order if n not in ours]
    ob, rb = Sample(ours["baseline"]), Sample(ref["baseline"])
    rows, unimplemented, ours_only = [], [], []
    for name in names:
        rd = ref.get(name)
        od = ours.get(name)
        if rd is None:
            ours_only.append(name)
            continue
        if rd.get("implemented") is False:
            unimplemented.append((name, rd.get("kind", "?"), rd.get("why", ""),
                                  od is not None))
            continue
        modelled = od is not None
        o = Sample(od) if modelled else ob
        x = Sample(rd)
        wr_d, wr_ci = prop([(1, o), (-1, x)])
        dec_d, dec_ci = welch([(1, o.dec), (-1, x.dec)])
        hp_d, hp_ci = welch([(1, o.hp), (-1, x.hp)])
        paired = x.paired is not None and (o.paired is not None or not modelled)
        if name == "baseline":
            eff = (0.0, 0.0)
            e_d, e_ci = 0.0, (0.0, 0.0)
            de_d, de_ci = 0.0, (0.0, 0.0)
            he_d, he_ci = 0.0, (0.0, 0.0)
        elif paired:
            # Each engine's effect from its paired per-fight differences; an
            # item we do not model has the baseline's fights: exactly 0.
            zero = {k: (0.0, 0.0, o.n) for k in ("win", "decisions", "hp_end")}
            op = o.paired if modelled else zero
            eff = (op["win"][0], x.paired["win"][0])
            e_d, e_ci = welch([(1, op["win"]), (-1, x.paired["win"])])
            de_d, de_ci = welch([(1, op["decisions"]), (-1, x.paired["decisions"])])
            he_d, he_ci = welch([(1, op["hp_end"]), (-1, x.paired["hp_end"])])
        else:
            eff = (o.p - ob.p, x.p - rb.p)
            if modelled:
                e_d, e_ci = prop([(1, o), (-1, ob), (-1, x), (1, rb)])
                de_d, de_ci = welch([(1, o.dec), (-1, ob.dec), (-1, x.dec), (1, rb.dec)])
                he_d, he_ci = welch([(1, o.hp), (-1, ob.hp), (-1, x.hp), (1, rb.hp)])
            else:  # our effect is exactly 0: only the reference's effect is random
                e_d, e_ci = prop([(-1, x), (1, rb)])
                de_d, de_ci = welch([(-1, x.dec), (1, rb.dec)])
                he_d, he_ci = welch([(-1, x.hp), (1, rb.hp)])
        agree = holds0(e_ci)
        agree_all = agree and holds0(de_ci) and holds0(he_ci)
        line = {
            "bench": "items_vs_reference",
            "item": name,
            "kind": rd["kind"],
            "ours": "modelled" if modelled else "not modelled",
            "win_rate": [r(o.p), r(x.p)],
            **diff_ci("win_rate_diff", "win_rate_diff_ci95", wr_d, wr_ci),
            **diff_ci("decisions_diff", "decisions_diff_ci95", dec_d, dec_ci, 3),
            **diff_ci("hp_left_diff", "hp_left_diff_ci95", hp_d, hp_ci, 3),
            "effect": [r(eff[0]), r(eff[1])],
            **diff_ci("effect_diff", "ci95", e_d, e_ci),
            **diff_ci("decisions_effect_diff", "decisions_effect_ci95", de_d, de_ci, 3),
            **diff_ci("hp_effect_diff", "hp_effect_ci95", he_d, he_ci, 3),
            "agree": agree,
            "agree_all": agree_all,
            "effects_from": "paired fights" if paired else "independent samples",
            "fights": [o.n, x.n],
        }
        print(json.dumps(line))
        rows.append((line, holds0(de_ci), holds0(he_ci)))

    def pct(v):
        return f"{100 * v:+5.1f}"

    print()
    print(f"Items against sts_lightspeed: {ob.n} fights per item (ours), {rb.n} (reference); "
          f"baseline win rate {100 * ob.p:.1f} % (ours) / {100 * rb.p:.1f} % (reference)")
    print("win: win rate in %; effect: the item's win rate minus its engine's baseline, in points;")
    print("diff: ours minus the reference, with its 95 % interval; dec/hp: the effect differences")
    print("in decisions and in HP at the end (0 when lost) hold 0 in their 95 % intervals (ok)")
    print("or not (DIFF).")
    print("'not modelled': spirefleet has no model of the item yet, so its effect is 0 there.")
    hdr = (f"{'item':<22} {'kind':<8} {'win ours':>8} {'win ref':>7} {'eff ours':>8} "
           f"{'eff ref':>7} {'eff diff':>8} {'95 % interval':>15} {'dec':>4} {'hp':>4}  "
           f"agree  note")
    print(hdr)
    print("-" * len(hdr))
    for line, dec_ok, hp_ok in rows:
        e = line["effect"]
        ci = line["ci95"]
        note = "" if line["ours"] == "modelled" else "not modelled here"
        print(f"{line['item']:<22} {line['kind']:<8} {100 * line['win_rate'][0]:8.1f} "
              f"{100 * line['win_rate'][1]:7.1f} {pct(e[0]):>8} {pct(e[1]):>7} "
              f"{pct(line['effect_diff']):>8} {'[' + pct(ci[0]) + ',' + pct(ci[1]) + ']':>15} "
              f"{'ok' if dec_ok else 'DIFF':>4} {'ok' if hp_ok else 'DIFF':>4}  "
              f"{'yes' if line['agree'] else 'NO':<5}  {note}")
    modelled = [x for x, _, _ in rows if x["ours"] == "modelled" and x["item"] != "baseline"]
    print()
    print(f"{len(modelled)} items modelled by both: {sum(x['agree'] for x in modelled)} agree on "
          f"the win-rate effect, {sum(x['agree_all'] for x in modelled)} on all three effects.")
    if unimplemented:
        print("Not implemented by the reference (not compared):")
        for name, kind, why, ours_has in unimplemented:
            print(f"  {name} ({kind}{', modelled here' if ours_has else ''}): {why}")
    if ours_only:
        print("Modelled here, absent from the reference's table: " + ", ".join(ours_only))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
