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

import numpy as np

from . import ir

#: a field of a Lowering template: {0}, {fn:exp}, {one}, {zero}
_FIELD = re.compile(r"\{(\d|fn:\w+|one|zero)\}")


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
    def ctype(self, dt: np.dtype) -> str:
        if dt == ir.BOOL:
            return "bool"
        return "float" if dt == np.float32 else "double"

    def inf(self, dt: np.dtype) -> str:
        return "INFINITY" if dt == np.float32 else "((double)INFINITY)"

    def nan(self, dt: np.dtype) -> str:
        return "NAN" if dt == np.float32 else "((double)NAN)"

    def literal(self, v: object, dt: np.dtype) -> str:
        if dt == ir.BOOL:
            return "true" if v else "false"
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
        if op == "input":
            return load
        if op == "const":
            return self.literal(n.attr, dt)
        if op == "cast":
            src = n.args[0].dtype
            if dt == ir.BOOL:
                return f"({a[0]} != 0)"
            if src == ir.BOOL:
                return f"({a[0]} ? {self.literal(1.0, dt)} : {self.literal(0.0, dt)})"
            return f"(({T}){a[0]})"
        try:
            template = self.native.get(op) or ir.lowering(op).c
        except KeyError as exc:
            raise NotImplementedError(f"[compiler] no {self.language} syntax for IR op '{op}': {exc}") from None
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

    def update(self, kind: str, acc: str, e: str) -> str:
        if kind == "sum":
            return f"{acc} += {e};"
        cmp = ">" if kind == "max" else "<"
        return f"{acc} = {e} {cmp} {acc} ? {e} : {acc};"

    def init(self, kind: str, dt: np.dtype) -> str:
        v = {"sum": 0.0, "max": -math.inf, "min": math.inf}[kind]
        return self.literal(v, dt)

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

    def loop_begin(self, reductions: list[tuple[str, str]]) -> list[str]:
        raise NotImplementedError

    def combine(self, reds: list[tuple[ir.Node, str]]) -> list[str]:
        """After a loop: turn each work-item's accumulator into the row's value."""
        return [f"const {self.ctype(r.dtype)} v{r.id} = {acc};" for r, acc in reds]

    def row_store(self, k: int, name: str) -> str:
        return f"out{k}[r] = {name};"

    def store_target(self, prog: ir.Program, k: int) -> str:
        return f"out{k}[r * N + j]"

    def after_stores(self, prog: ir.Program, stores: list[tuple[int, ir.Node]]) -> list[str]:
        return []

    # -- the kernel ---------------------------------------------------------------------
    def source(self, prog: ir.Program, entry: str) -> str:
        sched = ir.schedule(prog)
        spills = plan_spills(prog, sched)
        head = [*self.prologue(prog), f"#define N {prog.n}", self.signature(prog, entry) + " {"]
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
            for r, acc in reds:
                body.append(f"{self.ctype(r.dtype)} {acc} = {self.init(r.attr, r.dtype)};")
            body.extend(self.loop_begin([(r.attr, acc) for r, acc in reds]))
            for i, k in reload.items():
                used = [a.id for n in order for a in n.args] + [n.id for _, n in loop.stores]
                if i in used or any(r.args[0].id == i for r in loop.reductions):
                    body.append(f"    const {self.ctype(prog.outputs[k].dtype)} v{i} = out{k}[r * N + j];")
            for n in order:
                e = self.expr(n, [f"v{a.id}" for a in n.args], self._load(n))
                body.append(f"    const {self.ctype(n.dtype)} v{n.id} = {e};")
            for r, acc in reds:
                body.append("    " + self.update(r.attr, acc, f"v{r.args[0].id}"))
            for i, (k, at) in spills.items():
                if at == li:
                    body.append(f"    out{k}[r * N + j] = v{i};  /* kept for a later pass */")
            for k, n in loop.stores:
                body.append(f"    {self.store_target(prog, k)} = v{n.id};")
            body.append("}")
            body.extend(self.after_stores(prog, loop.stores))
            body.extend(self.combine(reds))
            self._done.update(r.id for r, _ in reds)
        for k, n in sched.row_stores:
            if n.op != "reduce":
                self._row_value(n, body)
            body.append(self.row_store(k, f"v{n.id}"))
        lines = head + ["    " + s for s in opening]
        inner = "        " if self.row_loop else "    "
        lines += [inner + s for s in body]
        lines += ["    " + s for s in self.row_end()]
        lines.append("}")
        return "\n".join(lines) + "\n"

    row_loop = False

    @staticmethod
    def _load(n: ir.Node) -> str:
        k = n.attr
        if n.row and n.col:
            return f"in{k}[r * N + j]"
        if n.col:
            return f"in{k}[j]"
        return f"in{k}[r]" if n.row else f"in{k}[0]"

    def _row_value(self, n: ir.Node, out: list[str]) -> None:
        """Emit a value that is constant along the row, once per row (hoisted out of loops)."""
        if n.id in self._done:
            return
        if n.op == "reduce":
            raise AssertionError(f"reduction v{n.id} used before its loop")
        for a in n.args:
            self._row_value(a, out)
        out.append(f"const {self.ctype(n.dtype)} v{n.id} = {self.expr(n, [f'v{a.id}' for a in n.args], self._load(n))};")
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
        ps = [f"{cptr.format(T=self.ctype(d))} in{k}" for k, (d, _, _) in enumerate(prog.inputs)]
        ps += [f"{ptr.format(T=self.ctype(o.dtype))} out{k}" for k, o in enumerate(prog.outputs)]
        ps.append(f"{size_t} rows")
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
                if n.dtype != prog.outputs[k].dtype or not costly(n) or n.id in spills:
                    continue
                earlier = [lj for lj in range(li) if n.id in computed[lj]]
                if earlier and (best is None or n.id > best[0]):
                    best = (n.id, max(earlier))
            if best is not None:
                spills[best[0]] = (k, best[1])
    return spills


# Non-temporal row writes: the output goes to memory without first reading its cache lines.
_STREAM = r"""
#include <string.h>
#if defined(__AVX__)
#include <immintrin.h>
static inline void oarlock_stream_f32(float* restrict d, const float* restrict s, int64_t n) {
    int64_t j = 0;
    for (; j < n && ((uintptr_t)(d + j) & 31); ++j) d[j] = s[j];
    for (; j + 8 <= n; j += 8) _mm256_stream_ps(d + j, _mm256_loadu_ps(s + j));
    for (; j < n; ++j) d[j] = s[j];
    _mm_sfence();
}
static inline void oarlock_stream_f64(double* restrict d, const double* restrict s, int64_t n) {
    int64_t j = 0;
    for (; j < n && ((uintptr_t)(d + j) & 31); ++j) d[j] = s[j];
    for (; j + 4 <= n; j += 4) _mm256_stream_pd(d + j, _mm256_loadu_pd(s + j));
    for (; j < n; ++j) d[j] = s[j];
    _mm_sfence();
}
#else
static inline void oarlock_stream_f32(float* d, const float* s, int64_t n) { memcpy(d, s, n * sizeof(float)); }
static inline void oarlock_stream_f64(double* d, const double* s, int64_t n) { memcpy(d, s, n * sizeof(double)); }
#endif"""


class CEmitter(Emitter):
    """C99 for the host: OpenMP threads across rows, SIMD along the row."""

    language = "c"
    layout = "rows"
    PARALLEL_MIN = 1 << 18  #: elements below which a launch runs on the calling thread

    def prologue(self, prog: ir.Program) -> list[str]:
        return [
            "/* generated by framework.compiler */",
            "#ifdef OARLOCK_VECTOR_MATH",
            "#define __FAST_MATH__ 1 /* declares glibc's vector expf/logf... for omp simd */",
            "#endif",
            "#include <math.h>",
            "#include <stdbool.h>",
            "#include <stdint.h>",
            *_STREAM.splitlines(),
        ]

    def signature(self, prog: ir.Program, entry: str) -> str:
        return f"void {entry}({self.params(prog, '{T}* restrict', 'const {T}* restrict', 'int64_t')})"

    row_loop = True

    def row_begin(self, prog: ir.Program) -> tuple[list[str], list[str]]:
        # NOTE: small launches stay on one thread: waking the team costs more than the work,
        # and far more when other processes hold the cores.
        body = []
        for k in self._streamed(prog):
            T = self.ctype(prog.outputs[k].dtype)
            body.append(f"{T} st{k}[N] __attribute__((aligned(64)));")
            body.append(f"{T}* restrict dst{k} = stream ? st{k} : out{k} + r * N;")
        return [f"const bool stream = rows * N * {self._itemsize(prog)} >= {self.STREAM_MIN};",
                f"#pragma omp parallel for schedule(static) if (rows * N > {self.PARALLEL_MIN})",
                "for (int64_t r = 0; r < rows; ++r) {"], body

    #: output bytes from which rows are written with non-temporal stores (they would only
    #: evict the inputs from the cache, and a plain store first reads the line)
    STREAM_MIN = 8 << 20
    STREAM_ROW_MAX = 32 << 10  #: the per-thread row buffer must stay in L1/L2

    @staticmethod
    def _itemsize(prog: ir.Program) -> int:
        return max(o.dtype.itemsize for o in prog.outputs)

    def _streamed(self, prog: ir.Program) -> list[int]:
        if prog.n < 64 or prog.n * self._itemsize(prog) > self.STREAM_ROW_MAX:
            return []
        sched = ir.schedule(prog)
        last = sched.loops[-1].stores if sched.loops else []
        return [k for k, _ in last]

    def store_target(self, prog: ir.Program, k: int) -> str:
        return f"dst{k}[j]" if k in self._streamed(prog) else f"out{k}[r * N + j]"

    def after_stores(self, prog: ir.Program, stores: list[tuple[int, ir.Node]]) -> list[str]:
        ks = [k for k, _ in stores if k in self._streamed(prog)]
        if not ks:
            return []
        out = ["if (stream) {"]
        for k in ks:
            fn = "oarlock_stream_f32" if prog.outputs[k].dtype == np.float32 else "oarlock_stream_f64"
            out.append(f"    {fn}(out{k} + r * N, st{k}, N);")
        out.append("}")
        return out

    def loop_begin(self, reductions: list[tuple[str, str]]) -> list[str]:
        clauses = "".join(f" reduction({'+' if k == 'sum' else k}:{acc})" for k, acc in reductions)
        return [f"#pragma omp simd{clauses}", "for (int64_t j = 0; j < N; ++j) {"]


class _GroupEmitter(Emitter):
    """One work-group per row: shared by OpenCL C and CUDA C.

    The launch has exactly ``rows`` groups, so there is no early return: PoCL miscompiles a
    return ahead of a barrier even when the whole group takes it.
    """

    barrier = ""
    shared = ""
    index_t = ""

    def loop_begin(self, reductions: list[tuple[str, str]]) -> list[str]:
        return [f"for ({self.index_t} j = lid; j < N; j += L) {{"]

    def combine(self, reds: list[tuple[ir.Node, str]]) -> list[str]:
        if not reds:
            return []
        out = [f"red{r.id}[lid] = {acc};" for r, acc in reds]
        out.append(self.barrier)
        out.append("for (int s = L / 2; s > 0; s >>= 1) {")
        out.append("    if (lid < s) {")
        for r, _ in reds:
            a, b = f"red{r.id}[lid]", f"red{r.id}[lid + s]"
            if r.attr == "sum":
                out.append(f"        {a} += {b};")
            else:
                cmp = ">" if r.attr == "max" else "<"
                out.append(f"        {a} = {b} {cmp} {a} ? {b} : {a};")
        out.append("    }")
        out.append("    " + self.barrier)
        out.append("}")
        out += [f"const {self.ctype(r.dtype)} v{r.id} = red{r.id}[0];" for r, _ in reds]
        return out

    def row_store(self, k: int, name: str) -> str:
        return f"if (lid == 0) out{k}[r] = {name};"

    def shared_decls(self, prog: ir.Program) -> list[str]:
        nodes = ir.live_nodes(prog.outputs)
        return [f"{self.shared} {self.ctype(n.dtype)} red{n.id}[L];" for n in nodes if n.op == "reduce"]

    def row_end(self) -> list[str]:
        return []


class OpenCLEmitter(_GroupEmitter):
    """OpenCL C: work-group of ``L`` work-items per row."""

    language = "opencl-c"
    fn_suffix_float = ""
    barrier = "barrier(CLK_LOCAL_MEM_FENCE);"
    shared = "__local"
    index_t = "int"

    def prologue(self, prog: ir.Program) -> list[str]:
        dts = {d for d, _, _ in prog.inputs} | {n.dtype for n in prog.nodes}
        fp64 = ["#pragma OPENCL EXTENSION cl_khr_fp64 : enable"] if np.dtype(np.float64) in dts else []
        return ["/* generated by framework.compiler */", *fp64, f"#define L {self.local}"]

    native = {"rsqrt": "rsqrt({0})"}

    def signature(self, prog: ir.Program, entry: str) -> str:
        ps = self.params(prog, "__global {T}* restrict", "__global const {T}* restrict", "long")
        return f"__kernel __attribute__((reqd_work_group_size(L, 1, 1))) void {entry}({ps})"

    def row_begin(self, prog: ir.Program) -> tuple[list[str], list[str]]:
        return [], [*self.shared_decls(prog), "const long r = get_group_id(0);", "const int lid = get_local_id(0);"]


class OpenCLRowEmitter(OpenCLEmitter):
    """OpenCL C for CPU devices (PoCL): one work-item per row and a plain loop along it, which
    the driver's compiler vectorises like the C emitter's loops (no barriers, no local memory)."""

    layout = "rows"
    #: reductions along the row vectorise only when the compiler may reassociate
    build_options = ("-cl-unsafe-math-optimizations",)

    def prologue(self, prog: ir.Program) -> list[str]:
        return [s for s in super().prologue(prog) if not s.startswith("#define L")]

    def signature(self, prog: ir.Program, entry: str) -> str:
        ps = self.params(prog, "__global {T}* restrict", "__global const {T}* restrict", "long")
        return f"__kernel void {entry}({ps})"

    row_loop = True

    def row_begin(self, prog: ir.Program) -> tuple[list[str], list[str]]:
        return ["const long r = get_global_id(0);", "if (r < rows) {"], []

    def row_end(self) -> list[str]:
        return ["}"]

    def loop_begin(self, reductions: list[tuple[str, str]]) -> list[str]:
        return ["for (int j = 0; j < N; ++j) {"]

    def combine(self, reds: list[tuple[ir.Node, str]]) -> list[str]:
        return Emitter.combine(self, reds)

    def row_store(self, k: int, name: str) -> str:
        return f"out{k}[r] = {name};"


class CUDAEmitter(_GroupEmitter):
    """CUDA C++ (NVRTC): a block of ``L`` threads per row."""

    language = "cuda"
    barrier = "__syncthreads();"
    shared = "__shared__"
    index_t = "int"

    def prologue(self, prog: ir.Program) -> list[str]:
        return ["/* generated by framework.compiler */", f"#define L {self.local}"]

    def inf(self, dt: np.dtype) -> str:
        return "__int_as_float(0x7f800000)" if dt == np.float32 else "__longlong_as_double(0x7ff0000000000000LL)"

    def nan(self, dt: np.dtype) -> str:
        return "__int_as_float(0x7fc00000)" if dt == np.float32 else "__longlong_as_double(0x7ff8000000000000LL)"

    native = {"rsqrt": "{fn:rsqrt}({0})"}

    def signature(self, prog: ir.Program, entry: str) -> str:
        ps = self.params(prog, "{T}* __restrict__", "const {T}* __restrict__", "long long")
        return f'extern "C" __global__ void __launch_bounds__(L) {entry}({ps})'

    def row_begin(self, prog: ir.Program) -> tuple[list[str], list[str]]:
        return [], [*self.shared_decls(prog), "const long long r = blockIdx.x;", "const int lid = threadIdx.x;"]


EMITTERS: dict[str, type[Emitter]] = {"c": CEmitter, "opencl-c": OpenCLEmitter, "cuda": CUDAEmitter,
                                      "opencl-c/cpu": OpenCLRowEmitter}
#: work-group size; for the "rows" layout, rows per work-group (PoCL: 64 measured best for rms_norm)
LOCAL_SIZE = {"c": 1, "opencl-c": 64, "cuda": 256, "opencl-c/cpu": 64}


def emitter(language: str, local_size: int | None = None, device_kind: str = "") -> Emitter:
    """The emitter for a compiler's ``language`` (``"c"``, ``"opencl-c"``, ``"cuda"``);
    ``device_kind="cpu"`` picks a CPU-shaped variant where there is one."""
    if device_kind and f"{language}/{device_kind}" in EMITTERS:
        language = f"{language}/{device_kind}"
    try:
        cls = EMITTERS[language]
    except KeyError:
        raise NotImplementedError(
            f"[compiler] no emitter for kernel language {language!r}; known: {sorted(EMITTERS)}"
        ) from None
    return cls(local_size or LOCAL_SIZE[language])

