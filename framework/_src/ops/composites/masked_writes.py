"""Paddle's out-of-place writes into a region of a tensor, each a mask and a ``where`` over
existing ops (so each differentiates into both the tensor and the values): select_scatter,
slice_scatter, diagonal_scatter, index_fill, masked_scatter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adapter_api import OpArgumentError

from ...tensor import Tensor, to_tensor
from .. import creation as C
from .. import indexing as I
from .. import math as M
from .. import shape as S
from ._common import axis_arg, tensor_arg
from .arith import cumsum
from .grids import diag_embed


def _positions(x: Tensor, ax: int) -> Tensor:
    """0..n-1 along ``ax``, shaped to broadcast against ``x``."""
    shape = [1] * x.ndim
    shape[ax] = x.shape[ax]
    return C.arange(x.shape[ax], device=x.device).reshape(tuple(shape))


def _like(name: str, x: Tensor, v: Any) -> Tensor:
    v = v if isinstance(v, Tensor) else to_tensor(v, dtype=x.dtype, device=x.device)
    return v if v.dtype == x.dtype else M.cast(v, x.dtype)


def select_scatter(x: Tensor, values: Tensor, axis: int, index: int, name: str | None = None) -> Tensor:
    """A copy of ``x`` whose entry ``index`` along ``axis`` is ``values``.

    Args:
        x (Tensor): the input.
        values (Tensor): ``x``'s shape without ``axis``.
        axis (int): the dim.
        index (int): the entry along it (negative counts from the end).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.select_scatter(fw.zeros([2, 3]), fw.to_tensor([1.0, 2.0]), axis=1, index=1).tolist()
        [[0.0, 1.0, 0.0], [0.0, 2.0, 0.0]]
    """
    x = tensor_arg("select_scatter", x)
    ax = axis_arg("select_scatter", axis, x.ndim)
    n = x.shape[ax]
    if not -n <= index < n:
        raise OpArgumentError(f"[select_scatter] index {index} is out of range for dim {ax} of size {n}")
    v = _like("select_scatter", x, values)
    want = x.shape[:ax] + x.shape[ax + 1 :]
    if v.shape != want:
        raise OpArgumentError(f"[select_scatter] values must have shape {want}, got {v.shape}")
    return M.where(_positions(x, ax) == index % n, v.unsqueeze(ax), x)


def slice_scatter(
    x: Tensor,
    value: Tensor,
    axes: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    strides: Sequence[int],
    name: str | None = None,
) -> Tensor:
    """A copy of ``x`` whose strided slice ``x[starts:ends:strides]`` (along ``axes``) is ``value``.

    Args:
        x (Tensor): the input.
        value (Tensor): the slice's shape.
        axes (list[int]): the sliced dims.
        starts (list[int]): where each slice starts.
        ends (list[int]): where each ends (excluded).
        strides (list[int]): each step, >= 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.slice_scatter(fw.zeros([2, 4]), fw.ones([2, 2]), axes=[1], starts=[0], ends=[4], strides=[2]).tolist()
        [[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0]]
    """
    x = tensor_arg("slice_scatter", x)
    v = _like("slice_scatter", x, value)
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise OpArgumentError("[slice_scatter] axes, starts, ends and strides must have one entry each")
    spans = []
    slice_shape = list(x.shape)
    for a, s, e, st in zip(axes, starts, ends, strides, strict=True):
        ax = axis_arg("slice_scatter", a, x.ndim)
        n = x.shape[ax]
        s, e = (s + n if s < 0 else s), min(e + n if e < 0 else e, n)
        if st < 1:
            raise OpArgumentError(f"[slice_scatter] strides must be >= 1, got {st}")
        count = max(0, (e - s + st - 1) // st)
        slice_shape[ax] = count
        spans.append((ax, s, e, st, count))
    if (
        any(a not in (1, b) for a, b in zip((1,) * (x.ndim - v.ndim) + v.shape, slice_shape))
        or v.ndim > x.ndim
    ):
        raise OpArgumentError(
            f"[slice_scatter] value of shape {v.shape} does not broadcast to the slice's {tuple(slice_shape)}"
        )
    v = v.expand(tuple(slice_shape))  # value broadcasts to the slice (Paddle)
    mask = None
    for ax, s, e, st, count in spans:
        pos = _positions(x, ax)
        inside = (pos >= s) & (pos < e) & ((pos - s) % st == 0)
        mask = inside if mask is None else mask & inside
        src = M.clip((pos.reshape((-1,)) - s) // st, 0, max(count - 1, 0))
        v = I.take_rows(v, src, ax) if count else v
    return x if mask is None else M.where(mask, v, x)


def diagonal_scatter(
    x: Tensor, y: Tensor, offset: int = 0, axis1: int = 0, axis2: int = 1, name: str | None = None
) -> Tensor:
    """A copy of ``x`` whose ``offset`` diagonal in the ``(axis1, axis2)`` planes is ``y``.

    Args:
        x (Tensor): the input, at least 2-d.
        y (Tensor): the diagonal's shape (``x.diagonal(offset, axis1, axis2)``'s).
        offset (int): the diagonal (0 main, > 0 above, < 0 below).
        axis1 (int): the rows' dim.
        axis2 (int): the columns' dim.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.diagonal_scatter(fw.zeros([2, 3]), fw.to_tensor([1.0, 2.0]), offset=1).tolist()
        [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]]
    """
    x = tensor_arg("diagonal_scatter", x)
    a1, a2 = axis_arg("diagonal_scatter", axis1, x.ndim), axis_arg("diagonal_scatter", axis2, x.ndim)
    rows, cols = _positions(x, a1), _positions(x, a2)
    on = (cols - rows) == offset
    n = min(x.shape[a1] - max(-offset, 0), x.shape[a2] - max(offset, 0))
    v = _like("diagonal_scatter", x, y)
    if v.shape[-1] != max(n, 0):
        raise OpArgumentError(
            f"[diagonal_scatter] y must hold {max(n, 0)} entries in its last dim, got {v.shape}"
        )
    full = diag_embed(v, offset=offset, dim1=a1, dim2=a2)  # y on the diagonal of a square plane
    full = _crop_to(full, x.shape, [0] * x.ndim)
    return M.where(on, full, x)


def _crop_to(t: Tensor, shape: tuple[int, ...], starts: list[int]) -> Tensor:
    """``t`` cut (or zero-padded) to ``shape`` from the origin."""
    stops = [min(a, b) for a, b in zip(t.shape, shape, strict=True)]
    t = S.slice_raw(t, tuple(starts), tuple(stops), (1,) * t.ndim)
    pads = tuple((0, b - a) for a, b in zip(t.shape, shape, strict=True))
    return S.pad_raw(t, pads, 0) if any(p for _, p in pads) else t


def index_fill(x: Tensor, index: Tensor, axis: int, value: Any, name: str | None = None) -> Tensor:
    """A copy of ``x`` whose entries at ``index`` along ``axis`` are ``value``.

    Args:
        x (Tensor): the input.
        index (Tensor): 1-d integer positions along ``axis``.
        axis (int): the dim.
        value (float | Tensor): the fill value.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.index_fill(fw.zeros([2, 3]), fw.to_tensor([0, 2]), axis=1, value=5.0).tolist()
        [[5.0, 0.0, 5.0], [5.0, 0.0, 5.0]]
    """
    x = tensor_arg("index_fill", x)
    ax = axis_arg("index_fill", axis, x.ndim)
    idx = tensor_arg("index_fill", index, "index").reshape((-1,))
    idx = I.checked_index("index_fill", idx, x.shape[ax], f"index along dim {ax}", negative=True)
    hit = M.any(_positions(x, ax).unsqueeze(-1) == idx, axis=-1)
    return M.where(hit, _like("index_fill", x, value), x)


def masked_scatter(x: Tensor, mask: Tensor, value: Tensor, name: str | None = None) -> Tensor:
    """A copy of ``x`` whose entries where ``mask`` is True take ``value``'s entries in order.

    Args:
        x (Tensor): the input.
        mask (Tensor): bool, broadcast to ``x``.
        value (Tensor): at least as many entries as ``mask`` has True ones.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> m = fw.to_tensor([[True, False], [False, True]])
        >>> fw.masked_scatter(fw.zeros([2, 2]), m, fw.to_tensor([7.0, 8.0, 9.0])).tolist()
        [[7.0, 0.0], [0.0, 8.0]]
    """
    x = tensor_arg("masked_scatter", x)
    m = tensor_arg("masked_scatter", mask, "mask")
    if m.dtype.name != "bool":
        raise OpArgumentError(f"[masked_scatter] mask must be bool, got {m.dtype}")
    m = m.expand(x.shape) if m.shape != x.shape else m
    flat = m.reshape((-1,))
    order = cumsum(M.cast(flat, "int64"), axis=0) - 1  # the k-th True takes value[k]
    v = _like("masked_scatter", x, value).reshape((-1,))
    if int(M.sum(M.cast(flat, "int64")).item()) > v.shape[0]:
        raise OpArgumentError(f"[masked_scatter] mask has more True entries than value's {v.shape[0]}")
    taken = I.take_rows(v, M.clip(order, 0, max(v.shape[0] - 1, 0)), 0).reshape(x.shape)
    return M.where(m, taken, x)


def fill_diagonal_tensor(
    x: Tensor, y: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1, name: str | None = None
) -> Tensor:
    """:func:`diagonal_scatter` under Paddle's other name: ``x`` with the diagonal set to ``y``.

    Args:
        x (Tensor): the input, at least 2-d.
        y (Tensor): the diagonal's shape.
        offset (int): the diagonal (0 main, > 0 above, < 0 below).
        dim1 (int): the rows' dim.
        dim2 (int): the columns' dim.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.fill_diagonal_tensor(fw.zeros([2, 2]), fw.to_tensor([1.0, 2.0])).tolist()
        [[1.0, 0.0], [0.0, 2.0]]
    """
    return diagonal_scatter(x, y, offset, dim1, dim2)


def fill_diagonal(
    x: Tensor, value: Any, offset: int = 0, wrap: bool = False, name: str | None = None
) -> Tensor:
    """``x`` (2-d) with its ``offset`` diagonal set to ``value``; ``wrap`` restarts the diagonal
    below a square block of a tall matrix (every ``columns + 1`` rows).

    Args:
        x (Tensor): a 2-d input.
        value (float): the fill value.
        offset (int): the diagonal (0 main, > 0 above, < 0 below).
        wrap (bool): continue the diagonal down a tall matrix.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x`` (``x.fill_diagonal_(value)`` stores it into ``x``).

    Example:
        >>> import framework as fw
        >>> fw.zeros([3, 2]).fill_diagonal_(1.0, wrap=True).tolist()
        [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    """
    x = tensor_arg("fill_diagonal_", x)
    if x.ndim != 2:
        raise OpArgumentError(f"[fill_diagonal_] x must be 2-d, got shape {x.shape}")
    rows, cols = _positions(x, 0), _positions(x, 1)
    if wrap and x.shape[0] > x.shape[1]:
        rows = rows % (x.shape[1] + 1)
    return M.where(cols - rows == offset, _like("fill_diagonal_", x, value), x)
