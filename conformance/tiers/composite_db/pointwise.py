"""Entries for the element-wise composites: activations and special functions."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import composite_reference as R
from . import INF, NAN, CompositeInfo, _edge, _gamma_args, _on_zero, _polar, _smooth, _u


def activation_entries(F: Any) -> list[CompositeInfo]:
    """Piecewise activations: forward samples on each threshold exactly, NaN and infinities."""
    return [
        CompositeInfo(
            "relu6",
            lambda x: F.relu6(x),
            R.relu6,
            lambda r: _edge(r, -3, 9, 20, 0.0, -0.0, 6.0, NAN, INF, -INF),
            (0,),
            grad_inputs=lambda r: _smooth(r, -3, 9, 20, 0.0, 6.0),
        ),
        CompositeInfo(
            "hardtanh",
            lambda x: F.hardtanh(x, -0.5, 1.5),
            lambda x: R.hardtanh(x, -0.5, 1.5),
            lambda r: _edge(r, -3, 3, 20, -0.5, 1.5, 0.0, NAN, INF, -INF),
            (0,),
            grad_inputs=lambda r: _smooth(r, -3, 3, 20, -0.5, 1.5),
        ),
        CompositeInfo(
            "elu",
            lambda x: F.elu(x, 0.7),
            lambda x: R.elu(x, 0.7),
            lambda r: _edge(r, -4, 4, 20, 0.0, -0.0, 100.0, -50.0, NAN, INF, -INF),
            (0,),
            grad_inputs=lambda r: _smooth(r, -4, 4, 20, 0.0),
        ),
        CompositeInfo(
            "selu",
            lambda x: F.selu(x),
            R.selu,
            lambda r: _edge(r, -4, 4, 20, 0.0, 50.0, -50.0, NAN),
            (0,),
            grad_inputs=lambda r: _smooth(r, -4, 4, 20, 0.0),
        ),
        CompositeInfo(
            "celu",
            lambda x: F.celu(x, 0.5),
            lambda x: R.celu(x, 0.5),
            lambda r: _edge(r, -4, 4, 20, 0.0, 40.0, -30.0, NAN),
            (0,),
            grad_inputs=lambda r: _smooth(r, -4, 4, 20, 0.0),
        ),
        CompositeInfo(
            "celu_negative_alpha",
            lambda x: F.celu(x, -0.75),
            lambda x: R.celu(x, -0.75),
            lambda r: _edge(r, -4, 4, 20, 0.0, 40.0, -20.0, NAN),
            (0,),
            op="celu",
            grad_inputs=lambda r: _smooth(r, -4, 4, 20, 0.0),
        ),
        CompositeInfo(
            "prelu",
            lambda x, w: F.prelu(x, w),
            lambda x, w: R.prelu(x, w, 1),
            lambda r: [_on_zero(_u(r, 2, 3, 2, 2), 0, 7), _u(r, 3, lo=-0.5, hi=0.5)],
            (0, 1),
            grad_inputs=lambda r: [
                _smooth(r, -2, 2, 24, 0.0)[0].reshape(2, 3, 2, 2),
                _u(r, 3, lo=-0.5, hi=0.5),
            ],
        ),
        CompositeInfo(
            "prelu_channel_last",
            lambda x, w: F.prelu(x, w, data_format="NLC"),
            lambda x, w: R.prelu(x, w, 2),
            lambda r: [_smooth(r, -2, 2, 24, 0.0)[0].reshape(2, 3, 4), _u(r, 4, lo=-0.5, hi=0.5)],
            (0, 1),
            op="prelu",
        ),
        CompositeInfo(
            "prelu_shared",
            lambda x, w: F.prelu(x, w),
            lambda x, w: R.prelu(x, w, 1),
            lambda r: [_smooth(r, -2, 2, 20, 0.0)[0].reshape(5, 4), _u(r, 1, lo=0.1, hi=0.5)],
            (0, 1),
            op="prelu",
        ),
        CompositeInfo(
            "hardswish",
            lambda x: F.hardswish(x),
            R.hardswish,
            lambda r: _edge(r, -5, 5, 20, -3.0, 3.0, 0.0, NAN, INF),
            (0,),
            grad_inputs=lambda r: _smooth(r, -5, 5, 20, -3.0, 3.0),
        ),
        CompositeInfo(
            "hardsigmoid",
            lambda x: F.hardsigmoid(x, 0.25, 0.375),
            lambda x: R.hardsigmoid(x, 0.25, 0.375),
            lambda r: _edge(r, -4, 4, 20, -1.5, 2.5, 0.0, NAN, INF, -INF),
            (0,),
            grad_inputs=lambda r: _smooth(r, -4, 4, 20, -1.5, 2.5),
        ),
        CompositeInfo(
            "hardsigmoid_default",
            lambda x: F.hardsigmoid(x),
            lambda x: R.hardsigmoid(x, 0.1666667, 0.5),
            lambda r: _edge(r, -5, 5, 12, -3.0, 3.0, 0.0),
            op="hardsigmoid",
        ),
        CompositeInfo(
            "mish",
            lambda x: F.mish(x),
            R.mish,
            lambda r: _edge(r, -5, 5, 20, 0.0, 30.0, -30.0, NAN, INF),
            (0,),
            grad_inputs=lambda r: [r.uniform(-5, 5, 20)],
        ),
        CompositeInfo(
            "softsign",
            lambda x: F.softsign(x),
            lambda x: x / (1 + np.abs(x)),
            lambda r: _edge(r, -5, 5, 20, 0.0, -0.0, 1e6, -1e6, NAN),
            (0,),
            grad_inputs=lambda r: [r.uniform(-5, 5, 20)],
        ),
        CompositeInfo(
            "tanhshrink",
            lambda x: F.tanhshrink(x),
            lambda x: x - np.tanh(x),
            lambda r: _edge(r, -4, 4, 20, 0.0, 1e-3, 20.0, -20.0, NAN),
            (0,),
            grad_inputs=lambda r: [r.uniform(-4, 4, 20)],
        ),
        CompositeInfo(
            "hardshrink",
            lambda x: F.hardshrink(x, 0.5),
            lambda x: R.hardshrink(x, 0.5),
            lambda r: _edge(r, -2, 2, 20, 0.5, -0.5, 0.0, INF, -INF),
            (0,),
            grad_inputs=lambda r: _smooth(r, -2, 2, 20, 0.5, -0.5),
        ),
        CompositeInfo(
            "softshrink",
            lambda x: F.softshrink(x, 0.25),
            lambda x: R.softshrink(x, 0.25),
            lambda r: _edge(r, -2, 2, 20, 0.25, -0.25, 0.0, INF, -INF),
            (0,),
            grad_inputs=lambda r: _smooth(r, -2, 2, 20, 0.25, -0.25),
        ),
        CompositeInfo(
            "thresholded_relu",
            lambda x: F.thresholded_relu(x, 0.75, -2.0),
            lambda x: R.thresholded_relu(x, 0.75, -2.0),
            lambda r: _edge(r, -2, 3, 20, 0.75, 0.0, INF, -INF),
            (0,),
            grad_inputs=lambda r: _smooth(r, -2, 3, 20, 0.75),
        ),
        CompositeInfo(
            "log_sigmoid",
            lambda x: F.log_sigmoid(x),
            R.log_sigmoid,
            lambda r: _edge(r, -8, 8, 20, 0.0, 40.0, -40.0, 100.0, -100.0, NAN, INF, -INF),
            (0,),
            grad_inputs=lambda r: [r.uniform(-8, 8, 20)],
        ),
    ]


def special_entries(fw: Any) -> list[CompositeInfo]:
    """atan (each range-reduction branch and its boundaries), atan2 (every quadrant and both
    axes), lgamma/digamma (both sides of the reflection at 0.5, negative non-integers, the
    signed zeros), erfinv (towards +-1, +-1 exactly, NaN outside)."""
    t3p8 = 2.414213562373095
    atan2_pts = [
        (1, 0),
        (-1, 0),
        (0, 1),
        (0, -1),
        (1, -1),
        (-1, -1),
        (1, 1),
        (-1, 1),
        (0, 0),
        (3, -0.5),
        (-3, -0.5),
        (0.25, 4),
    ]
    return [
        CompositeInfo(
            "atan",
            lambda x: fw.atan(x),
            np.arctan,
            lambda r: _edge(
                r,
                -6,
                6,
                16,
                0.0,
                -0.0,
                0.66,
                -0.66,
                0.67,
                t3p8,
                -t3p8,
                2.5,
                1.0,
                -1.0,
                1e10,
                -1e10,
                INF,
                -INF,
                NAN,
            ),
            (0,),
            grad_inputs=lambda r: [r.uniform(-6, 6, 24)],
        ),
        CompositeInfo(
            "atan2",
            lambda y, x: fw.atan2(y, x),
            np.arctan2,
            lambda r: [
                np.concatenate([r.uniform(-3, 3, 10), [p[0] for p in atan2_pts]]),
                np.concatenate([r.uniform(-3, 3, 10), [p[1] for p in atan2_pts]]),
            ],
            (0, 1),
            grad_inputs=lambda r: _polar(r, 20),
        ),
        CompositeInfo(
            "lgamma",
            lambda x: fw.lgamma(x),
            R.lgamma,
            lambda r: _edge(
                r,
                0.1,
                8,
                12,
                0.5,
                0.4999,
                1.0,
                2.0,
                1e-3,
                30.0,
                200.0,
                -0.5,
                -2.5,
                -3.7,
                -1.2,
                0.0,
                -0.0,
                NAN,
            ),
            (0,),
            grad_inputs=_gamma_args,
        ),
        CompositeInfo(
            "digamma",
            lambda x: fw.digamma(x),
            R.digamma,
            lambda r: _edge(
                r, 0.1, 8, 12, 0.5, 0.4999, 1.0, 2.0, 1e-2, 30.0, 1e4, -0.5, -2.5, -3.7, -1.2, 0.0, -0.0, NAN
            ),
            (0,),
            grad_inputs=_gamma_args,
        ),
        CompositeInfo(
            "log1p",
            lambda x: fw.log1p(x),
            np.log1p,
            lambda r: _edge(r, -0.9, 4, 12, 0.0, -0.0, 1e-10, -1e-10, 1e-4, -0.5, 1e30, -1.0, INF, NAN),
            (0,),
            grad_inputs=lambda r: [np.concatenate([r.uniform(-0.9, 4, 12), [1e-6, -1e-6, 0.0]])],
        ),
        CompositeInfo(
            "expm1",
            lambda x: fw.expm1(x),
            np.expm1,
            lambda r: _edge(r, -4, 4, 12, 0.0, -0.0, 1e-10, -1e-10, 1e-4, -30.0, 60.0, 200.0, -INF, INF, NAN),
            (0,),
            grad_inputs=lambda r: [np.concatenate([r.uniform(-4, 4, 12), [1e-6, -1e-6, 0.0]])],
        ),
        CompositeInfo(
            "erfinv",
            lambda x: fw.erfinv(x),
            R.erfinv,
            lambda r: _edge(
                r, -0.95, 0.95, 16, 0.0, -0.0, 0.5, -0.9, 0.99, 0.999, -0.9995, 1.0, -1.0, 1.5, -2.0, NAN
            ),
            (0,),
            grad_inputs=lambda r: [r.uniform(-0.95, 0.95, 20)],
        ),
    ]
