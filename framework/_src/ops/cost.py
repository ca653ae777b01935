"""FLOP counts of the ops whose time is their arithmetic (``OpDef.flops``): products,
attention, convolutions. Each is ``fn(input shapes, output shapes, attrs)`` for one call.

>>> import framework
>>> from framework._src.opdef import OPS
>>> OPS["attention"].flops([(1, 8, 16), (1, 8, 16), (1, 8, 16)], [(1, 8, 16)], {})
4096
"""

from __future__ import annotations

import math
from typing import Any

Shapes = list[tuple[int, ...]]


def matmul_flops(ins: Shapes, outs: Shapes, attrs: dict[str, Any]) -> float:
    """``2 m n k`` for ``x @ y`` (``x``'s batch dims included; ``n`` the last dim of ``y``)."""
    return 2 * math.prod(ins[0]) * ins[1][-1]


def attention_flops(ins: Shapes, outs: Shapes, attrs: dict[str, Any]) -> float:
    """``q k^T`` and ``p v``: ``4 (batch, s) t d``."""
    q, k = ins[0], ins[1]
    return 4 * math.prod(q[:-1]) * k[-2] * q[-1]


def conv_flops(ins: Shapes, outs: Shapes, attrs: dict[str, Any]) -> float:
    """A convolution: each output element is a dot product over ``C/groups x kernel``
    (the weight's dims after the first)."""
    return 2 * math.prod(outs[0]) * math.prod(ins[1][1:])


def conv_transpose_flops(ins: Shapes, outs: Shapes, attrs: dict[str, Any]) -> float:
    """A transposed convolution: each input element scatters into ``C_out/groups x kernel``."""
    return 2 * math.prod(ins[0]) * math.prod(ins[1][1:])


def no_flops(ins: Shapes, outs: Shapes, attrs: dict[str, Any]) -> float:
    """Data movement (im2col): no arithmetic; its time is ``OpDef.cost``'s bytes."""
    return 0.0
