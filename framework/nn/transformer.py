"""Transformer layers (Paddle names and structure): MultiHeadAttention, and
TransformerEncoderLayer, TransformerEncoder, TransformerDecoderLayer, TransformerDecoder and
Transformer built on it, Linear, LayerNorm and Dropout. ``normalize_before`` selects
pre-norm; masks are bool (True keeps) or additive, broadcastable to (batch, heads, q, k)."""

from __future__ import annotations

import copy
from typing import Any

from adapter_api import OpArgumentError

from .._src.ops import creation as _C
from .._src.tensor import Tensor
from . import functional as F
from .common import Dropout, Linear
from .container import LayerList
from .layer import Layer
from .norm import LayerNorm

_ACTS = {"relu": F.relu, "gelu": F.gelu}


def _act(name: str, activation: str) -> Any:
    if activation not in _ACTS:
        raise OpArgumentError(f"[{name}] activation must be one of {sorted(_ACTS)}, got {activation!r}")
    return _ACTS[activation]


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


class TransformerEncoderLayer(Layer):
    """Self-attention then a feed-forward block, each with a residual and a LayerNorm."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int,
        dropout: float = 0.1,
        activation: str = "relu",
        attn_dropout: float | None = None,
        act_dropout: float | None = None,
        normalize_before: bool = False,
        weight_attr: Any = None,
        bias_attr: Any = None,
        layer_norm_eps: float = 1e-5,
    ) -> None:
        super().__init__()
        self.normalize_before = normalize_before
        self.activation = _act("TransformerEncoderLayer", activation)
        self.self_attn = MultiHeadAttention(
            d_model,
            nhead,
            dropout if attn_dropout is None else attn_dropout,
            weight_attr=weight_attr,
            bias_attr=bias_attr,
        )
        self.linear1 = Linear(d_model, dim_feedforward, weight_attr, bias_attr)
        self.dropout = Dropout(dropout if act_dropout is None else act_dropout)
        self.linear2 = Linear(dim_feedforward, d_model, weight_attr, bias_attr)
        self.norm1, self.norm2 = LayerNorm(d_model, layer_norm_eps), LayerNorm(d_model, layer_norm_eps)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)

    def forward(self, src: Tensor, src_mask: Tensor | None = None, cache: Any = None) -> Tensor:
        x = self.norm1(src) if self.normalize_before else src
        src = src + self.dropout1(self.self_attn(x, x, x, src_mask))
        if not self.normalize_before:
            src = self.norm1(src)
        x = self.norm2(src) if self.normalize_before else src
        src = src + self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))
        return src if self.normalize_before else self.norm2(src)


class TransformerEncoder(Layer):
    """``num_layers`` copies of ``encoder_layer`` (fresh parameters copied from it), then ``norm``."""

    def __init__(self, encoder_layer: Layer, num_layers: int, norm: Layer | None = None) -> None:
        super().__init__()
        self.layers = LayerList(
            [encoder_layer if i == 0 else copy.deepcopy(encoder_layer) for i in range(num_layers)]
        )
        self.num_layers, self.norm = num_layers, norm

    def forward(self, src: Tensor, src_mask: Tensor | None = None, cache: Any = None) -> Tensor:
        for layer in self.layers:
            src = layer(src, src_mask)
        return self.norm(src) if self.norm is not None else src


class TransformerDecoderLayer(Layer):
    """Self-attention, cross-attention over ``memory``, feed-forward; residuals and LayerNorms."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int,
        dropout: float = 0.1,
        activation: str = "relu",
        attn_dropout: float | None = None,
        act_dropout: float | None = None,
        normalize_before: bool = False,
        weight_attr: Any = None,
        bias_attr: Any = None,
        layer_norm_eps: float = 1e-5,
    ) -> None:
        super().__init__()
        self.normalize_before = normalize_before
        self.activation = _act("TransformerDecoderLayer", activation)
        ad = dropout if attn_dropout is None else attn_dropout
        self.self_attn = MultiHeadAttention(d_model, nhead, ad, weight_attr=weight_attr, bias_attr=bias_attr)
        self.cross_attn = MultiHeadAttention(d_model, nhead, ad, weight_attr=weight_attr, bias_attr=bias_attr)
        self.linear1 = Linear(d_model, dim_feedforward, weight_attr, bias_attr)
        self.dropout = Dropout(dropout if act_dropout is None else act_dropout)
        self.linear2 = Linear(dim_feedforward, d_model, weight_attr, bias_attr)
        self.norm1, self.norm2, self.norm3 = (LayerNorm(d_model, layer_norm_eps) for _ in range(3))
        self.dropout1, self.dropout2, self.dropout3 = Dropout(dropout), Dropout(dropout), Dropout(dropout)

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        cache: Any = None,
    ) -> Tensor:
        pre = self.normalize_before
        x = self.norm1(tgt) if pre else tgt
        tgt = tgt + self.dropout1(self.self_attn(x, x, x, tgt_mask))
        if not pre:
            tgt = self.norm1(tgt)
        x = self.norm2(tgt) if pre else tgt
        tgt = tgt + self.dropout2(self.cross_attn(x, memory, memory, memory_mask))
        if not pre:
            tgt = self.norm2(tgt)
        x = self.norm3(tgt) if pre else tgt
        tgt = tgt + self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))
        return tgt if pre else self.norm3(tgt)


class TransformerDecoder(Layer):
    """``num_layers`` copies of ``decoder_layer``, then ``norm``."""

    def __init__(self, decoder_layer: Layer, num_layers: int, norm: Layer | None = None) -> None:
        super().__init__()
        self.layers = LayerList(
            [decoder_layer if i == 0 else copy.deepcopy(decoder_layer) for i in range(num_layers)]
        )
        self.num_layers, self.norm = num_layers, norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        cache: Any = None,
    ) -> Tensor:
        for layer in self.layers:
            tgt = layer(tgt, memory, tgt_mask, memory_mask)
        return self.norm(tgt) if self.norm is not None else tgt


class Transformer(Layer):
    """Encoder-decoder Transformer (Paddle's): encoder and decoder stacks, each ending in a
    LayerNorm. ``forward(src, tgt, src_mask, tgt_mask, memory_mask)``."""

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str = "relu",
        attn_dropout: float | None = None,
        act_dropout: float | None = None,
        normalize_before: bool = False,
        weight_attr: Any = None,
        bias_attr: Any = None,
        custom_encoder: Layer | None = None,
        custom_decoder: Layer | None = None,
    ) -> None:
        super().__init__()
        kw = dict(
            dropout=dropout,
            activation=activation,
            attn_dropout=attn_dropout,
            act_dropout=act_dropout,
            normalize_before=normalize_before,
            weight_attr=weight_attr,
            bias_attr=bias_attr,
        )
        self.encoder = custom_encoder or TransformerEncoder(
            TransformerEncoderLayer(d_model, nhead, dim_feedforward, **kw),
            num_encoder_layers,
            LayerNorm(d_model),
        )
        self.decoder = custom_decoder or TransformerDecoder(
            TransformerDecoderLayer(d_model, nhead, dim_feedforward, **kw),
            num_decoder_layers,
            LayerNorm(d_model),
        )
        self.d_model, self.nhead = d_model, nhead

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
    ) -> Tensor:
        memory = self.encoder(src, src_mask)
        return self.decoder(tgt, memory, tgt_mask, memory_mask)

    @staticmethod
    def generate_square_subsequent_mask(length: int) -> Tensor:
        """Additive causal mask (length, length): 0 on and below the diagonal, -inf above."""
        return _C.triu(_C.full((length, length), float("-inf")), 1)
