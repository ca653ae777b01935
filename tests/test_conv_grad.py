"""conv2d's own gradient rule (dx by conv2d_transpose, dW by unfold and one product per group)
against real Paddle's gradients, central finite differences and the gradient through the
decomposition (``framework.testing.gradient_by_decomposition``), over strides, padding
(symmetric, asymmetric, 'SAME'), dilation and groups, on every device the tests run on."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework import testing

from .conftest import DEVICES

paddle = pytest.importorskip("paddle")

# (x shape, weight shape, stride, padding, dilation, groups)
CASES = [
    ((2, 3, 9, 8), (4, 3, 3, 3), 1, 1, 1, 1),
    ((2, 4, 10, 11), (6, 2, 3, 3), 2, 1, 1, 2),  # strides skip the last row and column
    ((1, 4, 7, 7), (4, 1, 3, 3), 1, 2, 2, 4),  # depthwise, dilated
    ((2, 8, 7, 6), (6, 8, 1, 1), 2, 0, 1, 1),  # strided 1x1 projection
    ((1, 2, 5, 6), (3, 2, 2, 3), (1, 2), (0, 1), (2, 1), 1),
    ((2, 3, 8, 8), (5, 3, 3, 3), 1, [1, 0, 2, 1], 1, 1),  # asymmetric padding
    ((2, 4, 11, 9), (6, 2, 3, 3), (2, 1), [2, 1, 0, 3], (1, 3), 2),
    ((1, 6, 9, 9), (6, 3, 3, 2), (3, 2), "SAME", 1, 2),
    ((1, 2, 7, 8), (3, 2, 3, 3), 2, [[0, 0], [0, 0], [2, 0], [1, 2]], 1, 1),  # Paddle's pairs form
]


def _paddle_grads(xs, ws, gy, stride, padding, dilation, groups):
    if isinstance(padding, list) and not isinstance(padding[0], list):
        padding = [[0, 0], [0, 0], padding[:2], padding[2:]]
    x = paddle.to_tensor(xs, stop_gradient=False)
    w = paddle.to_tensor(ws, stop_gradient=False)
    y = paddle.nn.functional.conv2d(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
    gx, gw = paddle.grad([(y * paddle.to_tensor(gy)).sum()], [x, w])
    return y.numpy(), gx.numpy(), gw.numpy()


def _ours(xs, ws, gy, stride, padding, dilation, groups, device):
    x = fw.to_tensor(xs, place=device)
    w = fw.to_tensor(ws, place=device)
    x.stop_gradient = w.stop_gradient = False
    y = F.conv2d(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
    gx, gw = fw.grad([(y * fw.to_tensor(gy, place=device)).sum()], [x, w])
    return y.numpy(), gx.numpy(), gw.numpy()


def _data(xshape, wshape, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(xshape).astype(dtype), rng.standard_normal(wshape).astype(dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_gradient_rule_equals_paddle_and_the_decomposition(case, device):
    xshape, wshape, stride, padding, dilation, groups = case
    xs, ws = _data(xshape, wshape)
    y_pd, gx_pd, gw_pd = _paddle_grads(xs, ws, np.zeros(1, np.float32), stride, padding, dilation, groups)
    gy = np.random.default_rng(1).standard_normal(y_pd.shape).astype(np.float32)
    _, gx_pd, gw_pd = _paddle_grads(xs, ws, gy, stride, padding, dilation, groups)
    args = (xs, ws, gy, stride, padding, dilation, groups, device)
    y, gx, gw = _ours(*args)
    tol = testing.tolerance("float32", 8.0).kw
    testing.assert_close(y, y_pd, **tol, what="conv2d forward vs paddle")
    testing.assert_close(gx, gx_pd, **tol, what="conv2d dx (rule) vs paddle")
    testing.assert_close(gw, gw_pd, **tol, what="conv2d dW (rule) vs paddle")
    with testing.gradient_by_decomposition("conv2d"):
        _, gx_dec, gw_dec = _ours(*args)
    testing.assert_close(gx, gx_dec, **tol, what="conv2d dx: rule vs decomposition")
    testing.assert_close(gw, gw_dec, **tol, what="conv2d dW: rule vs decomposition")


@pytest.mark.parametrize("case", [CASES[1], CASES[2], CASES[6], CASES[7]], ids=["s2g2", "dw", "asym", "same"])
def test_gradient_rule_equals_finite_differences(case):
    xshape, wshape, stride, padding, dilation, groups = case
    xs, ws = _data(xshape, wshape, dtype=np.float64)

    def fn(a, b):
        return F.conv2d(
            fw.to_tensor(a), fw.to_tensor(b), stride=stride, padding=padding, dilation=dilation, groups=groups
        ).numpy()

    gy = np.random.default_rng(2).standard_normal(fn(xs, ws).shape)
    _, gx, gw = _ours(xs, ws, gy, stride, padding, dilation, groups, "cpu")
    tol = testing.gradient_tolerance("float64").kw
    testing.assert_close(gx, testing.finite_difference(fn, [xs, ws], 0, gy), **tol, what="dx vs fd")
    testing.assert_close(gw, testing.finite_difference(fn, [xs, ws], 1, gy), **tol, what="dW vs fd")


def test_second_order_through_the_rule_equals_finite_differences():
    """The rule is made of differentiable ops: d/dw of sum(dx * v), dx itself a gradient taken
    with create_graph, equals central differences of dx over w."""
    rng = np.random.default_rng(3)
    xs, ws = rng.standard_normal((1, 2, 6, 6)), rng.standard_normal((3, 2, 3, 3))
    v = np.cos(xs)

    def dx_of(a, b, create_graph=False):
        x, w = fw.to_tensor(a), fw.to_tensor(b)
        x.stop_gradient = w.stop_gradient = False
        y = F.conv2d(x, w, stride=2, padding=1)
        (gx,) = fw.grad([(y * y).sum()], [x], create_graph=create_graph)
        return (gx, w) if create_graph else gx.numpy()

    gx, w = dx_of(xs, ws, create_graph=True)
    (gw2,) = fw.grad([(gx * fw.to_tensor(v)).sum()], [w])
    want = testing.finite_difference(dx_of, [xs, ws], 1, v)
    testing.assert_close(gw2.numpy(), want, **testing.gradient_tolerance("float64").kw, what="d2/dw dx")


def test_the_rule_records_one_node_and_the_helper_restores_it():
    op = fw._src.ops.base.OPS["conv2d"]
    rule = op.grad
    with testing.gradient_by_decomposition("conv2d"):
        assert op.grad is not rule
    assert op.grad is rule
    with pytest.raises(fw.OarlockError, match=r"\[conv2d\] padding as pairs.*zero batch and channel"):
        F.conv2d(fw.ones([1, 2, 5, 5]), fw.ones([2, 2, 3, 3]), padding=[[1, 1], [0, 0], [1, 1], [1, 1]])
    with pytest.raises(ValueError, match="gradient_by_decomposition.*'add'.*primitive"):
        with testing.gradient_by_decomposition("add"):
            pass


# -- the cpu plugin's kernels of the gradient's ops (plugins/cpu/conv.c) ----------------------
needs_kernels = pytest.mark.skipif(
    testing.find_kernel("conv2d_transpose", "cpu", "float32") is None,
    reason="no C compiler: the cpu plugin registers no conv kernels",
)


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES[:7], ids=[str(i) for i in range(7)])  # int, pair or 4-int padding
def test_cpu_unfold_and_conv2d_transpose_kernels_equal_paddle(case, dtype):
    xshape, wshape, stride, padding, dilation, groups = case
    xs, ws = _data(xshape, wshape, dtype=dtype)
    pd_pad = [[0, 0], [0, 0], padding[:2], padding[2:]] if isinstance(padding, list) else padding
    tol = testing.tolerance(np.dtype(dtype).name, 8.0).kw
    assert testing.find_kernel("unfold", "cpu", np.dtype(dtype).name) is not None
    if groups == 1:
        upad = padding if not isinstance(padding, list) else [padding[0], padding[2], padding[1], padding[3]]
        got = F.unfold(fw.to_tensor(xs), wshape[2:], stride, upad, dilation).numpy()
        want = paddle.nn.functional.unfold(paddle.to_tensor(xs), list(wshape[2:]), stride, upad, dilation)
        testing.assert_close(got, want.numpy(), **tol, what="unfold kernel vs paddle")
    # conv2d_transpose of a conv2d-shaped output by the same weight (Paddle's layout)
    y = paddle.nn.functional.conv2d(
        paddle.to_tensor(xs),
        paddle.to_tensor(ws),
        stride=stride,
        padding=pd_pad,
        dilation=dilation,
        groups=groups,
    ).numpy()
    want = paddle.nn.functional.conv2d_transpose(
        paddle.to_tensor(y),
        paddle.to_tensor(ws),
        stride=stride,
        padding=pd_pad,
        dilation=dilation,
        groups=groups,
        output_size=list(xshape[2:]),
    ).numpy()

    def ours():
        return F.conv2d_transpose(
            fw.to_tensor(y),
            fw.to_tensor(ws),
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=groups,
            output_size=list(xshape[2:]),
        ).numpy()

    got = ours()
    testing.assert_close(got, want, **tol, what="conv2d_transpose kernel vs paddle")
    with testing.kernels_removed("conv2d_transpose", "unfold"):
        dec = ours()
    testing.assert_close(got, dec, **tol, what="conv2d_transpose kernel vs its decomposition")


@pytest.mark.parametrize("device", DEVICES)
def test_relu_values_and_gradient(device):
    xs = np.array([[-2.0, -0.0, 0.0, 1.5, np.nan, 3.0, -1e-30, 7.0]], np.float32).repeat(3, 0)
    x = fw.to_tensor(xs, place=device)
    x.stop_gradient = False
    y = F.relu(x)
    gy = np.arange(xs.size, dtype=np.float32).reshape(xs.shape) + 1
    (gx,) = fw.grad([(y * fw.to_tensor(gy, place=device)).sum()], [x])
    px = paddle.to_tensor(xs, stop_gradient=False)
    py = paddle.nn.functional.relu(px)
    (pgx,) = paddle.grad([(py * paddle.to_tensor(gy)).sum()], [px])
    finite = ~np.isnan(xs)
    testing.assert_close(y.numpy()[finite], py.numpy()[finite], rtol=0, atol=0, what="relu vs paddle")
    assert np.isnan(y.numpy()[~finite]).all()  # NaN stays NaN, as the decomposition (Paddle's cpu gives 0)
    want = np.where(xs > 0, gy, 0)
    want[np.isnan(xs)] = gy[np.isnan(xs)]  # NaN passes its gradient (the decomposition's where)
    testing.assert_close(gx.numpy(), want, rtol=0, atol=0, what="relu gradient")
    testing.assert_close(gx.numpy()[finite], pgx.numpy()[finite], rtol=0, atol=0, what="relu grad vs paddle")


@pytest.mark.parametrize("case", [CASES[1], CASES[6]], ids=["s2g2", "asym"])
def test_cpu_kernels_numpy_path_equals_the_c_path(case, monkeypatch):
    """Without the C entries (no compiler), the kernels' numpy arithmetic gives the same values."""
    from plugins.cpu import conv as cpu_conv

    xshape, wshape, stride, padding, dilation, groups = case
    xs, ws = _data(xshape, wshape, dtype=np.float64)
    gy = np.random.default_rng(4).standard_normal((1,)).astype(np.float64)

    def grads():
        y = F.conv2d(
            fw.to_tensor(xs),
            fw.to_tensor(ws),
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=groups,
        )
        g = np.cos(np.arange(y.size)).reshape(y.shape) * gy
        x_un = F.unfold(fw.to_tensor(xs), wshape[2:], stride, padding, dilation).numpy()
        return (
            *_ours(xs, ws, g, stride, padding, dilation, groups, "cpu")[1:],
            x_un,
            F.relu(fw.to_tensor(xs)).numpy(),
        )

    want = grads()
    monkeypatch.setattr(cpu_conv, "_entry", lambda dtype, entry: None)
    for got, w, what in zip(grads(), want, ["dx", "dW", "unfold", "relu"]):
        testing.assert_close(got, w, rtol=1e-12, atol=1e-12, what=f"numpy path {what}")


def test_relu_exports_to_onnx_as_relu(tmp_path):
    """With the cpu plugin's relu kernel the op stays whole in a program: it exports as Relu and
    onnxruntime computes what Oarlock does."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    fw.seed(0)
    m = fw.nn.Sequential(
        fw.nn.Conv2D(3, 4, 3, padding=1), fw.nn.ReLU(), fw.nn.Flatten(), fw.nn.Linear(144, 5)
    )
    m.eval()
    path = str(tmp_path / "m")
    fw.onnx.export(m, path, input_spec=[fw.static.InputSpec([None, 3, 6, 6], "float32")])
    model = onnx.load(path + ".onnx")
    assert "Relu" in {n.op_type for n in model.graph.node}
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32)
    got = ort.InferenceSession(path + ".onnx").run(None, {model.graph.input[0].name: x})[0]
    testing.assert_close(got, m(fw.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-5, what="onnxruntime vs oarlock")


def test_nhwc_padding_pairs_equal_paddle():
    xs, ws = _data((2, 7, 6, 3), (4, 3, 3, 3))
    pad = [[0, 0], [1, 2], [0, 1], [0, 0]]
    want = paddle.nn.functional.conv2d(
        paddle.to_tensor(xs), paddle.to_tensor(ws), stride=2, padding=pad, data_format="NHWC"
    ).numpy()
    got = F.conv2d(fw.to_tensor(xs), fw.to_tensor(ws), stride=2, padding=pad, data_format="NHWC").numpy()
    testing.assert_close(got, want, **testing.tolerance("float32", 8.0).kw, what="NHWC pairs vs paddle")
