"""Eager dispatch overhead: microseconds per op on tiny inputs, side by side in one run.

    python benchmarks/dispatch.py [--device cpu] [--repeat 7] [--number 2000]
    python benchmarks/dispatch.py --breakdown [--number 20000]

Prints the median over repeats of the mean time per call, for Oarlock on the chosen device,
numpy, and torch eager when importable, and the ratio Oarlock / torch.

``--breakdown`` splits the per-op path of ``x + y`` (float32[16]) into its stages with
cProfile, without and with an input that needs a gradient: argument parsing and dtype
promotion, the shape rule, kernel lookup and dispatch, output allocation (and its release),
the kernel, the autograd record. Per stage: Python-level calls per op (exact, load-independent)
and its share of the profiled time (cProfile inflates every call alike; the wall time per op
without cProfile is printed beside it).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import framework as fw


def bench(fn, number: int, repeat: int, warmup: int = 1) -> float:
    """Median over ``repeat`` runs of the mean microseconds per call of ``number`` calls."""
    for _ in range(warmup):
        fn()
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        runs.append((time.perf_counter() - t0) / number * 1e6)
    return statistics.median(runs)


#: stage of the per-op path -> the functions (file name ending, function) that make it up
STAGES = {
    "arguments, dtype promotion": [("ops/math.py", ""), ("dtypes.py", ""), ("ops/base.py", "apply1")],
    "mode checks (amp, tracer, grad)": [("~", "_contextvars.ContextVar")],
    "shape rule": [("ops/primitives.py", ""), ("ops/base.py", "broadcast_shapes")],
    "kernel lookup, dispatch": [
        ("_src/dispatch.py", ""),
        ("ops/base.py", "apply"),
        ("device.py", ""),
        ("~", "dict"),
    ],
    "output allocation, release": [("allocator.py", ""), ("_src/tensor.py", ""), ("runtime.py", "")],
    "kernel": [("plugins/cpu/kernels.py", ""), ("plugins/cpu/elementwise.py", ""), ("~", "numpy")],
    "autograd record": [("_src/autograd.py", "")],
}


def _stage(file: str, func: str) -> str:
    for stage, marks in STAGES.items():
        for end, name in marks:
            if (file.endswith(end) or file == end) and name in func:
                return stage
    return "other"


def breakdown(number: int) -> None:
    """Print the per-op path's stages (see the module docstring)."""
    import cProfile
    import pstats

    a = fw.to_tensor(np.ones(16, np.float32))
    b = fw.to_tensor(np.ones(16, np.float32))
    w = fw.to_tensor(np.ones(16, np.float32))
    w.stop_gradient = False
    for label, x in (("no grad", a), ("x needs grad", w)):
        wall = bench(lambda x=x: x + b, number // 10, 7)
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(number):
            x + b
        pr.disable()
        calls: dict[str, int] = {}
        secs: dict[str, float] = {}
        frames = 0  # calls of Python functions (builtins, file "~", aside)
        for (file, _line, func), (_cc, nc, tt, _ct, _callers) in pstats.Stats(pr).stats.items():  # type: ignore[attr-defined]
            frames += nc if file != "~" else 0
            st = _stage(file, func)
            calls[st] = calls.get(st, 0) + nc
            secs[st] = secs.get(st, 0.0) + tt
        total = sum(secs.values())
        print(
            f"x + y, float32[16], {label}: {wall:.2f} us per op (median of 7 x {number // 10}, no cProfile)"
        )
        print(f"  {'stage':34s} {'calls/op':>9s} {'share':>7s} {'~us/op':>8s}")
        for st in [*STAGES, "other"]:
            if st in calls:
                share = secs[st] / total
                print(f"  {st:34s} {calls[st] / number:9.2f} {100 * share:6.1f}% {share * wall:8.2f}")
        print(
            f"  {'all':34s} {sum(calls.values()) / number:9.2f}   ({frames / number:.2f} of them Python functions)"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--breakdown", action="store_true", help="the per-op path's stages (cProfile)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=2000)
    args = ap.parse_args()
    if args.breakdown:
        breakdown(args.number * 10)
        return
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None

    rng = np.random.default_rng(0)
    a16, b16 = rng.random(16, dtype=np.float32), rng.random(16, dtype=np.float32)
    a64, b64 = rng.random((64, 64), dtype=np.float32), rng.random((64, 64), dtype=np.float32)
    fa16, fb16 = fw.to_tensor(a16, device=args.device), fw.to_tensor(b16, device=args.device)
    fa64, fb64 = fw.to_tensor(a64, device=args.device), fw.to_tensor(b64, device=args.device)
    cases = {
        "add 16": (lambda: fa16 + fb16, lambda: np.add(a16, b16), "add"),
        "mul 16": (lambda: fa16 * fb16, lambda: np.multiply(a16, b16), "mul"),
        "add scalar 16": (lambda: fa16 + 1.0, lambda: a16 + np.float32(1.0), "adds"),
        "matmul 64x64": (lambda: fa64 @ fb64, lambda: a64 @ b64, "mm"),
    }
    if torch is not None:
        ta16, tb16 = torch.from_numpy(a16), torch.from_numpy(b16)
        ta64, tb64 = torch.from_numpy(a64), torch.from_numpy(b64)
        tfns = {
            "add": lambda: ta16 + tb16,
            "mul": lambda: ta16 * tb16,
            "adds": lambda: ta16 + 1.0,
            "mm": lambda: ta64 @ tb64,
        }
    print(f"device {args.device}; median of {args.repeat} x {args.number} calls; microseconds per op")
    head = f"{'op':16s} {'oarlock':>9s} {'numpy':>9s}" + (
        f" {'torch':>9s} {'oar/torch':>10s}" if torch else ""
    )
    print(head)
    for name, (f_fw, f_np, key) in cases.items():
        t_fw = bench(f_fw, args.number, args.repeat)
        t_np = bench(f_np, args.number, args.repeat)
        line = f"{name:16s} {t_fw:9.2f} {t_np:9.2f}"
        if torch is not None:
            t_t = bench(tfns[key], args.number, args.repeat)
            line += f" {t_t:9.2f} {t_fw / t_t:9.2f}x"
        print(line)


if __name__ == "__main__":
    main()
