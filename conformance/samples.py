"""Conformance samples: the :class:`Sample` and :class:`OpInfo` records and the value generators
(normal values, specials, integer edges, magnitudes) the per-op samples draw from."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from adapter_api import PRIMITIVES
from adapter_api import primitives as P
from framework.testing import TOLERANCES, Tolerance, tolerance  # noqa: F401  (one table, re-exported)

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS, INTS, NUMERIC, ALL = P.FLOATS, P.INTS, P.NUMERIC, P.ALL


def dtype_of(name: str) -> np.dtype:
    return BF16 if name == "bfloat16" else np.dtype(name)


@dataclass
class Sample:
    ins: list[np.ndarray]
    attrs: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    #: a bound on |x| summed over what one output element adds up (sum, matmul); the allowed
    #: error grows with it (floating-point summation error is relative to it, not to the result)
    magnitude: np.ndarray | None = None
    #: replaces the dtype's tolerance (e.g. the tighter one of a long half-precision sum)
    tol: Tolerance | None = None


@dataclass
class OpInfo:
    name: str
    samples: Callable[[np.dtype, np.random.Generator], Iterator[Sample]]
    ref: Callable[..., np.ndarray]
    tol_scale: float = 1.0
    #: indices of inputs that gradient checks differentiate (empty: no gradient check)
    grad_inputs: tuple[int, ...] = ()
    grad_samples: Callable[[np.dtype, np.random.Generator], Iterator[Sample]] | None = None
    #: True when the output is a tensor of the output's dtype (full/arange/philox: no inputs)
    creation: bool = False
    #: extra checks (e.g. out-of-range indices must raise): fn(run) -> None
    edge_checks: tuple[str, ...] = ()
    #: floating output dtypes compared bit for bit (NaN matches any NaN; the sign of a zero
    #: counts): data movement, neg/abs/floor/ceil and casts everywhere; in half precision
    #: also the ops computed exactly and rounded once (add, sub, mul, div, sqrt)
    exact: tuple[str, ...] = ()

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes for which the contract defines the op (``adapter_api.primitives``)."""
        return PRIMITIVES[self.name].dtypes


# -------------------------------------------------------------------------------------------
# value generators
# -------------------------------------------------------------------------------------------
def values(d: np.dtype, shape: tuple[int, ...], rng: np.random.Generator, domain: str = "real") -> np.ndarray:
    if d == np.bool_:
        return rng.random(shape) < 0.5
    if d.kind in "iu":
        lo, hi = (0, 20) if d.kind == "u" else (-20, 20)
        if domain == "positive":
            lo = 1
        return rng.integers(lo, hi, size=shape).astype(d)
    x = rng.standard_normal(shape) * 2.0
    if domain == "positive":
        x = np.abs(x) + 0.1
    elif domain == "unit":
        x = rng.uniform(-0.9, 0.9, shape)
    return np.asarray(x).astype(d)


def specials(d: np.dtype) -> np.ndarray:
    """NaN, infinities, signed zeros and ones."""
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5], dtype=np.float64).astype(d)


def magnitudes(d: np.dtype) -> tuple[float, float]:
    """A large and a small magnitude that are normal numbers of ``d``."""
    return {
        "float16": (3.0e4, 1.0e-4),
        "bfloat16": (1.0e30, 1.0e-30),
        "float32": (1.0e30, 1.0e-30),
        "float64": (1.0e200, 1.0e-200),
    }[d.name]


def int_edges(d: np.dtype) -> np.ndarray:
    info = np.iinfo(d)
    vals = {info.min, info.max, info.min + 1, info.max - 1, 0, 1, info.max // 2}
    if d.kind == "i":
        vals |= {-1, -(info.max // 2)}
    return np.array(sorted(vals), dtype=d)


SHAPES = [(), (0,), (2, 0, 3), (17,), (3, 5), (2, 3, 4)]

HALF = ("float16", "bfloat16")
#: past 65,536 elements: where a kernel may change its launch geometry (a 16-bit grid
#: dimension, a second pass, a multi-block path), which small samples never reach
BIG_SHAPE = (257, 273)
#: a reduced axis past 1,024 (a work-group, a thread block, a tile) and not a power of two,
#: alone (one long row) and across many outputs (BIG_SHAPE's element count in all)
LONG_AXIS = 4099
#: the sizes every op family samples past its tile and grid limits (docs/conformance.md lists them)
LARGE_SAMPLES = {
    "elementwise": "(257, 273) = 70,161 elements, also broadcast from (257, 1) and (1, 273); unary, "
    "binary, comparison, `where`",
    "reductions": "(2, 4099) on the last axis, (1031, 67) on the first, (70161,) whole; `max`/`min` with "
    "each row's extremes alone near the end",
    "argmax/argmin": "(2, 4099) and (70161,), the extreme placed past 1,024 / 65,536",
    "argsort": "one row of 70,001 with ties (stability), (17, 4099) descending",
    "matmul": "(33, 1031) @ (1031, 65): K past 1,024; (257, 16) @ (16, 273): 70,161 outputs",
    "layout": "permute (33, 65, 37), expand to (257, 273), a strided slice, concat on either axis, pad "
    "and copy, to 70,161 elements or more",
    "gather/scatter": "70,001 indices (scatter_add with duplicates), 70,001-element outputs",
    "cast": "(257, 273) to another dtype",
    "creation": "full and philox_uniform of (257, 273), arange of 70,001",
}
#: the largest sample the gradient checks take (finite differences cost one run per element)
GRAD_MAX_ELEMENTS = 4096


def is_float(d: np.dtype) -> bool:
    return d.kind == "f" or d == BF16


def half_accumulation_tol(d: np.dtype) -> Tolerance:
    """One or two units in the last place of the result, relative to it alone: a sum or
    matmul accumulated in float32 and rounded once to ``d`` stays within it; one accumulated
    in ``d`` itself drifts far past it (and stalls once the sum outgrows its terms' precision)."""
    return Tolerance(2.0**-10 if d.name == "float16" else 2.0**-7, 0.0)


def _normal_range(d: np.dtype) -> tuple[float, float]:
    """The smallest positive normal number of ``d`` and half its largest (a geometric sweep
    up to the largest overflows in numpy's float64 arithmetic)."""
    if d == BF16:
        return 1.2e-38, 1.6e38
    fi = np.finfo(d)
    return float(fi.tiny), float(fi.max) / 2


#: Dense sweeps of each function's transition ranges, where implementations switch formulas
#: (polynomial to asymptote, argument reduction, overflow to inf and underflow to 0), per
#: dtype: {op: fn(d) -> float64 points}. A random sample rarely lands there.
SWEEPS: dict[str, Callable[[np.dtype], np.ndarray]] = {
    "tanh": lambda d: np.concatenate(
        [np.linspace(-20, 20, 8001), np.linspace(4.8, 20, 4001), -np.linspace(4.8, 20, 4001)]
    ),
    "exp": lambda d: np.linspace(
        *{"float16": (-18, 12), "float64": (-746, 711)}.get(d.name, (-105, 90)), 20001
    ),
    "log": lambda d: np.concatenate([np.geomspace(*_normal_range(d), 20001), np.linspace(0.5, 2.0, 4001)]),
    "sqrt": lambda d: np.geomspace(*_normal_range(d), 20001),
    "rsqrt": lambda d: np.geomspace(*_normal_range(d), 20001),
    "sin": lambda d: np.linspace(-40, 40, 20001),
    "cos": lambda d: np.linspace(-40, 40, 20001),
    "erf": lambda d: np.linspace(-7, 7, 20001),
    # around integers and halves, and large values: past 2**23 (float32) / 2**52 (float64)
    # every float is an integer, past 2**31 a cast through int32 breaks
    "floor": lambda d: _rounding_sweep(d),
    "ceil": lambda d: _rounding_sweep(d),
    "sign": lambda d: np.concatenate(
        [np.geomspace(_normal_range(d)[0], 1, 2001), -np.geomspace(_normal_range(d)[0], 1, 2001)]
    ),
}


def _rounding_sweep(d: np.dtype) -> np.ndarray:
    big = {"float16": (100, 6.0e4), "float64": (1e12, 1e20)}.get(d.name, (1e6, 1e12))
    return np.concatenate([np.linspace(-5.5, 5.5, 4001), np.geomspace(*big, 2001), -np.geomspace(*big, 2001)])


def with_signed_zeros(gen: Callable[..., Iterator[Sample]]) -> Callable[..., Iterator[Sample]]:
    """Each sample, and for floats again with -0.0 and +0.0 in every input of the op's dtype:
    ops that move data (or only flip or clear the sign) must keep the sign of zero, bit for bit."""

    def wrapped(d: np.dtype, rng: np.random.Generator) -> Iterator[Sample]:
        for s in gen(d, rng):
            yield s
            ins = [a for a in s.ins if a.dtype == d and a.size]
            if not is_float(d) or not ins:
                continue
            zeroed = []
            for a in s.ins:
                if a.dtype == d and a.size:
                    a = a.copy()
                    a.reshape(-1)[::3] = -0.0
                    a.reshape(-1)[1::5] = 0.0
                zeroed.append(a)
            yield Sample(
                zeroed,
                dict(s.attrs),
                label=f"{s.label}, with -0.0 and +0.0",
                magnitude=s.magnitude,
                tol=s.tol,
            )

    return wrapped
