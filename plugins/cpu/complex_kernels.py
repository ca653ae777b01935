"""numpy kernels for complex64 and complex128 (issue 40).

The C kernels (elementwise.c, gemm.c, layout.c, index.c) take real dtypes only, so every
complex kernel is a plain numpy call: numpy's complex arithmetic is the reference one (the
contract's ops read for complex as numpy defines them: ``abs`` is not among them, its result is
real; ``cast`` to a real dtype keeps the real part).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

COMPLEX = ("complex64", "complex128")


def _unary(fn: Any):
    def k(ctx: Any, outs: list, ins: list) -> None:
        fn(ins[0], out=outs[0])

    return k


def _binary(fn: Any):
    def k(ctx: Any, outs: list, ins: list) -> None:
        fn(ins[0], ins[1], out=outs[0])

    return k


def _where(ctx: Any, outs: list, ins: list) -> None:
    c, x, y = ins
    np.copyto(outs[0], np.where(c, x, y))


def _cast(ctx: Any, outs: list, ins: list, dtype: Any) -> None:
    x, y = ins[0], outs[0]
    if y.dtype == np.bool_:
        np.not_equal(x, 0, out=y)
        return
    if y.dtype.kind in "iu":  # the real part, truncated and saturated as the contract's float->int
        r = np.trunc(x.real.astype(np.float64))
        info = np.iinfo(y.dtype)
        ok = np.isfinite(r)
        y[...] = np.where(ok, np.clip(np.where(ok, r, 0), info.min, info.max), 0).astype(y.dtype)
        return
    with warnings.catch_warnings():  # complex -> real keeps the real part (Paddle's cast)
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        y[...] = (x.real if y.dtype.kind != "c" else x).astype(y.dtype)


def _reduce(fn: Any):
    def k(ctx: Any, outs: list, ins: list, axes: tuple[int, ...], keepdim: bool) -> None:
        x, y = ins[0], outs[0]
        if not axes:
            np.copyto(y, x)
        else:
            fn(x, axis=axes, keepdims=keepdim, out=y)

    return k


def _matmul(ctx: Any, outs: list, ins: list) -> None:
    np.matmul(ins[0], ins[1], out=outs[0])


def _permute(ctx: Any, outs: list, ins: list, perm: tuple[int, ...]) -> None:
    np.copyto(outs[0], ins[0].transpose(perm))


def _expand(ctx: Any, outs: list, ins: list, shape: tuple[int, ...]) -> None:
    np.copyto(outs[0], np.broadcast_to(ins[0], shape))


def _slice(ctx: Any, outs: list, ins: list, starts: tuple, stops: tuple, steps: tuple) -> None:
    np.copyto(outs[0], ins[0][tuple(slice(a, b, c) for a, b, c in zip(starts, stops, steps))])


def _concat(ctx: Any, outs: list, ins: list, axis: int) -> None:
    np.concatenate(ins, axis=axis, out=outs[0])


def _pad(ctx: Any, outs: list, ins: list, pads: tuple, value: Any) -> None:
    y = outs[0]
    y.fill(value)
    y[tuple(slice(b, b + s) for (b, _), s in zip(pads, ins[0].shape))] = ins[0]


def _check_index(op: str, idx: np.ndarray, size: int, axis: int, wrap: bool = False) -> None:
    low = -size if wrap else 0
    if idx.size and (int(idx.min()) < low or int(idx.max()) >= size):
        bad = int(idx.min()) if int(idx.min()) < low else int(idx.max())
        raise OpArgumentError(
            f"[{op}] index {bad} is out of range for axis {axis} of size {size}; indices must be in [{low}, {size})"
        )


def _gather(ctx: Any, outs: list, ins: list, axis: int, wrap: bool = False) -> None:
    x, idx = ins
    n = x.shape[axis]
    _check_index("gather", idx, n, axis, wrap)
    np.take(x, np.where(idx < 0, idx + n, idx) if wrap else idx, axis=axis, out=outs[0])


def _scatter_add(ctx: Any, outs: list, ins: list, axis: int) -> None:
    x, idx, src = ins
    _check_index("scatter_add", idx, x.shape[axis], axis)
    y = outs[0]
    np.copyto(y, x)
    np.add.at(y, (slice(None),) * axis + (idx,), src)


def _scatter(ctx: Any, outs: list, ins: list, axis: int) -> None:
    x, idx, src = ins
    _check_index("scatter", idx, x.shape[axis], axis)
    y = outs[0]
    np.copyto(y, x)
    y[(slice(None),) * axis + (idx,)] = src


def _full(ctx: Any, outs: list, ins: list, shape: tuple, value: Any, dtype: Any) -> None:
    outs[0].fill(value)


def _copy(ctx: Any, outs: list, ins: list) -> None:
    np.copyto(outs[0], ins[0])


#: op -> kernel; registered for complex64 and complex128 (``kernels.register_kernels``)
TABLE: dict[str, Any] = {
    "neg": _unary(np.negative),
    "exp": _unary(np.exp),
    "log": _unary(np.log),
    "sqrt": _unary(np.sqrt),
    "sin": _unary(np.sin),
    "cos": _unary(np.cos),
    "tanh": _unary(np.tanh),
    "add": _binary(np.add),
    "sub": _binary(np.subtract),
    "mul": _binary(np.multiply),
    "div": _binary(np.divide),
    "pow": _binary(np.power),
    "eq": _binary(np.equal),
    "ne": _binary(np.not_equal),
    "where": _where,
    "cast": _cast,
    "sum": _reduce(np.sum),
    "prod": _reduce(np.prod),
    "matmul": _matmul,
    "permute": _permute,
    "expand": _expand,
    "slice": _slice,
    "concat": _concat,
    "pad": _pad,
    "gather": _gather,
    "scatter_add": _scatter_add,
    "scatter": _scatter,
    "full": _full,
    "copy": _copy,
}
