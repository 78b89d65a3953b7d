#!/usr/bin/python3
"""The Python package's type check and linter, with the settings of
python/pyproject.toml.

usage: check_python.py typecheck|lint SOURCE_ROOT BUILD_PYTHON

typecheck  mypy (the [tool.mypy] settings) over BUILD_PYTHON/spirefleet:
           the build's copy of python/spirefleet beside the modules
           generated from the C sources (contract.py, label_pb2.py), so the
           imports between them are checked too. Errors name the build's
           copies (build/python/spirefleet/X.py is python/spirefleet/X.py).
lint       flake8 over [tool.flake8] paths (the package's sources and the
           Python tests and benchmarks), with its max-line-length (flake8
           5 reads no pyproject.toml, so its settings become flags here).

Exit status 0 when clean (meson's exitcode protocol).
"""

import glob
import os
import subprocess
import sys
import tomllib


def main() -> int:
    mode, root, build_py = sys.argv[1:4]
    pyproject = os.path.join(root, "python", "pyproject.toml")
    with open(pyproject, "rb") as f:
        conf = tomllib.load(f)["tool"]
    if mode == "typecheck":
        cache = os.path.join(os.path.dirname(os.path.abspath(build_py)), "mypy-cache")
        cmd = [sys.executable, "-m", "mypy", "--config-file", pyproject, "--cache-dir", cache,
               os.path.join(build_py, "spirefleet")]
    elif mode == "lint":
        fl = conf["flake8"]
        files = []
        for p in fl["paths"]:
            d = os.path.join(root, p)
            files += sorted(glob.glob(os.path.join(d, "*.py")))
        cmd = [sys.executable, "-m", "flake8", "--max-line-length", str(fl["max-line-length"])]
        cmd += files
    else:
        print("check_python.py: unknown mode %r (typecheck or lint)" % mode, file=sys.stderr)
        return 2
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main())
