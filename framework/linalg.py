"""``fw.linalg`` (Paddle's ``paddle.linalg``): factorizations, solves, norms.

Factorizations and solves (inverse, det, solve, triangular_solve, cholesky, eigh, qr, svd,
eig, lu) run on the host with numpy's LAPACK and copy the result to the tensor's device (a
documented fallback until a plugin registers them); their gradients (all but eig and lu) are
written with device ops. The rest are decompositions into those and the usual ops.

>>> import framework as fw
>>> a = fw.to_tensor([[4.0, 2.0], [2.0, 3.0]])
>>> fw.linalg.solve(a, fw.to_tensor([2.0, 1.0])).tolist()
[0.5, 0.0]
"""

# ruff: noqa: F401  (re-exports)
from __future__ import annotations

from ._src.ops.linalg import (
    bincount,
    bmm,
    cdist,
    cholesky,
    cholesky_inverse,
    cholesky_solve,
    cond,
    corrcoef,
    cov,
    cross,
    det,
    dist,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    histogram,
    inverse,
    lstsq,
    lu,
    lu_unpack,
    matrix_norm,
    matrix_power,
    matrix_rank,
    multi_dot,
    mv,
    norm,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
    triangular_solve,
    vecdot,
    vector_norm,
)
from ._src.ops.math import matmul

inv = inverse

__all__ = [n for n in dir() if not n.startswith("_") and n != "annotations"]

# Paddle parity of the tensor-op examples (issue 40, parity-a)
from ._src.ops.linalg_factors import householder_product, lu_solve, matrix_exp, ormqr  # noqa: E402
from ._src.ops.linalg_lowrank import pca_lowrank, svd_lowrank  # noqa: E402

__all__ += ["householder_product", "lu_solve", "matrix_exp", "ormqr", "pca_lowrank", "svd_lowrank"]
