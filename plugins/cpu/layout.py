"""A C kernel for ``permute`` on cpu (``layout.c``): the runs of bytes a permutation keeps
together (its unchanged trailing axes) copied in the output's order.

Built once per machine by the plugin's compiler through the core's kernel cache, as
``attention.c`` is; without a C compiler (or for runs under 16 bytes, where numpy's own
strided copy is as good) ``permute`` stays numpy's ``copyto`` of the transposed view.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from . import threads
from .compiler import own_program

_SOURCE = Path(__file__).with_name("layout.c")
RUN_MIN = 16  #: bytes a run needs for the C kernel
#: bytes each thread of the OpenMP team copies at least (a warm team: threads.py's spin)
MIN_BYTES_PER_TEAM_THREAD = 1 << 18
#: output bytes from which a permute writes with non-temporal stores (whole cache lines, not
#: read first): the Llama block's qkv gradient permute, 3 MB, 292-325 -> 186-190 us in the step
#: at two threads (Intel VM); from 1 MB the step was slower
STREAM_MIN = 2 << 20


def _program() -> Any:
    return own_program(_SOURCE, "permute_runs", (), "permute")


def _concat_program() -> Any:
    return own_program(_SOURCE, "concat_rows", (), "concat")


def concat_call(xs: list[np.ndarray], y: np.ndarray, axis: int) -> Any:
    """A zero-argument call writing ``y = np.concatenate(xs, axis)`` on the OpenMP team
    (``concat_rows``), or None where numpy runs it: under two threads' share of bytes, not all
    C-contiguous, a dtype other than y's, a part overlapping y, or no C compiler."""
    nt = threads.team_threads(y.nbytes, MIN_BYTES_PER_TEAM_THREAD)
    if nt < 2 or not y.flags.c_contiguous or not xs:
        return None
    if any(x.dtype != y.dtype or not x.flags.c_contiguous or np.may_share_memory(x, y) for x in xs):
        return None
    prog = _concat_program()
    if prog is None:
        return None
    ffi, fn = prog.ffi, prog.fn
    rows = math.prod(y.shape[:axis])
    lens = ffi.new("int64_t[]", [x.nbytes // rows if rows else 0 for x in xs])
    ptrs = ffi.new("const char *[]", [ffi.cast("const char *", ffi.from_buffer(x)) for x in xs])
    args = (ptrs, lens, len(xs), ffi.from_buffer(y), rows, nt)

    def run_it(keep: tuple = (xs, y, lens, ptrs)) -> None:
        fn(*args)

    return run_it


def permute_call(x: np.ndarray, y: np.ndarray, perm: tuple[int, ...], kept: int) -> Any:
    """A zero-argument call writing ``y = x.transpose(perm)`` (both C-contiguous; ``kept``
    trailing axes unchanged by ``perm``) through the C kernel, or None where it does not
    apply (no C compiler, runs under :data:`RUN_MIN` bytes, nothing to move)."""
    n = len(perm)
    run = x.itemsize * math.prod(x.shape[n - kept :])
    if run < RUN_MIN or not x.size or n - kept < 1 or n - kept > 16:
        return None
    if not (x.flags.c_contiguous and y.flags.c_contiguous):
        return None
    prog = _program()
    if prog is None:
        return None
    outer = perm[: n - kept]
    oshape = np.array([y.shape[k] for k in range(n - kept)], np.int64)
    istride = np.array([x.strides[a] for a in outer], np.int64)
    ffi, fn = prog.ffi, prog.fn
    args = (
        ffi.from_buffer(x),
        ffi.from_buffer(y),
        n - kept,
        ffi.from_buffer("int64_t[]", oshape),
        ffi.from_buffer("int64_t[]", istride),
        run,
        threads.team_threads(x.nbytes, MIN_BYTES_PER_TEAM_THREAD),
        int(y.nbytes >= STREAM_MIN),
    )

    def run_it(keep: tuple = (x, y, oshape, istride)) -> None:
        if fn(*args) != 0:
            raise RuntimeError("[cpu] permute: the kernel refused its arguments")

    return run_it
