"""Losses over label sequences and large vocabularies (Paddle's names): rnnt_loss,
edit_distance, adaptive_log_softmax_with_loss and class_center_sample, built from existing
ops (gradients by autograd through them) or, where the result is integer bookkeeping, on the
host."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ...tensor import Tensor, to_tensor
from .. import creation as C
from .. import indexing as I
from .. import math as M
from .. import shape as S
from ..random import randperm
from ._common import float_arg, tensor_arg
from .ctc_loss import _lse
from .linear import linear
from .norm import log_softmax


def _host_ints(op: str, t: Any, what: str) -> np.ndarray:
    t = tensor_arg(op, t, what)
    if t.dtype.kind not in "iu":
        raise OpArgumentError(f"[{op}] {what} must be integers, got dtype {t.dtype}")
    return np.asarray(t.numpy()).astype(np.int64)


def rnnt_loss(
    input: Tensor,
    label: Tensor,
    input_lengths: Tensor,
    label_lengths: Tensor,
    blank: int = 0,
    fastemit_lambda: float = 0.001,
    reduction: str = "mean",
    name: str | None = None,
) -> Tensor:
    """RNN-Transducer loss of ``input`` (B, T, U+1, V), read as log-probabilities (as Paddle's
    CPU kernel reads them), against ``label`` (B, U) with per-sample lengths.

    The forward variable ``alpha[t, u]`` sums the paths that emitted ``u`` labels by frame
    ``t``; the loss is ``-(alpha[T-1, U] + input[T-1, U, blank])`` per sample. FastEmit
    (``fastemit_lambda``) leaves the value as it is and scales the gradient of the label
    emissions by ``1 + fastemit_lambda`` (Paddle's, from warp-transducer). ``mean`` divides
    the sum by the batch size.

    >>> import framework as fw
    >>> import framework.nn.functional as F
    >>> x = fw.zeros([1, 2, 2, 3], dtype="float64")
    >>> one = fw.to_tensor([1], dtype="int32")
    >>> float(F.rnnt_loss(x, fw.to_tensor([[1]], dtype="int32"), fw.to_tensor([2], dtype="int32"), one, fastemit_lambda=0.0))
    -0.6931471805599453
    """
    x = float_arg("rnnt_loss", input, "input")
    if x.ndim != 4:
        raise OpArgumentError(f"[rnnt_loss] input must be (B, T, U+1, V), got shape {x.shape}")
    b, t_max, u1, v = x.shape
    lab = tensor_arg("rnnt_loss", label, "label")
    if lab.ndim != 2 or lab.shape[0] != b or lab.shape[1] < u1 - 1:
        raise OpArgumentError(
            f"[rnnt_loss] label must be (B, U) with B={b} and U >= {u1 - 1}, got shape {lab.shape}"
        )
    il = _host_ints("rnnt_loss", input_lengths, "input_lengths").reshape(-1)
    ll = _host_ints("rnnt_loss", label_lengths, "label_lengths").reshape(-1)
    if len(il) != b or len(ll) != b or il.min() < 1 or il.max() > t_max or ll.min() < 0 or ll.max() > u1 - 1:
        raise OpArgumentError(
            f"[rnnt_loss] input_lengths {il.tolist()} must be in [1, {t_max}] and label_lengths "
            f"{ll.tolist()} in [0, {u1 - 1}], one per sample ({b})"
        )
    if not 0 <= blank < v:
        raise OpArgumentError(f"[rnnt_loss] blank={blank} must be a class id in [0, {v})")
    if reduction not in ("mean", "sum", "none"):
        raise OpArgumentError(f"[rnnt_loss] reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    nb = x[:, :, :, blank]  # (B, T, U+1): stay on the label, go to the next frame
    if u1 > 1:
        idx = lab[:, : u1 - 1].astype("int64").reshape((b, 1, u1 - 1, 1)).expand((b, t_max, u1 - 1, 1))
        emit = I.take_along_axis(x[:, :, : u1 - 1, :], M.clip(idx, 0, v - 1), axis=3).squeeze(-1)
        if fastemit_lambda:  # the value unchanged, its gradient times (1 + lambda)
            emit = emit * (1.0 + fastemit_lambda) - emit.detach() * fastemit_lambda
    alpha: list[list[Tensor]] = []
    for t in range(t_max):
        row: list[Tensor] = []
        for u in range(u1):
            if t == 0 and u == 0:
                row.append(C.zeros((b,), dtype=x.dtype, device=x.device))
                continue
            terms = []
            if t > 0:
                terms.append(alpha[t - 1][u] + nb[:, t - 1, u])
            if u > 0:
                terms.append(row[u - 1] + emit[:, t, u - 1])
            row.append(_lse(*terms) if len(terms) > 1 else terms[0])
        alpha.append(row)
    # each sample's end: alpha[T_b - 1, U_b] + blank there, picked by a one-hot mask
    ends = []
    for t in range(t_max):
        for u in range(u1):
            ends.append(alpha[t][u] + nb[:, t, u])
    grid = S.stack(ends, axis=1)  # (B, T*(U+1))
    pick = np.zeros((b, t_max * u1), dtype=bool)
    pick[np.arange(b), (il - 1) * u1 + ll] = True
    loss = -M.sum(M.where(to_tensor(pick, device=x.device), grid, 0.0), axis=1)
    if reduction == "none":
        return loss
    total = M.sum(loss)
    return total / b if reduction == "mean" else total


def edit_distance(
    input: Tensor,
    label: Tensor,
    normalized: bool = True,
    ignored_tokens: Sequence[int] | None = None,
    input_length: Tensor | None = None,
    label_length: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Levenshtein distance between each row of ``input`` (B, M) and of ``label`` (B, N)
    (int64 token ids, padded: the lengths give the real ones; tokens in ``ignored_tokens``
    removed first). ``normalized`` divides by the label's length.

    Returns, as Paddle's kernel does, the number of sequences (int64, shape [1]) and the
    distances (float32, shape [B, 1]).

    >>> import framework as fw
    >>> import framework.nn.functional as F
    >>> n, d = F.edit_distance(fw.to_tensor([[1, 2, 3]]), fw.to_tensor([[1, 3, 3, 4]]), normalized=False)
    >>> n.tolist(), d.tolist()
    ([1], [[2.0]])
    """
    a = _host_ints("edit_distance", input, "input")
    b = _host_ints("edit_distance", label, "label")
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[0]:
        raise OpArgumentError(
            f"[edit_distance] input and label must be (B, M) and (B, N) with one B, got {a.shape} and {b.shape}"
        )
    la = (
        _host_ints("edit_distance", input_length, "input_length").reshape(-1)
        if input_length is not None
        else None
    )
    lb = (
        _host_ints("edit_distance", label_length, "label_length").reshape(-1)
        if label_length is not None
        else None
    )
    ignored = set(int(i) for i in ignored_tokens or ())
    out = np.zeros((a.shape[0], 1), dtype=np.float32)
    for r in range(a.shape[0]):
        s = [int(t) for t in a[r, : a.shape[1] if la is None else la[r]] if int(t) not in ignored]
        g = [int(t) for t in b[r, : b.shape[1] if lb is None else lb[r]] if int(t) not in ignored]
        prev = list(range(len(g) + 1))
        for i, si in enumerate(s, 1):
            cur = [i] + [0] * len(g)
            for j, gj in enumerate(g, 1):
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (si != gj))
            prev = cur
        d = float(prev[-1])
        out[r, 0] = d / len(g) if normalized and g else d
    dev = input.device if isinstance(input, Tensor) else None
    return to_tensor([a.shape[0]], dtype="int64", device=dev), to_tensor(out, device=dev)


def adaptive_log_softmax_with_loss(
    input: Tensor,
    label: Tensor,
    head_weight: Tensor,
    tail_weights: Sequence[Sequence[Tensor]],
    cutoffs: Sequence[int],
    head_bias: Tensor | None = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """Adaptive softmax (Grave et al.): the log-probability of each row's ``label`` and the
    mean negative of them. Classes below ``cutoffs[0]`` are scored by the head
    (``input @ head_weight + head_bias``, one extra column per cluster); a class of cluster
    ``i`` by the head's cluster column plus its log-softmax within the cluster
    (``input @ tail_weights[i][0] @ tail_weights[i][1]``). The last cutoff is the number
    of classes (as Paddle's: cutoffs ``[2]`` leave no tail cluster).

    >>> import framework as fw
    >>> import framework.nn.functional as F
    >>> out, loss = F.adaptive_log_softmax_with_loss(
    ...     fw.ones([2, 2]), fw.to_tensor([0, 2]), fw.zeros([2, 2]), [[fw.ones([2, 1]), fw.zeros([1, 2])]], [1, 3])
    >>> [round(v, 4) for v in out.tolist()], round(float(loss), 4)
    ([-0.6931, -1.3863], 1.0397)
    """
    x = float_arg("adaptive_log_softmax_with_loss", input, "input")
    y = tensor_arg("adaptive_log_softmax_with_loss", label, "label")
    if y.ndim > 1 or x.ndim != y.ndim + 1:
        raise OpArgumentError(
            f"[adaptive_log_softmax_with_loss] label must be 1-D with input 2-D (or 0-D with 1-D), "
            f"got label {y.shape} and input {x.shape}"
        )
    batched = y.ndim == 1
    if not batched:
        x, y = x.unsqueeze(0), y.unsqueeze(0)
    if x.shape[0] != y.shape[0]:
        raise OpArgumentError(
            f"[adaptive_log_softmax_with_loss] input and label must share the batch size, got {x.shape} and {y.shape}"
        )
    cuts = [0, *(int(c) for c in cutoffs)]
    if len(tail_weights) < len(cuts) - 2:
        raise OpArgumentError(
            f"[adaptive_log_softmax_with_loss] {len(cuts) - 2} tail clusters need as many tail_weights pairs, "
            f"got {len(tail_weights)}"
        )
    labels = _host_ints("adaptive_log_softmax_with_loss", y, "label").reshape(-1)
    hi = cuts[-1]
    if labels.size and (labels.min() < 0 or labels.max() >= hi):
        raise OpArgumentError(
            f"[adaptive_log_softmax_with_loss] label values must be in [0, {hi - 1}], got values in "
            f"[{labels.min()}, {labels.max()}]"
        )
    head_lp = log_softmax(linear(x, head_weight, head_bias), axis=1)
    shortlist = cuts[1]
    gather = np.where(labels < shortlist, labels, 0)
    out = None
    for i in range(1, len(cuts) - 1):
        lo, hi_i = cuts[i], cuts[i + 1]
        in_cluster = (labels >= lo) & (labels < hi_i)
        if not in_cluster.any():
            continue
        gather = np.where(in_cluster, shortlist + i - 1, gather)
        w0, w1 = tail_weights[i - 1][0], tail_weights[i - 1][1]
        cl = log_softmax(linear(linear(x, w0), w1), axis=1)
        rel = to_tensor(np.clip(labels - lo, 0, hi_i - lo - 1).reshape(-1, 1), device=x.device)
        local = I.take_along_axis(cl, rel, axis=1).reshape((-1,))
        part = M.where(to_tensor(in_cluster, device=x.device), local, 0.0)
        out = part if out is None else out + part
    g = to_tensor(gather.reshape(-1, 1), device=x.device)
    head = I.take_along_axis(head_lp, g, axis=1).reshape((-1,))
    out = head if out is None else head + out
    loss = M.mean(-out)
    return (out if batched else out.squeeze(0)), loss


def class_center_sample(
    label: Tensor, num_classes: int, num_samples: int, group: Any = None
) -> tuple[Tensor, Tensor]:
    """Sample class centers for a margin loss over many classes (PartialFC): every class in
    ``label`` (the positives) and, while fewer than ``num_samples``, classes drawn at random
    from the others. Returns the labels remapped to positions among the sampled classes and
    the sampled classes, sorted (both int64 like ``label``). One process only (``group``
    None or False).

    >>> import framework as fw
    >>> import framework.nn.functional as F
    >>> remapped, sampled = F.class_center_sample(fw.to_tensor([4, 1, 4]), 6, 2)
    >>> remapped.tolist(), sampled.tolist()
    ([1, 0, 1], [1, 4])
    """
    if group not in (None, False):
        raise OpArgumentError(
            "[class_center_sample] a process group is not supported (one process); pass group=None"
        )
    lab = _host_ints("class_center_sample", label, "label").reshape(-1)
    if lab.size and (lab.min() < 0 or lab.max() >= num_classes):
        raise OpArgumentError(
            f"[class_center_sample] label values must be in [0, {num_classes}), got [{lab.min()}, {lab.max()}]"
        )
    if not 0 < num_samples <= num_classes:
        raise OpArgumentError(
            f"[class_center_sample] num_samples must be in [1, num_classes={num_classes}], got {num_samples}"
        )
    pos = np.unique(lab)
    sampled = pos
    if len(pos) < num_samples:
        rest = np.setdiff1d(np.arange(num_classes), pos)
        order = np.asarray(randperm(len(rest)).numpy())
        sampled = np.sort(np.concatenate([pos, rest[order[: num_samples - len(pos)]]]))
    remapped = np.searchsorted(sampled, lab)
    dt = tensor_arg("class_center_sample", label, "label").dtype
    dev = label.device
    return to_tensor(remapped.astype(dt), device=dev), to_tensor(sampled.astype(dt), device=dev)
