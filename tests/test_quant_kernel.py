"""The cpu plugin's weight-only product (``plugins/cpu/quant.c``, the decoding GEMV) against
numpy: the integers ``weight_quantize`` wrote, unpacked and scaled here in float64, then
multiplied; int8, packed int4 and float8_e4m3fn weights, each build of the kernel (AVX-512,
AVX2/FMA/F16C, portable C). Shapes chosen to hit every path of the kernel: ``k`` not a multiple
of the group nor of the vector width (the 64 / 32 / 8-wide steps and the scalar tail), a shorter last
group, a channel count not a multiple of the four-channel block, one and several rows (up to
the C kernel's 8; 9 go through numpy), one thread and the OpenMP team; the numpy fallback (more rows, float8 NaN
codes); and the Predictor's quantised program running the same C call on a decoding-sized input."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from framework.nn.quant import weight_only_linear, weight_quantize
from framework.quantization import weight_only_quantize
from framework.static import InputSpec
from plugins.cpu import quant as cpu_quant


def dequantised(q: np.ndarray, s: np.ndarray, wdt: str, group: int, k: int) -> np.ndarray:
    """``[k, n]`` float64 weight from the int8 ``[n, k]`` (int4 ``[n / 2, k]``) integers."""
    if wdt == "int4":
        b = q.view(np.uint8)
        lo, hi = (b & 15).astype(np.int64), (b >> 4).astype(np.int64)
        lo, hi = np.where(lo >= 8, lo - 16, lo), np.where(hi >= 8, hi - 16, hi)
        w = np.stack([lo, hi], 1).reshape(2 * q.shape[0], k)
    else:
        w = q.astype(np.float64)  # int8, or float8_e4m3fn codes widened exactly (ml_dtypes)
    s = s.astype(np.float64)
    scale = s[:, None] if group == -1 else np.repeat(s, group, axis=0)[:k].T
    return (w * scale).T


CASES = [  # wdt, group, k, n
    ("int8", -1, 100, 13),
    ("int8", 48, 100, 13),
    ("int8", 96, 1005, 37),
    ("int4", -1, 100, 14),
    ("int4", 48, 100, 14),
    ("int4", 96, 1005, 38),
    ("fp8", -1, 100, 13),
    ("fp8", 48, 1005, 37),
    ("fp8", 64, 131, 6),
]
#: the kernel's builds: native (AVX-512 where the CPU has it), AVX2/FMA/F16C, portable C, and
#: the native one reading four channels (two packed int4 rows) side by side instead of one
PATHS = {
    "native": (),
    "avx2": ("-DWOL_NO_AVX512",),
    "portable": ("-DWOL_NO_AVX2",),
    "blocks-of-four": ("-DWOL_CHANNELS=4", "-DWOL_PACKED_ROWS=2"),
}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("team", [False, True], ids=["one-thread", "team"])
@pytest.mark.parametrize("wdt,group,k,n", CASES)
def test_product_matches_numpy_dequantise_then_matmul(monkeypatch, wdt, group, k, n, team, path):
    monkeypatch.setattr(cpu_quant, "OPTIONS", PATHS[path])
    if team:  # every weight large enough for the OpenMP team (two threads where the budget has them)
        monkeypatch.setattr(cpu_quant, "PER_THREAD", 1)
    rng = np.random.default_rng(k + n)
    w = rng.standard_normal((k, n)).astype(np.float32)
    q, s = weight_quantize(fw.to_tensor(w), "weight_only_" + wdt, group_size=group)
    wd = dequantised(q.numpy(), s.numpy(), wdt, group, k)
    b = rng.standard_normal(n).astype(np.float32)
    for rows in (1, 3, 8, 9):
        x = rng.standard_normal((rows, k)).astype(np.float32)
        for bias in (None, b):
            got = weight_only_linear(
                fw.to_tensor(x), q, None if bias is None else fw.to_tensor(bias), s, wdt, group_size=group
            ).numpy()
            want = x.astype(np.float64) @ wd + (0 if bias is None else bias)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("wdt,group", [("int8", -1), ("int4", 32), ("fp8", 16)])
def test_predictor_runs_the_c_product_at_batch_one(tmp_path, monkeypatch, wdt, group):
    """A saved weight-only model in the Predictor: each layer one ``weight_only_linear`` bound
    to the C call once (not a dequantisation and a matmul), values as numpy's."""
    calls: list[bool] = []
    real = cpu_quant._c_call

    def spy(*a):
        c = real(*a)
        calls.append(c is not None)
        return c

    monkeypatch.setattr(cpu_quant, "_c_call", spy)
    fw.seed(1)
    model = fw.nn.Sequential(fw.nn.Linear(72, 20), fw.nn.ReLU(), fw.nn.Linear(20, 6, bias_attr=False))
    qm = weight_only_quantize(model, wdt, group_size=group)
    path = str(tmp_path / "m")
    fw.jit.save(qm, path, input_spec=[InputSpec([None, 72])])
    pred = fw.inference.create_predictor(fw.inference.Config(path))
    rng = np.random.default_rng(3)
    layers = [qm[0], qm[2]]
    ws = [
        dequantised(ly.weight.numpy(), ly.weight_scale.numpy(), wdt, group, ly.weight.shape[1])
        for ly in layers
    ]
    bound = []
    for _ in range(5):
        x = rng.standard_normal((1, 72)).astype(np.float32)
        got = pred.run([x])[0].numpy()
        h = np.maximum(x.astype(np.float64) @ ws[0] + layers[0].bias.numpy(), 0)
        np.testing.assert_allclose(got, h @ ws[1], rtol=1e-5, atol=1e-5)
        bound.append(len(calls))
    assert calls and all(calls)  # every weight_only_linear took the C product
    assert bound[2] == bound[4]  # later runs replay the bound calls: no checks, no casts per run


def test_c_product_is_taken_and_fp8_nan_codes_fall_back_to_numpy():
    """Batch 1 takes the C product for int8, int4 and fp8; a float8 weight holding a NaN code
    (which the vector widening would read as 480) goes to numpy and keeps its NaN."""
    if cpu_quant._c_program() is None:
        pytest.skip("no C compiler")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 40)).astype(np.float32)
    out = np.empty((1, 6), np.float32)
    for wdt in ("int8", "int4", "fp8"):
        q, s = weight_quantize(
            fw.to_tensor(rng.standard_normal((40, 6)).astype(np.float32)), "weight_only_" + wdt
        )
        assert cpu_quant._c_call(x, q.numpy(), s.numpy(), None, out, wdt, -1) is not None
    qn = q.numpy().copy()
    qn.view(np.uint8)[2, 5] = 0x7F  # NaN in channel 2
    assert cpu_quant._c_call(x, qn, s.numpy(), None, out, "fp8", -1) is None
    got = weight_only_linear(fw.to_tensor(x), fw.to_tensor(qn), weight_scale=s, weight_dtype="fp8").numpy()
    assert np.isnan(got[0, 2]) and not np.isnan(np.delete(got[0], 2)).any()
    want = x.astype(np.float64) @ dequantised(qn, s.numpy(), "fp8", -1, 40)
    np.testing.assert_allclose(np.delete(got[0], 2), np.delete(want[0], 2), rtol=1e-5, atol=1e-5)
