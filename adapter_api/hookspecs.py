"""The hooks a plugin implements. This module is the vendor's reference.

A plugin is a Python module (or package) named by an entry point in the group
``oarlock.plugins``::

    # pyproject.toml of the vendor package
    [project.entry-points."oarlock.plugins"]
    mydev = "oarlock_mydev"

    # oarlock_mydev/__init__.py
    from adapter_api import hookimpl, DeviceRuntime

    CONTRACT = (1, 0)   # the adapter contract this plugin was written for

    @hookimpl
    def oarlock_register(registry):
        registry.add_runtime("mydev", MyRuntime)
        registry.add_kernel("add", "mydev", ["float32"], add_kernel)

Plugins load on first device use, not at ``import framework``: the first call that needs the
registry (listing devices, creating a tensor, ``oarlock devices``) imports every installed
plugin and calls its hooks. Importing the module must still be cheap and must not touch a
device. A module that raises on import, or whose hook raises, is recorded as broken; its error
is shown by ``oarlock devices`` and raised only when its device is asked for.

The entry point may also name an object with these attributes instead of a module: that is
how a native C plugin registers (``mydev = "oarlock_mydev:plugin"``, see
:mod:`adapter_api.native`).
"""

from __future__ import annotations

import pluggy

PROJECT = "oarlock"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# -------------------------------------------------------------------------------------------
# Registration
# -------------------------------------------------------------------------------------------


@hookspec
def oarlock_register(registry):  # type: ignore[no-untyped-def]
    """Register this plugin's runtimes, kernels, communicators and compilers.

    Called once per plugin, when the core first needs the registry (first device use).
    Only bookkeeping may happen here: open no device context, allocate no memory.

    :param registry: an :class:`adapter_api.Registry`; call ``add_runtime``, ``add_kernel``,
        ``add_communicator`` and ``add_compiler`` on it.
    :return: nothing.

    Optional, for static programs: ``add_kernel(..., bind=binder)`` gives a kernel a fast path
    bound once per instruction (:data:`adapter_api.registry.Binder`), and a runtime whose
    ``supports_graphs`` returns True captures and replays whole program runs
    (``begin_capture``, ``end_capture``, ``launch_graph`` on :class:`adapter_api.DeviceRuntime`).
    ``registry.program_cache`` is the core's kernel cache (:class:`adapter_api.ProgramCache`):
    keep it to build sources of the plugin's own through it on first use.
    """


@hookspec
def oarlock_plugin_info():  # type: ignore[no-untyped-def]
    """Describe the plugin for ``oarlock devices`` and conformance reports (optional).

    :return: a dict such as ``{"version": "0.3.1", "homepage": "https://..."}``.
    """
