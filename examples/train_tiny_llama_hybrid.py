"""Data x tensor x pipeline parallelism on one hybrid mesh: a tiny Llama trained through
``fleet``, against the same model trained in one process.

    oarlock launch -n 8 examples/train_tiny_llama_hybrid.py --dp 2 --mp 2 --pp 2
    oarlock launch -n 4 examples/train_tiny_llama_hybrid.py --dp 1 --mp 2 --pp 2
    python examples/train_tiny_llama_hybrid.py                 # one process: the reference

The model is a list of ``LayerDesc`` (embedding, decoder blocks, final norm and head) cut
into ``--pp`` stages by ``PipelineLayer``; inside each block the projections are
tensor-parallel over ``--mp`` (the fused q/k/v projection column-parallel with its output
gathered, since its columns do not split into whole heads; the attention output projection
row-parallel; gate and up column-parallel and down row-parallel, Megatron's MLP); the batch
is split over ``--dp``. ``train_batch`` runs 1F1B over ``--micro`` micro-batches. The
reference builds the same layers with plain ``nn.Linear`` (the same random draws: layer
``i`` after ``fw.seed(1234 + i)``) and trains them on the whole batch. Rank 0 prints both
loss curves and their largest difference.
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
from conformance.models import char_corpus  # noqa: E402
from framework.distributed import fleet  # noqa: E402
from framework.distributed.fleet import meta_parallel as mpu  # noqa: E402

DIM, HEADS, HIDDEN, SEQ = 32, 4, 64, 16


class Embed(fw.nn.Layer):
    def __init__(self, vocab: int, parallel: bool) -> None:
        super().__init__()
        init = fw.nn.initializer.Normal(0.0, 0.02)
        self.embed = (
            mpu.VocabParallelEmbedding(vocab, DIM, init)
            if parallel
            else fw.nn.Embedding(vocab, DIM, weight_attr=init)
        )

    def forward(self, ids: fw.Tensor) -> fw.Tensor:
        return self.embed(ids)


class Block(fw.nn.Layer):
    """conformance/models.py's LlamaBlock with its projections tensor-parallel (``parallel``)."""

    def __init__(self, parallel: bool) -> None:
        super().__init__()
        self.heads, self.head_dim = HEADS, DIM // HEADS
        col = (
            (lambda i, o, g: mpu.ColumnParallelLinear(i, o, has_bias=False, gather_output=g))
            if parallel
            else None
        )
        row = (
            (lambda i, o, p: mpu.RowParallelLinear(i, o, has_bias=False, input_is_parallel=p))
            if parallel
            else None
        )
        plain = lambda i, o, _: fw.nn.Linear(i, o, bias_attr=False)  # noqa: E731
        col, row = col or plain, row or plain
        self.attn_norm = fw.nn.RMSNorm(DIM)
        self.qkv = col(DIM, 3 * DIM, True)
        self.proj = row(DIM, DIM, False)
        self.mlp_norm = fw.nn.RMSNorm(DIM)
        self.gate = col(DIM, HIDDEN, False)
        self.up = col(DIM, HIDDEN, False)
        self.down = row(HIDDEN, DIM, True)
        cos, sin = F.rotary_cos_sin(SEQ, self.head_dim)
        self.register_buffer("rope_cos", cos, persistable=False)
        self.register_buffer("rope_sin", sin, persistable=False)

    def forward(self, h: fw.Tensor) -> fw.Tensor:
        b, s, d = h.shape
        qkv = (
            self.qkv(self.attn_norm(h))
            .reshape((b, s, 3, self.heads, self.head_dim))
            .transpose((2, 0, 3, 1, 4))
        )
        q, k, v = (t.reshape((b, self.heads, s, self.head_dim)) for t in fw.split(qkv, 3, axis=0))
        q = F.rotary_embedding(q, self.rope_cos[:s], self.rope_sin[:s])
        k = F.rotary_embedding(k, self.rope_cos[:s], self.rope_sin[:s])
        a = F.attention(q, k, v, is_causal=True).transpose((0, 2, 1, 3)).reshape((b, s, d))
        h = h + self.proj(a)
        m = self.mlp_norm(h)
        return h + self.down(F.silu(self.gate(m)) * self.up(m))


class Head(fw.nn.Layer):
    def __init__(self, vocab: int, parallel: bool) -> None:
        super().__init__()
        self.norm = fw.nn.RMSNorm(DIM)
        self.head = (
            mpu.ColumnParallelLinear(DIM, vocab, has_bias=False)
            if parallel
            else fw.nn.Linear(DIM, vocab, bias_attr=False)
        )

    def forward(self, h: fw.Tensor) -> fw.Tensor:
        return self.head(self.norm(h))


def loss_fn(logits: fw.Tensor, labels: fw.Tensor) -> fw.Tensor:
    return F.cross_entropy(logits.reshape((-1, logits.shape[-1])), labels.reshape((-1,)))


def descs(vocab: int, layers: int, parallel: bool) -> list:
    return (
        [mpu.LayerDesc(Embed, vocab, parallel)]
        + [mpu.LayerDesc(Block, parallel) for _ in range(layers)]
        + [mpu.LayerDesc(Head, vocab, parallel)]
    )


def batches(steps: int, batch: int) -> list[tuple[np.ndarray, np.ndarray]]:
    ids, _ = char_corpus()
    rng = np.random.default_rng(0)
    out = []
    for _ in range(steps):
        starts = rng.integers(0, len(ids) - SEQ - 1, batch)
        out.append(
            (
                np.stack([ids[s : s + SEQ] for s in starts]),
                np.stack([ids[s + 1 : s + SEQ + 1] for s in starts]),
            )
        )
    return out


def reference(vocab: int, layers: int, data: list) -> list[float]:
    """The same layers, plain, in one process, on the whole batch."""
    net = []
    for i, d in enumerate(descs(vocab, layers, parallel=False)):
        fw.seed(1234 + i)
        net.append(d.build_layer())
    params = [p for layer in net for p in layer.parameters()]
    opt = fw.optimizer.AdamW(learning_rate=3e-3, parameters=params, weight_decay=0.01)
    losses = []
    for x, y in data:
        h = fw.to_tensor(x)
        for layer in net:
            h = layer(h)
        loss = loss_fn(h, fw.to_tensor(y))
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss.numpy()))
    return losses


def hybrid(vocab: int, layers: int, data: list, dp: int, mp: int, pp: int, micro: int) -> list[float]:
    strategy = fleet.DistributedStrategy()
    strategy.hybrid_configs = {"dp_degree": dp, "mp_degree": mp, "pp_degree": pp}
    rows = len(data[0][0]) // dp
    strategy.pipeline_configs = {"accumulate_steps": micro, "micro_batch_size": rows // micro}
    fleet.init(is_collective=True, strategy=strategy)
    hcg = fleet.get_hybrid_communicate_group()
    net = mpu.PipelineLayer(descs(vocab, layers, parallel=True), topology=hcg.topology(), loss_fn=loss_fn)
    model = fleet.distributed_model(net)
    opt = fleet.distributed_optimizer(
        fw.optimizer.AdamW(learning_rate=3e-3, parameters=net.parameters(), weight_decay=0.01)
    )
    d = hcg.get_data_parallel_rank()
    losses = []
    for x, y in data:
        part = [fw.to_tensor(x[d * rows : (d + 1) * rows]), fw.to_tensor(y[d * rows : (d + 1) * rows])]
        if pp > 1:
            loss = model.train_batch(part, opt)
        else:
            loss = loss_fn(model(part[0]), part[1])
            loss.backward()
            opt.step()
            opt.clear_grad()
        dist.all_reduce(
            loss, op="avg", group=hcg.get_data_parallel_group()
        )  # this dp rank's rows -> the batch
        losses.append(float(loss.numpy()))
    return losses


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dp", type=int, default=1)
    ap.add_argument("--mp", type=int, default=1)
    ap.add_argument("--pp", type=int, default=1)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--micro", type=int, default=2)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args()
    _, vocab_list = char_corpus()
    data = batches(args.steps, args.batch)
    ref = reference(len(vocab_list), args.layers, data)
    got = hybrid(len(vocab_list), args.layers, data, args.dp, args.mp, args.pp, args.micro)
    if dist.get_rank() == 0:
        for i, (a, b) in enumerate(zip(got, ref)):
            print(f"step {i}: loss {a:.6f}  one process {b:.6f}")
        print(
            f"dp {args.dp} x mp {args.mp} x pp {args.pp}: largest difference {max(abs(a - b) for a, b in zip(got, ref)):.2e}"
        )
