"""A test plugin whose float32 ``add`` fails and whose float32 ``sub`` declines: device type
``raisek`` (the host, with the CPU plugin's runtime and other kernels).

- ``add`` float32 raises ``ValueError`` (a vendor kernel's failure: the core's ``KernelError``);
- ``sub`` float32 raises ``KernelNotFoundError`` (declines: the core falls back to the cpu
  plugin with a ``FallbackWarning``).

The eager fast path of binary operators must hand both to the same handling as the Python path.
"""

from __future__ import annotations

from adapter_api import KernelNotFoundError, hookimpl

CONTRACT = (1, 0)


def _failing_add(ctx, outs, ins):  # type: ignore[no-untyped-def]
    raise ValueError("raisek add: the device refused")


def _declining_sub(ctx, outs, ins):  # type: ignore[no-untyped-def]
    raise KernelNotFoundError("[raisek] sub: not for these inputs")


def _runtime():  # type: ignore[no-untyped-def]
    from plugins.cpu.runtime import CPURuntime

    return CPURuntime()


@hookimpl
def oarlock_register(registry):  # type: ignore[no-untyped-def]
    registry.add_runtime("raisek", _runtime)
    for (op, typ, dtype), entry in list(registry.kernels.items()):
        if typ == "cpu" and not (op in ("add", "sub") and dtype == "float32"):
            registry.add_kernel(op, "raisek", [dtype], entry.fn, broadcast=entry.broadcast)
    registry.add_kernel("add", "raisek", ["float32"], _failing_add, broadcast=True)
    registry.add_kernel("sub", "raisek", ["float32"], _declining_sub, broadcast=True)
