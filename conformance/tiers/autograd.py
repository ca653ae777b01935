"""Tier ``autograd``: the gradient rule of every differentiable primitive, run on the device,
against central finite differences of the numpy reference in float64; and the gradient at exact
ties (``autograd/ties/...``) against a numpy reading of the contract's tie rule.

The device differentiates in float64 when its plugin registers the op for float64, else in
float32 (with a looser tolerance); the finite differences never touch the device.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from framework.testing import gradient_tolerance, run_op, tolerance

from ..cases import Case, Target
from ..checks import CheckFailure, assert_close, finite_difference, put
from ..opdb import OPDB, OpInfo


def _numeric_ref(info: OpInfo, attrs: dict[str, Any]) -> Any:
    a = dict(attrs)
    if "dtype" in a and np.dtype(a["dtype"]).kind == "f":
        a["dtype"] = np.dtype(np.float64)  # differentiate the float64 cast: no rounding noise

    def f(*xs: np.ndarray) -> np.ndarray:
        return np.asarray(info.ref(*xs, **a), np.float64)

    return f


def check_grad(name: str, dtype: str, device: str, seed: int = 0) -> dict[str, Any]:
    import framework as fw

    info = OPDB[name]
    d = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    tol = gradient_tolerance(dtype)
    rtol, atol = tol.rtol, tol.atol
    assert info.grad_samples is not None
    n = 0
    for sample in info.grad_samples(d, rng):
        wanted = [i for i in info.grad_inputs if i < len(sample.ins) and sample.ins[i].dtype == d]
        if not wanted:
            continue
        ins = [put(a, device) for a in sample.ins]
        for i in wanted:
            ins[i].stop_gradient = False
        out = run_op(name, ins, sample.attrs)[0]
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
    assert_close(
        a.grad.numpy(), ga.astype(np.float32), 1e-4, 1e-5, "accumulated grad of a in sum(tanh(a @ b))"
    )
    assert_close(
        b.grad.numpy(), gb.astype(np.float32), 1e-4, 1e-5, "accumulated grad of b in sum(tanh(a @ b))"
    )


# -- gradients at ties -----------------------------------------------------------------------
# The contract's rule (adapter_api.primitives, "Gradients at ties"): maximum/minimum split the
# gradient 0.5/0.5 where x == y; max/min (amax/amin, max_pool2d) share it evenly among the tied
# elements, g / count; topk gives it to the index it returned (the lower one). Finite
# differences are meaningless at a kink, so the reference below is the rule itself, in numpy.
def _grid(rng: np.random.Generator, *shape: int, lo: int = -2, hi: int = 2) -> np.ndarray:
    """Multiples of 0.5 in [lo/2, hi/2]: exact in every float dtype, and many equal values."""
    return rng.integers(lo, hi + 1, shape).astype(np.float64) * 0.5


def _sum_to(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    g = g.sum(axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
    return g.sum(
        axis=tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1), keepdims=True
    ).reshape(shape)


def _binary_ref(largest: bool) -> Callable[..., list[np.ndarray]]:
    def grads(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
        picked = (x > y) if largest else (x < y)
        gx = np.where(picked, w, np.where(x == y, 0.5 * w, 0.0))
        return [_sum_to(gx, x.shape), _sum_to(w - gx, y.shape)]

    return grads


def _reduce_ref(
    largest: bool, axes: tuple[int, ...] | None, keepdim: bool = False
) -> Callable[..., list[np.ndarray]]:
    def grads(w: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
        ax = tuple(range(x.ndim)) if axes is None else axes
        best = (x.max if largest else x.min)(axis=ax, keepdims=True)
        tied = x == best
        wk = w.reshape(best.shape)  # keepdim or not, the same elements in the same order
        return [np.where(tied, wk / tied.sum(axis=ax, keepdims=True), 0.0)]

    return grads


def _pool_ref(k: int, s: int) -> Callable[..., list[np.ndarray]]:
    def grads(w: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
        g = np.zeros_like(x)
        for i in range(w.shape[2]):
            for j in range(w.shape[3]):
                win = x[:, :, i * s : i * s + k, j * s : j * s + k]
                tied = win == win.max(axis=(2, 3), keepdims=True)
                share = w[:, :, i, j][:, :, None, None] / tied.sum(axis=(2, 3), keepdims=True)
                g[:, :, i * s : i * s + k, j * s : j * s + k] += np.where(tied, share, 0.0)
        return [g]

    return grads


def _topk_ref(k: int) -> Callable[..., list[np.ndarray]]:
    def grads(w: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
        idx = np.argsort(-x, axis=-1, kind="stable")[..., :k]
        g = np.zeros_like(x)
        np.put_along_axis(g, idx, w, axis=-1)
        return [g]

    return grads


@dataclass
class TieCase:
    name: str
    #: (*tensors) -> Tensor, through run_op (a primitive) or the public API
    run: Callable[..., Any]
    #: float64 inputs with exact ties
    inputs: Callable[[np.random.Generator], list[np.ndarray]]
    #: (w, *float64 inputs) -> the gradient of sum(out * w) for each input, by the tie rule
    grads: Callable[..., list[np.ndarray]]
    #: the primitive whose kernel must exist in the dtype differentiated
    primitive: str


def _tie_cases() -> list[TieCase]:
    import framework as fw
    import framework.nn.functional as F

    def prim(name: str, **attrs: Any) -> Callable[..., Any]:
        return lambda *ts: run_op(name, ts, attrs)[0]

    def tied_pair(shape_x: tuple[int, ...], shape_y: tuple[int, ...]) -> Callable[..., list[np.ndarray]]:
        def gen(rng: np.random.Generator) -> list[np.ndarray]:
            x = _grid(rng, *shape_x)
            y = _grid(rng, *shape_y)
            if shape_x == shape_y:  # about half the elements tied, the rest on either side
                y = np.where(rng.random(shape_x) < 0.5, x, y)
            y[(0,) * y.ndim] = x[(0,) * x.ndim]  # and at least one tie, broadcast or not
            return [x, y]

        return gen

    rows = lambda *shape: lambda rng: [_grid(rng, *shape, lo=-1, hi=1)]  # noqa: E731  (few values: ties in every row)
    out: list[TieCase] = []
    for name, largest in (("maximum", True), ("minimum", False)):
        out.append(TieCase(f"{name}", prim(name), tied_pair((4, 6), (4, 6)), _binary_ref(largest), name))
        out.append(
            TieCase(f"{name}_broadcast", prim(name), tied_pair((3, 1), (1, 4)), _binary_ref(largest), name)
        )
    for name, largest in (("max", True), ("min", False)):
        out.append(
            TieCase(
                f"{name}_rows",
                prim(name, axes=(1,), keepdim=False),
                rows(5, 4),
                _reduce_ref(largest, (1,)),
                name,
            )
        )
        out.append(
            TieCase(
                f"{name}_axes_0_2_keepdim",
                prim(name, axes=(0, 2), keepdim=True),
                rows(2, 3, 4),
                _reduce_ref(largest, (0, 2)),
                name,
            )
        )
        out.append(
            TieCase(
                f"{name}_all_equal",
                prim(name, axes=(0, 1), keepdim=False),
                lambda rng: [np.full((3, 4), 0.5)],
                _reduce_ref(largest, None),
                name,
            )
        )
        public = fw.amax if largest else fw.amin
        a = "amax" if largest else "amin"
        out.append(
            TieCase(
                f"{a}_axis_-1",
                lambda x, f=public: f(x, axis=-1),
                rows(4, 5),
                _reduce_ref(largest, (1,)),
                name,
            )
        )
        out.append(
            TieCase(f"{a}_all", lambda x, f=public: f(x), rows(3, 5), _reduce_ref(largest, None), name)
        )
    out.append(
        TieCase("max_pool2d", lambda x: F.max_pool2d(x, 2, 2), rows(2, 2, 4, 6), _pool_ref(2, 2), "max")
    )
    out.append(
        TieCase(
            "max_pool2d_overlapping",
            lambda x: F.max_pool2d(x, 3, 1),
            rows(1, 2, 5, 5),
            _pool_ref(3, 1),
            "max",
        )
    )
    out.append(TieCase("topk", lambda x: fw.topk(x, 3)[0], rows(4, 7), _topk_ref(3), "argmax"))
    return out


def check_ties(case: TieCase, dtype: str, device: str, seed: int = 0) -> dict[str, Any]:
    import framework as fw

    rng = np.random.default_rng(seed)
    xs = case.inputs(rng)
    ins = [put(a.astype(dtype), device) for a in xs]
    for t in ins:
        t.stop_gradient = False
    out = case.run(*ins)
    w = rng.standard_normal(out.shape).astype(dtype)
    grads = fw.grad([out], ins, grad_outputs=[put(w, device)], allow_unused=True)
    want = case.grads(w.astype(np.float64), *xs)
    tol = tolerance(dtype, 4.0)  # g * 0.5 is exact; g / 3 and the sums over broadcast rows round
    for i, (g, ref) in enumerate(zip(grads, want)):
        what = f"d/d(input {i}) of sum({case.name}(...) * w) at exact ties, {dtype} (tie rule: adapter_api.primitives)"
        if g is None:
            raise CheckFailure(f"{what}: autograd gave no gradient", ref, None)
        assert_close(g.numpy().astype(np.float64), ref, tol.rtol, tol.atol, what)
    return {"gradients": len(want)}


def cases(target: Target) -> list[Case]:
    out = []
    for name, info in OPDB.items():
        if not info.grad_inputs:
            continue
        dt = "float64" if target.registers(name, "float64") else "float32"
        cid = f"autograd/{name}[{dt}]"
        if target.registers(name, dt):
            out.append(
                Case(
                    cid, "autograd", (lambda n=name, d=dt: check_grad(n, d, target.device)), op=name, dtype=dt
                )
            )
        else:
            out.append(
                Case(
                    f"autograd/{name}[float32]",
                    "autograd",
                    None,
                    op=name,
                    dtype="float32",
                    preset="not_supported",
                    reason=f"no float32 or float64 {name} kernel to differentiate",
                )
            )
    for tc in _tie_cases():
        dt = "float64" if target.registers(tc.primitive, "float64") else "float32"
        cid = f"autograd/ties/{tc.name}[{dt}]"
        if target.registers(tc.primitive, dt):
            out.append(
                Case(
                    cid,
                    "autograd",
                    (lambda tc=tc, d=dt: check_ties(tc, d, target.device)),
                    op=f"{tc.name} (ties)",
                    dtype=dt,
                )
            )
        else:
            out.append(
                Case(
                    f"autograd/ties/{tc.name}[float32]",
                    "autograd",
                    None,
                    op=f"{tc.name} (ties)",
                    dtype="float32",
                    preset="not_supported",
                    reason=f"no float32 or float64 {tc.primitive} kernel to differentiate",
                )
            )
    out.append(Case("autograd/higher_order", "autograd", lambda: higher_order(target.device)))
    out.append(Case("autograd/accumulate", "autograd", lambda: accumulate(target.device)))
    return out
