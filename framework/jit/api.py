"""``to_static``: a function or Layer traced into a program and run by the executor.

A :class:`StaticFunction` keeps one program per *guard set*: the dtypes and devices of the
tensor arguments, their static dims, the non-tensor arguments and (for a Layer) its
``training`` flag. A call whose guards match an existing program runs it; any other call
traces a new one. Dims given as ``None`` in the ``input_spec`` are symbolic: one program
serves every size there (see :mod:`framework.jit.symbolic`).
"""

from __future__ import annotations

import functools
import types
import warnings
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .._src import amp as _amp
from .._src import autograd
from .._src import device as _dev
from .._src.ops import base
from .._src.ops.views import rebind
from .._src.tensor import Tensor
from ..ir import Executor, Program, SymDim, verify
from ..ir import passes as _passes
from ..static import InputSpec
from . import size_guards, symbolic, train_step
from .ast_convert import convert
from .autodiff import Backward, make_backward, split
from .convert_ops import Undefined, flatten, unflatten
from .graph_break import GraphBreak, probe, span_of
from .guard_variants import Specialise as _Specialise
from .guard_variants import equal_symbols, failed_at_probes, guarded, same_guards
from .split import Split
from .split import split as split_function
from .trace import GraphBreakError, TracingError, trace

#: the programs (and eager variants) one StaticFunction keeps before dropping the oldest
MAX_VARIANTS = 16
BACKENDS = (None, "CINN")
#: enable_to_static: False runs every to_static function's Python as written
_ENABLED = True
#: called with a new trace's programs as the executor will run them (forward, backward) and
#: the device before they first run: the compiler builds their fused kernels in parallel here
PREBUILD: list[Callable[[list[Program], _dev.Device], None]] = []


def enable_to_static(enable_to_static_bool: bool) -> None:
    """Turn ``to_static`` on or off for the whole process (Paddle's ``paddle.jit.enable_to_static``).

    Off, every ``to_static`` function and Layer runs its Python eagerly, as written (for
    debugging); on again, they trace and run programs. ``jit.save`` still traces.

    Args:
        enable_to_static_bool (bool): True to trace (the default state), False to run eagerly.

    Example:
        >>> import framework as fw
        >>> f = fw.jit.to_static(lambda x: x * 2)
        >>> fw.jit.enable_to_static(False)
        >>> f(fw.ones([2])).tolist()
        [2.0, 2.0]
        >>> fw.jit.enable_to_static(True)
    """
    global _ENABLED
    if not isinstance(enable_to_static_bool, bool):
        raise TypeError(f"[enable_to_static] expected a bool, got {type(enable_to_static_bool).__name__}")
    _ENABLED = enable_to_static_bool


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
    #: the structure of what the function returns (dicts, nested tuples, Python values), when
    #: it is not one tensor or a flat tuple of tensors
    tree: Any = None
    #: the tensors the function changes in place (a BatchNorm's running statistics): the
    #: program's last outputs are written back into them after each run
    written: tuple[Tensor, ...] = ()
    #: the conditions on dynamic sizes the trace took (``if x.shape[0] > 4``): the program
    #: serves the sizes where all hold (framework.jit.size_guards)
    size_guards: tuple[size_guards.Guard, ...] = ()

    def guards_hold(self) -> bool:
        return all(t.stop_gradient == sg for t, sg in self.grad_guard)


class _Layout(tuple):
    """How a call's arguments are laid out: the structure of ``(args, kwargs)`` and its
    non-tensor leaves by position (guarded by value). Tensors are the program's inputs."""

    __slots__ = ()

    def rebuild(self, tensors: Sequence[Tensor]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        struct, consts, n = self
        fixed = dict(consts)
        it = iter(tensors)
        args, kwargs = unflatten(struct, [fixed[k] if k in fixed else next(it) for k in range(n)])
        return tuple(args), dict(kwargs)


def _flat_result(res: Any, tree: list[Any]) -> Any:
    """What a traced function returned, as the tracer takes it (a tensor or a tuple of
    tensors); any other structure is noted in ``tree`` (its Python values kept there)."""
    if isinstance(res, Tensor) or (
        isinstance(res, (tuple, list)) and res and all(isinstance(r, Tensor) for r in res)
    ):
        return res
    leaves, struct = flatten(res)
    for v in leaves:
        if isinstance(v, Undefined):
            raise v.error()
    if not tree:
        tree.append((struct, [None if isinstance(v, Tensor) else v for v in leaves]))
    return tuple(v for v in leaves if isinstance(v, Tensor))


def _layout(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[_Layout, list[Tensor]]:
    leaves, struct = flatten((args, kwargs))
    tensors = [x for x in leaves if isinstance(x, Tensor)]
    consts = tuple((i, x) for i, x in enumerate(leaves) if not isinstance(x, Tensor))
    return _Layout((struct, consts, len(leaves))), tensors


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
        full_graph: bool = False,
        passes: Any = _passes.DEFAULT_LEVEL,
        backend: str | None = "CINN",
        _segment: bool = False,
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
        if backend not in BACKENDS:
            raise ValueError(
                f"[to_static] backend must be None or 'CINN' (the compiler's fusion groups), got {backend!r}"
            )
        #: True: a graph break is an error naming the line; False: that call runs eagerly
        self.full_graph = full_graph
        #: "CINN": the compiler fuses the program's ops into kernels; None: the ops run one by one
        self.backend = backend
        #: the pass level or pass names run on every traced program (None: none)
        self.passes = passes
        #: the function as traced: its Python control flow converted (framework.jit.ast_convert)
        self._converted = fn if _segment else convert(fn)
        #: a segment of a split function (framework.jit.split): already converted, never split
        self._segment = _segment
        #: broken guard sets: the function split at its breaks (None: that call runs eagerly)
        self._splits: dict[Any, Split | None] = {}
        self._split_of: dict[frozenset[int], Split | None] = {}
        self._programs: dict[Any, ConcreteProgram] = {}
        #: guard sets whose trace broke: where and why (those calls run eagerly)
        self._broken: dict[Any, list[GraphBreak]] = {}
        #: the breaks of the latest call (empty when it ran as one program)
        self.last_breaks: list[GraphBreak] = []
        self._bound: weakref.WeakKeyDictionary[Any, StaticFunction] = weakref.WeakKeyDictionary()
        self._warned_variants = False
        #: call metadata -> (program, positions of the tensor arguments), or a split (see __call__)
        self._fast: dict[Any, tuple[ConcreteProgram | Split, tuple[int, ...]]] = {}
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

    def _step_fn(
        self, n_args: int, steps: list[Any] | None, layout: _Layout | None, tree: list[Any]
    ) -> Callable[..., Any]:
        """The function as traced: ``backward``/``step``/``clear_grad`` calls inside are
        recorded (framework.jit.train_step); the gradients become extra outputs. With a
        ``layout`` the tensors are put back among the call's Python values; what the function
        returns is flattened (its structure goes to ``tree``)."""
        fn = self._converted

        def traced(*args: Any) -> Any:
            with train_step.recording(args[:n_args]) as rec:
                if layout is None:
                    res = fn(*args)
                else:
                    a, kw = layout.rebuild(args[:n_args])
                    res = fn(*a, **kw)
                if not rec.active:
                    return _flat_result(res, tree)
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
        _probe: symbolic.Probe = symbolic.DEFAULT_PROBE,
        _variant: tuple[Any, ...] = (),
    ) -> ConcreteProgram:
        """The program for arguments of these (dims, dtype) on ``device`` (traced on first
        use); a dim is an int or a symbol name. ``requires`` (which arguments need a
        gradient) asks for a training program: forward plus backward."""
        dev = _dev.parse(device) if not isinstance(device, _dev.Device) else device
        req = None if requires is None else tuple(bool(r) for r in requires)
        key = self._key(specs, dev, extra if isinstance(extra, _Layout) else tuple(extra), req) + _variant
        cp = self._programs.get(key)
        if cp is None or not cp.guards_hold():
            steps: list[Any] = []
            cp = self._trace(specs, dev, extra, req, steps, _probe)
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
        probe: symbolic.Probe = symbolic.DEFAULT_PROBE,
    ) -> ConcreteProgram:
        params = self._params()
        symbols = list(dict.fromkeys(d for dims, _ in specs for d in dims if isinstance(d, str)))
        name = getattr(self._fn, "__name__", "forward")
        name = name if name.isidentifier() else "forward"

        layout = extra if isinstance(extra, _Layout) else None
        tree: list[Any] = []

        def run(binding: dict[str, int]) -> tuple[Any, str]:
            try:
                with size_guards.recording() as guards:  # a dynamic dim is a SymInt while traced
                    shapes = [
                        (
                            tuple(
                                size_guards.SymInt(binding[d], d) if isinstance(d, str) else d for d in dims
                            ),
                            np.dtype(t),
                        )
                        for dims, t in specs
                    ]
                    fn = self._step_fn(len(specs), steps, layout, tree)
                    tr, structure = trace(
                        fn, shapes, dev, params, () if layout is not None else extra, name, requires
                    )
            except OpArgumentError as exc:  # the guards taken up to the error (`split`'s b % 2)
                exc.size_guards = tuple(guards)  # type: ignore[attr-defined]
                raise
            tr.size_guards = guards
            return tr, structure

        guards: tuple[size_guards.Guard, ...] = ()
        if symbols:
            bindings = symbolic.probe_bindings(symbols, probe)
            traced = []
            for b in bindings:
                try:
                    traced.append(run(b))
                except OpArgumentError as exc:
                    if not traced:  # all symbols alike at the probe size: the error of that size
                        raise  # (fw.onnx's import catches it and traces per shape)
                    same = equal_symbols(run, symbols, b, exc, probe)
                    specs = [(tuple(same.get(d, d) for d in dims), t) for dims, t in specs]  # type: ignore[arg-type]
                    return self._trace(specs, dev, extra, requires, steps, probe)
            tr, structure = traced[0]
            static = sorted({d for dims, _ in specs for d in dims if isinstance(d, int)})

            def agreed() -> tuple[size_guards.Guard, ...] | ConcreteProgram:
                try:
                    return same_guards([t.size_guards for t, _ in traced], bindings)
                except _Specialise:
                    # a branch that went both ways between the probes (`b % 2`: the check's
                    # sizes are even): probes that all take the branch the first one took
                    alt = symbolic.probe_for(symbols, traced[0][0].size_guards, bindings[0], static)
                    if probe != symbolic.DEFAULT_PROBE or alt is None:
                        raise
                    return self._trace(specs, dev, extra, requires, steps, alt)

            got = agreed()
            if isinstance(got, ConcreteProgram):
                return got
            guards = got
            hints = {}  # the polynomials of sizes the Python computed (`n * n`, `b // 2`), as SymDims
            for t, _ in traced:
                for h in t.size_guards.hints:
                    d = SymDim.make({"*".join(m): c for m, c in h.items() if m}, h.get((), 0))
                    if isinstance(d, SymDim):
                        hints[d] = None
            try:
                prog, cut = self._generalize(traced, symbols, probe, ())
            except symbolic.NotAffine as exc:
                if not hints:
                    raise _Specialise(str(exc)) from None
                # fits through the hints: the first program again (generalize changed it) and
                # two more traces to check them on
                traced[0] = run(bindings[0])
                for b in symbolic.validation_bindings(symbols, probe):
                    try:
                        traced.append(run(b))
                    except OpArgumentError as exc2:
                        raise _Specialise(f"tracing at the validation sizes {b} fails ({exc2})") from None
                    bindings = [*bindings, b]
                got = agreed()  # the validation sizes may take other branches (`b % 3`)
                if isinstance(got, ConcreteProgram):
                    return got
                guards = got
                tr, structure = traced[0]
                try:
                    prog, cut = self._generalize(traced, symbols, probe, list(hints))
                except symbolic.NotAffine as exc2:
                    raise _Specialise(str(exc2)) from None
            if tr.backward is not None:
                tr.backward["n_fwd_ops"] = cut
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
            brun = _passes.fuse_program(bprog, dev, bconsts) if self.backend == "CINN" else bprog
        if self.passes is not None:  # fold, canonicalize, cse, fuse, dce (framework.ir.passes)
            _passes.run_pipeline(prog, self.passes, tr.constants, dev)
        # the compiler's fusion groups (OARLOCK_COMPILE=0: none) on a copy; `prog` stays portable
        run_prog = _passes.fuse_program(prog, dev, tr.constants) if self.backend == "CINN" else prog
        for hook in PREBUILD:  # the fused kernels of both programs, built in parallel
            hook([run_prog] + ([brun] if tr.backward is not None else []), dev)
        if tr.backward is not None:
            bex = Executor(brun, dev, tr.param_tensors, bconsts)
            bw = make_backward(name, bprog, bex, b["n_outs"], n_saved, b["diff"], b["wanted"])
        ex = Executor(run_prog, dev, tr.param_tensors, tr.constants)
        cp = ConcreteProgram(prog, dict(tr.param_tensors), dict(tr.constants), structure, ex, bw, guard)
        cp.tree = tree[0] if tree else None
        cp.written = tuple(tr.written)
        cp.size_guards = guards
        return cp

    @staticmethod
    def _generalize(
        traced: list[tuple[Any, str]], symbols: list[str], probe: symbolic.Probe, hints: Sequence[SymDim]
    ) -> tuple[Program, int | None]:
        tr = traced[0][0]
        cut = tr.backward["n_fwd_ops"] if tr.backward is not None else None
        return symbolic.generalize(
            [t.program for t, _ in traced], [t.constants for t, _ in traced], symbols, cut, probe, hints
        )

    @property
    def programs(self) -> list[ConcreteProgram]:
        """Every program traced so far (one per guard set)."""
        return list(self._programs.values())

    # -- calling --------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not _ENABLED:
            return self._fn(*args, **kwargs)  # enable_to_static(False): run the Python as written
        if base.TRACER.get() is not None:  # called inside another trace (or a probe): part of it
            return self._converted(*args, **kwargs)
        fast = None
        if not kwargs:
            # the same tensor metadata (and the same plain Python values) as a call before: the
            # same program, or the same split (guards re-checked)
            fast = self._fast_key(args)
            try:
                got = self._fast.get(fast) if fast is not None else None
            except TypeError:  # a value whose hash fails (a tuple holding a list...)
                fast = got = None
            if got is not None:
                cp, at = got
                if isinstance(cp, Split):
                    self.last_breaks = self._broken.get(at, self.last_breaks)  # type: ignore[call-overload]
                    return cp(*args)
                if not cp.grad_guard or cp.guards_hold():
                    self.last_breaks = []
                    return self._run(cp, [args[k] for k in at] if len(at) != len(args) else args)
        simple = not kwargs and all(isinstance(a, Tensor) for a in args)
        if simple:
            tensors, layout = list(args), None
        else:
            layout, tensors = _layout(args, kwargs)
            try:
                hash(layout)
            except TypeError:
                if self._segment:  # a piece of a split function given a NumPy array...: eager
                    return self._converted(*args, **kwargs)
                raise TracingError(
                    f"[to_static] {self.__name__}: the arguments that are not tensors are guarded by value and "
                    f"must be hashable (ints, floats, strings, tuples...); got "
                    f"{sorted({type(v).__name__ for _, v in layout[1]})}"
                ) from None
        if not tensors:
            return self._converted(*args, **kwargs)  # nothing to trace against: run as written
        dev = tensors[0].device
        for t in tensors:
            if t.device != dev:
                raise TracingError(
                    f"[to_static] the tensor arguments of {self.__name__} are on {dev} and {t.device}; "
                    f"put them on one device"
                )
        extra: Any = () if layout is None else layout
        specs = [self._spec_of(k, t) for k, t in enumerate(tensors)]
        requires = tuple(not t.stop_gradient for t in tensors) if autograd.is_grad_enabled() else None
        skey = (tuple(specs), dev, extra)
        if skey in self._specialised:
            specs = [(tuple(t.shape), t.dtype) for t in tensors]
        bkey = self._key(specs, dev, extra, requires)
        if bkey in self._broken:  # this guard set broke its graph: split, or eager
            self.last_breaks = self._broken[bkey]
            sp = self._splits.get(bkey)
            if sp is None:
                return self._fn(*args, **kwargs)
            if fast is not None:
                self._fast[fast] = (sp, bkey)
            return sp(*args, **kwargs)
        try:
            try:
                cp = self.get_concrete_program(specs, dev, extra, requires)
                if cp.size_guards:
                    cp = guarded(self, cp, specs, tensors, dev, extra, requires)
            except (_Specialise, OpArgumentError) as exc:
                exact = [(tuple(t.shape), t.dtype) for t in tensors]
                why = str(exc)
                if not isinstance(exc, _Specialise):
                    if [d for d, _ in specs] == [d for d, _ in exact]:
                        raise
                    cp = failed_at_probes(self, exc, specs, tensors, dev, extra, requires)
                    if cp is not None:
                        return self._run(cp, tensors)
                    # an argument error at the probe sizes no probe avoids: the call's sizes give
                    # the call's own error, or a program of their own
                    self.get_concrete_program(exact, dev, extra, requires)
                    why = f"tracing at the probe sizes fails ({exc})"
                self._specialised.add(skey)
                warnings.warn(
                    f"[to_static] the dynamic dims of {self.__name__} are specialised (one program per size): "
                    f"{why}",
                    stacklevel=2,
                )
                specs = exact
                bkey = self._key(specs, dev, extra, requires)
                cp = self.get_concrete_program(specs, dev, extra, requires)
        except GraphBreakError as exc:
            if self.full_graph:
                raise type(exc)(
                    f"{exc}\n(to_static with full_graph=True: a graph break is an error)"
                ) from None
            lines: set[int] = set()
            res, breaks = probe(self._converted, args, kwargs, lines, span_of(self._fn))
            if not breaks:  # the trace stopped where the probe reads nothing (a host-side draw...)
                breaks = [GraphBreak(_where_of(exc), str(exc).split("\n")[0])]
            self._broken[bkey] = self.last_breaks = breaks
            self._splits[bkey] = self._split(lines)
            self._bound_variants()
            return res
        self.last_breaks = []
        self._bound_variants()
        if fast is not None and (simple or layout is not None and _flat(args)):
            self._fast[fast] = (cp, tuple(k for k, a in enumerate(args) if isinstance(a, Tensor)))
        return self._run(cp, tensors)

    def _split(self, lines: set[int]) -> Split | None:
        """The function split around the statements holding ``lines`` (once per set of lines)."""
        key = frozenset(lines)
        if key not in self._split_of:
            sp = None
            if not self._segment and lines:
                try:
                    sp = split_function(self._fn, set(lines), self._make_segment)
                except (SyntaxError, ValueError, KeyError, StopIteration):  # a form the rewrite missed
                    sp = None
            self._split_of[key] = sp
        return self._split_of[key]

    def _make_segment(self, fn: Callable[..., Any], name: str) -> StaticFunction:
        return StaticFunction(fn, None, self._layer, False, self.passes, self.backend, _segment=True)

    def _fast_key(self, args: tuple[Any, ...]) -> Any:
        """The metadata of a call's arguments that picks its program without the full guard
        path: each tensor's shape, dtype, device, stop_gradient and distribution, each plain
        Python value (a number, a string, a Layer...) by type and value; None where an
        argument is a container or unhashable (the full path flattens those)."""
        key: list[Any] = []
        for a in args:
            if isinstance(a, Tensor):
                key.append((a.shape, a.dtype, a.device, a.stop_gradient, a._dist))
            elif isinstance(a, (list, tuple, dict, set)) or type(a).__hash__ is None:
                return None
            else:
                key.append((type(a), a))
        key += (
            autograd.GRAD_ENABLED.get(),
            self._layer is not None and self._layer.training,
            _amp.POLICY.get(),  # auto_cast decides the traced casts: a program per policy
        )
        return tuple(key)

    @property
    def splits(self) -> list[Split]:
        """The split forms of this function made so far (one per set of breaking statements):
        each has ``segments`` (the traced pieces, StaticFunctions) and ``python_lines``."""
        return [sp for sp in self._split_of.values() if sp is not None]

    def _key(self, specs: Any, dev: Any, extra: Any, requires: Any) -> Any:
        training = bool(getattr(self._layer, "training", False))
        specs = tuple((tuple(d), np.dtype(t)) for d, t in specs)
        return (specs, dev, extra, training, requires, _amp.POLICY.get())

    def _bound_variants(self) -> None:
        """At most MAX_VARIANTS programs and eager variants: past it, the oldest are dropped
        (re-traced when their guards come again), with one warning."""
        n = len(self._programs) + len(self._broken)
        if n <= MAX_VARIANTS:
            return
        if not self._warned_variants:
            self._warned_variants = True
            warnings.warn(
                f"[to_static] {self.__name__} has {n} traced variants (one per guard set: argument shapes, "
                f"dtypes, Python values, training flag), more than {MAX_VARIANTS}; the oldest are dropped "
                f"and re-traced when needed. Give dynamic dims as None in input_spec, or pass changing "
                f"Python values as tensors",
                stacklevel=3,
            )
        while len(self._programs) + len(self._broken) > MAX_VARIANTS:
            pool = self._programs if self._programs else self._broken
            key = next(iter(pool))
            del pool[key]
            self._splits.pop(key, None)
        self._fast.clear()

    @property
    def graph_breaks(self) -> list[GraphBreak]:
        """Every graph break seen so far, over all guard sets (one per line)."""
        seen: dict[str, GraphBreak] = {}
        for bs in self._broken.values():
            for b in bs:
                seen.setdefault(b.where, b)
        return list(seen.values())

    def _run(self, cp: ConcreteProgram, tensors: Sequence[Tensor]) -> Any:
        outs = cp.executor(*tensors)
        if cp.backward is not None:  # training: one autograd node runs the backward program
            n = cp.backward.n_outs
            outs, saved = outs[:n], outs[n:]
            outs = cp.backward.record(tensors, cp.params, outs, saved)
        if cp.written:  # the in-place changes the function made, as eager would have
            k = len(cp.written)
            for t, v in zip(cp.written, outs[-k:]):
                if t._base is not None or t._views is not None:  # its views see the change too
                    with autograd.no_grad():
                        rebind(t, v, "to_static")
                    continue
                t._block, t._offset, t._nv = v._block, v._offset, None
                t._bump_version("to_static")
            outs = outs[:-k]
        if cp.step is not None:  # a training step: gradients, optimizer step, clear_grad
            actions, n, single = cp.step
            train_step.apply(actions, outs[n:], tensors)
            return outs[0] if single else tuple(outs[:n])
        if cp.tree is not None:
            struct, leaves = cp.tree
            if any(isinstance(v, size_guards.SymInt) for v in leaves):  # a size returned: this call's
                binding = {
                    d.terms[0][0]: n
                    for v, t in zip(cp.program.inputs, tensors)
                    for d, n in zip(v.type.shape, t.shape)
                    if isinstance(d, SymDim) and d.is_symbol
                }
                leaves = [
                    size_guards.evaluate(v.expr, binding) if isinstance(v, size_guards.SymInt) else v
                    for v in leaves
                ]
            it = iter(outs)
            return unflatten(struct, [next(it) if v is None else v for v in leaves])
        return outs[0] if cp.structure == "tensor" else tuple(outs)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        # ``@to_static`` on a method in the class body: one StaticFunction per instance, over
        # its parameters (a Layer's) and its own programs
        bound = self._bound.get(obj)
        if bound is None:
            bound = StaticFunction(
                types.MethodType(self._fn, obj),
                self.input_spec,
                obj if _is_layer(obj) else None,
                self.full_graph,
                self.passes,
                self.backend,
            )
            self._bound[obj] = bound
        return bound


def _flat(args: tuple[Any, ...]) -> bool:
    """Whether no argument is a container (a layout of only tensors and plain values)."""
    return not any(isinstance(a, (list, tuple, dict, set)) for a in args)


def _where_of(exc: Exception) -> str:
    """The ``file:line (source)`` a tracing error names, or its first line."""
    msg = str(exc)
    at = msg.find(" at ")
    if at >= 0:
        rest = msg[at + 4 :]
        end = rest.find("): ")
        return rest[: end + 1] if end >= 0 else rest.split(":", 2)[0]
    return msg.split("\n")[0]


def to_static(
    function: Any = None,
    input_spec: Sequence[InputSpec] | None = None,
    build_strategy: Any = None,
    backend: str | None = "CINN",
    full_graph: bool = False,
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

    Used bare, as ``@to_static(input_spec=[...])``, on a function, a bound method, a Layer
    (changed in place: its ``forward`` becomes a :class:`StaticFunction`, and it is returned) or
    on ``forward`` in a Layer's class body. Python ``if``/``while``/``for i in range(n)`` on
    tensors are converted to the program's control flow (:mod:`framework.jit.ast_convert`).

    ``full_graph``: False (Paddle's default): where Python cannot be recorded (``print`` of a
    tensor, ``.numpy()``, ``.item()``...) the call runs eagerly for that guard set (a graph
    break; :func:`graph_breaks` says where and why); True: a break is an error naming the line.
    ``backend``: ``"CINN"`` (our compiler fuses the program's ops into kernels) or None.
    ``passes`` is the optimisation level run on every traced program (``"O2"``: fold,
    canonicalize, cse, fuse, dce; ``"O1"``; ``"O0"``), a list of pass names, or None for
    none (:mod:`framework.ir.passes`). ``build_strategy`` is accepted for Paddle's signature.
    """
    kwargs.pop("property", None)
    if kwargs:
        raise TypeError(
            f"[to_static] unexpected arguments {sorted(kwargs)}; expected input_spec=, build_strategy=, "
            f"backend=, full_graph= and passes="
        )
    if backend not in BACKENDS:
        raise ValueError(f"[to_static] backend must be None or 'CINN', got {backend!r}")
    opts = {"full_graph": bool(full_graph), "passes": passes, "backend": backend}
    if function is None:
        return lambda f: to_static(f, input_spec=input_spec, **opts)  # type: ignore[arg-type]
    if _is_layer(function):
        fwd = function.forward
        if isinstance(fwd, StaticFunction):
            return function
        object.__setattr__(
            function,
            "forward",
            StaticFunction(fwd, input_spec, function, opts["full_graph"], passes, backend),
        )
        return function
    if isinstance(function, StaticFunction):
        return function
    if not callable(function):
        raise TypeError(f"[to_static] expected a function or a Layer, got {type(function).__name__}")
    layer = (
        function.__self__ if isinstance(function, types.MethodType) and _is_layer(function.__self__) else None
    )
    return StaticFunction(function, input_spec, layer, opts["full_graph"], passes, backend)


def graph_breaks(fn: Any, *args: Any, **kwargs: Any) -> list[GraphBreak]:
    """Where and why a ``to_static`` function broke its graph: one :class:`GraphBreak`
    (``where``: ``file:line (source)``, ``reason``) per line, in order.

    With arguments, ``fn`` is called with them first (made ``to_static`` if it is not) and the
    breaks of that call are returned; without, every break seen so far. A Layer stands for its
    ``forward``.

    >>> import framework as fw
    >>> def f(x):
    ...     y = x * 2
    ...     print(y.sum().item())
    ...     return y + 1
    >>> [b.reason for b in fw.jit.graph_breaks(f, fw.ones([2]))]
    4.0
    ['item() reads the value']
    """
    if _is_layer(fn):
        fwd = fn.forward
        sf = fwd if isinstance(fwd, StaticFunction) else to_static(fn).forward
    else:
        sf = fn if isinstance(fn, StaticFunction) else to_static(fn)
    if not isinstance(sf, StaticFunction):
        raise TypeError(f"[graph_breaks] expected a to_static function or a Layer, got {type(fn).__name__}")
    if args or kwargs:
        sf(*args, **kwargs)
        return list(sf.last_breaks)
    return sf.graph_breaks
