"""Paddle's remaining math functions, each a decomposition into existing ops (so each runs
and differentiates wherever they do): cumprod, nansum, var, std, cumsum, add_n, scale,
increment, multiplex, addmm, trace, kron, lerp, gcd, lcm, diff, fmax, fmin, inner, outer, the
real-valued complex helpers (real, imag, conj, angle), isclose, equal_all and the bitwise ops.
"""

from __future__ import annotations

import math as _m
from collections.abc import Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor, to_tensor
from .. import creation as C
from .. import math as M
from .. import shape as S
from . import activation
from ._common import axis_arg, float_arg, tensor_arg
from .manipulation import broadcast_shape, broadcast_tensors, diagonal


def cumprod(x: Tensor, dim: int | None = None, dtype: Any = None, name: str | None = None) -> Tensor:
    """The running product of ``x`` along ``dim``.

    Args:
        x (Tensor): the input.
        dim (int, optional): the axis; ``None``: over the flattened ``x``.
        dtype (str | np.dtype, optional): cast ``x`` to this first.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``x``'s shape (1-d when ``dim`` is ``None``).

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2], [3, 4]])
        >>> fw.cumprod(x, dim=1)
        Tensor(shape=[2, 2], dtype=int64, device=cpu:0,
               [[ 1,  2],
                [ 3, 12]])
        >>> fw.cumprod(x).tolist()
        [1, 2, 6, 24]
    """
    x = tensor_arg("cumprod", x)
    if dtype is not None:
        x = M.cast(x, dtype)
    if dim is None:
        x, dim = x.reshape((-1,)), 0
    ax = axis_arg("cumprod", dim, x.ndim)
    if x.ndim == 0:
        return x
    n, k = x.shape[ax], 1
    while k < n:
        starts, stops = [0] * x.ndim, list(x.shape)
        stops[ax] = n - k
        pads = [(0, 0)] * x.ndim
        pads[ax] = (k, 0)
        x = x * S.pad_raw(S.slice_raw(x, tuple(starts), tuple(stops), (1,) * x.ndim), tuple(pads), 1)
        k *= 2
    return x


def nansum(
    x: Tensor, axis: Any = None, dtype: Any = None, keepdim: bool = False, name: str | None = None
) -> Tensor:
    """Sum of the elements of ``x`` over ``axis``, NaNs counted as zero.

    Args:
        x (Tensor): the input.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        dtype (str | np.dtype, optional): as in :func:`sum`.
        keepdim (bool): keep the reduced axes, with size 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the sums.

    Example:
        >>> import framework as fw
        >>> fw.nansum(fw.to_tensor([1.0, float("nan"), 2.0]))
        Tensor(shape=[], dtype=float32, device=cpu:0,
               3.)
    """
    x = tensor_arg("nansum", x)
    if _dt.is_floating(x.dtype):
        x = M.where(M.isnan(x), 0.0, x)
    return M.sum(x, axis=axis, dtype=dtype, keepdim=keepdim)


def var(
    x: Tensor, axis: Any = None, unbiased: bool = True, keepdim: bool = False, name: str | None = None
) -> Tensor:
    """The variance of the elements of ``x`` over ``axis``.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        unbiased (bool): divide by ``n - 1`` (Paddle's default), else by ``n``.
        keepdim (bool): keep the reduced axes, with size 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor; NaN when ``n - 1`` is 0 and ``unbiased``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fw.var(x, axis=0)
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [2., 2.])
        >>> fw.var(x, unbiased=False).item()
        1.25
    """
    x = float_arg("var", x)
    axes = M.normalize_axes("var", axis, x.ndim)
    n = 1
    for a in axes:
        n *= x.shape[a]
    d = x - M.mean(x, axis=axes, keepdim=True)
    denom = n - 1 if unbiased else n
    return M.sum(d * d, axis=axes, keepdim=keepdim) * (1.0 / denom if denom > 0 else float("nan"))


def std(
    x: Tensor, axis: Any = None, unbiased: bool = True, keepdim: bool = False, name: str | None = None
) -> Tensor:
    """The standard deviation of the elements of ``x`` over ``axis`` (the square root of :func:`var`).

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        unbiased (bool): divide by ``n - 1`` (Paddle's default), else by ``n``.
        keepdim (bool): keep the reduced axes, with size 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor.

    Example:
        >>> import framework as fw
        >>> fw.std(fw.to_tensor([1.0, 2.0, 3.0, 4.0]))
        Tensor(shape=[], dtype=float32, device=cpu:0,
               1.2909945)
    """
    return M.sqrt(var(x, axis=axis, unbiased=unbiased, keepdim=keepdim))


def cumsum(x: Tensor, axis: int | None = None, dtype: Any = None, name: str | None = None) -> Tensor:
    """The running sum of ``x`` along ``axis``.

    Computed with log2(n) shifted adds (Hillis-Steele), all primitives.

    Args:
        x (Tensor): the input.
        axis (int, optional): the axis; ``None``: over the flattened ``x``.
        dtype (str | np.dtype, optional): cast ``x`` to this first; by default bool and integers
            sum as int64.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``x``'s shape (1-d when ``axis`` is ``None``).

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2], [3, 4]])
        >>> fw.cumsum(x, axis=0)
        Tensor(shape=[2, 2], dtype=int64, device=cpu:0,
               [[1, 2],
                [4, 6]])
        >>> fw.cumsum(x).tolist()
        [1, 3, 6, 10]
    """
    x = tensor_arg("cumsum", x)
    if dtype is not None:
        x = M.cast(x, dtype)
    elif x.dtype.kind in "biu":
        x = M.cast(x, _dt.int64)
    if axis is None:
        x, axis = x.reshape((-1,)), 0
    ax = axis_arg("cumsum", axis, x.ndim)
    if x.ndim == 0:
        return x
    n = x.shape[ax]
    k = 1
    while k < n:
        starts = [0] * x.ndim
        stops = list(x.shape)
        stops[ax] = n - k
        pads = [(0, 0)] * x.ndim
        pads[ax] = (k, 0)
        x = x + S.pad_raw(S.slice_raw(x, tuple(starts), tuple(stops), (1,) * x.ndim), tuple(pads), 0)
        k *= 2
    return x


def add_n(inputs: Any, name: str | None = None) -> Tensor:
    """The elementwise sum of a list of tensors.

    Args:
        inputs (Tensor | list[Tensor]): one tensor or several, broadcast together.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``inputs[0] + inputs[1] + ...``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2], [3, 4]])
        >>> fw.add_n([x, x, x])
        Tensor(shape=[2, 2], dtype=int64, device=cpu:0,
               [[ 3,  6],
                [ 9, 12]])
    """
    ts = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if not ts:
        raise OpArgumentError("[add_n] inputs must hold at least one Tensor")
    out = tensor_arg("add_n", ts[0])
    for t in ts[1:]:
        out = out + t
    return out


def scale(
    x: Tensor,
    scale: float = 1.0,
    bias: float = 0.0,
    bias_after_scale: bool = True,
    act: Any = None,
    name: str | None = None,
) -> Tensor:
    """``scale * x + bias``, or ``scale * (x + bias)`` with ``bias_after_scale=False``.

    Args:
        x (Tensor): the input; a float input keeps its dtype.
        scale (float | Tensor): the factor (a 1-element tensor is read as a number).
        bias (float): the offset.
        bias_after_scale (bool): add ``bias`` after scaling, else before.
        act (str, optional): an activation of ``nn.functional`` applied to the result
            (``"relu"``, ``"tanh"``, ``"sigmoid"``...).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1.0, 2.0])
        >>> fw.scale(x, scale=2.0, bias=1.0)
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [3., 5.])
        >>> fw.scale(x, 2.0, 1.0, bias_after_scale=False).tolist()
        [4.0, 6.0]
    """
    x = tensor_arg("scale", x)
    s = float(scale.item()) if isinstance(scale, Tensor) else scale
    out = x * s + bias if bias_after_scale else (x + bias) * s
    out = out.astype(x.dtype) if out.dtype != x.dtype and x.dtype.kind == "f" else out
    if act is None:
        return out
    fn = getattr(activation, str(act), None)
    if not callable(fn):
        raise OpArgumentError(f"[scale] act must name an activation such as 'relu' or 'tanh', got {act!r}")
    return fn(out)


def increment(x: Tensor, value: float = 1.0, name: str | None = None) -> Tensor:
    """``x + value``, in ``x``'s dtype.

    Args:
        x (Tensor): the input (Paddle's takes one element).
        value (float): the amount to add.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a new tensor like ``x`` (``x`` is not changed).

    Example:
        >>> import framework as fw
        >>> fw.increment(fw.to_tensor([1.0]))
        Tensor(shape=[1], dtype=float32, device=cpu:0,
               [2.])
    """
    x = tensor_arg("increment", x)
    return (x + value).astype(x.dtype)


def multiplex(inputs: Sequence[Tensor], index: Tensor, name: str | None = None) -> Tensor:
    """Pick each row from one of several tensors: row ``i`` of ``inputs[index[i]]`` for row ``i``.

    Args:
        inputs (list[Tensor]): tensors of one shape ``[n, ...]``.
        index (Tensor): ``[n]`` or ``[n, 1]`` integers, each below ``len(inputs)``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[n, ...]``.

    Example:
        >>> import framework as fw
        >>> a, b = fw.to_tensor([[1, 2], [3, 4]]), fw.to_tensor([[5, 6], [7, 8]])
        >>> fw.multiplex([a, b], fw.to_tensor([[1], [0]]))
        Tensor(shape=[2, 2], dtype=int64, device=cpu:0,
               [[5, 6],
                [3, 4]])
    """
    ts = list(inputs)
    if not ts:
        raise OpArgumentError("[multiplex] inputs must hold at least one Tensor")
    stacked = S.stack(ts, axis=0)
    idx = tensor_arg("multiplex", index, "index").reshape((-1,))
    rows = C.arange(ts[0].shape[0], device=ts[0].device)
    flat = stacked.reshape((len(ts) * ts[0].shape[0],) + ts[0].shape[1:])
    return flat.gather(idx.astype("int64") * ts[0].shape[0] + rows, axis=0)


def baddbmm(
    input: Tensor, x: Tensor, y: Tensor, beta: float = 1.0, alpha: float = 1.0, name: str | None = None
) -> Tensor:
    """``beta * input + alpha * (x @ y)`` for batches of matrices.

    Args:
        input (Tensor): broadcast to ``[b, n, p]``.
        x (Tensor): ``[b, n, m]``.
        y (Tensor): ``[b, m, p]``.
        beta (float): the factor of ``input``.
        alpha (float): the factor of the product.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[b, n, p]``.

    Example:
        >>> import framework as fw
        >>> fw.baddbmm(fw.ones([1, 2, 2]), fw.ones([1, 2, 3]), fw.ones([1, 3, 2]), beta=0.5).tolist()
        [[[3.5, 3.5], [3.5, 3.5]]]
    """
    x, y = tensor_arg("baddbmm", x, "x"), tensor_arg("baddbmm", y, "y")
    if x.ndim != 3 or y.ndim != 3:
        raise OpArgumentError(
            f"[baddbmm] x and y must be 3-d batches of matrices, got {x.shape} and {y.shape}"
        )
    return tensor_arg("baddbmm", input, "input") * beta + M.matmul(x, y) * alpha


def addmm(
    input: Tensor, x: Tensor, y: Tensor, beta: float = 1.0, alpha: float = 1.0, name: str | None = None
) -> Tensor:
    """``beta * input + alpha * (x @ y)``.

    Args:
        input (Tensor): broadcast to the product's shape.
        x (Tensor): ``[m, k]``.
        y (Tensor): ``[k, n]``.
        beta (float): the factor of ``input``.
        alpha (float): the factor of the product.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[m, n]``.

    Example:
        >>> import framework as fw
        >>> fw.addmm(fw.ones([2, 2]), fw.eye(2), fw.to_tensor([[1.0, 2.0], [3.0, 4.0]]), beta=0.5, alpha=2.0)
        Tensor(shape=[2, 2], dtype=float32, device=cpu:0,
               [[2.5, 4.5],
                [6.5, 8.5]])
    """
    return tensor_arg("addmm", input) * beta + M.matmul(x, y) * alpha


def trace(x: Tensor, offset: int = 0, axis1: int = 0, axis2: int = 1, name: str | None = None) -> Tensor:
    """The sum of a diagonal of ``x``.

    Args:
        x (Tensor): at least 2-d.
        offset (int): the diagonal: 0 the main one, > 0 above it, < 0 below it.
        axis1 (int): the first axis of the matrices.
        axis2 (int): the second axis.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``x``'s shape without ``axis1`` and ``axis2``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2], [3, 4]])
        >>> fw.trace(x)
        Tensor(shape=[], dtype=int64, device=cpu:0,
               5)
        >>> fw.trace(x, offset=1).item()
        2
    """
    return M.sum(diagonal(x, offset, axis1, axis2), axis=-1)


def kron(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """The Kronecker product: each element of ``x`` times the whole of ``y``, laid out in blocks.

    Args:
        x (Tensor): the first tensor.
        y (Tensor): the second; the lower-rank one gets leading dims of size 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of shape ``x.shape[i] * y.shape[i]`` per dim.

    Example:
        >>> import framework as fw
        >>> fw.kron(fw.to_tensor([1, 2]), fw.to_tensor([1, 10, 100]))
        Tensor(shape=[6], dtype=int64, device=cpu:0,
               [  1,  10, 100,   2,  20, 200])
    """
    x, y = tensor_arg("kron", x), tensor_arg("kron", y, "y")
    nd = max(x.ndim, y.ndim)
    x = x.reshape((1,) * (nd - x.ndim) + x.shape)
    y = y.reshape((1,) * (nd - y.ndim) + y.shape)
    xs = [d for s in x.shape for d in (s, 1)]
    ys = [d for s in y.shape for d in (1, s)]
    return (x.reshape(xs) * y.reshape(ys)).reshape(tuple(a * b for a, b in zip(x.shape, y.shape)))


def lerp(x: Tensor, y: Tensor, weight: Any, name: str | None = None) -> Tensor:
    """Linear interpolation ``x + weight * (y - x)``.

    Args:
        x (Tensor): the start.
        y (Tensor): the end.
        weight (float | Tensor): the fraction of the way, broadcast.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of the broadcast shape.

    Example:
        >>> import framework as fw
        >>> fw.lerp(fw.to_tensor([0.0, 10.0]), fw.to_tensor([10.0, 20.0]), 0.25)
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [ 2.5, 12.5])
    """
    return x + (y - x) * weight


def _int_pair(name: str, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    x, y = M._operands(name, x, y)
    if x.dtype.kind not in "iu":
        raise OpArgumentError(f"[{name}] expects integer tensors, got {x.dtype}")
    if x.shape != y.shape:
        x, y = broadcast_tensors([x, y])
    return x, y


def gcd(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """Elementwise greatest common divisor of integers (non-negative; ``gcd(0, 0) = 0``).

    Euclid's algorithm on the device, reading back once per round to know when every pair is
    done.

    Args:
        x (Tensor): integers.
        y (Tensor): integers; ``x`` and ``y`` broadcast together.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of the broadcast shape.

    Example:
        >>> import framework as fw
        >>> fw.gcd(fw.to_tensor([12, -18, 0]), fw.to_tensor([8, 12, 5]))
        Tensor(shape=[3], dtype=int64, device=cpu:0,
               [4, 6, 5])
    """
    a, b = _int_pair("gcd", x, y)
    a, b = M.abs(a), M.abs(b)
    while bool(M.any(b != 0).item()):
        nz = b != 0
        r = M.remainder(a, M.where(nz, b, 1))
        a, b = M.where(nz, b, a), M.where(nz, r, 0)
    return a


def lcm(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """Elementwise least common multiple of integers (non-negative; 0 when either is 0).

    Args:
        x (Tensor): integers.
        y (Tensor): integers; ``x`` and ``y`` broadcast together.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of the broadcast shape.

    Example:
        >>> import framework as fw
        >>> fw.lcm(fw.to_tensor([4, -6, 0]), fw.to_tensor([6, 4, 5]))
        Tensor(shape=[3], dtype=int64, device=cpu:0,
               [12, 12,  0])
    """
    a, b = _int_pair("lcm", x, y)
    g = gcd(a, b)
    return M.where(g == 0, 0, M.abs(M.floor_divide(a, M.where(g == 0, 1, g)) * b))


def diff(
    x: Tensor,
    n: int = 1,
    axis: int = -1,
    prepend: Tensor | None = None,
    append: Tensor | None = None,
    name: str | None = None,
) -> Tensor:
    """The ``n``-th forward difference ``x[i + 1] - x[i]`` along ``axis``.

    Args:
        x (Tensor): the input; for bool, ``x[i + 1] != x[i]``.
        n (int): how many times to take the difference.
        axis (int): the axis.
        prepend (Tensor, optional): joined before ``x`` along ``axis`` first.
        append (Tensor, optional): joined after ``x`` along ``axis`` first.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``n`` shorter along ``axis``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1, 4, 9, 16])
        >>> fw.diff(x)
        Tensor(shape=[3], dtype=int64, device=cpu:0,
               [3, 5, 7])
        >>> fw.diff(x, n=2).tolist()
        [2, 2]
    """
    x = tensor_arg("diff", x)
    ax = axis_arg("diff", axis, x.ndim)
    parts = [t for t in (prepend, x, append) if t is not None]
    if len(parts) > 1:
        x = S.concat(parts, axis=ax)
    for _ in range(n):
        m = x.shape[ax]
        if m == 0:
            break
        key_hi = [slice(None)] * x.ndim
        key_lo = [slice(None)] * x.ndim
        key_hi[ax], key_lo[ax] = slice(1, m), slice(0, m - 1)
        hi, lo = x[tuple(key_hi)], x[tuple(key_lo)]
        x = M.not_equal(hi, lo) if x.dtype == _dt.bool_ else hi - lo
    return x


def fmax(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """Elementwise maximum that ignores NaN: where one value is NaN, the other one wins.

    Args:
        x (Tensor): the first tensor.
        y (Tensor): the second; ``x`` and ``y`` broadcast together.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of the broadcast shape; NaN only where both are.

    Example:
        >>> import framework as fw
        >>> nan = float("nan")
        >>> fw.fmax(fw.to_tensor([1.0, nan, 3.0]), fw.to_tensor([2.0, 0.0, nan]))
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [2., 0., 3.])
    """
    a, b = M._operands("fmax", x, y)
    m = M.maximum(a, b)
    if not _dt.is_floating(a.dtype):
        return m
    return M.where(M.isnan(a), b, M.where(M.isnan(b), a, m))


def fmin(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """Elementwise minimum that ignores NaN: where one value is NaN, the other one wins.

    Args:
        x (Tensor): the first tensor.
        y (Tensor): the second; ``x`` and ``y`` broadcast together.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of the broadcast shape; NaN only where both are.

    Example:
        >>> import framework as fw
        >>> nan = float("nan")
        >>> fw.fmin(fw.to_tensor([1.0, nan, 3.0]), fw.to_tensor([2.0, 0.0, nan]))
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [1., 0., 3.])
    """
    a, b = M._operands("fmin", x, y)
    m = M.minimum(a, b)
    if not _dt.is_floating(a.dtype):
        return m
    return M.where(M.isnan(a), b, M.where(M.isnan(b), a, m))


def inner(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """Sum of products over the last axis of ``x`` and of ``y``.

    Args:
        x (Tensor): ``[..., k]``.
        y (Tensor): ``[..., k]``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``x.shape[:-1] + y.shape[:-1]``.

    Example:
        >>> import framework as fw
        >>> fw.inner(fw.to_tensor([[1.0, 2.0], [3.0, 4.0]]), fw.to_tensor([[1.0, 1.0]]))
        Tensor(shape=[2, 1], dtype=float32, device=cpu:0,
               [[3.],
                [7.]])
    """
    x, y = tensor_arg("inner", x), tensor_arg("inner", y, "y")
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    return M.matmul(x.reshape((-1, x.shape[-1])), y.reshape((-1, y.shape[-1])).T).reshape(
        x.shape[:-1] + y.shape[:-1]
    )


def outer(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """The outer product: ``out[i, j] = x[i] * y[j]`` of the flattened inputs.

    Args:
        x (Tensor): flattened to ``[m]``.
        y (Tensor): flattened to ``[n]``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[m, n]``.

    Example:
        >>> import framework as fw
        >>> fw.outer(fw.to_tensor([1, 2]), fw.to_tensor([1, 10, 100]))
        Tensor(shape=[2, 3], dtype=int64, device=cpu:0,
               [[  1,  10, 100],
                [  2,  20, 200]])
    """
    x, y = tensor_arg("outer", x).reshape((-1, 1)), tensor_arg("outer", y, "y").reshape((1, -1))
    return x * y


# -- complex helpers on real tensors (Oarlock has no complex dtype) ----------------------------
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
    return tensor_arg("real", x)


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
    return C.zeros_like(tensor_arg("imag", x))


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
    return tensor_arg("conj", x)


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
    x = float_arg("angle", x)
    zero = x * 0.0
    return M.where(x < 0, zero + _m.pi, zero)


# -- comparisons -------------------------------------------------------------------------------
def isclose(
    x: Tensor,
    y: Tensor,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    equal_nan: bool = False,
    name: str | None = None,
) -> Tensor:
    """Elementwise ``|x - y| <= atol + rtol * |y|``; equal infinities are close.

    Args:
        x (Tensor): the first tensor.
        y (Tensor): the second; ``x`` and ``y`` broadcast together.
        rtol (float): the relative tolerance.
        atol (float): the absolute tolerance.
        equal_nan (bool): two NaNs are close.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: bool, of the broadcast shape.

    Example:
        >>> import framework as fw
        >>> nan = float("nan")
        >>> fw.isclose(fw.to_tensor([1.0, 2.0, nan]), fw.to_tensor([1.000001, 2.1, nan]))
        Tensor(shape=[3], dtype=bool, device=cpu:0,
               [ True, False, False])
        >>> fw.isclose(fw.to_tensor([nan]), fw.to_tensor([nan]), equal_nan=True).tolist()
        [True]
    """
    a, b = M._operands("isclose", x, y)
    close = M.abs(a - b) <= M.abs(b) * rtol + atol
    close = close | (a == b)
    if equal_nan and _dt.is_floating(a.dtype):
        close = close | (M.isnan(a) & M.isnan(b))
    return close


def equal_all(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """Whether ``x`` and ``y`` have the same shape and equal elements, as a 0-d bool tensor.

    Args:
        x (Tensor): the first tensor.
        y (Tensor): the second tensor (not broadcast).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: 0-d bool.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2], [3, 4]])
        >>> fw.equal_all(x, x)
        Tensor(shape=[], dtype=bool, device=cpu:0,
               True)
        >>> fw.equal_all(x, fw.to_tensor([1, 2])).item()
        False
    """
    x, y = tensor_arg("equal_all", x), tensor_arg("equal_all", y, "y")
    if x.shape != y.shape:
        return to_tensor(False, device=x.device)
    return M.all(M.equal(x, y))


# -- bitwise -----------------------------------------------------------------------------------
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
    signed = a.dtype.kind == "i"
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
        out = M.where(bit(sa, sb), out + int(np.iinfo(a.dtype).min), out)
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
    if x.dtype.kind == "u":
        return (int(np.iinfo(x.dtype).max) - x.astype("int64")).astype(x.dtype)
    if x.dtype.kind != "i":
        raise OpArgumentError(
            f"[bitwise_not] expects integer or bool tensors (as ~x does), got {x.dtype}; "
            "use fw.logical_not(x) or ~(x != 0) for a logical not"
        )
    return (-x - 1).astype(x.dtype)
