"""The loop IR: a per-row program of elementwise expressions and reductions along the row.

A fusion group works on a ``(rows, n)`` view of its main input. Every value has a *kind*, two
flags: ``row`` (it differs from row to row) and ``col`` (it differs along the row). The full
input is ``(row, col)``, a weight or bias vector is ``(-, col)``, a per-row statistic such as a
mean is ``(row, -)``, a scalar constant is ``(-, -)``. Broadcasting is implicit: a value is read
at the index its kind says, so ``x * w`` needs no expand.

A :class:`Node` is hash-consed by its :class:`Builder` (equal expressions are one node, so
common subexpressions are shared). A ``reduce`` node turns a ``col`` expression into a per-row
scalar; :func:`schedule` splits a program into loops over the row by reduction depth:

    rms_norm:  loop 1: acc = sum(x*x)         -> r = rsqrt(acc/n + eps)   (row scope)
               loop 2: out[j] = x[j] * r * w[j]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from .._src.opdef import folds_to
from .._src.ops.base import OPS, Lowering

BOOL = np.dtype(np.bool_)
FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
#: bfloat16: a program's groups read and write it too (an AMP program's values between its
#: products), computed in the emitter's half type and rounded when stored. NOTE: not float16:
#: computed wide, a group gives finite values where eager's float16 ops overflow or underflow
#: (Adam's epsilon 1e-8 is 0 in float16: eager's update is 0/0 = NaN, the group's is not), and
#: a program must update as eager does (tests/test_optim_fused.py); bfloat16 has float32's range
HALVES = (np.dtype(ml_dtypes.bfloat16),)


def lowering(op: str) -> Lowering:
    """The loop-IR lowering an op's definition gives (``ops.base.Lowering``)."""
    d = OPS.get(op)
    if d is None or d.lower is None:
        raise KeyError(f"[compiler] op '{op}' has no loop-IR lowering in its OpDef")
    return d.lower


class Node:
    """One value of a fusion group. ``op`` is ``input`` (attr: input index), ``take`` (an
    input read at a rotated column, attr ``(input, shift, n)``: :meth:`Builder.take`),
    ``const`` (attr: value), ``cast``, ``reduce`` (attr: ``sum``/``max``/``min``) or the name
    of an op whose OpDef lowers to an element-wise expression (:func:`lowering`)."""

    __slots__ = ("op", "args", "dtype", "row", "col", "attr", "id")

    def __init__(
        self, op: str, args: tuple[Node, ...], dtype: np.dtype, row: bool, col: bool, attr: Any, id: int
    ):
        self.op, self.args, self.dtype, self.row, self.col, self.attr, self.id = (
            op,
            args,
            dtype,
            row,
            col,
            attr,
            id,
        )

    def __repr__(self) -> str:
        kind = ("r" if self.row else "-") + ("c" if self.col else "-")
        args = ", ".join(f"v{a.id}" for a in self.args)
        attr = "" if self.attr is None else f"[{self.attr}]"
        return f"v{self.id}:{self.dtype}:{kind} = {self.op}{attr}({args})"


class Builder:
    """Makes nodes, sharing equal ones and folding a few identities."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self._memo: dict[tuple[Any, ...], Node] = {}

    def _make(
        self, op: str, args: tuple[Node, ...], dtype: np.dtype, row: bool, col: bool, attr: Any = None
    ) -> Node:
        key = (op, tuple(a.id for a in args), dtype.str, row, col, _hashable(attr))
        n = self._memo.get(key)
        if n is None:
            n = self._memo[key] = Node(op, args, dtype, row, col, attr, len(self.nodes))
            self.nodes.append(n)
        return n

    def input(self, index: int, dtype: np.dtype, row: bool, col: bool) -> Node:
        return self._make("input", (), np.dtype(dtype), row, col, index)

    def const(self, value: Any, dtype: np.dtype) -> Node:
        dtype = np.dtype(dtype)
        if dtype == BOOL:
            v: Any = bool(value)
        elif dtype.kind in "iu":
            v = int(value)  # exact: an int64 past 2**53 stays itself
        else:
            v = float(np.asarray(value, dtype).item())
        return self._make("const", (), dtype, False, False, v)

    def unary(self, op: str, a: Node, dtype: np.dtype | None = None) -> Node:
        return self._make(op, (a,), np.dtype(dtype or a.dtype), a.row, a.col)

    def binary(self, op: str, a: Node, b: Node, dtype: np.dtype | None = None) -> Node:
        d = OPS.get(op)
        if d is not None and d.identity is not None and a.dtype == b.dtype:
            # x * 1, x - 0.0, x + (-0.0): the IR's exactness rule (opdef.folds_to), so
            # x + 0.0 stays (it turns -0.0 into +0.0)
            if b.op == "const" and folds_to(d, b.attr, a.dtype, side=1):
                return a
            if a.op == "const" and folds_to(d, a.attr, b.dtype, side=0):
                return b
        if op == "div" and a.col and not b.col and (dtype or a.dtype) in FLOATS and _reduced(b):
            # x / s along a row, s a row's statistic (softmax's sum): one division per row and
            # a multiply per element, as torch's softmax does (within 1.5 ulp of x / s; a
            # division costs 5-10x a multiply in the SIMD units and bounded softmax's last pass)
            return self.binary("mul", a, self.binary("div", self.const(1.0, b.dtype), b), dtype)
        return self._make(op, (a, b), np.dtype(dtype or a.dtype), a.row or b.row, a.col or b.col)

    def expr(self, op: str, args: tuple[Node, ...] | list[Node], dtype: np.dtype) -> Node:
        """An element-wise op of the OpDef table on ``args`` (any number of them)."""
        if len(args) == 1:
            return self.unary(op, args[0], dtype)
        if len(args) == 2:
            return self.binary(op, args[0], args[1], dtype)
        return self._make(
            op, tuple(args), np.dtype(dtype), any(a.row for a in args), any(a.col for a in args)
        )

    def cast(self, a: Node, dtype: np.dtype) -> Node:
        dtype = np.dtype(dtype)
        return a if a.dtype == dtype else self._make("cast", (a,), dtype, a.row, a.col)

    def reduce(self, kind: str, a: Node) -> Node:
        """``kind``: ``sum``, ``prod``, ``max``, ``min`` (the value's dtype) or ``argmax``,
        ``argmin`` (the int64 index of the first extreme along the row; NaN counts as both)."""
        if not a.col:  # reducing a value that is constant along the row
            if kind in ("sum", "prod", "argmax", "argmin"):
                raise ValueError(f"{kind} of a row-constant value needs the row length")
            return a
        dtype = np.dtype(np.int64) if kind in ("argmax", "argmin") else a.dtype
        return self._make("reduce", (a,), dtype, a.row, False, kind)

    def take(self, a: Node, shift: int, n: int) -> Node:
        """``a`` read at column ``(j + shift) % n`` of its row (a gather along the row by a
        rotation: rotary's rotate-half). The rotation moves down to the loads: an input is
        read at the rotated column (a ``take`` node, attr ``(input, shift, n)``), an
        element-wise value is recomputed from its rotated operands, a per-row or scalar value
        is itself. Raises ValueError for a value that depends on its column otherwise (an
        element index, a random draw)."""
        shift %= n
        if not a.col or not shift:
            return a
        if a.op == "input":
            return self._make("take", (), a.dtype, a.row, True, (a.attr, shift, n))
        if a.op == "take":
            k, s0, _ = a.attr
            s = (s0 + shift) % n
            if not s:
                return self.input(k, a.dtype, a.row, True)
            return self._make("take", (), a.dtype, a.row, True, (k, s, n))
        if a.op in ("index", "arange", "philox", "rowsum"):
            raise ValueError(f"a gather along the row of a '{a.op}' value")
        return self._make(a.op, tuple(self.take(x, shift, n) for x in a.args), a.dtype, a.row, a.col, a.attr)

    def special(self, op: str, args: tuple[Node, ...], dtype: np.dtype, attr: Any) -> Node:
        """A value no OpDef lowers to: ``index`` (the element's flat index, int64),
        ``arange`` (attr ``(start, step)``) and ``philox`` (attr ``(seed, offset)``) of an index."""
        row = col = True
        return self._make(op, args, np.dtype(dtype), row, col, attr)


def _reduced(n: Node) -> bool:
    """Whether ``n`` is computed from a reduction along the row."""
    stack, seen = [n], set()
    while stack:
        m = stack.pop()
        if m.op == "reduce":
            return True
        if m.id not in seen:
            seen.add(m.id)
            stack.extend(m.args)
    return False


def _hashable(v: Any) -> Any:
    if isinstance(v, float):  # -0.0 and 0.0 are two constants; NaN is one
        return repr(v)
    return v


@dataclass
class Program:
    """A fusion group lowered to the loop IR.

    ``inputs[k]`` is ``(dtype, row, col)``; ``outputs[k]`` is a node, written for every element
    of the row when ``out_col[k]`` (a ``(rows, n)`` buffer), else once per row (``(rows,)``).
    ``n`` is the row length, or None when it is symbolic: the kernel then takes it as an
    ``int64_t n`` argument after ``rows`` (generated primitives: one binary for every shape).
    ``loads[k]``, when given, is the element index input ``k`` is read at (a C expression of
    ``r`` and ``j``: a broadcast or a reduction over leading axes); otherwise its kind says.
    """

    name: str
    n: int | None
    inputs: list[tuple[np.dtype, bool, bool]]
    outputs: list[Node]
    out_col: list[bool]
    nodes: list[Node] = field(default_factory=list)
    loads: dict[int, str] = field(default_factory=dict)

    def describe(self) -> str:
        ins = ", ".join(
            f"in{k}:{d}:{'r' if r else '-'}{'c' if c else '-'}" for k, (d, r, c) in enumerate(self.inputs)
        )
        body = "\n  ".join(repr(n) for n in live_nodes(self.outputs))
        outs = ", ".join(f"v{o.id}" for o in self.outputs)
        loads = "".join(f"; in{k} at [{e}]" for k, e in sorted(self.loads.items()))
        return f"program {self.name}(n={self.n}; {ins}{loads}) -> ({outs})\n  {body}"


def live_nodes(roots: list[Node]) -> list[Node]:
    """Every node the roots depend on, in topological (id) order."""
    seen: dict[int, Node] = {}
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n.id not in seen:
            seen[n.id] = n
            stack.extend(n.args)
    return [seen[i] for i in sorted(seen)]


def levels(nodes: list[Node]) -> dict[int, int]:
    """Reduction depth of each node: 0 for inputs; a reduce is one more than its argument."""
    lv: dict[int, int] = {}
    for n in nodes:
        d = max((lv[a.id] for a in n.args), default=0)
        lv[n.id] = d + 1 if n.op == "reduce" else d
    return lv


@dataclass
class Loop:
    """One pass along the row: the reductions it accumulates and the element outputs it stores."""

    reductions: list[Node]
    stores: list[tuple[int, Node]]


@dataclass
class Schedule:
    loops: list[Loop]
    row_stores: list[tuple[int, Node]]
    level: dict[int, int]


def schedule(prog: Program) -> Schedule:
    """Split ``prog`` into passes: loop k computes the reductions of depth k; the last loop
    stores the element outputs. Per-row outputs are stored after all loops."""
    nodes = live_nodes(prog.outputs)
    lv = levels(nodes)
    depth = max((lv[n.id] for n in nodes if n.op == "reduce"), default=0)
    loops = [Loop([n for n in nodes if n.op == "reduce" and lv[n.id] == k], []) for k in range(1, depth + 1)]
    for i, o in enumerate(prog.outputs):
        if prog.out_col[i]:  # loop k (0-based) may read every value of depth <= k
            if lv[o.id] == len(loops):
                loops.append(Loop([], []))
            loops[lv[o.id]].stores.append((i, o))
    row_stores = [(i, o) for i, o in enumerate(prog.outputs) if not prog.out_col[i]]
    return Schedule(loops, row_stores, lv)
