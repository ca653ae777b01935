"""Under ``oarlock launch -n 2``: ``DistTensor.numpy()`` called on rank 0 only.

``python numpy_one_rank.py OUT``. Rank 0 writes OUT/numpy.json: for each case the value it
read or the error it got, and the seconds it took:

``replicated``  a Replicate() tensor read on rank 0 alone (local: no collective)
``both``        a Shard(0) tensor read on both ranks (the whole value)
``stuck``       a Shard(0) tensor read on rank 0 while rank 1 waits in an all_reduce
``exited``      a Shard(0) tensor read on rank 0 after rank 1's script has ended
"""

from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import numpy as np  # noqa: E402

import framework as fw  # noqa: E402
import framework.distributed as dist  # noqa: E402

out = sys.argv[1]
dist.init_parallel_env()
rank = dist.get_rank()
mesh = dist.ProcessMesh([0, 1], dim_names=["dp"])
whole = np.arange(12, dtype="float32").reshape(4, 3)
rep = dist.shard_tensor(whole, mesh, [dist.Replicate()])
shard = dist.shard_tensor(whole * 2, mesh, [dist.Shard(0)])
shard.name = "w"
res: dict = {}


def timed(case: str, fn) -> None:
    t0 = time.monotonic()
    try:
        res[case] = {"value": np.asarray(fn()).tolist()}
    except fw.OarlockError as e:
        res[case] = {"error": str(e)}
    res[case]["seconds"] = time.monotonic() - t0


if rank == 0:
    timed("replicated", rep.numpy)
timed("both", shard.numpy)
flag = fw.to_tensor([1.0])
if rank == 0:
    timed("stuck", shard.numpy)
dist.all_reduce(flag)  # rank 1 waits here; rank 0 joins after its error
if rank == 0:
    time.sleep(0.5)  # rank 1 leaves the all_reduce and ends
    timed("exited", shard.numpy)
    with open(os.path.join(out, "numpy.json"), "w") as f:
        json.dump(res, f)
