"""Training under ``to_static``: the backward program and the one autograd node that runs it.

Tracing for training runs the user's function with autograd on *inside* the trace, then
``autograd.grad`` of the traced outputs (seeded with one new program input per output,
the incoming gradients) with respect to the inputs and parameters that need a gradient.
The gradient rules therefore run in recording mode exactly as eager's tape would run them
(a primitive's ``grad``, a composite's explicit rule or ``_grad_by_decomposition``): the
program and the eager tape cannot disagree. The result is one *joint* program

    (inputs..., grad_outputs...) -> (outputs..., grads...)

which :func:`split` cuts at the first backward op into

- the forward program ``(inputs...) -> (outputs..., saved...)``, where *saved* are the
  forward values the backward reads (activations), and
- the backward program ``(inputs..., saved..., grad_outputs...) -> (grads...)``; the
  parameters and constants it reads are re-declared in it (shared with the Layer, so
  they are read when it runs, like the eager tape's references).

A call records ONE :class:`~framework._src.autograd.Node` (op ``to_static.<name>``) whose
gradient rule runs the backward program through the executor; ``loss.backward()`` reaches
the parameters through it and fills their ``.grad`` as eager does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from adapter_api import OpArgumentError

from .._src import autograd, env
from .._src.opdef import OpDef
from .._src.ops import base
from .._src.tensor import Tensor
from ..ir import Executor, Operation, Program, TensorType, Value, verify
from ..ir.core import clone_op
from ..ir.dialects import lookup
from ..ir.passes.fusion import type_bytes

_SHARED = ("builtin.parameter", "builtin.constant")


def trace_backward(
    tr: Any, outs: Sequence[Tensor], args: Sequence[Tensor]
) -> tuple[list[int], list[tuple[str, Any]], list[Value]]:
    """Inside a trace with autograd on: record the gradient rules of ``outs`` into ``tr``'s
    program. Returns the outputs that take a gradient (their indices), what each gradient
    is for (``("input", k)`` or ``("param", name)``) and the gradient values."""
    diff = [
        k
        for k, o in enumerate(outs)
        if not o.stop_gradient and (o.dtype.kind == "f" or o.dtype.name == "bfloat16")
    ]
    wanted: list[tuple[str, Any]] = [("input", k) for k, a in enumerate(args) if not a.stop_gradient]
    leaves: list[Tensor] = [args[k] for _, k in wanted]
    for name, p in tr.param_tensors.items():
        if not p.stop_gradient and (p.dtype.kind == "f" or p.dtype.name == "bfloat16"):
            wanted.append(("param", name))
            leaves.append(p)
    if not diff or not leaves:
        return [], [], []
    gouts = [tr.input(outs[k].shape, outs[k].dtype) for k in diff]
    grads = autograd.grad([outs[k] for k in diff], leaves, gouts, allow_unused=True)
    kept: list[tuple[str, Any]] = []
    values: list[Value] = []
    for w, leaf, g in zip(wanted, leaves, grads):
        if g is None:
            continue
        if tuple(g.shape) != tuple(leaf.shape):
            g = g.reshape(leaf.shape)
        kept.append(w)
        values.append(tr.value_of(g, "grad"))
    return diff, kept, values


def split(
    joint: Program, n_inputs: int, n_fwd_ops: int, n_outs: int, recompute: bool = False
) -> tuple[Program, Program, int]:
    """Cut ``joint`` (see the module docstring) into the forward and backward programs;
    returns them and the number of saved values. ``recompute``: the backward computes short
    element-wise chains again rather than reading them (:func:`rematerialize`)."""
    ops = joint.block.ops
    ret = joint.return_op
    assert ret is not None
    fwd_ops, bwd_ops = ops[:n_fwd_ops], ops[n_fwd_ops:-1]
    in_fwd = set(map(id, fwd_ops))
    saved: list[Value] = []
    shared: list[Operation] = []
    seen: set[int] = set()

    def read(v: Value) -> None:
        d = v.defining_op
        if d is None or id(d) not in in_fwd or id(v) in seen:
            return
        seen.add(id(v))
        if d.name in _SHARED:
            shared.append(d)
        else:
            saved.append(v)

    for op in bwd_ops:
        for o in (op, *op.walk()):  # a cf op's regions read forward values too (captured)
            for v in o.operands:
                read(v)
    for v in ret.operands[n_outs:]:
        read(v)
    # a value the backward tests for equality (max's gradient: x == max) must be the forward's
    # own bits: recomputed by another kernel it may differ in the last bit and match nothing
    pinned = {v for op in bwd_ops for o in (op, *op.walk()) if o.name in _EXACT for v in o.operands}
    saved, again = rematerialize(fwd_ops, saved, pinned) if recompute else (saved, [])
    for op in again:  # the parameters and constants recomputed values read
        for v in op.operands:
            d = v.defining_op
            if d is not None and d.name in _SHARED and d not in shared:
                shared.append(d)

    def copy(op: Operation, m: dict[Value, Value], into: Program) -> None:
        into.block.append_op(clone_op(op, m))  # regions deep-copied

    fwd = Program(joint.name)
    m: dict[Value, Value] = {a: fwd.block.add_argument(a.type) for a in joint.inputs[:n_inputs]}
    for op in fwd_ops:
        copy(op, m, fwd)
    fwd.block.append("builtin.return", [m[v] for v in ret.operands[:n_outs]] + [m[v] for v in saved], [])

    bwd = Program(joint.name + "_grad")
    mb: dict[Value, Value] = {a: bwd.block.add_argument(a.type) for a in joint.inputs[:n_inputs]}
    mb.update({v: bwd.block.add_argument(v.type) for v in saved})
    mb.update({a: bwd.block.add_argument(a.type) for a in joint.inputs[n_inputs:]})
    order = {id(op): i for i, op in enumerate(fwd_ops)}
    for op in sorted(shared, key=lambda o: order[id(o)]):
        copy(op, mb, bwd)
    for op in again:  # in forward order
        copy(op, mb, bwd)
    for op in bwd_ops:
        copy(op, mb, bwd)
    bwd.block.append("builtin.return", [mb[v] for v in ret.operands[n_outs:]], [])
    verify(fwd)
    verify(bwd)
    return fwd, bwd, len(saved)


#: a saved value is recomputed from at most this many forward ops
_REMAT_OPS = 8


def _recomputable(op: Operation) -> bool:
    """An op the backward may run again instead of reading its result: a view, or an
    element-wise, cast or broadcast op of the loop IR (deterministic, no regions)."""
    if op.regions or len(op.results) != 1 or not op.operands or not op.name.startswith("op."):
        return False
    d = lookup(op.name).opdef
    if d is None:
        return False
    return d.kind == "view" or (d.lower is not None and d.lower.role in ("expr", "cast", "pass"))


#: comparisons the backward makes against forward values: their operands are never recomputed
_EXACT = ("op.eq", "op.ne")


def rematerialize(
    fwd_ops: Sequence[Operation], saved: list[Value], pinned: set[Value] | frozenset[Value] = frozenset()
) -> tuple[list[Value], list[Operation]]:
    """Which forward values the backward reads from memory, and which it computes again.

    A saved value made by a short chain of element-wise ops (:func:`_recomputable`) from
    values the backward has anyway (other saved values, the inputs, parameters and
    constants) is recomputed when the values the chain needs besides those take fewer bytes
    than it: SwiGLU's backward read silu's exp(-x), 1 + exp(-x), silu and its product with
    ``up`` from the forward, where ``gate`` and ``up`` suffice. The forward writes fewer
    tensors and the recomputed ops join the backward's fusion groups. Latest values first, so
    a value another one was recomputed from may be recomputed in turn.
    ``OARLOCK_REMAT=0`` saves every value the backward reads; ``pinned`` values are always
    read. Returns the saved values (in forward order) and the ops to recompute (in forward order)."""
    if not env.flag("OARLOCK_REMAT", True) or not saved:
        return saved, []
    order = {id(op): i for i, op in enumerate(fwd_ops)}
    keep: dict[Value, None] = dict.fromkeys(saved)
    again: set[int] = set()

    def have(u: Value) -> bool:
        d = u.defining_op
        return u in keep or d is None or id(d) not in order or d.name in _SHARED or id(d) in again

    def chain(v: Value) -> tuple[list[Operation], list[Value]] | None:
        ops: dict[int, Operation] = {}
        need: dict[Value, None] = {}
        stack = [v]
        while stack:
            u = stack.pop()
            d = u.defining_op
            assert d is not None
            if id(d) in ops:
                continue
            if not _recomputable(d) or len(ops) >= _REMAT_OPS:
                return None
            ops[id(d)] = d
            for w in d.operands:
                if have(w):
                    continue
                wd = w.defining_op
                if wd is not None and _recomputable(wd) and len(ops) < _REMAT_OPS:
                    stack.append(w)
                else:
                    need[w] = None
        return list(ops.values()), list(need)

    for v in sorted(saved, key=lambda v: -order[id(v.defining_op)]):  # type: ignore[arg-type]
        if not isinstance(v.type, TensorType) or v in pinned:
            continue
        found = chain(v)
        if found is None:
            continue
        ops, need = found
        if any(not isinstance(w.type, TensorType) for w in need):
            continue
        if sum(type_bytes(w.type) for w in need) >= type_bytes(v.type):  # type: ignore[arg-type]
            continue
        del keep[v]
        keep.update(dict.fromkeys(need))
        again.update(id(op) for op in ops)
    saved = sorted(keep, key=lambda v: order.get(id(v.defining_op), -1))
    return saved, [op for op in fwd_ops if id(op) in again]


@dataclass
class Backward:
    """What a training call needs: the backward program, its executor and the node's op."""

    program: Program
    executor: Executor
    n_outs: int
    n_saved: int
    diff: list[int]  # the outputs whose gradient the backward program takes, in order
    wanted: list[tuple[str, Any]]  # ("input", k) or ("param", name): what each gradient is for
    opdef: OpDef

    def record(
        self, inputs: Sequence[Tensor], params: dict[str, Tensor], outs: list[Tensor], saved: list[Tensor]
    ) -> list[Tensor]:
        """Record the call as one autograd node over the tensors the gradients are for;
        returns the outputs to hand back (an input or parameter returned as it is becomes a
        new tensor on the same storage, so the node never replaces its own input's graph)."""
        targets = [inputs[k] if kind == "input" else params[k] for kind, k in self.wanted]
        known = {id(t) for t in (*inputs, *params.values())}
        outs = [o._reshaped(o.shape) if id(o) in known else o for o in outs]
        metas = [(tuple(o.shape), o.dtype) for o in outs]
        autograd.record(self.opdef, targets, {}, outs, ctx=(list(inputs), saved, metas))
        return outs


def make_backward(
    name: str,
    program: Program,
    executor: Executor,
    n_outs: int,
    n_saved: int,
    diff: list[int],
    wanted: list[tuple[str, Any]],
) -> Backward:
    bw: Backward

    def rule(node: autograd.Node, gouts: list[Tensor | None]) -> list[Tensor | None]:
        if autograd.is_grad_enabled():
            raise OpArgumentError(
                f"[to_static] {name}: a gradient of the gradient (create_graph=True) through a "
                f"static program is not available; run the function eagerly for higher-order "
                f"gradients"
            )
        inputs, saved, metas = node.ctx
        gs = []
        for k in bw.diff:
            g = gouts[k]
            if g is None:  # an output the loss does not read
                g = base.fill_buffer(metas[k][0], 0, metas[k][1], bw.executor.device)
            gs.append(g)
        return bw.executor(*inputs, *saved, *gs)

    opdef = OpDef(
        f"to_static.{name}",
        "program",
        None,
        rule,
        False,
        None,
        f"the backward program of to_static function {name}",
    )
    bw = Backward(program, executor, n_outs, n_saved, diff, wanted, opdef)
    return bw
