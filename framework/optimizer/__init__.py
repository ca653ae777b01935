"""``fw.optimizer``: every optimizer, gradient clipping and learning-rate scheduler (Paddle's ``paddle.optimizer``).

Also the fused update and the schedulers (``fw.optimizer.lr``); Paddle names
(``learning_rate=``, ``parameters=``, ``clear_grad()``). ``fw.optim`` is another name for this
package (the same module objects).

>>> import framework as fw
>>> w = fw.nn.Parameter.from_tensor(fw.to_tensor([1.0, -2.0], dtype="float64"))
>>> opt = fw.optimizer.Adagrad(learning_rate=0.5, parameters=[w])
>>> (w * w).sum().backward(); opt.step()
>>> [round(v, 6) for v in w.tolist()]
[0.5, -1.5]
"""

# ruff: noqa: F401  (re-exports)
from __future__ import annotations

from . import lr
from .adaptive import Adadelta, Adagrad, Adamax, Lamb, RMSProp
from .clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue
from .lbfgs import LBFGS
from .optimizer import SGD, Adam, AdamW, Momentum, Optimizer

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
