"""Gradient clipping over parameters and flattening them (Paddle's ``paddle.nn.utils``)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from adapter_api import OpArgumentError

from ..._src.autograd import no_grad
from ..._src.ops import math as M
from ..._src.ops import shape as S
from ..._src.tensor import Tensor


def _with_grads(parameters: Any) -> list[Tensor]:
    ps = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p for p in ps if p.grad is not None]


@no_grad()
def clip_grad_norm_(
    parameters: Iterable[Tensor] | Tensor,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> Tensor:
    """Scale the gradients in place so that their joint ``norm_type`` norm is at most ``max_norm``.

    Args:
        parameters (Tensor | list[Tensor]): the parameters (those without a gradient are skipped).
        max_norm (float): the largest norm allowed.
        norm_type (float): the norm's order (``inf`` for the largest magnitude).
        error_if_nonfinite (bool): raise when the norm is inf or NaN.

    Returns:
        Tensor: the joint norm before clipping.

    Example:
        >>> import framework as fw
        >>> w = fw.to_tensor([3.0, 4.0], stop_gradient=False)
        >>> (w * w / 2).sum().backward()
        >>> fw.nn.utils.clip_grad_norm_([w], max_norm=1.0).item(), [round(g, 4) for g in w.grad.tolist()]
        (5.0, [0.6, 0.8])
    """
    ps = _with_grads(parameters)
    if not ps:
        return Tensor(0.0)
    norm_type = float(norm_type)
    if norm_type == math.inf:
        total = M.max(S.stack([M.max(M.abs(p.grad)) for p in ps]))
    else:
        total = M.sum(S.stack([M.sum(M.abs(p.grad) ** norm_type) for p in ps])) ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(float(total.item())):
        raise OpArgumentError(
            f"[clip_grad_norm_] the total norm of order {norm_type} of the gradients is {float(total.item())}; "
            f"pass error_if_nonfinite=False to clip anyway"
        )
    scale = M.clip(float(max_norm) / (total + 1e-6), max=1.0)
    for p in ps:
        p.grad = p.grad * M.cast(scale, p.grad.dtype)
    return total


@no_grad()
def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float) -> None:
    """Clip every gradient elementwise to ``[-clip_value, clip_value]``, in place.

    Example:
        >>> import framework as fw
        >>> w = fw.to_tensor([3.0, -4.0], stop_gradient=False)
        >>> (w * w).sum().backward()
        >>> fw.nn.utils.clip_grad_value_([w], 1.0); w.grad.tolist()
        [1.0, -1.0]
    """
    c = float(clip_value)
    for p in _with_grads(parameters):
        p.grad = M.clip(p.grad, -c, c)


def parameters_to_vector(parameters: Iterable[Tensor], name: str | None = None) -> Tensor:
    """The parameters flattened and concatenated into one 1-D tensor.

    Example:
        >>> import framework as fw
        >>> lin = fw.nn.Linear(2, 3)
        >>> fw.nn.utils.parameters_to_vector(lin.parameters()).shape
        (9,)
    """
    return S.concat([S.reshape(p, [-1]) for p in parameters])


@no_grad()
def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor], name: str | None = None) -> None:
    """Copy consecutive slices of the 1-D ``vec`` into the parameters (the inverse of :func:`parameters_to_vector`).

    Example:
        >>> import framework as fw
        >>> lin = fw.nn.Linear(2, 1)
        >>> fw.nn.utils.vector_to_parameters(fw.to_tensor([1.0, 2.0, 3.0]), lin.parameters())
        >>> lin.weight.tolist(), lin.bias.tolist()
        ([[1.0], [2.0]], [3.0])
    """
    ps = list(parameters)
    total = sum(int(p.size) for p in ps)
    if vec.ndim != 1 or vec.shape[0] != total:
        raise OpArgumentError(
            f"[vector_to_parameters] vec must be 1-D with {total} elements (the parameters' total), got shape {vec.shape}"
        )
    k = 0
    for p in ps:
        n = int(p.size)
        p.set_value(S.reshape(vec[k : k + n], p.shape))
        k += n
