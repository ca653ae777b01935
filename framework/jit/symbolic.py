"""Symbolic dims by probing: one program for every size of a dynamic dim.

Tracing runs with concrete shapes (shape rules are Python on ints). To learn which dims and
attributes follow a dynamic input dim, the function is traced with the symbols at probe
values: once with all at ``BASE``, once for each set of up to :func:`max_degree` symbols with
only those at ``STEP``, and once with all at distinct ``CHECK`` values. Where the traces agree,
a value is static; where an int differs, it is fitted as a polynomial with integer
coefficients whose monomials have distinct symbols (``b``, ``4*b+1``, ``b*t``, ``8*b*t+b``;
not ``b*b`` or ``b//2``) by Möbius inversion over the probe sets, and the fit is checked on the
last trace.

A scalar constant that follows the dims (``mean``'s ``1/numel``, an unbiased variance's
``1/(n-1)``, ``float(b)``, an int ``b`` that wraps a negative index) is fitted as ``P`` or ``1/P`` for such a polynomial ``P`` and
rebuilt in the program from the run's sizes (the count of a ``full`` of ones of ``P``
elements), so ``x - x.mean()`` and ``if x.mean() > 0`` serve every size.

Traces that differ in structure (a Python branch on a size), or values that fit none of these,
raise :class:`NotAffine` naming the op and the dim or attribute: the caller then specialises
(one program per size).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ..ir import Operation, Program, SymDim, TensorType, Value

BASE = 11
STEP = 13
#: the checking trace gives symbol i the value CHECK + 2 * i (distinct primes for the first few)
CHECK = 17


class NotAffine(Exception):
    """The traces do not agree up to polynomial dims (the message says where)."""


def max_degree(n_symbols: int) -> int:
    """The highest degree of a monomial the probes can fit: products of up to three symbols
    (``b*h*w``) with up to three symbols, of two with more (the probes grow as ``n**degree``)."""
    return min(n_symbols, 3 if n_symbols <= 3 else 2)


def _subsets(symbols: Sequence[str]) -> list[tuple[str, ...]]:
    """The probe sets, by size: (), then each symbol, then each pair..."""
    return [c for k in range(max_degree(len(symbols)) + 1) for c in itertools.combinations(symbols, k)]


def probe_bindings(symbols: Sequence[str]) -> list[dict[str, int]]:
    """The bindings to trace with: base, one per probe set (its symbols at STEP), check."""
    out = []
    for sub in _subsets(symbols):
        b = dict.fromkeys(symbols, BASE)
        b.update(dict.fromkeys(sub, STEP))
        out.append(b)
    out.append({s: CHECK + 2 * i for i, s in enumerate(symbols)})
    return out


def _where(symbols: Sequence[str]) -> str:
    return f"the dynamic dims {', '.join(symbols)}"


def _poly(name: str, vals: Sequence[int], symbols: Sequence[str]) -> int | SymDim:
    """The polynomial through ``vals`` (one per probe set, the check value left out)."""
    subs = _subsets(symbols)
    f = dict(zip(subs, vals))
    d = STEP - BASE
    coef: dict[tuple[str, ...], int] = {}
    for sub in sorted(subs, key=len, reverse=True):
        # Möbius difference over the subsets of `sub`: d**|sub| * sum_{S >= sub} c_S B**(|S|-|sub|)
        g = sum(
            (-1) ** (len(sub) - k) * f[u] for k in range(len(sub) + 1) for u in itertools.combinations(sub, k)
        )
        c = Fraction(g, d ** len(sub)) - sum(
            cs * BASE ** (len(s) - len(sub))
            for s, cs in coef.items()
            if len(s) > len(sub) and set(sub) <= set(s)
        )
        if c.denominator != 1:
            raise NotAffine(
                f"{name} is {vals[0]} at {BASE} and {f[sub]} with {', '.join(sub)} at {STEP}: "
                f"not a polynomial with integer coefficients in {_where(symbols)}"
            )
        coef[sub] = int(c)
    const = coef.pop(())
    return SymDim.make({"*".join(s): c for s, c in coef.items()}, const)


def _fit(name: str, vals: list[int], symbols: Sequence[str], check: dict[str, int]) -> int | SymDim:
    base = vals[0]
    if all(v == base for v in vals):
        return base
    d = _poly(name, vals[:-1], symbols)
    got = d.evaluate(check) if isinstance(d, SymDim) else d
    if got != vals[-1]:
        raise NotAffine(
            f"{name} fits {d} but is {vals[-1]} (not {got}) at {check}: not a polynomial in "
            f"{_where(symbols)} (a product of a symbol with itself, an integer division?)"
        )
    return d


def _attr(name: str, vals: list[Any], symbols: Sequence[str], check: dict[str, int]) -> Any:
    first = vals[0]
    if isinstance(first, tuple):
        if any(not isinstance(v, tuple) or len(v) != len(first) for v in vals):
            raise NotAffine(f"{name} changes length with {_where(symbols)}")
        return tuple(_attr(f"{name}[{i}]", [v[i] for v in vals], symbols, check) for i in range(len(first)))
    if isinstance(first, int) and not isinstance(first, bool):
        if any(type(v) is not type(first) for v in vals):
            raise NotAffine(f"{name} changes kind with {_where(symbols)}")
        d = _fit(name, list(vals), symbols, check)
        return d
    same = all(
        type(v) is type(first)
        and (v == first or (isinstance(v, float) and math.isnan(v) and math.isnan(first)))
        for v in vals
    )
    if not same:
        raise NotAffine(f"{name} is {vals[0]!r} in one trace and {vals[1:]!r} in others")
    return first


def _scalar(name: str, vals: list[Any], symbols: Sequence[str], check: dict[str, int]) -> tuple[SymDim, int]:
    """A float constant that follows the dims: ``(P, 1)`` for ``P`` or ``(P, -1)`` for ``1/P``."""
    if all(isinstance(v, float) and math.isfinite(v) and v for v in vals):
        for exp in (1, -1):
            r = [v if exp == 1 else 1.0 / v for v in vals]
            ints = [round(x) for x in r]
            if any(abs(x - i) > 1e-3 * max(1.0, abs(x)) for x, i in zip(r, ints)):
                continue
            try:
                p = _fit(name, ints, symbols, check)
            except NotAffine:
                continue
            if isinstance(p, SymDim):
                return p, exp
    raise NotAffine(
        f"{name} is {vals[0]!r} in one trace and {vals[1:]!r} in others: a constant that depends on "
        f"{_where(symbols)} and is neither a polynomial P of them nor 1/P"
    )


def _values(p: Program) -> list[Value]:
    return p.values()  # nested regions' results and block arguments included


def _rebuild_scalar(op: Operation, p: SymDim, exp: int) -> tuple[int, int]:
    """Replace the constant ``op`` by ``P`` (or ``1/P``) counted at run time: the sum of a
    ``full`` of ``P`` ones (exact in float32 below 2**24 elements)."""
    ty = op.result.type
    assert isinstance(ty, TensorType) and op.parent is not None
    cdt = ty.dtype if ty.dtype in (np.dtype("float32"), np.dtype("float64")) else np.dtype("float32")
    at = op.parent.ops.index(op)
    new: list[Operation] = []

    def add(name: str, ins: list[Value], t: TensorType, attrs: dict[str, Any]) -> Value:
        o = Operation(name, ins, [t], attrs)
        new.append(o)
        return o.result

    ones = add("op.full", [], TensorType((p,), cdt, ty.device), {"dtype": cdt, "shape": (p,), "value": 1.0})
    n = add("op.sum", [ones], TensorType((), cdt, ty.device), {"axes": (0,), "keepdim": False})
    if exp == -1:
        one = add("builtin.constant", [], TensorType(ty.shape, cdt, ty.device), {"value": 1.0})
        n = add("op.div", [one, n], TensorType(ty.shape, cdt, ty.device), {})
    elif ty.shape != ():
        n = add("op.reshape", [n], TensorType(ty.shape, cdt, ty.device), {"shape": ty.shape})
    if cdt != ty.dtype:
        n = add("op.cast", [n], ty, {"dtype": ty.dtype})
    for k, o in enumerate(new):
        op.parent.insert_op(at + k, o)
    op.result.replace_all_uses_with(n)
    op.erase()
    return at, len(new) - 1


def generalize(
    programs: Sequence[Program],
    constants: Sequence[dict[str, Any]],
    symbols: Sequence[str],
    cut: int | None = None,
) -> tuple[Program, int | None]:
    """The first program with every dim and int attribute that follows the symbols replaced
    by its polynomial, and every scalar constant that follows them computed from them
    (``programs`` were traced at :func:`probe_bindings`); and ``cut`` (a position in its top
    block: where the backward starts) moved past the ops added before it."""
    check = probe_bindings(symbols)[-1]
    first = programs[0]
    ops = [list(p.walk()) for p in programs]
    if any(len(o) != len(ops[0]) for o in ops):
        raise NotAffine(
            f"the traces have {sorted({len(o) for o in ops})} ops: the function's structure depends on a dynamic size"
        )
    index = [{v: i for i, v in enumerate(_values(p))} for p in programs]
    scalars: list[tuple[Operation, SymDim, int]] = []
    for k in range(len(ops[0])):
        group = [o[k] for o in ops]
        op0 = group[0]
        where = f"op #{k} '{op0.name}'"
        if any(
            o.name != op0.name
            or set(o.attrs) != set(op0.attrs)
            or len(o.results) != len(op0.results)
            or [len(b.args) for r in o.regions for b in r.blocks]
            != [len(b.args) for r in op0.regions for b in r.blocks]
            for o in group
        ):
            raise NotAffine(
                f"{where} differs between traces: the function's structure depends on a dynamic size"
            )
        if any(
            [ix[v] for v in o.operands] != [index[0][v] for v in op0.operands] for o, ix in zip(group, index)
        ):
            raise NotAffine(f"{where} reads different values in different traces")
        if op0.name == "builtin.constant" and "name" in op0.attrs:
            arrs = [np.asarray(c[o.attrs["name"]].numpy()) for c, o in zip(constants, group)]
            if any(a.shape != arrs[0].shape or not np.array_equal(a, arrs[0], equal_nan=True) for a in arrs):
                raise NotAffine(
                    f"{where}: a constant tensor depends on a dynamic size (arange over a dynamic dim?)"
                )
        for key in op0.attrs:
            vals = [o.attrs[key] for o in group]
            if op0.name == "builtin.constant" and key == "value" and any(v != vals[0] for v in vals):
                if isinstance(vals[0], float):
                    p, exp = _scalar(f"{where} (a scalar constant)", vals, symbols, check)
                    scalars.append((op0, p, exp))
                    continue
                if isinstance(vals[0], int) and not isinstance(vals[0], bool):
                    # an int that follows the dims (``index + n`` wrapping a negative index
                    # along a dynamic axis): P itself, counted at run time
                    p = _fit(f"{where} (a scalar constant)", list(vals), symbols, check)
                    if isinstance(p, SymDim):
                        scalars.append((op0, p, 1))
                        continue
            op0.attrs[key] = _attr(f"{where} attribute '{key}'", vals, symbols, check)
    vals = [_values(p) for p in programs]
    for i, v0 in enumerate(vals[0]):
        types = [vs[i].type for vs in vals]
        t0 = types[0]
        assert isinstance(t0, TensorType)
        if any(t.dtype != t0.dtype or len(t.shape) != len(t0.shape) for t in types):
            raise NotAffine(f"value {i} changes dtype or rank between traces")
        where = f"value {i}" + (
            f" (a result of '{v0.defining_op.name}')" if v0.defining_op is not None else ""
        )
        shape = tuple(
            _fit(f"dim {j} of {where}", [t.shape[j] for t in types], symbols, check)
            for j in range(len(t0.shape))
        )
        v0.type = TensorType(shape, t0.dtype, t0.device)
    for op, p, exp in scalars:
        top = op.parent is first.block
        at, grown = _rebuild_scalar(op, p, exp)
        if cut is not None and top and at < cut:
            cut += grown
    return first, cut
