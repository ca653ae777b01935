"""``split``'s gradient: the parts' gradients concatenated (zeros for a part without one), in
eager mode one concat instead of a zero-padded copy of each part and their sum."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from framework._src import dispatch


def _ops_run(fn):
    """The primitive ops ``fn()`` runs, by name."""
    seen: list[str] = []
    orig = dispatch.run

    def spy(op, ins, attrs, dev=None, metas=None):
        seen.append(op.name)
        return orig(op, ins, attrs, dev, metas)

    dispatch.run = spy
    try:
        fn()
    finally:
        dispatch.run = orig
    return seen


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradient_of_an_unused_part_is_zero_and_the_rest_concatenated(dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 5, 4)).astype(dtype)
    w0, w2 = rng.standard_normal((2, 5, 4)).astype(dtype), rng.standard_normal((2, 5, 4)).astype(dtype)
    x = fw.to_tensor(a, stop_gradient=False)
    q, k, v = fw.split(x, 3, axis=0)
    assert [t.shape for t in (q, k, v)] == [(2, 5, 4)] * 3
    np.testing.assert_array_equal(k.numpy(), a[2:4])
    loss = (q * fw.to_tensor(w0)).sum() + (v * fw.to_tensor(w2)).sum()
    ops = _ops_run(loss.backward)
    want = np.concatenate([w0, np.zeros((2, 5, 4), dtype), w2])
    np.testing.assert_array_equal(x.grad.numpy(), want)
    assert "concat" in ops and "pad" not in ops, ops


def test_sections_with_minus_one_along_the_last_axis_against_finite_differences():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 7))

    def f(x):
        p = fw.split(x, [1, -1, 2], axis=-1)
        return p, (p[0] * 3.0).sum() + (p[1] * p[1]).sum() - p[2].sum()

    x = fw.to_tensor(a, stop_gradient=False)
    parts, loss = f(x)
    assert [t.shape for t in parts] == [(3, 1), (3, 4), (3, 2)]
    loss.backward()
    eps, num = 1e-6, np.zeros_like(a)
    for i in np.ndindex(a.shape):
        hi, lo = a.copy(), a.copy()
        hi[i] += eps
        lo[i] -= eps
        num[i] = (float(f(fw.to_tensor(hi))[1].numpy()) - float(f(fw.to_tensor(lo))[1].numpy())) / (2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-6, atol=1e-8)


def test_traced_and_eager_gradients_agree():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 6)).astype("float32")
    w = fw.to_tensor(rng.standard_normal((4, 2)).astype("float32"))

    def step(x):
        p = fw.split(x, 3, axis=1)
        loss = (p[0] * w).sum() + (p[2] * p[2]).sum()
        loss.backward()
        return loss

    xe = fw.to_tensor(a, stop_gradient=False)
    step(xe)
    traced = fw.jit.to_static(step)
    xs = fw.to_tensor(a, stop_gradient=False)
    traced(xs)
    np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-6)
    want = np.concatenate([w.numpy(), np.zeros((4, 2), "f"), 2 * a[:, 4:]], axis=1)
    np.testing.assert_allclose(xe.grad.numpy(), want, rtol=1e-6)


def test_split_refuses_bad_sections_by_name():
    x = fw.ones([4, 6])
    with pytest.raises(
        fw.OpArgumentError, match=r"\[split\] cannot split size 6 of axis 1 into 4 equal parts"
    ):
        fw.split(x, 4, axis=1)
    with pytest.raises(fw.OpArgumentError, match=r"\[split\] sections \[2, 2\] do not add up to size 6"):
        fw.split(x, [2, 2], axis=1)
