"""Entries for the quantisation composites: weight-only int8 (quantise, dequantise, the
product) and the fake-quant pair of quantisation-aware training."""

from __future__ import annotations

import numpy as np

from ... import composite_reference as R
from . import CompositeInfo, _u

_INT8 = (("cast", "int8"),)


def quant_entries() -> list[CompositeInfo]:
    from framework.nn import quant as Q
    from framework.quantization import dequantize_linear, fake_quantize_dequantize, quantize_linear

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
