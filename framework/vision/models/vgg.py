"""VGG 11/13/16/19, with or without batch norm."""

from __future__ import annotations

from typing import Any

from ... import nn
from ..._src.ops import shape as S
from ..._src.tensor import Tensor
from ._common import no_pretrained

#: channels per 3x3 convolution, "M" a 2x2 max pool (configurations A, B, D, E of the paper)
CFGS: dict[int, list[Any]] = {
    11: [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    13: [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    16: [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    19: [
        64,
        64,
        "M",
        128,
        128,
        "M",
        256,
        256,
        256,
        256,
        "M",
        512,
        512,
        512,
        512,
        "M",
        512,
        512,
        512,
        512,
        "M",
    ],
}


def make_layers(cfg: list[Any], batch_norm: bool = False) -> nn.Sequential:
    """The convolutional trunk of a VGG from its configuration list.

    >>> from framework.vision.models.vgg import make_layers
    >>> len(make_layers([8, "M"], batch_norm=True))
    4
    """
    layers: list[nn.Layer] = []
    cin = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2D(kernel_size=2, stride=2))
            continue
        layers.append(nn.Conv2D(cin, v, kernel_size=3, padding=1))
        if batch_norm:
            layers.append(nn.BatchNorm2D(v))
        layers.append(nn.ReLU())
        cin = v
    return nn.Sequential(*layers)


class VGG(nn.Layer):
    """VGG: stacked 3x3 convolutions and a three-layer classifier.

    VGG: a convolutional trunk (``features``), a 7x7 adaptive average pool (``with_pool``)
    and a three-layer classifier with dropout (``num_classes > 0``).

    >>> import framework as fw
    >>> from framework.vision.models.vgg import make_layers
    >>> net = fw.vision.models.VGG(make_layers([8, "M"]), num_classes=0, with_pool=False)
    >>> net(fw.ones([1, 3, 8, 8])).shape
    (1, 8, 4, 4)
    """

    def __init__(self, features: nn.Layer, num_classes: int = 1000, with_pool: bool = True) -> None:
        super().__init__()
        self.features, self.num_classes, self.with_pool = features, num_classes, with_pool
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D((7, 7))
        if num_classes > 0:
            self.classifier = nn.Sequential(
                nn.Linear(512 * 7 * 7, 4096),
                nn.ReLU(),
                nn.Dropout(),
                nn.Linear(4096, 4096),
                nn.ReLU(),
                nn.Dropout(),
                nn.Linear(4096, num_classes),
            )

    def forward(self, x: Tensor) -> Tensor:
        x = self.features(x)
        if self.with_pool:
            x = self.avgpool(x)
        return self.classifier(S.flatten(x, 1)) if self.num_classes > 0 else x


def _vgg(depth: int, pretrained: bool, batch_norm: bool, **kwargs: Any) -> VGG:
    no_pretrained(f"vgg{depth}{'_bn' if batch_norm else ''}", pretrained)
    return VGG(make_layers(CFGS[depth], batch_norm), **kwargs)


def vgg11(pretrained: bool = False, batch_norm: bool = False, **kwargs: Any) -> VGG:
    """VGG-11 (``kwargs``: ``num_classes``, ``with_pool``).

    >>> import framework as fw
    >>> len(fw.vision.models.vgg11(num_classes=0).features)
    21
    """
    return _vgg(11, pretrained, batch_norm, **kwargs)


def vgg13(pretrained: bool = False, batch_norm: bool = False, **kwargs: Any) -> VGG:
    """VGG-13 (``kwargs``: ``num_classes``, ``with_pool``).

    >>> import framework as fw
    >>> len(fw.vision.models.vgg13(num_classes=0).features)
    25
    """
    return _vgg(13, pretrained, batch_norm, **kwargs)


def vgg16(pretrained: bool = False, batch_norm: bool = False, **kwargs: Any) -> VGG:
    """VGG-16 (``kwargs``: ``num_classes``, ``with_pool``).

    >>> import framework as fw
    >>> len(fw.vision.models.vgg16(num_classes=0).features)
    31
    """
    return _vgg(16, pretrained, batch_norm, **kwargs)


def vgg19(pretrained: bool = False, batch_norm: bool = False, **kwargs: Any) -> VGG:
    """VGG-19 (``kwargs``: ``num_classes``, ``with_pool``).

    >>> import framework as fw
    >>> len(fw.vision.models.vgg19(num_classes=0).features)
    37
    """
    return _vgg(19, pretrained, batch_norm, **kwargs)
