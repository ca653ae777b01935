"""The fusion pass over programs (framework.ir.passes.fusion with framework.compiler.fused):
to_static programs run their element-wise, broadcast, row-reduction and reshape ops as
generated kernels across op boundaries; results equal numpy, eager and the unfused program
(OARLOCK_COMPILE=0) on every device with compile access, forward and training; one kernel
serves every batch size; a kernel that does not build runs its ops unfused with a warning and
a count; OARLOCK_PRINT_IR=fusion prints the groups and their source."""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework import compiler
from framework.compiler import eager as _eager
from framework.ir import passes
from framework.ir.passes import fusion
from framework.static import InputSpec
from tests.conftest import arr

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_static(fn, args, spec=None, compile_=True, monkeypatch=None):
    """``fn`` under to_static (no grad) with the compiler on or off; returns (outputs, the
    executor's program)."""
    if not compile_:
        monkeypatch.setenv("OARLOCK_COMPILE", "0")
    try:
        sf = fw.jit.to_static(fn, input_spec=spec)
        with fw.no_grad():
            out = sf(*args)
    finally:
        if not compile_:
            monkeypatch.delenv("OARLOCK_COMPILE")
    outs = [out] if isinstance(out, fw.Tensor) else list(out)
    return [o.numpy() for o in outs], sf.programs[-1].executor.program


def op_names(program):
    return [op.name for op in program.block.ops]


def fused(program):
    return [op for op in program.block.ops if op.name.startswith("fused.")]


def assert_no_elementwise_left(program):
    left = [n for n in op_names(program) if n in ("op.add", "op.mul", "op.sub", "op.div", "op.exp", "op.sum")]
    assert not left, f"unfused element-wise ops remain: {left}\n{program}"


# -- the groups of the issue ----------------------------------------------------------------
def test_residual_add_and_rms_norm_are_one_kernel(dev, monkeypatch):
    rng = np.random.default_rng(0)
    h, a, w = arr(rng, 4, 6, 32), arr(rng, 4, 6, 32), arr(rng, 32)

    def block(h, a, w):
        r = h + a
        return r, F.rms_norm(r, weight=w, epsilon=1e-6)

    args = [fw.to_tensor(x, device=dev) for x in (h, a, w)]
    (r, y), prog = run_static(block, args)
    assert len(fused(prog)) == 1, prog
    assert_no_elementwise_left(prog)
    rn = h + a
    ref = rn / np.sqrt((rn * rn).mean(-1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(r, rn, rtol=0, atol=0)
    np.testing.assert_allclose(y, ref, rtol=2e-5, atol=2e-6)
    (r0, y0), prog0 = run_static(block, args, compile_=False, monkeypatch=monkeypatch)
    assert not fused(prog0)
    np.testing.assert_array_equal(r, r0)
    np.testing.assert_allclose(y, y0, rtol=2e-6, atol=2e-7)


def test_bias_add_and_relu_exact_and_gelu_close(dev, monkeypatch):
    rng = np.random.default_rng(1)
    x, b = arr(rng, 8, 48), arr(rng, 48)
    args = [fw.to_tensor(x, device=dev), fw.to_tensor(b, device=dev)]

    def f(x, b):
        return F.relu(x + b), F.gelu(x + b)

    (r, g), prog = run_static(f, args)
    # one group: cpu keeps relu one op (its OpDef's lowering); where a device decomposes it,
    # its comparison of the group's x + b joins the group with its select
    assert len(fused(prog)) == 1, prog
    assert_no_elementwise_left(prog)
    assert not {"op.le", "op.where", "op.relu"} & set(op_names(prog)), prog
    np.testing.assert_array_equal(r, np.maximum(x + b, 0))  # add and max: exact
    (r0, g0), _ = run_static(f, args, compile_=False, monkeypatch=monkeypatch)
    np.testing.assert_array_equal(r, r0)
    np.testing.assert_allclose(g, g0, rtol=1e-5, atol=1e-6)


def test_attention_scores_scale_mask_softmax_is_one_kernel(dev, monkeypatch):
    rng = np.random.default_rng(2)
    s = arr(rng, 2, 3, 8, 8)
    mask = np.tril(np.ones((8, 8), bool))

    def f(s, m):
        neg = fw.full([1], -np.inf, device=s.device)
        return F.softmax(fw.where(m, s * 0.25, neg), axis=-1)

    args = [fw.to_tensor(s, device=dev), fw.to_tensor(mask, device=dev)]
    (y,), prog = run_static(f, args)
    assert len(fused(prog)) == 1 and "op.where" not in op_names(prog), prog
    z = np.where(mask, s * 0.25, -np.inf)
    ref = np.exp(z - z.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-7)
    (y0,), _ = run_static(f, args, compile_=False, monkeypatch=monkeypatch)
    np.testing.assert_allclose(y, y0, rtol=1e-5, atol=1e-7)


def test_cross_entropy_is_two_kernels(dev):
    """log-softmax, the label pick (a one-hot mask: the integer compare that makes it stays
    outside) and the per-row loss are one group; the mean over rows is the second."""
    rng = np.random.default_rng(3)
    logits, labels = arr(rng, 16, 10), rng.integers(0, 10, 16)
    args = [fw.to_tensor(logits, device=dev), fw.to_tensor(labels, device=dev)]
    (loss,), prog = run_static(lambda x, y: F.cross_entropy(x, y), args)
    assert len(fused(prog)) == 2, prog
    assert_no_elementwise_left(prog)
    # op.gather: the labels' bounds check (an out-of-range label raises in the program too)
    assert {n for n in op_names(prog) if n.startswith("op.")} <= {
        "op.ne",
        "op.eq",
        "op.where",
        "op.reshape",
        "op.gather",
    }
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    np.testing.assert_allclose(loss, -logp[np.arange(16), labels].mean(), rtol=1e-5)


def adamw(p, g, m, v, lr=1e-2, b1=0.9, b2=0.999, eps=1e-8, wd=0.01, t=3):
    m2 = b1 * m + (1 - b1) * g
    v2 = b2 * v + (1 - b2) * g * g
    mh = m2 / (1 - b1**t)
    vh = v2 / (1 - b2**t)
    return p - lr * (mh / (np.sqrt(vh) + eps) + wd * p), m2, v2


def test_an_adamw_update_chain_is_one_kernel(dev, monkeypatch):
    rng = np.random.default_rng(4)
    p, g, m = arr(rng, 64, 33), arr(rng, 64, 33), arr(rng, 64, 33)
    v = np.abs(arr(rng, 64, 33))

    def step(p, g, m, v):
        m2 = 0.9 * m + 0.1 * g
        v2 = 0.999 * v + 0.001 * g * g
        mh = m2 / (1 - 0.9**3)
        vh = v2 / (1 - 0.999**3)
        return p - 1e-2 * (mh / (fw.sqrt(vh) + 1e-8) + 0.01 * p), m2, v2

    args = [fw.to_tensor(a, device=dev) for a in (p, g, m, v)]
    got, prog = run_static(step, args)
    assert len(fused(prog)) == 1
    assert_no_elementwise_left(prog)
    for x, r in zip(got, adamw(p, g, m, v)):
        np.testing.assert_allclose(x, r, rtol=1e-5, atol=1e-7)
    ref, _ = run_static(step, args, compile_=False, monkeypatch=monkeypatch)
    for x, r in zip(got, ref):
        np.testing.assert_allclose(x, r, rtol=1e-6, atol=1e-8)


def test_one_kernel_serves_every_batch_size(dev):
    rng = np.random.default_rng(5)
    w = fw.to_tensor(arr(rng, 24), device=dev)

    def f(x, a):
        return F.rms_norm(x + a, weight=w, epsilon=1e-5)

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, 24]), InputSpec([24])])
    kernels = None
    for rows in (3, 7, 40):
        x, a = arr(rng, rows, 24), arr(rng, 24)
        with fw.no_grad():
            y = sf(fw.to_tensor(x, device=dev), fw.to_tensor(a, device=dev)).numpy()
        r = x + a
        ref = r / np.sqrt((r * r).mean(-1, keepdims=True) + 1e-5) * w.numpy()
        np.testing.assert_allclose(y, ref, rtol=2e-5, atol=2e-6)
        if kernels is None:
            kernels = passes.fusion_stats()["kernels"]
    assert len(sf.programs) == 1
    assert passes.fusion_stats()["kernels"] == kernels  # no kernel built for the later sizes
    g = fused(sf.programs[0].executor.program)
    assert len(g) == 1 and "dims" in g[0].attrs


def test_a_symbolic_row_length_is_a_kernel_argument(dev):
    rng = np.random.default_rng(6)

    def f(x):
        return F.softmax(x * 2.0, axis=-1)

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, None])])
    for shape in ((3, 5), (4, 9)):
        x = arr(rng, *shape)
        with fw.no_grad():
            y = sf(fw.to_tensor(x, device=dev)).numpy()
        e = np.exp(2 * x - (2 * x).max(-1, keepdims=True))
        np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert len(fused(sf.programs[0].executor.program)) == 1


# -- whole models: forward and training ------------------------------------------------------
def tiny_llama(dev):
    sys.path.insert(0, ROOT)
    from conformance.models import TinyLlama

    with fw.device(dev):
        fw.seed(0)
        return TinyLlama(23, dim=32, heads=2, layers=1, hidden=48, max_seq=8)


def loss_and_grads(model, ids, labels):
    logits = model(ids)
    loss = F.cross_entropy(logits.reshape((-1, logits.shape[-1])), labels.reshape((-1,)))
    loss.backward()
    grads = {n: p.grad.numpy() for n, p in model.named_parameters()}
    return float(loss.numpy()), grads


def test_tiny_llama_training_step_matches_unfused_and_eager(dev, monkeypatch):
    rng = np.random.default_rng(7)
    ids = fw.to_tensor(rng.integers(0, 23, (3, 8)), device=dev)
    labels = fw.to_tensor(rng.integers(0, 23, (3, 8)), device=dev)
    eager = loss_and_grads(tiny_llama(dev), ids, labels)
    static = fw.jit.to_static(tiny_llama(dev))
    before = passes.fusion_stats()
    got = loss_and_grads(static, ids, labels)
    cp = static.forward.programs[-1]
    assert fused(cp.executor.program) and fused(cp.backward.executor.program)
    # the norms' weight gradients (sums over rows) are in groups too: partial sums + one sum
    assert "op.sum" not in op_names(cp.backward.executor.program)
    assert not fused(cp.program)  # the portable program (what jit.save writes) stays unfused
    after = passes.fusion_stats()
    assert after["failed"] == before["failed"] and after["unfused_runs"] == before["unfused_runs"]
    monkeypatch.setenv("OARLOCK_COMPILE", "0")
    plain = fw.jit.to_static(tiny_llama(dev))
    ref = loss_and_grads(plain, ids, labels)
    assert not fused(plain.forward.programs[-1].executor.program)
    for want in (ref, eager):
        assert got[0] == pytest.approx(want[0], rel=1e-6)
        for name, g in want[1].items():
            np.testing.assert_allclose(got[1][name], g, rtol=1e-4, atol=1e-6, err_msg=name)


def test_predictor_runs_fused_and_unfused_alike(dev, tmp_path, monkeypatch):
    model = tiny_llama(dev)
    model.eval()
    path = str(tmp_path / "llama")
    fw.jit.save(model, path, input_spec=[InputSpec([None, 8], "int64")])
    assert "fused." not in open(path + ".oarlock").read()
    ids = np.random.default_rng(8).integers(0, 23, (2, 8))
    outs = []
    for flag in ("1", "0"):
        monkeypatch.setenv("OARLOCK_COMPILE", flag)
        cfg = fw.inference.Config(path)
        cfg.set_device(str(dev))
        pred = fw.inference.create_predictor(cfg)
        pred.get_input_handle(pred.get_input_names()[0]).copy_from_cpu(ids)
        pred.run()
        outs.append(pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu())
        n_fused = len(fused(pred._layer._executor(pred.device).program))
        assert (n_fused > 0) == (flag == "1")
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-5)


# -- what the pass does not do ---------------------------------------------------------------
def test_compile_off_and_no_device_leave_the_program_alone(monkeypatch):
    x = fw.to_tensor(np.ones((4, 8), np.float32), device="cpu")
    (y,), prog = run_static(lambda x: fw.exp(x) * 2.0 + 1.0, [x], compile_=False, monkeypatch=monkeypatch)
    assert not fused(prog)
    np.testing.assert_allclose(y, np.exp(1.0) * 2 + 1, rtol=1e-6)
    p = fw.ir.parse_program(str(prog))
    assert fusion.Fusion().run(p, passes.PassContext()) == 0  # no device: nothing to build for


def test_groups_stay_convex_and_never_duplicate_a_reduction(dev):
    rng = np.random.default_rng(9)
    x, w = arr(rng, 6, 16), arr(rng, 16, 16)

    def f(x, w):
        s = x.sum(axis=-1, keepdim=True)  # one reduction, read twice
        a = x - s
        b = fw.matmul(a, w)  # leaves the group ...
        return a * s + b  # ... and comes back: the two element-wise parts are two groups

    args = [fw.to_tensor(x, device=dev), fw.to_tensor(w, device=dev)]
    (y,), prog = run_static(f, args)
    sums = [op for g in fused(prog) for op in fusion.GROUPS[g.name].body.block.ops if op.name == "op.sum"]
    assert len(sums) == 1
    fw.ir.verify(prog)
    s = x.sum(-1, keepdims=True)
    np.testing.assert_allclose(y, (x - s) * s + (x - s) @ w, rtol=1e-5, atol=1e-5)


def test_print_ir_fusion_shows_groups_and_source(dev, capfd, monkeypatch):
    monkeypatch.setenv("OARLOCK_PRINT_IR", "fusion")
    x = fw.to_tensor(np.ones((4, 8), np.float32), device=dev)
    run_static(lambda x: F.softmax(x * 3.0, axis=-1), [x])
    err = capfd.readouterr().err
    assert "// ----- fusion: 1 groups" in err and "// group fused.g" in err
    assert "// generated source of fused.g" in err and "generated by framework.compiler" in err
    assert "IR after pass 'fusion'" in err


# -- a kernel that does not build -----------------------------------------------------------
def test_a_fused_kernel_that_does_not_build_runs_unfused_with_a_warning(monkeypatch):
    from plugins.cpu.compiler import CPUCompiler

    if not compiler.has_compile_access("cpu"):
        pytest.skip("no C compiler")

    class RejectingCompiler(CPUCompiler):
        def flags(self):
            return (*super().flags(), "-fno-such-flag-for-oarlock")  # the real compiler rejects it

    cpu = _eager._dev.parse("cpu")
    monkeypatch.setitem(_eager._COMPILERS, cpu, RejectingCompiler())
    rng = np.random.default_rng(10)
    x, b = arr(rng, 5, 12), arr(rng, 12)  # a shape no other test builds

    def f(x, b):
        return fw.tanh(x + b) * 0.5 - b

    before = passes.fusion_stats()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (y,), prog = run_static(f, [fw.to_tensor(x, device="cpu"), fw.to_tensor(b, device="cpu")])
    assert fused(prog)  # the group is made; its kernel declines
    kinds = {type(w.message).__name__ for w in caught}
    assert "CompileWarning" in kinds, kinds
    assert "-fno-such-flag-for-oarlock" in " ".join(str(w.message) for w in caught)
    after = passes.fusion_stats()
    assert after["failed"] == before["failed"] + 1
    assert after["unfused_runs"] == before["unfused_runs"] + 1
    np.testing.assert_allclose(y, np.tanh(x + b) * 0.5 - b, rtol=1e-6, atol=1e-7)


def test_a_value_a_cond_branch_captures_is_defined_before_the_cond(dev):
    rng = np.random.default_rng(11)
    x = arr(rng, 6, 16)

    def f(x):
        a = fw.exp(x) * 0.5 + 1.0  # a group whose result a branch captures
        y = fw.static.nn.cond(x.sum() > 0, lambda: a * 2.0, lambda: a - 1.0)
        return y + a * 3.0

    (y,), prog = run_static(f, [fw.to_tensor(x, device=dev)])
    fw.ir.verify(prog)
    assert fused(prog) and any(op.regions for op in prog.block.ops)
    a = np.exp(x) * 0.5 + 1.0
    ref = (a * 2.0 if x.sum() > 0 else a - 1.0) + a * 3.0
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_a_reshaped_input_used_outside_a_group_is_a_view_not_a_kernel_output(dev):
    # the SwiGLU gate and up, reshaped inside the group and read again outside (the backward
    # keeps them): a view of the group's input outside, not a copy the kernel writes
    rng = np.random.default_rng(3)
    a, b = arr(rng, 32, 24), arr(rng, 32, 24)
    args = [fw.to_tensor(a, device=dev), fw.to_tensor(b, device=dev)]

    def f(a, b):
        ga, gb = a.reshape([4, 8, 24]), b.reshape([4, 8, 24])
        return F.silu(ga) * gb, ga, gb

    (y, ga, gb), prog = run_static(f, args)
    (group,) = fused(prog)
    assert len(group.results) == 1  # only the product: ga and gb are views of the inputs
    assert [op.name for op in prog.block.ops].count("op.reshape") == 2
    np.testing.assert_allclose(y, (a / (1 + np.exp(-a)) * b).reshape(4, 8, 24), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ga, a.reshape(4, 8, 24))
    np.testing.assert_array_equal(gb, b.reshape(4, 8, 24))


# -- a gather along the row by a rotation: rotary's rotate-half ------------------------------
def rotary_ref(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + np.concatenate([-x[..., h:], x[..., :h]], -1) * sin


def test_rotary_embedding_is_one_kernel_reading_the_rotated_row(dev, monkeypatch):
    """q and k's rotary embedding: the rotate-half gather is a load at the rotated column of
    the group's kernel (no gather, no product with a permutation left in the program); an
    infinite input stays one infinite value (a product with a signed permutation spread it
    as NaN over its row)."""
    rng = np.random.default_rng(11)
    q = arr(rng, 2, 3, 8, 16)
    q[1, 2, 5, 3] = np.inf
    cos, sin = (t.numpy() for t in F.rotary_cos_sin(8, 16))

    def f(q, cos, sin):
        return F.rotary_embedding(q, cos, sin)

    args = [fw.to_tensor(x, device=dev) for x in (q, cos, sin)]
    (y,), prog = run_static(f, args)
    assert (
        len(fused(prog)) == 1 and "op.gather" not in op_names(prog) and "op.matmul" not in op_names(prog)
    ), prog
    outside = [op for op in prog.block.ops if op.name.startswith("op.") and op.name != "op.reshape"]
    # sin * sign, read through its broadcast load, is inside the group too (it was left out
    # before broadcast values were tracked in groups)
    assert outside == [], prog
    src = fusion.GROUPS[fused(prog)[0].name].estimate.source
    assert "tk8" in src, src
    with np.errstate(invalid="ignore"):
        ref = rotary_ref(q.astype(np.float64), cos, sin)
    finite = np.isfinite(ref)
    np.testing.assert_allclose(y[finite], ref[finite], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.isposinf(y), np.isposinf(ref))
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
    assert np.isfinite(y).sum() == q.size - 2  # the inf's own element and its rotated partner
    (y0,), prog0 = run_static(f, args, compile_=False, monkeypatch=monkeypatch)
    assert not fused(prog0) and "op.gather" in op_names(prog0)
    np.testing.assert_allclose(y, y0, rtol=1e-6, atol=1e-7)


def test_rotary_training_step_fuses_the_rotated_gradient(dev):
    """Forward and backward of rotary under to_static: the backward's gather by the inverse
    rotation (the gradient of a gather by a ``permutation``) reads the incoming gradient
    times the sin table at the rotated column inside its group."""
    rng = np.random.default_rng(12)
    x, gy = arr(rng, 2, 2, 4, 8), arr(rng, 2, 2, 4, 8)
    cos, sin = (t.numpy() for t in F.rotary_cos_sin(4, 8))

    def f(x, cos, sin):
        return F.rotary_embedding(x * 1.5, cos, sin)

    sf = fw.jit.to_static(f)
    xt = fw.to_tensor(x, device=dev)
    xt.stop_gradient = False
    y = sf(xt, fw.to_tensor(cos, device=dev), fw.to_tensor(sin, device=dev))
    y.backward(fw.to_tensor(gy, device=dev))
    bprog = sf.programs[-1].backward.executor.program
    assert fused(bprog) and "op.gather" not in op_names(bprog) and "op.scatter_add" not in op_names(bprog), (
        bprog
    )
    np.testing.assert_allclose(y.numpy(), rotary_ref(1.5 * x, cos, sin), rtol=1e-5, atol=1e-6)
    # d/dx of x*cos + R(x)*sin with R(x) = x @ P: g*cos + (g*sin) @ P^T
    h = 4
    gs = gy * sin
    back = np.concatenate([gs[..., h:], -gs[..., :h]], -1)
    np.testing.assert_allclose(xt.grad.numpy(), 1.5 * (gy * cos + back), rtol=1e-5, atol=1e-6)


def test_a_rotated_row_inside_a_reduction(dev):
    """The rotated read in a pass that also reduces along the row (its column offset chosen
    per element rather than per column range): rms of the rotary output, and the output."""
    rng = np.random.default_rng(15)
    q = arr(rng, 3, 5, 40)
    cos, sin = (t.numpy() for t in F.rotary_cos_sin(5, 40))

    def f(q, cos, sin):
        r = F.rotary_embedding(q, cos, sin)
        return r, (r * r).mean(-1)

    (y, ms), prog = run_static(f, [fw.to_tensor(x, device=dev) for x in (q, cos, sin)])
    assert "op.gather" not in op_names(prog), prog
    ref = rotary_ref(q.astype(np.float64), cos, sin)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ms, (ref * ref).mean(-1), rtol=1e-5, atol=1e-6)


def test_a_gather_that_is_not_a_rotation_stays_a_gather(dev):
    rng = np.random.default_rng(13)
    x = arr(rng, 4, 8)
    idx = np.array([1, 0, 2, 3, 4, 5, 7, 6])

    def f(x):
        return fw.gather(x * 2.0, fw.to_tensor(idx, device=x.device), axis=1) + 1.0

    (y,), prog = run_static(f, [fw.to_tensor(x, device=dev)])
    assert "op.gather" in op_names(prog), prog
    np.testing.assert_allclose(y, (x * 2.0)[:, idx] + 1.0, rtol=1e-6)


# -- recomputing in the backward ----------------------------------------------------------------
def swiglu_grads(dev, monkeypatch, remat, compile_="1"):
    monkeypatch.setenv("OARLOCK_REMAT", remat)
    monkeypatch.setenv("OARLOCK_COMPILE", compile_)
    rng = np.random.default_rng(14)
    g, u, w = arr(rng, 6, 40), arr(rng, 6, 40), arr(rng, 40, 8)

    def f(g, u, w):
        return fw.matmul(F.silu(g) * u, w)

    sf = fw.jit.to_static(f)
    ts = [fw.to_tensor(x, device=dev) for x in (g, u, w)]
    for t in ts:
        t.stop_gradient = False
    (sf(*ts) ** 2).sum().backward()
    return sf.programs[-1].backward, [t.grad.numpy() for t in ts], (g, u, w)


def test_the_backward_recomputes_silu_from_gate_and_up(dev, monkeypatch):
    """SwiGLU under to_static: the backward reads gate and up (and the product for the
    matmul's weight gradient) and computes silu's exp again inside its fused group, instead
    of reading exp(-x), 1 + exp(-x) and silu(x) saved by the forward; the gradients are those
    of numpy's float64 formulas either way."""
    bw, got, (g, u, w) = swiglu_grads(dev, monkeypatch, "1")
    bw0, got0, _ = swiglu_grads(dev, monkeypatch, "0")
    assert bw.n_saved < bw0.n_saved, (bw.n_saved, bw0.n_saved)
    assert "op.exp" in op_names(bw.program)  # silu's rule recomputes sigmoid either way
    assert any("op.exp" in op_names(fusion.GROUPS[op.name].body) for op in fused(bw.executor.program))
    gd, ud, wd = (x.astype(np.float64) for x in (g, u, w))
    s = 1 / (1 + np.exp(-gd))
    h = gd * s * ud
    dy = 2 * (h @ wd)
    dh = dy @ wd.T
    want = [dh * ud * s * (1 + gd * (1 - s)), dh * gd * s, h.T @ dy]
    for a, b, c in zip(got, got0, want):
        np.testing.assert_allclose(a, c, rtol=2e-5, atol=1e-5)
        np.testing.assert_allclose(b, c, rtol=2e-5, atol=1e-5)
    bw_off, got_off, _ = swiglu_grads(dev, monkeypatch, "1", compile_="0")
    assert bw_off.n_saved == bw0.n_saved  # unfused, recomputing would only add kernels


def test_a_fused_add_of_zero_keeps_the_sign_of_zero_as_eager_mode_does():
    """``x + 0.0`` turns ``-0.0`` into ``+0.0``: the compiler's loop IR asks the same
    question as the IR's canonical rules (``opdef.folds_to``) and keeps the add, so the fused
    kernel's zeros have eager mode's signs (it used to fold the add away)."""
    x = fw.to_tensor(np.array([[-0.0, 1.5, -0.0, 2.0]], "float32"))

    def f(x):
        return fw.tanh(x + 0.0) * -1.0

    want = f(x).numpy()
    got = fw.jit.to_static(f)(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)  # tanh: within an ulp of numpy's
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # -0.0 where eager has it
