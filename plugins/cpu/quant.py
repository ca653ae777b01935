"""The fused ``weight_only_linear`` kernel on cpu: ``x @ dequantise(weight) + bias`` without
writing the dequantised float weight.

At batch sizes up to :data:`C_ROWS` (decoding) the product runs in ``quant.c``: a GEMV that
streams the int8, float8_e4m3fn (or packed int4) weight once and widens it to float in
registers (AVX-512 or AVX2/FMA/F16C where the CPU has them, a portable loop elsewhere; fp32
products and sums), scaling each group's partial product once, so it reads one byte (half a
byte) per weight where float32 reads four: the product a memory-bound decoding step needs. A
float8 weight holding a NaN code (never written by ``weight_quantize``, which saturates) takes
the numpy product. A weight is cut over the OpenMP team when each thread gets
at least :data:`PER_THREAD` bytes of it. An asymmetric weight's zero points (the op's
``weight_offset`` input, attr ``zero_point``) are added in the same call: x summed over each
group times the offset. In a static program the call is bound once (pointers cast, thread count chosen):
a replayed decoding step runs the C call alone.

Larger batches go through numpy: for a scale per output channel the scale is applied to the
product's columns (``(x @ q.T) * scale``), for group-wise scales to each group's partial
product (one ``einsum`` over the groups); fp8 (float8_e4m3fn) weights are widened to float32
by a 256-entry lookup table first; int4 weights are unpacked with two shifts (low
nibble: ``(b << 4) >> 4``, high: ``b >> 4``, both arithmetic on int8). numpy converts the int8
weight to the product's float type on the way into BLAS.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from . import threads
from .compiler import pointer


def unpack_int4(packed: np.ndarray) -> np.ndarray:
    """``[n / 2, k]`` int8, channel ``2j`` in the low nibble of row ``j`` -> ``[n, k]`` int8."""
    h, k = packed.shape
    out = np.empty((2 * h, k), np.int8)
    np.right_shift(np.left_shift(packed, 4), 4, out=out[0::2])
    np.right_shift(packed, 4, out=out[1::2])
    return out


def weight_only_linear_numpy(
    x: np.ndarray,
    q: np.ndarray,
    scale: np.ndarray,
    bias: np.ndarray | None,
    weight_dtype: str,
    group_size: int,
    offset: np.ndarray | None = None,
) -> np.ndarray:
    """The product for ``x`` ``[..., k]``, ``q`` int8 ``[n, k]`` (int4: ``[n / 2, k]``; fp8:
    float8_e4m3fn ``[n, k]``, widened exactly by a lookup table); ``offset`` ``[groups, n]``:
    an asymmetric weight's zero-point term, ``x``'s sums over each group times it."""
    if weight_dtype == "fp8":
        from .kernels import widen_float8

        w = widen_float8(q).astype(x.dtype, copy=False)
    else:
        w = unpack_int4(q) if weight_dtype == "int4" else q
    n, k = w.shape
    x2 = x.reshape(-1, k)
    if group_size == -1:
        y = np.matmul(x2, w.T.astype(x.dtype)) * scale.astype(x.dtype)
    else:
        g = scale.shape[0]
        pad = g * group_size - k
        if pad:  # a shorter last group: zero columns add nothing
            x2 = np.concatenate([x2, np.zeros((x2.shape[0], pad), x.dtype)], 1)
            w = np.concatenate([w, np.zeros((n, pad), w.dtype)], 1)
        parts = np.einsum(
            "mgk,ngk->mgn", x2.reshape(-1, g, group_size), w.reshape(n, g, group_size).astype(x.dtype)
        )
        y = np.einsum("mgn,gn->mn", parts, scale.astype(x.dtype))
    if offset is not None:
        gs = k if group_size == -1 else group_size
        g = offset.shape[0]
        xs = x.reshape(-1, k)
        sums = np.stack([xs[:, j * gs : (j + 1) * gs].sum(1) for j in range(g)], 1)
        y = y + sums @ offset.astype(x.dtype)
    if bias is not None:
        y += bias
    return y.reshape(x.shape[:-1] + (n,))


#: the most rows of ``x`` the C kernel takes (decoding); more go to BLAS through numpy
C_ROWS = 8
#: weight bytes per OpenMP thread: a smaller product runs on the calling thread alone
PER_THREAD = 1 << 19
_SOURCE = Path(__file__).with_name("quant.c")


#: extra compiler options of the kernel: ``("-DWOL_NO_AVX512",)`` builds the AVX2 path on an
#: AVX-512 CPU, ``("-DWOL_NO_AVX2",)`` the portable one (the tests run every path)
OPTIONS: tuple[str, ...] = ()
#: the kernel's ``kind`` argument per weight dtype
_KIND = {"int8": 0, "int4": 1, "fp8": 2}


@functools.cache
def _c_program_with(options: tuple[str, ...]) -> Any:
    from .compiler import find_cc, own_program

    return own_program(_SOURCE, "wol_f32", options, "weight-only product") if find_cc() is not None else None


def _c_program() -> Any:
    return _c_program_with(OPTIONS)


def _fp8_nan(q: np.ndarray) -> bool:
    """Whether a float8_e4m3fn weight holds a NaN code (0x7f / 0xff): the C widening reads
    them as 480, so such a weight takes the numpy product."""
    return bool(np.any((q.view(np.uint8) & 0x7F) == 0x7F))


def _c_call(
    x: np.ndarray,
    q: np.ndarray,
    scale: np.ndarray,
    bias: Any,
    out: np.ndarray,
    weight_dtype: str,
    group: int,
    offset: np.ndarray | None = None,
) -> Any:
    """The C kernel as a zero-argument call (the pointers cast once) on float32 contiguous
    operands of at most :data:`C_ROWS` rows, or None where it does not apply. ``offset``: an
    asymmetric weight's zero-point term ``[groups, n]`` (added in the same call)."""
    k = x.shape[-1]
    m = x.size // k if k else 0
    if (
        x.dtype != np.float32
        or m > C_ROWS
        or m == 0
        or scale.dtype != np.float32
        or out.dtype != np.float32
        or not all(a.flags.c_contiguous for a in (x, q, scale, out))
        or (offset is not None and (offset.dtype != np.float32 or not offset.flags.c_contiguous))
        or (weight_dtype == "fp8" and _fp8_nan(q))
    ):
        return None
    prog = _c_program()
    if prog is None:
        return None
    ffi = prog.ffi
    if bias is not None and (bias.dtype != np.float32 or not bias.flags.c_contiguous):
        bias = np.ascontiguousarray(bias, np.float32)
    b = ffi.NULL if bias is None else pointer(ffi, bias)
    z = ffi.NULL if offset is None else pointer(ffi, offset)
    n = out.shape[-1]
    nt = threads.team_threads(q.nbytes, PER_THREAD)
    q = q.view(np.int8)  # float8 codes as bytes
    ptrs = (pointer(ffi, x), pointer(ffi, q), pointer(ffi, scale), b, z, pointer(ffi, out))
    call = functools.partial(prog.fn, *ptrs, m, n, k, group, _KIND[weight_dtype], nt)
    call.keep = (x, q, scale, bias, offset, out)  # type: ignore[attr-defined]  # what the pointers point into
    if offset is None:
        return call  # returns 0: nothing to allocate

    def checked() -> None:
        if call() != 0:
            raise MemoryError(
                f"[weight_only_linear] no memory for the {m} x {offset.shape[0]} group sums of x"
            )

    return checked


def _split(ins: list, zero_point: bool) -> tuple[Any, Any]:
    """``(bias, offset)`` from the inputs after ``x, weight, weight_scale``."""
    rest = ins[3:]
    offset = rest.pop() if zero_point else None
    return (rest[0] if rest else None), offset


def _kernel(
    ctx: Any, outs: list, ins: list, weight_dtype: str, group_size: int, zero_point: bool = False
) -> None:
    x, q, scale = ins[:3]
    bias, offset = _split(list(ins), zero_point)
    call = _c_call(x, q, scale, bias, outs[0], weight_dtype, group_size, offset)
    if call is not None:
        call()
    else:
        np.copyto(outs[0], weight_only_linear_numpy(x, q, scale, bias, weight_dtype, group_size, offset))


def _bind(
    ctx: Any, outs: list, ins: list, weight_dtype: str, group_size: int, zero_point: bool = False
) -> Any:
    """Static programs (and their captured graphs): the C call with its pointers cast once, so
    a decoding step replays the product alone; else the kernel with its arguments."""
    if ctx.stream is not None:
        return None
    x, q, scale = ins[:3]
    bias, offset = _split(list(ins), zero_point)
    fallback = functools.partial(
        _kernel, ctx, outs, ins, weight_dtype=weight_dtype, group_size=group_size, zero_point=zero_point
    )
    if bias is not None and (bias.dtype != np.float32 or not bias.flags.c_contiguous):
        return fallback  # a converted copy would not follow the parameter: the kernel converts it per call
    return _c_call(x, q, scale, bias, outs[0], weight_dtype, group_size, offset) or fallback


_kernel.bind = _bind  # type: ignore[attr-defined]  # a captured graph replays the bound C call


def register_quant(registry: Any) -> None:
    """Register the fused ``weight_only_linear`` kernel (float32, float64 activations)."""
    from .kernels import (
        _on_stream,
    )  # NOTE: in stream order with the other kernels (a replayed step runs on one)

    registry.add_kernel("weight_only_linear", "cpu", ("float32", "float64"), _on_stream(_kernel), bind=_bind)
