"""Errors shared by the core and plugins.

Messages follow one form: ``[component] what happened, the value that came; what to do``.
"""

from __future__ import annotations


class OarlockError(RuntimeError):
    """Base class of every error Oarlock raises on purpose; a ``RuntimeError``.

    Messages read ``[component] what happened, the value that came; what to do``.

    Example:
        >>> import framework as fw
        >>> try:
        ...     fw.ones([2]) + fw.ones([3])
        ... except fw.OarlockError as e:
        ...     print(type(e).__name__, isinstance(e, RuntimeError))
        OpArgumentError True
    """


class PluginError(OarlockError):
    """A plugin could not be loaded, initialised or used.

    Raised when a device whose plugin failed is asked for, and by :func:`framework.register_plugin`
    for a plugin that fails to register.

    Example:
        >>> import framework as fw
        >>> issubclass(fw.PluginError, fw.OarlockError)
        True
        >>> fw.plugins()["cpu"].error is None  # a failed plugin's record keeps its error
        True
    """


class ContractVersionError(PluginError):
    """A plugin targets an adapter-contract version this core does not implement."""


class DeviceError(OarlockError):
    """A device name is unknown, or a device cannot be used.

    Example:
        >>> import framework as fw
        >>> try:
        ...     fw.ones([1], device="cpu:7")
        ... except fw.DeviceError as e:
        ...     print(e)
        [device] 'cpu:7' does not exist: the 'cpu' plugin reports 1 device(s); use an index below 1
    """


class DeviceMismatchError(DeviceError, ValueError):
    """One operation received tensors on two different devices; a :class:`DeviceError` and a ``ValueError``.

    Move one of them first with ``x.to(other.device)``.

    Example:
        >>> import framework as fw
        >>> issubclass(fw.DeviceMismatchError, fw.DeviceError), issubclass(fw.DeviceMismatchError, ValueError)
        (True, True)
    """


class OutOfMemoryError(OarlockError, MemoryError):
    """A device allocation failed; an :class:`OarlockError` and a ``MemoryError``.

    Plugins raise it from ``DeviceRuntime.allocate`` when the device is out of memory; the core
    then empties its cache, retries once, and re-raises with the sizes in use.

    Example:
        >>> import framework as fw
        >>> issubclass(fw.OutOfMemoryError, MemoryError)
        True
    """


class KernelNotFoundError(OarlockError, NotImplementedError):
    """No kernel is registered for an (op, device, dtype), and fallback is not allowed.

    An :class:`OarlockError` and a ``NotImplementedError``; with
    ``fw.set_strict_kernels(True)`` a missing kernel raises it instead of running on the CPU
    plugin.

    Example:
        >>> import framework as fw
        >>> issubclass(fw.KernelNotFoundError, NotImplementedError)
        True
    """


class KernelError(OarlockError):
    """A vendor kernel failed while running.

    Example:
        >>> import framework as fw
        >>> issubclass(fw.KernelError, fw.OarlockError)
        True
    """


class CompileError(OarlockError):
    """A plugin's compiler rejected generated source."""


class CommunicationError(OarlockError):
    """A collective failed, timed out, or its arguments did not match across ranks."""


class OpArgumentError(OarlockError, ValueError):
    """An operator got an argument of the wrong shape, dtype, value or type.

    An :class:`OarlockError` and a ``ValueError``.

    Example:
        >>> import framework as fw
        >>> try:
        ...     fw.ones([2]) + fw.ones([3])
        ... except fw.OpArgumentError as e:
        ...     print(e)
        [add] shapes (2,) and (3,) cannot be broadcast: dimension -1 is 2 vs 3; make them equal or 1
    """
