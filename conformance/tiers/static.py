"""Tier ``static``: every primitive sample of the op database and every composite sample,
traced into a program (``framework.jit``'s tracer, as ``fw.jit.to_static`` does), optimised by
the default pass pipeline (``framework.ir.passes``, level O2) and run by the program executor
(``framework.ir.Executor``) on the device under test, must match the numpy reference (as in
the primitives and composites tiers) and equal eager mode on that device.

Primitives must match eager bit for bit (the executor calls the same kernels; NaN matches any
NaN, the sign of a zero counts), once from fresh inputs and once from inputs at an offset.
Composites are compared within the composites tier's tolerance: eager mode may run a
generated kernel where the program holds the decomposition. A dtype the plugin does not
register is "not supported", as in the primitives tier.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..cases import Case, Target
from ..checks import CheckFailure, assert_close, put, run_primitive
from ..opdb import OPDB, dtype_of, tolerance
from . import composites as C
from .primitives import OFFSET_ELEMS, _device_dtypes, assert_zero_signs, check_reference


def traced(fn: Callable[..., Any], ins: Sequence[Any], device: str) -> tuple[Any, list[str], Any]:
    """``fn(*ins)`` traced into a program and optimised: (executor, op names, pass stats)."""
    import framework as fw
    from framework import ir
    from framework.ir import passes
    from framework.jit.trace import trace

    dev = fw.testing.parse_device(device)
    specs = [(tuple(t.shape), t.dtype) for t in ins]
    with fw.no_grad():
        tr, _ = trace(fn, specs, dev, {}, (), "sample")
    ir.verify(tr.program)
    stats = passes.run_pipeline(tr.program, passes.DEFAULT_LEVEL, tr.constants, dev)
    ir.verify(tr.program)
    ex = ir.Executor(tr.program, dev, tr.param_tensors, tr.constants)
    return ex, [op.name for op in tr.program.block.ops], stats


def _near(info: Any, sample: Any, got: np.ndarray, _want: np.ndarray, where: str) -> None:
    """``got`` within the reference's tolerance (where eager and program may differ in order)."""
    check_reference(info, sample, got, where)


def _equal(got: np.ndarray, want: np.ndarray, where: str) -> None:
    if got.shape != want.shape or got.dtype != want.dtype:
        raise CheckFailure(
            f"{where}: the program gives {got.dtype}{list(got.shape)}, eager {want.dtype}{list(want.shape)}",
            f"{want.dtype}{list(want.shape)}",
            f"{got.dtype}{list(got.shape)}",
        )
    assert_close(got, want, 0, 0, where)
    assert_zero_signs(got, want, where)


def primitive_case(name: str, dtype: str, device: str, seed: int = 0) -> dict[str, Any]:
    from framework.testing import kernel_takes, run_op

    info = OPDB[name]
    d = dtype_of(dtype)
    rng = np.random.default_rng(seed)
    held = _device_dtypes(device)
    n = replayed = 0
    programs: dict[str, int] = {}
    for sample in info.samples(d, rng):
        attrs = dict(sample.attrs)
        if name == "cast" and held and np.dtype(attrs["dtype"]).name not in held:
            continue  # the device cannot hold the target dtype (its properties say so)
        if not all(kernel_takes(name, a, device, d) for a in attrs):
            continue  # an attribute newer than the plugin's contract: the core never passes it
        where = f"{name}[{d.name}] {sample.label} as a program"
        ins = [put(a, device) for a in sample.ins]
        want = run_primitive(name, ins, attrs, device)[0].numpy()
        if name == "arange":  # its length is a value, not a shape rule: traced as a baked constant
            fn = lambda a=attrs: run_primitive("arange", [], a, device)[0]  # noqa: E731
        else:
            fn = lambda *xs, a=attrs: run_op(name, list(xs), a)[0]  # noqa: E731
        try:
            ex, ops, _ = traced(fn, ins, device)
        except Exception as exc:
            raise CheckFailure(
                f"{where}: tracing or optimising failed: {type(exc).__name__}: {exc}",
                "a program",
                f"{type(exc).__name__}",
            ) from exc
        key = " ".join(o.partition(".")[2] for o in ops if o != "builtin.return")
        programs[key] = programs.get(key, 0) + 1
        got = ex(*ins)[0].numpy()
        check_reference(info, sample, got, where)  # right, not only the same as eager
        # NOTE: a sample with a magnitude accumulates (scatter_add with duplicate indices): a
        # device may add in any order (atomics), so program and eager agree within the
        # reference's tolerance, not bit for bit
        same = _equal if sample.magnitude is None else functools.partial(_near, info, sample)
        same(got, want, where)
        n += 1
        if sample.ins and any(a.size for a in sample.ins):
            shifted = [put(a, device, OFFSET_ELEMS) for a in sample.ins]
            got = ex(*shifted)[0].numpy()
            how = ", a graph replay" if ex.memory_stats({})["graph"] else ""  # from the second run on
            same(got, want, where + f" (inputs at a {OFFSET_ELEMS}-element offset{how})")
            n += 1
            replayed += _check_replay(ex, sample.ins, want, device, where)
    return {"samples": n, "programs": programs, "replayed": replayed}


def _check_replay(ex: Any, samples: Sequence[np.ndarray], want: np.ndarray, device: str, where: str) -> int:
    """Where the runtime offers graph capture the executor replays a program from its second
    run on: a replay (of new input tensors, at an offset) must equal eager too, and a capture
    must not fail. Returns 1 when a replay was checked."""
    if not ex.memory_stats({})["graph_offered"]:
        return 0
    got = ex(*[put(a, device, OFFSET_ELEMS) for a in samples])[0].numpy()
    stats = ex.memory_stats({})
    if not stats["graph"]:
        off = stats["graph_off"] or "?"
        if not off.startswith("capture failed"):  # not tried: eager steps, or the runtime declined
            return 0
        raise CheckFailure(
            f"{where}: the runtime offers graph capture (supports_graphs), but capturing the program failed: {off}",
            "a captured graph",
            off,
        )
    _equal(got, want, where + " (a graph replay)")
    return 1


def composite_case(info: C.CompositeInfo, dtype: str, device: str) -> dict[str, Any]:
    import framework as fw

    xs = info.inputs(np.random.default_rng(0))
    ins = [put(a, device) for a in C._dtype_inputs(xs, dtype)]
    with fw.no_grad():
        want = info.run(*ins).numpy()
    where = f"{info.name}[{dtype}] as a program"
    try:
        ex, ops, stats = traced(info.run, ins, device)
    except Exception as exc:
        raise CheckFailure(
            f"{where}: tracing or optimising failed: {type(exc).__name__}: {exc}",
            "a program",
            f"{type(exc).__name__}",
        ) from exc
    got = ex(*ins)[0].numpy()
    C.check_reference(info, dtype, xs, got, where)  # right, not only the same as eager
    if got.shape != want.shape or got.dtype != want.dtype:
        _equal(got, want, where)
    if got.dtype.kind == "f":
        tol = tolerance(got.dtype, info.tol_scale)
        assert_close(got, want, tol.rtol, tol.atol, where)
    else:
        _equal(got, want, where)
    return {
        "ops": len(ops) - 1,
        "removed_by_passes": sum(s.removed for s in stats),
        "bitwise": bool(np.array_equal(got, want, equal_nan=got.dtype.kind == "f")),
    }


def cases(target: Target) -> list[Case]:
    out = []
    for name, info in OPDB.items():
        for dt in info.dtypes:
            cid = f"static/{name}[{dt}]"
            if target.registers(name, dt):
                out.append(
                    Case(
                        cid,
                        "static",
                        (lambda n=name, d=dt: primitive_case(n, d, target.device)),
                        op=name,
                        dtype=dt,
                    )
                )
            else:
                out.append(
                    Case(
                        cid,
                        "static",
                        None,
                        op=name,
                        dtype=dt,
                        preset="not_supported",
                        reason=f"the '{target.plugin}' plugin registers no {name} kernel for {dt}",
                    )
                )
    f64 = target.registers("matmul", "float64") and target.registers("exp", "float64")
    for cinfo in C.entries():
        why = C.unsupported(cinfo, target)
        if why:
            out.append(
                Case(
                    f"static/composite/{cinfo.name}",
                    "static",
                    None,
                    op=cinfo.name,
                    preset="not_supported",
                    reason=why,
                )
            )
            continue
        if cinfo.untraced:
            out.append(
                Case(
                    f"static/composite/{cinfo.name}",
                    "static",
                    None,
                    op=cinfo.name,
                    preset="skipped",
                    reason=cinfo.untraced,
                )
            )
            continue
        for dt in ("float32", "float64") if f64 else ("float32",):
            out.append(
                Case(
                    f"static/composite/{cinfo.name}[{dt}]",
                    "static",
                    (lambda ci=cinfo, d=dt: composite_case(ci, d, target.device)),
                    op=cinfo.name,
                    dtype=dt,
                )
            )
    return out
