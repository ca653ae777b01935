"""The emitter base: a scheduled loop-IR program as the source of one kernel, and the
expression syntax every kernel language shares.

One kernel per program with parameters ``(in0, ..., out0, ..., rows)``. The row length ``N``
is a compile-time constant (it is baked into the decomposition anyway, e.g. ``mean``'s
``1/N``) so inner loops have a known trip count; the number of rows is a runtime argument,
so one program serves every batch size. :class:`Emitter` renders expressions (an op's
``Lowering`` template, or its integer/bool form: :func:`integer_template`), reductions and
the kernel's skeleton; its subclasses say how rows, loops and reductions are laid out
(:mod:`.rows`, :mod:`.c`, :mod:`.gpu`).
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..._src.ops.base import OPS
from .. import loop_ir

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
        return self.bool_storage if dt == loop_ir.BOOL else self.ctype(dt)

    bool_storage = "bool"

    def loaded(self, dt: np.dtype, e: str) -> str:
        return f"oarlock_{HALVES[dt.name]}2d({e})" if dt.name in HALVES else e

    def stored(self, dt: np.dtype, e: str) -> str:
        return f"oarlock_d2{HALVES[dt.name]}({e})" if dt.name in HALVES else e

    def rounded(self, dt: np.dtype, e: str, src: np.dtype) -> str:
        """``e`` (a value of dtype ``src``) cast to the half ``dt``: rounded, read back."""
        return self.loaded(dt, self.stored(dt, f"(({self.ctype(dt)}){e})"))

    def inf(self, dt: np.dtype) -> str:
        return "INFINITY" if dt == np.float32 else "((double)INFINITY)"

    def nan(self, dt: np.dtype) -> str:
        return "NAN" if dt == np.float32 else "((double)NAN)"

    def literal(self, v: object, dt: np.dtype) -> str:
        if dt == loop_ir.BOOL:
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
    def expr(self, n: loop_ir.Node, a: list[str], load: str) -> str:
        op, dt = n.op, n.dtype
        T = self.ctype(dt)
        if op in ("input", "take"):
            return load
        if op == "const":
            return self.literal(n.attr, dt)
        if op == "cast":
            src = n.args[0].dtype
            if dt == loop_ir.BOOL:
                return f"({a[0]} != 0)"
            if src == loop_ir.BOOL:
                return f"({a[0]} ? {self.literal(1.0, dt)} : {self.literal(0.0, dt)})"
            if dt.kind in "iu" and is_float(src):  # truncate, saturate to the target's range, NaN -> 0
                return self.float_to_int(a[0], src, dt)
            if dt.name in HALVES and dt != src:  # a cast rounds, as eager's: halves are computed wider
                return self.rounded(dt, a[0], src)
            return f"(({T}){a[0]})"
        if op in ("index", "arange", "philox"):
            return self.special(n, a)
        src = n.args[0].dtype if n.args else dt
        typed = integer_template(op, src, T) if not is_float(src) else None
        try:
            template = typed or self.native.get(op) or loop_ir.lowering(op).c
        except KeyError as exc:
            raise NotImplementedError(
                f"[compiler] no {self.language} syntax for IR op '{op}': {exc}"
            ) from None
        return self.render(template, a, dt)

    def float_to_int(self, x: str, src: np.dtype, dt: np.dtype) -> str:
        """The contract's float -> integer cast (adapter_api.primitives, ``cast``): truncate
        toward zero, saturate to ``dt``'s range, NaN -> 0. C leaves an out-of-range conversion
        undefined (x86 gives INT_MIN, OpenCL's plain convert may give INT_MAX), so the bounds
        are tested first; both are powers of two, exact in every float type."""
        T = self.ctype(dt)
        info = np.iinfo(dt)
        fd = np.dtype(np.float64) if src == np.float64 else np.dtype(np.float32)
        lo, hi = self.literal(float(info.min), fd), self.literal(float(info.max) + 1.0, fd)
        lo_t, hi_t = self.literal(info.min, dt), self.literal(info.max, dt)
        return f"({x} != {x} ? ({T})0 : {x} < {lo} ? {lo_t} : {x} >= {hi} ? {hi_t} : ({T})({x}))"

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

    def special(self, n: loop_ir.Node, a: list[str]) -> str:
        T = self.ctype(n.dtype)
        if n.op == "index":
            return "((int64_t)(r * N + j))"
        if n.op == "arange":
            start, step = n.attr
            if n.dtype.kind in "iu" or n.dtype == loop_ir.BOOL:
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
    def _acc_type(self, r: loop_ir.Node) -> str:
        src = r.args[0].dtype
        if r.attr in ("sum", "prod") and src.kind in "iu":
            return "uint64_t" if src.itemsize == 8 else "uint32_t"
        return "int" if src == loop_ir.BOOL else self.ctype(src)

    def _red_init(self, r: loop_ir.Node) -> str:
        src = r.args[0].dtype
        kind = {"argmax": "max", "argmin": "min"}.get(r.attr, r.attr)
        return ("0" if kind == "max" else "1") if src == loop_ir.BOOL else self.init(kind, src)

    def red_decl(self, r: loop_ir.Node, acc: str) -> list[str]:
        src = r.args[0].dtype
        out = [f"{self._acc_type(r)} {acc} = {self._red_init(r)};"]
        if r.attr in ("argmax", "argmin"):
            out.append(f"int64_t idx{r.id} = 0;")
        elif r.attr in ("max", "min") and is_float(src):
            out.append(f"int nan{r.id} = 0;")
        return out

    def red_update(self, r: loop_ir.Node, acc: str, e: str, lane: str = "") -> list[str]:
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
        if src == loop_ir.BOOL:
            return [f"{acc} {'|' if kind == 'max' else '&'}= {e};"]
        out = [self.update(kind, acc, e)]
        return out + [f"nan{r.id}{lane} |= {e} != {e};"] if is_float(src) else out

    def finish(self, r: loop_ir.Node, acc: str, idx: str, nan: str) -> str:
        """The row's value of reduction ``r`` from its accumulator (and index, NaN flag)."""
        if r.attr in ("argmax", "argmin"):
            return idx
        if r.attr in ("max", "min") and is_float(r.dtype):
            return f"{nan} ? {self.nan(r.dtype)} : {acc}"
        return f"({self.ctype(r.dtype)}){acc}"

    # -- layout hooks (per language) ----------------------------------------------------
    def prologue(self, prog: loop_ir.Program) -> list[str]:
        raise NotImplementedError

    def signature(self, prog: loop_ir.Program, entry: str) -> str:
        raise NotImplementedError

    def row_begin(self, prog: loop_ir.Program) -> tuple[list[str], list[str]]:
        """(lines that open the per-row scope, first lines inside it)."""
        raise NotImplementedError

    def row_end(self) -> list[str]:
        return ["}"]

    def _flat(self, prog: loop_ir.Program) -> bool:
        """Whether ``prog`` is emitted as one loop over every element rather than row by row."""
        return False

    def loop_begin(self, reductions: list[tuple[str, str]]) -> list[str]:
        raise NotImplementedError

    def lanes(self, prog: loop_ir.Program, reds: list[tuple[loop_ir.Node, str]]) -> int:
        """Partial accumulators per reduction of a loop (1: one, in the loop's own form)."""
        return 1

    def lane_decl(self, r: loop_ir.Node, acc: str, lanes: int) -> list[str]:
        raise NotImplementedError

    def loop(
        self,
        prog: loop_ir.Program,
        li: int,
        reds: list[tuple[loop_ir.Node, str]],
        inner: list[str],
        lanes: int,
    ) -> list[str]:
        """Pass ``li`` along the row around its body ``inner``."""
        return [*self.loop_begin(reds), *("    " + s for s in inner), "}"]

    def combine(self, reds: list[tuple[loop_ir.Node, str]]) -> list[str]:
        """After a loop: turn each work-item's accumulator into the row's value."""
        return [
            f"const {self.ctype(r.dtype)} v{r.id} = {self.finish(r, acc, f'idx{r.id}', f'nan{r.id}')};"
            for r, acc in reds
        ]

    def row_store(self, k: int, name: str) -> str:
        return f"out{k}[r] = {name};"

    def store_target(self, prog: loop_ir.Program, k: int) -> str:
        return f"out{k}[r * N + j]"

    def spill_at(self, prog: loop_ir.Program, k: int) -> str:
        """Where a value kept for a later pass (:func:`plan_spills`) lives: output ``k``'s row."""
        return f"out{k}[r * N + j]"

    def after_stores(self, prog: loop_ir.Program, stores: list[tuple[int, loop_ir.Node]]) -> list[str]:
        return []

    def chunk_suffix(self, prog: loop_ir.Program, li: int, count: str) -> list[str]:
        """Lines after each chunk of pass ``li`` (``count`` elements, from ``jj``)."""
        return []

    def note_pass(self, prog: loop_ir.Program, li: int, inner: list[str]) -> None:
        """Pass ``li``'s body ``inner`` is ready, before :meth:`loop` wraps it."""

    # -- batches ------------------------------------------------------------------------
    #: how several kernels share one build: "entries" (each is an entry point of one program)
    #: or "dispatch" (one entry point switching on a kernel number: C, whose binaries load
    #: one entry each)
    batch = "entries"
    _batch: list[loop_ir.Program] = []

    def programs(self, prog: loop_ir.Program) -> list[loop_ir.Program]:
        """The programs a prologue serves: ``prog``, or every program of the batch being emitted."""
        return self._batch or [prog]

    def batch_source(self, progs: list[tuple[loop_ir.Program, str]], entry: str) -> str:
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

    def dispatcher(self, progs: list[tuple[loop_ir.Program, str]], entry: str) -> list[str]:
        raise NotImplementedError(f"[compiler] {self.language}: no dispatching batch")

    # -- the kernel ---------------------------------------------------------------------
    def source(self, prog: loop_ir.Program, entry: str, prologue: bool = True) -> str:
        sched = loop_ir.schedule(prog)
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
        reduced = [r.args[0] for lp in sched.loops for r in lp.reductions]
        nodes = {
            n.id: n for n in loop_ir.live_nodes(reduced + [n for lp in sched.loops for _, n in lp.stores])
        }
        for li, loop in enumerate(sched.loops):
            reload = {i: k for i, (k, at) in spills.items() if at < li}
            roots = [r.args[0] for r in loop.reductions] + [n for _, n in loop.stores]
            order: list[loop_ir.Node] = []
            seen: set[int] = set(reload)
            for n in roots:
                self._collect(n, seen, order, body)
            # a value this pass keeps for a later one is computed here even where the pass's own
            # roots reach it only through a value it reloads (plan_spills' closure ignores reloads)
            for i, (_, at) in spills.items():
                if at == li and i not in reload:
                    self._collect(nodes[i], seen, order, body)
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
        self, prog: loop_ir.Program, reds: list[tuple[loop_ir.Node, str]], lanes: int, shifts: list[int]
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

    def _load(self, n: loop_ir.Node) -> str:
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

    def _row_value(self, n: loop_ir.Node, out: list[str]) -> None:
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

    def _collect(self, n: loop_ir.Node, seen: set[int], order: list[loop_ir.Node], body: list[str]) -> None:
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

    def params(self, prog: loop_ir.Program, ptr: str, cptr: str, size_t: str) -> str:
        ps = [f"{cptr.format(T=self.storage(d))} in{k}" for k, (d, _, _) in enumerate(prog.inputs)]
        ps += [f"{ptr.format(T=self.storage(o.dtype))} out{k}" for k, o in enumerate(prog.outputs)]
        ps.append(f"{size_t} rows")
        if prog.n is None:
            ps.append(f"{size_t} n")
        return ", ".join(ps)


def _costly_op(op: str) -> bool:
    d = loop_ir.OPS.get(op)
    return d is not None and d.lower is not None and d.lower.costly


def plan_spills(prog: loop_ir.Program, sched: loop_ir.Schedule) -> dict[int, tuple[int, int]]:
    """Values worth keeping in an output row instead of recomputing them in a later pass.

    When a transcendental element value (softmax's ``exp(x - max)``) is computed in an
    earlier pass and needed again by the pass that stores output ``k``, the earlier pass writes
    it into ``out_k`` (the row is still in cache) and the later passes read it back, up to the
    one that stores ``out_k`` (no pass after it may need the value). Returns ``{node id: (output index, pass that writes it)}``.
    """
    if len(sched.loops) < 2:
        return {}
    expensive: dict[int, bool] = {}

    def costly(n: loop_ir.Node) -> bool:
        v = expensive.get(n.id)
        if v is None:
            v = expensive[n.id] = n.col and (_costly_op(n.op) or any(costly(a) for a in n.args))
        return v

    def closure(roots: list[loop_ir.Node]) -> dict[int, loop_ir.Node]:
        out: dict[int, loop_ir.Node] = {}
        stack = [n for n in roots if n.col]
        while stack:
            n = stack.pop()
            if n.id not in out:
                out[n.id] = n
                stack.extend(a for a in n.args if a.col)
        return out

    computed = [closure([r.args[0] for r in lp.reductions] + [n for _, n in lp.stores]) for lp in sched.loops]
    # the last pass that reads each value: a value kept in out_k must not be needed after the
    # pass that stores out_k, which overwrites it (softmax's exp kept in the row of an output
    # stored in the second of three passes, then read back by the third, read the output)
    last_use = {i: li for li, seen in enumerate(computed) for i in seen}
    spills: dict[int, tuple[int, int]] = {}
    for li, lp in enumerate(sched.loops):
        for k, store in lp.stores:
            best: tuple[int, int] | None = None
            for n in closure([store]).values():
                if (
                    n.dtype != prog.outputs[k].dtype
                    or n.dtype not in loop_ir.FLOATS
                    or not costly(n)
                    or n.id in spills
                    or last_use[n.id] > li
                ):
                    continue
                earlier = [lj for lj in range(li) if n.id in computed[lj]]
                if earlier and (best is None or n.id > best[0]):
                    best = (n.id, max(earlier))
            if best is not None:
                spills[best[0]] = (k, best[1])
    return spills


def _flag(r: loop_ir.Node) -> str:
    """The extra per-work-item state of reduction ``r``: "idx" (arg*), "nan" (float max/min) or ""."""
    if r.attr in ("argmax", "argmin"):
        return "idx"
    return "nan" if r.attr in ("max", "min") and is_float(r.args[0].dtype) else ""
