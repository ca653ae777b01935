"""Horizontal fusion (framework.ir.passes.horizontal with framework.compiler.horizontal):
independent fusion groups of a program run as one kernel. Results equal numpy for parts of
several shapes, odd sizes, float32 and float64 side by side, a sum over every axis, sums over
rows (a weight's gradient) and symbolic batch sizes, on every device with compile access (the
OpenCL work-group layout is run on the CPU OpenCL device too); int ops stay outside; a merged
kernel that does not build runs its groups one by one with a warning and a count; the tiny
optimizer update is one kernel without clipping and three with it; OARLOCK_PRINT_IR=fusion
shows the merged groups and their source; OARLOCK_HORIZONTAL=0 keeps one kernel per group."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework import compiler
from framework._src import device as _dev
from framework.compiler import eager as _eager
from framework.compiler import horizontal as chorizontal
from framework.ir import passes
from framework.ir.passes import horizontal
from framework.static import InputSpec
from tests.conftest import arr


def run_static(fn, args, spec=None):
    sf = fw.jit.to_static(fn, input_spec=spec)
    with fw.no_grad():
        out = sf(*args)
    outs = [out] if isinstance(out, fw.Tensor) else list(out)
    return [o.numpy() for o in outs], sf.programs[-1].executor.program


def merged(program):
    return [op for op in program.block.ops if op.name.startswith("fused.h")]


def kernels(program):
    return [op.name for op in program.block.ops if op.name.startswith("fused.")]


def rms(x, w, eps=1e-6):
    x64 = x.astype(np.float64)
    return x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + eps) * w


def five_groups(a, w, b, c, d, e):
    """Five independent groups: rms_norm (7, 13), softmax over (5,), a sum of squares over
    every axis of (3, 4, 9), a float64 chain (6, 10) and a lone exp (11, 3)."""
    return (
        F.rms_norm(a, weight=w, epsilon=1e-6),
        F.softmax(b * 2.0, axis=-1),
        (c * c).sum(),
        fw.tanh(d) * 0.5 + d,
        fw.exp(e),
    )


def five_inputs(rng):
    return [
        arr(rng, 7, 13),
        arr(rng, 13),
        arr(rng, 5),
        arr(rng, 3, 4, 9),
        arr(rng, 6, 10, dtype=np.float64),
        arr(rng, 11, 3),
    ]


def check_five(outs, ins):
    a, w, b, c, d, e = ins
    np.testing.assert_allclose(outs[0], rms(a, w), rtol=2e-5, atol=2e-6)
    s = np.exp(2 * b - (2 * b).max())
    np.testing.assert_allclose(outs[1], s / s.sum(), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(outs[2], (c.astype(np.float64) ** 2).sum(), rtol=2e-5)
    assert outs[3].dtype == np.float64
    np.testing.assert_allclose(outs[3], np.tanh(d) * 0.5 + d, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(outs[4], np.exp(e), rtol=2e-6)


def test_independent_groups_are_one_kernel_equal_to_numpy(dev):
    ins = five_inputs(np.random.default_rng(0))
    before = passes.fusion_stats()
    outs, prog = run_static(five_groups, [fw.to_tensor(x, device=dev) for x in ins])
    check_five(outs, ins)
    assert kernels(prog) == [merged(prog)[0].name], prog  # five groups, one launch
    h = horizontal.HGROUPS[merged(prog)[0].name]
    assert len(h.parts) == 5
    after = passes.fusion_stats()
    assert after["failed"] == before["failed"] and after["unfused_runs"] == before["unfused_runs"]


def test_the_gpu_work_group_layout_on_the_cpu_opencl_device(monkeypatch):
    """The OpenCL kernel for GPUs (a work-group per row, reductions in local memory, barriers
    inside the segment dispatch) built and run on the CPU OpenCL device."""
    dev = next((d for d in ("opencl:0", "opencl") if _opencl(d)), None)
    if dev is None:
        pytest.skip("no OpenCL device with compile access")
    monkeypatch.setattr(chorizontal, "_kind", lambda d: "")
    monkeypatch.setattr(_eager, "_kind", lambda d: "")
    ins = five_inputs(np.random.default_rng(1))
    ins[0] = arr(np.random.default_rng(2), 9, 77)  # rows longer than the work-group
    ins[1] = arr(np.random.default_rng(3), 77)
    outs, prog = run_static(five_groups, [fw.to_tensor(x, device=dev) for x in ins])
    check_five(outs, ins)
    h = horizontal.HGROUPS[merged(prog)[0].name]
    src = chorizontal.make_merged(h, "opencl-c", "")[0].source
    assert "get_group_id(0)" in src and "hz_scratch" in src and "barrier(" in src


def _opencl(d):
    try:
        return compiler.has_compile_access(d)
    except Exception:  # noqa: BLE001 — no OpenCL plugin or device
        return False


def test_sums_over_rows_and_symbolic_batches(dev):
    """Two weight-gradient reductions (sums over rows, finished by the device's sum) and a
    row-wise group, with a symbolic batch: one kernel, built once for every batch size."""
    rng = np.random.default_rng(4)

    def f(x, dy, z, dz):
        return (x * dy).sum(0), (z * dz + 1.0).sum(0), F.silu(x) * 2.0

    spec = [InputSpec(["b", 12]), InputSpec(["b", 12]), InputSpec(["c", 5]), InputSpec(["c", 5])]
    sf = fw.jit.to_static(f, input_spec=spec)
    built = None
    for rows in (3, 17):
        x, dy, z, dz = arr(rng, rows, 12), arr(rng, rows, 12), arr(rng, rows + 1, 5), arr(rng, rows + 1, 5)
        with fw.no_grad():
            outs = [o.numpy() for o in sf(*[fw.to_tensor(t, device=dev) for t in (x, dy, z, dz)])]
        np.testing.assert_allclose(outs[0], (x * dy).sum(0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(outs[1], (z * dz + 1).sum(0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(outs[2], x / (1 + np.exp(-x)) * 2, rtol=1e-5, atol=1e-6)
        if built is None:
            built = passes.fusion_stats()["kernels"]
    assert passes.fusion_stats()["kernels"] == built
    prog = sf.programs[0].executor.program
    assert len(merged(prog)) == 1 and "dims" in merged(prog)[0].attrs, prog


def test_a_symbolic_row_length_in_a_part(dev):
    rng = np.random.default_rng(11)

    def f(x, y):
        return F.softmax(x * 2.0, axis=-1), fw.tanh(y) * y

    sf = fw.jit.to_static(f, input_spec=[InputSpec(["b", "n"]), InputSpec(["c", 7])])
    for (r, n), c in (((3, 5), 2), ((4, 19), 9)):
        x, y = arr(rng, r, n), arr(rng, c, 7)
        with fw.no_grad():
            got = [o.numpy() for o in sf(fw.to_tensor(x, device=dev), fw.to_tensor(y, device=dev))]
        e = np.exp(2 * x - (2 * x).max(-1, keepdims=True))
        np.testing.assert_allclose(got[0], e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got[1], np.tanh(y) * y, rtol=2e-6, atol=1e-7)
    assert len(merged(sf.programs[0].executor.program)) == 1


def test_int_ops_stay_outside(dev):
    rng = np.random.default_rng(5)
    a, b = arr(rng, 4, 6), arr(rng, 9)
    k = rng.integers(-50, 50, (4, 6)).astype(np.int32)

    def f(a, b, k):
        return fw.exp(a) * 2.0, fw.tanh(b) + b, k + k

    outs, prog = run_static(f, [fw.to_tensor(x, device=dev) for x in (a, b, k)])
    np.testing.assert_allclose(outs[0], np.exp(a) * 2, rtol=2e-6)
    np.testing.assert_allclose(outs[1], np.tanh(b) + b, rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(outs[2], k + k)
    assert len(merged(prog)) == 1 and "op.add" in [op.name for op in prog.block.ops]


def test_a_merged_kernel_that_does_not_build_runs_its_groups_one_by_one(monkeypatch, tmp_path):
    from plugins.cpu.compiler import CPUCompiler

    if not compiler.has_compile_access("cpu"):
        pytest.skip("no C compiler")

    class RejectingMerged(CPUCompiler):
        """The real compiler, with a flag it rejects for merged kernels only."""

        def compile(self, source, entry, options=()):
            bad = ("-fno-such-flag-for-oarlock",) if "hz_part0(" in source else ()
            return super().compile(source, entry, (*options, *bad))

    monkeypatch.setenv("OARLOCK_CACHE_DIR", str(tmp_path))  # no binary built before
    monkeypatch.setitem(_eager._COMPILERS, _eager._dev.parse("cpu"), RejectingMerged())
    rng = np.random.default_rng(6)
    ins = [
        arr(rng, 5, 19),
        arr(rng, 19),
        arr(rng, 3),
        arr(rng, 2, 3, 5),
        arr(rng, 4, 7, dtype=np.float64),
        arr(rng, 1, 9),
    ]
    before = passes.fusion_stats()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs, prog = run_static(five_groups, [fw.to_tensor(x, device="cpu") for x in ins])
    check_five(outs, ins)
    assert merged(prog)
    msgs = [str(w.message) for w in caught if type(w.message).__name__ == "CompileWarning"]
    assert any("merged kernel fused.h" in m and "-fno-such-flag-for-oarlock" in m for m in msgs), msgs
    after = passes.fusion_stats()
    assert after["failed"] == before["failed"] + 1
    assert after["unfused_runs"] == before["unfused_runs"] + 1  # the merged op ran part by part


def test_print_ir_shows_the_merged_groups(dev, capfd, monkeypatch):
    monkeypatch.setenv("OARLOCK_PRINT_IR", "fusion")
    rng = np.random.default_rng(7)
    run_static(
        lambda x, y: (F.softmax(x * 3.0, axis=-1), fw.tanh(y) * y),
        [fw.to_tensor(arr(rng, 3, 5), device=dev), fw.to_tensor(arr(rng, 2, 2), device=dev)],
    )
    err = capfd.readouterr().err
    assert "// ----- horizontal fusion: 1 merged kernels" in err
    assert "// merged fused.h" in err and "2 parts (fused.g" in err
    assert "// generated source of fused.h" in err and "hz_part1(" in err


def test_horizontal_off_keeps_one_kernel_per_group(dev, monkeypatch):
    monkeypatch.setenv("OARLOCK_HORIZONTAL", "0")
    ins = five_inputs(np.random.default_rng(8))
    outs, prog = run_static(five_groups, [fw.to_tensor(x, device=dev) for x in ins])
    check_five(outs, ins)
    assert not merged(prog) and len(kernels(prog)) == 4, prog  # the lone exp stays its primitive


# -- the optimizer update -------------------------------------------------------------------
SHAPES = [(6, 5), (5,), (3, 4, 2), (7,), (1, 33)]


def adamw_step(dev, clip):
    rng = np.random.default_rng(9)
    ps = [fw.nn.Parameter.from_tensor(fw.to_tensor(arr(rng, *s), device=dev)) for s in SHAPES]
    gs = [arr(rng, *s) for s in SHAPES]
    ref = [p.numpy().astype(np.float64) for p in ps]
    opt = fw.optim.AdamW(
        0.01,
        parameters=ps,
        weight_decay=0.1,
        grad_clip=fw.optim.ClipGradByGlobalNorm(0.5) if clip else None,
        fused=True,
    )
    for p, g in zip(ps, gs):
        p.grad = fw.to_tensor(g, device=dev)
    opt.step()
    scale = 1.0
    if clip:
        norm = np.sqrt(sum((g.astype(np.float64) ** 2).sum() for g in gs))
        scale = 0.5 / max(norm, 0.5)
    for p, g, r in zip(ps, gs, ref):
        g = g * scale
        m, v = 0.1 * g, 0.001 * g * g
        want = r * (1 - 0.01 * 0.1) - 0.01 / 0.1 * m / (np.sqrt(v / 0.001) + 1e-8)
        np.testing.assert_allclose(p.numpy(), want, rtol=1e-5, atol=1e-6)
    return opt._fused_update


def test_adamw_is_one_kernel(dev):
    fu = adamw_step(dev, clip=False)
    assert kernels(fu.last.program) == [merged(fu.last.program)[0].name]
    assert fu.launches() == 1


def test_adamw_with_global_norm_clip_is_three_kernels(dev):
    """Every sum of squares, then the norm and the scale, then every update."""
    fu = adamw_step(dev, clip=True)
    assert len(kernels(fu.last.program)) == 3, fu.last.program
    assert fu.launches() == 3


def test_tiny_llama_adamw_with_clip_is_three_kernels_and_equals_eager(dev):
    """The examples' Llama (two layers, 17 parameters): 25 fusion groups, merged into the
    three levels of the clipped update; the parameters equal the eager update's."""
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from conformance.models import TinyLlama

    rng = np.random.default_rng(12)
    ids = fw.to_tensor(rng.integers(0, 23, (2, 8)), device=dev)
    params = []
    for fused in (False, True):
        with fw.device(dev):
            fw.seed(0)
            model = TinyLlama(23, dim=32, heads=2, layers=2, hidden=48, max_seq=8)
        opt = fw.optim.AdamW(
            0.01, parameters=model.parameters(), grad_clip=fw.optim.ClipGradByGlobalNorm(0.1), fused=fused
        )
        for _ in range(2):
            logits = model(ids)
            F.cross_entropy(logits.reshape((-1, 23)), ids.reshape((-1,))).backward()
            opt.step()
            opt.clear_grad()
        params.append([p.numpy() for p in model.parameters()])
    assert len(params[0]) == 17
    for a, b in zip(*params):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    fu = opt._fused_update
    assert fu.launches() == 3
    program = fu.last.program
    assert [len(horizontal.HGROUPS[n].parts) for n in kernels(program) if n.startswith("fused.h")] == [12, 12]


def test_parts_far_apart_are_not_merged(dev, monkeypatch):
    """A merged op runs where its last part was: parts more than ``Limits.window`` ops apart
    stay separate kernels (the first one's inputs would stay live that long)."""
    import dataclasses

    rng = np.random.default_rng(13)
    a, b, w = arr(rng, 4, 6), arr(rng, 5, 3), arr(rng, 6, 6)

    def f(a, b, w):
        y1 = fw.exp(a) * 2.0
        m = a
        for _ in range(4):
            m = fw.matmul(m, w)
        return y1, m, fw.tanh(b) * b

    args = [fw.to_tensor(x, device=dev) for x in (a, b, w)]
    _, prog = run_static(f, args)
    assert len(merged(prog)) == 1
    limits = chorizontal.Backend.limits
    monkeypatch.setattr(
        chorizontal.Backend, "limits", lambda self, d: dataclasses.replace(limits(self, d), window=3)
    )
    outs, prog = run_static(f, args)
    assert not merged(prog) and len(kernels(prog)) == 2, prog
    np.testing.assert_allclose(outs[0], np.exp(a) * 2, rtol=2e-6)
    np.testing.assert_allclose(outs[2], np.tanh(b) * b, rtol=2e-6, atol=1e-7)


def test_a_compilers_max_args_cuts_the_merged_kernels(dev, monkeypatch):
    """Compiler.max_args (a native plugin's launch takes at most 64): every merged kernel
    fits, the update still equals numpy's."""
    comp = compiler.compiler_for(_dev.parse(dev))
    monkeypatch.setattr(type(comp), "max_args", 24, raising=False)
    fu = adamw_step(dev, clip=False)
    ops = merged(fu.last.program)
    assert len(ops) > 1  # one kernel before the cap
    for op in ops:
        assert horizontal.arguments(horizontal.HGROUPS[op.name].parts) <= 24
