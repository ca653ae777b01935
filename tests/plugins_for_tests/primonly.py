"""A deliberately minimal vendor plugin for tests: device type ``primonly`` that registers a
runtime and ONLY the primitive kernels of adapter_api.PRIMITIVES (no fused composites, no
compiler, no communicator). Memory is host memory and the kernels are the CPU plugin's, so
its results can be compared with the cpu device bit for bit.

    import framework as fw
    from tests.plugins_for_tests import primonly
    fw.register_plugin(primonly)
"""

from __future__ import annotations

from adapter_api import PRIMITIVES, hookimpl

CONTRACT = (1, 0)
__version__ = "0.0.1"


@hookimpl
def oarlock_register(registry):  # type: ignore[no-untyped-def]
    from plugins.cpu.kernels import TABLE, _on_stream
    from plugins.cpu.runtime import CPURuntime

    registry.add_runtime("primonly", CPURuntime)
    for op, fn, dtypes, bcast in TABLE:
        if op in PRIMITIVES:
            k = fn if getattr(fn, "inline_stream", False) else _on_stream(fn)
            registry.add_kernel(op, "primonly", dtypes, k, broadcast=bcast)


@hookimpl
def oarlock_plugin_info():  # type: ignore[no-untyped-def]
    return {"version": __version__, "description": "test plugin: primitive kernels only"}
