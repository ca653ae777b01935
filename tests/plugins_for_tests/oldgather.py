"""A plugin written against adapter contract 1.1: device type "oldgather", host memory (the cpu
plugin's runtime and kernels), and its own ``gather`` kernel of that contract: no ``wrap``
keyword, every index must lie in ``[0, n)``. Contract 1.2 added ``wrap``; the core must not pass
it here. ``CALLS`` records the attributes each gather call received."""

from __future__ import annotations

import numpy as np

from adapter_api import OpArgumentError, hookimpl

CONTRACT = (1, 1)

CALLS: list[dict] = []


def _gather(ctx, outs, ins, axis):  # type: ignore[no-untyped-def]  # 1.1's signature: no wrap
    x, index = ins
    CALLS.append({"axis": axis})
    n = x.shape[axis]
    bad = index[(index < 0) | (index >= n)]
    if bad.size:
        raise OpArgumentError(f"[oldgather] gather: index {int(bad.flat[0])} is out of range [0, {n})")
    outs[0][...] = np.take(x, index, axis)


@hookimpl
def oarlock_register(registry):  # type: ignore[no-untyped-def]
    from plugins.cpu.runtime import CPURuntime  # a test plugin borrows the cpu plugin's host memory

    class OldRuntime(CPURuntime):  # its gather runs at once, not on a stream: no graph capture
        def supports_graphs(self, index: int) -> bool:
            return False

    registry.add_runtime("oldgather", OldRuntime)
    for (op, typ, dtype), entry in list(registry.kernels.items()):
        if typ == "cpu" and op != "gather":
            registry.add_kernel(op, "oldgather", [dtype], entry.fn, broadcast=entry.broadcast)
    registry.add_kernel("gather", "oldgather", ["float32", "float64", "int64", "bool"], _gather)
