"""The CUDA kernel bodies (xp=numpy) behind the framework's own dispatcher: the framework's
primitive tests run on the simulated device ``cudasim`` in strict mode (no CPU fallback), so
attribute names, broadcasting, 0-d and empty tensors are exercised exactly as on a GPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PRIMITIVE_TESTS = REPO / "tests" / "test_primitives.py"


@pytest.mark.skipif(not PRIMITIVE_TESTS.exists(), reason="tests/test_primitives.py does not exist")
def test_framework_primitive_tests_pass_on_the_cuda_kernel_bodies():
    env = dict(os.environ, OARLOCK_DEVICE="cudasim", OARLOCK_STRICT_KERNELS="1")
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(Path(__file__).parent), str(REPO), env.get("PYTHONPATH")])
    )
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(PRIMITIVE_TESTS),
        "-q",
        "-p",
        "cudasim_plugin",
        "-p",
        "no:cacheprovider",
    ]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and " skipped" not in proc.stdout.splitlines()[-1], proc.stdout[-2000:]
