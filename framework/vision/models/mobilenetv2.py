"""MobileNetV2: inverted residuals (1x1 expand, 3x3 depthwise, 1x1 linear projection)."""

from __future__ import annotations

from typing import Any

from ... import nn
from ..._src.ops import shape as S
from ..._src.tensor import Tensor
from ..ops import ConvNormActivation
from ._common import make_divisible, no_pretrained


class InvertedResidual(nn.Layer):
    """Expand by ``expand_ratio`` (ReLU6), depthwise 3x3 (ReLU6), project to ``oup`` (no
    activation), all in ``conv``; the input is added back where the shape allows."""

    def __init__(
        self, inp: int, oup: int, stride: int, expand_ratio: float, norm_layer: Any = nn.BatchNorm2D
    ) -> None:
        super().__init__()
        self.stride = stride
        hidden = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers: list[nn.Layer] = []
        if expand_ratio != 1:
            layers.append(
                ConvNormActivation(inp, hidden, 1, norm_layer=norm_layer, activation_layer=nn.ReLU6)
            )
        layers += [
            ConvNormActivation(
                hidden, hidden, stride=stride, groups=hidden, norm_layer=norm_layer, activation_layer=nn.ReLU6
            ),
            nn.Conv2D(hidden, oup, 1, 1, 0, bias_attr=False),
            norm_layer(oup),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


#: (expansion t, channels c, repeats n, first stride s) per stage
_SETTING = [
    [1, 16, 1, 1],
    [6, 24, 2, 2],
    [6, 32, 3, 2],
    [6, 64, 4, 2],
    [6, 96, 3, 1],
    [6, 160, 3, 2],
    [6, 320, 1, 1],
]


class MobileNetV2(nn.Layer):
    """MobileNetV2: inverted residuals.

    MobileNetV2 at width ``scale``: ``features`` (stem, 17 inverted residuals, 1x1 to
    1280 channels), a global average pool (``with_pool``) and dropout + Linear
    (``classifier``, where ``num_classes > 0``).

    >>> import framework as fw
    >>> fw.vision.models.MobileNetV2(scale=0.25, num_classes=4)(fw.ones([2, 3, 32, 32])).shape
    (2, 4)
    """

    def __init__(self, scale: float = 1.0, num_classes: int = 1000, with_pool: bool = True) -> None:
        super().__init__()
        self.num_classes, self.with_pool = num_classes, with_pool
        cin = make_divisible(32 * scale, 8)
        self.last_channel = make_divisible(1280 * max(1.0, scale), 8)
        features: list[nn.Layer] = [ConvNormActivation(3, cin, stride=2, activation_layer=nn.ReLU6)]
        for t, c, n, s in _SETTING:
            cout = make_divisible(c * scale, 8)
            for i in range(n):
                features.append(InvertedResidual(cin, cout, s if i == 0 else 1, expand_ratio=t))
                cin = cout
        features.append(ConvNormActivation(cin, self.last_channel, kernel_size=1, activation_layer=nn.ReLU6))
        self.features = nn.Sequential(*features)
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(self.last_channel, num_classes))

    def forward(self, x: Tensor) -> Tensor:
        x = self.features(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        return self.classifier(S.flatten(x, 1)) if self.num_classes > 0 else x


def mobilenet_v2(pretrained: bool = False, scale: float = 1.0, **kwargs: Any) -> MobileNetV2:
    """MobileNetV2 (``kwargs``: ``num_classes``, ``with_pool``).

    >>> import framework as fw
    >>> fw.vision.models.mobilenet_v2(scale=0.5, num_classes=4).last_channel
    1280
    """
    no_pretrained(f"mobilenet_v2(scale={scale})", pretrained)
    return MobileNetV2(scale=scale, **kwargs)
