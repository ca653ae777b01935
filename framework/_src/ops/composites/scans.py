"""Paddle's running and NaN-aware reductions, each a decomposition into existing ops:
logcumsumexp, cummax, cummin, trapezoid, cumulative_trapezoid, nanmean, renorm.
"""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor
from .. import creation as C
from .. import math as M
from .. import shape as S
from ._common import axis_arg, float_arg, tensor_arg
from .arith import cumsum, nansum


def _flat_or_axis(name: str, x: Tensor, axis: Any) -> tuple[Tensor, int]:
    if axis is None:
        return x.reshape((-1,)), 0
    return x, axis_arg(name, axis, x.ndim)


def logcumsumexp(x: Tensor, axis: int | None = None, dtype: Any = None, name: str | None = None) -> Tensor:
    """The running ``log(sum(exp(x)))`` along ``axis``, without overflow.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        axis (int, optional): the axis; ``None``: over the flattened ``x``.
        dtype (str | np.dtype, optional): cast ``x`` to this first.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``x``'s shape (1-d when ``axis`` is ``None``).

    Example:
        >>> import framework as fw
        >>> fw.logcumsumexp(fw.to_tensor([0.0, 0.0, 1000.0])).tolist()
        [0.0, 0.6931471824645996, 1000.0]
    """
    x = tensor_arg("logcumsumexp", x)
    x = float_arg("logcumsumexp", M.cast(x, dtype) if dtype is not None else x)
    x, ax = _flat_or_axis("logcumsumexp", x, axis)
    if x.ndim == 0 or x.shape[ax] == 0:
        return x
    m = _running(M.maximum, x, ax).detach()  # the running max: every exp(x - m) <= 1
    m = M.where(M.isinf(m), 0.0, m)
    # log(sum_j exp(x_j - m_i)) + m_i with m_i the max up to i: rebase each prefix sum on m_i
    step = M.exp(x - m)
    prev = S.pad_raw(S.slice_raw(m, (0,) * x.ndim, _stop(x, ax, -1), (1,) * x.ndim), _pads(x, ax), 0.0)
    first = _first_mask(x, ax)
    scale = M.where(first, 1.0, M.exp(prev - m))
    acc = _rescaled_sum(step, scale, ax)
    return M.log(acc) + m


def _stop(x: Tensor, ax: int, delta: int) -> tuple[int, ...]:
    stops = list(x.shape)
    stops[ax] += delta
    return tuple(stops)


def _pads(x: Tensor, ax: int) -> tuple[tuple[int, int], ...]:
    pads = [(0, 0)] * x.ndim
    pads[ax] = (1, 0)
    return tuple(pads)


def _first_mask(x: Tensor, ax: int) -> Tensor:
    shape = [1] * x.ndim
    shape[ax] = x.shape[ax]
    return (C.arange(x.shape[ax], device=x.device) == 0).reshape(shape)


def _rescaled_sum(step: Tensor, scale: Tensor, ax: int) -> Tensor:
    """acc_i = acc_{i-1} * scale_i + step_i, as products of scales (a log-free linear scan)."""
    # acc_i = P_i * sum_{j<=i} step_j / P_j with P_i = prod_{k<=i} scale_k; scale_k <= 1 can
    # underflow P, so scan in halves: the doubling form of the linear recurrence instead
    a, b = scale, step
    n, k = step.shape[ax], 1
    while k < n:
        a_prev = _shift(a, ax, k, 1.0)
        b_prev = _shift(b, ax, k, 0.0)
        b = b + a * b_prev
        a = a * a_prev
        k *= 2
    return b


def _shift(x: Tensor, ax: int, k: int, fill: float) -> Tensor:
    pads = [(0, 0)] * x.ndim
    pads[ax] = (k, 0)
    return S.pad_raw(S.slice_raw(x, (0,) * x.ndim, _stop(x, ax, -k), (1,) * x.ndim), tuple(pads), fill)


def _running(op: Any, x: Tensor, ax: int) -> Tensor:
    n, k = x.shape[ax], 1
    while k < n:
        x = op(x, _shift_edge(x, ax, k))
        k *= 2
    return x


def _shift_edge(x: Tensor, ax: int, k: int) -> Tensor:
    """``x`` moved ``k`` along ``ax``, the first ``k`` entries repeated from entry 0."""
    head_stop = list(x.shape)
    head_stop[ax] = 1
    head = S.slice_raw(x, (0,) * x.ndim, tuple(head_stop), (1,) * x.ndim)
    shape = list(x.shape)
    shape[ax] = k
    body = S.slice_raw(x, (0,) * x.ndim, _stop(x, ax, -k), (1,) * x.ndim)
    return S.concat([head.expand(tuple(shape)), body], axis=ax)


def _cum_extreme(name: str, x: Tensor, axis: Any, dtype: Any, better: Any) -> tuple[Tensor, Tensor]:
    x = tensor_arg(name, x)
    d = _dt.as_dtype(dtype, name)
    if d.name not in ("int32", "int64"):
        raise OpArgumentError(f"[{name}] dtype must be int32 or int64, got {d}")
    x, ax = _flat_or_axis(name, x, axis)
    if x.ndim == 0:
        return x, M.cast(C.zeros_like(x), d)
    shape = [1] * x.ndim
    shape[ax] = x.shape[ax]
    idx = C.arange(x.shape[ax], device=x.device).reshape(shape).expand(x.shape)
    v, i = x, idx
    n, k = x.shape[ax], 1
    floating = x.dtype.kind in "fc"
    while k < n:  # combine each prefix with the one k before it; ties keep the later index
        pv, pi = _shift_edge(v, ax, k), _shift_edge(i, ax, k)
        take_prev = better(pv, v)
        if floating:  # a NaN propagates from where it first came, as Paddle's does
            take_prev = M.logical_or(take_prev, M.isnan(pv))
        v = M.where(take_prev, pv, v)
        i = M.where(take_prev, pi, i)
        k *= 2
    return v, M.cast(i, d)


def cummax(
    x: Tensor, axis: int | None = None, dtype: Any = "int64", name: str | None = None
) -> tuple[Tensor, Tensor]:
    """The running maximum along ``axis`` and where it was found.

    The last index wins on ties; a NaN propagates, with the index of the first NaN, as in
    Paddle.

    Args:
        x (Tensor): the input.
        axis (int, optional): the axis; ``None``: over the flattened ``x``.
        dtype (str): the index dtype, int32 or int64.
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor]: the values (like ``x``, 1-d for ``axis=None``) and their indices.

    Example:
        >>> import framework as fw
        >>> v, i = fw.cummax(fw.to_tensor([1, 3, 3, 2, 5]))
        >>> v.tolist(), i.tolist()
        ([1, 3, 3, 3, 5], [0, 1, 2, 2, 4])
    """
    return _cum_extreme("cummax", x, axis, dtype, lambda prev, cur: prev > cur)


def cummin(
    x: Tensor, axis: int | None = None, dtype: Any = "int64", name: str | None = None
) -> tuple[Tensor, Tensor]:
    """The running minimum along ``axis`` and where it was found.

    The last index wins on ties; a NaN propagates, with the index of the first NaN, as in
    Paddle.

    Args:
        x (Tensor): the input.
        axis (int, optional): the axis; ``None``: over the flattened ``x``.
        dtype (str): the index dtype, int32 or int64.
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor]: the values (like ``x``, 1-d for ``axis=None``) and their indices.

    Example:
        >>> import framework as fw
        >>> v, i = fw.cummin(fw.to_tensor([3, 1, 2, 1, 0]))
        >>> v.tolist(), i.tolist()
        ([3, 1, 1, 1, 0], [0, 1, 1, 3, 4])
    """
    return _cum_extreme("cummin", x, axis, dtype, lambda prev, cur: prev < cur)


def _trapezoid_parts(name: str, y: Tensor, x: Any, dx: Any, axis: int) -> tuple[Tensor, Tensor]:
    """The mean heights ``(y_i + y_{i+1}) / 2`` and the widths along ``axis``."""
    y = float_arg(name, y, "y")
    ax = axis_arg(name, axis, y.ndim)
    n = y.shape[ax]
    lo = S.slice_raw(y, (0,) * y.ndim, _stop(y, ax, -1), (1,) * y.ndim)
    starts = [0] * y.ndim
    starts[ax] = 1
    hi = S.slice_raw(y, tuple(starts), y.shape, (1,) * y.ndim)
    if x is not None and dx is not None:
        raise OpArgumentError(f"[{name}] give x or dx, not both")
    if x is None:
        width: Any = 1.0 if dx is None else float(dx)
    else:
        x = float_arg(name, x, "x")
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[ax] = n
            x = x.reshape(shape)
        xa = axis_arg(name, axis, x.ndim)
        xs = [0] * x.ndim
        xs[xa] = 1
        width = S.slice_raw(x, tuple(xs), x.shape, (1,) * x.ndim) - S.slice_raw(
            x, (0,) * x.ndim, _stop(x, xa, -1), (1,) * x.ndim
        )
    return (lo + hi) * 0.5, width


def trapezoid(
    y: Tensor, x: Tensor | None = None, dx: float | None = None, axis: int = -1, name: str | None = None
) -> Tensor:
    """The integral of ``y`` along ``axis`` by the trapezoidal rule.

    Args:
        y (Tensor): the sampled values.
        x (Tensor, optional): the sample points (1-d, or like ``y``).
        dx (float, optional): the spacing when ``x`` is not given; default 1.
        axis (int): the axis to integrate along.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``y``'s shape without ``axis``.

    Example:
        >>> import framework as fw
        >>> fw.trapezoid(fw.to_tensor([1.0, 2.0, 3.0]), dx=2.0).item()
        8.0
    """
    mid, width = _trapezoid_parts("trapezoid", y, x, dx, axis)
    return M.sum(mid * width, axis=axis)


def cumulative_trapezoid(
    y: Tensor, x: Tensor | None = None, dx: float | None = None, axis: int = -1, name: str | None = None
) -> Tensor:
    """The running integral of ``y`` along ``axis`` by the trapezoidal rule.

    Args:
        y (Tensor): the sampled values.
        x (Tensor, optional): the sample points (1-d, or like ``y``).
        dx (float, optional): the spacing when ``x`` is not given; default 1.
        axis (int): the axis to integrate along.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``y``'s shape with ``axis`` one shorter.

    Example:
        >>> import framework as fw
        >>> fw.cumulative_trapezoid(fw.to_tensor([1.0, 2.0, 3.0])).tolist()
        [1.5, 4.0]
    """
    mid, width = _trapezoid_parts("cumulative_trapezoid", y, x, dx, axis)
    return cumsum(mid * width, axis=axis)


def nanmean(x: Tensor, axis: Any = None, keepdim: bool = False, name: str | None = None) -> Tensor:
    """Mean of ``x`` over ``axis``, NaNs left out (NaN where every entry is NaN).

    Args:
        x (Tensor): a float input.
        axis (int | list[int], optional): the axes to reduce; ``None``: all of them.
        keepdim (bool): keep the reduced axes, with size 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the means.

    Example:
        >>> import framework as fw
        >>> fw.nanmean(fw.to_tensor([[1.0, float("nan")], [3.0, 4.0]]), axis=1).tolist()
        [1.0, 3.5]
    """
    x = float_arg("nanmean", x)
    count = M.sum(M.cast(~M.isnan(x), x.dtype), axis=axis, keepdim=keepdim)
    return nansum(x, axis=axis, keepdim=keepdim) / count


def renorm(x: Tensor, p: float, axis: int, max_norm: float) -> Tensor:
    """``x`` with each slice along ``axis`` whose ``p``-norm exceeds ``max_norm`` scaled down to it.

    Args:
        x (Tensor): a float input.
        p (float): the norm's order.
        axis (int): the dim whose slices are renormalized (each ``x[..., i, ...]``).
        max_norm (float): the largest norm kept.

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.renorm(fw.to_tensor([[3.0, 4.0], [0.3, 0.4]]), p=2, axis=0, max_norm=1.0).tolist()
        [[0.6000000238418579, 0.800000011920929], [0.30000001192092896, 0.4000000059604645]]
    """
    x = float_arg("renorm", x)
    ax = axis_arg("renorm", axis, x.ndim)
    others = [d for d in range(x.ndim) if d != ax]
    norm = M.pow(M.sum(M.pow(M.abs(x), float(p)), axis=others, keepdim=True), 1.0 / float(p))
    factor = M.where(norm > max_norm, max_norm / (norm + 1e-7), 1.0)
    return x * factor


def reduce_as(x: Tensor, target: Tensor, name: str | None = None) -> Tensor:
    """``x`` summed down to ``target``'s shape (the inverse of broadcasting ``target`` to ``x``).

    Args:
        x (Tensor): the input.
        target (Tensor): gives the shape; it must broadcast to ``x``'s.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``target``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.reduce_as(fw.ones([2, 3, 4]), fw.zeros([3, 1])).tolist()
        [[8.0], [8.0], [8.0]]
    """
    x = tensor_arg("reduce_as", x)
    shape = tensor_arg("reduce_as", target, "target").shape
    lead = x.ndim - len(shape)
    if lead < 0 or any(t not in (1, n) for t, n in zip(shape, x.shape[lead:], strict=True)):
        raise OpArgumentError(f"[reduce_as] target shape {shape} does not broadcast to x's {x.shape}")
    axes = list(range(lead)) + [lead + i for i, t in enumerate(shape) if t == 1 and x.shape[lead + i] != 1]
    return M.sum(x, axis=axes, keepdim=True).reshape(shape) if axes else x
