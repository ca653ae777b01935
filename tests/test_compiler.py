"""framework.compiler: lowering to the loop IR, emitters, generated kernels in eager mode
(forward and backward, every device with compile access), against numpy references."""

from __future__ import annotations

import math
import os
import re
import sys

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework import compiler
from framework.compiler import eager, loop_ir

EMIT = sys.modules["framework.compiler.emit"]


@pytest.fixture(autouse=True, scope="module")
def _cache_dir(tmp_path_factory: pytest.TempPathFactory):
    old = os.environ.get("OARLOCK_CACHE_DIR")
    os.environ["OARLOCK_CACHE_DIR"] = str(tmp_path_factory.mktemp("kernels"))
    yield
    if old is None:
        os.environ.pop("OARLOCK_CACHE_DIR", None)
    else:
        os.environ["OARLOCK_CACHE_DIR"] = old


def _compile_dev(device: str) -> str:
    if not compiler.has_compile_access(device):
        pytest.skip(f"{device} has no compile access")
    return device


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# -- numpy references -----------------------------------------------------------------------
def ref_rms(x, w, eps=1e-6):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def ref_ln(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def ref_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def ref_log_softmax(x):
    s = x - x.max(-1, keepdims=True)
    return s - np.log(np.exp(s).sum(-1, keepdims=True))


# -- lowering -------------------------------------------------------------------------------
def test_rms_norm_lowers_to_one_reduction_and_two_passes():
    x, w = fw.randn([4, 16]), fw.randn([16])
    p = compiler.lower("rms_norm", x, w, epsilon=1e-6)
    nodes = loop_ir.live_nodes(p.outputs)
    assert [n.attr for n in nodes if n.op == "reduce"] == ["sum"]
    assert p.inputs[0][1:] == (True, True) and p.inputs[1][1:] == (False, True)
    sched = loop_ir.schedule(p)
    assert len(sched.loops) == 2 and len(sched.loops[0].reductions) == 1 and sched.loops[1].stores


def test_softmax_lowers_to_max_then_sum():
    p = compiler.lower("softmax", fw.randn([3, 8]), axis=1)
    sched = loop_ir.schedule(p)
    assert [[r.attr for r in lp.reductions] for lp in sched.loops] == [["max"], ["sum"], []]


def test_not_a_fusion_group():
    with pytest.raises(compiler.NotFusible, match="not along the row"):
        compiler.lower("softmax", fw.randn([3, 8]), axis=0)


def test_emitters_produce_each_language():
    p = compiler.lower(
        "layer_norm",
        fw.randn([2, 8]),
        fw.randn([8]),
        fw.randn([8]),
        epsilon=1e-5,
        has_weight=True,
        has_bias=True,
    )
    c = compiler.emit(p, "c", "ln")
    cl = compiler.emit(p, "opencl-c", "ln")
    cu = compiler.emit(p, "cuda", "ln")
    assert "#pragma omp parallel for" in c and "reduction(+:" in c and "#define N 8" in c
    assert "__kernel" in cl and "barrier(CLK_LOCAL_MEM_FENCE)" in cl and "rsqrt(" in cl
    assert 'extern "C" __global__' in cu and "__syncthreads()" in cu
    with pytest.raises(NotImplementedError, match="no emitter"):
        compiler.emit(p, "fortran", "ln")


# -- compile access through the cache -------------------------------------------------------
def test_trivial_kernel_on_device(device):
    _compile_dev(device)
    x = fw.to_tensor(np.arange(10, dtype=np.float32), device=device)
    y = compiler.run_trivial_kernel(x, 3.0)
    np.testing.assert_allclose(y.numpy(), 3.0 * np.arange(10) + 1.0)


def test_disk_cache_hit_in_a_fresh_cache(tmp_path):
    comp = compiler.compiler_for(fw.Device("cpu"))
    src = compiler.trivial_kernel("c", "cache_probe")
    first = compiler.ProgramCache(tmp_path)
    first.get(comp, src, "cache_probe")
    first.get(comp, src, "cache_probe")
    assert (first.stats.compiles, first.stats.memory_hits) == (1, 1)
    second = compiler.ProgramCache(tmp_path)
    prog = second.get(comp, src, "cache_probe")
    assert (second.stats.compiles, second.stats.disk_hits) == (0, 1)
    x = np.arange(4, dtype=np.float32)
    y = np.zeros(4, np.float32)
    comp.launch(prog, [y, x, np.float32(2), np.int64(4)], (4,), None, None)
    np.testing.assert_allclose(y, 2 * x + 1)
    assert len(list(tmp_path.rglob("*.bin"))) == 1


def _build_in_process(args):
    directory, source = args
    import framework as fw_
    from framework import compiler as c_

    cache = c_.ProgramCache(directory)
    prog = cache.get(c_.compiler_for(fw_.Device("cpu")), source, "race")
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    c_.compiler_for(fw_.Device("cpu")).launch(prog, [y, x, np.float32(5), np.int64(8)], (8,), None, None)
    return cache.stats.compiles, y.tolist()


def test_concurrent_processes_share_one_build(tmp_path):
    import multiprocessing as mp

    src = compiler.trivial_kernel("c", "race")
    with mp.get_context("spawn").Pool(3) as pool:
        res = pool.map(_build_in_process, [(str(tmp_path), src)] * 3)
    assert sum(c for c, _ in res) == 1  # the file lock lets exactly one process compile
    for _, y in res:
        assert y == [5.0 * i + 1 for i in range(8)]
    assert len(list(tmp_path.rglob("*.bin"))) == 1 and not list(tmp_path.rglob(".tmp-*"))


def test_compile_error_shows_log_and_numbered_source(device):
    _compile_dev(device)
    lang = compiler.compiler_for(fw.Device(device.split(":")[0])).language
    src = compiler.trivial_kernel(lang, "broken").replace("a * x[i]", "a * x[i] + undefined_name")
    bad_line = next(i for i, ln in enumerate(src.splitlines(), 1) if "undefined_name" in ln)
    with pytest.raises(fw.compiler.CompileError) as info:
        compiler.compile_source(src, "broken", device)
    msg = str(info.value)
    assert msg.startswith("[compiler]") and "undefined_name" in msg and "--- compiler log ---" in msg
    assert f">> {bad_line} |" in msg.replace(">>  ", ">> ")


def test_a_declaration_cffi_cannot_read_is_a_compile_error_naming_the_entry():
    """The cpu plugin's compile access refuses an entry whose parameters use a type only the
    source defines (its C programs then run in numpy, warned), instead of a cffi error at
    load time."""
    from plugins.cpu import compiler as cpu_compiler

    with pytest.raises(
        fw.compiler.CompileError, match=r"cffi cannot read the declaration of 'f' \(int f\(T\* x\)\)"
    ):
        cpu_compiler.CPUCompiler().compile("#define T float\nint f(T* x) { return 0; }\n", "f")
    prog = cpu_compiler.CPUCompiler().load(
        cpu_compiler.CPUCompiler().compile("int g(void* x) { return 7; }", "g"), "g"
    )
    assert prog.fn(prog.ffi.NULL) == 7


def test_no_c_compiler_says_so_and_decomposes(monkeypatch):
    from plugins.cpu import compiler as cpu_compiler

    monkeypatch.setenv("CC", "/nonexistent/cc")
    cpu_compiler.find_cc.cache_clear()
    try:
        with pytest.raises(fw.compiler.CompileError, match="no C compiler found"):
            cpu_compiler.CPUCompiler().compile("void f(void) {}", "f")
        eager.reset()
        x = fw.randn([3, 17])
        with pytest.warns(compiler.CompileWarning, match="no C compiler"):
            y = F.rms_norm(x)
        np.testing.assert_allclose(y.numpy(), ref_rms(x.numpy(), 1.0), rtol=1e-5, atol=1e-6)
        assert fw.op_path_stats()["rms_norm@cpu"]["decomposed"] >= 1
    finally:
        cpu_compiler.find_cc.cache_clear()
        eager.reset()


# -- eager generated kernels ----------------------------------------------------------------
def _generated(op: str, device: str) -> int:
    return fw.op_path_stats().get(f"{op}@{device.split(':')[0]}", {}).get("generated", 0)


@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("float64", 1e-12)])
def test_forward_matches_numpy(device, dtype, tol):
    _compile_dev(device)
    r = _rng(1)
    xn = r.standard_normal((5, 3, 40)).astype(dtype)
    wn = r.standard_normal(40).astype(dtype)
    bn = r.standard_normal(40).astype(dtype)
    x, w, b = (fw.to_tensor(a, device=device) for a in (xn, wn, bn))
    cases = [
        ("rms_norm", lambda: F.rms_norm(x, weight=w), ref_rms(xn, wn)),
        ("layer_norm", lambda: F.layer_norm(x, 40, w, b), ref_ln(xn, wn, bn)),
        ("softmax", lambda: F.softmax(x), ref_softmax(xn)),
        ("log_softmax", lambda: F.log_softmax(x), ref_log_softmax(xn)),
        ("gelu", lambda: F.gelu(x), 0.5 * xn * (1 + np.vectorize(math.erf)(xn / math.sqrt(2)))),
        ("silu", lambda: F.silu(x), xn / (1 + np.exp(-xn))),
    ]
    for name, fn, ref in cases:
        before = _generated(name, device)
        got = fn()
        assert _generated(name, device) == before + 1, name
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got.numpy(), ref, rtol=tol, atol=tol, err_msg=name)


def test_one_program_serves_every_batch_size(device):
    _compile_dev(device)
    w = fw.to_tensor(_rng(2).standard_normal(24).astype(np.float32), device=device)
    F.rms_norm(fw.randn([2, 24]).to(device), weight=w)
    compiles = compiler.cache_stats()["compiles"]
    for rows in (1, 7, 300):
        xn = _rng(rows).standard_normal((rows, 24)).astype(np.float32)
        y = F.rms_norm(fw.to_tensor(xn, device=device), weight=w)
        np.testing.assert_allclose(y.numpy(), ref_rms(xn, w.numpy()), rtol=2e-5, atol=2e-5)
    assert compiler.cache_stats()["compiles"] == compiles


def test_compile_off_uses_the_decomposition(monkeypatch):
    monkeypatch.setenv("OARLOCK_COMPILE", "0")
    before = fw.op_path_stats().get("softmax@cpu", {"decomposed": 0})["decomposed"]
    x = fw.randn([4, 9])
    np.testing.assert_allclose(F.softmax(x).numpy(), ref_softmax(x.numpy()), rtol=1e-5, atol=1e-7)
    assert fw.op_path_stats()["softmax@cpu"]["decomposed"] == before + 1


def test_nan_and_inf_follow_numpy(device):
    _compile_dev(device)
    xn = np.array([[0.0, -np.inf, 1.0, 2.0], [np.nan, 1.0, 2.0, 3.0]], np.float32)
    y = F.softmax(fw.to_tensor(xn, device=device)).numpy()
    np.testing.assert_allclose(y[0], ref_softmax(xn[:1])[0], rtol=1e-6)
    assert np.isnan(y[1]).all()


# -- backward -------------------------------------------------------------------------------
def _grads(fn, arrays, g, device):
    ts = [fw.to_tensor(a, device=device) for a in arrays]
    for t in ts:
        t.stop_gradient = False
    y = fn(*ts)
    return [q.numpy() for q in fw.grad([y], ts, [fw.to_tensor(g, device=device)])]


def _numeric(fn, arrays, g, eps=1e-6):
    """Central finite differences of sum(fn(arrays) * g), in float64 numpy."""
    out = []
    for k, a in enumerate(arrays):
        d = np.zeros_like(a)
        it = np.nditer(a, flags=["multi_index"])
        for _ in it:
            i = it.multi_index
            hi = [x.copy() for x in arrays]
            lo = [x.copy() for x in arrays]
            hi[k][i] += eps
            lo[k][i] -= eps
            d[i] = ((fn(*hi) * g).sum() - (fn(*lo) * g).sum()) / (2 * eps)
        out.append(d)
    return out


@pytest.mark.parametrize("op", ["rms_norm", "layer_norm", "softmax", "log_softmax", "gelu", "silu"])
def test_backward_is_generated_and_matches_finite_differences(device, op):
    _compile_dev(device)
    r = _rng(3)
    x = r.standard_normal((3, 6))
    w = r.standard_normal(6)
    b = r.standard_normal(6)
    g = r.standard_normal((3, 6))
    table = {
        "rms_norm": (lambda x, w: F.rms_norm(x, weight=w), lambda x, w: ref_rms(x, w), [x, w]),
        "layer_norm": (lambda x, w, b: F.layer_norm(x, 6, w, b), ref_ln, [x, w, b]),
        "softmax": (lambda x: F.softmax(x), ref_softmax, [x]),
        "log_softmax": (lambda x: F.log_softmax(x), ref_log_softmax, [x]),
        "gelu": (
            lambda x: F.gelu(x),
            lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
            [x],
        ),
        "silu": (lambda x: F.silu(x), lambda x: x / (1 + np.exp(-x)), [x]),
    }
    fn, ref, arrays = table[op]
    key = f"{op}@{device.split(':')[0]}"
    before = eager.BACKWARD_PATHS.get(key, {"generated": 0})["generated"]
    got = _grads(fn, arrays, g, device)
    assert eager.BACKWARD_PATHS[key]["generated"] == before + 1
    for a, e in zip(got, _numeric(ref, arrays, g)):
        np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-7)


def test_double_backward_uses_the_rule(device):
    _compile_dev(device)
    x = fw.to_tensor(_rng(4).standard_normal((2, 5)), device=device)
    x.stop_gradient = False
    y = F.softmax(x)
    (gx,) = fw.grad([(y * y).sum()], [x], create_graph=True)
    (ggx,) = fw.grad([gx.sum()], [x])
    xn = x.numpy()

    def first(xv):
        s = ref_softmax(xv)
        return s * (2 * s - (2 * s * s).sum(-1, keepdims=True))

    np.testing.assert_allclose(ggx.numpy(), _numeric(first, [xn], np.ones_like(xn))[0], rtol=1e-5, atol=1e-6)


def test_weight_gradient_sums_over_rows(device):
    _compile_dev(device)
    r = _rng(5)
    x = r.standard_normal((4, 2, 8)).astype(np.float32)
    w = r.standard_normal(8).astype(np.float32)
    g = r.standard_normal((4, 2, 8)).astype(np.float32)
    gx, gw = _grads(lambda x, w: F.rms_norm(x, weight=w), [x, w], g, device)
    rs = 1 / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(gw, (g * x * rs).sum((0, 1)), rtol=1e-4, atol=1e-5)
    assert gx.shape == x.shape


_CUDA_SHIM = """
struct dim3_ { unsigned x, y, z; };
static dim3_ blockIdx, threadIdx, blockDim;
#define __global__
#define __shared__ static
#define __restrict__
#define __launch_bounds__(n)
static void __syncthreads() {}
static float __int_as_float(int) { return 0; }
static double __longlong_as_double(long long) { return 0; }
#include <cmath>
using std::exp; using std::sqrt;
static float rsqrtf(float x) { return 1 / std::sqrt(x); }
static double rsqrt(double x) { return 1 / std::sqrt(x); }
"""


@pytest.mark.parametrize("op", ["rms_norm", "softmax"])
def test_cuda_source_is_valid_cpp(tmp_path, op):
    """Without a GPU: the CUDA emitter's output passes a C++ syntax check under a small shim."""
    import shutil
    import subprocess

    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    x = fw.randn([2, 8], dtype="float64")
    attrs = {"epsilon": 1e-6} if op == "rms_norm" else {"axis": 1}
    p = compiler.lower(op, x, **attrs)
    src = tmp_path / "k.cpp"
    src.write_text(_CUDA_SHIM + compiler.emit(p, "cuda", "k"))
    r = subprocess.run([cxx, "-fsyntax-only", "-std=c++17", str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_mixed_devices_raise_the_usual_error(device):
    if device.startswith("cpu"):
        pytest.skip("needs a second device type")
    x = fw.randn([2, 8]).to(device)
    w = fw.randn([8]).to("cpu")  # cpu whatever the default device is
    with pytest.raises(fw.DeviceMismatchError):
        F.rms_norm(x, weight=w)


def test_empty_rows_and_odd_shapes(device):
    _compile_dev(device)
    x = fw.to_tensor(np.zeros((0, 5), np.float32), device=device)
    assert F.softmax(x).shape == (0, 5)
    xn = _rng(9).standard_normal((3, 1, 7)).astype(np.float32)
    y = F.rms_norm(fw.to_tensor(xn, device=device))
    np.testing.assert_allclose(y.numpy(), ref_rms(xn, 1.0), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("op", ["softmax", "layer_norm"])
def test_gpu_shaped_opencl_kernels_run_on_any_opencl_device(device, op):
    """The work-group-per-row layout (what GPUs get) checked on whatever OpenCL device exists."""
    if not device.startswith("opencl"):
        pytest.skip("opencl only")
    _compile_dev(device)
    r = _rng(11)
    xn = r.standard_normal((37, 300)).astype(np.float32)
    wn, bn = r.standard_normal(300).astype(np.float32), r.standard_normal(300).astype(np.float32)
    x, w, b = (fw.to_tensor(a, device=device) for a in (xn, wn, bn))
    if op == "softmax":
        ins, attrs, ref = [x], {"axis": 1}, ref_softmax(xn)
    else:
        ins, attrs, ref = (
            [x, w, b],
            {"epsilon": 1e-5, "has_weight": True, "has_bias": True},
            ref_ln(xn, wn, bn),
        )
    k = eager.make_kernel(compiler.lower(op, *ins, **attrs), "opencl-c", device_kind="")
    assert k.layout == "groups" and "barrier(" in k.source
    out = fw.empty([37, 300], device=device)
    k.launch(x.device, ins, [out], 37)
    np.testing.assert_allclose(out.numpy(), ref, rtol=2e-5, atol=2e-5)


def test_softmax_keeps_exp_in_the_output_row():
    p = compiler.lower("softmax", fw.randn([2, 8]), axis=1)
    src = compiler.emit(p, "c", "k")
    assert src.count("expf(") == 1 and "kept for a later pass" in src


@pytest.mark.parametrize("dtype,rows", [("float32", 520), ("float64", 260)])
def test_large_outputs_take_the_streaming_store_path(dtype, rows):
    """Outputs of 8 MB and more are written with non-temporal stores (odd row length: tails)."""
    xn = _rng(12).standard_normal((rows, 4100)).astype(dtype)
    wn = _rng(13).standard_normal(4100).astype(dtype)
    assert xn.nbytes >= EMIT.CEmitter.STREAM_MIN
    y = F.rms_norm(fw.to_tensor(xn), weight=fw.to_tensor(wn))
    np.testing.assert_allclose(y.numpy(), ref_rms(xn, wn), rtol=1e-5, atol=1e-5)
    assert "oarlock_stream_" in compiler.generated_source(
        "rms_norm", fw.to_tensor(xn), fw.to_tensor(wn), epsilon=1e-6
    )


@pytest.mark.parametrize("dtype,rows", [("float32", 1031), ("float64", 517)])
def test_streamed_rows_go_out_chunk_by_chunk(dtype, rows):
    """A streamed row goes out chunk by chunk; softmax's last pass (three passes) runs during
    the next row's exp pass, the thread's last row after its loop. Every row arrives whole:
    odd rows per thread, a row length off the 32-byte grid (every other row starts off a
    line and is stored plainly), a tail chunk, exp kept in two row buffers between passes."""
    xn = _rng(14).standard_normal((rows, 2050)).astype(dtype) * 4
    assert xn.nbytes >= EMIT.CEmitter.STREAM_MIN
    src = compiler.generated_source("softmax", fw.to_tensor(xn), axis=1)
    # the pending row's last pass: the last pass's lines under the pending row's names
    tail = src.split("if (pend >= 0) {")[-1]
    assert tail.lstrip().startswith("const int64_t r = pend;") and "const bool st = pst;" in tail
    assert re.search(r"oarlock_stream(32|64)_f(32|64)\(out0 \+ r \* N \+ jj, t0, N - jj\);", tail)
    assert "sb0[N]" in src and "kept for a later pass" in src and "pend = r;" in src
    y = F.softmax(fw.to_tensor(xn), axis=-1).numpy()
    e = np.exp(xn.astype(np.float64) - xn.max(axis=1, keepdims=True))
    np.testing.assert_allclose(
        y, e / e.sum(axis=1, keepdims=True), rtol=1e-5 if dtype == "float32" else 1e-12
    )
    # plain loops (vector width 1): the last pass still streams in chunks of its own
    prog = compiler.lower("softmax", fw.to_tensor(xn), axis=1)
    k = eager.make_kernel(prog, "c", width=1)
    assert "oarlock_stream64_" in k.source and "pend = r;" in k.source
    out = fw.empty(list(xn.shape), dtype=dtype)
    k.launch(out.device, [fw.to_tensor(xn)], [out], rows)
    np.testing.assert_allclose(
        out.numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-5 if dtype == "float32" else 1e-12
    )
    # the same kernel on a strided view's copy and on a tensor whose rows start off a 32-byte line
    off = fw.to_tensor(np.ascontiguousarray(xn[:, 1:]))
    z = F.softmax(off, axis=-1).numpy()
    e2 = np.exp(xn[:, 1:].astype(np.float64) - xn[:, 1:].max(axis=1, keepdims=True))
    np.testing.assert_allclose(
        z, e2 / e2.sum(axis=1, keepdims=True), rtol=1e-5 if dtype == "float32" else 1e-12
    )


@pytest.mark.parametrize("dtype,rows", [("float32", 1031), ("float64", 517)])
@pytest.mark.parametrize("width", [1, 8, 32])
def test_a_rows_last_pass_during_the_next_rows_pass(dtype, rows, width):
    """A three-pass program whose last pass reads a kept value, the row's input again, a
    column input and row scalars of both earlier passes, into two streamed outputs and a row
    output: each row's last pass runs during the next row's second pass (the thread's last
    row after its loop), and every output equals numpy's, at every vector width."""
    dt = np.dtype(dtype)
    b = loop_ir.Builder()
    x, w = b.input(0, dt, True, True), b.input(1, dt, False, True)
    m = b.reduce("max", x)
    e = b.unary("exp", b.binary("sub", x, m))
    s = b.reduce("sum", e)
    y0 = b.binary("div", e, s)
    y1 = b.binary("add", b.binary("mul", b.binary("sub", x, m), w), s)
    prog = loop_ir.Program(
        "piped", 2050, [(dt, True, True), (dt, False, True)], [y0, y1, s], [True, True, False], b.nodes
    )
    k = eager.make_kernel(prog, "c", width=width)
    pending = k.source.split("if (pend >= 0) {")[1]
    assert "pend = r;" in k.source and "const int64_t r = pend;" in pending and "in0[r * N + j]" in pending
    xn = _rng(21).standard_normal((rows, 2050)).astype(dt) * 3
    wn = _rng(22).standard_normal(2050).astype(dt)
    assert xn.nbytes >= EMIT.CEmitter.STREAM_MIN
    outs = [
        fw.empty([rows, 2050], dtype=dtype),
        fw.empty([rows, 2050], dtype=dtype),
        fw.empty([rows], dtype=dtype),
    ]
    k.launch(outs[0].device, [fw.to_tensor(xn), fw.to_tensor(wn)], outs, rows)
    xw = xn.astype(np.float64)
    mx = xw.max(1, keepdims=True)
    ex = np.exp(xw - mx)
    sm = ex.sum(1, keepdims=True)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(outs[0].numpy(), ex / sm, rtol=tol, atol=tol)
    # y1 adds the row's sum (up to ~23 here): its error is the sum's (a float32 sum of 2050
    # terms, ~4e-6 of it), so it is bounded against the terms' size, not y1's (near 0 at places)
    y1 = (xw - mx) * wn + sm
    err = np.abs(outs[1].numpy() - y1)
    assert (err <= tol * (np.abs((xw - mx) * wn) + sm)).all(), f"y1 off by up to {err.max()}"
    np.testing.assert_allclose(outs[2].numpy(), sm[:, 0], rtol=tol)
    # a small launch of the same kernel (not streamed): the last pass in place
    few = fw.empty([3, 2050], dtype=dtype), fw.empty([3, 2050], dtype=dtype), fw.empty([3], dtype=dtype)
    k.launch(few[0].device, [fw.to_tensor(xn[:3]), fw.to_tensor(wn)], list(few), 3)
    err = np.abs(few[1].numpy() - y1[:3])
    assert (err <= tol * (np.abs((xw - mx) * wn) + sm)[:3]).all(), f"y1 off by up to {err.max()}"


def test_row_buffers_on_a_threads_stack_are_bounded(monkeypatch):
    """A chunk array per streamed output lives on each OpenMP thread's stack: past
    STREAM_BUFFERS_MAX the kernel writes its rows with plain stores instead."""
    f32 = np.dtype(np.float32)

    def prog(outputs):
        b = loop_ir.Builder()
        x = b.input(0, f32, True, True)
        outs = [b.binary("mul", x, b.const(float(i + 2), f32)) for i in range(outputs)]
        return loop_ir.Program("p", 4096, [(f32, True, True)], outs, [True] * outputs)

    per_output = EMIT.CEmitter.STREAM_CHUNK * 4
    monkeypatch.setattr(EMIT.CEmitter, "STREAM_BUFFERS_MAX", 3 * per_output)
    assert "oarlock_stream64_f32(out2" in compiler.emit(prog(3), "c", "k")
    src = compiler.emit(prog(4), "c", "k")
    assert "_f32(out" not in src and " t0[" not in src and "out0[r * N + j] =" in src


# -- issue 18: the cache loads only what it can vouch for ---------------------------------------
def _probe(cache, comp, entry):
    """Get ``entry``'s trivial kernel through ``cache`` and check it computes 2x + 1."""
    prog = cache.get(comp, compiler.trivial_kernel("c", entry), entry)
    x = np.arange(5, dtype=np.float32)
    y = np.zeros(5, np.float32)
    comp.launch(prog, [y, x, np.float32(2), np.int64(5)], (5,), None, None)
    np.testing.assert_array_equal(y, 2 * x + 1)


def _corruptions(good: bytes, other: bytes) -> dict:
    from framework.compiler import cache as C

    head = len(C.MAGIC) + 104
    rng = np.random.default_rng(3)
    return {
        "empty": (b"", "without a valid header"),
        "header only": (good[:head], "the header says \\d+ bytes of binary, the file has 0"),
        "truncated": (good[: head + (len(good) - head) // 2], "truncated or padded"),
        "random body": (good[:head] + rng.bytes(len(good) - head), "its HMAC does not match"),
        "random file": (rng.bytes(len(good)), "without a valid header"),
        "older format (bare binary)": (good[head:], "without a valid header"),
        "another kernel's entry": (other, "built for another source or options"),
        "sound header, unloadable binary": (None, "the plugin could not load it"),
    }


@pytest.mark.parametrize("kind", list(_corruptions(bytes(300), b"")))
def test_a_bad_cache_entry_is_rebuilt_with_a_warning_naming_it(tmp_path, kind):
    from framework.compiler import cache as C

    comp = compiler.compiler_for(fw.Device("cpu"))
    _probe(compiler.ProgramCache(tmp_path), comp, "kc_probe")
    _probe(compiler.ProgramCache(tmp_path), comp, "kc_other")
    key = C.program_key(comp, compiler.trivial_kernel("c", "kc_probe"), "kc_probe", ())
    path = compiler.ProgramCache(tmp_path).path(key)
    good = path.read_bytes()
    other = (
        compiler.ProgramCache(tmp_path)
        .path(C.program_key(comp, compiler.trivial_kernel("c", "kc_other"), "kc_other", ()))
        .read_bytes()
    )
    bad, why = _corruptions(good, other)[kind]
    if bad is None:
        bad = C.pack_entry(key, b"\x7fELF" + bytes(200))
    path.write_bytes(bad)
    cache = compiler.ProgramCache(tmp_path)
    if kind == "truncated":  # dlopen of a truncated library can die of SIGBUS: check in a child
        import subprocess

        code = (
            "import warnings, numpy as np, framework as fw\n"
            "from framework import compiler\n"
            f"cache = compiler.ProgramCache({str(tmp_path)!r})\n"
            "comp = compiler.compiler_for(fw.Device('cpu'))\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    prog = cache.get(comp, compiler.trivial_kernel('c', 'kc_probe'), 'kc_probe')\n"
            "x = np.arange(5, dtype=np.float32); y = np.zeros(5, np.float32)\n"
            "comp.launch(prog, [y, x, np.float32(2), np.int64(5)], (5,), None, None)\n"
            "print(cache.stats.compiles, y.tolist()); print([str(m.message) for m in w])\n"
        )
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        r = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")},
        )
        assert r.returncode == 0, r.stderr[-3000:]
        first, msgs = r.stdout.splitlines()[:2]
        assert first == "1 [1.0, 3.0, 5.0, 7.0, 9.0]"
        assert str(path) in msgs and "truncated or padded" in msgs
    else:
        with pytest.warns(
            C.CacheEntryWarning,
            match=rf"\[kernel cache\] the entry '{path}' is not usable: .*{why}.*; rebuilding it",
        ):
            _probe(cache, comp, "kc_probe")
        assert cache.stats.compiles == 1 and cache.stats.rebuilt == 1
    assert C.unpack_entry(path.read_bytes(), key)[0] is not None  # the rebuilt entry is sound
    again = compiler.ProgramCache(tmp_path)
    _probe(again, comp, "kc_probe")
    assert (again.stats.compiles, again.stats.disk_hits, again.stats.rebuilt) == (0, 1, 0)


def test_cache_folders_are_created_private(tmp_path):
    top = tmp_path / "new" / "kernels"
    cache = compiler.ProgramCache(top)
    comp = compiler.compiler_for(fw.Device("cpu"))
    _probe(cache, comp, "kc_private")
    entry = next(top.rglob("*.bin"))
    assert oct(os.stat(top).st_mode & 0o777) == oct(0o700)
    assert oct(os.stat(entry.parent).st_mode & 0o777) == oct(0o700)


@pytest.mark.parametrize(
    "mode, who", [(0o777, "its group and others"), (0o770, "its group"), (0o703, "others")]
)
def test_a_cache_folder_others_can_write_is_refused(tmp_path, mode, who):
    from framework.compiler import cache as C

    top = tmp_path / "shared"
    top.mkdir()
    os.chmod(top, mode)
    cache = compiler.ProgramCache(top)
    with pytest.raises(
        C.CacheFolderError,
        match=rf"\[kernel cache\] the folder '{top}' is writable by {who} \(mode 0{mode:o}\).*chmod 700",
    ):
        _probe(cache, compiler.compiler_for(fw.Device("cpu")), "kc_shared")
    assert cache.stats.compiles == 0 and not list(top.rglob("*.bin"))
    os.chmod(top, 0o700)
    _probe(cache, compiler.compiler_for(fw.Device("cpu")), "kc_shared")


def test_a_cache_folder_of_another_user_is_refused(tmp_path):
    from framework.compiler import cache as C

    if not hasattr(os, "getuid") or os.getuid() != 0:
        pytest.skip("needs root to give a folder to another user")
    top = tmp_path / "theirs"
    top.mkdir(mode=0o700)
    os.chown(top, 4242, -1)
    with pytest.raises(C.CacheFolderError, match=r"belongs to uid 4242, not to you \(uid 0\)"):
        _probe(compiler.ProgramCache(top), compiler.compiler_for(fw.Device("cpu")), "kc_theirs")


# -- one gradient: generated backward kernels trace the same rules as eager autograd ----------
@pytest.fixture
def tie_probe_op():
    """A composite made for this test (maximum against a vector, plus the row max), removed
    from the op table afterwards so the completeness tests never see it."""
    from framework._src.ops import base
    from framework._src.ops.composites._common import same_meta

    @base.composite("tie_probe", infer=same_meta)
    def _tie_probe(x, w):
        return fw.maximum(x, w) + fw.max(x, axis=-1, keepdim=True) * 2.0

    try:
        yield base.OPS["tie_probe"]
    finally:
        base.OPS.pop("tie_probe", None)


@pytest.mark.parametrize("compile_on", [True, False])
def test_ties_get_the_same_gradient_generated_and_decomposed(device, compile_on, monkeypatch, tie_probe_op):
    """The contract's tie rule (maximum/minimum split the gradient evenly between equal
    operands; max/min along an axis share it evenly among the tied elements) holds on the
    generated backward kernel exactly as on the decomposition: both come from one rule."""
    if compile_on:
        _compile_dev(device)
    monkeypatch.setenv("OARLOCK_COMPILE", "1" if compile_on else "0")
    from framework._src.ops import base

    op = tie_probe_op
    xv = np.array([[1.0, 2.0, 0.0, 3.0], [3.0, 3.0, -1.0, 0.5]])
    wv = np.array([1.0, 1.0, 1.0, 3.0])
    x = fw.to_tensor(xv, device=device)
    w = fw.to_tensor(wv, device=device)
    x.stop_gradient = w.stop_gradient = False
    key = f"tie_probe@{device.split(':')[0]}"
    before = eager.BACKWARD_PATHS.get(key, {"generated": 0})["generated"]
    y = base.call(op, [x, w], {})
    gx, gw = fw.grad([y], [x, w], [fw.ones_like(y)])
    # maximum(x, w): x wins where x > w, half where x == w; the row max (broadcast over the 4
    # columns, times 2) adds 8 per row, shared evenly by the tied maxima
    tie = (xv == wv).astype(float)
    win = (xv > wv).astype(float)
    rowmax = xv == xv.max(-1, keepdims=True)
    want_x = win + 0.5 * tie + 8.0 * rowmax / rowmax.sum(-1, keepdims=True)
    want_w = ((1 - win) - 0.5 * tie).sum(0)
    np.testing.assert_array_equal(gx.numpy(), want_x)
    np.testing.assert_array_equal(gw.numpy(), want_w)
    assert want_x[1].sum() == 2.0 + 8.0  # the tied row max shares its gradient (not 8 each)
    if compile_on:
        assert eager.BACKWARD_PATHS[key]["generated"] == before + 1


# -- every lowering in the OpDef table, run as a generated kernel against the eager primitive --
def _lowered_elementwise() -> list[str]:
    from framework._src.ops import base

    return sorted(
        n
        for n, d in base.OPS.items()
        if d.kind == "primitive" and d.lower is not None and d.lower.role == "expr"
    )


_EDGE = np.array(
    [
        -7.5,
        -3.0,
        -2.5,
        -1.0,
        -0.5,
        -0.0,
        0.0,
        0.5,
        1.0,
        2.5,
        3.0,
        7.5,
        1e-3,
        -1e-3,
        np.inf,
        -np.inf,
        np.nan,
        5.0,
        -5.0,
        0.25,
    ],
    dtype=np.float64,
)


@pytest.mark.parametrize("op", _lowered_elementwise())
def test_every_lowered_primitive_matches_its_eager_kernel(device, op):
    """The generated kernel of one primitive, built from its OpDef's lowering by each device's
    emitter, agrees with the plugin's own kernel on edge values (signed zeros, inf, NaN,
    negative operands of floor_divide and remainder); exact ops bit for bit."""
    from framework._src.ops import base
    from framework.compiler.capture import trace

    _compile_dev(device)
    d = base.OPS[op]
    arity = len(d.spec.inputs)
    a = _EDGE.reshape(4, 5)
    b = np.roll(_EDGE[::-1], 3).reshape(4, 5)
    b[b == 0] = 0.5 if op in ("floor_divide", "remainder") else b[b == 0]  # numpy divides by 0 its own way
    floats = [fw.to_tensor(v, device=device) for v in (a, b)[: max(arity, 2) if op == "where" else arity]]

    def fn(*ts):
        if op in ("logical_not", "logical_and", "logical_or"):  # bool operands come from comparisons
            ts = [t > 0.0 for t in ts]
        if op == "where":
            ts = [ts[0] > 0.0, *ts]
        out = base.apply(d, list(ts), {})[0]
        return out.astype("float64") if out.dtype == np.bool_ else out

    want = fn(*floats).numpy()
    xs = floats
    prog, _ = trace(op, fn, floats, {})
    k = eager.make_kernel(
        prog, compiler.compiler_for(xs[0].device).language, device_kind=eager._kind(xs[0].device)
    )
    out = fw.empty([4, 5], dtype="float64", device=device)
    k.launch(xs[0].device, floats, [out], 4)
    got = out.numpy()
    want = want.astype(np.float64)
    exact = op not in ("exp", "log", "sin", "cos", "tanh", "erf", "pow", "sqrt", "rsqrt")
    if exact:
        np.testing.assert_array_equal(np.signbit(got[~np.isnan(want)]), np.signbit(want[~np.isnan(want)]), op)
        np.testing.assert_array_equal(got, want, op)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=0, equal_nan=True, err_msg=op)


def test_a_rotated_read_moves_down_to_the_loads():
    """Builder.take: an input read at a rotated column is a ``take`` node; rotations compose
    (back to the input itself at a full turn); an element-wise value is recomputed from its
    rotated operands; a per-row value is itself; an element index cannot be rotated."""
    b = loop_ir.Builder()
    x = b.input(0, np.float32, True, True)
    w = b.input(1, np.float32, False, True)
    s = b.reduce("sum", x)
    e = b.binary("add", b.binary("mul", x, w), s)
    t = b.take(e, 3, 8)
    assert t.op == "add" and t.args[1] is s
    m = t.args[0]
    assert [a.op for a in m.args] == ["take", "take"] and m.args[0].attr == (0, 3, 8)
    assert m.args[1].attr == (1, 3, 8) and not m.args[1].row
    assert b.take(b.take(x, 3, 8), 5, 8) is x
    assert b.take(b.take(x, 3, 8), 2, 8).attr == (0, 5, 8)
    assert b.take(x, 16, 8) is x and b.take(s, 3, 8) is s
    with pytest.raises(ValueError, match="index"):
        b.take(b.special("index", (), np.int64, None), 1, 8)
