"""Eager dispatch overhead: microseconds per op on tiny inputs, side by side in one run.

    python benchmarks/dispatch.py [--device cpu] [--repeat 7] [--number 2000]

Prints the median over repeats of the mean time per call, for Oarlock on the chosen device,
numpy, and torch eager when importable, and the ratio Oarlock / torch.
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=2000)
    args = ap.parse_args()
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
