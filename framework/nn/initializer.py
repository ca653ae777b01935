"""Weight initialisers (Paddle's ``paddle.nn.initializer``). Every one draws from the Philox
generator, so the same ``fw.seed`` gives the same weights on every device.

>>> import framework as fw
>>> _ = fw.seed(0)
>>> w = fw.nn.initializer.XavierUniform()((4, 3))
>>> w.shape
(4, 3)
"""

from __future__ import annotations

import math
from typing import Any

from adapter_api import OpArgumentError

from .._src.dtypes import as_dtype, get_default_dtype
from .._src.ops import creation as _c
from .._src.ops import random as _rand
from .._src.tensor import Tensor


def compute_fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """(fan_in, fan_out) as Paddle computes them: a 2-d weight is (in, out); a conv weight
    is (out, in, k...) with the receptive field multiplied in."""
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    rf = math.prod(shape[2:])
    return shape[1] * rf, shape[0] * rf


class Initializer:
    """Base class: ``init(shape, dtype=None, device=None) -> Tensor``."""

    def __call__(self, shape: Any, dtype: Any = None, device: Any = None) -> Tensor:
        shape = tuple(int(s) for s in shape)
        d = as_dtype(dtype) if dtype is not None else get_default_dtype()
        return self.sample(shape, d, device)

    def sample(self, shape: tuple[int, ...], dtype: Any, device: Any) -> Tensor:
        raise NotImplementedError("need sample")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class Constant(Initializer):
    def __init__(self, value: float = 0.0) -> None:
        self.value = float(value)

    def sample(self, shape, dtype, device):  # type: ignore[no-untyped-def]
        return _c.full(shape, self.value, dtype=dtype, device=device)


class Normal(Initializer):
    def __init__(self, mean: float = 0.0, std: float = 1.0) -> None:
        if std < 0:
            raise OpArgumentError(f"[Normal] std must be >= 0, got {std}")
        self.mean, self.std = float(mean), float(std)

    def sample(self, shape, dtype, device):  # type: ignore[no-untyped-def]
        return _rand.normal(self.mean, self.std, shape, dtype=dtype, device=device)


class Uniform(Initializer):
    def __init__(self, low: float = -1.0, high: float = 1.0) -> None:
        if not low < high:
            raise OpArgumentError(f"[Uniform] low must be below high, got low={low}, high={high}")
        self.low, self.high = float(low), float(high)

    def sample(self, shape, dtype, device):  # type: ignore[no-untyped-def]
        return _rand.uniform(shape, dtype=dtype, min=self.low, max=self.high, device=device)


class XavierUniform(Initializer):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""

    def __init__(self, fan_in: int | None = None, fan_out: int | None = None, gain: float = 1.0) -> None:
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def sample(self, shape, dtype, device):  # type: ignore[no-untyped-def]
        fi, fo = compute_fans(shape)
        fi = self.fan_in or fi
        fo = self.fan_out or fo
        a = self.gain * math.sqrt(6.0 / (fi + fo))
        return _rand.uniform(shape, dtype=dtype, min=-a, max=a, device=device)


class XavierNormal(Initializer):
    """N(0, gain * sqrt(2 / (fan_in + fan_out)))."""

    def __init__(self, fan_in: int | None = None, fan_out: int | None = None, gain: float = 1.0) -> None:
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def sample(self, shape, dtype, device):  # type: ignore[no-untyped-def]
        fi, fo = compute_fans(shape)
        std = self.gain * math.sqrt(2.0 / ((self.fan_in or fi) + (self.fan_out or fo)))
        return _rand.normal(0.0, std, shape, dtype=dtype, device=device)


def _gain(nonlinearity: str, negative_slope: float) -> float:
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity in ("linear", "sigmoid", "conv2d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3.0
    raise OpArgumentError(
        f"[initializer] unknown nonlinearity {nonlinearity!r}; use relu, leaky_relu, tanh, sigmoid or linear"
    )


class KaimingNormal(Initializer):
    """N(0, gain / sqrt(fan_in)), gain sqrt(2) for relu (He initialisation)."""

    def __init__(
        self, fan_in: int | None = None, negative_slope: float = 0.0, nonlinearity: str = "relu"
    ) -> None:
        self.fan_in, self.negative_slope, self.nonlinearity = fan_in, negative_slope, nonlinearity

    def sample(self, shape, dtype, device):  # type: ignore[no-untyped-def]
        fi = self.fan_in or compute_fans(shape)[0]
        std = _gain(self.nonlinearity, self.negative_slope) / math.sqrt(fi)
        return _rand.normal(0.0, std, shape, dtype=dtype, device=device)


class KaimingUniform(Initializer):
    """U(-a, a), a = gain * sqrt(3 / fan_in)."""

    def __init__(
        self, fan_in: int | None = None, negative_slope: float = 0.0, nonlinearity: str = "relu"
    ) -> None:
        self.fan_in, self.negative_slope, self.nonlinearity = fan_in, negative_slope, nonlinearity

    def sample(self, shape, dtype, device):  # type: ignore[no-untyped-def]
        fi = self.fan_in or compute_fans(shape)[0]
        a = _gain(self.nonlinearity, self.negative_slope) * math.sqrt(3.0 / fi)
        return _rand.uniform(shape, dtype=dtype, min=-a, max=a, device=device)


__all__ = [
    "Initializer",
    "Constant",
    "Normal",
    "Uniform",
    "XavierUniform",
    "XavierNormal",
    "KaimingNormal",
    "KaimingUniform",
    "compute_fans",
]
