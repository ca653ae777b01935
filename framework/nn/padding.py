"""Padding layers (Paddle names), each over :func:`framework.nn.functional.pad`: Pad1D and
Pad3D (any mode), and per mode ConstantPad, ZeroPad, ReflectionPad, ReplicationPad and
CircularPad in 1-, 2- and 3-d (``padding`` is an int, or ``[left, right]``, ``[left, right,
top, bottom]``, ``[left, right, top, bottom, front, back]``)."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from .._src.tensor import Tensor
from . import functional as F
from .layer import Layer

_FORMATS = {1: ("NCL", "NLC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


class _Pad(Layer):
    dims = 1
    fixed_mode: str | None = None

    def __init__(
        self,
        padding: Any,
        mode: str = "constant",
        value: float = 0.0,
        data_format: str | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        n = 2 * self.dims
        if isinstance(padding, Tensor):
            padding = padding.tolist()
        pad = [int(padding)] * n if isinstance(padding, int) else [int(p) for p in padding]
        if len(pad) != n:
            raise OpArgumentError(
                f"[{type(self).__name__}] padding must be an int or {n} ints, got {padding!r}"
            )
        fmt = data_format or _FORMATS[self.dims][0]
        if fmt not in _FORMATS[self.dims]:
            raise OpArgumentError(
                f"[{type(self).__name__}] data_format must be one of {_FORMATS[self.dims]}, got {data_format!r}"
            )
        self.padding, self.mode, self.value, self.data_format = pad, self.fixed_mode or mode, value, fmt

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != self.dims + 2:
            raise OpArgumentError(f"[{type(self).__name__}] x must be {self.dims + 2}-d, got shape {x.shape}")
        return F.pad(x, self.padding, self.mode, self.value, self.data_format)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, mode={self.mode}, value={self.value}, data_format={self.data_format}"


def _pad_layer(cls_name: str, dims: int, mode: str | None, takes_value: bool) -> type:
    doc = f"Pad the {dims}-d spatial dims of ``x`` ({mode or 'any'} mode), over :func:`F.pad`."

    def __init__(self: _Pad, padding: Any, *args: Any, **kwargs: Any) -> None:
        names = (("mode", "value") if mode is None else ("value",) if takes_value else ()) + (
            "data_format",
            "name",
        )
        vals = dict(zip(names, args))
        vals.update(kwargs)
        unknown = set(vals) - set(names)
        if unknown:
            raise OpArgumentError(f"[{cls_name}] unknown arguments {sorted(unknown)}; expected {names}")
        _Pad.__init__(
            self,
            padding,
            vals.get("mode", mode or "constant"),
            vals.get("value", 0.0),
            vals.get("data_format"),
        )

    return type(cls_name, (_Pad,), {"__init__": __init__, "__doc__": doc, "dims": dims, "fixed_mode": mode})


Pad1D = _pad_layer("Pad1D", 1, None, True)
Pad3D = _pad_layer("Pad3D", 3, None, True)
ConstantPad1D = _pad_layer("ConstantPad1D", 1, "constant", True)
ConstantPad2D = _pad_layer("ConstantPad2D", 2, "constant", True)
ConstantPad3D = _pad_layer("ConstantPad3D", 3, "constant", True)
ZeroPad1D = _pad_layer("ZeroPad1D", 1, "constant", False)
ZeroPad2D = _pad_layer("ZeroPad2D", 2, "constant", False)
ZeroPad3D = _pad_layer("ZeroPad3D", 3, "constant", False)
ReflectionPad1D = _pad_layer("ReflectionPad1D", 1, "reflect", False)
ReflectionPad2D = _pad_layer("ReflectionPad2D", 2, "reflect", False)
ReflectionPad3D = _pad_layer("ReflectionPad3D", 3, "reflect", False)
ReplicationPad1D = _pad_layer("ReplicationPad1D", 1, "replicate", False)
ReplicationPad2D = _pad_layer("ReplicationPad2D", 2, "replicate", False)
ReplicationPad3D = _pad_layer("ReplicationPad3D", 3, "replicate", False)
CircularPad1D = _pad_layer("CircularPad1D", 1, "circular", False)
CircularPad2D = _pad_layer("CircularPad2D", 2, "circular", False)
CircularPad3D = _pad_layer("CircularPad3D", 3, "circular", False)
