"""Paddle's remaining math functions, each a decomposition into existing ops (so each runs
and differentiates wherever they do): cumprod, nansum, var, std, cumsum, add_n, scale,
increment, multiplex, addmm, trace, kron, lerp, gcd, lcm, diff, fmax, fmin, inner, outer, the
real-valued complex helpers (real, imag, conj, angle), isclose, equal_all and the bitwise ops.
"""

from __future__ import annotations

import math as _m
from collections.abc import Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor, to_tensor
from .. import creation as C
from .. import math as M
from .. import shape as S
from ._common import axis_arg, float_arg, tensor_arg
from .manipulation import broadcast_shape, broadcast_tensors, diagonal


def cumprod(x: Tensor, dim: int | None = None, dtype: Any = None, name: str | None = None) -> Tensor:
    """Running product along ``dim`` (flattened when None): log2(n) shifted multiplies."""
    x = tensor_arg("cumprod", x)
    if dtype is not None:
        x = M.cast(x, dtype)
    if dim is None:
        x, dim = x.reshape((-1,)), 0
    ax = axis_arg("cumprod", dim, x.ndim)
    if x.ndim == 0:
        return x
    n, k = x.shape[ax], 1
    while k < n:
        starts, stops = [0] * x.ndim, list(x.shape)
        stops[ax] = n - k
        pads = [(0, 0)] * x.ndim
        pads[ax] = (k, 0)
        x = x * S.pad_raw(S.slice_raw(x, tuple(starts), tuple(stops), (1,) * x.ndim), tuple(pads), 1)
        k *= 2
    return x


def nansum(
    x: Tensor, axis: Any = None, dtype: Any = None, keepdim: bool = False, name: str | None = None
) -> Tensor:
    x = tensor_arg("nansum", x)
    if _dt.is_floating(x.dtype):
        x = M.where(M.isnan(x), 0.0, x)
    return M.sum(x, axis=axis, dtype=dtype, keepdim=keepdim)


def var(
    x: Tensor, axis: Any = None, unbiased: bool = True, keepdim: bool = False, name: str | None = None
) -> Tensor:
    """Variance over ``axis`` (``unbiased`` divides by n - 1, Paddle's default)."""
    x = float_arg("var", x)
    axes = M.normalize_axes("var", axis, x.ndim)
    n = 1
    for a in axes:
        n *= x.shape[a]
    d = x - M.mean(x, axis=axes, keepdim=True)
    denom = n - 1 if unbiased else n
    return M.sum(d * d, axis=axes, keepdim=keepdim) * (1.0 / denom if denom > 0 else float("nan"))


def std(
    x: Tensor, axis: Any = None, unbiased: bool = True, keepdim: bool = False, name: str | None = None
) -> Tensor:
    return M.sqrt(var(x, axis=axis, unbiased=unbiased, keepdim=keepdim))


def cumsum(x: Tensor, axis: int | None = None, dtype: Any = None, name: str | None = None) -> Tensor:
    """Running sum along ``axis`` (the flattened tensor when None): log2(n) shifted adds
    (Hillis-Steele), all primitives."""
    x = tensor_arg("cumsum", x)
    if dtype is not None:
        x = M.cast(x, dtype)
    elif x.dtype.kind in "biu":
        x = M.cast(x, _dt.int64)
    if axis is None:
        x, axis = x.reshape((-1,)), 0
    ax = axis_arg("cumsum", axis, x.ndim)
    if x.ndim == 0:
        return x
    n = x.shape[ax]
    k = 1
    while k < n:
        starts = [0] * x.ndim
        stops = list(x.shape)
        stops[ax] = n - k
        pads = [(0, 0)] * x.ndim
        pads[ax] = (k, 0)
        x = x + S.pad_raw(S.slice_raw(x, tuple(starts), tuple(stops), (1,) * x.ndim), tuple(pads), 0)
        k *= 2
    return x


def add_n(inputs: Any, name: str | None = None) -> Tensor:
    ts = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if not ts:
        raise OpArgumentError("[add_n] inputs must hold at least one Tensor")
    out = tensor_arg("add_n", ts[0])
    for t in ts[1:]:
        out = out + t
    return out


def scale(
    x: Tensor,
    scale: float = 1.0,
    bias: float = 0.0,
    bias_after_scale: bool = True,
    act: Any = None,
    name: str | None = None,
) -> Tensor:
    """scale * x + bias (``bias_after_scale=False``: scale * (x + bias))."""
    x = tensor_arg("scale", x)
    s = float(scale.item()) if isinstance(scale, Tensor) else scale
    out = x * s + bias if bias_after_scale else (x + bias) * s
    return out.astype(x.dtype) if out.dtype != x.dtype and x.dtype.kind == "f" else out


def increment(x: Tensor, value: float = 1.0, name: str | None = None) -> Tensor:
    x = tensor_arg("increment", x)
    return (x + value).astype(x.dtype)


def multiplex(inputs: Sequence[Tensor], index: Tensor, name: str | None = None) -> Tensor:
    """Row i of the output is row i of ``inputs[index[i]]``."""
    ts = list(inputs)
    if not ts:
        raise OpArgumentError("[multiplex] inputs must hold at least one Tensor")
    stacked = S.stack(ts, axis=0)
    idx = tensor_arg("multiplex", index, "index").reshape((-1,))
    rows = C.arange(ts[0].shape[0], device=ts[0].device)
    flat = stacked.reshape((len(ts) * ts[0].shape[0],) + ts[0].shape[1:])
    return flat.gather(idx.astype("int64") * ts[0].shape[0] + rows, axis=0)


def addmm(
    input: Tensor, x: Tensor, y: Tensor, beta: float = 1.0, alpha: float = 1.0, name: str | None = None
) -> Tensor:
    """beta * input + alpha * (x @ y)."""
    return tensor_arg("addmm", input) * beta + M.matmul(x, y) * alpha


def trace(x: Tensor, offset: int = 0, axis1: int = 0, axis2: int = 1, name: str | None = None) -> Tensor:
    return M.sum(diagonal(x, offset, axis1, axis2), axis=-1)


def kron(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """Kronecker product: out[i*n + k, ...] = x[i, ...] * y[k, ...]."""
    x, y = tensor_arg("kron", x), tensor_arg("kron", y, "y")
    nd = max(x.ndim, y.ndim)
    x = x.reshape((1,) * (nd - x.ndim) + x.shape)
    y = y.reshape((1,) * (nd - y.ndim) + y.shape)
    xs = [d for s in x.shape for d in (s, 1)]
    ys = [d for s in y.shape for d in (1, s)]
    return (x.reshape(xs) * y.reshape(ys)).reshape(tuple(a * b for a, b in zip(x.shape, y.shape)))


def lerp(x: Tensor, y: Tensor, weight: Any, name: str | None = None) -> Tensor:
    """x + weight * (y - x)."""
    return x + (y - x) * weight


def _int_pair(name: str, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    x, y = M._operands(name, x, y)
    if x.dtype.kind not in "iu":
        raise OpArgumentError(f"[{name}] expects integer tensors, got {x.dtype}")
    if x.shape != y.shape:
        x, y = broadcast_tensors([x, y])
    return x, y


def gcd(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """Greatest common divisor (non-negative), by Euclid's algorithm on the device; the loop
    runs until every pair is done (read back once per round)."""
    a, b = _int_pair("gcd", x, y)
    a, b = M.abs(a), M.abs(b)
    while bool(M.any(b != 0).item()):
        nz = b != 0
        r = M.remainder(a, M.where(nz, b, 1))
        a, b = M.where(nz, b, a), M.where(nz, r, 0)
    return a


def lcm(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    a, b = _int_pair("lcm", x, y)
    g = gcd(a, b)
    return M.where(g == 0, 0, M.abs(M.floor_divide(a, M.where(g == 0, 1, g)) * b))


def diff(
    x: Tensor,
    n: int = 1,
    axis: int = -1,
    prepend: Tensor | None = None,
    append: Tensor | None = None,
    name: str | None = None,
) -> Tensor:
    """n-th forward difference along ``axis``."""
    x = tensor_arg("diff", x)
    ax = axis_arg("diff", axis, x.ndim)
    parts = [t for t in (prepend, x, append) if t is not None]
    if len(parts) > 1:
        x = S.concat(parts, axis=ax)
    for _ in range(n):
        m = x.shape[ax]
        if m == 0:
            break
        key_hi = [slice(None)] * x.ndim
        key_lo = [slice(None)] * x.ndim
        key_hi[ax], key_lo[ax] = slice(1, m), slice(0, m - 1)
        hi, lo = x[tuple(key_hi)], x[tuple(key_lo)]
        x = M.not_equal(hi, lo) if x.dtype == _dt.bool_ else hi - lo
    return x


def fmax(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """Elementwise maximum that ignores NaN (the other value wins)."""
    a, b = M._operands("fmax", x, y)
    m = M.maximum(a, b)
    if not _dt.is_floating(a.dtype):
        return m
    return M.where(M.isnan(a), b, M.where(M.isnan(b), a, m))


def fmin(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    a, b = M._operands("fmin", x, y)
    m = M.minimum(a, b)
    if not _dt.is_floating(a.dtype):
        return m
    return M.where(M.isnan(a), b, M.where(M.isnan(b), a, m))


def inner(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """Sum of products over the last axis of both: shape x.shape[:-1] + y.shape[:-1]."""
    x, y = tensor_arg("inner", x), tensor_arg("inner", y, "y")
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    return M.matmul(x.reshape((-1, x.shape[-1])), y.reshape((-1, y.shape[-1])).T).reshape(
        x.shape[:-1] + y.shape[:-1]
    )


def outer(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    x, y = tensor_arg("outer", x).reshape((-1, 1)), tensor_arg("outer", y, "y").reshape((1, -1))
    return x * y


# -- complex helpers on real tensors (Oarlock has no complex dtype) ----------------------------
def real(x: Tensor, name: str | None = None) -> Tensor:
    return tensor_arg("real", x)


def imag(x: Tensor, name: str | None = None) -> Tensor:
    return C.zeros_like(tensor_arg("imag", x))


def conj(x: Tensor, name: str | None = None) -> Tensor:
    return tensor_arg("conj", x)


def angle(x: Tensor, name: str | None = None) -> Tensor:
    """pi where x < 0, else 0 (the argument of a real number; NaN stays NaN)."""
    x = float_arg("angle", x)
    zero = x * 0.0
    return M.where(x < 0, zero + _m.pi, zero)


# -- comparisons -------------------------------------------------------------------------------
def isclose(
    x: Tensor,
    y: Tensor,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    equal_nan: bool = False,
    name: str | None = None,
) -> Tensor:
    """|x - y| <= atol + rtol * |y| elementwise (infinities equal when identical)."""
    a, b = M._operands("isclose", x, y)
    close = M.abs(a - b) <= M.abs(b) * rtol + atol
    close = close | (a == b)
    if equal_nan and _dt.is_floating(a.dtype):
        close = close | (M.isnan(a) & M.isnan(b))
    return close


def equal_all(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """A 0-d bool tensor: same shape and every element equal."""
    x, y = tensor_arg("equal_all", x), tensor_arg("equal_all", y, "y")
    if x.shape != y.shape:
        return to_tensor(False, device=x.device)
    return M.all(M.equal(x, y))


# -- bitwise -----------------------------------------------------------------------------------
def _bits(x: Tensor) -> int:
    return x.dtype.itemsize * 8


def _bitwise(name: str, x: Tensor, y: Tensor, bit: Any) -> Tensor:
    """Combine the two's-complement bits of integer tensors one bit plane at a time."""
    a, b = M._operands(name, x, y)
    if a.dtype == _dt.bool_:
        return bit(a, b)
    if a.dtype.kind not in "iu":
        raise OpArgumentError(f"[{name}] expects integer or bool tensors, got {a.dtype}")
    nb = _bits(a)
    signed = a.dtype.kind == "i"
    wide = a.astype("int64")
    wb = b.astype("int64")
    out = C.zeros(broadcast(a, b), dtype="int64", device=a.device)
    for k in range(nb - 1 if signed else nb):
        p = 2**k
        ba = M.remainder(M.floor_divide(wide, p), 2) == 1
        bb = M.remainder(M.floor_divide(wb, p), 2) == 1
        out = out + M.cast(bit(ba, bb), _dt.int64) * p
    if signed:
        sa, sb = wide < 0, wb < 0
        out = M.where(bit(sa, sb), out + int(np.iinfo(a.dtype).min), out)
    return out.astype(a.dtype)


def broadcast(a: Tensor, b: Tensor) -> list[int]:
    return broadcast_shape(a.shape, b.shape)


def bitwise_and(x: Tensor, y: Tensor, out: Any = None, name: str | None = None) -> Tensor:
    return _bitwise("bitwise_and", x, y, M.logical_and)


def bitwise_or(x: Tensor, y: Tensor, out: Any = None, name: str | None = None) -> Tensor:
    return _bitwise("bitwise_or", x, y, M.logical_or)


def bitwise_xor(x: Tensor, y: Tensor, out: Any = None, name: str | None = None) -> Tensor:
    return _bitwise("bitwise_xor", x, y, M.logical_xor)


def bitwise_not(x: Tensor, out: Any = None, name: str | None = None) -> Tensor:
    """~x: -x - 1 for signed integers, max - x for unsigned, logical not for bool."""
    x = tensor_arg("bitwise_not", x)
    if x.dtype == _dt.bool_:
        return M.logical_not(x)
    if x.dtype.kind == "u":
        return (int(np.iinfo(x.dtype).max) - x.astype("int64")).astype(x.dtype)
    if x.dtype.kind != "i":
        raise OpArgumentError(f"[bitwise_not] expects integer or bool tensors, got {x.dtype}")
    return (-x - 1).astype(x.dtype)
