"""Eager dispatch overhead: microseconds per op on tiny inputs, side by side in one run.

    python benchmarks/dispatch.py [--device cpu] [--repeat 7] [--number 2000]
    python benchmarks/dispatch.py --breakdown [--number 20000]
    python benchmarks/dispatch.py --against DIR [--rounds 10] [--cpu-clock] [--number 2000] [--threads 1,2]

Prints the median over repeats of the mean time per call, for Oarlock on the chosen device,
numpy, and torch eager when importable, and the ratio Oarlock / torch.

``--breakdown`` splits the per-op path of ``x + y`` (float32[16]) into its stages with
cProfile, without and with an input that needs a gradient: argument parsing and dtype
promotion, the shape rule, kernel lookup and dispatch, output allocation (and its release),
the kernel, the autograd record. Per stage: Python-level calls per op (exact, load-independent)
and its share of the profiled time (cProfile inflates every call alike; the wall time per op
without cProfile is printed beside it).

``--against DIR`` compares this tree with another checkout (``git worktree add DIR main``)
side by side: one interpreter per tree, started once, taking turns round by round (each
round starts with the other tree), each timing every Oarlock case once per round (``--number``
calls, after a warm-up); medians over ``--rounds``, the ratio this / DIR, and the Python-level
calls per op of ``x + y`` in each tree (cProfile's count: exact, load-independent), and which
path ``x + y`` takes in each (the C fast path or Python). ``--threads 1,2``: a pair of
interpreters per thread count (``OARLOCK_NUM_THREADS``), all taking turns.
``--cpu-clock`` times with the process's CPU clock (``time.process_time``) instead of the
wall clock: time the machine's other load takes from the process is not counted (with
``--against`` and in the plain side-by-side run with numpy and torch).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

import framework as fw


def bench(fn, number: int, repeat: int, warmup: int = 1, clock=time.perf_counter) -> float:
    """Median over ``repeat`` runs of the mean microseconds per call of ``number`` calls."""
    for _ in range(warmup):
        fn()
    runs = []
    for _ in range(repeat):
        t0 = clock()
        for _ in range(number):
            fn()
        runs.append((clock() - t0) / number * 1e6)
    return statistics.median(runs)


def _cases(device: str) -> dict:
    """name -> (Oarlock call, numpy call, torch key) of each case."""
    rng = np.random.default_rng(0)
    a16, b16 = rng.random(16, dtype=np.float32), rng.random(16, dtype=np.float32)
    a64, b64 = rng.random((64, 64), dtype=np.float32), rng.random((64, 64), dtype=np.float32)
    fa16, fb16 = fw.to_tensor(a16, device=device), fw.to_tensor(b16, device=device)
    fa64, fb64 = fw.to_tensor(a64, device=device), fw.to_tensor(b64, device=device)
    return {
        "add 16": (lambda: fa16 + fb16, lambda: np.add(a16, b16), "add"),
        "mul 16": (lambda: fa16 * fb16, lambda: np.multiply(a16, b16), "mul"),
        "add scalar 16": (lambda: fa16 + 1.0, lambda: a16 + np.float32(1.0), "adds"),
        "div 16": (lambda: fa16 / fb16, lambda: np.true_divide(a16, b16), "div"),
        "div scalar 16": (lambda: fa16 / 2.0, lambda: a16 / np.float32(2.0), "divs"),
        "scalar - x 16": (lambda: 1.0 - fa16, lambda: np.float32(1.0) - a16, "rsubs"),
        "scalar / x 16": (lambda: 1.0 / fa16, lambda: np.float32(1.0) / a16, "rdivs"),
        "lt 16": (lambda: fa16 < fb16, lambda: np.less(a16, b16), "lt"),
        "neg 16": (lambda: -fa16, lambda: np.negative(a16), "neg"),
        "matmul 64x64": (lambda: fa64 @ fb64, lambda: a64 @ b64, "mm"),
    }


def calls_per_op(number: int = 2000) -> float:
    """Python-level calls (functions and builtins) per ``x + y`` of two float32[16] tensors."""
    import cProfile
    import pstats

    a = fw.to_tensor(np.ones(16, np.float32))
    b = fw.to_tensor(np.ones(16, np.float32))
    for _ in range(100):
        a + b
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(number):
        a + b
    pr.disable()
    st = pstats.Stats(pr).stats  # type: ignore[attr-defined]
    return (sum(v[1] for v in st.values()) - 1) / number  # less the profiler's own disable()


def add_path() -> str:
    """Which path ``x + y`` takes: the C fast path (``Tensor.__add__`` is the extension's
    ``FastBinary``) or the Python function."""
    kind = type(fw.Tensor.__add__).__name__
    return "C fast path" if kind == "FastBinary" else f"Python ({kind})"


def worker(device: str, number: int, cpu_clock: bool) -> None:
    """``--against``'s child: the calls per op, then one JSON line of timings per line read."""
    clock = time.process_time if cpu_clock else time.perf_counter
    cases = _cases(device)
    root = os.path.dirname(os.path.dirname(os.path.abspath(fw.__file__)))
    print(json.dumps({"calls": calls_per_op(), "root": root, "path": add_path()}), flush=True)
    for _ in sys.stdin:
        print(json.dumps({n: bench(c[0], number, 1, clock=clock) for n, c in cases.items()}), flush=True)


def against(
    other: str, rounds: int, number: int, device: str, cpu_clock: bool, threads: tuple[int, ...] = (1,)
) -> None:
    """This tree against the checkout ``other``, side by side (see the module docstring); one
    pair of interpreters per thread count in ``threads``, all taking turns."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    other = os.path.abspath(other)
    sys.path.insert(0, here)
    from benchmarks import side_by_side

    argv = ["--device", device, "--number", str(number)] + ["--cpu-clock"] * cpu_clock
    first = side_by_side("dispatch.py", argv, here, other, rounds, number, cpu_clock, "op", threads)
    c_this, c_other = first["this"]["calls"], first["against"]["calls"]
    print(f"{'calls/op (add)':16s} {'':7s} {c_this:9.2f} {c_other:11.2f} {c_this / c_other:6.2f}x")


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
    print(f"x + y takes the {add_path()} (C calls are not seen by cProfile: the stages list Python's)")
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
    ap.add_argument("--against", metavar="DIR", help="compare with the checkout in DIR, side by side")
    ap.add_argument("--rounds", type=int, default=10, help="with --against: rounds taking turns")
    ap.add_argument("--cpu-clock", action="store_true", help="time with the process's CPU clock")
    ap.add_argument("--threads", default="1", help="with --against: thread counts, e.g. 1,2")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.device, args.number, args.cpu_clock)
        return
    if args.against:
        threads = tuple(int(t) for t in args.threads.split(","))
        against(args.against, args.rounds, args.number, args.device, args.cpu_clock, threads)
        return
    if args.breakdown:
        breakdown(args.number * 10)
        return
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None

    cases = _cases(args.device)
    if torch is not None:
        rng = np.random.default_rng(0)
        a16, b16 = rng.random(16, dtype=np.float32), rng.random(16, dtype=np.float32)
        a64, b64 = rng.random((64, 64), dtype=np.float32), rng.random((64, 64), dtype=np.float32)
        ta16, tb16 = torch.from_numpy(a16), torch.from_numpy(b16)
        ta64, tb64 = torch.from_numpy(a64), torch.from_numpy(b64)
        tfns = {
            "add": lambda: ta16 + tb16,
            "mul": lambda: ta16 * tb16,
            "adds": lambda: ta16 + 1.0,
            "div": lambda: ta16 / tb16,
            "divs": lambda: ta16 / 2.0,
            "rsubs": lambda: 1.0 - ta16,
            "rdivs": lambda: 1.0 / ta16,
            "lt": lambda: ta16 < tb16,
            "neg": lambda: -ta16,
            "mm": lambda: ta64 @ tb64,
        }
    clock = time.process_time if args.cpu_clock else time.perf_counter
    what = "process CPU time" if args.cpu_clock else "wall time"
    print(f"device {args.device}; median of {args.repeat} x {args.number} calls; {what}, microseconds per op")
    head = f"{'op':16s} {'oarlock':>9s} {'numpy':>9s}" + (
        f" {'torch':>9s} {'oar/torch':>10s}" if torch else ""
    )
    print(head)
    for name, (f_fw, f_np, key) in cases.items():
        t_fw = bench(f_fw, args.number, args.repeat, clock=clock)
        t_np = bench(f_np, args.number, args.repeat, clock=clock)
        line = f"{name:16s} {t_fw:9.2f} {t_np:9.2f}"
        if torch is not None:
            t_t = bench(tfns[key], args.number, args.repeat, clock=clock)
            line += f" {t_t:9.2f} {t_fw / t_t:9.2f}x"
        print(line)


if __name__ == "__main__":
    main()
