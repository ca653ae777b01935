"""Paddle's structured constructors, each built from arange, pow, gather and pad: logspace,
tril_indices, triu_indices, vander, diag_embed; and the copies clone, assign, from_numpy,
asarray.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ... import dtypes as _dt
from ...tensor import Tensor, to_tensor
from .. import creation as C
from .. import math as M
from .. import shape as S
from ..indexing import alias, rebind
from ._common import tensor_arg
from .sorting import searchsorted


def _scalar(v: Any) -> float:
    return float(v.item()) if isinstance(v, Tensor) else float(v)


def logspace(
    start: Any, stop: Any, num: Any, base: Any = 10.0, dtype: Any = None, name: str | None = None
) -> Tensor:
    """``num`` numbers ``base ** t`` for ``t`` evenly spaced from ``start`` to ``stop`` (both included).

    Args:
        start (float | Tensor): the first exponent.
        stop (float | Tensor): the last exponent.
        num (int | Tensor): how many numbers.
        base (float | Tensor): the base.
        dtype (str | np.dtype, optional): default the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: 1-d, of ``num`` entries.

    Example:
        >>> import framework as fw
        >>> fw.logspace(0, 3, 4, base=2).tolist()
        [1.0, 2.0, 4.0, 8.0]
    """
    n = int(num.item()) if isinstance(num, Tensor) else int(num)
    d = _dt.as_dtype(dtype, "logspace") if dtype is not None else _dt.get_default_dtype()
    t = C.linspace(_scalar(start), _scalar(stop), n, dtype="float64")
    out = M.pow(_scalar(base), t)
    return M.cast(M.round_half_away(out) if d.kind in "iu" else out, d)


def _indices(name: str, keep: np.ndarray, dtype: Any) -> Tensor:
    d = _dt.as_dtype(dtype, name)
    if d.name not in ("int32", "int64"):
        raise OpArgumentError(f"[{name}] dtype must be int32 or int64, got {d}")
    rows, cols = np.nonzero(keep)
    return to_tensor(np.stack([rows, cols]).astype(d))


def tril_indices(row: int, col: int, offset: int = 0, dtype: Any = "int64") -> Tensor:
    """The (row, column) indices of the lower triangle of a ``row x col`` matrix, row by row.

    Args:
        row (int): the matrix's rows.
        col (int): its columns.
        offset (int): the diagonal that bounds the triangle (0 main, > 0 above, < 0 below).
        dtype (str): int32 or int64.

    Returns:
        Tensor: ``[2, N]``: the rows, then the columns.

    Example:
        >>> import framework as fw
        >>> fw.tril_indices(3, 3).tolist()
        [[0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2]]
    """
    return _indices("tril_indices", np.tri(int(row), int(col), int(offset), dtype=bool), dtype)


def triu_indices(row: int, col: int | None = None, offset: int = 0, dtype: Any = "int64") -> Tensor:
    """The (row, column) indices of the upper triangle of a ``row x col`` matrix, row by row.

    Args:
        row (int): the matrix's rows.
        col (int, optional): its columns; default ``row``.
        offset (int): the diagonal that bounds the triangle (0 main, > 0 above, < 0 below).
        dtype (str): int32 or int64.

    Returns:
        Tensor: ``[2, N]``: the rows, then the columns.

    Example:
        >>> import framework as fw
        >>> fw.triu_indices(3, 3, 1).tolist()
        [[0, 0, 1], [1, 2, 2]]
    """
    col = row if col is None else col
    return _indices("triu_indices", ~np.tri(int(row), int(col), int(offset) - 1, dtype=bool), dtype)


def vander(x: Tensor, n: int | None = None, increasing: bool = False, name: str | None = None) -> Tensor:
    """The Vandermonde matrix of a 1-d ``x``: columns ``x ** (n-1), ..., x, 1``.

    Args:
        x (Tensor): 1-d.
        n (int, optional): the number of columns; default ``len(x)``.
        increasing (bool): powers increase from left to right instead.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[len(x), n]``.

    Example:
        >>> import framework as fw
        >>> fw.vander(fw.to_tensor([1.0, 2.0, 3.0])).tolist()
        [[1.0, 1.0, 1.0], [4.0, 2.0, 1.0], [9.0, 3.0, 1.0]]
    """
    x = tensor_arg("vander", x)
    if x.ndim != 1:
        raise OpArgumentError(f"[vander] x must be 1-d, got shape {x.shape}")
    n = x.shape[0] if n is None else int(n)
    if n == 0:
        return C.zeros((x.shape[0], 0), dtype=x.dtype, device=x.device)
    powers = C.arange(n, device=x.device)
    powers = powers if increasing else S.flip(powers, 0)
    cols = [M.ones_like(x) if p == 0 else M.pow(x, p) for p in powers.tolist()]
    return S.stack(cols, axis=1)


def diag_embed(input: Any, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices whose ``offset`` diagonal (in dims ``dim1``, ``dim2``) holds the last dim of ``input``.

    Args:
        input (Tensor): ``[..., n]``.
        offset (int): the diagonal (0 main, > 0 above, < 0 below).
        dim1 (int): the output dim of the rows.
        dim2 (int): the output dim of the columns.

    Returns:
        Tensor: ``input``'s batch dims plus two of size ``n + |offset|``.

    Example:
        >>> import framework as fw
        >>> fw.diag_embed(fw.to_tensor([1, 2])).tolist()
        [[1, 0], [0, 2]]
    """
    x = input if isinstance(input, Tensor) else to_tensor(input)
    n, k = x.shape[-1], int(offset)
    nd = x.ndim + 1
    d1, d2 = dim1 % nd, dim2 % nd
    if d1 == d2:
        raise OpArgumentError(f"[diag_embed] dim1 and dim2 must differ, got {dim1} and {dim2}")
    square = x.unsqueeze(-1) * M.cast(C.eye(n, n, device=x.device), x.dtype)  # [..., n, n]
    # x_i at (i, i + k): k columns before and k rows after (k >= 0), or the reverse
    rows_pad, cols_pad = ((0, k), (k, 0)) if k >= 0 else ((-k, 0), (0, -k))
    band = S.pad_raw(square, tuple([(0, 0)] * (x.ndim - 1) + [rows_pad, cols_pad]), 0)
    batch = iter(range(nd - 2))
    order = [nd - 2 if d == d1 else nd - 1 if d == d2 else next(batch) for d in range(nd)]
    return S.transpose(band, order)


def clone(x: Tensor, name: str | None = None) -> Tensor:
    """A copy of ``x`` with its own storage (differentiable, like ``x.clone()``).

    Args:
        x (Tensor): the input.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: equal to ``x``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([1.0, 2.0])
        >>> y = fw.clone(x)
        >>> y.tolist(), y is x
        ([1.0, 2.0], False)
    """
    return tensor_arg("clone", x).clone()


def assign(x: Any, output: Tensor | None = None) -> Tensor:
    """A copy of ``x`` (a tensor, array, list or number); written into ``output`` when given.

    Args:
        x (Tensor | numpy.ndarray | list | number): the data.
        output (Tensor, optional): a tensor that becomes the copy (its shape and dtype too).

    Returns:
        Tensor: the copy (``output`` when given).

    Example:
        >>> import framework as fw
        >>> fw.assign([[1, 2], [3, 4]]).tolist()
        [[1, 2], [3, 4]]
    """
    data = x.clone() if isinstance(x, Tensor) else to_tensor(np.asarray(x))
    if output is None:
        return data
    # output takes the data's shape and dtype (Paddle), its version bumped
    rebind(output, data.to(output.device), "assign", alias(output))
    return output


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor holding the data of a numpy array (copied to the current device).

    Args:
        ndarray (numpy.ndarray): the array.

    Returns:
        Tensor: of the array's shape and dtype.

    Example:
        >>> import numpy as np
        >>> import framework as fw
        >>> fw.from_numpy(np.arange(3, dtype=np.int32)).dtype
        dtype('int32')
    """
    if not isinstance(ndarray, np.ndarray):
        raise OpArgumentError(f"[from_numpy] expected a numpy.ndarray, got {type(ndarray).__name__}")
    return to_tensor(ndarray)


def asarray(
    obj: Any, dtype: Any = None, device: Any = None, copy: bool | None = None, *, requires_grad: bool = False
) -> Tensor:
    """``obj`` (a tensor, array, list or number) as a tensor of ``dtype`` on ``device``.

    Args:
        obj: the data.
        dtype (str | np.dtype, optional): default the data's own.
        device (str, optional): default the current device (or the tensor's).
        copy (bool, optional): Paddle's flag; a new tensor is made unless nothing changes.
        requires_grad (bool): True: a gradient is computed for it (``stop_gradient=False``).

    Returns:
        Tensor: the data as a tensor.

    Example:
        >>> import framework as fw
        >>> fw.asarray([1, 2], dtype="float32").tolist()
        [1.0, 2.0]
    """
    if isinstance(obj, Tensor):
        out = obj if dtype is None else M.cast(obj, dtype)
        out = out.to(device) if device is not None else out
    else:
        out = to_tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        out.stop_gradient = False
    return out


def histogram_bin_edges(
    input: Tensor, bins: int = 100, min: float = 0.0, max: float = 0.0, name: str | None = None
) -> Tensor:
    """The ``bins + 1`` bin edges that :func:`histogram` uses.

    Evenly spaced over ``[min, max]``, or over the data's range when both are 0 (widened by 1
    on each side when that range is empty).

    Args:
        input (Tensor): the data.
        bins (int): the number of bins.
        min (float): the lower edge.
        max (float): the upper edge.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: 1-d, ``bins + 1`` edges (float32, or ``input``'s float dtype).

    Example:
        >>> import framework as fw
        >>> fw.histogram_bin_edges(fw.to_tensor([1.0, 2.0, 5.0]), bins=4).tolist()
        [1.0, 2.0, 3.0, 4.0, 5.0]
    """
    x = tensor_arg("histogram_bin_edges", input)
    lo, hi = float(min), float(max)
    if lo == 0.0 and hi == 0.0 and x.numel():
        lo, hi = float(M.min(x).item()), float(M.max(x).item())
    if lo == hi:
        lo, hi = lo - 1.0, hi + 1.0
    if lo > hi:
        raise OpArgumentError(f"[histogram_bin_edges] min {min} must not exceed max {max}")
    d = x.dtype if x.dtype.kind == "f" else _dt.as_dtype("float32")
    return C.linspace(lo, hi, int(bins) + 1, dtype=d, device=x.device)


def bucketize(
    x: Tensor, sorted_sequence: Tensor, out_int32: bool = False, right: bool = False, name: str | None = None
) -> Tensor:
    """The index of the bucket of ``sorted_sequence`` each entry of ``x`` falls in.

    Args:
        x (Tensor): the values.
        sorted_sequence (Tensor): 1-d, ascending boundaries.
        out_int32 (bool): int32 indices instead of int64.
        right (bool): a value equal to a boundary goes to the bucket after it.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.bucketize(fw.to_tensor([0.5, 2.0, 9.0]), fw.to_tensor([1.0, 2.0, 3.0])).tolist()
        [0, 1, 3]
    """
    seq = tensor_arg("bucketize", sorted_sequence, "sorted_sequence")
    if seq.ndim != 1:
        raise OpArgumentError(f"[bucketize] sorted_sequence must be 1-d, got shape {seq.shape}")
    return searchsorted(seq, tensor_arg("bucketize", x), out_int32=out_int32, right=right)


def histogramdd(
    x: Tensor,
    bins: Any = 10,
    ranges: Any = None,
    density: bool = False,
    weights: Tensor | None = None,
    name: str | None = None,
) -> tuple[Tensor, list[Tensor]]:
    """The ``D``-dimensional histogram of the points in the last dim of ``x``.

    Each dim ``d`` has ``bins[d]`` equal bins over ``[lo_d, hi_d]`` (the data's range, or
    ``ranges``); a bin holds its lower edge, the last one its upper edge too; points outside
    are not counted.

    Args:
        x (Tensor): ``[..., D]`` float points.
        bins (int | list[int]): the number of bins, one for every dim or one per dim.
        ranges (list[float], optional): ``[lo_0, hi_0, lo_1, hi_1, ...]``; default each dim's
            minimum and maximum (read on the host).
        density (bool): divide the counts by their total and by each bin's volume.
        weights (Tensor, optional): a weight per point (``x.shape[:-1]``), summed in place of
            counts.
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, list[Tensor]]: the ``bins``-shaped histogram, and each dim's ``bins[d] + 1`` edges.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]])
        >>> hist, edges = fw.histogramdd(x, bins=[3, 3], weights=fw.to_tensor([1.0, 2.0, 4.0, 8.0]))
        >>> hist.tolist()
        [[0.0, 1.0, 0.0], [2.0, 0.0, 0.0], [4.0, 0.0, 8.0]]
    """
    x = tensor_arg("histogramdd", x)
    if x.ndim < 2 or x.dtype.kind != "f":
        raise OpArgumentError(
            f"[histogramdd] x must be a float tensor [..., D], got {x.dtype} of shape {list(x.shape)}"
        )
    dims = x.shape[-1]
    pts = x.reshape((-1, dims))
    nb = [int(bins)] * dims if isinstance(bins, (int, np.integer)) else [int(b) for b in bins]
    if len(nb) != dims or any(b < 1 for b in nb):
        raise OpArgumentError(f"[histogramdd] bins must be one positive int or {dims} of them, got {bins!r}")
    if ranges is None:
        lo = M.min(pts, axis=0).tolist() if pts.shape[0] else [0.0] * dims
        hi = M.max(pts, axis=0).tolist() if pts.shape[0] else [0.0] * dims
    else:
        r = [float(v) for v in ranges]
        if len(r) != 2 * dims:
            raise OpArgumentError(
                f"[histogramdd] ranges needs {2 * dims} numbers (lo, hi per dim), got {len(r)}"
            )
        lo, hi = r[0::2], r[1::2]
    flat = C.zeros([pts.shape[0]], dtype="int64", device=x.device)
    inside = C.ones([pts.shape[0]], dtype="bool", device=x.device)
    edges = []
    for d in range(dims):
        a, b = (lo[d] - 0.5, hi[d] + 0.5) if lo[d] == hi[d] else (lo[d], hi[d])
        e = C.linspace(a, b, nb[d] + 1, dtype=x.dtype, device=x.device)
        edges.append(e)
        v = pts[:, d]
        k = M.minimum(searchsorted(e, v, right=True) - 1, nb[d] - 1)
        inside = inside & (v >= a) & (v <= b)
        flat = flat * nb[d] + M.maximum(k, 0)
    w = C.ones([pts.shape[0]], dtype=x.dtype, device=x.device) if weights is None else weights.reshape((-1,))
    w = M.where(inside, M.cast(w, x.dtype), 0.0)
    size = int(np.prod(nb))
    hist = C.zeros([size], dtype=x.dtype, device=x.device).scatter_add(flat, w, axis=0).reshape(tuple(nb))
    if density:
        volume = C.ones(nb, dtype=x.dtype, device=x.device)
        for d, e in enumerate(edges):
            view = [1] * dims
            view[d] = nb[d]
            volume = volume * (e[1:] - e[:-1]).reshape(view)
        hist = hist / (M.sum(hist) * volume)
    return hist, edges
