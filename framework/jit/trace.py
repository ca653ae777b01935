"""Tracing: run a function once with the dispatcher in recording mode and keep what it did
as a :class:`framework.ir.Program`.

The tracer is the ``TRACER`` hook of ``ops.base.apply``: every primitive (and every composite
the device has a fused kernel for, which ``ops.base.call`` hands to ``apply`` as one op) comes
here instead of running. A composite without a fused kernel runs its decomposition, whose
primitives are recorded one by one: the program holds what eager mode would have run.
Traced tensors are ordinary :class:`Tensor` objects whose storage is a :class:`_Symbolic`
holding their IR value, so reshapes and detaches (which share storage) trace for free and a
read of the values is caught (:class:`TracedValueError` names the user's line).

Concrete tensors that enter an op become ``builtin.parameter`` (a Layer's parameters and
buffers, or any :class:`Parameter`: shared, never copied) or ``builtin.constant`` (anything
else: its values are baked into the program).

A concrete tensor the function changes in place (``set_value``, ``add_``, ``x[i] = v``: a
BatchNorm's running statistics) is put back as it was when the trace ends; its new value
becomes an extra output of the program, written back into the tensor after every run
(:meth:`Tracer.write_backs`). The tensors watched are the Layer's parameters and buffers and
every concrete tensor an op read before the change (a tensor read as a constant becomes a
parameter, so the next run reads what the last one wrote).
"""

from __future__ import annotations

import contextlib
import math
import os
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from adapter_api import OarlockError

from .._src import autograd
from .._src import device as _dev
from .._src.ops import base
from .._src.tensor import Tensor
from ..ir import Block, Operation, Program, TensorType, Value, print_attr
from .size_guards import SymInt

_FRAMEWORK = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_INTERNAL = tuple(os.path.join(_FRAMEWORK, d) + os.sep for d in ("_src", "jit", "ir", "static"))


class TracingError(OarlockError):
    """The function cannot be traced into a program (the message says why and what to do)."""


class GraphBreakError(TracingError):
    """What Python does here cannot be recorded into a program.

    A read of a traced tensor's values, an op whose output shape depends on values: under
    ``to_static(full_graph=False)`` the call runs eagerly instead (a graph break, see
    :mod:`framework.jit.graph_break`); with ``full_graph=True`` this error names the line.

    >>> import framework as fw
    >>> f = fw.jit.to_static(lambda x: x * x.sum().item(), full_graph=True)
    >>> try:
    ...     f(fw.ones([2]))
    ... except fw.jit.GraphBreakError as e:
    ...     print("item()" in str(e))
    True
    """


class TracedValueError(GraphBreakError):
    """Python code read the values of a traced tensor (``bool``, ``item``, ``numpy``, ``print``...)."""


def _user_line() -> str:
    """The innermost frame outside the framework's own tracing machinery."""
    for fr in reversed(traceback.extract_stack()):
        if not os.path.abspath(fr.filename).startswith(_INTERNAL):
            return f"{fr.filename}:{fr.lineno} ({fr.line or '?'})"
    return "<unknown>"


def _value_read(what: str) -> TracedValueError:
    return TracedValueError(
        f"[to_static] {what} of a traced tensor at {_user_line()}: while tracing a tensor has no values, "
        f"so this cannot be recorded into the program (with full_graph=False it is a graph break: the call "
        f"runs eagerly). An `if`/`while`/`for i in range(n)` written in the traced function itself is "
        f"converted; elsewhere use fw.static.nn.cond(pred, true_fn, false_fn) for an `if` and "
        f"fw.static.nn.while_loop(cond, body, loop_vars) for a `while` (as Paddle's paddle.static.nn.cond / "
        f"while_loop); fw.where(cond, a, b) chooses elementwise; Python branches on shapes and Python values "
        f"are fine"
    )


class _Scope:
    """Where traced values may be read: the program's body, or a region being traced (closed
    when its tracing ends: its values are gone)."""

    __slots__ = ("open", "what")

    def __init__(self, what: str) -> None:
        self.open = True
        self.what = what


class _Symbolic:
    """Stands in for a storage block: the IR value of a traced tensor."""

    __slots__ = ("value", "tracer", "scope")

    def __init__(self, value: Value, tracer: Tracer, scope: _Scope) -> None:
        self.value = value
        self.tracer = tracer
        self.scope = scope

    @property
    def handle(self) -> Any:
        raise _value_read("reading the values (numpy(), a device copy)")


class TracedTensor(Tensor):
    """A tensor being traced: shape, dtype and device, no values."""

    def __bool__(self) -> bool:
        raise _value_read("bool() (an `if`/`while`/`and`/`or`)")

    def item(self) -> Any:
        raise _value_read("item()")

    def numpy(self) -> np.ndarray:
        raise _value_read("numpy()")

    def tolist(self) -> Any:
        raise _value_read("tolist()")

    def __float__(self) -> float:
        raise _value_read("float()")

    def __int__(self) -> int:
        raise _value_read("int()")

    def __index__(self) -> int:
        raise _value_read("use as an index (__index__)")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise _value_read("conversion to a numpy array")

    def __repr__(self) -> str:
        return f"TracedTensor(shape={list(self.shape)}, dtype={self.dtype}, device={self.device})"

    def __str__(self) -> str:
        raise _value_read("printing the values (print, str)")

    def __format__(self, spec: str) -> str:
        raise _value_read("printing the values (format)")

    def backward(self, grad_tensor: Tensor | None = None, retain_graph: bool = False) -> None:
        """Inside a traced training step: recorded into the program (framework.jit.train_step)."""
        from .train_step import traced_backward

        if not traced_backward(self, grad_tensor, retain_graph):
            super().backward(grad_tensor, retain_graph)  # type: ignore[misc]


def _attr(op: str, key: str, v: Any) -> Any:
    """An attribute value in the IR's kinds (tuples, not lists; Python numbers, not numpy)."""
    if isinstance(v, (list, tuple)):
        return tuple(_attr(op, key, x) for x in v)
    if isinstance(v, SymInt):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, type) and issubclass(v, np.generic):
        return np.dtype(v)
    try:
        print_attr(v)
    except OarlockError:
        raise TracingError(
            f"[to_static] attribute '{key}' of op '{op}' is {type(v).__name__} {v!r}, which a program "
            f"cannot hold; ops traced into programs take ints, floats, bools, strings, dtypes and tuples"
        ) from None
    return v


#: what an in-place change of a tensor alters (slots, then attributes kept in ``__dict__``)
_STATE_SLOTS = ("_block", "_offset", "_nv", "shape", "dtype", "_node", "stop_gradient")
_STATE_ATTRS = ("_out_index", "_version", "_modified_by", "_edited_at", "_edit_times", "_earlier")


def _state(t: Tensor) -> tuple[tuple[Any, ...], dict[str, Any]]:
    d = t.__dict__
    return tuple(getattr(t, s) for s in _STATE_SLOTS), {k: d[k] for k in _STATE_ATTRS if k in d}


def _restore(t: Tensor, state: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    slots, attrs = state
    for s, v in zip(_STATE_SLOTS, slots):
        setattr(t, s, v)
    d = t.__dict__
    for k in _STATE_ATTRS:
        if k in attrs:
            d[k] = attrs[k]
        else:
            d.pop(k, None)


class Tracer:
    """Records ops into ``program``; ``params`` maps ``id(tensor)`` to a parameter name."""

    #: ``random.py`` draws from the global generator at run time under this tracer
    #: (``philox_uniform`` with ``seed = none``; see :mod:`framework.ir.control`)
    runtime_random = True

    def __init__(self, name: str, device: _dev.Device, params: dict[int, tuple[str, Tensor]]) -> None:
        self.program = Program(name)
        self.block = self.program.block
        self.scope = _Scope("the function")
        #: a tensor of each traced value (the one its op returned: it carries the autograd graph)
        self.tensor_of: dict[Value, Tensor] = {}
        #: tracing for training (the gradient rules are recorded after the forward)
        self.training = False
        self.device = device
        self.devname = str(device)
        self.params = params
        self.param_values: dict[str, Value] = {}
        self.param_tensors: dict[str, Tensor] = {}
        self.const_values: dict[int, tuple[Tensor, Value]] = {}
        self.constants: dict[str, Tensor] = {}
        #: every block a region was traced into (a discarded trace attempt drops their uses)
        self.opened: list[Block] = []
        #: for a training trace, where the joint program splits (see :func:`trace`)
        self.backward: dict[str, Any] | None = None
        #: id -> (concrete tensor, its state before the trace): the tensors whose in-place
        #: changes become write-backs (:meth:`write_backs`)
        self.watched: dict[int, tuple[Tensor, Any]] = {id(t): (t, _state(t)) for _, t in params.values()}
        #: the watched views that follow their base's writes: put back, not written back
        self.restore_only: set[int] = set()
        #: the tensors the program's last outputs are written back into, in order
        self.written: list[Tensor] = []

    def _type(self, shape: Sequence[int], dtype: Any) -> TensorType:
        return TensorType(tuple(int(d) for d in shape), np.dtype(dtype), self.devname)

    def _tensor(self, v: Value, shape: Sequence[int], dtype: Any) -> TracedTensor:
        shape = tuple(shape)  # a dynamic dim stays a SymInt: size_guards.recording unshares Sizes
        t = TracedTensor._make(_Symbolic(v, self, self.scope), 0, shape, np.dtype(dtype), self.device)  # type: ignore[arg-type]
        self.tensor_of.setdefault(v, t)
        return t  # type: ignore[return-value]

    @contextlib.contextmanager
    def region(self, what: str) -> Iterator[Block]:
        """Trace into a new block (a region of a cf op being built); its values go out of
        scope at the end. Parameters and constants still go to the program's body."""
        blk, scope = Block(), _Scope(what)
        self.opened.append(blk)
        saved = self.block, self.scope
        self.block, self.scope = blk, scope
        try:
            yield blk
        finally:
            scope.open = False
            self.block, self.scope = saved

    def _top(self, name: str, ty: TensorType, attrs: dict[str, Any]) -> Value:
        """A builtin op in the program's body (so every region sees it)."""
        return self.program.block.append(name, [], [ty], attrs)  # type: ignore[return-value]

    def input(self, shape: Sequence[int], dtype: Any) -> TracedTensor:
        ty = self._type(shape, dtype)
        # the shape as given: a dynamic dim stays a SymInt (framework.jit.size_guards)
        return self._tensor(self.block.add_argument(ty), tuple(shape), ty.dtype)

    def value_of(self, t: Tensor, op: str) -> Value:
        blk = t._block
        if isinstance(blk, _Symbolic):
            if blk.tracer is not self:
                raise TracingError(
                    f"[to_static] op '{op}' reads a tensor from another trace (kept from an earlier "
                    f"call?); a traced function must not keep tensors between calls"
                )
            v = blk.value
            if not blk.scope.open:
                raise TracingError(
                    f"[to_static] op '{op}' at {_user_line()} reads a tensor computed inside {blk.scope.what}, "
                    f"whose tracing has ended; return it from that function instead of keeping it"
                )
            if self.training and blk.scope is not self.scope and t.stop_gradient:
                first = self.tensor_of.get(v)
                if first is not None and first is not t and not first.stop_gradient:
                    # a region reads a detached tensor (x.detach(), before or inside it): the
                    # program says so, for the gradient's replay of the region to stop there
                    v = self.block.append(
                        "op.reshape", [v], [v.type], {"shape": tuple(v.type.shape), "stop_gradient": True}
                    )
            if t._offset:
                raise TracingError(
                    f"[to_static] op '{op}' reads a view at an offset, which programs do not hold"
                )
            if tuple(t.shape) != v.type.shape:  # a reshape/squeeze/flatten: storage shared, shape changed
                v = self.block.append(
                    "op.reshape",
                    [v],
                    [self._type(t.shape, t.dtype)],
                    {"shape": tuple(int(d) for d in t.shape)},
                )
            return v
        if t.device != self.device:
            raise TracingError(
                f"[to_static] op '{op}' reads a tensor on {t.device} while tracing on {self.device}; "
                f"create it on the input's device (or move the layer with layer.to)"
            )
        hit = self.params.get(id(t))
        if (
            hit is None and getattr(t, "persistable", False) and hasattr(t, "trainable")
        ):  # a Parameter outside the layer
            hit = self.params[id(t)] = (f"param_{len(self.params)}", t)
        if (
            hit is None
        ):  # a reshape of a parameter (shares its storage): the parameter, reshaped in the program
            base_param = self._param_of_storage(t)
            if base_param is not None:
                v = self.value_of(base_param, op)
                return self.block.append(
                    "op.reshape",
                    [v],
                    [self._type(t.shape, t.dtype)],
                    {"shape": tuple(int(d) for d in t.shape)},
                )  # type: ignore[return-value]
        if id(t) not in self.watched:
            self.watched[id(t)] = (t, _state(t))
        if hit is not None:
            name, _ = hit
            v = self.param_values.get(name)
            if v is None:
                v = self._top("builtin.parameter", self._type(t.shape, t.dtype), {"name": name})
                self.tensor_of.setdefault(v, t)
                self.param_values[name] = v
                self.param_tensors[name] = t
            return v  # type: ignore[return-value]
        seen = self.const_values.get(id(t))
        if seen is not None and seen[0] is t:
            return seen[1]
        ty = self._type(t.shape, t.dtype)
        if math.prod(t.shape) == 1:
            v = self._top("builtin.constant", ty, {"value": _attr(op, "value", t.numpy().reshape(()).item())})
        else:
            name = f"const_{len(self.constants)}"
            self.constants[name] = t
            v = self._top("builtin.constant", ty, {"name": name})
        self.tensor_of.setdefault(v, t)
        self.const_values[id(t)] = (t, v)  # type: ignore[assignment]
        return v  # type: ignore[return-value]

    def write_backs(self) -> list[Value]:
        """Put every watched tensor the function changed in place back as it was before the
        trace, and return the values they hold at its end (their order in :attr:`written`).
        A tensor read as a constant becomes a parameter (the next run reads the new value)."""
        changed: list[tuple[Tensor, Value | Tensor]] = []
        for t, st in list(self.watched.values()):
            if id(t) in self.restore_only:
                continue
            slots = st[0]
            if t._block is slots[0] and t._offset == slots[1] and tuple(t.shape) == tuple(slots[3]):
                continue
            if tuple(t.shape) != tuple(slots[3]) or t.dtype != slots[4]:
                self.restore()
                raise TracingError(
                    f"[to_static] the traced function changes a tensor in place from {list(slots[3])} "
                    f"{slots[4]} to {list(t.shape)} {t.dtype}; a program writes back values of the same "
                    f"shape and dtype only"
                )
            if isinstance(t._block, _Symbolic):
                changed.append((t, self.value_of(t, "write-back")))
            else:  # set to concrete values while traced: every run writes those values
                changed.append((t, Tensor._make(t._block, t._offset, tuple(t.shape), t.dtype, t.device)))
        states = {id(t): self.watched[id(t)][1] for t, _ in changed}
        self.restore()
        values: list[Value] = []
        for t, v in changed:
            self._as_parameter(t, states[id(t)])
            values.append(self.value_of(v, "write-back") if isinstance(v, Tensor) else v)
            self.written.append(t)
        return values

    def watch(self, t: Tensor, write_back: bool = True) -> None:
        """``t`` is about to change in place (``indexing.note_write``): keep its state.
        ``write_back=False``: a view following its base's write (the base is written back;
        the view is only put back when the trace ends, and adds no output to the program)."""
        if not isinstance(t._block, _Symbolic) and id(t) not in self.watched:
            self.watched[id(t)] = (t, _state(t))
            if not write_back:
                self.restore_only.add(id(t))
        elif write_back:
            self.restore_only.discard(id(t))

    def _as_parameter(self, t: Tensor, state: Any) -> None:
        """``t`` is written back after each run, so the program reads it as a parameter: each
        constant read of its storage (``t`` itself or an alias of it) becomes one."""
        blk, off = state[0][0], state[0][1]
        for key, (c, v) in list(self.const_values.items()):
            if c._block is not blk or c._offset != off:
                continue
            if tuple(c.shape) != tuple(t.shape) or c.dtype != t.dtype:
                raise TracingError(
                    f"[to_static] the traced function changes a tensor in place and reads it through a "
                    f"view of shape {list(c.shape)} (the tensor is {list(t.shape)}); read the tensor itself"
                )
            op = v.defining_op
            assert op is not None
            self.constants.pop(op.attrs.get("name"), None)  # type: ignore[arg-type]
            hit = self.params.get(id(t))
            name = hit[0] if hit is not None else f"buffer_{len(self.param_tensors)}"
            while hit is None and name in self.param_tensors:
                name += "_"
            op.name, op.attrs = "builtin.parameter", {"name": name}
            del self.const_values[key]
            self.param_values.setdefault(name, v)
            self.param_tensors[name] = t
            self.params[id(t)] = (name, t)

    def restore(self) -> None:
        """Put every watched tensor back as it was before the trace."""
        for t, st in self.watched.values():
            if t._block is not st[0][0] or t._offset != st[0][1]:
                _restore(t, st)

    def _param_of_storage(self, t: Tensor) -> Tensor | None:
        """The parameter whose whole storage ``t`` views with another shape, or None."""
        if t._offset:
            return None
        for _, p in self.params.values():
            if (
                p._block is t._block
                and p is not t
                and not p._offset
                and p.dtype == t.dtype
                and p.size == t.size
            ):
                return p
        return None

    def __call__(self, op: base.OpDef, ins: list[Tensor], attrs: dict[str, Any]) -> list[Tensor]:
        attrs = dict(attrs)
        if op.name == "full":
            dev = attrs.pop("device", None)
            if dev is not None and dev != self.device:
                raise TracingError(
                    f"[to_static] a tensor is created on {dev} while tracing on {self.device}; "
                    f"create it on the input's device"
                )
            metas = [(tuple(attrs["shape"]), np.dtype(attrs["dtype"]))]
        elif op.infer is None:
            raise GraphBreakError(
                f"[to_static] op '{op.name}' at {_user_line()} has no shape rule (its output shape depends "
                f"on values), so it cannot be traced; run it eagerly"
            )
        else:
            metas = op.infer(ins, attrs)
        operands = [self.value_of(t, op.name) for t in ins]
        attrs = {k: _attr(op.name, k, v) for k, v in attrs.items()}
        types = [self._type(s, d) for s, d in metas]
        o = self.block.append_op(Operation("op." + op.name, operands, list(types), attrs))
        return [self._tensor(r, s, d) for r, (s, d) in zip(o.results, metas)]


@contextlib.contextmanager
def recording(tracer: Tracer, grad: bool = False) -> Iterator[None]:
    """Install ``tracer`` as the dispatcher's recording hook, with autograd off (or on, with
    ``grad``: to trace the gradient rules for a backward program)."""
    if base.TRACER.get() is not None:
        raise TracingError(
            "[to_static] a function is already being traced (nested to_static or compiler tracing)"
        )
    with base.tracing(tracer, "to_static"), autograd.enable_grad() if grad else autograd.no_grad():
        yield


@contextlib.contextmanager
def _restoring(tr: Tracer) -> Iterator[None]:
    """However the trace ends, the tensors it changed in place are as they were before it."""
    try:
        yield
    finally:
        tr.restore()


def trace(
    fn: Callable[..., Any],
    specs: Sequence[tuple[tuple[int, ...], np.dtype]],
    device: _dev.Device,
    params: dict[int, tuple[str, Tensor]],
    extra: Sequence[Any] = (),
    name: str = "forward",
    requires: Sequence[bool] | None = None,
) -> tuple[Tracer, str]:
    """Trace ``fn(*inputs, *extra)`` for inputs of the given (shape, dtype); returns the
    tracer (program, parameters, constants) and the output structure (``"tensor"`` or
    ``"tuple"``).

    With ``requires`` (which inputs need a gradient) the trace is for training: autograd
    runs inside it and the gradient rules are recorded after the forward, giving the joint
    program that :func:`framework.jit.autodiff.split` cuts in two (``tr.backward`` holds
    where: ``n_fwd_ops``, ``n_outs``, the differentiable outputs and what each gradient is
    for; None when nothing needs a gradient)."""
    from .._src.ops.random import default_generator
    from .autodiff import trace_backward

    tr = Tracer(name, device, dict(params))
    tr.training = requires is not None
    args = [tr.input(s, d) for s, d in specs]
    rng_before = default_generator.get_state()
    for a, r in zip(args, requires or ()):
        a.stop_gradient = not r
    with recording(tr, grad=requires is not None), _restoring(tr):
        res = fn(*args, *extra)
        if isinstance(res, Tensor):
            outs, structure = [res], "tensor"
        elif isinstance(res, (tuple, list)) and all(isinstance(r, Tensor) for r in res):
            outs, structure = list(res), "tuple"
        else:
            raise TracingError(
                f"[to_static] the traced function returned {type(res).__name__}; return a Tensor or a "
                f"tuple/list of Tensors"
            )
        values = [tr.value_of(o, "return") for o in outs]
        values += tr.write_backs()  # after the function's outputs: autodiff's n_outs counts them
        if requires is not None:
            n_fwd = len(tr.block.ops)
            diff, wanted, grads = trace_backward(tr, outs, args)
            if wanted:
                tr.backward = {"n_fwd_ops": n_fwd, "n_outs": len(values), "diff": diff, "wanted": wanted}
                values += grads
            else:  # nothing reached a gradient: drop what the rules recorded, a forward program stays
                for op in reversed(tr.block.ops[n_fwd:]):
                    op.drop_operands()
                del tr.block.ops[n_fwd:], tr.block.args[len(args) :]
    if default_generator.get_state() != rng_before:
        default_generator.set_state(rng_before)
        raise TracingError(
            f"[to_static] {name} draws random numbers on the host while traced (randperm, a random "
            f"initializer); a program would replay the same draws on every run, so this is refused. "
            f"Draw outside and pass the tensor in, or run it eagerly (rand, dropout and the other "
            f"Philox draws are recorded and draw afresh on every run)"
        )
    tr.block.append("builtin.return", values, [])
    return tr, structure
