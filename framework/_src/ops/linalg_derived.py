"""The linear-algebra functions that are decompositions into the factorizations of ``linalg``
and the usual ops: matrix_power, multi_dot, pinv, lstsq, the norms, cond, dist, bmm, mv, cross,
cov, corrcoef, histogram, bincount, vecdot, matrix_rank, cholesky_inverse, cdist.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .. import dtypes as _dt
from ..tensor import Tensor, to_tensor
from . import creation as C
from . import indexing as I
from . import math as M
from . import shape as S
from .composites._common import float_arg, tensor_arg
from .composites.diagonals import diagonal
from .linalg_core import _mT, _square, cholesky_solve, inverse, svd, svdvals


def matrix_power(x: Tensor, n: int, name: str | None = None) -> Tensor:
    """``x`` multiplied by itself ``n`` times, by repeated squaring.

    Args:
        x (Tensor): ``[..., k, k]``.
        n (int): the power; 0 gives the identity, a negative power is one of the inverse.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``.

    Example:
        >>> import framework as fw
        >>> fw.matrix_power(fw.to_tensor([[1.0, 1.0], [0.0, 1.0]]), 3)
        Tensor(shape=[2, 2], dtype=float32, device=cpu:0,
               [[1., 3.],
                [0., 1.]])
        >>> fw.matrix_power(fw.to_tensor([[2.0, 0.0], [0.0, 4.0]]), -1).tolist()
        [[0.5, 0.0], [0.0, 0.25]]
    """
    a = _square("matrix_power", x)
    if not isinstance(n, int):
        raise OpArgumentError(f"[matrix_power] n must be an int, got {n!r}")
    if n < 0:
        a, n = inverse(a), -n
    result = None
    base = a
    while n:
        if n & 1:
            result = base if result is None else M.matmul(result, base)
        n >>= 1
        if n:
            base = M.matmul(base, base)
    if result is None:
        return C.eye(a.shape[-1], dtype=a.dtype, device=a.device).expand(a.shape)
    return result


def multi_dot(x: Sequence[Tensor], name: str | None = None) -> Tensor:
    """The chained matrix product ``x[0] @ x[1] @ ...``.

    Args:
        x (list[Tensor]): at least two matrices; a 1-d first (last) one is a row (column) vector.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the product.

    Example:
        >>> import framework as fw
        >>> a, b, c = fw.to_tensor([[1.0, 2.0]]), fw.eye(2), fw.to_tensor([[3.0], [4.0]])
        >>> fw.multi_dot([a, b, c])
        Tensor(shape=[1, 1], dtype=float32, device=cpu:0,
               [[11.]])
    """
    ts = list(x)
    if len(ts) < 2:
        raise OpArgumentError(f"[multi_dot] needs at least 2 tensors, got {len(ts)}")
    out = ts[0]
    for t in ts[1:]:
        out = M.matmul(out, t)
    return out


def pinv(x: Tensor, rcond: float = 1e-15, hermitian: bool = False, name: str | None = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse ``V @ diag(1/s) @ U^T``, from the SVD.

    Args:
        x (Tensor): ``[..., m, n]``.
        rcond (float): singular values below ``rcond * max(s)`` count as zero.
        hermitian (bool): Paddle's argument; the general SVD is used either way.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[..., n, m]``; differentiable through :func:`svd`.

    Example:
        >>> import framework as fw
        >>> fw.pinv(fw.to_tensor([[1.0, 0.0], [0.0, 0.0]]))
        Tensor(shape=[2, 2], dtype=float32, device=cpu:0,
               [[1., 0.],
                [0., 0.]])
    """
    u, s, vh = svd(x)
    keep = s > M.max(s, axis=-1, keepdim=True) * rcond
    sinv = M.where(keep, 1.0 / M.where(keep, s, s * 0.0 + 1.0), s * 0.0)
    return M.matmul(_mT(vh) * sinv.unsqueeze(-2), _mT(u))


def lstsq(
    x: Tensor, y: Tensor, rcond: float | None = None, driver: str | None = None, name: str | None = None
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The least-squares solution ``X`` of ``x @ X = y``, with residuals, rank and singular values.

    The four results are Paddle's. The solution is ``pinv(x) @ y`` (differentiable).

    Args:
        x (Tensor): ``[..., m, n]``.
        y (Tensor): ``[..., m, k]``.
        rcond (float, optional): singular values below ``rcond * max(s)`` count as zero; default
            the dtype's epsilon times ``max(m, n)``.
        driver (str, optional): Paddle's LAPACK driver; ignored.
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor, Tensor, Tensor]: the solution ``[..., n, k]``; the squared
        residuals ``[..., k]`` when ``m > n`` and ``x`` has full rank, else an empty tensor; the
        int32 rank; the singular values of ``x``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> sol, resid, rank, s = fw.lstsq(x, fw.to_tensor([[1.0], [2.0], [3.0]]))
        >>> sol
        Tensor(shape=[2, 1], dtype=float32, device=cpu:0,
               [[1.],
                [2.]])
        >>> rank.item()
        2
    """
    a = float_arg("lstsq", x)
    b = float_arg("lstsq", y, "y").astype(a.dtype)
    if a.ndim < 2 or b.ndim < 2 or a.shape[-2] != b.shape[-2]:
        raise OpArgumentError(
            f"[lstsq] x (..., m, n) and y (..., m, k) need the same m, got {a.shape} and {b.shape}"
        )
    m, n = a.shape[-2:]
    eps = float(np.finfo(a.dtype).eps) if a.dtype.kind == "f" else 1e-7
    rc = rcond if rcond is not None else eps * max(m, n)
    s = svd(a)[1]
    sol = M.matmul(pinv(a, rc), b)
    rank = M.sum(M.cast(s > M.max(s, axis=-1, keepdim=True) * rc, _dt.int32), axis=-1).astype("int32")
    if m > n and bool(M.all(rank == n).item()):
        r = M.matmul(a, sol) - b
        resid = M.sum(r * r, axis=-2)
    else:
        resid = C.zeros([0], dtype=a.dtype, device=a.device)
    return sol, resid, rank, s


def norm(
    x: Tensor, p: Any = "fro", axis: Any = None, keepdim: bool = False, name: str | None = None
) -> Tensor:
    """A vector or matrix norm of ``x``.

    Vector norms (``p`` a number, ``inf``, ``-inf`` or 0) reduce one axis, or the flattened
    tensor; matrix norms (``"fro"``, ``"nuc"``, ``inf``, ``-inf``, 1, -1, 2, -2) reduce two axes.

    Args:
        x (Tensor): the input; integers are cast to the default float dtype.
        p (str | float): the norm; ``"fro"`` (the default) over all elements is the 2-norm.
        axis (int | list[int], optional): one axis (vector norm) or two (matrix norm); ``None``:
            all elements.
        keepdim (bool): keep the reduced axes, with size 1.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the norms.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[3.0, 4.0], [6.0, 8.0]])
        >>> fw.norm(x, p=2, axis=1)
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [ 5., 10.])
        >>> fw.norm(fw.to_tensor([3.0, -4.0]), p=1).item()
        7.0
        >>> fw.norm(x, p=1, axis=[0, 1]).item()
        12.0
    """
    x = float_arg("norm", x)
    if p is None:
        p = "fro"
    axes = list(range(x.ndim)) if axis is None else ([axis] if isinstance(axis, int) else list(axis))
    axes = [a % max(x.ndim, 1) for a in axes]
    if len(axes) == 2 and (isinstance(p, str) or axis is not None):
        return _matrix_norm(x, p, axes, keepdim)
    if isinstance(p, str):
        if p != "fro":
            raise OpArgumentError(
                f"[norm] p={p!r} needs a 2-d axis (matrix norm); vector norms take a number, inf or -inf"
            )
        p = 2
    if axis is None and x.ndim > 1:
        r = norm(x.reshape((-1,)), p, 0)
        return r.reshape((1,) * x.ndim) if keepdim else r
    a = M.abs(x)
    if p == float("inf"):
        return M.max(a, axis=axes, keepdim=keepdim)
    if p == float("-inf"):
        return M.min(a, axis=axes, keepdim=keepdim)
    if p == 0:
        return M.sum(M.cast(a != 0, x.dtype), axis=axes, keepdim=keepdim)
    if p == 2:
        return M.sqrt(M.sum(x * x, axis=axes, keepdim=keepdim))
    if p == 1:
        return M.sum(a, axis=axes, keepdim=keepdim)
    return M.sum(a ** float(p), axis=axes, keepdim=keepdim) ** (1.0 / float(p))


def _matrix_norm(x: Tensor, p: Any, axes: list[int], keepdim: bool) -> Tensor:
    r0, c0 = axes
    if p == "fro":
        return M.sqrt(M.sum(x * x, axis=axes, keepdim=keepdim))
    rest = [a for a in range(x.ndim) if a not in axes]
    t = S.transpose(x, rest + [r0, c0])
    if p in ("nuc", 2, -2):
        s = svd(t)[1]
        out = M.sum(s, axis=-1) if p == "nuc" else (M.max(s, axis=-1) if p == 2 else M.min(s, axis=-1))
    elif p in (1, -1):
        cs = M.sum(M.abs(t), axis=-2)
        out = M.max(cs, axis=-1) if p == 1 else M.min(cs, axis=-1)
    elif p in (float("inf"), float("-inf")):
        rs = M.sum(M.abs(t), axis=-1)
        out = M.max(rs, axis=-1) if p > 0 else M.min(rs, axis=-1)
    else:
        raise OpArgumentError(
            f"[norm] matrix norm p must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got {p!r}"
        )
    if keepdim:
        for a in sorted(axes):
            out = out.unsqueeze(a)
    return out


def matrix_norm(
    x: Tensor, p: Any = "fro", axis: Sequence[int] = (-2, -1), keepdim: bool = False, name: str | None = None
) -> Tensor:
    return norm(x, p, list(axis), keepdim)


def vector_norm(
    x: Tensor, p: float = 2.0, axis: Any = None, keepdim: bool = False, name: str | None = None
) -> Tensor:
    if float(p) == 0.0:  # the number of non-zero entries
        return M.sum(
            M.cast(x != 0, x.dtype if x.dtype.kind == "f" else "float32"), axis=axis, keepdim=keepdim
        )
    if np.isinf(float(p)):  # the largest (smallest for -inf) magnitude
        reduce = M.max if float(p) > 0 else M.min
        return reduce(
            M.abs(x), axis=axis if axis is None or isinstance(axis, int) else list(axis), keepdim=keepdim
        )
    if axis is not None and not isinstance(axis, int) and len(axis) == 2:
        return M.sum(M.abs(x) ** float(p), axis=list(axis), keepdim=keepdim) ** (1.0 / float(p))
    return norm(x, float(p), axis, keepdim)


def cond(x: Tensor, p: Any = None, name: str | None = None) -> Tensor:
    """The condition number of a matrix.

    Args:
        x (Tensor): ``[..., m, n]``; square unless ``p`` is ``None``, 2 or -2.
        p (str | float, optional): ``None`` or 2: ``s_max / s_min``; -2: its inverse; else
            ``norm(x, p) * norm(inverse(x), p)`` with a matrix norm ``p``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[...]``.

    Example:
        >>> import framework as fw
        >>> fw.cond(fw.to_tensor([[2.0, 0.0], [0.0, 4.0]]))
        Tensor(shape=[], dtype=float32, device=cpu:0,
               2.)
    """
    if p is None or p in (2, -2):
        s = svd(x)[1]
        r = M.max(s, axis=-1) / M.min(s, axis=-1)
        return 1.0 / r if p == -2 else r
    return norm(x, p, [-2, -1]) * norm(inverse(x), p, [-2, -1])


def dist(x: Tensor, y: Tensor, p: float = 2, name: str | None = None) -> Tensor:
    """The ``p``-norm of ``x - y`` over all elements.

    Args:
        x (Tensor): the first tensor.
        y (Tensor): the second; ``x`` and ``y`` broadcast together.
        p (float): the vector norm, as in :func:`norm`.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: 0-d.

    Example:
        >>> import framework as fw
        >>> x, y = fw.to_tensor([3.0, 0.0]), fw.to_tensor([0.0, 4.0])
        >>> fw.dist(x, y)
        Tensor(shape=[], dtype=float32, device=cpu:0,
               5.)
        >>> fw.dist(x, y, p=1).item()
        7.0
    """
    return norm(x - y, float(p))


def bmm(x: Tensor, y: Tensor, name: str | None = None) -> Tensor:
    """Batched matrix product of two 3-d tensors with the same batch size.

    Args:
        x (Tensor): ``[b, m, k]``.
        y (Tensor): ``[b, k, n]``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[b, m, n]``.

    Example:
        >>> import framework as fw
        >>> fw.bmm(fw.ones([2, 1, 3]), fw.ones([2, 3, 2]))
        Tensor(shape=[2, 1, 2], dtype=float32, device=cpu:0,
               [[[3., 3.]],
        <BLANKLINE>
                [[3., 3.]]])
    """
    x, y = tensor_arg("bmm", x), tensor_arg("bmm", y, "y")
    if x.ndim != 3 or y.ndim != 3 or x.shape[0] != y.shape[0]:
        raise OpArgumentError(f"[bmm] needs two 3-d tensors with the same batch, got {x.shape} and {y.shape}")
    return M.matmul(x, y)


def mv(x: Tensor, vec: Tensor, name: str | None = None) -> Tensor:
    """Matrix-vector product.

    Args:
        x (Tensor): ``[m, n]``.
        vec (Tensor): ``[n]``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[m]``.

    Example:
        >>> import framework as fw
        >>> fw.mv(fw.to_tensor([[1.0, 2.0], [3.0, 4.0]]), fw.to_tensor([1.0, 1.0]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [3., 7.])
    """
    x, vec = tensor_arg("mv", x), tensor_arg("mv", vec, "vec")
    if x.ndim != 2 or vec.ndim != 1:
        raise OpArgumentError(f"[mv] needs a matrix and a vector, got {x.shape} and {vec.shape}")
    return M.matmul(x, vec)


def cross(x: Tensor, y: Tensor, axis: int = 9, name: str | None = None) -> Tensor:
    """The cross product of 3-vectors along ``axis``.

    Args:
        x (Tensor): size 3 along ``axis``.
        y (Tensor): of ``x``'s shape.
        axis (int): the axis; Paddle's default 9 means the first axis of size 3.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> fw.cross(fw.to_tensor([1.0, 0.0, 0.0]), fw.to_tensor([0.0, 1.0, 0.0]))
        Tensor(shape=[3], dtype=float32, device=cpu:0,
               [0., 0., 1.])
    """
    x, y = tensor_arg("cross", x), tensor_arg("cross", y, "y")
    if axis == 9:
        axis = next((i for i, s in enumerate(x.shape) if s == 3), -1)
    ax = axis % max(x.ndim, 1)
    if x.shape[ax] != 3 or x.shape != y.shape:
        raise OpArgumentError(
            f"[cross] x and y need equal shapes with size 3 on axis {axis}, got {x.shape} and {y.shape}"
        )

    def c(t: Tensor, i: int) -> Tensor:
        return I.gather(t, to_tensor([i], device=t.device), axis=ax)

    x0, x1, x2 = c(x, 0), c(x, 1), c(x, 2)
    y0, y1, y2 = c(y, 0), c(y, 1), c(y, 2)
    return S.concat([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0], axis=ax)


def cov(
    x: Tensor,
    rowvar: bool = True,
    ddof: bool = True,
    fweights: Tensor | None = None,
    aweights: Tensor | None = None,
    name: str | None = None,
) -> Tensor:
    """The covariance matrix of the variables in the rows (or columns) of ``x``.

    Args:
        x (Tensor): 1-d (one variable) or 2-d.
        rowvar (bool): each row is a variable, its columns the observations; False: the reverse.
        ddof (bool): divide by ``n - 1`` (unbiased), else by ``n``.
        fweights (Tensor, optional): integer frequency weights, one per observation.
        aweights (Tensor, optional): observation weights.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[v, v]`` for ``v`` variables (0-d for one).

    Example:
        >>> import framework as fw
        >>> fw.cov(fw.to_tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]]))
        Tensor(shape=[2, 2], dtype=float32, device=cpu:0,
               [[1., 2.],
                [2., 4.]])
    """
    x = float_arg("cov", x)
    if x.ndim > 2:
        raise OpArgumentError(f"[cov] x must be 1-d or 2-d, got shape {x.shape}")
    if x.ndim == 1:
        x = x.reshape((1, -1))
    if not rowvar:
        x = x.T
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights.astype(x.dtype)
    if aweights is not None:
        w = aweights.astype(x.dtype) if w is None else w * aweights.astype(x.dtype)
    if w is None:
        mean = M.mean(x, axis=1, keepdim=True)
        fact = float(n - (1 if ddof else 0))
        d = x - mean
        out = M.matmul(d, d.T) * (1.0 / fact)
    else:
        wsum = M.sum(w)
        mean = M.sum(x * w, axis=1, keepdim=True) / wsum
        if not ddof:
            fact = wsum
        elif aweights is None:
            fact = wsum - 1.0
        else:
            fact = wsum - M.sum(w * aweights.astype(x.dtype)) / wsum
        d = x - mean
        out = M.matmul(d * w, d.T) / fact
    return out.reshape(()) if out.shape == (1, 1) else out


def corrcoef(x: Tensor, rowvar: bool = True, name: str | None = None) -> Tensor:
    """The Pearson correlation coefficients of the variables in the rows (or columns) of ``x``.

    Args:
        x (Tensor): 1-d (one variable) or 2-d.
        rowvar (bool): each row is a variable, its columns the observations; False: the reverse.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[v, v]``, in ``[-1, 1]``.

    Example:
        >>> import framework as fw
        >>> fw.corrcoef(fw.to_tensor([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]))
        Tensor(shape=[2, 2], dtype=float32, device=cpu:0,
               [[ 1., -1.],
                [-1.,  1.]])
    """
    c = cov(x, rowvar)
    if c.ndim == 0:
        return c / c
    d = M.sqrt(_diag(c))
    return M.clip(c / d.unsqueeze(-1) / d.unsqueeze(0), -1.0, 1.0)


def _diag(c: Tensor) -> Tensor:
    return diagonal(c)


def histogram(
    input: Tensor,
    bins: int = 100,
    min: float = 0,
    max: float = 0,
    weight: Tensor | None = None,
    density: bool = False,
    name: str | None = None,
) -> Tensor:
    """Counts of the values of ``input`` in ``bins`` equal bins over ``[min, max]``.

    Values outside the range are ignored; the last bin includes ``max``.

    Args:
        input (Tensor): the values (flattened).
        bins (int): the number of bins.
        min (float): the lower end; with ``max`` also 0, the data's minimum.
        max (float): the upper end; with ``min`` also 0, the data's maximum.
        weight (Tensor, optional): a weight per value, summed instead of counting.
        density (bool): divide by the total and the bin width (a density, integrating to 1).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[bins]``: int64 counts, or the weights' dtype, or a float density.

    Example:
        >>> import framework as fw
        >>> fw.histogram(fw.to_tensor([1.0, 2.0, 1.0, 4.0]), bins=4, min=0, max=4)
        Tensor(shape=[4], dtype=int64, device=cpu:0,
               [0, 2, 1, 1])
    """
    x = tensor_arg("histogram", input).reshape((-1,))
    if not isinstance(bins, int) or bins <= 0:
        raise OpArgumentError(f"[histogram] bins must be a positive int, got {bins!r}")
    xf = x.astype("float64") if x.dtype != _dt.float32 else x
    lo, hi = float(min), float(max)
    if lo == 0 and hi == 0 and x.numel():
        lo, hi = float(M.min(xf).item()), float(M.max(xf).item())
    if lo > hi:
        raise OpArgumentError(f"[histogram] min must not exceed max, got {min} and {max}")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    inside = (xf >= lo) & (xf <= hi)
    idx = M.clip(M.cast(M.floor((xf - lo) * (bins / (hi - lo))), _dt.int64), 0, bins - 1)
    w = M.cast(inside, _dt.int64) if weight is None else M.where(inside, weight.reshape((-1,)), 0.0)
    out = I.scatter_add(C.zeros([bins], dtype=w.dtype, device=x.device), idx, w, axis=0)
    if density:
        return out.astype(_dt.get_default_dtype()) / (
            M.sum(out).astype(_dt.get_default_dtype()) * ((hi - lo) / bins)
        )
    return out


def bincount(x: Tensor, weights: Tensor | None = None, minlength: int = 0, name: str | None = None) -> Tensor:
    """The number of times each non-negative integer occurs in ``x``.

    Args:
        x (Tensor): 1-d, non-negative integers.
        weights (Tensor, optional): of ``x``'s shape; summed per value instead of counting.
        minlength (int): the least length of the result.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[max(max(x) + 1, minlength)]``: int64 counts, or the weights' dtype.

    Example:
        >>> import framework as fw
        >>> fw.bincount(fw.to_tensor([0, 1, 1, 3]))
        Tensor(shape=[4], dtype=int64, device=cpu:0,
               [1, 2, 0, 1])
        >>> fw.bincount(fw.to_tensor([0, 1, 1]), weights=fw.to_tensor([0.5, 1.0, 2.0])).tolist()
        [0.5, 3.0]
    """
    x = tensor_arg("bincount", x)
    if x.ndim != 1 or x.dtype.kind not in "iu":
        raise OpArgumentError(
            f"[bincount] x must be a 1-d integer tensor, got shape {x.shape} dtype {x.dtype}"
        )
    if x.numel() and int(M.min(x).item()) < 0:
        raise OpArgumentError("[bincount] x must hold non-negative ints")
    n = _imax(int(M.max(x).item()) + 1 if x.numel() else 0, int(minlength))
    w = (
        C.ones(x.shape, dtype="int64", device=x.device)
        if weights is None
        else tensor_arg("bincount", weights, "weights")
    )
    return I.scatter_add(C.zeros([n], dtype=w.dtype, device=x.device), x.astype("int64"), w, axis=0)


def _imax(a: int, b: int) -> int:
    return a if a > b else b


def vecdot(x: Tensor, y: Tensor, axis: int = -1, name: str | None = None) -> Tensor:
    """The dot products of ``x`` and ``y`` along ``axis`` (they broadcast elsewhere).

    Args:
        x (Tensor): the first vectors.
        y (Tensor): the second vectors.
        axis (int): the dim the products are summed over.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: the broadcast shape without ``axis``.

    Example:
        >>> import framework as fw
        >>> fw.linalg.vecdot(fw.to_tensor([[1.0, 2.0]]), fw.to_tensor([[3.0, 4.0]])).tolist()
        [11.0]
    """
    return M.sum(x * y, axis=axis)


def matrix_rank(
    x: Tensor,
    tol: Any = None,
    hermitian: bool = False,
    atol: Any = None,
    rtol: Any = None,
    name: str | None = None,
) -> Tensor:
    """The number of singular values of each matrix above a tolerance.

    The tolerance is ``tol`` when given, else ``max(atol, rtol * largest singular value)``
    with ``rtol`` defaulting to ``eps * max(m, n)`` (NumPy's and Paddle's rule).

    Args:
        x (Tensor): ``[..., m, n]``.
        tol (float | Tensor, optional): the absolute tolerance.
        hermitian (bool): Paddle's hint for symmetric input (the same answer here).
        atol (float | Tensor, optional): an absolute tolerance.
        rtol (float | Tensor, optional): a relative tolerance.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: int64 ranks, ``[...]``.

    Example:
        >>> import framework as fw
        >>> fw.linalg.matrix_rank(fw.to_tensor([[1.0, 2.0], [2.0, 4.0]])).item()
        1
    """
    s = svdvals(x)
    top = M.max(s, axis=-1, keepdim=True)
    if tol is not None:
        limit = tol
    else:
        eps = float(np.finfo(s.dtype).eps) * max(x.shape[-2:])
        rel = top * (eps if rtol is None else rtol)
        limit = rel if atol is None else M.maximum(rel, atol)
    return M.sum(M.cast(s > limit, "int64"), axis=-1)


def cholesky_inverse(x: Tensor, upper: bool = False, name: str | None = None) -> Tensor:
    """The inverse of ``A = L L^T`` (or ``U^T U`` with ``upper``) from its Cholesky factor ``x``.

    Args:
        x (Tensor): the triangular factor ``[..., n, n]``.
        upper (bool): ``x`` is the upper factor ``U``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``A^-1``.

    Example:
        >>> import framework as fw
        >>> fw.linalg.cholesky_inverse(fw.to_tensor([[2.0, 0.0], [0.0, 1.0]])).tolist()
        [[0.25, 0.0], [0.0, 1.0]]
    """
    n = x.shape[-1]
    return cholesky_solve(C.eye(n, n, dtype=x.dtype, device=x.device).expand(x.shape), x, upper=upper)


def cdist(x: Tensor, y: Tensor, p: float = 2.0, compute_mode: str = "", name: str | None = None) -> Tensor:
    """The ``p``-norm distance of every row of ``x`` to every row of ``y``.

    Args:
        x (Tensor): ``[..., P, M]``.
        y (Tensor): ``[..., R, M]``.
        p (float): the norm's order (0: the number of differing entries; inf: the largest).
        compute_mode (str): Paddle's choice of algorithm; one exact way here.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[..., P, R]``.

    Example:
        >>> import framework as fw
        >>> fw.cdist(fw.to_tensor([[0.0, 0.0]]), fw.to_tensor([[3.0, 4.0], [1.0, 0.0]])).tolist()
        [[5.0, 1.0]]
    """
    d = M.abs(x.unsqueeze(-2) - y.unsqueeze(-3))
    if p == 0:
        return M.sum(M.cast(d != 0, d.dtype), axis=-1)
    if np.isinf(p):
        return M.max(d, axis=-1)
    if p == 2:  # through sqrt of a sum of squares: 0 distances keep a finite (zero) gradient
        sq = M.sum(d * d, axis=-1)
        return M.where(sq == 0, 0.0, M.sqrt(M.where(sq == 0, 1.0, sq)))
    return M.sum(d ** float(p), axis=-1) ** (1.0 / float(p))
