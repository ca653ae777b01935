"""Pooling: max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool1d/2d and adaptive_max_pool2d.

max_pool2d and avg_pool2d are composites over the KH*KW strided windows (im2col patches); the
1-d pools run them on a height-1 image; adaptive pools average (or take the max of) window i
spanning [floor(i*L/O), ceil((i+1)*L/O)) along each axis.
"""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import math as M
from .. import shape as S
from ..base import OPS, call, composite
from ._common import float_arg, tensor_arg
from ._window import _ntuple, _out_size, _pad1d_as_2d, _padding, _pair, _patches, _to_ncl


def _pool_args(name: str, x: Tensor, kernel_size: Any, stride: Any, padding: Any) -> tuple:
    x = float_arg(name, x)
    if x.ndim != 4:
        raise OpArgumentError(f"[{name}] x must be 4-d (N, C, H, W), got shape {x.shape}")
    k = _pair(name, "kernel_size", kernel_size, least=1)
    s = k if stride is None else _pair(name, "stride", stride, least=1)
    pads = _padding(name, padding, k, (1, 1))
    if min(min(pads[0]), min(pads[1])) < 0:
        raise OpArgumentError(f"[{name}] padding must not be negative, got {padding!r}")
    o = (
        _out_size(name, x.shape[2], k[0], s[0], 1, pads[0]),
        _out_size(name, x.shape[3], k[1], s[1], 1, pads[1]),
    )
    return x, k, s, pads, o


def _pool_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x = ins[0]
    k, s, p = attrs["kernel_size"], attrs["stride"], attrs["padding"]
    o = (
        _out_size("pool2d", x.shape[2], k[0], s[0], 1, p[0]),
        _out_size("pool2d", x.shape[3], k[1], s[1], 1, p[1]),
    )
    return [(x.shape[:2] + o, x.dtype)]


@composite("max_pool2d", infer=_pool_infer)
def max_pool2d_decomposition(x: Tensor, *, kernel_size: tuple, stride: tuple, padding: tuple) -> Tensor:
    """Pad with -inf, stack the KH*KW strided windows, max over them."""
    xp = S.pad_raw(x, ((0, 0), (0, 0)) + tuple(padding), float("-inf"))
    o = _pool_infer([x], {"kernel_size": kernel_size, "stride": stride, "padding": padding})[0][0][2:]
    return M.max(_patches(xp, kernel_size, stride, (1, 1), o), axis=2)


@composite("avg_pool2d", infer=_pool_infer)
def avg_pool2d_decomposition(
    x: Tensor, *, kernel_size: tuple, stride: tuple, padding: tuple, exclusive: bool
) -> Tensor:
    """Pad with 0, sum the KH*KW strided windows, divide by the window size (``exclusive``:
    by the count of non-padding elements)."""
    o = _pool_infer([x], {"kernel_size": kernel_size, "stride": stride, "padding": padding})[0][0][2:]
    pads = ((0, 0), (0, 0)) + tuple(padding)
    total = M.sum(_patches(S.pad_raw(x, pads, 0.0), kernel_size, stride, (1, 1), o), axis=2)
    if exclusive and any(p for pair in padding for p in pair):
        ones = M.ones_like(x[:1, :1])
        cnt = M.sum(_patches(S.pad_raw(ones, pads, 0.0), kernel_size, stride, (1, 1), o), axis=2)
        return total / cnt
    return total * (1.0 / (kernel_size[0] * kernel_size[1]))


def max_pool2d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    return_mask: bool = False,
    data_format: str = "NCHW",
    name: str | None = None,
) -> Tensor:
    """Max over KH x KW windows of NCHW ``x`` (stride defaults to the kernel size)."""
    if ceil_mode or return_mask or data_format != "NCHW":
        raise OpArgumentError(
            "[max_pool2d] ceil_mode, return_mask and NHWC are not supported; use the defaults"
        )
    if (
        isinstance(x, Tensor) and x.dtype.kind in "iu"
    ):  # keeps the dtype: pooled exactly in float64, cast back
        return max_pool2d(x.astype("float64"), kernel_size, stride, padding).astype(x.dtype)
    x, k, s, pads, _ = _pool_args("max_pool2d", x, kernel_size, stride, padding)
    return call(OPS["max_pool2d"], [x], {"kernel_size": k, "stride": s, "padding": pads})


def avg_pool2d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    exclusive: bool = True,
    divisor_override: Any = None,
    data_format: str = "NCHW",
    name: str | None = None,
) -> Tensor:
    """Mean over KH x KW windows of NCHW ``x``; ``exclusive`` (Paddle's default) leaves the
    padding out of the count."""
    if ceil_mode or divisor_override is not None or data_format != "NCHW":
        raise OpArgumentError(
            "[avg_pool2d] ceil_mode, divisor_override and NHWC are not supported; use the defaults"
        )
    x, k, s, pads, _ = _pool_args("avg_pool2d", x, kernel_size, stride, padding)
    return call(
        OPS["avg_pool2d"], [x], {"kernel_size": k, "stride": s, "padding": pads, "exclusive": bool(exclusive)}
    )


def _adaptive_axis(x: Tensor, axis: int, out: int) -> Tensor:
    size = x.shape[axis]
    if size % out == 0:
        k = size // out
        shp = x.shape[:axis] + (out, k) + x.shape[axis + 1 :]
        return M.mean(x.reshape(shp), axis=axis + 1)
    parts = []
    for i in range(out):
        a, b = (i * size) // out, -(-((i + 1) * size) // out)
        starts = [0] * x.ndim
        stops = list(x.shape)
        starts[axis], stops[axis] = a, b
        parts.append(
            M.mean(S.slice_raw(x, tuple(starts), tuple(stops), (1,) * x.ndim), axis=axis, keepdim=True)
        )
    return S.concat(parts, axis=axis)


def adaptive_avg_pool2d(
    x: Tensor, output_size: Any, data_format: str = "NCHW", name: str | None = None
) -> Tensor:
    """Average pooling to a fixed ``output_size``; window i spans [floor(i*H/O), ceil((i+1)*H/O))."""
    x = float_arg("adaptive_avg_pool2d", x)
    if x.ndim != 4 or data_format != "NCHW":
        raise OpArgumentError(f"[adaptive_avg_pool2d] x must be 4-d NCHW, got shape {x.shape}")
    oh, ow = _pair("adaptive_avg_pool2d", "output_size", output_size, least=1)
    return _adaptive_axis(_adaptive_axis(x, 2, oh), 3, ow)


def max_pool1d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    return_mask: bool = False,
    ceil_mode: bool = False,
    name: str | None = None,
) -> Tensor:
    """Max over windows of (N, C, L) ``x``."""
    x = _to_ncl("max_pool1d", tensor_arg("max_pool1d", x), "NCL")
    (k,) = _ntuple("max_pool1d", "kernel_size", kernel_size, 1, 1)
    s = k if stride is None else _ntuple("max_pool1d", "stride", stride, 1, 1)[0]
    return max_pool2d(
        x.unsqueeze(2), (1, k), (1, s), _pad1d_as_2d("max_pool1d", padding, k, 1), ceil_mode, return_mask
    ).squeeze(2)


def avg_pool1d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    exclusive: bool = True,
    ceil_mode: bool = False,
    name: str | None = None,
) -> Tensor:
    """Mean over windows of (N, C, L) ``x`` (``exclusive``: padding left out of the count)."""
    x = _to_ncl("avg_pool1d", tensor_arg("avg_pool1d", x), "NCL")
    (k,) = _ntuple("avg_pool1d", "kernel_size", kernel_size, 1, 1)
    s = k if stride is None else _ntuple("avg_pool1d", "stride", stride, 1, 1)[0]
    return avg_pool2d(
        x.unsqueeze(2), (1, k), (1, s), _pad1d_as_2d("avg_pool1d", padding, k, 1), ceil_mode, exclusive
    ).squeeze(2)


def adaptive_avg_pool1d(x: Tensor, output_size: int, name: str | None = None) -> Tensor:
    """Average pooling of (N, C, L) ``x`` to ``output_size``; window i spans
    [floor(i*L/O), ceil((i+1)*L/O))."""
    x = _to_ncl("adaptive_avg_pool1d", float_arg("adaptive_avg_pool1d", x), "NCL")
    (o,) = _ntuple("adaptive_avg_pool1d", "output_size", output_size, 1, 1)
    return _adaptive_axis(x, 2, o)


def _adaptive_max_axis(x: Tensor, axis: int, out: int) -> Tensor:
    size = x.shape[axis]
    parts = []
    for i in range(out):
        a, b = (i * size) // out, -(-((i + 1) * size) // out)
        starts, stops = [0] * x.ndim, list(x.shape)
        starts[axis], stops[axis] = a, b
        parts.append(
            M.max(S.slice_raw(x, tuple(starts), tuple(stops), (1,) * x.ndim), axis=axis, keepdim=True)
        )
    return S.concat(parts, axis=axis) if out > 1 else parts[0]


def adaptive_max_pool2d(
    x: Tensor, output_size: Any, return_mask: bool = False, name: str | None = None
) -> Tensor:
    """Max pooling of NCHW ``x`` to ``output_size`` (windows as adaptive_avg_pool2d)."""
    x = float_arg("adaptive_max_pool2d", x)
    if return_mask:
        raise OpArgumentError("[adaptive_max_pool2d] return_mask=True is not supported; use the default")
    if x.ndim != 4:
        raise OpArgumentError(f"[adaptive_max_pool2d] x must be 4-d NCHW, got shape {x.shape}")
    oh, ow = _pair("adaptive_max_pool2d", "output_size", output_size, least=1)
    return _adaptive_max_axis(_adaptive_max_axis(x, 2, oh), 3, ow)
