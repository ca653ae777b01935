"""Under mpiexec: the tiny Llama example trained data-parallel; rank 0 writes the global loss
curve to out/llama.json (the test compares it with one process on the same global batch)."""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import framework.distributed as dist  # noqa: E402
from examples.data_parallel import train_steps_data_parallel  # noqa: E402

steps, device, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
losses = train_steps_data_parallel("tiny_llama", steps, seed=0, device=device)
if dist.get_rank() == 0:
    with open(os.path.join(out, "llama.json"), "w") as f:
        json.dump({"losses": losses, "nranks": dist.get_world_size()}, f)
