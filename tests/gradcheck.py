"""Gradient checking against central finite differences in float64 (shared by the tests)."""

from __future__ import annotations

import numpy as np

import framework as fw


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


def check_grad(f, *arrays, which=None, atol=1e-6, rtol=1e-5, eps=1e-6):
    """Compare fw.grad of sum(f(*xs) * w) with central differences, for each chosen input."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    which = range(len(arrays)) if which is None else which
    for i in which:
        num, w = numeric_grad(f, arrays, i, eps)
        ts = [fw.to_tensor(a, stop_gradient=(j != i)) for j, a in enumerate(arrays)]
        (g,) = fw.grad([f(*ts)], [ts[i]], [fw.to_tensor(w)])
        np.testing.assert_allclose(g.numpy(), num, atol=atol, rtol=rtol, err_msg=f"gradient of input {i}")
