"""Convolution layers (Paddle names): Conv1D, Conv2D, Conv3D, Conv1DTranspose, Conv2DTranspose
and Conv3DTranspose, all one ``_ConvNd``."""

from __future__ import annotations

import math
from typing import Any

from adapter_api import OpArgumentError

from .._src.tensor import Tensor
from . import functional as F
from . import initializer as I
from .layer import Layer


def _attr(attr: Any) -> Any:
    """Paddle's ``weight_attr``/``bias_attr``: ``True`` is the default parameter (``None``)."""
    return None if attr is True else attr


def _paddle_init(in_channels: int, k: tuple[int, ...]) -> I.Initializer:
    """Paddle's default convolution weight: N(0, sqrt(2 / (in_channels * prod(k)))), the
    fan counting every input channel whatever ``groups`` is; biases start at zero."""
    return I.Normal(0.0, math.sqrt(2.0 / (in_channels * math.prod(k))))


def _ksize(name: str, k: Any, n: int) -> tuple[int, ...]:
    t = (int(k),) * n if isinstance(k, int) else tuple(int(v) for v in k)
    if len(t) != n or min(t) < 1:
        raise OpArgumentError(f"[{name}] kernel_size must be a positive int or {n} of them, got {k!r}")
    return t


#: the channels-first layout per spatial rank (the functionals' default)
_LAYOUT = {1: "NCL", 2: "NCHW", 3: "NCDHW"}


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
        weight_attr, bias_attr = _attr(weight_attr), _attr(bias_attr)
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
        init = I.XavierUniform() if self._transposed else _paddle_init(in_channels, k)
        self.weight = self.create_parameter(shape, weight_attr, default_initializer=init)
        self.bias = self.create_parameter((out_channels,), bias_attr, is_bias=True)

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
        """Paddle's: channels and kernel, then what differs from the defaults, then the layout."""
        n = self._nd
        parts = [f"{self.in_channels}, {self.out_channels}, kernel_size={list(self.kernel_size)}"]
        stride, dilation = (list(_ksize("repr", v, n)) for v in (self.stride, self.dilation))
        if stride != [1] * n:
            parts.append(f"stride={stride}")
        for what in ("padding", "output_padding"):
            if getattr(self, what) != 0:
                parts.append(f"{what}={getattr(self, what)}")
        if dilation != [1] * n:
            parts.append(f"dilation={dilation}")
        if self.groups != 1:
            parts.append(f"groups={self.groups}")
        parts.append(f"data_format={self.data_format or _LAYOUT[n]}")
        return ", ".join(parts)


def _conv_class(cls_name: str, nd: int, transposed: bool, fn: str, doc: str) -> type[Layer]:
    if transposed and nd > 1:

        def __init__(
            self,
            in_channels,
            out_channels,
            kernel_size,
            stride=1,
            padding=0,
            output_padding=0,
            dilation=1,
            groups=1,
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
    elif transposed:  # Paddle's Conv1DTranspose takes groups before dilation

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


Conv3DTranspose = _conv_class(
    "Conv3DTranspose",
    3,
    True,
    "conv3d_transpose",
    "Transposed 3-d convolution of NCDHW; weight (in, out/groups, kd, kh, kw).",
)


class Conv2D(_ConvNd):
    """NCHW 2-d convolution; weight ``(out_channels, in_channels/groups, kh, kw)`` drawn from
    N(0, sqrt(2 / (in_channels * kh * kw))) and a zero bias by default, as Paddle.

    >>> import framework as fw
    >>> conv = fw.nn.Conv2D(3, 8, 3, padding=1)
    >>> conv(fw.ones([1, 3, 5, 5])).shape, float(conv.bias.abs().sum())
    ((1, 8, 5, 5), 0.0)
    """

    _fn = "conv2d"

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        padding_mode: str = "zeros",
        weight_attr: Any = None,
        bias_attr: Any = None,
        data_format: str = "NCHW",
    ) -> None:
        super().__init__(
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
