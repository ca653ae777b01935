"""ONNX control flow in and out: If / Loop / Scan imported as cf.cond / cf.while (against
onnxruntime), and programs holding cf ops exported as If / Loop."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import framework as fw
from framework.static import InputSpec

from .conftest import DEVICES

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
#: where exported models are imported back: OpenCL where installed
BACK = next((d for d in DEVICES if d.startswith("opencl")), DEVICES[0])


def _ort(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(
        None, feed
    )


def _vi(name: str, t: int, shape: list) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, t, shape)


def _const(name: str, arr: np.ndarray) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name + "_v"))


def loop_then_if() -> onnx.ModelProto:
    """``y = x; repeat n times while sum(y) < lim: y = 1.5 y + x``, then ``2y if sum(y) > 10 else -y``:
    a run-time trip count and condition, a body and branches reading outer values."""
    body = helper.make_graph(
        [
            _const("k", np.array(1.5, np.float32)),
            helper.make_node("Mul", ["y_in", "k"], ["ky"]),
            helper.make_node("Add", ["ky", "x"], ["y_out"]),
            helper.make_node("ReduceSum", ["y_out"], ["s"], keepdims=0),
            helper.make_node("Less", ["s", "lim"], ["c_out"]),
        ],
        "body",
        [_vi("i", I64, []), _vi("c_in", B, []), _vi("y_in", F, [3])],
        [_vi("c_out", B, []), _vi("y_out", F, [3])],
    )
    then_g = helper.make_graph(
        [_const("two", np.array(2.0, np.float32)), helper.make_node("Mul", ["y", "two"], ["t_out"])],
        "then",
        [],
        [_vi("t_out", F, [3])],
    )
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["y"], ["e_out"])], "else", [], [_vi("e_out", F, [3])]
    )
    g = helper.make_graph(
        [
            _const("true", np.array(True)),
            helper.make_node("Loop", ["n", "true", "x"], ["y"], body=body),
            helper.make_node("ReduceSum", ["y"], ["sy"], keepdims=0),
            _const("ten", np.array(10.0, np.float32)),
            helper.make_node("Greater", ["sy", "ten"], ["p"]),
            helper.make_node("If", ["p"], ["out"], then_branch=then_g, else_branch=else_g),
        ],
        "loop_then_if",
        [_vi("x", F, [3]), _vi("n", I64, []), _vi("lim", F, [])],
        [_vi("out", F, [3])],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_loop_and_if_are_one_program_of_cf_ops(device: str) -> None:
    model = loop_then_if()
    m = fw.onnx.load(model, device=device, compile=False)
    text = str(m.program())
    assert "cf.while" in text and "cf.cond" in text
    x = np.array([0.5, -1.0, 2.0], np.float32)
    for n, lim in ((0, 1e9), (3, 1e9), (6, 20.0), (4, -5.0)):
        feed = {"x": x, "n": np.array(n, np.int64), "lim": np.array(lim, np.float32)}
        (want,) = _ort(model, feed)
        with fw.no_grad():
            got = m(*feed.values()).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert len(m._programs) == 1, "a run-time trip count does not specialise the program"
    eager = fw.onnx.load(model, device=device, static=False)
    feed = {"x": x, "n": np.array(5, np.int64), "lim": np.array(30.0, np.float32)}
    np.testing.assert_allclose(eager(*feed.values()).numpy(), _ort(model, feed)[0], rtol=1e-6)


@pytest.mark.parametrize("reverse", [0, 1])
def test_scan_along_axis_1_against_onnxruntime(reverse: int) -> None:
    """A running sum and product over axis 1 of ``x [2, 4, 3]``, forward or reversed, stacked on axis 1."""
    body = helper.make_graph(
        [
            helper.make_node("Add", ["s_in", "xt"], ["s_out"]),
            helper.make_node("Mul", ["p_in", "xt"], ["p_out"]),
            helper.make_node("Tanh", ["s_out"], ["z"]),
        ],
        "body",
        [_vi("s_in", F, [2, 3]), _vi("p_in", F, [2, 3]), _vi("xt", F, [2, 3])],
        [_vi("s_out", F, [2, 3]), _vi("p_out", F, [2, 3]), _vi("z", F, [2, 3])],
    )
    scan = helper.make_node(
        "Scan",
        ["s0", "p0", "x"],
        ["s", "p", "zs"],
        body=body,
        num_scan_inputs=1,
        scan_input_axes=[1],
        scan_input_directions=[reverse],
        scan_output_axes=[1],
        scan_output_directions=[reverse],
    )
    g = helper.make_graph(
        [scan],
        "scan",
        [_vi("s0", F, [2, 3]), _vi("p0", F, [2, 3]), _vi("x", F, [2, 4, 3])],
        [_vi("s", F, [2, 3]), _vi("p", F, [2, 3]), _vi("zs", F, [2, 4, 3])],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    rng = np.random.default_rng(reverse)
    feed = {
        k: rng.standard_normal(s).astype(np.float32)
        for k, s in (("s0", (2, 3)), ("p0", (2, 3)), ("x", (2, 4, 3)))
    }
    sess = fw.onnx.InferenceSession(model, compile=False)
    assert "cf.while" in str(sess.model.program())
    for got, want in zip(sess.run(None, feed), _ort(model, feed)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_loop_with_scan_outputs_needs_a_known_trip_count() -> None:
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]), helper.make_node("Cast", ["i"], ["z"], to=F)],
        "body",
        [_vi("i", I64, []), _vi("c_in", B, [])],
        [_vi("c_out", B, []), _vi("z", F, [])],
    )
    g = helper.make_graph(
        [
            helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
            helper.make_node("Cast", ["s"], ["n"], to=I64),
            _const("true", np.array(True)),
            helper.make_node("Loop", ["n", "true"], ["zs"], body=body),
        ],
        "g",
        [_vi("x", F, ["N"])],  # data of a dynamic size: not taken by value
        [_vi("zs", F, ["k"])],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(fw.onnx.OnnxImportError, match=r"Loop.*input 0 \('n'\) must be known"):
        fw.onnx.load(model)(fw.to_tensor([1.0, 2.0]))


def _recurrent(op: str, gates: int, **attrs) -> onnx.ModelProto:
    """A bidirectional ``op`` over ``x [T=4, B=3, I=5]`` with hidden size 6, run-time sequence
    lengths and initial states, biases (and LSTM's peepholes)."""
    t, b, i, h = 4, 3, 5, 6
    rng = np.random.default_rng(gates)
    w = numpy_helper.from_array((rng.standard_normal((2, gates * h, i)) * 0.5).astype(np.float32), "W")
    r = numpy_helper.from_array((rng.standard_normal((2, gates * h, h)) * 0.5).astype(np.float32), "R")
    bias = numpy_helper.from_array(rng.standard_normal((2, 2 * gates * h)).astype(np.float32), "B")
    inits = [w, r, bias]
    ins = ["x", "W", "R", "B", "lens", "h0"]
    outs = ["y", "yh"]
    if op == "LSTM":
        inits.append(numpy_helper.from_array(rng.standard_normal((2, 3 * h)).astype(np.float32), "P"))
        ins += ["c0", "P"]
        outs.append("yc")
    node = helper.make_node(op, ins, outs, hidden_size=h, direction="bidirectional", **attrs)
    state = [_vi("h0", F, [2, b, h])] + ([_vi("c0", F, [2, b, h])] if op == "LSTM" else [])
    g = helper.make_graph(
        [node],
        op.lower(),
        [_vi("x", F, [t, b, i]), _vi("lens", TensorProto.INT32, [b]), *state],
        [_vi("y", F, [t, 2, b, h])] + [_vi(o, F, [2, b, h]) for o in outs[1:]],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])


@pytest.mark.parametrize(
    "op,gates,attrs",
    [
        ("RNN", 1, {"activations": ["Relu", "Tanh"]}),
        ("GRU", 3, {"linear_before_reset": 1, "clip": 2.0}),
        ("GRU", 3, {}),
        ("LSTM", 4, {"clip": 3.0}),
    ],
    ids=["rnn", "gru-linear-before-reset", "gru", "lstm-peepholes"],
)
def test_recurrent_layers_against_onnxruntime(op: str, gates: int, attrs: dict) -> None:
    model = _recurrent(op, gates, **attrs)
    rng = np.random.default_rng(7)
    feed = {
        "x": rng.standard_normal((4, 3, 5)).astype(np.float32),
        "lens": np.array([4, 1, 3], np.int32),
        "h0": rng.standard_normal((2, 3, 6)).astype(np.float32),
    }
    if op == "LSTM":
        feed["c0"] = rng.standard_normal((2, 3, 6)).astype(np.float32)
    want = _ort(model, feed)
    got = fw.onnx.InferenceSession(model, compile=False).run(None, feed)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


# -- export -------------------------------------------------------------------------------------
def _branchy(x: fw.Tensor) -> fw.Tensor:
    if x.sum() > 0:  # a Python if on a tensor: to_static traces it into a cf.cond
        y = x * 2.0 + 1.0
    else:
        y = -x
    return y


def _looped(x: fw.Tensor, n: fw.Tensor) -> fw.Tensor:
    i = fw.zeros([], dtype="int64")

    def body(i: fw.Tensor, y: fw.Tensor) -> list[fw.Tensor]:
        z = fw.static.nn.cond(y.sum() > 20.0, lambda: y * 0.5, lambda: y * 1.5 + x)  # a cond in the loop
        return [i + 1, z]

    return fw.static.nn.while_loop(lambda i, y: i < n, body, [i, x])[1]


def test_control_flow_exports_as_if_and_loop(tmp_path) -> None:
    spec_x = InputSpec([None, 3], "float32", "x")
    fw.onnx.export(fw.jit.to_static(_branchy, input_spec=[spec_x]), tmp_path / "branchy", input_spec=[spec_x])
    specs = [InputSpec([3], "float32", "x"), InputSpec([], "int64", "n")]
    fw.onnx.export(fw.jit.to_static(_looped, input_spec=specs), tmp_path / "looped", input_spec=specs)
    branchy, looped = (onnx.load(tmp_path / f"{k}.onnx") for k in ("branchy", "looped"))
    assert [n.op_type for n in branchy.graph.node].count("If") == 1
    (loop,) = [n for n in looped.graph.node if n.op_type == "Loop"]
    assert any(n.op_type == "If" for n in loop.attribute[0].g.node), (
        "the cond inside the loop is an If in its body"
    )
    rng = np.random.default_rng(0)
    back = {
        k: fw.onnx.load(tmp_path / f"{k}.onnx", device=BACK, compile=False) for k in ("branchy", "looped")
    }
    for sign in (1.0, -1.0):  # both branches
        x = (sign * np.abs(rng.standard_normal((2, 3)))).astype(np.float32)
        want = _branchy(fw.to_tensor(x)).numpy()
        (got,) = _ort(branchy, {"x": x})
        np.testing.assert_allclose(got, want, rtol=1e-6)
        np.testing.assert_allclose(back["branchy"](x).numpy(), want, rtol=1e-6)
    x = np.array([1.0, -2.0, 3.0], np.float32)
    for n in (0, 1, 5):
        want = _looped(fw.to_tensor(x), fw.to_tensor(np.array(n))).numpy()
        (got,) = _ort(looped, {"x": x, "n": np.array(n)})
        np.testing.assert_allclose(got, want, rtol=1e-6)
        np.testing.assert_allclose(back["looped"](x, np.array(n)).numpy(), want, rtol=1e-6)
    assert "cf.while" in str(back["looped"].program())


def test_a_predicate_from_a_small_int_input_picks_its_branch_when_built() -> None:
    """silero-vad's form: ``If(sr == 16000)`` with branches of different shapes; the sample
    rate is taken by value, so each value has its program holding only its branch. Its
    convolution over a dynamic length with a kernel longer than the probe sizes makes the
    model trace per shape."""
    w = numpy_helper.from_array(np.linspace(-1, 1, 24, dtype=np.float32).reshape(1, 1, 24), "w")
    then_g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["t_out"], strides=[8])], "then", [], [_vi("t_out", F, None)]
    )
    else_g = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["e_out"], keepdims=0)], "else", [], [_vi("e_out", F, None)]
    )
    g = helper.make_graph(
        [
            _const("k16", np.array(16000, np.int64)),
            helper.make_node("Equal", ["sr", "k16"], ["is16"]),
            helper.make_node("If", ["is16"], ["out"], then_branch=then_g, else_branch=else_g),
        ],
        "vad_like",
        [_vi("x", F, [1, 1, "T"]), _vi("sr", I64, [])],
        [_vi("out", F, None)],
        [w],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m = fw.onnx.load(model, compile=False)
    assert m.value_inputs == ["sr"]
    x = np.random.default_rng(3).standard_normal((1, 1, 64)).astype(np.float32)
    for sr in (16000, 8000):
        feed = {"x": x, "sr": np.array(sr, np.int64)}
        # to_static traces the call's shape itself when the probe sizes fail (the conv's kernel
        # is longer than they are); the onnx layer's own per-shape fallback says it the other way
        per_shape = "traced for each input shape|one program per size"
        with pytest.warns(UserWarning, match=per_shape) if sr == 16000 else nullcontext():
            got = m(x, feed["sr"]).numpy()
        (want,) = _ort(model, feed)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    text = str(m.program(np.array(8000, np.int64)))
    assert "cf.cond" not in text and "op.sum" in text, "only the branch sr picks is in the program"
