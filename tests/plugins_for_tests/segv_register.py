"""A test plugin whose ``oarlock_register`` kills the process (reads address 0: SIGSEGV), as
a vendor library can: ``oarlock devices`` must survive it and name it."""

from __future__ import annotations

import ctypes

from adapter_api import hookimpl

CONTRACT = (1, 0)


@hookimpl
def oarlock_register(registry):  # type: ignore[no-untyped-def]
    ctypes.string_at(0)  # segmentation fault
