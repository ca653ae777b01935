"""The adapter contract's version and the compatibility rule.

A plugin states the version it was built for as ``CONTRACT = (major, minor)``. It is
compatible when the major versions are equal and the plugin's minor is not newer than the
core's: a minor release only adds optional hooks, methods and primitives.

History:

- 1.0: the first contract.
- 1.1: the ``argsort`` primitive (stable, last axis, NaN greatest). A 1.0 plugin has none, so
  sort, topk, median and quantile run its argsort on the cpu plugin (a counted fallback).
- 1.2: ``gather``'s ``wrap`` attribute (Paddle's rule: an index in ``[-n, 0)`` counts from the
  end; only one outside ``[-n, n)`` raises). The core passes ``wrap`` only to a kernel of a 1.2
  plugin (see :data:`ATTRS_SINCE`); for an older plugin ``fw.gather`` wraps the index with
  element-wise ops and calls its gather without the attribute, as before.
- 1.3: ``Communicator.reduce_scatter_async`` (start a reduce-scatter, return a pending
  collective, as ``all_reduce_async``). The core calls it only on a communicator of a 1.3
  plugin whose class defines it (see :data:`METHODS_SINCE`); for an older plugin, or one that
  leaves the default, a gradient bucket to be reduce-scattered is all-reduced asynchronously and
  each rank keeps its part (the same values, twice the bytes), and
  ``reduce_scatter(sync_op=False)`` runs the synchronous ``reduce_scatter``.
"""

from __future__ import annotations

from .errors import ContractVersionError

CONTRACT_VERSION: tuple[int, int] = (1, 3)

#: Optional attributes added to a primitive after 1.0: ``(primitive, attr)`` -> the contract
#: version whose kernels take it. The core never passes one to a kernel of an older plugin.
ATTRS_SINCE: dict[tuple[str, str], tuple[int, int]] = {("gather", "wrap"): (1, 2)}

#: Optional methods of an interface added after 1.0: ``(interface, method)`` -> the contract
#: version from which the core calls a plugin's own. Before it the core uses its fallback.
METHODS_SINCE: dict[tuple[str, str], tuple[int, int]] = {("Communicator", "reduce_scatter_async"): (1, 3)}


def takes_attr(contract: tuple[int, int] | None, primitive: str, attr: str) -> bool:
    """Whether a kernel of a plugin written for ``contract`` takes ``attr`` of ``primitive``
    (``None``: the core's own kernels, which take every attribute).

    Example:
        >>> takes_attr((1, 1), "gather", "wrap"), takes_attr((1, 2), "gather", "wrap")
        (False, True)
    """
    return contract is None or contract >= ATTRS_SINCE.get((primitive, attr), (1, 0))


def calls_method(contract: tuple[int, int] | None, interface: str, method: str) -> bool:
    """Whether the core calls ``method`` of ``interface`` on an object of a plugin written for
    ``contract`` (``None``: the core's own objects). The object must also define the method
    itself (not inherit the contract's default): see
    :func:`adapter_api.communicator.defines_own`.

    Example:
        >>> calls_method((1, 2), "Communicator", "reduce_scatter_async")
        False
        >>> calls_method((1, 3), "Communicator", "reduce_scatter_async")
        True
    """
    return contract is None or contract >= METHODS_SINCE.get((interface, method), (1, 0))


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
