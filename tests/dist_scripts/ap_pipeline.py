"""Under mpiexec (4 ranks): examples/train_tiny_llama_pipeline.py's pipeline from placements,
pp 2 x mp 2 with 1F1B over 4 micro-batches and pp 2 x dp 2 with FThenB and recomputation,
and the one-process reference (rank 0); each rank writes out/rank{r}.json with the loss curves, its
stage and the order of its forwards and backwards."""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import framework.distributed as dist  # noqa: E402
from conformance.models import char_corpus  # noqa: E402
from examples.train_tiny_llama_hybrid import batches, reference  # noqa: E402
from examples.train_tiny_llama_pipeline import pipelined  # noqa: E402

out = sys.argv[1]
dist.init_parallel_env()
vocab = len(char_corpus()[1])
data = batches(2, 8)
record = {"ref": reference(vocab, 1, data) if dist.get_rank() == 0 else None}
for name, (pp, dp, mp, micro, schedule, recompute) in {
    "pp2xmp2": (2, 1, 2, 4, "1F1B", False),
    "pp2xdp2": (2, 2, 1, 2, "FThenB", True),
}.items():
    losses, dm = pipelined(vocab, 1, data, pp, dp, mp, micro, schedule, recompute)
    pipe = dm.pipeline
    record[name] = {
        "losses": losses,
        "stage": pipe.stage_id,
        "order": "".join(f"{k}{i}" for k, i, _, _ in pipe.timeline),
        "held": [n for n, _ in pipe._layers.named_parameters()][:1],
    }
with open(os.path.join(out, f"rank{dist.get_rank()}.json"), "w") as f:
    json.dump(record, f)
