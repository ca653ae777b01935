"""Scatter with a reduction (Paddle's ``put_along_axis(reduce=...)``, ``scatter_reduce`` and the
``scatter_add(x, axis, index, src)`` spelling), from the scatter and gather ops.

Sums and means accumulate with ``scatter_add``. A product, minimum or maximum has no scatter
primitive: the updates are applied in rounds, round ``r`` taking every update that is the
``r``-th to its position (so no position is written twice in a round), each round a gather,
the elementwise combination and a scatter. The rounds are as many as the most updates one
position receives.
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
from ..base import broadcast_shapes
from ._common import axis_arg, tensor_arg

_REDUCES = {"assign": "assign", "add": "add", "sum": "add", "mul": "mul", "prod": "mul", "multiply": "mul"}
_REDUCES.update({"mean": "mean", "amin": "amin", "amax": "amax"})


def _occurrence(pos: Tensor) -> Tensor:
    """For each entry of 1-d ``pos``, how many earlier entries hold the same position."""
    m = pos.shape[0]
    same = pos.reshape((m, 1)) == pos.reshape((1, m))
    earlier = C.tril(C.ones([m, m], dtype="bool", device=pos.device), -1)
    return M.sum(M.cast(same & earlier, _dt.int64), axis=1)


def _identity(kind: str, dtype: np.dtype) -> Any:
    if kind == "mul":
        return 1
    if _dt.is_floating(dtype):
        return float("inf") if kind == "amin" else -float("inf")
    info = np.iinfo(dtype)
    return int(info.max) if kind == "amin" else int(info.min)


def _rounds(kind: str, flat: Tensor, pos: Tensor, vals: Tensor) -> Tensor:
    combine = {"mul": M.multiply, "amin": M.minimum, "amax": M.maximum}[kind]
    n = flat.shape[0]
    occ = _occurrence(pos)
    if n == 0 or pos.shape[0] == 0:
        return flat
    rounds = int(M.max(occ).item()) + 1
    # a spare slot at the end takes the writes of the updates not in this round
    cur = S.concat([flat, flat[:1]], axis=0)
    for r in range(rounds):
        here = M.where(occ == r, pos, n)
        cur = I.scatter(cur, here, combine(I.gather(cur, here, axis=0), vals), axis=0)
    return cur[:n]


def put_along_axis(
    x: Tensor,
    indices: Tensor,
    values: Any,
    axis: int,
    reduce: str = "assign",
    include_self: bool = True,
    broadcast: bool = True,
) -> Tensor:
    """A copy of ``x`` with ``values`` put at ``indices`` along ``axis``, combined by ``reduce``.

    Args:
        x (Tensor): the input.
        indices (Tensor): integers, of ``x``'s rank, no larger than ``x`` outside ``axis``.
        values (Tensor | number): broadcast to ``indices``'s shape.
        axis (int): the dim to index.
        reduce (str): ``"assign"``, ``"add"``, ``"mul"``, ``"mean"``, ``"amin"`` or ``"amax"``.
        include_self (bool): the entries of ``x`` at the written positions take part in the
            reduction (else only the values do).
        broadcast (bool): ``indices`` (and ``values``) broadcast to ``x``'s shape outside
            ``axis`` (Paddle's default).

    Returns:
        Tensor: like ``x``. An integer mean is truncated, as Paddle's.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[10, 30, 20], [60, 40, 50]])
        >>> idx = fw.zeros([2, 2], dtype="int64")
        >>> v = fw.to_tensor([[1, 2], [3, 4]])
        >>> fw.put_along_axis(x, idx, v, 0, "mul", broadcast=False).tolist()
        [[30, 240, 20], [60, 40, 50]]
        >>> fw.put_along_axis(x, idx, v, 0, "amax", include_self=False, broadcast=False).tolist()
        [[3, 4, 20], [60, 40, 50]]
    """
    kind = _REDUCES.get(reduce)
    if kind is None:
        raise OpArgumentError(
            f"[put_along_axis] reduce must be one of assign, add, mul, mean, amin, amax, got {reduce!r}"
        )
    x = tensor_arg("put_along_axis", x)
    if kind in ("assign", "add") and include_self:
        return I.put_along_axis(x, indices, values, axis, kind, True, broadcast)
    ax = axis_arg("put_along_axis", axis, x.ndim)
    idx = I._index_tensor("put_along_axis", indices, x.device)
    if idx.ndim != x.ndim:
        raise OpArgumentError(f"[put_along_axis] indices need {x.ndim} dims like x, got shape {idx.shape}")
    if not isinstance(values, Tensor):
        values = to_tensor(values, dtype=x.dtype, device=x.device)
    if broadcast and all(i <= n for i, n in zip(idx.shape, x.shape, strict=True)):
        idx = idx.expand(x.shape[:ax] + (idx.shape[ax],) + x.shape[ax + 1 :])
    pos = I._flat_positions("put_along_axis", x, idx.shape, idx, ax).reshape((-1,))
    vals = M.cast(values.expand(idx.shape).reshape((-1,)), x.dtype)
    flat = x.reshape((-1,))
    if not include_self:
        # the written positions start from the reduction's identity
        start = 0 if kind in ("add", "mean", "assign") else _identity(kind, x.dtype)
        flat = I.scatter(flat, pos, C.full([pos.shape[0]], start, dtype=x.dtype, device=x.device), axis=0)
    if kind == "assign":
        out = I.scatter(flat, pos, vals, axis=0)
    elif kind == "add":
        out = I.scatter_add(flat, pos, vals, axis=0)
    elif kind == "mean":
        total = I.scatter_add(flat, pos, vals, axis=0)
        ones = C.ones([pos.shape[0]], dtype="int64", device=x.device)
        count = I.scatter_add(
            C.full([flat.shape[0]], 1 if include_self else 0, "int64", device=x.device), pos, ones
        )
        count = M.maximum(count, 1)
        if _dt.is_floating(x.dtype):
            out = total / M.cast(count, x.dtype)
        else:
            t = total.astype("int64")
            out = M.where(t < 0, -M.floor_divide(-t, count), M.floor_divide(t, count)).astype(x.dtype)
    else:
        out = _rounds(kind, flat, pos, vals)
    return out.reshape(x.shape)


def scatter_reduce(
    x: Tensor,
    dim: int,
    index: Tensor,
    src: Tensor,
    reduce: str,
    include_self: bool = True,
    name: str | None = None,
) -> Tensor:
    """A copy of ``x`` with ``src`` reduced into it at ``index`` along ``dim``.

    Args:
        x (Tensor): the input.
        dim (int): the dim to index.
        index (Tensor): integers of ``src``'s shape.
        src (Tensor): the values.
        reduce (str): ``"sum"``, ``"prod"``, ``"mean"``, ``"amin"`` or ``"amax"``.
        include_self (bool): the entries of ``x`` take part in the reduction.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[10, 20, 30], [40, 50, 60]])
        >>> idx = fw.zeros([2, 3], dtype="int32")
        >>> fw.scatter_reduce(x, 0, idx, fw.to_tensor([[1, 2, 3], [4, 5, 6]]), "sum").tolist()
        [[15, 27, 39], [40, 50, 60]]
    """
    if reduce not in ("sum", "prod", "mean", "amin", "amax"):
        raise OpArgumentError(
            f"[scatter_reduce] reduce must be sum, prod, mean, amin or amax, got {reduce!r}"
        )
    return put_along_axis(x, index, src, dim, reduce, include_self, broadcast=False)


def scatter_add(x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``src`` added into ``x`` at ``index`` along ``axis`` (Paddle's ``scatter_add(x, axis, index, src)``).

    That is :func:`put_along_axis` with ``reduce="add"``.

    Called as ``scatter_add(x, index, updates, axis=0)`` (a tensor second), it is the row
    scatter it always was: ``updates`` added at the rows ``index``.

    Args:
        x (Tensor): the input.
        *args: ``axis`` (int), ``index`` (integers of ``src``'s shape), ``src`` (the values),
            by position or by name (``name`` is ignored); or ``index, updates[, axis]``.
        **kwargs: the same by name.

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[10, 20, 30], [40, 50, 60]])
        >>> idx = fw.zeros([2, 3], dtype="int32")
        >>> fw.scatter_add(x, 0, idx, fw.to_tensor([[1, 2, 3], [4, 5, 6]])).tolist()
        [[15, 27, 39], [40, 50, 60]]
    """
    kwargs.pop("name", None)
    first = args[0] if args else kwargs.get("axis")
    if "src" in kwargs or (
        isinstance(first, int) and not isinstance(first, bool) and "updates" not in kwargs
    ):
        names = dict(zip(("axis", "index", "src"), args))
        names.update(kwargs)
        return put_along_axis(x, names["index"], names["src"], names["axis"], "add", True, broadcast=False)
    return I.scatter_add(x, *args, **kwargs)


def index_add(x: Tensor, index: Tensor, axis: int, value: Tensor, name: str | None = None) -> Tensor:
    """A copy of ``x`` with the slices of ``value`` added at ``index`` along ``axis``.

    Paddle's ``paddle.index_add``: a repeated position adds every slice given for it.

    Args:
        x (Tensor): the input.
        index (Tensor): 1-d integer positions along ``axis``, in ``[-n, n)``.
        axis (int): the dim.
        value (Tensor): ``x``'s shape with dim ``axis`` the index's length.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.index_add(fw.zeros([2, 3]), fw.to_tensor([0, 2, 0]), 1, fw.ones([2, 3])).tolist()
        [[2.0, 0.0, 1.0], [2.0, 0.0, 1.0]]
    """
    x = tensor_arg("index_add", x)
    ax = axis_arg("index_add", axis, x.ndim)
    idx = tensor_arg("index_add", index, "index")
    if idx.ndim != 1 or _dt.category(idx.dtype) != _dt.category(np.dtype("int64")):
        raise OpArgumentError(
            f"[index_add] index must be a 1-d integer tensor, got shape {list(idx.shape)} of {idx.dtype}"
        )
    value = tensor_arg("index_add", value, "value")
    want = list(x.shape)
    want[ax] = idx.shape[0]
    if list(value.shape) != want:
        raise OpArgumentError(
            f"[index_add] value must have shape {want} (x's, with dim {ax} the index's length), "
            f"got {list(value.shape)}"
        )
    if value.dtype != x.dtype:
        raise OpArgumentError(f"[index_add] value must have x's dtype {x.dtype}, got {value.dtype}")
    at = [1] * x.ndim
    at[ax] = idx.shape[0]
    return put_along_axis(x, S.expand(idx.reshape(at), tuple(want)), value, ax, reduce="add")


def index_put(
    x: Tensor, indices: Any, value: Any, accumulate: bool = False, name: str | None = None
) -> Tensor:
    """A copy of ``x`` with ``value`` written (or added) at the positions ``indices`` name.

    Paddle's ``paddle.index_put``: ``indices`` is a tuple of integer tensors, one per leading
    dim of ``x`` (broadcast together), as in ``x[i, j] = value``; ``accumulate=True`` adds
    instead, a repeated position adding every value given for it. Negative positions count
    from the end.

    Args:
        x (Tensor): the input.
        indices (tuple[Tensor, ...]): integer positions for ``x``'s first ``len(indices)`` dims.
        value (Tensor | float): broadcast to the indexed positions (with ``x``'s other dims).
        accumulate (bool): add instead of writing.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> rows, cols = fw.to_tensor([0, 1, 0]), fw.to_tensor([2, 0, 2])
        >>> fw.index_put(fw.zeros([2, 3]), (rows, cols), fw.ones([3]), accumulate=True).tolist()
        [[0.0, 0.0, 2.0], [1.0, 0.0, 0.0]]
    """
    x = tensor_arg("index_put", x)
    if isinstance(indices, Tensor) or not isinstance(indices, (tuple, list)) or not indices:
        raise OpArgumentError(
            f"[index_put] indices must be a non-empty tuple of integer tensors, got {type(indices).__name__}"
        )
    if len(indices) > x.ndim:
        raise OpArgumentError(f"[index_put] {len(indices)} index tensors for a {x.ndim}-d x")
    idx = [tensor_arg("index_put", t, f"indices[{d}]") for d, t in enumerate(indices)]
    for d, t in enumerate(idx):
        if _dt.category(t.dtype) != _dt.category(np.dtype("int64")):
            raise OpArgumentError(
                f"[index_put] indices[{d}] must hold integers (boolean masks: use x[mask] = v), got {t.dtype}"
            )
    k = len(idx)
    common = tuple(idx[0].shape)
    for t in idx[1:]:
        common = broadcast_shapes("index_put", common, tuple(t.shape))
    idx = [t if tuple(t.shape) == common else S.expand(t, common) for t in idx]
    lin = None
    for d, t in enumerate(idx):
        t = I.checked_index("index_put", t, x.shape[d], f"indices[{d}] (dim {d} of size {x.shape[d]})", True)
        stride = int(np.prod(x.shape[d + 1 : k]))
        term = t * stride if stride != 1 else t
        lin = term if lin is None else lin + term
    assert lin is not None
    rest = tuple(x.shape[k:])
    n = int(np.prod(lin.shape))
    flat = S.reshape(x, (int(np.prod(x.shape[:k])), *rest))
    v = value if isinstance(value, Tensor) else to_tensor(value, dtype=x.dtype, device=x.device)
    if v.dtype != x.dtype:
        v = v.astype(x.dtype)
    try:
        v = S.expand(v, tuple(lin.shape) + rest)
    except OpArgumentError:
        raise OpArgumentError(
            f"[index_put] value of shape {list(v.shape)} does not broadcast to {list(lin.shape) + list(rest)} "
            "(the indices' shape, then x's other dims)"
        ) from None
    at = S.expand(S.reshape(lin, (n,) + (1,) * len(rest)), (n, *rest))
    out = put_along_axis(flat, at, S.reshape(v, (n, *rest)), 0, reduce="add" if accumulate else "assign")
    return S.reshape(out, tuple(x.shape))
