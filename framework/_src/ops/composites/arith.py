"""Paddle's remaining math functions, each a decomposition into existing ops (so each runs
and differentiates wherever they do): cumprod, nansum, var, std, cumsum, add_n, scale,
increment, multiplex, lerp, gcd, lcm, diff, fmax, fmin. Products (addmm, kron...), complex parts,
closeness tests and bitwise ops live in their own modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor
from .. import creation as C
from .. import math as M
from .. import shape as S
from . import activation
from ._common import axis_arg, float_arg, tensor_arg
from .manipulation import broadcast_tensors

# isort: split
# moved to their own modules; re-exported here, their former home
from .bitwise import bitwise_and, bitwise_not, bitwise_or, bitwise_xor  # noqa: F401
from .closeness import equal_all, isclose  # noqa: F401
from .complex_parts import angle, conj, imag, real  # noqa: F401
from .products import addmm, baddbmm, inner, kron, outer, trace  # noqa: F401


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
