"""add, sub, mul and div of large contiguous float arrays on the OpenMP team (``elementwise.c``).

Built once per machine by the plugin's compiler through the core's kernel cache, as
``attention.c`` is; without a C compiler the kernels stay numpy's ufuncs (kernels.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .compiler import float_options, own_program

_SOURCE = Path(__file__).with_name("elementwise.c")


def binary_call(code: int, a: np.ndarray, b: np.ndarray, y: np.ndarray, nt: int) -> Any:
    """A zero-argument call writing ``y = a (op code) b`` over ``nt`` threads (the arrays
    C-contiguous and of one float dtype, each of y's shape or of its trailing shape: kernels.py
    checks), or None without a compiler."""
    prog = own_program(_SOURCE, "binary_op", float_options(y.dtype), "elementwise")
    if prog is None:
        return None
    ffi, fn = prog.ffi, prog.fn
    args = (code, y.size, a.size, b.size, ffi.from_buffer(a), ffi.from_buffer(b), ffi.from_buffer(y), nt)

    def run(keep: tuple = (a, b, y)) -> None:
        if fn(*args) != 0:
            raise RuntimeError(f"[cpu] elementwise: the kernel refused op code {code}")

    return run
