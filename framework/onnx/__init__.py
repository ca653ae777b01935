"""ONNX: Oarlock programs out to ONNX files (Paddle's ``paddle.onnx``).

>>> import framework as fw
>>> callable(fw.onnx.export)
True
"""

from __future__ import annotations

from .export import ExportError, export  # noqa: F401  (h-pdmodel: export; the rest of this package is h-onnx's)
