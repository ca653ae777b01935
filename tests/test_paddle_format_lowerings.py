"""Lowerings of ``pd_op`` ops in models saved by real Paddle 3's ``paddle.jit.save``: each op in
a tiny model Paddle saves at test time, loaded by ``fw.jit.load`` and run on every device,
outputs equal to Paddle's own on the same input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import framework as fw
from framework.jit import paddle_format

paddle = pytest.importorskip(
    "paddle", reason="real Paddle (the oracle) is not installed: pip install paddlepaddle"
)
F = paddle.nn.functional


class _Fn(paddle.nn.Layer):
    def __init__(self, fn, layer=None) -> None:
        super().__init__()
        self.fn, self.layer = fn, layer

    def forward(self, x):
        return self.fn(self, x)


def _rms(self, x):
    w = paddle.to_tensor(np.linspace(0.5, 1.5, 8).astype("float32"))
    b = paddle.to_tensor(np.linspace(-0.2, 0.2, 8).astype("float32"))
    return paddle.incubate.nn.functional.fused_rms_norm(x, w, b, 1e-6, 1)[0]


def _rms_residual(self, x):
    w = paddle.to_tensor(np.linspace(0.5, 1.5, 8).astype("float32"))
    # the bias is one per column (Paddle's kernel reads bias[col])
    bias = paddle.to_tensor(np.linspace(-1, 1, 8).astype("float32"))
    out, res = paddle.incubate.nn.functional.fused_rms_norm(x, w, None, 1e-5, 1, bias=bias, residual=x + 1.0)
    return out, res


#: name → (forward(self, x), input shape, dtype, the pd_op ops the saved program must hold, layer)
CASES = {
    "pad3d_reflect": (
        lambda s, x: F.pad(x, [1, 2, 0, 1, 2, 0], mode="reflect", data_format="NCDHW"),
        [2, 3, 4, 5, 6],
        "float32",
        ["pad3d"],
        None,
    ),
    "pad3d_constant": (
        lambda s, x: F.pad(x, [1, 0, 2, 1, 0, 1], value=-1.5, data_format="NCDHW"),
        [1, 2, 3, 4, 5],
        "float32",
        ["pad3d"],
        None,
    ),
    "pad3d_replicate_2d": (
        lambda s, x: F.pad(x, [2, 1, 1, 3], mode="replicate"),
        [2, 3, 4, 5],
        "float32",
        ["pad3d"],
        None,
    ),
    "pad": (lambda s, x: F.pad(x, [1, 0, 2, 1], value=0.5), [3, 4], "float32", ["pad"], None),
    "prelu_channel": (
        lambda s, x: s.layer(x),
        [2, 3, 4, 4],
        "float32",
        ["prelu"],
        lambda: paddle.nn.PReLU(3, 0.1),
    ),
    "prelu_all": (lambda s, x: s.layer(x), [2, 3, 4], "float32", ["prelu"], lambda: paddle.nn.PReLU(1, 0.3)),
    "prelu_element": (
        lambda s, x: paddle._C_ops.prelu(
            x, paddle.full([1, 3, 4], 0.2) + paddle.arange(4, dtype="float32") / 8, "NCHW", "element"
        ),
        [2, 3, 4],
        "float32",
        ["prelu"],
        None,
    ),
    "one_hot": (lambda s, x: F.one_hot(x, 5), [6], "int64", ["one_hot"], None),
    "topk": (lambda s, x: paddle.topk(x, 3, axis=-1), [4, 7], "float32", ["topk"], None),
    "topk_smallest_axis0": (
        lambda s, x: paddle.topk(x, 2, axis=0, largest=False),
        [4, 7],
        "float32",
        ["topk"],
        None,
    ),
    "cumprod": (lambda s, x: paddle.cumprod(x, dim=1), [3, 4], "float32", ["cumprod"], None),
    "det": (lambda s, x: paddle.linalg.det(x), [2, 3, 3], "float32", ["det"], None),
    "triu_tril": (
        lambda s, x: paddle.triu(x, 1) + 2 * paddle.tril(x, -1),
        [4, 5],
        "float32",
        ["triu", "tril"],
        None,
    ),
    "amax_amin": (
        lambda s, x: paddle.amax(x, axis=1) + paddle.amin(x, axis=[0, 2], keepdim=True).sum(),
        [3, 4, 2],
        "float32",
        ["amax", "amin"],
        None,
    ),
    "eye": (
        lambda s, x: x + paddle.eye(3, 4) + paddle.eye(3, 4, dtype="float32") * 2,
        [3, 4],
        "float32",
        ["eye"],
        None,
    ),
    "fused_rms_norm": (lambda s, x: _rms(s, x), [2, 8], "float32", ["fused_rms_norm_quant"], None),
    "fused_rms_norm_residual": (
        lambda s, x: _rms_residual(s, x),
        [3, 8],
        "float32",
        ["fused_rms_norm_quant"],
        None,
    ),
}


def _input(shape, dtype, rng):
    if dtype == "int64":
        return rng.integers(0, 5, shape).astype("int64")
    return rng.standard_normal(shape).astype(dtype)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Each case saved by Paddle, its input and Paddle's outputs on it."""
    warnings.simplefilter("ignore")
    folder = tmp_path_factory.mktemp("paddle_lowerings")
    rng = np.random.default_rng(0)
    out = {}
    for name, (fn, shape, dtype, _, make) in CASES.items():
        layer = _Fn(fn, make() if make else None)
        layer.eval()
        prefix = str(folder / name)
        paddle.jit.save(layer, prefix, input_spec=[paddle.static.InputSpec(shape, dtype, "x")])
        x = _input(shape, dtype, rng)
        want = layer(paddle.to_tensor(x))
        want = [want] if isinstance(want, paddle.Tensor) else list(want)
        out[name] = (prefix, x, [w.numpy() for w in want])
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_lowering_matches_paddle(saved, name, device):
    prefix, x, want = saved[name]
    ops = paddle_format.read_program(prefix + ".json").op_names()
    for op in CASES[name][3]:
        assert ops.get("pd_op." + op), f"{name}: Paddle did not save pd_op.{op} ({sorted(ops)})"
    model = fw.jit.load(prefix, device=device)
    got = model(fw.to_tensor(x, device=device))
    got = [got] if isinstance(got, fw.Tensor) else list(got)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert tuple(g.shape) == w.shape and g.dtype == w.dtype, (name, g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-5, err_msg=name)


def test_a_quantised_rms_norm_is_refused_naming_the_op(tmp_path):
    layer = _Fn(
        lambda s, x: paddle.incubate.nn.functional.fused_rms_norm(
            x, paddle.ones([8]), None, 1e-6, 1, quant_scale=0.5, quant_max_bound=127.0, quant_min_bound=-127.0
        )[0]
    )
    prefix = str(tmp_path / "q")
    paddle.jit.save(layer, prefix, input_spec=[paddle.static.InputSpec([2, 8], "float32", "x")])
    with pytest.raises(paddle_format.LoweringError, match=r"fused_rms_norm_quant.*quant_scale"):
        fw.jit.load(prefix)(fw.ones([2, 8]))
