"""Paddle's products of tensors beyond matmul, each a decomposition into existing ops (so each
runs and differentiates wherever they do): baddbmm, addmm, trace, kron, inner, outer.
"""

from __future__ import annotations

from adapter_api import OpArgumentError

from ...tensor import Tensor
from .. import math as M
from ._common import tensor_arg
from .diagonals import diagonal


def baddbmm(
    input: Tensor, x: Tensor, y: Tensor, beta: float = 1.0, alpha: float = 1.0, name: str | None = None
) -> Tensor:
    """``beta * input + alpha * (x @ y)`` for batches of matrices.

    Args:
        input (Tensor): broadcast to ``[b, n, p]``.
        x (Tensor): ``[b, n, m]``.
        y (Tensor): ``[b, m, p]``.
        beta (float): the factor of ``input``.
        alpha (float): the factor of the product.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[b, n, p]``.

    Example:
        >>> import framework as fw
        >>> fw.baddbmm(fw.ones([1, 2, 2]), fw.ones([1, 2, 3]), fw.ones([1, 3, 2]), beta=0.5).tolist()
        [[[3.5, 3.5], [3.5, 3.5]]]
    """
    x, y = tensor_arg("baddbmm", x, "x"), tensor_arg("baddbmm", y, "y")
    if x.ndim != 3 or y.ndim != 3:
        raise OpArgumentError(
            f"[baddbmm] x and y must be 3-d batches of matrices, got {x.shape} and {y.shape}"
        )
    return tensor_arg("baddbmm", input, "input") * beta + M.matmul(x, y) * alpha


def addmm(
    input: Tensor, x: Tensor, y: Tensor, beta: float = 1.0, alpha: float = 1.0, name: str | None = None
) -> Tensor:
    """``beta * input + alpha * (x @ y)``.

    Args:
        input (Tensor): broadcast to the product's shape.
        x (Tensor): ``[m, k]``.
        y (Tensor): ``[k, n]``.
        beta (float): the factor of ``input``.
        alpha (float): the factor of the product.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[m, n]``.

    Example:
        >>> import framework as fw
        >>> fw.addmm(fw.ones([2, 2]), fw.eye(2), fw.to_tensor([[1.0, 2.0], [3.0, 4.0]]), beta=0.5, alpha=2.0)
        Tensor(shape=[2, 2], dtype=float32, device=cpu:0,
               [[2.5, 4.5],
                [6.5, 8.5]])
    """
    return tensor_arg("addmm", input) * beta + M.matmul(x, y) * alpha


def trace(x: Tensor, offset: int = 0, axis1: int = 0, axis2: int = 1, name: str | None = None) -> Tensor:
    """The sum of a diagonal of ``x``.

    Args:
        x (Tensor): at least 2-d.
        offset (int): the diagonal: 0 the main one, > 0 above it, < 0 below it.
        axis1 (int): the first axis of the matrices.
        axis2 (int): the second axis.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``x``'s shape without ``axis1`` and ``axis2``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2], [3, 4]])
        >>> fw.trace(x)
        Tensor(shape=[], dtype=int64, device=cpu:0,
               5)
        >>> fw.trace(x, offset=1).item()
        2
    """
    return M.sum(diagonal(x, offset, axis1, axis2), axis=-1)


def kron(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """The Kronecker product: each element of ``x`` times the whole of ``y``, laid out in blocks.

    Args:
        x (Tensor): the first tensor.
        y (Tensor): the second; the lower-rank one gets leading dims of size 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of shape ``x.shape[i] * y.shape[i]`` per dim.

    Example:
        >>> import framework as fw
        >>> fw.kron(fw.to_tensor([1, 2]), fw.to_tensor([1, 10, 100]))
        Tensor(shape=[6], dtype=int64, device=cpu:0,
               [  1,  10, 100,   2,  20, 200])
    """
    x, y = tensor_arg("kron", x), tensor_arg("kron", y, "y")
    nd = max(x.ndim, y.ndim)
    x = x.reshape((1,) * (nd - x.ndim) + x.shape)
    y = y.reshape((1,) * (nd - y.ndim) + y.shape)
    xs = [d for s in x.shape for d in (s, 1)]
    ys = [d for s in y.shape for d in (1, s)]
    return (x.reshape(xs) * y.reshape(ys)).reshape(tuple(a * b for a, b in zip(x.shape, y.shape)))


def inner(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """Sum of products over the last axis of ``x`` and of ``y``.

    Args:
        x (Tensor): ``[..., k]``.
        y (Tensor): ``[..., k]``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``x.shape[:-1] + y.shape[:-1]``.

    Example:
        >>> import framework as fw
        >>> fw.inner(fw.to_tensor([[1.0, 2.0], [3.0, 4.0]]), fw.to_tensor([[1.0, 1.0]]))
        Tensor(shape=[2, 1], dtype=float32, device=cpu:0,
               [[3.],
                [7.]])
    """
    x, y = tensor_arg("inner", x), tensor_arg("inner", y, "y")
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    return M.matmul(x.reshape((-1, x.shape[-1])), y.reshape((-1, y.shape[-1])).T).reshape(
        x.shape[:-1] + y.shape[:-1]
    )


def outer(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """The outer product: ``out[i, j] = x[i] * y[j]`` of the flattened inputs.

    Args:
        x (Tensor): flattened to ``[m]``.
        y (Tensor): flattened to ``[n]``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[m, n]``.

    Example:
        >>> import framework as fw
        >>> fw.outer(fw.to_tensor([1, 2]), fw.to_tensor([1, 10, 100]))
        Tensor(shape=[2, 3], dtype=int64, device=cpu:0,
               [[  1,  10, 100],
                [  2,  20, 200]])
    """
    x, y = tensor_arg("outer", x).reshape((-1, 1)), tensor_arg("outer", y, "y").reshape((1, -1))
    return x * y
