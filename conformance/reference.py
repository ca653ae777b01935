"""Independent numpy references of the primitive set (a second reading of adapter_api/primitives.py).

Nothing here imports the framework or a plugin: every reference is written from the contract's
text with plain numpy (and Python's ``math`` where numpy has no function), computed in float64
for floating inputs and rounded once to the output dtype. ``philox4x32_10`` is checked against
the published Random123 known-answer vectors by :func:`philox_self_test` (and by the tests).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

# -------------------------------------------------------------------------------------------
# Philox-4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3")
# -------------------------------------------------------------------------------------------
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_MASK = 0xFFFFFFFF

#: (counter, key, expected) from Random123's kat_vectors for philox4x32_10.
PHILOX_KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((_MASK,) * 4, (_MASK, _MASK), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


def philox4x32_10(counter: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """Ten Philox rounds. ``counter`` is (n, 4) uint32; returns (n, 4) uint32.

    Written with Python-int-sized uint64 products (hi = p >> 32, lo = p & mask) per round.
    """
    c = np.array(counter, dtype=np.uint64).reshape(-1, 4)
    k0, k1 = np.uint64(key[0] & _MASK), np.uint64(key[1] & _MASK)
    m0, m1 = np.uint64(_PHILOX_M[0]), np.uint64(_PHILOX_M[1])
    mask, sh = np.uint64(_MASK), np.uint64(32)
    for r in range(10):
        if r > 0:
            k0 = (k0 + np.uint64(_PHILOX_W[0])) & mask
            k1 = (k1 + np.uint64(_PHILOX_W[1])) & mask
        p0 = c[:, 0] * m0
        p1 = c[:, 2] * m1
        c = np.stack([(p1 >> sh) ^ c[:, 1] ^ k0, p1 & mask, (p0 >> sh) ^ c[:, 3] ^ k1, p0 & mask], axis=1)
    return c.astype(np.uint32)


def philox_self_test() -> list[str]:
    """Check :func:`philox4x32_10` against the Random123 vectors; returns the mismatches."""
    bad = []
    for ctr, key, want in PHILOX_KAT:
        got = tuple(int(v) for v in philox4x32_10(np.array([ctr], np.uint64), key)[0])
        if got != want:
            bad.append(f"ctr={ctr} key={key}: want {[hex(v) for v in want]}, got {[hex(v) for v in got]}")
    return bad


def philox_uniform(shape: tuple[int, ...], seed: int, offset: int, dtype: Any) -> np.ndarray:
    """The ``philox_uniform`` primitive, element by element as the contract states."""
    n = math.prod(shape)
    blocks = (n + 3) // 4
    ctr = np.zeros((blocks, 4), np.uint64)
    idx = np.arange(blocks, dtype=np.uint64) + np.uint64(offset % 2**64)
    ctr[:, 0] = idx & np.uint64(_MASK)
    ctr[:, 1] = idx >> np.uint64(32)
    bits = philox4x32_10(ctr, (seed % 2**32, (seed >> 32) % 2**32)).reshape(-1)[:n]
    return ((bits >> np.uint32(8)).astype(np.float64) * 2.0**-24).astype(dtype).reshape(shape)


# -------------------------------------------------------------------------------------------
# Primitive references
# -------------------------------------------------------------------------------------------
def _is_float(d: np.dtype) -> bool:
    return d.kind == "f" or d.name == "bfloat16"


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64) if _is_float(x.dtype) else x


_erf = np.frompyfunc(math.erf, 1, 1)


def _unary_float(fn: Any):
    def ref(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)

    return ref


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(x)


def _erf64(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erf(x), dtype=np.float64) if x.size else x.copy()


def _int_or_float(fn: Any):
    """Integer ops run in the input dtype (numpy wraps on overflow); float ones in float64."""

    def ref(*xs: np.ndarray) -> np.ndarray:
        d = xs[0].dtype
        with np.errstate(all="ignore"):
            if _is_float(d):
                return np.asarray(fn(*(x.astype(np.float64) for x in xs))).astype(d)
            return np.asarray(fn(*xs)).astype(d)

    return ref


def _compare(fn: Any):
    def ref(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(_wide(x), _wide(y)), dtype=bool)

    return ref


def _int_pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.power(x, y) if _is_float(x.dtype) else np.power(x, y, dtype=x.dtype)


def _bool_arith(fn: Any, bool_fn: Any):
    base = _int_or_float(fn)

    def ref(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if x.dtype == np.bool_:
            return bool_fn(x, y)
        return base(x, y)

    return ref


def where(cond: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(cond, x, y).astype(x.dtype)


def cast(x: np.ndarray, dtype: Any) -> np.ndarray:
    d = np.dtype(dtype)
    if d == np.bool_:
        return x != 0
    if _is_float(x.dtype) and d.kind in "iu":  # truncate, saturate, NaN -> 0 (Python ints: exact)
        info = np.iinfo(d)
        vals = [
            0 if v != v else info.max if v == math.inf else info.min if v == -math.inf else int(v)
            for v in x.astype(np.float64).reshape(-1).tolist()
        ]
        return np.array([min(max(v, info.min), info.max) for v in vals], dtype=d).reshape(x.shape)
    return x.astype(np.float64).astype(d) if _is_float(x.dtype) and _is_float(d) else x.astype(d)


def _reduce(fn: Any):
    def ref(x: np.ndarray, axes: tuple[int, ...], keepdim: bool) -> np.ndarray:
        if not axes:
            return x.copy()
        with np.errstate(all="ignore"):
            if x.dtype == np.bool_:
                return fn(x, axis=axes, keepdims=keepdim).astype(x.dtype)
            return np.asarray(fn(_wide(x), axis=axes, keepdims=keepdim)).astype(x.dtype)

    return ref


def _arg(fn: Any):
    def ref(x: np.ndarray, axis: int, keepdim: bool) -> np.ndarray:
        return np.asarray(fn(_wide(x), axis=axis, keepdims=keepdim), dtype=np.int64)

    return ref


def _order(vals: list, descending: bool) -> list[int]:
    """Stable order of ``vals`` with NaN greatest (``sorted`` keeps ties in order)."""
    if descending:  # NaN first, then the largest
        return sorted(
            range(len(vals)), key=lambda i: (vals[i] == vals[i], -vals[i] if vals[i] == vals[i] else 0)
        )
    return sorted(range(len(vals)), key=lambda i: (vals[i] != vals[i], vals[i] if vals[i] == vals[i] else 0))


def argsort(x: np.ndarray, descending: bool) -> np.ndarray:
    """Python's stable ``sorted`` of each last-axis row (NaN greatest; ints compared exactly)."""
    if x.ndim == 0:
        return np.zeros((), np.int64)
    rows = x.reshape(-1, x.shape[-1]) if x.size else np.zeros((0, x.shape[-1]), x.dtype)
    out = np.zeros(rows.shape, np.int64)
    for r, row in enumerate(rows):
        vals = row.astype(np.float64).tolist() if _is_float(x.dtype) else [int(v) for v in row.tolist()]
        out[r] = _order(vals, descending)
    return out.reshape(x.shape)


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == np.bool_:
        return np.matmul(a, b)
    return np.matmul(_wide(a), _wide(b)).astype(a.dtype)


def permute(x: np.ndarray, perm: tuple[int, ...]) -> np.ndarray:
    return np.array(np.transpose(x, perm), copy=True, order="C")


def expand(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(x, shape).copy()


def slice_(x: np.ndarray, starts: tuple, stops: tuple, steps: tuple) -> np.ndarray:
    return x[tuple(slice(a, b, c) for a, b, c in zip(starts, stops, steps))].copy()


def concat(*xs: np.ndarray, axis: int) -> np.ndarray:
    return np.concatenate(xs, axis=axis)


def pad(x: np.ndarray, pads: tuple, value: Any) -> np.ndarray:
    if x.ndim == 0:
        return x.copy()
    return np.pad(x, pads, mode="constant", constant_values=value)


def gather(x: np.ndarray, index: np.ndarray, axis: int, wrap: bool = False) -> np.ndarray:
    """``numpy.take``; numpy counts a negative index from the end, which is ``wrap``'s rule
    (without it the kernel raises for one, and no reference is asked for)."""
    return np.take(x, index, axis=axis)


def _destinations(x: np.ndarray, index: np.ndarray, axis: int) -> tuple[np.ndarray, ...]:
    """For every src element (src has shape ``x.shape[:axis] + index.shape + x.shape[axis+1:]``,
    in C order), its destination position in x: one index array per axis of x."""
    src_shape = x.shape[:axis] + index.shape + x.shape[axis + 1 :]
    grid = np.indices(src_shape).reshape(len(src_shape), -1)
    k = index.ndim
    picked = index[tuple(grid[axis : axis + k])] if k else np.full(grid.shape[1:], int(index), np.int64)
    return (*grid[:axis], picked.astype(np.int64), *grid[axis + k :])


def scatter_add(x: np.ndarray, index: np.ndarray, src: np.ndarray, axis: int) -> np.ndarray:
    y = _wide(x).copy() if x.dtype != np.bool_ else x.copy()
    add = (_wide(src) if x.dtype != np.bool_ else src).reshape(-1)
    if x.dtype == np.bool_:
        np.logical_or.at(y, _destinations(x, index, axis), add)
    else:
        np.add.at(y, _destinations(x, index, axis), add)  # duplicates accumulate
    return y.astype(x.dtype)


def scatter(x: np.ndarray, index: np.ndarray, src: np.ndarray, axis: int) -> np.ndarray:
    y = x.copy()
    y[_destinations(x, index, axis)] = src.reshape(-1)  # with duplicates, one of the values wins
    return y


def full(shape: tuple, value: Any, dtype: Any) -> np.ndarray:
    return np.full(shape, value, dtype=np.dtype(dtype))


def arange(n: int, start: Any, step: Any, dtype: Any) -> np.ndarray:
    d = np.dtype(dtype)
    if d.kind in "iu":
        return (np.arange(n, dtype=np.int64) * int(step) + int(start)).astype(d)
    return (np.arange(n, dtype=np.float64) * float(step) + float(start)).astype(d)


def copy(x: np.ndarray) -> np.ndarray:
    return x.copy()


def _floor_divide(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.floor_divide(x, y)


REFERENCES: dict[str, Any] = {
    "neg": _int_or_float(np.negative),
    "abs": _int_or_float(np.abs),
    "exp": _unary_float(np.exp),
    "log": _unary_float(np.log),
    "sqrt": _unary_float(np.sqrt),
    "rsqrt": _unary_float(_rsqrt),
    "sin": _unary_float(np.sin),
    "cos": _unary_float(np.cos),
    "tanh": _unary_float(np.tanh),
    "erf": _unary_float(_erf64),
    "floor": _unary_float(np.floor),
    "ceil": _unary_float(np.ceil),
    "sign": _int_or_float(np.sign),
    "logical_not": lambda x: ~x.astype(bool),
    "add": _bool_arith(np.add, np.logical_or),
    "sub": _int_or_float(np.subtract),
    "mul": _bool_arith(np.multiply, np.logical_and),
    "div": _int_or_float(np.divide),
    "pow": _int_or_float(_int_pow),
    "maximum": _bool_arith(np.maximum, np.logical_or),
    "minimum": _bool_arith(np.minimum, np.logical_and),
    "floor_divide": _int_or_float(_floor_divide),
    "remainder": _int_or_float(np.remainder),
    "eq": _compare(np.equal),
    "ne": _compare(np.not_equal),
    "lt": _compare(np.less),
    "le": _compare(np.less_equal),
    "gt": _compare(np.greater),
    "ge": _compare(np.greater_equal),
    "logical_and": lambda x, y: np.logical_and(x, y),
    "logical_or": lambda x, y: np.logical_or(x, y),
    "where": where,
    "cast": cast,
    "sum": _reduce(np.sum),
    "prod": _reduce(np.prod),
    "max": _reduce(np.max),
    "min": _reduce(np.min),
    "argmax": _arg(np.argmax),
    "argmin": _arg(np.argmin),
    "argsort": argsort,
    "matmul": matmul,
    "permute": permute,
    "expand": expand,
    "slice": slice_,
    "concat": concat,
    "pad": pad,
    "gather": gather,
    "scatter_add": scatter_add,
    "scatter": scatter,
    "full": full,
    "arange": arange,
    "philox_uniform": philox_uniform,
    "copy": copy,
}
