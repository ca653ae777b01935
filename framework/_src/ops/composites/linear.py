"""``linear``: x @ weight + bias, a composite (a plugin may fuse it)."""

from __future__ import annotations

from typing import Any

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import math as M
from .. import sharding as _sh
from ..base import OPS, call, composite
from ..cost import matmul_flops
from ._common import tensor_arg


def _linear_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x, w = ins[0], ins[1]
    return [(x.shape[:-1] + w.shape[-1:], x.dtype)]


@composite("linear", amp="allow", sharding=_sh.linear, flops=matmul_flops, infer=_linear_infer)
def linear_decomposition(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight (+ bias); weight is (in_features, out_features) as in Paddle."""
    lead = x.shape[:-1]
    x2 = x.reshape((-1, x.shape[-1])) if x.ndim != 2 else x
    y = M.matmul(x2, weight)
    if bias is not None:
        y = y + bias
    return y.reshape(lead + weight.shape[-1:]) if x.ndim != 2 else y


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None, name: str | None = None) -> Tensor:
    """``x @ weight + bias`` with ``weight`` of shape ``[in_features, out_features]`` (Paddle layout)."""
    x = tensor_arg("linear", x)
    weight = tensor_arg("linear", weight, "weight")
    if weight.ndim != 2:
        raise OpArgumentError(
            f"[linear] weight must be 2-d (in_features, out_features), got shape {weight.shape}"
        )
    if x.ndim == 0 or x.shape[-1] != weight.shape[0]:
        raise OpArgumentError(
            f"[linear] x has shape {x.shape} but weight has {weight.shape}: the last dim of x must equal "
            f"in_features={weight.shape[0]}"
        )
    if x.dtype != weight.dtype:
        x = M.cast(x, weight.dtype)
    ins = [x, weight] if bias is None else [x, weight, tensor_arg("linear", bias, "bias")]
    if x.ndim == 1:
        return call(OPS["linear"], [ins[0].reshape((1, -1))] + ins[1:], {}).reshape(weight.shape[-1:])
    return call(OPS["linear"], ins, {})


def bilinear(
    x1: Tensor, x2: Tensor, weight: Tensor, bias: Tensor | None = None, name: str | None = None
) -> Tensor:
    """``out[n, o] = x1[n] @ weight[o] @ x2[n] + bias[o]`` (Paddle's ``F.bilinear``).

    Args:
        x1 (Tensor): ``[N, in1]``.
        x2 (Tensor): ``[N, in2]``.
        weight (Tensor): ``[out, in1, in2]``.
        bias (Tensor, optional): ``[1, out]`` or ``[out]``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[N, out]``.

    Example:
        >>> import framework as fw
        >>> import framework.nn.functional as F
        >>> F.bilinear(fw.ones([2, 3]), fw.ones([2, 4]), fw.ones([5, 3, 4])).shape
        (2, 5)
    """
    if x1.ndim != 2 or x2.ndim != 2 or weight.ndim != 3 or weight.shape[1:] != (x1.shape[1], x2.shape[1]):
        raise OpArgumentError(
            f"[bilinear] expected x1 [N, in1], x2 [N, in2] and weight [out, in1, in2], got {x1.shape}, "
            f"{x2.shape} and {weight.shape}"
        )
    # (N, 1, 1, in1) @ (1, out, in1, in2) -> (N, out, 1, in2); times x2 and summed over in2
    t = M.matmul(x1.unsqueeze(1).unsqueeze(1), weight.unsqueeze(0)).squeeze(2)
    out = M.sum(t * x2.unsqueeze(1), axis=-1)
    return out if bias is None else out + bias.reshape((1, -1))
