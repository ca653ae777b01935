"""Launch tuning on OpenCL: generated rms_norm and softmax on a 4096 x 4096 float32 tensor with
the fixed default work-group size (``OARLOCK_TUNE=0``) and the tuned one, side by side in one
run: median milliseconds, the ratio and the size chosen (framework/compiler/tune.py).

    python benchmarks/tuning.py [--device opencl:0] [--size 4096] [--repeats 10]

The tuned choice is measured on the first launch (or read from tuning.json in the kernel cache
folder) and then kept; both columns time the same built kernel.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")  # time built kernels, not a cold cache's stand-ins
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import framework as fw  # noqa: E402
import framework.nn.functional as F  # noqa: E402
from framework.compiler import tune  # noqa: E402


def timed(fn, repeats: int) -> float:
    fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="opencl:0")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    n = args.size
    x = fw.to_tensor(np.random.default_rng(0).standard_normal((n, n)).astype(np.float32), device=args.device)
    print(
        f"{fw.get_device_properties(args.device).name} ({args.device}); {n}x{n} float32; median of {args.repeats}"
    )
    print(
        f"{'kernel':<10}{'default ms':>12}{'tuned ms':>10}{'speed-up':>10}{'  work-group (default -> tuned)'}"
    )

    def sync(t):
        fw.synchronize(args.device)
        return t

    for name, fn in (
        ("rms_norm", lambda: sync(F.rms_norm(x))),
        ("softmax", lambda: sync(F.softmax(x, -1))),
    ):
        os.environ["OARLOCK_TUNE"] = "0"
        fn()  # build
        rounds: dict[str, list[float]] = {"0": [], "1": []}
        for _ in range(3):  # interleaved, so both see the same machine load
            for mode in ("0", "1"):
                os.environ["OARLOCK_TUNE"] = mode
                rounds[mode].append(timed(fn, max(1, args.repeats // 3)))
        d, t = statistics.median(rounds["0"]), statistics.median(rounds["1"])
        chosen = {
            k.split("|")[1]: v["local"]
            for k, v in tune._entries().items()
            if k.split("|")[1].startswith(name)
        }
        picks = ", ".join(f"{v}" for v in chosen.values()) or "-"
        print(f"{name:<10}{d:>12.2f}{t:>10.2f}{d / t:>10.2f}  64 -> {picks}")


if __name__ == "__main__":
    main()
