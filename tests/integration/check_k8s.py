#!/usr/bin/python3
"""deploy/k8s validated offline (TAP): no cluster is reached.

usage: check_k8s.py SOURCE_ROOT SF_FLEET

- Every manifest kustomization.yaml lists exists, and every object in them
  goes through the python3-kubernetes models of its kind and back without
  losing a field (an unknown or misspelt field would be dropped, a wrong
  type or a missing required field refused): the client-side schema check.
- What the objects promise each other holds: selectors match their pod
  templates, Services' target ports and probes' ports name container
  ports, every container asks for resources, gpu-evald asks for
  nvidia.com/gpu, every object lies in the kustomization's namespace.
- The fleet YAML in the ConfigMap passes `sf-fleet check`, and agrees with
  the manifests: the endpoints the coordinator and gpu-evald bind are the
  ports their Services route to, the workers dial the coordinator's
  Service, the metrics port is the one the probes read, the output dir is
  on the coordinator's volume, a worker's threads are its cpu request.
- With a kubectl on PATH (any version), `kubectl kustomize` renders the
  directory (offline). Debian's kubernetes-client is not required: it
  cannot be installed beside another vendor's kubectl package.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import yaml
from kubernetes import client

ROOT, SF_FLEET = sys.argv[1], sys.argv[2]
K8S = os.path.join(ROOT, "deploy", "k8s")
n, failed = 0, False


def ok(label):
    global n
    n += 1
    print("ok %d - %s" % (n, label))


def notok(label, why=""):
    global n, failed
    n += 1
    failed = True
    print("not ok %d - %s" % (n, label))
    for line in str(why).splitlines()[:12]:
        print("# " + line)


def check(label, problems):
    if problems:
        notok(label, "\n".join(problems))
    else:
        ok(label)


MODELS = {
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Service"): "V1Service",
    ("v1", "PersistentVolumeClaim"): "V1PersistentVolumeClaim",
    ("apps/v1", "StatefulSet"): "V1StatefulSet",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("batch/v1", "Job"): "V1Job",
}

api = client.ApiClient()


def round_trip(doc):
    """The object through its model and back (raises on a refused value)."""
    model = MODELS[(doc["apiVersion"], doc["kind"])]
    obj = api._ApiClient__deserialize(doc, model)  # the client's own JSON -> model path
    return api.sanitize_for_serialization(obj)


def lost(orig, back, path="", out=None):
    """Fields of `orig` that `back` does not carry with the same value."""
    out = [] if out is None else out
    if isinstance(orig, dict):
        if not isinstance(back, dict):
            out.append("%s: became %r" % (path or "(top)", back))
            return out
        for k, v in orig.items():
            if k not in back:
                out.append("%s.%s: not a field of its model (misspelt, or unknown)" % (path, k))
            else:
                lost(v, back[k], "%s.%s" % (path, k), out)
    elif isinstance(orig, list):
        if not isinstance(back, list) or len(back) != len(orig):
            out.append("%s: list changed" % path)
            return out
        for i, (a, b) in enumerate(zip(orig, back)):
            lost(a, b, "%s[%d]" % (path, i), out)
    elif orig != back and str(orig) != str(back):
        out.append("%s: %r became %r" % (path, orig, back))
    return out


# ---- the files and the schema ------------------------------------------------
kust = yaml.safe_load(open(os.path.join(K8S, "kustomization.yaml")))
namespace = kust.get("namespace")
missing = [r for r in kust["resources"] if not os.path.isfile(os.path.join(K8S, r))]
listed = set(kust["resources"])
unlisted = [f for f in os.listdir(K8S) if f.endswith(".yaml") and f != "kustomization.yaml"
            and f not in listed]
check("kustomization.yaml lists %d manifests, each present, and every manifest is listed"
      % len(listed), ["missing: " + m for m in missing] + ["not listed: " + u for u in unlisted])

docs = []
for r in kust["resources"]:
    if r in missing:
        continue
    for d in yaml.safe_load_all(open(os.path.join(K8S, r))):
        if d:
            docs.append((r, d))

schema = []
for r, d in docs:
    key = (d.get("apiVersion"), d.get("kind"))
    if key not in MODELS:
        schema.append("%s: %s %s has no model here" % (r, *key))
        continue
    try:
        back = round_trip(d)
    except (ValueError, TypeError) as e:
        schema.append("%s: %s %s: refused: %s" % (r, d["kind"], d["metadata"]["name"], e))
        continue
    schema += ["%s: %s %s%s" % (r, d["kind"], d["metadata"]["name"], p) for p in lost(d, back)]
check("%d objects pass the python3-kubernetes %s models without losing a field"
      % (len(docs), client.__version__ if hasattr(client, "__version__") else ""), schema)

by_kind = {}
for _, d in docs:
    by_kind.setdefault(d["kind"], []).append(d)


def one(kind, name):
    for d in by_kind.get(kind, []):
        if d["metadata"]["name"] == name:
            return d
    return None


workloads = by_kind.get("StatefulSet", []) + by_kind.get("Deployment", []) + by_kind.get("Job", [])

# ---- what the objects promise each other -------------------------------------
probs = []
for _, d in docs:
    if namespace and d["kind"] != "Namespace" and d["metadata"].get("namespace") != namespace:
        probs.append("%s %s is not in namespace %s" % (d["kind"], d["metadata"]["name"], namespace))
for w in workloads:
    tmpl = w["spec"]["template"]
    labels = tmpl["metadata"].get("labels", {})
    sel = w["spec"].get("selector", {}).get("matchLabels")
    if w["kind"] != "Job" and (not sel or any(labels.get(k) != v for k, v in sel.items())):
        probs.append("%s %s: its selector does not match its pod template"
                     % (w["kind"], w["metadata"]["name"]))
    for c in tmpl["spec"]["containers"]:
        ports = {p["name"] for p in c.get("ports", [])}
        req = c.get("resources", {}).get("requests", {})
        if "cpu" not in req or "memory" not in req:
            probs.append("%s: no cpu and memory requests" % c["name"])
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            if probe in c:
                port = c[probe].get("httpGet", {}).get("port")
                if port not in ports:
                    probs.append("%s: %s reads port %r, which it does not declare"
                                 % (c["name"], probe, port))
                if c[probe].get("httpGet", {}).get("path") != "/metrics":
                    probs.append("%s: %s is not on /metrics" % (c["name"], probe))
for s in by_kind.get("Service", []):
    sel = s["spec"]["selector"]
    pods = [w for w in workloads
            if all(w["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in sel.items())]
    if not pods:
        probs.append("Service %s selects no workload" % s["metadata"]["name"])
    names = {p["name"] for w in pods for c in w["spec"]["template"]["spec"]["containers"]
             for p in c.get("ports", [])}
    for p in s["spec"]["ports"]:
        if p["targetPort"] not in names:
            probs.append("Service %s: targetPort %s is no port of its pods"
                         % (s["metadata"]["name"], p["targetPort"]))
check("selectors, Service ports, probes (/metrics on declared ports), requests and namespace "
      "agree", probs)

coord = one("StatefulSet", "spirefleet-coordinator")
evald = one("Deployment", "spirefleet-evald")
workers = one("Job", "spirefleet-workers")
probs = []
if not (coord and evald and workers):
    probs.append("expected StatefulSet spirefleet-coordinator, Deployment spirefleet-evald, "
                 "Job spirefleet-workers")
else:
    if not coord["spec"].get("volumeClaimTemplates"):
        probs.append("the coordinator has no persistent volume")
    ec = evald["spec"]["template"]["spec"]["containers"][0]
    for part in ("requests", "limits"):
        if "nvidia.com/gpu" not in ec["resources"].get(part, {}):
            probs.append("gpu-evald does not ask for nvidia.com/gpu in its %s" % part)
    if workers["spec"].get("completionMode") != "Indexed":
        probs.append("the workers are not an indexed Job")
    if workers["spec"]["parallelism"] > workers["spec"]["completions"]:
        probs.append("the workers' parallelism is above their completions")
check("a StatefulSet with a volume, gpu-evald asking for nvidia.com/gpu, workers as an indexed "
      "Job", probs)

# ---- the CURVE keys reach their pods readable, and accepted -------------------
# The kubelet writes a Secret's files owned by root with the volume's mode;
# with a pod fsGroup it makes them that group's and adds group read (0400
# becomes 0440). A non-root pod can read them only through that group, and
# sf-fleet accepts a root-owned key readable by its group but by no one else
# (sf_zsec_secret_mode_ok, common/zsec.h; tested in test-coordinator).
probs = []
for w in workloads:
    spec = w["spec"]["template"]["spec"]
    ctx = spec.get("securityContext", {})
    for v in spec.get("volumes", []):
        sec = v.get("secret")
        if not sec:
            continue
        modes = [sec.get("defaultMode", 0o644)] + [i["mode"] for i in sec.get("items", [])
                                                   if "mode" in i]
        name = "%s %s, volume %s" % (w["kind"], w["metadata"]["name"], v["name"])
        if any(m & 0o077 for m in modes):
            probs.append("%s: mode %s lets group or others read before fsGroup"
                         % (name, [oct(m) for m in modes]))
        if ctx.get("runAsUser", 0) != 0 and ctx.get("fsGroup") is None:
            probs.append("%s: the pod runs as uid %s without fsGroup, so it cannot read root's "
                         "0400 files" % (name, ctx.get("runAsUser")))
check("every pod that mounts the keys can read them through its fsGroup, and no one else can",
      probs)

# ---- the fleet YAML against the manifests ---------------------------------------
cm = one("ConfigMap", "spirefleet-config")
text = cm["data"]["fleet.yaml"] if cm else ""
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "fleet.yaml")
    open(path, "w").write(text)
    r = subprocess.run([SF_FLEET, "check", path], capture_output=True, text=True)
    if r.returncode == 0:
        ok("the ConfigMap's fleet.yaml passes sf-fleet check")
    else:
        notok("the ConfigMap's fleet.yaml fails sf-fleet check", r.stderr)
cfg = yaml.safe_load(text) if text else {}
probs = []
if cfg and coord and evald and workers:
    def port_of(ep):
        return int(ep.rsplit(":", 1)[1])

    cc = coord["spec"]["template"]["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in cc["ports"]}
    if port_of(cfg["coordinator"]["endpoint"]) != ports.get("fleet"):
        probs.append("coordinator.endpoint's port is not the coordinator's fleet port")
    if cfg["coordinator"].get("metrics_port") != ports.get("metrics"):
        probs.append("coordinator.metrics_port is not the port its probes read")
    mounts = [m["mountPath"] for m in cc["volumeMounts"] if m["name"] == "data"]
    if not mounts or not cfg["run"]["output_dir"].startswith(mounts[0] + "/"):
        probs.append("run.output_dir is not on the coordinator's volume")
    svc = one("Service", "spirefleet-evald")
    want = "tcp://%s:%d" % (svc["metadata"]["name"], svc["spec"]["ports"][0]["port"]) if svc else ""
    if cfg["evald"]["endpoint"] != want:
        probs.append("evald.endpoint %s is not gpu-evald's Service (%s)"
                     % (cfg["evald"]["endpoint"], want))
    ec = evald["spec"]["template"]["spec"]["containers"][0]
    cmd = ec["command"]
    if "tcp://*:%d" % {p["name"]: p["containerPort"] for p in ec["ports"]}["evald"] not in cmd:
        probs.append("gpu-evald does not bind its container port")
    wc = workers["spec"]["template"]["spec"]["containers"][0]
    csvc = one("Service", "spirefleet-coordinator")
    dial = ("tcp://%s:%d" % (csvc["metadata"]["name"], csvc["spec"]["ports"][0]["port"])
            if csvc else "?")
    if dial not in " ".join(wc["command"]):
        probs.append("the workers do not dial the coordinator's Service (%s)" % dial)
    if str(cfg["workers"]["threads"]) != str(wc["resources"]["requests"]["cpu"]):
        probs.append("workers.threads is not the worker's cpu request")
check("the config's endpoints, metrics port, output dir and threads match the manifests", probs)

kubectl = shutil.which("kubectl")
if kubectl:
    r = subprocess.run([kubectl, "kustomize", K8S], capture_output=True, text=True,
                       env=dict(os.environ, KUBECONFIG=os.devnull))
    rendered = [d for d in yaml.safe_load_all(r.stdout)] if r.returncode == 0 else []
    if r.returncode == 0 and len([d for d in rendered if d]) == len(docs):
        ok("kubectl kustomize renders the %d objects (offline)" % len(docs))
    else:
        notok("kubectl kustomize", r.stderr or "%d objects rendered" % len(rendered))
else:
    n += 1
    print("ok %d - # SKIP no kubectl on PATH: kustomize rendering not checked" % n)

print("1..%d" % n)
sys.exit(1 if failed else 0)
