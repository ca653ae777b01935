"""``fw.base`` (Paddle's ``paddle.base``, formerly ``fluid``): the names Paddle code reaches into.

``base.framework`` (mode queries, ``Variable``, flags), ``base.param_attr.ParamAttr``,
``base.core`` (places, build queries) — each the same object as its public name.

>>> import framework as fw
>>> fw.base.param_attr.ParamAttr is fw.ParamAttr, fw.base.framework.in_dygraph_mode()
(True, True)
"""

from __future__ import annotations

from . import core, flags, framework, param_attr
from .core import CPUPlace, CUDAPlace
from .framework import (
    Variable,
    disable_static,
    enable_static,
    get_flags,
    in_dygraph_mode,
    in_dynamic_mode,
    set_flags,
)
from .param_attr import ParamAttr

__all__ = [
    "CPUPlace",
    "CUDAPlace",
    "ParamAttr",
    "Variable",
    "core",
    "disable_static",
    "enable_static",
    "flags",
    "framework",
    "get_flags",
    "in_dygraph_mode",
    "in_dynamic_mode",
    "param_attr",
    "set_flags",
]
