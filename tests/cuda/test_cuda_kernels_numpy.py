"""The CUDA kernel bodies, run with a cupy-like numpy, against independent numpy computations.

The array module is :data:`cupy_like.xp`: numpy under cupy's rules for device arrays, so a body
that applies a numpy function to device data, mixes host arrays into device calls or uses a
cupy routine known to be broken fails here, not first on a GPU. On a GPU the same bodies run
with xp=cupy (test_cuda_gpu.py compares the two). Paths that exist only on the GPU (cupyx erf
and scatter_add, the NVRTC Philox kernel) are checked there.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from cupy_like import to_device, to_host, xp

from adapter_api import OpArgumentError
from plugins.cuda import kernels as K

BF16 = np.dtype(ml_dtypes.bfloat16)
rng = np.random.default_rng(7)

# -- inputs -------------------------------------------------------------------------------


def sample(dtype, shape, positive=False, nonzero=False):
    """Values of ``dtype`` (bfloat16 as ml_dtypes values)."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = 1 if positive else (0 if dt.kind == "u" else -6)
        x = rng.integers(lo, 7, shape).astype(dt)
        if nonzero:
            x[x == 0] = 3
        return x
    x = rng.standard_normal(shape).astype(np.float32)
    if positive:
        x = np.abs(x) + np.float32(0.25)
    if nonzero:
        x[np.abs(x) < 0.1] = np.float32(0.5)
    return x.astype(dt)


def to_kernel(a):
    """What a kernel receives: bfloat16 as its uint16 bits."""
    return a.view(np.uint16) if a.dtype == BF16 else a


def from_kernel(a, dtype):
    return a.view(BF16) if np.dtype(dtype) == BF16 else a


def run(op, dtype, ins, out_shape, out_dtype, /, **attrs):
    """Run the registered body of (op, dtype) on device arrays of :data:`cupy_like.xp`; return
    the output as a host array of ``out_dtype``."""
    spec = next(s for s in K.KERNELS if s.op == op and np.dtype(dtype) in [np.dtype(d) for d in s.dtypes])
    odt = np.dtype(out_dtype)
    out = to_device(np.zeros(out_shape, np.uint16 if odt == BF16 else odt))
    spec.body(xp, [out], [to_device(to_kernel(np.asarray(a))) for a in ins], **attrs)
    return from_kernel(to_host(out), odt)


def close(got, want, dtype):
    dt = np.dtype(dtype)
    assert got.shape == want.shape, f"shape: got {got.shape}, expected {want.shape}"
    if dt == BF16 or dt == np.float16:
        tol = 1e-2 if dt == BF16 else 2e-3
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=tol, atol=tol)
    elif dt.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6 if dt == np.float32 else 1e-12, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


FLOATS = ["float32", "float64", "float16", BF16]
NUMERIC = FLOATS + ["int8", "int16", "int32", "int64", "uint8"]
ALL = NUMERIC + ["bool"]


def f32(a):
    return np.asarray(a).astype(np.float32) if np.asarray(a).dtype == BF16 else np.asarray(a)


def as_dtype(a, dtype):
    return np.asarray(a).astype(np.dtype(dtype))


# -- bfloat16 conversion --------------------------------------------------------------------


def test_bf16_roundtrip_matches_ml_dtypes():
    special = np.array(
        [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, 3.4e38, 1e-40, 1.00390625, 1.01171875], np.float32
    )
    vals = np.concatenate([special, rng.standard_normal(2000).astype(np.float32) * 1e3])
    out = np.empty(vals.shape, np.uint16)
    K.f32_to_bf16(np, vals, out)
    np.testing.assert_array_equal(out, vals.astype(ml_dtypes.bfloat16).view(np.uint16))
    np.testing.assert_array_equal(K.bf16_to_f32(np, out), vals.astype(ml_dtypes.bfloat16).astype(np.float32))
    nan = np.empty(2, np.uint16)
    K.f32_to_bf16(np, np.array([np.nan, -np.nan], np.float32), nan)
    assert np.isnan(nan.view(BF16).astype(np.float32)).all()


# -- elementwise ----------------------------------------------------------------------------

UNARY = {
    "neg": (np.negative, {}),
    "abs": (np.abs, {}),
    "exp": (np.exp, {}),
    "log": (np.log, {"positive": True}),
    "sqrt": (np.sqrt, {"positive": True}),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x.astype(np.float64)), {"positive": True}),
    "sin": (np.sin, {}),
    "cos": (np.cos, {}),
    "tanh": (np.tanh, {}),
    "erf": (np.vectorize(math.erf), {}),
    "floor": (np.floor, {}),
    "ceil": (np.ceil, {}),
    "sign": (np.sign, {}),
}


def registered(op):
    return [d for s in K.KERNELS if s.op == op for d in s.dtypes]


@pytest.mark.parametrize("op,dtype", [(op, d) for op in UNARY for d in registered(op)], ids=str)
def test_unary(op, dtype):
    fn, kw = UNARY[op]
    x = sample(dtype, (3, 5), **kw) if np.dtype(dtype).kind == "f" or dtype == BF16 else sample(dtype, (3, 5))
    if np.dtype(dtype).kind in "iu" and op in ("floor", "ceil"):
        want = x
    else:
        want = as_dtype(
            fn(f32(x).astype(np.float64) if np.dtype(dtype).kind == "f" or dtype == BF16 else x), dtype
        )
    close(run(op, dtype, [x], x.shape, dtype), want, dtype)


def test_float_only_unaries_not_registered_for_ints():
    for spec in K.KERNELS:
        if spec.op in ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "div"):
            assert all(np.dtype(d).kind == "f" or np.dtype(d) == BF16 for d in spec.dtypes), spec.op


def test_logical_not():
    x = sample(bool, (4, 3))
    np.testing.assert_array_equal(run("logical_not", bool, [x], x.shape, bool), ~x)


BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.true_divide,
    "pow": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "floor_divide": np.floor_divide,
    "remainder": np.remainder,
}


@pytest.mark.parametrize("op,dtype", [(op, d) for op in BINARY for d in registered(op)], ids=str)
def test_binary_broadcasts(op, dtype):
    dt = np.dtype(dtype)
    is_int = dt.kind in "iu"
    x = sample(dtype, (3, 1, 4), positive=(op == "pow"))
    y = sample(
        dtype,
        (1, 5, 4),
        nonzero=op in ("div", "floor_divide", "remainder"),
        positive=(op == "pow" and is_int),
    )
    if op == "pow" and not is_int:
        y = (np.abs(f32(y)) * 2).astype(dt)
    a, b = (x, y) if is_int else (f32(x).astype(np.float64), f32(y).astype(np.float64))
    want = as_dtype(BINARY[op](a, b), dtype)
    close(run(op, dtype, [x, y], (3, 5, 4), dtype), want, dtype)


COMPARE = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


@pytest.mark.parametrize("op", list(COMPARE))
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_compare(op, dtype):
    x = sample(dtype, (2, 6))
    y = x.copy()
    y[:, ::2] = sample(dtype, (2, 3))
    want = COMPARE[op](f32(x), f32(y))
    np.testing.assert_array_equal(run(op, dtype, [x, y[:1]], (2, 6), bool), COMPARE[op](f32(x), f32(y[:1])))
    np.testing.assert_array_equal(run(op, dtype, [x, y], (2, 6), bool), want)


def test_compare_bf16_signed_zero_and_nan():
    x = np.array([0.0, -1.0, np.nan, 2.0], np.float32).astype(BF16)
    y = np.array([-0.0, 1.0, np.nan, -2.0], np.float32).astype(BF16)
    np.testing.assert_array_equal(run("eq", BF16, [x, y], (4,), bool), [True, False, False, False])
    np.testing.assert_array_equal(run("lt", BF16, [x, y], (4,), bool), [False, True, False, False])


@pytest.mark.parametrize("op", ["logical_and", "logical_or"])
def test_logical(op):
    x, y = sample(bool, (3, 1)), sample(bool, (1, 4))
    np.testing.assert_array_equal(run(op, bool, [x, y], (3, 4), bool), getattr(np, op)(x, y))


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_where_broadcasts(dtype):
    cond, x, y = sample(bool, (3, 1)), sample(dtype, (1, 4)), sample(dtype, (3, 4))
    want = np.array([[x[0, j] if cond[i, 0] else y[i, j] for j in range(4)] for i in range(3)], dtype=x.dtype)
    got = run("where", dtype, [cond, x, y], (3, 4), dtype)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


CAST_PAIRS = [
    ("float32", "int32"),
    ("float64", "int8"),
    ("float32", "bool"),
    ("bool", "float32"),
    ("int64", "float16"),
    ("float32", BF16),
    (BF16, "float32"),
    (BF16, "int32"),
    ("int32", BF16),
    (BF16, "bool"),
    ("uint8", "int64"),
    ("float16", "float64"),
    (BF16, BF16),
]


@pytest.mark.parametrize("src,dst", CAST_PAIRS, ids=str)
def test_cast(src, dst):
    x = sample(src, (4, 5))
    if np.dtype(src).kind == "f" or src == BF16:
        x = (f32(x) * 3).astype(np.dtype(src))
        x.flat[0] = 0
    if np.dtype(dst).kind in "iu" and np.dtype(src).kind == "f":
        want = np.trunc(f32(x)).astype(np.dtype(dst))  # toward zero
    elif np.dtype(dst) == bool:
        want = f32(x) != 0
    else:
        want = f32(x).astype(np.dtype(dst))
    got = run("cast", src, [x], x.shape, dst, dtype=np.dtype(dst))
    np.testing.assert_array_equal(
        got.astype(np.float64) if dst == BF16 else got, want.astype(np.float64) if dst == BF16 else want
    )


CAST_RULE_VALUES = [
    -1.5,
    -1.0,
    -0.7,
    0.0,
    0.9,
    127.9,
    128.0,
    255.5,
    256.0,
    300.7,
    -129.0,
    -200.25,
    40000.0,
    -40000.0,
]


@pytest.mark.parametrize("src", ["float32", "float64", "float16", BF16], ids=str)
@pytest.mark.parametrize("dst", ["uint8", "int8", "int16", "int32", "int64"])
def test_cast_float_to_int_truncates_then_saturates(src, dst):
    """The contract's rule (adapter_api/primitives.py, cast): truncate toward zero, clamp to the
    target's range, NaN to 0 (CUDA's saturating conversion, with NaN apart)."""
    x = np.array(CAST_RULE_VALUES, np.float64).astype(np.dtype(src))
    info = np.iinfo(np.dtype(dst))

    def rule(v):
        v = float(v)
        if math.isnan(v):
            return 0
        if math.isinf(v):
            return info.max if v > 0 else info.min
        return min(max(math.trunc(v), info.min), info.max)

    want = np.array([rule(v) for v in x], np.dtype(dst))
    np.testing.assert_array_equal(run("cast", src, [x], x.shape, dst, dtype=np.dtype(dst)), want)


def test_cupy_like_float_to_int_clamps_as_cuda():
    x = to_device(np.array([-1.5, 300.0, np.nan], np.float32))
    np.testing.assert_array_equal(to_host(x.astype(np.uint8)), [0, 255, 0])


# -- reductions -----------------------------------------------------------------------------


@pytest.mark.parametrize("op,fn", [("sum", np.sum), ("prod", np.prod), ("max", np.max), ("min", np.min)])
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
@pytest.mark.parametrize("axes,keepdim", [((1,), False), ((0, 2), True), ((), False), ((0, 1, 2), False)])
def test_reduce(op, fn, dtype, axes, keepdim):
    x = sample(dtype, (3, 4, 2))
    if op == "prod" and (np.dtype(dtype).kind == "f" or dtype == BF16):
        x = (1 + 0.1 * f32(x)).astype(np.dtype(dtype))
    wide = f32(x).astype(np.float64) if np.dtype(dtype).kind == "f" or dtype == BF16 else x.astype(np.int64)
    want = as_dtype(fn(wide, axis=axes, keepdims=keepdim), dtype)
    close(run(op, dtype, [x], want.shape, dtype, axes=axes, keepdim=keepdim), want, dtype)


def test_bf16_sum_accumulates_in_float32_and_rounds_once():
    # 1 + 256 * 2**-9: a bfloat16 accumulator stays at 1.0 (each 2**-9 is below half an ulp);
    # float32 accumulation gives 1.5, which bfloat16 holds exactly.
    x = np.array([1.0] + [2.0**-9] * 256, np.float32).astype(BF16)
    got = run("sum", BF16, [x], (), BF16, axes=(0,), keepdim=False)
    assert float(got) == 1.5
    y = np.random.default_rng(3).standard_normal((64, 33)).astype(np.float32).astype(BF16)
    got = run("sum", BF16, [y], (33,), BF16, axes=(0,), keepdim=False)
    want = y.astype(np.float32).sum(axis=0, dtype=np.float64).astype(np.float32).astype(BF16)
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_integer_sum_wraps_like_numpy_cast():
    x = np.full((300,), 100, np.uint8)
    got = run("sum", "uint8", [x], (), "uint8", axes=(0,), keepdim=False)
    assert got == np.uint8((300 * 100) % 256)


@pytest.mark.parametrize("op", ["max", "min"])
def test_reduce_bool(op):
    x = sample(bool, (4, 6))
    np.testing.assert_array_equal(
        run(op, bool, [x], (6,), bool, axes=(0,), keepdim=False), getattr(x, op)(axis=0)
    )


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", ALL, ids=str)
@pytest.mark.parametrize("axis,keepdim", [(0, False), (1, True)])
def test_arg_reduce_first_index(op, dtype, axis, keepdim):
    x = sample(dtype, (5, 6))
    x[2] = x[1]  # ties: the first index wins
    want = getattr(np, op)(f32(x), axis=axis, keepdims=keepdim)
    np.testing.assert_array_equal(run(op, dtype, [x], want.shape, np.int64, axis=axis, keepdim=keepdim), want)


# -- matmul and layout ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 6)), ((2, 0), (0, 3))])
def test_matmul(dtype, shapes):
    a, b = sample(dtype, shapes[0]), sample(dtype, shapes[1])
    wide = (
        (lambda v: f32(v).astype(np.float64))
        if np.dtype(dtype).kind == "f" or dtype == BF16
        else (lambda v: v.astype(np.int64))
    )
    want = np.einsum("...ik,...kj->...ij", wide(a), wide(b))
    want = want.astype(np.dtype(dtype))
    close(run("matmul", dtype, [a, b], want.shape, dtype), want, dtype)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", BF16], ids=str)
def test_layout_ops(dtype):
    x = sample(dtype, (2, 3, 4))
    bits = lambda v: np.asarray(v).view(np.uint8)
    want = np.ascontiguousarray(x.transpose(2, 0, 1))
    assert (bits(run("permute", dtype, [x], want.shape, dtype, perm=(2, 0, 1))) == bits(want)).all()
    small = x[:, :1]
    want = np.ascontiguousarray(np.broadcast_to(small, (2, 3, 4)))
    assert (bits(run("expand", dtype, [small], (2, 3, 4), dtype, shape=(2, 3, 4))) == bits(want)).all()
    want = np.ascontiguousarray(x[0:2:1, 1:3:1, 0:4:3])
    got = run("slice", dtype, [x], want.shape, dtype, starts=(0, 1, 0), stops=(2, 3, 4), steps=(1, 1, 3))
    assert (bits(got) == bits(want)).all()
    y = sample(dtype, (2, 1, 4))
    want = np.concatenate([x, y, x], axis=1)
    assert (bits(run("concat", dtype, [x, y, x], want.shape, dtype, axis=1)) == bits(want)).all()
    assert (bits(run("copy", dtype, [x], x.shape, dtype)) == bits(x)).all()


@pytest.mark.parametrize(
    "dtype,value", [("float32", 1.5), ("int32", -2), ("bool", True), (BF16, 0.3), ("uint8", 7)], ids=str
)
def test_pad_and_full(dtype, value):
    x = sample(dtype, (2, 3))
    pads = ((1, 0), (2, 1))
    want = np.pad(x, pads, constant_values=np.asarray(value).astype(np.dtype(dtype)))
    got = run("pad", dtype, [x], want.shape, dtype, pads=pads, value=value)
    np.testing.assert_array_equal(f32(got), f32(want))
    got = run("full", dtype, [], (3, 2), dtype, shape=(3, 2), value=value, dtype=np.dtype(dtype))
    np.testing.assert_array_equal(f32(got), f32(np.full((3, 2), value, np.dtype(dtype))))


@pytest.mark.parametrize(
    "dtype,start,step",
    [("int64", 3, -2), ("float32", 0.5, 0.25), ("float64", -1.0, 0.1), (BF16, 1.0, 0.5), ("uint8", 0, 3)],
    ids=str,
)
def test_arange(dtype, start, step):
    want = (start + np.arange(7, dtype=np.float64) * step).astype(np.dtype(dtype))
    got = run("arange", dtype, [], (7,), dtype, start=start, step=step, dtype=np.dtype(dtype))
    np.testing.assert_array_equal(f32(got), f32(want))


# -- indexing -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", BF16], ids=str)
@pytest.mark.parametrize("axis", [0, 1])
def test_gather(dtype, axis):
    x = sample(dtype, (4, 5, 2))
    index = rng.integers(0, x.shape[axis], (3, 2)).astype(np.int64)
    want = np.take(x, index, axis=axis)
    got = run("gather", dtype, [x, index], want.shape, dtype, axis=axis)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("op", ["gather", "scatter", "scatter_add"])
@pytest.mark.parametrize("bad", [5, -1])
def test_index_out_of_range_raises(op, bad):
    x = sample("float32", (5, 3))
    index = np.array([0, bad, 2], np.int64)
    ins = [x, index] if op == "gather" else [x, index, sample("float32", (3, 3))]
    out_shape = (3, 3) if op == "gather" else x.shape
    with pytest.raises(
        OpArgumentError, match=rf"^\[cuda\] {op}: index {bad} is out of range for axis 0 of size 5"
    ):
        run(op, "float32", ins, out_shape, "float32", axis=0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "uint8", BF16], ids=str)
@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_add_accumulates_duplicates(dtype, axis):
    x = sample(dtype, (4, 3))
    index = np.array([[1, 1], [0, 1]], np.int64)  # duplicates
    src_shape = x.shape[:axis] + index.shape + x.shape[axis + 1 :]
    src = sample(dtype, src_shape)
    wide = f32(x).astype(np.float64) if np.dtype(dtype).kind == "f" or dtype == BF16 else x.astype(np.int64)
    want = wide.copy()
    srcw = f32(src).astype(wide.dtype)
    for j, i in enumerate(index.reshape(-1)):  # an independent loop
        sl = [slice(None)] * 2
        sl[axis] = i
        sj = [slice(None)] * 2
        sj[axis] = j
        want[tuple(sl)] += srcw.reshape(x.shape[:axis] + (4,) + x.shape[axis + 1 :])[tuple(sj)]
    close(
        run("scatter_add", dtype, [x, index, src], x.shape, dtype, axis=axis),
        want.astype(np.dtype(dtype)),
        dtype,
    )


@pytest.mark.parametrize("dtype", ["float32", "int8", BF16], ids=str)
def test_scatter_assigns(dtype):
    x = sample(dtype, (3, 4))
    index = np.array([2, 0], np.int64)
    src = sample(dtype, (3, 2))
    want = x.copy()
    want[:, 2], want[:, 0] = src[:, 0], src[:, 1]
    got = run("scatter", dtype, [x, index, src], x.shape, dtype, axis=1)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


# -- random ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_philox_uniform_body(dtype):
    got = run(
        "philox_uniform",
        dtype,
        [],
        (3, 7),
        dtype,
        shape=(3, 7),
        seed=2**40 + 5,
        offset=11,
        dtype=np.dtype(dtype),
    )
    assert got.dtype == np.dtype(dtype) and ((got >= 0) & (got < 1)).all()
    # element 4 * k starts counter offset + k: a shifted offset gives the shifted stream
    shifted = run(
        "philox_uniform",
        dtype,
        [],
        (17,),
        dtype,
        shape=(17,),
        seed=2**40 + 5,
        offset=12,
        dtype=np.dtype(dtype),
    )
    np.testing.assert_array_equal(got.reshape(-1)[4:], shifted)
