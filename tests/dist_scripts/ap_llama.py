"""Under mpiexec: the unmodified tiny Llama of conformance/models.py trained by
examples/train_tiny_llama_tp.py on a dp x tp mesh (argv: dp), and on each rank the same model
in one process; each rank writes out/rank{r}.json with both loss curves, the parameter and
optimizer-state bytes it holds and the collectives the rules inserted."""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import framework.distributed as dist  # noqa: E402
from examples.train_tiny_llama_tp import train  # noqa: E402
from examples.train_tiny_llama_tp_manual import train as train_manual  # noqa: E402

dp, out = int(sys.argv[1]), sys.argv[2]
steps = 6
dist.init_parallel_env()
n = dist.get_world_size()
losses, held, whole, states = train(steps, dp=dp, tp=n // dp)
ref, ref_held, _, ref_states = train(steps)  # one process, the whole model, the whole batch
# ZeRO stage 1: the optimizer states split over the data-parallel axis too
zero_losses, _, _, zero_states = train(steps, dp=dp, tp=n // dp, zero=True) if dp > 1 else ([], 0, 0, 0)
# the same TP written by hand, collectives placed by hand (examples/train_tiny_llama_tp_manual.py)
manual_losses, manual_held = train_manual(steps) if dp == 1 else ([], 0)
log = dist.auto_parallel.reshard_log()
with open(os.path.join(out, f"rank{dist.get_rank()}.json"), "w") as f:
    json.dump(
        {
            "losses": losses,
            "ref": ref,
            "held": held,
            "whole": whole,
            "ref_held": ref_held,
            "states": states,
            "zero_losses": zero_losses,
            "manual_losses": manual_losses,
            "manual_held": manual_held,
            "zero_states": zero_states,
            "ref_states": ref_states,
            "why": sorted({r["why"].split(":")[0] for r in log}),
            "collectives": sorted({r["collective"] for r in log}),
        },
        f,
    )
