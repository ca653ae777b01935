"""Tensor parallelism (and DP x TP) for a tiny Llama from placements alone.

    oarlock launch -n 2 examples/train_tiny_llama_tp.py            # TP on a mesh of 2
    oarlock launch -n 4 examples/train_tiny_llama_tp.py --dp 2     # DP x TP on a 2x2 mesh
    python examples/train_tiny_llama_tp.py                          # one process (the reference)

The model is written once with the ops of ``dist.auto_parallel.functional`` (on plain tensors
they are the framework's ops). ``shard_fn`` is the whole of the parallel code: q/k/v, gate and
up are column-parallel (``Shard(1)`` of the ``[in, out]`` weight), o and down row-parallel
(``Shard(0)``), the embedding and the head column-parallel; the sharding rules insert the
all-reduce after each row-parallel projection, the gathers before the norms and the loss, and
(DP) the gradient all-reduce over the data-parallel axis. Prints the loss per step and the
parameter bytes this rank holds.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import framework as fw  # noqa: E402
import framework.distributed as dist  # noqa: E402
from framework import nn  # noqa: E402
from framework.distributed.auto_parallel import functional as D  # noqa: E402


class Block(nn.Layer):
    def __init__(self, dim: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.attn_norm = nn.RMSNorm(dim)
        self.q = nn.Linear(dim, dim, bias_attr=False)
        self.k = nn.Linear(dim, dim, bias_attr=False)
        self.v = nn.Linear(dim, dim, bias_attr=False)
        self.o = nn.Linear(dim, dim, bias_attr=False)
        self.mlp_norm = nn.RMSNorm(dim)
        self.gate = nn.Linear(dim, hidden, bias_attr=False)
        self.up = nn.Linear(dim, hidden, bias_attr=False)
        self.down = nn.Linear(hidden, dim, bias_attr=False)

    def forward(self, h, mask):
        b, s, d = h.shape
        x = D.rms_norm(h, self.attn_norm.weight)

        def heads(t):  # [b, s, d] -> [b, heads, s, head_dim]
            return D.transpose(D.reshape(t, [b, s, self.heads, self.head_dim]), [0, 2, 1, 3])

        q, k, v = (heads(D.matmul(x, lin.weight)) for lin in (self.q, self.k, self.v))
        scores = D.add(
            D.multiply(D.matmul(q, D.transpose(k, [0, 1, 3, 2])), 1.0 / math.sqrt(self.head_dim)), mask
        )
        a = D.reshape(D.transpose(D.matmul(D.softmax(scores), v), [0, 2, 1, 3]), [b, s, d])
        h = D.add(h, D.matmul(a, self.o.weight))
        m = D.rms_norm(h, self.mlp_norm.weight)
        mlp = D.multiply(D.silu(D.matmul(m, self.gate.weight)), D.matmul(m, self.up.weight))
        return D.add(h, D.matmul(mlp, self.down.weight))


class TinyLlama(nn.Layer):
    def __init__(
        self, vocab: int = 32, dim: int = 32, heads: int = 4, layers: int = 2, hidden: int = 64
    ) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.LayerList([Block(dim, heads, hidden) for _ in range(layers)])
        self.norm = nn.RMSNorm(dim)
        self.head = nn.Linear(dim, vocab, bias_attr=False)

    def forward(self, ids):
        s = ids.shape[1]
        mask = fw.to_tensor(np.triu(np.full((s, s), -1e9, np.float32), 1))
        h = D.embedding(ids, self.embed.weight)
        for blk in self.blocks:
            h = blk(h, mask)
        return D.matmul(D.rms_norm(h, self.norm.weight), self.head.weight)


def tp_shard_fn(mp: int):
    """The placements: ``mp`` is the index of the tensor-parallel mesh axis."""

    def shard_fn(name: str, layer: nn.Layer, mesh: dist.ProcessMesh) -> None:
        col, row = [dist.Replicate()] * mesh.ndim, [dist.Replicate()] * mesh.ndim
        col[mp], row[mp] = dist.Shard(1), dist.Shard(0)
        last = name.rsplit(".", 1)[-1]
        if last in ("q", "k", "v", "gate", "up", "head", "embed"):
            layer.weight = dist.shard_tensor(layer.weight, mesh, col)
        elif last in ("o", "down"):
            layer.weight = dist.shard_tensor(layer.weight, mesh, row)

    return shard_fn


def batches(steps: int, batch: int, seq: int, vocab: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, vocab, (steps, batch, seq + 1))
    base[..., 1::2] = (base[..., 0::2][..., : base[..., 1::2].shape[-1]] + 1) % vocab  # learnable pattern
    return [(b[:, :-1], b[:, 1:]) for b in base]


def train(
    steps: int = 8, dp: int = 1, tp: int = 1, batch: int = 4, seq: int = 8, seed: int = 0, lr: float = 1e-2
):
    """Train on a ``dp x tp`` mesh (1 x 1: one process, no mesh); returns (losses, bytes held,
    bytes of the whole model)."""
    fw.seed(seed)
    model = TinyLlama()
    mesh = None
    if dp * tp > 1:
        dist.init_parallel_env()
        if dp > 1:
            mesh = dist.ProcessMesh(np.arange(dp * tp).reshape(dp, tp), dim_names=["dp", "mp"])
        else:
            mesh = dist.ProcessMesh(list(range(tp)), dim_names=["mp"])
        dist.shard_layer(model, mesh, tp_shard_fn(mesh.ndim - 1))
    opt = fw.optimizer.Adam(learning_rate=lr, parameters=model.parameters())
    losses = []
    for ids, labels in batches(steps, batch, seq, 32, seed):
        ids_t, labels_t = fw.to_tensor(ids), fw.to_tensor(labels)
        if mesh is not None and dp > 1:  # the batch is split over the data-parallel axis
            ids_t = dist.shard_tensor(ids_t, mesh, [dist.Shard(0), dist.Replicate()])
            labels_t = dist.shard_tensor(labels_t, mesh, [dist.Shard(0), dist.Replicate()])
        loss = D.cross_entropy(model(ids_t), labels_t)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(D.numpy(loss)) if mesh is not None else float(loss.numpy()))
    held, whole = dist.auto_parallel.local_bytes(model)
    return losses, held, whole


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dp", type=int, default=1)
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    n = dist.get_world_size()
    losses, held, whole = train(args.steps, dp=args.dp, tp=n // args.dp)
    if dist.get_rank() == 0:
        for i, v in enumerate(losses):
            print(f"step {i}: loss {v:.6f}")
    print(f"rank {dist.get_rank()}: holds {held} of {whole} parameter bytes", flush=True)
