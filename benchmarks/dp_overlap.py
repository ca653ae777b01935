"""How much of DataParallel's gradient all-reduce hides behind backward (issue 37).

    oarlock launch -n 2 benchmarks/dp_overlap.py [--rounds 6] [--steps 5] [--batch 32] [--width 1024] [--bucket-mb 4]

A 256-width-width-10 MLP (ReLU), SGD; a step is ``loss.backward(); opt.step(); opt.clear_grad()``.
Each round runs ``--steps`` steps of each configuration, one after the other:

``dp async``   DataParallel as shipped: each bucket's all-reduce is started from the hooks
               during backward (``sync_op=False``) and waited for when backward ends
``dp sync``    the same, each all-reduce finished before backward goes on (no overlap)
``one, half``  rank 0 alone (the others wait at a barrier), ``--batch`` rows: the work of
               one DP rank without communication
``comm``       every rank all-reduces buffers of the buckets' sizes, nothing else

Rank 0 prints the median of each (the first round left out), ``dp async / one, half`` (the
issue's goal: at most 1.15), the time ``wait`` spent in the tasks' ``wait()`` at the end of
backward, ``overlap = 1 - (dp async - one, half) / comm``: the share of the all-reduce
time hidden behind computation (100 %: the step costs no more than one rank's work alone), and
``hidden = (dp sync - dp async) / (dp sync - one, half)``: the share of what the synchronous
all-reduces add to one rank's work that the asynchronous ones take away (steadier on a loaded
machine: it compares two runs of the same work side by side).
Run it with ``MPICH_ASYNC_PROGRESS=1`` in the environment to let MPICH progress the transfers
from a thread of its own (the hooks' ``MPI_Test`` calls do it otherwise).

Beside each median wall time, ``cpu`` is the median CPU time of the process in that step
(rank 0; for ``dp async`` also the other ranks'): the work a rank did, waiting in MPI's
polling included. On a CPU the collectives' data moves through shared memory by the ranks'
own cores (copies and the sum), so their cost is CPU work of the same cores that run the
backward: overlapping hides the time a rank would wait for a slower peer, not the copies.
The load average is printed at the start and the end: on a machine with other work the
comparison of two ranks with one process is not fair (the ranks share the cores with it).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework as fw  # noqa: E402
import framework.distributed as dist  # noqa: E402
from framework.distributed import collective  # noqa: E402

_all_reduce = collective.all_reduce
_wait = collective.Task.wait
WAITED = [0.0]


def _sync_all_reduce(*args, **kwargs):  # "dp sync": every bucket finished before backward goes on
    kwargs["sync_op"] = True
    return _all_reduce(*args, **kwargs)


def _timed_wait(self):
    t = time.perf_counter()
    try:
        return _wait(self)
    finally:
        WAITED[0] += time.perf_counter() - t


def model_and_opt(width: int, parallel: bool, bucket_mb: float):
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


CPU: dict[str, list[float]] = {}  # CPU seconds of this process per step, by configuration


def steps(model, opt, x, y, n: int, waited: list[float] | None = None, name: str = "") -> list[float]:
    times = []
    for _ in range(n):
        WAITED[0] = 0.0
        c = time.process_time()
        t = time.perf_counter()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        times.append(time.perf_counter() - t)
        CPU.setdefault(name, []).append(time.process_time() - c)
        if waited is not None:
            waited.append(WAITED[0])
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
    ap.add_argument("--bucket-mb", type=float, default=4, help="DataParallel's comm_buffer_size")
    args = ap.parse_args()
    collective.Task.wait = _timed_wait
    dist.init_parallel_env()
    rank, n = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"load average at the start: {_load()}", flush=True)
    rng = np.random.default_rng(0)
    xg = rng.normal(size=(n * args.batch, 256)).astype(np.float32)
    yg = rng.normal(size=(n * args.batch, 10)).astype(np.float32)
    rows = slice(rank * args.batch, (rank + 1) * args.batch)
    dp = model_and_opt(args.width, True, args.bucket_mb)
    one = model_and_opt(args.width, False, args.bucket_mb)
    x, y = fw.to_tensor(xg[rows]), fw.to_tensor(yg[rows])
    xh, yh = fw.to_tensor(xg[: args.batch]), fw.to_tensor(yg[: args.batch])
    buckets = [fw.zeros([sum(math.prod(p.shape) for p in b)], "float32") for b in dp[0]._reducer.buckets]
    times: dict[str, list[float]] = {k: [] for k in ("dp async", "dp sync", "one, half", "comm")}
    waited: list[float] = []
    for r in range(args.rounds):
        dist.barrier()
        w: list[float] = []
        got = steps(*dp, x, y, args.steps, w, "dp async" if r else "")
        if r:
            times["dp async"] += got
            waited += w
        dist.barrier()
        collective.all_reduce = _sync_all_reduce
        got = steps(*dp, x, y, args.steps, name="dp sync" if r else "")
        collective.all_reduce = _all_reduce
        if r:
            times["dp sync"] += got
        dist.barrier()
        if rank == 0:
            got = steps(*one, xh, yh, args.steps, name="one, half" if r else "")
            if r:
                times["one, half"] += got
        dist.barrier()
        for _ in range(args.steps):
            t = time.perf_counter()
            for b in buckets:
                dist.all_reduce(b, op="avg")
            if r:
                times["comm"].append(time.perf_counter() - t)
    cpu_dp = fw.to_tensor(np.array([statistics.median(CPU["dp async"])], np.float64))
    every: list = []
    dist.all_gather(every, cpu_dp)
    if rank == 0:
        cpu = {k: statistics.median(v) * 1e3 for k, v in CPU.items() if k}
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        mb = sum(b.numel() for b in buckets) * 4 / 2**20
        print(
            f"{n} ranks, {args.batch} rows per rank, width {args.width}, {len(buckets)} bucket(s) of "
            f"<= {args.bucket_mb} MiB ({mb:.1f} MiB of gradients), MPICH_ASYNC_PROGRESS="
            f"{os.environ.get('MPICH_ASYNC_PROGRESS', '0')}: median step (ms)"
        )
        for k, v in med.items():
            print(f"  {k:10s} {v:8.2f}" + (f"   cpu {cpu[k]:8.2f}" if k in cpu else ""))
        print(f"  cpu of dp async per rank: {' '.join(f'{float(e.numpy()[0]) * 1e3:.2f}' for e in every)} ms")
        overlap = 1 - (med["dp async"] - med["one, half"]) / med["comm"]
        hidden = (med["dp sync"] - med["dp async"]) / (med["dp sync"] - med["one, half"])
        print(
            f"  dp async / one, half = {med['dp async'] / med['one, half']:.2f}   "
            f"dp sync / one, half = {med['dp sync'] / med['one, half']:.2f}   "
            f"wait {statistics.median(waited) * 1e3:.2f} ms"
        )
        print(f"  overlap {overlap:.0%}   hidden {hidden:.0%} of what dp sync adds to one, half")
        print(f"load average at the end: {_load()}")


if __name__ == "__main__":
    main()
