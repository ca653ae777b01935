"""Lowerings of Paddle's neural-network ops: convolution, pooling, normalisation, attention
pieces, activations with attributes, dropout at inference, embedding, resizing.

Each record maps one ``pd_op`` op onto ``fw.nn.functional`` (see :mod:`.table`)."""

from __future__ import annotations

from typing import Any

import framework as fw

from .table import Ctx, lowering

F = fw.nn.functional


def _padding(ctx: Ctx, a: dict[str, Any]) -> Any:
    """Paddle's ``padding_algorithm`` and ``paddings`` as the functional API's ``padding``."""
    algo = str(ctx.attr(a, "padding_algorithm", "EXPLICIT")).upper()
    if algo in ("SAME", "VALID"):
        return algo
    pads = [int(p) for p in ctx.attr(a, "paddings", [0, 0])]
    if len(pads) not in (2, 4):
        raise ctx.fail(f"has paddings {pads}; expected 2 or 4 numbers")
    return pads


def _ints(ctx: Ctx, a: dict[str, Any], name: str, default: list[int]) -> list[int]:
    return [int(v) for v in ctx.attr(a, name, default)]


@lowering("conv2d", "depthwise_conv2d")
def _conv2d(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return F.conv2d(
        ctx.tensor(ins[0]),
        ctx.tensor(ins[1]),
        stride=_ints(ctx, a, "strides", [1, 1]),
        padding=_padding(ctx, a),
        dilation=_ints(ctx, a, "dilations", [1, 1]),
        groups=int(ctx.attr(a, "groups", 1)),
        data_format=str(ctx.attr(a, "data_format", "NCHW")),
    )


@lowering("conv2d_transpose", "depthwise_conv2d_transpose")
def _conv2d_transpose(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    size = ctx.ints(ins[2], "the output size") if len(ins) > 2 and ins[2] is not None else []
    return F.conv2d_transpose(
        ctx.tensor(ins[0]),
        ctx.tensor(ins[1]),
        stride=_ints(ctx, a, "strides", [1, 1]),
        padding=_padding(ctx, a),
        output_padding=_ints(ctx, a, "output_padding", []) or 0,
        dilation=_ints(ctx, a, "dilations", [1, 1]),
        groups=int(ctx.attr(a, "groups", 1)),
        output_size=size or None,
        data_format=str(ctx.attr(a, "data_format", "NCHW")),
    )


@lowering("pool2d")
def _pool2d(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ctx.tensor(ins[0])
    kind = str(ctx.attr(a, "pooling_type", "max"))
    fmt = str(ctx.attr(a, "data_format", "NCHW"))
    if kind not in ("max", "avg"):
        raise ctx.fail(f"has pooling_type {kind!r}; expected 'max' or 'avg'")
    kernel = ctx.ints(ins[1], "the kernel size")
    if ctx.attr(a, "global_pooling", False) or (ctx.attr(a, "adaptive", False) and kernel == [1, 1]):
        spatial = [2, 3] if fmt == "NCHW" else [1, 2]
        reduce = fw.mean if kind == "avg" else fw.amax
        return reduce(x, axis=spatial, keepdim=True)
    if ctx.attr(a, "adaptive", False):
        if kind == "avg":
            return F.adaptive_avg_pool2d(x, kernel, data_format=fmt)
        if fmt != "NCHW":
            raise ctx.fail("is an adaptive max pooling in NHWC, which Oarlock's lowering does not cover")
        return F.adaptive_max_pool2d(x, kernel)
    stride, pad = _ints(ctx, a, "strides", kernel), _padding(ctx, a)
    ceil = bool(ctx.attr(a, "ceil_mode", False))
    if kind == "max":
        return F.max_pool2d(x, kernel, stride, pad, ceil_mode=ceil, data_format=fmt)
    exclusive = bool(ctx.attr(a, "exclusive", True))
    return F.avg_pool2d(x, kernel, stride, pad, ceil_mode=ceil, exclusive=exclusive, data_format=fmt)


@lowering("batch_norm", "batch_norm_")
def _batch_norm(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x, mean, var, w, b = ins[:5]
    if not ctx.attr(a, "is_test", False) and not ctx.attr(a, "use_global_stats", False):
        raise ctx.fail(
            "normalises with the batch's statistics (the model was saved in training mode)",
            "call model.eval() before paddle.jit.save",
        )
    y = F.batch_norm(
        ctx.tensor(x),
        ctx.tensor(mean),
        ctx.tensor(var),
        None if w is None else ctx.tensor(w),
        None if b is None else ctx.tensor(b),
        training=False,
        epsilon=float(ctx.attr(a, "epsilon", 1e-5)),
        data_format=str(ctx.attr(a, "data_format", "NCHW")),
    )
    return y, mean, var, None, None, None  # out, mean_out, variance_out (unchanged at inference)


@lowering("layer_norm")
def _layer_norm(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ctx.tensor(ins[0])
    begin = int(ctx.attr(a, "begin_norm_axis", 1))
    begin = begin + x.ndim if begin < 0 else begin
    shape = list(x.shape[begin:])
    w, b = ((None if v is None else fw.reshape(ctx.tensor(v), shape)) for v in ins[1:3])
    return F.layer_norm(x, shape, w, b, epsilon=float(ctx.attr(a, "epsilon", 1e-5))), None, None


@lowering("group_norm")
def _group_norm(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ctx.tensor(ins[0])
    w, b = ((None if v is None else ctx.tensor(v)) for v in ins[1:3])
    y = F.group_norm(
        x,
        int(ctx.attr(a, "groups")),
        epsilon=float(ctx.attr(a, "epsilon", 1e-5)),
        weight=w,
        bias=b,
        data_format=str(ctx.attr(a, "data_format", "NCHW")),
    )
    return y, None, None


@lowering("softmax", "softmax_")
def _softmax(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return F.softmax(ctx.tensor(ins[0]), axis=int(ctx.attr(a, "axis", -1)))


@lowering("log_softmax")
def _log_softmax(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return F.log_softmax(ctx.tensor(ins[0]), axis=int(ctx.attr(a, "axis", -1)))


@lowering("gelu")
def _gelu(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return F.gelu(ctx.tensor(ins[0]), approximate=bool(ctx.attr(a, "approximate", False)))


@lowering("leaky_relu", "leaky_relu_")
def _leaky_relu(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return F.leaky_relu(ctx.tensor(ins[0]), float(ctx.attr(a, "negative_slope", 0.02)))


@lowering("elu", "elu_")
def _elu(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return F.elu(ctx.tensor(ins[0]), float(ctx.attr(a, "alpha", 1.0)))


@lowering("hardsigmoid")
def _hardsigmoid(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    slope, offset = float(ctx.attr(a, "slope", 0.1666667)), float(ctx.attr(a, "offset", 0.5))
    return F.hardsigmoid(ctx.tensor(ins[0]), slope, offset)


@lowering("hardtanh", "hardtanh_")
def _hardtanh(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return F.hardtanh(ctx.tensor(ins[0]), float(ctx.attr(a, "t_min", -1.0)), float(ctx.attr(a, "t_max", 1.0)))


@lowering("softplus")
def _softplus(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    beta, threshold = float(ctx.attr(a, "beta", 1.0)), float(ctx.attr(a, "threshold", 20.0))
    return F.softplus(ctx.tensor(ins[0]), beta, threshold)


@lowering("dropout")
def _dropout(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    if not ctx.attr(a, "is_test", False):
        raise ctx.fail(
            "drops at random (the model was saved in training mode)", "call model.eval() before saving"
        )
    x = ctx.tensor(ins[0])
    if str(ctx.attr(a, "mode", "upscale_in_train")) == "upscale_in_train":
        return x, None
    p = ctx.scalar(ins[2], "the probability") if len(ins) > 2 and ins[2] is not None else 0.5
    return fw.scale(x, 1.0 - p), None  # downgrade_in_infer: scaled at inference


@lowering("embedding")
def _embedding(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    pad = int(ctx.attr(a, "padding_idx", -1))
    w = ctx.tensor(ins[1])
    return F.embedding(ctx.tensor(ins[0]), w, padding_idx=None if pad < 0 else pad)


def _interp(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ctx.tensor(ins[0])
    fmt = str(ctx.attr(a, "data_format", "NCHW"))
    spatial = x.ndim - 2
    size: list[int] | None = None
    scale: list[float] | None = None
    if ins[1] is not None:
        size = ctx.ints(ins[1], "the output size")
    elif len(ins) > 2 and ins[2] is not None:
        size = ctx.ints(ins[2], "the output size")
    elif len(ins) > 3 and ins[3] is not None:
        scale = [float(s) for s in ctx.known(ins[3], "the scale").reshape(-1)]
    else:
        dims = [int(ctx.attr(a, k, -1)) for k in ("out_d", "out_h", "out_w")][3 - spatial :]
        if all(d > 0 for d in dims):
            size = dims
        else:
            scale = [float(s) for s in ctx.attr(a, "scale", [])] or None
    if size is None and scale is None:
        raise ctx.fail("gives neither an output size nor a scale")
    if scale is not None and len(scale) == 1:
        scale = scale * spatial
    mode = str(ctx.attr(a, "interp_method", ctx.op.name[6:].replace("_interp", "")))
    return F.interpolate(
        x,
        size=size,
        scale_factor=None if size is not None else scale,
        mode=mode,
        align_corners=bool(ctx.attr(a, "align_corners", False)),
        align_mode=int(ctx.attr(a, "align_mode", 1)),
        data_format=fmt,
    )


for _kind in ("nearest", "bilinear", "bicubic", "linear", "trilinear"):
    lowering(f"{_kind}_interp")(_interp)


@lowering("pad")
def _pad(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    """Constant padding of every dim: ``paddings`` is ``[before0, after0, before1, ...]``."""
    pads = _ints(ctx, a, "paddings", [])
    x = ctx.tensor(ins[0])
    if len(pads) != 2 * x.ndim:
        raise ctx.fail(f"has paddings {pads} for a rank-{x.ndim} input; expected {2 * x.ndim} numbers")
    value = ctx.scalar(ins[1], "the pad value") if len(ins) > 1 and ins[1] is not None else 0.0
    return F.pad(x, pads, mode="constant", value=value)


@lowering("pad3d")
def _pad3d(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    """Constant padding of a 5-D tensor: ``paddings`` ``[left, right, top, bottom, front, back]``."""
    mode = str(ctx.attr(a, "mode", "constant"))
    if mode != "constant":
        raise ctx.fail(f"pads in mode {mode!r}; Oarlock reads mode 'constant'")
    if str(ctx.attr(a, "data_format", "NCDHW")) != "NCDHW":
        raise ctx.fail("pads data_format NDHWC; Oarlock reads NCDHW")
    p = ctx.ints(ins[1], "the paddings")
    if len(p) != 6:
        raise ctx.fail(f"has paddings {p}; expected 6 numbers")
    x = ctx.tensor(ins[0])
    pads = [0, 0, 0, 0, p[4], p[5], p[2], p[3], p[0], p[1]]
    return F.pad(x, pads, mode="constant", value=float(ctx.attr(a, "pad_value", 0.0)))
