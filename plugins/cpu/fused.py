"""A hand-written fused RMSNorm for the CPU plugin: the baseline generated kernels are
measured against (``benchmarks/rmsnorm.py``).

Not registered by default, so eager mode uses the generated kernel; call
:func:`register_fused` with the registry to make it the ``rms_norm`` fused kernel.
It is numpy written for as few passes over memory as numpy allows: one ``einsum`` for the
sums of squares (no temporary), one multiply by the per-row scale into the output, one
in-place multiply by the weight.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def rms_norm_numpy(x: np.ndarray, weight: np.ndarray | None, epsilon: float, out: np.ndarray) -> None:
    """``out = x * rsqrt(mean(x*x, -1) + epsilon) [* weight]`` over the last axis."""
    n = x.shape[-1]
    x2 = x.reshape(-1, n)
    o2 = out.reshape(-1, n)
    ms = np.einsum("ij,ij->i", x2, x2)
    ms *= 1.0 / n
    ms += epsilon
    np.sqrt(ms, out=ms)
    np.divide(1.0, ms, out=ms)
    np.multiply(x2, ms[:, None], out=o2)
    if weight is not None:
        o2 *= weight


def _kernel(ctx: Any, outs: list[np.ndarray], ins: list[np.ndarray], epsilon: float) -> None:
    rms_norm_numpy(ins[0], ins[1] if len(ins) > 1 else None, epsilon, outs[0])


def register_fused(registry: Any) -> None:
    """Register the hand-fused ``rms_norm`` kernel (float32, float64) on ``cpu``."""
    registry.add_kernel("rms_norm", "cpu", ("float32", "float64"), _kernel)
