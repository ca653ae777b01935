"""The bfloat16 matmul's cuBLAS call: its arguments, checked on the CPU against np.matmul.

cuBLAS cannot run without a GPU, so :func:`gemm_strided_batched` below is a plain reading of
cublasGemmStridedBatchedEx's documented column-major semantics (no transposes, alpha = 1,
beta = 0) over flat arrays. It checks the layout logic of :func:`plugins.cuda.kernels.gemm_args`
(which operand goes where, leading dimensions, batch strides); the GPU test
(test_cuda_gpu.py::test_matmul) checks the real call.
"""

from __future__ import annotations

import numpy as np
import pytest

from plugins.cuda.kernels import gemm_args


def gemm_strided_batched(m, n, k, A, lda, sa, B, ldb, sb, C, ldc, sc, batch):
    """C[i + j*ldc] = sum_p A[i + p*lda] * B[p + j*ldb] per batch (column-major, op N)."""
    for t in range(batch):
        for i in range(m):
            for j in range(n):
                C[t * sc + i + j * ldc] = sum(
                    A[t * sa + i + p * lda] * B[t * sb + p + j * ldb] for p in range(k)
                )


@pytest.mark.parametrize(
    "a_shape,b_shape",
    [
        ((3, 4), (4, 5)),
        ((1, 7), (7, 1)),
        ((2, 3, 4), (2, 4, 6)),
        ((2, 2, 1, 3), (2, 2, 3, 2)),
        ((5, 1), (1, 3)),
    ],
)
def test_gemm_args_compute_row_major_matmul(a_shape, b_shape):
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, a_shape).astype(np.float64)
    b = rng.integers(-4, 5, b_shape).astype(np.float64)
    want = np.matmul(a, b)
    g = gemm_args(a.shape, b.shape)
    c = np.full(want.size, np.nan)
    # cuBLAS's A is our b, its B our a (see GemmArgs)
    gemm_strided_batched(
        g.m,
        g.n,
        g.k,
        b.reshape(-1),
        g.lda,
        g.stride_a,
        a.reshape(-1),
        g.ldb,
        g.stride_b,
        c,
        g.ldc,
        g.stride_c,
        g.batch,
    )
    np.testing.assert_array_equal(c.reshape(want.shape), want)
