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
from .._src.ops.composites.activation_extra import (
    celu,
    elu,
    glu,
    gumbel_softmax,
    hardshrink,
    hardsigmoid,
    hardswish,
    log_sigmoid,
    mish,
    prelu,
    selu,
    softshrink,
    softsign,
    tanhshrink,
    thresholded_relu,
)
from .._src.ops.composites.attention import (
    attention,
    rotary_cos_sin,
    rotary_embedding,
    scaled_dot_product_attention,
)
from .._src.ops.composites.conv import adaptive_avg_pool2d, avg_pool2d, conv2d, max_pool2d
from .._src.ops.composites.conv_extra import (
    adaptive_avg_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    conv1d,
    conv1d_transpose,
    conv2d_transpose,
    conv3d,
    fold,
    max_pool1d,
    pixel_shuffle,
    pixel_unshuffle,
    unfold,
)
from .._src.ops.composites.loss import (
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
)
from .._src.ops.composites.loss_extra import (
    binary_cross_entropy,
    cosine_embedding_loss,
    ctc_loss,
    hinge_embedding_loss,
    kl_div,
    margin_ranking_loss,
    sigmoid_focal_loss,
    smooth_l1_loss,
    softmax_with_cross_entropy,
    square_error_cost,
    triplet_margin_loss,
)
from .._src.ops.composites.misc import cumsum, dropout, embedding, linear, one_hot, std, topk, var
from .._src.ops.composites.norm import layer_norm, log_softmax, logsumexp, rms_norm, softmax
from .._src.ops.composites.norm_extra import (
    alpha_dropout,
    batch_norm,
    cosine_similarity,
    dropout2d,
    group_norm,
    instance_norm,
    label_smooth,
    local_response_norm,
    normalize,
)
from .._src.ops.composites.resize import affine_grid, grid_sample, interpolate, upsample
from .._src.ops.indexing import masked_fill
from .._src.ops.math import clip, where
from .._src.ops.shape import pad

__all__ = [n for n in dir() if not n.startswith("_") and n != "annotations"]
