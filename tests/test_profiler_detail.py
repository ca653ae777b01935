"""fw.profiler's details: ``record_shapes`` (the input shapes of every op, equal to the tensors'
own), ``with_flops`` (each op's arithmetic from its OpDef, equal to the hand count 2·M·N·K etc.),
``profile_memory`` (allocations, frees and the peak, equal to the bytes of the tensors a known
sequence of ops makes), and program instructions named by their kernel ``plugin/op/dtype``."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework import profiler


def _quiet(p: profiler.Profiler) -> None:
    """on_trace_ready that keeps the result on the profiler only."""


def _t(*shape: int, seed: int = 0) -> fw.Tensor:
    return fw.to_tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _ops(result: profiler.ProfilerResult, cat: str = "Operator") -> list:
    return [e for e in result.events if e.cat == cat]


def test_record_shapes_equal_the_inputs_shapes(tmp_path):
    x, w, b = _t(6, 5), _t(5, 3, seed=1), _t(3, seed=2)
    with profiler.Profiler(record_shapes=True, on_trace_ready=_quiet) as p:
        y = fw.matmul(x, w)
        z = y + b  # broadcast: the shapes as given, not as expanded
        s = fw.sum(z, axis=0)
        m = fw.maximum(s, s)
    np.testing.assert_allclose(m.numpy(), (x.numpy() @ w.numpy() + b.numpy()).sum(0), rtol=1e-5)
    ops = _ops(p.profiler_result)
    want = [
        ("matmul", [x.shape, w.shape]),
        ("add", [y.shape, b.shape]),
        ("sum", [z.shape]),
        ("maximum", [s.shape, s.shape]),
    ]
    assert [(e.name, e.args["input_shapes"]) for e in ops] == [(n, [list(s) for s in sh]) for n, sh in want]
    assert all(e.args["input_dtypes"] == ["float32"] * len(e.args["input_shapes"]) for e in ops)
    # the device span of each kernel carries them too, and so does the Chrome trace
    kern = [e for e in p.profiler_result.events if e.track == "cpu:0"]
    assert [e.args["input_shapes"] for e in kern] == [e.args["input_shapes"] for e in ops]
    f = tmp_path / "t.json"
    p.export(str(f))
    trace = [e for e in json.load(open(f))["traceEvents"] if e.get("cat") == "Operator"]
    assert [e["args"]["input_shapes"] for e in trace] == [e.args["input_shapes"] for e in ops]
    # the summary: one row per op and shapes
    a = _t(4, 4)
    with profiler.Profiler(record_shapes=True, on_trace_ready=_quiet) as p:
        for _ in range(2):
            _ = x + x
        _ = a + a
    rows = sorted((r[0], r[1], r[6]) for r in p.profiler_result.detail_rows("Operator"))
    assert rows == [("add", 1, "[4, 4], [4, 4]"), ("add", 2, "[6, 5], [6, 5]")]
    text = p.profiler_result.table(views=profiler.SummaryView.OperatorView)
    assert "Input Shapes" in text.splitlines()[1]
    assert any(ln.startswith("add ") and ln.endswith("[6, 5], [6, 5]") for ln in text.splitlines())


def test_no_details_unless_asked():
    x = _t(3, 3)
    with profiler.Profiler(on_trace_ready=_quiet) as p:
        _ = x @ x
    (e,) = _ops(p.profiler_result)
    assert e.args is None
    assert p.profiler_result.memory == [] and p.profiler_result.peaks == {}
    text = p.profiler_result.table()
    assert "FLOPs" not in text and "Input Shapes" not in text and "Memory Summary" not in text
    assert fw._src.allocator.WATCH is None


def test_flops_equal_the_hand_count():
    M, K, N, B = 7, 5, 3, 4
    x, w = _t(M, K), _t(K, N, seed=1)
    xb, wt = _t(B, M, K, seed=2), _t(N, K, seed=3)
    with profiler.Profiler(with_flops=True, on_trace_ready=_quiet) as p:
        y = fw.matmul(x, w)
        yb = fw.matmul(xb, w)  # batched x, shared w
        yt = fw.matmul(x, wt, transpose_y=True)
        z = y + y
        e = fw.exp(y)
        s = fw.sum(z, axis=1)
        a = fw.argmax(z, axis=1)
        r = fw.reshape(z, [N, M])
    np.testing.assert_allclose(yt.numpy(), x.numpy() @ wt.numpy().T, rtol=1e-5)
    del yb, e, s, a, r
    got = [(ev.name, ev.args["flops"]) for ev in _ops(p.profiler_result)]
    mm = 2 * M * N * K
    assert ("matmul", mm) in got and ("matmul", B * mm) in got
    assert ("matmul_t", mm) in got  # the transposed product's kernel: k is w's last dim, not n
    assert ("add", M * N) in got and ("exp", M * N) in got
    assert ("sum", M * N - M) in got  # M rows of N: N - 1 additions each
    assert ("argmax", 0) in got  # no arithmetic
    assert all(f == 0 for n, f in got if n in ("reshape", "argmax", "expand"))
    text = p.profiler_result.table(views=profiler.SummaryView.OperatorView)
    line = next(ln for ln in text.splitlines() if ln.startswith("matmul "))
    assert int(line.split()[-1]) == mm + B * mm  # the FLOPs column: the calls' sum


def test_flops_of_convolution_and_linear_equal_the_hand_count():
    N, C, H, W, O, k = 2, 3, 8, 9, 4, 3
    x, wc = _t(N, C, H, W), _t(O, C, k, k, seed=1)
    lin = fw.nn.Linear(W - k + 1, 5)
    with profiler.Profiler(with_flops=True, on_trace_ready=_quiet) as p:
        y = F.conv2d(x, wc)
        out = lin(y)
    Ho, Wo = H - k + 1, W - k + 1
    assert tuple(y.shape) == (N, O, Ho, Wo)
    r = p.profiler_result
    conv = 2 * N * O * Ho * Wo * C * k * k
    lin_mm = 2 * N * O * Ho * (W - k + 1) * 5
    bias = N * O * Ho * 5
    total = sum(e.args["flops"] for e in _ops(r))  # each op once: a composite's are its ops'
    assert total == conv + lin_mm + bias
    assert all("flops" not in (e.args or {}) for e in _ops(r, "Composite"))
    np.testing.assert_allclose(out.numpy().shape, (N, O, Ho, 5))


def test_attention_flops_from_its_opdef():
    from framework._src.opdef import OPS

    b, s, t, d = 2, 5, 7, 8
    assert OPS["attention"].flops([(b, s, d), (b, t, d), (b, t, d)], [(b, s, d)], {}) == 4 * b * s * t * d


def _bytes(t: fw.Tensor) -> int:
    return math.prod(t.shape) * t.dtype.itemsize


def test_memory_peak_equals_the_bytes_allocated():
    x = _t(32, 16)  # 2048 bytes: a multiple of the allocator's 512-byte rounding
    with profiler.Profiler(profile_memory=True, on_trace_ready=_quiet) as p:
        a = x + x
        b = a * x
        c = b - x
        held = _bytes(a) + _bytes(b) + _bytes(c)
        del a, b
        d = c + c  # reuses a freed block: no new peak
        del c, d
    r = p.profiler_result
    (dev,) = r.peaks
    peak = r.peaks[dev]
    assert held == 3 * 2048
    assert peak["peak_increase"] == held
    assert peak["peak_allocated"] == peak["start_allocated"] + held
    allocs = [(m.op, m.bytes) for m in r.memory if m.bytes > 0]
    assert allocs == [("add", 2048), ("mul", 2048), ("sub", 2048), ("add", 2048)]
    assert sum(-m.bytes for m in r.memory if m.bytes < 0) == 4 * 2048  # everything made was freed
    assert r.memory[-1].allocated == peak["start_allocated"]
    assert "Memory Summary" in r.table()  # in the default views when recorded
    text = r.table(views=profiler.SummaryView.MemoryView)
    assert f"Peak Allocated Memory: {peak['peak_allocated']} B" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("add "))
    assert line.split()[1:] == ["2", "0", "4096", "0", "4096"]  # count, frees, sizes, increase
    line = next(ln for ln in text.splitlines() if ln.startswith("(outside ops)"))
    assert line.split()[2:] == ["0", "4", "0", "8192", "-8192"]  # the frees by `del`
    trace = r.chrome_trace()["traceEvents"]
    counters = [e for e in trace if e["ph"] == "C"]
    assert max(e["args"]["allocated"] for e in counters) == peak["peak_allocated"]
    assert fw._src.allocator.WATCH is None  # off again after the profiler stops


def test_to_static_instructions_name_their_kernel_with_shapes_and_flops():
    M, K, N = 6, 4, 5
    w = _t(K, N, seed=1)

    @fw.jit.to_static
    def f(x):
        return fw.exp(fw.matmul(x, w) * 2.0 + 1.0)

    x = _t(M, K)
    for _ in range(2):
        f(x)
    with profiler.Profiler(record_shapes=True, with_flops=True, on_trace_ready=_quiet) as p:
        y = f(x)
    np.testing.assert_allclose(y.numpy(), np.exp(x.numpy() @ w.numpy() * 2.0 + 1.0), rtol=1e-5)
    r = p.profiler_result
    inst = _ops(r, "Instruction")
    mm = [e for e in inst if e.name == "matmul"]
    if not mm:  # the compiler fused the product into a group: its kernel is named the same way
        pytest.skip(f"no matmul instruction: {[e.name for e in inst]}")
    (e,) = mm
    assert e.args["kernel"].split("/")[1:] == ["matmul", "float32"]
    assert e.args["kernel"].split("/")[0]  # the plugin
    assert e.args["input_shapes"] == [[M, K], [K, N]]
    assert e.args["flops"] == 2 * M * N * K
    dev = [d for d in r.events if d.track != "host" and d.args and d.args.get("index") == e.args["index"]]
    assert [d.name for d in dev] == [e.args["kernel"]]
    for i in inst:  # every kernel instruction names its kernel
        assert i.args["kernel"].split("/")[1] == i.name
    # the product, then mul, add, exp one per element: fused into a group or not, the same sum
    assert sum(i.args["flops"] for i in inst) == 2 * M * N * K + 3 * M * N
