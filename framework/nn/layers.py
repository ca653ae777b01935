"""The built-in layers (Paddle names): Linear, Embedding, norms, Dropout, convolution and
pooling, containers, attention, activations and losses."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

from adapter_api import OpArgumentError

from .._src.tensor import Tensor
from . import functional as F
from . import initializer as I
from .layer import Layer, Parameter


class Linear(Layer):
    """``y = x @ weight + bias`` with ``weight`` of shape ``[in_features, out_features]``."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        weight_attr: Any = None,
        bias_attr: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        for what, v in (("in_features", in_features), ("out_features", out_features)):
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise OpArgumentError(f"[Linear] {what} must be a positive int, got {v!r}")
        self.in_features, self.out_features = in_features, out_features
        self.weight = self.create_parameter((in_features, out_features), weight_attr)
        self.bias = self.create_parameter((out_features,), bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"


class Embedding(Layer):
    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        sparse: bool = False,
        weight_attr: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.weight = self.create_parameter((num_embeddings, embedding_dim), weight_attr)

    def forward(self, x: Tensor) -> Tensor:
        return F.embedding(x, self.weight, padding_idx=self.padding_idx)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


def _shape(normalized_shape: Any) -> tuple[int, ...]:
    return (
        (int(normalized_shape),)
        if isinstance(normalized_shape, int)
        else tuple(int(s) for s in normalized_shape)
    )


class LayerNorm(Layer):
    def __init__(
        self,
        normalized_shape: Any,
        epsilon: float = 1e-5,
        weight_attr: Any = None,
        bias_attr: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.normalized_shape, self.epsilon = _shape(normalized_shape), epsilon
        self.weight = self.create_parameter(
            self.normalized_shape, weight_attr, default_initializer=I.Constant(1.0)
        )
        self.bias = self.create_parameter(self.normalized_shape, bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.epsilon)


class RMSNorm(Layer):
    """Root-mean-square norm over the trailing ``normalized_shape`` dims, with a learned scale."""

    def __init__(
        self, normalized_shape: Any, epsilon: float = 1e-6, weight_attr: Any = None, name: str | None = None
    ) -> None:
        super().__init__()
        self.normalized_shape, self.epsilon = _shape(normalized_shape), epsilon
        self.weight = self.create_parameter(
            self.normalized_shape, weight_attr, default_initializer=I.Constant(1.0)
        )

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.epsilon)


class Dropout(Layer):
    def __init__(
        self, p: float = 0.5, axis: Any = None, mode: str = "upscale_in_train", name: str | None = None
    ) -> None:
        super().__init__()
        self.p, self.axis, self.mode = p, axis, mode

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, axis=self.axis, training=self.training, mode=self.mode)


class Conv2D(Layer):
    """NCHW 2-d convolution; weight ``(out_channels, in_channels/groups, kh, kw)``,
    Kaiming-normal by default (Paddle's default for convolutions)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        padding_mode: str = "zeros",
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str = "NCHW",
    ) -> None:
        super().__init__()
        if padding_mode != "zeros":
            raise OpArgumentError(f"[Conv2D] padding_mode {padding_mode!r} is not supported; only 'zeros'")
        if in_channels % groups or out_channels % groups:
            raise OpArgumentError(
                f"[Conv2D] groups={groups} must divide in_channels={in_channels} and out_channels={out_channels}"
            )
        k = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
        self.stride, self.padding, self.dilation, self.groups, self.data_format = (
            stride,
            padding,
            dilation,
            groups,
            data_format,
        )
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
        fan_in = in_channels // groups * k[0] * k[1]
        self.weight = self.create_parameter(
            (out_channels, in_channels // groups) + k,
            weight_attr,
            default_initializer=I.KaimingNormal(fan_in),
        )
        bound = 1.0 / math.sqrt(fan_in)
        self.bias = self.create_parameter(
            (out_channels,), bias_attr, is_bias=True, default_initializer=I.Uniform(-bound, bound)
        )

    def forward(self, x: Tensor) -> Tensor:
        return F.conv2d(
            x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups, self.data_format
        )

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2D(Layer):
    def __init__(
        self, kernel_size: Any, stride: Any = None, padding: Any = 0, name: str | None = None
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x: Tensor) -> Tensor:
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding)


class AvgPool2D(Layer):
    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        exclusive: bool = True,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.exclusive = kernel_size, stride, padding, exclusive

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, exclusive=self.exclusive)


class AdaptiveAvgPool2D(Layer):
    def __init__(self, output_size: Any, name: str | None = None) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(x, self.output_size)


class Flatten(Layer):
    def __init__(self, start_axis: int = 1, stop_axis: int = -1) -> None:
        super().__init__()
        self.start_axis, self.stop_axis = start_axis, stop_axis

    def forward(self, x: Tensor) -> Tensor:
        return x.flatten(self.start_axis, self.stop_axis)


class Identity(Layer):
    def forward(self, x: Tensor) -> Tensor:
        return x


# -- containers ---------------------------------------------------------------------------
class Sequential(Layer):
    """Layers applied in order: ``Sequential(l1, l2)``, ``Sequential(("a", l1), ...)`` or an OrderedDict."""

    def __init__(self, *layers: Any) -> None:
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], (dict, OrderedDict)):
            items = list(layers[0].items())
        elif layers and all(isinstance(x, (list, tuple)) and len(x) == 2 for x in layers):
            items = [(str(n), layer) for n, layer in layers]
        else:
            items = [(str(i), layer) for i, layer in enumerate(layers)]
        for n, layer in items:
            self.add_sublayer(n, layer)

    def __getitem__(self, i: Any) -> Any:
        layers = list(self._sub_layers.values())
        if isinstance(i, slice):
            return Sequential(*layers[i])
        if isinstance(i, str):
            return self._sub_layers[i]
        return layers[i]

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self) -> Iterator[Layer]:
        return iter(self._sub_layers.values())

    def forward(self, x: Any) -> Any:
        for layer in self._sub_layers.values():
            x = layer(x)
        return x


class LayerList(Layer):
    """A list of layers whose parameters are registered (Paddle's ``LayerList``)."""

    def __init__(self, sublayers: Iterable[Layer] | None = None) -> None:
        super().__init__()
        for layer in sublayers or []:
            self.append(layer)

    def append(self, sublayer: Layer) -> LayerList:
        self.add_sublayer(str(len(self)), sublayer)
        return self

    def extend(self, sublayers: Iterable[Layer]) -> LayerList:
        for s in sublayers:
            self.append(s)
        return self

    def insert(self, index: int, sublayer: Layer) -> None:
        layers = list(self._sub_layers.values())
        layers.insert(index, sublayer)
        self._sub_layers.clear()
        for i, s in enumerate(layers):
            self.add_sublayer(str(i), s)

    def __getitem__(self, i: Any) -> Any:
        layers = list(self._sub_layers.values())
        return LayerList(layers[i]) if isinstance(i, slice) else layers[i]

    def __setitem__(self, i: int, layer: Layer) -> None:
        key = list(self._sub_layers)[i]
        self._sub_layers[key] = layer

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self) -> Iterator[Layer]:
        return iter(self._sub_layers.values())


ModuleList = LayerList


class ParameterList(Layer):
    def __init__(self, parameters: Iterable[Parameter] | None = None) -> None:
        super().__init__()
        for p in parameters or []:
            self.add_parameter(str(len(self._parameters)), p)

    def __getitem__(self, i: int) -> Parameter:
        return list(self._parameters.values())[i]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._parameters.values())


# -- attention ----------------------------------------------------------------------------
class MultiHeadAttention(Layer):
    """Paddle's MultiHeadAttention on (batch, seq, embed_dim) inputs: q/k/v/out projections
    around :func:`~framework.nn.functional.attention`. ``attn_mask`` is bool (True keeps) or
    additive, broadcastable to (batch, heads, seq_q, seq_k)."""

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        kdim: int | None = None,
        vdim: int | None = None,
        need_weights: bool = False,
        weight_attr: Any = None,
        bias_attr: Any = None,
    ) -> None:
        super().__init__()
        if embed_dim % num_heads:
            raise OpArgumentError(
                f"[MultiHeadAttention] embed_dim={embed_dim} must be divisible by num_heads={num_heads}"
            )
        if need_weights:
            raise OpArgumentError("[MultiHeadAttention] need_weights=True is not supported")
        self.embed_dim, self.num_heads, self.head_dim, self.dropout = (
            embed_dim,
            num_heads,
            embed_dim // num_heads,
            dropout,
        )
        self.q_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr)
        self.k_proj = Linear(kdim or embed_dim, embed_dim, weight_attr, bias_attr)
        self.v_proj = Linear(vdim or embed_dim, embed_dim, weight_attr, bias_attr)
        self.out_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr)

    def _heads(self, x: Tensor) -> Tensor:
        b, s, _ = x.shape
        return x.reshape((b, s, self.num_heads, self.head_dim)).transpose((0, 2, 1, 3))

    def forward(
        self,
        query: Tensor,
        key: Tensor | None = None,
        value: Tensor | None = None,
        attn_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        key = query if key is None else key
        value = key if value is None else value
        q, k, v = (
            self._heads(self.q_proj(query)),
            self._heads(self.k_proj(key)),
            self._heads(self.v_proj(value)),
        )
        if self.dropout and self.training:
            o = F.scaled_dot_product_attention(
                q.transpose((0, 2, 1, 3)),
                k.transpose((0, 2, 1, 3)),
                v.transpose((0, 2, 1, 3)),
                attn_mask,
                self.dropout,
                is_causal,
                True,
            )
        else:
            o = F.attention(q, k, v, attn_mask, is_causal).transpose((0, 2, 1, 3))
        b, s = o.shape[:2]
        return self.out_proj(o.reshape((b, s, self.embed_dim)))


# -- activations ----------------------------------------------------------------------------
class ReLU(Layer):
    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)


class GELU(Layer):
    def __init__(self, approximate: bool = False, name: str | None = None) -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, self.approximate)


class SiLU(Layer):
    def forward(self, x: Tensor) -> Tensor:
        return F.silu(x)


Swish = SiLU


class Sigmoid(Layer):
    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class Tanh(Layer):
    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class LeakyReLU(Layer):
    def __init__(self, negative_slope: float = 0.01, name: str | None = None) -> None:
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        return F.leaky_relu(x, self.negative_slope)


class Softmax(Layer):
    def __init__(self, axis: int = -1, name: str | None = None) -> None:
        super().__init__()
        self.axis = axis

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, self.axis)


# -- losses ---------------------------------------------------------------------------------
class CrossEntropyLoss(Layer):
    def __init__(
        self,
        weight: Tensor | None = None,
        ignore_index: int = -100,
        reduction: str = "mean",
        soft_label: bool = False,
        axis: int = -1,
        label_smoothing: float = 0.0,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.weight, self.ignore_index, self.reduction = weight, ignore_index, reduction
        self.soft_label, self.axis, self.label_smoothing = soft_label, axis, label_smoothing

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.cross_entropy(
            input,
            label,
            self.weight,
            self.ignore_index,
            self.reduction,
            self.soft_label,
            self.axis,
            label_smoothing=self.label_smoothing,
        )


class MSELoss(Layer):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.mse_loss(input, label, self.reduction)


class L1Loss(Layer):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.l1_loss(input, label, self.reduction)


class BCEWithLogitsLoss(Layer):
    def __init__(
        self, weight: Tensor | None = None, reduction: str = "mean", pos_weight: Tensor | None = None
    ) -> None:
        super().__init__()
        self.weight, self.reduction, self.pos_weight = weight, reduction, pos_weight

    def forward(self, logit: Tensor, label: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(logit, label, self.weight, self.reduction, self.pos_weight)
