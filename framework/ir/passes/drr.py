"""Declarative rewrite rules (after Paddle's DRR): a rule is data — a source pattern,
constraints and a result pattern — and this engine does the matching (commutative operands
both ways, a variable bound twice must be the same value), the use counting (an inner op of
the source is replaced only when the root is its only reader), building the result with its
types, the replacement and the dead-code clean-up.

>>> from framework.ir.passes.drr import Attr, Pat, Res, Rule, Var
>>> rule = Rule("permute_of_permute",
...             source=Pat("permute", Pat("permute", Var("x"), perm=Attr("p")), perm=Attr("q")),
...             result=Res("permute", "x", perm=lambda m: tuple(m["p"][i] for i in m["q"])))

Patterns name ops without the ``op.`` prefix. In a source: ``Var("x")`` binds any value,
``Const("c")`` binds the scalar of an inline ``builtin.constant``, ``Attr("a")`` binds an
attribute (a plain value must be equal). In a result: a string names a bound value, a
``Res`` makes an op (attributes: plain values, ``Attr`` of a bound one, or a function of the
match); a bare string as the whole result replaces the root by that value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._src import device as _dev
from ..._src import dispatch
from ..core import Operation, TensorType, Value
from ..dialects import infer_shapes, lookup
from .rewrite import PatternRewriter, RewritePattern
from .traits import aliases_storage, returned


@dataclass(frozen=True)
class Var:
    """Any value, bound to ``name``."""

    name: str


@dataclass(frozen=True)
class Const:
    """An inline scalar ``builtin.constant``; its value is bound to ``name``."""

    name: str


@dataclass(frozen=True)
class Attr:
    """An attribute, bound to (in a source) or read from (in a result) ``name``."""

    name: str


class Pat:
    """A source op: ``Pat("add", Pat("matmul", Var("x"), Var("w")), Var("b"))``."""

    def __init__(self, op: str, *operands: Pat | Var | Const, **attrs: Any) -> None:
        self.op, self.operands, self.attrs = op, operands, attrs

    def ops(self) -> int:
        return 1 + sum(o.ops() for o in self.operands if isinstance(o, Pat))

    def __repr__(self) -> str:
        return f"{self.op}({', '.join(map(repr, self.operands))})"


class Res:
    """A result op: ``Res("linear", "x", "w", "b")``; attributes as keywords."""

    def __init__(self, op: str, *operands: str | Res, **attrs: Any) -> None:
        self.op, self.operands, self.attrs = op, operands, attrs


class Match(dict):
    """The bindings of a match (``m["x"]``), the root op and the pass context."""

    root: Operation
    ctx: Any

    def type(self, name: str) -> TensorType:
        return self[name].type


@dataclass
class Rule:
    """A declarative rewrite: when ``source`` matches and every ``where`` holds, the root is
    replaced by ``result``. ``benefit`` defaults to the number of ops in the source."""

    name: str
    source: Pat
    result: Res | str
    where: Sequence[Callable[[Match], bool]] = field(default_factory=tuple)
    benefit: int | None = None

    def pattern(self) -> RewritePattern:
        """This rule as a :class:`RewritePattern` for the greedy driver."""
        return _RulePattern(self)


# -- constraints (data helpers) ---------------------------------------------------------------
def is_scalar(name: str, value: float, signed_zero: bool = True) -> Callable[[Match], bool]:
    """The constant ``name`` equals ``value`` (and, for a zero, has its sign)."""

    def check(m: Match) -> bool:
        c = m[name]
        if isinstance(c, bool) or c != value:
            return False
        return not signed_zero or value != 0 or bool(np.signbit(c)) == bool(np.signbit(value))

    return check


def same_type(a: str, b: str = "out") -> Callable[[Match], bool]:
    """Values ``a`` and ``b`` (``"out"``: the root's result) have the same type."""
    return lambda m: m[a].type == m[b].type


def rank(name: str, r: int) -> Callable[[Match], bool]:
    return lambda m: m[name].type.rank == r


def has_kernel(op: str) -> Callable[[Match], bool]:
    """The plugin of the program's device registers a kernel for ``op`` at the root's dtype."""

    def check(m: Match) -> bool:
        t = m["out"].type
        dev = _dev.parse(m.ctx.device or t.device)
        return dispatch.find_kernel(op, dev.type, t.dtype) is not None

    return check


def flag(name: str) -> Callable[[Match], bool]:
    """A switch of the pass context is on (``no_signed_zeros``)."""
    return lambda m: bool(getattr(m.ctx, name))


# -- the engine -------------------------------------------------------------------------------
def _attrs_match(pat: Pat, op: Operation, m: Match) -> bool:
    for k, want in pat.attrs.items():
        if k not in op.attrs:
            return False
        got = op.attrs[k]
        if isinstance(want, Attr):
            if want.name in m and m[want.name] != got:
                return False
            m[want.name] = got
        elif got != want:
            return False
    return True


def _match(pat: Pat | Var | Const, v: Value, m: Match, inner: bool) -> Iterator[Match]:
    """Every way ``pat`` matches value ``v`` given bindings ``m`` (copies, never mutated)."""
    if isinstance(pat, Var):
        if pat.name in m and m[pat.name] is not v:
            return
        yield Match({**m, pat.name: v})
        return
    op = v.defining_op
    if isinstance(pat, Const):
        if op is None or op.name != "builtin.constant" or "value" not in op.attrs:
            return
        if pat.name in m and m[pat.name] != op.attrs["value"]:
            return
        yield Match({**m, pat.name: op.attrs["value"], pat.name + ".value": v})
        return
    if op is None or op.name != "op." + pat.op or len(op.operands) != len(pat.operands):
        return
    if inner and (len(v.uses) != 1 or len(op.results) != 1):
        return  # an inner op read elsewhere stays, so replacing the root would not remove it
    m = Match(m)
    if not _attrs_match(pat, op, m):
        return
    orders = [list(op.operands)]
    if len(op.operands) == 2 and lookup(op.name).has("commutative"):
        orders.append(orders[0][::-1])
    for operands in orders:
        yield from _match_all(pat.operands, operands, m)


def _match_all(pats: Sequence[Pat | Var | Const], vals: Sequence[Value], m: Match) -> Iterator[Match]:
    if not pats:
        yield m
        return
    for m1 in _match(pats[0], vals[0], m, True):
        yield from _match_all(pats[1:], vals[1:], m1)


def _attr_value(v: Any, m: Match) -> Any:
    if isinstance(v, Attr):
        return m[v.name]
    if callable(v) and not isinstance(v, (type, np.dtype)):
        return v(m)
    return v


class _RulePattern(RewritePattern):
    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.root = "op." + rule.source.op
        self.name = rule.name
        self.benefit = rule.benefit if rule.benefit is not None else rule.source.ops()

    def _build(
        self, res: Res | str, m: Match, root: Operation, rw: PatternRewriter, top: bool
    ) -> Value | None:
        if isinstance(res, str):
            return m[res]
        operands = []
        for o in res.operands:
            v = self._build(o, m, root, rw, False)
            if v is None:
                return None
            operands.append(v)
        attrs = {k: _attr_value(v, m) for k, v in res.attrs.items()}
        if top:
            types = [root.result.type]
        else:  # an inner result op: its type by the OpDef's rule, on static shapes only
            probe = Operation("op." + res.op, operands, [], attrs)
            try:
                if any(not v.type.is_static for v in operands):
                    return None
                metas = infer_shapes(probe, {})
            finally:
                probe.drop_operands()
            if metas is None:
                return None
            types = [TensorType(tuple(s), np.dtype(d), root.result.type.device) for s, d in metas]
        return rw.create("op." + res.op, operands, types, attrs, before=root).results[0]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        if len(op.results) != 1:
            return False
        start = Match({"out": op.result})
        start.root, start.ctx = op, rewriter.ctx
        if not _attrs_match(self.rule.source, op, start):
            return False
        orders = [list(op.operands)]
        if len(op.operands) == 2 and lookup(op.name).has("commutative"):
            orders.append(orders[0][::-1])
        if len(op.operands) != len(self.rule.source.operands):
            return False
        for operands in orders:
            for m in _match_all(self.rule.source.operands, operands, start):
                m.root, m.ctx = op, rewriter.ctx
                if not all(c(m) for c in self.rule.where):
                    continue
                if (
                    isinstance(self.rule.result, str)
                    and returned(op)
                    and aliases_storage(m[self.rule.result])
                ):
                    continue  # an output stays a fresh tensor: never the caller's input or a parameter
                new = self._build(self.rule.result, m, op, rewriter, True)
                if new is None or new.type != op.result.type:
                    continue
                rewriter.replace_op(op, [new])
                return True
        return False
