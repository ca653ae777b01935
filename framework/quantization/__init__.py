"""Quantisation-aware training, post-training quantisation and weight-only int8/int4 models.

Spelled as ``paddle.quantization``: a :class:`QuantConfig` names the quanters (QAT) or observers (PTQ) of each ``nn.Linear``; ``QAT(config).quantize(model)``
trains through fake quantisation, ``PTQ(config).quantize(model)`` calibrates, and
``convert`` gives an int8 model that ``fw.jit.save`` writes and the Predictor serves.
:func:`weight_only_quantize` gives int8 / int4 weight-only models (``framework.nn.quant``).
See docs/compression.md.

>>> import framework as fw
>>> from framework.quantization import PTQ, QuantConfig
>>> from framework.quantization.observers import AbsmaxObserver
>>> ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver(quant_axis=1)))
>>> model = ptq.quantize(fw.nn.Sequential(fw.nn.Linear(4, 2)))
>>> _ = model(fw.randn([16, 4]))
>>> int8_model = ptq.convert(model)
>>> int8_model(fw.ones([1, 4])).shape
(1, 2)
"""

from __future__ import annotations

from .._src.ops.composites.fake_quant import dequantize_linear, fake_quantize_dequantize, quantize_linear
from . import observers, quanters
from .base import BaseObserver, BaseQuanter, ObserverFactory, QuanterFactory
from .config import QuantConfig, SingleLayerConfig
from .layers import QuantedLinear, QuantizedLinear
from .program import QUANT_FUSION, quantize_program
from .quantize import PTQ, QAT, Quantization, weight_only_quantize

__all__ = [
    "PTQ",
    "QUANT_FUSION",
    "QAT",
    "BaseObserver",
    "BaseQuanter",
    "ObserverFactory",
    "QuantConfig",
    "QuantedLinear",
    "QuantizedLinear",
    "QuanterFactory",
    "Quantization",
    "SingleLayerConfig",
    "dequantize_linear",
    "fake_quantize_dequantize",
    "observers",
    "quanters",
    "quantize_linear",
    "quantize_program",
    "weight_only_quantize",
]
