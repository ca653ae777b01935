"""``fw.nn.functional``: the composite ops as functions (Paddle's ``paddle.nn.functional``).

>>> import framework as fw
>>> import framework.nn.functional as F
>>> F.relu(fw.to_tensor([-1.0, 2.0])).tolist()
[0.0, 2.0]
"""

# ruff: noqa: F401  (re-exports; __all__ is built below)
from __future__ import annotations

from .._src.ops.composites.activation import (
    gelu,
    hardtanh,
    leaky_relu,
    relu,
    relu6,
    sigmoid,
    silu,
    softplus,
    swish,
    tanh,
)
from .._src.ops.composites.norm import layer_norm, log_softmax, logsumexp, rms_norm, softmax

__all__ = [n for n in dir() if not n.startswith("_") and n != "annotations"]
