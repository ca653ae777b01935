"""Reductions: sum, prod, max, min, argmax, argmin, mean, all, any, count_nonzero, and the axis
normalisation every reducing op shares."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .. import dtypes as _dt
from ..tensor import Tensor
from .base import OPS, apply1
from .elementwise import _check, _const, cast


def normalize_axes(name: str, axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    out: list[int] = []
    seen: list[int] = []
    for a in axes:
        if isinstance(a, Tensor):
            a = int(a.item())
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise OpArgumentError(f"[{name}] axis must be an int or a sequence of ints, got {axis!r}")
        if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1):
            raise OpArgumentError(
                f"[{name}] axis {a} is out of range for a tensor with {ndim} dimensions; expected -{builtins.max(ndim, 1)} <= axis < {builtins.max(ndim, 1)}"
            )
        a = int(a) % builtins.max(ndim, 1)
        if a in seen:  # also for a 0-d tensor, whose only axis (0 or -1) reduces nothing
            raise OpArgumentError(f"[{name}] axis {a} appears twice in {axis!r}")
        seen.append(a)
        if ndim:
            out.append(a)
    return tuple(sorted(out))


def _reduce(opname: str, x: Tensor, axis: Any, keepdim: bool) -> Tensor:
    x = _check(x, opname)
    axes = normalize_axes(opname, axis, x.ndim)
    return apply1(OPS[opname], [x], {"axes": axes, "keepdim": bool(keepdim)})


def sum(
    x: Tensor, axis: Any = None, dtype: Any = None, keepdim: bool = False, name: str | None = None
) -> Tensor:
    """Sum of the elements of ``x`` over ``axis``.

    Args:
        x (Tensor): the input.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        dtype (str | np.dtype, optional): cast ``x`` to this first; by default bool and integers
            sum as int64 (uint16, uint32 and uint64 as uint64, numpy's rule).
        keepdim (bool): keep the reduced axes, with size 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the sums.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fw.sum(x, axis=0)
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [4., 6.])
        >>> fw.sum(x).item()
        10.0
        >>> fw.sum(fw.to_tensor([True, True, False])).item()
        2
    """
    x = _check(x, "sum")
    if dtype is not None:
        x = cast(x, dtype)
    elif x.dtype in _dt.UINT_WIDE:  # numpy's rule: uint16/32/64 sum as uint64 (int64 would misread it)
        x = cast(x, _dt.uint64)
    elif x.dtype.kind in "biu":
        x = cast(x, _dt.int64)
    return _reduce("sum", x, axis, keepdim)


def prod(x: Tensor, axis: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """Product of the elements of ``x`` over ``axis``.

    Args:
        x (Tensor): the input.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        keepdim (bool): keep the reduced axes, with size 1.
        dtype (str | np.dtype, optional): cast ``x`` to this first; by default int32 stays
            int32 (Paddle's rule: a product past 2**31 wraps, as Paddle's does), other integers
            and bool multiply as int64 (uint16, uint32 and uint64 as uint64, numpy's rule).

    Returns:
        Tensor: the products.

    Example:
        >>> import framework as fw
        >>> fw.prod(fw.to_tensor([[1, 2], [3, 4]]), axis=1)
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [ 2, 12])
        >>> fw.prod(fw.to_tensor([2, 3], dtype="int32"))
        Tensor(shape=[], dtype=int32, device=cpu:0,
               6)
    """
    x = _check(x, "prod")
    if dtype is not None:
        x = cast(x, dtype)
    elif x.dtype in _dt.UINT_WIDE:  # numpy's rule: uint16/32/64 sum as uint64 (int64 would misread it)
        x = cast(x, _dt.uint64)
    elif x.dtype.kind in "biu" and x.dtype != _dt.int32:  # int32 keeps its dtype (Paddle)
        x = cast(x, _dt.int64)
    return _reduce("prod", x, axis, keepdim)


def _nonempty(name: str, x: Tensor, axis: Any) -> None:
    axes = normalize_axes(name, axis, x.ndim)
    if builtins.any(x.shape[a] == 0 for a in axes) or (x.numel() == 0 and not axes):
        raise OpArgumentError(
            f"[{name}] cannot reduce over an empty dimension of shape {x.shape}; the result is undefined"
        )


def max(x: Tensor, axis: Any = None, keepdim: bool = False, name: str | None = None) -> Tensor:
    """Largest element of ``x`` over ``axis``; ``amax`` is this function.

    A NaN in the reduced elements gives NaN. Reducing an empty axis is an error.

    Args:
        x (Tensor): the input.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        keepdim (bool): keep the reduced axes, with size 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``x``'s dtype.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 5, 2], [7, 0, 3]])
        >>> fw.max(x, axis=0, keepdim=True)
        Tensor(shape=[1, 3], dtype=int64, device=cpu:0,
               [[7, 5, 3]])
        >>> fw.amax(x).item()
        7
    """
    x = _check(x, "max")
    _nonempty("max", x, axis)
    return _reduce("max", x, axis, keepdim)


def min(x: Tensor, axis: Any = None, keepdim: bool = False, name: str | None = None) -> Tensor:
    """Smallest element of ``x`` over ``axis``; ``amin`` is this function.

    A NaN in the reduced elements gives NaN. Reducing an empty axis is an error.

    Args:
        x (Tensor): the input.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        keepdim (bool): keep the reduced axes, with size 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``x``'s dtype.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 5, 2], [7, 0, 3]])
        >>> fw.min(x, axis=1)
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [1, 0])
        >>> fw.amin(x).item()
        0
    """
    x = _check(x, "min")
    _nonempty("min", x, axis)
    return _reduce("min", x, axis, keepdim)


amax, amin = max, min


def _arg(opname: str, x: Tensor, axis: Any, keepdim: bool) -> Tensor:
    x = _check(x, opname)
    if axis is None:
        if x.numel() == 0:
            raise OpArgumentError(f"[{opname}] cannot take {opname} of an empty tensor")
        r = apply1(OPS[opname], [x.reshape((-1,))], {"axis": 0, "keepdim": False})
        return r.reshape((1,) * x.ndim) if keepdim else r
    (ax,) = normalize_axes(opname, axis, x.ndim) or (0,)
    if x.ndim == 0:
        return apply1(OPS[opname], [x.reshape((1,))], {"axis": 0, "keepdim": False})
    if x.shape[ax] == 0:
        raise OpArgumentError(f"[{opname}] cannot take {opname} over the empty axis {ax} of shape {x.shape}")
    return apply1(OPS[opname], [x], {"axis": ax, "keepdim": bool(keepdim)})


def argmax(
    x: Tensor, axis: Any = None, keepdim: bool = False, dtype: Any = "int64", name: str | None = None
) -> Tensor:
    """Index of the largest element of ``x`` along ``axis`` (the first one on ties).

    Args:
        x (Tensor): the input.
        axis (int, optional): the axis; ``None``: the index into the flattened ``x``.
        keepdim (bool): keep the reduced axis, with size 1.
        dtype (str | np.dtype): the index dtype, ``"int64"`` or ``"int32"``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the indices, of ``dtype``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 5, 2], [7, 0, 3]])
        >>> fw.argmax(x, axis=1, dtype="int32").dtype
        dtype('int32')
        >>> fw.argmax(x, axis=1)
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [1, 0])
        >>> fw.argmax(x).item()
        3
    """
    return _index_dtype("argmax", _arg("argmax", x, axis, keepdim), dtype)


def argmin(
    x: Tensor, axis: Any = None, keepdim: bool = False, dtype: Any = "int64", name: str | None = None
) -> Tensor:
    """Index of the smallest element of ``x`` along ``axis`` (the first one on ties).

    Args:
        x (Tensor): the input.
        axis (int, optional): the axis; ``None``: the index into the flattened ``x``.
        keepdim (bool): keep the reduced axis, with size 1.
        dtype (str | np.dtype): the index dtype, ``"int64"`` or ``"int32"``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the indices, of ``dtype``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 5, 2], [7, 0, 3]])
        >>> fw.argmin(x, axis=0)
        Tensor(shape=[3], dtype=int64, device=cpu:0,
               [0, 1, 0])
    """
    return _index_dtype("argmin", _arg("argmin", x, axis, keepdim), dtype)


def _index_dtype(name: str, out: Tensor, dtype: Any) -> Tensor:
    d = _dt.as_dtype(dtype, name)
    if d.name not in ("int64", "int32"):
        raise OpArgumentError(f"[{name}] dtype must be int32 or int64, got {d}")
    return out if d == out.dtype else cast(out, d)


def mean(
    x: Tensor, axis: Any = None, keepdim: bool = False, name: str | None = None, *, dtype: Any = None
) -> Tensor:
    """Arithmetic mean of the elements of ``x`` over ``axis``.

    Args:
        x (Tensor): the input; integers and bool are cast to the default float dtype (the true
            mean: Paddle 3.3.1 keeps an int64 input's dtype and truncates, ``[1, 2]`` -> 1).
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        keepdim (bool): keep the reduced axes, with size 1.
        name: ignored (Paddle's signature).
        dtype (str | np.dtype, optional): cast ``x`` to this dtype first; an integer dtype asks
            for an integer result, the mean truncated toward zero (Paddle's).

    Returns:
        Tensor: a float tensor (of ``dtype`` when given); NaN over an empty axis.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fw.mean(x, axis=1)
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [1.5, 3.5])
        >>> fw.mean(x).item()
        2.5
        >>> fw.mean(fw.to_tensor([1, 2])).item(), fw.mean(fw.to_tensor([1, 2]), dtype="int64").item()
        (1.5, 1)
    """
    x = _check(x, "mean")
    want = None
    if dtype is not None:
        x = cast(x, dtype)
        if not _dt.is_floating(x.dtype) and x.dtype.kind != "c":
            want, x = x.dtype, cast(x, _dt.float64)  # an integer mean asked for: truncated after
    if not _dt.is_floating(x.dtype) and x.dtype.kind != "c":
        x = cast(x, _dt.get_default_dtype())
    axes = normalize_axes("mean", axis, x.ndim)
    n = 1
    for a in axes:
        n *= x.shape[a]
    if want is not None:
        if not n:
            raise OpArgumentError(
                f"[mean] the mean over an empty axis of shape {x.shape} has no {want} value"
            )
        return cast(_reduce("sum", x, axes, keepdim) / n, want)
    return _reduce("sum", x, axes, keepdim) * (1.0 / n if n else float("nan"))


def all(x: Tensor, axis: Any = None, keepdim: bool = False) -> Tensor:
    """Whether every element of ``x`` over ``axis`` is true (non-zero).

    Args:
        x (Tensor): the input, read as bool.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        keepdim (bool): keep the reduced axes, with size 1.

    Returns:
        Tensor: bool; True for an empty ``x``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[True, False], [True, True]])
        >>> fw.all(x, axis=1)
        Tensor(shape=[2], dtype=bool, device=cpu:0,
               [False,  True])
        >>> fw.all(x).item()
        False
    """
    return cast(
        _reduce("min", cast(x, _dt.uint8), axis, keepdim)
        if x.numel()
        else _const(True, _dt.bool_, x.device).reshape(()),
        _dt.bool_,
    )


def any(x: Tensor, axis: Any = None, keepdim: bool = False) -> Tensor:
    """Whether some element of ``x`` over ``axis`` is true (non-zero).

    Args:
        x (Tensor): the input, read as bool.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        keepdim (bool): keep the reduced axes, with size 1.

    Returns:
        Tensor: bool; False for an empty ``x``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[0, 0], [0, 3]])
        >>> fw.any(x, axis=1)
        Tensor(shape=[2], dtype=bool, device=cpu:0,
               [False,  True])
    """
    return cast(
        _reduce("max", cast(x, _dt.uint8), axis, keepdim)
        if x.numel()
        else _const(False, _dt.bool_, x.device).reshape(()),
        _dt.bool_,
    )


def count_nonzero(x: Tensor, axis: Any = None, keepdim: bool = False) -> Tensor:
    """Number of non-zero elements of ``x`` over ``axis``.

    Args:
        x (Tensor): the input.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        keepdim (bool): keep the reduced axes, with size 1.

    Returns:
        Tensor: int64 counts.

    Example:
        >>> import framework as fw
        >>> fw.count_nonzero(fw.to_tensor([[0, 1, 2], [0, 0, 3]]), axis=1)
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [2, 1])
    """
    return sum(cast(x, _dt.bool_), axis=axis, keepdim=keepdim)
