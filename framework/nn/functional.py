"""``fw.nn.functional``: the composite ops as functions (Paddle's ``paddle.nn.functional``).

>>> import framework as fw
>>> import framework.nn.functional as F
>>> F.relu(fw.to_tensor([-1.0, 2.0])).tolist()
[0.0, 2.0]
"""

# ruff: noqa: F401  (re-exports; __all__ is built below)
from __future__ import annotations

from types import ModuleType as _ModuleType

from .._src.ops.composites.activation import (
    celu,
    elu,
    gelu,
    glu,
    gumbel_softmax,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    log_sigmoid,
    maxout,
    mish,
    prelu,
    relu,
    relu6,
    rrelu,
    selu,
    sigmoid,
    silu,
    softplus,
    softshrink,
    softsign,
    swiglu,
    swish,
    tanh,
    tanhshrink,
    thresholded_relu,
)
from .._src.ops.composites.arith import cumsum, std, var
from .._src.ops.composites.attention import (
    attention,
    rotary_cos_sin,
    rotary_embedding,
    scaled_dot_product_attention,
)
from .._src.ops.composites.channel_norm import batch_norm, group_norm, instance_norm, local_response_norm
from .._src.ops.composites.conv import conv1d, conv2d, conv3d
from .._src.ops.composites.conv_transpose import conv1d_transpose, conv2d_transpose, conv3d_transpose
from .._src.ops.composites.ctc_loss import ctc_loss
from .._src.ops.composites.dropout import (
    alpha_dropout,
    dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from .._src.ops.composites.embedding import embedding, one_hot
from .._src.ops.composites.linear import bilinear, linear
from .._src.ops.composites.loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    dice_loss,
    gaussian_nll_loss,
    kl_div,
    l1_loss,
    label_smooth,
    log_loss,
    mse_loss,
    nll_loss,
    poisson_nll_loss,
    sigmoid_focal_loss,
    smooth_l1_loss,
    softmax_with_cross_entropy,
    square_error_cost,
)
from .._src.ops.composites.margin_loss import (
    cosine_embedding_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_label_margin_loss,
    multi_label_soft_margin_loss,
    multi_margin_loss,
    npair_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from .._src.ops.composites.norm import (
    cosine_similarity,
    layer_norm,
    log_softmax,
    logsumexp,
    normalize,
    rms_norm,
    softmax,
)
from .._src.ops.composites.patches import fold, pixel_shuffle, pixel_unshuffle, unfold
from .._src.ops.composites.pooling import (
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    lp_pool1d,
    lp_pool2d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)
from .._src.ops.composites.resize import affine_grid, grid_sample, interpolate, upsample
from .._src.ops.composites.sequence_loss import (
    adaptive_log_softmax_with_loss,
    class_center_sample,
    edit_distance,
    rnnt_loss,
)
from .._src.ops.composites.sorting import topk
from .._src.ops.composites.window_pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    adaptive_max_pool3d,
    fractional_max_pool2d,
    fractional_max_pool3d,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from .._src.ops.indexing import masked_fill
from .._src.ops.math import clip, where
from .._src.ops.padding import pad, zeropad2d

__all__ = [n for n in dir() if not n.startswith("_") and n != "annotations"]

#: ``F.loss``: the loss functions, as Paddle's module ``paddle.nn.functional.loss`` holds them
loss = _ModuleType(
    __name__ + ".loss", "The loss functions of ``fw.nn.functional`` (Paddle's module of them)."
)
loss.__dict__.update(
    {
        n: globals()[n]
        for n in __all__
        if getattr(globals()[n], "__module__", "").rsplit(".", 1)[-1]
        in ("loss", "margin_loss", "ctc_loss", "sequence_loss")
    }
)
