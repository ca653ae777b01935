"""Pooling layers (Paddle names): MaxPool1D/2D/3D, AvgPool1D/2D/3D, LPPool1D/2D, the adaptive
AdaptiveAvgPool1D/2D/3D and AdaptiveMaxPool1D/2D/3D, FractionalMaxPool2D/3D and
MaxUnPool1D/2D/3D. Each keeps its arguments and calls the functional of the same name."""

from __future__ import annotations

from typing import Any

from .._src.tensor import Tensor
from . import functional as F
from .layer import Layer


class _Pool(Layer):
    """A pooling layer: ``forward(x)`` is ``F.<_fn>(x, **arguments)``."""

    _fn = ""
    #: the arguments Paddle's repr shows
    _shown: tuple[str, ...] = ("kernel_size", "stride", "padding")

    def __init__(self, **arguments: Any) -> None:
        super().__init__()
        arguments.pop("name", None)
        self._arguments = arguments
        for k, v in arguments.items():
            setattr(self, k, v)

    def forward(self, x: Tensor) -> Any:
        return getattr(F, self._fn)(x, **{k: getattr(self, k) for k in self._arguments})

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={getattr(self, k)}" for k in self._shown)


class MaxPool1D(_Pool):
    """Max pooling of (N, C, L) input (:func:`~framework.nn.functional.max_pool1d`).

    >>> import framework as fw
    >>> fw.nn.MaxPool1D(2)(fw.to_tensor([[[1.0, 3.0, 2.0, 0.0]]])).numpy().tolist()
    [[[3.0, 2.0]]]
    """

    _fn = "max_pool1d"

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        return_mask: bool = False,
        ceil_mode: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__(
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            return_mask=return_mask,
            ceil_mode=ceil_mode,
        )


class MaxPool2D(_Pool):
    """Max pooling of NCHW (or NHWC) input; ``ceil_mode`` and ``return_mask`` as
    :func:`~framework.nn.functional.max_pool2d`.

    >>> import framework as fw
    >>> fw.nn.MaxPool2D(3, 2, ceil_mode=True)(fw.ones([1, 2, 8, 8])).shape
    (1, 2, 4, 4)
    """

    _fn = "max_pool2d"

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
        super().__init__(
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            return_mask=return_mask,
            ceil_mode=ceil_mode,
            data_format=data_format,
        )


class MaxPool3D(MaxPool2D):
    """Max pooling of NCDHW (or NDHWC) input (:func:`~framework.nn.functional.max_pool3d`).

    >>> import framework as fw
    >>> fw.nn.MaxPool3D(2)(fw.ones([1, 2, 4, 4, 4])).shape
    (1, 2, 2, 2, 2)
    """

    _fn = "max_pool3d"

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        return_mask: bool = False,
        ceil_mode: bool = False,
        data_format: str = "NCDHW",
        name: str | None = None,
    ) -> None:
        super().__init__(kernel_size, stride, padding, return_mask, ceil_mode, data_format)


class AvgPool1D(_Pool):
    """Average pooling of (N, C, L) input (:func:`~framework.nn.functional.avg_pool1d`).

    >>> import framework as fw
    >>> fw.nn.AvgPool1D(2)(fw.to_tensor([[[1.0, 3.0, 2.0, 0.0]]])).numpy().tolist()
    [[[2.0, 1.0]]]
    """

    _fn = "avg_pool1d"

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        exclusive: bool = True,
        ceil_mode: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__(
            kernel_size=kernel_size, stride=stride, padding=padding, exclusive=exclusive, ceil_mode=ceil_mode
        )


class AvgPool2D(_Pool):
    """Average pooling of NCHW (or NHWC) input; arguments as
    :func:`~framework.nn.functional.avg_pool2d`.

    >>> import framework as fw
    >>> fw.nn.AvgPool2D(2)(fw.ones([1, 1, 4, 4])).numpy().ravel().tolist()
    [1.0, 1.0, 1.0, 1.0]
    """

    _fn = "avg_pool2d"

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
        super().__init__(
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            ceil_mode=ceil_mode,
            exclusive=exclusive,
            divisor_override=divisor_override,
            data_format=data_format,
        )


class AvgPool3D(AvgPool2D):
    """Average pooling of NCDHW (or NDHWC) input (:func:`~framework.nn.functional.avg_pool3d`).

    >>> import framework as fw
    >>> fw.nn.AvgPool3D(2)(fw.ones([1, 1, 2, 2, 2])).numpy().ravel().tolist()
    [1.0]
    """

    _fn = "avg_pool3d"

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        exclusive: bool = True,
        divisor_override: Any = None,
        data_format: str = "NCDHW",
        name: str | None = None,
    ) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format)


class AdaptiveAvgPool1D(_Pool):
    """Average pooling of (N, C, L) input to ``output_size``.

    >>> import framework as fw
    >>> fw.nn.AdaptiveAvgPool1D(1)(fw.to_tensor([[[1.0, 3.0]]])).numpy().tolist()
    [[[2.0]]]
    """

    _fn = "adaptive_avg_pool1d"
    _shown = ("output_size",)

    def __init__(self, output_size: int, name: str | None = None) -> None:
        super().__init__(output_size=output_size)


class AdaptiveAvgPool2D(AdaptiveAvgPool1D):
    """Average pooling of NCHW (or NHWC) input to ``output_size``.

    >>> import framework as fw
    >>> fw.nn.AdaptiveAvgPool2D(1)(fw.ones([1, 2, 3, 3])).shape
    (1, 2, 1, 1)
    """

    _fn = "adaptive_avg_pool2d"

    def __init__(self, output_size: Any, data_format: str = "NCHW", name: str | None = None) -> None:
        _Pool.__init__(self, output_size=output_size, data_format=data_format)


class AdaptiveAvgPool3D(AdaptiveAvgPool2D):
    """Average pooling of NCDHW (or NDHWC) input to ``output_size``.

    >>> import framework as fw
    >>> fw.nn.AdaptiveAvgPool3D([1, 2, 2])(fw.ones([1, 2, 3, 4, 4])).shape
    (1, 2, 1, 2, 2)
    """

    _fn = "adaptive_avg_pool3d"

    def __init__(self, output_size: Any, data_format: str = "NCDHW", name: str | None = None) -> None:
        super().__init__(output_size, data_format)


class AdaptiveMaxPool1D(_Pool):
    """Max pooling of (N, C, L) input to ``output_size`` (``return_mask``: also the indices).

    >>> import framework as fw
    >>> fw.nn.AdaptiveMaxPool1D(1)(fw.to_tensor([[[1.0, 3.0]]])).numpy().tolist()
    [[[3.0]]]
    """

    _fn = "adaptive_max_pool1d"
    _shown = ("output_size", "return_mask")

    def __init__(self, output_size: Any, return_mask: bool = False, name: str | None = None) -> None:
        super().__init__(output_size=output_size, return_mask=return_mask)


class AdaptiveMaxPool2D(AdaptiveMaxPool1D):
    """Max pooling of NCHW input to ``output_size`` (``return_mask``: also ``h * W + w``).

    >>> import framework as fw
    >>> out, mask = fw.nn.AdaptiveMaxPool2D(1, return_mask=True)(fw.arange(4.0).reshape([1, 1, 2, 2]))
    >>> int(mask)
    3
    """

    _fn = "adaptive_max_pool2d"


class AdaptiveMaxPool3D(AdaptiveMaxPool1D):
    """Max pooling of NCDHW input to ``output_size``.

    >>> import framework as fw
    >>> fw.nn.AdaptiveMaxPool3D(2)(fw.ones([1, 1, 4, 4, 4])).shape
    (1, 1, 2, 2, 2)
    """

    _fn = "adaptive_max_pool3d"


class FractionalMaxPool2D(_Pool):
    """Fractional max pooling of NCHW input (:func:`~framework.nn.functional.fractional_max_pool2d`).

    >>> import framework as fw
    >>> fw.nn.FractionalMaxPool2D(3, random_u=0.3)(fw.rand([1, 2, 7, 7])).shape
    (1, 2, 3, 3)
    """

    _fn = "fractional_max_pool2d"
    _shown = ("output_size", "return_mask")

    def __init__(
        self,
        output_size: Any,
        kernel_size: Any = None,
        random_u: float | None = None,
        return_mask: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__(
            output_size=output_size, kernel_size=kernel_size, random_u=random_u, return_mask=return_mask
        )


class FractionalMaxPool3D(FractionalMaxPool2D):
    """Fractional max pooling of NCDHW input (:func:`~framework.nn.functional.fractional_max_pool3d`).

    >>> import framework as fw
    >>> fw.nn.FractionalMaxPool3D(2, kernel_size=2, random_u=0.3)(fw.rand([1, 2, 5, 5, 5])).shape
    (1, 2, 2, 2, 2)
    """

    _fn = "fractional_max_pool3d"


class LPPool1D(_Pool):
    """Power-average pooling of (N, C, L) input (:func:`~framework.nn.functional.lp_pool1d`).

    >>> import framework as fw
    >>> fw.nn.LPPool1D(2, 2)(fw.to_tensor([[[3.0, 4.0]]])).numpy().ravel().tolist()
    [5.0]
    """

    _fn = "lp_pool1d"
    _shown = ("norm_type", "kernel_size", "stride", "padding")

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
        super().__init__(
            norm_type=norm_type,
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            ceil_mode=ceil_mode,
            data_format=data_format,
        )


class LPPool2D(LPPool1D):
    """Power-average pooling of NCHW (or NHWC) input (:func:`~framework.nn.functional.lp_pool2d`).

    >>> import framework as fw
    >>> fw.nn.LPPool2D(2, 2)(fw.to_tensor([[[[3.0, 4.0], [0.0, 0.0]]]])).numpy().ravel().tolist()
    [5.0]
    """

    _fn = "lp_pool2d"

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

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"

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
