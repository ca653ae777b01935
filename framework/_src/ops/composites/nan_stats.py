"""Order statistics that skip NaN (nanmedian, nanquantile) and the axis handling the order
statistics share: several reduced axes are moved last and flattened into one, the row.

Each row is sorted once (NaN sorts last); the positions read from it depend on the row's count
of numbers, so they are computed on the device and gathered with ``take_along_axis``.
"""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import math as M
from .. import shape as S
from ..indexing import take_along_axis
from ._common import float_arg, tensor_arg
from .sorting import argsort, quantile_levels, reduced_rows, sort


def _at(s: Tensor, pos: Tensor) -> Tensor:
    return take_along_axis(s, M.cast(pos, "int64"), axis=-1)


def nanmedian(
    x: Tensor, axis: Any = None, keepdim: bool = False, mode: str = "avg", name: str | None = None
) -> Any:
    """The median of the numbers of ``x`` along ``axis``, NaNs left out; NaN where all are NaN.

    Args:
        x (Tensor): the input.
        axis (int | list[int] | tuple[int], optional): the axes; ``None``: all elements.
        keepdim (bool): keep the reduced axes, with size 1.
        mode (str): ``"avg"``: the mean of the two middle numbers of an even count; ``"min"``:
            the lower one, and (for a single int ``axis``) its index too, -1 for an all-NaN row.
        name: ignored (Paddle's signature).

    Returns:
        Tensor | tuple[Tensor, Tensor]: the medians; with ``mode="min"`` and an int ``axis``,
        also their int64 indices along ``axis``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[float("nan"), 2.0, 3.0], [0.0, 1.0, 2.0]])
        >>> fw.nanmedian(x).item()
        2.0
        >>> fw.nanmedian(x, 0).tolist()
        [0.0, 1.5, 2.5]
        >>> v, i = fw.nanmedian(x, 1, mode="min")
        >>> v.tolist(), i.tolist()
        ([2.0, 1.0], [1, 1])
    """
    if mode not in ("avg", "min"):
        raise OpArgumentError(f"[nanmedian] mode must be 'avg' or 'min', got {mode!r}")
    x = tensor_arg("nanmedian", x)
    rows, kept, keep_shape = reduced_rows("nanmedian", x, axis)
    order = argsort(rows, axis=-1)
    s = take_along_axis(rows, order, axis=-1)
    count = M.sum(M.logical_not(M.isnan(rows)), axis=-1, keepdim=True).astype("int64")
    lo = M.floor_divide(M.maximum(count - 1, 0), 2)
    empty = count == 0
    low = M.where(empty, float("nan"), _at(s, lo))
    if mode == "avg":
        out = (low + _at(s, M.floor_divide(count, 2))) * 0.5
    else:
        out = low
    shape = keep_shape if keepdim else kept
    out = out.reshape(shape)
    if mode == "min" and isinstance(axis, int):
        idx = M.where(empty, -1, _at(order, lo)).reshape(shape)
        return out, idx
    return out


def nanquantile(
    x: Tensor,
    q: Any,
    axis: Any = None,
    keepdim: bool = False,
    interpolation: str = "linear",
    name: str | None = None,
) -> Tensor:
    """The ``q``-th quantiles of the numbers of ``x`` along ``axis``, NaNs left out.

    A row of NaNs only gives NaN.

    Args:
        x (Tensor): the input (integers read as the default float dtype); NaNs are skipped.
        q (float | list[float] | Tensor): the levels, as for :func:`quantile`.
        axis (int | list[int], optional): the axes reduced together; ``None``: all elements.
        keepdim (bool): keep the reduced axes, with size 1.
        interpolation (str): between the two nearest numbers, as for :func:`quantile`.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the quantiles (a leading dim for a list ``q``).

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1.0, 2.0, float("nan"), 4.0], [5.0, 6.0, 7.0, 8.0]])
        >>> fw.nanquantile(x, 0.5, axis=1).tolist()
        [2.0, 6.5]
    """
    qs = quantile_levels("nanquantile", q, interpolation)
    x = float_arg("nanquantile", x)
    rows, kept, keep_shape = reduced_rows("nanquantile", x, axis)
    s = sort(rows, -1)
    count = M.sum(M.logical_not(M.isnan(rows)), axis=-1, keepdim=True).astype(x.dtype)
    last = M.maximum(count - 1.0, 0.0)
    outs = []
    for v in qs:
        pos = last * v
        lo, hi = M.floor(pos), M.ceil(pos)
        if interpolation == "nearest":
            # numpy's rounding: halves to even
            lo = hi = M.round(pos)
        a, b = _at(s, lo), _at(s, hi)
        w = {"linear": pos - lo, "lower": 0.0, "higher": 1.0, "nearest": 0.0, "midpoint": 0.5}[interpolation]
        r = M.where(count == 0, float("nan"), a + (b - a) * w)
        outs.append(r.reshape(keep_shape if keepdim else kept))
    return outs[0] if isinstance(q, (int, float)) else S.stack(outs, axis=0)
