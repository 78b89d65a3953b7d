#!/usr/bin/python3
"""deploy/grafana/spirefleet.json and the Prometheus scrape config of
deploy/k8s validated offline (TAP): no Grafana or Prometheus is reached.

usage: check_grafana.py SOURCE_ROOT

- The dashboard is a Grafana dashboard as Grafana 10 imports it: a title,
  a uid, an integer schemaVersion, panels with unique integer ids, a known
  type and a gridPos inside the 24-column grid that overlaps no other
  panel; every panel but a row reads the Prometheus datasource variable
  and has targets with unique refIds and non-empty PromQL whose brackets
  balance; every $variable a query uses is defined in templating.
- Every metric name in its PromQL is one the coordinator
  (coordinator/metrics.c) or gpu-evald (gpu-evald/metrics.c) serves, every
  label it selects or groups by is one they write, and every metric family
  they serve appears on the board. The names come from those C sources
  (the strings they print), not from a list kept here.
- deploy/k8s/prometheus.yaml's prometheus.yml parses and has a scrape job
  for each component, and each component's pod template carries the
  prometheus.io annotations with the port its container calls "metrics".
"""
import json
import os
import re
import sys

import yaml

ROOT = sys.argv[1]
BOARD = os.path.join(ROOT, "deploy", "grafana", "spirefleet.json")
SOURCES = [os.path.join(ROOT, "coordinator", "metrics.c"),
           os.path.join(ROOT, "gpu-evald", "metrics.c")]
PANEL_TYPES = {"row", "timeseries", "stat", "gauge", "table", "bargauge", "text"}
PROMQL_WORDS = {"sum", "max", "min", "avg", "count", "rate", "irate", "increase", "by",
                "without", "histogram_quantile", "label_values", "on", "ignoring", "le"}
n, failed = 0, False


def check(label, problems):
    global n, failed
    n += 1
    if problems:
        failed = True
        print("not ok %d - %s" % (n, label))
        for p in problems[:12]:
            print("# " + str(p))
    else:
        print("ok %d - %s" % (n, label))


def served():
    """Metric names and label names the two programs print."""
    names, labels = set(), set()
    for path in SOURCES:
        src = open(path).read()
        names |= set(re.findall(r"\b((?:spirefleet|sf_evald)_[a-z0-9_]+)\b", src))
        labels |= set(re.findall(r"[{,]([a-z_]+)=\\\"", src))
        # the coordinator's table names a family's label in its own column
        labels |= set(re.findall(r'"(?:gauge|counter)", "([a-z_]+)"', src))
    return names, labels


board = json.load(open(BOARD))
panels = board.get("panels", [])
problems = []
for key, kind in (("title", str), ("uid", str), ("schemaVersion", int), ("panels", list)):
    if not isinstance(board.get(key), kind):
        problems.append("%s: not a %s" % (key, kind.__name__))
ids = [p.get("id") for p in panels]
if len(set(ids)) != len(ids) or not all(isinstance(i, int) for i in ids):
    problems.append("panel ids are not unique integers: %s" % ids)
cells = {}
for p in panels:
    g = p.get("gridPos", {})
    if p.get("type") not in PANEL_TYPES:
        problems.append("panel %s: type %r" % (p.get("id"), p.get("type")))
    if not all(isinstance(g.get(k), int) for k in "hwxy") or g["w"] < 1 or g["h"] < 1 \
            or g["x"] < 0 or g["x"] + g["w"] > 24:
        problems.append("panel %s: gridPos %s" % (p.get("id"), g))
        continue
    for x in range(g["x"], g["x"] + g["w"]):
        for y in range(g["y"], g["y"] + g["h"]):
            if (x, y) in cells:
                problems.append("panel %s overlaps panel %s at %d,%d"
                                % (p["id"], cells[(x, y)], x, y))
            cells[(x, y)] = p["id"]
check("%s: %d panels, unique ids, known types, gridPos on the grid without overlap"
      % (os.path.relpath(BOARD, ROOT), len(panels)), problems)

variables = {v["name"] for v in board.get("templating", {}).get("list", [])}
problems = []
exprs = []
for p in panels:
    if p["type"] == "row":
        continue
    ds = p.get("datasource", {})
    if ds.get("type") != "prometheus" or ds.get("uid") != "${datasource}":
        problems.append("panel %d: datasource %s" % (p["id"], ds))
    targets = p.get("targets", [])
    refs = [t.get("refId") for t in targets]
    if not targets or len(set(refs)) != len(refs):
        problems.append("panel %d: targets %s" % (p["id"], refs))
    for t in targets:
        e = t.get("expr", "")
        exprs.append((p["id"], e))
        if not e.strip():
            problems.append("panel %d %s: no expr" % (p["id"], t.get("refId")))
        for o, c in ("()", "{}", "[]"):
            if e.count(o) != e.count(c):
                problems.append("panel %d: unbalanced %s%s in %s" % (p["id"], o, c, e))
        for v in re.findall(r"\$\{?(\w+)", e):
            if v not in variables:
                problems.append("panel %d: $%s is not a templating variable" % (p["id"], v))
if "datasource" not in variables:
    problems.append("no datasource variable")
check("every panel reads ${datasource} (Prometheus) with non-empty PromQL; its variables exist",
      problems)

names, labels = served()
families = {x for x in names if not re.search(r"_(bucket|sum|count)$", x)
            or x.rsplit("_", 1)[0] not in names}
used, problems = set(), []
for pid, e in exprs:
    stripped = re.sub(r'"[^"]*"', '""', e)
    for m in re.findall(r"\b((?:spirefleet|sf_evald)_[a-z0-9_]+)\b", stripped):
        used.add(m)
        if m not in names:
            problems.append("panel %d: %s is served by neither program" % (pid, m))
    for sel in re.findall(r"\{([^}]*)\}", stripped):
        for lab in re.findall(r"([a-z_]+)\s*=~?", sel):
            if lab not in labels:
                problems.append("panel %d: label %s in %s" % (pid, lab, e))
    for grp in re.findall(r"\bby\s*\(([^)]*)\)", stripped):
        for lab in re.split(r"\s*,\s*", grp.strip()):
            if lab not in labels:
                problems.append("panel %d: grouped by %s, a label neither writes" % (pid, lab))
check("every metric and label in the PromQL is one coordinator/metrics.c or "
      "gpu-evald/metrics.c serves (%d names, %d labels)" % (len(names), len(labels)), problems)
covered = {f for f in families
           if f in used or any(u.startswith(f + "_") for u in used)}
check("every metric family the two programs serve is on the board (%d)" % len(families),
      ["%s is on no panel" % f for f in sorted(families - covered)])

k8s = os.path.join(ROOT, "deploy", "k8s")
problems = []
prom = yaml.safe_load(open(os.path.join(k8s, "prometheus.yaml")))
conf = yaml.safe_load(prom["data"]["prometheus.yml"])
jobs = {j["job_name"]: j for j in conf.get("scrape_configs", [])}
for comp, manifest in (("coordinator", "coordinator.yaml"), ("evald", "evald.yaml")):
    job = jobs.get("spirefleet-" + comp)
    if not job:
        problems.append("no scrape job spirefleet-%s" % comp)
        continue
    keep = [r for r in job.get("relabel_configs", []) if r.get("action") == "keep"]
    if not any(r.get("regex") == comp for r in keep):
        problems.append("job spirefleet-%s keeps no %s pods" % (comp, comp))
    for doc in yaml.safe_load_all(open(os.path.join(k8s, manifest))):
        if doc["kind"] not in ("StatefulSet", "Deployment"):
            continue
        tmpl = doc["spec"]["template"]
        ann = tmpl["metadata"].get("annotations", {})
        ports = {p["name"]: p["containerPort"]
                 for c in tmpl["spec"]["containers"] for p in c.get("ports", [])}
        if ann.get("prometheus.io/scrape") != "true" \
                or ann.get("prometheus.io/port") != str(ports.get("metrics")) \
                or ann.get("prometheus.io/path") != "/metrics":
            problems.append("%s: annotations %s, metrics port %s"
                            % (manifest, ann, ports.get("metrics")))
check("deploy/k8s/prometheus.yaml scrapes both components at their annotated metrics ports",
      problems)

print("1..%d" % n)
sys.exit(1 if failed else 0)
