"""The example scripts run end to end (a few steps each, as subprocesses) and their loss
goes down; the importable models give reproducible loss curves."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_example(name: str, steps: int) -> tuple[float, float, str]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", f"train_{name}.py"), "--device", "cpu", "--steps", str(steps), "--no-progress"],
        capture_output=True, text=True, timeout=240, env=env, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    first = float(re.search(r"first loss ([0-9.]+)", proc.stdout).group(1))
    m = re.search(r"final loss ([0-9.]+) .*fallbacks: (\{.*\})", proc.stdout)
    assert m, proc.stdout
    return first, float(m.group(1)), m.group(2)


@pytest.mark.parametrize("name,steps", [("mlp", 30), ("cnn", 30), ("tiny_llama", 15)])
def test_example_trains_and_reports(name, steps):
    first, final, fallbacks = run_example(name, steps)
    assert final < first * 0.9, f"{name}: loss went from {first} to {final}"
    assert fallbacks == "{}"


def test_same_seed_gives_the_same_curve_and_another_seed_does_not():
    sys.path.insert(0, ROOT)
    from examples.models import train_steps

    a = train_steps("mlp", 4, seed=3)
    b = train_steps("mlp", 4, seed=3)
    c = train_steps("mlp", 4, seed=4)
    assert a == b
    assert a != c
