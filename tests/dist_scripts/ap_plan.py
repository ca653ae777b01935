"""Under mpiexec (4 ranks): dist.auto_plan on the tiny Llama of conformance/models.py (with the
hand-written layout of examples/train_tiny_llama_tp.py scored beside its own), then the
picked plan applied with one call and trained; each rank writes out/rank{r}.json with the
table, the pick and both loss curves."""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import framework as fw  # noqa: E402
import framework.distributed as dist  # noqa: E402
from conformance.models import TinyLlama, char_corpus  # noqa: E402
from examples.train_tiny_llama_tp import sample_batch, train  # noqa: E402

out = sys.argv[1]
dist.init_parallel_env()
n = dist.get_world_size()
_, vocab = char_corpus()
fw.seed(0)
model = TinyLlama(len(vocab), max_seq=32)
before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
last = {"qkv": "col", "gate": "col", "up": "col", "head": "col", "embed": "col", "proj": "row", "down": "row"}
hand = {
    name: last[name.rsplit(".", 1)[-1]]
    for name, _ in model.named_sublayers()
    if name.rsplit(".", 1)[-1] in last
}
plan = dist.auto_plan(model, dist.ProcessMesh(list(range(n))), sample_batch(), extra={"hand-written": hand})
unchanged = all(
    type(v).__name__ != "DistTensor" and (v.numpy() == before[k]).all() for k, v in model.state_dict().items()
)
losses, held, whole, _ = train(4, plan=plan)
ref, _, _, _ = train(4)
with open(os.path.join(out, f"rank{dist.get_rank()}.json"), "w") as f:
    json.dump(
        {
            "table": plan.table,
            "pick": [plan.dp, plan.tp, plan.family],
            "unchanged": bool(unchanged),
            "losses": losses,
            "ref": ref,
            "held": held,
            "whole": whole,
        },
        f,
    )
