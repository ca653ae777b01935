"""DLPack exchange (Paddle's ``paddle.utils.dlpack``): ``to_dlpack`` gives a capsule, ``from_dlpack`` takes one.

>>> import framework as fw
>>> capsule = fw.utils.dlpack.to_dlpack(fw.to_tensor([1.0, 2.0]))
>>> fw.utils.dlpack.from_dlpack(capsule).tolist()
[1.0, 2.0]
"""

from __future__ import annotations

from typing import Any

from .._src.tensor import Tensor
from .._src.tensor import from_dlpack as _from_dlpack

__all__ = ["from_dlpack", "to_dlpack"]

_KDLCPU = 1


class _Capsule:
    """A DLPack capsule made importable (``__dlpack__`` returns it; host memory only)."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_KDLCPU, 0)


def to_dlpack(x: Tensor) -> Any:
    """A DLPack capsule of a host tensor's memory (one import consumes it).

    Args:
        x (Tensor): a tensor on a host device (cpu); move others with ``x.cpu()`` first.

    Returns:
        PyCapsule: the capsule.

    Example:
        >>> import framework as fw, numpy as np
        >>> type(fw.utils.dlpack.to_dlpack(fw.ones([2]))).__name__
        'PyCapsule'
    """
    return x.__dlpack__()


def from_dlpack(dlpack: Any, device: Any = None) -> Tensor:
    """A tensor from a DLPack capsule or any host object with ``__dlpack__`` (numpy, torch CPU); the data is copied.

    Args:
        dlpack: a capsule from :func:`to_dlpack` (or another framework's), or an object with ``__dlpack__``.
        device (str | Device, optional): where the tensor goes; default the current device.

    Example:
        >>> import framework as fw, numpy as np
        >>> fw.utils.dlpack.from_dlpack(np.arange(3.0)).tolist()
        [0.0, 1.0, 2.0]
    """
    obj = dlpack if hasattr(dlpack, "__dlpack__") else _Capsule(dlpack)
    return _from_dlpack(obj, device)
