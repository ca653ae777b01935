"""Data parallel step time against one process, side by side in one run.

    oarlock launch -n 2 benchmarks/data_parallel.py [--rounds 6] [--steps 5] [--batch 32] [--width 1024]

A 256-width-width-10 MLP (ReLU), SGD; each step is ``loss.backward(); opt.step();
opt.clear_grad()`` (``DataParallel`` averages the gradients inside backward). Each round
runs ``--steps`` steps of three configurations, one after the other:

``dp``           every rank, ``--batch`` rows per rank (global batch N x batch)
``one, global``  rank 0 alone (the others wait at a barrier), the global batch
``one, half``    rank 0 alone, ``--batch`` rows: the work of one DP rank without communication

Rank 0 prints the median step time of each (the first round left out) and the ratios, and
the overlap of the gradient all-reduces with backward: ``comm`` is the median per step of
the time spent inside DataParallel's all-reduce calls, and ``overlap = 1 - (dp - one,
half) / comm`` the share of it hidden behind computation (100 %: the step costs no more than
one rank's work alone; 0 %: it costs the work plus every all-reduce). ``--bucket-mb`` sets
``comm_buffer_size`` (several buckets can go out before backward ends). The waiting ranks poll MPI (yielding the core for the first second, then sleeping 1 ms at a
time), so on a machine with fewer cores than ranks the lone runs are slowed a little too.
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
from framework.distributed import collective  # noqa: E402

#: (start, end) of every all-reduce call (the gradient buckets) while recording
CALLS: list[tuple[float, float]] = []
_all_reduce = collective.all_reduce


def _timed_all_reduce(*args, **kwargs):
    t = time.perf_counter()
    try:
        return _all_reduce(*args, **kwargs)
    finally:
        CALLS.append((t, time.perf_counter()))


def model_and_opt(width: int, parallel: bool, bucket_mb: float = 25):
    fw.seed(0)
    model = fw.nn.Sequential(
        fw.nn.Linear(256, width),
        fw.nn.ReLU(),
        fw.nn.Linear(width, width),
        fw.nn.ReLU(),
        fw.nn.Linear(width, 10),
    )
    opt = fw.optimizer.SGD(0.01, parameters=model.parameters())
    return (dist.DataParallel(model, comm_buffer_size=bucket_mb) if parallel else model), opt


def steps(model, opt, x, y, n: int, comm: list[float] | None = None) -> list[float]:
    times = []
    for _ in range(n):
        CALLS.clear()
        t = time.perf_counter()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        times.append(time.perf_counter() - t)
        if comm is not None:
            comm.append(sum(e - s for s, e in CALLS))
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--bucket-mb", type=float, default=25, help="DataParallel's comm_buffer_size")
    args = ap.parse_args()
    collective.all_reduce = _timed_all_reduce  # DataParallel calls it through the module
    dist.init_parallel_env()
    rank, n = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(0)
    xg = rng.normal(size=(n * args.batch, 256)).astype(np.float32)
    yg = rng.normal(size=(n * args.batch, 10)).astype(np.float32)
    rows = slice(rank * args.batch, (rank + 1) * args.batch)
    dp = model_and_opt(args.width, n > 1, args.bucket_mb)
    one = model_and_opt(args.width, False)
    data = {
        "dp": (fw.to_tensor(xg[rows]), fw.to_tensor(yg[rows])),
        "one, global": (fw.to_tensor(xg), fw.to_tensor(yg)),
        "one, half": (fw.to_tensor(xg[: args.batch]), fw.to_tensor(yg[: args.batch])),
    }
    times: dict[str, list[float]] = {k: [] for k in data}
    comm: list[float] = []
    for r in range(args.rounds):
        dist.barrier()
        spent: list[float] = []
        got = steps(*dp, *data["dp"], args.steps, spent)
        if r:
            times["dp"] += got
            comm += spent
        dist.barrier()
        if rank == 0:
            for name in ("one, global", "one, half"):
                got = steps(*one, *data[name], args.steps)
                if r:
                    times[name] += got
        dist.barrier()
    if rank == 0:
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        print(f"{n} ranks, {args.batch} rows per rank, width {args.width}: median step (ms)")
        for k, v in med.items():
            print(f"  {k:12s} {v:8.2f}")
        print(
            f"  dp / one, global = {med['dp'] / med['one, global']:.2f}   dp / one, half = {med['dp'] / med['one, half']:.2f}"
        )
        c = statistics.median(comm) * 1e3
        overlap = 1 - (med["dp"] - med["one, half"]) / c if c > 0 else float("nan")
        print(f"  comm {c:8.2f} ms per step (bucket {args.bucket_mb} MiB)   overlap {overlap:.0%}")


if __name__ == "__main__":
    main()
