"""Tier ``random``: the Philox-4x32-10 stream, bit for bit.

The reference generator is first checked against the published Random123 vectors, then the
device's ``philox_uniform`` kernel and the public samplers built on it are compared with it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import reference as R
from ..cases import Case, Target
from ..checks import CheckFailure, assert_close, run_primitive

SEEDS = [(0, 0), (1, 0), (42, 12345), (2**32 - 1, 2**32 - 3), (2**40 + 7, 2**33 + 5), (2**64 - 1, 0)]


def reference_vectors(device: str) -> None:
    bad = R.philox_self_test()
    if bad:
        raise CheckFailure("the reference Philox does not match the Random123 vectors: " + "; ".join(bad))


def philox_kernel(device: str, dtype: str) -> dict[str, Any]:
    d = np.dtype(dtype)
    n = 0
    for seed, off in SEEDS:
        for shape in [(1,), (3,), (4,), (5,), (1027,), (2, 3, 7), (), (0,)]:
            got = run_primitive(
                "philox_uniform", [], {"shape": shape, "seed": seed, "offset": off, "dtype": d}, device
            )[0].numpy()
            want = R.philox_uniform(shape, seed, off, d)
            assert_close(
                got, want, 0, 0, f"philox_uniform {dtype} shape {shape} seed {seed} offset {off} (bitwise)"
            )
            n += 1
    big = (1 << 20) + 3
    got = run_primitive("philox_uniform", [], {"shape": (big,), "seed": 7, "offset": 99, "dtype": d}, device)[
        0
    ].numpy()
    assert_close(
        got, R.philox_uniform((big,), 7, 99, d), 0, 0, f"philox_uniform {dtype}, {big} values (bitwise)"
    )
    if got.min() < 0.0 or got.max() >= 1.0:
        raise CheckFailure("philox_uniform left [0, 1)", "[0, 1)", f"[{got.min()}, {got.max()}]")
    return {"calls": n + 1}


def rand_stream(device: str) -> None:
    """fw.rand after fw.seed: each call consumes ceil(n / 4) counters, on every device alike."""
    import framework as fw

    fw.seed(2024)
    off = 0
    for shape in [(5,), (3, 4), (1,), (1000,), ()]:
        n = math.prod(shape)
        got = fw.rand(shape, dtype="float32", device=device).numpy()
        want = R.philox_uniform(shape, 2024, off, np.float32)
        assert_close(got, want, 0, 0, f"fw.rand{shape} after fw.seed(2024) (bitwise)")
        off += (n + 3) // 4


def same_on_cpu(device: str) -> None:
    import framework as fw

    for dtype in ("float32", "float64"):
        fw.seed(11)
        a = fw.rand((257,), dtype=dtype, device=device).numpy()
        fw.seed(11)
        b = fw.rand((257,), dtype=dtype, device="cpu").numpy()
        assert_close(a, b, 0, 0, f"fw.rand {dtype}: {device} against cpu with the same seed (bitwise)")


def randn_box_muller(device: str) -> None:
    """randn = Box-Muller on two Philox uniforms: equal to the reference up to log/cos rounding."""
    import framework as fw

    fw.seed(5)
    n = 1001
    got = fw.randn((n,), dtype="float32", device=device).numpy()
    half = (n + 1) // 2
    u = R.philox_uniform((2, half), 5, 0, np.float32).astype(np.float64)
    r = np.sqrt(-2.0 * np.log(1.0 - u[0]))
    th = u[1] * 2.0 * math.pi
    want = np.concatenate([r * np.cos(th), r * np.sin(th)])[:n].astype(np.float32)
    assert_close(
        got, want, 2e-5, 2e-5, "fw.randn((1001,)) after fw.seed(5) against Box-Muller on the reference"
    )
    if abs(float(got.mean())) > 0.15 or abs(float(got.std()) - 1.0) > 0.1:
        raise CheckFailure(
            "randn moments are off", "mean ~0, std ~1", f"mean {got.mean():.3f}, std {got.std():.3f}"
        )


def randint_bernoulli(device: str) -> None:
    import framework as fw

    fw.seed(9)
    got = fw.randint(-5, 7, (500,), device=device).numpy()
    u = R.philox_uniform((500,), 9, 0, np.float64)
    want = (np.floor(u * 12.0) - 5.0).astype(np.int64)
    assert_close(got, want, 0, 0, "fw.randint(-5, 7) after fw.seed(9)")
    fw.seed(3)
    p = fw.full((400,), 0.3, dtype="float32", device=device)
    b = fw.bernoulli(p).numpy()
    u = R.philox_uniform((400,), 3, 0, np.float32)
    assert_close(b, (u < np.float32(0.3)).astype(np.float32), 0, 0, "fw.bernoulli(0.3) after fw.seed(3)")


CHECKS = [reference_vectors, rand_stream, same_on_cpu, randn_box_muller, randint_bernoulli]


def cases(target: Target) -> list[Case]:
    out = [Case(f"random/{fn.__name__}", "random", (lambda fn=fn: fn(target.device))) for fn in CHECKS[:1]]
    for dt in ("float32", "float64"):
        cid = f"random/philox_uniform[{dt}]"
        if target.registers("philox_uniform", dt):
            out.append(
                Case(
                    cid,
                    "random",
                    (lambda d=dt: philox_kernel(target.device, d)),
                    op="philox_uniform",
                    dtype=dt,
                )
            )
        else:
            out.append(
                Case(
                    cid,
                    "random",
                    None,
                    op="philox_uniform",
                    dtype=dt,
                    preset="not_supported",
                    reason=f"no philox_uniform kernel for {dt}",
                )
            )
    out += [Case(f"random/{fn.__name__}", "random", (lambda fn=fn: fn(target.device))) for fn in CHECKS[1:]]
    return out
