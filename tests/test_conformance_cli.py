"""`oarlock conformance` end to end: tiers on the cpu reference, reports, exit codes, isolation
of a plugin with broken kernels, and the example vendor plugin loaded without installing it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from adapter_api import CONTRACT_VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BAD = os.path.join(ROOT, "tests", "plugins_for_tests", "bad_kernels.py")
VENDOR = os.path.join(ROOT, "examples", "vendor_plugin", "oarlock_simdev")


def conformance(
    *args: str, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    e = dict(os.environ, **(env or {}))
    e.pop("OARLOCK_DEVICE", None)
    return subprocess.run(
        [sys.executable, "-m", "framework.cli", "conformance", *args],
        cwd=ROOT,
        env=e,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_list_shows_cases_and_not_supported_dtypes():
    p = conformance("--device", "cpu", "--list", "--tier", "primitives,random", "-k", "add[")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "primitives/add[float32]" in lines and "primitives/add[bool]" in lines
    assert all("add[" in ln for ln in lines[:-1]) and lines[-1] == f"{len(lines) - 1} cases"


def test_cpu_tiers_pass_and_write_every_report(tmp_path):
    j, x, h = tmp_path / "r.json", tmp_path / "r.xml", tmp_path / "r.html"
    p = conformance(
        "--device",
        "cpu",
        "--tier",
        "runtime,primitives,random,autograd",
        "--json",
        str(j),
        "--junit",
        str(x),
        "--html",
        str(h),
        "-j",
        "2",
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "result: PASSED" in p.stdout
    rep = json.loads(j.read_text())
    assert rep["failed_tiers"] == []
    assert set(rep["tiers"]) == {"runtime", "primitives", "random", "autograd"}
    assert rep["tiers"]["primitives"]["passed"] >= 400 and rep["tiers"]["primitives"]["failed"] == 0
    meta = rep["metadata"]
    assert (
        meta["plugin"] == "cpu"
        and meta["contract"] == "{}.{}".format(*CONTRACT_VERSION)
        and meta["kernel_count"] > 300
    )
    assert meta["properties"]["name"] and meta["duration_s"] > 0
    suites = ET.parse(x).getroot()
    assert sum(int(s.get("tests")) for s in suites) == len(rep["results"])
    page = h.read_text()
    assert page.startswith("<!DOCTYPE html>") and "ops &times; dtypes" in page
    assert "<script" not in page and "<link" not in page and "src=" not in page and "@import" not in page


def test_model_tier_follows_the_golden_curve(tmp_path):
    j = tmp_path / "m.json"
    p = conformance("--device", "cpu", "--tier", "models", "-k", "mlp", "--json", str(j))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (r,) = json.loads(j.read_text())["results"]
    assert r["id"] == "models/mlp" and r["outcome"] == "passed"
    assert len(r["data"]["loss"]) == len(r["data"]["golden"]) == 20
    assert r["data"]["loss"][-1] < r["data"]["loss"][0]


def test_bad_kernels_give_exactly_three_failures_and_the_run_completes(tmp_path):
    j, h = tmp_path / "bad.json", tmp_path / "bad.html"
    p = conformance(
        "--plugin",
        BAD,
        "--device",
        "badk",
        "--tier",
        "runtime,primitives,random",
        "--timeout",
        "5",
        "--json",
        str(j),
        "--html",
        str(h),
    )
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    rep = json.loads(j.read_text())
    failed = {r["id"]: r for r in rep["results"] if r["outcome"] == "failed"}
    assert set(failed) == {"primitives/add[int16]", "primitives/mul[int16]", "primitives/sub[int16]"}
    assert "got np.int16(20), expected np.int16(19)" in failed["primitives/add[int16]"]["message"]
    assert "SIGSEGV" in failed["primitives/mul[int16]"]["message"]
    assert "_crashing_mul" in failed["primitives/mul[int16]"]["message"]
    assert "timed out" in failed["primitives/sub[int16]"]["message"]
    assert rep["failed_tiers"] == ["primitives"]
    assert rep["tiers"]["primitives"]["passed"] >= 400 and rep["tiers"]["random"]["failed"] == 0
    assert rep["metadata"]["worker_restarts"] == 2
    page = h.read_text()
    assert "primitives/mul[int16]" in page and "expected</th>" in page
    # a failing tier that is declared optional does not fail the run
    p = conformance(
        "--plugin",
        BAD,
        "--device",
        "badk",
        "--tier",
        "primitives",
        "-k",
        "add[int16]",
        "--optional",
        "primitives",
    )
    assert p.returncode == 0, p.stdout[-2000:]


def test_vendor_plugin_from_its_folder_passes(tmp_path):
    j = tmp_path / "v.json"
    p = conformance(
        "--plugin",
        VENDOR,
        "--device",
        "simdev",
        "--tier",
        "runtime,primitives,random,autograd",
        "--json",
        str(j),
        env={"OARLOCK_PLUGINS": "cpu"},
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    rep = json.loads(j.read_text())
    assert rep["metadata"]["properties"]["vendor"] == "Example Corp"
    prim = {r["id"]: r["outcome"] for r in rep["results"] if r["tier"] == "primitives"}
    assert prim["primitives/matmul[float32]"] == "passed"
    assert prim["primitives/matmul[float16]"] == "not_supported"


def test_unknown_device_and_tier_are_usage_errors():
    p = conformance("--device", "nosuchdevice")
    assert p.returncode == 2 and "nosuchdevice" in p.stderr
    p = conformance("--device", "cpu", "--tier", "nosuchtier")
    assert p.returncode == 2 and "unknown tier" in p.stderr


@pytest.mark.slow
def test_full_suite_on_cpu(tmp_path):
    p = conformance("--device", "cpu", "--json", str(tmp_path / "all.json"))
    assert p.returncode == 0, p.stdout[-3000:]


def test_cpu_fallbacks_are_reported_as_fallback(tmp_path):
    j = tmp_path / "p.json"
    partial = os.path.join(ROOT, "tests", "plugins_for_tests", "partial.py")
    p = conformance(
        "--plugin",
        partial,
        "--device",
        "partial",
        "--tier",
        "composites,primitives",
        "-k",
        "softmax[float32],exp[",
        "--json",
        str(j),
    )
    assert p.returncode == 0, p.stdout[-3000:]
    rep = json.loads(j.read_text())
    by = {r["id"]: r for r in rep["results"]}
    soft = by["composites/softmax[float32]"]
    assert (
        soft["outcome"] == "fallback"
        and soft["fallbacks"]
        and all(k.endswith("@partial") for k in soft["fallbacks"])
    )
    assert by["primitives/exp[float64]"]["outcome"] == "not_supported"
    assert rep["metadata"]["fallbacks"] and "CPU fallbacks:" in p.stdout


def test_pytest_plugin_gives_one_test_per_case():
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "conformance.pytest_plugin",
            "-p",
            "no:cacheprovider",
            "conformance/test_conformance_suite.py",
            "--conformance-plugin",
            BAD,
            "--conformance-device",
            "badk",
            "--conformance-tier",
            "primitives",
            "-k",
            "add or mul",
            "--conformance-timeout",
            "20",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 1, p.stdout[-3000:]
    failed = sorted(
        re.match(r"FAILED \S+::test_conformance_case\[(\S+)\]", ln).group(1)
        for ln in p.stdout.splitlines()
        if ln.startswith("FAILED")
    )
    assert failed == ["primitives/add[int16]", "primitives/mul[int16]"], p.stdout[-3000:]
    assert "SIGSEGV" in p.stdout and "expected: int16[] 19" in p.stdout


CORRUPTING_PLUGIN = """
import numpy as np
from adapter_api import hookimpl

CONTRACT = (1, 0)


def _corrupting_neg(ctx, outs, ins):
    y = outs[0]
    np.negative(ins[0], out=y)
    base = y
    while isinstance(base.base, np.ndarray):
        base = base.base
    end = y.__array_interface__["data"][0] - base.__array_interface__["data"][0] + y.nbytes
    flat = base.reshape(-1).view(np.uint8)
    flat[end : end + 4] = 0xEE  # four bytes past the output: another tensor's memory


@hookimpl
def oarlock_register(registry):
    from plugins.cpu.runtime import CPURuntime

    registry.add_runtime("corrupt", CPURuntime)
    for (op, typ, dtype), entry in list(registry.kernels.items()):
        if typ == "cpu":
            registry.add_kernel(op, "corrupt", [dtype], entry.fn, broadcast=entry.broadcast)
    registry.add_kernel("neg", "corrupt", ["int16"], _corrupting_neg, broadcast=True)
"""


def test_a_kernel_writing_past_its_output_fails_its_case(tmp_path):
    plugin = tmp_path / "corrupting.py"
    plugin.write_text(CORRUPTING_PLUGIN)
    j = tmp_path / "c.json"
    p = conformance(
        "--plugin",
        str(plugin),
        "--device",
        "corrupt",
        "--tier",
        "primitives",
        "-k",
        "neg[,abs[int16]",
        "--json",
        str(j),
    )
    assert p.returncode == 1, p.stdout[-3000:]
    rep = json.loads(j.read_text())
    failed = [r for r in rep["results"] if r["outcome"] == "failed"]
    assert [r["id"] for r in failed] == ["primitives/neg[int16]"]
    assert "outside its" in failed[0]["message"] and "0xee" in failed[0]["got"]
    # the cpu plugin's complex kernels, copied too, are outside the contract: skipped, saying so
    checked = [r for r in rep["results"] if "the contract does not define" not in (r.get("message") or "")]
    assert sum(r["outcome"] == "passed" for r in checked) == len(checked) - 1


CCDEV = os.path.join(ROOT, "examples", "compiled_plugin", "oarlock_ccdev")


def test_a_plugin_with_compile_access_loaded_from_its_folder_gets_generated_primitives(tmp_path):
    """``--plugin PATH`` behaves as the installed plugin: the core generates the primitives of
    a plugin with compile access (they were all "not supported", and the run PASSED); what is
    left not supported is counted, with its reason, next to the result."""
    j = tmp_path / "cc.json"
    p = conformance(
        "--plugin",
        CCDEV,
        "--device",
        "ccdev",
        "--tier",
        "primitives",
        "-k",
        "exp[float32],neg[int8],sum[float64],matmul[float32],philox_uniform[float32]",
        "--json",
        str(j),
        env={"OARLOCK_PLUGINS": "cpu"},  # only the copy from the folder provides ccdev
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    rep = json.loads(j.read_text())
    outcomes = {r["id"]: r["outcome"] for r in rep["results"]}
    assert outcomes == dict.fromkeys(
        [
            "primitives/exp[float32]",
            "primitives/neg[int8]",
            "primitives/sum[float64]",
            "primitives/matmul[float32]",
            "primitives/philox_uniform[float32]",
        ],
        "passed",
    )
    assert rep["metadata"]["has_compiler"] and rep["not_supported"]["count"] == 0
    assert "5 of 5 cases ran; 0 not supported\nresult: PASSED\n" in p.stdout


def test_not_supported_cases_are_counted_with_their_reason_next_to_the_result(tmp_path):
    p = conformance(
        "--plugin",
        VENDOR,
        "--device",
        "simdev",
        "--tier",
        "primitives",
        "-k",
        "matmul[float",
        env={"OARLOCK_PLUGINS": "cpu"},
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "2 of 3 cases ran; 1 not supported:\n" in p.stdout, p.stdout
    assert "1 x the 'oarlock_simdev' plugin registers no {op} kernel for {dtype}" in p.stdout
    assert "result: PASSED (2 cases ran; 1 not supported, listed above)" in p.stdout


def test_collectives_of_a_plugin_loaded_from_its_folder_run_on_every_rank(tmp_path):
    """The mpiexec ranks load the ``--plugin`` too (they once failed in ``set_device``)."""
    from tests.conftest import MPI_INSTALLED

    if not MPI_INSTALLED:
        pytest.skip("no MPI (pip install 'oarlock[dist]')")
    j = tmp_path / "c.json"
    p = conformance(
        "--plugin",
        os.path.relpath(VENDOR, ROOT),  # a relative path: the ranks run in another folder
        "--device",
        "simdev",
        "--tier",
        "collectives",
        "-k",
        "2_ranks",
        "--json",
        str(j),
        # the ranks run in a scratch folder: they import this tree, not whatever is installed
        env={
            "OARLOCK_PLUGINS": "cpu",
            "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
        },
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (r,) = json.loads(j.read_text())["results"]
    assert r["id"] == "collectives/2_ranks" and r["outcome"] == "passed"
    assert r["data"]["by_collective"]["all_reduce"] > 0
