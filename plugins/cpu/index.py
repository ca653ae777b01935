"""C kernels for the index ops on cpu (``index.c``).

``scatter_add``: each source row added to the row its index names, in order, with add.at's
bits (numpy's add.at is an unbuffered loop; a sort and a reduceat per call cost 0.32-0.40 ms
for an embedding's gradient in the tiny Llama step).

``gather`` (:func:`gather_call`): the range check (``[0, n)``, or ``[-n, n)`` with negative
indices counted from the end when the op's ``wrap`` attr is set) and the row copies in one
call; numpy's took 13 us for a decoding step's one-row lookups (``min``, ``max``, ``diff``,
``take``) and three more element-wise ops wrapped negative indices (81 against 40 us on
[1000, 64] with 256 indices).

``where`` (:func:`where_call`): one pass, each operand read through its broadcast strides. For
a condition constant along the output's rows, whole rows are copied from the operand it picks:
the KV cache's update in a decoding step (numpy's branchless select took five passes and a
temporary over the whole cache). Element by element it is a branchless, vectorised bit select
(relu's gradient: numpy's five passes took 1.75 ms per million float32 elements).

Built once per machine (and float dtype, for ``scatter_add``) by the plugin's compiler through
the core's kernel cache, as ``attention.c`` is; without a C compiler, for other dtypes or
index types, non-contiguous operands, and where the source overlaps the output, the ops stay
numpy's (kernels.py).
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np

from . import threads
from .compiler import float_options, own_program, pointer

_SOURCE = Path(__file__).with_name("index.c")
#: bytes of the output each thread of the OpenMP team adds into at least
MIN_BYTES_PER_TEAM_THREAD = 1 << 18


def scatter_add(y: np.ndarray, idx: np.ndarray, src: np.ndarray, axis: int) -> int | None:
    """Add ``src`` into ``y`` (a copy of the input already) along ``axis`` at ``idx`` (any
    shape: the ids in C order). Returns None when added, the position of the first index out
    of ``[0, y.shape[axis])`` when nothing was, or -1 where the C kernel does not apply (the
    caller runs numpy's)."""
    if y.dtype.char not in "fd" or src.dtype != y.dtype or idx.dtype != np.int64:
        return -1
    if not (y.flags.c_contiguous and src.flags.c_contiguous and idx.flags.c_contiguous):
        return -1
    if np.may_share_memory(src, y) or np.may_share_memory(idx, y):
        return -1
    outer, size, row = math.prod(y.shape[:axis]), y.shape[axis], math.prod(y.shape[axis + 1 :])
    if src.size != outer * idx.size * row:
        return -1
    prog = own_program(_SOURCE, "scatter_add_rows", float_options(y.dtype), "scatter_add")
    if prog is None:
        return -1
    ffi = prog.ffi
    nt = threads.team_threads(y.nbytes, MIN_BYTES_PER_TEAM_THREAD)
    bad = prog.fn(
        ffi.from_buffer(y),
        ffi.from_buffer(src),
        ffi.from_buffer("int64_t[]", idx),
        outer,
        idx.size,
        size,
        row,
        nt,
    )
    return None if bad < 0 else int(bad)


def _untyped(entry: str, what: str) -> Any:
    """The program of an entry of ``index.c`` that moves bytes (any dtype: the float build)."""
    return own_program(_SOURCE, entry, (), what)


def gather_call(y: np.ndarray, x: np.ndarray, idx: np.ndarray, axis: int, wrap: bool) -> Any:
    """``y = take(x, idx, axis)`` as a zero-argument C call (pointers cast once: a static
    program binds it) returning -1, or the position in ``idx`` (C order) of the first index
    outside ``[0, n)`` (``[-n, n)`` with ``wrap``; nothing written then); None where the C
    kernel does not apply (the caller runs numpy's)."""
    if idx.dtype != np.int64 or not (
        x.flags.c_contiguous and y.flags.c_contiguous and idx.flags.c_contiguous
    ):
        return None
    if not (x.size and y.size) or x.dtype != y.dtype:
        return None
    prog = _untyped("gather_rows", "gather")
    if prog is None:
        return None
    ffi = prog.ffi
    outer, size = math.prod(x.shape[:axis]), x.shape[axis]
    row = math.prod(x.shape[axis + 1 :]) * x.dtype.itemsize
    call = functools.partial(
        prog.fn, pointer(ffi, y), pointer(ffi, x), pointer(ffi, idx), outer, idx.size, size, row, int(wrap)
    )
    call.keep = (y, x, idx)  # type: ignore[attr-defined]  # what the pointers point into
    return call


#: the most dims ``where_select`` walks (after merging the dims that allow it)
_WHERE_RANK = 16
#: the C ``where`` takes rows (the last merged dim) of at least this many elements
_WHERE_MIN_ROW = 16


def _element_strides(a: np.ndarray, shape: tuple[int, ...]) -> list[int] | None:
    """``a``'s strides in elements, 0 along the dims it is broadcast in (size 1 against
    ``shape``); None where a stride is not a whole number of elements."""
    out = []
    for n, m, st in zip(a.shape, shape, a.strides):
        if n == 1 or m == 1:
            out.append(0)
        elif st % a.dtype.itemsize:
            return None
        else:
            out.append(st // a.dtype.itemsize)
    return out


def where_call(z: np.ndarray, c: np.ndarray, x: np.ndarray, y: np.ndarray) -> Any:
    """``z = where(c, x, y)`` as a zero-argument C call, the operands of ``z``'s rank with
    sizes equal to ``z``'s or 1 (numpy broadcasting), the last (merged) dim at least
    :data:`_WHERE_MIN_ROW` elements: whole rows copied from ``x`` or ``y`` where the condition
    is constant along them, else a branchless select per element (relu's gradient); None
    elsewhere (numpy's bit select runs then).

    >>> import numpy as np
    >>> c = np.arange(32).reshape(2, 16) % 3 == 0
    >>> z = np.empty((2, 16), np.float32)
    >>> call = where_call(z, c, np.ones((2, 16), np.float32), np.zeros((1, 1), np.float32))
    >>> call is None or (call(), bool((z == c).all()))[1]
    True
    """
    shape = z.shape
    if (
        not z.flags.c_contiguous
        or z.size == 0
        or z.ndim == 0
        or c.dtype != np.bool_
        or x.dtype != z.dtype
        or y.dtype != z.dtype
    ):
        return None
    if not (c.ndim == x.ndim == y.ndim == z.ndim):
        return None
    strides = [_element_strides(a, shape) for a in (c, x, y)]
    if any(s is None for s in strides):
        return None
    dims: list[int] = []
    st: list[list[int]] = [[], [], []]
    for d, n in enumerate(shape):  # dim d joins the last kept one where every operand allows
        if dims and all(k[-1] == s[d] * n for k, s in zip(st, strides)):
            dims[-1] *= n
            for k, s in zip(st, strides):
                k[-1] = s[d]
        else:
            dims.append(n)
            for k, s in zip(st, strides):
                k.append(s[d])
    if not dims or len(dims) > _WHERE_RANK or dims[-1] < _WHERE_MIN_ROW:
        return None  # short rows: the walk over them costs more than numpy's passes
    prog = _untyped("where_select", "where")
    if prog is None:
        return None
    ffi = prog.ffi
    arrays = [ffi.new("int64_t[]", v or [0]) for v in (dims, *st)]
    call = functools.partial(
        prog.fn,
        pointer(ffi, z),
        pointer(ffi, c),
        pointer(ffi, x),
        pointer(ffi, y),
        len(dims),
        *arrays,
        z.dtype.itemsize,
    )
    call.keep = (z, c, x, y, arrays)  # type: ignore[attr-defined]
    return call
