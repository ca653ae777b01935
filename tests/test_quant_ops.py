"""Weight-only quantisation (``framework.nn.quant``) and linear quantisation ops
(``framework.quantization``): values against a numpy reference written here from the
definitions, scales against real Paddle's ``weight_quantize`` (its CPU kernel takes float16
and bfloat16 and writes the integers in its GPU kernels' interleaved layout, so only the
scales and shapes are compared; Paddle's ``weight_dequantize`` and ``weight_only_linear``
have no CPU kernel), gradients by finite differences and the straight-through rule."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import framework as fw
from adapter_api import OpArgumentError
from framework.nn.quant import WeightOnlyLinear, weight_dequantize, weight_only_linear, weight_quantize
from framework.quantization import dequantize_linear, fake_quantize_dequantize, quantize_linear
from framework.testing import kernels_removed


def _round(v: np.ndarray) -> np.ndarray:
    return np.sign(v) * np.floor(np.abs(v) + 0.5)  # halves away from zero, as Paddle


def ref_quantize(w: np.ndarray, bits: int, group: int) -> tuple[np.ndarray, np.ndarray]:
    """The reference: ``[k, n]`` -> int levels ``[n, k]`` and scales, from the definition."""
    k, n = w.shape
    qmax = 127 if bits == 8 else 7
    if group == -1:
        scale = np.abs(w).max(0) / qmax
        per_row = np.broadcast_to(scale, (k, n))
    else:
        groups = [np.abs(w[i : i + group]).max(0) / qmax for i in range(0, k, group)]
        scale = np.stack(groups)
        per_row = np.repeat(scale, group, axis=0)[:k]
    q = np.clip(_round(w / np.where(per_row == 0, 1, per_row)), -qmax, qmax).astype(np.int8).T
    return q, scale.astype(w.dtype)


def unpack(q: np.ndarray) -> np.ndarray:
    b = q.view(np.uint8)
    lo, hi = (b & 15).astype(np.int8), (b >> 4).astype(np.int8)
    lo = np.where(lo >= 8, lo - 16, lo)
    hi = np.where(hi >= 8, hi - 16, hi)
    return np.stack([lo, hi], 1).reshape(2 * q.shape[0], q.shape[1])


CASES = [
    ("weight_only_int8", -1),
    ("weight_only_int8", 64),
    ("weight_only_int4", -1),
    ("weight_only_int4", 64),
]


@pytest.mark.parametrize("algo,group", CASES)
def test_weight_quantize_dequantize_against_the_reference(algo, group):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((160, 12)).astype(np.float32)  # k=160: a shorter last group of 32
    w[:, 3] = 0.0  # an all-zero channel quantises to zeros, not NaN
    q, s = weight_quantize(fw.to_tensor(w), algo, group_size=group)
    rq, rs = ref_quantize(w, 8 if algo.endswith("int8") else 4, group)
    got = q.numpy() if algo.endswith("int8") else unpack(q.numpy())
    assert q.dtype == np.int8 and q.shape == ((12, 160) if algo.endswith("int8") else (6, 160))
    np.testing.assert_array_equal(got, rq)
    np.testing.assert_allclose(s.numpy(), rs, rtol=1e-6)
    d = weight_dequantize(q, s, algo, group_size=group).numpy()
    per_row = np.broadcast_to(rs, w.shape) if group == -1 else np.repeat(rs, group, 0)[:160]
    np.testing.assert_allclose(d, rq.T.astype(np.float32) * per_row, rtol=1e-6)
    assert np.abs(d - w).max() <= per_row.max() / 2 + 1e-6  # within half a step


@pytest.mark.parametrize(
    "algo,group", [("weight_only_int8", -1), ("weight_only_int4", 64), ("weight_only_int8", 128)]
)
def test_scales_and_shapes_match_paddle(algo, group):
    paddle = pytest.importorskip("paddle")
    from paddle.nn.quant import weight_quantize as pd_quantize

    w = np.random.default_rng(1).standard_normal((256, 64)).astype(np.float16)
    pq, ps = pd_quantize(paddle.to_tensor(w), algo=algo, arch=80, group_size=group)
    q, s = weight_quantize(fw.to_tensor(w), algo, group_size=group)
    assert tuple(q.shape) == tuple(pq.shape) and tuple(s.shape) == tuple(ps.shape)
    assert s.dtype == np.float16 and str(ps.dtype).endswith("float16")
    np.testing.assert_allclose(s.numpy().astype(np.float32), ps.numpy().astype(np.float32), rtol=2e-3)


@pytest.mark.parametrize("path", ["kernel", "decomposition"])
@pytest.mark.parametrize("wdt,group", [("int8", -1), ("int4", 32), ("int4", 48)])
def test_weight_only_linear_values_and_gradient(wdt, group, path):
    """The cpu plugin's fused kernel and the decomposition (the kernel removed) both give the
    reference, shorter last group (k=64, groups of 48) included."""
    with contextlib.ExitStack() as stack:
        if path == "decomposition":
            stack.enter_context(kernels_removed("weight_only_linear"))
        for lead in ((2, 3), (12,)):  # the cpu kernel: C up to 8 rows (decoding), BLAS past that
            _check_weight_only_linear(wdt, group, lead)


def _check_weight_only_linear(wdt: str, group: int, lead: tuple[int, ...]) -> None:
    rng = np.random.default_rng(2)
    w = rng.standard_normal((64, 10)).astype(np.float32)
    b = rng.standard_normal(10).astype(np.float32)
    q, s = weight_quantize(fw.to_tensor(w), "weight_only_" + wdt, group_size=group)
    wd = weight_dequantize(q, s, "weight_only_" + wdt, group_size=group).numpy().astype(np.float64)
    xn = rng.standard_normal((*lead, 64)).astype(np.float32)
    x = fw.to_tensor(xn, stop_gradient=False)
    bias = fw.to_tensor(b, stop_gradient=False)
    y = weight_only_linear(x, q, bias, s, wdt, group_size=group)
    np.testing.assert_allclose(y.numpy(), xn @ wd + b, rtol=1e-5, atol=1e-5)
    g = rng.standard_normal(y.shape).astype(np.float32)
    (y * fw.to_tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), g @ wd.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bias.grad.numpy(), g.reshape(-1, 10).sum(0), rtol=1e-5)


def test_weight_only_linear_layer_is_close_to_the_float_one():
    fw.seed(3)
    lin = fw.nn.Linear(128, 16)
    x = fw.randn([4, 128])
    ref = lin(x).numpy()
    for wdt, group, tol in (("int8", -1, 0.02), ("int4", 64, 0.2)):
        got = WeightOnlyLinear(lin, wdt, group)(x).numpy()
        assert np.abs(got - ref).max() / np.abs(ref).max() < tol


def test_bad_arguments_name_the_op_and_the_value():
    w = fw.randn([8, 3])
    with pytest.raises(OpArgumentError, match=r"\[weight_quantize\] algo"):
        weight_quantize(w, "int3")
    with pytest.raises(OpArgumentError, match="out_features must be even, got 3"):
        weight_quantize(w, "weight_only_int4")
    with pytest.raises(OpArgumentError, match="group_size"):
        weight_quantize(fw.randn([8, 4]), group_size=0)
    q, s = weight_quantize(fw.randn([8, 4]))
    with pytest.raises(OpArgumentError, match=r"\[weight_only_linear\] weight_scale must be .* \[4\]"):
        weight_only_linear(fw.randn([2, 8]), q, weight_scale=s[:2])
    with pytest.raises(OpArgumentError, match="last dim in_features=8"):
        weight_only_linear(fw.randn([2, 5]), q, weight_scale=s)


# -- linear quantisation and fake quantisation --------------------------------------------------
def test_quantize_dequantize_linear_per_tensor_and_per_channel():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 6)).astype(np.float32)
    s = np.float32(1.2)  # some values past the threshold: clipped to [-128, 127], as Paddle
    q = quantize_linear(fw.to_tensor(x), fw.to_tensor(s)).numpy()
    np.testing.assert_array_equal(q, np.clip(_round(x / s * 127), -128, 127).astype(np.int8))
    d = dequantize_linear(fw.to_tensor(q), fw.to_tensor(s)).numpy()
    np.testing.assert_allclose(d, q.astype(np.float32) * s / 127, rtol=1e-6)
    sc = np.abs(x).max(0)
    qc = quantize_linear(fw.to_tensor(x), fw.to_tensor(sc), bit_length=4, quant_axis=1).numpy()
    np.testing.assert_array_equal(qc, np.clip(_round(x / sc * 7), -8, 7).astype(np.int8))
    with pytest.raises(OpArgumentError, match=r"per-channel scale along axis 1 must have shape \[6\]"):
        quantize_linear(fw.to_tensor(x), fw.to_tensor(sc[:2]), quant_axis=1)


def test_fake_quantize_dequantize_matches_paddle_and_passes_the_gradient_straight_through():
    paddle = pytest.importorskip("paddle")
    from paddle import _C_ops

    rng = np.random.default_rng(5)
    x = (rng.standard_normal((4, 7)) * 2).astype(np.float32)
    scale = np.array([1.7], np.float32)
    # Paddle's fake quant-dequant in test mode (no scale update) with this scale
    pd_out = _C_ops.fake_quantize_dequantize_moving_average_abs_max(
        paddle.to_tensor(x), paddle.to_tensor(scale), None, None, 0.9, 8, True, 1
    )[0].numpy()
    t = fw.to_tensor(x, stop_gradient=False)
    y = fake_quantize_dequantize(t, fw.to_tensor(scale[0]))
    np.testing.assert_allclose(y.numpy(), pd_out, rtol=1e-6, atol=1e-7)
    g = rng.standard_normal(x.shape).astype(np.float32)
    (y * fw.to_tensor(g)).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), g)  # straight through, clipped values included


@pytest.mark.parametrize("wdt,group", [("int8", -1), ("int4", 96)])
def test_large_weight_batch_one_products_match_the_decomposition(wdt, group):
    """A weight past the cpu plugin's size threshold at 1-3 rows runs its C product (the
    decoding path): against the decomposition (the kernel removed)."""
    rng = np.random.default_rng(8)
    w = fw.to_tensor(rng.standard_normal((512, 256)).astype(np.float32))
    q, s = weight_quantize(w, "weight_only_" + wdt, group_size=group)
    b = fw.to_tensor(rng.standard_normal(256).astype(np.float32))
    for rows in (1, 3):
        x = fw.to_tensor(rng.standard_normal((rows, 512)).astype(np.float32))
        got = weight_only_linear(x, q, b, s, wdt, group_size=group).numpy()
        with kernels_removed("weight_only_linear"):
            want = weight_only_linear(x, q, b, s, wdt, group_size=group).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
