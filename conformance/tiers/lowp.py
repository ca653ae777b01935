"""Tier ``lowp``: the low-precision dtypes of the contract (``adapter_api.primitives.LOWP``):
wide unsigned integers (uint16/32/64) and the float8 storage dtypes.

They are optional: a plugin declares the ones it supports by registering kernels for them.
Each (primitive, dtype) it registers runs here, the integers on the primitive tier's samples
(edges, wrap-around, offsets) against numpy, the float8 casts on every bit pattern and on
float32 values around each float8 value (ties, overflow, NaN, inf) against ml_dtypes; each it
does not register is "not supported", with the reason. ``cast_into[...]`` converts every
contract dtype the plugin holds into the low-precision one, where the plugin holds that one
too (a cast kernel takes it); it is dispatched on the source dtype, so a plugin whose cast
kernels then decline the target runs it on the cpu plugin ("fallback").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api.primitives import FLOAT8, LOWP

from .. import reference as R
from ..cases import Case, Target
from ..checks import CheckFailure, assert_close, put, run_primitive
from .primitives import run_case

#: the contract dtypes each low-precision dtype is cast from and to
_FLOAT_PEERS = ("float32", "float64", "float16", "bfloat16")
_INT_PEERS = ("int8", "int32", "int64", "uint8", "bool", "float32", "float64", "float16")


def _dtype(name: str) -> np.dtype:
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, name, None) or name)


def _every_float8(name: str) -> np.ndarray:
    return np.arange(256, dtype=np.uint8).view(_dtype(name))


def _probes(name: str) -> np.ndarray:
    """float64 values around every float8 value: the values, midpoints (ties to even), just off
    them, past the largest finite value, tiny, infinities and NaN."""
    import ml_dtypes

    v = np.unique(_every_float8(name).astype(np.float64))
    v = v[np.isfinite(v)]
    mid = (v[:-1] + v[1:]) / 2
    big = float(ml_dtypes.finfo(_dtype(name)).max)
    extra = [big * 1.01, big * 1.2, -big * 1.3, 1e-9, -1e-9, np.inf, -np.inf, np.nan]
    return np.concatenate([v, mid, mid * (1 + 2**-20), mid * (1 - 2**-20), extra])


def _same_bits(got: np.ndarray, want: np.ndarray, where: str) -> None:
    """Equal bit for bit (any NaN matches any NaN) and of the same dtype."""
    if got.dtype != want.dtype or got.shape != want.shape:
        raise CheckFailure(f"{where}: dtype or shape", f"{want.dtype}{want.shape}", f"{got.dtype}{got.shape}")

    def nan(a: np.ndarray) -> np.ndarray:
        return np.isnan(a.astype(np.float32)) if a.dtype.kind not in "iub" else np.zeros(a.shape, bool)

    bits = f"u{got.itemsize}"
    bad = (got.view(bits) != want.view(bits)) & ~nan(want) | (nan(got) != nan(want))
    if bad.any():
        i = np.flatnonzero(bad.reshape(-1))[:4]
        raise CheckFailure(
            f"{where}: {int(bad.sum())} of {bad.size} elements differ from the reference (bit for bit)",
            str(want.reshape(-1)[i]),
            str(got.reshape(-1)[i]),
        )


def float8_cast(dtype: str, device: str) -> dict[str, Any]:
    """``cast`` from a float8 dtype: exact to every float dtype, the float -> int rule to integers."""
    x = _every_float8(dtype)
    t = put(x, device)
    n = 0
    for to in (*_FLOAT_PEERS, "int32", "uint8", "bool", *FLOAT8):
        d = _dtype(to)
        got = run_primitive("cast", [t], {"dtype": d}, device)[0].numpy()
        want = R.cast(x.astype(np.float64), d) if d.kind in "iub" else x.astype(d)
        _same_bits(got, want, f"cast {dtype} -> {to} over all 256 values")
        n += 1
    return {"casts": n}


def cast_into(dtype: str, device: str, sources: tuple[str, ...] | None = None) -> dict[str, Any]:
    """``cast`` into a low-precision dtype from the contract's dtypes (float8: from the floats,
    every value around each float8 one; uint: from integers past its range, which wrap, and
    floats, which saturate); ``sources`` limits the dtypes cast from (those the plugin holds)."""
    d = _dtype(dtype)
    n = 0
    if dtype in FLOAT8:
        src = _probes(dtype)
        for frm in _FLOAT_PEERS:
            if sources is not None and frm not in sources:
                continue
            x = src.astype(_dtype(frm))
            got = run_primitive("cast", [put(x, device)], {"dtype": d}, device)[0].numpy()
            _same_bits(got, x.astype(d), f"cast {frm} -> {dtype} (ml_dtypes: nearest even, not saturating)")
            n += 1
        return {"casts": n}
    info = np.iinfo(d)
    for frm in _INT_PEERS:
        if sources is not None and frm not in sources:
            continue
        s = _dtype(frm)
        if s == np.bool_:
            x = np.array([True, False, True])
        elif s.kind == "f":
            x = np.array([0.0, 1.5, -1.5, 2.9, 1e4, -1e4, 7e4, 5e9, np.inf, -np.inf, np.nan], s)
        else:
            si = np.iinfo(s)
            x = np.array(sorted({si.min, si.max, 0, 1, min(si.max, info.max), min(si.max, 300)}), s)
        got = run_primitive("cast", [put(x, device)], {"dtype": d}, device)[0].numpy()
        assert_close(got, R.cast(x, d), 0, 0, f"cast {frm} -> {dtype}")
        n += 1
    return {"casts": n}


def cases(target: Target) -> list[Case]:
    out: list[Case] = []
    for op, dts in LOWP.items():
        for dt in dts:
            cid = f"lowp/{op}[{dt}]"
            if not target.registers(op, dt):
                what = (
                    "float8 kernel: arithmetic on float8 is refused, data movement and casts run on the cpu plugin"
                    if dt in FLOAT8
                    else "wide unsigned integer kernel: the core runs it on the cpu plugin"
                )
                out.append(
                    Case(
                        cid,
                        "lowp",
                        None,
                        op=op,
                        dtype=dt,
                        preset="not_supported",
                        reason=f"the '{target.plugin}' plugin declares no {what} ({op}, {dt})",
                    )
                )
            elif op == "cast" and dt in FLOAT8:
                out.append(Case(cid, "lowp", (lambda d=dt: float8_cast(d, target.device)), op=op, dtype=dt))
            else:
                out.append(
                    Case(cid, "lowp", (lambda o=op, d=dt: run_case(o, d, target.device)), op=op, dtype=dt)
                )
    for dt in LOWP["cast"]:
        cid = f"lowp/cast_into[{dt}]"
        if not target.registers("cast", dt):
            # NOTE: a plugin that does not hold the dtype (no cast kernel takes it) would run every
            # cast into it on the cpu plugin: not supported, not a fallback (strict mode fails those)
            reason = f"the '{target.plugin}' plugin holds no {dt} (no cast kernel takes it): casts into it run on the cpu plugin"
            out.append(Case(cid, "lowp", None, op="cast", dtype=dt, preset="not_supported", reason=reason))
            continue
        peers = _FLOAT_PEERS if dt in FLOAT8 else _INT_PEERS
        sources = tuple(s for s in peers if target.registers("cast", s))
        out.append(
            Case(cid, "lowp", (lambda d=dt, s=sources: cast_into(d, target.device, s)), op="cast", dtype=dt)
        )
    return out
