"""Products on the OpenMP team (``gemm.c``): numpy's own BLAS called from C, the rows of the
product cut over the threads that run the generated kernels.

The plugin's thread policy (threads.py) runs BLAS on one thread and splits a large product
into blocks of rows. Run by Python worker threads that sleep between kernels, a block of a
product of 100-200 us waited ~45 us for its thread to wake (a 2-core VM, 2026-12-02: a
1024x64 @ 64x192 float32 product took 153 us whole and 158 us split in two). ``gemm.c`` runs
the blocks on the OpenMP team instead, whose threads wait briefly for the next kernel before
they sleep: the same product split in two took 83 us.

The BLAS is the one numpy loaded (its path from threadpoolctl), its ``cblas_sgemm`` /
``cblas_dgemm`` under the names numpy's own OpenBLAS gives them (``scipy_cblas_sgemm64_``,
64-bit integers) or the plain ones. Where none is found, or without a C compiler, products stay
numpy's ``matmul`` split over the worker threads (kernels.py).
"""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path
from typing import Any

import numpy as np

from .compiler import own_programs

_SOURCE = Path(__file__).with_name("gemm.c")
_INT32_MAX = (1 << 31) - 1
# (name template, 64-bit integers); {} is s or d
_SYMBOLS = (
    ("scipy_cblas_{}gemm64_", True),
    ("cblas_{}gemm64_", True),
    ("scipy_cblas_{}gemm", False),
    ("cblas_{}gemm", False),
)


@functools.cache
def blas_gemm(char: str) -> tuple[int, bool] | None:
    """The address of numpy's BLAS ``?gemm`` for dtype char ``f``/``d`` and whether it takes
    64-bit integers, or None."""
    prefix = {"f": "s", "d": "d"}[char]
    try:
        from threadpoolctl import threadpool_info

        paths = [p["filepath"] for p in threadpool_info() if p.get("user_api") == "blas"]
    except Exception:  # noqa: BLE001 — no threadpoolctl, or a BLAS it cannot read
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for template, ilp64 in _SYMBOLS:
            fn = getattr(lib, template.format(prefix), None)
            if fn is not None:
                return ctypes.cast(fn, ctypes.c_void_p).value, ilp64
    return None


def _program(char: str) -> Any:
    progs = own_programs(_SOURCE, ("gemm_rows",), ("-DT_DOUBLE",) if char == "d" else (), "split product")
    return None if progs is None else progs[0]


def _layout(x: np.ndarray) -> tuple[int, int] | None:
    """(transposed, leading dimension) of a 2-D array BLAS reads in place, or None."""
    s0, s1 = x.strides
    it = x.itemsize
    r, c = x.shape
    if (s1 == it or c == 1) and s0 % it == 0 and s0 // it >= max(c, 1):
        return 0, s0 // it
    if (s0 == it or r == 1) and s1 % it == 0 and s1 // it >= max(r, 1):
        return 1, s1 // it
    return None


def blocks(m: int, n: int, nt: int, dtype: np.dtype) -> tuple[bool, int]:
    """How a product of an ``m x n`` output is cut for ``nt`` threads: (by columns, grain).
    Blocks of rows at multiples of the BLAS kernel's exact row tile; of columns when the rows
    make fewer blocks than the threads, the columns more, and the column tile is exact (the
    weight gradient's 64 x 1024 @ 1024 x 192 has one row tile of 64)."""
    from .kernels import row_grain

    g, _ = row_grain(dtype)
    if m // g < nt:
        gc, exact = row_grain(dtype, cols=True)
        if exact and n // gc > m // g:
            return True, gc
    return False, g


def gemm_call(a: np.ndarray, b: np.ndarray, c: np.ndarray, nt: int) -> Any:
    """A zero-argument call writing ``c = a @ b`` (2-D float32/float64, c's rows contiguous)
    cut into up to ``nt`` blocks (:func:`blocks`) run by the OpenMP team, or None where it
    does not apply (the caller then runs numpy)."""
    if a.ndim != 2 or b.ndim != 2 or c.ndim != 2 or c.dtype.char not in "fd":
        return None
    if not (a.dtype == b.dtype == c.dtype) or 0 in a.shape or 0 in b.shape:
        return None
    m, k = a.shape
    n = b.shape[1]
    la, lb, lc = _layout(a), _layout(b), _layout(c)
    if (
        la is None
        or lb is None
        or lc is None
        or lc[0]
        or np.may_share_memory(a, c)
        or np.may_share_memory(b, c)
    ):
        return None
    sym = blas_gemm(c.dtype.char)
    if sym is None:
        return None
    addr, ilp64 = sym
    if not ilp64 and max(m, n, k, la[1], lb[1], lc[1]) > _INT32_MAX:
        return None
    prog = _program(c.dtype.char)
    if prog is None:
        return None
    cols, g = blocks(m, n, nt, c.dtype)
    ffi, fn = prog.ffi, prog.fn
    pa, pb, pc = (ffi.cast("void *", x.__array_interface__["data"][0]) for x in (a, b, c))
    args = (addr, int(ilp64), la[0], lb[0], m, n, k, pa, la[1], pb, lb[1], pc, lc[1], int(cols), g, nt)

    def run(keep: tuple = (a, b, c)) -> None:
        fn(*args)

    return run
