"""Activations: relu, leaky_relu, gelu (exact and tanh), silu, sigmoid, tanh, softplus."""

from __future__ import annotations

import math as _m
from typing import Any

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import math as M
from .. import sharding as _sh
from ..base import OPS, call, composite
from ._common import float_arg, same_meta, tensor_arg

_SQRT1_2 = 1.0 / _m.sqrt(2.0)
_SQRT2_PI = _m.sqrt(2.0 / _m.pi)


@composite("gelu", sharding=_sh.elementwise(), infer=same_meta)
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


@composite("silu", sharding=_sh.elementwise(), infer=same_meta, grad=_silu_grad)
def silu_decomposition(x: Tensor) -> Tensor:
    """x / (1 + exp(-x)). NOTE: exp(-x) may overflow to inf, where the quotient is the
    exact limit (-0 for x below about -88 in float32); a generated kernel's vector expf is
    about 1.3x faster than its tanhf (SwiGLU's silu(gate) * up, 1024 x 172: 68 vs 89 us)."""
    return x / (M.exp(-x).astype(x.dtype) + 1.0)


@composite("sigmoid", sharding=_sh.elementwise(), infer=same_meta, grad=_sigmoid_grad)
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


def silu(x: Tensor, name: str | None = None) -> Tensor:
    """x * sigmoid(x) (also called swish)."""
    return call(OPS["silu"], [float_arg("silu", x)], {})


swish = silu


def sigmoid(x: Tensor, name: str | None = None) -> Tensor:
    return call(OPS["sigmoid"], [float_arg("sigmoid", x)], {})


@composite("relu", sharding=_sh.elementwise(), infer=same_meta)
def relu_decomposition(x: Tensor) -> Tensor:
    """max(x, 0) as where(x <= 0, 0, x): NaN stays NaN and passes its gradient."""
    return M.where(x <= 0, 0, x)


@composite("relu6", sharding=_sh.elementwise(), infer=same_meta)
def relu6_decomposition(x: Tensor) -> Tensor:
    return M.where(x <= 0, 0, M.where(x >= 6, 6, x))


@composite("leaky_relu", sharding=_sh.elementwise(), infer=same_meta)
def leaky_relu_decomposition(x: Tensor, negative_slope: float) -> Tensor:
    return M.where(x > 0, x, x * negative_slope)


@composite("softplus", amp="deny", sharding=_sh.elementwise(), infer=same_meta)
def softplus_decomposition(x: Tensor, beta: float, threshold: float) -> Tensor:
    """log(1 + exp(beta x)) / beta, linear above ``threshold``, without overflow."""
    z = x * beta if beta != 1.0 else x
    soft = M.maximum(z, 0.0) + M.log(M.exp(-M.abs(z)) + 1.0)
    if beta != 1.0:
        soft = soft * (1.0 / beta)
    return M.where(z > threshold, x, soft)


@composite("hardtanh", sharding=_sh.elementwise(), infer=same_meta)
def hardtanh_decomposition(x: Tensor, min: float, max: float) -> Tensor:
    return M.clip(x, min, max)


def relu(x: Tensor, name: str | None = None) -> Tensor:
    """max(x, 0); NaN stays NaN and passes its gradient (as in numpy, Paddle and PyTorch)."""
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
