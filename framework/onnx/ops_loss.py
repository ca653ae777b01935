"""Converters of ONNX's losses and of the normalisations added in recent opsets."""

from __future__ import annotations

import numpy as np

import framework as fw

from ._registry import Node, converter


def nll(n: Node, logp: fw.Tensor, target: fw.Tensor, weight: fw.Tensor | None) -> fw.Tensor:
    """ONNX's NegativeLogLikelihoodLoss on ``logp`` [N, C, d...] and ``target`` [N, d...]."""
    t = target.astype("int64")
    ii = n.attr("ignore_index")
    mask = fw.not_equal(t, fw.full_like(t, ii)) if ii is not None else None
    safe = fw.where(mask, t, fw.zeros_like(t)) if mask is not None else t
    picked = fw.squeeze(fw.take_along_axis(logp, fw.unsqueeze(safe, 1), 1, broadcast=False), 1)
    if weight is not None:
        w = fw.reshape(fw.gather(weight, fw.reshape(safe, [-1]), axis=0), list(safe.shape))
    else:
        w = fw.ones(list(safe.shape), dtype=logp.dtype, device=n.device)
    if mask is not None:
        w = fw.where(mask, w, fw.zeros_like(w))
    loss = fw.negative(fw.multiply(picked, w))
    red = n.attr("reduction", "mean")
    if red == "none":
        return loss
    if red == "sum":
        return fw.sum(loss)
    return fw.divide(fw.sum(loss), fw.sum(w))


@converter("NegativeLogLikelihoodLoss")
def _nll(n: Node) -> fw.Tensor:
    return nll(n, n.tensor(0), n.tensor(1), n.tensor(2) if n.has(2) else None)


@converter("SoftmaxCrossEntropyLoss")
def _sce(n: Node) -> list[fw.Tensor]:
    logp = fw.nn.functional.log_softmax(n.tensor(0), axis=1)
    return [nll(n, logp, n.tensor(1), n.tensor(2) if n.has(2) else None), logp]


@converter("RMSNormalization")
def _rms_norm(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    ax = n.attr("axis", -1)
    ax = ax + x.ndim if ax < 0 else ax
    xs = x.astype("float32") if n.attr("stash_type", 1) == 1 and x.dtype != np.float32 else x
    ms = fw.mean(fw.multiply(xs, xs), axis=list(range(ax, x.ndim)), keepdim=True)
    y = fw.multiply(
        xs, fw.rsqrt(fw.add(ms, fw.full([], n.attr("epsilon", 1e-5), dtype=xs.dtype, device=n.device)))
    )
    y = y.astype(x.dtype) if y.dtype != x.dtype else y
    return fw.multiply(y, n.tensor(1))


@converter("CumProd", consts=(1,))
def _cumprod(n: Node) -> fw.Tensor:
    x = n.tensor(0)
    ax = int(n.const(1).reshape(()))
    ax = ax + x.ndim if ax < 0 else ax
    rev = n.attr("reverse", 0)
    if rev:
        x = fw.flip(x, [ax])
    if n.attr("exclusive", 0):  # shifted by one: a one first, the last element dropped
        pad = [0, 0] * x.ndim
        pad[2 * ax] = 1
        x = fw.slice(fw.pad(x, pad, mode="constant", value=1.0), [ax], [0], [x.shape[ax]])
    y = fw.cumprod(x, dim=ax)
    return fw.flip(y, [ax]) if rev else y
