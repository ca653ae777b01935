"""Gradient clipping, passed as ``grad_clip=`` to an optimizer (Paddle's ``paddle.nn.ClipGrad*``)."""

from __future__ import annotations

from typing import Any

from .._src.ops import math as M
from .._src.tensor import Tensor


class ClipGradByGlobalNorm:
    """Scale every gradient by clip_norm / max(global_norm, clip_norm), global_norm being
    the L2 norm of all gradients together."""

    def __init__(self, clip_norm: float, group_name: str = "default_group") -> None:
        self.clip_norm = float(clip_norm)

    def __call__(self, params_grads: list[tuple[Any, Tensor]]) -> list[tuple[Any, Tensor]]:
        if not params_grads:
            return params_grads
        sq = None
        for _, g in params_grads:
            g32 = g if g.dtype.itemsize >= 4 else M.cast(g, "float32")
            s = M.sum(g32 * g32)
            sq = s if sq is None else sq + M.cast(s, sq.dtype)
        norm = M.sqrt(sq)
        scale = self.clip_norm / M.maximum(norm, self.clip_norm)
        return [(p, g * M.cast(scale, g.dtype)) for p, g in params_grads]


class ClipGradByNorm:
    """Clip each gradient separately to L2 norm ``clip_norm``."""

    def __init__(self, clip_norm: float) -> None:
        self.clip_norm = float(clip_norm)

    def __call__(self, params_grads: list[tuple[Any, Tensor]]) -> list[tuple[Any, Tensor]]:
        out = []
        for p, g in params_grads:
            n = M.sqrt(M.sum(g * g))
            out.append((p, g * (self.clip_norm / M.maximum(n, self.clip_norm))))
        return out


class ClipGradByValue:
    def __init__(self, max: float, min: float | None = None) -> None:
        self.max = float(max)
        self.min = -self.max if min is None else float(min)

    def __call__(self, params_grads: list[tuple[Any, Tensor]]) -> list[tuple[Any, Tensor]]:
        return [(p, M.clip(g, self.min, self.max)) for p, g in params_grads]
