"""``fw.optimizer`` (Paddle's spelling) and ``fw.optimizer.lr``: each optimizer's update
against a numpy re-derivation of Paddle's rule, each scheduler against its closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest

import framework as fw
from framework.optimizer import lr as L


def test_optim_alias_is_the_same_package():
    assert fw.optimizer.SGD is fw.optim.SGD and fw.optimizer.Adam is fw.optim.Adam
    assert fw.optimizer.AdamW is fw.optim.AdamW and fw.optimizer.Momentum is fw.optim.Momentum
    assert fw.optimizer.lr.StepDecay is fw.optim.lr.StepDecay
    # a true alias: the same module objects, submodules included
    import framework.optim.fused
    import framework.optim.lr

    from framework.optim import lr as old_lr

    assert fw.optim is fw.optimizer and old_lr is L and framework.optim.lr is fw.optimizer.lr
    assert framework.optim.fused is fw.optimizer.fused and fw.optim.lr.OneCycleLR is L.OneCycleLR


def _run(opt_cls, steps=3, **kw):
    """Minimise sum(w * c) + 0.5 * sum(w^2) for a few steps; returns the weight trajectory and
    the gradients seen (g = c + w)."""
    c = np.array([0.5, -1.0, 2.0])
    w = fw.nn.Parameter.from_tensor(fw.to_tensor([1.0, -2.0, 0.3], dtype="float64"))
    opt = opt_cls(parameters=[w], **kw)
    traj = []
    for _ in range(steps):
        loss = (w * fw.to_tensor(c)).sum() + (w * w).sum() * 0.5
        loss.backward()
        opt.step()
        opt.clear_grad()
        traj.append(np.array(w.tolist()))
    return traj, c


def _ref(update, steps=3):
    c = np.array([0.5, -1.0, 2.0])
    w = np.array([1.0, -2.0, 0.3])
    state: dict = {}
    out = []
    for t in range(1, steps + 1):
        w = update(w, c + w, t, state)
        out.append(w.copy())
    return out


def _check(got, want):
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_adagrad():
    def upd(w, g, t, s):
        s["m"] = s.get("m", 0.1) + g * g
        return w - 0.3 * g / (np.sqrt(s["m"]) + 1e-6)

    _check(_run(fw.optimizer.Adagrad, learning_rate=0.3, initial_accumulator_value=0.1)[0], _ref(upd))


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop(centered):
    def upd(w, g, t, s):
        s["r"] = 0.9 * s.get("r", 0.0) + 0.1 * g * g
        s["mg"] = 0.9 * s.get("mg", 0.0) + 0.1 * g
        den = np.sqrt(s["r"] - s["mg"] ** 2 + 1e-6) if centered else np.sqrt(s["r"] + 1e-6)
        s["v"] = 0.5 * s.get("v", 0.0) + 0.01 * g / den
        return w - s["v"]

    got = _run(fw.optimizer.RMSProp, learning_rate=0.01, rho=0.9, momentum=0.5, centered=centered)[0]
    _check(got, _ref(upd))


def test_adadelta():
    def upd(w, g, t, s):
        s["eg"] = 0.9 * s.get("eg", 0.0) + 0.1 * g * g
        dx = np.sqrt((s.get("ex", 0.0) + 1e-6) / (s["eg"] + 1e-6)) * g
        s["ex"] = 0.9 * s.get("ex", 0.0) + 0.1 * dx * dx
        return w - 0.5 * dx

    _check(_run(fw.optimizer.Adadelta, learning_rate=0.5, rho=0.9)[0], _ref(upd))


def test_adamax():
    def upd(w, g, t, s):
        s["m"] = 0.9 * s.get("m", 0.0) + 0.1 * g
        s["u"] = np.maximum(0.999 * s.get("u", 0.0) + 1e-8, np.abs(g))
        return w - 0.1 / (1 - 0.9**t) * s["m"] / s["u"]

    _check(_run(fw.optimizer.Adamax, learning_rate=0.1)[0], _ref(upd))


def test_lamb():
    def upd(w, g, t, s):
        s["m"] = 0.9 * s.get("m", 0.0) + 0.1 * g
        s["v"] = 0.999 * s.get("v", 0.0) + 0.001 * g * g
        r = (s["m"] / (1 - 0.9**t)) / (np.sqrt(s["v"] / (1 - 0.999**t)) + 1e-6) + 0.01 * w
        return w - 0.05 * np.linalg.norm(w) / np.linalg.norm(r) * r

    _check(_run(fw.optimizer.Lamb, learning_rate=0.05, lamb_weight_decay=0.01)[0], _ref(upd))


def test_step_counted_state_roundtrip():
    traj, _ = _run(fw.optimizer.Adamax, steps=2, learning_rate=0.1)
    w = fw.nn.Parameter.from_tensor(fw.to_tensor(traj[-1]))
    opt = fw.optimizer.Adamax(learning_rate=0.1, parameters=[w])
    opt.set_state_dict(
        {
            "param_0.t": 2,
            "param_0.moment": fw.to_tensor([0.0, 0.0, 0.0]),
            "param_0.inf_norm": fw.to_tensor([1.0, 1.0, 1.0]),
        }
    )
    assert opt.state_dict()["param_0.t"] == 2


def test_lbfgs_solves_a_quadratic():
    a = np.array([[3.0, 0.5], [0.5, 1.0]])
    b = np.array([1.0, -2.0])
    w = fw.nn.Parameter.from_tensor(fw.to_tensor([0.0, 0.0], dtype="float64"))
    opt = fw.optimizer.LBFGS(
        learning_rate=1.0, max_iter=100, tolerance_grad=1e-12, tolerance_change=1e-15, parameters=[w]
    )
    at, bt = fw.to_tensor(a), fw.to_tensor(b)

    def closure():
        opt.clear_grad()
        loss = (w * fw.matmul(at, w)).sum() * 0.5 - (w * bt).sum()
        loss.backward()
        return loss

    opt.step(closure)
    np.testing.assert_allclose(w.tolist(), np.linalg.solve(a, b), rtol=1e-6)
    with pytest.raises(fw.OpArgumentError, match="LBFGS"):
        fw.optimizer.LBFGS(parameters=[w], line_search_fn="strong_wolfe")


def _rates(s, n, metric=None):
    out = []
    for i in range(n):
        out.append(s())
        s.step() if metric is None else s.step(metric[i])
    return out


def test_existing_schedulers_through_optimizer_lr():
    np.testing.assert_allclose(_rates(L.StepDecay(1.0, 2, 0.5), 5), [1, 1, 0.5, 0.5, 0.25])
    np.testing.assert_allclose(_rates(L.MultiStepDecay(1.0, [1, 3], 0.1), 4), [1, 0.1, 0.1, 0.01])
    np.testing.assert_allclose(_rates(L.ExponentialDecay(1.0, 0.5), 3), [1, 0.5, 0.25])
    np.testing.assert_allclose(_rates(L.LambdaDecay(2.0, lambda e: 1 / (e + 1)), 3), [2, 1, 2 / 3])
    np.testing.assert_allclose(
        _rates(L.CosineAnnealingDecay(1.0, 4), 5), [(1 + math.cos(math.pi * e / 4)) / 2 for e in range(5)]
    )
    np.testing.assert_allclose(_rates(L.LinearWarmup(0.5, 2, 0.0, 1.0), 4), [0, 0.5, 0.5, 0.5])
    assert isinstance(L.StepDecay(1.0, 1), L.LRScheduler)


def test_polynomial_noam_piecewise():
    want = [(1 - 1e-4) * (1 - min(e, 4) / 4) ** 2 + 1e-4 for e in range(6)]
    np.testing.assert_allclose(_rates(L.PolynomialDecay(1.0, 4, power=2.0), 6), want)
    cyc = [(1 - 0) * (1 - e / (4 * max(1, math.ceil(e / 4)))) + 0 for e in range(7)]
    np.testing.assert_allclose(_rates(L.PolynomialDecay(1.0, 4, end_lr=0.0, cycle=True), 7), cyc)
    want = [2.0 * 16**-0.5 * min(1.0 if e == 0 else e**-0.5, 3**-1.5 * e) for e in range(6)]
    np.testing.assert_allclose(_rates(L.NoamDecay(16, 3, learning_rate=2.0), 6), want)
    assert _rates(L.PiecewiseDecay([1, 3], [0.3, 0.2, 0.1]), 5) == [0.3, 0.2, 0.2, 0.1, 0.1]


def test_one_cycle():
    s = L.OneCycleLR(
        1.0,
        total_steps=10,
        divide_factor=10.0,
        end_learning_rate=0.0,
        phase_pct=0.3,
        anneal_strategy="linear",
    )
    r = _rates(s, 10)
    assert r[0] == pytest.approx(0.1) and r[2] == pytest.approx(1.0) and r[9] == pytest.approx(0.0)
    np.testing.assert_allclose(r[1], 0.55)
    np.testing.assert_allclose(r[2:], [1.0 - (e - 2) / 7 for e in range(2, 10)], atol=1e-12)
    c = _rates(L.OneCycleLR(1.0, total_steps=10, phase_pct=0.3), 10)
    assert (
        c[2] == pytest.approx(1.0)
        and c[9] == pytest.approx(1e-4)
        and c[5] == pytest.approx(1e-4 + (1 - 1e-4) / 2 * (1 + math.cos(math.pi * 3 / 7)))
    )


def test_cosine_warm_restarts():
    want = [0.1 + 0.9 * (1 + math.cos(math.pi * (e % 3) / 3)) / 2 for e in range(7)]
    np.testing.assert_allclose(_rates(L.CosineAnnealingWarmRestarts(1.0, 3, eta_min=0.1), 7), want)
    # T_mult=2: cycles of 2, 4, 8 epochs
    pos = [(0, 2), (1, 2), (0, 4), (1, 4), (2, 4), (3, 4), (0, 8)]
    want = [(1 + math.cos(math.pi * e / t)) / 2 for e, t in pos]
    np.testing.assert_allclose(_rates(L.CosineAnnealingWarmRestarts(1.0, 2, T_mult=2), 7), want, atol=1e-12)


def test_reduce_on_plateau():
    s = L.ReduceOnPlateau(1.0, factor=0.5, patience=1, cooldown=1)
    metric = [1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95]
    r = _rates(s, 8, metric)
    assert r == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25]
    w = fw.nn.Parameter.from_tensor(fw.to_tensor([1.0]))
    opt = fw.optimizer.SGD(learning_rate=L.ReduceOnPlateau(0.1), parameters=[w])
    assert opt.get_lr() == pytest.approx(0.1)
    with pytest.raises(fw.OpArgumentError, match="ReduceOnPlateau"):
        L.ReduceOnPlateau(1.0).step()
