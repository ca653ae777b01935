"""Control flow in static programs against eager mode, side by side in one run.

    python benchmarks/control_flow.py [--device cpu] [--repeat 7] [--number 20]

Cases (medians over repeats of the mean time per call, under ``fw.no_grad``):

- ``while N``: ``fw.static.nn.while_loop`` of N iterations of ``y * 1.5 + 1`` on 64 floats
  (eagerly a Python loop; in the program one ``cf.while`` whose cond and body are
  sub-programs);
- ``cond``: ``fw.static.nn.cond`` on ``x.sum() > 0`` choosing ``exp(x) * 2`` or ``x - 1``;
- ``dropout``: a Linear(256, 256) then dropout(0.5) at batch 64 (the program draws its mask at
  run time from the global generator).
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")  # time built kernels, not a cold cache's stand-ins

import numpy as np  # noqa: E402

import framework as fw  # noqa: E402
from benchmarks.dispatch import bench as dispatch_bench  # noqa: E402
from framework.static.nn import cond, while_loop  # noqa: E402


def bench(fn, number: int, repeat: int) -> float:
    return dispatch_bench(fn, number, repeat, warmup=2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=20)
    args = ap.parse_args()
    fw.set_device(args.device)

    def loop(n: fw.Tensor, x: fw.Tensor) -> fw.Tensor:
        i = fw.zeros([], dtype="int64")
        return while_loop(lambda i, y: i < n, lambda i, y: [i + 1, y * 1.5 + 1.0], [i, x])[1]

    def branch(x: fw.Tensor) -> fw.Tensor:
        return cond(x.sum() > 0.0, lambda: fw.exp(x) * 2.0, lambda: x - 1.0)

    lin = fw.nn.Linear(256, 256)

    def drop(x: fw.Tensor) -> fw.Tensor:
        return fw.nn.functional.dropout(lin(x), 0.5, training=True)

    x64 = fw.ones([64])
    xb = fw.to_tensor(np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32))
    cases = [(f"while {n}", loop, (fw.to_tensor(np.array(n, np.int64)), x64)) for n in (10, 100)]
    cases += [("cond", branch, (x64,)), ("dropout", drop, (xb,))]
    print(f"device {args.device}; medians of {args.repeat} repeats, µs per call")
    print(f"{'case':<12} {'eager':>10} {'static':>10} {'static/eager':>13}")
    with fw.no_grad():
        for name, fn, inputs in cases:
            sf = fw.jit.to_static(fn)
            e = bench(lambda fn=fn, inputs=inputs: fn(*inputs), args.number, args.repeat)
            s = bench(lambda sf=sf, inputs=inputs: sf(*inputs), args.number, args.repeat)
            print(f"{name:<12} {e:10.1f} {s:10.1f} {s / e:13.2f}")


if __name__ == "__main__":
    main()
