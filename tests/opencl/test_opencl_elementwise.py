"""Elementwise primitives of the OpenCL plugin against numpy, for every registered dtype."""

from __future__ import annotations

import math

import numpy as np
import pytest
from opencl_harness import assert_close

pytest.importorskip("pyopencl")

from plugins.opencl.kernels import ALL, FLOATS, NUMERIC  # noqa: E402

RNG = np.random.default_rng(0)
SHAPES = [(), (0,), (3, 347)]
_erf = np.vectorize(math.erf, otypes=[np.float64])

UNARY_REF = {
    "neg": np.negative,
    "abs": np.abs,
    "sign": np.sign,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "erf": _erf,
    "floor": np.floor,
    "ceil": np.ceil,
    "logical_not": np.logical_not,
}
UNARY_DTYPES = {
    op: FLOATS for op in ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "floor", "ceil")
}
UNARY_DTYPES |= {"neg": NUMERIC, "sign": NUMERIC, "abs": ALL, "logical_not": ("bool",)}


def sample(shape, dtype, lo=-3.0, hi=3.0, specials=True):
    """Random values of ``dtype``, with the dtype's edge values mixed in."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype.kind == "b":
        return RNG.integers(0, 2, n).astype(bool).reshape(shape)
    if dtype.kind == "f":
        x = RNG.uniform(lo, hi, n)
        edges = [0.0, -0.0, lo, hi] if specials else []
    else:
        info = np.iinfo(dtype)
        x = RNG.integers(max(info.min, -100), min(info.max, 100), n, endpoint=True)
        edges = [info.min, info.max, 0, 1] if specials else []
    x = x.astype(dtype)
    k = min(len(edges), n)
    x[:k] = np.array(edges[:k]).astype(dtype)
    return x.reshape(shape)


def reference(fn, dtype, *xs):
    dtype = np.dtype(dtype)
    with np.errstate(all="ignore"):
        if dtype == np.float16:  # the kernels compute float16 in float32
            return fn(*(x.astype(np.float32) for x in xs)).astype(np.float16)
        return np.asarray(fn(*xs))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op,dtype", [(op, dt) for op, dts in UNARY_DTYPES.items() for dt in dts])
def test_unary(h, op, dtype, shape):
    positive = op in ("log", "sqrt", "rsqrt")
    x = sample(shape, dtype, *((0.05, 5.0) if positive else (-3.0, 3.0)), specials=not positive)
    want = reference(UNARY_REF[op], dtype, x).astype(dtype)
    got = h.run(op, [x], x.shape, dtype)
    assert_close(got, want, rtol=1e-4 if op == "erf" and dtype == "float32" else None)


BINARY_REF = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "pow": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "floor_divide": np.floor_divide,
    "remainder": np.remainder,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
}
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
BINARY_DTYPES = {
    "add": ALL,
    "mul": ALL,
    "maximum": ALL,
    "minimum": ALL,
    "sub": NUMERIC,
    "div": FLOATS,
    "pow": NUMERIC,
    "floor_divide": NUMERIC,
    "remainder": NUMERIC,
    "logical_and": ("bool",),
    "logical_or": ("bool",),
} | {c: ALL for c in COMPARE}
BSHAPES = [  # (a, b, out)
    ((4, 300), (4, 300), (4, 300)),
    ((4, 1), (1, 300), (4, 300)),
    ((1, 1), (5, 7), (5, 7)),
    ((2, 1, 5), (1, 3, 5), (2, 3, 5)),
    ((3, 1, 7, 1), (1, 5, 1, 9), (3, 5, 7, 9)),  # runs shorter than an item's elements
    ((6, 1, 130), (1, 4, 1), (6, 4, 130)),
    ((), (), ()),
    ((0, 3), (1, 3), (0, 3)),
]


def binary_inputs(op, dtype, sa, sb):
    a, b = sample(sa, dtype), sample(sb, dtype)
    if op == "pow":
        if np.dtype(dtype).kind == "f":
            a, b = sample(sa, dtype, 0.1, 3.0, False), sample(sb, dtype, -2.0, 2.0)
        else:
            a, b = sample(sa, dtype, specials=False) % 7, np.abs(sample(sb, dtype, specials=False)) % 4
    if op == "div":
        b = np.where(b == 0, 1, b).astype(dtype)
    if np.dtype(dtype).kind == "f" and a.size > 3 and op in COMPARE + ("maximum", "minimum"):
        a.reshape(-1)[1] = np.nan
    return a, b


@pytest.mark.parametrize("sa,sb,sz", BSHAPES, ids=str)
@pytest.mark.parametrize("op,dtype", [(op, dt) for op, dts in BINARY_DTYPES.items() for dt in dts])
def test_binary(h, registry, op, dtype, sa, sb, sz):
    assert registry.kernels[(op, "opencl", np.dtype(dtype))].broadcast
    a, b = binary_inputs(op, dtype, sa, sb)
    out_dtype = bool if op in COMPARE or op.startswith("logical") else dtype
    want = reference(BINARY_REF[op], dtype, a, b).astype(out_dtype)
    got = h.run(op, [a, b], sz, out_dtype)
    rtol = 1e-4 if op == "pow" and dtype == "float32" else None
    assert_close(got, want, rtol=rtol)


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op", ["floor_divide", "remainder"])
def test_python_division_signs(h, op, dtype):
    """Signs follow the divisor; integer division by zero gives 0 and never traps."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        vals = np.array([7.5, -7.5, 7.5, -7.5, 0.0, 3.0, -3.0, 1.0, 6.0])
        divs = np.array([2.0, 2.0, -2.0, -2.0, 5.0, 0.0, 0.0, 0.0, 3.0])
    elif dtype == np.uint8:
        vals, divs = np.array([7, 200, 0, 9, 255]), np.array([2, 3, 5, 0, 16])
    else:
        info = np.iinfo(dtype)
        vals = np.array([7, -7, 7, -7, 0, 5, -5, info.min, info.min, info.max])
        divs = np.array([2, 2, -2, -2, 3, 0, 0, -1, 1, -1])
    a, b = vals.astype(dtype), divs.astype(dtype)
    want = reference(BINARY_REF[op], dtype, a, b)
    if dtype.kind != "f":
        want = np.where(b == 0, 0, want)  # numpy's result, minus platform-dependent warnings
    assert_close(h.run(op, [a, b], a.shape, dtype), want.astype(dtype))


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_integer_wraparound(h, dtype):
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, info.max], dtype)
    b = np.array([1, 1, 2], dtype)
    with np.errstate(all="ignore"):
        assert_close(h.run("add", [a, b], a.shape, dtype), a + b)
        assert_close(h.run("mul", [a, b], a.shape, dtype), a * b)
        assert_close(h.run("neg", [a], a.shape, dtype), -a)


@pytest.mark.parametrize(
    "shapes",
    [
        ((4, 5), (4, 5), (4, 5)),
        ((4, 1), (1, 5), (4, 1)),
        ((3, 1, 7, 1), (1, 5, 1, 9), (3, 5, 1, 1)),
        ((), (), ()),
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", ALL)
def test_where(h, registry, dtype, shapes):
    assert registry.kernels[("where", "opencl", np.dtype(dtype))].broadcast
    sc, sx, sy = shapes
    out = np.broadcast_shapes(sc, sx, sy)
    c, x, y = sample(sc, bool), sample(sx, dtype), sample(sy, dtype)
    out_view = h.empty(out, dtype)
    h.kernel("where", dtype).fn(h.ctx, [out_view], [h.put(c), h.put(x), h.put(y)])
    assert_close(h.get(out_view), np.where(c, x, y))


@pytest.mark.parametrize("dst", ALL)
@pytest.mark.parametrize("src", ALL)
def test_cast(h, src, dst):
    src, dst = np.dtype(src), np.dtype(dst)
    if src.kind == "f":
        x = RNG.uniform(-100, 100, 257)
        if dst.kind == "u":  # a negative float to an unsigned integer is undefined in C (and numpy)
            x = np.abs(x)
        x[:6] = [0.0, -0.0, 2.9, -2.9, 0.5, -0.5] if dst.kind != "u" else [0, 0, 2.9, 254.9, 0.5, 1]
        if dst.kind in "fb":
            x[6] = np.nan
        x = x.astype(src)
    else:
        x = sample((257,), src)
    with np.errstate(all="ignore"):
        want = x.astype(dst)
    assert_close(h.run("cast", [x], x.shape, dst, dtype=dst), want)
    assert_close(h.run("cast", [x[:0]], (0,), dst, dtype=dst), want[:0])
