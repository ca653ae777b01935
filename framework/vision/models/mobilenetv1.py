"""MobileNetV1: depthwise-separable convolutions, channel counts scaled by ``scale``."""

from __future__ import annotations

from typing import Any

from ... import nn
from ..._src.ops import shape as S
from ..._src.tensor import Tensor
from ..ops import ConvNormActivation
from ._common import no_pretrained


class DepthwiseSeparable(nn.Layer):
    """A 3x3 depthwise ConvNormActivation (``_depthwise_conv``) then a 1x1 pointwise one."""

    def __init__(
        self,
        in_channels: int,
        out_channels1: int,
        out_channels2: int,
        num_groups: int,
        stride: int,
        scale: float,
    ) -> None:
        super().__init__()
        mid = int(out_channels1 * scale)
        self._depthwise_conv = ConvNormActivation(
            in_channels, mid, kernel_size=3, stride=stride, padding=1, groups=int(num_groups * scale)
        )
        self._pointwise_conv = ConvNormActivation(mid, int(out_channels2 * scale), kernel_size=1, padding=0)

    def forward(self, x: Tensor) -> Tensor:
        return self._pointwise_conv(self._depthwise_conv(x))


#: (name, in channels, mid channels, out channels, stride) of the separable blocks at scale 1
_BLOCKS = (
    [("conv2_1", 32, 32, 64, 1), ("conv2_2", 64, 64, 128, 2), ("conv3_1", 128, 128, 128, 1)]
    + [("conv3_2", 128, 128, 256, 2), ("conv4_1", 256, 256, 256, 1), ("conv4_2", 256, 256, 512, 2)]
    + [(f"conv5_{i}", 512, 512, 512, 1) for i in range(1, 6)]
    + [("conv5_6", 512, 512, 1024, 2), ("conv6", 1024, 1024, 1024, 1)]
)


class MobileNetV1(nn.Layer):
    """MobileNetV1: depthwise-separable convolutions.

    MobileNetV1 at width ``scale``; a global average pool (``with_pool``) and a Linear
    classifier (``num_classes > 0``).

    >>> import framework as fw
    >>> fw.vision.models.MobileNetV1(scale=0.25, num_classes=4)(fw.ones([2, 3, 32, 32])).shape
    (2, 4)
    """

    def __init__(self, scale: float = 1.0, num_classes: int = 1000, with_pool: bool = True) -> None:
        super().__init__()
        self.scale, self.num_classes, self.with_pool = scale, num_classes, with_pool
        self.conv1 = ConvNormActivation(3, int(32 * scale), kernel_size=3, stride=2, padding=1)
        self.dwsl = [
            self.add_sublayer(name, DepthwiseSeparable(int(cin * scale), mid, cout, mid, stride, scale))
            for name, cin, mid, cout, stride in _BLOCKS
        ]
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.fc = nn.Linear(int(1024 * scale), num_classes)

    def forward(self, x: Tensor) -> Tensor:
        x = self.conv1(x)
        for block in self.dwsl:
            x = block(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        return self.fc(S.flatten(x, 1)) if self.num_classes > 0 else x


def mobilenet_v1(pretrained: bool = False, scale: float = 1.0, **kwargs: Any) -> MobileNetV1:
    """MobileNetV1 (``kwargs``: ``num_classes``, ``with_pool``).

    >>> import framework as fw
    >>> fw.vision.models.mobilenet_v1(scale=0.5, num_classes=4).fc.weight.shape
    (512, 4)
    """
    no_pretrained(f"mobilenet_v1(scale={scale})", pretrained)
    return MobileNetV1(scale=scale, **kwargs)
