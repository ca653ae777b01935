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
        out = tuple(int(s) for s in shape)
        bad = [s for s, o in zip(shape, out) if isinstance(s, float) or o != s]
    except (TypeError, ValueError):
        raise OpArgumentError(f"[{name}] shape must be a sequence of ints, got {shape!r}") from None
    if bad or any(s < 0 for s in out):
        raise OpArgumentError(f"[{name}] shape must hold non-negative ints, got {tuple(shape)!r}")
    if math.prod(out) >= 2**62:
        raise OpArgumentError(
            f"[{name}] shape {out} has {math.prod(out)} elements, more than any device can hold; check the shape"
        )
    return out


def _device(device: Any) -> _dev.Device:
    return _dev.get_device() if device is None else _dev.parse(device)


def full(
    shape: Any, fill_value: Any, dtype: Any = None, device: Any = None, name: str | None = None
) -> Tensor:
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    d = _dt.as_dtype(dtype, "full") if dtype is not None else _dt.infer_dtype(fill_value)
    return _full(_shape("full", shape), fill_value, d, _device(device))


def zeros(shape: Any, dtype: Any = None, device: Any = None, name: str | None = None) -> Tensor:
    d = _dt.as_dtype(dtype, "zeros") if dtype is not None else _dt.get_default_dtype()
    return _full(_shape("zeros", shape), 0, d, _device(device))


def ones(shape: Any, dtype: Any = None, device: Any = None, name: str | None = None) -> Tensor:
    d = _dt.as_dtype(dtype, "ones") if dtype is not None else _dt.get_default_dtype()
    return _full(_shape("ones", shape), 1, d, _device(device))


def empty(shape: Any, dtype: Any = None, device: Any = None, name: str | None = None) -> Tensor:
    d = _dt.as_dtype(dtype, "empty") if dtype is not None else _dt.get_default_dtype()
    return _t.empty(_shape("empty", shape), d, _device(device))


def _like(x: Tensor, dtype: Any) -> tuple[np.dtype, _dev.Device]:
    if not isinstance(x, Tensor):
        raise OpArgumentError(f"[*_like] expected a Tensor, got {type(x).__name__}")
    return (_dt.as_dtype(dtype) if dtype is not None else x.dtype), x.device


def full_like(x: Tensor, fill_value: Any, dtype: Any = None) -> Tensor:
    d, dev = _like(x, dtype)
    return _full(x.shape, fill_value, d, dev)


def zeros_like(x: Tensor, dtype: Any = None) -> Tensor:
    d, dev = _like(x, dtype)
    return _full(x.shape, 0, d, dev)


def ones_like(x: Tensor, dtype: Any = None) -> Tensor:
    d, dev = _like(x, dtype)
    return _full(x.shape, 1, d, dev)


def empty_like(x: Tensor, dtype: Any = None) -> Tensor:
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
    """``[start, end)`` with ``step`` (``arange(5)`` is 0..4)."""
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
    n = max(0, math.ceil((end - start) / step))
    return dispatch.run(
        OPS["arange"], [], {"start": start, "step": step, "dtype": d}, _device(device), [((n,), d)]
    )[0]


def linspace(start: float, stop: float, num: int, dtype: Any = None, device: Any = None) -> Tensor:
    if num < 0:
        raise OpArgumentError(f"[linspace] num must be >= 0, got {num}")
    d = _dt.as_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
    if num == 1:
        return full((1,), start, d, device)
    step = (stop - start) / (num - 1) if num > 1 else 0.0
    return arange(0, num, 1, dtype=d, device=device) * step + start


def eye(num_rows: int, num_columns: int | None = None, dtype: Any = None, device: Any = None) -> Tensor:
    m = num_rows if num_columns is None else num_columns
    for what, v in (("num_rows", num_rows), ("num_columns", m)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
            raise OpArgumentError(f"[eye] {what} must be a non-negative int, got {v!r}")
    r = arange(num_rows, device=device).reshape((num_rows, 1))
    c = arange(m, device=device).reshape((1, m))
    return (r == c).astype(dtype if dtype is not None else _dt.get_default_dtype())


def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    n, m = x.shape[-2:]
    r = arange(n, device=x.device).reshape((n, 1))
    c = arange(m, device=x.device).reshape((1, m))
    return apply1(OPS["where"], [c - r <= diagonal, x, zeros_like(x)], {})


def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    n, m = x.shape[-2:]
    r = arange(n, device=x.device).reshape((n, 1))
    c = arange(m, device=x.device).reshape((1, m))
    return apply1(OPS["where"], [c - r >= diagonal, x, zeros_like(x)], {})
