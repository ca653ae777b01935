"""Kernels for the fusion groups of programs (:mod:`framework.ir.passes.fusion`).

A group arrives as a small program (its inputs, ops and outputs, dims possibly symbolic).
:func:`lower_group` traces it on symbolic tensors at two sizes of its symbols
(:func:`framework.compiler.trace` with ``group=True``) and keeps it only when both give the
same loop-IR program: then one kernel, with the number of rows (and, when the row length is
symbolic, the row length) as arguments, serves every size. The *main* value, whose last axis
is the row, is the group's largest.

Its kernel reaches the executor through ``dispatch.KERNEL_SOURCES`` like a generated
primitive: looking up ``fused.g<id>`` builds the kernel (once, through the program cache, on
disk too); a kernel that does not build warns once (:class:`CompileWarning`), is counted
(``fusion_stats()["failed"]``) and declines, so the executor runs the group's ops unfused.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from adapter_api import CompileError, KernelEntry

from .._src import device as _dev
from .._src import dispatch
from .._src import dtypes as _dt
from .._src.ops import base
from .._src.tensor import Tensor
from ..ir import Program, SymDim, TensorType, print_program
from ..ir.dialects import meta_tensor
from ..ir.passes import fusion
from . import answers, background, loop_ir, tune, unit
from .cache import build_batch
from .capture import NotFusible, trace
from .eager import CACHE, Kernel, _kind, _warn_once, compiler_for, make_kernel
from .emit import EMITTERS

PLUGIN = "oarlock.compiler (fused)"
#: the two sizes every symbol takes when a group is traced (primes: no accidental equal dims)
_PROBES = ((11, 13, 17, 19, 23, 29, 31, 37), (41, 43, 47, 53, 59, 61, 67, 71))


@dataclass
class Lowered:
    """A group lowered to the loop IR: ``main`` is the type whose last axis is the row;
    ``partials`` are the outputs that are sums over rows (a weight's gradient): the kernel
    writes one row of partial sums per row and a ``sum`` kernel adds them up."""

    program: loop_ir.Program
    main: TensorType
    partials: tuple[int, ...] = ()


def _binding(symbols: tuple[str, ...], probe: int) -> dict[str, int]:
    values = _PROBES[probe]
    return {s: values[k % len(values)] + 64 * (k // len(values)) for k, s in enumerate(symbols)}


#: a reduction over every axis is one row of the flat view up to this many elements (past it,
#: one work-group, or one thread, per tensor is slower than the device's reduction kernel)
WHOLE_MAX = 1 << 20
_REDUCTIONS = ("op.sum", "op.max", "op.min")


def _flat_main(body: Program, binding: dict[str, int]) -> TensorType | None:
    """The flat type ``(numel,)`` of the value a reduction over every axis reads (a
    gradient's sum of squares for the global-norm clip), when the group has one."""
    for op in body.block.ops:
        if op.name not in _REDUCTIONS or not op.operands:
            continue
        t = op.operands[0].type
        if (
            not isinstance(t, TensorType)
            or t.rank < 2
            or sorted(op.attrs.get("axes", ())) != list(range(t.rank))
        ):
            continue
        numel = math.prod(t.concrete(binding))
        syms = [d for d in t.shape if isinstance(d, SymDim)]
        if len(syms) > 1 or (syms and len(syms[0].terms) != 1) or not 0 < numel <= WHOLE_MAX:
            return None  # the flat length would not be affine in the symbols
        rest = math.prod(d for d in t.shape if not isinstance(d, SymDim))
        flat = SymDim.make({syms[0].terms[0][0]: syms[0].terms[0][1] * rest}) if syms else rest
        return TensorType((flat,), t.dtype, t.device)
    return None


def _main(body: Program, binding: dict[str, int]) -> TensorType:
    flat = _flat_main(body, binding)
    if flat is not None:
        return flat
    values = [*body.inputs, *(r for op in body.block.ops for r in op.results)]
    best: TensorType | None = None
    size = -1
    for v in values:
        t = v.type
        if isinstance(t, TensorType) and t.rank and _dt.is_floating(t.dtype):
            n = math.prod(t.concrete(binding))
            if n > size:
                best, size = t, n
    if best is None:
        raise NotFusible("the group has no floating-point value")
    return best


def _trace_at(body: Program, symbols: tuple[str, ...], binding: dict[str, int]) -> Lowered:
    main = _main(body, binding)
    ins: list[Tensor] = []
    for v in body.inputs:
        t = v.type
        assert isinstance(t, TensorType)
        ins.append(meta_tensor(t.concrete(binding), t.dtype))

    def run(*syms: Tensor) -> list[Tensor]:
        return fusion.replay(body, syms, binding)

    shape = main.concrete(binding)
    prog, metas = trace(body.name, run, ins, {}, shape, group=True)
    if isinstance(main.shape[-1], SymDim):
        prog.n = None  # the row length is an argument of the kernel
    full = math.prod(shape)
    partials = tuple(k for k, (s, _) in enumerate(metas) if prog.out_col[k] and math.prod(s) != full)
    return Lowered(prog, main, partials)


def lower_group(body: Program, full: bool = True) -> Lowered:
    """The loop-IR program of a group (raises :class:`NotFusible` with the reason). With
    ``full``, a group with symbolic dims is traced at two sizes and must lower alike."""
    symbols = fusion.symbols_of(body.inputs, body.block.ops)
    low = _trace_at(body, symbols, _binding(symbols, 0))
    if full and symbols:
        other = _trace_at(body, symbols, _binding(symbols, 1))
        if other.program.describe() != low.program.describe():
            raise NotFusible("the loop IR depends on the size of a symbolic dim")
    return low


class Backend:
    """The compiler as the fusion pass's backend (:class:`framework.ir.passes.fusion.Backend`).
    Answers are kept by the group's text (the layers of a model repeat the same groups)."""

    def __init__(self) -> None:
        self._answers: dict[tuple[str, str, bool], fusion.Estimate | str] = {}

    def available(self, device: str) -> bool:
        if not base._compile_enabled():
            return False
        comp = compiler_for(_dev.parse(device))
        return comp is not None and _language(comp.language, _dev.parse(device)) in EMITTERS

    def check(self, body: Program, device: str, full: bool) -> fusion.Estimate | str:
        text = print_program(body)
        key = (text, device, full)
        got = self._answers.get(key)
        if got is None:
            if len(self._answers) > 4096:
                self._answers.clear()
            got = self._answers[key] = self._kept(text, body, device, full)
        return got

    def _where(self, device: str) -> str:
        dev = _dev.parse(device)
        comp = compiler_for(dev)
        return f"{device} {_language(comp.language, dev) if comp is not None else '-'}"

    def kept_groups(self, text: str, device: str) -> tuple[list[list[int]], dict[str, list[int]]] | None:
        """The fusion pass's groups of the program ``text`` (op positions) and the index
        constants they depend on, from the file of answers; None when not kept."""
        got = answers.FUSION.get(answers.question(text, self._where(device), "groups"))
        if isinstance(got, list) and len(got) == 2 and isinstance(got[0], list) and isinstance(got[1], dict):
            return [[int(i) for i in g] for g in got[0]], got[1]
        return None

    def keep_groups(
        self, text: str, device: str, groups: list[list[int]], reads: dict[str, list[int]]
    ) -> None:
        """Keep the groups grown for the program ``text`` (see :meth:`kept_groups`)."""
        answers.FUSION.put(answers.question(text, self._where(device), "groups"), [groups, reads])

    def _kept(self, text: str, body: Program, device: str, full: bool) -> fusion.Estimate | str:
        """The answer from the file of answers (:mod:`.answers`, shared by every process on
        this machine), else worked out and added to it."""
        q = answers.question(text, self._where(device), "full" if full else "fits")
        kept = answers.FUSION.get(q)
        if isinstance(kept, str):
            return kept
        if isinstance(kept, list) and len(kept) == 3:
            return fusion.Estimate(int(kept[0]), str(kept[1]), int(kept[2]))
        got = self._check(body, device, full)
        answers.FUSION.put(q, got if isinstance(got, str) else [got.passes, got.source, got.scratch])
        return got

    def _check(self, body: Program, device: str, full: bool) -> fusion.Estimate | str:
        try:
            low = lower_group(body, full)
        except NotFusible as exc:
            return str(exc)
        passes = max(len(loop_ir.schedule(low.program).loops), 1)
        scratch = 2 * len(low.partials) * fusion.type_bytes(low.main)  # partial sums written, read
        if not full:
            return fusion.Estimate(passes, "", scratch)
        dev = _dev.parse(device)
        comp = compiler_for(dev)
        try:
            kernel = make_kernel(low.program, comp.language, device_kind=_kind(dev))
        except NotImplementedError as exc:  # the emitter has no syntax for some value
            return str(exc)
        return fusion.Estimate(passes, kernel.source, scratch)


def _language(language: str, dev: _dev.Device) -> str:
    kind = _kind(dev)
    return f"{language}/{kind}" if kind and f"{language}/{kind}" in EMITTERS else language


def kernel_source(op: str, device_type: str, dtype: np.dtype) -> KernelEntry | None:
    """``dispatch.KERNEL_SOURCES`` entry: the generated kernel of fusion group ``op``."""
    g = fusion.GROUPS.get(op)
    if g is None:
        return None

    def make(comp: Any, dev: _dev.Device) -> tuple[Kernel, Lowered]:
        return group_kernel(g, comp, dev)

    what = f"fusion group {op} ({len(g.body.block.ops) - 1} ops)"
    return built_entry(
        op, device_type, make, what, "its ops run unfused", lambda low, k: _launcher(g, low, k, device_type)
    )


#: each group's kernel by (group, language, device kind), with its lowering: made once, shared
#: by the parallel prebuild and the executor's lookup (its builds and tuned variants too)
_MADE: dict[tuple[str, str, str], tuple[Kernel, Lowered]] = {}


def group_kernel(g: fusion.Group, comp: Any, dev: _dev.Device) -> tuple[Kernel, Lowered]:
    """The kernel of group ``g`` for ``comp`` (emitted once) and the group's lowering."""
    key = (g.name, comp.language, _kind(dev))
    got = _MADE.get(key)
    if got is None:
        low = lower_group(g.body)
        got = _MADE[key] = (make_kernel(low.program, comp.language, device_kind=_kind(dev)), low)
    return got


def reset() -> None:
    """Forget the groups' kernels (their built programs with them)."""
    _MADE.clear()


def built_entry(
    op: str,
    device_type: str,
    make: Callable[[Any, _dev.Device], tuple[Kernel, Any]],
    what: str,
    fallback: str,
    launcher: Callable[[Any, Kernel], KernelEntry],
    plugin: str = PLUGIN,
) -> KernelEntry | None:
    """The kernel entry of a generated op: ``make(compiler, device)`` gives the kernel (and
    what its launcher needs), built here once, and ``launcher(that, kernel)`` the entry. A
    kernel that does not build is counted (``fusion_stats()["failed"]``), warned about once
    (``what`` does not build; ``fallback``) and gives None: the op runs its decomposition.
    A kernel building in the background gets a stand-in meanwhile, named ``plugin`` as the
    launcher's entry is."""
    if not base._compile_enabled():
        return None
    dev = _dev.Device(device_type, 0)
    comp = compiler_for(dev)
    if comp is None:
        return None
    try:
        kernel, extra = make(comp, dev)
    except (NotImplementedError, NotFusible) as exc:
        return _failed(op, device_type, what, fallback, exc)

    def built() -> KernelEntry | None:
        try:
            kernel.build(comp)
        except CompileError as exc:
            return _failed(op, device_type, what, fallback, exc)
        fusion.count("kernels")
        return launcher(extra, kernel)

    building = background.pending(kernel)
    if building:  # in the background: its ops run unfused until it lands
        return background.waiting_entry(op, device_type, building, built, plugin)
    return built()


def _failed(op: str, device_type: str, what: str, fallback: str, exc: Exception) -> None:
    fusion.count("failed")
    _warn_once(
        (op, device_type),
        f"[compiler] {what} does not build on {device_type}; {fallback} from now on",
        exc,
    )
    return None


def partial_sums(
    device_type: str, ctx: Any, outs: list[Any], sums: list[tuple[int, tuple[int, ...]]]
) -> tuple[list[Any], Any]:
    """The outputs with scratch rows in place of the sums over rows (``sums``: output index,
    scratch shape), and what finishes them (the device's ``sum`` over the rows), or None."""
    if not sums:
        return outs, None
    dev = _dev.Device(device_type, ctx.device_index)
    alloc = _dev.allocator_of(dev)
    args, finish = list(outs), []
    for k, shape in sums:
        dtype = np.dtype(outs[k].dtype)
        block = alloc.malloc(math.prod(shape) * dtype.itemsize)
        scratch = ctx.runtime.view(block.handle, 0, shape, dtype)
        args[k] = scratch
        keep = len(shape) == len(outs[k].shape)
        entry = dispatch.find_kernel("sum", device_type, dtype)
        finish.append((entry.fn, [outs[k]], [scratch], {"axes": (0,), "keepdim": keep}, block))

    def run() -> None:
        for fn, o, i, attrs, _block in finish:
            fn(ctx, o, i, **attrs)

    return args, run


def partial_shapes(
    low: Lowered, out_types: list[Any], binding: dict[str, int]
) -> list[tuple[int, tuple[int, ...]]]:
    """(output index, scratch shape) of each sum over rows of a group: a sum of shape
    ``(n,)`` or ``(1, ..., 1, n)`` has ``(rows, n)`` or ``(rows, 1, ..., n)`` partials."""
    rows = math.prod(low.main.concrete(binding)[:-1])
    sums = []
    for k in low.partials:
        out = out_types[k].concrete(binding)
        sums.append((k, (rows, *(out[1:] if len(out) > 1 else out))))
    return sums


def _launcher(g: fusion.Group, low: Lowered, kernel: Kernel, device_type: str) -> KernelEntry:
    """The kernel entry of a built group: ``fn`` and a binder (its arguments and launch
    geometry worked out once per device and size)."""
    symbolic_n = low.program.n is None
    main = low.main
    rows_layout = kernel.layout == "rows"
    local = kernel.local
    symbols = g.symbols
    out_types = [v.type for v in g.body.outputs]
    geometry: dict[tuple[int, tuple[int, ...]], tuple[Any, ...]] = {}

    def prepare(ctx: Any, dims: tuple[int, ...]) -> tuple[Any, ...]:
        key = (ctx.device_index, dims)
        got = geometry.get(key)
        if got is None:
            binding = dict(zip(symbols, dims))
            shape = main.concrete(binding)
            rows = math.prod(shape[:-1])
            comp = compiler_for(_dev.Device(device_type, ctx.device_index))
            tail = [np.int64(rows)] + ([np.int64(shape[-1])] if symbolic_n else [])
            if rows_layout:
                grid, loc = (rows,), ((local,) if local > 1 else None)
            else:
                grid, loc = (rows * local,), (local,)
            sums = partial_shapes(low, out_types, binding)
            got = geometry[key] = (rows, comp, kernel.build(comp), tail, grid, loc, sums)
        return got

    tuned: dict[tuple[int, tuple[int, ...]], Any] = {}

    def work_group(
        ctx: Any, dims: tuple[int, ...], comp: Any, prog: Any, args: list[Any], loc: Any, outputs: range
    ) -> tuple[Any, Any]:
        """A "rows" kernel's program (its vector width) and work-group size, tuned once per
        device and size (tune.py) on stand-ins for the outputs ``args[outputs]``: an output
        may be an input's storage (a program's update in place), which a repeated launch
        would update once per launch."""
        if not rows_layout:
            return prog, loc
        key = (ctx.device_index, dims)
        got = tuned.get(key)
        if got is None:
            rows = int(args[-1 - symbolic_n])
            sync = lambda: ctx.runtime.synchronize(ctx.device_index)  # noqa: E731
            trial, _keep = tune.stand_ins(device_type, ctx, args, outputs)
            got = tuned[key] = kernel.tuned(comp, rows, trial, ctx.stream, sync)
        return got

    def launch(ctx: Any, outs: list[Any], ins: list[Any], dims: tuple[int, ...] = ()) -> None:
        rows, comp, prog, tail, grid, loc, sums = prepare(ctx, tuple(dims))
        if not rows:
            return
        outs, finish = partial_sums(device_type, ctx, outs, sums)
        args = [*ins, *outs, *tail]
        prog, loc = work_group(ctx, tuple(dims), comp, prog, args, loc, range(len(ins), len(ins) + len(outs)))
        comp.launch(prog, args, grid, loc, ctx.stream)
        if finish is not None:
            finish()

    def bind(ctx: Any, outs: list[Any], ins: list[Any], dims: tuple[int, ...] = ()) -> Any:
        rows, comp, prog, tail, grid, loc, sums = prepare(ctx, tuple(dims))
        if not rows:
            return lambda: None
        # the scratch rows live as long as the binding
        outs, finish = partial_sums(device_type, ctx, outs, sums)
        args, stream = [*ins, *outs, *tail], ctx.stream
        prog, loc = work_group(ctx, tuple(dims), comp, prog, args, loc, range(len(ins), len(ins) + len(outs)))
        return bound_call(comp, prog, args, grid, loc, stream, finish)

    return KernelEntry(launch, PLUGIN, bind=bind)


def bound_call(comp: Any, prog: Any, args: list[Any], grid: Any, loc: Any, stream: Any, finish: Any) -> Any:
    """One launch with its arguments bound (the compiler's ``bind`` where it has one), then
    ``finish`` (the sums over rows) when there is one."""
    launch = (comp.bind(prog, args, grid, loc, stream) if hasattr(comp, "bind") else None) or (
        lambda: comp.launch(prog, args, grid, loc, stream)
    )
    if finish is None:
        return launch

    def call() -> None:
        launch()
        finish()

    return call


def register(backends: list[Any], backend: type, source: Any) -> None:
    """Add an instance of ``backend`` to a pass's ``backends`` and ``source`` to the
    dispatcher's kernel sources, once each."""
    if not any(isinstance(b, backend) for b in backends):
        backends.append(backend())
    if source not in dispatch.KERNEL_SOURCES:
        dispatch.KERNEL_SOURCES.append(source)
        dispatch.clear_kernel_cache()


def prebuild(programs: list[Program], dev: _dev.Device) -> None:
    """Build the kernels of the fused ops of ``programs`` (a forward and its backward) in
    parallel before the executor asks for them one by one: each build is a C compiler process
    (or the device's compiler) that releases the GIL. A group's vector-width variants that
    tuning will try at its first launch are built too (its shape is known when static). The
    builds go through the program cache, so the executor's lookups find them there; a build
    that fails here is left to that lookup (which warns and falls back). A batch that
    compiles for over a second says so once ("compiling 21 kernels (c)…").

    With the C compiler, the builds that would compile (not in the cache) run in the
    background instead (:mod:`.background`, ``OARLOCK_COMPILE_BACKGROUND``): the program
    runs its groups unfused, and the plugin's own C on its numpy path, until they land."""
    comp = compiler_for(dev) if fusion.compile_enabled() else None
    if comp is None:
        return
    ops = {op.name: _dtype_of(op) for p in programs for op in p.block.ops if op.name.startswith("fused.")}
    todo: list[Callable[[], Any]] = []
    pending: list[Kernel] = []
    owner: dict[int, Kernel] = {}  # a vector-width variant -> the group's kernel
    for name, dtype in sorted(ops.items()):
        g = fusion.GROUPS.get(name)
        if g is None:  # another kind of fused op (a horizontal group): its lookup builds it
            if (name, dev.type, dtype) not in dispatch._KCACHE:  # not looked up yet
                merged = _merged(name, comp, dev)
                if merged is not None:  # in a unit: the lookup finds it built
                    pending += [merged] if id(comp) not in merged.programs else []
                else:
                    todo.append(functools.partial(dispatch.find_kernel, name, dev.type, dtype))
            continue
        try:
            kernels = _kernels_of(g, comp, dev)
        except (NotFusible, NotImplementedError):
            continue
        pending += [k for k in kernels if id(comp) not in k.programs]
        owner.update((id(k), kernels[0]) for k in kernels[1:])
    todo += _kernel_builds(pending, comp)
    own = getattr(comp, "own_builds", None)  # the plugin's own sources (optional in the contract)
    if own is not None:
        todo += own(
            {
                (op.name[3:], _dtype_of(op))
                for p in programs
                for op in p.block.ops
                if op.name.startswith("op.")
            }
        )
    if comp.language == "c" and background.enabled():
        todo = _to_background(todo, owner, comp.language)
    if len(todo) < 2:
        return
    workers = min(len(todo), os.cpu_count() or 1)
    kernels = sum(getattr(call, "kernels", 1) for call in todo)
    with build_batch(comp.language, kernels) as done, ThreadPoolExecutor(workers) as pool:

        def run(call: Callable[[], Any]) -> None:
            try:
                call()
            finally:
                done(getattr(call, "kernels", 1))

        list(pool.map(run, todo))


def _to_background(
    todo: list[Callable[[], Any]], owner: dict[int, Kernel], language: str
) -> list[Callable[[], Any]]:
    """Send the builds of ``todo`` that would compile to the background (each says so with
    its ``cached()``: the cache has its binary); returns the others, which only load."""
    later = [call for call in todo if not getattr(call, "cached", lambda: True)()]
    if not later:
        return todo
    kernels = []
    for call in later:
        members = list(getattr(call, "members", ()))
        groups = {id(owner[id(k)]): owner[id(k)] for k in members if id(k) in owner}
        kernels.append(members + [k for k in groups.values() if all(k is not m for m in members)])
        queued = getattr(call, "queued", None)  # the plugin's own C: its users take their fallback
        if queued is not None:
            queued()
    background.submit(language, later, kernels)
    return [call for call in todo if call not in later]


def _dtype_of(op: Any) -> np.dtype:
    """An op's dtype: its first operand's (its first result's when it has none)."""
    t = (op.operands[0] if op.operands else op.results[0]).type
    return np.dtype(getattr(t, "dtype", np.float32))


#: the merged (horizontal) kernels' maker, ``(op, compiler, device) -> Kernel | None``, set by
#: horizontal.py when ``framework.compiler`` imports it (it builds on this module, so this
#: module cannot import it)
MERGED_KERNEL: list[Callable[[str, Any, _dev.Device], Kernel | None]] = []


def _merged(name: str, comp: Any, dev: _dev.Device) -> Kernel | None:
    """The merged (horizontal) kernel of ``name`` when it goes in a unit, else None."""
    if comp.language != "c" or not unit.enabled() or not MERGED_KERNEL:
        return None
    return MERGED_KERNEL[0](name, comp, dev)


def _kernel_builds(kernels: list[Kernel], comp: Any) -> list[Callable[[], Any]]:
    """The builds of ``kernels``: C kernels in one translation unit per core and option set
    (unit.py: one compiler process each), others one by one."""
    if comp.language != "c" or not unit.enabled() or len(kernels) < 2:
        out = []
        for k in kernels:
            call = functools.partial(_build_quietly, k, comp)
            call.members = [k]  # type: ignore[attr-defined]
            call.cached = functools.partial(CACHE.has, comp, k.source, k.entry, tuple(k.options))  # type: ignore[attr-defined]
            out.append(call)
        return out
    by_options: dict[tuple[str, ...], list[Kernel]] = {}
    for k in kernels:
        by_options.setdefault(tuple(k.options), []).append(k)
    out = []
    for group in by_options.values():
        out += [unit.Unit(share, comp, CACHE) for share in unit.shares(group, os.cpu_count() or 1)]
    return out


def _build_quietly(k: Kernel, comp: Any) -> None:
    with contextlib.suppress(CompileError):  # the executor's lookup warns and falls back
        k.build(comp)


def _kernels_of(g: fusion.Group, comp: Any, dev: _dev.Device) -> list[Kernel]:
    """A group's kernel and the width variants tuning measures at its (static) size."""
    k, low = group_kernel(g, comp, dev)
    out = [k]
    if k.width is not None and tune.enabled() and not g.symbols:
        shape = low.main.concrete({})
        if math.prod(shape) >= tune.MIN_ELEMENTS:
            seen = {k.source: k}
            for w in tune.WIDTHS:
                seen.setdefault(k.variant(w).source, k.variant(w))
            out = list(seen.values())
    return out


def install() -> None:
    """Register the fusion backend, the kernel source and the parallel prebuild (idempotent)."""
    from ..jit import api

    register(fusion.BACKENDS, Backend, kernel_source)
    if prebuild not in api.PREBUILD:
        api.PREBUILD.append(prebuild)
