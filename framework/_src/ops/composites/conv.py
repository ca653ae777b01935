"""Convolution by im2col (stride, padding, dilation, groups): conv1d, conv2d, conv3d.

im2col here is one strided ``slice`` primitive per kernel offset, stacked with ``concat``,
then one batched ``matmul`` per group: no op a vendor must add. conv1d runs conv2d on a
height-1 image.
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
from ._window import (
    _ntuple,
    _out_size,
    _pad1d_as_2d,
    _padding,
    _pads_nd,
    _pair,
    _patches,
    _patches_nd,
    _to_ncl,
)


def _conv_geometry(x: Tensor, w: Tensor, a: dict[str, Any]) -> tuple[int, int]:
    (ph, pw), k = a["padding"], w.shape[2:]
    oh = _out_size("conv2d", x.shape[2], k[0], a["stride"][0], a["dilation"][0], ph)
    ow = _out_size("conv2d", x.shape[3], k[1], a["stride"][1], a["dilation"][1], pw)
    return oh, ow


def _conv_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x, w = ins
    return [((x.shape[0], w.shape[0]) + _conv_geometry(x, w, attrs), x.dtype)]


def _conv2d_grad(node: Any, gouts: list) -> list:
    """dx = conv2d_transpose(dy, w) (output_padding: the rows and columns the strides skipped
    at the end); dW[g] = sum over images of dy[g] (O/G, L) times unfold(x)[g]^T (L, C/G*KH*KW)."""
    x, w = node.inputs
    (dy,) = gouts
    a = node.attrs
    stride, padding, dilation, groups = a["stride"], a["padding"], a["dilation"], a["groups"]
    n = x.shape[0]
    o_ch, cg, kh, kw = w.shape
    oh, ow = dy.shape[2:]
    dx = dw = None
    if not x.stop_gradient:
        out_pad = tuple(
            x.shape[2 + i]
            - ((dy.shape[2 + i] - 1) * stride[i] - sum(padding[i]) + dilation[i] * (w.shape[2 + i] - 1) + 1)
            for i in range(2)
        )
        dx = call(
            OPS["conv2d_transpose"],
            [dy, w],
            {
                "stride": stride,
                "padding": padding,
                "output_padding": out_pad,
                "dilation": dilation,
                "groups": groups,
            },
        )
    if not w.stop_gradient:
        cols = call(
            OPS["unfold"],
            [x],
            {"kernel_sizes": (kh, kw), "strides": stride, "paddings": padding, "dilations": dilation},
        )  # (N, C*KH*KW, L)
        kdim, pos = cg * kh * kw, oh * ow
        cols = cols.reshape((n, groups, kdim, pos)).transpose((1, 0, 3, 2)).reshape((groups, n * pos, kdim))
        dyg = (
            dy.reshape((n, groups, o_ch // groups, pos))
            .transpose((1, 2, 0, 3))
            .reshape((groups, o_ch // groups, n * pos))
        )
        dw = M.matmul(dyg, cols).reshape(w.shape)
    return [dx, dw]


# NOTE: grad_kernel: on a device with neither a conv2d nor a conv2d_transpose kernel (opencl
# today), the rule's conv2d_transpose decomposition (zero insertion, then im2col of the dilated
# dy) is slower than the forward's tape (resnet18 b2 32x32 step on PoCL: 0.65x), so eager
# differentiates the tape there.
@composite(
    "conv2d",
    flops=conv_flops,
    amp="allow",
    infer=_conv_infer,
    grad=_conv2d_grad,
    grad_kernel="conv2d_transpose",
)
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


def _padding_pairs(padding: Any, data_format: str) -> Any:
    """Paddle's four (before, after) pairs, one per dim in ``data_format``'s order, as the four
    ints [top, bottom, left, right]; the batch and channel pairs must be zero."""
    if not (isinstance(padding, (list, tuple)) and len(padding) == 4):
        return padding
    if not all(isinstance(p, (list, tuple)) for p in padding):
        return padding
    spatial = (2, 3) if data_format == "NCHW" else (1, 2)
    other = [tuple(padding[i]) for i in range(4) if i not in spatial]
    if any(len(p) != 2 for p in padding) or any(tuple(int(v) for v in p) != (0, 0) for p in other):
        raise OpArgumentError(
            f"[conv2d] padding as pairs must be 4 (before, after) pairs in {data_format} order with zero "
            f"batch and channel pairs, got {padding!r}"
        )
    return [int(v) for i in spatial for v in padding[i]]


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
    st = _pair("conv2d", "stride", stride, least=1)
    padding = _padding_pairs(padding, data_format)
    if isinstance(padding, str) and padding.lower() == "same":
        d = (1, 1)  # Paddle's 'SAME' takes the dilation as 1 (ceil(size / stride) outputs)
    attrs = {
        "stride": st,
        "padding": _padding("conv2d", padding, weight.shape[2:], d, x.shape[2:], st),
        "dilation": d,
        "groups": groups,
    }
    if weight.dtype != x.dtype:
        weight = weight.astype(x.dtype)
    y = call(OPS["conv2d"], [x, weight], attrs)
    if bias is not None:
        y = y + tensor_arg("conv2d", bias, "bias").astype(y.dtype).reshape((1, -1, 1, 1))
    return y.transpose((0, 2, 3, 1)) if data_format == "NHWC" else y


def conv1d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    data_format: str = "NCL",
    name: str | None = None,
) -> Tensor:
    """1-d convolution of (N, C, L) ``x`` with ``weight`` (O, C/groups, K): conv2d on height 1."""
    x = _to_ncl("conv1d", float_arg("conv1d", x), data_format)
    weight = tensor_arg("conv1d", weight, "weight")
    if weight.ndim != 3:
        raise OpArgumentError(f"[conv1d] weight must be 3-d (O, C/groups, K), got shape {weight.shape}")
    (s,), (d,) = _ntuple("conv1d", "stride", stride, 1, 1), _ntuple("conv1d", "dilation", dilation, 1, 1)
    pad = _pad1d_as_2d("conv1d", padding, weight.shape[2], d)
    y = conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1, s), pad, (1, d), groups).squeeze(2)
    return y.transpose((0, 2, 1)) if data_format == "NLC" else y


# -- conv3d ---------------------------------------------------------------------------------
def _conv3d_out(x: Tensor, w: Tensor, a: dict[str, Any]) -> tuple[int, ...]:
    return tuple(
        _out_size("conv3d", x.shape[2 + i], w.shape[2 + i], a["stride"][i], a["dilation"][i], a["padding"][i])
        for i in range(3)
    )


def _conv3d_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x, w = ins
    return [((x.shape[0], w.shape[0]) + _conv3d_out(x, w, attrs), x.dtype)]


@composite("conv3d", amp="allow", flops=conv_flops, infer=_conv3d_infer)
def conv3d_decomposition(
    x: Tensor, w: Tensor, *, stride: tuple, padding: tuple, dilation: tuple, groups: int
) -> Tensor:
    """NCDHW input, (O, C/groups, KD, KH, KW) weight: pad, im2col, one batched matmul."""
    n = x.shape[0]
    o_ch, cg = w.shape[:2]
    k = w.shape[2:]
    o = _conv3d_out(x, w, {"stride": stride, "padding": padding, "dilation": dilation})
    xp = S.pad_raw(x, ((0, 0), (0, 0)) + tuple(padding), 0.0)
    cols = _patches_nd(xp, k, stride, dilation, o)
    kdim = cg * k[0] * k[1] * k[2]
    cols = cols.reshape((n, groups, kdim, o[0] * o[1] * o[2]))
    wg = w.reshape((1, groups, o_ch // groups, kdim)).expand((n, groups, o_ch // groups, kdim))
    return M.matmul(wg, cols).reshape((n, o_ch) + o)


def _check_groups(name: str, x: Tensor, weight: Tensor, groups: int, transposed: bool) -> None:
    cin = x.shape[1]
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1 or cin % groups:
        raise OpArgumentError(
            f"[{name}] groups={groups!r} must be a positive int dividing the input channels {cin}"
        )
    want = cin if transposed else cin // groups
    have = weight.shape[0] if transposed else weight.shape[1]
    if have != want:
        layout = "(C_in, C_out/groups, k...)" if transposed else "(C_out, C_in/groups, k...)"
        raise OpArgumentError(
            f"[{name}] weight {weight.shape} does not fit x {x.shape} with groups={groups}: expected {layout} with {want} on that axis"
        )


def conv3d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    data_format: str = "NCDHW",
    name: str | None = None,
) -> Tensor:
    """3-d convolution of NCDHW ``x`` with ``weight`` (O, C/groups, KD, KH, KW)."""
    x = float_arg("conv3d", x)
    weight = tensor_arg("conv3d", weight, "weight")
    if data_format not in ("NCDHW", "NDHWC"):
        raise OpArgumentError(f"[conv3d] data_format must be 'NCDHW' or 'NDHWC', got {data_format!r}")
    if data_format == "NDHWC":
        x = x.transpose((0, 4, 1, 2, 3))
    if x.ndim != 5 or weight.ndim != 5:
        raise OpArgumentError(
            f"[conv3d] x must be 5-d (N, C, D, H, W) and weight 5-d, got {x.shape} and {weight.shape}"
        )
    _check_groups("conv3d", x, weight, groups, False)
    if weight.shape[0] % groups:
        raise OpArgumentError(f"[conv3d] groups={groups} must divide the output channels {weight.shape[0]}")
    d = _ntuple("conv3d", "dilation", dilation, 3, 1)
    st = _ntuple("conv3d", "stride", stride, 3, 1)
    if isinstance(padding, str) and padding.lower() == "same":
        d = (1, 1, 1)  # Paddle's 'SAME' takes the dilation as 1 (ceil(size / stride) outputs)
    attrs = {
        "stride": st,
        "padding": _pads_nd("conv3d", padding, weight.shape[2:], d, x.shape[2:], st),
        "dilation": d,
        "groups": groups,
    }
    y = call(OPS["conv3d"], [x, weight.astype(x.dtype)], attrs)
    if bias is not None:
        y = y + tensor_arg("conv3d", bias, "bias").astype(y.dtype).reshape((1, -1, 1, 1, 1))
    return y.transpose((0, 2, 3, 4, 1)) if data_format == "NDHWC" else y
