"""``framework.quantization`` against real Paddle's ``paddle.quantization`` (same weights,
same inputs): QAT's fake quanters (outputs, the tracked scale/state/accum, the weight's
gradient), PTQ with abs-max observers (the converted model's outputs); the observers'
statistics against numpy; the config's priorities and its errors."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from framework.quantization import PTQ, QAT, QuantConfig, QuantizedLinear, weight_only_quantize
from framework.quantization.observers import AbsmaxObserver, HistObserver, MovingAverageAbsmaxObserver
from framework.quantization.quanters import FakeQuanterWithAbsMaxObserver


def _pair(rng: np.random.Generator) -> tuple:
    paddle = pytest.importorskip("paddle")
    w = rng.standard_normal((8, 4)).astype(np.float32) * 0.5
    b = rng.standard_normal(4).astype(np.float32) * 0.1
    pm = paddle.nn.Sequential(paddle.nn.Linear(8, 4))
    pm[0].weight.set_value(w)
    pm[0].bias.set_value(b)
    m = fw.nn.Sequential(fw.nn.Linear(8, 4))
    m[0].weight.set_value(w)
    m[0].bias.set_value(b)
    return paddle, pm, m


def test_qat_matches_paddle_outputs_scales_and_gradients():
    rng = np.random.default_rng(0)
    paddle, pm, m = _pair(rng)
    from paddle.quantization import QAT as PQAT
    from paddle.quantization import QuantConfig as PConfig
    from paddle.quantization.quanters import FakeQuanterWithAbsMaxObserver as PQ

    pq = PQAT(PConfig(activation=PQ(moving_rate=0.9), weight=PQ(moving_rate=0.9))).quantize(pm)
    q = QAT(
        QuantConfig(activation=FakeQuanterWithAbsMaxObserver(0.9), weight=FakeQuanterWithAbsMaxObserver(0.9))
    )
    qm = q.quantize(m)
    for step in range(2):
        x = rng.standard_normal((5, 8)).astype(np.float32) * (1 + step)
        py = pq(paddle.to_tensor(x))
        y = qm(fw.to_tensor(x))
        np.testing.assert_allclose(y.numpy(), py.numpy(), rtol=1e-5, atol=1e-6)
    pd = {n: p.numpy() for n, p in pq.named_parameters()}
    ours = {n: b.numpy() for n, b in qm.named_buffers()}
    for who in ("activation_quanter", "weight_quanter"):
        for pn, on in (("_scale", "_scale"), ("_state", "_moving_state"), ("_accum", "_accum")):
            np.testing.assert_allclose(ours[f"0.{who}.{on}"], pd[f"0.{who}.{pn}"], rtol=1e-6)
    g = rng.standard_normal((5, 4)).astype(np.float32)
    (py * paddle.to_tensor(g)).sum().backward()
    (y * fw.to_tensor(g)).sum().backward()
    np.testing.assert_allclose(qm[0].weight.grad.numpy(), pq[0].weight.grad.numpy(), rtol=1e-5, atol=1e-6)
    int8 = q.convert(qm)
    assert isinstance(int8[0], QuantizedLinear) and int8[0].weight.dtype == np.int8
    int8.eval()
    pq.eval()
    x = rng.standard_normal((3, 8)).astype(np.float32)
    np.testing.assert_allclose(
        int8(fw.to_tensor(x)).numpy(), pq(paddle.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-5
    )


def test_ptq_abs_max_matches_paddles_converted_model():
    rng = np.random.default_rng(1)
    paddle, pm, m = _pair(rng)
    from paddle.quantization import PTQ as PPTQ
    from paddle.quantization import QuantConfig as PConfig
    from paddle.quantization.observers import AbsmaxObserver as PObs

    pm.eval()
    m.eval()
    pptq = PPTQ(PConfig(activation=PObs(), weight=PObs()))
    ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver()))
    pq, q = pptq.quantize(pm), ptq.quantize(m)
    for _ in range(3):
        x = rng.standard_normal((6, 8)).astype(np.float32)
        pq(paddle.to_tensor(x))
        q(fw.to_tensor(x))
    pc, c = pptq.convert(pq), ptq.convert(q)
    x = rng.standard_normal((4, 8)).astype(np.float32) * 1.5  # some values past the calibrated range
    np.testing.assert_allclose(
        c(fw.to_tensor(x)).numpy(), pc(paddle.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-6
    )


def test_ptq_per_channel_weights_are_quantised_once_with_their_channel_scale():
    fw.seed(2)
    m = fw.nn.Sequential(fw.nn.Linear(16, 6), fw.nn.ReLU(), fw.nn.Linear(6, 3))
    ptq = PTQ(QuantConfig(activation=MovingAverageAbsmaxObserver(), weight=AbsmaxObserver(quant_axis=1)))
    q = ptq.quantize(m)
    x = fw.randn([32, 16])
    q(x)
    c = ptq.convert(q)
    w = m[0].weight.numpy()
    s = np.abs(w).max(0)
    np.testing.assert_array_equal(
        c[0].weight.numpy(), np.clip(np.round(w / s * 127), -127, 127).astype(np.int8)
    )
    np.testing.assert_allclose(c[0].weight_scale.numpy(), s, rtol=1e-6)
    ref = m(x).numpy()
    assert np.abs(c(x).numpy() - ref).max() < 0.03 * np.abs(ref).max()


def test_observers_against_numpy():
    rng = np.random.default_rng(3)
    batches = [rng.standard_normal((50, 4)).astype(np.float32) * k for k in (1.0, 3.0, 2.0)]
    mov = MovingAverageAbsmaxObserver(moving_rate=0.8)._instance(None)
    per_channel = AbsmaxObserver(quant_axis=1)._instance(None)
    hist = HistObserver(bins=4096, percent=0.99)._instance(None)
    state = accum = 0.0
    for b in batches:
        for o in (mov, per_channel, hist):
            assert o(fw.to_tensor(b)) is not None
        state, accum = 0.8 * state + 1, 0.8 * accum + np.abs(b).max()
    np.testing.assert_allclose(float(mov.scales()), accum / state, rtol=1e-6)
    np.testing.assert_allclose(
        per_channel.scales().numpy(), np.abs(np.concatenate(batches)).max(0), rtol=1e-6
    )
    every = np.abs(np.concatenate(batches)).ravel()
    want = np.quantile(every, 0.99)
    width = every.max() / 4096
    assert abs(float(hist.scales()) - want) < 3 * width + 0.02 * want  # rebinning moves counts by a bin


def test_config_priorities_weight_only_and_errors():
    fw.seed(4)
    m = fw.nn.Sequential(fw.nn.Linear(8, 8), fw.nn.Linear(8, 4))
    cfg = QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver())
    cfg.add_name_config("1", activation=None, weight=None)
    q = PTQ(cfg).quantize(m)
    assert type(q[0]).__name__ == "QuantedLinear" and type(q[1]).__name__ == "Linear"
    assert type(m[0]).__name__ == "Linear"  # not in place by default
    with pytest.raises(RuntimeError, match="layer '0' saw no data"):
        PTQ(cfg).convert(q)
    with pytest.raises(Exception, match=r"\[QuantConfig\] weight must be a quanter or observer factory"):
        QuantConfig(weight="abs_max")
    wo = weight_only_quantize(m, "int4", group_size=4, skip=("1",))
    assert type(wo[0]).__name__ == "WeightOnlyLinear" and type(wo[1]).__name__ == "Linear"
    x = fw.randn([2, 8])
    assert np.abs(wo(x).numpy() - m(x).numpy()).max() < 0.2 * np.abs(m(x).numpy()).max()
