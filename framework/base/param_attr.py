"""``paddle.base.param_attr``: :class:`ParamAttr` (the same class as ``fw.ParamAttr``)."""

from __future__ import annotations

from ..nn.param_attr import ParamAttr

__all__ = ["ParamAttr"]
