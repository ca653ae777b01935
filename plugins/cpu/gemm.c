/* Products split over the OpenMP team for the CPU plugin (plugins/cpu/gemm.py builds it).
 *
 * c (m x n, row stride ldc) = alpha op(a) @ op(b) + beta c by a BLAS whose address gemm.py
 * finds: the cblas_?gemm of numpy's BLAS or Intel's MKL, or oneDNN's dnnl_sgemm (row-major,
 * float32 only). The rows of c (or with cols, its columns) are cut into nt blocks at multiples
 * of g (the BLAS kernel's exact tile where it has one: each block then has the bits of the
 * whole product), the blocks run by the OpenMP team that also runs the generated kernels. One
 * team for every parallel kernel: its threads wait a short while for the next kernel before
 * they sleep (threads.py sets the spin), so a product of 100 us gains from a second thread
 * instead of waiting ~45 us for it to wake. The BLAS runs on one thread inside each block
 * (oneDNN reads the OpenMP thread count: it is set to 1 inside the block; its own team ran
 * small products 25x slower on the loaded 2-core VM). nt > 1 only for a BLAS that several
 * threads may call at once (threads.py's split_products: MKL, oneDNN; numpy's OpenBLAS gave
 * wrong results at random when conv.c's team called it so).
 *
 * ta / tb: a is stored as k x m (b as n x k), read transposed. abi: 0 cblas with C ints,
 * 1 cblas with 64-bit integers (numpy's own OpenBLAS: scipy_cblas_sgemm64_), 2 dnnl_sgemm.
 * Returns 0, or oneDNN's first non-zero status.
 */
#include <stdint.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#else
static void omp_set_num_threads(int n) { (void)n; }
#endif

#ifdef T_DOUBLE
#define T double
#else
#define T float
#endif

typedef void (*gemm64_t)(int, int, int, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, T*,
                         int64_t);
typedef void (*gemm32_t)(int, int, int, int, int, int, T, const T*, int, const T*, int, T, T*, int);
typedef int (*dnnl_t)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                      float, float*, int64_t);

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };
enum { CBLAS32 = 0, CBLAS64 = 1, DNNL = 2 };

#ifndef T_DOUBLE
/* NOTE: oneDNN 3.2's a @ b^T with few rows of a ran 10-40 % slower than the same product
 * transposed, b @ a^T, whose m x n result is then transposed into c (AMD EPYC Zen 4, one
 * thread: 128 x 1024 @ (1024 x 1024)^T, the input gradient of a Linear layer at batch 128,
 * 83 against 96 GFLOP/s; m <= 128 and k >= 1024 gained in every shape measured, larger m or
 * smaller k lost): such products take that way. */
enum { SWAP_M = 128, SWAP_K = 1024 };

enum { KEPT = 1 << 20 }; /* floats of the buffer a thread keeps between products (4 MB) */

static float* scratch(int64_t n) { /* a buffer per thread, kept for the next product up to KEPT */
    static _Thread_local float* buf = NULL;
    static _Thread_local int64_t cap = 0;
    if (n > KEPT) return malloc((size_t)n * sizeof(float)); /* freed by the caller */
    if (n > cap) {
        free(buf);
        buf = malloc((size_t)n * sizeof(float));
        cap = buf ? n : 0;
    }
    return buf;
}

/* c (m x n, row stride ldc) = alpha a @ b^T + beta c, as (b @ a^T)^T */
static int dnnl_nt_swapped(dnnl_t gemm, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    float* w = scratch(m * n);
    if (!w) return gemm('N', 'T', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    int st = gemm('N', 'T', n, m, k, alpha, b, ldb, a, lda, 0.0f, w, m);
    if (st) {
        if (m * n > KEPT) free(w);
        return st;
    }
    for (int64_t i0 = 0; i0 < m; i0 += 16)
        for (int64_t j0 = 0; j0 < n; j0 += 16) {
            const int64_t i1 = i0 + 16 < m ? i0 + 16 : m, j1 = j0 + 16 < n ? j0 + 16 : n;
            for (int64_t i = i0; i < i1; ++i) {
                float* cr = c + i * ldc;
                if (beta == 0.0f)
                    for (int64_t j = j0; j < j1; ++j) cr[j] = w[j * m + i];
                else
                    for (int64_t j = j0; j < j1; ++j) cr[j] = w[j * m + i] + beta * cr[j];
            }
        }
    if (m * n > KEPT) free(w);
    return 0;
}
#endif

int gemm_rows(int64_t fn, int abi, int ta, int tb, int64_t m, int64_t n, int64_t k, const void* a_, int64_t lda,
              const void* b_, int64_t ldb, void* c_, int64_t ldc, int cols, int64_t g, int nt, double alpha,
              double beta) {
    const T *a = a_, *b = b_;
    T* c = c_;
    const int64_t len = cols ? n : m, blocks = (len + g - 1) / g;
    if (nt > blocks) nt = (int)blocks;
    if (nt < 1) nt = 1;
    int status = 0;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1) reduction(| : status)
    for (int t = 0; t < nt; ++t) {
        int64_t lo = blocks * t / nt * g, hi = blocks * (t + 1) / nt * g;
        if (hi > len) hi = len;
        if (hi > lo) {
            /* a block of rows: rows lo..hi of op(a) and c; of columns: columns of op(b) and c */
            const T* ab = cols ? a : (ta ? a + lo : a + lo * lda);
            const T* bb = cols ? (tb ? b + lo * ldb : b + lo) : b;
            T* cb = cols ? c + lo : c + lo * ldc;
            const int64_t mb = cols ? m : hi - lo, nb = cols ? hi - lo : n;
            const int oa = ta ? TRANS : NO_TRANS, ob = tb ? TRANS : NO_TRANS;
            if (abi == DNNL) {
#ifndef T_DOUBLE
                omp_set_num_threads(1); /* this block's oneDNN call runs on this thread alone */
                const dnnl_t gemm = (dnnl_t)(intptr_t)fn;
                if (!ta && tb && mb <= SWAP_M && k >= SWAP_K && nb >= 2 * mb)
                    status |= dnnl_nt_swapped(gemm, mb, nb, k, (float)alpha, ab, lda, bb, ldb, (float)beta, cb, ldc);
                else
                    status |= gemm(ta ? 'T' : 'N', tb ? 'T' : 'N', mb, nb, k, (float)alpha, ab, lda, bb, ldb,
                                   (float)beta, cb, ldc);
#else
                status |= -1; /* oneDNN has no float64 product */
#endif
            } else if (abi == CBLAS64)
                ((gemm64_t)(intptr_t)fn)(ROW_MAJOR, oa, ob, mb, nb, k, (T)alpha, ab, lda, bb, ldb, (T)beta, cb, ldc);
            else
                ((gemm32_t)(intptr_t)fn)(ROW_MAJOR, oa, ob, (int)mb, (int)nb, (int)k, (T)alpha, ab, (int)lda, bb,
                                         (int)ldb, (T)beta, cb, (int)ldc);
        }
    }
    return status;
}
