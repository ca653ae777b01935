"""Paddle's in-place forms that change what the tensor is, not only its values.

Each is the out-of-place op composed with :func:`methods.inplace`: the result is computed from
the old value, then the tensor is rebound to it (its version bumped; the graph keeps the old
value where it was used, so gradients flow as they do through the out-of-place op).

- comparisons and logical ops (``x.equal_(y)``, ``x.logical_and_(y)``): ``x`` becomes a
  **bool** tensor, as in Paddle (3.3 turns a float32 ``x`` into bool in place);
- bitwise ops (``x.bitwise_and_(y)``): integers or bools, dtype kept;
- ``cast_`` changes the dtype, ``t_`` and ``transpose_`` the shape;
- ``where_(condition, x, y)`` writes into ``x``; ``scatter_add_`` adds into ``input``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor
from .. import indexing, shape
from .. import math as M
from ..base import broadcast_shapes
from ..methods import inplace
from . import arith, scatter_reduce
from ._common import tensor_arg

#: Paddle's comparisons and logical ops: their in-place forms leave ``x`` a bool tensor
RELATIONAL: dict[str, Callable[..., Tensor]] = {
    "equal": M.equal,
    "not_equal": M.not_equal,
    "less_than": M.less_than,
    "less": M.less_than,
    "less_equal": M.less_equal,
    "greater_than": M.greater_than,
    "greater_equal": M.greater_equal,
    "logical_and": M.logical_and,
    "logical_or": M.logical_or,
    "logical_xor": M.logical_xor,
    "logical_not": M.logical_not,
}

#: Paddle's bitwise ops: their in-place forms keep ``x``'s integer or bool dtype
BITWISE: dict[str, Callable[..., Tensor]] = {
    "bitwise_and": arith.bitwise_and,
    "bitwise_or": arith.bitwise_or,
    "bitwise_xor": arith.bitwise_xor,
    "bitwise_not": arith.bitwise_not,
}


def _relational_inplace(name: str, fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    op = inplace(fn, name + "_", keep_dtype=False)
    other = "" if name == "logical_not" else "fw.to_tensor([1.0, 2.0, 0.0])"
    op.__doc__ = (
        f"In-place ``{name}``: ``x`` holds the result and becomes a bool tensor (Paddle's "
        f"``paddle.{name}_``); ``y`` broadcasts to ``x``'s shape, never ``x`` to ``y``'s.\n\n"
        "Example:\n"
        "    >>> import framework as fw\n"
        "    >>> x = fw.to_tensor([1.0, 0.0, 3.0])\n"
        f"    >>> _ = x.{name}_({other})\n"
        "    >>> x.dtype\n"
        "    dtype('bool')\n"
    )
    return op


def _bitwise_inplace(name: str, fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    op = inplace(fn, name + "_")
    other = "" if name == "bitwise_not" else "fw.to_tensor([3, 3], dtype='int32')"
    op.__doc__ = (
        f"In-place ``{name}`` of integers or bools (Paddle's ``paddle.{name}_``); floats are refused.\n\n"
        "Example:\n"
        "    >>> import framework as fw\n"
        "    >>> x = fw.to_tensor([6, 5], dtype='int32')\n"
        f"    >>> x.{name}_({other}).dtype\n"
        "    dtype('int32')\n"
    )
    return op


INPLACE_FORMS: dict[str, Callable[..., Tensor]] = {
    **{k + "_": _relational_inplace(k, f) for k, f in RELATIONAL.items()},
    **{k + "_": _bitwise_inplace(k, f) for k, f in BITWISE.items()},
}


def _cast(x: Tensor, dtype: Any) -> Tensor:
    return M.cast(x, _dt.as_dtype(dtype, "cast_"))


_cast_inplace = inplace(_cast, "cast_", keep_dtype=False)


def cast_(x: Tensor, dtype: Any) -> Tensor:
    """``x`` becomes a ``dtype`` tensor in place (Paddle's ``paddle.cast_``).

    Args:
        x (Tensor): the tensor to change.
        dtype (str | np.dtype): the new dtype.

    Returns:
        Tensor: ``x`` itself. In a graph, the gradient reaches the old value as through ``cast``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1.5, -2.5])
        >>> y = fw.cast_(x, "int32")
        >>> y is x, x.dtype, x.tolist()
        (True, dtype('int32'), [1, -2])
    """
    return _cast_inplace(tensor_arg("cast_", x), dtype)


def _t(x: Tensor) -> Tensor:
    if x.ndim > 2:
        raise OpArgumentError(
            f"[t_] expects at most 2 dimensions, got shape {list(x.shape)}; use transpose_ with a perm"
        )
    return x if x.ndim < 2 else shape.transpose(x, [1, 0])


_t_inplace = inplace(_t, "t_", same_shape=False)


def t_(input: Tensor, name: str | None = None) -> Tensor:
    """A matrix transposed in place (Paddle's ``paddle.t_``); a 0-d or 1-d tensor is left as it is.

    Args:
        input (Tensor): at most 2-d.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``input`` itself, now of shape ``[n, m]``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2, 3]])
        >>> fw.t_(x).shape, x.tolist()
        ((3, 1), [[1], [2], [3]])
    """
    x = tensor_arg("t_", input, "input")
    return x if x.ndim < 2 else _t_inplace(x)


def _transpose(x: Tensor, perm: Sequence[int]) -> Tensor:
    if not isinstance(perm, (list, tuple)) or len(perm) != x.ndim:
        raise OpArgumentError(f"[transpose_] perm must list each of the {x.ndim} dims once, got {perm!r}")
    return shape.transpose(x, list(perm))


_transpose_inplace = inplace(_transpose, "transpose_", same_shape=False)


def transpose_(x: Tensor, perm: Sequence[int], name: str | None = None) -> Tensor:
    """``x``'s dims permuted in place (Paddle's ``paddle.transpose_``).

    Args:
        x (Tensor): the tensor to change.
        perm (list[int]): each dim of ``x`` once: dim ``i`` of the result is dim ``perm[i]`` of ``x``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``x`` itself.

    Example:
        >>> import framework as fw
        >>> x = fw.zeros([2, 3, 4])
        >>> fw.transpose_(x, [2, 0, 1]).shape
        (4, 2, 3)
    """
    return _transpose_inplace(tensor_arg("transpose_", x), perm)


def _where_into(x: Tensor, condition: Tensor, y: Tensor) -> Tensor:
    return indexing.where(condition, x, y)


_where_inplace = inplace(_where_into, "where_")


def where_(condition: Tensor, x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """``x`` takes ``y``'s values where ``condition`` is False, in place (Paddle's ``paddle.where_``).

    As in Paddle, when ``x`` would have to broadcast to the common shape of ``condition``,
    ``x`` and ``y``, the result is a new tensor and ``x`` is left alone.

    Args:
        condition (Tensor): bool.
        x (Tensor): the values where ``condition`` holds; receives the result.
        y (Tensor): the values elsewhere.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``x`` itself (a new tensor when ``x`` broadcasts).

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1.0, 2.0, 3.0])
        >>> _ = fw.where_(fw.to_tensor([True, False, True]), x, fw.zeros([3]))
        >>> x.tolist()
        [1.0, 0.0, 3.0]
    """
    if not isinstance(x, Tensor) or not isinstance(y, Tensor):
        raise OpArgumentError(
            f"[where_] x and y must both be tensors (x receives the result), got "
            f"{type(x).__name__} and {type(y).__name__}; use fw.where for numbers"
        )
    condition = tensor_arg("where_", condition, "condition")
    if condition.dtype != _dt.bool_:
        raise OpArgumentError(f"[where_] condition must be a bool tensor, got {condition.dtype}")
    common = broadcast_shapes("where_", tuple(condition.shape), tuple(x.shape))
    common = broadcast_shapes("where_", common, tuple(y.shape))
    if common != tuple(x.shape):
        return indexing.where(condition, x, y)
    return _where_inplace(x, condition, y)


def _scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    index = tensor_arg("scatter_add_", index, "index")
    if isinstance(src, Tensor) and src.ndim == index.ndim and tuple(src.shape) != tuple(index.shape):
        if any(i > s for i, s in zip(index.shape, src.shape)):
            raise OpArgumentError(
                f"[scatter_add_] index of shape {list(index.shape)} is larger than src's {list(src.shape)}"
            )
        src = src[tuple(slice(0, n) for n in index.shape)]  # the src elements index covers
    return scatter_reduce.put_along_axis(x, index, src, dim, "add", include_self=True, broadcast=False)


_scatter_add_inplace = inplace(_scatter_add, "scatter_add_")


def scatter_add_(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """``src`` added into ``input`` at ``index`` along ``dim``, in place (Paddle's ``paddle.scatter_add_``).

    ``index`` has ``input``'s rank and is no larger than ``src``; element ``i`` of ``src`` (at
    the positions ``index`` covers) is added to ``input`` at ``index[i]`` along ``dim``.

    Args:
        input (Tensor): receives the sums.
        dim (int): the dim ``index`` selects along.
        index (Tensor): integers.
        src (Tensor): the values, of ``input``'s dtype.

    Returns:
        Tensor: ``input`` itself.

    Example:
        >>> import framework as fw
        >>> x = fw.zeros([2, 3])
        >>> _ = x.scatter_add_(0, fw.to_tensor([[1, 0, 1]]), fw.ones([1, 3]))
        >>> x.tolist()
        [[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]]
    """
    return _scatter_add_inplace(tensor_arg("scatter_add_", input, "input"), dim, index, src)


INPLACE_FORMS.update(
    {"cast_": cast_, "t_": t_, "transpose_": transpose_, "where_": where_, "scatter_add_": scatter_add_}
)
