"""Optimizers, clipping and schedulers against hand-computed updates."""

from __future__ import annotations

import math

import numpy as np
import pytest

import framework as fw
import framework.nn as nn
from framework.optim import lr as L


def param(values):
    return nn.Parameter.from_tensor(fw.to_tensor(np.array(values, dtype=np.float64)))


def set_grad(p, g):
    p.grad = fw.to_tensor(np.array(g, dtype=np.float64))


def test_sgd_with_weight_decay():
    p = param([1.0, -2.0])
    opt = fw.optim.SGD(learning_rate=0.1, parameters=[p], weight_decay=0.5)
    set_grad(p, [0.2, 0.4])
    opt.step()
    # g + wd*p = [0.7, -0.6]; p - 0.1 * that
    np.testing.assert_allclose(p.numpy(), [0.93, -1.94])


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum(nesterov):
    p = param([1.0])
    opt = fw.optim.Momentum(learning_rate=0.1, momentum=0.9, parameters=[p], use_nesterov=nesterov)
    grads = [1.0, 2.0, -1.0]
    v, w = 0.0, 1.0
    for g in grads:
        set_grad(p, [g])
        opt.step()
        v = 0.9 * v + g
        w -= 0.1 * ((g + 0.9 * v) if nesterov else v)
        assert p.item() == pytest.approx(w, rel=1e-12)


@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
def test_adam_and_adamw(cls):
    p = param([0.5, -1.5])
    kw = {"weight_decay": 0.1} if cls == "AdamW" else {}
    opt = getattr(fw.optim, cls)(learning_rate=0.01, beta1=0.8, beta2=0.9, epsilon=1e-6, parameters=[p], **kw)
    w = np.array([0.5, -1.5])
    m = np.zeros(2)
    v = np.zeros(2)
    for t, g in enumerate([[0.1, -0.3], [0.2, 0.1], [-0.5, 0.4]], start=1):
        g = np.array(g)
        set_grad(p, g)
        opt.step()
        if cls == "AdamW":
            w = w * (1 - 0.01 * 0.1)
        m = 0.8 * m + 0.2 * g
        v = 0.9 * v + 0.1 * g * g
        w = w - 0.01 * (m / (1 - 0.8**t)) / (np.sqrt(v / (1 - 0.9**t)) + 1e-6)
        np.testing.assert_allclose(p.numpy(), w, rtol=1e-12)


def test_adam_l2_weight_decay_adds_to_gradient():
    p = param([2.0])
    opt = fw.optim.Adam(learning_rate=0.1, parameters=[p], weight_decay=0.5)
    set_grad(p, [0.0])
    opt.step()
    # g = 0 + 0.5 * 2 = 1 -> first Adam step moves by lr * sign(g) (up to epsilon)
    assert p.item() == pytest.approx(2.0 - 0.1, rel=1e-6)


def test_clip_grad_by_global_norm():
    a, b = param([3.0, 0.0]), param([4.0])
    set_grad(a, [3.0, 0.0])
    set_grad(b, [4.0])
    opt = fw.optim.SGD(learning_rate=1.0, parameters=[a, b], grad_clip=fw.optim.ClipGradByGlobalNorm(1.0))
    opt.step()
    # global norm 5 -> grads scaled by 1/5
    np.testing.assert_allclose(a.numpy(), [3.0 - 0.6, 0.0])
    np.testing.assert_allclose(b.numpy(), [4.0 - 0.8])
    c = param([1.0])
    set_grad(c, [0.1])
    fw.optim.SGD(learning_rate=1.0, parameters=[c], grad_clip=fw.optim.ClipGradByGlobalNorm(1.0)).step()
    assert c.item() == pytest.approx(0.9)


def test_clear_grad_and_state_dict_round_trip():
    p = param([1.0, 2.0])
    opt = fw.optim.Adam(learning_rate=0.1, parameters=[p])
    set_grad(p, [0.5, 0.5])
    opt.step()
    opt.clear_grad()
    assert p.grad is None
    sd = opt.state_dict()
    assert set(sd) == {"param_0.moment1", "param_0.moment2", "param_0.t", "step"}
    q = param(p.numpy())
    opt2 = fw.optim.Adam(learning_rate=0.1, parameters=[q])
    opt2.set_state_dict(sd)
    for o, prm in ((opt, p), (opt2, q)):
        set_grad(prm, [0.1, -0.2])
        o.step()
    np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-12)


def test_lr_schedulers_match_formulas():
    s = L.StepDecay(1.0, step_size=3, gamma=0.5)
    got = []
    for _ in range(7):
        got.append(s())
        s.step()
    assert got == [1, 1, 1, 0.5, 0.5, 0.5, 0.25]
    c = L.CosineAnnealingDecay(0.1, T_max=4, eta_min=0.01)
    vals = []
    for _ in range(5):
        vals.append(c())
        c.step()
    ref = [0.01 + 0.09 * (1 + math.cos(math.pi * e / 4)) / 2 for e in range(5)]
    np.testing.assert_allclose(vals, ref)
    w = L.LinearWarmup(L.CosineAnnealingDecay(0.1, T_max=10), warmup_steps=4, start_lr=0.0, end_lr=0.1)
    seq = []
    for _ in range(6):
        seq.append(w())
        w.step()
    np.testing.assert_allclose(seq[:5], [0.0, 0.025, 0.05, 0.075, 0.1])
    assert seq[5] == pytest.approx(0.01 * 0 + 0.1 * (1 + math.cos(math.pi / 10)) / 2)


def test_optimizer_uses_scheduler():
    p = param([0.0])
    sched = L.StepDecay(1.0, step_size=1, gamma=0.1)
    opt = fw.optim.SGD(learning_rate=sched, parameters=[p])
    for _ in range(2):
        set_grad(p, [1.0])
        opt.step()
        sched.step()
    assert p.item() == pytest.approx(-1.1)
    assert opt.get_lr() == pytest.approx(0.01)


def test_optimizer_argument_errors():
    with pytest.raises(fw.OpArgumentError, match="parameters="):
        fw.optim.SGD(learning_rate=0.1)
    with pytest.raises(fw.OpArgumentError, match="beta1"):
        fw.optim.Adam(parameters=[param([1.0])], beta1=1.5)


def test_training_a_linear_regression_converges():
    fw.seed(0)
    x = fw.randn([64, 3], dtype="float64")
    true_w = np.array([[1.0], [-2.0], [0.5]])
    y = fw.to_tensor(x.numpy() @ true_w)
    lin = nn.Linear(3, 1).to(dtype="float64")
    opt = fw.optim.Adam(learning_rate=0.1, parameters=lin.parameters())
    for _ in range(200):
        loss = nn.functional.mse_loss(lin(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
    np.testing.assert_allclose(lin.weight.numpy(), true_w, atol=1e-3)
