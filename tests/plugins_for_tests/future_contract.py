"""A plugin written for a contract newer than this core."""

from adapter_api import hookimpl

CONTRACT = (2, 0)


@hookimpl
def oarlock_register(registry):
    registry.add_runtime("future", object)
