"""Randomized low-rank factorizations (Halko, Martinsson and Tropp's range finder):
``svd_lowrank`` and ``pca_lowrank``, from normal samples, matmul, ``qr`` and a small ``svd``.
"""

from __future__ import annotations

from adapter_api import OpArgumentError

from ..tensor import Tensor
from . import linalg_core as L
from . import math as M
from . import random as R
from .composites._common import float_arg


def svd_lowrank(
    x: Tensor,
    q: int | None = None,
    niter: int = 2,
    M_: Tensor | None = None,
    name: str | None = None,
    **kw: Tensor,
) -> tuple[Tensor, Tensor, Tensor]:
    """An approximate rank-``q`` SVD ``x - M ~ U diag(S) V^T`` of a matrix or a batch of them.

    The range of ``x - M`` is found from ``x`` times ``q`` normal random vectors, refined by
    ``niter`` power iterations (each re-orthonormalized with ``qr``); the SVD of the small
    projected matrix gives the factors.

    Args:
        x (Tensor): ``[..., m, n]``; integers are cast to the default float dtype.
        q (int, optional): the rank; default ``min(6, m, n)``.
        niter (int): the power iterations.
        M_ (Tensor, optional): subtracted from ``x`` first (Paddle's ``M``, also accepted by
            that name); broadcast to ``x``.
        name: ignored (Paddle's signature).
        **kw: ``M=`` (Paddle's keyword).

    Returns:
        tuple[Tensor, Tensor, Tensor]: ``U [..., m, q]``, ``S [..., q]``, ``V [..., n, q]``.

    Example:
        >>> import framework as fw
        >>> x = fw.to_tensor([[3.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
        >>> u, s, v = fw.linalg.svd_lowrank(x)
        >>> [round(t, 5) for t in s.tolist()], u.shape, v.shape
        ([3.0, 1.0], (3, 2), (2, 2))
    """
    x = float_arg("svd_lowrank", x)
    mean = kw.pop("M", M_)
    if kw:
        raise OpArgumentError(f"[svd_lowrank] unexpected arguments {sorted(kw)}")
    if x.ndim < 2:
        raise OpArgumentError(f"[svd_lowrank] x must be [..., m, n], got shape {list(x.shape)}")
    m, n = x.shape[-2], x.shape[-1]
    q = min(6, m, n) if q is None else int(q)
    if not 0 < q <= min(m, n):
        raise OpArgumentError(f"[svd_lowrank] q must be in [1, {min(m, n)}], got {q}")
    a = x if mean is None else x - mean
    g = R.randn(x.shape[:-2] + (n, q), dtype=x.dtype, device=x.device)
    y, _ = L.qr(M.matmul(a, g))
    for _ in range(niter):
        z, _ = L.qr(M.matmul(a, y, transpose_x=True))
        y, _ = L.qr(M.matmul(a, z))
    b = M.matmul(y, a, transpose_x=True)  # [..., q, n]
    ub, s, vh = L.svd(b)
    return M.matmul(y, ub), s, vh.swapaxes(-1, -2)


def pca_lowrank(
    x: Tensor, q: int | None = None, center: bool = True, niter: int = 2, name: str | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """Principal components of the rows of ``x`` by :func:`svd_lowrank` of the centred data.

    Args:
        x (Tensor): ``[..., m, n]``, one sample per row.
        q (int, optional): the number of components; default ``min(6, m, n)``.
        center (bool): subtract each column's mean first.
        niter (int): the power iterations.
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor, Tensor]: ``U [..., m, q]``, ``S [..., q]``, ``V [..., n, q]``
        (the components are ``V``'s columns).

    Example:
        >>> import framework as fw
        >>> u, s, v = fw.linalg.pca_lowrank(fw.to_tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]]), q=1)
        >>> u.shape, s.shape, v.shape
        ((3, 1), (1,), (2, 1))
    """
    x = float_arg("pca_lowrank", x)
    mean = M.mean(x, axis=-2, keepdim=True) if center else None
    return svd_lowrank(x, q=q, niter=niter, M_=mean)
