"""The Transformer layers and the example models under ``to_static`` on forward: no graph
break, outputs equal to eager mode's (cpu and opencl)."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from conformance import models
from examples.train_lstm_classifier import LSTMClassifier
from examples.train_vit import SIZE, ViT


def _same(static_fn, eager_fn, *args, rtol=1e-4, atol=1e-5):
    with fw.no_grad():
        want = eager_fn(*args)
        got = static_fn(*args)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=atol)


def _static_forward_equals_eager(model, *args, rtol=1e-4, atol=1e-5):
    model.eval()
    eager = model.forward
    fw.jit.to_static(model)
    assert isinstance(model.forward, fw.jit.StaticFunction)
    _same(model, eager, *args, rtol=rtol, atol=atol)
    assert fw.jit.graph_breaks(model) == [], [str(b) for b in fw.jit.graph_breaks(model)]
    assert model.forward.programs, "no program was traced"


@pytest.mark.parametrize("name", models.MODELS)
def test_conformance_models(name, device):
    task = models.build(name, seed=0, device=device)
    x, _ = task.batch(0)
    _static_forward_equals_eager(task.model, x)


def test_example_lstm_classifier(device):
    fw.seed(0)
    with fw.device(device):
        model = LSTMClassifier()
    tokens = fw.to_tensor(np.random.default_rng(0).integers(0, 20, (4, 9)), device=device)
    _static_forward_equals_eager(model, tokens)


def test_example_vit(device):
    fw.seed(0)
    with fw.device(device):
        model = ViT()
    x = fw.to_tensor(
        np.random.default_rng(0).standard_normal((2, 1, SIZE, SIZE)).astype(np.float32), device=device
    )
    _static_forward_equals_eager(model, x)


def test_transformer_encoder_and_decoder_layers(device):
    fw.seed(0)
    rng = np.random.default_rng(1)
    with fw.device(device):
        enc = fw.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0)
        dec = fw.nn.TransformerDecoderLayer(16, 4, 32, dropout=0.0, normalize_before=True)
    src = fw.to_tensor(rng.standard_normal((2, 5, 16)).astype(np.float32), device=device)
    tgt = fw.to_tensor(rng.standard_normal((2, 3, 16)).astype(np.float32), device=device)
    _static_forward_equals_eager(enc, src)
    _static_forward_equals_eager(dec, tgt, src)


class _Encoder(fw.nn.Layer):
    """``@to_static`` on forward in the class body, as Paddle's models are usually written."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = fw.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)

    @fw.jit.to_static
    def forward(self, x):
        return self.layer(x).mean(axis=1)


def test_class_body_to_static_encoder_trains_like_eager(device):
    fw.seed(0)
    with fw.device(device):
        net = _Encoder()
    x = fw.to_tensor(np.random.default_rng(2).standard_normal((3, 4, 8)).astype(np.float32), device=device)
    out = net(x)
    out.sum().backward()
    grads = {n: p.grad.numpy() for n, p in net.named_parameters()}
    net.clear_gradients()
    want = _Encoder.forward.__wrapped__(net, x)
    want.sum().backward()
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    for n, p in net.named_parameters():
        np.testing.assert_allclose(grads[n], p.grad.numpy(), rtol=1e-3, atol=1e-5, err_msg=n)
    assert fw.jit.graph_breaks(net) == []
