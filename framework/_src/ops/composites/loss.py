"""Losses: cross_entropy (label smoothing, ignore_index, soft labels, class weights), nll,
mse, l1, binary cross-entropy with logits. Built on log_softmax and reductions."""

from __future__ import annotations

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import math as M
from .. import shape as S
from ..creation import arange
from ..indexing import gather
from ._common import axis_arg, float_arg, tensor_arg
from .misc import one_hot_unchecked
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


def _check_labels(name: str, safe: Tensor, c: int, ignore_index: int) -> None:
    """Labels outside [0, c) would silently pick nothing from the one-hot: let the gather
    kernel's bounds check (which every plugin must do) catch them, and say it in loss terms."""
    try:
        gather(arange(c, device=safe.device), safe.reshape((-1,)), axis=0)
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
    _check_labels(name, safe, c, ignore_index)
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

    >>> import framework as fw
    >>> import framework.nn.functional as F
    >>> round(F.cross_entropy(fw.to_tensor([[0.0, 0.0]]), fw.to_tensor([1])).item(), 4)
    0.6931
    """
    input = float_arg("cross_entropy", input, "input")
    if reduction not in _REDUCTIONS:
        raise OpArgumentError(f"[cross_entropy] reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise OpArgumentError(f"[cross_entropy] label_smoothing must be in [0, 1], got {label_smoothing}")
    ax = axis_arg("cross_entropy", axis, input.ndim)
    if ax != input.ndim - 1:
        input = S.swapaxes(input, ax, -1) if input.ndim > 1 else input
        if not soft_label and label.ndim == input.ndim:
            label = S.swapaxes(label, ax, -1)
    logp = log_softmax(input, axis=-1) if use_softmax else M.log(input)
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
        return _reduce("cross_entropy", -M.sum(logp * target, axis=-1), reduction)
    return _nll_last(logp, label, weight, ignore_index, reduction, label_smoothing, "cross_entropy")


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
