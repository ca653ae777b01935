"""ctc_loss: connectionist temporal classification by the forward algorithm in log space,
built from existing ops (its gradient by autograd through them)."""

from __future__ import annotations

from adapter_api import OpArgumentError

from ...tensor import Tensor, to_tensor
from .. import creation as C
from .. import math as M
from .. import shape as S
from ._common import float_arg, tensor_arg
from .embedding import one_hot_unchecked
from .loss import _reduce
from .norm import log_softmax

_NEG = -1e30  # a finite log(0): logsumexp over it stays finite, and so do its gradients


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
