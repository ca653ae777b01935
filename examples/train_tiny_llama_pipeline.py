"""Data x tensor x pipeline parallelism on one ProcessMesh, from placements alone (Paddle 3's
auto-parallel pipeline): a tiny Llama trained through ``dist.to_static`` with a pipeline
strategy, against the same model trained in one process.

    oarlock launch -n 8 examples/train_tiny_llama_pipeline.py --pp 2 --dp 2 --mp 2
    oarlock launch -n 4 examples/train_tiny_llama_pipeline.py --pp 2 --dp 1 --mp 2 --schedule FThenB
    oarlock launch -n 4 examples/train_tiny_llama_pipeline.py --pp 4 --micro 8 --bubble
    python examples/train_tiny_llama_pipeline.py                 # one process: the reference

The mesh is ``[pp, dp, mp]``. The model is an ``nn.Sequential`` of the embedding, the decoder
blocks and the head (examples/train_tiny_llama_hybrid.py's pieces, plain layers); layer ``i``
goes to the slice ``mesh.get_mesh_with_dim("pp", stage)`` with ``dist.shard_layer`` and the
tensor-parallel ``shard_fn`` of examples/train_tiny_llama_tp.py (q/k/v, gate, up, embedding
and head column-parallel over ``mp``, proj and down row-parallel). The batch is laid out
``Shard(0)`` over ``dp``: the inputs on the first stage's slice, the labels on the last's.
``dist.to_static`` with ``strategy.pipeline`` (1F1B or FThenB over ``--micro`` micro-batches)
runs the stages; ``--recompute`` recomputes each stage's activations in backward. Rank 0
prints both loss curves and their largest difference; ``--bubble`` prints each stage's idle
share of the last step (from the scheduler's timestamps).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import framework as fw  # noqa: E402
import framework.distributed as dist  # noqa: E402
from conformance.models import char_corpus  # noqa: E402
from examples.train_tiny_llama_hybrid import batches, descs, loss_fn, reference  # noqa: E402
from examples.train_tiny_llama_tp import tp_shard_fn  # noqa: E402


def build(vocab: int, layers: int) -> fw.nn.Sequential:
    """The model as one process has it: layer ``i`` drawn after ``fw.seed(1234 + i)``."""
    pieces = []
    for i, d in enumerate(descs(vocab, layers, parallel=False)):
        fw.seed(1234 + i)
        pieces.append(d.build_layer())
    return fw.nn.Sequential(*pieces)


def pipelined(
    vocab: int,
    layers: int,
    data: list,
    pp: int,
    dp: int,
    mp: int,
    micro: int,
    schedule: str = "1F1B",
    recompute: bool = False,
) -> tuple[list[float], dist.DistModel]:
    """Train on the ``pp x dp x mp`` mesh; returns the loss per step and the DistModel."""
    mesh = dist.ProcessMesh(np.arange(pp * dp * mp).reshape(pp, dp, mp), dim_names=["pp", "dp", "mp"])
    model = build(vocab, layers)
    n = len(model)
    for i, layer in enumerate(model):  # the placement is the whole of the pipeline annotation
        dist.shard_layer(layer, mesh.get_mesh_with_dim("pp", i * pp // n), tp_shard_fn("mp"))
    opt = fw.optimizer.AdamW(learning_rate=3e-3, parameters=model.parameters(), weight_decay=0.01)
    strategy = dist.Strategy()
    strategy.pipeline.enable = True
    strategy.pipeline.schedule_mode = schedule
    strategy.pipeline.accumulate_steps = micro
    strategy.pipeline.micro_batch_size = len(data[0][0]) // dp // micro
    strategy.recompute.enable = recompute
    dm = dist.to_static(model, loss=loss_fn, optimizer=opt, strategy=strategy)
    first, last = mesh.get_mesh_with_dim("pp", 0), mesh.get_mesh_with_dim("pp", pp - 1)
    rows = [dist.Shard(0), dist.Replicate()]
    losses = []
    for x, y in data:
        loss = dm(dist.shard_tensor(x, first, rows), dist.shard_tensor(y, last, rows))
        losses.append(float(loss.numpy()))
    return losses, dm


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pp", type=int, default=1)
    ap.add_argument("--dp", type=int, default=1)
    ap.add_argument("--mp", type=int, default=1)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--micro", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--schedule", default="1F1B", choices=["1F1B", "FThenB"])
    ap.add_argument("--recompute", action="store_true")
    ap.add_argument("--bubble", action="store_true", help="print each stage's idle share of the last step")
    args = ap.parse_args()
    _, vocab_list = char_corpus()
    data = batches(args.steps, args.batch)
    got, dm = pipelined(
        len(vocab_list),
        args.layers,
        data,
        args.pp,
        args.dp,
        args.mp,
        args.micro,
        args.schedule,
        args.recompute,
    )
    if args.bubble:
        pipe = dm.pipeline
        busy = sum(e - s for _, _, s, e in pipe.timeline)
        print(
            f"rank {dist.get_rank()} stage {pipe.stage_id}: bubble {pipe.bubble():.1%} of "
            f"{(pipe._t1 - pipe._t0) * 1e3:.1f} ms (busy {busy * 1e3:.1f} ms, "
            f"{sum(1 for k, *_ in pipe.timeline if k == 'F')} F + {sum(1 for k, *_ in pipe.timeline if k == 'B')} B)",
            flush=True,
        )
    ref = reference(len(vocab_list), args.layers, data)
    if dist.get_rank() == 0:
        for i, (a, b) in enumerate(zip(got, ref)):
            print(f"step {i}: loss {a:.6f}  one process {b:.6f}")
        print(
            f"pp {args.pp} x dp {args.dp} x mp {args.mp} ({args.schedule}, {args.micro} micro-batches"
            f"{', recompute' if args.recompute else ''}): largest difference "
            f"{max(abs(a - b) for a, b in zip(got, ref)):.2e}",
            flush=True,
        )
