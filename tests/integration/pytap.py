"""A TAP runner for the Python integration tests: @test collects a test
function; main() runs them, prints "ok N - name" (with the returned note as
a comment; a note starting "SKIP" is a TAP skip) or "not ok" and the
traceback as comments, runs the cleanup, and returns the exit status (1
when any failed).

Every case stands on its own: nothing a case leaves behind may be read by
another. Shared inputs are fixtures a case asks for (a function memoised
with functools.cache builds them on first use, whichever case comes
first), and scratch() is a directory of the case's own, made on first use
and removed when the case ends; main's before_each resets per-case state
(a random generator seeded by the case's name, not by what ran before).

The order is SF_TEST_ORDER's, else SF_TEST_ORDER_DEFAULT's (the meson
tests set "shuffle"), else the source order: "source", "reverse",
"shuffle" (a seed drawn and printed) or "shuffle:SEED"; the first TAP line
after the plan names the order so a failing shuffle can be replayed.
SF_TEST_ONLY=name[,name...] runs only the cases named.

The cleanup runs on every way out: a case that fails, the last case, and a
SIGTERM, SIGINT or SIGHUP (meson's timeout sends SIGTERM), which end the
run as SystemExit(128 + signal) through main's `finally`, so the daemons a
test started are stopped by it even then.
"""

import os
import random
import shutil
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable

TESTS: list[Callable[[], object]] = []
_scratch: list[str] = []  # the running case's scratch directory, once made


def test(fn: Callable[[], object]) -> Callable[[], object]:
    TESTS.append(fn)
    return fn


def scratch() -> str:
    """The running case's own directory (removed when the case ends)."""
    if not _scratch:
        _scratch.append(tempfile.mkdtemp(prefix="sf-case-"))
    return _scratch[0]


def ordered(tests: list[Callable[[], object]], spec: str) -> tuple[list[Callable[[], object]], str]:
    """The cases in the order `spec` (SF_TEST_ORDER) names, and its name."""
    if spec in ("", "source"):
        return list(tests), "source"
    if spec == "reverse":
        return list(reversed(tests)), "reverse"
    if spec == "shuffle" or spec.startswith("shuffle:"):
        seed = int(spec[8:]) if spec.startswith("shuffle:") else random.SystemRandom().randrange(
            1 << 32)
        out = list(tests)
        random.Random(seed).shuffle(out)
        return out, "shuffle:%d" % seed
    raise SystemExit("pytap: SF_TEST_ORDER=%r: expected source, reverse, shuffle or "
                     "shuffle:SEED" % spec)


def main(cleanup: Callable[[], object] | None = None,
         before_each: Callable[[Callable[[], object]], object] | None = None) -> int:
    """Run the cases (before_each(case) first, for per-case state such as a
    random generator seeded by the case's name); the exit status."""
    spec = os.environ.get("SF_TEST_ORDER") or os.environ.get("SF_TEST_ORDER_DEFAULT", "")
    tests, order = ordered(TESTS, spec)
    only = [n for n in os.environ.get("SF_TEST_ONLY", "").split(",") if n]
    if only:
        unknown = sorted(set(only) - {fn.__name__ for fn in tests})
        if unknown:
            raise SystemExit("pytap: SF_TEST_ONLY names no case %s" % ", ".join(unknown))
        tests = [fn for fn in tests if fn.__name__ in only]

    def stop(signum: int, frame: object) -> None:  # meson's timeout, ^C, a hang-up
        raise SystemExit(128 + signum)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    print("1..%d" % len(tests))
    print("# order: %s (SF_TEST_ORDER=%s replays it)" % (order, order))
    failed = 0
    try:
        for k, fn in enumerate(tests, 1):
            try:
                if before_each:
                    before_each(fn)
                note = fn()
                print("ok %d - %s%s" % (k, fn.__name__, " # " + str(note) if note else ""))
            except Exception:
                failed += 1
                print("not ok %d - %s" % (k, fn.__name__))
                for line in traceback.format_exc().splitlines():
                    print("# " + line)
            finally:
                while _scratch:
                    shutil.rmtree(_scratch.pop(), ignore_errors=True)
            sys.stdout.flush()
    finally:
        if cleanup:
            cleanup()
    return 1 if failed else 0
