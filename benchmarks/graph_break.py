"""A to_static function with one graph break in the middle against the same function without
it, and eager mode, side by side in one run.

    python benchmarks/graph_break.py [--device cpu] [--repeat 7] [--number 50] [--threads 1]

Cases (milliseconds per call, medians over repeats, the variants taking turns within each
repeat):

- ``small``: two Linear(64, 64) + GELU + LayerNorm blocks at batch 16 (the per-call overhead
  of the split: two programs and the Python between them instead of one program);
- ``mlp``: two Linear(512, 512) + GELU + LayerNorm blocks at batch 64;
- ``train``: ``mlp``'s forward and backward (``loss.backward()`` outside the function).

The break is ``LOG.append(h.mean().item())`` between the blocks (a logging line: the split
function runs it as Python between two programs); "no break" is the same function without that
line. Each call ends with ``fw.synchronize()`` (the break's ``.item()`` waits for the first
program; without the wait the no-break column would time only the queuing of work). Columns:
eager; to_static with the break (split); to_static without it; the ratio no-break / break
(the goal is >= 0.8).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

_THREADS = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else "1"
os.environ.update(
    OPENBLAS_NUM_THREADS=_THREADS,
    OMP_NUM_THREADS=_THREADS,
    MKL_NUM_THREADS=_THREADS,
    OARLOCK_NUM_THREADS=_THREADS,
)

import numpy as np  # noqa: E402

os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")  # time built kernels, not a cold cache's stand-ins
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework as fw  # noqa: E402
import framework.nn.functional as F  # noqa: E402

LOG: list[float] = []


class Blocks(fw.nn.Layer):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.l1, self.n1 = fw.nn.Linear(d, d), fw.nn.LayerNorm(d)
        self.l2, self.n2 = fw.nn.Linear(d, d), fw.nn.LayerNorm(d)

    def with_break(self, x):
        h = self.n1(F.gelu(self.l1(x)))
        LOG.append(h.mean().item())
        return self.n2(F.gelu(self.l2(h))) + x

    def without_break(self, x):
        h = self.n1(F.gelu(self.l1(x)))
        return self.n2(F.gelu(self.l2(h))) + x


def side_by_side(fns, number: int, repeat: int) -> list[float]:
    for f in fns:  # warm: traces, builds, tunes
        for _ in range(3):
            f()
    runs: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for k, f in enumerate(fns):
            t0 = time.perf_counter()
            for _ in range(number):
                f()
            runs[k].append((time.perf_counter() - t0) / number * 1e3)
    return [statistics.median(r) for r in runs]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=50)
    ap.add_argument("--threads", default="1")
    a = ap.parse_args()
    print(f"device {a.device}, threads {a.threads}; ms per call (median of {a.repeat} x {a.number})")
    print(f"{'case':8s} {'eager':>8s} {'break':>8s} {'no break':>9s} {'no break / break':>17s}")
    for case, d, b, train in (("small", 64, 16, False), ("mlp", 512, 64, False), ("train", 512, 64, True)):
        eager, brk, nob = measure(a.device, d, b, train, a.number, a.repeat)
        print(f"{case:8s} {eager:8.3f} {brk:8.3f} {nob:9.3f} {nob / brk:16.2f}x")
        LOG.clear()


def measure(device: str, d: int, b: int, train: bool, number: int, repeat: int) -> list[float]:
    """Eager, split and unbroken milliseconds per call of the blocks at width d, batch b."""
    fw.seed(0)
    with fw.device(device):
        net = Blocks(d)
    x = fw.to_tensor(np.random.default_rng(0).standard_normal((b, d)).astype(np.float32), device=device)
    broken = fw.jit.to_static(net.with_break)
    whole = fw.jit.to_static(net.without_break)

    def run(f):
        if train:
            f(x).sum().backward()
            net.clear_gradients()
        else:
            with fw.no_grad():
                f(x)
        fw.synchronize()  # the work done, not only queued (a program may run on a stream)

    times = side_by_side(
        [lambda: run(net.with_break), lambda: run(broken), lambda: run(whole)], number, repeat
    )
    assert broken.splits and not whole.last_breaks, "the break did not split"
    return times


if __name__ == "__main__":
    main()
