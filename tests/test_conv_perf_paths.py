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
@pytest.mark.parametrize("xs, ws, stride, padding, dilation, groups", CASES)
def test_conv2d_kernel_matches_paddle(xs, ws, stride, padding, dilation, groups):
    rng = np.random.default_rng(sum(xs) + sum(ws))
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    before = fw.op_path_stats().get("conv2d@cpu", {}).get("fused", 0)
    got = F.conv2d(fw.to_tensor(x), fw.to_tensor(w), None, stride, padding, dilation, groups).numpy()
    assert fw.op_path_stats()["conv2d@cpu"]["fused"] == before + 1  # the kernel ran, not im2col by slices
    want = paddle_conv(x, w, stride, padding, dilation, groups)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


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
