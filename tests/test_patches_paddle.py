"""unfold / fold against real Paddle 3.3.1 (issue 40): every ``paddings`` form Paddle accepts
(int, [h, w], and four ints in Paddle's unfold/fold order [top, left, bottom, right]), with
strides and dilations; values and gradients. Bad ``paddings`` raise naming the op."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from adapter_api import OpArgumentError

from .gradcheck import check_grad

HAVE_PADDLE = importlib.util.find_spec("paddle") is not None
needs_paddle = pytest.mark.skipif(not HAVE_PADDLE, reason="real Paddle is not installed (the oracle)")

# (kernel_sizes, strides, paddings, dilations); the asymmetric four-int cases would give the same
# shapes under the conv order (top, bottom, left, right) but different values.
_CASES = [
    ([2, 3], 1, 0, 1),
    ([2, 3], 1, 1, 1),
    ([3, 2], [2, 1], [1, 2], 1),
    ([2, 3], 1, [1, 0, 0, 0], 1),
    ([2, 3], 1, [0, 1, 0, 0], 1),
    ([2, 2], 1, [1, 0, 0, 2], 1),
    ([2, 2], [1, 2], [2, 1, 0, 1], [2, 1]),
    ([3, 3], 2, [0, 2, 1, 0], [1, 2]),
    (2, (2, 3), (1, 0, 2, 1), 2),
]


def _paddle():  # type: ignore[no-untyped-def]
    import paddle

    return paddle


def _weights(shape: tuple) -> np.ndarray:
    return np.random.default_rng(1).standard_normal(shape).astype("float32")


@needs_paddle
@pytest.mark.parametrize("k,s,p,d", _CASES, ids=[str(i) for i in range(len(_CASES))])
def test_unfold_matches_paddle(k, s, p, d) -> None:  # type: ignore[no-untyped-def]
    paddle = _paddle()
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 8)).astype("float32")
    px = paddle.to_tensor(x, stop_gradient=False)
    want = paddle.nn.functional.unfold(px, k, strides=s, paddings=p, dilations=d)
    w = _weights(tuple(want.shape))
    (want * paddle.to_tensor(w)).sum().backward()
    tx = fw.to_tensor(x, stop_gradient=False)
    got = F.unfold(tx, k, strides=s, paddings=p, dilations=d)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=0)
    (g,) = fw.grad([got], [tx], [fw.to_tensor(w)])
    np.testing.assert_allclose(g.numpy(), px.grad.numpy(), rtol=1e-6, atol=1e-6)
    # the Layer reads its arguments the same way
    layer = fw.nn.Unfold(k, dilations=d, paddings=p, strides=s)
    np.testing.assert_allclose(layer(tx).numpy(), want.numpy(), rtol=0, atol=0)


def _paddle_folds(p) -> bool:  # type: ignore[no-untyped-def]
    """Paddle's fold sizes its columns with 2*paddings[0] and 2*paddings[1] but pads with all four,
    so it raises unless top == bottom and left == right; Oarlock folds those as unfold's adjoint
    (test_fold_is_the_adjoint_of_unfold)."""
    return not (isinstance(p, (list, tuple)) and len(p) == 4 and (p[0] != p[2] or p[1] != p[3]))


_FOLD_CASES = [c for c in _CASES if _paddle_folds(c[2])] + [
    ([2, 3], 1, [1, 0, 1, 0], 1),
    ([2, 2], [2, 1], [0, 2, 0, 2], [1, 2]),
    ([3, 2], 2, (1, 1, 1, 1), 1),
]


@needs_paddle
@pytest.mark.parametrize("k,s,p,d", _FOLD_CASES, ids=[str(i) for i in range(len(_FOLD_CASES))])
def test_fold_matches_paddle(k, s, p, d) -> None:  # type: ignore[no-untyped-def]
    paddle = _paddle()
    out = [7, 8]
    # the column count comes from unfold of an image of the output size
    cols_shape = tuple(
        paddle.nn.functional.unfold(paddle.zeros([2, 3] + out), k, strides=s, paddings=p, dilations=d).shape
    )
    x = np.random.default_rng(2).standard_normal(cols_shape).astype("float32")
    px = paddle.to_tensor(x, stop_gradient=False)
    want = paddle.nn.functional.fold(px, out, k, strides=s, paddings=p, dilations=d)
    w = _weights(tuple(want.shape))
    (want * paddle.to_tensor(w)).sum().backward()
    tx = fw.to_tensor(x, stop_gradient=False)
    got = F.fold(tx, out, k, strides=s, paddings=p, dilations=d)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    (g,) = fw.grad([got], [tx], [fw.to_tensor(w)])
    np.testing.assert_allclose(g.numpy(), px.grad.numpy(), rtol=1e-6, atol=1e-6)
    layer = fw.nn.Fold(out, k, dilations=d, paddings=p, strides=s)
    np.testing.assert_allclose(layer(tx).numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_four_int_paddings_are_top_left_bottom_right() -> None:
    """Independent of Paddle: padding only the top adds a zero row above the image, so the
    first column of a 1x1 unfold is 0 and the image follows."""
    x = np.arange(1, 7, dtype="float32").reshape(1, 1, 2, 3)
    top = F.unfold(fw.to_tensor(x), [1, 1], paddings=[1, 0, 0, 0]).numpy().reshape(3, 3)
    np.testing.assert_array_equal(top, np.pad(x[0, 0], ((1, 0), (0, 0))))
    left = F.unfold(fw.to_tensor(x), [1, 1], paddings=[0, 1, 0, 0]).numpy().reshape(2, 4)
    np.testing.assert_array_equal(left, np.pad(x[0, 0], ((0, 0), (1, 0))))
    bottom_right = F.unfold(fw.to_tensor(x), [1, 1], paddings=[0, 0, 1, 2]).numpy().reshape(3, 5)
    np.testing.assert_array_equal(bottom_right, np.pad(x[0, 0], ((0, 1), (0, 2))))


@pytest.mark.parametrize("k,s,p,d", _CASES, ids=[str(i) for i in range(len(_CASES))])
def test_fold_is_the_adjoint_of_unfold(k, s, p, d) -> None:  # type: ignore[no-untyped-def]
    """<unfold(x), y> == <x, fold(y)> for every paddings form, asymmetric ones included."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 7, 8))
    u = F.unfold(fw.to_tensor(x), k, strides=s, paddings=p, dilations=d)
    y = rng.standard_normal(tuple(u.shape))
    f = F.fold(fw.to_tensor(y), [7, 8], k, strides=s, paddings=p, dilations=d)
    np.testing.assert_allclose(float((u.numpy() * y).sum()), float((x * f.numpy()).sum()), rtol=1e-10)


def test_unfold_fold_gradients_finite_differences() -> None:
    kw = {"strides": [2, 1], "paddings": [1, 0, 2, 1], "dilations": [1, 2]}
    check_grad(lambda t: F.unfold(t, [2, 2], **kw), np.random.default_rng(3).standard_normal((1, 2, 5, 6)))
    n_cols = F.unfold(fw.zeros([1, 2, 5, 6]), [2, 2], **kw).shape[2]
    check_grad(
        lambda t: F.fold(t, [5, 6], [2, 2], **kw), np.random.default_rng(4).standard_normal((1, 8, n_cols))
    )


@pytest.mark.parametrize("bad", ["same", [1, 2, 3], [1.5, 0], True, [0, 0, -1, 0]])
def test_bad_paddings_raise_naming_the_op(bad) -> None:  # type: ignore[no-untyped-def]
    x = fw.ones([1, 1, 4, 4])
    with pytest.raises(OpArgumentError, match=r"\[unfold\] paddings"):
        F.unfold(x, [2, 2], paddings=bad)
    with pytest.raises(OpArgumentError, match=r"\[fold\] paddings"):
        F.fold(fw.ones([1, 4, 9]), [4, 4], [2, 2], paddings=bad)
