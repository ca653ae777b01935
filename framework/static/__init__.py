"""Static-graph helpers (Paddle's ``paddle.static``): :class:`InputSpec` describes an input
of a program for :func:`framework.jit.to_static` and :func:`framework.jit.save`."""

from __future__ import annotations

from .input_spec import InputSpec

__all__ = ["InputSpec"]
