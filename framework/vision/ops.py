"""Paddle's ``paddle.vision.ops``: the convolution block the model zoo is built from.

:class:`ConvNormActivation` is Conv2D, a norm layer and an activation in one Sequential.

>>> import framework as fw
>>> block = fw.vision.ops.ConvNormActivation(3, 8, kernel_size=3, stride=2)
>>> block(fw.ones([1, 3, 8, 8])).shape
(1, 8, 4, 4)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import nn

__all__ = ["ConvNormActivation"]


class ConvNormActivation(nn.Sequential):
    """Conv2D, norm layer and activation in one block.

    Conv2D, then a norm layer, then an activation, as one ``Sequential`` (sublayers
    ``0``, ``1``, ``2``: the names Paddle's state_dicts use).

    ``padding`` defaults to ``(kernel_size - 1) // 2 * dilation`` (the output keeps the size
    for stride 1); the convolution has a bias only where there is no norm layer (``bias=None``)
    and ``norm_layer=None`` / ``activation_layer=None`` leave that stage out.

    >>> import framework as fw
    >>> block = fw.vision.ops.ConvNormActivation(4, 4, groups=4, activation_layer=fw.nn.ReLU6)
    >>> [type(layer).__name__ for layer in block]
    ['Conv2D', 'BatchNorm2D', 'ReLU6']
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any = 3,
        stride: Any = 1,
        padding: Any = None,
        groups: int = 1,
        norm_layer: Callable[..., nn.Layer] | None = nn.BatchNorm2D,
        activation_layer: Callable[..., nn.Layer] | None = nn.ReLU,
        dilation: int = 1,
        bias: bool | None = None,
    ) -> None:
        if padding is None:
            padding = (kernel_size - 1) // 2 * dilation
        with_bias = norm_layer is None if bias is None else bool(bias)
        stages: list[nn.Layer] = [
            nn.Conv2D(
                in_channels,
                out_channels,
                kernel_size,
                stride,
                padding,
                dilation=dilation,
                groups=groups,
                bias_attr=None if with_bias else False,
            )
        ]
        if norm_layer is not None:
            stages.append(norm_layer(out_channels))
        if activation_layer is not None:
            stages.append(activation_layer())
        super().__init__(*stages)
