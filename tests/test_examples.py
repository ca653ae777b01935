"""The example scripts run end to end (a few steps each, as subprocesses) and their loss
goes down; the importable models give reproducible loss curves."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_example(name: str, steps: int) -> tuple[float, float, str]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "examples", f"train_{name}.py"),
            "--device",
            "cpu",
            "--steps",
            str(steps),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    first = float(re.search(r"first loss ([0-9.]+)", proc.stdout).group(1))
    m = re.search(r"final loss ([0-9.]+) .*fallbacks: (\{.*\})", proc.stdout)
    assert m, proc.stdout
    return first, float(m.group(1)), m.group(2)


def golden(name: str) -> dict:
    """The loss curve recorded on cpu with seed 0 (conformance/golden, ``--record-goldens``)."""
    with open(os.path.join(ROOT, "conformance", "golden", f"{name}.json")) as f:
        return json.load(f)


@pytest.mark.parametrize("name", ["mlp", "cnn", "tiny_llama"])
def test_example_trains_and_reports(name):
    """The script's printed first and final loss are those of the recorded curve (to the 4
    decimals printed), and nothing fell back to the CPU plugin."""
    g = golden(name)
    first, final, fallbacks = run_example(name, g["steps"])
    tail = g["loss"][-10:]
    assert first == pytest.approx(g["loss"][0], abs=6e-5), (
        f"{name}: first loss {first}, recorded {g['loss'][0]}"
    )
    assert final == pytest.approx(sum(tail) / len(tail), abs=6e-5), (
        f"{name}: final loss {final}, recorded {sum(tail) / len(tail)}"
    )
    assert final < first
    assert fallbacks == "{}"


@pytest.mark.parametrize("name", ["mlp", "cnn", "tiny_llama"])
def test_loss_curve_matches_the_recorded_one(name):
    sys.path.insert(0, ROOT)
    from conformance.models import train_steps

    g = golden(name)
    assert (g["seed"], g["recorded_on"]) == (0, "cpu")
    np.testing.assert_allclose(train_steps(name, g["steps"], seed=0, device="cpu"), g["loss"], rtol=1e-5)


def test_same_seed_gives_the_same_curve_and_another_seed_does_not():
    sys.path.insert(0, ROOT)
    from conformance.models import train_steps

    a = train_steps("mlp", 4, seed=3)
    b = train_steps("mlp", 4, seed=3)
    c = train_steps("mlp", 4, seed=4)
    assert a == b
    assert a != c


def _device_or_skip(dev: str) -> str:
    import framework as fw

    try:
        if fw.device_count(dev) == 0:
            pytest.skip(f"no {dev} device")
    except fw.OarlockError as exc:
        pytest.skip(f"{dev}: {exc}")
    return dev


@pytest.mark.parametrize("dev", ["cpu", "opencl"])
@pytest.mark.parametrize("name", ["mlp", "cnn", "tiny_llama"])
def test_static_training_gives_the_eager_loss_curve(name, dev):
    """--static: the model's forward and backward as to_static programs, the loss and the
    optimizer step eager; the loss curve over a few steps equals eager's."""
    sys.path.insert(0, ROOT)
    from conformance.models import train_steps

    _device_or_skip(dev)
    eager = train_steps(name, 4, seed=0, device=dev)
    static = train_steps(name, 4, seed=0, device=dev, static=True)
    np.testing.assert_allclose(static, eager, rtol=1e-5, atol=1e-6)


def test_example_script_static_flag():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "examples", "train_mlp.py"),
            "--device",
            "cpu",
            "--steps",
            "5",
            "--no-progress",
            "--static",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "(to_static)" in proc.stdout
    first = float(re.search(r"first loss ([0-9.]+)", proc.stdout).group(1))
    assert first == pytest.approx(golden("mlp")["loss"][0], abs=6e-5)
