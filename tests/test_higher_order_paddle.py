"""``fw.autograd.hessian`` and ``jacobian`` against real Paddle 3.3.1, float64.

Each case is a function of the library module ``P`` (``paddle`` or ``framework``) and a 1-d
input ``x`` returning a scalar (Hessian cases) or a 1-d tensor (Jacobian cases); both run the
same snippet. Every case is compared with central differences of Paddle's first-order
gradients (its Jacobian's rows for a Hessian, its forward values for a Jacobian), which
Paddle computes for every op here; and with ``paddle.autograd.hessian`` / ``jacobian``
themselves, to float64 rounding, where Paddle can take them (``PADDLE``: plain eager, or with
its composite ("prim") gradients on) and gets them right. Paddle 3.3.1 cannot take a second
derivative of softmax, log_softmax or layer_norm in eager mode (``softmax_grad doesn't have
any grad op``), nor even their ``jacobian`` (which uses ``create_graph``); and its Hessian of
conv2d with respect to the filter is wrong: zeros where its own gradients' differences are
not (``PADDLE_WRONG``, pinned below so that a fixed Paddle shows up). layer_norm runs
without a scale here: Paddle 3.3.1's first-order ``dx`` of layer_norm with a ``weight`` is
wrong on the CPU (0.55 off the closed form for a float64 (3, 6) input), so its gradients are
no oracle there; the scaled case is in ``test_higher_order.py`` against Oarlock's own
first-order gradient, which the conformance suite checks against differences of numpy's. The functions go through ops
whose second derivative takes different paths here: tanh (a primitive's rule), softmax (a
composite with its own rule, generated on the CPU), layer_norm (a generated composite
differentiated by its decomposition, the path issue 40's bug lost), conv2d (a fused kernel
with its own rule), and matmul chains.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import framework as fw

RTOL, ATOL = 1e-9, 1e-11

_rng = np.random.default_rng(40)
W6 = _rng.standard_normal(6)
W23 = _rng.standard_normal((2, 3))
CONV_W = _rng.standard_normal((3, 2, 3, 3)) * 0.3
CONV_OUT = _rng.standard_normal((1, 3, 4, 4))
A, B = _rng.standard_normal((4, 3)) * 0.5, _rng.standard_normal((2, 5)) * 0.5


def _t(P: Any, a: np.ndarray) -> Any:
    return P.to_tensor(a, dtype="float64")


def _conv_x(P: Any, x: Any) -> Any:  # x: the 32 values of a (1, 2, 4, 4) image
    F = P.nn.functional
    y = F.conv2d(x.reshape([1, 2, 4, 4]), _t(P, CONV_W), padding=1)
    return (P.tanh(y) * _t(P, CONV_OUT)).sum()


def _conv_w(P: Any, w: Any) -> Any:  # w: the 54 values of a (3, 2, 3, 3) filter
    F = P.nn.functional
    img = _t(P, np.linspace(-1, 1, 32).reshape(1, 2, 4, 4))
    y = F.conv2d(img, w.reshape([3, 2, 3, 3]), padding=1)
    return (P.tanh(y) * _t(P, CONV_OUT)).sum()


#: name -> (f(P, x) -> scalar, size of x)
HESSIANS: dict[str, tuple[Callable[[Any, Any], Any], int]] = {
    "tanh": (lambda P, x: (P.tanh(x) * _t(P, W6)).sum(), 6),
    "softmax": (lambda P, x: (P.nn.functional.softmax(x.reshape([2, 3]), axis=-1) * _t(P, W23)).sum(), 6),
    "log_softmax": (
        lambda P, x: (P.nn.functional.log_softmax(x.reshape([2, 3]), axis=-1) * _t(P, W23)).sum(),
        6,
    ),
    "layer_norm": (
        lambda P, x: (P.nn.functional.layer_norm(x.reshape([1, 6]), [6]) * _t(P, W6)).sum(),
        6,
    ),
    "gelu": (lambda P, x: (P.nn.functional.gelu(x) * _t(P, W6)).sum(), 6),
    "softplus": (lambda P, x: (P.nn.functional.softplus(x) * _t(P, W6)).sum(), 6),
    "conv2d_input": (_conv_x, 32),
    "conv2d_weight": (_conv_w, 54),
    "matmul_chain": (
        lambda P, x: (P.tanh(P.matmul(P.tanh(P.matmul(_t(P, A), x.reshape([3, 2]))), _t(P, B))) ** 2).sum(),
        6,
    ),
    "linear_function": (lambda P, x: (x * 2.0).sum(), 5),  # a zero Hessian, not an error
}

#: name -> (f(P, x) -> 1-d tensor, size of x)
JACOBIANS: dict[str, tuple[Callable[[Any, Any], Any], int]] = {
    "softmax": (lambda P, x: P.nn.functional.softmax(x, axis=-1), 5),
    "layer_norm": (
        lambda P, x: P.nn.functional.layer_norm(x.reshape([1, 6]), [6]).reshape([6]),
        6,
    ),
    "matmul_chain": (
        lambda P, x: P.matmul(P.tanh(P.matmul(_t(P, A), x.reshape([3, 2]))), _t(P, B)).reshape([20]),
        6,
    ),
}


#: how Paddle takes each case's Hessian/Jacobian itself: "eager", "prim" (its composite
#: gradients on), or why it cannot (the case is then checked against differences only)
PADDLE = {
    "hessian/tanh": "eager",
    "hessian/matmul_chain": "eager",
    "hessian/conv2d_input": "eager",
    "hessian/linear_function": "eager",
    "hessian/gelu": "prim",
    "hessian/softmax": "prim",
    "hessian/softplus": "softplus_double_grad has no grad op (eager and prim)",
    "hessian/log_softmax": "log_softmax_grad has no grad op (eager and prim)",
    "hessian/layer_norm": "layer_norm_grad has no grad op; prim mode fails in reshape",
    "hessian/conv2d_weight": "wrong in Paddle 3.3.1 (PADDLE_WRONG)",
    "jacobian/matmul_chain": "eager",
    "jacobian/softmax": "prim",
    "jacobian/layer_norm": "prim",
}
#: cases where Paddle's own double backward disagrees with differences of its gradients
PADDLE_WRONG = ("hessian/conv2d_weight",)
H = 1e-5
FD_RTOL, FD_ATOL = 1e-6, 1e-8


@pytest.fixture(scope="module")
def paddle() -> Any:
    return pytest.importorskip("paddle", reason="real Paddle (the oracle) is not installed")


def _x(n: int) -> np.ndarray:
    return np.random.default_rng(n).uniform(-1.0, 1.0, n)


def _leaf(P: Any, a: np.ndarray) -> Any:
    x = P.to_tensor(a, dtype="float64")
    x.stop_gradient = False
    return x


def _differences(fn: Callable[[np.ndarray], np.ndarray], a: np.ndarray) -> np.ndarray:
    """d fn / dx by central differences, one column per element of ``a``."""
    cols = []
    for j in range(a.size):
        e = np.zeros_like(a)
        e[j] = H
        cols.append((fn(a + e) - fn(a - e)) / (2 * H))
    return np.stack(cols, axis=-1)


def _paddle_gradient(paddle: Any, f: Callable[[Any, Any], Any]) -> Callable[[np.ndarray], np.ndarray]:
    def g(a: np.ndarray) -> np.ndarray:
        x = _leaf(paddle, a)
        (gx,) = paddle.grad(f(paddle, x), x)  # first order only: Paddle takes every op here
        return gx.numpy()

    return g


def _paddle_value(paddle: Any, f: Callable[[Any, Any], Any]) -> Callable[[np.ndarray], np.ndarray]:
    return lambda a: f(paddle, paddle.to_tensor(a, dtype="float64")).numpy()


@contextlib.contextmanager
def _paddle_mode(paddle: Any, how: str) -> Iterator[None]:
    core = paddle.framework.core
    if how == "prim":
        core.set_prim_eager_enabled(True)
    try:
        yield
    finally:
        if how == "prim":
            core.set_prim_eager_enabled(False)


def _check(
    paddle: Any, key: str, got: np.ndarray, by_differences: np.ndarray, own: Callable[[], Any]
) -> None:
    np.testing.assert_allclose(
        got, by_differences, rtol=FD_RTOL, atol=FD_ATOL, err_msg=f"{key} against differences of Paddle's"
    )
    how = PADDLE[key]
    if how in ("eager", "prim"):
        with _paddle_mode(paddle, how):
            want = own()[:].numpy()
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"{key} against Paddle's")
    elif key in PADDLE_WRONG:
        want = own()[:].numpy()
        assert not np.allclose(want, by_differences, rtol=FD_RTOL, atol=1e-3), (
            f"Paddle's {key} now agrees with its gradients' differences: compare with it directly"
        )


@pytest.mark.parametrize("name", sorted(HESSIANS))
def test_hessian_matches_paddle(paddle: Any, name: str) -> None:
    f, n = HESSIANS[name]
    a = _x(n)
    xo = _leaf(fw, a)
    got = fw.autograd.hessian(f(fw, xo), xo)[:].numpy()
    assert got.shape == (n, n)
    by_differences = _differences(_paddle_gradient(paddle, f), a)
    if name != "linear_function":  # the case means something: a non-zero second derivative
        assert np.abs(by_differences).max() > 1e-3

    def own() -> Any:
        xp = _leaf(paddle, a)
        return paddle.autograd.hessian(f(paddle, xp), xp)

    _check(paddle, f"hessian/{name}", got, by_differences, own)


@pytest.mark.parametrize("name", sorted(JACOBIANS))
def test_jacobian_matches_paddle(paddle: Any, name: str) -> None:
    f, n = JACOBIANS[name]
    a = _x(n)
    xo = _leaf(fw, a)
    got = fw.autograd.jacobian(f(fw, xo), xo)[:].numpy()

    def own() -> Any:
        xp = _leaf(paddle, a)
        return paddle.autograd.jacobian(f(paddle, xp), xp)

    _check(paddle, f"jacobian/{name}", got, _differences(_paddle_value(paddle, f), a), own)


def test_jacobian_is_differentiable(paddle: Any) -> None:
    """``d/dx sum(J(x) * M)`` through layer_norm (the decomposition path): the Jacobian is
    built with ``create_graph``, so its entries have gradients, a contraction of the second
    derivative. Against differences of the same contraction of Paddle's first-order rows."""
    f, n = JACOBIANS["layer_norm"]
    a = _x(n)
    m = np.outer(W6, W6)
    x = _leaf(fw, a)
    J = fw.autograd.jacobian(f(fw, x), x)[:]
    (got,) = fw.grad((J * _t(fw, m)).sum(), x)

    def contracted(b: np.ndarray) -> np.ndarray:
        rows = []
        for i in range(6):
            xp = _leaf(paddle, b)
            (r,) = paddle.grad(f(paddle, xp)[i], xp)
            rows.append(r.numpy())
        return np.array((np.stack(rows) * m).sum())

    want = _differences(contracted, a)
    np.testing.assert_allclose(got.numpy(), want, rtol=FD_RTOL, atol=FD_ATOL)
    assert np.abs(want).max() > 1e-3


def test_hessian_of_several_inputs(paddle: Any) -> None:
    """``hessian(y, (x, w))`` through conv2d: each block, the cross terms included, against
    differences of Paddle's gradients (Paddle's own w-w block is wrong, see PADDLE_WRONG)."""
    a, wv = _x(32), CONV_W.reshape(-1)

    def y(P: Any, x: Any, w: Any) -> Any:
        out = P.nn.functional.conv2d(x.reshape([1, 2, 4, 4]), w.reshape([3, 2, 3, 3]), padding=1)
        return (P.tanh(out) * _t(P, CONV_OUT)).sum()

    x, w = _leaf(fw, a), _leaf(fw, wv)
    Hs = fw.autograd.hessian(y(fw, x, w), (x, w))
    both = np.concatenate([a, wv])

    def grads(j: int) -> Callable[[np.ndarray], np.ndarray]:
        def g(v: np.ndarray) -> np.ndarray:
            xp, wp = _leaf(paddle, v[:32]), _leaf(paddle, v[32:])
            return paddle.grad(y(paddle, xp, wp), [xp, wp])[j].numpy()

        return g

    for i in range(2):
        full = _differences(grads(i), both)
        for j, cols in enumerate((slice(0, 32), slice(32, None))):
            np.testing.assert_allclose(
                Hs[i][j][:].numpy(), full[:, cols], rtol=FD_RTOL, atol=FD_ATOL, err_msg=f"block {i},{j}"
            )


def test_batched_hessian_and_jacobian_match_paddle(paddle: Any) -> None:
    """``batch_axis=0``: one Jacobian/Hessian per sample, through matmul and tanh, which
    Paddle differentiates twice in plain eager mode."""
    a = np.random.default_rng(5).uniform(-1.0, 1.0, (3, 4))
    res = []
    for P in (paddle, fw):
        x = _leaf(P, a)
        y = P.tanh(P.matmul(x, _t(P, A)))  # (3, 3): per sample, 3 outputs of 4 inputs
        J = P.autograd.jacobian(y, x, batch_axis=0)[:].numpy()
        x2 = _leaf(P, a)
        s = (P.tanh(P.matmul(x2, _t(P, A))) ** 2).sum(axis=1)
        Hb = P.autograd.hessian(s, x2, batch_axis=0)[:].numpy()
        res.append((J, Hb))
    for k, what in enumerate(("jacobian", "hessian")):
        assert res[1][k].shape == res[0][k].shape
        np.testing.assert_allclose(res[1][k], res[0][k], rtol=RTOL, atol=ATOL, err_msg=f"batched {what}")
    assert np.abs(res[0][1]).max() > 1e-3
