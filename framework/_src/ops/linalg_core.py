"""Linear algebra (``fw.linalg``, also at the top level): factorizations and solves run on the
host with numpy's LAPACK (a documented fallback: no plugin registers them yet) and copy the
result back to the tensor's device; each one's gradient rule is written with device ops beside
it, so training through them works everywhere. Everything else (``matrix_power``, ``norm``,
``pinv``, ``lstsq``, ``cond``, ``multi_dot``, ``cov``, ``cross``, ...) is a decomposition into
those and the existing ops, in ``linalg_derived`` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adapter_api import OarlockError, OpArgumentError

from .. import autograd
from .. import dtypes as _dt
from ..tensor import Tensor, to_tensor
from . import creation as C
from . import math as M
from . import shape as S
from .base import OPS, OpDef
from .composites._common import float_arg, tensor_arg


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
        _RUNS[name] = run
        return run

    return wrap


#: each host op's runner, by name: :func:`_saved` recomputes a freed output with it
_RUNS: dict[str, Callable[..., Any]] = {}


def _saved(n: Any) -> list[Tensor]:
    """The outputs of node ``n`` for its gradient rule.

    A first-order backward reads the detached copies the node keeps (``ctx``). Under
    ``create_graph`` the rule must read outputs that are functions of the inputs, or a second
    derivative loses every path through them: the live outputs, or where one was freed or
    changed in place since, the op run again on the inputs (recorded on the tape).
    """
    if not autograd.is_grad_enabled():
        return list(n.ctx)
    try:
        return [n.out(i) for i in range(n.n_outputs)]
    except OarlockError:
        res = _RUNS[n.op.name](list(n.inputs), **n.attrs)
        return list(res) if isinstance(res, tuple) else [res]


def _host_result(r: Any, dtype: np.dtype) -> np.ndarray:
    """A C-contiguous array keeping 0-d results 0-d: float results in ``dtype`` (its real part type for complex input), complex ones in its complex type."""
    r = np.asarray(r)
    want = (
        _dt.real_of(dtype)
        if r.dtype.kind == "f"
        else _dt.complex_of(dtype)
        if r.dtype.kind == "c"
        else r.dtype
    )
    return np.array(r, dtype=want, order="C")


_NEEDS = {
    "inverse": "invertible",
    "solve": "invertible",
    "cholesky": "symmetric positive definite",
    "det": "square",
}


# -- inverse, det, solve ----------------------------------------------------------------------------
def _g_inverse(n: Any, g: list) -> list:
    y = _saved(n)[0]
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
    d = _saved(n)[0]
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
    x = _saved(n)[0]
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
    x = _saved(n)[0]
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
    lo = _saved(n)[0]
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
    w, v = _saved(n)
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


def eig(x: Tensor, name: str | None = None) -> tuple[Tensor, Tensor]:
    """The eigenvalues and eigenvectors of a general square matrix, complex as Paddle's.

    Computed on the host with numpy's LAPACK; the result is copied to ``x``'s device. No
    gradient.

    Args:
        x (Tensor): ``[..., n, n]``, real or complex.
        name: ignored (Paddle's signature).

    Returns:
        tuple[Tensor, Tensor]: the eigenvalues ``[..., n]`` (LAPACK's order) and the eigenvectors
        as columns ``[..., n, n]``, both complex64 (complex128 for float64 and complex128 input).

    Example:
        >>> import framework as fw
        >>> w, v = fw.eig(fw.to_tensor([[0.0, -1.0], [1.0, 0.0]]))
        >>> w
        Tensor(shape=[2], dtype=complex64, device=cpu:0,
               [(0.00000000+1.00000000j), (0.00000000-1.00000000j)])
        >>> v.dtype
        dtype('complex64')
    """
    a = _square("eig", x)
    d = _dt.complex_of(a.dtype)
    w, v = np.linalg.eig(a.numpy().astype(d))  # NOTE: the complex routine (?geev) for every input, as Paddle
    return to_tensor(w.astype(d), device=a.device), to_tensor(
        np.ascontiguousarray(v.astype(d)), device=a.device
    )


def eigvals(x: Tensor, name: str | None = None) -> Tensor:
    """The eigenvalues of a general square matrix (:func:`eig` without vectors), complex.

    Args:
        x (Tensor): ``[..., n, n]``, real or complex.
        name: ignored (Paddle's signature).

    Returns:
        Tensor: ``[..., n]``, in LAPACK's order; complex64 (complex128 for float64 and complex128 input).

    Example:
        >>> import framework as fw
        >>> fw.eigvals(fw.to_tensor([[2.0, 1.0], [0.0, 3.0]]))
        Tensor(shape=[2], dtype=complex64, device=cpu:0,
               [(2.00000000+0.00000000j), (3.00000000+0.00000000j)])
    """
    return eig(x)[0]


def _copyltu(m: Tensor) -> Tensor:
    return C.tril(m) + _mT(C.tril(m, -1))


def _g_qr(n: Any, g: list) -> list:
    q, r = _saved(n)
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
    u, s, vh = _saved(n)
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
