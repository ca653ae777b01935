"""Whole-tensor and elementwise closeness tests (isclose, equal_all), each a decomposition into
existing ops.
"""

from __future__ import annotations

from ... import dtypes as _dt
from ...tensor import Tensor, to_tensor
from .. import math as M
from ._common import tensor_arg


def isclose(
    x: Tensor,
    y: Tensor,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    equal_nan: bool = False,
    name: str | None = None,
) -> Tensor:
    """Elementwise ``|x - y| <= atol + rtol * |y|``; equal infinities are close.

    Args:
        x (Tensor): the first tensor.
        y (Tensor): the second; ``x`` and ``y`` broadcast together.
        rtol (float): the relative tolerance.
        atol (float): the absolute tolerance.
        equal_nan (bool): two NaNs are close.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: bool, of the broadcast shape.

    Example:
        >>> import framework as fw
        >>> nan = float("nan")
        >>> fw.isclose(fw.to_tensor([1.0, 2.0, nan]), fw.to_tensor([1.000001, 2.1, nan]))
        Tensor(shape=[3], dtype=bool, device=cpu:0,
               [ True, False, False])
        >>> fw.isclose(fw.to_tensor([nan]), fw.to_tensor([nan]), equal_nan=True).tolist()
        [True]
    """
    a, b = M._operands("isclose", x, y)
    close = M.abs(a - b) <= M.abs(b) * rtol + atol
    close = close | (a == b)
    if equal_nan and _dt.is_floating(a.dtype):
        close = close | (M.isnan(a) & M.isnan(b))
    return close


def equal_all(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """Whether ``x`` and ``y`` have the same shape and equal elements, as a 0-d bool tensor.

    Args:
        x (Tensor): the first tensor.
        y (Tensor): the second tensor (not broadcast).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: 0-d bool.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2], [3, 4]])
        >>> fw.equal_all(x, x)
        Tensor(shape=[], dtype=bool, device=cpu:0,
               True)
        >>> fw.equal_all(x, fw.to_tensor([1, 2])).item()
        False
    """
    x, y = tensor_arg("equal_all", x), tensor_arg("equal_all", y, "y")
    if x.shape != y.shape:
        return to_tensor(False, device=x.device)
    return M.all(M.equal(x, y))
