"""Data parallel step time: ``DataParallel`` averaging gradients during backward, on N ranks,
against the same per-rank work in one process.

    python benchmarks/data_parallel.py [--steps 25] [--batch 32] [--width 1024]
    oarlock launch -n 2 benchmarks/data_parallel.py

A 256-width-width-10 MLP (ReLU), batch ``--batch`` rows per rank, SGD; each step is
``loss.backward(); opt.step(); opt.clear_grad()`` (the averaging happens inside backward).
Rank 0 prints the median and the minimum step time of the steps after the first five.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework as fw  # noqa: E402
import framework.distributed as dist  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--width", type=int, default=1024)
    args = ap.parse_args()
    dist.init_parallel_env()
    rank, n = dist.get_rank(), dist.get_world_size()
    fw.seed(0)
    w = args.width
    model = fw.nn.Sequential(
        fw.nn.Linear(256, w), fw.nn.ReLU(), fw.nn.Linear(w, w), fw.nn.ReLU(), fw.nn.Linear(w, 10)
    )
    if n > 1:
        model = fw.DataParallel(model)
    opt = fw.optimizer.SGD(0.01, parameters=model.parameters())
    rng = np.random.default_rng(rank)
    x = fw.to_tensor(rng.normal(size=(args.batch, 256)).astype(np.float32))
    y = fw.to_tensor(rng.normal(size=(args.batch, 10)).astype(np.float32))
    times = []
    for _ in range(args.steps):
        t = time.perf_counter()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        times.append(time.perf_counter() - t)
    if rank == 0:
        kept = times[5:]
        print(
            f"{n} rank(s), batch {args.batch} per rank: median step {statistics.median(kept) * 1e3:.1f} ms, "
            f"min {min(kept) * 1e3:.1f} ms"
        )


if __name__ == "__main__":
    main()
