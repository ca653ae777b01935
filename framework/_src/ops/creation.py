"""Tensor creation: full/zeros/ones/empty/arange/eye/linspace and their ``_like`` forms."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .. import device as _dev
from .. import dispatch
from .. import dtypes as _dt
from .. import tensor as _t
from ..tensor import Tensor
from .base import OPS, apply1
from .base import full_tensor as _full


def _shape(name: str, shape: Any) -> tuple[int, ...]:
    if isinstance(shape, Tensor):
        shape = shape.tolist()
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        out = tuple(
            s if isinstance(s, int) and type(s) is not bool else int(s) for s in shape
        )  # a traced size kept
        bad = [s for s, o in zip(shape, out) if isinstance(s, float) or o != s]
    except (TypeError, ValueError):
        raise OpArgumentError(f"[{name}] shape must be a sequence of ints, got {shape!r}") from None
    if bad or any(s < 0 for s in out):
        raise OpArgumentError(f"[{name}] shape must hold non-negative ints, got {tuple(shape)!r}")
    if math.prod(out) >= 2**62:
        raise OpArgumentError(
            f"[{name}] shape {out} has {math.prod(out)} elements, more than any device can hold; check the shape"
        )
    if math.prod(max(s, 1) for s in out) >= 2**62:  # numpy refuses such a shape even with no elements
        raise OpArgumentError(
            f"[{name}] shape {out} has a dim of {max(out)}: its dims multiply past 2**62 (counting 0 as 1), "
            "more than any array can index; check the shape"
        )
    return out


def _device(device: Any) -> _dev.Device:
    return _dev.get_device() if device is None else _dev.parse(device)


def full(
    shape: Any, fill_value: Any, dtype: Any = None, device: Any = None, name: str | None = None
) -> Tensor:
    """A tensor of ``shape`` filled with ``fill_value``.

    Args:
        shape (int | list[int] | tuple[int] | Tensor): the shape.
        fill_value (number | bool | Tensor): the value; a 0-d tensor is read as a number.
        dtype (str | np.dtype, optional): default the dtype of ``fill_value`` (bool, int64, or the
            default float dtype).
        device (str | Device, optional): default the current device.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> fw.full([2, 3], 1.5)
        Tensor(shape=[2, 3], dtype=float32, device=cpu:0,
               [[1.5, 1.5, 1.5],
                [1.5, 1.5, 1.5]])
        >>> fw.full([2], 7).dtype
        dtype('int64')
    """
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    d = _dt.as_dtype(dtype, "full") if dtype is not None else _dt.infer_dtype(fill_value)
    return _full(_shape("full", shape), fill_value, d, _device(device))


def zeros(shape: Any, dtype: Any = None, device: Any = None, name: str | None = None) -> Tensor:
    """A tensor of ``shape`` filled with zeros.

    Args:
        shape (int | list[int] | tuple[int] | Tensor): the shape.
        dtype (str | np.dtype, optional): default :func:`get_default_dtype` (float32).
        device (str | Device, optional): default the current device.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> fw.zeros([2, 3])
        Tensor(shape=[2, 3], dtype=float32, device=cpu:0,
               [[0., 0., 0.],
                [0., 0., 0.]])
        >>> fw.zeros(2, dtype="int32").tolist()
        [0, 0]
    """
    d = _dt.as_dtype(dtype, "zeros") if dtype is not None else _dt.get_default_dtype()
    return _full(_shape("zeros", shape), 0, d, _device(device))


def ones(shape: Any, dtype: Any = None, device: Any = None, name: str | None = None) -> Tensor:
    """A tensor of ``shape`` filled with ones.

    Args:
        shape (int | list[int] | tuple[int] | Tensor): the shape.
        dtype (str | np.dtype, optional): default :func:`get_default_dtype` (float32).
        device (str | Device, optional): default the current device.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> fw.ones([2, 2], dtype="int64")
        Tensor(shape=[2, 2], dtype=int64, device=cpu:0,
               [[1, 1],
                [1, 1]])
    """
    d = _dt.as_dtype(dtype, "ones") if dtype is not None else _dt.get_default_dtype()
    return _full(_shape("ones", shape), 1, d, _device(device))


def empty(shape: Any, dtype: Any = None, device: Any = None, name: str | None = None) -> Tensor:
    """A tensor of ``shape`` whose values are not initialised.

    Args:
        shape (int | list[int] | tuple[int] | Tensor): the shape.
        dtype (str | np.dtype, optional): default :func:`get_default_dtype` (float32).
        device (str | Device, optional): default the current device.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a new tensor; read it only after writing it.

    Example:
        >>> import framework as fw
        >>> x = fw.empty([2, 3], dtype="float64")
        >>> x.shape, x.dtype
        ((2, 3), dtype('float64'))
    """
    d = _dt.as_dtype(dtype, "empty") if dtype is not None else _dt.get_default_dtype()
    return _t.empty(_shape("empty", shape), d, _device(device))


def _like(x: Tensor, dtype: Any) -> tuple[np.dtype, _dev.Device]:
    if not isinstance(x, Tensor):
        raise OpArgumentError(f"[*_like] expected a Tensor, got {type(x).__name__}")
    return (_dt.as_dtype(dtype) if dtype is not None else x.dtype), x.device


def full_like(x: Tensor, fill_value: Any, dtype: Any = None) -> Tensor:
    """A tensor of ``x``'s shape and device filled with ``fill_value``.

    Args:
        x (Tensor): gives the shape, the device and (by default) the dtype.
        fill_value (number | bool): the value.
        dtype (str | np.dtype, optional): default ``x.dtype``.

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> fw.full_like(fw.to_tensor([1, 2, 3]), 9)
        Tensor(shape=[3], dtype=int64, device=cpu:0,
               [9, 9, 9])
    """
    d, dev = _like(x, dtype)
    return _full(x.shape, fill_value, d, dev)


def zeros_like(x: Tensor, dtype: Any = None) -> Tensor:
    """A tensor of ``x``'s shape and device filled with zeros.

    Args:
        x (Tensor): gives the shape, the device and (by default) the dtype.
        dtype (str | np.dtype, optional): default ``x.dtype``.

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> fw.zeros_like(fw.to_tensor([[1.0, 2.0]]))
        Tensor(shape=[1, 2], dtype=float32, device=cpu:0,
               [[0., 0.]])
    """
    d, dev = _like(x, dtype)
    return _full(x.shape, 0, d, dev)


def ones_like(x: Tensor, dtype: Any = None) -> Tensor:
    """A tensor of ``x``'s shape and device filled with ones.

    Args:
        x (Tensor): gives the shape, the device and (by default) the dtype.
        dtype (str | np.dtype, optional): default ``x.dtype``.

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> fw.ones_like(fw.to_tensor([1, 2]), dtype="float32")
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [1., 1.])
    """
    d, dev = _like(x, dtype)
    return _full(x.shape, 1, d, dev)


def empty_like(x: Tensor, dtype: Any = None) -> Tensor:
    """A tensor of ``x``'s shape and device whose values are not initialised.

    Args:
        x (Tensor): gives the shape, the device and (by default) the dtype.
        dtype (str | np.dtype, optional): default ``x.dtype``.

    Returns:
        Tensor: a new tensor; read it only after writing it.

    Example:
        >>> import framework as fw
        >>> y = fw.empty_like(fw.ones([3, 1], dtype="int32"))
        >>> y.shape, y.dtype
        ((3, 1), dtype('int32'))
    """
    d, dev = _like(x, dtype)
    return _t.empty(x.shape, d, dev)


def arange(
    start: Any = 0,
    end: Any = None,
    step: Any = 1,
    dtype: Any = None,
    device: Any = None,
    name: str | None = None,
) -> Tensor:
    """The numbers ``start, start + step, ...`` below ``end`` (``arange(5)`` is 0..4).

    Args:
        start (number | Tensor): the first value; with ``end`` omitted, the end (start 0).
        end (number | Tensor, optional): the bound, not included.
        step (number | Tensor): the spacing, not 0; may be negative.
        dtype (str | np.dtype, optional): default int64 when all of start, end and step are ints,
            else :func:`get_default_dtype`.
        device (str | Device, optional): default the current device.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a 1-d tensor of ``ceil((end - start) / step)`` values.

    Example:
        >>> import framework as fw
        >>> fw.arange(5)
        Tensor(shape=[5], dtype=int64, device=cpu:0,
               [0, 1, 2, 3, 4])
        >>> fw.arange(1.0, 2.0, 0.25).tolist()
        [1.0, 1.25, 1.5, 1.75]
    """
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    for n, v in (("start", start), ("end", end), ("step", step)):
        if not isinstance(v, (int, float, np.number)) or isinstance(v, bool):
            raise OpArgumentError(f"[arange] {n} must be a number, got {type(v).__name__} {v!r}")
    if step == 0:
        raise OpArgumentError("[arange] step must not be 0")
    if dtype is None:
        d = _dt.int64 if all(isinstance(v, (int, np.integer)) for v in vals) else _dt.get_default_dtype()
    else:
        d = _dt.as_dtype(dtype, "arange")
    return _arange_n(start, step, max(0, math.ceil((end - start) / step)), d, device)


def _arange_n(start: Any, step: Any, n: int, d: np.dtype, device: Any) -> Tensor:
    return dispatch.run(
        OPS["arange"], [], {"start": start, "step": step, "dtype": d}, _device(device), [((n,), d)]
    )[0]


def inclusive_range(
    start: Any = 0, end: Any = None, step: Any = 1, dtype: Any = None, name: str | None = None
) -> Tensor:
    """Paddle's ``range``: the numbers ``start, start + step, ...`` up to ``end`` included.

    Exported as ``fw.range``.

    Args:
        start (number | Tensor): the first value; with ``end`` omitted, the end (start 0).
        end (number | Tensor, optional): the bound, included when the steps reach it.
        step (number | Tensor): the spacing, not 0; may be negative.
        dtype (str | np.dtype, optional): default float32, as Paddle's.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a 1-d tensor of ``floor((end - start) / step) + 1`` values.

    Example:
        >>> import framework as fw
        >>> fw.range(5).tolist()
        [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        >>> fw.range(3, 9, 2.0).tolist()
        [3.0, 5.0, 7.0, 9.0]
    """
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    for n, v in zip(("start", "end", "step"), vals):
        if not isinstance(v, (int, float, np.number)) or isinstance(v, bool):
            raise OpArgumentError(f"[range] {n} must be a number, got {type(v).__name__} {v!r}")
    start, end, step = vals
    if step == 0:
        raise OpArgumentError("[range] step must not be 0")
    d = _dt.float32 if dtype is None else _dt.as_dtype(dtype, "range")
    return _arange_n(start, step, max(0, math.floor((end - start) / step) + 1), d, None)


def linspace(
    start: float,
    stop: float,
    num: int,
    dtype: Any = None,
    device: Any = None,
    name: str | None = None,
    *,
    requires_grad: bool = False,
) -> Tensor:
    """``num`` evenly spaced numbers from ``start`` to ``stop``, both included.

    Args:
        start (float): the first value.
        stop (float): the last value.
        num (int): how many values, >= 0.
        dtype (str | np.dtype, optional): default :func:`get_default_dtype`.
        device (str | Device, optional): default the current device.
        name: ignored (Paddle's signature).
        requires_grad (bool): True: a gradient is computed for it (``stop_gradient=False``).

    Returns:
        Tensor: a 1-d tensor of ``num`` values.

    Example:
        >>> import framework as fw
        >>> fw.linspace(0.0, 1.0, 5)
        Tensor(shape=[5], dtype=float32, device=cpu:0,
               [0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    if num < 0:
        raise OpArgumentError(f"[linspace] num must be >= 0, got {num}")
    d = _dt.as_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
    if num == 1:
        out = full((1,), start, d, device)
        out.stop_gradient = not requires_grad
        return out
    step = (stop - start) / (num - 1) if num > 1 else 0.0
    out = arange(0, num, 1, dtype=d, device=device) * step + start
    out.stop_gradient = not requires_grad
    return out


def eye(num_rows: int, num_columns: int | None = None, dtype: Any = None, device: Any = None) -> Tensor:
    """The identity matrix: ones on the diagonal, zeros elsewhere.

    Args:
        num_rows (int): the number of rows.
        num_columns (int, optional): the number of columns; default ``num_rows``.
        dtype (str | np.dtype, optional): default :func:`get_default_dtype`.
        device (str | Device, optional): default the current device.

    Returns:
        Tensor: a ``[num_rows, num_columns]`` tensor.

    Example:
        >>> import framework as fw
        >>> fw.eye(2, 3)
        Tensor(shape=[2, 3], dtype=float32, device=cpu:0,
               [[1., 0., 0.],
                [0., 1., 0.]])
    """
    m = num_rows if num_columns is None else num_columns
    for what, v in (("num_rows", num_rows), ("num_columns", m)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
            raise OpArgumentError(f"[eye] {what} must be a non-negative int, got {v!r}")
    r = arange(num_rows, device=device).reshape((num_rows, 1))
    c = arange(m, device=device).reshape((1, m))
    return (r == c).astype(dtype if dtype is not None else _dt.get_default_dtype())


def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims of ``x``; the rest set to zero.

    Args:
        x (Tensor): at least 2-d; leading dims are a batch.
        diagonal (int): the diagonal to keep up to: 0 the main one, > 0 above it, < 0 below it.

    Returns:
        Tensor: a tensor like ``x``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
        >>> fw.tril(x)
        Tensor(shape=[3, 3], dtype=int64, device=cpu:0,
               [[1, 0, 0],
                [4, 5, 0],
                [7, 8, 9]])
        >>> fw.tril(x, diagonal=-1).tolist()
        [[0, 0, 0], [4, 0, 0], [7, 8, 0]]
    """
    n, m = x.shape[-2:]
    r = arange(n, device=x.device).reshape((n, 1))
    c = arange(m, device=x.device).reshape((1, m))
    return apply1(OPS["where"], [c - r <= diagonal, x, zeros_like(x)], {})


def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims of ``x``; the rest set to zero.

    Args:
        x (Tensor): at least 2-d; leading dims are a batch.
        diagonal (int): the diagonal to keep from: 0 the main one, > 0 above it, < 0 below it.

    Returns:
        Tensor: a tensor like ``x``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
        >>> fw.triu(x)
        Tensor(shape=[3, 3], dtype=int64, device=cpu:0,
               [[1, 2, 3],
                [0, 5, 6],
                [0, 0, 9]])
        >>> fw.triu(x, diagonal=1).tolist()
        [[0, 2, 3], [0, 0, 6], [0, 0, 0]]
    """
    n, m = x.shape[-2:]
    r = arange(n, device=x.device).reshape((n, 1))
    c = arange(m, device=x.device).reshape((1, m))
    return apply1(OPS["where"], [c - r >= diagonal, x, zeros_like(x)], {})
