"""Composite ops: values against numpy references, gradients against finite differences
(float64), and the fused-kernel path a plugin can take over."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

import framework as fw
import framework.nn.functional as F

RNG = np.random.default_rng(0)


def numeric_grad(f, arrays, i, eps=1e-6):
    """Central differences of sum(f(*arrays) * w) wrt arrays[i], with a fixed random w."""
    base = np.asarray(f(*[fw.to_tensor(a) for a in arrays]).numpy())
    w = np.random.default_rng(1).standard_normal(base.shape)
    a = arrays[i]
    g = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        old = a[idx]
        a[idx] = old + eps
        up = (f(*[fw.to_tensor(x) for x in arrays]).numpy() * w).sum()
        a[idx] = old - eps
        dn = (f(*[fw.to_tensor(x) for x in arrays]).numpy() * w).sum()
        a[idx] = old
        g[idx] = (up - dn) / (2 * eps)
    return g, w


def check_grad(f, *arrays, which=None, atol=1e-6, rtol=1e-5):
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    which = range(len(arrays)) if which is None else which
    for i in which:
        num, w = numeric_grad(f, arrays, i)
        ts = [fw.to_tensor(a, stop_gradient=(j != i)) for j, a in enumerate(arrays)]
        out = f(*ts)
        (g,) = fw.grad([out], [ts[i]], [fw.to_tensor(w)])
        np.testing.assert_allclose(g.numpy(), num, atol=atol, rtol=rtol, err_msg=f"gradient of input {i}")


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


# -- values ---------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax_match_numpy(axis):
    x = RNG.standard_normal((3, 4, 5)) * 10
    t = fw.to_tensor(x)
    np.testing.assert_allclose(F.softmax(t, axis=axis).numpy(), np_softmax(x, axis), rtol=1e-12)
    np.testing.assert_allclose(F.log_softmax(t, axis=axis).numpy(), np.log(np_softmax(x, axis)), rtol=1e-10, atol=1e-12)


def test_softmax_large_values_stay_finite():
    t = fw.to_tensor(np.array([[1000.0, 1000.0, -1000.0]], np.float32))
    np.testing.assert_allclose(F.softmax(t).numpy(), [[0.5, 0.5, 0.0]])
    assert np.isfinite(F.log_softmax(t).numpy()).all()


def test_logsumexp_matches_scipy():
    x = RNG.standard_normal((4, 6)) * 30
    np.testing.assert_allclose(F.logsumexp(fw.to_tensor(x), axis=1).numpy(), special.logsumexp(x, axis=1), rtol=1e-12)
    np.testing.assert_allclose(F.logsumexp(fw.to_tensor(x)).numpy(), special.logsumexp(x), rtol=1e-12)


def test_layer_norm_matches_numpy():
    x = RNG.standard_normal((2, 3, 4, 5))
    w = RNG.standard_normal((4, 5))
    b = RNG.standard_normal((4, 5))
    mu = x.mean((-2, -1), keepdims=True)
    var = x.var((-2, -1), keepdims=True)
    ref = (x - mu) / np.sqrt(var + 1e-5) * w + b
    got = F.layer_norm(fw.to_tensor(x), [4, 5], fw.to_tensor(w), fw.to_tensor(b), epsilon=1e-5)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10, atol=1e-12)
    plain = F.layer_norm(fw.to_tensor(x), 5)
    np.testing.assert_allclose(plain.numpy(), (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5), rtol=1e-10)


def test_rms_norm_matches_numpy():
    x = RNG.standard_normal((3, 8))
    w = RNG.standard_normal(8)
    ref = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(F.rms_norm(fw.to_tensor(x), weight=fw.to_tensor(w)).numpy(), ref, rtol=1e-10)
    np.testing.assert_allclose(F.rms_norm(fw.to_tensor(x)).numpy(), ref / w, rtol=1e-10)


def test_layer_norm_rejects_wrong_normalized_shape():
    with pytest.raises(fw.OpArgumentError, match=r"\[layer_norm\] normalized_shape"):
        F.layer_norm(fw.ones([2, 3]), [4])


def test_activations_match_references():
    x = np.linspace(-6, 6, 25)
    t = fw.to_tensor(x)
    erf_gelu = 0.5 * x * (1 + special.erf(x / math.sqrt(2)))
    tanh_gelu = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    sig = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(F.gelu(t).numpy(), erf_gelu, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(F.gelu(t, approximate=True).numpy(), tanh_gelu, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(F.silu(t).numpy(), x * sig, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(F.sigmoid(t).numpy(), sig, rtol=1e-12)
    np.testing.assert_allclose(F.relu(t).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(F.leaky_relu(t, 0.1).numpy(), np.where(x > 0, x, 0.1 * x))
    np.testing.assert_allclose(F.softplus(t).numpy(), np.log1p(np.exp(x)), rtol=1e-12)
    np.testing.assert_allclose(F.tanh(t).numpy(), np.tanh(x), rtol=1e-12)


# -- gradients ------------------------------------------------------------------------------
_X = RNG.standard_normal((3, 4))
_W4 = RNG.standard_normal(4)

GRAD_CASES = {
    "softmax": (lambda x: F.softmax(x, axis=-1), [_X]),
    "softmax_axis0": (lambda x: F.softmax(x, axis=0), [_X]),
    "log_softmax": (lambda x: F.log_softmax(x, axis=1), [_X]),
    "logsumexp": (lambda x: F.logsumexp(x, axis=1), [_X]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, 4, w, b), [_X, _W4, _W4 + 1]),
    "rms_norm": (lambda x, w: F.rms_norm(x, weight=w), [_X, _W4]),
    "gelu": (lambda x: F.gelu(x), [_X]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate=True), [_X]),
    "silu": (lambda x: F.silu(x), [_X]),
    "sigmoid": (lambda x: F.sigmoid(x), [_X]),
    "relu": (lambda x: F.relu(x), [_X]),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), [_X]),
    "softplus": (lambda x: F.softplus(x, beta=2.0), [_X]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_composite_gradients_match_finite_differences(name):
    f, arrays = GRAD_CASES[name]
    check_grad(f, *arrays)


# -- fused path -----------------------------------------------------------------------------
@pytest.fixture
def fused_softmax_on_cpu():
    """A fused softmax kernel registered for the cpu device (as a vendor plugin would)."""
    from framework._src import dispatch
    from framework._src.plugins import host

    calls = []

    def kernel(ctx, outs, ins, axis):
        calls.append(axis)
        outs[0][...] = np_softmax(ins[0], axis)

    reg = host().registry
    key = ("softmax", "cpu", np.dtype("float64"))
    old = reg.kernels.get(key)
    reg.add_kernel("softmax", "cpu", ["float64"], kernel)
    dispatch.clear_kernel_cache()
    yield calls
    if old is None:
        del reg.kernels[key]
    else:
        reg.kernels[key] = old
    dispatch.clear_kernel_cache()


def test_fused_kernel_replaces_decomposition_and_gradient_still_works(fused_softmax_on_cpu):
    x = RNG.standard_normal((2, 5))
    before = fw.op_path_stats().get("softmax@cpu", {}).get("fused", 0)
    t = fw.to_tensor(x, stop_gradient=False)
    y = F.softmax(t, axis=1)
    assert fused_softmax_on_cpu == [1]
    assert fw.op_path_stats()["softmax@cpu"]["fused"] == before + 1
    np.testing.assert_allclose(y.numpy(), np_softmax(x, 1), rtol=1e-12)
    check_grad(lambda a: F.softmax(a, axis=1), x)
