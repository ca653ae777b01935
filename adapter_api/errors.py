"""Errors shared by the core and plugins.

Messages follow one form: ``[component] what happened, the value that came; what to do``.
"""

from __future__ import annotations


class OarlockError(RuntimeError):
    """Base class of every error Oarlock raises on purpose."""


class PluginError(OarlockError):
    """A plugin could not be loaded, initialised or used."""


class ContractVersionError(PluginError):
    """A plugin targets an adapter-contract version this core does not implement."""


class DeviceError(OarlockError):
    """A device name is unknown, or a device cannot be used."""


class DeviceMismatchError(DeviceError, ValueError):
    """One operation received tensors on two different devices."""


class OutOfMemoryError(OarlockError, MemoryError):
    """A device allocation failed.

    Plugins raise it from ``DeviceRuntime.allocate`` when the device is out of memory; the core
    then empties its cache, retries once, and re-raises with the sizes in use.
    """


class KernelNotFoundError(OarlockError, NotImplementedError):
    """No kernel is registered for an (op, device, dtype), and fallback is not allowed."""


class KernelError(OarlockError):
    """A vendor kernel failed while running."""


class CompileError(OarlockError):
    """A plugin's compiler rejected generated source."""


class CommunicationError(OarlockError):
    """A collective failed, timed out, or its arguments did not match across ranks."""


class OpArgumentError(OarlockError, ValueError):
    """An operator got an argument of the wrong shape, dtype, value or type."""
