"""Activations: relu, leaky_relu, gelu (exact and tanh), silu, sigmoid, tanh, softplus,
hardtanh, relu6; and Paddle's others: elu, selu, celu, prelu, hardswish, hardsigmoid, mish,
softsign, tanhshrink, hardshrink, softshrink, thresholded_relu, log_sigmoid, glu,
gumbel_softmax.

Each elementwise one is a composite defined by its decomposition (its gradient is the
decomposition's, differentiated by the primitives' rules, unless a rule stands beside it).
"""

from __future__ import annotations

import math as _m
from typing import Any

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import creation as C
from .. import math as M
from .. import random as _rand
from .. import shape as S
from .. import sharding as _sh
from ..base import OPS, Lowering, call, composite
from ..indexing import alias, rebind
from ._common import axis_arg, float_arg, same_meta, tensor_arg
from .norm import softmax

_SQRT1_2 = 1.0 / _m.sqrt(2.0)
_SQRT2_PI = _m.sqrt(2.0 / _m.pi)
#: max(x, 0) as one loop-IR value, bit for bit the decomposition's (-0.0 -> 0, NaN stays)
_RELU = Lowering(c="({0} <= {zero} ? {zero} : {0})")
#: an element-wise activation: a fusion group traces its decomposition
_TRACED = Lowering(role="decompose")


@composite("gelu", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def gelu_decomposition(x: Tensor, approximate: bool) -> Tensor:
    """0.5 x (1 + erf(x / sqrt 2)); with ``approximate``: 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3)))."""
    if approximate:
        inner = (x + x * x * x * 0.044715) * _SQRT2_PI
        return x * 0.5 * (M.tanh(inner) + 1.0)
    return x * 0.5 * (M.erf(x * _SQRT1_2) + 1.0)


def _sigmoid_of(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x)) in x's dtype. NOTE: under AMP ``exp`` runs in float32 (its deny
    list); its result is cast back so silu and sigmoid keep a float16 input's dtype."""
    return 1.0 / (M.exp(-x).astype(x.dtype) + 1.0)


def _silu_grad(node: Any, gouts: list) -> list:
    """d/dx x s(x) = s (1 + x (1 - s))."""
    x = node.inputs[0]
    s = _sigmoid_of(x)
    return [gouts[0] * (s * (x * (1.0 - s) + 1.0))]


def _sigmoid_grad(node: Any, gouts: list) -> list:
    y = node.out()
    return [gouts[0] * (y * (1.0 - y))]


@composite("silu", sharding=_sh.elementwise(), infer=same_meta, grad=_silu_grad, lower=_TRACED)
def silu_decomposition(x: Tensor) -> Tensor:
    """x / (1 + exp(-x)). NOTE: exp(-x) may overflow to inf, where the quotient is the
    exact limit (-0 for x below about -88 in float32); a generated kernel's vector expf is
    about 1.3x faster than its tanhf (SwiGLU's silu(gate) * up, 1024 x 172: 68 vs 89 us)."""
    return x / (M.exp(-x).astype(x.dtype) + 1.0)


@composite("sigmoid", sharding=_sh.elementwise(), infer=same_meta, grad=_sigmoid_grad, lower=_TRACED)
def sigmoid_decomposition(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x)) (0 where exp(-x) overflows to inf: the exact limit)."""
    return _sigmoid_of(x)


def gelu(x: Tensor, approximate: Any = False, name: str | None = None) -> Tensor:
    """GELU; ``approximate=True`` (or PyTorch's ``"tanh"``) uses the tanh form."""
    if isinstance(approximate, str):
        if approximate not in ("none", "tanh"):
            raise OpArgumentError(f"[gelu] approximate must be a bool, 'none' or 'tanh', got {approximate!r}")
        approximate = approximate == "tanh"
    return call(OPS["gelu"], [float_arg("gelu", x)], {"approximate": bool(approximate)})


def silu(x: Tensor, inplace: bool = False, name: str | None = None) -> Tensor:
    """x * sigmoid(x) (also called swish); ``inplace=True`` also stores it into ``x``."""
    old = alias(x) if inplace else x  # the graph keeps x's value before the update
    out = call(OPS["silu"], [float_arg("silu", old)], {})
    if inplace:
        if x.dtype != out.dtype:
            raise OpArgumentError(f"[silu] inplace needs a float x, got dtype {x.dtype}")
        rebind(x, out, "silu(inplace=True)", old)
        return x
    return out


def swish(x: Tensor, name: str | None = None) -> Tensor:
    """x * sigmoid(x): :func:`silu` under its other name."""
    return silu(x)


def sigmoid(x: Tensor, name: str | None = None) -> Tensor:
    return call(OPS["sigmoid"], [float_arg("sigmoid", x)], {})


def _relu_grad(node: Any, gouts: list) -> list:
    """dy where the output is not 0 (x > 0, or NaN, which passes its gradient): from the saved
    output, nothing re-run."""
    return [M.where(node.out() == 0, 0, gouts[0])]


@composite("relu", sharding=_sh.elementwise(), infer=same_meta, grad=_relu_grad, lower=_RELU)
def relu_decomposition(x: Tensor) -> Tensor:
    """max(x, 0) as where(x <= 0, 0, x): NaN stays NaN and passes its gradient."""
    return M.where(x <= 0, 0, x)


@composite("relu6", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def relu6_decomposition(x: Tensor) -> Tensor:
    return M.where(x <= 0, 0, M.where(x >= 6, 6, x))


@composite("leaky_relu", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def leaky_relu_decomposition(x: Tensor, negative_slope: float) -> Tensor:
    return M.where(x > 0, x, x * negative_slope)


@composite("softplus", amp="deny", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def softplus_decomposition(x: Tensor, beta: float, threshold: float) -> Tensor:
    """log(1 + exp(beta x)) / beta, linear above ``threshold``, without overflow."""
    z = x * beta if beta != 1.0 else x
    soft = M.maximum(z, 0.0) + M.log(M.exp(-M.abs(z)) + 1.0)
    if beta != 1.0:
        soft = soft * (1.0 / beta)
    return M.where(z > threshold, x, soft)


@composite("hardtanh", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def hardtanh_decomposition(x: Tensor, min: float, max: float) -> Tensor:
    return M.clip(x, min, max)


def relu(x: Tensor, name: str | None = None) -> Tensor:
    """max(x, 0); NaN stays NaN and passes its gradient.

    As numpy and PyTorch; Paddle 3.3.1's cpu kernel gives 0, a difference kept on purpose
    (docs/user-guide.md).
    """
    return call(OPS["relu"], [tensor_arg("relu", x)], {})


def relu6(x: Tensor, name: str | None = None) -> Tensor:
    """min(max(x, 0), 6); NaN stays NaN."""
    return call(OPS["relu6"], [tensor_arg("relu6", x)], {})


def leaky_relu(x: Tensor, negative_slope: float = 0.01, name: str | None = None) -> Tensor:
    return call(OPS["leaky_relu"], [float_arg("leaky_relu", x)], {"negative_slope": float(negative_slope)})


def tanh(x: Tensor, name: str | None = None) -> Tensor:
    return M.tanh(x)


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0, name: str | None = None) -> Tensor:
    """log(1 + exp(beta x)) / beta, linear above ``threshold`` (Paddle's and PyTorch's form)."""
    return call(
        OPS["softplus"], [float_arg("softplus", x)], {"beta": float(beta), "threshold": float(threshold)}
    )


def hardtanh(x: Tensor, min: float = -1.0, max: float = 1.0, name: str | None = None) -> Tensor:
    return call(OPS["hardtanh"], [tensor_arg("hardtanh", x)], {"min": float(min), "max": float(max)})


_SELU_SCALE = 1.0507009873554804934193349852946


_SELU_ALPHA = 1.6732632423543772848170429916717


def _expm1_neg(x: Tensor) -> Tensor:
    """exp(min(x, 0)) - 1: the negative branch of elu, never overflowing on the positive side."""
    return M.exp(M.minimum(x, 0.0)) - 1.0


@composite("elu", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def elu_decomposition(x: Tensor, *, alpha: float) -> Tensor:
    """x where x > 0, else alpha (exp(x) - 1)."""
    return M.where(x > 0, x, _expm1_neg(x) * alpha)


@composite("selu", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def selu_decomposition(x: Tensor, *, scale: float, alpha: float) -> Tensor:
    """scale * (x where x > 0, else alpha (exp(x) - 1))."""
    return M.where(x > 0, x, _expm1_neg(x) * alpha) * scale


@composite("celu", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def celu_decomposition(x: Tensor, *, alpha: float) -> Tensor:
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1)); for alpha < 0 the exponent is positive
    where x < 0 (no clamp there: exp may overflow to the true limit, -inf)."""
    inner = x * (1.0 / alpha)
    return M.where(x > 0, x, (_expm1_neg(inner) if alpha > 0 else M.exp(inner) - 1.0) * alpha)


@composite("prelu", infer=same_meta)
def prelu_decomposition(x: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else weight * x (``weight`` already broadcast to x's rank)."""
    return M.where(x > 0, x, x * weight)


@composite("hardswish", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def hardswish_decomposition(x: Tensor) -> Tensor:
    """x * relu6(x + 3) / 6."""
    return x * M.clip(x + 3.0, 0.0, 6.0) * (1.0 / 6.0)


@composite("hardsigmoid", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def hardsigmoid_decomposition(x: Tensor, *, slope: float, offset: float) -> Tensor:
    """clip(slope * x + offset, 0, 1)."""
    return M.clip(x * slope + offset, 0.0, 1.0)


def _softplus(x: Tensor) -> Tensor:
    return M.maximum(x, 0.0) + M.log(M.exp(-M.abs(x)) + 1.0)


@composite("mish", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def mish_decomposition(x: Tensor) -> Tensor:
    """x * tanh(softplus(x))."""
    return x * M.tanh(_softplus(x))


@composite("softsign", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def softsign_decomposition(x: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return x / (M.abs(x) + 1.0)


@composite("tanhshrink", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def tanhshrink_decomposition(x: Tensor) -> Tensor:
    """x - tanh(x)."""
    return x - M.tanh(x)


@composite("hardshrink", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def hardshrink_decomposition(x: Tensor, *, threshold: float) -> Tensor:
    """x where |x| > threshold, else 0."""
    return M.where(M.abs(x) > threshold, x, 0.0)


@composite("softshrink", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def softshrink_decomposition(x: Tensor, *, threshold: float) -> Tensor:
    """x - threshold above it, x + threshold below -threshold, else 0."""
    return M.where(x > threshold, x - threshold, M.where(x < -threshold, x + threshold, 0.0))


@composite("thresholded_relu", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def thresholded_relu_decomposition(x: Tensor, *, threshold: float, value: float) -> Tensor:
    """x where x > threshold, else ``value``."""
    return M.where(x > threshold, x, value)


@composite("log_sigmoid", amp="deny", sharding=_sh.elementwise(), infer=same_meta, lower=_TRACED)
def log_sigmoid_decomposition(x: Tensor) -> Tensor:
    """-softplus(-x), computed without overflow."""
    return -_softplus(-x)


def _one(name: str, x: Tensor, attrs: dict[str, Any] | None = None) -> Tensor:
    return call(OPS[name], [float_arg(name, x)], attrs or {})


def elu(x: Tensor, alpha: float = 1.0, name: str | None = None) -> Tensor:
    return _one("elu", x, {"alpha": float(alpha)})


def selu(
    x: Tensor, scale: float = _SELU_SCALE, alpha: float = _SELU_ALPHA, name: str | None = None
) -> Tensor:
    if scale <= 1.0 or alpha < 0:
        raise OpArgumentError(
            f"[selu] scale must be > 1 and alpha >= 0 (Paddle's rule), got scale={scale}, alpha={alpha}"
        )
    return _one("selu", x, {"scale": float(scale), "alpha": float(alpha)})


def celu(x: Tensor, alpha: float = 1.0, name: str | None = None) -> Tensor:
    if alpha == 0:
        raise OpArgumentError("[celu] alpha must not be 0")
    return _one("celu", x, {"alpha": float(alpha)})


def prelu(x: Tensor, weight: Tensor, data_format: str = "NCHW", name: str | None = None) -> Tensor:
    """x where x > 0, else weight * x; ``weight`` has 1 element or one per channel (axis 1
    for NC..., the last axis for NHWC-style ``data_format``)."""
    x = float_arg("prelu", x)
    weight = tensor_arg("prelu", weight, "weight").astype(x.dtype)
    n = weight.numel()
    if n == 1:
        w = weight.reshape((1,) * max(x.ndim, 1))
    else:
        ch = 1 if data_format[1:2] == "C" else x.ndim - 1
        if x.ndim < 2 or x.shape[ch] != n:
            raise OpArgumentError(
                f"[prelu] weight has {n} elements but x {x.shape} has {x.shape[ch] if x.ndim >= 2 else 'no'} channels on axis {ch}; pass 1 or one per channel"
            )
        shp = [1] * x.ndim
        shp[ch] = n
        w = weight.reshape(tuple(shp))
    return call(OPS["prelu"], [x, w], {})


def hardswish(x: Tensor, name: str | None = None) -> Tensor:
    return _one("hardswish", x)


def hardsigmoid(x: Tensor, slope: float = 0.1666667, offset: float = 0.5, name: str | None = None) -> Tensor:
    """clip(slope * x + offset, 0, 1) (Paddle's default slope 1/6)."""
    return _one("hardsigmoid", x, {"slope": float(slope), "offset": float(offset)})


def mish(x: Tensor, name: str | None = None) -> Tensor:
    return _one("mish", x)


def softsign(x: Tensor, name: str | None = None) -> Tensor:
    return _one("softsign", x)


def tanhshrink(x: Tensor, name: str | None = None) -> Tensor:
    return _one("tanhshrink", x)


def hardshrink(x: Tensor, threshold: float = 0.5, name: str | None = None) -> Tensor:
    return _one("hardshrink", x, {"threshold": float(threshold)})


def softshrink(x: Tensor, threshold: float = 0.5, name: str | None = None) -> Tensor:
    if threshold < 0:
        raise OpArgumentError(f"[softshrink] threshold must be >= 0, got {threshold}")
    return _one("softshrink", x, {"threshold": float(threshold)})


def thresholded_relu(
    x: Tensor, threshold: float = 1.0, value: float = 0.0, name: str | None = None
) -> Tensor:
    return _one("thresholded_relu", x, {"threshold": float(threshold), "value": float(value)})


def log_sigmoid(x: Tensor, name: str | None = None) -> Tensor:
    return _one("log_sigmoid", x)


def glu(x: Tensor, axis: int = -1, name: str | None = None) -> Tensor:
    """a * sigmoid(b) with a, b the two halves of ``x`` along ``axis``."""
    x = float_arg("glu", x)
    ax = axis_arg("glu", axis, x.ndim)
    if x.shape[ax] % 2:
        raise OpArgumentError(f"[glu] the size of axis {ax} must be even, got {x.shape[ax]} (x {x.shape})")
    a, b = S.split(x, 2, axis=ax)
    return a * ((M.tanh(b * 0.5) + 1.0) * 0.5)


def gumbel_softmax(
    x: Tensor, temperature: float = 1.0, hard: bool = False, axis: int = -1, name: str | None = None
) -> Tensor:
    """softmax((x + g) / temperature) with g ~ Gumbel(0, 1) drawn from the framework's seeded
    generator; ``hard=True`` returns the one-hot of the argmax with the soft gradient
    (straight-through)."""
    x = float_arg("gumbel_softmax", x)
    if temperature <= 0:
        raise OpArgumentError(f"[gumbel_softmax] temperature must be > 0, got {temperature}")
    ax = axis_arg("gumbel_softmax", axis, x.ndim)
    u = _rand.uniform(x.shape, dtype=x.dtype, min=1e-10, max=1.0, device=x.device)
    g = -M.log(-M.log(u))
    y = softmax((x + g) * (1.0 / temperature), axis=ax)
    if not hard:
        return y
    idx = M.argmax(y, axis=ax, keepdim=True)
    shp = [1] * x.ndim
    shp[ax] = x.shape[ax]
    hard_y = M.cast(C.arange(x.shape[ax], device=x.device).reshape(tuple(shp)) == idx, x.dtype)
    return hard_y - y.detach() + y


def swiglu(x: Tensor, y: Tensor | None = None, name: str | None = None) -> Tensor:
    """silu(x) * y; without ``y``, silu(a) * b over the two halves a, b of ``x``'s last dim."""
    x = float_arg("swiglu", x)
    if y is None:
        if x.shape[-1] % 2:
            raise OpArgumentError(f"[swiglu] the last dim of x must be even without y, got shape {x.shape}")
        x, y = S.split(x, 2, axis=-1)
    return silu(x) * y


def maxout(x: Tensor, groups: int, axis: int = 1, name: str | None = None) -> Tensor:
    """The max over each run of ``groups`` consecutive channels of ``axis`` (C / groups channels out)."""
    x = float_arg("maxout", x)
    ax = axis_arg("maxout", axis, x.ndim)
    c = x.shape[ax]
    if groups < 1 or c % groups:
        raise OpArgumentError(f"[maxout] the {c} channels of axis {ax} do not split into groups of {groups}")
    shape = x.shape[:ax] + (c // groups, groups) + x.shape[ax + 1 :]
    return M.max(x.reshape(shape), axis=ax + 1)


def rrelu(
    x: Tensor,
    lower: float = 1.0 / 8.0,
    upper: float = 1.0 / 3.0,
    training: bool = True,
    name: str | None = None,
) -> Tensor:
    """x where x >= 0, a * x below, with a ~ U(lower, upper) per element in training, else
    (lower + upper) / 2 (randomized leaky ReLU)."""
    x = float_arg("rrelu", x)
    if not 0.0 <= lower <= upper:
        raise OpArgumentError(f"[rrelu] expected 0 <= lower <= upper, got {lower} and {upper}")
    if training:
        a = _rand.uniform(x.shape, dtype=x.dtype, min=lower, max=upper, device=x.device)
    else:
        a = (lower + upper) / 2.0
    return M.where(x >= 0, x, x * a)
