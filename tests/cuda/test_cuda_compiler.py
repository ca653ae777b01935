"""Compile access: NVRTC runs without a GPU, so compile() and its errors are checked here;
load() and launch() need a device (test_cuda_gpu.py)."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_marks import requires_nvrtc

from adapter_api import CompileError, OpArgumentError
from plugins.cuda import CUDACompiler
from plugins.cuda.compiler import launch_shape

SCALE = r"""
extern "C" __global__ void scale(float* x, float a, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"""


def test_language():
    assert CUDACompiler.language == "cuda"


@requires_nvrtc
def test_compile_returns_a_cubin_for_a_known_arch():
    cc = CUDACompiler(arch="90")
    assert cc.target() == ("-arch=sm_90", "cubin")
    binary = cc.compile(SCALE, "scale", ("-DUNUSED=1",))
    assert isinstance(binary, bytes) and binary.startswith(b"\x7fELF")
    assert "sm_90" in cc.identity() and "nvrtc" in cc.identity()


@requires_nvrtc
def test_newer_gpu_than_nvrtc_gets_ptx():
    cc = CUDACompiler(arch="999")
    option, kind = cc.target()
    assert kind == "ptx" and option.startswith("-arch=compute_")
    assert b".entry scale" in cc.compile(SCALE, "scale")


@requires_nvrtc
def test_compile_error_carries_the_log():
    with pytest.raises(CompileError, match=r"^\[cuda\] NVRTC could not compile kernel 'broken'") as info:
        CUDACompiler(arch="90").compile('extern "C" __global__ void broken() { int x = ; }', "broken")
    assert "expected an expression" in str(info.value)


def test_launch_shape():
    assert launch_shape((1000,), None) == ((1000, 1, 1), (256, 1, 1))
    assert launch_shape((3,), None) == ((3, 1, 1), (3, 1, 1))
    assert launch_shape((64, 8), (16, 16)) == ((64, 8, 1), (16, 16, 1))
    with pytest.raises(OpArgumentError, match="1024 threads"):
        launch_shape((64,), (64, 32))
    with pytest.raises(OpArgumentError, match="1 to 3 dimensions"):
        launch_shape((), None)


def test_launch_rejects_python_numbers():
    with pytest.raises(OpArgumentError, match=r"argument 1 is a Python int \(5\); pass a numpy scalar"):
        CUDACompiler().launch(object(), [np.zeros(1), 5], (1,), None, None)


HALF = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void twice(__half* x, __nv_bfloat16* y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { x[i] = __float2half(2.f * __half2float(x[i])); y[i] = __float2bfloat16(1.f); }
}
"""


def _cuda_headers() -> str | None:
    import os

    import cupy

    from plugins.cuda.compiler import include_options

    for opt in include_options(cupy):
        if os.path.isfile(os.path.join(opt[2:], "cuda_fp16.h")):
            return opt[2:]
    return None


@requires_nvrtc
def test_half_precision_headers_are_found():
    if _cuda_headers() is None:
        pytest.skip(
            "CUDA headers (cuda_fp16.h) not found; set CUDA_PATH or pip install nvidia-cuda-runtime-cu12"
        )
    assert CUDACompiler(arch="90").compile(HALF, "twice").startswith(b"\x7fELF")
