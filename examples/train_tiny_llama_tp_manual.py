"""Tensor parallelism for the tiny Llama written by hand: the same layout and the same loss
curve as examples/train_tiny_llama_tp.py, with every collective placed by hand (Megatron
style), to count what the placements save.

    oarlock launch -n 2 examples/train_tiny_llama_tp_manual.py
    python examples/train_tiny_llama_tp_manual.py                 # one process (the reference)

Each rank builds its shards of the ``TinyLlama`` weights of conformance/models.py; the forward
calls the collectives (column-parallel outputs gathered, row-parallel outputs all-reduced, the
gradients of replicated inputs all-reduced in backward); the gradient clipping adds the
sharded gradients' squared norms over the ranks.
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
import framework.nn.functional as F  # noqa: E402
from conformance.models import TinyLlama, char_corpus  # noqa: E402


# -- the collectives, each with its backward --------------------------------------------------
def all_reduced(x: fw.Tensor) -> fw.Tensor:
    out = x.detach().clone()
    dist.all_reduce(out)
    return out


def copy_to_tp(x: fw.Tensor) -> fw.Tensor:
    """Identity forward; the gradient is all-reduced in backward (Megatron's f)."""
    if x.stop_gradient or dist.get_world_size() == 1:
        return x
    y = x * 1.0
    y.register_hook(all_reduced)
    return y


def reduce_from_tp(x: fw.Tensor) -> fw.Tensor:
    """All-reduce forward; identity backward (Megatron's g)."""
    if dist.get_world_size() == 1:
        return x
    return x + (all_reduced(x) - x).detach()


def gather_from_tp(x: fw.Tensor) -> fw.Tensor:
    """All-gather along the last dim forward; this rank's slice of the gradient backward."""
    n = dist.get_world_size()
    if n == 1:
        return x
    parts: list[fw.Tensor] = []
    dist.all_gather(parts, x.detach())
    return fw.concat([x if r == dist.get_rank() else parts[r] for r in range(n)], axis=-1)


# -- the parallel layers ----------------------------------------------------------------------
def shard(w: fw.Tensor, axis: int) -> fw.nn.Parameter:
    n, r = dist.get_world_size(), dist.get_rank()
    size = w.shape[axis] // n
    idx = [slice(None)] * w.ndim
    idx[axis] = slice(r * size, (r + 1) * size)
    return fw.nn.Parameter.from_tensor(fw.to_tensor(w.numpy()[tuple(idx)]))


class ColumnLinear(fw.nn.Layer):
    def __init__(self, w: fw.Tensor, gather: bool) -> None:
        super().__init__()
        self.weight, self.gather = shard(w, 1), gather

    def forward(self, x: fw.Tensor) -> fw.Tensor:
        y = F.linear(copy_to_tp(x), self.weight)
        return gather_from_tp(y) if self.gather else y


class RowLinear(fw.nn.Layer):
    def __init__(self, w: fw.Tensor) -> None:
        super().__init__()
        self.weight = shard(w, 0)

    def forward(self, x: fw.Tensor) -> fw.Tensor:
        return reduce_from_tp(F.linear(x, self.weight))


class Norm(fw.nn.Layer):
    def __init__(self, norm: fw.nn.RMSNorm) -> None:
        super().__init__()
        self.weight = fw.nn.Parameter.from_tensor(norm.weight.detach())

    def forward(self, x: fw.Tensor) -> fw.Tensor:
        return F.rms_norm(x, x.shape[-1], self.weight)


class TPBlock(fw.nn.Layer):
    def __init__(self, blk: fw.nn.Layer) -> None:
        super().__init__()
        self.heads, self.head_dim = blk.heads, blk.head_dim
        self.attn_norm, self.mlp_norm = Norm(blk.attn_norm), Norm(blk.mlp_norm)
        # the fused [q k v] columns do not split into whole heads: gathered before attention
        self.qkv = ColumnLinear(blk.qkv.weight, gather=True)
        self.proj = RowLinear(blk.proj.weight)
        self.gate = ColumnLinear(blk.gate.weight, gather=False)
        self.up = ColumnLinear(blk.up.weight, gather=False)
        self.down = RowLinear(blk.down.weight)

    def forward(self, h: fw.Tensor, cos: fw.Tensor, sin: fw.Tensor) -> fw.Tensor:
        b, s, d = h.shape
        n, r = dist.get_world_size(), dist.get_rank()
        qkv = (
            self.qkv(self.attn_norm(h))
            .reshape((b, s, 3, self.heads, self.head_dim))
            .transpose((2, 0, 3, 1, 4))
        )
        q, k, v = (t.reshape((b, self.heads, s, self.head_dim)) for t in fw.split(qkv, 3, axis=0))
        q, k = F.rotary_embedding(q, cos, sin), F.rotary_embedding(k, cos, sin)
        a = F.attention(q, k, v, is_causal=True).transpose((0, 2, 1, 3)).reshape((b, s, d))
        # the row-parallel input is my slice; its gradient is all-reduced (the whole, on every rank)
        h = h + self.proj(copy_to_tp(a)[..., r * d // n : (r + 1) * d // n])
        m = self.mlp_norm(h)
        return h + self.down(F.silu(self.gate(m)) * self.up(m))


class TPLlama(fw.nn.Layer):
    def __init__(self, model: TinyLlama) -> None:
        super().__init__()
        self.embed = shard(model.embed.weight, 1)
        self.blocks = fw.nn.LayerList([TPBlock(b) for b in model.blocks])
        self.norm = Norm(model.norm)
        self.head = ColumnLinear(model.head.weight, gather=True)
        self.cos, self.sin = model.rope_cos, model.rope_sin

    def forward(self, ids: fw.Tensor) -> fw.Tensor:
        s = ids.shape[1]
        h = gather_from_tp(F.embedding(ids, self.embed))
        for blk in self.blocks:
            h = blk(h, self.cos[:s], self.sin[:s])
        return self.head(self.norm(h))


def clip_global_norm(model: TPLlama, max_norm: float) -> None:
    """The global norm of the gradients: a shard's squares are added over the ranks, a
    replicated parameter's counted once."""
    sharded = [model.embed] + [
        p
        for n, p in model.named_parameters()
        if n.endswith(("qkv.weight", "proj.weight", "gate.weight", "up.weight", "down.weight", "head.weight"))
    ]
    sq_shard = sum(float((p.grad * p.grad).sum().numpy()) for p in sharded if p.grad is not None)
    sq_rep = sum(
        float((p.grad * p.grad).sum().numpy())
        for p in model.parameters()
        if p.grad is not None and all(p is not q for q in sharded)
    )
    total = fw.to_tensor([sq_shard], dtype="float64")
    if dist.get_world_size() > 1:
        dist.all_reduce(total)
    scale = max_norm / max(math.sqrt(float(total.numpy()[0]) + sq_rep), max_norm)
    for p in model.parameters():
        if p.grad is not None:
            p.grad = p.grad * scale


def train(steps: int = 8, batch: int = 8, seq: int = 32, seed: int = 0):
    """Train with ``dist.get_world_size()`` tensor-parallel ranks; returns (losses, parameter bytes held)."""
    ids_all, vocab = char_corpus()
    if dist.get_world_size() > 1:
        dist.init_parallel_env()
    fw.seed(seed)
    model = TPLlama(TinyLlama(len(vocab), max_seq=seq))
    opt = fw.optim.AdamW(learning_rate=3e-3, parameters=model.parameters(), weight_decay=0.01)
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(steps):
        starts = rng.integers(0, len(ids_all) - seq - 1, batch)
        x = fw.to_tensor(np.stack([ids_all[s : s + seq] for s in starts]))
        y = fw.to_tensor(np.stack([ids_all[s + 1 : s + seq + 1] for s in starts]))
        logits = model(x)
        loss = F.cross_entropy(logits.reshape((-1, logits.shape[-1])), y.reshape((-1,)))
        loss.backward()
        clip_global_norm(model, 1.0)
        opt.step()
        opt.clear_grad()
        losses.append(float(loss.numpy()))
    return losses, sum(p.numel() * p.dtype.itemsize for p in model.parameters())


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    losses, held = train(args.steps)
    if dist.get_rank() == 0:
        for i, v in enumerate(losses):
            print(f"step {i}: loss {v:.6f}")
    print(f"rank {dist.get_rank()}: holds {held} parameter bytes", flush=True)
