#!/usr/bin/python3
"""The layer map of docs/architecture.md against the tree's includes.

usage: check_layers.py SOURCE_ROOT   (TAP on stdout)

Reads the "Layer map" tables (module -> modules it may include; file
exceptions) and fails for every `#include "x/..."` in a module directory
that crosses them, for any include of another module's internal.h, and for
a module directory the table does not name (so a new module must be placed
in the map).

A module is a top-level directory, or a subdirectory with a row of its own
(`fleet/cli`): a file belongs to the longest module path that contains it,
and an include names the module of the longest module path it starts with.
"""
import os
import re
import sys

ROOT = sys.argv[1]
DOC = os.path.join(ROOT, "docs", "architecture.md")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+/[^"]+)"', re.M)
SOURCES = (".c", ".h", ".cu")


def tables(text):
    """(layer rows, exception rows) from the Layer map section: the rows of
    the table headed "module", and of the table headed "file"."""
    sec = text.split("## Layer map", 1)[1]
    sec = sec.split("\n## ", 1)[0]
    rows = [ln for ln in sec.splitlines() if ln.startswith("|") and "---" not in ln]
    layers, exceptions, table = {}, {}, None
    for ln in rows:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        if cells[0] in ("module", "file"):
            table = layers if cells[0] == "module" else exceptions
            continue
        allowed = set() if cells[1] in ("—", "-", "") else {c.strip() for c in cells[1].split(",")}
        if table is not None:
            table[cells[0]] = allowed
    return layers, exceptions


def module_of(path, layers):
    """The longest module path that `path` (relative to the root) lies in."""
    best = None
    for mod in layers:
        if path.startswith(mod + "/") and (best is None or len(mod) > len(best)):
            best = mod
    return best


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
                own = module_of(rel, layers)
                text = open(path, encoding="utf-8", errors="replace").read()
                for m in INCLUDE.finditer(text):
                    inc = m.group(1)
                    checked += 1
                    target = module_of(inc, layers)
                    if target is None:
                        continue  # not a module (e.g. a system path)
                    if target == own:
                        continue
                    if inc.endswith("/internal.h"):
                        problems.append("%s includes %s: another module's internals" % (rel, inc))
                        continue
                    if target in layers[own] or target in exceptions.get(rel, set()):
                        continue
                    allowed = ", ".join(sorted(layers[own])) or "nothing"
                    problems.append("%s includes %s: %s may include only %s (docs/architecture.md"
                                    " \"Layer map\")" % (rel, inc, own, allowed))
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
