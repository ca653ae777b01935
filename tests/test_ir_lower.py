"""The kernel dialect: lowering an op-dialect program for a device (framework.ir.passes.lower),
its text form, its verifier rules, and the executor running from it."""

from __future__ import annotations

import io

import numpy as np
import pytest

import framework as fw
from framework import ir
from framework.ir import passes
from framework.ir.passes.lower import lower

SRC = """module @f(%0: tensor<[s0, 3], float32, cpu>, %1: tensor<[3], float32, cpu>) -> (tensor<[3*s0], float32, cpu>) {
  %2 = op.add(%0, %1) : tensor<[s0, 3], float32, cpu>
  %3 = op.softmax(%2) {axis = -1} : tensor<[s0, 3], float32, cpu>
  %4 = op.exp(%3) : tensor<[s0, 3], float32, cpu>
  %5 = op.reshape(%4) {shape = (sym<3*s0>,)} : tensor<[3*s0], float32, cpu>
  builtin.return(%5)
}
"""

CPU = """module @f(%0: tensor<[s0, 3], float32, cpu>, %1: tensor<[3], float32, cpu>) -> (tensor<[3*s0], float32, cpu>) {
  %2 = kernel.add(%0, %1) {kernel.broadcast = true, kernel.device = "cpu:0", kernel.dtype = float32, kernel.name = "cpu/add/float32"} : tensor<[s0, 3], float32, cpu>
  %3 = kernel.eager(%2) {axis = -1, kernel.device = "cpu:0", kernel.op = "op.softmax", kernel.reason = "composite without a kernel on cpu: decomposed by the dispatcher"} : tensor<[s0, 3], float32, cpu>
  %4 = kernel.exp(%3) {kernel.broadcast = true, kernel.device = "cpu:0", kernel.dtype = float32, kernel.name = "cpu/exp/float32"} : tensor<[s0, 3], float32, cpu>
  %5 = kernel.reshape(%4) {kernel.device = "cpu:0", kernel.name = "view", shape = (sym<3*s0>,)} : tensor<[3*s0], float32, cpu>
  builtin.return(%5)
}
"""

NOBCAST = """module @f(%0: tensor<[s0, 3], float32, cpu>, %1: tensor<[3], float32, cpu>) -> (tensor<[3*s0], float32, cpu>) {
  %2 = kernel.expand(%1) {kernel.device = "nobcast:0", kernel.dtype = float32, kernel.name = "nobcast/expand/float32", shape = (sym<s0>, 3)} : tensor<[s0, 3], float32, cpu>
  %3 = kernel.add(%0, %2) {kernel.broadcast = false, kernel.device = "nobcast:0", kernel.dtype = float32, kernel.name = "nobcast/add/float32"} : tensor<[s0, 3], float32, cpu>
  %4 = kernel.eager(%3) {axis = -1, kernel.device = "nobcast:0", kernel.op = "op.softmax", kernel.reason = "composite without a kernel on nobcast: decomposed by the dispatcher"} : tensor<[s0, 3], float32, cpu>
  %5 = kernel.exp(%4) {kernel.broadcast = false, kernel.device = "nobcast:0", kernel.dtype = float32, kernel.name = "nobcast/exp/float32"} : tensor<[s0, 3], float32, cpu>
  %6 = kernel.reshape(%5) {kernel.device = "nobcast:0", kernel.name = "view", shape = (sym<3*s0>,)} : tensor<[3*s0], float32, cpu>
  builtin.return(%6)
}
"""


def _reference(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    z = x + b
    e = np.exp(z - z.max(-1, keepdims=True))
    return np.exp(e / e.sum(-1, keepdims=True)).reshape(-1)


@pytest.fixture(scope="module")
def nobcast():
    fw.register_plugin("tests.plugins_for_tests.nobcast", name="nobcast")
    return "nobcast"


def test_lowered_text_on_cpu():
    p = ir.parse_program(SRC)
    q = lower(p, "cpu")
    assert str(q) == CPU
    ir.verify(q)
    assert str(p) == SRC  # the op-dialect program is left as it was


def test_expand_inserted_for_a_kernel_that_does_not_broadcast(nobcast):
    q = lower(ir.parse_program(SRC), nobcast)
    assert str(q) == NOBCAST
    ir.verify(q)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    ex = ir.Executor(ir.parse_program(SRC), nobcast)
    ins = [fw.tensor(x, device=nobcast), fw.tensor(b, device=nobcast)]
    with pytest.warns(fw.FallbackWarning):
        got = ex(*ins)[0].numpy()
    np.testing.assert_allclose(got, _reference(x, b), rtol=1e-6, atol=1e-6)
    # the instruction list is the kernel program's: expand, add, the eager softmax, exp
    assert ex.plan(ex.bind(ins)).names == ["expand", "add", "softmax", "exp"]


@pytest.mark.parametrize("text", [CPU, NOBCAST])
def test_round_trip(text, nobcast):
    p = ir.parse_program(text)
    assert str(p) == text
    ir.verify(p)


def test_executor_runs_a_parsed_kernel_program_on_its_device():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    ex = ir.Executor(ir.parse_program(CPU), "cpu", graphs=False)
    assert ex.lowered is ex.program  # lowered already: not lowered again
    got = ex(fw.tensor(x), fw.tensor(b))[0].numpy()
    np.testing.assert_allclose(got, _reference(x, b), rtol=1e-6, atol=1e-6)


def test_a_kernel_program_for_another_device_is_refused(nobcast):
    with pytest.raises(ir.IRError, match=r"lowered for \['nobcast:0'\], not cpu:0"):
        ir.Executor(ir.parse_program(NOBCAST), "cpu")


def test_executor_reads_the_kernel_from_the_attribute():
    text = CPU.replace('kernel.name = "cpu/exp/float32"', 'kernel.name = "elsewhere/exp/float32"')
    ex = ir.Executor(ir.parse_program(text), "cpu")
    with pytest.raises(
        ir.IRError, match="lowered to kernel 'elsewhere/exp/float32'.*lower the program again"
    ):
        ex(fw.ones([2, 3]), fw.ones([3]))


def test_verifier_dtype_disagrees_with_operand():
    text = CPU.replace(
        'kernel.dtype = float32, kernel.name = "cpu/exp/float32"',
        'kernel.dtype = float64, kernel.name = "cpu/exp/float64"',
    )
    with pytest.raises(ir.VerifyError) as e:
        ir.verify(ir.parse_program(text))
    msg = str(e.value)
    assert "op #2 'kernel.exp'" in msg
    assert "kernel.dtype is float64 but operand 0, which picks the kernel, is float32" in msg


def test_verifier_non_broadcasting_kernel_needs_expand(nobcast):
    lines = NOBCAST.splitlines(keepends=True)
    text = "".join([lines[0], lines[2].replace("%0, %2", "%0, %1"), *lines[3:]])
    with pytest.raises(ir.VerifyError, match=r"op #0 'kernel.add': operand 1 is .*does not broadcast"):
        ir.verify(ir.parse_program(text))


def test_verifier_missing_kernel_attributes():
    text = CPU.replace('kernel.name = "cpu/add/float32"', 'name_was_dropped = "x"')
    with pytest.raises(
        ir.VerifyError, match=r"op #0 'kernel.add': lacks the attribute\(s\) \['kernel.name'\]"
    ):
        ir.verify(ir.parse_program(text))
    bad = CPU.replace('kernel.op = "op.softmax"', 'kernel.op = "op.no_such_op"')
    with pytest.raises(ir.VerifyError, match="op #1 'kernel.eager': kernel.op 'op.no_such_op' is not an op"):
        ir.verify(ir.parse_program(bad))


def test_print_ir_lower(monkeypatch, capsys):
    monkeypatch.setenv("OARLOCK_PRINT_IR", "lower")
    ir.Executor(ir.parse_program(SRC), "cpu")
    err = capsys.readouterr().err
    assert "// ----- IR before pass 'lower' (cpu:0) -----\n" + SRC in err
    assert "// ----- IR after pass 'lower' (cpu:0) -----\n" + CPU in err
    # as a pass of the manager (which does the printing there)
    p = ir.parse_program(SRC)
    out = io.StringIO()
    passes.PassManager.named("lower", stream=out).run(p, passes.PassContext(device="cpu"))
    assert str(p) == CPU
    assert out.getvalue().endswith("// ----- IR after pass 'lower' -----\n" + CPU)


def test_fused_ops_lower_to_their_generated_kernel():
    from framework import compiler

    if not compiler.has_compile_access("cpu"):
        pytest.skip("cpu has no compile access: nothing is fused")
    rng = np.random.default_rng(2)
    h, a = (rng.standard_normal((4, 8)).astype(np.float32) for _ in range(2))

    def f(h, a):
        return fw.exp(h + a) * 2.0

    sf = fw.jit.to_static(f)
    with fw.no_grad():
        got = sf(fw.tensor(h), fw.tensor(a)).numpy()
    np.testing.assert_allclose(got, np.exp(h + a) * 2.0, rtol=1e-5, atol=1e-6)
    ex = sf.programs[-1].executor
    fused = [op for op in ex.lowered.block.ops if op.name.startswith("kernel.fused.")]
    assert fused, ex.lowered
    for op in fused:
        group = op.name[len("kernel.") :]
        assert op.attrs["kernel.name"] == f"oarlock.compiler (fused)/{group}/float32"
        assert op.attrs["kernel.device"] == "cpu:0"
    ir.verify(ex.lowered)
    assert str(ir.parse_program(str(ex.lowered))) == str(ex.lowered)


def test_executor_lowers_again_when_the_kernel_table_changed():
    """A lowering made before the plugins changed (here: its choice edited to a kernel the
    table does not give) is redone once for an op-dialect program; the run is right."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    ex = ir.Executor(ir.parse_program(SRC), "cpu", graphs=False)
    stale = ex.lowered
    exp = next(op for op in stale.block.ops if op.name == "kernel.exp")
    exp.attrs["kernel.name"] = "gone/exp/float32"
    got = ex(fw.tensor(x), fw.tensor(b))[0].numpy()
    np.testing.assert_allclose(got, _reference(x, b), rtol=1e-6, atol=1e-6)
    assert ex.lowered is not stale and str(ex.lowered) == CPU
