"""Entries for the core composites: arithmetic, reductions, softmax, shape and indexing ops."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from framework.testing import run_op

from ... import composite_reference as R
from . import CompositeInfo, _u


def core_entries(fw: Any, F: Any, cos_sin: Callable[[], np.ndarray]) -> list[CompositeInfo]:
    return [
        CompositeInfo(
            "softmax", lambda x: F.softmax(x, axis=-1), R.softmax, lambda r: [_u(r, 3, 7) * 3], (0,)
        ),
        CompositeInfo(
            "softmax_axis0",
            lambda x: F.softmax(x, axis=0),
            lambda x: R.softmax(x, 0),
            lambda r: [_u(r, 4, 3)],
            (0,),
            op="softmax",
        ),
        CompositeInfo(
            "log_softmax", lambda x: F.log_softmax(x), R.log_softmax, lambda r: [_u(r, 3, 7) * 3], (0,)
        ),
        CompositeInfo(
            "logsumexp", lambda x: F.logsumexp(x, axis=-1), R.logsumexp, lambda r: [_u(r, 4, 6) * 5], (0,)
        ),
        CompositeInfo(
            "layer_norm",
            lambda x, w, b: F.layer_norm(x, x.shape[-1], w, b),
            R.layer_norm,
            lambda r: [_u(r, 3, 8), _u(r, 8), _u(r, 8)],
            (0, 1, 2),
        ),
        CompositeInfo(
            "rms_norm",
            lambda x, w: F.rms_norm(x, None, w),
            R.rms_norm,
            lambda r: [_u(r, 2, 3, 8), _u(r, 8)],
            (0, 1),
        ),
        CompositeInfo(
            "gelu",
            lambda x: F.gelu(x),
            lambda x: 0.5 * x * (1 + R.erf(x / math.sqrt(2))),
            lambda r: [_u(r, 4, 5, lo=-4, hi=4)],
            (0,),
        ),
        CompositeInfo(
            "gelu_tanh",
            lambda x: F.gelu(x, approximate=True),
            lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
            lambda r: [_u(r, 4, 5, lo=-4, hi=4)],
            (0,),
            op="gelu",
        ),
        CompositeInfo(
            "silu",
            lambda x: F.silu(x),
            lambda x: x * R.sigmoid(x),
            lambda r: [_u(r, 4, 5, lo=-6, hi=6)],
            (0,),
        ),
        CompositeInfo(
            "sigmoid", lambda x: F.sigmoid(x), R.sigmoid, lambda r: [_u(r, 4, 5, lo=-8, hi=8)], (0,)
        ),
        CompositeInfo(
            "relu", lambda x: F.relu(x), lambda x: np.maximum(x, 0), lambda r: [_u(r, 4, 5) + 0.05], (0,)
        ),
        CompositeInfo(
            "leaky_relu",
            lambda x: F.leaky_relu(x, 0.1),
            lambda x: np.where(x > 0, x, 0.1 * x),
            lambda r: [_u(r, 4, 5) + 0.05],
            (0,),
        ),
        CompositeInfo(
            "softplus", lambda x: F.softplus(x), R.softplus, lambda r: [_u(r, 4, 5, lo=-10, hi=10)], (0,)
        ),
        CompositeInfo(
            "linear",
            lambda x, w, b: F.linear(x, w, b),
            lambda x, w, b: x @ w + b,
            lambda r: [_u(r, 2, 3, 5), _u(r, 5, 4), _u(r, 4)],
            (0, 1, 2),
        ),
        CompositeInfo(
            "conv2d",
            lambda x, w, b: F.conv2d(x, w, b, stride=1, padding=1),
            lambda x, w, b: R.conv2d(x, w, b, 1, 1, 1, 1),
            lambda r: [_u(r, 2, 2, 5, 5), _u(r, 3, 2, 3, 3), _u(r, 3)],
            (0, 1, 2),
        ),
        CompositeInfo(
            "conv2d_strided_dilated_groups",
            lambda x, w: F.conv2d(x, w, None, stride=2, padding=2, dilation=2, groups=2),
            lambda x, w: R.conv2d(x, w, None, 2, 2, 2, 2),
            lambda r: [_u(r, 1, 4, 7, 6), _u(r, 4, 2, 3, 3)],
            (0, 1),
            op="conv2d",
        ),
        CompositeInfo(
            "max_pool2d",
            lambda x: F.max_pool2d(x, 2, 2),
            lambda x: R.pool2d(x, (2, 2), (2, 2), (0, 0), "max"),
            lambda r: [r.permutation(2 * 3 * 6 * 6).reshape(2, 3, 6, 6) * 0.1],
            (0,),
        ),
        CompositeInfo(
            "avg_pool2d_padded",
            lambda x: F.avg_pool2d(x, 3, 2, padding=1),
            lambda x: R.pool2d(x, (3, 3), (2, 2), (1, 1), "avg"),
            lambda r: [_u(r, 1, 2, 7, 7)],
            (0,),
            op="avg_pool2d",
        ),
        CompositeInfo(
            "adaptive_avg_pool2d",
            lambda x: F.adaptive_avg_pool2d(x, 1),
            lambda x: x.mean(axis=(2, 3), keepdims=True),
            lambda r: [_u(r, 2, 3, 4, 5)],
            (0,),
        ),
        CompositeInfo(
            "attention_causal",
            lambda q, k, v: F.attention(q, k, v, is_causal=True),
            lambda q, k, v: R.attention(q, k, v, True),
            lambda r: [_u(r, 2, 2, 5, 4), _u(r, 2, 2, 5, 4), _u(r, 2, 2, 5, 4)],
            (0, 1, 2),
            op="attention",
        ),
        CompositeInfo(
            "attention",
            lambda q, k, v: F.attention(q, k, v),
            lambda q, k, v: R.attention(q, k, v, False),
            lambda r: [_u(r, 1, 3, 4, 8), _u(r, 1, 3, 6, 8), _u(r, 1, 3, 6, 8)],
            (0, 1, 2),
        ),
        CompositeInfo(
            "attention_grad",
            _attention_grads,
            lambda q, k, v, do: R.attention_grads(q, k, v, do, True, 0.5),
            lambda r: [_u(r, 2, 2, 5, 4), _u(r, 2, 2, 5, 4), _u(r, 2, 2, 5, 3), _u(r, 2, 2, 5, 3)],
            (0, 1, 2, 3),
        ),
        CompositeInfo(
            "rotary_embedding",
            lambda x, c, s: F.rotary_embedding(x, c, s),
            R.rotary,
            lambda r: [_u(r, 2, 5, 6, 4), cos_sin()[0], cos_sin()[1]],
            (0,),
        ),
        CompositeInfo(
            "embedding",
            lambda ids, w: F.embedding(ids, w),
            lambda ids, w: w[ids],
            lambda r: [np.array([[0, 3, 3], [5, 1, 0]], np.int64), _u(r, 6, 4)],
            (1,),
        ),
        CompositeInfo(
            "cross_entropy",
            lambda z, y: F.cross_entropy(z, y),
            R.cross_entropy,
            lambda r: [_u(r, 6, 5) * 3, np.array([0, 4, 2, 2, 1, 3], np.int64)],
            (0,),
        ),
        CompositeInfo(
            "cross_entropy_smoothing_ignore",
            lambda z, y: F.cross_entropy(z, y, ignore_index=2, label_smoothing=0.1),
            lambda z, y: R.cross_entropy(z, y, 0.1, 2),
            lambda r: [_u(r, 6, 5) * 3, np.array([0, 4, 2, 2, 1, 3], np.int64)],
            (0,),
            op="cross_entropy",
        ),
        CompositeInfo(
            "mse_loss",
            lambda a, b: F.mse_loss(a, b),
            lambda a, b: np.asarray(np.mean((a - b) ** 2)),
            lambda r: [_u(r, 4, 3), _u(r, 4, 3)],
            (0, 1),
        ),
        CompositeInfo(
            "l1_loss",
            lambda a, b: F.l1_loss(a, b),
            lambda a, b: np.asarray(np.mean(np.abs(a - b))),
            lambda r: [_u(r, 4, 3), _u(r, 4, 3) + 5.0],
            (0, 1),
        ),
        CompositeInfo(
            "bce_with_logits",
            lambda z, y: F.binary_cross_entropy_with_logits(z, y),
            R.bce_logits,
            lambda r: [_u(r, 8, lo=-6, hi=6), (r.random(8) < 0.5).astype(np.float64)],
            (0,),
        ),
        CompositeInfo(
            "var", lambda x: F.var(x, axis=1), lambda x: x.var(axis=1, ddof=1), lambda r: [_u(r, 3, 6)], (0,)
        ),
        CompositeInfo(
            "std", lambda x: F.std(x, axis=0), lambda x: x.std(axis=0, ddof=1), lambda r: [_u(r, 5, 3)], (0,)
        ),
        CompositeInfo(
            "split",  # one part: the others' gradients are zeros in the concatenation
            lambda x: fw.split(x, [2, -1, 3], axis=1)[1],
            lambda x: x[:, 2:-3],
            lambda r: [_u(r, 3, 9, 2)],
            (0,),
        ),
        CompositeInfo(
            "split_all_parts",
            lambda x: (lambda p: p[0] * 2.0 - p[1] + p[2] * p[2])(fw.split(x, 3, axis=0)),
            lambda x: x[:2] * 2.0 - x[2:4] + x[4:] * x[4:],
            lambda r: [_u(r, 6, 5)],
            (0,),
            op="split",
        ),
        CompositeInfo(
            "cumsum",
            lambda x: F.cumsum(x, axis=1),
            lambda x: np.cumsum(x, axis=1),
            lambda r: [_u(r, 3, 9)],
            (0,),
        ),
        CompositeInfo(
            "topk_values",
            lambda x: F.topk(x, 3)[0],
            lambda x: -np.sort(-x, axis=-1)[..., :3],
            lambda r: [r.permutation(24).reshape(3, 8) * 0.5],
            (0,),
            op="topk",
        ),
        CompositeInfo(
            "topk_indices",
            lambda x: F.topk(x, 3)[1],
            lambda x: np.argsort(-x, axis=-1, kind="stable")[..., :3],
            lambda r: [r.permutation(24).reshape(3, 8) * 0.5],
            op="topk",
        ),
        CompositeInfo(
            "one_hot",
            lambda y: F.one_hot(y, 5),
            lambda y: np.eye(5, dtype=np.float32)[y],
            lambda r: [np.array([0, 4, 2, 2], np.int64)],
        ),
        CompositeInfo(
            "mean",
            lambda x: fw.mean(x, axis=(0, 2)),
            lambda x: x.mean(axis=(0, 2)),
            lambda r: [_u(r, 2, 3, 4)],
            (0,),
        ),
        CompositeInfo(
            "clip",
            lambda x: fw.clip(x, -0.5, 0.7),
            lambda x: np.clip(x, -0.5, 0.7),
            lambda r: [_u(r, 4, 5)],
            (0,),
        ),
        CompositeInfo("log1p", lambda x: fw.log1p(x), np.log1p, lambda r: [_u(r, 4, 5, lo=-0.5, hi=3)], (0,)),
        CompositeInfo("expm1", lambda x: fw.expm1(x), np.expm1, lambda r: [_u(r, 4, 5)], (0,)),
    ]


def _attention_grads(q: Any, k: Any, v: Any, do: Any) -> Any:
    """attention's gradients (dq, dk, dv) through its gradient composite, flattened into one
    tensor (what autograd runs for ``attention``: a plugin's fused kernel, or the decomposition)."""
    import framework as fw

    grads = run_op("attention_grad", [q, k, v, do], {"causal": True, "scale": 0.5})
    return fw.concat([g.reshape([-1]) for g in grads])
