"""``fw.optimizer``: Paddle's spelling of the optimizer package (``paddle.optimizer.AdamW``).

It holds every optimizer of ``fw.optim`` (the same classes: ``fw.optim`` stays as an alias)
plus Adagrad, RMSProp, Adadelta, Adamax, Lamb and LBFGS, and ``fw.optimizer.lr`` with every
scheduler.

>>> import framework as fw
>>> w = fw.nn.Parameter.from_tensor(fw.to_tensor([1.0, -2.0], dtype="float64"))
>>> opt = fw.optimizer.Adagrad(learning_rate=0.5, parameters=[w])
>>> (w * w).sum().backward(); opt.step()
>>> [round(v, 6) for v in w.tolist()]
[0.5, -1.5]
"""

# ruff: noqa: F401  (re-exports)
from __future__ import annotations

from ..optim.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue
from ..optim.optimizer import SGD, Adam, AdamW, Momentum, Optimizer
from . import lr
from .adaptive import Adadelta, Adagrad, Adamax, Lamb, RMSProp
from .lbfgs import LBFGS

__all__ = [
    "lr",
    "Optimizer",
    "SGD",
    "Momentum",
    "Adam",
    "AdamW",
    "Adagrad",
    "RMSProp",
    "Adadelta",
    "Adamax",
    "Lamb",
    "LBFGS",
    "ClipGradByGlobalNorm",
    "ClipGradByNorm",
    "ClipGradByValue",
]
