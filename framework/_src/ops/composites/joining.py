"""Paddle's joining and splitting helpers, each a decomposition into reshape, concat, slice and
gather (so each runs and differentiates wherever those do): atleast_1d/2d/3d, hstack, vstack,
row_stack, dstack, column_stack, tensor_split, hsplit, vsplit, dsplit, unflatten, narrow,
ravel, crop, take, block_diag, cartesian_prod, combinations, broadcast_shapes.
"""

from __future__ import annotations

import itertools
import math as _m
from collections.abc import Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ...tensor import Tensor, decides_on_sizes, to_tensor
from .. import indexing as I
from .. import shape as S
from ._common import axis_arg, tensor_arg
from .diagonals import meshgrid
from .manipulation import broadcast_shape


def _tensors(name: str, xs: Any) -> list[Tensor]:
    if isinstance(xs, Tensor):
        return [xs]
    xs = list(xs)
    for i, x in enumerate(xs):
        tensor_arg(name, x, f"item {i}")
    return xs


def _one_or_list(xs: list[Tensor]) -> Any:
    return xs[0] if len(xs) == 1 else xs


def atleast_1d(*inputs: Any, name: str | None = None) -> Any:
    """Each input with at least one dim (a 0-d tensor becomes ``[1]``).

    Args:
        *inputs (Tensor): tensors (or one list of them).
        name: ignored (Paddle's signature).

    Returns:
        Tensor | list[Tensor]: one tensor for one input, else a list.

    Example:
        >>> import framework as fw
        >>> fw.atleast_1d(fw.to_tensor(3.0)).shape
        (1,)
    """
    xs = _tensors(
        "atleast_1d", inputs[0] if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)) else inputs
    )
    return _one_or_list([x.reshape((1,)) if x.ndim == 0 else x for x in xs])


def atleast_2d(*inputs: Any, name: str | None = None) -> Any:
    """Each input with at least two dims (``[n]`` becomes ``[1, n]``).

    Args:
        *inputs (Tensor): tensors (or one list of them).
        name: ignored (Paddle's signature).

    Returns:
        Tensor | list[Tensor]: one tensor for one input, else a list.

    Example:
        >>> import framework as fw
        >>> fw.atleast_2d(fw.to_tensor([1, 2])).shape
        (1, 2)
    """
    xs = _tensors(
        "atleast_2d", inputs[0] if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)) else inputs
    )
    return _one_or_list([x.reshape((1,) * (2 - x.ndim) + x.shape) if x.ndim < 2 else x for x in xs])


def atleast_3d(*inputs: Any, name: str | None = None) -> Any:
    """Each input with at least three dims (``[n]`` becomes ``[1, n, 1]``, ``[m, n]`` ``[m, n, 1]``).

    Args:
        *inputs (Tensor): tensors (or one list of them).
        name: ignored (Paddle's signature).

    Returns:
        Tensor | list[Tensor]: one tensor for one input, else a list.

    Example:
        >>> import framework as fw
        >>> fw.atleast_3d(fw.to_tensor([1, 2])).shape
        (1, 2, 1)
    """
    xs = _tensors(
        "atleast_3d", inputs[0] if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)) else inputs
    )
    out = []
    for x in xs:
        shape = {0: (1, 1, 1), 1: (1, *x.shape, 1), 2: (*x.shape, 1)}.get(x.ndim, x.shape)
        out.append(x.reshape(shape))
    return _one_or_list(out)


def hstack(x: Sequence[Tensor], name: str | None = None) -> Tensor:
    """Join tensors column-wise: along dim 1, or dim 0 when they are 1-d.

    Args:
        x (list[Tensor]): the tensors (0-d ones count as 1-d).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the joined tensor.

    Example:
        >>> import framework as fw
        >>> fw.hstack([fw.to_tensor([1, 2]), fw.to_tensor([3])]).tolist()
        [1, 2, 3]
    """
    xs = [atleast_1d(t) for t in _tensors("hstack", x)]
    return S.concat(xs, axis=0 if xs[0].ndim == 1 else 1)


def vstack(x: Sequence[Tensor], name: str | None = None) -> Tensor:
    """Join tensors row-wise: along dim 0 of their 2-d (at least) forms.

    Args:
        x (list[Tensor]): the tensors (1-d ones become rows).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the joined tensor.

    Example:
        >>> import framework as fw
        >>> fw.vstack([fw.to_tensor([1, 2]), fw.to_tensor([3, 4])]).tolist()
        [[1, 2], [3, 4]]
    """
    return S.concat([atleast_2d(t) for t in _tensors("vstack", x)], axis=0)


def row_stack(x: Sequence[Tensor], name: str | None = None) -> Tensor:
    """:func:`vstack` under NumPy's other name.

    Args:
        x (list[Tensor]): the tensors (1-d ones become rows).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the joined tensor.

    Example:
        >>> import framework as fw
        >>> fw.row_stack([fw.to_tensor([1]), fw.to_tensor([2])]).tolist()
        [[1], [2]]
    """
    return vstack(x)


def dstack(x: Sequence[Tensor], name: str | None = None) -> Tensor:
    """Join tensors depth-wise: along dim 2 of their 3-d (at least) forms.

    Args:
        x (list[Tensor]): the tensors.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the joined tensor.

    Example:
        >>> import framework as fw
        >>> fw.dstack([fw.to_tensor([1, 2]), fw.to_tensor([3, 4])]).tolist()
        [[[1, 3], [2, 4]]]
    """
    return S.concat([atleast_3d(t) for t in _tensors("dstack", x)], axis=2)


def column_stack(x: Sequence[Tensor], name: str | None = None) -> Tensor:
    """Join 1-d tensors as the columns of a matrix (2-d ones are joined along dim 1).

    Args:
        x (list[Tensor]): the tensors.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the joined tensor.

    Example:
        >>> import framework as fw
        >>> fw.column_stack([fw.to_tensor([1, 2]), fw.to_tensor([3, 4])]).tolist()
        [[1, 3], [2, 4]]
    """
    xs = [t.reshape((-1, 1)) if t.ndim < 2 else t for t in _tensors("column_stack", x)]
    return S.concat(xs, axis=1)


def tensor_split(x: Tensor, num_or_indices: Any, axis: int = 0, name: str | None = None) -> list[Tensor]:
    """Split ``x`` into ``n`` near-equal parts (the first ones one larger) or at given indices.

    Args:
        x (Tensor): the input.
        num_or_indices (int | list[int] | tuple[int]): the number of parts, or the indices
            along ``axis`` where each new part starts.
        axis (int): the dim to split.
        name: ignored (Paddle's signature).

    Returns:
        list[Tensor]: the parts (views of ``x``'s data).

    Example:
        >>> import framework as fw
        >>> [t.tolist() for t in fw.tensor_split(fw.arange(5), 2)]
        [[0, 1, 2], [3, 4]]
        >>> [t.tolist() for t in fw.tensor_split(fw.arange(5), [1, 4])]
        [[0], [1, 2, 3], [4]]
    """
    x = tensor_arg("tensor_split", x)
    if isinstance(axis, Tensor):
        axis = int(axis.item())
    ax = axis_arg("tensor_split", axis, x.ndim)
    n = x.shape[ax]
    if isinstance(num_or_indices, Tensor):
        num_or_indices = num_or_indices.tolist()
    if isinstance(num_or_indices, (int, np.integer)):
        k = int(num_or_indices)
        if k < 1:
            raise OpArgumentError(f"[tensor_split] the number of parts must be >= 1, got {k}")
        bounds = [i * (n // k) + min(i, n % k) for i in range(k + 1)]
    else:
        idx = [min(max(int(i) + (n if int(i) < 0 else 0), 0), n) for i in num_or_indices]
        bounds = [0, *idx, n]
    return [_narrow(x, ax, lo, max(hi, lo)) for lo, hi in itertools.pairwise(bounds)]


def _narrow(x: Tensor, ax: int, lo: int, hi: int) -> Tensor:
    starts, stops = [0] * x.ndim, list(x.shape)
    starts[ax], stops[ax] = lo, hi
    return S.slice_raw(x, tuple(starts), tuple(stops), (1,) * x.ndim)


def _split_dim(name: str, x: Tensor, num_or_indices: Any, axis: int, min_ndim: int) -> list[Tensor]:
    x = tensor_arg(name, x)
    if x.ndim < min_ndim:
        raise OpArgumentError(f"[{name}] x needs at least {min_ndim} dims, got shape {x.shape}")
    if isinstance(num_or_indices, int) and x.shape[axis] % num_or_indices:
        raise OpArgumentError(
            f"[{name}] dim {axis} of size {x.shape[axis]} does not split into {num_or_indices} equal parts"
        )
    return tensor_split(x, num_or_indices, axis)


def hsplit(x: Tensor, num_or_indices: Any, name: str | None = None) -> list[Tensor]:
    """Split ``x`` column-wise (dim 1; dim 0 of a 1-d ``x``) into equal parts or at indices.

    Args:
        x (Tensor): the input, at least 1-d.
        num_or_indices (int | list[int]): the number of equal parts, or the split indices.
        name: ignored (Paddle's signature).

    Returns:
        list[Tensor]: the parts.

    Example:
        >>> import framework as fw
        >>> [t.shape for t in fw.hsplit(fw.zeros([2, 4]), 2)]
        [(2, 2), (2, 2)]
    """
    x = tensor_arg("hsplit", x)
    return _split_dim("hsplit", x, num_or_indices, 0 if x.ndim == 1 else 1, 1)


def vsplit(x: Tensor, num_or_indices: Any, name: str | None = None) -> list[Tensor]:
    """Split ``x`` row-wise (dim 0) into equal parts or at indices.

    Args:
        x (Tensor): the input, at least 2-d.
        num_or_indices (int | list[int]): the number of equal parts, or the split indices.
        name: ignored (Paddle's signature).

    Returns:
        list[Tensor]: the parts.

    Example:
        >>> import framework as fw
        >>> [t.shape for t in fw.vsplit(fw.zeros([4, 2]), [1])]
        [(1, 2), (3, 2)]
    """
    return _split_dim("vsplit", x, num_or_indices, 0, 2)


def dsplit(x: Tensor, num_or_indices: Any, name: str | None = None) -> list[Tensor]:
    """Split ``x`` depth-wise (dim 2) into equal parts or at indices.

    Args:
        x (Tensor): the input, at least 3-d.
        num_or_indices (int | list[int]): the number of equal parts, or the split indices.
        name: ignored (Paddle's signature).

    Returns:
        list[Tensor]: the parts.

    Example:
        >>> import framework as fw
        >>> [t.shape for t in fw.dsplit(fw.zeros([1, 2, 4]), 2)]
        [(1, 2, 2), (1, 2, 2)]
    """
    return _split_dim("dsplit", x, num_or_indices, 2, 3)


def unflatten(x: Tensor, axis: int, shape: Any, name: str | None = None) -> Tensor:
    """Expand dim ``axis`` of ``x`` into ``shape`` (one entry may be -1).

    Args:
        x (Tensor): the input.
        axis (int): the dim to expand.
        shape (list[int] | tuple[int] | Tensor): sizes whose product is ``x.shape[axis]``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a view of ``x``'s data.

    Example:
        >>> import framework as fw
        >>> fw.unflatten(fw.zeros([2, 6]), 1, [2, 3]).shape
        (2, 2, 3)
    """
    x = tensor_arg("unflatten", x)
    ax = axis_arg("unflatten", axis, x.ndim)
    sizes = [int(s) for s in (shape.tolist() if isinstance(shape, Tensor) else shape)]
    if -1 in sizes:
        known = _m.prod(s for s in sizes if s != -1)
        sizes[sizes.index(-1)] = x.shape[ax] // known if known else 0
    if _m.prod(sizes) != x.shape[ax]:
        raise OpArgumentError(
            f"[unflatten] shape {list(shape)} does not hold the {x.shape[ax]} entries of dim {ax}"
        )
    return x.reshape(x.shape[:ax] + tuple(sizes) + x.shape[ax + 1 :])


@decides_on_sizes  # its range check: a guard under to_static
def narrow(x: Tensor, dim: int, start: Any, length: int, name: str | None = None) -> Tensor:
    """The ``length`` entries of ``x`` along ``dim`` from ``start`` (negative counts from the end).

    Args:
        x (Tensor): the input.
        dim (int): the dim to narrow.
        start (int | Tensor): the first entry.
        length (int): how many entries.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a view of ``x``'s data.

    Example:
        >>> import framework as fw
        >>> fw.narrow(fw.arange(6).reshape([2, 3]), 1, 1, 2).tolist()
        [[1, 2], [4, 5]]
    """
    x = tensor_arg("narrow", x)
    ax = axis_arg("narrow", dim, x.ndim)
    s = int(start.item()) if isinstance(start, Tensor) else int(start)
    s = s + x.shape[ax] if s < 0 else s
    if not 0 <= s <= x.shape[ax] or length < 0 or s + length > x.shape[ax]:
        raise OpArgumentError(
            f"[narrow] start {start} and length {length} fall outside dim {ax} of size {x.shape[ax]}"
        )
    return _narrow(x, ax, s, s + int(length))


def ravel(x: Tensor, name: str | None = None) -> Tensor:
    """``x`` as a 1-d tensor.

    Args:
        x (Tensor): the input.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a 1-d view of ``x``'s data.

    Example:
        >>> import framework as fw
        >>> fw.ravel(fw.to_tensor([[1, 2], [3, 4]])).tolist()
        [1, 2, 3, 4]
    """
    return tensor_arg("ravel", x).reshape((-1,))


@decides_on_sizes  # its range check: a guard under to_static
def crop(x: Tensor, shape: Any = None, offsets: Any = None, name: str | None = None) -> Tensor:
    """The block of ``x`` of size ``shape`` that starts at ``offsets``.

    Args:
        x (Tensor): the input.
        shape (list[int] | Tensor, optional): the block's sizes (-1: to the end); default ``x``'s.
        offsets (list[int] | Tensor, optional): where the block starts; default zeros.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the block.

    Example:
        >>> import framework as fw
        >>> fw.crop(fw.arange(9).reshape([3, 3]), shape=[2, 2], offsets=[1, 1]).tolist()
        [[4, 5], [7, 8]]
    """
    x = tensor_arg("crop", x)
    as_list = lambda v, d: (
        [d] * x.ndim if v is None else [int(i) for i in (v.tolist() if isinstance(v, Tensor) else v)]
    )  # noqa: E731
    sizes, starts = as_list(shape, -1), as_list(offsets, 0)
    if len(sizes) != x.ndim or len(starts) != x.ndim:
        raise OpArgumentError(f"[crop] shape and offsets need {x.ndim} entries, got {sizes} and {starts}")
    stops = [n if s == -1 else o + s for n, s, o in zip(x.shape, sizes, starts, strict=True)]
    if any(o < 0 or e > n or e < o for o, e, n in zip(starts, stops, x.shape, strict=True)):
        raise OpArgumentError(
            f"[crop] the block at {starts} of size {sizes} does not fit x of shape {x.shape}"
        )
    return S.slice_raw(x, tuple(starts), tuple(stops), (1,) * x.ndim)


def take(x: Tensor, index: Any, mode: str = "raise", name: str | None = None) -> Tensor:
    """The entries of the flattened ``x`` at ``index``.

    Args:
        x (Tensor): the input.
        index (Tensor): integer positions into ``x.flatten()``; negative ones count from the end.
        mode (str): ``"raise"`` (out of range is an error), ``"wrap"`` (modulo the size) or
            ``"clip"`` (to the nearest end).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``index``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.take(fw.to_tensor([[1, 2], [3, 4]]), fw.to_tensor([0, -1])).tolist()
        [1, 4]
    """
    x = tensor_arg("take", x)
    idx = tensor_arg("take", index, "index")
    if mode not in ("raise", "wrap", "clip"):
        raise OpArgumentError(f"[take] mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    n = x.numel()
    flat = idx.reshape((-1,))
    if mode == "wrap":
        flat = flat % n
    elif mode == "clip":
        flat = flat.clip(0, n - 1)
    else:
        flat = I.checked_index("take", flat + n, 2 * n, f"index (in [-{n}, {n}))") % n
    return I.take_rows(x.reshape((-1,)), flat, 0).reshape(idx.shape)


def block_diag(inputs: Sequence[Tensor], name: str | None = None) -> Tensor:
    """A block-diagonal matrix of the given matrices (0-d and 1-d inputs are rows).

    Args:
        inputs (list[Tensor]): the blocks.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of shape ``[sum of rows, sum of columns]``.

    Example:
        >>> import framework as fw
        >>> fw.block_diag([fw.to_tensor([[1, 2]]), fw.to_tensor([[3]])]).tolist()
        [[1, 2, 0], [0, 0, 3]]
    """
    xs = [atleast_2d(t) for t in _tensors("block_diag", inputs)]
    cols = sum(t.shape[1] for t in xs)
    rows, left = [], 0
    for t in xs:
        rows.append(S.pad_raw(t, ((0, 0), (left, cols - left - t.shape[1])), 0))
        left += t.shape[1]
    return S.concat(rows, axis=0)


def cartesian_prod(x: Sequence[Tensor], name: str | None = None) -> Tensor:
    """Every combination of one entry from each 1-d tensor, as the rows of a matrix.

    Args:
        x (list[Tensor]): 1-d tensors.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[prod of sizes, len(x)]`` (1-d for one tensor).

    Example:
        >>> import framework as fw
        >>> fw.cartesian_prod([fw.to_tensor([1, 2]), fw.to_tensor([3, 4])]).tolist()
        [[1, 3], [1, 4], [2, 3], [2, 4]]
    """
    xs = _tensors("cartesian_prod", x)
    if len(xs) == 1:
        return xs[0]
    return S.stack([g.reshape((-1,)) for g in meshgrid(*xs)], axis=1)


def combinations(x: Tensor, r: int = 2, with_replacement: bool = False, name: str | None = None) -> Tensor:
    """The length-``r`` combinations of the entries of a 1-d ``x`` (as ``itertools``), as rows.

    Args:
        x (Tensor): a 1-d tensor.
        r (int): the combination length.
        with_replacement (bool): entries may repeat.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[number of combinations, r]``.

    Example:
        >>> import framework as fw
        >>> fw.combinations(fw.to_tensor([1, 2, 3])).tolist()
        [[1, 2], [1, 3], [2, 3]]
    """
    x = tensor_arg("combinations", x)
    if x.ndim != 1:
        raise OpArgumentError(f"[combinations] x must be 1-d, got shape {x.shape}")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(x.shape[0]), int(r)))
    if not rows:
        return x.reshape((0,)) if r else x[:0]
    idx = to_tensor(np.asarray(rows, np.int64).reshape(-1), device=x.device)
    return I.take_rows(x, idx, 0).reshape((len(rows), int(r)))


def broadcast_shapes(*shapes: Sequence[int]) -> list[int]:
    """The shape that all the given shapes broadcast to (numpy's rules).

    Args:
        *shapes (list[int] | tuple[int]): the shapes.

    Returns:
        list[int]: the broadcast shape.

    Example:
        >>> import framework as fw
        >>> fw.broadcast_shapes([1, 3], [2, 1], [3])
        [2, 3]
    """
    out: list[int] = []
    for s in shapes:
        out = broadcast_shape(out, list(s))
    return out


def matrix_transpose(x: Tensor, name: str | None = None) -> Tensor:
    """``x`` with its last two dims swapped (each matrix of a batch transposed).

    Args:
        x (Tensor): at least 2-d.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[..., n, m]`` for ``x`` ``[..., m, n]``.

    Example:
        >>> import framework as fw
        >>> fw.matrix_transpose(fw.zeros([4, 2, 3])).shape
        (4, 3, 2)
    """
    x = tensor_arg("matrix_transpose", x)
    if x.ndim < 2:
        raise OpArgumentError(f"[matrix_transpose] x must be at least 2-d, got shape {x.shape}")
    return S.swapaxes(x, -1, -2)


def tolist(x: Tensor) -> Any:
    """The data of ``x`` as nested Python lists (a number for a 0-d tensor), read back to the host.

    Args:
        x (Tensor): the input.

    Returns:
        list | int | float | bool: the values.

    Example:
        >>> import framework as fw
        >>> fw.tolist(fw.to_tensor([[1, 2], [3, 4]]))
        [[1, 2], [3, 4]]
    """
    return tensor_arg("tolist", x).tolist()
