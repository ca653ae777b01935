"""Converters of ONNX's control flow: ``If``, ``Loop`` and ``Scan`` as the IR's ``cf`` ops.

A subgraph is converted by the same graph walk as the model's graph, in a scope that sees the
enclosing graph's values (what ONNX calls outer-scope names). Under ``to_static`` the walk runs
inside the branch or loop body that :func:`framework.static.nn.cond` and
:func:`~framework.static.nn.while_loop` trace, so:

- ``If`` is one ``cf.cond`` (a predicate known when the program is built picks its branch
  then and there); both branches must give each output the same dtype and shape.
- ``Loop`` is one ``cf.while`` over ``(iteration, condition, carried values...)``; its trip
  count and condition may be computed at run time. A Loop with *scan outputs* (values stacked
  over the iterations) has as many rows as iterations ran, which a program of fixed shapes
  cannot hold unless the count is known: its trip count and condition are then needed when the
  program is built (graph inputs feeding them are taken by value), and its body is unrolled.
- ``Scan`` is one ``cf.while`` over the scan axis (its length is the input's static dim): the
  first step is traced before the loop (it gives the outputs' shapes), the loop writes row
  ``t`` of each stacked output with a ``where`` on a one-hot mask.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import framework as fw

from ..jit.trace import TracedTensor
from ._registry import Node, OnnxImportError, converter

#: the most iterations a Loop with scan outputs is unrolled to
MAX_UNROLL = 4096


def _walk(n: Node, graph: Any, bound: dict[str, Any]) -> list[Any]:
    """Run subgraph ``graph`` of node ``n`` with ``bound`` (its inputs) over the outer scope."""
    from ._model import run_graph

    scope = dict(n.scope)
    scope.update(bound)
    return run_graph(graph, scope, n.opset, n.device)


def _tensor(n: Node, v: Any) -> fw.Tensor:
    if isinstance(v, np.ndarray):
        return fw.to_tensor(v, device=n.device)
    return v


def _scalar(n: Node, v: Any, dtype: str) -> fw.Tensor:
    """``v`` (a one-element tensor or array) as a 0-d tensor of ``dtype``."""
    t = _tensor(n, np.asarray(v, dtype) if isinstance(v, (np.ndarray, bool, int)) else v)
    if t.dtype != np.dtype(dtype):
        t = t.astype(dtype)
    return t.reshape([]) if t.shape != () else t


# -- If -----------------------------------------------------------------------------------------
@converter("If")
def _if(n: Node) -> list[Any]:
    then_g, else_g = n.attr("then_branch"), n.attr("else_branch")
    pred = n.inputs[0]
    if isinstance(pred, np.ndarray):  # known now: only the taken branch is converted
        if pred.size != 1:
            raise n.error(f"the condition must have one element, got shape {list(pred.shape)}")
        return _walk(n, then_g if bool(pred.reshape(-1)[0]) else else_g, {})

    def branch(g: Any) -> Any:
        return lambda: tuple(_tensor(n, o) for o in _walk(n, g, {}))

    try:
        res = fw.static.nn.cond(_scalar(n, pred, "bool"), branch(then_g), branch(else_g))
    except OnnxImportError:
        raise
    except fw.OarlockError as e:
        raise n.error(f"its branches cannot become one cond: {e}") from None
    return list(res)


# -- Loop ---------------------------------------------------------------------------------------
def _loop_consts(proto: Any) -> tuple[int, ...]:
    """A Loop with scan outputs needs its trip count and condition by value."""
    return (0, 1) if len(proto.output) > len(proto.input) - 2 else ()


@converter("Loop", node_consts=_loop_consts)
def _loop(n: Node) -> list[Any]:
    body = n.attr("body")
    names = [i.name for i in body.input]
    carried = len(n.inputs) - 2
    if len(names) != carried + 2 or len(body.output) < carried + 1:
        raise n.error(
            f"its body takes {len(names)} inputs and gives {len(body.output)} outputs for {carried} carried "
            f"values; ONNX's Loop body takes (iteration, condition, carried...) and gives (condition, carried..., "
            f"scan outputs...)"
        )
    if len(body.output) > carried + 1:
        return _loop_unrolled(n, body, names, carried)
    init = [_tensor(n, n.inputs[2 + k]) for k in range(carried)]
    count = _scalar(n, n.inputs[0], "int64") if n.has(0) else None
    go = _scalar(n, n.inputs[1], "bool") if n.has(1) else fw.to_tensor(np.array(True), device=n.device)
    start = fw.to_tensor(np.array(0, np.int64), device=n.device)

    def cond(i: fw.Tensor, c: fw.Tensor, *_: fw.Tensor) -> fw.Tensor:
        return c if count is None else fw.logical_and(c, fw.less_than(i, count))

    def step(i: fw.Tensor, c: fw.Tensor, *vals: fw.Tensor) -> list[fw.Tensor]:
        outs = _walk(n, body, dict(zip(names, [i, c, *vals])))
        return [i + 1, _scalar(n, outs[0], "bool"), *[_tensor(n, o) for o in outs[1 : 1 + carried]]]

    try:
        res = fw.static.nn.while_loop(cond, step, [start, go, *init])
    except OnnxImportError:
        raise
    except fw.OarlockError as e:
        raise n.error(f"its body cannot become one while loop: {e}") from None
    return list(res[2:])


def _loop_unrolled(n: Node, body: Any, names: list[str], carried: int) -> list[Any]:
    fix = "a Loop with scan outputs is unrolled: its trip count and condition must be known when it is built"
    count = int(n.const(0).reshape(-1)[0]) if n.has(0) else None
    go = bool(n.const(1).reshape(-1)[0]) if n.has(1) else True
    if count is None or count > MAX_UNROLL:
        raise n.error(f"trip count {count}, but {fix}, at most {MAX_UNROLL} iterations")
    vals = [n.inputs[2 + k] for k in range(carried)]
    rows: list[list[Any]] = [[] for _ in range(len(body.output) - 1 - carried)]
    i = 0
    while go and i < count:
        bound = dict(zip(names, [np.array(i, np.int64), np.array(go), *vals]))
        outs = _walk(n, body, bound)
        c = outs[0]
        if isinstance(c, TracedTensor):
            raise n.error(f"its body computes the condition at run time, but {fix}")
        go = bool(np.asarray(c if isinstance(c, np.ndarray) else c.numpy()).reshape(-1)[0])
        vals = outs[1 : 1 + carried]
        for r, o in zip(rows, outs[1 + carried :]):
            r.append(_tensor(n, o))
        i += 1
    if rows and i == 0:
        raise n.error("it runs no iteration, so its scan outputs have no rows (and no known shape)")
    return [*vals, *[fw.stack(r, axis=0) for r in rows]]


# -- Scan ---------------------------------------------------------------------------------------
def _scan(n: Node, states: list[Any], xs: list[fw.Tensor]) -> list[fw.Tensor]:
    """Scan-9 semantics: ``states`` carried, ``xs`` read along their scan axes."""
    body = n.attr("body")
    k = len(xs)
    in_axes = list(n.attr("scan_input_axes", [0] * k))
    in_dirs = list(n.attr("scan_input_directions", [0] * k))
    names = [i.name for i in body.input]
    m = len(body.output) - len(states)
    out_axes = list(n.attr("scan_output_axes", [0] * m))
    out_dirs = list(n.attr("scan_output_directions", [0] * m))
    in_axes = [a + len(x.shape) if a < 0 else a for a, x in zip(in_axes, xs)]
    lengths = {x.shape[a] for a, x in zip(in_axes, xs)}
    if len(lengths) != 1 or not isinstance(next(iter(lengths)), int):
        raise n.error(
            f"its scan inputs have lengths {sorted(map(str, lengths))} along their scan axes; they must be one "
            f"length known when the program is built"
        )
    length = int(next(iter(lengths)))
    if length == 0:
        raise n.error("its scan inputs are empty along the scan axis; give them at least one row")

    def row(x: fw.Tensor, axis: int, reverse: int, t: fw.Tensor) -> fw.Tensor:
        idx = (length - 1 - t) if reverse else t
        return fw.squeeze(fw.index_select(x, idx.reshape([1]), axis=axis), axis=axis)

    def apply(t: fw.Tensor, vals: list[Any]) -> list[Any]:
        sl = [row(x, a, d, t) for x, a, d in zip(xs, in_axes, in_dirs)]
        return _walk(n, body, dict(zip(names, [*vals, *sl])))

    start = fw.to_tensor(np.array(0, np.int64), device=n.device)
    first = [_tensor(n, o) for o in apply(start, states)]
    init = first[: len(states)]
    # every row starts as the first step's output: the loop overwrites the others
    bufs = [fw.expand(fw.unsqueeze(o, 0), [length, *o.shape]) for o in first[len(states) :]]
    rows = fw.to_tensor(np.arange(length, dtype=np.int64), device=n.device)
    ns = len(states)

    def cond(t: fw.Tensor, *_: fw.Tensor) -> fw.Tensor:
        return fw.less_than(t, fw.to_tensor(np.array(length, np.int64), device=n.device))

    def step(t: fw.Tensor, *vals: fw.Tensor) -> list[fw.Tensor]:
        outs = [_tensor(n, o) for o in apply(t, list(vals[:ns]))]
        new = []
        for j, (o, buf) in enumerate(zip(outs[ns:], vals[ns:])):
            at = (length - 1 - t) if out_dirs[j] else t
            mask = fw.equal(rows, at).reshape([length] + [1] * len(o.shape))
            new.append(fw.where(mask, fw.unsqueeze(o, 0), buf))
        return [t + 1, *outs[:ns], *new]

    one = fw.to_tensor(np.array(1, np.int64), device=n.device)
    res = fw.static.nn.while_loop(cond, step, [one, *init, *bufs]) if length > 1 else [one, *init, *bufs]
    out = list(res[1:])
    for j, a in enumerate(out_axes):
        y = out[ns + j]
        a = a + len(y.shape) if a < 0 else a
        if a:
            perm = list(range(1, a + 1)) + [0] + list(range(a + 1, len(y.shape)))
            out[ns + j] = fw.transpose(y, perm)
    return out


@converter("Scan")
def _scan_op(n: Node) -> list[Any]:
    k = int(n.attr("num_scan_inputs"))
    if n.opset >= 9:
        ins = [n.inputs[i] for i in range(len(n.inputs))]
        states, xs = ins[: len(ins) - k], [_tensor(n, x) for x in ins[len(ins) - k :]]
        return _scan(n, [_tensor(n, s) for s in states], xs)
    # Scan-8: a leading batch axis on every input and output, sequence_lens first
    if n.has(0):
        raise n.error("sequence_lens is given; Oarlock's Scan-8 takes full sequences (leave it empty)")
    if n.attr("directions") and any(n.attr("directions")):
        n.attrs["scan_input_directions"] = list(n.attr("directions"))
    ins = [_tensor(n, n.inputs[i]) for i in range(1, len(n.inputs))]
    states, xs = ins[: len(ins) - k], ins[len(ins) - k :]
    batch = (states or xs)[0].shape[0]
    per = [_scan(n, [s[b] for s in states], [x[b] for x in xs]) for b in range(batch)]
    return [fw.stack([p[j] for p in per], axis=0) for j in range(len(per[0]))]
