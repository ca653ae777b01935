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


def _float_model(op: str, inputs: dict[str, np.ndarray], n_out: int = 1, out_dtypes=None, **attrs):
    m = _model(op, inputs, np.float32, n_out, **attrs)
    for o, dt in zip(m.graph.output, out_dtypes or [], strict=False):
        o.type.tensor_type.elem_type = _TYPES[np.dtype(dt).type]
    return m


@pytest.mark.parametrize(
    "attrs",
    [
        {"strides": [3, 2], "output_shape": [10, 8]},  # past the full result: zeros at the end
        {"strides": [3, 2], "output_shape": [8, 6]},  # a crop
        {"strides": [2, 2], "output_shape": [6, 5], "auto_pad": "SAME_UPPER"},
    ],
)
def test_conv_transpose_with_output_shape(device: str, attrs) -> None:
    rng = np.random.default_rng(4)
    feed = {
        "x": rng.standard_normal((1, 1, 3, 3)).astype(np.float32),
        "w": rng.standard_normal((1, 2, 3, 3)).astype(np.float32),
    }
    _check(_float_model("ConvTranspose", feed, **attrs), feed, device)


def test_conv_transpose_3d(device: str) -> None:
    rng = np.random.default_rng(5)
    feed = {
        "x": rng.standard_normal((1, 2, 3, 4, 3)).astype(np.float32),
        "w": rng.standard_normal((2, 3, 2, 3, 2)).astype(np.float32),
        "b": rng.standard_normal(3).astype(np.float32),
    }
    _check(
        _float_model("ConvTranspose", feed, strides=[2, 1, 2], pads=[1, 0, 0, 0, 1, 1]),
        feed,
        device,
        rtol=1e-4,
    )


_POOLS = [
    ("MaxPool", {"kernel_shape": [2, 2, 2]}),
    (
        "MaxPool",
        {"kernel_shape": [3, 3, 3], "strides": [2, 2, 2], "dilations": [1, 2, 1], "pads": [1, 1, 1, 1, 1, 1]},
    ),
    ("MaxPool", {"kernel_shape": [2, 2], "dilations": [2, 2], "ceil_mode": 1, "strides": [2, 2]}),
    ("AveragePool", {"kernel_shape": [2, 3, 2], "strides": [1, 2, 2], "pads": [0, 1, 1, 1, 0, 1]}),
    ("AveragePool", {"kernel_shape": [2, 2, 2], "pads": [1, 1, 1, 1, 1, 1], "count_include_pad": 1}),
    ("AveragePool", {"kernel_shape": [3, 3], "dilations": [2, 1], "strides": [2, 2], "ceil_mode": 1}),
    ("LpPool", {"kernel_shape": [3, 3], "p": 3, "strides": [2, 1], "pads": [1, 0, 1, 1]}),
    ("LpPool", {"kernel_shape": [2, 2, 2], "dilations": [1, 2, 1]}),
    ("LpPool", {"kernel_shape": [3], "auto_pad": "SAME_UPPER"}),
]


@pytest.mark.parametrize("op,attrs", _POOLS, ids=[f"{o}-{i}" for i, (o, _) in enumerate(_POOLS)])
def test_pooling_of_any_rank_and_dilation(device: str, op: str, attrs) -> None:
    rank = len(attrs["kernel_shape"])
    x = np.random.default_rng(6).standard_normal((2, 3, *[7, 6, 5][:rank])).astype(np.float32)
    _check(_float_model(op, {"x": x}, opset=19, **attrs), {"x": x}, device, rtol=1e-4)


@pytest.mark.parametrize("order", [0, 1])
def test_maxpool_indices(device: str, order: int) -> None:
    x = np.random.default_rng(7).standard_normal((2, 3, 6, 5)).astype(np.float32)
    m = _float_model(
        "MaxPool",
        {"x": x},
        2,
        [np.float32, np.int64],
        kernel_shape=[3, 2],
        strides=[2, 2],
        pads=[1, 0, 1, 1],
        storage_order=order,
    )
    _check(m, {"x": x}, device)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample(device: str, mode: str, pad: str, align: int) -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    grid = rng.uniform(-1.6, 1.6, (2, 6, 7, 2)).astype(np.float32)
    grid[0, 0, :4] = [[-1, -1], [1, 1], [0.25, -0.5], [-0.75, 0.75]]  # halves between pixels
    feed = {"x": x, "g": grid}
    _check(
        _model("GridSample", feed, opset=16, mode=mode, padding_mode=pad, align_corners=align),
        feed,
        device,
        rtol=1e-4,
    )


def _bool_or(m: onnx.ModelProto, name: str, elem: int) -> onnx.ModelProto:
    for vi in [*m.graph.input, *m.graph.output]:
        if vi.name == name:
            vi.type.tensor_type.elem_type = elem
    return m


def test_value_dependent_ops_of_inputs_given_by_value(device: str) -> None:
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((3, 4)) > 0).astype(np.float32)
    _check(_model("NonZero", {"x": x}, np.int64), {"x": x}, device)
    u = rng.integers(0, 4, (6, 2)).astype(np.float32)
    for attrs in ({"sorted": 1}, {"sorted": 0}, {"sorted": 1, "axis": 0}, {"sorted": 0, "axis": 0}):
        m = _model("Unique", {"x": u}, np.float32, 4, **attrs)
        for o in m.graph.output[1:]:
            o.type.tensor_type.elem_type = TensorProto.INT64
        _check(m, {"x": u}, device)
    data = rng.standard_normal((3, 5)).astype(np.float32)
    cond = np.array([1, 0, 1, 1], np.int64).astype(bool)
    for axis in (1, None):
        m = _bool_or(
            _model(
                "Compress",
                {"x": data, "c": cond.astype(np.int64)},
                **({} if axis is None else {"axis": axis}),
            ),
            "c",
            TensorProto.BOOL,
        )
        _check(m, {"x": data, "c": cond}, device)


@pytest.mark.parametrize("center", [0, 1])
def test_non_max_suppression(device: str, center: int) -> None:
    rng = np.random.default_rng(10)
    xy = rng.uniform(0, 4, (2, 12, 2))
    wh = rng.uniform(0.5, 3, (2, 12, 2))
    boxes = np.concatenate([xy, xy + wh], -1) if not center else np.concatenate([xy, wh], -1)
    feed = {
        "b": boxes.astype(np.float32),
        "s": rng.uniform(0, 1, (2, 3, 12)).astype(np.float32),
        "k": np.array([4], np.int64),
        "i": np.array([0.3], np.float32),
        "t": np.array([0.2], np.float32),
    }
    _check(_model("NonMaxSuppression", feed, np.int64, center_point_box=center), feed, device)


def test_value_dependent_op_of_a_run_time_value_names_the_op_and_why() -> None:
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("NonZero", ["r"], ["y0"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [100])],  # too large to take by value
        [helper.make_tensor_value_info("y0", TensorProto.INT64, None)],
    )
    sess = fw.onnx.InferenceSession(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]))
    with pytest.raises(fw.onnx.OnnxImportError, match=r"NonZero.*depends on the values of input 0 \('r'"):
        sess.run(None, {"x": np.linspace(-1, 1, 100, dtype=np.float32)})


def test_gather_nd_with_batch_dims(device: str) -> None:
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    for b, idx in ((1, rng.integers(0, 3, (2, 6, 2))), (2, rng.integers(0, 4, (2, 3, 2, 1)))):
        feed = {"x": x, "i": idx.astype(np.int64)}
        _check(_model("GatherND", feed, batch_dims=b), feed, device)


def test_batch_norm_in_training_mode() -> None:
    # ONNX Runtime's inference build does not take training_mode: onnx's reference evaluator
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(12)
    feed = {
        "x": rng.standard_normal((4, 3, 5, 2)).astype(np.float32),
        "s": rng.uniform(0.5, 1.5, 3).astype(np.float32),
        "b": rng.standard_normal(3).astype(np.float32),
        "m": rng.standard_normal(3).astype(np.float32),
        "v": rng.uniform(0.5, 2, 3).astype(np.float32),
    }
    m = _model("BatchNormalization", feed, n_out=3, opset=15, training_mode=1, momentum=0.8, epsilon=1e-3)
    want = ReferenceEvaluator(m).run(None, feed)
    got = fw.onnx.InferenceSession(m).run(None, feed)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_dropout_in_training_mode_with_ratio_zero_is_the_identity(device: str) -> None:
    x = np.random.default_rng(13).standard_normal((3, 4)).astype(np.float32)
    feed = {"x": x, "r": np.array(0.0, np.float32), "t": np.array(True)}
    m = _model("Dropout", {"x": x, "r": feed["r"]}, n_out=2)
    m.graph.node[0].input.append("t")
    m.graph.input.append(helper.make_tensor_value_info("t", TensorProto.BOOL, []))
    m.graph.output[1].type.tensor_type.elem_type = TensorProto.BOOL
    _check(m, feed, device)
    feed["r"] = np.array(0.5, np.float32)
    with pytest.raises(fw.onnx.OnnxImportError, match=r"Dropout.*training_mode=True with ratio 0.5"):
        fw.onnx.InferenceSession(m, device=device).run(None, feed)


@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_cubic_and_3d(device: str, pad: str, align: int) -> None:
    rng = np.random.default_rng(14)
    x = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    grid = rng.uniform(-1.4, 1.4, (2, 6, 7, 2)).astype(np.float32)
    feed = {"x": x, "g": grid}
    m = _model("GridSample", feed, opset=20, mode="cubic", padding_mode=pad, align_corners=align)
    if pad == "border":
        # ONNX Runtime's cubic border clamps differently from the spec's reference (up to 0.3
        # apart here); the backend cases follow the reference, so does Oarlock
        from onnx.reference import ReferenceEvaluator

        want = ReferenceEvaluator(m).run(None, feed)[0]
        got = fw.onnx.InferenceSession(m, device=device, compile=False).run(None, feed)[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    else:
        _check(m, feed, device, rtol=1e-4)
    x3 = rng.standard_normal((2, 2, 4, 3, 5)).astype(np.float32)
    grid3 = rng.uniform(-1.4, 1.4, (2, 3, 4, 2, 3)).astype(np.float32)
    feed3 = {"x": x3, "g": grid3}
    for mode in ("linear", "nearest"):
        m = _model("GridSample", feed3, opset=20, mode=mode, padding_mode=pad, align_corners=align)
        _check(m, feed3, device, rtol=1e-4)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("ctm", ["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"])
@pytest.mark.parametrize("exclude", [0, 1])
def test_resize_antialias(device: str, mode: str, ctm: str, exclude: int) -> None:
    x = np.random.default_rng(15).standard_normal((1, 2, 13, 11)).astype(np.float32)
    scales = helper.make_tensor("sc", TensorProto.FLOAT, [4], [1.0, 1.0, 0.37, 0.6])
    node = helper.make_node(
        "Resize",
        ["x", "", "sc"],
        ["y0"],
        mode=mode,
        antialias=1,
        coordinate_transformation_mode=ctm,
        exclude_outside=exclude,
    )
    g = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y0", TensorProto.FLOAT, None)],
        [scales],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    if ctm == "align_corners":
        # ONNX Runtime's antialiased align_corners differs from the spec's reference (by > 1
        # here); the backend cases follow the reference, so does Oarlock
        from onnx.reference import ReferenceEvaluator

        want = ReferenceEvaluator(m).run(None, {"x": x})[0]
        got = fw.onnx.InferenceSession(m, device=device, compile=False).run(None, {"x": x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    else:
        _check(m, {"x": x}, device, rtol=1e-4)
