"""Fusion groups drawn at random from the ops the compiler lowers, built on every device with
compile access: each must build (no CompileWarning) and give what the unfused ops give.

The bugs it found: a value kept for a later pass of a multi-pass row kernel (a reduction, then
element-wise work, then another reduction: Linear -> GELU -> LayerNorm) was stored by a pass
that never computed it (``'v14' undeclared``); a value kept in an output's row was read back
by a pass after the one that stores that output (seed 3: cos -> logsumexp -> ..., 9 % off); a
traced whole step differentiated erfinv's decomposition (``where(|x| == 1, x * inf, y)``: 0 *
inf = NaN, seeds 2 and 8) where eager uses its gradient rule."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework.compiler import CompileWarning, loop_ir
from framework.ir import passes

#: discontinuous ops: one ulp between the fused and unfused values may flip their result
_JUMPS = {"floor", "ceil", "sign", "remainder", "floor_divide", "round", "hardshrink", "softshrink"}
#: public names of ops named otherwise in the IR
_ALIASES = {"mul": "multiply", "sub": "subtract", "div": "divide"}
#: input domains tried in order for each unary op (the first where it is finite everywhere)
_DOMAINS = (lambda v: v, lambda v: v.abs() + 0.5, lambda v: fw.tanh(v) * 0.9)


def _probe_unary(fn):
    x = fw.to_tensor(np.linspace(-3, 3, 24, dtype=np.float32).reshape(3, 8))
    for dom in _DOMAINS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                y = fn(dom(x))
        except Exception:  # noqa: BLE001 — not callable with one tensor: not a unary op
            return None
        if isinstance(y, fw.Tensor) and y.shape == x.shape and y.dtype == np.float32:
            if np.isfinite(y.numpy()).all():
                return dom
    return None


def _pools():
    """(unary, binary) ops of the compiler's lowering table, callable by their public name."""
    unary, binary = [], []
    x = fw.ones([3, 8])
    for name in sorted(loop_ir.OPS):
        if name in _JUMPS:
            continue
        public = _ALIASES.get(name, name)
        fn = getattr(F, public, None) or getattr(fw, public, None)
        if not callable(fn):
            continue
        dom = _probe_unary(fn)
        if dom is not None:
            unary.append((name, lambda v, fn=fn, dom=dom: fn(dom(v))))
            continue
        try:
            y = fn(x, x + 1.0)
        except Exception:  # noqa: BLE001 — not a binary op on two tensors
            continue
        if isinstance(y, fw.Tensor) and y.shape == x.shape and y.dtype == np.float32:
            safe = (lambda a, b, fn=fn: fn(a, b.abs() + 0.5)) if name in ("div", "pow") else fn
            if name == "pow":
                safe = lambda a, b, fn=fn: fn(a.abs() + 0.5, fw.tanh(b))  # noqa: E731
            binary.append((name, safe))
    rows = [  # row reductions broadcast back: the multi-pass kernels
        ("layer_norm", lambda v: F.layer_norm(v, v.shape[-1])),
        ("center_max", lambda v: v - fw.max(v, axis=-1, keepdim=True)),
        ("scale_sum", lambda v: v / (fw.sum(v.abs(), axis=-1, keepdim=True) + 1.0)),
        ("logsumexp", lambda v: v - fw.logsumexp(v, axis=-1, keepdim=True)),
    ]
    return unary, binary, rows


UNARY, BINARY, ROWS = _pools()


def _mix(v, scale: float):
    """``v @ m`` for a fixed [N, N] matrix (a Linear's product): the fusion groups end there."""
    n = v.shape[-1]
    m = np.cos(np.arange(n * n, dtype=np.float32).reshape(n, n)) * (scale / np.sqrt(n))
    return fw.matmul(v, fw.to_tensor(m.astype(np.float32), device=v.device))


def _program(seed: int):
    """A random chain over x [R, N] and a row vector w [N]; returns (fn, names)."""
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(int(rng.integers(4, 9))):
        kind = str(rng.choice(["unary", "binary", "row", "linear"], p=[0.35, 0.2, 0.25, 0.2]))
        if kind == "linear":  # a product between groups (Linear -> GELU -> LayerNorm -> Linear)
            scale = float(rng.uniform(0.3, 1.0))
            steps.append((kind, "linear", lambda v, s=scale: _mix(v, s), 0))
            continue
        pool = {"unary": UNARY, "binary": BINARY, "row": ROWS}[kind]
        name, fn = pool[int(rng.integers(len(pool)))]
        other = int(rng.integers(3))  # binary: 0 the weight row, 1 the input, 2 an earlier value
        steps.append((kind, name, fn, other))
    keep = int(rng.integers(1, len(steps)))  # an earlier value returned too (a second output)

    def f(x, w):
        vals = [x]
        for kind, _, fn, other in steps:
            v = vals[-1]
            if kind == "binary":
                b = w if other == 0 else x if other == 1 else vals[len(vals) // 2]
                v = fn(v, b)
            else:
                v = fn(v)
            vals.append(v)
        return vals[-1], vals[keep]

    return f, [n for _, n, _, _ in steps]


def test_the_pools_are_drawn_from_the_lowering_table():
    names = {n for n, _ in UNARY} | {n for n, _ in BINARY}
    assert {"exp", "tanh", "gelu", "sigmoid", "add", "mul", "maximum"} <= names, sorted(names)
    assert names <= set(loop_ir.OPS)
    assert len(UNARY) >= 15 and len(BINARY) >= 4


class _Chain(fw.nn.Layer):
    """A random chain with a trainable row ``w`` (and the chain's products' fixed matrices)."""

    def __init__(self, fn, w: np.ndarray) -> None:
        super().__init__()
        self.fn = fn
        self.w = self.create_parameter(list(w.shape))
        self.w.set_value(w)

    def forward(self, x):
        return self.fn(x + self.w, self.w)  # a bias first: every output depends on w


def _steps(seed: int, dev: str, static: bool) -> list[np.ndarray]:
    """Two SGD steps of the chain as one function (forward, backward, update: Paddle's
    whole-step to_static, where forward and backward ops share fusion groups); the losses,
    the trained row and the last input gradient."""
    fn, _ = _program(seed)
    rng = np.random.default_rng(100 + seed)
    rows, n = int(rng.integers(2, 6)), int(rng.choice([8, 17, 32]))
    x = fw.to_tensor(rng.standard_normal((rows, n)).astype(np.float32), device=dev)
    coef = rng.standard_normal(4)
    with fw.device(dev):
        net = _Chain(fn, rng.standard_normal(n).astype(np.float32))
    opt = fw.optimizer.SGD(0.05, parameters=net.parameters())

    def step(x):
        outs = net(x)
        loss = (outs[0] * float(coef[0])).sum() + (outs[1] * float(coef[1])).sum()
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    run = fw.jit.to_static(step) if static else step
    losses = [run(x).numpy() for _ in range(2)]
    return [*losses, net.w.numpy()]


@pytest.mark.parametrize("seed", range(10))
def test_random_fusion_groups_build_and_match_the_unfused_ops(dev, seed, monkeypatch):
    _, names = _program(seed)
    monkeypatch.setenv("OARLOCK_COMPILE", "0")
    want = _steps(seed, dev, static=False)
    monkeypatch.delenv("OARLOCK_COMPILE")
    before = passes.fusion_stats()["failed"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)  # a group that does not build fails here
        got = _steps(seed, dev, static=True)
    assert passes.fusion_stats()["failed"] == before, names
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=5e-4, atol=5e-5, err_msg=" -> ".join(names))


def test_the_linear_gelu_layernorm_linear_step_builds_fused(dev):
    """The issue's case: a whole training step under to_static builds every group."""
    fw.seed(0)
    with fw.device(dev):
        net = fw.nn.Sequential(fw.nn.Linear(16, 32), fw.nn.GELU(), fw.nn.LayerNorm(32), fw.nn.Linear(32, 4))
        ref = fw.nn.Sequential(fw.nn.Linear(16, 32), fw.nn.GELU(), fw.nn.LayerNorm(32), fw.nn.Linear(32, 4))
    for p, q in zip(net.parameters(), ref.parameters()):
        q.set_value(fw.to_tensor(p.numpy().copy(), device=dev))
    opts = [fw.optimizer.SGD(0.1, parameters=m.parameters()) for m in (net, ref)]

    def step(m, opt, x, y):
        loss = ((m(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    sstep = fw.jit.to_static(step)
    rng = np.random.default_rng(0)
    x = fw.to_tensor(rng.standard_normal((8, 16)).astype(np.float32), device=dev)
    y = fw.to_tensor(rng.standard_normal((8, 4)).astype(np.float32), device=dev)
    before = passes.fusion_stats()["failed"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for _ in range(3):
            got = sstep(net, opts[0], x, y)
            want = step(ref, opts[1], x, y)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-6)
    assert passes.fusion_stats()["failed"] == before
    np.testing.assert_allclose(net[0].weight.numpy(), ref[0].weight.numpy(), rtol=1e-4, atol=1e-6)


def test_a_value_kept_for_a_later_pass_is_not_read_after_its_output_is_stored(dev):
    """cos(x) is kept in the row of exp(cos(x) - max) (stored by the second of three passes);
    the third pass needs cos(x) too and must not read it from that row (seed 3's bug)."""

    def f(x):
        y = fw.cos(x)
        m = fw.max(y, axis=-1, keepdim=True)
        e = fw.exp(y - m)
        lse = fw.log(fw.sum(e, axis=-1, keepdim=True)) + m
        return e, fw.abs(y - lse + x) + 0.5

    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    y = np.cos(x)
    m = y.max(-1, keepdims=True)
    e = np.exp(y - m)
    want = (e, np.abs(y - (np.log(e.sum(-1, keepdims=True)) + m) + x) + 0.5)
    before = passes.fusion_stats()["kernels"]
    got = fw.jit.to_static(f)(fw.to_tensor(x, device=dev))
    assert passes.fusion_stats()["kernels"] > before  # the group was built, not run unfused
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-6)


def test_a_traced_step_takes_the_composites_gradient_rule():
    """The program's backward of erfinv is eager's (its rule), not its decomposition's tape
    (``where(|x| == 1, x * inf, y)``'s tape gives 0 * inf = NaN everywhere)."""
    x0 = np.array([[-0.9, -0.3, 0.0, 0.5, 0.99]], np.float32)

    def grad_of(fn):
        x = fw.to_tensor(x0, stop_gradient=False)
        fn(x).backward()
        return x.grad.numpy()

    def step(x):
        return fw.erfinv(x).sum()

    want = np.sqrt(np.pi) / 2 * np.exp(np.square(_erfinv_ref(x0)))
    np.testing.assert_allclose(grad_of(step), want, rtol=1e-4)
    np.testing.assert_allclose(grad_of(fw.jit.to_static(step)), want, rtol=1e-4)


def _erfinv_ref(x: np.ndarray) -> np.ndarray:
    """erfinv by bisection on math.erf (an independent reference)."""
    import math

    out = np.empty_like(x, dtype=np.float64)
    for i, v in np.ndenumerate(x):
        lo, hi = -6.0, 6.0
        for _ in range(80):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if math.erf(mid) < v else (lo, mid)
        out[i] = (lo + hi) / 2
    return out


def test_a_comparison_in_a_group_compares_loaded_values(dev):
    """Seed 2's backward has max's gradient eq(x, max(x)) with x computed in the group (a
    comparison pulled into a growing group, or groups merged later). It must not join the
    group that computes x: a multi-pass kernel recomputes x in
    each pass, and gcc vectorises one pass (libmvec's expf) but not another (glibc's scalar
    expf), so the recomputed x differs by an ulp from the x the max was taken over, nothing
    equals the max and the gradient divides 0 by 0 (all NaN). An equality against a max
    takes its operands as inputs of the group (max's gradient, a separate kernel here)."""
    from framework.ir.passes import fusion

    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        _steps(2, dev, static=True)
    bodies = [g.body for g in fusion.GROUPS.values()]  # this process's groups, seed 2's among them
    assert bodies
    for body in bodies:
        for op in body.block.ops:
            if op.name in ("op.eq", "op.ne"):
                made = {v.defining_op.name for v in op.operands if v.defining_op is not None}
                assert not made & {"op.max", "op.min"}, (op, made)
