"""Matrix products: matmul (numpy's rules for 1-d operands, batch broadcasting), its fused
transposed form matmul_t, mm and dot."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from .. import dtypes as _dt
from ..tensor import Tensor
from . import reductions
from . import sharding as _sh
from .base import OPS, apply1, broadcast_shapes, call, composite
from .cost import matmul_flops
from .elementwise import _check, _operands


def matmul(
    x: Tensor, y: Tensor, transpose_x: bool = False, transpose_y: bool = False, name: str | None = None
) -> Tensor:
    """Matrix product of ``x`` and ``y``, with numpy's rules for 1-d operands and batch broadcasting.

    A 1-d ``x`` is a row vector and a 1-d ``y`` a column vector, their added dim removed from the
    result; dims before the last two are a batch and broadcast.

    Args:
        x (Tensor): at least 1-d.
        y (Tensor): at least 1-d; the last dim of ``x`` must equal the second-to-last of ``y``.
        transpose_x (bool): use ``x`` with its last two dims swapped.
        transpose_y (bool): use ``y`` with its last two dims swapped.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the product (also ``x @ y``).

    Example:
        >>> import framework as fw
        >>> a = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fw.matmul(a, fw.to_tensor([1.0, 1.0]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [3., 7.])
        >>> fw.matmul(a, a, transpose_x=True).tolist()
        [[10.0, 14.0], [14.0, 20.0]]
    """
    x = _check(x, "matmul")
    y = _check(y, "matmul")
    if x.ndim == 0 or y.ndim == 0:
        raise OpArgumentError(
            f"[matmul] both operands need at least 1 dimension, got shapes {x.shape} and {y.shape}; use * for scalars"
        )
    x, y = _operands("matmul", x, y)
    if x.dtype == _dt.bool_:
        raise OpArgumentError("[matmul] bool tensors are not supported; cast to a number type first")
    tx = bool(transpose_x) and x.ndim >= 2
    ty = bool(transpose_y) and y.ndim >= 2
    squeeze_front = x.ndim == 1
    squeeze_back = y.ndim == 1
    if squeeze_front:
        x = x.reshape((1,) + x.shape)
    if squeeze_back:
        y = y.reshape(y.shape + (1,))
    kx = x.shape[-2] if tx else x.shape[-1]
    ky = y.shape[-1] if ty else y.shape[-2]
    if kx != ky:
        sx = x.shape[:-2] + (x.shape[-1], x.shape[-2]) if tx else x.shape
        sy = y.shape[:-2] + (y.shape[-1], y.shape[-2]) if ty else y.shape
        raise OpArgumentError(
            f"[matmul] shapes {sx} and {sy} do not match: {kx} != {ky}; "
            f"the last dim of x must equal the second-to-last of y"
        )
    batch = broadcast_shapes("matmul", x.shape[:-2], y.shape[:-2])
    if x.shape[:-2] != batch:
        x = x.expand(batch + x.shape[-2:])
    if y.shape[:-2] != batch:
        y = y.expand(batch + y.shape[-2:])
    out = matmul_t(x, y, tx, ty)
    if squeeze_front:
        out = out.reshape(out.shape[:-2] + out.shape[-1:])
    if squeeze_back:
        out = out.reshape(out.shape[:-1])
    return out


def _matmul_t_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    a, b = ins
    m = a.shape[-1] if attrs["transpose_x"] else a.shape[-2]
    n = b.shape[-2] if attrs["transpose_y"] else b.shape[-1]
    return [(a.shape[:-2] + (m, n), a.dtype)]


def _matmul_t_decomposition(a: Tensor, b: Tensor, transpose_x: bool, transpose_y: bool) -> Tensor:
    """op(a) @ op(b) with op = transpose of the last two dims where asked. Without a fused
    kernel one operand is copied transposed; pick the copy that moves fewer bytes."""
    mm_ = OPS["matmul"]
    if not transpose_x and not transpose_y:
        return apply1(mm_, [a, b], {})
    if transpose_y and not transpose_x:  # a (m, k), b (n, k)
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-2]
        if m * (n + k) < k * n:
            return apply1(mm_, [b, a.swapaxes(-1, -2)], {}).swapaxes(-1, -2)
        return apply1(mm_, [a, b.swapaxes(-1, -2)], {})
    if transpose_x and not transpose_y:  # a (k, m), b (k, n)
        k, m, n = a.shape[-2], a.shape[-1], b.shape[-1]
        if n * (m + k) < m * k:
            return apply1(mm_, [b.swapaxes(-1, -2), a], {}).swapaxes(-1, -2)
        return apply1(mm_, [a.swapaxes(-1, -2), b], {})
    return apply1(mm_, [a.swapaxes(-1, -2), b.swapaxes(-1, -2)], {})


def _g_matmul_t(n: Any, g: list) -> list:
    x, y = n.inputs  # complex operands: g @ conj(b)^T (conjugate Wirtinger; "conj" is in ops.complex)
    a, b = (call(OPS["conj"], [t], {}) if t.dtype.kind == "c" else t for t in (x, y))
    tx, ty = n.attrs["transpose_x"], n.attrs["transpose_y"]
    go = g[0]
    ga = gb = None
    if not x.stop_gradient:
        ga = matmul_t(b, go, ty, True) if tx else matmul_t(go, b, False, not ty)
    if not y.stop_gradient:
        gb = matmul_t(go, a, True, tx and ty) if ty else matmul_t(a, go, not tx, False)
    return [ga, gb]


_MATMUL_T = composite(
    "matmul_t",
    amp="allow",
    sharding=_sh.matmul_t,
    flops=matmul_flops,
    infer=_matmul_t_infer,
    grad=_g_matmul_t,
)(_matmul_t_decomposition)


def matmul_t(a: Tensor, b: Tensor, transpose_x: bool, transpose_y: bool) -> Tensor:
    """``op(a) @ op(b)`` on operands of equal batch shape and rank >= 2 (internal)."""
    if not transpose_x and not transpose_y:
        return apply1(OPS["matmul"], [a, b], {})
    return call(_MATMUL_T, [a, b], {"transpose_x": bool(transpose_x), "transpose_y": bool(transpose_y)})


def mm(x: Tensor, y: Tensor) -> Tensor:
    """Matrix product of ``x`` and ``y`` (the same as :func:`matmul`).

    Args:
        x (Tensor): at least 1-d.
        y (Tensor): at least 1-d.

    Returns:
        Tensor: the product.

    Example:
        >>> import framework as fw
        >>> fw.mm(fw.to_tensor([[1, 2]]), fw.to_tensor([[3], [4]]))
        Tensor(shape=[1, 1], dtype=int64, device=cpu:0,
               [[11]])
    """
    return matmul(x, y)


def dot(x: Tensor, y: Tensor) -> Tensor:
    """Inner product of ``x`` and ``y`` along their last axis.

    Args:
        x (Tensor): 1-d, or 2-d for a batch of rows.
        y (Tensor): of ``x``'s shape.

    Returns:
        Tensor: 0-d for 1-d inputs, else one value per row.

    Example:
        >>> import framework as fw
        >>> fw.dot(fw.to_tensor([1.0, 2.0, 3.0]), fw.to_tensor([4.0, 5.0, 6.0]))
        Tensor(shape=[], dtype=float32, device=cpu:0,
               32.)
    """
    return reductions.sum(x * y, axis=-1)
