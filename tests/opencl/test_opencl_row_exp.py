"""The float exp, tanh and erf of OpenCL row kernels (PoCL, a CPU device): plain arithmetic the
driver's loop vectoriser widens instead of the driver's functions. Run for real against numpy's
float64 exp over the whole float32 domain (overflow, underflow through the subnormals,
infinities, NaN), tanh over [-20, 20] and erf over [-6, 6], as generated primitives and inside
the generated softmax, silu and gelu.
"""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import framework as fw
from framework import compiler
from framework._src import device as _dev
from framework.compiler import eager

pytest.importorskip("pyopencl", reason="pyopencl is not installed")

_spec = importlib.util.spec_from_file_location(
    "_generated_checks_exp", pathlib.Path(__file__).parents[1] / "test_generated_primitives.py"
)
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)

DEVICE = "opencl:0"
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 88.72, 88.7228, 88.72284, 88.73, -87.3, -103.9, -104.5, 1e-8]


@pytest.fixture(scope="module")
def rows_device():
    try:
        if not compiler.has_compile_access(DEVICE):
            pytest.skip(f"{DEVICE}: no compile access")
    except fw.OarlockError as exc:
        pytest.skip(f"{DEVICE}: {exc}")
    dev = _dev.parse(DEVICE)
    kind = eager._kind(dev)
    eager._KINDS[dev] = "cpu"
    try:
        yield DEVICE
    finally:
        eager._KINDS[dev] = kind


def test_row_exp_is_within_two_ulp_on_the_whole_domain(rows_device):
    x = np.concatenate([np.linspace(-110, 95, 1 << 18, dtype=np.float32), np.float32(SPECIAL)])
    with checks.kernels_hidden("opencl"):
        got = checks.Generated(rows_device)("exp", x).astype(np.float64)
    ref = np.exp(x.astype(np.float64))
    with np.errstate(over="ignore"):
        ref32 = ref.astype(np.float32)
    normal = np.isfinite(ref32) & (ref32 >= np.finfo(np.float32).tiny)
    ulp = np.abs(got[normal] - ref[normal]) / np.spacing(ref32[normal]).astype(np.float64)
    # PoCL: at most 1.0 ulp; Intel's runtime contracts the polynomial under the row kernels'
    # -cl-unsafe-math-optimizations (1.23 ulp at x = -70.96). OpenCL's own exp may be 3 ulp off.
    assert ulp.max() <= 2.0, f"exp is {ulp.max():.2f} ulp off at x={x[normal][ulp.argmax()]}"
    tiny = ~normal & np.isfinite(ref32)  # subnormal results and underflow to 0
    assert np.abs(got[tiny] - ref[tiny]).max() <= 2.0**-149
    over = ~np.isfinite(ref32) & ~np.isnan(x)
    assert np.all(got[over] == np.inf) and over.sum() > 0
    n = len(SPECIAL)
    np.testing.assert_array_equal(got[-n:][:5], [np.nan, np.inf, 0.0, 1.0, 1.0])


def test_row_tanh_is_within_two_ulp(rows_device):
    """tanh from the row exp (the tanh gelu runs through it), both of its branches."""
    edge = [np.nan, np.inf, -np.inf, 0.0, 1e-30, -1e-30, 0.6249, 0.625, -0.625, 9.0, 10.0]
    x = np.concatenate([np.linspace(-20, 20, 1 << 18, dtype=np.float32), np.float32(edge)])
    with checks.kernels_hidden("opencl"):
        got = checks.Generated(rows_device)("tanh", x).astype(np.float64)
    ref = np.tanh(x.astype(np.float64))
    ref32 = ref.astype(np.float32)
    normal = np.isfinite(x) & (np.abs(ref32) >= np.finfo(np.float32).tiny)
    ulp = np.abs(got[normal] - ref[normal]) / np.spacing(np.abs(ref32[normal])).astype(np.float64)
    assert ulp.max() <= 2.0, f"tanh is {ulp.max():.2f} ulp off at x={x[normal][ulp.argmax()]}"  # PoCL: 1.24
    np.testing.assert_array_equal(got[-len(edge) :][:4], [np.nan, 1.0, -1.0, 0.0])
    t = fw.to_tensor(x[:8].reshape(2, 4), device=rows_device)
    src = compiler.generated_source("gelu", t, approximate=True)
    assert "oarlock_tanhf(" in src and "fabs(" not in src  # PoCL's fabs/copysign are calls: 20x slower
    assert "oarlock_expf(" in compiler.generated_source("silu", t)  # silu: x / (1 + exp(-x))


def test_row_erf_is_within_two_ulp(rows_device):
    """erf from the row exp (the exact gelu runs through it), both of its branches."""
    import math

    edge = [np.nan, np.inf, -np.inf, 0.0, 1e-30, -1e-30, 0.9999, 1.0, 1.0001, -1.0, 3.99, 4.0]
    x = np.concatenate([np.linspace(-6, 6, 1 << 18, dtype=np.float32), np.float32(edge)])
    with checks.kernels_hidden("opencl"):
        got = checks.Generated(rows_device)("erf", x).astype(np.float64)
    ref = np.vectorize(math.erf)(x.astype(np.float64))
    ref32 = ref.astype(np.float32)
    normal = np.isfinite(x) & (np.abs(ref32) >= np.finfo(np.float32).tiny)
    ulp = np.abs(got[normal] - ref[normal]) / np.spacing(np.abs(ref32[normal])).astype(np.float64)
    assert ulp.max() <= 2.0, f"erf is {ulp.max():.2f} ulp off at x={x[normal][ulp.argmax()]}"  # PoCL: 1.01
    np.testing.assert_array_equal(got[-len(edge) :][:4], [np.nan, 1.0, -1.0, 0.0])
    assert got[-1] == 1.0 and got[-2] == 1.0
    src = compiler.generated_source(
        "gelu", fw.to_tensor(x[:8].reshape(2, 4), device=rows_device), approximate=False
    )
    assert "oarlock_erff(" in src and src.count("__attribute__((always_inline))") == 2


def test_generated_softmax_uses_it_and_matches_numpy(rows_device):
    rng = np.random.default_rng(3)
    xn = (rng.standard_normal((64, 4096)) * 30).astype(np.float32)
    xn[1, :5] = [-np.inf, 80.0, -100.0, 0.0, -0.0]
    x = fw.to_tensor(xn, device=rows_device)
    assert "oarlock_expf(" in compiler.generated_source("softmax", x, axis=-1)
    got, _ = compiler.run_generated("softmax", x, axis=-1)
    x64 = xn.astype(np.float64)
    e = np.exp(x64 - x64.max(-1, keepdims=True))
    np.testing.assert_allclose(got[0].numpy(), e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)
