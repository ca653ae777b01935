"""Test helpers for the OpenCL plugin: the plugin's runtime and registry, a harness that moves
numpy arrays to device views (with sentinel bytes around them, at a non-zero offset) and back,
and a per-dtype comparison."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

PAD = 16  #: bytes of sentinel before and after every test buffer; also the views' offset
SENTINEL = 0xAB


def opencl_or_skip() -> Any:
    pytest.importorskip("pyopencl", reason="pyopencl is not installed")
    import plugins.opencl as plugin
    from adapter_api import PluginError, Registry

    registry = Registry(plugin="opencl")
    plugin.oarlock_register(registry)
    try:
        runtime = registry.runtimes["opencl"][1]()
    except PluginError as exc:
        pytest.skip(str(exc))
    if runtime.device_count() == 0:
        pytest.skip(f"no OpenCL device: {runtime.reason}")
    return registry, runtime


class Harness:
    """Numpy in, kernel, numpy out, on device 0 of the plugin's runtime."""

    def __init__(self, registry: Any, runtime: Any) -> None:
        from adapter_api import KernelContext

        self.registry, self.rt = registry, runtime
        self.q = runtime.default_stream(0)
        self.ctx = KernelContext(0, self.q, runtime)

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape)) * dtype.itemsize
        buf = self.rt.allocate(0, nbytes + 2 * PAD)
        self.rt.memset(0, buf, 0, SENTINEL, nbytes + 2 * PAD, self.q)
        return self.rt.view(buf, PAD, tuple(shape), dtype)

    def put(self, arr: np.ndarray) -> Any:
        arr = np.ascontiguousarray(arr)
        v = self.empty(arr.shape, arr.dtype)
        self.rt.copy_h2d(0, v.buffer, PAD, arr, self.q)
        return v

    def get(self, v: Any) -> np.ndarray:
        """The view's contents; fails if a kernel wrote outside it."""
        nbytes = int(np.prod(v.shape)) * v.dtype.itemsize
        raw = np.empty(nbytes + 2 * PAD, np.uint8)
        self.rt.copy_d2h(0, raw, v.buffer, v.offset - PAD, self.q)
        assert (raw[:PAD] == SENTINEL).all() and (raw[PAD + nbytes :] == SENTINEL).all(), (
            "kernel wrote outside its output view"
        )
        return raw[PAD : PAD + nbytes].view(v.dtype).reshape(v.shape).copy()

    def kernel(self, op: str, dtype: Any) -> Any:
        return self.registry.kernels[(op, "opencl", np.dtype(dtype))]

    def run(
        self,
        op: str,
        ins: list[np.ndarray],
        out_shape: tuple[int, ...],
        out_dtype: Any,
        /,
        key: Any = None,
        **attrs: Any,
    ) -> np.ndarray:
        """Run ``op`` registered under ``key`` (default: the first input's dtype)."""
        key = key if key is not None else (ins[0].dtype if ins else out_dtype)
        out = self.empty(out_shape, out_dtype)
        self.kernel(op, key).fn(self.ctx, [out], [self.put(a) for a in ins], **attrs)
        return self.get(out)


def assert_close(
    got: np.ndarray, want: np.ndarray, dtype: Any = None, rtol: float | None = None, atol: float | None = None
) -> None:
    """Compare with the tolerance of the dtype (framework.testing.TOLERANCES; exact for
    integers and bool), NaNs equal."""
    from framework.testing import tolerance

    dtype = np.dtype(dtype or want.dtype)
    assert got.shape == want.shape, f"shape: expected {want.shape}, got {got.shape}"
    assert got.dtype == dtype, f"dtype: expected {dtype}, got {got.dtype}"
    if dtype.kind != "f":
        np.testing.assert_array_equal(got, want.astype(dtype))
        return
    tol = tolerance(dtype)
    np.testing.assert_allclose(
        got.astype(np.float64),
        want.astype(np.float64),
        rtol=rtol if rtol is not None else tol.rtol,
        atol=atol if atol is not None else tol.atol,
        equal_nan=True,
    )
