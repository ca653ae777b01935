"""Using a factorization already computed, from matmul and the triangular solve: ``lu_solve``
(from :func:`framework.linalg.lu`'s packed factors and pivots), ``householder_product`` and
``ormqr`` (from Householder reflectors and their scales, as LAPACK's geqrf leaves them), and
``matrix_exp`` (scaling and squaring of a Taylor series).
"""

from __future__ import annotations

import math as _m

from adapter_api import OpArgumentError

from ..tensor import Tensor
from . import creation as C
from . import linalg_core as L
from . import math as M
from .composites._common import float_arg, tensor_arg


def lu_solve(b: Tensor, lu: Tensor, pivots: Tensor, trans: str = "N", name: str | None = None) -> Tensor:
    """The solution ``X`` of ``A @ X = b`` (or ``A^T @ X = b``) from ``A``'s LU factorization.

    Args:
        b (Tensor): ``[..., n, k]`` right-hand sides.
        lu (Tensor): ``[..., n, n]``, the packed factors of :func:`framework.linalg.lu`.
        pivots (Tensor): ``[..., n]``, its pivots (1-based, as LAPACK's).
        trans (str): ``"N"``: solve ``A X = b``; ``"T"`` (or ``"C"``, the same for real
            matrices): solve ``A^T X = b``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[..., n, k]``.

    Example:
        >>> import framework as fw
        >>> A = fw.to_tensor([[3.0, 1.0], [1.0, 2.0]], dtype="float64")
        >>> lu, p = fw.linalg.lu(A)
        >>> fw.linalg.lu_solve(fw.to_tensor([[9.0], [8.0]], dtype="float64"), lu, p).tolist()
        [[2.0], [3.0]]
    """
    if trans not in ("N", "T", "C"):
        raise OpArgumentError(f"[lu_solve] trans must be 'N', 'T' or 'C', got {trans!r}")
    b, lu = tensor_arg("lu_solve", b, "b"), tensor_arg("lu_solve", lu, "lu")
    p, _, _ = L.lu_unpack(lu, pivots)
    p = M.cast(p, lu.dtype)
    if trans == "N":  # A = P L U: X = U^-1 L^-1 P^T b
        z = M.matmul(p, b, transpose_x=True)
        z = L.triangular_solve(lu, z, upper=False, unitriangular=True)
        return L.triangular_solve(lu, z, upper=True)
    # A^T = U^T L^T P^T: X = P L^-T U^-T b
    z = L.triangular_solve(lu, b, upper=True, transpose=True)
    z = L.triangular_solve(lu, z, upper=False, transpose=True, unitriangular=True)
    return M.matmul(p, z)


def _reflectors_product(x: Tensor, tau: Tensor) -> Tensor:
    """The full ``[..., m, m]`` product ``H_1 H_2 ... H_k`` of ``H_i = I - tau_i v_i v_i^T``,
    ``v_i`` being column ``i`` of ``x`` below the diagonal with a 1 on it."""
    m, n = x.shape[-2], x.shape[-1]
    k = tau.shape[-1]
    if k > min(m, n):
        raise OpArgumentError(f"[householder_product] tau has {k} scales, more than min(m, n) = {min(m, n)}")
    rows = C.arange(m, device=x.device)
    q = C.eye(m, dtype=x.dtype, device=x.device).expand(x.shape[:-2] + (m, m))
    for i in range(k):
        col = x[..., :, i : i + 1]
        v = M.where((rows == i).reshape((m, 1)), 1.0, M.where((rows > i).reshape((m, 1)), col, 0.0))
        t = tau[..., i : i + 1].reshape(tau.shape[:-1] + (1, 1))
        q = q - M.matmul(M.matmul(q, v), v, transpose_y=True) * t
    return q


def householder_product(x: Tensor, tau: Tensor, name: str | None = None) -> Tensor:
    """The first ``n`` columns of the product of Householder reflectors (LAPACK's orgqr).

    Args:
        x (Tensor): ``[..., m, n]``, ``m >= n``: the reflectors' vectors below the diagonal.
        tau (Tensor): ``[..., k]``, ``k <= n``: their scales.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[..., m, n]``, orthonormal columns when ``x`` and ``tau`` come from a QR.

    Example:
        >>> import framework as fw
        >>> q = fw.linalg.householder_product(fw.to_tensor([[1.0], [0.0]]), fw.to_tensor([2.0]))
        >>> q.tolist()
        [[-1.0], [0.0]]
    """
    x, tau = float_arg("householder_product", x), float_arg("householder_product", tau, "tau")
    if x.ndim < 2 or x.shape[-2] < x.shape[-1]:
        raise OpArgumentError(
            f"[householder_product] x must be [..., m, n] with m >= n, got shape {list(x.shape)}"
        )
    return _reflectors_product(x, M.cast(tau, x.dtype))[..., :, : x.shape[-1]]


def ormqr(
    x: Tensor, tau: Tensor, y: Tensor, left: bool = True, transpose: bool = False, name: str | None = None
) -> Tensor:
    """``Q @ y`` (or ``y @ Q``, with ``Q^T`` if ``transpose``), ``Q`` the product of the
    Householder reflectors in ``x`` and ``tau`` (LAPACK's ormqr).

    Args:
        x (Tensor): ``[..., m, k]`` reflectors below the diagonal (``m`` the size of ``Q``).
        tau (Tensor): ``[..., k]`` their scales.
        y (Tensor): ``[..., m, p]`` (``left``) or ``[..., p, m]``.
        left (bool): multiply ``Q`` from the left, else from the right.
        transpose (bool): use ``Q^T``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``y``'s shape.

    Example:
        >>> import framework as fw
        >>> x, tau = fw.to_tensor([[1.0], [0.0]]), fw.to_tensor([2.0])
        >>> fw.linalg.ormqr(x, tau, fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])).tolist()
        [[-1.0, -2.0], [3.0, 4.0]]
    """
    x, tau, y = float_arg("ormqr", x), float_arg("ormqr", tau, "tau"), float_arg("ormqr", y, "y")
    q = _reflectors_product(x, M.cast(tau, x.dtype))
    return M.matmul(q, y, transpose_x=transpose) if left else M.matmul(y, q, transpose_y=transpose)


def matrix_exp(x: Tensor, name: str | None = None) -> Tensor:
    """The matrix exponential ``e^x = I + x + x^2/2! + ...`` of square matrices.

    Scaling and squaring: ``x`` is divided by ``2^s`` until its largest absolute row sum is
    at most 1/2 (``s`` read on the host, one for the whole batch), an 18-term Taylor series
    is summed by Horner's rule, and the result squared ``s`` times.

    Args:
        x (Tensor): ``[..., n, n]``; integers are cast to the default float dtype.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``x``'s shape and float dtype.

    Example:
        >>> import framework as fw
        >>> e = fw.linalg.matrix_exp(fw.to_tensor([[1.0, 0.0], [0.0, 2.0]]))
        >>> [round(v, 4) for v in e.flatten().tolist()]
        [2.7183, 0.0, 0.0, 7.3891]
    """
    x = float_arg("matrix_exp", x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise OpArgumentError(f"[matrix_exp] x must be [..., n, n], got shape {list(x.shape)}")
    n = x.shape[-1]
    norm = float(M.max(M.sum(M.abs(x), axis=-1)).item()) if x.numel() else 0.0
    if not _m.isfinite(norm):
        raise OpArgumentError("[matrix_exp] x holds inf or NaN")
    s = max(0, _m.ceil(_m.log2(norm)) + 1) if norm > 0 else 0
    a = x * (0.5**s)
    eye = C.eye(n, dtype=x.dtype, device=x.device)
    r = eye + a * (1.0 / 18)
    for k in range(17, 0, -1):
        r = eye + M.matmul(a, r) * (1.0 / k)
    for _ in range(s):
        r = M.matmul(r, r)
    return r
