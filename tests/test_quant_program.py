"""Quantised models on the program path: ``fw.jit.save`` of weight-only and PTQ models, the
Predictor running them (against the eager model), the DRR rules that turn a traced int8
dequantisation + matmul back into ``weight_only_linear``, and :func:`quantize_program` on a
saved float program (against eager weight-only quantisation of the same weights)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import framework as fw
from adapter_api import OpArgumentError
from framework.ir import passes
from framework.jit.io import read_program, write_program
from framework.quantization import PTQ, QuantConfig, quantize_program, weight_only_quantize
from framework.quantization.observers import AbsmaxObserver
from framework.static import InputSpec
from framework.testing import kernels_removed


def _mlp() -> fw.nn.Layer:
    fw.seed(0)
    return fw.nn.Sequential(fw.nn.Linear(64, 32), fw.nn.ReLU(), fw.nn.Linear(32, 8, bias_attr=False))


def _ops(path: str) -> list[str]:
    return [op.name for op in read_program(path)[0].walk()]


def _predict(path: str, x: np.ndarray) -> np.ndarray:
    pred = fw.inference.create_predictor(fw.inference.Config(path))
    return pred.run([x])[0].numpy()


@pytest.mark.parametrize("wdt,group", [("int8", -1), ("int4", 32)])
def test_saved_weight_only_model_runs_in_the_predictor(tmp_path, wdt, group):
    model = weight_only_quantize(_mlp(), wdt, group_size=group)
    x = np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32)
    path = str(tmp_path / "m")
    fw.jit.save(model, path, input_spec=[InputSpec([None, 64])])
    ops = _ops(path)
    assert (
        ops.count("op.weight_only_linear") == 2 and "op.matmul" not in ops
    )  # the cpu kernel: one op a layer
    np.testing.assert_allclose(_predict(path, x), model(fw.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-6)
    params = read_program(path)[1]
    assert params["0.weight"].dtype == np.int8


def test_drr_rules_fuse_a_traced_int8_dequantisation(tmp_path):
    model = weight_only_quantize(_mlp(), "int8")
    grouped = weight_only_quantize(_mlp(), "int8", group_size=16)
    x = np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)
    for m in (model, grouped):
        src, dst = str(tmp_path / "traced"), str(tmp_path / "fused")
        with kernels_removed("weight_only_linear"):  # traced where no plugin has the kernel
            fw.jit.save(m, src, input_spec=[InputSpec([None, 64])])
        assert "op.weight_only_linear" not in _ops(src) and "op.cast" in _ops(src)
        prog, params, consts, structure, names = read_program(src)
        stats = passes.run_pipeline(prog, ["fuse", "dce"], consts, "cpu")
        assert stats[0].rewritten == 2
        assert [op.name for op in prog.walk()].count("op.weight_only_linear") == 2
        assert "op.cast" not in [op.name for op in prog.walk()]
        write_program(dst, prog, params, consts, structure, names)
        np.testing.assert_allclose(_predict(dst, x), m(fw.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("wdt,group", [("int8", -1), ("int4", 16)])
def test_quantize_program_matches_eager_weight_only_quantisation(tmp_path, wdt, group):
    model = _mlp()
    src, dst = str(tmp_path / "fp32"), str(tmp_path / "q")
    fw.jit.save(model, src, input_spec=[InputSpec([None, 64])])
    info = quantize_program(src, dst, wdt, group_size=group)
    assert sorted(info["quantized"]) == ["0.weight", "2.weight"]
    assert info["bytes_after"] < 0.5 * info["bytes_before"]  # small layers: the file's header counts
    params = read_program(dst)[1]
    assert "0.weight" not in params and params["0.weight.qweight"].dtype == np.int8
    assert params["0.weight.qweight"].numpy().nbytes == 64 * 32 // (1 if wdt == "int8" else 2)
    x = np.random.default_rng(2).standard_normal((4, 64)).astype(np.float32)
    eager = weight_only_quantize(model, wdt, group_size=group)(fw.to_tensor(x)).numpy()
    np.testing.assert_allclose(_predict(dst, x), eager, rtol=1e-5, atol=1e-6)
    with pytest.raises(Exception, match=r"\[quantize_program\] weight_dtype"):
        quantize_program(src, dst, "int2")


def test_ptq_model_saves_and_serves(tmp_path):
    model = _mlp()
    ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver(quant_axis=1)))
    observed = ptq.quantize(model)
    rng = np.random.default_rng(3)
    observed(fw.to_tensor(rng.standard_normal((16, 64)).astype(np.float32)))
    int8 = ptq.convert(observed)
    path = str(tmp_path / "ptq")
    fw.jit.save(int8, path, input_spec=[InputSpec([None, 64])])
    assert read_program(path)[1]["0.weight"].dtype == np.int8
    assert os.path.getsize(path + ".safetensors") < 0.5 * 4 * (64 * 32 + 32 * 8)
    x = rng.standard_normal((5, 64)).astype(np.float32)
    np.testing.assert_allclose(_predict(path, x), int8(fw.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_quantised_kv_decoder_serves_repeated_steps_like_eager(tmp_path):
    """The Predictor replays a decoding step on the cpu plugin's stream: the fused kernel runs
    in stream order with the others (run 2 and later read what run 1's ops wrote)."""
    from conformance.models import LlamaKVDecoder, TinyLlama

    fw.seed(5)
    model = TinyLlama(12, dim=32, heads=2, layers=1, hidden=40, max_seq=8)
    model.eval()
    q = weight_only_quantize(model, "int4", group_size=16)
    dec = LlamaKVDecoder(q)
    shape = dec.cache_shape(1)
    spec = [InputSpec(["batch", 1], "int64", name="ids"), InputSpec(["batch"], "int64", name="pos")]
    spec += [InputSpec(["batch", *shape[1:]], "float32", name=n) for n in ("k0", "v0")]
    path = str(tmp_path / "dec")
    fw.jit.save(dec, path, input_spec=spec)
    assert _ops(path).count("op.weight_only_linear") == 6
    pred = fw.inference.create_predictor(fw.inference.Config(path))
    rng = np.random.default_rng(6)
    caches = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]
    for pos in (0, 3, 0):
        ins = [np.array([[pos + 1]], np.int64), np.array([pos], np.int64), *caches]
        with fw.no_grad():
            want = dec(*[fw.to_tensor(a) for a in ins])
        got = pred.run(ins)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore::Warning")
def test_saved_quantised_program_runs_on_every_device(tmp_path, device):
    """A program saved on cpu (the fused op) served on each device: where the plugin has no
    ``weight_only_linear`` kernel the executor runs its decomposition (an int8 cast a plugin
    lacks falls back to the cpu plugin)."""
    model = weight_only_quantize(_mlp(), "int4", group_size=16)
    path = str(tmp_path / "m")
    fw.jit.save(model, path, input_spec=[InputSpec([None, 64])])
    x = np.random.default_rng(7).standard_normal((2, 64)).astype(np.float32)
    config = fw.inference.Config(path)
    config.set_device(device)
    got = fw.inference.create_predictor(config).run([x])[0].numpy()
    np.testing.assert_allclose(got, model(fw.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-5)


class _LM(fw.nn.Layer):
    """An embedding, a hidden layer and an output head over the vocabulary."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = fw.nn.Embedding(40, 64)
        self.fc = fw.nn.Linear(64, 64)
        self.head = fw.nn.Linear(64, 40)

    def forward(self, ids):
        return self.head(fw.nn.functional.relu(self.fc(self.embed(ids))))


@pytest.mark.parametrize("method,asym", [("absmax", False), ("search", True)])
def test_quantize_program_keeps_the_head_int8_and_takes_the_eager_recipes(tmp_path, method, asym):
    """int4 with the head in int8 per channel (found by its columns = the gathered table's rows),
    the clip search and zero points (one weight_only_linear with weight_offset): the program
    gives what weight_only_quantize's model gives."""
    fw.seed(4)
    model = _LM()
    src, dst = str(tmp_path / "fp32"), str(tmp_path / "q")
    fw.jit.save(model, src, input_spec=[InputSpec([None, 5], "int64")])
    info = quantize_program(src, dst, "int4", group_size=16, method=method, asymmetric=asym)
    assert sorted(info["quantized"]) == ["fc.weight", "head.weight"]
    prog, params = read_program(dst)[:2]
    wol = {
        op.operands[1].defining_op.attrs["name"]: op
        for op in prog.walk()
        if op.name == "op.weight_only_linear"
    }
    assert wol["head.weight.qweight"].attrs == {"group_size": -1, "weight_dtype": "int8"}
    assert params["head.weight.qweight"].shape == (40, 64)  # int8, not packed
    fc = wol["fc.weight.qweight"]
    assert fc.attrs["weight_dtype"] == "int4" and fc.attrs.get("zero_point", False) is asym
    assert len(fc.operands) == (4 if asym else 3)  # x, q, scale (the bias is the program's add), offset
    ids = np.random.default_rng(3).integers(0, 40, (2, 5))
    eager = weight_only_quantize(model, "int4", group_size=16, method=method, asymmetric=asym)
    np.testing.assert_allclose(_predict(dst, ids), eager(fw.to_tensor(ids)).numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(OpArgumentError, match=r"\[quantize_program\] method must be 'absmax' or 'search'"):
        quantize_program(src, dst, "int4", method="gptq")
