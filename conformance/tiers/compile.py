"""Tier ``compile``: compile access, through the small API of ``framework.compiler``.

A hand-written kernel in the plugin's language is compiled, cached and launched; a broken
source must raise ``CompileError`` with the source around the error; composites that form a
fusion group are generated, built through the plugin and compared with numpy references.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import composite_reference as C
from ..cases import Case, Target
from ..checks import CheckFailure, assert_close, put

_erf = np.vectorize(math.erf, otypes=[np.float64])


def unavailable(target: Target) -> str | None:
    try:
        import framework.compiler  # noqa: F401
    except ImportError as exc:
        return f"framework.compiler cannot be imported ({exc})"
    if not target.has_compiler:
        return f"the '{target.plugin}' plugin registers no compiler (no compile access)"
    return None


def trivial_kernel(device: str) -> None:
    from framework import compiler

    rng = np.random.default_rng(0)
    for n in (1, 7, 1000, 65537):
        x = rng.standard_normal(n).astype(np.float32)
        y = compiler.run_trivial_kernel(put(x, device), 3.0)
        assert_close(
            y.numpy(),
            (np.float32(3.0) * x + np.float32(1.0)).astype(np.float32),
            1e-6,
            1e-6,
            f"compiled y = 3 x + 1 over {n} elements",
        )


def program_cache(device: str) -> None:
    from framework import compiler
    from framework.testing import parse_device

    comp = compiler.compiler_for(parse_device(device))
    src = compiler.trivial_kernel(comp.language, "oarlock_conformance_cache")
    compiler.compile_source(src, "oarlock_conformance_cache", device)
    before = compiler.cache_stats()
    compiler.compile_source(src, "oarlock_conformance_cache", device)
    after = compiler.cache_stats()
    if after["compiles"] != before["compiles"] or after["memory_hits"] <= before["memory_hits"]:
        raise CheckFailure(
            "compiling the same source twice compiled it again instead of hitting the cache",
            "one more memory hit, no compile",
            f"{before} -> {after}",
        )


def compile_error(device: str) -> None:
    import framework as fw
    from framework import compiler

    bad = "this is not a kernel in any language {\n  oops(\n}\n"
    try:
        compiler.compile_source(bad, "oarlock_conformance_broken", device)
    except fw.OarlockError as exc:
        if type(exc).__name__ != "CompileError":
            raise CheckFailure(
                f"a broken source raised {type(exc).__name__}, not CompileError", "CompileError", str(exc)
            ) from exc
        if "oops" not in str(exc):
            raise CheckFailure(
                "the CompileError does not show the source around the error", "source excerpt", str(exc)[:400]
            ) from exc
    else:
        raise CheckFailure("compiling a broken source did not raise", "CompileError", "no error")


#: composite -> (inputs, attrs, numpy reference): fusion groups the compiler generates
GENERATED: dict[str, tuple[Any, dict[str, Any], Any]] = {
    "softmax": (lambda r: [r.uniform(-3, 3, (5, 33))], {"axis": 1}, lambda x: C.softmax(x, -1)),
    "log_softmax": (lambda r: [r.uniform(-3, 3, (5, 33))], {"axis": 1}, lambda x: C.log_softmax(x, -1)),
    "rms_norm": (
        lambda r: [r.uniform(-2, 2, (4, 40)), r.uniform(-2, 2, (40,))],
        {"epsilon": 1e-6},
        C.rms_norm,
    ),
    "layer_norm": (
        lambda r: [r.uniform(-2, 2, (4, 40)), r.uniform(-2, 2, (40,)), r.uniform(-1, 1, (40,))],
        {"epsilon": 1e-5, "has_weight": True, "has_bias": True},
        C.layer_norm,
    ),
    "gelu": (
        lambda r: [r.uniform(-4, 4, (3, 50))],
        {"approximate": False},
        lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    ),
    "silu": (lambda r: [r.uniform(-6, 6, (3, 50))], {}, lambda x: x * C.sigmoid(x)),
    "sigmoid": (lambda r: [r.uniform(-8, 8, (3, 50))], {}, C.sigmoid),
}


def generated(op: str, device: str) -> dict[str, Any]:
    from framework import compiler

    make, attrs, ref = GENERATED[op]
    xs = make(np.random.default_rng(0))
    ins = [put(a.astype(np.float32), device) for a in xs]
    try:
        outs, decomposed = compiler.run_generated(op, *ins, **attrs)
    except compiler.NotFusible as exc:
        return {"skip": f"{op} is not a fusion group on this device: {exc}"}
    want = np.asarray(ref(*[a.astype(np.float32).astype(np.float64) for a in xs])).astype(np.float32)
    assert_close(outs[0].numpy(), want, 1e-4, 1e-5, f"generated kernel of {op} against numpy")
    assert_close(
        outs[0].numpy(),
        decomposed[0].numpy(),
        1e-4,
        1e-5,
        f"generated kernel of {op} against its decomposition",
    )
    return {"source_lines": len(compiler.generated_source(op, *ins, **attrs).splitlines())}


def cases(target: Target) -> list[Case]:
    if unavailable(target):
        return []
    out = [
        Case(f"compile/{fn.__name__}", "compile", (lambda fn=fn: fn(target.device)))
        for fn in (trivial_kernel, program_cache, compile_error)
    ]
    out += [
        Case(
            f"compile/generated[{op}]",
            "compile",
            (lambda op=op: generated(op, target.device)),
            op=op,
            dtype="float32",
        )
        for op in GENERATED
    ]
    return out
