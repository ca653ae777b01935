"""Philox-4x32-10 (Salmon et al., SC'11) vectorised with numpy, for the CPU kernels."""

from __future__ import annotations

import numpy as np

M0 = np.uint64(0xD2511F53)
M1 = np.uint64(0xCD9E8D57)
W0 = np.uint32(0x9E3779B9)
W1 = np.uint32(0xBB67AE85)
_LO = np.uint64(0xFFFFFFFF)
_SH = np.uint64(32)


def philox4x32_10(
    c0: np.ndarray, c1: np.ndarray, c2: np.ndarray, c3: np.ndarray, k0: int, k1: int
) -> tuple[np.ndarray, ...]:
    """Ten rounds on arrays of uint32 counters with one key; returns four uint32 arrays."""
    c0, c1, c2, c3 = (np.asarray(c, np.uint32) for c in (c0, c1, c2, c3))
    key0, key1 = np.uint32(k0), np.uint32(k1)
    with np.errstate(over="ignore"):
        for r in range(10):
            if r:
                key0 = np.uint32(key0 + W0)
                key1 = np.uint32(key1 + W1)
            p0 = M0 * c0.astype(np.uint64)
            p1 = M1 * c2.astype(np.uint64)
            hi0 = (p0 >> _SH).astype(np.uint32)
            lo0 = (p0 & _LO).astype(np.uint32)
            hi1 = (p1 >> _SH).astype(np.uint32)
            lo1 = (p1 & _LO).astype(np.uint32)
            c0, c1, c2, c3 = hi1 ^ c1 ^ key0, lo1, hi0 ^ c3 ^ key1, lo0
    return c0, c1, c2, c3


def philox_bits(n: int, seed: int, offset: int) -> np.ndarray:
    """n uint32 words: word i comes from counter (offset + i // 4) and lane i % 4."""
    blocks = (n + 3) // 4
    ctr = np.arange(blocks, dtype=np.uint64) + np.uint64(offset)
    c0 = (ctr & _LO).astype(np.uint32)
    c1 = (ctr >> _SH).astype(np.uint32)
    z = np.zeros(blocks, np.uint32)
    out = philox4x32_10(c0, c1, z, z, seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF)
    return np.stack(out, axis=1).reshape(-1)[:n]


def philox_uniform(n: int, seed: int, offset: int) -> np.ndarray:
    """Uniform float64 values in [0, 1): (bits >> 8) * 2**-24 (exact in float32 too)."""
    return (philox_bits(n, seed, offset) >> np.uint32(8)).astype(np.float64) * (2.0**-24)
