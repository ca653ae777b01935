"""The constructors Paddle keeps under ``paddle.tensor.creation`` only: ``fill_constant``,
``create_global_var``, ``create_parameter``, ``tensor`` and ``dtype_tensor_factory`` (the maker
of ``paddle.FloatTensor`` and its kin). Each is built from Oarlock's own ``full``,
``to_tensor``, ``empty`` and :meth:`Layer.create_parameter`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src import dtypes as _dt
from .._src.ops import creation as C
from .._src.ops import indexing as I
from .._src.ops import math as M
from .._src.tensor import Tensor, to_tensor


def fill_constant(
    shape: Any,
    dtype: Any,
    value: Any,
    force_cpu: bool = False,
    out: Tensor | None = None,
    place: Any = None,
    name: str | None = None,
) -> Tensor:
    """A tensor of ``shape`` and ``dtype`` with every element ``value`` (Paddle's
    ``paddle.tensor.creation.fill_constant``; :func:`framework.full` with Paddle's argument order).

    Args:
        shape (int | list[int]): the shape.
        dtype (str | np.dtype): the dtype.
        value (bool | float | Tensor): the value.
        force_cpu (bool): make it on the cpu whatever the current device.
        out (Tensor, optional): receives the result (its dtype must be ``dtype``).
        place (str, optional): the device; default the current one.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a new tensor that does not require grad (``out`` when given).

    Example:
        >>> import framework as fw
        >>> fw.tensor.creation.fill_constant([2, 2], "int32", 7).tolist()
        [[7, 7], [7, 7]]
    """
    shape = [shape] if isinstance(shape, int) else shape
    if isinstance(value, Tensor):
        value = value.item()
    r = C.full(shape, value, dtype=dtype, device="cpu" if force_cpu else place)
    if out is None:
        return r
    if out.dtype != r.dtype:
        raise OpArgumentError(f"[fill_constant] out's dtype is {out.dtype}, expected dtype {r.dtype}")
    I.rebind(out, r, "fill_constant", I.alias(out))
    out.stop_gradient = True
    return out


def create_global_var(
    shape: Any,
    value: float,
    dtype: Any,
    persistable: bool = False,
    force_cpu: bool = False,
    name: str | None = None,
) -> Tensor:
    """A tensor filled with ``value`` (Paddle's ``paddle.tensor.creation.create_global_var``: in
    dynamic mode, as here, the "global block" is just a tensor that does not require grad).

    Args:
        shape (list[int]): the shape.
        value (float): the value of every element.
        dtype (str | np.dtype): the dtype.
        persistable (bool): sets the tensor's ``persistable`` flag.
        force_cpu (bool): make it on the cpu whatever the current device.
        name (str, optional): the tensor's name.

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> v = fw.tensor.creation.create_global_var([2], 1.5, "float32", persistable=True, name="step")
        >>> v.tolist(), v.persistable, v.name
        ([1.5, 1.5], True, 'step')
    """
    t = fill_constant(shape, dtype, value, force_cpu=force_cpu)
    t.persistable = bool(persistable)
    if name is not None:
        t.name = name
    return t


def create_parameter(
    shape: Any,
    dtype: Any,
    name: str | None = None,
    attr: Any = None,
    is_bias: bool = False,
    default_initializer: Any = None,
) -> Any:
    """A new trainable parameter (Paddle's ``paddle.create_parameter``): drawn from ``attr``'s
    initializer, else ``default_initializer``, else Xavier-uniform (zeros for a bias).

    Args:
        shape (list[int]): the shape.
        dtype (str | np.dtype): the dtype.
        name (str, optional): the parameter's name (``attr``'s name wins).
        attr (ParamAttr, optional): initializer, learning rate, regularizer, trainability.
        is_bias (bool): zeros by default instead of Xavier-uniform.
        default_initializer (Initializer, optional): used when ``attr`` gives none.

    Returns:
        Parameter: requires grad.

    Example:
        >>> import framework as fw
        >>> b = fw.tensor.creation.create_parameter([3], "float32", is_bias=True)
        >>> b.tolist(), b.stop_gradient
        ([0.0, 0.0, 0.0], False)
    """
    from ..nn.layer import Layer  # noqa: PLC0415  (framework.nn imports framework.tensor)

    p = Layer().create_parameter(
        shape, attr if attr is not None else name, dtype, is_bias, default_initializer
    )
    if name is not None and p.name != name and (attr is None or getattr(attr, "name", None) is None):
        p.name = name
    return p


def tensor(
    data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False, pin_memory: bool = False
) -> Tensor:
    """A new tensor of ``data`` (Paddle's ``paddle.tensor(data, dtype, device, requires_grad)``;
    ``fw.tensor(...)`` called directly is the same).

    Args:
        data (scalar | list | tuple | np.ndarray | Tensor): the values (a tensor is copied).
        dtype (str | np.dtype, optional): default: from ``data`` (a Python float: the default dtype).
        device (str, optional): default the current device.
        requires_grad (bool): the result requires grad.
        pin_memory (bool): accepted; page-locked host memory is the device plugin's concern.

    Returns:
        Tensor: a new tensor.

    Example:
        >>> import framework as fw
        >>> t = fw.tensor.creation.tensor([1.0, 2.0], requires_grad=True)
        >>> t.dtype, t.stop_gradient
        (dtype('float32'), False)
    """
    return to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def dtype_tensor_factory(dtype: Any) -> type:
    """A class whose call makes ``dtype`` tensors (how Paddle defines ``paddle.FloatTensor``,
    ``LongTensor``...): no argument, an empty 1-d tensor; a list, its values; ints, an
    uninitialised tensor of that shape; an array or a tensor, its values in ``dtype``.

    Args:
        dtype (str | np.dtype): the dtype of the tensors made.

    Returns:
        type: call it as ``F()``, ``F([1, 2])``, ``F(2, 3)`` or ``F(array)``.

    Example:
        >>> import framework as fw
        >>> IntTensor = fw.tensor.creation.dtype_tensor_factory("int32")
        >>> IntTensor([1, 2]).dtype, IntTensor(2, 3).shape, IntTensor().shape
        (dtype('int32'), (2, 3), (0,))
    """

    class _DtypeTensorFactory:
        def __new__(cls, *args: Any, **kwargs: Any) -> Tensor:  # type: ignore[misc]
            if not args:
                return C.empty([0], dtype=dtype)
            if len(args) == 1 and isinstance(args[0], (list, tuple)):
                return to_tensor(args[0], dtype=dtype)
            if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
                return C.empty(list(args), dtype=dtype)
            if len(args) == 1 and isinstance(args[0], (np.ndarray, Tensor)):
                a = args[0]
                return M.cast(a, dtype) if isinstance(a, Tensor) else to_tensor(a, dtype=dtype, **kwargs)
            raise OpArgumentError(
                f"[dtype_tensor_factory] a {dtype} tensor is made from nothing, a list, ints (a shape) or "
                f"one array, got {', '.join(type(a).__name__ for a in args)}"
            )

    _DtypeTensorFactory.__name__ = _DtypeTensorFactory.__qualname__ = f"{_dt.as_dtype(dtype).name}_tensor"
    return _DtypeTensorFactory
