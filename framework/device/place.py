"""Paddle's places: ``CPUPlace()`` and ``CUDAPlace(i)``, which are devices here."""

from __future__ import annotations

from .._src import device as _d


class CPUPlace(_d.Device):
    """The host CPU, as a :class:`~framework.Device` (Paddle's ``paddle.CPUPlace``).

    Anything that takes a device takes a place: ``fw.to_tensor(x, place=fw.CPUPlace())``.

    Example:
        >>> import framework as fw
        >>> fw.CPUPlace() == "cpu", fw.to_tensor([1.0], place=fw.CPUPlace()).device
        (True, Device('cpu:0'))
    """

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__("cpu", 0)


class CUDAPlace(_d.Device):
    """The ``device_id``-th GPU (Paddle's ``paddle.CUDAPlace``): a cuda device, else an OpenCL GPU.

    Raises:
        DeviceError: there is no such GPU (the message lists the devices there are).

    Example:
        >>> import framework as fw
        >>> try:
        ...     place = fw.CUDAPlace(0)
        ... except fw.DeviceError:
        ...     place = fw.CPUPlace()  # no GPU on this machine
        >>> isinstance(place, fw.Device)
        True
    """

    __slots__ = ()

    def __init__(self, device_id: int = 0) -> None:
        d = _d.gpu(int(device_id))
        super().__init__(d.type, d.index)

    def get_device_id(self) -> int:
        """The GPU's ordinal among the devices of its type."""
        return self.index
