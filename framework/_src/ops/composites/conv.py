"""conv2d by im2col (stride, padding, dilation, groups) and 2-d pooling.

im2col here is KH*KW strided ``slice`` primitives stacked with ``concat``, then one batched
``matmul`` per group: no op a vendor must add.
"""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import math as M
from .. import shape as S
from ..base import OPS, call, composite
from ..cost import conv_flops
from ._common import float_arg, tensor_arg


def _pair(name: str, what: str, v: Any, least: int | None = None) -> tuple[int, int]:
    """(a, b) from an int or a pair; with ``least``, both must be at least that."""
    if isinstance(v, int) and not isinstance(v, bool):
        a, b = v, v
    else:
        try:
            a, b = (int(t) for t in v)
        except (TypeError, ValueError):
            raise OpArgumentError(f"[{name}] {what} must be an int or a pair of ints, got {v!r}") from None
    if least is not None and min(a, b) < least:
        raise OpArgumentError(f"[{name}] {what} must be at least {least}, got {v!r}")
    return (a, b)


def _padding(
    name: str, padding: Any, ksize: tuple[int, int], dilation: tuple[int, int]
) -> tuple[tuple[int, int], tuple[int, int]]:
    """((top, bottom), (left, right)) from an int, a pair, four ints or 'same'/'valid'."""
    if isinstance(padding, str):
        p = padding.lower()
        if p == "valid":
            return ((0, 0), (0, 0))
        if p == "same":
            tot = [d * (k - 1) for k, d in zip(ksize, dilation)]
            return ((tot[0] // 2, tot[0] - tot[0] // 2), (tot[1] // 2, tot[1] - tot[1] // 2))
        raise OpArgumentError(
            f"[{name}] padding must be an int, a pair, 4 ints, 'same' or 'valid', got {padding!r}"
        )
    if isinstance(padding, (list, tuple)) and len(padding) == 4:
        t, b, left, r = (int(v) for v in padding)
        return ((t, b), (left, r))
    ph, pw = _pair(name, "padding", padding)
    return ((ph, ph), (pw, pw))


def _out_size(name: str, size: int, k: int, s: int, d: int, pads: tuple[int, int]) -> int:
    o = (size + pads[0] + pads[1] - d * (k - 1) - 1) // s + 1
    if o <= 0:
        raise OpArgumentError(
            f"[{name}] the output would be empty: input size {size}, kernel {k}, stride {s}, dilation {d}, "
            f"padding {pads}; use a smaller kernel or more padding"
        )
    return o


def _patches(
    x: Tensor, k: tuple[int, int], s: tuple[int, int], d: tuple[int, int], o: tuple[int, int]
) -> Tensor:
    """(N, C, KH*KW, OH, OW): one strided slice per kernel offset."""
    n, c = x.shape[:2]
    cols = []
    for i in range(k[0]):
        for j in range(k[1]):
            starts = (0, 0, i * d[0], j * d[1])
            stops = (n, c, i * d[0] + (o[0] - 1) * s[0] + 1, j * d[1] + (o[1] - 1) * s[1] + 1)
            cols.append(S.slice_raw(x, starts, stops, (1, 1, s[0], s[1])).reshape((n, c, 1, o[0], o[1])))
    return S.concat(cols, axis=2) if len(cols) > 1 else cols[0]


def _conv_geometry(x: Tensor, w: Tensor, a: dict[str, Any]) -> tuple[int, int]:
    (ph, pw), k = a["padding"], w.shape[2:]
    oh = _out_size("conv2d", x.shape[2], k[0], a["stride"][0], a["dilation"][0], ph)
    ow = _out_size("conv2d", x.shape[3], k[1], a["stride"][1], a["dilation"][1], pw)
    return oh, ow


def _conv_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x, w = ins
    return [((x.shape[0], w.shape[0]) + _conv_geometry(x, w, attrs), x.dtype)]


@composite("conv2d", flops=conv_flops, amp="allow", infer=_conv_infer)
def conv2d_decomposition(
    x: Tensor, w: Tensor, *, stride: tuple, padding: tuple, dilation: tuple, groups: int
) -> Tensor:
    """NCHW input, (O, C/groups, KH, KW) weight: pad, im2col, one batched matmul."""
    n, c = x.shape[:2]
    o_ch, cg, kh, kw = w.shape
    oh, ow = _conv_geometry(x, w, {"stride": stride, "padding": padding, "dilation": dilation})
    xp = S.pad_raw(x, ((0, 0), (0, 0)) + tuple(padding), 0.0)
    cols = _patches(xp, (kh, kw), stride, dilation, (oh, ow))  # (N, C, KK, OH, OW)
    kdim = cg * kh * kw
    cols = cols.reshape((n, groups, kdim, oh * ow))
    wg = w.reshape((1, groups, o_ch // groups, kdim)).expand((n, groups, o_ch // groups, kdim))
    out = M.matmul(wg, cols)  # (N, G, O/G, L)
    return out.reshape((n, o_ch, oh, ow))


def conv2d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    data_format: str = "NCHW",
    name: str | None = None,
) -> Tensor:
    """2-d convolution (cross-correlation) of NCHW ``x`` with ``weight`` (O, C/groups, KH, KW)."""
    x = float_arg("conv2d", x)
    weight = tensor_arg("conv2d", weight, "weight")
    if data_format not in ("NCHW", "NHWC"):
        raise OpArgumentError(f"[conv2d] data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    if data_format == "NHWC":
        x = x.transpose((0, 3, 1, 2))
    if x.ndim != 4 or weight.ndim != 4:
        raise OpArgumentError(
            f"[conv2d] x must be 4-d (N, C, H, W) and weight 4-d (O, C/groups, KH, KW), got {x.shape} and {weight.shape}"
        )
    if not isinstance(groups, int) or groups < 1 or x.shape[1] % groups or weight.shape[0] % groups:
        raise OpArgumentError(
            f"[conv2d] groups={groups!r} must divide the input channels {x.shape[1]} and output channels {weight.shape[0]}"
        )
    if weight.shape[1] * groups != x.shape[1]:
        raise OpArgumentError(
            f"[conv2d] weight has {weight.shape[1]} input channels per group, x has {x.shape[1]} channels "
            f"with groups={groups}: expected weight.shape[1] == {x.shape[1] // groups}"
        )
    d = _pair("conv2d", "dilation", dilation, least=1)
    attrs = {
        "stride": _pair("conv2d", "stride", stride, least=1),
        "padding": _padding("conv2d", padding, weight.shape[2:], d),
        "dilation": d,
        "groups": groups,
    }
    if weight.dtype != x.dtype:
        weight = weight.astype(x.dtype)
    y = call(OPS["conv2d"], [x, weight], attrs)
    if bias is not None:
        y = y + tensor_arg("conv2d", bias, "bias").astype(y.dtype).reshape((1, -1, 1, 1))
    return y.transpose((0, 2, 3, 1)) if data_format == "NHWC" else y


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
