"""An array module that behaves like cupy where the CUDA kernel bodies can go wrong, on numpy.

The kernel bodies (plugins/cuda/kernels.py) are written against an array module ``xp``. Run
with plain numpy they cannot show the mistakes that only appear with cupy: a *numpy* function
or ufunc given a device array together with something cupy does not accept (a host array, a
dtype), or a cupy routine whose ``out=`` path is broken. :data:`xp` is numpy with those rules:

- arrays are :class:`DeviceArray` (a numpy subclass standing for ``cupy.ndarray``);
- a numpy ufunc applied to a device array works only when every operand is a device array or
  a scalar, as ``cupy.ndarray.__array_ufunc__`` does; otherwise it raises numpy's own
  ``TypeError: operand type(s) all returned NotImplemented from __array_ufunc__``;
- a numpy *function* (``np.copyto``, ``np.sum``…) applied to a device array raises: kernel
  bodies call ``xp.<name>``, never ``np.<name>``, on device data;
- ``xp.<function>`` refuses host numpy arrays (cupy raises ``TypeError: Unsupported type``);
  ``xp.asarray`` is the explicit host-to-device transfer;
- a float-to-integer conversion (``astype``, ``copyto``) clamps to the target's range and
  turns NaN into 0, as CUDA's ``cvt`` does (``-1.5 -> uint8`` is 0 on a GPU, 255 in numpy);
- ``min`` / ``amin`` with ``out=`` raise as cupy's do: cupy's ``_ndarray_min`` passes ``out``
  where ``cub_reduction`` expects ``dtype`` (cupy 14.x with the default CUB accelerator), which
  ends in ``equal(<device array>, <dtype>)``.

Example::

    from cupy_like import xp, to_device, to_host
    out = xp.empty((3,), xp.float32)
    body(xp, [out], [to_device(a)])
    result = to_host(out)
"""

from __future__ import annotations

from typing import Any

import numpy as np

_SCALARS = (int, float, bool, complex, np.generic)


class DeviceArray(np.ndarray):
    """A numpy array standing for a ``cupy.ndarray`` (memory on the device)."""

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out", ())
        for v in (*inputs, *out):
            if not isinstance(v, (DeviceArray, *_SCALARS)) and v is not None:
                return NotImplemented  # what cupy does with a host array or a dtype operand
        args = [_host_view(v) for v in inputs]
        if out:
            kwargs["out"] = tuple(_host_view(v) for v in out)
        result = getattr(ufunc, method)(*args, **kwargs)
        if out:
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise TypeError(
            f"numpy.{func.__name__} applied to a device array; a kernel body calls "
            f"xp.{func.__name__}, which is cupy on the GPU"
        )

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> Any:
        return _wrap(_cuda_convert(_host_view(self), np.dtype(dtype)).astype(dtype, *args, **kwargs))

    def min(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
        if out is not None:
            _min_out_quirk(self)
        return _wrap(_host_view(self).min(axis=axis, keepdims=keepdims, **kw))


def _min_out_quirk(a: Any) -> None:
    # NOTE: cupy 14.2 with CUB (the default accelerator): ndarray.min(out=...) calls
    # cub_reduction(self, MIN, axis, out, dtype, keepdims) with out and dtype swapped.
    np.equal(a, np.dtype(a.dtype))


def _cuda_convert(a: Any, dtype: np.dtype) -> Any:
    """``a`` ready for a numpy cast to ``dtype`` that gives what CUDA gives: float to integer
    truncates toward zero, clamps to the target's range, NaN becomes 0."""
    if not (isinstance(a, np.ndarray) and a.dtype.kind == "f" and dtype.kind in "iu"):
        return a
    info = np.iinfo(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        t = np.trunc(a.astype(np.float64))
        t = np.where(np.isnan(t), 0.0, t)
        big = t >= float(info.max)
        small = t <= float(info.min)
        out = np.where(big | small, 0, t).astype(dtype)
    out[big], out[small] = info.max, info.min
    return out


def _host_view(v: Any) -> Any:
    return v.view(np.ndarray) if isinstance(v, DeviceArray) else v


def _wrap(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.view(DeviceArray)
    if isinstance(v, np.generic):  # cupy reductions give 0-d device arrays, not scalars
        return np.asarray(v).view(DeviceArray)
    if isinstance(v, tuple):
        return tuple(_wrap(x) for x in v)
    return v


def _to_numpy_args(name: str, v: Any) -> Any:
    if isinstance(v, DeviceArray):
        return v.view(np.ndarray)
    if isinstance(v, np.ndarray):
        raise TypeError(
            f"Unsupported type {type(v)}: xp.{name} got a host numpy array; copy it to the "
            "device first (xp.asarray)"
        )
    if isinstance(v, (list, tuple)):
        return type(v)(_to_numpy_args(name, x) for x in v)
    return v


def _device_function(name: str, fn: Any) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        if name == "copyto" and len(args) >= 2:
            dst, src = args[0], args[1]
            src = (
                _cuda_convert(_host_view(src), np.dtype(dst.dtype)).view(DeviceArray)
                if isinstance(src, DeviceArray)
                else src
            )
            args = (dst, src, *args[2:])
        if name in ("amin", "min") and kwargs.get("out") is not None:
            _min_out_quirk(_host_view(args[0]).view(DeviceArray))
        if name in ("asarray", "array", "ascontiguousarray") and args and isinstance(args[0], np.ndarray):
            args = (_host_view(args[0]), *args[1:])  # an explicit transfer is allowed
        else:
            args = tuple(_to_numpy_args(name, a) for a in args)
        kwargs = {k: _to_numpy_args(name, v) for k, v in kwargs.items()}
        return _wrap(fn(*args, **kwargs))

    call.__name__ = name
    return call


class _DeviceUfunc:
    """A numpy ufunc behind cupy's rules: calls and its methods (``at``, ``reduce``)."""

    def __init__(self, name: str, ufunc: np.ufunc) -> None:
        self.__name__ = name
        self._call = _device_function(name, ufunc)
        self.at = _device_function(f"{name}.at", ufunc.at)
        self.reduce = _device_function(f"{name}.reduce", ufunc.reduce)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)


class CupyLikeNumpy:
    """numpy under cupy's rules for device arrays (see the module docstring)."""

    __name__ = "cupy_like"

    def __getattr__(self, name: str) -> Any:
        value = getattr(np, name)
        if isinstance(value, type) or not callable(value):
            return value  # dtypes (xp.float32(...) makes a scalar), constants
        wrapped = _DeviceUfunc(name, value) if isinstance(value, np.ufunc) else _device_function(name, value)
        setattr(self, name, wrapped)
        return wrapped


xp = CupyLikeNumpy()


def to_device(a: Any) -> DeviceArray:
    """A copy of host data as a device array."""
    return np.array(a).view(DeviceArray)


def to_host(a: DeviceArray) -> np.ndarray:
    """A device array's values as a plain numpy array."""
    return np.array(a.view(np.ndarray))
