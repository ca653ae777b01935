"""Kernels of merged ops (:mod:`framework.ir.passes.horizontal`): several independent fusion
groups (*parts*) in one launch.

Each part is lowered as its own group (:func:`framework.compiler.fused.lower_group`) and
emitted by the device's emitter as a function the merged kernel calls (``hz_part2(a5, ...)``):
the emitter's row hooks are replaced so that the function takes its row (C: a range of rows)
and the reductions' local memory as arguments; everything inside a row (loops, reductions,
the row math) is the emitter's own code. Its tensors are ``restrict`` parameters, which the
compilers use on parameters (LLVM, under PoCL, ignores ``restrict`` on a local pointer).

- C (OpenMP): the rows of every part are cut into tiles of about :data:`TILE` elements; one
  ``omp parallel for schedule(dynamic)`` hands the tiles of all parts to the threads (a part
  of one long row, a gradient's sum of squares, runs on one thread while the others take the
  next parts). Below ``CEmitter.PARALLEL_MIN`` elements in all, the calling thread runs it.
- OpenCL C, CPU devices (PoCL): one work-item per row; each part starts a work-group, and a
  segment dispatch (an ``if``/``else if`` chain on the work-group's index, uniform in the
  group, so PoCL still vectorises across its work-items) picks the part. Work-groups are
  sized so that there are at least :data:`MIN_GROUPS` of them (a merged kernel of twelve
  one-row parts must not be one work-group, which PoCL runs on one thread).
- OpenCL C and CUDA C, GPUs: one work-group (block) per row of the concatenated rows, the
  same segment dispatch on the group's index (uniform in the group, so the barriers of a
  reduction stay legal). The local memory of the reductions is one buffer sized for the
  largest part (a work-group runs one part only), handed to each part as pointers.

The kernel's arguments are each distinct input once, then the outputs, then the row count
(and symbolic row length) of each part with symbolic dims; fixed row counts are constants of
the source. A sum over rows (a weight's gradient) is written as partial rows and summed after
the launch by the device's ``sum``, as for one group.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from adapter_api import KernelEntry

from .._src import device as _dev
from .._src.ops import base
from ..ir import TensorType
from ..ir.passes import horizontal
from . import loop_ir
from .capture import NotFusible
from .eager import Kernel, _kind, compiler_for
from .emit import CEmitter, Emitter, emitter
from .emit.base import _flag
from .fused import (
    MERGED_KERNEL,
    Lowered,
    bound_call,
    built_entry,
    lower_group,
    partial_shapes,
    partial_sums,
    register,
)

PLUGIN = "oarlock.compiler (horizontal)"
#: elements of a tile of rows in the C kernel (the unit the threads take)
TILE = 1 << 14
#: work-groups a merged kernel on a CPU OpenCL device keeps at the least
MIN_GROUPS = 16
#: bytes of kernel arguments the OpenCL and CUDA languages promise at the least (OpenCL's
#: CL_DEVICE_MAX_PARAMETER_SIZE for a full-profile device; CUDA's 4 KiB), and C's 127
#: parameters (C99's translation limit); a plugin may report ``max_parameter_size``
_ARG_BYTES = {"opencl-c": 1024, "cuda": 4096}
_C_PARAMETERS = 127


@dataclass
class Part:
    """One part of a merged kernel: its lowered group and where its tensors are."""

    low: Lowered
    ins: list[int]  #: the kernel's tensor argument of each input
    outs: list[int]  #: the merged op's output index of each output
    symbolic: bool  #: its row count (and row length) are kernel arguments
    out_types: list[TensorType]


@dataclass
class _Style:
    """How one kernel language spells what a merged kernel adds."""

    ptr: str  # a writable tensor
    cptr: str  # a read-only tensor
    size_t: str
    head: str  # the kernel's signature, ``{entry}`` and ``{params}``
    index: str  # the merged index (row, or work-group)
    lid: str  # the work-item's index in its group ("" when a work-item is a row)
    shared: str  # the local-memory buffer of the reductions, ``{words}``
    shared_ptr: str  # a pointer into it, ``{T}``


_STYLES = {
    "c": _Style("{T}* restrict", "const {T}* restrict", "int64_t", "void {entry}({params})", "", "", "", ""),
    "opencl-c/rows": _Style(
        "__global {T}* restrict",
        "__global const {T}* restrict",
        "long",
        "__kernel void {entry}({params})",
        "get_group_id(0)",
        "",
        "",
        "",
    ),
    "opencl-c/groups": _Style(
        "__global {T}* restrict",
        "__global const {T}* restrict",
        "long",
        "__kernel __attribute__((reqd_work_group_size(L, 1, 1))) void {entry}({params})",
        "get_group_id(0)",
        "get_local_id(0)",
        "__local ulong hz_scratch[{words}];",
        "__local {T}*",
    ),
    "cuda/groups": _Style(
        "{T}* __restrict__",
        "const {T}* __restrict__",
        "long long",
        'extern "C" __global__ void __launch_bounds__(L) {entry}({params})',
        "blockIdx.x",
        "threadIdx.x",
        "__shared__ unsigned long long hz_scratch[{words}];",
        "{T}*",
    ),
}


def _style(em: Emitter) -> _Style:
    key = em.language if em.language == "c" else f"{em.language}/{em.layout}"
    try:
        return _STYLES[key]
    except KeyError:
        raise NotImplementedError(f"[compiler] no merged kernels for {key}") from None


_PART_CLASSES: dict[type[Emitter], type[Emitter]] = {}
#: how a part's function is declared, by style key
_FUNCTION = {
    "c": "static inline void",
    "opencl-c/rows": "void",
    "opencl-c/groups": "void",
    "cuda/groups": "static __device__ __forceinline__ void",
}


def _part_emitter(cls: type[Emitter]) -> type[Emitter]:
    """``cls`` emitting one part as a function the merged kernel calls: no prologue, the row
    (C: a range of rows) and the reductions' local memory as arguments (``hz_*`` attributes).
    A function, not a block of the kernel: its tensor parameters are ``restrict`` where the
    compiler honours it (an alias declared in a block is not, and PoCL then keeps the loop
    along the row scalar)."""
    got = _PART_CLASSES.get(cls)
    if got is not None:
        return got

    class PartEmitter(cls):  # type: ignore[valid-type,misc]
        hz_signature = ""
        hz_open: list[str] = []

        def prologue(self, prog: loop_ir.Program) -> list[str]:
            return []

        def signature(self, prog: loop_ir.Program, entry: str) -> str:
            return self.hz_signature

        def row_begin(self, prog: loop_ir.Program) -> tuple[list[str], list[str]]:
            return self.hz_open, []

        def _streamed(self, prog: loop_ir.Program) -> list[int]:
            return []  # a part writes its rows in place (no per-thread row buffer)

        def row_end(self) -> list[str]:
            return ["}"] if self._flat(self._prog) else super().row_end()

    PartEmitter.__name__ = f"Part{cls.__name__}"
    _PART_CLASSES[cls] = PartEmitter
    return PartEmitter


def _scratch(em: Emitter, prog: loop_ir.Program) -> list[tuple[str, str]]:
    """(name, element type) of the local-memory arrays of a part's reductions (what
    ``shared_decls`` declares for one kernel)."""
    arrays = []
    for n in loop_ir.live_nodes(prog.outputs):
        if n.op != "reduce":
            continue
        arrays.append((f"red{n.id}", em._acc_type(n)))
        if _flag(n) == "idx":
            arrays.append((f"idxs{n.id}", "int64_t"))
        elif _flag(n) == "nan":
            arrays.append((f"nans{n.id}", "int"))
    return arrays


def merged_source(parts: list[Part], n_inputs: int, language: str, device_kind: str, entry: str) -> Kernel:
    """The merged kernel of ``parts`` for ``language`` (its tensor arguments: ``n_inputs``
    inputs, then the outputs): each part a function, then the kernel that dispatches."""
    em = emitter(language, None, device_kind)
    style = _style(em)
    key = em.language if em.language == "c" else f"{em.language}/{em.layout}"
    progs = [p.low.program for p in parts]
    em._batch = progs
    try:
        lines = list(em.prologue(progs[0]))
    finally:
        em._batch = []
    T = style.size_t
    params: list[str] = [""] * (n_inputs + sum(len(p.outs) for p in parts))
    rows, ns, calls = [], [], []
    part_cls = _part_emitter(type(em))
    words = 0
    for i, p in enumerate(parts):
        prog = p.low.program
        for k, a in enumerate(p.ins):
            params[a] = f"{style.cptr.format(T=em.storage(prog.inputs[k][0]))} a{a}"
        for k, o in enumerate(p.outs):
            params[n_inputs + o] = f"{style.ptr.format(T=em.storage(prog.outputs[k].dtype))} a{n_inputs + o}"
        if p.symbolic:
            rows.append(f"hz_rows{i}")
            ns.append(f"hz_n{i}" if prog.n is None else str(prog.n))
        else:
            rows.append(str(math.prod(p.low.main.concrete({})[:-1])))
            ns.append(str(prog.n))
        args = [f"a{a}" for a in p.ins] + [f"a{n_inputs + o}" for o in p.outs] + [rows[i]]
        args += [ns[i]] if prog.n is None else []
        pe = part_cls(em.local)
        pe._batch = progs
        head = f"{_FUNCTION[key]} hz_part{i}({pe.params(prog, style.ptr, style.cptr, T)}"
        if language == "c":
            pe.hz_signature = f"{head}, int64_t hz_r0, int64_t hz_r1)"
            pe.hz_open = (
                ["#pragma omp simd", "for (int64_t i = hz_r0 * N; i < hz_r1 * N; ++i) {"]
                if pe._flat(prog)
                else ["for (int64_t r = hz_r0; r < hz_r1; ++r) {"]
            )
            args += ["hz_r0", "hz_r1"]
        elif em.layout == "rows":
            pe.hz_signature = f"{head}, long r)"
            pe.hz_open = ["if (r < rows) {"]
            args.append(f"(hz_g - hz_s{i}) * hz_l + get_local_id(0)")
        else:
            arrays = _scratch(pe, prog)
            local = "".join(f", {style.shared_ptr.format(T=t)} {name}" for name, t in arrays)
            pe.hz_signature = f"{head}, {T} r, int lid{local})"
            pe.hz_open = []
            args += [f"hz_g - hz_s{i}", "lid"]
            args += [
                f"({style.shared_ptr.format(T=t)})(hz_scratch + {k * em.local})"
                for k, (_, t) in enumerate(arrays)
            ]
            words = max(words, len(arrays) * em.local)
        lines += pe.source(prog, f"hz_part{i}").rstrip("\n").splitlines() + ["#undef N"]
        calls.append(f"hz_part{i}({', '.join(args)});")
    for i, p in enumerate(parts):
        if p.symbolic:
            params.append(f"{T} hz_rows{i}")
            if p.low.program.n is None:
                params.append(f"{T} hz_n{i}")
    body: list[str] = []
    if language == "c":
        tiles = [
            f"({n} > 0 && TILE_ELEMS / {n} > 1 ? TILE_ELEMS / {n} : 1)"
            if not n.isdigit()
            else str(max(1, TILE // max(int(n), 1)))
            for n in ns
        ]
        body.append("const int64_t hz_t0 = 0;")
        for i in range(len(parts)):
            body.append(f"const int64_t hz_t{i + 1} = hz_t{i} + ({rows[i]} + {tiles[i]} - 1) / {tiles[i]};")
        work = " + ".join(f"{r} * {n}" for r, n in zip(rows, ns))
        body.append(f"const int64_t hz_work = {work};")
        body.append(f"#pragma omp parallel for schedule(dynamic, 1) if (hz_work > {CEmitter.PARALLEL_MIN})")
        body.append(f"for (int64_t hz_t = 0; hz_t < hz_t{len(parts)}; ++hz_t) {{")
        for i, call in enumerate(calls):
            body.append(("    if" if i == 0 else "    } else if") + f" (hz_t < hz_t{i + 1}) {{")
            body.append(f"        const int64_t hz_r0 = (hz_t - hz_t{i}) * {tiles[i]};")
            body.append(
                f"        const int64_t hz_r1 = hz_r0 + {tiles[i]} < {rows[i]} ? hz_r0 + {tiles[i]} : {rows[i]};"
            )
            body.append(f"        {call}")
        body += ["    }", "}"]
        lines.append(f"#define TILE_ELEMS {TILE}")
    else:
        if words:
            body.append(style.shared.format(words=words))
        body.append(f"const {T} hz_g = {style.index};")
        if style.lid:
            body.append(f"const int lid = {style.lid};")
        body.append(f"const {T} hz_s0 = 0;")
        rows_layout = em.layout == "rows"
        if rows_layout:  # each part starts a work-group: the dispatch is uniform in the group
            body.append(f"const {T} hz_l = get_local_size(0);")
        for i in range(len(parts)):
            size = f"({rows[i]} + hz_l - 1) / hz_l" if rows_layout else rows[i]
            body.append(f"const {T} hz_s{i + 1} = hz_s{i} + {size};")
        for i, call in enumerate(calls):
            body.append(("if" if i == 0 else "} else if") + f" (hz_g < hz_s{i + 1}) {{")
            body.append(f"    {call}")
        body.append("}")
    lines.append(style.head.format(entry=entry, params=", ".join(params)) + " {")
    lines += ["    " + s for s in body] + ["}"]
    source = "\n".join(lines) + "\n"
    return Kernel(progs[0], source, entry, language, em.local, em.layout, em.build_options)


def _parts(h: horizontal.HGroup) -> list[Part]:
    index = {v: k for k, v in enumerate(h.body.inputs)}
    parts, first = [], 0
    for op, g in zip(h.parts, horizontal.merged_parts(h)):
        low = lower_group(g.body)
        outs = list(range(first, first + len(op.results)))
        first += len(op.results)
        types = [v.type for v in g.body.outputs]
        parts.append(Part(low, [index[v] for v in op.operands], outs, bool(g.symbols), types))  # type: ignore[arg-type]
    return parts


def make_merged(h: horizontal.HGroup, language: str, device_kind: str) -> tuple[Kernel, list[Part]]:
    """The merged kernel of ``h`` (raises :class:`NotFusible` or ``NotImplementedError``)."""
    parts = _parts(h)
    digest = hashlib.sha256(h.name.encode()).hexdigest()[:8]
    entry = f"{h.body.name}_{digest}"
    return merged_source(parts, len(h.body.inputs), language, device_kind, entry), parts


class Backend:
    """The compiler as the horizontal pass's backend (:class:`horizontal.Backend`)."""

    def limits(self, device: str) -> horizontal.Limits | None:
        if not base._compile_enabled():
            return None
        dev = _dev.parse(device)
        comp = compiler_for(dev)
        if comp is None:
            return None
        kind = _kind(dev)
        try:
            _style(emitter(comp.language, None, kind))
        except NotImplementedError:
            return None
        # NOTE: PoCL ran twelve 176K-element AdamW updates merged 1-12% slower than as twelve
        # kernels (their launches cost less than that): parts that size keep their own there
        big = 1 << 21 if comp.language == "c" else 1 << 17 if kind == "cpu" else 1 << 24
        cap = getattr(comp, "max_args", None) or _C_PARAMETERS  # the plugin's launch (Compiler.max_args)
        if comp.language == "c":
            return horizontal.Limits(max_args=min(_C_PARAMETERS, cap), big=big)
        size = _ARG_BYTES.get(comp.language, 1024)
        try:
            size = int(
                _dev.device_type(dev.type).runtime.properties(dev.index).extra.get("max_parameter_size", size)
            )
        except Exception:  # noqa: BLE001 — properties are informational; keep the language's minimum
            pass
        return horizontal.Limits(max_args=min(max(size // 8, 2), cap), big=big)

    def source(self, group: horizontal.HGroup, device: str) -> str:
        dev = _dev.parse(device)
        comp = compiler_for(dev)
        try:
            return make_merged(group, comp.language, _kind(dev))[0].source
        except (NotImplementedError, NotFusible) as exc:
            return f"/* no merged kernel: {exc} */"


def merged_kernel(op: str, comp: Any, dev: _dev.Device) -> Kernel | None:
    """The merged kernel of ``fused.h`` op ``op`` for ``comp`` (not built), or None: not such
    an op, or no merged kernel (its lookup says why). The prebuild builds it in a unit."""
    h = horizontal.HGROUPS.get(op)
    if h is None:
        return None
    try:
        return make_merged(h, comp.language, _kind(dev))[0]
    except (NotImplementedError, NotFusible):
        return None


MERGED_KERNEL.append(merged_kernel)


def kernel_source(op: str, device_type: str, dtype: np.dtype) -> KernelEntry | None:
    """``dispatch.KERNEL_SOURCES`` entry: the merged kernel of ``fused.h`` op ``op``."""
    h = horizontal.HGROUPS.get(op)
    if h is None:
        return None
    return built_entry(
        op,
        device_type,
        lambda comp, dev: make_merged(h, comp.language, _kind(dev)),
        f"merged kernel {op} ({len(h.parts)} fusion groups)",
        "its groups run one by one",
        lambda parts, kernel: _launcher(h, parts, kernel, device_type),
        PLUGIN,
    )


def _local(kernel: Kernel, total: int) -> int:
    """The work-group size of a "rows" kernel: the emitter's, halved until there are
    :data:`MIN_GROUPS` groups."""
    lo = max(kernel.local, 1)
    while lo > 1 and total < lo * MIN_GROUPS:
        lo //= 2
    return lo


def _launcher(h: horizontal.HGroup, parts: list[Part], kernel: Kernel, device_type: str) -> KernelEntry:
    symbols = h.symbols
    geometry: dict[tuple[int, tuple[int, ...]], tuple[Any, ...]] = {}

    def prepare(ctx: Any, dims: tuple[int, ...]) -> tuple[Any, ...]:
        key = (ctx.device_index, dims)
        got = geometry.get(key)
        if got is None:
            binding = dict(zip(symbols, dims))
            tail: list[Any] = []
            total = 0
            sums: list[tuple[int, tuple[int, ...]]] = []
            for p in parts:
                shape = p.low.main.concrete(binding)
                rows = math.prod(shape[:-1])
                total += rows
                if p.symbolic:
                    tail.append(np.int64(rows))
                    if p.low.program.n is None:
                        tail.append(np.int64(shape[-1]))
                sums += [(p.outs[k], s) for k, s in partial_shapes(p.low, p.out_types, binding)]
            comp = compiler_for(_dev.Device(device_type, ctx.device_index))
            if kernel.layout == "rows":  # every part starts a work-group
                lo = _local(kernel, total)
                groups = sum(-(-math.prod(p.low.main.concrete(binding)[:-1]) // lo) for p in parts)
                grid, loc = (groups * lo,), (lo,)
            else:
                grid, loc = (total * kernel.local,), (kernel.local,)
            got = geometry[key] = (total, comp, kernel.build(comp), tail, grid, loc, sums)
        return got

    def launch(ctx: Any, outs: list[Any], ins: list[Any], dims: tuple[int, ...] = ()) -> None:
        bind(ctx, outs, ins, dims)()

    def bind(ctx: Any, outs: list[Any], ins: list[Any], dims: tuple[int, ...] = ()) -> Any:
        total, comp, prog, tail, grid, loc, sums = prepare(ctx, tuple(dims))
        if not total:
            return lambda: None
        outs, finish = partial_sums(device_type, ctx, outs, sums)  # scratch lives with the binding
        return bound_call(comp, prog, [*ins, *outs, *tail], grid, loc, ctx.stream, finish)

    return KernelEntry(launch, PLUGIN, bind=bind)


def install() -> None:
    """Register the horizontal backend and the kernel source (idempotent)."""
    register(horizontal.BACKENDS, Backend, kernel_source)
