"""Generated primitives: every element-wise, comparison, cast, reduction and creation
primitive a plugin with compile access does not register, built from the OpDefs' lowerings.

Each is a one-op program of the loop IR (:mod:`framework.compiler.loop_ir`) with a symbolic row
length, so one binary serves every shape of a dtype and broadcast pattern:

- element-wise ops (comparisons, ``where``, ``cast``, ``copy`` included) view the output as
  ``(rows, n)`` with ``n`` its last axis; an input is a full row, a per-column vector, a
  per-row value or a scalar by its shape, and any other broadcast reads through an index
  expression (``Program.loads``);
- reductions (``sum``, ``prod``, ``max``, ``min``, ``argmax``, ``argmin``) over any axis set
  are a strided loop: rows are the kept elements, the row runs over the reduced ones, and the
  input is read at the offset of (kept index, reduced index); no permute copy is made. When
  the reduced axes are the last ones the read is the plain ``r * n + j``;
- ``full``, ``arange`` and ``philox_uniform`` are programs without inputs over the element
  index.

Dispatch asks for them through ``dispatch.KERNEL_SOURCES`` after the plugin's own kernels and
before the CPU fallback. A kernel that fails to build warns once (:class:`CompileWarning`),
is counted in :func:`primitive_stats` and declines, so the op falls back to the CPU plugin.
Only emitters marked ``primitives = True`` (C) generate them; ``OARLOCK_COMPILE=0`` turns them
off.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from adapter_api import PRIMITIVES, CompileError, KernelEntry, KernelNotFoundError

from .._src import device as _dev
from .._src import dispatch
from .._src.ops import base
from .._src.plugins import host
from . import loop_ir, tune
from .eager import CACHE, _freeze, _kind, _warn_once, compiler_for
from .emit import EMITTERS, emitter

REDUCTIONS = ("sum", "prod", "max", "min", "argmax", "argmin")
CREATION = ("full", "arange", "philox_uniform")
#: every primitive the core can generate
GENERATED = tuple(
    [n for n, d in base.OPS.items() if d.kind == "primitive" and d.elementwise]
    + ["cast", "copy", *REDUCTIONS, *CREATION]
)
PLUGIN = "oarlock.compiler (generated)"

_STATS: Counter[str] = Counter()
_KERNELS: dict[tuple[Any, ...], Any] = {}


def primitive_stats() -> dict[str, int]:
    """``{"op[dtype]@device_type": launches, "op[dtype]@device_type failed": builds that failed}``."""
    return dict(sorted(_STATS.items()))


def can_generate(language: str) -> bool:
    cls = EMITTERS.get(language)
    return bool(cls is not None and getattr(cls, "primitives", False))


def generated_primitives(device_type: str) -> dict[str, set[str]]:
    """op -> dtype names the core generates on ``device_type`` (those its plugin does not register)."""
    out: dict[str, set[str]] = {}
    for op in GENERATED:
        for dt in PRIMITIVES[op].dtypes:
            e = dispatch.find_kernel(op, device_type, _dtype(dt))
            if e is not None and e.plugin == PLUGIN:
                out.setdefault(op, set()).add(dt)
    return out


def _holds(device_type: str) -> tuple[str, ...]:
    """The dtypes the device says it holds: nothing is generated for the others."""
    try:
        return tuple(_dev.device_type(device_type).runtime.properties(0).dtypes)
    except Exception:  # noqa: BLE001 — properties are the plugin's: without them, every dtype
        return tuple(PRIMITIVES["cast"].dtypes)


def _dtype(name: str) -> np.dtype:
    from .._src import dtypes

    return np.dtype(getattr(dtypes, name, name))


def kernel_source(op: str, device_type: str, dtype: np.dtype) -> KernelEntry | None:
    """``dispatch.KERNEL_SOURCES`` entry: a generated kernel for ``op`` on ``device_type``."""
    if op not in GENERATED or dtype.name not in PRIMITIVES[op].dtypes or not base._compile_enabled():
        return None
    comp = compiler_for(_dev.Device(device_type, 0))
    if comp is None or not can_generate(comp.language) or dtype.name not in _holds(device_type):
        return None

    def kernel(ctx: Any, outs: list[Any], ins: list[Any], **attrs: Any) -> None:
        run(op, device_type, ctx, outs, ins, attrs)

    return KernelEntry(kernel, PLUGIN, broadcast=base.OPS[op].elementwise)


# -- families: the kernels one build holds ---------------------------------------------------
#: family -> its ops, from the OpDefs (``OpDef.family``); the first use of a family (for one
#: dtype and broadcast or axis pattern) builds every op of it that the plugin lacks, in one
#: translation unit
FAMILIES: dict[str, tuple[str, ...]] = {}
for _name, _d in base.OPS.items():
    if _d.family:
        FAMILIES[_d.family] = (*FAMILIES.get(_d.family, ()), _name)
_FAMILY_OF = {op: fam for fam, ops in FAMILIES.items() for op in ops}
_BOOLEAN_OUT = {"logical_not", *FAMILIES["compare"]}


@dataclass
class _Launch:
    """One generated kernel, ready to run: a program of a batch and how to call it."""

    program: Any
    entry: str
    index: int  #: its number in a dispatching batch, else -1
    layout: str
    local: int
    rows: int
    n: int


_BATCHES: dict[tuple[Any, ...], dict[str, tuple[Any, str, int]]] = {}


def _members(
    op: str, device_type: str, dtypes: tuple[np.dtype, ...], attrs: dict[str, Any]
) -> list[tuple[str, np.dtype, dict[str, Any]]]:
    """(op, output dtype, attrs) of every kernel built with ``op``'s: the ops of its family (or
    for ``cast`` every target dtype) that the plugin does not register for this dtype."""
    registered = host().registry.kernels
    src = dtypes[0] if dtypes else None

    def lacking(o: str, dt: np.dtype) -> bool:
        return dt.name in PRIMITIVES[o].dtypes and (o, device_type, dt) not in registered

    if op == "cast":
        return [
            ("cast", _dtype(d), {"dtype": _dtype(d)})
            for d in PRIMITIVES["cast"].dtypes
            if lacking("cast", src)
        ]
    fam = _FAMILY_OF.get(op)
    if fam is None or src is None:
        return []
    out = []
    for o in FAMILIES[fam]:
        if not lacking(o, src if o != "where" else dtypes[1]):
            continue
        if fam == "reduce":
            axes = tuple(attrs["axes"]) if "axes" in attrs else (attrs["axis"],)
            if o in ("argmax", "argmin"):
                if len(axes) != 1:
                    continue
                out.append((o, np.dtype(np.int64), {"axis": axes[0]}))
            else:
                out.append((o, src, {"axes": axes}))
        else:
            out.append((o, np.dtype(np.bool_) if o in _BOOLEAN_OUT else src, {}))
    return out


def _build(
    comp: Any, device_type: str, dev: _dev.Device, programs: list[tuple[str, loop_ir.Program]]
) -> dict[str, tuple[Any, str, int]]:
    """Emit ``programs`` as one translation unit, build it through the cache; op -> (program, index)."""
    em = emitter(comp.language, tune.local_size(comp, "primitive"), _kind(dev))
    named = [(p, f"{p.name}_{hashlib.sha256(p.describe().encode()).hexdigest()[:12]}") for _, p in programs]
    entry = "oarlock_batch_" + hashlib.sha256("|".join(e for _, e in named).encode()).hexdigest()[:12]
    source = em.batch_source(named, entry)
    if em.batch == "dispatch":
        prog = CACHE.get_batch(comp, source, (entry,), em.build_options)[entry]
        return {op: (prog, e, k) for k, ((op, _), (_, e)) in enumerate(zip(programs, named))}
    progs = CACHE.get_batch(comp, source, tuple(e for _, e in named), em.build_options)
    return {op: (progs[e], e, -1) for (op, _), (_, e) in zip(programs, named)}


def run(op: str, device_type: str, ctx: Any, outs: list[Any], ins: list[Any], attrs: dict[str, Any]) -> None:
    """Build (once, with the rest of its family, through the program cache) and launch the
    generated kernel of ``op``."""
    dev = _dev.Device(device_type, ctx.device_index)
    comp = compiler_for(dev)
    key = (
        op,
        dev,
        tuple((a.shape, a.dtype.str) for a in ins),
        tuple((o.shape, o.dtype.str) for o in outs),
        repr(_freeze(attrs)),
    )  # repr: -0.0 is not 0.0
    tag = f"{op}[{(ins[0] if ins else outs[0]).dtype.name}]@{device_type}"
    got = _KERNELS.get(key, False)
    if got is False:
        got = _KERNELS[key] = _prepare(op, dev, comp, ins, outs, attrs, tag)
    if got is None:
        raise KernelNotFoundError(
            f"[{op}] the generated kernel for {tag} did not build (see the CompileWarning)"
        )
    _STATS[tag] += 1
    if got.rows == 0 or got.n == 0 and op not in REDUCTIONS:
        return

    def arguments(tensors: list[Any]) -> list[Any]:
        if got.index >= 0:  # a dispatching batch: (k, four tensors, rows, n)
            tensors = [np.int64(got.index), *tensors, *[tensors[-1]] * (4 - len(tensors))]
        return [*tensors, np.int64(got.rows), np.int64(got.n)]

    args = arguments([*ins, *outs])
    if got.layout == "rows":  # the work-group size is tuned per device and shape (tune.py)
        # timed on stand-ins for the outputs: one may be an input's storage (in place)
        trial = tune.on_stand_ins(
            device_type,
            ctx,
            [*ins, *outs],
            range(len(ins), len(ins) + len(outs)),
            lambda a, g: comp.launch(
                got.program, arguments(a), (got.rows,), None if g is None else (g,), ctx.stream
            ),
        )
        lo = tune.rows_local(
            comp,
            got.entry,
            got.rows,
            got.n,
            got.local if got.local > 1 else None,
            trial,
            lambda: ctx.runtime.synchronize(ctx.device_index),
        )
        grid, local = (got.rows,), (None if lo is None else (lo,))
    else:
        grid, local = (got.rows * got.local,), (got.local,)
    comp.launch(got.program, args, grid, local, ctx.stream)


def _prepare(
    op: str, dev: _dev.Device, comp: Any, ins: list[Any], outs: list[Any], attrs: dict[str, Any], tag: str
) -> _Launch | None:
    metas = [(a.shape, a.dtype) for a in ins]
    out_shape, out_dtype = outs[0].shape, outs[0].dtype
    try:
        prog, rows, n = lower(op, metas, out_shape, out_dtype, attrs)
    except NotImplementedError as exc:
        return _failed(op, dev, tag, exc)
    fam = "cast" if op == "cast" else _FAMILY_OF.get(op, prog.describe())
    pattern = (dev, fam, tuple(prog.inputs), tuple(prog.out_col), tuple(sorted(prog.loads.items())))
    em_local = emitter(comp.language, tune.local_size(comp, "primitive"), _kind(dev))
    rows, n = flat_rows(prog, rows, n, em_local.layout)
    built = _BATCHES.get(pattern)
    if built is None or op not in built:
        family: list[tuple[str, loop_ir.Program]] = [(op, prog)]
        for o, odt, a in _members(op, dev.type, tuple(d for _, d in metas), attrs):
            name = f"{o}:{odt.name}" if o == "cast" else o
            if name == (f"{op}:{out_dtype.name}" if op == "cast" else op):
                continue
            try:
                family.append((name, lower(o, metas, out_shape, odt, a)[0]))
            except NotImplementedError:
                continue
        try:
            built = _build(comp, dev.type, dev, family)
        except (CompileError, NotImplementedError):
            try:  # one member may not build: the op alone
                built = _build(comp, dev.type, dev, [(op, prog)])
            except (CompileError, NotImplementedError) as exc:
                return _failed(op, dev, tag, exc)
        _BATCHES[pattern] = built
    name = f"{op}:{out_dtype.name}" if op == "cast" else op
    program, entry, index = built[name if name in built else op]
    return _Launch(program, entry, index, em_local.layout, em_local.local, rows, n)


#: row length a flat element-wise launch is cut into, per layout (a power of two that divides
#: the element count, at most this): enough rows for the threads or work-items, rows long
#: enough to vectorise
FLAT_ROW = {"rows": 1024, "groups": 4096}


def flat_rows(prog: loop_ir.Program, rows: int, n: int, layout: str) -> tuple[int, int]:
    """The launch geometry of ``prog``: a kernel whose inputs are all full or scalars and whose
    output is full reads element ``r * n + j`` only, so any ``rows * n`` split of the elements
    serves; a 1-d tensor (one row) is cut into rows the launch can spread."""
    if prog.loads or not all(prog.out_col) or any(r != c for _, r, c in prog.inputs):
        return rows, n
    total = rows * n
    if total == 0:
        return rows, n
    chunk = min(total & -total, FLAT_ROW.get(layout, 1024))  # largest power of two dividing total
    return total // chunk, chunk


def _failed(op: str, dev: _dev.Device, tag: str, exc: Exception) -> None:
    _STATS[tag + " failed"] += 1
    _warn_once(
        (op, dev.type),
        f"[compiler] the generated primitive '{op}' does not build on "
        f"{dev.type}; it runs on the cpu plugin (fallback) from now on",
        exc,
    )
    return None


def reset() -> None:
    _KERNELS.clear()
    _BATCHES.clear()
    _STATS.clear()
    dispatch.clear_kernel_cache()


# -- lowering ------------------------------------------------------------------------------
def _rows_n(shape: tuple[int, ...]) -> tuple[int, int]:
    return (math.prod(shape[:-1]), shape[-1]) if shape else (1, 1)


def lower(
    op: str,
    ins: list[tuple[tuple[int, ...], np.dtype]],
    out_shape: tuple[int, ...],
    out_dtype: np.dtype,
    attrs: dict[str, Any],
) -> tuple[loop_ir.Program, int, int]:
    """The one-op program of primitive ``op`` and its launch geometry ``(rows, n)``."""
    b = loop_ir.Builder()
    out_dtype = np.dtype(out_dtype)
    if op in REDUCTIONS:
        return _reduction(b, op, ins[0], attrs)
    rows, n = _rows_n(out_shape)
    if op in CREATION:
        if op == "full":
            node = b.const(attrs["value"], out_dtype)
        else:
            idx = b.special("index", (), np.dtype(np.int64), None)
            special = (
                ("arange", (attrs["start"], attrs["step"]))
                if op == "arange"
                else ("philox", (attrs["seed"], attrs["offset"]))
            )
            node = b.special(special[0], (idx,), out_dtype, special[1])
        return loop_ir.Program(op, None, [], [node], [True], b.nodes), rows, n
    kinds, loads, args = [], {}, []
    for k, (shape, dt) in enumerate(ins):
        row, col, at = _broadcast_kind(shape, out_shape)
        if at is not None:
            loads[k] = at
        kinds.append((np.dtype(dt), row, col))
        args.append(b.input(k, dt, row, col))
    if op == "copy":
        node = args[0]
    elif op == "cast":
        node = b.cast(args[0], out_dtype)
    else:
        node = b.expr(op, args, out_dtype)
    return loop_ir.Program(op, None, kinds, [node], [True], b.nodes, loads), rows, n


def _broadcast_kind(shape: tuple[int, ...], out: tuple[int, ...]) -> tuple[bool, bool, str | None]:
    """(row, col, index expression or None) of an input of ``shape`` broadcast to ``out``."""
    shape = (1,) * (len(out) - len(shape)) + tuple(shape)
    if shape == out:
        return True, True, None
    lead, n = out[:-1], out[-1] if out else 1
    if math.prod(shape) == 1:
        return False, False, None
    if all(s == 1 for s in shape[:-1]) and shape[-1] == n:
        return False, True, None
    if shape[-1] == 1 and shape[:-1] == lead:
        return True, False, None
    # a general broadcast: the row index r runs over out[:-1]; read at the input's offset
    terms, inner = [], 1
    strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
    for d in range(len(out) - 2, -1, -1):
        if shape[d] != 1:
            terms.append(f"((r / {inner}) % {out[d]}) * {strides[d]}")
        inner *= out[d]
    col = shape[-1] == n and n != 1
    if col:
        terms.append("j")
    return True, col, " + ".join(terms) or "0"


def _reduction(
    b: loop_ir.Builder, op: str, x: tuple[tuple[int, ...], np.dtype], attrs: dict[str, Any]
) -> tuple[loop_ir.Program, int, int]:
    shape, dt = x
    axes = tuple(attrs["axes"]) if "axes" in attrs else (attrs["axis"],)
    if not axes:  # nothing reduced: a copy
        rows, n = _rows_n(shape)
        node = b.input(0, dt, True, True)
        return loop_ir.Program(op, None, [(np.dtype(dt), True, True)], [node], [True], b.nodes), rows, n
    kept = [d for d in range(len(shape)) if d not in axes]
    rows = math.prod(shape[d] for d in kept)
    n = math.prod(shape[d] for d in axes)
    loads = {}
    if tuple(axes) != tuple(range(len(shape) - len(axes), len(shape))):
        strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
        loads[0] = " + ".join(
            _index_terms("r", kept, shape, strides) + _index_terms("j", list(axes), shape, strides)
        )
    node = b.reduce(op, b.input(0, dt, True, True))
    return loop_ir.Program(op, None, [(np.dtype(dt), True, True)], [node], [False], b.nodes, loads), rows, n


def _index_terms(var: str, dims: list[int], shape: tuple[int, ...], strides: list[int]) -> list[str]:
    """The offset of flat index ``var`` over ``dims`` of ``shape`` (C order), merging dims
    that are adjacent in memory too."""
    groups: list[list[int]] = []
    for d in dims:
        if groups and groups[-1][-1] == d - 1:
            groups[-1].append(d)
        else:
            groups.append([d])
    terms, inner = [], 1
    for g in reversed(groups):
        size = math.prod(shape[d] for d in g)
        stride = strides[g[-1]]
        q = var if inner == 1 else f"({var} / {inner})"
        terms.append(f"({q} % {max(size, 1)}) * {stride}" if len(groups) > 1 else f"{q} * {stride}")
        inner *= max(size, 1)
    return terms


def install() -> None:
    if kernel_source not in dispatch.KERNEL_SOURCES:
        dispatch.KERNEL_SOURCES.append(kernel_source)
        dispatch.clear_kernel_cache()
