"""A tiny Llama trained with Paddle 3's one-call ``dist.parallelize``: the mesh's axes
``pp`` / ``dp`` / ``mp`` come from the command line, the tensor-parallel plan names the
layers by pattern, the pipeline is cut at the decoder list, and rank 0 prints the loss
curve next to the same model trained in one process.

    oarlock launch -n 4 examples/train_tiny_llama_parallelize.py --pp 2 --mp 2 --tied
    oarlock launch -n 4 examples/train_tiny_llama_parallelize.py --dp 2 --mp 2 --sharding 1
    oarlock launch -n 4 examples/train_tiny_llama_parallelize.py --dp 4 --sharding 3 --clip 0.5
    oarlock launch -n 4 examples/train_tiny_llama_parallelize.py --pp 2 --dp 2 --sharding 2 --tied --clip 0.5
    oarlock launch -n 2 examples/train_tiny_llama_parallelize.py --pp 2
    python examples/train_tiny_llama_parallelize.py            # one process

``--tied`` shares the embedding with the head (on two pipeline stages: a copy on each, their
gradients summed before every step). The pipeline here runs eagerly (every stage's forward
in order, activations sent point to point); ``dist.to_static`` with ``strategy.pipeline``
runs an ``nn.Sequential`` laid out the same way on the 1F1B schedule.
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
from examples.train_tiny_llama_hybrid import DIM, Block, batches, loss_fn  # noqa: E402


class TiedHead(fw.nn.Layer):
    """The head that reads the embedding's table (``logits = h @ E^T``)."""

    def __init__(self, weight: fw.nn.Parameter) -> None:
        super().__init__()
        self.add_parameter("weight", weight)

    def forward(self, h: fw.Tensor) -> fw.Tensor:
        return fw.matmul(h, self.weight, transpose_y=True)


class TinyLlama(fw.nn.Layer):
    def __init__(self, vocab: int, layers: int, tied: bool) -> None:
        super().__init__()
        fw.seed(1234)
        self.embed = fw.nn.Embedding(vocab, DIM, weight_attr=fw.nn.initializer.Normal(0.0, 0.02))
        self.layers = fw.nn.LayerList([Block(False) for _ in range(layers)])
        self.norm = fw.nn.RMSNorm(DIM)
        self.lm_head = TiedHead(self.embed.weight) if tied else fw.nn.Linear(DIM, vocab, bias_attr=False)

    def forward(self, ids: fw.Tensor) -> fw.Tensor:
        h = self.embed(ids)
        for layer in self.layers:
            h = layer(h)
        return self.lm_head(self.norm(h))


def plan(tied: bool) -> dict:
    """The tensor-parallel plan: Paddle's names, the layers by pattern."""
    p = {
        "embed": dist.ColWiseParallel(),
        "layers.*.qkv": dist.ColWiseParallel(),
        "layers.*.gate": dist.ColWiseParallel(),
        "layers.*.up": dist.ColWiseParallel(),
        "layers.*.proj": dist.RowWiseParallel(),
        "layers.*.down": dist.RowWiseParallel(),
    }
    if not tied:
        p["lm_head"] = dist.ColWiseParallel(gather_output=True)
    return p


def optimizer(params: list, clip: float | None = None) -> fw.optimizer.Optimizer:
    """AdamW; ``clip``: a ClipGradByGlobalNorm of that norm (over every stage and shard)."""
    grad_clip = fw.nn.ClipGradByGlobalNorm(clip) if clip else None
    return fw.optimizer.AdamW(learning_rate=3e-3, parameters=params, weight_decay=0.01, grad_clip=grad_clip)


def parallel_train(
    vocab: int,
    layers: int,
    data: list,
    pp: int,
    dp: int,
    mp: int,
    sharding: int = 0,
    tied: bool = False,
    clip: float | None = None,
) -> tuple[list[float], TinyLlama]:
    """Train under ``dist.parallelize`` on a ``[pp, dp, mp]`` mesh; the loss per step."""
    axes = [(n, k) for n, k in (("pp", pp), ("dp", dp), ("mp", mp)) if k > 1 or n != "pp"]
    mesh = dist.ProcessMesh(
        np.arange(pp * dp * mp).reshape([k for _, k in axes]), dim_names=[n for n, _ in axes]
    )
    dist.set_mesh(mesh)
    model = TinyLlama(vocab, layers, tied)
    config = {"dp_config": {"sharding_level": sharding}, "mp_config": {"parallelize_plan": plan(tied)}}
    if pp > 1:
        config["pp_config"] = {"split_spec": "layers"}
    model, opt = dist.parallelize(model, optimizer(model.parameters(), clip), config=config)
    last = model.pipeline_stages[-1]
    rows = [dist.Shard(0) if a == "dp" else dist.Replicate() for a in last.dim_names]
    losses = []
    for x, y in data:
        loss = loss_fn(model(fw.to_tensor(x)), dist.shard_tensor(y, last, rows))
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(_value(loss, last))
    return losses, model


def _value(loss: dist.DistTensor, last: dist.ProcessMesh) -> float:
    """The loss on every rank (the last stage's ranks send it to the rest)."""
    v = loss.numpy()
    t = fw.to_tensor(np.array([0.0 if v is None else float(v)], "float32"))
    dist.broadcast(t, src=last.process_ids[0])
    return float(t.numpy()[0])


def reference(
    vocab: int,
    layers: int,
    data: list,
    tied: bool = False,
    model: fw.nn.Layer | None = None,
    clip: float | None = None,
) -> tuple[list[float], fw.nn.Layer]:
    """The same model (or ``model``) trained in one process on the whole batch."""
    model = model if model is not None else TinyLlama(vocab, layers, tied)
    opt = optimizer(model.parameters(), clip)
    losses = []
    for x, y in data:
        loss = loss_fn(model(fw.to_tensor(x)), fw.to_tensor(y))
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss.numpy()))
    return losses, model


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for axis in ("pp", "dp", "mp"):
        ap.add_argument(f"--{axis}", type=int, default=1)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--sharding", type=int, default=0, help="dp_config sharding_level (0, 1, 2 or 3)")
    ap.add_argument("--clip", type=float, default=None, help="ClipGradByGlobalNorm(clip)")
    ap.add_argument("--tied", action="store_true", help="share the embedding with the head")
    args = ap.parse_args()
    dist.init_parallel_env()
    vocab = len(char_corpus()[1])
    data = batches(args.steps, args.batch)
    got, _ = parallel_train(
        vocab, args.layers, data, args.pp, args.dp, args.mp, args.sharding, args.tied, args.clip
    )
    if dist.get_rank() == 0:
        ref, _ = reference(vocab, args.layers, data, args.tied, clip=args.clip)
        for i, (a, b) in enumerate(zip(got, ref)):
            print(f"step {i}: loss {a:.6f}  one process {b:.6f}", flush=True)
        print(
            f"parallelize pp {args.pp} x dp {args.dp} x mp {args.mp} (sharding_level {args.sharding}"
            f"{', tied' if args.tied else ''}{f', clip {args.clip}' if args.clip else ''}): largest difference {max(abs(a - b) for a, b in zip(got, ref)):.2e}",
            flush=True,
        )
