"""fw.inference: a tiny Llama trained a few steps, saved with fw.jit.save on cpu and served by
a Predictor (Paddle's Config / create_predictor / handles) on every device, with no Python
model code: the same logits as the trained eager model."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import framework as fw
from framework.static import InputSpec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


@pytest.fixture(scope="module")
def trained_llama(tmp_path_factory):
    """The examples' tiny Llama after 3 AdamW steps under to_static (cpu), saved; and the
    trained model's eager logits on a batch of held-out ids."""
    from conformance.models import build

    task = build("tiny_llama", seed=0, device="cpu", static=True)
    with fw.device("cpu"):
        for step in range(3):
            task.train_step(step)
    path = str(tmp_path_factory.mktemp("llama") / "tiny_llama")
    fw.jit.save(task.model, path, input_spec=[InputSpec([None, 64], "int64", name="ids")])
    ids = np.random.default_rng(7).integers(0, len(task.info["vocab"]), (3, 64)).astype(np.int64)
    model = task.model
    model.forward = model.forward._fn  # the eager forward: an independent path to the logits
    with fw.no_grad():
        logits = model(fw.to_tensor(ids)).numpy()
    return path, ids, logits


def test_predictor_serves_the_trained_llama_on_every_device(trained_llama, device):
    path, ids, logits = trained_llama
    config = fw.inference.Config(path)
    config.set_device(device)
    predictor = fw.inference.create_predictor(config)
    assert predictor.get_input_names() == ["ids"]
    handle = predictor.get_input_handle("ids")
    handle.reshape(ids.shape)
    handle.copy_from_cpu(ids)
    predictor.run()
    out = predictor.get_output_handle(predictor.get_output_names()[0])
    got = out.copy_to_cpu()
    assert out.shape() == [3, 64, logits.shape[-1]]
    np.testing.assert_allclose(got, logits, rtol=1e-4, atol=1e-4)
    # another batch size through the same program; Paddle's run(inputs) form
    (res,) = predictor.run([ids[:1]])
    np.testing.assert_allclose(res.numpy(), logits[:1], rtol=1e-4, atol=1e-4)


def test_paddle_device_spellings():
    c = fw.inference.Config("m.oarlock")
    assert c.prog_file() == "m.oarlock" and c.params_file() == "m.safetensors"
    c.enable_use_gpu(100, 1)
    assert c.device() == "cuda:1" and c.use_gpu()
    c.enable_custom_device("opencl", 0)
    assert c.device() == "opencl:0" and not c.use_gpu()
    c.disable_gpu()
    assert c.device() == "cpu"


def test_predictor_errors_name_what_to_do(trained_llama, tmp_path):
    path, ids, _ = trained_llama
    predictor = fw.inference.create_predictor(fw.inference.Config(path))
    with pytest.raises(fw.OarlockError, match="copy_from_cpu"):
        predictor.run()
    with pytest.raises(fw.OarlockError, match=r"no input named 'x'.*\['ids'\]"):
        predictor.get_input_handle("x")
    with pytest.raises(fw.OarlockError, match="takes int64 of rank 2"):
        predictor.get_input_handle("ids").copy_from_cpu(ids.astype(np.float32))
    with pytest.raises(fw.OarlockError, match="call predictor.run"):
        predictor.get_output_handle("out0").copy_to_cpu()
    with pytest.raises(fw.jit.ProgramFileError, match="no program"):
        fw.inference.create_predictor(fw.inference.Config(str(tmp_path / "missing")))


def test_generation_with_a_kv_cache_through_the_saved_program(tmp_path, device):
    """examples/generate_tiny_llama.py's path: one cached decoding step saved as a program and
    served by the Predictor gives, token after token, the logits of the eager model re-reading
    the whole sequence (no cache), and so the same greedy continuation."""
    from conformance.models import TinyLlama
    from examples.generate_tiny_llama import generate_cached, generate_eager, save_decoder

    fw.manual_seed(0)
    model = TinyLlama(20, dim=32, heads=2, layers=2, hidden=48, max_seq=16)
    model.eval()
    save_decoder(model, str(tmp_path / "dec"))
    config = fw.inference.Config(str(tmp_path / "dec"))
    config.set_device(device)
    predictor = fw.inference.create_predictor(config)
    assert predictor.get_input_names() == ["ids", "pos", "k0", "v0", "k1", "v1"]
    prompt = [3, 1, 4, 1, 5]
    cached, lc = generate_cached(predictor, prompt, 8, seed=0, temperature=0.0)
    eager, le = generate_eager(model.to(device), prompt, 8, seed=0, temperature=0.0, device=device)
    for a, b in zip(lc, le):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert cached == eager and len(cached) == 13
