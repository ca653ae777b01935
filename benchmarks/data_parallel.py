"""Data parallel step time against one process, side by side in one run.

    oarlock launch -n 2 benchmarks/data_parallel.py [--rounds 6] [--steps 5] [--batch 32] [--width 1024]

A 256-width-width-10 MLP (ReLU), SGD; each step is ``loss.backward(); opt.step();
opt.clear_grad()`` (``DataParallel`` averages the gradients inside backward). Each round
runs ``--steps`` steps of three configurations, one after the other:

``dp``           every rank, ``--batch`` rows per rank (global batch N x batch)
``one, global``  rank 0 alone (the others wait at a barrier), the global batch
``one, half``    rank 0 alone, ``--batch`` rows: the work of one DP rank without communication

Rank 0 prints the median step time of each (the first round left out), its median CPU time
(``time.process_time``: on a loaded machine the wall time also counts the time the process
waited for a core) and the ratios, and the load average at the start and the end.
``--bucket-mb`` sets ``comm_buffer_size``. The all-reduces are asynchronous (started from the
hooks, waited for when backward ends), so the time inside the calls says nothing of their
cost: ``benchmarks/dp_overlap.py`` measures the overlap. The waiting ranks poll MPI (yielding
the core for the first second, then sleeping 1 ms at a time), so on a machine with fewer cores
than ranks the lone runs are slowed a little too.
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


def steps(model, opt, x, y, n: int, cpu: list[float]) -> list[float]:
    times = []
    for _ in range(n):
        c = time.process_time()
        t = time.perf_counter()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return times


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--bucket-mb", type=float, default=25, help="DataParallel's comm_buffer_size")
    args = ap.parse_args()
    dist.init_parallel_env()
    rank, n = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"load average at the start: {_load()}", flush=True)
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
    cpu: dict[str, list[float]] = {k: [] for k in data}
    for r in range(args.rounds):
        dist.barrier()
        spent: list[float] = []
        got = steps(*dp, *data["dp"], args.steps, spent)
        if r:
            times["dp"] += got
            cpu["dp"] += spent
        dist.barrier()
        if rank == 0:
            for name in ("one, global", "one, half"):
                spent = []
                got = steps(*one, *data[name], args.steps, spent)
                if r:
                    times[name] += got
                    cpu[name] += spent
        dist.barrier()
    if rank == 0:
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        c = {k: statistics.median(v) * 1e3 for k, v in cpu.items()}
        print(f"{n} ranks, {args.batch} rows per rank, width {args.width}: median step (ms)")
        for k, v in med.items():
            print(f"  {k:12s} {v:8.2f}   cpu {c[k]:8.2f}")
        print(
            f"  dp / one, global = {med['dp'] / med['one, global']:.2f}   dp / one, half = "
            f"{med['dp'] / med['one, half']:.2f}   (cpu: {c['dp'] / c['one, half']:.2f})"
        )
        print(f"load average at the end: {_load()}")


if __name__ == "__main__":
    main()
