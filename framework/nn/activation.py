"""Activation layers (Paddle names): ReLU, GELU, SiLU/Swish, Sigmoid, Tanh, LeakyReLU, Softmax,
PReLU (a learned slope) and the thin wrappers over :mod:`framework.nn.functional` that
``_activation`` builds (ReLU6, LogSoftmax, ELU, SELU, CELU, Hardswish, Hardsigmoid, Hardtanh,
Mish, Softplus, Softsign, GLU)."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from .._src.tensor import Tensor
from . import functional as F
from . import initializer as I
from .layer import Layer


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
    def __init__(self, inplace: bool = False, name: str | None = None) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.silu(x, self.inplace)


class Swish(SiLU):
    """x * sigmoid(x): :class:`SiLU` under Paddle's other name (never in place)."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__(False)


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


def _activation(cls_name: str, fname: str, doc: str, **defaults: Any) -> type[Layer]:
    """A layer class that calls ``F.<fname>`` with its constructor arguments (Paddle's names)."""
    names = list(defaults)

    def __init__(self: Layer, *args: Any, name: str | None = None, **kwargs: Any) -> None:
        Layer.__init__(self)
        if len(args) > len(names):
            raise OpArgumentError(
                f"[{type(self).__name__}] takes at most {len(names)} positional arguments ({', '.join(names) or 'none'}), got {len(args)}"
            )
        unknown = set(kwargs) - set(names)
        if unknown:
            raise OpArgumentError(
                f"[{type(self).__name__}] unknown arguments {sorted(unknown)}; expected {names}"
            )
        vals = dict(defaults)
        vals.update(zip(names, args))
        vals.update(kwargs)
        self._kw = vals

    def forward(self: Layer, x: Tensor) -> Tensor:
        return getattr(F, fname)(x, **self._kw)

    def extra_repr(self: Layer) -> str:
        return ", ".join(f"{k}={v}" for k, v in self._kw.items())

    return type(
        cls_name,
        (Layer,),
        {"__init__": __init__, "forward": forward, "extra_repr": extra_repr, "__doc__": doc},
    )


ReLU6 = _activation("ReLU6", "relu6", "min(max(x, 0), 6).")


LogSoftmax = _activation("LogSoftmax", "log_softmax", "log(softmax(x)) along ``axis``.", axis=-1)


ELU = _activation("ELU", "elu", "x > 0 ? x : alpha (exp(x) - 1).", alpha=1.0)


SELU = _activation(
    "SELU",
    "selu",
    "scale * elu(x, alpha) with SELU's constants.",
    scale=1.0507009873554805,
    alpha=1.6732632423543772,
)


CELU = _activation("CELU", "celu", "max(0, x) + min(0, alpha (exp(x / alpha) - 1)).", alpha=1.0)


Hardswish = _activation("Hardswish", "hardswish", "x * relu6(x + 3) / 6.")


Hardsigmoid = _activation("Hardsigmoid", "hardsigmoid", "clip(x / 6 + 0.5, 0, 1).")


Hardtanh = _activation("Hardtanh", "hardtanh", "clip(x, min, max).", min=-1.0, max=1.0)


Mish = _activation("Mish", "mish", "x * tanh(softplus(x)).")


Softplus = _activation(
    "Softplus", "softplus", "log(1 + exp(beta x)) / beta, linear above threshold.", beta=1.0, threshold=20.0
)


Softsign = _activation("Softsign", "softsign", "x / (1 + |x|).")


GLU = _activation("GLU", "glu", "a * sigmoid(b) over the two halves of ``axis``.", axis=-1)


class PReLU(Layer):
    """x > 0 ? x : weight * x with a learned slope (``num_parameters`` 1 or one per channel)."""

    def __init__(
        self,
        num_parameters: int = 1,
        init: float = 0.25,
        weight_attr: Any = None,
        data_format: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.data_format = data_format
        # Paddle's name (its state dict says "_weight")
        self._weight = self.create_parameter(
            (num_parameters,), weight_attr, default_initializer=I.Constant(init)
        )

    @property
    def weight(self) -> Tensor:
        """The learned slopes (``_weight``, Paddle's name)."""
        return self._weight

    def forward(self, x: Tensor) -> Tensor:
        return F.prelu(x, self._weight, self.data_format)


Hardshrink = _activation("Hardshrink", "hardshrink", "x where |x| > threshold, else 0.", threshold=0.5)


Softshrink = _activation(
    "Softshrink", "softshrink", "x - threshold * sign(x) where |x| > threshold, else 0.", threshold=0.5
)


Tanhshrink = _activation("Tanhshrink", "tanhshrink", "x - tanh(x).")


ThresholdedReLU = _activation(
    "ThresholdedReLU", "thresholded_relu", "x where x > threshold, else value.", threshold=1.0, value=0.0
)


LogSigmoid = _activation("LogSigmoid", "log_sigmoid", "log(sigmoid(x)), without overflow.")


Maxout = _activation("Maxout", "maxout", "the max over each run of ``groups`` channels.", groups=2, axis=1)


class Softmax2D(Layer):
    """softmax over the channels (dim -3) of a [N, C, H, W] or [C, H, W] ``x``."""

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in (3, 4):
            raise OpArgumentError(f"[Softmax2D] x must be 3-d or 4-d, got shape {x.shape}")
        return F.softmax(x, axis=-3)


class RReLU(Layer):
    """Randomized leaky ReLU: a slope drawn from U(lower, upper) per element in training, their
    mean in evaluation (:func:`F.rrelu`)."""

    def __init__(self, lower: float = 1.0 / 8.0, upper: float = 1.0 / 3.0, name: str | None = None) -> None:
        super().__init__()
        self.lower, self.upper = lower, upper

    def forward(self, x: Tensor) -> Tensor:
        return F.rrelu(x, self.lower, self.upper, self.training)
