"""``fw.optim``: optimizers, learning-rate schedulers (``fw.optim.lr``) and gradient clipping.

Paddle's names: ``learning_rate=``, ``parameters=``, ``clear_grad()``.

>>> import framework as fw
>>> w = fw.nn.Parameter.from_tensor(fw.to_tensor([1.0, -2.0]))
>>> opt = fw.optim.SGD(learning_rate=0.1, parameters=[w])
>>> (w * w).sum().backward()
>>> opt.step(); opt.clear_grad()
>>> [round(v, 6) for v in w.tolist()]
[0.8, -1.6]
"""

# ruff: noqa: F401  (re-exports)
from __future__ import annotations

from . import lr
from .clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue
from .optimizer import SGD, Adam, AdamW, Momentum, Optimizer

__all__ = [
    "lr",
    "Optimizer",
    "SGD",
    "Momentum",
    "Adam",
    "AdamW",
    "ClipGradByGlobalNorm",
    "ClipGradByNorm",
    "ClipGradByValue",
]
