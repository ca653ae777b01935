"""More built-in layers (Paddle names): activations, 1-d/3-d and transposed convolutions,
1-d and adaptive pools, resizing and padding, batch/group/instance/local-response norms,
containers (LayerDict), Bilinear, Unflatten and the remaining losses. Each is a thin wrapper
over :mod:`framework.nn.functional`."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .. import _world
from .._src.ops import creation as _C
from .._src.ops.indexing import index_select
from .._src.tensor import Tensor, to_tensor
from . import functional as F
from . import initializer as I
from .layer import Layer


# -- activations ------------------------------------------------------------------------------
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
        self.weight = self.create_parameter(
            (num_parameters,), weight_attr, default_initializer=I.Constant(init)
        )

    def forward(self, x: Tensor) -> Tensor:
        return F.prelu(x, self.weight, self.data_format)


# -- convolution ------------------------------------------------------------------------------
def _ksize(name: str, k: Any, n: int) -> tuple[int, ...]:
    t = (int(k),) * n if isinstance(k, int) else tuple(int(v) for v in k)
    if len(t) != n or min(t) < 1:
        raise OpArgumentError(f"[{name}] kernel_size must be a positive int or {n} of them, got {k!r}")
    return t


class _ConvNd(Layer):
    _nd = 2
    _transposed = False
    _fn = "conv2d"

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        output_padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        padding_mode: str = "zeros",
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str | None = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        if padding_mode != "zeros":
            raise OpArgumentError(f"[{name}] padding_mode {padding_mode!r} is not supported; only 'zeros'")
        if not isinstance(groups, int) or groups < 1 or in_channels % groups or out_channels % groups:
            raise OpArgumentError(
                f"[{name}] groups={groups!r} must divide in_channels={in_channels} and out_channels={out_channels}"
            )
        k = _ksize(name, kernel_size, self._nd)
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
        self.stride, self.padding, self.output_padding, self.dilation, self.groups = (
            stride,
            padding,
            output_padding,
            dilation,
            groups,
        )
        self.data_format = data_format
        shape = (
            (in_channels, out_channels // groups)
            if self._transposed
            else (out_channels, in_channels // groups)
        ) + k
        fan_in = (out_channels if self._transposed else in_channels) // groups * int(np.prod(k))
        self.weight = self.create_parameter(shape, weight_attr, default_initializer=I.KaimingNormal(fan_in))
        bound = 1.0 / math.sqrt(fan_in)
        self.bias = self.create_parameter(
            (out_channels,), bias_attr, is_bias=True, default_initializer=I.Uniform(-bound, bound)
        )

    def forward(self, x: Tensor, output_size: Any = None) -> Tensor:
        fn = getattr(F, self._fn)
        kw = {} if self.data_format is None else {"data_format": self.data_format}
        if self._transposed:
            return fn(
                x,
                self.weight,
                self.bias,
                self.stride,
                self.padding,
                self.output_padding,
                dilation=self.dilation,
                groups=self.groups,
                output_size=output_size,
                **kw,
            )
        return fn(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups, **kw)

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def _conv_class(cls_name: str, nd: int, transposed: bool, fn: str, doc: str) -> type[Layer]:
    if transposed:

        def __init__(
            self,
            in_channels,
            out_channels,
            kernel_size,
            stride=1,
            padding=0,
            output_padding=0,
            groups=1,
            dilation=1,
            weight_attr=None,
            bias_attr=None,
            data_format=None,
        ):  # type: ignore[no-untyped-def]  # noqa: E501
            _ConvNd.__init__(
                self,
                in_channels,
                out_channels,
                kernel_size,
                stride,
                padding,
                output_padding,
                dilation,
                groups,
                "zeros",
                weight_attr,
                bias_attr,
                data_format,
            )
    else:

        def __init__(
            self,
            in_channels,
            out_channels,
            kernel_size,
            stride=1,
            padding=0,
            dilation=1,
            groups=1,
            padding_mode="zeros",
            weight_attr=None,
            bias_attr=None,
            data_format=None,
        ):  # type: ignore[no-untyped-def]  # noqa: E501
            _ConvNd.__init__(
                self,
                in_channels,
                out_channels,
                kernel_size,
                stride,
                padding,
                0,
                dilation,
                groups,
                padding_mode,
                weight_attr,
                bias_attr,
                data_format,
            )

    return type(
        cls_name,
        (_ConvNd,),
        {"_nd": nd, "_transposed": transposed, "_fn": fn, "__init__": __init__, "__doc__": doc},
    )


Conv1D = _conv_class(
    "Conv1D", 1, False, "conv1d", "1-d convolution of (N, C, L); weight (out, in/groups, k)."
)
Conv3D = _conv_class(
    "Conv3D", 3, False, "conv3d", "3-d convolution of NCDHW; weight (out, in/groups, kd, kh, kw)."
)
Conv1DTranspose = _conv_class(
    "Conv1DTranspose", 1, True, "conv1d_transpose", "Transposed 1-d convolution; weight (in, out/groups, k)."
)
Conv2DTranspose = _conv_class(
    "Conv2DTranspose",
    2,
    True,
    "conv2d_transpose",
    "Transposed 2-d convolution; weight (in, out/groups, kh, kw).",
)


# -- pooling, resizing, padding ---------------------------------------------------------------
class MaxPool1D(Layer):
    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        return_mask: bool = False,
        ceil_mode: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.return_mask, self.ceil_mode = (
            kernel_size,
            stride,
            padding,
            return_mask,
            ceil_mode,
        )

    def forward(self, x: Tensor) -> Tensor:
        return F.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.return_mask, self.ceil_mode)


class AvgPool1D(Layer):
    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        exclusive: bool = True,
        ceil_mode: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.exclusive, self.ceil_mode = (
            kernel_size,
            stride,
            padding,
            exclusive,
            ceil_mode,
        )

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.exclusive, self.ceil_mode)


class AdaptiveAvgPool1D(Layer):
    def __init__(self, output_size: int, name: str | None = None) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(x, self.output_size)


class AdaptiveMaxPool2D(Layer):
    def __init__(self, output_size: Any, return_mask: bool = False, name: str | None = None) -> None:
        super().__init__()
        self.output_size, self.return_mask = output_size, return_mask

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_max_pool2d(x, self.output_size, self.return_mask)


class Upsample(Layer):
    """:func:`~framework.nn.functional.interpolate` as a layer."""

    def __init__(
        self,
        size: Any = None,
        scale_factor: Any = None,
        mode: str = "nearest",
        align_corners: bool = False,
        align_mode: int = 0,
        data_format: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.size, self.scale_factor, self.mode, self.align_corners, self.align_mode, self.data_format = (
            size,
            scale_factor,
            mode,
            align_corners,
            align_mode,
            data_format,
        )

    def forward(self, x: Tensor) -> Tensor:
        return F.interpolate(
            x, self.size, self.scale_factor, self.mode, self.align_corners, self.align_mode, self.data_format
        )


class PixelShuffle(Layer):
    def __init__(self, upscale_factor: int, data_format: str = "NCHW", name: str | None = None) -> None:
        super().__init__()
        self.upscale_factor, self.data_format = upscale_factor, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.pixel_shuffle(x, self.upscale_factor, self.data_format)


def _pad_index(n: int, before: int, after: int, mode: str) -> np.ndarray:
    """Source index for each padded position of an axis of size n."""
    i = np.arange(-before, n + after)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    if mode == "circular":
        return i % n
    period = 2 * (n - 1)  # reflect: mirror without repeating the edge
    j = np.abs(i) % period if period else np.zeros_like(i)
    return np.where(j >= n, period - j, j)


class Pad2D(Layer):
    """Pad the last two dims of NCHW ``x``: ``padding`` is an int or [left, right, top,
    bottom]; ``mode`` is constant, reflect, replicate or circular."""

    def __init__(
        self,
        padding: Any,
        mode: str = "constant",
        value: float = 0.0,
        data_format: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__()
        p = [int(padding)] * 4 if isinstance(padding, int) else [int(v) for v in padding]
        if len(p) != 4 or min(p) < 0:
            raise OpArgumentError(
                f"[Pad2D] padding must be an int or 4 non-negative ints [left, right, top, bottom], got {padding!r}"
            )
        if mode not in ("constant", "reflect", "replicate", "circular"):
            raise OpArgumentError(
                f"[Pad2D] mode must be constant, reflect, replicate or circular, got {mode!r}"
            )
        if data_format not in ("NCHW", "NHWC"):
            raise OpArgumentError(f"[Pad2D] data_format must be NCHW or NHWC, got {data_format!r}")
        self.padding, self.mode, self.value, self.data_format = p, mode, value, data_format

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 4:
            raise OpArgumentError(f"[Pad2D] x must be 4-d, got shape {x.shape}")
        if self.data_format == "NHWC":
            x = x.transpose((0, 3, 1, 2))
        left, right, top, bottom = self.padding
        if self.mode == "constant":
            y = F.pad(x, [left, right, top, bottom], value=self.value)
        else:
            y = x
            for ax, (b, a) in ((2, (top, bottom)), (3, (left, right))):
                n = x.shape[ax]
                if self.mode == "reflect" and max(a, b) >= n:
                    raise OpArgumentError(
                        f"[Pad2D] reflect padding {max(a, b)} must be smaller than the size {n} of axis {ax}"
                    )
                idx = to_tensor(_pad_index(n, b, a, self.mode), dtype="int64", device=x.device)
                y = index_select(y, idx, axis=ax)
        return y.transpose((0, 2, 3, 1)) if self.data_format == "NHWC" else y


class Dropout2D(Layer):
    def __init__(self, p: float = 0.5, data_format: str = "NCHW", name: str | None = None) -> None:
        super().__init__()
        self.p, self.data_format = p, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout2d(x, self.p, self.training, self.data_format)


class Unflatten(Layer):
    """Split ``axis`` into ``shape``."""

    def __init__(self, axis: int, shape: Any, name: str | None = None) -> None:
        super().__init__()
        self.axis, self.shape = axis, tuple(int(s) for s in shape)

    def forward(self, x: Tensor) -> Tensor:
        ax = self.axis % x.ndim
        return x.reshape(x.shape[:ax] + self.shape + x.shape[ax + 1 :])


class Bilinear(Layer):
    """y[k] = x1 @ weight[k] @ x2 + bias[k]; weight (out_features, in1_features, in2_features)."""

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        weight_attr: Any = None,
        bias_attr: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        bound = 1.0 / math.sqrt(in1_features)
        self.weight = self.create_parameter(
            (out_features, in1_features, in2_features),
            weight_attr,
            default_initializer=I.Uniform(-bound, bound),
        )
        self.bias = self.create_parameter(
            (1, out_features), bias_attr, is_bias=True, default_initializer=I.Uniform(-bound, bound)
        )

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        # (N, 1, 1, in1) @ (1, out, in1, in2) -> (N, out, 1, in2); times x2 and summed over in2
        t = x1.unsqueeze(1).unsqueeze(1).matmul(self.weight.unsqueeze(0)).squeeze(2)
        y = (t * x2.unsqueeze(1)).sum(-1)
        return y + self.bias if self.bias is not None else y


# -- normalisation ----------------------------------------------------------------------------
class _BatchNormBase(Layer):
    _formats: tuple[str, ...] = ("NCHW", "NHWC")

    def __init__(
        self,
        num_features: int,
        momentum: float = 0.9,
        epsilon: float = 1e-5,
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str | None = None,
        use_global_stats: bool | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        fmt = data_format or self._formats[0]
        if fmt not in self._formats:
            raise OpArgumentError(
                f"[{type(self).__name__}] data_format must be one of {self._formats}, got {fmt!r}"
            )
        self.num_features, self.momentum, self.epsilon, self.data_format, self.use_global_stats = (
            num_features,
            momentum,
            epsilon,
            fmt,
            use_global_stats,
        )
        self.weight = self.create_parameter((num_features,), weight_attr, default_initializer=I.Constant(1.0))
        self.bias = self.create_parameter((num_features,), bias_attr, is_bias=True)
        self.register_buffer("_mean", _C.zeros((num_features,)))
        self.register_buffer("_variance", _C.ones((num_features,)))

    def forward(self, x: Tensor) -> Tensor:
        return F.batch_norm(
            x,
            self._mean,
            self._variance,
            self.weight,
            self.bias,
            self.training,
            self.momentum,
            self.epsilon,
            self.data_format,
            self.use_global_stats,
        )

    def extra_repr(self) -> str:
        return f"num_features={self.num_features}, momentum={self.momentum}, epsilon={self.epsilon}"


class BatchNorm1D(_BatchNormBase):
    """Batch norm of (N, C) or (N, C, L) input; running statistics in ``_mean``/``_variance``."""

    _formats = ("NCL", "NC", "NLC")


class BatchNorm2D(_BatchNormBase):
    """Batch norm of NCHW input; running statistics in ``_mean``/``_variance``."""

    _formats = ("NCHW", "NHWC")


class SyncBatchNorm(BatchNorm2D):
    """Paddle's SyncBatchNorm in one process: the statistics of the local batch (BatchNorm2D).

    Across processes the statistics are not synchronised; construct it only where the world
    has one process (``convert_sync_batchnorm`` returns the layer unchanged).
    """

    _formats = ("NCHW", "NHWC", "NCL", "NC", "NCDHW")

    def forward(self, x: Tensor) -> Tensor:
        if _world.is_initialized() and _world.get_world_size() > 1:
            raise OpArgumentError(
                f"[SyncBatchNorm] statistics are not synchronised across the {_world.get_world_size()} processes; "
                "use BatchNorm2D (per-process statistics) instead"
            )
        return super().forward(x)

    @classmethod
    def convert_sync_batchnorm(cls, layer: Layer) -> Layer:
        return layer


class GroupNorm(Layer):
    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        epsilon: float = 1e-5,
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise OpArgumentError(
                f"[GroupNorm] num_groups={num_groups} must divide num_channels={num_channels}"
            )
        self.num_groups, self.epsilon, self.data_format = num_groups, epsilon, data_format
        self.weight = self.create_parameter((num_channels,), weight_attr, default_initializer=I.Constant(1.0))
        self.bias = self.create_parameter((num_channels,), bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.group_norm(x, self.num_groups, self.epsilon, self.weight, self.bias, self.data_format)


class InstanceNorm2D(Layer):
    def __init__(
        self,
        num_features: int,
        epsilon: float = 1e-5,
        momentum: float = 0.9,
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.epsilon, self.momentum, self.data_format = epsilon, momentum, data_format
        self.weight = self.create_parameter((num_features,), weight_attr, default_initializer=I.Constant(1.0))
        self.bias = self.create_parameter((num_features,), bias_attr, is_bias=True)

    def forward(self, x: Tensor) -> Tensor:
        return F.instance_norm(
            x,
            weight=self.weight,
            bias=self.bias,
            momentum=self.momentum,
            eps=self.epsilon,
            data_format=self.data_format,
        )


class LocalResponseNorm(Layer):
    def __init__(
        self,
        size: int,
        alpha: float = 1e-4,
        beta: float = 0.75,
        k: float = 1.0,
        data_format: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k, self.data_format = size, alpha, beta, k, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k, self.data_format)


# -- containers -------------------------------------------------------------------------------
class LayerDict(Layer):
    """An ordered dict of layers whose parameters are registered (Paddle's ``LayerDict``)."""

    def __init__(self, sublayers: Mapping[str, Layer] | Iterable[tuple[str, Layer]] | None = None) -> None:
        super().__init__()
        if sublayers is not None:
            self.update(sublayers)

    def __getitem__(self, key: str) -> Layer:
        return self._sub_layers[key]

    def __setitem__(self, key: str, layer: Layer) -> None:
        self.add_sublayer(key, layer)

    def __delitem__(self, key: str) -> None:
        del self._sub_layers[key]

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self) -> Iterator[str]:
        return iter(self._sub_layers)

    def __contains__(self, key: object) -> bool:
        return key in self._sub_layers

    def clear(self) -> None:
        self._sub_layers.clear()

    def pop(self, key: str) -> Layer:
        return self._sub_layers.pop(key)

    def keys(self) -> Iterable[str]:
        return self._sub_layers.keys()

    def items(self) -> Iterable[tuple[str, Layer]]:
        return self._sub_layers.items()

    def values(self) -> Iterable[Layer]:
        return self._sub_layers.values()

    def update(self, sublayers: Mapping[str, Layer] | Iterable[tuple[str, Layer]]) -> None:
        items = sublayers.items() if isinstance(sublayers, (Mapping, OrderedDict)) else sublayers
        for k, v in items:
            if not isinstance(v, Layer):
                raise OpArgumentError(f"[LayerDict] value for '{k}' must be a Layer, got {type(v).__name__}")
            self.add_sublayer(str(k), v)


# -- losses -----------------------------------------------------------------------------------
class BCELoss(Layer):
    def __init__(
        self, weight: Tensor | None = None, reduction: str = "mean", name: str | None = None
    ) -> None:
        super().__init__()
        self.weight, self.reduction = weight, reduction

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, label, self.weight, self.reduction)


class SmoothL1Loss(Layer):
    def __init__(self, reduction: str = "mean", delta: float = 1.0, name: str | None = None) -> None:
        super().__init__()
        self.reduction, self.delta = reduction, delta

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, label, self.reduction, self.delta)


class NLLLoss(Layer):
    def __init__(
        self,
        weight: Tensor | None = None,
        ignore_index: int = -100,
        reduction: str = "mean",
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.weight, self.ignore_index, self.reduction = weight, ignore_index, reduction

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.nll_loss(input, label, self.weight, self.ignore_index, self.reduction)


class KLDivLoss(Layer):
    def __init__(self, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__()
        self.reduction, self.log_target = reduction, log_target

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return F.kl_div(input, label, self.reduction, self.log_target)


class MarginRankingLoss(Layer):
    def __init__(self, margin: float = 0.0, reduction: str = "mean", name: str | None = None) -> None:
        super().__init__()
        self.margin, self.reduction = margin, reduction

    def forward(self, input: Tensor, other: Tensor, label: Tensor) -> Tensor:
        return F.margin_ranking_loss(input, other, label, self.margin, self.reduction)


class CTCLoss(Layer):
    def __init__(self, blank: int = 0, reduction: str = "mean") -> None:
        super().__init__()
        self.blank, self.reduction = blank, reduction

    def forward(
        self,
        log_probs: Tensor,
        labels: Tensor,
        input_lengths: Tensor,
        label_lengths: Tensor,
        norm_by_times: bool = False,
    ) -> Tensor:
        return F.ctc_loss(
            log_probs, labels, input_lengths, label_lengths, self.blank, self.reduction, norm_by_times
        )
