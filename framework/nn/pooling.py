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
    """Max pooling of NCHW (or NHWC) input; ``ceil_mode`` and ``return_mask`` as
    :func:`~framework.nn.functional.max_pool2d`.

    >>> import framework as fw
    >>> fw.nn.MaxPool2D(3, 2, ceil_mode=True)(fw.ones([1, 2, 8, 8])).shape
    (1, 2, 4, 4)
    """

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        return_mask: bool = False,
        ceil_mode: bool = False,
        data_format: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.return_mask, self.ceil_mode, self.data_format = return_mask, ceil_mode, data_format

    def forward(self, x: Tensor) -> Any:
        return F.max_pool2d(
            x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.return_mask, self.data_format
        )


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
    """Average pooling of NCHW (or NHWC) input; arguments as
    :func:`~framework.nn.functional.avg_pool2d`.

    >>> import framework as fw
    >>> fw.nn.AvgPool2D(2)(fw.ones([1, 1, 4, 4])).numpy().ravel().tolist()
    [1.0, 1.0, 1.0, 1.0]
    """

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        exclusive: bool = True,
        divisor_override: Any = None,
        data_format: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.exclusive = kernel_size, stride, padding, exclusive
        self.ceil_mode, self.divisor_override, self.data_format = ceil_mode, divisor_override, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool2d(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.exclusive,
            self.divisor_override,
            self.data_format,
        )


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


class LPPool1D(Layer):
    """Power-average pooling of (N, C, L) input (:func:`~framework.nn.functional.lp_pool1d`).

    >>> import framework as fw
    >>> fw.nn.LPPool1D(2, 2)(fw.to_tensor([[[3.0, 4.0]]])).numpy().ravel().tolist()
    [5.0]
    """

    def __init__(
        self,
        norm_type: float,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        data_format: str = "NCL",
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.padding = norm_type, kernel_size, stride, padding
        self.ceil_mode, self.data_format = ceil_mode, data_format

    def forward(self, x: Tensor) -> Tensor:
        return F.lp_pool1d(
            x, self.norm_type, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.data_format
        )


class LPPool2D(LPPool1D):
    """Power-average pooling of NCHW (or NHWC) input (:func:`~framework.nn.functional.lp_pool2d`).

    >>> import framework as fw
    >>> fw.nn.LPPool2D(2, 2)(fw.to_tensor([[[[3.0, 4.0], [0.0, 0.0]]]])).numpy().ravel().tolist()
    [5.0]
    """

    def __init__(
        self,
        norm_type: float,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        data_format: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__(norm_type, kernel_size, stride, padding, ceil_mode, data_format)

    def forward(self, x: Tensor) -> Tensor:
        return F.lp_pool2d(
            x, self.norm_type, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.data_format
        )


class _MaxUnPool(Layer):
    _fn = "max_unpool2d"

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        data_format: str | None = None,
        output_size: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.data_format, self.output_size = data_format, output_size

    def forward(self, x: Tensor, indices: Tensor) -> Tensor:
        kw = {} if self.data_format is None else {"data_format": self.data_format}
        return getattr(F, self._fn)(
            x, indices, self.kernel_size, self.stride, self.padding, output_size=self.output_size, **kw
        )


class MaxUnPool1D(_MaxUnPool):
    """The inverse of MaxPool1D given its mask (:func:`~framework.nn.functional.max_unpool1d`).

    >>> import framework as fw
    >>> fw.nn.MaxUnPool1D(2)(fw.ones([1, 1, 2]), fw.to_tensor([[[0, 3]]], dtype="int32")).numpy().tolist()
    [[[1.0, 0.0, 0.0, 1.0]]]
    """

    _fn = "max_unpool1d"


class MaxUnPool2D(_MaxUnPool):
    """The inverse of MaxPool2D given its mask (:func:`~framework.nn.functional.max_unpool2d`).

    >>> import framework as fw
    >>> y, mask = fw.nn.MaxPool2D(2, return_mask=True)(fw.ones([1, 1, 2, 2]))
    >>> fw.nn.MaxUnPool2D(2)(y, mask).numpy().ravel().tolist()
    [1.0, 0.0, 0.0, 0.0]
    """

    _fn = "max_unpool2d"


class MaxUnPool3D(_MaxUnPool):
    """The inverse of MaxPool3D given its mask (:func:`~framework.nn.functional.max_unpool3d`).

    >>> import framework as fw
    >>> fw.nn.MaxUnPool3D(2)(fw.ones([1, 1, 1, 1, 1]), fw.to_tensor([[[[[0]]]]], dtype="int32")).shape
    (1, 1, 2, 2, 2)
    """

    _fn = "max_unpool3d"
