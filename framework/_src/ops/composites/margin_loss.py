"""Margin losses on scores, distances and similarities (Paddle's names and defaults):
margin_ranking_loss, triplet_margin_loss, hinge_embedding_loss, cosine_embedding_loss."""

from __future__ import annotations

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import math as M
from ._common import float_arg
from .loss import _pair, _reduce
from .norm import cosine_similarity


def margin_ranking_loss(
    input: Tensor,
    other: Tensor,
    label: Tensor,
    margin: float = 0.0,
    reduction: str = "mean",
    name: str | None = None,
) -> Tensor:
    """max(0, -label * (input - other) + margin)."""
    x, y = _pair("margin_ranking_loss", input, label)
    o = float_arg("margin_ranking_loss", other, "other").astype(x.dtype)
    return _reduce("margin_ranking_loss", M.maximum(-y * (x - o) + margin, 0.0), reduction)


def _pdist(a: Tensor, b: Tensor, p: float, eps: float) -> Tensor:
    d = a - b + eps
    if p == 2:
        return M.sqrt(M.sum(d * d, axis=-1))
    return M.pow(M.sum(M.pow(M.abs(d), float(p)), axis=-1), 1.0 / p)


def triplet_margin_loss(
    input: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    epsilon: float = 1e-6,
    swap: bool = False,
    reduction: str = "mean",
    name: str | None = None,
) -> Tensor:
    """max(d(a, pos) - d(a, neg) + margin, 0) with d the p-norm distance over the last axis;
    ``swap`` uses min(d(a, neg), d(pos, neg))."""
    a = float_arg("triplet_margin_loss", input, "input")
    pos = float_arg("triplet_margin_loss", positive, "positive").astype(a.dtype)
    neg = float_arg("triplet_margin_loss", negative, "negative").astype(a.dtype)
    if not a.shape == pos.shape == neg.shape:
        raise OpArgumentError(
            f"[triplet_margin_loss] input, positive and negative must share a shape, got {a.shape}, {pos.shape}, {neg.shape}"
        )
    dp, dn = _pdist(a, pos, p, epsilon), _pdist(a, neg, p, epsilon)
    if swap:
        dn = M.minimum(dn, _pdist(pos, neg, p, epsilon))
    return _reduce("triplet_margin_loss", M.maximum(dp - dn + margin, 0.0), reduction)


def hinge_embedding_loss(
    input: Tensor, label: Tensor, margin: float = 1.0, reduction: str = "mean", name: str | None = None
) -> Tensor:
    """input where label is 1, max(0, margin - input) where it is -1."""
    x, y = _pair("hinge_embedding_loss", input, label)
    loss = M.where(y == 1.0, x, 0.0) + M.where(y == -1.0, M.maximum(margin - x, 0.0), 0.0)
    return _reduce("hinge_embedding_loss", loss, reduction)


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    label: Tensor,
    margin: float = 0.0,
    reduction: str = "mean",
    name: str | None = None,
) -> Tensor:
    """1 - cos(x1, x2) where label is 1, max(0, cos(x1, x2) - margin) where it is -1 (cosine
    over the last axis)."""
    x1 = float_arg("cosine_embedding_loss", input1, "input1")
    y = float_arg("cosine_embedding_loss", label, "label").astype(x1.dtype)
    cos = cosine_similarity(x1, input2, axis=-1)
    loss = M.where(y == 1.0, 1.0 - cos, M.maximum(cos - margin, 0.0))
    return _reduce("cosine_embedding_loss", loss, reduction)
