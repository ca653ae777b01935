"""``fw.nn``: layers, ``functional`` and ``initializer`` (Paddle naming)."""

from __future__ import annotations

from . import functional  # noqa: F401

__all__ = ["functional"]
