"""The binary layout of floats, read with arithmetic ops (no bit casts, so each runs and
differentiates wherever the math ops do): frexp (mantissa and exponent) and nextafter (the
neighbouring representable float).
"""

from __future__ import annotations

import numpy as np

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import creation as C
from .. import math as M
from ._common import float_arg, tensor_arg


def _pow2(e: Tensor) -> Tensor:
    """``2 ** e`` for float-valued integer exponents ``e`` of ``e``'s dtype."""
    return M.pow(2.0, e)


def frexp(x: Tensor, name: str | None = None) -> tuple[Tensor, Tensor]:
    """Split each element of ``x`` into a mantissa and a power of two: ``x = m * 2 ** e``.

    ``|m|`` lies in ``[0.5, 1)`` (0 for 0); ``e`` is an integer held in ``x``'s float dtype, as
    Paddle returns it. NaN gives NaN for both.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor]: the mantissas and the exponents, each of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> m, e = fw.frexp(fw.to_tensor([1.0, 3.0, -0.25, 0.0]))
        >>> m.tolist(), e.tolist()
        ([0.5, 0.75, -0.5, 0.0], [1.0, 2.0, -1.0, 0.0])
    """
    x = float_arg("frexp", x)
    a = M.abs(x)
    finite = M.isfinite(x) & (a > 0)
    safe = M.where(finite, a, 1.0)
    e = M.floor(M.log2(safe)) + 1.0
    # two half-steps keep 2 ** -e finite for subnormal inputs (e down to -148)
    half = M.floor(e * 0.5)
    m = x * _pow2(-half) * _pow2(half - e)
    # log2 may round across a power of two: put |m| back into [0.5, 1)
    big = M.abs(m) >= 1.0
    m, e = M.where(big, m * 0.5, m), M.where(big, e + 1.0, e)
    small = finite & (M.abs(m) < 0.5)
    m, e = M.where(small, m * 2.0, m), M.where(small, e - 1.0, e)
    m = M.where(finite, m, x)
    zero = C.zeros_like(x)
    e = M.where(finite, e, M.where(M.isnan(x), x, M.where(M.isinf(x), zero + 1.0, zero)))
    return m, e


def nextafter(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """The next representable float after ``x`` in the direction of ``y``, elementwise.

    ``x`` itself where ``x == y``; NaN where either is NaN; the smallest subnormal after 0.

    Args:
        x (Tensor): float32 or float64.
        y (Tensor): the direction, of ``x``'s dtype; broadcast with ``x``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``x``'s dtype and the broadcast shape.

    Example:
        >>> import framework as fw
        >>> fw.nextafter(fw.to_tensor([1.0, 2.0]), fw.to_tensor([2.0, 1.0])).tolist()
        [1.0000001192092896, 1.9999998807907104]
    """
    x, y = tensor_arg("nextafter", x), tensor_arg("nextafter", y, "y")
    if x.dtype not in (np.float32, np.float64) or y.dtype != x.dtype:
        raise OpArgumentError(
            f"[nextafter] x and y must both be float32 or both float64, got {x.dtype} and {y.dtype}; "
            "cast them to one float dtype first"
        )
    info = np.finfo(x.dtype)
    digits = float(info.nmant + 1)
    tiny = float(info.smallest_subnormal)
    m, e = frexp(x)
    up = y > x
    away = (x > 0) == up  # moving away from zero: the spacing of x's binade
    step = M.where(away | (M.abs(m) != 0.5), _pow2(e - digits), _pow2(e - digits - 1.0))
    step = M.maximum(step, tiny)
    out = M.where(up, x + step, x - step)
    zero = C.zeros_like(out)
    out = M.where(x == 0, M.where(up, zero + tiny, zero - tiny), out)
    out = M.where(M.isinf(x), M.where(x > 0, zero + float(info.max), zero - float(info.max)), out)
    out = M.where(x == y, y, out)
    return M.where(M.isnan(x) | M.isnan(y), x + y, out)
