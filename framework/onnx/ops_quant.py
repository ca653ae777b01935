"""ONNX QuantizeLinear and DequantizeLinear: per tensor, per axis and blocked scales, integer
(int8 ... uint16) and float8 quantised types.

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
