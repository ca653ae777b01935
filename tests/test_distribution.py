"""``fw.distribution`` against real Paddle (densities, entropies, moments, KL) and scipy, plus sampling moments."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import framework as fw

paddle = pytest.importorskip(
    "paddle", reason="real Paddle is the oracle for these tests (pip install paddlepaddle)"
)

D = fw.distribution


def _pair(name, *args):
    return getattr(D, name)(*[fw.to_tensor(np.asarray(a, "float32")) for a in args]), getattr(
        paddle.distribution, name
    )(*[paddle.to_tensor(np.asarray(a, "float32")) for a in args])


CASES = [
    ("Normal", ([0.0, 1.5, -2.0], [1.0, 0.5, 3.0]), [0.3, 1.0, -5.0]),
    ("Uniform", ([0.0, -1.0, 2.0], [1.0, 3.0, 2.5]), [0.5, 2.0, 2.25]),
    ("Bernoulli", ([0.3, 0.9, 0.5],), [1.0, 0.0, 1.0]),
    ("Beta", ([2.0, 0.5, 5.0], [3.0, 0.5, 1.0]), [0.4, 0.1, 0.9]),
    ("Dirichlet", ([[1.0, 2.0, 3.0], [0.5, 0.5, 4.0]],), [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]),
]


@pytest.mark.parametrize("name,args,value", CASES, ids=[c[0] for c in CASES])
def test_densities_entropy_moments_match_paddle(name, args, value):
    ours, ref = _pair(name, *args)
    v = np.asarray(value, "float32")
    np.testing.assert_allclose(
        ours.log_prob(fw.to_tensor(v)).numpy(),
        ref.log_prob(paddle.to_tensor(v)).numpy(),
        rtol=1e-5,
        atol=1e-5,
    )
    np.testing.assert_allclose(
        ours.prob(fw.to_tensor(v)).numpy(), ref.prob(paddle.to_tensor(v)).numpy(), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(ours.entropy().numpy(), ref.entropy().numpy(), rtol=1e-5, atol=1e-5)
    if name == "Uniform":  # Paddle's Uniform has no mean/variance: scipy's
        lo, hi = (np.asarray(a, "float64") for a in args)
        want_mean, want_var = stats.uniform(lo, hi - lo).mean(), stats.uniform(lo, hi - lo).var()
    else:
        want_mean, want_var = ref.mean.numpy(), ref.variance.numpy()
    np.testing.assert_allclose(ours.mean.numpy(), want_mean, rtol=1e-6)
    np.testing.assert_allclose(ours.variance.numpy(), want_var, rtol=1e-5)


def test_against_scipy():
    x = np.array([0.2, 0.7], "float32")
    np.testing.assert_allclose(
        D.Beta(fw.to_tensor([2.0, 0.7]), fw.to_tensor([3.0, 1.5])).log_prob(fw.to_tensor(x)).numpy(),
        stats.beta.logpdf(x, [2.0, 0.7], [3.0, 1.5]),
        rtol=1e-5,
    )
    c = np.array([1.0, 2.0, 3.0])
    assert D.Dirichlet(fw.to_tensor(c.astype("float32"))).entropy().item() == pytest.approx(
        stats.dirichlet.entropy(c), rel=1e-5
    )
    assert D.Normal(1.0, 2.0).entropy().item() == pytest.approx(stats.norm(1, 2).entropy(), rel=1e-6)


KL_CASES = [
    ("Normal", ([0.0, 1.0], [1.0, 2.0]), ([0.5, -1.0], [2.0, 0.5])),
    ("Uniform", ([0.0, -1.0], [1.0, 1.0]), ([-1.0, -2.0], [2.0, 3.0])),
    ("Categorical", ([[1.0, 2.0, 0.5]],), ([[2.0, 1.0, 1.0]],)),
    ("Bernoulli", ([0.3, 0.8],), ([0.6, 0.1],)),
    ("Beta", ([2.0, 0.5], [3.0, 1.5]), ([1.0, 2.0], [1.0, 0.7])),
    ("Dirichlet", ([[1.0, 2.0, 3.0]],), ([[2.0, 2.0, 0.5]],)),
]


@pytest.mark.parametrize("name,pa,qa", KL_CASES, ids=[c[0] for c in KL_CASES])
def test_kl_divergence_matches_paddle(name, pa, qa):
    p, pp = _pair(name, *pa)
    q, pq = _pair(name, *qa)
    if name == "Uniform":  # Paddle has no Uniform KL: log of the width ratio, q's support holding p's
        want = np.log((np.subtract(*qa[::-1])) / np.subtract(*pa[::-1])).astype("float32")
    else:
        want = paddle.distribution.kl_divergence(pp, pq).numpy()
    np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p.kl_divergence(q).numpy(), want, rtol=1e-5, atol=1e-6)


def test_categorical_follows_paddles_rules():
    ours, ref = _pair("Categorical", [[0.2, 0.8], [1.0, 3.0]])
    for v in ([1, 0], [[1], [0]]):
        np.testing.assert_allclose(
            ours.log_prob(fw.to_tensor(v, dtype="int64")).numpy(),
            ref.log_prob(paddle.to_tensor(v, dtype="int64")).numpy(),
            rtol=1e-6,
        )
    np.testing.assert_allclose(ours.entropy().numpy(), ref.entropy().numpy(), rtol=1e-6)
    fw.seed(0)
    draws = D.Categorical(fw.to_tensor([1.0, 3.0])).sample([4000]).numpy()
    assert draws.shape == (4000,) and set(np.unique(draws)) <= {0, 1}
    assert abs(draws.mean() - 0.75) < 5 * np.sqrt(0.75 * 0.25 / 4000)


@pytest.mark.parametrize("name,args", [(c[0], c[1]) for c in CASES], ids=[c[0] for c in CASES])
def test_sample_shapes_and_moments(name, args):
    fw.seed(0)
    ours, _ = _pair(name, *args)
    n = 20000
    s = ours.sample([n])
    assert s.shape == (n,) + ours.batch_shape + ours.event_shape
    mean, var = ours.mean.numpy(), ours.variance.numpy()
    got = s.numpy().astype("float64")
    np.testing.assert_array_less(np.abs(got.mean(0) - mean), 5 * np.sqrt(var / n) + 1e-7)
    np.testing.assert_allclose(got.var(0), var, rtol=0.1, atol=1e-3)
    fw.seed(0)
    np.testing.assert_array_equal(
        getattr(D, name)(*[fw.to_tensor(np.asarray(a, "float32")) for a in args]).sample([n]).numpy(),
        s.numpy(),
    )


def test_rsample_is_differentiable(device):
    loc = fw.to_tensor([0.5, -1.0], device=device, stop_gradient=False)
    scale = fw.to_tensor([2.0, 0.5], device=device, stop_gradient=False)
    fw.seed(3)
    d = D.Normal(loc, scale)
    s = d.rsample([1000])
    s.sum().backward()
    eps = (s.detach().numpy() - loc.numpy()) / scale.numpy()
    np.testing.assert_allclose(loc.grad.numpy(), [1000.0, 1000.0], rtol=1e-6)
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0), rtol=1e-4, atol=1e-3)
    lp = D.Normal(loc, scale).log_prob(fw.to_tensor([1.0, 1.0], device=device)).sum()
    (gl,) = fw.grad(lp, loc)
    np.testing.assert_allclose(gl.numpy(), (1.0 - loc.numpy()) / scale.numpy() ** 2, rtol=1e-5)
    with pytest.raises(fw.OpArgumentError, match=r"\[Beta.rsample\] has no reparametrised sampler"):
        D.Beta(1.0, 2.0).rsample([2])
    with pytest.raises(fw.OpArgumentError, match=r"no rule for KL\(Normal \|\| Beta\)"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Beta(1.0, 1.0))
