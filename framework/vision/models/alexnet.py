"""AlexNet (Paddle's layout: 224x224 input, uniform initialisation scaled by each fan-in)."""

from __future__ import annotations

import math
from typing import Any

from ... import nn
from ..._src.ops import shape as S
from ..._src.tensor import Tensor
from ...nn import functional as F
from ._common import no_pretrained


def _uniform(fan_in: int) -> nn.initializer.Uniform:
    stdv = 1.0 / math.sqrt(fan_in)
    return nn.initializer.Uniform(-stdv, stdv)


def _conv(cin: int, cout: int, k: int, stride: int, padding: int, fan_in: int) -> nn.Conv2D:
    return nn.Conv2D(
        cin, cout, k, stride=stride, padding=padding, weight_attr=_uniform(fan_in), bias_attr=_uniform(fan_in)
    )


class ConvPoolLayer(nn.Layer):
    """Conv2D (``_conv``), ReLU where ``act="relu"``, then a 3x3 stride-2 max pool (``_pool``)."""

    def __init__(
        self,
        input_channels: int,
        output_channels: int,
        filter_size: int,
        stride: int,
        padding: int,
        stdv: float,
        groups: int = 1,
        act: str | None = None,
    ) -> None:
        super().__init__()
        self.relu = nn.ReLU() if act == "relu" else None
        init = nn.initializer.Uniform(-stdv, stdv)
        self._conv = nn.Conv2D(
            input_channels,
            output_channels,
            filter_size,
            stride=stride,
            padding=padding,
            groups=groups,
            weight_attr=init,
            bias_attr=init,
        )
        self._pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=0)

    def forward(self, inputs: Tensor) -> Tensor:
        x = self._conv(inputs)
        return self._pool(self.relu(x) if self.relu is not None else x)


class AlexNet(nn.Layer):
    """AlexNet, in Paddle's layout.

    AlexNet: five convolutions and, where ``num_classes > 0``, three Linear layers with
    dropout (Paddle's ``downscale_in_infer``); the classifier expects 224x224 input.

    >>> import framework as fw
    >>> fw.vision.models.AlexNet(num_classes=0)(fw.ones([1, 3, 64, 64])).shape
    (1, 256, 1, 1)
    """

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.num_classes = num_classes
        self._conv1 = ConvPoolLayer(3, 64, 11, 4, 2, 1.0 / math.sqrt(3 * 11 * 11), act="relu")
        self._conv2 = ConvPoolLayer(64, 192, 5, 1, 2, 1.0 / math.sqrt(64 * 5 * 5), act="relu")
        self._conv3 = _conv(192, 384, 3, 1, 1, 192 * 9)
        self._conv4 = _conv(384, 256, 3, 1, 1, 384 * 9)
        self._conv5 = ConvPoolLayer(256, 256, 3, 1, 1, 1.0 / math.sqrt(256 * 9), act="relu")
        if num_classes > 0:
            fan = 256 * 6 * 6
            self._drop1 = nn.Dropout(p=0.5, mode="downscale_in_infer")
            self._fc6 = nn.Linear(fan, 4096, weight_attr=_uniform(fan), bias_attr=_uniform(fan))
            self._drop2 = nn.Dropout(p=0.5, mode="downscale_in_infer")
            self._fc7 = nn.Linear(4096, 4096, weight_attr=_uniform(fan), bias_attr=_uniform(fan))
            self._fc8 = nn.Linear(4096, num_classes, weight_attr=_uniform(fan), bias_attr=_uniform(fan))

    def forward(self, inputs: Tensor) -> Tensor:
        x = self._conv2(self._conv1(inputs))
        x = self._conv5(F.relu(self._conv4(F.relu(self._conv3(x)))))
        if self.num_classes > 0:
            x = F.relu(self._fc6(self._drop1(S.flatten(x, 1))))
            x = self._fc8(F.relu(self._fc7(self._drop2(x))))
        return x


def alexnet(pretrained: bool = False, **kwargs: Any) -> AlexNet:
    """AlexNet (``kwargs``: ``num_classes``).

    >>> import framework as fw
    >>> fw.vision.models.alexnet(num_classes=0).num_classes
    0
    """
    no_pretrained("alexnet", pretrained)
    return AlexNet(**kwargs)
