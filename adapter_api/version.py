"""The adapter contract's version and the compatibility rule.

A plugin states the version it was built for as ``CONTRACT = (major, minor)``. It is
compatible when the major versions are equal and the plugin's minor is not newer than the
core's: a minor release only adds optional hooks, methods and primitives.

History:

- 1.0: the first contract.
- 1.1: the ``argsort`` primitive (stable, last axis, NaN greatest). A 1.0 plugin has none, so
  sort, topk, median and quantile run its argsort on the cpu plugin (a counted fallback).
"""

from __future__ import annotations

from .errors import ContractVersionError

CONTRACT_VERSION: tuple[int, int] = (1, 1)


def check_contract(plugin: str, version: object) -> tuple[int, int]:
    """Return the plugin's version as a tuple, or raise :class:`ContractVersionError`."""
    ok = isinstance(version, tuple) and len(version) == 2 and all(isinstance(v, int) for v in version)
    if not ok:
        raise ContractVersionError(
            f"[plugins] plugin '{plugin}' declares CONTRACT = {version!r}; expected a tuple "
            f"(major, minor) such as {CONTRACT_VERSION}; set CONTRACT in the plugin module"
        )
    major, minor = version  # type: ignore[misc]
    cmaj, cmin = CONTRACT_VERSION
    if major != cmaj or minor > cmin:
        fix = "upgrade oarlock" if (major, minor) > CONTRACT_VERSION else "upgrade the plugin"
        raise ContractVersionError(
            f"[plugins] plugin '{plugin}' targets adapter contract {major}.{minor}, but this "
            f"oarlock implements {cmaj}.{cmin}; {fix}, or install a matching pair"
        )
    return (major, minor)
