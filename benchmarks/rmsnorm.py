"""RMSNorm (and softmax, layer_norm) forward: composed eager vs hand-fused vs generated kernels.

Everything is measured side by side in one run: medians over ``--reps`` rounds (one call of
every variant of an op per round) after a warm-up,
with GB/s (bytes read + written once) and the fraction of the copy bandwidth measured in the
same run (an OpenMP C copy built through the CPU plugin's compile access; numpy's
single-threaded copy is shown too). On OpenCL the copy is the plugin's ``copy`` kernel.

    python benchmarks/rmsnorm.py                      # cpu + opencl, (4096, 4096) and (64, 4096)
    python benchmarks/rmsnorm.py --devices cpu --no-torch-compile --reps 10

Rows "kernel at width W" launch the generated kernel built at each vector width (framework
compiler's ``_RowLoops``: passes in chunks of W elements with W partial results per reduction
and a prefetch of the next row; width 1 is the plain loops).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")  # time built kernels, not a cold cache's stand-ins
import framework as fw  # noqa: E402
import framework.nn.functional as F  # noqa: E402
from framework import compiler  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import cpu_description  # noqa: E402

EPS = 1e-6


def median_ms(fn: Callable[[], Any], sync: Callable[[], None], reps: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def round_robin(fns: dict[str, Callable[[], Any]], sync: Callable[[], None], reps: int) -> dict[str, float]:
    """Median ms of each function, timed one call of each per round (a change of load on a
    shared machine hits every variant alike)."""
    for fn in fns.values():
        fn()
        fn()
    sync()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            sync()
            times[k].append((time.perf_counter() - t0) * 1e3)
    return {k: statistics.median(v) for k, v in times.items()}


class compose_eager:
    """``with compose_eager():`` runs composites as their decomposition (OARLOCK_COMPILE=0)."""

    def __enter__(self) -> None:
        self.old = os.environ.get("OARLOCK_COMPILE")
        os.environ["OARLOCK_COMPILE"] = "0"

    def __exit__(self, *exc: object) -> None:
        if self.old is None:
            os.environ.pop("OARLOCK_COMPILE", None)
        else:
            os.environ["OARLOCK_COMPILE"] = self.old


def _hand_fused(on: bool) -> None:
    """Register (or remove) the CPU plugin's hand-fused rms_norm kernel."""
    from framework import testing
    from plugins.cpu.fused import register_fused

    reg = testing.registry()
    if on:
        register_fused(reg)
    else:
        for k in [k for k in reg.kernels if k[0] == "rms_norm" and k[1] == "cpu"]:
            del reg.kernels[k]
    testing.clear_kernel_cache()


def c_copy(xn: np.ndarray) -> Callable[[], Any]:
    """An OpenMP C copy of ``xn`` (built through the cpu plugin's compile access)."""
    src = """#include <stdint.h>
void bench_copy(float* restrict y, const float* restrict x, int64_t n) {
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) y[i] = x[i];
}
"""
    prog = compiler.compile_source(src, "bench_copy", "cpu")
    comp = compiler.compiler_for(fw.Device("cpu"))
    yn = np.empty_like(xn)
    return lambda: comp.launch(prog, [yn, xn, np.int64(xn.size)], (1,), None, None)


def c_copy_ms(xn: np.ndarray, reps: int) -> float:
    return median_ms(c_copy(xn), lambda: None, reps)


def rows_for(
    op: str, xn: np.ndarray, wn: np.ndarray, bn: np.ndarray, device: str
) -> dict[str, Callable[[], Any]]:
    x, w, b = (fw.to_tensor(a, device=device) for a in (xn, wn, bn))
    n = xn.shape[-1]
    fw_fn = {
        "rms_norm": lambda: F.rms_norm(x, weight=w, epsilon=EPS),
        "softmax": lambda: F.softmax(x),
        "layer_norm": lambda: F.layer_norm(x, n, w, b, epsilon=EPS),
    }[op]

    def composed() -> Any:
        with compose_eager():
            return fw_fn()

    out: dict[str, Callable[[], Any]] = {"oarlock composed eager": composed}
    if op == "rms_norm" and device == "cpu":

        def fused() -> Any:
            _hand_fused(True)
            try:
                return fw_fn()
            finally:
                _hand_fused(False)

        out["oarlock hand-fused (numpy)"] = fused
    out["oarlock generated"] = fw_fn
    out.update(width_rows(op, x, w, b, device))
    if op == "softmax":
        out.update(softmax_before_after(xn, device))
    return out


def width_rows(op: str, x: Any, w: Any, b: Any, device: str) -> dict[str, Callable[[], Any]]:
    """The generated kernel launched directly at each vector width of tune.WIDTHS (emit/rows.py
    ``_RowLoops``; width 1 is the plain loops, as before issue #14's chunked passes), side by
    side with what eager mode runs (its width tuned)."""
    from framework.compiler import eager, tune

    ins, attrs = {
        "rms_norm": ([x, w], {"epsilon": EPS}),
        "softmax": ([x], {"axis": -1}),
        "layer_norm": ([x, w, b], {"epsilon": EPS, "has_weight": True, "has_bias": True}),
    }[op]
    prog = compiler.lower(op, *ins, **attrs)
    dev = x.device
    comp = compiler.compiler_for(dev)
    rows = int(np.prod(x.shape[:-1]))
    y = fw.to_tensor(np.empty(x.shape, np.float32), device=device)
    out: dict[str, Callable[[], Any]] = {}
    args = [*ins, y, np.int64(rows)]
    for width in tune.WIDTHS:
        k = eager.make_kernel(prog, comp.language, device_kind=eager.device_kind(dev), width=width)
        if k.width is None:
            return {}
        p = k.build(comp)
        # the work-group size eager mode tunes (kept by kernel, shared by its widths)
        lo = tune.rows_local(
            comp,
            k.entry,
            rows,
            x.shape[-1],
            k.local if k.local > 1 else None,
            lambda g, p=p: compiler.launch(p, args, (rows,), None if g is None else (g,), device),
            lambda: fw.synchronize(device),
        )
        local = None if lo is None else (lo,)
        out[f"kernel at width {width}"] = lambda p=p, local=local: compiler.launch(
            p, args, (rows,), local, device
        )
    return out


def softmax_before_after(xn: np.ndarray, device: str) -> dict[str, Callable[[], Any]]:
    """The generated softmax kernel launched directly, as built now and as it was before the row
    math work of issue #14 (the same source with one change undone), side by side: on cpu the
    exp values kept for the last pass went to the output row, not the streamed row buffer; on
    OpenCL (PoCL) the driver's ``exp`` instead of the vectorisable ``oarlock_expf``."""
    import re

    x = fw.to_tensor(xn, device=device)
    src = compiler.generated_source("softmax", x, axis=-1)
    rows = np.int64(xn.shape[0])
    if device == "cpu":
        before = re.sub(r"dst0\[j\] = (v\d+);  /\* kept", r"out0[r * N + j] = \1;  /* kept", src)
        before = re.sub(r"= dst0\[j\];", "= out0[r * N + j];", before)
    else:
        before = src.replace("oarlock_expf(v", "exp(v")
    if before == src:
        return {}
    comp = compiler.compiler_for(x.device)
    entry = re.search(r"void (\w+)\(", src.split("#define N")[1]).group(1)
    out: dict[str, Callable[[], Any]] = {}
    for label, s in (("kernel now", src), ("kernel before #14", before)):
        if device == "cpu":
            prog, yn = compiler.compile_source(s, entry, device), np.empty_like(xn)
            out[f"softmax {label}"] = lambda p=prog, y=yn: comp.launch(p, [xn, y, rows], (1,), None, None)
        else:
            prog = compiler.compile_source(s, entry, device, options=("-cl-unsafe-math-optimizations",))
            y = fw.to_tensor(np.empty_like(xn), device=device)
            for wg in (1, 64):
                out[f"softmax {label}, wg {wg}"] = lambda p=prog, y=y, wg=wg: compiler.launch(
                    p, [x, y, rows], (int(rows),), (wg,), device
                )
    return out


def numpy_and_torch(
    op: str, xn: np.ndarray, wn: np.ndarray, bn: np.ndarray, torch_compile: bool
) -> dict[str, Callable[[], Any]]:
    def np_rms() -> Any:
        return xn / np.sqrt((xn * xn).mean(-1, keepdims=True) + EPS) * wn

    def np_softmax() -> Any:
        e = np.exp(xn - xn.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def np_ln() -> Any:
        mu = xn.mean(-1, keepdims=True)
        d = xn - mu
        return d / np.sqrt((d * d).mean(-1, keepdims=True) + EPS) * wn + bn

    out: dict[str, Callable[[], Any]] = {
        "numpy composed": {"rms_norm": np_rms, "softmax": np_softmax, "layer_norm": np_ln}[op]
    }
    try:
        import torch
        import torch.nn.functional as TF
    except ImportError:
        return out
    x, w, b = (torch.from_numpy(a) for a in (xn, wn, bn))
    n = xn.shape[-1]

    def t_rms(x: Any, w: Any) -> Any:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w

    def t_softmax(x: Any) -> Any:
        e = torch.exp(x - x.amax(-1, keepdim=True))
        return e / e.sum(-1, keepdim=True)

    def t_ln(x: Any, w: Any, b: Any) -> Any:
        mu = x.mean(-1, keepdim=True)
        d = x - mu
        return d * torch.rsqrt((d * d).mean(-1, keepdim=True) + EPS) * w + b

    composed, lib, args = {
        "rms_norm": (t_rms, lambda: TF.rms_norm(x, (n,), w, EPS), (x, w)),
        "softmax": (t_softmax, lambda: torch.softmax(x, -1), (x,)),
        "layer_norm": (t_ln, lambda: TF.layer_norm(x, (n,), w, b, EPS), (x, w, b)),
    }[op]
    out["torch eager composed"] = lambda: composed(*args)
    out[
        {"rms_norm": "torch F.rms_norm", "softmax": "torch.softmax", "layer_norm": "torch F.layer_norm"}[op]
    ] = lib
    if torch_compile:
        try:
            cf = torch.compile(composed)
            cf(*args)
            out["torch.compile composed"] = lambda: cf(*args)
        except Exception as exc:  # noqa: BLE001 — a benchmark row, not a requirement
            print(f"  (torch.compile unavailable: {type(exc).__name__}: {exc})")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--devices", default="cpu,opencl")
    ap.add_argument("--ops", default="rms_norm,softmax,layer_norm")
    ap.add_argument("--shapes", default="4096x4096,64x4096")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--no-torch-compile", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    try:
        import torch

        print(f"torch {torch.__version__}, threads {torch.get_num_threads()}")
    except ImportError:
        pass
    print(f"cpu: {cpu_description()}")
    for shape_s in args.shapes.split(","):
        shape = tuple(int(s) for s in shape_s.split("x"))
        xn = rng.standard_normal(shape, dtype=np.float32)
        wn = rng.standard_normal(shape[-1], dtype=np.float32)
        bn = rng.standard_normal(shape[-1], dtype=np.float32)
        nbytes = 2 * xn.nbytes
        for dev in args.devices.split(","):
            try:
                fw.to_tensor([0.0], device=dev)
            except Exception as exc:  # noqa: BLE001
                print(f"\n[{dev}] unavailable: {exc}")
                continue
            sync = lambda d=dev: fw.synchronize(d)
            if dev == "cpu":
                copy_ms = c_copy_ms(xn, args.reps)
                np_copy = median_ms(
                    lambda a=xn, d=np.empty_like(xn): np.copyto(d, a), lambda: None, args.reps
                )
                copy_note = f"OpenMP C copy {copy_ms:.2f} ms, numpy copy {np_copy:.2f} ms"
                copy_ms = min(copy_ms, np_copy)  # the faster copy is the reference
            else:
                from framework.testing import run_op

                xt = fw.to_tensor(xn, device=dev)
                copy_ms = median_ms(lambda t=xt: run_op("copy", [t]), sync, args.reps)
                copy_note = f"{dev} copy kernel {copy_ms:.2f} ms ({nbytes / copy_ms / 1e6:.1f} GB/s)"
            copy_bw = nbytes / copy_ms / 1e6
            copy_note += f"; reference copy {copy_bw:.1f} GB/s"
            for op in args.ops.split(","):
                print(f"\n== {op} float32 {shape} on {dev} — {copy_note}")
                print(f"  {'variant':<30} {'ms':>9} {'GB/s':>8} {'of copy':>8}")
                rows = rows_for(op, xn, wn, bn, dev)
                if dev == "cpu":
                    rows.update(numpy_and_torch(op, xn, wn, bn, not args.no_torch_compile))
                res = round_robin(rows, sync, args.reps)
                for name, ms in res.items():
                    gbs = nbytes / ms / 1e6
                    print(f"  {name:<30} {ms:9.2f} {gbs:8.1f} {gbs / copy_bw:8.0%}")
                g = res["oarlock generated"]
                line = f"  generated: {res['oarlock composed eager'] / g:.2f}x composed eager"
                if "oarlock hand-fused (numpy)" in res:
                    line += f", {res['oarlock hand-fused (numpy)'] / g:.2f}x hand-fused"
                print(line)
    print("\npaths:", fw.op_path_stats())


if __name__ == "__main__":
    main()
