"""conv1d, conv3d, transposed convolutions, 1-d and adaptive-max pooling, unfold/fold and
pixel (un)shuffle, by decomposition into the existing ops.

- conv1d / the 1-d pools run the 2-d ops on a height-1 image.
- conv3d is im2col over three dims (one strided ``slice`` per kernel offset) and a batched
  ``matmul``, as conv2d.
- conv2d_transpose is the gradient-of-conv2d form: insert stride-1 zeros between the input's
  pixels, pad by dilation*(k-1)-padding, run conv2d with the flipped, channel-swapped weight.
- fold (col2im) is conv2d_transpose with a one-hot weight, one group per channel.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ...tensor import Tensor, to_tensor
from .. import creation as C
from .. import math as M
from .. import shape as S
from ..base import OPS, call, composite
from ..cost import conv_flops, conv_transpose_flops, no_flops
from ._common import float_arg, tensor_arg
from .conv import _adaptive_axis, _out_size, _padding, _pair, avg_pool2d, conv2d, max_pool2d


def _ntuple(name: str, what: str, v: Any, n: int, least: int | None = None) -> tuple[int, ...]:
    if isinstance(v, int) and not isinstance(v, bool):
        out = (v,) * n
    else:
        try:
            out = tuple(int(t) for t in v)
        except (TypeError, ValueError):
            raise OpArgumentError(f"[{name}] {what} must be an int or {n} ints, got {v!r}") from None
        if len(out) != n:
            raise OpArgumentError(f"[{name}] {what} must be an int or {n} ints, got {v!r}")
    if least is not None and min(out) < least:
        raise OpArgumentError(f"[{name}] {what} must be at least {least}, got {v!r}")
    return out


def _pads_nd(name: str, padding: Any, k: tuple[int, ...], d: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """((before, after), ...) per spatial dim from an int, n ints, 2n ints or 'same'/'valid'."""
    n = len(k)
    if isinstance(padding, str):
        p = padding.lower()
        if p == "valid":
            return ((0, 0),) * n
        if p == "same":
            tot = [dd * (kk - 1) for kk, dd in zip(k, d)]
            return tuple((t // 2, t - t // 2) for t in tot)
        raise OpArgumentError(
            f"[{name}] padding must be an int, {n} or {2 * n} ints, 'same' or 'valid', got {padding!r}"
        )
    if isinstance(padding, (list, tuple)) and len(padding) == 2 * n:
        v = [int(t) for t in padding]
        return tuple((v[2 * i], v[2 * i + 1]) for i in range(n))
    return tuple((p, p) for p in _ntuple(name, "padding", padding, n))


# -- 1-d via 2-d --------------------------------------------------------------------------
def _pad1d_as_2d(name: str, padding: Any, k: int, d: int) -> Any:
    if isinstance(padding, str):
        return padding
    ((a, b),) = _pads_nd(name, padding, (k,), (d,))
    return [0, 0, a, b]


def _to_ncl(name: str, x: Tensor, data_format: str) -> Tensor:
    if data_format not in ("NCL", "NLC"):
        raise OpArgumentError(f"[{name}] data_format must be 'NCL' or 'NLC', got {data_format!r}")
    if x.ndim != 3:
        raise OpArgumentError(f"[{name}] x must be 3-d (N, C, L), got shape {x.shape}")
    return x.transpose((0, 2, 1)) if data_format == "NLC" else x


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


# -- conv3d ---------------------------------------------------------------------------------
def _patches_nd(
    x: Tensor, k: tuple[int, ...], s: tuple[int, ...], d: tuple[int, ...], o: tuple[int, ...]
) -> Tensor:
    """(N, C, prod(k), *o): one strided slice per kernel offset over the trailing dims."""
    n, c = x.shape[:2]
    cols = []
    for off in np.ndindex(*k):
        starts = (0, 0) + tuple(i * dd for i, dd in zip(off, d))
        stops = (n, c) + tuple(i * dd + (oo - 1) * ss + 1 for i, dd, oo, ss in zip(off, d, o, s))
        cols.append(S.slice_raw(x, starts, stops, (1, 1) + tuple(s)).reshape((n, c, 1) + tuple(o)))
    return S.concat(cols, axis=2) if len(cols) > 1 else cols[0]


def _conv3d_out(x: Tensor, w: Tensor, a: dict[str, Any]) -> tuple[int, ...]:
    return tuple(
        _out_size("conv3d", x.shape[2 + i], w.shape[2 + i], a["stride"][i], a["dilation"][i], a["padding"][i])
        for i in range(3)
    )


def _conv3d_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x, w = ins
    return [((x.shape[0], w.shape[0]) + _conv3d_out(x, w, attrs), x.dtype)]


@composite("conv3d", flops=conv_flops, amp="allow", infer=_conv3d_infer)
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
    attrs = {
        "stride": _ntuple("conv3d", "stride", stride, 3, 1),
        "padding": _pads_nd("conv3d", padding, weight.shape[2:], d),
        "dilation": d,
        "groups": groups,
    }
    y = call(OPS["conv3d"], [x, weight.astype(x.dtype)], attrs)
    if bias is not None:
        y = y + tensor_arg("conv3d", bias, "bias").astype(y.dtype).reshape((1, -1, 1, 1, 1))
    return y.transpose((0, 2, 3, 4, 1)) if data_format == "NDHWC" else y


# -- transposed convolution ----------------------------------------------------------------
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
        for i in range(2)
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


@composite("conv2d_transpose", flops=conv_transpose_flops, amp="allow", infer=_convt_infer)
def conv2d_transpose_decomposition(
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
    conv2d (stride 1) with the weight flipped and its in/out channels swapped per group."""
    cin, cog, kh, kw = w.shape
    for ax in (2, 3):
        i = ax - 2
        x = _dilate(x, ax, stride[i])
        full = dilation[i] * (w.shape[ax] - 1)
        x = _pad_or_crop(x, ax, full - padding[i][0], full - padding[i][1] + output_padding[i])
    wg = w.reshape((groups, cin // groups, cog, kh, kw)).transpose((0, 2, 1, 3, 4))
    wf = S.flip(wg.reshape((groups * cog, cin // groups, kh, kw)), [2, 3])
    attrs = {"stride": (1, 1), "padding": ((0, 0), (0, 0)), "dilation": tuple(dilation), "groups": groups}
    return call(OPS["conv2d"], [x, wf], attrs)


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
    output_padding that reaches it."""
    x = float_arg("conv2d_transpose", x)
    weight = tensor_arg("conv2d_transpose", weight, "weight")
    if data_format not in ("NCHW", "NHWC"):
        raise OpArgumentError(f"[conv2d_transpose] data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    if data_format == "NHWC":
        x = x.transpose((0, 3, 1, 2))
    if x.ndim != 4 or weight.ndim != 4:
        raise OpArgumentError(
            f"[conv2d_transpose] x must be 4-d (N, C, H, W) and weight 4-d (C_in, C_out/groups, KH, KW), got {x.shape} and {weight.shape}"
        )
    _check_groups("conv2d_transpose", x, weight, groups, True)
    s = _ntuple("conv2d_transpose", "stride", stride, 2, 1)
    d = _ntuple("conv2d_transpose", "dilation", dilation, 2, 1)
    if isinstance(padding, str):
        if padding.lower() != "valid":
            raise OpArgumentError(
                f"[conv2d_transpose] padding {padding!r} is not supported; use ints or 'valid'"
            )
        padding = 0
    pads = _padding("conv2d_transpose", padding, weight.shape[2:], d)
    op = list(_ntuple("conv2d_transpose", "output_padding", output_padding, 2))
    if output_size is not None:
        want = _ntuple("conv2d_transpose", "output_size", output_size, 2, 1)
        for i in range(2):
            base = _convt_out(x.shape[2 + i], weight.shape[2 + i], s[i], d[i], pads[i], 0)
            op[i] = want[i] - base
            if not 0 <= op[i] < max(s[i], d[i]):
                raise OpArgumentError(
                    f"[conv2d_transpose] output_size {want} cannot be reached: dim {i} gives {base} to {base + max(s[i], d[i]) - 1}"
                )
    for i in range(2):
        if not 0 <= op[i] < max(s[i], d[i]):
            raise OpArgumentError(
                f"[conv2d_transpose] output_padding {tuple(op)} must be >= 0 and smaller than the stride or dilation"
            )
    attrs = {"stride": s, "padding": pads, "output_padding": tuple(op), "dilation": d, "groups": groups}
    y = call(OPS["conv2d_transpose"], [x, weight.astype(x.dtype)], attrs)
    if bias is not None:
        y = y + tensor_arg("conv2d_transpose", bias, "bias").astype(y.dtype).reshape((1, -1, 1, 1))
    return y.transpose((0, 2, 3, 1)) if data_format == "NHWC" else y


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


# -- unfold / fold / pixel shuffle -----------------------------------------------------------
def _unfold_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x = ins[0]
    k, s, d, p = attrs["kernel_sizes"], attrs["strides"], attrs["dilations"], attrs["paddings"]
    o = [_out_size("unfold", x.shape[2 + i], k[i], s[i], d[i], p[i]) for i in range(2)]
    return [((x.shape[0], x.shape[1] * k[0] * k[1], o[0] * o[1]), x.dtype)]


@composite("unfold", flops=no_flops, amp="allow", infer=_unfold_infer)
def unfold_decomposition(
    x: Tensor, *, kernel_sizes: tuple, strides: tuple, paddings: tuple, dilations: tuple
) -> Tensor:
    """im2col: (N, C, H, W) -> (N, C*KH*KW, L), channel-major then kernel offset."""
    ((shape, _),) = _unfold_infer(
        [x], {"kernel_sizes": kernel_sizes, "strides": strides, "dilations": dilations, "paddings": paddings}
    )
    o = tuple(
        _out_size("unfold", x.shape[2 + i], kernel_sizes[i], strides[i], dilations[i], paddings[i])
        for i in range(2)
    )
    xp = S.pad_raw(x, ((0, 0), (0, 0)) + tuple(paddings), 0.0)
    return _patches_nd(xp, kernel_sizes, strides, dilations, o).reshape(shape)


def _unfold_args(name: str, kernel_sizes: Any, strides: Any, paddings: Any, dilations: Any) -> dict[str, Any]:
    k = _ntuple(name, "kernel_sizes", kernel_sizes, 2, 1)
    d = _ntuple(name, "dilations", dilations, 2, 1)
    p = _padding(name, paddings, k, d)
    if min(min(p[0]), min(p[1])) < 0:
        raise OpArgumentError(f"[{name}] paddings must not be negative, got {paddings!r}")
    return {
        "kernel_sizes": k,
        "strides": _ntuple(name, "strides", strides, 2, 1),
        "paddings": p,
        "dilations": d,
    }


def unfold(
    x: Tensor,
    kernel_sizes: Any,
    strides: Any = 1,
    paddings: Any = 0,
    dilations: Any = 1,
    name: str | None = None,
) -> Tensor:
    """Sliding blocks of NCHW ``x`` as columns: (N, C*KH*KW, L) (im2col)."""
    x = float_arg("unfold", x)
    if x.ndim != 4:
        raise OpArgumentError(f"[unfold] x must be 4-d (N, C, H, W), got shape {x.shape}")
    return call(OPS["unfold"], [x], _unfold_args("unfold", kernel_sizes, strides, paddings, dilations))


def fold(
    x: Tensor,
    output_sizes: Any,
    kernel_sizes: Any,
    strides: Any = 1,
    paddings: Any = 0,
    dilations: Any = 1,
    name: str | None = None,
) -> Tensor:
    """The inverse layout of :func:`unfold` (col2im): (N, C*KH*KW, L) columns summed back into
    an (N, C, H, W) image, overlaps added. A transposed convolution with a one-hot weight."""
    x = float_arg("fold", x)
    a = _unfold_args("fold", kernel_sizes, strides, paddings, dilations)
    hw = _ntuple("fold", "output_sizes", output_sizes, 2, 1)
    k, s, d, p = a["kernel_sizes"], a["strides"], a["dilations"], a["paddings"]
    kk = k[0] * k[1]
    o = [_out_size("fold", hw[i], k[i], s[i], d[i], p[i]) for i in range(2)]
    if x.ndim != 3 or x.shape[1] % kk or x.shape[2] != o[0] * o[1]:
        raise OpArgumentError(
            f"[fold] x must be (N, C*{kk}, {o[0] * o[1]}) for kernel {k} and output {hw}, got shape {x.shape}"
        )
    c = x.shape[1] // kk
    onehot = np.zeros((c * kk, 1) + k, dtype=x.dtype)
    for ci in range(c):
        for j, off in enumerate(np.ndindex(*k)):
            onehot[ci * kk + j, 0][off] = 1.0
    w = to_tensor(onehot, device=x.device)
    op = tuple(hw[i] - _convt_out(o[i], k[i], s[i], d[i], p[i], 0) for i in range(2))
    attrs = {"stride": s, "padding": p, "output_padding": op, "dilation": d, "groups": c}
    return call(OPS["conv2d_transpose"], [x.reshape((x.shape[0], c * kk, o[0], o[1])), w], attrs)


def pixel_shuffle(
    x: Tensor, upscale_factor: int, data_format: str = "NCHW", name: str | None = None
) -> Tensor:
    """(N, C*r*r, H, W) -> (N, C, H*r, W*r)."""
    x = tensor_arg("pixel_shuffle", x)
    r = int(upscale_factor)
    if data_format == "NHWC":
        return pixel_shuffle(x.transpose((0, 3, 1, 2)), r).transpose((0, 2, 3, 1))
    if x.ndim != 4 or r < 1 or x.shape[1] % (r * r):
        raise OpArgumentError(
            f"[pixel_shuffle] x must be 4-d with channels divisible by upscale_factor**2={r * r}, got shape {x.shape}"
        )
    n, c, h, w = x.shape
    y = x.reshape((n, c // (r * r), r, r, h, w)).transpose((0, 1, 4, 2, 5, 3))
    return y.reshape((n, c // (r * r), h * r, w * r))


def pixel_unshuffle(
    x: Tensor, downscale_factor: int, data_format: str = "NCHW", name: str | None = None
) -> Tensor:
    """(N, C, H*r, W*r) -> (N, C*r*r, H, W), the inverse of :func:`pixel_shuffle`."""
    x = tensor_arg("pixel_unshuffle", x)
    r = int(downscale_factor)
    if data_format == "NHWC":
        return pixel_unshuffle(x.transpose((0, 3, 1, 2)), r).transpose((0, 2, 3, 1))
    if x.ndim != 4 or r < 1 or x.shape[2] % r or x.shape[3] % r:
        raise OpArgumentError(
            f"[pixel_unshuffle] x must be 4-d with H and W divisible by downscale_factor={r}, got shape {x.shape}"
        )
    n, c, h, w = x.shape
    y = x.reshape((n, c, h // r, r, w // r, r)).transpose((0, 1, 3, 5, 2, 4))
    return y.reshape((n, c * r * r, h // r, w // r))
