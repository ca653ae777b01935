"""nn against real Paddle (issue 40): 3-d pools, adaptive max pools with their masks, the
fractional max pools (Paddle's window sequence), the pooling layers' argument order, and their
gradients. Paddle-dependent cases skip without Paddle."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F

from .conftest import assert_close
from .gradcheck import check_grad

HAVE_PADDLE = importlib.util.find_spec("paddle") is not None
needs_paddle = pytest.mark.skipif(not HAVE_PADDLE, reason="real Paddle is not installed (the oracle)")


def _paddle():  # type: ignore[no-untyped-def]
    import paddle

    return paddle


def _same(got, want) -> None:  # type: ignore[no-untyped-def]
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = g.numpy(), w.numpy()
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        assert_close(g, w)


_POOL3D = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": (3, 2, 3), "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 2, "stride": (1, 2, 1), "padding": (1, 0, 1)},
]


@needs_paddle
@pytest.mark.parametrize("kw", _POOL3D, ids=[str(i) for i in range(len(_POOL3D))])
def test_pool3d_matches_paddle(kw: dict, device: str) -> None:
    paddle = _paddle()
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 6, 5)).astype("float32")
    P, T = paddle.to_tensor(x), fw.to_tensor(x, device=device)
    PF = paddle.nn.functional
    _same(F.max_pool3d(T, return_mask=True, **kw), PF.max_pool3d(P, return_mask=True, **kw))
    for extra in ({}, {"exclusive": False}, {"divisor_override": 5}):
        _same(F.avg_pool3d(T, **kw, **extra), PF.avg_pool3d(P, **kw, **extra))
    _same(
        F.max_pool3d(T.transpose([0, 2, 3, 4, 1]), data_format="NDHWC", **kw),
        PF.max_pool3d(P.transpose([0, 2, 3, 4, 1]), data_format="NDHWC", **kw),
    )


@needs_paddle
def test_adaptive_pools_1d_2d_3d_match_paddle(device: str) -> None:
    paddle = _paddle()
    PF = paddle.nn.functional
    rng = np.random.default_rng(1)
    for nd, shape in ((1, (2, 3, 11)), (2, (2, 3, 9, 7)), (3, (2, 3, 7, 6, 5))):
        x = rng.standard_normal(shape).astype("float32")
        P, T = paddle.to_tensor(x), fw.to_tensor(x, device=device)
        for o in (1, 3, 4):
            fn = f"adaptive_max_pool{nd}d"
            _same(getattr(F, fn)(T, o, return_mask=True), getattr(PF, fn)(P, o, return_mask=True))
            if nd == 3:
                _same(F.adaptive_avg_pool3d(T, o), PF.adaptive_avg_pool3d(P, o))
    x = rng.standard_normal((2, 3, 7, 6, 5)).astype("float32")
    P, T = paddle.to_tensor(x), fw.to_tensor(x, device=device)
    _same(F.adaptive_avg_pool3d(T, [2, None, 3]), PF.adaptive_avg_pool3d(P, [2, None, 3]))
    _same(F.adaptive_avg_pool3d(T, 2, data_format="NDHWC"), PF.adaptive_avg_pool3d(P, 2, data_format="NDHWC"))


@needs_paddle
def test_fractional_windows_are_paddles() -> None:
    """Every window Paddle draws for L up to 16, each output size, kernel 0-3 and several u:
    probed with an increasing input (the mask is the window's end - 1) and a decreasing one (its
    start)."""
    paddle = _paddle()
    from framework._src.ops.composites.window_pooling import _fractional_bounds

    PF = paddle.nn.functional
    for size in range(2, 17):
        ramp = np.arange(size, dtype="float32").reshape(1, 1, 1, size)
        for out in range(1, size + 1):
            for k in (0, 1, 2, 3):
                if k and out + k - 1 > size:
                    continue
                for u in (0.1, 0.5, 0.93, 0.999):
                    kk = None if k == 0 else [1, k]
                    _, up = PF.fractional_max_pool2d(paddle.to_tensor(ramp), [1, out], kk, u, True)
                    _, down = PF.fractional_max_pool2d(paddle.to_tensor(-ramp), [1, out], kk, u, True)
                    want = (tuple(down.numpy().ravel().tolist()), tuple((up.numpy().ravel() + 1).tolist()))
                    assert _fractional_bounds(size, out, k, u) == want, (size, out, k, u)


@needs_paddle
@pytest.mark.parametrize("u", [0.2, 0.77])
def test_fractional_max_pool_matches_paddle(u: float, device: str) -> None:
    paddle = _paddle()
    PF = paddle.nn.functional
    rng = np.random.default_rng(2)
    x2 = rng.standard_normal((2, 3, 10, 9)).astype("float32")
    x3 = rng.standard_normal((1, 2, 8, 9, 7)).astype("float32")
    for o, k in ((3, None), (4, 2), ([3, 5], None), (7, None)):
        _same(
            F.fractional_max_pool2d(fw.to_tensor(x2, device=device), o, k, u, True),
            PF.fractional_max_pool2d(paddle.to_tensor(x2), o, k, u, True),
        )
        o3 = o if isinstance(o, int) else o + [4]
        _same(
            F.fractional_max_pool3d(fw.to_tensor(x3, device=device), o3, k, u, True),
            PF.fractional_max_pool3d(paddle.to_tensor(x3), o3, k, u, True),
        )


@needs_paddle
def test_pool_gradients_match_paddle() -> None:
    paddle = _paddle()
    PF = paddle.nn.functional
    x = np.random.default_rng(3).permutation(2 * 2 * 5 * 6 * 4).reshape(2, 2, 5, 6, 4).astype("float32")
    cases = [
        ("max_pool3d", lambda m, t: m.max_pool3d(t, 2, 2, 1)),
        ("avg_pool3d", lambda m, t: m.avg_pool3d(t, 3, 2, 1, ceil_mode=True, exclusive=False)),
        ("adaptive_max_pool3d", lambda m, t: m.adaptive_max_pool3d(t, (2, 4, 3))),
        ("fractional_max_pool3d", lambda m, t: m.fractional_max_pool3d(t, 3, random_u=0.6)),
        ("max_pool1d", lambda m, t: m.max_pool1d(t.reshape([4, 5, -1]), 3, 2, 1, ceil_mode=True)),
    ]
    w = np.random.default_rng(4).standard_normal(1000).astype("float32")
    for name, run in cases:
        p = paddle.to_tensor(x, stop_gradient=False)
        po = run(PF, p)
        (po * paddle.to_tensor(w[: po.size].reshape(po.shape))).sum().backward()
        t = fw.to_tensor(x, stop_gradient=False)
        to = run(F, t)
        (to * fw.to_tensor(w[: to.size].reshape(to.shape))).sum().backward()
        assert_close(t.grad.numpy(), p.grad.numpy()), name


def test_window_max_gradient_matches_finite_differences() -> None:
    x = np.random.default_rng(5).permutation(2 * 5 * 7).reshape(1, 2, 5, 7) * 0.1
    check_grad(lambda t: F.adaptive_max_pool2d(t, (2, 3)), x)
    check_grad(lambda t: F.fractional_max_pool2d(t, 3, kernel_size=2, random_u=0.3), x)


@needs_paddle
def test_pool_layers_take_paddles_arguments(device: str) -> None:
    """The layers' positional order is Paddle's (return_mask before ceil_mode)."""
    paddle = _paddle()
    x = np.random.default_rng(6).standard_normal((1, 2, 7, 7, 6)).astype("float32")
    P, T = paddle.to_tensor(x), fw.to_tensor(x, device=device)
    pairs = [
        ("MaxPool3D", (3, 2, 1, True, True)),
        ("AvgPool3D", (3, 2, 1, True, False)),
        ("AdaptiveAvgPool3D", ((2, 3, 1),)),
        ("AdaptiveMaxPool3D", (2, True)),
        ("FractionalMaxPool3D", (3, 2, 0.4, True)),
    ]
    for name, args in pairs:
        _same(getattr(fw.nn, name)(*args)(T), getattr(paddle.nn, name)(*args)(P))
    _same(fw.nn.MaxPool2D(3, 2, 1, True, True)(T[0]), paddle.nn.MaxPool2D(3, 2, 1, True, True)(P[0]))
    _same(fw.nn.MaxPool1D(3, 2, 1, True, True)(T[0, 0]), paddle.nn.MaxPool1D(3, 2, 1, True, True)(P[0, 0]))
    _same(fw.nn.AdaptiveMaxPool1D(4, True)(T[0, 0]), paddle.nn.AdaptiveMaxPool1D(4, True)(P[0, 0]))


def test_pool_argument_errors_name_the_op() -> None:
    with pytest.raises(Exception, match=r"\[max_pool3d\] x must be 5-d"):
        F.max_pool3d(fw.ones([1, 2, 3, 3]), 2)
    with pytest.raises(Exception, match=r"\[fractional_max_pool2d\] random_u must be a number in \(0, 1\)"):
        F.fractional_max_pool2d(fw.ones([1, 1, 6, 6]), 3, random_u=1.5)
    with pytest.raises(Exception, match=r"\[fractional_max_pool2d\] output_size .* does not fit"):
        F.fractional_max_pool2d(fw.ones([1, 1, 4, 4]), 4, kernel_size=2)
    with pytest.raises(Exception, match=r"\[avg_pool3d\] data_format must be 'NCDHW' or 'NDHWC'"):
        F.avg_pool3d(fw.ones([1, 1, 2, 2, 2]), 2, data_format="NCHW")


# -- convolution, norm and loss --------------------------------------------------------------
@needs_paddle
def test_conv3d_transpose_matches_paddle(device: str) -> None:
    paddle = _paddle()
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 4, 3, 4, 5)).astype("float32")
    w = rng.standard_normal((4, 3, 2, 3, 2)).astype("float32")
    cases = [
        {},
        {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2},
        {"stride": (1, 2, 3), "padding": (1, 0, 1), "dilation": 2, "groups": 2},
        {"stride": 2, "output_size": [7, 10, 11]},
    ]
    for kw in cases:
        b = rng.standard_normal(3 * kw.get("groups", 1)).astype("float32")
        want = paddle.nn.functional.conv3d_transpose(
            paddle.to_tensor(x), paddle.to_tensor(w), paddle.to_tensor(b), **kw
        ).numpy()
        got = F.conv3d_transpose(
            fw.to_tensor(x, device=device),
            fw.to_tensor(w, device=device),
            fw.to_tensor(b, device=device),
            **kw,
        )
        assert_close(got.numpy(), want)
    # the layer: Paddle's positional order (output_padding, dilation, groups) and its weights
    paddle.seed(1)
    p = paddle.nn.Conv3DTranspose(4, 6, 3, 2, 1, 1, 1, 2)
    f = fw.nn.Conv3DTranspose(4, 6, 3, 2, 1, 1, 1, 2)
    f.set_state_dict({k: fw.to_tensor(v.numpy()) for k, v in p.state_dict().items()})
    assert_close(f(fw.to_tensor(x)).numpy(), p(paddle.to_tensor(x)).numpy())


@needs_paddle
def test_layer_reprs_and_convert_sync_batchnorm_match_paddle() -> None:
    paddle = _paddle()

    def build(nn):  # type: ignore[no-untyped-def]
        return nn.Sequential(
            nn.Conv2D(3, 5, 3),
            nn.BatchNorm2D(5),
            nn.Conv2D(3, 5, (3, 2), stride=2, padding=1, dilation=2),
            nn.Conv1D(2, 3, 3),
            nn.Conv3D(2, 3, 3, padding="same"),
            nn.Conv2DTranspose(2, 3, 3, stride=2),
            nn.Conv3DTranspose(2, 4, 3, 2, 1, 1, 1, 2),
            nn.Conv1DTranspose(2, 4, 3, 2, 1, 1, 2),
            nn.BatchNorm1D(3),
            nn.MaxPool2D(2),
            nn.AdaptiveMaxPool2D(3, True),
            nn.AdaptiveAvgPool3D(2),
            nn.AvgPool1D(3, 2, 1),
        )

    assert repr(build(fw.nn)) == repr(build(paddle.nn))
    p = paddle.nn.SyncBatchNorm.convert_sync_batchnorm(build(paddle.nn))
    model = build(fw.nn)
    bn = model[1]
    f = fw.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert repr(f) == repr(p)
    assert f[1].weight is bn.weight and f[1]._mean is bn._mean
    x = np.random.default_rng(8).standard_normal((2, 5, 4, 4)).astype("float32")
    assert_close(f[1](fw.to_tensor(x)).numpy(), bn(fw.to_tensor(x)).numpy())


@needs_paddle
def test_npair_loss_matches_paddle() -> None:
    paddle = _paddle()
    rng = np.random.default_rng(9)
    a, p = (rng.standard_normal((6, 4)).astype("float32") for _ in range(2))
    labels = np.array([0, 1, 0, 2, 1, 0], dtype="float32")
    for reg in (0.002, 0.5):
        pa, pp = paddle.to_tensor(a, stop_gradient=False), paddle.to_tensor(p, stop_gradient=False)
        want = paddle.nn.functional.npair_loss(pa, pp, paddle.to_tensor(labels), l2_reg=reg)
        want.backward()
        fa, fp = fw.to_tensor(a, stop_gradient=False), fw.to_tensor(p, stop_gradient=False)
        got = F.npair_loss(fa, fp, fw.to_tensor(labels), l2_reg=reg)
        got.backward()
        assert got.shape == () and got.dtype == fw.float32
        assert_close(got.numpy(), want.numpy())
        assert_close(fa.grad.numpy(), pa.grad.numpy())
        assert_close(fp.grad.numpy(), pp.grad.numpy())


# -- hapi and metric habits ------------------------------------------------------------------
def _hapi_run(lib, tmp):  # type: ignore[no-untyped-def]
    """accuracy, train_batch/eval_batch on numpy arrays, and fit with ModelCheckpoint and a
    per-step LRScheduler, through ``lib`` (paddle or framework)."""
    import os

    pred = lib.to_tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
    acc = lib.metric.accuracy(pred, lib.to_tensor([[1], [1], [1]], dtype="int64"))
    net = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 3))
    m = lib.Model(net)
    sched = lib.optimizer.lr.StepDecay(learning_rate=0.1, step_size=1)
    m.prepare(lib.optimizer.SGD(learning_rate=sched, parameters=net.parameters()), lib.nn.CrossEntropyLoss())
    rng = np.random.default_rng(10)
    x, y = rng.random((16, 4)).astype("float32"), rng.integers(0, 3, (16, 1)).astype("int64")
    tb, eb = m.train_batch([x[:4]], [y[:4]]), m.eval_batch([x[:4]], [y[:4]])
    ds = lib.io.TensorDataset([lib.to_tensor(x), lib.to_tensor(y)])
    cbs = [
        lib.callbacks.ModelCheckpoint(save_freq=1, save_dir=tmp),
        lib.callbacks.LRScheduler(by_step=True, by_epoch=False),
    ]
    m.fit(ds, epochs=2, batch_size=8, verbose=0, callbacks=cbs)
    return (
        (type(acc).__name__, tuple(acc.shape), float(acc)),
        (tb, eb),
        sorted(os.listdir(tmp)),
        sched.last_lr,
    )


@needs_paddle
def test_hapi_and_metric_habits_match_paddle(tmp_path) -> None:  # type: ignore[no-untyped-def]
    paddle = _paddle()
    (tmp_path / "p").mkdir()
    (tmp_path / "f").mkdir()
    pa, (ptb, peb), pfiles, plr = _hapi_run(paddle, str(tmp_path / "p"))
    fa, (ftb, feb), ffiles, flr = _hapi_run(fw, str(tmp_path / "f"))
    assert fa[:2] == pa[:2] and abs(fa[2] - pa[2]) < 1e-7  # a 0-d Tensor, 2/3
    for got, want in ((ftb, ptb), (feb, peb)):  # [loss]: a 0-d float32 array, as Paddle's
        assert type(got) is type(want) and len(got) == len(want) == 1
        assert (
            isinstance(got[0], np.ndarray) and got[0].dtype == want[0].dtype and got[0].shape == want[0].shape
        )
    assert ffiles == pfiles  # 0, 1 and final, each .pdparams and .pdopt
    assert abs(flr - plr) < 1e-12  # stepped once per batch: 0.1 * 0.1 ** 4


@needs_paddle
@pytest.mark.parametrize("dim,iters", [(0, 1), (1, 2)])
def test_spectral_norm_matches_paddle(dim: int, iters: int) -> None:
    paddle = _paddle()
    shape = [4, 3, 2, 5]
    p = paddle.nn.SpectralNorm(shape, dim=dim, power_iters=iters)
    f = fw.nn.SpectralNorm(shape, dim=dim, power_iters=iters)
    assert sorted(f.state_dict()) == sorted(p.state_dict()) == ["weight_u", "weight_v"]
    f.set_state_dict({k: fw.to_tensor(v.numpy()) for k, v in p.state_dict().items()})
    w = np.random.default_rng(11).standard_normal(shape).astype("float32")
    pw, fw_ = paddle.to_tensor(w, stop_gradient=False), fw.to_tensor(w, stop_gradient=False)
    g = np.random.default_rng(12).standard_normal(shape).astype("float32")
    po, fo = p(pw), f(fw_)
    (fo * fw.to_tensor(g)).sum().backward()
    assert_close(fo.numpy(), po.numpy())
    assert_close(f.weight_u.numpy(), p.weight_u.numpy())  # not updated by a call, as Paddle
    # the gradient holds u and v constant (as PyTorch's spectral_norm): G / s - sum(G * W) / s^2 u v^T
    mat = np.moveaxis(w, dim, 0).reshape(shape[dim], -1)
    u, v = p.weight_u.numpy(), p.weight_v.numpy()
    for _ in range(iters):
        v = mat.T @ u
        v = v / (np.linalg.norm(v) + 1e-12)
        u = mat @ v
        u = u / (np.linalg.norm(u) + 1e-12)
    s = u @ mat @ v
    gm = np.moveaxis(g, dim, 0).reshape(shape[dim], -1)
    want = gm / s - (gm * mat).sum() / s**2 * np.outer(u, v)
    got = np.moveaxis(fw_.grad.numpy(), dim, 0).reshape(shape[dim], -1)
    assert_close(got, want.astype("float32"), rtol=1e-4, atol=1e-5)


# -- sequence losses and the adaptive softmax (rnnt_loss, edit_distance, adaptive_log_softmax) ------


@needs_paddle
@pytest.mark.parametrize("fastemit", [0.0, 0.5])
def test_rnnt_loss_and_its_gradient_match_paddle(fastemit: float) -> None:
    paddle = _paddle()
    rng = np.random.default_rng(5)
    x = np.log(rng.dirichlet(np.ones(5), size=(2, 4, 3))).astype("float64")  # (B, T, U+1, V) log-probs
    lab, il, ll = [[1, 3], [2, 0]], [4, 3], [2, 1]
    i32 = lambda lib, v: lib.to_tensor(v, dtype="int32")  # noqa: E731
    for reduction in ("none", "mean"):
        P = paddle.to_tensor(x, stop_gradient=False)
        want = paddle.nn.functional.rnnt_loss(
            P, i32(paddle, lab), i32(paddle, il), i32(paddle, ll), 0, fastemit, reduction
        )
        T = fw.to_tensor(x, stop_gradient=False)
        got = F.rnnt_loss(T, i32(fw, lab), i32(fw, il), i32(fw, ll), 0, fastemit, reduction)
        _same(got, want)
        want.sum().backward()
        got.sum().backward()
        np.testing.assert_allclose(T.grad.numpy(), P.grad.numpy(), rtol=1e-9, atol=1e-12)


@needs_paddle
def test_edit_distance_matches_paddle() -> None:
    paddle = _paddle()
    rng = np.random.default_rng(6)
    a, b = rng.integers(0, 4, (5, 6)), rng.integers(0, 4, (5, 4))
    la, lb = rng.integers(1, 7, 5), rng.integers(1, 5, 5)
    for kw in ({"normalized": False}, {"normalized": True}):
        _same(
            F.edit_distance(
                fw.to_tensor(a),
                fw.to_tensor(b),
                input_length=fw.to_tensor(la),
                label_length=fw.to_tensor(lb),
                **kw,
            ),
            paddle.nn.functional.loss.edit_distance(
                paddle.to_tensor(a),
                paddle.to_tensor(b),
                input_length=paddle.to_tensor(la),
                label_length=paddle.to_tensor(lb),
                **kw,
            ),
        )


@needs_paddle
def test_adaptive_log_softmax_layer_matches_paddle_with_its_weights() -> None:
    paddle = _paddle()
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 8)).astype("float32")
    y = np.array([0, 1, 2, 4, 7, 9])
    ref = paddle.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[2, 5], div_value=2.0, head_bias=True)
    ours = fw.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[2, 5], div_value=2.0, head_bias=True)
    ours.head_weight.set_value(ref.head_weight.numpy())
    ours.head_bias.set_value(ref.head_bias.numpy())
    for mine, theirs in zip(ours.tail_weights, ref.tail_weights):
        for m, t in zip(mine, theirs):
            m.set_value(t.numpy())
    P, T = paddle.to_tensor(x), fw.to_tensor(x)
    _same(ours(T, fw.to_tensor(y)), ref(P, paddle.to_tensor(y)))
    _same(ours.log_prob(T), ref.log_prob(P))
    _same(ours.predict(T), ref.predict(P))
    tails = [
        [rng.standard_normal(s) for s in ((8, 4), (4, 3))],
        [rng.standard_normal(s) for s in ((8, 2), (2, 5))],
    ]
    x64 = fw.to_tensor(x.astype("float64"))
    check_grad(
        lambda h, t: F.adaptive_log_softmax_with_loss(
            x64,
            fw.to_tensor(y),
            h,
            [[fw.to_tensor(tails[0][0]), t], [fw.to_tensor(w) for w in tails[1]]],
            [2, 5, 10],
        )[0],
        rng.standard_normal((8, 4)),
        tails[0][1],
    )


def test_class_center_sample_keeps_the_positives_and_fills_up_to_num_samples() -> None:
    label = fw.to_tensor([7, 2, 7, 9])
    remapped, sampled = F.class_center_sample(label, 12, 3)  # 3 positives: no negatives drawn
    assert sampled.tolist() == [2, 7, 9] and remapped.tolist() == [1, 0, 1, 2]
    fw.seed(1)
    remapped, sampled = F.class_center_sample(label, 12, 6)
    s = sampled.numpy()
    assert len(s) == 6 and {2, 7, 9} <= set(s.tolist()) and (np.diff(s) > 0).all()
    np.testing.assert_array_equal(s[remapped.numpy()], label.numpy())
    with pytest.raises(fw.OarlockError, match="class_center_sample"):
        F.class_center_sample(label, 8, 3)
