"""``fw.linalg`` and the top-level linear-algebra names: values against numpy, gradients
against central finite differences (tests/gradcheck.py)."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from tests.conftest import assert_close
from tests.gradcheck import check_grad

RNG = np.random.default_rng(7)


def _spd(n, batch=()):
    a = RNG.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _sym(t):
    return (t + t.swapaxes(-1, -2)) * 0.5


def test_values(device):
    a = RNG.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    b = RNG.standard_normal((2, 4, 3))
    x, y = fw.to_tensor(a, device=device), fw.to_tensor(b, device=device)
    assert_close(fw.inverse(x), np.linalg.inv(a), rtol=1e-10)
    assert_close(fw.linalg.inv(x), np.linalg.inv(a), rtol=1e-10)
    assert_close(fw.det(x), np.linalg.det(a), rtol=1e-10)
    assert_close(fw.solve(x, y), np.linalg.solve(a, b), rtol=1e-10)
    assert_close(fw.linalg.solve(x[0], y[0, :, 0]), np.linalg.solve(a[0], b[0, :, 0]), rtol=1e-10)
    s = _spd(4, (2,))
    lo = fw.cholesky(fw.to_tensor(s, device=device))
    assert_close(lo, np.linalg.cholesky(s), rtol=1e-10)
    assert_close(
        fw.cholesky(fw.to_tensor(s, device=device), upper=True),
        np.swapaxes(np.linalg.cholesky(s), -1, -2),
        rtol=1e-10,
    )
    assert_close(fw.cholesky_solve(y, lo), np.linalg.solve(s, b), rtol=1e-9)
    assert_close(fw.triangular_solve(x, y, upper=False), np.linalg.solve(np.tril(a), b), rtol=1e-10)
    assert_close(
        fw.triangular_solve(x, y, upper=True, transpose=True),
        np.linalg.solve(np.swapaxes(np.triu(a), -1, -2), b),
        rtol=1e-10,
    )
    w, v = fw.eigh(fw.to_tensor(s, device=device))
    ww, _ = np.linalg.eigh(s)
    assert_close(w, ww, rtol=1e-10)
    assert_close(fw.matmul(v * w.unsqueeze(-2), v.swapaxes(-1, -2)), s, rtol=1e-9)
    assert_close(fw.eigvalsh(fw.to_tensor(s, device=device)), ww, rtol=1e-10)
    t = RNG.standard_normal((5, 3))
    q, r = fw.qr(fw.to_tensor(t, device=device))
    assert_close(fw.matmul(q, r), t, rtol=1e-10, atol=1e-12)
    assert_close(fw.matmul(q.T, q), np.eye(3), atol=1e-12)
    assert np.allclose(np.tril(r.numpy(), -1), 0)
    u, sv, vh = fw.svd(fw.to_tensor(t, device=device))
    assert_close(sv, np.linalg.svd(t, compute_uv=False), rtol=1e-10)
    assert_close(fw.matmul(u * sv.unsqueeze(0), vh), t, rtol=1e-10, atol=1e-12)
    assert_close(fw.pinv(fw.to_tensor(t, device=device)), np.linalg.pinv(t), rtol=1e-9, atol=1e-12)
    rhs = RNG.standard_normal((5, 2))
    sol, res, rank, svals = fw.lstsq(fw.to_tensor(t, device=device), fw.to_tensor(rhs, device=device))
    wsol, wres, wrank, wsv = np.linalg.lstsq(t, rhs, rcond=None)
    assert_close(sol, wsol, rtol=1e-9)
    assert_close(res, wres, rtol=1e-9)
    assert int(rank.item()) == wrank
    assert_close(svals, wsv, rtol=1e-10)
    m = RNG.standard_normal((3, 3))
    for n in (0, 1, 3, 6, -2):
        assert_close(
            fw.matrix_power(fw.to_tensor(m, device=device), n),
            np.linalg.matrix_power(m, n),
            rtol=1e-9,
            atol=1e-12,
        )
    assert_close(
        fw.multi_dot(
            [fw.to_tensor(t.T, device=device), fw.to_tensor(t, device=device), fw.to_tensor(m, device=device)]
        ),
        t.T @ t @ m,
        rtol=1e-10,
    )
    assert_close(fw.bmm(x, y), a @ b, rtol=1e-12)
    assert_close(fw.mv(x[0], y[0, :, 0]), a[0] @ b[0, :, 0], rtol=1e-12)
    assert_close(fw.cond(fw.to_tensor(m, device=device)), np.linalg.cond(m), rtol=1e-9)
    assert_close(fw.cond(fw.to_tensor(m, device=device), p="fro"), np.linalg.cond(m, "fro"), rtol=1e-9)


def test_norms(device):
    a = RNG.standard_normal((3, 4))
    x = fw.to_tensor(a, device=device)
    assert_close(fw.norm(x), np.linalg.norm(a), rtol=1e-12)
    assert_close(fw.linalg.norm(x, p=1, axis=1), np.linalg.norm(a, 1, axis=1), rtol=1e-12)
    assert_close(
        fw.norm(x, p=3, axis=0, keepdim=True), np.linalg.norm(a, 3, axis=0, keepdims=True), rtol=1e-12
    )
    assert_close(fw.norm(x, p=float("inf"), axis=1), np.linalg.norm(a, np.inf, axis=1), rtol=1e-12)
    assert_close(fw.norm(x, p=0, axis=1), np.linalg.norm(a, 0, axis=1), rtol=1e-12)
    for p in ("fro", "nuc", 1, -1, 2, -2, float("inf"), float("-inf")):
        assert_close(fw.norm(x, p=p, axis=[0, 1]), np.linalg.norm(a, p, axis=(0, 1)), rtol=1e-10)
    assert_close(fw.dist(x, x * 0.5, p=2), np.linalg.norm(a * 0.5), rtol=1e-12)
    assert_close(fw.dist(x, x * 0.5, p=1), np.abs(a * 0.5).sum(), rtol=1e-12)


def test_cross_cov_histogram(device):
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    assert_close(
        fw.cross(fw.to_tensor(a, device=device), fw.to_tensor(b, device=device)), np.cross(a, b), rtol=1e-12
    )
    assert_close(
        fw.cross(fw.to_tensor(a.T.copy(), device=device), fw.to_tensor(b.T.copy(), device=device), axis=0),
        np.cross(a.T, b.T, axis=0),
        rtol=1e-12,
    )
    c = RNG.standard_normal((3, 6))
    assert_close(fw.cov(fw.to_tensor(c, device=device)), np.cov(c), rtol=1e-12)
    assert_close(
        fw.cov(fw.to_tensor(c, device=device), rowvar=False, ddof=False),
        np.cov(c, rowvar=False, ddof=0),
        rtol=1e-12,
    )
    fwt, awt = np.array([1, 2, 1, 3, 1, 1]), RNG.uniform(0.5, 1.5, 6)
    assert_close(
        fw.cov(
            fw.to_tensor(c, device=device),
            fweights=fw.to_tensor(fwt, device=device),
            aweights=fw.to_tensor(awt, device=device),
        ),
        np.cov(c, fweights=fwt, aweights=awt),
        rtol=1e-10,
    )
    assert_close(fw.corrcoef(fw.to_tensor(c, device=device)), np.corrcoef(c), rtol=1e-10)
    h = RNG.standard_normal(200)
    assert_close(fw.histogram(fw.to_tensor(h, device=device), bins=7), np.histogram(h, bins=7)[0])
    assert_close(
        fw.histogram(fw.to_tensor(h, device=device), bins=4, min=-1, max=1),
        np.histogram(h, bins=4, range=(-1, 1))[0],
    )
    ints = np.array([0, 3, 3, 1, 7])
    assert_close(fw.bincount(fw.to_tensor(ints, device=device)), np.bincount(ints))
    assert_close(
        fw.bincount(
            fw.to_tensor(ints, device=device),
            weights=fw.to_tensor(np.arange(5.0), device=device),
            minlength=10,
        ),
        np.bincount(ints, np.arange(5.0), minlength=10),
    )


def test_eig_and_lu(device):
    a = np.array([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [0.0, 0.0, 5.0]])
    w, v = fw.eig(fw.to_tensor(a, device=device))
    assert w.dtype == v.dtype == fw.complex128  # complex, as Paddle's
    assert_close(np.sort(w.numpy()), [2.0, 3.0, 5.0], rtol=1e-12)
    assert_close(fw.matmul(fw.to_tensor(a, device=device), v), v * w.unsqueeze(0), rtol=1e-10, atol=1e-12)
    assert_close(np.sort(fw.eigvals(fw.to_tensor(a, device=device)).numpy()), [2.0, 3.0, 5.0], rtol=1e-12)
    rot = fw.eigvals(fw.to_tensor([[0.0, -1.0], [1.0, 0.0]], device=device))
    assert rot.dtype == fw.complex64 and np.allclose(sorted(rot.numpy(), key=lambda z: z.imag), [-1j, 1j])
    m = RNG.standard_normal((2, 4, 4))
    packed, piv = fw.lu(fw.to_tensor(m, device=device))
    assert piv.dtype == np.int32 and piv.shape == (2, 4)
    p, lo, up = fw.lu_unpack(packed, piv)
    assert_close(fw.matmul(fw.matmul(p, lo), up), m, rtol=1e-10, atol=1e-12)
    assert np.allclose(np.triu(lo.numpy(), 1), 0) and np.allclose(np.tril(up.numpy(), -1), 0)


def test_errors():
    with pytest.raises(fw.OpArgumentError, match=r"\[inverse\] .*square"):
        fw.inverse(fw.ones([2, 3]))
    with pytest.raises(fw.OpArgumentError, match=r"\[inverse\] Singular matrix"):
        fw.inverse(fw.zeros([2, 2]))
    with pytest.raises(fw.OpArgumentError, match=r"\[cholesky\] .*positive definite"):
        fw.cholesky(fw.to_tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(fw.OpArgumentError, match=r"\[solve\] y has 3 rows"):
        fw.solve(fw.eye(2), fw.ones([3]))


def test_gradients():
    a = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
    check_grad(fw.inverse, a)
    check_grad(fw.det, a)
    check_grad(fw.solve, a, RNG.standard_normal((3, 2)))
    check_grad(lambda t, u: fw.triangular_solve(t, u, upper=False), a, RNG.standard_normal((3, 2)))
    check_grad(
        lambda t, u: fw.triangular_solve(t, u, upper=True, transpose=True), a, RNG.standard_normal((3, 2))
    )
    s = _spd(3)
    check_grad(lambda t: fw.cholesky(_sym(t)), s, atol=1e-5)
    check_grad(lambda t: fw.cholesky(_sym(t), upper=True), s, atol=1e-5)
    check_grad(lambda t: fw.eigh(_sym(t))[0], s, atol=1e-5)
    check_grad(lambda t: fw.eigh(_sym(t))[1] ** 2, s, atol=1e-5)
    t = RNG.standard_normal((4, 3))
    check_grad(lambda m: fw.qr(m)[1], t, atol=1e-5)
    check_grad(lambda m: fw.qr(m)[0], t, atol=1e-5)
    check_grad(lambda m: fw.svd(m)[1], t, atol=1e-5)
    check_grad(lambda m: fw.svd(m)[0] ** 2, t, atol=1e-5)
    check_grad(lambda m: fw.svd(m)[2] ** 2, t.T.copy(), atol=1e-5)
    check_grad(fw.pinv, t, atol=1e-5)
    check_grad(lambda m: fw.matrix_power(m, 3), a)
    check_grad(lambda m: fw.matrix_power(m, -2), a, atol=1e-5)
    check_grad(lambda m: fw.norm(m, p="nuc", axis=[0, 1]), t, atol=1e-5)
    check_grad(lambda m: fw.norm(m, p=3, axis=1), t)
    check_grad(lambda m, u: fw.lstsq(m, u)[0], t, RNG.standard_normal((4, 2)), atol=1e-5)
