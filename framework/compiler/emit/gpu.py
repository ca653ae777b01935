"""The GPU emitters: OpenCL C and CUDA C with one work-group (block) of ``L`` work-items per
row, a strided loop along the row and a tree reduction in local (shared) memory; and OpenCL C
for CPU devices (PoCL), one work-item per row like the C emitter."""

from __future__ import annotations

import math

import numpy as np

from .. import loop_ir
from .base import HALVES, Emitter, _flag, is_float
from .helpers import C_HALF, C_INT, C_PHILOX, needed_helpers, source
from .rows import _RowLoops


class _GroupEmitter(Emitter):
    """One work-group per row: shared by OpenCL C and CUDA C.

    The launch has exactly ``rows`` groups, so there is no early return: PoCL miscompiles a
    return ahead of a barrier even when the whole group takes it.
    """

    barrier = ""
    shared = ""
    index_t = ""

    def loop_begin(self, reductions: list[tuple[loop_ir.Node, str]]) -> list[str]:
        return [f"for ({self.index_t} j = lid; j < N; j += L) {{"]

    def combine(self, reds: list[tuple[loop_ir.Node, str]]) -> list[str]:
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

    def merge(self, r: loop_ir.Node) -> list[str]:
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
        if src == loop_ir.BOOL:
            return [f"{a} {'|' if kind == 'max' else '&'}= {b};"]
        out = [f"{a} = {b} {'>' if kind == 'max' else '<'} {a} ? {b} : {a};"]
        return out + [f"nans{i}[lid] |= nans{i}[lid + s];"] if is_float(src) else out

    def row_store(self, k: int, name: str) -> str:
        return f"if (lid == 0) out{k}[r] = {name};"

    def shared_decls(self, prog: loop_ir.Program) -> list[str]:
        out = []
        for n in loop_ir.live_nodes(prog.outputs):
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
_TYPEDEFS = {"opencl-c": source("opencl_stdint.cl"), "cuda": source("cuda_stdint.h")}
#: float16 / bfloat16 in OpenCL C, computed in ``V`` (half.cl)
_CL_HALF = source("half.cl")


def _gpu_helpers(progs: list[loop_ir.Program], language: str, half: str) -> list[str]:
    """The C helpers a program needs, in OpenCL C or CUDA C (same code, other qualifiers)."""
    lines = _TYPEDEFS[language].splitlines()
    for h in needed_helpers(progs):
        src = {"half": half, "philox": C_PHILOX, "int": C_INT}[h]
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

    def _fp64(self, prog: loop_ir.Program) -> bool:
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

    def source(self, prog: loop_ir.Program, entry: str, prologue: bool = True) -> str:
        self.half_t = "double" if self._fp64(prog) else "float"
        return super().source(prog, entry, prologue)

    def literal(self, v: object, dt: np.dtype) -> str:
        if dt.name in HALVES and self.half_t == "float" and math.isfinite(float(v)):  # type: ignore[arg-type]
            return f"{float(np.float32(v))!r}f"  # a double literal would make calls ambiguous
        return super().literal(v, dt)

    def prologue(self, prog: loop_ir.Program) -> list[str]:
        self.half_t = "double" if self._fp64(prog) else "float"
        fp64 = ["#pragma OPENCL EXTENSION cl_khr_fp64 : enable"] if self._fp64(prog) else []
        half = _CL_HALF.replace("(V)", f"({self.half_t})").replace("V ", f"{self.half_t} ")
        return [
            "/* generated by framework.compiler */",
            *fp64,
            f"#define L {self.local}",
            *_gpu_helpers(self.programs(prog), self.language, half),
        ]

    native = {"rsqrt": "rsqrt({0})"}

    def signature(self, prog: loop_ir.Program, entry: str) -> str:
        ps = self.params(prog, "__global {T}* restrict", "__global const {T}* restrict", "long")
        return f"__kernel __attribute__((reqd_work_group_size(L, 1, 1))) void {entry}({ps})"

    def row_begin(self, prog: loop_ir.Program) -> tuple[list[str], list[str]]:
        return [], [
            *self.shared_decls(prog),
            "const long r = get_group_id(0);",
            "const int lid = get_local_id(0);",
        ]


#: exp, tanh and erf in float as plain arithmetic the driver's loop vectoriser can widen
_CL_EXPF = source("expf.cl")
_CL_TANHF = source("tanhf.cl")
_CL_ERFF = source("erff.cl")

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

    def prologue(self, prog: loop_ir.Program) -> list[str]:
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

    def signature(self, prog: loop_ir.Program, entry: str) -> str:
        ps = self.params(prog, "__global {T}* restrict", "__global const {T}* restrict", "long")
        return f"__kernel void {entry}({ps})"

    row_loop = True

    def row_begin(self, prog: loop_ir.Program) -> tuple[list[str], list[str]]:
        return ["const long r = get_global_id(0);", "if (r < rows) {"], []

    def row_end(self) -> list[str]:
        return ["}"]

    def loop_begin(self, reductions: list[tuple[loop_ir.Node, str]]) -> list[str]:
        return ["for (int j = 0; j < N; ++j) {"]

    def combine(self, reds: list[tuple[loop_ir.Node, str]]) -> list[str]:
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

    def prologue(self, prog: loop_ir.Program) -> list[str]:
        half = C_HALF.replace(
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

    def signature(self, prog: loop_ir.Program, entry: str) -> str:
        ps = self.params(prog, "{T}* __restrict__", "const {T}* __restrict__", "long long")
        return f'extern "C" __global__ void __launch_bounds__(L) {entry}({ps})'

    def row_begin(self, prog: loop_ir.Program) -> tuple[list[str], list[str]]:
        return [], [
            *self.shared_decls(prog),
            "const long long r = blockIdx.x;",
            "const int lid = threadIdx.x;",
        ]
