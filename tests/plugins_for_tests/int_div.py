"""A test plugin whose ``div`` also takes int64 (an integer quotient, truncated): device type
``intdiv`` (the host, with the CPU plugin's runtime and its kernels).

``x / y`` of two int64 tensors must still give the default float (``fw.divide`` casts
first, as Paddle does), on the Python path and on the eager fast path alike: the kernel
registered here must never see them through the operator.
"""

from __future__ import annotations

import numpy as np

from adapter_api import hookimpl

CONTRACT = (1, 0)


def _int_div(ctx, outs, ins):  # type: ignore[no-untyped-def]
    np.floor_divide(ins[0], ins[1], out=outs[0])


def _runtime():  # type: ignore[no-untyped-def]
    from plugins.cpu.runtime import CPURuntime

    return CPURuntime()


@hookimpl
def oarlock_register(registry):  # type: ignore[no-untyped-def]
    registry.add_runtime("intdiv", _runtime)
    for (op, typ, dtype), entry in list(registry.kernels.items()):
        if typ == "cpu":
            registry.add_kernel(op, "intdiv", [dtype], entry.fn, broadcast=entry.broadcast)
    registry.add_kernel("div", "intdiv", ["int64"], _int_div, broadcast=True)
