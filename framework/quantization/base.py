"""The two kinds of layer a quantisation config builds for each quantised layer: a
*quanter* (fake quantisation during training) and an *observer* (statistics during
calibration), and the factories a :class:`~framework.quantization.QuantConfig` holds, after
``paddle.quantization.BaseQuanter``, ``BaseObserver`` and ``QuanterFactory``."""

from __future__ import annotations

from typing import Any

from .._src.tensor import Tensor
from ..nn.layer import Layer


class BaseQuanter(Layer):
    """A layer that sees a tensor (an activation or a weight) and returns it, possibly fake
    quantised; after training or calibration it knows the tensor's ``scales()`` (the abs-max
    threshold: one value, or one per channel of ``quant_axis()``) and ``bit_length()``.

    Example:
        >>> import framework as fw
        >>> from framework.quantization.observers import AbsmaxObserver
        >>> obs = AbsmaxObserver()._instance(None)
        >>> _ = obs(fw.to_tensor([1.0, -3.0]))
        >>> float(obs.scales()), obs.bit_length(), obs.quant_axis()
        (3.0, 8, -1)
    """

    def __init__(self, quant_bits: int = 8, quant_axis: int = -1) -> None:
        super().__init__()
        self._quant_bits, self._quant_axis = quant_bits, quant_axis

    def forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError(f"[quantization] {type(self).__name__} needs forward(x)")

    def scales(self) -> Tensor | None:
        """The abs-max threshold found so far (None before any input)."""
        raise NotImplementedError(f"[quantization] {type(self).__name__} needs scales()")

    def zero_points(self) -> Tensor | None:
        """Symmetric quantisation: zeros shaped as the scales."""
        s = self.scales()
        return None if s is None else s * 0.0

    def bit_length(self) -> int:
        return self._quant_bits

    def quant_axis(self) -> int:
        return self._quant_axis


class BaseObserver(BaseQuanter):
    """A quanter that only watches (post-training calibration): ``forward`` returns its input
    unchanged and ``cal_thresholds()`` turns what it saw into ``scales()``."""

    def cal_thresholds(self) -> None:
        """Compute the scales from the statistics (a no-op for running abs-max statistics)."""


class QuanterFactory:
    """A quanter's class and arguments, instanced once per layer it is applied to (Paddle's
    ``QuanterFactory``): ``QuantConfig(weight=AbsmaxObserver(quant_bits=8))`` holds one.

    Example:
        >>> from framework.quantization.observers import AbsmaxObserver
        >>> AbsmaxObserver(quant_bits=4)
        AbsmaxObserver(quant_bits=4, quant_axis=-1)
    """

    layer_class: type[BaseQuanter]

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs

    def _instance(self, layer: Layer | None) -> BaseQuanter:
        """A fresh quanter for ``layer``."""
        return self.layer_class(**self.kwargs)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"{type(self).__name__}({args})"


class ObserverFactory(QuanterFactory):
    """The factory of an observer (:class:`BaseObserver`)."""
