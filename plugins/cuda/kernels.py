"""The 52 primitives, written once against an array module ``xp``.

On the GPU ``xp`` is cupy (ufuncs and reductions writing ``out=``, cuBLAS through
``cupy.matmul``, NVRTC-built kernels where cupy has no equivalent); in tests it is numpy, so
the same bodies run and are checked on a machine without a GPU. A body is
``body(xp, outs, ins, **attrs)``; :data:`KERNELS` lists which op it implements, for which dtypes
and whether it broadcasts. :func:`plugins.cuda.cuda_kernel` binds a body to cupy, a device and
a stream.

bfloat16 tensors reach the kernels as uint16 arrays of raw bits (cupy has no bfloat16 dtype):
layout ops move the bits as they are; math ops go through float32 (:func:`via_float32`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from adapter_api import OpArgumentError

from . import philox

Body = Callable[..., None]

FLOATS = ("float32", "float64", "float16")
INTS = ("int8", "int16", "int32", "int64", "uint8")
NUMERIC = FLOATS + INTS
ALL = NUMERIC + ("bool",)
BF16 = np.dtype(ml_dtypes.bfloat16)


@dataclass(frozen=True)
class KernelSpec:
    """One registration: ``op`` for ``dtypes`` (names, or numpy dtypes) with ``body``."""

    op: str
    dtypes: tuple[Any, ...]
    body: Body
    broadcast: bool = False


# -- bfloat16 <-> float32 ------------------------------------------------------------------


def bf16_to_f32(xp: Any, bits: Any) -> Any:
    """uint16 bfloat16 bits -> float32 values (exact)."""
    return (bits.astype(xp.uint32) << xp.uint32(16)).view(xp.float32)


def f32_to_bf16(xp: Any, values: Any, out: Any) -> None:
    """float32 values -> uint16 bfloat16 bits in ``out``, rounding to nearest even."""
    f = xp.ascontiguousarray(xp.broadcast_to(values, out.shape), dtype=xp.float32)
    u = f.view(xp.uint32)
    rounded = (u + (xp.uint32(0x7FFF) + ((u >> xp.uint32(16)) & xp.uint32(1)))) >> xp.uint32(16)
    quiet_nan = (u >> xp.uint32(16)) | xp.uint32(0x40)
    xp.copyto(out, xp.where(xp.isnan(f), quiet_nan, rounded), casting="unsafe")


def bf16_scalar(value: float) -> int:
    """The bfloat16 bits of a Python number."""
    return int(np.asarray(value, dtype=np.float32).astype(ml_dtypes.bfloat16).view(np.uint16))


def via_float32(body: Body, inputs: tuple[int, ...] = (0, 1), out_bf16: bool = True) -> Body:
    """Run a float32 body for bfloat16 tensors: inputs at positions ``inputs`` are widened;
    with ``out_bf16`` the result is computed into float32 and rounded to bfloat16 bits."""

    def run(xp: Any, outs: list[Any], ins: list[Any], **attrs: Any) -> None:
        wide = [bf16_to_f32(xp, a) if i in inputs else a for i, a in enumerate(ins)]
        if not out_bf16:
            body(xp, outs, wide, **attrs)
            return
        tmp = xp.empty(outs[0].shape, xp.float32)
        body(xp, [tmp], wide, **attrs)
        f32_to_bf16(xp, tmp, outs[0])

    run.__name__ = f"bf16_{getattr(body, '__name__', 'kernel')}"
    return run


# -- elementwise ---------------------------------------------------------------------------


def _ufunc(name: str) -> Body:
    def body(xp: Any, outs: list[Any], ins: list[Any]) -> None:
        getattr(xp, name)(*ins, out=outs[0])

    body.__name__ = name
    return body


def copy(xp: Any, outs: list[Any], ins: list[Any]) -> None:
    xp.copyto(outs[0], ins[0])


def rsqrt(xp: Any, outs: list[Any], ins: list[Any]) -> None:
    xp.sqrt(ins[0], out=outs[0])
    xp.reciprocal(outs[0], out=outs[0])


def on_gpu(xp: Any) -> bool:
    """Whether ``xp`` is cupy (else a numpy-like module standing in for it in tests)."""
    return getattr(xp, "__name__", "") == "cupy"


def erf(xp: Any, outs: list[Any], ins: list[Any]) -> None:
    if not on_gpu(xp):  # numpy has no erf ufunc; the CPU reading used by tests
        outs[0][...] = np.vectorize(math.erf, otypes=[np.float64])(ins[0])
        return
    import cupyx.scipy.special

    cupyx.scipy.special.erf(ins[0], out=outs[0])


def where(xp: Any, outs: list[Any], ins: list[Any]) -> None:
    cond, x, y = ins
    xp.copyto(outs[0], y)
    xp.copyto(outs[0], x, where=cond)


def _cast(source_bf16: bool) -> Body:
    def cast(xp: Any, outs: list[Any], ins: list[Any], dtype: Any) -> None:
        x = bf16_to_f32(xp, ins[0]) if source_bf16 else ins[0]
        y = outs[0]
        if np.dtype(dtype) == BF16:
            f32_to_bf16(xp, x.astype(xp.float32), y)
        elif x.dtype.kind == "f" and y.dtype.kind in "iu":
            # the contract: truncate toward zero, saturate to the target's range, NaN -> 0
            t = xp.trunc(x.astype(xp.float64))
            info = np.iinfo(y.dtype)
            lo, hi = float(info.min), float(info.max) + 1.0  # exact: 0 or -2**(b-1); 2**b or 2**(b-1)
            fits = (t >= lo) & (t < hi)
            xp.copyto(y, xp.where(fits, t, 0).astype(y.dtype))
            y[t >= hi] = info.max
            y[t < lo] = info.min
        else:
            xp.copyto(y, x, casting="unsafe")

    return cast


def argsort(xp: Any, outs: list[Any], ins: list[Any], descending: bool) -> None:
    # NOTE: cupy's argsort is stable (thrust) and puts NaN last, as numpy's
    x, y = ins[0], outs[0]
    if x.ndim == 0:
        y[...] = 0
        return
    x = x.view(xp.uint8) if x.dtype.kind == "b" else x
    if descending:  # a stable ascending sort of the reversed row, reversed: ties in order, NaN first
        xp.copyto(y, x.shape[-1] - 1 - xp.argsort(x[..., ::-1], axis=-1)[..., ::-1])
    else:
        xp.copyto(y, xp.argsort(x, axis=-1))


# -- reductions ----------------------------------------------------------------------------


def _reduction(name: str) -> Body:
    def body(xp: Any, outs: list[Any], ins: list[Any], axes: tuple[int, ...], keepdim: bool) -> None:
        x, y = ins[0], outs[0]
        if not axes:
            xp.copyto(y, x.reshape(y.shape))
            return
        fn = name
        if x.dtype.kind == "b":  # max/min of bool are any/all
            fn = {"amax": "any", "amin": "all"}[name]
        if fn == "amin":
            # NOTE: cupy's ndarray.min(out=...) is broken with the CUB accelerator (the default):
            # it hands ``out`` to cub_reduction as ``dtype`` and fails in equal(out, dtype). The
            # reduction goes to a temporary and is copied.
            xp.copyto(y, xp.amin(x, axis=tuple(axes), keepdims=bool(keepdim)))
            return
        # NOTE: integer sums accumulate in their own type: the result wraps like numpy's cast.
        extra = {"dtype": x.dtype} if name in ("sum", "prod") and x.dtype.kind != "f" else {}
        getattr(xp, fn)(x, axis=tuple(axes), keepdims=bool(keepdim), out=y, **extra)

    body.__name__ = name
    return body


def _arg_reduction(name: str) -> Body:
    def body(xp: Any, outs: list[Any], ins: list[Any], axis: int, keepdim: bool) -> None:
        x = ins[0].view(xp.uint8) if ins[0].dtype.kind == "b" else ins[0]  # bool as 0/1 bytes
        getattr(xp, name)(x, axis=int(axis), keepdims=bool(keepdim), out=outs[0])

    body.__name__ = name
    return body


# -- linear algebra and layout -------------------------------------------------------------


def matmul(xp: Any, outs: list[Any], ins: list[Any]) -> None:
    a, b = ins
    if a.shape[-1] == 0:  # an empty contraction: skip cuBLAS, the sum is zero
        outs[0].fill(0)
    elif outs[0].size:
        xp.matmul(a, b, out=outs[0])


# cuBLAS enums (cublas_api.h, library_types.h); stable across CUDA 11-13.
_CUBLAS_OP_N = 0
_CUDA_R_16BF = 14
_CUBLAS_COMPUTE_32F = 68
_CUBLAS_GEMM_DEFAULT = -1


@dataclass(frozen=True)
class GemmArgs:
    """A row-major ``c = a @ b`` as one column-major cuBLAS strided-batched GEMM.

    cuBLAS reads a row-major (M, K) matrix as the column-major (K, M) matrix a^T, so the call
    computes c^T = b^T a^T: cuBLAS's "A" is our b (n x k, ld n), its "B" our a (k x m, ld k),
    and its (n x m, ld n) result is c in row-major order. No operand is transposed.
    """

    m: int  #: cuBLAS rows of the result: our N
    n: int  #: cuBLAS columns of the result: our M
    k: int
    lda: int
    stride_a: int  #: elements between batches of cuBLAS's A (our b)
    ldb: int
    stride_b: int  #: of cuBLAS's B (our a)
    ldc: int
    stride_c: int
    batch: int


def gemm_args(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> GemmArgs:
    """The cuBLAS arguments of ``a @ b`` for C-contiguous a (B..., M, K) and b (B..., K, N)."""
    *batch_dims, m, k = a_shape
    n = b_shape[-1]
    return GemmArgs(
        m=n,
        n=m,
        k=k,
        lda=n,
        stride_a=k * n,
        ldb=k,
        stride_b=m * k,
        ldc=n,
        stride_c=m * n,
        batch=math.prod(batch_dims),
    )


def bf16_matmul(xp: Any, outs: list[Any], ins: list[Any]) -> None:
    """bfloat16 matmul on cuBLAS's bf16 GEMM: bf16 operands, fp32 accumulation, bf16 result
    (tensor cores), not a float32 matmul of widened copies."""
    a, b = ins
    c = outs[0]
    if a.shape[-1] == 0:
        c.fill(0)  # bfloat16 +0.0 is all-zero bits
        return
    if c.size == 0:
        return
    if not on_gpu(xp):
        via_float32(matmul)(xp, outs, ins)
        return
    from cupy_backends.cuda.libs import cublas

    g = gemm_args(a.shape, b.shape)
    one, zero = np.ones(1, np.float32), np.zeros(1, np.float32)  # host scalars of COMPUTE_32F
    cublas.gemmStridedBatchedEx(
        xp.cuda.device.get_cublas_handle(),
        _CUBLAS_OP_N,
        _CUBLAS_OP_N,
        g.m,
        g.n,
        g.k,
        one.ctypes.data,
        b.data.ptr,
        _CUDA_R_16BF,
        g.lda,
        g.stride_a,
        a.data.ptr,
        _CUDA_R_16BF,
        g.ldb,
        g.stride_b,
        zero.ctypes.data,
        c.data.ptr,
        _CUDA_R_16BF,
        g.ldc,
        g.stride_c,
        g.batch,
        _CUBLAS_COMPUTE_32F,
        _CUBLAS_GEMM_DEFAULT,
    )


def permute(xp: Any, outs: list[Any], ins: list[Any], perm: tuple[int, ...]) -> None:
    xp.copyto(outs[0], ins[0].transpose(tuple(perm)))


def expand(xp: Any, outs: list[Any], ins: list[Any], shape: tuple[int, ...]) -> None:
    xp.copyto(outs[0], ins[0])  # copyto broadcasts size-1 dims


def slice_(
    xp: Any,
    outs: list[Any],
    ins: list[Any],
    starts: tuple[int, ...],
    stops: tuple[int, ...],
    steps: tuple[int, ...],
) -> None:
    key = tuple(slice(a, b, c) for a, b, c in zip(starts, stops, steps))
    xp.copyto(outs[0], ins[0][key])


def concat(xp: Any, outs: list[Any], ins: list[Any], axis: int) -> None:
    xp.concatenate(list(ins), axis=int(axis), out=outs[0])


def _fill_value(value: Any, dtype: np.dtype, bf16: bool) -> Any:
    if bf16:
        return bf16_scalar(value)
    if dtype.kind == "b":
        return bool(value)
    if dtype.kind in "iu":
        return int(value)
    return float(value)


def _pad(bf16: bool) -> Body:
    def pad(xp: Any, outs: list[Any], ins: list[Any], pads: tuple[tuple[int, int], ...], value: Any) -> None:
        x, y = ins[0], outs[0]
        y.fill(_fill_value(value, y.dtype, bf16))
        inner = tuple(slice(before, before + n) for (before, _), n in zip(pads, x.shape))
        y[inner] = x

    return pad


# -- indexing ------------------------------------------------------------------------------


def check_index(xp: Any, op: str, index: Any, size: int, axis: int, low: int = 0) -> None:
    """Raise unless every index is in ``[low, size)`` (``low``: 0, or ``-size`` for a gather
    with ``wrap``). One device reduction, one host read."""
    if index.size == 0:
        return
    bad = (index < low) | (index >= size)
    if bool(bad.any()):
        flat = bad.reshape(-1)
        first = int(index.reshape(-1)[int(xp.argmax(flat))])
        raise OpArgumentError(
            f"[cuda] {op}: index {first} is out of range for axis {axis} of size {size}; "
            f"use indices in [{low}, {size})"
        )


def _scatter_key(x: Any, index: Any, src: Any, axis: int) -> tuple[tuple[Any, ...], Any]:
    flat = index.reshape(-1)
    src_shape = x.shape[:axis] + (flat.size,) + x.shape[axis + 1 :]
    return (slice(None),) * axis + (flat,), src.reshape(src_shape)


def gather(xp: Any, outs: list[Any], ins: list[Any], axis: int, wrap: bool = False) -> None:
    x, index = ins
    n = x.shape[axis]
    check_index(xp, "gather", index, n, axis, -n if wrap else 0)
    xp.take(x, xp.where(index < 0, index + n, index) if wrap else index, axis=int(axis), out=outs[0])


def scatter(xp: Any, outs: list[Any], ins: list[Any], axis: int) -> None:
    x, index, src = ins
    check_index(xp, "scatter", index, x.shape[axis], axis)
    y = outs[0]
    xp.copyto(y, x)
    key, values = _scatter_key(x, index, src, axis)
    y[key] = values


#: dtypes CUDA atomicAdd serves directly; the others accumulate in a wider temporary.
_ATOMIC = {"float32", "float64", "int32", "int64"}
_WIDER = {"float16": "float32", "int8": "int32", "int16": "int32", "uint8": "int32"}


def scatter_add(xp: Any, outs: list[Any], ins: list[Any], axis: int) -> None:
    x, index, src = ins
    check_index(xp, "scatter_add", index, x.shape[axis], axis)
    y = outs[0]
    key, values = _scatter_key(x, index, src, axis)
    if not on_gpu(xp):
        xp.copyto(y, x)
        xp.add.at(y, key, values)
        return
    import cupyx

    if y.dtype.name in _ATOMIC:
        xp.copyto(y, x)
        if y.dtype.name == "int64":
            # NOTE: two's-complement addition is the same for int64 and uint64, and cupy's
            # atomicAdd is documented for uint64.
            cupyx.scatter_add(y.view(xp.uint64), key, xp.ascontiguousarray(values).view(xp.uint64))
        else:
            cupyx.scatter_add(y, key, values)
        return
    # NOTE: narrow types accumulate wide and are cast back (integers wrap as numpy's add.at).
    wide = x.astype(_WIDER[y.dtype.name])
    cupyx.scatter_add(wide, key, values.astype(wide.dtype))
    xp.copyto(y, wide, casting="unsafe")


# -- creation ------------------------------------------------------------------------------


def _full(bf16: bool) -> Body:
    def full(
        xp: Any, outs: list[Any], ins: list[Any], shape: tuple[int, ...], value: Any, dtype: Any
    ) -> None:
        outs[0].fill(_fill_value(value, outs[0].dtype, bf16))

    return full


def _arange(bf16: bool) -> Body:
    def arange(xp: Any, outs: list[Any], ins: list[Any], start: Any, step: Any, dtype: Any) -> None:
        y = outs[0]
        n = y.shape[0]
        integral = float(start).is_integer() and float(step).is_integer()
        if y.dtype.kind in "iub" and integral:
            values = xp.arange(n, dtype=xp.int64) * xp.int64(int(step)) + xp.int64(int(start))
        else:
            values = xp.arange(n, dtype=xp.float64) * float(step) + float(start)
        if bf16:
            f32_to_bf16(xp, values.astype(xp.float32), y)
        else:
            xp.copyto(y, values, casting="unsafe")

    return arange


def philox_uniform_xp(
    xp: Any, outs: list[Any], ins: list[Any], shape: tuple[int, ...], seed: int, offset: int, dtype: Any
) -> None:
    """philox_uniform with array ops (numpy here; the GPU registration is the NVRTC kernel)."""
    y = outs[0]
    y.reshape(-1)[...] = philox.philox_uniform_reference(xp, y.size, seed, offset, y.dtype)


def philox_uniform_cuda(
    xp: Any, outs: list[Any], ins: list[Any], shape: tuple[int, ...], seed: int, offset: int, dtype: Any
) -> None:
    """philox_uniform as one NVRTC kernel; one thread per counter (four outputs)."""
    if not on_gpu(xp):
        philox_uniform_xp(xp, outs, ins, shape=shape, seed=seed, offset=offset, dtype=dtype)
        return
    y = outs[0]
    n = y.size
    if n == 0:
        return
    k0, k1 = philox.split_key(seed)
    module = _philox_module(xp)
    fn = module.get_function(philox.kernel_name(y.dtype))
    threads = (n + 3) // 4
    block = 256
    grid = (threads + block - 1) // block
    args = (y, np.uint64(n), np.uint64(int(offset) % 2**64), np.uint32(k0), np.uint32(k1))
    fn((grid,), (block,), args, stream=xp.cuda.get_current_stream())


_PHILOX_MODULE: list[Any] = []


def _philox_module(cp: Any) -> Any:
    # NOTE: a RawModule compiles (NVRTC) and loads lazily for each device it is used on.
    if not _PHILOX_MODULE:
        _PHILOX_MODULE.append(cp.RawModule(code=philox.SOURCE, options=("--std=c++14",)))
    return _PHILOX_MODULE[0]


# -- the table -----------------------------------------------------------------------------

_FLOAT_UNARY = {"exp": "exp", "log": "log", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tanh": "tanh"}
_NUMERIC_UNARY = {"neg": "negative", "abs": "absolute", "sign": "sign"}
_BINARY = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "pow": "power",
    "maximum": "maximum",
    "minimum": "minimum",
    "floor_divide": "floor_divide",
    "remainder": "remainder",
}
_COMPARE = {
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
}
_REDUCE = {"sum": "sum", "prod": "prod", "max": "amax", "min": "amin"}


def _table() -> list[KernelSpec]:
    t: list[KernelSpec] = []
    add = lambda op, dts, body, bc=False: t.append(KernelSpec(op, tuple(dts), body, bc))
    for op, uf in _FLOAT_UNARY.items():
        add(op, FLOATS, _ufunc(uf), True)
        add(op, [BF16], via_float32(_ufunc(uf), (0,)), True)
    for op, body in (("rsqrt", rsqrt), ("erf", erf)):
        add(op, FLOATS, body, True)
        add(op, [BF16], via_float32(body, (0,)), True)
    for op, uf in _NUMERIC_UNARY.items():
        add(op, NUMERIC, _ufunc(uf), True)
        add(op, [BF16], via_float32(_ufunc(uf), (0,)), True)
    for op, uf in (("floor", "floor"), ("ceil", "ceil")):
        add(op, FLOATS, _ufunc(uf), True)
        add(op, INTS, copy, True)  # integers are their own floor and ceil
        add(op, [BF16], via_float32(_ufunc(uf), (0,)), True)
    add("logical_not", ["bool"], _ufunc("logical_not"), True)
    for op, uf in _BINARY.items():
        add(op, NUMERIC, _ufunc(uf), True)
        add(op, [BF16], via_float32(_ufunc(uf)), True)
    add("div", FLOATS, _ufunc("divide"), True)
    add("div", [BF16], via_float32(_ufunc("divide")), True)
    for op, uf in _COMPARE.items():
        add(op, ALL, _ufunc(uf), True)
        add(op, [BF16], via_float32(_ufunc(uf), out_bf16=False), True)
    for op in ("logical_and", "logical_or"):
        add(op, ["bool"], _ufunc(op), True)
    add("where", [*ALL, BF16], where, True)  # bitwise: bfloat16 bits pass through
    add("cast", ALL, _cast(source_bf16=False))
    add("cast", [BF16], _cast(source_bf16=True))
    for op, fn in _REDUCE.items():
        dts = NUMERIC + ("bool",) if op in ("max", "min") else NUMERIC
        add(op, dts, _reduction(fn))
        add(op, [BF16], via_float32(_reduction(fn), (0,)))
    for op in ("argmax", "argmin"):
        add(op, ALL, _arg_reduction(op))
        add(op, [BF16], via_float32(_arg_reduction(op), (0,), out_bf16=False))
    add("argsort", ALL, argsort)
    add("argsort", [BF16], via_float32(argsort, (0,), out_bf16=False))
    add("matmul", NUMERIC, matmul)
    add("matmul", [BF16], bf16_matmul)
    for op, body in (
        ("permute", permute),
        ("expand", expand),
        ("slice", slice_),
        ("concat", concat),
        ("gather", gather),
        ("scatter", scatter),
        ("copy", copy),
    ):
        add(op, [*ALL, BF16], body)
    add("pad", ALL, _pad(bf16=False))
    add("pad", [BF16], _pad(bf16=True))
    add("scatter_add", NUMERIC, scatter_add)
    add("scatter_add", [BF16], via_float32(scatter_add, (0, 2)))
    add("full", ALL, _full(bf16=False))
    add("full", [BF16], _full(bf16=True))
    add("arange", NUMERIC, _arange(bf16=False))
    add("arange", [BF16], _arange(bf16=True))
    add("philox_uniform", ["float32", "float64"], philox_uniform_cuda)
    return t


#: Every kernel this plugin registers, in registration order.
KERNELS: list[KernelSpec] = _table()
