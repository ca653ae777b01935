"""Observers for post-training quantisation (``PTQ``): each watches the tensors that pass and
ends with an abs-max threshold, per tensor or per channel.

- :class:`AbsmaxObserver`: the largest magnitude seen (Paddle's ``AbsmaxObserver``);
  ``quant_axis`` gives one per channel (a weight's output channels: axis 1 of ``[in, out]``);
- :class:`MovingAverageAbsmaxObserver`: Paddle's moving average of the batches' abs-max
  (``state = r * state + 1``, ``accum = r * accum + absmax``, ``scale = accum / state``);
- :class:`HistObserver`: a histogram of magnitudes; the threshold is the ``percent``
  percentile, which clips rare outliers (Paddle's ``HistQuantizer``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src.ops import math as M
from .._src.tensor import Tensor, to_tensor
from .base import BaseObserver, ObserverFactory


def _check_bits(name: str, quant_bits: Any) -> None:
    if isinstance(quant_bits, bool) or not isinstance(quant_bits, int) or not 2 <= quant_bits <= 8:
        raise OpArgumentError(f"[{name}] quant_bits must be an int in [2, 8], got {quant_bits!r}")


def abs_max(x: Tensor, quant_axis: int = -1) -> Tensor:
    """The largest magnitude of ``x`` (a 0-d tensor), or per slice of ``quant_axis``.

    Example:
        >>> import framework as fw
        >>> from framework.quantization.observers import abs_max
        >>> abs_max(fw.to_tensor([[1.0, -4.0], [-2.0, 3.0]]), quant_axis=1).tolist()
        [2.0, 4.0]
    """
    a = M.abs(x.detach())
    if quant_axis == -1:
        return M.max(a)
    if not 0 <= quant_axis < x.ndim:
        raise OpArgumentError(
            f"[quantization] quant_axis {quant_axis} is out of range for a {x.ndim}-d tensor"
        )
    return M.max(a, axis=tuple(i for i in range(x.ndim) if i != quant_axis))


class AbsmaxObserverLayer(BaseObserver):
    """Keeps the running maximum of ``abs_max(x)``."""

    def __init__(self, quant_bits: int = 8, quant_axis: int = -1) -> None:
        _check_bits("AbsmaxObserver", quant_bits)
        super().__init__(quant_bits, quant_axis)
        self._max: Tensor | None = None

    def forward(self, x: Tensor) -> Tensor:
        m = abs_max(x, self._quant_axis)
        self._max = m if self._max is None else M.maximum(self._max, m)
        return x

    def scales(self) -> Tensor | None:
        return self._max


class AbsmaxObserver(ObserverFactory):
    """Factory of :class:`AbsmaxObserverLayer` (``quant_bits``, ``quant_axis``: -1 per tensor).

    Example:
        >>> import framework as fw
        >>> from framework.quantization import QuantConfig
        >>> from framework.quantization.observers import AbsmaxObserver
        >>> cfg = QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver(quant_axis=1))
    """

    layer_class = AbsmaxObserverLayer

    def __init__(self, quant_bits: int = 8, quant_axis: int = -1) -> None:
        _check_bits("AbsmaxObserver", quant_bits)
        super().__init__(quant_bits=quant_bits, quant_axis=quant_axis)


class MovingAverageAbsmaxObserverLayer(BaseObserver):
    """Paddle's moving average of each batch's abs-max."""

    def __init__(self, quant_bits: int = 8, quant_axis: int = -1, moving_rate: float = 0.9) -> None:
        _check_bits("MovingAverageAbsmaxObserver", quant_bits)
        if not 0.0 < moving_rate < 1.0:
            raise OpArgumentError(
                f"[MovingAverageAbsmaxObserver] moving_rate must be in (0, 1), got {moving_rate!r}"
            )
        super().__init__(quant_bits, quant_axis)
        self._rate = float(moving_rate)
        self._steps = 0.0
        self._accum: Tensor | None = None

    def forward(self, x: Tensor) -> Tensor:
        m = abs_max(x, self._quant_axis)
        self._steps = self._rate * self._steps + 1.0
        self._accum = m if self._accum is None else self._accum * self._rate + m
        return x

    def scales(self) -> Tensor | None:
        return None if self._accum is None else self._accum / self._steps


class MovingAverageAbsmaxObserver(ObserverFactory):
    """Factory of :class:`MovingAverageAbsmaxObserverLayer` (``moving_rate`` 0.9 by default).

    Example:
        >>> import framework as fw
        >>> from framework.quantization.observers import MovingAverageAbsmaxObserver
        >>> obs = MovingAverageAbsmaxObserver(moving_rate=0.5)._instance(None)
        >>> _ = obs(fw.to_tensor([2.0])); _ = obs(fw.to_tensor([4.0]))
        >>> round(float(obs.scales()), 4)  # (0.5 * 2 + 4) / (0.5 * 1 + 1)
        3.3333
    """

    layer_class = MovingAverageAbsmaxObserverLayer

    def __init__(self, quant_bits: int = 8, quant_axis: int = -1, moving_rate: float = 0.9) -> None:
        super().__init__(quant_bits=quant_bits, quant_axis=quant_axis, moving_rate=moving_rate)


class HistObserverLayer(BaseObserver):
    """A histogram of ``|x|`` on ``[0, largest seen)``; when a batch goes past the range the
    histogram is spread onto the wider one (each old bin's count at its centre). The
    threshold is the smallest bin edge under which ``percent`` of the magnitudes lie. The
    statistics are read on the host (calibration runs outside the model's program)."""

    def __init__(
        self, quant_bits: int = 8, quant_axis: int = -1, bins: int = 2048, percent: float = 0.99999
    ) -> None:
        _check_bits("HistObserver", quant_bits)
        if quant_axis != -1:
            raise OpArgumentError(
                f"[HistObserver] observes whole tensors (quant_axis=-1), got quant_axis={quant_axis}"
            )
        if not 0.0 < percent <= 1.0 or int(bins) < 2:
            raise OpArgumentError(
                f"[HistObserver] needs 0 < percent <= 1 and bins >= 2, got {percent!r}, {bins!r}"
            )
        super().__init__(quant_bits, quant_axis)
        self._bins, self._percent = int(bins), float(percent)
        self._hist = np.zeros(self._bins, np.float64)
        self._top = 0.0
        self._dtype: Any = None

    def forward(self, x: Tensor) -> Tensor:
        a = np.abs(x.detach().numpy().astype(np.float64)).ravel()
        self._dtype = x.dtype
        top = float(a.max()) if a.size else 0.0
        if top > self._top:
            if self._hist.sum() > 0:  # spread the old counts onto the wider range
                centres = (np.arange(self._bins) + 0.5) * (self._top / self._bins)
                self._hist = np.histogram(centres, self._bins, (0.0, top), weights=self._hist)[0]
            self._top = top
        if self._top > 0:
            self._hist += np.histogram(a, self._bins, (0.0, self._top))[0]
        return x

    def scales(self) -> Tensor | None:
        if self._dtype is None:
            return None
        total = self._hist.sum()
        if total == 0:
            return to_tensor(np.array(self._top, np.float32)).astype(self._dtype)
        cum = np.cumsum(self._hist) / total
        i = int(np.searchsorted(cum, self._percent - 1e-12))
        edge = (min(i, self._bins - 1) + 1) * self._top / self._bins
        return to_tensor(np.array(edge, np.float32)).astype(self._dtype)


class HistObserver(ObserverFactory):
    """Factory of :class:`HistObserverLayer`: a percentile threshold (``percent`` of the
    magnitudes below it, default 0.99999) from a ``bins``-bin histogram.

    Example:
        >>> import numpy as np, framework as fw
        >>> from framework.quantization.observers import HistObserver
        >>> obs = HistObserver(percent=0.99, bins=100)._instance(None)
        >>> _ = obs(fw.to_tensor(np.r_[np.linspace(0, 1, 1000), 50.0].astype("float32")))
        >>> float(obs.scales()) < 2.0  # the outlier at 50 is clipped
        True
    """

    layer_class = HistObserverLayer

    def __init__(self, quant_bits: int = 8, bins: int = 2048, percent: float = 0.99999) -> None:
        super().__init__(quant_bits=quant_bits, bins=bins, percent=percent)


__all__ = [
    "AbsmaxObserver",
    "AbsmaxObserverLayer",
    "HistObserver",
    "HistObserverLayer",
    "MovingAverageAbsmaxObserver",
    "MovingAverageAbsmaxObserverLayer",
    "abs_max",
]
