"""Inception v3 (Paddle's layout: ConvNormActivation units, blocks A-E in one LayerList)."""

from __future__ import annotations

import math
from typing import Any

from ... import nn
from ..._src.ops import shape as S
from ..._src.tensor import Tensor
from ..ops import ConvNormActivation
from ._common import no_pretrained


def _cna(cin: int, cout: int, k: Any = 1, stride: int = 1, padding: Any = 0) -> ConvNormActivation:
    return ConvNormActivation(cin, cout, k, stride, padding, activation_layer=nn.ReLU)


def _avg3() -> nn.AvgPool2D:
    return nn.AvgPool2D(kernel_size=3, stride=1, padding=1, exclusive=False)


class InceptionStem(nn.Layer):
    """Five convolutions and two 3x3 stride-2 max pools: 299x299 -> 35x35x192."""

    def __init__(self) -> None:
        super().__init__()
        self.conv_1a_3x3 = _cna(3, 32, 3, 2)
        self.conv_2a_3x3 = _cna(32, 32, 3)
        self.conv_2b_3x3 = _cna(32, 64, 3, padding=1)
        self.max_pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=0)
        self.conv_3b_1x1 = _cna(64, 80, 1)
        self.conv_4a_3x3 = _cna(80, 192, 3)

    def forward(self, x: Tensor) -> Tensor:
        x = self.max_pool(self.conv_2b_3x3(self.conv_2a_3x3(self.conv_1a_3x3(x))))
        return self.max_pool(self.conv_4a_3x3(self.conv_3b_1x1(x)))


class InceptionA(nn.Layer):
    """1x1 | 1x1-5x5 | 1x1-3x3-3x3 | avg pool-1x1 (``pool_features`` channels)."""

    def __init__(self, num_channels: int, pool_features: int) -> None:
        super().__init__()
        self.branch1x1 = _cna(num_channels, 64)
        self.branch5x5_1 = _cna(num_channels, 48)
        self.branch5x5_2 = _cna(48, 64, 5, padding=2)
        self.branch3x3dbl_1 = _cna(num_channels, 64)
        self.branch3x3dbl_2 = _cna(64, 96, 3, padding=1)
        self.branch3x3dbl_3 = _cna(96, 96, 3, padding=1)
        self.branch_pool = _avg3()
        self.branch_pool_conv = _cna(num_channels, pool_features)

    def forward(self, x: Tensor) -> Tensor:
        b5 = self.branch5x5_2(self.branch5x5_1(x))
        b3 = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        bp = self.branch_pool_conv(self.branch_pool(x))
        return S.concat([self.branch1x1(x), b5, b3, bp], axis=1)


class InceptionB(nn.Layer):
    """Grid reduction: 3x3 stride 2 | 1x1-3x3-3x3 stride 2 | max pool stride 2."""

    def __init__(self, num_channels: int) -> None:
        super().__init__()
        self.branch3x3 = _cna(num_channels, 384, 3, 2)
        self.branch3x3dbl_1 = _cna(num_channels, 64)
        self.branch3x3dbl_2 = _cna(64, 96, 3, padding=1)
        self.branch3x3dbl_3 = _cna(96, 96, 3, 2)
        self.branch_pool = nn.MaxPool2D(kernel_size=3, stride=2)

    def forward(self, x: Tensor) -> Tensor:
        b3 = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        return S.concat([self.branch3x3(x), b3, self.branch_pool(x)], axis=1)


class InceptionC(nn.Layer):
    """Factorised 7x7: 1x1 | 1x1-1x7-7x1 | 1x1-7x1-1x7-7x1-1x7 | avg pool-1x1."""

    def __init__(self, num_channels: int, channels_7x7: int) -> None:
        super().__init__()
        c7 = channels_7x7
        self.branch1x1 = _cna(num_channels, 192)
        self.branch7x7_1 = _cna(num_channels, c7)
        self.branch7x7_2 = _cna(c7, c7, (1, 7), padding=(0, 3))
        self.branch7x7_3 = _cna(c7, 192, (7, 1), padding=(3, 0))
        self.branch7x7dbl_1 = _cna(num_channels, c7)
        self.branch7x7dbl_2 = _cna(c7, c7, (7, 1), padding=(3, 0))
        self.branch7x7dbl_3 = _cna(c7, c7, (1, 7), padding=(0, 3))
        self.branch7x7dbl_4 = _cna(c7, c7, (7, 1), padding=(3, 0))
        self.branch7x7dbl_5 = _cna(c7, 192, (1, 7), padding=(0, 3))
        self.branch_pool = _avg3()
        self.branch_pool_conv = _cna(num_channels, 192)

    def forward(self, x: Tensor) -> Tensor:
        b7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
        d = x
        for i in range(1, 6):
            d = getattr(self, f"branch7x7dbl_{i}")(d)
        bp = self.branch_pool_conv(self.branch_pool(x))
        return S.concat([self.branch1x1(x), b7, d, bp], axis=1)


class InceptionD(nn.Layer):
    """Grid reduction: 1x1-3x3 stride 2 | 1x1-1x7-7x1-3x3 stride 2 | max pool stride 2."""

    def __init__(self, num_channels: int) -> None:
        super().__init__()
        self.branch3x3_1 = _cna(num_channels, 192)
        self.branch3x3_2 = _cna(192, 320, 3, 2)
        self.branch7x7x3_1 = _cna(num_channels, 192)
        self.branch7x7x3_2 = _cna(192, 192, (1, 7), padding=(0, 3))
        self.branch7x7x3_3 = _cna(192, 192, (7, 1), padding=(3, 0))
        self.branch7x7x3_4 = _cna(192, 192, 3, 2)
        self.branch_pool = nn.MaxPool2D(kernel_size=3, stride=2)

    def forward(self, x: Tensor) -> Tensor:
        b3 = self.branch3x3_2(self.branch3x3_1(x))
        b7 = x
        for i in range(1, 5):
            b7 = getattr(self, f"branch7x7x3_{i}")(b7)
        return S.concat([b3, b7, self.branch_pool(x)], axis=1)


class InceptionE(nn.Layer):
    """Expanded filter bank: 1x1 | 1x1-(1x3, 3x1) | 1x1-3x3-(1x3, 3x1) | avg pool-1x1."""

    def __init__(self, num_channels: int) -> None:
        super().__init__()
        self.branch1x1 = _cna(num_channels, 320)
        self.branch3x3_1 = _cna(num_channels, 384)
        self.branch3x3_2a = _cna(384, 384, (1, 3), padding=(0, 1))
        self.branch3x3_2b = _cna(384, 384, (3, 1), padding=(1, 0))
        self.branch3x3dbl_1 = _cna(num_channels, 448)
        self.branch3x3dbl_2 = _cna(448, 384, 3, padding=1)
        self.branch3x3dbl_3a = _cna(384, 384, (1, 3), padding=(0, 1))
        self.branch3x3dbl_3b = _cna(384, 384, (3, 1), padding=(1, 0))
        self.branch_pool = _avg3()
        self.branch_pool_conv = _cna(num_channels, 192)

    def forward(self, x: Tensor) -> Tensor:
        b3 = self.branch3x3_1(x)
        b3 = S.concat([self.branch3x3_2a(b3), self.branch3x3_2b(b3)], axis=1)
        d = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        d = S.concat([self.branch3x3dbl_3a(d), self.branch3x3dbl_3b(d)], axis=1)
        bp = self.branch_pool_conv(self.branch_pool(x))
        return S.concat([self.branch1x1(x), b3, d, bp], axis=1)


class InceptionV3(nn.Layer):
    """Inception v3, in Paddle's layout.

    Inception v3: ``inception_stem``, eleven blocks in ``inception_block_list`` (A x3, B,
    C x4, D, E x2), global average pool, dropout and Linear ``fc`` from 2048 features.

    >>> import framework as fw
    >>> len(fw.vision.models.InceptionV3(num_classes=4).inception_block_list)
    11
    """

    def __init__(self, num_classes: int = 1000, with_pool: bool = True) -> None:
        super().__init__()
        self.num_classes, self.with_pool = num_classes, with_pool
        self.inception_stem = InceptionStem()
        blocks: list[nn.Layer] = [InceptionA(c, p) for c, p in ((192, 32), (256, 64), (288, 64))]
        blocks.append(InceptionB(288))
        blocks += [InceptionC(768, c7) for c7 in (128, 160, 160, 192)]
        blocks.append(InceptionD(768))
        blocks += [InceptionE(c) for c in (1280, 2048)]
        self.inception_block_list = nn.LayerList(blocks)
        if with_pool:
            self.avg_pool = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.dropout = nn.Dropout(p=0.2, mode="downscale_in_infer")
            stdv = 1.0 / math.sqrt(2048.0)
            self.fc = nn.Linear(2048, num_classes, weight_attr=nn.initializer.Uniform(-stdv, stdv))

    def forward(self, x: Tensor) -> Tensor:
        x = self.inception_stem(x)
        for block in self.inception_block_list:
            x = block(x)
        if self.with_pool:
            x = self.avg_pool(x)
        if self.num_classes > 0:
            x = self.fc(self.dropout(S.reshape(x, [-1, 2048])))
        return x


def inception_v3(pretrained: bool = False, **kwargs: Any) -> InceptionV3:
    """Inception v3 (``kwargs``: ``num_classes``, ``with_pool``); at least 75x75 input.

    >>> import framework as fw
    >>> fw.vision.models.inception_v3(num_classes=4).fc.weight.shape
    (2048, 4)
    """
    no_pretrained("inception_v3", pretrained)
    return InceptionV3(**kwargs)
