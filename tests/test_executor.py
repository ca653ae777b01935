"""The executor's run path: instructions bound once (the kernels' fast path from the
contract), graph capture and replay where the runtime offers it (the cpu plugin records the
bound calls its capturing stream is given), streams and events, peak memory against eager
mode, and a whole training step (backward + optimizer) inside a to_static function.

Values are checked against numpy and against eager mode (an independent path: the
dispatcher and the tape)."""

from __future__ import annotations

import functools
import threading

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework import ir
from framework._src import device as _dev

CHAIN = (
    "module @chain(%0: tensor<[s0], float32, cpu>, %1: tensor<[s0], float32, cpu>) -> (tensor<[s0], float32, cpu>) {\n"
    "  %2 = op.exp(%0) : tensor<[s0], float32, cpu>\n"
    "  %3 = op.neg(%2) : tensor<[s0], float32, cpu>\n"
    "  %4 = op.mul(%3, %1) : tensor<[s0], float32, cpu>\n"
    "  %5 = op.add(%4, %1) : tensor<[s0], float32, cpu>\n"
    "  %6 = op.exp(%5) : tensor<[s0], float32, cpu>\n"
    "  builtin.return(%6)\n"
    "}\n"
)


def _np_chain(a: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.exp(-np.exp(a) * c + c)


def _ins(n: int, seed: int, device: str = "cpu") -> tuple[fw.Tensor, fw.Tensor, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(n) * 0.5).astype(np.float32)
    c = rng.standard_normal(n).astype(np.float32)
    return fw.to_tensor(a, device=device), fw.to_tensor(c, device=device), a, c


def _plan(ex: ir.Executor) -> object:
    (pl,) = ex._plans.values()
    return pl


def test_cpu_kernels_are_bound_to_their_ufuncs_once():
    ex = ir.Executor(ir.parse_program(CHAIN), "cpu", graphs=False)
    for seed in range(3):  # new input tensors each run: their readers are bound again
        x, c, a, cn = _ins(16, seed)
        np.testing.assert_allclose(ex(x, c)[0].numpy(), _np_chain(a, cn), rtol=1e-6)
    pl = _plan(ex)
    funcs = [b.func for b in pl.bound]
    assert funcs == [np.exp, np.negative, np.multiply, np.add, np.exp]  # the kernels' bind fast path
    # the bound arrays are the planned buffers: instruction 1 reads what instruction 0 writes
    assert pl.bound[1].args[0] is pl.bound[0].args[1]
    # a run with the same input tensors patches only the output's writer (the previous output
    # is still held, so the new one has other memory); the other bound calls are kept
    held = ex(x, c)[0]
    before = list(pl.bound)
    y = ex(x, c)[0]
    assert y._block.handle is not held._block.handle
    assert [b is a for a, b in zip(before, pl.bound)] == [True, True, True, True, False]


def test_graph_replay_runs_what_was_captured_on_the_cpu_plugin():
    ex = ir.Executor(ir.parse_program(CHAIN), "cpu", graphs=True)
    outs = []
    for seed in range(4):  # run 1: the instruction list; run 2: capture + replay; then replays
        x, c, a, cn = _ins(16, seed)
        y = ex(x, c)[0]
        outs.append((y, _np_chain(a, cn)))
        np.testing.assert_allclose(y.numpy(), outs[-1][1], rtol=1e-6)
    stats = ex.memory_stats({"s0": 16})
    assert stats["graph"] and stats["graph_offered"] and stats["graph_off"] is None
    g = _plan(ex).graph
    # the recording is what the kernels launched on the capturing stream: the ufuncs themselves
    assert [call.func for call in g.graph.calls] == [np.exp, np.negative, np.multiply, np.add, np.exp]
    for y, want in outs:  # outputs handed out earlier were copied out, not overwritten by later replays
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)
    # another batch size is another plan, captured on its own second run
    for seed in (7, 8):
        x, c, a, cn = _ins(5, seed)
        np.testing.assert_allclose(ex(x, c)[0].numpy(), _np_chain(a, cn), rtol=1e-6)
    assert ex.memory_stats({"s0": 5})["graph"]


def test_runtimes_without_capture_run_the_instruction_list():
    if "simdev" not in [d.type for d in fw.devices()]:
        pytest.skip("the example vendor plugin (simdev) is not installed")
    p = ir.parse_program(CHAIN.replace(", cpu>", ", simdev>"))
    ex = ir.Executor(p, "simdev", graphs=True)
    for seed in range(3):
        x, c, a, cn = _ins(8, seed, "simdev")
        np.testing.assert_allclose(ex(x, c)[0].numpy(), _np_chain(a, cn), rtol=1e-6)
    stats = ex.memory_stats({"s0": 8})
    assert not stats["graph"] and not stats["graph_offered"]
    assert "offers no graph capture" in stats["graph_off"]


def test_a_replayed_layer_sees_parameters_replaced_by_an_optimizer_outside():
    fw.manual_seed(1)
    eager = fw.nn.Linear(6, 3)
    fw.manual_seed(1)
    static = fw.jit.to_static(fw.nn.Linear(6, 3))
    rng = np.random.default_rng(0)
    opts = [fw.optim.SGD(learning_rate=0.5, parameters=m.parameters()) for m in (eager, static)]
    for _ in range(5):
        x = fw.to_tensor(rng.standard_normal((4, 6)).astype(np.float32))
        losses = []
        for m, opt in zip((eager, static), opts):
            loss = (m(x) ** 2).mean()
            loss.backward()
            opt.step()  # a new storage for every parameter
            opt.clear_grad()
            losses.append(loss.numpy())
        np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)
    for pe, ps in zip(eager.parameters(), static.parameters()):
        np.testing.assert_allclose(ps.numpy(), pe.numpy(), rtol=1e-5, atol=1e-6)
    cp = static.forward.programs[0]
    assert cp.executor.memory_stats({})["graph"] and cp.backward.executor.memory_stats({})["graph"]


def test_the_cpu_runtime_declines_replays_that_copy_more_than_they_save():
    # one launch over 4 MiB: the copies in and out would cost more than the launch saved
    one_op = (
        "module @f(%0: tensor<[s0], float32, cpu>) -> (tensor<[s0], float32, cpu>) {\n"
        "  %1 = op.exp(%0) : tensor<[s0], float32, cpu>\n"
        "  builtin.return(%1)\n"
        "}\n"
    )
    ex = ir.Executor(ir.parse_program(one_op), "cpu", graphs=True)
    a = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32)
    for _ in range(3):
        np.testing.assert_allclose(ex(fw.to_tensor(a))[0].numpy(), np.exp(a), rtol=1e-6)
    stats = ex.memory_stats({"s0": 1 << 20})
    assert not stats["graph"] and "too many for 1 launches" in stats["graph_off"]
    # a layer whose parameters an optimizer moves every step (the eager update, op by op): the
    # first replay copies them in, then the plan goes back to its list (8 MiB of weights per
    # step for three launches); the update program writes them in place: the replay stays
    for fused, replayed in ((False, False), (True, True)):
        fw.manual_seed(0)
        eager = fw.nn.Linear(1024, 1024)
        fw.manual_seed(0)
        static = fw.jit.to_static(fw.nn.Linear(1024, 1024))
        x = fw.to_tensor(np.random.default_rng(1).standard_normal((2, 1024)).astype(np.float32))
        opts = [
            fw.optim.SGD(learning_rate=0.1, parameters=m.parameters(), fused=fused) for m in (eager, static)
        ]
        storage = static.weight._block
        for _ in range(4):
            with fw.no_grad():
                ys = [m(x).numpy() for m in (eager, static)]
            np.testing.assert_allclose(ys[1], ys[0], rtol=1e-5, atol=1e-5)
            for m, opt in zip((eager, static), opts):
                m.weight.grad = fw.ones([1024, 1024]) * 0.01
                opt.step()
                opt.clear_grad()
        stats = static.forward.programs[0].executor.memory_stats({})
        assert (static.weight._block is storage) is replayed
        if replayed:
            assert stats["graph"], stats["graph_off"]
        else:
            assert not stats["graph"] and "too many" in stats["graph_off"]


def test_a_cpu_capture_refuses_to_wait_and_ends_cleanly():
    # a blocking copy waits for its stream: a capturing stream runs nothing, so it is refused
    rt = _dev.device_type("cpu").runtime
    s = rt.create_stream(0)
    rt.begin_capture(0, s)
    with pytest.raises(fw.OarlockError, match=r"synchronized .* while it captures"):
        rt.copy_h2d(0, np.empty(8, np.uint8), 0, np.ones(8, np.uint8), s, True)
    g = rt.end_capture(0, s)
    assert g.calls == ()
    with pytest.raises(fw.OarlockError, match=r"does not capture"):
        rt.end_capture(0, s)


def test_programs_launch_on_the_current_stream_and_order_with_events():
    ex = ir.Executor(ir.parse_program(CHAIN), "cpu", graphs=False)
    x, c, a, cn = _ins(64, 0)
    want = _np_chain(a, cn)
    s1, s2 = fw.Stream("cpu"), fw.Stream("cpu")
    # eager work on s1 produces the input; the program on s2 waits for it through an event
    gate = threading.Event()
    with fw.stream(s1):
        s1.handle.submit(gate.wait)  # the stream is busy until the gate opens
        x1 = fw.neg(fw.neg(x))
    ev = s1.record_event()
    s2.wait_event(ev)
    with fw.stream(s2):
        y = ex(x1, c)[0]
    assert not s2.query()  # launched on s2's worker, waiting for s1
    gate.set()
    s2.synchronize()
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5)
    # a run on the default stream after a run on s1 waits for it (the plan's buffers are shared)
    gate = threading.Event()
    with fw.stream(s1):
        s1.handle.submit(gate.wait)
        y1 = ex(x, c)[0]
    threading.Timer(0.3, gate.set).start()
    y0 = ex(x, c)[0]  # the default stream: runs on this thread once s1's run is done
    assert gate.is_set() and s1.query()
    np.testing.assert_allclose(y0.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(y1.numpy(), want, rtol=1e-6)


def test_a_graph_is_replayed_on_the_stream_of_the_run():
    ex = ir.Executor(ir.parse_program(CHAIN), "cpu", graphs=True)
    x, c, a, cn = _ins(32, 3)
    ex(x, c), ex(x, c)  # captured
    assert ex.memory_stats({"s0": 32})["graph"]
    s = fw.Stream("cpu")
    gate = threading.Event()
    with fw.stream(s):
        s.handle.submit(gate.wait)
        y = ex(x, c)[0]  # input copy, replay and output copy all queued behind the gate
    assert not s.query()
    gate.set()
    s.synchronize()
    np.testing.assert_allclose(y.numpy(), _np_chain(a, cn), rtol=1e-6)


def _distinct_chain(x: fw.Tensor, c: fw.Tensor) -> fw.Tensor:
    # every intermediate has its own name, as model code writes it: eager keeps them all alive
    a = fw.exp(x)
    b = fw.neg(a)
    d = fw.multiply(b, c)
    e = fw.add(d, c)
    f = fw.exp(e)
    g = fw.neg(f)
    return fw.multiply(g, c)


@pytest.mark.parametrize("graphs", [False, True])
def test_static_peak_memory_is_at_most_eager_on_a_chain(monkeypatch, graphs):
    monkeypatch.setenv("OARLOCK_COMPILE", "0")  # the op-by-op program, not one fused kernel
    f = fw.jit.to_static(_distinct_chain)
    x, c, _, _ = _ins(1 << 16, 0)
    with fw.no_grad():
        f(x, c)
        f.programs[0].executor.graphs = graphs
        r = fw.jit.memory_report(f, x, c)
    nbytes = (1 << 16) * 4
    assert r["eager_peak_bytes"] >= 6 * nbytes  # six intermediates alive at once, from the allocator
    assert r["static_held_bytes"] > 0 and r["static_run_bytes"] >= nbytes  # the fresh output
    assert r["static_peak_bytes"] == r["static_held_bytes"] + r["static_run_bytes"]
    assert r["static_peak_bytes"] <= r["eager_peak_bytes"]


def _model_and_opt(kind: str) -> tuple[fw.nn.Layer, fw.optim.Optimizer]:
    fw.manual_seed(0)
    m = fw.nn.Sequential(fw.nn.Linear(8, 16), fw.nn.ReLU(), fw.nn.Linear(16, 4))
    kw = {"learning_rate": 0.05, "parameters": m.parameters()}
    opt = {
        "SGD": functools.partial(fw.optim.SGD, **kw),
        "Momentum": functools.partial(fw.optim.Momentum, momentum=0.9, **kw),
        "AdamW": functools.partial(fw.optim.AdamW, weight_decay=0.01, **kw),
    }[kind]()
    return m, opt


@pytest.mark.parametrize("kind", ["SGD", "Momentum", "AdamW"])
def test_a_training_step_inside_to_static_equals_eager(kind):
    rng = np.random.default_rng(0)
    data = [
        (
            fw.to_tensor(rng.standard_normal((5, 8)).astype(np.float32)),
            fw.to_tensor(rng.integers(0, 4, 5).astype(np.int64)),
        )
        for _ in range(6)
    ]
    results = []
    for static in (False, True):
        m, opt = _model_and_opt(kind)

        def step(x, y, m=m, opt=opt):
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss

        fn = fw.jit.to_static(step) if static else step
        losses = [float(fn(x, y).numpy()) for x, y in data]
        results.append((losses, [p.numpy() for p in m.parameters()], m, fn))
    (le, pe, _, _), (ls, ps, ms, fs) = results
    np.testing.assert_allclose(ls, le, rtol=1e-5)
    for a, b in zip(ps, pe):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert len(fs.programs) == 1  # one program for all six steps
    assert all(p.grad is None for p in ms.parameters())  # clear_grad ran after each program run
    kinds = [k for k, _ in fs.programs[0].step[0]]
    assert kinds == ["grads", "step", "clear_grad"]


def test_backward_inside_without_a_step_accumulates_like_eager():
    m, _ = _model_and_opt("SGD")
    x = fw.to_tensor(np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32))

    def fwd_bwd(x):
        loss = (m(x) ** 2).sum()
        loss.backward()
        return loss

    f = fw.jit.to_static(fwd_bwd)
    f(x)
    g1 = [p.grad.numpy() for p in m.parameters()]
    f(x)  # a second call accumulates onto the first call's gradients, as eager backward does
    for p, g in zip(m.parameters(), g1):
        np.testing.assert_allclose(p.grad.numpy(), 2 * g, rtol=1e-5, atol=1e-6)
    m.clear_gradients()
    (m(x) ** 2).sum().backward()
    for p, g in zip(m.parameters(), g1):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-5, atol=1e-6)
    with fw.no_grad(), pytest.raises(fw.OarlockError, match=r"does not require a gradient"):
        fw.jit.to_static(fwd_bwd)(x)


def test_the_static_tier_checks_graph_replays_and_catches_a_broken_one(monkeypatch):
    from conformance.checks import CheckFailure
    from conformance.tiers import static
    from plugins.cpu import runtime as cpu_runtime

    with np.errstate(all="ignore"):  # the samples multiply inf by 0 on purpose
        assert static.primitive_case("mul", "float32", "cpu")["replayed"] > 0
        # a plugin bug: a replay runs the recorded launches but the last one
        monkeypatch.setattr(cpu_runtime.CPUGraph, "run", lambda g: [call() for call in g.calls[:-1]])
        with pytest.raises(CheckFailure, match=r"mul\[float32\] .* a graph replay\)"):
            static.primitive_case("mul", "float32", "cpu")


# -- outputs written in place (Executor(inplace=...)) ----------------------------------------
UPDATE = (
    "module @upd(%0: tensor<[s0], float32, cpu>, %1: tensor<[s0], float32, cpu>) -> "
    "(tensor<[s0], float32, cpu>, tensor<[s0], float32, cpu>) {\n"
    "  %2 = op.mul(%1, %1) : tensor<[s0], float32, cpu>\n"
    "  %3 = op.sub(%0, %2) : tensor<[s0], float32, cpu>\n"
    "  builtin.return(%3, %2)\n"
    "}\n"
)
# the input is read after the output that replaces it is computed: a copy at the end
LATE_READ = (
    "module @late(%0: tensor<[s0], float32, cpu>) -> (tensor<[s0], float32, cpu>, tensor<[s0], float32, cpu>) {\n"
    "  %1 = op.exp(%0) : tensor<[s0], float32, cpu>\n"
    "  %2 = op.add(%0, %1) : tensor<[s0], float32, cpu>\n"
    "  builtin.return(%1, %2)\n"
    "}\n"
)


@pytest.mark.parametrize("graphs", [False, True])
def test_outputs_written_in_place_keep_the_inputs_storage(graphs):
    rng = np.random.default_rng(0)
    p0, g = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    ex = ir.Executor(ir.parse_program(UPDATE), "cpu", graphs=graphs, inplace={0: 0})
    p, gt = fw.to_tensor(p0), fw.to_tensor(g)
    storage, want = p._block, p0.copy()
    for _ in range(4):
        new, sq = ex(p, gt)
        want = want - g * g
        assert new is p and p._block is storage  # returned as its input, in its storage
        np.testing.assert_allclose(p.numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(sq.numpy(), g * g, rtol=1e-6)
    stats = ex.memory_stats({"s0": 1000})
    assert stats["instructions"] == 2  # written straight into p: no copy
    assert stats["graph"] is (graphs and stats["graph_offered"])
    # another tensor (other storage) is updated in its own storage too
    q = fw.to_tensor(p0)
    assert ex(q, gt)[0] is q
    np.testing.assert_allclose(q.numpy(), p0 - g * g, rtol=1e-6)
    np.testing.assert_allclose(p.numpy(), want, rtol=1e-6)  # p untouched by q's run


def test_an_input_read_after_its_replacement_is_written_through_a_copy():
    x0 = np.linspace(-1, 1, 64, dtype=np.float32)
    ex = ir.Executor(ir.parse_program(LATE_READ), "cpu", graphs=False, inplace={0: 0})
    x = fw.to_tensor(x0)
    e, s = ex(x)
    assert e is x
    np.testing.assert_allclose(x.numpy(), np.exp(x0), rtol=1e-6)
    np.testing.assert_allclose(s.numpy(), x0 + np.exp(x0), rtol=1e-6)  # read the old x
    assert ex.memory_stats({"s0": 64})["instructions"] == 3  # exp, add, copy into x


def test_inplace_errors_name_the_argument():
    prog = ir.parse_program(UPDATE)
    with pytest.raises(fw.OpArgumentError, match="output index 2 out of range"):
        ir.Executor(prog, "cpu", inplace={2: 0})
    with pytest.raises(fw.OpArgumentError, match="an input is given for two outputs"):
        ir.Executor(prog, "cpu", inplace={0: 0, 1: 0})
    ex = ir.Executor(prog, "cpu", inplace={0: 0})
    p = fw.to_tensor(np.ones(8, np.float32))
    with pytest.raises(fw.OpArgumentError, match="input 0 of @upd is written in place, but input 1 shares"):
        ex(p, p)
    np.testing.assert_array_equal(p.numpy(), np.ones(8, np.float32))  # nothing was written


def test_fused_kernels_are_bound_once_through_the_compile_access():
    # Compiler.bind: the cpu plugin casts the data pointers once; a run calls the bound cffi
    # function, and a new input's memory rebinds only the instructions that read it
    from framework.compiler import has_compile_access

    if not has_compile_access(_dev.parse("cpu")):
        pytest.skip("no C compiler for the cpu plugin")
    f = fw.jit.to_static(lambda x: F.silu(x * 2.0 + 1.0) * x)
    rng = np.random.default_rng(0)
    for _ in range(3):
        a = rng.standard_normal((4, 33)).astype(np.float32)
        want = (a * 2 + 1) / (1 + np.exp(-(a * 2 + 1))) * a
        np.testing.assert_allclose(f(fw.to_tensor(a)).numpy(), want, rtol=1e-5, atol=1e-6)
    plan = next(iter(f.programs[0].executor._plans.values()))
    fused = [b for b, n in zip(plan.bound, plan.names) if n.startswith("fused.")]
    assert fused and all(isinstance(b, functools.partial) and hasattr(b, "keep") for b in fused)


# x is read again in the pass after the one that stores x * 2: that output may not go into x
TWO_PASSES = (
    "module @two(%0: tensor<[4, 8], float32, cpu>, %1: tensor<[4, 8], float32, cpu>) -> "
    "(tensor<[4, 8], float32, cpu>, tensor<[4, 8], float32, cpu>) {\n"
    "  %2 = builtin.constant {value = 2.0} : tensor<[1, 1], float32, cpu>\n"
    "  %3 = op.mul(%0, %2) : tensor<[4, 8], float32, cpu>\n"
    "  %4 = op.sum(%1) {axes = (1,), keepdim = true} : tensor<[4, 1], float32, cpu>\n"
    "  %5 = op.mul(%0, %4) : tensor<[4, 8], float32, cpu>\n"
    "  builtin.return(%3, %5)\n"
    "}\n"
)


@pytest.mark.parametrize("aliased,direct", [(0, False), (1, True)])
def test_a_fused_row_kernel_writes_in_place_only_in_the_last_pass_reading_the_input(aliased, direct):
    from framework.compiler import has_compile_access
    from framework.ir import passes

    if not has_compile_access(_dev.parse("cpu")):
        pytest.skip("no C compiler for the cpu plugin")
    prog = passes.fuse_program(ir.parse_program(TWO_PASSES), "cpu")
    assert sum(op.name.startswith("fused.") for op in prog.block.ops) == 1  # one kernel, two passes
    ex = ir.Executor(prog, "cpu", graphs=False, inplace={aliased: 0})
    rng = np.random.default_rng(0)
    x0, g = rng.standard_normal((4, 8)).astype(np.float32), rng.standard_normal((4, 8)).astype(np.float32)
    x = fw.to_tensor(x0)
    outs = ex(x, fw.to_tensor(g))
    assert outs[aliased] is x
    np.testing.assert_allclose(outs[0].numpy(), x0 * 2, rtol=1e-6)
    np.testing.assert_allclose(outs[1].numpy(), x0 * g.sum(1, keepdims=True), rtol=1e-5)
    plan = next(iter(ex._plans.values()))
    assert ("copy" in plan.names) is not direct


# q, k and v of a fused qkv projection: a permute, then three slices along its leading axis
QKV = (
    "module @qkv(%0: tensor<[s0, 3, 4], float32, cpu>) -> (tensor<[1, s0, 4], float32, cpu>, "
    "tensor<[1, s0, 4], float32, cpu>, tensor<[3, s0, 2], float32, cpu>, tensor<[3, 1, 4], float32, cpu>) {\n"
    "  %1 = op.permute(%0) {perm = (1, 0, 2)} : tensor<[3, s0, 4], float32, cpu>\n"
    "  %2 = op.slice(%1) {starts = (0, 0, 0), steps = (1, 1, 1), stops = (1, sym<s0>, 4)} : tensor<[1, s0, 4], float32, cpu>\n"
    "  %3 = op.slice(%1) {starts = (1, 0, 0), steps = (1, 1, 1), stops = (2, sym<s0>, 4)} : tensor<[1, s0, 4], float32, cpu>\n"
    "  %4 = op.slice(%1) {starts = (2, 0, 0), steps = (1, 1, 1), stops = (3, sym<s0>, 4)} : tensor<[1, s0, 4], float32, cpu>\n"
    "  %5 = op.exp(%2) : tensor<[1, s0, 4], float32, cpu>\n"
    "  %6 = op.add(%5, %3) : tensor<[1, s0, 4], float32, cpu>\n"
    "  %7 = op.slice(%1) {starts = (0, 0, 1), steps = (1, 1, 2), stops = (3, sym<s0>, 4)} : tensor<[3, s0, 2], float32, cpu>\n"
    "  %8 = op.slice(%0) {starts = (1, 0, 0), steps = (1, 1, 1), stops = (2, 3, 4)} : tensor<[1, 3, 4], float32, cpu>\n"
    "  %9 = op.reshape(%8) {shape = (3, 1, 4)} : tensor<[3, 1, 4], float32, cpu>\n"
    "  builtin.return(%6, %4, %7, %9)\n"
    "}\n"
)


@pytest.mark.parametrize("graphs", [False, True])
def test_a_slice_that_is_one_run_of_its_input_is_a_view_and_the_others_copy(graphs):
    ex = ir.Executor(ir.parse_program(QKV), "cpu", graphs=graphs)
    rng = np.random.default_rng(0)
    for rows in (5, 5, 5, 2):  # a graph replays from the third run; then another binding
        x = rng.standard_normal((rows, 3, 4)).astype(np.float32)
        t = fw.to_tensor(x)
        outs = [o.numpy() for o in ex(t)]
        p = x.transpose(1, 0, 2)
        np.testing.assert_allclose(outs[0], np.exp(p[0:1]) + p[1:2], rtol=1e-6)
        np.testing.assert_array_equal(outs[1], p[2:3])  # returned: a view of the permute's buffer
        np.testing.assert_array_equal(outs[2], p[:, :, 1::2])
        np.testing.assert_array_equal(outs[3], x[1:2].reshape(3, 1, 4))  # a view of the input
        np.testing.assert_array_equal(t.numpy(), x)
    plan = ex._plans[next(reversed(ex._plans))]
    assert plan.names.count("slice") == 1  # only the strided one runs a kernel


def test_contiguous_slices_are_found_as_numpy_lays_them_out():
    from framework._src.ops.shape import contiguous_slice

    rng = np.random.default_rng(1)
    for _ in range(400):
        shape = tuple(int(d) for d in rng.integers(1, 5, rng.integers(1, 5)))
        x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        sl = []
        for d in shape:
            a = int(rng.integers(0, d))
            b = int(rng.integers(a + 1, d + 1))
            sl.append((a, b, int(rng.choice([1, 1, 1, 2]))))
        attrs = {
            "starts": [a for a, _, _ in sl],
            "stops": [b for _, b, _ in sl],
            "steps": [s for *_, s in sl],
        }
        v = x[tuple(slice(a, b, s) for a, b, s in sl)]
        off = contiguous_slice(shape, attrs)
        assert (off is not None) == v.flags.c_contiguous, (shape, sl)
        if off is not None:
            np.testing.assert_array_equal(x.ravel()[off : off + v.size], v.ravel())
    assert contiguous_slice((4,), {"starts": (0,), "stops": (5,), "steps": (1,)}) is None  # past the end


# a concat whose inputs are written where it would copy them to (their leading dims are 1), and
# concats that must copy: along a later axis of rows, an input given twice, a program output, a
# program input
CONCATS = (
    "module @cat(%0: tensor<[1, s0, 4], float32, cpu>, %1: tensor<[1, s0, 4], float32, cpu>) -> ("
    "tensor<[2, s0, 4], float32, cpu>, tensor<[1, s0, 4], float32, cpu>, tensor<[1, s0, 8], float32, cpu>, "
    "tensor<[2, s0, 4], float32, cpu>, tensor<[2, s0, 4], float32, cpu>) {\n"
    "  %2 = op.exp(%0) : tensor<[1, s0, 4], float32, cpu>\n"
    "  %3 = op.neg(%1) : tensor<[1, s0, 4], float32, cpu>\n"
    "  %4 = op.concat(%2, %3) {axis = 0} : tensor<[2, s0, 4], float32, cpu>\n"
    "  %5 = op.mul(%4, %4) : tensor<[2, s0, 4], float32, cpu>\n"
    "  %6 = op.add(%2, %3) : tensor<[1, s0, 4], float32, cpu>\n"
    "  %7 = op.sin(%0) : tensor<[1, s0, 4], float32, cpu>\n"
    "  %8 = op.cos(%1) : tensor<[1, s0, 4], float32, cpu>\n"
    "  %9 = op.concat(%7, %8) {axis = 2} : tensor<[1, s0, 8], float32, cpu>\n"
    "  %10 = op.concat(%7, %7) {axis = 0} : tensor<[2, s0, 4], float32, cpu>\n"
    "  %11 = op.concat(%6, %0) {axis = 0} : tensor<[2, s0, 4], float32, cpu>\n"
    "  builtin.return(%5, %6, %9, %10, %11)\n"
    "}\n"
)


@pytest.mark.parametrize("graphs", [False, True])
def test_a_concats_inputs_are_written_into_its_result_where_they_are_runs_of_it(graphs):
    ex = ir.Executor(ir.parse_program(CONCATS), "cpu", graphs=graphs)
    rng = np.random.default_rng(0)
    for rows in (5, 5, 5, 3):  # a graph replays from the third run; then another binding
        a = rng.standard_normal((1, rows, 4)).astype(np.float32)
        b = rng.standard_normal((1, rows, 4)).astype(np.float32)
        outs = [o.numpy() for o in ex(fw.to_tensor(a), fw.to_tensor(b))]
        cat = np.concatenate([np.exp(a), -b])
        np.testing.assert_allclose(outs[0], cat * cat, rtol=1e-6)
        np.testing.assert_allclose(outs[1], np.exp(a) - b, rtol=1e-6)  # read after the concat
        np.testing.assert_allclose(outs[2], np.concatenate([np.sin(a), np.cos(b)], axis=2), rtol=1e-6)
        np.testing.assert_allclose(outs[3], np.concatenate([np.sin(a)] * 2), rtol=1e-6)
        np.testing.assert_allclose(outs[4], np.concatenate([np.exp(a) - b, a]), rtol=1e-6)
    plan = ex._plans[next(reversed(ex._plans))]
    assert plan.names.count("concat") == 3  # the first is written in place; the others copy


def test_fused_groups_write_a_concats_inputs_in_place_under_to_static(dev):
    @fw.jit.to_static
    def f(x, w):
        h = x * F.sigmoid(x) * w  # two fusion groups, each writing one half of the concat
        g = (x - w) * (x - w)
        return fw.concat([h.reshape([1, 8, 16]), g.reshape([1, 8, 16])]).sum(axis=0) * 2.0

    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = rng.standard_normal((8, 16)).astype(np.float32)
    for _ in range(3):
        got = f(fw.to_tensor(x, device=dev), fw.to_tensor(w, device=dev)).numpy()
        np.testing.assert_allclose(got, (x / (1 + np.exp(-x)) * w + (x - w) ** 2) * 2.0, rtol=1e-5, atol=1e-6)
    plan = next(iter(f.programs[0].executor._plans.values()))
    assert "concat" not in plan.names


FOUR = (
    "module @four(%0: tensor<[s0], float32, cpu>) -> (tensor<[s0], float32, cpu>, tensor<[s0], float32, cpu>, "
    "tensor<[s0], float32, cpu>, tensor<[s0], float32, cpu>) {\n"
    "  %1 = op.exp(%0) : tensor<[s0], float32, cpu>\n"
    "  %2 = op.neg(%0) : tensor<[s0], float32, cpu>\n"
    "  %3 = op.sin(%0) : tensor<[s0], float32, cpu>\n"
    "  %4 = op.cos(%0) : tensor<[s0], float32, cpu>\n"
    "  builtin.return(%1, %2, %3, %4)\n"
    "}\n"
)


def test_outputs_land_where_they_were_last_run_when_the_caller_let_them_go():
    """Outputs of one size come back from the allocator's pool in another order than they
    went in; each takes its own block of the last run again, so the instructions writing them
    (and a program reading them) stay bound."""
    ex = ir.Executor(ir.parse_program(FOUR), "cpu", graphs=False)
    x = np.linspace(-1, 1, 4096, dtype=np.float32)
    t = fw.to_tensor(x)
    seen = []
    for _ in range(4):
        outs = ex(t)
        np.testing.assert_allclose(outs[2].numpy(), np.sin(x), rtol=1e-6)
        seen.append([id(o._block.handle) for o in outs])
        while outs:  # the caller drops them, first to last: their blocks go back to the pool
            del outs[0]
    assert seen[1] == seen[2] == seen[3]
    plan = _plan(ex)
    calls = []
    orig = plan._bind
    plan._bind = lambda k: calls.append(k) or orig(k)
    for _ in range(3):
        ex(t)
    assert calls == []  # nothing rebound


def test_the_allocator_hands_a_caller_its_preferred_block_when_it_is_free():
    from framework._src import dispatch

    alloc = dispatch.state(_dev.Device("cpu", 0)).alloc
    blocks = [alloc.malloc(3000) for _ in range(3)]
    ids = [id(b.handle) for b in blocks]
    del blocks
    got = alloc.malloc(3000, prefer=ids[0])
    assert id(got.handle) == ids[0]
    assert id(alloc.malloc(3000, prefer=12345).handle) in ids[1:]  # not free: any block of the size


@pytest.mark.parametrize("compiled", ["1", "0"])
def test_a_kernel_that_declines_when_run_falls_back_as_eager_does(monkeypatch, compiled):
    # the OpenCL plugin registers cast for every dtype and declines (KernelNotFoundError) a
    # cast to bfloat16 when it runs; eager mode falls back to the cpu plugin, and so must a
    # program (it raised the plugin's error before). Later instructions read the result from
    # the storage the plan gave it; the second run takes the fallback at once.
    if fw.device_count("opencl") == 0:
        pytest.skip("no OpenCL device")
    monkeypatch.setenv("OARLOCK_COMPILE", compiled)
    x = fw.to_tensor(np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6), device="opencl:0")

    def f(x):
        y = (x * 3.3).astype("bfloat16").astype("float32")
        return y + x, y.sum()

    want = [t.numpy() for t in f(x)]
    g = fw.jit.to_static(f)
    before = fw.fallback_stats().get("cast@opencl", 0)
    for _ in range(2):
        got = g(x)
        assert all(t.device == x.device for t in got)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a.numpy(), b)
    if compiled == "0":
        assert fw.fallback_stats().get("cast@opencl", 0) > before  # counted, as in eager mode
    else:  # the compiler fuses the casts into one kernel that rounds to bfloat16 on the device
        assert fw.fallback_stats().get("cast@opencl", 0) == before
    bf = (np.linspace(-2, 2, 24, dtype=np.float32) * np.float32(3.3)).astype("bfloat16").astype(np.float32)
    np.testing.assert_array_equal(want[0].reshape(-1), bf + np.linspace(-2, 2, 24, dtype=np.float32))
