"""Under mpiexec: rank 1 dies (``kill``), never arrives (``stuck``) or never joins (``absent``);
the others must raise a
CommunicationError naming the collective and rank 1. Each surviving rank writes out/rank<r>.json."""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import numpy as np

import framework as fw
import framework.distributed as dist

mode, timeout, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
rank = dist.get_rank()  # from the launcher's environment, before init_parallel_env
if mode == "absent":  # rank 1 never joins: init_parallel_env must give up on the others
    if rank == 1:
        # NOTE: it starts MPI (MPI_Init waits for every process of the job, which no
        # timeout of ours can bound), then is stuck before init_parallel_env
        from mpi4py import MPI  # noqa: F401

        time.sleep(timeout + 3)
        os._exit(0)
    try:
        dist.init_parallel_env(timeout=timeout)
        result = {"error": None}
    except fw.OarlockError as exc:
        result = {"error": str(exc), "type": type(exc).__name__}
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)
    sys.exit(0)
dist.init_parallel_env(timeout=timeout)
x = fw.to_tensor(np.ones(16, np.float32))
dist.all_reduce(x)  # everybody is alive here
result = {"first": x.numpy().tolist()}
if rank == 1:
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(timeout + 3)  # stuck: arrives long after the others gave up
    os._exit(0)
t0 = time.monotonic()
try:
    dist.all_reduce(x)
    result["error"] = None
except fw.OarlockError as exc:
    result["error"] = str(exc)
    result["type"] = type(exc).__name__
result["waited"] = time.monotonic() - t0
with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
    json.dump(result, f)
# NOTE: a survivor that exits (status 1 after a fault) while another is still inside its wait
# can make mpiexec take the rest of the job down before it reports; wait (at most 10 s) until
# every survivor has written its report, so the test sees all of them.
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    if all(
        os.path.exists(os.path.join(out, f"rank{r}.json")) for r in range(dist.get_world_size()) if r != 1
    ):
        break
    time.sleep(0.05)
