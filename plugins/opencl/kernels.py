"""Kernels for every primitive of ``adapter_api.primitives``, launched on pyopencl queues.

Each kernel is ``fn(ctx, outs, ins, **attrs)``: ``outs``/``ins`` are :class:`CLView`
(buffer, byte offset, shape, dtype) of contiguous regions; ``ctx.stream`` is the command
queue. The OpenCL C lives in ``math.cl`` (per dtype), ``move.cl`` (per element size) and a
generated cast program (see ``programs.py``). This module imports neither pyopencl nor a
device, so registering costs nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from adapter_api import KernelError, KernelNotFoundError, OpArgumentError

from .launch import (
    _FLAT,
    _NAMES,
    _ONE_A,
    _ONE_B,
    ALL,
    FLOATS,
    NUMERIC,
    _bcast_strides,
    _binder,
    _check_index,
    _env,
    _grid,
    _i64,
    _index,
    _launch,
    _launch_ew,
    _strided_copy,
    _strides,
    _translated,
)
from .linalg import matmul, matmul_t

if TYPE_CHECKING:
    from .runtime import CLView, OpenCLDevice


# -- elementwise -------------------------------------------------------------------------
def _unary(op: str) -> Callable[..., None]:
    name = f"u_{op}"

    def kernel(ctx, outs, ins, **_):
        (y,), (x,) = outs, ins
        n = y.size
        if n:
            dev, q = _env(ctx, x.dtype)
            k = dev.kernel("math", _NAMES[x.dtype], name)
            _launch_ew(dev, q, k, n, y.buffer, y.eoff, x.buffer, x.eoff, _i64(n))

    return kernel


def _binary(op: str) -> Callable[..., None]:
    name = f"b_{op}"

    def kernel(ctx, outs, ins, **_):
        (z,), (a, b) = outs, ins
        n = z.size
        if n:
            dev, q = _env(ctx, a.dtype)
            k = dev.kernel("math", _NAMES[a.dtype], name)
            if a.shape == z.shape and b.shape == z.shape:
                ix = _FLAT
            elif b.shape == z.shape and a.size == 1:
                ix = _ONE_A
            elif a.shape == z.shape and b.size == 1:
                ix = _ONE_B
            else:
                ix = _index(z.shape, _bcast_strides(z.shape, a.shape), _bcast_strides(z.shape, b.shape))
            _launch_ew(dev, q, k, n, z.buffer, z.eoff, a.buffer, a.eoff, b.buffer, b.eoff, _i64(n), ix)

    return kernel


def where(ctx, outs, ins, **_):
    (z,), (c, a, b) = outs, ins
    n = z.size
    if n:
        dev, q = _env(ctx, a.dtype)
        k = dev.kernel("math", _NAMES[a.dtype], "where_")
        if c.shape == z.shape and a.shape == z.shape and b.shape == z.shape:
            ix = _FLAT
        else:
            ix = _index(z.shape, *(_bcast_strides(z.shape, v.shape) for v in (c, a, b)))
        _launch_ew(
            dev, q, k, n, z.buffer, z.eoff, c.buffer, c.eoff, a.buffer, a.eoff, b.buffer, b.eoff, _i64(n), ix
        )


def cast(ctx, outs, ins, **_):
    (y,), (x,) = outs, ins
    n = y.size
    if not n:
        return
    dev, q = _env(ctx, x.dtype)
    _env(ctx, y.dtype)
    if x.dtype == y.dtype:
        dev.copy(q, y.buffer, y.offset, x.buffer, x.offset, x.nbytes)
        return
    if y.dtype not in _NAMES:
        # Decline: the core falls back to the cpu plugin for targets this plugin cannot hold.
        raise KernelNotFoundError(f"[opencl] cast to {y.dtype} is not supported on this plugin")
    k = dev.kernel("cast", "all", f"cast_{_NAMES[x.dtype]}_{_NAMES[y.dtype]}")
    _launch_ew(dev, q, k, n, y.buffer, y.eoff, x.buffer, x.eoff, _i64(n))


# -- reductions --------------------------------------------------------------------------
_IDENTITY = {"sum": 0, "prod": 1}
_CPU_COLS = 16  #: on CPU devices, reduce an [A, R, B] array in place from this many columns B
_CPU_ROWS = 16  #: ... and rows of an [A, R] array one item per row from this many rows A


def _groups(shape: Sequence[int], axes: Sequence[int]) -> list[tuple[int, bool]]:
    """(size, reduced) runs of ``shape`` with size-1 dims dropped and equal neighbours merged."""
    runs: list[tuple[int, bool]] = []
    for d, s in enumerate(shape):
        if s == 1:
            continue
        red = d in axes
        if runs and runs[-1][1] == red:
            runs[-1] = (runs[-1][0] * s, red)
        else:
            runs.append((s, red))
    return runs


def _reduce_cols(
    dev: OpenCLDevice, q: Any, k: Any, ybuf: Any, yo: int, xbuf: Any, xo: int, A: int, R: int, B: int
) -> None:
    """y[a, b] = op over x[a, :, b] for an (A, R, B) array: one work item per output, in order
    (on CPU devices in groups of ``ew_local``: neighbouring outputs share a group's lanes)."""
    ls = dev.ew_local if dev.is_cpu else dev.local_size
    dev.launch(q, k, _grid(A * B, 1, ls), (ls,), ybuf, _i64(yo), xbuf, _i64(xo), _i64(A), _i64(R), _i64(B))


def _reduce_rows(dev, q, op, y, yo, xbuf, xo, dtype, A, R):
    """y[a] = op over x[a, :] for an (A, R) array: one work-group per row (and chunk)."""
    if dev.is_cpu and A >= _CPU_ROWS:
        # NOTE: a 256-item tree per row costs PoCL a pass over the group per barrier: 3.8 ms
        # for the sums over the last dim of a [1024, 64] array, 0.1 ms as one item per row
        _reduce_cols(
            dev, q, dev.kernel("math", _NAMES[dtype], f"r_{op}_cols"), y.buffer, yo, xbuf, xo, A, R, 1
        )
        return
    ls = dev.local_size
    k = dev.kernel("math", _NAMES[dtype], f"r_{op}_rows")
    target = 4 * dev.device.max_compute_units
    nchunks = 1
    if A < target and _NAMES[dtype] != "float16" and R > 4 * ls:
        nchunks = min(-(-R // (4 * ls)), -(-target // A))
    if nchunks == 1:
        dev.launch(q, k, (A * ls,), (ls,), y.buffer, _i64(yo), xbuf, _i64(xo), _i64(R), _i64(R), _i64(1))
        return
    chunk = -(-R // nchunks)
    nchunks = -(-R // chunk)
    part = dev.temp(A * nchunks * dtype.itemsize)
    dev.launch(
        q, k, (A * nchunks * ls,), (ls,), part, _i64(0), xbuf, _i64(xo), _i64(R), _i64(chunk), _i64(nchunks)
    )
    dev.launch(
        q, k, (A * ls,), (ls,), y.buffer, _i64(yo), part, _i64(0), _i64(nchunks), _i64(nchunks), _i64(1)
    )


def _reduce(op: str) -> Callable[..., None]:
    def kernel(ctx, outs, ins, axes=(), keepdim=False, **_):
        (y,), (x,) = outs, ins
        if y.size == 0:
            return
        dev, q = _env(ctx, x.dtype)
        if x.size == 0:
            if op not in _IDENTITY:
                raise OpArgumentError(
                    f"[{op}] reduction over an empty axis of shape {x.shape}; "
                    f"{op} of nothing is undefined; reduce a non-empty tensor"
                )
            dev.fill(q, y.buffer, np.array(_IDENTITY[op], x.dtype), y.offset, y.nbytes)
            return
        runs = _groups(x.shape, set(axes))
        if not any(red for _, red in runs):
            dev.copy(q, y.buffer, y.offset, x.buffer, x.offset, x.nbytes)
            return
        flags = [red for _, red in runs]
        if flags in ([True], [False, True], [True, False], [False, True, False]):
            sizes = [s for s, _ in runs]
            i = flags.index(True)
            A, R, B = math.prod(sizes[:i]), sizes[i], math.prod(sizes[i + 1 :])
            if B == 1 and R > 16:
                _reduce_rows(dev, q, op, y, y.eoff, x.buffer, x.eoff, x.dtype, A, R)
                return
            # NOTE: on CPU devices neighbouring columns are neighbouring lanes of the vectorised
            # work-group, so a sum over the rows of a [R, 64] gradient reads it once, in place:
            # 20x the transposing copy plus row reduction below (PoCL, the Llama's norm weights)
            if B == 1 or A * B >= 1024 or R <= 64 or (dev.is_cpu and B >= _CPU_COLS):
                k = dev.kernel("math", _NAMES[x.dtype], f"r_{op}_cols")
                _reduce_cols(dev, q, k, y.buffer, y.eoff, x.buffer, x.eoff, A, R, B)
                return
        # General case: move the reduced dims last into a scratch buffer, then reduce rows.
        xs = _strides(x.shape)
        order = [d for d in range(len(x.shape)) if d not in axes] + sorted(axes)
        tshape = [x.shape[d] for d in order]
        R = math.prod(x.shape[d] for d in axes)
        A = x.size // R
        tmp = dev.temp(x.nbytes)
        k = dev.kernel("move", str(x.dtype.itemsize), "strided_copy")
        _launch_ew(
            dev,
            q,
            k,
            x.size,
            tmp,
            _i64(0),
            x.buffer,
            x.eoff,
            _i64(x.size),
            _index(tshape, [xs[d] for d in order], _strides(tshape)),
        )
        _reduce_rows(dev, q, op, y, y.eoff, tmp, 0, x.dtype, A, R)

    return kernel


def _argreduce(op: str) -> Callable[..., None]:
    def kernel(ctx, outs, ins, axis=0, keepdim=False, **_):
        (y,), (x,) = outs, ins
        if y.size == 0:
            return
        shape = x.shape if x.shape else (1,)
        axis = int(axis) if x.shape else 0
        A, R, B = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])
        if R == 0:
            raise OpArgumentError(
                f"[{op}] axis {axis} of shape {x.shape} is empty; an empty axis "
                f"has no {op}; pass a non-empty axis"
            )
        dev, q = _env(ctx, x.dtype)
        if B == 1 and R > 64 and not (dev.is_cpu and A >= _CPU_ROWS):
            k = dev.kernel("math", _NAMES[x.dtype], f"r_{op}_rows")
            ls = dev.local_size
            dev.launch(q, k, (A * ls,), (ls,), y.buffer, y.eoff, x.buffer, x.eoff, _i64(R))
        else:
            k = dev.kernel("math", _NAMES[x.dtype], f"r_{op}_cols")
            _reduce_cols(dev, q, k, y.buffer, y.eoff, x.buffer, x.eoff, A, R, B)

    return kernel


_SORT_C = 16  # math.cl: SORT_C, the run each work item sorts first and merges per launch


def argsort(ctx, outs, ins, descending=False, **_):
    """A stable merge sort of (key, index) pairs per row: runs of 16 by insertion, then
    ceil(log2(R / 16)) merge launches, O(n) each."""
    (y,), (x,) = outs, ins
    n = y.size
    if n == 0:
        return
    R = x.shape[-1] if x.shape else 1
    rows = n // R
    dev, q = _env(ctx, x.dtype)
    passes = max(0, (-(-R // _SORT_C) - 1).bit_length())
    ls = dev.local_size
    items = rows * -(-R // _SORT_C)
    grid = (-(-items // ls) * ls,)
    size = x.dtype.itemsize
    keys = [dev.temp(n * size), dev.temp(n * size) if passes else None]
    idx = [(y.buffer, y.eoff), (dev.temp(n * 8) if passes else None, _i64(0))]
    cur = passes % 2  # the last merge must land in y
    desc = np.int32(bool(descending))
    name = _NAMES[x.dtype]
    dev.launch(
        q,
        dev.kernel("math", name, "argsort_block"),
        grid,
        (ls,),
        keys[cur],
        idx[cur][0],
        _i64(idx[cur][1]),
        x.buffer,
        x.eoff,
        _i64(rows),
        _i64(R),
        desc,
    )
    merge = dev.kernel("math", name, "argsort_merge")
    w = _SORT_C
    while w < R:
        nxt = 1 - cur
        dev.launch(
            q,
            merge,
            grid,
            (ls,),
            keys[nxt],
            idx[nxt][0],
            _i64(idx[nxt][1]),
            keys[cur],
            idx[cur][0],
            _i64(idx[cur][1]),
            _i64(rows),
            _i64(R),
            _i64(w),
            desc,
        )
        cur, w = nxt, w * 2


# -- layout ------------------------------------------------------------------------------
def copy(ctx, outs, ins, **_):
    (y,), (x,) = outs, ins
    dev, q = _env(ctx, x.dtype)
    dev.copy(q, y.buffer, y.offset, x.buffer, x.offset, x.nbytes)


def permute(ctx, outs, ins, perm=(), **_):
    (y,), (x,) = outs, ins
    dev, q = _env(ctx, x.dtype)
    xs = _strides(x.shape)
    _strided_copy(dev, q, y, y.eoff, x, x.eoff, y.shape, [xs[p] for p in perm], _strides(y.shape))


def expand(ctx, outs, ins, shape=(), **_):
    (y,), (x,) = outs, ins
    dev, q = _env(ctx, x.dtype)
    _strided_copy(dev, q, y, y.eoff, x, x.eoff, y.shape, _bcast_strides(y.shape, x.shape), _strides(y.shape))


def slice_(ctx, outs, ins, starts=(), stops=(), steps=(), **_):
    (y,), (x,) = outs, ins
    dev, q = _env(ctx, x.dtype)
    xs = _strides(x.shape)
    steps = steps or (1,) * len(x.shape)
    off = int(x.eoff) + sum(int(s) * st for s, st in zip(starts, xs))
    _strided_copy(
        dev, q, y, y.eoff, x, off, y.shape, [st * int(p) for st, p in zip(xs, steps)], _strides(y.shape)
    )


def concat(ctx, outs, ins, axis=0, **_):
    (y,) = outs
    dev, q = _env(ctx, y.dtype)
    ys = _strides(y.shape)
    at = 0
    for x in ins:
        _strided_copy(dev, q, y, int(y.eoff) + at * ys[axis], x, x.eoff, x.shape, _strides(x.shape), ys)
        at += x.shape[axis]


def pad(ctx, outs, ins, pads=(), value=0, **_):
    (y,), (x,) = outs, ins
    dev, q = _env(ctx, x.dtype)
    if x.size < y.size:
        dev.fill(q, y.buffer, np.array(value, y.dtype), y.offset, y.nbytes)
    ys = _strides(y.shape)
    off = int(y.eoff) + sum(int(p[0]) * st for p, st in zip(pads, ys))
    _strided_copy(dev, q, y, off, x, x.eoff, x.shape, _strides(x.shape), ys)


# -- indexing ----------------------------------------------------------------------------
def _pjqa(x: CLView, index: CLView, axis: int) -> tuple[int, int, int, int]:
    if index.dtype != np.int64:
        raise OpArgumentError(f"[opencl] index tensors must be int64, got {index.dtype}; cast the index")
    return math.prod(x.shape[:axis]), index.size, math.prod(x.shape[axis + 1 :]), x.shape[axis]


def gather(ctx, outs, ins, axis=0, wrap=False, **_):
    (y,), (x, index) = outs, ins
    P, J, Q, A = _pjqa(x, index, axis)
    if y.size == 0:
        return
    dev, q = _env(ctx, x.dtype)
    k = dev.kernel("move", str(x.dtype.itemsize), "gather_wrap" if wrap else "gather")
    _launch(
        dev,
        q,
        k,
        y.size,
        y.buffer,
        y.eoff,
        x.buffer,
        x.eoff,
        index.buffer,
        index.eoff,
        _i64(P),
        _i64(J),
        _i64(Q),
        _i64(A),
        dev.error_buffer,
    )
    _check_index(dev, q, "gather", axis, A, -A if wrap else 0)


def _scatter(op: str) -> Callable[..., None]:
    def kernel(ctx, outs, ins, axis=0, **_):
        (y,), (x, index, src) = outs, ins
        P, J, Q, A = _pjqa(x, index, axis)
        dev, q = _env(ctx, x.dtype)
        dev.copy(q, y.buffer, y.offset, x.buffer, x.offset, x.nbytes)
        n = P * J * Q
        if n == 0:
            return
        ls = dev.local_size
        if op == "scatter":
            k = dev.kernel("move", str(x.dtype.itemsize), "scatter")
        elif dev.is_cpu and P * Q >= dev.ew_local:  # an item per column, no atomics
            k, n, ls = dev.kernel("math", _NAMES[x.dtype], "scatter_add_cols"), P * Q, dev.ew_local
        else:
            if x.dtype.itemsize == 8 and not dev.has_int64_atomics:
                raise KernelError(
                    f"[scatter_add] {x.dtype} needs 64-bit atomics (cl_khr_int64_base_atomics), "
                    f"which device '{dev.name}' lacks; use a 4-byte dtype or another device"
                )
            k = dev.kernel("math", _NAMES[x.dtype], "scatter_add")
        dev.launch(
            q,
            k,
            _grid(n, 1, ls),
            (ls,),
            y.buffer,
            y.eoff,
            index.buffer,
            index.eoff,
            src.buffer,
            src.eoff,
            _i64(P),
            _i64(J),
            _i64(Q),
            _i64(A),
            dev.error_buffer,
        )
        _check_index(dev, q, op, axis, A)

    return kernel


# -- creation ----------------------------------------------------------------------------
def full(ctx, outs, ins, value=0, **_):
    (y,) = outs
    dev, q = _env(ctx, y.dtype)
    dev.fill(q, y.buffer, np.array(value, y.dtype), y.offset, y.nbytes)


def arange(ctx, outs, ins, start=0, step=1, **_):
    (y,) = outs
    n = y.size
    if not n:
        return
    dev, q = _env(ctx, y.dtype)
    if y.dtype.kind == "f":
        ft = np.float64 if dev.has_fp64 else np.float32
        start, step = ft(start), ft(step)
    else:
        start, step = _i64(start), _i64(step)
    _launch(dev, q, dev.kernel("math", _NAMES[y.dtype], "arange"), n, y.buffer, y.eoff, start, step, _i64(n))


def philox_uniform(ctx, outs, ins, seed=0, offset=0, **_):
    (y,) = outs
    n = y.size
    if not n:
        return
    dev, q = _env(ctx, y.dtype)
    seed = int(seed) & 0xFFFFFFFFFFFFFFFF
    k = dev.kernel("math", _NAMES[y.dtype], "philox_uniform")
    _launch(
        dev,
        q,
        k,
        -(-n // 4),
        y.buffer,
        y.eoff,
        _i64(n),
        np.uint64(int(offset) & 0xFFFFFFFFFFFFFFFF),
        np.uint32(seed & 0xFFFFFFFF),
        np.uint32(seed >> 32),
    )


# -- the table ---------------------------------------------------------------------------
_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")


def table() -> list[tuple[str, tuple[str, ...], Callable[..., None], bool, Callable[..., Any]]]:
    """(op, dtypes, kernel, broadcast, binder) for every registered kernel."""
    rows: list[tuple[str, tuple[str, ...], Callable[..., None], bool]] = []
    for op in ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "floor", "ceil"):
        rows.append((op, FLOATS, _unary(op), False))
    rows += [
        ("neg", NUMERIC, _unary("neg"), False),
        ("sign", NUMERIC, _unary("sign"), False),
        ("abs", ALL, _unary("abs"), False),
        ("logical_not", ("bool",), _unary("logical_not"), False),
    ]
    for op, dts in (
        ("add", ALL),
        ("mul", ALL),
        ("maximum", ALL),
        ("minimum", ALL),
        ("sub", NUMERIC),
        ("div", FLOATS),
        ("pow", NUMERIC),
        ("floor_divide", NUMERIC),
        ("remainder", NUMERIC),
        *((c, ALL) for c in _COMPARE),
        ("logical_and", ("bool",)),
        ("logical_or", ("bool",)),
    ):
        rows.append((op, dts, _binary(op), True))
    rows += [
        ("where", ALL, where, True),
        ("cast", ALL, cast, False),
        ("sum", NUMERIC, _reduce("sum"), False),
        ("prod", NUMERIC, _reduce("prod"), False),
        ("max", ALL, _reduce("max"), False),
        ("min", ALL, _reduce("min"), False),
        ("argmax", ALL, _argreduce("argmax"), False),
        ("argmin", ALL, _argreduce("argmin"), False),
        ("argsort", ALL, argsort, False),
        ("matmul", NUMERIC, matmul, False),
        ("matmul_t", NUMERIC, matmul_t, False),  # a composite's kernel, not a primitive
        ("permute", ALL, permute, False),
        ("expand", ALL, expand, False),
        ("slice", ALL, slice_, False),
        ("concat", ALL, concat, False),
        ("pad", ALL, pad, False),
        ("gather", ALL, gather, False),
        ("scatter", ALL, _scatter("scatter"), False),
        ("scatter_add", NUMERIC, _scatter("scatter_add"), False),
        ("full", ALL, full, False),
        ("arange", NUMERIC, arange, False),
        ("philox_uniform", ("float32", "float64"), philox_uniform, False),
        ("copy", ALL, copy, False),
    ]
    return [(op, dts, _translated(op, fn), bc, _binder(fn)) for op, dts, fn, bc in rows]
