"""Test configuration.

Device tests take the ``device`` fixture: every available device of every installed plugin
(cpu, opencl with PoCL, cuda with a GPU), or only ``OARLOCK_DEVICE`` when it is set.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import framework as fw


def _devices() -> list[str]:
    want = os.environ.get("OARLOCK_DEVICE")
    if want:
        return [want]
    names = []
    for d in fw.devices():
        if d.index == 0 and d.type in ("cpu", "opencl", "cuda"):
            names.append(str(d))
    return names


DEVICES = _devices()


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(autouse=True)
def _reset_state():
    fw.reset_fallback_stats()
    yield


def assert_close(got, want, dtype=None, rtol=None, atol=None, equal_nan=True) -> None:
    """Compare a tensor (or array) with a numpy reference; prints shapes and dtypes on failure."""
    g = got.numpy() if isinstance(got, fw.Tensor) else np.asarray(got)
    w = np.asarray(want)
    assert g.shape == w.shape, f"shape: expected {w.shape}, got {g.shape}"
    d = np.dtype(dtype) if dtype is not None else g.dtype
    if rtol is None:
        rtol = {np.dtype(np.float16): 2e-3, fw.bfloat16: 1.6e-2, np.dtype(np.float32): 1e-5}.get(d, 1e-12 if d.kind == "f" else 0)
    if atol is None:
        atol = {np.dtype(np.float16): 1e-3, fw.bfloat16: 1e-2, np.dtype(np.float32): 1e-6}.get(d, 1e-12 if d.kind == "f" else 0)
    if g.dtype.kind in "biu" and w.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, equal_nan=equal_nan)
