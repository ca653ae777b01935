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
(``pip install 'oarlock[mkl]'``); or, for float32, oneDNN's ``dnnl_sgemm`` where its wheel is
installed (``onednn-cpu-gomp``, which bf16.py loads for bf16 products too). ``auto`` (the
default) times the ones present on a probe of training's product shapes and layouts and takes
the fastest where it beat numpy's BLAS by at least 5 %, once per machine (the kernel cache
keeps the choice); ``OARLOCK_BLAS=numpy|mkl|onednn|auto`` decides instead. On the 2-core Intel
Xeon VM of 2026-12-02 MKL ran the tiny Llama's products 20-25 % faster than numpy's OpenBLAS
(its SkylakeX kernels), which is torch's edge there; on the 2-core AMD EPYC (Zen 4) of
2026-12-04 oneDNN ran the MLP's products 10-20 % faster than OpenBLAS and MKL (NT layouts the
least), MKL no faster than OpenBLAS. MKL runs on its sequential layer and oneDNN with the
OpenMP thread count set to 1 inside each block (the plugin splits products itself); with
either, every 2-D float product of that dtype from :data:`MIN_MACS` multiply-adds on goes
through here, split or not, so a result does not depend on the budget's size thresholds
(smaller ones, never split, run numpy's ``matmul``); a user who sized BLAS themselves keeps
numpy's. Transposed operands are read in place (``transa``/``transb``). conv.c calls a cblas
``?gemm`` (:func:`blas_gemm`: numpy's, or MKL's where chosen), never oneDNN's. Where no BLAS
is found, or without a C compiler, products stay numpy's ``matmul`` split over the worker
threads (kernels.py).
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


_CHOICES = ("auto", "numpy", "mkl", "onednn")
#: a BLAS other than numpy's runs the products only where the probe ran them at least 5 %
#: faster (numpy's BLAS gives numpy's own bits; timed on the thread's CPU clock, the probe
#: varies by ~2 % on the loaded 2-core VM)
_MARGIN = 0.95
#: products of fewer multiply-adds run numpy's ``matmul`` (one call, numpy's bits), whichever BLAS
#: was chosen: through gemm.c a product costs ~5 us more in Python and the call (one thread, 2-core
#: EPYC: 64x64x64 took 18.8 us against numpy's 11.9, 128x128x128 51.5 against 51.8). Below it a
#: product never splits (2 threads take 2 x 2^20), so its bits depend on its shape alone.
MIN_MACS = 1 << 21
_DNNL = 2  #: the ``abi`` of oneDNN's ``dnnl_sgemm`` in gemm.c (0, 1: cblas with 32/64-bit integers)
Symbol = tuple[int, int]  #: (address, abi)


def choice() -> str:
    """``OARLOCK_BLAS``: ``numpy`` (the BLAS numpy links), ``mkl`` (Intel's, from the ``mkl``
    wheel), ``onednn`` (oneDNN's ``dnnl_sgemm``, from the ``onednn-cpu-gomp`` wheel, for
    float32; float64 products stay numpy's) or ``auto`` (the default: whichever of those
    present ran a probe fastest, numpy's unless another was at least 5 % faster)."""
    v = os.environ.get("OARLOCK_BLAS", "auto").strip().lower() or "auto"
    if v not in _CHOICES:
        raise DeviceError(f"[cpu] OARLOCK_BLAS must be one of {', '.join(_CHOICES)}, got {v!r}")
    return v


@functools.cache
def _numpy_blas(char: str) -> Symbol | None:
    """numpy's BLAS ``?gemm`` for dtype char ``f``/``d``: (address, 1 where it takes 64-bit
    integers else 0), or None."""
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
                return ctypes.cast(fn, ctypes.c_void_p).value, int(ilp64)
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


def _mkl_blas(char: str) -> Symbol | None:
    lib = _mkl_lib()
    if lib is None:
        return None
    fn = getattr(lib, {"f": "cblas_sgemm", "d": "cblas_dgemm"}[char], None)
    return None if fn is None else (ctypes.cast(fn, ctypes.c_void_p).value, 0)


@functools.cache
def _onednn_blas(char: str) -> Symbol | None:
    """oneDNN's ``dnnl_sgemm`` (row-major, float32 only), from the library bf16.py loads (its
    private copy, so that real Paddle's own oneDNN still loads after it); None for float64 or
    where oneDNN is not installed. Loaded on first use only."""
    if char != "f":
        return None
    from . import bf16

    if bf16._onednn()[0] is None:
        return None
    fn = getattr(bf16._LIBS[-1], "dnnl_sgemm", None)
    return None if fn is None else (ctypes.cast(fn, ctypes.c_void_p).value, _DNNL)


_LOADERS = {"numpy": _numpy_blas, "mkl": _mkl_blas, "onednn": _onednn_blas}


def _installed(name: str, char: str) -> bool:
    """Whether BLAS ``name`` may run ``char`` products here, from the installed wheels alone
    (nothing loaded: a cached choice of numpy's BLAS never loads the others)."""
    if name == "onednn" and char != "f":
        return False
    from .bf16 import _DISTRIBUTIONS

    for d in {"mkl": ("mkl",), "onednn": _DISTRIBUTIONS}.get(name, ()):
        try:
            importlib.metadata.distribution(d)
            return True
        except importlib.metadata.PackageNotFoundError:
            continue
    return name == "numpy"


@functools.cache
def _chosen(char: str) -> tuple[tuple[str, Symbol | None], tuple[str, Symbol | None]]:
    """((the products' BLAS, its symbol), (the cblas the plugin's other C calls, its symbol)):
    the products run on :func:`choice`'s BLAS; conv.c calls a cblas ``?gemm`` (numpy's or
    MKL's, never oneDNN's, whose calling convention differs)."""
    mine = ("numpy", _numpy_blas(char))  # before MKL loads: threadpoolctl would list it too
    want = choice()
    if want == "numpy":
        return mine, mine
    if want == "mkl":
        mkl = _mkl_blas(char)
        if mkl is None:
            raise DeviceError(
                "[cpu] OARLOCK_BLAS=mkl, but Intel's MKL is not installed (pip install mkl, on "
                "x86-64); unset OARLOCK_BLAS to use the BLAS numpy links"
            )
        return ("mkl", mkl), ("mkl", mkl)
    if want == "onednn":
        if char != "f":
            return mine, mine  # oneDNN has no float64 product
        dnnl = _onednn_blas(char)
        if dnnl is None:
            from . import bf16

            raise DeviceError(
                f"[cpu] OARLOCK_BLAS=onednn, but {bf16._onednn()[1]}; unset OARLOCK_BLAS to use "
                "the BLAS numpy links"
            )
        if _program(char) is None:
            raise DeviceError(
                "[cpu] OARLOCK_BLAS=onednn needs a C compiler to call oneDNN; unset OARLOCK_BLAS"
            )
        return ("onednn", dnnl), mine
    others = [n for n in ("mkl", "onednn") if _installed(n, char)]
    if not others or _program(char) is None:  # no other BLAS, or no compiler to call it from
        return mine, mine
    prod, cblas = _kept_choice(char, others).split(",")
    p, c = (prod, _LOADERS[prod](char)), (cblas, _LOADERS[cblas](char))
    # a BLAS that does not load after all (a cached choice from another environment): numpy's
    return (p if p[1] is not None else mine), (c if c[1] is not None else mine)


def _time_choice(char: str, others: list[str]) -> str:
    """``"<products' BLAS>,<cblas>"`` by timing each BLAS present (:func:`_probe_times`)."""
    syms = {n: _LOADERS[n](char) for n in ("numpy", *others)}
    times = _probe_times(char, {n: s for n, s in syms.items() if s is not None})
    if "numpy" not in times:  # numpy's BLAS not found: the fastest of the others
        best = min(times, key=times.__getitem__, default="numpy")
        return f"{best},{'mkl' if 'mkl' in times else 'numpy'}"
    bar = _MARGIN * times["numpy"]
    # NOTE: another BLAS only where it is clearly faster: numpy's BLAS gives numpy's own bits
    prod = min((n for n in times if times[n] < bar), key=times.__getitem__, default="numpy")
    cblas = "mkl" if times.get("mkl", bar) < bar else "numpy"
    return f"{prod},{cblas}"


class _ChoiceCompiler(Compiler):
    """The timed BLAS choice as a "program" of the core's kernel cache: timed once per machine,
    BLAS set and dtype, then read back (verified like any entry) in every process, which also
    keeps every process of a machine on the same BLAS, so on the same bits (timings on a
    loaded machine would flip it)."""

    language = "c"

    def __init__(self, char: str, others: list[str]) -> None:
        self.char, self.others = char, others

    def identity(self) -> str:
        libs = []
        for path in sorted(p["filepath"] for p in threads.blas_pools()):
            with contextlib.suppress(OSError):
                st = os.stat(path)
                libs.append(f"{path} {st.st_size} {st.st_mtime_ns}")
        from .bf16 import _DISTRIBUTIONS

        versions = []
        for d in ("mkl", *_DISTRIBUTIONS):
            with contextlib.suppress(importlib.metadata.PackageNotFoundError):
                versions.append(f"{d} {importlib.metadata.version(d)}")
        coretype = os.environ.get("OPENBLAS_CORETYPE", "")
        return (
            f"blas choice {self.char} {'+'.join(self.others)} | {'; '.join(libs)} | {', '.join(versions)} | "
            f"{coretype} | cpu {_march()}"
        )

    def compile(self, source: str, entry: str, options: tuple[str, ...] = ()) -> bytes:
        return _time_choice(self.char, self.others).encode()

    def load(self, binary: bytes, entry: str) -> str:
        got = binary.decode(errors="replace")
        prod, _, cblas = got.partition(",")
        if prod not in _LOADERS or cblas not in ("numpy", "mkl"):
            raise CompileError(f"[cpu] the cached BLAS choice is not readable ({got!r})")
        return got


def _kept_choice(char: str, others: list[str]) -> str:
    """``"<products' BLAS>,<cblas>"``: the timed choice, through the kernel cache when the
    plugin has one."""
    from . import compiler

    if compiler._PROGRAM_CACHE is not None:
        with contextlib.suppress(CompileError, OSError):
            return compiler._PROGRAM_CACHE.get(_ChoiceCompiler(char, others), "blas choice 2", "choice")
    return _time_choice(char, others)


#: the probe's products (m, k, n, a transposed, b transposed): training's layouts (forward,
#: the input's gradient, the weight's), skinny and square
_PROBE = (
    (1024, 64, 192, 0, 0),
    (64, 1024, 192, 0, 0),
    (256, 256, 256, 0, 0),
    (128, 512, 512, 0, 1),
    (512, 128, 512, 1, 0),
)


def _probe_times(char: str, syms: dict[str, Symbol]) -> dict[str, float]:
    """Each BLAS's best of 7 rounds of :data:`_PROBE`'s products on this thread's CPU clock,
    the BLASes taking turns round by round (a load that comes and goes falls on all of them)."""
    import time

    rng = np.random.default_rng(0)
    dt = np.dtype(char)
    operands = []
    for m, k, n, ta, tb in _PROBE:
        a = rng.standard_normal((m, k)).astype(dt)
        b = rng.standard_normal((k, n)).astype(dt)
        a = np.asfortranarray(a) if ta else a  # read transposed in place
        b = np.asfortranarray(b) if tb else b
        operands.append((a, b, np.empty((m, n), dt)))
    calls = {name: [_call(sym, a, b, c, False, 64, 1) for a, b, c in operands] for name, sym in syms.items()}
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(7):
        for name, cs in calls.items():
            t0 = time.thread_time()
            for c in cs:
                c()
            best[name] = min(best[name], time.thread_time() - t0)
    return best


def blas_gemm(char: str) -> tuple[int, bool] | None:
    """The cblas ``?gemm`` the plugin's C calls (conv.c: numpy's BLAS, or MKL's where chosen;
    :func:`choice`) for dtype char ``f``/``d``: its address and whether it takes 64-bit
    integers, or None. Products may run on oneDNN instead (:func:`product_blas`)."""
    sym = _chosen(char)[1][1]
    return None if sym is None else (sym[0], bool(sym[1]))


def blas_name(char: str = "f") -> str:
    """Which cblas :func:`blas_gemm` is: ``numpy`` or ``mkl``."""
    return _chosen(char)[1][0]


def product_blas(char: str = "f") -> tuple[str, Symbol | None]:
    """Which BLAS runs the products (``numpy``, ``mkl`` or ``onednn``) and its (address, abi)
    for gemm.c, or None where none was found.

    >>> product_blas("d")[0] in ("numpy", "mkl")
    True
    """
    return _chosen(char)[0]


def routes_all(char: str) -> bool:
    """Whether every 2-D product of this dtype from :data:`MIN_MACS` multiply-adds on goes
    through :func:`gemm_call` (the chosen BLAS is not numpy's, so ``np.matmul`` would give other
    bits), not only the split ones."""
    if char not in "fd" or not threads.owns_blas():  # the user sized numpy's BLAS: theirs
        return False
    name, sym = _chosen(char)[0]
    return name != "numpy" and sym is not None


_PROGRAMS: dict[str, Any] = {}  #: gemm.c's program per dtype char, once built (every product asks)


def _program(char: str) -> Any:
    prog = _PROGRAMS.get(char)
    if prog is None:
        prog = own_program(_SOURCE, "gemm_rows", float_options(char), "split product")
        if prog is not None:  # None while it builds in the background: asked again next time
            _PROGRAMS[char] = prog
    return prog


def _pointer(ffi: Any, x: np.ndarray) -> Any:
    """``x``'s first element for gemm.c: a C-contiguous array's buffer as it is (a ``void *``
    parameter takes it without :func:`pointer`'s cast, ~1 us less per operand), else
    :func:`pointer`'s."""
    return ffi.from_buffer(x) if x.flags.c_contiguous else pointer(ffi, x)


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


def gemm_call(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, nt: int, alpha: float = 1.0, beta: float = 0.0
) -> Any:
    """A zero-argument call writing ``c = alpha * a @ b + beta * c`` (2-D float32/float64, c's
    rows contiguous) by the products' BLAS (:func:`product_blas`), cut into up to ``nt``
    blocks (:func:`blocks`) run by the OpenMP team, or None where it does not apply (the
    caller then runs numpy): other dtypes or layouts, overlapping operands, products under
    :data:`MIN_MACS` multiply-adds. With ``beta`` non-zero ``c`` must hold values when it runs."""
    if a.ndim != 2 or b.ndim != 2 or c.ndim != 2 or c.dtype.char not in "fd":
        return None
    if not (a.dtype == b.dtype == c.dtype) or 0 in a.shape or 0 in b.shape:
        return None
    m, k = a.shape
    n = b.shape[1]
    if m * n * k < MIN_MACS:
        return None
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
    sym = product_blas(c.dtype.char)[1]
    if sym is None:
        return None
    if not sym[1] and max(m, n, k, la[1], lb[1], lc[1]) > _INT32_MAX:
        return None
    prog = _program(c.dtype.char)
    if prog is None:
        return None
    cols, g = blocks(m, n, nt, c.dtype)
    return _call(sym, a, b, c, cols, g, nt, prog, (la, lb, lc), alpha, beta)


def _call(
    sym: Symbol,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    cols: bool,
    g: int,
    nt: int,
    prog: Any = None,
    layouts: tuple | None = None,
    alpha: float = 1.0,
    beta: float = 0.0,
) -> Any:
    addr, abi = sym
    prog = prog or _program(c.dtype.char)
    la, lb, lc = layouts or (_layout(a), _layout(b), _layout(c))
    m, k = a.shape
    n = b.shape[1]
    ffi, fn = prog.ffi, prog.fn
    pa, pb, pc = _pointer(ffi, a), _pointer(ffi, b), _pointer(ffi, c)
    args = (addr, abi, la[0], lb[0], m, n, k, pa, la[1], pb, lb[1], pc, lc[1], int(cols), g, nt, alpha, beta)

    def run(keep: tuple = (a, b, c)) -> None:
        if fn(*args):
            raise DeviceError(
                f"[cpu] oneDNN's float32 product failed for {m}x{k} @ {k}x{n}; set OARLOCK_BLAS=numpy "
                "to run products on numpy's BLAS"
            )

    return run


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` (2-D float) by the products' BLAS on this thread, as an unsplit product is."""
    c = np.empty((a.shape[0], b.shape[1]), a.dtype)
    call = gemm_call(a, b, c, 1) if routes_all(c.dtype.char) else None
    if call is None:
        return np.matmul(a, b)
    call()
    return c
