"""bfloat16 products on the cpu plugin (plugins/cpu/bf16.py): on the CPU's bf16 units through
oneDNN where it is installed and the CPU has them, else float32 products; either way float32
accumulation and one rounding to bfloat16, checked against numpy's float32 product of the
same bf16 inputs (and float64 for the bound)."""

from __future__ import annotations

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import framework as fw

BF16 = np.dtype(ml_dtypes.bfloat16)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _bf16(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(BF16)


def _check(got: fw.Tensor, a: np.ndarray, b: np.ndarray) -> None:
    """``got`` is bf16 and within the bound of one rounding (2^-8 relative) of the exact
    product plus float32 summation error (k * 2^-23 of the sum of |terms|)."""
    assert got.dtype == BF16
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = np.matmul(a64, b64)
    mag = np.matmul(np.abs(a64), np.abs(b64))
    k = a.shape[-1]
    g = got.numpy().astype(np.float64)
    assert g.shape == exact.shape
    bound = 2.0**-8 * np.abs(exact) + k * 2.0**-23 * mag + 1e-30
    bad = np.abs(g - exact) > bound
    assert not bad.any(), f"{bad.sum()} elements off, e.g. got {g[bad][:3]} want {exact[bad][:3]}"
    # and the same as numpy's float32 product, rounded, wherever that is not a rounding tie apart
    ref = np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(BF16).astype(np.float64)
    ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(ref), 1e-30))) - 7)
    assert (np.abs(g - ref) <= ulp + k * 2.0**-23 * mag).all()


@pytest.mark.parametrize(
    "m,k,n",
    # small ones (the plain path) and ones past bf16.MIN_MACS (oneDNN where it runs): odd sizes,
    # a single row, k = 1, rows not a multiple of the 64-row blocks
    [
        (1, 1, 1),
        (7, 13, 5),
        (1, 300, 9),
        (65, 257, 33),
        (1, 4099, 67),
        (300, 1, 900),
        (130, 257, 129),
        (256, 256, 256),
    ],
)
def test_values_odd_shapes(m, k, n):
    a, b = _bf16((m, k), m), _bf16((k, n), n + 1)
    _check(fw.matmul(fw.to_tensor(a), fw.to_tensor(b)), a, b)


@pytest.mark.parametrize("tx,ty", [(False, True), (True, False), (True, True)])
def test_transposes_read_in_place(tx, ty):
    # 1200 x 200 x 150: past bf16.MIN_MACS_PER_THREAD twice, cut in blocks of rows on two threads
    a, b = _bf16((1200, 200), 1), _bf16((200, 150), 2)
    x = a.T.copy() if tx else a
    y = b.T.copy() if ty else b
    got = fw.matmul(fw.to_tensor(x), fw.to_tensor(y), transpose_x=tx, transpose_y=ty)
    _check(got, a, b)


def test_strided_operands():
    big_a, big_b = _bf16((400, 90), 3), _bf16((60, 150), 4)
    a, b = big_a[::2, 5:50], big_b[5:50, ::3]  # neither rows nor columns contiguous in a's view
    got = fw.to_tensor(big_a)[::2, 5:50] @ fw.to_tensor(big_b)[5:50, ::3]
    _check(got, np.ascontiguousarray(a), np.ascontiguousarray(b))


@pytest.mark.parametrize(
    "sa,sb",
    [
        ((4, 31, 24), (24, 19)),
        ((4, 310, 24), (24, 190)),  # a stack times one matrix: one product of the stacked rows
        ((3, 170, 80), (3, 80, 21)),
        ((2, 3, 90, 160), (3, 160, 50)),  # the batch broadcast
        ((150, 120), (2, 120, 70)),
        ((1, 70, 1), (5, 1, 4000)),
    ],
)
def test_batched_and_broadcast(sa, sb):
    a, b = _bf16(sa, 5), _bf16(sb, 6)
    _check(fw.matmul(fw.to_tensor(a), fw.to_tensor(b)), a, b)


def test_vector_operands():
    a, b = _bf16((370,), 7), _bf16((370, 1100), 8)
    got = fw.matmul(fw.to_tensor(a), fw.to_tensor(b))
    _check(got, a, b)
    got = fw.matmul(fw.to_tensor(b.T.copy()), fw.to_tensor(a))
    _check(got, b.T.copy(), a)


def test_special_values_and_empty():
    a, b = _bf16((66, 80), 9), _bf16((80, 64), 10)
    a[1, 2], a[3, :] = np.inf, np.nan
    got = fw.matmul(fw.to_tensor(a), fw.to_tensor(b)).numpy().astype(np.float32)
    with np.errstate(invalid="ignore"):
        ref = np.matmul(a.astype(np.float32), b.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    z = fw.matmul(fw.to_tensor(np.zeros((3, 0), BF16)), fw.to_tensor(np.zeros((0, 4), BF16)))
    np.testing.assert_array_equal(z.numpy().astype(np.float32), np.zeros((3, 4), np.float32))


def test_gradients_against_numpy():
    a, b = _bf16((96, 140), 11), _bf16((140, 36), 12)
    x, y = fw.to_tensor(a, stop_gradient=False), fw.to_tensor(b, stop_gradient=False)
    g = _bf16((96, 36), 13)
    (fw.matmul(x, y) * fw.to_tensor(g)).sum().backward()
    _check(x.grad, g, b.T.copy())
    _check(y.grad, a.T.copy(), g)


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    e = dict(os.environ, PYTHONPATH=ROOT, **env)
    return subprocess.run(
        [sys.executable, "-c", code], env=e, cwd=ROOT, capture_output=True, text=True, timeout=120
    )


_PROBE = """
import numpy as np, ml_dtypes, framework as fw
bf = np.dtype(ml_dtypes.bfloat16)
rng = np.random.default_rng(0)
a, b = rng.standard_normal((3, 150, 170)).astype(bf), rng.standard_normal((170, 130)).astype(bf)
got = fw.matmul(fw.to_tensor(a), fw.to_tensor(b)).numpy()
ref = np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(bf)
print(fw.get_device_properties('cpu').extra['bf16_gemm'])
print(int((got.view(np.uint16) != ref.view(np.uint16)).sum()))
"""


def test_fallback_forced_by_environment():
    # the plain path: numpy's float32 product rounded, bit for bit
    r = _run(_PROBE, OARLOCK_BF16_GEMM="fp32")
    assert r.returncode == 0, r.stderr
    what, differ = r.stdout.split("\n")[:2]
    assert what == "float32 products (OARLOCK_BF16_GEMM=fp32)"
    assert differ == "0"


def test_route_stated_in_device_properties():
    what = fw.get_device_properties("cpu").extra["bf16_gemm"]
    flags = open("/proc/cpuinfo").read().split("\n\n")[0].split() if os.path.exists("/proc/cpuinfo") else []
    units = [u for u in ("amx_bf16", "avx512_bf16") if u in flags]
    try:
        import importlib.metadata

        importlib.metadata.distribution("onednn-cpu-gomp")
        onednn = True
    except importlib.metadata.PackageNotFoundError:
        onednn = False
    if os.environ.get("OARLOCK_BF16_GEMM"):
        pytest.skip("OARLOCK_BF16_GEMM is set in this environment")
    if onednn and units:
        assert what.startswith("oneDNN ") and what.endswith("on " + ", ".join(units)), what
    else:
        assert what.startswith("float32 products ("), what


def test_bad_choice_is_named():
    r = _run(_PROBE, OARLOCK_BF16_GEMM="amx-please")
    assert r.returncode != 0
    assert "OARLOCK_BF16_GEMM must be one of auto, onednn, fp32, got 'amx-please'" in r.stderr


def test_forced_onednn_without_it_is_an_error_or_runs():
    r = _run(_PROBE, OARLOCK_BF16_GEMM="onednn")
    if r.returncode == 0:
        assert r.stdout.startswith("oneDNN "), r.stdout
    else:
        assert "OARLOCK_BF16_GEMM=onednn, but oneDNN" in r.stderr, r.stderr


def test_denormals_as_documented():
    # the bf16 units flush denormal operands and results (bf16.py's NOTE); the plain path keeps them
    a, b = np.zeros((128, 128), BF16), np.zeros((128, 128), BF16)
    a[:, 0], b[0, :] = 1e-39, 1.0  # a denormal operand
    a[:, 1], b[1, :] = 1e-20, 1e-19  # normal operands, a denormal product
    got = fw.matmul(fw.to_tensor(a), fw.to_tensor(b)).numpy().astype(np.float32)[0, :2]
    plain = np.matmul(a.astype(np.float32), b.astype(np.float32))[0, :2]
    assert plain[0] > 0 and plain[1] > 0
    if fw.get_device_properties("cpu").extra["bf16_gemm"].startswith("oneDNN"):
        np.testing.assert_array_equal(got, [0.0, 0.0])
    else:
        np.testing.assert_array_equal(got, plain.astype(BF16).astype(np.float32))


def test_real_paddle_still_imports_after_a_onednn_product():
    """The plugin loads its oneDNN under a private SONAME: loaded as the wheel ships it (SONAME
    ``libdnnl.so.3``), real Paddle, imported after a bf16 product in the same process, was
    handed that library instead of its own and failed to import (undefined symbol)."""
    pytest.importorskip("paddle", reason="real Paddle is not installed", exc_type=ImportError)
    code = (
        "import numpy as np, framework as fw\n"
        "a = fw.to_tensor(np.ones((512, 512), np.float32)).astype('bfloat16')\n"
        "assert float((a @ a).astype('float32').numpy()[0, 0]) == 512.0\n"
        "route = fw.get_device_properties('cpu').extra['bf16_gemm']\n"
        "import paddle\n"
        "y = paddle.nn.functional.layer_norm(paddle.to_tensor([[1.0, 2.0, 3.0, 4.0]]), [4])\n"
        "print(route, '|', round(float(y.numpy()[0, 0]), 4))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1].endswith("| -1.3416"), r.stdout
