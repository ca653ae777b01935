"""Conformance reports: failures grouped by cause in the terminal, the JSON and the HTML; one
line of progress marks per tier however results arrive; a plugin loaded with --plugin named
after its device."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

from conformance.cases import Result
from conformance.html import render
from conformance.report import Progress, build, failure_groups, summary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS = ["add", "sub", "mul", "div", "exp", "log", "scatter_add", "matmul", "where"]
DTYPES = ["float32", "float64", "float16", "int32", "int64", "uint8", "int8", "int16", "bool"]


def _compiler_broken() -> list[Result]:
    """441 failures with one cause (a compiler that builds nothing), each message naming its
    own kernel and a cache key, plus two unrelated failures and some passes."""
    out = []
    for i in range(441):
        op, dt = OPS[i % len(OPS)], DTYPES[(i // len(OPS)) % len(DTYPES)]
        out.append(
            Result(
                f"primitives/{op}[{dt}]#{i}",
                "primitives",
                "failed",
                op,
                dt,
                message=f"CompileError: [opencl] clBuildProgram failed for kernel '{op}_{dt}' "
                f"(cache key {i:08x}{'ab' * 4}): error: unknown type name 'half'",
            )
        )
    out.append(
        Result(
            "primitives/neg[float32]",
            "primitives",
            "failed",
            "neg",
            "float32",
            message="neg[float32] shape (3,): 1 of 3 elements wrong",
            expected="1.0",
            got="2.0",
        )
    )
    out.append(Result("runtime/elapsed_ms", "runtime", "failed", message="elapsed_ms() returned 0.1"))
    out += [Result(f"random/case{i}", "random", "passed") for i in range(5)]
    return out


def _report(results: list[Result]) -> dict:
    meta = {"device": "opencl:0", "plugin": "opencl", "duration_s": 1.0}
    return build(meta, results, {"runtime", "primitives", "random"}, False, {})


def test_failures_with_one_cause_are_one_headline_with_a_count():
    results = _compiler_broken()
    groups = failure_groups([r.to_dict() for r in results])
    assert [g["count"] for g in groups] == [441, 1, 1]
    assert groups[0]["cause"] == (
        "CompileError: [opencl] clBuildProgram failed for kernel '{op}_{dtype}' "
        "(cache key …): error: unknown type name 'half'"
    )
    assert (
        groups[1]["cause"] == "neg[float32] shape (3,): 1 of 3 elements wrong"
    )  # a group of one keeps its text
    assert groups[0]["ids"][:2] == ["primitives/add[float32]#0", "primitives/sub[float32]#1"]

    report = _report(results)
    assert report["failure_groups"] == groups  # in the JSON too
    out = io.StringIO()
    summary(report, results, out)
    text = out.getvalue()
    assert "failures: 443 cases, 3 causes" in text
    assert text.count("\nFAILED ") == 3, text
    assert "\nFAILED 441 cases: CompileError" in text
    assert "#7, ... and 433 more\n" in text and "#8," not in text
    assert "FAILED primitives/neg[float32]: neg[float32]" in text
    assert "    expected: 1.0\n    got:      2.0" in text


def test_html_folds_the_cases_of_one_cause():
    page = render(_report(_compiler_broken()))
    fails = page.split("<h2>Failures")[1].split("<h2>")[0]
    assert fails.startswith(" (443, 3 causes)")
    assert fails.count("class='fail'") == 3
    assert "<b>441 cases</b>" in fails and "<details><summary>the 441 cases</summary>" in fails
    assert fails.count("primitives/add[float32]#0") == 1  # listed once, inside the fold
    assert "unknown type name" in fails


def test_progress_keeps_one_line_of_marks_per_tier_with_results_out_of_order():
    per_tier = {"runtime": 3, "primitives": 5, "random": 2}
    arrivals = [
        ("primitives", "not_supported"),
        ("primitives", "not_supported"),
        ("runtime", "passed"),
        ("primitives", "passed"),
        ("random", "passed"),
        ("runtime", "failed"),
        ("primitives", "passed"),
        ("runtime", "passed"),
        ("random", "passed"),
        ("primitives", "passed"),
    ]
    out = io.StringIO()
    p = Progress(10, out, per_tier=per_tier)
    for i, (tier, outcome) in enumerate(arrivals):
        p(Result(f"{tier}/c{i}", tier, outcome))
    p.finish()
    lines = out.getvalue().splitlines()
    assert [ln.split()[0] for ln in lines] == ["runtime", "primitives", "random"], lines
    assert (
        lines[0].split()[1] == ".F."
        and lines[1].split()[1] == "ss..."
        and lines[2].split()[1:] == ["..", "[10/10]"]
    )


def test_a_plugin_loaded_from_a_folder_is_reported_under_its_device_name(tmp_path):
    report = tmp_path / "r.json"
    env = dict(os.environ, OARLOCK_PLUGINS="cpu")
    env.pop("OARLOCK_DEVICE", None)
    folder = os.path.join("examples", "vendor_plugin", "oarlock_simdev")
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "framework.cli",
            "conformance",
            "--plugin",
            folder,
            "--device",
            "simdev",
            "--tier",
            "runtime",
            "-k",
            "properties",
            "--json",
            str(report),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "plugin simdev 0.1.0" in p.stdout
    meta = json.loads(report.read_text())["metadata"]
    assert (meta["plugin"], meta["plugin_version"], meta["plugin_loaded_from"]) == ("simdev", "0.1.0", folder)


def test_grouping_replaces_whole_identifiers_only():
    """``pad_width`` is not the op ``pad``: it once became ``{op}_width``."""
    from conformance.report import cause_of

    msg = "pad[int32]: pad_width (1, 2) rejected by kernel 'pad_int32' at padded[int32]"
    assert cause_of({"message": msg, "op": "pad", "dtype": "int32"}) == (
        "{op}[{dtype}]: pad_width (1, 2) rejected by kernel '{op}_{dtype}' at padded[{dtype}]"
    )


def test_a_long_failure_keeps_its_last_line_in_the_summary():
    """A traceback from the ranks of the collectives tier: the exception is at its end."""
    tb = "Traceback (most recent call last):\n" + '  File "x.py", line 1, in f\n' * 60
    tb += "framework.DeviceError: [device] unknown device type 'simdev'"
    results = [Result("collectives/2_ranks", "collectives", "failed", message=tb)]
    out = io.StringIO()
    summary(
        build(
            {"device": "simdev", "plugin": "simdev", "duration_s": 1.0}, results, {"collectives"}, False, {}
        ),
        results,
        out,
    )
    text = out.getvalue()
    assert "FAILED collectives/2_ranks: Traceback" in text
    assert "unknown device type 'simdev'" in text and "characters left out" in text
    assert "plugin simdev, contract" in text  # no version: no stray blank
