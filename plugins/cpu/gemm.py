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
64-bit integers) or the plain ones; or Intel's MKL where the ``mkl`` wheel is installed
(``pip install 'oarlock[mkl]'``) and ran a probe of training's product shapes at least 10 %
faster (measured once per process and dtype; ``OARLOCK_BLAS=numpy|mkl|auto`` decides instead).
On the 2-core Intel Xeon VM of 2026-12-02 MKL ran the tiny Llama's products 20-25 % faster than
numpy's OpenBLAS (its SkylakeX kernels), which is torch's edge there. MKL runs on its sequential
layer (the plugin splits products itself), and with it every 2-D float product goes through
here, split or not, so a result does not depend on the budget's size thresholds; a user who
sized BLAS themselves keeps numpy's. Where no BLAS is found, or without a C compiler, products
stay numpy's ``matmul`` split over the worker threads (kernels.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib.metadata
import os
from pathlib import Path
from typing import Any

import numpy as np

from adapter_api import CompileError, Compiler, DeviceError

from . import threads
from .compiler import _march, float_options, own_program, pointer

_SOURCE = Path(__file__).with_name("gemm.c")
_INT32_MAX = (1 << 31) - 1
# (name template, 64-bit integers); {} is s or d
_SYMBOLS = (
    ("scipy_cblas_{}gemm64_", True),
    ("cblas_{}gemm64_", True),
    ("scipy_cblas_{}gemm", False),
    ("cblas_{}gemm", False),
)


_CHOICES = ("auto", "numpy", "mkl")


def choice() -> str:
    """``OARLOCK_BLAS``: ``numpy`` (the BLAS numpy links), ``mkl`` (Intel's, from the ``mkl``
    wheel) or ``auto`` (the default: whichever of the two present ran a probe faster)."""
    v = os.environ.get("OARLOCK_BLAS", "auto").strip().lower() or "auto"
    if v not in _CHOICES:
        raise DeviceError(f"[cpu] OARLOCK_BLAS must be one of {', '.join(_CHOICES)}, got {v!r}")
    return v


@functools.cache
def _numpy_blas(char: str) -> tuple[int, bool] | None:
    """The address of numpy's BLAS ``?gemm`` for dtype char ``f``/``d`` and whether it takes
    64-bit integers, or None."""
    prefix = {"f": "s", "d": "d"}[char]
    paths = [
        p["filepath"] for p in threads.blas_pools() if "libmkl_rt" not in os.path.basename(p["filepath"])
    ]
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


@functools.cache
def _mkl_lib() -> Any:
    """Intel's MKL from the ``mkl`` wheel (``libmkl_rt``), on one thread (its sequential
    layer: the plugin splits products itself) with 32-bit integers; None when not installed."""
    try:
        dist = importlib.metadata.distribution("mkl")
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        if f.name.startswith("libmkl_rt.so"):
            try:
                lib = ctypes.CDLL(str(dist.locate_file(f)))
                lib.MKL_Set_Threading_Layer(1)  # MKL_THREADING_SEQUENTIAL, before any other call
                lib.MKL_Set_Interface_Layer(0)  # MKL_INTERFACE_LP64
                return lib
            except (OSError, AttributeError):
                return None
    return None


def _mkl_blas(char: str) -> tuple[int, bool] | None:
    lib = _mkl_lib()
    if lib is None:
        return None
    fn = getattr(lib, {"f": "cblas_sgemm", "d": "cblas_dgemm"}[char], None)
    return None if fn is None else (ctypes.cast(fn, ctypes.c_void_p).value, False)


@functools.cache
def _chosen(char: str) -> tuple[str, tuple[int, bool] | None]:
    mine = _numpy_blas(char)  # before MKL loads: threadpoolctl would list it too
    want = choice()
    if want == "numpy":
        return "numpy", mine
    mkl = _mkl_blas(char)
    if want == "mkl":
        if mkl is None:
            raise DeviceError(
                "[cpu] OARLOCK_BLAS=mkl, but Intel's MKL is not installed (pip install mkl, on "
                "x86-64); unset OARLOCK_BLAS to use the BLAS numpy links"
            )
        return "mkl", mkl
    if mkl is None or _program(char) is None:  # no MKL, or no compiler to call it from
        return "numpy", mine
    if mine is None:
        return "mkl", mkl
    return ("mkl", mkl) if _kept_choice(char, mkl, mine) == "mkl" else ("numpy", mine)


def _time_choice(char: str, mkl: tuple[int, bool], mine: tuple[int, bool]) -> str:
    t_mkl, t_mine = _probe_time(char, mkl), _probe_time(char, mine)
    # NOTE: MKL only where it is clearly faster: numpy's BLAS gives numpy's own bits
    return "mkl" if t_mkl < 0.9 * t_mine else "numpy"


class _ChoiceCompiler(Compiler):
    """The timed BLAS choice as a "program" of the core's kernel cache: timed once per machine,
    BLAS pair and dtype, then read back (verified like any entry) in every process, which also
    keeps every process of a machine on the same BLAS, so on the same bits (timings on a
    loaded machine would flip it)."""

    language = "c"

    def __init__(self, char: str, mkl: tuple[int, bool], mine: tuple[int, bool]) -> None:
        self.char, self.mkl, self.mine = char, mkl, mine

    def identity(self) -> str:
        libs = []
        for path in sorted(p["filepath"] for p in threads.blas_pools()):
            with contextlib.suppress(OSError):
                st = os.stat(path)
                libs.append(f"{path} {st.st_size} {st.st_mtime_ns}")
        try:
            mkl = importlib.metadata.version("mkl")
        except importlib.metadata.PackageNotFoundError:
            mkl = "-"
        coretype = os.environ.get("OPENBLAS_CORETYPE", "")
        return f"blas choice {self.char} | {'; '.join(libs)} | mkl {mkl} | {coretype} | cpu {_march()}"

    def compile(self, source: str, entry: str, options: tuple[str, ...] = ()) -> bytes:
        return _time_choice(self.char, self.mkl, self.mine).encode()

    def load(self, binary: bytes, entry: str) -> str:
        got = binary.decode(errors="replace")
        if got not in ("mkl", "numpy"):
            raise CompileError(f"[cpu] the cached BLAS choice is not readable ({got!r})")
        return got


def _kept_choice(char: str, mkl: tuple[int, bool], mine: tuple[int, bool]) -> str:
    """``mkl`` or ``numpy``: the timed choice, through the kernel cache when the plugin has one."""
    from . import compiler

    if compiler._PROGRAM_CACHE is not None:
        with contextlib.suppress(CompileError, OSError):
            return compiler._PROGRAM_CACHE.get(_ChoiceCompiler(char, mkl, mine), "blas choice 1", "choice")
    return _time_choice(char, mkl, mine)


def _probe_time(char: str, sym: tuple[int, bool]) -> float:
    """Best of 5 of a few products of the shapes training runs (skinny and square), one thread."""
    import time

    rng = np.random.default_rng(0)
    dt = np.dtype(char)
    cases = [((1024, 64), (64, 192)), ((64, 1024), (1024, 192)), ((256, 256), (256, 256))]
    calls = []
    for sa, sb in cases:
        a, b = rng.standard_normal(sa).astype(dt), rng.standard_normal(sb).astype(dt)
        calls.append(_call(sym, a, b, np.empty((sa[0], sb[1]), dt), False, 64, 1))
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for c in calls:
            c()
        best = min(best, time.perf_counter() - t0)
    return best


def blas_gemm(char: str) -> tuple[int, bool] | None:
    """The address of the chosen BLAS's ``?gemm`` (:func:`choice`) for dtype char ``f``/``d``
    and whether it takes 64-bit integers, or None."""
    return _chosen(char)[1]


def blas_name(char: str = "f") -> str:
    """Which BLAS runs the products: ``numpy`` or ``mkl``."""
    return _chosen(char)[0]


def routes_all(char: str) -> bool:
    """Whether every 2-D product of this dtype goes through :func:`gemm_call` (the chosen BLAS
    is not numpy's, so ``np.matmul`` would give other bits), not only the split ones."""
    if char not in "fd" or not threads.owns_blas():  # the user sized numpy's BLAS: theirs
        return False
    name, sym = _chosen(char)
    return name != "numpy" and sym is not None


def _program(char: str) -> Any:
    return own_program(_SOURCE, "gemm_rows", float_options(char), "split product")


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
    if nt <= 1:
        return False, max(m, 1)  # one block: no tile to find
    from .products import row_grain

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
    if not sym[1] and max(m, n, k, la[1], lb[1], lc[1]) > _INT32_MAX:
        return None
    prog = _program(c.dtype.char)
    if prog is None:
        return None
    cols, g = blocks(m, n, nt, c.dtype)
    return _call(sym, a, b, c, cols, g, nt, prog, (la, lb, lc))


def _call(
    sym: tuple[int, bool],
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    cols: bool,
    g: int,
    nt: int,
    prog: Any = None,
    layouts: tuple | None = None,
) -> Any:
    addr, ilp64 = sym
    prog = prog or _program(c.dtype.char)
    la, lb, lc = layouts or (_layout(a), _layout(b), _layout(c))
    m, k = a.shape
    n = b.shape[1]
    ffi, fn = prog.ffi, prog.fn
    pa, pb, pc = pointer(ffi, a), pointer(ffi, b), pointer(ffi, c)
    args = (addr, int(ilp64), la[0], lb[0], m, n, k, pa, la[1], pb, lb[1], pc, lc[1], int(cols), g, nt)

    def run(keep: tuple = (a, b, c)) -> None:
        fn(*args)

    return run


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` (2-D float) by the chosen BLAS on this thread, as an unsplit product is."""
    c = np.empty((a.shape[0], b.shape[1]), a.dtype)
    call = gemm_call(a, b, c, 1) if routes_all(c.dtype.char) else None
    if call is None:
        return np.matmul(a, b)
    call()
    return c
