"""Boolean settings from the environment, read one way everywhere (``OARLOCK_COMPILE``,
``OARLOCK_STRICT_KERNELS``, ``OARLOCK_DISTRIBUTED_DEBUG``, ...)."""

from __future__ import annotations

import os

from adapter_api import OarlockError

_FALSE = ("", "0", "false", "no", "off")


def flag(name: str, default: bool = False) -> bool:
    """``name`` as a switch: unset gives ``default``; ``0``, ``false``, ``no``, ``off`` or empty
    (any case) give False; anything else True."""
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() not in _FALSE


class SettingError(OarlockError, ValueError):
    """An ``OARLOCK_*`` environment variable holds a value it cannot take."""


def number(name: str, default: float, minimum: float = 0.0) -> float:
    """``name`` as a number (a count, seconds): unset or empty gives ``default``; anything
    that is not a number ``>= minimum`` raises, naming the variable."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        n = float(value)
    except ValueError:
        n = float("nan")
    if not n >= minimum:
        raise SettingError(
            f"[env] {name}={value!r} is not a number >= {minimum:g}; unset it for the default {default:g}"
        )
    return n
