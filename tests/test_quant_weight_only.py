"""The int4 / int8 weight-only quantisers of ``framework.quantization.weight_only`` (clip
search, asymmetric zero points, GPTQ) against numpy references written here independently:
the stored integers bit-exact, the products within float tolerance; and the layers
``weight_only_quantize`` builds with them (int8 embedding and head by default for int4), run
eagerly and through the Predictor."""

from __future__ import annotations

import os

import numpy as np
import pytest

import framework as fw
from adapter_api import OpArgumentError
from framework.nn.quant import WeightOnlyEmbedding, WeightOnlyLinear, weight_quantize
from framework.quantization import weight_only_quantize
from framework.quantization.weight_only import AsymmetricWeightOnlyLinear, quantize_groups
from framework.static import InputSpec


def rha(v):
    return np.where(v >= 0, np.floor(v + 0.5), -np.floor(-v + 0.5))


def ref_group(col, bits, asym, ratio):
    """Scalar reference for one group of one channel: (q list, scale, zero)."""
    if asym:
        levels = 2**bits - 1
        hi, lo = max(col.max() * ratio, 0.0), min(col.min() * ratio, 0.0)
        s = (hi - lo) / levels or 1.0
        z = min(max(rha(-lo / s), 0), levels)
        q = np.array([min(max(rha(v / s) + z, 0), levels) - 2 ** (bits - 1) for v in col])
        return q, s, z
    qmax = 2 ** (bits - 1) - 1
    s = np.abs(col).max() * ratio / qmax or 1.0
    return np.array([min(max(rha(v / s), -qmax), qmax) for v in col]), s, 0.0


def ref_deq(q, s, z, bits, asym):
    return (q + (2 ** (bits - 1) - z if asym else 0)) * s


def ref_quantize(w, bits, group, asym, ratios, weight=None):
    k, n = w.shape
    g = k if group == -1 else group
    q = np.zeros((n, k))
    deq = np.zeros((k, n))
    for j in range(n):
        for lo in range(0, k, g):
            col = w[lo : lo + g, j]
            best = None
            for r in ratios:
                qq, s, z = ref_group(col, bits, asym, r)
                e = (ref_deq(qq, s, z, bits, asym) - col) ** 2
                err = float((e if weight is None else e * weight[lo : lo + g]).sum())
                if best is None or err < best[0]:
                    best = (err, qq, s, z)
            _, qq, s, z = best
            q[j, lo : lo + g] = qq
            deq[lo : lo + g, j] = ref_deq(qq, s, z, bits, asym)
    return q, deq


def deq_of(q, s, c, k, group):
    g = k if group == -1 else group
    rows = np.repeat(np.arange(s.shape[0]), g)[:k]
    return (q.T.astype(np.float64) * s[rows]) + (0.0 if c is None else c[rows])


W = np.random.default_rng(7).standard_normal((100, 12)) * np.linspace(0.2, 3.0, 12)


@pytest.mark.parametrize("bits,group", [(4, 32), (4, -1), (8, 48)])
@pytest.mark.parametrize("asym", [False, True], ids=["sym", "asym"])
@pytest.mark.parametrize("method", ["absmax", "search"])
def test_quantised_integers_match_reference(bits, group, asym, method):
    ratios = np.linspace(1.0, 0.5, 20) if method == "search" else [1.0]
    q, s, c = quantize_groups(W, bits, group, asymmetric=asym, method=method)
    rq, rdeq = ref_quantize(W, bits, group, asym, ratios)
    np.testing.assert_array_equal(q, rq)
    np.testing.assert_allclose(deq_of(q, s, c, 100, group), rdeq, rtol=1e-12, atol=1e-12)
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    assert q.min() >= lo and q.max() <= hi and (c is None) == (not asym)


def test_symmetric_absmax_equals_weight_quantize():
    from plugins.cpu.quant import unpack_int4

    w32 = W.astype(np.float32)
    for wdt, bits, group in (("int4", 4, 32), ("int8", 8, -1)):
        q, s, _ = quantize_groups(w32.astype(np.float64), bits, group, method="absmax")
        fq, fs = weight_quantize(fw.to_tensor(w32), "weight_only_" + wdt, group_size=group)
        np.testing.assert_array_equal(q, unpack_int4(fq.numpy()) if bits == 4 else fq.numpy())
        np.testing.assert_allclose(s if group != -1 else s[0], fs.numpy(), rtol=1e-6)
        lay = weight_only_quantize(fw.nn.Sequential(fw.nn.Linear(100, 12)), wdt, group, sensitive_dtype=wdt)
        assert type(lay[0]) is WeightOnlyLinear  # absmax, symmetric: Paddle's weight_quantize layer


def test_search_and_asymmetric_reduce_the_error_of_absmax():
    def err(**kw):
        q, s, c = quantize_groups(W, 4, 32, **kw)
        return float(np.square(deq_of(q, s, c, 100, 32) - W).sum())

    base = err(method="absmax")
    assert err(method="search") < base
    assert err(method="absmax", asymmetric=True) < base
    assert err(method="search", asymmetric=True) < err(method="search")


def ref_gptq(w, h, bits, group, asym, damp=0.01):
    """GPTQ as sequential optimal-brain-surgeon steps: after quantising row t, the remaining
    rows move by -err * Hinv_rest[:, 0] / Hinv_rest[0, 0] with the inverse of the Hessian of the
    rows not yet quantised (recomputed each step, no Cholesky)."""
    w = w.copy()
    k, n = w.shape
    h = h + damp * np.mean(np.diag(h)) * np.eye(k)
    q = np.zeros((n, k))
    g = k if group == -1 else group
    s = z = None
    for t in range(k):
        if t % g == 0:
            blk = w[t : t + g]
            params = [ref_group(blk[:, j], bits, asym, 1.0) for j in range(n)]
            s = np.array([p[1] for p in params])
            z = np.array([p[2] for p in params])
        qt = np.zeros(n)
        for j in range(n):  # quantise with the group's fixed scale / zero
            if asym:
                qt[j] = min(max(rha(w[t, j] / s[j]) + z[j], 0), 2**bits - 1) - 2 ** (bits - 1)
            else:
                qmax = 2 ** (bits - 1) - 1
                qt[j] = min(max(rha(w[t, j] / s[j]), -qmax), qmax)
        q[:, t] = qt
        err = w[t] - ref_deq(qt, s, z, bits, asym)
        hinv = np.linalg.inv(h[t:, t:])
        w[t + 1 :] -= np.outer(hinv[1:, 0] / hinv[0, 0], err)
    return q


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("asym", [False, True], ids=["sym", "asym"])
def test_gptq_matches_reference_and_beats_absmax_on_the_outputs(asym, bits):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((256, 40)) @ rng.standard_normal((40, 40))  # correlated inputs
    w = rng.standard_normal((40, 10))
    h = x.T @ x
    q, s, c = quantize_groups(w, bits, 16, asymmetric=asym, method="gptq", hessian=h)
    np.testing.assert_array_equal(q, ref_gptq(w, h, bits, 16, asym))
    qa, sa, ca = quantize_groups(w, bits, 16, asymmetric=asym, method="absmax")
    out_err = np.square(x @ deq_of(q, s, c, 40, 16) - x @ w).sum()
    base_err = np.square(x @ deq_of(qa, sa, ca, 40, 16) - x @ w).sum()
    assert out_err < 0.8 * base_err


class Net(fw.nn.Layer):
    def __init__(self):
        super().__init__()
        self.embed = fw.nn.Embedding(20, 64)
        self.fc = fw.nn.Linear(64, 70)
        self.head = fw.nn.Linear(70, 20)

    def forward(self, ids):
        return self.head(fw.nn.functional.relu(self.fc(self.embed(ids))))


def test_int4_keeps_embedding_and_head_int8_by_default_and_asymmetric_layer_computes():
    fw.seed(1)
    net = Net()
    calib = [fw.to_tensor(np.random.default_rng(i).integers(0, 20, (4, 8))) for i in range(3)]
    m = weight_only_quantize(
        net, "int4", 32, embedding=True, method="gptq", asymmetric=True, calibration=calib
    )
    assert isinstance(m.embed, WeightOnlyEmbedding) and m.embed.weight_dtype == "int8"
    assert isinstance(m.head, WeightOnlyLinear) and m.head.weight_dtype == "int8" and m.head.group_size == -1
    assert type(m.fc) is AsymmetricWeightOnlyLinear and m.fc.weight.shape == (35, 64)
    m4 = weight_only_quantize(net, "int4", 32, embedding=True, sensitive_dtype="int4")
    assert m4.embed.weight_dtype == "int4" and m4.head.weight_dtype == "int4"
    # the asymmetric product against numpy: unpack the nibbles, q * s + offset, matmul
    b = m.fc.weight.numpy().view(np.uint8)
    lo, hi = (b & 15).astype(np.int64), (b >> 4).astype(np.int64)
    q = np.stack([np.where(lo >= 8, lo - 16, lo), np.where(hi >= 8, hi - 16, hi)], 1).reshape(70, 64)
    w = deq_of(
        q, m.fc.weight_scale.numpy().astype(np.float64), m.fc.weight_offset.numpy().astype(np.float64), 64, 32
    )
    x = np.random.default_rng(5).standard_normal((3, 64)).astype(np.float32)
    want = x.astype(np.float64) @ w + net.fc.bias.numpy()
    np.testing.assert_allclose(m.fc(fw.to_tensor(x)).numpy(), want, rtol=1e-4, atol=1e-4)
    assert np.abs(w - net.fc.weight.numpy()).max() < 0.3 * np.abs(net.fc.weight.numpy()).max()


def test_asymmetric_model_saved_and_served(tmp_path):
    fw.seed(2)
    net = fw.nn.Sequential(fw.nn.Linear(64, 48), fw.nn.ReLU(), fw.nn.Linear(48, 8))
    m = weight_only_quantize(net, "int4", 32, method="search", asymmetric=True, sensitive_dtype="int4")
    path = os.path.join(tmp_path, "asym")
    fw.jit.save(m, path, input_spec=[InputSpec([None, 64])])
    pred = fw.inference.create_predictor(fw.inference.Config(path))
    x = np.random.default_rng(0).standard_normal((1, 64)).astype(np.float32)
    np.testing.assert_allclose(pred.run([x])[0].numpy(), m(fw.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-5)


def test_bad_arguments_name_the_api():
    net = fw.nn.Sequential(fw.nn.Linear(8, 4))
    with pytest.raises(OpArgumentError, match=r"\[weight_only_quantize\] method must be one of"):
        weight_only_quantize(net, "int4", method="awq")
    with pytest.raises(OpArgumentError, match=r"\[weight_only_quantize\] method='gptq' needs calibration"):
        weight_only_quantize(net, "int4", method="gptq")
    with pytest.raises(OpArgumentError, match=r"asymmetric=True takes int8 or int4"):
        weight_only_quantize(net, "fp8", asymmetric=True)
    with pytest.raises(OpArgumentError, match=r"\[quantize_groups\] method 'gptq' needs the inputs' hessian"):
        quantize_groups(W, 4, 32, method="gptq")


def test_generate_example_runs_gptq_int4_and_ptq(capsys):
    """The example's --method gptq (int8 embedding and head by default) and --quant ptq paths:
    the bytes it reports are the state dict's at their dtypes."""
    from examples.generate_tiny_llama import main

    common = ["--steps", "0", "--tokens", "2", "--repeat", "1", "--eval-batches", "1", "--greedy"]
    r = main(["--quant", "int4", "--group-size", "32", "--method", "gptq", "--calib-batches", "2", *common])
    out = capsys.readouterr().out
    assert "int4 weights:" in out and "same tokens: True" in out
    vocab, dim = 46, 64  # tiny_verse's characters, the tiny Llama's width
    # the int8 embedding and head: a byte a weight and a float32 scale per row / channel
    sensitive = 2 * (vocab * dim + 4 * vocab)
    assert r["bytes"] < 0.2 * r["float_bytes"] and r["bytes"] > sensitive
    r = main(["--quant", "ptq", "--calib-batches", "2", *common])
    assert "ptq weights:" in capsys.readouterr().out and r["bytes"] < 0.35 * r["float_bytes"]
