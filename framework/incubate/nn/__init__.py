"""``fw.incubate.nn`` (Paddle's ``paddle.incubate.nn``): the fused functions in ``functional``.

>>> import framework as fw
>>> fw.incubate.nn.functional.swiglu(fw.ones([1, 2])).shape
(1, 1)
"""

from __future__ import annotations

from . import functional

__all__ = ["functional"]
