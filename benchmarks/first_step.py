"""First training steps of the tiny Llama under to_static: the time to the first step's loss
(tracing, passes, fused-kernel builds, the plugin's own kernels, tuning) and the second step.

    OARLOCK_CACHE_DIR=$(mktemp -d) python benchmarks/first_step.py   # cold, then again: warm

Prints the import and model-build times, the first and second step's seconds (the first with
the CPU seconds of this process's threads and of the compiler processes it waited for: on a
loaded machine these vary less than the wall time), the loss and the kernel cache's
statistics (compiles: cold; disk hits: warm). Cold, the kernels build in the background while
the first steps run their ops unfused (``OARLOCK_COMPILE_BACKGROUND=0``: the first step waits
for them): then also when the builds had all landed (seconds after the first step began), the
compilers' CPU seconds in all, a third step (on the built kernels) and the background's
counters.
"""

from __future__ import annotations

import os
import sys
import time

T00 = time.perf_counter()
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework as fw  # noqa: E402
from conformance.models import build  # noqa: E402
from framework.compiler import background_stats, cache_stats, wait_for_builds  # noqa: E402


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
        bg = background_stats()
        tail = ""
        if bg["batches"]:
            wait_for_builds()
            t4 = time.perf_counter()
            k4 = os.times()
            float(task.train_step(2).item())
            t5 = time.perf_counter()
            compilers = k4.children_user + k4.children_system - k1.children_user - k1.children_system
            tail = (
                f" | landed {t4 - t1:.2f}s after the first step began (compilers {compilers:.2f}s) third "
                f"{t5 - t4:.3f}s {background_stats()}"
            )
    print(
        f"import {t0 - T00:.2f}s build {t1 - t0:.2f}s first step {t2 - t1:.2f}s (cpu {c2 - c1:.2f}s, compilers "
        f"{k2.children_user + k2.children_system - k1.children_user - k1.children_system:.2f}s) second {t3 - t2:.3f}s "
        f"loss {v:.4f} {cache_stats()}{tail}"
    )


if __name__ == "__main__":
    main()
