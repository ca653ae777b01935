"""A test-only device, ``cudasim``: the CUDA plugin's kernel bodies with the cupy-like numpy of
cupy_like.py (device arrays under cupy's rules) behind a host-memory runtime that, like cupy,
hands bfloat16 to kernels as uint16 bits.

It lets the framework's own device tests (tests/test_primitives.py) call the CUDA kernels
exactly as the dispatcher does — attributes, broadcasting, 0-d and empty tensors — on a
machine without a GPU. Load it with ``pytest -p cudasim_plugin`` and ``OARLOCK_DEVICE=cudasim``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from cupy_like import DeviceArray, xp

from adapter_api import hookimpl
from plugins.cpu.runtime import CPURuntime
from plugins.cuda.kernels import KERNELS

CONTRACT = (1, 0)


class CUDASimRuntime(CPURuntime):
    def view(self, buffer: np.ndarray, offset: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        v = super().view(buffer, offset, shape, dtype)
        return (v.view(np.uint16) if np.dtype(dtype).name == "bfloat16" else v).view(DeviceArray)


def _bind(body: Any) -> Any:
    def kernel(ctx: Any, outs: list[Any], ins: list[Any], **attrs: Any) -> None:
        body(xp, outs, ins, **attrs)

    return kernel


@hookimpl
def oarlock_register(registry: Any) -> None:
    registry.add_runtime("cudasim", CUDASimRuntime)
    for spec in KERNELS:
        registry.add_kernel(spec.op, "cudasim", spec.dtypes, _bind(spec.body), broadcast=spec.broadcast)


def pytest_configure(config: Any) -> None:
    import sys

    import framework

    framework.register_plugin(sys.modules[__name__], name="cudasim")
