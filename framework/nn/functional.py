"""``fw.nn.functional``: the composite ops as functions (Paddle's ``paddle.nn.functional``).

>>> import framework as fw
>>> import framework.nn.functional as F
>>> F.relu(fw.to_tensor([-1.0, 2.0])).tolist()
[0.0, 2.0]
"""

# ruff: noqa: F401  (re-exports; __all__ is built below)
from __future__ import annotations

from .._src.ops.composites.activation import (
    gelu,
    hardtanh,
    leaky_relu,
    relu,
    relu6,
    sigmoid,
    silu,
    softplus,
    swish,
    tanh,
)
from .._src.ops.composites.attention import (
    attention,
    rotary_cos_sin,
    rotary_embedding,
    scaled_dot_product_attention,
)
from .._src.ops.composites.conv import adaptive_avg_pool2d, avg_pool2d, conv2d, max_pool2d
from .._src.ops.composites.loss import (
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
)
from .._src.ops.composites.misc import cumsum, dropout, embedding, linear, one_hot, std, topk, var
from .._src.ops.composites.norm import layer_norm, log_softmax, logsumexp, rms_norm, softmax
from .._src.ops.indexing import masked_fill
from .._src.ops.math import clip, where
from .._src.ops.shape import pad

__all__ = [n for n in dir() if not n.startswith("_") and n != "annotations"]
