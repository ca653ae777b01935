"""A new program's fused kernels are built in parallel before it first runs (the compiler's
prebuild hook of to_static), with one progress line for the batch."""

from __future__ import annotations

import threading
import time

import numpy as np

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
    capsys.readouterr()
    with fw.no_grad():
        got = fw.jit.to_static(f)(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert len(threads) >= 2 and "MainThread" not in threads, threads
    err = capsys.readouterr().err
    assert err.count("[compiler] compiling") == 1 and f"compiling {len(threads)} kernels (c)" in err, err
