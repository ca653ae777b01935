"""The composites tier's entries: for each composite, how to call it through the public API,
its inputs on the op's edges, its numpy reference and which inputs get a gradient check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

NAN, INF = float("nan"), float("inf")


@dataclass
class CompositeInfo:
    name: str
    run: Callable[..., Any]  #: (*tensors) -> Tensor, through the public API
    ref: Callable[..., np.ndarray]  #: (*float64 arrays) -> array
    inputs: Callable[[np.random.Generator], list[np.ndarray]]  #: float64 inputs (ints stay ints)
    grad: tuple[int, ...] = ()  #: the inputs whose gradients are checked
    tol_scale: float = 10.0  #: decompositions round several times: 10x the primitive tolerance
    op: str = ""  #: the registered composite the entry exercises (default: ``name``)
    #: gradient samples when ``inputs`` sit on kinks or hold NaN/inf (default: ``inputs``)
    grad_inputs: Callable[[np.random.Generator], list[np.ndarray]] | None = None
    #: (primitive, dtype) kernels the entry needs natively (integer data: int8 casts): a
    #: plugin without one is "not supported" for the entry, not a CPU fallback
    needs: tuple[tuple[str, str], ...] = ()
    #: why the static tier does not trace the entry ("": it does): complex values, which the
    #: program IR does not hold yet
    untraced: str = ""

    def __post_init__(self) -> None:
        self.op = self.op or self.name


def _u(rng: np.random.Generator, *shape: int, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    return rng.uniform(lo, hi, shape)


def _edge(rng: np.random.Generator, lo: float, hi: float, n: int, *special: float) -> list[np.ndarray]:
    """``n`` uniform values in [lo, hi) followed by the ``special`` ones, as one 1-d input."""
    return [np.concatenate([rng.uniform(lo, hi, n), np.array(special, np.float64)])]


def _smooth(
    rng: np.random.Generator, lo: float, hi: float, n: int, *kinks: float, gap: float = 0.05
) -> list[np.ndarray]:
    """``n`` uniform values in [lo, hi), each within ``gap`` of a kink moved ``gap`` away from it."""
    x = rng.uniform(lo, hi, n)
    for k in kinks:
        x = np.where(np.abs(x - k) < gap, k + np.where(x >= k, gap, -gap), x)
    return [x]


def _on_zero(x: np.ndarray, *flat_idx: int) -> np.ndarray:
    x = x.copy()
    x.flat[list(flat_idx)] = 0.0
    return x


def _polar(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """(ordinate, abscissa) pairs with radius in [0.5, 2) and angle away from the branch cut."""
    rad, ang = rng.uniform(0.5, 2.0, n), rng.uniform(-2.9, 2.9, n)
    return [rad * np.sin(ang), rad * np.cos(ang)]


def _gamma_args(rng: np.random.Generator) -> list[np.ndarray]:
    """Positive values, and negative ones at least 0.2 from the poles."""
    neg = -(rng.integers(0, 4, 6) + rng.uniform(0.2, 0.8, 6))
    return [np.concatenate([rng.uniform(0.1, 8.0, 14), neg])]


def entries() -> list[CompositeInfo]:
    """Every entry of the tier, in a fixed order."""
    import framework as fw
    import framework.nn.functional as F
    from framework.incubate.nn import functional as IF

    from .blocked import blocked_entries
    from .complex_parts import complex_entries
    from .core import core_entries
    from .layers import linear_algebra_entries, norm_entries, spatial_entries
    from .pointwise import activation_entries, special_entries
    from .quant import quant_entries

    cos_sin = lambda: np.random.default_rng(7).uniform(-1, 1, (2, 5, 6, 4))  # noqa: E731
    return (
        core_entries(fw, F, cos_sin)
        + activation_entries(F)
        + special_entries(fw)
        + linear_algebra_entries(fw)
        + norm_entries(F)
        + spatial_entries(F)
        + blocked_entries(IF)
        + quant_entries()
        + complex_entries(fw)
    )
