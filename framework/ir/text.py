"""The text form of a program: a printer and a parser that round-trip.

::

    module @forward(%0: tensor<[s0, 784], float32, cpu>) -> (tensor<[s0, 10], float32, cpu>) {
      %1 = builtin.parameter {name = "0.weight"} : tensor<[784, 10], float32, cpu>
      %2 = op.matmul(%0, %1) : tensor<[s0, 10], float32, cpu>
      builtin.return(%2)
    }

Shapes are bracketed lists (a dim is an int, ``-1`` for unknown, or an affine expression of
symbols such as ``s0`` or ``4*s0+1``): the ``s0x784xf32`` spelling cannot tell a symbol named
``max_len`` from a separator. Attribute values are ints, floats (``nan``, ``inf``, ``-inf``
included; a float always prints with ``.`` or an exponent), ``true``/``false``, ``none``,
strings (JSON-quoted), dtypes (a bare name: ``float32``), symbolic dims (``sym<s0>``) and
tuples of these. The parser is a hand-written tokenizer and recursive descent: it never
evaluates Python.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

from .._src import dtypes as _dt
from .core import (
    Block,
    IRError,
    Operation,
    Program,
    Region,
    SymDim,
    TensorType,
    Type,
    Value,
    print_type,
)
from .dialects import lookup


class ParseError(IRError):
    """The text is not a program of this grammar."""


#: how deep regions and attribute tuples may nest: far beyond what a traced program holds, and
#: shallow enough that the verifier, the executor and the printer (recursive like the parser)
#: follow it within Python's recursion limit
MAX_NESTING = 64


# -- tokenizer ------------------------------------------------------------------------------
_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r]+|//[^\n]*)
  | (?P<nl>\n)
  | (?P<value>%[0-9]+)
  | (?P<symbol>@[A-Za-z_][A-Za-z0-9_]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<number>-?(?:[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+|[0-9]+))
  | (?P<ident>-?[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<arrow>->)
  | (?P<punct>[(){}\[\]<>,:=*+^-])
""",
    re.VERBOSE,
)


class _Tokens:
    def __init__(self, text: str) -> None:
        self.toks: list[tuple[str, str, int, int]] = []  # kind, text, line, column
        line, start, pos = 1, 0, 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                raise ParseError(
                    f"[ir.parse] line {line}, column {pos - start + 1}: unexpected character "
                    f"{text[pos]!r}; the program text is damaged or not a program"
                )
            kind = m.lastgroup or ""
            if kind == "nl":
                line, start = line + 1, m.end()
            elif kind != "ws":
                self.toks.append((kind, m.group(), line, pos - start + 1))
            pos = m.end()
        self.i = 0
        self.depth = 0

    def enter(self, what: str) -> None:
        """One level deeper into a region or a tuple; refused past :data:`MAX_NESTING`."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            line = self.peek()[2]
            raise ParseError(
                f"[ir.parse] line {line}: {what} nested more than {MAX_NESTING} deep; the program text is damaged "
                "or forged (no traced program nests this deep)"
            )

    def peek(self) -> tuple[str, str, int, int]:
        return self.toks[self.i] if self.i < len(self.toks) else ("eof", "", -1, -1)

    def next(self) -> tuple[str, str, int, int]:
        t = self.peek()
        if t[0] == "eof":
            raise ParseError("[ir.parse] the text ends early (truncated?); expected more of the program")
        self.i += 1
        return t

    def error(self, what: str) -> ParseError:
        kind, text, line, col = self.peek()
        if kind == "eof":
            return ParseError(f"[ir.parse] the text ends early (truncated?) where {what} was expected")
        return ParseError(f"[ir.parse] line {line}, column {col}: expected {what}, got {text!r}")

    def expect(self, text: str) -> None:
        if self.peek()[1] != text or self.peek()[0] == "string":
            raise self.error(repr(text))
        self.i += 1

    def accept(self, text: str) -> bool:
        if self.peek()[1] == text and self.peek()[0] != "string":
            self.i += 1
            return True
        return False

    def kind(self, kind: str, what: str) -> str:
        if self.peek()[0] != kind:
            raise self.error(what)
        return self.next()[1]


# -- parsing --------------------------------------------------------------------------------
def _dtype(name: str, toks: _Tokens) -> np.dtype:
    try:
        return _dt.as_dtype(name, "ir.parse")
    except Exception:  # noqa: BLE001 — reported as a parse error with the position
        toks.i -= 1
        raise toks.error("a dtype (float32, int64, bool, ...)") from None


def _monomial(toks: _Tokens, first: str) -> str:
    """``first`` and the ``*name`` factors after it (``b*t``)."""
    names = [first]
    while toks.accept("*"):
        names.append(toks.kind("ident", "a symbol name after '*'"))
    return "*".join(names)


def _parse_dim(toks: _Tokens) -> int | SymDim:
    terms: dict[str, int] = {}
    const = 0
    sign = 1
    first = True
    while True:
        kind, text, *_ = toks.peek()
        if kind == "number" and "." not in text and "e" not in text.lower():
            toks.next()
            n = sign * int(text)
            if toks.accept("*"):
                sym = _monomial(toks, toks.kind("ident", "a symbol name after '*'"))
                terms[sym] = terms.get(sym, 0) + n
            else:
                const += n
        elif kind == "ident" and text.lstrip("-").isidentifier() and "." not in text:
            toks.next()
            s = -1 if text.startswith("-") else 1
            nm = _monomial(toks, text.lstrip("-"))
            terms[nm] = terms.get(nm, 0) + sign * s
        else:
            raise toks.error("a dimension (an int, -1, or a symbol expression like s0 or 4*s0+1)")
        first = False
        nk, nt, *_ = toks.peek()
        if nt == "+" and nk == "punct":
            toks.next()
            sign = 1
        elif nk == "number" and nt.startswith("-") and not first:  # '4*s0-3' tokenizes '-3'
            sign = 1
        elif nk == "ident" and nt.startswith("-"):  # 's0-s1'
            sign = 1
        else:
            break
    return SymDim.make(terms, const)


def parse_type(toks: _Tokens) -> TensorType:
    if toks.kind("ident", "a type (tensor<...>)") != "tensor":
        toks.i -= 1
        raise toks.error("'tensor'")
    toks.expect("<")
    toks.expect("[")
    dims = []
    if not toks.accept("]"):
        while True:
            dims.append(_parse_dim(toks))
            if toks.accept("]"):
                break
            toks.expect(",")
    toks.expect(",")
    dtype = _dtype(toks.kind("ident", "a dtype"), toks)
    toks.expect(",")
    dev = toks.kind("ident", "a device name")
    if toks.accept(":"):
        dev += ":" + toks.kind("number", "a device index")
    toks.expect(">")
    return TensorType(tuple(dims), dtype, dev)


def parse_attr(toks: _Tokens) -> Any:
    kind, text, *_ = toks.peek()
    if kind == "number":
        toks.next()
        return float(text) if any(c in text for c in ".eE") else int(text)
    if kind == "string":
        toks.next()
        try:
            return json.loads(text)  # a JSON string literal: data, never code
        except ValueError as exc:
            toks.i -= 1
            raise toks.error(f"a string literal (JSON-quoted; {exc.args[0] if exc.args else exc})") from None
    if text == "(" and kind == "punct":
        toks.next()
        toks.enter("attribute tuples")
        items: list[Any] = []
        if not toks.accept(")"):
            while True:
                items.append(parse_attr(toks))
                if toks.accept(")"):
                    break
                toks.expect(",")
                if toks.accept(")"):
                    break
        toks.depth -= 1
        return tuple(items)
    if kind == "ident":
        toks.next()
        fixed = {
            "true": True,
            "false": False,
            "none": None,
            "nan": math.nan,
            "inf": math.inf,
            "-inf": -math.inf,
        }
        if text in fixed:
            return fixed[text]
        if text == "sym":
            toks.expect("<")
            d = _parse_dim(toks)
            toks.expect(">")
            return d if isinstance(d, SymDim) else SymDim.make({}, d)
        return _dtype(text, toks)
    raise toks.error("an attribute value")


def parse_program(text: str) -> Program:
    """Parse the text form (see the module docstring) into a :class:`Program`."""
    toks = _Tokens(text)
    if toks.kind("ident", "'module'") != "module":
        toks.i -= 1
        raise toks.error("'module'")
    prog = Program(toks.kind("symbol", "the program name (@name)")[1:])
    env: dict[str, Value] = {}

    def define(name: str, v: Value, where: tuple[str, str, int, int]) -> None:
        if name in env:
            raise ParseError(f"[ir.parse] line {where[2]}: value {name} is defined twice (SSA: once only)")
        env[name] = v

    toks.expect("(")
    if not toks.accept(")"):
        while True:
            at = toks.peek()
            name = toks.kind("value", "an argument (%n)")
            toks.expect(":")
            define(name, prog.block.add_argument(parse_type(toks)), at)
            if toks.accept(")"):
                break
            toks.expect(",")
    toks.expect("->")
    toks.expect("(")
    out_types = []
    if not toks.accept(")"):
        while True:
            out_types.append(parse_type(toks))
            if toks.accept(")"):
                break
            toks.expect(",")
    toks.expect("{")
    _parse_ops(toks, prog.block, env, set(env))
    if toks.peek()[0] != "eof":
        raise toks.error("the end of the program")
    got = [v.type for v in prog.outputs]
    if got != out_types:
        raise ParseError(
            f"[ir.parse] the signature of @{prog.name} declares outputs {[print_type(t) for t in out_types]} "
            f"but builtin.return gives {[print_type(t) for t in got]}"
        )
    return prog


def _is_attr_dict(toks: _Tokens) -> bool:
    """At ``{``: an attribute dict (``{name = ...``) rather than a region."""
    i = toks.i
    return (
        i + 2 < len(toks.toks)
        and toks.toks[i + 1][0] == "ident"
        and toks.toks[i + 2][1] == "="
        and toks.toks[i + 2][0] == "punct"
    )


def _parse_ops(toks: _Tokens, block: Block, env: dict[str, Value], seen: set[str]) -> None:
    """The operations of ``block`` up to its closing ``}`` (consumed). ``env`` holds the names
    visible here; ``seen`` every name defined so far (SSA: once only). Values a nested region
    defines go out of scope at its end."""

    def define(name: str, v: Value, where: tuple[str, str, int, int], scope: dict[str, Value]) -> None:
        if name in seen:
            raise ParseError(f"[ir.parse] line {where[2]}: value {name} is defined twice (SSA: once only)")
        seen.add(name)
        scope[name] = v

    while not toks.accept("}"):
        at = toks.peek()
        lhs: list[str] = []
        if at[0] == "value":
            while True:
                lhs.append(toks.kind("value", "a result (%n)"))
                if toks.accept("="):
                    break
                toks.expect(",")
        opname = toks.kind("ident", "an operation name")
        try:
            lookup(opname)
        except IRError as exc:
            raise ParseError(f"[ir.parse] line {at[2]}: {exc}") from None
        operands: list[Value] = []
        if toks.accept("("):
            if not toks.accept(")"):
                while True:
                    ref = toks.peek()
                    vname = toks.kind("value", "an operand (%n)")
                    if vname not in env:
                        raise ParseError(
                            f"[ir.parse] line {ref[2]}: operand {vname} of {opname} is not defined before it "
                            f"is used (or is defined inside a region that has ended)"
                        )
                    operands.append(env[vname])
                    if toks.accept(")"):
                        break
                    toks.expect(",")
        attrs: dict[str, Any] = {}
        if toks.peek()[1] == "{" and _is_attr_dict(toks):
            toks.expect("{")
            while True:
                key = toks.kind("ident", "an attribute name")
                toks.expect("=")
                attrs[key] = parse_attr(toks)
                if toks.accept("}"):
                    break
                toks.expect(",")
        types: list[Type] = []
        if lhs:
            toks.expect(":")
            while True:
                types.append(parse_type(toks))
                if not toks.accept(","):
                    break
            if len(types) != len(lhs):
                raise ParseError(
                    f"[ir.parse] line {at[2]}: {opname} defines {len(lhs)} values but gives {len(types)} types"
                )
        regions: list[Region] = []
        while toks.peek()[1] == "{" and toks.peek()[0] == "punct":
            toks.next()
            toks.enter("regions")
            blk = Block()
            scope = dict(env)
            if toks.accept("^"):
                if toks.kind("ident", "a block label (bb0)") != "bb0":
                    toks.i -= 1
                    raise toks.error("the block label 'bb0'")
                toks.expect("(")
                if not toks.accept(")"):
                    while True:
                        a = toks.peek()
                        n = toks.kind("value", "a block argument (%n)")
                        toks.expect(":")
                        define(n, blk.add_argument(parse_type(toks)), a, scope)
                        if toks.accept(")"):
                            break
                        toks.expect(",")
                toks.expect(":")
            _parse_ops(toks, blk, scope, seen)
            toks.depth -= 1
            regions.append(Region([blk]))
        op = block.append_op(Operation(opname, operands, types, attrs, regions))
        for n, r in zip(lhs, op.results):
            define(n, r, at, env)
