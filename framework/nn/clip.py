"""Gradient clipping (Paddle's ``paddle.nn.ClipGrad*``), passed as ``grad_clip=`` to an optimizer."""

from __future__ import annotations

from typing import Any

from .._src.ops import math as M
from .._src.tensor import Tensor


def _clipped(params_grads: list[tuple[Any, Tensor]]) -> list[bool]:
    """Which pairs clipping applies to (a parameter made with ``ParamAttr(need_clip=False)`` is left)."""
    return [getattr(p, "need_clip", True) for p, _ in params_grads]


class ClipGradByGlobalNorm:
    """Scale every gradient by clip_norm / max(global_norm, clip_norm), global_norm being
    the L2 norm of all gradients together.

    Pass it as an optimizer's ``grad_clip=``; also ``fw.nn.ClipGradByGlobalNorm`` (Paddle's name).
    Parameters made with ``ParamAttr(need_clip=False)`` are neither counted nor scaled.

    Example:
        >>> import framework as fw
        >>> w = fw.nn.Parameter.from_tensor(fw.to_tensor([0.0, 0.0]))
        >>> clip = fw.nn.ClipGradByGlobalNorm(clip_norm=1.0)
        >>> [g.tolist() for _, g in clip([(w, fw.to_tensor([3.0, 4.0]))])]
        [[0.6000000238418579, 0.800000011920929]]
    """

    def __init__(self, clip_norm: float, group_name: str = "default_group") -> None:
        self.clip_norm = float(clip_norm)

    def __call__(self, params_grads: list[tuple[Any, Tensor]]) -> list[tuple[Any, Tensor]]:
        use = _clipped(params_grads)
        if not any(use):
            return params_grads
        sq = None
        for (_, g), u in zip(params_grads, use):
            if not u:
                continue
            g32 = g if g.dtype.itemsize >= 4 else M.cast(g, "float32")
            s = M.sum(g32 * g32)
            sq = s if sq is None else sq + M.cast(s, sq.dtype)
        norm = M.sqrt(sq)
        scale = self.clip_norm / M.maximum(norm, self.clip_norm)
        return [(p, g * M.cast(scale, g.dtype) if u else g) for (p, g), u in zip(params_grads, use)]


class ClipGradByNorm:
    """Clip each gradient separately to L2 norm ``clip_norm`` (also ``fw.nn.ClipGradByNorm``).

    Example:
        >>> import framework as fw
        >>> w = fw.nn.Parameter.from_tensor(fw.to_tensor([0.0, 0.0]))
        >>> [g.tolist() for _, g in fw.nn.ClipGradByNorm(1.0)([(w, fw.to_tensor([0.0, 2.0]))])]
        [[0.0, 1.0]]
    """

    def __init__(self, clip_norm: float) -> None:
        self.clip_norm = float(clip_norm)

    def __call__(self, params_grads: list[tuple[Any, Tensor]]) -> list[tuple[Any, Tensor]]:
        out = []
        for (p, g), u in zip(params_grads, _clipped(params_grads)):
            if not u:
                out.append((p, g))
                continue
            n = M.sqrt(M.sum(g * g))
            out.append((p, g * (self.clip_norm / M.maximum(n, self.clip_norm))))
        return out


class ClipGradByValue:
    """Clip every gradient elementwise to [min, max] (``min`` defaults to -max; also
    ``fw.nn.ClipGradByValue``).

    Example:
        >>> import framework as fw
        >>> w = fw.nn.Parameter.from_tensor(fw.to_tensor([0.0, 0.0]))
        >>> [g.tolist() for _, g in fw.nn.ClipGradByValue(1.0)([(w, fw.to_tensor([-3.0, 0.5]))])]
        [[-1.0, 0.5]]
    """

    def __init__(self, max: float, min: float | None = None) -> None:
        self.max = float(max)
        self.min = -self.max if min is None else float(min)

    def __call__(self, params_grads: list[tuple[Any, Tensor]]) -> list[tuple[Any, Tensor]]:
        return [
            (p, M.clip(g, self.min, self.max) if u else g)
            for (p, g), u in zip(params_grads, _clipped(params_grads))
        ]
