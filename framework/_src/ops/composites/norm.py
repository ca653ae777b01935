"""Normalisations and softmax: softmax, log_softmax, logsumexp, rms_norm, layer_norm; the
vector norms normalize and cosine_similarity.

Decompositions are elementwise ops plus reductions (over the last axis for the norms), the
shape the compiler fuses.
"""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import math as M
from .. import sharding as _sh
from ..base import OPS, call, composite
from ._common import axis_arg, float_arg, same_meta, store_out, tensor_arg

# -- softmax family -------------------------------------------------------------------------


def _softmax_grad(node: Any, gouts: list) -> list:
    y = node.out()
    g = gouts[0]
    ax = node.attrs["axis"]
    return [y * (g - M.sum(g * y, axis=ax, keepdim=True))]


@composite("softmax", amp="deny", sharding=_sh.axis_kept, infer=same_meta, grad=_softmax_grad)
def softmax_decomposition(x: Tensor, axis: int) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along ``axis``."""
    m = M.max(x, axis=axis, keepdim=True).detach()
    e = M.exp(x - m)
    return e / M.sum(e, axis=axis, keepdim=True)


def _log_softmax_grad(node: Any, gouts: list) -> list:
    y = node.out()
    g = gouts[0]
    ax = node.attrs["axis"]
    return [g - M.exp(y) * M.sum(g, axis=ax, keepdim=True)]


@composite("log_softmax", amp="deny", sharding=_sh.axis_kept, infer=same_meta, grad=_log_softmax_grad)
def log_softmax_decomposition(x: Tensor, axis: int) -> Tensor:
    """x - max - log(sum(exp(x - max))) along ``axis``."""
    m = M.max(x, axis=axis, keepdim=True).detach()
    s = x - m
    return s - M.log(M.sum(M.exp(s), axis=axis, keepdim=True))


def softmax(x: Tensor, axis: int = -1, dtype: Any = None, name: str | None = None) -> Tensor:
    """Softmax along ``axis``.

    >>> import framework as fw
    >>> fw.nn.functional.softmax(fw.to_tensor([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """
    x = float_arg("softmax", x) if dtype is None else M.cast(tensor_arg("softmax", x), dtype)
    if x.ndim == 0:
        return call(OPS["softmax"], [x.reshape((1,))], {"axis": 0}).reshape(())
    return call(OPS["softmax"], [x], {"axis": axis_arg("softmax", axis, x.ndim)})


def softmax_compat(
    input: Tensor, dim: int | None = None, dtype: Any = None, *, out: Tensor | None = None
) -> Tensor:
    """Softmax along ``dim`` with torch's default dim (Paddle's ``paddle.softmax``, from
    ``paddle.tensor.compat_softmax``): without ``dim``, dim 0 of a 0-d, 1-d or 3-d tensor, else dim 1.

    Args:
        input (Tensor): float.
        dim (int, optional): the dim the result sums to 1 along.
        dtype (str, optional): ``input`` is cast to it first.
        out (Tensor, optional): receives the result.

    Returns:
        Tensor: like ``input`` (of ``dtype`` when given).

    Example:
        >>> import framework as fw
        >>> fw.tensor.softmax(fw.zeros([2, 2])).tolist()  # dim 1 of a 2-d tensor
        [[0.5, 0.5], [0.5, 0.5]]
    """
    input = tensor_arg("softmax", input, "input")
    if dim is None:
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return store_out("softmax", softmax(input, dim, dtype), out)


def log_softmax(x: Tensor, axis: int = -1, dtype: Any = None, name: str | None = None) -> Tensor:
    """log(softmax(x)) along ``axis``, computed stably."""
    x = float_arg("log_softmax", x) if dtype is None else M.cast(tensor_arg("log_softmax", x), dtype)
    if x.ndim == 0:
        return call(OPS["log_softmax"], [x.reshape((1,))], {"axis": 0}).reshape(())
    return call(OPS["log_softmax"], [x], {"axis": axis_arg("log_softmax", axis, x.ndim)})


def _logsumexp_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x, axes = ins[0], attrs["axes"]
    shape = (
        tuple(1 if i in axes else s for i, s in enumerate(x.shape))
        if attrs["keepdim"]
        else tuple(s for i, s in enumerate(x.shape) if i not in axes)
    )
    return [(shape, x.dtype)]


@composite("logsumexp", sharding=_sh.reduction(kept=True), infer=_logsumexp_infer)
def logsumexp_decomposition(x: Tensor, axes: tuple[int, ...], keepdim: bool) -> Tensor:
    """m + log(sum(exp(x - m))) with m the (detached) max: no overflow."""
    m = M.max(x, axis=axes, keepdim=True).detach()
    r = M.log(M.sum(M.exp(x - m), axis=axes, keepdim=True)) + m
    return r if keepdim else M.sum(r, axis=axes, keepdim=False)


def logsumexp(x: Tensor, axis: Any = None, keepdim: bool = False, name: str | None = None) -> Tensor:
    """``log(sum(exp(x)))`` over ``axis``, computed stably (the maximum is taken out first).

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        keepdim (bool): keep the reduced axes, with size 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor.

    Example:
        >>> import framework as fw
        >>> fw.logsumexp(fw.to_tensor([[1000.0, 1000.0], [0.0, 0.0]]), axis=1)
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [1.0006932e+03, 6.9314718e-01])
    """
    x = float_arg("logsumexp", x)
    axes = M.normalize_axes("logsumexp", axis, x.ndim)
    if not axes:
        return x
    return call(OPS["logsumexp"], [x], {"axes": tuple(axes), "keepdim": bool(keepdim)})


# -- rms_norm / layer_norm ------------------------------------------------------------------


@composite("rms_norm", amp="deny", sharding=_sh.norm, infer=same_meta)
def rms_norm_decomposition(x: Tensor, weight: Tensor | None = None, *, epsilon: float) -> Tensor:
    """x * rsqrt(mean(x*x, last axis) + epsilon) [* weight]."""
    n = x.shape[-1]
    ms = M.sum(x * x, axis=-1, keepdim=True) * (1.0 / n)
    y = x * M.rsqrt(ms + epsilon)
    return y * weight if weight is not None else y


@composite("layer_norm", amp="deny", sharding=_sh.norm, infer=same_meta)
def layer_norm_decomposition(
    x: Tensor, *params: Tensor, epsilon: float, has_weight: bool, has_bias: bool
) -> Tensor:
    """(x - mean) * rsqrt(var + epsilon) [* weight] [+ bias] over the last axis."""
    n = x.shape[-1]
    mu = M.sum(x, axis=-1, keepdim=True) * (1.0 / n)
    d = x - mu
    var = M.sum(d * d, axis=-1, keepdim=True) * (1.0 / n)
    y = d * M.rsqrt(var + epsilon)
    i = 0
    if has_weight:
        y = y * params[i]
        i += 1
    if has_bias:
        y = y + params[i]
    return y


def _norm_shape(name: str, x: Tensor, normalized_shape: Any) -> int:
    if normalized_shape is None:
        normalized_shape = x.shape[-1:]
    if isinstance(normalized_shape, Tensor):  # e.g. the weight passed where the shape goes
        raise OpArgumentError(
            f"[{name}] normalized_shape must be an int or a sequence of ints (the trailing sizes of x), "
            f"got a Tensor of shape {list(normalized_shape.shape)}; pass a weight as weight=..."
        )
    try:
        shp = (
            (normalized_shape.__index__(),)  # an int, numpy's too
            if hasattr(normalized_shape, "__index__")
            else tuple(s.__index__() for s in normalized_shape)
        )
    except (TypeError, ValueError, AttributeError):
        raise OpArgumentError(
            f"[{name}] normalized_shape must be an int or a sequence of ints (the trailing sizes of x), "
            f"got {normalized_shape!r}"
        ) from None
    k = len(shp)
    if k == 0 or x.shape[x.ndim - k :] != shp:
        raise OpArgumentError(
            f"[{name}] normalized_shape {shp} does not match the last dimensions of x {x.shape}; "
            f"pass the trailing sizes of x"
        )
    if 0 in x.shape[x.ndim - k :]:
        raise OpArgumentError(
            f"[{name}] cannot normalize over zero elements: the trailing dims {x.shape[x.ndim - k :]} of x "
            f"{x.shape} are empty"
        )
    return k


def _flat_param(name: str, p: Tensor | None, size: int, what: str) -> Tensor | None:
    if p is None:
        return None
    p = tensor_arg(name, p, what)
    if p.numel() != size:
        raise OpArgumentError(
            f"[{name}] {what} has shape {p.shape}, expected {size} elements (the normalized size)"
        )
    return p.reshape((size,))


def rms_norm(
    x: Tensor,
    normalized_shape: Any = None,
    weight: Tensor | None = None,
    epsilon: float = 1e-6,
    name: str | None = None,
) -> Tensor:
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dims (the last
    dim when None), times ``weight`` when given."""
    x = float_arg("rms_norm", x)
    if x.ndim == 0:
        raise OpArgumentError("[rms_norm] x must have at least 1 dimension, got a 0-d tensor")
    k = _norm_shape("rms_norm", x, normalized_shape)
    lead = x.shape[: x.ndim - k]
    size = 1
    for s in x.shape[x.ndim - k :]:
        size *= s
    xf = x.reshape(lead + (size,)) if k != 1 else x
    w = _flat_param("rms_norm", weight, size, "weight")
    ins = [xf] if w is None else [xf, w.astype(x.dtype)]
    return call(OPS["rms_norm"], ins, {"epsilon": float(epsilon)}).reshape(x.shape)


def layer_norm(
    x: Tensor,
    normalized_shape: Any = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    epsilon: float = 1e-5,
    name: str | None = None,
) -> Tensor:
    """Layer normalisation over the trailing ``normalized_shape`` dims (Paddle's signature)."""
    x = float_arg("layer_norm", x)
    if x.ndim == 0:
        raise OpArgumentError("[layer_norm] x must have at least 1 dimension, got a 0-d tensor")
    k = _norm_shape("layer_norm", x, normalized_shape)
    lead = x.shape[: x.ndim - k]
    size = 1
    for s in x.shape[x.ndim - k :]:
        size *= s
    xf = x.reshape(lead + (size,)) if k != 1 else x
    w = _flat_param("layer_norm", weight, size, "weight")
    b = _flat_param("layer_norm", bias, size, "bias")
    ins = [xf] + [p.astype(x.dtype) for p in (w, b) if p is not None]
    attrs = {"epsilon": float(epsilon), "has_weight": w is not None, "has_bias": b is not None}
    return call(OPS["layer_norm"], ins, attrs).reshape(x.shape)


# -- vector norms ---------------------------------------------------------------------------
def normalize(
    x: Tensor, p: float = 2, axis: int = 1, epsilon: float = 1e-12, name: str | None = None
) -> Tensor:
    """x / max(||x||_p along ``axis``, epsilon)."""
    x = float_arg("normalize", x)
    if x.ndim == 0:
        raise OpArgumentError("[normalize] x must have at least 1 dimension")
    if p == 2:
        nrm = M.sqrt(M.sum(x * x, axis=axis, keepdim=True))
    elif p == 1:
        nrm = M.sum(M.abs(x), axis=axis, keepdim=True)
    else:
        nrm = M.pow(M.sum(M.pow(M.abs(x), float(p)), axis=axis, keepdim=True), 1.0 / p)
    return x / M.maximum(nrm, epsilon)


def cosine_similarity(x1: Tensor, x2: Tensor, axis: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 x2) / sqrt(max(sum(x1^2) sum(x2^2), eps^2)) along ``axis`` (Paddle's form)."""
    x1 = float_arg("cosine_similarity", x1, "x1")
    x2 = float_arg("cosine_similarity", x2, "x2").astype(x1.dtype)
    w12 = M.sum(x1 * x2, axis=axis)
    w1 = M.sum(x1 * x1, axis=axis)
    w2 = M.sum(x2 * x2, axis=axis)
    return w12 * M.rsqrt(M.maximum(w1 * w2, eps * eps))
