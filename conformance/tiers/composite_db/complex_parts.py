"""Entries for the complex composites (real, imag, conj, complex, abs_complex, angle): each
runs on real inputs (the parts of a complex tensor) and returns a real tensor, so the tier's
float64 references and finite differences check values and gradients as for any other op."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import CompositeInfo, _polar

#: a plugin without complex kernels reports these entries "not supported" (no CPU fallback)
_NEEDS = (("mul", "complex64"), ("mul", "complex128"))
#: the static tier's reason for leaving these out
_UNTRACED = "complex values are eager only: the program IR has no complex type or view yet"


def _pairs(r: np.random.Generator) -> list[np.ndarray]:
    return [r.uniform(-2, 2, 12), r.uniform(-2, 2, 12)]


def complex_entries(fw: Any) -> list[CompositeInfo]:
    """The parts of ``complex(a, b)`` and of products of two such, with their gradients."""
    z = fw.complex
    return [
        CompositeInfo(
            "complex",
            lambda a, b: fw.as_real(z(a, b)),
            lambda a, b: np.stack([a, b], -1),
            _pairs,
            (0, 1),
            needs=_NEEDS,
            untraced=_UNTRACED,
        ),
        CompositeInfo(
            "real",
            lambda a, b: fw.real(z(a, b) * z(a, b)),
            lambda a, b: a * a - b * b,
            _pairs,
            (0, 1),
            needs=_NEEDS,
            untraced=_UNTRACED,
        ),
        CompositeInfo(
            "imag",
            lambda a, b: fw.imag(z(a, b) * z(a, b)),
            lambda a, b: 2 * a * b,
            _pairs,
            (0, 1),
            needs=_NEEDS,
            untraced=_UNTRACED,
        ),
        CompositeInfo(
            "conj",
            lambda a, b: fw.imag(fw.conj(z(a, b)) * z(b, a)),
            lambda a, b: a * a - b * b,
            _pairs,
            (0, 1),
            needs=_NEEDS,
            untraced=_UNTRACED,
        ),
        CompositeInfo(
            "abs_complex",
            lambda a, b: fw.abs(z(a, b)),
            np.hypot,
            lambda r: [
                np.concatenate([r.uniform(-2, 2, 10), [0.0, 3.0, 0.0]]),
                np.concatenate([r.uniform(-2, 2, 10), [0.0, 0.0, -4.0]]),
            ],
            (0, 1),
            grad_inputs=lambda r: _polar(r, 12),
            needs=_NEEDS,
            untraced=_UNTRACED,
        ),
        CompositeInfo(
            "angle",
            lambda y, x: fw.angle(z(x, y)),
            np.arctan2,
            lambda r: [
                np.concatenate([r.uniform(-2, 2, 10), [0.0, 1.0, -1.0]]),
                np.concatenate([r.uniform(-2, 2, 10), [1.0, 0.0, 0.0]]),
            ],
            (0, 1),
            grad_inputs=lambda r: _polar(r, 12),
            needs=_NEEDS,
            untraced=_UNTRACED,
        ),
    ]
