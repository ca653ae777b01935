"""Static-graph helpers (Paddle's ``paddle.static``).

:class:`InputSpec` describes an input of a program for :func:`framework.jit.to_static` and
:func:`framework.jit.save`; :mod:`framework.static.nn` holds ``cond`` and ``while_loop``
(data-dependent control flow).

>>> import framework as fw
>>> spec = fw.static.InputSpec([None, 4], "float32", name="x")
>>> spec
InputSpec(shape=(None, 4), dtype=float32, name='x')
>>> net = fw.jit.to_static(fw.nn.Linear(4, 2), input_spec=[spec])
>>> net(fw.ones([3, 4])).shape
(3, 2)
"""

from __future__ import annotations

from . import nn
from .input_spec import InputSpec

__all__ = ["InputSpec", "nn"]
