"""Linear, embedding, dropout, statistics (var/std), cumsum, topk, one_hot, masking."""

from __future__ import annotations

import math as _m
from typing import Any

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor
from .. import creation as C
from .. import math as M
from .. import random as _rand
from .. import shape as S
from ..base import OPS, call, composite
from ..indexing import checked_index, masked_fill, take_along_axis
from ._common import axis_arg, float_arg, tensor_arg


def _linear_infer(ins: list[Tensor], attrs: dict[str, Any]) -> list:
    x, w = ins[0], ins[1]
    return [(x.shape[:-1] + w.shape[-1:], x.dtype)]


@composite("linear", infer=_linear_infer)
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


def embedding(
    x: Tensor, weight: Tensor, padding_idx: int | None = None, sparse: bool = False, name: str | None = None
) -> Tensor:
    """Rows of ``weight`` picked by the integer ids ``x`` (a ``gather`` on axis 0); the row at
    ``padding_idx`` gets no gradient."""
    x = tensor_arg("embedding", x)
    weight = tensor_arg("embedding", weight, "weight")
    if x.dtype.kind not in "iu":
        raise OpArgumentError(
            f"[embedding] ids must be integers, got dtype {x.dtype}; cast with x.astype('int64')"
        )
    out = weight.gather(x, axis=0)
    if padding_idx is not None:
        pad = padding_idx % weight.shape[0]
        out = masked_fill(out, (x == pad).unsqueeze(-1), 0.0)
    return out


def dropout(
    x: Tensor,
    p: float = 0.5,
    axis: Any = None,
    training: bool = True,
    mode: str = "upscale_in_train",
    name: str | None = None,
) -> Tensor:
    """Zero each element with probability ``p`` using a Philox mask (the same on every device
    for the same seed); ``upscale_in_train`` scales the kept ones by 1/(1-p)."""
    x = tensor_arg("dropout", x)
    if not 0.0 <= p <= 1.0:
        raise OpArgumentError(f"[dropout] p must be in [0, 1], got {p}")
    if mode not in ("upscale_in_train", "downscale_in_infer"):
        raise OpArgumentError(
            f"[dropout] mode must be 'upscale_in_train' or 'downscale_in_infer', got {mode!r}"
        )
    if not training:
        return x * (1.0 - p) if mode == "downscale_in_infer" and p > 0 else x
    if p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    shape = x.shape
    if axis is not None:
        axes = M.normalize_axes("dropout", axis, x.ndim)
        shape = tuple(s if i in axes else 1 for i, s in enumerate(x.shape))
    u = _rand.rand(
        shape, dtype=x.dtype if x.dtype in (_dt.float32, _dt.float64) else _dt.float32, device=x.device
    )
    keep = M.cast(u >= p, x.dtype)
    scale = 1.0 / (1.0 - p) if mode == "upscale_in_train" else 1.0
    return x * (keep * scale)


def var(
    x: Tensor, axis: Any = None, unbiased: bool = True, keepdim: bool = False, name: str | None = None
) -> Tensor:
    """The variance of the elements of ``x`` over ``axis``.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        unbiased (bool): divide by ``n - 1`` (Paddle's default), else by ``n``.
        keepdim (bool): keep the reduced axes, with size 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor; NaN when ``n - 1`` is 0 and ``unbiased``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fw.var(x, axis=0)
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [2., 2.])
        >>> fw.var(x, unbiased=False).item()
        1.25
    """
    x = float_arg("var", x)
    axes = M.normalize_axes("var", axis, x.ndim)
    n = 1
    for a in axes:
        n *= x.shape[a]
    d = x - M.mean(x, axis=axes, keepdim=True)
    denom = n - 1 if unbiased else n
    return M.sum(d * d, axis=axes, keepdim=keepdim) * (1.0 / denom if denom > 0 else float("nan"))


def std(
    x: Tensor, axis: Any = None, unbiased: bool = True, keepdim: bool = False, name: str | None = None
) -> Tensor:
    """The standard deviation of the elements of ``x`` over ``axis`` (the square root of :func:`var`).

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        axis (int | list[int] | tuple[int], optional): the axes to reduce; ``None``: all of them.
        unbiased (bool): divide by ``n - 1`` (Paddle's default), else by ``n``.
        keepdim (bool): keep the reduced axes, with size 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: a float tensor.

    Example:
        >>> import framework as fw
        >>> fw.std(fw.to_tensor([1.0, 2.0, 3.0, 4.0]))
        Tensor(shape=[], dtype=float32, device=cpu:0,
               1.2909945)
    """
    return M.sqrt(var(x, axis=axis, unbiased=unbiased, keepdim=keepdim))


def cumsum(x: Tensor, axis: int | None = None, dtype: Any = None, name: str | None = None) -> Tensor:
    """The running sum of ``x`` along ``axis``.

    Computed with log2(n) shifted adds (Hillis-Steele), all primitives.

    Args:
        x (Tensor): the input.
        axis (int, optional): the axis; ``None``: over the flattened ``x``.
        dtype (str | np.dtype, optional): cast ``x`` to this first; by default bool and integers
            sum as int64.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``x``'s shape (1-d when ``axis`` is ``None``).

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1, 2], [3, 4]])
        >>> fw.cumsum(x, axis=0)
        Tensor(shape=[2, 2], dtype=int64, device=cpu:0,
               [[1, 2],
                [4, 6]])
        >>> fw.cumsum(x).tolist()
        [1, 3, 6, 10]
    """
    x = tensor_arg("cumsum", x)
    if dtype is not None:
        x = M.cast(x, dtype)
    elif x.dtype.kind in "biu":
        x = M.cast(x, _dt.int64)
    if axis is None:
        x, axis = x.reshape((-1,)), 0
    ax = axis_arg("cumsum", axis, x.ndim)
    if x.ndim == 0:
        return x
    n = x.shape[ax]
    k = 1
    while k < n:
        starts = [0] * x.ndim
        stops = list(x.shape)
        stops[ax] = n - k
        pads = [(0, 0)] * x.ndim
        pads[ax] = (k, 0)
        x = x + S.pad_raw(S.slice_raw(x, tuple(starts), tuple(stops), (1,) * x.ndim), tuple(pads), 0)
        k *= 2
    return x


def topk(
    x: Tensor, k: int, axis: int = -1, largest: bool = True, sorted: bool = True, name: str | None = None
) -> tuple[Tensor, Tensor]:
    """The ``k`` largest (or smallest) values of ``x`` along ``axis``, and their indices.

    Computed by ``k`` rounds of argmax and masking; ties go to the lower index.

    Args:
        x (Tensor): the input.
        k (int): how many, in ``[1, x.shape[axis]]``.
        axis (int): the axis.
        largest (bool): the largest values, else the smallest.
        sorted (bool): Paddle's argument; the values always come sorted (largest, or smallest,
            first).
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor]: the values and their int64 indices, ``k`` long along ``axis``.

    Example:
        >>> import framework as fw
        >>> values, indices = fw.topk(fw.to_tensor([1, 5, 3, 5, 2]), 2)
        >>> values
        Tensor(shape=[2], dtype=int64, device=cpu:0,
               [5, 5])
        >>> indices.tolist()
        [1, 3]
        >>> fw.topk(fw.to_tensor([[1, 5, 3], [4, 0, 2]]), 1, largest=False)[0].tolist()
        [[1], [0]]
    """
    x = tensor_arg("topk", x)
    ax = axis_arg("topk", axis, x.ndim)
    n = x.shape[ax] if x.ndim else 1
    if not isinstance(k, int) or not 0 < k <= n:
        raise OpArgumentError(f"[topk] k must be an int in [1, {n}] (the size of axis {ax}), got {k!r}")
    work = x if largest else -x
    if work.dtype.kind in "biu":
        work = M.cast(work, _dt.float64)
    fill = float("-inf")
    pos_shape = [1] * x.ndim
    pos_shape[ax] = n
    positions = C.arange(n, device=x.device).reshape(tuple(pos_shape))
    idxs = []
    cur = work.detach()
    for _ in range(k):
        i = M.argmax(cur, axis=ax, keepdim=True)
        idxs.append(i)
        cur = M.where(positions == i, fill, cur)
    index = S.concat(idxs, axis=ax) if k > 1 else idxs[0]
    return take_along_axis(x, index, ax), index


def one_hot(x: Tensor, num_classes: int, name: str | None = None) -> Tensor:
    """``x[..., None] == arange(num_classes)`` as the default float dtype."""
    x = tensor_arg("one_hot", x)
    if x.dtype.kind not in "iu":
        raise OpArgumentError(f"[one_hot] x must hold integer class ids, got dtype {x.dtype}")
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes <= 0:
        raise OpArgumentError(f"[one_hot] num_classes must be a positive int, got {num_classes!r}")
    x = checked_index("one_hot", x, num_classes, f"class ids (num_classes={num_classes})")
    return one_hot_unchecked(x, num_classes)


def one_hot_unchecked(x: Tensor, num_classes: int) -> Tensor:
    """:func:`one_hot` for ids already known to lie in ``[0, num_classes)``."""
    classes = C.arange(num_classes, device=x.device)
    return M.cast(x.unsqueeze(-1) == classes, _dt.get_default_dtype())


_ = _m
