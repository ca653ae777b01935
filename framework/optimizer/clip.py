"""Gradient clipping under ``fw.optimizer`` too: the classes of :mod:`framework.nn.clip`."""

from __future__ import annotations

from ..nn.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue

__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue"]
