"""SqueezeNet 1.0 and 1.1: fire modules (squeeze 1x1, expand 1x1 and 3x3, concatenated)."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ... import nn
from ..._src.ops import shape as S
from ..._src.tensor import Tensor
from ...nn import functional as F
from ._common import no_pretrained


class MakeFireConv(nn.Layer):
    """Conv2D (``_conv``) then ReLU."""

    def __init__(self, input_channels: int, output_channels: int, filter_size: int, padding: int = 0) -> None:
        super().__init__()
        self._conv = nn.Conv2D(input_channels, output_channels, filter_size, padding=padding)

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(self._conv(x))


class MakeFire(nn.Layer):
    """A fire module: squeeze (``_conv``), then 1x1 and 3x3 expansions concatenated."""

    def __init__(self, input_channels: int, squeeze: int, expand1x1: int, expand3x3: int) -> None:
        super().__init__()
        self._conv = MakeFireConv(input_channels, squeeze, 1)
        self._conv_path1 = MakeFireConv(squeeze, expand1x1, 1)
        self._conv_path2 = MakeFireConv(squeeze, expand3x3, 3, padding=1)

    def forward(self, inputs: Tensor) -> Tensor:
        x = self._conv(inputs)
        return S.concat([self._conv_path1(x), self._conv_path2(x)], axis=1)


#: (squeeze, expand) channels of the eight fire modules
_FIRES = [(16, 64), (16, 64), (32, 128), (32, 128), (48, 192), (48, 192), (64, 256), (64, 256)]
#: after which fire modules each version max-pools
_POOL_AFTER = {"1.0": (3, 7), "1.1": (2, 4)}


class SqueezeNet(nn.Layer):
    """SqueezeNet 1.0 or 1.1: fire modules.

    SqueezeNet ``version`` "1.0" or "1.1"; the classifier is a 1x1 convolution
    (``_conv9``, where ``num_classes > 0``), then ReLU and a global average pool (``with_pool``).

    >>> import framework as fw
    >>> fw.vision.models.SqueezeNet("1.1", num_classes=4)(fw.ones([1, 3, 32, 32])).shape
    (1, 4)
    """

    def __init__(self, version: str, num_classes: int = 1000, with_pool: bool = True) -> None:
        super().__init__()
        if version not in _POOL_AFTER:
            raise OpArgumentError(f"[SqueezeNet] version must be '1.0' or '1.1', got {version!r}")
        self.version, self.num_classes, self.with_pool = version, num_classes, with_pool
        if version == "1.0":
            self._conv = nn.Conv2D(3, 96, 7, stride=2)
        else:
            self._conv = nn.Conv2D(3, 64, 3, stride=2, padding=1)
        self._pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=0)
        cin = 96 if version == "1.0" else 64
        for i, (sq, ex) in enumerate(_FIRES, start=1):
            setattr(self, f"_conv{i}", MakeFire(cin, sq, ex, ex))
            cin = 2 * ex
        self._drop = nn.Dropout(p=0.5, mode="downscale_in_infer")
        self._conv9 = nn.Conv2D(512, num_classes, 1)
        self._avg_pool = nn.AdaptiveAvgPool2D(1)

    def forward(self, inputs: Tensor) -> Tensor:
        x = self._pool(F.relu(self._conv(inputs)))
        for i in range(1, 9):
            x = getattr(self, f"_conv{i}")(x)
            if i in _POOL_AFTER[self.version]:
                x = self._pool(x)
        if self.num_classes > 0:
            x = self._conv9(self._drop(x))
        if self.with_pool:
            x = S.squeeze(self._avg_pool(F.relu(x)), axis=[2, 3])
        return x


def squeezenet1_0(pretrained: bool = False, **kwargs: Any) -> SqueezeNet:
    """SqueezeNet 1.0 (``kwargs``: ``num_classes``, ``with_pool``).

    >>> import framework as fw
    >>> fw.vision.models.squeezenet1_0(num_classes=4).version
    '1.0'
    """
    no_pretrained("squeezenet1_0", pretrained)
    return SqueezeNet("1.0", **kwargs)


def squeezenet1_1(pretrained: bool = False, **kwargs: Any) -> SqueezeNet:
    """SqueezeNet 1.1 (``kwargs``: ``num_classes``, ``with_pool``).

    >>> import framework as fw
    >>> fw.vision.models.squeezenet1_1(num_classes=4).version
    '1.1'
    """
    no_pretrained("squeezenet1_1", pretrained)
    return SqueezeNet("1.1", **kwargs)
