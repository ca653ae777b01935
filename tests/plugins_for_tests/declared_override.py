"""A plugin that replaces the cpu plugin's float64 ``exp`` and says so (``override=True``):
allowed, and listed by ``fw.plugins()`` and ``oarlock devices``. No version: it prints cleanly."""

from __future__ import annotations

import numpy as np

from adapter_api import hookimpl

CONTRACT = (1, 0)


def _exp_twice(ctx, outs, ins):  # type: ignore[no-untyped-def]
    outs[0][...] = 2.0 * np.exp(ins[0])


@hookimpl
def oarlock_register(registry):  # type: ignore[no-untyped-def]
    registry.add_kernel("exp", "cpu", ["float64"], _exp_twice, override=True)
