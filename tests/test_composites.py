"""Composite ops: values against numpy references, gradients against finite differences
(float64), and the fused-kernel path a plugin can take over."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

import framework as fw
import framework.nn.functional as F
from tests.gradcheck import check_grad

RNG = np.random.default_rng(0)


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


# -- values ---------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax_match_numpy(axis):
    x = RNG.standard_normal((3, 4, 5)) * 10
    t = fw.to_tensor(x)
    np.testing.assert_allclose(F.softmax(t, axis=axis).numpy(), np_softmax(x, axis), rtol=1e-12)
    np.testing.assert_allclose(
        F.log_softmax(t, axis=axis).numpy(), np.log(np_softmax(x, axis)), rtol=1e-10, atol=1e-12
    )


def test_softmax_large_values_stay_finite():
    t = fw.to_tensor(np.array([[1000.0, 1000.0, -1000.0]], np.float32))
    np.testing.assert_allclose(F.softmax(t).numpy(), [[0.5, 0.5, 0.0]])
    assert np.isfinite(F.log_softmax(t).numpy()).all()


def test_logsumexp_matches_scipy():
    x = RNG.standard_normal((4, 6)) * 30
    np.testing.assert_allclose(
        F.logsumexp(fw.to_tensor(x), axis=1).numpy(), special.logsumexp(x, axis=1), rtol=1e-12
    )
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
    np.testing.assert_allclose(
        plain.numpy(), (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5), rtol=1e-10
    )


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
    reg.add_kernel("softmax", "cpu", ["float64"], kernel, override=True)
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
    t = fw.to_tensor(x, stop_gradient=False, device="cpu")
    y = F.softmax(t, axis=1)
    assert fused_softmax_on_cpu == [1]
    assert fw.op_path_stats()["softmax@cpu"]["fused"] == before + 1
    np.testing.assert_allclose(y.numpy(), np_softmax(x, 1), rtol=1e-12)
    check_grad(lambda a: F.softmax(a, axis=1), x)


# -- the rest of the composites: values --------------------------------------------------------
def np_conv2d(x, w, stride, pad, dil, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                patch = xp[
                    :,
                    g * cg : (g + 1) * cg,
                    i * stride[0] : i * stride[0] + dil[0] * (kh - 1) + 1 : dil[0],
                    j * stride[1] : j * stride[1] + dil[1] * (kw - 1) + 1 : dil[1],
                ]
                out[:, oc, i, j] = (patch * w[oc]).sum((1, 2, 3))
    return out


@pytest.mark.parametrize(
    "stride,pad,dil,groups",
    [((1, 1), (0, 0), (1, 1), 1), ((2, 1), (1, 2), (1, 1), 1), ((1, 1), (1, 1), (2, 2), 2)],
)
def test_conv2d_matches_direct_loops(stride, pad, dil, groups):
    x = RNG.standard_normal((2, 4, 7, 6))
    w = RNG.standard_normal((6, 4 // groups, 3, 2))
    b = RNG.standard_normal(6)
    got = F.conv2d(
        fw.to_tensor(x),
        fw.to_tensor(w),
        fw.to_tensor(b),
        stride=stride,
        padding=pad,
        dilation=dil,
        groups=groups,
    )
    ref = np_conv2d(x, w, stride, pad, dil, groups) + b[None, :, None, None]
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10, atol=1e-12)


def test_conv2d_rejects_channel_mismatch():
    with pytest.raises(fw.OpArgumentError, match=r"\[conv2d\]"):
        F.conv2d(fw.ones([1, 3, 5, 5]), fw.ones([2, 2, 3, 3]))


def test_pooling_matches_numpy():
    x = RNG.standard_normal((2, 3, 6, 7))
    t = fw.to_tensor(x)
    mp = F.max_pool2d(t, 2).numpy()
    np.testing.assert_allclose(mp, x[:, :, :6, :6].reshape(2, 3, 3, 2, 3, 2).max((3, 5)))
    ap = F.avg_pool2d(t, 2).numpy()
    np.testing.assert_allclose(ap, x[:, :, :6, :6].reshape(2, 3, 3, 2, 3, 2).mean((3, 5)), rtol=1e-12)
    # padding 1, exclusive: the corner window covers one real element
    ap1 = F.avg_pool2d(t, 2, stride=2, padding=1).numpy()
    assert ap1[0, 0, 0, 0] == pytest.approx(x[0, 0, 0, 0])
    assert ap1[0, 0, 1, 1] == pytest.approx(x[0, 0, 1:3, 1:3].mean())
    mp1 = F.max_pool2d(t, 3, stride=2, padding=1).numpy()
    assert mp1[1, 2, 0, 0] == pytest.approx(x[1, 2, :2, :2].max())
    ad = F.adaptive_avg_pool2d(t, (4, 3)).numpy()
    for i in range(4):
        for j in range(3):
            hs, he = (i * 6) // 4, -(-((i + 1) * 6) // 4)
            ws, we = (j * 7) // 3, -(-((j + 1) * 7) // 3)
            np.testing.assert_allclose(ad[:, :, i, j], x[:, :, hs:he, ws:we].mean((2, 3)), rtol=1e-12)


def test_linear_embedding_one_hot_cumsum_topk():
    x = RNG.standard_normal((2, 3, 4))
    w = RNG.standard_normal((4, 5))
    b = RNG.standard_normal(5)
    np.testing.assert_allclose(
        F.linear(fw.to_tensor(x), fw.to_tensor(w), fw.to_tensor(b)).numpy(), x @ w + b, rtol=1e-12
    )
    table = RNG.standard_normal((6, 3))
    ids = np.array([[0, 5, 2], [2, 2, 1]])
    np.testing.assert_allclose(F.embedding(fw.to_tensor(ids), fw.to_tensor(table)).numpy(), table[ids])
    padded = F.embedding(fw.to_tensor(ids), fw.to_tensor(table), padding_idx=2).numpy()
    np.testing.assert_allclose(padded, np.where((ids == 2)[..., None], 0.0, table[ids]))
    np.testing.assert_allclose(F.one_hot(fw.to_tensor([2, 0]), 3).numpy(), [[0, 0, 1], [1, 0, 0]])
    c = RNG.standard_normal((3, 11))
    np.testing.assert_allclose(F.cumsum(fw.to_tensor(c), axis=1).numpy(), np.cumsum(c, 1), rtol=1e-12)
    np.testing.assert_allclose(F.cumsum(fw.to_tensor(c), axis=0).numpy(), np.cumsum(c, 0), rtol=1e-12)
    assert F.cumsum(fw.to_tensor([1, 2, 3])).tolist() == [1, 3, 6]
    v, i = F.topk(fw.to_tensor(c), 3, axis=1)
    ref_i = np.argsort(-c, axis=1, kind="stable")[:, :3]
    np.testing.assert_array_equal(i.numpy(), ref_i)
    np.testing.assert_allclose(v.numpy(), np.take_along_axis(c, ref_i, 1))
    v2, i2 = F.topk(fw.to_tensor(c), 2, axis=0, largest=False)
    np.testing.assert_array_equal(i2.numpy(), np.argsort(c, axis=0, kind="stable")[:2])


def test_var_std_match_numpy():
    x = RNG.standard_normal((4, 5))
    t = fw.to_tensor(x)
    np.testing.assert_allclose(F.var(t, axis=1).numpy(), x.var(1, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(F.std(t, unbiased=False).numpy(), x.std(), rtol=1e-12)


def test_dropout_uses_philox_and_scales():
    x = fw.ones([1000], dtype="float32")
    fw.seed(7)
    a = F.dropout(x, 0.3).numpy()
    fw.seed(7)
    b = F.dropout(x, 0.3).numpy()
    np.testing.assert_array_equal(a, b)
    fw.seed(7)
    u = fw.rand([1000], dtype="float32").numpy()
    np.testing.assert_allclose(a, np.where(u >= 0.3, 1 / 0.7, 0.0), rtol=1e-6)
    assert F.dropout(x, 0.3, training=False).numpy().tolist() == [1.0] * 1000


def np_log_softmax(x):
    return x - special.logsumexp(x, axis=-1, keepdims=True)


def test_cross_entropy_variants_match_numpy():
    logits = RNG.standard_normal((6, 5))
    labels = np.array([0, 4, 2, -100, 1, 3])
    logp = np_log_softmax(logits)
    valid = labels != -100
    nll = -logp[np.arange(6), np.where(valid, labels, 0)]
    got = F.cross_entropy(fw.to_tensor(logits), fw.to_tensor(labels)).item()
    assert got == pytest.approx(nll[valid].mean(), rel=1e-12)
    eps = 0.1
    smooth = (1 - eps) * nll + eps * (-logp.mean(-1))
    got = F.cross_entropy(fw.to_tensor(logits), fw.to_tensor(labels), label_smoothing=eps).item()
    assert got == pytest.approx(smooth[valid].mean(), rel=1e-12)
    w = RNG.uniform(0.5, 2, 5)
    wl = w[np.where(valid, labels, 0)] * valid
    got = F.cross_entropy(fw.to_tensor(logits), fw.to_tensor(labels), weight=fw.to_tensor(w)).item()
    assert got == pytest.approx((nll * wl).sum() / wl.sum(), rel=1e-12)
    soft = special.softmax(RNG.standard_normal((6, 5)), -1)
    got = F.cross_entropy(fw.to_tensor(logits), fw.to_tensor(soft), soft_label=True, reduction="none").numpy()
    # Paddle keeps the class axis (size 1) in a per-sample soft-label loss
    np.testing.assert_allclose(got, -(soft * logp).sum(-1, keepdims=True), rtol=1e-12)
    # classes on axis 1 of (N, C, L)
    l3 = RNG.standard_normal((2, 5, 3))
    y3 = np.array([[1, 2, 3], [0, 4, 4]])
    lp3 = np_log_softmax(np.moveaxis(l3, 1, -1))
    ref = -np.take_along_axis(lp3, y3[..., None], -1).mean()
    assert F.cross_entropy(fw.to_tensor(l3), fw.to_tensor(y3), axis=1).item() == pytest.approx(ref, rel=1e-12)
    assert F.nll_loss(fw.to_tensor(np.moveaxis(lp3, -1, 1)), fw.to_tensor(y3)).item() == pytest.approx(
        ref, rel=1e-12
    )


def test_regression_losses_match_numpy():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    ta, tb = fw.to_tensor(a), fw.to_tensor(b)
    assert F.mse_loss(ta, tb).item() == pytest.approx(((a - b) ** 2).mean(), rel=1e-12)
    assert F.l1_loss(ta, tb, reduction="sum").item() == pytest.approx(np.abs(a - b).sum(), rel=1e-12)
    y = (RNG.uniform(size=(3, 4)) > 0.5).astype(np.float64)
    x = a * 20
    ref = y * np.logaddexp(0, -x) + (1 - y) * np.logaddexp(0, x)
    got = F.binary_cross_entropy_with_logits(fw.to_tensor(x), fw.to_tensor(y), reduction="none").numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-14)
    pw = np.array([1.0, 2.0, 0.5, 3.0])
    refp = -(pw * y * np.log(special.expit(a)) + (1 - y) * np.log(1 - special.expit(a)))
    got = F.binary_cross_entropy_with_logits(
        ta, fw.to_tensor(y), pos_weight=fw.to_tensor(pw), reduction="none"
    ).numpy()
    np.testing.assert_allclose(got, refp, rtol=1e-10)


def test_attention_causal_and_masked_match_numpy():
    q, k, v = (RNG.standard_normal((2, 5, 3, 4)) for _ in range(3))  # (B, S, H, D)
    qh, kh, vh = (np.moveaxis(t, 2, 1) for t in (q, k, v))
    s = qh @ np.swapaxes(kh, -1, -2) / 2.0
    causal = np.where(np.tril(np.ones((5, 5), bool)), s, -np.inf)
    ref = np.moveaxis(np_softmax(causal, -1) @ vh, 1, 2)
    got = F.scaled_dot_product_attention(fw.to_tensor(q), fw.to_tensor(k), fw.to_tensor(v), is_causal=True)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10)
    mask = RNG.uniform(size=(5, 5)) > 0.3
    mask[:, 0] = True
    ref = np.moveaxis(np_softmax(np.where(mask, s, -np.inf), -1) @ vh, 1, 2)
    got = F.scaled_dot_product_attention(
        fw.to_tensor(q), fw.to_tensor(k), fw.to_tensor(v), attn_mask=fw.to_tensor(mask)
    )
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10)


def test_rotary_embedding_rotates_pairs():
    x = RNG.standard_normal((1, 2, 5, 4))  # (B, H, S, D)
    cos, sin = F.rotary_cos_sin(5, 4, dtype="float64")
    pos = np.arange(5)[:, None]
    freqs = pos * (10000.0 ** (-np.arange(0, 4, 2) / 4))[None]
    c, s_ = np.cos(np.concatenate([freqs, freqs], -1)), np.sin(np.concatenate([freqs, freqs], -1))
    rot = np.concatenate([-x[..., 2:], x[..., :2]], -1)
    got = F.rotary_embedding(fw.to_tensor(x), cos, sin).numpy()
    np.testing.assert_allclose(got, x * c + rot * s_, rtol=1e-12)
    # a rotation keeps the norm of each (i, i + D/2) pair
    np.testing.assert_allclose(np.linalg.norm(got, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-12)


# -- the rest of the composites: gradients ---------------------------------------------------
_IMG = RNG.standard_normal((1, 2, 5, 5))
_CW = RNG.standard_normal((4, 1, 2, 3))
_LBL = fw.to_tensor(np.array([1, 3, -100]))
_SOFT = special.softmax(RNG.standard_normal((3, 4)), -1)
_Q = RNG.standard_normal((1, 4, 2, 3))

GRAD_CASES_2 = {
    "linear": (lambda x, w, b: F.linear(x, w, b), [_X, RNG.standard_normal((4, 2)), RNG.standard_normal(2)]),
    "embedding": (lambda w: F.embedding(fw.to_tensor([[0, 2], [2, 1]]), w), [RNG.standard_normal((3, 2))]),
    "conv2d_groups": (
        lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
        [_IMG, _CW],
    ),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2, stride=1), [_IMG]),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), [_IMG]),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, 3), [_IMG]),
    "cross_entropy": (lambda x: F.cross_entropy(x, _LBL, label_smoothing=0.2), [_X]),
    "cross_entropy_soft": (lambda x: F.cross_entropy(x, fw.to_tensor(_SOFT), soft_label=True), [_X]),
    "nll_loss": (lambda x: F.nll_loss(x, _LBL), [_X]),
    "mse_loss": (lambda a, b: F.mse_loss(a, b), [_X, _X.T.copy().T + 1]),
    "l1_loss": (lambda a: F.l1_loss(a, fw.zeros([3, 4], dtype="float64")), [_X]),
    "bce_with_logits": (
        lambda x: F.binary_cross_entropy_with_logits(x, fw.to_tensor((_X > 0).astype(np.float64))),
        [_X],
    ),
    "sdpa_causal": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        [_Q, _Q + 0.5, _Q * 2],
    ),
    "rotary": (
        lambda x: F.rotary_embedding(x, *F.rotary_cos_sin(4, 4, dtype="float64")),
        [RNG.standard_normal((1, 4, 4))],
    ),
    "cumsum": (lambda x: F.cumsum(x, axis=1), [_X]),
    "topk_values": (lambda x: F.topk(x, 2, axis=1)[0], [_X]),
    "var": (lambda x: F.var(x, axis=0), [_X]),
    "std": (lambda x: F.std(x), [_X]),
    "clip": (lambda x: fw.clip(x, -0.5, 0.5), [_X]),
    "where_mask": (lambda x: F.masked_fill(x, fw.to_tensor(_X > 0.3), -1.0), [_X]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES_2))
def test_more_composite_gradients_match_finite_differences(name):
    f, arrays = GRAD_CASES_2[name]
    check_grad(f, *arrays)


# -- issue 18: NaN and bounds at the edges ----------------------------------------------------
def test_relu_and_relu6_propagate_nan_in_value_and_gradient():
    """NaN stays NaN (numpy, Paddle, PyTorch); its gradient passes as PyTorch's does, and the
    gradient at the kinks (0 and 6) is 0."""
    a = np.array([np.nan, -1.0, 0.0, 2.0, 6.0, 7.0])
    for f, ref, dref in [
        (F.relu, np.where(a <= 0, 0.0, a), [1, 0, 0, 1, 1, 1]),
        (F.relu6, np.where(a <= 0, 0.0, np.where(a >= 6, 6.0, a)), [1, 0, 0, 1, 0, 0]),
    ]:
        x = fw.to_tensor(a)
        x.stop_gradient = False
        y = f(x)
        np.testing.assert_array_equal(y.numpy(), ref)  # NaN compares equal in assert_array_equal
        assert np.isnan(y.numpy()[0])
        (y * fw.to_tensor(np.arange(1.0, 7.0))).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.array(dref) * np.arange(1.0, 7.0))


def test_take_and_put_along_axis_reach_the_last_index_of_each_row():
    a = np.arange(12.0).reshape(3, 4)
    idx = np.array([[3, 0], [1, 3], [3, 3]])
    got = fw.take_along_axis(fw.to_tensor(a), fw.to_tensor(idx), axis=1)
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(a, idx, 1))
    ref = a.copy()
    np.put_along_axis(ref, idx[:, :1], -1.0, 1)
    np.testing.assert_array_equal(
        fw.put_along_axis(fw.to_tensor(a), fw.to_tensor(idx[:, :1]), -1.0, axis=1).numpy(), ref
    )
    idx0 = np.array([[2, 0, 1, 2]])
    np.testing.assert_array_equal(
        fw.take_along_axis(fw.to_tensor(a), fw.to_tensor(idx0), axis=0).numpy(),
        np.take_along_axis(a, idx0, 0),
    )


def test_one_hot_last_class_and_cross_entropy_label_equal_to_class_count():
    np.testing.assert_array_equal(F.one_hot(fw.to_tensor([2, 0]), 3).numpy(), np.eye(3)[[2, 0]])
    with pytest.raises(IndexError, match=r"\[one_hot\] class ids \(num_classes=3\) must be in \[0, 3\)"):
        F.one_hot(fw.to_tensor([[1, 2], [3, 0]]), 3)
    with pytest.raises(fw.OpArgumentError, match=r"\[cross_entropy\] a label is out of range for 3 classes"):
        F.cross_entropy(fw.ones([2, 3]), fw.to_tensor([0, 3]))
