"""Under ``oarlock launch``: jobs the launcher must end and explain. ``python launcher_faults.py
MODE OUT``; rank 0 writes OUT/rank0.json with what it saw.

``hello``   every rank all-reduces a vector made from its rank; rank r writes its result
``early``   rank 1 leaves after the first collective (into MPI_Finalize); rank 0 catches the
            CommunicationError of the next one and exits
``SIGKILL`` / ``SIGSEGV``  a loop of 32 MB all_reduces; rank 1 waits until rank 0 is inside
            collective #4, then sends itself the signal
``sleep``   after one collective every rank sleeps (a job only a time limit ends)
``lines``   every rank prints 300 lines in pieces (``print(.., end="")`` then the rest), to
            stdout and stderr: no two ranks' pieces may share a line
``spin``    rank 1 ends normally at once; rank 0 spins without a collective (only the
            launcher's bound after a normal exit ends it)
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
from framework.distributed.supervisor import JOB_ENV, read_activity

mode, out = sys.argv[1], sys.argv[2]
dist.init_parallel_env()
rank, size = dist.get_rank(), dist.get_world_size()


def write(result: dict) -> None:
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)


if mode == "hello":
    x = fw.to_tensor(np.arange(5, dtype=np.float32) * (rank + 1))
    dist.all_reduce(x)
    write({"size": size, "sum": x.numpy().tolist()})
elif mode == "early":
    x = fw.ones([4])
    dist.all_reduce(x)
    if rank == 1:
        sys.exit(0)  # MPI_Finalize at exit, while rank 0 still waits for it
    try:
        dist.all_reduce(x)
        write({"error": None})
    except fw.OarlockError as exc:
        write({"error": str(exc), "type": type(exc).__name__})
    sys.exit(0)  # the communicator makes this status 1: the process group is broken
elif mode in ("SIGKILL", "SIGSEGV"):
    x = fw.to_tensor(np.ones(8 * 1024 * 1024, np.float32))  # 32 MB
    for i in range(1, 1000):
        if rank == 1 and i == 4:
            # die while rank 0 waits inside collective #4 (it says so in the job folder)
            while not (read_activity(os.environ[JOB_ENV], 0) or "").startswith("in all_reduce(sum)") or (
                "collective #4," not in read_activity(os.environ[JOB_ENV], 0)
            ):
                time.sleep(0.01)
            os.kill(os.getpid(), getattr(signal, mode))
        try:
            dist.all_reduce(x)
        except fw.OarlockError as exc:
            write({"error": str(exc), "type": type(exc).__name__, "collective": i})
            raise
elif mode == "sleep":
    x = fw.ones([4])
    dist.all_reduce(x)
    write({"sum": x.numpy().tolist()})
    time.sleep(3600)
elif mode == "lines":
    for i in range(300):
        stream = sys.stdout if i % 2 else sys.stderr
        print(f"rank={rank} line={i} ", end="", file=stream)
        stream.flush()
        print(f"ok={rank}:{i}", file=stream)
    write({"printed": 300})
elif mode == "spin":
    write({"rank": rank})
    if rank == 0:
        while True:
            time.sleep(0.01)
else:
    raise SystemExit(f"unknown mode {mode!r}")
