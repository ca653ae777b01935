"""Paddle's switches between dynamic and static graphs: Oarlock runs eagerly, always.

A static program comes from :func:`framework.jit.to_static` instead of a global mode, so
``disable_static`` has nothing to undo and ``enable_static`` says where to go.
"""

from __future__ import annotations

from typing import Any

from adapter_api import OarlockError


def in_dynamic_mode() -> bool:
    """Whether ops run eagerly: always True in Oarlock.

    Returns:
        bool: True.

    Example:
        >>> import framework as fw
        >>> fw.in_dynamic_mode()
        True
    """
    return True


def disable_static(place: Any = None) -> None:
    """Leave static-graph mode: Oarlock is always in dynamic mode, so this changes nothing.

    Args:
        place: Paddle's device argument; use :func:`framework.set_device`.

    Example:
        >>> import framework as fw
        >>> fw.disable_static()
        >>> fw.in_dynamic_mode()
        True
    """


def enable_static() -> None:
    """Paddle's global static-graph mode, which Oarlock does not have: raises, saying what to use.

    Raises:
        OarlockError: always; trace a function with :func:`framework.jit.to_static` instead.

    Example:
        >>> import framework as fw
        >>> try:
        ...     fw.enable_static()
        ... except fw.OarlockError as e:
        ...     print(str(e).split(";")[0])
        [enable_static] Oarlock has no global static-graph mode
    """
    raise OarlockError(
        "[enable_static] Oarlock has no global static-graph mode; trace a function or Layer with "
        "fw.jit.to_static(fn, input_spec=[fw.static.InputSpec(...)]) to get a static program"
    )
