"""The rest of Paddle's ``nn.functional`` (issue 17): activations, conv1d/conv3d and the
transposed convolutions, 1-d and adaptive pools, unfold/fold, pixel shuffle, interpolate,
affine_grid/grid_sample, batch/instance/group/local-response norm and the remaining losses;
values against numpy references written here, gradients by finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from tests.conftest import assert_close
from tests.gradcheck import check_grad

RNG = np.random.default_rng(7)


def _a(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape)


def _t(a, device=None):
    return fw.to_tensor(a, device=device)


def _sig(a):
    return 1 / (1 + np.exp(-a))


def _softplus(a):
    return np.log1p(np.exp(-np.abs(a))) + np.maximum(a, 0)


# -- numpy references for convolution --------------------------------------------------------
def conv_ref(x, w, stride, pad, dil, groups):
    """Direct N-d cross-correlation; x (N, C, *S), w (O, C/g, *K), pad [(before, after)]."""
    nd = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + list(pad))
    n, c = x.shape[:2]
    o_ch, k = w.shape[0], w.shape[2:]
    out = [(x.shape[2 + i] - dil[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    y = np.zeros((n, o_ch, *out))
    og, cg = o_ch // groups, c // groups
    for o in range(o_ch):
        g = o // og
        for pos in np.ndindex(*out):
            for off in np.ndindex(*k):
                idx = tuple(pos[i] * stride[i] + off[i] * dil[i] for i in range(nd))
                y[(slice(None), o) + pos] += (
                    x[(slice(None), slice(g * cg, (g + 1) * cg)) + idx] * w[(o, slice(None)) + off]
                ).sum(-1)
    return y


def convt_ref(x, w, stride, pad, outpad, dil, groups):
    """Transposed convolution by scattering each input pixel; w (C_in, C_out/g, *K)."""
    nd = x.ndim - 2
    n, cin = x.shape[:2]
    cog, k = w.shape[1], w.shape[2:]
    full = [(x.shape[2 + i] - 1) * stride[i] + dil[i] * (k[i] - 1) + 1 + outpad[i] for i in range(nd)]
    y = np.zeros((n, cog * groups, *full))
    cig = cin // groups
    for ci in range(cin):
        g = ci // cig
        for pos in np.ndindex(*x.shape[2:]):
            for off in np.ndindex(*k):
                idx = tuple(pos[i] * stride[i] + off[i] * dil[i] for i in range(nd))
                y[(slice(None), slice(g * cog, (g + 1) * cog)) + idx] += (
                    x[(slice(None), ci) + pos][:, None] * w[(ci, slice(None)) + off]
                )
    return y[(slice(None), slice(None)) + tuple(slice(pad[i][0], full[i] - pad[i][1]) for i in range(nd))]


# -- activations ----------------------------------------------------------------------------
ACTS = {
    "elu": (lambda x: F.elu(x, 0.7), lambda a: np.where(a > 0, a, 0.7 * np.expm1(a))),
    "selu": (F.selu, lambda a: 1.0507009873554805 * np.where(a > 0, a, 1.6732632423543772 * np.expm1(a))),
    "celu": (lambda x: F.celu(x, 1.5), lambda a: np.maximum(a, 0) + np.minimum(0, 1.5 * np.expm1(a / 1.5))),
    "hardswish": (F.hardswish, lambda a: a * np.clip(a + 3, 0, 6) / 6),
    "hardsigmoid": (F.hardsigmoid, lambda a: np.clip(a * 0.1666667 + 0.5, 0, 1)),
    "mish": (F.mish, lambda a: a * np.tanh(_softplus(a))),
    "softsign": (F.softsign, lambda a: a / (1 + np.abs(a))),
    "tanhshrink": (F.tanhshrink, lambda a: a - np.tanh(a)),
    "hardshrink": (lambda x: F.hardshrink(x, 0.6), lambda a: np.where(np.abs(a) > 0.6, a, 0)),
    "softshrink": (
        lambda x: F.softshrink(x, 0.6),
        lambda a: np.where(a > 0.6, a - 0.6, np.where(a < -0.6, a + 0.6, 0)),
    ),
    "thresholded_relu": (lambda x: F.thresholded_relu(x, 0.5), lambda a: np.where(a > 0.5, a, 0)),
    "log_sigmoid": (F.log_sigmoid, lambda a: -_softplus(-a)),
    "glu": (F.glu, lambda a: a[:, :3] * _sig(a[:, 3:])),
}


@pytest.mark.parametrize("name", sorted(ACTS))
def test_activation_values_and_gradients(name, device):
    f, ref = ACTS[name]
    a = _a(4, 6) * 2
    a[np.abs(np.abs(a) - 0.6) < 0.05] += 0.2  # keep away from the kinks for the finite differences
    a[np.abs(a - 0.5) < 0.05] += 0.2
    assert_close(f(_t(a, device)), ref(a))
    if device == "cpu":
        check_grad(f, a)


def test_selu_extremes_and_elu_large_input():
    big = np.array([-800.0, -50.0, 0.0, 50.0, 800.0])
    y = F.elu(_t(big)).numpy()
    assert np.isfinite(y).all() and y[-1] == 800.0 and y[0] == -1.0
    assert np.isfinite(F.mish(_t(big)).numpy()).all()
    assert np.isfinite(F.log_sigmoid(_t(big)).numpy()).all()


def test_prelu_per_channel_and_shared():
    a = _a(2, 3, 4)
    w = np.array([0.1, 0.2, 0.3])
    assert_close(F.prelu(_t(a), _t(w)), np.where(a > 0, a, a * w[None, :, None]))
    assert_close(F.prelu(_t(a), _t(np.array([0.25]))), np.where(a > 0, a, 0.25 * a))
    check_grad(lambda x, ww: F.prelu(x, ww), a, w)
    with pytest.raises(fw.OpArgumentError, match=r"\[prelu\].*channels"):
        F.prelu(_t(a), _t(np.ones(5)))


def test_gumbel_softmax_rows_sum_to_one_and_hard_is_one_hot():
    fw.seed(3)
    x = _t(_a(5, 4))
    y = F.gumbel_softmax(x, temperature=0.5)
    assert_close(y.sum(-1), np.ones(5))
    h = F.gumbel_softmax(x, hard=True).numpy()
    assert ((h == 0) | (h == 1)).all() and (h.sum(-1) == 1).all()
    xs = _t(_a(5, 4), device=None)
    xs.stop_gradient = False
    (g,) = fw.grad([F.gumbel_softmax(xs, hard=True).sum()], [xs])
    assert np.abs(g.numpy()).max() < 1e-6  # straight-through: d(sum of a softmax)/dx = 0


# -- convolution ----------------------------------------------------------------------------
def test_conv1d_matches_numpy(device):
    x, w, b = _a(2, 4, 9), _a(6, 2, 3), _a(6)
    y = F.conv1d(_t(x, device), _t(w, device), _t(b, device), stride=2, padding=1, dilation=2, groups=2)
    assert_close(y, conv_ref(x, w, (2,), [(1, 1)], (2,), 2) + b[None, :, None])
    yl = F.conv1d(
        _t(x.transpose(0, 2, 1), device), _t(w, device), padding="same", groups=2, data_format="NLC"
    )
    assert_close(yl, conv_ref(x, w, (1,), [(1, 1)], (1,), 2).transpose(0, 2, 1))


def test_conv3d_matches_numpy_and_gradients(device):
    x, w = _a(2, 4, 4, 5, 3), _a(6, 2, 2, 3, 2)
    y = F.conv3d(_t(x, device), _t(w, device), stride=(1, 2, 1), padding=1, dilation=(1, 1, 2), groups=2)
    assert_close(y, conv_ref(x, w, (1, 2, 1), [(1, 1)] * 3, (1, 1, 2), 2))
    if device == "cpu":
        check_grad(
            lambda a, b: F.conv3d(a, b, stride=(2, 1, 1), padding=(0, 1, 0)),
            _a(1, 2, 3, 3, 2),
            _a(2, 2, 2, 2, 2),
        )
    with pytest.raises(fw.OpArgumentError, match=r"\[conv3d\].*weight"):
        F.conv3d(_t(x), _t(_a(6, 3, 2, 2, 2)), groups=2)


def test_conv2d_transpose_matches_numpy(device):
    x, w, b = _a(2, 4, 5, 6), _a(4, 3, 3, 2), _a(6)
    y = F.conv2d_transpose(
        _t(x, device),
        _t(w, device),
        _t(b, device),
        stride=(2, 3),
        padding=(1, 0),
        output_padding=(1, 0),
        dilation=(1, 2),
        groups=2,
    )
    assert_close(y, convt_ref(x, w, (2, 3), [(1, 1), (0, 0)], (1, 0), (1, 2), 2) + b[None, :, None, None])
    y2 = F.conv2d_transpose(
        _t(x, device), _t(w[:, :, :, :1], device), stride=2, output_size=(12, 12), groups=2
    )
    assert y2.shape == (2, 6, 12, 12)


def test_conv2d_transpose_is_the_adjoint_of_conv2d():
    """<conv2d(x, w), y> == <x, conv2d_transpose(y, w)>: the defining property."""
    x, w = _a(2, 3, 7, 6), _a(4, 3, 3, 2)
    y = _a(2, 4, 4, 4)
    fwd = F.conv2d(_t(x), _t(w), stride=2, padding=1).numpy()
    back = F.conv2d_transpose(_t(y), _t(w), stride=2, padding=1, output_size=(7, 6)).numpy()
    np.testing.assert_allclose((fwd * y).sum(), (x * back).sum(), rtol=1e-10)


def test_conv_transpose_gradients():
    check_grad(
        lambda a, b: F.conv2d_transpose(a, b, stride=2, padding=1, output_padding=1),
        _a(1, 2, 3, 2),
        _a(2, 2, 3, 3),
    )
    check_grad(lambda a, b: F.conv1d_transpose(a, b, stride=2, padding=1), _a(1, 2, 4), _a(2, 3, 3))


def test_conv1d_transpose_matches_numpy(device):
    x, w = _a(2, 3, 6), _a(3, 2, 3)
    y = F.conv1d_transpose(_t(x, device), _t(w, device), stride=2, padding=1, output_padding=1)
    assert_close(y, convt_ref(x, w, (2,), [(1, 1)], (1,), (1,), 1))


# -- pooling --------------------------------------------------------------------------------
def test_pool1d_and_adaptive_pools(device):
    a = _a(2, 3, 9)
    x = _t(a, device)
    pad = np.pad(a, [(0, 0), (0, 0), (1, 1)], constant_values=-np.inf)
    want = np.stack([pad[..., i * 2 : i * 2 + 3].max(-1) for i in range(5)], -1)
    assert_close(F.max_pool1d(x, 3, 2, 1), want)
    zp = np.pad(a, [(0, 0), (0, 0), (1, 1)])
    cnt = np.pad(np.ones(9), (1, 1))
    avg = np.stack([zp[..., i * 2 : i * 2 + 3].sum(-1) / cnt[i * 2 : i * 2 + 3].sum() for i in range(5)], -1)
    assert_close(F.avg_pool1d(x, 3, 2, 1), avg)
    assert_close(
        F.avg_pool1d(x, 3, 2, 1, exclusive=False),
        np.stack([zp[..., i * 2 : i * 2 + 3].mean(-1) for i in range(5)], -1),
    )
    bounds = [(0, 3), (2, 5), (4, 7), (6, 9)]
    assert_close(F.adaptive_avg_pool1d(x, 4), np.stack([a[..., lo:hi].mean(-1) for lo, hi in bounds], -1))
    b = _a(2, 3, 5, 6)
    m = F.adaptive_max_pool2d(_t(b, device), (2, 3))
    rows, cols = [(0, 3), (2, 5)], [(0, 2), (2, 4), (4, 6)]
    assert_close(
        m,
        np.array(
            [
                [[[b[n, c, r0:r1, c0:c1].max() for c0, c1 in cols] for r0, r1 in rows] for c in range(3)]
                for n in range(2)
            ]
        ),
    )
    check_grad(lambda t: F.adaptive_max_pool2d(t, 2), _a(1, 2, 4, 5))


# -- unfold / fold / pixel shuffle ------------------------------------------------------------
def test_unfold_matches_numpy_and_fold_inverts_it(device):
    a = _a(2, 3, 5, 6)
    u = F.unfold(_t(a, device), [2, 3], strides=[1, 2], paddings=1)
    ap = np.pad(a, [(0, 0), (0, 0), (1, 1), (1, 1)])
    oh, ow = 6, 3
    want = np.zeros((2, 3 * 6, oh * ow))
    for c in range(3):
        for i in range(2):
            for j in range(3):
                want[:, c * 6 + i * 3 + j] = ap[:, c, i : i + oh, j : j + 2 * ow : 2].reshape(2, -1)
    assert_close(u, want)
    # fold scatters the columns back: fold(unfold(x)) == x * (how many blocks cover each pixel)
    f = F.fold(u, [5, 6], [2, 3], strides=[1, 2], paddings=1)
    cover = F.fold(
        F.unfold(fw.ones([1, 1, 5, 6], dtype="float64", device=device), [2, 3], strides=[1, 2], paddings=1),
        [5, 6],
        [2, 3],
        strides=[1, 2],
        paddings=1,
    )
    assert_close(f, a * cover.numpy())
    check_grad(lambda t: F.fold(t, [4, 4], 2, strides=2), _a(1, 8, 4))
    with pytest.raises(fw.OpArgumentError, match=r"\[fold\]"):
        F.fold(_t(_a(1, 7, 4)), [4, 4], 2, strides=2)


def test_pixel_shuffle_round_trip():
    a = _a(2, 8, 3, 4)
    y = F.pixel_shuffle(_t(a), 2)
    want = a.reshape(2, 2, 2, 2, 3, 4).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 8)
    assert_close(y, want)
    assert_close(F.pixel_unshuffle(y, 2), a)


# -- interpolate ----------------------------------------------------------------------------
def _bilinear_ref(a, oh, ow, align_corners):
    n, c, h, w = a.shape

    def src(o, i):
        r = np.arange(o, dtype=float)
        if align_corners:
            return r * (i - 1) / (o - 1)
        return np.maximum((r + 0.5) * i / o - 0.5, 0)

    ys, xs = src(oh, h), src(ow, w)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy, wx = (ys - y0)[:, None], (xs - x0)[None, :]
    g = lambda yy, xx: a[:, :, yy][:, :, :, xx]  # noqa: E731
    return (
        g(y0, x0) * (1 - wy) * (1 - wx)
        + g(y0, x1) * (1 - wy) * wx
        + g(y1, x0) * wy * (1 - wx)
        + g(y1, x1) * wy * wx
    )


def test_interpolate_modes(device):
    a = _a(2, 3, 4, 5)
    x = _t(a, device)
    assert_close(F.interpolate(x, scale_factor=2, mode="nearest"), a.repeat(2, 2).repeat(2, 3))
    assert_close(F.interpolate(x, size=[7, 9], mode="bilinear"), _bilinear_ref(a, 7, 9, False))
    assert_close(
        F.interpolate(x, size=[7, 9], mode="bilinear", align_corners=True), _bilinear_ref(a, 7, 9, True)
    )
    assert_close(
        F.upsample(x, size=[2, 5], mode="area"), np.stack([a[:, :, :2].mean(2), a[:, :, 2:].mean(2)], 2)
    )
    one = _a(2, 3, 6)
    lin = F.interpolate(_t(one, device), size=11, mode="linear", align_corners=True).numpy()
    assert_close(
        lin, np.stack([np.stack([np.interp(np.linspace(0, 5, 11), np.arange(6), r) for r in s]) for s in one])
    )
    cub = F.interpolate(x, size=[4, 5], mode="bicubic", align_corners=True)
    assert_close(cub, a)  # cubic convolution interpolates: same size with aligned corners is the identity
    tri = F.interpolate(_t(_a(1, 2, 2, 3, 4), device), scale_factor=2, mode="trilinear")
    assert tri.shape == (1, 2, 4, 6, 8)
    nhwc = F.interpolate(
        _t(a.transpose(0, 2, 3, 1), device), size=[7, 9], mode="bilinear", data_format="NHWC"
    )
    assert_close(nhwc, _bilinear_ref(a, 7, 9, False).transpose(0, 2, 3, 1))
    check_grad(lambda t: F.interpolate(t, size=[3, 4], mode="bilinear"), _a(1, 1, 2, 3))
    with pytest.raises(fw.OpArgumentError, match=r"\[interpolate\].*bilinear"):
        F.interpolate(_t(one), size=4, mode="bilinear")
    with pytest.raises(fw.OpArgumentError, match=r"\[interpolate\] pass exactly one"):
        F.interpolate(x)


def test_affine_grid_identity_and_grid_sample(device):
    theta = np.tile(np.array([[1.0, 0, 0], [0, 1.0, 0]]), (2, 1, 1))
    a = _a(2, 3, 4, 5)
    grid = F.affine_grid(_t(theta, device), [2, 3, 4, 5], align_corners=True)
    assert grid.shape == (2, 4, 5, 2)
    assert_close(F.grid_sample(_t(a, device), grid, align_corners=True), a)  # identity warp
    flip = np.tile(np.array([[-1.0, 0, 0], [0, 1.0, 0]]), (2, 1, 1))
    g2 = F.affine_grid(_t(flip, device), [2, 3, 4, 5], align_corners=True)
    assert_close(F.grid_sample(_t(a, device), g2, mode="nearest", align_corners=True), a[..., ::-1])
    # a half-pixel shift is the mean of neighbours; outside the image reads zeros
    shift = np.array(
        [[[[-1.0 + 1.0 / 4, -1.0], [5.0, 0.0]]]]
    )  # (1, 1, 2, 2): x between col 0 and 1, then far out
    s = F.grid_sample(_t(a[:1], device), _t(shift, device), align_corners=True).numpy()
    assert_close(s[0, :, 0, 0], (a[0, :, 0, 0] + a[0, :, 0, 1]) / 2)
    assert_close(s[0, :, 0, 1], np.zeros(3))
    check_grad(
        lambda img, g: F.grid_sample(img, g, align_corners=False),
        _a(1, 2, 3, 4),
        _a(1, 2, 2, 2, lo=-0.8, hi=0.8),
    )


# -- normalisation --------------------------------------------------------------------------
def test_batch_norm_training_updates_running_stats_and_eval_uses_them(device):
    a = _a(4, 3, 2, 5)
    rm, rv = fw.zeros([3], dtype="float64", device=device), fw.ones([3], dtype="float64", device=device)
    w, b = _a(3), _a(3)
    y = F.batch_norm(_t(a, device), rm, rv, _t(w, device), _t(b, device), training=True, momentum=0.8)
    mu, var = a.mean((0, 2, 3)), a.var((0, 2, 3))
    want = (a - mu[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5) * w[
        None, :, None, None
    ] + b[None, :, None, None]
    assert_close(y, want)
    assert_close(rm, 0.2 * mu)
    assert_close(rv, 0.8 + 0.2 * var)
    e = F.batch_norm(_t(a, device), rm, rv, training=False)
    assert_close(
        e, (a - 0.2 * mu[None, :, None, None]) / np.sqrt(0.8 + 0.2 * var[None, :, None, None] + 1e-5)
    )
    nlc = F.batch_norm(_t(a[:, :, 0].transpose(0, 2, 1), device), rm, rv, data_format="NLC")
    assert nlc.shape == (4, 5, 3)


def test_batch_norm_gradient_through_the_statistics():
    rm, rv = fw.zeros([2], dtype="float64"), fw.ones([2], dtype="float64")
    check_grad(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=True), _a(3, 2, 4), _a(2), _a(2))


def test_instance_and_group_norm(device):
    a = _a(2, 4, 3, 5)
    mu, var = a.mean((2, 3), keepdims=True), a.var((2, 3), keepdims=True)
    w, b = _a(4), _a(4)
    y = F.instance_norm(_t(a, device), weight=_t(w, device), bias=_t(b, device))
    assert_close(y, (a - mu) / np.sqrt(var + 1e-5) * w[None, :, None, None] + b[None, :, None, None])
    g = a.reshape(2, 2, -1)
    gn = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(a.shape)
    assert_close(
        F.group_norm(_t(a, device), 2, weight=_t(w, device), bias=_t(b, device)),
        gn * w[None, :, None, None] + b[None, :, None, None],
    )
    assert_close(
        F.group_norm(_t(a.transpose(0, 2, 3, 1), device), 2, data_format="NHWC"), gn.transpose(0, 2, 3, 1)
    )
    check_grad(lambda x, ww: F.group_norm(x, 2, weight=ww), _a(2, 4, 3), _a(4))
    check_grad(lambda x: F.instance_norm(x), _a(2, 2, 4))
    with pytest.raises(fw.OpArgumentError, match=r"\[group_norm\] num_groups=3"):
        F.group_norm(_t(a), 3)


def test_local_response_norm_normalize_cosine_label_smooth(device):
    a = _a(2, 5, 3, 2)
    sq = np.pad(a * a, [(0, 0), (1, 1), (0, 0), (0, 0)])
    div = np.stack([sq[:, c : c + 3].sum(1) for c in range(5)], 1)
    assert_close(
        F.local_response_norm(_t(a, device), 3, alpha=0.1, beta=0.75, k=2.0),
        a / (2.0 + 0.1 / 3 * div) ** 0.75,
    )
    check_grad(lambda x: F.local_response_norm(x, 2, alpha=0.5), _a(1, 3, 2))
    x = _a(3, 4)
    assert_close(F.normalize(_t(x, device)), x / np.linalg.norm(x, axis=1, keepdims=True))
    assert_close(F.normalize(_t(x, device), p=1, axis=0), x / np.abs(x).sum(0, keepdims=True))
    y = _a(3, 4)
    assert_close(
        F.cosine_similarity(_t(x, device), _t(y, device)),
        (x * y).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1),
    )
    check_grad(lambda p, q: F.cosine_similarity(p, q, axis=-1), x, y)
    oh = np.eye(4)[[0, 2, 3]]
    assert_close(F.label_smooth(_t(oh, device), epsilon=0.2), oh * 0.8 + 0.05)


def test_dropout2d_and_alpha_dropout():
    fw.seed(1)
    a = _a(8, 16, 3, 3) + 5.0
    y = F.dropout2d(_t(a), 0.5).numpy()
    zero = (y == 0).all(axis=(2, 3))
    kept = ~zero
    assert zero.any() and kept.any()
    np.testing.assert_allclose(y[kept], (a * 2)[kept])
    assert_close(F.dropout2d(_t(a), 0.5, training=False), a)
    big = np.random.default_rng(0).standard_normal((200, 200))
    z = F.alpha_dropout(_t(big), 0.2).numpy()
    assert abs(z.mean()) < 0.05 and abs(z.std() - 1) < 0.05  # SELU's moments kept
    assert_close(F.alpha_dropout(_t(big), 0.2, training=False), big)


# -- losses ---------------------------------------------------------------------------------
def test_losses_against_numpy(device):
    p, y = _a(4, 3, lo=0.05, hi=0.95), _a(4, 3, lo=0, hi=1)
    t = lambda a: _t(a, device)  # noqa: E731
    assert_close(F.binary_cross_entropy(t(p), t(y)), -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean())
    assert np.isfinite(F.binary_cross_entropy(t(np.array([0.0, 1.0])), t(np.array([1.0, 0.0]))).numpy())
    x, z = _a(4, 3) * 2, _a(4, 3) * 2
    d = x - z
    assert_close(
        F.smooth_l1_loss(t(x), t(z), delta=0.5),
        np.where(np.abs(d) < 0.5, 0.5 * d * d, 0.5 * (np.abs(d) - 0.25)).mean(),
    )
    logq = np.log(p / p.sum(1, keepdims=True))
    tgt = y / y.sum(1, keepdims=True)
    assert_close(F.kl_div(t(logq), t(tgt), reduction="sum"), (tgt * (np.log(tgt) - logq)).sum())
    assert_close(F.kl_div(t(logq), t(tgt), reduction="batchmean"), (tgt * (np.log(tgt) - logq)).sum() / 4)
    lab = np.array([1.0, -1.0, 1.0, -1.0])
    assert_close(
        F.margin_ranking_loss(t(x[:, 0]), t(z[:, 0]), t(lab), margin=0.1),
        np.maximum(0, -lab * (x[:, 0] - z[:, 0]) + 0.1).mean(),
    )
    assert_close(
        F.hinge_embedding_loss(t(x[:, 0]), t(lab)),
        np.where(lab == 1, x[:, 0], np.maximum(0, 1 - x[:, 0])).mean(),
    )
    cos = (x * z).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(z, axis=1)
    assert_close(
        F.cosine_embedding_loss(t(x), t(z), t(lab), margin=0.1),
        np.where(lab == 1, 1 - cos, np.maximum(0, cos - 0.1)).mean(),
    )
    assert_close(F.square_error_cost(t(x), t(z)), d * d)
    a, pos, neg = _a(4, 5), _a(4, 5), _a(4, 5)
    dist = lambda u, v: np.linalg.norm(u - v + 1e-6, axis=-1)  # noqa: E731
    assert_close(
        F.triplet_margin_loss(t(a), t(pos), t(neg)), np.maximum(dist(a, pos) - dist(a, neg) + 1, 0).mean()
    )
    assert_close(
        F.triplet_margin_loss(t(a), t(pos), t(neg), swap=True, reduction="sum"),
        np.maximum(dist(a, pos) - np.minimum(dist(a, neg), dist(pos, neg)) + 1, 0).sum(),
    )
    yb = (y > 0.5).astype(float)
    pr = _sig(x)
    pt = pr * yb + (1 - pr) * (1 - yb)
    ce = -(yb * np.log(pr) + (1 - yb) * np.log(1 - pr))
    assert_close(
        F.sigmoid_focal_loss(t(x), t(yb)), (ce * (1 - pt) ** 2 * (0.25 * yb + 0.75 * (1 - yb))).sum()
    )
    lg, ids = _a(4, 3), np.array([[0], [2], [1], [2]])
    ls = lg - np.log(np.exp(lg).sum(1, keepdims=True))
    out = F.softmax_with_cross_entropy(t(lg), fw.to_tensor(ids, device=device))
    assert out.shape == (4, 1)
    assert_close(out, -ls[np.arange(4), ids[:, 0]][:, None])


def test_loss_gradients():
    p, y = _a(3, 2, lo=0.1, hi=0.9), _a(3, 2, lo=0, hi=1)
    check_grad(lambda a: F.binary_cross_entropy(a, fw.to_tensor(y)), p)
    check_grad(lambda a, b: F.smooth_l1_loss(a, b), _a(3, 2) * 3, _a(3, 2))
    check_grad(lambda a: F.sigmoid_focal_loss(a, fw.to_tensor((y > 0.5).astype(float))), _a(3, 2))
    check_grad(lambda a, b, c: F.triplet_margin_loss(a, b, c, margin=3.0), _a(2, 3), _a(2, 3), _a(2, 3))


def _ctc_ref(logits, labels, in_lens, lab_lens, blank=0):
    """Per-sample -log p(label | x) by the textbook alpha recursion in probability space."""
    out = []
    for n in range(logits.shape[1]):
        lg = logits[: in_lens[n], n]
        p = np.exp(lg - lg.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        lab = list(labels[n, : lab_lens[n]])
        ext = [blank]
        for c in lab:
            ext += [c, blank]
        s = len(ext)
        alpha = np.zeros(s)
        alpha[0] = p[0, ext[0]]
        if s > 1:
            alpha[1] = p[0, ext[1]]
        for t in range(1, len(lg)):
            new = np.zeros(s)
            for i in range(s):
                v = alpha[i] + (alpha[i - 1] if i >= 1 else 0)
                if i >= 2 and ext[i] != blank and ext[i] != ext[i - 2]:
                    v += alpha[i - 2]
                new[i] = v * p[t, ext[i]]
            alpha = new
        out.append(-np.log(alpha[-1] + (alpha[-2] if s > 1 else 0)))
    return np.array(out)


def test_ctc_loss_matches_the_alpha_recursion():
    t_max, n, c = 6, 3, 4
    logits = _a(t_max, n, c)
    labels = np.array([[1, 2, 2], [3, 1, 0], [2, 0, 0]])
    in_lens, lab_lens = np.array([6, 5, 4]), np.array([3, 2, 1])
    args = (fw.to_tensor(labels), fw.to_tensor(in_lens), fw.to_tensor(lab_lens))
    ref = _ctc_ref(logits, labels, in_lens, lab_lens)
    assert_close(F.ctc_loss(_t(logits), *args, reduction="none"), ref)
    assert_close(F.ctc_loss(_t(logits), *args), (ref / lab_lens).mean())
    small = logits[:4, :2, :3].copy()
    sargs = (
        fw.to_tensor(np.array([[1, 2], [2, 0]])),
        fw.to_tensor(np.array([4, 3])),
        fw.to_tensor(np.array([2, 1])),
    )
    check_grad(lambda x: F.ctc_loss(x, *sargs, reduction="sum"), small)
