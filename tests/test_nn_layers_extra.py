"""The rest of Paddle's ``nn`` layers (issue 17): recurrent layers against a numpy
re-implementation of the recurrence, Transformer layers against a numpy encoder layer, and
the thin wrappers (convolutions, pools, norms with running statistics, padding, containers,
activations, losses) against numpy or the functional form."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from tests.conftest import assert_close
from tests.gradcheck import check_grad

RNG = np.random.default_rng(11)


def _a(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape)


def _sig(a):
    return 1 / (1 + np.exp(-a))


def _w(layer, name):
    return getattr(layer, name).numpy().astype(np.float64)


# -- numpy recurrences (Paddle's gate order) ---------------------------------------------------
def _np_cell(kind, cell, x, state):
    wih, whh, bih, bhh = (_w(cell, n) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
    if kind == "lstm":
        h, c = state
        g = x @ wih.T + bih + h @ whh.T + bhh
        i, f, gg, o = np.split(g, 4, axis=-1)
        c = _sig(f) * c + _sig(i) * np.tanh(gg)
        h = _sig(o) * np.tanh(c)
        return h, (h, c)
    h = state
    if kind == "gru":
        xr, xz, xc = np.split(x @ wih.T + bih, 3, axis=-1)
        hr, hz, hc = np.split(h @ whh.T + bhh, 3, axis=-1)
        r, z = _sig(xr + hr), _sig(xz + hz)
        cand = np.tanh(xc + r * hc)
        h = (h - cand) * z + cand
        return h, h
    h = np.tanh(x @ wih.T + bih + h @ whh.T + bhh)
    return h, h


def _np_rnn(kind, layer, x, lengths):
    b, t, _ = x.shape
    hs = layer.hidden_size
    finals = []
    for li in range(layer.num_layers):
        outs = []
        for d in range(layer.num_directions):
            cell = layer.cells[li * layer.num_directions + d]
            y = np.zeros((b, t, hs))
            fin = []
            for n in range(b):
                st = (np.zeros(hs), np.zeros(hs)) if kind == "lstm" else np.zeros(hs)
                steps = range(lengths[n]) if d == 0 else range(lengths[n] - 1, -1, -1)
                for s in steps:
                    y[n, s], st = _np_cell(kind, cell, x[n, s], st)
                fin.append(st)
            outs.append(y)
            finals.append(fin)
        x = np.concatenate(outs, -1)
    if kind == "lstm":
        return (
            x,
            np.array([[f[0] for f in fin] for fin in finals]),
            np.array([[f[1] for f in fin] for fin in finals]),
        )
    return x, np.array(finals)


@pytest.mark.parametrize("kind", ["lstm", "gru", "simple"])
def test_recurrent_layers_match_numpy_recurrence(kind):
    fw.seed(0)
    cls = {"lstm": fw.nn.LSTM, "gru": fw.nn.GRU, "simple": fw.nn.SimpleRNN}[kind]
    layer = cls(3, 4, num_layers=2, direction="bidirect")
    x = _a(2, 5, 3).astype(np.float32)
    lengths = [5, 3]
    y, fin = layer(fw.to_tensor(x), sequence_length=fw.to_tensor(lengths))
    ref = _np_rnn(kind, layer, x.astype(np.float64), lengths)
    assert y.shape == (2, 5, 8)
    assert_close(y, ref[0].astype(np.float32), rtol=1e-5, atol=1e-5)
    if kind == "lstm":
        assert_close(fin[0], ref[1].astype(np.float32), rtol=1e-5, atol=1e-5)
        assert_close(fin[1], ref[2].astype(np.float32), rtol=1e-5, atol=1e-5)
    else:
        assert_close(fin, ref[1].astype(np.float32), rtol=1e-5, atol=1e-5)


def test_lstm_time_major_and_initial_states():
    fw.seed(1)
    layer = fw.nn.LSTM(3, 4, time_major=True)
    x = _a(6, 2, 3).astype(np.float32)
    h0, c0 = _a(1, 2, 4).astype(np.float32), _a(1, 2, 4).astype(np.float32)
    y, (h, c) = layer(fw.to_tensor(x), (fw.to_tensor(h0), fw.to_tensor(c0)))
    st = (h0[0].astype(np.float64), c0[0].astype(np.float64))
    for t in range(6):
        out, st = _np_cell("lstm", layer.cells[0], x[t].astype(np.float64), st)
        assert_close(y[t], out.astype(np.float32), rtol=1e-5, atol=1e-5)
    assert_close(h[0], st[0].astype(np.float32), rtol=1e-5, atol=1e-5)


def test_cells_and_gradients_by_finite_differences():
    fw.seed(2)
    for cls in (fw.nn.LSTMCell, fw.nn.GRUCell, fw.nn.SimpleRNNCell):
        cell = cls(3, 2).astype("float64")
        out = cell(fw.to_tensor(_a(4, 3)))
        assert out[0].shape == (4, 2)
    gru = fw.nn.GRU(2, 3).astype("float64")
    check_grad(lambda x: gru(x)[0], _a(2, 3, 2))
    lstm = fw.nn.LSTM(2, 2, direction="bidirectional").astype("float64")
    check_grad(lambda x: lstm(x)[1][1], _a(1, 3, 2))
    with pytest.raises(fw.OpArgumentError, match=r"\[LSTM\] inputs must be"):
        lstm(fw.to_tensor(_a(2, 3, 5)))
    with pytest.raises(fw.OpArgumentError, match=r"\[GRU\] direction"):
        fw.nn.GRU(2, 3, direction="backward")


def test_lstm_trains_on_a_sequence_task():
    """Sum-sign classification: the loss must fall well below chance after a few steps."""
    fw.seed(3)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 6, 1)).astype(np.float32)
    y = (x.sum((1, 2)) > 0).astype(np.int64)
    lstm, head = fw.nn.LSTM(1, 16), fw.nn.Linear(16, 2)
    opt = fw.optimizer.Adam(0.03, parameters=lstm.parameters() + head.parameters())
    for _ in range(60):
        _, (h, _) = lstm(fw.to_tensor(x))
        loss = F.cross_entropy(head(h[0]), fw.to_tensor(y))
        loss.backward()
        opt.step()
        opt.clear_grad()
    assert loss.item() < 0.35, loss.item()


# -- transformer ----------------------------------------------------------------------------
def _np_ln(x, w, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = x.var(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def _np_mha(att, q, k, v, mask=None):
    lin = lambda lay, x: x @ _w(lay, "weight") + _w(lay, "bias")  # noqa: E731
    b, s, d = q.shape
    h = att.num_heads
    sp = lambda x: x.reshape(x.shape[0], x.shape[1], h, d // h).transpose(0, 2, 1, 3)  # noqa: E731
    qq, kk, vv = sp(lin(att.q_proj, q)), sp(lin(att.k_proj, k)), sp(lin(att.v_proj, v))
    sc = qq @ kk.transpose(0, 1, 3, 2) / np.sqrt(d // h)
    if mask is not None:
        sc = sc + mask
    p = np.exp(sc - sc.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ vv).transpose(0, 2, 1, 3).reshape(b, s, d)
    return lin(att.out_proj, o)


def _np_encoder_layer(layer, x, mask=None, pre=False):
    lin = lambda lay, t: t @ _w(lay, "weight") + _w(lay, "bias")  # noqa: E731
    ln1 = lambda t: _np_ln(t, _w(layer.norm1, "weight"), _w(layer.norm1, "bias"))  # noqa: E731
    ln2 = lambda t: _np_ln(t, _w(layer.norm2, "weight"), _w(layer.norm2, "bias"))  # noqa: E731
    ff = lambda t: lin(layer.linear2, np.maximum(lin(layer.linear1, t), 0))  # noqa: E731
    if pre:
        y = x + _np_mha(layer.self_attn, ln1(x), ln1(x), ln1(x), mask)
        return y + ff(ln2(y))
    y = ln1(x + _np_mha(layer.self_attn, x, x, x, mask))
    return ln2(y + ff(y))


@pytest.mark.parametrize("pre", [False, True])
def test_transformer_encoder_layer_matches_numpy(pre):
    fw.seed(4)
    layer = fw.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, normalize_before=pre)
    layer.eval()
    x = _a(2, 5, 8).astype(np.float32)
    mask = np.triu(np.full((5, 5), -1e9), 1)
    got = layer(fw.to_tensor(x), fw.to_tensor(mask.astype(np.float32)))
    assert_close(
        got,
        _np_encoder_layer(layer, x.astype(np.float64), mask, pre).astype(np.float32),
        rtol=1e-4,
        atol=1e-4,
    )
    enc = fw.nn.TransformerEncoder(layer, 2)
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    want = _np_encoder_layer(
        enc.layers[1], _np_encoder_layer(enc.layers[0], x.astype(np.float64), None, pre), None, pre
    )
    assert_close(enc(fw.to_tensor(x)), want.astype(np.float32), rtol=1e-4, atol=1e-4)


def test_transformer_decoder_is_causal_and_trains():
    fw.seed(5)
    model = fw.nn.Transformer(
        d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=16, dropout=0.0
    )
    model.eval()
    src, tgt = _a(2, 4, 8).astype(np.float32), _a(2, 3, 8).astype(np.float32)
    mask = fw.nn.Transformer.generate_square_subsequent_mask(3)
    assert_close(mask, np.triu(np.full((3, 3), -np.inf), 1).astype(np.float32))
    y = model(fw.to_tensor(src), fw.to_tensor(tgt), tgt_mask=mask).numpy()
    tgt2 = tgt.copy()
    tgt2[:, 2] += 5.0  # changing the last target token must not change earlier positions
    y2 = model(fw.to_tensor(src), fw.to_tensor(tgt2), tgt_mask=mask).numpy()
    np.testing.assert_allclose(y[:, :2], y2[:, :2], rtol=1e-5, atol=1e-5)
    assert np.abs(y[:, 2] - y2[:, 2]).max() > 1e-3
    dec_layer = fw.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)
    dec = fw.nn.TransformerDecoder(dec_layer, 1)
    opt = fw.optimizer.Adam(0.01, parameters=dec.parameters())
    first = None
    for _ in range(30):
        loss = ((dec(fw.to_tensor(tgt), fw.to_tensor(src)) - fw.to_tensor(tgt)) ** 2).mean()
        first = first if first is not None else loss.item()
        loss.backward()
        opt.step()
        opt.clear_grad()
    assert loss.item() < 0.5 * first


# -- wrappers -------------------------------------------------------------------------------
def test_conv_layers_use_paddle_weight_layouts():
    fw.seed(6)
    x1, x2, x3 = fw.randn([2, 4, 9]), fw.randn([2, 4, 5, 6]), fw.randn([1, 4, 3, 4, 5])
    c1 = fw.nn.Conv1D(4, 6, 3, stride=2, padding=1, groups=2)
    assert c1.weight.shape == (6, 2, 3)
    assert_close(c1(x1), F.conv1d(x1, c1.weight, c1.bias, 2, 1, groups=2).numpy())
    c3 = fw.nn.Conv3D(4, 2, (1, 2, 3))
    assert c3.weight.shape == (2, 4, 1, 2, 3) and c3(x3).shape == (1, 2, 3, 3, 3)
    t2 = fw.nn.Conv2DTranspose(4, 6, 3, stride=2, padding=1, groups=2)
    assert t2.weight.shape == (4, 3, 3, 3)
    assert t2(x2).shape == (2, 6, 9, 11) and t2(x2, output_size=[10, 12]).shape == (2, 6, 10, 12)
    t1 = fw.nn.Conv1DTranspose(4, 3, 4, stride=2)
    assert t1.weight.shape == (4, 3, 4) and t1(x1).shape == (2, 3, 20)


def test_pool_resize_pad_layers():
    a = _a(2, 3, 4, 5)
    x = fw.to_tensor(a)
    assert_close(fw.nn.MaxPool1D(2)(fw.to_tensor(a[:, :, 0])), a[:, :, 0, :4].reshape(2, 3, 2, 2).max(-1))
    assert_close(fw.nn.AvgPool1D(2)(fw.to_tensor(a[:, :, 0])), a[:, :, 0, :4].reshape(2, 3, 2, 2).mean(-1))
    assert_close(fw.nn.AdaptiveAvgPool1D(1)(fw.to_tensor(a[:, :, 0])), a[:, :, 0].mean(-1, keepdims=True))
    assert_close(fw.nn.AdaptiveMaxPool2D(1)(x), a.max((2, 3), keepdims=True))
    assert_close(fw.nn.Upsample(scale_factor=2)(x), a.repeat(2, 2).repeat(2, 3))
    assert fw.nn.PixelShuffle(1)(x).shape == (2, 3, 4, 5)
    for mode, np_mode in (
        ("constant", "constant"),
        ("reflect", "reflect"),
        ("replicate", "edge"),
        ("circular", "wrap"),
    ):
        got = fw.nn.Pad2D([1, 2, 3, 0], mode=mode)(x)
        assert_close(got, np.pad(a, [(0, 0), (0, 0), (3, 0), (1, 2)], mode=np_mode))
    assert_close(
        fw.nn.Pad2D(1, data_format="NHWC")(fw.to_tensor(a.transpose(0, 2, 3, 1))),
        np.pad(a.transpose(0, 2, 3, 1), [(0, 0), (1, 1), (1, 1), (0, 0)]),
    )
    with pytest.raises(fw.OpArgumentError, match=r"\[Pad2D\] reflect padding"):
        fw.nn.Pad2D(4, mode="reflect")(x)
    assert fw.nn.Unflatten(1, [3, 1])(fw.to_tensor(_a(2, 3))).shape == (2, 3, 1)
    fw.seed(0)
    d = fw.nn.Dropout2D(0.5)(fw.ones([4, 8, 2, 2])).numpy()
    assert set(np.unique(d.reshape(4, 8, -1).std(-1))) == {0.0}  # whole channels dropped or kept
    fw.seed(0)
    bl = fw.nn.Bilinear(3, 4, 2)
    p, q = _a(5, 3), _a(5, 4)
    want = np.einsum("ni,kij,nj->nk", p, _w(bl, "weight"), q) + _w(bl, "bias")
    assert_close(
        bl(fw.to_tensor(p.astype(np.float32)), fw.to_tensor(q.astype(np.float32))),
        want.astype(np.float32),
        rtol=1e-5,
        atol=1e-5,
    )


def test_batch_norm_layers_running_statistics_and_eval():
    bn = fw.nn.BatchNorm2D(3, momentum=0.5)
    a = _a(4, 3, 2, 2).astype(np.float32)
    y = bn(fw.to_tensor(a))
    mu, var = a.mean((0, 2, 3)), a.var((0, 2, 3))
    assert_close(
        y,
        ((a - mu[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5)).astype(np.float32),
        rtol=1e-4,
        atol=1e-5,
    )
    assert_close(bn._mean, 0.5 * mu, rtol=1e-5, atol=1e-6)
    assert_close(bn._variance, 0.5 + 0.5 * var, rtol=1e-5, atol=1e-6)
    assert "_mean" in bn.state_dict() and "_variance" in bn.state_dict()
    bn.eval()
    assert_close(
        bn(fw.to_tensor(a)),
        ((a - 0.5 * mu[:, None, None]) / np.sqrt(0.5 + 0.5 * var[:, None, None] + 1e-5)).astype(np.float32),
        rtol=1e-4,
        atol=1e-5,
    )
    b1 = fw.nn.BatchNorm1D(3)
    assert b1(fw.to_tensor(_a(5, 3).astype(np.float32))).shape == (5, 3)
    sb = fw.nn.SyncBatchNorm(3)
    assert_close(sb(fw.to_tensor(a)), y.numpy(), rtol=1e-5, atol=1e-6)
    conv = fw.nn.SyncBatchNorm.convert_sync_batchnorm(bn)  # a SyncBatchNorm on bn's tensors, as Paddle
    assert type(conv) is fw.nn.SyncBatchNorm and conv.weight is bn.weight and conv._mean is bn._mean
    gn, inn = fw.nn.GroupNorm(1, 3), fw.nn.InstanceNorm2D(3)
    assert_close(gn(fw.to_tensor(a)), F.group_norm(fw.to_tensor(a), 1).numpy())
    assert_close(inn(fw.to_tensor(a)), F.instance_norm(fw.to_tensor(a)).numpy())
    assert_close(
        fw.nn.LocalResponseNorm(3)(fw.to_tensor(a)), F.local_response_norm(fw.to_tensor(a), 3).numpy()
    )


def test_layer_dict_registers_parameters():
    d = fw.nn.LayerDict({"a": fw.nn.Linear(2, 3), "b": fw.nn.Linear(3, 1)})
    d["c"] = fw.nn.ReLU()
    assert list(d.keys()) == ["a", "b", "c"] and len(d) == 3 and "b" in d
    assert len(d.parameters()) == 4
    d.pop("b")
    assert len(d.parameters()) == 2
    d.update([("e", fw.nn.Linear(1, 1))])
    assert [k for k, _ in d.items()] == ["a", "c", "e"]
    with pytest.raises(fw.OpArgumentError, match=r"\[LayerDict\]"):
        d.update({"x": 3})


def test_activation_and_loss_layers():
    a = _a(3, 4) * 3
    x = fw.to_tensor(a)
    pairs = [
        (fw.nn.ReLU6(), F.relu6(x)),
        (fw.nn.Silu(), F.silu(x)),
        (fw.nn.LogSoftmax(0), F.log_softmax(x, 0)),
        (fw.nn.ELU(0.5), F.elu(x, 0.5)),
        (fw.nn.SELU(), F.selu(x)),
        (fw.nn.CELU(2.0), F.celu(x, 2.0)),
        (fw.nn.Hardswish(), F.hardswish(x)),
        (fw.nn.Hardsigmoid(), F.hardsigmoid(x)),
        (fw.nn.Hardtanh(-0.5, 0.5), F.hardtanh(x, -0.5, 0.5)),
        (fw.nn.Mish(), F.mish(x)),
        (fw.nn.Softplus(beta=2.0), F.softplus(x, 2.0)),
        (fw.nn.Softsign(), F.softsign(x)),
        (fw.nn.GLU(), F.glu(x)),
    ]
    for layer, want in pairs:
        assert_close(layer(x), want.numpy())
    assert_close(fw.nn.Hardtanh(max=0.5)(x), np.clip(a, -1, 0.5))
    with pytest.raises(fw.OpArgumentError, match=r"\[ELU\] unknown arguments"):
        fw.nn.ELU(beta=1.0)
    pr = fw.nn.PReLU(4, init=0.1)
    assert_close(pr(x), np.where(a > 0, a, float(np.float32(0.1)) * a))  # the slope is a float32 parameter
    p, y = fw.to_tensor(_a(4, lo=0.1, hi=0.9)), fw.to_tensor(_a(4, lo=0, hi=1))
    assert_close(fw.nn.BCELoss()(p, y), F.binary_cross_entropy(p, y).numpy())
    assert_close(fw.nn.SmoothL1Loss(delta=0.3)(p, y), F.smooth_l1_loss(p, y, delta=0.3).numpy())
    logp = F.log_softmax(x)
    lab = fw.to_tensor(np.array([0, 3, 1]))
    assert_close(fw.nn.NLLLoss()(logp, lab), -logp.numpy()[np.arange(3), [0, 3, 1]].mean())
    assert_close(fw.nn.KLDivLoss("sum")(logp, F.softmax(x)), F.kl_div(logp, F.softmax(x), "sum").numpy())
    sgn = fw.to_tensor(np.array([1.0, -1.0, 1.0, -1.0]))
    assert_close(fw.nn.MarginRankingLoss(0.2)(p, y, sgn), F.margin_ranking_loss(p, y, sgn, 0.2).numpy())
    args = (fw.to_tensor(np.array([[1, 2]])), fw.to_tensor(np.array([4])), fw.to_tensor(np.array([2])))
    lg = fw.to_tensor(_a(4, 1, 3))
    assert_close(fw.nn.CTCLoss()(lg, *args), F.ctc_loss(lg, *args).numpy())
