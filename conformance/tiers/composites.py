"""Tier ``composites``: every op the core defines by its decomposition into primitives (softmax,
norms, activations, special functions, convolutions, pooling, unfold, interpolation, attention,
losses, ...), through the public API.

Each runs whichever path the core picks on the device (a fused kernel the plugin registered, a
generated kernel through compile access, or the decomposition); the path taken is recorded, and
an entry whose run did not go through the composite it names fails. Forward values are compared
with the independent numpy references of :mod:`conformance.composite_reference`; gradients with
central finite differences of those references in float64. Forward samples sit on the ops'
edges (thresholds and kinks exactly, ties, zeros of both signs, NaN and infinities where the op
defines the result); gradient samples, where the forward ones sit on kinks, stay a little away
from them, where finite differences mean something. ``tests/test_op_completeness.py`` fails for
a registered composite listed here by no entry, or by none with a gradient check.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from framework.testing import gradient_tolerance, op_names, op_path_stats, run_op, tolerance

from .. import composite_reference as R
from ..cases import Case, Target
from ..checks import CheckFailure, assert_close, finite_difference, put

NAN, INF = float("nan"), float("inf")


# -- the database ------------------------------------------------------------------------------
@dataclass
class CompositeInfo:
    name: str
    run: Callable[..., Any]  #: (*tensors) -> Tensor, through the public API
    ref: Callable[..., np.ndarray]  #: (*float64 arrays) -> array
    inputs: Callable[[np.random.Generator], list[np.ndarray]]  #: float64 inputs (ints stay ints)
    grad: tuple[int, ...] = ()  #: the inputs whose gradients are checked
    tol_scale: float = 10.0  #: decompositions round several times: 10x the primitive tolerance
    op: str = ""  #: the registered composite the entry exercises (default: ``name``)
    #: gradient samples when ``inputs`` sit on kinks or hold NaN/inf (default: ``inputs``)
    grad_inputs: Callable[[np.random.Generator], list[np.ndarray]] | None = None
    #: (primitive, dtype) kernels the entry needs natively (integer data: int8 casts): a
    #: plugin without one is "not supported" for the entry, not a CPU fallback
    needs: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        self.op = self.op or self.name


def _u(rng: np.random.Generator, *shape: int, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    return rng.uniform(lo, hi, shape)


def _edge(rng: np.random.Generator, lo: float, hi: float, n: int, *special: float) -> list[np.ndarray]:
    """``n`` uniform values in [lo, hi) followed by the ``special`` ones, as one 1-d input."""
    return [np.concatenate([rng.uniform(lo, hi, n), np.array(special, np.float64)])]


def _smooth(
    rng: np.random.Generator, lo: float, hi: float, n: int, *kinks: float, gap: float = 0.05
) -> list[np.ndarray]:
    """``n`` uniform values in [lo, hi), each within ``gap`` of a kink moved ``gap`` away from it."""
    x = rng.uniform(lo, hi, n)
    for k in kinks:
        x = np.where(np.abs(x - k) < gap, k + np.where(x >= k, gap, -gap), x)
    return [x]


def _on_zero(x: np.ndarray, *flat_idx: int) -> np.ndarray:
    x = x.copy()
    x.flat[list(flat_idx)] = 0.0
    return x


def _polar(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """(ordinate, abscissa) pairs with radius in [0.5, 2) and angle away from the branch cut."""
    rad, ang = rng.uniform(0.5, 2.0, n), rng.uniform(-2.9, 2.9, n)
    return [rad * np.sin(ang), rad * np.cos(ang)]


def _gamma_args(rng: np.random.Generator) -> list[np.ndarray]:
    """Positive values, and negative ones at least 0.2 from the poles."""
    neg = -(rng.integers(0, 4, 6) + rng.uniform(0.2, 0.8, 6))
    return [np.concatenate([rng.uniform(0.1, 8.0, 14), neg])]


def _db() -> list[CompositeInfo]:
    import framework as fw
    import framework.nn.functional as F

    cos_sin = lambda: np.random.default_rng(7).uniform(-1, 1, (2, 5, 6, 4))  # noqa: E731
    return (
        _db_core(fw, F, cos_sin)
        + _db_activations(F)
        + _db_special(fw)
        + _db_linear_algebra(fw)
        + _db_norms(F)
        + _db_spatial(F)
        + _db_quant(fw)
    )


def unsupported(info: CompositeInfo, target: Target) -> str:
    """Why ``target`` cannot run ``info`` natively ("" when it can)."""
    for op, dt in info.needs:
        if not target.registers(op, dt):
            return f"the '{target.plugin}' plugin registers no {op} kernel for {dt} ({info.name} needs it)"
    return ""


_INT8 = (("cast", "int8"),)


def _db_quant(fw: Any) -> list[CompositeInfo]:
    from framework.nn import quant as Q
    from framework.quantization import dequantize_linear, fake_quantize_dequantize, quantize_linear

    levels = lambda r: r.integers(-127, 128, (6, 16)).astype(np.int8)  # noqa: E731  [n, k]
    return [
        CompositeInfo(
            "weight_quantize",
            lambda w: Q.weight_quantize(w)[0],
            R.weight_quantize_int8,
            lambda r: [_u(r, 16, 6)],
            needs=(*_INT8, ("permute", "int8")),
        ),
        CompositeInfo(
            "weight_dequantize",
            lambda q, s: Q.weight_dequantize(q, s),
            R.weight_dequantize_int8,
            lambda r: [levels(r), r.uniform(0.01, 0.1, 6)],
            (1,),
            needs=_INT8,
        ),
        CompositeInfo(
            "weight_only_linear",
            lambda x, q, s: Q.weight_only_linear(x, q, weight_scale=s),
            lambda x, q, s: x @ R.weight_dequantize_int8(q, s),
            lambda r: [_u(r, 3, 16), levels(r), r.uniform(0.01, 0.1, 6)],
            (0, 2),
            needs=_INT8,
        ),
        CompositeInfo(
            "quantize_linear",
            lambda x, s: quantize_linear(x, s),
            R.quantize_linear,
            lambda r: [_u(r, 4, 5), np.array(1.5)],
            needs=_INT8,
        ),
        CompositeInfo(
            "dequantize_linear",
            lambda q, s: dequantize_linear(q, s),
            lambda q, s: q * s / 127,
            lambda r: [levels(r), np.array(0.7)],
            (1,),
            needs=_INT8,
        ),
        CompositeInfo(
            "fake_quantize_dequantize",
            lambda x, s: fake_quantize_dequantize(x, s),
            lambda x, s: R.quantize_linear(x, s, low=0) * s / 127,
            lambda r: [_u(r, 4, 5), np.array(1.5)],
        ),
    ]


def _db_core(fw: Any, F: Any, cos_sin: Callable[[], np.ndarray]) -> list[CompositeInfo]:
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


def _db_activations(F: Any) -> list[CompositeInfo]:
    """Piecewise activations: forward samples on each threshold exactly, NaN and infinities."""
    return [
        CompositeInfo(
            "relu6",
            lambda x: F.relu6(x),
            R.relu6,
            lambda r: _edge(r, -3, 9, 20, 0.0, -0.0, 6.0, NAN, INF, -INF),
            (0,),
            grad_inputs=lambda r: _smooth(r, -3, 9, 20, 0.0, 6.0),
        ),
        CompositeInfo(
            "hardtanh",
            lambda x: F.hardtanh(x, -0.5, 1.5),
            lambda x: R.hardtanh(x, -0.5, 1.5),
            lambda r: _edge(r, -3, 3, 20, -0.5, 1.5, 0.0, NAN, INF, -INF),
            (0,),
            grad_inputs=lambda r: _smooth(r, -3, 3, 20, -0.5, 1.5),
        ),
        CompositeInfo(
            "elu",
            lambda x: F.elu(x, 0.7),
            lambda x: R.elu(x, 0.7),
            lambda r: _edge(r, -4, 4, 20, 0.0, -0.0, 100.0, -50.0, NAN, INF, -INF),
            (0,),
            grad_inputs=lambda r: _smooth(r, -4, 4, 20, 0.0),
        ),
        CompositeInfo(
            "selu",
            lambda x: F.selu(x),
            R.selu,
            lambda r: _edge(r, -4, 4, 20, 0.0, 50.0, -50.0, NAN),
            (0,),
            grad_inputs=lambda r: _smooth(r, -4, 4, 20, 0.0),
        ),
        CompositeInfo(
            "celu",
            lambda x: F.celu(x, 0.5),
            lambda x: R.celu(x, 0.5),
            lambda r: _edge(r, -4, 4, 20, 0.0, 40.0, -30.0, NAN),
            (0,),
            grad_inputs=lambda r: _smooth(r, -4, 4, 20, 0.0),
        ),
        CompositeInfo(
            "celu_negative_alpha",
            lambda x: F.celu(x, -0.75),
            lambda x: R.celu(x, -0.75),
            lambda r: _edge(r, -4, 4, 20, 0.0, 40.0, -20.0, NAN),
            (0,),
            op="celu",
            grad_inputs=lambda r: _smooth(r, -4, 4, 20, 0.0),
        ),
        CompositeInfo(
            "prelu",
            lambda x, w: F.prelu(x, w),
            lambda x, w: R.prelu(x, w, 1),
            lambda r: [_on_zero(_u(r, 2, 3, 2, 2), 0, 7), _u(r, 3, lo=-0.5, hi=0.5)],
            (0, 1),
            grad_inputs=lambda r: [
                _smooth(r, -2, 2, 24, 0.0)[0].reshape(2, 3, 2, 2),
                _u(r, 3, lo=-0.5, hi=0.5),
            ],
        ),
        CompositeInfo(
            "prelu_channel_last",
            lambda x, w: F.prelu(x, w, data_format="NLC"),
            lambda x, w: R.prelu(x, w, 2),
            lambda r: [_smooth(r, -2, 2, 24, 0.0)[0].reshape(2, 3, 4), _u(r, 4, lo=-0.5, hi=0.5)],
            (0, 1),
            op="prelu",
        ),
        CompositeInfo(
            "prelu_shared",
            lambda x, w: F.prelu(x, w),
            lambda x, w: R.prelu(x, w, 1),
            lambda r: [_smooth(r, -2, 2, 20, 0.0)[0].reshape(5, 4), _u(r, 1, lo=0.1, hi=0.5)],
            (0, 1),
            op="prelu",
        ),
        CompositeInfo(
            "hardswish",
            lambda x: F.hardswish(x),
            R.hardswish,
            lambda r: _edge(r, -5, 5, 20, -3.0, 3.0, 0.0, NAN, INF),
            (0,),
            grad_inputs=lambda r: _smooth(r, -5, 5, 20, -3.0, 3.0),
        ),
        CompositeInfo(
            "hardsigmoid",
            lambda x: F.hardsigmoid(x, 0.25, 0.375),
            lambda x: R.hardsigmoid(x, 0.25, 0.375),
            lambda r: _edge(r, -4, 4, 20, -1.5, 2.5, 0.0, NAN, INF, -INF),
            (0,),
            grad_inputs=lambda r: _smooth(r, -4, 4, 20, -1.5, 2.5),
        ),
        CompositeInfo(
            "hardsigmoid_default",
            lambda x: F.hardsigmoid(x),
            lambda x: R.hardsigmoid(x, 0.1666667, 0.5),
            lambda r: _edge(r, -5, 5, 12, -3.0, 3.0, 0.0),
            op="hardsigmoid",
        ),
        CompositeInfo(
            "mish",
            lambda x: F.mish(x),
            R.mish,
            lambda r: _edge(r, -5, 5, 20, 0.0, 30.0, -30.0, NAN, INF),
            (0,),
            grad_inputs=lambda r: [r.uniform(-5, 5, 20)],
        ),
        CompositeInfo(
            "softsign",
            lambda x: F.softsign(x),
            lambda x: x / (1 + np.abs(x)),
            lambda r: _edge(r, -5, 5, 20, 0.0, -0.0, 1e6, -1e6, NAN),
            (0,),
            grad_inputs=lambda r: [r.uniform(-5, 5, 20)],
        ),
        CompositeInfo(
            "tanhshrink",
            lambda x: F.tanhshrink(x),
            lambda x: x - np.tanh(x),
            lambda r: _edge(r, -4, 4, 20, 0.0, 1e-3, 20.0, -20.0, NAN),
            (0,),
            grad_inputs=lambda r: [r.uniform(-4, 4, 20)],
        ),
        CompositeInfo(
            "hardshrink",
            lambda x: F.hardshrink(x, 0.5),
            lambda x: R.hardshrink(x, 0.5),
            lambda r: _edge(r, -2, 2, 20, 0.5, -0.5, 0.0, INF, -INF),
            (0,),
            grad_inputs=lambda r: _smooth(r, -2, 2, 20, 0.5, -0.5),
        ),
        CompositeInfo(
            "softshrink",
            lambda x: F.softshrink(x, 0.25),
            lambda x: R.softshrink(x, 0.25),
            lambda r: _edge(r, -2, 2, 20, 0.25, -0.25, 0.0, INF, -INF),
            (0,),
            grad_inputs=lambda r: _smooth(r, -2, 2, 20, 0.25, -0.25),
        ),
        CompositeInfo(
            "thresholded_relu",
            lambda x: F.thresholded_relu(x, 0.75, -2.0),
            lambda x: R.thresholded_relu(x, 0.75, -2.0),
            lambda r: _edge(r, -2, 3, 20, 0.75, 0.0, INF, -INF),
            (0,),
            grad_inputs=lambda r: _smooth(r, -2, 3, 20, 0.75),
        ),
        CompositeInfo(
            "log_sigmoid",
            lambda x: F.log_sigmoid(x),
            R.log_sigmoid,
            lambda r: _edge(r, -8, 8, 20, 0.0, 40.0, -40.0, 100.0, -100.0, NAN, INF, -INF),
            (0,),
            grad_inputs=lambda r: [r.uniform(-8, 8, 20)],
        ),
    ]


def _db_special(fw: Any) -> list[CompositeInfo]:
    """atan (each range-reduction branch and its boundaries), atan2 (every quadrant and both
    axes), lgamma/digamma (both sides of the reflection at 0.5, negative non-integers, the
    signed zeros), erfinv (towards +-1, +-1 exactly, NaN outside)."""
    t3p8 = 2.414213562373095
    atan2_pts = [
        (1, 0),
        (-1, 0),
        (0, 1),
        (0, -1),
        (1, -1),
        (-1, -1),
        (1, 1),
        (-1, 1),
        (0, 0),
        (3, -0.5),
        (-3, -0.5),
        (0.25, 4),
    ]
    return [
        CompositeInfo(
            "atan",
            lambda x: fw.atan(x),
            np.arctan,
            lambda r: _edge(
                r,
                -6,
                6,
                16,
                0.0,
                -0.0,
                0.66,
                -0.66,
                0.67,
                t3p8,
                -t3p8,
                2.5,
                1.0,
                -1.0,
                1e10,
                -1e10,
                INF,
                -INF,
                NAN,
            ),
            (0,),
            grad_inputs=lambda r: [r.uniform(-6, 6, 24)],
        ),
        CompositeInfo(
            "atan2",
            lambda y, x: fw.atan2(y, x),
            np.arctan2,
            lambda r: [
                np.concatenate([r.uniform(-3, 3, 10), [p[0] for p in atan2_pts]]),
                np.concatenate([r.uniform(-3, 3, 10), [p[1] for p in atan2_pts]]),
            ],
            (0, 1),
            grad_inputs=lambda r: _polar(r, 20),
        ),
        CompositeInfo(
            "lgamma",
            lambda x: fw.lgamma(x),
            R.lgamma,
            lambda r: _edge(
                r,
                0.1,
                8,
                12,
                0.5,
                0.4999,
                1.0,
                2.0,
                1e-3,
                30.0,
                200.0,
                -0.5,
                -2.5,
                -3.7,
                -1.2,
                0.0,
                -0.0,
                NAN,
            ),
            (0,),
            grad_inputs=_gamma_args,
        ),
        CompositeInfo(
            "digamma",
            lambda x: fw.digamma(x),
            R.digamma,
            lambda r: _edge(
                r, 0.1, 8, 12, 0.5, 0.4999, 1.0, 2.0, 1e-2, 30.0, 1e4, -0.5, -2.5, -3.7, -1.2, 0.0, -0.0, NAN
            ),
            (0,),
            grad_inputs=_gamma_args,
        ),
        CompositeInfo(
            "log1p",
            lambda x: fw.log1p(x),
            np.log1p,
            lambda r: _edge(r, -0.9, 4, 12, 0.0, -0.0, 1e-10, -1e-10, 1e-4, -0.5, 1e30, -1.0, INF, NAN),
            (0,),
            grad_inputs=lambda r: [np.concatenate([r.uniform(-0.9, 4, 12), [1e-6, -1e-6, 0.0]])],
        ),
        CompositeInfo(
            "expm1",
            lambda x: fw.expm1(x),
            np.expm1,
            lambda r: _edge(r, -4, 4, 12, 0.0, -0.0, 1e-10, -1e-10, 1e-4, -30.0, 60.0, 200.0, -INF, INF, NAN),
            (0,),
            grad_inputs=lambda r: [np.concatenate([r.uniform(-4, 4, 12), [1e-6, -1e-6, 0.0]])],
        ),
        CompositeInfo(
            "erfinv",
            lambda x: fw.erfinv(x),
            R.erfinv,
            lambda r: _edge(
                r, -0.95, 0.95, 16, 0.0, -0.0, 0.5, -0.9, 0.99, 0.999, -0.9995, 1.0, -1.0, 1.5, -2.0, NAN
            ),
            (0,),
            grad_inputs=lambda r: [r.uniform(-0.95, 0.95, 20)],
        ),
    ]


def _db_linear_algebra(fw: Any) -> list[CompositeInfo]:
    """matmul with transposed operands (the ``matmul_t`` composite): each flag, and for one
    flag both of the copies its decomposition may choose (the smaller operand transposed)."""
    sw = lambda a: np.swapaxes(a, -1, -2)  # noqa: E731
    return [
        CompositeInfo(
            "matmul_transpose_y",
            lambda a, b: fw.matmul(a, b, transpose_y=True),
            lambda a, b: a @ sw(b),
            lambda r: [_u(r, 3, 4), _u(r, 2, 4)],
            (0, 1),
            op="matmul_t",
        ),
        CompositeInfo(
            "matmul_transpose_y_batched",
            lambda a, b: fw.matmul(a, b, transpose_y=True),
            lambda a, b: a @ sw(b),
            lambda r: [_u(r, 2, 1, 4), _u(r, 2, 5, 4)],
            (0, 1),
            op="matmul_t",
        ),
        CompositeInfo(
            "matmul_transpose_x",
            lambda a, b: fw.matmul(a, b, transpose_x=True),
            lambda a, b: sw(a) @ b,
            lambda r: [_u(r, 3, 2), _u(r, 3, 4)],
            (0, 1),
            op="matmul_t",
        ),
        CompositeInfo(
            "matmul_transpose_x_batched",
            lambda a, b: fw.matmul(a, b, transpose_x=True),
            lambda a, b: sw(a) @ b,
            lambda r: [_u(r, 2, 4, 5), _u(r, 2, 4, 1)],
            (0, 1),
            op="matmul_t",
        ),
        CompositeInfo(
            "matmul_transpose_xy",
            lambda a, b: fw.matmul(a, b, transpose_x=True, transpose_y=True),
            lambda a, b: sw(a) @ sw(b),
            lambda r: [_u(r, 3, 2), _u(r, 4, 3)],
            (0, 1),
            op="matmul_t",
        ),
    ]


def _db_norms(F: Any) -> list[CompositeInfo]:
    """batch_norm (running and batch statistics) and instance_norm, which share the
    ``channel_norm`` composite; group_norm with and without the affine, channel-first and last."""
    pos = lambda r, n: r.uniform(0.5, 2.0, n)  # noqa: E731  (variances)
    nlc = lambda f: lambda x: np.swapaxes(f(np.swapaxes(x, 1, 2)), 1, 2)  # noqa: E731
    return [
        CompositeInfo(
            "batch_norm_eval",
            lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False),
            R.batch_norm_eval,
            lambda r: [_u(r, 2, 3, 2, 2), _u(r, 3, lo=-0.5, hi=0.5), pos(r, 3), _u(r, 3), _u(r, 3)],
            (0, 3, 4),
            op="channel_norm",
        ),
        CompositeInfo(
            "batch_norm_train",
            lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=True),
            lambda x, m, v, w, b: R.batch_norm_train(x, w, b),
            lambda r: [_u(r, 4, 3, 2), np.zeros(3), np.ones(3), _u(r, 3), _u(r, 3)],
            (0, 3, 4),
            op="channel_norm",
        ),
        CompositeInfo(
            "instance_norm",
            lambda x, w, b: F.instance_norm(x, weight=w, bias=b, data_format="NCL"),
            R.instance_norm,
            lambda r: [_u(r, 2, 3, 5), _u(r, 3), _u(r, 3)],
            (0, 1, 2),
            op="channel_norm",
        ),
        CompositeInfo(
            "group_norm",
            lambda x, w, b: F.group_norm(x, 2, 1e-5, w, b),
            lambda x, w, b: R.group_norm(x, 2, w, b),
            lambda r: [_u(r, 2, 4, 3, 2), _u(r, 4), _u(r, 4)],
            (0, 1, 2),
        ),
        CompositeInfo(
            "group_norm_channel_last",
            lambda x: F.group_norm(x, 3, data_format="NLC"),
            nlc(lambda x: R.group_norm(x, 3, None, None)),
            lambda r: [_u(r, 2, 5, 6)],
            (0,),
            op="group_norm",
        ),
    ]


def _db_spatial(F: Any) -> list[CompositeInfo]:
    """conv3d, conv2d_transpose, avg_pool2d counting the padding, unfold, and interpolate in
    every mode (up in one axis and down in another, size and scale_factor, the index rules)."""
    itp = R.interpolate
    return [
        CompositeInfo(
            "conv3d",
            lambda x, w, b: F.conv3d(x, w, b),
            lambda x, w, b: R.conv3d(x, w, b, (1, 1, 1), (0, 0, 0), (1, 1, 1), 1),
            lambda r: [_u(r, 2, 2, 3, 3, 3), _u(r, 3, 2, 2, 2, 2), _u(r, 3)],
            (0, 1, 2),
        ),
        CompositeInfo(
            "conv3d_strided_padded_dilated_groups",
            lambda x, w: F.conv3d(x, w, None, stride=(1, 2, 1), padding=1, dilation=(1, 1, 2), groups=2),
            lambda x, w: R.conv3d(x, w, None, (1, 2, 1), (1, 1, 1), (1, 1, 2), 2),
            lambda r: [_u(r, 1, 4, 4, 3, 4), _u(r, 2, 2, 2, 2, 2)],
            (0, 1),
            op="conv3d",
        ),
        CompositeInfo(
            "conv2d_transpose",
            lambda x, w, b: F.conv2d_transpose(x, w, b, stride=2, padding=1, output_padding=1),
            lambda x, w, b: R.conv2d_transpose(x, w, b, (2, 2), (1, 1), (1, 1), (1, 1), 1),
            lambda r: [_u(r, 2, 3, 3, 3), _u(r, 3, 2, 3, 3), _u(r, 2)],
            (0, 1, 2),
        ),
        CompositeInfo(
            "conv2d_transpose_groups_dilated",
            lambda x, w: F.conv2d_transpose(
                x, w, None, stride=(1, 2), padding=(0, 1), output_padding=(1, 0), dilation=2, groups=2
            ),
            lambda x, w: R.conv2d_transpose(x, w, None, (1, 2), (0, 1), (1, 0), (2, 2), 2),
            lambda r: [_u(r, 1, 4, 3, 4), _u(r, 4, 1, 2, 3)],
            (0, 1),
            op="conv2d_transpose",
        ),
        CompositeInfo(
            "avg_pool2d_inclusive",
            lambda x: F.avg_pool2d(x, (2, 3), (1, 2), padding=1, exclusive=False),
            lambda x: R.pool2d(x, (2, 3), (1, 2), (1, 1), "avg_inclusive"),
            lambda r: [_u(r, 1, 2, 5, 6)],
            (0,),
            op="avg_pool2d",
        ),
        CompositeInfo(
            "max_pool2d_ceil_mode",
            lambda x: F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True),
            lambda x: R.pool2d_paddle(x, (3, 3), (2, 2), (1, 1), True, "max"),
            lambda r: [r.permutation(2 * 2 * 6 * 7).reshape(2, 2, 6, 7) * 0.1],
            (0,),
            op="max_pool2d",
        ),
        CompositeInfo(
            "max_pool2d_with_mask",
            lambda x: F.max_pool2d(x, (3, 2), (2, 2), padding=(1, 0), ceil_mode=True, return_mask=True)[0],
            lambda x: R.pool2d_paddle(x, (3, 2), (2, 2), (1, 0), True, "max"),
            lambda r: [r.permutation(2 * 2 * 6 * 7).reshape(2, 2, 6, 7) * 0.1],
            (0,),
        ),
        CompositeInfo(
            "max_pool2d_mask_positions",
            lambda x: F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True, return_mask=True)[1].astype(x.dtype),
            lambda x: R.pool2d_paddle(x, (3, 3), (2, 2), (1, 1), True, "mask"),
            lambda r: [r.permutation(2 * 2 * 6 * 7).reshape(2, 2, 6, 7) * 0.1],
            op="max_pool2d_with_mask",
        ),
        CompositeInfo(
            "avg_pool2d_ceil_exclusive",
            lambda x: F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True),
            lambda x: R.pool2d_paddle(x, (3, 3), (2, 2), (1, 1), True, "avg"),
            lambda r: [_u(r, 1, 2, 6, 7)],
            (0,),
            op="avg_pool2d",
        ),
        CompositeInfo(
            "avg_pool2d_ceil_inclusive",
            lambda x: F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True, exclusive=False),
            lambda x: R.pool2d_paddle(x, (3, 3), (2, 2), (1, 1), True, "avg_inclusive"),
            lambda r: [_u(r, 1, 2, 6, 7)],
            (0,),
            op="avg_pool2d",
        ),
        CompositeInfo(
            "avg_pool2d_divisor_override",
            lambda x: F.avg_pool2d(x, 2, 2, padding=1, divisor_override=3),
            lambda x: R.pool2d_paddle(x, (2, 2), (2, 2), (1, 1), False, "avg", 3.0),
            lambda r: [_u(r, 1, 2, 5, 4)],
            (0,),
            op="avg_pool2d",
        ),
        CompositeInfo(
            "unfold",
            lambda x: F.unfold(x, [2, 3], strides=[2, 1], paddings=1, dilations=[1, 2]),
            lambda x: R.unfold(x, (2, 3), (2, 1), (1, 1), (1, 2)),
            lambda r: [_u(r, 2, 2, 5, 4)],
            (0,),
        ),
        CompositeInfo(
            "interpolate_nearest_scale",
            lambda x: F.interpolate(x, scale_factor=[2, 0.5], mode="nearest"),
            lambda x: itp(x, (6, 3), "nearest", scale=(2, 0.5)),
            lambda r: [_u(r, 1, 2, 3, 6)],
            (0,),
            op="interpolate",
        ),
        CompositeInfo(
            "interpolate_bilinear",
            lambda x: F.interpolate(x, size=[7, 3], mode="bilinear"),
            lambda x: itp(x, (7, 3), "bilinear"),
            lambda r: [_u(r, 1, 2, 4, 5)],
            (0,),
            op="interpolate",
        ),
        CompositeInfo(
            "interpolate_bilinear_align_corners",
            lambda x: F.interpolate(x, size=[7, 3], mode="bilinear", align_corners=True),
            lambda x: itp(x, (7, 3), "bilinear", align_corners=True),
            lambda r: [_u(r, 1, 2, 4, 5)],
            (0,),
            op="interpolate",
        ),
        CompositeInfo(
            "interpolate_bicubic",
            lambda x: F.interpolate(x, size=[6, 3], mode="bicubic"),
            lambda x: itp(x, (6, 3), "bicubic"),
            lambda r: [_u(r, 1, 1, 4, 5)],
            (0,),
            op="interpolate",
        ),
        CompositeInfo(
            "interpolate_bicubic_align_corners",
            lambda x: F.interpolate(x, size=[6, 3], mode="bicubic", align_corners=True),
            lambda x: itp(x, (6, 3), "bicubic", align_corners=True),
            lambda r: [_u(r, 1, 1, 4, 5)],
            (0,),
            op="interpolate",
        ),
        CompositeInfo(
            "interpolate_linear_align_mode1",
            lambda x: F.interpolate(x, scale_factor=1.5, mode="linear", align_mode=1),
            lambda x: itp(x, (7,), "linear", align_mode=1, scale=(1.5,)),
            lambda r: [_u(r, 2, 3, 5)],
            (0,),
            op="interpolate",
        ),
        CompositeInfo(
            "interpolate_trilinear",
            lambda x: F.interpolate(x, size=[5, 2, 3], mode="trilinear"),
            lambda x: itp(x, (5, 2, 3), "trilinear"),
            lambda r: [_u(r, 1, 1, 3, 4, 2)],
            (0,),
            op="interpolate",
        ),
        CompositeInfo(
            "interpolate_area",
            lambda x: F.interpolate(x, size=[2, 3], mode="area"),
            lambda x: itp(x, (2, 3), "area"),
            lambda r: [_u(r, 1, 2, 5, 7)],
            (0,),
            op="interpolate",
        ),
    ]


def _attention_grads(q: Any, k: Any, v: Any, do: Any) -> Any:
    """attention's gradients (dq, dk, dv) through its gradient composite, flattened into one
    tensor (what autograd runs for ``attention``: a plugin's fused kernel, or the decomposition)."""
    import framework as fw

    grads = run_op("attention_grad", [q, k, v, do], {"causal": True, "scale": 0.5})
    return fw.concat([g.reshape([-1]) for g in grads])


def listed_ops() -> set[str]:
    """The registered composites (and other ops) the entries of this tier exercise."""
    return {info.op for info in _db()}


def gradient_checked_ops() -> set[str]:
    """The ops at least one entry checks a gradient of."""
    return {info.op for info in _db() if info.grad}


def _dtype_inputs(arrays: list[np.ndarray], dtype: str) -> list[np.ndarray]:
    return [a.astype(dtype) if a.dtype == np.float64 else a for a in arrays]


def _path_count(op: str, device_type: str) -> int:
    return sum(op_path_stats().get(f"{op}@{device_type}", {}).values())


def check_reference(
    info: CompositeInfo, dtype: str, xs: list[np.ndarray], got: np.ndarray, where: str
) -> None:
    """``got`` (the composite on the inputs ``xs`` in ``dtype``, by any path) against its
    float64 reference, within the entry's tolerance (integer results exactly)."""
    ins = _dtype_inputs(xs, dtype)
    with np.errstate(all="ignore"):
        want = np.asarray(info.ref(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in ins]))
    if got.dtype.kind == "f":
        tol = tolerance(got.dtype, info.tol_scale)
        assert_close(got, want.astype(got.dtype), tol.rtol, tol.atol, where)
    else:
        assert_close(got, want.astype(got.dtype), 0, 0, where)


def forward(info: CompositeInfo, dtype: str, device: str) -> dict[str, Any]:
    import framework as fw

    dev_type = device.split(":")[0]
    composite = info.op in op_names("composite")
    before = _path_count(info.op, dev_type)
    rng = np.random.default_rng(0)
    xs = info.inputs(rng)
    ins = _dtype_inputs(xs, dtype)
    got = info.run(*[put(a, device) for a in ins])
    check_reference(info, dtype, xs, got.numpy(), f"{info.name} {dtype}")
    if composite and _path_count(info.op, dev_type) == before:
        raise CheckFailure(
            f"{info.name}: the run never went through the composite '{info.op}' it is listed for; "
            "fix the entry's run (or its op)",
            f"a call of '{info.op}'",
            "none",
        )
    return {"paths": {k: v for k, v in fw.op_path_stats().items() if k.endswith("@" + dev_type)}}


def gradient(info: CompositeInfo, dtype: str, device: str) -> None:
    import framework as fw

    rng = np.random.default_rng(0)
    xs = (info.grad_inputs or info.inputs)(rng)
    ins = [put(a, device) for a in _dtype_inputs(xs, dtype)]
    for i in info.grad:
        ins[i].stop_gradient = False
    out = info.run(*ins)
    w = np.random.default_rng(1).standard_normal(out.shape)
    grads = fw.grad(
        [out], [ins[i] for i in info.grad], grad_outputs=[put(w.astype(dtype), device)], allow_unused=True
    )
    tol = gradient_tolerance(dtype, 1.5)  # decompositions round more than one primitive
    for i, g in zip(info.grad, grads):
        num = finite_difference(info.ref, xs, i, w)
        if g is None:
            raise CheckFailure(f"{info.name}: no gradient for input {i}", num, None)
        assert_close(
            g.numpy().astype(np.float64),
            num,
            tol.rtol,
            tol.atol,
            f"d/d(input {i}) of sum({info.name}(...) * w), {dtype}",
        )


def cases(target: Target) -> list[Case]:
    out = []
    f64 = target.registers("matmul", "float64") and target.registers("exp", "float64")
    for info in _db():
        why = unsupported(info, target)
        if why:
            out.append(
                Case(
                    f"composites/{info.name}",
                    "composites",
                    None,
                    op=info.name,
                    preset="not_supported",
                    reason=why,
                )
            )
            continue
        for dt in ("float32", "float64"):
            out.append(
                Case(
                    f"composites/{info.name}[{dt}]",
                    "composites",
                    (lambda info=info, dt=dt: forward(info, dt, target.device)),
                    op=info.name,
                    dtype=dt,
                )
            )
        if info.grad:
            gdt = "float64" if f64 else "float32"
            out.append(
                Case(
                    f"composites/{info.name}[{gdt}]:grad",
                    "composites",
                    (lambda info=info, gdt=gdt: gradient(info, gdt, target.device)),
                    op=f"{info.name} (grad)",
                    dtype=gdt,
                )
            )
    return out
