"""Paddle's top-level tensor functions (``fw.X``) and their Tensor methods, against numpy,
with finite-difference gradients where the op is differentiable (issue 17)."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from tests.conftest import assert_close
from tests.gradcheck import check_grad

RNG = np.random.default_rng(0)


def _a(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape)


# -- names that existed before the coverage test asked for a test of each ----------------------
def test_existing_elementwise_and_reductions(device):
    a = _a(3, 4)
    x = fw.to_tensor(a, device=device)
    assert_close(fw.triu(x, 1), np.triu(a, 1))
    assert_close(fw.expm1(x), np.expm1(a))
    assert_close(fw.reciprocal(x), 1 / a)
    assert_close(fw.round(x), np.round(a))  # halves to even, as Paddle 3.x
    assert_close(fw.square(x), a * a)
    assert_close(fw.amax(x, axis=1), a.max(1))
    assert_close(fw.amin(x, axis=0), a.min(0))
    assert_close(fw.log2(fw.abs(x) + 1), np.log2(np.abs(a) + 1))
    assert_close(fw.mm(x, x.T), a @ a.T)
    assert_close(fw.dot(x, x), (a * a).sum(-1))
    inf = fw.to_tensor([1.0, np.inf, -np.inf, np.nan], device=device)
    assert fw.isinf(inf).tolist() == [False, True, True, False]
    b = a > 0
    assert fw.logical_not(fw.to_tensor(b, device=device)).tolist() == (~b).tolist()
    assert (
        fw.logical_xor(
            fw.to_tensor(b, device=device), fw.to_tensor(b.T.copy().T[::-1].copy(), device=device)
        ).tolist()
        == (b ^ b[::-1]).tolist()
    )
    assert fw.allclose(x, x + 1e-9) and not fw.allclose(x, x + 1.0)


def test_existing_manipulation_and_search(device):
    a = _a(4, 3)
    x = fw.to_tensor(a, device=device)
    assert_close(fw.expand_as(fw.to_tensor(a[:1], device=device), x), np.broadcast_to(a[:1], a.shape))
    assert [t.numpy().tolist() for t in fw.unbind(x, axis=1)] == [a[:, i].tolist() for i in range(3)]
    assert [t.shape for t in fw.chunk(x, 2, axis=0)] == [(2, 3), (2, 3)]
    idx = np.array([[0], [2], [1], [0]])
    got = fw.put_along_axis(x, fw.to_tensor(idx, device=device), 9.0, axis=1)
    want = a.copy()
    np.put_along_axis(want, idx, 9.0, axis=1)
    assert_close(got, want)
    assert_close(fw.argmin(x, axis=1), a.argmin(1))
    assert_close(fw.index_select(x, fw.to_tensor([3, 0], device=device), axis=0), a[[3, 0]])
    assert_close(fw.nonzero(x > 0), np.argwhere(a > 0))
    assert_close(fw.masked_select(x, x > 0), a[a > 0])


def test_existing_random():
    fw.seed(3)
    n = fw.normal(1.0, 2.0, shape=[20000]).numpy()
    assert abs(n.mean() - 1.0) < 0.1 and abs(n.std() - 2.0) < 0.1
    p = fw.randperm(10).numpy()
    assert sorted(p.tolist()) == list(range(10))


# -- semantics of issue 17 ---------------------------------------------------------------------
def test_piecewise_constant_ops_give_zero_gradient(device):
    for f in (fw.floor, fw.ceil, fw.sign, fw.round, fw.trunc):
        x = fw.to_tensor([1.5, -2.25, 0.75], device=device, stop_gradient=False)
        (g,) = fw.grad([(f(x) * 3.0).sum()], [x])
        assert g is not None and g.tolist() == [0.0, 0.0, 0.0], f.__name__
        y = fw.to_tensor([1.5, -2.25], device=device, stop_gradient=False)
        (f(y) + y).sum().backward()
        assert y.grad.tolist() == [1.0, 1.0], f.__name__


def test_to_tensor_unsigned_keeps_values_and_dtype():
    assert fw.to_tensor(np.uint16(65535)).item() == 65535
    assert fw.to_tensor(np.array([2**32 - 1], dtype=np.uint32)).tolist() == [2**32 - 1]
    for v in (np.uint64(2**64 - 1), np.array([1, 2**63], dtype=np.uint64)):
        t = fw.to_tensor(v)
        assert t.dtype == np.uint64 and t.numpy().tolist() == np.asarray(v).tolist()
    assert fw.to_tensor([2**64 - 1]).dtype == np.uint64  # as numpy infers it
    with pytest.raises(fw.OpArgumentError, match=r"\[to_tensor\] the data holds an integer beyond int64"):
        fw.to_tensor([2**64])


def test_max_pool2d_keeps_integer_dtype(device):
    a = (np.arange(32).reshape(1, 2, 4, 4) * 7 % 251).astype(np.uint8)
    y = fw.nn.functional.max_pool2d(fw.to_tensor(a, device=device), 2)
    assert y.dtype == np.uint8
    assert_close(y, a.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)))


# -- special functions --------------------------------------------------------------------------
def test_inverse_trig_and_hyperbolic(device):
    a = np.linspace(-0.99, 0.99, 13)
    b = np.linspace(-6, 6, 13)
    x, y = fw.to_tensor(a, device=device), fw.to_tensor(b, device=device)
    assert_close(fw.asin(x), np.arcsin(a), atol=1e-12)
    assert_close(fw.acos(x), np.arccos(a), atol=1e-12)
    assert_close(fw.atan(y), np.arctan(b), atol=1e-12)
    assert_close(fw.atanh(x), np.arctanh(a), atol=1e-12)
    assert_close(fw.tan(x), np.tan(a), atol=1e-12)
    assert_close(fw.sinh(y), np.sinh(b), rtol=1e-12)
    assert_close(fw.cosh(y), np.cosh(b), rtol=1e-12)
    assert_close(fw.asinh(y), np.arcsinh(b), atol=1e-12)
    assert_close(fw.acosh(fw.abs(y) + 1), np.arccosh(np.abs(b) + 1), atol=1e-12)
    yy, xx = np.meshgrid([-2.0, 0.0, 3.0], [-1.5, 0.0, 2.0])
    assert_close(
        fw.atan2(fw.to_tensor(yy, device=device), fw.to_tensor(xx, device=device)),
        np.arctan2(yy, xx),
        atol=1e-12,
    )
    assert_close(fw.log10(fw.abs(y) + 1), np.log10(np.abs(b) + 1))
    assert_close(fw.rad2deg(y), np.rad2deg(b))
    assert_close(fw.deg2rad(y), np.deg2rad(b))
    assert_close(fw.stanh(y), 1.7159 * np.tanh(0.67 * b))
    p = np.array([0.1, 0.5, 0.9])
    assert_close(fw.logit(fw.to_tensor(p, device=device)), np.log(p / (1 - p)))
    assert_close(
        fw.logit(fw.to_tensor([0.0, 1.0], device=device), eps=1e-3),
        np.log(np.array([1e-3, 1 - 1e-3]) / np.array([1 - 1e-3, 1e-3])),
    )
    assert x.atan().shape == (13,) and y.sinh().shape == (13,)


def test_gamma_and_erfinv(device):
    import math

    v = np.array([-3.5, -0.5, 0.1, 0.5, 1.0, 2.5, 10.0, 150.0])
    assert_close(
        fw.lgamma(fw.to_tensor(v, device=device)), [math.lgamma(t) for t in v], rtol=1e-12, atol=1e-12
    )
    h = 1e-5
    ref = [(math.lgamma(t + h) - math.lgamma(t - h)) / (2 * h) for t in v]
    assert_close(fw.digamma(fw.to_tensor(v, device=device)), ref, rtol=1e-7, atol=1e-7)
    u = np.array([-0.999999, -0.7, -0.1, 0.0, 0.3, 0.95, 0.9999])
    e = fw.erfinv(fw.to_tensor(u, device=device)).numpy()
    np.testing.assert_allclose([math.erf(t) for t in e], u, atol=1e-14)
    assert fw.erfinv(fw.to_tensor([1.0, -1.0], device=device)).tolist() == [np.inf, -np.inf]


def test_special_gradients():
    check_grad(fw.atan, [[-5.0, -1.0, 0.2, 0.7, 3.0]])
    check_grad(fw.asin, [[-0.9, 0.1, 0.6]])
    check_grad(fw.acos, [[-0.9, 0.1, 0.6]])
    check_grad(fw.atan2, [[-1.0, 2.0, 0.5]], [[3.0, -1.0, -2.0]])
    check_grad(fw.lgamma, [[-2.5, 0.3, 1.7, 8.0]], atol=1e-5)
    check_grad(fw.digamma, [[-2.5, 0.3, 1.7, 8.0]], atol=1e-5)
    check_grad(fw.erfinv, [[-0.8, 0.1, 0.5]], atol=1e-5)
    for f in (fw.asinh, fw.atanh, fw.sinh, fw.cosh, fw.tan):
        check_grad(f, [[-0.5, 0.2, 0.7]])


# -- arithmetic ---------------------------------------------------------------------------------
def test_arith(device):
    a, b = _a(3, 4), _a(3, 4)
    x, y = fw.to_tensor(a, device=device), fw.to_tensor(b, device=device)
    assert_close(fw.cumprod(x, dim=1), np.cumprod(a, 1))
    assert_close(x.cumsum(axis=0), np.cumsum(a, 0))
    n = a.copy()
    n[0, 1] = np.nan
    assert_close(fw.nansum(fw.to_tensor(n, device=device)), np.nansum(n))
    assert_close(fw.add_n([x, y, x]), 2 * a + b)
    assert_close(fw.scale(x, 2.0, 1.0), 2 * a + 1)
    assert_close(fw.scale(x, 2.0, 1.0, bias_after_scale=False), 2 * (a + 1))
    assert_close(fw.increment(x, 3.0), a + 3)
    assert_close(
        fw.multiplex([x, y], fw.to_tensor([[1], [0], [1]], device=device)), np.stack([b[0], a[1], b[2]])
    )
    sq = _a(4, 4)
    s = fw.to_tensor(sq, device=device)
    assert_close(fw.addmm(s, s, s, beta=0.5, alpha=2.0), 0.5 * sq + 2 * sq @ sq)
    assert_close(fw.trace(s, 1), np.trace(sq, 1))
    assert_close(fw.kron(x, y[:2, :2]), np.kron(a, b[:2, :2]))
    assert_close(fw.lerp(x, y, 0.3), a + 0.3 * (b - a))
    assert_close(fw.diff(x, axis=1), np.diff(a, axis=1))
    assert_close(fw.diff(x, n=2, axis=0), np.diff(a, n=2, axis=0))
    nan = fw.to_tensor([np.nan, 1.0, 3.0], device=device)
    other = fw.to_tensor([2.0, np.nan, 1.0], device=device)
    assert fw.fmax(nan, other).tolist() == [2.0, 1.0, 3.0] and fw.fmin(nan, other).tolist() == [2.0, 1.0, 1.0]
    assert_close(fw.inner(x, y), np.inner(a, b))
    assert_close(fw.outer(x[0], y[1]), np.outer(a[0], b[1]))
    assert_close(fw.floor_mod(fw.to_tensor([-7, 7], device=device), 3), np.mod([-7, 7], 3))
    assert_close(fw.real(x), a)
    assert_close(fw.imag(x), np.zeros_like(a))
    assert_close(fw.conj(x), a)
    assert_close(fw.angle(x), np.angle(a))
    i1, i2 = np.array([12, -18, 0, 7]), np.array([8, 12, 5, 0])
    assert_close(fw.gcd(fw.to_tensor(i1, device=device), fw.to_tensor(i2, device=device)), np.gcd(i1, i2))
    assert_close(fw.lcm(fw.to_tensor(i1, device=device), fw.to_tensor(i2, device=device)), np.lcm(i1, i2))


def test_arith_gradients():
    check_grad(lambda t: fw.cumprod(t, dim=1), _a(2, 4, lo=0.5, hi=2))
    check_grad(lambda t: fw.kron(t, t), _a(2, 2))
    check_grad(lambda t: fw.trace(t), _a(3, 3))
    check_grad(lambda t, u: fw.lerp(t, u, 0.25), _a(3), _a(3))
    check_grad(lambda t: fw.diff(t, n=2), _a(5))


def test_comparisons_and_bitwise(device):
    a = np.array([1.0, 2.0, np.nan, np.inf])
    b = np.array([1.0 + 1e-9, 2.1, np.nan, np.inf])
    x, y = fw.to_tensor(a, device=device), fw.to_tensor(b, device=device)
    assert fw.isclose(x, y).tolist() == np.isclose(a, b).tolist()
    assert fw.isclose(x, y, equal_nan=True).tolist() == np.isclose(a, b, equal_nan=True).tolist()
    assert fw.equal_all(x[:2], x[:2]).item() and not fw.equal_all(x[:2], y[:2]).item()
    assert not fw.equal_all(x, x[:2]).item()
    assert fw.is_tensor(x) and not fw.is_tensor(a)
    assert fw.is_empty(fw.zeros([0, 3])).item() and not fw.is_empty(x).item()
    for dt in ("int8", "int32", "int64", "uint8"):
        p = np.array([12, 5, 0, 100, 127], dtype=dt)
        q = np.array([10, 3, 7, 27, 1], dtype=dt)
        if dt != "uint8":
            p[1], q[1] = -5, -3
        tp, tq = fw.to_tensor(p, device=device), fw.to_tensor(q, device=device)
        assert fw.bitwise_and(tp, tq).tolist() == (p & q).tolist(), dt
        assert fw.bitwise_or(tp, tq).tolist() == (p | q).tolist(), dt
        assert fw.bitwise_xor(tp, tq).tolist() == (p ^ q).tolist(), dt
        assert fw.bitwise_not(tp).tolist() == (~p).tolist(), dt
    bb = fw.to_tensor([True, False], device=device)
    assert fw.bitwise_and(bb, fw.to_tensor([True, True], device=device)).tolist() == [True, False]


# -- creation, manipulation ----------------------------------------------------------------------
def test_predicates_and_creation(device):
    x = fw.to_tensor(_a(2, 3), device=device)
    assert fw.rank(x).item() == 2 and fw.shape(x).tolist() == [2, 3] and fw.numel(x).item() == 6
    assert fw.is_floating_point(x) and not fw.is_integer(x) and not fw.is_complex(x)
    assert fw.is_integer(fw.to_tensor([1], device=device))
    v = np.array([1.0, 2.0, 3.0])
    assert_close(fw.diag(fw.to_tensor(v, device=device), 1), np.diag(v, 1))
    assert_close(
        fw.diag(fw.to_tensor(v, device=device), -1, padding_value=9.0),
        np.diag(v, -1) + 9 * (1 - (np.diag(v, -1) != 0)),
    )
    m = _a(3, 4)
    assert_close(fw.diag(fw.to_tensor(m, device=device), 1), np.diag(m, 1))
    assert_close(fw.diagflat(fw.to_tensor(m[:2, :2], device=device)), np.diagflat(m[:2, :2]))
    gx, gy = fw.meshgrid(fw.to_tensor(v, device=device), fw.to_tensor(v[:2], device=device))
    wx, wy = np.meshgrid(v, v[:2], indexing="ij")
    assert_close(gx, wx)
    assert_close(gy, wy)
    assert fw.broadcast_shape([2, 1, 3], [4, 1]) == [2, 4, 3]


def test_manipulation(device):
    a = _a(2, 3, 4)
    x = fw.to_tensor(a, device=device)
    bx, by = fw.broadcast_tensors([x, fw.to_tensor(a[:1, :, :1], device=device)])
    assert by.shape == (2, 3, 4)
    assert_close(by, np.broadcast_to(a[:1, :, :1], a.shape))
    idx = np.array([[0, 1], [1, 2]])
    assert_close(fw.gather_nd(x, fw.to_tensor(idx, device=device)), a[idx[:, 0], idx[:, 1]])
    upd = _a(2, 4)
    want = a.copy()
    np.add.at(want, (idx[:, 0], idx[:, 1]), upd)
    assert_close(
        fw.scatter_nd_add(x, fw.to_tensor(idx, device=device), fw.to_tensor(upd, device=device)), want
    )
    sc = np.zeros((2, 3, 4))
    np.add.at(sc, (idx[:, 0], idx[:, 1]), upd)
    assert_close(
        fw.scatter_nd(fw.to_tensor(idx, device=device), fw.to_tensor(upd, device=device), [2, 3, 4]), sc
    )
    assert_close(fw.reverse(x, [0, 2]), a[::-1, :, ::-1])
    assert_close(fw.slice(x, [1, 2], [1, 0], [3, 2]), a[:, 1:3, 0:2])
    assert_close(fw.strided_slice(x, [2], [3], [0], [-2]), a[:, :, 3:0:-2])
    assert [t.numpy().tolist() for t in fw.unstack(x, axis=1)] == [a[:, i].tolist() for i in range(3)]
    assert_close(fw.rot90(x, 1, [1, 2]), np.rot90(a, 1, (1, 2)))
    assert_close(fw.rot90(x, -1, [0, 2]), np.rot90(a, -1, (0, 2)))
    assert_close(fw.rot90(x, 2), np.rot90(a, 2))
    assert_close(fw.roll(x, 1, 2), np.roll(a, 1, 2))
    assert_close(fw.roll(x, [-1, 2], [0, 2]), np.roll(a, (-1, 2), (0, 2)))
    assert_close(fw.roll(x, 5), np.roll(a, 5))
    assert_close(fw.moveaxis(x, 0, -1), np.moveaxis(a, 0, -1))
    assert_close(fw.moveaxis(x, [0, 1], [2, 0]), np.moveaxis(a, [0, 1], [2, 0]))
    assert_close(fw.repeat_interleave(x, 2, axis=1), np.repeat(a, 2, axis=1))
    assert_close(fw.repeat_interleave(x, fw.to_tensor([1, 0, 2]), axis=1), np.repeat(a, [1, 0, 2], axis=1))
    b = _a(4, 3, 5)
    assert_close(
        fw.tensordot(x, fw.to_tensor(b, device=device), axes=([1, 2], [1, 0])),
        np.tensordot(a, b, axes=([1, 2], [1, 0])),
    )
    assert_close(fw.tensordot(x, fw.to_tensor(a, device=device), axes=3), np.tensordot(a, a, axes=3))
    assert_close(fw.diagonal(x, 1, 1, 2), np.diagonal(a, 1, 1, 2))
    ids = np.array([0, 5, 9, 12, 19])
    got = fw.shard_index(fw.to_tensor(ids, device=device), 20, 2, 1)
    assert got.tolist() == [-1, -1, -1, 2, 9]


def test_manipulation_gradients():
    check_grad(lambda t: fw.roll(t, 1, 1), _a(2, 3))
    check_grad(lambda t: fw.rot90(t), _a(2, 3))
    check_grad(lambda t: fw.gather_nd(t, fw.to_tensor([[1], [0], [1]])), _a(2, 3))
    check_grad(lambda t, u: fw.tensordot(t, u, 1), _a(2, 3), _a(3, 2))
    check_grad(lambda t: fw.repeat_interleave(t, 2, axis=0), _a(2, 2))


def test_einsum(device):
    a, b, c = _a(2, 3), _a(3, 4), _a(2, 3, 3)
    x, y, z = (fw.to_tensor(t, device=device) for t in (a, b, c))
    for eq, ops, arrs in [
        ("ij,jk->ik", (x, y), (a, b)),
        ("ij,jk", (x, y), (a, b)),
        ("ij->ji", (x,), (a,)),
        ("ij->", (x,), (a,)),
        ("bii->bi", (z,), (c,)),
        ("ii", (z[0],), (c[0],)),
        ("...j,jk->...k", (z, y), (c, b)),
        ("i,i->", (x[0], x[1]), (a[0], a[1])),
        ("bij,bjk->bik", (z, z), (c, c)),
        ("ij,kj->ikj", (x, x), (a, a)),
    ]:
        assert_close(fw.einsum(eq, *ops), np.einsum(eq, *arrs), atol=1e-12)
    check_grad(lambda t, u: fw.einsum("ij,jk->ik", t, u), a, b)


# -- search and statistics -----------------------------------------------------------------------
def test_sort_family(device):
    a = np.array([[3.0, 1.0, 2.0, 1.0, 5.0], [0.0, -1.0, 4.0, 4.0, 2.0]])
    x = fw.to_tensor(a, device=device)
    assert_close(fw.sort(x), np.sort(a, 1))
    assert_close(fw.sort(x, axis=0, descending=True), -np.sort(-a, 0))
    assert_close(fw.argsort(x), np.argsort(a, 1, kind="stable"))
    assert_close(fw.argsort(x, descending=True), np.argsort(-a, 1, kind="stable"))
    v, i = fw.kthvalue(x, 2)
    assert_close(v, np.sort(a, 1)[:, 1])
    assert_close(i, np.argsort(a, 1, kind="stable")[:, 1])
    v, i = x.topk(2)
    assert_close(v, -np.sort(-a, 1)[:, :2])
    m, mi = fw.mode(x)
    assert m.tolist() == [1.0, 4.0] and mi.tolist() == [3, 3]
    seq = np.array([1.0, 2.0, 2.0, 5.0])
    vals = np.array([0.0, 2.0, 3.0, 9.0])
    assert_close(
        fw.searchsorted(fw.to_tensor(seq, device=device), fw.to_tensor(vals, device=device)),
        np.searchsorted(seq, vals),
    )
    assert_close(
        fw.searchsorted(fw.to_tensor(seq, device=device), fw.to_tensor(vals, device=device), right=True),
        np.searchsorted(seq, vals, "right"),
    )
    assert_close(
        fw.index_sample(x, fw.to_tensor([[4, 0], [2, 2]], device=device)), np.array([[5.0, 3.0], [4.0, 4.0]])
    )
    check_grad(lambda t: fw.sort(t, descending=True), [[0.3, -1.0, 2.0, 0.5]])


def test_unique(device):
    a = np.array([3, 1, 3, 3, 2, 1, 1])
    x = fw.to_tensor(a, device=device)
    u, idx, inv, cnt = fw.unique(x, return_index=True, return_inverse=True, return_counts=True)
    wu, wi, winv, wc = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    assert (
        u.tolist() == wu.tolist()
        and idx.tolist() == wi.tolist()
        and inv.tolist() == winv.tolist()
        and cnt.tolist() == wc.tolist()
    )
    v, inv, cnt = fw.unique_consecutive(x, return_inverse=True, return_counts=True)
    assert (
        v.tolist() == [3, 1, 3, 2, 1]
        and inv.tolist() == [0, 1, 2, 2, 3, 4, 4]
        and cnt.tolist() == [1, 1, 2, 1, 2]
    )
    m = fw.to_tensor([[1, 2], [1, 2], [3, 4]], device=device)
    assert fw.unique_consecutive(m, axis=0).tolist() == [[1, 2], [3, 4]]


def test_statistics(device):
    a = _a(4, 5)
    x = fw.to_tensor(a, device=device)
    assert_close(fw.var(x, axis=1), a.var(1, ddof=1))
    assert_close(x.std(), a.std(ddof=1))
    assert_close(x.var(axis=0, unbiased=False), a.var(0))
    assert_close(fw.logsumexp(x, axis=1), np.log(np.exp(a).sum(1)))
    assert_close(fw.median(x, axis=1), np.median(a, 1))
    assert_close(fw.median(x), np.median(a))
    low, where = fw.median(x[:, :4], axis=1, mode="min")  # Paddle's: the values and their indices
    assert_close(low, np.sort(a[:, :4], 1)[:, 1])
    assert_close(where, np.argsort(a[:, :4], 1, kind="stable")[:, 1])
    assert_close(fw.quantile(x, 0.3, axis=0), np.quantile(a, 0.3, axis=0))
    assert_close(fw.quantile(x, [0.1, 0.9]), np.quantile(a, [0.1, 0.9]))
    for mode in ("lower", "higher", "nearest", "midpoint"):
        assert_close(
            fw.quantile(x, 0.35, axis=1, interpolation=mode), np.quantile(a, 0.35, axis=1, method=mode)
        )
    check_grad(lambda t: fw.median(t, axis=1), _a(2, 4))
    check_grad(lambda t: fw.quantile(t, 0.4, axis=0), _a(4, 2))
    fw.set_printoptions(precision=2)
    try:
        assert "1.23]" in repr(fw.to_tensor([1.23456]))
    finally:
        fw.set_printoptions(precision=8)


def test_random_functions():
    fw.seed(5)
    s = fw.standard_normal([20000]).numpy()
    assert abs(s.mean()) < 0.05 and abs(s.std() - 1) < 0.05
    r = fw.randint_like(fw.zeros([1000], dtype="int32"), 2, 7)
    assert r.dtype == np.int32 and set(r.numpy().tolist()) == {2, 3, 4, 5, 6}
    p = np.array([0.1, 0.0, 0.6, 0.3])
    draws = fw.multinomial(fw.to_tensor(p), 20000, replacement=True).numpy()
    np.testing.assert_allclose(np.bincount(draws, minlength=4) / 20000, p, atol=0.02)
    nr = fw.multinomial(fw.to_tensor(np.tile(p, (500, 1))), 3).numpy()
    assert all(len(set(row)) == 3 and 1 not in row for row in nr.tolist())
    lam = np.array([0.5, 4.0, 40.0])
    samples = fw.poisson(fw.to_tensor(np.tile(lam, (4000, 1)))).numpy()
    np.testing.assert_allclose(samples.mean(0), lam, rtol=0.05)
    np.testing.assert_allclose(samples.var(0), lam, rtol=0.12)
    assert fw.poisson(fw.zeros([3])).tolist() == [0.0, 0.0, 0.0]


# -- Tensor methods and in-place variants --------------------------------------------------------
def test_methods_and_inplace(device):
    a = _a(3, 4)
    x = fw.to_tensor(a, device=device)
    assert_close(x.var(axis=0), a.var(0, ddof=1))
    assert_close(x.logsumexp(axis=1), np.log(np.exp(a).sum(1)))
    assert_close(x.sort(axis=1), np.sort(a, 1))
    assert_close(x.median(), np.median(a))
    assert_close(x.atan(), np.arctan(a))
    assert_close(x.roll(1, 0), np.roll(a, 1, 0))
    y = x.clone()
    y.clip_(-0.5, 0.5)
    assert_close(y, np.clip(a, -0.5, 0.5))
    y.exp_()
    assert_close(y, np.exp(np.clip(a, -0.5, 0.5)))
    z = x.clone()
    z.unsqueeze_(0)
    assert z.shape == (1, 3, 4)
    z.squeeze_(0)
    assert z.shape == (3, 4)
    w = x.clone()
    w.uniform_(2.0, 3.0)
    assert w.shape == (3, 4) and 2.0 <= float(w.min().item()) and float(w.max().item()) < 3.0
    leaf = fw.to_tensor(a, device=device, stop_gradient=False)
    with pytest.raises(fw.OpArgumentError, match=r"\[sqrt_\]"):
        leaf.sqrt_()
    t = fw.to_tensor(a, device=device, stop_gradient=False)
    u = t * 1.0
    u.tanh_()
    u.sum().backward()
    assert_close(t.grad, 1 - np.tanh(a) ** 2)
