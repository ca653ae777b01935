"""A C kernel for ``scatter_add`` on cpu (``index.c``): each source row added to the row its
index names, in order, with add.at's bits (numpy's add.at is an unbuffered loop; a sort and a
reduceat per call cost 0.32-0.40 ms for an embedding's gradient in the tiny Llama step).

Built once per machine and float dtype by the plugin's compiler through the core's kernel
cache, as ``attention.c`` is; without a C compiler, for other dtypes or index types, and where
the source overlaps the output, ``scatter_add`` stays numpy's (kernels.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from . import threads
from .compiler import float_options, own_program

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
