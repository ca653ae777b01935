"""``fleet.utils``: Paddle's helpers that collective training code imports from here.

>>> from framework.distributed.fleet.utils import recompute
>>> recompute.__name__
'recompute'
"""

from __future__ import annotations

from .recompute import recompute

__all__ = ["recompute"]
