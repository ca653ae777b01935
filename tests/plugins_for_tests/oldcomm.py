"""A plugin written against adapter contract 1.2: device type "oldcomm", host memory (the cpu
plugin's runtime and kernels) and host-staged collectives. Contract 1.3 added
``Communicator.reduce_scatter_async``; its communicator inherits one from
``StagedCommunicator``, but the core must not call it for a 1.2 plugin: gradient buckets of ZeRO
stages 2 and 3 are all-reduced asynchronously instead, each rank keeping its part.
``CALLS`` counts the collectives the core asked of it, by name."""

from __future__ import annotations

from collections import Counter

import numpy as np

from adapter_api import StagedCommunicator, hookimpl

CONTRACT = (1, 2)

CALLS: Counter[str] = Counter()


class OldCommunicator(StagedCommunicator):
    """Host-staged collectives on the cpu runtime's numpy views."""

    def download(self, view, stream):  # type: ignore[no-untyped-def]
        return np.array(view, copy=True)

    def upload(self, view, array, stream):  # type: ignore[no-untyped-def]
        view[...] = array.reshape(view.shape)

    def all_reduce_async(self, send, recv, op, stream):  # type: ignore[no-untyped-def]
        CALLS["all_reduce_async"] += 1
        return super().all_reduce_async(send, recv, op, stream)

    def reduce_scatter(self, send, recv, op, stream):  # type: ignore[no-untyped-def]
        CALLS["reduce_scatter"] += 1
        super().reduce_scatter(send, recv, op, stream)

    def reduce_scatter_async(self, send, recv, op, stream):  # type: ignore[no-untyped-def]
        CALLS["reduce_scatter_async"] += 1
        return super().reduce_scatter_async(send, recv, op, stream)


@hookimpl
def oarlock_register(registry):  # type: ignore[no-untyped-def]
    from plugins.cpu.runtime import CPURuntime  # a test plugin borrows the cpu plugin's host memory

    class OldRuntime(CPURuntime):
        def supports_graphs(self, index: int) -> bool:
            return False

    registry.add_runtime("oldcomm", OldRuntime)
    for (op, typ, dtype), entry in list(registry.kernels.items()):
        if typ == "cpu":
            registry.add_kernel(op, "oldcomm", [dtype], entry.fn, broadcast=entry.broadcast)
    registry.add_communicator("oldcomm", OldCommunicator)
