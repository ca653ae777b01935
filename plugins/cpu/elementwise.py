"""add, sub, mul and div of large contiguous float arrays on the OpenMP team, and bfloat16's
casts and add/sub/mul/div computed in float32 registers (``elementwise.c``).

Built once per machine by the plugin's compiler through the core's kernel cache, as
``attention.c`` is; without a C compiler the kernels stay numpy's ufuncs (kernels.py).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from adapter_api import DeviceError

from .compiler import cpu_info, float_options, own_program, own_programs

_SOURCE = Path(__file__).with_name("elementwise.c")
BF16 = np.dtype(ml_dtypes.bfloat16)
_F32_NUM = np.dtype(np.float32).num


def binary_call(code: int, a: np.ndarray, b: np.ndarray, y: np.ndarray, nt: int) -> Any:
    """A zero-argument call writing ``y = a (op code) b`` over ``nt`` threads (the arrays
    C-contiguous and of one float dtype, each of y's shape or of its trailing shape: kernels.py
    checks), or None without a compiler, and while it builds (numpy's ufunc gives the same bits
    meanwhile: a first large add does not wait for a compiler)."""
    prog = own_program(_SOURCE, "binary_op", float_options(y.dtype), "elementwise", wait=False)
    if prog is None:
        return None
    ffi, fn = prog.ffi, prog.fn
    args = (code, y.size, a.size, b.size, ffi.from_buffer(a), ffi.from_buffer(b), ffi.from_buffer(y), nt)

    def run(keep: tuple = (a, b, y)) -> None:
        if fn(*args) != 0:
            raise RuntimeError(f"[cpu] elementwise: the kernel refused op code {code}")

    return run


# -- bfloat16: casts and add/sub/mul/div in C (elementwise.c's bf16_* entries) ------------------
_BF16_ENTRIES = ("bf16_from_f32", "bf16_to_f32", "bf16_binary")
_CAST_CHOICES = ("plain", "units")


def bf16_units() -> int:
    """1 where the float32 -> bfloat16 rounding runs on AVX512-BF16's ``vcvtneps2bf16``
    (``OARLOCK_BF16_CAST=units``), 0 for the plain path (``plain``, the default: on the 2-core
    AMD EPYC measured, 1M floats took 0.21 ms plain against 0.46 ms on the instruction,
    benchmarks/bf16.py). Both give the same bits.

    >>> from plugins.cpu import elementwise
    >>> elementwise.bf16_units() in (0, 1)
    True
    """
    return _units(os.environ.get("OARLOCK_BF16_CAST", "plain"))


@functools.cache
def _units(raw: str) -> int:
    v = raw.strip().lower() or "plain"
    if v not in _CAST_CHOICES:
        raise DeviceError(f"[cpu] OARLOCK_BF16_CAST must be plain or units, got {v!r}; unset it for plain")
    if v == "units" and "avx512_bf16" not in cpu_info().get("flags", "").split():
        raise DeviceError(
            "[cpu] OARLOCK_BF16_CAST=units, but this CPU does not list avx512_bf16; unset it for plain"
        )
    return int(v == "units")


_PROGRAMS: list[Any] = []  #: the loaded bf16 programs, once (own_programs' lookup costs ~3 us)


def _bf16_programs() -> Any:
    if _PROGRAMS:
        return _PROGRAMS[0]
    progs = own_programs(_SOURCE, _BF16_ENTRIES, (), "bfloat16 element-wise")
    if progs is not None:
        _PROGRAMS.append(progs)
    return progs


def bf16_cast(x: np.ndarray, y: np.ndarray, nt: int = 1) -> bool:
    """Write ``y = x`` for C-contiguous arrays of one size, float32 -> bfloat16 (rounded to
    nearest even, NaN to the quiet NaN of its sign: ml_dtypes' bits) or bfloat16 -> float32
    (exact); False (nothing written) for other dtypes or without a C compiler.

    >>> import numpy as np, ml_dtypes
    >>> y = np.empty(3, ml_dtypes.bfloat16)
    >>> bf16_cast(np.array([1.0, 1.00390625, np.nan], np.float32), y) and y.view(np.uint16).tolist()
    [16256, 16256, 32704]
    """
    to_bf16 = x.dtype.num == _F32_NUM and y.dtype.num == BF16.num
    if not (to_bf16 or (x.dtype.num == BF16.num and y.dtype.num == _F32_NUM)):
        return False  # asked before the library loads: a float64 -> float32 cast builds nothing
    progs = _bf16_programs()
    if progs is None or x.size != y.size or not (x.flags.c_contiguous and y.flags.c_contiguous):
        return False
    if to_bf16:
        p = progs[0]
        p.fn(x.size, p.ffi.from_buffer(x), p.ffi.from_buffer(y), bf16_units(), nt)
        return True
    p = progs[1]
    p.fn(x.size, p.ffi.from_buffer(x), p.ffi.from_buffer(y), nt)
    return True


def bf16_binary_call(code: int, a: np.ndarray, b: np.ndarray, y: np.ndarray, nt: int) -> Any:
    """A zero-argument call writing the bfloat16 ``y = a (op code) b`` (binary_op's codes),
    computed in float32 and rounded once; each operand C-contiguous bfloat16 of y's size, of a
    trailing block y repeats, or a single element (kernels.py checks). None without a compiler."""
    progs = _bf16_programs()
    if progs is None:
        return None
    p = progs[2]
    ffi = p.ffi
    args = (
        code,
        y.size,
        a.size,
        b.size,
        ffi.from_buffer(a),
        ffi.from_buffer(b),
        ffi.from_buffer(y),
        bf16_units(),
        nt,
    )

    def run(keep: tuple = (a, b, y)) -> None:
        if p.fn(*args) != 0:
            raise RuntimeError(f"[cpu] elementwise: the bfloat16 kernel refused op code {code}")

    return run
