"""Tensor parallelism (and DP x TP) for the tiny Llama of conformance/models.py, from placements alone.

    oarlock launch -n 2 examples/train_tiny_llama_tp.py            # TP on a mesh of 2
    oarlock launch -n 4 examples/train_tiny_llama_tp.py --dp 2     # DP x TP on a 2x2 mesh
    python examples/train_tiny_llama_tp.py                          # one process (the reference)

The model is the single-device ``TinyLlama`` of conformance/models.py, unmodified: its forward
calls the framework's own ops, which see distributed parameters and follow their sharding
rules. ``shard_fn`` is the whole of the parallel code: the fused q/k/v projection, gate and up
are column-parallel (``Shard(1)`` of the ``[in, out]`` weight), proj and down row-parallel
(``Shard(0)``), the embedding and the head column-parallel. The rules insert the rest: the
gather of q/k/v before the heads are split (the fused ``[q k v]`` columns do not split into
whole heads), the all-reduce after each row-parallel projection, the gathers before the
norms and the loss, and with DP the gradient all-reduce over the data-parallel axis. Prints
the loss per step and the parameter and optimizer-state bytes this rank holds.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import framework as fw  # noqa: E402
import framework.distributed as dist  # noqa: E402
import framework.nn.functional as F  # noqa: E402
from conformance.models import TinyLlama, char_corpus  # noqa: E402


def tp_shard_fn(mp: str):
    """The placements: ``mp`` names the tensor-parallel mesh axis."""

    def shard_fn(name: str, layer: fw.nn.Layer, mesh: dist.ProcessMesh) -> None:
        col, row = [dist.Replicate()] * mesh.ndim, [dist.Replicate()] * mesh.ndim
        col[mesh.dim_names.index(mp)], row[mesh.dim_names.index(mp)] = dist.Shard(1), dist.Shard(0)
        last = name.rsplit(".", 1)[-1]
        if last in ("qkv", "gate", "up", "head", "embed"):
            layer.weight = dist.shard_tensor(layer.weight, mesh, col)
        elif last in ("proj", "down"):
            layer.weight = dist.shard_tensor(layer.weight, mesh, row)

    return shard_fn


def state_bytes(opt: fw.optim.Optimizer) -> int:
    """Bytes of optimizer state this rank holds (a distributed state counts its shard)."""
    n = 0
    for v in opt.state_dict().values():
        if isinstance(v, fw.Tensor):
            t = v._local_value() if isinstance(v, dist.DistTensor) else v
            n += 0 if t is None else t.numel() * t.dtype.itemsize
    return n


def sample_batch(batch: int = 8, seq: int = 32, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The first batch :func:`train` draws (what ``dist.auto_plan`` is given)."""
    ids_all, _ = char_corpus()
    starts = np.random.default_rng(seed).integers(0, len(ids_all) - seq - 1, batch)
    return (
        np.stack([ids_all[s : s + seq] for s in starts]),
        np.stack([ids_all[s + 1 : s + seq + 1] for s in starts]),
    )


def train(
    steps: int = 8,
    dp: int = 1,
    tp: int = 1,
    batch: int = 8,
    seq: int = 32,
    seed: int = 0,
    zero: bool = False,
    plan: dist.Plan | None = None,
):
    """Train on a ``dp x tp`` mesh (1 x 1: one process, no mesh; ``zero``: the optimizer
    states split over the data-parallel axis too, ZeRO stage 1; ``plan``: laid out by
    ``dist.auto_plan``'s plan instead); returns (losses, parameter bytes held, parameter bytes
    of the whole model, optimizer-state bytes held)."""
    ids_all, vocab = char_corpus()
    fw.seed(seed)
    model = TinyLlama(len(vocab), max_seq=seq)
    mesh = None
    if plan is not None:
        mesh = plan.mesh
        plan.apply(model)
    elif dp * tp > 1:
        dist.init_parallel_env()
        mesh = dist.ProcessMesh(np.arange(dp * tp).reshape(dp, tp), dim_names=["dp", "mp"])
        dist.shard_layer(model, mesh, tp_shard_fn("mp"))
    opt = fw.optim.AdamW(
        learning_rate=3e-3,
        parameters=model.parameters(),
        weight_decay=0.01,
        grad_clip=fw.optim.ClipGradByGlobalNorm(1.0),
    )
    if mesh is not None:  # the states follow the parameters' placements (and with zero: split over dp)
        opt = dist.shard_optimizer(opt, dist.ShardingStage1("dp", mesh) if zero else None)
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(steps):
        starts = rng.integers(0, len(ids_all) - seq - 1, batch)
        x = fw.to_tensor(np.stack([ids_all[s : s + seq] for s in starts]))
        y = fw.to_tensor(np.stack([ids_all[s + 1 : s + seq + 1] for s in starts]))
        if mesh is not None and mesh.shape[0] > 1:  # the batch is split over the data-parallel axis
            x = dist.shard_tensor(x, mesh, [dist.Shard(0), dist.Replicate()])
            y = dist.shard_tensor(y, mesh, [dist.Shard(0), dist.Replicate()])
        logits = model(x)
        loss = F.cross_entropy(logits.reshape((-1, logits.shape[-1])), y.reshape((-1,)))
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss.numpy()))
    held, whole = dist.auto_parallel.local_bytes(model)
    return losses, held, whole, state_bytes(opt)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dp", type=int, default=1)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--zero", action="store_true", help="split the optimizer states over dp (ZeRO 1)")
    args = ap.parse_args()
    n = dist.get_world_size()
    losses, held, whole, states = train(args.steps, dp=args.dp, tp=n // args.dp, zero=args.zero)
    if dist.get_rank() == 0:
        for i, v in enumerate(losses):
            print(f"step {i}: loss {v:.6f}")
    print(
        f"rank {dist.get_rank()}: holds {held} of {whole} parameter bytes, {states} optimizer-state bytes",
        flush=True,
    )
