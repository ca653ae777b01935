"""The layers ``QAT``/``PTQ`` put in place of ``nn.Linear`` (:class:`QuantedLinear`: quanters
or observers around the float product) and the one ``convert`` leaves (:class:`QuantizedLinear`:
an int8 weight quantised once, the activation quantised with its calibrated scale)."""

from __future__ import annotations

from typing import Any

from .._src.ops import math as M
from .._src.ops.composites.fake_quant import dequantize_linear, quantize_linear
from .._src.ops.composites.linear import linear
from .._src.tensor import Tensor
from ..nn.layer import Layer
from .base import BaseQuanter


class QuantedLinear(Layer):
    """``linear(activation_quanter(x), weight_quanter(weight), bias)``; the weight and bias
    are the float layer's own (trained by QAT).

    Example:
        >>> import framework as fw
        >>> from framework.quantization import QuantedLinear
        >>> from framework.quantization.observers import AbsmaxObserver
        >>> q = QuantedLinear(fw.nn.Linear(4, 2), AbsmaxObserver()._instance(None), None)
        >>> q(fw.ones([3, 4])).shape
        (3, 2)
    """

    def __init__(
        self, layer: Any, activation_quanter: BaseQuanter | None, weight_quanter: BaseQuanter | None
    ) -> None:
        super().__init__()
        self.weight, self.bias = layer.weight, layer.bias
        self.activation_quanter, self.weight_quanter = activation_quanter, weight_quanter

    def forward(self, x: Tensor) -> Tensor:
        if self.activation_quanter is not None:
            x = self.activation_quanter(x)
        w = self.weight if self.weight_quanter is None else self.weight_quanter(self.weight)
        return linear(x, w, self.bias)


class QuantizedLinear(Layer):
    """A converted :class:`QuantedLinear`: the weight int8 (quantised once, with its scale
    per tensor or per output channel), the input quantised to int8 and back with its
    calibrated scale (when it had an activation quanter), then the float product.

    Example:
        >>> import framework as fw
        >>> from framework.quantization import QuantizedLinear
        >>> lin = fw.nn.Linear(4, 2)
        >>> q = QuantizedLinear(lin, fw.to_tensor(2.0), fw.to_tensor([0.5, 0.5]), weight_axis=1)
        >>> q.weight.dtype, q(fw.ones([3, 4])).shape
        (dtype('int8'), (3, 2))
    """

    def __init__(
        self,
        layer: Any,
        activation_scale: Tensor | None,
        weight_scale: Tensor | None,
        bit_length: int = 8,
        activation_bits: int = 8,
        weight_axis: int = -1,
    ) -> None:
        super().__init__()
        self.bit_length, self.activation_bits, self.weight_axis = bit_length, activation_bits, weight_axis
        w = layer.weight.detach()
        if weight_scale is None:
            self.weight = layer.weight
            self.weight_scale = None
        else:
            scale = weight_scale.detach().astype(w.dtype).reshape((-1,) if weight_axis != -1 else ())
            # weights are quantised symmetrically (to [-qmax, qmax], as Paddle's convert does),
            # activations by quantize_linear down to -qmax - 1
            bound = scale if weight_axis == -1 else scale.reshape((1, -1) if weight_axis == 1 else (-1, 1))
            w = M.minimum(M.maximum(w, -bound), bound)
            self.register_buffer("weight", quantize_linear(w, scale, bit_length, weight_axis))
            self.register_buffer("weight_scale", scale)
        if activation_scale is not None:
            self.register_buffer("activation_scale", activation_scale.detach().astype(w.dtype).reshape(()))
        else:
            self.activation_scale = None
        self.bias = layer.bias

    def forward(self, x: Tensor) -> Tensor:
        if self.activation_scale is not None:
            q = quantize_linear(x, self.activation_scale, self.activation_bits)
            x = dequantize_linear(q, self.activation_scale, self.activation_bits)
        w = self.weight
        if self.weight_scale is not None:
            w = dequantize_linear(w, self.weight_scale, self.bit_length, self.weight_axis)
        return linear(x, w, self.bias)
