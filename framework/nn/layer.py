"""``Layer``: the base of every model (Paddle's ``paddle.nn.Layer``) and ``Parameter``."""

from __future__ import annotations

import sys
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src import device as _dev
from .._src.autograd import no_grad
from .._src.dtypes import as_dtype, get_default_dtype, is_floating
from .._src.tensor import Tensor
from . import initializer as I
from .param_attr import ParamAttr


class Parameter(Tensor):
    """A trainable tensor: ``stop_gradient=False``, owned by a :class:`Layer`."""

    __slots__ = ("trainable", "optimize_attr")
    #: set from a ParamAttr: its weight decay (replacing the optimizer's) and whether clipping applies
    regularizer: Any = None
    need_clip = True

    @classmethod
    def from_tensor(cls, t: Tensor, trainable: bool = True) -> Parameter:
        p = object.__new__(cls)
        t = t.detach()
        for slot in Tensor.__slots__:
            if slot not in ("__weakref__", "__dict__") and hasattr(t, slot):
                setattr(p, slot, getattr(t, slot))
        p.stop_gradient = not trainable
        p.trainable = trainable
        p.optimize_attr = {"learning_rate": 1.0}
        p.persistable = True
        return p


def _move_into(t: Tensor, device: Any = None, dtype: Any = None) -> None:
    """Replace ``t``'s storage with a copy on ``device`` / in ``dtype`` (same object)."""
    with no_grad():
        r = t
        if device is not None:
            r = r.to(device)
        if dtype is not None and is_floating(r.dtype):
            r = r.astype(dtype)
        if r is t:
            return
        r = r.detach()
    t._block, t._offset, t._nv, t.device, t.dtype = r._block, r._offset, None, r.device, r.dtype
    t._bump_version("Layer.to")
    if t.grad is not None:
        t.grad = t.grad.to(t.device).astype(t.dtype).detach()


class _HookHandle:
    def __init__(self, hooks: dict[int, Callable[..., Any]], key: int) -> None:
        self._hooks, self._key = hooks, key

    def remove(self) -> None:
        self._hooks.pop(self._key, None)


class Layer:
    """Base class of layers and models.

    Assigning a :class:`Parameter` or a ``Layer`` to an attribute registers it; tensors
    registered with :meth:`register_buffer` travel with ``to()`` and ``state_dict``.

    >>> import framework as fw
    >>> class Net(fw.nn.Layer):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = fw.nn.Linear(4, 2)
    ...     def forward(self, x):
    ...         return self.fc(x)
    >>> sorted(Net().state_dict())
    ['fc.bias', 'fc.weight']
    """

    training: bool

    def __init__(self, name_scope: str | None = None, dtype: Any = None) -> None:
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_sub_layers"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistable"] = set()
        d["_pre_hooks"] = OrderedDict()
        d["_post_hooks"] = OrderedDict()
        d["_hook_id"] = 0
        d["_dtype"] = as_dtype(dtype) if dtype is not None else get_default_dtype()
        d["_full_name"] = name_scope or type(self).__name__.lower()

    # -- registration -------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        if "_parameters" not in self.__dict__:
            raise OpArgumentError(
                f"[Layer] {type(self).__name__}.__init__ must call super().__init__() before assigning attributes"
            )
        return self.__dict__

    def __setattr__(self, name: str, value: Any) -> None:
        d = self._state()
        for store in ("_parameters", "_sub_layers", "_buffers"):
            d[store].pop(name, None)
        if isinstance(value, Parameter):
            d["_parameters"][name] = value
            d.pop(name, None)
        elif isinstance(value, Layer):
            d["_sub_layers"][name] = value
            d.pop(name, None)
        elif name in d.get("_buffer_names", ()) and isinstance(value, Tensor):
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_sub_layers", "_buffers"):
            s = d.get(store)
            if s is not None and name in s:
                return s[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in ("_parameters", "_sub_layers", "_buffers"):
            if name in self.__dict__[store]:
                del self.__dict__[store][name]
                return
        object.__delattr__(self, name)

    def add_parameter(self, name: str, parameter: Parameter | None) -> Parameter | None:
        if parameter is not None and not isinstance(parameter, Parameter):
            raise OpArgumentError(
                f"[Layer] add_parameter('{name}') expects a Parameter, got {type(parameter).__name__}; wrap it with create_parameter"
            )
        self._parameters[name] = parameter
        return parameter

    def add_sublayer(self, name: str, sublayer: Layer) -> Layer:
        if not isinstance(sublayer, Layer):
            raise OpArgumentError(
                f"[Layer] add_sublayer('{name}') expects a Layer, got {type(sublayer).__name__}"
            )
        self._sub_layers[str(name)] = sublayer
        return sublayer

    def register_buffer(self, name: str, tensor: Tensor | None, persistable: bool = True) -> None:
        """A tensor that is state but not trained (running statistics, rotary tables)."""
        if tensor is not None and not isinstance(tensor, Tensor):
            raise OpArgumentError(
                f"[Layer] register_buffer('{name}') expects a Tensor, got {type(tensor).__name__}"
            )
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor
        self.__dict__.setdefault("_buffer_names", set()).add(name)
        if persistable:
            self._non_persistable.discard(name)
        else:
            self._non_persistable.add(name)

    def create_parameter(
        self,
        shape: Any,
        attr: Any = None,
        dtype: Any = None,
        is_bias: bool = False,
        default_initializer: I.Initializer | None = None,
    ) -> Parameter | None:
        """A new parameter drawn from ``attr`` (a :class:`ParamAttr`, an initializer or a name),
        else ``default_initializer``, else Xavier-uniform (weights) / zeros (biases).
        ``attr=False`` means no parameter. A ParamAttr's name, learning-rate scale, regularizer,
        trainability and ``need_clip`` go onto the parameter."""
        attr = ParamAttr._to_attr(attr)
        if attr is False:
            return None
        init = attr.initializer if attr is not None else None
        if init is None:
            init = default_initializer or (I.Constant(0.0) if is_bias else I.XavierUniform())
        if not callable(init):
            raise OpArgumentError(f"[create_parameter] the initializer must be an Initializer, got {init!r}")
        t = init(tuple(int(s) for s in shape), dtype or self._dtype)
        p = Parameter.from_tensor(t, trainable=attr.trainable if attr is not None else True)
        if attr is not None:
            p.optimize_attr = {"learning_rate": attr.learning_rate}
            p.regularizer, p.need_clip = attr.regularizer, attr.need_clip
            if attr.name is not None:
                p.name = attr.name
        return p

    # -- traversal ----------------------------------------------------------------------
    def named_parameters(
        self, prefix: str = "", include_sublayers: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        seen: set[int] = set()
        layers = (
            self.named_sublayers(prefix=prefix, include_self=True) if include_sublayers else [(prefix, self)]
        )
        for lp, layer in layers:
            for n, p in layer._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{lp}.{n}" if lp else n), p

    def parameters(self, include_sublayers: bool = True) -> list[Parameter]:
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    def named_sublayers(
        self, prefix: str = "", include_self: bool = False, layers_set: set | None = None
    ) -> Iterator[tuple[str, Layer]]:
        seen = set() if layers_set is None else layers_set
        if id(self) in seen:
            return
        seen.add(id(self))
        if include_self:
            yield prefix, self
        for n, sub in self._sub_layers.items():
            if sub is None:
                continue
            p = f"{prefix}.{n}" if prefix else n
            yield from sub.named_sublayers(prefix=p, include_self=True, layers_set=seen)

    def sublayers(self, include_self: bool = False) -> list[Layer]:
        return [layer for _, layer in self.named_sublayers(include_self=include_self)]

    def named_children(self) -> Iterator[tuple[str, Layer]]:
        yield from ((n, s) for n, s in self._sub_layers.items() if s is not None)

    def children(self) -> Iterator[Layer]:
        return (s for _, s in self.named_children())

    def named_buffers(self, prefix: str = "", include_sublayers: bool = True) -> Iterator[tuple[str, Tensor]]:
        layers = (
            self.named_sublayers(prefix=prefix, include_self=True) if include_sublayers else [(prefix, self)]
        )
        for lp, layer in layers:
            for n, b in layer._buffers.items():
                if b is not None:
                    yield (f"{lp}.{n}" if lp else n), b

    def buffers(self, include_sublayers: bool = True) -> list[Tensor]:
        return [b for _, b in self.named_buffers(include_sublayers=include_sublayers)]

    def apply(self, fn: Callable[[Layer], None]) -> Layer:
        for layer in self.sublayers(include_self=True):
            fn(layer)
        return self

    # -- state --------------------------------------------------------------------------
    def state_dict(
        self,
        destination: dict | None = None,
        include_sublayers: bool = True,
        structured_name_prefix: str = "",
    ) -> dict[str, Tensor]:
        """Parameters and persistable buffers by dotted name (``"blocks.0.attn.weight"``)."""
        out = OrderedDict() if destination is None else destination
        layers = list(
            self.named_sublayers(prefix=structured_name_prefix, include_self=True)
            if include_sublayers
            else [(structured_name_prefix, self)]
        )
        # Paddle's names: a parameter reached under two names (an RNN's weight_ih_l0 and
        # 0.cell.weight_ih, tied weights) is listed under both.
        for lp, layer in layers:
            for n, p in layer._parameters.items():
                if p is not None:
                    out[f"{lp}.{n}" if lp else n] = p
        for lp, layer in layers:
            for n, b in layer._buffers.items():
                if b is not None and n not in layer._non_persistable:
                    out[f"{lp}.{n}" if lp else n] = b
        return out

    def set_state_dict(
        self, state_dict: dict[str, Any], use_structured_name: bool = True, strict: bool = False
    ) -> tuple[list[str], list[str]]:
        """Copy values into the existing parameters and buffers (on their devices, in their
        dtypes). Returns ``(missing_keys, unexpected_keys)`` and warns naming them (Paddle's
        behaviour); ``strict=True`` raises on any of them instead (PyTorch's). A state dict of
        which no key matches, or a shape mismatch, always raises, and then nothing is copied.

        >>> import framework as fw
        >>> net = fw.nn.Linear(2, 1)
        >>> net.set_state_dict(net.state_dict())
        ([], [])
        """
        if not isinstance(state_dict, Mapping):
            raise OpArgumentError(
                f"[set_state_dict] expected a dict of tensors by name, got {type(state_dict).__name__}"
            )
        own = self.state_dict()
        missing = [k for k in own if k not in state_dict]
        unexpected = [str(k) for k in state_dict if k not in own]
        if own and len(missing) == len(own):
            nested = [str(k) for k, v in state_dict.items() if isinstance(v, Mapping)]
            hint = (
                f"it nests dicts under {nested}: pass the model's part, e.g. sd[{nested[0]!r}]"
                if nested
                else "it is for another model, or was saved with other names"
            )
            raise OpArgumentError(
                f"[set_state_dict] none of the state dict's {len(state_dict)} keys ({_few(unexpected)}) names a "
                f"parameter or buffer of {type(self).__name__} ({_few(missing)}); {hint}"
            )
        if strict and (missing or unexpected):
            raise OpArgumentError(
                f"[set_state_dict] strict=True and the keys differ: missing {missing}, unexpected {unexpected}; "
                f"nothing was copied (pass strict=False to load the matching keys)"
            )
        for k, t in own.items():
            if k not in state_dict:
                continue
            v = state_dict[k]
            if not isinstance(v, (Tensor, np.ndarray)):
                raise OpArgumentError(
                    f"[set_state_dict] '{k}' is a {type(v).__name__} ({repr(v)[:40]}); expected a Tensor or a "
                    f"numpy array of shape {list(t.shape)} and dtype {t.dtype} (nothing was copied)"
                )
            if np.dtype(v.dtype) != t.dtype:
                raise OpArgumentError(
                    f"[set_state_dict] '{k}' is {np.dtype(v.dtype)} in the state dict but {t.dtype} in the layer "
                    f"(Paddle refuses this too; nothing was copied); cast it first, e.g. sd[{k!r}].astype('{t.dtype}')"
                )
            if tuple(v.shape) != t.shape:
                raise OpArgumentError(
                    f"[set_state_dict] '{k}' has shape {tuple(state_dict[k].shape)} in the state dict but {t.shape} "
                    f"in the layer; the model does not match the checkpoint (nothing was copied)"
                )
        if missing or unexpected:
            warnings.warn(
                f"[set_state_dict] loaded {len(own) - len(missing)} of {len(own)} entries; missing keys (left as they "
                f"were): {missing}; unexpected keys (ignored): {unexpected}",
                stacklevel=2,
            )
        for k, t in own.items():
            if k in state_dict:
                with no_grad():
                    t.set_value(state_dict[k])
        return missing, unexpected

    load_dict = set_state_dict
    set_dict = set_state_dict
    load_state_dict = set_state_dict

    # -- modes, devices, grads ------------------------------------------------------------
    def train(self, mode: bool = True) -> Layer:
        for layer in self.sublayers(include_self=True):
            layer.__dict__["training"] = mode
        return self

    def eval(self) -> Layer:
        return self.train(False)

    def to(self, device: Any = None, dtype: Any = None, blocking: Any = None) -> Layer:
        """Move every parameter and buffer to ``device`` and/or cast floating ones to
        ``dtype``, in place (the Parameter objects an optimizer holds stay valid)."""
        dev = _dev.parse(device) if device is not None else None
        d = as_dtype(dtype) if dtype is not None else None
        for t in self.parameters() + self.buffers():
            _move_into(t, dev, d)
        if d is not None:
            for layer in self.sublayers(include_self=True):
                layer.__dict__["_dtype"] = d
        return self

    def astype(self, dtype: Any) -> Layer:
        return self.to(dtype=dtype)

    def float(self) -> Layer:
        return self.to(dtype="float32")

    def clear_gradients(self, set_to_zero: bool = False) -> None:
        for p in self.parameters():
            p.clear_grad(set_to_zero)

    clear_grad = clear_gradients

    # -- calling ------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook: Callable[[Layer, tuple], Any]) -> _HookHandle:
        """``hook(layer, inputs)`` runs before ``forward``; a non-None result replaces the inputs."""
        self.__dict__["_hook_id"] += 1
        self._pre_hooks[self._hook_id] = hook
        return _HookHandle(self._pre_hooks, self._hook_id)

    def register_forward_post_hook(self, hook: Callable[[Layer, tuple, Any], Any]) -> _HookHandle:
        """``hook(layer, inputs, outputs)`` runs after ``forward``; a non-None result replaces the outputs."""
        self.__dict__["_hook_id"] += 1
        self._post_hooks[self._hook_id] = hook
        return _HookHandle(self._post_hooks, self._hook_id)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"[Layer] {type(self).__name__} must define forward()")

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        if self._pre_hooks:
            for hook in list(self._pre_hooks.values()):
                r = hook(self, inputs)
                if r is not None:
                    inputs = r if isinstance(r, tuple) else (r,)
        out = self.forward(*inputs, **kwargs)
        if self._post_hooks:
            for hook in list(self._post_hooks.values()):
                r = hook(self, inputs, out)
                if r is not None:
                    out = r
        return out

    def extra_repr(self) -> str:
        return ""

    def full_name(self) -> str:
        return self._full_name

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        for n, s in self._sub_layers.items():
            body = repr(s).replace("\n", "\n  ")
            lines.append(f"  ({n}): {body}")
        return "\n".join(lines) + (")" if len(lines) == 1 else "\n)")

    def __dir__(self) -> list[str]:
        return sorted(
            set(super().__dir__()) | set(self._parameters) | set(self._sub_layers) | set(self._buffers)
        )


def _few(keys: list[str], n: int = 3) -> str:
    """``'a', 'b', 'c' and 4 more`` for messages that name keys."""
    shown = ", ".join(repr(k) for k in keys[:n])
    return shown + (f" and {len(keys) - n} more" if len(keys) > n else "") if keys else "none"


#: the submodules Paddle's ``paddle.nn.layer`` package has, by the name of ours holding the same layers
_PADDLE_SUBMODULES = {
    "activation": "activation",
    "common": "common",
    "container": "container",
    "conv": "conv",
    "layers": "layer",
    "loss": "loss",
    "norm": "norm",
    "pooling": "pooling",
    "rnn": "rnn",
    "transformer": "transformer",
}


def __getattr__(name: str) -> Any:
    """Paddle's ``paddle.nn.layer.X``: every layer of ``fw.nn`` (``fw.nn.layer.Linear``) and the
    submodules (``fw.nn.layer.common``, ``fw.nn.layer.layers.Layer``), looked up once ``fw.nn`` is loaded."""
    nn = sys.modules.get(__name__.rpartition(".")[0])
    if nn is not None:
        if name in _PADDLE_SUBMODULES:
            return sys.modules[f"{nn.__name__}.{_PADDLE_SUBMODULES[name]}"]
        if name in getattr(nn, "__all__", ()) and isinstance(getattr(nn, name, None), type):
            return getattr(nn, name)
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
