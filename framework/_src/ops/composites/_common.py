"""Small helpers shared by the composite modules (argument checks, axis normalisation)."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor
from .. import indexing as I
from .. import math as M


def tensor_arg(name: str, x: Any, what: str = "x") -> Tensor:
    if not isinstance(x, Tensor):
        raise OpArgumentError(
            f"[{name}] {what} must be a Tensor, got {type(x).__name__}; wrap data with fw.to_tensor"
        )
    return x


def float_arg(name: str, x: Any, what: str = "x") -> Tensor:
    x = tensor_arg(name, x, what)
    if not _dt.is_floating(x.dtype) and x.dtype.kind != "c":  # complex stays: never drop an imaginary part
        x = M.cast(x, _dt.get_default_dtype())
    return x


def axis_arg(name: str, axis: Any, ndim: int) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise OpArgumentError(f"[{name}] axis must be an int, got {axis!r}")
    n = max(ndim, 1)
    if not -n <= axis < n:
        raise OpArgumentError(
            f"[{name}] axis {axis} is out of range for a tensor with {ndim} dimensions; expected -{n} <= axis < {n}"
        )
    return axis % n


def same_meta(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(ins[0].shape, ins[0].dtype)]


def store_out(name: str, r: Tensor, out: Tensor | None) -> Tensor:
    """``r``, or ``out`` made to hold it (cast to ``out``'s dtype) when Paddle's ``out=`` is given."""
    if out is None:
        return r
    if tuple(out.shape) != tuple(r.shape):
        raise OpArgumentError(f"[{name}] out has shape {list(out.shape)}, expected {list(r.shape)}")
    I.rebind(out, M.cast(r, out.dtype), name, I.alias(out))
    return out
