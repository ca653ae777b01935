"""The optimizer update as one program (framework.optimizer.fused): SGD, Momentum, Adam and AdamW
run fused give the parameters and states the eager update gives (weight decay, an LR
schedule, parameters left without a gradient, clipping), on every device; AdamW equals a
numpy reference; the program is one kernel (a group per parameter, merged); the tensors stay the
same objects; OARLOCK_COMPILE=0 keeps the eager update; a to_static training step runs it."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from framework import compiler

SHAPES = [(6, 5), (5,), (3, 4, 2), (7,)]


def make_params(device, seed=0):
    rng = np.random.default_rng(seed)
    return [
        fw.nn.Parameter.from_tensor(fw.to_tensor(rng.standard_normal(s).astype(np.float32), device=device))
        for s in SHAPES
    ]


def grads_for(step, seed=1):
    rng = np.random.default_rng(seed + step)
    return [rng.standard_normal(s).astype(np.float32) for s in SHAPES]


OPTIMIZERS = {
    "sgd": lambda ps, f: fw.optim.SGD(fw.optim.lr.StepDecay(0.1, step_size=2, gamma=0.5), ps, 0.01, fused=f),
    "momentum": lambda ps, f: fw.optim.Momentum(
        fw.optim.lr.StepDecay(0.1, step_size=2, gamma=0.5),
        0.9,
        ps,
        use_nesterov=True,
        weight_decay=0.01,
        grad_clip=fw.optim.ClipGradByGlobalNorm(1.0),
        fused=f,
    ),
    "adam": lambda ps, f: fw.optim.Adam(
        fw.optim.lr.CosineAnnealingDecay(0.05, T_max=4),
        parameters=ps,
        weight_decay=0.02,
        grad_clip=fw.optim.ClipGradByGlobalNorm(1.0),
        amsgrad=True,
        fused=f,
    ),
    "adamw": lambda ps, f: fw.optim.AdamW(
        fw.optim.lr.StepDecay(0.05, step_size=2, gamma=0.5),
        parameters=[{"params": ps[:3]}, {"params": ps[3:], "weight_decay": 0.0, "learning_rate": 0.5}],
        weight_decay=0.1,
        grad_clip=fw.optim.ClipGradByGlobalNorm(2.0),
        fused=f,
    ),
}


def train(name, device, fused, steps=5):
    """``steps`` updates with the last parameter left without a gradient on even steps;
    returns the parameters, the optimizer and the tensor objects before training."""
    ps = make_params(device)
    opt = OPTIMIZERS[name](ps, fused)
    sched = opt._learning_rate
    for k in range(steps):
        for i, (p, g) in enumerate(zip(ps, grads_for(k))):
            p.grad = None if (i == len(ps) - 1 and k % 2 == 0) else fw.to_tensor(g, device=device)
        opt.step()
        sched.step()
    return ps, opt


def states(opt, ps):
    return [{k: v for k, v in opt._state.get(id(p), {}).items()} for p in ps]


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_fused_update_equals_eager(device, name):
    eager, eopt = train(name, device, False)
    fused, fopt = train(name, device, True)
    assert fopt._fused_update is not None and fopt._fused_update.last is not None
    assert eopt._fused_update is None
    for a, b in zip(eager, fused):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)
    for sa, sb in zip(states(eopt, eager), states(fopt, fused)):
        assert set(sa) == set(sb)
        for k in sa:
            va, vb = sa[k], sb[k]
            if isinstance(va, fw.Tensor):
                np.testing.assert_allclose(vb.numpy(), va.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
            else:
                assert va == vb, k  # the step counter (the parameter without a gradient lags)
    if name.startswith("adam"):  # the last parameter skipped steps: a scalar set of its own
        assert fopt._state[id(fused[-1])]["t"] == 2 and fopt._state[id(fused[0])]["t"] == 5


def test_adamw_equals_numpy(device):
    ps = make_params(device)
    ref = [p.numpy().astype(np.float64) for p in ps]
    m = [np.zeros_like(r) for r in ref]
    v = [np.zeros_like(r) for r in ref]
    clip, lr, wd, b1, b2, eps = 2.0, 0.01, 0.1, 0.9, 0.999, 1e-8
    opt = fw.optim.AdamW(
        lr, parameters=ps, weight_decay=wd, grad_clip=fw.optim.ClipGradByGlobalNorm(clip), fused=True
    )
    for t in range(1, 4):
        gs = grads_for(t)
        for p, g in zip(ps, gs):
            p.grad = fw.to_tensor(g, device=device)
        opt.step()
        norm = np.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in gs))
        scale = clip / max(norm, clip)
        for i, g in enumerate(gs):
            g = g * scale
            ref[i] = ref[i] * (1 - lr * wd)
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            ref[i] = ref[i] - lr / (1 - b1**t) * m[i] / (np.sqrt(v[i] / (1 - b2**t)) + eps)
    for p, r in zip(ps, ref):
        np.testing.assert_allclose(p.numpy(), r, rtol=1e-5, atol=1e-6)


def test_tensors_stay_the_same_objects(device):
    ps = make_params(device)
    opt = fw.optim.Adam(0.1, parameters=ps, fused=True)
    for p, g in zip(ps, grads_for(0)):
        p.grad = fw.to_tensor(g, device=device)
    before = [p.numpy() for p in ps]
    opt.step()
    held = {id(p): dict(opt._state[id(p)]) for p in ps}
    for p, g in zip(ps, grads_for(1)):
        p.grad = fw.to_tensor(g, device=device)
    opt.step()
    for p, b in zip(ps, before):
        assert not np.allclose(p.numpy(), b)
        for k, t in held[id(p)].items():
            if isinstance(t, fw.Tensor):  # the state tensors are updated in place too
                assert opt._state[id(p)][k] is t


def test_the_update_is_one_kernel(device):
    if not compiler.has_compile_access(device):
        pytest.skip(f"{device} has no compile access")
    ps = make_params(device)
    opt = fw.optim.AdamW(0.01, parameters=ps, fused=True)
    for p, g in zip(ps, grads_for(0)):
        p.grad = fw.to_tensor(g, device=device)
    opt.step()
    fu = opt._fused_update
    # the whole update of every parameter (decay, both moments, bias corrections, the step)
    # is one generated group per parameter, and the groups, independent, one kernel
    # (framework.ir.passes.horizontal): no element-wise op is left unfused
    assert fu.launches() == 1
    names = [op.name for op in fu.last.program.block.ops]
    assert sum(n.startswith("fused.h") for n in names) == 1, names
    (h,) = [fw.ir.passes.horizontal.HGROUPS[n] for n in names if n.startswith("fused.h")]
    assert len(h.parts) == len(ps)
    assert not [n for n in names if n in ("op.add", "op.mul", "op.sub", "op.div", "op.sqrt")]


def test_unfused_program_launches_every_op(device, monkeypatch):
    """With the compiler off, fused=True still runs the program, op by op: what fusion saves."""
    monkeypatch.setenv("OARLOCK_COMPILE", "0")
    ps = make_params(device)
    opt = fw.optim.AdamW(0.01, parameters=ps, fused=True)
    for p, g in zip(ps, grads_for(0)):
        p.grad = fw.to_tensor(g, device=device)
    opt.step()
    assert opt._fused_update.launches() >= 10 * len(ps)


def test_compile_off_keeps_the_eager_update(device, monkeypatch):
    monkeypatch.setenv("OARLOCK_COMPILE", "0")
    ps = make_params(device)
    opt = fw.optim.Adam(0.1, parameters=ps)  # fused=None follows the compiler
    for p, g in zip(ps, grads_for(0)):
        p.grad = fw.to_tensor(g, device=device)
    opt.step()
    assert opt._fused_update is None or opt._fused_update.last is None


def test_fused_argument_is_checked():
    with pytest.raises(fw.OpArgumentError, match=r"\[SGD\] fused must be None, True or False"):
        fw.optim.SGD(0.1, parameters=make_params("cpu"), fused="yes")


def test_to_static_training_step_runs_the_update_program(device):
    def run(static):
        fw.seed(3)
        net = fw.nn.Sequential(fw.nn.Linear(8, 16), fw.nn.Tanh(), fw.nn.Linear(16, 3)).to(device)
        opt = fw.optim.AdamW(0.01, parameters=net.parameters(), fused=None if static else False)
        rng = np.random.default_rng(7)
        x = fw.to_tensor(rng.standard_normal((6, 8)).astype(np.float32), device=device)
        y = fw.to_tensor(rng.integers(0, 3, 6).astype(np.int64), device=device)

        def step(x, y):
            loss = fw.nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss

        if static:
            step = fw.jit.to_static(step)
        losses = [float(step(x, y).item()) for _ in range(4)]
        return losses, [p.numpy() for p in net.parameters()], opt

    l_eager, p_eager, _ = run(False)
    l_static, p_static, opt = run(True)
    np.testing.assert_allclose(l_static, l_eager, rtol=1e-5)
    for a, b in zip(p_eager, p_static):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    if compiler.has_compile_access(device):
        assert opt._fused_update is not None and opt._fused_update.last is not None


def test_a_clip_that_reads_values_runs_eagerly_with_a_warning(device):
    def clip_on_host(pairs):  # reads a value on the host: cannot be traced into a program
        norm = float(sum(float((g * g).sum().numpy()) for _, g in pairs)) ** 0.5
        return [(p, g * min(1.0, 1.0 / norm)) for p, g in pairs]

    out = []
    for fused in (False, True):
        ps = make_params(device)
        opt = fw.optim.SGD(0.1, parameters=ps, grad_clip=clip_on_host, fused=fused)
        for k in range(2):
            for p, g in zip(ps, grads_for(k)):
                p.grad = fw.to_tensor(g, device=device)
            if fused and k == 0:
                with pytest.warns(UserWarning, match=r"\[SGD.step\] the update cannot run as a program"):
                    opt.step()
            else:
                opt.step()
        out.append([p.numpy() for p in ps])
    for a, b in zip(*out):
        np.testing.assert_allclose(b, a, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_half_precision_parameters_update_as_eager(device, name, dtype):
    # bfloat16's numpy dtype string is '<V2' (a raw 2-byte void): the update's scalars once
    # took that string as their dtype and the step raised a TypeError from numpy
    def run(fused):
        rng = np.random.default_rng(3)
        ps = [
            fw.nn.Parameter.from_tensor(
                fw.to_tensor(rng.standard_normal(s).astype(np.float32), device=device).astype(dtype)
            )
            for s in SHAPES
        ]
        opt = OPTIMIZERS[name](ps, fused)
        for k in range(3):
            for p, g in zip(ps, grads_for(k)):
                p.grad = fw.to_tensor(g, device=device).astype(dtype)
            opt.step()
            opt._learning_rate.step()
        return ps, opt

    eager, _ = run(False)
    fused, fopt = run(True)
    assert fopt._fused_update is not None and fopt._fused_update.last is not None
    for a, b in zip(eager, fused):
        assert str(b.dtype) == dtype and b.dtype == a.dtype
        tol = 1e-2 if dtype == "bfloat16" else 2e-3
        np.testing.assert_allclose(
            b.astype("float32").numpy(), a.astype("float32").numpy(), rtol=tol, atol=tol
        )
