"""pycheck.py: the checks the Python test clients share (serve_client.py,
serve_h2drain.py).

    from pycheck import check, fail, finish

check(name, got, want) counts a pass or prints "FAIL: SUITE: name: got ...,
want ..."; fail(message) counts a failure with its message; finish() prints
"SUITE: N passed, M failed" and exits with 1 when any failed.  SUITE is the
client's file name without ".py" (or what set_suite() gave).
"""
import os
import sys

_state = {"suite": os.path.basename(sys.argv[0]).rsplit(".", 1)[0], "passed": 0, "failed": 0}


def set_suite(name):
    _state["suite"] = name


def fail(message):
    _state["failed"] += 1
    print("FAIL: %s: %s" % (_state["suite"], message))


def check(name, got, want):
    if got == want:
        _state["passed"] += 1
    else:
        fail("%s: got %r, want %r" % (name, got, want))


def finish():
    print("%s: %d passed, %d failed" % (_state["suite"], _state["passed"], _state["failed"]))
    sys.exit(1 if _state["failed"] else 0)
