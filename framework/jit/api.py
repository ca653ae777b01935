"""``to_static``: a function or Layer traced into a program and run by the executor.

A :class:`StaticFunction` keeps one program per *guard set*: the dtypes and devices of the
tensor arguments, their static dims, the non-tensor arguments and (for a Layer) its
``training`` flag. A call whose guards match an existing program runs it; any other call
traces a new one. Dims given as ``None`` in the ``input_spec`` are symbolic: one program
serves every size there (see :mod:`framework.jit.symbolic`).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._src import autograd
from .._src import device as _dev
from .._src.tensor import Tensor
from ..ir import Executor, Program, verify
from ..ir import passes as _passes
from ..static import InputSpec
from . import symbolic, train_step
from .autodiff import Backward, make_backward, split
from .trace import TracingError, trace


@dataclass
class ConcreteProgram:
    """A traced program with what running it needs."""

    program: Program
    params: dict[str, Tensor]
    constants: dict[str, Tensor]
    structure: str  # "tensor" or "tuple"
    executor: Executor
    #: for a training program: the backward program and the autograd node that runs it
    backward: Backward | None = None
    #: the parameters' ``stop_gradient`` when traced for training (a change re-traces)
    grad_guard: tuple[tuple[Tensor, bool], ...] = field(default_factory=tuple)
    #: a traced training step (backward / optimizer calls inside): (actions, number of the
    #: function's own outputs, whether it returned one tensor); see framework.jit.train_step
    step: tuple[list[tuple[str, Any]], int, bool] | None = None

    def guards_hold(self) -> bool:
        return all(t.stop_gradient == sg for t, sg in self.grad_guard)


class _Specialise(TracingError):
    """The traces at the probe sizes disagree beyond affine dims: the dynamic dims must be
    specialised (the message says where)."""


def _is_layer(obj: Any) -> bool:
    from ..nn import Layer

    return isinstance(obj, Layer)


class StaticFunction:
    """A function (or a Layer's forward) run as a traced program. Made by :func:`to_static`."""

    def __init__(
        self,
        fn: Callable[..., Any],
        input_spec: Sequence[InputSpec] | None = None,
        layer: Any = None,
        full_graph: bool = True,
        passes: Any = _passes.DEFAULT_LEVEL,
    ) -> None:
        if input_spec is not None and (
            isinstance(input_spec, InputSpec) or any(not isinstance(s, InputSpec) for s in input_spec)
        ):
            raise TypeError(
                f"[to_static] input_spec must be a list of fw.static.InputSpec, got {input_spec!r}"
            )
        self._fn = fn
        self._layer = layer
        self.input_spec = list(input_spec) if input_spec is not None else None
        self.full_graph = full_graph
        #: the pass level or pass names run on every traced program (None: none)
        self.passes = passes
        self._programs: dict[Any, ConcreteProgram] = {}
        self._fast: dict[Any, ConcreteProgram] = {}  # tensor metadata -> program (see __call__)
        self._specialised: set[Any] = set()
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    # -- guards ---------------------------------------------------------------------------
    def _spec_of(self, k: int, t: Tensor) -> tuple[tuple[int | str, ...], np.dtype]:
        """The dims of argument ``k`` as traced: an int (static, guarded) or a symbol name."""
        spec = self.input_spec[k] if self.input_spec is not None and k < len(self.input_spec) else None
        if spec is None or len(spec.shape) != len(t.shape):
            return tuple(t.shape), t.dtype
        dims: list[int | str] = []
        for j, (d, n) in enumerate(zip(spec.shape, t.shape)):
            dims.append(f"s{k}_{j}" if d is None else d if isinstance(d, str) else n)
        return tuple(dims), t.dtype

    def _params(self) -> dict[int, tuple[str, Tensor]]:
        if self._layer is None:
            return {}
        out = {id(p): (n, p) for n, p in self._layer.named_parameters()}
        out.update({id(b): (n, b) for n, b in self._layer.named_buffers() if id(b) not in out})
        return out

    def _step_fn(self, n_args: int, steps: list[Any] | None) -> Callable[..., Any]:
        """The function as traced: ``backward``/``step``/``clear_grad`` calls inside are
        recorded (framework.jit.train_step); the gradients become extra outputs."""
        fn = self._fn

        def traced(*args: Any) -> Any:
            with train_step.recording(args[:n_args]) as rec:
                res = fn(*args)
                if not rec.active:
                    return res
                rec.flush()
                outs = (
                    [res]
                    if isinstance(res, Tensor)
                    else list(res)
                    if isinstance(res, (tuple, list))
                    else None
                )
                if outs is None or not all(isinstance(o, Tensor) for o in outs):
                    return res  # the tracer names what is wrong with it
                if steps is not None and not steps:
                    steps.append((list(rec.actions), len(outs), isinstance(res, Tensor)))
                return (*(o.detach() for o in outs), *rec.grads)

        return traced

    # -- tracing --------------------------------------------------------------------------
    def get_concrete_program(
        self,
        specs: Sequence[tuple[tuple[int | str, ...], np.dtype]],
        device: Any,
        extra: Sequence[Any] = (),
        requires: Sequence[bool] | None = None,
    ) -> ConcreteProgram:
        """The program for arguments of these (dims, dtype) on ``device`` (traced on first
        use); a dim is an int or a symbol name. ``requires`` (which arguments need a
        gradient) asks for a training program: forward plus backward."""
        dev = _dev.parse(device) if not isinstance(device, _dev.Device) else device
        training = bool(getattr(self._layer, "training", False))
        req = None if requires is None else tuple(bool(r) for r in requires)
        key = (tuple((tuple(d), np.dtype(t)) for d, t in specs), dev, tuple(extra), training, req)
        cp = self._programs.get(key)
        if cp is None or not cp.guards_hold():
            steps: list[Any] = []
            cp = self._trace(specs, dev, extra, req, steps)
            cp.step = steps[0] if steps else None
            self._programs[key] = cp
        return cp

    def _trace(
        self,
        specs: Sequence[tuple[tuple[int | str, ...], np.dtype]],
        dev: _dev.Device,
        extra: Sequence[Any],
        requires: tuple[bool, ...] | None = None,
        steps: list[Any] | None = None,
    ) -> ConcreteProgram:
        params = self._params()
        symbols = list(dict.fromkeys(d for dims, _ in specs for d in dims if isinstance(d, str)))
        name = getattr(self._fn, "__name__", "forward")
        name = name if name.isidentifier() else "forward"

        def run(binding: dict[str, int]) -> tuple[Any, str]:
            shapes = [
                (tuple(binding[d] if isinstance(d, str) else d for d in dims), np.dtype(t))
                for dims, t in specs
            ]
            return trace(self._step_fn(len(specs), steps), shapes, dev, params, extra, name, requires)

        if symbols:
            bindings = symbolic.probe_bindings(symbols)
            traced = [run(b) for b in bindings]
            try:
                prog = symbolic.generalize(
                    [t.program for t, _ in traced], [t.constants for t, _ in traced], symbols
                )
            except symbolic.NotAffine as exc:
                raise _Specialise(str(exc)) from None
            tr, structure = traced[0]
        else:  # static dims only: trace once
            tr, structure = run({})
            prog = tr.program
        verify(prog)
        bw = None
        guard: tuple[tuple[Tensor, bool], ...] = ()
        if requires is not None:
            guard = tuple((t, t.stop_gradient) for t in tr.param_tensors.values())
        if tr.backward is not None:
            b = tr.backward
            # recomputing in the backward pays where the recomputed ops join its fusion groups
            recompute = _passes.fuses(dev)
            prog, bprog, n_saved = split(prog, len(specs), b["n_fwd_ops"], b["n_outs"], recompute)
            bconsts = dict(tr.constants)  # the backward program's own (passes fold and drop)
            if self.passes is not None:
                _passes.run_pipeline(bprog, self.passes, bconsts, dev)
            bex = Executor(_passes.fuse_program(bprog, dev, bconsts), dev, tr.param_tensors, bconsts)
            bw = make_backward(name, bprog, bex, b["n_outs"], n_saved, b["diff"], b["wanted"])
        if self.passes is not None:  # fold, canonicalize, cse, fuse, dce (framework.ir.passes)
            _passes.run_pipeline(prog, self.passes, tr.constants, dev)
        # the compiler's fusion groups (OARLOCK_COMPILE=0: none) on a copy; `prog` stays portable
        ex = Executor(_passes.fuse_program(prog, dev, tr.constants), dev, tr.param_tensors, tr.constants)
        return ConcreteProgram(prog, dict(tr.param_tensors), dict(tr.constants), structure, ex, bw, guard)

    @property
    def programs(self) -> list[ConcreteProgram]:
        """Every program traced so far (one per guard set)."""
        return list(self._programs.values())

    # -- calling --------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fast = None
        if not kwargs:
            # the same tensor metadata as a call before: the same program (guards re-checked)
            try:
                fast = (
                    *[(a.shape, a.dtype, a.device, a.stop_gradient, a._dist) for a in args],
                    autograd.GRAD_ENABLED.get(),
                    self._layer is not None and self._layer.training,
                )
            except AttributeError:  # a non-tensor argument: the full path
                fast = None
            else:
                cp = self._fast.get(fast)
                if cp is not None and (not cp.grad_guard or cp.guards_hold()):
                    return self._run(cp, args)
        tensors = [a for a in args if isinstance(a, Tensor)]
        if kwargs or not tensors:
            return self._fn(*args, **kwargs)  # nothing to trace against: run as written
        dev = tensors[0].device
        for t in tensors:
            if t.device != dev:
                raise TracingError(
                    f"[to_static] the tensor arguments of {self.__name__} are on {dev} and {t.device}; "
                    f"put them on one device"
                )
        if len(tensors) != len(args):  # non-tensor arguments are guarded by value and passed as they are
            extra = tuple(a for a in args if not isinstance(a, Tensor))
            if any(isinstance(a, Tensor) for a in args[len(tensors) :]) or any(
                not isinstance(a, Tensor) for a in args[: len(tensors)]
            ):
                raise TracingError(
                    f"[to_static] {self.__name__}: put tensor arguments first, then Python values"
                )
            try:
                hash(extra)
            except TypeError:
                raise TracingError(
                    f"[to_static] {self.__name__}: non-tensor arguments must be hashable (they are "
                    f"guarded by value), got {[type(a).__name__ for a in extra]}"
                ) from None
        else:
            extra = ()
        specs = [self._spec_of(k, t) for k, t in enumerate(tensors)]
        requires = tuple(not t.stop_gradient for t in tensors) if autograd.is_grad_enabled() else None
        skey = (tuple(specs), dev, extra)
        if skey in self._specialised:
            specs = [(tuple(t.shape), t.dtype) for t in tensors]
        try:
            cp = self.get_concrete_program(specs, dev, extra, requires)
        except _Specialise as exc:
            self._specialised.add(skey)
            warnings.warn(
                f"[to_static] the dynamic dims of {self.__name__} are specialised (one program per size): "
                f"{exc}",
                stacklevel=2,
            )
            specs = [(tuple(t.shape), t.dtype) for t in tensors]
            cp = self.get_concrete_program(specs, dev, extra, requires)
        if fast is not None and len(tensors) == len(args):
            self._fast[fast] = cp
        return self._run(cp, tensors)

    def _run(self, cp: ConcreteProgram, tensors: Sequence[Tensor]) -> Any:
        outs = cp.executor(*tensors)
        if cp.backward is not None:  # training: one autograd node runs the backward program
            n = cp.backward.n_outs
            outs, saved = outs[:n], outs[n:]
            outs = cp.backward.record(tensors, cp.params, outs, saved)
        if cp.step is not None:  # a training step: gradients, optimizer step, clear_grad
            actions, n, single = cp.step
            train_step.apply(actions, outs[n:], tensors)
            return outs[0] if single else tuple(outs[:n])
        return outs[0] if cp.structure == "tensor" else tuple(outs)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)


def to_static(
    function: Any = None,
    input_spec: Sequence[InputSpec] | None = None,
    full_graph: bool = True,
    passes: Any = _passes.DEFAULT_LEVEL,
    **kwargs: Any,
) -> Any:
    """Run ``function`` (or a Layer's forward) as a traced program, as Paddle's
    ``paddle.jit.to_static``.

    >>> import framework as fw
    >>> lin = fw.jit.to_static(fw.nn.Linear(4, 2), input_spec=[fw.static.InputSpec([None, 4])])
    >>> with fw.no_grad():
    ...     lin(fw.ones([3, 4])).shape
    (3, 2)

    ``passes`` is the optimisation level run on every traced program (``"O2"``: fold,
    canonicalize, cse, fuse, dce; ``"O1"``; ``"O0"``), a list of pass names, or None for
    none (:mod:`framework.ir.passes`).

    Used bare or as ``@to_static(input_spec=[...])``. A Layer is changed in place (its
    ``forward`` becomes a :class:`StaticFunction`) and returned.
    """
    if kwargs:
        raise TypeError(
            f"[to_static] unexpected arguments {sorted(kwargs)}; expected input_spec=, full_graph= and passes="
        )
    if function is None:
        return lambda f: to_static(f, input_spec=input_spec, full_graph=full_graph, passes=passes)
    if not full_graph:
        raise NotImplementedError(
            "[to_static] full_graph=False (falling back to Python for untraceable parts) is not "
            "available; trace the whole function (full_graph=True)"
        )
    if _is_layer(function):
        fwd = function.forward
        if isinstance(fwd, StaticFunction):
            return function
        object.__setattr__(function, "forward", StaticFunction(fwd, input_spec, function, full_graph, passes))
        return function
    if isinstance(function, StaticFunction):
        return function
    if not callable(function):
        raise TypeError(f"[to_static] expected a function or a Layer, got {type(function).__name__}")
    return StaticFunction(function, input_spec, None, full_graph, passes)
