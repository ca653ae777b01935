"""Margin losses on scores, distances and similarities (Paddle's names and defaults):
margin_ranking_loss, triplet_margin_loss, hinge_embedding_loss, cosine_embedding_loss."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import creation as C
from .. import indexing as I
from .. import math as M
from ._common import float_arg
from .arith import cumsum
from .loss import _pair, _reduce
from .norm import cosine_similarity, log_softmax


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


def soft_margin_loss(
    input: Tensor, label: Tensor, reduction: str = "mean", name: str | None = None
) -> Tensor:
    """log(1 + exp(-label * input)), labels -1 or 1."""
    x, y = _pair("soft_margin_loss", input, label)
    z = -y * x  # log(1 + e^z) = max(z, 0) + log1p(e^-|z|), without overflow
    return _reduce("soft_margin_loss", M.maximum(z, 0.0) + M.log1p(M.exp(-M.abs(z))), reduction)


def multi_label_soft_margin_loss(
    input: Tensor,
    label: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
    name: str | None = None,
) -> Tensor:
    """-mean over classes of y log sigmoid(x) + (1 - y) log sigmoid(-x), per sample (times ``weight``)."""
    x, y = _pair("multi_label_soft_margin_loss", input, label)
    log_sig = lambda t: -(M.maximum(-t, 0.0) + M.log1p(M.exp(-M.abs(t))))  # noqa: E731
    per = -(y * log_sig(x) + (1.0 - y) * log_sig(-x))
    if weight is not None:
        per = per * weight
    return _reduce("multi_label_soft_margin_loss", M.mean(per, axis=-1), reduction)


def multi_margin_loss(
    input: Tensor,
    label: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    reduction: str = "mean",
    name: str | None = None,
) -> Tensor:
    """sum over classes i != y of max(0, margin - x[y] + x[i]) ** p / C (times ``weight[y]``)."""
    x = float_arg("multi_margin_loss", input)
    if x.ndim != 2 or label.dtype.kind not in "iu":
        raise OpArgumentError(
            f"[multi_margin_loss] input must be [N, C] and label integer class ids, got {x.shape} and {label.dtype}"
        )
    if p not in (1, 2):
        raise OpArgumentError(f"[multi_margin_loss] p must be 1 or 2, got {p}")
    y = label.reshape((-1, 1))
    target = I.take_along_axis(x, y, axis=1)
    hinge = M.maximum(x - target + margin, 0.0)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * I.take_along_axis(
            weight.reshape((1, -1)).expand((x.shape[0], weight.shape[0])), y, axis=1
        )
    own = I.take_along_axis(hinge, y, axis=1)  # the i == y term is margin ** p (times weight): drop it
    return _reduce("multi_margin_loss", (M.sum(hinge, axis=1) - own.reshape((-1,))) / x.shape[1], reduction)


def triplet_margin_with_distance_loss(
    input: Tensor,
    positive: Tensor,
    negative: Tensor,
    distance_function: Any = None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
    name: str | None = None,
) -> Tensor:
    """max(d(input, positive) - d(input, negative) + margin, 0) with a given distance (default
    the Euclidean one of :func:`triplet_margin_loss`)."""
    a = float_arg("triplet_margin_with_distance_loss", input)
    pos = float_arg("triplet_margin_with_distance_loss", positive, "positive")
    neg = float_arg("triplet_margin_with_distance_loss", negative, "negative")
    dist = distance_function or (lambda u, v: _pdist(u, v, 2, 1e-6))
    dp, dn = dist(a, pos), dist(a, neg)
    if swap:
        dn = M.minimum(dn, dist(pos, neg))
    return _reduce("triplet_margin_with_distance_loss", M.maximum(dp - dn + margin, 0.0), reduction)


def multi_label_margin_loss(
    input: Tensor, label: Tensor, reduction: str = "mean", name: str | None = None
) -> Tensor:
    """sum over target classes j and other classes i of max(0, 1 - (x[j] - x[i])) / C; each row of
    ``label`` lists its target classes, ended by the first -1."""
    x = float_arg("multi_label_margin_loss", input)
    if x.ndim not in (1, 2) or label.shape != x.shape or label.dtype.kind not in "iu":
        raise OpArgumentError(
            f"[multi_label_margin_loss] label must be integer class ids of the input's shape {x.shape}, "
            f"got {label.shape} {label.dtype}"
        )
    x2, y2 = (x.unsqueeze(0), label.unsqueeze(0)) if x.ndim == 1 else (x, label)
    c = x2.shape[1]
    # the targets of a row: its entries before the first -1
    valid = M.cast(cumsum(M.cast(y2 < 0, "int64"), axis=1) == 0, x2.dtype)  # [N, C] over label slots
    classes = C.arange(c, device=x.device)
    slot_is = M.cast(y2.unsqueeze(-1) == classes, x2.dtype) * valid.unsqueeze(-1)  # [N, slot, class]
    is_target = M.minimum(M.sum(slot_is, axis=1), 1.0)  # [N, C]
    x_target = M.sum(slot_is * x2.unsqueeze(1), axis=2)  # [N, slot]: x at each listed target
    hinge = M.maximum(1.0 - (x_target.unsqueeze(-1) - x2.unsqueeze(1)), 0.0)  # [N, slot, class]
    per = M.sum(hinge * valid.unsqueeze(-1) * (1.0 - is_target).unsqueeze(1), axis=[1, 2]) / c
    per = per.reshape(()) if x.ndim == 1 else per
    return _reduce("multi_label_margin_loss", per, reduction)


def npair_loss(anchor: Tensor, positive: Tensor, labels: Tensor, l2_reg: float = 0.002) -> Tensor:
    """N-pair loss (Sohn, 2016), as Paddle: the soft-label cross entropy of the similarities
    ``anchor @ positive.T`` against the same-label matrix (rows normalised), plus
    ``l2_reg / 4`` times the mean squared norms of the embeddings.

    >>> import framework as fw
    >>> a = fw.to_tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> round(float(fw.nn.functional.npair_loss(a, a, fw.to_tensor([0.0, 1.0]), l2_reg=0.0)), 4)
    0.3133
    """
    a = float_arg("npair_loss", anchor, "anchor")
    p = float_arg("npair_loss", positive, "positive").astype(a.dtype)
    if a.ndim != 2 or p.shape != a.shape:
        raise OpArgumentError(
            f"[npair_loss] anchor and positive must be (batch, dim) of one shape, got {a.shape} and {p.shape}"
        )
    lab = labels.reshape((-1, 1))
    if lab.shape[0] != a.shape[0]:
        raise OpArgumentError(f"[npair_loss] labels must hold {a.shape[0]} entries, got shape {labels.shape}")
    same = (lab == lab.reshape((1, -1))).astype(a.dtype)
    target = same / M.sum(same, axis=1, keepdim=True)
    l2 = (M.mean(M.sum(a * a, axis=1)) + M.mean(M.sum(p * p, axis=1))) * (0.25 * l2_reg)
    sim = M.matmul(a, p.transpose((1, 0)))
    ce = -M.sum(target * log_softmax(sim, axis=1), axis=1, keepdim=True)  # (batch, 1)
    return l2 + M.mean(M.sum(target * ce, axis=0))
