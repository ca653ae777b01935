"""Pointing a parameter at new values: the eager step's update and the fused step's
(fused.py) go through one function, so views of the parameter see the step either way.

>>> import framework as fw
>>> from framework.optimizer.assign import _assign
>>> p = fw.zeros([2]); v = p.reshape([2, 1])
>>> _assign(p, fw.ones([2])); v.tolist()
[[1.0], [1.0]]
"""

from __future__ import annotations

from .._src.autograd import no_grad
from .._src.ops import math as M
from .._src.ops.views import rebind
from .._src.tensor import Tensor


def _assign(p: Tensor, value: Tensor) -> None:
    """Point parameter ``p`` at ``value``'s storage (the object, and so every reference to
    it, stays the same)."""
    if value.dtype != p.dtype:
        value = M.cast(value, p.dtype)
    if p._base is not None or p._views is not None:  # views of p (p.reshape(...)) see the step
        with no_grad():
            rebind(p, value, "the optimizer's step")
        return
    p._block, p._offset, p._nv = value._block, value._offset, None
    p._bump_version("the optimizer's step")
