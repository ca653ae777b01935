"""``fw.vision``: Paddle's ``paddle.vision`` for Oarlock.

The model zoo (``models``), the block ops (``ops``), image transforms on numpy arrays
(``transforms``) and datasets read from local files (``datasets``; nothing is downloaded).

>>> import framework as fw
>>> _ = fw.seed(0)
>>> net = fw.vision.models.LeNet(num_classes=10)
>>> net(fw.ones([2, 1, 28, 28])).shape
(2, 10)
"""

from __future__ import annotations

from . import datasets, models, ops, transforms

__all__ = ["datasets", "models", "ops", "transforms"]
