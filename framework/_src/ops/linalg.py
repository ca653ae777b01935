"""Linear algebra (``fw.linalg``, also at the top level): factorizations and solves run on the
host with numpy's LAPACK (a documented fallback: no plugin registers them yet) and copy the
result back to the tensor's device; each one's gradient rule is written with device ops beside
it, so training through them works everywhere. Everything else (``matrix_power``, ``norm``,
``pinv``, ``lstsq``, ``cond``, ``multi_dot``, ``cov``, ``cross``, ...) is a decomposition into
those and the existing ops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from .. import autograd
from .. import dtypes as _dt
from ..tensor import Tensor, to_tensor
from . import creation as C
from . import indexing as I
from . import math as M
from . import shape as S
from .base import OPS, OpDef
from .composites._common import float_arg, tensor_arg
from .composites.diagonals import diagonal


def _mT(x: Tensor) -> Tensor:
    return x.swapaxes(-1, -2)


def _square(name: str, x: Tensor) -> Tensor:
    x = float_arg(name, x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise OpArgumentError(
            f"[{name}] x must be a (batch of) square matrices (..., n, n), got shape {x.shape}"
        )
    return x


def host_op(
    name: str, grad: Callable[..., list] | None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Define op ``name`` computed on the host by ``fn(*numpy arrays, **attrs)`` (one array or
    a tuple), with ``grad`` as its autograd rule (``None``: not differentiable)."""

    op = OPS[name] = OpDef(name, "host", None, grad)

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        op.doc = fn.__doc__ or ""

        def run(ins: list[Tensor], **attrs: Any) -> Any:
            dev = ins[0].device
            try:
                res = fn(*[t.numpy() for t in ins], **attrs)
            except np.linalg.LinAlgError as exc:
                raise OpArgumentError(
                    f"[{name}] {exc} (input shape {ins[0].shape}); the matrix must be {_NEEDS.get(name, 'well-conditioned')}"
                ) from None
            many = isinstance(res, tuple)
            outs = [to_tensor(_host_result(r, ins[0].dtype), device=dev) for r in (res if many else (res,))]
            if grad is not None and autograd.is_grad_enabled() and any(not t.stop_gradient for t in ins):
                autograd.record(
                    op, ins, attrs, outs, ctx=[o.detach() for o in outs]
                )  # outputs kept for the rule
            return tuple(outs) if many else outs[0]

        run.op = op  # type: ignore[attr-defined]
        return run

    return wrap


def _host_result(r: Any, dtype: np.dtype) -> np.ndarray:
    """A C-contiguous array of ``dtype`` (floats) keeping 0-d results 0-d."""
    r = np.asarray(r)
    return np.array(r, dtype=dtype if r.dtype.kind == "f" else r.dtype, order="C")


_NEEDS = {
    "inverse": "invertible",
    "solve": "invertible",
    "cholesky": "symmetric positive definite",
    "det": "square",
}


# -- inverse, det, solve ----------------------------------------------------------------------------
def _g_inverse(n: Any, g: list) -> list:
    y = n.ctx[0]
    return [-M.matmul(M.matmul(_mT(y), g[0]), _mT(y))]


@host_op("inverse", _g_inverse)
def _inverse(a: np.ndarray) -> np.ndarray:
    """A^-1; gradient -A^-T G A^-T."""
    return np.linalg.inv(a)


def inverse(x: Tensor, name: str | None = None) -> Tensor:
    """The inverse of a square matrix, or of each in a batch.

    Computed on the host with numpy's LAPACK; the result is copied to ``x``'s device.

    Args:
        x (Tensor): ``[..., n, n]``, invertible.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``; differentiable.

    Example:
        >>> import framework as fw
        >>> fw.inverse(fw.to_tensor([[4.0, 2.0], [2.0, 3.0]]))
        Tensor(shape=[2, 2], dtype=float32, device=cpu:0,
               [[ 0.375, -0.25 ],
                [-0.25 ,  0.5  ]])
    """
    return _inverse([_square("inverse", x)])


def _g_det(n: Any, g: list) -> list:
    a = n.inputs[0]
    d = n.ctx[0]
    return [(g[0] * d).reshape(d.shape + (1, 1)) * _mT(inverse(a))]


@host_op("det", _g_det)
def _det(a: np.ndarray) -> np.ndarray:
    return np.asarray(np.linalg.det(a))


def det(x: Tensor, name: str | None = None) -> Tensor:
    """The determinant of a square matrix, or of each in a batch.

    Computed on the host with numpy's LAPACK; the result is copied to ``x``'s device. The
    gradient is ``det(x) * inverse(x)^T``.

    Args:
        x (Tensor): ``[..., n, n]``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[...]``.

    Example:
        >>> import framework as fw
        >>> fw.det(fw.to_tensor([[4.0, 2.0], [2.0, 3.0]]))
        Tensor(shape=[], dtype=float32, device=cpu:0,
               8.)
    """
    return _det([_square("det", x)])


def slogdet(x: Tensor, name: str | None = None) -> Tensor:
    """The sign and the natural log of the absolute value of the determinant, stacked (as Paddle).

    Args:
        x (Tensor): ``[..., n, n]``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[2, ...]``: the signs, then ``log|det(x)|``.

    Example:
        >>> import framework as fw
        >>> fw.slogdet(fw.to_tensor([[4.0, 2.0], [2.0, 3.0]]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [1.       , 2.0794415])
    """
    d = det(x)
    return S.stack([M.sign(d), M.log(M.abs(d))], axis=0)


def _g_solve(n: Any, g: list) -> list:
    a, b = n.inputs
    x = n.ctx[0]
    gb = solve(_mT(a), g[0])
    ga = -M.matmul(gb, _mT(x)) if not a.stop_gradient else None
    return [ga, gb if not b.stop_gradient else None]


@host_op("solve", _g_solve)
def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.linalg.solve(a, b)


def solve(x: Tensor, y: Tensor, left: bool = True, name: str | None = None) -> Tensor:
    """The solution ``X`` of ``x @ X = y`` (or of ``X @ x = y`` with ``left=False``) for a square ``x``.

    Computed on the host with numpy's LAPACK; the result is copied to ``x``'s device.

    Args:
        x (Tensor): ``[..., n, n]``, invertible.
        y (Tensor): ``[..., n, k]``, or ``[n]`` for one column.
        left (bool): solve ``x @ X = y`` (True) or ``X @ x = y`` (False, ``y`` then
            ``[..., k, n]``).
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``y``'s shape; differentiable.

    Example:
        >>> import framework as fw
        >>> a = fw.to_tensor([[4.0, 2.0], [2.0, 3.0]])
        >>> fw.solve(a, fw.to_tensor([[2.0], [1.0]]))
        Tensor(shape=[2, 1], dtype=float32, device=cpu:0,
               [[0.5],
                [0. ]])
    """
    a = _square("solve", x)
    b = float_arg("solve", y, "y").astype(a.dtype)
    if not left:  # X @ a = b  <=>  a^T @ X^T = b^T
        if b.ndim < 2:
            raise OpArgumentError(f"[solve] left=False needs y of at least 2 dims, got shape {y.shape}")
        return solve(_mT(a), _mT(b)).swapaxes(-1, -2)
    vec = b.ndim == a.ndim - 1
    if vec:
        b = b.unsqueeze(-1)
    if b.shape[-2] != a.shape[-1]:
        raise OpArgumentError(
            f"[solve] y has {b.shape[-2]} rows but x is {a.shape[-1]} x {a.shape[-1]} (shapes {x.shape} and {y.shape})"
        )
    out = _solve([a, b])
    return out.squeeze(-1) if vec else out


def _g_triangular(n: Any, g: list) -> list:
    a, b = n.inputs
    x = n.ctx[0]
    upper, trans, unit = n.attrs["upper"], n.attrs["transpose"], n.attrs["unitriangular"]
    gb = triangular_solve(a, g[0], upper=upper, transpose=not trans, unitriangular=unit)
    ga = None
    if not a.stop_gradient:
        full = -M.matmul(x, _mT(gb)) if trans else -M.matmul(gb, _mT(x))
        ga = C.triu(full, 1 if unit else 0) if upper else C.tril(full, -1 if unit else 0)
    return [ga, gb if not b.stop_gradient else None]


@host_op("triangular_solve", _g_triangular)
def _triangular(
    a: np.ndarray, b: np.ndarray, upper: bool, transpose: bool, unitriangular: bool
) -> np.ndarray:
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        idx = np.arange(a.shape[-1])
        t = t.copy()
        t[..., idx, idx] = 1.0
    if transpose:
        t = np.swapaxes(t, -1, -2)
    return np.linalg.solve(t, b)


def triangular_solve(
    x: Tensor,
    y: Tensor,
    upper: bool = True,
    transpose: bool = False,
    unitriangular: bool = False,
    name: str | None = None,
) -> Tensor:
    """The solution ``X`` of ``op(T) @ X = y``, ``T`` a triangle of ``x``.

    Computed on the host with numpy's LAPACK; the result is copied to ``x``'s device.

    Args:
        x (Tensor): ``[..., n, n]``; only its upper (or lower) triangle is read.
        y (Tensor): ``[..., n, k]``.
        upper (bool): use the upper triangle of ``x``, else the lower one.
        transpose (bool): ``op(T) = T^T``, else ``T``.
        unitriangular (bool): take the diagonal of ``T`` as ones.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``y``'s shape; differentiable.

    Example:
        >>> import framework as fw
        >>> t = fw.to_tensor([[2.0, 1.0], [0.0, 4.0]])
        >>> fw.triangular_solve(t, fw.to_tensor([[4.0], [8.0]]))
        Tensor(shape=[2, 1], dtype=float32, device=cpu:0,
               [[1.],
                [2.]])
    """
    a = _square("triangular_solve", x)
    return _triangular(
        [a, float_arg("triangular_solve", y, "y").astype(a.dtype)],
        upper=bool(upper),
        transpose=bool(transpose),
        unitriangular=bool(unitriangular),
    )


# -- cholesky -----------------------------------------------------------------------------------------
def _g_cholesky(n: Any, g: list) -> list:
    lo = n.ctx[0]
    upper = n.attrs["upper"]
    gl = g[0]
    if upper:
        lo, gl = _mT(lo), _mT(gl)
    phi = C.tril(M.matmul(_mT(lo), gl))
    nn = lo.shape[-1]
    phi = phi - phi * C.eye(nn, dtype=phi.dtype, device=phi.device) * 0.5
    linv = inverse(lo)
    s = M.matmul(M.matmul(_mT(linv), phi), linv)
    return [(s + _mT(s)) * 0.5]


@host_op("cholesky", _g_cholesky)
def _cholesky(a: np.ndarray, upper: bool) -> np.ndarray:
    lo = np.linalg.cholesky(a)
    return np.swapaxes(lo, -1, -2) if upper else lo


def cholesky(x: Tensor, upper: bool = False, name: str | None = None) -> Tensor:
    """The Cholesky factor of a symmetric positive-definite matrix: ``L`` with ``x = L @ L^T``.

    Computed on the host with numpy's LAPACK; the result is copied to ``x``'s device.

    Args:
        x (Tensor): ``[..., n, n]``, symmetric positive-definite.
        upper (bool): return ``U = L^T`` (``x = U^T @ U``) instead.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: like ``x``, lower (or upper) triangular; differentiable.

    Example:
        >>> import framework as fw
        >>> fw.cholesky(fw.to_tensor([[4.0, 2.0], [2.0, 5.0]]))
        Tensor(shape=[2, 2], dtype=float32, device=cpu:0,
               [[2., 0.],
                [1., 2.]])
    """
    return _cholesky([_square("cholesky", x)], upper=bool(upper))


def cholesky_solve(x: Tensor, y: Tensor, upper: bool = False, name: str | None = None) -> Tensor:
    """The solution ``X`` of ``A @ X = x`` given the Cholesky factor ``y`` of ``A``.

    Args:
        x (Tensor): the right-hand side, ``[..., n, k]``.
        y (Tensor): ``L`` with ``A = L @ L^T`` (or ``U`` with ``A = U^T @ U`` when ``upper``).
        upper (bool): ``y`` is upper triangular.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: of ``x``'s shape.

    Example:
        >>> import framework as fw
        >>> L = fw.cholesky(fw.to_tensor([[4.0, 2.0], [2.0, 5.0]]))
        >>> fw.cholesky_solve(fw.to_tensor([[6.0], [7.0]]), L)
        Tensor(shape=[2, 1], dtype=float32, device=cpu:0,
               [[1.],
                [1.]])
    """
    f = _square("cholesky_solve", y)
    z = triangular_solve(f, x, upper=upper, transpose=upper)
    return triangular_solve(f, z, upper=upper, transpose=not upper)


# -- eigh, qr, svd --------------------------------------------------------------------------------------
def _g_eigh(n: Any, g: list) -> list:
    w, v = n.ctx[0], n.ctx[1]
    gw, gv = g
    inner = (
        C.zeros_like(v)
        if gw is None
        else gw.unsqueeze(-1) * C.eye(w.shape[-1], dtype=w.dtype, device=w.device)
    )
    if gv is not None:
        diff = w.unsqueeze(-2) - w.unsqueeze(-1)  # [i, j] = w_j - w_i
        eye = C.eye(w.shape[-1], dtype=w.dtype, device=w.device)
        f = (1.0 - eye) / (diff + eye)
        inner = inner + f * M.matmul(_mT(v), gv)
    ga = M.matmul(M.matmul(v, inner), _mT(v))
    return [(ga + _mT(ga)) * 0.5]


@host_op("eigh", _g_eigh)
def _eigh(a: np.ndarray, UPLO: str) -> tuple[np.ndarray, np.ndarray]:
    return tuple(np.linalg.eigh(a, UPLO=UPLO))  # type: ignore[return-value]


def eigh(x: Tensor, UPLO: str = "L", name: str | None = None) -> tuple[Tensor, Tensor]:
    """The eigenvalues (ascending) and eigenvectors of a symmetric matrix.

    Computed on the host with numpy's LAPACK; the result is copied to ``x``'s device. The
    eigenvectors' signs are LAPACK's.

    Args:
        x (Tensor): ``[..., n, n]``; only one triangle is read.
        UPLO (str): ``"L"`` reads the lower triangle, ``"U"`` the upper one.
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor]: the eigenvalues ``[..., n]`` and the eigenvectors as columns
        ``[..., n, n]``; differentiable (distinct eigenvalues).

    Example:
        >>> import framework as fw
        >>> a = fw.to_tensor([[2.0, 1.0], [1.0, 2.0]])
        >>> w, v = fw.eigh(a)
        >>> w
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [1., 3.])
        >>> bool(fw.allclose(v @ fw.diag(w) @ v.T, a, atol=1e-6))
        True
    """
    if UPLO not in ("L", "U"):
        raise OpArgumentError(f"[eigh] UPLO must be 'L' or 'U', got {UPLO!r}")
    return _eigh([_square("eigh", x)], UPLO=UPLO)


def eigvalsh(x: Tensor, UPLO: str = "L", name: str | None = None) -> Tensor:
    """The eigenvalues (ascending) of a symmetric matrix (:func:`eigh` without the vectors).

    Args:
        x (Tensor): ``[..., n, n]``; only one triangle is read.
        UPLO (str): ``"L"`` reads the lower triangle, ``"U"`` the upper one.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[..., n]``.

    Example:
        >>> import framework as fw
        >>> fw.eigvalsh(fw.to_tensor([[2.0, 1.0], [1.0, 2.0]]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [1., 3.])
    """
    return eigh(x, UPLO)[0]


def _real_or_raise(name: str, vals: np.ndarray) -> np.ndarray:
    if np.iscomplexobj(vals):
        if np.abs(vals.imag).max(initial=0.0) > 0:
            raise OpArgumentError(
                f"[{name}] the eigenvalues are complex and Oarlock has no complex dtype; use eigh for symmetric matrices"
            )
        vals = vals.real
    return vals


def eig(x: Tensor, name: str | None = None) -> tuple[Tensor, Tensor]:
    """The eigenvalues and eigenvectors of a general square matrix whose eigenvalues are real.

    Computed on the host with numpy's LAPACK; the result is copied to ``x``'s device. Complex
    eigenvalues raise (there is no complex dtype); no gradient.

    Args:
        x (Tensor): ``[..., n, n]``.
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor]: the eigenvalues ``[..., n]`` (LAPACK's order) and the eigenvectors
        as columns ``[..., n, n]``.

    Example:
        >>> import framework as fw
        >>> w, v = fw.eig(fw.to_tensor([[2.0, 0.0], [0.0, 3.0]]))
        >>> w
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [2., 3.])
        >>> v.tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    a = _square("eig", x)
    w, v = np.linalg.eig(a.numpy())
    w = _real_or_raise("eig", w)
    v = _real_or_raise("eig", v)
    return to_tensor(w.astype(a.dtype), device=a.device), to_tensor(
        np.ascontiguousarray(v.astype(a.dtype)), device=a.device
    )


def eigvals(x: Tensor, name: str | None = None) -> Tensor:
    """The eigenvalues of a general square matrix, when they are real (:func:`eig` without vectors).

    Args:
        x (Tensor): ``[..., n, n]``.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[..., n]``, in LAPACK's order.

    Example:
        >>> import framework as fw
        >>> fw.eigvals(fw.to_tensor([[2.0, 1.0], [0.0, 3.0]]))
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [2., 3.])
    """
    return eig(x)[0]


def _copyltu(m: Tensor) -> Tensor:
    return C.tril(m) + _mT(C.tril(m, -1))


def _g_qr(n: Any, g: list) -> list:
    q, r = n.ctx[0], n.ctx[1]
    gq = g[0] if g[0] is not None else C.zeros_like(q)
    gr = g[1] if g[1] is not None else C.zeros_like(r)
    a = n.inputs[0]
    if a.shape[-2] < a.shape[-1]:
        raise OpArgumentError(
            f"[qr] the gradient needs rows >= columns (reduced QR of a tall matrix), got shape {a.shape}"
        )
    m = M.matmul(r, _mT(gr)) - M.matmul(_mT(gq), q)
    b = gq + M.matmul(q, _copyltu(m))
    # b R^-T, by a triangular solve: (R^-1 b^T)^T
    return [_mT(triangular_solve(r, _mT(b), upper=True))]


@host_op("qr", _g_qr)
def _qr(a: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    return tuple(np.linalg.qr(a, mode=mode))  # type: ignore[return-value]


def qr(x: Tensor, mode: str = "reduced", name: str | None = None) -> Any:
    """The QR factorization ``x = Q @ R``, ``Q`` with orthonormal columns and ``R`` upper triangular.

    Computed on the host with numpy's LAPACK; the result is copied to ``x``'s device. The signs are LAPACK's.

    Args:
        x (Tensor): ``[..., m, n]``.
        mode (str): ``"reduced"`` (``Q`` is ``m x k``, ``R`` is ``k x n``, ``k = min(m, n)``),
            ``"complete"`` (``Q`` is ``m x m``) or ``"r"`` (``R`` only).
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor] | Tensor: ``(Q, R)``, or ``R`` for ``mode="r"``; differentiable.

    Example:
        >>> import framework as fw
        >>> a = fw.to_tensor([[3.0, 0.0], [4.0, 5.0]])
        >>> q, r = fw.qr(a)
        >>> bool(fw.allclose(q @ r, a, atol=1e-6)), bool(fw.allclose(q.T @ q, fw.eye(2), atol=1e-6))
        (True, True)
        >>> fw.abs(r)
        Tensor(shape=[2, 2], dtype=float32, device=cpu:0,
               [[5., 4.],
                [0., 3.]])
    """
    if mode not in ("reduced", "complete", "r"):
        raise OpArgumentError(f"[qr] mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    a = float_arg("qr", x)
    if a.ndim < 2:
        raise OpArgumentError(f"[qr] x must have at least 2 dims, got shape {a.shape}")
    q, r = _qr([a], mode="complete" if mode == "complete" else "reduced")
    return r if mode == "r" else (q, r)


def _g_svd(n: Any, g: list) -> list:
    """Townsend's rule for the reduced SVD (distinct singular values)."""
    u, s, vh = n.ctx[0], n.ctx[1], n.ctx[2]
    gu, gs, gvh = g
    v = _mT(vh)
    k = s.shape[-1]
    eye = C.eye(k, dtype=s.dtype, device=s.device)
    s2 = s * s
    f = (1.0 - eye) / (s2.unsqueeze(-2) - s2.unsqueeze(-1) + eye)  # [i, j] = 1 / (s_j^2 - s_i^2)
    smat = s.unsqueeze(-1) * eye
    inner = C.zeros_like(smat) if gs is None else gs.unsqueeze(-1) * eye
    sinv = (1.0 / s).unsqueeze(-2)
    ga = None
    if gu is not None:
        j = f * (M.matmul(_mT(u), gu) - M.matmul(_mT(gu), u))
        inner = inner + M.matmul(j, smat)
        extra = (
            M.matmul(gu - M.matmul(u, M.matmul(_mT(u), gu)), sinv.swapaxes(-1, -2) * eye)
            if u.shape[-2] > k
            else None
        )
        if extra is not None:
            ga = M.matmul(extra, vh)
    if gvh is not None:
        gv = _mT(gvh)
        kk = f * (M.matmul(_mT(v), gv) - M.matmul(_mT(gv), v))
        inner = inner + M.matmul(smat, kk)
        if v.shape[-2] > k:
            extra = M.matmul(
                M.matmul(u, 1.0 / s.unsqueeze(-1) * eye), _mT(gv - M.matmul(v, M.matmul(_mT(v), gv)))
            )
            ga = extra if ga is None else ga + extra
    core = M.matmul(M.matmul(u, inner), vh)
    return [core if ga is None else core + ga]


@host_op("svd", _g_svd)
def _svd(a: np.ndarray, full_matrices: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return tuple(np.linalg.svd(a, full_matrices=full_matrices))  # type: ignore[return-value]


def svd(x: Tensor, full_matrices: bool = False, name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """The singular value decomposition ``x = U @ diag(S) @ VH``, singular values descending.

    Computed on the host with numpy's LAPACK; the result is copied to ``x``'s device. The
    signs of ``U`` and ``VH`` are LAPACK's.

    Args:
        x (Tensor): ``[..., m, n]``.
        full_matrices (bool): ``U`` ``m x m`` and ``VH`` ``n x n``, else ``m x k`` and ``k x n``
            (``k = min(m, n)``).
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor, Tensor]: ``(U, S, VH)``; differentiable (distinct singular values).

    Example:
        >>> import framework as fw
        >>> a = fw.to_tensor([[3.0, 0.0], [0.0, -4.0]])
        >>> u, s, vh = fw.svd(a)
        >>> s
        Tensor(shape=[2], dtype=float32, device=cpu:0,
               [4., 3.])
        >>> bool(fw.allclose(u @ fw.diag(s) @ vh, a))
        True
    """
    a = float_arg("svd", x)
    if a.ndim < 2:
        raise OpArgumentError(f"[svd] x must have at least 2 dims, got shape {a.shape}")
    return _svd([a], full_matrices=bool(full_matrices))


def svdvals(x: Tensor, name: str | None = None) -> Tensor:
    return svd(x)[1]


# -- LU (host, no gradient) ------------------------------------------------------------------------------
def lu(x: Tensor, pivot: bool = True, get_infos: bool = False, name: str | None = None) -> Any:
    """The LU factorization with partial pivoting, packed as LAPACK does (``A = P @ L @ U``).

    Doolittle elimination on the host; no gradient. :func:`lu_unpack` gives ``P``, ``L``, ``U``.

    Args:
        x (Tensor): ``[..., m, n]``.
        pivot (bool): only ``True``.
        get_infos (bool): also return, per matrix, 0 or the 1-based index of the first zero pivot.
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, ...]: the packed factors (``L`` below the diagonal, its unit diagonal
        implied; ``U`` on and above) and the 1-based int32 pivots (row ``i`` was swapped with row
        ``pivots[i] - 1``); with ``get_infos``, the int32 infos as well.

    Example:
        >>> import framework as fw
        >>> packed, pivots = fw.lu(fw.to_tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> packed
        Tensor(shape=[2, 2], dtype=float32, device=cpu:0,
               [[3.        , 4.        ],
                [0.33333334, 0.6666667 ]])
        >>> pivots.tolist()
        [2, 2]
    """
    if not pivot:
        raise OpArgumentError("[lu] pivot=False is not supported; use the default pivot=True")
    a = float_arg("lu", x)
    if a.ndim < 2:
        raise OpArgumentError(f"[lu] x must have at least 2 dims, got shape {a.shape}")
    arr = a.numpy().astype(np.float64).copy()
    m, n = arr.shape[-2:]
    lead = arr.shape[:-2]
    flat = arr.reshape((-1, m, n))
    k = min(m, n)
    piv = np.zeros((flat.shape[0], k), dtype=np.int32)
    info = np.zeros(flat.shape[0], dtype=np.int32)
    for b in range(flat.shape[0]):
        t = flat[b]
        for j in range(k):
            p = j + int(np.argmax(np.abs(t[j:, j])))
            piv[b, j] = p + 1
            if p != j:
                t[[j, p]] = t[[p, j]]
            if t[j, j] == 0:
                info[b] = info[b] or j + 1
                continue
            t[j + 1 :, j] /= t[j, j]
            t[j + 1 :, j + 1 :] -= np.outer(t[j + 1 :, j], t[j, j + 1 :])
    packed = to_tensor(flat.reshape(arr.shape).astype(a.dtype), device=a.device)
    pivots = to_tensor(piv.reshape(lead + (k,)), device=a.device)
    if get_infos:
        return packed, pivots, to_tensor(info.reshape(lead), device=a.device)
    return packed, pivots


def lu_unpack(
    x: Tensor, y: Tensor, unpack_ludata: bool = True, unpack_pivots: bool = True, name: str | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """The factors ``(P, L, U)``, with ``A = P @ L @ U``, from the output of :func:`lu`.

    Args:
        x (Tensor): the packed factors from :func:`lu`.
        y (Tensor): the pivots from :func:`lu`.
        unpack_ludata (bool): Paddle's argument; ``L`` and ``U`` are always returned.
        unpack_pivots (bool): Paddle's argument; ``P`` is always returned.
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor, Tensor]: ``P`` ``[..., m, m]``, ``L`` ``[..., m, k]`` (unit
        diagonal) and ``U`` ``[..., k, n]``.

    Example:
        >>> import framework as fw
        >>> a = fw.to_tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> p, l, u = fw.lu_unpack(*fw.lu(a))
        >>> p.tolist()
        [[0.0, 1.0], [1.0, 0.0]]
        >>> bool(fw.allclose(p @ l @ u, a))
        True
    """
    lu_ = tensor_arg("lu_unpack", x)
    m, n = lu_.shape[-2:]
    k = min(m, n)
    lower = C.tril(lu_, -1)[..., :, :k] + C.eye(m, k, dtype=lu_.dtype, device=lu_.device)
    upper = C.triu(lu_)[..., :k, :]
    piv = tensor_arg("lu_unpack", y, "y").numpy().reshape((-1, k))
    perms = np.zeros((piv.shape[0], m, m), dtype=np.float64)
    for b in range(piv.shape[0]):
        order = np.arange(m)
        for j, p in enumerate(piv[b]):
            order[[j, p - 1]] = order[[p - 1, j]]
        perms[b][order, np.arange(m)] = 1.0
    p_ = to_tensor(perms.reshape(lu_.shape[:-2] + (m, m)).astype(lu_.dtype), device=lu_.device)
    return p_, lower, upper


# -- decompositions into the above -------------------------------------------------------------------------
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
