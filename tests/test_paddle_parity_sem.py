"""Semantics decided against real Paddle 3.3.1 (issue 40): negative indices in gather-family
ops, ``prod`` of int32, ``mean`` of integers, ``pow`` of an integer tensor by a float, Paddle's
'SAME' padding in conv3d and the pools, and the two differences kept on purpose (``argmax`` /
``argmin`` with NaN, the order of ties in ``topk``). Paddle-dependent cases skip without Paddle."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import framework as fw
from adapter_api import OpArgumentError

HAVE_PADDLE = importlib.util.find_spec("paddle") is not None
needs_paddle = pytest.mark.skipif(not HAVE_PADDLE, reason="real Paddle is not installed (the oracle)")
NAN = float("nan")
F = fw.nn.functional


def _paddle():  # type: ignore[no-untyped-def]
    import paddle

    return paddle


def _same(got, want, tol: float = 0.0) -> None:  # type: ignore[no-untyped-def]
    g, w = np.asarray(got.numpy()), np.asarray(want.numpy())
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
    if tol:
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(g, w)


# -- negative indices ------------------------------------------------------------------------
_X = np.arange(12, dtype="float32").reshape(3, 4)


@needs_paddle
@pytest.mark.parametrize("idx_dtype", ["int64", "int32"])
def test_gather_and_index_select_take_negative_indices_as_paddle(idx_dtype: str) -> None:
    paddle = _paddle()
    for axis, idx in ((0, [-1, 0, -3]), (1, [-4, 3, -1, -1])):
        i = np.array(idx, idx_dtype)
        _same(
            fw.gather(fw.to_tensor(_X), fw.to_tensor(i), axis=axis),
            paddle.gather(paddle.to_tensor(_X), paddle.to_tensor(i), axis=axis),
        )
        _same(
            fw.index_select(fw.to_tensor(_X), fw.to_tensor(i), axis=axis),
            paddle.index_select(paddle.to_tensor(_X), paddle.to_tensor(i), axis=axis),
        )
        np.testing.assert_array_equal(
            fw.gather(fw.to_tensor(_X), idx, axis=axis).numpy(), np.take(_X, idx, axis=axis)
        )
    assert fw.to_tensor(_X).gather(fw.to_tensor([-1])).tolist() == [_X[-1].tolist()]


@needs_paddle
def test_gather_gradient_with_negative_indices_as_paddle() -> None:
    paddle = _paddle()
    idx = np.array([-1, 0, -1, 2], "int64")
    grads = []
    for lib in (fw, paddle):
        x = lib.to_tensor(_X, stop_gradient=False)
        (
            lib.gather(x, lib.to_tensor(idx), axis=1)
            * lib.to_tensor(np.arange(12, dtype="float32").reshape(3, 4))
        ).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


@pytest.mark.parametrize("bad", [[-5], [4]])
def test_gather_out_of_range_names_paddles_range(bad: list) -> None:
    for index in (bad, fw.to_tensor(bad)):
        with pytest.raises(IndexError, match=r"\[gather\].*\[-4, 4\)"):
            fw.gather(fw.to_tensor(_X), index, axis=1)


def test_embedding_ids_stay_checked() -> None:
    # Paddle 3.3.1's embedding gives a row of zeros for id -1; Oarlock's raises (no silent row)
    with pytest.raises(OpArgumentError, match=r"out of range"):
        F.embedding(fw.to_tensor([-1]), fw.to_tensor(_X))


@needs_paddle
def test_along_axis_and_nd_ops_take_negative_indices_as_paddle() -> None:
    paddle = _paddle()
    idx = np.array([[-1, 0], [-4, -2], [3, -3]], "int64")
    nd = np.array([[-1, 0], [0, -4], [-3, 3]], "int64")
    for lib_a, lib_b in ((fw, paddle),):
        _same(
            lib_a.take_along_axis(lib_a.to_tensor(_X), lib_a.to_tensor(idx), axis=1),
            lib_b.take_along_axis(lib_b.to_tensor(_X), lib_b.to_tensor(idx), axis=1),
        )
        _same(
            lib_a.put_along_axis(lib_a.to_tensor(_X), lib_a.to_tensor(idx[:, :1]), 99.0, axis=1),
            lib_b.put_along_axis(lib_b.to_tensor(_X), lib_b.to_tensor(idx[:, :1]), 99.0, axis=1),
        )
        _same(
            lib_a.gather_nd(lib_a.to_tensor(_X), lib_a.to_tensor(nd)),
            lib_b.gather_nd(lib_b.to_tensor(_X), lib_b.to_tensor(nd)),
        )
        upd = np.array([1.0, 2.0, 3.0], "float32")
        _same(
            lib_a.scatter_nd_add(lib_a.to_tensor(_X), lib_a.to_tensor(nd), lib_a.to_tensor(upd)),
            lib_b.scatter_nd_add(lib_b.to_tensor(_X), lib_b.to_tensor(nd), lib_b.to_tensor(upd)),
        )
    with pytest.raises(IndexError, match=r"\[take_along_axis\].*\[-4, 4\)"):
        fw.take_along_axis(fw.to_tensor(_X), fw.to_tensor([[-5]]), axis=1)
    with pytest.raises(IndexError, match=r"\[gather_nd\].*\[-3, 3\)"):
        fw.gather_nd(fw.to_tensor(_X), fw.to_tensor([[-4, 0]]))


@needs_paddle
def test_scatter_takes_negative_indices_as_paddle() -> None:
    paddle = _paddle()
    upd = np.array([[9.0, 8.0, 7.0, 6.0], [1.0, 2.0, 3.0, 4.0]], "float32")
    for overwrite in (True, False):
        _same(
            fw.scatter(fw.to_tensor(_X), fw.to_tensor([-1, 0]), fw.to_tensor(upd), overwrite=overwrite),
            paddle.scatter(
                paddle.to_tensor(_X), paddle.to_tensor([-1, 0]), paddle.to_tensor(upd), overwrite=overwrite
            ),
        )
    with pytest.raises(IndexError, match=r"\[scatter\].*\[-3, 3\)"):
        fw.scatter(fw.to_tensor(_X), fw.to_tensor([-4]), fw.to_tensor(upd[:1]))


@needs_paddle
def test_index_fill_and_index_sample_ranges() -> None:
    paddle = _paddle()
    _same(
        fw.index_fill(fw.to_tensor(_X), fw.to_tensor([-1]), 1, 7.0),
        paddle.index_fill(paddle.to_tensor(_X), paddle.to_tensor([-1]), 1, 7.0),
    )
    # an index past the end raised nothing and filled index % n (Paddle 3.3.1 corrupts its heap)
    with pytest.raises(IndexError, match=r"\[index_fill\].*\[-4, 4\)"):
        fw.index_fill(fw.to_tensor(_X), fw.to_tensor([5]), 1, 7.0)
    # index_sample takes no negative index, as Paddle's (which raises)
    with pytest.raises(IndexError, match=r"\[index_sample\].*\[0, 4\)"):
        fw.index_sample(fw.to_tensor(_X), fw.to_tensor([[-1], [0], [1]]))
    i = np.array([[3, 0], [1, 1], [2, 3]], "int64")
    _same(
        fw.index_sample(fw.to_tensor(_X), fw.to_tensor(i)),
        paddle.index_sample(paddle.to_tensor(_X), paddle.to_tensor(i)),
    )


# -- prod, mean, pow of integers ---------------------------------------------------------------
@needs_paddle
def test_prod_of_int32_stays_int32_as_paddle() -> None:
    paddle = _paddle()
    x = np.array([[2, 3, -4], [5, 7, 11]], "int32")
    for kw in ({}, {"axis": 0}, {"axis": 1, "keepdim": True}):
        _same(fw.prod(fw.to_tensor(x), **kw), paddle.prod(paddle.to_tensor(x), **kw))
    _same(fw.to_tensor(x).prod(), paddle.to_tensor(x).prod())
    big = np.array([100000, 100000], "int32")  # past 2**31: wraps, as Paddle's and numpy's int32
    _same(fw.prod(fw.to_tensor(big)), paddle.prod(paddle.to_tensor(big)))
    assert int(fw.prod(fw.to_tensor(big)).item()) == int(np.prod(big, dtype=np.int32))
    _same(fw.prod(fw.to_tensor(x), dtype="int64"), paddle.prod(paddle.to_tensor(x), dtype="int64"))
    assert fw.prod(fw.to_tensor(np.array([2, 3], "int16"))).dtype == fw.int64  # Paddle has no int16 prod


@needs_paddle
def test_mean_of_integers() -> None:
    paddle = _paddle()
    x = np.array([[1, 2, 2], [-1, -2, 4]], "int64")
    # no dtype: the true mean as float32 (Paddle 3.3.1 truncates to int64: a documented difference)
    for axis in (None, 1):
        got = fw.mean(fw.to_tensor(x), axis=axis)
        assert got.dtype == fw.float32
        np.testing.assert_allclose(got.numpy(), np.mean(x, axis=axis), rtol=1e-6)
    assert fw.to_tensor(np.array([True, False])).mean().item() == 0.5
    # an integer dtype asked for: Paddle's truncated integer mean
    for axis in (None, 1):
        _same(
            fw.mean(fw.to_tensor(x), axis=axis, dtype="int64"),
            paddle.mean(paddle.to_tensor(x), axis=axis, dtype="int64"),
        )
    f = np.array([1.7, 1.9, -2.5], "float32")
    _same(fw.mean(fw.to_tensor(f), dtype="int32"), paddle.mean(paddle.to_tensor(f), dtype="int32"))
    _same(fw.mean(fw.to_tensor(x), dtype="float64"), paddle.mean(paddle.to_tensor(x), dtype="float64"))


@needs_paddle
def test_pow_of_integers_by_a_float() -> None:
    paddle = _paddle()
    x = np.array([2, 3, 5], "int64")
    for y in (2.0, 3.0, 0.0):  # a whole-number power keeps the integer dtype (Paddle)
        _same(fw.pow(fw.to_tensor(x), y), paddle.pow(paddle.to_tensor(x), y))
        _same(fw.to_tensor(x).pow(y), paddle.to_tensor(x).pow(y))
        _same(fw.to_tensor(x) ** y, paddle.to_tensor(x) ** y)  # the operator gives float32
    x32 = np.array([2, 3], "int32")
    _same(fw.pow(fw.to_tensor(x32), 3.0), paddle.pow(paddle.to_tensor(x32), 3.0))
    # a fractional power: floats with the true values, as Paddle's ``x ** 0.5`` (Paddle's
    # ``pow(x, 0.5)`` truncates the exponent to 0 and gives [1, 1, 1]: kept out on purpose)
    for y in (0.5, 1.5, -1.0):
        got = fw.pow(fw.to_tensor(x), y)
        assert got.dtype == fw.float32
        np.testing.assert_allclose(got.numpy(), x.astype(np.float64) ** y, rtol=1e-6)
        _same(fw.to_tensor(x) ** y, paddle.to_tensor(x) ** y, tol=1e-6)
    with pytest.raises(OpArgumentError, match=r"\[pow\].*negative"):
        fw.pow(fw.to_tensor(x), -1)


# -- 'same' padding ----------------------------------------------------------------------------
_RNG = np.random.default_rng(40)
_X3 = _RNG.standard_normal((1, 2, 7, 6, 5)).astype("float32")
_W3 = _RNG.standard_normal((3, 2, 3, 2, 3)).astype("float32")
_X2 = _RNG.standard_normal((2, 2, 7, 6)).astype("float32")
_X1 = _RNG.standard_normal((1, 2, 7)).astype("float32")


@needs_paddle
@pytest.mark.parametrize("stride", [1, 2, 3])
@pytest.mark.parametrize("dilation", [1, 2])
def test_conv3d_same_padding_as_paddle(stride: int, dilation: int) -> None:
    paddle = _paddle()
    got, want = (
        lib.nn.functional.conv3d(
            lib.to_tensor(_X3), lib.to_tensor(_W3), stride=stride, dilation=dilation, padding="same"
        )
        for lib in (fw, paddle)
    )
    _same(got, want, tol=1e-4)
    assert list(got.shape[2:]) == [-(-n // stride) for n in _X3.shape[2:]]


@needs_paddle
@pytest.mark.parametrize("stride", [1, 2, 3])
def test_conv_transpose_same_padding_as_paddle(stride: int) -> None:
    paddle = _paddle()
    w2 = _RNG.standard_normal((2, 3, 3, 2)).astype("float32")
    w3 = _RNG.standard_normal((2, 3, 3, 2, 3)).astype("float32")
    cases = [
        ("conv1d_transpose", _X1, w2[:, :, 0], {}),
        ("conv2d_transpose", _X2, w2, {}),
        ("conv2d_transpose", _X2, w2, {"dilation": 2}),
        ("conv3d_transpose", _X3, w3, {}),
    ]
    for fn, x, w, kw in cases:
        got, want = (
            getattr(lib.nn.functional, fn)(
                lib.to_tensor(x), lib.to_tensor(w), stride=stride, padding="same", **kw
            )
            for lib in (fw, paddle)
        )
        _same(got, want, tol=1e-4)


@needs_paddle
@pytest.mark.parametrize("stride", [2, 3])
@pytest.mark.parametrize("k", [2, 3])
def test_pools_same_padding_as_paddle(stride: int, k: int) -> None:
    paddle = _paddle()
    cases = [
        ("max_pool1d", _X1, {}),
        ("avg_pool1d", _X1, {}),
        ("max_pool2d", _X2, {}),
        ("avg_pool2d", _X2, {}),
        ("max_pool3d", _X3, {}),
        ("avg_pool3d", _X3, {}),
    ]
    for fn, x, kw in cases:
        got, want = (
            getattr(lib.nn.functional, fn)(lib.to_tensor(x), k, stride=stride, padding="same", **kw)
            for lib in (fw, paddle)
        )
        _same(got, want, tol=1e-5)
    got, want = (
        lib.nn.functional.lp_pool2d(lib.to_tensor(np.abs(_X2)), 2, k, stride=stride, padding="same")
        for lib in (fw, paddle)
    )
    _same(got, want, tol=1e-5)
    # the layer reaches the same geometry
    _same(
        fw.nn.MaxPool2D(k, stride, padding="same")(fw.to_tensor(_X2)),
        paddle.nn.MaxPool2D(k, stride, padding="same")(paddle.to_tensor(_X2)),
    )


@needs_paddle
def test_same_padding_pool_gradient_as_paddle() -> None:
    paddle = _paddle()
    grads = []
    for lib in (fw, paddle):
        x = lib.to_tensor(_X2, stop_gradient=False)
        y = lib.nn.functional.avg_pool2d(x, 3, stride=2, padding="same")
        (y * y).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)


# -- kept on purpose: argmax/argmin with NaN, topk ties ------------------------------------------
_NANROWS = np.array(
    [
        [1.0, NAN, 3.0, NAN, -1.0],
        [NAN, 2.0, 5.0, 0.0, 1.0],
        [-np.inf, NAN, -np.inf, 0.0, 0.0],
        [0.0, 1.0, 1.0, -2.0, 1.0],
    ],
    "float32",
)


@needs_paddle
def test_argmax_argmin_pick_the_nan_as_max_and_min_report_it() -> None:
    paddle = _paddle()
    x = fw.to_tensor(_NANROWS)
    for arg, red, np_arg in ((fw.argmax, fw.max, np.argmax), (fw.argmin, fw.min, np.argmin)):
        got = arg(x, axis=1)
        np.testing.assert_array_equal(got.numpy(), np_arg(_NANROWS, axis=1))  # numpy's rule: the first NaN
        picked = np.take_along_axis(_NANROWS, got.numpy()[:, None], axis=1)[:, 0]
        np.testing.assert_array_equal(picked, red(x, axis=1).numpy())  # x[argmax] is max, NaN included
        assert arg(x).item() == np_arg(_NANROWS)
    # Paddle's max/min propagate the NaN too; its argmax/argmin skip it (the documented difference)
    assert np.isnan(paddle.max(paddle.to_tensor(_NANROWS), axis=1).numpy()[:3]).all()
    # with no NaN, Paddle's indices (ties: the first)
    clean = np.nan_to_num(_NANROWS, nan=0.5)
    for name in ("argmax", "argmin"):
        for axis in (0, 1, None):
            _same(
                getattr(fw, name)(fw.to_tensor(clean), axis=axis),
                getattr(paddle, name)(paddle.to_tensor(clean), axis=axis),
            )


@needs_paddle
@pytest.mark.parametrize("largest", [True, False])
def test_topk_ties_come_in_index_order(largest: bool) -> None:
    paddle = _paddle()
    x = np.array(
        [[3.0, 1.0, 2.0, 1.0, 1.0, 0.5, 1.0, 3.0], [2.0, 2.0, 0.0, 2.0, 2.0, 2.0, 1.0, 0.0]], "float32"
    )
    vals, idx = fw.topk(fw.to_tensor(x), k=5, largest=largest)
    pvals, _ = paddle.topk(paddle.to_tensor(x), k=5, largest=largest)
    _same(vals, pvals)  # the values are Paddle's; among ties Paddle's index order is its partial sort's
    order = np.argsort(-x if largest else x, axis=1, kind="stable")[:, :5]
    np.testing.assert_array_equal(idx.numpy(), order)


@needs_paddle
def test_bernoulli_fill_in_place_as_paddle() -> None:
    paddle = _paddle()
    for p in (0.0, 1.0, 0.3):
        x, px = fw.randn([50, 40]), paddle.randn([50, 40])
        y, py = x.bernoulli_(p), px.bernoulli_(p)
        assert y is x and x.dtype == fw.float32 and list(x.shape) == list(px.shape)
        assert set(np.unique(x.numpy())) <= {0.0, 1.0}
        if p in (0.0, 1.0):
            _same(x, py)  # no randomness left: Paddle's values
        else:  # Oarlock's own Philox stream: the frequency, not Paddle's draws
            assert abs(float(x.numpy().mean()) - p) < 0.05
    probs = np.array([0.0, 1.0, 0.0, 1.0], "float32")
    _same(
        fw.zeros([3, 4]).bernoulli_(fw.to_tensor(probs)),
        paddle.zeros([3, 4]).bernoulli_(paddle.to_tensor(probs)),
    )
    with pytest.raises(OpArgumentError, match=r"\[bernoulli_\] p must be"):
        fw.zeros([2]).bernoulli_(1.5)
