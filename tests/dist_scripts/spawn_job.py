"""``dist.spawn`` from a script: each rank all-reduces its rank + 1 times ``scale`` and returns
it; ``python spawn_job.py fail`` makes rank 1 raise."""

import sys

import numpy as np

import framework as fw
import framework.distributed as dist


def work(scale: float, fail: bool) -> float:
    dist.init_parallel_env()
    if fail and dist.get_rank() == 1:
        raise ValueError("rank 1 was told to fail")
    x = fw.to_tensor(np.array([dist.get_rank() + 1.0], np.float32) * scale)
    dist.all_reduce(x)
    return float(x.numpy()[0])


if __name__ == "__main__":
    fail = sys.argv[1:] == ["fail"]
    try:
        # a collective timeout of 20 s: rank 0 waits in all_reduce for rank 1, which raised; the
        # launcher gives it its timeout (and a grace) before it ends the job
        ctx = dist.spawn(work, args=(2.0, fail), nprocs=2, time_limit=120, timeout=20)
        print("returned", ctx.returncode, ctx.return_values)
    except fw.OarlockError as exc:
        print("raised", type(exc).__name__, exc)
