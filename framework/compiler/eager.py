"""Generated kernels in eager mode: the ``ops.base.GENERATORS`` entry of the compiler.

When a composite has no registered fused kernel and its device's plugin has compile access,
:func:`generate` traces the decomposition once per (op, device type, input kinds, row length,
attrs), lowers it to the loop IR, emits the plugin's language, builds it through the program
cache and launches it. Its backward is generated too: from the composite's own gradient rule
when it has one (traced like the forward), else by reverse mode on the loop IR.

Anything that does not fit (not a fusion group, no compiler, a compile error, double
backward) falls back to the decomposition; a compile failure warns once per op and device.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import tempfile
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from adapter_api import CompileError, OarlockError

from .._src import autograd, dispatch
from .._src import device as _dev
from .._src import profiling as _profiling
from .._src.ops import base
from .._src.plugins import host
from .._src.tensor import Tensor
from . import loop_ir, tune
from .cache import ProgramCache
from .capture import Geometry, NotFusible, trace
from .emit import emitter

#: The process-wide program cache used by eager generated kernels.
CACHE = ProgramCache()

_COMPILERS: dict[_dev.Device, Any] = {}
_WARNED: set[tuple[str, str]] = set()
_LOCK = threading.Lock()


class CompileWarning(UserWarning):
    """A generated kernel could not be built; the composite ran as its decomposition."""


def _warn_once(key: tuple[str, str], msg: str, exc: Exception | None = None) -> None:
    """Warn ``msg`` once per ``key``. With the build error ``exc``, the warning stays one line:
    the compiler's first error and the path of a log file holding the whole compiler log and
    the generated source (which is never shown on screen)."""
    if key in _WARNED:
        return
    _WARNED.add(key)
    if exc is not None:
        msg = (
            f"{msg} ({first_error(str(exc))}; compiler log and generated source: {write_log(key, msg, exc)})"
        )
    warnings.warn(msg, CompileWarning, stacklevel=4)


def first_error(text: str) -> str:
    """The first line of a build failure that says what is wrong, without its file prefix."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if re.search(r"\berror\b:", ln, re.IGNORECASE):
            return re.sub(r"^\S+?:\d+(:\d+)?:\s*", "", ln)[:200]
    return (lines[0] if lines else "no compiler output")[:200]


def log_dir() -> Path:
    """Where build failures are logged: ``$OARLOCK_COMPILE_LOG_DIR`` or a folder in the temp dir."""
    env = os.environ.get("OARLOCK_COMPILE_LOG_DIR")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(env) if env else Path(tempfile.gettempdir()) / f"oarlock-compile-logs-{uid}"


def write_log(key: tuple[str, str], msg: str, exc: Exception) -> str:
    """Write ``msg`` and the whole error (compiler log, generated source) to a file; its path."""
    text = f"{msg}\n\n{exc}\n"
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(key))[:80]
    folder = log_dir()
    path = folder / f"{slug}-{hashlib.sha1(text.encode()).hexdigest()[:10]}.log"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as err:
        return f"<not written: {err}>"
    return str(path)


def compiler_for(dev: _dev.Device) -> Any:
    """The plugin's :class:`adapter_api.Compiler` for ``dev``, or None without compile access."""
    try:
        return _COMPILERS[dev]
    except KeyError:
        pass
    entry = host().registry.compilers.get(dev.type)
    comp = None
    if entry is not None:
        try:
            comp = entry[1](_dev.device_type(dev.type).runtime, dev.index)
        except Exception as exc:  # noqa: BLE001 — a broken compiler means "no compile access"
            _warn_once(
                ("*", dev.type),
                f"[compiler] plugin '{entry[0]}' could not create its compiler for {dev}: "
                f"{type(exc).__name__}: {exc}; composites run as their decomposition",
            )
    _COMPILERS[dev] = comp
    return comp


@dataclass
class Kernel:
    """A loop-IR program built for one compiler: launch it with tensors."""

    prog: loop_ir.Program
    source: str
    entry: str
    language: str
    local: int
    layout: str
    options: tuple[str, ...] = ()
    programs: dict[int, Any] = field(default_factory=dict)
    device_kind: str = ""
    #: the vector width it was emitted with (emit._RowLoops), None for other emitters
    width: int | None = None
    variants: dict[int, Kernel] = field(default_factory=dict)
    #: what :meth:`tuned` chose, by compiler, tuning's state and the shape bucket (a launch
    #: pays for no key or file lookup once its bucket is known)
    choices: dict[tuple[Any, ...], tuple[Any, tuple[int] | None]] = field(default_factory=dict)

    def build(self, comp: Any) -> Any:
        p = self.programs.get(id(comp))
        if p is None:
            p = self.programs[id(comp)] = CACHE.get(comp, self.source, self.entry, self.options)
        return p

    def variant(self, width: int) -> Kernel:
        """The same program emitted with vector width ``width``."""
        if width == self.width:
            return self
        k = self.variants.get(width)
        if k is None:
            k = self.variants[width] = make_kernel(
                self.prog, self.language, self.local, self.device_kind, width
            )
        return k

    def tuned(
        self, comp: Any, rows: int, args: list[Any], stream: Any, sync: Any
    ) -> tuple[Any, tuple[int] | None]:
        """The program and work-group size to launch this "rows" kernel with on ``rows`` rows
        (tune.py, measured on ``args`` once per device and shape): the work-group size first,
        on this variant (tune.rows_local), then the vector width at that size
        (tune.rows_width; each candidate built through the program cache)."""
        n = self.prog.n or 0
        key = (
            id(comp),
            tune.epoch(),
            tune.enabled(),
            rows * max(n, 1) >= tune.MIN_ELEMENTS,
            tune.bucket(rows, n),
        )
        got = self.choices.get(key)
        if got is None:
            got = self.choices[key] = self._tune(comp, rows, n, args, stream, sync)
        return got

    def _tune(
        self, comp: Any, rows: int, n: int, args: list[Any], stream: Any, sync: Any
    ) -> tuple[Any, tuple[int] | None]:
        p = self.build(comp)
        lo = tune.rows_local(
            comp,
            self.entry,
            rows,
            n,
            self.local if self.local > 1 else None,
            lambda g: comp.launch(p, args, (rows,), None if g is None else (g,), stream),
            sync,
        )
        local = None if lo is None else (lo,)
        if self.width is None:
            return p, local
        seen: dict[str, int] = {}
        for w in tune.WIDTHS:
            seen.setdefault(self.variant(w).source, w)
        width = tune.rows_width(
            comp,
            self.entry,
            rows,
            n,
            self.width,
            tuple(seen.values()),
            lambda w: comp.launch(self.variant(w).build(comp), args, (rows,), local, stream),
            sync,
        )
        return self.variant(width).build(comp), local

    def launch(self, dev: _dev.Device, ins: list[Tensor], outs: list[Tensor], rows: int) -> None:
        comp = compiler_for(dev)
        if rows == 0:
            self.build(comp)  # a compile error raises all the same
            return
        args = [t.native() for t in ins] + [o.native() for o in outs] + [np.int64(rows)]
        stream = dispatch.context(dev).stream
        if self.layout == "rows" and _aliased(ins, outs):
            # tuning launches the kernel several times on its arguments: an output that is an
            # input's storage (an update in place) would take the update once per launch
            p, local, grid = self.build(comp), (self.local,) if self.local > 1 else None, (rows,)
        elif self.layout == "rows":  # work-group size and vector width tuned per device and shape
            sync = lambda: _dev.device_type(dev.type).runtime.synchronize(dev.index)  # noqa: E731
            p, local = self.tuned(comp, rows, args, stream, sync)
            grid = (rows,)
        else:
            p = self.build(comp)
            grid, local = (rows * self.local,), (self.local,)
        comp.launch(p, args, grid, local, stream)


def _aliased(ins: list[Tensor], outs: list[Tensor]) -> bool:
    """Whether an output shares storage with an input."""
    blocks = {id(t._block) for t in ins}
    return any(id(o._block) in blocks for o in outs)


def make_kernel(
    prog: loop_ir.Program,
    language: str,
    local: int | None = None,
    device_kind: str = "",
    width: int | None = None,
) -> Kernel:
    """Emit ``prog`` for ``language``; the entry name carries a hash of the program (every
    vector width of it shares the name: tuning keys its choices by it)."""
    import hashlib

    from . import answers

    em = emitter(language, local, device_kind, width)
    text = prog.describe()
    h = hashlib.sha256(text.encode()).hexdigest()[:12]
    entry = f"{prog.name}_{h}"
    # the emitted source, kept across processes (a warm first step emits nothing)
    q = answers.question("emit", language, repr((local, device_kind, width, prog.out_col)), text)
    source = answers.FUSION.get(q)
    if not isinstance(source, str):
        source = em.source(prog, entry)
        answers.FUSION.put(q, source)
    return Kernel(
        prog,
        source,
        entry,
        language,
        em.local,
        em.layout,
        em.build_options,
        device_kind=device_kind,
        width=getattr(em, "width", None),
    )


def device_kind(dev: _dev.Device) -> str:
    """``"cpu"`` for a device its plugin reports as a CPU (PoCL), else ``""``."""
    if dev.type == "cpu":
        return "cpu"
    try:
        extra = _dev.device_type(dev.type).runtime.properties(dev.index).extra
    except Exception:  # noqa: BLE001 — properties are informational
        return ""
    return "cpu" if str(extra.get("device_type", "")).lower() == "cpu" else ""


@dataclass
class Plan:
    """What was generated for one composite signature."""

    op: base.OpDef
    forward: Kernel
    metas: list[tuple[tuple[int, ...], np.dtype]]
    #: constants the decomposition made, read as inputs after the op's own (trace.trace)
    consts: list[Tensor] = field(default_factory=list)
    backward: dict[tuple[bool, ...], Any] = field(default_factory=dict)


_PLANS: dict[tuple[Any, ...], Plan | None] = {}
_KINDS: dict[_dev.Device, str] = {}


def _kind(dev: _dev.Device) -> str:
    k = _KINDS.get(dev)
    if k is None:
        k = _KINDS[dev] = device_kind(dev)
    return k


def _freeze(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, float) and v != v:
        return "nan"
    if isinstance(v, (Tensor, np.ndarray)):
        raise TypeError("tensor attribute")
    return v if isinstance(v, (int, float, str, bool, type(None), np.dtype)) else repr(v)


def _key(
    op: base.OpDef, ins: list[Tensor], attrs: dict[str, Any], dev: _dev.Device
) -> tuple[Any, ...] | None:
    x = ins[0]
    if not x.shape or x.dtype not in loop_ir.FLOATS:
        return None
    shapes = tuple((t.shape, t.dtype) for t in ins)
    kinds = _KINDS_OF.get(shapes, _MISS)
    if kinds is _MISS:  # NOTE: the kinds of a signature once: 10 us a call computed each time
        if len(_KINDS_OF) > 4096:
            _KINDS_OF.clear()
        geo = Geometry(x.shape)
        try:
            # an input's kind, or the expression it is read at (a broadcast: the same
            # expression serves every shape that gives it)
            kinds = (
                geo.n,
                len(x.shape),
                geo.rows == 1,
                tuple((t.dtype.str, *geo.kind_or_load(t.shape)) for t in ins),
            )
        except NotFusible:
            kinds = None
        _KINDS_OF[shapes] = kinds
    if kinds is None:
        return None
    try:
        frozen = _freeze(attrs) if attrs else ()
    except TypeError:
        return None
    return (op.name, dev, *kinds, frozen)


_MISS = object()
#: ((shape, dtype) of each input) -> the plan key's part they give (None: no kinds fit)
_KINDS_OF: dict[tuple[Any, ...], tuple[Any, ...] | None] = {}


def _plan(
    op: base.OpDef, ins: list[Tensor], attrs: dict[str, Any], dev: _dev.Device, comp: Any
) -> Plan | None:
    key = _key(op, ins, attrs, dev)
    if key is None:
        return None
    try:
        return _PLANS[key]
    except KeyError:
        pass
    plan = None
    consts: list[Tensor] = []
    try:
        prog, metas = trace(op.name, op.decomposition, ins, attrs, consts=consts)  # type: ignore[arg-type]
        plan = Plan(op, make_kernel(prog, comp.language, device_kind=_kind(dev)), metas, consts)
    except NotFusible:
        plan = None
    _PLANS[key] = plan
    return plan


def generate(op: base.OpDef, ins: list[Tensor], attrs: dict[str, Any]) -> list[Tensor] | None:
    """``ops.base.GENERATORS`` entry: run ``op`` as a generated kernel, or return None."""
    if base.TRACER.get() is not None or op.decomposition is None or not ins:
        return None
    if not all(isinstance(t, Tensor) for t in ins):
        return None
    dev = ins[0].device
    if any(t.device != dev for t in ins):
        return None  # the decomposition raises the device-mismatch error
    comp = compiler_for(dev)
    if comp is None:
        return None
    plan = _plan(op, ins, attrs, dev, comp)
    if plan is None:
        return None
    try:
        metas = op.infer(ins, attrs) if op.infer is not None else plan.metas
    except OarlockError:
        return None
    x = ins[0]
    rows = math.prod(x.shape[:-1])
    outs = [_empty(s, d, dev) for s, d in metas]
    try:
        _launch(plan.forward, dev, ins + plan.consts, outs, rows, op.name)
    except CompileError as exc:
        _fail(op, dev, plan, exc)
        return None
    if autograd.GRAD_ENABLED.get() and any(not t.stop_gradient for t in ins):
        autograd.record(_grad_op(op), ins, attrs, outs)
    return outs


#: the plugin field of a generated eager kernel's name in fw.profiler (``plugin/op/dtype``)
PROFILE_NAME = "oarlock.compiler (eager)"


def _launch(
    kernel: Kernel, dev: _dev.Device, ins: list[Tensor], outs: list[Tensor], rows: int, name: str
) -> None:
    """``kernel.launch``; while ``fw.profiler`` records, inside a device span from the
    runtime's events named ``oarlock.compiler (eager)/<op>/<dtype>`` (``<op>_grad`` for a
    generated backward)."""
    if not _profiling.ACTIVE:
        kernel.launch(dev, ins, outs, rows)
        return
    rec = _profiling.current()
    ctx = dispatch.context(dev)
    ev0 = rec.begin_launch(ctx, dev.type) if rec is not None else None
    kernel.launch(dev, ins, outs, rows)
    if ev0 is not None and rec is not None:
        rec.end_launch(ctx, dev.type, ev0, f"{PROFILE_NAME}/{name}/{ins[0].dtype}", None)


def _fail(op: base.OpDef, dev: _dev.Device, plan: Plan, exc: Exception) -> None:
    for k, v in list(_PLANS.items()):
        if v is plan:
            _PLANS[k] = None
    _warn_once(
        (op.name, dev.type),
        f"[compiler] the kernel generated for '{op.name}' does not build on {dev}; it runs as its "
        f"decomposition from now on",
        exc,
    )


def _empty(shape: tuple[int, ...], dtype: np.dtype, dev: _dev.Device) -> Tensor:
    block = _dev.allocator_of(dev).malloc(math.prod(shape) * np.dtype(dtype).itemsize)
    return Tensor._make(block, 0, tuple(shape), np.dtype(dtype), dev)


# -- backward -------------------------------------------------------------------------------
_GRAD_OPS: dict[str, base.OpDef] = {}
#: which path each composite's backward took: {"rms_norm@cpu": {"generated": n, "rule": n}}
BACKWARD_PATHS: dict[str, dict[str, int]] = {}


def _count(op: str, dev: _dev.Device, path: str) -> None:
    d = BACKWARD_PATHS.setdefault(f"{op}@{dev.type}", {"generated": 0, "rule": 0})
    d[path] += 1


def _grad_op(op: base.OpDef) -> base.OpDef:
    """The op recorded on the tape for a generated forward: same definition, generated grad."""
    g = _GRAD_OPS.get(op.name)
    if g is None or g.decomposition is not op.decomposition:
        original = op.grad

        def rule(node: autograd.Node, gouts: list[Tensor | None]) -> list[Tensor | None]:
            res = generated_backward(op, node, gouts)
            dev = node.inputs[0].device if node.inputs else None
            if dev is not None:
                _count(op.name, dev, "rule" if res is None else "generated")
            if res is not None:
                return res
            assert original is not None
            return original(node, gouts)

        g = _GRAD_OPS[op.name] = base.OpDef(
            op.name, "composite", op.infer, rule, False, op.decomposition, op.doc
        )
    return g


class _FakeNode:
    """What a gradient rule reads of a node, on symbolic tensors (for tracing the rule)."""

    def __init__(
        self, op: base.OpDef, inputs: list[Tensor], attrs: dict[str, Any], outs: list[Tensor]
    ) -> None:
        self.op, self.inputs, self.attrs, self._o = op, inputs, attrs, outs
        self.n_outputs = len(outs)
        self.ctx = None

    def out(self, i: int = 0) -> Tensor:
        return self._o[i]


def generated_backward(
    op: base.OpDef, node: autograd.Node, gouts: list[Tensor | None]
) -> list[Tensor | None] | None:
    """Gradients of ``op``'s inputs by a generated kernel, or None to use the op's rule."""
    if autograd.is_grad_enabled() or not base._compile_enabled() or node.inputs is None:
        return None  # create_graph needs a differentiable graph: the rule's ops
    ins = node.inputs
    if any(g is None for g in gouts):
        return None
    try:
        outs = [node.out(i) for i in range(node.n_outputs)]
    except OarlockError:
        return None
    dev = ins[0].device
    comp = compiler_for(dev)
    key = _key(op, ins, node.attrs, dev)
    if comp is None or key is None:
        return None
    plan = _PLANS.get(key)
    if plan is None:
        return None
    wanted = tuple(not t.stop_gradient and t.dtype.kind == "f" for t in ins)
    bw = plan.backward.get(wanted, False)
    if bw is False:
        bw = plan.backward[wanted] = _build_backward(op, plan, ins, outs, gouts, node.attrs, wanted, comp)  # type: ignore[arg-type]
    if bw is None:
        return None
    kernel, which, consts = bw
    rows = math.prod(ins[0].shape[:-1])
    n = ins[0].shape[-1]
    launch_ins = list(ins) + list(outs) + list(gouts) + consts  # type: ignore[arg-type]
    g_outs = []
    for k in which:
        col = plan_in_col(ins[0].shape, ins[k].shape)
        g_outs.append(_empty((rows, n) if col else (rows,), ins[k].dtype, dev))
    try:
        _launch(kernel, dev, launch_ins, g_outs, rows, op.name + "_grad")
    except CompileError as exc:
        plan.backward[wanted] = None
        _warn_once(
            (op.name + " backward", dev.type),
            f"[compiler] the backward kernel generated for '{op.name}' does not build on {dev}; it runs as "
            f"its gradient rule from now on",
            exc,
        )
        return None
    res: list[Tensor | None] = [None] * len(ins)
    for k, g in zip(which, g_outs):
        t = ins[k]
        if g.shape == (rows, n) and t.shape != ins[0].shape:  # a weight: sum the per-row partials
            from .._src.ops import math as M

            g = M.sum(g, axis=0)
        res[k] = g._reshaped(t.shape)
    return res


def plan_in_col(main: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    return Geometry(main).kind_of_input(shape)[1]


def _build_backward(
    op: base.OpDef,
    plan: Plan,
    ins: list[Tensor],
    outs: list[Tensor],
    gouts: list[Tensor],
    attrs: dict[str, Any],
    wanted: tuple[bool, ...],
    comp: Any,
) -> tuple[Kernel, list[int], list[Tensor]] | None:
    # NOTE: one gradient for every path: the op's own rule, or for a composite without one the
    # decomposition differentiated by the primitives' rules (base._grad_by_decomposition), is
    # traced like a forward. Eager, autograd and generated backward kernels agree by
    # construction (ties in max/min included).
    try:
        assert op.grad is not None
        n_in, n_out = len(ins), len(outs)

        def rule(*syms: Tensor) -> list[Tensor]:
            node = _FakeNode(op, list(syms[:n_in]), attrs, list(syms[n_in : n_in + n_out]))
            for s, w in zip(node.inputs, wanted):
                s.stop_gradient = not w
            res = op.grad(node, list(syms[n_in + n_out :]))  # type: ignore[misc]
            got = [r for r, w in zip(res, wanted) if w]
            if any(r is None for r in got):
                raise NotFusible("the rule gives no gradient for a wanted input")
            return got

        consts: list[Tensor] = []
        prog, metas = trace(
            op.name + "_grad", rule, list(ins) + list(outs) + list(gouts), {}, ins[0].shape, consts=consts
        )
        which = [k for k, w in enumerate(wanted) if w]
        for k, (s, _) in zip(which, metas):
            if s != ins[k].shape:
                raise NotFusible("a traced gradient does not have its input's shape")
        return make_kernel(prog, comp.language, device_kind=_kind(ins[0].device)), which, consts
    except NotFusible:
        return None


def install() -> None:
    """Register :func:`generate` in ``ops.base.GENERATORS`` (idempotent)."""
    with _LOCK:
        if generate not in base.GENERATORS:
            base.GENERATORS.append(generate)


def reset() -> None:
    """Forget traced plans and built programs (the disk cache stays)."""
    _PLANS.clear()
    _KINDS_OF.clear()
    _GRAD_OPS.clear()
    BACKWARD_PATHS.clear()
    _COMPILERS.clear()
    _WARNED.clear()
    CACHE.clear_memory()
