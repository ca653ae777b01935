"""Sorting and order statistics: argsort is the ``argsort`` primitive (a stable O(n log n)
sort of the last axis in every plugin); sort, kthvalue, topk, median and quantile are built
on it, and mode, searchsorted and index_sample from comparisons and reductions, all on the
device; ``unique`` and ``unique_consecutive`` (whose result shape depends on the values) read
the values on the host.

Order: stable (equal values keep their order; -0.0 equals +0.0), and NaN is greater than every
number: last ascending, first descending (numpy's and Paddle's rule). A median or quantile of
values with a NaN is NaN, as in numpy and Paddle.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor, to_tensor
from .. import creation as C
from .. import indexing as I
from .. import math as M
from .. import shape as S
from ..base import OPS, apply1
from ..indexing import take_along_axis
from ._common import axis_arg, float_arg, store_out, tensor_arg


def argsort(
    x: Tensor, axis: int = -1, descending: bool = False, stable: bool = True, name: str | None = None
) -> Tensor:
    """The indices that sort ``x`` along ``axis`` (stable: equal values keep their order).

    NaN sorts as the greatest value: last ascending, first descending (numpy's and Paddle's
    rule). O(n log n) on every device (the ``argsort`` primitive).

    Args:
        x (Tensor): the input.
        axis (int): the axis.
        descending (bool): largest first (equal values still keep their order).
        stable (bool): Paddle's argument; the sort is always stable.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: int64, of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([3, 1, 2, 1])
        >>> fw.argsort(x)
        Tensor(shape=[4], dtype=int64, device=cpu:0,
               [1, 3, 2, 0])
        >>> fw.argsort(x, descending=True).tolist()
        [0, 2, 1, 3]
        >>> fw.argsort(fw.to_tensor([3.0, float("nan"), 1.0])).tolist()
        [2, 0, 1]
    """
    x = tensor_arg("argsort", x)
    if x.ndim == 0:
        return C.zeros([], dtype="int64", device=x.device)
    ax = axis_arg("argsort", axis, x.ndim)
    last = x.ndim - 1
    t = x.detach().swapaxes(ax, last) if ax != last else x.detach()
    out = apply1(OPS["argsort"], [t], {"descending": bool(descending)})
    return out.swapaxes(ax, last) if ax != last else out


def sort(
    x: Tensor, axis: int = -1, descending: bool = False, stable: bool = True, name: str | None = None
) -> Tensor:
    """``x`` sorted along ``axis`` (stable; differentiable, the gradient goes back to each element).

    NaN sorts as the greatest value: last ascending, first descending.

    Args:
        x (Tensor): the input.
        axis (int): the axis.
        descending (bool): largest first.
        stable (bool): Paddle's argument; the sort is always stable.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.sort(fw.to_tensor([3, 1, 2, 1]))
        Tensor(shape=[4], dtype=int64, device=cpu:0,
               [1, 1, 2, 3])
        >>> fw.sort(fw.to_tensor([[3.0, 1.0], [0.0, 2.0]]), axis=0, descending=True).tolist()
        [[3.0, 2.0], [0.0, 1.0]]
        >>> fw.sort(fw.to_tensor([3.0, float("nan"), 1.0])).tolist()
        [1.0, 3.0, nan]
    """
    x = tensor_arg("sort", x)
    if x.ndim == 0:
        return x
    return I.take_along_axis(x, argsort(x, axis, descending), axis_arg("sort", axis, x.ndim))


def kthvalue(
    x: Tensor, k: int, axis: int = -1, keepdim: bool = False, name: str | None = None
) -> tuple[Tensor, Tensor]:
    """The ``k``-th smallest value of ``x`` along ``axis`` (1-based), and its index.

    Args:
        x (Tensor): the input.
        k (int): in ``[1, x.shape[axis]]``.
        axis (int): the axis.
        keepdim (bool): keep the reduced axis, with size 1.
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor]: the values and their int64 indices.

    Example:
        >>> import framework as fw
        >>> value, index = fw.kthvalue(fw.to_tensor([5.0, 1.0, 4.0, 2.0]), 2)
        >>> value
        Tensor(shape=[], dtype=float32, device=cpu:0,
               2.)
        >>> index.item()
        3
    """
    x = tensor_arg("kthvalue", x)
    ax = axis_arg("kthvalue", axis, x.ndim)
    n = x.shape[ax] if x.ndim else 1
    if not isinstance(k, int) or not 1 <= k <= n:
        raise OpArgumentError(f"[kthvalue] k must be an int in [1, {n}] (the size of axis {ax}), got {k!r}")
    idx = S.slice_raw(argsort(x, ax), *_one(x.shape, ax, k - 1))
    val = I.take_along_axis(x, idx, ax)
    return (val, idx) if keepdim else (val.squeeze(ax), idx.squeeze(ax))


def topk(
    x: Tensor, k: int, axis: int = -1, largest: bool = True, sorted: bool = True, name: str | None = None
) -> tuple[Tensor, Tensor]:
    """The ``k`` largest (or smallest) values of ``x`` along ``axis``, and their indices.

    The first ``k`` of a stable sort: ties go to the lower index; NaN counts as the largest
    value (first of the largest, last of the smallest), as in Paddle.

    Args:
        x (Tensor): the input.
        k (int): how many, in ``[1, x.shape[axis]]``.
        axis (int): the axis.
        largest (bool): the largest values, else the smallest.
        sorted (bool): Paddle's argument; the values always come sorted (largest, or smallest,
            first).
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor]: the values and their int64 indices, ``k`` long along ``axis``.

    Example:
        >>> import framework as fw
        >>> values, indices = fw.topk(fw.to_tensor([1, 5, 3, 5, 2]), 2)
        >>> values
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [5, 5])
        >>> indices.tolist()
        [1, 3]
        >>> fw.topk(fw.to_tensor([[1, 5, 3], [4, 0, 2]]), 1, largest=False)[0].tolist()
        [[1], [0]]
    """
    x = tensor_arg("topk", x)
    ax = axis_arg("topk", axis, x.ndim)
    n = x.shape[ax] if x.ndim else 1
    if not isinstance(k, int) or not 0 < k <= n:
        raise OpArgumentError(f"[topk] k must be an int in [1, {n}] (the size of axis {ax}), got {k!r}")
    if x.ndim == 0:  # one element: itself, at index 0 (0-d, as Paddle)
        zero = C.zeros([1], dtype="int64", device=x.device)
        return take_along_axis(x.reshape((1,)), zero, 0).reshape(()), zero.reshape(())
    index = S.slice_raw(argsort(x, ax, descending=largest), *_first(x.shape, ax, k))
    return take_along_axis(x, index, ax), index


def _first(
    shape: tuple[int, ...], ax: int, k: int
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    stops = list(shape)
    stops[ax] = k
    return (0,) * len(shape), tuple(stops), (1,) * len(shape)


def _one(shape: tuple[int, ...], ax: int, i: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    starts = [0] * len(shape)
    stops = list(shape)
    starts[ax], stops[ax] = i, i + 1
    return tuple(starts), tuple(stops), (1,) * len(shape)


def _nan_if_any(src: Tensor, ax: int, out: Tensor) -> Tensor:
    """``out`` (reduced to size 1 along ``ax``), NaN where that row of ``src`` holds a NaN: the
    median and quantiles of values with a NaN are NaN (numpy, Paddle), not a sorted neighbour."""
    if src.dtype.kind != "f" and src.dtype != _dt.bfloat16:
        return out
    return M.where(M.any(src != src, axis=ax, keepdim=True), float("nan"), out)


def _flat_axis(name: str, x: Tensor, axis: Any) -> tuple[Tensor, int]:
    if axis is None:
        return x.reshape((-1,)), 0
    return x, axis_arg(name, axis, x.ndim)


def reduced_rows(name: str, x: Tensor, axis: Any) -> tuple[Tensor, tuple[int, ...], tuple[int, ...]]:
    """``x`` with the ``axis`` dims moved last and flattened into one, and the shapes a
    reduction gives without and with ``keepdim``."""
    axes = M.normalize_axes(name, axis, x.ndim)
    if not axes:
        raise OpArgumentError(f"[{name}] axis must name at least one dimension, got {axis!r}")
    rest = [a for a in range(x.ndim) if a not in axes]
    kept = tuple(x.shape[a] for a in rest)
    keep_shape = tuple(1 if a in axes else x.shape[a] for a in range(x.ndim))
    rows = S.transpose(x, rest + list(axes)).reshape(kept + (-1,)) if x.ndim else x.reshape((1,))
    return rows, kept, keep_shape


def median(
    x: Tensor, axis: int | None = None, keepdim: bool = False, mode: str = "avg", name: str | None = None
) -> Tensor:
    """The median of ``x`` along ``axis``.

    Args:
        x (Tensor): the input; with ``mode="avg"``, integers are cast to the default float dtype.
        axis (int, optional): the axis; ``None``: all elements.
        keepdim (bool): keep the reduced axis, with size 1.
        mode (str): ``"avg"``: the mean of the two middle values of an even count; ``"min"``: the
            lower one.
        name: ignored (Paddle's signature).

    Returns:
        Tensor | tuple[Tensor, Tensor]: the medians; with ``mode="min"`` and an ``axis``, also
        their int64 indices along ``axis`` (Paddle's).

    Example:
        >>> import framework as fw
        >>> fw.median(fw.to_tensor([5.0, 1.0, 4.0, 2.0]))
        Tensor(shape=[], dtype=float32, device=cpu:0,
               3.)
        >>> fw.median(fw.to_tensor([5, 1, 4, 2]), mode="min").item()
        2
        >>> fw.median(fw.to_tensor([[5.0, 1.0, 4.0], [2.0, 2.0, 8.0]]), axis=1).tolist()
        [4.0, 2.0]
        >>> fw.median(fw.to_tensor([1.0, float("nan"), 2.0])).item()
        nan
    """
    if mode not in ("avg", "min"):
        raise OpArgumentError(f"[median] mode must be 'avg' or 'min', got {mode!r}")
    x = float_arg("median", x) if mode == "avg" else tensor_arg("median", x)
    src, ax = _flat_axis("median", x, axis)
    n = src.shape[ax]
    if n == 0:
        raise OpArgumentError(f"[median] cannot take the median of an empty axis (shape {x.shape})")
    s = sort(src, ax)
    lo = S.slice_raw(s, *_one(s.shape, ax, (n - 1) // 2))
    out = _nan_if_any(
        src, ax, lo if mode == "min" or n % 2 else (lo + S.slice_raw(s, *_one(s.shape, ax, n // 2))) * 0.5
    )
    if axis is None:
        return out.reshape((1,) * x.ndim) if keepdim else out.reshape(())
    if mode == "min":
        # Paddle's: the lower median's index along axis, or the first NaN's in a row holding one
        pos = S.slice_raw(argsort(src, ax), *_one(s.shape, ax, (n - 1) // 2))
        if src.dtype.kind == "f":
            nan = M.isnan(src)
            pos = M.where(M.any(nan, axis=ax, keepdim=True), M.argmax(nan, axis=ax, keepdim=True), pos)
        return (out, pos) if keepdim else (out.squeeze(ax), pos.squeeze(ax))
    return out if keepdim else out.squeeze(ax)


def quantile_levels(name: str, q: Any, interpolation: str) -> list[float]:
    """The quantile levels ``q`` as a list, each checked to lie in [0, 1], and ``interpolation`` checked."""
    if interpolation not in ("linear", "lower", "higher", "nearest", "midpoint"):
        raise OpArgumentError(
            f"[{name}] interpolation must be linear/lower/higher/nearest/midpoint, got {interpolation!r}"
        )
    qs = [q] if isinstance(q, (int, float)) else list(q.tolist() if isinstance(q, Tensor) else q)
    if any(not 0 <= v <= 1 for v in qs):
        raise OpArgumentError(f"[{name}] q must be in [0, 1], got {qs}")
    return qs


def quantile(
    x: Tensor,
    q: Any,
    axis: Any = None,
    keepdim: bool = False,
    interpolation: str = "linear",
    name: str | None = None,
) -> Tensor:
    """The ``q``-th quantiles of ``x`` along ``axis``, interpolated as numpy does.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        q (float | list[float] | Tensor): in ``[0, 1]``; a list gives one result per entry,
            stacked first.
        axis (int | list[int], optional): the axis, or several (reduced together); ``None``: all
            elements.
        keepdim (bool): keep the reduced axis, with size 1.
        interpolation (str): ``"linear"``, ``"lower"``, ``"higher"``, ``"nearest"`` or
            ``"midpoint"``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the quantiles.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1.0, 2.0, 3.0, 4.0])
        >>> fw.quantile(x, 0.5)
        Tensor(shape=[], dtype=float32, device=cpu:0,
               2.5)
        >>> fw.quantile(x, [0.25, 1.0]).tolist()
        [1.75, 4.0]
        >>> fw.quantile(x, 0.5, interpolation="lower").item()
        2.0
    """
    qs = quantile_levels("quantile", q, interpolation)
    x = float_arg("quantile", x)
    if isinstance(axis, (list, tuple)):
        rows, kept, keep_shape = reduced_rows("quantile", x, axis)
        out = quantile(rows, q, axis=-1, interpolation=interpolation)
        lead = () if isinstance(q, (int, float)) else (out.shape[0],)
        return out.reshape(lead + (keep_shape if keepdim else kept))
    src, ax = _flat_axis("quantile", x, axis)
    n = src.shape[ax]
    s = sort(src, ax)
    outs = []
    for v in qs:
        pos = v * (n - 1)
        lo, hi = int(np.floor(pos)), int(np.ceil(pos))
        if interpolation == "nearest":
            lo = hi = int(np.round(pos))
        a = S.slice_raw(s, *_one(s.shape, ax, lo))
        b = S.slice_raw(s, *_one(s.shape, ax, hi))
        w = {"linear": pos - lo, "lower": 0.0, "higher": 1.0, "nearest": 0.0, "midpoint": 0.5}[interpolation]
        r = _nan_if_any(src, ax, a + (b - a) * w if w else a)
        if axis is None:
            r = r.reshape((1,) * x.ndim) if keepdim else r.reshape(())
        elif not keepdim:
            r = r.squeeze(ax)
        outs.append(r)
    return outs[0] if isinstance(q, (int, float)) else S.stack(outs, axis=0)


def mode(x: Tensor, axis: int = -1, keepdim: bool = False, name: str | None = None) -> tuple[Tensor, Tensor]:
    """The most frequent value of ``x`` along ``axis``, and the index of its last occurrence.

    Of equally frequent values, the smallest wins.

    Args:
        x (Tensor): the input.
        axis (int): the axis.
        keepdim (bool): keep the reduced axis, with size 1.
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor]: the values and their int64 indices.

    Example:
        >>> import framework as fw
        >>> values, indices = fw.mode(fw.to_tensor([[1, 1, 3], [2, 3, 3]]))
        >>> values
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [1, 3])
        >>> indices.tolist()
        [1, 2]
    """
    x = tensor_arg("mode", x)
    ax = axis_arg("mode", axis, x.ndim)
    t = x.swapaxes(ax, -1) if ax != x.ndim - 1 else x
    s = sort(t, -1)
    counts = M.sum(M.cast(s.unsqueeze(-1) == s.unsqueeze(-2), _dt.int64), axis=-1)
    best = M.argmax(counts, axis=-1, keepdim=True)
    val = I.take_along_axis(s, best, t.ndim - 1)
    n = t.shape[-1]
    pos = C.arange(n, device=x.device)
    idx = M.max(M.where(t.detach() == val.detach(), pos, -1), axis=-1, keepdim=True)
    if ax != x.ndim - 1:
        val, idx = val.swapaxes(ax, -1), idx.swapaxes(ax, -1)
    return (val, idx) if keepdim else (val.squeeze(ax), idx.squeeze(ax))


def searchsorted(
    sorted_sequence: Tensor,
    values: Tensor,
    out_int32: bool = False,
    right: bool = False,
    name: str | None = None,
) -> Tensor:
    """Where ``values`` would be inserted in the last axis of ``sorted_sequence`` to keep it sorted.

    Args:
        sorted_sequence (Tensor): ascending along the last axis; its leading dims match those of
            ``values`` when it has more than one dim.
        values (Tensor): the values to place.
        out_int32 (bool): int32 positions, else int64.
        right (bool): after entries equal to the value, else before them.
        name: ignored (Paddle's signature).

    NaN counts as larger than every number (where Paddle's sort puts it).

    Returns:
        Tensor: positions, of ``values``'s shape.

    Example:
        >>> import framework as fw
        >>> seq = fw.to_tensor([1, 3, 5, 7])
        >>> fw.searchsorted(seq, fw.to_tensor([3, 6]))
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [1, 3])
        >>> fw.searchsorted(seq, fw.to_tensor([3, 6]), right=True).tolist()
        [2, 3]
    """
    seq = tensor_arg("searchsorted", sorted_sequence, "sorted_sequence")
    v = tensor_arg("searchsorted", values, "values")
    if seq.ndim > 1 and seq.shape[:-1] != v.shape[:-1]:
        raise OpArgumentError(
            f"[searchsorted] leading dims of sorted_sequence {seq.shape[:-1]} and values {v.shape[:-1]} differ"
        )
    a, b = M._operands("searchsorted", seq.unsqueeze(-2), v.unsqueeze(-1))
    hit = (a <= b) if right else (a < b)
    if a.dtype.kind in "fc":  # NaN sorts after everything, as in Paddle's sort (and numpy's)
        na, nb = M.isnan(a), M.isnan(b)
        hit = M.logical_and(M.logical_not(na), M.logical_or(hit, nb))
        if right:
            hit = M.logical_or(hit, nb)
    out = M.sum(M.cast(hit, _dt.int64), axis=-1)
    return out.astype("int32") if out_int32 else out


def index_sample(x: Tensor, index: Tensor) -> Tensor:
    """Per-row gather: ``out[i, j] = x[i, index[i, j]]``.

    Args:
        x (Tensor): 2-d.
        index (Tensor): 2-d integers, as many rows as ``x``.

    Returns:
        Tensor: of ``index``'s shape.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2, 3], [4, 5, 6]])
        >>> fw.index_sample(x, fw.to_tensor([[2, 0], [1, 1]]))
        Tensor(shape=[2, 2], dtype=int64, device=cpu:0,
               [[3, 1],
                [5, 5]])
    """
    x = tensor_arg("index_sample", x)
    index = tensor_arg("index_sample", index, "index")
    if x.ndim != 2 or index.ndim != 2 or index.shape[0] != x.shape[0]:
        raise OpArgumentError(
            f"[index_sample] x and index must be 2-d with equal rows, got {x.shape} and {index.shape}"
        )
    # Paddle's index_sample takes no negative index (take_along_axis does)
    index = I.checked_index("index_sample", index, x.shape[1], f"index (rows of length {x.shape[1]})")
    return I.take_along_axis(x, index, 1)


# -- value-dependent shapes (host) ------------------------------------------------------------------
def unique(
    x: Tensor,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: int | None = None,
    dtype: Any = "int64",
    name: str | None = None,
) -> Any:
    """The sorted unique values of ``x`` (or slices along ``axis``), with indices and counts when asked.

    Read on the host: the size of the result depends on the values.

    Args:
        x (Tensor): the input; flattened unless ``axis`` is given.
        return_index (bool): also the index of each unique value's first occurrence.
        return_inverse (bool): also, per element of ``x``, the index of its value in the result.
        return_counts (bool): also how often each unique value occurs.
        axis (int, optional): unique slices along this axis.
        dtype (str | np.dtype): the dtype of the indices and counts.
        name: ignored (Paddle's signature).

    Returns:
        Tensor | tuple[Tensor, ...]: the unique values, then what was asked for, in that order.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([2, 1, 2, 3])
        >>> fw.unique(x)
        Tensor(shape=[3], dtype=int64, device=cpu:0,
               [1, 2, 3])
        >>> [t.tolist() for t in fw.unique(x, return_index=True, return_inverse=True, return_counts=True)]
        [[1, 2, 3], [1, 0, 3], [1, 0, 1, 2], [1, 2, 1]]
    """
    x = tensor_arg("unique", x)
    arr = x.numpy()
    if axis is not None:
        axis = axis_arg("unique", axis, x.ndim)
    # NOTE: NaNs stay distinct (NaN != NaN), as in Paddle; numpy would merge them
    vals, idx, inv, cnt = np.unique(
        arr, return_index=True, return_inverse=True, return_counts=True, axis=axis, equal_nan=False
    )
    out = [to_tensor(vals, device=x.device)]
    d = _dt.as_dtype(dtype, "unique")
    for want, a in ((return_index, idx), (return_inverse, inv.reshape(-1)), (return_counts, cnt)):
        if want:
            out.append(to_tensor(a.astype(d), device=x.device))
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(
    x: Tensor,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: int | None = None,
    dtype: Any = "int64",
    name: str | None = None,
) -> Any:
    """Collapse runs of equal consecutive values of ``x`` (or slices along ``axis``) to one.

    Read on the host: the size of the result depends on the values.

    Args:
        x (Tensor): the input; flattened unless ``axis`` is given.
        return_inverse (bool): also, per element of ``x``, the index of its run in the result.
        return_counts (bool): also the length of each run.
        axis (int, optional): collapse slices along this axis.
        dtype (str | np.dtype): the dtype of the indices and counts.
        name: ignored (Paddle's signature).

    Returns:
        Tensor | tuple[Tensor, ...]: the values, then what was asked for, in that order.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1, 1, 2, 2, 1])
        >>> fw.unique_consecutive(x)
        Tensor(shape=[3], dtype=int64, device=cpu:0,
               [1, 2, 1])
        >>> [t.tolist() for t in fw.unique_consecutive(x, return_inverse=True, return_counts=True)]
        [[1, 2, 1], [0, 0, 1, 1, 2], [2, 2, 1]]
    """
    x = tensor_arg("unique_consecutive", x)
    arr = x.numpy()
    if axis is None:
        arr, ax = arr.reshape(-1), 0
    else:
        ax = axis_arg("unique_consecutive", axis, x.ndim)
    moved = np.moveaxis(arr, ax, 0)
    n = moved.shape[0]
    if n == 0:
        starts = np.zeros(0, dtype=np.int64)
    else:
        change = np.ones(n, dtype=bool)
        if n > 1:
            change[1:] = (moved[1:] != moved[:-1]).reshape(n - 1, -1).any(axis=1)
        starts = np.flatnonzero(change)
    vals = np.moveaxis(moved[starts], 0, ax)
    d = _dt.as_dtype(dtype, "unique_consecutive")
    out = [to_tensor(np.ascontiguousarray(vals), device=x.device)]
    if return_inverse:
        out.append(to_tensor((np.cumsum(change) - 1 if n else np.zeros(0)).astype(d), device=x.device))
    if return_counts:
        out.append(to_tensor(np.diff(np.append(starts, n)).astype(d), device=x.device))
    return out[0] if len(out) == 1 else tuple(out)


def msort(input: Tensor, out: Tensor | None = None, name: str | None = None) -> Tensor:
    """``input`` sorted along its first axis (ascending, stable).

    Args:
        input (Tensor): at least 1-d.
        out (Tensor, optional): a tensor of the same shape that receives the result (it is
            rebound to it, as an in-place op is).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the sorted tensor (``out`` when given).

    Example:
        >>> import framework as fw
        >>> fw.msort(fw.to_tensor([[3, 1], [1, 2], [2, 0]])).tolist()
        [[1, 0], [2, 1], [3, 2]]
    """
    x = tensor_arg("msort", input, "input")
    if x.ndim == 0:
        raise OpArgumentError("[msort] input must have at least one dimension, got a 0-d tensor")
    return store_out("msort", sort(x, 0), out)


def argwhere(x: Tensor, name: str | None = None) -> Tensor:
    """The indices of the non-zero elements of ``x``, one row per element (read back to the host).

    Args:
        x (Tensor): the input.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: int64 ``[n, x.ndim]``.

    Example:
        >>> import framework as fw
        >>> fw.argwhere(fw.to_tensor([[1.0, 0.0], [0.0, 2.0]])).tolist()
        [[0, 0], [1, 1]]
    """
    return I.nonzero(tensor_arg("argwhere", x))
