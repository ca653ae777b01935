"""The math namespace the other ops read (``M.add``, ``M.sum``, ``M.exp``, ``M.matmul``): one
name for four modules, ``elementwise`` (two-tensor math, comparisons, logic, cast, where, clip),
``unary``, ``reductions`` and ``matmuls``, which sit below it in the ops' floors."""

from __future__ import annotations

from .elementwise import *  # noqa: F403  (its public names)
from .elementwise import _check, _const, _operands  # noqa: F401  (helpers other ops use)
from .matmuls import dot, matmul, matmul_t, mm  # noqa: F401
from .reductions import (  # noqa: F401
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    count_nonzero,
    max,
    mean,
    min,
    normalize_axes,
    prod,
    sum,
)
from .unary import (  # noqa: F401
    abs,
    ceil,
    cos,
    erf,
    exp,
    expm1,
    expm1_decomposition,
    floor,
    floor_,
    isfinite,
    isinf,
    isnan,
    log,
    log1p,
    log1p_decomposition,
    log2,
    neg,
    reciprocal,
    round,
    round_half_away,
    rsqrt,
    sign,
    sin,
    sqrt,
    square,
    tanh,
    trunc,
)
