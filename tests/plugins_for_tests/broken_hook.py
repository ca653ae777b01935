"""A plugin whose registration hook fails after registering part of itself."""

from adapter_api import hookimpl

CONTRACT = (1, 0)


@hookimpl
def oarlock_register(registry):
    registry.add_runtime("brokenhook", object)
    raise RuntimeError("firmware version 0.9 is too old")
