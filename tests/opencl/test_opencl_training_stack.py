"""The training-stack tests (composites with finite-difference gradients, autograd, nn, optim,
checkpoints) on OpenCL: the same files, run with OARLOCK_DEVICE=opencl so every tensor they
make without naming a device lands on the OpenCL device."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import framework as fw

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = [
    "tests/test_composites.py",
    "tests/test_autograd.py",
    "tests/test_nn.py",
    "tests/test_optim.py",
    "tests/test_checkpoint.py",
]


def _opencl_or_skip() -> None:
    """Skip (saying why) unless the opencl plugin is loaded in this process and has a device:
    OARLOCK_PLUGINS may leave it out, pyopencl may be missing."""
    rec = fw.plugins().get("opencl")
    if rec is None:
        pytest.skip(
            f"the opencl plugin is not loaded (OARLOCK_PLUGINS={os.environ.get('OARLOCK_PLUGINS', '')!r})"
        )
    if rec.error:
        pytest.skip(f"the opencl plugin failed to load: {rec.error.splitlines()[0]}")
    if fw.device_count("opencl") == 0:
        pytest.skip("no OpenCL device")


@pytest.mark.timeout(900)
def test_training_stack_passes_on_opencl():
    _opencl_or_skip()
    env = dict(os.environ, OARLOCK_DEVICE="opencl:0")
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *FILES],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=850,
    )
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("example", ["train_mlp.py", "train_cnn.py", "train_tiny_llama.py"])
def test_examples_train_on_opencl_with_zero_fallbacks(example):
    """Strict mode turns any CPU fallback into an error, so a clean run proves there was none."""
    _opencl_or_skip()
    env = dict(os.environ, OARLOCK_STRICT_KERNELS="1")
    p = subprocess.run(
        [sys.executable, f"examples/{example}", "--device", "opencl", "--steps", "4"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=850,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "fallbacks: {}" in p.stdout
