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
    import sys, numpy as np
    prefix, data, out = sys.argv[1], sys.argv[2], sys.argv[3]
    xs = [v for _, v in sorted(np.load(data).items())]
    import paddle
    from paddle import inference
    layer = paddle.jit.load(prefix)
    got = layer(*[paddle.to_tensor(x) for x in xs])
    got = got if isinstance(got, (list, tuple)) else [got]
    res = {f"jit_{k}": g.numpy() for k, g in enumerate(got)}
    config = inference.Config(prefix + ".json", prefix + ".pdiparams")
    config.disable_glog_info()
    pred = inference.create_predictor(config)
    for name, x in zip(pred.get_input_names(), xs):
        pred.get_input_handle(name).copy_from_cpu(x)
    pred.run()
    for k, name in enumerate(pred.get_output_names()):
        res[f"pred_{k}"] = pred.get_output_handle(name).copy_to_cpu()
    np.savez(out, **res)
    """
)


def run_paddle(prefix: str, xs: list[np.ndarray], tmp: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Outputs of real Paddle's jit.load and Predictor on the saved files."""
    data, out, script = (os.path.join(tmp, n) for n in ("in.npz", "out.npz", "run.py"))
    np.savez(data, **{f"x{k:02d}": x for k, x in enumerate(xs)})
    with open(script, "w") as f:
        f.write(_RUNNER)
    proc = subprocess.run([sys.executable, script, prefix, data, out], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = np.load(out)
    n = len([k for k in res if k.startswith("jit_")])
    return [res[f"jit_{k}"] for k in range(n)], [res[f"pred_{k}"] for k in range(n)]


def eager(layer: fw.nn.Layer, xs: list[np.ndarray]) -> list[np.ndarray]:
    with fw.no_grad():
        out = layer(*[fw.to_tensor(x) for x in xs])
    return [o.numpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


def roundtrip(layer: fw.nn.Layer, specs: list[InputSpec], xs: list[np.ndarray], tmp, rtol: float = 1e-5) -> None:
    layer.eval()
    prefix = os.path.join(str(tmp), "model")
    fw.jit.save(layer, prefix, input_spec=specs, format="paddle")
    assert os.path.exists(prefix + ".json") and os.path.exists(prefix + ".pdiparams")
    ref = eager(layer, xs)
    atol = rtol * max(float(np.abs(r).max()) for r in ref if r.dtype.kind == "f")
    back = fw.jit.load(prefix)(*[fw.to_tensor(x) for x in xs])
    back = [b.numpy() for b in (back if isinstance(back, (list, tuple)) else [back])]
    for b, r in zip(back, ref):
        np.testing.assert_allclose(b, r, rtol=rtol, atol=atol)
    if not HAVE_PADDLE:
        return
    jit, pred = run_paddle(prefix, xs, str(tmp))
    assert len(jit) == len(ref) == len(pred)
    for j, p, r in zip(jit, pred, ref):
        assert j.shape == r.shape and p.shape == r.shape
        np.testing.assert_allclose(j, r, rtol=rtol, atol=atol)
        np.testing.assert_allclose(p, r, rtol=rtol, atol=atol)


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
