"""Normalisation of (N, C, ...) tensors by channel: batch, instance, group and local-response
normalisation.

batch_norm/instance_norm compute their statistics with differentiable reductions and hand
them to one ``channel_norm`` composite ((x - mean) * rsqrt(var + eps) * weight + bias over the
channel axis), so the gradient flows through the statistics as well.
"""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ... import autograd
from ...tensor import Tensor
from .. import math as M
from .. import shape as S
from ..base import OPS, call, composite
from ._common import float_arg, same_meta, tensor_arg


@composite("channel_norm", amp="deny", infer=same_meta)
def channel_norm_decomposition(
    x: Tensor, mean: Tensor, var: Tensor, *params: Tensor, epsilon: float, has_weight: bool, has_bias: bool
) -> Tensor:
    """(x - mean) * rsqrt(var + epsilon) [* weight] [+ bias]; every operand is already shaped to
    broadcast against x."""
    y = (x - mean) * M.rsqrt(var + epsilon)
    i = 0
    if has_weight:
        y = y * params[i]
        i += 1
    if has_bias:
        y = y + params[i]
    return y


def _channel_axis(name: str, x: Tensor, data_format: str) -> int:
    if x.ndim < 2:
        raise OpArgumentError(f"[{name}] x must have at least 2 dimensions (N, C, ...), got shape {x.shape}")
    if data_format[:2] == "NC" or data_format == "NC":
        return 1
    if data_format[0] == "N" and data_format[-1] == "C":
        return x.ndim - 1
    raise OpArgumentError(
        f"[{name}] data_format must be channel-first (NC, NCL, NCHW, NCDHW) or channel-last (NLC, NHWC, NDHWC), got {data_format!r}"
    )


def _per_channel(
    name: str, t: Tensor | None, c: int, shape: tuple[int, ...], dtype: Any, what: str
) -> Tensor | None:
    if t is None:
        return None
    t = tensor_arg(name, t, what)
    if t.numel() != c:
        raise OpArgumentError(f"[{name}] {what} has shape {t.shape}, expected {c} elements (one per channel)")
    return t.astype(dtype).reshape(shape)


def _normalize(
    name: str, x: Tensor, mean: Tensor, var: Tensor, w: Tensor | None, b: Tensor | None, epsilon: float
) -> Tensor:
    ins = [x, mean, var] + [p for p in (w, b) if p is not None]
    return call(
        OPS["channel_norm"],
        ins,
        {"epsilon": float(epsilon), "has_weight": w is not None, "has_bias": b is not None},
    )


def batch_norm(
    x: Tensor,
    running_mean: Tensor,
    running_var: Tensor,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.9,
    epsilon: float = 1e-5,
    data_format: str = "NCHW",
    use_global_stats: bool | None = None,
    name: str | None = None,
) -> Tensor:
    """Batch normalisation over every axis but the channel one (Paddle's signature).

    In training (and ``use_global_stats`` not True) the batch mean and biased variance
    normalise ``x`` and the running statistics are updated in place:
    ``running = momentum * running + (1 - momentum) * batch`` (Paddle's convention). Otherwise
    the running statistics normalise ``x``.
    """
    x = float_arg("batch_norm", x)
    ax = _channel_axis("batch_norm", x, data_format)
    c = x.shape[ax]
    shp = tuple(c if i == ax else 1 for i in range(x.ndim))
    rm = _per_channel("batch_norm", running_mean, c, shp, x.dtype, "running_mean")
    rv = _per_channel("batch_norm", running_var, c, shp, x.dtype, "running_var")
    w = _per_channel("batch_norm", weight, c, shp, x.dtype, "weight")
    b = _per_channel("batch_norm", bias, c, shp, x.dtype, "bias")
    use_batch = training if use_global_stats is None else not use_global_stats
    if not use_batch:
        return _normalize("batch_norm", x, rm.detach(), rv.detach(), w, b, epsilon)
    axes = tuple(i for i in range(x.ndim) if i != ax)
    n = x.numel() // c
    if n < 2 and training:
        raise OpArgumentError(
            f"[batch_norm] training needs more than one value per channel, got x of shape {x.shape}"
        )
    mean = M.mean(x, axis=axes, keepdim=True)
    d = x - mean
    var = M.mean(d * d, axis=axes, keepdim=True)
    if training:
        _update_running(running_mean, mean, momentum)
        _update_running(running_var, var, momentum)
    return _normalize("batch_norm", x, mean, var, w, b, epsilon)


def _update_running(buf: Tensor, stat: Tensor, momentum: float) -> None:
    """buf <- momentum * buf + (1 - momentum) * stat, in place and outside the graph."""
    with autograd.no_grad():
        new = buf * momentum + stat.detach().reshape(buf.shape).astype(buf.dtype) * (1.0 - momentum)
    buf.set_value(new)


def instance_norm(
    x: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.9,
    eps: float = 1e-5,
    data_format: str = "NCHW",
    name: str | None = None,
) -> Tensor:
    """Normalise each (sample, channel) over its spatial positions, then scale and shift per channel."""
    x = float_arg("instance_norm", x)
    ax = _channel_axis("instance_norm", x, data_format)
    if x.ndim < 3:
        raise OpArgumentError(
            f"[instance_norm] x must have spatial dimensions (N, C, ...), got shape {x.shape}"
        )
    c = x.shape[ax]
    shp = tuple(c if i == ax else 1 for i in range(x.ndim))
    w = _per_channel("instance_norm", weight, c, shp, x.dtype, "weight")
    b = _per_channel("instance_norm", bias, c, shp, x.dtype, "bias")
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise OpArgumentError("[instance_norm] use_input_stats=False needs running_mean and running_var")
        rm = _per_channel("instance_norm", running_mean, c, shp, x.dtype, "running_mean")
        rv = _per_channel("instance_norm", running_var, c, shp, x.dtype, "running_var")
        return _normalize("instance_norm", x, rm, rv, w, b, eps)
    axes = tuple(i for i in range(1, x.ndim) if i != ax)
    mean = M.mean(x, axis=axes, keepdim=True)
    d = x - mean
    var = M.mean(d * d, axis=axes, keepdim=True)
    if running_mean is not None and running_var is not None:
        _update_running(running_mean, M.mean(mean, axis=0), momentum)
        _update_running(running_var, M.mean(var, axis=0), momentum)
    return _normalize("instance_norm", x, mean, var, w, b, eps)


@composite("group_norm", amp="deny", infer=same_meta)
def group_norm_decomposition(
    x: Tensor, *params: Tensor, num_groups: int, epsilon: float, has_weight: bool, has_bias: bool
) -> Tensor:
    """Channel-first x: (N, G, rest) statistics, normalise, reshape back, per-channel affine."""
    n = x.shape[0]
    g = x.reshape((n, num_groups, -1))
    mean = M.mean(g, axis=-1, keepdim=True)
    d = g - mean
    var = M.mean(d * d, axis=-1, keepdim=True)
    y = (d * M.rsqrt(var + epsilon)).reshape(x.shape)
    i = 0
    if has_weight:
        y = y * params[i]
        i += 1
    if has_bias:
        y = y + params[i]
    return y


def group_norm(
    x: Tensor,
    num_groups: int,
    epsilon: float = 1e-5,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    data_format: str = "NCHW",
    name: str | None = None,
) -> Tensor:
    """Normalise each sample over groups of ``C / num_groups`` channels (and all positions)."""
    x = float_arg("group_norm", x)
    ax = _channel_axis("group_norm", x, data_format)
    if ax != 1:
        perm = (0, x.ndim - 1) + tuple(range(1, x.ndim - 1))
        inv = (0,) + tuple(range(2, x.ndim)) + (1,)
        return group_norm(x.transpose(perm), num_groups, epsilon, weight, bias, "NCHW").transpose(inv)
    c = x.shape[1]
    if not isinstance(num_groups, int) or num_groups < 1 or c % num_groups:
        raise OpArgumentError(
            f"[group_norm] num_groups={num_groups!r} must be a positive int dividing the channels {c}"
        )
    shp = (1, c) + (1,) * (x.ndim - 2)
    w = _per_channel("group_norm", weight, c, shp, x.dtype, "weight")
    b = _per_channel("group_norm", bias, c, shp, x.dtype, "bias")
    ins = [x] + [p for p in (w, b) if p is not None]
    return call(
        OPS["group_norm"],
        ins,
        {
            "num_groups": num_groups,
            "epsilon": float(epsilon),
            "has_weight": w is not None,
            "has_bias": b is not None,
        },
    )


def local_response_norm(
    x: Tensor,
    size: int,
    alpha: float = 1e-4,
    beta: float = 0.75,
    k: float = 1.0,
    data_format: str = "NCHW",
    name: str | None = None,
) -> Tensor:
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta (the window is
    zero-padded: size//2 channels before, (size-1)//2 after)."""
    x = float_arg("local_response_norm", x)
    ax = _channel_axis("local_response_norm", x, data_format)
    if x.ndim < 3:
        raise OpArgumentError(
            f"[local_response_norm] x must be at least 3-d (N, C, ...), got shape {x.shape}"
        )
    if not isinstance(size, int) or size < 1:
        raise OpArgumentError(f"[local_response_norm] size must be a positive int, got {size!r}")
    c = x.shape[ax]
    pads = [(0, 0)] * x.ndim
    pads[ax] = (size // 2, (size - 1) // 2)
    sq = S.pad_raw(x * x, tuple(pads), 0.0)
    acc = None
    for i in range(size):
        starts, stops = [0] * x.ndim, list(sq.shape)
        starts[ax], stops[ax] = i, i + c
        part = S.slice_raw(sq, tuple(starts), tuple(stops), (1,) * x.ndim)
        acc = part if acc is None else acc + part
    return x / M.pow(acc * (alpha / size) + k, beta)
