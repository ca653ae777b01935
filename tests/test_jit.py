"""fw.jit.to_static, the executor and jit.save/load: values against eager mode and numpy on
every device, guards and re-tracing, symbolic batch dims, shared parameters, the error for a
Python branch on a traced value, and damaged program files."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import framework as fw
from framework import ir
from framework.static import InputSpec


def _mlp(device: str) -> fw.nn.Layer:
    fw.manual_seed(0)
    return fw.nn.Sequential(fw.nn.Linear(784, 64), fw.nn.ReLU(), fw.nn.Linear(64, 10)).to(device)


def _np_mlp(net: fw.nn.Layer, x: np.ndarray) -> np.ndarray:
    w0, b0, w1, b1 = (p.numpy().astype(np.float64) for p in net.parameters())
    return np.maximum(x @ w0 + b0, 0) @ w1 + b1


def test_mlp_to_static_matches_eager_and_numpy_with_one_program_for_all_batches(device):
    net = _mlp(device)
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((n, 784)).astype(np.float32) for n in (128, 3, 1)]
    with fw.no_grad():
        eager = [net(fw.to_tensor(x, device=device)).numpy() for x in xs]
        fw.jit.to_static(net, input_spec=[InputSpec(shape=[None, 784], dtype="float32")])
        static = [net(fw.to_tensor(x, device=device)).numpy() for x in xs]
    for x, e, s in zip(xs, eager, static):
        np.testing.assert_allclose(s, e, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(s, _np_mlp(net, x), rtol=1e-4, atol=1e-4)
    progs = net.forward.programs
    assert len(progs) == 1
    text = str(progs[0].program)
    assert "tensor<[s0_0, 784], float32" in text and 'builtin.parameter {name = "0.weight"}' in text
    assert text.count("op.matmul") == 2


def test_parameters_are_shared_with_the_eager_layer(device):
    net = _mlp(device)
    fw.jit.to_static(net, input_spec=[InputSpec([None, 784])])
    x = fw.randn([4, 784]).to(device)
    with fw.no_grad():
        net(x)
        cp = net.forward.programs[0]
        assert cp.params["0.weight"] is net[0].weight  # the same tensor object, not a copy
        net[2].bias.set_value(np.full([10], 3.0, np.float32))
        got = net(x).numpy()
    np.testing.assert_allclose(got, _np_mlp(net, x.numpy()), rtol=1e-4, atol=1e-4)


def test_guards_retrace_on_dtype_device_and_static_dims():
    calls = []

    def f(x):
        calls.append(x.shape)
        return fw.exp(x) * 2 + 1

    sf = fw.jit.to_static(f)  # no input_spec: every dim is static and guarded
    with fw.no_grad():
        a = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
        np.testing.assert_allclose(sf(fw.to_tensor(a)).numpy(), np.exp(a) * 2 + 1, rtol=1e-6)
        sf(fw.to_tensor(a + 1))  # same guards: no new trace
        assert len(sf.programs) == 1
        np.testing.assert_allclose(
            sf(fw.to_tensor(a.astype(np.float64))).numpy(), np.exp(a.astype(np.float64)) * 2 + 1
        )
        assert len(sf.programs) == 2 and sf.programs[1].program.inputs[0].type.dtype == np.float64
        sf(fw.to_tensor(a.reshape(3, 2)))
        assert len(sf.programs) == 3
    assert len(calls) == 3  # one trace per guard set


def test_symbolic_dims_follow_reshapes_and_created_tensors(device):
    def f(x):
        b = x.shape[0]
        y = x.reshape([b * 2, 2]) + fw.ones([b * 2, 1], device=x.device)
        return y.sum(axis=1), fw.flatten(y)

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, 4])])
    with fw.no_grad():
        for n in (5, 2, 9):
            a = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
            s, flat = sf(fw.to_tensor(a, device=device))
            want = a.reshape(n * 2, 2) + 1
            np.testing.assert_allclose(s.numpy(), want.sum(1))
            np.testing.assert_allclose(flat.numpy(), want.ravel())
    assert len(sf.programs) == 1
    text = str(sf.programs[0].program)
    assert "shape = (sym<2*s0_0>, 2)" in text and "tensor<[4*s0_0], float32" in text


def test_a_branch_on_a_size_is_guarded_one_program_per_outcome():
    def f(x):
        if x.shape[0] > 12:  # a branch on a size: one program per outcome, guarded
            return x * 2
        return x * 3

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None])])
    with fw.no_grad():
        np.testing.assert_allclose(sf(fw.to_tensor([1.0, 2.0])).numpy(), [3.0, 6.0])
        np.testing.assert_allclose(sf(fw.arange(20, dtype="float32")).numpy(), np.arange(20) * 2)
        np.testing.assert_allclose(sf(fw.arange(5, dtype="float32")).numpy(), np.arange(5) * 3)
        np.testing.assert_allclose(sf(fw.arange(13, dtype="float32")).numpy(), np.arange(13) * 2)
    assert len(sf.programs) == 2


def _sign_flip(x):
    if x.sum() > 0:  # the line the error must name (a called helper is not converted)
        return x
    return -x


def test_python_branch_on_a_traced_value_names_the_line():
    sf = fw.jit.to_static(lambda x: _sign_flip(x) * 1.0, full_graph=True)
    with fw.no_grad(), pytest.raises(fw.jit.TracedValueError) as err:
        sf(fw.ones([3]))
    msg = str(err.value)
    assert f"test_jit.py:{_sign_flip.__code__.co_firstlineno + 1}" in msg and "if x.sum() > 0" in msg
    assert "fw.where" in msg and "full_graph=True" in msg
    sf2 = fw.jit.to_static(lambda x: x * x.max().item(), full_graph=True)
    with fw.no_grad(), pytest.raises(fw.jit.TracedValueError, match=r"item\(\) of a traced tensor"):
        sf2(fw.ones([3]))


def test_composites_trace_to_their_decomposition(device):
    fw.manual_seed(3)
    net = fw.nn.Sequential(
        fw.nn.Linear(8, 16), fw.nn.LayerNorm(16), fw.nn.GELU(), fw.nn.Linear(16, 4), fw.nn.Softmax()
    ).to(device)
    net.eval()
    x = fw.randn([5, 8]).to(device)
    with fw.no_grad():
        want = net(x).numpy()
        fw.jit.to_static(net, input_spec=[InputSpec([None, 8])])
        got = net(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.sum(1), 1.0, rtol=1e-5)
    text = str(net.forward.programs[0].program)
    assert "op.softmax" not in text and "op.exp" in text  # no fused softmax kernel: decomposed


def test_save_on_cpu_load_anywhere_gives_the_same_outputs(tmp_path, device):
    net = _mlp("cpu")
    path = os.path.join(tmp_path, "mlp")
    fw.jit.save(net, path, input_spec=[InputSpec([None, 784], "float32")])
    text = open(path + ".oarlock").read()
    assert text.startswith("// oarlock-program 1\n// sha256 ") and "module @forward" in text
    x = np.random.default_rng(2).standard_normal((6, 784)).astype(np.float32)
    with fw.no_grad():
        want = net(fw.to_tensor(x)).numpy()
    loaded = fw.jit.load(path, device=device)
    assert isinstance(loaded, fw.nn.Layer)
    got = loaded(fw.to_tensor(x, device=device)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # loaded on cpu, moved to the device: the program is lowered again there
    cpu = fw.jit.load(path, device="cpu")
    np.testing.assert_allclose(cpu(fw.to_tensor(x, device="cpu")).numpy(), want, rtol=1e-5, atol=1e-5)
    cpu.to(device)
    np.testing.assert_allclose(cpu(fw.to_tensor(x, device=device)).numpy(), want, rtol=1e-5, atol=1e-5)


def test_damaged_program_files_give_clear_errors_and_run_nothing(tmp_path):
    net = fw.nn.Linear(4, 2)
    path = os.path.join(tmp_path, "lin")
    fw.jit.save(net, path, input_spec=[InputSpec([None, 4])])
    prog_file = path + ".oarlock"
    good = open(prog_file).read()
    with pytest.raises(fw.jit.ProgramFileError, match="no program at"):
        fw.jit.load(os.path.join(tmp_path, "missing"))
    open(prog_file, "w").write(good[: len(good) // 2])  # truncated
    with pytest.raises(fw.jit.ProgramFileError, match="truncated or was changed"):
        fw.jit.load(path)
    open(prog_file, "w").write(good.replace("// oarlock-program 1", "// oarlock-program 9"))
    with pytest.raises(fw.jit.ProgramFileError, match="program format '9'"):
        fw.jit.load(path)
    open(prog_file, "w").write("import os; os.system('touch pwned')\n")
    with pytest.raises(fw.jit.ProgramFileError, match="not a saved program"):
        fw.jit.load(path)
    # a body that matches its (recomputed) checksum but is not of the grammar: a parse error
    import hashlib

    body = good.split("\n", 3)[3].replace("op.matmul", "__import__('os').system")
    digest = hashlib.sha256(body.encode()).hexdigest()
    open(prog_file, "w").write(f"// oarlock-program 1\n// sha256 {digest}\n// returns tensor\n{body}")
    with pytest.raises(fw.jit.ProgramFileError, match="not a valid program"):
        fw.jit.load(path)
    assert not os.path.exists("pwned")
    open(prog_file, "w").write(good)
    weights = path + ".safetensors"
    raw = open(weights, "rb").read()
    open(weights, "wb").write(raw[:-7])
    with pytest.raises(fw.jit.ProgramFileError, match="weights of .* cannot be read"):
        fw.jit.load(path)


def test_static_function_program_is_verified_ir():
    sf = fw.jit.to_static(
        lambda x, y: fw.maximum(x, y) - x, input_spec=[InputSpec(["n", 3]), InputSpec(["n", 3])]
    )
    with fw.no_grad():
        a, b = np.ones((4, 3), np.float32), np.full((4, 3), 2.0, np.float32)
        np.testing.assert_allclose(sf(fw.to_tensor(a), fw.to_tensor(b)).numpy(), np.ones((4, 3)))
    p = sf.programs[0].program
    ir.verify(p)
    assert ir.print_program(ir.parse_program(str(p))) == str(p)
    assert p.symbols() == ("n",)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with fw.no_grad(), pytest.raises(fw.OpArgumentError, match="symbol n is 4"):
            sf(fw.to_tensor(a), fw.to_tensor(np.ones((5, 3), np.float32)))
