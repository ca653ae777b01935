"""Philox4x32-10 counter-based random numbers: the CUDA kernel and an array-module reference.

Element ``i`` of a ``philox_uniform`` output: ``n = offset + i // 4``; counter =
``(n mod 2**32, n >> 32, 0, 0)``; key = ``(seed mod 2**32, (seed >> 32) mod 2**32)``;
``bits = Philox4x32-10(counter, key)[i % 4]``; ``y = (bits >> 8) * 2**-24``, exact in float32
and float64. One CUDA thread computes one counter (four outputs).
"""

from __future__ import annotations

from typing import Any

import numpy as np

M0, M1 = 0xD2511F53, 0xCD9E8D57  # round multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85  # key bumps (Weyl sequence)
ROUNDS = 10
_MASK32 = 0xFFFFFFFF

_TEMPLATE = r"""
extern "C" __global__ void oarlock_philox_uniform_@SUFFIX@(
    @T@* __restrict__ y, unsigned long long n, unsigned long long offset,
    unsigned int key0, unsigned int key1)
{
    const unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long first = t * 4ULL;
    if (first >= n) return;
    const unsigned long long counter = offset + t;
    unsigned int c0 = (unsigned int)counter, c1 = (unsigned int)(counter >> 32), c2 = 0u, c3 = 0u;
    unsigned int k0 = key0, k1 = key1;
    for (int r = 0; r < 10; ++r) {
        if (r > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        const unsigned int hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        const unsigned int hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        const unsigned int n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
    }
    const unsigned int bits[4] = {c0, c1, c2, c3};
    // NOTE: bits >> 8 has 24 significant bits, so both conversions and the scaling are exact.
    for (int j = 0; j < 4; ++j) {
        if (first + j < n) y[first + j] = (@T@)(bits[j] >> 8) * (@T@)5.9604644775390625e-08;
    }
}
"""

#: dtype name -> (C type, kernel name suffix)
CTYPES = {"float32": ("float", "f32"), "float64": ("double", "f64")}

#: The CUDA C source with both kernels (``oarlock_philox_uniform_f32`` and ``..._f64``).
SOURCE = "".join(_TEMPLATE.replace("@T@", t).replace("@SUFFIX@", s) for t, s in CTYPES.values())


def kernel_name(dtype: Any) -> str:
    return f"oarlock_philox_uniform_{CTYPES[np.dtype(dtype).name][1]}"


def split_key(seed: int) -> tuple[int, int]:
    seed = int(seed)
    return seed & _MASK32, (seed >> 32) & _MASK32


def philox4x32_10(xp: Any, c0: Any, c1: Any, c2: Any, c3: Any, k0: int, k1: int) -> tuple[Any, Any, Any, Any]:
    """Philox4x32-10 on uint32 arrays of counters (any array module with uint64 multiply)."""
    u32, u64 = xp.uint32, xp.uint64
    for r in range(ROUNDS):
        if r:
            k0, k1 = (k0 + W0) & _MASK32, (k1 + W1) & _MASK32
        p0 = c0.astype(u64) * u64(M0)
        p1 = c2.astype(u64) * u64(M1)
        hi0, lo0 = (p0 >> u64(32)).astype(u32), (p0 & u64(_MASK32)).astype(u32)
        hi1, lo1 = (p1 >> u64(32)).astype(u32), (p1 & u64(_MASK32)).astype(u32)
        c0, c1, c2, c3 = hi1 ^ c1 ^ u32(k0), lo1, hi0 ^ c3 ^ u32(k1), lo0
    return c0, c1, c2, c3


def philox_uniform_reference(xp: Any, size: int, seed: int, offset: int, dtype: Any) -> Any:
    """The spec, written with array ops: a flat array of ``size`` uniforms in ``dtype``."""
    dt = np.dtype(dtype)
    u32, u64 = xp.uint32, xp.uint64
    t = xp.arange((size + 3) // 4, dtype=u64) + u64(int(offset) % 2**64)
    c0, c1 = (t & u64(_MASK32)).astype(u32), (t >> u64(32)).astype(u32)
    zero = xp.zeros_like(c0)
    k0, k1 = split_key(seed)
    words = philox4x32_10(xp, c0, c1, zero, zero.copy(), k0, k1)
    bits = xp.stack(words, axis=1).reshape(-1)[:size]
    return (bits >> u32(8)).astype(dt) * dt.type(2.0**-24)
