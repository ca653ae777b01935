"""Containers of layers (Paddle names): Sequential, LayerList (ModuleList), ParameterList and
LayerDict."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from adapter_api import OpArgumentError

from .layer import Layer, Parameter


class Sequential(Layer):
    """Layers applied in order: ``Sequential(l1, l2)``, ``Sequential(("a", l1), ...)`` or an OrderedDict."""

    def __init__(self, *layers: Any) -> None:
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], (dict, OrderedDict)):
            items = list(layers[0].items())
        elif layers and all(isinstance(x, (list, tuple)) and len(x) == 2 for x in layers):
            items = [(str(n), layer) for n, layer in layers]
        else:
            items = [(str(i), layer) for i, layer in enumerate(layers)]
        for n, layer in items:
            self.add_sublayer(n, layer)

    def __getitem__(self, i: Any) -> Any:
        layers = list(self._sub_layers.values())
        if isinstance(i, slice):
            return Sequential(*layers[i])
        if isinstance(i, str):
            return self._sub_layers[i]
        return layers[i]

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self) -> Iterator[Layer]:
        return iter(self._sub_layers.values())

    def forward(self, x: Any) -> Any:
        for layer in self._sub_layers.values():
            x = layer(x)
        return x


class LayerList(Layer):
    """A list of layers whose parameters are registered (Paddle's ``LayerList``)."""

    def __init__(self, sublayers: Iterable[Layer] | None = None) -> None:
        super().__init__()
        for layer in sublayers or []:
            self.append(layer)

    def append(self, sublayer: Layer) -> LayerList:
        self.add_sublayer(str(len(self)), sublayer)
        return self

    def extend(self, sublayers: Iterable[Layer]) -> LayerList:
        for s in sublayers:
            self.append(s)
        return self

    def insert(self, index: int, sublayer: Layer) -> None:
        layers = list(self._sub_layers.values())
        layers.insert(index, sublayer)
        self._sub_layers.clear()
        for i, s in enumerate(layers):
            self.add_sublayer(str(i), s)

    def __getitem__(self, i: Any) -> Any:
        layers = list(self._sub_layers.values())
        return LayerList(layers[i]) if isinstance(i, slice) else layers[i]

    def __setitem__(self, i: int, layer: Layer) -> None:
        key = list(self._sub_layers)[i]
        self._sub_layers[key] = layer

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self) -> Iterator[Layer]:
        return iter(self._sub_layers.values())


ModuleList = LayerList


class ParameterList(Layer):
    def __init__(self, parameters: Iterable[Parameter] | None = None) -> None:
        super().__init__()
        for p in parameters or []:
            self.add_parameter(str(len(self._parameters)), p)

    def __getitem__(self, i: int) -> Parameter:
        return list(self._parameters.values())[i]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._parameters.values())


class LayerDict(Layer):
    """An ordered dict of layers whose parameters are registered (Paddle's ``LayerDict``)."""

    def __init__(self, sublayers: Mapping[str, Layer] | Iterable[tuple[str, Layer]] | None = None) -> None:
        super().__init__()
        if sublayers is not None:
            self.update(sublayers)

    def __getitem__(self, key: str) -> Layer:
        return self._sub_layers[key]

    def __setitem__(self, key: str, layer: Layer) -> None:
        self.add_sublayer(key, layer)

    def __delitem__(self, key: str) -> None:
        del self._sub_layers[key]

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self) -> Iterator[str]:
        return iter(self._sub_layers)

    def __contains__(self, key: object) -> bool:
        return key in self._sub_layers

    def clear(self) -> None:
        self._sub_layers.clear()

    def pop(self, key: str) -> Layer:
        return self._sub_layers.pop(key)

    def keys(self) -> Iterable[str]:
        return self._sub_layers.keys()

    def items(self) -> Iterable[tuple[str, Layer]]:
        return self._sub_layers.items()

    def values(self) -> Iterable[Layer]:
        return self._sub_layers.values()

    def update(self, sublayers: Mapping[str, Layer] | Iterable[tuple[str, Layer]]) -> None:
        items = sublayers.items() if isinstance(sublayers, (Mapping, OrderedDict)) else sublayers
        for k, v in items:
            if not isinstance(v, Layer):
                raise OpArgumentError(f"[LayerDict] value for '{k}' must be a Layer, got {type(v).__name__}")
            self.add_sublayer(str(k), v)
