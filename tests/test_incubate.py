"""``fw.incubate.nn.functional``'s fused ops against numpy references of Paddle's formulas.

Real Paddle's CPU build runs only ``swiglu`` (its fused norms hit an illegal instruction and the
rotary and linear kernels are GPU-only), so swiglu is checked against Paddle and the rest against
numpy written from Paddle's kernels' definitions.
"""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw

F = fw.incubate.nn.functional
rng = np.random.default_rng(0)


def test_swiglu_matches_paddle(device):
    paddle = pytest.importorskip("paddle", reason="real Paddle is the oracle (pip install paddlepaddle)")
    x = rng.standard_normal((2, 3, 8)).astype("float32")
    y = rng.standard_normal((2, 3, 8)).astype("float32")
    pf = paddle.nn.functional
    np.testing.assert_allclose(
        F.swiglu(fw.to_tensor(x, device=device)).numpy(),
        pf.swiglu(paddle.to_tensor(x)).numpy(),
        rtol=1e-5,
        atol=1e-6,
    )
    np.testing.assert_allclose(
        F.swiglu(fw.to_tensor(x, device=device), fw.to_tensor(y, device=device)).numpy(),
        pf.swiglu(paddle.to_tensor(x), paddle.to_tensor(y)).numpy(),
        rtol=1e-5,
        atol=1e-6,
    )


def test_fused_norms_match_numpy(device):
    x, b, r = (rng.standard_normal((2, 3, 4)).astype("float32") for _ in range(3))
    w, nb = rng.standard_normal(12).astype("float32"), rng.standard_normal(12).astype("float32")
    t = lambda a: fw.to_tensor(a, device=device)  # noqa: E731
    s = x + b + r
    flat = s.reshape(2, 12)
    rms = flat / np.sqrt((flat * flat).mean(-1, keepdims=True) + 1e-6) * w + nb
    out, res = F.fused_rms_norm(
        t(x), t(w.reshape(3, 4)), t(nb.reshape(3, 4)), 1e-6, 1, bias=t(b), residual=t(r)
    )
    np.testing.assert_allclose(out.numpy().reshape(2, 12), rms, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(res.numpy(), s, rtol=1e-6)
    s2 = x + b + 0.5 * r
    f2 = s2.reshape(2, 12)
    ln = (f2 - f2.mean(-1, keepdims=True)) / np.sqrt(f2.var(-1, keepdims=True) + 1e-5) * w + nb
    out, res = F.fused_layer_norm(t(x), t(w), t(nb), 1e-5, 0.5, 1, bias=t(b), residual=t(r))
    np.testing.assert_allclose(out.numpy().reshape(2, 12), ln, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        F.fused_layer_norm(t(x), None, None, 1e-5, 0.5, 1, t(b), t(r)).numpy(), s2, rtol=1e-6
    )
    out, res = F.fused_rms_norm(t(x), t(w[:4]), None, 1e-6, begin_norm_axis=2)
    assert res is None
    np.testing.assert_allclose(
        out.numpy(), x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w[:4], rtol=1e-5
    )
    with pytest.raises(fw.OpArgumentError, match=r"\[fused_rms_norm\] quantised output"):
        F.fused_rms_norm(t(x), t(w[:4]), None, 1e-6, 2, quant_scale=1.0)


def test_fused_linear(device):
    x, w, b = (
        rng.standard_normal((2, 5)).astype("float32"),
        rng.standard_normal((5, 3)).astype("float32"),
        rng.standard_normal(3).astype("float32"),
    )
    t = lambda a: fw.to_tensor(a, device=device)  # noqa: E731
    np.testing.assert_allclose(F.fused_linear(t(x), t(w), t(b)).numpy(), x @ w + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        F.fused_linear(t(x), t(w.T.copy()), None, transpose_weight=True).numpy(), x @ w, rtol=1e-5, atol=1e-6
    )


def _rope_ref(x, cos, sin, neox):
    """Paddle's kernel, element by element: adjacent pairs (neox style) or the two halves."""
    out = np.empty_like(x)
    d = x.shape[-1]
    if neox:
        out[..., 0::2] = x[..., 0::2] * cos[..., 0::2] - x[..., 1::2] * sin[..., 0::2]
        out[..., 1::2] = x[..., 1::2] * cos[..., 1::2] + x[..., 0::2] * sin[..., 1::2]
    else:
        h = d // 2
        rot = np.concatenate([-x[..., h:], x[..., :h]], -1)
        out = x * cos + rot * sin
    return out


@pytest.mark.parametrize("neox", [True, False])
def test_rotary_embedding_matches_paddles_formula(device, neox):
    b, s, h, d = 2, 5, 3, 8
    q, k, v = (rng.standard_normal((b, s, h, d)).astype("float32") for _ in range(3))
    t = lambda a: fw.to_tensor(a, device=device)  # noqa: E731
    # the tables Paddle derives when sin/cos are not given
    inv = 10000.0 ** (-np.arange(0, d, 2) / d)
    ang = np.arange(s)[:, None] * inv[None]
    full = np.repeat(ang, 2, -1) if neox else np.concatenate([ang, ang], -1)
    cos, sin = np.cos(full)[None, :, None], np.sin(full)[None, :, None]
    oq, ok, ov = F.fused_rotary_position_embedding(t(q), t(k), None, use_neox_rotary_style=neox)
    assert ov is None
    np.testing.assert_allclose(oq.numpy(), _rope_ref(q, cos, sin, neox), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ok.numpy(), _rope_ref(k, cos, sin, neox), rtol=1e-5, atol=1e-5)
    # given tables, gathered by position_ids, time-major inputs
    ct = rng.standard_normal((1, s, 1, d)).astype("float32")
    st = rng.standard_normal((1, s, 1, d)).astype("float32")
    pos = np.array([[4, 0, 1, 1, 2], [3, 3, 0, 2, 4]])
    want = _rope_ref(v, ct[0, pos], st[0, pos], neox)
    got = F.fused_rotary_position_embedding(
        t(v.transpose(1, 0, 2, 3).copy()),
        sin=t(st),
        cos=t(ct),
        position_ids=fw.to_tensor(pos, device=device),
        use_neox_rotary_style=neox,
        time_major=True,
    )[0]
    np.testing.assert_allclose(got.numpy().transpose(1, 0, 2, 3), want, rtol=1e-5, atol=1e-5)


def test_rotary_gradient_is_the_transposed_rotation():
    q = fw.to_tensor(rng.standard_normal((1, 3, 1, 4)).astype("float32"), stop_gradient=False)
    g = rng.standard_normal((1, 3, 1, 4)).astype("float32")
    out = F.fused_rotary_position_embedding(q)[0]
    (dq,) = fw.grad((out * fw.to_tensor(g)).sum(), q)
    inv = 10000.0 ** (-np.arange(0, 4, 2) / 4)
    ang = np.repeat(np.arange(3)[:, None] * inv[None], 2, -1)[None, :, None]
    # a rotation's gradient is the rotation by the opposite angle
    np.testing.assert_allclose(
        dq.numpy(), _rope_ref(g, np.cos(ang), -np.sin(ang), True), rtol=1e-5, atol=1e-5
    )
