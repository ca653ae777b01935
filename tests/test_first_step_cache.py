"""First-call latency (issue 36): a second process with a warm kernel cache runs no C compiler
and trains bit for bit as a first one that waited for its kernels; a first process that does
not wait (the kernels build in the background) trains to the same loss curve within float32
rounding, runs no compiler on its main thread, and its first step runs the ops unfused; GCC's
precompiled ``immintrin.h`` can be switched off (``OARLOCK_CC_PCH=0``) and kernels still
build, to the same results; the plugin's own C files of several entries build once for all
of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import framework as fw
from framework import compiler
from framework.compiler import cache as C

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(compiler.compiler_for(fw.Device("cpu")) is None, reason="no C compiler")

# The child trains the tiny Llama under to_static for three steps and reports the losses' and
# the parameters' bits, the kernel cache's statistics, every compiler process it started (and
# those started on the main thread) and the background builds' counters after each step. The
# C compiler's builds on other threads (the background) wait until the first step is done, so
# that step runs before any kernel landed; the child then waits for the builds.
_CHILD = textwrap.dedent(
    """
    import json, os, subprocess, sys, threading
    sys.path.insert(0, sys.argv[1])
    started, on_main = [], []
    _init = subprocess.Popen.__init__
    def _watch(self, args, *a, **k):
        started.append(list(map(str, args)) if isinstance(args, (list, tuple)) else [str(args)])
        if threading.current_thread() is threading.main_thread():
            on_main.append(started[-1])
        _init(self, args, *a, **k)
    subprocess.Popen.__init__ = _watch
    import numpy as np
    import framework as fw
    from conformance.models import build
    from framework import compiler
    from framework.compiler import cache_stats
    from plugins.cpu import compiler as PC
    from framework.ir.passes import fusion
    first_done = threading.Event()
    _compile = PC.CPUCompiler.compile
    def _gated(self, *a, **k):
        if threading.current_thread().name.startswith("oarlock-"):  # the background's threads
            first_done.wait()
        return _compile(self, *a, **k)
    PC.CPUCompiler.compile = _gated
    grown = []
    _grow = fusion.Fusion._grow
    def _count(self, *a, **k):
        grown.append(1)
        return _grow(self, *a, **k)
    fusion.Fusion._grow = _count
    task = build("tiny_llama", 0, "cpu", True)
    losses, stats = [], []
    with fw.device("cpu"):
        for s in range(3):
            losses.append(np.float32(task.train_step(s).item()).tobytes().hex())
            stats.append(compiler.background_stats())
            if s == 0:
                first_done.set()
                assert compiler.wait_for_builds(timeout=800)
    params = [p.numpy().tobytes().hex() for p in task.model.parameters()]
    cc = os.path.realpath(PC.find_cc())
    compilers = [a for a in started if a and os.path.realpath(a[0]) == cc]
    on_main = [a for a in on_main if a and os.path.realpath(a[0]) == cc]
    print(json.dumps({"losses": losses, "params": params, "stats": cache_stats(), "compilers": compilers,
                      "on_main": on_main, "background": stats, "grown": len(grown)}))
    """
)


def _run(script, cache, **env):
    e = dict(os.environ, OARLOCK_CACHE_DIR=str(cache), **env)
    r = subprocess.run(
        [sys.executable, "-c", script, ROOT], capture_output=True, text=True, env=e, timeout=900, cwd=ROOT
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _floats(hexes):
    return np.concatenate([np.frombuffer(bytes.fromhex(h), np.float32).ravel() for h in hexes])


def test_warm_process_runs_no_compiler_and_is_bit_identical(tmp_path):
    cache = tmp_path / "kc"
    cold = _run(_CHILD, cache, OARLOCK_COMPILE_BACKGROUND="0")  # its first step waits for the builds
    assert cold["stats"]["compiles"] > 0 and cold["compilers"], cold["stats"]
    assert cold["background"][-1]["stand_in_runs"] == 0
    warm = _run(_CHILD, cache, OARLOCK_COMPILE_BACKGROUND="1")  # nothing to build: no stand-in
    assert warm["compilers"] == [], warm["compilers"]
    assert warm["background"][-1] == {"batches": 0, "builds": 0, "stand_in_runs": 0, "swaps": 0}
    assert cold["grown"] > 0 and warm["grown"] == 0  # the fusion groups came from the answers file
    assert warm["stats"]["compiles"] == 0 and warm["stats"]["disk_hits"] > 0, warm["stats"]
    assert warm["losses"] == cold["losses"]
    assert warm["params"] == cold["params"]
    # the answers of the fusion pass were kept beside the kernels
    assert list(cache.glob("fusion-answers-*.bin"))

    # A cold process that does not wait: no compiler on the main thread, the first step on
    # stand-ins (the groups' ops unfused, the plugin's numpy paths), then the built kernels
    # swapped in; the loss curve and the parameters equal the waiting run's within float32
    # rounding (the unfused ops round differently from the fused kernels).
    bg = _run(_CHILD, tmp_path / "bg", OARLOCK_COMPILE_BACKGROUND="1")
    assert bg["compilers"] and bg["on_main"] == [], bg["on_main"]
    first, second, third = bg["background"]
    assert first["batches"] >= 1 and first["stand_in_runs"] > 0 and first["swaps"] == 0, first
    assert second["swaps"] > 0, second
    assert third["stand_in_runs"] == second["stand_in_runs"] == first["stand_in_runs"], (first, second, third)
    np.testing.assert_allclose(_floats(bg["losses"]), _floats(cold["losses"]), rtol=2e-6)
    np.testing.assert_allclose(_floats(bg["params"]), _floats(cold["params"]), rtol=1e-4, atol=1e-6)
    # the background builds were all kept: a warm process after it compiles nothing and runs
    # no stand-in (its bits may differ from the waiting run's where tuning chose another
    # vector width on the other cache)
    again = _run(_CHILD, tmp_path / "bg", OARLOCK_COMPILE_BACKGROUND="1")
    assert again["compilers"] == [] and again["background"][-1]["stand_in_runs"] == 0
    np.testing.assert_allclose(_floats(again["losses"]), _floats(cold["losses"]), rtol=2e-6)


# a child's first lines: the repository on its path, every process it starts in ``started``
_WATCH = textwrap.dedent(
    """
    import json, os, subprocess, sys
    sys.path.insert(0, sys.argv[1])
    started = []
    _init = subprocess.Popen.__init__
    def _watch(self, args, *a, **k):
        started.append(list(map(str, args)))
        _init(self, args, *a, **k)
    subprocess.Popen.__init__ = _watch
    """
)

# A kernel that includes immintrin.h (what the precompiled header serves), checked against numpy.
_PCH_CHILD = _WATCH + textwrap.dedent(
    """
    import numpy as np
    import framework as fw
    from framework import compiler
    from framework.compiler import CACHE
    src = '''#include <immintrin.h>
    #include <stdint.h>
    void pch_probe(float* y, const float* x, int64_t n) {
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) {
            __m256 v = _mm256_loadu_ps(x + i);
            _mm256_storeu_ps(y + i, _mm256_fmadd_ps(v, v, _mm256_set1_ps(0.5f)));
        }
        for (; i < n; ++i) y[i] = x[i] * x[i] + 0.5f;
    }
    '''
    comp = compiler.compiler_for(fw.Device("cpu"))
    prog = CACHE.get(comp, src, "pch_probe")
    x = np.linspace(-3, 3, 21, dtype=np.float32)
    y = np.zeros_like(x)
    comp.launch(prog, [y, x, np.int64(x.size)], (x.size,), None, None)
    builds = [a for a in started if any(s.endswith("pch_probe.c") for s in a)]
    print(json.dumps({"y": y.tolist(), "include": [a[a.index("-include") + 1] for a in builds if "-include" in a],
                      "builds": len(builds)}))
    """
)


def _is_gcc():
    from plugins.cpu.compiler import _is_gcc, find_cc

    return find_cc() is not None and _is_gcc(find_cc())


@pytest.mark.skipif(not _is_gcc(), reason="precompiled headers are GCC's")
def test_precompiled_header_on_and_off(tmp_path):
    x = np.linspace(-3, 3, 21, dtype=np.float32)
    want = x * x + np.float32(0.5)
    on = _run(_PCH_CHILD, tmp_path / "on")
    off = _run(_PCH_CHILD, tmp_path / "off", OARLOCK_CC_PCH="0")
    for got in (on, off):
        assert got["builds"] == 1
        np.testing.assert_allclose(np.float32(got["y"]), want, rtol=1e-6)
    assert on["y"] == off["y"]
    assert len(on["include"]) == 1 and on["include"][0].endswith(".h")
    assert off["include"] == []
    # the .gch is a signed entry of the kernel cache (big: the whole intrinsics header), none when off
    sizes = lambda d: [p.stat().st_size for p in d.rglob("*.bin") if not p.name.startswith("fusion-")]  # noqa: E731
    assert max(sizes(tmp_path / "on")) > 1 << 20
    assert max(sizes(tmp_path / "off")) < 1 << 20


def test_own_c_of_several_entries_builds_once(tmp_path, monkeypatch):
    """layout.c's permute and concat come from one build (one cache entry)."""
    from plugins.cpu import compiler as PC

    monkeypatch.setenv("OARLOCK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("OARLOCK_CC_PCH", "0")  # the precompiled header would be a second build
    cache = C.ProgramCache(tmp_path)
    monkeypatch.setattr(PC, "_PROGRAM_CACHE", cache)
    monkeypatch.setattr(PC, "_OWN", {})
    path = os.path.join(ROOT, "plugins", "cpu", "layout.c")
    perm = PC.own_program(path, "permute_runs", (), "permute")
    cat = PC.own_program(path, "concat_rows", (), "concat")
    assert perm is not None and cat is not None
    assert cache.stats.compiles == 1
    # both entries are real functions of the one library (the layout tests run them against numpy)
    assert perm.entry == "permute_runs" and cat.entry == "concat_rows" and perm.ffi is cat.ffi


@pytest.mark.parametrize("wide", ["1", "0"])
def test_attention_c_builds_both_vector_widths_in_one_compile(tmp_path, monkeypatch, wide):
    """attention.c's AVX2 and AVX-512 entries come from one build, the one the prebuild starts
    (the wide one used to be a second compiler at the first bind, on the step's critical path);
    both widths compute numpy's attention. Where the wide one does not pay
    (``OARLOCK_CPU_ATTENTION_WIDE=0``, the default on a Zen 4) the build leaves it out
    (``-DATTN_NARROW_ONLY``: its entries run the AVX2 code)."""
    from plugins.cpu import attention as A
    from plugins.cpu import compiler as PC

    monkeypatch.setenv("OARLOCK_CC_PCH", "0")
    monkeypatch.setenv("OARLOCK_CPU_ATTENTION_WIDE", wide)
    cache = C.ProgramCache(tmp_path)
    monkeypatch.setattr(PC, "_PROGRAM_CACHE", cache)
    monkeypatch.setattr(PC, "_OWN", {})
    PC.cc_facts(PC.find_cc())  # the compiler's probes: asked before counting builds
    before = cache.stats.compiles
    f32 = np.dtype(np.float32)
    builds = PC.own_builds({("attention", f32), ("attention_grad", f32)})
    assert len(builds) == 1 and builds[0].kernels == len(A.ENTRIES) == 6
    builds[0]()
    assert ("-DATTN_NARROW_ONLY" in builds[0].args[2]) == (wide == "0")
    progs = A._programs(f32)  # what the first bind asks for: kept, not built again
    assert cache.stats.compiles - before == 1
    assert [p.entry for p in progs] == list(A.ENTRIES) and len({id(p.ffi) for p in progs}) == 1

    rng = np.random.default_rng(3)
    bh, lq, lk, d = 4, 40, 48, 16  # heads of one 64-byte vector and 3 of keys: what _wide takes
    q, k, v = (rng.standard_normal((bh, n, d)).astype(np.float32) for n in (lq, lk, lk))
    s = q @ np.swapaxes(k, -1, -2) * np.float32(0.25)
    s = np.where(np.arange(lk)[None, :] <= np.arange(lq)[:, None] + (lk - lq), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v
    for fwd in (progs[0], progs[2]):  # attn_fwd (AVX2), attn_fwd_wide (AVX-512)
        o = np.empty_like(q)
        b = fwd.ffi.from_buffer
        assert fwd.fn(b(q), b(k), b(v), b(o), bh, lq, lk, d, d, 0.25, 1) == 0
        np.testing.assert_allclose(o, want, rtol=2e-5, atol=2e-5)


def test_kernels_with_the_same_helpers_and_entry_build_as_one_unit(tmp_path):
    """Two sources that define the same static helper, macro and entry name (as a group's
    vector-width variants do) become one translation unit, each part running its own code."""
    from framework.compiler import unit
    from plugins.cpu.compiler import CPUCompiler

    def src(n, scale):
        return (
            "#include <stdint.h>\n#include <immintrin.h>\n"
            f"#define N {n}\n"
            "static inline __attribute__((always_inline)) float helper(float x) "
            f"{{ return x * {scale}.0f; }}\n"
            "static const float bias[2] = {1.0f, 2.0f};\n"
            "void kern(float* restrict y, const float* restrict x) {\n"
            "    for (int64_t i = 0; i < N; ++i) y[i] = helper(x[i]) + bias[i % 2];\n}\n"
        )

    from framework.compiler.eager import Kernel

    text, entries = unit.one_unit([(src(5, 2), "kern"), (src(7, 3), "kern")])
    assert entries == ["kern__u0", "kern__u1"]
    cache, comp = C.ProgramCache(tmp_path), CPUCompiler()
    kernels = [
        Kernel(None, src(5, 2), "kern", "c", 0, "rows"),
        Kernel(None, src(7, 3), "kern", "c", 0, "rows"),
    ]
    unit.build_unit(kernels, comp, cache)
    # each kernel's own lookup (as a merged kernel's dispatch makes it again) gets the unit's part
    progs = [cache.get(comp, k.source, k.entry) for k in kernels]
    assert cache.stats.compiles == 1 and [k.programs[id(comp)] for k in kernels] == progs
    x = np.arange(8, dtype=np.float32)
    for prog, n, scale in ((progs[0], 5, 2), (progs[1], 7, 3)):
        y = np.zeros(8, np.float32)
        comp.launch(prog, [y, x], (8,), None, None)
        want = np.zeros(8, np.float32)
        want[:n] = x[:n] * scale + np.float32([1, 2])[np.arange(n) % 2]
        np.testing.assert_array_equal(y, want)


# A small program of several fused groups, prebuilt with or without units: its outputs' bits and
# how many compiler processes built its kernels.
_UNIT_CHILD = _WATCH + textwrap.dedent(
    """
    import numpy as np
    import framework as fw
    from plugins.cpu.compiler import find_cc
    w = fw.to_tensor(np.linspace(-0.5, 0.5, 64, dtype=np.float32).reshape(8, 8))
    def f(x):
        h = fw.exp(x * 0.37) + fw.sin(x)
        y = fw.matmul(h, w)
        z = fw.tanh(y * 1.13) * 2.0 - y
        return fw.matmul(z, w).sum(-1) + fw.sqrt(fw.abs(z)).mean(-1)
    x = fw.to_tensor(np.linspace(-1, 1, 4096, dtype=np.float32).reshape(512, 8))
    with fw.device("cpu"), fw.no_grad():
        fw.matmul(x, w)
        cc = os.path.realpath(find_cc())
        before = len(started)
        out = fw.jit.to_static(f)(x).numpy()
    builds = [a for a in started[before:] if a and os.path.realpath(a[0]) == cc]
    print(json.dumps({"out": out.tobytes().hex(), "builds": len(builds)}))
    """
)


def test_a_programs_kernels_built_in_units_are_bit_identical_with_fewer_compilers(tmp_path):
    # the first call waits for its kernels (not in the background): it runs them
    alone = _run(_UNIT_CHILD, tmp_path / "alone", OARLOCK_PREBUILD_UNITS="0", OARLOCK_COMPILE_BACKGROUND="0")
    units = _run(_UNIT_CHILD, tmp_path / "units", OARLOCK_COMPILE_BACKGROUND="0")
    assert units["out"] == alone["out"]
    assert 0 < units["builds"] < alone["builds"], (units["builds"], alone["builds"])
    x = np.linspace(-1, 1, 4096, dtype=np.float32).reshape(512, 8)
    w = np.linspace(-0.5, 0.5, 64, dtype=np.float32).reshape(8, 8)
    y = (np.exp(x * np.float32(0.37)) + np.sin(x)) @ w
    z = np.tanh(y * np.float32(1.13)) * 2 - y
    want = (z @ w).sum(-1) + np.sqrt(np.abs(z)).mean(-1)
    np.testing.assert_allclose(
        np.frombuffer(bytes.fromhex(units["out"]), np.float32), want, rtol=1e-4, atol=1e-5
    )
