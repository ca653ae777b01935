"""The fast paths of an imported or saved CNN on cpu: the cpu plugin's ``conv2d`` kernel
(plugins/cpu/conv.c) against real Paddle over strides, padding, dilation and groups (and its
numpy path), and the pass folding a per-channel affine chain (an inference BatchNorm) into the
convolution before it (framework/ir/passes/conv_fold.py): same outputs, the chain gone."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework import testing

paddle = pytest.importorskip("paddle")

needs_kernel = pytest.mark.skipif(
    testing.find_kernel("conv2d", "cpu", "float32") is None,
    reason="no C compiler: the cpu plugin registers no conv2d kernel",
)

# (x shape, weight shape, stride, padding, dilation, groups)
CASES = [
    ((2, 3, 9, 8), (4, 3, 3, 3), 1, 1, 1, 1),
    ((2, 4, 10, 11), (6, 2, 3, 3), 2, 1, 1, 2),
    ((1, 4, 7, 7), (4, 1, 3, 3), 1, 2, 2, 4),  # depthwise, dilated
    ((3, 8, 6, 6), (16, 8, 1, 1), 1, 0, 1, 1),  # 1x1 read in place
    ((2, 8, 7, 6), (16, 8, 1, 1), 2, 0, 1, 1),  # strided projection
    ((1, 2, 5, 6), (3, 2, 2, 3), (1, 2), (0, 1), (2, 1), 1),
    ((2, 3, 8, 8), (5, 3, 3, 3), 1, [1, 0, 2, 1], 1, 1),  # asymmetric padding
    ((1, 6, 40, 40), (8, 6, 3, 3), 1, 1, 1, 1),  # several column blocks per image
    ((2, 4, 11, 9), (6, 4, 3, 3), (2, 1), (2, 0), (1, 3), 1),
    ((1, 3, 9, 9), (2, 3, 1, 1), 1, 1, 1, 1),  # a padded 1x1
]


def paddle_conv(x, w, stride, padding, dilation, groups):
    if isinstance(padding, list):
        padding = [[0, 0], [0, 0], padding[:2], padding[2:]]
    return paddle.nn.functional.conv2d(
        paddle.to_tensor(x),
        paddle.to_tensor(w),
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
    ).numpy()


@needs_kernel
@pytest.mark.parametrize("implicit", [True, False], ids=["implicit", "im2col"])
@pytest.mark.parametrize("xs, ws, stride, padding, dilation, groups", CASES)
def test_conv2d_kernel_matches_paddle(xs, ws, stride, padding, dilation, groups, implicit, monkeypatch):
    from plugins.cpu import conv

    monkeypatch.setattr(conv, "IMPLICIT", implicit)  # conv.c's two paths: in place, or im2col + BLAS
    rng = np.random.default_rng(sum(xs) + sum(ws))
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    before = fw.op_path_stats().get("conv2d@cpu", {}).get("fused", 0)
    got = F.conv2d(fw.to_tensor(x), fw.to_tensor(w), None, stride, padding, dilation, groups).numpy()
    assert fw.op_path_stats()["conv2d@cpu"]["fused"] == before + 1  # the kernel ran, not im2col by slices
    want = paddle_conv(x, w, stride, padding, dilation, groups)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


#: odd sizes for the register tiles: output channels per group not a multiple of the tile's rows,
#: widths not a multiple of its columns, stride 3, groups 3, a 5x5 dilated kernel
ODD = [
    ((2, 5, 13, 11), (7, 5, 3, 3), 1, 1, 1, 1),
    ((1, 9, 17, 19), (9, 3, 3, 3), 3, 2, 1, 3),
    ((3, 4, 15, 9), (13, 4, 5, 5), (1, 2), 3, 2, 1),
    ((1, 64, 8, 8), (64, 64, 3, 3), 1, 1, 1, 1),
]


@needs_kernel
@pytest.mark.parametrize(
    "tile",
    [(), ("-DCONV_VEC=64",), ("-DCONV_VEC=32", "-DCONV_MR=3", "-DCONV_NV=1")],
    ids=["avx2", "avx512", "3x1"],
)
@pytest.mark.parametrize("xs, ws, stride, padding, dilation, groups", CASES[:3] + CASES[5:9] + ODD)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv2d_register_tiles_match_paddle(
    xs, ws, stride, padding, dilation, groups, tile, dtype, monkeypatch
):
    from plugins.cpu import conv

    monkeypatch.setattr(conv, "TILE_OPTIONS", tile)  # conv.c's tiles: AVX2's (default), AVX-512's, odd
    rng = np.random.default_rng(sum(xs) + sum(ws))
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    before = fw.op_path_stats().get("conv2d@cpu", {}).get("fused", 0)
    got = F.conv2d(fw.to_tensor(x), fw.to_tensor(w), None, stride, padding, dilation, groups).numpy()
    assert fw.op_path_stats()["conv2d@cpu"]["fused"] == before + 1
    want = paddle_conv(x.astype(np.float32), w.astype(np.float32), stride, padding, dilation, groups)
    tol = 1e-4 if dtype == "float32" else 2e-5  # Paddle's cpu conv computes in float32 here
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    if dtype == "float64":  # and against float64 numpy, closely
        ref = conv._numpy_conv2d(x, w, _pair(stride), _pads(padding), _pair(dilation), groups)
        np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-11)


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _pads(p):
    if isinstance(p, list):
        return ((p[0], p[1]), (p[2], p[3]))
    a, b = _pair(p)
    return ((a, a), (b, b))


@needs_kernel
def test_conv2d_kernel_float64_strided_input_and_gradient():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6, 9, 9))
    w = rng.standard_normal((4, 3, 3, 3))
    xt = fw.to_tensor(x, stop_gradient=False)
    wt = fw.to_tensor(w, stop_gradient=False)
    view = xt.transpose((0, 1, 3, 2))  # not C-contiguous: the kernel copies it first
    y = F.conv2d(view, wt, stride=2, padding=1, groups=2)
    want = paddle_conv(np.swapaxes(x, 2, 3), w, 2, 1, 1, 2)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-10, atol=1e-10)
    gx, gw = fw.grad([y.sum()], [xt, wt])  # the gradient is the decomposition's
    px = paddle.to_tensor(np.swapaxes(x, 2, 3), stop_gradient=False)
    pw = paddle.to_tensor(w, stop_gradient=False)
    paddle.nn.functional.conv2d(px, pw, stride=2, padding=1, groups=2).sum().backward()
    np.testing.assert_allclose(gx.numpy(), np.swapaxes(px.grad.numpy(), 2, 3), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gw.numpy(), pw.grad.numpy(), rtol=1e-10, atol=1e-10)


@needs_kernel
def test_conv2d_numpy_path_without_the_c_kernel(monkeypatch):
    from plugins.cpu import conv

    monkeypatch.setattr(conv, "_program", lambda dtype: None)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 4, 7, 8)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 2)).astype(np.float32)
    got = F.conv2d(fw.to_tensor(x), fw.to_tensor(w), None, (2, 1), (1, 2), (1, 2), 2).numpy()
    np.testing.assert_allclose(got, paddle_conv(x, w, (2, 1), (1, 2), (1, 2), 2), rtol=1e-4, atol=1e-4)


# -- the conv_fold pass ---------------------------------------------------------------------
def _activation_ops(program, name):
    """The ops named ``name`` whose result is a batch of images (its batch dim symbolic, not a
    weight's or one value per channel)."""
    return [
        op
        for op in program.walk()
        if op.name == name
        and op.results
        and op.result.type.shape
        and not isinstance(op.result.type.shape[0], int)
    ]


@needs_kernel
def test_conv_fold_on_an_imported_resnet_matches_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from onnx_models import resnet

    model = resnet(image=16)
    x = np.random.default_rng(3).standard_normal((2, 3, 16, 16)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x}
    )[0]
    # compile=False: the pass is the compiler's business no more than the executor's (and the
    # test builds no generated kernels)
    # the inference level up to the fold (its conv_nchwc pass: tests/test_conv_fusion.py)
    from framework.ir.passes import LEVELS

    level = [name for name in LEVELS["inference"] if name != "conv_nchwc"]
    folded = fw.onnx.load(model, device="cpu", passes=level, compile=False)
    kept = fw.onnx.load(model, device="cpu", passes="O2", compile=False)
    with fw.no_grad():
        got = folded(fw.to_tensor(x)).numpy()
        ref = kept(fw.to_tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    p, q = folded.program(), kept.program()
    assert len(_activation_ops(p, "op.conv2d")) == len(_activation_ops(q, "op.conv2d")) == 9
    # each BatchNormalization was sub, mul, add over the images (and the pool one mul); folded,
    # one add per conv is left
    assert len(_activation_ops(q, "op.sub")) == 9 and len(_activation_ops(q, "op.mul")) == 10
    assert not _activation_ops(p, "op.sub") and len(_activation_ops(p, "op.mul")) == 1


def _conv_bn():
    fw.seed(0)
    net = fw.nn.Sequential(
        fw.nn.Conv2D(3, 8, 3, padding=1, bias_attr=True),
        fw.nn.BatchNorm2D(8),
        fw.nn.ReLU(),
        fw.nn.Conv2D(8, 4, 1),
    )
    bn = net[1]
    rng = np.random.default_rng(4)
    bn._mean.set_value(fw.to_tensor(rng.standard_normal(8).astype(np.float32)))
    bn._variance.set_value(fw.to_tensor((1 + rng.random(8)).astype(np.float32)))
    bn.weight.set_value(fw.to_tensor(rng.standard_normal(8).astype(np.float32)))
    net.eval()
    return net


@needs_kernel
def test_conv_fold_pass_on_an_eval_batchnorm(tmp_path, monkeypatch):
    monkeypatch.setenv("OARLOCK_COMPILE", "0")  # no generated kernels to build: the pass is apart
    net = _conv_bn()
    x = np.random.default_rng(5).standard_normal((2, 3, 10, 10)).astype(np.float32)
    with fw.no_grad():
        eager = net(fw.to_tensor(x)).numpy()
    static = fw.jit.to_static(net, input_spec=[fw.static.InputSpec([None, 3, 10, 10], "float32")])
    fw.jit.save(static, str(tmp_path / "m"))
    loaded = fw.jit.load(str(tmp_path / "m"))
    np.testing.assert_allclose(loaded(fw.to_tensor(x)).numpy(), eager, rtol=1e-4, atol=1e-5)

    from framework.ir import parse_program, passes

    prog = parse_program(str(loaded.program))
    before = len(list(prog.walk()))
    assert len(_activation_ops(prog, "op.sub")) == 1  # batch_norm: x - mean, ...
    _, stats = passes.optimize(prog, ["conv_fold", "dce"])
    assert stats[0].rewritten == 1
    assert not _activation_ops(prog, "op.sub") and not _activation_ops(prog, "op.mul")
    assert len(list(prog.walk())) != before


@needs_kernel
def test_conv_fold_leaves_a_chain_it_cannot_fold():
    from framework.ir import parse_program, passes

    text = (
        "module @f(%0: tensor<[2, 2, 4, 4], float32, cpu>, %1: tensor<[1, 3, 1, 1], float32, cpu>)"
        " -> (tensor<[2, 3, 4, 4], float32, cpu>, tensor<[2, 3, 4, 4], float32, cpu>) {\n"
        '  %2 = builtin.parameter {name = "w"} : tensor<[3, 2, 1, 1], float32, cpu>\n'
        "  %3 = op.conv2d(%0, %2) {dilation = (1, 1), groups = 1, padding = ((0, 0), (0, 0)), "
        "stride = (1, 1)} : tensor<[2, 3, 4, 4], float32, cpu>\n"
        "  %4 = op.mul(%3, %1) : tensor<[2, 3, 4, 4], float32, cpu>\n"  # a scale from an input
        "  %5 = op.conv2d(%0, %2) {dilation = (1, 1), groups = 1, padding = ((0, 0), (0, 0)), "
        "stride = (1, 1)} : tensor<[2, 3, 4, 4], float32, cpu>\n"
        '  %6 = builtin.parameter {name = "s"} : tensor<[1, 3, 1, 1], float32, cpu>\n'
        "  %7 = op.sub(%6, %5) : tensor<[2, 3, 4, 4], float32, cpu>\n"  # s - y
        "  builtin.return(%4, %7)\n"
        "}\n"
    )
    prog = parse_program(text)
    _, stats = passes.optimize(prog, ["conv_fold"])
    assert stats[0].rewritten == 0
    assert str(prog) == str(parse_program(text))


@needs_kernel
def test_relu_in_a_static_program_is_bound_once_and_right_on_every_run(monkeypatch):
    from plugins.cpu import conv

    made = []
    real = conv._relu_call
    monkeypatch.setattr(conv, "_relu_call", lambda x, y: made.append(x.shape) or real(x, y))

    @fw.jit.to_static
    def f(x, w):  # relu alone after the conv: with an element-wise op after it, it would fuse
        return F.relu(F.conv2d(x, w, padding=1))

    rng = np.random.default_rng(3)
    w = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    counts = []
    for _ in range(10):
        x = rng.standard_normal((2, 4, 9, 7)).astype(np.float32)
        x[0, 0, 0, :3] = [np.nan, -0.0, 0.0]
        got = f(fw.to_tensor(x), fw.to_tensor(w)).numpy()
        z = paddle_conv(x, w, 1, 1, 1, 1)
        want = np.where(np.isnan(z), z, np.maximum(z, 0))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)  # NaN stays NaN in both
        counts.append(len(made))
    # once the program replays its bound kernels (after its first runs), no new C call is made
    assert counts[0] >= 1 and counts[-1] == counts[5], counts
