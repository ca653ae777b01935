"""conv2d's gradient: a whole training step of resnet18 (batch 8, 64x64 images, forward +
backward + SGD, eager on cpu) with conv2d's own gradient rule (dx by ``conv2d_transpose``, dW by
``unfold`` and one product per group) against the old path, the gradient through conv2d's
decomposition (``framework.testing.gradient_by_decomposition``). The two take turns, repeat by
repeat, in one run; medians in milliseconds and their ratio.

    python benchmarks/conv_grad.py [--repeat 7] [--number 1] [--batch 8] [--size 64] [--device cpu]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")  # time built kernels, not a cold cache's stand-ins
sys.path.insert(0, ROOT)
import numpy as np  # noqa: E402

import framework as fw  # noqa: E402
from benchmarks import cpu_description  # noqa: E402
from framework import testing  # noqa: E402


def make_step(batch: int, size: int, device: str = "cpu"):
    """One SGD step of resnet18 on fixed random data; returns the step and the model."""
    fw.seed(0)
    fw.set_device(device)
    model = fw.vision.models.resnet18(num_classes=10)
    opt = fw.optimizer.SGD(learning_rate=1e-3, parameters=model.parameters())
    rng = np.random.default_rng(0)
    x = fw.to_tensor(rng.standard_normal((batch, 3, size, size)).astype(np.float32))
    y = fw.to_tensor(rng.integers(0, 10, (batch,)).astype(np.int64))

    def step() -> float:
        loss = fw.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return float(loss)

    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=1, help="steps per timed repeat")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    step = make_step(a.batch, a.size, a.device)
    paths = {
        "decomposition gradient (old)": lambda: testing.gradient_by_decomposition("conv2d"),
        "conv2d gradient rule (new)": contextlib.nullcontext,
    }
    for ctx in paths.values():  # warm up: kernels compiled, caches filled
        with ctx():
            step()
    times: dict[str, list[float]] = {k: [] for k in paths}
    for _ in range(a.repeat):
        for name, ctx in paths.items():
            with ctx():
                t0 = time.perf_counter()
                for _ in range(a.number):
                    step()
                times[name].append((time.perf_counter() - t0) / a.number * 1e3)
    print(f"resnet18 b{a.batch} {a.size}x{a.size} SGD step, eager {a.device}; {cpu_description()}")
    print(f"median of {a.repeat} alternated repeats x {a.number} step(s)")
    old, new = (statistics.median(v) for v in times.values())
    for name, v in times.items():
        print(f"  {name:32s} {statistics.median(v):9.1f} ms")
    print(f"  speed-up (old / new)             {old / new:9.2f}x")


if __name__ == "__main__":
    main()
