"""fw.jit.save(..., format="paddle"): Paddle 3's inference files, loaded by real Paddle 3
(``paddle.jit.load`` and the ``paddle.inference`` Predictor) and by Oarlock's own import,
compared with Oarlock's eager outputs.

Each Paddle run happens in a child process: Paddle and Oarlock's compiled kernels are kept
out of one another's process (and a crash of Paddle's reads is a failure, not a lost run)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import framework as fw
from framework.jit.paddle_format.export import PaddleExportError
from framework.static import InputSpec

HAVE_PADDLE = importlib.util.find_spec("paddle") is not None
needs_paddle = pytest.mark.skipif(not HAVE_PADDLE, reason="real Paddle (paddlepaddle) is not installed")

F = fw.nn.functional

_RUNNER = textwrap.dedent(
    """
    import os, sys, numpy as np
    prefix, data, out = sys.argv[1], sys.argv[2], sys.argv[3]
    saved = np.load(data)
    cases = sorted({k.split("_")[0] for k in saved})
    import paddle
    from paddle import inference
    layer = paddle.jit.load(prefix)
    params = prefix + ".pdiparams" if os.path.exists(prefix + ".pdiparams") else ""
    config = inference.Config(prefix + ".json", params)
    config.disable_glog_info()
    pred = inference.create_predictor(config)
    res = {}
    for c in cases:
        xs = [saved[k] for k in sorted(k for k in saved if k.startswith(c + "_"))]
        got = layer(*[paddle.to_tensor(x) for x in xs])
        got = got if isinstance(got, (list, tuple)) else [got]
        res.update({f"{c}_jit_{k}": g.numpy() for k, g in enumerate(got)})
        for name, x in zip(pred.get_input_names(), xs):
            pred.get_input_handle(name).copy_from_cpu(x)
        pred.run()
        for k, name in enumerate(pred.get_output_names()):
            res[f"{c}_pred_{k}"] = pred.get_output_handle(name).copy_to_cpu()
    np.savez(out, **res)
    """
)


def run_paddle_many(
    prefix: str, cases: list[list[np.ndarray]], tmp: str
) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
    """Outputs of real Paddle's jit.load and Predictor on the saved files, for each input set
    (one child process for all of them)."""
    data, out, script = (os.path.join(tmp, n) for n in ("in.npz", "out.npz", "run.py"))
    np.savez(data, **{f"c{c:03d}_x{k:02d}": x for c, xs in enumerate(cases) for k, x in enumerate(xs)})
    with open(script, "w") as f:
        f.write(_RUNNER)
    proc = subprocess.run(
        [sys.executable, script, prefix, data, out], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = np.load(out)
    got = []
    for c in range(len(cases)):
        n = len([k for k in res if k.startswith(f"c{c:03d}_jit_")])
        got.append(
            ([res[f"c{c:03d}_jit_{k}"] for k in range(n)], [res[f"c{c:03d}_pred_{k}"] for k in range(n)])
        )
    return got


def run_paddle(prefix: str, xs: list[np.ndarray], tmp: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Outputs of real Paddle's jit.load and Predictor on the saved files."""
    return run_paddle_many(prefix, [xs], tmp)[0]


def eager(layer: fw.nn.Layer, xs: list[np.ndarray]) -> list[np.ndarray]:
    with fw.no_grad():
        out = layer(*[fw.to_tensor(x) for x in xs])
    return [o.numpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


def roundtrip(
    layer: fw.nn.Layer, specs: list[InputSpec], xs: list[np.ndarray], tmp, rtol: float = 1e-5
) -> str:
    """Save ``layer`` in Paddle's format; Oarlock's load, Paddle's jit.load and Paddle's
    Predictor on the files all give the eager outputs. Returns the files' prefix."""
    return roundtrip_many(layer, specs, [xs], tmp, rtol)


def roundtrip_many(
    layer: fw.nn.Layer, specs: list[InputSpec], cases: list[list[np.ndarray]], tmp, rtol: float = 1e-5
) -> str:
    """:func:`roundtrip` for several input sets (the same files)."""
    layer.eval()
    prefix = os.path.join(str(tmp), "model")
    fw.jit.save(layer, prefix, input_spec=specs, format="paddle")
    with open(prefix + ".json") as f:
        weighted = any(op["#"] == "p" for op in json.load(f)["program"]["regions"][0]["blocks"][0]["ops"])
    assert os.path.exists(prefix + ".pdiparams") == weighted  # as Paddle: no weights, no file
    refs = [eager(layer, xs) for xs in cases]
    loaded = fw.jit.load(prefix)
    for xs, ref in zip(cases, refs):
        atol = rtol * max([float(np.abs(r).max()) for r in ref if r.dtype.kind == "f"] or [0.0])
        back = loaded(*[fw.to_tensor(x) for x in xs])
        back = [b.numpy() for b in (back if isinstance(back, (list, tuple)) else [back])]
        for b, r in zip(back, ref):
            np.testing.assert_allclose(b, r, rtol=rtol, atol=atol)
    if not HAVE_PADDLE:
        return prefix
    for (jit, pred), ref in zip(run_paddle_many(prefix, cases, str(tmp)), refs):
        assert len(jit) == len(ref) == len(pred)
        atol = rtol * max([float(np.abs(r).max()) for r in ref if r.dtype.kind == "f"] or [0.0])
        for j, p, r in zip(jit, pred, ref):
            assert j.shape == r.shape and p.shape == r.shape
            np.testing.assert_allclose(j, r, rtol=rtol, atol=atol)
            np.testing.assert_allclose(p, r, rtol=rtol, atol=atol)
    return prefix


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


@needs_paddle
def test_mlp_dynamic_batch(tmp_path):
    fw.seed(1)
    net = fw.nn.Sequential(fw.nn.Linear(4, 16), fw.nn.ReLU(), fw.nn.Linear(16, 3), fw.nn.Tanh())
    roundtrip(net, [InputSpec([None, 4], "float32", "x")], [rand(5, 4)], tmp_path)


def test_file_layout(tmp_path):
    """The JSON is PIR format 4 with one pd_op.data per input (-1 for a None dim) and one
    parameter per weight; the .pdiparams holds the weights in sorted-name order."""
    from framework.jit.paddle_format import read_params, read_program

    net = fw.nn.Linear(4, 3)
    prefix = os.path.join(str(tmp_path), "m")
    fw.jit.save(net, prefix, [InputSpec([None, 4], "float32", "x")], format="paddle")
    with open(prefix + ".json") as f:
        doc = json.load(f)
    assert doc["base_code"]["magic"] == "pir" and doc["base_code"]["version"] == 4
    prog = read_program(prefix + ".json")
    assert [(i.name, i.shape) for i in prog.inputs] == [("x", (-1, 4))]
    w = read_params(prefix + ".pdiparams", list(prog.params))
    np.testing.assert_array_equal(w["weight"], net.weight.numpy())
    np.testing.assert_array_equal(w["bias"], net.bias.numpy())


class ConvBN(fw.nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.conv = fw.nn.Conv2D(3, 8, 3, padding=1)
        self.bn = fw.nn.BatchNorm2D(8)
        self.conv2 = fw.nn.Conv2D(8, 4, 3, stride=2, padding=(1, 0))
        self.fc = fw.nn.Linear(4, 5)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        y = F.adaptive_avg_pool2d(self.conv2(y), 1).flatten(1)
        return self.fc(y)


def _with_running_stats(net: fw.nn.Layer) -> fw.nn.Layer:
    """Running statistics away from 0/1, so BatchNorm's eval arithmetic is exercised."""
    for name, b in net.named_buffers():
        if name.endswith("_mean"):
            b.set_value(fw.to_tensor(rand(*b.shape, seed=3) * 0.1))
        elif name.endswith("_variance"):
            b.set_value(fw.to_tensor(np.abs(rand(*b.shape, seed=4)) + 0.5))
    return net


@needs_paddle
def test_cnn_batchnorm_eval(tmp_path):
    fw.seed(2)
    net = _with_running_stats(ConvBN())
    roundtrip(net, [InputSpec([None, 3, 16, 16], "float32", "img")], [rand(2, 3, 16, 16)], tmp_path)


@needs_paddle
def test_resnet18(tmp_path):
    from framework.vision.models import resnet18

    fw.seed(3)
    net = _with_running_stats(resnet18(num_classes=10))
    roundtrip(net, [InputSpec([None, 3, 32, 32], "float32", "x")], [rand(2, 3, 32, 32)], tmp_path)


@needs_paddle
def test_mobilenet_v2(tmp_path):
    """paddle.vision's MobileNetV2 (depthwise convolutions, ReLU6, inverted residuals) through
    framework.vision.models, run by real Paddle's jit.load and Predictor."""
    from framework.vision.models import mobilenet_v2

    fw.seed(6)
    net = _with_running_stats(mobilenet_v2(num_classes=10))
    roundtrip(net, [InputSpec([None, 3, 32, 32], "float32", "x")], [rand(2, 3, 32, 32)], tmp_path)


class Decoder(fw.nn.Layer):
    """Transposed convolutions (grouped, strided, with output padding) and an argsort."""

    def __init__(self) -> None:
        super().__init__()
        self.up1 = fw.nn.Conv2DTranspose(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.up2 = fw.nn.Conv2DTranspose(6, 2, (2, 3), stride=(1, 2), padding=(0, 1), dilation=(2, 1))

    def forward(self, x):
        y = self.up2(F.relu(self.up1(x)))
        return y, fw.argsort(y.flatten(1), axis=1, descending=True), fw.argsort(x, axis=1)


@needs_paddle
def test_transposed_conv_and_argsort(tmp_path):
    fw.seed(7)
    roundtrip(Decoder(), [InputSpec([None, 4, 5, 5], "float32", "x")], [rand(3, 4, 5, 5)], tmp_path)


class Attention(fw.nn.Layer):
    """Embedding, softmax(Q K^T / sqrt(d) + mask) V, and causal attention (static lengths)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = fw.nn.Embedding(20, 16)
        self.q = fw.nn.Linear(16, 16)
        self.k = fw.nn.Linear(16, 16)
        self.v = fw.nn.Linear(16, 16)

    def forward(self, ids, mask):
        h = self.emb(ids)
        q, k, v = self.q(h), self.k(h), self.v(h)
        s = fw.matmul(q, k, transpose_y=True) / 4.0 + mask
        o = fw.matmul(F.softmax(s, axis=-1), v)
        b, n = ids.shape
        qh, kh, vh = (t.reshape([b, n, 2, 8]) for t in (q, k, v))
        c = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True).reshape([b, n, 16])
        return o, F.gelu(c)


@needs_paddle
def test_attention_embedding_causal(tmp_path):
    fw.seed(4)
    ids = np.random.default_rng(5).integers(0, 20, (2, 6)).astype("int64")
    mask = np.where(np.random.default_rng(6).random((2, 6, 6)) < 0.3, -1e4, 0.0).astype("float32")
    specs = [InputSpec([2, 6], "int64", "ids"), InputSpec([2, 6, 6], "float32", "mask")]
    roundtrip(Attention(), specs, [ids, mask], tmp_path)


@needs_paddle
def test_hapi_model_save_inference(tmp_path):
    fw.seed(5)
    net = fw.nn.Sequential(fw.nn.Linear(3, 6), fw.nn.Sigmoid(), fw.nn.Linear(6, 2))
    model = fw.Model(net, inputs=[InputSpec([None, 3], "float32", "x")])
    prefix = os.path.join(str(tmp_path), "infer")
    model.save(prefix, training=False)
    x = rand(4, 3)
    jit, pred = run_paddle(prefix, [x], str(tmp_path))
    ref = eager(net, [x])[0]
    np.testing.assert_allclose(jit[0], ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pred[0], ref, rtol=1e-5, atol=1e-6)


def test_op_without_lowering_names_op_and_layer(tmp_path):
    class Unfold(fw.nn.Layer):
        def forward(self, x):
            return F.unfold(x * 2.0, 2)

    with pytest.raises(PaddleExportError, match=r"op 'op\.unfold' \(#\d+ of the program\) of layer Unfold"):
        fw.jit.save(
            Unfold(),
            os.path.join(str(tmp_path), "c"),
            [InputSpec([1, 2, 4, 4], "float32", "x")],
            format="paddle",
        )


def test_dtype_paddle_lacks_names_op_or_input(tmp_path):
    class ToUint32(fw.nn.Layer):
        def forward(self, x):
            return (x * 2).astype("uint32").astype("float32") + 1

    prefix = os.path.join(str(tmp_path), "u")
    with pytest.raises(
        PaddleExportError, match=r"op 'op\.cast' \(#\d+ of the program\) of layer ToUint32 has dtype uint32"
    ):
        fw.jit.save(ToUint32(), prefix, [InputSpec([2, 3], "float32", "x")], format="paddle")
    with pytest.raises(PaddleExportError, match=r"input 'x' of layer ToUint32 has dtype uint32"):
        fw.jit.save(ToUint32(), prefix, [InputSpec([2, 3], "uint32", "x")], format="paddle")
    assert not os.path.exists(prefix + ".json")


def test_bad_format_named():
    with pytest.raises(ValueError, match="format='onnx'"):
        fw.jit.save(fw.nn.Linear(2, 2), "/nonexistent/x", [InputSpec([1, 2], "float32")], format="onnx")
