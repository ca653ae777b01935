"""Quanters for quantisation-aware training (``QAT``): fake quantisation with a
straight-through gradient, the scale tracked as Paddle's
``FakeQuanterWithAbsMaxObserver`` tracks it."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from .._src.ops import creation as C
from .._src.ops.composites.fake_quant import fake_quantize_dequantize
from .._src.tensor import Tensor
from .base import BaseQuanter, QuanterFactory
from .observers import abs_max


class FakeQuanterWithAbsMaxObserverLayer(BaseQuanter):
    """In training, each call updates ``state = r * state + 1``, ``accum = r * accum +
    abs_max(x)``, ``scale = accum / state`` (starting from 1, 1 and 0.001, as Paddle) and
    returns ``fake_quantize_dequantize(x, scale)``; in eval mode it uses the scale as it is.
    ``scale``, ``state`` and ``accum`` are buffers (saved with the model)."""

    def __init__(
        self, moving_rate: float = 0.9, bit_length: int = 8, dtype: Any = "float32", name: Any = None
    ) -> None:
        if not 0.0 < moving_rate < 1.0:
            raise OpArgumentError(
                f"[FakeQuanterWithAbsMaxObserver] moving_rate must be in (0, 1), got {moving_rate!r}"
            )
        super().__init__(bit_length, -1)
        self._moving_rate = float(moving_rate)
        self.register_buffer("_scale", C.full([1], 0.001, dtype))
        self.register_buffer("_moving_state", C.full([1], 1.0, dtype))
        self.register_buffer("_accum", C.full([1], 1.0, dtype))

    def forward(self, x: Tensor) -> Tensor:
        if self.training:
            r = self._moving_rate
            state = self._moving_state * r + 1.0
            accum = self._accum * r + abs_max(x).reshape((1,)).astype(self._accum.dtype)
            self._moving_state, self._accum = state.detach(), accum.detach()
            self._scale = (accum / state).detach()
        return fake_quantize_dequantize(x, self._scale, self._quant_bits)

    def scales(self) -> Tensor:
        return self._scale


class FakeQuanterWithAbsMaxObserver(QuanterFactory):
    """Factory of :class:`FakeQuanterWithAbsMaxObserverLayer` (Paddle's signature).

    Example:
        >>> import framework as fw
        >>> from framework.quantization import QAT, QuantConfig
        >>> from framework.quantization.quanters import FakeQuanterWithAbsMaxObserver
        >>> q = FakeQuanterWithAbsMaxObserver(moving_rate=0.9)
        >>> model = QAT(QuantConfig(activation=q, weight=q)).quantize(fw.nn.Sequential(fw.nn.Linear(4, 2)))
        >>> type(model[0]).__name__
        'QuantedLinear'
    """

    layer_class = FakeQuanterWithAbsMaxObserverLayer

    def __init__(
        self, moving_rate: float = 0.9, bit_length: int = 8, dtype: Any = "float32", name: Any = None
    ) -> None:
        super().__init__(moving_rate=moving_rate, bit_length=bit_length, dtype=dtype)


__all__ = ["FakeQuanterWithAbsMaxObserver", "FakeQuanterWithAbsMaxObserverLayer"]
