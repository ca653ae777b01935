"""Under mpiexec on 2 ranks: ``all_reduce(..., sync_op=False)`` starts the reduction and returns.

``python async_allreduce.py OUT`` (collective timeout of a few seconds), in one job so that the
test starts the ranks once. First the values: rank 0 starts an all-reduce and sees it unfinished
(rank 1 starts its own only after rank 0 told it so); then several all-reduces are outstanding
at once (float32 avg, int32 sum, float16 avg, a blocking one among them) and the last one is
waited for first; each rank writes ``OUT/rank{r}.npz`` with what it saw.

Then a fault: both ranks finish one more asynchronous all-reduce, then rank 1 dies; rank 0
starts another and waits on it; it writes the error it got to ``OUT/rank0.json``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import numpy as np

import framework as fw
import framework.distributed as dist

out = sys.argv[1]
# NOTE: the default check of the first calls all-gathers right after each is started, which
# would make rank 0 wait for rank 1 before it could tell rank 1 to start
os.environ["OARLOCK_DISTRIBUTED_DEBUG"] = "0"
dist.init_parallel_env()
rank, n = dist.get_rank(), dist.get_world_size()


def rows(seed: int, dtype: str, size: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-4, 4, size).astype(dtype)


def values() -> None:
    res: dict[str, object] = {}
    # 1. it returns before the peer arrived: rank 1 posts only after rank 0 checked
    x = fw.to_tensor(rows(rank, "float32", 33))
    flag = fw.to_tensor(np.zeros(1, np.int32))
    if rank == 0:
        task = dist.all_reduce(x, sync_op=False)
        res["unfinished_before_peer"] = not task.is_completed()
        dist.send(flag, dst=1)
    else:
        dist.recv(flag, src=0)
        task = dist.all_reduce(x, sync_op=False)
    res["wait"] = task.wait()
    res["first"] = x.numpy()
    # 2. several outstanding; a blocking one among them; waited for last-first
    a = fw.to_tensor(rows(10 + rank, "float32", 1000))
    b = fw.to_tensor((rows(20 + rank, "float32", 7) * 100).astype(np.int32))
    c = fw.to_tensor(rows(30 + rank, "float16", 9))
    d = fw.to_tensor(rows(40 + rank, "float64", 5))
    ta = dist.all_reduce(a, op="avg", sync_op=False)
    tb = dist.all_reduce(b, op="sum", sync_op=False)
    dist.all_reduce(d, op="max")  # blocking, while two are in flight
    tc = dist.all_reduce(c, op="avg", sync_op=False)
    tc.wait()
    res["earlier_done"] = ta.is_completed() and tb.is_completed()  # finished in order
    ta.wait()
    tb.wait()
    for k, t in (("a", a), ("b", b), ("c", c), ("d", d)):
        res[k] = t.numpy()
    np.savez(os.path.join(out, f"rank{rank}.npz"), **res)


def fault() -> None:
    x = fw.to_tensor(np.ones(16, np.float32))
    dist.all_reduce(x, sync_op=False).wait()  # everybody is alive here
    result: dict[str, object] = {"first": x.numpy().tolist()}
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    task = dist.all_reduce(x, sync_op=False)
    result["returned"] = True  # starting it does not wait for the dead peer
    try:
        task.wait()
        result["error"] = None
    except fw.OarlockError as exc:
        result["error"], result["type"] = str(exc), type(exc).__name__
    with open(os.path.join(out, "rank0.json"), "w") as f:
        json.dump(result, f)
    time.sleep(0.2)


values()
fault()
