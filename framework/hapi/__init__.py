"""The high-level API (Paddle's hapi): :class:`Model`, :func:`summary`, :func:`flops`, the callbacks.

Each is also a top-level name: ``fw.Model``, ``fw.summary``, ``fw.flops``, ``fw.callbacks``.

>>> import framework as fw
>>> fw.hapi.Model is fw.Model
True
>>> fw.hapi.summary(fw.nn.Linear(4, 2), (1, 4))["total_params"]  # doctest: +ELLIPSIS
-...
10
"""

from __future__ import annotations

from . import callbacks
from .model import Model
from .summary import flops, summary

__all__ = ["Model", "callbacks", "flops", "summary"]
