"""The CPU plugin: numpy kernels behind the same contract a vendor implements.

Loaded through the ``oarlock.plugins`` entry point like any third-party plugin. Importing it
only registers; the runtime is created on first use.
"""

from __future__ import annotations

from adapter_api import hookimpl

CONTRACT = (1, 3)
__version__ = "0.1.0"


@hookimpl
def oarlock_register(registry):  # type: ignore[no-untyped-def]
    from .kernels import register_kernels
    from .runtime import CPURuntime

    registry.add_runtime("cpu", CPURuntime)
    register_kernels(registry)
    from .quant import register_quant

    register_quant(registry)
    try:
        from .compiler import find_cc, register_compiler
    except ImportError:
        pass
    else:
        register_compiler(registry)
        if find_cc() is not None:  # the fused attention is C; without a compiler, the decomposition
            from .attention import register_attention

            register_attention(registry)
            from .conv import register_conv

            register_conv(registry)
    try:
        from .communicator import register_communicator
    except ImportError:
        pass
    else:
        register_communicator(registry)


@hookimpl
def oarlock_plugin_info():  # type: ignore[no-untyped-def]
    return {"version": __version__, "description": "numpy kernels on the host CPU"}
