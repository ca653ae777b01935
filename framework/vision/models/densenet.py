"""DenseNet 121/161/169/201/264: every layer of a dense block sees all earlier ones' outputs."""

from __future__ import annotations

import math
from typing import Any

from adapter_api import OpArgumentError

from ... import nn
from ..._src.ops import shape as S
from ..._src.tensor import Tensor
from ._common import no_pretrained


class BNACConvLayer(nn.Layer):
    """Pre-activation unit: batch norm + ReLU (``_batch_norm``), then a bias-free conv."""

    def __init__(
        self,
        num_channels: int,
        num_filters: int,
        filter_size: int,
        stride: int = 1,
        pad: int = 0,
        groups: int = 1,
        act: str = "relu",
    ) -> None:
        super().__init__()
        self._batch_norm = nn.BatchNorm(num_channels, act=act)
        self._conv = nn.Conv2D(
            num_channels, num_filters, filter_size, stride, pad, groups=groups, bias_attr=False
        )

    def forward(self, input: Tensor) -> Tensor:
        return self._conv(self._batch_norm(input))


class DenseLayer(nn.Layer):
    """1x1 bottleneck to ``bn_size * growth_rate``, 3x3 to ``growth_rate``, concatenated to the input."""

    def __init__(self, num_channels: int, growth_rate: int, bn_size: int, dropout: float) -> None:
        super().__init__()
        self.dropout = dropout
        self.bn_ac_func1 = BNACConvLayer(num_channels, bn_size * growth_rate, 1)
        self.bn_ac_func2 = BNACConvLayer(bn_size * growth_rate, growth_rate, 3, pad=1)
        if dropout:
            self.dropout_func = nn.Dropout(p=dropout, mode="downscale_in_infer")

    def forward(self, input: Tensor) -> Tensor:
        y = self.bn_ac_func2(self.bn_ac_func1(input))
        if self.dropout:
            y = self.dropout_func(y)
        return S.concat([input, y], axis=1)


class DenseBlock(nn.Layer):
    """``num_layers`` dense layers (sublayers ``{name}_1`` ...)."""

    def __init__(
        self,
        num_channels: int,
        num_layers: int,
        bn_size: int,
        growth_rate: int,
        dropout: float,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.dropout = dropout
        self.dense_layer_func = [
            self.add_sublayer(
                f"{name}_{i + 1}", DenseLayer(num_channels + i * growth_rate, growth_rate, bn_size, dropout)
            )
            for i in range(num_layers)
        ]

    def forward(self, input: Tensor) -> Tensor:
        for layer in self.dense_layer_func:
            input = layer(input)
        return input


class TransitionLayer(nn.Layer):
    """Between blocks: pre-activated 1x1 conv, then a 2x2 average pool."""

    def __init__(self, num_channels: int, num_output_features: int) -> None:
        super().__init__()
        self.conv_ac_func = BNACConvLayer(num_channels, num_output_features, 1)
        self.pool2d_avg = nn.AvgPool2D(kernel_size=2, stride=2, padding=0)

    def forward(self, input: Tensor) -> Tensor:
        return self.pool2d_avg(self.conv_ac_func(input))


class ConvBNLayer(nn.Layer):
    """Bias-free conv, then batch norm + activation (the stem)."""

    def __init__(
        self,
        num_channels: int,
        num_filters: int,
        filter_size: int,
        stride: int = 1,
        pad: int = 0,
        groups: int = 1,
        act: str = "relu",
    ) -> None:
        super().__init__()
        self._conv = nn.Conv2D(
            num_channels, num_filters, filter_size, stride, pad, groups=groups, bias_attr=False
        )
        self._batch_norm = nn.BatchNorm(num_filters, act=act)

    def forward(self, input: Tensor) -> Tensor:
        return self._batch_norm(self._conv(input))


#: depth: (stem channels, growth rate, layers per dense block)
SPECS = {
    121: (64, 32, [6, 12, 24, 16]),
    161: (96, 48, [6, 12, 36, 24]),
    169: (64, 32, [6, 12, 32, 32]),
    201: (64, 32, [6, 12, 48, 32]),
    264: (64, 32, [6, 12, 64, 48]),
}


class DenseNet(nn.Layer):
    """DenseNet: dense blocks joined by transitions.

    DenseNet of ``layers`` (121, 161, 169, 201 or 264): stem, four dense blocks joined
    by transitions that halve the channels, batch norm + ReLU, global pool, Linear ``out``.

    >>> import framework as fw
    >>> fw.vision.models.DenseNet(121, num_classes=4).out.weight.shape
    (1024, 4)
    """

    def __init__(
        self,
        layers: int = 121,
        bn_size: int = 4,
        dropout: float = 0.0,
        num_classes: int = 1000,
        with_pool: bool = True,
    ) -> None:
        super().__init__()
        if layers not in SPECS:
            raise OpArgumentError(f"[DenseNet] layers must be one of {sorted(SPECS)}, got {layers!r}")
        self.num_classes, self.with_pool = num_classes, with_pool
        features, growth, self.block_config = SPECS[layers]
        self.conv1_func = ConvBNLayer(3, features, 7, stride=2, pad=3)
        self.pool2d_max = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        self.dense_block_func_list, self.transition_func_list = [], []
        last = len(self.block_config) - 1
        for i, n in enumerate(self.block_config):
            block = DenseBlock(features, n, bn_size, growth, dropout, name=f"conv{i + 2}")
            self.dense_block_func_list.append(self.add_sublayer(f"db_conv_{i + 2}", block))
            features += n * growth
            if i != last:
                trans = TransitionLayer(features, features // 2)
                self.transition_func_list.append(self.add_sublayer(f"tr_conv{i + 2}_blk", trans))
                features //= 2
        self.batch_norm = nn.BatchNorm(features, act="relu")
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            stdv = 1.0 / math.sqrt(features)
            self.out = nn.Linear(features, num_classes, weight_attr=nn.initializer.Uniform(-stdv, stdv))

    def forward(self, input: Tensor) -> Tensor:
        x = self.pool2d_max(self.conv1_func(input))
        for i, block in enumerate(self.dense_block_func_list):
            x = block(x)
            if i < len(self.transition_func_list):
                x = self.transition_func_list[i](x)
        x = self.batch_norm(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        return self.out(S.flatten(x, 1)) if self.num_classes > 0 else x


def _densenet(layers: int, pretrained: bool, **kwargs: Any) -> DenseNet:
    no_pretrained(f"densenet{layers}", pretrained)
    return DenseNet(layers=layers, **kwargs)


def densenet121(pretrained: bool = False, **kwargs: Any) -> DenseNet:
    """DenseNet-121.

    >>> import framework as fw
    >>> fw.vision.models.densenet121(num_classes=4).block_config
    [6, 12, 24, 16]
    """
    return _densenet(121, pretrained, **kwargs)


def densenet161(pretrained: bool = False, **kwargs: Any) -> DenseNet:
    """DenseNet-161.

    >>> import framework as fw
    >>> fw.vision.models.densenet161(num_classes=4).block_config
    [6, 12, 36, 24]
    """
    return _densenet(161, pretrained, **kwargs)


def densenet169(pretrained: bool = False, **kwargs: Any) -> DenseNet:
    """DenseNet-169.

    >>> import framework as fw
    >>> fw.vision.models.densenet169(num_classes=4).block_config
    [6, 12, 32, 32]
    """
    return _densenet(169, pretrained, **kwargs)


def densenet201(pretrained: bool = False, **kwargs: Any) -> DenseNet:
    """DenseNet-201.

    >>> import framework as fw
    >>> fw.vision.models.densenet201(num_classes=4).block_config
    [6, 12, 48, 32]
    """
    return _densenet(201, pretrained, **kwargs)


def densenet264(pretrained: bool = False, **kwargs: Any) -> DenseNet:
    """DenseNet-264.

    >>> import framework as fw
    >>> fw.vision.models.densenet264(num_classes=4).block_config
    [6, 12, 64, 48]
    """
    return _densenet(264, pretrained, **kwargs)
