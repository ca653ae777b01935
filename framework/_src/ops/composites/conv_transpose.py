"""Transposed convolution: conv1d_transpose, conv2d_transpose and conv3d_transpose.

The 2-d and 3-d ones are one decomposition, the gradient-of-convolution form: insert stride-1
zeros between the input's elements, pad by dilation*(k-1)-padding, run conv2d/conv3d with the
flipped, channel-swapped weight; conv1d_transpose runs the 2-d one on a height-1 image.
"""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import creation as C
from .. import shape as S
from ..base import OPS, call, composite
from ..cost import conv_transpose_flops
from ._common import float_arg, tensor_arg
from ._window import _ntuple, _pad1d_as_2d, _pads_nd, _to_ncl
from .conv import _check_groups


def _convt_out(size: int, k: int, s: int, d: int, pads: tuple[int, int], op: int) -> int:
    return (size - 1) * s - pads[0] - pads[1] + d * (k - 1) + op + 1


def _convt_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x, w = ins
    g = attrs["groups"]
    o = tuple(
        _convt_out(
            x.shape[2 + i],
            w.shape[2 + i],
            attrs["stride"][i],
            attrs["dilation"][i],
            attrs["padding"][i],
            attrs["output_padding"][i],
        )
        for i in range(x.ndim - 2)
    )
    return [((x.shape[0], w.shape[1] * g) + o, x.dtype)]


def _dilate(x: Tensor, axis: int, s: int) -> Tensor:
    """Insert s-1 zeros between neighbours along ``axis`` (size n -> (n-1)*s+1)."""
    if s == 1:
        return x
    n = x.shape[axis]
    parts = [x.unsqueeze(axis + 1)]
    zshape = x.shape[: axis + 1] + (s - 1,) + x.shape[axis + 1 :]
    parts.append(C.zeros(zshape, dtype=x.dtype, device=x.device))
    y = S.concat(parts, axis=axis + 1).reshape(x.shape[:axis] + (n * s,) + x.shape[axis + 1 :])
    stops = list(y.shape)
    stops[axis] = (n - 1) * s + 1
    return S.slice_raw(y, (0,) * y.ndim, tuple(stops), (1,) * y.ndim)


def _pad_or_crop(x: Tensor, axis: int, before: int, after: int) -> Tensor:
    pads = [(0, 0)] * x.ndim
    pads[axis] = (max(before, 0), max(after, 0))
    x = S.pad_raw(x, tuple(pads), 0.0)
    if before < 0 or after < 0:
        starts, stops = [0] * x.ndim, list(x.shape)
        starts[axis] = max(-before, 0)
        stops[axis] = x.shape[axis] - max(-after, 0)
        x = S.slice_raw(x, tuple(starts), tuple(stops), (1,) * x.ndim)
    return x


def conv_transpose_decomposition(
    x: Tensor,
    w: Tensor,
    *,
    stride: tuple,
    padding: tuple,
    output_padding: tuple,
    dilation: tuple,
    groups: int,
) -> Tensor:
    """Zero-insert by the stride, pad by dilation*(k-1)-padding (+ output_padding after), then
    convolve (stride 1) with the weight flipped and its in/out channels swapped per group."""
    cin, cog = w.shape[:2]
    k, nd = w.shape[2:], w.ndim - 2
    for i in range(nd):
        x = _dilate(x, 2 + i, stride[i])
        full = dilation[i] * (k[i] - 1)
        x = _pad_or_crop(x, 2 + i, full - padding[i][0], full - padding[i][1] + output_padding[i])
    wg = w.reshape((groups, cin // groups, cog) + k).transpose((0, 2, 1) + tuple(range(3, 3 + nd)))
    wf = S.flip(wg.reshape((groups * cog, cin // groups) + k), list(range(2, 2 + nd)))
    attrs = {"stride": (1,) * nd, "padding": ((0, 0),) * nd, "dilation": tuple(dilation), "groups": groups}
    return call(OPS[f"conv{nd}d"], [x, wf], attrs)


for _nd in (2, 3):
    composite(f"conv{_nd}d_transpose", amp="allow", flops=conv_transpose_flops, infer=_convt_infer)(
        conv_transpose_decomposition
    )

_LAYOUTS = {2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _conv_transpose(
    name: str,
    nd: int,
    x: Any,
    weight: Any,
    bias: Any,
    stride: Any,
    padding: Any,
    output_padding: Any,
    dilation: Any,
    groups: int,
    output_size: Any,
    data_format: str,
) -> Tensor:
    x = float_arg(name, x)
    weight = tensor_arg(name, weight, "weight")
    first, last = _LAYOUTS[nd]
    if data_format not in (first, last):
        raise OpArgumentError(f"[{name}] data_format must be '{first}' or '{last}', got {data_format!r}")
    if data_format == last:
        x = x.transpose((0, nd + 1) + tuple(range(1, nd + 1)))
    if x.ndim != nd + 2 or weight.ndim != nd + 2:
        raise OpArgumentError(
            f"[{name}] x must be {nd + 2}-d (N, C, spatial...) and weight {nd + 2}-d "
            f"(C_in, C_out/groups, k...), got {x.shape} and {weight.shape}"
        )
    _check_groups(name, x, weight, groups, True)
    s = _ntuple(name, "stride", stride, nd, 1)
    d = _ntuple(name, "dilation", dilation, nd, 1)
    if isinstance(padding, str) and padding.lower() == "same":
        d = (1,) * nd  # Paddle's 'SAME': pads from the input size, the dilation taken as 1
    pads = _pads_nd(name, padding, weight.shape[2:], d, x.shape[2:], s)
    op = list(_ntuple(name, "output_padding", output_padding, nd))
    if output_size is not None:
        want = _ntuple(name, "output_size", output_size, nd, 1)
        for i in range(nd):
            base = _convt_out(x.shape[2 + i], weight.shape[2 + i], s[i], d[i], pads[i], 0)
            op[i] = want[i] - base
            if not 0 <= op[i] < max(s[i], d[i]):
                raise OpArgumentError(
                    f"[{name}] output_size {want} cannot be reached: dim {i} gives {base} to {base + max(s[i], d[i]) - 1}"
                )
    for i in range(nd):
        if not 0 <= op[i] < max(s[i], d[i]):
            raise OpArgumentError(
                f"[{name}] output_padding {tuple(op)} must be >= 0 and smaller than the stride or dilation"
            )
    attrs = {"stride": s, "padding": pads, "output_padding": tuple(op), "dilation": d, "groups": groups}
    y = call(OPS[f"conv{nd}d_transpose"], [x, weight.astype(x.dtype)], attrs)
    if bias is not None:
        y = y + tensor_arg(name, bias, "bias").astype(y.dtype).reshape((1, -1) + (1,) * nd)
    return y.transpose((0,) + tuple(range(2, nd + 2)) + (1,)) if data_format == last else y


def conv2d_transpose(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    output_size: Any = None,
    data_format: str = "NCHW",
    name: str | None = None,
) -> Tensor:
    """Transposed 2-d convolution (the gradient of conv2d wrt its input) of NCHW ``x`` with
    ``weight`` (C_in, C_out/groups, KH, KW), Paddle's layout; ``output_size`` picks the
    output_padding that reaches it.

    >>> import framework as fw
    >>> fw.nn.functional.conv2d_transpose(fw.ones([1, 2, 3, 3]), fw.ones([2, 4, 2, 2]), stride=2).shape
    (1, 4, 6, 6)
    """
    return _conv_transpose(
        "conv2d_transpose",
        2,
        x,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        dilation,
        groups,
        output_size,
        data_format,
    )


def conv3d_transpose(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
    output_size: Any = None,
    data_format: str = "NCDHW",
    name: str | None = None,
) -> Tensor:
    """Transposed 3-d convolution of NCDHW ``x`` with ``weight`` (C_in, C_out/groups, KD, KH,
    KW), arguments as Paddle's (``groups`` before ``dilation``).

    >>> import framework as fw
    >>> fw.nn.functional.conv3d_transpose(fw.ones([1, 2, 2, 3, 3]), fw.ones([2, 4, 2, 2, 2])).shape
    (1, 4, 3, 4, 4)
    """
    return _conv_transpose(
        "conv3d_transpose",
        3,
        x,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        dilation,
        groups,
        output_size,
        data_format,
    )


def conv1d_transpose(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
    output_size: Any = None,
    data_format: str = "NCL",
    name: str | None = None,
) -> Tensor:
    """Transposed 1-d convolution of (N, C, L) ``x`` with ``weight`` (C_in, C_out/groups, K)."""
    x = _to_ncl("conv1d_transpose", float_arg("conv1d_transpose", x), data_format)
    weight = tensor_arg("conv1d_transpose", weight, "weight")
    if weight.ndim != 3:
        raise OpArgumentError(
            f"[conv1d_transpose] weight must be 3-d (C_in, C_out/groups, K), got shape {weight.shape}"
        )
    (s,), (d,), (op,) = (
        _ntuple("conv1d_transpose", w, v, 1)
        for w, v in (("stride", stride), ("dilation", dilation), ("output_padding", output_padding))
    )
    pad = (
        padding if isinstance(padding, str) else _pad1d_as_2d("conv1d_transpose", padding, weight.shape[2], d)
    )
    osz = None if output_size is None else (1, _ntuple("conv1d_transpose", "output_size", output_size, 1)[0])
    y = conv2d_transpose(
        x.unsqueeze(2), weight.unsqueeze(2), bias, (1, s), pad, (0, op), (1, d), groups, osz
    ).squeeze(2)
    return y.transpose((0, 2, 1)) if data_format == "NLC" else y
