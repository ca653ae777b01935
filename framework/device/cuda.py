"""``fw.device.cuda``: Paddle's ``paddle.device.cuda`` helpers, answered for the GPUs the plugins offer.

A GPU is a cuda device or an OpenCL device of type GPU (``fw.CUDAPlace``); ``device`` arguments
take an index among them, a place or a device name.

>>> import framework as fw
>>> isinstance(fw.device.cuda.device_count(), int)
True
"""

from __future__ import annotations

from typing import Any

from .._src import device as _d
from .._src.device import Event, Stream
from . import memory

__all__ = [
    "Event",
    "Stream",
    "current_stream",
    "device_count",
    "empty_cache",
    "get_device_name",
    "get_device_properties",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "synchronize",
]


def _which(device: Any) -> _d.Device:
    if device is None:
        cur = _d.get_device()
        return cur if cur in _d.gpus() else _d.gpu(0)
    if isinstance(device, int) and not isinstance(device, bool):
        return _d.gpu(device)
    return _d.parse(device)


def device_count() -> int:
    """The number of GPUs (cuda devices and OpenCL GPUs); 0 on a machine without one.

    Example:
        >>> import framework as fw
        >>> fw.device.cuda.device_count() >= 0
        True
    """
    return len(_d.gpus())


def synchronize(device: Any = None) -> None:
    """Wait for all work queued on a GPU (default the current one, else the first).

    Example:
        >>> import framework as fw
        >>> if fw.device.cuda.device_count():
        ...     fw.device.cuda.synchronize(0)
    """
    _d.synchronize(_which(device))


def empty_cache() -> None:
    """Return every GPU's cached, unused memory to its driver.

    Example:
        >>> import framework as fw
        >>> fw.device.cuda.empty_cache()
    """
    for d in _d.gpus():
        memory.empty_cache(d)


def memory_allocated(device: Any = None) -> int:
    """Bytes held by tensors on a GPU.

    Example:
        >>> import framework as fw
        >>> fw.device.cuda.memory_allocated() >= 0 if fw.device.cuda.device_count() else True
        True
    """
    return memory.memory_allocated(_which(device))


def max_memory_allocated(device: Any = None) -> int:
    """The peak of :func:`memory_allocated` since start or the last reset.

    Example:
        >>> import framework as fw
        >>> fw.device.cuda.max_memory_allocated() >= 0 if fw.device.cuda.device_count() else True
        True
    """
    return memory.max_memory_allocated(_which(device))


def memory_reserved(device: Any = None) -> int:
    """Bytes the caching allocator holds on a GPU (in use and cached).

    Example:
        >>> import framework as fw
        >>> fw.device.cuda.memory_reserved() >= 0 if fw.device.cuda.device_count() else True
        True
    """
    return memory.memory_reserved(_which(device))


def max_memory_reserved(device: Any = None) -> int:
    """The peak of :func:`memory_reserved`.

    Example:
        >>> import framework as fw
        >>> fw.device.cuda.max_memory_reserved() >= 0 if fw.device.cuda.device_count() else True
        True
    """
    return memory.max_memory_reserved(_which(device))


def get_device_properties(device: Any = None) -> Any:
    """Name, vendor, memory and compute units of a GPU (:class:`adapter_api.DeviceProperties`).

    Example:
        >>> import framework as fw
        >>> if fw.device.cuda.device_count():
        ...     _ = fw.device.cuda.get_device_properties(0).name
    """
    return memory.get_device_properties(_which(device))


def get_device_name(device: Any = None) -> str:
    """A GPU's name as its driver reports it.

    Example:
        >>> import framework as fw
        >>> if fw.device.cuda.device_count():
        ...     _ = fw.device.cuda.get_device_name(0)
    """
    return memory.get_device_name(_which(device))


def current_stream(device: Any = None) -> Stream:
    """The current stream of a GPU (default the current one, else the first).

    Example:
        >>> import framework as fw
        >>> if fw.device.cuda.device_count():
        ...     s = fw.device.cuda.current_stream(0)
        ...     s.synchronize()
    """
    return _d.current_stream(_which(device))
