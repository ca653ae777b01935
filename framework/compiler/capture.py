"""Tracing: run a composite's decomposition (or gradient rule) on symbolic tensors and lower
the primitive graph it records to the loop IR, when it is a fusion group.

Symbolic tensors are ordinary :class:`Tensor` objects whose storage block is a :class:`_Sym`
holding an IR node, so reshape, detach and other storage-sharing views trace for free. The
``TRACER`` hook of ``ops.base.apply`` hands every primitive to :class:`_Tracer`.

A graph is a fusion group when every primitive is elementwise, a cast, an expand, a copy, a
``sum``/``max``/``min`` over the last axis or a ``gather`` along the row by a rotation of it
(a constant index: rotary's rotate-half), and every value fits one kind of
:mod:`framework.compiler.loop_ir` (full row, per-column vector, per-row scalar, scalar).
A program's group (``group=True``) may also read and write bfloat16 (an AMP program's
values between its products; ``loop_ir.HALVES``): computed in the emitter's wider type, a
cast to it rounded as eager's, every other value rounded once when stored.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._src import autograd
from .._src.ops import base
from .._src.tensor import Tensor
from . import loop_ir


class NotFusible(Exception):
    """The traced graph is not a fusion group (the reason is the message)."""


class _Sym:
    """Stands in for a storage block: carries the IR node of a symbolic tensor."""

    __slots__ = ("node",)

    def __init__(self, node: loop_ir.Node) -> None:
        self.node = node

    @property
    def handle(self) -> Any:
        raise NotFusible("a symbolic tensor's values were read during tracing")


#: A sum over every axis but the last, of a full-row value: the gradient of a weight. It may
#: only be an output; the kernel writes the per-row terms and the caller sums them over rows.
_ROWSUM = "rowsum"


class Geometry:
    """The ``(rows, n)`` view of a fusion group: which shapes are which kind."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        if not shape:
            raise NotFusible("a 0-d main input has no row")
        self.shape = shape
        self.lead = shape[:-1]
        self.n = shape[-1]
        self.rows = math.prod(self.lead)

    def kind_of_input(self, shape: tuple[int, ...]) -> tuple[bool, bool]:
        size = math.prod(shape)
        if (
            shape == self.shape
            or self.flat(shape)
            or (self.rows > 1 and shape and shape[-1] == self.n and size == self.rows * self.n)
        ):
            return True, True  # the same elements in the same order: (1024, 64) as (16, 64, 64)
        if size == 1:
            return False, False
        if shape and shape[-1] == self.n and size == self.n:
            return False, True
        if size == self.rows and (shape == self.lead or (shape and shape[-1] == 1)):
            return True, False
        raise NotFusible(f"input of shape {shape} fits no kind for rows of {self.shape}")

    def kind_or_load(self, shape: tuple[int, ...]) -> tuple[bool, bool, str | None]:
        """(row, col, index expression) of an input: its kind (no expression), else, where it
        broadcasts to the rows, the expression it is read at (:func:`broadcast_load`)."""
        try:
            return (*self.kind_of_input(shape), None)
        except NotFusible:
            return broadcast_load(shape, self.shape)

    def flat(self, shape: tuple[int, ...]) -> bool:
        """Whether ``shape`` is the one row of a flat view: ``(6, 5)`` under ``(30,)`` (a sum
        over every axis of a tensor is a reduction along the row of its flat view)."""
        return self.rows == 1 and len(shape) > 1 and math.prod(shape) == self.n

    def check(self, shape: tuple[int, ...], node: loop_ir.Node) -> None:
        """A value of ``shape`` may hold ``node``: its kind, or a broadcast of it (a per-row
        value expanded along the row keeps its kind; the kernel reads it where its kind says)."""
        if node.op == _ROWSUM:
            return
        size = math.prod(shape)
        full = (bool(shape) and shape[-1] == self.n and size == self.rows * self.n) or self.flat(shape)
        if node.row and node.col:
            ok = full
        elif node.col:
            ok = full or (bool(shape) and shape[-1] == self.n and size == self.n)
        elif node.row:
            ok = full or (size == self.rows and (shape == self.lead or (bool(shape) and shape[-1] == 1)))
        else:
            ok = True  # a scalar broadcasts to any shape
        if not ok:
            raise NotFusible(
                f"value of shape {shape} does not fit its kind ({node!r}) for rows of {self.shape}"
            )


class _Tracer:
    def __init__(
        self,
        geo: Geometry,
        b: loop_ir.Builder,
        kinds: list[tuple[np.dtype, bool, bool]],
        loads: dict[int, str],
        consts: list[Tensor] | None = None,
    ) -> None:
        self.geo = geo
        self.b = b
        self.keep: list[Tensor] = []
        #: the program's inputs (kind of each) and broadcast loads, grown by constants
        self.kinds, self.loads = kinds, loads
        #: concrete float tensors read as further inputs (None: a concrete tensor is not fusible)
        self.consts = consts
        self._const_nodes: dict[int, loop_ir.Node] = {}
        #: the floating dtypes a value may have (a program's group: float16/bfloat16 too)
        self.floats: tuple[np.dtype, ...] = loop_ir.FLOATS
        #: node id -> the shape (left-padded to the main's rank) a value read through a
        #: broadcast load holds, where that is not a kind: used at another shape (a reshape
        #: traces for free) it would be read at the wrong elements
        self.bshape: dict[int, tuple[int, ...]] = {}

    def padded(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return (1,) * (len(self.geo.shape) - len(shape)) + tuple(shape)

    def full(self, shape: tuple[int, ...]) -> bool:
        return bool(shape) and shape[-1] == self.geo.n and math.prod(shape) == self.geo.rows * self.geo.n

    def input(self, k: int, t: Tensor, broadcast: bool) -> loop_ir.Node:
        """Input ``k`` of the program, read as its kind or, with ``broadcast``, through an
        index expression (``Program.loads``)."""
        if broadcast:
            row, col, at = self.geo.kind_or_load(t.shape)
        else:
            row, col, at = (*self.geo.kind_of_input(t.shape), None)
        self.kinds.append((t.dtype, row, col))
        node = self.b.input(k, t.dtype, row, col)
        if at is not None:
            self.loads[k] = at
            self.bshape[node.id] = self.padded(t.shape)
        return node

    def use(self, t: Tensor, node: loop_ir.Node) -> loop_ir.Node:
        """``node`` as the value of ``t``: a value read through a broadcast load is only
        read at the shape it was made at, or expanded to the full rows."""
        want = self.bshape.get(node.id)
        if want is None:
            # NOTE: a reshape traces for free (the view keeps the node), so a value of a kind
            # may arrive at another shape: a per-channel ``(C,)`` input (read along the row)
            # reshaped to ``(1, C, 1, 1)`` under rows of ``(N, C, H, W)`` would be read at the
            # column ``w``, not the channel, wherever ``C == W``
            self.geo.check(tuple(t.shape), node)
        elif not self.full(t.shape) and self.padded(t.shape) != want:
            raise NotFusible(f"a broadcast value of shape {want} is used as {t.shape}")
        return node

    def place(self, node: loop_ir.Node, shape: tuple[int, ...], args: list[loop_ir.Node]) -> None:
        """Check that ``node`` may hold a value of ``shape``: its kind, or a broadcast of a
        value read through a load at that shape."""
        if any(a.id in self.bshape for a in args) or node.id in self.bshape:
            if self.full(shape):
                return
            p = self.padded(shape)
            if self.bshape.setdefault(node.id, p) != p:
                raise NotFusible(f"one value at two broadcast shapes, {self.bshape[node.id]} and {p}")
            return
        self.geo.check(shape, node)

    def sym(self, node: loop_ir.Node, shape: tuple[int, ...], dtype: np.dtype, device: Any) -> Tensor:
        t = Tensor._make(_Sym(node), 0, tuple(shape), np.dtype(dtype), device)  # type: ignore[arg-type]
        self.keep.append(t)
        return t

    def node(self, t: Tensor) -> loop_ir.Node:
        blk = t._block
        if isinstance(blk, _Sym):
            return self.use(t, blk.node)
        if t.numel() == 1 and t.dtype in (*self.floats, loop_ir.BOOL):
            return self.b.const(t.numpy().reshape(()).item(), t.dtype)
        if t.numel() == 1 and t.dtype.kind in "iu":
            return self.b.const(t.numpy().reshape(()).item(), np.float64)
        if self.consts is not None and t.dtype in loop_ir.FLOATS and t.numel() > 1:
            # a constant the traced function made (rotary's sign): it depends on shapes and
            # attributes only, so the kernel reads it as a further input, passed by the caller
            node = self._const_nodes.get(id(t))
            if node is None:
                node = self._const_nodes[id(t)] = self.input(len(self.kinds), t, True)
                self.consts.append(t)
            return self.use(t, node)
        raise NotFusible(f"a concrete tensor of shape {t.shape} ({t.dtype}) enters the graph")

    def __call__(self, op: base.OpDef, ins: list[Tensor], attrs: dict[str, Any]) -> list[Tensor]:
        if op.name == "full":  # zeros_like and friends: a constant of the program
            dtype = np.dtype(attrs["dtype"])
            if dtype not in (*self.floats, loop_ir.BOOL):
                raise NotFusible(f"'full' makes a {dtype} value")
            return [
                self.sym(self.b.const(attrs["value"], dtype), tuple(attrs["shape"]), dtype, attrs["device"])
            ]
        if op.kind == "composite" and (op.lower is None or op.lower.role != "expr"):
            # its decomposition, op by op (an element-wise one with role "expr", relu, is one value)
            assert op.decomposition is not None
            r = op.decomposition(*ins, **attrs)
            return [r] if isinstance(r, Tensor) else list(r)
        role = op.lower.role if op.lower is not None else None
        if role == "take":
            return [self._take(ins, attrs)]
        args = [self.node(t) for t in ins]
        metas = op.infer(ins, attrs) if op.infer is not None else None
        if metas is None or len(metas) != 1:
            raise NotFusible(f"primitive '{op.name}' is not part of a fusion group")
        shape, dtype = metas[0]
        dtype = np.dtype(dtype)
        name = op.name
        b = self.b
        if dtype not in (*self.floats, loop_ir.BOOL):
            raise NotFusible(f"'{name}' makes a {dtype} value")
        if role == "pass":
            node = args[0]
        elif role == "expr":
            node = b.expr(name, args, dtype)
        elif role == "cast":
            node = b.cast(args[0], dtype)
        elif (
            name == "sum"
            and ins[0].ndim >= 2
            and self.full(ins[0].shape)
            and args[0].row
            and args[0].col
            and tuple(sorted(attrs["axes"])) == tuple(range(ins[0].ndim - 1))
        ):
            node = b.unary(_ROWSUM, args[0])
        elif role == "reduce":
            x = ins[0]
            whole = self.geo.flat(x.shape) and sorted(attrs["axes"]) == list(range(x.ndim))
            if not whole and (tuple(attrs["axes"]) != (x.ndim - 1,) or x.shape[-1] != self.geo.n):
                raise NotFusible(f"'{name}' over axes {attrs['axes']} of {x.shape} is not along the row")
            if not args[0].col:
                raise NotFusible(f"'{name}' of a value constant along the row")
            node = b.reduce(name, args[0])
        else:
            raise NotFusible(f"primitive '{name}' is not elementwise or a row reduction")
        self.place(node, tuple(shape), args)
        return [self.sym(node, shape, dtype, ins[0].device)]

    def _take(self, ins: list[Tensor], attrs: dict[str, Any]) -> Tensor:
        """A gather along the row by a rotation of it, ``index[j] = (j + s) % n``, the index a
        concrete tensor (a constant of the program): the value read at the rotated column."""
        x, index = ins
        n = self.geo.n
        if attrs["axis"] != x.ndim - 1 or not x.shape or x.shape[-1] != n:
            raise NotFusible(f"'gather' over axis {attrs['axis']} of {x.shape} is not along the row")
        if isinstance(index._block, _Sym) or index.ndim != 1 or index.shape[0] != n:
            raise NotFusible(
                f"'gather' along the row by an index of shape {index.shape} not known when built"
            )
        idx = index.numpy()
        s = int(idx[0]) % n if n else 0
        if not np.array_equal(idx, (np.arange(n) + s) % n):
            raise NotFusible("'gather' along the row by an index that is not a rotation of the row")
        arg = self.node(x)
        try:
            node = self.b.take(arg, s, n)
        except ValueError as exc:
            raise NotFusible(str(exc)) from None
        self.place(node, tuple(x.shape), [arg])
        return self.sym(node, tuple(x.shape), x.dtype, x.device)


def trace(
    name: str,
    fn: Callable[..., Any],
    ins: list[Tensor],
    attrs: dict[str, Any],
    main: tuple[int, ...] | None = None,
    group: bool = False,
    consts: list[Tensor] | None = None,
) -> tuple[loop_ir.Program, list[tuple[tuple[int, ...], np.dtype]]]:
    """Trace ``fn(*ins, **attrs)`` into a :class:`loop_ir.Program` and the outputs' (shape, dtype).

    ``main`` is the shape whose last axis is the row (the first input's by default). Raises
    :class:`NotFusible` when the graph is not a fusion group.

    ``group=True`` traces a fusion group of a program (:mod:`framework.compiler.fused`):
    bool inputs (masks) are read as they are, an input of any shape that broadcasts to
    ``main`` is read through an index expression (``Program.loads``: a ``[seq, seq]`` mask
    under ``[batch, heads, seq, seq]`` scores).

    ``consts`` (a list, for eager generated kernels) reads inputs that fit no kind through
    broadcast loads as well (rotary's ``(seq, dim)`` tables under ``(batch, heads, seq, dim)``),
    a value made from one only at its own shape or expanded to the full rows, and a concrete
    float tensor the function makes (a constant of its shapes and attributes: rotary's sign)
    as a further input, appended to ``consts``: the caller passes them after ``ins``.
    """
    geo = Geometry(tuple(main if main is not None else ins[0].shape))
    b = loop_ir.Builder()
    kinds: list[tuple[np.dtype, bool, bool]] = []
    loads: dict[int, str] = {}
    tr = _Tracer(geo, b, kinds, loads, consts)
    if group:
        tr.floats = loop_ir.FLOATS + loop_ir.HALVES
    sym_ins = []
    for k, t in enumerate(ins):
        if t.dtype not in tr.floats and not (group and t.dtype == loop_ir.BOOL):
            raise NotFusible(f"input {k} is {t.dtype}; generated kernels take float32/float64")
        sym_ins.append(tr.sym(tr.input(k, t, group or consts is not None), t.shape, t.dtype, t.device))
    if base.TRACER.get() is not None:
        raise NotFusible("already tracing")
    # NOTE: autograd off for the forward; a traced gradient rule turns it on
    with base.tracing(tr, "compiler"), autograd.no_grad():
        try:
            res = fn(*sym_ins, **attrs)
        except NotFusible:
            raise
        except Exception as exc:  # noqa: BLE001 — any failure means "not traceable", the caller decomposes
            raise NotFusible(f"tracing failed: {type(exc).__name__}: {exc}") from exc
    outs = [res] if isinstance(res, Tensor) else list(res)
    nodes, metas, out_col = [], [], []
    for o in outs:
        if not isinstance(o, Tensor):
            raise NotFusible(f"the traced function returned {type(o).__name__}")
        node = tr.node(o)
        rowsum = node.op == _ROWSUM
        if rowsum:  # the caller sums the per-row terms
            node = node.args[0]
        if node.op == "const" or not node.row and not node.col:
            raise NotFusible("an output does not depend on the row")
        if node.dtype not in tr.floats:
            raise NotFusible(f"an output is {node.dtype}")
        nodes.append(node)
        metas.append((tuple(o.shape), o.dtype))
        out_col.append(
            rowsum
            or geo.flat(tuple(o.shape))
            or (math.prod(o.shape) == geo.rows * geo.n and bool(o.shape) and o.shape[-1] == geo.n)
        )
    if any(not c and math.prod(s) != geo.rows for c, (s, _) in zip(out_col, metas)):
        raise NotFusible("an output is neither a full row nor one value per row")
    if any(a.op == _ROWSUM for n in loop_ir.live_nodes(nodes) for a in n.args):
        raise NotFusible("a sum over rows feeds another value")
    prog = loop_ir.Program(name, geo.n, kinds, nodes, out_col, b.nodes, loads)
    return prog, metas


def broadcast_load(shape: tuple[int, ...], main: tuple[int, ...]) -> tuple[bool, bool, str | None]:
    """(row, col, index expression) of an input of ``shape`` broadcast to ``main``: the
    element (r, j) of the ``(rows, n)`` view reads the input at the expression's offset."""
    if len(shape) > len(main):
        raise NotFusible(f"input of shape {shape} has more axes than the rows {main}")
    padded = (1,) * (len(main) - len(shape)) + tuple(shape)
    if any(s not in (1, m) for s, m in zip(padded, main)):
        raise NotFusible(f"input of shape {shape} does not broadcast to {main}")
    col = padded[-1] == main[-1] != 1
    terms = []
    for d in range(len(main) - 1):
        if padded[d] != 1:
            inner = math.prod(main[d + 1 : -1])
            terms.append(f"((r / {inner}) % {main[d]}) * {math.prod(padded[d + 1 :])}")
    row = bool(terms)
    if col:
        terms.append("j")
    return row, col, " + ".join(terms) if row else None
