"""The GPU-shaped OpenCL kernels (one element per work item, 32x32 local-memory matmul
tiles) are what real GPUs run; PoCL gets CPU-shaped ones. Run the primitive suite once with
OARLOCK_OPENCL_SHAPES=gpu so the GPU kernels stay tested on PoCL too."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import framework as fw

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.timeout(900)
def test_primitives_pass_with_gpu_shaped_kernels():
    if fw.device_count("opencl") == 0:
        pytest.skip("no OpenCL device")
    env = dict(os.environ, OARLOCK_OPENCL_SHAPES="gpu", OARLOCK_DEVICE="opencl:0")
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_primitives.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=850,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert " passed" in p.stdout and "failed" not in p.stdout
