"""Diagonals and grids built from the indexing ops: diagonal, diag, diagflat, meshgrid."""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ...tensor import Tensor, to_tensor
from .. import creation as C
from .. import indexing as I
from .. import shape as S
from ._common import axis_arg, tensor_arg


def diagonal(x: Tensor, offset: int = 0, axis1: int = 0, axis2: int = 1, name: str | None = None) -> Tensor:
    """A diagonal of the ``(axis1, axis2)`` planes of ``x``, as the last dim.

    Args:
        x (Tensor): at least 2-d.
        offset (int): the diagonal: 0 the main one, > 0 above it, < 0 below it.
        axis1 (int): the row axis.
        axis2 (int): the column axis.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the other dims, then the diagonal.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2, 3], [4, 5, 6]])
        >>> fw.diagonal(x)
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [1, 5])
        >>> fw.diagonal(x, offset=1).tolist()
        [2, 6]
    """
    x = tensor_arg("diagonal", x)
    a1, a2 = axis_arg("diagonal", axis1, x.ndim), axis_arg("diagonal", axis2, x.ndim)
    if a1 == a2:
        raise OpArgumentError(f"[diagonal] axis1 and axis2 must differ, got {axis1} and {axis2}")
    rest = [a for a in range(x.ndim) if a not in (a1, a2)]
    t = S.transpose(x, rest + [a1, a2])
    n, m = t.shape[-2], t.shape[-1]
    r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
    length = max(0, min(n - r0, m - c0))
    lead = t.shape[:-2]
    flat = t.reshape(lead + (n * m,))
    idx = to_tensor(np.array([(r0 + i) * m + c0 + i for i in range(length)], dtype=np.int64), device=x.device)
    return I.take_rows(flat, idx, len(lead))


def diag(x: Tensor, offset: int = 0, padding_value: float = 0, name: str | None = None) -> Tensor:
    """A square matrix with ``x`` on a diagonal (1-d ``x``), or a diagonal of ``x`` (2-d ``x``).

    Args:
        x (Tensor): 1-d or 2-d.
        offset (int): the diagonal: 0 the main one, > 0 above it, < 0 below it.
        padding_value (float): the value off the diagonal (1-d ``x``).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[n + |offset|, n + |offset|]`` for 1-d ``x``; 1-d for 2-d ``x``.

    Example:
        >>> import framework as fw
        >>> fw.diag(fw.to_tensor([1, 2]))
        Tensor(shape=[2, 2], dtype=int64, device=cpu:0,
               [[1, 0],
                [0, 2]])
        >>> fw.diag(fw.to_tensor([1, 2]), padding_value=9).tolist()
        [[1, 9], [9, 2]]
        >>> fw.diag(fw.to_tensor([[1, 2], [3, 4]])).tolist()
        [1, 4]
    """
    x = tensor_arg("diag", x)
    if x.ndim == 2:
        return diagonal(x, offset)
    if x.ndim != 1:
        raise OpArgumentError(f"[diag] x must be 1-d or 2-d, got shape {x.shape}")
    n = x.shape[0] + abs(offset)
    r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
    pos = to_tensor(
        np.array([(r0 + i) * n + c0 + i for i in range(x.shape[0])], dtype=np.int64), device=x.device
    )
    base = C.full([n * n], padding_value, dtype=x.dtype, device=x.device)
    if padding_value != 0:
        base = I.scatter(base, pos, C.zeros_like(x), axis=0)
    return I.scatter_add(base, pos, x, axis=0).reshape((n, n))


def diagflat(x: Tensor, offset: int = 0, name: str | None = None) -> Tensor:
    """A square matrix with the flattened ``x`` on a diagonal.

    Args:
        x (Tensor): any shape.
        offset (int): the diagonal: 0 the main one, > 0 above it, < 0 below it.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[n + |offset|, n + |offset|]``, ``n = x.numel()``.

    Example:
        >>> import framework as fw
        >>> fw.diagflat(fw.to_tensor([[1, 2], [3, 4]])).tolist()
        [[1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 3, 0], [0, 0, 0, 4]]
    """
    return diag(tensor_arg("diagflat", x).reshape((-1,)), offset)


def meshgrid(*args: Any, **kwargs: Any) -> list[Tensor]:
    """Coordinate grids from 1-d tensors, with ``"ij"`` indexing (Paddle's).

    Args:
        *args (Tensor | list[Tensor]): 1-d tensors, or one list of them.
        **kwargs: Paddle's ``name``; ignored.

    Returns:
        list[Tensor]: one tensor per input, each of shape ``[len(args[0]), len(args[1]), ...]``.

    Example:
        >>> import framework as fw
        >>> a, b = fw.meshgrid(fw.to_tensor([1, 2]), fw.to_tensor([3, 4, 5]))
        >>> a.tolist()
        [[1, 1, 1], [2, 2, 2]]
        >>> b.tolist()
        [[3, 4, 5], [3, 4, 5]]
    """
    ts = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    for t in ts:
        if tensor_arg("meshgrid", t).ndim != 1:
            raise OpArgumentError(f"[meshgrid] every input must be 1-d, got shape {t.shape}")
    shp = tuple(t.shape[0] for t in ts)
    out = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = shp[i]
        out.append(t.reshape(view).expand(shp))
    return out
