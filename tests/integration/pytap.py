"""A TAP runner for the Python integration tests: @test collects a test
function; main() runs them in order, prints "ok N - name" (with the returned
note as a comment) or "not ok" and the traceback as comments, runs the
cleanup, and returns the exit status (1 when any failed)."""

import sys
import traceback

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def main(cleanup=None):
    print("1..%d" % len(TESTS))
    failed = 0
    for k, fn in enumerate(TESTS, 1):
        try:
            note = fn()
            print("ok %d - %s%s" % (k, fn.__name__, " # " + note if note else ""))
        except Exception:
            failed += 1
            print("not ok %d - %s" % (k, fn.__name__))
            for line in traceback.format_exc().splitlines():
                print("# " + line)
        sys.stdout.flush()
    if cleanup:
        cleanup()
    return 1 if failed else 0
