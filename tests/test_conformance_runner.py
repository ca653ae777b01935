"""The conformance runner: forked workers isolate crashing, hanging and failing cases."""

from __future__ import annotations

import ctypes
import os
import time

import numpy as np

from conformance.cases import Case
from conformance.checks import CheckFailure
from conformance.runner import Runner


def _ok() -> dict:
    return {"pid": os.getpid()}


def _wrong() -> None:
    raise CheckFailure("values differ", np.array([1.0]), np.array([2.0]))


def _error() -> None:
    raise ZeroDivisionError("boom")


def _segfault() -> None:
    ctypes.string_at(0)


def _hang() -> None:
    while True:
        time.sleep(0.5)


def _exit() -> None:
    os._exit(3)


def test_runner_reports_each_bad_case_and_continues():
    cases = [
        Case("t/ok1", "primitives", _ok),
        Case("t/segfault", "primitives", _segfault),
        Case("t/ok2", "primitives", _ok),
        Case("t/hang", "primitives", _hang, timeout=1.5),
        Case("t/wrong", "primitives", _wrong),
        Case("t/error", "primitives", _error),
        Case("t/exit", "primitives", _exit),
        Case("t/unsupported", "primitives", None, preset="not_supported", reason="no kernel"),
        Case("t/ok3", "primitives", _ok),
    ]
    seen = []
    runner = Runner(cases, timeout=120)
    results = runner.run(seen.append)
    by = {r.id: r for r in results}
    assert [r.id for r in results] == [c.id for c in cases]
    assert sorted(r.id for r in seen) == sorted(c.id for c in cases)
    assert {r.id for r in results if r.outcome == "passed"} == {"t/ok1", "t/ok2", "t/ok3"}
    assert "SIGSEGV" in by["t/segfault"].message and by["t/segfault"].outcome == "failed"
    # the case's own limit (1.5 s), not the runner's (120 s), named and obeyed
    assert "timed out after 1.5 s" in by["t/hang"].message and by["t/hang"].outcome == "failed"
    assert 1.5 <= by["t/hang"].duration < 60, by["t/hang"].duration
    assert (
        by["t/wrong"].outcome == "failed"
        and by["t/wrong"].expected.endswith("[1.]")
        and by["t/wrong"].got.endswith("[2.]")
    )
    assert "ZeroDivisionError: boom" in by["t/error"].message
    assert "status 3" in by["t/exit"].message
    assert by["t/unsupported"].outcome == "not_supported" and by["t/unsupported"].message == "no kernel"
    # the run went on in fresh workers after each crash, and never in this process
    assert runner.respawns == 3
    pids = {by[k].data["pid"] for k in ("t/ok1", "t/ok2", "t/ok3")}
    assert os.getpid() not in pids and len(pids) >= 2


def test_runner_with_two_jobs_keeps_order_and_outcomes():
    cases = [Case(f"t/{i}", "runtime", _ok if i % 3 else _wrong) for i in range(9)]
    results = Runner(cases, timeout=30, jobs=2).run()
    assert [r.id for r in results] == [c.id for c in cases]
    assert [r.outcome for r in results] == ["failed" if i % 3 == 0 else "passed" for i in range(9)]


def test_call_runs_one_job_in_a_child():
    status, value = Runner([], timeout=30).call(lambda: os.getpid())
    assert status == "ok" and value != os.getpid()
    status, text = Runner([], timeout=30).call(_segfault)
    assert status == "error" and "SIGSEGV" in text


def test_reports_honour_the_umask(tmp_path):
    import stat

    from conformance.report import write_json

    old = os.umask(0o022)
    try:
        write_json({"a": 1}, str(tmp_path / "r.json"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "r.json").st_mode) == 0o644
