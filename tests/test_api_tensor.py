"""Paddle's top-level tensor functions (``fw.X``) and their Tensor methods, against numpy,
with finite-difference gradients where the op is differentiable (issue 17)."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from tests.conftest import assert_close

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
    assert_close(fw.round(x), np.sign(a) * np.floor(np.abs(a) + 0.5))
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
    assert fw.logical_xor(fw.to_tensor(b, device=device), fw.to_tensor(b.T.copy().T[::-1].copy(), device=device)).tolist() == (b ^ b[::-1]).tolist()
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


def test_to_tensor_unsigned_keeps_values_or_raises():
    assert fw.to_tensor(np.uint16(65535)).item() == 65535
    assert fw.to_tensor(np.array([2**32 - 1], dtype=np.uint32)).tolist() == [2**32 - 1]
    assert fw.to_tensor(np.array([2**63 - 1], dtype=np.uint64)).tolist() == [2**63 - 1]
    for bad in (np.uint64(2**64 - 1), np.array([1, 2**63], dtype=np.uint64), [2**64 - 1]):
        with pytest.raises(fw.OpArgumentError, match=r"\[to_tensor\] uint64 value"):
            fw.to_tensor(bad)


def test_max_pool2d_keeps_integer_dtype(device):
    a = (np.arange(32).reshape(1, 2, 4, 4) * 7 % 251).astype(np.uint8)
    y = fw.nn.functional.max_pool2d(fw.to_tensor(a, device=device), 2)
    assert y.dtype == np.uint8
    assert_close(y, a.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)))
