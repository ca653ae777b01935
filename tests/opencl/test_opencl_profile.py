"""OARLOCK_OPENCL_PROFILE: per-kernel launches and device time from OpenCL event profiling."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("pyopencl")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = """
import framework as fw
from plugins.opencl import profile
x = fw.ones([64, 64], device="opencl:0")
(x + x).numpy()
if "--region" in __import__("sys").argv:
    rows = profile.table()
    assert [r[:2] for r in rows if r[0] == "b_add"] == [("b_add", 1)], rows
    profile.reset()
    assert profile.table() == []
    (x * x).numpy()
    (x * x).numpy()
    assert [r[:2] for r in profile.table()] == [("b_mul", 2)], profile.table()
    assert all(ms > 0 for _, _, ms in profile.table())
"""


def _run(env_value: str | None, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("OARLOCK_OPENCL_PROFILE", None)
    if env_value is not None:
        env["OARLOCK_OPENCL_PROFILE"] = env_value
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_profile_prints_each_kernel_with_its_launches_at_exit(opencl):
    p = _run("1")
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stderr.splitlines()
    at = lines.index("[opencl] kernel time by kernel (OpenCL event profiling, end - start of each launch)")
    rows = {ln.split()[0]: ln.split()[1:] for ln in lines[at + 2 :] if ln.startswith("  ")}
    assert rows["b_add"][0] == "1"
    assert float(rows["b_add"][1]) >= 0 and float(rows["b_add"][2]) >= 0


def test_profile_table_and_reset_cover_a_region(opencl):
    p = _run("1", "--region")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "b_mul" in p.stderr and "b_add" not in p.stderr  # the exit report after reset


def test_no_profile_no_report(opencl):
    p = _run(None)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "[opencl] kernel time" not in p.stderr
