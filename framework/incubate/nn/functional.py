"""Paddle's fused ops (``paddle.incubate.nn.functional``), written as compositions of Oarlock's ops.

Each is the unfused formula built from existing composites (``rms_norm``, ``layer_norm``,
``silu``, ``linear``, ``rotary_embedding``); the compiler fuses the elementwise chains around
them, so no kernel of its own is needed. Quantised outputs (``quant_scale > 0``) are not supported.
"""

from __future__ import annotations

import math
from typing import Any

from adapter_api import OpArgumentError

from ..._src.ops import creation as _C
from ..._src.ops import math as M
from ..._src.ops import shape as S
from ..._src.ops.composites.activation import silu
from ..._src.ops.composites.attention import rotary_embedding
from ..._src.ops.composites.conv_fused import (
    conv2d_nchwc,
    from_nchwc,
    global_pool_nchwc,
    max_pool2d_nchwc,
    to_nchwc,
)
from ..._src.ops.composites.linear import linear
from ..._src.ops.composites.norm import layer_norm, rms_norm
from ..._src.ops.indexing import gather
from ..._src.tensor import Tensor

__all__ = [
    "conv2d_nchwc",
    "from_nchwc",
    "fused_layer_norm",
    "fused_linear",
    "fused_rms_norm",
    "fused_rotary_position_embedding",
    "global_pool_nchwc",
    "max_pool2d_nchwc",
    "swiglu",
    "to_nchwc",
]


def swiglu(x: Tensor, y: Tensor | None = None, name: str | None = None) -> Tensor:
    """``silu(x) * y``; with ``y`` None, ``x`` is split in two along its last axis first.

    Example:
        >>> import framework as fw
        >>> out = fw.incubate.nn.functional.swiglu(fw.to_tensor([[1.0, 2.0, -1.0, 0.5]]))
        >>> [round(v, 4) for v in out.tolist()[0]]
        [-0.7311, 0.8808]
    """
    if y is None:
        if x.shape[-1] % 2:
            raise OpArgumentError(
                f"[swiglu] with y=None the last axis of x must be even, got shape {x.shape}"
            )
        x, y = S.split(x, 2, axis=-1)
    return silu(x) * y


def _quant(fn: str, quant_scale: float) -> None:
    if quant_scale > 0:
        raise OpArgumentError(
            f"[{fn}] quantised output (quant_scale={quant_scale}) is not supported; pass quant_scale=-1"
        )


def _pre_norm(x: Tensor, bias: Tensor | None, residual: Tensor | None, alpha: float = 1.0) -> Tensor:
    if bias is not None:
        x = x + bias
    if residual is not None:
        x = x + residual * alpha if alpha != 1.0 else x + residual
    return x


def fused_rms_norm(
    x: Tensor,
    norm_weight: Tensor | None,
    norm_bias: Tensor | None,
    epsilon: float,
    begin_norm_axis: int = 1,
    bias: Tensor | None = None,
    residual: Tensor | None = None,
    quant_scale: float = -1,
    quant_round_type: int = 0,
    quant_max_bound: float = 0,
    quant_min_bound: float = 0,
) -> tuple[Tensor, Tensor | None]:
    """RMS norm of ``x + bias + residual`` over the axes from ``begin_norm_axis``, times
    ``norm_weight`` plus ``norm_bias``; returns ``(out, residual_out)`` as Paddle does
    (``residual_out`` is the sum normalised, None without a ``residual``).

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[3.0, 4.0]])
        >>> out, _ = fw.incubate.nn.functional.fused_rms_norm(x, fw.ones([2]), None, 0.0, begin_norm_axis=1)
        >>> [round(v, 4) for v in out.tolist()[0]]
        [0.8485, 1.1314]
    """
    _quant("fused_rms_norm", quant_scale)
    s = _pre_norm(x, bias, residual)
    axis = begin_norm_axis % x.ndim
    out = rms_norm(s, list(s.shape[axis:]), norm_weight, epsilon)
    if norm_bias is not None:
        out = out + S.reshape(norm_bias, list(s.shape[axis:]))
    return out, (s if residual is not None else None)


def fused_layer_norm(
    x: Tensor,
    norm_weight: Tensor | None,
    norm_bias: Tensor | None,
    epsilon: float,
    residual_alpha: float = 1.0,
    begin_norm_axis: int = 1,
    bias: Tensor | None = None,
    residual: Tensor | None = None,
    quant_scale: float = -1,
    quant_round_type: int = 0,
    quant_max_bound: float = 0,
    quant_min_bound: float = 0,
) -> Any:
    """LayerNorm of ``x + bias + residual_alpha * residual`` over the axes from ``begin_norm_axis``;
    returns ``(out, residual_out)`` (``residual_out`` the sum, None without a ``residual``). With
    ``norm_weight`` and ``norm_bias`` both None it returns only the sum, as Paddle does.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1.0, 3.0]])
        >>> out, _ = fw.incubate.nn.functional.fused_layer_norm(x, fw.ones([2]), fw.zeros([2]), 0.0)
        >>> out.tolist()
        [[-1.0, 1.0]]
    """
    _quant("fused_layer_norm", quant_scale)
    s = _pre_norm(x, bias, residual, float(residual_alpha))
    if norm_weight is None and norm_bias is None:
        return s
    axis = begin_norm_axis % x.ndim
    return layer_norm(s, list(s.shape[axis:]), norm_weight, norm_bias, epsilon), (
        s if residual is not None else None
    )


def fused_linear(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    transpose_weight: bool = False,
    name: str | None = None,
) -> Tensor:
    """``x @ weight + bias`` (``weight`` (in, out), or (out, in) with ``transpose_weight``).

    Example:
        >>> import framework as fw
        >>> fw.incubate.nn.functional.fused_linear(fw.ones([1, 2]), fw.ones([3, 2]), transpose_weight=True).tolist()
        [[2.0, 2.0, 2.0]]
    """
    return linear(x, S.transpose(weight, [1, 0]) if transpose_weight else weight, bias)


def _tables(
    q: Tensor, sin: Tensor | None, cos: Tensor | None, position_ids: Tensor | None, neox: bool, base: float
) -> tuple[Tensor, Tensor]:
    """cos and sin broadcastable to q (B, S, H, D), one angle per element."""
    b, s, _, d = q.shape
    if sin is None or cos is None:
        if position_ids is not None:
            raise OpArgumentError(
                "[fused_rotary_position_embedding] position_ids needs sin and cos (as in Paddle)"
            )
        inv = M.exp(_C.arange(0, d, 2, dtype="float64", device=q.device) * (-math.log(base) / d))
        ang = S.reshape(_C.arange(0, s, dtype="float64", device=q.device), [s, 1]) * S.reshape(
            inv, [1, d // 2]
        )
        ang = S.reshape(S.stack([ang, ang], axis=-1), [s, d]) if neox else S.concat([ang, ang], axis=-1)
        cos, sin = M.cos(ang), M.sin(ang)
    cos, sin = S.reshape(cos, [-1, d]), S.reshape(sin, [-1, d])
    if position_ids is not None:
        ids = S.reshape(position_ids, [-1])
        cos, sin = S.reshape(gather(cos, ids), [b, s, 1, d]), S.reshape(gather(sin, ids), [b, s, 1, d])
    else:
        cos, sin = S.reshape(cos, [1, s, 1, d]), S.reshape(sin, [1, s, 1, d])
    return M.cast(cos, q.dtype), M.cast(sin, q.dtype)


def _rotate_pairs(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate adjacent pairs: out[2i] = x[2i] c - x[2i+1] s, out[2i+1] = x[2i+1] c + x[2i] s."""
    pairs = S.reshape(x, list(x.shape[:-1]) + [x.shape[-1] // 2, 2])
    even, odd = S.unbind(pairs, axis=-1)
    rot = S.reshape(S.stack([-odd, even], axis=-1), x.shape)
    return x * cos + rot * sin


def fused_rotary_position_embedding(
    q: Tensor,
    k: Tensor | None = None,
    v: Tensor | None = None,
    sin: Tensor | None = None,
    cos: Tensor | None = None,
    position_ids: Tensor | None = None,
    use_neox_rotary_style: bool = True,
    time_major: bool = False,
    rotary_emb_base: float = 10000.0,
) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """Rotary position embedding of q, k and v (B, S, H, D) (``time_major``: (S, B, H, D)), Paddle's naming.

    ``use_neox_rotary_style=True`` rotates adjacent pairs (x[2i], x[2i+1]); False rotates the
    front half against the back half (``rotate_half``). ``sin``/``cos`` are (1, S, 1, D) or (S, D)
    tables, gathered by ``position_ids`` (B, S) when given; without them the angles are
    ``position * rotary_emb_base ** (-2i / D)``. Returns ``(out_q, out_k, out_v)``, None for an
    absent input.

    Example:
        >>> import framework as fw
        >>> q = fw.ones([1, 2, 1, 4])
        >>> out_q, out_k, out_v = fw.incubate.nn.functional.fused_rotary_position_embedding(q)
        >>> out_k is None, [round(v, 3) for v in out_q[0, 1, 0].tolist()]
        (True, [-0.301, 1.382, 0.99, 1.01])
    """
    if q.ndim != 4 or q.shape[-1] % 2:
        raise OpArgumentError(
            f"[fused_rotary_position_embedding] q must be (B, S, H, D) with D even, got {q.shape}"
        )
    ts = [t if t is None or not time_major else S.transpose(t, [1, 0, 2, 3]) for t in (q, k, v)]
    cos_t, sin_t = _tables(ts[0], sin, cos, position_ids, use_neox_rotary_style, float(rotary_emb_base))
    outs = []
    for t in ts:
        if t is None:
            outs.append(None)
            continue
        r = _rotate_pairs(t, cos_t, sin_t) if use_neox_rotary_style else rotary_embedding(t, cos_t, sin_t)
        outs.append(S.transpose(r, [1, 0, 2, 3]) if time_major else r)
    return outs[0], outs[1], outs[2]
