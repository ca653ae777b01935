"""Paddle's stride-based functions: ``as_strided``, ``unfold`` (sliding windows), ``view``,
``view_as``, and the in-place ``set_`` and ``resize_``.

Oarlock's tensors are contiguous, so each gives a new tensor holding the values the strided
view would show (a gather at offsets computed once on the host from the shapes), not memory
shared with the input: writing into the result does not change ``x``. ``view`` with a shape is
``reshape``; ``view`` with a dtype reinterprets the bytes, on the host (no device op reads a
float's bits), and has no gradient.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor, to_tensor
from .. import creation as C
from .. import indexing as I
from .. import shape as S
from ._common import axis_arg, tensor_arg


def _ints(name: str, what: str, v: Any) -> list[int]:
    if isinstance(v, Tensor):
        v = v.tolist()
    if isinstance(v, (int, np.integer)):
        v = [v]
    try:
        return [int(i.item() if isinstance(i, Tensor) else i) for i in v]
    except (TypeError, ValueError):
        raise OpArgumentError(f"[{name}] {what} must be a list of ints, got {v!r}") from None


def as_strided(
    x: Tensor, shape: Sequence[int], stride: Sequence[int], offset: int = 0, name: str | None = None
) -> Tensor:
    """The tensor of ``shape`` whose element ``i`` is ``x``'s flat element ``start + sum(i_d * stride_d)``.

    A new tensor (Oarlock's tensors do not share strided memory): the values are those of
    Paddle's view; writing into the result leaves ``x`` unchanged.

    Args:
        x (Tensor): the input, read as its flat (row-major) elements.
        shape (list[int]): the result's shape.
        stride (list[int]): the step in flat elements along each dim of the result.
        offset (int): where the result starts, in bytes (Paddle's unit): ``start = offset /
            x.element_size()``, a whole number.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``shape`` and ``x``'s dtype.

    Example:
        >>> import framework as fw
        >>> fw.as_strided(fw.arange(6), [2, 2], [3, 1], 8).tolist()
        [[1, 2], [4, 5]]
    """
    x = tensor_arg("as_strided", x)
    shp, st = _ints("as_strided", "shape", shape), _ints("as_strided", "stride", stride)
    if len(shp) != len(st):
        raise OpArgumentError(f"[as_strided] shape {shp} and stride {st} must have one entry per dim")
    if any(s < 0 for s in shp) or any(s < 0 for s in st) or offset < 0:
        raise OpArgumentError(
            f"[as_strided] shape, stride and offset must be non-negative, got {shp}, {st}, {offset}"
        )
    if offset % x.dtype.itemsize:
        raise OpArgumentError(
            f"[as_strided] offset {offset} is in bytes and must be a multiple of the {x.dtype} item size {x.dtype.itemsize}"
        )
    pos = np.full(shp, offset // x.dtype.itemsize, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shp, st)):
        view = [1] * len(shp)
        view[d] = n
        pos = pos + (np.arange(n, dtype=np.int64) * s).reshape(view)
    if pos.size and int(pos.max()) >= x.numel():
        raise OpArgumentError(
            f"[as_strided] shape {shp}, stride {st} and offset {offset} reach flat element {int(pos.max())}, "
            f"but x has {x.numel()} elements"
        )
    flat = x.reshape((-1,))
    idx = to_tensor(pos.reshape(-1), device=x.device)
    return I.take_rows(flat, idx, 0).reshape(tuple(shp))


def unfold(x: Tensor, axis: int, size: int, step: int, name: str | None = None) -> Tensor:
    """The windows of ``size`` elements along ``axis``, ``step`` apart, as a new last dim.

    Args:
        x (Tensor): the input.
        axis (int): the dim the windows slide along.
        size (int): each window's length (at most ``x.shape[axis]``).
        step (int): the distance between window starts (positive).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``x``'s shape with ``axis`` replaced by the window count
        ``(x.shape[axis] - size) // step + 1``, and a last dim of ``size``.

    Example:
        >>> import framework as fw
        >>> fw.unfold(fw.arange(9, dtype="float64"), 0, 2, 4).tolist()
        [[0.0, 1.0], [4.0, 5.0]]
    """
    x = tensor_arg("unfold", x)
    ax = axis_arg("unfold", axis, x.ndim)
    n = x.shape[ax] if x.ndim else 1
    if not 0 < size <= n or step <= 0:
        raise OpArgumentError(
            f"[unfold] size must be in (0, {n}] (the length of axis {axis}) and step positive, got size={size}, step={step}"
        )
    count = (n - size) // step + 1
    pos = (np.arange(count)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
    src = x if x.ndim else x.reshape((1,))
    picked = I.take_rows(src, to_tensor(pos.astype(np.int64), device=x.device), ax)
    shp = src.shape[:ax] + (count, size) + src.shape[ax + 1 :]
    perm = [d for d in range(len(shp)) if d != ax + 1] + [ax + 1]
    return S.transpose(picked.reshape(shp), perm)


def view(x: Tensor, shape_or_dtype: Any, name: str | None = None) -> Tensor:
    """``x`` with a new shape (as :func:`reshape`), or its bytes read as another dtype.

    With a dtype, the last dim is scaled by the ratio of the item sizes (``float32`` to
    ``uint8``: times 4). That reinterpretation runs on the host and has no gradient.

    Args:
        x (Tensor): the input.
        shape_or_dtype (list[int] | str | np.dtype): the new shape (``-1`` inferred), or a dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the reshaped or reinterpreted tensor.

    Example:
        >>> import framework as fw
        >>> fw.view(fw.zeros([2, 4, 6]), [8, -1]).shape
        (8, 6)
        >>> fw.view(fw.ones([1]), "uint8").tolist()
        [0, 0, 128, 63]
    """
    x = tensor_arg("view", x)
    if isinstance(shape_or_dtype, (list, tuple, Tensor)):
        return S.reshape(x, tuple(_ints("view", "shape", shape_or_dtype)))
    d = _dt.as_dtype(shape_or_dtype, "view")
    a = np.ascontiguousarray(x.numpy())
    if a.ndim == 0 or (a.shape[-1] * a.dtype.itemsize) % d.itemsize:
        raise OpArgumentError(
            f"[view] the last dim of x (shape {list(x.shape)}, {x.dtype}) must hold a whole number of {d} items"
        )
    return to_tensor(a.view(d), device=x.device)


def view_as(x: Tensor, other: Tensor, name: str | None = None) -> Tensor:
    """``x`` reshaped to ``other``'s shape.

    Args:
        x (Tensor): the input.
        other (Tensor): gives the shape.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``other``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.view_as(fw.zeros([2, 4, 6]), fw.zeros([8, 6])).shape
        (8, 6)
    """
    return S.reshape(tensor_arg("view_as", x), tuple(tensor_arg("view_as", other, "other").shape))


def set_(
    x: Tensor,
    source: Tensor | None = None,
    shape: Sequence[int] | None = None,
    stride: Sequence[int] | None = None,
    offset: int = 0,
    name: str | None = None,
) -> Tensor:
    """``x`` made to hold ``source`` (in place): its storage itself, or a strided selection of it.

    With only ``source``, ``x`` shares ``source``'s storage (``x._is_shared_buffer_with(source)``);
    with ``shape``, ``stride`` or ``offset`` (bytes, as Paddle's), ``x`` holds the values of that
    strided view of ``source`` (:func:`as_strided`; contiguous strides by default), a copy.
    Without ``source``, ``x`` becomes empty (shape ``[0]``).

    Args:
        x (Tensor): the tensor to change.
        source (Tensor, optional): the tensor to take from.
        shape (list[int], optional): the new shape; default ``source``'s.
        stride (list[int], optional): the strides, in elements; default contiguous.
        offset (int): the start, in bytes.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``x``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1.0, 2.0, 3.0])
        >>> x.set_(fw.to_tensor([11.0, 22.0, 33.0, 44.0, 55.0, 66.0]), shape=[3], stride=[2]).tolist()
        [11.0, 33.0, 55.0]
    """
    x = tensor_arg("set_", x)
    if source is None:
        r = C.empty([0], dtype=x.dtype, device=x.device)
    else:
        source = tensor_arg("set_", source, "source")
        if source.dtype != x.dtype:
            raise OpArgumentError(f"[set_] source has dtype {source.dtype}, x has {x.dtype}; cast one first")
        if shape is None and stride is None and offset == 0:
            r = source
        else:
            shp = list(source.shape) if shape is None else _ints("set_", "shape", shape)
            st = _contiguous(shp) if stride is None else _ints("set_", "stride", stride)
            r = as_strided(source, shp, st, offset)
    I.rebind(x, r, "set_", I.alias(x))
    return x


def _contiguous(shape: list[int]) -> list[int]:
    return [int(np.prod(shape[d + 1 :])) for d in range(len(shape))]


def resize_(x: Tensor, shape: Sequence[int], fill_zero: bool = False, name: str | None = None) -> Tensor:
    """``x`` given a new shape in place: its flat elements, cut to size or continued.

    New elements are zeros (Paddle leaves them uninitialized unless ``fill_zero``; here they are
    always zeros, so nothing depends on stale memory).

    Args:
        x (Tensor): the tensor to change.
        shape (list[int]): the new shape.
        fill_zero (bool): Paddle's flag; the new elements are zeros either way.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``x``.

    Example:
        >>> import framework as fw
        >>> fw.to_tensor([1.0, 2.0, 3.0]).resize_([2, 3], fill_zero=True).tolist()
        [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]
    """
    x = tensor_arg("resize_", x)
    shp = _ints("resize_", "shape", shape)
    if any(s < 0 for s in shp):
        raise OpArgumentError(f"[resize_] shape must be non-negative, got {shp}")
    n, flat = int(np.prod(shp)), x.reshape((-1,))
    if n <= flat.shape[0]:
        r = flat[:n]
    else:
        r = S.concat([flat, C.zeros([n - flat.shape[0]], dtype=x.dtype, device=x.device)], axis=0)
    I.rebind(x, r.reshape(tuple(shp)), "resize_", I.alias(x))
    return x


def is_shared_buffer_with(x: Tensor, other: Tensor) -> bool:
    """Whether ``x`` and ``other`` hold the same storage (Paddle's ``_is_shared_buffer_with``).

    Args:
        x (Tensor): one tensor.
        other (Tensor): the other.

    Returns:
        bool: they share their storage block.

    Example:
        >>> import framework as fw
        >>> a = fw.ones([2])
        >>> a._is_shared_buffer_with(fw.zeros([1]).set_(a))
        True
    """
    return x._block is tensor_arg("_is_shared_buffer_with", other, "other")._block
