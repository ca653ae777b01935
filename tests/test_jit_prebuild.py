"""A new program's fused kernels are built in parallel before it first runs (the compiler's
prebuild hook of to_static), with one progress line for the batch."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

import framework as fw
from framework import compiler
from framework.compiler import cache


def test_a_new_programs_kernels_build_in_worker_threads_with_one_progress_line(monkeypatch, tmp_path, capsys):
    dev = fw.get_device()
    comp = compiler.compiler_for(dev)
    if comp is None:
        return  # no compile access: nothing is built (the program runs its ops unfused)
    c = 1.0 + float(np.random.default_rng().integers(1, 10**6)) / 1e7  # sources no run has built
    w = fw.to_tensor(np.eye(8, dtype=np.float32) * 0.5)

    def f(x):
        h = fw.exp(x * c) + 1.0  # a group
        y = fw.matmul(h, w)  # a product between the groups
        return fw.tanh(y * c) * 2.0  # another group

    x = fw.to_tensor(np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8))
    want = np.tanh((np.exp(x.numpy() * c) + 1.0) @ w.numpy() * c) * 2.0
    fw.matmul(x, w)  # the plugin's own product kernel, built before the clock starts
    threads: list[str] = []
    build = type(comp).compile

    def compile_(self, source, entry, options=()):
        threads.append(threading.current_thread().name)
        time.sleep(0.5)  # slow enough for the batch's progress line
        return build(self, source, entry, options)

    monkeypatch.setattr(type(comp), "compile", compile_)
    monkeypatch.setattr(cache, "PROGRESS_AFTER", 0.2)
    monkeypatch.setenv("OARLOCK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("OARLOCK_COMPILE_BACKGROUND", "1")  # the call does not wait for them
    capsys.readouterr()
    with fw.no_grad():
        got = fw.jit.to_static(f)(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert compiler.wait_for_builds(timeout=600)  # they build in the background (background.py)
    assert len(threads) >= 2 and "MainThread" not in threads, threads
    err = capsys.readouterr().err
    assert err.count("[compiler] compiling") == 1 and f"compiling {len(threads)} kernels (c)" in err, err


def _unique() -> float:
    return 1.0 + float(np.random.default_rng().integers(1, 10**6)) / 1e7  # sources no run has built


def _fusion_backend():
    from framework.compiler import fused
    from framework.ir.passes import fusion

    return next(b for b in fusion.BACKENDS if isinstance(b, fused.Backend))


def test_the_fusion_passs_answers_are_kept_signed_and_reused_by_the_next_process(monkeypatch, tmp_path):
    """A fresh process (its in-memory answers and the file read forgotten) asks the compiler
    nothing the file already answers; a damaged or foreign file is ignored."""
    from framework.compiler import answers, fused

    if compiler.compiler_for(fw.get_device()) is None:
        return  # no compile access: the fusion pass asks nothing
    monkeypatch.setenv("OARLOCK_CACHE_DIR", str(tmp_path))
    answers.FUSION.forget()
    backend = _fusion_backend()
    c = _unique()

    def f(x):
        return fw.tanh(fw.exp(x * c) + 1.0) * 2.0

    x = fw.to_tensor(np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8))
    want = np.tanh(np.exp(x.numpy() * c) + 1.0) * 2.0
    asked: list[int] = []
    check = fused.Backend._check

    def counting(self, body, device, full):
        asked.append(1)
        return check(self, body, device, full)

    monkeypatch.setattr(fused.Backend, "_check", counting)
    with fw.no_grad():
        np.testing.assert_allclose(fw.jit.to_static(f)(x).numpy(), want, rtol=1e-5, atol=1e-6)
    first = len(asked)
    assert first >= 1  # the group was asked about
    answers.FUSION.save()
    (path,) = tmp_path.glob("fusion-answers-*.bin")
    assert path.stat().st_mode & 0o077 == 0

    def again() -> int:
        backend._answers.clear()
        answers.FUSION.forget()
        asked.clear()
        with fw.no_grad():
            np.testing.assert_allclose(fw.jit.to_static(f)(x).numpy(), want, rtol=1e-5, atol=1e-6)
        return len(asked)

    assert again() == 0  # every answer came from the file
    data = bytearray(path.read_bytes())
    data[-2] ^= 1  # one bit of the answers changed: the HMAC no longer matches
    path.write_bytes(bytes(data))
    assert again() == first
    stale = tmp_path / "fusion-answers-of-an-old-checkout.bin"
    stale.write_bytes(b"old")
    os.utime(stale, (0, 0))
    answers.FUSION.save()  # rewritten, signed again; a file unused for a week is removed
    assert not stale.exists() and path.exists()
    monkeypatch.setenv("OARLOCK_CACHE_KEY_FILE", str(tmp_path / "other-user" / "key"))
    assert again() == first  # signed under another user's key: not trusted
    answers.FUSION.forget()


def test_the_c_compilers_probes_are_asked_once_per_machine(tmp_path):
    """The flag probes and version of the C compiler go through the kernel cache: a second
    process reads them (one verified disk hit, no compiler process) and they agree with
    asking the compiler."""
    cpu = pytest.importorskip("plugins.cpu.compiler")
    cc = cpu.find_cc()
    if cc is None:
        pytest.skip("no C compiler")
    first, second = cache.ProgramCache(tmp_path), cache.ProgramCache(tmp_path)
    got = first.get(cpu._FactsCompiler(cc), "cc facts 1", "facts")
    assert first.stats.compiles == 1
    again = second.get(cpu._FactsCompiler(cc), "cc facts 1", "facts")
    assert second.stats.disk_hits == 1 and second.stats.compiles == 0
    assert got == again == cpu._probe_facts(cc)
    flags = cpu.CPUCompiler().flags()
    assert ("-fopenmp" in flags) == cpu.cc_facts(cc).openmp
    assert ("-lmvec" in flags) == cpu.cc_facts(cc).vector_math


def test_the_optimizers_update_kernels_build_in_worker_threads(monkeypatch, tmp_path):
    """The fused optimizer's program is prebuilt like a trace's: its kernels compile in the
    worker threads, and its update equals the eager one."""
    comp = compiler.compiler_for(fw.get_device())
    if comp is None:
        return
    rng = np.random.default_rng(0)
    shapes = [(6, 5), (5,), (3, 4)]
    lr = _unique() / 100  # a new constant: new update kernels

    def run(fused):
        ps = [
            fw.nn.Parameter.from_tensor(fw.to_tensor(rng.standard_normal(s).astype(np.float32)))
            for s in shapes
        ]
        init = [p.numpy().copy() for p in ps]
        opt = fw.optim.Adam(
            lr, parameters=ps, weight_decay=0.01, grad_clip=fw.optim.ClipGradByGlobalNorm(1.0), fused=fused
        )
        for p in ps:
            p.grad = fw.to_tensor(np.full(p.shape, 0.5, np.float32))
        opt.step()
        return init, [p.numpy() for p in ps]

    threads: list[str] = []
    build = type(comp).compile

    def compile_(self, source, entry, options=()):
        threads.append(threading.current_thread().name)
        return build(self, source, entry, options)

    monkeypatch.setattr(type(comp), "compile", compile_)
    monkeypatch.setenv("OARLOCK_CACHE_DIR", str(tmp_path))
    init, got = run(True)
    assert threads and "MainThread" not in threads, threads
    ps = [fw.nn.Parameter.from_tensor(fw.to_tensor(a)) for a in init]
    opt = fw.optim.Adam(
        lr, parameters=ps, weight_decay=0.01, grad_clip=fw.optim.ClipGradByGlobalNorm(1.0), fused=False
    )
    for p in ps:
        p.grad = fw.to_tensor(np.full(p.shape, 0.5, np.float32))
    opt.step()
    for g, p in zip(got, ps):
        np.testing.assert_allclose(g, p.numpy(), rtol=1e-6, atol=1e-7)
