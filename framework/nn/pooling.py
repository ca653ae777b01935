"""Pooling layers (Paddle names): MaxPool1D/2D, AvgPool1D/2D and the adaptive
AdaptiveAvgPool1D/2D and AdaptiveMaxPool2D."""

from __future__ import annotations

from typing import Any

from .._src.tensor import Tensor
from . import functional as F
from .layer import Layer


class MaxPool1D(Layer):
    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        return_mask: bool = False,
        ceil_mode: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.return_mask, self.ceil_mode = (
            kernel_size,
            stride,
            padding,
            return_mask,
            ceil_mode,
        )

    def forward(self, x: Tensor) -> Tensor:
        return F.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.return_mask, self.ceil_mode)


class MaxPool2D(Layer):
    def __init__(
        self, kernel_size: Any, stride: Any = None, padding: Any = 0, name: str | None = None
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x: Tensor) -> Tensor:
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding)


class AvgPool1D(Layer):
    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        exclusive: bool = True,
        ceil_mode: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.exclusive, self.ceil_mode = (
            kernel_size,
            stride,
            padding,
            exclusive,
            ceil_mode,
        )

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.exclusive, self.ceil_mode)


class AvgPool2D(Layer):
    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        exclusive: bool = True,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.exclusive = kernel_size, stride, padding, exclusive

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, exclusive=self.exclusive)


class AdaptiveAvgPool1D(Layer):
    def __init__(self, output_size: int, name: str | None = None) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(x, self.output_size)


class AdaptiveAvgPool2D(Layer):
    def __init__(self, output_size: Any, name: str | None = None) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(x, self.output_size)


class AdaptiveMaxPool2D(Layer):
    def __init__(self, output_size: Any, return_mask: bool = False, name: str | None = None) -> None:
        super().__init__()
        self.output_size, self.return_mask = output_size, return_mask

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_max_pool2d(x, self.output_size, self.return_mask)
