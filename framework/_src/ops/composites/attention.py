"""Scaled dot-product attention (with causal mask) and rotary position embedding."""

from __future__ import annotations

import math as _m
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor, to_tensor
from .. import creation as C
from .. import math as M
from .. import shape as S
from .. import sharding as _sh
from ..base import OPS, TRACER, _grad_by_decomposition, broadcast_shapes, call, composite
from ..cost import attention_flops
from ..indexing import permutation, take_rows
from ..primitive_grads import sum_to
from ._common import float_arg, tensor_arg
from .dropout import dropout as _dropout
from .norm import softmax

_CAUSAL: dict[tuple[int, int, Any], Tensor] = {}


def causal_mask(lq: int, lk: int, device: Any) -> Tensor:
    """Bool (lq, lk): query i (aligned to the end of the keys) sees keys 0..i + lk - lq.
    Cached per shape and device (built once from arange and a comparison)."""
    key = (lq, lk, device)
    m = _CAUSAL.get(key)
    if m is None:
        r = C.arange(lq, device=device).reshape((lq, 1)) + (lk - lq)
        c = C.arange(lk, device=device).reshape((1, lk))
        m = c <= r
        if TRACER.get() is not None:  # a traced mask belongs to its program: never cache it
            return m
        if len(_CAUSAL) > 64:
            _CAUSAL.clear()
        _CAUSAL[key] = m
    return m


def _sdpa_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    q, v = ins[0], ins[2]
    return [(q.shape[:-1] + v.shape[-1:], q.dtype)]


def _scores(q: Tensor, k: Tensor, mask: Tensor | None, causal: bool, scale: float) -> Tensor:
    """q k^T * scale with the mask applied: the attention weights' logits."""
    s = M.matmul(q * scale, k, transpose_y=True)
    if mask is not None:
        s = M.where(mask, s, float("-inf")) if mask.dtype == _dt.bool_ else s + mask
    if causal:
        s = M.where(causal_mask(s.shape[-2], s.shape[-1], q.device), s, float("-inf"))
    return s


def _g_attention(n: Any, g: list) -> list:
    """The gradients of q, k and v through the composite ``attention_grad`` (a plugin's fused
    kernel recomputes the weights block by block instead of keeping them). A bool mask takes
    no gradient; an additive one that needs one sends the whole rule to the decomposition."""
    q, k, v = n.inputs[:3]
    nones: list = [None] * len(n.inputs)
    if len(n.inputs) > 3 and not n.inputs[3].stop_gradient:
        return _grad_by_decomposition(n, g)  # an additive mask that learns: its gradient too
    if g[0] is None or all(t.stop_gradient for t in (q, k, v)):
        return nones
    ins = [q, k, v, g[0], *n.inputs[3:]]
    dq, dk, dv = call(OPS["attention_grad"], ins, dict(n.attrs))
    return [
        None if q.stop_gradient else dq,
        None if k.stop_gradient else dk,
        None if v.stop_gradient else dv,
        *nones[3:],
    ]


@composite(
    "attention",
    amp="allow",
    sharding=_sh.attention,
    flops=attention_flops,
    infer=_sdpa_infer,
    grad=_g_attention,
    grad_kernel="attention_grad",
)
def attention_decomposition(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *, causal: bool, scale: float
) -> Tensor:
    """softmax(q k^T * scale [+ mask] [causal]) v on (B, H, S, D) tensors."""
    return M.matmul(softmax(_scores(q, k, mask, causal, scale), axis=-1), v)


def _sdpa_grad_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(t.shape, t.dtype) for t in ins[:3]]


@composite("attention_grad", infer=_sdpa_grad_infer)
def attention_grad_decomposition(
    q: Tensor, k: Tensor, v: Tensor, do: Tensor, mask: Tensor | None = None, *, causal: bool, scale: float
) -> tuple[Tensor, Tensor, Tensor]:
    """The gradients (dq, dk, dv) of ``attention`` for the output's gradient ``do``, the
    weights p recomputed: dp = do v^T, ds = p * (dp - rowsum(p * dp)), dq = ds k * scale,
    dk = ds^T q * scale, dv = p^T do (each summed back to its input's shape when q, k and v
    broadcast against each other)."""
    p = softmax(_scores(q, k, mask, causal, scale), axis=-1)
    dp = M.matmul(do, v, transpose_y=True)
    ds = p * (dp - M.sum(p * dp, axis=-1, keepdim=True))
    dq = M.matmul(ds, k) * scale
    dk = M.matmul(ds, q * scale, transpose_x=True)
    dv = M.matmul(p, do, transpose_x=True)
    return sum_to(dq, q.shape), sum_to(dk, k.shape), sum_to(dv, v.shape)


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
) -> Tensor:
    """Attention on (B, H, S, D) tensors (PyTorch's layout): the composite ``attention``."""
    q = float_arg("attention", q, "query")
    k = tensor_arg("attention", k, "key")
    v = tensor_arg("attention", v, "value")
    if q.ndim < 2 or k.shape[-1] != q.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise OpArgumentError(
            f"[attention] query {q.shape}, key {k.shape} and value {v.shape} do not fit: need matching head dims and key/value lengths"
        )
    if k.shape[-2] == 0:
        raise OpArgumentError(
            f"[attention] key {k.shape} has no positions (length 0 on axis -2); a query needs at least one key"
        )
    sc = 1.0 / _m.sqrt(q.shape[-1]) if scale is None else float(scale)
    ins = [q, k, v] if attn_mask is None else [q, k, v, attn_mask]
    return call(OPS["attention"], ins, {"causal": bool(is_causal), "scale": sc})


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    training: bool = True,
    scale: float | None = None,
    name: str | None = None,
) -> Tensor:
    """Paddle's layout: (batch, seq_len, num_heads, head_dim) in and out. ``attn_mask`` is
    bool (True keeps) or additive, broadcastable to (batch, heads, seq_q, seq_k)."""
    for nm, t in (("query", query), ("key", key), ("value", value)):
        if tensor_arg("scaled_dot_product_attention", t, nm).ndim != 4:
            raise OpArgumentError(
                f"[scaled_dot_product_attention] {nm} must be 4-d (batch, seq, heads, dim), got shape {t.shape}"
            )
    q, k, v = (t.transpose((0, 2, 1, 3)) for t in (query, key, value))
    if k.shape[-2] == 0:
        raise OpArgumentError(
            f"[scaled_dot_product_attention] key {key.shape} has no positions (length 0 on axis 1); "
            f"a query needs at least one key"
        )
    if dropout_p and training:
        sc = 1.0 / _m.sqrt(q.shape[-1]) if scale is None else scale
        s = M.matmul(q * sc, k, transpose_y=True)
        if attn_mask is not None:
            s = M.where(attn_mask, s, float("-inf")) if attn_mask.dtype == _dt.bool_ else s + attn_mask
        if is_causal:
            s = M.where(causal_mask(s.shape[-2], s.shape[-1], q.device), s, float("-inf"))
        out = M.matmul(_dropout(softmax(s, axis=-1), dropout_p), v)
    else:
        out = attention(q, k, v, attn_mask, is_causal, scale)
    return out.transpose((0, 2, 1, 3))


def rotary_cos_sin(
    seq_len: int, head_dim: int, base: float = 10000.0, dtype: Any = None, device: Any = None
) -> tuple[Tensor, Tensor]:
    """cos and sin tables of shape (seq_len, head_dim) for :func:`rotary_embedding`
    (frequencies base^(-2i/head_dim), each repeated for both halves)."""
    if head_dim % 2:
        raise OpArgumentError(f"[rotary_cos_sin] head_dim must be even, got {head_dim}")
    d = _dt.as_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
    inv = C.arange(0, head_dim, 2, dtype=_dt.float64, device=device) * (-_m.log(base) / head_dim)
    freqs = C.arange(seq_len, dtype=_dt.float64, device=device).reshape((seq_len, 1)) * M.exp(inv).reshape(
        (1, -1)
    )
    emb = S.concat([freqs, freqs], axis=-1)
    return M.cast(M.cos(emb), d), M.cast(M.sin(emb), d)


_ROT: dict[tuple[int, Any, Any], tuple[Tensor, Tensor]] = {}


def _rotate_half(d: int, dtype: Any, device: Any) -> tuple[Tensor, Tensor]:
    """(index, sign) with gather(x, index, -1) * sign = concat(-x[..., d/2:], x[..., :d/2])."""
    key = (d, dtype, device)
    r = _ROT.get(key)
    if r is None:
        h = d // 2
        sign = np.concatenate([-np.ones(h), np.ones(h)]).astype(dtype)
        r = _ROT[key] = (permutation(np.r_[h:d, 0:h], device), to_tensor(sign, device=device))
    return r


def _rotary_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x, cos, sin = ins
    shape = broadcast_shapes(
        "rotary_embedding", broadcast_shapes("rotary_embedding", x.shape, cos.shape), sin.shape
    )
    return [(shape, x.dtype)]


@composite("rotary_embedding", infer=_rotary_infer)
def _rotary_decomposition(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x2, x1) over the last dim.

    NOTE: rotate_half is one gather by a rotation of the last dim, its sign folded into
    ``sin``; the gather's gradient is a gather by the inverse rotation, and the compiler
    reads a rotated row inside the fused kernel (no copy, no product with a signed
    permutation matrix, which also turned one infinite input into a row of NaN). A composite:
    eager mode runs it as one generated kernel, the tables read through a broadcast load
    (compiler.trace), its gradient another; the sign is a constant the kernel reads.
    """
    index, sign = _rotate_half(x.shape[-1], x.dtype, x.device)
    rot = take_rows(x, index, x.ndim - 1)
    return x * cos.astype(x.dtype) + rot * (sin.astype(x.dtype) * sign)


def rotary_embedding(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x2, x1) over the last dim
    (the GPT-NeoX / Llama form). ``cos``/``sin`` broadcast to ``x`` (e.g. (seq, dim) for
    (batch, heads, seq, dim) inputs)."""
    x = float_arg("rotary_embedding", x)
    cos, sin = tensor_arg("rotary_embedding", cos, "cos"), tensor_arg("rotary_embedding", sin, "sin")
    d = x.shape[-1] if x.shape else 0
    if not x.shape or d % 2:
        raise OpArgumentError(f"[rotary_embedding] the last dim of x must be even, got shape {x.shape}")
    _rotary_infer([x, cos, sin], {})  # the tables must broadcast with x: an error naming the op
    return call(OPS["rotary_embedding"], [x, cos, sin], {})
