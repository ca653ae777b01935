"""fw.onnx.export (Paddle's paddle.onnx.export signature): the examples' MLP and CNN and an
attention block written as ONNX from the program IR, accepted by onnx.checker, run by
onnxruntime with outputs equal to Oarlock's (1e-5) at two batch sizes (a dynamic axis); the
examples' tiny Llama, ViT and LSTM classifier exported, run by onnxruntime and imported back
on OpenCL, equal to Oarlock each time."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from conformance.models import MLP, SmallCNN, TinyLlama
from examples.train_lstm_classifier import LSTMClassifier
from examples.train_vit import SIZE, ViT
from framework.static import InputSpec

from .conftest import DEVICES

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
F = fw.nn.functional


class Block(fw.nn.Layer):
    """Layer norm, attention (matmul, softmax), GELU MLP."""

    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.ln = fw.nn.LayerNorm(dim)
        self.q, self.k, self.v = fw.nn.Linear(dim, dim), fw.nn.Linear(dim, dim), fw.nn.Linear(dim, dim)
        self.fc = fw.nn.Linear(dim, dim)

    def forward(self, x):
        h = self.ln(x)
        a = F.softmax(fw.matmul(self.q(h), self.k(h), transpose_y=True) / 4.0, axis=-1)
        h = x + fw.matmul(a, self.v(h))
        return h + F.gelu(self.fc(h))


CASES = {
    "mlp": (MLP, [None, 32]),
    "cnn": (SmallCNN, [None, 1, 12, 12]),
    "block": (Block, [None, 5, 16]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_export_round_trips_through_onnxruntime(name, tmp_path):
    make, shape = CASES[name]
    fw.seed(0)
    net = make()
    net.eval()
    path = str(tmp_path / name)
    fw.onnx.export(net, path, input_spec=[InputSpec(shape, "float32", "x")], opset_version=17)
    model = onnx.load(path + ".onnx")
    onnx.checker.check_model(model, full_check=True)
    dim0 = model.graph.input[0].type.tensor_type.shape.dim[0]
    assert dim0.dim_param == "batch"  # the None dim is a dynamic axis
    assert model.opset_import[0].version == 17
    sess = ort.InferenceSession(path + ".onnx", providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for batch in (3, 5):
        x = rng.standard_normal([batch, *shape[1:]]).astype(np.float32)
        (got,) = sess.run(None, {"x": x})
        with fw.no_grad():
            want = net(fw.to_tensor(x)).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_export_takes_paddles_forms_and_names_what_it_cannot_write(tmp_path):
    fn = fw.jit.to_static(lambda x: x * 2 + 1, input_spec=[InputSpec([None, 3], "float32", "x")])
    fw.onnx.export(fn, str(tmp_path / "f.onnx"))  # a to_static function; the spec it carries
    (y,) = ort.InferenceSession(str(tmp_path / "f.onnx")).run(None, {"x": np.ones((2, 3), np.float32)})
    np.testing.assert_array_equal(y, np.full((2, 3), 3.0, np.float32))

    with pytest.raises(fw.OarlockError, match=r"\[onnx.export\] op 'op.argsort' has no ONNX translation"):
        fw.onnx.export(
            fw.jit.to_static(fw.argsort), str(tmp_path / "g"), input_spec=[InputSpec([2], "float32", "x")]
        )
    with pytest.raises(ValueError, match="opset_version takes 13 to 21, got 9"):
        fw.onnx.export(fn, str(tmp_path / "h"), opset_version=9)


EXAMPLES = {  # small sizes of the examples' models: what they are made of, not their size
    "tiny_llama": (
        lambda: TinyLlama(64, dim=32, heads=2, layers=1, hidden=48, max_seq=16),
        InputSpec([None, 8], "int64", "ids"),
        lambda rng, b: rng.integers(0, 64, (b, 8)),
    ),
    "vit": (
        lambda: ViT(dim=16, depth=1, heads=2),
        InputSpec([None, 1, SIZE, SIZE], "float32", "x"),
        lambda rng, b: rng.standard_normal((b, 1, SIZE, SIZE)).astype(np.float32),
    ),
    "lstm": (
        lambda: LSTMClassifier(embed=8, hidden=12),
        InputSpec([None, 6], "int64", "tokens"),
        lambda rng, b: rng.integers(0, 64, (b, 6)),
    ),
}
#: where the imported model runs again: OpenCL where installed
BACK = next((d for d in DEVICES if d.startswith("opencl")), DEVICES[0])


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_examples_models_round_trip(name, tmp_path):
    make, spec, data = EXAMPLES[name]
    fw.seed(0)
    net = make()
    net.eval()
    path = str(tmp_path / name)
    fw.onnx.export(net, path, input_spec=[spec])
    sess = ort.InferenceSession(path + ".onnx", providers=["CPUExecutionProvider"])
    back = fw.onnx.load(path + ".onnx", device=BACK, compile=False)
    x = data(np.random.default_rng(1), 2)
    with fw.no_grad():
        want = net(fw.to_tensor(x)).numpy()
        again = back(x).numpy()
    (got,) = sess.run(None, {spec.name: x})
    scale = np.abs(want).max()
    assert got.shape == want.shape == again.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)
    np.testing.assert_allclose(again, want, rtol=1e-5, atol=1e-5 * scale)
