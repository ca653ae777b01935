"""OpenCL plugin benchmark: bandwidth, matmul, launch overhead and program build times.

Uses the plugin's runtime and kernels directly (no framework), on device 0::

    python benchmarks/opencl.py [--repeats 7] [--device 0]

Prints one table; ratios compare with numpy on the host, and launch costs with raw pyopencl
launches of the same kernel, measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid

import numpy as np

os.environ.setdefault("OARLOCK_COMPILE_BACKGROUND", "0")  # time built kernels, not a cold cache's stand-ins
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import plugins.opencl as plugin  # noqa: E402
from adapter_api import KernelContext, Registry  # noqa: E402
from plugins.opencl import kernels  # noqa: E402


def median_time(fn, repeats: int, sync=lambda: None) -> float:
    fn()
    sync()  # warm-up: builds, first-launch JIT, page faults
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def median_times(fns: dict, repeats: int, sync=lambda: None) -> dict:
    """Median seconds of each fn, run in turn within every repeat (round robin), so a change
    in machine load hits every case alike and the ratios stay fair."""
    for fn in fns.values():
        fn()
        sync()  # warm-up
    times: dict = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            sync()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


class Bench:
    def __init__(self, index: int) -> None:
        self.reg = Registry(plugin="opencl")
        plugin.oarlock_register(self.reg)
        self.rt = self.reg.runtimes["opencl"][1]()
        if self.rt.device_count() == 0:
            sys.exit(f"no OpenCL device: {self.rt.reason}")
        self.i = index
        self.q = self.rt.default_stream(index)
        self.ctx = KernelContext(index, self.q, self.rt)

    def put(self, a: np.ndarray):
        buf = self.rt.allocate(self.i, a.nbytes)
        self.rt.copy_h2d(self.i, buf, 0, np.ascontiguousarray(a), self.q)
        return self.rt.view(buf, 0, a.shape, a.dtype)

    def empty(self, shape, dtype):
        dtype = np.dtype(dtype)
        return self.rt.view(self.rt.allocate(self.i, int(np.prod(shape)) * dtype.itemsize), 0, shape, dtype)

    def k(self, op: str, dtype=np.float32):
        return self.reg.kernels[(op, "opencl", np.dtype(dtype))].fn

    def sync(self) -> None:
        self.q.finish()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--device", type=int, default=0)
    args = ap.parse_args()
    b, r = Bench(args.device), args.repeats
    props = b.rt.properties(args.device)
    print(
        f"device: opencl:{args.device} {props.name} ({props.extra['platform']}, {props.compute_units} "
        f"compute units), numpy {np.__version__}, median of {r}"
    )
    rows: list[tuple[str, str, str, str]] = []

    # -- bandwidth: y = a * x + b on 16M float32 ----------------------------------------
    n = 16 * 1024 * 1024
    xh = np.random.default_rng(0).random(n, dtype=np.float32)
    x, a, c = b.put(xh), b.put(np.full((1,), 2, np.float32)), b.put(np.full((1,), 1, np.float32))
    tmp, y = b.empty((n,), np.float32), b.empty((n,), np.float32)
    mul, add = b.k("mul"), b.k("add")

    def axpy() -> None:
        mul(b.ctx, [tmp], [a, x])
        add(b.ctx, [y], [tmp, c])

    dst = np.empty_like(xh)
    comp = b.reg.compilers["opencl"][1](b.rt, args.device)
    src = (
        "__kernel void axpy(__global float* y, __global const float* x, float a, float c, long n)"
        " { long i = get_global_id(0); if (i < n) y[i] = a * x[i] + c; }"
    )
    axpy_k = comp.load(comp.compile(src, "axpy"), "axpy")
    t = median_times(
        {
            "cl": axpy,
            "fused": lambda: comp.launch(
                axpy_k, [y, x, np.float32(2), np.float32(1), np.int64(n)], (n,), (256,), b.q
            ),
            "np_copy": lambda: np.copyto(dst, xh),
            "np_axpy": lambda: np.add(np.multiply(xh, np.float32(2), out=dst), np.float32(1), out=dst),
        },
        r,
        b.sync,
    )
    t_cl, t_fused, t_np_copy, t_np_axpy = t["cl"], t["fused"], t["np_copy"], t["np_axpy"]
    gbs = lambda nbytes, t: nbytes / t / 1e9
    cl_gbs = gbs(4 * 4 * n, t_cl)  # mul: read x, write tmp; add: read tmp, write y
    np_copy_gbs = gbs(2 * 4 * n, t_np_copy)
    rows.append(
        (
            "a*x+b 16M f32 (mul+add, broadcast scalars)",
            f"{cl_gbs:.1f} GB/s, {t_cl * 1e3:.1f} ms",
            f"copy {np_copy_gbs:.1f} GB/s; a*x+b {t_np_axpy * 1e3:.1f} ms",
            f"{cl_gbs / np_copy_gbs:.2f}x bw, {t_np_axpy / t_cl:.2f}x time",
        )
    )
    fgbs = gbs(2 * 4 * n, t_fused)
    rows.append(
        (
            "a*x+b 16M f32 (fused, compile access)",
            f"{fgbs:.1f} GB/s, {t_fused * 1e3:.1f} ms",
            f"copy {np_copy_gbs:.1f} GB/s",
            f"{fgbs / np_copy_gbs:.2f}x bw, {t_np_axpy / t_fused:.2f}x time",
        )
    )
    for v in (x, a, c, tmp, y):
        b.rt.free(args.device, v.buffer)

    # -- matmul ---------------------------------------------------------------------------
    mm = b.k("matmul")
    for m in (1024, 2048):
        ah = np.random.default_rng(1).random((m, m), dtype=np.float32)
        bh = np.random.default_rng(2).random((m, m), dtype=np.float32)
        av, bv, cv = b.put(ah), b.put(bh), b.empty((m, m), np.float32)
        reps = max(3, r // 2) if m > 1024 else r
        t = median_times(
            {"cl": lambda av=av, bv=bv, cv=cv: mm(b.ctx, [cv], [av, bv]), "np": lambda ah=ah, bh=bh: ah @ bh},
            reps,
            b.sync,
        )
        t_cl, t_np = t["cl"], t["np"]
        fl = 2 * m**3
        rows.append(
            (
                f"matmul {m}x{m} f32",
                f"{fl / t_cl / 1e9:.1f} GFLOP/s",
                f"{fl / t_np / 1e9:.1f} GFLOP/s",
                f"{t_np / t_cl:.2f}x",
            )
        )
        out = np.empty((m, m), np.float32)
        b.rt.copy_d2h(args.device, out, cv.buffer, 0, b.q)
        np.testing.assert_allclose(out, ah @ bh, rtol=1e-3)
        for v in (av, bv, cv):
            b.rt.free(args.device, v.buffer)

    # -- launch overhead --------------------------------------------------------------------
    one, out1 = b.put(np.ones(1, np.float32)), b.empty((1,), np.float32)
    add_ctx = (b.ctx, [out1], [one, one])
    batch = 1000
    # the floor: the same kernel object, enqueued straight through pyopencl with its arguments
    # set once (the plugin sets the same values on every launch, so the two can alternate)
    import pyopencl as cl

    dev = b.rt.device(args.device)
    raw = dev.kernel("math", "float32", "b_add")
    raw.set_args(
        out1.buffer, np.int64(0), one.buffer, np.int64(0), one.buffer, np.int64(0), np.int64(1), kernels._FLAT
    )
    grid = (dev.ew_local,), (dev.ew_local,)

    def batched() -> None:
        for _ in range(batch):
            add(*add_ctx)
        b.sync()

    def raw_batched() -> None:
        for _ in range(batch):
            cl.enqueue_nd_range_kernel(b.q, raw, *grid)
        b.sync()

    t = median_times(
        {"single": lambda: add(*add_ctx), "raw": lambda: cl.enqueue_nd_range_kernel(b.q, raw, *grid)},
        max(r, 50) * 4,
        b.sync,
    )
    t_single, t_raw = t["single"], t["raw"]
    t = median_times({"batch": batched, "raw": raw_batched}, r)
    t_batch, t_raw_batch = t["batch"] / batch, t["raw"] / batch
    t_np_add = median_time(lambda: np.add(xh[:1], xh[:1]), 1000)
    rows.append(
        (
            "launch: add 1 elem + finish",
            f"{t_single * 1e6:.1f} us",
            f"raw pyopencl {t_raw * 1e6:.1f} us; np.add {t_np_add * 1e6:.2f} us",
            f"{t_single / t_raw:.2f}x raw",
        )
    )
    rows.append(
        (
            f"launch: {batch} x add, one finish",
            f"{t_batch * 1e6:.1f} us/launch",
            f"raw pyopencl {t_raw_batch * 1e6:.1f} us/launch",
            f"{t_batch / t_raw_batch:.2f}x raw, {t_single / t_batch:.1f}x cheaper than single",
        )
    )
    t_view = median_time(lambda: [b.rt.view(one.buffer, 0, (1,), np.float32) for _ in range(1000)], r) / 1000
    rows.append(("runtime.view() per call", f"{t_view * 1e6:.2f} us", "", ""))

    # -- program build: first (unique source, cold process) vs cached (same source, new process)
    nonce = uuid.uuid4().hex
    first = _build_in_subprocess(args.device, nonce)
    cached = statistics.median(_build_in_subprocess(args.device, nonce) for _ in range(3))
    rows.append(
        (
            "build math/float32 + first exp launch (new process)",
            f"first {first * 1e3:.0f} ms",
            f"disk-cached {cached * 1e3:.0f} ms",
            f"{first / cached:.1f}x",
        )
    )
    t0 = time.perf_counter()
    b.rt.device(args.device).kernel("math", "float32", "u_exp")
    rows.append(
        (
            "same, in-process (program built, new cl.Kernel)",
            f"{(time.perf_counter() - t0) * 1e6:.1f} us",
            "",
            "",
        )
    )

    w = [
        max(len(row[i]) for row in rows + [("case", "opencl", "numpy / reference", "ratio")])
        for i in range(4)
    ]
    line = lambda cells: "  ".join(c.ljust(w[i]) for i, c in enumerate(cells))
    print(line(("case", "opencl", "numpy / reference", "ratio")))
    print(line(tuple("-" * x for x in w)))
    for row in rows:
        print(line(row))


_BUILD = """
import sys, time  # noqa: E402
import numpy as np  # noqa: E402
sys.path.insert(0, {root!r})
import pyopencl as cl  # noqa: E402
from plugins.opencl import programs  # noqa: E402
from plugins.opencl.runtime import OpenCLRuntime  # noqa: E402
dev = OpenCLRuntime().device({index})
source, options = programs.source_and_options(dev, "math", "float32")
t = time.perf_counter()
ctx = cl.Context([dev.device]); q = cl.CommandQueue(ctx)
nonce = "__kernel void nonce_{nonce}(__global int* p) {{ p[0] = 0; }}\\n"
prg = cl.Program(ctx, nonce + source).build(options=options)
k = cl.Kernel(prg, "u_exp")
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
k(q, (1024,), (dev.local_size,), buf, np.int64(0), buf, np.int64(0), np.int64(1024))
q.finish()
print(time.perf_counter() - t)
"""


def _build_in_subprocess(index: int, nonce: str) -> float:
    """Seconds to build the float32 math program and run one kernel, in a fresh process: the
    nonce kernel makes the program new to pyopencl's and PoCL's disk caches the first time
    (a nonce comment would not: PoCL caches per kernel after preprocessing)."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = _BUILD.format(root=root, index=index, nonce=nonce)
    return float(
        subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True
        ).stdout.split()[-1]
    )


if __name__ == "__main__":
    main()
