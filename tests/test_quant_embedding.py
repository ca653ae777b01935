"""Weight-only quantised embeddings (embedding_quantize, weight_only_embedding,
WeightOnlyEmbedding, weight_only_quantize(embedding=True)) in int8, int4 and fp8, and fp8
weight-only linear layers: against numpy's abs-max quantisation, ml_dtypes' float8 and real
Paddle's weight_quantize scales (its CPU kernel takes float16)."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

import framework as fw
from adapter_api import OpArgumentError
from framework.nn.quant import (
    WeightOnlyEmbedding,
    embedding_quantize,
    weight_only_embedding,
    weight_only_linear,
    weight_quantize,
)
from framework.quantization import weight_only_quantize

_QMAX = {"int8": 127, "int4": 7, "fp8": 448}


def _np_quantize(w: np.ndarray, dtype: str, group: int) -> tuple[np.ndarray, np.ndarray]:
    """numpy reference: per-row (or per-group of dims) abs-max scales; dequantised table."""
    v, d = w.shape
    g = d if group == -1 else group
    ng = -(-d // g)
    pad = np.zeros((v, ng * g), np.float32)
    pad[:, :d] = w
    scale = np.abs(pad.reshape(v, ng, g)).max(-1) / _QMAX[dtype]  # [v, ng]
    full = np.repeat(scale, g, axis=1)[:, :d]
    safe = np.where(full == 0, 1, full)
    r = w / safe
    if dtype == "fp8":
        q = np.clip(r, -448, 448).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    else:  # halves away from zero, as Paddle's kernel
        q = np.clip(np.sign(r) * np.floor(np.abs(r) + 0.5), -_QMAX[dtype], _QMAX[dtype])
    return (scale[:, 0] if group == -1 else scale.T), (q * full).astype(np.float32)


@pytest.mark.parametrize("dtype", ["int8", "int4", "fp8"])
@pytest.mark.parametrize("group", [-1, 16])
def test_lookup_matches_numpy_dequantised_rows(dtype, group):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((30, 40)).astype(np.float32)
    w[3] = 0.0  # an all-zero row: scale 0, rows 0
    q, s = embedding_quantize(fw.to_tensor(w), f"weight_only_{dtype}", group_size=group)
    want_scale, table = _np_quantize(w, dtype, group)
    np.testing.assert_allclose(s.numpy(), want_scale, rtol=1e-6)
    assert q.shape == ((15, 40) if dtype == "int4" else (30, 40))
    assert str(q.dtype) == ("float8_e4m3fn" if dtype == "fp8" else "int8")
    ids = rng.integers(0, 30, (4, 7))
    ids[0, :3] = [3, 0, 29]
    got = weight_only_embedding(fw.to_tensor(ids), q, s, dtype, group_size=group).numpy()
    assert got.shape == (4, 7, 40)
    np.testing.assert_allclose(got, table[ids], rtol=1e-6, atol=1e-7)
    err = np.abs(got - w[ids])  # within half a step (int), or float8's relative 2**-4
    if dtype == "fp8":
        assert (err <= np.abs(w[ids]) / 16 + 1e-6).all()
    else:
        step = np.repeat(want_scale[:, None] if group == -1 else want_scale.T, 1, 1)
        step = step if group == -1 else np.repeat(step, group, axis=1)[:, :40]
        assert (err <= step[ids] / 2 + 1e-6).all()


@pytest.mark.parametrize("algo,qmax", [("weight_only_int8", 127), ("weight_only_int4", 7)])
@pytest.mark.parametrize("group", [-1, 64])
def test_scales_match_paddle_weight_quantize_of_the_transposed_table(algo, qmax, group):
    paddle = pytest.importorskip("paddle")
    rng = np.random.default_rng(1)
    w16 = rng.standard_normal((32, 64)).astype(np.float16)  # [vocab, dim]; Paddle's CPU kernel is float16
    _, ps = paddle.nn.quant.weight_quantize(
        paddle.to_tensor(w16.T.copy()), algo=algo, arch=80, group_size=group
    )
    q, s = embedding_quantize(fw.to_tensor(w16.astype(np.float32)), algo, group_size=group)
    assert tuple(s.shape) == tuple(ps.shape)
    np.testing.assert_allclose(s.numpy(), ps.numpy().astype(np.float32), rtol=2e-3)
    want = np.abs(w16.astype(np.float32)).max(1) / qmax
    np.testing.assert_allclose(s.numpy().reshape(-1), want, rtol=1e-6)


def test_padding_idx_and_layer_and_model_conversion():
    fw.seed(0)
    emb = fw.nn.Embedding(20, 8, padding_idx=2)
    layer = WeightOnlyEmbedding(emb, "int8")
    ids = fw.to_tensor([[2, 5, 19]])
    out = layer(ids).numpy()
    assert (out[0, 0] == 0).all()
    np.testing.assert_allclose(
        out[0, 1:], emb(ids).numpy()[0, 1:], atol=np.abs(emb.weight.numpy()).max() / 127
    )

    class Tiny(fw.nn.Layer):
        def __init__(self):
            super().__init__()
            self.embed_tokens_of_a_long_name = fw.nn.Embedding(64, 32)
            self.head = fw.nn.Linear(32, 64)

        def forward(self, x):
            return self.head(self.embed_tokens_of_a_long_name(x))

    m = Tiny()
    x = fw.to_tensor(np.arange(12).reshape(3, 4))
    ref = m(x).numpy()
    for dtype, tol in (("int8", 0.02), ("int4", 0.3), ("fp8", 0.1)):
        qm = weight_only_quantize(m, dtype, embedding=True)
        assert type(qm.embed_tokens_of_a_long_name).__name__ == "WeightOnlyEmbedding"
        assert type(qm.head).__name__ == "WeightOnlyLinear"
        assert type(m.head).__name__ == "Linear"  # not in place
        got = qm(x).numpy()
        assert np.abs(got - ref).max() <= tol * np.abs(ref).max()
    only_linear = weight_only_quantize(m, "int8")
    assert type(only_linear.embed_tokens_of_a_long_name).__name__ == "Embedding"


def test_quantised_state_dict_round_trips_through_fw_save(tmp_path):
    qm = weight_only_quantize(fw.nn.Sequential(fw.nn.Embedding(16, 8)), "fp8", embedding=True)
    state = qm.state_dict()
    p = os.path.join(tmp_path, "q.safetensors")
    fw.save(state, p)
    back = fw.load(p)
    for k, v in state.items():
        assert str(back[k].dtype) == str(v.dtype)
        np.testing.assert_array_equal(back[k].numpy().astype(np.float32), v.numpy().astype(np.float32))


def test_safetensors_whose_header_length_reads_like_a_pickle_loads(tmp_path):
    # a header of 0x0280 + ... bytes starts the file 80 02, a pickle's protocol-2 mark
    p = os.path.join(tmp_path, "m.safetensors")
    for n in range(1, 600):
        fw.save({"k" * n: fw.ones([2])}, p)
        with open(p, "rb") as f:
            head = f.read(2)
        if head[0] == 0x80 and 2 <= head[1] <= 5:
            break
    else:
        pytest.fail("no key length gives a header length starting 80 02..05")
    back = fw.load(p)
    assert list(back) == ["k" * n]
    np.testing.assert_array_equal(back["k" * n].numpy(), np.ones(2, np.float32))


def test_fp8_weight_only_linear_matches_numpy():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((48, 6)).astype(np.float32)
    x = rng.standard_normal((3, 48)).astype(np.float32)
    q, s = weight_quantize(fw.to_tensor(w), "weight_only_fp8")
    scale = np.abs(w).max(0) / 448
    np.testing.assert_allclose(s.numpy(), scale, rtol=1e-6)
    deq = (w / scale).astype(ml_dtypes.float8_e4m3fn).astype(np.float32) * scale
    got = weight_only_linear(fw.to_tensor(x), q, weight_scale=s, weight_dtype="fp8").numpy()
    np.testing.assert_allclose(got, x @ deq, rtol=1e-5, atol=1e-5)


def test_errors_name_the_api_and_argument():
    w = fw.randn([5, 4])
    with pytest.raises(
        OpArgumentError, match=r"\[embedding_quantize\] weight_only_int4 .* vocab must be even, got 5"
    ):
        embedding_quantize(w, "weight_only_int4")
    with pytest.raises(OpArgumentError, match=r"\[weight_quantize\] algo must be one of"):
        embedding_quantize(w, "int3")
    q, s = embedding_quantize(w)
    with pytest.raises(
        OpArgumentError, match=r"\[weight_only_embedding\] ids must be integers, got dtype float32"
    ):
        weight_only_embedding(fw.ones([2]), q, s)
    with pytest.raises(
        OpArgumentError, match=r"\[weight_only_embedding\] weight must be a 2-d float8_e4m3fn"
    ):
        weight_only_embedding(fw.to_tensor([1]), q, s, "fp8")
    with pytest.raises(
        OpArgumentError, match=r"\[WeightOnlyEmbedding\] weight_dtype must be 'int8', 'int4' or 'fp8'"
    ):
        WeightOnlyEmbedding(fw.nn.Embedding(4, 2), "int2")


def test_generate_example_reports_quantised_bytes_and_loss(capsys):
    from conformance.models import build
    from examples.generate_tiny_llama import main

    r = main(
        [
            "--quant",
            "int4",
            "--group-size",
            "16",
            "--steps",
            "0",
            "--tokens",
            "3",
            "--repeat",
            "1",
            "--eval-batches",
            "1",
            "--greedy",
            "--sensitive-dtype",
            "int4",  # the embedding and head in int4 too (int8 by default for int4)
        ]
    )
    model = build("tiny_llama", seed=0, device="cpu").model
    float_bytes, want = 0, 0
    quantised = set()
    for name, layer in model.named_sublayers():
        if isinstance(layer, (fw.nn.Linear, fw.nn.Embedding)):
            a, b = layer.weight.shape  # int4: half a byte a weight, a float32 scale per 16
            rows, cols = (b, a) if isinstance(layer, fw.nn.Linear) else (a, b)  # scale per row of cols
            want += rows * cols // 2 + 4 * rows * -(-cols // 16)
            quantised.add(name + ".weight")
    for k, t in model.state_dict().items():
        n = int(np.prod(t.shape)) * 4
        float_bytes += n
        want += 0 if k in quantised else n
    assert r["float_bytes"] == float_bytes
    assert r["bytes"] == want
    assert abs(r["loss"] - r["float_loss"]) < 0.05 * r["float_loss"]
    assert "int4 weights:" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"])
def test_every_float8_code_casts_to_its_exact_float32(name):
    codes = np.arange(256, dtype=np.uint8).view(getattr(ml_dtypes, name)).reshape(16, 16)
    got = fw.cast(fw.to_tensor(codes), "float32").numpy()
    want = np.array([[float(v) for v in row] for row in codes], np.float32)  # Python's view of each code
    np.testing.assert_array_equal(got, want)  # NaN codes compare equal as NaN
    assert got[::3, ::5].shape == fw.cast(fw.to_tensor(codes[::3, ::5]), "float32").shape
    np.testing.assert_array_equal(fw.cast(fw.to_tensor(codes[::3, ::5]), "float32").numpy(), want[::3, ::5])
