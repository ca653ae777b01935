"""Emitters: a scheduled loop-IR program as C, OpenCL C or CUDA C source.

One kernel per program with parameters ``(in0, ..., out0, ..., rows)``. The row length ``N``
is a compile-time constant (it is baked into the decomposition anyway, e.g. ``mean``'s
``1/N``) so inner loops have a known trip count; the number of rows is a runtime argument,
so one program serves every batch size.

- C: ``#pragma omp parallel for`` across rows, ``#pragma omp simd`` (with reduction
  clauses) along the row.
- OpenCL C / CUDA C: one work-group (block) of ``L`` work-items per row, a strided loop
  along the row and a tree reduction in local (shared) memory.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from .._src.ops.base import OPS
from . import ir

#: a field of a Lowering template: {0}, {fn:exp}, {one}, {zero}
_FIELD = re.compile(r"\{(\d|fn:\w+|one|zero)\}")

#: 16-bit floats kept as their bits in memory: dtype name -> the tag of their converters
HALVES = {"float16": "h", "bfloat16": "b"}


def is_float(dt: np.dtype) -> bool:
    return dt.kind == "f" or dt.name in HALVES


def integer_template(op: str, src: np.dtype, T: str) -> str | None:
    """How an op reads for integer or bool operands where its float lowering does not: the
    OpDef's ``Lowering.c_int`` / ``c_uint`` / ``c_bool`` with ``{T}`` the operands' C type
    and ``{U}`` an unsigned type as wide (at least 32 bits: wide enough for int16 * int16);
    None: the float spelling serves."""
    d = OPS.get(op)
    low = d.lower if d is not None else None
    if low is None:
        return None
    got = low.spelling(src)
    if got == low.c:
        return None
    U = "uint64_t" if src.itemsize == 8 else "uint32_t"
    return got.replace("{T}", T).replace("{U}", U)


class Emitter:
    """Shared expression syntax; subclasses say how rows, loops and reductions are laid out."""

    language = ""
    #: "rows": launch one work-item per row (grid = rows); "groups": a group of ``local``
    #: work-items per row (grid = rows * local).
    layout = "groups"
    build_options: tuple[str, ...] = ()
    fn_suffix_float = "f"  # expf vs exp

    def __init__(self, local_size: int = 1) -> None:
        self.local = local_size

    # -- types and literals -------------------------------------------------------------
    #: the C type a value of each dtype is computed in (float16 and bfloat16: in double,
    #: rounded once when stored, which is exact rounding for + - * / sqrt)
    VALUE_TYPES = {
        "bool": "bool",
        "float32": "float",
        "float64": "double",
        "float16": "double",
        "bfloat16": "double",
        "int8": "int8_t",
        "int16": "int16_t",
        "int32": "int32_t",
        "int64": "int64_t",
        "uint8": "uint8_t",
    }

    #: the type float16/bfloat16 values are computed in (OpenCL: float, or double when the
    #: program holds float64 anyway)
    half_t = "double"

    def ctype(self, dt: np.dtype) -> str:
        if dt.name in HALVES:
            return self.half_t
        try:
            return self.VALUE_TYPES[dt.name]
        except KeyError:
            raise NotImplementedError(f"[compiler] no {self.language} type for dtype {dt}") from None

    def storage(self, dt: np.dtype) -> str:
        """The C type of a tensor element in memory (float16/bfloat16: their bits)."""
        if dt.name in HALVES:
            return "uint16_t"
        return self.bool_storage if dt == ir.BOOL else self.ctype(dt)

    bool_storage = "bool"

    def loaded(self, dt: np.dtype, e: str) -> str:
        return f"oarlock_{HALVES[dt.name]}2d({e})" if dt.name in HALVES else e

    def stored(self, dt: np.dtype, e: str) -> str:
        return f"oarlock_d2{HALVES[dt.name]}({e})" if dt.name in HALVES else e

    def inf(self, dt: np.dtype) -> str:
        return "INFINITY" if dt == np.float32 else "((double)INFINITY)"

    def nan(self, dt: np.dtype) -> str:
        return "NAN" if dt == np.float32 else "((double)NAN)"

    def literal(self, v: object, dt: np.dtype) -> str:
        if dt == ir.BOOL:
            return "true" if v else "false"
        if dt.kind in "iu":
            i = int(v)  # type: ignore[call-overload]
            return "INT64_MIN" if i == -(1 << 63) else f"(({self.ctype(dt)}){i}LL)"
        f = float(v)  # type: ignore[arg-type]
        if math.isnan(f):
            return self.nan(dt)
        if math.isinf(f):
            return self.inf(dt) if f > 0 else f"(-{self.inf(dt)})"
        if dt == np.float32:
            return f"{float(np.float32(f))!r}f"
        return f"{f!r}"

    def fn(self, name: str, dt: np.dtype) -> str:
        return name + (self.fn_suffix_float if dt == np.float32 else "")

    #: ops this language spells its own way (a Lowering template), instead of the OpDef's ``c``
    native: dict[str, str] = {}

    # -- expressions --------------------------------------------------------------------
    def expr(self, n: ir.Node, a: list[str], load: str) -> str:
        op, dt = n.op, n.dtype
        T = self.ctype(dt)
        if op in ("input", "take"):
            return load
        if op == "const":
            return self.literal(n.attr, dt)
        if op == "cast":
            src = n.args[0].dtype
            if dt == ir.BOOL:
                return f"({a[0]} != 0)"
            if src == ir.BOOL:
                return f"({a[0]} ? {self.literal(1.0, dt)} : {self.literal(0.0, dt)})"
            if dt.kind in "iu" and is_float(src):  # truncate, then wrap into the target
                return f"(({T})(int64_t)({a[0]}))"
            return f"(({T}){a[0]})"
        if op in ("index", "arange", "philox"):
            return self.special(n, a)
        src = n.args[0].dtype if n.args else dt
        typed = integer_template(op, src, T) if not is_float(src) else None
        try:
            template = typed or self.native.get(op) or ir.lowering(op).c
        except KeyError as exc:
            raise NotImplementedError(
                f"[compiler] no {self.language} syntax for IR op '{op}': {exc}"
            ) from None
        return self.render(template, a, dt)

    def render(self, template: str, args: list[str], dt: np.dtype) -> str:
        """Fill a :class:`~framework._src.ops.base.Lowering` template for values of type ``dt``."""

        def fill(m: re.Match[str]) -> str:
            key = m.group(1)
            if key.isdigit():
                return args[int(key)]
            if key.startswith("fn:"):
                return self.fn(key[3:], dt)
            return self.literal(1.0 if key == "one" else 0.0, dt)

        return _FIELD.sub(fill, template)

    def special(self, n: ir.Node, a: list[str]) -> str:
        T = self.ctype(n.dtype)
        if n.op == "index":
            return "((int64_t)(r * N + j))"
        if n.op == "arange":
            start, step = n.attr
            if n.dtype.kind in "iu" or n.dtype == ir.BOOL:
                return (
                    f"(({T})(int64_t)((uint64_t){a[0]} * (uint64_t)({int(step)}LL) + "
                    f"(uint64_t)({int(start)}LL)))"
                )
            return f"(({T})((double){a[0]} * {float(step)!r} + {float(start)!r}))"
        seed, offset = n.attr  # philox
        return (
            f"(({T})((double)(oarlock_philox((uint64_t){a[0]}, {seed % 2**64}ULL, {offset % 2**64}ULL) >> 8)"
            f" * 0x1p-24))"
        )

    def update(self, kind: str, acc: str, e: str) -> str:
        if kind == "sum":
            return f"{acc} += {e};"
        cmp = ">" if kind == "max" else "<"
        return f"{acc} = {e} {cmp} {acc} ? {e} : {acc};"

    def init(self, kind: str, dt: np.dtype) -> str:
        if dt.kind in "iu":
            info = np.iinfo(dt)
            return self.literal({"sum": 0, "prod": 1, "max": info.min, "min": info.max}[kind], dt)
        v = {"sum": 0.0, "prod": 1.0, "max": -math.inf, "min": math.inf}[kind]
        return self.literal(v, dt)

    # reductions: integers accumulate in unsigned (they wrap), NaN wins max/min, arg* keep
    # the first index of the extreme (a plain loop: no SIMD reduction for an index)
    def _acc_type(self, r: ir.Node) -> str:
        src = r.args[0].dtype
        if r.attr in ("sum", "prod") and src.kind in "iu":
            return "uint64_t" if src.itemsize == 8 else "uint32_t"
        return "int" if src == ir.BOOL else self.ctype(src)

    def _red_init(self, r: ir.Node) -> str:
        src = r.args[0].dtype
        kind = {"argmax": "max", "argmin": "min"}.get(r.attr, r.attr)
        return ("0" if kind == "max" else "1") if src == ir.BOOL else self.init(kind, src)

    def red_decl(self, r: ir.Node, acc: str) -> list[str]:
        src = r.args[0].dtype
        out = [f"{self._acc_type(r)} {acc} = {self._red_init(r)};"]
        if r.attr in ("argmax", "argmin"):
            out.append(f"int64_t idx{r.id} = 0;")
        elif r.attr in ("max", "min") and is_float(src):
            out.append(f"int nan{r.id} = 0;")
        return out

    def red_update(self, r: ir.Node, acc: str, e: str, lane: str = "") -> list[str]:
        """Fold element ``e`` into ``acc`` (``lane``: the suffix naming a lane of its arrays)."""
        src, kind = r.args[0].dtype, r.attr
        acc += lane
        if kind in ("sum", "prod"):
            op = "+" if kind == "sum" else "*"
            return [f"{acc} {op}= ({self._acc_type(r)}){e};"]
        if kind in ("argmax", "argmin"):
            cmp = ">" if kind == "argmax" else "<"
            nan = f" || ({e} != {e} && {acc} == {acc})" if is_float(src) else ""
            return [f"if ({e} {cmp} {acc}{nan}) {{ {acc} = {e}; idx{r.id}{lane} = j; }}"]
        if src == ir.BOOL:
            return [f"{acc} {'|' if kind == 'max' else '&'}= {e};"]
        out = [self.update(kind, acc, e)]
        return out + [f"nan{r.id}{lane} |= {e} != {e};"] if is_float(src) else out

    def finish(self, r: ir.Node, acc: str, idx: str, nan: str) -> str:
        """The row's value of reduction ``r`` from its accumulator (and index, NaN flag)."""
        if r.attr in ("argmax", "argmin"):
            return idx
        if r.attr in ("max", "min") and is_float(r.dtype):
            return f"{nan} ? {self.nan(r.dtype)} : {acc}"
        return f"({self.ctype(r.dtype)}){acc}"

    # -- layout hooks (per language) ----------------------------------------------------
    def prologue(self, prog: ir.Program) -> list[str]:
        raise NotImplementedError

    def signature(self, prog: ir.Program, entry: str) -> str:
        raise NotImplementedError

    def row_begin(self, prog: ir.Program) -> tuple[list[str], list[str]]:
        """(lines that open the per-row scope, first lines inside it)."""
        raise NotImplementedError

    def row_end(self) -> list[str]:
        return ["}"]

    def _flat(self, prog: ir.Program) -> bool:
        """Whether ``prog`` is emitted as one loop over every element rather than row by row."""
        return False

    def loop_begin(self, reductions: list[tuple[str, str]]) -> list[str]:
        raise NotImplementedError

    def lanes(self, prog: ir.Program, reds: list[tuple[ir.Node, str]]) -> int:
        """Partial accumulators per reduction of a loop (1: one, in the loop's own form)."""
        return 1

    def lane_decl(self, r: ir.Node, acc: str, lanes: int) -> list[str]:
        raise NotImplementedError

    def loop(
        self, prog: ir.Program, li: int, reds: list[tuple[ir.Node, str]], inner: list[str], lanes: int
    ) -> list[str]:
        """Pass ``li`` along the row around its body ``inner``."""
        return [*self.loop_begin(reds), *("    " + s for s in inner), "}"]

    def combine(self, reds: list[tuple[ir.Node, str]]) -> list[str]:
        """After a loop: turn each work-item's accumulator into the row's value."""
        return [
            f"const {self.ctype(r.dtype)} v{r.id} = {self.finish(r, acc, f'idx{r.id}', f'nan{r.id}')};"
            for r, acc in reds
        ]

    def row_store(self, k: int, name: str) -> str:
        return f"out{k}[r] = {name};"

    def store_target(self, prog: ir.Program, k: int) -> str:
        return f"out{k}[r * N + j]"

    def spill_at(self, prog: ir.Program, k: int) -> str:
        """Where a value kept for a later pass (:func:`plan_spills`) lives: output ``k``'s row."""
        return f"out{k}[r * N + j]"

    def after_stores(self, prog: ir.Program, stores: list[tuple[int, ir.Node]]) -> list[str]:
        return []

    def chunk_suffix(self, prog: ir.Program, li: int, count: str) -> list[str]:
        """Lines after each chunk of pass ``li`` (``count`` elements, from ``jj``)."""
        return []

    def note_pass(self, prog: ir.Program, li: int, inner: list[str]) -> None:
        """Pass ``li``'s body ``inner`` is ready, before :meth:`loop` wraps it."""

    # -- batches ------------------------------------------------------------------------
    #: how several kernels share one build: "entries" (each is an entry point of one program)
    #: or "dispatch" (one entry point switching on a kernel number: C, whose binaries load
    #: one entry each)
    batch = "entries"
    _batch: list[ir.Program] = []

    def programs(self, prog: ir.Program) -> list[ir.Program]:
        """The programs a prologue serves: ``prog``, or every program of the batch being emitted."""
        return self._batch or [prog]

    def batch_source(self, progs: list[tuple[ir.Program, str]], entry: str) -> str:
        """One translation unit holding every ``(program, entry)``: the prologue they need once,
        then each kernel; for ``batch = "dispatch"`` the kernels are static and ``entry``
        dispatches (see :meth:`dispatcher`)."""
        self._batch = [p for p, _ in progs]
        try:
            lines = self.prologue(progs[0][0])
            for prog, name in progs:
                lines.append(self.source(prog, name, prologue=False))
            if self.batch == "dispatch":
                lines += self.dispatcher(progs, entry)
        finally:
            self._batch = []
        return "\n".join(lines) + "\n"

    def dispatcher(self, progs: list[tuple[ir.Program, str]], entry: str) -> list[str]:
        raise NotImplementedError(f"[compiler] {self.language}: no dispatching batch")

    # -- the kernel ---------------------------------------------------------------------
    def source(self, prog: ir.Program, entry: str, prologue: bool = True) -> str:
        sched = ir.schedule(prog)
        spills = plan_spills(prog, sched)
        self._prog = prog
        n = "n" if prog.n is None else prog.n
        head = [
            *(self.prologue(prog) if prologue else ()),
            f"#define N {n}",
            ("static " if not prologue and self.batch == "dispatch" else "")
            + self.signature(prog, entry)
            + " {",
        ]
        opening, body = self.row_begin(prog)
        self._done: set[int] = set()
        for li, loop in enumerate(sched.loops):
            reload = {i: k for i, (k, at) in spills.items() if at < li}
            roots = [r.args[0] for r in loop.reductions] + [n for _, n in loop.stores]
            order: list[ir.Node] = []
            seen: set[int] = set(reload)
            for n in roots:
                self._collect(n, seen, order, body)
            reds = [(r, f"acc{r.id}") for r in loop.reductions]
            lanes = self.lanes(prog, reds)
            lane = "_l[j - jj]" if lanes > 1 else ""
            for r, acc in reds:
                body.extend(self.red_decl(r, acc))
                if lanes > 1:
                    body.extend(self.lane_decl(r, acc, lanes))
            inner: list[str] = []
            for i, k in reload.items():
                used = [a.id for n in order for a in n.args] + [n.id for _, n in loop.stores]
                if i in used or any(r.args[0].id == i for r in loop.reductions):
                    inner.append(
                        f"const {self.ctype(prog.outputs[k].dtype)} v{i} = {self.spill_at(prog, k)};"
                    )
            for n in order:
                e = self.expr(n, [f"v{a.id}" for a in n.args], self._load(n))
                inner.append(f"const {self.ctype(n.dtype)} v{n.id} = {e};")
            for r, acc in reds:
                inner.extend(self.red_update(r, acc, f"v{r.args[0].id}", lane))
            for i, (k, at) in spills.items():
                if at == li:
                    inner.append(f"{self.spill_at(prog, k)} = v{i};  /* kept for a later pass */")
            for k, n in loop.stores:
                inner.append(f"{self.store_target(prog, k)} = {self.stored(n.dtype, f'v{n.id}')};")
            shifts = sorted({n.attr[1] for n in order if n.op == "take"})
            segments = self.segments(prog, reds, lanes, shifts) if shifts else None
            if segments is not None:
                body.extend(self.segmented(inner, segments))
            else:
                tk = [f"const int64_t tk{s} = (j < N - {s} ? {s} : {s} - N);" for s in shifts]
                self.note_pass(prog, li, tk + inner)
                body.extend(self.loop(prog, li, reds, tk + inner, lanes))
            body.extend(self.after_stores(prog, loop.stores))
            body.extend(self.combine(reds))
            self._done.update(r.id for r, _ in reds)
        for k, n in sched.row_stores:
            if n.op != "reduce":
                self._row_value(n, body)
            body.append(self.row_store(k, self.stored(n.dtype, f"v{n.id}")))
        lines = head + ["    " + s for s in opening]
        inner = "        " if self.row_loop else "    "
        lines += [inner + s for s in body]
        lines += ["    " + s for s in self.row_end()]
        lines.append("}")
        return "\n".join(lines) + "\n"

    row_loop = False

    def segments(
        self, prog: ir.Program, reds: list[tuple[ir.Node, str]], lanes: int, shifts: list[int]
    ) -> list[tuple[int, int, list[tuple[int, int]]]] | None:
        """A pass that reads rotated columns (``take``: column ``(j + s) % N`` is ``j + tk<s>``)
        as loops over column ranges, each with every ``tk<s>`` fixed: ``(lo, hi, [(s, tk)])``,
        or None for one loop that picks ``tk<s>`` per element."""
        return None

    @staticmethod
    def column_ranges(n: int, shifts: list[int]) -> list[tuple[int, int, list[tuple[int, int]]]]:
        cuts = sorted({0, n, *(n - s for s in shifts)})
        return [
            (lo, hi, [(s, s if hi <= n - s else s - n) for s in shifts]) for lo, hi in zip(cuts, cuts[1:])
        ]

    def segmented(
        self, inner: list[str], segments: list[tuple[int, int, list[tuple[int, int]]]]
    ) -> list[str]:
        raise NotImplementedError

    def _load(self, n: ir.Node) -> str:
        if n.op == "take":  # the input at column (j + s) % N: j + tk<s>, set by the loop
            k, s, _ = n.attr
            col = f"(j + tk{s})"
            if k in self._prog.loads:
                at = re.sub(r"\bj\b", col, self._prog.loads[k])
            else:
                at = f"r * N + {col}" if n.row else col
            return self.loaded(n.dtype, f"in{k}[{at}]")
        if n.op != "input":
            return ""
        k = n.attr
        if k in self._prog.loads:
            at = self._prog.loads[k]
        elif n.row and n.col:
            at = "r * N + j"
        elif n.col:
            at = "j"
        else:
            at = "r" if n.row else "0"
        return self.loaded(n.dtype, f"in{k}[{at}]")

    def _row_value(self, n: ir.Node, out: list[str]) -> None:
        """Emit a value that is constant along the row, once per row (hoisted out of loops)."""
        if n.id in self._done:
            return
        if n.op == "reduce":
            raise AssertionError(f"reduction v{n.id} used before its loop")
        for a in n.args:
            self._row_value(a, out)
        out.append(
            f"const {self.ctype(n.dtype)} v{n.id} = {self.expr(n, [f'v{a.id}' for a in n.args], self._load(n))};"
        )
        self._done.add(n.id)

    def _collect(self, n: ir.Node, seen: set[int], order: list[ir.Node], body: list[str]) -> None:
        """The values a loop body computes per element, in dependency order."""
        if n.id in seen:
            return
        seen.add(n.id)
        if not n.col:
            self._row_value(n, body)
            return
        for a in n.args:
            self._collect(a, seen, order, body)
        order.append(n)

    def params(self, prog: ir.Program, ptr: str, cptr: str, size_t: str) -> str:
        ps = [f"{cptr.format(T=self.storage(d))} in{k}" for k, (d, _, _) in enumerate(prog.inputs)]
        ps += [f"{ptr.format(T=self.storage(o.dtype))} out{k}" for k, o in enumerate(prog.outputs)]
        ps.append(f"{size_t} rows")
        if prog.n is None:
            ps.append(f"{size_t} n")
        return ", ".join(ps)


def _costly_op(op: str) -> bool:
    d = ir.OPS.get(op)
    return d is not None and d.lower is not None and d.lower.costly


def plan_spills(prog: ir.Program, sched: ir.Schedule) -> dict[int, tuple[int, int]]:
    """Values worth keeping in an output row instead of recomputing them in a later pass.

    When a transcendental element value (softmax's ``exp(x - max)``) is computed in an
    earlier pass and needed again by the pass that stores output ``k``, the earlier pass writes
    it into ``out_k`` (the row is still in cache) and the later pass reads it back.
    Returns ``{node id: (output index, pass that writes it)}``.
    """
    if len(sched.loops) < 2:
        return {}
    expensive: dict[int, bool] = {}

    def costly(n: ir.Node) -> bool:
        v = expensive.get(n.id)
        if v is None:
            v = expensive[n.id] = n.col and (_costly_op(n.op) or any(costly(a) for a in n.args))
        return v

    def closure(roots: list[ir.Node]) -> dict[int, ir.Node]:
        out: dict[int, ir.Node] = {}
        stack = [n for n in roots if n.col]
        while stack:
            n = stack.pop()
            if n.id not in out:
                out[n.id] = n
                stack.extend(a for a in n.args if a.col)
        return out

    computed = [closure([r.args[0] for r in lp.reductions] + [n for _, n in lp.stores]) for lp in sched.loops]
    spills: dict[int, tuple[int, int]] = {}
    for li, lp in enumerate(sched.loops):
        for k, store in lp.stores:
            best: tuple[int, int] | None = None
            for n in closure([store]).values():
                if (
                    n.dtype != prog.outputs[k].dtype
                    or n.dtype not in ir.FLOATS
                    or not costly(n)
                    or n.id in spills
                ):
                    continue
                earlier = [lj for lj in range(li) if n.id in computed[lj]]
                if earlier and (best is None or n.id > best[0]):
                    best = (n.id, max(earlier))
            if best is not None:
                spills[best[0]] = (k, best[1])
    return spills


# Non-temporal row writes: the output goes to memory without first reading its cache lines.
# The pass that stores a row computes it chunk by chunk into a small array (it stays in
# registers) and writes each chunk out at once with non-temporal stores: oarlock_stream64 in
# full 64-byte lines where AVX-512 has them (the destination on a 64-byte line, chunks of
# whole lines), oarlock_stream32 in 32-byte halves (on a 32-byte line); elements after the
# last whole vector are stored plainly. The caller checks the row's alignment
# (OARLOCK_LINE64 / OARLOCK_LINE32: the mask of address bits that must be zero; else it stores
# plainly) and fences once when its rows are done. No alignment test inside: with one the
# loop cost softmax 8-10 % (docs/benchmarks.md).
_STREAM_WIDE = r"""
static inline void oarlock_stream64_{s}({T}* restrict d, const {T}* restrict s, int64_t n) {{
    int64_t j = 0;
    for (; j + {w2} <= n; j += {w2}) _mm512_stream_{v}(d + j, _mm512_loadu_{v}(s + j));
    for (; j < n; ++j) d[j] = s[j];
}}"""
_STREAM_HALF = r"""
static inline void oarlock_stream{name}_{s}({T}* restrict d, const {T}* restrict s, int64_t n) {{
    int64_t j = 0;
    for (; j + {w} <= n; j += {w}) _mm256_stream_{v}(d + j, _mm256_loadu_{v}(s + j));
    for (; j < n; ++j) d[j] = s[j];
}}"""
_STREAM_COPY = r"""
static inline void oarlock_stream{name}_{s}({T}* d, const {T}* s, int64_t n) {{
    memcpy(d, s, n * sizeof({T}));
}}"""
_STREAM_TYPES = [dict(s="f32", T="float", w=8, w2=16, v="ps"), dict(s="f64", T="double", w=4, w2=8, v="pd")]
_STREAM = "\n".join(
    [
        "#include <string.h>",
        "#if defined(__AVX__)",
        "#include <immintrin.h>",
        *(_STREAM_HALF.format(name="32", **t).strip("\n") for t in _STREAM_TYPES),
        "#define OARLOCK_LINE32 31",
        "#if defined(__AVX512F__)",
        *(_STREAM_WIDE.format(**t).strip("\n") for t in _STREAM_TYPES),
        "#define OARLOCK_LINE64 63",
        "#else",
        *(_STREAM_HALF.format(name="64", **t).strip("\n") for t in _STREAM_TYPES),
        "#define OARLOCK_LINE64 31",
        "#endif",
        "#define oarlock_stream_fence() _mm_sfence()",
        "#else",
        *(_STREAM_COPY.format(name=n, **t).strip("\n") for t in _STREAM_TYPES for n in ("32", "64")),
        "#define OARLOCK_LINE32 0",
        "#define OARLOCK_LINE64 0",
        "#define oarlock_stream_fence() ((void)0)",
        "#endif",
    ]
)


# float16 / bfloat16: values are exact in double; a store rounds once to nearest even
# (quantum 2**(e - bits) at the value's binade, clamped at the subnormal one).
_C_HALF = r"""
static inline double oarlock_h2d(uint16_t h) {
    int e = (h >> 10) & 31; double m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m != 0 ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}
static inline uint16_t oarlock_d2h(double x) {
    uint16_t s = signbit(x) ? 0x8000 : 0; double a = fabs(x); int e;
    if (a != a) return s | 0x7e00;
    if (isinf(a)) return s | 0x7c00;
    frexp(a, &e); if (e < -13) e = -13;
    double q = ldexp(1.0, e - 11), r = nearbyint(a / q) * q;
    if (r > 65504.0) return s | 0x7c00;
    if (r < 0x1p-14) return s | (uint16_t)(r * 0x1p24);
    double f = frexp(r, &e);
    return s | (uint16_t)((e + 14) << 10) | (uint16_t)((f * 2.0 - 1.0) * 1024.0);
}
static inline double oarlock_b2d(uint16_t b) {
    union { uint32_t u; float f; } v; v.u = (uint32_t)b << 16; return v.f;
}
static inline uint16_t oarlock_d2b(double x) {
    uint16_t s = signbit(x) ? 0x8000 : 0; double a = fabs(x); int e;
    if (a != a) return s | 0x7fc0;
    frexp(a, &e); if (e < -125) e = -125;
    if (isinf(a)) return s | 0x7f80;
    double q = ldexp(1.0, e - 8), r = nearbyint(a / q) * q;
    if (r > 0x1.fep127) return s | 0x7f80;
    union { uint32_t u; float f; } v; v.f = (float)r; return s | (uint16_t)(v.u >> 16);
}"""

# Philox-4x32-10 (adapter_api.primitives: philox_uniform), element i of the stream.
_C_PHILOX = r"""
static inline uint32_t oarlock_philox(uint64_t i, uint64_t seed, uint64_t offset) {
    uint64_t n = offset + i / 4;
    uint32_t c0 = (uint32_t)n, c1 = (uint32_t)(n >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0; c1 = (uint32_t)p1; c2 = n2; c3 = (uint32_t)p0;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    switch (i % 4) { case 0: return c0; case 1: return c1; case 2: return c2; default: return c3; }
}"""

# Integer pow (wraps; a negative exponent gives 0 but for bases 1 and -1), and numpy's
# floor_divide / remainder (sign of the divisor; 0 for a zero divisor; INT_MIN // -1 wraps).
_C_INT = r"""
static inline uint64_t oarlock_ipow(uint64_t b, int64_t e) {
    if (e < 0) return b == 1 ? 1 : b == (uint64_t)-1 ? ((e & 1) ? b : 1) : 0;
    uint64_t r = 1;
    while (e) { if (e & 1) r *= b; b *= b; e >>= 1; }
    return r;
}
static inline int64_t oarlock_floordiv(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t oarlock_mod(int64_t a, int64_t b) {
    if (b == 0 || b == -1) return 0;
    int64_t m = a % b;
    return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}"""


def needed_helpers(progs: list[ir.Program]) -> list[str]:
    """Which helper families the programs' source needs: "half", "philox", "int"."""
    names: set[str] = set()
    ops: set[str] = set()
    for prog in progs:
        nodes = ir.live_nodes(prog.outputs)
        names |= {d.name for d, _, _ in prog.inputs} | {n.dtype.name for n in nodes}
        ops |= {n.op for n in nodes if not n.args or not is_float(n.args[0].dtype)}
    need = (
        ("half", bool(names & set(HALVES))),
        ("philox", "philox" in ops),
        ("int", bool(ops & {"pow", "floor_divide", "remainder"})),
    )
    return [h for h, yes in need if yes]


def _flag(r: ir.Node) -> str:
    """The extra per-work-item state of reduction ``r``: "idx" (arg*), "nan" (float max/min) or ""."""
    if r.attr in ("argmax", "argmin"):
        return "idx"
    return "nan" if r.attr in ("max", "min") and is_float(r.args[0].dtype) else ""


class _RowLoops(Emitter):
    """Passes along a row in chunks of :attr:`width` elements, for emitters of the "rows"
    layout (one thread or work-item per row, a plain loop along it that the compiler
    vectorises): each reduction keeps ``width`` partial results, so the vectorised loop
    holds several SIMD registers of them and its adds do not wait on one another (one
    accumulator leaves the loop bound by the add's latency), and the second pass over a row
    that fits in cache prefetches the next row while it computes."""

    #: the pragma that asks for SIMD code along a chunk
    simd: tuple[str, ...] = ()
    #: the type of the element index ``j``
    j_t = "int"

    #: elements of a row per chunk of a pass (the vector width): each reduction keeps this
    #: many partial results (several SIMD registers, so the adds do not wait on each other)
    #: and later passes prefetch the next row chunk by chunk; tuned per device and shape
    #: (tune.py), this when tuning is off
    width = 32
    #: bytes of a row's inputs up to which a later pass prefetches the next row (it stays in L2)
    PREFETCH_ROW_MAX = 64 << 10

    def lanes(self, prog: ir.Program, reds: list[tuple[ir.Node, str]]) -> int:
        if prog.n is None or self.width <= 1 or prog.n < self.width or not reds:
            return 1
        return 1 if any(r.attr in ("argmax", "argmin") for r, _ in reds) else self.width

    def lane_decl(self, r: ir.Node, acc: str, lanes: int) -> list[str]:
        out = [f"{self._acc_type(r)} {acc}_l[{lanes}];"]
        init = [f"{acc}_l[l] = {self._red_init(r)};"]
        if _flag(r) == "nan":
            out.append(f"int nan{r.id}_l[{lanes}];")
            init.append(f"nan{r.id}_l[l] = 0;")
        return [*out, f"for (int l = 0; l < {lanes}; ++l) {{ {' '.join(init)} }}"]

    def _fold_lanes(self, reds: list[tuple[ir.Node, str]], lanes: int) -> list[str]:
        """Each reduction's partial results into its accumulator, lane by lane."""
        out = []
        for r, acc in reds:
            part, src = f"{acc}_l[l]", r.args[0].dtype
            if r.attr in ("sum", "prod"):
                out.append(f"{acc} {'+' if r.attr == 'sum' else '*'}= {part};")
            elif src == ir.BOOL:
                out.append(f"{acc} {'|' if r.attr == 'max' else '&'}= {part};")
            else:
                out.append(self.update(r.attr, acc, part))
                if _flag(r) == "nan":
                    out.append(f"nan{r.id} |= nan{r.id}_l[l];")
        return [f"for (int l = 0; l < {lanes}; ++l) {{", *("    " + s for s in out), "}"]

    def _prefetch(self, prog: ir.Program, li: int) -> list[str]:
        """The second pass over a row that fits in cache fetches the next row (its inputs read
        along the row) into L2 while it computes: the first pass then finds it there."""
        if li != 1 or prog.n is None:
            return []
        ks = sorted(
            {
                n.attr
                for n in ir.live_nodes(prog.outputs)
                if n.op == "input" and n.row and n.col and n.attr not in prog.loads
            }
        )
        size = sum(self.storage_size(prog.inputs[k][0]) for k in ks)
        if not ks or prog.n * size > self.PREFETCH_ROW_MAX:
            return []
        out = []
        for k in ks:
            step = max(64 // self.storage_size(prog.inputs[k][0]), 1)
            out += [self.prefetch(f"in{k} + (r + 1) * N + jj + {o}") for o in range(0, self.width, step)]
        return [f"if (r + 1 < rows) {{ {' '.join(out)} }}"] if out else []

    def storage_size(self, dt: np.dtype) -> int:
        return 1 if dt == ir.BOOL else dt.itemsize

    def prefetch(self, at: str) -> str:
        """Fetch the cache line at address ``at`` into L2 (a hint: it never faults)."""
        return f"__builtin_prefetch({at}, 0, 2);"

    def loop(
        self, prog: ir.Program, li: int, reds: list[tuple[ir.Node, str]], inner: list[str], lanes: int
    ) -> list[str]:
        """Chunks of :meth:`chunk` elements (full ones unrolled into SIMD registers, then the
        tail), when the pass keeps partial results per lane, prefetches, has a
        :meth:`chunk_suffix` or asks for chunks (:meth:`in_chunks`). The tail is under the
        SIMD pragma too: a row of 46 logits left 14 scalar ``expf`` calls a row, and
        cross-entropy's log-softmax over 1024 x 46 took 87-137 us; vectorised (8 + 4 lanes,
        then 2 scalar) 60 us (AMD Zen 5, one thread)."""
        pf = self._prefetch(prog, li) if prog.n is not None and prog.n >= self.width > 1 else []
        suffix = self.chunk_suffix(prog, li, str(self.chunk(prog, li)))
        if lanes <= 1 and not pf and not suffix and not self.in_chunks(prog, li):
            return super().loop(prog, li, reds, inner, lanes)
        assert prog.n is not None
        w = self.chunk(prog, li)
        main, tail = prog.n - prog.n % w, prog.n % w
        out = [
            f"for ({self.j_t} jj = 0; jj < {main}; jj += {w}) {{",
            *("    " + s for s in pf),
            *("    " + s for s in self.chunk_body(prog, li, inner, str(w), f"jj + {w}")),
            *("    " + s for s in suffix),
            "}",
        ]
        if tail:
            out += [
                "{",
                f"    const {self.j_t} jj = {main};",
                *("    " + s for s in self.chunk_body(prog, li, inner, "N - jj", "N", simd=True)),
                *("    " + s for s in self.chunk_suffix(prog, li, "N - jj")),
                "}",
            ]
        return out + (self._fold_lanes(reds, lanes) if lanes > 1 else [])

    def chunk_body(
        self, prog: ir.Program, li: int, inner: list[str], count: str, bound: str, simd: bool = True
    ) -> list[str]:
        """One chunk of pass ``li``: ``inner`` for ``j`` from ``jj`` up to ``bound`` (``count``
        elements; ``simd``: a full chunk, under the SIMD pragma)."""
        return [
            *(self.simd if simd else ()),
            f"for ({self.j_t} j = jj; j < {bound}; ++j) {{",
            *("    " + s for s in inner),
            "}",
        ]

    def chunk(self, prog: ir.Program, li: int) -> int:
        """Elements per chunk of pass ``li``: :attr:`width` (its lanes' count)."""
        return self.width

    def in_chunks(self, prog: ir.Program, li: int) -> bool:
        """Whether pass ``li`` runs in chunks even with no lanes, prefetch or suffix."""
        return False


# exp in float for C where its argument is computed from a constant at or below -104 (a
# masked fill: a causal mask's softmax is exp(where(mask, x, -inf) - max)): glibc's vector
# expf (libmvec) runs every lane below about -87.3 on a scalar path, and such rows ran 8x
# slower than unmasked ones (4.6 ns an element). A lane below -104 (where exp rounds to +0),
# -inf included, gets argument 0 and result +0 through a bit mask (not a select: gcc turns
# expf(c ? a : b) into two vector calls); every other lane is glibc's expf unchanged. The
# mask costs about 13% on rows that never need it, hence only there
# (tests/test_compiler_row_loops.py).
_C_EXPF = r"""
static inline float oarlock_bits_f(int32_t i) { float f; __builtin_memcpy(&f, &i, 4); return f; }
static inline int32_t oarlock_f_bits(float f) { int32_t i; __builtin_memcpy(&i, &f, 4); return i; }
static inline __attribute__((always_inline)) float oarlock_expf(float x) {
    const int32_t keep = ~(-(int32_t)(x < -104.0f));
    return oarlock_bits_f(oarlock_f_bits(expf(oarlock_bits_f(oarlock_f_bits(x) & keep))) & keep);
}"""


def _masked_exp(n: ir.Node) -> bool:
    """A float exp whose argument is computed from a constant at or below -104 (see _C_EXPF)."""
    if n.op != "exp" or n.dtype != np.float32:
        return False
    seen: set[int] = set()
    stack = [n.args[0]]
    while stack:
        m = stack.pop()
        if m.id in seen:
            continue
        seen.add(m.id)
        if m.op == "const" and is_float(m.dtype) and float(m.attr) <= -104.0:
            return True
        if m.op != "reduce":  # a max over the row of masked values is not -inf (unless all are)
            stack.extend(m.args)
    return False


class CEmitter(_RowLoops):
    """C99 for the host: OpenMP threads across rows, SIMD along the row. Every dtype of the
    contract (the others are float32/float64 only): integers, bool, and float16/bfloat16
    computed in double and rounded once when stored."""

    language = "c"
    layout = "rows"
    simd = ("#pragma omp simd",)
    #: NOTE: bool tensors are read and written as bytes: gcc does not vectorise a loop that
    #: loads ``bool`` beside floats ("no vectype"): a causal mask kept softmax's exp scalar
    bool_storage = "uint8_t"
    j_t = "int64_t"
    PARALLEL_MIN = 1 << 15  #: elements below which a launch runs on the calling thread
    #: generated primitives (framework.compiler.primitives) are built for this language
    primitives = True

    def prologue(self, prog: ir.Program) -> list[str]:
        helpers = [
            {"half": _C_HALF, "philox": _C_PHILOX, "int": _C_INT}[h]
            for h in needed_helpers(self.programs(prog))
        ]
        return [
            "/* generated by framework.compiler */",
            "#ifdef OARLOCK_VECTOR_MATH",
            "#define __FAST_MATH__ 1 /* declares glibc's vector expf/logf... for omp simd */",
            "#endif",
            "#include <math.h>",
            "#include <stdbool.h>",
            "#include <stdint.h>",
            # immintrin.h costs a third of a build: not for generated primitives (they never stream)
            *(_STREAM.splitlines() if prog.n is not None else ()),
            *"\n".join(helpers).splitlines(),
            *(_C_EXPF.splitlines() if any(map(_masked_exp, self._nodes(prog))) else ()),
        ]

    def _nodes(self, prog: ir.Program) -> list[ir.Node]:
        return [n for p in self.programs(prog) for n in ir.live_nodes(p.outputs)]

    def expr(self, n: ir.Node, a: list[str], load: str) -> str:
        if _masked_exp(n):
            return f"oarlock_expf({a[0]})"
        return super().expr(n, a, load)

    def signature(self, prog: ir.Program, entry: str) -> str:
        return f"void {entry}({self.params(prog, '{T}* restrict', 'const {T}* restrict', 'int64_t')})"

    batch = "dispatch"
    #: tensors a dispatched kernel takes at most (``where``: three inputs and its output)
    DISPATCH_TENSORS = 4

    def dispatcher(self, progs: list[tuple[ir.Program, str]], entry: str) -> list[str]:
        """``entry(k, p0..p3, rows, n)`` runs kernel ``k`` of the batch on tensors ``p0..``."""
        ptrs = ", ".join(f"void* p{i}" for i in range(self.DISPATCH_TENSORS))
        out = [f"void {entry}(int64_t k, {ptrs}, int64_t rows, int64_t n) {{", "    switch (k) {"]
        for k, (prog, name) in enumerate(progs):
            dts = [d for d, _, _ in prog.inputs] + [o.dtype for o in prog.outputs]
            if len(dts) > self.DISPATCH_TENSORS:
                raise NotImplementedError(f"[compiler] '{name}' takes {len(dts)} tensors; a batch takes 4")
            args = [f"({self.storage(d)}*)p{i}" for i, d in enumerate(dts)]
            args += ["rows", "n"] if prog.n is None else ["rows"]
            out.append(f"    case {k}: {name}({', '.join(args)}); break;")
        return [*out, "    }", "}"]

    row_loop = True

    #: a vector's elements for the narrowest float (AVX-512's 16 floats): rows of a length that is
    #: not a multiple of it leave a tail per row (in narrower vectors, then scalar)
    VECTOR_FLOATS = 16

    def _flat(self, prog: ir.Program) -> bool:
        """Whether ``prog`` runs as one loop over all ``rows * N`` elements: element-wise (one
        pass, no reduction, no per-row output), every input read whole or as one scalar, and a
        row whose length leaves a tail (not a multiple of :attr:`VECTOR_FLOATS`, or not known
        when built). Row by row, each tail ran scalar: a call of the scalar ``tanhf`` per
        element, and SwiGLU's silu over rows of 172 took 5.6x its time without the ``tanhf``
        (147 against 26 us on 1024 rows); flat, the tail comes once. Such a program is never
        streamed through row buffers (plain stores)."""
        return self._of_program("_flat_of", prog, self._flat_program)

    def _flat_program(self, prog: ir.Program) -> bool:
        if prog.n is not None and prog.n % self.VECTOR_FLOATS == 0 and prog.n >= 64:
            return False
        if prog.loads or not all(prog.out_col):
            return False
        if any(n.op == "take" for n in ir.live_nodes(prog.outputs)):
            return False  # a rotated column is an index within the row
        sched = self._schedule(prog)
        if len(sched.loops) != 1 or sched.loops[0].reductions or sched.row_stores:
            return False
        return all(n.row == n.col for n in ir.live_nodes(prog.outputs) if n.op == "input")

    def _load(self, n: ir.Node) -> str:
        if n.op == "input" and n.row and n.col and self._flat(self._prog):
            return self.loaded(n.dtype, f"in{n.attr}[i]")
        return super()._load(n)

    def special(self, n: ir.Node, a: list[str]) -> str:
        if n.op == "index" and self._flat(self._prog):
            return "((int64_t)i)"  # r * N + j
        return super().special(n, a)

    def loop(
        self, prog: ir.Program, li: int, reds: list[tuple[ir.Node, str]], inner: list[str], lanes: int
    ) -> list[str]:
        if self._flat(prog):
            return inner
        out = super().loop(prog, li, reds, inner, lanes)
        if self._pipelined(prog) and self._last(prog, li):
            return ["if (!stream) {", *("    " + x for x in out), "}"]  # else: during the next row
        return out

    def segments(
        self, prog: ir.Program, reds: list[tuple[ir.Node, str]], lanes: int, shifts: list[int]
    ) -> list[tuple[int, int, list[tuple[int, int]]]] | None:
        # NOTE: one loop with tk<s> chosen per element made gcc gather (vgatherqps) every
        # rotated load; over a column range the rotated row is a contiguous load
        if reds or lanes > 1 or prog.n is None:
            return None
        return self.column_ranges(prog.n, shifts)

    def segmented(
        self, inner: list[str], segments: list[tuple[int, int, list[tuple[int, int]]]]
    ) -> list[str]:
        out = []
        for lo, hi, tks in segments:
            out += [
                "{",
                *(f"    const int64_t tk{s} = {tk};" for s, tk in tks),
                "    #pragma omp simd",
                f"    for (int64_t j = {lo}; j < {hi}; ++j) {{",
                *("        " + x for x in inner),
                "    }",
                "}",
            ]
        return out

    def row_begin(self, prog: ir.Program) -> tuple[list[str], list[str]]:
        # NOTE: small launches stay on one thread: the fork and join cost more than the work
        # (a sleeping team takes ~45 us to wake on a 2-core VM; the cpu plugin keeps it awake
        # ~0.2 ms between kernels, hence 2^15 elements and not the 2^18 of passive waiting).
        parallel = f"if (rows * N > {self.PARALLEL_MIN})"
        if self._flat(prog):
            # NOTE: not "parallel for simd": gcc 12 then called the scalar tanhf per element (15x)
            return [
                f"#pragma omp parallel {parallel}",
                "{",
                "#pragma omp for simd schedule(static)",
                "for (int64_t i = 0; i < rows * N; ++i) {",
            ], []
        loop = "for (int64_t r = 0; r < rows; ++r) {"
        streamed = self._streamed(prog)
        if not streamed:
            return [f"#pragma omp parallel for schedule(static) {parallel}", loop], []
        # a row goes out chunk by chunk, each chunk computed into a small array that stays in
        # registers and written at once with non-temporal stores (_STREAM_CHUNK); measured in
        # docs/benchmarks.md: a whole row kept in a row buffer and streamed from there took a
        # pass more over it (softmax 4096 x 4096: 8-12 % slower)
        opening = [f"const bool stream = rows * N * {self._itemsize(prog)} >= {self.STREAM_MIN};"]
        opening += [f"#pragma omp parallel {parallel}", "{"]
        spilled = self._spilled(prog)
        piped = self._pipelined(prog)
        # streamed where every output row starts on a line (else plain stores)
        lines = " | ".join(f"(uintptr_t)(out{k} + r * N)" for k in streamed)
        body = [f"const bool st = stream && !(({lines}) & {self._line(prog)});"]
        for k in sorted(spilled):
            T = self.ctype(prog.outputs[k].dtype)
            if piped:
                # the row computing fills one buffer while the pending row's last pass reads
                # the other
                opening.append(
                    f"{T} sa{k}[N] __attribute__((aligned(64))), sb{k}[N] __attribute__((aligned(64)));"
                )
                body.append(f"{T}* restrict dst{k} = stream ? (pb ? sb{k} : sa{k}) : out{k} + r * N;")
                body.append(f"const {T}* restrict prv{k} = pb ? sa{k} : sb{k};")
            else:
                opening.append(f"{T} sa{k}[N] __attribute__((aligned(64)));")
                body.append(f"{T}* restrict dst{k} = stream ? sa{k} : out{k} + r * N;")
        if piped:
            opening += [
                "int64_t pend = -1;  /* the row whose last pass runs during this row's */",
                "int pb = 0;",
                "bool pst = false;  /* whether row pend streams */",
                *(f"{T} p{i};" for i, T in self._row_values(prog)),
            ]
        opening += ["#pragma omp for schedule(static) nowait", loop]
        return opening, body

    #: output bytes from which rows are written with non-temporal stores (they would only
    #: evict the inputs from the cache, and a plain store first reads the line)
    STREAM_MIN = 8 << 20
    STREAM_ROW_MAX = 32 << 10  #: the per-thread row buffer must stay in L1/L2
    STREAM_BUFFERS_MAX = 256 << 10  #: all of a thread's row buffers (beyond: plain stores)

    @staticmethod
    def _itemsize(prog: ir.Program) -> int:
        return max(o.dtype.itemsize for o in prog.outputs)

    def _streamed(self, prog: ir.Program) -> list[int]:
        """The outputs written through row buffers (asked for at every store: kept per program)."""
        return self._of_program("_streamed_of", prog, self._streamed_outputs)

    def _schedule(self, prog: ir.Program) -> ir.Schedule:
        return self._of_program("_schedule_of", prog, ir.schedule)

    def _spills(self, prog: ir.Program) -> dict[int, tuple[int, int]]:
        """:func:`plan_spills` of the program being emitted, planned once."""
        return self._of_program("_spills_of", prog, lambda p: plan_spills(p, self._schedule(p)))

    def _of_program(self, name: str, prog: ir.Program, compute: Any) -> Any:
        """``compute(prog)``, kept under ``name`` for the program being emitted (the emitter
        asks at every load and store)."""
        memo = self.__dict__.get(name)
        if memo is None or memo[0] is not prog:
            memo = (prog, compute(prog))
            setattr(self, name, memo)
        return memo[1]

    def _streamed_outputs(self, prog: ir.Program) -> list[int]:
        if (
            self._flat(prog)
            or prog.n is None
            or prog.n < 64
            or prog.n * self._itemsize(prog) > self.STREAM_ROW_MAX
        ):
            return []
        if any(o.dtype not in ir.FLOATS for o in prog.outputs):
            return []
        if any(n.op == "take" for n in ir.live_nodes(prog.outputs)):
            return []  # a rotated row passes in column ranges (segmented), not in chunks
        sched = self._schedule(prog)
        ks = [k for k, _ in (sched.loops[-1].stores if sched.loops else [])]
        # a chunk array per output, and two row buffers per spilled one (one when the last pass
        # runs in place), on each thread's stack (an OpenMP thread may have 2 MB)
        spilled = {k for k, _ in self._spills(prog).values()}
        per_thread = sum(2 * prog.n if k in spilled else self.STREAM_CHUNK for k in ks)
        if per_thread * self._itemsize(prog) > self.STREAM_BUFFERS_MAX:
            return []
        return ks

    def _spilled(self, prog: ir.Program) -> set[int]:
        """The streamed outputs that keep a value for a later pass (in their row buffer)."""
        return self._of_program(
            "_spilled_of", prog, lambda p: {k for k, _ in self._spills(p).values()} & set(self._streamed(p))
        )

    #: elements per chunk of a streamed row's last pass where :attr:`width` is less (plain loops)
    STREAM_CHUNK = 32

    def chunk(self, prog: ir.Program, li: int) -> int:
        if not self._streamed(prog):
            return self.width
        loops = self._schedule(prog).loops
        if self._pipelined(prog) or loops[-1].reductions:
            # the last pass keeps lanes, or runs inside a pass that does: the width's chunks
            # (width 1 keeps no lanes: the chunk is free to choose)
            return self.width if self.width > 1 else self.STREAM_CHUNK
        # a last pass with no lanes: chunks of its own, whatever the width, so a one-pass
        # program's source does not depend on the width (tuning then has nothing to measure)
        return self.STREAM_CHUNK if li in (-1, len(loops) - 1) else self.width

    def _lines(self, prog: ir.Program) -> int:
        """The stream helper's line: 64 bytes where every chunk is whole 64-byte lines, else 32."""
        size = min(prog.outputs[k].dtype.itemsize for k in self._streamed(prog))
        return 64 if self.chunk(prog, -1) * size % 64 == 0 else 32

    def _line(self, prog: ir.Program) -> str:
        return f"OARLOCK_LINE{self._lines(prog)}"

    def _last(self, prog: ir.Program, li: int) -> bool:
        """Whether pass ``li`` is the one that stores streamed outputs (the last)."""
        return bool(self._streamed(prog)) and li == len(self._schedule(prog).loops) - 1

    in_chunks = _last

    def store_target(self, prog: ir.Program, k: int) -> str:
        if self._flat(prog):
            return f"out{k}[i]"
        # c<k>: a placeholder that _store_chunk makes the chunk array or the output row
        return f"c{k}[j - jj]" if k in self._streamed(prog) else f"out{k}[r * N + j]"

    def spill_at(self, prog: ir.Program, k: int) -> str:
        # a streamed row keeps its spilled values in its row buffer: written to the output they
        # would cost a read for ownership and a write-back on top of the stream
        return f"dst{k}[j]" if k in self._streamed(prog) else f"out{k}[r * N + j]"

    def chunk_body(
        self, prog: ir.Program, li: int, inner: list[str], count: str, bound: str, simd: bool = True
    ) -> list[str]:
        if not self._last(prog, li):
            return super().chunk_body(prog, li, inner, count, bound, simd)
        return self._store_chunk(prog, inner, count, bound, simd)

    def _store_chunk(
        self, prog: ir.Program, inner: list[str], count: str, bound: str, simd: bool
    ) -> list[str]:
        """A chunk of the last pass: into chunk arrays streamed out when the row streams (a
        separate loop: through a pointer chosen at run time the array would not stay in
        registers), else into the output row."""
        ks = self._streamed(prog)
        to_t, to_out = list(inner), list(inner)
        for k in ks:
            to_t = [x.replace(f"c{k}[j - jj]", f"t{k}[j - jj]") for x in to_t]
            to_out = [x.replace(f"c{k}[j - jj]", f"out{k}[r * N + j]") for x in to_out]
        streamed = [
            f"{self.ctype(prog.outputs[k].dtype)} t{k}[{self.chunk(prog, -1)}] __attribute__((aligned(64)));"
            for k in ks
        ]
        streamed += super().chunk_body(prog, -1, to_t, count, bound, simd)
        for k in ks:
            s = "f32" if prog.outputs[k].dtype == np.float32 else "f64"
            streamed.append(f"oarlock_stream{self._lines(prog)}_{s}(out{k} + r * N + jj, t{k}, {count});")
        plain = super().chunk_body(prog, -1, to_out, count, bound, simd)
        return ["if (st) {", *("    " + x for x in streamed), "} else {", *("    " + x for x in plain), "}"]

    # -- a row's last pass during the next row's pass before it ------------------------------
    # Softmax's last pass (scale the kept exp, store) is light: the row's stores then drain to
    # memory with little arithmetic beside them. Where a program has three passes or more and
    # its last keeps no reduction, a streamed row's last pass runs instead chunk by chunk inside
    # the next row's pass before the last (softmax's exp and sum, which prefetches the row after
    # it): the pending row's scalars (p<id>), its kept values (prv<k>, the other row buffer), its
    # index (pend) and its stream flag (pst) stand in for the row's own. Measured on softmax
    # 4096 x 4096 (docs/benchmarks.md).
    def _pipelined(self, prog: ir.Program) -> bool:
        return self._of_program("_pipelined_of", prog, self._pipelined_program)

    def _pipelined_program(self, prog: ir.Program) -> bool:
        loops = self._schedule(prog).loops
        if not self._streamed(prog) or len(loops) < 3 or loops[-1].reductions:
            return False
        assert prog.n is not None
        return prog.n * self._itemsize(prog) >= self.PIPELINE_ROW_MIN

    #: row bytes from which the last pass runs during the next row's (shorter rows: in place;
    #: with rows of 64 floats the deferred form made softmax and layer_norm 10-20 % slower on
    #: launches too small to stream, by its bookkeeping per row)
    PIPELINE_ROW_MIN = 4 << 10

    def _row_values(self, prog: ir.Program) -> list[tuple[int, str]]:
        """(id, C type) of the row scalars the last pass reads (kept for its deferred run)."""
        return self._of_program("_row_values_of", prog, self._last_pass_row_values)

    def _last_pass_row_values(self, prog: ir.Program) -> list[tuple[int, str]]:
        sched = self._schedule(prog)
        seen: set[int] = set(self._spills(prog))
        rows: dict[int, ir.Node] = {}

        def walk(n: ir.Node) -> None:
            if n.id in seen:
                return
            seen.add(n.id)
            if not n.col:
                rows[n.id] = n
                return
            for a in n.args:
                walk(a)

        for _, n in sched.loops[-1].stores:
            walk(n)
        return [(i, self.ctype(n.dtype)) for i, n in sorted(rows.items())]

    def note_pass(self, prog: ir.Program, li: int, inner: list[str]) -> None:
        if self._pipelined(prog) and self._last(prog, li):
            self._last_inner = inner

    def _deferred_chunk(self, prog: ir.Program, count: str) -> list[str]:
        """The pending row's last pass over the chunk from ``jj`` (``count`` elements)."""
        full = count != "N - jj"
        lines = self._store_chunk(prog, self._last_inner, count, f"jj + {count}" if full else "N", full)
        # the last pass's own lines, in a block whose names are the pending row's: its index,
        # its stream flag, the row scalars it reads (saved per thread) and its kept values
        # (the other row buffer) shadow the row's own
        names = ["const int64_t r = pend;", "const bool st = pst;"]
        names += [f"const {ct} v{i} = p{i};" for i, ct in self._row_values(prog)]
        names += [
            f"const {self.ctype(prog.outputs[k].dtype)}* restrict dst{k} = prv{k};"
            for k in sorted(self._spilled(prog))
        ]
        return ["if (pend >= 0) {", *("    " + x for x in names + lines), "}"]

    #: where the pending row's last pass goes (filled in once the last pass's body is known)
    _DEFER = "/* oarlock: the pending row's last pass, {} */"

    def source(self, prog: ir.Program, entry: str, prologue: bool = True) -> str:
        src = super().source(prog, entry, prologue)
        if not self._pipelined(prog):
            return src
        mark = self._DEFER.split("{}")[0]
        lines = []
        for line in src.split("\n"):
            at = line.find(mark)
            if at < 0:
                lines.append(line)
            else:
                count = line[at + len(mark) :].split(" */")[0]
                lines += [line[:at] + x for x in self._deferred_chunk(prog, count)]
        return "\n".join(lines)

    def after_stores(self, prog: ir.Program, stores: list[tuple[int, ir.Node]]) -> list[str]:
        if not self._pipelined(prog) or not any(k in self._streamed(prog) for k, _ in stores):
            return []
        keep = " ".join(f"p{i} = v{i};" for i, _ in self._row_values(prog))
        return [f"if (stream) {{ pend = r; pb = !pb; pst = st; {keep} }}"]

    def chunk_suffix(self, prog: ir.Program, li: int, count: str) -> list[str]:
        loops = len(self._schedule(prog).loops)
        return [self._DEFER.format(count)] if self._pipelined(prog) and li == loops - 2 else []

    def row_end(self) -> list[str]:
        if self._flat(self._prog):
            return ["}", "}"]
        if not self._streamed(self._prog):
            return ["}"]
        prog = self._prog
        if not self._pipelined(prog):
            return ["}", "oarlock_stream_fence();", "}"]
        # the thread's last row: its last pass now, in the same chunks
        assert prog.n is not None
        w = self.chunk(prog, -1)
        main = prog.n - prog.n % w
        last = [f"for (int64_t jj = 0; jj < {main}; jj += {w}) {{", "    " + self._DEFER.format(w), "}"]
        if prog.n % w:
            last += ["{", f"    const int64_t jj = {main};", "    " + self._DEFER.format("N - jj"), "}"]
        prv = [
            f"const {self.ctype(prog.outputs[k].dtype)}* restrict prv{k} = pb ? sa{k} : sb{k};"
            for k in sorted(self._spilled(prog))
        ]
        return ["}", "{", *prv, *last, "}", "oarlock_stream_fence();", "}"]

    def loop_begin(self, reductions: list[tuple[ir.Node, str]]) -> list[str]:
        loop = "for (int64_t j = 0; j < N; ++j) {"
        if any(r.attr in ("argmax", "argmin") for r, _ in reductions):
            return [loop]
        clauses = []
        for r, acc in reductions:
            if r.args[0].dtype == ir.BOOL:
                clauses.append(f"reduction({'|' if r.attr == 'max' else '&'}:{acc})")
            else:
                clauses.append(f"reduction({ {'sum': '+', 'prod': '*'}.get(r.attr, r.attr) }:{acc})")
            if r.attr in ("max", "min") and is_float(r.args[0].dtype):
                clauses.append(f"reduction(|:nan{r.id})")
        return [" ".join(["#pragma omp simd", *clauses]), loop]


class _GroupEmitter(Emitter):
    """One work-group per row: shared by OpenCL C and CUDA C.

    The launch has exactly ``rows`` groups, so there is no early return: PoCL miscompiles a
    return ahead of a barrier even when the whole group takes it.
    """

    barrier = ""
    shared = ""
    index_t = ""

    def loop_begin(self, reductions: list[tuple[ir.Node, str]]) -> list[str]:
        return [f"for ({self.index_t} j = lid; j < N; j += L) {{"]

    def combine(self, reds: list[tuple[ir.Node, str]]) -> list[str]:
        """Each work-item's (accumulator, NaN flag, index) into local memory, then a tree."""
        if not reds:
            return []
        out = []
        for r, acc in reds:
            out.append(f"red{r.id}[lid] = {acc};")
            if _flag(r):
                out.append(f"{_flag(r)}s{r.id}[lid] = {_flag(r)}{r.id};")
        out += [self.barrier, "for (int s = L / 2; s > 0; s >>= 1) {", "    if (lid < s) {"]
        for r, _ in reds:
            out += ["        " + line for line in self.merge(r)]
        out += ["    }", "    " + self.barrier, "}"]
        for r, _ in reds:
            v = self.finish(r, f"red{r.id}[0]", f"idxs{r.id}[0]", f"nans{r.id}[0]")
            out.append(f"const {self.ctype(r.dtype)} v{r.id} = {v};")
        return out

    def merge(self, r: ir.Node) -> list[str]:
        """Fold work-item ``lid + s``'s partial reduction into ``lid``'s."""
        i, src, kind = r.id, r.args[0].dtype, r.attr
        a, b = f"red{i}[lid]", f"red{i}[lid + s]"
        if kind in ("sum", "prod"):
            return [f"{a} {'+' if kind == 'sum' else '*'}= {b};"]
        if kind in ("argmax", "argmin"):
            cmp = ">" if kind == "argmax" else "<"
            ia, ib = f"idxs{i}[lid]", f"idxs{i}[lid + s]"
            take = f"{b} {cmp} {a} || ({b} == {a} && {ib} < {ia})"
            if is_float(src):  # the first NaN wins
                take = f"({b} != {b} && ({a} == {a} || {ib} < {ia})) || ({a} == {a} && ({take}))"
            return [f"if ({take}) {{ {a} = {b}; {ia} = {ib}; }}"]
        if src == ir.BOOL:
            return [f"{a} {'|' if kind == 'max' else '&'}= {b};"]
        out = [f"{a} = {b} {'>' if kind == 'max' else '<'} {a} ? {b} : {a};"]
        return out + [f"nans{i}[lid] |= nans{i}[lid + s];"] if is_float(src) else out

    def row_store(self, k: int, name: str) -> str:
        return f"if (lid == 0) out{k}[r] = {name};"

    def shared_decls(self, prog: ir.Program) -> list[str]:
        out = []
        for n in ir.live_nodes(prog.outputs):
            if n.op == "reduce":
                out.append(f"{self.shared} {self._acc_type(n)} red{n.id}[L];")
                if _flag(n) == "idx":
                    out.append(f"{self.shared} int64_t idxs{n.id}[L];")
                elif _flag(n) == "nan":
                    out.append(f"{self.shared} int nans{n.id}[L];")
        return out

    def row_end(self) -> list[str]:
        return []


#: C's fixed-width names in the GPU languages (their helpers are written in C)
_TYPEDEFS = {
    "opencl-c": "typedef char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t;\n"
    "typedef uchar uint8_t; typedef ushort uint16_t; typedef uint uint32_t; typedef ulong uint64_t;\n"
    "#define INT64_MIN (-9223372036854775807L - 1)",
    # NOTE: long is 64 bits on the device as on the (LP64) host; these match glibc's
    "cuda": "typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t;\n"
    "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;\n"
    "typedef unsigned long uint64_t;\n#ifndef INT64_MIN\n#define INT64_MIN (-9223372036854775807L - 1)\n#endif\n"
    "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
    "#ifndef NAN\n#define NAN __int_as_float(0x7fc00000)\n#endif",
}

# float16 / bfloat16 in OpenCL C: values in float (or double: V), rounded once to nearest even
# when stored (vstore_half_rte; bfloat16 through a round-to-odd float, so a double rounds once).
_CL_HALF = r"""
V oarlock_h2d(ushort h) { return (V)vload_half(0, (const half*)&h); }
ushort oarlock_d2h(V x) { ushort h; vstore_half_rte(x, 0, (half*)&h); return h; }
V oarlock_b2d(ushort b) { return (V)as_float((uint)b << 16); }
ushort oarlock_d2b(V x) {
    float f = convert_float_rtz(x);
    uint u = as_uint(f);
    if ((V)f != x && f == f && !isinf(f)) u |= 1;
    if (f != f) return (ushort)((u >> 16) | 0x40);
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}"""


def _gpu_helpers(progs: list[ir.Program], language: str, half: str) -> list[str]:
    """The C helpers a program needs, in OpenCL C or CUDA C (same code, other qualifiers)."""
    lines = _TYPEDEFS[language].splitlines()
    for h in needed_helpers(progs):
        src = {"half": half, "philox": _C_PHILOX, "int": _C_INT}[h]
        if language == "cuda":
            src = src.replace("static inline", "static __device__ inline")
        else:  # OpenCL C: plain functions
            src = src.replace("static inline ", "")
        lines += src.splitlines()
    return lines


class OpenCLEmitter(_GroupEmitter):
    """OpenCL C: work-group of ``L`` work-items per row. Every dtype: bool is a byte in
    memory, float16/bfloat16 their bits, computed in float (double when the program has
    float64) and rounded once when stored."""

    language = "opencl-c"
    fn_suffix_float = ""
    barrier = "barrier(CLK_LOCAL_MEM_FENCE);"
    shared = "__local"
    index_t = "int"
    bool_storage = "uchar"
    primitives = True

    def _fp64(self, prog: ir.Program) -> bool:
        """Whether the program needs doubles: float64 values, or arange/philox (exact in double)."""
        progs = self.programs(prog)
        dts = {d for p in progs for d, _, _ in p.inputs} | {n.dtype for p in progs for n in p.nodes}
        return np.dtype(np.float64) in dts or any(
            n.op in ("arange", "philox") for p in progs for n in p.nodes
        )

    def inf(self, dt: np.dtype) -> str:
        return f"(({self.ctype(dt)})INFINITY)"

    def nan(self, dt: np.dtype) -> str:
        return f"(({self.ctype(dt)})NAN)"

    def source(self, prog: ir.Program, entry: str, prologue: bool = True) -> str:
        self.half_t = "double" if self._fp64(prog) else "float"
        return super().source(prog, entry, prologue)

    def literal(self, v: object, dt: np.dtype) -> str:
        if dt.name in HALVES and self.half_t == "float" and math.isfinite(float(v)):  # type: ignore[arg-type]
            return f"{float(np.float32(v))!r}f"  # a double literal would make calls ambiguous
        return super().literal(v, dt)

    def prologue(self, prog: ir.Program) -> list[str]:
        self.half_t = "double" if self._fp64(prog) else "float"
        fp64 = ["#pragma OPENCL EXTENSION cl_khr_fp64 : enable"] if self._fp64(prog) else []
        half = _CL_HALF.replace("(V)", f"({self.half_t})").replace("V ", f"{self.half_t} ")
        return [
            "/* generated by framework.compiler */",
            *fp64,
            f"#define L {self.local}",
            *_gpu_helpers(self.programs(prog), self.language, half),
        ]

    def expr(self, n: ir.Node, a: list[str], load: str) -> str:
        if n.op == "cast" and n.dtype.kind in "iu" and is_float(n.args[0].dtype):
            # NOTE: out-of-range and NaN are undefined for a C cast; saturate, then wrap
            return f"(({self.ctype(n.dtype)})convert_long_sat_rtz({a[0]}))"
        return super().expr(n, a, load)

    native = {"rsqrt": "rsqrt({0})"}

    def signature(self, prog: ir.Program, entry: str) -> str:
        ps = self.params(prog, "__global {T}* restrict", "__global const {T}* restrict", "long")
        return f"__kernel __attribute__((reqd_work_group_size(L, 1, 1))) void {entry}({ps})"

    def row_begin(self, prog: ir.Program) -> tuple[list[str], list[str]]:
        return [], [
            *self.shared_decls(prog),
            "const long r = get_group_id(0);",
            "const int lid = get_local_id(0);",
        ]


# exp in float for a loop the driver vectorises: PoCL's scalar exp is a call its loop
# vectoriser cannot widen (softmax ran 15x a copy), this is plain arithmetic it can.
# Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2, Cephes' degree-7 polynomial, 2^k put into
# the exponent bits (and one multiply by 2^-30..1 for subnormal results, so reassociation
# cannot overflow an intermediate). Against float64 exp over [-110, 95]: at most 1.0 ulp
# (rel. 8.3e-8); exp(-inf) = 0, exp(+inf) = inf, NaN stays NaN, inf from the first float past
# ln(FLT_MAX), subnormal results down to 0 (tests/opencl/test_opencl_row_exp.py).
_CL_EXPF = r"""
__attribute__((always_inline)) float oarlock_expf(float x) {
    float c = x < -104.0f ? -104.0f : x;
    c = c > 89.0f ? 89.0f : c;
    const float t = c * 1.44269504088896341f;
    const int k = (int)(t + (t < 0.0f ? -0.5f : 0.5f));
    const float n = (float)k;
    float r = c - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = (p * r) * r + r + 1.0f;
    const int ka = k < -120 ? -120 : k;
    p = as_float(as_int(p) + (ka << 23)) * as_float((k - ka + 127) << 23);
    return x != x ? x : x >= 88.72283935546875f ? ((float)INFINITY) : p;
}"""


# tanh in float from the exp above, for the same reason (silu = x * sigmoid runs through tanh:
# 20x a copy on PoCL with the driver's). Cephes' tanhf: x + x^3 P(x^2) below |x| = 0.625, else
# 1 - 2 / (exp(2|x|) + 1) with x's sign; both are computed and one is selected, so the loop
# stays branch-free. Against float64 tanh over [-20, 20]: at most 2 ulp
# (tests/opencl/test_opencl_row_exp.py); +-1 past |x| ~ 9, NaN stays NaN, -0 stays -0.
_CL_TANHF = r"""
__attribute__((always_inline)) float oarlock_tanhf(float x) {
    const float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    const float small = p * z * x + x;
    const float a = x < 0.0f ? -x : x;
    const float t = 1.0f - 2.0f / (oarlock_expf(2.0f * a) + 1.0f);
    return a < 0.625f ? small : x < 0.0f ? -t : t;
}"""

# erf in float (the exact gelu), from the row exp too: x + x P(x^2) below |x| = 1, else
# 1 - exp(-x^2) Q(1/|x|) with x's sign, 1 past |x| = 4 (where erf rounds to 1). P and Q were
# fitted for this file (numpy, least squares of the relative error on Chebyshev nodes: erf(x)/x
# - 1 of degree 6 in x^2 on [0, 1], 1.2e-9; erfc(t) exp(t^2) of degree 8 in 1/t on [1, 4],
# 7.8e-8). Against float64 erf over [-6, 6]: at most 2 ulp (tests/opencl/test_opencl_row_exp.py).
_CL_ERFF = (
    "\n"
    + """__attribute__((always_inline)) float oarlock_erff(float x) {
    const float a = x < 0.0f ? -x : x;
    const float z = x * x;
    float p = 7.847262168070301e-05f;
    p = p * z - 0.0008008193108253181f;
    p = p * z + 0.0051880995742976665f;
    p = p * z - 0.026853691786527634f;
    p = p * z + 0.1128358244895935f;
    p = p * z - 0.3761262595653534f;
    p = p * z + 0.12837916612625122f;
    const float small = p * x + x;
    const float u = 1.0f / (a > 1.0f ? a : 1.0f);
    float q = -0.010076413862407207f;
    q = q * u + 0.03165923431515694f;
    q = q * u + 0.017203914001584053f;
    q = q * u - 0.23425890505313873f;
    q = q * u + 0.4915410876274109f;
    q = q * u - 0.4692467749118805f;
    q = q * u + 0.041353754699230194f;
    q = q * u + 0.559144139289856f;
    q = q * u + 0.0002635122509673238f;
    const float big = a >= 4.0f ? 1.0f : 1.0f - oarlock_expf(-z) * q;
    return a < 1.0f ? small : x < 0.0f ? -big : big;
}"""
)

#: float functions of the row emitter spelt as plain arithmetic: name -> (function, its source,
#: what it needs first). NOTE: always inlined: PoCL's inliner leaves erf's call of exp a call,
#: and a call keeps the row loop scalar (the exact gelu ran at 12-25x a copy).
_CL_ROW_MATH = {
    "exp": ("oarlock_expf", _CL_EXPF, ()),
    "tanh": ("oarlock_tanhf", _CL_TANHF, ("exp",)),
    "erf": ("oarlock_erff", _CL_ERFF, ("exp",)),
}


class OpenCLRowEmitter(_RowLoops, OpenCLEmitter):
    """OpenCL C for CPU devices (PoCL): one work-item per row and a plain loop along it, which
    the driver's compiler vectorises like the C emitter's loops (no barriers, no local memory).
    ``exp``, ``tanh`` and ``erf`` in float are :data:`_CL_ROW_MATH` (the driver's are calls
    that keep the loop scalar)."""

    layout = "rows"
    #: reductions along the row vectorise only when the compiler may reassociate
    build_options = ("-cl-unsafe-math-optimizations",)

    def prologue(self, prog: ir.Program) -> list[str]:
        lines = [s for s in super().prologue(prog) if not s.startswith("#define L")]
        used = {
            n.op
            for p in self.programs(prog)
            for n in p.nodes
            if n.op in _CL_ROW_MATH and self.ctype(n.dtype) == "float"
        }
        for name in list(used):
            used.update(_CL_ROW_MATH[name][2])
        for name, (_, src, _) in _CL_ROW_MATH.items():  # in dependency order
            if name in used:
                lines += src.splitlines()
        return lines

    def fn(self, name: str, dt: np.dtype) -> str:
        if name in _CL_ROW_MATH and self.ctype(dt) == "float":
            return _CL_ROW_MATH[name][0]
        return super().fn(name, dt)

    def signature(self, prog: ir.Program, entry: str) -> str:
        ps = self.params(prog, "__global {T}* restrict", "__global const {T}* restrict", "long")
        return f"__kernel void {entry}({ps})"

    row_loop = True

    def row_begin(self, prog: ir.Program) -> tuple[list[str], list[str]]:
        return ["const long r = get_global_id(0);", "if (r < rows) {"], []

    def row_end(self) -> list[str]:
        return ["}"]

    def loop_begin(self, reductions: list[tuple[ir.Node, str]]) -> list[str]:
        return ["for (int j = 0; j < N; ++j) {"]

    def combine(self, reds: list[tuple[ir.Node, str]]) -> list[str]:
        return Emitter.combine(self, reds)

    def row_store(self, k: int, name: str) -> str:
        return f"out{k}[r] = {name};"


class CUDAEmitter(_GroupEmitter):
    """CUDA C++ (NVRTC): a block of ``L`` threads per row; every dtype, as the C emitter
    (float16/bfloat16 computed in double, rounded once when stored)."""

    language = "cuda"
    barrier = "__syncthreads();"
    shared = "__shared__"
    index_t = "int"
    primitives = True

    def prologue(self, prog: ir.Program) -> list[str]:
        half = _C_HALF.replace(
            "union { uint32_t u; float f; } v; v.u = (uint32_t)b << 16; return v.f;",
            "return __uint_as_float((uint32_t)b << 16);",
        )
        half = half.replace(
            "union { uint32_t u; float f; } v; v.f = (float)r; return s | (uint16_t)(v.u >> 16);",
            "return s | (uint16_t)(__float_as_uint((float)r) >> 16);",
        )
        return [
            "/* generated by framework.compiler */",
            f"#define L {self.local}",
            *_gpu_helpers(self.programs(prog), self.language, half),
        ]

    def inf(self, dt: np.dtype) -> str:
        return (
            "__int_as_float(0x7f800000)" if dt == np.float32 else "__longlong_as_double(0x7ff0000000000000LL)"
        )

    def nan(self, dt: np.dtype) -> str:
        return (
            "__int_as_float(0x7fc00000)" if dt == np.float32 else "__longlong_as_double(0x7ff8000000000000LL)"
        )

    native = {"rsqrt": "{fn:rsqrt}({0})"}

    def signature(self, prog: ir.Program, entry: str) -> str:
        ps = self.params(prog, "{T}* __restrict__", "const {T}* __restrict__", "long long")
        return f'extern "C" __global__ void __launch_bounds__(L) {entry}({ps})'

    def row_begin(self, prog: ir.Program) -> tuple[list[str], list[str]]:
        return [], [
            *self.shared_decls(prog),
            "const long long r = blockIdx.x;",
            "const int lid = threadIdx.x;",
        ]


EMITTERS: dict[str, type[Emitter]] = {
    "c": CEmitter,
    "opencl-c": OpenCLEmitter,
    "cuda": CUDAEmitter,
    "opencl-c/cpu": OpenCLRowEmitter,
}
#: work-group size; for the "rows" layout, rows per work-group (PoCL: 64 measured best for rms_norm)
LOCAL_SIZE = {"c": 1, "opencl-c": 64, "cuda": 256, "opencl-c/cpu": 64}


def emitter(
    language: str, local_size: int | None = None, device_kind: str = "", width: int | None = None
) -> Emitter:
    """The emitter for a compiler's ``language`` (``"c"``, ``"opencl-c"``, ``"cuda"``);
    ``device_kind="cpu"`` picks a CPU-shaped variant where there is one; ``width``, the vector
    width of an emitter that chunks its passes (:class:`_RowLoops`), else its default."""
    if device_kind and f"{language}/{device_kind}" in EMITTERS:
        language = f"{language}/{device_kind}"
    try:
        cls = EMITTERS[language]
    except KeyError:
        raise NotImplementedError(
            f"[compiler] no emitter for kernel language {language!r}; known: {sorted(EMITTERS)}"
        ) from None
    em = cls(local_size or LOCAL_SIZE[language])
    if width is not None and isinstance(em, _RowLoops):
        em.width = width
    return em
