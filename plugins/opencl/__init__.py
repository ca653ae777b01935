"""The OpenCL plugin: every device of every OpenCL platform, through pyopencl.

Importing it only registers (no pyopencl import, no device work). The runtime, programs and
queues are created on first use. ``pip install 'oarlock[opencl]'`` installs pyopencl, PoCL and
(on x86-64 Linux) Intel's CPU OpenCL runtime: between them, an OpenCL CPU device on any
x86-64 Linux machine (see platforms.py for which one a bare ``opencl`` gets).
"""

from __future__ import annotations

from typing import Any

from adapter_api import PluginError, hookimpl

from . import kernels

CONTRACT = (1, 3)

__all__ = ["CONTRACT", "oarlock_plugin_info", "oarlock_register"]


def _require_pyopencl() -> None:
    from .platforms import configure_icd

    configure_icd()  # NOTE: before pyopencl's first clGetPlatformIDs: the ICD loader reads it once
    try:
        import pyopencl  # noqa: F401
    except ImportError as exc:
        raise PluginError(
            f"[opencl] pyopencl is not installed ({exc}); pip install 'oarlock[opencl]'"
        ) from exc


def _runtime() -> Any:
    _require_pyopencl()
    from .runtime import OpenCLRuntime

    return OpenCLRuntime()


def _compiler(runtime: Any, index: int) -> Any:
    _require_pyopencl()
    from .compiler import OpenCLCompiler

    return OpenCLCompiler(runtime, index)


@hookimpl
def oarlock_register(registry: Any) -> None:
    registry.add_runtime("opencl", _runtime)
    for op, dtypes, fn, broadcast, bind in kernels.table():
        registry.add_kernel(op, "opencl", dtypes, fn, broadcast=broadcast, bind=bind)
    registry.add_compiler("opencl", _compiler)
    from .communicator import register_communicator  # host-staged collectives (no pyopencl)

    register_communicator(registry)


@hookimpl
def oarlock_plugin_info() -> dict[str, str]:
    return {
        "version": "0.1.0",
        "requires": "pyopencl, an OpenCL driver (PoCL or Intel's CPU runtime from pip)",
    }
