"""CUDA plugin benchmark: how close the plugin's kernels come to the GPU's datasheet.

    python benchmarks/cuda.py [--quick] [--out FILE]

Measures, through the registered CUDA kernels (what Oarlock's dispatcher calls):
  * matmul TFLOP/s in float32 (CUDA cores), TF32 (tensor cores), float16 and bfloat16, against the
    dense peaks of the GPU model;
  * elementwise ``add`` and an RMSNorm composed of cupy ops, in GB/s against the memory
    bandwidth;
  * launch overhead: microseconds per tiny ``add`` through the plugin, and with raw cupy.

Without a GPU it prints why and exits 0.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

# NOTE: this file is named cuda.py; drop its folder from the path so that `import cuda`
# (NVIDIA's cuda-python / cuda-pathfinder, which cupy imports) does not find this script.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

#: Dense datasheet peaks: name fragment -> (FP32 TFLOP/s, TF32, FP16, memory TB/s). First match wins.
PEAKS = [
    ("H200", (67.0, 494.7, 989.4, 4.8)),
    ("H100 PCIe", (51.2, 378.0, 756.0, 2.0)),
    ("H100 NVL", (60.0, 417.5, 835.0, 3.9)),
    ("H100", (67.0, 494.7, 989.4, 3.35)),
    ("A100-SXM4-80GB", (19.5, 156.0, 312.0, 2.039)),
    ("A100", (19.5, 156.0, 312.0, 1.555)),
    ("L40S", (91.6, 183.0, 366.0, 0.864)),
    ("A10G", (31.2, 62.5, 125.0, 0.6)),
    ("L4", (30.3, 60.0, 121.0, 0.3)),
    ("T4", (8.1, 0.0, 65.0, 0.32)),
]


def peaks_for(name: str, props_extra: dict) -> tuple[float, float, float, float]:
    for fragment, peaks in PEAKS:
        if fragment.lower() in name.lower():
            return peaks
    # Unknown model: bandwidth from the memory clock and bus width (DDR: two transfers a clock).
    clock_khz, bus = props_extra.get("memory_clock_khz", 0), props_extra.get("memory_bus_width_bits", 0)
    return (0.0, 0.0, 0.0, 2 * clock_khz * 1e3 * bus / 8 / 1e12)


class Bench:
    def __init__(self, quick: bool) -> None:
        import cupy as cp

        import plugins.cuda as cuda_plugin
        from adapter_api import KernelContext, Registry

        self.cp = cp
        self.quick = quick
        self.rt = cuda_plugin.CUDARuntime()
        self.registry = Registry(plugin="cuda")
        cuda_plugin.oarlock_register(self.registry)
        self.ctx = KernelContext(0, self.rt.default_stream(0), self.rt)
        self.stream = self.ctx.stream

    def kernel(self, op: str, dtype: str):
        return self.registry.kernels[(op, "cuda", np.dtype(dtype))].fn

    def time_ms(self, fn, iters: int, warmup: int = 2) -> float:
        """Mean milliseconds per call, timed with events around ``iters`` calls."""
        for _ in range(warmup):
            fn()
        e0, e1 = self.rt.create_event(0), self.rt.create_event(0)
        self.rt.record_event(e0, self.stream)
        for _ in range(iters):
            fn()
        self.rt.record_event(e1, self.stream)
        self.rt.synchronize_event(e1)
        return self.rt.elapsed_ms(e0, e1) / iters

    def random(self, shape, dtype):
        cp = self.cp
        with self.stream:
            return cp.random.default_rng(0).standard_normal(shape, dtype=cp.float32).astype(dtype)

    # -- measurements -------------------------------------------------------------------
    def matmul(self, dtype: str, tf32: bool = False) -> float:
        from cupy._core import _routines_linalg as linalg

        cp = self.cp
        n = 4096 if self.quick else 8192
        if dtype == "bfloat16":  # raw bits, as the plugin holds bfloat16
            from plugins.cuda.kernels import f32_to_bf16

            a, b = (self.random((n, n), "float32") for _ in range(2))
            with self.stream:
                a16, b16, c = (cp.empty((n, n), cp.uint16) for _ in range(3))
                f32_to_bf16(cp, a, a16)
                f32_to_bf16(cp, b, b16)
            a, b = a16, b16
        else:
            a, b = self.random((n, n), dtype), self.random((n, n), dtype)
            with self.stream:
                c = cp.empty((n, n), dtype)
        fn = self.kernel("matmul", dtype)
        old = linalg.get_compute_type(np.float32)
        if tf32:
            linalg.set_compute_type(np.float32, linalg.COMPUTE_TYPE_TF32)
        try:
            ms = self.time_ms(lambda: fn(self.ctx, [c], [a, b]), iters=5 if self.quick else 10)
        finally:
            linalg.set_compute_type(np.float32, old)
        return 2 * n**3 / (ms * 1e-3) / 1e12

    def add_gbps(self) -> float:
        cp = self.cp
        n = (1 << 26) if self.quick else (1 << 28)
        x, y = self.random((n,), "float32"), self.random((n,), "float32")
        with self.stream:
            z = cp.empty_like(x)
        fn = self.kernel("add", "float32")
        ms = self.time_ms(lambda: fn(self.ctx, [z], [x, y]), iters=10)
        return 3 * n * 4 / (ms * 1e-3) / 1e9

    def rms_norm_gbps(self) -> float:
        cp = self.cp
        rows, d = (4096, 4096) if self.quick else (16384, 8192)
        x, w = self.random((rows, d), "float32"), self.random((d,), "float32")

        def rms_norm():
            with self.stream:
                ms = cp.mean(x * x, axis=-1, keepdims=True)
                return x * (1.0 / cp.sqrt(ms + 1e-6)) * w

        ms = self.time_ms(rms_norm, iters=10)
        return 2 * x.nbytes / (ms * 1e-3) / 1e9  # the bytes a fused kernel must move

    def launch_us(self) -> tuple[float, float]:
        cp = self.cp
        with self.stream:
            x = cp.ones(16, cp.float32)
            z = cp.empty_like(x)
        fn = self.kernel("add", "float32")
        n = 2000 if self.quick else 10000
        out = []
        for call in (lambda: fn(self.ctx, [z], [x, x]), lambda: cp.add(x, x, out=z)):
            with self.stream:
                for _ in range(100):
                    call()
                self.stream.synchronize()
                t0 = time.perf_counter()
                for _ in range(n):
                    call()
                self.stream.synchronize()
            out.append((time.perf_counter() - t0) / n * 1e6)
        return out[0], out[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a few seconds)")
    ap.add_argument("--out", help="also append the report to this file")
    args = ap.parse_args(argv)

    from plugins.cuda import CUDARuntime

    rt = CUDARuntime()
    if rt.device_count() == 0:
        print(f"cuda benchmark skipped: {rt.unavailable_reason}")
        return 0
    props = rt.properties(0)
    fp32_peak, tf32_peak, fp16_peak, bw_peak = peaks_for(props.name, props.extra)
    bench = Bench(args.quick)
    lines = [
        f"device: {props.name} (sm {props.extra['compute_capability']}, {props.compute_units} SMs, "
        f"{props.total_memory / 2**30:.0f} GiB, driver {props.driver_version}, runtime {props.runtime_version})"
    ]

    def pct(value: float, peak: float) -> str:
        return f"{100 * value / peak:5.1f}% of {peak:g}" if peak else "peak unknown"

    def report(label: str, fn, unit: str, peak: float) -> None:
        try:
            value = fn()
            lines.append(f"{label:<28} {value:9.1f} {unit:<8} {pct(value, peak)}")
        except Exception as exc:  # noqa: BLE001 — one failed measurement does not hide the others
            lines.append(f"{label:<28} FAILED {type(exc).__name__}: {exc}")
        print(lines[-1], flush=True)

    print(lines[0], flush=True)
    report("matmul float32 (FP32)", lambda: bench.matmul("float32"), "TFLOP/s", fp32_peak)
    report("matmul float32 (TF32)", lambda: bench.matmul("float32", tf32=True), "TFLOP/s", tf32_peak)
    report("matmul float16", lambda: bench.matmul("float16"), "TFLOP/s", fp16_peak)
    report("matmul bfloat16", lambda: bench.matmul("bfloat16"), "TFLOP/s", fp16_peak)
    report("add float32", bench.add_gbps, "GB/s", bw_peak * 1e3)
    report("rms_norm composed (cupy)", bench.rms_norm_gbps, "GB/s", bw_peak * 1e3)
    try:
        plugin_us, cupy_us = bench.launch_us()
        lines.append(
            f"{'launch overhead (add, 16)':<28} {plugin_us:9.1f} us/call via plugin, {cupy_us:.1f} us raw cupy"
        )
    except Exception as exc:  # noqa: BLE001
        lines.append(f"launch overhead FAILED {type(exc).__name__}: {exc}")
    print(lines[-1], flush=True)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
