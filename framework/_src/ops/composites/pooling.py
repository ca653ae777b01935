"""Pooling over strided windows: max_pool1d/2d/3d (with the mask of each maximum), avg_pool1d/2d/3d
and lp_pool1d/2d.

The 2-d and 3-d pools are composites over the strided windows (one ``slice`` per kernel offset,
:func:`._window._patches_nd`); both ranks share one decomposition, each registered under
Paddle's op name. The 1-d pools run the 2-d ones on a height-1 image. Adaptive, fractional and
unpooling ops are in :mod:`.window_pooling`.
"""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ...dtypes import as_dtype
from ...tensor import Tensor
from .. import creation as C
from .. import math as M
from .. import shape as S
from ..base import OPS, call, composite
from ._common import float_arg, tensor_arg
from ._window import _ntuple, _out_size, _pad1d_as_2d, _pads_nd, _patches_nd, _to_ncl

#: channels-first and channels-last layouts per spatial rank
_LAYOUTS = {2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _pool_args(
    name: str, nd: int, x: Tensor, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool
) -> tuple:
    """x, kernel, stride, the padding of the call and that padding grown on the far side by
    what ceil_mode adds (Paddle's ceil output size: ``(L + pads - k + s - 1) // s + 1``)."""
    x = float_arg(name, x)
    if x.ndim != nd + 2:
        raise OpArgumentError(f"[{name}] x must be {nd + 2}-d (N, C, {nd} spatial dims), got shape {x.shape}")
    k = _ntuple(name, "kernel_size", kernel_size, nd, least=1)
    s = k if stride is None else _ntuple(name, "stride", stride, nd, least=1)
    pads = _pads_nd(name, padding, k, (1,) * nd, x.shape[2:], s)
    if min(min(p) for p in pads) < 0:
        raise OpArgumentError(f"[{name}] padding must not be negative, got {padding!r}")
    total = []
    for ax in range(nd):
        size, span = x.shape[2 + ax], x.shape[2 + ax] + sum(pads[ax]) - k[ax]
        o = _out_size(name, size, k[ax], s[ax], 1, pads[ax])
        if ceil_mode:
            o = -(-span // s[ax]) + 1
        extra = max(0, (o - 1) * s[ax] + k[ax] - size - sum(pads[ax]))
        total.append((pads[ax][0], pads[ax][1] + extra))
    return x, k, s, pads, tuple(total)


def _channels_first(name: str, nd: int, x: Any, data_format: str) -> Any:
    first, last = _LAYOUTS[nd]
    if data_format not in (first, last):
        raise OpArgumentError(f"[{name}] data_format must be '{first}' or '{last}', got {data_format!r}")
    if data_format == last and isinstance(x, Tensor):
        if x.ndim != nd + 2:
            raise OpArgumentError(f"[{name}] x must be {nd + 2}-d ({last}), got shape {x.shape}")
        return x.transpose((0, nd + 1) + tuple(range(1, nd + 1)))
    return x


def _channels_back(x: Tensor, nd: int, data_format: str) -> Tensor:
    if data_format == _LAYOUTS[nd][1]:
        return x.transpose((0,) + tuple(range(2, nd + 2)) + (1,))
    return x


def _pool_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x = ins[0]
    k, s, p = attrs["kernel_size"], attrs["stride"], attrs["padding"]
    o = tuple(_out_size("pool", x.shape[2 + i], k[i], s[i], 1, p[i]) for i in range(len(k)))
    return [(x.shape[:2] + o, x.dtype)]


def _windows(x: Tensor, kernel_size: tuple, stride: tuple, padding: tuple, fill: float) -> Tensor:
    """(N, C, prod(k), *out): the strided windows of ``x`` padded with ``fill``."""
    xp = S.pad_raw(x, ((0, 0), (0, 0)) + tuple(padding), fill)
    o = _pool_infer([x], {"kernel_size": kernel_size, "stride": stride, "padding": padding})[0][0][2:]
    return _patches_nd(xp, kernel_size, stride, (1,) * len(kernel_size), o)


def max_pool_decomposition(x: Tensor, *, kernel_size: tuple, stride: tuple, padding: tuple) -> Tensor:
    """Pad with -inf, stack the strided windows, max over them."""
    return M.max(_windows(x, kernel_size, stride, padding, float("-inf")), axis=2)


def _mask_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    (shape, dtype) = _pool_infer(ins, attrs)[0]
    return [(shape, dtype), (shape, as_dtype("int32"))]


def max_pool_with_mask_decomposition(
    x: Tensor, *, kernel_size: tuple, stride: tuple, padding: tuple
) -> tuple[Tensor, Tensor]:
    """The max over each window and where it is: the flat position in the unpadded input's
    spatial dims (``h * W + w``, ``(d * H + h) * W + w``), the first maximum in the window's
    row-major order, as Paddle."""
    nd = len(kernel_size)
    cols = _windows(x, kernel_size, stride, padding, float("-inf"))
    out = M.max(cols, axis=2)
    arg = M.argmax(cols, axis=2).astype("int32")  # row-major offset inside the window
    o = out.shape[2:]
    mask, inner = None, 1
    for ax in reversed(range(nd)):
        shape = [1] * nd
        shape[ax] = o[ax]
        start = (C.arange(o[ax], dtype="int32", device=x.device) * stride[ax] - padding[ax][0]).reshape(
            tuple(shape)
        )
        pos = start + (arg // inner) % kernel_size[ax]
        inner *= kernel_size[ax]
        mask = pos if mask is None else mask + pos * _prod(x.shape[3 + ax :])
    return out, mask.detach()


def _prod(v: Any) -> int:
    out = 1
    for t in v:
        out *= int(t)
    return out


def avg_pool_decomposition(
    x: Tensor, *, kernel_size: tuple, stride: tuple, padding: tuple, counted: tuple, divisor: float
) -> Tensor:
    """Pad with 0, sum the strided windows, divide by the count of window elements inside the
    input grown by ``counted`` (Paddle: ``exclusive`` counts none of the padding; otherwise
    the call's padding counts, the padding ceil_mode adds does not); a ``divisor`` then scales
    by ``prod(k) / divisor``, as Paddle applies ``divisor_override``."""
    total = M.sum(_windows(x, kernel_size, stride, padding, 0.0), axis=2)
    area = _prod(kernel_size)
    if tuple(padding) == tuple(counted):
        return total * (1.0 / (divisor or area))
    ones = M.ones_like(x[(slice(0, 1),) * 2])
    inner = S.pad_raw(ones, ((0, 0), (0, 0)) + tuple(counted), 1.0)
    rest = tuple((p[0] - c[0], p[1] - c[1]) for p, c in zip(padding, counted))
    cnt = M.sum(_windows(inner, kernel_size, stride, rest, 0.0), axis=2)
    return total / cnt * (area / divisor) if divisor else total / cnt


for _nd in (2, 3):
    composite(f"max_pool{_nd}d", infer=_pool_infer)(max_pool_decomposition)
    composite(f"max_pool{_nd}d_with_mask", infer=_mask_infer)(max_pool_with_mask_decomposition)
    composite(f"avg_pool{_nd}d", infer=_pool_infer)(avg_pool_decomposition)


def _max_pool(
    name: str,
    nd: int,
    x: Any,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    return_mask: bool,
    ceil_mode: bool,
    data_format: str,
) -> Any:
    if isinstance(x, Tensor) and x.dtype.kind in "iu" and not return_mask:
        # keeps the dtype: pooled exactly in float64, cast back
        y = _max_pool(
            name, nd, x.astype("float64"), kernel_size, stride, padding, False, ceil_mode, data_format
        )
        return y.astype(x.dtype)
    xc = _channels_first(name, nd, x, data_format)
    xc, k, s, _, total = _pool_args(name, nd, xc, kernel_size, stride, padding, ceil_mode)
    attrs = {"kernel_size": k, "stride": s, "padding": total}
    if return_mask:
        if data_format != _LAYOUTS[nd][0]:
            raise OpArgumentError(
                f"[{name}] return_mask=True needs data_format='{_LAYOUTS[nd][0]}' (as Paddle), got {data_format!r}"
            )
        return tuple(call(OPS[f"max_pool{nd}d_with_mask"], [xc], attrs))
    return _channels_back(call(OPS[f"max_pool{nd}d"], [xc], attrs), nd, data_format)


def max_pool2d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    return_mask: bool = False,
    ceil_mode: bool = False,
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
    return _max_pool("max_pool2d", 2, x, kernel_size, stride, padding, return_mask, ceil_mode, data_format)


def max_pool3d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    return_mask: bool = False,
    ceil_mode: bool = False,
    data_format: str = "NCDHW",
    name: str | None = None,
) -> Any:
    """Max over KD x KH x KW windows of ``x``; arguments as :func:`max_pool2d` (the mask holds
    ``(d * H + h) * W + w``; ``data_format`` is ``"NCDHW"`` or ``"NDHWC"``).

    >>> import framework as fw
    >>> x = fw.arange(8, dtype="float32").reshape([1, 1, 2, 2, 2])
    >>> out, mask = fw.nn.functional.max_pool3d(x, 2, return_mask=True)
    >>> float(out), int(mask)
    (7.0, 7)
    """
    return _max_pool("max_pool3d", 3, x, kernel_size, stride, padding, return_mask, ceil_mode, data_format)


def _avg_pool(
    name: str,
    nd: int,
    x: Any,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    ceil_mode: bool,
    exclusive: bool,
    divisor_override: Any,
    data_format: str,
) -> Tensor:
    xc = _channels_first(name, nd, x, data_format)
    xc, k, s, pads, total = _pool_args(name, nd, xc, kernel_size, stride, padding, ceil_mode)
    if divisor_override is not None and (
        isinstance(divisor_override, bool)
        or not isinstance(divisor_override, (int, float))
        or divisor_override <= 0
    ):
        raise OpArgumentError(
            f"[{name}] divisor_override must be a positive number, got {divisor_override!r}"
        )
    attrs = {
        "kernel_size": k,
        "stride": s,
        "padding": total,
        "counted": ((0, 0),) * nd if exclusive else pads,
        "divisor": float(divisor_override or 0.0),
    }
    return _channels_back(call(OPS[f"avg_pool{nd}d"], [xc], attrs), nd, data_format)


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
    return _avg_pool(
        "avg_pool2d", 2, x, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format
    )


def avg_pool3d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    exclusive: bool = True,
    divisor_override: Any = None,
    data_format: str = "NCDHW",
    name: str | None = None,
) -> Tensor:
    """Mean over KD x KH x KW windows of ``x``; arguments as :func:`avg_pool2d`
    (``data_format`` is ``"NCDHW"`` or ``"NDHWC"``).

    >>> import framework as fw
    >>> x = fw.arange(8, dtype="float32").reshape([1, 1, 2, 2, 2])
    >>> fw.nn.functional.avg_pool3d(x, 2).numpy().ravel().tolist()
    [3.5]
    """
    return _avg_pool(
        "avg_pool3d", 3, x, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format
    )


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
        return max_pool2d(x, kernel_size, stride, padding, False, ceil_mode, data_format)
    xc = _channels_first("lp_pool2d", 2, x, data_format)
    xc, k, s, _, total = _pool_args("lp_pool2d", 2, xc, kernel_size, stride, padding, ceil_mode)
    attrs = {"kernel_size": k, "stride": s, "padding": total, "counted": total, "divisor": 1.0}
    out = M.pow(call(OPS["avg_pool2d"], [M.pow(xc, float(norm_type))], attrs), 1.0 / norm_type)
    return _channels_back(out, 2, data_format)


def _on_height_one(name: str, x: Any, kernel_size: Any, stride: Any, padding: Any, data_format: str = "NCL"):
    """(N, C, 1, L) ``x`` and the 2-d kernel, stride and padding of a 1-d pool."""
    x = _to_ncl(name, tensor_arg(name, x), data_format)
    (k,) = _ntuple(name, "kernel_size", kernel_size, 1, 1)
    s = k if stride is None else _ntuple(name, "stride", stride, 1, 1)[0]
    return x.unsqueeze(2), (1, k), (1, s), _pad1d_as_2d(name, padding, k, 1)


def _squeeze_height(out: Any) -> Any:
    return tuple(t.squeeze(2) for t in out) if isinstance(out, tuple) else out.squeeze(2)


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
    x2, k, s, p = _on_height_one("lp_pool1d", x, kernel_size, stride, padding, data_format)
    out = lp_pool2d(x2, norm_type, k, s, p, ceil_mode).squeeze(2)
    return out.transpose((0, 2, 1)) if data_format == "NLC" else out


def max_pool1d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    return_mask: bool = False,
    ceil_mode: bool = False,
    name: str | None = None,
) -> Any:
    """Max over windows of (N, C, L) ``x``; ``return_mask`` also gives each maximum's index.

    >>> import framework as fw
    >>> out, idx = fw.nn.functional.max_pool1d(fw.to_tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2, return_mask=True)
    >>> out.numpy().tolist(), idx.numpy().tolist()
    ([[[3.0, 2.0]]], [[[1, 2]]])
    """
    x2, k, s, p = _on_height_one("max_pool1d", x, kernel_size, stride, padding)
    return _squeeze_height(max_pool2d(x2, k, s, p, return_mask, ceil_mode))


def avg_pool1d(
    x: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    exclusive: bool = True,
    ceil_mode: bool = False,
    name: str | None = None,
) -> Tensor:
    """Mean over windows of (N, C, L) ``x`` (``exclusive``: padding left out of the count).

    >>> import framework as fw
    >>> fw.nn.functional.avg_pool1d(fw.to_tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2).numpy().tolist()
    [[[2.0, 1.0]]]
    """
    x2, k, s, p = _on_height_one("avg_pool1d", x, kernel_size, stride, padding)
    return avg_pool2d(x2, k, s, p, ceil_mode, exclusive).squeeze(2)
