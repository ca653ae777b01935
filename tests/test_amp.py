"""``fw.amp`` (issue 17): auto_cast's allow/deny lists change the dtypes ops run in,
GradScaler's dynamic loss scaling (skip on inf/NaN, back off, grow), decorate's O2 master
weights; and a small model trains in bf16 close to its float32 curve."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from tests.conftest import assert_close

RNG = np.random.default_rng(5)


def _t(*shape):
    return fw.to_tensor(RNG.standard_normal(shape).astype(np.float32))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_auto_cast_runs_allow_ops_low_and_deny_ops_in_float32(dtype, device):
    a, b = _t(4, 3).to(device), _t(3, 5).to(device)
    with fw.amp.auto_cast(dtype=dtype):
        y = fw.matmul(a, b)
        e = fw.exp(a)
        s = F.softmax(y)
        lin = F.linear(a, b)
        conv = F.conv2d(_t(1, 2, 4, 4).to(device), _t(3, 2, 3, 3).to(device))
        g = a + a  # neither list: the inputs' dtype
    assert str(y.dtype) == dtype and str(lin.dtype) == dtype and str(conv.dtype) == dtype
    assert str(e.dtype) == "float32" and str(s.dtype) == "float32" and str(g.dtype) == "float32"
    tol = {"bfloat16": 2e-2, "float16": 2e-3}[dtype]
    np.testing.assert_allclose(
        y.numpy().astype(np.float64), a.numpy() @ b.numpy(), rtol=tol * 4, atol=tol * 4
    )
    assert str(fw.matmul(a, b).dtype) == "float32"  # outside the block: unchanged


def test_auto_cast_levels_lists_and_nesting():
    a, b = _t(2, 3), _t(3, 2)
    with fw.amp.auto_cast(enable=False, dtype="bfloat16"):
        assert str(fw.matmul(a, b).dtype) == "float32"
    with fw.amp.auto_cast(level="O0"):
        assert str(fw.matmul(a, b).dtype) == "float32"
    with fw.amp.auto_cast(dtype="bfloat16", custom_black_list=["matmul"], custom_white_list=["exp"]):
        assert str(fw.matmul(a, b).dtype) == "float32"
        assert str(fw.exp(a).dtype) == "bfloat16"
    with fw.amp.auto_cast(level="O2", dtype="bfloat16"):
        assert str((a + a).dtype) == "bfloat16"  # O2: ops off the deny list run low too
        assert str(fw.sum(a).dtype) == "float32"
        with fw.amp.auto_cast(enable=False):
            assert str((a + a).dtype) == "float32"
        assert str((a + a).dtype) == "bfloat16"
    with pytest.raises(fw.OpArgumentError, match=r"\[auto_cast\] dtype"):
        with fw.amp.auto_cast(dtype="float64"):
            pass
    with pytest.raises(fw.OpArgumentError, match=r"\[auto_cast\] level"):
        with fw.amp.auto_cast(level="O3"):
            pass


def test_gradients_reach_float32_parameters_in_float32():
    fw.seed(0)
    net = fw.nn.Linear(3, 2)
    x = _t(5, 3)
    with fw.amp.auto_cast(dtype="bfloat16"):
        out = net(x)
    loss = out.astype("float32").sum()
    loss.backward()
    assert str(net.weight.grad.dtype) == "float32"
    # d(sum(x W + b))/dW = x^T 1, computed from bf16-rounded x
    xb = x.numpy().astype(fw.bfloat16).astype(np.float64)
    np.testing.assert_allclose(net.weight.grad.numpy(), xb.T @ np.ones((5, 2)), rtol=2e-2, atol=2e-2)


def _step(scaler, net, opt, x, poison=False):
    loss = net(x).mean()
    scaler.scale(loss).backward()
    if poison:
        net.weight.grad = net.weight.grad * float("inf")
    scaler.step(opt)
    scaler.update()
    opt.clear_grad()


def test_grad_scaler_skips_an_inf_step_and_halves_the_scale():
    fw.seed(1)
    net = fw.nn.Linear(3, 1)
    opt = fw.optimizer.SGD(0.1, parameters=net.parameters())
    scaler = fw.amp.GradScaler(init_loss_scaling=1024.0, incr_every_n_steps=2)
    x = _t(4, 3)
    before = net.weight.numpy().copy()
    _step(scaler, net, opt, x, poison=True)
    assert scaler.found_inf() is False  # update() starts the next step
    np.testing.assert_array_equal(net.weight.numpy(), before)  # skipped
    assert scaler.get_loss_scaling() == 512.0
    # a good step: the update uses the unscaled gradient
    xn = x.numpy().astype(np.float64)
    want = before - 0.1 * xn.mean(0)[:, None]
    _step(scaler, net, opt, x)
    assert_close(net.weight, want.astype(np.float32), rtol=1e-5, atol=1e-6)
    assert scaler.get_loss_scaling() == 512.0
    _step(scaler, net, opt, x)
    assert scaler.get_loss_scaling() == 1024.0  # grows after incr_every_n_steps good steps
    state = scaler.state_dict()
    other = fw.amp.GradScaler()
    other.load_state_dict(state)
    assert other.get_loss_scaling() == 1024.0 and other.state_dict() == state


def test_grad_scaler_nan_backoff_floor_and_unscale_once():
    fw.seed(2)
    net = fw.nn.Linear(2, 1)
    opt = fw.optimizer.SGD(0.1, parameters=net.parameters())
    scaler = fw.amp.GradScaler(init_loss_scaling=2.0, decr_every_n_nan_or_inf=2)
    x = _t(3, 2)
    _step(scaler, net, opt, x, poison=True)
    assert scaler.get_loss_scaling() == 2.0  # one bad step of the two needed
    _step(scaler, net, opt, x, poison=True)
    assert scaler.get_loss_scaling() == 1.0
    _step(scaler, net, opt, x, poison=True)
    _step(scaler, net, opt, x, poison=True)
    assert scaler.get_loss_scaling() == 1.0  # never below 1
    loss = net(x).mean()
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    g = net.weight.grad.numpy().copy()
    scaler.unscale_(opt)  # a second call in the same step does not divide again
    np.testing.assert_array_equal(net.weight.grad.numpy(), g)
    off = fw.amp.GradScaler(enable=False)
    assert off.scale(loss) is loss and off.state_dict() == {}
    with pytest.raises(fw.OpArgumentError, match=r"\[GradScaler\]"):
        fw.amp.GradScaler(decr_ratio=1.5)


def test_decorate_o2_casts_parameters_but_not_norms_and_keeps_master_weights():
    fw.seed(3)
    net = fw.nn.Sequential(fw.nn.Linear(4, 8), fw.nn.LayerNorm(8), fw.nn.ReLU(), fw.nn.Linear(8, 1))
    opt = fw.optimizer.Adam(0.01, parameters=net.parameters())
    net, opt = fw.amp.decorate(net, opt, level="O2", dtype="bfloat16")
    assert str(net[0].weight.dtype) == "bfloat16" and str(net[1].weight.dtype) == "float32"
    assert all(str(m.dtype) == "float32" for m in opt.master_weights())
    x, y = _t(32, 4), _t(32, 1)
    scaler = fw.amp.GradScaler(init_loss_scaling=256.0)
    losses = []
    for _ in range(40):
        with fw.amp.auto_cast(level="O2", dtype="bfloat16"):
            loss = ((net(x).astype("float32") - y) ** 2).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.clear_grad()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0]
    assert str(net[0].weight.dtype) == "bfloat16"
    np.testing.assert_allclose(
        net[0].weight.numpy().astype(np.float32),
        opt.master_weights()[0].numpy().astype(fw.bfloat16).astype(np.float32),
    )
    same = fw.amp.decorate(fw.nn.Linear(2, 2), level="O1")
    assert str(same.weight.dtype) == "float32"


def test_bf16_o1_training_tracks_the_float32_curve():
    def run(amp):
        fw.seed(4)
        rng = np.random.default_rng(4)
        x = fw.to_tensor(rng.standard_normal((64, 8)).astype(np.float32))
        y = fw.to_tensor((rng.standard_normal((64, 8)) @ rng.standard_normal((8, 1))).astype(np.float32))
        net = fw.nn.Sequential(fw.nn.Linear(8, 16), fw.nn.Tanh(), fw.nn.Linear(16, 1))
        opt = fw.optimizer.Adam(0.02, parameters=net.parameters())
        out = []
        for _ in range(50):
            with fw.amp.auto_cast(enable=amp, dtype="bfloat16"):
                pred = net(x)
            loss = ((pred.astype("float32") - y) ** 2).mean()
            loss.backward()
            opt.step()
            opt.clear_grad()
            out.append(loss.item())
        return np.array(out)

    f32, bf16 = run(False), run(True)
    assert bf16[-1] < 0.5 * bf16[0]
    # bf16 keeps 8 bits of mantissa: the curves agree to 2 % of the starting loss
    assert np.abs(bf16 - f32).max() < 0.02 * f32[0], (f32[::10], bf16[::10])
