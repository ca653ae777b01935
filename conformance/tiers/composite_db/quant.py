"""Entries for the quantisation composites: weight-only int8 (quantise, dequantise, the
product, the embedding lookup), the exact integer product and the fake-quant pair of quantisation-aware training."""

from __future__ import annotations

import numpy as np

from ... import composite_reference as R
from . import CompositeInfo, _u

_INT8 = (("cast", "int8"),)
_FLOAT8 = (("cast", "float8_e4m3fn"), ("cast", "float8_e5m2"))


def _f32(s: np.ndarray) -> np.ndarray:
    """A scale as scaled_matmul takes it: rounded to float32."""
    return s.astype(np.float32).astype(np.float64)


def _float8_operands(r: np.random.Generator) -> list[np.ndarray]:
    """float8 a [4, 16] (e4m3fn) and b [16, 3] (e5m2), per-row and per-tensor scales."""
    import ml_dtypes

    a = (r.standard_normal((4, 16)) * 8).astype(ml_dtypes.float8_e4m3fn)
    b = (r.standard_normal((16, 3)) * 8).astype(ml_dtypes.float8_e5m2)
    return [a, b, r.uniform(0.5, 2.0, (4, 1)), np.array(0.25)]


def _gelu(v: np.ndarray) -> np.ndarray:
    return 0.5 * v * (1 + R.erf(v / np.sqrt(2.0)))


def _fp8_gemm_operands(r: np.random.Generator) -> list[np.ndarray]:
    """float8 x [2, 4, 16] (e4m3fn), y [3, 16] (e5m2, used transposed) and a bias [3]."""
    import ml_dtypes

    x = r.standard_normal((2, 4, 16)).astype(ml_dtypes.float8_e4m3fn)
    y = r.standard_normal((3, 16)).astype(ml_dtypes.float8_e5m2)
    return [x, y, r.standard_normal(3)]


def quant_entries() -> list[CompositeInfo]:
    from framework.nn import quant as Q
    from framework.quantization import dequantize_linear, fake_quantize_dequantize, quantize_linear
    from framework.tensor import fp8_fp8_half_gemm_fused

    levels = lambda r: r.integers(-127, 128, (6, 16)).astype(np.int8)  # noqa: E731  [n, k]
    return [
        CompositeInfo(
            "weight_quantize",
            lambda w: Q.weight_quantize(w)[0],
            R.weight_quantize_int8,
            lambda r: [_u(r, 16, 6)],
            needs=(*_INT8, ("permute", "int8")),
        ),
        CompositeInfo(
            "weight_dequantize",
            lambda q, s: Q.weight_dequantize(q, s),
            R.weight_dequantize_int8,
            lambda r: [levels(r), r.uniform(0.01, 0.1, 6)],
            (1,),
            needs=_INT8,
        ),
        CompositeInfo(
            "weight_only_linear",
            lambda x, q, s: Q.weight_only_linear(x, q, weight_scale=s),
            lambda x, q, s: x @ R.weight_dequantize_int8(q, s),
            lambda r: [_u(r, 3, 16), levels(r), r.uniform(0.01, 0.1, 6)],
            (0, 2),
            needs=_INT8,
        ),
        CompositeInfo(
            "weight_only_embedding",
            lambda ids, q, s: Q.weight_only_embedding(ids, q, s),
            lambda ids, q, s: q[ids].astype(np.float64) * s[ids][..., None],
            lambda r: [r.integers(0, 6, (2, 3)), levels(r), r.uniform(0.01, 0.1, 6)],
            needs=_INT8,
        ),
        CompositeInfo(
            "matmul_integer",
            lambda a, b, za, zb: Q.matmul_integer(a, b, za, zb),
            lambda a, b, za, zb: (a.astype(np.int64) - za) @ (b.astype(np.int64) - zb),
            lambda r: [
                r.integers(0, 256, (3, 16)).astype(np.uint8),
                r.integers(-128, 128, (16, 4)).astype(np.int8),
                np.array(128, np.uint8),
                np.array(-3, np.int8),
            ],
            needs=(("cast", "uint8"), *_INT8, ("cast", "int32")),
        ),
        CompositeInfo(
            "scaled_matmul",
            lambda a, b, sa, sb: Q.scaled_matmul(
                a, b, sa.astype("float32"), sb.astype("float32"), out_dtype=sa.dtype
            ),
            lambda a, b, sa, sb: (a.astype(np.float64) * _f32(sa)) @ (b.astype(np.float64) * _f32(sb)),
            _float8_operands,
            needs=_FLOAT8,
        ),
        CompositeInfo(
            "fp8_fp8_half_gemm_fused",
            lambda a, b, bias: fp8_fp8_half_gemm_fused(a, b, False, True, bias, 0.5, "float16", "gelu"),
            lambda a, b, bias: _gelu((a.astype(np.float64) @ b.astype(np.float64).T) * 0.5 + _f32(bias)),
            _fp8_gemm_operands,
            needs=_FLOAT8,
        ),
        CompositeInfo(
            "quantize_linear",
            lambda x, s: quantize_linear(x, s),
            R.quantize_linear,
            lambda r: [_u(r, 4, 5), np.array(1.5)],
            needs=_INT8,
        ),
        CompositeInfo(
            "dequantize_linear",
            lambda q, s: dequantize_linear(q, s),
            lambda q, s: q * s / 127,
            lambda r: [levels(r), np.array(0.7)],
            (1,),
            needs=_INT8,
        ),
        CompositeInfo(
            "fake_quantize_dequantize",
            lambda x, s: fake_quantize_dequantize(x, s),
            lambda x, s: R.quantize_linear(x, s, low=0) * s / 127,
            lambda r: [_u(r, 4, 5), np.array(1.5)],
        ),
    ]
