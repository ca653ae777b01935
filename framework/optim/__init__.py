"""``fw.optim``: another name for :mod:`framework.optimizer` (Paddle's spelling), the same module objects.

``fw.optim.SGD is fw.optimizer.SGD``, and ``framework.optim.lr`` (or ``.fused``, ``.clip``, ...)
is ``framework.optimizer.lr``.

>>> import framework as fw
>>> fw.optim is fw.optimizer and fw.optim.lr.StepDecay is fw.optimizer.lr.StepDecay
True
"""

from __future__ import annotations

import sys

from .. import optimizer as _optimizer
from ..optimizer import adaptive, clip, fused, lbfgs, lr, optimizer  # noqa: F401  every submodule

for _name, _module in list(sys.modules.items()):
    if _name.startswith(_optimizer.__name__ + "."):
        sys.modules[__name__ + _name[len(_optimizer.__name__) :]] = _module
sys.modules[__name__] = _optimizer
