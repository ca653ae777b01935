"""The weight-only quantised linear layer."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ..._src.ops.composites.quant import weight_only_linear, weight_quantize
from ..._src.tensor import Tensor
from ..layer import Layer

_ALGO = {"int8": "weight_only_int8", "int4": "weight_only_int4"}


class WeightOnlyLinear(Layer):
    """``x @ dequantise(weight) + bias`` with the weight kept int8 (or int4, two a byte) and
    its scales as buffers: the layer a float ``nn.Linear`` becomes under weight-only
    quantisation. The quantised weight and scale are buffers (saved by ``state_dict`` and
    ``fw.jit.save``); the bias stays a float parameter.

    Args:
        linear (nn.Linear): the float layer whose weight ``[in, out]`` is quantised once.
        weight_dtype (str): ``"int8"`` or ``"int4"``.
        group_size (int): ``-1`` (a scale per output channel) or the input rows per scale.

    Example:
        >>> import framework as fw
        >>> from framework.nn.quant import WeightOnlyLinear
        >>> lin = fw.nn.Linear(64, 8)
        >>> q = WeightOnlyLinear(lin, "int4", group_size=32)
        >>> q.weight.dtype, q.weight.shape, q(fw.ones([2, 64])).shape
        (dtype('int8'), (4, 64), (2, 8))
    """

    def __init__(self, linear: Any, weight_dtype: str = "int8", group_size: int = -1) -> None:
        super().__init__()
        if weight_dtype not in _ALGO:
            raise OpArgumentError(
                f"[WeightOnlyLinear] weight_dtype must be 'int8' or 'int4', got {weight_dtype!r}"
            )
        w = getattr(linear, "weight", None)
        if not isinstance(w, Tensor) or w.ndim != 2:
            raise OpArgumentError(
                f"[WeightOnlyLinear] expects an nn.Linear (a 2-d weight [in, out]), got {type(linear).__name__}"
            )
        self.weight_dtype, self.group_size = weight_dtype, group_size
        self.in_features, self.out_features = w.shape
        q, s = weight_quantize(w.detach(), _ALGO[weight_dtype], group_size=group_size)
        self.register_buffer("weight", q)
        self.register_buffer("weight_scale", s)
        self.bias = linear.bias

    def forward(self, x: Tensor) -> Tensor:
        return weight_only_linear(
            x, self.weight, self.bias, self.weight_scale, self.weight_dtype, group_size=self.group_size
        )

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"weight_dtype={self.weight_dtype}, group_size={self.group_size}"
        )
