"""Philox4x32-10: the array reference against the published known-answer vectors and a scalar
reading of the spec; the CUDA C kernel source run on the CPU (g++) and built by NVRTC."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest
from cuda_marks import requires_nvrtc

from plugins.cuda import philox

# Random123 kat_vectors, philox4x32 with 10 rounds: (counter, key) -> output
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize("counter,key,expected", KAT)
def test_known_answers(counter, key, expected):
    words = philox.philox4x32_10(np, *[np.array([c], np.uint32) for c in counter], *key)
    assert tuple(int(w[0]) for w in words) == expected


def scalar_philox(counter, key):
    """The spec, one Python int at a time."""
    c, (k0, k1) = list(counter), key
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) % 2**32, (k1 + 0xBB67AE85) % 2**32
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 % 2**32, (p0 >> 32) ^ c[3] ^ k1, p0 % 2**32]
    return c


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed,offset", [(0, 0), (2**33 + 17, 5), (2**64 - 1, 2**32 - 2)])
def test_reference_matches_scalar_spec(dtype, seed, offset):
    size = 10
    got = philox.philox_uniform_reference(np, size, seed, offset, dtype)
    want = []
    for i in range(size):
        n = offset + i // 4
        bits = scalar_philox((n % 2**32, n >> 32, 0, 0), (seed % 2**32, (seed >> 32) % 2**32))[i % 4]
        want.append((bits >> 8) * 2.0**-24)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.array(want, dtype))


SHIM = r"""
#include <cstdint>
struct dim3_ { unsigned int x, y, z; };
static dim3_ blockIdx, threadIdx, blockDim;
#define __global__
#define __restrict__
static inline unsigned int __umulhi(unsigned int a, unsigned int b) {
    return (unsigned int)(((unsigned long long)a * b) >> 32);
}
"""

DRIVER = r"""
extern "C" void run_@S@(@T@* y, unsigned long long n, unsigned long long offset, unsigned int k0, unsigned int k1) {
    blockDim.x = 256;
    unsigned long long threads = (n + 3) / 4;
    for (blockIdx.x = 0; (unsigned long long)blockIdx.x * 256 < threads; ++blockIdx.x)
        for (threadIdx.x = 0; threadIdx.x < 256; ++threadIdx.x)
            oarlock_philox_uniform_@S@(y, n, offset, k0, k1);
}
"""


@pytest.fixture(scope="module")
def cpu_build_of_cuda_source(tmp_path_factory):
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed; the CUDA source is checked on a GPU instead")
    d = tmp_path_factory.mktemp("philox")
    drivers = "".join(DRIVER.replace("@T@", t).replace("@S@", s) for t, s in philox.CTYPES.values())
    (d / "philox.cpp").write_text(SHIM + philox.SOURCE.replace('extern "C" ', "static ") + drivers)
    subprocess.run(
        [gxx, "-O1", "-shared", "-fPIC", "-o", str(d / "philox.so"), str(d / "philox.cpp")],
        check=True,
        timeout=60,
    )
    return ctypes.CDLL(str(d / "philox.so"))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size,seed,offset", [(1, 0, 0), (1027, 12345, 0), (9, 2**64 - 1, 2**32 - 1)])
def test_cuda_source_bitwise_equals_reference(cpu_build_of_cuda_source, dtype, size, seed, offset):
    y = np.full(size + 3, 7.0, dtype)  # the tail must stay untouched
    fn = getattr(cpu_build_of_cuda_source, "run_" + philox.CTYPES[dtype][1])
    k0, k1 = philox.split_key(seed)
    fn(
        y.ctypes.data_as(ctypes.c_void_p),
        ctypes.c_ulonglong(size),
        ctypes.c_ulonglong(offset),
        ctypes.c_uint(k0),
        ctypes.c_uint(k1),
    )
    np.testing.assert_array_equal(y[:size], philox.philox_uniform_reference(np, size, seed, offset, dtype))
    assert (y[size:] == 7.0).all()


@requires_nvrtc
def test_nvrtc_builds_the_kernel_source():
    from plugins.cuda import CUDACompiler

    binary = CUDACompiler(arch="90").compile(philox.SOURCE, philox.kernel_name("float32"), ())
    assert binary.startswith(b"\x7fELF")
