"""Kernels built in the background (framework/compiler/background.py, issue 36): a program on
a cold kernel cache runs at once, its fusion groups (and merged groups) as their ops unfused
and the cpu plugin's own C on its numpy path, then the built kernels from the first call after
they landed; outputs before and after the swap equal numpy's and each other within float32
rounding; nothing compiles on the calling thread; a plugin build queued in the background is
not waited for; a float64 -> float32 cast builds no bfloat16 library.

The C compiler is held on the background's threads (until the test lets it go) so that what
runs before and after the builds land does not depend on the compiler's speed."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework import compiler
from framework.compiler import cache as C
from framework.static import InputSpec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(
    compiler.compiler_for(fw.Device("cpu")) is None
    or compiler.compiler_for(fw.Device("cpu")).language != "c",
    reason="no C compiler",
)


def _unique() -> float:
    return 1.0 + float(np.random.default_rng().integers(1, 10**6)) / 1e7  # sources no run has built


@pytest.fixture
def held(monkeypatch, tmp_path):
    """A cold kernel cache, background builds on, and the C compiler held on every thread but
    the main one until ``held.set()``; ``held.main`` lists the builds on the main thread."""
    comp = compiler.compiler_for(fw.Device("cpu"))
    monkeypatch.setenv("OARLOCK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("OARLOCK_COMPILE_BACKGROUND", "1")
    gate = threading.Event()
    gate.main = []  # type: ignore[attr-defined]
    build = type(comp).compile

    def compile_(self, source, entry, options=()):
        if threading.current_thread() is threading.main_thread():
            gate.main.append(entry)  # type: ignore[attr-defined]
        else:
            gate.wait(600)
        return build(self, source, entry, options)

    monkeypatch.setattr(type(comp), "compile", compile_)
    yield gate
    gate.set()
    compiler.wait_for_builds(timeout=600)


def _stand_ins(sf):
    """How many bound instructions of the program's plans are stand-ins (background.py)."""
    ex = sf.programs[-1].executor
    return sum(
        1
        for pl in ex._plans.values()
        for f in pl.bound
        if getattr(getattr(f, "func", None), "__qualname__", "").startswith("waiting_entry")
    )


def test_a_cold_program_runs_unfused_while_its_kernels_build_then_swaps(held):
    c = _unique()
    rng = np.random.default_rng(3)
    w = fw.to_tensor(rng.standard_normal((16, 16)).astype(np.float32) * 0.25)
    nw = fw.to_tensor(rng.standard_normal(16).astype(np.float32))

    def f(x, y, z):
        h = fw.exp(x * (0.3 * c)) + fw.sin(x)  # a group
        g = fw.matmul(h, w)  # the product between groups
        # independent groups: one merged kernel (fused.h) of several parts
        return (
            fw.tanh(g * c) * 2.0 - g,
            F.softmax(y * c, axis=-1),
            F.rms_norm(z * c, weight=nw, epsilon=1e-6),
        )

    x = rng.standard_normal((37, 16)).astype(np.float32)
    y = rng.standard_normal((37, 16)).astype(np.float32)
    z = rng.standard_normal((5, 16)).astype(np.float32)
    g = (np.exp(x * np.float32(0.3 * c)) + np.sin(x)) @ w.numpy()
    s = np.exp(y * c - (y * c).max(-1, keepdims=True))
    zz = z.astype(np.float64) * c
    want = [
        np.tanh(g * c) * 2 - g,
        s / s.sum(-1, keepdims=True),
        zz / np.sqrt((zz * zz).mean(-1, keepdims=True) + 1e-6) * nw.numpy(),
    ]
    spec = [InputSpec([None, 16], "float32"), InputSpec([None, 16], "float32"), InputSpec([5, 16], "float32")]
    sf = fw.jit.to_static(f, input_spec=spec)
    ins = [fw.to_tensor(a) for a in (x, y, z)]
    before = compiler.background_stats()
    with fw.no_grad():
        first = [o.numpy() for o in sf(*ins)]
    mid = compiler.background_stats()
    ops = [op.name for op in sf.programs[-1].executor.program.block.ops]
    assert any(n.startswith("fused.g") for n in ops) and any(n.startswith("fused.h") for n in ops), ops
    assert mid["batches"] > before["batches"] and mid["stand_in_runs"] > before["stand_in_runs"], mid
    assert mid["swaps"] == before["swaps"] and _stand_ins(sf) > 0
    # the stand-ins carry the built kernels' names (the lowering recorded them)
    names = {
        op.attrs["kernel.name"].split("/")[0]
        for op in sf.programs[-1].executor.lowered.block.ops
        if op.name.startswith("kernel.fused.")
    }
    assert names == {"oarlock.compiler (fused)", "oarlock.compiler (horizontal)"}, names
    for got, ref in zip(first, want):
        np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-6)

    held.set()  # the compiler goes on: the builds land
    assert compiler.wait_for_builds(timeout=600)
    with fw.no_grad():
        second = [o.numpy() for o in sf(*ins)]
    after = compiler.background_stats()
    assert after["swaps"] > mid["swaps"] and after["stand_in_runs"] == mid["stand_in_runs"], after
    assert _stand_ins(sf) == 0  # planned again: the kernels' own bound calls
    for a, b, ref in zip(first, second, want):
        np.testing.assert_allclose(b, ref, rtol=2e-5, atol=2e-6)
        np.testing.assert_allclose(b, a, rtol=2e-5, atol=1e-6)  # before and after the swap
    # another batch size: the same kernels (symbolic rows), no stand-in
    with fw.no_grad():
        third = sf(*(fw.to_tensor(a[:9]) for a in (x, y)), ins[2])[0].numpy()
    np.testing.assert_allclose(third, second[0][:9], rtol=1e-6, atol=1e-7)
    assert compiler.background_stats()["stand_in_runs"] == mid["stand_in_runs"]
    assert held.main == []  # nothing compiled on the calling thread


def test_a_training_step_on_stand_ins_then_on_kernels(held):
    """The forward and backward programs on stand-ins, then on the built kernels: the
    gradients of both steps equal the eager ones."""
    c = _unique()
    rng = np.random.default_rng(5)
    lin = fw.nn.Linear(12, 12)
    norm = fw.nn.RMSNorm(12)

    class Net(fw.nn.Layer):
        def __init__(self):
            super().__init__()
            self.lin, self.norm = lin, norm

        def forward(self, x):
            return F.silu(self.norm(self.lin(x) * c)).sum(-1)

    net = Net()
    x = fw.to_tensor(rng.standard_normal((24, 12)).astype(np.float32))

    def eager_grads():
        for p in net.parameters():
            p.clear_gradient()
        net.forward(x).mean().backward()
        return [p.grad.numpy().copy() for p in net.parameters()]

    want = eager_grads()  # eager mode builds its generated kernels as it goes (on this thread)
    eager_builds = len(held.main)
    sf = fw.jit.to_static(net.forward)
    grads = []
    for step in range(2):
        for p in net.parameters():
            p.clear_gradient()
        sf(x).mean().backward()
        grads.append([p.grad.numpy().copy() for p in net.parameters()])
        if step == 0:
            assert compiler.background_stats()["stand_in_runs"] > 0
            held.set()
            assert compiler.wait_for_builds(timeout=600)
    for g0, g1, ref in zip(*grads, want):
        np.testing.assert_allclose(g0, ref, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(g1, ref, rtol=1e-4, atol=1e-6)
    assert held.main[eager_builds:] == []


def test_the_plugins_own_c_queued_in_the_background_is_not_waited_for(tmp_path, monkeypatch):
    """A build of the cpu plugin's own C that the core runs in the background (``queued()``):
    until it lands, its users get None (their numpy path) at once; then the programs."""
    from plugins.cpu import compiler as PC

    cache = C.ProgramCache(tmp_path)
    monkeypatch.setattr(PC, "_PROGRAM_CACHE", cache)
    monkeypatch.setattr(PC, "_OWN", {})
    monkeypatch.setattr(PC, "_QUEUED", set())
    path = os.path.join(ROOT, "plugins", "cpu", "layout.c")
    (build,) = PC.own_builds({("permute", np.dtype(np.float32))})
    assert not build.cached() and build.kernels == 2
    build.queued()
    assert PC.own_program(path, "permute_runs", (), "permute") is None  # not waited for
    assert cache.stats.compiles == 0
    build()  # what the core's background thread runs
    assert build.cached() and cache.stats.compiles == 1
    perm = PC.own_program(path, "permute_runs", (), "permute")
    assert perm is not None and perm.entry == "permute_runs"
    assert PC.own_builds({("permute", np.dtype(np.float32))}) == []  # loaded: nothing to build


def test_a_first_large_add_does_not_wait_for_the_plugins_team_kernel(tmp_path, monkeypatch):
    """elementwise.c's team add is built on the plugin's thread at its first use (numpy adds
    meanwhile, to the same bits), and used once it has landed."""
    from plugins.cpu import compiler as PC
    from plugins.cpu import elementwise

    cache = C.ProgramCache(tmp_path)
    monkeypatch.setattr(PC, "_PROGRAM_CACHE", cache)
    monkeypatch.setattr(PC, "_OWN", {})
    monkeypatch.setattr(PC, "_QUEUED", set())
    monkeypatch.setattr(PC, "_TRIED", set())
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(1 << 12).astype(np.float32) for _ in range(2))
    y = np.empty_like(a)
    assert elementwise.binary_call(0, a, b, y, 2) is None  # building: numpy's turn
    PC._later().submit(lambda: None).result()  # the plugin's build thread is done with it
    call = elementwise.binary_call(0, a, b, y, 2)
    assert call is not None and cache.stats.compiles == 1
    call()
    np.testing.assert_array_equal(y, a + b)


def test_a_float64_to_float32_cast_builds_no_bfloat16_library(tmp_path, monkeypatch):
    from plugins.cpu import compiler as PC
    from plugins.cpu import elementwise

    cache = C.ProgramCache(tmp_path)
    monkeypatch.setattr(PC, "_PROGRAM_CACHE", cache)
    monkeypatch.setattr(PC, "_OWN", {})
    monkeypatch.setattr(elementwise, "_PROGRAMS", [])
    x = np.linspace(-3, 3, 300)
    with fw.device("cpu"):
        y = fw.to_tensor(x).astype("float32").numpy()
    np.testing.assert_array_equal(y, x.astype(np.float32))
    assert cache.stats.compiles == 0 and elementwise._PROGRAMS == []
