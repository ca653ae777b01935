"""The cupy-like array module of the kernel tests rejects what cupy rejects (see cupy_like.py).

Each case is a mistake a kernel body could make that numpy alone accepts; the last checks that
the module still computes ordinary device work correctly.
"""

from __future__ import annotations

import numpy as np
import pytest
from cupy_like import DeviceArray, to_device, to_host, xp


def test_numpy_ufunc_with_a_dtype_operand_is_rejected():
    x = to_device(np.arange(4, dtype=np.float32))
    with pytest.raises(TypeError, match="NotImplemented from __array_ufunc__"):
        np.equal(x, np.dtype(np.float32))


def test_numpy_ufunc_with_a_host_array_is_rejected():
    x = to_device(np.arange(4, dtype=np.float32))
    with pytest.raises(TypeError, match="NotImplemented from __array_ufunc__"):
        np.add(x, np.ones(4, np.float32))
    with pytest.raises(TypeError, match="NotImplemented from __array_ufunc__"):
        x + np.ones(4, np.float32)  # noqa: B018


def test_numpy_function_on_a_device_array_is_rejected():
    x = to_device(np.arange(4, dtype=np.float32))
    with pytest.raises(TypeError, match=r"numpy.copyto applied to a device array; .* xp.copyto"):
        np.copyto(x, x)


def test_array_module_function_refuses_host_arrays():
    y = to_device(np.zeros(4, np.float32))
    with pytest.raises(TypeError, match=r"xp.add got a host numpy array"):
        xp.add(np.ones(4, np.float32), 1.0, out=y)


@pytest.mark.parametrize("call", ["module", "method"])
def test_min_with_out_fails_as_on_cupy(call):
    x = to_device(np.arange(6, dtype=np.float32).reshape(2, 3))
    y = to_device(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="equal"):
        xp.amin(x, axis=0, out=y) if call == "module" else x.min(axis=0, out=y)


def test_device_work_computes_numpy_values():
    a = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    x, y = to_device(a), to_device(np.zeros((3, 4), np.float32))
    xp.multiply(x, x, out=y)
    y += np.float32(1)
    m = xp.amin(x, axis=1)
    assert isinstance(m, DeviceArray)
    np.testing.assert_array_equal(to_host(y), a * a + 1)
    np.testing.assert_array_equal(to_host(m), a.min(axis=1))
    assert bool((x > 0).any()) and int(xp.argmax(x.reshape(-1))) == 11
