"""The models of the models tier (see :mod:`conformance.regression`) and their training loops;
the examples, tests and benchmarks build them from here too.

>>> from conformance.models import train_steps
>>> losses = train_steps("mlp", steps=5, seed=0, device="cpu")
>>> len(losses)
5

Every model starts from Philox-initialised weights (``fw.seed(seed)``) and trains on data
drawn with numpy's ``default_rng(seed)`` on the host, so the same seed gives the same loss
curve on every device up to kernel rounding.

- ``"mlp"``: 32-128-128-4 MLP on four Gaussian blobs, Adam.
- ``"cnn"``: two conv layers + pooling on 1x12x12 synthetic bar images (4 classes), Adam.
- ``"tiny_llama"``: a 2-layer Llama-style decoder (RMSNorm, rotary embeddings, causal
  attention, SwiGLU) over the characters of ``conformance/data/tiny_verse.txt``, AdamW.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import framework as fw
import framework.nn as nn
import framework.nn.functional as F

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tiny_verse.txt")


# -- models ---------------------------------------------------------------------------------
class MLP(nn.Layer):
    def __init__(self, sizes: tuple[int, ...] = (32, 128, 128, 4)) -> None:
        super().__init__()
        self.layers = nn.LayerList([nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])])

    def forward(self, x: fw.Tensor) -> fw.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = F.relu(x)
        return x


class SmallCNN(nn.Layer):
    def __init__(self, classes: int = 4) -> None:
        super().__init__()
        self.conv1 = nn.Conv2D(1, 8, 3, padding=1)
        self.pool = nn.MaxPool2D(2)
        self.conv2 = nn.Conv2D(8, 16, 3, padding=1)
        self.gap = nn.AdaptiveAvgPool2D(1)
        self.head = nn.Linear(16, classes)

    def forward(self, x: fw.Tensor) -> fw.Tensor:
        x = self.pool(F.relu(self.conv1(x)))
        x = F.relu(self.conv2(x))
        return self.head(self.gap(x).flatten(1))


class LlamaBlock(nn.Layer):
    """Pre-norm decoder block: RMSNorm -> causal attention with rotary q/k -> residual,
    RMSNorm -> SwiGLU MLP -> residual."""

    def __init__(self, dim: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.attn_norm = nn.RMSNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias_attr=False)
        self.proj = nn.Linear(dim, dim, bias_attr=False)
        self.mlp_norm = nn.RMSNorm(dim)
        self.gate = nn.Linear(dim, hidden, bias_attr=False)
        self.up = nn.Linear(dim, hidden, bias_attr=False)
        self.down = nn.Linear(hidden, dim, bias_attr=False)

    def forward(self, h: fw.Tensor, cos: fw.Tensor, sin: fw.Tensor) -> fw.Tensor:
        b, s, d = h.shape
        qkv = (
            self.qkv(self.attn_norm(h))
            .reshape((b, s, 3, self.heads, self.head_dim))
            .transpose((2, 0, 3, 1, 4))
        )
        q, k, v = (t.reshape((b, self.heads, s, self.head_dim)) for t in fw.split(qkv, 3, axis=0))
        q = F.rotary_embedding(q, cos, sin)
        k = F.rotary_embedding(k, cos, sin)
        a = F.attention(q, k, v, is_causal=True).transpose((0, 2, 1, 3)).reshape((b, s, d))
        h = h + self.proj(a)
        m = self.mlp_norm(h)
        return h + self.down(F.silu(self.gate(m)) * self.up(m))


class TinyLlama(nn.Layer):
    def __init__(
        self, vocab: int, dim: int = 64, heads: int = 4, layers: int = 2, hidden: int = 172, max_seq: int = 64
    ) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, weight_attr=nn.initializer.Normal(0.0, 0.02))
        self.blocks = nn.LayerList([LlamaBlock(dim, heads, hidden) for _ in range(layers)])
        self.norm = nn.RMSNorm(dim)
        self.head = nn.Linear(dim, vocab, bias_attr=False)
        cos, sin = F.rotary_cos_sin(max_seq, dim // heads)
        self.register_buffer("rope_cos", cos, persistable=False)
        self.register_buffer("rope_sin", sin, persistable=False)

    def forward(self, ids: fw.Tensor) -> fw.Tensor:
        s = ids.shape[1]
        cos, sin = self.rope_cos[:s], self.rope_sin[:s]
        h = self.embed(ids)
        for blk in self.blocks:
            h = blk(h, cos, sin)
        return self.head(self.norm(h))


class LlamaKVDecoder(nn.Layer):
    """One decoding step of a :class:`TinyLlama` with a KV cache, every shape static but the
    batch: a program to save and serve (``examples/generate_tiny_llama.py``).

    ``forward(ids, pos, k_0, v_0, ..., k_{L-1}, v_{L-1})`` takes the new token ``ids``
    (batch, 1) int64 at position ``pos`` (batch,) int64 and each layer's key/value cache
    (batch, heads, max_seq, head_dim); it returns the next-token logits (batch, vocab) and
    the caches with position ``pos`` written. The position is a tensor, so one program
    serves every step: the rotary tables are gathered at ``pos``, the cache is written with
    ``where`` on ``arange(max_seq) == pos`` and attention sees the positions ``<= pos``.
    The parameters are the model's own (shared, not copied)."""

    def __init__(self, model: TinyLlama) -> None:
        super().__init__()
        self.model = model

    def cache_shape(self, batch: int) -> tuple[int, int, int, int]:
        blk = self.model.blocks[0]
        return (batch, blk.heads, self.model.rope_cos.shape[0], blk.head_dim)

    def forward(self, ids: fw.Tensor, pos: fw.Tensor, *caches: fw.Tensor) -> tuple[fw.Tensor, ...]:
        m = self.model
        b = ids.shape[0]
        t = m.rope_cos.shape[0]
        p = pos.reshape((b, 1))
        cos = F.embedding(p, m.rope_cos).reshape((b, 1, 1, -1))
        sin = F.embedding(p, m.rope_sin).reshape((b, 1, 1, -1))
        where = pos.reshape((b, 1, 1, 1))
        steps = fw.arange(t, device=ids.device)
        slot = steps.reshape((1, 1, t, 1)) == where  # the cache row written now
        visible = steps.reshape((1, 1, 1, t)) <= where  # the rows attention reads
        h = m.embed(ids)
        new: list[fw.Tensor] = []
        for i, blk in enumerate(m.blocks):
            qkv = (
                blk.qkv(blk.attn_norm(h))
                .reshape((b, 1, 3, blk.heads, blk.head_dim))
                .transpose((2, 0, 3, 1, 4))
            )
            q, k, v = (x.reshape((b, blk.heads, 1, blk.head_dim)) for x in fw.split(qkv, 3, axis=0))
            q = F.rotary_embedding(q, cos, sin)
            k = F.rotary_embedding(k, cos, sin)
            kc = fw.where(slot, k, caches[2 * i])
            vc = fw.where(slot, v, caches[2 * i + 1])
            s = fw.matmul(q, kc, transpose_y=True) * (1.0 / math.sqrt(blk.head_dim))
            a = fw.matmul(F.softmax(fw.where(visible, s, float("-inf")), axis=-1), vc)
            h = h + blk.proj(a.transpose((0, 2, 1, 3)).reshape((b, 1, -1)))
            mm = blk.mlp_norm(h)
            h = h + blk.down(F.silu(blk.gate(mm)) * blk.up(mm))
            new += [kc, vc]
        return (m.head(m.norm(h)).reshape((b, -1)), *new)


# -- data -------------------------------------------------------------------------------------
def blobs(rng: np.random.Generator, n: int, dim: int = 32, classes: int = 4) -> tuple[np.ndarray, np.ndarray]:
    centers = np.random.default_rng(1234).standard_normal((classes, dim)).astype(np.float32)
    y = rng.integers(0, classes, n)
    x = centers[y] + rng.standard_normal((n, dim)).astype(np.float32) * 1.5
    return x.astype(np.float32), y.astype(np.int64)


def bar_images(rng: np.random.Generator, n: int, size: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """Class 0: a horizontal bar, 1: a vertical bar, 2: a diagonal, 3: a filled square;
    random position and Gaussian noise."""
    y = rng.integers(0, 4, n)
    x = rng.standard_normal((n, 1, size, size)).astype(np.float32) * 0.5
    for i, c in enumerate(y):
        r, q = rng.integers(2, size - 2, 2)
        if c == 0:
            x[i, 0, r, 1:-1] += 2.0
        elif c == 1:
            x[i, 0, 1:-1, q] += 2.0
        elif c == 2:
            idx = np.arange(size)
            x[i, 0, idx, (idx + q) % size] += 2.0
        else:
            x[i, 0, r - 2 : r + 2, q - 2 : q + 2] += 1.5
    return x, y.astype(np.int64)


def char_corpus(path: str = DATA) -> tuple[np.ndarray, list[str]]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    vocab = sorted(set(text))
    lookup = {c: i for i, c in enumerate(vocab)}
    return np.array([lookup[c] for c in text], dtype=np.int64), vocab


# -- tasks ------------------------------------------------------------------------------------
@dataclass
class Task:
    """A model, its optimizer and a ``batch(step) -> (inputs, labels)`` on the device."""

    name: str
    model: nn.Layer
    optimizer: Any
    batch: Callable[[int], tuple[fw.Tensor, fw.Tensor]]
    loss: Callable[[fw.Tensor, fw.Tensor], fw.Tensor]
    info: dict[str, Any] = field(default_factory=dict)

    def update(self) -> None:
        """After backward: optimizer step, clear gradients, advance the LR schedule."""
        self.optimizer.step()
        self.optimizer.clear_grad()
        sched = self.info.get("scheduler")
        if sched is not None:
            sched.step()

    def train_step(self, step: int) -> fw.Tensor:
        """One training step on batch ``step``; returns the loss (before the update)."""
        x, y = self.batch(step)
        loss = self.loss(self.model(x), y)
        loss.backward()
        self.update()
        return loss


#: the models :func:`build` knows
MODELS = ("mlp", "cnn", "tiny_llama")


def build(name: str, seed: int = 0, device: Any = None, static: bool = False) -> Task:
    """A fresh task: ``fw.seed(seed)`` weights and a ``default_rng(seed)`` data stream. With
    ``static`` the model's forward runs as a ``fw.jit.to_static`` program (its backward too);
    the loss, ``backward()`` and the optimizer step stay eager, as in Paddle."""
    task = _build(name, seed, device)
    if static:
        fw.jit.to_static(task.model)
    return task


def _build(name: str, seed: int, device: Any) -> Task:
    dev = fw.get_device() if device is None else device
    rng = np.random.default_rng(seed)
    with fw.device(dev):
        fw.seed(seed)
        if name == "mlp":
            model = MLP()
            opt = fw.optim.Adam(learning_rate=3e-3, parameters=model.parameters())

            def batch(step: int) -> tuple[fw.Tensor, fw.Tensor]:
                x, y = blobs(rng, 128)
                return fw.to_tensor(x, device=dev), fw.to_tensor(y, device=dev)

            return Task(name, model, opt, batch, F.cross_entropy)
        if name == "cnn":
            model = SmallCNN()
            opt = fw.optim.Adam(learning_rate=1e-2, parameters=model.parameters())

            def batch(step: int) -> tuple[fw.Tensor, fw.Tensor]:
                x, y = bar_images(rng, 32)
                return fw.to_tensor(x, device=dev), fw.to_tensor(y, device=dev)

            return Task(name, model, opt, batch, F.cross_entropy)
        if name == "tiny_llama":
            ids, vocab = char_corpus()
            seq, bs = 64, 16
            model = TinyLlama(len(vocab), max_seq=seq)
            sched = fw.optim.lr.LinearWarmup(
                fw.optim.lr.CosineAnnealingDecay(3e-3, T_max=200, eta_min=3e-4), 20, 0.0, 3e-3
            )
            opt = fw.optim.AdamW(
                learning_rate=sched,
                parameters=model.parameters(),
                weight_decay=0.01,
                grad_clip=fw.optim.ClipGradByGlobalNorm(1.0),
            )

            def batch(step: int) -> tuple[fw.Tensor, fw.Tensor]:
                starts = rng.integers(0, len(ids) - seq - 1, bs)
                x = np.stack([ids[s : s + seq] for s in starts])
                y = np.stack([ids[s + 1 : s + seq + 1] for s in starts])
                return fw.to_tensor(x, device=dev), fw.to_tensor(y, device=dev)

            def lm_loss(logits: fw.Tensor, y: fw.Tensor) -> fw.Tensor:
                return F.cross_entropy(logits.reshape((-1, logits.shape[-1])), y.reshape((-1,)))

            return Task(name, model, opt, batch, lm_loss, {"vocab": vocab, "scheduler": sched})
    raise ValueError(f"[conformance] unknown model {name!r}; choose one of {sorted(MODELS)}")


def train_steps(
    name: str,
    steps: int,
    seed: int = 0,
    device: Any = None,
    on_step: Callable[[int, float], None] | None = None,
    static: bool = False,
) -> list[float]:
    """Train ``steps`` steps from scratch and return the loss after each (as Python floats);
    ``static`` trains the model under ``fw.jit.to_static``."""
    task = build(name, seed, device, static)
    dev = fw.get_device() if device is None else device
    losses = []
    with fw.device(dev):
        for step in range(steps):
            value = float(task.train_step(step).item())
            if not math.isfinite(value):
                raise FloatingPointError(f"[conformance] {name}: the loss became {value} at step {step}")
            losses.append(value)
            if on_step is not None:
                on_step(step, value)
    return losses
