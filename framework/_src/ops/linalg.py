"""The linear-algebra namespace the other ops and ``fw.linalg`` read: one name for
``linalg_core`` (factorisations, solves, inverses over their primitives and host routines) and
``linalg_derived`` (the functions built from them: norms, pinv, lstsq, cov, ...)."""

from __future__ import annotations

from .linalg_core import *  # noqa: F403  (its public names)
from .linalg_derived import (  # noqa: F401
    bincount,
    bmm,
    cdist,
    cholesky_inverse,
    cond,
    corrcoef,
    cov,
    cross,
    dist,
    histogram,
    lstsq,
    matrix_norm,
    matrix_power,
    matrix_rank,
    multi_dot,
    mv,
    norm,
    pinv,
    vecdot,
    vector_norm,
)
