"""Errors that used to come out as foreign exceptions, or not at all (issue 35, "nothing
silent"): huge shapes and integers, deep nesting in program text, operands the op does not
take, endless loops, and damaged saved programs."""

from __future__ import annotations

import hashlib
import inspect
import random
import re
import sys

import numpy as np
import pytest

import framework as fw
from framework import ir
from framework.ir.control import LoopLimitError
from framework.jit import ProgramFileError

T = "tensor<[3], float32, cpu>"
B = "tensor<[], bool, cpu>"
I64 = "tensor<[], int64, cpu>"


def test_zeros_of_a_shape_no_array_can_index_names_zeros():
    with pytest.raises(
        fw.OpArgumentError, match=r"\[zeros\] shape \(0, 4611686018427387904\) .* past 2\*\*62"
    ):
        fw.zeros([0, 2**62])
    assert fw.zeros([0, 2**20]).shape == (0, 2**20)


@pytest.mark.parametrize(
    "data, dtype, match",
    [
        (2**70, None, r"the integer ~2\*\*70 does not fit int64"),
        (-(2**64), None, r"the integer -18446744073709551616 does not fit int64"),
        ([1, 2**70], None, r"the data holds an integer beyond int64"),
        (2**40, "int32", r"the integer 1099511627776 does not fit int32 \(range -2147483648\.\.2147483647\)"),
    ],
)
def test_to_tensor_of_an_integer_too_large_is_a_named_error(data, dtype, match):
    with pytest.raises(fw.OpArgumentError, match=r"\[to_tensor\] " + match):
        fw.to_tensor(data, dtype=dtype)
    assert fw.to_tensor(2**63 - 1).item() == 2**63 - 1


@pytest.mark.parametrize(
    "reps, match",
    [
        ([-3], r"repeat_times\[0\] must be an int >= 0, got -3"),
        ([0.5], r"repeat_times\[0\] must be an int >= 0, got 0.5"),
        ([2, -1], r"repeat_times\[1\] must be an int >= 0, got -1"),
        (
            [2**40, 2**40],
            r"repeat_times \[1099511627776, 1099511627776\] make x of shape \[2\] into \[1099511627776, 2199023255552\]",
        ),
    ],
)
def test_tile_errors_name_tile(reps, match):
    with pytest.raises(fw.OpArgumentError, match=r"^\[tile\] " + match):
        fw.tile(fw.ones([2]), reps)


def test_tile_still_tiles(device):
    x = fw.to_tensor([[1, 2]], device=device)
    np.testing.assert_array_equal(fw.tile(x, [2, 1, 2]).numpy(), np.tile([[1, 2]], (2, 1, 2)))
    np.testing.assert_array_equal(fw.tile(x, fw.to_tensor([3])).numpy(), np.tile([[1, 2]], 3))


# -- program text -----------------------------------------------------------------------------
def _nested_conds(depth: int) -> str:
    """A program of ``depth`` cf.cond nested in each other's then-regions; the innermost takes exp."""
    head = [f"module @f(%0: {T}, %1: {B}) -> ({T}) {{"]
    opens, closes = [], []
    for k in range(depth):
        pad = "  " * (k + 1)
        opens.append(f"{pad}%{k + 2} = cf.cond(%1) : {T} {{")
        closes.insert(0, f"{pad}  cf.yield(%{k + 3})\n{pad}}} {{\n{pad}  cf.yield(%0)\n{pad}}}")
    inner = f"{'  ' * (depth + 1)}%{depth + 2} = op.exp(%0) : {T}"
    return "\n".join([*head, *opens, inner, *closes, "  builtin.return(%2)", "}"]) + "\n"


def test_program_text_nested_past_the_limit_is_a_parse_error():
    p = ir.parse_program(_nested_conds(ir.text.MAX_NESTING))
    out = ir.Executor(p, "cpu")(fw.ones([3]), fw.to_tensor(True))[0]
    np.testing.assert_allclose(out.numpy(), np.exp(np.ones(3)), rtol=1e-6)
    with pytest.raises(ir.ParseError, match=r"regions nested more than 64 deep"):
        ir.parse_program(_nested_conds(5000))
    attr = "(" * 100_000 + "1" + ")" * 100_000
    text = f"module @f() -> ({I64}) {{\n  %0 = builtin.constant {{value = {attr}}} : {I64}\n  builtin.return(%0)\n}}\n"
    with pytest.raises(ir.ParseError, match=r"attribute tuples nested more than 64 deep"):
        ir.parse_program(text)


def test_running_a_program_nested_deeper_than_python_follows_is_an_ir_error():
    p = ir.parse_program(_nested_conds(ir.text.MAX_NESTING))
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 200)  # as if the program nested past Python's limit
    try:
        with pytest.raises(ir.IRError, match=r"nests control flow .* deeper than Python can follow"):
            ir.Executor(p, "cpu")(fw.ones([3]), fw.to_tensor(True))
    finally:
        sys.setrecursionlimit(old)


@pytest.mark.parametrize(
    "line, match",
    [
        (f"%1 = op.exp(%0, %0) : {T}", r"'op.exp': takes 1 operand\(s\) \(x\), got 2"),
        (f"%1 = op.add(%0) : {T}", r"'op.add': takes 2 operand\(s\) \(x, y\), got 1"),
        (
            f"%1 = op.exp(%0) {{alpha = 2.0}} : {T}",
            r"'op.exp': has attribute\(s\) \['alpha'\] that exp does not take",
        ),
        (
            f"%1 = op.softmax(%0, %0) {{axis = -1}} : {T}",
            r"'op.softmax': its operands and attributes do not fit",
        ),
        (f"%1 = op.softmax(%0) {{axis = -1, axes = -1}} : {T}", r"unexpected keyword argument 'axes'"),
    ],
)
def test_the_verifier_checks_operand_arity_and_attribute_names(line, match):
    text = f"module @f(%0: {T}) -> ({T}) {{\n  {line}\n  builtin.return(%1)\n}}\n"
    with pytest.raises(ir.VerifyError, match=match):
        ir.verify(ir.parse_program(text))
    with pytest.raises(ir.VerifyError, match=match):
        ir.Executor(ir.parse_program(text), "cpu")


# -- endless loops ----------------------------------------------------------------------------
ENDLESS = f"""module @f(%0: {I64}) -> ({I64}) {{
  %1 = builtin.constant {{value = 1}} : {I64}
  %2 = cf.while(%0) : {I64} {{
  ^bb0(%3: {I64}):
    %4 = op.ge(%3, %3) : {B}
    cf.yield(%4)
  }} {{
  ^bb0(%5: {I64}):
    %6 = op.add(%5, %1) : {I64}
    cf.yield(%6)
  }}
  builtin.return(%2)
}}
"""


def test_an_endless_cf_while_stops_at_the_cap(monkeypatch):
    monkeypatch.setenv("OARLOCK_MAX_WHILE_ITERATIONS", "40")
    ex = ir.Executor(ir.parse_program(ENDLESS), "cpu", constants={})
    with pytest.raises(
        LoopLimitError, match=r"\[cf.while\] the loop ran 40 iterations .*OARLOCK_MAX_WHILE_ITERATIONS"
    ):
        ex(fw.to_tensor(0))
    monkeypatch.setenv("OARLOCK_MAX_WHILE_ITERATIONS", "zero")
    with pytest.raises(ValueError, match=r"OARLOCK_MAX_WHILE_ITERATIONS='zero' is not a number >= 1"):
        ex(fw.to_tensor(0))


def test_while_loop_eagerly_and_under_to_static_stops_at_the_cap(monkeypatch, device):
    x = fw.to_tensor(0, device=device)
    with pytest.raises(LoopLimitError, match=r"\[while_loop\] the loop ran 7 iterations"):
        fw.static.nn.while_loop(lambda i: i > -1, lambda i: [i + 1], [x], max_iterations=7)
    assert fw.static.nn.while_loop(lambda i: i < 7, lambda i: [i + 1], [x], max_iterations=7)[0].item() == 7
    monkeypatch.setenv("OARLOCK_MAX_WHILE_ITERATIONS", "30")

    @fw.jit.to_static
    def endless(i):
        return fw.static.nn.while_loop(lambda i: i > -1, lambda i: [i + 1], [i])[0]

    with pytest.raises(LoopLimitError, match=r"\[cf.while\] the loop ran 30 iterations"):
        endless(x)


def test_a_loaded_program_with_an_endless_loop_stops_at_the_cap(tmp_path, monkeypatch, device):
    class Endless(fw.nn.Layer):
        def forward(self, i):
            return fw.static.nn.while_loop(lambda i: i > -1, lambda i: [i + 1], [i])[0]

    path = str(tmp_path / "endless")
    fw.jit.save(Endless(), path, input_spec=[fw.static.InputSpec([], "int64")])
    loaded = fw.jit.load(path, device=device)
    monkeypatch.setenv("OARLOCK_MAX_WHILE_ITERATIONS", "25")
    with pytest.raises(LoopLimitError, match=r"the loop ran 25 iterations"):
        loaded(fw.to_tensor(0, device=device))


# -- damaged saved programs -------------------------------------------------------------------
class _Net(fw.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = fw.nn.Linear(3, 2)

    def forward(self, x, flag):
        y = fw.static.nn.cond(
            flag, lambda: fw.nn.functional.softmax(self.fc(x), axis=-1), lambda: self.fc(x) * 2.0
        )
        return fw.concat([y, y], axis=0)


def _rewrite(path: str, body: str) -> None:
    """Write a program file with ``body`` under a header whose checksum fits it."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n", 3)
    digest = hashlib.sha256(body.encode()).hexdigest()
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{lines[0]}\n// sha256 {digest}\n{lines[2]}\n{body}")


def _must_load_or_refuse(path: str) -> str:
    try:
        fw.jit.load(path, device="cpu")
    except ProgramFileError:
        return "refused"
    return "loaded"


def test_every_damaged_program_file_is_a_program_file_error(tmp_path):
    fw.seed(0)
    path = str(tmp_path / "net")
    spec = [fw.static.InputSpec([None, 3], "float32"), fw.static.InputSpec([], "bool")]
    fw.jit.save(_Net(), path, input_spec=spec)
    file = path + ".oarlock"
    with open(file, encoding="utf-8") as f:
        original = f.read()
    body = original.split("\n", 3)[3]
    rng = random.Random(35)
    outcomes = {"refused": 0, "loaded": 0}
    cases: list[str] = []
    cases += [body[:n] for n in range(0, len(body), max(1, len(body) // 60))]  # truncated
    for _ in range(150):  # one character replaced by one the grammar uses
        k = rng.randrange(len(body))
        cases.append(body[:k] + rng.choice('%@(){}[]<>,:=*+-^"\\0123456789az. \n') + body[k + 1 :])
    attrs = list(re.finditer(r"(\{[a-z_]+ = [^{}]*\})", body))
    cases += [body[: m.start()] + body[m.end() :] for m in attrs]  # an attribute dict deleted
    cases += [body.replace(m.group(1), "{}", 1) for m in attrs]
    cases += [re.sub(r"\b(name|value|axis|shape) = ", "bogus = ", body, count=1)]  # a key renamed
    lines = body.split("\n")
    cases += ["\n".join(lines[:i] + lines[i + 1 :]) for i in range(len(lines))]  # a line deleted
    cases += [body.replace('"', "\\x", 1), body + "garbage"]
    for case in cases:
        _rewrite(file, case)
        outcomes[_must_load_or_refuse(path)] += 1
    for n in (0, 10, len(original) // 2, len(original) - 1):  # truncated with the old checksum
        with open(file, "w", encoding="utf-8") as f:
            f.write(original[:n])
        assert _must_load_or_refuse(path) == "refused"
    with open(file, "wb") as f:
        f.write(original.encode()[:50] + b"\xff\xfe" + original.encode()[52:])
    assert _must_load_or_refuse(path) == "refused"
    assert outcomes["refused"] > len(cases) // 2, outcomes


# -- losses under to_static ---------------------------------------------------------------------
@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
def test_an_out_of_range_label_raises_under_to_static_as_it_does_eagerly(device, loss):
    F = fw.nn.functional
    x = fw.to_tensor(np.array([[0.1, 0.5, 0.2], [0.3, 0.3, 0.9]], np.float32), device=device)

    def fn(a, b):
        return F.cross_entropy(a, b) if loss == "cross_entropy" else F.nll_loss(F.log_softmax(a, axis=-1), b)

    static = fw.jit.to_static(fn)
    good = fw.to_tensor([1, 2], device=device)
    logp = np.log(np.exp(x.numpy()) / np.exp(x.numpy()).sum(-1, keepdims=True))
    want = -(logp[0, 1] + logp[1, 2]) / 2
    np.testing.assert_allclose(static(x, good).item(), want, rtol=1e-5)
    bad = fw.to_tensor([1, 7], device=device)
    with pytest.raises(fw.OpArgumentError, match=rf"\[{loss}\] a label is out of range for 3 classes"):
        fn(x, bad)
    # NOTE: a program's launches are asynchronous on opencl: the bounds check is read at the
    # next synchronisation (here .item()), as a device error is
    with pytest.raises(fw.OpArgumentError, match=r"index 7 .*out of range for axis 0 of size 3"):
        static(x, bad).item()
    np.testing.assert_allclose(static(x, good).item(), want, rtol=1e-5)  # the program still runs
