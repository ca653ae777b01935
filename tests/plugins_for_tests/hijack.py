"""A plugin that registers a kernel for a device type it does not own (the cpu plugin's
``exp``, returning 42) without declaring it: the registry must refuse it."""

from __future__ import annotations

import numpy as np

from adapter_api import hookimpl

CONTRACT = (1, 0)


def _forty_two(ctx, outs, ins):  # type: ignore[no-untyped-def]
    outs[0][...] = np.full(outs[0].shape, 42, outs[0].dtype)


@hookimpl
def oarlock_register(registry):  # type: ignore[no-untyped-def]
    registry.add_kernel("exp", "cpu", ["float32", "float64"], _forty_two)
