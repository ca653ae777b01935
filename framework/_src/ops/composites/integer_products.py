"""The exact integer product ``matmul_integer`` (ONNX ``MatMulInteger``): int8/uint8 operands
less their zero points, multiplied and summed in int32, as an integer GEMM accumulates.

A composite defined by its decomposition (widen to int32, subtract the zero points, one int32
``matmul``), so every plugin runs it exactly; a plugin with an int8 dot product (VNNI, DP4A,
int8 tensor cores) may register a fused ``matmul_integer`` kernel under the same name. The
sum is exact while ``k * 255 * 255 < 2**31`` (``k`` below 33 025); beyond that int32 wraps, as
the ONNX spec's int32 accumulator does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import math as M
from ..base import OPS, call, composite
from ..creation import zeros
from ._common import tensor_arg

_BYTES = (np.dtype(np.int8), np.dtype(np.uint8))


def _mm_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    a2, b2 = (1,) + a if len(a) == 1 else a, b + (1,) if len(b) == 1 else b
    lead = np.broadcast_shapes(a2[:-2], b2[:-2])
    out = tuple(lead) + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(_mm_shape(tuple(ins[0].shape), tuple(ins[1].shape)), np.dtype(np.int32))]


def _flops(ins: list[tuple[int, ...]], outs: list[tuple[int, ...]], attrs: dict[str, Any]) -> float:
    return 2.0 * math.prod(outs[0]) * ins[0][-1]


@composite(
    "matmul_integer",
    infer=_infer,
    flops=_flops,
    no_sharding="decomposes into casts, subtractions and a matmul, which have their rules",
)
def matmul_integer_decomposition(a: Tensor, b: Tensor, a_zero_point: Tensor, b_zero_point: Tensor) -> Tensor:
    """``(int32(a) - a_zero_point) @ (int32(b) - b_zero_point)`` in int32; the zero points
    arrive shaped to broadcast (a row's of ``a`` as ``[m, 1]``, a column's of ``b`` as ``[n]``)."""
    x = M.cast(a, "int32") - M.cast(a_zero_point, "int32")
    y = M.cast(b, "int32") - M.cast(b_zero_point, "int32")
    return M.matmul(x, y)


OPS["matmul_integer"].no_grad = "its operands are integers: nothing to differentiate"


def _zero_point(name: str, zp: Any, x: Tensor, what: str, axis: int) -> Tensor:
    """A zero point as a broadcastable tensor: None -> 0; one value; or one per row of ``a``
    (``axis=-2``) / column of ``b`` (``axis=-1``)."""
    if zp is None:
        return zeros([], x.dtype, x.device)
    zp = tensor_arg(name, zp, what)
    if zp.dtype != x.dtype:
        raise OpArgumentError(f"[{name}] {what} must have the dtype of its operand {x.dtype}, got {zp.dtype}")
    if zp.numel() == 1:
        return zp.reshape(())
    n = x.shape[axis] if x.ndim >= 2 else None
    if zp.ndim == 1 and zp.shape[0] == n:
        return zp.reshape((n, 1)) if axis == -2 else zp
    raise OpArgumentError(
        f"[{name}] {what} must be one value or one per {'row of a' if axis == -2 else 'column of b'} "
        f"({n}), got shape {list(zp.shape)}"
    )


def matmul_integer(a: Tensor, b: Tensor, a_zero_point: Any = None, b_zero_point: Any = None) -> Tensor:
    """The exact int32 product of int8/uint8 matrices less their zero points (ONNX
    ``MatMulInteger``): ``(a - a_zero_point) @ (b - b_zero_point)`` with numpy's matmul
    broadcasting.

    Args:
        a (Tensor): int8 or uint8, ``[..., m, k]`` (or ``[k]``).
        b (Tensor): int8 or uint8, ``[..., k, n]`` (or ``[k]``).
        a_zero_point (Tensor, optional): ``a``'s dtype; one value or ``[m]`` (per row).
        b_zero_point (Tensor, optional): ``b``'s dtype; one value or ``[n]`` (per column).

    Returns:
        Tensor: int32 ``[..., m, n]``.

    Example:
        >>> import framework as fw
        >>> from framework.nn.quant import matmul_integer
        >>> a = fw.to_tensor([[130, 128]], dtype="uint8")
        >>> b = fw.to_tensor([[2], [-3]], dtype="int8")
        >>> matmul_integer(a, b, fw.to_tensor(128, dtype="uint8")).tolist()
        [[4]]
    """
    name = "matmul_integer"
    a, b = tensor_arg(name, a, "a"), tensor_arg(name, b, "b")
    for t, what in ((a, "a"), (b, "b")):
        if t.dtype not in _BYTES:
            raise OpArgumentError(f"[{name}] {what} must be int8 or uint8, got {t.dtype}; quantise it first")
    if a.shape[-1] != b.shape[0 if b.ndim == 1 else -2]:
        raise OpArgumentError(
            f"[{name}] a's last dim must equal b's contraction dim, got a {list(a.shape)} and b {list(b.shape)}"
        )
    try:
        _mm_shape(tuple(a.shape), tuple(b.shape))
    except ValueError:
        raise OpArgumentError(
            f"[{name}] the batch dims of a {list(a.shape)} and b {list(b.shape)} do not broadcast"
        ) from None
    za = _zero_point(name, a_zero_point, a, "a_zero_point", -2)
    zb = _zero_point(name, b_zero_point, b, "b_zero_point", -1)
    return call(OPS[name], [a, b, za, zb], {})
