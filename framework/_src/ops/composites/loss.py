"""Losses: cross_entropy (label smoothing, ignore_index, soft labels, class weights), nll,
mse, l1, binary cross-entropy with logits; binary_cross_entropy, smooth_l1_loss, kl_div,
sigmoid_focal_loss, square_error_cost, softmax_with_cross_entropy and label_smooth (Paddle's
names and defaults). Built on log_softmax and reductions (their gradients by autograd)."""

from __future__ import annotations

import math
from typing import Any

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import math as M
from .. import shape as S
from ..creation import arange
from ..indexing import take_rows
from ._common import axis_arg, float_arg, tensor_arg
from .embedding import one_hot_unchecked
from .norm import log_softmax

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(name: str, loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return M.mean(loss)
    if reduction == "sum":
        return M.sum(loss)
    if reduction == "none":
        return loss
    raise OpArgumentError(f"[{name}] reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def _hard_label(name: str, label: Tensor, lead: tuple[int, ...]) -> Tensor:
    if label.dtype.kind not in "iu":
        raise OpArgumentError(
            f"[{name}] hard labels must be integer class ids, got dtype {label.dtype}; pass soft_label=True for probabilities"
        )
    if label.shape == lead + (1,):
        label = label.reshape(lead)
    if label.shape != lead:
        raise OpArgumentError(f"[{name}] label has shape {label.shape}, expected {lead} (or {lead + (1,)})")
    return label


def nll_loss(
    input: Tensor,
    label: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    name: str | None = None,
) -> Tensor:
    """Negative log-likelihood of log-probabilities ``input`` (N, C) or (N, C, d...) at integer ``label``."""
    input = float_arg("nll_loss", input, "input")
    if input.ndim < 2:
        raise OpArgumentError(f"[nll_loss] input must be (N, C, ...), got shape {input.shape}")
    logp = input if input.ndim == 2 else _class_last(input)
    return _nll_last(logp, label, weight, ignore_index, reduction, 0.0, "nll_loss")


def _class_last(x: Tensor) -> Tensor:
    perm = (0,) + tuple(range(2, x.ndim)) + (1,)
    return x.transpose(perm)


def _check_labels(name: str, safe: Tensor, c: int, ignore_index: int) -> Tensor:
    """``safe`` unchanged, after the gather kernel's bounds check (which every plugin must do):
    labels outside [0, c) would silently pick nothing from the one-hot. The labels are the
    gather of ``arange(c)`` at themselves, so the check stays in a traced program (its result
    is used: dead-code elimination keeps it) and a compiled loss raises as an eager one does."""
    try:
        return take_rows(arange(c, device=safe.device), safe.reshape((-1,)), 0).reshape(safe.shape)
    except OpArgumentError as exc:
        raise OpArgumentError(
            f"[{name}] a label is out of range for {c} classes ({exc}); labels must be in "
            f"[0, {c}) or equal ignore_index ({ignore_index})"
        ) from None


def _nll_last(
    logp: Tensor,
    label: Tensor,
    weight: Tensor | None,
    ignore_index: int,
    reduction: str,
    label_smoothing: float,
    name: str,
) -> Tensor:
    c = logp.shape[-1]
    label = _hard_label(name, tensor_arg(name, label, "label"), logp.shape[:-1])
    valid = label != ignore_index
    safe = M.where(valid, label, 0)
    safe = _check_labels(name, safe, c, ignore_index)
    oh = M.cast(one_hot_unchecked(safe, c), logp.dtype)
    picked = -M.sum(logp * oh, axis=-1)
    if label_smoothing:
        smooth = -M.sum(logp, axis=-1) * (1.0 / c)
        picked = picked * (1.0 - label_smoothing) + smooth * label_smoothing
    w = M.cast(valid, logp.dtype)
    if weight is not None:
        w = w * M.sum(oh * weight.astype(logp.dtype), axis=-1)
    loss = picked * w
    if reduction == "mean":
        return M.sum(loss) / M.sum(w)
    return _reduce(name, loss, reduction)


#: Paddle's softmax-with-cross-entropy kernel clips the max-shifted logits at -64 before the
#: exponential, so one sample's loss is at most 64 + log(classes)
_SHIFTED_LOGIT_FLOOR = -64.0


def _clipped_log_softmax(x: Tensor) -> Tensor:
    """log_softmax over the last axis as Paddle's cross-entropy computes it: ``s = x - max(x)``
    clipped below at -64, then ``s - log(sum(exp(s)))``. The clip changes values only; the
    gradient is Paddle's ``softmax(s) - target``, as if nothing had been clipped."""
    s = x - M.max(x, axis=-1, keepdim=True).detach()
    s = s + (M.maximum(s, _SHIFTED_LOGIT_FLOOR) - s).detach()
    return s - M.log(M.sum(M.exp(s), axis=-1, keepdim=True))


def cross_entropy(
    input: Tensor,
    label: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    soft_label: bool = False,
    axis: int = -1,
    use_softmax: bool = True,
    label_smoothing: float = 0.0,
    name: str | None = None,
) -> Tensor:
    """Softmax cross-entropy (Paddle's signature; classes along ``axis``, the last by default).

    Hard labels are integer ids (positions equal to ``ignore_index`` count for nothing, and
    ``mean`` divides by the weight of the rest); ``soft_label=True`` takes probabilities.
    ``label_smoothing`` mixes the one-hot target with the uniform distribution.

    With ``reduction="none"`` the class axis stays (size 1) where the label has it or the
    labels are soft, as Paddle. As Paddle, the logits minus their maximum are clipped at -64
    before the softmax, so a sample's loss is bounded (``[[1000, -1000]]`` with label 1 costs 64, not 2000); the
    gradient is still ``softmax - target``.

    >>> import framework as fw
    >>> import framework.nn.functional as F
    >>> round(F.cross_entropy(fw.to_tensor([[0.0, 0.0]]), fw.to_tensor([1])).item(), 4)
    0.6931
    >>> F.cross_entropy(fw.to_tensor([[1000.0, -1000.0]]), fw.to_tensor([1])).item()
    64.0
    """
    input = float_arg("cross_entropy", input, "input")
    if reduction not in _REDUCTIONS:
        raise OpArgumentError(f"[cross_entropy] reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise OpArgumentError(f"[cross_entropy] label_smoothing must be in [0, 1], got {label_smoothing}")
    ax = axis_arg("cross_entropy", axis, input.ndim)
    if (
        not soft_label
        and isinstance(label, Tensor)
        and label.dtype.kind == "f"
        and label.shape == input.shape
    ):
        soft_label = True  # float labels of the input's shape are probabilities (as Paddle reads them)
    # Paddle keeps the class axis (size 1) in a per-sample loss when the label has it
    keep_axis = reduction == "none" and (soft_label or getattr(label, "ndim", 0) == input.ndim)
    if ax != input.ndim - 1:
        input = S.swapaxes(input, ax, -1) if input.ndim > 1 else input
        if not soft_label and label.ndim == input.ndim:
            label = S.swapaxes(label, ax, -1)
    logp = _clipped_log_softmax(input) if use_softmax else M.log(input)
    if soft_label:
        label = tensor_arg("cross_entropy", label, "label")
        if label.shape != logp.shape:
            raise OpArgumentError(
                f"[cross_entropy] soft labels must have the input's shape {logp.shape}, got {label.shape}"
            )
        target = M.cast(label, logp.dtype)
        if label_smoothing:
            target = target * (1.0 - label_smoothing) + label_smoothing / logp.shape[-1]
        if weight is not None:
            target = target * weight.astype(logp.dtype)
        loss = _reduce("cross_entropy", -M.sum(logp * target, axis=-1), reduction)
    else:
        loss = _nll_last(logp, label, weight, ignore_index, reduction, label_smoothing, "cross_entropy")
    return loss.unsqueeze(ax) if keep_axis else loss


def _pair(name: str, input: Tensor, label: Tensor) -> tuple[Tensor, Tensor]:
    input = float_arg(name, input, "input")
    label = tensor_arg(name, label, "label")
    if label.dtype != input.dtype:
        label = M.cast(label, input.dtype)
    return input, label


def mse_loss(input: Tensor, label: Tensor, reduction: str = "mean", name: str | None = None) -> Tensor:
    input, label = _pair("mse_loss", input, label)
    d = input - label
    return _reduce("mse_loss", d * d, reduction)


def l1_loss(input: Tensor, label: Tensor, reduction: str = "mean", name: str | None = None) -> Tensor:
    input, label = _pair("l1_loss", input, label)
    return _reduce("l1_loss", M.abs(input - label), reduction)


def binary_cross_entropy_with_logits(
    logit: Tensor,
    label: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
    name: str | None = None,
) -> Tensor:
    """-[y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))], computed stably from logits."""
    x, y = _pair("binary_cross_entropy_with_logits", logit, label)
    log1pexp = M.log(M.exp(-M.abs(x)) + 1.0)
    if pos_weight is None:
        loss = M.maximum(x, 0.0) - x * y + log1pexp
    else:
        pw = pos_weight.astype(x.dtype)
        loss = (1.0 - y) * x + (1.0 + (pw - 1.0) * y) * (log1pexp + M.maximum(-x, 0.0))
    if weight is not None:
        loss = loss * weight.astype(x.dtype)
    return _reduce("binary_cross_entropy_with_logits", loss, reduction)


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
    )
    loss = loss if soft_label else loss.unsqueeze(ax)  # soft labels: cross_entropy kept the axis
    if return_softmax:
        return loss, M.exp(log_softmax(logits, axis=ax))
    return loss


def label_smooth(
    label: Tensor, prior_dist: Tensor | None = None, epsilon: float = 0.1, name: str | None = None
) -> Tensor:
    """(1 - epsilon) * label + epsilon * prior (uniform over the last axis when None)."""
    label = float_arg("label_smooth", label, "label")
    if not 0.0 <= epsilon <= 1.0:
        raise OpArgumentError(f"[label_smooth] epsilon must be in [0, 1], got {epsilon}")
    prior = (
        (1.0 / label.shape[-1])
        if prior_dist is None
        else tensor_arg("label_smooth", prior_dist, "prior_dist").astype(label.dtype)
    )
    return label * (1.0 - epsilon) + prior * epsilon


def poisson_nll_loss(
    input: Tensor,
    label: Tensor,
    log_input: bool = True,
    full: bool = False,
    epsilon: float = 1e-8,
    reduction: str = "mean",
    name: str | None = None,
) -> Tensor:
    """exp(x) - y x (``log_input``), else x - y log(x + epsilon); ``full`` adds Stirling's term."""
    x, y = _pair("poisson_nll_loss", input, label)
    loss = M.exp(x) - y * x if log_input else x - y * M.log(x + epsilon)
    if full:
        safe = M.where(y > 1, y, 1.0)
        stirling = safe * M.log(safe) - safe + 0.5 * M.log(safe * (2 * math.pi))
        loss = loss + M.where(y > 1, stirling, 0.0)
    return _reduce("poisson_nll_loss", loss, reduction)


def gaussian_nll_loss(
    input: Tensor,
    label: Tensor,
    variance: Tensor,
    full: bool = False,
    epsilon: float = 1e-6,
    reduction: str = "mean",
    name: str | None = None,
) -> Tensor:
    """(log(max(var, epsilon)) + (x - y)^2 / max(var, epsilon)) / 2, plus log(2 pi) / 2 with ``full``."""
    x, y = _pair("gaussian_nll_loss", input, label)
    var = M.maximum(float_arg("gaussian_nll_loss", variance, "variance").astype(x.dtype), epsilon)
    if var.ndim == x.ndim - 1:
        var = var.unsqueeze(-1)
    loss = (M.log(var) + (x - y) * (x - y) / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce("gaussian_nll_loss", loss, reduction)


def log_loss(input: Tensor, label: Tensor, epsilon: float = 1e-4, name: str | None = None) -> Tensor:
    """-y log(x + epsilon) - (1 - y) log(1 - x + epsilon), per element."""
    x, y = _pair("log_loss", input, label)
    return -y * M.log(x + epsilon) - (1.0 - y) * M.log(1.0 - x + epsilon)


def dice_loss(input: Tensor, label: Tensor, epsilon: float = 1e-5, name: str | None = None) -> Tensor:
    """1 - 2 |x * onehot(y)| / (|x| + |onehot(y)|) per sample, averaged (``label`` [..., 1] class ids)."""
    x = float_arg("dice_loss", input)
    if label.dtype.kind not in "iu" or label.shape[:-1] != x.shape[:-1] or label.shape[-1] != 1:
        raise OpArgumentError(
            f"[dice_loss] label must hold integer class ids of shape {x.shape[:-1] + (1,)}, got {label.shape} {label.dtype}"
        )
    onehot = M.cast(label == arange(x.shape[-1], device=x.device), x.dtype)
    dims = list(range(1, x.ndim))
    inse = M.sum(x * onehot, axis=dims)
    denom = M.sum(x, axis=dims) + M.sum(onehot, axis=dims)
    return M.mean(1.0 - inse * 2.0 / (denom + epsilon))
