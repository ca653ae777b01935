"""The op database: for each primitive, sample inputs, the numpy reference and tolerances.

In the spirit of PyTorch's OpInfo. A :class:`Sample` is plain numpy data plus attributes, so it
can be fed to the device and to :mod:`conformance.reference` alike. Samples cover 0-d, empty,
broadcast, large and small magnitudes, NaN/inf where the contract defines the result, and
integer edge values. Each is also run from an offset view (a tensor that starts inside a larger
buffer), which is how kernels meet slices of other tensors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from adapter_api import PRIMITIVES
from adapter_api import primitives as P
from framework.testing import TOLERANCES, Tolerance, tolerance  # noqa: F401  (one table, re-exported)

from . import reference as R

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS, INTS, NUMERIC, ALL = P.FLOATS, P.INTS, P.NUMERIC, P.ALL


def dtype_of(name: str) -> np.dtype:
    return BF16 if name == "bfloat16" else np.dtype(name)


@dataclass
class Sample:
    ins: list[np.ndarray]
    attrs: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    #: a bound on |x| summed over what one output element adds up (sum, matmul); the allowed
    #: error grows with it (floating-point summation error is relative to it, not to the result)
    magnitude: np.ndarray | None = None
    #: replaces the dtype's tolerance (e.g. the tighter one of a long half-precision sum)
    tol: Tolerance | None = None


@dataclass
class OpInfo:
    name: str
    samples: Callable[[np.dtype, np.random.Generator], Iterator[Sample]]
    ref: Callable[..., np.ndarray]
    tol_scale: float = 1.0
    #: indices of inputs that gradient checks differentiate (empty: no gradient check)
    grad_inputs: tuple[int, ...] = ()
    grad_samples: Callable[[np.dtype, np.random.Generator], Iterator[Sample]] | None = None
    #: True when the output is a tensor of the output's dtype (full/arange/philox: no inputs)
    creation: bool = False
    #: extra checks (e.g. out-of-range indices must raise): fn(run) -> None
    edge_checks: tuple[str, ...] = ()
    #: floating output dtypes compared bit for bit (NaN matches any NaN; the sign of a zero
    #: counts): data movement, neg/abs/floor/ceil and casts everywhere; in half precision
    #: also the ops computed exactly and rounded once (add, sub, mul, div, sqrt)
    exact: tuple[str, ...] = ()

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes for which the contract defines the op (``adapter_api.primitives``)."""
        return PRIMITIVES[self.name].dtypes


# -------------------------------------------------------------------------------------------
# value generators
# -------------------------------------------------------------------------------------------
def values(d: np.dtype, shape: tuple[int, ...], rng: np.random.Generator, domain: str = "real") -> np.ndarray:
    if d == np.bool_:
        return rng.random(shape) < 0.5
    if d.kind in "iu":
        lo, hi = (0, 20) if d.kind == "u" else (-20, 20)
        if domain == "positive":
            lo = 1
        return rng.integers(lo, hi, size=shape).astype(d)
    x = rng.standard_normal(shape) * 2.0
    if domain == "positive":
        x = np.abs(x) + 0.1
    elif domain == "unit":
        x = rng.uniform(-0.9, 0.9, shape)
    return np.asarray(x).astype(d)


def specials(d: np.dtype) -> np.ndarray:
    """NaN, infinities, signed zeros and ones."""
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5], dtype=np.float64).astype(d)


def magnitudes(d: np.dtype) -> tuple[float, float]:
    """A large and a small magnitude that are normal numbers of ``d``."""
    return {
        "float16": (3.0e4, 1.0e-4),
        "bfloat16": (1.0e30, 1.0e-30),
        "float32": (1.0e30, 1.0e-30),
        "float64": (1.0e200, 1.0e-200),
    }[d.name]


def int_edges(d: np.dtype) -> np.ndarray:
    info = np.iinfo(d)
    vals = {info.min, info.max, info.min + 1, info.max - 1, 0, 1, info.max // 2}
    if d.kind == "i":
        vals |= {-1, -(info.max // 2)}
    return np.array(sorted(vals), dtype=d)


SHAPES = [(), (0,), (2, 0, 3), (17,), (3, 5), (2, 3, 4)]

HALF = ("float16", "bfloat16")
#: past 65,536 elements: where a kernel may change its launch geometry (a 16-bit grid
#: dimension, a second pass, a multi-block path), which small samples never reach
BIG_SHAPE = (257, 273)
#: a reduced axis past 1,024 (a work-group, a thread block, a tile) and not a power of two,
#: alone (one long row) and across many outputs (BIG_SHAPE's element count in all)
LONG_AXIS = 4099
#: the sizes every op family samples past its tile and grid limits (docs/conformance.md lists them)
LARGE_SAMPLES = {
    "elementwise": "(257, 273) = 70,161 elements, also broadcast from (257, 1) and (1, 273); unary, "
    "binary, comparison, `where`",
    "reductions": "(2, 4099) on the last axis, (1031, 67) on the first, (70161,) whole; `max`/`min` with "
    "each row's extremes alone near the end",
    "argmax/argmin": "(2, 4099) and (70161,), the extreme placed past 1,024 / 65,536",
    "argsort": "one row of 70,001 with ties (stability), (17, 4099) descending",
    "matmul": "(33, 1031) @ (1031, 65): K past 1,024; (257, 16) @ (16, 273): 70,161 outputs",
    "layout": "permute (33, 65, 37), expand to (257, 273), a strided slice, concat on either axis, pad "
    "and copy, to 70,161 elements or more",
    "gather/scatter": "70,001 indices (scatter_add with duplicates), 70,001-element outputs",
    "cast": "(257, 273) to another dtype",
    "creation": "full and philox_uniform of (257, 273), arange of 70,001",
}
#: the largest sample the gradient checks take (finite differences cost one run per element)
GRAD_MAX_ELEMENTS = 4096


def _is_float(d: np.dtype) -> bool:
    return d.kind == "f" or d == BF16


def half_accumulation_tol(d: np.dtype) -> Tolerance:
    """One or two units in the last place of the result, relative to it alone: a sum or
    matmul accumulated in float32 and rounded once to ``d`` stays within it; one accumulated
    in ``d`` itself drifts far past it (and stalls once the sum outgrows its terms' precision)."""
    return Tolerance(2.0**-10 if d.name == "float16" else 2.0**-7, 0.0)


def _normal_range(d: np.dtype) -> tuple[float, float]:
    """The smallest positive normal number of ``d`` and half its largest (a geometric sweep
    up to the largest overflows in numpy's float64 arithmetic)."""
    if d == BF16:
        return 1.2e-38, 1.6e38
    fi = np.finfo(d)
    return float(fi.tiny), float(fi.max) / 2


#: Dense sweeps of each function's transition ranges, where implementations switch formulas
#: (polynomial to asymptote, argument reduction, overflow to inf and underflow to 0), per
#: dtype: {op: fn(d) -> float64 points}. A random sample rarely lands there.
SWEEPS: dict[str, Callable[[np.dtype], np.ndarray]] = {
    "tanh": lambda d: np.concatenate(
        [np.linspace(-20, 20, 8001), np.linspace(4.8, 20, 4001), -np.linspace(4.8, 20, 4001)]
    ),
    "exp": lambda d: np.linspace(
        *{"float16": (-18, 12), "float64": (-746, 711)}.get(d.name, (-105, 90)), 20001
    ),
    "log": lambda d: np.concatenate([np.geomspace(*_normal_range(d), 20001), np.linspace(0.5, 2.0, 4001)]),
    "sqrt": lambda d: np.geomspace(*_normal_range(d), 20001),
    "rsqrt": lambda d: np.geomspace(*_normal_range(d), 20001),
    "sin": lambda d: np.linspace(-40, 40, 20001),
    "cos": lambda d: np.linspace(-40, 40, 20001),
    "erf": lambda d: np.linspace(-7, 7, 20001),
    # around integers and halves, and large values: past 2**23 (float32) / 2**52 (float64)
    # every float is an integer, past 2**31 a cast through int32 breaks
    "floor": lambda d: _rounding_sweep(d),
    "ceil": lambda d: _rounding_sweep(d),
    "sign": lambda d: np.concatenate(
        [np.geomspace(_normal_range(d)[0], 1, 2001), -np.geomspace(_normal_range(d)[0], 1, 2001)]
    ),
}


def _rounding_sweep(d: np.dtype) -> np.ndarray:
    big = {"float16": (100, 6.0e4), "float64": (1e12, 1e20)}.get(d.name, (1e6, 1e12))
    return np.concatenate([np.linspace(-5.5, 5.5, 4001), np.geomspace(*big, 2001), -np.geomspace(*big, 2001)])


def with_signed_zeros(gen: Callable[..., Iterator[Sample]]) -> Callable[..., Iterator[Sample]]:
    """Each sample, and for floats again with -0.0 and +0.0 in every input of the op's dtype:
    ops that move data (or only flip or clear the sign) must keep the sign of zero, bit for bit."""

    def wrapped(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
        for s in gen(d, rng):
            yield s
            ins = [a for a in s.ins if a.dtype == d and a.size]
            if not _is_float(d) or not ins:
                continue
            zeroed = []
            for a in s.ins:
                if a.dtype == d and a.size:
                    a = a.copy()
                    a.reshape(-1)[::3] = -0.0
                    a.reshape(-1)[1::5] = 0.0
                zeroed.append(a)
            yield Sample(
                zeroed,
                dict(s.attrs),
                label=f"{s.label}, with -0.0 and +0.0",
                magnitude=s.magnitude,
                tol=s.tol,
            )

    return wrapped


# -------------------------------------------------------------------------------------------
# sample generators per family
# -------------------------------------------------------------------------------------------
def unary_samples(
    op: str, domain: str = "real", nan_ok: bool = True, big: float | None = None
) -> Callable[..., Iterator[Sample]]:
    def gen(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
        for s in SHAPES:
            yield Sample([values(d, s, rng, domain)], label=f"shape {s}")
        yield Sample([values(d, (40, 3), rng, domain)[::2]], label="strided numpy source")
        yield Sample(
            [values(d, BIG_SHAPE, rng, domain)], label=f"shape {BIG_SHAPE} ({math.prod(BIG_SHAPE)} elements)"
        )
        if _is_float(d) and op in SWEEPS:
            pts = SWEEPS[op](d)
            yield Sample(
                [pts.astype(d)],
                label=f"dense sweep of {pts.size} points in [{pts.min():.3g}, {pts.max():.3g}]",
            )
        if _is_float(d):
            large, small = magnitudes(d)
            if big is not None:
                large = min(large, big)
            sign = 1.0 if domain == "positive" else -1.0
            yield Sample(
                [np.array([large, sign * large, 0.5 * large], np.float64).astype(d)], label="large magnitude"
            )
            yield Sample(
                [np.array([small, sign * small, 3 * small], np.float64).astype(d)], label="small magnitude"
            )
            if nan_ok:
                yield Sample([specials(d)], label="nan/inf/signed zero")
        elif d.kind in "iu" and domain == "real":
            yield Sample([int_edges(d)], label="integer edge values")

    return gen


def binary_samples(
    kind: str = "real", nan_ok: bool = True, edges: bool = True
) -> Callable[..., Iterator[Sample]]:
    """kind: real | nonzero_rhs | pow."""

    def make(d: np.dtype, shape: tuple[int, ...], rng: np.random.Generator, rhs: bool) -> np.ndarray:
        if kind == "pow":
            if d.kind in "iu":
                return (
                    rng.integers(0, 5, shape).astype(d)
                    if rhs
                    else rng.integers(0 if d.kind == "u" else -3, 4, shape).astype(d)
                )
            return (
                rng.integers(-3, 4, shape).astype(d)
                if rhs and shape == (3, 5)
                else values(d, shape, rng, "positive" if not rhs else "real")
            )
        if kind == "nonzero_rhs" and rhs:
            v = values(d, shape, rng, "positive")
            if d.kind != "u":
                v = np.where(rng.random(shape) < 0.5, v, -v).astype(d)
            return v
        return values(d, shape, rng)

    def gen(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
        pairs = [
            ((), ()),
            ((0,), (0,)),
            ((17,), (17,)),
            ((3, 5), (3, 5)),
            ((3, 1), (1, 4)),
            ((), (2, 3)),
            ((2, 3, 4), (3, 4)),
            ((2, 1, 4), (3, 1)),
            (BIG_SHAPE, BIG_SHAPE),
            ((BIG_SHAPE[0], 1), (1, BIG_SHAPE[1])),
        ]
        for a, b in pairs:
            yield Sample([make(d, a, rng, False), make(d, b, rng, True)], label=f"shapes {a} and {b}")
        if _is_float(d) and nan_ok:
            sp = specials(d)
            x, y = np.meshgrid(sp, sp)
            yield Sample([x.reshape(-1).copy(), y.reshape(-1).copy()], label="nan/inf/signed zero pairs")
        if _is_float(d) and kind == "real":
            large, small = magnitudes(d)
            yield Sample(
                [
                    np.array([large, -large, small, -small], np.float64).astype(d),
                    np.array([large, small, -small, large], np.float64).astype(d),
                ],
                label="large and small magnitudes",
            )
        if d.kind in "iu" and edges:
            e = int_edges(d)
            x, y = np.meshgrid(e, e)
            yield Sample(
                [x.reshape(-1).copy(), y.reshape(-1).copy()], label="integer edge values (wrap-around)"
            )
        if d.kind in "iu" and kind == "nonzero_rhs":
            # every nonzero edge divisor; MIN // -1 wraps to MIN and MIN % -1 is 0 (numpy's rule)
            e = int_edges(d)
            x, y = np.meshgrid(e, e[e != 0])
            yield Sample(
                [x.reshape(-1).copy(), y.reshape(-1).copy()],
                label="integer edge values (MIN // -1 wraps to MIN; MIN % -1 is 0)",
            )

    return gen


def where_samples(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
    for c, a, b in [
        ((), (), ()),
        ((0,), (0,), (0,)),
        ((3, 4), (3, 4), (3, 4)),
        ((3, 1), (1, 4), (3, 4)),
        ((2, 3), (), (3,)),
    ]:
        yield Sample(
            [rng.random(c) < 0.5, values(d, a, rng), values(d, b, rng)], label=f"shapes {c}, {a}, {b}"
        )
    if _is_float(d):
        sp = specials(d)
        yield Sample([np.arange(sp.size) % 2 == 0, sp, sp[::-1].copy()], label="nan/inf")
    # large (a plugin may switch strategy past ~1k elements, as the cpu one does), broadcast on
    # every operand, and for floats NaN and infinities in both branches
    x, y = values(d, (1, 48), rng), values(d, (64, 48), rng)
    if _is_float(d):
        sp = specials(d)
        x.reshape(-1)[: sp.size] = sp
        y.reshape(-1)[::97][: sp.size] = sp[::-1]
    yield Sample(
        [rng.random((64, 1)) < 0.5, x, y], label="large 3072 elements, broadcast (64, 1), (1, 48), (64, 48)"
    )
    yield Sample(
        [rng.random(BIG_SHAPE) < 0.5, values(d, BIG_SHAPE, rng), values(d, BIG_SHAPE, rng)],
        label=f"shape {BIG_SHAPE} ({math.prod(BIG_SHAPE)} elements)",
    )


def argsort_samples(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
    def ties(shape: tuple[int, ...]) -> np.ndarray:
        if d == np.bool_:
            return rng.random(shape) < 0.5
        return rng.integers(0, 4, shape).astype(d)  # many ties: equal values keep their order

    for desc in (False, True):
        for shape in [(), (1,), (0,), (2, 0), (7,), (3, 5), (2, 3, 4), (2, 1000), (300, 3)]:
            yield Sample([ties(shape)], {"descending": desc}, label=f"shape {shape} with ties desc={desc}")
        yield Sample([values(d, (4, 33), rng)], {"descending": desc}, label=f"random (4, 33) desc={desc}")
        if _is_float(d):
            row = np.concatenate([specials(d), specials(d)[::-1], values(d, (5,), rng)])
            yield Sample(
                [row.astype(d)],
                {"descending": desc},
                label=f"NaN (greatest: last ascending, first descending), infinities, -0.0 == +0.0 desc={desc}",
            )
        elif d != np.bool_:
            yield Sample([np.tile(int_edges(d), 2)], {"descending": desc}, label=f"integer edges desc={desc}")
    # past a work-group's and a merge pass's sizes: one long row with ties, and many rows
    yield Sample([ties((1, 70001))], {"descending": False}, label="one row of 70,001 with ties")
    yield Sample(
        [values(d, (17, LONG_AXIS), rng)], {"descending": True}, label=f"(17, {LONG_AXIS}) desc=True"
    )


def cast_samples(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
    for target in ALL:
        t = dtype_of(target)
        if _is_float(d):
            if t.kind in "iu":
                lo, hi = (0, 120) if t.kind == "u" else (-120, 120)
                x = np.concatenate([rng.uniform(lo, hi, 12), [0.0, 0.75, 1.5, 2.5]])
                if t.kind == "i":
                    x = np.concatenate([x, [-0.75, -1.5, -2.5]])
                yield Sample([x.astype(d)], {"dtype": t}, label=f"to {target} (truncates toward zero)")
                # past the target's range: saturates; NaN -> 0 (every device alike)
                info = np.iinfo(t)
                big = float(np.finfo(d).max) if d.name != "bfloat16" else 3.0e38
                edges = [
                    np.nan,
                    np.inf,
                    -np.inf,
                    big,
                    -big,
                    -1.5,
                    -0.5,
                    300.7,
                    70000.5,
                    -70000.5,
                    3.0e9,
                    -3.0e9,
                ]
                edges += [float(info.max) + 1.0, float(info.min) - 1.0, float(info.max), float(info.min)]
                e = np.array(edges, np.float64)
                e = e[np.isnan(e) | np.isinf(e) | (np.abs(e) <= big)].astype(d)
                yield Sample([e], {"dtype": t}, label=f"to {target} past its range (saturates; NaN -> 0)")
            else:
                yield Sample(
                    [np.concatenate([values(d, (12,), rng), specials(d)]).astype(d)],
                    {"dtype": t},
                    label=f"to {target}",
                )
        elif d == np.bool_:
            yield Sample([rng.random(9) < 0.5], {"dtype": t}, label=f"to {target}")
        else:
            # int -> int over the source's whole range: a narrowing cast wraps (modulo 2**bits,
            # as numpy's astype), it never saturates at the target's limits
            lo, hi = int(np.iinfo(d).min), int(np.iinfo(d).max)
            if _is_float(t):
                lo, hi = max(lo, -1000), min(hi, 1000)
            x = np.concatenate([rng.integers(lo, hi, 12, dtype=np.int64, endpoint=True), [lo, hi, 0]])
            label = f"to {target}"
            if t.kind in "iu":
                ti = np.iinfo(t)
                past = [
                    v
                    for v in (ti.max + 1, ti.min - 1, ti.max + 300, 2 * ti.max + 3, -(ti.max + 2))
                    if lo <= v <= hi
                ]
                if past:
                    x = np.concatenate([x, past])
                    label += " (values past its range wrap)"
            yield Sample([x.astype(d)], {"dtype": t}, label=label)
    yield Sample([values(d, (), rng)], {"dtype": dtype_of("float32")}, label="0-d")
    yield Sample([values(d, (0, 3), rng)], {"dtype": dtype_of("int32")}, label="empty")
    big_to = dtype_of("int32" if _is_float(d) or d == np.bool_ else "float32")
    yield Sample(
        [values(d, BIG_SHAPE, rng)],
        {"dtype": big_to},
        label=f"shape {BIG_SHAPE} ({math.prod(BIG_SHAPE)} elements) to {big_to.name}",
    )


def _extremes_late(a: np.ndarray, axes: tuple[int, ...], op: str) -> np.ndarray:
    """``a`` with each output's maximum and minimum alone, near the end of the reduced axes: a
    kernel that reads only part of a long axis then finds other extremes (with small random
    integers every long row's extremes tie early, and such a kernel would pass)."""
    late = lambda i: tuple(i if k in axes else slice(None) for k in range(a.ndim))  # noqa: E731
    if a.dtype == np.bool_:  # one True among False (max), one False among True (min)
        a = np.full(a.shape, op == "min")
        a[late(-5)] = op == "max"
        return a
    a = a + 1 if a.dtype.kind == "u" else a.copy()  # room below for the minimum
    a[late(-5)] = 100
    a[late(-9)] = 0 if a.dtype.kind == "u" else -100
    return a


def reduce_samples(op: str) -> Callable[..., Iterator[Sample]]:
    def gen(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
        def x(shape: tuple[int, ...]) -> np.ndarray:
            long = max(shape, default=0) > 1000  # a long product stays near 1 (never 0 or inf)
            if op == "prod" and _is_float(d):
                return (rng.uniform(0.99, 1.01, shape) if long else rng.uniform(0.5, 1.5, shape)).astype(d)
            if op == "prod" and d.kind in "iu":
                if long:  # +-1 with a few 2s: every element counts, the product stays in range
                    v = np.where(rng.random(shape) < 0.5, -1, 1)
                    v.reshape(-1)[rng.choice(v.size, 10, replace=False)] = 2
                    return v.astype(d)
                return rng.integers(0 if d.kind == "u" else -2, 3, shape).astype(d)
            return values(d, shape, rng)

        # long reduced axes (past 64: a second pass, a tree over work-groups) on the last, the
        # first and two separated axes
        cases = [
            ((), ()),
            ((7,), (0,)),
            ((3, 4, 5), (1,)),
            ((3, 4, 5), (0, 2)),
            ((3, 4, 5), (0, 1, 2)),
            ((2, 0), (0,)),
            ((64,), (0,)),
            ((257,), (0,)),
            ((3, 1000), (1,)),
            ((130, 5), (0,)),
            ((70, 3, 70), (0, 2)),
            # past 1,024 and not a power of two; past 65,536 elements in all
            ((2, LONG_AXIS), (1,)),
            ((1031, 67), (0,)),
            ((math.prod(BIG_SHAPE),), (0,)),
        ]
        if op in ("sum", "prod"):
            cases.append(((0, 3), (0,)))
        for shape, axes in cases:
            for keep in (False, True):
                a = x(shape)
                if op in ("max", "min") and max(shape, default=0) > 1000:
                    a = _extremes_late(a, axes, op)
                mag = None
                if op == "sum" and _is_float(d):
                    mag = (
                        np.sum(np.abs(a.astype(np.float64)), axis=axes, keepdims=keep)
                        if axes
                        else np.abs(a.astype(np.float64))
                    )
                yield Sample(
                    [a],
                    {"axes": axes, "keepdim": keep},
                    label=f"shape {shape} axes {axes} keepdim={keep}",
                    magnitude=mag,
                )
        if _is_float(d) and op in ("max", "min", "sum"):
            sp = specials(d)
            yield Sample(
                [np.stack([sp, sp[::-1], np.arange(sp.size).astype(d)])],
                {"axes": (1,), "keepdim": False},
                label="rows with nan/inf",
            )
        if d.kind in "iu" and op in ("max", "min"):
            e = int_edges(d)
            yield Sample([e], {"axes": (0,), "keepdim": False}, label="integer edge values")
        if d.kind in "iu" and op == "sum":
            # integers are exact modulo 2**bits: int64 sums past 2**31 (an int32 accumulator
            # wraps), and sums past the dtype's own range, which wrap
            if d.name == "int64":
                big = rng.integers(-(2**40), 2**40, (3, 300), dtype=np.int64)
                big[0] = rng.integers(2**31, 2**33, 300)
                yield Sample([big], {"axes": (1,), "keepdim": False}, label="int64 values past 2**31")
            info = np.iinfo(d)
            yield Sample(
                [rng.integers(info.max // 2, info.max, (2, 100), dtype=np.int64, endpoint=True).astype(d)],
                {"axes": (1,), "keepdim": False},
                label=f"sum past the {d.name} range (wraps)",
            )
        if d.name == "int64" and op == "prod":
            yield Sample(
                [rng.integers(2**15, 2**20, (4, 3), dtype=np.int64)],
                {"axes": (1,), "keepdim": False},
                label="int64 products past 2**53",
            )
        if d.name in HALF and op == "sum":
            tol = half_accumulation_tol(d)
            for shape, axes in (((3, 4096), (1,)), ((4096, 3), (0,))):
                yield Sample(
                    [rng.uniform(0.0, 1.0, shape).astype(d)],
                    {"axes": axes, "keepdim": False},
                    tol=tol,
                    label=f"long {d.name} sum, shape {shape} axes {axes}: accumulate in float32, round once",
                )

    return gen


def arg_samples(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
    def ties(shape: tuple[int, ...]) -> np.ndarray:
        if d == np.bool_:
            return rng.random(shape) < 0.5
        return rng.integers(0, 3, shape).astype(d)  # many ties: the first index must win

    for shape, axis in [
        ((7,), 0),
        ((3, 4), 1),
        ((2, 3, 4), 0),
        ((2, 3, 4), 2),
        ((1,), 0),
        ((2, 0), 0),
        ((3, 1000), 1),
        ((300, 2), 0),
    ]:
        for keep in (False, True):
            yield Sample(
                [ties(shape)],
                {"axis": axis, "keepdim": keep},
                label=f"shape {shape} axis {axis} keepdim={keep} with ties",
            )
    # long axes (past 1,024, past 65,536) with the one extreme placed late: a kernel that looks
    # at only part of the axis finds another (ties between early values hide nothing here)
    for shape, axis in (((2, LONG_AXIS), 1), ((math.prod(BIG_SHAPE),), 0)):
        n = shape[axis]
        for late, kind in ((n - 7, "max"), (n - 3000 if n > 65536 else 1500, "min")):
            if d == np.bool_:
                x = np.full(shape, kind == "min")
                x[..., late] = kind == "max"
            else:
                x = rng.integers(1, 3, shape).astype(d)  # 1 or 2
                x[..., late] = 3 if kind == "max" else 0
            yield Sample(
                [x],
                {"axis": axis, "keepdim": False},
                label=f"shape {shape} axis {axis}, the {kind} alone at index {late}",
            )
    if _is_float(d):
        large, small = magnitudes(d)
        yield Sample(
            [np.array([small, -large, large, -small, large], np.float64).astype(d)],
            {"axis": 0, "keepdim": False},
            label="large and small magnitudes, infinities",
        )
        # NaN is the extreme of both (numpy's rule): the first NaN wins
        nan, inf = np.nan, np.inf
        yield Sample(
            [np.array([1.0, nan, 3.0, nan, -inf, inf], np.float64).astype(d)],
            {"axis": 0, "keepdim": False},
            label="NaN: the first NaN wins",
        )
        x = rng.integers(0, 3, (4, 70)).astype(np.float64)
        x[0, 5], x[0, 9], x[1, 69], x[2, 0], x[:, 33] = nan, nan, nan, nan, inf
        for axis in (0, 1):
            yield Sample(
                [x.astype(d)],
                {"axis": axis, "keepdim": False},
                label=f"rows with NaN, axis {axis}: the first NaN wins",
            )


def matmul_samples(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
    # M, N and K past 64: a tiled kernel's second tile, its edge tiles, a split K
    for a, b in [
        ((2, 3), (3, 4)),
        ((1, 1), (1, 1)),
        ((2, 3, 5), (2, 5, 4)),
        ((0, 3), (3, 2)),
        ((2, 0), (0, 3)),
        ((2, 2, 4, 3), (2, 2, 3, 5)),
        ((16, 33), (33, 9)),
        ((70, 130), (130, 97)),
        ((2, 65, 67), (2, 67, 66)),
        # K past 1,024 (a split K, a second pass over K), not a power of two; past 65,536 outputs
        ((33, 1031), (1031, 65)),
        ((BIG_SHAPE[0], 16), (16, BIG_SHAPE[1])),
    ]:
        if d.kind in "iu":
            x, y = rng.integers(0, 4, a).astype(d), rng.integers(0 if d.kind == "u" else -3, 4, b).astype(d)
        else:
            x, y = values(d, a, rng), values(d, b, rng)
        mag = None
        if _is_float(d):
            mag = np.matmul(np.abs(x.astype(np.float64)), np.abs(y.astype(np.float64)))
        yield Sample([x, y], label=f"{a} @ {b}", magnitude=mag)
    # integers are exact: never through floating point (int32 past 2**24, int64 past 2**53)
    if d.name in ("int32", "int64"):
        hi = 2**13 if d.name == "int32" else 2**30
        x, y = (rng.integers(-hi, hi, s, dtype=np.int64).astype(d) for s in ((3, 5), (5, 4)))
        yield Sample(
            [x, y], label=f"(3, 5) @ (5, 4), values up to {hi}: products past 2**{24 if hi < 2**20 else 53}"
        )
    if d.name in HALF:
        x, y = rng.uniform(0.0, 1.0, (4, 1024)).astype(d), rng.uniform(0.0, 1.0, (1024, 3)).astype(d)
        yield Sample(
            [x, y],
            label=f"(4, 1024) @ (1024, 3) in {d.name}: accumulate in float32, round once",
            tol=half_accumulation_tol(d),
        )


def _fill(d: np.dtype) -> Any:
    if d == np.bool_:
        return True
    if d.kind in "iu":
        return int(np.iinfo(d).max)
    return 1.5


def layout_samples(op: str) -> Callable[..., Iterator[Sample]]:
    def gen(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
        v = lambda s: values(d, s, rng)  # noqa: E731
        if op == "permute":
            for s, p in [
                ((2, 3, 4), (2, 0, 1)),
                ((2, 3, 4), (1, 0, 2)),
                ((), ()),
                ((0, 3), (1, 0)),
                ((5,), (0,)),
                ((2, 3, 4, 5), (3, 1, 2, 0)),
                ((33, 65, 37), (2, 0, 1)),  # 79,365 elements
            ]:
                yield Sample([v(s)], {"perm": p}, label=f"shape {s} perm {p}")
        elif op == "expand":
            for s, t in [
                ((3, 1), (3, 4)),
                ((1,), (5,)),
                ((1, 1), (2, 3)),
                ((2, 1, 3), (2, 4, 3)),
                ((1, 0), (3, 0)),
                ((), ()),
                ((4,), (4,)),
                ((1, BIG_SHAPE[1]), BIG_SHAPE),
                ((BIG_SHAPE[0], 1), BIG_SHAPE),
            ]:
                yield Sample([v(s)], {"shape": t}, label=f"{s} to {t}")
        elif op == "slice":
            for s, a, b, c in [
                ((10,), (2,), (9,), (3,)),
                ((4, 5), (1, 0), (3, 5), (1, 2)),
                ((5,), (3,), (3,), (1,)),
                ((), (), (), ()),
                ((3, 4, 5), (0, 1, 4), (3, 4, 5), (2, 2, 1)),
                ((7,), (0,), (7,), (10,)),
                ((BIG_SHAPE[0] + 2, 2 * BIG_SHAPE[1]), (1, 1), (BIG_SHAPE[0] + 1, 2 * BIG_SHAPE[1]), (1, 2)),
            ]:
                yield Sample([v(s)], {"starts": a, "stops": b, "steps": c}, label=f"shape {s} [{a}:{b}:{c}]")
        elif op == "concat":
            for shapes, ax in [
                ([(2, 3), (4, 3)], 0),
                ([(2, 1), (2, 0), (2, 3)], 1),
                ([(5,)], 0),
                ([(1, 2, 3), (1, 2, 1), (1, 2, 2)], 2),
                ([(0, 2), (0, 2)], 0),
                ([(BIG_SHAPE[0] - 3, BIG_SHAPE[1]), (3, BIG_SHAPE[1])], 0),
                ([(BIG_SHAPE[0], 200), (BIG_SHAPE[0], BIG_SHAPE[1] - 200)], 1),
            ]:
                yield Sample([v(s) for s in shapes], {"axis": ax}, label=f"shapes {shapes} axis {ax}")
        elif op == "pad":
            for s, pads in [
                ((3, 4), ((1, 2), (0, 3))),
                ((0, 2), ((1, 1), (0, 0))),
                ((), ()),
                ((5,), ((0, 0),)),
                ((2, 2, 2), ((1, 0), (0, 1), (2, 2))),
                ((BIG_SHAPE[0] - 2, BIG_SHAPE[1] - 3), ((1, 1), (2, 1))),
            ]:
                yield Sample([v(s)], {"pads": pads, "value": _fill(d)}, label=f"shape {s} pads {pads}")
        elif op == "copy":
            for s in (*SHAPES, BIG_SHAPE):
                yield Sample([v(s)], label=f"shape {s}")
            if _is_float(d):
                yield Sample([specials(d)], label="nan/inf/signed zero (bits kept)")
            elif d.kind in "iu":
                yield Sample([int_edges(d)], label="integer edge values")

    return gen


def gather_samples(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
    v = lambda s: values(d, s, rng)  # noqa: E731
    yield Sample([v((5, 4)), np.array([4, 0, 4, 2], np.int64)], {"axis": 0}, label="duplicates, axis 0")
    yield Sample([v((2, 5, 3)), np.array([[1, 4], [0, 0]], np.int64)], {"axis": 1}, label="2-d index, axis 1")
    yield Sample([v((5,)), np.zeros((0,), np.int64)], {"axis": 0}, label="empty index")
    yield Sample([v((5, 2)), np.array(3, np.int64)], {"axis": 0}, label="0-d index")
    yield Sample(
        [v((3, 6)), np.arange(6, dtype=np.int64)[::-1].copy()], {"axis": 1}, label="reversed, last axis"
    )
    n = 70001  # past 65,536 indices and output elements
    yield Sample([v((1031, 2)), rng.integers(0, 1031, n)], {"axis": 0}, label=f"{n} indices into 1031 rows")


def scatter_samples(op: str) -> Callable[..., Iterator[Sample]]:
    def gen(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
        v = lambda s: values(d, s, rng)  # noqa: E731
        dup = op == "scatter_add"
        i0 = np.array([4, 0, 4, 2] if dup else [4, 0, 1, 2], np.int64)
        yield Sample(
            [v((5, 3)), i0, v((4, 3))], {"axis": 0}, label="axis 0" + (" with duplicates" if dup else "")
        )
        i1 = np.array([[1, 1], [0, 2]] if dup else [[1, 3], [0, 2]], np.int64)
        yield Sample([v((2, 4, 3)), i1, v((2, 2, 2, 3))], {"axis": 1}, label="2-d index, axis 1")
        yield Sample([v((3,)), np.zeros((0,), np.int64), v((0,))], {"axis": 0}, label="empty index")
        yield Sample([v((3, 4)), np.array([3, 1], np.int64), v((3, 2))], {"axis": 1}, label="last axis")
        yield Sample([v((5, 3)), np.array(2, np.int64), v((3,))], {"axis": 0}, label="0-d index, axis 0")
        yield Sample([v((2, 4, 3)), np.array(3, np.int64), v((2, 3))], {"axis": 1}, label="0-d index, axis 1")
        n = 70001  # past 65,536 indices: scatter_add with duplicates, scatter a permutation
        if dup:
            src = (
                rng.integers(0, 3, (n, 2)).astype(d)
                if not _is_float(d)
                else rng.uniform(0, 1, (n, 2)).astype(d)
            )
            rows = 40009  # about two indices per row: short sums, exact enough in every dtype
            x, index = v((rows, 2)), rng.integers(0, rows, n)
            mag = None
            if _is_float(d):  # the error allowed grows with what each element adds up, as for sum
                mag = np.abs(x.astype(np.float64))
                np.add.at(mag, index, np.abs(src.astype(np.float64)))
            yield Sample([x, index, src], {"axis": 0}, label=f"{n} indices into {rows} rows", magnitude=mag)
        else:
            yield Sample(
                [v((n,)), rng.permutation(n), v((n,))], {"axis": 0}, label=f"a permutation of {n} indices"
            )

    return gen


def full_samples(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
    vals: list[Any] = [_fill(d)]
    if _is_float(d):
        vals += [float("nan"), float("-inf"), -0.0]
    elif d.kind in "iu":
        vals += [int(np.iinfo(d).min), 0]
    else:
        vals += [False]
    for s in [(), (0,), (3, 4), (1000,), BIG_SHAPE]:
        for val in vals:
            yield Sample([], {"shape": s, "value": val, "dtype": d}, label=f"shape {s} value {val}")


def arange_samples(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
    if d.kind in "iu":
        cases = [(7, 2, 3), (0, 0, 1), (5, 10, -2) if d.kind == "i" else (5, 10, 2), (100, 0, 1)]
    else:
        cases = [(11, -1.5, 0.25), (0, 0.0, 1.0), (6, 3.0, -0.5), (100, 0.0, 1.0)]
    cases.append((70001, 0, 1) if d.kind in "iu" else (70001, -2.0, 0.125))
    for n, start, step in cases:
        yield Sample(
            [], {"n": n, "start": start, "step": step, "dtype": d}, label=f"n={n} start={start} step={step}"
        )


def philox_samples(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
    for shape, seed, off in [
        ((10,), 0, 0),
        ((3, 5), 42, 7),
        ((0,), 1, 0),
        ((), 5, 3),
        ((1001,), 2**40 + 3, 2**33 + 1),
        (BIG_SHAPE, 7, 0),
    ]:
        yield Sample(
            [],
            {"shape": shape, "seed": seed, "offset": off, "dtype": d},
            label=f"shape {shape} seed {seed} offset {off}",
        )


# gradient samples: smooth points away from kinks, ties and domain edges ----------------------
def smooth(
    domain: str = "real", arity: int = 1, shapes: tuple = ((3, 4),)
) -> Callable[..., Iterator[Sample]]:
    def gen(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
        for s in shapes:
            ins = []
            for i in range(arity):
                if domain == "positive" or (domain == "pow" and i == 0):
                    ins.append(rng.uniform(0.5, 2.0, s).astype(d))
                elif domain == "apart" and arity == 1:  # abs: away from the kink at 0
                    ins.append(
                        (rng.uniform(0.5, 2.0, s) * np.where(rng.random(s) < 0.5, -1.0, 1.0)).astype(d)
                    )
                elif domain == "apart":  # maximum/minimum: |x - y| is large
                    base = rng.uniform(-2, 2, s)
                    ins.append((base + (1.0 if i == 0 else -1.0) * np.sign(rng.standard_normal(s))).astype(d))
                else:
                    ins.append(rng.uniform(-2, 2, s).astype(d))
            yield Sample(ins, label=f"shapes {s}")
        if arity == 2 and domain != "apart":
            yield Sample(
                [rng.uniform(0.5, 2.0, (3, 1)).astype(d), rng.uniform(0.5, 2.0, (1, 4)).astype(d)],
                label="broadcast (3,1) and (1,4)",
            )

    return gen


def grad_from(
    samples: Callable[..., Iterator[Sample]], keep: Callable[[Sample], bool] = lambda s: True
) -> Callable[..., Iterator[Sample]]:
    def gen(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
        for s in samples(d, rng):
            floats = [a.astype(np.float64) for a in s.ins if a.dtype == d]
            tame = all(a.size and np.all(np.isfinite(a)) and np.all(np.abs(a) < 1e6) for a in floats)
            small = sum(a.size for a in s.ins) <= GRAD_MAX_ELEMENTS  # the large samples are for kernels
            if keep(s) and tame and small:
                yield s

    return gen


def _distinct(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
    for shape, axes in [((3, 4), (1,)), ((2, 3, 4), (0, 2))]:
        x = rng.permutation(math.prod(shape)).reshape(shape).astype(np.float64) * 0.25 + 0.5
        yield Sample([x.astype(d)], {"axes": axes, "keepdim": False}, label=f"shape {shape} axes {axes}")


# -------------------------------------------------------------------------------------------
# the database
# -------------------------------------------------------------------------------------------
#: Unary ops whose result is exact in every float dtype, the sign of zero included.
SIGN_EXACT = ("neg", "abs", "floor", "ceil")
#: Ops computed exactly and rounded once: in half precision (computed in float32 and rounded
#: once, as a correct kernel does) they must match bit for bit; in float32 an OpenCL device
#: may take 2.5-3 ulp for div and sqrt, so there the dtype's tolerance applies.
HALF_EXACT = ("add", "sub", "mul", "div", "sqrt")


def _build() -> dict[str, OpInfo]:
    db: dict[str, OpInfo] = {}

    def add(info: OpInfo) -> None:
        db[info.name] = info

    unary_domain = {"log": "positive", "sqrt": "positive", "rsqrt": "positive"}
    for n in (
        "neg",
        "abs",
        "exp",
        "log",
        "sqrt",
        "rsqrt",
        "sin",
        "cos",
        "tanh",
        "erf",
        "floor",
        "ceil",
        "sign",
    ):
        big = 1.0e3 if n in ("sin", "cos") else None
        g = () if n in ("floor", "ceil", "sign") else (0,)
        dom = unary_domain.get(n, "real")
        gen = unary_samples(n, dom, big=big)
        add(
            OpInfo(
                n,
                with_signed_zeros(gen) if n in SIGN_EXACT else gen,
                R.REFERENCES[n],
                grad_inputs=g,
                grad_samples=smooth("positive" if dom == "positive" else ("apart" if n == "abs" else "real")),
                exact=FLOATS if n in SIGN_EXACT else HALF if n in HALF_EXACT else (),
            )
        )
    add(OpInfo("logical_not", unary_samples("logical_not"), R.REFERENCES["logical_not"]))
    for n in ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "floor_divide", "remainder"):
        kind = {"pow": "pow", "floor_divide": "nonzero_rhs", "remainder": "nonzero_rhs", "div": "real"}.get(
            n, "real"
        )
        nan_ok = n not in ("pow", "floor_divide", "remainder")
        edges = n in ("add", "sub", "mul", "maximum", "minimum")
        gsamp = smooth("apart" if n in ("maximum", "minimum") else ("pow" if n == "pow" else "positive"), 2)
        grad = (0, 1) if n not in ("floor_divide", "remainder") else ((0,) if n == "remainder" else ())
        add(
            OpInfo(
                n,
                binary_samples(kind, nan_ok, edges),
                R.REFERENCES[n],
                tol_scale=2.0 if n == "pow" else 1.0,
                grad_inputs=grad,
                grad_samples=gsamp,
                exact=HALF if n in HALF_EXACT else (),
            )
        )
    for n in ("eq", "ne", "lt", "le", "gt", "ge"):
        add(OpInfo(n, binary_samples(), R.REFERENCES[n]))
    for n in ("logical_and", "logical_or"):
        add(OpInfo(n, binary_samples(), R.REFERENCES[n]))
    add(
        OpInfo(
            "where",
            with_signed_zeros(where_samples),
            R.where,
            grad_inputs=(1, 2),
            exact=FLOATS,
            grad_samples=grad_from(where_samples, lambda s: s.label.startswith("shapes (3, 1)")),
        )
    )
    add(
        OpInfo(
            "cast",
            with_signed_zeros(cast_samples),
            R.cast,
            grad_inputs=(0,),
            exact=FLOATS,
            grad_samples=lambda d, rng: iter(
                [
                    Sample([rng.uniform(-2, 2, (3, 4)).astype(d)], {"dtype": d}, label="to itself"),
                    Sample(
                        [rng.uniform(-2, 2, (5,)).astype(d)],
                        {"dtype": np.dtype("float64" if d.name == "float32" else "float32")},
                        label="to another float",
                    ),
                ]
            ),
        )
    )
    for n in ("sum", "prod", "max", "min"):
        gs = _distinct if n in ("max", "min") else grad_from(reduce_samples(n), lambda s: s.ins[0].size <= 64)
        add(OpInfo(n, reduce_samples(n), R.REFERENCES[n], grad_inputs=(0,), grad_samples=gs))
    for n in ("argmax", "argmin"):
        add(OpInfo(n, arg_samples, R.REFERENCES[n]))
    add(OpInfo("argsort", argsort_samples, R.argsort))
    add(
        OpInfo(
            "matmul",
            matmul_samples,
            R.matmul,
            grad_inputs=(0, 1),
            grad_samples=grad_from(matmul_samples, lambda s: s.ins[0].size <= 24),
        )
    )
    for n in ("permute", "expand", "slice", "concat", "pad", "copy"):
        add(
            OpInfo(
                n,
                with_signed_zeros(layout_samples(n)),
                R.REFERENCES[n],
                grad_inputs=(0,) if n != "concat" else (0, 1, 2),
                grad_samples=grad_from(layout_samples(n)),
                exact=FLOATS,
            )
        )
    add(
        OpInfo(
            "gather",
            with_signed_zeros(gather_samples),
            R.gather,
            grad_inputs=(0,),
            grad_samples=grad_from(gather_samples),
            edge_checks=("index_out_of_range",),
            exact=FLOATS,
        )
    )
    add(
        OpInfo(
            "scatter_add",
            scatter_samples("scatter_add"),
            R.scatter_add,
            grad_inputs=(0, 2),
            grad_samples=grad_from(scatter_samples("scatter_add")),
            edge_checks=("index_out_of_range",),
        )
    )
    add(
        OpInfo(
            "scatter",
            with_signed_zeros(scatter_samples("scatter")),
            R.scatter,
            grad_inputs=(0, 2),
            grad_samples=grad_from(scatter_samples("scatter")),
            edge_checks=("index_out_of_range",),
            exact=FLOATS,
        )
    )
    add(OpInfo("full", full_samples, R.full, creation=True, exact=FLOATS))
    add(
        OpInfo(
            "arange",
            arange_samples,
            lambda n, start, step, dtype: R.arange(n, start, step, dtype),
            creation=True,
        )
    )
    add(OpInfo("philox_uniform", philox_samples, R.philox_uniform, creation=True, tol_scale=0.0))
    missing = set(PRIMITIVES) - set(db)
    assert not missing, f"op database misses primitives {sorted(missing)}"
    return db


OPDB: dict[str, OpInfo] = _build()
