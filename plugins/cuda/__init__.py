"""The CUDA plugin: NVIDIA GPUs through cupy (memory pool, streams/events, cuBLAS, NVRTC, NCCL).

Registered through the ``oarlock.plugins`` entry point ``cuda``. Importing this package and
registering it never imports cupy; without cupy or without a GPU the ``cuda`` device type is
listed with zero devices and ``CUDARuntime().unavailable_reason`` says why.

Example::

    import framework as fw
    fw.set_device("cuda:0")          # or OARLOCK_DEVICE=cuda python train.py
"""

from __future__ import annotations

from typing import Any

from adapter_api import KernelContext, OarlockError, Registry, hookimpl

from .communicator import NCCLCommunicator
from .compiler import CUDACompiler
from .errors import import_cupy, translate
from .kernels import KERNELS, Body
from .runtime import CUDARuntime

CONTRACT = (1, 3)
DEVICE_TYPE = "cuda"

__all__ = ["CONTRACT", "CUDACompiler", "CUDARuntime", "NCCLCommunicator", "cuda_kernel", "oarlock_register"]


def cuda_kernel(op: str, body: Body) -> Any:
    """Bind an array-module kernel body to cupy: run it on ``ctx``'s device and stream.

    NOTE: this runs once per eager op, so it does no more than the body needs: the device is
    switched only when it is not current already, vendor errors are translated only when one
    is raised.
    """
    what = f"kernel '{op}'"

    def kernel(ctx: KernelContext, outs: list[Any], ins: list[Any], **attrs: Any) -> None:
        cp = _CUPY[0] if _CUPY else _load_cupy()
        index = ctx.device_index
        stream = ctx.stream
        if stream is None:
            stream = ctx.runtime.default_stream(index) if ctx.runtime is not None else cp.cuda.Stream.null
        switch = cp.cuda.runtime.getDevice() != index
        try:
            if switch:
                with cp.cuda.Device(index), stream:
                    body(cp, outs, ins, **attrs)
            else:
                with stream:
                    body(cp, outs, ins, **attrs)
        except OarlockError:
            raise
        except Exception as exc:
            err = translate(exc, what, device=index)
            if err is None:
                raise
            raise err from exc

    kernel.__name__ = f"cuda_{op}"
    kernel.__qualname__ = kernel.__name__
    return kernel


_CUPY: list[Any] = []


def _load_cupy() -> Any:
    _CUPY.append(import_cupy())
    return _CUPY[0]


@hookimpl
def oarlock_register(registry: Registry) -> None:
    """Register the CUDA runtime, every primitive kernel, NVRTC compile access and NCCL."""
    registry.add_runtime(DEVICE_TYPE, CUDARuntime)
    for spec in KERNELS:
        registry.add_kernel(
            spec.op, DEVICE_TYPE, spec.dtypes, cuda_kernel(spec.op, spec.body), broadcast=spec.broadcast
        )
    registry.add_compiler(DEVICE_TYPE, CUDACompiler)
    registry.add_communicator(DEVICE_TYPE, NCCLCommunicator)


@hookimpl
def oarlock_plugin_info() -> dict[str, Any]:
    """What ``oarlock devices`` shows next to the plugin's name."""
    return {"version": "0.1.0", "backend": "cupy", "requires": "pip install 'oarlock[cuda]'"}
