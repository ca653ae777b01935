"""bfloat16 products on the CPU's bf16 dot-product units (AVX512-BF16's ``vdpbf16ps``, AMX-BF16)
through oneDNN's ``dnnl_gemm_bf16bf16f32``: bf16 operands, float32 accumulation, the float32
result rounded once to bfloat16 (to nearest, ties to even), as the plain path does.

The plain path converts both operands to float32 and runs the float32 product (numpy's BLAS),
then rounds. Measured side by side (``benchmarks/bf16.py``, 2-core AMD EPYC with avx512_bf16,
2026-12-04, see docs/benchmarks.md) oneDNN's bf16 GEMM ran 2048² about 2.5-3x faster than that
path; MKL's ``cblas_gemm_bf16bf16f32`` (the ``mkl`` wheel) only ~1.2x on this AMD CPU, and
numpy's OpenBLAS does not export ``sbgemm``. oneDNN is found where its wheel is installed
(``pip install onednn-cpu-gomp``: the GNU-OpenMP build, the runtime of the plugin's own
kernels, so both share one team sized by the thread budget, threads.py).

``OARLOCK_BF16_GEMM`` picks: ``auto`` (the default: oneDNN where it loads and the CPU lists
``avx512_bf16`` or ``amx_bf16``, else the plain path), ``onednn`` (an error if it cannot load),
``fp32`` (always the plain path). What runs is stated in ``get_device_properties().extra``
(``bf16_gemm``).

# NOTE: the bf16 dot-product instructions treat denormal operands as zero and flush denormal
# partial results (float32 below 1.2e-38); the plain path keeps them. Products of normal values
# differ from the plain path only by float32 summation order.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import os
from typing import Any

import ml_dtypes
import numpy as np

from adapter_api import DeviceError

from .compiler import cpu_info
from .gemm import _layout

BF16 = np.dtype(ml_dtypes.bfloat16)
_CHOICES = ("auto", "onednn", "fp32")
#: the wheels that ship oneDNN's CPU library (the plain ``onednn`` one is a SYCL build that needs
#: Intel's DPC++ runtime: tried last, and skipped where it does not load)
_DISTRIBUTIONS = ("onednn-cpu-gomp", "onednn-cpu-iomp", "onednn-cpu-tbb", "onednn")
_UNITS = ("amx_bf16", "avx512_bf16")
_D = ctypes.c_int64


def choice() -> str:
    """``OARLOCK_BF16_GEMM``: ``auto`` (default), ``onednn`` or ``fp32``."""
    v = os.environ.get("OARLOCK_BF16_GEMM", "auto").strip().lower() or "auto"
    if v not in _CHOICES:
        raise DeviceError(
            f"[cpu] OARLOCK_BF16_GEMM must be one of {', '.join(_CHOICES)}, got {v!r}; unset it for auto"
        )
    return v


def units() -> list[str]:
    """The CPU's bf16 matrix/dot-product units among ``amx_bf16`` and ``avx512_bf16`` (from
    /proc/cpuinfo's flags)."""
    flags = set(cpu_info().get("flags", "").split())
    return [u for u in _UNITS if u in flags]


class _DnnlVersion(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_int),
        ("minor", ctypes.c_int),
        ("patch", ctypes.c_int),
        ("hash", ctypes.c_char_p),
        ("cpu_runtime", ctypes.c_uint),
        ("gpu_runtime", ctypes.c_uint),
    ]


@functools.cache
def _onednn() -> tuple[Any, str] | tuple[None, str]:
    """(oneDNN's ``dnnl_gemm_bf16bf16f32``, its version) or (None, why not)."""
    why = "oneDNN not installed (pip install onednn-cpu-gomp)"
    for name in _DISTRIBUTIONS:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        libs = sorted(str(dist.locate_file(f)) for f in dist.files or () if f.name.startswith("libdnnl.so"))
        for path in libs:
            try:
                lib = ctypes.CDLL(path)
                fn = lib.dnnl_gemm_bf16bf16f32
            except (OSError, AttributeError) as exc:
                why = f"oneDNN from {name} does not load ({exc})"
                continue
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_char, ctypes.c_char, _D, _D, _D, ctypes.c_float, ctypes.c_void_p, _D]
            fn.argtypes += [ctypes.c_void_p, _D, ctypes.c_float, ctypes.c_void_p, _D]
            lib.dnnl_version.restype = ctypes.POINTER(_DnnlVersion)
            v = lib.dnnl_version().contents
            return fn, f"oneDNN {v.major}.{v.minor}.{v.patch} ({name})"
    return None, why


@functools.cache
def _route() -> tuple[Any, str]:
    """(the bf16 GEMM to call or None for the plain path, what runs and why)."""
    want = choice()
    if want == "fp32":
        return None, "float32 products (OARLOCK_BF16_GEMM=fp32)"
    fn, what = _onednn()
    have = units()
    if want == "onednn":
        if fn is None:
            raise DeviceError(f"[cpu] OARLOCK_BF16_GEMM=onednn, but {what}; unset it to use float32 products")
        return fn, f"{what} on {', '.join(have) or 'no bf16 units (emulated)'}"
    if fn is None:
        return None, f"float32 products ({what})"
    if not have:
        return None, f"float32 products (this CPU lists neither {' nor '.join(_UNITS)})"
    return fn, f"{what} on {', '.join(have)}"


def describe() -> dict[str, str]:
    """``{"bf16_gemm": ...}`` for the device's properties: what runs bfloat16 products."""
    try:
        return {"bf16_gemm": _route()[1]}
    except DeviceError as exc:
        return {"bf16_gemm": str(exc)}


def _operand(x: np.ndarray) -> tuple[np.ndarray, bytes, int]:
    """A 2-D bf16 operand as oneDNN reads it in place (row-major): (array, b'N' or b'T',
    leading dimension); a copy where neither its rows nor its columns are contiguous."""
    lay = _layout(x)
    if lay is None:
        x = np.ascontiguousarray(x)
        lay = 0, max(x.shape[1], 1)
    return x, b"NT"[lay[0] : lay[0] + 1], lay[1]


def _gemm2d(fn: Any, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out`` (float32, C-contiguous) = ``a @ b`` (2-D bf16) by oneDNN."""
    m, k = a.shape
    n = b.shape[1]
    a, ta, lda = _operand(a)
    b, tb, ldb = _operand(b)
    st = fn(ta, tb, m, n, k, 1.0, a.ctypes.data, lda, b.ctypes.data, ldb, 0.0, out.ctypes.data, max(n, 1))
    if st != 0:
        raise DeviceError(
            f"[cpu] oneDNN's bf16 product failed (status {st}) for {m}x{k} @ {k}x{n}; "
            "set OARLOCK_BF16_GEMM=fp32 to use float32 products"
        )


def matmul(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> bool:
    """``c[...] = a @ b`` for bfloat16 ``a``, ``b``, ``c`` (numpy's matmul shapes, batch axes
    broadcast) on the bf16 units; False (nothing written) where the plain path should run:
    no unit or library (:func:`_route`), other dtypes, an empty product, 1-D operands.

    >>> # c = np.empty((m, n), BF16); matmul(a, b, c) or plain_path(a, b, c)
    """
    fn = _route()[0]
    if fn is None or not (a.dtype == b.dtype == c.dtype == BF16) or a.ndim < 2 or b.ndim < 2:
        return False
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if 0 in (m, n, k) or c.size == 0:
        return False
    if b.ndim == 2 and a.ndim > 2 and a.flags.c_contiguous:  # a stack times one matrix: one product
        a, c2 = a.reshape(-1, k), c.reshape(-1, n) if c.flags.c_contiguous else None
        if c2 is not None:
            out = np.empty(c2.shape, np.float32)
            _gemm2d(fn, a, b, out)
            c2[...] = out
            return True
        a = a.reshape(c.shape[:-2] + (m, k))
    batch = c.shape[:-2]
    a = np.broadcast_to(a, batch + (m, k))
    b = np.broadcast_to(b, batch + (k, n))
    out = np.empty((m, n), np.float32)
    for i in np.ndindex(*batch):
        _gemm2d(fn, a[i], b[i], out)
        c[i] = out
    return True
