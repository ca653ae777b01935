"""bfloat16 products on the CPU's bf16 dot-product units (AVX512-BF16's ``vdpbf16ps``, AMX-BF16)
through oneDNN's ``dnnl_gemm_bf16bf16f32``: bf16 operands, float32 accumulation, the float32
result rounded once to bfloat16 (to nearest, ties to even), as the plain path does.

The plain path converts both operands to float32 and runs the float32 product (numpy's BLAS),
then rounds. Measured side by side (``benchmarks/bf16.py``, 2-core AMD EPYC with avx512_bf16,
2026-12-04, docs/benchmarks.md) oneDNN's bf16 GEMM ran 2048² 2.4x faster than that path on one
thread; MKL's ``cblas_gemm_bf16bf16f32`` (the ``mkl`` wheel) about as fast as the plain path
on this AMD CPU, and numpy's OpenBLAS does not export ``sbgemm``. oneDNN is found where its
wheel is installed (``pip install onednn-cpu-gomp``: the GNU-OpenMP build, the runtime of the
plugin's own kernels).

``bf16.c`` calls it: a product's rows (or a batch's products) are cut into blocks for the
OpenMP team the thread budget sizes (threads.py), oneDNN runs on one thread inside each block
(its own threads on the loaded 2-core VM ran 256x64 @ 64x64 25x slower than one thread), and
each block's float32 result is rounded to bf16 while in cache. Products of fewer
than :data:`MIN_MACS` multiply-adds in all stay on the plain path (a call costs ~10 us).

``OARLOCK_BF16_GEMM`` picks: ``auto`` (the default: oneDNN where it loads and the CPU lists
``avx512_bf16`` or ``amx_bf16``, else the plain path), ``onednn`` (an error if it cannot load),
``fp32`` (always the plain path). What runs is stated in ``get_device_properties().extra``
(``bf16_gemm``).

# NOTE: the bf16 dot-product instructions treat denormal operands as zero and flush denormal
# results to zero (float32 magnitudes below 1.2e-38; measured: 1e-39 x 1 gave 0); the plain
# path keeps them. Products of normal values differ from the plain path only by the float32
# summation order.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import os
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from adapter_api import DeviceError

from . import threads
from .compiler import cpu_info, own_program, pointer

BF16 = np.dtype(ml_dtypes.bfloat16)
_CHOICES = ("auto", "onednn", "fp32")
#: the wheels that ship oneDNN's CPU library (the plain ``onednn`` one is a SYCL build that needs
#: Intel's DPC++ runtime: tried last, and skipped where it does not load)
_DISTRIBUTIONS = ("onednn-cpu-gomp", "onednn-cpu-iomp", "onednn-cpu-tbb", "onednn")
_UNITS = ("amx_bf16", "avx512_bf16")
_LIBS: list[Any] = []  #: the libraries loaded (kept open)
_SOURCE = Path(__file__).with_name("bf16.c")
#: multiply-adds (of all the products of a batch) below which the plain path runs them: a call
#: costs ~10 us (one thread: 64x16 @ 16x64 took 12 us, the plain path 8 us; 128x64 @ 64x64 17 us
#: and 24 us; 64 products of 64x16 @ 16x64 as one batch 131 us and 366 us)
MIN_MACS = 1 << 17
#: a thread of the team gets at least this many multiply-adds. NOTE: 1 << 21 (the float32
#: products' 1 << 20 at twice their speed) split the tiny Llama's 1024x64 @ 64x192 over two
#: threads, ~80 us each: on the shared 2-core VM (load 5) the team's wake-ups cost more than
#: that (2 threads: 480-1640 us wall, 200-680 us CPU split, 380-480 us and 150-170 us not),
#: and its bf16 to_static step took 45 ms CPU against 27 (benchmarks/bf16.py, docs)
MIN_MACS_PER_THREAD = 1 << 24
_GRAIN = 64  #: rows of a block start at multiples of this


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


#: the SONAME of the oneDNN wheels, and the one the plugin's private copy carries instead
_SONAME, _OWN_SONAME = b"libdnnl.so.3\0", b"libOLdnn.so3\0"


def _private_copy(path: str) -> str:
    """``path`` (a ``libdnnl.so``) copied into a folder of this process with another SONAME
    (the same length, patched in place), loaded RTLD_LOCAL. Real Paddle's libraries need its
    own bundled ``libdnnl.so.3``, and the dynamic linker hands any later ``dlopen`` of that
    name the object already loaded under it: loaded as it ships, this oneDNN 3.2 made
    ``import paddle`` fail after a bf16 product (``undefined symbol:
    dnnl_layer_normalization_forward_primitive_desc_create_v2``). A library without that
    SONAME is returned unchanged."""
    data = Path(path).read_bytes()
    if data.count(_SONAME) != 1:
        return path
    import atexit
    import shutil
    import tempfile

    d = tempfile.mkdtemp(prefix="oarlock-dnnl-")
    atexit.register(shutil.rmtree, d, True)
    out = os.path.join(d, _OWN_SONAME[:-1].decode())
    with open(out, "wb") as f:
        f.write(data.replace(_SONAME, _OWN_SONAME))
    os.chmod(out, 0o700)
    return out


@functools.cache
def _onednn() -> tuple[int, str] | tuple[None, str]:
    """(the address of oneDNN's ``dnnl_gemm_bf16bf16f32``, its version) or (None, why not)."""
    why = "oneDNN not installed (pip install onednn-cpu-gomp)"
    for name in _DISTRIBUTIONS:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        libs = sorted(str(dist.locate_file(f)) for f in dist.files or () if f.name.startswith("libdnnl.so"))
        for path in libs:
            try:
                lib = ctypes.CDLL(_private_copy(path))
                fn = lib.dnnl_gemm_bf16bf16f32
            except (OSError, AttributeError) as exc:
                why = f"oneDNN from {name} does not load ({exc})"
                continue
            lib.dnnl_version.restype = ctypes.POINTER(_DnnlVersion)
            v = lib.dnnl_version().contents
            _LIBS.append(lib)
            return ctypes.cast(fn, ctypes.c_void_p).value, f"oneDNN {v.major}.{v.minor}.{v.patch} ({name})"
    return None, why


@functools.cache
def _route() -> tuple[int | None, str]:
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


def _program() -> Any:
    return own_program(_SOURCE, "bf16_products", (), "bf16 product")


def _layout2(x: np.ndarray) -> tuple[int, int] | None:
    """(transposed, leading dimension) of the matrices of a stack that oneDNN reads in place
    (:func:`gemm._layout` on the last two axes), or None."""
    s0, s1 = x.strides[-2:]
    r, c = x.shape[-2:]
    it = x.itemsize
    if (s1 == it or c == 1) and s0 % it == 0 and s0 // it >= max(c, 1):
        return 0, s0 // it
    if (s0 == it or r == 1) and s1 % it == 0 and s1 // it >= max(r, 1):
        return 1, s1 // it
    return None


def _operand(x: np.ndarray) -> tuple[np.ndarray, int, int]:
    """A stack of bf16 matrices as oneDNN reads each in place (row-major): (array, transposed,
    leading dimension); a C-contiguous copy where its matrices' layout is not one of those."""
    lay = _layout2(x)
    if lay is None:
        x = np.ascontiguousarray(x)
        lay = 0, max(x.shape[-1], 1)
    return x, lay[0], lay[1]


_ZERO = np.zeros(1, np.int64)


def _offsets(x: np.ndarray, batch: tuple[int, ...]) -> np.ndarray:
    """Each matrix's first element, in elements from ``x``'s, over the broadcast ``batch``
    (int64, C order; 0 along a broadcast axis)."""
    if not batch:
        return _ZERO
    lead = x.ndim - 2
    strides = (0,) * (len(batch) - lead) + tuple(
        0 if x.shape[d] == 1 else x.strides[d] // x.itemsize for d in range(lead)
    )
    off = np.zeros(batch, np.int64)
    for d, st in enumerate(strides):
        if st:
            shape = [1] * len(batch)
            shape[d] = batch[d]
            off += (np.arange(batch[d], dtype=np.int64) * st).reshape(shape)
    return off.reshape(-1)


def matmul(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> bool:
    """``c[...] = a @ b`` for bfloat16 ``a``, ``b``, ``c`` (numpy's matmul shapes, at least 2-D,
    batch axes broadcast, ``c`` writable in place) on the bf16 units; False (nothing written)
    where the plain path should run: no unit or library (:func:`_route`), products too small
    to gain (under :data:`MIN_MACS` in all), other dtypes, empty products.

    >>> # c = np.empty((m, n), BF16); matmul(a, b, c) or plain_path(a, b, c)
    """
    fn = _route()[0]
    if fn is None or not (a.dtype == b.dtype == c.dtype == BF16) or a.ndim < 2 or b.ndim < 2:
        return False
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if c.size == 0 or c.size * k < MIN_MACS:
        return False
    lc = _layout2(c)
    if (
        lc is None
        or lc[0]
        or (c.ndim > 2 and not c.flags.c_contiguous)
        or np.may_share_memory(c, a)
        or np.may_share_memory(c, b)
    ):
        return False
    prog = _program()
    if prog is None:
        return False
    batch = c.shape[:-2]
    if b.ndim == 2 and a.ndim > 2 and a.flags.c_contiguous and c.flags.c_contiguous:
        a, c, batch = a.reshape(-1, k), c.reshape(-1, n), ()  # a stack times one matrix: one product
        m = a.shape[0]
    a, ta, lda = _operand(a)
    b, tb, ldb = _operand(b)
    oa, ob, oc = _offsets(a, batch), _offsets(b, batch), _offsets(c, batch)
    nb = len(oc)
    nt = threads.team_threads(nb * m * n * k, MIN_MACS_PER_THREAD)
    p = functools.partial(pointer, prog.ffi)
    st = prog.fn(fn, ta, tb, nb, m, n, k, p(a), lda, p(oa), p(b), ldb, p(ob), p(c), lc[1], p(oc), _GRAIN, nt)
    if st != 0:
        what = "out of memory for its float32 block" if st == -1 else f"status {st}"
        raise DeviceError(
            f"[cpu] oneDNN's bf16 product failed ({what}) for {m}x{k} @ {k}x{n} x {nb}; "
            "set OARLOCK_BF16_GEMM=fp32 to use float32 products"
        )
    return True
