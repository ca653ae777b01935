"""``paddle.base.core`` names user code reaches: the places and the build queries."""

from __future__ import annotations

from ..device import is_compiled_with_cuda, is_compiled_with_rocm, is_compiled_with_xpu
from ..device.place import CPUPlace, CUDAPlace

__all__ = ["CPUPlace", "CUDAPlace", "is_compiled_with_cuda", "is_compiled_with_rocm", "is_compiled_with_xpu"]
