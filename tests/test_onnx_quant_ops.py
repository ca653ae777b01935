"""ONNX import of the quantised integer ops (MatMulInteger, QLinearMatMul, ConvInteger,
QLinearConv, DynamicQuantizeLinear) on random models built with onnx.helper, against the ONNX
spec's numpy reference (onnx.reference) and onnxruntime; and fw.nn.quant.matmul_integer."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import framework as fw
from adapter_api import OpArgumentError
from framework.nn.quant import matmul_integer

_ONNX = {
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.float32): TensorProto.FLOAT,
}


def _cpu_has_vnni() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    return "avx512_vnni" in flags or "avx_vnni" in flags


#: onnxruntime's u8s8 / s8s8 GEMM on AVX2 without VNNI sums pairs of byte products with int16
#: saturation (vpmaddubsw), so it can differ from the spec's exact int32 sum (docs/onnx.md)
_ORT_EXACT_BYTES = _cpu_has_vnni()


def _model(op: str, feeds: dict, inits: dict, inputs: list, outputs: list, **attrs) -> onnx.ModelProto:
    node = helper.make_node(op, inputs, [o for o, _ in outputs], **attrs)
    g = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(k, _ONNX[v.dtype], v.shape) for k, v in feeds.items()],
        [helper.make_tensor_value_info(o, t, None) for o, t in outputs],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _run_all(model: onnx.ModelProto, feeds: dict) -> tuple[list, list, list]:
    ours = fw.onnx.InferenceSession(model.SerializeToString(), compile=False).run(None, feeds)
    ref = ReferenceEvaluator(model).run(None, feeds)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    rt = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(
        None, feeds
    )
    return ours, ref, rt


def _bytes(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dtype)


def _mid(rng, dtype, shape=()):
    """A zero point near the middle of the range, so the requantised values spread."""
    c = 128 if dtype == np.uint8 else 0
    return rng.integers(c - 8, c + 9, size=shape).astype(dtype)


@pytest.mark.parametrize("adt,bdt", [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)])
@pytest.mark.parametrize("per_axis", [False, True])
def test_matmul_integer_is_exact(adt, bdt, per_axis):
    rng = np.random.default_rng(0)
    a, b = _bytes(rng, adt, (2, 5, 37)), _bytes(rng, bdt, (37, 6))
    za = _bytes(rng, adt, (5,) if per_axis else ())
    zb = _bytes(rng, bdt, (6,) if per_axis else ())
    m = _model(
        "MatMulInteger",
        {"a": a},
        {"b": b, "za": za, "zb": zb},
        ["a", "b", "za", "zb"],
        [("y", TensorProto.INT32)],
    )
    want = (a.astype(np.int64) - (za[:, None] if per_axis else za)) @ (b.astype(np.int64) - zb)
    if per_axis:  # neither onnx.reference nor onnxruntime broadcasts a per-row a_zero_point: numpy only
        ours = fw.onnx.InferenceSession(m.SerializeToString(), compile=False).run(None, {"a": a})
    else:
        ours, ref, rt = _run_all(m, {"a": a})
        np.testing.assert_array_equal(ref[0], want)
        if _ORT_EXACT_BYTES or bdt == np.uint8:
            np.testing.assert_array_equal(rt[0], want)
    assert ours[0].dtype == np.int32
    np.testing.assert_array_equal(ours[0], want)


def test_matmul_integer_where_pairs_of_products_pass_int16():
    a = np.full((2, 64), 255, np.uint8)
    b = np.full((64, 3), 127, np.int8)  # each pair of products sums to 64770 > 32767
    m = _model("MatMulInteger", {"a": a}, {"b": b}, ["a", "b"], [("y", TensorProto.INT32)])
    ours, ref, rt = _run_all(m, {"a": a})
    np.testing.assert_array_equal(ours[0], np.full((2, 3), 64 * 255 * 127))
    np.testing.assert_array_equal(ref[0], ours[0])
    if _ORT_EXACT_BYTES:  # VNNI sums in int32; AVX2's vpmaddubsw saturates each pair at 32767
        np.testing.assert_array_equal(rt[0], ours[0])


@pytest.mark.parametrize("adt,bdt", [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)])
def test_qlinear_matmul_matches_reference(adt, bdt):
    rng = np.random.default_rng(2)
    a, b = _bytes(rng, adt, (4, 33)), _bytes(rng, bdt, (33, 5))
    inits = {
        "as": np.float32(0.02),
        "za": _mid(rng, adt),
        "b": b,
        "bs": np.float32(0.005),
        "zb": _mid(rng, bdt),
        "ys": np.float32(0.1),
        "zy": _mid(rng, adt),
    }
    m = _model(
        "QLinearMatMul",
        {"a": a},
        inits,
        ["a", "as", "za", "b", "bs", "zb", "ys", "zy"],
        [("y", _ONNX[np.dtype(adt)])],
    )
    ours, ref, rt = _run_all(m, {"a": a})
    assert ours[0].dtype == adt
    np.testing.assert_array_equal(ours[0], ref[0])
    if _ORT_EXACT_BYTES or bdt == np.uint8:  # it requantises in float32: one step apart on a tie at most
        assert np.abs(ours[0].astype(int) - rt[0].astype(int)).max() <= 1
    assert len(np.unique(ours[0])) > 5  # not saturated flat


def test_qlinear_matmul_per_row_and_column_scales():
    rng = np.random.default_rng(3)
    a, b = _bytes(rng, np.uint8, (4, 16)), _bytes(rng, np.int8, (16, 3))
    inits = {
        "as": rng.uniform(0.01, 0.03, 4).astype(np.float32),
        "za": _bytes(rng, np.uint8, ()),
        "b": b,
        "bs": rng.uniform(0.001, 0.01, 3).astype(np.float32),
        "zb": np.int8(0),
        "ys": np.float32(0.1),
        "zy": np.uint8(128),
    }
    m = _model(
        "QLinearMatMul",
        {"a": a},
        inits,
        ["a", "as", "za", "b", "bs", "zb", "ys", "zy"],
        [("y", TensorProto.UINT8)],
    )
    ours = fw.onnx.InferenceSession(m.SerializeToString(), compile=False).run(None, {"a": a})[0]
    acc = (a.astype(np.int64) - inits["za"]) @ b.astype(np.int64)
    mult = (inits["as"][:, None] * inits["bs"][None, :] / inits["ys"]).astype(np.float32)
    want = np.clip(np.rint(acc * mult.astype(np.float64)) + 128, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(ours, want)


@pytest.mark.parametrize("xdt,wdt", [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)])
@pytest.mark.parametrize(
    "attrs", [{}, {"pads": [1, 0, 2, 1], "strides": [2, 1]}, {"group": 2, "dilations": [1, 2]}]
)
def test_conv_integer_is_exact(xdt, wdt, attrs):
    rng = np.random.default_rng(4)
    g = attrs.get("group", 1)
    x, w = _bytes(rng, xdt, (2, 4, 7, 8)), _bytes(rng, wdt, (6, 4 // g, 3, 3))
    zx, zw = _bytes(rng, xdt, ()), _bytes(rng, wdt, ())
    m = _model(
        "ConvInteger",
        {"x": x},
        {"w": w, "zx": zx, "zw": zw},
        ["x", "w", "zx", "zw"],
        [("y", TensorProto.INT32)],
        **attrs,
    )
    ours, ref, rt = _run_all(m, {"x": x})
    assert ours[0].dtype == np.int32
    np.testing.assert_array_equal(ours[0], ref[0])
    if xdt == np.uint8 and wdt == np.uint8:  # onnxruntime's ConvInteger takes uint8 x uint8 exactly
        np.testing.assert_array_equal(ours[0], rt[0])


def test_conv_integer_same_upper_matches_onnxruntime():
    rng = np.random.default_rng(5)
    x, w = _bytes(rng, np.uint8, (1, 3, 6, 5)), _bytes(rng, np.uint8, (2, 3, 2, 3))
    zx, zw = np.uint8(7), np.uint8(130)
    m = _model(
        "ConvInteger",
        {"x": x},
        {"w": w, "zx": zx, "zw": zw},
        ["x", "w", "zx", "zw"],
        [("y", TensorProto.INT32)],
        auto_pad="SAME_UPPER",
        strides=[2, 2],
    )
    ours, ref, rt = _run_all(m, {"x": x})
    np.testing.assert_array_equal(ours[0], rt[0])
    np.testing.assert_array_equal(ours[0], ref[0])


@pytest.mark.parametrize("xdt,wdt", [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)])
@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinear_conv_matches_reference_and_onnxruntime(xdt, wdt, per_channel):
    rng = np.random.default_rng(6)
    x, w = _bytes(rng, xdt, (2, 3, 6, 6)), _bytes(rng, wdt, (4, 3, 3, 3))
    ws = rng.uniform(0.002, 0.01, 4).astype(np.float32) if per_channel else np.float32(0.004)
    inits = {
        "xs": np.float32(0.03),
        "zx": _mid(rng, xdt),
        "w": w,
        "ws": ws,
        "zw": np.zeros(4, wdt) if per_channel else _mid(rng, wdt) if wdt == np.uint8 else wdt(0),
        "ys": np.float32(0.6),
        "zy": _mid(rng, xdt),
        "B": rng.integers(-2000, 2000, 4).astype(np.int32),
    }
    m = _model(
        "QLinearConv",
        {"x": x},
        inits,
        ["x", "xs", "zx", "w", "ws", "zw", "ys", "zy", "B"],
        [("y", _ONNX[np.dtype(xdt)])],
        pads=[1, 1, 1, 1],
    )
    ours, ref, rt = _run_all(m, {"x": x})
    assert ours[0].dtype == xdt
    np.testing.assert_array_equal(ours[0], ref[0])
    if _ORT_EXACT_BYTES or wdt == np.uint8:
        assert np.abs(ours[0].astype(int) - rt[0].astype(int)).max() <= 1
    assert len(np.unique(ours[0])) > 5


@pytest.mark.parametrize("lo,hi", [(-3.0, 5.0), (0.5, 4.0), (-6.0, -1.0)])
def test_dynamic_quantize_linear(lo, hi):
    rng = np.random.default_rng(7)
    x = rng.uniform(lo, hi, (3, 17)).astype(np.float32)
    m = _model(
        "DynamicQuantizeLinear",
        {"x": x},
        {},
        ["x"],
        [("y", TensorProto.UINT8), ("s", TensorProto.FLOAT), ("z", TensorProto.UINT8)],
    )
    ours, ref, rt = _run_all(m, {"x": x})
    for o, r, t in zip(ours, ref, rt):
        assert o.dtype == r.dtype
        np.testing.assert_array_equal(o, r)
        np.testing.assert_array_equal(o, t)


def test_integer_ops_reject_float_operands():
    a = np.ones((2, 3), np.float32)
    m = _model(
        "MatMulInteger", {"a": a}, {"b": np.ones((3, 2), np.int8)}, ["a", "b"], [("y", TensorProto.INT32)]
    )
    with pytest.raises(Exception, match=r"MatMulInteger.*A must be int8 or uint8, got float32"):
        fw.onnx.InferenceSession(m.SerializeToString(), compile=False).run(None, {"a": a})


def test_matmul_integer_api_and_errors():
    a = fw.to_tensor(np.array([[200, 3], [0, 255]], np.uint8))
    b = fw.to_tensor(np.array([[-128, 5], [127, -1]], np.int8))
    got = matmul_integer(a, b, fw.to_tensor(np.uint8(100)), fw.to_tensor(np.array([1, -2], np.int8)))
    want = (np.array([[200, 3], [0, 255]]) - 100) @ (np.array([[-128, 5], [127, -1]]) - [1, -2])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(OpArgumentError, match=r"\[matmul_integer\] a must be int8 or uint8, got float32"):
        matmul_integer(fw.ones([2, 2]), b)
    with pytest.raises(
        OpArgumentError, match=r"\[matmul_integer\] b_zero_point must be one value or one per column"
    ):
        matmul_integer(a, b, None, fw.to_tensor(np.zeros(3, np.int8)))
    with pytest.raises(OpArgumentError, match=r"\[matmul_integer\] a's last dim"):
        matmul_integer(a, fw.to_tensor(np.zeros((3, 2), np.int8)))
