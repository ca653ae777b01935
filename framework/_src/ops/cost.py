"""FLOP counts of ops (``OpDef.flops``): products, attention, convolutions, whose time is
their arithmetic, and the element-wise ops and reductions, one operation per element (what
``fw.profiler``'s ``with_flops`` shows). Each is ``fn(input shapes, output shapes, attrs)``
for one call.

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
    """``2 m n k`` for ``x @ y``: two per output element (batch dims included) and ``k``, the
    contracted dim of ``x`` (its last, or with ``transpose_x`` its second last).

    >>> matmul_flops([(5, 2, 3), (3, 4)], [(5, 2, 4)], {})
    240
    >>> matmul_flops([(3, 2), (4, 3)], [(2, 4)], {"transpose_x": True, "transpose_y": True})
    48
    """
    x = ins[0]
    k = x[-2] if attrs.get("transpose_x") and len(x) >= 2 else x[-1]
    return 2 * math.prod(outs[0]) * k


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


def elementwise_flops(ins: Shapes, outs: Shapes, attrs: dict[str, Any]) -> float:
    """An element-wise op: one operation per output element (``exp`` counts as one).

    >>> elementwise_flops([(4, 3), (3,)], [(4, 3)], {})
    12
    """
    return math.prod(outs[0])


def reduction_flops(ins: Shapes, outs: Shapes, attrs: dict[str, Any]) -> float:
    """A reduction: ``n - m`` operations folding ``n`` inputs into ``m`` outputs.

    >>> reduction_flops([(4, 3)], [(3,)], {"axis": [0]})
    9
    """
    return math.prod(ins[0]) - math.prod(outs[0])
