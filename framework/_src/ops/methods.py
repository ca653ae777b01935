"""Tensor methods and Python operators, attached to :class:`Tensor`."""

from __future__ import annotations

import copy
from typing import Any

from adapter_api import OpArgumentError

from .. import autograd, dispatch
from .. import device as _dev
from .. import dtypes as _dt
from .. import fastcall as _fastcall
from ..tensor import VIEW_STATE, Tensor, to_tensor
from . import creation, elementwise, indexing, shape, unary
from . import math as M
from .base import OPS, OpDef, apply1, fast_binary, fast_binary_of, fast_scalars


def _transfer_grad(n: autograd.Node, g: list[Tensor | None]) -> list[Tensor | None]:
    return [_move(g[0], n.inputs[0].device)]


TRANSFER = OpDef("to_device", "transfer", None, _transfer_grad)
OPS["to_device"] = TRANSFER


def _move(x: Tensor, dev: _dev.Device) -> Tensor:
    if x.device == dev:
        return x
    out = dispatch.copy_to(x, dev)
    if autograd.GRAD_ENABLED.get() and not x.stop_gradient:
        autograd.record(TRANSFER, [x], {}, [out])
    return out


def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``x.to("opencl:0")``, ``x.to("float16")``, ``x.to(device, dtype)``, ``x.to(other_tensor)``."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("blocking", None)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise OpArgumentError(f"[to] unexpected arguments {sorted(kwargs)}; expected device= and dtype=")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, _dev.Device):
            device = a
        elif isinstance(a, str) and a.split(":")[0].lower() in _dt._BY_NAME and ":" not in a:
            try:
                _dev.device_type(a)
                device = a
            except Exception:  # noqa: BLE001 — not a device type: a dtype name
                dtype = a
        elif isinstance(a, str):
            device = a
        else:
            dtype = a
    r = self
    if device is not None:
        r = _move(r, _dev.parse(device))
    if dtype is not None:
        r = M.cast(r, dtype)
    return r


def clone(self: Tensor) -> Tensor:
    return apply1(OPS["copy"], [self], {})


def __deepcopy__(self: Tensor, memo: dict[int, Any]) -> Tensor:
    """``copy.deepcopy``: a new tensor with its own storage and no graph (as PyTorch's leaf
    copy); ``stop_gradient`` and the other attributes of subclasses (Parameter) carry over."""
    with autograd.no_grad():
        data = apply1(OPS["copy"], [self], {})
    new = object.__new__(type(self))
    for cls in type(self).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if slot in ("__weakref__", "__dict__") or not hasattr(self, slot):
                continue
            value = getattr(self, slot)
            setattr(
                new,
                slot,
                value
                if slot in _STORAGE_SLOTS or not isinstance(value, (dict, list))
                else copy.deepcopy(value, memo),
            )
    for slot in _STORAGE_SLOTS:
        setattr(new, slot, getattr(data, slot))
    new._node = None
    for k, v in getattr(self, "__dict__", {}).items():  # name, persistable, ...; not the graph's
        if k not in _GRAPH_STATE:
            setattr(new, k, copy.deepcopy(v, memo))
    memo[id(self)] = new
    return new


#: what makes a tensor's value: taken from the copy, not from the original
_STORAGE_SLOTS = ("_block", "_offset", "shape", "dtype", "device", "_nv")
#: a tensor's attributes about its graph and in-place history: a deep copy starts afresh
_GRAPH_STATE = (
    frozenset(
        ("grad", "_hooks", "_post_accumulate_hooks", "_out_index", "_retain_grad")
        + ("_version", "_modified_by", "_edited_at", "_edit_times", "_earlier")
    )
    | VIEW_STATE
)


def detach(self: Tensor) -> Tensor:
    """A tensor of the same values with no graph; it shares the storage (a view, as Paddle's and
    PyTorch's: an in-place update of either changes both, and autograd does not record one
    made through it)."""
    return self._view(self.shape, detached=True)


def backward(self: Tensor, grad_tensor: Tensor | None = None, retain_graph: bool = False) -> None:
    """Accumulate d(self)/d(leaf) into every leaf's ``.grad``."""
    autograd.backward(self, grad_tensor, retain_graph)


def register_hook(self: Tensor, hook: Any) -> Any:
    """``hook(grad) -> new grad or None`` runs when this tensor's gradient is computed."""
    if self.stop_gradient:
        raise OpArgumentError("[register_hook] cannot register a hook on a tensor that does not require grad")
    if self._hooks is None:
        self._hooks = []
    self._hooks.append(hook)

    class _Handle:
        def remove(_h) -> None:  # noqa: N805
            if hook in (self._hooks or []):
                self._hooks.remove(hook)

    return _Handle()


def retain_grads(self: Tensor) -> None:
    self._retain_grad = True


def clear_grad(self: Tensor, set_to_zero: bool = False) -> None:
    self.grad = creation.zeros_like(self) if set_to_zero and self.grad is not None else None


def check_not_grad_leaf(x: Tensor, name: str) -> None:
    """In-place updates of a leaf that requires grad (a parameter) are refused while grad is on."""
    if autograd.is_grad_enabled() and x.is_leaf and not x.stop_gradient:
        raise OpArgumentError(
            f"[{name}] a leaf tensor that requires grad cannot be modified in place; "
            f"use `with fw.no_grad():` (as optimizers do) or modify a copy"
        )


def inplace(fn: Any, name: str, same_shape: bool = True, keep_dtype: bool = True) -> Any:
    """``self.<name>(...)``: ``fn(self, ...)`` stored back into ``self`` (its dtype kept, unless
    ``keep_dtype=False``: then ``self`` takes the result's dtype, as Paddle's ``x.equal_(y)``
    and ``x.cast_(dtype)`` do) and its version bumped; the graph keeps the old value where it
    was used (``indexing.alias``)."""

    def op(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        check_not_grad_leaf(self, name)
        old = indexing.alias(self)
        r = fn(old, *args, **kwargs)
        if keep_dtype and r.dtype != self.dtype:
            if _dt.category(r.dtype) > _dt.category(self.dtype):
                raise OpArgumentError(
                    f"[{name}] result type {r.dtype} cannot be stored in a {self.dtype} tensor"
                )
            r = M.cast(r, self.dtype)
        if same_shape and r.shape != self.shape:
            raise OpArgumentError(f"[{name}] result shape {r.shape} differs from the tensor's {self.shape}")
        indexing.rebind(self, r, name, old)
        return self

    op.__name__ = name
    op.__doc__ = f"In-place ``{name.rstrip('_')}``: the tensor itself holds the result."
    return op


def _rev(fn: Any) -> Any:
    return lambda self, other: fn(other, self)


#: the operators with a plain eager case in C: name -> (op function, its op, reflected, own plan)
_FAST_OPERATORS: dict[str, tuple[Any, str, bool, Any]] = {
    "__neg__": (M.neg, "neg", False, unary.fast_neg_plan),
    **{
        f"__{n}__": (fn, fn.__name__, False, None)
        for n, fn in (
            ("add", M.add),
            ("sub", M.subtract),
            ("mul", M.multiply),
            ("lt", M.less_than),
            ("le", M.less_equal),
            ("gt", M.greater_than),
            ("ge", M.greater_equal),
            ("eq", M.equal),
            ("ne", M.not_equal),
        )
    },
    "__truediv__": (M.divide, "div", False, elementwise.fast_divide_plan),
    **{
        f"__r{n}__": (fn, op, True, None)
        for n, fn, op in (
            ("add", M.add, "add"),
            ("sub", M.subtract, "sub"),
            ("mul", M.multiply, "mul"),
            ("truediv", M.divide, "div"),
        )
    },
}


def _fast_operator(name: str, mod: Any = None) -> Any:
    """The operator ``name`` (``"__add__"``...) with its plain eager case in C: the extension
    ``mod``, else the one loaded now (the Python function where there is none)."""
    fn, op, reflected, plan = _FAST_OPERATORS[name]
    slow = _rev(fn) if reflected else fn
    if reflected:
        slow.__name__ = slow.__qualname__ = name
        slow.__doc__ = f"``other {name[3:-2]} self``: :func:`{fn.__name__}` with the operands swapped."
    how = {"reflected": reflected, **({"resolver": plan} if plan is not None else {})}
    if name == "__neg__":
        how["unary"] = True
    return fast_binary(OPS[op], slow, **how) if mod is None else fast_binary_of(mod, OPS[op], slow, **how)


def _permute_method(self: Tensor, *dims: Any) -> Tensor:
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = tuple(dims[0])
    return shape.transpose(self, dims)


def _reshape_method(self: Tensor, *shape_: Any, **kw: Any) -> Tensor:
    if "shape" in kw:
        shape_ = (kw["shape"],)
    if len(shape_) == 1 and isinstance(shape_[0], (list, tuple)):
        shape_ = tuple(shape_[0])
    return shape.reshape(self, shape_)


def _expand_method(self: Tensor, *shape_: Any) -> Tensor:
    if len(shape_) == 1 and isinstance(shape_[0], (list, tuple)):
        shape_ = tuple(shape_[0])
    return shape.expand(self, shape_)


def _fill_(self: Tensor, value: Any, name: str = "fill_") -> Tensor:
    """Every element becomes ``value``. In a graph (a tensor that is no leaf, grad on) the old
    value gets no gradient (``views.overwritten``)."""
    check_not_grad_leaf(self, name)
    old = indexing.alias(self)
    indexing.rebind(self, creation.full_like(old, value), name, old)
    return self


def _zero_(self: Tensor) -> Tensor:
    return _fill_(self, 0, "zero_")


def _set_value(self: Tensor, value: Any) -> Tensor:
    """Replace the values (same shape), keeping the tensor object: ``param.set_value(arr)``.

    Allowed on parameters (loading weights); the version is bumped, so a graph that used the
    old values refuses to differentiate through them."""
    v = value if isinstance(value, Tensor) else to_tensor(value, dtype=self.dtype, device=self.device)
    if v.shape != self.shape:
        raise OpArgumentError(f"[set_value] value has shape {v.shape}, the tensor has {self.shape}")
    v = v.to(self.device).astype(self.dtype).detach()
    if v._block is self._block or (isinstance(value, Tensor) and v._block is value._block):
        # NOTE: the values are copied (as Paddle's set_value does): sharing the source's storage
        # would let an in-place update of either tensor (an optimizer's step) change the other
        v = clone(v)
    if self._base is not None or self._views is not None:  # a view, or viewed: they all see it
        with autograd.no_grad():
            indexing.rebind(self, v, "set_value")
        return self
    indexing.note_write(self)
    self._block, self._offset, self._nv = v._block, v._offset, None
    self._bump_version("set_value")
    return self


def _copy_(self: Tensor, src: Any, blocking: bool = True) -> Tensor:
    """Paddle's ``x.copy_(src, blocking)``: ``x`` takes ``src``'s values, and its shape as
    Paddle's does (the same dtype: Paddle refuses another), reaching the tensors that view it.

    Recorded for autograd as PyTorch's ``copy_`` (the gradient goes to ``src``, none to the old
    value); Paddle 3.3.1 records nothing. ``blocking`` is accepted (copies are ordered here).

    Example:
        >>> import framework as fw
        >>> x = fw.zeros([2, 3])
        >>> x.reshape([6]).copy_(fw.arange(6, dtype="float32"), True)
        Tensor(shape=[6], dtype=float32, device=cpu:0,
               [0., 1., 2., 3., 4., 5.])
        >>> x.tolist()
        [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    """
    check_not_grad_leaf(self, "copy_")
    if not isinstance(src, Tensor):
        raise OpArgumentError(
            f"[copy_] src must be a Tensor, got {type(src).__name__}; wrap data with fw.to_tensor"
        )
    if src.dtype != self.dtype:
        raise OpArgumentError(
            f"[copy_] src has dtype {src.dtype}, the tensor {self.dtype} (Paddle's copy_ does not cast); "
            f"cast it first: x.copy_(src.astype('{self.dtype}'))"
        )
    old = indexing.alias(self)
    indexing.rebind(self, clone(_move(src, self.device)), "copy_", old)
    return self


def register_post_accumulate_grad_hook(self: Tensor, hook: Any) -> Any:
    return autograd.register_post_accumulate_grad_hook(self, hook)


register_post_accumulate_grad_hook.__doc__ = autograd.register_post_accumulate_grad_hook.__doc__


_METHODS: dict[str, Any] = {
    "__deepcopy__": __deepcopy__,
    "__floordiv__": M.floor_divide,
    "__rfloordiv__": _rev(M.floor_divide),
    "__mod__": M.remainder,
    "__rmod__": _rev(M.remainder),
    "__pow__": M.pow_operator,
    "__rpow__": _rev(M.pow_operator),
    "__matmul__": M.matmul,
    "__rmatmul__": _rev(M.matmul),
    "__abs__": M.abs,
    "__pos__": lambda self: self,
    "__getitem__": indexing.getitem,
    "__setitem__": indexing.setitem,
    "__iadd__": inplace(M.add, "__iadd__"),
    "__isub__": inplace(M.subtract, "__isub__"),
    "__imul__": inplace(M.multiply, "__imul__"),
    "__itruediv__": inplace(M.divide, "__itruediv__"),
    "add": M.add,
    "subtract": M.subtract,
    "multiply": M.multiply,
    "divide": M.divide,
    "pow": M.pow,
    "matmul": M.matmul,
    "maximum": M.maximum,
    "minimum": M.minimum,
    "add_": inplace(M.add, "add_"),
    "subtract_": inplace(M.subtract, "subtract_"),
    "multiply_": inplace(M.multiply, "multiply_"),
    "scale_": inplace(M.multiply, "scale_"),
    "abs": M.abs,
    "exp": M.exp,
    "log": M.log,
    "sqrt": M.sqrt,
    "rsqrt": M.rsqrt,
    "sin": M.sin,
    "cos": M.cos,
    "tanh": M.tanh,
    "sign": M.sign,
    "floor": M.floor,
    "ceil": M.ceil,
    "erf": M.erf,
    "square": M.square,
    "reciprocal": M.reciprocal,
    "round": M.round,
    "neg": M.neg,
    "isnan": M.isnan,
    "isinf": M.isinf,
    "isfinite": M.isfinite,
    "logical_not": M.logical_not,
    "clip": M.clip,
    "clamp": M.clip,
    "sum": M.sum,
    "mean": M.mean,
    "max": M.max,
    "min": M.min,
    "prod": M.prod,
    "argmax": M.argmax,
    "argmin": M.argmin,
    "all": M.all,
    "any": M.any,
    "amax": M.max,
    "amin": M.min,
    "astype": M.cast,
    "cast": M.cast,
    "to": to,
    "cpu": lambda self: to(self, "cpu"),
    "cuda": lambda self, device_id=None, blocking=True: to(self, _dev.gpu(device_id or 0)),
    "clone": clone,
    "detach": detach,
    "backward": backward,
    "register_hook": register_hook,
    "register_post_accumulate_grad_hook": register_post_accumulate_grad_hook,
    "retain_grads": retain_grads,
    "clear_grad": clear_grad,
    "clear_gradient": clear_grad,
    "zero_": _zero_,
    "fill_": _fill_,
    "set_value": _set_value,
    "copy_": _copy_,
    "reshape": _reshape_method,
    "view": _reshape_method,
    "flatten": shape.flatten,
    "squeeze": shape.squeeze,
    "unsqueeze": shape.unsqueeze,
    "transpose": _permute_method,
    "permute": _permute_method,
    "swapaxes": shape.swapaxes,
    "t": shape.t,
    "expand": _expand_method,
    "expand_as": shape.expand_as,
    "broadcast_to": _expand_method,
    "split": shape.split,
    "chunk": shape.chunk,
    "flip": shape.flip,
    "tile": shape.tile,
    "unbind": shape.unbind,
    "gather": indexing.gather,
    "index_select": indexing.index_select,
    "masked_fill": indexing.masked_fill,
    "contiguous": lambda self: self,
    "equal": M.equal,
    "not_equal": M.not_equal,
}

for _k, _v in _METHODS.items():
    setattr(Tensor, _k, _v)
for _k in _FAST_OPERATORS:
    setattr(Tensor, _k, _fast_operator(_k))
# ``x + 2.0`` too: the constant a float becomes next to a floating tensor, in C
fast_scalars(elementwise.fast_scalar_plan, elementwise._CONST, elementwise._const)


def _swap_in_fast(mod: Any) -> None:
    """The extension landed after a background build (``fastcall.when_ready``): from now on
    ``x + y``, ``x / y``, ``x < y``... (and ``x op 2.0``, ``2.0 op x``) take its plain case."""
    for name in _FAST_OPERATORS:
        setattr(Tensor, name, _fast_operator(name, mod))
    fast_scalars(elementwise.fast_scalar_plan, elementwise._CONST, elementwise._const)


_fastcall.when_ready(_swap_in_fast)

Tensor.T = property(lambda self: shape.transpose(self, tuple(range(self.ndim))[::-1]))  # type: ignore[attr-defined]
Tensor.mT = property(lambda self: shape.swapaxes(self, -1, -2))  # type: ignore[attr-defined]
