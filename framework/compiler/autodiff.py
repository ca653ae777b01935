"""Reverse mode on the loop IR: the backward of a fusion group is another fusion group.

:func:`vjp` takes a forward :class:`ir.Program` and returns one whose inputs are the forward
inputs followed by one gradient per forward output, and whose outputs are the gradients of
the forward inputs. A per-row value used along the row gets a ``sum`` reduction of its
adjoint (the transpose of a broadcast); a reduction passes its adjoint back to every element
(the transpose of a reduction). Gradients of per-column inputs (weights) come out per
element; the caller sums them over the rows.
"""

from __future__ import annotations

import math

import numpy as np

from . import ir
from .trace import NotFusible

_NO_GRAD = {"floor", "ceil", "sign", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not"}


def vjp(prog: ir.Program, wanted: list[bool]) -> tuple[ir.Program, list[int]]:
    """The backward program of ``prog`` for the inputs flagged in ``wanted``.

    Returns the program and, for each of its outputs, the forward input it is the gradient of.
    """
    b = ir.Builder()
    # Rebuild the forward graph in the new builder (so forward and backward nodes share CSE).
    new: dict[int, ir.Node] = {}
    for n in ir.live_nodes(prog.outputs):
        if n.op == "input":
            new[n.id] = b.input(n.attr, n.dtype, n.row, n.col)
        elif n.op == "const":
            new[n.id] = b.const(n.attr, n.dtype)
        else:
            a = [new[x.id] for x in n.args]
            if n.op == "reduce":
                new[n.id] = b.reduce(n.attr, a[0])
            elif n.op == "where":
                new[n.id] = b.where(*a)
            elif n.op == "cast":
                new[n.id] = b.cast(a[0], n.dtype)
            elif len(a) == 1:
                new[n.id] = b.unary(n.op, a[0], n.dtype)
            else:
                new[n.id] = b.binary(n.op, a[0], a[1], n.dtype)
    fwd = [new[o.id] for o in prog.outputs]
    k0 = len(prog.inputs)
    adj: dict[int, ir.Node] = {}
    for i, o in enumerate(fwd):
        oc = prog.out_col[i]
        g = b.input(k0 + i, o.dtype, True, oc)  # an output gradient is a full buffer of its kind
        if oc and not o.col:
            g = b.reduce("sum", g)
        adj[o.id] = g if o.id not in adj else b.binary("add", adj[o.id], g)

    def push(a: ir.Node, g: ir.Node) -> None:
        if a.dtype not in ir.FLOATS or a.op == "const":
            return
        if g.dtype != a.dtype:
            g = b.cast(g, a.dtype)
        if g.col and not a.col:
            g = b.reduce("sum", g)
        # NOTE: a row-independent value (a weight) collects per-row partial adjoints; they
        # stay per row (each chain-rule factor is elementwise) and are summed by the caller.
        adj[a.id] = g if a.id not in adj else b.binary("add", adj[a.id], g)

    order = ir.live_nodes(fwd)
    for z in reversed(order):
        g = adj.get(z.id)
        if g is None or z.op in ("input", "const") or z.op in _NO_GRAD:
            continue
        args = z.args
        c = lambda v, d=z.dtype: b.const(v, d)  # noqa: E731
        op = z.op
        if op == "add":
            push(args[0], g)
            push(args[1], g)
        elif op == "sub":
            push(args[0], g)
            push(args[1], b.unary("neg", g))
        elif op == "mul":
            push(args[0], b.binary("mul", g, args[1]))
            push(args[1], b.binary("mul", g, args[0]))
        elif op == "div":
            push(args[0], b.binary("div", g, args[1]))
            push(args[1], b.unary("neg", b.binary("div", b.binary("mul", g, z), args[1])))
        elif op == "neg":
            push(args[0], b.unary("neg", g))
        elif op == "exp":
            push(args[0], b.binary("mul", g, z))
        elif op == "log":
            push(args[0], b.binary("div", g, args[0]))
        elif op == "sqrt":
            push(args[0], b.binary("div", b.binary("mul", g, c(0.5)), z))
        elif op == "rsqrt":
            z3 = b.binary("mul", b.binary("mul", z, z), z)
            push(args[0], b.binary("mul", b.binary("mul", g, c(-0.5)), z3))
        elif op == "tanh":
            push(args[0], b.binary("mul", g, b.binary("sub", c(1.0), b.binary("mul", z, z))))
        elif op == "sin":
            push(args[0], b.binary("mul", g, b.unary("cos", args[0])))
        elif op == "cos":
            push(args[0], b.unary("neg", b.binary("mul", g, b.unary("sin", args[0]))))
        elif op == "erf":
            a = args[0]
            d = b.unary("exp", b.unary("neg", b.binary("mul", a, a)))
            push(a, b.binary("mul", g, b.binary("mul", d, c(2.0 / math.sqrt(math.pi)))))
        elif op == "abs":
            push(args[0], b.binary("mul", g, b.unary("sign", args[0])))
        elif op == "pow":
            x, y = args
            push(x, b.binary("mul", g, b.binary("mul", y, b.binary("pow", x, b.binary("sub", y, c(1.0))))))
            if y.op != "const":
                push(y, b.binary("mul", g, b.binary("mul", z, b.unary("log", x))))
        elif op in ("maximum", "minimum"):
            x, y = args
            pick = b.binary("ge" if op == "maximum" else "le", x, y, ir.BOOL)
            zero = c(0.0)
            push(x, b.where(pick, g, zero))
            push(y, b.where(pick, zero, g))
        elif op == "where":
            cond, x, y = args
            zero = c(0.0)
            push(x, b.where(cond, g, zero))
            push(y, b.where(cond, zero, g))
        elif op == "cast":
            push(args[0], g)
        elif op == "reduce":
            a = args[0]
            if z.attr == "sum":
                push(a, g)
            else:
                push(a, b.where(b.binary("eq", a, z, ir.BOOL), g, c(0.0)))
        else:
            raise NotFusible(f"no gradient rule for '{op}' in the loop IR")
    outs, which = [], []
    for k, (dtype, row, col) in enumerate(prog.inputs):
        if not wanted[k]:
            continue
        node = b.input(k, dtype, row, col)
        g = adj.get(node.id)
        if g is None:
            g = b.const(0.0, dtype)
            g = b.binary("mul", g, node)  # a zero of the input's kind
        if not row and not col:
            raise NotFusible("the gradient of a scalar input needs a sum over rows")
        outs.append(g)
        which.append(k)
    inputs = list(prog.inputs) + [(np.dtype(o.dtype), True, c) for o, c in zip(prog.outputs, prog.out_col)]
    out_col = [prog.inputs[k][2] for k in which]
    return ir.Program(prog.name + "_grad", prog.n, inputs, outs, out_col, b.nodes), which
