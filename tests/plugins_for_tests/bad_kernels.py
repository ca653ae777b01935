"""A test plugin with three deliberately broken kernels, for the conformance suite's isolation.

Device type ``badk``: the host, with the CPU plugin's kernels, except
- ``add`` int16 is wrong (x + y + 1),
- ``mul`` int16 crashes the process (reads address 0: SIGSEGV),
- ``sub`` int16 never returns.

No other tier uses int16 arithmetic, so ``oarlock conformance --plugin
tests/plugins_for_tests/bad_kernels.py --device badk`` must report exactly those three
primitives cases as failed (wrong values, crashed, timed out) and complete the run.
"""

from __future__ import annotations

import ctypes
import time

from adapter_api import DeviceProperties, hookimpl

CONTRACT = (1, 0)


def _wrong_add(ctx, outs, ins):  # type: ignore[no-untyped-def]
    outs[0][...] = ins[0] + ins[1] + 1


def _crashing_mul(ctx, outs, ins):  # type: ignore[no-untyped-def]
    ctypes.string_at(0)  # segmentation fault


def _hanging_sub(ctx, outs, ins):  # type: ignore[no-untyped-def]
    while True:
        time.sleep(1.0)


def _runtime():  # type: ignore[no-untyped-def]
    from plugins.cpu.runtime import CPURuntime

    class BadKernelsRuntime(CPURuntime):
        def properties(self, index: int) -> DeviceProperties:
            p = super().properties(index)
            p.name, p.vendor = "bad-kernels test device", "oarlock tests"
            return p

    return BadKernelsRuntime()


@hookimpl
def oarlock_register(registry):  # type: ignore[no-untyped-def]
    registry.add_runtime("badk", _runtime)
    for (op, typ, dtype), entry in list(registry.kernels.items()):
        if typ == "cpu":
            registry.add_kernel(op, "badk", [dtype], entry.fn, broadcast=entry.broadcast)
    registry.add_kernel("add", "badk", ["int16"], _wrong_add, broadcast=True)
    registry.add_kernel("mul", "badk", ["int16"], _crashing_mul, broadcast=True)
    registry.add_kernel("sub", "badk", ["int16"], _hanging_sub, broadcast=True)


@hookimpl
def oarlock_plugin_info():  # type: ignore[no-untyped-def]
    return {"version": "0.0.1", "description": "deliberately broken kernels (tests only)"}
