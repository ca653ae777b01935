"""The bitwise ops on integer and bool tensors (and, or, xor, not, the shifts), computed one bit plane at a
time from the arithmetic primitives, in two's complement.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor
from .. import creation as C
from .. import math as M
from ._common import tensor_arg
from .manipulation import broadcast_shape


def _bits(x: Tensor) -> int:
    return x.dtype.itemsize * 8


def _bitwise(name: str, x: Tensor, y: Tensor, bit: Any) -> Tensor:
    """Combine the two's-complement bits of integer tensors one bit plane at a time."""
    a, b = M._operands(name, x, y)
    if a.dtype == _dt.bool_:
        return bit(a, b)
    if a.dtype.kind not in "iu":
        raise OpArgumentError(
            f"[{name}] expects integer or bool tensors (as the operators &, |, ^ do), got {a.dtype}; "
            "compare first (x != 0) for a logical result"
        )
    nb = _bits(a)
    # uint64 goes through int64 as its bit pattern (the top bit is int64's sign bit)
    signed = a.dtype.kind == "i" or a.dtype == _dt.uint64
    wide = a.astype("int64")
    wb = b.astype("int64")
    out = C.zeros(broadcast(a, b), dtype="int64", device=a.device)
    for k in range(nb - 1 if signed else nb):
        p = 2**k
        ba = M.remainder(M.floor_divide(wide, p), 2) == 1
        bb = M.remainder(M.floor_divide(wb, p), 2) == 1
        out = out + M.cast(bit(ba, bb), _dt.int64) * p
    if signed:
        sa, sb = wide < 0, wb < 0
        out = M.where(bit(sa, sb), out + -(2 ** (nb - 1)), out)
    return out.astype(a.dtype)


def broadcast(a: Tensor, b: Tensor) -> list[int]:
    return broadcast_shape(a.shape, b.shape)


def bitwise_and(x: Tensor, y: Tensor, out: Any = None, name: str | None = None) -> Tensor:
    """Elementwise bitwise AND (``x & y``) of integer or bool tensors, in two's complement.

    Args:
        x (Tensor): integers or bools.
        y (Tensor): of ``x``'s kind; ``x`` and ``y`` broadcast together.
        out: Paddle's argument, not read: the result is returned.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of the broadcast shape and the promoted dtype.

    Example:
        >>> import framework as fw
        >>> fw.bitwise_and(fw.to_tensor([12, -3]), fw.to_tensor([10, 5]))
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [8, 5])
    """
    return _bitwise("bitwise_and", x, y, M.logical_and)


def bitwise_or(x: Tensor, y: Tensor, out: Any = None, name: str | None = None) -> Tensor:
    """Elementwise bitwise OR (``x | y``) of integer or bool tensors, in two's complement.

    Args:
        x (Tensor): integers or bools.
        y (Tensor): of ``x``'s kind; ``x`` and ``y`` broadcast together.
        out: Paddle's argument, not read: the result is returned.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of the broadcast shape and the promoted dtype.

    Example:
        >>> import framework as fw
        >>> fw.bitwise_or(fw.to_tensor([12, -3]), fw.to_tensor([10, 5]))
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [14, -3])
    """
    return _bitwise("bitwise_or", x, y, M.logical_or)


def bitwise_xor(x: Tensor, y: Tensor, out: Any = None, name: str | None = None) -> Tensor:
    """Elementwise bitwise XOR (``x ^ y``) of integer or bool tensors, in two's complement.

    Args:
        x (Tensor): integers or bools.
        y (Tensor): of ``x``'s kind; ``x`` and ``y`` broadcast together.
        out: Paddle's argument, not read: the result is returned.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of the broadcast shape and the promoted dtype.

    Example:
        >>> import framework as fw
        >>> fw.bitwise_xor(fw.to_tensor([12, -3]), fw.to_tensor([10, 5]))
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [ 6, -8])
    """
    return _bitwise("bitwise_xor", x, y, M.logical_xor)


def bitwise_not(x: Tensor, out: Any = None, name: str | None = None) -> Tensor:
    """Elementwise bitwise NOT (``~x``) of integer or bool tensors.

    That is ``-x - 1`` for signed integers, ``max - x`` for unsigned ones, logical NOT for bool.

    Args:
        x (Tensor): integers or bools.
        out: Paddle's argument, not read: the result is returned.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.bitwise_not(fw.to_tensor([12, -3]))
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [-13,   2])
        >>> fw.bitwise_not(fw.to_tensor([0, 255], dtype="uint8")).tolist()
        [255, 0]
    """
    x = tensor_arg("bitwise_not", x)
    if x.dtype == _dt.bool_:
        return M.logical_not(x)
    if x.dtype == _dt.uint64:  # as int64 bits: ~b == -b - 1 in two's complement
        return (-x.astype("int64") - 1).astype(x.dtype)
    if x.dtype.kind == "u":
        return (int(np.iinfo(x.dtype).max) - x.astype("int64")).astype(x.dtype)
    if x.dtype.kind != "i":
        raise OpArgumentError(
            f"[bitwise_not] expects integer or bool tensors (as ~x does), got {x.dtype}; "
            "use fw.logical_not(x) or ~(x != 0) for a logical not"
        )
    return (-x - 1).astype(x.dtype)


# -- shifts ------------------------------------------------------------------------------------
def _shift_operands(name: str, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor, int]:
    a, b = M._operands(name, x, y)
    if a.dtype.kind not in "iu" or a.dtype == np.uint64:
        raise OpArgumentError(
            f"[{name}] expects integer tensors (int8 to int64, uint8 to uint32), got {a.dtype}; "
            "cast the operands to an integer dtype"
        )
    return a.astype("int64"), M.cast(b, _dt.int64), _bits(a)


def _pow2(k: Tensor) -> Tensor:
    """``2 ** k`` as int64, for integer ``0 <= k <= 62``."""
    return M.cast(M.pow(2.0, M.cast(k, _dt.float64)), _dt.int64)


def bitwise_left_shift(
    x: Tensor, y: Tensor, is_arithmetic: bool = True, out: Any = None, name: str | None = None
) -> Tensor:
    """Elementwise ``x << y``: the bits of ``x`` moved ``y`` places up, those past the width dropped.

    Arithmetic and logical left shifts are the same; a shift by the width or more gives 0.

    Args:
        x (Tensor): integers.
        y (Tensor): the shift counts (non-negative integers); broadcast with ``x``.
        is_arithmetic (bool): Paddle's flag (the same result either way for a left shift).
        out: Paddle's argument, not read: the result is returned.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``x``'s dtype and the broadcast shape.

    Example:
        >>> import framework as fw
        >>> fw.bitwise_left_shift(fw.to_tensor([1, 3, -5]), fw.to_tensor([2, 1, 1])).tolist()
        [4, 6, -10]
    """
    a, k, nb = _shift_operands("bitwise_left_shift", x, y)
    keep = k < nb
    kk = M.where(keep, k, 0)
    # the int64 product wraps modulo 2**64; the cast back keeps the low bits (2**63 as 2 * 2**62)
    moved = a * _pow2(M.minimum(kk, 62)) * (M.cast(kk == 63, _dt.int64) + 1)
    return M.where(keep, moved, 0).astype(x.dtype)


def bitwise_right_shift(
    x: Tensor, y: Tensor, is_arithmetic: bool = True, out: Any = None, name: str | None = None
) -> Tensor:
    """Elementwise ``x >> y``: arithmetic (the sign bit copied in) or logical (zeros shifted in).

    Args:
        x (Tensor): integers.
        y (Tensor): the shift counts (non-negative integers); broadcast with ``x``.
        is_arithmetic (bool): copy the sign bit in (``True``), else shift in zeros, reading a
            negative ``x`` as its unsigned bit pattern.
        out: Paddle's argument, not read: the result is returned.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``x``'s dtype and the broadcast shape.

    Example:
        >>> import framework as fw
        >>> fw.bitwise_right_shift(fw.to_tensor([10, -10]), fw.to_tensor([1, 1])).tolist()
        [5, -5]
        >>> x = fw.to_tensor([-10], dtype="int8")
        >>> fw.bitwise_right_shift(x, fw.to_tensor([1], dtype="int8"), is_arithmetic=False).tolist()
        [123]
    """
    a, k, nb = _shift_operands("bitwise_right_shift", x, y)
    # floor division by 2**k is the arithmetic shift; past the width only the sign remains
    sat = k >= nb - 1
    arith = M.where(sat, -M.cast(a < 0, _dt.int64), M.floor_divide(a, _pow2(M.where(sat, 0, k))))
    if is_arithmetic:
        return arith.astype(x.dtype)
    # logical: the sign-filled top k bits become zeros, i.e. add 2**(nb - k) modulo 2**nb
    # (2 * 2**(nb - k - 1): for int64 and k = 1 the int64 product wraps to exactly that)
    inside = (k >= 1) & (k < nb)
    fill = _pow2(M.where(inside, nb - k - 1, 0)) * 2
    out = M.where((a < 0) & inside, arith + fill, arith)
    return M.where(k >= nb, 0, out).astype(x.dtype)
