"""fw.profiler: a composite run by a kernel the compiler generated for it (eager rms_norm,
forward and backward) gets a device span of that kernel, inside the composite's host span."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework import profiler
from framework._src.ops import base
from framework.compiler import eager


def _generated(op: str) -> int:
    return base.PATHS[(op, "cpu")]["generated"]


def test_generated_kernel_has_a_device_span_inside_its_composite():
    rng = np.random.default_rng(0)
    x = fw.to_tensor(rng.standard_normal((8, 64)).astype(np.float32), stop_gradient=False)
    w = fw.to_tensor(np.ones(64, np.float32))
    before = _generated("rms_norm")
    back = dict(eager.BACKWARD_PATHS.get("rms_norm@cpu", {"generated": 0}))
    F.rms_norm(x, [64], weight=w).sum().backward()  # builds (and caches) the kernels outside the profile
    if _generated("rms_norm") == before:
        pytest.skip("rms_norm did not run as a generated kernel here (no compiler for cpu)")
    x.clear_gradient()
    with profiler.Profiler(on_trace_ready=lambda p: None) as p:
        y = F.rms_norm(x, [64], weight=w)
        y.sum().backward()
    ev = p.profiler_result.events
    host = [e for e in ev if e.cat == "Composite" and e.name == "rms_norm"]
    kern = [e for e in ev if e.cat == "Kernel" and e.name == f"{eager.PROFILE_NAME}/rms_norm/float32"]
    assert len(host) == 1 and len(kern) == 1
    (h,), (k,) = host, kern
    assert h.start_ns <= k.start_ns <= k.end_ns <= h.end_ns  # the cpu runtime's events: host timestamps
    # the generated backward, when it ran, is named after the gradient
    if eager.BACKWARD_PATHS["rms_norm@cpu"]["generated"] > back.get("generated", 0):
        grads = [
            e for e in ev if e.cat == "Kernel" and e.name == f"{eager.PROFILE_NAME}/rms_norm_grad/float32"
        ]
        assert len(grads) == 1
    # the values are those of the run without the profiler
    ref = x.numpy() / np.sqrt((x.numpy() ** 2).mean(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-5)
