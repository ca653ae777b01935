"""The program IR: Program → Region → Block → Operation, SSA values with use-def chains.

A :class:`Value` is defined exactly once — by an operation's result or a block argument — and
knows its uses, so a rewrite can ask "who reads this?" and swap one value for another with
:meth:`Value.replace_all_uses_with`. Types say what a value holds (:class:`TensorType`: dtype,
shape with static, unknown (``-1``) or symbolic dims, device); attributes are plain Python
values (int, float, bool, str, numpy dtype, tuples of these, :class:`SymDim`).

>>> from framework.ir import Program, TensorType, SymDim
>>> import numpy as np
>>> p = Program("f")
>>> x = p.block.add_argument(TensorType((SymDim.of("s0"), 4), np.dtype("float32"), "cpu"))
>>> y = p.block.append("op.neg", [x], [x.type])
>>> len(x.uses)
1
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from adapter_api import OarlockError


class IRError(OarlockError):
    """The program is malformed (a broken use-def chain, a bad type, an unknown op)."""


# -- types ----------------------------------------------------------------------------------
_SYM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: a derived symbol: ``b__div2`` is ``b // 2``, ``b__mod4`` is ``b % 4`` (floor division and
#: remainder of a symbol by a positive constant, computed from the symbol's value)
_DERIVED = re.compile(r"(?P<base>[A-Za-z_][A-Za-z0-9_]*?)__(?P<op>div|mod)(?P<k>[1-9][0-9]*)\Z")


def derived(base: str, op: str, k: int) -> str:
    """The name of ``base // k`` (``op`` ``"div"``) or ``base % k`` (``"mod"``)."""
    return f"{base}__{op}{int(k)}"


def is_derived(name: str) -> bool:
    """Whether ``name`` is a derived symbol (:func:`derived`)."""
    return _DERIVED.match(name) is not None


def split_derived(name: str) -> tuple[str, str, int] | None:
    """``(base, "div" | "mod", k)`` of a derived symbol, None for a plain one."""
    m = _DERIVED.match(name)
    return None if m is None else (m["base"], m["op"], int(m["k"]))


def _factor(binding: Mapping[str, int], name: str) -> int:
    v = binding.get(name)
    if v is not None:
        return v
    m = _DERIVED.match(name)
    if m is None:
        raise KeyError(name)
    b, k = _factor(binding, m["base"]), int(m["k"])
    return b // k if m["op"] == "div" else b % k


def _base_symbols(name: str) -> Iterator[str]:
    m = _DERIVED.match(name)
    if m is None:
        yield name
    else:
        yield from _base_symbols(m["base"])


@dataclass(frozen=True, slots=True)
class SymDim:
    """A polynomial of named symbols with integer coefficients: ``const + sum(coef * monomial)``
    (``s0``, ``4*s0+1``, ``s0*s1``, ``8*b*t+b``, ``b*b``; ``b__div2`` is the derived symbol
    ``b // 2`` and ``b__mod4`` is ``b % 4``, computed from ``b``).

    A dynamic dimension is a symbol (``s0`` for the batch); a dimension computed from it by the
    traced program (``reshape(x, [b * 4, -1])``, ``reshape(x, [b * t, 8])``) is such an
    expression of the symbols. Each term's name is a monomial: symbol names joined by ``*`` in
    sorted order (``"b*t"``; a plain symbol is a monomial of degree one).

    >>> d = SymDim.make({"t*b": 8, "b": 1})
    >>> str(d), d.evaluate({"b": 2, "t": 3}), d.symbols
    ('b+8*b*t', 50, ('b', 't'))
    """

    terms: tuple[tuple[str, int], ...]
    const: int = 0

    @staticmethod
    def of(name: str) -> SymDim:
        if not _SYM_NAME.match(name):
            raise IRError(f"[ir] symbol name {name!r} is not an identifier; use letters, digits and _")
        return SymDim(((name, 1),), 0)

    @staticmethod
    def monomial(names: Iterable[str]) -> str:
        """The canonical name of the product of ``names`` (sorted, joined by ``*``)."""
        return "*".join(sorted(names))

    @staticmethod
    def make(terms: Mapping[str, int], const: int = 0) -> int | SymDim:
        """The expression, or the plain int when no symbol is left (a term's name may be a
        monomial ``"t*b"``: it is put in canonical order and like terms are added)."""
        acc: dict[str, int] = {}
        for n, c in terms.items():
            if "*" in n:
                n = SymDim.monomial(n.split("*"))
            acc[n] = acc.get(n, 0) + int(c)
        t = tuple(
            sorted(((n, c) for n, c in acc.items() if c != 0), key=lambda nc: (nc[0].count("*"), nc[0]))
        )
        return SymDim(t, int(const)) if t else int(const)

    @property
    def symbols(self) -> tuple[str, ...]:
        """The symbols the expression reads (each once, in order of first appearance); a
        derived one (``b__div2``, ``b // 2``) reads its base symbol."""
        return tuple(dict.fromkeys(b for n, _ in self.terms for s in n.split("*") for b in _base_symbols(s)))

    @property
    def is_symbol(self) -> bool:
        """Whether this is one plain symbol (``s0``, not ``2*s0``, ``s0+1`` or ``s0*s1``)."""
        return (
            len(self.terms) == 1 and self.terms[0][1] == 1 and not self.const and "*" not in self.terms[0][0]
        )

    @property
    def degree(self) -> int:
        return max(n.count("*") + 1 for n, _ in self.terms)

    def evaluate(self, binding: Mapping[str, int]) -> int:
        try:
            return self.const + sum(
                c * math.prod(_factor(binding, s) for s in n.split("*")) for n, c in self.terms
            )
        except KeyError as exc:
            raise IRError(
                f"[ir] symbol {exc.args[0]!r} of {self} has no value; bind every symbol of the program"
            ) from None

    def __str__(self) -> str:
        parts = []
        for n, c in self.terms:
            t = n if c == 1 else f"-{n}" if c == -1 else f"{c}*{n}"
            parts.append(t if not parts or t.startswith("-") else "+" + t)
        if self.const:
            parts.append(f"{self.const:+d}")
        return "".join(parts)

    __repr__ = __str__


Dim = int | SymDim


def eval_dim(d: Dim, binding: Mapping[str, int]) -> int:
    return d.evaluate(binding) if isinstance(d, SymDim) else d


def resolve(value: Any, binding: Mapping[str, int]) -> Any:
    """An attribute value with every :class:`SymDim` replaced by its int under ``binding``."""
    if isinstance(value, SymDim):
        return value.evaluate(binding)
    if isinstance(value, tuple):
        return tuple(resolve(v, binding) for v in value)
    return value


def has_symbols(value: Any) -> bool:
    if isinstance(value, SymDim):
        return True
    return isinstance(value, tuple) and any(has_symbols(v) for v in value)


class Type:
    """The type of a value."""


@dataclass(frozen=True, slots=True)
class TensorType(Type):
    """A tensor: ``shape`` (each dim an int, ``-1`` for unknown, or a :class:`SymDim`),
    numpy ``dtype`` and ``device`` (its name: ``"cpu"``, ``"opencl:0"``)."""

    shape: tuple[Dim, ...]
    dtype: np.dtype
    device: str

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) and d >= 0 for d in self.shape)

    def concrete(self, binding: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(eval_dim(d, binding) for d in self.shape)

    def with_device(self, device: str) -> TensorType:
        return TensorType(self.shape, self.dtype, device)


# -- values and operations ------------------------------------------------------------------
class Value:
    """An SSA value: the result ``index`` of ``owner`` (an :class:`Operation`), or argument
    ``index`` of ``owner`` (a :class:`Block`). ``uses`` lists ``(operation, operand index)``."""

    __slots__ = ("type", "owner", "index", "uses", "__weakref__")

    def __init__(self, type: Type, owner: Operation | Block, index: int) -> None:
        self.type = type
        self.owner = owner
        self.index = index
        self.uses: list[tuple[Operation, int]] = []

    @property
    def defining_op(self) -> Operation | None:
        return self.owner if isinstance(self.owner, Operation) else None

    def replace_all_uses_with(self, other: Value, except_ops: tuple[Operation, ...] = ()) -> None:
        """Make every reader of this value read ``other`` instead — but the ops in
        ``except_ops`` (typically the one computing ``other`` from this value)."""
        if other is self:
            return
        for op, i in list(self.uses):
            if op not in except_ops:
                op.set_operand(i, other)

    def __repr__(self) -> str:
        where = f"{self.owner.name}#{self.index}" if isinstance(self.owner, Operation) else f"arg{self.index}"
        return f"<Value {where}: {self.type}>"


class Operation:
    """One operation: ``name`` (``dialect.op``), operands, results, attributes, regions."""

    __slots__ = ("name", "operands", "results", "attrs", "regions", "parent", "__weakref__")

    def __init__(
        self,
        name: str,
        operands: list[Value],
        result_types: list[Type],
        attrs: dict[str, Any] | None = None,
        regions: list[Region] | None = None,
    ) -> None:
        self.name = name
        self.operands: list[Value] = []
        self.results = [Value(t, self, i) for i, t in enumerate(result_types)]
        self.attrs = dict(attrs or {})
        self.regions = list(regions or [])
        for r in self.regions:
            r.owner = self
        self.parent: Block | None = None
        for v in operands:
            self.operands.append(v)
            v.uses.append((self, len(self.operands) - 1))

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise IRError(f"[ir] {self.name} has {len(self.results)} results; use .results")
        return self.results[0]

    @property
    def dialect(self) -> str:
        return self.name.partition(".")[0]

    @property
    def opname(self) -> str:
        return self.name.partition(".")[2]

    def add_region(self, region: Region | None = None) -> Region:
        r = region if region is not None else Region()
        r.owner = self
        self.regions.append(r)
        return r

    def walk(self) -> Iterator[Operation]:
        """The operations nested in this one's regions (not itself), in program order."""
        for r in self.regions:
            yield from walk_region(r)

    def enclosing_op(self) -> Operation | None:
        """The operation whose region holds this one (None at the program's top level)."""
        b = self.parent
        r = b.parent if b is not None else None
        return r.owner if r is not None else None

    def set_operand(self, i: int, v: Value) -> None:
        old = self.operands[i]
        old.uses.remove((self, i))
        self.operands[i] = v
        v.uses.append((self, i))

    def drop_operands(self) -> None:
        for i, v in enumerate(self.operands):
            v.uses.remove((self, i))
        self.operands = []

    def erase(self) -> None:
        """Remove this operation from its block; its results must have no uses left."""
        for r in self.results:
            if r.uses:
                readers = ", ".join(u.name for u, _ in r.uses[:3])
                raise IRError(
                    f"[ir] cannot erase {self.name}: result {r.index} is still read by {readers}; "
                    f"replace its uses first (replace_all_uses_with)"
                )
        self.drop_operands()
        for o in self.walk():  # ops in its regions stop reading outer values
            o.drop_operands()
        if self.parent is not None:
            self.parent.ops.remove(self)
            self.parent = None

    def __repr__(self) -> str:
        return f"<Operation {self.name}>"


class Block:
    """A straight-line list of operations with block arguments."""

    __slots__ = ("args", "ops", "parent")

    def __init__(self) -> None:
        self.args: list[Value] = []
        self.ops: list[Operation] = []
        self.parent: Region | None = None

    def add_argument(self, type: Type) -> Value:
        v = Value(type, self, len(self.args))
        self.args.append(v)
        return v

    def append(
        self, name: str, operands: list[Value], result_types: list[Type], attrs: dict[str, Any] | None = None
    ) -> Value | Operation:
        """Append an operation; returns its result when it has exactly one, else the op."""
        op = self.append_op(Operation(name, operands, result_types, attrs))
        return op.results[0] if len(op.results) == 1 else op

    def append_op(self, op: Operation) -> Operation:
        op.parent = self
        self.ops.append(op)
        return op

    def insert_op(self, index: int, op: Operation) -> Operation:
        op.parent = self
        self.ops.insert(index, op)
        return op


class Region:
    """A list of blocks owned by an operation (or by the program). The control-flow dialect's
    regions hold one block each; ``owner`` is the operation (None for the program's body)."""

    __slots__ = ("blocks", "owner")

    def __init__(self, blocks: list[Block] | None = None) -> None:
        self.blocks = blocks if blocks is not None else [Block()]
        self.owner: Operation | None = None
        for b in self.blocks:
            b.parent = self

    @property
    def block(self) -> Block:
        return self.blocks[0]


class Program:
    """A function-like program: one region whose entry block's arguments are the inputs and
    whose last operation is ``builtin.return`` of the outputs."""

    def __init__(self, name: str = "forward") -> None:
        if not _SYM_NAME.match(name):
            raise IRError(f"[ir] program name {name!r} is not an identifier")
        self.name = name
        self.body = Region()

    @property
    def block(self) -> Block:
        return self.body.blocks[0]

    @property
    def inputs(self) -> list[Value]:
        return self.block.args

    @property
    def return_op(self) -> Operation | None:
        ops = self.block.ops
        return ops[-1] if ops and ops[-1].name == "builtin.return" else None

    @property
    def outputs(self) -> list[Value]:
        r = self.return_op
        return list(r.operands) if r is not None else []

    def walk(self) -> Iterator[Operation]:
        """Every operation, nested regions included, in program order."""
        yield from walk_region(self.body)

    def values(self) -> list[Value]:
        """Every value: the inputs, then in program order each op's results and the
        arguments of its regions' blocks."""
        out = list(self.inputs)
        for op in self.walk():
            out += op.results
            for r in op.regions:
                for b in r.blocks:
                    out += b.args
        return out

    def symbols(self) -> tuple[str, ...]:
        """The symbols of the inputs' dynamic dims, in order of first appearance."""
        seen: dict[str, None] = {}
        for v in self.inputs:
            if isinstance(v.type, TensorType):
                for d in v.type.shape:
                    if isinstance(d, SymDim):
                        seen.update(dict.fromkeys(d.symbols))
        return tuple(seen)

    def __str__(self) -> str:
        return print_program(self)


def walk_region(region: Region) -> Iterator[Operation]:
    """The operations of ``region``, nested ones included, in program order."""
    for b in region.blocks:
        for op in b.ops:
            yield op
            for r in op.regions:
                yield from walk_region(r)


def free_values(op: Operation) -> list[Value]:
    """The values ``op``'s regions read but do not define (captured from enclosing blocks),
    in order of first use."""
    inner: set[Value] = set()
    for o in op.walk():
        inner.update(o.results)
        for r in o.regions:
            for b in r.blocks:
                inner.update(b.args)
    for r in op.regions:
        for b in r.blocks:
            inner.update(b.args)
    seen: dict[Value, None] = {}
    for o in op.walk():
        for v in o.operands:
            if v not in inner:
                seen[v] = None
    return list(seen)


def clone_op(op: Operation, mapping: dict[Value, Value]) -> Operation:
    """A copy of ``op`` (its regions deep-copied) reading ``mapping[v]`` for each operand
    ``v``; ``mapping`` gains the copy's results and block arguments."""
    regions = []
    for r in op.regions:
        blocks = []
        for b in r.blocks:
            nb = Block()
            for a in b.args:
                mapping[a] = nb.add_argument(a.type)
            for o in b.ops:
                nb.append_op(clone_op(o, mapping))
            blocks.append(nb)
        regions.append(Region(blocks))
    try:
        operands = [mapping[v] for v in op.operands]
    except KeyError:
        raise IRError(f"[ir] copying {op.name}: an operand is defined outside what is copied") from None
    new = Operation(op.name, operands, [r.type for r in op.results], dict(op.attrs), regions)
    mapping.update(zip(op.results, new.results))
    return new


# -- printing (the text form; text.py parses it) -------------------------------------------------------------------------------
def print_type(t: Type) -> str:
    if not isinstance(t, TensorType):
        raise IRError(f"[ir] cannot print type {t!r}")
    dims = ", ".join(str(d) for d in t.shape)
    return f"tensor<[{dims}], {_dtype_name(t.dtype)}, {t.device}>"


_DTYPE_NAMES: dict[Any, str] = {}


def _dtype_name(d: np.dtype) -> str:
    # memoised: numpy's str(dtype) is Python code, and printing a program (the fusion pass's
    # key of a candidate group) names a dtype per value
    got = _DTYPE_NAMES.get(d)
    if got is None:
        got = _DTYPE_NAMES[d] = str(np.dtype(d))
    return got


def print_attr(v: Any) -> str:
    if isinstance(v, bool) or isinstance(v, np.bool_):
        return "true" if v else "false"
    if v is None:
        return "none"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        r = repr(f)
        return r if any(c in r for c in ".en") else r + ".0"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, np.dtype):
        return _dtype_name(v)
    if isinstance(v, SymDim):
        return f"sym<{v}>"
    if isinstance(v, (tuple, list)):
        inner = ", ".join(print_attr(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, type) and issubclass(v, np.generic):
        return _dtype_name(np.dtype(v))
    raise IRError(
        f"[ir] attribute value {v!r} of type {type(v).__name__} has no text form; "
        f"attributes are ints, floats, bools, strings, dtypes, symbolic dims or tuples of these"
    )


def print_program(p: Program) -> str:
    names: dict[Value, str] = {}

    def name(v: Value) -> str:
        n = names.get(v)
        if n is None:
            raise IRError(f"[ir] printing {p.name}: {v!r} is used before it is defined")
        return n

    def fresh(v: Value) -> str:
        names[v] = f"%{len(names)}"
        return names[v]

    def block(b: Block, indent: str, lines: list[str]) -> None:
        for op in b.ops:
            lhs = ", ".join(fresh(r) for r in op.results)
            s = f"{lhs} = {op.name}" if lhs else op.name
            if op.operands or not op.results:
                s += "(" + ", ".join(name(v) for v in op.operands) + ")"
            if op.attrs:
                s += " {" + ", ".join(f"{k} = {print_attr(op.attrs[k])}" for k in sorted(op.attrs)) + "}"
            if op.results:
                s += " : " + ", ".join(print_type(r.type) for r in op.results)
            if not op.regions:
                lines.append(indent + s)
                continue
            for k, r in enumerate(op.regions):
                if len(r.blocks) != 1:
                    raise IRError(f"[ir] {op.name}: a region holds one block in this text form")
                rb = r.blocks[0]
                head = s + " {" if k == 0 else indent + "} {"
                lines.append(indent + head if k == 0 else head)
                if rb.args:
                    args = ", ".join(f"{fresh(a)}: {print_type(a.type)}" for a in rb.args)
                    lines.append(f"{indent}^bb0({args}):")
                block(rb, indent + "  ", lines)
            lines.append(indent + "}")

    for v in p.inputs:
        fresh(v)
    args = ", ".join(f"{names[v]}: {print_type(v.type)}" for v in p.inputs)
    outs = ", ".join(print_type(v.type) for v in p.outputs)
    lines = [f"module @{p.name}({args}) -> ({outs}) {{"]
    block(p.block, "  ", lines)
    lines.append("}")
    return "\n".join(lines) + "\n"
