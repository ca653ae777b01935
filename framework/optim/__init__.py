"""``fw.optim``: optimizers, learning-rate schedulers (``fw.optim.lr``) and gradient clipping
(Paddle names: ``learning_rate=``, ``parameters=``, ``clear_grad()``)."""

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
