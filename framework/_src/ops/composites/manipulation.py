"""Paddle's manipulation and creation functions built from the shape, indexing and math ops
(so they run and differentiate on every device): broadcast_tensors, gather_nd, scatter_nd(_add),
slice, strided_slice, unstack, rot90, roll, tensordot, moveaxis, repeat_interleave,
shard_index and the predicates (rank, shape, is_*). Diagonals and grids live in
``diagonals``, einsum in ``einsum``.

Shapes that depend on values (``unique``) are read on the host; everything else stays on the
device.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
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

# isort: split
# moved to their own modules; re-exported here, their former home
from .diagonals import diag, diagflat, diagonal, meshgrid  # noqa: F401
from .einsum import einsum  # noqa: F401

_py_slice = builtins.slice


# -- predicates and sizes ---------------------------------------------------------------------
def is_tensor(x: Any) -> bool:
    """Whether ``x`` is a :class:`Tensor`.

    Args:
        x: any object.

    Returns:
        bool: a Python bool.

    Example:
        >>> import framework as fw
        >>> fw.is_tensor(fw.to_tensor([1])), fw.is_tensor([1])
        (True, False)
    """
    return isinstance(x, Tensor)


def rank(x: Tensor) -> Tensor:
    """The number of dims of ``x``, as a 0-d int32 tensor (Paddle's ``paddle.rank``; ``x.ndim`` is the int).

    Args:
        x (Tensor): the input.

    Returns:
        Tensor: 0-d int32.

    Example:
        >>> import framework as fw
        >>> fw.rank(fw.zeros([2, 3]))
        Tensor(shape=[], dtype=int32, device=cpu:0,
               2)
    """
    return to_tensor(tensor_arg("rank", x).ndim, dtype="int32", device=x.device)


def shape(x: Tensor) -> Tensor:
    """The shape of ``x`` as a 1-d int64 tensor (Paddle's ``paddle.shape``; ``x.shape`` is the tuple).

    Args:
        x (Tensor): the input.

    Returns:
        Tensor: ``[x.ndim]`` int64.

    Example:
        >>> import framework as fw
        >>> fw.shape(fw.zeros([2, 3]))
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [2, 3])
    """
    return to_tensor(np.array(tensor_arg("shape", x).shape, dtype=np.int64), device=x.device)


def numel(x: Tensor, name: str | None = None) -> Tensor:
    """The number of elements of ``x``, as a 0-d int64 tensor (``x.numel()`` is the int).

    Args:
        x (Tensor): the input.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: 0-d int64.

    Example:
        >>> import framework as fw
        >>> fw.numel(fw.zeros([2, 3]))
        Tensor(shape=[], dtype=int64, device=cpu:0,
               6)
    """
    return to_tensor(tensor_arg("numel", x).numel(), dtype="int64", device=x.device)


def is_empty(x: Tensor, name: str | None = None) -> Tensor:
    """Whether ``x`` has no elements, as a 0-d bool tensor.

    Args:
        x (Tensor): the input.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: 0-d bool.

    Example:
        >>> import framework as fw
        >>> fw.is_empty(fw.zeros([0, 2]))
        Tensor(shape=[], dtype=bool, device=cpu:0,
               True)
    """
    return to_tensor(tensor_arg("is_empty", x).numel() == 0, device=x.device)


def is_floating_point(x: Tensor) -> bool:
    """Whether ``x`` has a floating dtype (float16, bfloat16, float32, float64).

    Args:
        x (Tensor): the input.

    Returns:
        bool: a Python bool.

    Example:
        >>> import framework as fw
        >>> fw.is_floating_point(fw.to_tensor([1.0])), fw.is_floating_point(fw.to_tensor([1]))
        (True, False)
    """
    return _dt.is_floating(tensor_arg("is_floating_point", x).dtype)


def is_integer(x: Tensor) -> bool:
    """Whether ``x`` has an integer dtype (signed or unsigned; not bool).

    Args:
        x (Tensor): the input.

    Returns:
        bool: a Python bool.

    Example:
        >>> import framework as fw
        >>> fw.is_integer(fw.to_tensor([1])), fw.is_integer(fw.to_tensor([True]))
        (True, False)
    """
    return tensor_arg("is_integer", x).dtype.kind in "iu"


def is_complex(x: Tensor) -> bool:
    """Whether ``x`` has a complex dtype (complex64 or complex128).

    Args:
        x (Tensor): the input.

    Returns:
        bool: True for complex64 and complex128.

    Example:
        >>> import framework as fw
        >>> fw.is_complex(fw.to_tensor([1.0])), fw.is_complex(fw.to_tensor([1j]))
        (False, True)
    """
    return tensor_arg("is_complex", x).dtype.kind == "c"


def broadcast_shape(x_shape: Sequence[int], y_shape: Sequence[int]) -> list[int]:
    """The shape that two shapes broadcast to (numpy's rules).

    Args:
        x_shape (list[int] | tuple[int]): the first shape.
        y_shape (list[int] | tuple[int]): the second shape.

    Returns:
        list[int]: the broadcast shape; shapes that do not broadcast raise.

    Example:
        >>> import framework as fw
        >>> fw.broadcast_shape([2, 1, 3], [4, 1])
        [2, 4, 3]
    """
    return list(broadcast_shapes("broadcast_shape", tuple(x_shape), tuple(y_shape)))


def broadcast_tensors(input: Sequence[Tensor], name: str | None = None) -> list[Tensor]:
    """Every tensor of ``input`` expanded to their common broadcast shape.

    Args:
        input (list[Tensor]): the tensors.
        name: ignored (Paddle's signature).

    Returns:
        list[Tensor]: the expanded tensors, in order.

    Example:
        >>> import framework as fw
        >>> a, b = fw.broadcast_tensors([fw.to_tensor([[1], [2]]), fw.to_tensor([10, 20, 30])])
        >>> a.tolist(), b.tolist()
        ([[1, 1, 1], [2, 2, 2]], [[10, 20, 30], [10, 20, 30]])
    """
    ts = [tensor_arg("broadcast_tensors", t) for t in input]
    shp: tuple[int, ...] = ()
    for t in ts:
        shp = tuple(broadcast_shape(shp, t.shape))
    return [t if t.shape == shp else t.expand(shp) for t in ts]


# -- indexing -------------------------------------------------------------------------------
def _nd_flat(name: str, shp: tuple[int, ...], index: Tensor) -> tuple[Tensor, int]:
    """Flat offsets into the leading index.shape[-1] dims of a tensor of shape ``shp``."""
    index = I._index_tensor(name, index, index.device)
    k = index.shape[-1]
    if k > len(shp):
        raise OpArgumentError(f"[{name}] index.shape[-1] = {k} exceeds the rank {len(shp)} of x")
    flat = None
    for d in range(k):
        col = I.checked_index(name, index[..., d], shp[d], f"index[..., {d}]", negative=True)
        stride = int(np.prod(shp[d + 1 : k]))
        term = col * stride
        flat = term if flat is None else flat + term
    if flat is None:
        flat = C.zeros(index.shape[:-1], dtype="int64", device=index.device)
    return flat, k


def gather_nd(x: Tensor, index: Tensor, name: str | None = None) -> Tensor:
    """The slices of ``x`` at multi-dim positions: ``out[i...] = x[index[i..., 0], ..., index[i..., k-1]]``.

    Args:
        x (Tensor): the input.
        index (Tensor): integers ``[..., k]``, ``k <= x.ndim``; each row names a position in the
            first ``k`` dims of ``x``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``index.shape[:-1] + x.shape[k:]``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2, 3], [4, 5, 6]])
        >>> fw.gather_nd(x, fw.to_tensor([[0, 1], [1, 2]]))
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [2, 6])
        >>> fw.gather_nd(x, fw.to_tensor([[1]])).tolist()
        [[4, 5, 6]]
    """
    x = tensor_arg("gather_nd", x)
    index = I._index_tensor("gather_nd", index, x.device)
    flat, k = _nd_flat("gather_nd", x.shape, index)
    rest = x.shape[k:]
    src = x.reshape((int(np.prod(x.shape[:k])),) + rest)
    return I.take_rows(src, flat.reshape((-1,)), 0).reshape(index.shape[:-1] + rest)


def scatter_nd_add(x: Tensor, index: Tensor, updates: Tensor, name: str | None = None) -> Tensor:
    """A copy of ``x`` with ``updates`` added at the multi-dim positions ``index`` names; repeats accumulate.

    Args:
        x (Tensor): the input.
        index (Tensor): integers ``[..., k]``, as in :func:`gather_nd`.
        updates (Tensor): ``index.shape[:-1] + x.shape[k:]``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.scatter_nd_add(fw.zeros([3]), fw.to_tensor([[1], [1], [2]]), fw.to_tensor([1.0, 2.0, 3.0]))
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [0., 3., 3.])
    """
    x = tensor_arg("scatter_nd_add", x)
    index = I._index_tensor("scatter_nd_add", index, x.device)
    flat, k = _nd_flat("scatter_nd_add", x.shape, index)
    rest = x.shape[k:]
    want = index.shape[:-1] + rest
    updates = tensor_arg("scatter_nd_add", updates, "updates")
    if updates.shape != want:
        raise OpArgumentError(
            f"[scatter_nd_add] updates have shape {updates.shape}, expected {want} (index {index.shape}, x {x.shape})"
        )
    n = int(np.prod(x.shape[:k]))
    out = I.scatter_add(
        x.reshape((n,) + rest), flat.reshape((-1,)), updates.astype(x.dtype).reshape((-1,) + rest), axis=0
    )
    return out.reshape(x.shape)


def scatter_nd(index: Tensor, updates: Tensor, shape: Sequence[int], name: str | None = None) -> Tensor:
    """Zeros of ``shape`` with ``updates`` added at the multi-dim positions ``index`` names.

    Args:
        index (Tensor): integers ``[..., k]``, as in :func:`gather_nd`.
        updates (Tensor): ``index.shape[:-1] + shape[k:]``; gives the dtype.
        shape (list[int]): the shape of the result.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``shape``.

    Example:
        >>> import framework as fw
        >>> fw.scatter_nd(fw.to_tensor([[0, 1], [1, 0]]), fw.to_tensor([5.0, 7.0]), [2, 2])
        Tensor(shape=[2, 2], dtype=float32, device=cpu:0,
               [[0., 5.],
                [7., 0.]])
    """
    updates = tensor_arg("scatter_nd", updates, "updates")
    return scatter_nd_add(C.zeros(list(shape), dtype=updates.dtype, device=updates.device), index, updates)


def shard_index(input: Tensor, index_num: int, nshards: int, shard_id: int, ignore_value: int = -1) -> Tensor:
    """Ids made local to shard ``shard_id``; ids of other shards become ``ignore_value``.

    The ``index_num`` ids are cut into ``nshards`` shards of ``ceil(index_num / nshards)``
    consecutive ids each (Paddle's ``shard_index``).

    Args:
        input (Tensor): integer ids in ``[0, index_num)``.
        index_num (int): the number of ids in all.
        nshards (int): the number of shards.
        shard_id (int): the shard to keep, in ``[0, nshards)``.
        ignore_value (int): the value for ids of other shards.

    Returns:
        Tensor: like ``input``.

    Example:
        >>> import framework as fw
        >>> ids = fw.to_tensor([[1], [6], [12], [19]])
        >>> fw.shard_index(ids, index_num=20, nshards=2, shard_id=1).tolist()
        [[-1], [-1], [2], [9]]
    """
    x = tensor_arg("shard_index", input)
    if not 0 <= shard_id < nshards:
        raise OpArgumentError(f"[shard_index] shard_id must be in [0, {nshards}), got {shard_id}")
    size = (index_num + nshards - 1) // nshards
    mine = M.floor_divide(x, size) == shard_id
    return M.where(mine, M.remainder(x, size), ignore_value).astype(x.dtype)


# -- slicing ----------------------------------------------------------------------------------
def strided_slice(
    x: Tensor,
    axes: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    strides: Sequence[int],
    name: str | None = None,
) -> Tensor:
    """``x[start:end:stride]`` on the given axes (Python's slice rules, negative strides too).

    Args:
        x (Tensor): the input.
        axes (list[int]): the axes to slice.
        starts (list[int | Tensor]): a start per axis.
        ends (list[int | Tensor]): an end (not included) per axis.
        strides (list[int | Tensor]): a step per axis, not 0.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the slice.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2, 3], [4, 5, 6]])
        >>> fw.strided_slice(x, axes=[1], starts=[2], ends=[-4], strides=[-1])
        Tensor(shape=[2, 3], dtype=int64, device=cpu:0,
               [[3, 2, 1],
                [6, 5, 4]])
    """
    x = tensor_arg("strided_slice", x)
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise OpArgumentError(
            f"[strided_slice] axes, starts, ends and strides need equal lengths, got {len(axes)}, {len(starts)}, {len(ends)}, {len(strides)}"
        )
    key: list[Any] = [_py_slice(None)] * x.ndim
    for a, s, e, st in zip(axes, starts, ends, strides):
        a = axis_arg("strided_slice", int(a), x.ndim)
        key[a] = _py_slice(_int(s), _int(e), _int(st))
    return x[tuple(key)]


def slice(input: Tensor, axes: Sequence[int], starts: Sequence[int], ends: Sequence[int]) -> Tensor:  # noqa: A001  (Paddle's name)
    """``input[start:end]`` on the given axes; ends past the size are clipped.

    Args:
        input (Tensor): the input.
        axes (list[int]): the axes to slice.
        starts (list[int | Tensor]): a start per axis.
        ends (list[int | Tensor]): an end (not included) per axis.

    Returns:
        Tensor: the slice.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2, 3], [4, 5, 6]])
        >>> fw.slice(x, axes=[0, 1], starts=[1, 0], ends=[2, 100])
        Tensor(shape=[1, 3], dtype=int64, device=cpu:0,
               [[4, 5, 6]])
    """
    return strided_slice(input, axes, starts, ends, [1] * len(axes))


def _int(v: Any) -> int:
    return int(v.item()) if isinstance(v, Tensor) else int(v)


def unstack(x: Tensor, axis: int = 0, num: int | None = None) -> list[Tensor]:
    """The slices of ``x`` along ``axis``, that dim removed (as :func:`unbind`).

    Args:
        x (Tensor): the input.
        axis (int): the dim to take apart.
        num (int, optional): Paddle's count; the size of ``axis`` is used.

    Returns:
        list[Tensor]: ``x.shape[axis]`` tensors.

    Example:
        >>> import framework as fw
        >>> [t.tolist() for t in fw.unstack(fw.to_tensor([[1, 2, 3], [4, 5, 6]]), axis=1)]
        [[1, 4], [2, 5], [3, 6]]
    """
    x = tensor_arg("unstack", x)
    ax = axis_arg("unstack", axis, x.ndim)
    return [t.squeeze(ax) for t in S.split(x, x.shape[ax], axis=ax)] if x.shape[ax] else []


def reverse(x: Tensor, axis: Any, name: str | None = None) -> Tensor:
    """Reverse the order of the elements of ``x`` along ``axis`` (as :func:`flip`).

    Args:
        x (Tensor): the input.
        axis (int | list[int]): the dims to reverse.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> fw.reverse(fw.to_tensor([[1, 2, 3], [4, 5, 6]]), 1)
        Tensor(shape=[2, 3], dtype=int64, device=cpu:0,
               [[3, 2, 1],
                [6, 5, 4]])
    """
    return S.flip(x, axis)


def moveaxis(x: Tensor, source: Any, destination: Any, name: str | None = None) -> Tensor:
    """Move dims of ``x`` to new positions; the others keep their order.

    Args:
        x (Tensor): the input.
        source (int | list[int]): the dims to move.
        destination (int | list[int]): their positions in the result.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> fw.moveaxis(fw.zeros([2, 3, 4]), 0, -1).shape
        (3, 4, 2)
    """
    x = tensor_arg("moveaxis", x)
    src = [axis_arg("moveaxis", a, x.ndim) for a in ([source] if isinstance(source, int) else source)]
    dst = [
        axis_arg("moveaxis", a, x.ndim)
        for a in ([destination] if isinstance(destination, int) else destination)
    ]
    if len(src) != len(dst):
        raise OpArgumentError(f"[moveaxis] source and destination need equal lengths, got {src} and {dst}")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return S.transpose(x, order)


def roll(x: Tensor, shifts: Any, axis: Any = None, name: str | None = None) -> Tensor:
    """Shift the elements of ``x`` cyclically along ``axis``.

    Args:
        x (Tensor): the input.
        shifts (int | list[int]): the shift per axis; positive moves towards higher indices.
        axis (int | list[int], optional): the axes; ``None``: the flattened ``x``, reshaped back.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.roll(fw.to_tensor([1, 2, 3, 4]), 1)
        Tensor(shape=[4], dtype=int64, device=cpu:0,
               [4, 1, 2, 3])
    """
    x = tensor_arg("roll", x)
    if axis is None:
        return roll(x.reshape((-1,)), shifts, 0).reshape(x.shape)
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    axes = [axis] if isinstance(axis, int) else list(axis)
    if len(shifts) != len(axes):
        raise OpArgumentError(f"[roll] shifts and axis need equal lengths, got {shifts} and {axes}")
    for sh, a in zip(shifts, axes):
        a = axis_arg("roll", a, x.ndim)
        n = x.shape[a]
        if n == 0:
            continue
        k = sh % n
        if k:
            head, tail = S.split(x, [n - k, k], axis=a)
            x = S.concat([tail, head], axis=a)
    return x


def rot90(x: Tensor, k: int = 1, axes: Sequence[int] = (0, 1), name: str | None = None) -> Tensor:
    """Rotate ``x`` by 90 degrees ``k`` times in the plane of ``axes`` (numpy's ``rot90``).

    Args:
        x (Tensor): at least 2-d.
        k (int): the number of turns, from the first axis towards the second.
        axes (list[int]): two different axes.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the rotated tensor.

    Example:
        >>> import framework as fw
        >>> fw.rot90(fw.to_tensor([[1, 2], [3, 4]]))
        Tensor(shape=[2, 2], dtype=int64, device=cpu:0,
               [[2, 4],
                [1, 3]])
    """
    x = tensor_arg("rot90", x)
    a0, a1 = (axis_arg("rot90", a, x.ndim) for a in axes)
    if a0 == a1:
        raise OpArgumentError(f"[rot90] axes must be two different axes, got {tuple(axes)}")
    k %= 4
    if k == 0:
        return x
    if k == 2:
        return S.flip(x, [a0, a1])
    perm = list(range(x.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return S.transpose(S.flip(x, a1), perm)
    return S.flip(S.transpose(x, perm), a1)


def repeat_interleave(x: Tensor, repeats: Any, axis: int | None = None, name: str | None = None) -> Tensor:
    """Repeat each element of ``x`` along ``axis``.

    Args:
        x (Tensor): the input.
        repeats (int | list[int] | Tensor): one count for all, or one per element along ``axis``.
        axis (int, optional): the axis; ``None``: the flattened ``x``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: longer along ``axis``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1, 2, 3])
        >>> fw.repeat_interleave(x, 2)
        Tensor(shape=[6], dtype=int64, device=cpu:0,
               [1, 1, 2, 2, 3, 3])
        >>> fw.repeat_interleave(x, [1, 0, 2]).tolist()
        [1, 3, 3]
    """
    x = tensor_arg("repeat_interleave", x)
    if axis is None:
        x, axis = x.reshape((-1,)), 0
    ax = axis_arg("repeat_interleave", axis, x.ndim)
    n = x.shape[ax]
    if isinstance(repeats, int):
        if repeats < 0:
            raise OpArgumentError(f"[repeat_interleave] repeats must be >= 0, got {repeats}")
        idx = np.repeat(np.arange(n), repeats)
    else:
        reps = np.asarray(
            repeats.tolist() if isinstance(repeats, Tensor) else repeats, dtype=np.int64
        ).reshape(-1)
        if reps.shape != (n,) or (reps < 0).any():
            raise OpArgumentError(
                f"[repeat_interleave] repeats must be {n} non-negative ints (one per element along axis {ax}), got {reps.tolist()}"
            )
        idx = np.repeat(np.arange(n), reps)
    return I.take_rows(x, to_tensor(idx, device=x.device), ax)


def tensordot(x: Tensor, y: Tensor, axes: Any = 2, name: str | None = None) -> Tensor:
    """Sum of products over the given axes of ``x`` and ``y``, as one matmul.

    Args:
        x (Tensor): the first tensor.
        y (Tensor): the second tensor.
        axes (int | list | Tensor): an int ``n``: the last ``n`` dims of ``x`` with the first
            ``n`` of ``y``; one list of axes: those of both; or two lists, for ``x`` and for
            ``y`` (the shorter one continued with the longer one's entries).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the free dims of ``x``, then those of ``y``.

    Example:
        >>> import framework as fw
        >>> a = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fw.tensordot(a, fw.eye(2))
        Tensor(shape=[], dtype=float32, device=cpu:0,
               5.)
        >>> fw.tensordot(a, fw.to_tensor([1.0, 1.0]), axes=1).tolist()
        [3.0, 7.0]
    """
    x, y = tensor_arg("tensordot", x), tensor_arg("tensordot", y, "y")
    if isinstance(axes, Tensor):
        axes = axes.tolist()
    if isinstance(axes, int):
        ax, ay = list(range(x.ndim - axes, x.ndim)), list(range(axes))
    elif all(isinstance(a, int) for a in axes):  # one list: the same axes of x and y (Paddle)
        ax, ay = list(axes), list(axes)
    else:  # [x axes, y axes]; the shorter list goes on with the longer one's entries (Paddle)
        parts = [[a] if isinstance(a, int) else list(a) for a in axes] + [[], []]
        ax, ay = parts[0], parts[1]
        ax, ay = ax + ay[len(ax) :], ay + ax[len(ay) :]
    ax = [axis_arg("tensordot", a, x.ndim) for a in ax]
    ay = [axis_arg("tensordot", a, y.ndim) for a in ay]
    if [x.shape[a] for a in ax] != [y.shape[a] for a in ay]:
        raise OpArgumentError(
            f"[tensordot] contracted sizes differ: x {[x.shape[a] for a in ax]} vs y {[y.shape[a] for a in ay]}"
        )
    fx = [a for a in range(x.ndim) if a not in ax]
    fy = [a for a in range(y.ndim) if a not in ay]
    k = int(np.prod([x.shape[a] for a in ax]))
    xm = S.transpose(x, fx + ax).reshape((-1, k))
    ym = S.transpose(y, ay + fy).reshape((k, -1))
    return M.matmul(xm, ym).reshape(tuple(x.shape[a] for a in fx) + tuple(y.shape[a] for a in fy))
