"""A plugin whose float32 ``exp`` writes only the first half of its output (the rest is left as
the allocator gave it): poisoned outputs must show the unwritten elements."""

from __future__ import annotations

import numpy as np

from adapter_api import hookimpl
from plugins.cpu.runtime import CPURuntime

CONTRACT = (1, 0)


def _half_exp(ctx, outs, ins):  # type: ignore[no-untyped-def]
    n = outs[0].size // 2
    outs[0].reshape(-1)[:n] = np.exp(ins[0].reshape(-1)[:n])


def _half_cast(ctx, outs, ins, dtype):  # type: ignore[no-untyped-def]
    n = outs[0].size // 2
    outs[0].reshape(-1)[:n] = ins[0].reshape(-1)[:n].astype(outs[0].dtype)


@hookimpl
def oarlock_register(registry):  # type: ignore[no-untyped-def]
    registry.add_runtime("halfw", CPURuntime)
    registry.add_kernel("exp", "halfw", ["float32"], _half_exp)
    registry.add_kernel("cast", "halfw", ["float32"], _half_cast)
