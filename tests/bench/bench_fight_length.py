#!/usr/bin/python3
"""Fight lengths of a 1,200-seed run of configs/local.yaml, and job times.

usage: bench_fight_length.py SF_FLEET CONFIG [SEEDS]   (SEEDS default 1200)

Runs `sf-fleet run` on CONFIG (configs/local.yaml: rewards starts, 1,000
simulations, 4 trees) with seeds.count = SEEDS in a scratch directory, then
reads every shard: the job times from the manifests (stats.wall_seconds:
lease to sealed shard on its worker), the fights from the records (turns,
records, outcome). Before the turn cap and the turn discount of the win
score (docs/engine.md "The turn cap", docs/search.md "Finishing fights"),
one of these fights (game seed 268) never ended and its job ran until
stopped; the goal is no job over 10 times the median. One JSON line per
figure, then human lines.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

from spirefleet import open_shard


def emit(name, value, unit, human):
    print('{"bench":"fights.%s","value":%.6g,"unit":"%s","n":1,"median":%.6g}'
          % (name, value, unit, value))
    print("  %s: %.6g %s  (%s)" % (name, value, unit, human))


def quantile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def main():
    sf_fleet, config = sys.argv[1], sys.argv[2]
    seeds = int(sys.argv[3]) if len(sys.argv) > 3 else 1200
    work = tempfile.mkdtemp(prefix="sf-bench-fights-")
    try:
        with open(config) as f:
            cfg = yaml.safe_load(f)
        cfg["run"]["output_dir"] = os.path.join(work, "run")
        cfg["seeds"]["count"] = seeds
        path = os.path.join(work, "config.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f)
        t0 = time.monotonic()
        r = subprocess.run([sf_fleet, "run", path], capture_output=True, text=True)
        wall = time.monotonic() - t0
        if r.returncode != 0:
            sys.stderr.write(r.stdout + r.stderr)
            sys.exit("bench_fight_length: sf-fleet run failed (exit %d)" % r.returncode)
        shards = sorted(os.path.join(cfg["run"]["output_dir"], "shards", n)
                        for n in os.listdir(os.path.join(cfg["run"]["output_dir"], "shards"))
                        if n.endswith(".shard"))
        job_s, fights = [], {}
        for p in shards:
            with open_shard(p) as s:
                job_s.append(float(s.manifest["stats"]["wall_seconds"]))
                for i in range(len(s)):
                    rec = s.record(i)
                    key = (rec.ids.game_seed, rec.ids.fight_index)
                    f = fights.setdefault(key, {"records": 0, "turns": rec.outcome.turns,
                                                "won": rec.outcome.won,
                                                "turn_limit": rec.outcome.turn_limit})
                    f["records"] += 1
        job_s.sort()
        median = statistics.median(job_s)
        turns = sorted(f["turns"] for f in fights.values())
        longest = max(fights.items(), key=lambda kv: (kv[1]["turns"], kv[1]["records"]))
        most = max(fights.items(), key=lambda kv: kv[1]["records"])
        capped = sum(1 for f in fights.values() if f["turn_limit"])
        emit("run_seconds", wall, "s", "sf-fleet run of %d seeds, %d jobs, end to end"
             % (seeds, len(job_s)))
        emit("job_median_seconds", median, "s", "median job, lease to sealed shard")
        emit("job_max_seconds", job_s[-1], "s", "the longest job")
        emit("job_max_over_median", job_s[-1] / median, "x", "goal: at most 10")
        emit("longest_fight_turns", longest[1]["turns"], "turns",
             "game seed %d fight %d, %d records, %s"
             % (longest[0][0], longest[0][1], longest[1]["records"],
                "won" if longest[1]["won"] else "lost"))
        emit("most_records_in_a_fight", most[1]["records"], "records",
             "game seed %d fight %d, %d turns" % (most[0][0], most[0][1], most[1]["turns"]))
        emit("turns_p50", quantile(turns, 0.5), "turns", "median fight")
        emit("turns_p99", quantile(turns, 0.99), "turns", "99th percentile fight")
        emit("turns_p999", quantile(turns, 0.999), "turns", "99.9th percentile fight")
        emit("turn_limit_fights", capped, "fights", "ended at the turn cap (play.max_turns)")
        tail = sorted({t: turns.count(t) for t in set(turns)}.items())[-8:]
        print("  fights with records: %d; turn histogram tail: %s"
              % (len(fights), json.dumps(tail)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
