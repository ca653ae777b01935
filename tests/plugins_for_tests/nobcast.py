"""A plugin whose element-wise kernel does not broadcast: device type "nobcast" (host memory
in bytearrays, as the partial plugin) with ``add`` (equal shapes only), ``expand`` and
``exp`` for float32. Programs lowered for it get ``kernel.expand`` in front of ``add``."""

from __future__ import annotations

import numpy as np

from adapter_api import hookimpl

from .partial import PartialRuntime

CONTRACT = (1, 0)


class NoBroadcastRuntime(PartialRuntime):
    pass


def _add(ctx, outs, ins):
    if ins[0].shape != ins[1].shape:
        raise ValueError(f"nobcast add takes equal shapes, got {ins[0].shape} and {ins[1].shape}")
    np.add(ins[0], ins[1], out=outs[0])


def _expand(ctx, outs, ins, shape):
    outs[0][...] = np.broadcast_to(ins[0], shape)


def _exp(ctx, outs, ins):
    np.exp(ins[0], out=outs[0])


def _copy(ctx, outs, ins):
    np.copyto(outs[0], ins[0])


@hookimpl
def oarlock_register(registry):
    registry.add_runtime("nobcast", NoBroadcastRuntime)
    registry.add_kernel("add", "nobcast", ["float32"], _add)  # broadcast=False
    registry.add_kernel("expand", "nobcast", ["float32"], _expand)
    registry.add_kernel("exp", "nobcast", ["float32"], _exp)
    registry.add_kernel("copy", "nobcast", ["float32"], _copy)
