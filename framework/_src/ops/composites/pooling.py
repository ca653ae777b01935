"""Pooling: max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool1d/2d and adaptive_max_pool2d.

max_pool2d and avg_pool2d are composites over the KH*KW strided windows (im2col patches); the
1-d pools run them on a height-1 image; adaptive pools average (or take the max of) window i
spanning [floor(i*L/O), ceil((i+1)*L/O)) along each axis.
"""

from __future__ import annotations

import math
from typing import Any

from adapter_api import OpArgumentError

from ...dtypes import as_dtype
from ...tensor import Tensor
from .. import creation as C
from .. import indexing as I
from .. import math as M
from .. import shape as S
from ..base import OPS, call, composite
from ._common import float_arg, tensor_arg
from ._window import _ntuple, _out_size, _pad1d_as_2d, _padding, _pair, _patches, _to_ncl


def _pool_args(name: str, x: Tensor, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool) -> tuple:
    """x, kernel, stride, the padding of the call and the padding ceil_mode adds on the far
    side (Paddle's ceil output size: ``(L + pads - k + s - 1) // s + 1``)."""
    x = float_arg(name, x)
    if x.ndim != 4:
        raise OpArgumentError(f"[{name}] x must be 4-d (N, C, H, W), got shape {x.shape}")
    k = _pair(name, "kernel_size", kernel_size, least=1)
    s = k if stride is None else _pair(name, "stride", stride, least=1)
    pads = _padding(name, padding, k, (1, 1))
    if min(min(pads[0]), min(pads[1])) < 0:
        raise OpArgumentError(f"[{name}] padding must not be negative, got {padding!r}")
    extra = []
    for ax in range(2):
        o = _out_size(name, x.shape[2 + ax], k[ax], s[ax], 1, pads[ax])
        if ceil_mode:
            o = -(-(x.shape[2 + ax] + sum(pads[ax]) - k[ax]) // s[ax]) + 1
        extra.append(max(0, (o - 1) * s[ax] + k[ax] - x.shape[2 + ax] - sum(pads[ax])))
    total = tuple((p[0], p[1] + e) for p, e in zip(pads, extra))
    return x, k, s, pads, total


def _channels_first(name: str, x: Any, data_format: str) -> Any:
    if data_format not in ("NCHW", "NHWC"):
        raise OpArgumentError(f"[{name}] data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    if data_format == "NHWC" and isinstance(x, Tensor):
        if x.ndim != 4:
            raise OpArgumentError(f"[{name}] x must be 4-d (N, H, W, C), got shape {x.shape}")
        return x.transpose((0, 3, 1, 2))
    return x


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


def _mask_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    (shape, dtype) = _pool_infer(ins, attrs)[0]
    return [(shape, dtype), (shape, as_dtype("int32"))]


@composite("max_pool2d_with_mask", infer=_mask_infer)
def max_pool2d_with_mask_decomposition(
    x: Tensor, *, kernel_size: tuple, stride: tuple, padding: tuple
) -> tuple[Tensor, Tensor]:
    """The max over each window and where it is: ``h * W + w`` in the unpadded input (the
    first maximum in the window's row-major order, as Paddle)."""
    n, c, h, w = x.shape
    xp = S.pad_raw(x, ((0, 0), (0, 0)) + tuple(padding), float("-inf"))
    o = _pool_infer([x], {"kernel_size": kernel_size, "stride": stride, "padding": padding})[0][0][2:]
    cols = _patches(xp, kernel_size, stride, (1, 1), o)
    out = M.max(cols, axis=2)
    arg = M.argmax(cols, axis=2).astype("int32")  # offset i * KW + j inside the window
    oh = (C.arange(o[0], dtype="int32", device=x.device) * stride[0] - padding[0][0]).reshape((o[0], 1))
    ow = (C.arange(o[1], dtype="int32", device=x.device) * stride[1] - padding[1][0]).reshape((1, o[1]))
    kw = kernel_size[1]
    mask = (oh + arg // kw) * w + (ow + arg % kw)
    return out, mask.detach()


@composite("avg_pool2d", infer=_pool_infer)
def avg_pool2d_decomposition(
    x: Tensor, *, kernel_size: tuple, stride: tuple, padding: tuple, counted: tuple, divisor: float
) -> Tensor:
    """Pad with 0, sum the KH*KW strided windows, divide by the count of window elements
    inside the input grown by ``counted`` (Paddle: ``exclusive`` counts none of the padding;
    otherwise the call's padding counts, the padding ceil_mode adds does not); a
    ``divisor`` then scales by ``KH*KW / divisor``, as Paddle applies ``divisor_override``."""
    o = _pool_infer([x], {"kernel_size": kernel_size, "stride": stride, "padding": padding})[0][0][2:]
    pads = ((0, 0), (0, 0)) + tuple(padding)
    total = M.sum(_patches(S.pad_raw(x, pads, 0.0), kernel_size, stride, (1, 1), o), axis=2)
    area = kernel_size[0] * kernel_size[1]
    if tuple(padding) == tuple(counted):
        return total * (1.0 / (divisor or area))
    inner = S.pad_raw(M.ones_like(x[:1, :1]), ((0, 0), (0, 0)) + tuple(counted), 1.0)
    rest = ((0, 0), (0, 0)) + tuple((p[0] - c[0], p[1] - c[1]) for p, c in zip(padding, counted))
    cnt = M.sum(_patches(S.pad_raw(inner, rest, 0.0), kernel_size, stride, (1, 1), o), axis=2)
    return total / cnt * (area / divisor) if divisor else total / cnt


def max_pool2d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    return_mask: bool = False,
    data_format: str = "NCHW",
    name: str | None = None,
) -> Any:
    """Max over KH x KW windows of ``x`` (stride defaults to the kernel size).

    ``ceil_mode`` rounds the output size up (the last window may run past the padding);
    ``return_mask`` (NCHW only, as Paddle) also returns each maximum's position ``h * W + w``
    in its channel (int32); ``data_format`` is ``"NCHW"`` or ``"NHWC"``.

    >>> import framework as fw
    >>> x = fw.arange(16, dtype="float32").reshape([1, 1, 4, 4])
    >>> fw.nn.functional.max_pool2d(x, 2).numpy().ravel().tolist()
    [5.0, 7.0, 13.0, 15.0]
    >>> fw.nn.functional.max_pool2d(x, 3, 2, ceil_mode=True).shape
    (1, 1, 2, 2)
    """
    if isinstance(x, Tensor) and x.dtype.kind in "iu" and not return_mask:
        # keeps the dtype: pooled exactly in float64, cast back
        y = max_pool2d(x.astype("float64"), kernel_size, stride, padding, ceil_mode, False, data_format)
        return y.astype(x.dtype)
    xc = _channels_first("max_pool2d", x, data_format)
    xc, k, s, _, total = _pool_args("max_pool2d", xc, kernel_size, stride, padding, ceil_mode)
    attrs = {"kernel_size": k, "stride": s, "padding": total}
    if return_mask:
        if data_format != "NCHW":
            raise OpArgumentError(
                f"[max_pool2d] return_mask=True needs data_format='NCHW' (as Paddle), got {data_format!r}"
            )
        return tuple(call(OPS["max_pool2d_with_mask"], [xc], attrs))
    out = call(OPS["max_pool2d"], [xc], attrs)
    return out.transpose((0, 2, 3, 1)) if data_format == "NHWC" else out


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
    """Mean over KH x KW windows of ``x``, as Paddle's ``avg_pool2d``.

    ``exclusive`` (the default) leaves the padding out of the count; ``divisor_override``
    scales the result by ``KH*KW / divisor_override`` (Paddle's rule: with
    ``exclusive=False`` that is the window sum over the divisor); ``ceil_mode`` rounds the
    output size up (the part of a window past the padding is never counted).

    >>> import framework as fw
    >>> x = fw.arange(16, dtype="float32").reshape([1, 1, 4, 4])
    >>> fw.nn.functional.avg_pool2d(x, 2).numpy().ravel().tolist()
    [2.5, 4.5, 10.5, 12.5]
    """
    xc = _channels_first("avg_pool2d", x, data_format)
    xc, k, s, pads, total = _pool_args("avg_pool2d", xc, kernel_size, stride, padding, ceil_mode)
    if divisor_override is not None and (
        isinstance(divisor_override, bool)
        or not isinstance(divisor_override, (int, float))
        or divisor_override <= 0
    ):
        raise OpArgumentError(
            f"[avg_pool2d] divisor_override must be a positive number, got {divisor_override!r}"
        )
    counted = ((0, 0), (0, 0)) if exclusive else pads
    attrs = {
        "kernel_size": k,
        "stride": s,
        "padding": total,
        "counted": counted,
        "divisor": float(divisor_override or 0.0),
    }
    out = call(OPS["avg_pool2d"], [xc], attrs)
    return out.transpose((0, 2, 3, 1)) if data_format == "NHWC" else out


def lp_pool2d(
    x: Tensor,
    norm_type: float,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    data_format: str = "NCHW",
    name: str | None = None,
) -> Tensor:
    """Power-average pooling: ``sum(x ** p) ** (1 / p)`` over each window, as Paddle.

    As Paddle, no absolute value is taken (an odd ``p`` over a window of negative sum gives
    NaN) and ``norm_type=inf`` is the max; ``ceil_mode``, padding (zeros) and ``data_format``
    as :func:`avg_pool2d`.

    >>> import framework as fw
    >>> x = fw.to_tensor([[[[3.0, 4.0], [0.0, 0.0]]]])
    >>> fw.nn.functional.lp_pool2d(x, 2, 2).numpy().ravel().tolist()
    [5.0]
    """
    if isinstance(norm_type, bool) or not isinstance(norm_type, (int, float)) or norm_type <= 0:
        raise OpArgumentError(f"[lp_pool2d] norm_type must be a positive number, got {norm_type!r}")
    if norm_type == float("inf"):
        return max_pool2d(x, kernel_size, stride, padding, ceil_mode, False, data_format)
    xc = _channels_first("lp_pool2d", x, data_format)
    xc, k, s, _, total = _pool_args("lp_pool2d", xc, kernel_size, stride, padding, ceil_mode)
    attrs = {"kernel_size": k, "stride": s, "padding": total, "counted": total, "divisor": 1.0}
    out = M.pow(call(OPS["avg_pool2d"], [M.pow(xc, float(norm_type))], attrs), 1.0 / norm_type)
    return out.transpose((0, 2, 3, 1)) if data_format == "NHWC" else out


def lp_pool1d(
    x: Tensor,
    norm_type: float,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    data_format: str = "NCL",
    name: str | None = None,
) -> Tensor:
    """Power-average pooling of (N, C, L) ``x``: ``sum(x ** p) ** (1 / p)`` per window.

    >>> import framework as fw
    >>> fw.nn.functional.lp_pool1d(fw.to_tensor([[[3.0, 4.0]]]), 2, 2).numpy().ravel().tolist()
    [5.0]
    """
    x = _to_ncl("lp_pool1d", tensor_arg("lp_pool1d", x), data_format)
    (k,) = _ntuple("lp_pool1d", "kernel_size", kernel_size, 1, 1)
    s = k if stride is None else _ntuple("lp_pool1d", "stride", stride, 1, 1)[0]
    pads = _pad1d_as_2d("lp_pool1d", padding, k, 1)
    out = lp_pool2d(x.unsqueeze(2), norm_type, (1, k), (1, s), pads, ceil_mode).squeeze(2)
    return out.transpose((0, 2, 1)) if data_format == "NLC" else out


def _max_unpool(
    name: str,
    nd: int,
    x: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    output_size: Any,
) -> Tensor:
    """Scatter ``x`` to the flat positions ``indices`` of a zero output (per sample and channel)."""
    x = float_arg(name, x)
    indices = tensor_arg(name, indices, "indices")
    if x.ndim != nd + 2:
        raise OpArgumentError(f"[{name}] x must be {nd + 2}-d (N, C, spatial...), got shape {x.shape}")
    if indices.shape != x.shape or indices.dtype.kind not in "iu":
        raise OpArgumentError(
            f"[{name}] indices must be integers of x's shape {x.shape} (the mask of max_pool), "
            f"got {indices.dtype} of shape {indices.shape}"
        )
    k = _ntuple(name, "kernel_size", kernel_size, nd, 1)
    st = k if stride is None else _ntuple(name, "stride", stride, nd, 1)
    pad = _ntuple(name, "padding", padding, nd, 0)
    if output_size is None:
        out = tuple((i - 1) * s - 2 * p + kk for i, s, p, kk in zip(x.shape[2:], st, pad, k))
    else:
        out = tuple(int(v) for v in output_size)[-nd:]
        if len(out) != nd:
            raise OpArgumentError(f"[{name}] output_size must hold {nd} spatial sizes, got {output_size!r}")
    n, c = x.shape[:2]
    flat = C.zeros((n, c, math.prod(out)), dtype=x.dtype, device=x.device)
    vals, idx = x.reshape((n, c, -1)), indices.reshape((n, c, -1))
    return I.put_along_axis(flat, idx, vals, axis=2).reshape((n, c) + out)


def max_unpool2d(
    x: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    data_format: str = "NCHW",
    output_size: Any = None,
    name: str | None = None,
) -> Tensor:
    """The inverse of :func:`max_pool2d`: each value of ``x`` put at its ``indices`` position
    (the mask ``max_pool2d(..., return_mask=True)`` gives) in a zero NCHW output of
    ``output_size`` (default ``(H - 1) * stride - 2 * padding + kernel_size``).

    >>> import framework as fw
    >>> x = fw.arange(16, dtype="float32").reshape([1, 1, 4, 4])
    >>> y, mask = fw.nn.functional.max_pool2d(x, 2, return_mask=True)
    >>> fw.nn.functional.max_unpool2d(y, mask, 2)[0, 0].numpy().tolist()[1]
    [0.0, 5.0, 0.0, 7.0]
    """
    if data_format != "NCHW":
        raise OpArgumentError(f"[max_unpool2d] data_format must be 'NCHW' (as Paddle), got {data_format!r}")
    return _max_unpool("max_unpool2d", 2, x, indices, kernel_size, stride, padding, output_size)


def max_unpool1d(
    x: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    data_format: str = "NCL",
    output_size: Any = None,
    name: str | None = None,
) -> Tensor:
    """The inverse of max_pool1d: ``x`` put at ``indices`` in a zero (N, C, L_out) output.

    >>> import framework as fw
    >>> x, idx = fw.to_tensor([[[5.0, 7.0]]]), fw.to_tensor([[[1, 2]]], dtype="int32")
    >>> fw.nn.functional.max_unpool1d(x, idx, 2).numpy().tolist()
    [[[0.0, 5.0, 7.0, 0.0]]]
    """
    if data_format != "NCL":
        raise OpArgumentError(f"[max_unpool1d] data_format must be 'NCL' (as Paddle), got {data_format!r}")
    return _max_unpool("max_unpool1d", 1, x, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(
    x: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    data_format: str = "NCDHW",
    output_size: Any = None,
    name: str | None = None,
) -> Tensor:
    """The inverse of max_pool3d: ``x`` put at ``indices`` (``(d * H + h) * W + w``) in a zero
    NCDHW output.

    >>> import framework as fw
    >>> x, idx = fw.ones([1, 1, 1, 1, 1]), fw.to_tensor([[[[[7]]]]], dtype="int32")
    >>> float(fw.nn.functional.max_unpool3d(x, idx, 2).reshape([-1])[7])
    1.0
    """
    if data_format != "NCDHW":
        raise OpArgumentError(f"[max_unpool3d] data_format must be 'NCDHW' (as Paddle), got {data_format!r}")
    return _max_unpool("max_unpool3d", 3, x, indices, kernel_size, stride, padding, output_size)


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
