"""Time the fusion pass's grouping (``Fusion._grow``) over the programs of an imported ONNX
ResNet's forward and backward under the compiler: ``python -m benchmarks.fusion_grow_time``.
Prints the median over ``--repeat`` fresh imports and the largest program's op count."""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")  # time built kernels, not a cold cache's stand-ins
import framework as fw  # noqa: E402
from framework.ir.passes import fusion  # noqa: E402
from tests.onnx_models import resnet  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--channels", default="16,32,64,128")
    args = ap.parse_args()
    channels = tuple(int(c) for c in args.channels.split(","))
    spent, largest = [0.0], [0]
    grow = fusion.Fusion._grow

    def timed(self, program, *a, **k):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        try:
            return grow(self, program, *a, **k)
        finally:
            spent[0] += time.perf_counter() - t
            largest[0] = max(largest[0], len(program.block.ops))

    fusion.Fusion._grow = timed  # type: ignore[method-assign]
    x = np.random.default_rng(1).standard_normal((2, 3, 32, 32)).astype(np.float32)
    runs = []
    for _ in range(args.repeat):
        spent[0] = 0.0
        m = fw.onnx.load(resnet(channels=channels), compile=True)
        y = m(fw.to_tensor(x))
        (y * y).mean().backward()
        runs.append(spent[0])
    print(
        f"ResNet channels={channels}: grouping {statistics.median(runs) * 1e3:.0f} ms median of {len(runs)} "
        f"(largest program {largest[0]} ops)"
    )


if __name__ == "__main__":
    main()
