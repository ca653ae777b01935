"""Activations in fusion groups: relu's one-value lowering (bias add + relu one kernel, bit for
bit eager's) and the element-wise activations whose decomposition a group traces, forward and
backward against eager mode and finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework._src.ops.base import OPS, Lowering, with_facts
from framework.ir.passes import fusion

ACTS = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda v: F.gelu(v, approximate=True),
    "silu": F.silu,
    "sigmoid": F.sigmoid,
    "leaky_relu": lambda v: F.leaky_relu(v, 0.1),
    "hardswish": F.hardswish,
    "mish": F.mish,
    "log_sigmoid": F.log_sigmoid,
}


class _Act(fw.nn.Layer):
    def __init__(self, lin, act):
        super().__init__()
        self.lin, self.act = lin, act

    def forward(self, v):
        return self.act(self.lin(v))


def _fused_ops(layer):
    prog = layer.forward.programs[-1].executor.program
    return [op for op in prog.block.ops if op.name.startswith("fused.")], [op.name for op in prog.block.ops]


@pytest.mark.parametrize("name", sorted(ACTS))
def test_linear_and_activation_fuse_and_match_eager(dev, name):
    rng = np.random.default_rng(3)
    x = fw.to_tensor((rng.standard_normal((16, 48)) * 3).astype(np.float32), device=dev)
    fw.seed(0)
    lin = fw.nn.Linear(48, 40)
    lin.to(device=dev)
    static = fw.jit.to_static(_Act(lin, ACTS[name]))
    y = static(x)
    y.sum().backward()
    gw, gb = lin.weight.grad.numpy().copy(), lin.bias.grad.numpy().copy()
    lin.clear_gradients()
    groups, names = _fused_ops(static)
    if dev.startswith("cpu"):  # the op stays one op there (opencl decomposes relu first)
        assert groups, names  # bias add + activation: a group
        assert "op.add" not in names, names

    y0 = ACTS[name](lin(x))
    y0.sum().backward()
    if name == "relu":  # exact ops: bit for bit
        np.testing.assert_array_equal(y.numpy(), y0.numpy())
        np.testing.assert_array_equal(gb, lin.bias.grad.numpy())
    np.testing.assert_allclose(y.numpy(), y0.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gw, lin.weight.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gb, lin.bias.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_relu_group_keeps_nan_and_zeroes_negative_zero(dev):
    x = np.array([[-0.0, 0.0, np.nan, -1.5, 2.0, -np.inf, np.inf, 1e-45]], np.float32)
    b = np.zeros(8, np.float32)

    def f(x, b):
        return F.relu(x + b)

    with fw.no_grad():
        got = fw.jit.to_static(f)(fw.to_tensor(x, device=dev), fw.to_tensor(b, device=dev)).numpy()
    ref = np.where(x + b <= 0, np.float32(0), x + b)  # numpy's relu rule: NaN stays NaN
    np.testing.assert_array_equal(got, ref)
    assert not np.signbit(got[0, 0])


def test_relu_gradient_against_finite_differences(dev):
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((4, 16)).astype(np.float64)
    xv[np.abs(xv) < 1e-2] = 0.5  # away from the kink
    w = rng.standard_normal((16, 16))
    fw.seed(1)
    lin = fw.nn.Linear(16, 16)
    lin.to(device=dev, dtype="float64")
    lin.weight.set_value(w)
    static = fw.jit.to_static(_Act(lin, F.relu))
    x = fw.to_tensor(xv, device=dev, stop_gradient=False)
    (static(x) * fw.to_tensor(w[:4], device=dev)).sum().backward()
    got = x.grad.numpy()

    def loss(v):
        z = v @ w + lin.bias.numpy()
        return float((np.where(z <= 0, 0, z) * w[:4]).sum())

    eps, num = 1e-6, np.zeros_like(xv)
    for i in np.ndindex(xv.shape):
        d = np.zeros_like(xv)
        d[i] = eps
        num[i] = (loss(xv + d) - loss(xv - d)) / (2 * eps)
    np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-6)


def test_composite_lowering_is_checked():
    assert OPS["relu"].lower.role == "expr" and OPS["gelu"].lower.role == "decompose"
    assert fusion.can_join  # the pass reads the record's role
    with pytest.raises(ValueError, match="relu.*lower"):
        with_facts(OPS["relu"], lower=Lowering(role="reduce"))
    assert OPS["relu"].lower.role == "expr"


def test_relu_gradient_and_bias_gradient_fuse_the_select_only(dev):
    """eq + where (relu's gradient) beside a column sum (its bias's gradient): the sum's partial
    rows would cost more than they save, so the group is the comparison and the select."""
    rng = np.random.default_rng(9)
    out = np.maximum(rng.standard_normal((64, 96)), 0).astype(np.float32)
    g = rng.standard_normal((64, 96)).astype(np.float32)
    g[::5, ::7] = np.nan

    def f(o, g):
        gz = fw.where(o == 0, fw.zeros([1, 1], dtype="float32", device=o.place), g)
        return gz, gz.sum(0, keepdim=True)

    with fw.no_grad():
        sf = fw.jit.to_static(f)
        gz, gb = sf(fw.to_tensor(out, device=dev), fw.to_tensor(g, device=dev))
    prog = sf.programs[-1].executor.program
    names = [op.name for op in prog.block.ops]
    want = np.where(out == 0, np.float32(0), g)
    assert gz.numpy().tobytes() == want.tobytes()
    np.testing.assert_allclose(gb.numpy(), want.sum(0, keepdims=True), rtol=1e-5, atol=1e-5)
    groups = [op for op in prog.block.ops if op.name.startswith("fused.")]
    assert len(groups) == 1 and "op.sum" in names, names
    body = [op.name for op in fusion.GROUPS[groups[0].name].body.block.ops]
    assert "op.eq" in body and "op.where" in body and "op.sum" not in body, body


def test_a_reshaped_result_is_one_output_viewed_outside(dev):
    """relu(x + b) returned both as it is and reshaped (the feed-forward layer's [b, s, f]
    and [b*s, f]): the kernel writes it once, the reshape views it outside the group."""
    rng = np.random.default_rng(11)
    x, b = rng.standard_normal((4, 6, 32)).astype(np.float32), rng.standard_normal(32).astype(np.float32)

    def f(x, b):
        y = F.relu(x + b)
        return y, y.reshape([24, 32]) * 2.0

    with fw.no_grad():
        sf = fw.jit.to_static(f)
        y, z = sf(fw.to_tensor(x, device=dev), fw.to_tensor(b, device=dev))
    want = np.where(x + b <= 0, np.float32(0), x + b)
    assert y.numpy().tobytes() == want.tobytes()
    assert z.numpy().tobytes() == (want.reshape(24, 32) * np.float32(2)).tobytes()
    prog = sf.programs[-1].executor.program
    for op in prog.block.ops:
        if op.name.startswith("fused."):
            shapes = [tuple(r.type.shape) for r in op.results]
            assert len(set(shapes)) == len(shapes), (shapes, str(prog))  # no copy of a result


def test_transformer_layer_step_matches_eager(dev):
    """The feed-forward relu's groups (forward, and eq + where backward) inside the whole layer:
    to_static's output and gradients against eager mode."""
    if not dev.startswith("cpu"):
        pytest.skip("one device is enough for the layer")
    rng = np.random.default_rng(13)
    fw.seed(3)
    layer = fw.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0)
    t = fw.to_tensor(rng.standard_normal((2, 8, 32)).astype(np.float32))
    y0 = layer(t)
    (y0 * y0).sum().backward()
    want = [p.grad.numpy().copy() for p in layer.parameters()]
    layer.clear_gradients()
    static = fw.jit.to_static(layer)
    for _ in range(2):  # the second call runs the built program
        layer.clear_gradients()
        y = static(t)
        (y * y).sum().backward()
    np.testing.assert_allclose(y.numpy(), y0.numpy(), rtol=1e-5, atol=1e-5)
    for k, p in enumerate(layer.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), want[k], rtol=1e-4, atol=1e-4, err_msg=str(k))


def test_float16_nan_keeps_numpys_bits_eager_and_traced(dev):
    """relu and a cast to float16 of NaNs give numpy's bits (sign and top payload: 0x7e00,
    0xfe00, 0x7e01, 0xff00) eager and in a traced program: PoCL's vstore_half_rte wrote 0x7fff for
    every NaN."""
    bits = np.array([0x7FC00000, 0xFFC00000, 0x7FC02000, 0xFFE00000, 0x3F800000, 0xC0000000], np.uint32)
    x32 = bits.view(np.float32)
    x16 = x32.astype(np.float16)
    want = np.where(np.isnan(x16) | (x16 > 0), x16, np.float16(0))
    t16 = fw.to_tensor(x16, device=dev)
    assert F.relu(t16).numpy().view(np.uint16).tolist() == want.view(np.uint16).tolist()
    with fw.no_grad():
        got = fw.jit.to_static(lambda a: F.relu(a * 1.0))(t16).numpy()
    assert got.view(np.uint16).tolist() == want.view(np.uint16).tolist()
    for src in (x32, x32.astype(np.float64), x16):
        got = fw.to_tensor(src, device=dev).astype("float16").numpy()
        assert got.view(np.uint16).tolist() == src.astype(np.float16).view(np.uint16).tolist(), src.dtype
