"""Tier ``primitives``: every primitive x every dtype the contract defines it for.

A dtype the plugin registers is run on every sample of the op database, once from fresh
tensors and once from offset views; a dtype it does not register is "not supported" (the CPU
fallback would hide it, so it is not run here).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from framework.testing import kernel_takes

from ..cases import Case, Target
from ..checks import CheckFailure, assert_close, put, run_kernel_guarded, run_primitive, unwritten
from ..opdb import OPDB, OpInfo, Tolerance, dtype_of, tolerance

#: Byte-offset variant: inputs start this many elements into a larger buffer.
OFFSET_ELEMS = 3


def _reference(info: OpInfo, ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    return np.asarray(info.ref(*ins, **attrs))


def check_sample(info: OpInfo, d: np.dtype, sample: Any, device: str, offset: int) -> None:
    attrs = dict(sample.attrs)
    ins = [put(a, device, offset) for a in sample.ins]
    if offset:  # inputs at an offset, outputs between guard bytes: out-of-bounds access shows
        outs = run_kernel_guarded(info.name, ins, attrs, device)
    else:
        outs = run_primitive(info.name, ins, attrs, device)
    where = f"{info.name}[{d.name}] {sample.label}" + (
        f" (inputs at a {offset}-element offset)" if offset else ""
    )
    check_reference(info, sample, outs[0].numpy(), where, poisoned=not offset)
    # the inputs must be left as they were
    for t, a in zip(ins, sample.ins):
        assert_close(t.numpy(), a, 0, 0, f"{where}: an input was modified by the kernel")


def check_reference(info: OpInfo, sample: Any, got: np.ndarray, where: str, poisoned: bool = False) -> None:
    """``got`` (the op on ``sample``, by any path: a kernel, a program) against the numpy
    reference, within the op's tolerance (bit for bit where it is exact); with ``poisoned``,
    no element may still hold the poison the core wrote before the kernel ran."""
    attrs = dict(sample.attrs)
    want = _reference(info, sample.ins, attrs)
    exact = want.dtype.name in info.exact
    tol = Tolerance(0.0, 0.0) if exact else sample.tol or tolerance(want.dtype, info.tol_scale)
    try:
        if poisoned:  # the runner poisons outputs before each kernel (see poison_outputs)
            assert_written(got, want, where)
        assert_close(got, want, tol.rtol, tol.atol, where, None if exact or sample.tol else sample.magnitude)
        if exact:
            assert_zero_signs(got, want, where)
    except CheckFailure as exc:
        if sample.ins:
            exc.message += "; inputs: " + "; ".join(
                np.array2string(a, threshold=12, edgeitems=3, separator=", ") for a in sample.ins
            )
            exc.args = (exc.message,)
        raise


def assert_written(got: np.ndarray, want: np.ndarray, where: str) -> None:
    """Every output element was written: none still holds the poison the core wrote before
    the kernel ran (where the expected value is not those same bytes)."""
    bad = unwritten(got, want) if got.shape == want.shape else np.zeros(0, bool)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise CheckFailure(
            f"{where}: {int(bad.sum())} of {bad.size} output elements were never written (they still hold "
            f"the poison bytes the core wrote before the kernel ran); first at index {first} of shape "
            f"{got.shape}: a kernel must write every element of its outputs (check its launch covers them all)",
            "every element written",
            f"{int(bad.sum())} unwritten, first at {first}",
        )


def assert_zero_signs(got: np.ndarray, want: np.ndarray, where: str) -> None:
    """Every zero has the expected sign (values are already known to be equal)."""
    floating = want.dtype.kind == "f" or want.dtype.name == "bfloat16"
    if got.size == 0 or not floating:
        return
    w, g = want.astype(np.float64), got.astype(np.float64)
    wrong = (w == 0) & (np.signbit(w) != np.signbit(g))
    if wrong.any():
        first = tuple(int(i) for i in np.argwhere(wrong)[0]) if want.ndim else ()
        raise CheckFailure(
            f"{where}: {int(wrong.sum())} of {int((w == 0).sum())} zeros have the wrong sign; first at index {first}: "
            f"got {g[first]!r}, expected {w[first]!r} (the sign of zero is part of the value: neg(+0.0) is -0.0, "
            f"abs(-0.0) is +0.0, and moving data copies its bits)",
            w[first],
            g[first],
        )


def check_index_out_of_range(info: OpInfo, d: np.dtype, device: str) -> None:
    """An index outside the axis must raise OpArgumentError (the contract's rule for bad input
    a kernel detects), never read or write out of bounds, never raise a foreign error."""
    import framework as fw

    x = put(np.zeros((5, 2), d), device)
    cases = [(bad, {"axis": 0}) for bad in (5, -1, 1 << 40)]
    if info.name == "gather" and kernel_takes("gather", "wrap", device, d):
        # with wrap (contract 1.2), [-5, 5) is allowed: -6 and 5 are out
        cases += [(bad, {"axis": 0, "wrap": True}) for bad in (5, -6, -(1 << 40))]
    for bad, attrs in cases:
        idx = put(np.array([0, bad], np.int64), device)
        ins = [x, idx] + ([put(np.ones((2, 2), d), device)] if info.name != "gather" else [])
        try:
            out = run_primitive(info.name, ins, attrs, device)
            out[0].numpy()
        except fw.OpArgumentError:
            continue
        except Exception as exc:  # noqa: BLE001
            raise CheckFailure(
                f"{info.name}[{d.name}]: an out-of-range index {bad} (axis of size 5) raised "
                f"{type(exc).__name__}, not OpArgumentError; raise adapter_api.OpArgumentError "
                f"naming the index and the range",
                "OpArgumentError",
                f"{type(exc).__name__}: {exc}",
            ) from exc
        raise CheckFailure(
            f"{info.name}[{d.name}]: an out-of-range index ({bad}, axis of size 5) did not raise; the "
            f"contract says it must raise OpArgumentError, never touch memory out of bounds",
            "OpArgumentError",
            "no error",
        )


def _device_dtypes(device: str) -> set[str]:
    import framework as fw

    return set(fw.get_device_properties(device).dtypes or ())


def run_case(name: str, dtype: str, device: str, seed: int = 0) -> dict[str, Any]:
    info = OPDB[name]
    d = dtype_of(dtype)
    rng = np.random.default_rng(seed)
    n = 0
    held = _device_dtypes(device)
    for sample in info.samples(d, rng):
        target = sample.attrs.get("dtype")
        if name == "cast" and held and np.dtype(target).name not in held:
            continue  # the device cannot hold the target dtype (its properties say so)
        if not all(kernel_takes(name, a, device, d) for a in sample.attrs):
            continue  # an attribute newer than the plugin's contract: the core never passes it
        check_sample(info, d, sample, device, 0)
        n += 1
        if not sample.ins or any(a.size for a in sample.ins):
            check_sample(info, d, sample, device, OFFSET_ELEMS)
            n += 1
    if "index_out_of_range" in info.edge_checks:
        check_index_out_of_range(info, d, device)
    return {"samples": n}


def cases(target: Target) -> list[Case]:
    out = []
    for name, info in OPDB.items():
        for dt in info.dtypes:
            cid = f"primitives/{name}[{dt}]"
            if target.registers(name, dt):
                out.append(
                    Case(
                        cid,
                        "primitives",
                        (lambda n=name, d=dt: run_case(n, d, target.device)),
                        op=name,
                        dtype=dt,
                    )
                )
            else:
                out.append(
                    Case(
                        cid,
                        "primitives",
                        None,
                        op=name,
                        dtype=dt,
                        preset="not_supported",
                        reason=f"the '{target.plugin}' plugin registers no {name} kernel for {dt}",
                    )
                )
        for dt in sorted(target.kernels.get(name, set()) - set(info.dtypes)):
            out.append(
                Case(
                    f"primitives/{name}[{dt}]",
                    "primitives",
                    None,
                    op=name,
                    dtype=dt,
                    preset="skipped",
                    reason=f"registered, but the contract does not define {name} for {dt}, so nothing checks it",
                )
            )
    return out
