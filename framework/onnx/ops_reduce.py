"""Converters of ONNX's reductions, arg-reductions, cumulative ops, top-k and sorting."""

from __future__ import annotations

import numpy as np

import framework as fw

from ._registry import Node, converter


def _axes(n: Node, x: fw.Tensor, since_input: int) -> list[int] | None:
    """The reduced axes (an input from opset ``since_input``, an attribute before); None: all."""
    axes = n.ints(1, "axes") if n.opset >= since_input or n.has(1) else n.attr("axes")
    if axes is None or len(axes) == 0:
        if n.attr("noop_with_empty_axes", 0):
            return []
        return None
    return [a + x.ndim if a < 0 else a for a in axes]


def _reduce(fn, since_input: int = 18, pre=None, post=None):  # type: ignore[no-untyped-def]
    def conv(n: Node) -> fw.Tensor:
        x = n.tensor(0)
        axes = _axes(n, x, since_input)
        if pre is not None:
            x = pre(x)
        if axes == []:
            return post(x) if post is not None else x
        keep = bool(n.attr("keepdims", 1))
        ax = list(range(x.ndim)) if axes is None else axes
        if x.size == 0 or any(x.shape[a] == 0 for a in ax):
            y = _empty_reduce(n, x, ax, keep)
        else:
            y = fn(x, axis=ax, keepdim=keep)
        return post(y) if post is not None else y

    return conv


def _empty_reduce(n: Node, x: fw.Tensor, ax: list[int], keep: bool) -> fw.Tensor:
    """A reduction over an empty axis: its identity (0 for sums, 1 for products, -inf/inf for max/min)."""
    ident = {
        "ReduceSum": 0,
        "ReduceSumSquare": 0,
        "ReduceL1": 0,
        "ReduceL2": 0,
        "ReduceLogSumExp": -np.inf,
        "ReduceLogSum": 0,  # the empty sum; the log after it gives -inf
        "ReduceProd": 1,
        "ReduceMax": _lowest(x.dtype),
        "ReduceMin": _highest(x.dtype),
    }.get(n.op_type)
    if ident is None:
        raise n.error("reduces an empty axis, which has no value")
    shape = (
        [1 if i in ax else d for i, d in enumerate(x.shape)]
        if keep
        else [d for i, d in enumerate(x.shape) if i not in ax]
    )
    return fw.full(shape, ident, dtype=x.dtype, device=n.device)


def _lowest(dt: object) -> object:
    d = np.dtype(dt)
    return False if d.kind == "b" else -np.inf if d.kind == "f" else np.iinfo(d).min


def _highest(dt: object) -> object:
    d = np.dtype(dt)
    return True if d.kind == "b" else np.inf if d.kind == "f" else np.iinfo(d).max


def _sum(x: fw.Tensor, axis: list[int], keepdim: bool) -> fw.Tensor:
    return fw.sum(x, axis=axis, keepdim=keepdim, dtype=x.dtype)


converter("ReduceSum", consts=(1,))(_reduce(_sum, since_input=13))
converter("ReduceMean", consts=(1,))(_reduce(fw.mean))
converter("ReduceMax", consts=(1,))(_reduce(fw.amax))
converter("ReduceMin", consts=(1,))(_reduce(fw.amin))
converter("ReduceProd", consts=(1,))(_reduce(lambda x, axis, keepdim: fw.prod(x, axis=axis, keepdim=keepdim)))
converter("ReduceSumSquare", consts=(1,))(_reduce(_sum, pre=lambda x: fw.multiply(x, x)))
converter("ReduceL1", consts=(1,))(_reduce(_sum, pre=fw.abs))
converter("ReduceL2", consts=(1,))(_reduce(_sum, pre=lambda x: fw.multiply(x, x), post=fw.sqrt))
converter("ReduceLogSum", consts=(1,))(_reduce(_sum, post=fw.log))
converter("ReduceLogSumExp", consts=(1,))(
    _reduce(lambda x, axis, keepdim: fw.logsumexp(x, axis=axis, keepdim=keepdim))
)


def _arg(fn):  # type: ignore[no-untyped-def]
    def conv(n: Node) -> fw.Tensor:
        x = n.tensor(0)
        ax = n.attr("axis", 0)
        ax = ax + x.ndim if ax < 0 else ax
        keep = bool(n.attr("keepdims", 1))
        if n.attr("select_last_index", 0):  # the last of equal values: the first in the flipped axis
            r = fn(fw.flip(x, [ax]), axis=ax, keepdim=keep)
            return fw.subtract(fw.full_like(r, x.shape[ax] - 1), r)
        return fn(x, axis=ax, keepdim=keep)

    return conv


converter("ArgMax")(_arg(fw.argmax))
converter("ArgMin")(_arg(fw.argmin))


@converter("CumSum", consts=(1,))
def _cumsum(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    ax = int(n.const(1).reshape(()))
    ax = ax + x.ndim if ax < 0 else ax
    rev = n.attr("reverse", 0)
    if rev:
        x = fw.flip(x, [ax])
    y = fw.cumsum(x, axis=ax, dtype=x.dtype)
    if n.attr("exclusive", 0):
        y = fw.subtract(y, x)
    return fw.flip(y, [ax]) if rev else y


@converter("TopK", consts=(1,))
def _topk(n: Node) -> list[fw.Tensor]:
    x = n.tensor(0)
    k = int(n.ints(1, "k")[0])
    ax = n.attr("axis", -1)
    v, i = fw.topk(x, k, axis=ax, largest=bool(n.attr("largest", 1)), sorted=bool(n.attr("sorted", 1)))
    return [v, i.astype("int64")]


@converter("Softmax", "LogSoftmax", "Hardmax")
def _softmax(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    ax = n.attr("axis", -1 if n.opset >= 13 else 1)
    ax = ax + x.ndim if ax < 0 else ax
    shape = None
    if n.opset < 13:  # the input is flattened to 2-D at axis
        shape = list(x.shape)
        x = fw.reshape(x, [int(np.prod(shape[:ax])), int(np.prod(shape[ax:]))])
        ax = 1
    if n.op_type == "Softmax":
        y = fw.nn.functional.softmax(x, axis=ax)
    elif n.op_type == "LogSoftmax":
        y = fw.nn.functional.log_softmax(x, axis=ax)
    else:
        y = fw.nn.functional.one_hot(fw.argmax(x, axis=ax), x.shape[ax]).astype(x.dtype)
        if ax != x.ndim - 1:
            perm = list(range(x.ndim - 1))
            perm.insert(ax, x.ndim - 1)
            y = fw.transpose(y, perm)
    return y if shape is None else fw.reshape(y, shape)
