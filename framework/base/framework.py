"""Paddle's ``paddle.base.framework`` names that user code reaches: mode queries, ``Variable``, flags."""

from __future__ import annotations

from typing import Any

from adapter_api import OarlockError

from .._src import device as _d
from .._src.tensor import Tensor
from ..nn.layer import Parameter
from .flags import get_flags, set_flags

__all__ = [
    "Parameter",
    "Variable",
    "disable_static",
    "enable_static",
    "get_flags",
    "in_dygraph_mode",
    "in_dynamic_mode",
    "set_flags",
]

#: Paddle's static-graph variable; here every value is a :class:`~framework.Tensor`.
Variable = Tensor


def in_dynamic_mode() -> bool:
    """True: Oarlock always runs eagerly (dynamic mode); static programs come from ``fw.jit.to_static``.

    Example:
        >>> import framework as fw
        >>> fw.in_dynamic_mode()
        True
    """
    return True


def in_dygraph_mode() -> bool:
    """True: the same as :func:`in_dynamic_mode` (Paddle's older name).

    Example:
        >>> import framework as fw
        >>> fw.base.framework.in_dygraph_mode()
        True
    """
    return True


def disable_static(place: Any = None) -> None:
    """Dynamic mode is the only mode, so this only sets the device when ``place`` is given.

    Args:
        place (str | Device, optional): the device new tensors go to (``fw.set_device``).

    Example:
        >>> import framework as fw
        >>> fw.disable_static()
        >>> fw.in_dynamic_mode()
        True
    """
    if place is not None:
        _d.set_device(place)


def enable_static() -> None:
    """Refused: Oarlock has no static-graph mode; trace functions with ``fw.jit.to_static`` instead.

    Raises:
        OarlockError: always, naming ``fw.jit.to_static`` and ``fw.static.InputSpec``.

    Example:
        >>> import framework as fw
        >>> try:
        ...     fw.enable_static()
        ... except fw.OarlockError as e:
        ...     print(str(e)[:52])
        [enable_static] Oarlock has no static-graph mode: it
    """
    raise OarlockError(
        "[enable_static] Oarlock has no static-graph mode: it runs eagerly, and programs are traced from "
        "eager code; decorate the function or Layer with fw.jit.to_static(..., input_spec=[fw.static.InputSpec(...)]) "
        "and save it with fw.jit.save for inference"
    )
