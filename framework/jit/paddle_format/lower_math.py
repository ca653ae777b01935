"""Lowerings of Paddle's tensor ops: creation, elementwise math, reductions, shapes, indexing.

Each record maps one ``pd_op`` op onto Oarlock's public API (see :mod:`.table`)."""

from __future__ import annotations

from typing import Any

import numpy as np

import framework as fw

from .table import Ctx, axes, lowering, norm_axis, sizes

# -- values known when the program is read -------------------------------------------------


@lowering("full")
def _full(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> np.ndarray:
    dtype = ctx.attr(a, "dtype") or np.dtype("float32")
    return np.full(tuple(ctx.attr(a, "shape", [])), ctx.attr(a, "value"), dtype=dtype)


@lowering("full_int_array")
def _full_int_array(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> np.ndarray:
    return np.array(ctx.attr(a, "value", []), dtype=ctx.attr(a, "dtype") or np.int64)


@lowering("assign_value_", "assign_value")
def _assign_value(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> np.ndarray:
    dtype = ctx.attr(a, "dtype") or np.dtype("float32")
    return np.array(ctx.attr(a, "values"), dtype=dtype).reshape(ctx.attr(a, "shape"))


@lowering("shape", "shape64")
def _shape(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> np.ndarray:
    dtype = np.int64 if ctx.op.name.endswith("64") else np.int32
    return np.array(ins[0].shape, dtype=dtype)


@lowering("full_like")
def _full_like(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ctx.tensor(ins[0])
    return fw.full_like(x, ctx.scalar(ins[1], "the value"), dtype=ctx.attr(a, "dtype") or x.dtype)


@lowering("full_with_tensor")
def _full_with_tensor(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    shape = ctx.ints(ins[1], "the shape")
    dtype = ctx.attr(a, "dtype") or np.dtype("float32")
    return fw.full(shape, ctx.scalar(ins[0], "the value"), dtype=dtype, device=ctx.device)


@lowering("arange")
def _arange(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    start, end, step = (ctx.scalar(v, w) for v, w in zip(ins, ("start", "end", "step")))
    return np.arange(start, end, step, dtype=ctx.attr(a, "dtype") or np.int64)


@lowering("assign", "share_data_")
def _assign(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return ins[0]


@lowering("cast")
def _cast(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return fw.cast(ctx.tensor(ins[0]), ctx.attr(a, "dtype"))


# -- elementwise -----------------------------------------------------------------------------
_UNARY = {
    "relu": fw.nn.functional.relu,
    "relu6": fw.nn.functional.relu6,
    "sigmoid": fw.nn.functional.sigmoid,
    "tanh": fw.tanh,
    "exp": fw.exp,
    "log": fw.log,
    "sqrt": fw.sqrt,
    "rsqrt": fw.rsqrt,
    "abs": fw.abs,
    "erf": fw.erf,
    "sin": fw.sin,
    "cos": fw.cos,
    "floor": fw.floor,
    "ceil": fw.ceil,
    "reciprocal": fw.reciprocal,
    "square": fw.square,
    "sign": fw.sign,
    "silu": fw.nn.functional.silu,
    "swish": fw.nn.functional.silu,
    "hardswish": fw.nn.functional.hardswish,
    "mish": fw.nn.functional.mish,
    "softsign": fw.nn.functional.softsign,
    "logsigmoid": fw.nn.functional.log_sigmoid,
    "logical_not": fw.logical_not,
    "isnan": fw.isnan,
    "isinf": fw.isinf,
}
_BINARY = {
    "add": fw.add,
    "subtract": fw.subtract,
    "multiply": fw.multiply,
    "divide": fw.divide,
    "maximum": fw.maximum,
    "minimum": fw.minimum,
    "elementwise_pow": fw.pow,
    "remainder": fw.remainder,
    "floor_divide": fw.floor_divide,
    "equal": fw.equal,
    "not_equal": fw.not_equal,
    "less_than": fw.less_than,
    "less_equal": fw.less_equal,
    "greater_than": fw.greater_than,
    "greater_equal": fw.greater_equal,
    "logical_and": fw.logical_and,
    "logical_or": fw.logical_or,
    "logical_xor": fw.logical_xor,
}


def _unary(fn: Any) -> Any:
    return lambda ctx, ins, a: fn(ctx.tensor(ins[0]))


def _binary(fn: Any) -> Any:
    return lambda ctx, ins, a: fn(ctx.tensor(ins[0]), ctx.tensor(ins[1]))


for _name, _fn in _UNARY.items():
    lowering(_name, _name + "_")(_unary(_fn))
for _name, _fn in _BINARY.items():
    lowering(_name, _name + "_")(_binary(_fn))


@lowering("scale", "scale_")
def _scale(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ctx.tensor(ins[0])
    bias, after = float(ctx.attr(a, "bias", 0.0)), bool(ctx.attr(a, "bias_after_scale", True))
    if isinstance(ins[1], np.ndarray):
        out = fw.scale(x, ctx.scalar(ins[1], "the scale"), bias, after)
    else:
        s = ctx.tensor(ins[1]).astype(x.dtype)  # a scale computed at run time
        out = x * s + bias if after else (x + bias) * s
    return out if out.dtype == x.dtype else fw.cast(out, x.dtype)  # Paddle's scale keeps the dtype


@lowering("pow", "pow_")
def _pow(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return fw.pow(ctx.tensor(ins[0]), float(ctx.attr(a, "y")))


@lowering("clip", "clip_")
def _clip(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    lo, hi = (ctx.scalar(v, w) for v, w in zip(ins[1:3], ("min", "max")))
    return fw.clip(ctx.tensor(ins[0]), lo, hi)


@lowering("where", "where_")
def _where(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return fw.where(*(ctx.tensor(v) for v in ins[:3]))


# -- reductions ------------------------------------------------------------------------------
def _reduce(fn: Any) -> Any:
    def low(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
        ax = None if ctx.attr(a, "reduce_all", False) else axes(ctx, ins[1]) if len(ins) > 1 else None
        keep = bool(ctx.attr(a, "keepdim", ctx.attr(a, "keep_dim", False)))
        out = fn(ctx.tensor(ins[0]), axis=ax, keepdim=keep)
        dtype = ctx.attr(a, "dtype")
        return out if dtype is None or out.dtype == dtype else fw.cast(out, dtype)

    return low


for _name, _fn in {"mean": fw.mean, "sum": fw.sum, "max": fw.max, "min": fw.min, "prod": fw.prod}.items():
    lowering(_name)(_reduce(_fn))


@lowering("logsumexp")
def _logsumexp(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    ax = None if ctx.attr(a, "reduce_all", False) else (ctx.attr(a, "axis") or None)
    return fw.logsumexp(ctx.tensor(ins[0]), axis=ax, keepdim=bool(ctx.attr(a, "keepdim", False)))


@lowering("argmax", "argmin")
def _argmax(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ctx.tensor(ins[0])
    fn = fw.argmax if ctx.op.name.endswith("argmax") else fw.argmin
    ax = None if ctx.attr(a, "flatten", False) else int(ctx.scalar(ins[1], "the axis"))
    return fn(x, axis=ax, keepdim=bool(ctx.attr(a, "keepdims", False)), dtype=ctx.attr(a, "dtype") or "int64")


# -- shapes ----------------------------------------------------------------------------------
@lowering("reshape", "reshape_")
def _reshape(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ctx.tensor(ins[0])
    return fw.reshape(x, sizes(ctx.ints(ins[1], "the shape"), x.shape)), None


@lowering("flatten", "flatten_")
def _flatten(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ctx.tensor(ins[0])
    return fw.flatten(x, int(ctx.attr(a, "start_axis", 1)), int(ctx.attr(a, "stop_axis", -1))), None


@lowering("transpose", "transpose_")
def _transpose(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return fw.transpose(ctx.tensor(ins[0]), [int(p) for p in ctx.attr(a, "perm")])


@lowering("squeeze", "squeeze_")
def _squeeze(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return fw.squeeze(ctx.tensor(ins[0]), axes(ctx, ins[1])), None


@lowering("unsqueeze", "unsqueeze_")
def _unsqueeze(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return fw.unsqueeze(ctx.tensor(ins[0]), ctx.ints(ins[1], "the axes")), None


@lowering("concat")
def _concat(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return fw.concat([ctx.tensor(v) for v in ins[0]], axis=int(ctx.scalar(ins[1], "the axis")))


@lowering("stack")
def _stack(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return fw.stack([ctx.tensor(v) for v in ins[0]], axis=int(ctx.attr(a, "axis", 0)))


@lowering("split")
def _split(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ctx.tensor(ins[0])
    return list(fw.split(x, ctx.ints(ins[1], "the sections"), axis=int(ctx.scalar(ins[2], "the axis"))))


@lowering("split_with_num")
def _split_with_num(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ctx.tensor(ins[0])
    return list(fw.split(x, int(ctx.attr(a, "num")), axis=int(ctx.scalar(ins[1], "the axis"))))


@lowering("slice")
def _slice(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ctx.tensor(ins[0])
    ax = [norm_axis(int(v), x.ndim) for v in ctx.attr(a, "axes")]
    starts, ends = ctx.ints(ins[1], "the starts"), ctx.ints(ins[2], "the ends")
    out = _clamped_slice(x, ax, starts, ends, [1] * len(ax))
    dec = [norm_axis(int(d), x.ndim) for d in ctx.attr(a, "decrease_axis", [])]
    return fw.reshape(out, [n for i, n in enumerate(out.shape) if i not in dec]) if dec else out


@lowering("strided_slice")
def _strided_slice(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ctx.tensor(ins[0])
    ax = [norm_axis(int(v), x.ndim) for v in ctx.attr(a, "axes")]
    st, en, sd = (ctx.ints(v, w) for v, w in zip(ins[1:4], ("the starts", "the ends", "the strides")))
    return _clamped_slice(x, ax, st, en, sd)


def _clamped_slice(x: Any, ax: list[int], starts: list[int], ends: list[int], steps: list[int]) -> Any:
    """Paddle's slice bounds (negative from the end, beyond the end clamped) as Python's."""
    index: list[Any] = [slice(None)] * x.ndim
    for i, s, e, st in zip(ax, starts, ends, steps):
        index[i] = slice(*slice(s, e, st).indices(x.shape[i]))
    return x[tuple(index)]


@lowering("expand")
def _expand(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ctx.tensor(ins[0])
    shape = ctx.ints(ins[1], "the shape")
    lead = len(shape) - x.ndim
    return fw.expand(x, [x.shape[i - lead] if d == -1 else d for i, d in enumerate(shape)])


@lowering("tile")
def _tile(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return fw.tile(ctx.tensor(ins[0]), ctx.ints(ins[1], "the repeat times"))


@lowering("gather")
def _gather(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    axis = int(ctx.scalar(ins[2], "the axis")) if len(ins) > 2 and ins[2] is not None else 0
    return fw.gather(ctx.tensor(ins[0]), ctx.tensor(ins[1]), axis=axis)


@lowering("argsort")
def _argsort(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ctx.tensor(ins[0])
    axis, desc = int(ctx.attr(a, "axis", -1)), bool(ctx.attr(a, "descending", False))
    return fw.sort(x, axis=axis, descending=desc), fw.argsort(x, axis=axis, descending=desc)


@lowering("scatter", "scatter_")
def _scatter(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x, idx, upd = (ctx.tensor(v, w) for v, w in zip(ins, ("x", "the index", "the updates")))
    return fw.scatter(x, idx, upd, overwrite=bool(ctx.attr(a, "overwrite", True)))


@lowering("index_add", "index_add_")
def _index_add(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x, idx, upd = (ctx.tensor(v, w) for v, w in zip(ins, ("x", "the index", "the added values")))
    return fw.scatter_add(x, idx, upd, axis=int(ctx.attr(a, "axis", 0)))


@lowering("index_select")
def _index_select(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    return fw.index_select(ctx.tensor(ins[0]), ctx.tensor(ins[1]), axis=int(ctx.attr(a, "axis", 0)))


@lowering("matmul")
def _matmul(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    tx, ty = bool(ctx.attr(a, "transpose_x", False)), bool(ctx.attr(a, "transpose_y", False))
    return fw.matmul(ctx.tensor(ins[0]), ctx.tensor(ins[1]), transpose_x=tx, transpose_y=ty)


@lowering("cumsum")
def _cumsum(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    if ctx.attr(a, "exclusive", False) or ctx.attr(a, "reverse", False):
        raise ctx.fail("is exclusive or reversed, which Oarlock's lowering does not cover")
    x = ctx.tensor(ins[0])
    return fw.cumsum(x, axis=None if ctx.attr(a, "flatten", False) else int(ctx.scalar(ins[1], "the axis")))


@lowering("cumprod", "cumprod_")
def _cumprod(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ctx.tensor(ins[0])
    dim = norm_axis(int(ctx.attr(a, "dim", -1)), x.ndim)
    rev = bool(ctx.attr(a, "reverse", False))
    if rev:
        x = fw.flip(x, [dim])
    if ctx.attr(a, "exclusive", False):  # each entry the product of those before it
        head = fw.ones_like(fw.slice(x, [dim], [0], [1]))
        x = fw.concat([head, fw.slice(x, [dim], [0], [x.shape[dim] - 1])], axis=dim)
    out = fw.cumprod(x, dim)
    return fw.flip(out, [dim]) if rev else out


@lowering("amax", "amin")
def _amax(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    fn = fw.amax if ctx.op.name.endswith("amax") else fw.amin
    ax = ctx.attr(a, "axis", [])
    ax = [int(v) for v in ax] if isinstance(ax, list | tuple) else [int(ax)]
    return fn(ctx.tensor(ins[0]), axis=ax or None, keepdim=bool(ctx.attr(a, "keepdim", False)))


@lowering("triu", "triu_", "tril", "tril_")
def _triu(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    fn = fw.triu if "triu" in ctx.op.name else fw.tril
    return fn(ctx.tensor(ins[0]), int(ctx.attr(a, "diagonal", 0)))


@lowering("eye")
def _eye(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> np.ndarray:
    rows = int(ctx.scalar(ins[0], "the number of rows"))
    cols = int(ctx.scalar(ins[1], "the number of columns")) if len(ins) > 1 and ins[1] is not None else rows
    cols = rows if cols < 0 else cols  # Paddle's -1: square
    return np.eye(rows, cols, dtype=ctx.attr(a, "dtype") or np.float32)


@lowering("one_hot")
def _one_hot(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    n = int(ctx.scalar(ins[1], "the number of classes")) if len(ins) > 1 else int(ctx.attr(a, "depth", -1))
    return fw.nn.functional.one_hot(ctx.tensor(ins[0]), n)


@lowering("topk")
def _topk(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    k = int(ctx.scalar(ins[1], "k")) if len(ins) > 1 and ins[1] is not None else int(ctx.attr(a, "k", 1))
    values, indices = fw.topk(
        ctx.tensor(ins[0]),
        k,
        axis=int(ctx.attr(a, "axis", -1)),
        largest=bool(ctx.attr(a, "largest", True)),
        sorted=bool(ctx.attr(a, "sorted", True)),
    )
    return values, indices


@lowering("det")
def _det(ctx: Ctx, ins: list[Any], a: dict[str, Any]) -> Any:
    """Gaussian elimination with partial pivoting over the last two dims, one step per
    column (the matrix size is static): the product of the pivots, the sign of the swaps."""
    m = ctx.tensor(ins[0])
    n = m.shape[-1]
    if m.ndim < 2 or m.shape[-2] != n:
        raise ctx.fail(f"takes square matrices, got shape {tuple(m.shape)}")
    rows = fw.to_tensor(np.arange(n, dtype=np.int64).reshape(n, 1), device=ctx.device)
    det = fw.ones(m.shape[:-2], dtype=m.dtype, device=ctx.device)
    for k in range(n):
        col = fw.abs(m[..., :, k])
        col = fw.where(
            fw.less_than(rows.reshape([n]), fw.full([n], k, dtype="int64", device=ctx.device)),
            fw.full_like(col, -1.0),
            col,
        )
        p = fw.argmax(col, axis=-1, keepdim=True)  # (..., 1)
        p_rows = fw.unsqueeze(p, -1)  # (..., 1, 1)
        row_p = fw.take_along_axis(m, fw.expand(p_rows, [*m.shape[:-2], 1, n]), axis=-2)
        row_k = m[..., k : k + 1, :]
        is_k = fw.equal(rows, fw.full_like(rows, k))
        m = fw.where(is_k, row_p, fw.where(fw.equal(rows, p_rows), row_k, m))
        swapped = fw.not_equal(p.reshape(det.shape), fw.full(det.shape, k, dtype="int64", device=ctx.device))
        pivot = m[..., k, k]
        det = fw.multiply(det, fw.where(swapped, fw.multiply(pivot, fw.full_like(pivot, -1.0)), pivot))
        safe = fw.where(fw.equal(pivot, fw.zeros_like(pivot)), fw.ones_like(pivot), pivot)
        below = fw.greater_than(rows, fw.full_like(rows, k)).astype(m.dtype)  # (n, 1)
        factors = fw.multiply(
            fw.divide(m[..., :, k : k + 1], fw.unsqueeze(fw.unsqueeze(safe, -1), -1)), below
        )
        m = fw.subtract(m, fw.multiply(factors, m[..., k : k + 1, :]))
    return det
