"""The CPU plugin's thread policy (plugins/cpu/threads.py), each case in a fresh interpreter:
thread pools are sized when their library loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("threadpoolctl")

_PROBE = """
import json, numpy as np, framework as fw
from plugins.cpu import threads
x = fw.ones([64, 64]); (x @ x).numpy()
print(json.dumps(threads.describe()))
"""


def probe(**env: str) -> dict:
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("OARLOCK_NUM", "OARLOCK_THREAD", "OMP_"))
    }
    clean.pop("OPENBLAS_NUM_THREADS", None)
    r = subprocess.run([sys.executable, "-c", _PROBE], env={**clean, **env}, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_one_budget_for_blas_and_openmp():
    got = probe(OARLOCK_NUM_THREADS="1")
    assert got["budget"] == 1 and got["OMP_NUM_THREADS"] == "1" and got["OMP_WAIT_POLICY"] == "PASSIVE"
    assert got["pools"] and all(n == 1 for _, n in got["pools"]), got["pools"]


def test_default_budget_is_the_usable_cores_and_user_settings_win():
    got = probe(OMP_WAIT_POLICY="ACTIVE")
    assert got["budget"] == len(os.sched_getaffinity(0))
    assert got["OMP_WAIT_POLICY"] == "ACTIVE"  # what the user set is kept
    assert all(n == got["budget"] for _, n in got["pools"]), got["pools"]


def test_policy_off_leaves_the_pools_alone():
    got = probe(OARLOCK_THREAD_POLICY="0", OPENBLAS_NUM_THREADS="1")
    assert got["enabled"] is False and got["OMP_WAIT_POLICY"] is None


def test_a_bad_budget_is_named():
    r = subprocess.run(
        [sys.executable, "-c", "import framework as fw; fw.ones([2]).numpy()"],
        env={**os.environ, "OARLOCK_NUM_THREADS": "two"},
        capture_output=True,
        text=True,
    )
    assert r.returncode != 0 and "OARLOCK_NUM_THREADS must be a positive integer, got 'two'" in r.stderr
