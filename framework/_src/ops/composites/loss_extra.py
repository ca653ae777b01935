"""More losses (Paddle's names and defaults): binary_cross_entropy, smooth_l1_loss, kl_div,
margin_ranking_loss, sigmoid_focal_loss, triplet_margin_loss, hinge_embedding_loss,
cosine_embedding_loss, square_error_cost, softmax_with_cross_entropy and ctc_loss, all built
from existing ops (their gradients by autograd through them)."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ...tensor import Tensor, to_tensor
from .. import creation as C
from .. import math as M
from .. import shape as S
from ._common import float_arg, tensor_arg
from .loss import _pair, _reduce, binary_cross_entropy_with_logits, cross_entropy
from .misc import one_hot_unchecked
from .norm import log_softmax
from .norm_extra import cosine_similarity

_NEG = -1e30  # a finite log(0): logsumexp over it stays finite, and so do its gradients


def binary_cross_entropy(
    input: Tensor,
    label: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
    name: str | None = None,
) -> Tensor:
    """-(y log p + (1 - y) log(1 - p)) of probabilities ``input``; each log is clipped at -100
    (Paddle's and PyTorch's rule) so p = 0 or 1 gives a finite loss."""
    p, y = _pair("binary_cross_entropy", input, label)
    if p.shape != y.shape:
        raise OpArgumentError(
            f"[binary_cross_entropy] input {p.shape} and label {y.shape} must have the same shape"
        )
    tiny = 3.720075976020836e-44  # exp(-100)
    loss = -(y * M.log(M.maximum(p, tiny)) + (1.0 - y) * M.log(M.maximum(1.0 - p, tiny)))
    if weight is not None:
        loss = loss * tensor_arg("binary_cross_entropy", weight, "weight").astype(p.dtype)
    return _reduce("binary_cross_entropy", loss, reduction)


def smooth_l1_loss(
    input: Tensor, label: Tensor, reduction: str = "mean", delta: float = 1.0, name: str | None = None
) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), with d = input - label (Paddle's
    Huber form)."""
    x, y = _pair("smooth_l1_loss", input, label)
    d = x - y
    a = M.abs(d)
    loss = M.where(a < delta, d * d * 0.5, (a - 0.5 * delta) * delta)
    return _reduce("smooth_l1_loss", loss, reduction)


def kl_div(
    input: Tensor, label: Tensor, reduction: str = "mean", log_target: bool = False, name: str | None = None
) -> Tensor:
    """label * (log(label) - input) with ``input`` log-probabilities (0 where label is 0);
    ``batchmean`` divides the sum by the batch size."""
    x, y = _pair("kl_div", input, label)
    if log_target:
        loss = M.exp(y) * (y - x)
    else:
        safe = M.where(y > 0, y, 1.0)
        loss = M.where(y > 0, y * (M.log(safe) - x), 0.0)
    if reduction == "batchmean":
        return M.sum(loss) * (1.0 / x.shape[0]) if x.ndim else M.sum(loss)
    return _reduce("kl_div", loss, reduction)


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


def sigmoid_focal_loss(
    logit: Tensor,
    label: Tensor,
    normalizer: Tensor | None = None,
    alpha: float = 0.25,
    gamma: float = 2.0,
    reduction: str = "sum",
    name: str | None = None,
) -> Tensor:
    """Focal loss: alpha_t (1 - p_t)^gamma * BCE(logit, label), divided by ``normalizer``."""
    x, y = _pair("sigmoid_focal_loss", logit, label)
    p = (M.tanh(x * 0.5) + 1.0) * 0.5
    ce = binary_cross_entropy_with_logits(x, y, reduction="none")
    p_t = p * y + (1.0 - p) * (1.0 - y)
    loss = ce * M.pow(1.0 - p_t, float(gamma))
    if alpha >= 0:
        loss = loss * (y * alpha + (1.0 - y) * (1.0 - alpha))
    if normalizer is not None:
        loss = loss / tensor_arg("sigmoid_focal_loss", normalizer, "normalizer").astype(x.dtype)
    return _reduce("sigmoid_focal_loss", loss, reduction)


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


def square_error_cost(input: Tensor, label: Tensor) -> Tensor:
    """(input - label)^2, elementwise."""
    x, y = _pair("square_error_cost", input, label)
    d = x - y
    return d * d


def softmax_with_cross_entropy(
    logits: Tensor,
    label: Tensor,
    soft_label: bool = False,
    ignore_index: int = -100,
    numeric_stable_mode: bool = True,
    return_softmax: bool = False,
    axis: int = -1,
) -> Any:
    """Per-sample cross-entropy with the class axis kept as size 1 (Paddle's legacy op); with
    ``return_softmax`` also the softmax."""
    logits = float_arg("softmax_with_cross_entropy", logits, "logits")
    ax = axis % logits.ndim
    lab = label
    if not soft_label and isinstance(label, Tensor) and label.ndim == logits.ndim and label.shape[ax] == 1:
        lab = label.squeeze(ax)
    loss = cross_entropy(
        logits, lab, ignore_index=ignore_index, reduction="none", soft_label=soft_label, axis=ax
    ).unsqueeze(ax)
    if return_softmax:
        return loss, M.exp(log_softmax(logits, axis=ax))
    return loss


def _lse(*xs: Tensor) -> Tensor:
    m = xs[0]
    for t in xs[1:]:
        m = M.maximum(m, t)
    m = m.detach()
    s = M.exp(xs[0] - m)
    for t in xs[1:]:
        s = s + M.exp(t - m)
    return M.log(s) + m


def ctc_loss(
    log_probs: Tensor,
    labels: Tensor,
    input_lengths: Tensor,
    label_lengths: Tensor,
    blank: int = 0,
    reduction: str = "mean",
    norm_by_times: bool = False,
) -> Tensor:
    """Connectionist temporal classification loss of ``log_probs`` (T, N, C) logits (a
    log-softmax is applied, as Paddle's warpctc does) against padded ``labels`` (N, S).

    The forward algorithm in log space over the blank-extended label sequence, one step per
    time frame; frames past a sample's ``input_lengths`` leave its state unchanged. ``mean``
    divides each loss by its label length, then averages (Paddle's rule).
    """
    x = float_arg("ctc_loss", log_probs, "log_probs")
    labels = tensor_arg("ctc_loss", labels, "labels")
    if x.ndim != 3 or labels.ndim != 2 or labels.shape[0] != x.shape[1]:
        raise OpArgumentError(
            f"[ctc_loss] log_probs must be (T, N, C) and labels (N, S) with the same N, got {x.shape} and {labels.shape}"
        )
    if labels.dtype.kind not in "iu":
        raise OpArgumentError(f"[ctc_loss] labels must be integer class ids, got dtype {labels.dtype}")
    t_max, n, c = x.shape
    s = labels.shape[1]
    il = [int(v) for v in tensor_arg("ctc_loss", input_lengths, "input_lengths").reshape((-1,)).tolist()]
    ll = [int(v) for v in tensor_arg("ctc_loss", label_lengths, "label_lengths").reshape((-1,)).tolist()]
    if len(il) != n or len(ll) != n or max(il) > t_max or max(ll) > s or min(il) < 1 or min(ll) < 0:
        raise OpArgumentError(
            f"[ctc_loss] input_lengths {il} must be in [1, {t_max}] and label_lengths {ll} in [0, {s}], one per sample ({n})"
        )
    if not 0 <= blank < c:
        raise OpArgumentError(f"[ctc_loss] blank={blank} must be a class id in [0, {c})")
    lp = log_softmax(x, axis=-1)
    # extended labels: blank, l1, blank, l2, ..., blank  -> (N, 2S+1)
    ext_len = 2 * s + 1
    lab = labels.astype("int64")
    blanks = C.full((n, s), blank, dtype="int64", device=x.device)
    ext = S.concat(
        [
            S.stack([blanks, lab], axis=2).reshape((n, 2 * s)),
            C.full((n, 1), blank, dtype="int64", device=x.device),
        ],
        axis=1,
    )
    emit_oh = M.cast(one_hot_unchecked(M.clip(ext, 0, c - 1), c), x.dtype)  # (N, 2S+1, C)
    # s-2 transition allowed where ext[s] != blank and ext[s] != ext[s-2]
    prev2 = S.pad_raw(S.slice_raw(ext, (0, 0), (n, ext_len - 2), (1, 1)), ((0, 0), (2, 0)), blank)
    skip_ok = (ext != blank) & (ext != prev2)
    neg = C.full((n, ext_len), _NEG, dtype=x.dtype, device=x.device)
    pos = C.arange(ext_len, device=x.device).reshape((1, ext_len))
    alpha = M.where(pos < 2, 0.0, neg)
    in_len = to_tensor(il, dtype="int64", device=x.device).reshape((n, 1))
    for t in range(t_max):
        emit = M.matmul(emit_oh, lp[t].unsqueeze(-1)).squeeze(-1)  # (N, 2S+1)
        if t == 0:
            alpha = alpha + emit
            continue
        a1 = S.pad_raw(S.slice_raw(alpha, (0, 0), (n, ext_len - 1), (1, 1)), ((0, 0), (1, 0)), _NEG)
        a2 = S.pad_raw(S.slice_raw(alpha, (0, 0), (n, ext_len - 2), (1, 1)), ((0, 0), (2, 0)), _NEG)
        a2 = M.where(skip_ok, a2, _NEG)
        new = _lse(alpha, a1, a2) + emit
        alpha = M.where(in_len > t, new, alpha)
    end = to_tensor([2 * v for v in ll], dtype="int64", device=x.device).reshape((n, 1))
    last = M.sum(M.where(pos == end, alpha, 0.0), axis=1)
    before = M.sum(M.where(pos == end - 1, alpha, 0.0), axis=1)
    before = M.where(end.reshape((n,)) > 0, before, _NEG)
    loss = -_lse(last, before)
    if norm_by_times:
        loss = loss / to_tensor(il, dtype=x.dtype, device=x.device)
    if reduction == "mean":
        return M.mean(loss / M.maximum(to_tensor(ll, dtype=x.dtype, device=x.device), 1.0))
    return _reduce("ctc_loss", loss, reduction)
