"""Every primitive on every device, for every dtype its plugin registers, against numpy.

Shapes include 0-d, empty and broadcast cases. Half-precision results are compared with a
float64 numpy reference rounded to the dtype.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import special

import framework as fw
from tests.conftest import assert_close

ALL = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool"]
RNG = np.random.default_rng(1234)


def sample(shape, dtype, lo=-3.0, hi=3.0, positive=False):
    d = np.dtype(fw.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    if d == np.bool_:
        return RNG.random(shape) > 0.5
    if d.kind in "iu":
        lo_i = 0 if (d.kind == "u" or positive) else -20
        return RNG.integers(lo_i + (1 if positive else 0), 20, size=shape).astype(d)
    if positive:
        lo = 0.1
    return RNG.uniform(lo, hi, size=shape).astype(d)


def dtypes_of(device, op, wanted=ALL):
    reg = {str(d) for d in fw.registered_kernels(device).get(op, [])}
    picked = [d for d in wanted if d in reg]
    if not picked:
        pytest.skip(f"{device} registers no kernel for {op}")
    return picked


def ref64(fn, *arrays, out_dtype):
    args = [a.astype(np.float64) if a.dtype.kind == "f" or a.dtype == fw.bfloat16 else a for a in arrays]
    with np.errstate(all="ignore"):
        r = fn(*args)
    return np.asarray(r).astype(out_dtype)


UNARY = {
    "neg": (fw.neg, np.negative, False),
    "abs": (fw.abs, np.abs, False),
    "sign": (fw.sign, np.sign, False),
    "exp": (fw.exp, np.exp, False),
    "log": (fw.log, np.log, True),
    "sqrt": (fw.sqrt, np.sqrt, True),
    "rsqrt": (fw.rsqrt, lambda x: 1.0 / np.sqrt(x), True),
    "sin": (fw.sin, np.sin, False),
    "cos": (fw.cos, np.cos, False),
    "tanh": (fw.tanh, np.tanh, False),
    "erf": (fw.erf, special.erf, False),
    "floor": (fw.floor, np.floor, False),
    "ceil": (fw.ceil, np.ceil, False),
}
SHAPES = [(), (0,), (5,), (2, 3, 4)]


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(device, op):
    fn, ref, positive = UNARY[op]
    float_only = op not in ("neg", "abs", "sign")
    for dt in dtypes_of(
        device, op, [d for d in ALL if d != "bool" and (not float_only or d.startswith(("float", "bfloat")))]
    ):
        for shape in SHAPES:
            x = sample(shape, dt, positive=positive)
            got = fn(fw.to_tensor(x, device=device))
            assert got.dtype == x.dtype and got.shape == shape, (op, dt, shape)
            assert_close(got, ref64(ref, x, out_dtype=x.dtype), dtype=x.dtype, rtol=_rtol(x.dtype, op))


def _rtol(d, op=""):
    d = np.dtype(d)
    if d == np.float32:
        return 1e-5 if op not in ("erf", "tanh", "rsqrt", "pow") else 2e-5
    return None


BINARY = {
    "add": (fw.add, np.add),
    "sub": (fw.subtract, np.subtract),
    "mul": (fw.multiply, np.multiply),
    "div": (fw.divide, np.divide),
    "pow": (fw.pow, np.power),
    "maximum": (fw.maximum, np.maximum),
    "minimum": (fw.minimum, np.minimum),
    "floor_divide": (fw.floor_divide, np.floor_divide),
    "remainder": (fw.remainder, np.remainder),
    "eq": (fw.equal, np.equal),
    "ne": (fw.not_equal, np.not_equal),
    "lt": (fw.less_than, np.less),
    "le": (fw.less_equal, np.less_equal),
    "gt": (fw.greater_than, np.greater),
    "ge": (fw.greater_equal, np.greater_equal),
    "logical_and": (fw.logical_and, np.logical_and),
    "logical_or": (fw.logical_or, np.logical_or),
}
PAIRS = [
    ((), ()),
    ((0,), (0,)),
    ((4,), (4,)),
    ((2, 3, 4), (3, 4)),
    ((2, 1, 4), (1, 3, 1)),
    ((), (2, 3)),
    ((0, 3), (1, 3)),
]


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary(device, op):
    fn, ref = BINARY[op]
    for dt in dtypes_of(device, op):
        for sa, sb in PAIRS:
            a = sample(sa, dt)
            b = sample(sb, dt, positive=op in ("div", "floor_divide", "remainder", "pow"))
            if op == "pow":
                a = np.abs(a) if a.dtype.kind != "b" else a
                b = (np.abs(b) % 3).astype(b.dtype) if b.dtype.kind in "iu" else b
            got = fn(fw.to_tensor(a, device=device), fw.to_tensor(b, device=device))
            out_dtype = (
                np.bool_
                if op in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or")
                else a.dtype
            )
            want = ref64(ref, a, b, out_dtype=out_dtype)
            assert got.shape == np.broadcast_shapes(sa, sb), (op, dt, sa, sb)
            assert_close(got, want, dtype=out_dtype, rtol=_rtol(out_dtype, op))


def test_where(device):
    # the last shapes have >= 1024 elements (the cpu plugin's bit-select path), broadcast on
    # every operand, and carry NaN and infinities in both branches
    shapes = [
        ((), (), ()),
        ((3, 4), (4,), ()),
        ((2, 1), (1, 3), (2, 3)),
        ((0,), (0,), (0,)),
        ((64, 1), (1, 33), (64, 33)),
        ((2, 32, 1), (32, 48), ()),
        ((4096,), (4096,), (1,)),
    ]
    for dt in dtypes_of(device, "where"):
        for sc, sx, sy in shapes:
            c = sample(sc, "bool")
            x, y = sample(sx, dt), sample(sy, dt)
            if np.dtype(x.dtype).kind == "f" or x.dtype == np.dtype(fw.bfloat16):
                for a in (x, y):
                    if a.size >= 3:
                        flat = a.reshape(-1)
                        flat[::7] = np.nan
                        flat[1::11] = np.inf
                        flat[2::13] = -np.inf
            got = fw.where(
                fw.to_tensor(c, device=device), fw.to_tensor(x, device=device), fw.to_tensor(y, device=device)
            )
            want = np.where(c, x, y)
            assert got.shape == want.shape, (dt, sc, sx, sy)
            if want.size >= 1024 and (want.dtype.kind == "f" or want.dtype == np.dtype(fw.bfloat16)):
                assert np.isnan(want.astype(np.float64)).any() and np.isinf(want.astype(np.float64)).any()
            assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("src", ALL)
def test_cast(device, src):
    for dst in dtypes_of(device, "cast"):
        if src not in {str(d) for d in fw.registered_kernels(device)["cast"]}:
            pytest.skip(f"{device} cannot cast from {src}")
        x = sample((7,), src, lo=-100, hi=100)
        got = fw.to_tensor(x, device=device).astype(dst)
        d = np.dtype(fw.bfloat16) if dst == "bfloat16" else np.dtype(dst)
        if d == np.bool_:
            want = x != 0
        elif d.kind in "iu" and (x.dtype.kind == "f" or x.dtype == fw.bfloat16):  # truncate, saturate
            want = np.clip(np.trunc(x.astype(np.float64)), np.iinfo(d).min, np.iinfo(d).max).astype(d)
        else:
            want = x.astype(d)
        assert got.dtype == d
        assert_close(got, want, dtype=d)


REDUCE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


@pytest.mark.parametrize("op", sorted(REDUCE))
def test_reductions(device, op):
    fn = getattr(fw, op)
    for dt in dtypes_of(device, op, [d for d in ALL if d != "bool"]):
        for shape, axis, keep in [
            ((), None, False),
            ((5,), 0, False),
            ((2, 3, 4), (0, 2), True),
            ((2, 3, 4), -1, False),
            ((3, 4), None, True),
            ((0, 4), 1, False),
            ((3, 5), 0, True),
        ]:
            x = sample(shape, dt, lo=0.5, hi=1.5) if op == "prod" else sample(shape, dt)
            if op == "prod" and x.dtype.kind in "iu":
                x = (x % 3 + 1).astype(x.dtype)
            got = fn(fw.to_tensor(x, device=device), axis=axis, keepdim=keep)
            want_dtype = np.int64 if x.dtype.kind in "iu" and op in ("sum", "prod") else x.dtype
            ax = (
                tuple(a % max(len(shape), 1) for a in ((axis,) if isinstance(axis, int) else axis))
                if axis is not None
                else None
            )
            want = REDUCE[op](
                x.astype(np.float64)
                if x.dtype.kind == "f" or x.dtype == fw.bfloat16
                else x.astype(want_dtype),
                axis=ax,
                keepdims=keep,
            )
            tol = 5e-5 if np.dtype(want_dtype) == np.float32 else None
            assert_close(got, np.asarray(want).astype(want_dtype), dtype=want_dtype, rtol=tol)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_sums_over_many_leading_rows(device, dt):
    # a weight's gradient: the sum over every row (the cpu plugin makes it one BLAS product
    # from 64 rows on); infinities and NaN stay where a column has them
    for shape, axis, keep in [((1024, 64), 0, False), ((16, 64, 33), (0, 1), True), ((63, 5), 0, False)]:
        x = sample(shape, dt)
        x.reshape(-1, shape[-1])[7, 2] = np.inf
        x.reshape(-1, shape[-1])[9, 3] = np.nan
        x.reshape(-1, shape[-1])[[5, 6], [4, 4]] = [np.inf, -np.inf]
        got = fw.sum(fw.to_tensor(x, device=device), axis=axis, keepdim=keep)
        with np.errstate(invalid="ignore"):
            want = x.astype(np.float64).sum(axis=axis, keepdims=keep).astype(dt)
        assert_close(got, want, dtype=np.dtype(dt), rtol=2e-5 if dt == "float32" else None)
        flat = got.numpy().reshape(-1)
        assert flat[2] == np.inf and np.isnan(flat[3]) and np.isnan(flat[4])


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reductions(device, op):
    fn = getattr(fw, op)
    ref = getattr(np, op)
    for dt in dtypes_of(device, op):
        x = sample((4, 5, 3), dt)
        x[1, :, 0] = x[1, 0, 0]  # ties: the first index wins
        t = fw.to_tensor(x, device=device)
        assert_close(fn(t, axis=1), ref(x, axis=1))
        assert_close(fn(t, axis=-1, keepdim=True), ref(x, axis=-1, keepdims=True))
        assert_close(fn(t), ref(x))
        assert fn(t).dtype == np.int64


def test_matmul(device):
    for dt in dtypes_of(device, "matmul", [d for d in ALL if d != "bool"]):
        for sa, sb in [
            ((3, 4), (4, 5)),
            ((2, 3, 4), (2, 4, 5)),
            ((2, 1, 3, 4), (3, 4, 2)),
            ((4,), (4, 3)),
            ((3, 4), (4,)),
            ((4,), (4,)),
            ((3, 0), (0, 2)),
            ((0, 4), (4, 2)),
        ]:
            a, b = sample(sa, dt, -2, 2), sample(sb, dt, -2, 2)
            got = fw.matmul(fw.to_tensor(a, device=device), fw.to_tensor(b, device=device))
            want = (
                np.matmul(a.astype(np.float64), b.astype(np.float64))
                if a.dtype.kind == "f" or a.dtype == fw.bfloat16
                else np.matmul(a, b)
            )
            assert_close(
                got,
                np.asarray(want).astype(a.dtype),
                dtype=a.dtype,
                rtol=1e-4 if a.dtype == np.float32 else None,
                atol=1e-4 if a.dtype == np.float32 else None,
            )


def test_layout_ops(device):
    for dt in dtypes_of(device, "permute"):
        x = sample((2, 3, 4), dt)
        t = fw.to_tensor(x, device=device)
        assert_close(t.transpose([2, 0, 1]), x.transpose(2, 0, 1))
        assert_close(
            fw.expand(fw.to_tensor(x[:, :1], device=device), (2, 3, 4)), np.broadcast_to(x[:, :1], (2, 3, 4))
        )
        assert_close(t[1:, ::2, 1:4:2], x[1:, ::2, 1:4:2])
        assert_close(t[::-1, 1], x[::-1, 1])
        assert_close(fw.concat([t, t[:, :1]], axis=1), np.concatenate([x, x[:, :1]], axis=1))
        assert_close(fw.pad(t, [1, 2, 0, 1]), np.pad(x, ((0, 0), (0, 1), (1, 2))))
        assert_close(t[0:0], x[0:0])
        assert_close(t.clone(), x)


def test_every_permutation_of_a_4d_tensor(device):
    """Permutations that keep trailing axes in place (copied as runs) and those that do not,
    on empty tensors too, for every dtype the device permutes."""
    for dt in dtypes_of(device, "permute"):
        for shape in [(2, 3, 4, 5), (3, 0, 2, 4)]:
            x = sample(shape, dt)
            t = fw.to_tensor(x, device=device)
            for perm in itertools.permutations(range(4)):
                assert_close(t.transpose(list(perm)), x.transpose(perm))


@pytest.mark.parametrize("static", [False, True])
def test_permutes_that_keep_runs_of_every_width(device, static):
    """Large permutations that keep their trailing axes (the cpu plugin copies the runs in C
    from 64 KB on, and always in a static program): runs of 2 to 128 bytes, every dtype, the
    qkv split of attention heads and its inverse."""
    cases = [
        ((16, 64, 3, 4, 16), (2, 0, 3, 1, 4)),
        ((3, 16, 4, 64, 16), (1, 3, 0, 2, 4)),
        ((64, 48, 12), (1, 0, 2)),
        ((40, 50, 5), (1, 0, 2)),
        ((9, 33, 20, 32), (2, 0, 1, 3)),
        ((300, 2, 60), (1, 0, 2)),
    ]
    for dt in dtypes_of(device, "permute"):
        for shape, perm in cases:
            x = sample(shape, dt)
            f = fw.jit.to_static(lambda t, p=perm: t.transpose(list(p))) if static else None
            t = fw.to_tensor(x, device=device)
            for _ in range(2 if static else 1):  # the second run replays the bound call
                got = f(t) if static else t.transpose(list(perm))
                assert_close(got, x.transpose(perm))


def test_gather_scatter(device):
    for dt in dtypes_of(device, "gather"):
        x = sample((5, 4), dt)
        idx = np.array([[3, 0], [1, 1]])
        t = fw.to_tensor(x, device=device)
        i = fw.to_tensor(idx, device=device)
        assert_close(fw.gather(t, i, axis=0), np.take(x, idx, axis=0))
        assert_close(fw.gather(t, i, axis=1), np.take(x, idx, axis=1))
        assert_close(fw.gather(t, fw.to_tensor(np.zeros((0,), np.int64), device=device)), x[:0])
        src = sample((5, 2, 2), dt)
        if dt in {str(d) for d in fw.registered_kernels(device).get("scatter_add", [])}:
            want = x.copy()
            np.add.at(want, (slice(None), idx), src)
            assert_close(fw.scatter_add(t, i, fw.to_tensor(src, device=device), axis=1), want)
        want = x.copy()
        idx1 = np.array([3, 1])
        want[idx1] = src[:2, 0, :2][:, :1].repeat(4, 1) if False else src[:2, 0, :].repeat(2, axis=1)[:, :4]
        got = fw.scatter(
            t, fw.to_tensor(idx1, device=device), fw.to_tensor(want[idx1], device=device), axis=0
        )
        assert_close(got, want)


def test_full_arange(device):
    for dt in dtypes_of(device, "full"):
        d = np.dtype(fw.bfloat16) if dt == "bfloat16" else np.dtype(dt)
        assert_close(
            fw.full((2, 3), 1 if d != np.bool_ else True, dtype=dt, device=device), np.full((2, 3), 1, d)
        )
        assert_close(fw.zeros((0, 3), dtype=dt, device=device), np.zeros((0, 3), d))
        assert fw.ones((), dtype=dt, device=device).shape == ()
    for dt in dtypes_of(device, "arange", ["int32", "int64", "float32", "float64"]):
        assert_close(fw.arange(2, 11, 3, dtype=dt, device=device), np.arange(2, 11, 3).astype(dt))
        assert_close(fw.arange(0, dtype=dt, device=device), np.arange(0).astype(dt))
    assert_close(fw.arange(0.5, 2.0, 0.25, device=device), np.arange(0.5, 2.0, 0.25).astype(np.float32))


def test_philox_known_answer(device):
    """fw.rand draws (bits >> 8) * 2**-24 from Philox-4x32-10; with seed 0 the first four
    words are the Random123 known-answer vector for counter 0, key 0."""
    fw.seed(0)
    u = fw.rand([4], device=device, dtype="float64").numpy()
    kat = np.array([0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8], dtype=np.uint64)
    np.testing.assert_array_equal(u * 2.0**24, (kat >> np.uint64(8)).astype(np.float64))
    # key all ones: seed 2**64-1, and counter all ones is not reachable (c2=c3=0); check key handling
    fw.seed(2**64 - 1)
    a = fw.rand([1000], device=device).numpy()
    fw.seed(2**64 - 1)
    b = fw.rand([1000], device="cpu").numpy()
    np.testing.assert_array_equal(a, b)  # bitwise equal to the cpu plugin
    assert 0.0 <= a.min() and a.max() < 1.0 and abs(a.mean() - 0.5) < 0.05


@pytest.mark.parametrize(
    "axis,shape,ids", [(0, (46, 8), (16, 64)), (1, (3, 9, 4), (2, 5)), (2, (2, 3, 6), (11,))]
)
def test_scatter_add_with_ids_of_any_shape_equals_numpy_add_at(device, axis, shape, ids):
    # an embedding's gradient: ids [batch, seq], many repeated
    rng = np.random.default_rng(axis)
    x = rng.standard_normal(shape).astype(np.float32)
    idx = rng.integers(0, shape[axis], ids)
    src = rng.standard_normal(shape[:axis] + ids + shape[axis + 1 :]).astype(np.float32)
    want = x.astype(np.float64)
    np.add.at(want, (slice(None),) * axis + (idx,), src)
    got = fw.scatter_add(*(fw.to_tensor(a, device=device) for a in (x, idx, src)), axis=axis)
    assert_close(got, want.astype(np.float32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("c_kernel", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cpu_scatter_add_has_add_at_bits_with_and_without_its_c_kernel(monkeypatch, c_kernel, dtype):
    """The cpu plugin adds each source row in order (index.c), as numpy's add.at does; without
    a C compiler its numpy path (a sort and reduceat) gives the sums to rounding."""
    from plugins.cpu import index

    if not c_kernel:
        monkeypatch.setattr(index, "own_program", lambda *a: None)
    rng = np.random.default_rng(7)
    # the last: a 1 MB table, whose columns the OpenMP team shares where it has two threads
    for axis, shape, ids in (
        (0, (46, 64), (16, 64)),
        (1, (3, 9, 5), (2, 7)),
        (0, (40,), (300,)),
        (0, (2048, 128), (4000,)),
    ):
        x = rng.standard_normal(shape).astype(dtype)
        idx = rng.integers(0, shape[axis], ids)
        src = rng.standard_normal(shape[:axis] + ids + shape[axis + 1 :]).astype(dtype)
        want = x.copy()
        np.add.at(want, (slice(None),) * axis + (idx,), src)
        got = fw.scatter_add(*(fw.to_tensor(a, device="cpu") for a in (x, idx, src)), axis=axis).numpy()
        if c_kernel:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5)
        bad = idx.copy()
        bad.flat[3] = shape[axis]
        with pytest.raises(fw.OpArgumentError, match=rf"scatter_add.*index {shape[axis]} is out of range"):
            fw.scatter_add(*(fw.to_tensor(a, device="cpu") for a in (x, bad, src)), axis=axis)


def test_permute_without_the_c_kernel_is_numpys(monkeypatch):
    """A cpu plugin whose C permute does not build (no compiler) copies through numpy."""
    from plugins.cpu import layout

    monkeypatch.setattr(layout, "_program", lambda: None)
    x = sample((16, 64, 3, 4, 16), "float32")
    perm = (2, 0, 3, 1, 4)
    assert_close(fw.to_tensor(x).transpose(list(perm)), x.transpose(perm))
    f = fw.jit.to_static(lambda t: t.transpose(list(perm)))
    for _ in range(2):
        assert_close(f(fw.to_tensor(x)), x.transpose(perm))


def test_gather_by_a_permutation_has_a_gather_as_gradient():
    """``permutation`` indices: the gradient of a gather by one is a gather by its inverse,
    equal to the scatter-add of any other index; a non-permutation is refused."""
    from framework._src.ops.indexing import permutation

    rng = np.random.default_rng(5)
    perm = rng.permutation(7)
    x = rng.standard_normal((3, 7)).astype(np.float32)
    g = rng.standard_normal((3, 7)).astype(np.float32)
    dev = fw.to_tensor(x).device
    grads = []
    for idx in (permutation(perm, dev), fw.to_tensor(perm)):
        xt = fw.to_tensor(x)
        xt.stop_gradient = False
        y = fw.gather(xt, idx, axis=1)
        np.testing.assert_array_equal(y.numpy(), x[:, perm])
        y.backward(fw.to_tensor(g))
        grads.append(xt.grad.numpy())
    want = np.zeros_like(x)
    want[:, perm] = g
    np.testing.assert_array_equal(grads[0], want)
    np.testing.assert_array_equal(grads[1], want)
    assert permutation(perm, dev) is permutation(list(perm), dev)
    with pytest.raises(fw.OpArgumentError, match=r"\[permutation\] \[0, 0, 1\] is not a permutation"):
        permutation([0, 0, 1], dev)


@pytest.mark.parametrize(
    "shape,axis,index",
    [
        ((3, 5, 8), 2, [4, 5, 6, 7, 0, 1, 2, 3]),  # a rotation: rotary's rotate-half
        ((3, 5, 8), 1, [3, 4, 0, 1, 2]),
        ((4, 6), 1, [0, 1, 2, 0, 1, 2]),  # a run repeated
        ((4, 6), 1, [5, 4, 3, 2]),  # runs of one
        ((2, 9), 0, [1, 0]),
    ],
)
def test_gather_by_runs_of_consecutive_indices(shape, axis, index):
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    got = fw.gather(fw.to_tensor(x), fw.to_tensor(np.array(index)), axis=axis).numpy()
    np.testing.assert_array_equal(got, np.take(x, index, axis=axis))
