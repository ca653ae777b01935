"""``QuantConfig``: which quanter (or observer) watches each quantised layer's activation
and weight, after ``paddle.quantization.QuantConfig``: a global pair, overridden by layer
type, then by sublayer name, then by the layer object itself."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ..nn.layer import Layer
from .base import QuanterFactory


class SingleLayerConfig:
    """The activation and weight factories of one layer (either may be None: not quantised)."""

    def __init__(self, activation: QuanterFactory | None, weight: QuanterFactory | None) -> None:
        for what, f in (("activation", activation), ("weight", weight)):
            if f is not None and not isinstance(f, QuanterFactory):
                raise OpArgumentError(
                    f"[QuantConfig] {what} must be a quanter or observer factory (e.g. AbsmaxObserver()), "
                    f"got {type(f).__name__}"
                )
        self.activation, self.weight = activation, weight

    def __repr__(self) -> str:
        return f"activation: {self.activation}\nweight: {self.weight}"


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


class QuantConfig:
    """The quantisation plan of a model.

    Args:
        activation (QuanterFactory, optional): for every quantised layer's input.
        weight (QuanterFactory, optional): for every quantised layer's weight.

    Example:
        >>> import framework as fw
        >>> from framework.quantization import QuantConfig
        >>> from framework.quantization.observers import AbsmaxObserver
        >>> model = fw.nn.Sequential(fw.nn.Linear(4, 4), fw.nn.Linear(4, 2))
        >>> cfg = QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver(quant_axis=1))
        >>> cfg.add_name_config("1", activation=None, weight=None)  # keep the last layer float
        >>> cfg._config_of(model[1], "1").weight is None
        True
    """

    def __init__(
        self, activation: QuanterFactory | None = None, weight: QuanterFactory | None = None
    ) -> None:
        self._global = SingleLayerConfig(activation, weight)
        self._by_layer: dict[int, SingleLayerConfig] = {}
        self._by_name: dict[str, SingleLayerConfig] = {}
        self._by_type: dict[type, SingleLayerConfig] = {}

    def add_layer_config(
        self,
        layer: Layer | list[Layer],
        activation: QuanterFactory | None = None,
        weight: QuanterFactory | None = None,
    ) -> None:
        """Use these factories for ``layer`` (one object or a list; highest priority)."""
        for one in _as_list(layer):
            if not isinstance(one, Layer):
                raise OpArgumentError(
                    f"[QuantConfig] add_layer_config expects Layers, got {type(one).__name__}"
                )
            self._by_layer[id(one)] = SingleLayerConfig(activation, weight)

    def add_name_config(
        self,
        layer_name: str | list[str],
        activation: QuanterFactory | None = None,
        weight: QuanterFactory | None = None,
    ) -> None:
        """Use these factories for the sublayer(s) of this full name (``"blocks.0.qkv"``)."""
        for name in _as_list(layer_name):
            self._by_name[str(name)] = SingleLayerConfig(activation, weight)

    def add_type_config(
        self,
        layer_type: type | list[type],
        activation: QuanterFactory | None = None,
        weight: QuanterFactory | None = None,
    ) -> None:
        """Use these factories for every layer of this type (lowest priority above the global one)."""
        for t in _as_list(layer_type):
            if not (isinstance(t, type) and issubclass(t, Layer)):
                raise OpArgumentError(f"[QuantConfig] add_type_config expects Layer subclasses, got {t!r}")
            self._by_type[t] = SingleLayerConfig(activation, weight)

    @property
    def global_config(self) -> SingleLayerConfig:
        return self._global

    def _config_of(self, layer: Layer, name: str) -> SingleLayerConfig:
        if id(layer) in self._by_layer:
            return self._by_layer[id(layer)]
        if name in self._by_name:
            return self._by_name[name]
        for t in type(layer).__mro__:
            if t in self._by_type:
                return self._by_type[t]
        return self._global

    def __repr__(self) -> str:
        return f"QuantConfig(global: {self._global!r}; {len(self._by_layer)} layer, {len(self._by_name)} name, {len(self._by_type)} type configs)"
