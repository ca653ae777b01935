"""The parts of complex numbers (real, imag, conj, angle), each a decomposition into existing
ops.
"""

from __future__ import annotations

import math as _m

from ...tensor import Tensor
from .. import complex as CX
from .. import creation as C
from .. import math as M
from ._common import float_arg, tensor_arg


def real(x: Tensor, name: str | None = None) -> Tensor:
    """The real part of ``x``: ``x`` itself (Oarlock has no complex dtype).

    Args:
        x (Tensor): a real tensor.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``x``.

    Example:
        >>> import framework as fw
        >>> fw.real(fw.to_tensor([1.0, -2.0])).tolist()
        [1.0, -2.0]
    """
    x = tensor_arg("real", x)
    return CX.real(x) if x.dtype.kind == "c" else x


def imag(x: Tensor, name: str | None = None) -> Tensor:
    """The imaginary part of ``x``: zeros (Oarlock has no complex dtype).

    Args:
        x (Tensor): a real tensor.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: zeros like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.imag(fw.to_tensor([1.0, -2.0]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [0., 0.])
    """
    x = tensor_arg("imag", x)
    return CX.imag(x) if x.dtype.kind == "c" else C.zeros_like(x)


def conj(x: Tensor, name: str | None = None) -> Tensor:
    """The complex conjugate of ``x``: ``x`` itself (Oarlock has no complex dtype).

    Args:
        x (Tensor): a real tensor.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``x``.

    Example:
        >>> import framework as fw
        >>> fw.conj(fw.to_tensor([1.0, -2.0])).tolist()
        [1.0, -2.0]
    """
    x = tensor_arg("conj", x)
    return CX.conj(x) if x.dtype.kind == "c" else x


def angle(x: Tensor, name: str | None = None) -> Tensor:
    """The argument of each real number: pi where ``x < 0``, else 0 (NaN stays NaN).

    Args:
        x (Tensor): a real tensor; integers are cast to the default float dtype.
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
