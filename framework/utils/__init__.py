"""``fw.utils`` (Paddle's ``paddle.utils``): ``run_check``, ``unique_name``, ``dlpack``.

>>> import framework as fw
>>> with fw.utils.unique_name.guard():
...     fw.utils.unique_name.generate("conv")
'conv_0'
"""

from __future__ import annotations

from . import dlpack, unique_name
from .run_check import run_check

__all__ = ["dlpack", "run_check", "unique_name"]
