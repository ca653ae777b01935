"""Generated primitives: every element-wise, comparison, cast, reduction and creation
primitive a plugin with compile access does not register, built from the OpDefs' lowerings.

Each is a one-op program of the loop IR (:mod:`framework.compiler.ir`) with a symbolic row
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

import math
from collections import Counter
from typing import Any

import numpy as np

from adapter_api import PRIMITIVES, CompileError, KernelEntry, KernelNotFoundError

from .._src import device as _dev
from .._src import dispatch
from .._src.ops import base
from . import ir
from .eager import Kernel, _freeze, _warn_once, compiler_for, make_kernel
from .emit import EMITTERS

REDUCTIONS = ("sum", "prod", "max", "min", "argmax", "argmin")
CREATION = ("full", "arange", "philox_uniform")
#: every primitive the core can generate
GENERATED = tuple(
    [n for n, d in base.OPS.items() if d.kind == "primitive" and d.elementwise]
    + ["cast", "copy", *REDUCTIONS, *CREATION]
)
PLUGIN = "oarlock.compiler (generated)"

_STATS: Counter[str] = Counter()
_KERNELS: dict[tuple[Any, ...], tuple[Kernel, int, int] | None] = {}


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


def _dtype(name: str) -> np.dtype:
    from .._src import dtypes

    return np.dtype(getattr(dtypes, name, name))


def kernel_source(op: str, device_type: str, dtype: np.dtype) -> KernelEntry | None:
    """``dispatch.KERNEL_SOURCES`` entry: a generated kernel for ``op`` on ``device_type``."""
    if op not in GENERATED or dtype.name not in PRIMITIVES[op].dtypes or not base._compile_enabled():
        return None
    comp = compiler_for(_dev.Device(device_type, 0))
    if comp is None or not can_generate(comp.language):
        return None

    def kernel(ctx: Any, outs: list[Any], ins: list[Any], **attrs: Any) -> None:
        run(op, device_type, ctx, outs, ins, attrs)

    return KernelEntry(kernel, PLUGIN, broadcast=base.OPS[op].elementwise)


def run(op: str, device_type: str, ctx: Any, outs: list[Any], ins: list[Any], attrs: dict[str, Any]) -> None:
    """Build (once, through the program cache) and launch the generated kernel of ``op``."""
    dev = _dev.Device(device_type, ctx.device_index)
    comp = compiler_for(dev)
    key = (
        op,
        device_type,
        tuple((a.shape, a.dtype.str) for a in ins),
        tuple((o.shape, o.dtype.str) for o in outs),
        repr(_freeze(attrs)),
    )  # repr: -0.0 is not 0.0
    tag = f"{op}[{(ins[0] if ins else outs[0]).dtype.name}]@{device_type}"
    got = _KERNELS.get(key, False)
    if got is False:
        try:
            prog, rows, n = lower(op, [(a.shape, a.dtype) for a in ins], outs[0].shape, outs[0].dtype, attrs)
            got = (make_kernel(prog, comp.language), rows, n)
            got[0].build(comp)
        except (CompileError, NotImplementedError) as exc:
            got = None
            _STATS[tag + " failed"] += 1
            _warn_once(
                (op, device_type),
                f"{exc}\n[compiler] the generated primitive '{op}' does not build on "
                f"{device_type}; it runs on the cpu plugin (fallback) from now on",
            )
        _KERNELS[key] = got
    if got is None:
        raise KernelNotFoundError(
            f"[{op}] the generated kernel for {tag} did not build (see the CompileWarning)"
        )
    kernel, rows, n = got
    _STATS[tag] += 1
    if rows == 0 or n == 0 and op not in REDUCTIONS:
        return
    args = [*ins, *outs, np.int64(rows), np.int64(n)]
    comp.launch(kernel.build(comp), args, (rows,), None, ctx.stream)


def reset() -> None:
    _KERNELS.clear()
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
) -> tuple[ir.Program, int, int]:
    """The one-op program of primitive ``op`` and its launch geometry ``(rows, n)``."""
    b = ir.Builder()
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
        return ir.Program(op, None, [], [node], [True], b.nodes), rows, n
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
    return ir.Program(op, None, kinds, [node], [True], b.nodes, loads), rows, n


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
    b: ir.Builder, op: str, x: tuple[tuple[int, ...], np.dtype], attrs: dict[str, Any]
) -> tuple[ir.Program, int, int]:
    shape, dt = x
    axes = tuple(attrs["axes"]) if "axes" in attrs else (attrs["axis"],)
    if not axes:  # nothing reduced: a copy
        rows, n = _rows_n(shape)
        node = b.input(0, dt, True, True)
        return ir.Program(op, None, [(np.dtype(dt), True, True)], [node], [True], b.nodes), rows, n
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
    return ir.Program(op, None, [(np.dtype(dt), True, True)], [node], [False], b.nodes, loads), rows, n


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
