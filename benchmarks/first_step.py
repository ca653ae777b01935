"""First training steps of the tiny Llama under to_static: the time to the first step's loss
(tracing, passes, fused-kernel builds, the plugin's own kernels, tuning) and the second step.

    OARLOCK_CACHE_DIR=$(mktemp -d) python benchmarks/first_step.py   # cold, then again: warm

Prints the import and model-build times, the first and second step's seconds (the first with
the CPU seconds of this process's threads and of the compiler processes it waited for: on a
loaded machine these vary less than the wall time), the loss and the kernel cache's
statistics (compiles: cold; disk hits: warm).
"""

from __future__ import annotations

import os
import sys
import time

T00 = time.perf_counter()
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework as fw  # noqa: E402
from conformance.models import build  # noqa: E402
from framework.compiler import cache_stats  # noqa: E402


def main() -> None:
    t0 = time.perf_counter()
    task = build("tiny_llama", 0, "cpu", True)
    t1 = time.perf_counter()
    with fw.device("cpu"):
        c1, k1 = time.process_time(), os.times()
        v = float(task.train_step(0).item())
        t2 = time.perf_counter()
        c2, k2 = time.process_time(), os.times()
        float(task.train_step(1).item())
        t3 = time.perf_counter()
    print(
        f"import {t0 - T00:.2f}s build {t1 - t0:.2f}s first step {t2 - t1:.2f}s (cpu {c2 - c1:.2f}s, compilers "
        f"{k2.children_user + k2.children_system - k1.children_user - k1.children_system:.2f}s) second {t3 - t2:.3f}s "
        f"loss {v:.4f} {cache_stats()}"
    )


if __name__ == "__main__":
    main()
