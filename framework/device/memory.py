"""Memory queries of any device (Paddle 3's ``paddle.device.memory_allocated``...): the caching allocator's statistics."""

from __future__ import annotations

from typing import Any

from .._src import device as _d

__all__ = [
    "empty_cache",
    "get_device_name",
    "get_device_properties",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
]


def memory_allocated(device: Any = None) -> int:
    """Bytes held by tensors on a device (default the current one).

    Example:
        >>> import framework as fw
        >>> x = fw.ones([256], device="cpu")
        >>> fw.device.memory_allocated("cpu") >= 1024
        True
    """
    return _d.memory_stats(device)["allocated_bytes"]


def max_memory_allocated(device: Any = None) -> int:
    """The peak of :func:`memory_allocated` since start or the last ``fw.reset_peak_memory_stats``.

    Example:
        >>> import framework as fw
        >>> fw.device.max_memory_allocated("cpu") >= fw.device.memory_allocated("cpu")
        True
    """
    return _d.memory_stats(device)["peak_allocated_bytes"]


def memory_reserved(device: Any = None) -> int:
    """Bytes the caching allocator holds on a device (in use and cached).

    Example:
        >>> import framework as fw
        >>> fw.device.memory_reserved("cpu") >= fw.device.memory_allocated("cpu")
        True
    """
    return _d.memory_stats(device)["reserved_bytes"]


def max_memory_reserved(device: Any = None) -> int:
    """The peak of :func:`memory_reserved`.

    Example:
        >>> import framework as fw
        >>> fw.device.max_memory_reserved("cpu") >= fw.device.memory_reserved("cpu")
        True
    """
    return _d.memory_stats(device)["peak_reserved_bytes"]


def empty_cache(device: Any = None) -> None:
    """Return a device's cached, unused memory to its driver (default the current device).

    Example:
        >>> import framework as fw
        >>> fw.device.empty_cache("cpu")
    """
    _d.empty_cache(device)


def get_device_properties(device: Any = None) -> Any:
    """Name, vendor, memory and compute units of a device (:class:`adapter_api.DeviceProperties`).

    Example:
        >>> import framework as fw
        >>> fw.device.get_device_properties("cpu").compute_units > 0
        True
    """
    return _d.get_device_properties(device)


def get_device_name(device: Any = None) -> str:
    """A device's name as its driver reports it.

    Example:
        >>> import framework as fw
        >>> isinstance(fw.device.get_device_name("cpu"), str)
        True
    """
    return _d.get_device_properties(device).name
