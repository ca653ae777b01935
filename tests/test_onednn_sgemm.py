"""float32 products on oneDNN's ``dnnl_sgemm`` (plugins/cpu/gemm.py, ``OARLOCK_BLAS=onednn``):
values against numpy's float64 product, transposed operands read in place, the same bits on
every run, float64 left to numpy's BLAS, the ``alpha``/``beta`` form, and real Paddle and
torch still importing after a product. Each case runs in a fresh interpreter (the BLAS is
chosen once per process)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _has_onednn() -> bool:
    from plugins.cpu import bf16

    return bf16._onednn()[0] is not None


pytestmark = pytest.mark.skipif(
    not _has_onednn(), reason="oneDNN is not installed (pip install onednn-cpu-gomp)"
)


def _python(src: str, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OARLOCK_NUM", "OARLOCK_BLAS", "OMP_"))}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(src)],
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def _json(src: str, **env: str) -> dict:
    r = _python(src, **env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


_VALUES = """
import json, numpy as np, framework as fw
from plugins.cpu import gemm
rng = np.random.default_rng(0)
calls = []
_gemm_call = gemm.gemm_call
def spy(a, b, c, nt, *rest):
    call = _gemm_call(a, b, c, nt, *rest)
    calls.append((a.shape[0], a.shape[1], b.shape[1], call is not None))
    return call
gemm.gemm_call = spy

def bound(a, b, got):
    # float32 summation: |got - exact| <= k * 2^-23 * (|a| @ |b|) (plus the final rounding)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact, mag = a64 @ b64, np.abs(a64) @ np.abs(b64)
    k = a.shape[-1]
    return bool(np.all(np.abs(got.astype(np.float64) - exact) <= (k + 1) * 2.0**-23 * mag + 1e-30))

res = {"cases": []}
t = fw.to_tensor
for m, k, n in [(1, 1, 1), (7, 13, 5), (1, 300, 9), (300, 1, 900), (130, 257, 129), (128, 784, 1024),
                (1024, 128, 10), (517, 300, 200),
                (100, 1500, 300), (32, 2048, 64)]:  # a @ b^T of few rows and long k: as (b @ a^T)^T
    a = rng.standard_normal((m, k)).astype("float32"); b = rng.standard_normal((k, n)).astype("float32")
    before = len(calls)
    outs = {
        "nn": (t(a) @ t(b)).numpy(),
        "nt": fw.matmul(t(a), t(b.T.copy()), transpose_y=True).numpy(),
        "tn": fw.matmul(t(a.T.copy()), t(b), transpose_x=True).numpy(),
        "tt": fw.matmul(t(a.T.copy()), t(b.T.copy()), transpose_x=True, transpose_y=True).numpy(),
    }
    res["cases"].append([[m, k, n], {w: bound(a, b, o) for w, o in outs.items()},
                         sum(c[:3] == (m, k, n) for c in calls[before:]),  # not row_grain's probe
                         sum(c[:3] == (m, k, n) and c[3] for c in calls[before:]),
                         bool(np.array_equal(outs["nn"], a @ b))])
# strided views, a stack times a matrix, a batch
big = rng.standard_normal((400, 90)).astype("float32"); w = rng.standard_normal((60, 150)).astype("float32")
res["strided"] = bound(big[::2, 5:50], w[5:50, ::3], (t(big)[::2, 5:50] @ t(w)[5:50, ::3]).numpy())
s = rng.standard_normal((8, 128, 256)).astype("float32"); w = rng.standard_normal((256, 96)).astype("float32")
res["stack"] = bound(s, w, (t(s) @ t(w)).numpy())
q = rng.standard_normal((4, 64, 32)).astype("float32"); r = rng.standard_normal((4, 32, 48)).astype("float32")
res["batch"] = bound(q, r, (t(q) @ t(r)).numpy())
# the same bits on every run
a = rng.standard_normal((300, 700)).astype("float32"); b = rng.standard_normal((700, 500)).astype("float32")
outs = [(t(a) @ t(b)).numpy() for _ in range(20)]
res["same_bits"] = all(np.array_equal(o, outs[0]) for o in outs)
# float64 stays on numpy's BLAS: its own bits, one thread
a = rng.standard_normal((200, 300)); b = rng.standard_normal((300, 100))
res["f64_name"] = gemm.product_blas("d")[0]
res["name"] = gemm.product_blas("f")[0]
res["abi"] = gemm.product_blas("f")[1][1]
res["conv_blas"] = gemm.blas_name("f")
res["min_macs"] = gemm.MIN_MACS
res["f64_numpy_bits"] = bool(np.array_equal((t(a) @ t(b)).numpy(), a @ b))
print(json.dumps(res))
"""


@pytest.mark.parametrize("budget", ["1", "2"])
def test_values_layouts_and_bits(budget):
    res = _json(_VALUES, OARLOCK_BLAS="onednn", OARLOCK_NUM_THREADS=budget)
    assert res["name"] == "onednn" and res["abi"] == 2, res
    assert res["conv_blas"] == "numpy"  # conv.c calls a cblas: never oneDNN's
    for shape, ok, asked, ran, numpy_bits in res["cases"]:
        assert all(ok.values()), (shape, ok)
        if shape[0] * shape[1] * shape[2] >= res["min_macs"]:
            assert asked >= 4 and ran == asked, (shape, asked, ran)  # every 2-D product went to gemm.c
        else:  # a small product: numpy's matmul, its bits
            assert ran == 0 and numpy_bits, (shape, ran, numpy_bits)
    assert res["strided"] and res["stack"] and res["batch"], res
    assert res["same_bits"]
    assert res["f64_name"] == "numpy" and res["f64_numpy_bits"]


_AXPBY = """
import json, numpy as np, framework as fw
from plugins.cpu import gemm
fw.ones([1]).numpy()
rng = np.random.default_rng(1)
res = {}

def check(name, a, b, c, alpha, beta, nt):
    a64, b64, c64 = a.astype(np.float64), b.astype(np.float64), c.astype(np.float64)
    want = alpha * (a64 @ b64) + beta * c64
    mag = abs(alpha) * (np.abs(a64) @ np.abs(b64)) + abs(beta) * np.abs(c64)
    got = c.copy()
    gemm.gemm_call(a, b, got, nt, alpha, beta)()
    # float32 summation of k terms, then the update: (k + 2) roundings of the magnitudes at most
    res[name] = bool(np.all(np.abs(got - want) <= (a.shape[1] + 2) * 2.0**-23 * mag)) and not np.array_equal(got, c)

for nt in (1, 2):
    # an SGD step of a weight from its gradient's product: x^T (read transposed) @ dy
    x = rng.standard_normal((128, 784)).astype("float32")
    check(f"sgd{nt}", x.T, rng.standard_normal((128, 1024)).astype("float32"),
          rng.standard_normal((784, 1024)).astype("float32"), -0.01, 1.0, nt)
    # the input's gradient form, a @ b^T of few rows (gemm.c computes it as (b @ a^T)^T)
    w = rng.standard_normal((512, 1024)).astype("float32")
    check(f"nt{nt}", rng.standard_normal((128, 1024)).astype("float32"), w.T,
          rng.standard_normal((128, 512)).astype("float32"), 0.5, 2.0, nt)
# the same with a result past the 4 MB buffer a thread keeps (allocated for the call)
w = rng.standard_normal((8200, 1024)).astype("float32")
check("nt_big", rng.standard_normal((128, 1024)).astype("float32"), w.T,
      rng.standard_normal((128, 8200)).astype("float32"), 1.0, 0.0, 1)
print(json.dumps(res))
"""


def test_alpha_beta_update_in_place():
    """``c = alpha a @ b + beta c``: an SGD step of a weight from its gradient's product, and
    the transposed form."""
    res = _json(_AXPBY, OARLOCK_BLAS="onednn", OARLOCK_NUM_THREADS="2")
    assert res == {"sgd1": True, "nt1": True, "sgd2": True, "nt2": True, "nt_big": True}, res


_TRAIN = """
import json, numpy as np, framework as fw
rng = np.random.default_rng(0)
x = rng.standard_normal((64, 96)).astype("float32")
w = (rng.standard_normal((96, 80)) * 0.1).astype("float32")
layer = fw.nn.Linear(96, 80)
layer.weight.set_value(w); layer.bias.set_value(np.zeros(80, np.float32))
f = fw.jit.to_static(layer)
for _ in range(2):
    layer.clear_gradients()
    y = f(fw.to_tensor(x))
    (y * y).sum().backward()
y64 = x.astype(np.float64) @ w
gw = x.astype(np.float64).T @ (2 * y64)
print(json.dumps({"y": float(np.max(np.abs(y.numpy() - y64))),
                  "gw": float(np.max(np.abs(layer.weight.grad.numpy() - gw)) / np.max(np.abs(gw)))}))
"""


def test_a_static_linear_layers_gradient():
    """The forward and the weight's gradient (``matmul_t``, transposed in place) of a program."""
    res = _json(_TRAIN, OARLOCK_BLAS="onednn", OARLOCK_NUM_THREADS="1")
    assert res["y"] < 1e-4 and res["gw"] < 1e-5, res


def test_real_paddle_and_torch_still_import_after_a_product():
    """oneDNN is the plugin's private copy (bf16.py): Paddle and torch, each with its own
    oneDNN, import and run after a float32 product in the same process."""
    have = [m for m in ("paddle", "torch") if importlib.util.find_spec(m) is not None]
    if not have:
        pytest.skip("neither real Paddle nor torch is installed")
    code = (
        "import numpy as np, framework as fw\n"
        "from plugins.cpu import gemm\n"
        "a = fw.to_tensor(np.ones((256, 256), np.float32))\n"
        "assert float((a @ a).numpy()[0, 0]) == 256.0 and gemm.product_blas('f')[0] == 'onednn'\n"
    )
    if "paddle" in have:
        code += (
            "import paddle\n"
            "y = paddle.nn.functional.layer_norm(paddle.to_tensor([[1.0, 2.0, 3.0, 4.0]]), [4])\n"
            "print('paddle', round(float(y.numpy()[0, 0]), 4))\n"
        )
    if "torch" in have:
        code += (
            "import torch\n"
            "l = torch.nn.Linear(4, 2); l.weight.data.fill_(1.0); l.bias.data.zero_()\n"
            "print('torch', float(l(torch.ones(3, 4)).sum()))\n"
        )
    r = _python(code, OARLOCK_BLAS="onednn")
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout.split("\n")
    assert ("paddle -1.3416" in out) == ("paddle" in have) and ("torch 24.0" in out) == ("torch" in have), (
        r.stdout
    )


def test_onednn_asked_for_but_missing_is_named():
    code = (
        "from plugins.cpu import bf16\n"
        "bf16._onednn = lambda: (None, 'oneDNN not installed (pip install onednn-cpu-gomp)')\n"
        "import framework as fw; (fw.ones([4, 4]) @ fw.ones([4, 4])).numpy()\n"
    )
    r = _python(code, OARLOCK_BLAS="onednn")
    assert r.returncode != 0
    assert "OARLOCK_BLAS=onednn, but oneDNN not installed (pip install onednn-cpu-gomp)" in r.stderr, (
        r.stderr[-2000:]
    )


_AUTO = """
import json, os, numpy as np, framework as fw
from plugins.cpu import gemm
a = np.ones((64, 64), np.float32)
(fw.to_tensor(a) @ fw.to_tensor(a)).numpy()
print(json.dumps([gemm.product_blas("f")[0], gemm.blas_name("f"), gemm.product_blas("d")[0]]))
"""


def test_auto_choice_is_kept_per_machine(tmp_path):
    """``auto`` times the BLASes present once and every later process reads the same choice
    from the kernel cache (the same BLAS, so the same bits)."""
    first = _json(_AUTO, OARLOCK_CACHE_DIR=str(tmp_path))
    again = _json(_AUTO, OARLOCK_CACHE_DIR=str(tmp_path))
    assert first == again
    prod, cblas, f64 = first
    assert prod in ("numpy", "mkl", "onednn") and cblas in ("numpy", "mkl") and f64 in ("numpy", "mkl")
    assert prod == "onednn" or prod == cblas
