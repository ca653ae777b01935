"""Convolutions with their epilogue fused, in the blocked layout NCHWc: the ops ``to_nchwc``,
``from_nchwc``, ``conv2d_nchwc`` and ``global_pool_nchwc`` (framework/_src/ops/composites/conv_fused.py), the cpu
plugin's kernels (plugins/cpu/conv_nchwc.c) against float64 numpy and the ops'
decompositions, and the ``conv_nchwc`` pass (framework/ir/passes/conv_fusion.py): each
rewrite on a program, and an imported ResNet-style model against onnxruntime and against the
unfused program."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import framework as fw
from conformance.tiers.composite_db.blocked import blocked as _blocked
from framework import testing
from framework._src.ops.base import OPS
from framework.incubate.nn import functional as IF
from framework.ir import Executor, parse_program, passes

sys.path.insert(0, str(Path(__file__).parent))

needs_kernel = pytest.mark.skipif(
    testing.find_kernel("conv2d_nchwc", "cpu", "float32") is None,
    reason="no C compiler: the cpu plugin registers no conv2d_nchwc kernel",
)
B = 16


def _conv64(x, w, stride, pad, dil):
    """float64 cross-correlation by loops over the kernel offsets (pad: ((t, b), (l, r)))."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), *pad))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh = (h - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dil[1] * (kw - 1) - 1) // stride[1] + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            win = x[
                :,
                :,
                i * dil[0] : i * dil[0] + stride[0] * (oh - 1) + 1 : stride[0],
                j * dil[1] : j * dil[1] + stride[1] * (ow - 1) + 1 : stride[1],
            ]
            y += np.einsum("nchw,oc->nohw", win, w[:, :, i, j].astype(np.float64))
    return y


# (x shape, weight shape, stride, padding ((t, b), (l, r)), dilation, blocked input, residual, relu)
CASES = [
    ((2, 3, 9, 11), (20, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), False, False, True),  # a first layer
    ((2, 20, 9, 11), (33, 20, 3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), True, False, False),  # partial blocks
    ((2, 16, 8, 8), (64, 16, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), True, True, True),  # 8x8: whole rows
    ((1, 32, 32, 32), (16, 32, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), True, True, True),  # wide rows
    ((2, 16, 16, 16), (32, 16, 1, 1), (2, 2), ((0, 0), (0, 0)), (1, 1), True, True, False),  # projection
    ((1, 16, 2, 2), (16, 16, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), True, False, True),  # all edges
    ((1, 16, 1, 7), (16, 16, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), True, False, True),  # one row
    ((1, 17, 12, 13), (18, 17, 3, 2), (2, 1), ((2, 0), (0, 3)), (2, 3), True, True, True),  # odd geometry
    ((2, 5, 10, 9), (16, 5, 5, 5), (1, 2), ((2, 2), (2, 2)), (1, 1), False, False, True),  # 2 outside a side
    (
        (2, 3, 13, 14),
        (32, 3, 7, 7),
        (2, 2),
        ((3, 3), (3, 3)),
        (1, 1),
        False,
        True,
        True,
    ),  # an RGB 7x7 s2 stem
]


@needs_kernel
@pytest.mark.parametrize("xs, ws, stride, pad, dil, blocked, residual, relu", CASES)
def test_conv2d_nchwc_kernel_matches_float64_and_the_decomposition(
    xs, ws, stride, pad, dil, blocked, residual, relu
):
    rng = np.random.default_rng(sum(xs) + sum(ws))
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    want = _conv64(x, w, stride, pad, dil) + b[None, :, None, None]
    r = None
    if residual:
        r = rng.standard_normal(want.shape).astype(np.float32)
        want = want + r
    if relu:
        want = np.maximum(want, 0)
    xt = IF.to_nchwc(fw.to_tensor(x)) if blocked else fw.to_tensor(x)
    rt = IF.to_nchwc(fw.to_tensor(r)) if residual else None
    args = (xt, fw.to_tensor(w), fw.to_tensor(b), rt)
    attrs = dict(stride=stride, padding=[pad[0][0], pad[0][1], pad[1][0], pad[1][1]], dilation=dil, relu=relu)
    got = IF.conv2d_nchwc(*args, **attrs, blocked_input=blocked).numpy()
    assert got.shape == _blocked(want).shape
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, _blocked(want), rtol=0, atol=2e-6 * scale * np.sqrt(np.prod(ws[1:])))
    # the padding channels stay zero, so a blocked value can feed the next conv as it is
    assert not got[:, -1, :, :, ws[0] % B or B :].any()
    dec = OPS["conv2d_nchwc"].decomposition  # what a plugin without the kernel runs
    ref = dec(*args, stride=stride, padding=pad, dilation=dil, relu=relu, blocked_input=blocked).numpy()
    np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6 * scale * np.sqrt(np.prod(ws[1:])))


@needs_kernel
def test_eight_float_vectors_match_float64(monkeypatch):
    """The build a CPU without AVX-512 gets (``NCHWC_VW=8``: a block of 16 channels is two
    vectors, other tile widths) gives the same values as float64 numpy."""
    from plugins.cpu import conv_nchwc

    monkeypatch.setattr(conv_nchwc, "OPTIONS", ("-DNCHWC_VW=8",))
    assert conv_nchwc._entry("conv_nchwc") is not None  # built: the kernel runs, not numpy
    for xs, ws, stride, pad, dil, blocked, residual, relu in (CASES[0], CASES[2], CASES[3], CASES[7]):
        rng = np.random.default_rng(sum(xs))
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal(ws).astype(np.float32)
        b = rng.standard_normal(ws[0]).astype(np.float32)
        want = _conv64(x, w, stride, pad, dil) + b[None, :, None, None]
        r = rng.standard_normal(want.shape).astype(np.float32) if residual else None
        want = np.maximum(want + (0 if r is None else r), 0) if relu else want + (0 if r is None else r)
        xt = IF.to_nchwc(fw.to_tensor(x)) if blocked else fw.to_tensor(x)
        rt = IF.to_nchwc(fw.to_tensor(r)) if residual else None
        padding = [pad[0][0], pad[0][1], pad[1][0], pad[1][1]]
        got = IF.conv2d_nchwc(
            xt,
            fw.to_tensor(w),
            fw.to_tensor(b),
            rt,
            stride=stride,
            padding=padding,
            dilation=dil,
            relu=relu,
            blocked_input=blocked,
        ).numpy()
        tol = 2e-6 * np.abs(want).max() * np.sqrt(np.prod(ws[1:]))
        np.testing.assert_allclose(got, _blocked(want), rtol=0, atol=tol, err_msg=str((xs, ws)))


@needs_kernel
@pytest.mark.parametrize("case", [CASES[0], CASES[2], CASES[7]])
def test_weight_scale_is_multiplied_in_once_with_the_residual_after_it(case):
    """``weight_scale`` (a folded BatchNorm's scale): the weight is ``w * s`` per output channel,
    rounded once as that float32 product; the operands are (x, w, b, s, r)."""
    xs, ws, stride, pad, dil, blocked, residual, relu = case
    rng = np.random.default_rng(sum(ws))
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    sc = rng.uniform(0.5, 2.0, ws[0]).astype(np.float32)
    want = _conv64(x, w * sc[:, None, None, None], stride, pad, dil) + b[None, :, None, None]
    r = rng.standard_normal(want.shape).astype(np.float32) if residual else None
    want = want + (0 if r is None else r)
    want = np.maximum(want, 0) if relu else want
    xt = IF.to_nchwc(fw.to_tensor(x)) if blocked else fw.to_tensor(x)
    rt = IF.to_nchwc(fw.to_tensor(r)) if residual else None
    args = (xt, fw.to_tensor(w), fw.to_tensor(b), rt)
    padding = [pad[0][0], pad[0][1], pad[1][0], pad[1][1]]
    kw = dict(stride=stride, padding=padding, dilation=dil, relu=relu, blocked_input=blocked)
    got = IF.conv2d_nchwc(*args, weight_scale=fw.to_tensor(sc), **kw).numpy()
    tol = 2e-6 * np.abs(want).max() * np.sqrt(np.prod(ws[1:]))
    np.testing.assert_allclose(got, _blocked(want), rtol=0, atol=tol)
    # the same bits as the product made first (the kernel packs w * s as the mul rounds it)
    pre = IF.conv2d_nchwc(xt, fw.to_tensor(w * sc[:, None, None, None]), fw.to_tensor(b), rt, **kw).numpy()
    np.testing.assert_array_equal(got, pre)
    operands = [xt, args[1], args[2], fw.to_tensor(sc)] + ([rt] if residual else [])
    dec = OPS["conv2d_nchwc"].decomposition(
        *operands,
        stride=stride,
        padding=pad,
        dilation=dil,
        relu=relu,
        blocked_input=blocked,
        weight_scale=True,
    )
    np.testing.assert_allclose(got, dec.numpy(), rtol=0, atol=tol)


@needs_kernel
def test_relu_epilogue_keeps_nan_and_zeroes_negative_zero():
    x = np.zeros((1, 1, 1, 3), np.float32)
    w = np.zeros((2, 1, 1, 1), np.float32)
    b = np.array([np.nan, -0.0], np.float32)
    y = IF.from_nchwc(
        IF.conv2d_nchwc(fw.to_tensor(x), fw.to_tensor(w), fw.to_tensor(b), relu=True, blocked_input=False), 2
    )
    got = y.numpy()
    assert np.isnan(got[0, 0]).all()
    assert (got[0, 1] == 0).all() and not np.signbit(got[0, 1]).any()  # relu(-0.0) is +0.0, as fw.relu


@pytest.mark.parametrize("c", [1, 16, 19, 40])
def test_layout_round_trip_and_padding_channels(c):
    x = np.random.default_rng(c).standard_normal((2, c, 3, 5)).astype(np.float32)
    blk = IF.to_nchwc(fw.to_tensor(x))
    np.testing.assert_array_equal(blk.numpy(), _blocked(x))
    np.testing.assert_array_equal(IF.from_nchwc(blk, c).numpy(), x)
    x64 = x.astype(np.float64)  # float64: no kernel, the decompositions
    np.testing.assert_array_equal(IF.from_nchwc(IF.to_nchwc(fw.to_tensor(x64)), c).numpy(), x64)


@pytest.mark.parametrize("c, hw", [(16, (8, 8)), (19, (3, 5)), (40, (1, 1)), (33, (7, 2))])
def test_global_pool_nchwc_sum_and_max_match_float64(c, hw):
    rng = np.random.default_rng(c)
    x = rng.standard_normal((3, c, *hw)).astype(np.float32)
    x[1, c - 1, 0, -1] = np.nan  # the max keeps a NaN (numpy's max); the sum too
    blk = IF.to_nchwc(fw.to_tensor(x))
    x64 = x.astype(np.float64)
    for reduce, ref in (("sum", x64.sum(axis=(2, 3))), ("max", x64.max(axis=(2, 3)))):
        for keepdim in (True, False):
            got = IF.global_pool_nchwc(blk, c, reduce=reduce, keepdim=keepdim).numpy()
            want = ref[:, :, None, None] if keepdim else ref
            assert got.shape == want.shape and got.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * hw[0] * hw[1], err_msg=reduce)
            dec = OPS["global_pool_nchwc"].decomposition(blk, channels=c, reduce=reduce, keepdim=keepdim)
            np.testing.assert_allclose(got, dec.numpy(), rtol=1e-6, atol=1e-6 * hw[0] * hw[1])
    assert np.isnan(IF.global_pool_nchwc(blk, c, "max").numpy()[1, c - 1]).all()


def test_bad_arguments_name_the_op_and_the_argument():
    x, w, b = fw.ones([1, 16, 4, 4]), fw.ones([8, 16, 3, 3]), fw.ones([8])
    with pytest.raises(fw.OpArgumentError, match=r"\[conv2d_nchwc\] x must be \(N, 1, H, W, 16\)"):
        IF.conv2d_nchwc(x, w, b)
    with pytest.raises(fw.OpArgumentError, match=r"\[conv2d_nchwc\] bias must have shape \(8,\)"):
        IF.conv2d_nchwc(x, w, fw.ones([16]), blocked_input=False)
    with pytest.raises(
        fw.OpArgumentError, match=r"\[conv2d_nchwc\] residual must have the output's blocked shape"
    ):
        IF.conv2d_nchwc(x, w, b, residual=fw.ones([1, 8, 4, 4]), padding=1, blocked_input=False)
    with pytest.raises(fw.OpArgumentError, match=r"\[conv2d_nchwc\] weight_scale must have shape \(8,\)"):
        IF.conv2d_nchwc(x, w, b, weight_scale=fw.ones([8, 1, 1, 1]), blocked_input=False)
    with pytest.raises(fw.OpArgumentError, match=r"\[from_nchwc\] channels must be an int in \[1, 16\]"):
        IF.from_nchwc(IF.to_nchwc(x), 17)
    with pytest.raises(fw.OpArgumentError, match=r"\[to_nchwc\] x must be 4-d"):
        IF.to_nchwc(fw.ones([2, 3]))
    with pytest.raises(
        fw.OpArgumentError, match=r"\[global_pool_nchwc\] reduce must be one of \('sum', 'max'\)"
    ):
        IF.global_pool_nchwc(IF.to_nchwc(x), 16, reduce="mean")
    with pytest.raises(fw.OpArgumentError, match=r"\[global_pool_nchwc\] x must be 5-d"):
        IF.global_pool_nchwc(x, 16)


def _max_pool64(x, k, s, pad):
    """float64 max pool by loops over the windows' pixels (pad: ((t, b), (l, r)), never taken)."""
    n, c, h, w = x.shape
    oh = (h + sum(pad[0]) - k[0]) // s[0] + 1
    ow = (w + sum(pad[1]) - k[1]) // s[1] + 1
    y = np.empty((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            y0, x0 = i * s[0] - pad[0][0], j * s[1] - pad[1][0]
            win = x[:, :, max(y0, 0) : y0 + k[0], max(x0, 0) : x0 + k[1]].astype(np.float64)
            y[:, :, i, j] = win.max(axis=(2, 3))
    return y


@pytest.mark.parametrize(
    "shape, k, s, pad",
    [
        ((2, 64, 16, 16), (3, 3), (2, 2), ((1, 1), (1, 1))),  # ResNet's pool after the stem
        ((1, 20, 9, 11), (3, 3), (2, 2), ((1, 1), (1, 1))),  # partial block, odd sizes
        ((2, 17, 7, 6), (2, 3), (1, 2), ((1, 0), (0, 2))),  # uneven padding
        ((1, 16, 1, 1), (1, 1), (1, 1), ((0, 0), (0, 0))),
    ],
)
@pytest.mark.parametrize("c_kernel", [True, False])
def test_max_pool2d_nchwc_matches_float64_and_the_decomposition(shape, k, s, pad, c_kernel, monkeypatch):
    """The C kernel, and without it (no compiler) the plugin's numpy arithmetic."""
    from plugins.cpu import conv_nchwc

    asked = []
    if not c_kernel:
        monkeypatch.setattr(conv_nchwc, "max_pool2d_nchwc_call", lambda *a: asked.append(a) and None)
    elif conv_nchwc._entry("maxpool_nchwc") is None:
        pytest.skip("no C compiler")
    rng = np.random.default_rng(11)
    x = rng.standard_normal(shape).astype(np.float32)
    x.flat[5] = np.nan  # kept, as numpy's max
    xb = IF.to_nchwc(fw.to_tensor(x))
    got = IF.max_pool2d_nchwc(xb, shape[1], k, stride=s, padding=pad).numpy()
    want = _max_pool64(x, k, s, pad)
    np.testing.assert_array_equal(got, _blocked(want.astype(np.float32)))
    attrs = {"channels": shape[1], "kernel_size": k, "stride": s, "padding": pad}
    dec = OPS["max_pool2d_nchwc"].decomposition(xb, **attrs).numpy()
    np.testing.assert_array_equal(got, dec)
    assert len(asked) == (0 if c_kernel else 1)  # the kernel asked for its C call, and had none


def test_max_pool2d_nchwc_bad_arguments_name_the_op_and_the_argument():
    xb = IF.to_nchwc(fw.ones([1, 16, 4, 4]))
    with pytest.raises(fw.OpArgumentError, match=r"\[max_pool2d_nchwc\] x must be 5-d"):
        IF.max_pool2d_nchwc(fw.ones([1, 16, 4, 4]), 16, 3)
    with pytest.raises(
        fw.OpArgumentError, match=r"\[max_pool2d_nchwc\] channels must be an int in \[1, 16\]"
    ):
        IF.max_pool2d_nchwc(xb, 17, 3)
    with pytest.raises(
        fw.OpArgumentError, match=r"\[max_pool2d_nchwc\] padding must be in \[0, kernel_size\)"
    ):
        IF.max_pool2d_nchwc(xb, 16, 3, padding=3)
    with pytest.raises(fw.OpArgumentError, match=r"\[max_pool2d_nchwc\] stride must be at least 1"):
        IF.max_pool2d_nchwc(xb, 16, 3, stride=0)


# -- the pass, rewrite by rewrite ---------------------------------------------------------------
def _prog(body: str, ins: str, outs: str) -> object:
    return parse_program(f"module @f({ins}) -> ({outs}) {{\n{body}}}\n")


T16 = "tensor<[1, 16, 4, 4], float32, cpu>"
CONV = "op.conv2d({x}, {w}) {{dilation = (1, 1), groups = {g}, padding = ((1, 1), (1, 1)), stride = (1, 1)}}"


def _names(p) -> list[str]:
    return [op.name for op in p.block.ops if op.name.startswith("op.")]


@needs_kernel
def test_pass_fuses_bias_residual_and_relu_and_chains_blocked_values():
    body = (
        f'  %1 = builtin.parameter {{name = "w1"}} : tensor<[16, 16, 3, 3], float32, cpu>\n'
        f'  %2 = builtin.parameter {{name = "b1"}} : tensor<[1, 16, 1, 1], float32, cpu>\n'
        f"  %3 = {CONV.format(x='%0', w='%1', g=1)} : {T16}\n"
        f"  %4 = op.add(%3, %2) : {T16}\n"
        f"  %5 = op.relu(%4) : {T16}\n"
        f"  %6 = {CONV.format(x='%5', w='%1', g=1)} : {T16}\n"
        f"  %7 = op.add(%2, %6) : {T16}\n"  # the bias on the left
        f"  %8 = op.add(%7, %5) : {T16}\n"  # a residual: the first block's output
        f"  %9 = op.relu(%8) : {T16}\n"
        f"  %10 = op.exp(%9) : {T16}\n"
        "  builtin.return(%10)\n"
    )
    p = _prog(body, f"%0: {T16}", T16)
    x = np.random.default_rng(0).standard_normal((1, 16, 4, 4)).astype(np.float32)
    params = {
        "w1": fw.to_tensor(np.random.default_rng(1).standard_normal((16, 16, 3, 3)).astype(np.float32) / 12),
        "b1": fw.to_tensor(np.random.default_rng(2).standard_normal((1, 16, 1, 1)).astype(np.float32)),
    }
    want = Executor(p, "cpu", params)(fw.to_tensor(x))[0].numpy()
    _, stats = passes.optimize(p, ["conv_nchwc", "dce"])
    assert (
        stats[0].rewritten == 4
    )  # two epilogues, the second conv's blocked input, the residual's round trip
    assert _names(p).count("op.conv2d_nchwc") == 2
    assert "op.conv2d" not in _names(p) and "op.relu" not in _names(p) and "op.add" not in _names(p)
    assert _names(p).count("op.from_nchwc") == 1 and "op.to_nchwc" not in _names(p)  # only at the edge
    convs = [op for op in p.block.ops if op.name == "op.conv2d_nchwc"]
    assert [op.attrs["blocked_input"] for op in convs] == [False, True]
    assert [op.attrs["relu"] for op in convs] == [True, True]
    assert len(convs[0].operands) == 3 and convs[1].operands[3] is convs[0].result  # the residual, blocked
    got = Executor(p, "cpu", params)(fw.to_tensor(x))[0].numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@needs_kernel
@pytest.mark.parametrize(
    "what, body",
    [
        ("two groups", f"  %3 = {CONV.format(x='%0', w='%1', g=2)} : {T16}\n  %4 = op.add(%3, %2) : {T16}\n"),
        ("no bias", f"  %3 = {CONV.format(x='%0', w='%1', g=1)} : {T16}\n  %4 = op.relu(%3) : {T16}\n"),
        (
            "the conv's value read twice",
            f"  %3 = {CONV.format(x='%0', w='%1', g=1)} : {T16}\n  %5 = op.add(%3, %2) : {T16}\n"
            f"  %4 = op.add(%5, %3) : {T16}\n",
        ),
    ],
)
def test_pass_leaves_what_it_cannot_fuse(what, body):
    w = (
        "tensor<[16, 8, 3, 3], float32, cpu>"
        if what == "two groups"
        else "tensor<[16, 16, 3, 3], float32, cpu>"
    )
    text = (
        f'  %1 = builtin.parameter {{name = "w"}} : {w}\n'
        f'  %2 = builtin.parameter {{name = "b"}} : tensor<[1, 16, 1, 1], float32, cpu>\n'
        + body
        + "  builtin.return(%4)\n"
    )
    p = _prog(text, f"%0: {T16}", T16)
    before = _names(p)
    _, stats = passes.optimize(p, ["conv_nchwc"])
    assert stats[0].rewritten == 0 and _names(p) == before, what


def test_pass_leaves_float64_alone():
    t = "tensor<[1, 16, 4, 4], float64, cpu>"
    text = (
        '  %1 = builtin.parameter {name = "w"} : tensor<[16, 16, 3, 3], float64, cpu>\n'
        '  %2 = builtin.parameter {name = "b"} : tensor<[1, 16, 1, 1], float64, cpu>\n'
        f"  %3 = {CONV.format(x='%0', w='%1', g=1)} : {t}\n  %4 = op.add(%3, %2) : {t}\n  builtin.return(%4)\n"
    )
    p = _prog(text, f"%0: {t}", t)
    _, stats = passes.optimize(p, ["conv_nchwc"])
    assert stats[0].rewritten == 0


# -- an imported model --------------------------------------------------------------------------
def _ops(program, name):
    return [op for op in program.walk() if op.name == name]


@needs_kernel
@pytest.mark.parametrize("compile", [False, True])
def test_imported_resnet_fused_matches_onnxruntime_and_the_unfused_program(compile):
    ort = pytest.importorskip("onnxruntime")
    from onnx_models import resnet

    model = resnet(image=16)
    x = np.random.default_rng(3).standard_normal((3, 3, 16, 16)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x}
    )[0]
    fused = fw.onnx.load(model, device="cpu", passes="inference", compile=compile)
    # the unfused reference: O2 without the compiler (the compiled O2 program has a fusion bug
    # of its own at this size: docs/benchmarks.md, "Issue 41")
    plain = fw.onnx.load(model, device="cpu", passes="O2", compile=False)
    with fw.no_grad():
        got = fused(fw.to_tensor(x)).numpy()
        ref = plain(fw.to_tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    p = fused.program()
    assert len(_ops(p, "op.conv2d_nchwc")) == 9 and not _ops(p, "op.conv2d")
    assert not _ops(p, "op.relu") and not _ops(p, "op.to_nchwc")
    assert not _ops(p, "op.from_nchwc")  # the pooling reads the blocked value: no exit left
    (pool,) = _ops(p, "op.global_pool_nchwc")
    assert pool.attrs == {"channels": 64, "reduce": "sum", "keepdim": True}
    # the unfused program keeps its convs; O2 never rewrites to the blocked layout
    assert len(_ops(plain.program(), "op.conv2d")) == 9 and not _ops(plain.program(), "op.conv2d_nchwc")


@needs_kernel
def test_training_programs_keep_conv2d_and_their_gradients():
    """O2 (a training program's level) has neither conv_fold nor conv_nchwc; an imported model
    run with the inference passes still differentiates (the ops' decompositions), to the same
    gradients as the unfused program."""
    assert "conv_nchwc" not in passes.LEVELS["O2"] and "conv_fold" not in passes.LEVELS["O2"]
    from onnx_models import resnet

    model = resnet(channels=(16, 16, 16), image=8)
    x = fw.to_tensor(np.random.default_rng(5).standard_normal((2, 3, 8, 8)).astype(np.float32))
    grads = {}
    for level in ("inference", "O2"):
        m = fw.onnx.load(model, device="cpu", passes=level, compile=False)
        m(x).sum().backward()
        grads[level] = {n: p.grad.numpy() for n, p in m.named_parameters() if p.grad is not None}
    assert grads["inference"].keys() == grads["O2"].keys() and grads["O2"]
    for n, g in grads["O2"].items():
        np.testing.assert_allclose(
            grads["inference"][n], g, rtol=1e-3, atol=1e-4 * np.abs(g).max(), err_msg=n
        )


def test_round_trip_is_kept_where_the_padding_channels_may_hold_values():
    """``to_nchwc(from_nchwc(z))`` zeroes z's channels past C: it is z itself only where those
    are known zero (z from conv2d_nchwc or to_nchwc, or C a whole number of blocks)."""
    tb, tp = "tensor<[1, 1, 2, 2, 16], float32, cpu>", "tensor<[1, 5, 2, 2], float32, cpu>"
    text = (
        f"  %1 = op.from_nchwc(%0) {{channels = 5}} : {tp}\n"
        f"  %2 = op.to_nchwc(%1) {{block = 16}} : {tb}\n"
        f"  %4 = op.exp(%2) : {tb}\n"
        "  builtin.return(%4)\n"
    )
    p = _prog(text, f"%0: {tb}", tb)
    _, stats = passes.optimize(p, ["conv_nchwc"])
    assert stats[0].rewritten == 0 and _names(p) == ["op.from_nchwc", "op.to_nchwc", "op.exp"]
    q = _prog(
        f"  %3 = op.to_nchwc(%0) {{block = 16}} : {tb}\n" + text.replace("(%0)", "(%3)"), f"%0: {tp}", tb
    )
    _, stats = passes.optimize(q, ["conv_nchwc", "dce"])
    assert stats[0].rewritten == 1 and _names(q) == ["op.to_nchwc", "op.exp"]


@needs_kernel
def test_conv_nchwc_c_is_one_prebuilt_build_of_its_three_entries(monkeypatch):
    """A program with blocked convolutions hands the core conv_nchwc.c's build with its other
    prebuilt C (``own_builds``: before the first run, or in the background), one build for the
    four entries; the kernels the ops then look up are that build's, not a build of their own."""
    from plugins.cpu import compiler as PC
    from plugins.cpu import conv_nchwc

    monkeypatch.setattr(PC, "_OWN", {})
    f32 = np.dtype(np.float32)
    (build,) = PC.own_builds({("conv2d_nchwc", f32), ("from_nchwc", f32), ("exp", f32)})
    entries = ("conv_nchwc", "to_nchwc", "from_nchwc", "pool_nchwc", "maxpool_nchwc")
    assert build.kernels == 5 and build.args[1] == entries
    assert PC.own_builds({("exp", f32), ("conv2d", f32)}) == []  # no blocked op: not built
    build()
    progs = [conv_nchwc._entry(e) for e in entries]
    assert all(p is not None for p in progs) and len({id(p.ffi) for p in progs}) == 1
    assert PC.own_builds({("conv2d_nchwc", f32)}) == []  # loaded: nothing left to build
    x = np.random.default_rng(7).standard_normal((2, 20, 5, 6)).astype(np.float32)
    np.testing.assert_array_equal(IF.to_nchwc(fw.to_tensor(x)).numpy(), _blocked(x))


@needs_kernel
def test_pass_pools_the_blocked_value_without_leaving_the_layout():
    """``sum``/``max`` over the pixels of ``from_nchwc(z)`` read ``z`` itself
    (``global_pool_nchwc``); a reduction over other axes keeps its ``from_nchwc``."""
    tb, tp = "tensor<[2, 2, 3, 3, 16], float32, cpu>", "tensor<[2, 20, 3, 3], float32, cpu>"
    text = (
        f"  %1 = op.from_nchwc(%0) {{channels = 20}} : {tp}\n"
        "  %2 = op.sum(%1) {axes = (2, 3), keepdim = true} : tensor<[2, 20, 1, 1], float32, cpu>\n"
        "  %3 = op.max(%1) {axes = (2, 3), keepdim = false} : tensor<[2, 20], float32, cpu>\n"
        "  %4 = op.sum(%1) {axes = (1,), keepdim = false} : tensor<[2, 3, 3], float32, cpu>\n"
        "  builtin.return(%2, %3, %4)\n"
    )
    outs = (
        "tensor<[2, 20, 1, 1], float32, cpu>, tensor<[2, 20], float32, cpu>, tensor<[2, 3, 3], float32, cpu>"
    )
    p = _prog(text, f"%0: {tb}", outs)
    x = np.random.default_rng(4).standard_normal((2, 20, 3, 3)).astype(np.float32)
    z = IF.to_nchwc(fw.to_tensor(x))
    _, stats = passes.optimize(p, ["conv_nchwc", "dce"])
    assert stats[0].rewritten == 2
    assert _names(p) == ["op.from_nchwc", "op.global_pool_nchwc", "op.global_pool_nchwc", "op.sum"]
    pools = [op for op in p.block.ops if op.name == "op.global_pool_nchwc"]
    assert [op.attrs["reduce"] for op in pools] == ["sum", "max"] and pools[0].operands[0] is p.block.args[0]
    got = [t.numpy() for t in Executor(p, "cpu", {})(z)]
    np.testing.assert_allclose(
        got[0], x.astype(np.float64).sum(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-5
    )
    np.testing.assert_array_equal(got[1], x.max(axis=(2, 3)))
    np.testing.assert_allclose(got[2], x.sum(axis=1), rtol=1e-5, atol=1e-5)


def _against_onnxruntime(ort, model, x):
    """(onnxruntime's output, the model's loaded with passes="inference", its program)."""
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x}
    )[0]
    m = fw.onnx.load(model, device="cpu", passes="inference")
    with fw.no_grad():
        got = m(fw.to_tensor(x)).numpy()
    return want, got, m.program()


@needs_kernel
def test_imported_global_max_pool_reads_the_blocked_layout_and_matches_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(8)
    w = rng.standard_normal((24, 5, 3, 3)).astype(np.float32)
    b = rng.standard_normal(24).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("GlobalMaxPool", ["r"], ["y"]),
        ],
        "gmp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 9, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 24, 1, 1])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    x = rng.standard_normal((2, 5, 9, 7)).astype(np.float32)
    want, got, p = _against_onnxruntime(ort, model, x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    assert [op.attrs["reduce"] for op in _ops(p, "op.global_pool_nchwc")] == ["max"]
    assert not _ops(p, "op.from_nchwc") and len(_ops(p, "op.conv2d_nchwc")) == 1


@needs_kernel
def test_packed_weights_follow_a_parameter_changed_between_runs():
    """A bound program keeps each convolution's packed weights across runs and packs again
    when the weights' bytes change: a parameter set after the first run (a folded BatchNorm
    scale, a conv weight) changes the next run's output as it changes the unfused program's."""
    from onnx_models import resnet

    model = resnet(channels=(16, 32), image=8)
    x = fw.to_tensor(np.random.default_rng(6).standard_normal((2, 3, 8, 8)).astype(np.float32))
    fused = fw.onnx.load(model, device="cpu", passes="inference")
    plain = fw.onnx.load(model, device="cpu", passes="O2", compile=False)
    with fw.no_grad():
        for _ in range(3):  # the plan binds its kernels at the second run, then keeps them
            first = fused(x).numpy()
        np.testing.assert_allclose(first, plain(x).numpy(), rtol=1e-4, atol=1e-4 * np.abs(first).max())
        for m in (fused, plain):
            params = dict(m.named_parameters())
            w = [n for n, p in params.items() if len(p.shape) == 4][2]  # a conv weight
            s = [n for n, p in params.items() if len(p.shape) == 1][4]  # a BatchNorm parameter
            params[w].set_value(params[w].numpy()[::-1].copy())
            params[s].set_value(params[s].numpy() * 3)
        got, want = fused(x).numpy(), plain(x).numpy()
    assert np.abs(got - first).max() > 1e-2  # the change reached the output
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@needs_kernel
def test_pass_takes_a_folded_scale_into_the_weight_operands():
    """``conv2d(x, mul(w, s))`` with ``s`` (O, 1, 1, 1) read by the conv alone becomes
    ``conv2d_nchwc(x, w, b, reshape(s)) {weight_scale}``: no product of the weights left in the
    program; a scale of another shape stays a product."""
    body = (
        '  %1 = builtin.parameter {name = "w"} : tensor<[16, 16, 3, 3], float32, cpu>\n'
        '  %2 = builtin.parameter {name = "b"} : tensor<[1, 16, 1, 1], float32, cpu>\n'
        '  %11 = builtin.parameter {name = "s"} : tensor<[16, 1, 1, 1], float32, cpu>\n'
        "  %12 = op.mul(%1, %11) : tensor<[16, 16, 3, 3], float32, cpu>\n"
        f"  %3 = {CONV.format(x='%0', w='%12', g=1)} : {T16}\n"
        f"  %4 = op.add(%3, %2) : {T16}\n"
        f"  %5 = op.relu(%4) : {T16}\n"
        '  %13 = builtin.parameter {name = "t"} : tensor<[1, 1, 3, 3], float32, cpu>\n'
        "  %14 = op.mul(%1, %13) : tensor<[16, 16, 3, 3], float32, cpu>\n"
        f"  %6 = {CONV.format(x='%5', w='%14', g=1)} : {T16}\n"
        f"  %7 = op.add(%6, %2) : {T16}\n"
        "  builtin.return(%7)\n"
    )
    p = _prog(body, f"%0: {T16}", T16)
    rng = np.random.default_rng(9)
    params = {
        "w": fw.to_tensor(rng.standard_normal((16, 16, 3, 3)).astype(np.float32) / 12),
        "b": fw.to_tensor(rng.standard_normal((1, 16, 1, 1)).astype(np.float32)),
        "s": fw.to_tensor(rng.uniform(0.5, 2, (16, 1, 1, 1)).astype(np.float32)),
        "t": fw.to_tensor(rng.uniform(0.5, 2, (1, 1, 3, 3)).astype(np.float32)),
    }
    x = fw.to_tensor(rng.standard_normal((1, 16, 4, 4)).astype(np.float32))
    want = Executor(p, "cpu", params)(x)[0].numpy()
    passes.optimize(p, ["conv_nchwc", "dce"])
    convs = [op for op in p.block.ops if op.name == "op.conv2d_nchwc"]
    assert [op.attrs.get("weight_scale", False) for op in convs] == [True, False]
    assert convs[0].operands[1] is p.block.ops[0].result  # the parameter w itself
    assert _names(p).count("op.mul") == 1  # the other scale's product stays
    got = Executor(p, "cpu", params)(x)[0].numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@needs_kernel
def test_imported_resnet18_keeps_the_blocked_layout_through_its_max_pool_and_matches_onnxruntime():
    """ResNet-18's shapes (7x7 s2 stem, 3x3 s2 pad 1 max pool, 2 blocks x 4 stages): the pool
    after the stem reads and writes the blocked layout (the importer's -FLT_MAX padding after a
    relu), so the program has no layout change left at all."""
    ort = pytest.importorskip("onnxruntime")
    from onnx_models import resnet18

    model = resnet18(image=32, classes=10)
    x = np.random.default_rng(12).standard_normal((2, 3, 32, 32)).astype(np.float32)
    want, got, p = _against_onnxruntime(ort, model, x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    (pool,) = _ops(p, "op.max_pool2d_nchwc")
    assert pool.attrs == {
        "channels": 64,
        "kernel_size": (3, 3),
        "stride": (2, 2),
        "padding": ((1, 1), (1, 1)),
    }
    assert pool.operands[0].defining_op.name == "op.conv2d_nchwc"
    assert len(_ops(p, "op.conv2d_nchwc")) == 20 and not _ops(p, "op.conv2d")
    assert not _ops(p, "op.from_nchwc") and not _ops(p, "op.to_nchwc")
    assert not _ops(p, "op.pad") and not _ops(p, "op.concat")


def _pool_text(fill: str, relu: str) -> tuple[str, str, str]:
    """A 2x2 stride 2 max pool of ``from_nchwc(conv2d_nchwc(...) {relu})`` as the program holds
    max_pool2d's decomposition, the pad's value ``fill``."""
    tb = "tensor<[1, 2, 4, 4, 16], float32, cpu>"
    tp, tpad = "tensor<[1, 20, 4, 4], float32, cpu>", "tensor<[1, 20, 5, 5], float32, cpu>"
    ts, tr = "tensor<[1, 20, 2, 2], float32, cpu>", "tensor<[1, 20, 1, 2, 2], float32, cpu>"
    body = (
        f'  %90 = builtin.parameter {{name = "w"}} : tensor<[20, 20, 1, 1], float32, cpu>\n'
        f'  %91 = builtin.parameter {{name = "b"}} : tensor<[20], float32, cpu>\n'
        f"  %1 = op.conv2d_nchwc(%0, %90, %91) {{blocked_input = true, dilation = (1, 1), "
        f"padding = ((0, 0), (0, 0)), relu = {relu}, stride = (1, 1)}} : {tb}\n"
        f"  %2 = op.from_nchwc(%1) {{channels = 20}} : {tp}\n"
        f"  %3 = op.pad(%2) {{pads = ((0, 0), (0, 0), (1, 0), (1, 0)), value = {fill}}} : {tpad}\n"
    )
    names = []
    for i in range(2):
        for j in range(2):
            k = 2 * i + j
            body += (
                f"  %{20 + k} = op.slice(%3) {{starts = (0, 0, {i}, {j}), stops = (1, 20, {i + 3}, {j + 3}), "
                f"steps = (1, 1, 2, 2)}} : {ts}\n"
                f"  %{30 + k} = op.reshape(%{20 + k}) {{shape = (1, 20, 1, 2, 2)}} : {tr}\n"
            )
            names.append(f"%{30 + k}")
    body += (
        f"  %40 = op.concat({', '.join(names)}) {{axis = 2}} : tensor<[1, 20, 4, 2, 2], float32, cpu>\n"
        f"  %41 = op.max(%40) {{axes = (2,), keepdim = false}} : {ts}\n"
        "  builtin.return(%41)\n"
    )
    return body, f"%0: {tb}", ts


@needs_kernel
@pytest.mark.parametrize(
    "fill, relu, fused",
    [
        ("-3.4028234663852886e+38", "true", True),
        ("-inf", "false", True),
        ("-3.4028234663852886e+38", "false", False),
    ],
)
def test_pass_takes_the_decomposed_max_pool_into_the_blocked_layout_where_exact(fill, relu, fused):
    """A -inf padding is never a window's max; a finite fill (the importer's -FLT_MAX) only
    after a relu (a -inf pixel would otherwise pool to the fill): there the pool stays."""
    rng = np.random.default_rng(13)
    x = rng.standard_normal((1, 20, 4, 4)).astype(np.float32)
    w = rng.standard_normal((20, 20, 1, 1)).astype(np.float32)
    b = rng.standard_normal(20).astype(np.float32)
    w[3], b[3] = 0, -np.inf  # output channel 3 all -inf: windows of -inf pixels and the fill
    params = {"w": fw.to_tensor(w), "b": fw.to_tensor(b)}
    xb = IF.to_nchwc(fw.to_tensor(x))
    p = _prog(*_pool_text(fill, relu))
    (want,) = Executor(p, "cpu", params)(xb)
    _, stats = passes.optimize(p, ["conv_nchwc", "dce"])
    assert bool(_ops(p, "op.max_pool2d_nchwc")) == fused and bool(_ops(p, "op.concat")) != fused
    (got,) = Executor(p, "cpu", params)(xb)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    # against float64 numpy, padded with the fill
    y = np.einsum("nchw,oc->nohw", x.astype(np.float64), w[:, :, 0, 0].astype(np.float64)) + b[:, None, None]
    y = np.where(y > 0, y, 0) if relu == "true" else y
    yp = np.pad(y, ((0, 0), (0, 0), (1, 0), (1, 0)), constant_values=float(fill))
    ref = _max_pool64(yp, (2, 2), (2, 2), ((0, 0), (0, 0)))
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-5)


@needs_kernel
def test_pass_leaves_a_max_over_windows_that_are_not_a_pool():
    """Three of the four kernel offsets concatenated (not a whole window): the max stays."""
    body, ins, outs = _pool_text("-inf", "true")
    body = body.replace(", %33) {axis = 2} : tensor<[1, 20, 4,", ") {axis = 2} : tensor<[1, 20, 3,")
    p = _prog(body, ins, outs)
    assert passes.optimize(p, ["conv_nchwc"])[1][0].rewritten == 0 and _ops(p, "op.concat")


@needs_kernel
def test_pass_takes_a_max_pool2d_op_of_a_blocked_value():
    """``max_pool2d(from_nchwc(z))`` reads ``z``: where its channels past C are known zero (C a
    whole number of blocks here; 32 channels of a program input: the pool stays)."""
    tb, tp = "tensor<[2, 2, 5, 6, 16], float32, cpu>", "tensor<[2, 32, 5, 6], float32, cpu>"
    to = "tensor<[2, 32, 3, 3], float32, cpu>"
    text = (
        f"  %1 = op.from_nchwc(%0) {{channels = 32}} : {tp}\n"
        f"  %2 = op.max_pool2d(%1) {{kernel_size = (3, 3), padding = ((1, 1), (1, 1)), stride = (2, 2)}} : {to}\n"
        "  builtin.return(%2)\n"
    )
    x = np.random.default_rng(14).standard_normal((2, 32, 5, 6)).astype(np.float32)
    z = IF.to_nchwc(fw.to_tensor(x))
    p = _prog(text, f"%0: {tb}", to)
    _, stats = passes.optimize(p, ["conv_nchwc", "dce"])
    assert stats[0].rewritten == 1 and _names(p) == ["op.max_pool2d_nchwc", "op.from_nchwc"]
    q = _prog(*(t.replace("[2, 32,", "[2, 19,").replace("= 32", "= 19") for t in (text, f"%0: {tb}", to)))
    assert passes.optimize(q, ["conv_nchwc"])[1][0].rewritten == 0
    (got,) = Executor(p, "cpu", {})(z)
    np.testing.assert_array_equal(
        got.numpy(), _max_pool64(x, (3, 3), (2, 2), ((1, 1), (1, 1))).astype(np.float32)
    )
