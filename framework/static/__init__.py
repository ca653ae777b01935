"""Static-graph helpers (Paddle's ``paddle.static``): :class:`InputSpec` describes an input
of a program for :func:`framework.jit.to_static` and :func:`framework.jit.save`;
:mod:`framework.static.nn` holds ``cond`` and ``while_loop`` (data-dependent control flow)."""

from __future__ import annotations

from . import nn
from .input_spec import InputSpec

__all__ = ["InputSpec", "nn"]
