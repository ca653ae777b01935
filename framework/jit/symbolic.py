"""Symbolic dims by probing: one program for every size of a dynamic dim.

Tracing runs with concrete shapes (shape rules are Python on ints). To learn which dims and
attributes follow a dynamic input dim, the function is traced with the symbols at probe
values (a :class:`Probe`): once with all at ``base``, once for each set of up to
:func:`max_degree` symbols with only those at ``step``, and once with all at distinct ``check``
values. Where the traces agree, a value is static; where an int differs, it is fitted as a
polynomial with integer coefficients whose monomials have distinct symbols (``b``,
``4*b+1``, ``b*t``, ``8*b*t+b``) by Möbius inversion over the probe sets, and the fit is
checked on the last trace. The default probe's base and step are odd and its check sizes even,
so a value that depends on parity (``2*(b//2)``, ``b%2``) fails the check rather than passing
as ``b-1`` or ``1``. Where that fit fails, the polynomials the traced Python computed from the
sizes (``n*n``: :mod:`framework.jit.size_guards` records them) are tried as ``P + c*hint``.

A scalar constant that follows the dims (``mean``'s ``1/numel``, an unbiased variance's
``1/(n-1)``, ``float(b)``, an int ``b`` that wraps a negative index) is fitted as ``P`` or
``1/P`` for such a polynomial ``P`` and rebuilt in the program from the run's sizes (the count
of a ``full`` of ones of ``P`` elements), so ``x - x.mean()`` and ``if x.mean() > 0`` serve
every size. A constant tensor that is an arange of a fitted length (``arange(t)``, made eagerly
while traced) becomes ``op.arange`` of that length.

A size divided by a constant (``b // 2``, ``b % 3``) is a derived symbol (``b__div2``,
``b__mod3``: :func:`framework.ir.core.derived`) that the hints bring in the same way; a fit
through a hint is checked on one more trace (:func:`validation_binding`), since solving for
its coefficient uses up the check.

Traces that differ in structure, or values that fit none of these (``(b*t)//2``), raise
:class:`NotAffine` naming the op and the dim or attribute: the caller then specialises (one
program per size). Python branches on a size are guards (:mod:`framework.jit.size_guards`);
:func:`probe_for` finds probe sizes that all take the branches a call takes.
"""

from __future__ import annotations

import contextvars
import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from ..ir import Operation, Program, SymDim, TensorType, Value

BASE = 11
STEP = 13
#: the checking trace gives symbol i the value CHECK + 2 * i: even, where BASE and STEP are odd,
#: so a value that depends on parity (``2 * (b // 2)``, ``b % 2``) fails its check instead of
#: passing as ``b - 1`` or ``1``
CHECK = 22
VALIDATE = 30


class Probe(NamedTuple):
    """The sizes the symbols are traced at: every symbol at ``base``; each probe set's at
    ``step``; symbol ``i`` at ``check + 2 * i`` for the checking trace."""

    base: int = BASE
    step: int = STEP
    check: int = CHECK


DEFAULT_PROBE = Probe()


#: the probe of the traces being generalised
_PROBE: contextvars.ContextVar[Probe] = contextvars.ContextVar("oarlock_probe", default=DEFAULT_PROBE)
#: every binding the traces were made at (probe sets, check, and the validation if any)
_BINDINGS: contextvars.ContextVar[tuple[dict[str, int], ...]] = contextvars.ContextVar(
    "oarlock_bindings", default=()
)
#: polynomials of the sizes the traced Python computed (``n * n``): tried where a fit fails
_HINTS: contextvars.ContextVar[tuple[SymDim, ...]] = contextvars.ContextVar("oarlock_hints", default=())


class NotAffine(Exception):
    """The traces do not agree up to polynomial dims (the message says where)."""


def max_degree(n_symbols: int) -> int:
    """The highest degree of a monomial the probes can fit: products of up to three symbols
    (``b*h*w``) with up to three symbols, of two with more (the probes grow as ``n**degree``)."""
    return min(n_symbols, 3 if n_symbols <= 3 else 2)


def _subsets(symbols: Sequence[str]) -> list[tuple[str, ...]]:
    """The probe sets, by size: (), then each symbol, then each pair..."""
    return [c for k in range(max_degree(len(symbols)) + 1) for c in itertools.combinations(symbols, k)]


def probe_bindings(
    symbols: Sequence[str], probe: Probe = DEFAULT_PROBE, validate: bool = False
) -> list[dict[str, int]]:
    """The bindings to trace with: base, one per probe set (its symbols at step), check; with
    ``validate`` two more, :func:`validation_bindings` (where fitting uses hints)."""
    out = []
    for sub in _subsets(symbols):
        b = dict.fromkeys(symbols, probe.base)
        b.update(dict.fromkeys(sub, probe.step))
        out.append(b)
    out.append({s: probe.check + 2 * i for i, s in enumerate(symbols)})
    if validate:
        out += validation_bindings(symbols, probe)
    return out


def validation_bindings(symbols: Sequence[str], probe: Probe = DEFAULT_PROBE) -> list[dict[str, int]]:
    """Two further traces where the traced Python computed sizes the probes cannot fit alone
    (``n * n``, ``b // 2``): a fit through a hint solves its unknowns from the check and
    these, so each is checked on what is left (sizes 30, 32, ... then 36, 38, ...: even
    unlike the probes, multiples of 3 where the probes are not, and 30 and 36 differ from 22
    and each other mod 4 and 5). A probe chosen for a branch goes on by its step, keeping the
    parity its guards may need."""
    if probe == DEFAULT_PROBE:
        bases = [VALIDATE, VALIDATE + 6]
    else:
        d = probe.step - probe.base
        bases = [probe.check + d, probe.check + 2 * d]
    return [{s: base + 2 * i for i, s in enumerate(symbols)} for base in bases]


def probe_for(
    symbols: Sequence[str], guards: Sequence[Any], binding: dict[str, int], avoid: Sequence[int] = ()
) -> Probe | None:
    """A probe whose every binding decides ``guards`` (``framework.jit.size_guards``) as
    ``binding`` does, so its traces take the branches a call at ``binding`` takes, and whose
    sizes are none of ``avoid`` where one can be found (the static dims: a size equal to one
    can change what the framework does; the probes then disagree and the caller specialises); None when no probe of small sizes does (``if b == 5``: only 5 does)."""
    want = [g.truth(binding) for g in guards]
    # sizes clear of the static dims (and of 1) first; a validation trace that agrees too first
    for strict, validate in ((True, True), (True, False), (False, True), (False, False)):
        for base in [*range(2 if strict else 1, 64), *(2**k + 3 for k in range(6, 20))]:
            for d in (2, 1):
                p = Probe(base, base + d, base + 2 * d)
                bs = probe_bindings(symbols, p, validate)
                if strict and any(v in avoid for b in bs for v in b.values()):
                    continue
                if all([g.truth(b) for g in guards] == want for b in bs):
                    return p
    return None


def _where(symbols: Sequence[str]) -> str:
    return f"the dynamic dims {', '.join(symbols)}"


def _mobius(vals: Sequence[Any], symbols: Sequence[str], probe: Probe) -> dict[tuple[str, ...], Any]:
    """The coefficients (ints or Fractions) of the multilinear polynomial through ``vals``
    (one per probe set)."""
    subs = _subsets(symbols)
    f = dict(zip(subs, vals))
    d = probe.step - probe.base
    coef: dict[tuple[str, ...], Any] = {}
    for sub in sorted(subs, key=len, reverse=True):
        # Möbius difference over the subsets of `sub`: d**|sub| * sum_{S >= sub} c_S B**(|S|-|sub|)
        g = sum(
            (-1) ** (len(sub) - k) * f[u] for k in range(len(sub) + 1) for u in itertools.combinations(sub, k)
        )
        acc = sum(
            cs * probe.base ** (len(s) - len(sub))
            for s, cs in coef.items()
            if len(s) > len(sub) and set(sub) <= set(s)
        )
        dk = d ** len(sub)
        # ints while the divisions are exact (Fractions cost ~10x on this path of every trace)
        coef[sub] = (
            g // dk - acc if type(acc) is int and type(g) is int and g % dk == 0 else Fraction(g, dk) - acc
        )
    return coef


def _at(coef: dict[tuple[str, ...], Fraction], binding: dict[str, int]) -> Fraction:
    return sum((c * math.prod(binding[s] for s in m) for m, c in coef.items()), Fraction(0))


def _symdim(coef: dict[tuple[str, ...], Any]) -> int | SymDim:
    const = coef.get((), 0)
    return SymDim.make({"*".join(m): int(c) for m, c in coef.items() if m}, int(const))


def _poly(name: str, vals: Sequence[int], symbols: Sequence[str], probe: Probe) -> int | SymDim:
    """The polynomial through ``vals`` (one per probe set, the check value left out)."""
    coef = _mobius(vals, symbols, probe)
    for sub, c in coef.items():
        if c.denominator != 1:
            raise NotAffine(
                f"{name} is {vals[0]} at {probe.base} and not an integer polynomial with "
                f"{', '.join(sub) or 'no symbol'} at {probe.step}: not a polynomial with integer "
                f"coefficients in {_where(symbols)}"
            )
    return _symdim(coef)


def _with_hint(
    vals: list[int], symbols: Sequence[str], hint: SymDim, probe: Probe, bindings: Sequence[dict[str, int]]
) -> int | SymDim | None:
    """``P + hint * Q`` through ``vals`` (one per binding: the probe sets', the check's, the
    validations'), ``P`` multilinear with integer coefficients and ``Q`` an integer constant
    or ``c + d * s`` for a symbol ``s`` the hint does not read (``16 * t * (b // 2)``), or
    None. ``hint`` is a polynomial the function's Python computed from the sizes (``n * n``,
    ``b // 2``) that the probes alone cannot fit. ``Q`` is solved from the first bindings
    past the probe sets; the result must hold at every binding."""
    n = len(_subsets(symbols))
    others = [s for s in symbols if s not in hint.symbols]
    mv = _mobius(vals[:n], symbols, probe)
    extra = list(zip(bindings[n:], vals[n:]))
    for q in [[()]] + [[(), (s,)] for s in others]:
        if len(extra) <= len(q):
            continue  # no binding left to check the solution on
        # the column of each unknown of Q: hint * m at the extra bindings, less its multilinear fit
        cols = []
        for m in q:
            hm = [hint.evaluate(b) * math.prod(b[x] for x in m) for b in bindings]
            mh = _mobius(hm[:n], symbols, probe)
            cols.append([Fraction(hm[n + k]) - _at(mh, b) for k, (b, _) in enumerate(extra)])
        rhs = [Fraction(v) - _at(mv, b) for b, v in extra]
        for rows in itertools.combinations(range(len(extra)), len(q)):  # a solvable choice
            coef = _solve([[c[k] for c in cols] for k in rows], [rhs[k] for k in rows])
            if coef is None:
                continue
            if any(c.denominator != 1 for c in coef) or not any(coef):
                break
            got = _combine(mv, hint, q, coef, symbols, probe, bindings, n)
            if got is not None and all(
                (got.evaluate(b) if isinstance(got, SymDim) else got) == v for b, v in zip(bindings, vals)
            ):
                return got
            break
    return None


def _solve(rows: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction] | None:
    """The solution of the square system ``rows @ x = rhs`` (Gauss-Jordan), None if singular."""
    m = [r[:] + [b] for r, b in zip(rows, rhs)]
    k = len(m)
    for i in range(k):
        p = next((j for j in range(i, k) if m[j][i] != 0), None)
        if p is None:
            return None
        m[i], m[p] = m[p], m[i]
        for j in range(k):
            if j != i and m[j][i] != 0:
                f = m[j][i] / m[i][i]
                m[j] = [a - f * b for a, b in zip(m[j], m[i])]
    return [m[i][k] / m[i][i] for i in range(k)]


def _combine(
    mv: dict[tuple[str, ...], Fraction],
    hint: SymDim,
    q: list[tuple[str, ...]],
    coef: list[Fraction],
    symbols: Sequence[str],
    probe: Probe,
    bindings: Sequence[dict[str, int]],
    n: int,
) -> int | SymDim | None:
    """``P + hint * Q`` as a SymDim: ``P`` the multilinear fit of ``vals - hint * Q``."""
    rest = dict(mv)
    terms: dict[str, int] = {}
    for m, c in zip(q, coef):
        hm = [hint.evaluate(b) * math.prod(b[x] for x in m) for b in bindings[:n]]
        for mono, k in _mobius(hm, symbols, probe).items():
            rest[mono] = rest.get(mono, Fraction(0)) - c * k
        for t, k in hint.terms:  # hint * m, term by term
            name = "*".join([*t.split("*"), *m])
            terms[name] = terms.get(name, 0) + int(c) * k
        if hint.const:
            name = "*".join(m)
            if name:
                terms[name] = terms.get(name, 0) + int(c) * hint.const
            else:
                rest[()] = rest.get((), Fraction(0)) + c * hint.const
    if any(x.denominator != 1 for x in rest.values()):
        return None
    for mono, k in rest.items():
        if mono:
            terms["*".join(mono)] = terms.get("*".join(mono), 0) + int(k)
    return SymDim.make(terms, int(rest.get((), 0)))


def _fit(name: str, vals: list[int], symbols: Sequence[str], check: dict[str, int]) -> int | SymDim:
    base = vals[0]
    if all(v == base for v in vals):
        return base
    probe, bindings = _PROBE.get(), _BINDINGS.get()
    n = len(_subsets(symbols))
    try:
        d = _poly(name, vals[:n], symbols, probe)
        for b, v in zip(bindings[n:], vals[n:]):
            got = d.evaluate(b) if isinstance(d, SymDim) else d
            if got != v:
                raise NotAffine(
                    f"{name} fits {d} but is {v} (not {got}) at {b}: not a polynomial in "
                    f"{_where(symbols)} (an integer division, a remainder?)"
                )
        return d
    except NotAffine as exc:
        err = exc
    for h in _HINTS.get():
        fitted = _with_hint(vals, symbols, h, probe, bindings)
        if fitted is not None:
            return fitted
    raise err


def _attr(name: str, vals: list[Any], symbols: Sequence[str], check: dict[str, int]) -> Any:
    first = vals[0]
    if isinstance(first, tuple):
        if any(not isinstance(v, tuple) or len(v) != len(first) for v in vals):
            raise NotAffine(f"{name} changes length with {_where(symbols)}")
        return tuple(_attr(f"{name}[{i}]", [v[i] for v in vals], symbols, check) for i in range(len(first)))
    if isinstance(first, int) and not isinstance(first, bool):
        if any(not isinstance(v, int) or isinstance(v, bool) for v in vals):
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


def _arange_fit(
    where: str, arrs: list[np.ndarray], symbols: Sequence[str], check: dict[str, int]
) -> tuple[Any, Any, int | SymDim]:
    """A constant tensor that differs between the traces: ``start + step * i`` over its
    elements in order (``arange(t)``, ``arange(t).unsqueeze(0)``, ``arange(past, past + t)``)
    with ``step`` the same in every trace and the length (and an int ``start``) polynomials of
    the symbols. Returns ``(start, step, length)``; anything else raises :class:`NotAffine`."""
    flats = [a.reshape(-1) for a in arrs]
    if any(a.dtype != arrs[0].dtype or a.dtype.kind not in "iuf" or f.size < 2 for a, f in zip(arrs, flats)):
        raise NotAffine(
            f"{where}: a constant tensor depends on a dynamic size and is not an arange of at least two "
            f"numbers (a tensor made outside the program's ops from a size, e.g. with NumPy?)"
        )
    starts = [f[0].item() for f in flats]
    steps = [(f[1] - f[0]).item() for f in flats]
    for f, s0, st in zip(flats, starts, steps):
        want = s0 + st * np.arange(f.size, dtype=np.float64 if f.dtype.kind == "f" else np.int64)
        if not np.allclose(f, want, rtol=1e-6, atol=1e-6 * abs(st)) or st != steps[0]:
            raise NotAffine(
                f"{where}: a constant tensor depends on a dynamic size and is not an arange with the "
                f"same step in every trace (a tensor made outside the program's ops from a size?)"
            )
    if all(s == starts[0] for s in starts):
        start: Any = starts[0]
    elif all(isinstance(s, int) for s in starts):
        start = _fit(f"{where} (the start of an arange)", list(starts), symbols, check)
    else:
        raise NotAffine(f"{where}: an arange whose float start depends on {_where(symbols)}")
    n = _fit(f"{where} (the length of an arange)", [f.size for f in flats], symbols, check)
    return start, steps[0], n


def _rebuild_arange(op: Operation, start: Any, step: Any, n: int | SymDim) -> tuple[int, int]:
    """Replace the constant ``op`` by ``op.arange`` of ``n`` numbers made at run time
    (reshaped to the constant's type where it has another rank)."""
    ty = op.result.type
    assert isinstance(ty, TensorType) and op.parent is not None
    at = op.parent.ops.index(op)
    kind = int if ty.dtype.kind in "iu" else float
    attrs = {
        "start": start if isinstance(start, SymDim) else kind(start),
        "step": kind(step),
        "dtype": ty.dtype,
    }
    new = [Operation("op.arange", [], [TensorType((n,), ty.dtype, ty.device)], attrs)]
    if len(ty.shape) != 1:
        new.append(Operation("op.reshape", [new[0].result], [ty], {"shape": ty.shape}))
    for k, o in enumerate(new):
        op.parent.insert_op(at + k, o)
    op.result.replace_all_uses_with(new[-1].result)
    op.erase()
    return at, len(new) - 1


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
    probe: Probe = DEFAULT_PROBE,
    hints: Sequence[SymDim] = (),
) -> tuple[Program, int | None]:
    """The first program with every dim and int attribute that follows the symbols replaced
    by its polynomial, and every scalar constant that follows them computed from them
    (``programs`` were traced at :func:`probe_bindings` of ``probe``); and ``cut`` (a position
    in its top block: where the backward starts) moved past the ops added before it."""
    validate = len(programs) > len(_subsets(symbols)) + 2
    bindings = probe_bindings(symbols, probe, validate)
    token, htoken, btoken = _PROBE.set(probe), _HINTS.set(tuple(hints)), _BINDINGS.set(tuple(bindings))
    try:
        return _generalize(programs, constants, symbols, cut, probe)
    finally:
        _PROBE.reset(token)
        _HINTS.reset(htoken)
        _BINDINGS.reset(btoken)


def _generalize(
    programs: Sequence[Program],
    constants: Sequence[dict[str, Any]],
    symbols: Sequence[str],
    cut: int | None,
    probe: Probe,
) -> tuple[Program, int | None]:
    check = probe_bindings(symbols, probe)[-1]
    first = programs[0]
    ops = [list(p.walk()) for p in programs]
    if any(len(o) != len(ops[0]) for o in ops):
        raise NotAffine(
            f"the traces have {sorted({len(o) for o in ops})} ops: the function's structure depends on a dynamic size"
        )
    index = [{v: i for i, v in enumerate(_values(p))} for p in programs]
    scalars: list[tuple[Operation, SymDim, int]] = []
    aranges: list[tuple[Operation, Any, Any, int | SymDim]] = []
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
                aranges.append((op0, *_arange_fit(where, arrs, symbols, check)))
                continue
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
    rebuilt = [(op, lambda o=op, p=p, e=exp: _rebuild_scalar(o, p, e)) for op, p, exp in scalars]
    rebuilt += [(op, lambda o=op, a=a, s=st, n=n: _rebuild_arange(o, a, s, n)) for op, a, st, n in aranges]
    for op, rebuild in rebuilt:
        top = op.parent is first.block
        at, grown = rebuild()
        if cut is not None and top and at < cut:
            cut += grown
    return first, cut
