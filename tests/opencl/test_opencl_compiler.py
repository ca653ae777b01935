"""Compile access: build OpenCL C, store the binary, load it and launch on views."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from adapter_api import CompileError  # noqa: E402

AXPY = """
__kernel void axpy(__global float* y, __global const float* x, float a, long n) {
    long i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


@pytest.fixture(scope="module")
def compiler(registry, runtime):
    c = registry.compilers["opencl"][1](runtime, 0)
    assert c.language == "opencl-c" and runtime.properties(0).name in c.identity()
    return c


@pytest.mark.parametrize("x_offset,y_offset", [(0, 0), (4, 12), (128, 256)])
def test_compile_load_launch(compiler, runtime, x_offset, y_offset):
    binary = compiler.compile(AXPY, "axpy", ("-cl-fast-relaxed-math",))
    assert isinstance(binary, bytes) and binary
    prg = compiler.load(binary, "axpy")
    q = runtime.default_stream(0)
    n = 1000
    x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    xb, yb = runtime.allocate(0, x_offset + 4 * n + 64), runtime.allocate(0, y_offset + 4 * n + 64)
    runtime.copy_h2d(0, xb, x_offset, x, q)
    runtime.copy_h2d(0, yb, y_offset, y, q)
    runtime.memset(0, yb, y_offset + 4 * n, 0x7F, 64, q)
    xv = runtime.view(xb, x_offset, (n,), np.float32)
    yv = runtime.view(yb, y_offset, (n,), np.float32)
    compiler.launch(prg, [yv, xv, np.float32(2), np.int64(n)], (n,), (64,), q)
    out = np.empty(n + 16, np.float32)
    runtime.copy_d2h(0, out, yb, y_offset, q)
    np.testing.assert_array_equal(out[:n], 2 * x + 1)
    assert (out[n:].view(np.uint8) == 0x7F).all()


def test_compile_error_carries_the_log(compiler):
    with pytest.raises(
        CompileError, match=r"(?s)\[opencl\] clBuildProgram failed for kernel 'bad' on device .*undeclared"
    ):
        compiler.compile("__kernel void bad(__global float* a) { a[0] = nope; }", "bad")


def test_missing_entry(compiler):
    with pytest.raises(CompileError, match="no kernel 'other'"):
        compiler.compile(AXPY, "other")
