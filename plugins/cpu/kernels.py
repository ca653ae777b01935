"""numpy kernels for every primitive (see adapter_api.primitives for what each computes).

Destination passing: each kernel writes into ``outs``. Half-precision math runs in float32
and is rounded once into the output, as the GPU libraries do.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any

import ml_dtypes
import numpy as np
from scipy import special as _special

from adapter_api import OpArgumentError
from adapter_api.primitives import FLOAT8 as FLOAT8_NAMES
from adapter_api.primitives import FLOAT8_OPS

from . import complex_kernels, elementwise, index, layout, threads
from .philox import philox_uniform
from .products import _matmul, _matmul_t

F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = ("float32", "float64", "float16", BF16)
SIGNED = ("int8", "int16", "int32", "int64")
UINT_WIDE = ("uint16", "uint32", "uint64")  # wide unsigned integers: every integer kernel
INTS = (*SIGNED, "uint8", *UINT_WIDE)
#: float8 storage dtypes: cast and data movement only (arithmetic on them is refused)
FLOAT8 = tuple(np.dtype(getattr(ml_dtypes, n)) for n in FLOAT8_NAMES)
_FLOAT8_NUMS = frozenset(d.num for d in FLOAT8)
#: float8 -> float32 by a 256-entry table per type (each code's exact value, NaNs included):
#: one gather, faster than ml_dtypes' element-wise conversion
_FLOAT8_TO_F32 = {d.num: np.arange(256, dtype=np.uint8).view(d).astype(np.float32) for d in FLOAT8}


def widen_float8(x: np.ndarray) -> np.ndarray:
    """A float8 array as float32, exactly, through its type's lookup table."""
    return np.take(_FLOAT8_TO_F32[x.dtype.num], np.ascontiguousarray(x).view(np.uint8))


NUMERIC = (*FLOATS, *INTS)
ALL = (*NUMERIC, "bool")
_HALF = (F16, BF16)
_HALF_NUMS = frozenset((F16.num, BF16.num))  # NOTE: dtype == dtype is slow; compare numbers
_BLAS_NUMS = frozenset((np.dtype(np.float32).num, np.dtype(np.float64).num))


def _f32(x: np.ndarray) -> np.ndarray:
    return _widen(x) if x.dtype in _HALF else x


#: elements from which bfloat16 casts run in C (elementwise.c; ml_dtypes' loops take ~1 ns an
#: element rounding, 0.5 widening); below, a C call's ~2 us costs more
MIN_ELEMS_BF16_C = 64


def _widen(x: np.ndarray) -> np.ndarray:
    """A half-precision array as a new float32 one (bfloat16 in C where it builds)."""
    if x.dtype.num == BF16.num and x.size >= MIN_ELEMS_BF16_C:
        y = np.empty(x.shape, np.float32)
        if elementwise.bf16_cast(np.ascontiguousarray(x), y, _cast_threads(y.size)):
            return y
    return x.astype(np.float32)


def _store(y: np.ndarray, r: np.ndarray) -> None:
    """``y[...] = r``, a float32 result rounded once into y (bfloat16 in C where it builds)."""
    if not (
        y.dtype.num == BF16.num
        and r.dtype.char == "f"
        and y.size >= MIN_ELEMS_BF16_C
        and r.shape == y.shape
        and elementwise.bf16_cast(r, y, _cast_threads(y.size))
    ):
        y[...] = r


#: elements from which the bfloat16 kernels run on the OpenMP team: they take ~0.2 ns an
#: element on one thread, less than a loaded 2-core machine's team takes to gather (the tiny
#: Llama's AMP step, 2 threads, split from 2^16: 146 ms CPU against 100 unsplit)
MIN_ELEMS_BF16_TEAM = 1 << 21


def _cast_threads(n: int) -> int:
    return threads.team_threads(n, MIN_ELEMS_BF16_TEAM // 2) if n >= MIN_ELEMS_BF16_TEAM else 1


def _unary(fn: Any, split: bool = False):
    """Two kernels per op: half precision computes in float32; the others call numpy with
    out= directly (the registry picks by dtype, so the hot path makes no dtype test).
    ``split``: a large input is cut over the thread budget (the transcendental functions: a
    few ns an element, where a second thread gains; the others are bound by memory traffic
    and the time a sleeping worker takes to wake)."""

    def k(ctx: Any, outs: list, ins: list) -> None:
        if not split or outs[0].size < MIN_ELEMS_SPLIT:
            if ctx.stream is None:
                fn(ins[0], outs[0])
            else:  # the arrays themselves: the caller may reuse its lists before the stream runs
                ctx.stream.submit(fn, ins[0], outs[0])
        else:
            parts = _elementwise_parts(outs[0], ins[0])
            call = (fn, ins[0], outs[0]) if parts is None else (threads.run_parts, fn, parts)
            if ctx.stream is None:
                call[0](*call[1:])
            else:  # what the stream records is the call itself, or its split
                ctx.stream.submit(*call)

    def k_half(ctx: Any, outs: list, ins: list) -> None:
        if ctx.stream is None:
            _store(outs[0], fn(_widen(ins[0])))
        else:
            ctx.stream.submit(k_half, _SYNC, list(outs), list(ins))

    def bind(ctx: Any, outs: list, ins: list) -> Any:
        """Static programs: the ufunc itself with its arrays bound (``out`` positional), or
        its split over the budget."""
        if ctx.stream is not None:
            return None
        parts = _elementwise_parts(outs[0], ins[0]) if split else None
        if parts is None:
            return functools.partial(fn, ins[0], outs[0])
        return functools.partial(threads.run_parts, fn, parts)

    k.inline_stream = k_half.inline_stream = True
    k.half = k_half
    k.bind = bind
    return k


# -- elementwise work on the thread budget (threads.py) ----------------------------------------
# NOTE: a thread gets at least this many elements (~150 µs of a float32 exp on one core): a
# sleeping worker takes ~50 µs to wake on the 2-core VM measured.
MIN_ELEMS_PER_THREAD = 1 << 16
MIN_ELEMS_SPLIT = 2 * MIN_ELEMS_PER_THREAD


def _elementwise_parts(out: np.ndarray, x: np.ndarray) -> list | None:
    """``(x, out)`` cut into blocks along one axis for the budget's threads, or None to run
    it whole. Each element is computed as without the cut, so the bits are the same."""
    n = threads.threads_for(out.size, MIN_ELEMS_PER_THREAD) if out.size >= MIN_ELEMS_SPLIT else 1
    if n < 2 or _overlaps(x, out):
        return None
    # the first axis that splits evenly, else the longest
    ax = next((i for i, s in enumerate(out.shape) if s % n == 0 or s >= 4 * n), None)
    if ax is None:
        ax = max(range(out.ndim), key=out.shape.__getitem__)
    size = out.shape[ax]
    n = min(n, size)
    if n < 2:
        return None
    e = [size * i // n for i in range(n + 1)]
    lead = (slice(None),) * ax
    return [(x[(*lead, slice(lo, hi))], out[(*lead, slice(lo, hi))]) for lo, hi in zip(e, e[1:])]


def _overlaps(x: np.ndarray, out: np.ndarray) -> bool:
    """Whether ``x`` may share memory with ``out`` other than as the very same view (in place,
    which a block computes like the whole): numpy then buffers the whole input first."""
    return np.may_share_memory(x, out) and not (
        x.__array_interface__["data"][0] == out.__array_interface__["data"][0]
        and x.strides == out.strides
        and x.shape == out.shape
    )


def _rsqrt(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    if out is None:
        return 1.0 / np.sqrt(x)
    np.sqrt(x, out=out)
    return np.divide(1, out, out=out)


#: elements from which add/sub/mul/div of contiguous float operands run on the OpenMP team
#: (elementwise.c), and the least each thread gets: numpy's loop is single-threaded, and with
#: the team awake a (8, 128, 688) float32 product took 142 us on two threads against numpy's 311
MIN_ELEMS_TEAM = 1 << 16
MIN_ELEMS_PER_TEAM_THREAD = 1 << 15
_TEAM_OPS = {np.add: 0, np.subtract: 1, np.multiply: 2, np.divide: 3}


def _team_binary(fn: Any, a: np.ndarray, b: np.ndarray, y: np.ndarray) -> Any:
    """A zero-argument call of ``fn(a, b, out=y)`` on the OpenMP team (elementwise.c), or None
    where numpy runs it: small, not float32/64, not all C-contiguous, an operand neither of y's
    shape nor of its trailing shape (:func:`_trailing`), an operand overlapping y other than
    as y itself, one thread, or no C compiler."""
    code = _TEAM_OPS.get(fn)
    if code is None or y.size < MIN_ELEMS_TEAM or y.dtype.char not in "fd":
        return None
    if not (a.dtype == b.dtype == y.dtype) or not (
        _trailing(a.shape, y.shape) and _trailing(b.shape, y.shape)
    ):
        return None
    if a.size != y.size and b.size != y.size or min(a.size, b.size) < 64:
        return None  # both repeat, or a short block (a scalar): numpy's broadcasting loop
    if not (a.flags.c_contiguous and b.flags.c_contiguous and y.flags.c_contiguous):
        return None
    if _overlaps(a, y) or _overlaps(b, y):
        return None
    nt = threads.team_threads(y.size, MIN_ELEMS_PER_TEAM_THREAD)
    if nt < 2:
        return None
    return elementwise.binary_call(code, a, b, y, nt)


def _bf16_binary(fn: Any, a: np.ndarray, b: np.ndarray, y: np.ndarray) -> Any:
    """A zero-argument call of the bfloat16 ``fn(a, b, out=y)`` in C (elementwise.c: float32
    registers, one rounding at the store), or None where the float32 round trip runs: not
    add/sub/mul/div, not all bfloat16 and C-contiguous, an operand neither of y's shape, of its
    trailing shape nor a single element, small, or no C compiler."""
    code = _TEAM_OPS.get(fn)
    if code is None or y.dtype.num != BF16.num or y.size < MIN_ELEMS_BF16_C:
        return None
    if a.dtype.num != BF16.num or b.dtype.num != BF16.num:
        return None
    if not (a.shape == b.shape == y.shape) and (  # the common case first: no shape walk
        not (a.size == 1 or _trailing(a.shape, y.shape))
        or not (b.size == 1 or _trailing(b.shape, y.shape))
        or (a.size != y.size and b.size != y.size)
    ):
        return None
    if not (a.flags.c_contiguous and b.flags.c_contiguous and y.flags.c_contiguous):
        return None
    if _overlaps(a, y) or _overlaps(b, y):
        return None
    return elementwise.bf16_binary_call(code, a, b, y, _cast_threads(y.size))


def _trailing(s: tuple[int, ...], out: tuple[int, ...]) -> bool:
    """Whether an operand of shape ``s`` (the output's rank, sizes equal or 1) is the output's
    shape, or its trailing shape repeated over leading axes of size 1 (a block the team's
    kernel repeats): (1, 1, 128, 64) against (8, 4, 128, 64), not (8, 1, 128, 64)."""
    k = 0
    while k < len(s) and s[k] == 1 and out[k] != 1:
        k += 1
    return s[k:] == out[k:] and math.prod(s) > 0


def _binary(fn: Any):
    def k(ctx: Any, outs: list, ins: list) -> None:
        if ctx.stream is None:
            y = outs[0]
            # NOTE: a small output never goes to the team (checked before the call: an eager op
            # of 16 elements is mostly this function's own cost)
            call = None if y.size < MIN_ELEMS_TEAM else _team_binary(fn, ins[0], ins[1], y)
            if call is None:
                fn(ins[0], ins[1], out=y)
            else:
                call()
        else:
            ctx.stream.submit(fn, ins[0], ins[1], outs[0])

    def k_half(ctx: Any, outs: list, ins: list) -> None:
        if ctx.stream is None:
            call = _bf16_binary(fn, ins[0], ins[1], outs[0])
            if call is None:
                _store(outs[0], fn(_widen(ins[0]), _widen(ins[1])))
            else:
                call()
        else:
            ctx.stream.submit(k_half, _SYNC, list(outs), list(ins))

    k.inline_stream = k_half.inline_stream = True
    k.half = k_half

    def bind(ctx: Any, outs: list, ins: list) -> Any:
        """Static programs: the team's call, or the ufunc with its arrays bound."""
        if ctx.stream is not None:
            return None
        return _team_binary(fn, ins[0], ins[1], outs[0]) or functools.partial(fn, ins[0], ins[1], outs[0])

    k.bind = bind
    return k


def _where(ctx: Any, outs: list, ins: list) -> None:
    c, x, y = ins
    z = outs[0]
    if z.size < 1024:
        np.copyto(z, np.where(c, x, y))
        return
    call = index.where_call(z, c, x, y)  # one C pass (index.c): rows picked whole, or a bit select
    if call is not None:
        call()
        return
    # NOTE: numpy's where branches per element and runs ~5x slower on random masks than this
    # branchless bit select (exact for every dtype, NaN payloads included).
    u = _UINT[z.dtype.itemsize]
    m = np.negative(c.astype(u))
    zv = z.view(u)
    np.bitwise_and(x.view(u), m, out=zv)
    np.bitwise_or(zv, np.bitwise_and(np.invert(m), y.view(u)), out=zv)


def _bind_where(ctx: Any, outs: list, ins: list) -> Any:
    """Static programs (a decoding step's cache updates): the C call with its strides made once."""
    if ctx.stream is not None:
        return None
    return index.where_call(outs[0], *ins) or functools.partial(_where, ctx, outs, ins)


_where.bind = _bind_where  # type: ignore[attr-defined]


_UINT = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}


def _float_to_int(x: np.ndarray, y: np.ndarray) -> None:
    """Truncate toward zero, saturate to ``y``'s range, NaN -> 0 (the contract's cast rule)."""
    t = np.trunc(x.astype(np.float64))
    info = np.iinfo(y.dtype)
    lo, hi = float(info.min), float(info.max) + 1.0  # both exact: 0 or -2**(b-1), and 2**b or 2**(b-1)
    fits = (t >= lo) & (t < hi)  # False for NaN
    if fits.all():
        y[...] = t.astype(y.dtype)
        return
    y[...] = np.where(fits, t, 0).astype(y.dtype)
    y[t >= hi] = info.max
    y[t < lo] = info.min


def _cast(ctx: Any, outs: list, ins: list, dtype: Any) -> None:
    x, y = ins[0], outs[0]
    if x.dtype.num in _FLOAT8_NUMS:  # float8 -> float32 is exact; the contract's rules from there
        x = widen_float8(x)
    if y.dtype.num in _FLOAT8_NUMS:  # one rounding, to nearest even (ml_dtypes)
        y[...] = x.astype(np.float64 if x.dtype.kind in "iub" else x.dtype).astype(y.dtype)
    elif y.dtype == np.bool_:
        np.not_equal(x, 0, out=y)
    elif x.dtype.kind == "f" or x.dtype in _HALF:
        if y.dtype.kind in "iu":
            _float_to_int(x, y)
        elif not (y.size >= MIN_ELEMS_BF16_C and elementwise.bf16_cast(x, y, _cast_threads(y.size))):
            y[...] = x.astype(y.dtype)  # bfloat16 <-> float32 of C-contiguous arrays: in C above
    else:
        np.copyto(y, x, casting="unsafe")


def _reduce(fn: Any):
    def k(ctx: Any, outs: list, ins: list, axes: tuple[int, ...], keepdim: bool) -> None:
        x, y = ins[0], outs[0]
        if not axes:
            np.copyto(y, x)
        elif x.dtype in _HALF:
            y[...] = fn(x.astype(np.float32), axis=axes, keepdims=keepdim)
        else:
            fn(x, axis=axes, keepdims=keepdim, out=y)

    return k


_sum_any = _reduce(np.sum)
_SUM_ROWS_MIN = 64  #: leading elements from which a sum over them is one BLAS product
_ONES: dict[tuple[int, int], np.ndarray] = {}


def _sum(ctx: Any, outs: list, ins: list, axes: tuple[int, ...], keepdim: bool) -> None:
    """``sum``; over the leading axes of a float32/float64 tensor (a bias's or a norm weight's
    gradient: the sum over every row), ``ones @ x`` through BLAS: numpy adds a (1024, 64)
    along axis 0 row by row in 25 us, the product takes 3.7 us. BLAS adds in blocks (its
    rounding differs from numpy's; against float64 the product was the closer of the two on
    that shape: 1.9e-4 against 6.5e-4); infinities and NaN propagate the same."""
    x, y = ins[0], outs[0]
    k = len(axes)
    if (
        k
        and k < x.ndim
        and x.dtype.num in _BLAS_NUMS
        and tuple(axes) == tuple(range(k))
        and x.flags.c_contiguous
    ):
        m = math.prod(x.shape[:k])
        if m >= _SUM_ROWS_MIN and y.flags.c_contiguous:
            ones = _ONES.get((m, x.dtype.num))
            if ones is None:
                ones = _ONES[(m, x.dtype.num)] = np.ones(m, x.dtype)
            n = x.size // m
            np.matmul(ones, x.reshape(m, n), out=y.reshape(n))
            return
    _sum_any(ctx, outs, ins, axes, keepdim)


def _arg(fn: Any):
    def k(ctx: Any, outs: list, ins: list, axis: int, keepdim: bool) -> None:
        x = ins[0]
        if x.dtype in _HALF:
            x = x.astype(np.float32)
        outs[0][...] = fn(x, axis=axis, keepdims=keepdim)

    return k


def _argsort(ctx: Any, outs: list, ins: list, descending: bool) -> None:
    x, y = ins[0], outs[0]
    if x.ndim == 0:
        y[...] = 0
        return
    if x.dtype in _HALF:
        x = x.astype(np.float32)
    if descending:  # NOTE: a stable ascending sort of the reversed row, reversed: ties in order, NaN first
        y[...] = x.shape[-1] - 1 - np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    else:
        y[...] = np.argsort(x, axis=-1, kind="stable")


def _kept(perm: tuple[int, ...]) -> int:
    """The trailing axes a permutation keeps in place (all but one at most)."""
    n, k = len(perm), 0
    while k < n - 1 and perm[n - 1 - k] == n - 1 - k:
        k += 1
    return k


_C_LAYOUT_MIN = 1 << 16  #: bytes from which an eager permute goes through layout.c


def _bind_permute(ctx: Any, outs: list, ins: list, perm: tuple[int, ...]) -> Any:
    """Static programs: the C kernel's call with its arguments made once (layout.py)."""
    if ctx.stream is not None:
        return None
    return layout.permute_call(ins[0], outs[0], tuple(perm), _kept(tuple(perm)))


def _permute(ctx: Any, outs: list, ins: list, perm: tuple[int, ...]) -> None:
    x, y = ins[0], outs[0]
    n, k = len(perm), _kept(tuple(perm))
    if k and x.nbytes >= _C_LAYOUT_MIN:  # below: the call's set-up costs more than it saves
        call = layout.permute_call(x, y, tuple(perm), k)
        if call is not None:
            call()
            return
    if k and x.size and x.flags.c_contiguous and y.flags.c_contiguous:
        # each kept run of elements as one wide element: numpy moves it as a block (the
        # attention heads' (16, 64, 4, 16) -> (16, 4, 64, 16): 31 -> 14 us; runs of 16 bytes 9x)
        run = np.dtype((np.void, x.itemsize * math.prod(x.shape[n - k :])))
        x = x.reshape(*x.shape[: n - k], -1).view(run)[..., 0]
        y = y.reshape(*y.shape[: n - k], -1).view(run)[..., 0]
        perm = perm[: n - k]
    np.copyto(y, x.transpose(perm))


_permute.bind = _bind_permute  # type: ignore[attr-defined]


def _expand(ctx: Any, outs: list, ins: list, shape: tuple[int, ...]) -> None:
    np.copyto(outs[0], np.broadcast_to(ins[0], shape))


def _slice(ctx: Any, outs: list, ins: list, starts: tuple, stops: tuple, steps: tuple) -> None:
    np.copyto(outs[0], ins[0][tuple(slice(a, b, c) for a, b, c in zip(starts, stops, steps))])


def _concat(ctx: Any, outs: list, ins: list, axis: int) -> None:
    call = layout.concat_call(ins, outs[0], axis)  # None below two team threads' share
    if call is None:
        np.concatenate(ins, axis=axis, out=outs[0])
    else:
        call()


def _bind_concat(ctx: Any, outs: list, ins: list, axis: int) -> Any:
    """Static programs: the team's call with its pointers made once (layout.py)."""
    if ctx.stream is not None:
        return None
    return layout.concat_call(ins, outs[0], axis)


_concat.bind = _bind_concat  # type: ignore[attr-defined]


def _pad(ctx: Any, outs: list, ins: list, pads: tuple, value: Any) -> None:
    y = outs[0]
    y.fill(value)
    y[tuple(slice(b, b + s) for (b, _), s in zip(pads, ins[0].shape))] = ins[0]


def _check_index(op: str, idx: np.ndarray, size: int, axis: int, wrap: bool = False) -> None:
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < (-size if wrap else 0) or hi >= size:
            _index_error(op, lo if lo < (-size if wrap else 0) else hi, size, axis, wrap)


def _index_error(op: str, bad: int, size: int, axis: int, wrap: bool) -> None:
    allowed = f"[-{size}, {size})" if wrap else f"[0, {size})"
    raise OpArgumentError(
        f"[{op}] index {bad} is out of range for axis {axis} of size {size}; indices must be in {allowed}"
    )


#: a 1-D gather index made of at most this many runs of consecutive indices is that many
#: slice copies (a rotation, rotary's rotate-half, is two)
_GATHER_RUNS = 4


def _gather(ctx: Any, outs: list, ins: list, axis: int, wrap: bool = False) -> None:
    """``gather``: the C kernel (index.c: the range check and the copies in one call), else
    numpy; ``wrap``: an index in ``[-n, 0)`` counts from the end."""
    x, idx = ins
    call = index.gather_call(outs[0], x, idx, axis, wrap)
    if call is not None:
        bad = call()
        if bad >= 0:
            _index_error("gather", int(idx.reshape(-1)[bad]), x.shape[axis], axis, wrap)
        return
    _check_index("gather", idx, x.shape[axis], axis, wrap)
    if wrap and idx.size and int(idx.min()) < 0:
        idx = np.where(idx < 0, idx + x.shape[axis], idx)
    if idx.ndim == 1 and 1 < idx.size and x.size > idx.size:
        cuts = np.flatnonzero(np.diff(idx) != 1) + 1
        if len(cuts) < _GATHER_RUNS:
            # NOTE: np.take copies element by element: the rotate-half of (8, 4, 128, 64)
            # float32 took 324 us, as two slice copies 76
            lead = (slice(None),) * axis
            for lo, hi in zip((0, *cuts), (*cuts, idx.size)):
                start = int(idx[lo]) % x.shape[axis]
                np.copyto(outs[0][(*lead, slice(lo, hi))], x[(*lead, slice(start, start + hi - lo))])
            return
    np.take(x, idx, axis=axis, out=outs[0])


def _bind_gather(ctx: Any, outs: list, ins: list, axis: int, wrap: bool = False) -> Any:
    """Static programs: the C call with its pointers cast once and the range check after it."""
    if ctx.stream is not None:
        return None
    x, idx = ins
    call = index.gather_call(outs[0], x, idx, axis, wrap)
    if call is None:
        return functools.partial(_gather, ctx, outs, ins, axis, wrap)

    def run() -> None:
        bad = call()
        if bad >= 0:
            _index_error("gather", int(idx.reshape(-1)[bad]), x.shape[axis], axis, wrap)

    return run


_gather.bind = _bind_gather  # type: ignore[attr-defined]


def _scatter_add(ctx: Any, outs: list, ins: list, axis: int) -> None:
    x, idx, src = ins
    y = outs[0]
    if idx.size and src.shape == x.shape[:axis] + idx.shape + x.shape[axis + 1 :]:
        np.copyto(y, x)
        bad = index.scatter_add(y, idx, src, axis)  # the C kernel (index.c), or -1
        if bad is None:
            return
        if bad >= 0:  # an index out of range: nothing was added
            _check_index("scatter_add", idx, x.shape[axis], axis)
    _check_index("scatter_add", idx, x.shape[axis], axis)
    np.copyto(y, x)
    key = (slice(None),) * axis + (idx,)
    if y.dtype in _HALF:
        acc = y.astype(np.float32)
        np.add.at(acc, key, src.astype(np.float32))
        y[...] = acc
    elif (
        idx.size > 1 and y.dtype != np.bool_ and src.shape == x.shape[:axis] + idx.shape + x.shape[axis + 1 :]
    ):
        if idx.ndim != 1:  # ids of any shape (an embedding's [batch, seq]): one run of ids
            src = src.reshape(src.shape[:axis] + (idx.size,) + src.shape[axis + idx.ndim :])
            idx = idx.reshape(-1)
        # NOTE: np.add.at is an unbuffered loop (an embedding's gradient, 1024 ids x 64:
        # 1.7 ms); sorting the ids and summing each run of equal ids with reduceat is 6x
        # faster, adding in the same order (a stable sort keeps each id's rows in order)
        order = np.argsort(idx, kind="stable")
        ids = idx[order]
        starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
        rows = np.moveaxis(src, axis, 0)[order]
        np.moveaxis(y, axis, 0)[ids[starts]] += np.add.reduceat(rows, starts, axis=0)
    else:
        np.add.at(y, key, src)


def _scatter(ctx: Any, outs: list, ins: list, axis: int) -> None:
    x, idx, src = ins
    y = outs[0]
    _check_index("scatter", idx, x.shape[axis], axis)
    np.copyto(y, x)
    y[(slice(None),) * axis + (idx,)] = src


def _full(ctx: Any, outs: list, ins: list, shape: tuple, value: Any, dtype: Any) -> None:
    outs[0].fill(value)


def _arange(ctx: Any, outs: list, ins: list, start: Any, step: Any, dtype: Any) -> None:
    y = outs[0]
    n = y.shape[0]
    if y.dtype.kind in "iu":
        y[...] = np.arange(n, dtype=np.int64) * int(step) + int(start)
    else:
        y[...] = np.arange(n, dtype=np.float64) * step + start


def _philox(ctx: Any, outs: list, ins: list, shape: tuple, seed: int, offset: int, dtype: Any) -> None:
    y = outs[0]
    y[...] = philox_uniform(y.size, seed, offset).reshape(y.shape)


def _copy(ctx: Any, outs: list, ins: list) -> None:
    np.copyto(outs[0], ins[0])


def _logical_not(ctx: Any, outs: list, ins: list) -> None:
    np.logical_not(ins[0], out=outs[0])


class _Sync:
    """A kernel context for work already running on a stream's worker thread."""

    stream = None


_SYNC = _Sync()


def _on_stream(fn: Any):
    """Run on the caller's thread on the default stream, on the stream's worker otherwise.
    A kernel with a binder (products) goes to the stream bound: a captured graph replays the
    BLAS call on its blocks, not the kernel's checks and cuts on every run."""
    binder = getattr(fn, "bind", None)

    def k(ctx: Any, outs: list, ins: list, **attrs: Any) -> None:
        s = ctx.stream
        if s is None:
            fn(ctx, outs, ins, **attrs)
        else:
            outs, ins = list(outs), list(ins)
            call = binder(_SYNC, outs, ins, **attrs) if binder is not None else None
            s.submit(call or functools.partial(fn, _SYNC, outs, ins, **attrs))

    k.__name__ = getattr(fn, "__name__", "kernel")
    return k


def _bind_on_stream(fn: Any):
    """The binder of a kernel wrapped by :func:`_on_stream`: on the default stream, the
    kernel itself with its arguments (the wrapper's stream test is paid once)."""

    def bind(ctx: Any, outs: list, ins: list, **attrs: Any) -> Any:
        return functools.partial(fn, ctx, outs, ins, **attrs) if ctx.stream is None else None

    return bind


def _erf(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return _special.erf(x, out=out) if out is not None else _special.erf(x)


TABLE: list[tuple[str, Any, tuple, bool]] = [
    ("neg", _unary(np.negative), NUMERIC, True),
    ("abs", _unary(np.abs), NUMERIC, True),
    ("sign", _unary(np.sign), NUMERIC, True),
    ("exp", _unary(np.exp, split=True), FLOATS, True),
    ("log", _unary(np.log, split=True), FLOATS, True),
    ("sqrt", _unary(np.sqrt), FLOATS, True),
    ("rsqrt", _unary(_rsqrt), FLOATS, True),
    ("sin", _unary(np.sin, split=True), FLOATS, True),
    ("cos", _unary(np.cos, split=True), FLOATS, True),
    ("tanh", _unary(np.tanh, split=True), FLOATS, True),
    ("erf", _unary(_erf, split=True), FLOATS, True),
    ("floor", _unary(np.floor), FLOATS, True),
    ("ceil", _unary(np.ceil), FLOATS, True),
    ("logical_not", _logical_not, ("bool",), True),
    ("add", _binary(np.add), ALL, True),
    ("sub", _binary(np.subtract), NUMERIC, True),
    ("mul", _binary(np.multiply), ALL, True),
    ("div", _binary(np.divide), FLOATS, True),
    ("pow", _binary(np.power), NUMERIC, True),
    ("maximum", _binary(np.maximum), ALL, True),
    ("minimum", _binary(np.minimum), ALL, True),
    ("floor_divide", _binary(np.floor_divide), NUMERIC, True),
    ("remainder", _binary(np.remainder), NUMERIC, True),
    ("eq", _binary(np.equal), ALL, True),
    ("ne", _binary(np.not_equal), ALL, True),
    ("lt", _binary(np.less), ALL, True),
    ("le", _binary(np.less_equal), ALL, True),
    ("gt", _binary(np.greater), ALL, True),
    ("ge", _binary(np.greater_equal), ALL, True),
    ("logical_and", _binary(np.logical_and), ("bool",), True),
    ("logical_or", _binary(np.logical_or), ("bool",), True),
    ("where", _where, ALL, True),
    ("cast", _cast, ALL, False),
    ("sum", _sum, NUMERIC, False),
    ("prod", _reduce(np.prod), NUMERIC, False),
    ("max", _reduce(np.max), ALL, False),
    ("min", _reduce(np.min), ALL, False),
    ("argmax", _arg(np.argmax), ALL, False),
    ("argmin", _arg(np.argmin), ALL, False),
    ("argsort", _argsort, ALL, False),
    ("matmul", _matmul, NUMERIC, False),
    ("matmul_t", _matmul_t, NUMERIC, False),  # fused composite, not a primitive
    ("permute", _permute, ALL, False),
    ("expand", _expand, ALL, False),
    ("slice", _slice, ALL, False),
    ("concat", _concat, ALL, False),
    ("pad", _pad, ALL, False),
    ("gather", _gather, ALL, False),
    ("scatter_add", _scatter_add, NUMERIC, False),
    ("scatter", _scatter, ALL, False),
    ("full", _full, ALL, False),
    ("arange", _arange, NUMERIC, False),
    ("philox_uniform", _philox, ("float32", "float64"), False),
    ("copy", _copy, ALL, False),
]

#: float8: the ops that only move data, where and cast (arithmetic has no kernel: the core
#: names the op and the dtype)
TABLE += [(op, fn, FLOAT8, bcast) for op, fn, _, bcast in TABLE if op in FLOAT8_OPS]


#: the ops whose kernels take broadcast inputs (the element-wise ones)
_BCAST = frozenset(op for op, _, _, bcast in TABLE if bcast)


def register_kernels(registry: Any) -> None:
    # NOTE: numpy's floating-point warnings (overflow to inf, 0/0, integer division by zero,
    # which gives 0) are the defined IEEE results here, as on accelerators: no warning.
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"plugins\.cpu\.kernels")
    for op, fn, dtypes, bcast in TABLE:
        inline = getattr(fn, "inline_stream", False)
        k = fn if inline else _on_stream(fn)
        bind = getattr(fn, "bind", None) or (None if inline else _bind_on_stream(fn))
        half = getattr(fn, "half", None)
        if half is not None:
            full = [d for d in dtypes if np.dtype(d) not in _HALF]
            registry.add_kernel(op, "cpu", full, k, broadcast=bcast, bind=bind)
            registry.add_kernel(op, "cpu", [d for d in dtypes if np.dtype(d) in _HALF], half, broadcast=bcast)
        else:
            registry.add_kernel(op, "cpu", dtypes, k, broadcast=bcast, bind=bind)
    for op, fn in complex_kernels.TABLE.items():  # complex64/complex128: numpy (complex_kernels.py)
        registry.add_kernel(op, "cpu", complex_kernels.COMPLEX, _on_stream(fn), broadcast=op in _BCAST)
