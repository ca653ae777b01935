"""Linear (symmetric) quantisation of activations and weights, after Paddle's
``quantize_linear`` / ``dequantize_linear`` and its fake quantisation for training:

- ``quantize_linear(x, scale)``: ``clip(round(x / scale * qmax), -qmax - 1, qmax)`` as int8
  (Paddle's ``quantize_linear``: the lowest level -128 is reachable past the threshold),
  ``qmax = 2 ** (bit_length - 1) - 1``; ``scale`` is the abs-max threshold (Paddle's
  convention: not divided by ``qmax``), one value (per tensor) or one per slice of
  ``quant_axis`` (per channel);
- ``dequantize_linear(q, scale)``: ``q * scale / qmax`` in the scale's dtype;
- ``fake_quantize_dequantize(x, scale)``: both in one float op, whose gradient is the
  straight-through estimator (the output's gradient passes to ``x`` unchanged, as Paddle's
  ``fake_quantize_dequantize_*`` kernels do) — what quantisation-aware training trains through.

Each is a composite of primitives; halves round away from zero (Paddle's ``round``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor
from .. import math as M
from ..base import OPS, call, composite
from ._common import tensor_arg

_DECOMPOSES = "decomposes into element-wise ops that have their rules"


def qmax(bit_length: int) -> int:
    """The largest quantised magnitude for ``bit_length`` bits (127 for 8)."""
    return 2 ** (bit_length - 1) - 1


def _spread(scale: Tensor, ndim: int, quant_axis: int) -> Tensor:
    """A per-channel scale ``[C]`` shaped to broadcast along ``quant_axis`` of an ``ndim``-d tensor."""
    if quant_axis == -1 or scale.ndim == 0:
        return scale
    shape = [1] * ndim
    shape[quant_axis] = scale.shape[0]
    return scale.reshape(tuple(shape))


def _levels(x: Tensor, scale: Tensor, bit_length: int, quant_axis: int, low: int = 0) -> Tensor:
    """``clip(round(x / scale * qmax), -qmax - low, qmax)`` in ``x``'s float dtype (a zero
    scale maps to zero)."""
    s = _spread(M.cast(scale, x.dtype), x.ndim, quant_axis)
    safe = M.where(s == 0, M.ones_like(s), s)
    n = qmax(bit_length)
    return M.clip(M.round_half_away(x / safe * float(n)), -n - low, n)


def _quantize_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(ins[0].shape, np.dtype("int8"))]


@composite("quantize_linear", infer=_quantize_infer, no_sharding=_DECOMPOSES)
def quantize_linear_decomposition(
    x: Tensor, scale: Tensor, bit_length: int = 8, quant_axis: int = -1
) -> Tensor:
    """``clip(round(x / scale * qmax), -qmax - 1, qmax)`` as int8."""
    return M.cast(_levels(x, scale, bit_length, quant_axis, low=1), "int8")


OPS["quantize_linear"].no_grad = "its output is integers (train through fake_quantize_dequantize)"


def _dequantize_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(ins[0].shape, ins[1].dtype)]


@composite("dequantize_linear", infer=_dequantize_infer, no_sharding=_DECOMPOSES)
def dequantize_linear_decomposition(
    q: Tensor, scale: Tensor, bit_length: int = 8, quant_axis: int = -1
) -> Tensor:
    """``q * scale / qmax`` in the scale's dtype."""
    s = _spread(scale, q.ndim, quant_axis)
    return M.cast(q, scale.dtype) * (s / float(qmax(bit_length)))


def _fake_quant_grad(node: Any, gouts: list) -> list:
    # NOTE: straight through: round and clip pass the gradient unchanged (Paddle's STE)
    return [gouts[0], None]


def _same_as_x(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(ins[0].shape, ins[0].dtype)]


@composite(
    "fake_quantize_dequantize",
    infer=_same_as_x,
    grad=_fake_quant_grad,
    amp="deny",
    no_sharding=_DECOMPOSES,
)
def fake_quantize_dequantize_decomposition(
    x: Tensor, scale: Tensor, bit_length: int = 8, quant_axis: int = -1
) -> Tensor:
    """``dequantize(quantize(x))`` kept in ``x``'s dtype; its gradient is straight through."""
    s = _spread(M.cast(scale, x.dtype), x.ndim, quant_axis)
    return _levels(x, scale, bit_length, quant_axis) * (s / float(qmax(bit_length)))


# NOTE: the straight-through gradient is by definition not the derivative (zero almost
# everywhere), so no finite-difference check can hold it; tests/test_quant_ops.py checks the rule
OPS[
    "fake_quantize_dequantize"
].no_grad = "straight-through by definition, not the derivative a check can compare"


# -- the user functions (framework.quantization re-exports them) ------------------------------
def _check(name: str, x: Any, scale: Any, bit_length: Any, quant_axis: Any) -> tuple[Tensor, Tensor]:
    x = tensor_arg(name, x)
    scale = tensor_arg(name, scale, "scale")
    if isinstance(bit_length, bool) or not isinstance(bit_length, int) or not 2 <= bit_length <= 8:
        raise OpArgumentError(f"[{name}] bit_length must be an int in [2, 8], got {bit_length!r}")
    if not _dt.is_floating(scale.dtype):
        raise OpArgumentError(f"[{name}] scale must be a float tensor, got {scale.dtype}")
    if quant_axis == -1:
        if scale.size != 1:
            raise OpArgumentError(
                f"[{name}] a per-tensor scale (quant_axis=-1) has one value, got shape {list(scale.shape)}; "
                "pass quant_axis for a scale per channel"
            )
        return x, scale.reshape(())
    if not isinstance(quant_axis, int) or not 0 <= quant_axis < x.ndim:
        raise OpArgumentError(f"[{name}] quant_axis must be -1 or in [0, {x.ndim}), got {quant_axis!r}")
    if tuple(scale.shape) != (x.shape[quant_axis],):
        raise OpArgumentError(
            f"[{name}] a per-channel scale along axis {quant_axis} must have shape [{x.shape[quant_axis]}], "
            f"got {list(scale.shape)}"
        )
    return x, scale


def quantize_linear(x: Tensor, scale: Tensor, bit_length: int = 8, quant_axis: int = -1) -> Tensor:
    """Linear quantisation to int8: ``clip(round(x / scale * qmax), -qmax - 1, qmax)``
    (Paddle's ``quantize_linear``).

    Args:
        x (Tensor): float input.
        scale (Tensor): the abs-max threshold: one value, or ``[x.shape[quant_axis]]``.
        bit_length (int): bits of the quantised value (``qmax = 2 ** (bits - 1) - 1``).
        quant_axis (int): ``-1`` per tensor, else the channel axis of ``scale``.

    Example:
        >>> import framework as fw
        >>> from framework.quantization import quantize_linear
        >>> quantize_linear(fw.to_tensor([0.5, -1.0, 2.0, -2.0]), fw.to_tensor(1.0)).tolist()
        [64, -127, 127, -128]
    """
    x, scale = _check("quantize_linear", x, scale, bit_length, quant_axis)
    return call(OPS["quantize_linear"], [x, scale], {"bit_length": bit_length, "quant_axis": quant_axis})


def dequantize_linear(q: Tensor, scale: Tensor, bit_length: int = 8, quant_axis: int = -1) -> Tensor:
    """The float values of :func:`quantize_linear`'s integers: ``q * scale / qmax``.

    Example:
        >>> import framework as fw
        >>> from framework.quantization import dequantize_linear
        >>> y = dequantize_linear(fw.to_tensor([127, -64], dtype="int8"), fw.to_tensor(2.0))
        >>> [round(v, 4) for v in y.tolist()]  # 2 * q / 127
        [2.0, -1.0079]
    """
    q, scale = _check("dequantize_linear", q, scale, bit_length, quant_axis)
    return call(OPS["dequantize_linear"], [q, scale], {"bit_length": bit_length, "quant_axis": quant_axis})


def fake_quantize_dequantize(x: Tensor, scale: Tensor, bit_length: int = 8, quant_axis: int = -1) -> Tensor:
    """Quantise and dequantise in one float op with a straight-through gradient (what
    quantisation-aware training runs).

    Example:
        >>> import framework as fw
        >>> from framework.quantization import fake_quantize_dequantize
        >>> x = fw.to_tensor([0.3, -2.0], stop_gradient=False)
        >>> y = fake_quantize_dequantize(x, fw.to_tensor(1.0), bit_length=2)
        >>> y.tolist(), fw.grad(y.sum(), x)[0].tolist()
        ([0.0, -1.0], [1.0, 1.0])
    """
    x, scale = _check("fake_quantize_dequantize", x, scale, bit_length, quant_axis)
    if not _dt.is_floating(x.dtype):
        raise OpArgumentError(f"[fake_quantize_dequantize] x must be float, got {x.dtype}")
    attrs = {"bit_length": bit_length, "quant_axis": quant_axis}
    return call(OPS["fake_quantize_dequantize"], [x, scale], attrs)
