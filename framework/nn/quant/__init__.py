"""Weight-only quantisation, spelled as ``paddle.nn.quant``: :func:`weight_quantize`,
:func:`weight_dequantize`, :func:`weight_only_linear` (int8, and int4 packed two a byte by
:func:`pack_int4`, with per-channel or group-wise scales), the float8 product :func:`scaled_matmul` with
:func:`float8_saturate` (OCP saturating conversion), the exact int32 product :func:`matmul_integer` and the :class:`WeightOnlyLinear` layer that
``fw.quantization.weight_only_quantize`` puts in place of ``nn.Linear``; fp8 (float8_e4m3fn)
weights beside int8/int4; embeddings: :func:`embedding_quantize`, :func:`weight_only_embedding`
and the :class:`WeightOnlyEmbedding` layer (``weight_only_quantize(..., embedding=True)``).

>>> import framework as fw
>>> from framework.nn.quant import weight_only_linear, weight_quantize
>>> w = fw.randn([64, 8])
>>> q, s = weight_quantize(w, algo="weight_only_int4", group_size=32)
>>> q.shape, s.shape
((4, 64), (2, 8))
>>> weight_only_linear(fw.ones([2, 64]), q, weight_scale=s, weight_dtype="int4", group_size=32).shape
(2, 8)
"""

from __future__ import annotations

from ..._src.ops.composites.float8 import float8_saturate, scaled_matmul
from ..._src.ops.composites.integer_products import matmul_integer
from ..._src.ops.composites.quant import (
    pack_int4,
    unpack_int4,
    weight_dequantize,
    weight_only_linear,
    weight_quantize,
)
from ..._src.ops.composites.quant_embedding import embedding_quantize, weight_only_embedding
from .layers import WeightOnlyEmbedding, WeightOnlyLinear

__all__ = [
    "WeightOnlyLinear",
    "WeightOnlyEmbedding",
    "embedding_quantize",
    "weight_only_embedding",
    "weight_dequantize",
    "weight_only_linear",
    "weight_quantize",
    "float8_saturate",
    "scaled_matmul",
    "matmul_integer",
    "pack_int4",
    "unpack_int4",
]
