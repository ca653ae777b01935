"""Symbolic dims by probing: one program for every size of a dynamic dim.

Tracing runs with concrete shapes (shape rules are Python on ints). To learn which dims and
attributes follow a dynamic input dim, the function is traced with the symbols at probe
values: once with all at ``BASE``, once per symbol with only it at ``STEP``, and once with all
at distinct ``CHECK`` values. Where the traces agree, a value is static; where an int differs,
it is fitted as an affine expression ``const + sum(coef * symbol)`` (``b``, ``4*b``,
``b*t`` would not fit) and the fit is checked on the last trace. Traces that differ in
structure (a Python branch on a size), or values that are not affine, raise
:class:`NotAffine`: the caller then specialises those dims (one program per size).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir import Program, SymDim, TensorType, Value

BASE = 11
STEP = 13
#: the checking trace gives symbol i the value CHECK + 2 * i (distinct primes for the first few)
CHECK = 17


class NotAffine(Exception):
    """The traces do not agree up to affine dims (the message says where)."""


def probe_bindings(symbols: Sequence[str]) -> list[dict[str, int]]:
    """The bindings to trace with: base, one per symbol, check."""
    out = [dict.fromkeys(symbols, BASE)]
    for s in symbols:
        b = dict.fromkeys(symbols, BASE)
        b[s] = STEP
        out.append(b)
    out.append({s: CHECK + 2 * i for i, s in enumerate(symbols)})
    return out


def _fit(name: str, vals: list[int], symbols: Sequence[str], check: dict[str, int]) -> int | SymDim:
    base = vals[0]
    if all(v == base for v in vals):
        return base
    coefs = {}
    for s, v in zip(symbols, vals[1:-1]):
        c, r = divmod(v - base, STEP - BASE)
        if r:
            raise NotAffine(
                f"{name} is {base} at {BASE} and {v} at {STEP}: not an integer multiple of {symbols}"
            )
        coefs[s] = c
    const = base - sum(c * BASE for c in coefs.values())
    d = SymDim.make(coefs, const)
    got = d.evaluate(check) if isinstance(d, SymDim) else d
    if got != vals[-1]:
        raise NotAffine(
            f"{name} fits {d} but is {vals[-1]} (not {got}) at {check}: not affine in the dynamic dims"
        )
    return d


def _attr(name: str, vals: list[Any], symbols: Sequence[str], check: dict[str, int]) -> Any:
    first = vals[0]
    if isinstance(first, tuple):
        if any(not isinstance(v, tuple) or len(v) != len(first) for v in vals):
            raise NotAffine(f"{name} changes length with the dynamic dims")
        return tuple(_attr(f"{name}[{i}]", [v[i] for v in vals], symbols, check) for i in range(len(first)))
    if isinstance(first, int) and not isinstance(first, bool):
        if any(type(v) is not type(first) for v in vals):
            raise NotAffine(f"{name} changes kind with the dynamic dims")
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


def _values(p: Program) -> list[Value]:
    return p.values()  # nested regions' results and block arguments included


def generalize(
    programs: Sequence[Program], constants: Sequence[dict[str, Any]], symbols: Sequence[str]
) -> Program:
    """The first program with every dim and int attribute that follows the symbols replaced
    by its affine expression (``programs`` were traced at :func:`probe_bindings`)."""
    check = probe_bindings(symbols)[-1]
    first = programs[0]
    ops = [list(p.walk()) for p in programs]
    if any(len(o) != len(ops[0]) for o in ops):
        raise NotAffine(
            f"the traces have {sorted({len(o) for o in ops})} ops: the function's structure depends on a dynamic size"
        )
    index = [{v: i for i, v in enumerate(_values(p))} for p in programs]
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
            op0.attrs[key] = _attr(
                f"{where} attribute '{key}'", [o.attrs[key] for o in group], symbols, check
            )
    vals = [_values(p) for p in programs]
    for i, v0 in enumerate(vals[0]):
        types = [vs[i].type for vs in vals]
        t0 = types[0]
        assert isinstance(t0, TensorType)
        if any(t.dtype != t0.dtype or len(t.shape) != len(t0.shape) for t in types):
            raise NotAffine(f"value {i} changes dtype or rank between traces")
        shape = tuple(
            _fit(f"dim {j} of value {i}", [t.shape[j] for t in types], symbols, check)
            for j in range(len(t0.shape))
        )
        v0.type = TensorType(shape, t0.dtype, t0.device)
    return first
