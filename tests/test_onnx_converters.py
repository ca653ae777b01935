"""Converters of ONNX ops added or fixed for the backend node tests, each against ONNX Runtime
(one-node models built with ``onnx.helper``, run by both, outputs compared)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import framework as fw

_TYPES = {np.float32: TensorProto.FLOAT, np.int32: TensorProto.INT32, np.int64: TensorProto.INT64}
_TYPES.update({np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8, np.uint32: TensorProto.UINT32})


def _model(
    op: str, inputs: dict[str, np.ndarray], out_dtype=np.float32, n_out: int = 1, opset: int = 18, **attrs
):
    ins = [helper.make_tensor_value_info(k, _TYPES[v.dtype.type], list(v.shape)) for k, v in inputs.items()]
    outs = [
        helper.make_tensor_value_info(f"y{i}", _TYPES[np.dtype(out_dtype).type], None) for i in range(n_out)
    ]
    node = helper.make_node(op, list(inputs), [o.name for o in outs], **attrs)
    g = helper.make_graph([node], "g", ins, outs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _check(model: onnx.ModelProto, feed: dict[str, np.ndarray], device: str, rtol: float = 1e-5) -> None:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    want = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(
        None, feed
    )
    got = fw.onnx.InferenceSession(model, device=device, compile=False).run(None, feed)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-5)


@pytest.mark.parametrize("dt", [np.uint32, np.uint8])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bitshift(device: str, dt, direction: str) -> None:
    rng = np.random.default_rng(0)
    bits = np.dtype(dt).itemsize * 8
    x = rng.integers(0, 100, 16).astype(dt)
    s = rng.integers(0, bits, 16).astype(dt)
    _check(_model("BitShift", {"x": x, "s": s}, dt, direction=direction), {"x": x, "s": s}, device)


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bitshift_signed_and_out_of_range_amounts(direction: str) -> None:
    # ONNX Runtime takes unsigned types only: onnx's reference evaluator is the oracle here
    from onnx.reference import ReferenceEvaluator

    x = np.array([-8, 4, -1, 100, -128, 3], np.int8)
    s = np.array([-1, 9, 127, 7, 3, 0], np.int8)
    model = _model("BitShift", {"x": x, "s": s}, np.int8, direction=direction)
    want = ReferenceEvaluator(model).run(None, {"x": x, "s": s})[0]
    got = fw.onnx.InferenceSession(model).run(None, {"x": x, "s": s})[0]
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


@pytest.mark.parametrize("red", ["mul", "max", "min"])
def test_scatter_elements_reductions(device: str, red: str) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    idx = rng.integers(0, 4, (3, 5)).astype(np.int64)  # repeated positions
    upd = rng.standard_normal((3, 5)).astype(np.float32)
    feed = {"x": x, "i": idx, "u": upd}
    _check(_model("ScatterElements", feed, axis=0, reduction=red), feed, device)


@pytest.mark.parametrize("red", ["mul", "max", "min"])
def test_scatter_nd_reductions(device: str, red: str) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3, 2)).astype(np.float32)
    idx = np.array([[0], [2], [0], [3], [2]], np.int64)
    upd = rng.standard_normal((5, 3, 2)).astype(np.float32)
    feed = {"x": x, "i": idx, "u": upd}
    _check(_model("ScatterND", feed, reduction=red), feed, device)
    idx2 = np.array([[0, 1], [3, 2], [0, 1]], np.int64)  # element indices
    upd2 = rng.standard_normal((3, 2)).astype(np.float32)
    feed2 = {"x": x, "i": idx2, "u": upd2}
    _check(_model("ScatterND", feed2, reduction=red), feed2, device)


def test_pad_with_a_value_computed_at_run_time(device: str) -> None:
    x = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
    v = np.array(-2.5, np.float32)
    pads = helper.make_tensor("p", TensorProto.INT64, [4], [1, 0, 2, 3])
    nodes = [helper.make_node("Neg", ["v"], ["nv"]), helper.make_node("Pad", ["x", "p", "nv"], ["y0"])]
    g = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("v", TensorProto.FLOAT, []),
        ],
        [helper.make_tensor_value_info("y0", TensorProto.FLOAT, None)],
        [pads],
    )
    _check(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), {"x": x, "v": v}, device)
