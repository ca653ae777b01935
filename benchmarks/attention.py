"""Attention on cpu: the cpu plugin's fused kernels (``attention`` and ``attention_grad``,
plugins/cpu/attention.c) against the decomposition (the same call with the two kernels taken
out of the registry) and torch's ``scaled_dot_product_attention``, forward alone and forward +
backward, eager, causal, float32; median ms, timed round robin in one process.

    python -m benchmarks.attention [--reps 10] [--rounds 5] [--threads 1]
    python -m benchmarks.attention --against OLD.c   # e.g. git show main:plugins/cpu/attention.c > OLD.c

The variants run in rounds, each round a block of ``--reps`` calls per variant (switching the
kernels in and out of the registry between blocks, not between calls: a switch clears the
dispatcher's kernel cache).

``--against``: the C entries alone (``attn_fwd``, ``attn_bwd``, float32) of this attention.c and
of another version of it, both built by the plugin's compiler with the plugin's options, taking
turns on the same arrays, causal and not (the Transformer's heads are the Llama block's, not
causal); median ms on the thread's CPU clock.

Shapes: the tiny Llama's heads (batch 16, 4 heads, 64 tokens, head dim 16) and the Llama
block of benchmarks/train_step.py (8, 4, 128, 64).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

_THREADS = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else "1"
os.environ.setdefault("OARLOCK_NUM_THREADS", _THREADS)

import numpy as np  # noqa: E402

os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")  # time built kernels, not a cold cache's stand-ins
import framework as fw  # noqa: E402
import framework.nn.functional as F  # noqa: E402
from framework import testing  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import cpu_description  # noqa: E402

SHAPES = {
    "tiny Llama heads (16, 4, 64, 16)": (16, 4, 64, 16),
    "Llama block heads (8, 4, 128, 64)": (8, 4, 128, 64),
}


def fused(on: bool) -> Any:
    """The registry as it is (on) or without the cpu plugin's fused attention kernels (off)."""
    return contextlib.nullcontext() if on else testing.kernels_removed("attention", "attention_grad")


def oarlock(shape: tuple[int, ...], backward: bool) -> Callable[[], Any]:
    rng = np.random.default_rng(0)
    q, k, v, do = (rng.standard_normal(shape).astype(np.float32) for _ in range(4))
    ts = [fw.to_tensor(a, stop_gradient=not backward) for a in (q, k, v)]
    g = fw.to_tensor(do)

    def run() -> Any:
        o = F.attention(*ts, is_causal=True)
        if backward:
            return [t.numpy() for t in fw.grad([o], ts, grad_outputs=[g])]
        return o.numpy()

    return run


def rounds(fns: dict[str, tuple[Callable[[], Any], Any]], reps: int, n: int) -> dict[str, float]:
    """Median ms per call of each ``(fn, context)``: ``n`` rounds, each a block of ``reps``
    calls per variant inside its context (after one untimed call)."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(n):
        for name, (fn, ctx) in fns.items():
            with ctx():
                fn()
                for _ in range(reps):
                    t0 = time.perf_counter()
                    fn()
                    times[name].append((time.perf_counter() - t0) * 1e3)
    return {k: statistics.median(v) for k, v in times.items()}


def torch_sdpa(shape: tuple[int, ...], backward: bool) -> Callable[[], Any] | None:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(int(_THREADS))
    g = torch.Generator().manual_seed(0)
    q, k, v, do = (torch.randn(shape, generator=g) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_(backward)

    def run() -> Any:
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        if backward:
            return torch.autograd.grad(o, (q, k, v), do)
        return o

    return run


def _c_calls(
    progs: Any, q: Any, k: Any, v: Any, do: Any, outs: list, causal: int
) -> dict[str, Callable[[], int]]:
    """The forward and backward C calls of ``progs`` (attn_fwd, attn_bwd) on (heads, rows, dim) arrays."""
    fwd, bwd = progs
    b = fwd.ffi.from_buffer
    bh, lq, d = q.shape
    return {
        "forward": lambda: fwd.fn(b(q), b(k), b(v), b(outs[0]), bh, lq, lq, d, d, d**-0.5, causal),
        "backward": lambda: bwd.fn(
            *(b(a) for a in (q, k, v, do, *outs[1:])), bh, lq, lq, d, d, d**-0.5, causal
        ),
    }


def against(path: str, reps: int, n: int) -> None:
    """This attention.c's C entries against those of the file at ``path`` (see the docstring)."""
    from plugins.cpu import attention as A
    from plugins.cpu.compiler import CPUCompiler, own_options

    f32 = np.dtype(np.float32)
    comp = CPUCompiler()
    with open(path) as f:
        src = f.read()
    opts = own_options("attention.c", f32)
    old = [comp.load(comp.compile(src, e, opts), e) for e in ("attn_fwd", "attn_bwd")]
    new = A._programs(f32)[:2]
    rng = np.random.default_rng(0)
    for title, shape in SHAPES.items():
        bh, lq, d = shape[0] * shape[1], shape[2], shape[3]
        q, k, v, do = (rng.standard_normal((bh, lq, d)).astype(np.float32) for _ in range(4))
        outs = [np.empty_like(q) for _ in range(4)]
        for causal in (1, 0):
            times: dict[str, list[float]] = {}
            for _ in range(n):
                for name, progs in (("this", new), (os.path.basename(path), old)):
                    for what, call in _c_calls(progs, q, k, v, do, outs, causal).items():
                        for _ in range(reps):
                            t0 = time.thread_time()
                            assert call() == 0
                            times.setdefault(f"{what:8s} {name}", []).append((time.thread_time() - t0) * 1e3)
            print(f"\n== {title}, {'causal' if causal else 'not causal'} (median of {n} x {reps}, CPU ms)")
            for key, ts in sorted(times.items()):
                print(f"  {key:40s} {statistics.median(ts):8.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", default="1")
    ap.add_argument("--against", help="another attention.c: time its C entries against this one's")
    args = ap.parse_args()
    if testing.find_kernel("attention", "cpu", "float32") is None:
        print("the cpu plugin registered no fused attention (no C compiler): nothing to compare")
        return
    print(f"cpu: {cpu_description()}, {args.threads} thread(s)")
    if args.against:
        against(args.against, args.reps, args.rounds)
        return
    for title, shape in SHAPES.items():
        for backward in (False, True):
            run = oarlock(shape, backward)
            fns: dict[str, tuple[Callable[[], Any], Any]] = {
                "fused kernels": (run, lambda: fused(True)),
                "decomposition": (run, lambda: fused(False)),
            }
            t = torch_sdpa(shape, backward)
            if t is not None:
                fns["torch sdpa"] = (t, contextlib.nullcontext)
            res = rounds(fns, args.reps, args.rounds)
            what = "forward + backward" if backward else "forward"
            print(f"\n== {title}, causal, {what} (median of {args.rounds} x {args.reps})")
            for name, ms in res.items():
                print(f"  {name:16s} {ms:8.3f} ms  {ms / res['fused kernels']:5.2f}x")


if __name__ == "__main__":
    main()
