"""In-place updates and view ops, this tree against another checkout, side by side in one run.

    python benchmarks/inplace.py --against DIR [--rounds 10] [--number 2000] [--cpu-clock]

What writes through views (issue 40) could cost tensors that are not views: an in-place update
of a tensor with no view (``x.add_(y)``, ``x[0] = 1``), the view ops that now register their
view with the base (``reshape``, ``detach``), and an op recorded for autograd; beside them, the
writes that go through a view. One interpreter per tree (``PYTHONPATH`` = the tree), started
once, taking turns round by round; each round times every case (``--number`` calls after a
warm-up); medians over ``--rounds`` and the ratio this / DIR. ``--cpu-clock`` times with the
process's CPU clock (the machine's other load is not counted). The microseconds per op of the
plain per-op path are ``benchmarks/dispatch.py --against``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cases(device: str) -> dict:
    import numpy as np

    import framework as fw

    def t(shape, grad=False):
        return fw.to_tensor(np.ones(shape, np.float32), device=device, stop_gradient=not grad)

    x, y, w = t(16), t(16), t(16, grad=True)
    xs, base = t(16), t(16)
    view, keep = base.reshape([4, 4]), base.reshape([16])  # noqa: F841  (keep: a second view)
    one = t([4, 4])

    def setitem():
        xs[0] = 1.0

    return {
        "add_ 16": lambda: x.add_(y),
        "x[0] = 1 16": setitem,
        "reshape 16": lambda: x.reshape([4, 4]),
        "detach 16": lambda: x.detach(),
        "add 16 (grad)": lambda: w + y,
        "add_ via view": lambda: view.add_(one),
    }


def worker(device: str, number: int, cpu_clock: bool) -> None:
    """A tree's interpreter: one JSON line of microseconds per case for each line read."""
    import framework as fw

    clock = time.process_time if cpu_clock else time.perf_counter
    cases = _cases(device)
    print(json.dumps({"root": os.path.dirname(os.path.dirname(os.path.abspath(fw.__file__)))}), flush=True)
    for _ in sys.stdin:
        out = {}
        for name, fn in cases.items():
            fn()
            t0 = clock()
            for _ in range(number):
                fn()
            out[name] = (clock() - t0) / number * 1e6
        print(json.dumps(out), flush=True)


def against(other: str, rounds: int, number: int, device: str, cpu_clock: bool) -> None:
    other = os.path.abspath(other)
    sys.path.insert(0, HERE)
    from benchmarks import side_by_side

    argv = ["--device", device, "--number", str(number)] + ["--cpu-clock"] * cpu_clock
    side_by_side("inplace.py", argv, HERE, other, rounds, number, cpu_clock, "case")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", metavar="DIR", required=False, help="the other checkout")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--number", type=int, default=2000)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--cpu-clock", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.device, a.number, a.cpu_clock)
    elif a.against:
        against(a.against, a.rounds, a.number, a.device, a.cpu_clock)
    else:
        ap.error("give --against DIR (a checkout to compare with: git worktree add DIR main)")


if __name__ == "__main__":
    main()
