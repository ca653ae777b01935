"""The weight-only quantised linear and embedding layers."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ..._src.ops.composites.quant import weight_only_linear, weight_quantize
from ..._src.ops.composites.quant_embedding import embedding_quantize, weight_only_embedding
from ..._src.tensor import Tensor
from ..layer import Layer

_ALGO = {"int8": "weight_only_int8", "int4": "weight_only_int4", "fp8": "weight_only_fp8"}


def _float_weight(name: str, layer: Any, what: str, weight_dtype: str) -> Tensor:
    """The 2-d float weight of the layer to quantise, after checking ``weight_dtype``."""
    if weight_dtype not in _ALGO:
        raise OpArgumentError(f"[{name}] weight_dtype must be 'int8', 'int4' or 'fp8', got {weight_dtype!r}")
    w = getattr(layer, "weight", None)
    if not isinstance(w, Tensor) or w.ndim != 2:
        raise OpArgumentError(f"[{name}] expects {what}, got {type(layer).__name__}")
    return w


class WeightOnlyLinear(Layer):
    """``x @ dequantise(weight) + bias`` with the weight kept int8 (int4, two a byte, or fp8) and
    its scales as buffers: the layer a float ``nn.Linear`` becomes under weight-only
    quantisation. The quantised weight and scale are buffers (saved by ``state_dict`` and
    ``fw.jit.save``); the bias stays a float parameter.

    Args:
        linear (nn.Linear): the float layer whose weight ``[in, out]`` is quantised once.
        weight_dtype (str): ``"int8"``, ``"int4"`` or ``"fp8"`` (float8_e4m3fn).
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
        w = _float_weight("WeightOnlyLinear", linear, "an nn.Linear (a 2-d weight [in, out])", weight_dtype)
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


class WeightOnlyEmbedding(Layer):
    """An ``nn.Embedding`` whose table is kept int8 (int4, two tokens a byte, or fp8) with a
    scale per token row (or per group of ``group_size`` dims): lookups dequantise only the
    rows they gather. The quantised table and scale are buffers (saved by ``state_dict``).

    Args:
        embedding (nn.Embedding): the float layer whose table ``[vocab, dim]`` is quantised once.
        weight_dtype (str): ``"int8"``, ``"int4"`` (``vocab`` even) or ``"fp8"``.
        group_size (int): ``-1`` (a scale per row) or the dims per scale.

    Example:
        >>> import framework as fw
        >>> from framework.nn.quant import WeightOnlyEmbedding
        >>> q = WeightOnlyEmbedding(fw.nn.Embedding(10, 4), "int4")
        >>> q.weight.shape, q(fw.to_tensor([[1, 2, 3]])).shape
        ((5, 4), (1, 3, 4))
    """

    def __init__(self, embedding: Any, weight_dtype: str = "int8", group_size: int = -1) -> None:
        super().__init__()
        w = _float_weight(
            "WeightOnlyEmbedding", embedding, "an nn.Embedding (a 2-d table [vocab, dim])", weight_dtype
        )
        self.weight_dtype, self.group_size = weight_dtype, group_size
        self.num_embeddings, self.embedding_dim = w.shape
        self.padding_idx = getattr(embedding, "padding_idx", None)
        q, s = embedding_quantize(w.detach(), _ALGO[weight_dtype], group_size=group_size)
        self.register_buffer("weight", q)
        self.register_buffer("weight_scale", s)

    def forward(self, x: Tensor) -> Tensor:
        return weight_only_embedding(
            x, self.weight, self.weight_scale, self.weight_dtype, self.group_size, self.padding_idx
        )

    def extra_repr(self) -> str:
        return (
            f"num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim}, "
            f"weight_dtype={self.weight_dtype}, group_size={self.group_size}"
        )
