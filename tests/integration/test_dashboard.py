#!/usr/bin/python3
"""The coordinator's dashboard (docs/operator.md "Dashboard") on real runs,
in headless Chromium.

usage: test_dashboard.py SF_FLEET SCHEMA SHOTS_DIR   (TAP on stdout)

SCHEMA is the build's coordinator/dashboard.schema.json (generated from
proto/fleet.proto); SHOTS_DIR is where the screenshots of the run, gate
and loop pages are written (kept for the reader; the test checks them).

Two real runs, each a coordinator serving its dashboard on an
OS-assigned loopback port and a worker that plays the run to the end:
a self-play run whose output_dir is a training loop's generation
(LOOP/gen1/selfplay, beside a loop.json written here, so the loop page has
something to show), and a gate run that decides. Their coordinators keep
serving after the run completes, so every number is settled: the page's
must equal `sf-fleet status --json`'s, the endpoints' documents must
follow the generated schema, and /api/gate must equal the verdict files
the coordinator wrote.
"""
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from pytap import main, test
from selfplay import fights_config

SF_FLEET, SCHEMA, SHOTS = sys.argv[1:4]
WORK = tempfile.mkdtemp(prefix="sf-dash-test-")
SCALE = float(os.environ.get("SF_WAIT_SCALE", "5"))
PROCS: list[subprocess.Popen[bytes]] = []
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=6000"]


def until(what, fn, secs):
    """fn() once it is truthy; fails naming `what` after secs x SCALE."""
    deadline = time.monotonic() + secs * SCALE
    while True:
        v = fn()
        if v:
            return v
        assert time.monotonic() < deadline, "waited %.0f s for %s" % (secs * SCALE, what)
        time.sleep(0.1)


def spawn(args, log):
    p = subprocess.Popen(args, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    PROCS.append(p)
    return p


def stop_all():
    """Stop every daemon this test started, by its pid, then remove WORK."""
    for p in PROCS:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in PROCS:
        try:
            p.wait(timeout=10 * SCALE)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    shutil.rmtree(WORK, ignore_errors=True)


def status_json(run_dir):
    r = subprocess.run([SF_FLEET, "status", "--json", run_dir], capture_output=True, text=True,
                       timeout=60)
    return json.loads(r.stdout) if r.returncode == 0 else None


def serve(name, config_text, run_dir):
    """Start a coordinator and a worker for the config; return (url, run_dir)
    once the run is complete."""
    cfg = os.path.join(WORK, name + ".yaml")
    with open(cfg, "w") as f:
        f.write(config_text)
    log = os.path.join(WORK, name + "-coordinator.log")
    spawn([SF_FLEET, "coordinator", cfg, "--metrics-port", "*"], log)

    def serving():
        m = re.search(r"serving on (tcp://\S+) \(metrics (http://127\.0\.0\.1:\d+)/metrics",
                      open(log).read())
        return m and (m.group(1), m.group(2))
    endpoint, url = until("the coordinator's serving line in " + log, serving, 30)
    spawn([SF_FLEET, "worker", "--connect", endpoint, "--keys", os.path.join(run_dir, "keys"),
           "--threads", "1"], os.path.join(WORK, name + "-worker.log"))
    until("run %s complete" % name, lambda: (status_json(run_dir) or {}).get("complete"), 120)
    # settled: the worker heard RunComplete, left, and is no longer alive
    until("the worker of %s to leave" % name,
          lambda: PROCS[-1].poll() is not None and status_json(run_dir)["workers_alive"] == 0, 60)
    # and the snapshot the dashboard reads (published every 250 ms) with it
    until("/api/status of %s to say so" % name,
          lambda: json.loads(get(url + "/api/status")[2])["workers_alive"] == 0, 30)
    return url


# heartbeats every 100 ms, a worker dead after 5 missed: a worker that left
# stops counting as alive within a second
COORDINATOR_DEFAULT = "coordinator: {endpoint: \"tcp://127.0.0.1:*\"}\n"
COORDINATOR = ("coordinator: {endpoint: \"tcp://127.0.0.1:*\", heartbeat_ms: 100, "
               "heartbeat_liveness: 5}\n")
LOOP = os.path.join(WORK, "loop")
LOOP_STATE = {
    "run": "dash", "config_digest": "0" * 64, "generation": 1, "stage": "selfplay",
    "champion": "ab" * 32, "candidate": "ab" * 32, "history": [],
    "generations": [
        {"generation": 0, "labels": 1200, "selfplay_model": "rollout",
         "train": {"val": {"value": 0.71, "policy": 1.90}}, "verdict": "promote", "pairs": 60,
         "llr": 2.95, "score_diff": 0.061, "win_rate_diff": 0.05},
        {"generation": 1, "labels": 1500, "selfplay_model": "ab" * 32,
         "train": {"val": {"value": 0.64, "policy": 1.72}}, "verdict": "reject", "pairs": 80,
         "llr": -2.95, "score_diff": -0.012, "win_rate_diff": -0.01},
    ],
}


@functools.cache
def selfplay():
    run_dir = os.path.join(LOOP, "gen1", "selfplay")
    os.makedirs(run_dir)
    with open(os.path.join(LOOP, "loop.json"), "w") as f:
        json.dump(LOOP_STATE, f, indent=2)
    text = fights_config("dash", run_dir, seed=5, count=12, job_size=2, simulations=60, trees=1,
                         workers=1).replace(COORDINATOR_DEFAULT, COORDINATOR)
    return serve("selfplay", text, run_dir), run_dir


@functools.cache
def gate():
    run_dir = os.path.join(WORK, "gate")
    text = ("run: {name: dgate, output_dir: \"%s\", seed: 11, kind: gate}\n" % run_dir
            + "seeds: {start: 7000, count: 120, job_size: 10}\n"
            + "play: {mode: fights, encounters: {weak: 1, strong: 2, elite: 2}}\n"
            + "search: {simulations: 40, trees: 1}\n"
            + "champion: {evaluator: rollout, simulations: 3}\n"
            + "candidate: {evaluator: rollout, simulations: 100, trees: 2}\n"
            + "gate: {min_pairs: 20, max_pairs: 120, delta1: 0.1}\n"
            + "workers: {count: 1, threads: 1, fights_per_thread: 4}\n"
            + COORDINATOR)
    return serve("gate", text, run_dir), run_dir


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, r.headers.get("Content-Type"), r.read()


def chromium(*args):
    ud = tempfile.mkdtemp(dir=WORK, prefix="profile-")
    r = subprocess.run([CHROMIUM] + FLAGS + ["--user-data-dir=" + ud] + list(args),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-500:]
    return r.stdout


def dom_of(url):
    """The page's DOM once it has drawn (its body carries data-refreshes)."""
    dom = chromium("--dump-dom", url)
    assert re.search(r'data-refreshes="\d+"', dom), "the page never finished a refresh:\n" + dom[
        -800:]
    return dom


def text(dom, ident):
    m = re.search(r'id="%s"[^>]*>([^<]*)<' % re.escape(ident), dom)
    assert m, "no element %s in the page" % ident
    return m.group(1)


def screenshot(url, name):
    shot = os.path.join(SHOTS, name + ".png")
    if os.path.exists(shot):
        os.unlink(shot)
    chromium("--screenshot=" + shot, "--window-size=1280,1700", url)
    data = open(shot, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", shot
    # a drawn page compresses far worse than a blank one (a few kB)
    assert len(data) > 40000, (shot, len(data))


def validate(doc, schema, root, where="$"):
    """A small JSON Schema check: $ref, type, properties, required,
    additionalProperties false, items, minimum, enum."""
    if "$ref" in schema:
        schema = root["$defs"][schema["$ref"].split("/")[-1]]
    kinds = schema.get("type")
    if kinds:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        py = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
        ok = any((k == "integer" and isinstance(doc, int) and not isinstance(doc, bool))
                 or (k == "number" and isinstance(doc, (int, float)) and not isinstance(doc, bool))
                 or (k in py and isinstance(doc, py[k])) for k in kinds)
        assert ok, "%s: %r is not %s" % (where, doc, kinds)
    if "enum" in schema:
        assert doc in schema["enum"], "%s: %r not in %s" % (where, doc, schema["enum"])
    if "minimum" in schema:
        assert doc >= schema["minimum"], "%s: %r < %r" % (where, doc, schema["minimum"])
    if isinstance(doc, dict):
        for k in schema.get("required", []):
            assert k in doc, "%s: no %s" % (where, k)
        if schema.get("additionalProperties") is False:
            extra = set(doc) - set(schema.get("properties", {}))
            assert not extra, "%s: keys not in the schema: %s" % (where, sorted(extra))
        for k, v in doc.items():
            if k in schema.get("properties", {}):
                validate(v, schema["properties"][k], root, where + "." + k)
    if isinstance(doc, list) and "items" in schema:
        for i, v in enumerate(doc):
            validate(v, schema["items"], root, "%s[%d]" % (where, i))


# Status fields that change while a coordinator idles (rates over the last
# minute, clocks): compared for type only.
MOVING = {"labels_per_s", "eta_s", "job_median_s", "longest_running_s"}


@test
def endpoints_follow_the_generated_schema():
    url, _ = selfplay()
    schema = json.load(open(SCHEMA))
    for path, ref in schema["x-endpoints"].items():
        status, ctype, body = get(url + path)
        assert status == 200 and ctype == "application/json", (path, status, ctype)
        validate(json.loads(body), ref, schema, path)
    # the schema served is the one built
    assert json.loads(get(url + "/api/schema")[2]) == schema
    return "%d endpoints" % len(schema["x-endpoints"])


@test
def the_page_reads_only_fields_the_schema_has():
    """The run view's JS names status fields as `s.NAME` and worker fields
    as `r.NAME`: each must be a field of StatusReply / WorkerInfo."""
    url, _ = selfplay()
    page = get(url + "/")[2].decode()
    defs = json.load(open(SCHEMA))["$defs"]
    missing = []
    for var, msg in (("s", "StatusReply"), ("r", "WorkerInfo")):
        used = set(re.findall(r"\b%s\.([a-z_]+)\b" % var, page))
        assert len(used) > 5, (var, used)
        missing += ["%s.%s" % (msg, k) for k in sorted(used - set(defs[msg]["properties"]))]
    assert not missing, "the page reads fields fleet.proto lacks: %s" % missing


@test
def api_status_is_status_json():
    url, run_dir = selfplay()

    # /api/status reads the snapshot the loop publishes every 250 ms, the
    # ZeroMQ status the loop's state now: equal once both have settled
    def differ():
        api = json.loads(get(url + "/api/status")[2])
        cli = status_json(run_dir)
        assert list(api) == list(cli), "the same keys in the same order"
        return {k: (api[k], cli[k]) for k in api if k not in MOVING and api[k] != cli[k]}

    last: dict[str, dict[str, object]] = {}

    def same():
        last["diff"] = differ()
        last.setdefault("first", last["diff"])
        return not last["diff"]
    try:
        until("/api/status to equal status --json", same, 10)
    except AssertionError:
        raise AssertionError("fields that differ (api, cli): %s" % last["diff"])
    api = json.loads(get(url + "/api/status")[2])
    assert api["complete"] is True and api["jobs_done"] == api["jobs_total"] == 6
    assert api["labels"] > 0 and api["fights"] == 12, api["fights"]  # one fight a seed
    return "first reading differed in %s" % last["first"] if last["first"] else None


@test
def workers_count_the_jobs_they_stored():
    url, run_dir = selfplay()
    workers = json.loads(get(url + "/api/workers")[2])["workers"]
    st = status_json(run_dir)
    assert len(workers) == 1, workers
    w = workers[0]
    assert w["jobs_done"] == st["jobs_done"] and w["labels"] == st["labels"], (w, st)
    assert w["failures"] == 0 and w["quarantined"] is False and len(w["key_id"]) == 16, w


@test
def run_page_shows_status_json():
    url, run_dir = selfplay()
    dom = dom_of(url + "/#run")
    st = status_json(run_dir)
    assert text(dom, "run-name") == "dash"
    assert text(dom, "run-state") == "COMPLETE"
    assert int(text(dom, "jobs-done")) == st["jobs_done"]
    assert int(text(dom, "jobs-total")) == st["jobs_total"]
    assert int(text(dom, "labels")) == st["labels"]
    assert text(dom, "eta") == "done"
    # every settled status field, as the page's full table shows it
    shown = 0
    for k, v in st.items():
        if k in MOVING or isinstance(v, (list, float)):
            continue
        want = ("true" if v else "false") if isinstance(v, bool) else str(v)
        assert text(dom, "st-" + k) == want, (k, text(dom, "st-" + k), want)
        shown += 1
    assert shown > 40, shown
    workers = json.loads(get(url + "/api/workers")[2])["workers"]
    row = re.search(r'<tr id="worker-%s">(.*?)</tr>' % re.escape(workers[0]["worker_id"]), dom)
    assert row, "no row for the worker"
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row.group(1))
    assert cells[1] == workers[0]["key_id"] and int(cells[4]) == st["jobs_done"], cells
    assert int(cells[5]) == st["labels"] and cells[9] in ("alive", "gone"), cells
    # the jobs table and the labels/s plot were drawn
    assert re.search(r'<tr id="jobs-done"><td class="l">done</td><td class="">%d</td>'
                     % st["jobs_done"], dom), "jobs table"
    i = dom.index('id="plot-rate"')
    assert 'class="series"' in dom[i:i + 20000], "the labels/s plot has its line"
    screenshot(url + "/#run", "run")


@test
def gate_endpoint_equals_the_verdict_files():
    url, run_dir = gate()
    g = json.loads(get(url + "/api/gate")[2])
    verdict = json.load(open(os.path.join(run_dir, "gate", "verdict.json")))
    pairs = [json.loads(x) for x in open(os.path.join(run_dir, "gate", "pairs.jsonl"))]
    assert g["decided"] is True
    assert g["verdict"] == verdict, "the verdict as the coordinator wrote it"
    assert g["pairs"] == pairs, "one entry per pairs.jsonl line"


@test
def gate_page_shows_the_sprt():
    url, run_dir = gate()
    dom = dom_of(url + "/#gate")
    st = status_json(run_dir)
    verdict = json.load(open(os.path.join(run_dir, "gate", "verdict.json")))
    assert text(dom, "gate-verdict") == verdict["verdict"].upper()
    assert int(text(dom, "gate-pairs")) == verdict["pairs"] == st["gate_pairs"]
    assert text(dom, "gate-llr") == "%.3f" % st["gate_llr"]
    i = dom.index('id="plot-llr"')
    llr = dom[i:dom.index("</svg>", i)]
    assert llr.count('class="hline"') == 2 and 'class="series"' in llr, "LLR and its bounds"
    pts = re.search(r'class="series" points="([^"]*)"', llr).group(1).split()
    assert len(pts) == verdict["pairs"], (len(pts), verdict["pairs"])
    for cls, c in verdict["per_class"].items():
        row = re.search(r'<tr id="class-%s">(.*?)</tr>' % cls, dom)
        assert row, "no row for class " + cls
        cells = re.findall(r"<td[^>]*>([^<]*)</td>", row.group(1))
        assert [int(x) for x in cells[1:6]] == [c["pairs"], c["only_candidate"],
                                                c["only_champion"], c["both"], c["neither"]]
    screenshot(url + "/#gate", "gate")


@test
def loop_page_shows_generations_and_the_learning_curve():
    url, _ = selfplay()
    status, _, body = get(url + "/api/loop")
    assert status == 200 and json.loads(body) == LOOP_STATE
    dom = dom_of(url + "/#loop")
    assert text(dom, "loop-stage") == "selfplay" and text(dom, "loop-generation") == "1"
    for g in LOOP_STATE["generations"]:
        row = re.search(r'<tr id="gen-%d">(.*?)</tr>' % g["generation"], dom)
        assert row, "no row for generation %d" % g["generation"]
        cells = re.findall(r"<td[^>]*>([^<]*)</td>", row.group(1))
        assert cells[1] == str(g["labels"]) and cells[4] == g["verdict"], cells
        assert cells[5] == str(g["pairs"]) and cells[6] == "%.3f" % g["llr"], cells
    i = dom.index('id="plot-curve"')
    curve = dom[i:dom.index("</svg>", i)]
    assert curve.count('class="series"') == 2, "one line per head (value, policy)"
    screenshot(url + "/#loop", "loop")


@test
def a_run_that_is_no_gate_says_so():
    url, _ = selfplay()
    try:
        get(url + "/api/gate")
        raise AssertionError("/api/gate answered for a self-play run")
    except urllib.error.HTTPError as e:
        assert e.code == 404
        assert json.loads(e.read())["error"] == \
            "run dash is not a gate run (run.kind selfplay)"


@test
def a_refused_hello_is_among_the_recent_errors():
    """A worker whose id is no plain name is refused at Hello: /api/errors
    lists it, newest first, and the run page's Recent errors shows it."""
    url, run_dir = selfplay()
    r = subprocess.run([SF_FLEET, "worker", "--connect-file",
                        os.path.join(run_dir, "coordinator.endpoint"), "--id", "not a name",
                        "--keys", os.path.join(run_dir, "keys"), "--max-jobs", "1"],
                       capture_output=True, text=True, timeout=60 * SCALE)
    assert r.returncode != 0 and "worker_id must be" in r.stderr, (r.returncode, r.stderr)

    def refused():
        log = json.loads(get(url + "/api/errors")[2])
        hits = [e for e in log["events"] if e["what"] == "refused"
                and "worker_id must be" in e["detail"]]
        return hits and (log, hits[0])
    log, ev = until("the refusal in /api/errors", refused, 30)
    assert log["total"] >= 1 and ev["who"] == "run" and ev["unix_s"] > time.time() - 600, ev
    dom = dom_of(url + "/#run")
    table = re.search(r'id="errors-table".*?</table>', dom, re.S)
    shown = table.group(0) if table else ""
    assert "worker_id must be" in shown and "refused" in shown, dom[-800:]


@test
def an_operator_key_shows_the_dashboard_through_the_curve_socket():
    """sf-fleet dashboard RUN_DIR: the same documents and page on a port of
    this machine, each request asked through the coordinator's CURVE
    socket with the run's operator key; bundles are not served that way."""
    url, run_dir = selfplay()
    log = os.path.join(WORK, "proxy.log")
    p = spawn([SF_FLEET, "dashboard", run_dir, "--port", "*"], log)

    def address():
        m = re.search(r"(http://127\.0\.0\.1:\d+)/ shows the coordinator", open(log).read())
        return m and m.group(1)
    proxied = until("sf-fleet dashboard's address in " + log, address, 30)
    for path in ("/api/status", "/api/workers", "/api/loop", "/api/schema"):
        a, b = json.loads(get(proxied + path)[2]), json.loads(get(url + path)[2])
        if path == "/api/status":
            a = {k: v for k, v in a.items() if k not in MOVING}
            b = {k: v for k, v in b.items() if k not in MOVING}
        if path == "/api/workers":  # seconds since each worker's last message move on
            for w in a["workers"] + b["workers"]:
                w.pop("last_heartbeat_s")
        assert a == b, (path, a, b)
    status, ctype, body = get(proxied + "/")
    assert status == 200 and ctype.startswith("text/html") and body == get(url + "/")[2]
    try:
        get(proxied + "/models/" + "ab" * 32)
        raise AssertionError("a bundle path was answered")
    except urllib.error.HTTPError as e:
        assert e.code == 404, e
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=10 * SCALE) == 0


@test
def a_key_that_is_no_operators_is_refused_the_dashboard():
    _, run_dir = selfplay()
    keys = os.path.join(WORK, "worker-keys")
    os.makedirs(keys, exist_ok=True)
    for name in ("server.pub", "worker.key"):
        shutil.copy(os.path.join(run_dir, "keys", name), keys)
    r = subprocess.run([SF_FLEET, "dashboard", run_dir, "--keys", keys, "--port", "*"],
                       capture_output=True, text=True, timeout=60 * SCALE)
    assert r.returncode == 1 and "needs an operator key" in r.stderr, (r.returncode, r.stderr)


@test
def status_json_of_a_loop_directory_is_its_loop_json():
    selfplay()
    r = subprocess.run([SF_FLEET, "status", "--json", LOOP], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout) == LOOP_STATE, r.stderr


if __name__ == "__main__":
    os.makedirs(SHOTS, exist_ok=True)
    sys.exit(main(cleanup=stop_all))
