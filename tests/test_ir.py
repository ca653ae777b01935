"""The program IR: use-def chains, the op dialect generated from the OpDefs, the text form
round trip, the verifier's reports and the executor against numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest

import framework as fw
from framework import ir
from framework.ir import Operation, Program, SymDim, TensorType

F32 = np.dtype("float32")


def _t(*shape: int | SymDim, dtype: np.dtype = F32) -> TensorType:
    return TensorType(tuple(shape), dtype, "cpu")


def _mlp_like() -> Program:
    p = Program("f")
    b = p.block
    s0 = SymDim.of("s0")
    x = b.add_argument(_t(s0, 4))
    w = b.append("builtin.parameter", [], [_t(4, 3)], {"name": "w"})
    h = b.append("op.matmul", [x, w], [_t(s0, 3)])
    c = b.append("builtin.constant", [], [_t(1, 1)], {"value": 0.5})
    y = b.append("op.mul", [h, c], [_t(s0, 3)])
    b.append("builtin.return", [y], [])
    return p


def test_use_def_chains_and_replace_all_uses():
    p = _mlp_like()
    x = p.inputs[0]
    mm = p.block.ops[1]
    assert x.uses == [(mm, 0)]
    neg = Operation("op.neg", [x], [x.type])
    p.block.insert_op(1, neg)
    x.replace_all_uses_with(neg.result, except_ops=(neg,))
    assert x.uses == [(neg, 0)] and mm.operands[0] is neg.result and (mm, 0) in neg.result.uses
    ir.verify(p)
    with pytest.raises(ir.IRError, match="still read by op.matmul"):
        neg.erase()


def test_op_dialect_is_generated_from_the_opdefs():
    from framework._src.ops.base import OPS

    table = ir.ops()
    for name, d in OPS.items():
        info = table["op." + name]
        assert info.opdef is d
        assert info.has("elementwise") == d.elementwise
        assert info.has("side_effect_free")
    assert ir.lookup("op.add").has("commutative") and not ir.lookup("op.sub").has("commutative")
    assert ir.lookup("builtin.return").has("terminator")
    with pytest.raises(ir.IRError, match="unknown operation 'op.nosuch'"):
        ir.lookup("op.nosuch")


def test_shape_inference_through_the_opdef():
    p = _mlp_like()
    mm = p.block.ops[1]
    assert ir.infer_shapes(mm, {"s0": 9}) == [((9, 3), F32)]


def test_text_round_trip():
    p = _mlp_like()
    text = ir.print_program(p)
    assert "module @f(%0: tensor<[s0, 4], float32, cpu>) -> (tensor<[s0, 3], float32, cpu>)" in text
    q = ir.parse_program(text)
    ir.verify(q)
    assert ir.print_program(q) == text


@pytest.mark.parametrize(
    "value",
    [
        0,
        -7,
        2**62,
        1.5,
        -0.0,
        1e-300,
        1e300,
        math.nan,
        math.inf,
        -math.inf,
        True,
        False,
        None,
        'a "quoted" \\ string\n',
        np.dtype("int64"),
        np.dtype("bool"),
        fw.bfloat16,
        (1, 2, 3),
        (),
        (4,),
        ((1, 2.5), ("x", False)),
        SymDim.make({"s0": 4}, -3),
        SymDim.make({"b": -1, "t": 2}),
        (SymDim.of("s0"), 784),
    ],
)
def test_attribute_values_round_trip(value):
    p = Program("g")
    x = p.block.add_argument(_t(2))
    y = p.block.append("op.neg", [x], [_t(2)], {"probe": value})
    p.block.append("builtin.return", [y], [])
    text = ir.print_program(p)
    q = ir.parse_program(text)
    got = q.block.ops[0].attrs["probe"]
    assert ir.print_program(q) == text
    if isinstance(value, float) and math.isnan(value):
        assert isinstance(got, float) and math.isnan(got)
    else:
        assert got == value and type(got) is type(value) or (isinstance(value, np.dtype) and got == value)
    if isinstance(value, float):
        assert math.copysign(1, got) == math.copysign(1, value)


def test_symbolic_dims_in_types_round_trip():
    d = SymDim.make({"batch": 4}, 1)
    p = Program("h")
    x = p.block.add_argument(_t(d, -1, SymDim.make({"batch": 1, "t": -1})))
    p.block.append("builtin.return", [x], [])
    q = ir.parse_program(ir.print_program(p))
    assert q.inputs[0].type.shape == (d, -1, SymDim.make({"batch": 1, "t": -1}))
    assert str(d) == "4*batch+1" and d.evaluate({"batch": 3}) == 13


@pytest.mark.parametrize(
    "text, where",
    [
        ("module @f() -> () {\n  builtin.return(%3)\n}\n", "line 2: operand %3"),
        (
            "module @f(%0: tensor<[2], float32, cpu>) -> (tensor<[2], float32, cpu>) {\n  %1 = op.neg(%0) : tensor<[2], float32, cpu>\n"
            "  %1 = op.neg(%0) : tensor<[2], float32, cpu>\n  builtin.return(%1)\n}\n",
            "line 3: value %1 is defined twice",
        ),
        (
            "module @f(%0: tensor<[2], float32, cpu>) -> (tensor<[2], float32, cpu>) {\n  %1 = op.neg(%0) {a = __import__} : tensor<[2], float32, cpu>\n"
            "  builtin.return(%1)\n}\n",
            "line 2, column 24: expected a dtype",
        ),
        (
            "module @f(%0: tensor<[2], float32, cpu>) -> (tensor<[2], float32, cpu>) {\n  %1 = op.neg(%0",
            "ends early",
        ),
        (
            "module @f(%0: tensor<[2], float32, cpu>) -> (tensor<[2], float32, cpu>) {\n  %1 = op.neg(%0) ; rm -rf\n}",
            "unexpected character ';'",
        ),
    ],
)
def test_parse_errors_name_the_line(text, where):
    with pytest.raises(ir.ParseError, match=where.replace("(", r"\(")):
        ir.parse_program(text)


def test_verifier_reports_broken_ssa_types_and_dangling_uses():
    # a type mismatch: matmul typed with the wrong result shape
    p = _mlp_like()
    p.block.ops[1].results[0].type = _t(SymDim.of("s0"), 5)
    with pytest.raises(
        ir.VerifyError,
        match=r"op #1 'op.matmul': result 0 is typed float32\[s0, 5\] but its operands give float32\[7, 3\] with s0 = 7",
    ):
        ir.verify(p)
    # use before definition
    p = Program("u")
    x = p.block.add_argument(_t(2))
    late = Operation("op.neg", [x], [_t(2)])
    early = Operation("op.exp", [late.result], [_t(2)])
    p.block.append_op(early)
    p.block.append_op(late)
    p.block.append("builtin.return", [early.result], [])
    with pytest.raises(
        ir.VerifyError, match=r"op #0 'op.exp': operand 0 is defined later \(use before definition\)"
    ):
        ir.verify(p)
    # a dangling use: the op defining a value was removed from the block behind the IR's back
    p = _mlp_like()
    c = p.block.ops[2]
    p.block.ops.remove(c)
    with pytest.raises(
        ir.VerifyError,
        match=r"op #2 'op.mul': operand 1 is defined by an op that is not in the program \(dangling\)",
    ):
        ir.verify(p)
    # a broken chain: an operand not in its value's use list
    p = _mlp_like()
    p.inputs[0].uses.clear()
    with pytest.raises(ir.VerifyError, match=r"op #1 'op.matmul': operand 0 is not in its value's use list"):
        ir.verify(p)
    # no terminator
    p = _mlp_like()
    p.block.ops[-1].erase()
    with pytest.raises(ir.VerifyError, match="does not end in builtin.return"):
        ir.verify(p)


def test_executor_runs_a_parsed_program_against_numpy(device):
    text = (
        "module @f(%0: tensor<[s0, 4], float32, cpu>, %1: tensor<[4], float32, cpu>) -> (tensor<[s0, 4], float32, cpu>, tensor<[s0], float32, cpu>) {\n"
        "  %2 = op.add(%0, %1) : tensor<[s0, 4], float32, cpu>\n"
        "  %3 = op.exp(%2) : tensor<[s0, 4], float32, cpu>\n"
        "  %4 = builtin.constant {value = 2.0} : tensor<[1, 1], float32, cpu>\n"
        "  %5 = op.mul(%3, %4) : tensor<[s0, 4], float32, cpu>\n"
        "  %6 = op.sum(%5) {axes = (1,), keepdim = false} : tensor<[s0], float32, cpu>\n"
        "  %7 = op.reshape(%5) {shape = (sym<s0>, 2, 2)} : tensor<[s0, 2, 2], float32, cpu>\n"
        "  %8 = op.reshape(%7) {shape = (sym<s0>, 4)} : tensor<[s0, 4], float32, cpu>\n"
        "  builtin.return(%8, %6)\n"
        "}\n"
    )
    p = ir.parse_program(text)
    ex = ir.Executor(p, device)
    rng = np.random.default_rng(0)
    for n in (3, 8):
        a = rng.standard_normal((n, 4)).astype(np.float32)
        b = rng.standard_normal(4).astype(np.float32)
        y, s = ex(fw.to_tensor(a, device=device), fw.to_tensor(b, device=device))
        want = np.exp(a + b) * 2
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-5)
        np.testing.assert_allclose(s.numpy(), want.sum(1), rtol=1e-5)
    y2, _ = ex(fw.to_tensor(a, device=device), fw.to_tensor(b, device=device))
    assert y2._block is not y._block  # outputs are fresh buffers each run
    with pytest.raises(fw.OpArgumentError, match=r"dim 1 of input 0 of @f is 5, expected 4"):
        ex(fw.zeros([2, 5], device=device), fw.zeros([4], device=device))


def test_executor_reuses_buffers_by_liveness():
    # a chain of 6 unary ops: live values never exceed two, so two buffers serve all five temporaries
    lines = ["module @chain(%0: tensor<[64], float32, cpu>) -> (tensor<[64], float32, cpu>) {"]
    for k in range(1, 7):
        lines.append(f"  %{k} = op.neg(%{k - 1}) : tensor<[64], float32, cpu>")
    lines += ["  builtin.return(%6)", "}", ""]
    ex = ir.Executor(ir.parse_program("\n".join(lines)), "cpu")
    stats = ex.memory_stats({})
    assert stats["unplanned"] == 5 * 64 * 4
    assert stats["planned"] == 2 * 64 * 4
    x = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(ex(fw.to_tensor(x))[0].numpy(), x)  # six negations
