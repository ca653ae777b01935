"""The cpu plugin's products: the ``matmul`` and ``matmul_t`` kernels, as one BLAS call or as its
blocks on the thread budget (threads.py), and the row grain that keeps a split product's bits
those of the whole one. kernels.py registers them.

Example::

    >>> import numpy as np
    >>> from plugins.cpu import products
    >>> a = np.ones((4, 3), np.float32); b = np.ones((3, 2), np.float32); c = np.empty((4, 2), np.float32)
    >>> products._matmul(None, [c], [a, b]); float(c[0, 0])
    3.0
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import ml_dtypes
import numpy as np

from . import bf16, gemm, threads

F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
_HALF = (F16, BF16)


def _matmul(ctx: Any, outs: list, ins: list) -> None:
    a, b = ins
    c = outs[0]
    if a.dtype in _HALF:
        if a.dtype.num != BF16.num or not bf16.matmul(a, b, c):  # bf16 units where present (bf16.py)
            c[...] = np.matmul(a.astype(np.float32), b.astype(np.float32))
    elif a.dtype == np.bool_:
        c[...] = np.matmul(a, b)
    else:
        fn, args = _product(a, b, c)
        fn(*args)


def _product(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[Any, tuple]:
    """The call that computes ``c = a @ b``: BLAS once, or its blocks on the thread budget."""
    a, b, c = _flat(a, b, c)
    if c.ndim == 2 and c.dtype.char in "fd":
        split = threads.split_products() and threads.split_products(gemm.product_blas(c.dtype.char)[0])
        nt = threads.team_threads(c.size * a.shape[-1], MIN_MACS_PER_TEAM_THREAD) if split else 1
        if nt > 1 or gemm.routes_all(c.dtype.char):
            call = gemm.gemm_call(a, b, c, nt)
            if call is not None:
                return call, ()
    parts = _matmul_parts(a, b, c)
    return (np.matmul, (a, b, c)) if parts is None else (threads.run_parts, (np.matmul, parts))


def _flat(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A stack of matrices times one matrix as one product of the stacked rows (numpy calls BLAS
    once per matrix of the stack otherwise: (8, 128, 256) @ (256, 768) ran 5-7 % slower as 8
    products than as one, and split in two over threads it is 2 products of 512 rows, not 2
    stacks of 4 products of 128). Only where the bits stay those of the stack: each matrix's
    rows a whole number of the BLAS kernel's exact row tiles (:func:`row_grain`); with MKL
    (gemm.py), always: its products are not numpy's bits anyway, and one product of the stacked
    rows is the same computation at every budget."""
    if a.ndim > 2 and b.ndim == 2 and a.flags.c_contiguous and c.flags.c_contiguous and c.dtype.char in "fd":
        g, exact = row_grain(c.dtype)
        if exact and a.shape[-2] % g == 0 or gemm.routes_all(c.dtype.char):
            return a.reshape(-1, a.shape[-1]), b, c.reshape(-1, c.shape[-1])
    return a, b, c


def _bind_matmul(ctx: Any, outs: list, ins: list) -> Any:
    a = ins[0]
    if ctx.stream is None and a.dtype not in _HALF and a.dtype != np.bool_:
        fn, args = _product(a, ins[1], outs[0])
        return functools.partial(fn, *args)
    return None


# -- products on the thread budget (threads.py) ------------------------------------------------
# NOTE: a thread gets at least this many multiply-adds (~130 µs of one core's float32 BLAS): a
# sleeping worker takes ~50 µs to wake on the 2-core VM measured, more on a loaded machine.
MIN_MACS_PER_THREAD = 1 << 22
# NOTE: a product on the OpenMP team (gemm.py) finds its threads awake after a kernel less than
# ~0.2 ms before (threads.py's spin): a thread's block need only outweigh the fork and join
MIN_MACS_PER_TEAM_THREAD = 1 << 20
_GRAIN: dict[tuple[str, bool], tuple[int, bool]] = {}
_GRAIN_LOCK = threading.Lock()


def row_grain(dtype: np.dtype, cols: bool = False) -> tuple[int, bool]:
    """Rows per block, and whether a product cut into blocks of rows that start at multiples of
    it has exactly the bits of the whole product. The BLAS kernel computes a tile of rows at a
    time and its last, partial tile differently; the tile is found once per dtype by trying the
    candidates on products of the four transpose layouts. ``(64, False)`` when none is exact
    (and never exact with MKL): a split product then rounds as BLAS's own threads would, the
    same way for a given budget.
    ``cols``: the same for blocks of columns (of the output and of the right operand)."""
    key = (dtype.char, cols)
    g = _GRAIN.get(key)
    if g is None:
        with _GRAIN_LOCK:
            g = _GRAIN.get(key)
            if g is None:
                g = _probe_grain(dtype, cols)
                if gemm.routes_all(dtype.char):
                    # NOTE: MKL picks its kernels by the problem's size: a tile exact on the
                    # probe's products was not on others (256 x 1024 @ 1024 x 688 split in two
                    # rounded differently), so none is taken as exact
                    g = (g[0] if g[1] else 64, False)
                g = _GRAIN[key] = g
    return g


def _probe_grain(dtype: np.dtype, cols: bool) -> tuple[int, bool]:
    product = gemm.product  # the BLAS the products run on (numpy's, MKL or oneDNN)
    rng = np.random.default_rng(0)
    cases = []
    for m, k, n in ((150, 160, 100), (97, 300, 64), (64, 1024, 97)):
        x = rng.standard_normal((m, k)).astype(dtype)
        y = rng.standard_normal((k, n)).astype(dtype)
        for a in (x, np.asfortranarray(x)):
            for b in (y, np.asfortranarray(y)):
                cases.append((a, b, product(a, b)))

    def cut(a: np.ndarray, b: np.ndarray, cuts: list[int]) -> np.ndarray:
        if cols:
            return np.concatenate([product(a, b[:, lo:hi]) for lo, hi in zip(cuts, cuts[1:])], axis=1)
        return np.concatenate([product(a[lo:hi], b) for lo, hi in zip(cuts, cuts[1:])])

    for g in (1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64):
        if all(
            np.array_equal(cut(a, b, cuts), whole)
            for a, b, whole in cases
            for n in [whole.shape[1] if cols else whole.shape[0]]
            for cuts in ([0, g, n], [0, g, (n // 2) // g * g or g, n])
        ):
            return g, True
    return 64, False


def _matmul_parts(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> list | None:
    """The product as independent ``(a, b, c)`` blocks for the budget's threads: blocks of the
    leading batch axis, else of rows; None to run it whole (small, or the policy off)."""
    if (
        a.ndim < 2
        or b.ndim < 2
        or c.dtype.char not in "fd"
        or not threads.split_products(threads.numpy_blas())
    ):
        return None
    n = threads.threads_for(c.size * a.shape[-1], MIN_MACS_PER_THREAD)
    if n < 2 or np.may_share_memory(a, c) or np.may_share_memory(b, c):
        return None  # numpy copies an operand the output overlaps; a block of it cannot
    if c.ndim > 2 and c.shape[0] >= n:
        e = [c.shape[0] * i // n for i in range(n + 1)]
        sa = a.ndim == c.ndim and a.shape[0] > 1  # operands broadcast over the axis stay whole
        sb = b.ndim == c.ndim and b.shape[0] > 1
        return [(a[lo:hi] if sa else a, b[lo:hi] if sb else b, c[lo:hi]) for lo, hi in zip(e, e[1:])]
    m, g = c.shape[-2], row_grain(c.dtype)[0]
    n = min(n, m // g)
    if n < 2:
        return None
    e = [m * i // n // g * g for i in range(n)] + [m]
    return [(a[..., lo:hi, :], b, c[..., lo:hi, :]) for lo, hi in zip(e, e[1:])]


_matmul.bind = _bind_matmul  # type: ignore[attr-defined]


def _matmul_t(ctx: Any, outs: list, ins: list, transpose_x: bool, transpose_y: bool) -> None:
    """Fused kernel for the ``matmul_t`` composite: BLAS reads transposed operands in place."""
    _matmul(ctx, outs, _transposed(ins, transpose_x, transpose_y))


def _transposed(ins: list, transpose_x: bool, transpose_y: bool) -> list:
    a, b = ins
    return [a.swapaxes(-1, -2) if transpose_x else a, b.swapaxes(-1, -2) if transpose_y else b]


def _bind_matmul_t(ctx: Any, outs: list, ins: list, transpose_x: bool, transpose_y: bool) -> Any:
    """Static programs: the transposed views, the blocks and the BLAS call made once."""
    return _bind_matmul(ctx, outs, _transposed(ins, transpose_x, transpose_y))


_matmul_t.bind = _bind_matmul_t  # type: ignore[attr-defined]
