"""The parts of complex numbers (real, imag, conj, angle): a complex input goes to its op in
``ops.complex``; a real one is its own real part, with a zero imaginary part.
"""

from __future__ import annotations

import math as _m

from ...tensor import Tensor
from .. import complex as CX
from .. import creation as C
from .. import math as M
from ._common import float_arg, tensor_arg


def real(x: Tensor, name: str | None = None) -> Tensor:
    """The real part of ``x`` (``x`` itself for a real ``x``).

    Args:
        x (Tensor): complex or real.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: float32 for complex64, float64 for complex128; ``x`` for a real ``x``.

    Example:
        >>> import framework as fw
        >>> fw.real(fw.to_tensor([1 + 2j, -2.0])).tolist()
        [1.0, -2.0]
    """
    x = tensor_arg("real", x)
    return CX.real(x) if x.dtype.kind == "c" else x


def imag(x: Tensor, name: str | None = None) -> Tensor:
    """The imaginary part of ``x`` (zeros for a real ``x``).

    Args:
        x (Tensor): complex or real.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: float32 for complex64, float64 for complex128; zeros like a real ``x``.

    Example:
        >>> import framework as fw
        >>> fw.imag(fw.to_tensor([1 + 2j, -2.0]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [2., 0.])
    """
    x = tensor_arg("imag", x)
    return CX.imag(x) if x.dtype.kind == "c" else C.zeros_like(x)


def conj(x: Tensor, name: str | None = None) -> Tensor:
    """The complex conjugate of ``x`` (``x`` itself for a real ``x``).

    Args:
        x (Tensor): complex or real.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``; its gradient is the conjugate of the incoming one.

    Example:
        >>> import framework as fw
        >>> fw.conj(fw.to_tensor([1 + 2j, -2.0])).tolist()
        [(1-2j), (-2-0j)]
    """
    x = tensor_arg("conj", x)
    return CX.conj(x) if x.dtype.kind == "c" else x


def angle(x: Tensor, name: str | None = None) -> Tensor:
    """The argument of each number: ``atan2(imag, real)`` for complex ``x``; for real ``x``, pi where ``x < 0``, else 0.

    Args:
        x (Tensor): complex or real; integers are cast to the default float dtype (NaN stays NaN).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.angle(fw.to_tensor([-2.0, 0.0, 3.0]))
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [3.1415927, 0.       , 0.       ])
    """
    if isinstance(x, Tensor) and x.dtype.kind == "c":
        return CX.angle(x)
    x = float_arg("angle", x)
    zero = x * 0.0
    return M.where(x < 0, zero + _m.pi, zero)
