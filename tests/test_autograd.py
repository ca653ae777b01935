"""Autograd: every primitive's gradient rule against central finite differences in float64
(through the public API), broadcasting reduced in gradients, and the tape's features."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from tests.gradcheck import check_grad

RNG = np.random.default_rng(3)


A = RNG.standard_normal((3, 4))
POS = RNG.uniform(0.5, 2.0, (3, 4))
AWAY = A + np.sign(A) * 0.3  # away from kinks of floor/abs/sign
B = RNG.standard_normal((3, 4))
B_ROW = RNG.standard_normal((1, 4))  # broadcast against (3, 4)
IDX = fw.to_tensor(np.array([2, 0, 2, 1]))

PRIMITIVE_CASES = {
    "neg": (lambda x: -x, [A]),
    "abs": (lambda x: fw.abs(x), [AWAY]),
    "exp": (lambda x: fw.exp(x), [A]),
    "log": (lambda x: fw.log(x), [POS]),
    "sqrt": (lambda x: fw.sqrt(x), [POS]),
    "rsqrt": (lambda x: fw.rsqrt(x), [POS]),
    "sin": (lambda x: fw.sin(x), [A]),
    "cos": (lambda x: fw.cos(x), [A]),
    "tanh": (lambda x: fw.tanh(x), [A]),
    "erf": (lambda x: fw.erf(x), [A]),
    "floor": (lambda x: fw.floor(x) + x, [AWAY]),
    "ceil": (lambda x: fw.ceil(x) * x, [AWAY]),
    "sign": (lambda x: fw.sign(x) * x, [AWAY]),
    "add_broadcast": (lambda x, y: x + y, [A, B_ROW]),
    "sub_broadcast": (lambda x, y: x - y, [A, B_ROW]),
    "mul_broadcast": (lambda x, y: x * y, [A, B_ROW]),
    "div_broadcast": (lambda x, y: x / y, [A, POS[:1]]),
    "pow": (lambda x, y: x**y, [POS, B]),
    "pow_scalar": (lambda x: x**3, [A]),
    "maximum": (lambda x, y: fw.maximum(x, y), [A, B]),
    "minimum": (lambda x, y: fw.minimum(x, y), [A, B]),
    "remainder": (lambda x: fw.remainder(x, 0.7), [AWAY]),
    "floor_divide": (lambda x: fw.floor_divide(x, 0.7) + x, [AWAY]),
    "where": (lambda x, y: fw.where(fw.to_tensor(A > 0), x, y), [A, B]),
    "cast": (
        lambda x: x.astype("float32").astype("float64") * x,
        [A],
        {"eps": 1e-3, "atol": 1e-4, "rtol": 1e-4},
    ),
    "sum": (lambda x: fw.sum(x, axis=1), [A]),
    "sum_keepdim": (lambda x: fw.sum(x, axis=0, keepdim=True), [A]),
    "prod": (lambda x: fw.prod(x, axis=1), [POS]),
    "max": (lambda x: fw.max(x, axis=0), [A]),
    "min": (lambda x: fw.min(x), [A]),
    "matmul": (lambda x, y: fw.matmul(x, y), [A, B.T.copy()]),
    "matmul_wide": (lambda x, y: x @ y, [RNG.standard_normal((2, 6)), RNG.standard_normal((6, 7))]),
    "matmul_tall": (lambda x, y: x @ y, [RNG.standard_normal((2, 7, 6)), RNG.standard_normal((2, 6, 1))]),
    "where_broadcast_scalar": (lambda x: fw.where(fw.to_tensor(A[0] > 0), x, 0.0), [A]),
    "matmul_batched_broadcast": (
        lambda x, y: x @ y,
        [RNG.standard_normal((2, 3, 4)), RNG.standard_normal((4, 2))],
    ),
    "permute": (lambda x: fw.transpose(x, [1, 0]), [A]),
    "expand": (lambda x: fw.expand(x, [2, 3, 4]), [B_ROW]),
    "slice_steps": (lambda x: x[::2, 1::2], [A]),
    "concat": (lambda x, y: fw.concat([x, y], axis=0), [A, B_ROW]),
    "pad": (lambda x: fw.pad(x, [1, 2]), [A]),
    "gather": (lambda x: fw.gather(x, IDX, axis=0), [A]),
    "scatter_add": (lambda x, s: fw.scatter_add(x, IDX, s, axis=1), [A, RNG.standard_normal((3, 4))]),
    "scatter": (
        lambda x, s: fw.scatter(x, fw.to_tensor(np.array([2, 0])), s, axis=0),
        [A, RNG.standard_normal((2, 4))],
    ),
    "copy": (lambda x: x.clone() * 2.0, [A]),
    "reshape": (lambda x: x.reshape([4, 3]) * fw.to_tensor(np.arange(12.0).reshape(4, 3)), [A]),
}


@pytest.mark.parametrize("name", sorted(PRIMITIVE_CASES))
def test_primitive_gradient_matches_finite_differences(name):
    f, arrays, *opts = PRIMITIVE_CASES[name]
    check_grad(f, *arrays, **(opts[0] if opts else {}))


def test_every_differentiable_primitive_is_covered():
    from adapter_api import PRIMITIVES

    not_differentiable = {
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "logical_and",
        "logical_or",
        "logical_not",
        "argmax",
        "argmin",
        "argsort",
        "full",
        "arange",
        "philox_uniform",
    }
    covered = {
        n.split("_broadcast")[0].split("_keepdim")[0].split("_steps")[0].split("_scalar")[0]
        for n in PRIMITIVE_CASES
    }
    covered |= {"matmul", "slice"}
    assert set(PRIMITIVES) - not_differentiable - covered == set()


def test_second_order_gradient():
    x = fw.to_tensor([1.5, -0.5], stop_gradient=False)
    (g,) = fw.grad([fw.sum(x**3)], [x], create_graph=True)
    (h,) = fw.grad([fw.sum(g)], [x])
    np.testing.assert_allclose(g.numpy(), 3 * np.array([1.5, -0.5]) ** 2)
    np.testing.assert_allclose(h.numpy(), 6 * np.array([1.5, -0.5]))


def test_backward_accumulates_and_clear_grad():
    x = fw.to_tensor([1.0, 2.0], stop_gradient=False)
    (x * x).sum().backward()
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 + 3, 4 + 3])
    x.clear_grad()
    assert x.grad is None


def test_retain_graph_allows_a_second_backward():
    x = fw.to_tensor([2.0], stop_gradient=False)
    y = fw.exp(x) * x
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (np.exp(2.0) * 3.0))
    z = fw.exp(x) * x
    z.backward()
    with pytest.raises(fw.OpArgumentError, match="retain_graph"):
        z.backward()


def test_no_grad_detach_and_stop_gradient():
    x = fw.to_tensor([1.0, 2.0], stop_gradient=False)
    with fw.no_grad():
        y = x * 2.0
    assert y.stop_gradient
    d = (x * 2.0).detach()
    assert d.stop_gradient and d.is_leaf
    z = (x * d).sum()
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    assert x.requires_grad
    w = fw.to_tensor([1.0])
    assert w.requires_grad is False
    w.requires_grad = True
    assert w.stop_gradient is False


def test_tensor_hook_changes_the_gradient():
    x = fw.to_tensor([1.0, 2.0], stop_gradient=False)
    y = x * 3.0
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy()) or g * 10.0)
    y.sum().backward()
    np.testing.assert_allclose(seen[0], [1.0, 1.0])
    np.testing.assert_allclose(x.grad.numpy(), [30.0, 30.0])


def test_grad_of_unused_input():
    x = fw.to_tensor([1.0], stop_gradient=False)
    u = fw.to_tensor([1.0], stop_gradient=False)
    with pytest.raises(fw.OpArgumentError, match="allow_unused"):
        fw.grad([x * 2.0], [x, u])
    gx, gu = fw.grad([x * 2.0], [x, u], allow_unused=True)
    assert gu is None and gx.tolist() == [2.0]


def test_broadcast_gradient_is_reduced_to_the_input_shape():
    x = fw.to_tensor(np.ones((3, 1)), stop_gradient=False)
    y = fw.to_tensor(np.arange(4.0), stop_gradient=False)
    (x * y).sum().backward()
    assert x.grad.shape == (3, 1) and y.grad.shape == (4,)
    np.testing.assert_allclose(x.grad.numpy(), [[6.0]] * 3)
    np.testing.assert_allclose(y.grad.numpy(), [3.0] * 4)


def test_grad_mode_is_per_thread_and_nests():
    """Grad mode lives in a context variable: no_grad in one thread leaves another recording,
    and nested modes restore what was there (PyTorch's thread-local grad mode)."""
    import threading

    seen = {}
    inside = threading.Event()
    release = threading.Event()

    def worker():
        x = fw.ones([2])
        x.stop_gradient = False
        inside.wait(5)
        seen["recorded"] = not (x * 2.0).stop_gradient  # the main thread is inside no_grad now
        release.set()

    t = threading.Thread(target=worker)
    t.start()
    with fw.no_grad():
        inside.set()
        release.wait(5)
        with fw.enable_grad():
            assert fw.is_grad_enabled()
        assert not fw.is_grad_enabled()
    t.join(5)
    assert seen == {"recorded": True}
    assert fw.is_grad_enabled()
