"""The high-level API (Paddle's hapi): :class:`Model`, :func:`summary`, :func:`flops` and
the callbacks."""

from __future__ import annotations

from . import callbacks
from .model import Model
from .summary import flops, summary

__all__ = ["Model", "callbacks", "flops", "summary"]
