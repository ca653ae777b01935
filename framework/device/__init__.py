"""``fw.device``: pick and query devices (Paddle's ``paddle.device``); also a context manager.

``with fw.device("opencl"):`` puts new tensors on a device for a block. Paddle's functions take
Paddle's names: ``"gpu"`` / ``"gpu:N"`` is the N-th GPU (a cuda device, else an OpenCL device of
type GPU, :func:`framework.CUDAPlace`); ``"cpu"``; or any plugin's device (``"opencl:1"``).

>>> import framework as fw
>>> fw.device.get_device()
'cpu'
>>> with fw.device("cpu"):
...     fw.ones([1]).device
Device('cpu:0')
>>> fw.device.is_compiled_with_cuda() == (fw.device.cuda.device_count() > 0 and
...                                       any(d.type == "cuda" for d in fw.devices()))
True
"""

from __future__ import annotations

import sys
import types
from typing import Any

from .._src import device as _d
from .._src.device import Event, Stream, current_stream
from .._src.plugins import host
from . import cuda
from .memory import (
    empty_cache,
    get_device_name,
    get_device_properties,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
)
from .place import CPUPlace, CUDAPlace

__all__ = [
    "CPUPlace",
    "CUDAPlace",
    "Event",
    "Stream",
    "cuda",
    "current_stream",
    "device_count",
    "empty_cache",
    "get_all_device_type",
    "get_available_device",
    "get_device",
    "get_device_name",
    "get_device_properties",
    "is_available",
    "is_compiled_with_cuda",
    "is_compiled_with_rocm",
    "is_compiled_with_xpu",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "set_device",
    "synchronize",
]


def get_device() -> str:
    """The current device's name as Paddle writes it: ``"cpu"``, else ``"type:index"``.

    Example:
        >>> import framework as fw
        >>> with fw.device("cpu"):
        ...     fw.device.get_device()
        'cpu'
    """
    d = _d.get_device()
    return "cpu" if d.type == "cpu" else str(d)


def set_device(device: Any) -> _d.Device:
    """Make a device the default for new tensors (Paddle's ``paddle.device.set_device``).

    Args:
        device (str | Device): ``"cpu"``, ``"gpu"``/``"gpu:N"`` (the N-th GPU: a cuda device,
            else an OpenCL GPU; a :class:`~framework.DeviceError` naming the devices there are
            where there is none), or a plugin's device such as ``"opencl:1"``.

    Returns:
        Device: the device now current.

    Example:
        >>> import framework as fw
        >>> prev = fw.get_device()
        >>> fw.device.set_device("cpu")
        Device('cpu:0')
        >>> _ = fw.set_device(prev)
    """
    return _d.set_device(device)


def get_all_device_type() -> list[str]:
    """The device types of every loaded plugin that has at least one device.

    Example:
        >>> import framework as fw
        >>> "cpu" in fw.device.get_all_device_type()
        True
    """
    return sorted({d.type for d in _d.devices()}, key=lambda n: (n != "cpu", n))


def get_available_device() -> list[str]:
    """Every available device's name (``"cpu"``, ``"opencl:0"``...).

    Example:
        >>> import framework as fw
        >>> fw.device.get_available_device()[0]
        'cpu'
    """
    return ["cpu" if d.type == "cpu" else str(d) for d in _d.devices()]


def is_compiled_with_cuda() -> bool:
    """Whether a cuda device is usable: the cuda plugin loaded and reports one.

    Answered from the plugins (Oarlock has no CUDA build of its own).

    Example:
        >>> import framework as fw
        >>> fw.is_compiled_with_cuda() == any(d.type == "cuda" for d in fw.devices())
        True
    """
    rec = host().records.get("cuda")
    return rec is not None and rec.error is None and any(d.type == "cuda" for d in _d.devices())


def is_compiled_with_rocm() -> bool:
    """False: no plugin runs ROCm (HIP) kernels.

    Example:
        >>> import framework as fw
        >>> fw.device.is_compiled_with_rocm()
        False
    """
    return False


def is_compiled_with_xpu() -> bool:
    """False: no plugin runs on Kunlun XPUs.

    Example:
        >>> import framework as fw
        >>> fw.device.is_compiled_with_xpu()
        False
    """
    return False


def device_count() -> int:
    """The number of GPUs (Paddle's ``paddle.device.device_count``; :func:`framework.device_count` counts one type).

    Example:
        >>> import framework as fw
        >>> fw.device.device_count() == fw.device.cuda.device_count()
        True
    """
    return cuda.device_count()


def is_available() -> bool:
    """Whether a GPU is available (:func:`device_count` > 0).

    Example:
        >>> import framework as fw
        >>> fw.device.is_available() == (fw.device.device_count() > 0)
        True
    """
    return cuda.device_count() > 0


def synchronize(device: Any = None) -> None:
    """Wait until all work queued on a device (default the current one) has finished.

    Example:
        >>> import framework as fw
        >>> fw.device.synchronize()
        >>> fw.device.synchronize("cpu")
    """
    _d.synchronize(device)


class _DeviceModule(types.ModuleType):
    """``fw.device`` is this module and also ``fw.device(name)``, the context manager."""

    def __call__(self, name: object) -> Any:
        return _d.device(name)


sys.modules[__name__].__class__ = _DeviceModule
