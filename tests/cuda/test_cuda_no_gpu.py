"""Without cupy or without a GPU the plugin reports 0 devices and a reason; it never raises."""

from __future__ import annotations

import sys

import pytest
from cuda_marks import cuda_unavailable

from adapter_api import DeviceError
from plugins.cuda import CUDARuntime
from plugins.cuda.errors import unavailable_reason

no_gpu = pytest.mark.skipif(cuda_unavailable() is None, reason="a CUDA device is present")


@no_gpu
def test_zero_devices_with_reason():
    rt = CUDARuntime()
    assert rt.device_count() == 0
    assert rt.unavailable_reason
    assert "CUDA" in rt.unavailable_reason or "cupy" in rt.unavailable_reason


@no_gpu
def test_using_a_device_raises_a_clear_error():
    rt = CUDARuntime()
    with pytest.raises(DeviceError, match=r"^\[cuda\] cannot use a CUDA device: .*; use another device"):
        rt.allocate(0, 16)
    with pytest.raises(DeviceError):
        rt.properties(0)


def test_without_cupy(monkeypatch):
    for name in [m for m in sys.modules if m == "cupy" or m.startswith("cupy.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    assert unavailable_reason() == "cupy is not installed; pip install 'oarlock[cuda]'"
    rt = CUDARuntime()
    assert rt.device_count() == 0
    assert rt.unavailable_reason.startswith("cupy is not installed")


def test_broken_cupy_is_a_reason(monkeypatch):
    class Broken:
        def __getattr__(self, name):
            raise RuntimeError("libcudart.so.12: cannot open shared object file")

    monkeypatch.setitem(sys.modules, "cupy", Broken())
    reason = unavailable_reason()
    assert reason.startswith("no CUDA device (") and "libcudart" in reason
    assert CUDARuntime().device_count() == 0
