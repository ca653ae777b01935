"""Tier ``autograd``: the gradient rule of every differentiable primitive, run on the device,
against central finite differences of the numpy reference in float64.

The device differentiates in float64 when its plugin registers the op for float64, else in
float32 (with a looser tolerance); the finite differences never touch the device.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cases import Case, Target
from ..checks import CheckFailure, assert_close, finite_difference, put
from ..opdb import OPDB, OpInfo

TOL = {"float64": (1e-6, 1e-7), "float32": (2e-3, 2e-4)}


def _numeric_ref(info: OpInfo, attrs: dict[str, Any]) -> Any:
    a = dict(attrs)
    if "dtype" in a and np.dtype(a["dtype"]).kind == "f":
        a["dtype"] = np.dtype(np.float64)  # differentiate the float64 cast: no rounding noise

    def f(*xs: np.ndarray) -> np.ndarray:
        return np.asarray(info.ref(*xs, **a), np.float64)

    return f


def check_grad(name: str, dtype: str, device: str, seed: int = 0) -> dict[str, Any]:
    import framework as fw
    from framework._src.ops.base import OPS, apply

    info = OPDB[name]
    d = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    rtol, atol = TOL[dtype]
    assert info.grad_samples is not None
    n = 0
    for sample in info.grad_samples(d, rng):
        wanted = [i for i in info.grad_inputs if i < len(sample.ins) and sample.ins[i].dtype == d]
        if not wanted:
            continue
        ins = [put(a, device) for a in sample.ins]
        for i in wanted:
            ins[i].stop_gradient = False
        out = apply(OPS[name], ins, dict(sample.attrs))[0]
        w = rng.standard_normal(out.shape).astype(out.dtype)
        grads = fw.grad([out], [ins[i] for i in wanted], grad_outputs=[put(w, device)], allow_unused=True)
        xs64 = [a.astype(np.float64) if a.dtype == d else a for a in sample.ins]
        for i, g in zip(wanted, grads):
            num = finite_difference(_numeric_ref(info, sample.attrs), xs64, i, w.astype(np.float64))
            what = f"d/d(input {i}) of sum({name}(...) * w), {dtype}, {sample.label}"
            if g is None:
                if np.any(num != 0):
                    raise CheckFailure(f"{what}: autograd gave no gradient", num, None)
                continue
            assert_close(g.numpy().astype(np.float64), num, rtol, atol, what)
            n += 1
    return {"gradients": n}


def higher_order(device: str) -> None:
    """d2/dx2 sin(x) = -sin(x) with create_graph=True."""
    import framework as fw

    x0 = np.linspace(-2, 2, 9)
    x = fw.to_tensor(x0, dtype="float32", device=device, stop_gradient=False)
    (g,) = fw.grad([fw.sin(x).sum()], [x], create_graph=True)
    (gg,) = fw.grad([g.sum()], [x])
    assert_close(g.numpy(), np.cos(x0).astype(np.float32), 1e-5, 1e-6, "d/dx sin(x)")
    assert_close(gg.numpy(), (-np.sin(x0)).astype(np.float32), 1e-5, 1e-6, "d2/dx2 sin(x)")


def accumulate(device: str) -> None:
    """backward() twice accumulates into .grad; a chain through several primitives."""
    import framework as fw

    rng = np.random.default_rng(3)
    a0, b0 = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    a = fw.to_tensor(a0, dtype="float32", device=device, stop_gradient=False)
    b = fw.to_tensor(b0, dtype="float32", device=device, stop_gradient=False)
    for _ in range(2):
        loss = fw.tanh(a @ b).sum()
        loss.backward()
    t = np.tanh(a0 @ b0)
    ga = 2 * (1 - t * t) @ b0.T
    gb = 2 * a0.T @ (1 - t * t)
    assert_close(a.grad.numpy(), ga.astype(np.float32), 1e-4, 1e-5, "accumulated grad of a in sum(tanh(a @ b))")
    assert_close(b.grad.numpy(), gb.astype(np.float32), 1e-4, 1e-5, "accumulated grad of b in sum(tanh(a @ b))")


def cases(target: Target) -> list[Case]:
    out = []
    for name, info in OPDB.items():
        if not info.grad_inputs:
            continue
        dt = "float64" if target.registers(name, "float64") else "float32"
        cid = f"autograd/{name}[{dt}]"
        if target.registers(name, dt):
            out.append(Case(cid, "autograd", (lambda n=name, d=dt: check_grad(n, d, target.device)), op=name, dtype=dt))
        else:
            out.append(Case(f"autograd/{name}[float32]", "autograd", None, op=name, dtype="float32", preset="not_supported",
                            reason=f"no float32 or float64 {name} kernel to differentiate"))
    out.append(Case("autograd/higher_order", "autograd", lambda: higher_order(target.device)))
    out.append(Case("autograd/accumulate", "autograd", lambda: accumulate(target.device)))
    return out
