"""Boolean settings from the environment, read one way everywhere (``OARLOCK_COMPILE``,
``OARLOCK_STRICT_KERNELS``, ``OARLOCK_DISTRIBUTED_DEBUG``, ...)."""

from __future__ import annotations

import os

_FALSE = ("", "0", "false", "no", "off")


def flag(name: str, default: bool = False) -> bool:
    """``name`` as a switch: unset gives ``default``; ``0``, ``false``, ``no``, ``off`` or empty
    (any case) give False; anything else True."""
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() not in _FALSE
