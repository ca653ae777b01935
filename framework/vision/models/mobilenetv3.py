"""MobileNetV3 small and large: inverted residuals with squeeze-excitation and hard-swish."""

from __future__ import annotations

import functools
from typing import Any

from adapter_api import OpArgumentError

from ... import nn
from ..._src.ops import shape as S
from ..._src.tensor import Tensor
from ..ops import ConvNormActivation
from ._common import make_divisible, no_pretrained


class SqueezeExcitation(nn.Layer):
    """Channel attention: global average pool, 1x1 conv ``fc1``, activation, 1x1 conv
    ``fc2``, ``scale_activation``; the input scaled by the result."""

    def __init__(
        self,
        input_channels: int,
        squeeze_channels: int,
        activation: Any = nn.ReLU,
        scale_activation: Any = nn.Sigmoid,
    ) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2D(1)
        self.fc1 = nn.Conv2D(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2D(squeeze_channels, input_channels, 1)
        self.activation, self.scale_activation = activation(), scale_activation()

    def forward(self, input: Tensor) -> Tensor:
        s = self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(input)))))
        return s * input


_ACTIVATIONS = {"relu": nn.ReLU, "hardswish": nn.Hardswish, None: None}


class InvertedResidualConfig:
    """One block's settings; channel counts scaled by ``scale`` and rounded to multiples of 8."""

    def __init__(
        self,
        in_channels: int,
        kernel: int,
        expanded_channels: int,
        out_channels: int,
        use_se: bool,
        activation: str | None,
        stride: int,
        scale: float = 1.0,
    ) -> None:
        if activation not in _ACTIVATIONS:
            raise OpArgumentError(
                f"[MobileNetV3] activation must be 'relu', 'hardswish' or None, got {activation!r}"
            )
        self.in_channels = make_divisible(in_channels * scale, 8)
        self.kernel = kernel
        self.expanded_channels = make_divisible(expanded_channels * scale, 8)
        self.out_channels = make_divisible(out_channels * scale, 8)
        self.use_se, self.stride = use_se, stride
        self.activation_layer = _ACTIVATIONS[activation]

    @staticmethod
    def adjust_channels(channels: float, scale: float = 1.0) -> int:
        return make_divisible(channels * scale, 8)


class InvertedResidual(nn.Layer):
    """``expand_conv`` (where the width changes), depthwise ``bottleneck_conv``, optional
    ``mid_se``, ``linear_conv`` projection, residual where the shape allows."""

    def __init__(
        self,
        in_channels: int,
        expanded_channels: int,
        out_channels: int,
        filter_size: int,
        stride: int,
        use_se: bool,
        activation_layer: Any,
        norm_layer: Any,
    ) -> None:
        super().__init__()
        self.use_res_connect = stride == 1 and in_channels == out_channels
        self.use_se, self.expand = use_se, in_channels != expanded_channels
        act, norm = activation_layer, norm_layer
        if self.expand:
            self.expand_conv = ConvNormActivation(
                in_channels, expanded_channels, 1, 1, 0, norm_layer=norm, activation_layer=act
            )
        self.bottleneck_conv = ConvNormActivation(
            expanded_channels,
            expanded_channels,
            filter_size,
            stride,
            (filter_size - 1) // 2,
            groups=expanded_channels,
            norm_layer=norm,
            activation_layer=act,
        )
        if use_se:
            self.mid_se = SqueezeExcitation(
                expanded_channels, make_divisible(expanded_channels // 4), scale_activation=nn.Hardsigmoid
            )
        self.linear_conv = ConvNormActivation(
            expanded_channels, out_channels, 1, 1, 0, norm_layer=norm, activation_layer=None
        )

    def forward(self, x: Tensor) -> Tensor:
        y = self.expand_conv(x) if self.expand else x
        y = self.bottleneck_conv(y)
        if self.use_se:
            y = self.mid_se(y)
        y = self.linear_conv(y)
        return x + y if self.use_res_connect else y


class MobileNetV3(nn.Layer):
    """MobileNetV3 from its block ``config``: stem ``conv``, ``blocks``, ``lastconv`` (6x the
    last width), global average pool and a two-layer ``classifier`` (batch norm with
    epsilon 0.001 and momentum 0.99 throughout).

    >>> import framework as fw
    >>> fw.vision.models.MobileNetV3Small(scale=0.25, num_classes=4)(fw.ones([2, 3, 32, 32])).shape
    (2, 4)
    """

    def __init__(
        self,
        config: list[InvertedResidualConfig],
        last_channel: int,
        scale: float = 1.0,
        num_classes: int = 1000,
        with_pool: bool = True,
    ) -> None:
        super().__init__()
        self.config, self.scale, self.last_channel = config, scale, last_channel
        self.num_classes, self.with_pool = num_classes, with_pool
        self.firstconv_in_channels = config[0].in_channels
        self.lastconv_in_channels = config[-1].in_channels
        self.lastconv_out_channels = self.lastconv_in_channels * 6
        norm = functools.partial(nn.BatchNorm2D, epsilon=0.001, momentum=0.99)
        self.conv = ConvNormActivation(
            3, self.firstconv_in_channels, 3, 2, 1, norm_layer=norm, activation_layer=nn.Hardswish
        )
        self.blocks = nn.Sequential(
            *[
                InvertedResidual(
                    c.in_channels,
                    c.expanded_channels,
                    c.out_channels,
                    c.kernel,
                    c.stride,
                    c.use_se,
                    c.activation_layer,
                    norm,
                )
                for c in config
            ]
        )
        self.lastconv = ConvNormActivation(
            self.lastconv_in_channels,
            self.lastconv_out_channels,
            1,
            1,
            0,
            norm_layer=norm,
            activation_layer=nn.Hardswish,
        )
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.classifier = nn.Sequential(
                nn.Linear(self.lastconv_out_channels, last_channel),
                nn.Hardswish(),
                nn.Dropout(p=0.2),
                nn.Linear(last_channel, num_classes),
            )

    def forward(self, x: Tensor) -> Tensor:
        x = self.lastconv(self.blocks(self.conv(x)))
        if self.with_pool:
            x = self.avgpool(x)
        return self.classifier(S.flatten(x, 1)) if self.num_classes > 0 else x


#: (in, kernel, expanded, out, squeeze-excitation, activation, stride) per block
_SMALL = [
    (16, 3, 16, 16, True, "relu", 2),
    (16, 3, 72, 24, False, "relu", 2),
    (24, 3, 88, 24, False, "relu", 1),
    (24, 5, 96, 40, True, "hardswish", 2),
    (40, 5, 240, 40, True, "hardswish", 1),
    (40, 5, 240, 40, True, "hardswish", 1),
    (40, 5, 120, 48, True, "hardswish", 1),
    (48, 5, 144, 48, True, "hardswish", 1),
    (48, 5, 288, 96, True, "hardswish", 2),
    (96, 5, 576, 96, True, "hardswish", 1),
    (96, 5, 576, 96, True, "hardswish", 1),
]
_LARGE = [
    (16, 3, 16, 16, False, "relu", 1),
    (16, 3, 64, 24, False, "relu", 2),
    (24, 3, 72, 24, False, "relu", 1),
    (24, 5, 72, 40, True, "relu", 2),
    (40, 5, 120, 40, True, "relu", 1),
    (40, 5, 120, 40, True, "relu", 1),
    (40, 3, 240, 80, False, "hardswish", 2),
    (80, 3, 200, 80, False, "hardswish", 1),
    (80, 3, 184, 80, False, "hardswish", 1),
    (80, 3, 184, 80, False, "hardswish", 1),
    (80, 3, 480, 112, True, "hardswish", 1),
    (112, 3, 672, 112, True, "hardswish", 1),
    (112, 5, 672, 160, True, "hardswish", 2),
    (160, 5, 960, 160, True, "hardswish", 1),
    (160, 5, 960, 160, True, "hardswish", 1),
]


class MobileNetV3Small(MobileNetV3):
    """MobileNetV3-Small at width ``scale``.

    >>> import framework as fw
    >>> len(fw.vision.models.MobileNetV3Small(scale=0.5).blocks)
    11
    """

    def __init__(self, scale: float = 1.0, num_classes: int = 1000, with_pool: bool = True) -> None:
        config = [InvertedResidualConfig(*row, scale) for row in _SMALL]
        super().__init__(config, make_divisible(1024 * scale, 8), scale, num_classes, with_pool)


class MobileNetV3Large(MobileNetV3):
    """MobileNetV3-Large at width ``scale``.

    >>> import framework as fw
    >>> len(fw.vision.models.MobileNetV3Large(scale=0.5).blocks)
    15
    """

    def __init__(self, scale: float = 1.0, num_classes: int = 1000, with_pool: bool = True) -> None:
        config = [InvertedResidualConfig(*row, scale) for row in _LARGE]
        super().__init__(config, make_divisible(1280 * scale, 8), scale, num_classes, with_pool)


def mobilenet_v3_small(pretrained: bool = False, scale: float = 1.0, **kwargs: Any) -> MobileNetV3Small:
    """MobileNetV3-Small (``kwargs``: ``num_classes``, ``with_pool``).

    >>> import framework as fw
    >>> fw.vision.models.mobilenet_v3_small(scale=0.5, num_classes=4).last_channel
    512
    """
    no_pretrained(f"mobilenet_v3_small(scale={scale})", pretrained)
    return MobileNetV3Small(scale=scale, **kwargs)


def mobilenet_v3_large(pretrained: bool = False, scale: float = 1.0, **kwargs: Any) -> MobileNetV3Large:
    """MobileNetV3-Large (``kwargs``: ``num_classes``, ``with_pool``).

    >>> import framework as fw
    >>> fw.vision.models.mobilenet_v3_large(scale=0.5, num_classes=4).last_channel
    640
    """
    no_pretrained(f"mobilenet_v3_large(scale={scale})", pretrained)
    return MobileNetV3Large(scale=scale, **kwargs)
