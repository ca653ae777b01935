"""Tier ``composites``: every op the core defines by its decomposition into primitives (softmax,
norms, activations, special functions, convolutions, pooling, unfold, interpolation, attention,
losses, ...), through the public API.

Each runs whichever path the core picks on the device (a fused kernel the plugin registered, a
generated kernel through compile access, or the decomposition); the path taken is recorded, and
an entry whose run did not go through the composite it names fails. Forward values are compared
with the independent numpy references of :mod:`conformance.composite_reference`; gradients with
central finite differences of those references in float64. Forward samples sit on the ops'
edges (thresholds and kinks exactly, ties, zeros of both signs, NaN and infinities where the op
defines the result); gradient samples, where the forward ones sit on kinks, stay a little away
from them, where finite differences mean something. ``tests/test_op_completeness.py`` fails for
a registered composite listed here by no entry, or by none with a gradient check.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from framework.testing import gradient_tolerance, op_names, op_path_stats, tolerance

from ..cases import Case, Target
from ..checks import CheckFailure, assert_close, finite_difference, put
from .composite_db import CompositeInfo, entries


def unsupported(info: CompositeInfo, target: Target) -> str:
    """Why ``target`` cannot run ``info`` natively ("" when it can)."""
    for op, dt in info.needs:
        if not target.registers(op, dt):
            return f"the '{target.plugin}' plugin registers no {op} kernel for {dt} ({info.name} needs it)"
    return ""


def listed_ops() -> set[str]:
    """The registered composites (and other ops) the entries of this tier exercise."""
    return {info.op for info in entries()}


def gradient_checked_ops() -> set[str]:
    """The ops at least one entry checks a gradient of."""
    return {info.op for info in entries() if info.grad}


def _dtype_inputs(arrays: list[np.ndarray], dtype: str) -> list[np.ndarray]:
    return [a.astype(dtype) if a.dtype == np.float64 else a for a in arrays]


def _path_count(op: str, device_type: str) -> int:
    return sum(op_path_stats().get(f"{op}@{device_type}", {}).values())


def check_reference(
    info: CompositeInfo, dtype: str, xs: list[np.ndarray], got: np.ndarray, where: str
) -> None:
    """``got`` (the composite on the inputs ``xs`` in ``dtype``, by any path) against its
    float64 reference, within the entry's tolerance (integer results exactly)."""
    ins = _dtype_inputs(xs, dtype)
    with np.errstate(all="ignore"):
        want = np.asarray(info.ref(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in ins]))
    if got.dtype.kind == "f":
        tol = tolerance(got.dtype, info.tol_scale)
        assert_close(got, want.astype(got.dtype), tol.rtol, tol.atol, where)
    else:
        assert_close(got, want.astype(got.dtype), 0, 0, where)


def forward(info: CompositeInfo, dtype: str, device: str) -> dict[str, Any]:
    import framework as fw

    dev_type = device.split(":")[0]
    composite = info.op in op_names("composite")
    before = _path_count(info.op, dev_type)
    rng = np.random.default_rng(0)
    xs = info.inputs(rng)
    ins = _dtype_inputs(xs, dtype)
    got = info.run(*[put(a, device) for a in ins])
    check_reference(info, dtype, xs, got.numpy(), f"{info.name} {dtype}")
    if composite and _path_count(info.op, dev_type) == before:
        raise CheckFailure(
            f"{info.name}: the run never went through the composite '{info.op}' it is listed for; "
            "fix the entry's run (or its op)",
            f"a call of '{info.op}'",
            "none",
        )
    return {"paths": {k: v for k, v in fw.op_path_stats().items() if k.endswith("@" + dev_type)}}


def gradient(info: CompositeInfo, dtype: str, device: str) -> None:
    import framework as fw

    rng = np.random.default_rng(0)
    xs = (info.grad_inputs or info.inputs)(rng)
    ins = [put(a, device) for a in _dtype_inputs(xs, dtype)]
    for i in info.grad:
        ins[i].stop_gradient = False
    out = info.run(*ins)
    w = np.random.default_rng(1).standard_normal(out.shape)
    grads = fw.grad(
        [out], [ins[i] for i in info.grad], grad_outputs=[put(w.astype(dtype), device)], allow_unused=True
    )
    tol = gradient_tolerance(dtype, 1.5)  # decompositions round more than one primitive
    for i, g in zip(info.grad, grads):
        num = finite_difference(info.ref, xs, i, w)
        if g is None:
            raise CheckFailure(f"{info.name}: no gradient for input {i}", num, None)
        assert_close(
            g.numpy().astype(np.float64),
            num,
            tol.rtol,
            tol.atol,
            f"d/d(input {i}) of sum({info.name}(...) * w), {dtype}",
        )


def cases(target: Target) -> list[Case]:
    out = []
    f64 = target.registers("matmul", "float64") and target.registers("exp", "float64")
    for info in entries():
        why = unsupported(info, target)
        if why:
            out.append(
                Case(
                    f"composites/{info.name}",
                    "composites",
                    None,
                    op=info.name,
                    preset="not_supported",
                    reason=why,
                )
            )
            continue
        for dt in ("float32", "float64"):
            out.append(
                Case(
                    f"composites/{info.name}[{dt}]",
                    "composites",
                    (lambda info=info, dt=dt: forward(info, dt, target.device)),
                    op=info.name,
                    dtype=dt,
                )
            )
        if info.grad:
            gdt = "float64" if f64 else "float32"
            out.append(
                Case(
                    f"composites/{info.name}[{gdt}]:grad",
                    "composites",
                    (lambda info=info, gdt=gdt: gradient(info, gdt, target.device)),
                    op=f"{info.name} (grad)",
                    dtype=gdt,
                )
            )
    return out
