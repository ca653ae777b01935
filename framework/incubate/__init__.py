"""``fw.incubate`` (Paddle's ``paddle.incubate``): ``nn.functional``'s fused ops as compositions.

>>> import framework as fw
>>> fw.incubate.nn.functional.fused_linear(fw.ones([1, 2]), fw.ones([2, 3])).tolist()
[[2.0, 2.0, 2.0]]
"""

from __future__ import annotations

from . import nn

__all__ = ["nn"]
