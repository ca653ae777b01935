"""Reductions, matmul, layout, indexing and creation primitives of the OpenCL plugin."""

from __future__ import annotations

import re

import numpy as np
import pytest
from opencl_harness import assert_close

pytest.importorskip("pyopencl")

from adapter_api import CONTRACT_VERSION, DeviceError, KernelContext, OpArgumentError  # noqa: E402
from plugins.opencl.kernels import ALL, FLOATS, NUMERIC  # noqa: E402

RNG = np.random.default_rng(1)


def sample(shape, dtype, lo=-3.0, hi=3.0):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.kind == "f":
        return RNG.uniform(lo, hi, shape).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(
        max(info.min, int(lo) * 10), min(info.max, int(hi) * 10), shape, endpoint=True
    ).astype(dtype)


# -- reductions --------------------------------------------------------------------------
REDUCE_CASES = [  # (shape, axes): covers rows, chunked rows, cols and the permute path
    ((4, 5, 6), (0,)),
    ((4, 5, 6), (1,)),
    ((4, 5, 6), (2,)),
    ((4, 5, 6), (0, 2)),
    ((4, 5, 6), (0, 1, 2)),
    ((4, 5, 6), (1, 2)),
    ((3, 5000), (1,)),
    ((70001,), (0,)),
    ((2000, 3), (0,)),
    ((3000, 4), (0,)),
    ((1024, 64), (0,)),  # CPU devices: columns in place (a norm weight's gradient)
    ((3, 100, 17), (1,)),
    ((40, 300), (1,)),  # CPU devices: one item per row
    ((2, 20, 64, 5), (2, 3)),
    ((3, 1, 40), (1, 2)),
    ((), ()),
    ((5, 1), (1,)),
]
REDUCE_REF = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}
REDUCE_DTYPES = {"sum": NUMERIC, "prod": NUMERIC, "max": ALL, "min": ALL}


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape,axes", REDUCE_CASES, ids=str)
@pytest.mark.parametrize("op,dtype", [(op, dt) for op, dts in REDUCE_DTYPES.items() for dt in dts])
def test_reduce(h, op, dtype, shape, axes, keepdim):
    if op == "prod":
        x = sample(shape, dtype, 0.9, 1.1) if np.dtype(dtype).kind == "f" else sample(shape, dtype, -1, 1)
    else:
        x = sample(shape, dtype)
    kw = {"dtype": np.float32 if dtype == "float16" else dtype} if op in ("sum", "prod") else {}
    with np.errstate(all="ignore"):
        want = np.asarray(REDUCE_REF[op](x, axis=axes, keepdims=keepdim, **kw)).astype(dtype)
    got = h.run(op, [x], want.shape, dtype, axes=axes, keepdim=keepdim)
    rtol = {"float16": 2e-2, "float32": 1e-4}.get(dtype) if op == "sum" else None
    atol = 1e-2 if dtype == "float16" else None
    if op == "sum" and dtype == "float32":  # sums near 0: the rounding bound of R terms up to 3
        atol = float(np.finfo(np.float32).eps) * 3 * max(1, x.size // max(1, want.size))
    assert_close(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize("op,ident", [("sum", 0), ("prod", 1)])
def test_reduce_empty_axis(h, op, ident, dtype):
    x = np.zeros((0, 5), dtype)
    assert_close(h.run(op, [x], (5,), dtype, axes=(0,), keepdim=False), np.full(5, ident, dtype))
    assert_close(
        h.run(op, [x.T.copy()], (5, 1), dtype, axes=(1,), keepdim=True), np.full((5, 1), ident, dtype)
    )


@pytest.mark.parametrize("dtype", FLOATS)
def test_max_min_propagate_nan(h, dtype):
    x = sample((3, 300), dtype)
    x[1, 17] = np.nan
    for op, ref in (("max", np.max), ("min", np.min)):
        assert_close(h.run(op, [x], (3,), dtype, axes=(1,), keepdim=False), ref(x, axis=1))


ARG_CASES = [((7, 9), 0), ((7, 9), 1), ((3, 1000), 1), ((40, 300), 1), ((4, 5, 6), 1), ((50,), 0), ((), 0)]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape,axis", ARG_CASES, ids=str)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", ALL)
def test_argreduce_first_index(h, dtype, op, shape, axis, keepdim):
    x = sample(shape, dtype, -2, 2)  # few distinct values: many ties
    if np.dtype(dtype).kind == "f":
        x = np.round(x).astype(dtype)
    ref = np.argmax if op == "argmax" else np.argmin
    want = np.asarray(ref(x, axis=axis if x.ndim else None, keepdims=keepdim if x.ndim else False))
    got = h.run(op, [x], want.shape, np.int64, axis=axis, keepdim=keepdim)
    assert_close(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_argmax_nan_is_first_max(h, dtype):
    x = np.ones((2, 500), dtype)
    x[0, 300] = x[0, 400] = np.nan
    x[1, 7] = 5
    assert_close(h.run("argmax", [x], (2,), np.int64, axis=1, keepdim=False), np.array([300, 7]))
    assert_close(h.run("argmin", [x], (2,), np.int64, axis=1, keepdim=False), np.array([300, 0]))


# -- matmul ------------------------------------------------------------------------------
MATMUL_SHAPES = [
    ((1, 1), (1, 1)),
    ((33, 47), (47, 29)),
    ((3, 20, 30), (3, 30, 10)),
    ((2, 2, 5, 64), (2, 2, 64, 3)),
    ((4, 0), (0, 5)),
    ((0, 3), (3, 4)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", NUMERIC)
def test_matmul(h, dtype, sa, sb):
    small = np.dtype(dtype).kind in "iu"
    a, b = sample(sa, dtype, 0 if small else -1, 1), sample(sb, dtype, 0 if small else -1, 1)
    acc = np.float64 if np.dtype(dtype).kind == "f" else dtype
    want = np.matmul(a.astype(acc), b.astype(acc)).astype(dtype)
    got = h.run("matmul", [a, b], want.shape, dtype)
    assert_close(
        got,
        want,
        rtol=1e-2 if dtype == "float16" else 1e-4 if dtype == "float32" else None,
        atol=1e-2 if dtype == "float16" else None,
    )


# (a, b) as stored; transposes apply to the last two dims. On CPU devices these cover the
# in-place kernel (ragged rows and columns, a transposed A read through its strides, a batch),
# the few-rows kernel and the packed kernel (B over 1 MiB).
MATMUL_T_CASES = [
    ((1024 // 16, 64), (64, 192), False, False),
    ((37, 29), (29, 46), False, False),
    ((3, 20, 13), (3, 13, 21), False, False),
    ((70, 19), (70, 45), True, False),
    ((2, 33, 9), (2, 33, 17), True, False),
    ((19, 33), (40, 33), False, True),
    ((33, 19), (40, 33), True, True),
    ((5, 64), (64, 20), False, False),
    ((12, 600), (600, 500), False, False),
    ((600, 12), (600, 500), True, False),
]


@pytest.mark.parametrize("sa,sb,tx,ty", MATMUL_T_CASES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_matmul_t(h, dtype, sa, sb, tx, ty):
    a, b = sample(sa, dtype, -1, 1), sample(sb, dtype, -1, 1)
    acc = np.float64 if np.dtype(dtype).kind == "f" else dtype
    ta = np.swapaxes(a, -1, -2) if tx else a
    tb = np.swapaxes(b, -1, -2) if ty else b
    want = np.matmul(ta.astype(acc), tb.astype(acc)).astype(dtype)
    got = h.run("matmul_t", [a, b], want.shape, dtype, transpose_x=tx, transpose_y=ty)
    f32, f64 = dtype == "float32", dtype == "float64"
    # NOTE: float64 sums of k products of |x| <= 1 in another order differ by up to about
    # k * eps where they cancel (-0.0030046473972816 vs ...2653 at k = 600 on Intel's runtime)
    k = ta.shape[-1]
    atol = 1e-4 if f32 else (k * np.finfo(np.float64).eps if f64 else None)
    assert_close(got, want, rtol=1e-4 if f32 else None, atol=atol)


# -- layout ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL)
def test_layout_ops(h, dtype):
    x = sample((2, 3, 4), dtype)
    assert_close(h.run("permute", [x], (4, 2, 3), dtype, perm=(2, 0, 1)), x.transpose(2, 0, 1))
    assert_close(h.run("permute", [x], (2, 3, 4), dtype, perm=(0, 1, 2)), x)
    s = sample((), dtype)
    assert_close(h.run("permute", [s], (), dtype, perm=()), s)
    e = sample((3, 1, 4), dtype)
    assert_close(h.run("expand", [e], (3, 5, 4), dtype, shape=(3, 5, 4)), np.broadcast_to(e, (3, 5, 4)))
    assert_close(h.run("expand", [e[:0]], (0, 5, 4), dtype, shape=(0, 5, 4)), np.zeros((0, 5, 4), dtype))
    m = sample((10, 12), dtype)
    assert_close(
        h.run("slice", [m], (4, 4), dtype, starts=(1, 2), stops=(9, 12), steps=(2, 3)), m[1:9:2, 2:12:3]
    )
    assert_close(h.run("slice", [m], (0, 12), dtype, starts=(3, 0), stops=(3, 12), steps=(1, 1)), m[3:3])
    assert_close(h.run("copy", [m], m.shape, dtype), m)
    assert_close(
        h.run("pad", [m], (13, 15), dtype, pads=((1, 2), (0, 3)), value=1),
        np.pad(m, ((1, 2), (0, 3)), constant_values=1),
    )
    assert_close(
        h.run("pad", [m[:0]], (2, 12), dtype, pads=((1, 1), (0, 0)), value=0), np.zeros((2, 12), dtype)
    )


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("dtype", ["float32", "bool", "int64", "float16"])
def test_concat(h, dtype, axis):
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    shapes[1][axis], shapes[2][axis] = 1, 0
    xs = [sample(tuple(s), dtype) for s in shapes]
    want = np.concatenate(xs, axis)
    out = h.empty(want.shape, dtype)
    h.kernel("concat", dtype).fn(h.ctx, [out], [h.put(x) for x in xs], axis=axis)
    assert_close(h.get(out), want)


# -- indexing ----------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", ALL)
def test_gather_scatter(h, dtype, axis):
    x = sample((5, 6), dtype)
    idx = np.array([[4, 0], [2, 2], [5 if axis else 4, 1]], np.int64)
    want = np.take(x, idx, axis)
    assert_close(h.run("gather", [x, idx], want.shape, dtype, axis=axis), want)
    # scatter: distinct indices, so the result is defined
    uidx = np.array([3, 0, 4], np.int64)
    src = sample((3, 6) if axis == 0 else (5, 3), dtype)
    want = x.copy()
    if axis == 0:
        want[uidx] = src
    else:
        want[:, uidx] = src
    assert_close(h.run("scatter", [x, uidx, src], x.shape, dtype, axis=axis), want)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", NUMERIC)
def test_scatter_add_accumulates_duplicates(h, dtype, axis):
    x = sample((5, 6), dtype, 0, 3)
    idx = np.array([[1, 1], [4, 1], [0, 1]], np.int64)
    src = sample((3, 2, 6) if axis == 0 else (5, 3, 2), dtype, 0, 3)
    want = x.astype(np.float64 if np.dtype(dtype).kind == "f" else dtype)
    np.add.at(want, (idx,) if axis == 0 else (slice(None), idx), src)
    got = h.run("scatter_add", [x, idx, src], x.shape, dtype, axis=axis)
    assert_close(got, want.astype(dtype))


@pytest.mark.parametrize("shape,axis", [((46, 64), 0), ((3, 46, 8), 1)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "float16"])
def test_scatter_add_embedding_gradient(h, dtype, shape, axis):
    """Many columns (CPU devices: an item per column, no atomics): 1024 rows into 46."""
    x = sample(shape, dtype, 0, 3)
    idx = RNG.integers(0, 46, 1024).astype(np.int64)
    src = sample((*shape[:axis], 1024, *shape[axis + 1 :]), dtype, 0, 3)
    want = x.astype(np.float64 if np.dtype(dtype).kind == "f" else dtype)
    np.add.at(want, (slice(None),) * axis + (idx,), src)
    got = h.run("scatter_add", [x, idx, src], x.shape, dtype, axis=axis)
    f16 = dtype == "float16"
    assert_close(got, want.astype(dtype), rtol=1e-2 if f16 else None, atol=0.5 if f16 else None)


def test_scatter_add_many_collisions(h):
    """Thousands of float adds on the same few elements (the atomic compare-and-swap loop)."""
    x = np.zeros(3, np.float32)
    idx = RNG.integers(0, 3, 20000).astype(np.int64)
    src = np.ones(20000, np.float32)
    assert_close(
        h.run("scatter_add", [x, idx, src], (3,), np.float32, axis=0),
        np.bincount(idx, minlength=3).astype(np.float32),
    )
    u = np.zeros(7, np.uint8)  # 1-byte values: CAS on the enclosing 32-bit word
    uidx = RNG.integers(0, 7, 5000).astype(np.int64)
    assert_close(
        h.run("scatter_add", [u, uidx, np.ones(5000, np.uint8)], (7,), np.uint8, axis=0),
        (np.bincount(uidx, minlength=7) % 256).astype(np.uint8),
    )


@pytest.mark.parametrize("bad", [7, -1])
@pytest.mark.parametrize("op", ["gather", "scatter", "scatter_add"])
@pytest.mark.parametrize("cols", [2, 20])  # 20: scatter_add's item per column on CPU devices
def test_index_out_of_range_raises(h, op, bad, cols):
    x = np.arange(5 * cols, dtype=np.float32).reshape(5, cols)
    idx = np.array([0, bad, 2], np.int64)
    ins = [x, idx] if op == "gather" else [x, idx, np.ones((3, cols), np.float32)]
    with pytest.raises(OpArgumentError, match=rf"\[{op}\] index {bad} out of range for axis 0 of size 5"):
        h.run(op, ins, (3, cols) if op == "gather" else (5, cols), np.float32, axis=0)
    # the error does not stick: the next call succeeds
    assert_close(h.run("gather", [x, np.array([4], np.int64)], (1, cols), np.float32, axis=0), x[[4]])


# -- creation ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL)
def test_full(h, dtype):
    value = True if dtype == "bool" else 3
    for shape in ((), (0,), (3, 77)):
        assert_close(
            h.run("full", [], shape, dtype, shape=shape, value=value, dtype=np.dtype(dtype)),
            np.full(shape, value, dtype),
        )


@pytest.mark.parametrize("dtype", NUMERIC)
def test_arange(h, dtype):
    start, step = (2, 3) if np.dtype(dtype).kind in "iu" else (-1.5, 0.25)
    for n in (0, 1, 1000):
        want = (start + np.arange(n, dtype=np.float64) * step).astype(dtype)
        assert_close(h.run("arange", [], (n,), dtype, start=start, step=step, dtype=np.dtype(dtype)), want)


# -- philox ------------------------------------------------------------------------------
M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
KAT = [  # Random123 known-answer vectors for philox4x32_10
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


def philox_ref(ctr, key):
    """Philox4x32-10 in numpy (vectorised over the first axis of ``ctr``)."""
    c = [np.asarray(v, np.uint64) for v in ctr]
    k0, k1 = (np.uint64(v) for v in key)
    mask = np.uint64(0xFFFFFFFF)
    for r in range(10):
        if r:
            k0, k1 = (k0 + np.uint64(W0)) & mask, (k1 + np.uint64(W1)) & mask
        p0, p1 = np.uint64(M0) * c[0], np.uint64(M1) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & mask, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & mask]
    return [v.astype(np.uint32) for v in c]


def philox_uniform_ref(n, seed, offset, dtype):
    g = (offset + np.arange(-(-n // 4), dtype=np.uint64)) & np.uint64(2**64 - 1)
    zero = np.zeros_like(g)
    bits = np.stack(
        philox_ref(
            (g & np.uint64(0xFFFFFFFF), g >> np.uint64(32), zero, zero), (seed % 2**32, (seed >> 32) % 2**32)
        ),
        axis=1,
    ).reshape(-1)[:n]
    return ((bits >> 8).astype(dtype) * dtype(2.0**-24)).astype(dtype)


@pytest.mark.parametrize("ctr,key,want", KAT)
def test_philox_known_answers(h, ctr, key, want):
    assert [int(v) for v in philox_ref(ctr, key)] == list(want)  # the reference itself
    from pyopencl import cltypes

    dev = h.rt.device(0)
    out = h.empty((4,), np.uint32)
    dev.kernel("math", "float32", "philox_bits")(
        h.q, (1,), None, out.buffer, cltypes.make_uint4(*ctr), cltypes.make_uint2(*key)
    )
    # philox_bits writes from the buffer start; read it without the harness's offset
    raw = np.empty(4, np.uint32)
    h.rt.copy_d2h(0, raw, out.buffer, 0, h.q)
    assert [int(v) for v in raw] == list(want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "n,seed,offset",
    [(1, 0, 0), (4, 0, 0), (1001, 42, 7), (10, 2**40 + 5, 2**33 - 1), (6, 2**64 - 1, 2**64 - 2), (0, 1, 0)],
)
def test_philox_uniform_bitwise(h, dtype, n, seed, offset):
    got = h.run(
        "philox_uniform", [], (n,), dtype, shape=(n,), seed=seed, offset=offset, dtype=np.dtype(dtype)
    )
    want = philox_uniform_ref(n, seed, offset, dtype)
    assert got.tobytes() == want.tobytes()
    if n >= 4 and seed == 0 and offset == 0:  # counter 0, key 0: the first KAT vector
        assert list(got[:4]) == [dtype((v >> 8) * 2.0**-24) for v in KAT[0][2]]


# -- devices without fp64 ----------------------------------------------------------------
def test_float64_on_device_without_fp64_names_the_device(h, registry):
    import plugins.opencl as plugin

    rt = registry.runtimes["opencl"][1]()
    dev = rt.device(0)
    dev.has_fp64 = False
    ctx = KernelContext(0, None, rt)
    x = rt.view(rt.allocate(0, 8), 0, (1,), np.float64)
    with pytest.raises(DeviceError, match=rf"float64 .*cl_khr_fp64.*'{re.escape(dev.name)}'"):
        registry.kernels[("exp", "opencl", np.dtype(np.float64))].fn(ctx, [x], [x])
    assert plugin.CONTRACT == CONTRACT_VERSION
