"""ShuffleNetV2: split channels, transform one half, concatenate, shuffle the channels."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ... import nn
from ..._src.ops import shape as S
from ..._src.tensor import Tensor
from ..ops import ConvNormActivation
from ._common import no_pretrained

_ACTIVATIONS = {"relu": nn.ReLU, "swish": nn.Swish, None: None}


def create_activation_layer(act: str | None) -> Any:
    """The layer class of ``act`` ("relu", "swish" or None)."""
    if act not in _ACTIVATIONS:
        raise OpArgumentError(f"[ShuffleNetV2] act must be 'relu', 'swish' or None, got {act!r}")
    return _ACTIVATIONS[act]


def channel_shuffle(x: Tensor, groups: int) -> Tensor:
    """Interleave the channels of ``groups`` groups: (N, g*c, H, W) -> (N, c*g, H, W).

    >>> import framework as fw
    >>> from framework.vision.models.shufflenetv2 import channel_shuffle
    >>> channel_shuffle(fw.arange(4, dtype="float32").reshape([1, 4, 1, 1]), 2).numpy().ravel().tolist()
    [0.0, 2.0, 1.0, 3.0]
    """
    n, c, h, w = x.shape[:4]
    x = S.transpose(S.reshape(x, [n, groups, c // groups, h, w]), [0, 2, 1, 3, 4])
    return S.reshape(x, [n, c, h, w])


def _cna(cin: int, cout: int, k: int, stride: int, groups: int, act: Any) -> ConvNormActivation:
    return ConvNormActivation(cin, cout, k, stride, (k - 1) // 2, groups=groups, activation_layer=act)


class InvertedResidual(nn.Layer):
    """Stride 1: half the channels pass through, the other half go 1x1, depthwise 3x3, 1x1."""

    def __init__(
        self, in_channels: int, out_channels: int, stride: int, activation_layer: Any = nn.ReLU
    ) -> None:
        super().__init__()
        half = out_channels // 2
        self._conv_pw = _cna(in_channels // 2, half, 1, 1, 1, activation_layer)
        self._conv_dw = _cna(half, half, 3, stride, half, None)
        self._conv_linear = _cna(half, half, 1, 1, 1, activation_layer)

    def forward(self, inputs: Tensor) -> Tensor:
        half = inputs.shape[1] // 2
        x1, x2 = S.split(inputs, [half, half], axis=1)
        x2 = self._conv_linear(self._conv_dw(self._conv_pw(x2)))
        return channel_shuffle(S.concat([x1, x2], axis=1), 2)


class InvertedResidualDS(nn.Layer):
    """Downsampling block: both branches see the whole input (depthwise stride 2, then 1x1)."""

    def __init__(
        self, in_channels: int, out_channels: int, stride: int, activation_layer: Any = nn.ReLU
    ) -> None:
        super().__init__()
        half = out_channels // 2
        self._conv_dw_1 = _cna(in_channels, in_channels, 3, stride, in_channels, None)
        self._conv_linear_1 = _cna(in_channels, half, 1, 1, 1, activation_layer)
        self._conv_pw_2 = _cna(in_channels, half, 1, 1, 1, activation_layer)
        self._conv_dw_2 = _cna(half, half, 3, stride, half, None)
        self._conv_linear_2 = _cna(half, half, 1, 1, 1, activation_layer)

    def forward(self, inputs: Tensor) -> Tensor:
        x1 = self._conv_linear_1(self._conv_dw_1(inputs))
        x2 = self._conv_linear_2(self._conv_dw_2(self._conv_pw_2(inputs)))
        return channel_shuffle(S.concat([x1, x2], axis=1), 2)


#: output channels of the stem, the three stages and the last 1x1 convolution per scale
_CHANNELS = {
    0.25: [24, 24, 48, 96, 512],
    0.33: [24, 32, 64, 128, 512],
    0.5: [24, 48, 96, 192, 1024],
    1.0: [24, 116, 232, 464, 1024],
    1.5: [24, 176, 352, 704, 1024],
    2.0: [24, 224, 488, 976, 2048],
}


class ShuffleNetV2(nn.Layer):
    """ShuffleNetV2: channel split and shuffle.

    ShuffleNetV2 at width ``scale`` (0.25, 0.33, 0.5, 1.0, 1.5 or 2.0) with ``act``
    ("relu" or "swish"): stem, max pool, three stages of 4, 8 and 4 blocks (sublayers
    ``2_1`` ... ``4_4``), a 1x1 convolution, global pool and Linear ``_fc``.

    >>> import framework as fw
    >>> fw.vision.models.ShuffleNetV2(scale=0.25, num_classes=4)(fw.ones([2, 3, 32, 32])).shape
    (2, 4)
    """

    def __init__(
        self, scale: float = 1.0, act: str | None = "relu", num_classes: int = 1000, with_pool: bool = True
    ) -> None:
        super().__init__()
        if scale not in _CHANNELS:
            raise OpArgumentError(f"[ShuffleNetV2] scale must be one of {sorted(_CHANNELS)}, got {scale!r}")
        self.scale, self.num_classes, self.with_pool = scale, num_classes, with_pool
        act_layer = create_activation_layer(act)
        ch = _CHANNELS[scale]
        self._conv1 = _cna(3, ch[0], 3, 2, 1, act_layer)
        self._max_pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        self._block_list = []
        for stage, repeats in enumerate((4, 8, 4)):
            for i in range(repeats):
                block = (
                    InvertedResidualDS(ch[stage], ch[stage + 1], 2, act_layer)
                    if i == 0
                    else InvertedResidual(ch[stage + 1], ch[stage + 1], 1, act_layer)
                )
                self._block_list.append(self.add_sublayer(f"{stage + 2}_{i + 1}", block))
        self._last_conv = _cna(ch[3], ch[4], 1, 1, 1, act_layer)
        if with_pool:
            self._pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self._out_c = ch[4]
            self._fc = nn.Linear(ch[4], num_classes)

    def forward(self, inputs: Tensor) -> Tensor:
        x = self._max_pool(self._conv1(inputs))
        for block in self._block_list:
            x = block(x)
        x = self._last_conv(x)
        if self.with_pool:
            x = self._pool2d_avg(x)
        return self._fc(S.flatten(x, 1)) if self.num_classes > 0 else x


def _shufflenet(arch: str, scale: float, pretrained: bool, **kwargs: Any) -> ShuffleNetV2:
    no_pretrained(arch, pretrained)
    return ShuffleNetV2(scale=scale, **kwargs)


def _variant(arch: str, scale: float, what: str, **fixed: Any) -> Any:
    """The public constructor ``arch``: ShuffleNetV2 at ``scale`` (with ``fixed`` arguments)."""

    def build(pretrained: bool = False, **kwargs: Any) -> ShuffleNetV2:
        return _shufflenet(arch, scale, pretrained, **fixed, **kwargs)

    build.__name__ = build.__qualname__ = arch
    build.__doc__ = (
        f"ShuffleNetV2 {what}.\n\n    >>> import framework as fw\n"
        f"    >>> fw.vision.models.{arch}(num_classes=4).scale\n    {scale!r}\n    "
    )
    return build


shufflenet_v2_x0_25 = _variant("shufflenet_v2_x0_25", 0.25, "x0.25")
shufflenet_v2_x0_33 = _variant("shufflenet_v2_x0_33", 0.33, "x0.33")
shufflenet_v2_x0_5 = _variant("shufflenet_v2_x0_5", 0.5, "x0.5")
shufflenet_v2_x1_0 = _variant("shufflenet_v2_x1_0", 1.0, "x1.0")
shufflenet_v2_x1_5 = _variant("shufflenet_v2_x1_5", 1.5, "x1.5")
shufflenet_v2_x2_0 = _variant("shufflenet_v2_x2_0", 2.0, "x2.0")
shufflenet_v2_swish = _variant("shufflenet_v2_swish", 1.0, "x1.0 with swish activations", act="swish")
