"""Tracing ``fw.static.nn.cond`` and ``while_loop`` into the ``cf`` dialect, and the gradients
of ``cf.cond`` and ``cf.while``.

A branch (or a loop's cond and body) is traced into a region: what it reads from the
enclosing scope is captured (the region reads the outer value; nothing is passed). The cf op
is then ONE node on the tracing tape whose inputs are the captured tensors (what the branch
recorded on the tape is never reached from the outputs). A branch that reads a detached
tensor reads it through ``op.reshape {stop_gradient = true}`` (the tracer adds it), where the
gradient's replay stops.

Its gradient rule (run by :func:`framework.jit.autodiff.trace_backward` in recording mode,
like every OpDef's rule) emits a ``cf.cond`` on the same predicate whose branches are the
vector-Jacobian products of the forward branches: each grad branch replays its forward
region's ops through ``ops.base.apply`` with autograd on, from leaves standing for the
captured values, and records ``autograd.grad`` of the replayed outputs, i.e. the OpDefs'
gradient rules, exactly as the eager tape would run them. The forward branch is recomputed in
the backward program (its intermediates are not saved across the cond).

``cf.while``'s gradient is built from ``cf.while`` ops by recomputation (no per-iteration
state is saved: the IR has no tensor arrays): the trip count, then for each iteration from the
last the state recomputed from the initial values and the VJP of one body application; the
backward runs the body O(n²) times for n iterations (:func:`_while_grad`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._src import autograd
from .._src.opdef import OpDef
from .._src.ops import base
from .._src.tensor import Tensor
from ..ir import Block, Operation, Region, Value, lookup
from ..ir.control import draws_at_run
from ..ir.core import free_values
from ..static.nn import RECORDERS, check_loop_values, check_predicate, describe, flatten, unflatten
from .trace import Tracer, TracingError, _Symbolic, _user_line


def _traced(tr: Any, t: Any) -> bool:
    return isinstance(t, Tensor) and isinstance(t._block, _Symbolic) and t._block.tracer is tr


def _float(t: Tensor) -> bool:
    return t.dtype.kind == "f" or t.dtype.name == "bfloat16"


def _branch(tr: Any, fn: Callable[[], Any] | None, label: str) -> tuple[Block, list[Tensor], Any]:
    # NOTE: autograd stays as it is: a view made inside the branch keeps its graph, so a
    # detached capture is told apart from it (the tracer marks the former, see value_of)
    with tr.region(f"{label} of a cond"):
        blk = tr.block
        res = fn() if fn is not None else None
        flat, struct = flatten(f"cond: {label}", res)
        blk.append("cf.yield", [tr.value_of(t, "cond") for t in flat], [])
    return blk, flat, struct


def _record(
    tr: Any,
    op: Operation,
    outs: list[Tensor],
    rule: OpDef,
    ctx: Any,
    env: dict[Value, Tensor] | None = None,
    loop_vars: Sequence[Tensor] = (),
) -> None:
    """Make ``op`` one node of the tracing tape over the tensors its regions capture (and a
    loop's initial values). ``env`` says which tensor stands for a value during a replay
    (a leaf, not the forward tensor of the same value, so the replay's gradient stops there)."""
    if not autograd.is_grad_enabled():
        return
    env = env or {}
    captured = free_values(op)
    ins = [env[v] if v in env else tr.tensor_of[v] for v in captured] + list(loop_vars)
    if not any(not t.stop_gradient and _float(t) for t in ins):
        return
    autograd.record(rule, ins, {}, outs, ctx=(op, captured, ctx))


def trace_cond(tr: Any, pred: Any, true_fn: Any, false_fn: Any) -> Any:
    """Record ``cond(pred, true_fn, false_fn)`` into ``tr``'s current block."""
    check_predicate("cond", pred)
    if not _traced(tr, pred):  # a Python bool or a concrete tensor: a Python branch, as eager
        take = bool(np.asarray(pred.numpy()).reshape(-1)[0]) if isinstance(pred, Tensor) else bool(pred)
        fn = true_fn if take else false_fn
        return None if fn is None else fn()
    outs, struct = _emit_cond(
        tr, pred, lambda: _branch(tr, true_fn, "true_fn"), lambda: _branch(tr, false_fn, "false_fn")
    )
    return unflatten(struct, outs)


def _emit_cond(
    tr: Any,
    pred: Tensor,
    then: Callable[[], Any],
    other: Callable[[], Any],
    env: dict[Value, Tensor] | None = None,
) -> tuple[list[Tensor], Any]:
    pv = tr.value_of(pred, "cond")
    b0, f0, s0 = then()
    b1, f1, s1 = other()
    if s0 != s1:
        raise TracingError(
            f"[cond] at {_user_line()}: true_fn and false_fn return different structures "
            f"({_shape_of(s0)} and {_shape_of(s1)}); both must return the same (a tensor, a tuple/list of "
            f"tensors, or None)"
        )
    for i, (a, b) in enumerate(zip(f0, f1)):
        if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
            raise TracingError(
                f"[cond] at {_user_line()}: output {i} is {describe(a)} from true_fn but {describe(b)} from "
                f"false_fn; in a program each output has one dtype and shape, so both branches must agree"
            )
    types = [tr._type(t.shape, t.dtype) for t in f0]
    op = tr.block.append_op(Operation("cf.cond", [pv], types, regions=[Region([b0]), Region([b1])]))
    outs = [tr._tensor(r, t.shape, t.dtype) for r, t in zip(op.results, f0)]
    _record(tr, op, outs, _COND_GRAD, pred, env)
    return outs, s0


def record_cond(tr: Any, op: Operation, outs: list[Tensor], pred: Tensor) -> None:
    """Make a ``cf.cond`` built elsewhere (converted Python control flow,
    :mod:`framework.jit.convert_ops`) one node of the tape, with ``cond``'s gradient."""
    _record(tr, op, outs, _COND_GRAD, pred)


def _shape_of(s: Any) -> str:
    if s is None:
        return "None"
    if s == "T":
        return "a tensor"
    kind, parts = s
    return f"{kind.__name__} of {len(parts)}"


def trace_while(
    tr: Any,
    cond: Callable[..., Any],
    body: Callable[..., Any],
    loop_vars: list[Tensor],
    env: dict[Value, Tensor] | None = None,
) -> list[Tensor]:
    """Record ``while_loop(cond, body, loop_vars)`` into ``tr``'s current block."""
    init = [tr.value_of(t, "while_loop") for t in loop_vars]
    types = [v.type for v in init]
    blocks = []
    for k, fn in enumerate((cond, body)):  # autograd as it is (see _branch)
        label = ("cond", "body")[k]
        with tr.region(f"the {label} of a while_loop"):
            blk = tr.block
            args = [tr._tensor(blk.add_argument(ty), t.shape, t.dtype) for ty, t in zip(types, loop_vars)]
            res = fn(*args)
            if k == 0:
                if not isinstance(res, Tensor):
                    raise TracingError(
                        f"[while_loop] at {_user_line()}: cond returned {type(res).__name__}; it must return "
                        f"a bool tensor of one element"
                    )
                check_predicate("while_loop", res)
                vals = [res]
            else:
                vals = check_loop_values(res, loop_vars, "body")
            blk.append("cf.yield", [tr.value_of(t, "while_loop") for t in vals], [])
        blocks.append(blk)
    op = tr.block.append_op(Operation("cf.while", init, list(types), regions=[Region([b]) for b in blocks]))
    outs = [tr._tensor(r, t.shape, t.dtype) for r, t in zip(op.results, loop_vars)]
    _record(tr, op, outs, _WHILE_GRAD, tr, env, loop_vars)
    return outs


# -- gradients ------------------------------------------------------------------------------
def _replay(tr: Any, blk: Block, env: dict[Value, Tensor]) -> list[Tensor]:
    """Re-record ``blk``'s ops into ``tr``'s current block through the dispatcher (autograd as
    set by the caller); ``env`` maps values to the tensors standing for them. Returns the
    tensors of what the block yields."""

    def get(v: Value) -> Tensor:
        t = env.get(v)
        return t if t is not None else tr.tensor_of[v]

    for o in blk.ops:
        ins = [get(v) for v in o.operands]
        if o.name == "cf.yield":
            return ins
        if o.name == "cf.cond":
            r0, r1 = (r.blocks[0] for r in o.regions)
            res, _ = _emit_cond(
                tr,
                ins[0],
                lambda r0=r0: _replayed_branch(tr, r0, env, "true_fn"),
                lambda r1=r1: _replayed_branch(tr, r1, env, "false_fn"),
                env,
            )
        elif o.name == "cf.while":
            regions = [r.blocks[0] for r in o.regions]
            res = trace_while(
                tr, _replayer(tr, regions[0], env, 0), _replayer(tr, regions[1], env, 1), ins, env
            )
        elif draws_at_run(o):
            raise TracingError(
                "[to_static] the gradient of a cond whose branch (or a while_loop whose body) draws random "
                "numbers (dropout inside fw.static.nn.cond / while_loop) is not available: the backward "
                "recomputes the branch and would draw a different mask. Draw the mask outside and pass it in"
            )
        else:
            d = lookup(o.name).opdef
            if d is None:
                raise TracingError(
                    f"[to_static] the gradient of a cond cannot replay '{o.name}' inside a branch"
                )
            if d.kind == "view" and o.attrs.get("stop_gradient"):  # a detached capture
                res = [ins[0].detach()]
            elif d.kind == "view":
                res = [ins[0].reshape(tuple(o.attrs["shape"]))]
            else:
                res = base.apply(d, ins, dict(o.attrs))
        env.update(zip(o.results, res))
    raise TracingError("[to_static] a region ends without cf.yield")


def _replayer(tr: Any, blk: Block, env: dict[Value, Tensor], k: int) -> Callable[..., Any]:
    """A while_loop cond (``k == 0``) or body that replays ``blk``."""

    def run(*args: Tensor) -> Any:
        env.update(zip(blk.args, args))
        out = _replay(tr, blk, env)
        return out[0] if k == 0 else out

    return run


def _replayed_branch(
    tr: Any, blk: Block, env: dict[Value, Tensor], label: str
) -> tuple[Block, list[Tensor], Any]:
    with tr.region(f"{label} of a cond"):
        nb = tr.block
        flat = _replay(tr, blk, env)
        nb.append("cf.yield", [tr.value_of(t, "cond") for t in flat], [])
    return nb, flat, (list, tuple("T" for _ in flat))


def _cond_grad(node: autograd.Node, gouts: list[Tensor | None]) -> list[Tensor | None]:
    op, captured, pred = node.ctx
    ins = node.inputs
    assert ins is not None
    tr = pred._block.tracer
    need = [i for i, t in enumerate(ins) if not t.stop_gradient and _float(t)]
    res: list[Tensor | None] = [None] * len(ins)
    if not need or all(g is None for g in gouts):
        return res

    def grad_branch(k: int, label: str) -> tuple[Block, list[Tensor], Any]:
        with tr.region(f"the gradient of {label} of a cond"):
            blk = tr.block
            env: dict[Value, Tensor] = {}
            for i, v in enumerate(captured):
                leaf = tr._tensor(v, ins[i].shape, ins[i].dtype)
                leaf.stop_gradient = i not in need
                env[v] = leaf
            with autograd.enable_grad():
                outs = _replay(tr, op.regions[k].blocks[0], env)
            pairs = [(o, g) for o, g in zip(outs, gouts) if g is not None and not o.stop_gradient]
            leaves = [env[captured[i]] for i in need]
            grads = (
                autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs], allow_unused=True)
                if pairs
                else [None] * len(leaves)
            )
            flat = []
            for leaf, g in zip(leaves, grads):
                if g is None:
                    g = base.full_tensor(tuple(leaf.shape), 0, leaf.dtype, tr.device)
                elif tuple(g.shape) != tuple(leaf.shape):
                    g = g.reshape(leaf.shape)
                flat.append(g)
            blk.append("cf.yield", [tr.value_of(g, "cond grad") for g in flat], [])
        return blk, flat, (list, tuple("T" for _ in flat))

    with autograd.no_grad():
        grads, _ = _emit_cond(tr, pred, lambda: grad_branch(0, "true_fn"), lambda: grad_branch(1, "false_fn"))
    for i, g in zip(need, grads):
        res[i] = g
    return res


def _leaf(tr: Any, t: Tensor, grad: bool) -> Tensor:
    """A tensor on ``t``'s value with no graph: where a replay's gradient stops."""
    leaf = tr._tensor(tr.value_of(t, "gradient"), t.shape, t.dtype)
    leaf.stop_gradient = not grad
    return leaf


def _zeros(tr: Any, t: Tensor) -> Tensor:
    return base.full_tensor(tuple(t.shape), 0, t.dtype, tr.device)


def _while_grad(node: autograd.Node, gouts: list[Tensor | None]) -> list[Tensor | None]:
    """The gradient of ``cf.while`` by recomputation, itself made of ``cf.while`` ops:

    1. the trip count ``n``: the loop run again with a counter;
    2. ``for j = n-1 .. 0``: the state after ``j`` iterations, recomputed from the initial
       values (an inner loop), then the VJP of one body application at that state (its ops
       replayed with autograd on, as for cond): the loop values' gradients flow back one
       iteration and the captured values' gradients add up.

    No per-iteration state is saved (the IR has no tensor arrays): the backward runs the body
    O(n²) times."""
    op, captured, tr = node.ctx
    ins = node.inputs
    assert ins is not None
    nc = len(captured)
    init = list(ins[nc:])
    res: list[Tensor | None] = [None] * len(ins)
    fl = [i for i, t in enumerate(init) if _float(t)]
    need_c = [i for i in range(nc) if not ins[i].stop_gradient and _float(ins[i])]
    need_i = [i for i in fl if not init[i].stop_gradient]
    if not (need_c or need_i) or all(gouts[i] is None for i in fl):
        return res
    cond_blk, body_blk = (r.blocks[0] for r in op.regions)
    outer = {v: ins[k] for k, v in enumerate(captured)}

    def step(vals: Sequence[Tensor], env_extra: dict[Value, Tensor] | None = None) -> list[Tensor]:
        env = dict(outer)
        env.update(env_extra or {})
        env.update(zip(body_blk.args, vals))
        return _replay(tr, body_blk, env)

    def holds(vals: Sequence[Tensor]) -> Tensor:
        env = dict(outer)
        env.update(zip(cond_blk.args, vals))
        return _replay(tr, cond_blk, env)[0]

    def counted(*vals: Tensor) -> list[Tensor]:
        return [*step(vals[:-1]), vals[-1] + 1]

    zero = base.full_tensor((), 0, np.dtype("int64"), tr.device)
    with autograd.no_grad():
        n = trace_while(tr, lambda *v: holds(v[:-1]), counted, [*init, zero])[-1]
        ng = len(fl)

        def back(j: Tensor, *acc: Tensor) -> list[Tensor]:
            gv, gc = acc[:ng], acc[ng:]
            state = trace_while(tr, lambda *v: v[-1] < j, counted, [*init, zero])[:-1]
            leaves = [_leaf(tr, t, i in fl) for i, t in enumerate(state)]
            cleaves = {captured[i]: _leaf(tr, ins[i], True) for i in need_c}
            with autograd.enable_grad():
                outs = step(leaves, cleaves)
            pairs = [(outs[i], g) for i, g in zip(fl, gv) if not outs[i].stop_gradient]
            wrt = [leaves[i] for i in fl] + [cleaves[captured[i]] for i in need_c]
            grads = (
                autograd.grad([o for o, _ in pairs], wrt, [g for _, g in pairs], allow_unused=True)
                if pairs
                else [None] * len(wrt)
            )
            new = [_zeros(tr, w) if g is None else g.reshape(w.shape) for g, w in zip(grads, wrt)]
            return [j - 1, *new[:ng], *(a + b for a, b in zip(gc, new[ng:]))]

        g0 = [gouts[i] if gouts[i] is not None else _zeros(tr, init[i]) for i in fl]
        gc0 = [_zeros(tr, ins[i]) for i in need_c]
        final = trace_while(tr, lambda j, *_: j >= 0, back, [n - 1, *g0, *gc0])
    for k, i in enumerate(fl):
        if i in need_i:
            res[nc + i] = final[1 + k]
    for k, i in enumerate(need_c):
        res[i] = final[1 + ng + k]
    return res


_COND_GRAD = OpDef(
    "cf.cond", "program", None, _cond_grad, False, None, "the gradient of cf.cond: a cf.cond of VJPs"
)
_WHILE_GRAD = OpDef(
    "cf.while", "program", None, _while_grad, False, None, "the gradient of cf.while: loops of VJPs"
)

RECORDERS[Tracer] = (trace_cond, trace_while)
