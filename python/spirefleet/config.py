"""The fleet's run config, read through `sf-fleet check --json`.

The C schema (fleet/config.c) is the one home of the keys, their defaults
and their checks; this module never repeats them. ``load_config(path)``
runs ``sf-fleet check --json PATH`` and returns the effective config (every
section, every key, defaults filled) as a dict, plus its config digest.
A config that does not pass raises ``ConfigError`` whose message is
sf-fleet's own lines (``FILE:LINE:COL: key: problem``).

``sf-fleet`` is found as ``$SF_FLEET``, else beside this package in a
build tree (``<build>/python/spirefleet`` -> ``<build>/sf-fleet/sf-fleet``),
else on ``PATH``.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
from typing import Any


class ConfigError(Exception):
    """A config sf-fleet refuses, or no sf-fleet to ask."""


def find_sf_fleet() -> str:
    """The sf-fleet program to ask (see the module doc)."""
    env = os.environ.get("SF_FLEET")
    if env:
        if not os.access(env, os.X_OK):
            raise ConfigError("$SF_FLEET=%s: not an executable" % env)
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    beside = os.path.join(os.path.dirname(os.path.dirname(here)), "sf-fleet", "sf-fleet")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("sf-fleet")
    if found:
        return found
    raise ConfigError("cannot find sf-fleet: set $SF_FLEET, or use the package of a build tree "
                      "(PYTHONPATH=<build>/python), or put sf-fleet on PATH")


_HEX64 = re.compile(r"[0-9a-f]{64}")


def load_config(path: str) -> tuple[dict[str, Any], str]:
    """(config dict, config digest hex) of the YAML file `path`; raises
    ConfigError with sf-fleet's problem lines."""
    exe = find_sf_fleet()
    try:
        p = subprocess.run([exe, "check", "--json", os.fspath(path)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, check=False)
    except OSError as e:
        raise ConfigError("%s: cannot run: %s" % (exe, e)) from None
    if p.returncode != 0:
        lines = [ln[len("sf-fleet: "):] if ln.startswith("sf-fleet: ") else ln
                 for ln in p.stderr.strip().splitlines()]
        raise ConfigError("\n".join(lines) or "%s: sf-fleet check failed (exit %d)"
                          % (path, p.returncode))
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        raise ConfigError("%s: sf-fleet check --json printed no JSON (%s)" % (path, e)) from None
    digest = doc.get("config_digest") if isinstance(doc, dict) else None
    cfg = doc.get("config") if isinstance(doc, dict) else None
    if not isinstance(digest, str) or not _HEX64.fullmatch(digest) or not isinstance(cfg, dict):
        raise ConfigError("%s: sf-fleet check --json printed no config_digest and config" % path)
    return cfg, digest


def load_config_text(text: str, name: str = "command line") -> tuple[dict[str, Any], str]:
    """load_config() of YAML text (written to a temporary file); problems
    are reported with `name` in place of the temporary file's path."""
    fd, tmp = tempfile.mkstemp(prefix="spirefleet-config-", suffix=".yaml")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        try:
            return load_config(tmp)
        except ConfigError as e:
            raise ConfigError(str(e).replace(tmp, name)) from None
    finally:
        os.unlink(tmp)
