#!/usr/bin/python3
"""The layer map of docs/architecture.md against the tree's includes.

usage: check_layers.py SOURCE_ROOT   (TAP on stdout)

Reads the "Layer map" tables (module -> modules it may include; file
exceptions) and fails for every `#include "x/..."` in a module directory
that crosses them, for any include of another module's internal.h, and for
a module directory the table does not name (so a new module must be placed
in the map).
"""
import os
import re
import sys

ROOT = sys.argv[1]
DOC = os.path.join(ROOT, "docs", "architecture.md")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/([^"]+)"', re.M)
SOURCES = (".c", ".h", ".cu")


def tables(text):
    """(layer rows, exception rows) from the Layer map section."""
    sec = text.split("## Layer map", 1)[1]
    sec = sec.split("\n## ", 1)[0]
    rows = [ln for ln in sec.splitlines() if ln.startswith("|") and "---" not in ln]
    layers, exceptions = {}, {}
    for ln in rows:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        if cells[0] in ("module", "file"):
            continue
        allowed = set() if cells[1] in ("—", "-", "") else {c.strip() for c in cells[1].split(",")}
        if "/" in cells[0]:
            exceptions[cells[0]] = allowed
        else:
            layers[cells[0]] = allowed
    return layers, exceptions


def main():
    layers, exceptions = tables(open(DOC, encoding="utf-8").read())
    problems, checked = [], 0
    for mod in sorted(os.listdir(ROOT)):
        d = os.path.join(ROOT, mod)
        if not os.path.isdir(d) or mod.startswith((".", "build")) or mod in ("tests", "docs"):
            continue
        has_code = any(f.endswith(SOURCES) for _, _, fs in os.walk(d) for f in fs)
        if not has_code:
            continue
        if mod not in layers:
            problems.append("%s/: a module directory the layer map does not name" % mod)
            continue
        for dirpath, _, files in os.walk(d):
            for f in files:
                if not f.endswith(SOURCES):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, ROOT)
                text = open(path, encoding="utf-8", errors="replace").read()
                for m in INCLUDE.finditer(text):
                    target, header = m.group(1), m.group(2)
                    checked += 1
                    if target == mod:
                        continue
                    if header == "internal.h" or header.endswith("/internal.h"):
                        problems.append("%s includes %s/%s: another module's internals"
                                        % (rel, target, header))
                        continue
                    if target not in layers:
                        continue  # not a module (e.g. a system path)
                    if target in layers[mod] or target in exceptions.get(rel, set()):
                        continue
                    problems.append("%s includes %s/%s: %s may include only %s (docs/architecture.md"
                                    " \"Layer map\")" % (rel, target, header, mod,
                                                         ", ".join(sorted(layers[mod])) or "nothing"))
    print("1..2")
    print("ok 1 - layer map read: %d modules, %d file exceptions" % (len(layers), len(exceptions))
          if layers else "not ok 1 - no layer map in docs/architecture.md")
    if problems:
        print("not ok 2 - %d includes cross the layer map (%d checked)" % (len(problems), checked))
        for p in problems:
            print("# " + p)
        return 1
    print("ok 2 - %d includes respect the layer map" % checked)
    return 0 if layers else 1


if __name__ == "__main__":
    sys.exit(main())
