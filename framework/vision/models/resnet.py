"""ResNet 18/34/50/101/152, ResNeXt (grouped bottlenecks) and Wide ResNet (wider bottlenecks)."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ... import nn
from ..._src.ops import shape as S
from ..._src.tensor import Tensor
from ._common import no_pretrained


class BasicBlock(nn.Layer):
    """Two 3x3 conv/batch-norm pairs and the identity (or ``downsample``) shortcut."""

    expansion = 1

    def __init__(
        self,
        inplanes: int,
        planes: int,
        stride: int = 1,
        downsample: nn.Layer | None = None,
        groups: int = 1,
        base_width: int = 64,
        dilation: int = 1,
        norm_layer: Any = None,
    ) -> None:
        super().__init__()
        norm = norm_layer or nn.BatchNorm2D
        if dilation > 1:
            raise OpArgumentError(f"[BasicBlock] dilation must be 1, got {dilation}")
        self.conv1 = nn.Conv2D(inplanes, planes, 3, padding=1, stride=stride, bias_attr=False)
        self.bn1 = norm(planes)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2D(planes, planes, 3, padding=1, bias_attr=False)
        self.bn2 = norm(planes)
        self.downsample, self.stride = downsample, stride

    def forward(self, x: Tensor) -> Tensor:
        out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(out + shortcut)


class BottleneckBlock(nn.Layer):
    """1x1 reduce, 3x3 (grouped: ResNeXt), 1x1 expand by 4, each with batch norm, plus the
    shortcut; the inner width is ``planes * base_width / 64 * groups``."""

    expansion = 4

    def __init__(
        self,
        inplanes: int,
        planes: int,
        stride: int = 1,
        downsample: nn.Layer | None = None,
        groups: int = 1,
        base_width: int = 64,
        dilation: int = 1,
        norm_layer: Any = None,
    ) -> None:
        super().__init__()
        norm = norm_layer or nn.BatchNorm2D
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = nn.Conv2D(inplanes, width, 1, bias_attr=False)
        self.bn1 = norm(width)
        self.conv2 = nn.Conv2D(
            width,
            width,
            3,
            padding=dilation,
            stride=stride,
            groups=groups,
            dilation=dilation,
            bias_attr=False,
        )
        self.bn2 = norm(width)
        self.conv3 = nn.Conv2D(width, planes * self.expansion, 1, bias_attr=False)
        self.bn3 = norm(planes * self.expansion)
        self.relu = nn.ReLU()
        self.downsample, self.stride = downsample, stride

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(out + shortcut)


#: blocks per stage for each depth
LAYERS = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3], 152: [3, 8, 36, 3]}


class ResNet(nn.Layer):
    """ResNet, ResNeXt and Wide ResNet.

    ResNet of ``depth`` built from ``block``: a 7x7 stem, four stages (``layer1..4``), a
    global average pool (``with_pool``) and a Linear classifier (``num_classes > 0``);
    ``width``/``groups`` make Wide ResNet and ResNeXt.

    >>> import framework as fw
    >>> from framework.vision.models.resnet import BasicBlock
    >>> fw.vision.models.ResNet(BasicBlock, 18, num_classes=4)(fw.ones([2, 3, 32, 32])).shape
    (2, 4)
    """

    def __init__(
        self,
        block: type[BasicBlock | BottleneckBlock],
        depth: int = 50,
        width: int = 64,
        num_classes: int = 1000,
        with_pool: bool = True,
        groups: int = 1,
    ) -> None:
        super().__init__()
        if depth not in LAYERS:
            raise OpArgumentError(f"[ResNet] depth must be one of {sorted(LAYERS)}, got {depth!r}")
        self.groups, self.base_width, self.num_classes, self.with_pool = groups, width, num_classes, with_pool
        self._norm_layer = nn.BatchNorm2D
        self.inplanes, self.dilation = 64, 1
        self.conv1 = nn.Conv2D(3, 64, kernel_size=7, stride=2, padding=3, bias_attr=False)
        self.bn1 = nn.BatchNorm2D(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        counts = LAYERS[depth]
        self.layer1 = self._make_layer(block, 64, counts[0])
        self.layer2 = self._make_layer(block, 128, counts[1], stride=2)
        self.layer3 = self._make_layer(block, 256, counts[2], stride=2)
        self.layer4 = self._make_layer(block, 512, counts[3], stride=2)
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D((1, 1))
        if num_classes > 0:
            self.fc = nn.Linear(512 * block.expansion, num_classes)

    def _make_layer(
        self, block: type[BasicBlock | BottleneckBlock], planes: int, blocks: int, stride: int = 1
    ) -> nn.Sequential:
        out = planes * block.expansion
        downsample = None
        if stride != 1 or self.inplanes != out:
            downsample = nn.Sequential(
                nn.Conv2D(self.inplanes, out, 1, stride=stride, bias_attr=False), nn.BatchNorm2D(out)
            )
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, 1)]
        self.inplanes = out
        layers += [
            block(out, planes, groups=self.groups, base_width=self.base_width) for _ in range(1, blocks)
        ]
        return nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        if self.with_pool:
            x = self.avgpool(x)
        return self.fc(S.flatten(x, 1)) if self.num_classes > 0 else x


def _resnet(arch: str, block: Any, depth: int, pretrained: bool, **kwargs: Any) -> ResNet:
    no_pretrained(arch, pretrained)
    return ResNet(block, depth, **kwargs)


def resnet18(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNet-18 (``kwargs``: ``num_classes``, ``with_pool``).

    >>> import framework as fw
    >>> fw.vision.models.resnet18(num_classes=4).fc.weight.shape
    (512, 4)
    """
    return _resnet("resnet18", BasicBlock, 18, pretrained, **kwargs)


def resnet34(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNet-34 (``kwargs``: ``num_classes``, ``with_pool``).

    >>> import framework as fw
    >>> len(fw.vision.models.resnet34(num_classes=4).layer3)
    6
    """
    return _resnet("resnet34", BasicBlock, 34, pretrained, **kwargs)


def resnet50(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNet-50 (``kwargs``: ``num_classes``, ``with_pool``).

    >>> import framework as fw
    >>> fw.vision.models.resnet50(num_classes=4).fc.weight.shape
    (2048, 4)
    """
    return _resnet("resnet50", BottleneckBlock, 50, pretrained, **kwargs)


def resnet101(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNet-101 (``kwargs``: ``num_classes``, ``with_pool``).

    >>> import framework as fw
    >>> len(fw.vision.models.resnet101(num_classes=4).layer3)
    23
    """
    return _resnet("resnet101", BottleneckBlock, 101, pretrained, **kwargs)


def resnet152(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNet-152 (``kwargs``: ``num_classes``, ``with_pool``).

    >>> import framework as fw
    >>> len(fw.vision.models.resnet152(num_classes=4).layer3)
    36
    """
    return _resnet("resnet152", BottleneckBlock, 152, pretrained, **kwargs)


def _variant(arch: str, depth: int, width: int, groups: int, pretrained: bool, **kwargs: Any) -> ResNet:
    no_pretrained(arch, pretrained)
    return ResNet(BottleneckBlock, depth, width=width, groups=groups, **kwargs)


def resnext50_32x4d(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNeXt-50 32x4d: 32 groups of width 4.

    >>> import framework as fw
    >>> fw.vision.models.resnext50_32x4d(num_classes=4).layer1[0].conv2.groups
    32
    """
    return _variant("resnext50_32x4d", 50, 4, 32, pretrained, **kwargs)


def resnext50_64x4d(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNeXt-50 64x4d: 64 groups of width 4.

    >>> import framework as fw
    >>> fw.vision.models.resnext50_64x4d(num_classes=4).layer1[0].conv2.groups
    64
    """
    return _variant("resnext50_64x4d", 50, 4, 64, pretrained, **kwargs)


def resnext101_32x4d(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNeXt-101 32x4d.

    >>> import framework as fw
    >>> len(fw.vision.models.resnext101_32x4d(num_classes=4).layer3)
    23
    """
    return _variant("resnext101_32x4d", 101, 4, 32, pretrained, **kwargs)


def resnext101_64x4d(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNeXt-101 64x4d.

    >>> import framework as fw
    >>> fw.vision.models.resnext101_64x4d(num_classes=4).groups
    64
    """
    return _variant("resnext101_64x4d", 101, 4, 64, pretrained, **kwargs)


def resnext152_32x4d(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNeXt-152 32x4d.

    >>> import framework as fw
    >>> len(fw.vision.models.resnext152_32x4d(num_classes=4).layer2)
    8
    """
    return _variant("resnext152_32x4d", 152, 4, 32, pretrained, **kwargs)


def resnext152_64x4d(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNeXt-152 64x4d.

    >>> import framework as fw
    >>> fw.vision.models.resnext152_64x4d(num_classes=4).groups
    64
    """
    return _variant("resnext152_64x4d", 152, 4, 64, pretrained, **kwargs)


def wide_resnet50_2(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """Wide ResNet-50-2: bottlenecks twice as wide.

    >>> import framework as fw
    >>> fw.vision.models.wide_resnet50_2(num_classes=4).layer1[0].conv2.weight.shape
    (128, 128, 3, 3)
    """
    return _variant("wide_resnet50_2", 50, 128, 1, pretrained, **kwargs)


def wide_resnet101_2(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """Wide ResNet-101-2.

    >>> import framework as fw
    >>> fw.vision.models.wide_resnet101_2(num_classes=4).base_width
    128
    """
    return _variant("wide_resnet101_2", 101, 128, 1, pretrained, **kwargs)
