"""Silent differences from real Paddle 3.3.1 found in commonly used ops (issue 40), each fixed
and checked against Paddle: round (halves to even, ``decimals``), cummax/cummin with NaN, and
clip with min > max (Paddle raises). Paddle-dependent cases skip without Paddle."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import framework as fw
from adapter_api import OpArgumentError

HAVE_PADDLE = importlib.util.find_spec("paddle") is not None
needs_paddle = pytest.mark.skipif(not HAVE_PADDLE, reason="real Paddle is not installed (the oracle)")
NAN = float("nan")


def _paddle():  # type: ignore[no-untyped-def]
    import paddle

    return paddle


def _same(got, want) -> None:  # type: ignore[no-untyped-def]
    g, w = np.asarray(got.numpy()), np.asarray(want.numpy())
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
    np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(np.signbit(g), np.signbit(w))  # -0 stays -0


_HALVES = [
    0.5,
    1.5,
    2.5,
    -0.5,
    -1.5,
    -2.5,
    0.49999997,
    3.5,
    -0.3,
    7.5,
    -7.5,
    2.4,
    np.inf,
    -np.inf,
    2**24 + 2.0,
]


@needs_paddle
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_round_halves_to_even_as_paddle(dtype: str) -> None:
    paddle = _paddle()
    x = np.array(_HALVES, dtype)
    _same(fw.round(fw.to_tensor(x)), paddle.round(paddle.to_tensor(x)))
    _same(fw.to_tensor(x).round(), paddle.to_tensor(x).round())
    np.testing.assert_array_equal(fw.round(fw.to_tensor(x)).numpy(), np.round(x))  # numpy agrees
    assert np.isnan(fw.round(fw.to_tensor(np.array([NAN], dtype))).numpy()).all()


@needs_paddle
@pytest.mark.parametrize("decimals", [1, 2, -1])
def test_round_decimals_as_paddle(decimals: int) -> None:
    paddle = _paddle()
    x = np.array([1.25, 1.35, -2.675, 12.5, 125.0, 135.0, -0.04], "float32")
    _same(fw.round(fw.to_tensor(x), decimals=decimals), paddle.round(paddle.to_tensor(x), decimals=decimals))


def test_round_gradient_is_zero_and_bad_decimals_raise() -> None:
    x = fw.to_tensor([0.5, 1.7, -2.5], stop_gradient=False)
    (g,) = fw.grad([fw.round(x).sum()], [x])
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0, 0.0])
    with pytest.raises(OpArgumentError, match=r"\[round\] decimals must be an int"):
        fw.round(x, decimals=1.5)


_CUM = [[1.0, NAN, 3.0, 2.0], [NAN, 1.0, 2.0, 0.5], [3.0, 1.0, NAN, 0.0], [2.0, 2.0, 1.0, 3.0]]


@needs_paddle
@pytest.mark.parametrize("fn", ["cummax", "cummin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cummax_cummin_propagate_nan_as_paddle(fn: str, axis: int) -> None:
    paddle = _paddle()
    x = np.array(_CUM, "float32")
    got = getattr(fw, fn)(fw.to_tensor(x), axis=axis)
    want = getattr(paddle, fn)(paddle.to_tensor(x), axis=axis)
    for g, w in zip(got, want):
        _same(g, w)


def test_cummax_nan_keeps_the_first_nan_index() -> None:
    v, i = fw.cummax(fw.to_tensor([1.0, NAN, 5.0, NAN]))
    assert np.isnan(v.numpy()[1:]).all() and v.numpy()[0] == 1.0
    assert i.tolist() == [0, 1, 1, 1]
    v, i = fw.cummin(fw.to_tensor([3, 1, 1, 0]))  # integers: no NaN, ties keep the later index
    assert v.tolist() == [3, 1, 1, 0] and i.tolist() == [0, 1, 2, 3]


@needs_paddle
def test_clip_min_above_max_raises_as_paddle() -> None:
    paddle = _paddle()
    with pytest.raises(ValueError):
        paddle.clip(paddle.to_tensor([-2.0, 5.0]), 3.0, 1.0)
    for x in (fw.to_tensor([-2.0, 0.0, 5.0]), fw.to_tensor([-2, 5])):
        with pytest.raises(OpArgumentError, match=r"\[clip\] min must not be greater than max, got min=3"):
            fw.clip(x, 3, 1)
        with pytest.raises(OpArgumentError, match=r"\[clip\]"):
            x.clip(3.0, 1.0)
    x = np.array([-2.0, 0.0, 1.0, 5.0], "float32")
    _same(fw.clip(fw.to_tensor(x), 1.0, 1.0), paddle.clip(paddle.to_tensor(x), 1.0, 1.0))
    _same(fw.clip(fw.to_tensor(x), None, -1.0), paddle.clip(paddle.to_tensor(x), None, -1.0))


@needs_paddle
def test_nanquantile_nearest_rounds_halves_to_even_as_paddle() -> None:
    """Position 0.5 picks the 0th value and 2.5 the 2nd (it picked the 1st and 3rd before)."""
    paddle = _paddle()
    x = np.array([1.0, NAN, 3.0, 2.0, 5.0])
    for q in (0.5 / 3, 2.5 / 3, 0.5):
        got = fw.nanquantile(fw.to_tensor(x), q, interpolation="nearest")
        _same(got, paddle.nanquantile(paddle.to_tensor(x), q, interpolation="nearest"))


@needs_paddle
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_places_nan_last_as_paddle(right: bool) -> None:
    """A NaN value goes after every number (it went to position 0 before)."""
    paddle = _paddle()
    seq = np.array([[1.0, 2.0, 2.0, 3.0], [-1.0, 0.0, 4.0, 4.0]], "float32")
    vals = np.array([[2.0, NAN, 0.0, 5.0], [NAN, 4.0, -2.0, NAN]], "float32")
    got = fw.searchsorted(fw.to_tensor(seq), fw.to_tensor(vals), right=right)
    _same(got, paddle.searchsorted(paddle.to_tensor(seq), paddle.to_tensor(vals), right=right))
    b = np.array([2.0, NAN, 5.0], "float32")
    _same(
        fw.bucketize(fw.to_tensor(b), fw.to_tensor(seq[0]), right=right),
        paddle.bucketize(paddle.to_tensor(b), paddle.to_tensor(seq[0]), right=right),
    )


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_in_a_sequence_holding_nan_as_numpy(side: str) -> None:
    """A sorted sequence ends in its NaNs; positions are numpy's (Paddle's binary search gives
    order-dependent positions there, e.g. 4 for every value with right=True)."""
    seq = np.array([1.0, 2.0, NAN, NAN], "float32")
    vals = np.array([2.0, NAN, 0.0, 5.0, 3.0], "float32")
    got = fw.searchsorted(fw.to_tensor(seq), fw.to_tensor(vals), right=side == "right")
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(seq, vals, side=side))
