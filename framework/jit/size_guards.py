"""Branches on dynamic sizes become guards.

While a function is traced with dynamic dims (``InputSpec([None, 8])``), its inputs' dynamic
dims are :class:`SymInt`: ints at the probe size that remember which symbol they are. Python
arithmetic on them (``+ - * // %``, ``**`` by an int) keeps the expression, and every
comparison made by the user's code (``if x.shape[0] > 4:``, ``min(t, 8)``, ``b % 2 == 0``)
is recorded as a :class:`Guard`: the condition and the outcome the trace took. The program
is valid where every guard holds; a call whose sizes make one false is a guard miss, which
traces the other side (one program per outcome, not per size).

Comparisons made inside the framework's own machinery (shape rules, tracing) are not guards:
those are covered by probing (:mod:`framework.jit.symbolic`). The exception is a framework
function marked ``@decides_on_sizes`` (``tensor.SIZE_DECISIONS``: a slice's bounds clamped to
the dim, an index checked against it), whose comparisons are guards at the user's line that
led to them: ``x[:5]`` holds 5 rows where ``b >= 5`` only.

>>> import framework as fw
>>> from framework.static import InputSpec
>>> def f(x):
...     return x * 2.0 if x.shape[0] > 4 else x * 3.0
>>> sf = fw.jit.to_static(f, input_spec=[InputSpec([None, 3])])
>>> [float(sf(fw.ones([n, 3]))[0, 0]) for n in (2, 3, 6, 7)], len(sf.programs)
([3.0, 3.0, 2.0, 2.0], 2)
"""

from __future__ import annotations

import contextlib
import contextvars
import operator
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .._src.tensor import SIZE_DECISIONS, Size, own_sizes
from ..ir.core import derived, is_derived

#: an expression: a symbol name, an int, or (op, left, right)
Expr = Any

_OPS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}

#: code object -> whether it is the user's (not the framework's machinery)
_USER_CODE: dict[Any, bool] = {}
#: Size's comparisons: they compare the user's shapes element by element
_WHOLE_SHAPE = frozenset({Size.__eq__.__code__, Size.__ne__.__code__})
_FRAMEWORK = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: comparisons made here are the framework's (shape rules, tracing), not the user's branches
_INTERNAL = tuple(os.path.join(_FRAMEWORK, d) + os.sep for d in ("_src", "jit", "ir", "static", "compiler"))


def evaluate(e: Expr, binding: Mapping[str, int]) -> int:
    """The value of ``e`` with the symbols at ``binding``."""
    if isinstance(e, str):
        return binding[e]
    if isinstance(e, int):
        return e
    op, a, b = e
    return _OPS[op](evaluate(a, binding), evaluate(b, binding))


def polynomial(e: Expr) -> dict[tuple[str, ...], int] | None:
    """``e`` as ``{monomial: coefficient}`` (a monomial: sorted symbol names, repeats for
    powers; ``()`` the constant; ``b // 2`` is the derived symbol ``b__div2``), or None where
    it divides or takes a remainder of more than one symbol by a positive constant."""
    if isinstance(e, str):
        return {(e,): 1}
    if isinstance(e, int):
        return {(): e}
    op, a, b = e
    if op in ("//", "%"):  # of a symbol by a positive constant: a derived symbol (b__div2)
        if isinstance(a, str) and isinstance(b, int) and b > 0:
            return {(derived(a, "div" if op == "//" else "mod", b),): 1}
        return None
    pa, pb = polynomial(a), polynomial(b)
    if pa is None or pb is None or op not in "+-*":
        return None
    out: dict[tuple[str, ...], int] = {}
    if op == "*":
        for ma, ca in pa.items():
            for mb, cb in pb.items():
                m = tuple(sorted(ma + mb))
                out[m] = out.get(m, 0) + ca * cb
    else:
        out = dict(pa)
        for m, c in pb.items():
            out[m] = out.get(m, 0) + (c if op == "+" else -c)
    return {m: c for m, c in out.items() if c}


def symbols_of(*exprs: Expr) -> list[str]:
    """The symbols ``exprs`` read, each once."""
    out: dict[str, None] = {}
    for e in exprs:
        if isinstance(e, str):
            out[e] = None
        elif isinstance(e, tuple):
            out.update(dict.fromkeys(symbols_of(*e[1:])))
    return list(out)


def show(e: Expr) -> str:
    if isinstance(e, (str, int)):
        return str(e)
    op, a, b = e
    return f"({show(a)} {op} {show(b)})"


@dataclass(frozen=True)
class Guard:
    """``left op right`` was ``outcome`` when traced, at ``where`` (the user's line)."""

    left: Expr
    op: str
    right: Expr
    outcome: bool
    where: str

    @property
    def condition(self) -> tuple[Expr, str, Expr]:
        return self.left, self.op, self.right

    def truth(self, binding: Mapping[str, int]) -> bool:
        """Whether the condition is true with the symbols at ``binding``."""
        return bool(_OPS[self.op](evaluate(self.left, binding), evaluate(self.right, binding)))

    def holds(self, binding: Mapping[str, int]) -> bool:
        """Whether the condition comes out at ``binding`` as it did when traced."""
        return self.truth(binding) == self.outcome

    def __str__(self) -> str:
        return f"{show(self.left)} {self.op} {show(self.right)} is {self.outcome} (at {self.where})"


class _Record:
    """The guards of one trace (in order, each condition once)."""

    def __init__(self) -> None:
        self.guards: dict[tuple[Expr, str, Expr], Guard] = {}
        #: every expression computed from the sizes (hints for fitting: ``n * n``)
        self.exprs: dict[Expr, None] = {}


_RECORD: contextvars.ContextVar[_Record | None] = contextvars.ContextVar("oarlock_size_guards", default=None)


class Recorded(list):
    """The guards of a trace, in order; ``hints`` holds the polynomials of the sizes its
    Python computed (``n * n``) that are not products of distinct symbols."""

    hints: list[Any]


@contextlib.contextmanager
def recording() -> Iterator[Recorded]:
    """Record the guards of a trace into the list given (filled when the block ends).

    Tensors made in the block get Sizes of their own (``tensor.own_sizes``): a SymInt equals
    the plain int, and a Size shared by value would drop it or leak it into later tensors."""
    rec, out = _Record(), Recorded()
    out.hints = []
    token = _RECORD.set(rec)
    try:
        with own_sizes():
            yield out
    finally:
        _RECORD.reset(token)
        out.extend(rec.guards.values())
        for e in rec.exprs:
            p = polynomial(e)
            if p is not None and any(len(set(m)) < len(m) or any(map(is_derived, m)) for m in p):
                out.hints.append(p)


def _is_user(code: Any) -> bool:
    user = _USER_CODE.get(code)
    if user is None:
        user = _USER_CODE[code] = not os.path.abspath(code.co_filename).startswith(_INTERNAL)
    return user


def _user_frame() -> str | None:
    """``file:line`` of the comparison's caller when it is the user's code, else None (a
    shape compared whole, ``x.shape == [4, 8]``, is the user's comparison). A framework
    function that decides on sizes (``tensor.SIZE_DECISIONS``: a slice's clamp) compares
    for the user: its comparison is a guard too, at the user's line that led to it."""
    f: Any = sys._getframe(3)
    while f is not None and f.f_code in _WHOLE_SHAPE:
        f = f.f_back
    if f is None:
        return None
    code = f.f_code
    if code in SIZE_DECISIONS:
        site = f"{code.co_filename}:{f.f_lineno}"
        while f is not None and not _is_user(f.f_code):
            f = f.f_back
        return site if f is None else f"{f.f_code.co_filename}:{f.f_lineno}"
    return f"{code.co_filename}:{f.f_lineno}" if _is_user(code) else None


class SymInt(int):
    """A dynamic dim while tracing: the probe size, and the expression of the symbols it is.

    >>> with recording() as guards:
    ...     b = SymInt(11, "b")
    ...     big = (b // 2) * 3 > 12
    >>> big, str(guards[0]).split(" (at")[0]
    (True, '((b // 2) * 3) > 12 is True')
    """

    expr: Expr
    record: _Record | None

    def __new__(cls, value: int, expr: Expr, record: _Record | None = None) -> SymInt:
        self = super().__new__(cls, value)
        self.expr = expr
        self.record = record if record is not None else _RECORD.get()
        return self

    def _other(self, o: Any) -> Expr | None:
        if isinstance(o, SymInt) and o.record is self.record:
            return o.expr
        if isinstance(o, int) and not isinstance(o, bool):
            return int(o)
        return None

    def _arith(self, op: str, o: Any, reverse: bool = False) -> Any:
        e = self._other(o)
        value = _OPS[op](int(o), int(self)) if reverse else _OPS[op](int(self), o)
        if e is None or not isinstance(value, int):
            return value
        expr = (op, e, self.expr) if reverse else (op, self.expr, e)
        if self.record is not None and len(self.record.exprs) < 256:
            self.record.exprs[expr] = None
        return SymInt(value, expr, self.record)

    def __pow__(self, o: Any, mod: Any = None) -> Any:
        if mod is None and type(o) is int and 1 <= o <= 4:
            out: Any = self
            for _ in range(o - 1):
                out = out * self
            return out
        return pow(int(self), o, mod)

    def __neg__(self) -> Any:
        return SymInt(-int(self), ("-", 0, self.expr), self.record)

    def __pos__(self) -> SymInt:
        return self

    def __abs__(self) -> Any:
        return self if self >= 0 else -self

    def _compare(self, op: str, o: Any) -> Any:
        e = self._other(o)
        got = _OPS[op](int(self), int(o) if e is not None else o)
        if e is None or self.record is None or self.record is not _RECORD.get():
            return got
        where = _user_frame()
        if where is not None:
            key = (self.expr, op, e)
            if key not in self.record.guards:
                self.record.guards[key] = Guard(self.expr, op, e, bool(got), where)
        return got

    def __bool__(self) -> bool:
        return bool(self._compare("!=", 0))

    __hash__ = int.__hash__

    def __repr__(self) -> str:
        return int.__repr__(self)

    __str__ = __repr__


def _arith(op: str, reverse: bool) -> Any:
    def method(self: SymInt, o: Any) -> Any:
        if self._other(o) is not None:
            return self._arith(op, o, reverse)
        return _OPS[op](o, int(self)) if reverse else _OPS[op](int(self), o)

    return method


for _name, _op in (("add", "+"), ("sub", "-"), ("mul", "*"), ("floordiv", "//"), ("mod", "%")):
    setattr(SymInt, f"__{_name}__", _arith(_op, False))
    setattr(SymInt, f"__r{_name}__", _arith(_op, True))
for _name, _op in (("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="), ("eq", "=="), ("ne", "!=")):
    setattr(SymInt, f"__{_name}__", lambda self, o, _op=_op: self._compare(_op, o))


def plain(v: Any) -> Any:
    """``v`` with every :class:`SymInt` (in tuples and lists too) made a plain int."""
    if isinstance(v, SymInt):
        return int(v)
    if isinstance(v, (tuple, list)):
        return type(v)(plain(x) for x in v)
    return v
