"""Conformance sample generators per op family: unary, binary, reductions, layouts, gathers,
casts, creation; and the gradient-check samples drawn from them."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from framework.testing import TOLERANCES, Tolerance, tolerance  # noqa: F401  (one table, re-exported)

from .samples import (
    ALL,
    BIG_SHAPE,
    GRAD_MAX_ELEMENTS,
    HALF,
    LONG_AXIS,
    SHAPES,
    SWEEPS,
    Sample,
    dtype_of,
    half_accumulation_tol,
    int_edges,
    is_float,
    magnitudes,
    specials,
    values,
)


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
        if is_float(d) and op in SWEEPS:
            pts = SWEEPS[op](d)
            yield Sample(
                [pts.astype(d)],
                label=f"dense sweep of {pts.size} points in [{pts.min():.3g}, {pts.max():.3g}]",
            )
        if is_float(d):
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
        if is_float(d) and nan_ok:
            sp = specials(d)
            x, y = np.meshgrid(sp, sp)
            yield Sample([x.reshape(-1).copy(), y.reshape(-1).copy()], label="nan/inf/signed zero pairs")
        if is_float(d) and kind == "real":
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
    if is_float(d):
        sp = specials(d)
        yield Sample([np.arange(sp.size) % 2 == 0, sp, sp[::-1].copy()], label="nan/inf")
    # large (a plugin may switch strategy past ~1k elements, as the cpu one does), broadcast on
    # every operand, and for floats NaN and infinities in both branches
    x, y = values(d, (1, 48), rng), values(d, (64, 48), rng)
    if is_float(d):
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
        if is_float(d):
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
        if is_float(d):
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
            if is_float(t):
                lo, hi = max(lo, -1000), min(hi, 1000)
            wide = np.uint64 if d == np.uint64 else np.int64  # uint64's range is past int64's
            x = np.concatenate(
                [rng.integers(lo, hi, 12, dtype=wide, endpoint=True), np.array([lo, hi, 0], wide)]
            )
            label = f"to {target}"
            if t.kind in "iu":
                ti = np.iinfo(t)
                past = [
                    v
                    for v in (ti.max + 1, ti.min - 1, ti.max + 300, 2 * ti.max + 3, -(ti.max + 2))
                    if lo <= v <= hi
                ]
                if past:
                    x = np.concatenate([x, np.array(past, wide)])
                    label += " (values past its range wrap)"
            yield Sample([x.astype(d)], {"dtype": t}, label=label)
    yield Sample([values(d, (), rng)], {"dtype": dtype_of("float32")}, label="0-d")
    yield Sample([values(d, (0, 3), rng)], {"dtype": dtype_of("int32")}, label="empty")
    big_to = dtype_of("int32" if is_float(d) or d == np.bool_ else "float32")
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
            if op == "prod" and is_float(d):
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
                if op == "sum" and is_float(d):
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
        if is_float(d) and op in ("max", "min", "sum"):
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
                [
                    rng.integers(
                        info.max // 2,
                        info.max,
                        (2, 100),
                        dtype=np.uint64 if d == np.uint64 else np.int64,
                        endpoint=True,
                    ).astype(d)
                ],
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
    if is_float(d):
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
        if is_float(d):
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
            if is_float(d):
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
    yield Sample(
        [v((5, 4)), np.array([-1, 0, -5, 4, -2], np.int64)], {"axis": 0, "wrap": True}, label="wrap, axis 0"
    )
    yield Sample(
        [v((2, 3, 6)), np.array([[-6, 5], [-1, 0]], np.int64)],
        {"axis": 2, "wrap": True},
        label="wrap, last axis",
    )


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
                if not is_float(d)
                else rng.uniform(0, 1, (n, 2)).astype(d)
            )
            rows = 40009  # about two indices per row: short sums, exact enough in every dtype
            x, index = v((rows, 2)), rng.integers(0, rows, n)
            mag = None
            if is_float(d):  # the error allowed grows with what each element adds up, as for sum
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
    if is_float(d):
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


def distinct_samples(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
    for shape, axes in [((3, 4), (1,)), ((2, 3, 4), (0, 2))]:
        x = rng.permutation(math.prod(shape)).reshape(shape).astype(np.float64) * 0.25 + 0.5
        yield Sample([x.astype(d)], {"axes": axes, "keepdim": False}, label=f"shape {shape} axes {axes}")


# -------------------------------------------------------------------------------------------
# the database
# -------------------------------------------------------------------------------------------
