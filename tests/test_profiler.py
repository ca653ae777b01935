"""fw.profiler: Paddle's API (checked against real Paddle's paddle.profiler), spans per eager op,
backward node and program instruction, device spans from the runtime's events, Chrome trace,
summary tables, nothing recorded when off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework import profiler

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_SCHEDULES = [
    dict(closed=1, ready=1, record=2, repeat=1),
    dict(closed=0, ready=0, record=3, repeat=0),
    dict(closed=2, ready=1, record=1, repeat=2, skip_first=3),
    dict(closed=1, ready=2, record=4, repeat=3, skip_first=1),
]


def _quiet(p: profiler.Profiler) -> None:
    """on_trace_ready that keeps the result on the profiler only."""


def test_make_scheduler_matches_paddle(runs):
    for kw, ref in zip(_SCHEDULES, runs["paddle"]["schedules"]):
        ours = profiler.make_scheduler(**kw)
        assert [ours(i).name for i in range(40)] == ref, kw


def test_bad_arguments_are_named():
    with pytest.raises(fw.OpArgumentError, match=r"\[profiler\] make_scheduler: record"):
        profiler.make_scheduler(closed=0, ready=0, record=0)
    with pytest.raises(fw.OpArgumentError, match=r"scheduler=\(start, end\) needs 0 <= start < end"):
        profiler.Profiler(scheduler=(3, 2), on_trace_ready=_quiet)
    with pytest.raises(fw.OpArgumentError, match="RecordEvent needs a non-empty name"):
        profiler.RecordEvent("")
    with pytest.raises(fw.OpArgumentError, match="another Profiler is already recording"):
        with profiler.Profiler(on_trace_ready=_quiet):
            with profiler.Profiler(on_trace_ready=_quiet):
                pass
    assert not fw._src.profiling.ACTIVE  # the outer one stopped on the way out


_USER_CODE = """
import json, os, sys, tempfile
import numpy as np
if sys.argv[1] == "paddle":
    import paddle as fw
    fw.set_device("cpu")
else:
    import framework as fw
profiler = fw.profiler
d = tempfile.mkdtemp()
x = fw.to_tensor(np.arange(16, dtype=np.float32))
with profiler.Profiler(
    targets=[profiler.ProfilerTarget.CPU],
    scheduler=(1, 3),
    on_trace_ready=profiler.export_chrome_tracing(d),
) as p:
    for i in range(5):
        with profiler.RecordEvent("user_block"):
            y = fw.add(x, x)
        ev = profiler.RecordEvent("begin_end")
        ev.begin()
        z = fw.multiply(y, x)
        ev.end()
        p.step()
files = os.listdir(d)
trace = json.load(open(os.path.join(d, files[0])))
names = [e["name"].split("[")[0] for e in trace["traceEvents"] if e.get("ph") == "X"]
import warnings
warnings.simplefilter("ignore")
schedules = [[profiler.make_scheduler(**kw)(i).name for i in range(40)] for kw in json.loads(sys.argv[2])]
print(json.dumps({"files": [f.endswith(".paddle_trace.json") for f in files], "names": names,
                  "z": z.numpy().tolist(), "schedules": schedules}))
"""


def _run_user_code(which: str) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(
        [sys.executable, "-c", _USER_CODE, which, json.dumps(_SCHEDULES)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs() -> dict:
    """The same user code run under real Paddle and under Oarlock (each in its own process)."""
    pytest.importorskip("paddle")
    return {"paddle": _run_user_code("paddle"), "oarlock": _run_user_code("oarlock")}


def test_same_user_code_under_paddle_and_oarlock(runs):
    ref, ours = runs["paddle"], runs["oarlock"]
    assert ours["files"] == ref["files"] == [True]  # one trace file, named as Paddle names it
    assert ours["z"] == ref["z"]
    for what in ("ProfileStep#1", "ProfileStep#2", "user_block", "begin_end"):
        assert ours["names"].count(what) == ref["names"].count(what) == (1 if "Step" in what else 2), what
    assert "ProfileStep#0" not in ours["names"] and "ProfileStep#3" not in ours["names"]
    # the eager ops of the recorded steps: Paddle names its spans "add dygraph", "add kernel launch"...
    for op in ("add", "multiply"):
        assert any(n.startswith(op) for n in ref["names"])
    assert ours["names"].count("add") == 2 and ours["names"].count("mul") == 2  # primitives' names


def _mlp_step():
    fw.seed(0)
    net = fw.nn.Sequential(fw.nn.Linear(12, 16), fw.nn.ReLU(), fw.nn.Linear(16, 5))
    opt = fw.optim.SGD(learning_rate=0.1, parameters=net.parameters())

    def step(x, y):
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    x = fw.to_tensor(np.random.default_rng(0).standard_normal((4, 12)).astype(np.float32))
    y = fw.to_tensor(np.array([0, 1, 2, 3]))
    return step, x, y


def test_eager_spans_kernels_and_backward():
    x = fw.to_tensor(np.arange(16, dtype=np.float32))
    with profiler.Profiler(on_trace_ready=_quiet) as p:
        y = (x + x) * x
    r = p.profiler_result
    np.testing.assert_array_equal(y.numpy(), np.arange(16) * 2.0 * np.arange(16))
    host = [e for e in r.events if e.cat == "Operator"]
    assert [e.name for e in host] == ["add", "mul"]
    dev = [e for e in r.events if e.track == "cpu:0"]
    assert [e.name for e in dev] == ["cpu/add/float32", "cpu/mul/float32"]
    slack = 50_000  # ns: the device clock is placed on the host's by one reference event
    for h, d in zip(host, dev):  # the cpu plugin's default stream runs in the call: inside the op's span
        assert h.start_ns - slack <= d.start_ns <= d.end_ns <= h.end_ns + slack
        assert d.dur_ns <= h.dur_ns

    step, x, y = _mlp_step()
    with profiler.Profiler(on_trace_ready=_quiet) as p:
        step(x, y)
    names = {(e.cat, e.name) for e in p.profiler_result.events}
    assert ("Backward", "matmul_grad") in names
    assert ("Composite", "linear") in names
    assert ("Kernel", "cpu/matmul/float32") in names


def test_summary_rows_match_events(capsys):
    x = fw.to_tensor(np.ones(8, np.float32))
    with profiler.Profiler(scheduler=(0, 3), on_trace_ready=_quiet) as p:
        for _ in range(4):
            x = x + 1
            p.step()
    r = p.profiler_result
    steps = [e for e in r.events if e.cat == "ProfileStep"]
    assert [e.name for e in steps] == ["ProfileStep#0", "ProfileStep#1", "ProfileStep#2"]
    assert r.step_ns() == sum(e.dur_ns for e in steps)
    adds = [e for e in r.events if e.cat == "Operator" and e.name == "add"]
    assert len(adds) == 3
    (row,) = [row for row in r.rows("Operator") if row[0] == "add"]
    assert row == (
        "add",
        3,
        sum(e.dur_ns for e in adds),
        min(e.dur_ns for e in adds),
        max(e.dur_ns for e in adds),
    )
    p.summary(time_unit="us")
    text = capsys.readouterr().out
    line = next(ln for ln in text.splitlines() if ln.startswith("add "))
    calls, total, avg = line.split()[1:4]
    assert int(calls) == 3
    assert float(total) == pytest.approx(row[2] / 1e3, abs=1e-3)
    assert float(avg) == pytest.approx(row[2] / 3e3, abs=1e-3)
    assert float(line.split()[-1]) == pytest.approx(100 * row[2] / r.step_ns(), abs=0.01)
    np.testing.assert_array_equal(x.numpy(), np.full(8, 5.0))


def test_chrome_trace_is_valid_and_loads_back(tmp_path):
    step, x, y = _mlp_step()
    with profiler.Profiler(
        scheduler=(1, 2), on_trace_ready=profiler.export_chrome_tracing(str(tmp_path), "w")
    ) as p:
        for _ in range(3):
            step(x, y)
            p.step()
    (f,) = os.listdir(tmp_path)
    assert f.startswith("w_time_") and f.endswith(".paddle_trace.json")
    data = json.load(open(tmp_path / f))
    xs = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert xs and all(e["dur"] >= 0 and e["ts"] >= 0 and isinstance(e["pid"], int) for e in xs)
    procs = {e["args"]["name"] for e in data["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    assert procs == {"host (python)", "device cpu:0"}
    back = profiler.load_profiler_result(str(tmp_path / f))
    r = p.profiler_result
    for cat, track in (("Operator", "host"), ("Backward", "host"), ("Kernel", "cpu:0")):
        got, want = sorted(back.rows(cat, track)), sorted(r.rows(cat, track))
        assert [g[:2] for g in got] == [w[:2] for w in want]  # names and calls
        for g, w in zip(got, want):  # times through microsecond floats: a few ns of rounding per span
            assert abs(g[2] - w[2]) <= 3 * w[1] and abs(g[3] - w[3]) <= 3 and abs(g[4] - w[4]) <= 3


def test_program_instructions_and_fused_groups():
    step, x, y = _mlp_step()
    sf = fw.jit.to_static(step)
    want = [float(sf(x, y)) for _ in range(2)]
    with profiler.Profiler(on_trace_ready=_quiet) as p:
        got = float(sf(x, y))
    after = float(sf(x, y))  # graph replay again after the profiled run
    ref_step, rx, ry = _mlp_step()
    ref = [float(ref_step(rx, ry)) for _ in range(4)]
    assert want + [got, after] == pytest.approx(ref, rel=1e-5)
    r = p.profiler_result
    inst = [e for e in r.events if e.cat == "Instruction"]
    assert inst and all(e.args["program"] for e in inst)
    assert [e.args["index"] for e in inst if e.args["program"] == inst[0].args["program"]][:3] == [0, 1, 2]
    fused = [e for e in inst if e.name.startswith("fused.")]
    if fused:  # the compiler's fusion is on: its groups are named with their ops
        assert all(e.args["ops"] for e in fused)
        assert set(r.groups) >= {e.name for e in fused}
    assert not [e for e in r.events if e.cat == "Operator"]  # no eager op ran: all in programs


def test_nothing_recorded_when_off_and_targets():
    x = fw.to_tensor(np.ones(4, np.float32))
    with profiler.Profiler(targets=[profiler.ProfilerTarget.CPU], on_trace_ready=_quiet) as p:
        _ = x + x
    assert [e.name for e in p.profiler_result.events if e.cat == "Operator"] == ["add"]
    assert not [e for e in p.profiler_result.events if e.track != "host"]  # CPU: host spans only
    assert not fw._src.profiling.ACTIVE and fw._src.profiling.current() is None
    _ = x + x  # after stop: nothing goes anywhere
    assert len([e for e in p.profiler_result.events if e.cat == "Operator"]) == 1
    with pytest.warns(UserWarning, match="XPU is not supported"):
        profiler.Profiler(targets=[profiler.ProfilerTarget.XPU], on_trace_ready=_quiet)


def test_timer_only_step_info():
    with profiler.Profiler(timer_only=True, on_trace_ready=_quiet) as p:
        for _ in range(3):
            _ = fw.ones([4]) + 1
            p.step(num_samples=8)
    info = p.step_info("images")
    assert info.startswith("batch_cost: ") and info.endswith("images/s")
    assert p.profiler_result is None  # timer only: no spans


@pytest.mark.parametrize("device", [d for d in ("opencl:0",) if d in [str(x) for x in fw.devices()]])
def test_device_spans_from_opencl_events(device):
    x = fw.to_tensor(np.arange(4096, dtype=np.float32), device=device)
    with profiler.Profiler(on_trace_ready=_quiet) as p:
        y = (x * x).sum()
    assert float(y) == pytest.approx(float((np.arange(4096.0) ** 2).sum()), rel=1e-5)
    r = p.profiler_result
    dev = [e for e in r.events if e.track == device]
    assert {e.name.split("/")[1] for e in dev} >= {"mul"} and all(e.dur_ns >= 0 for e in dev)
    assert textwrap.dedent(r.table()).count(f"Kernel Summary on {device}") == 1


def test_repeated_periods_each_go_to_on_trace_ready():
    got = []
    sched = profiler.make_scheduler(closed=1, ready=1, record=1, repeat=2)  # steps 2 and 5 recorded
    x = fw.to_tensor(np.ones(4, np.float32))
    with profiler.Profiler(scheduler=sched, on_trace_ready=lambda p: got.append(p.profiler_result)) as p:
        for _ in range(8):
            x = x * 2
            p.step()
    steps = [[e.name for e in r.events if e.cat == "ProfileStep"] for r in got]
    assert steps == [["ProfileStep#2"], ["ProfileStep#5"]]
    assert [len(r.rows("Operator")) for r in got] == [1, 1]
    np.testing.assert_array_equal(x.numpy(), np.full(4, 256.0))


def test_cpu_kernel_spans_timed_on_the_host_clock_and_on_a_worker_stream(tmp_path):
    """The cpu device's default stream runs a kernel in the launching call, so the runtime
    declares it synchronous and the profiler times the kernel by host clock reads around the
    launch (no events): still one named device span per kernel, inside its op's span, in the
    trace's device lane. A worker stream (asynchronous) keeps the runtime's events."""
    from framework._src import device as _device

    rt = _device.device_type("cpu").runtime
    assert rt.synchronous_stream(fw.current_stream("cpu").handle) is True
    worker = fw.Stream("cpu")
    assert rt.synchronous_stream(worker.handle) is False

    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5)
    x, w = fw.to_tensor(a), fw.to_tensor(b)
    with profiler.Profiler(on_trace_ready=_quiet) as p:
        y = fw.nn.functional.relu(fw.matmul(x, w) - 0.5)
    np.testing.assert_allclose(y.numpy(), np.maximum(a @ b - 0.5, 0), rtol=1e-6)
    r = p.profiler_result
    host = [e for e in r.events if e.cat == "Operator"]
    dev = [e for e in r.events if e.track == "cpu:0"]
    assert [e.name for e in host] == ["matmul", "sub", "relu"]
    assert [e.name for e in dev] == ["cpu/matmul/float32", "cpu/sub/float32", "cpu/relu/float32"]
    for h, d in zip(host, dev):  # both on the host clock: strictly inside the op's span
        assert h.start_ns <= d.start_ns <= d.end_ns <= h.end_ns
    path = str(tmp_path / "t.json")
    p.export(path)
    trace = json.load(open(path))["traceEvents"]
    pid = next(e["pid"] for e in trace if e.get("ph") == "M" and e["args"].get("name") == "device cpu:0")
    lane = sorted((e["ts"], e["name"]) for e in trace if e.get("ph") == "X" and e["pid"] == pid)
    assert [n for _, n in lane] == [e.name for e in dev]

    with profiler.Profiler(on_trace_ready=_quiet) as p:  # events on the worker stream
        with fw.stream(worker):
            z = fw.matmul(x, w) * 2.0
        worker.synchronize()
    np.testing.assert_allclose(z.numpy(), (a @ b) * 2.0, rtol=1e-6)
    dev = [e for e in p.profiler_result.events if e.track == "cpu:0"]
    assert [e.name for e in dev] == ["cpu/matmul/float32", "cpu/mul/float32"]
    assert all(e.dur_ns >= 0 for e in dev) and dev[0].start_ns <= dev[1].start_ns
