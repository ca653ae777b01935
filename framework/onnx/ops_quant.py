"""ONNX QuantizeLinear and DequantizeLinear: per tensor, per axis and blocked scales, integer
(int8 ... uint16) and float8 quantised types; the integer products MatMulInteger, QLinearMatMul
(on ``fw.nn.quant.matmul_integer``, exact int32), ConvInteger and QLinearConv (the convolution
in float64, exact for byte operands), and DynamicQuantizeLinear.

``QuantizeLinear``: ``y = saturate(round_half_even(x / scale) + zero_point)`` into the zero
point's dtype (``output_dtype``, else uint8); to float8 the division is cast, saturating
unless ``saturate=0``. ``DequantizeLinear``: ``y = (x - zero_point) * scale``, computed in
float32 and rounded once to the scale's dtype.
"""

from __future__ import annotations

import numpy as np

import framework as fw

from ._registry import Node, converter


def _spread(n: Node, p: fw.Tensor, x: fw.Tensor) -> fw.Tensor:
    """A scale or zero point shaped to broadcast against ``x``: one value, one per index of
    ``axis`` (1-d), or one per block of ``block_size`` indices along ``axis`` (``x``'s rank)."""
    if p.numel() == 1 and p.ndim <= 1:
        return p.reshape([])
    r = x.ndim
    axis = int(n.attr("axis", 1)) % r
    block = int(n.attr("block_size", 0))
    if block:
        idx = fw.arange(x.shape[axis], dtype="int64", device=x.device) // block
        return fw.index_select(p, idx, axis)
    shape = [1] * r
    shape[axis] = p.shape[0]
    return p.reshape(shape)


def _round_half_even(v: fw.Tensor) -> fw.Tensor:
    f = fw.floor(v)
    d = v - f  # exact: |v| < 2**24 has a fraction, larger values are integers (d == 0)
    odd = (f - 2.0 * fw.floor(f * 0.5)) == 1.0
    return f + fw.cast(d > 0.5, v.dtype) + fw.cast((d == 0.5) & odd, v.dtype)


@converter("QuantizeLinear")
def _quantize_linear(n: Node) -> fw.Tensor:
    from framework.nn.quant import float8_saturate

    from ._model import np_dtype

    x = n.tensor(0)
    zp = n.tensor(2) if n.has(2) else None
    if zp is not None:
        out = np.dtype(zp.dtype)
    elif n.attr("output_dtype"):
        out = np_dtype(n.attr("output_dtype"), f"QuantizeLinear '{n.proto.name}' output_dtype")
    else:
        out = np.dtype(np.uint8)
    v = fw.cast(x, "float32") / fw.cast(_spread(n, n.tensor(1), x), "float32")
    if out.kind not in "iu":  # float8: the division, cast (zero point 0 by the spec)
        if zp is not None:
            v = v + fw.cast(_spread(n, zp, x), "float32")
        return float8_saturate(v, out) if n.attr("saturate", 1) else fw.cast(v, out)
    q = _round_half_even(v)
    if zp is not None:
        q = q + fw.cast(_spread(n, zp, x), "float32")
    info = np.iinfo(out)
    return fw.cast(fw.clip(q, float(info.min), float(info.max)), out)


@converter("DequantizeLinear")
def _dequantize_linear(n: Node) -> fw.Tensor:
    from ._model import np_dtype

    x, s = n.tensor(0), n.tensor(1)
    out = s.dtype
    if n.attr("output_dtype"):
        out = np_dtype(n.attr("output_dtype"), f"DequantizeLinear '{n.proto.name}' output_dtype")
    v = fw.cast(x, "float32")
    if n.has(2):
        v = v - fw.cast(_spread(n, n.tensor(2), x), "float32")
    return fw.cast(v * fw.cast(_spread(n, s, x), "float32"), out)


# -- integer products: MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv -------------------
def _byte_operand(n: Node, i: int, what: str) -> fw.Tensor:
    t = n.tensor(i)
    if np.dtype(t.dtype) not in (np.dtype(np.int8), np.dtype(np.uint8)):
        raise n.error(f"{what} must be int8 or uint8, got {t.dtype}", "quantise it with QuantizeLinear")
    return t


def _opt(n: Node, i: int) -> fw.Tensor | None:
    return n.tensor(i) if n.has(i) else None


def _requantize(acc: fw.Tensor, multiplier: fw.Tensor, zp: fw.Tensor | None, like: fw.Tensor) -> fw.Tensor:
    """``saturate(round_half_even(acc * multiplier) + zp)`` in the zero point's dtype (else
    ``like``'s): ``acc`` (int32 or exact float64) times the float32 multiplier, in float64 as
    ONNX's reference computes it."""
    v = _round_half_even(fw.cast(acc, "float64") * fw.cast(multiplier, "float64"))
    out = np.dtype(zp.dtype if zp is not None else like.dtype)
    if zp is not None:
        v = v + fw.cast(zp.reshape([]) if zp.numel() == 1 else zp, "float64")
    info = np.iinfo(out)
    return fw.cast(fw.clip(v, float(info.min), float(info.max)), out)


def _per_row(p: fw.Tensor) -> fw.Tensor:
    """A per-tensor or per-row (``[m]``) parameter of the left operand, shaped ``[m, 1]``."""
    return p.reshape([]) if p.numel() == 1 else p.reshape([p.shape[-1], 1])


@converter("MatMulInteger")
def _matmul_integer(n: Node) -> fw.Tensor:
    from framework.nn.quant import matmul_integer

    return matmul_integer(_byte_operand(n, 0, "A"), _byte_operand(n, 1, "B"), _opt(n, 2), _opt(n, 3))


@converter("QLinearMatMul")
def _qlinear_matmul(n: Node) -> fw.Tensor:
    from framework.nn.quant import matmul_integer

    a, b = _byte_operand(n, 0, "a"), _byte_operand(n, 3, "b")
    acc = matmul_integer(a, b, _opt(n, 2), _opt(n, 5))
    a_scale, b_scale, y_scale = (fw.cast(n.tensor(i), "float32") for i in (1, 4, 6))
    multiplier = (
        _per_row(a_scale) * (b_scale.reshape([]) if b_scale.numel() == 1 else b_scale) / y_scale.reshape([])
    )
    return _requantize(acc, multiplier, _opt(n, 7), a)


def _integer_conv(
    n: Node, x: fw.Tensor, x_zp: fw.Tensor | None, w: fw.Tensor, w_zp: fw.Tensor | None
) -> fw.Tensor:
    """``conv(x - x_zp, w - w_zp)`` computed in float64: every product and partial sum is an
    integer below 2**53, so the result is the exact integer sum (as float64)."""
    from .ops_nn import _conv_fn, _explicit_pad, _pads

    xf = fw.cast(x, "float64")
    if x_zp is not None:
        xf = xf - fw.cast(x_zp.reshape([]), "float64")
    wf = fw.cast(w, "float64")
    if w_zp is not None:
        z = fw.cast(w_zp, "float64")
        wf = wf - (z.reshape([]) if z.numel() == 1 else z.reshape([z.shape[0]] + [1] * (w.ndim - 1)))
    k = x.ndim - 2
    fn = _conv_fn(k)
    if fn is None:
        raise n.error(f"a {k}-D convolution is not imported", f"{n.op_type} imports 1-D, 2-D and 3-D")
    kernel = list(n.attr("kernel_shape", w.shape[2:]))
    strides = list(n.attr("strides", [1] * k))
    dil = list(n.attr("dilations", [1] * k))
    pads = _pads(n, x, kernel, strides, dil)
    if pads[:k] == pads[k:]:
        padding = pads[:k]
    else:  # zero padding after the zero point is taken off: the spec's padding by x_zero_point
        xf, padding = _explicit_pad(xf, pads), [0] * k
    return fn(xf, wf, None, stride=strides, padding=padding, dilation=dil, groups=n.attr("group", 1))


@converter("ConvInteger")
def _conv_integer(n: Node) -> fw.Tensor:
    x, w = _byte_operand(n, 0, "x"), _byte_operand(n, 1, "w")
    return fw.cast(_integer_conv(n, x, _opt(n, 2), w, _opt(n, 3)), "int32")


@converter("QLinearConv")
def _qlinear_conv(n: Node) -> fw.Tensor:
    x, w = _byte_operand(n, 0, "x"), _byte_operand(n, 3, "w")
    acc = _integer_conv(n, x, _opt(n, 2), w, _opt(n, 5))
    if n.has(8):
        bias = n.tensor(8)
        if np.dtype(bias.dtype) != np.dtype(np.int32):
            raise n.error(
                f"B must be int32, got {bias.dtype}", "quantise the bias with scale x_scale * w_scale"
            )
        acc = acc + fw.cast(bias, "float64").reshape([1, -1] + [1] * (x.ndim - 2))
    x_scale, w_scale, y_scale = (fw.cast(n.tensor(i), "float32") for i in (1, 4, 6))
    if w_scale.numel() > 1:
        w_scale = w_scale.reshape([1, -1] + [1] * (x.ndim - 2))
    multiplier = x_scale.reshape([]) * w_scale / y_scale.reshape([])
    return _requantize(acc, multiplier, _opt(n, 7), x)


@converter("DynamicQuantizeLinear")
def _dynamic_quantize_linear(n: Node) -> list[fw.Tensor]:
    """uint8 with the range ``[min(0, min x), max(0, max x)]`` spread over 0..255, all in float32:
    ``scale = (hi - lo) / 255`` (``1 / 255`` for an all-zero ``x``), ``zero_point =
    round(clip(-lo / scale, 0, 255))``, ``y = saturate(round(x / scale) + zero_point)``."""
    x = n.tensor(0)
    if np.dtype(x.dtype) != np.dtype(np.float32):
        raise n.error(f"x must be float32, got {x.dtype}", "cast it to float32 first")
    if x.numel() == 0:
        raise n.error("x is empty: its range (and so the scale) is undefined", "feed a non-empty tensor")
    zero = fw.zeros([], "float32", device=x.device)
    hi, lo = fw.maximum(fw.max(x), zero), fw.minimum(fw.min(x), zero)
    span = hi - lo
    scale = fw.where(span == 0, fw.ones([], "float32", device=x.device), span) / 255.0
    zp = _round_half_even(fw.clip(-lo / scale, 0.0, 255.0))
    y = fw.clip(_round_half_even(x / scale) + zp, 0.0, 255.0)
    return [fw.cast(y, "uint8"), scale, fw.cast(zp, "uint8")]
