/* bfloat16 products for the CPU plugin (plugins/cpu/bf16.py builds it).
 *
 * c[p] (m x n bf16, row stride ldc) = op(a[p]) @ op(b[p]) for p < batch, by oneDNN's
 * dnnl_gemm_bf16bf16f32 (row-major; address fn): bf16 operands, float32 accumulation into a
 * per-thread float32 block, then rounded to bfloat16 (to nearest, ties to even; NaN stays NaN)
 * while the block is still in cache. Offsets oa/ob/oc (int64, in elements) place each product's
 * operands (0 repeated: a broadcast operand). The work is batch x rb blocks of rows (rows cut at
 * multiples of g so that there are at least nt blocks), run by nt threads of the OpenMP team that
 * also runs the generated kernels; oneDNN runs on one thread inside a block (its own team, on a
 * loaded 2-core machine, ran a 256x64 @ 64x64 product 25x slower than one thread did).
 *
 * ta / tb: a[p] is stored k x m (b[p] n x k), read transposed. Returns oneDNN's first non-zero
 * status, or -1 when a block's float32 buffer could not be allocated; 0 on success.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#else /* a compiler without OpenMP: one thread (oneDNN then sizes its own threads) */
static int omp_get_thread_num(void) { return 0; }
static int omp_get_num_threads(void) { return 1; }
static void omp_set_num_threads(int n) { (void)n; }
#endif

typedef int (*bf16_gemm_t)(char, char, int64_t, int64_t, int64_t, float, const uint16_t*, int64_t, const uint16_t*,
                           int64_t, float, float*, int64_t);

static inline uint16_t round_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* NaN: quiet, sign kept */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

int bf16_products(int64_t fn, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k, const void* a_,
                  int64_t lda, const void* oa_, const void* b_, int64_t ldb, const void* ob_, void* c_, int64_t ldc,
                  const void* oc_, int64_t g, int nt) {
    const uint16_t *a = a_, *b = b_;
    uint16_t* c = c_;
    const int64_t *oa = oa_, *ob = ob_, *oc = oc_;
    const bf16_gemm_t gemm = (bf16_gemm_t)(intptr_t)fn;
    const int64_t blocks = (m + g - 1) / g;
    int64_t rb = batch >= nt ? 1 : (nt + batch - 1) / batch;
    if (rb > blocks) rb = blocks;
    const int64_t items = batch * rb;
    if (nt > items) nt = (int)items;
    if (nt < 1) nt = 1;
    int status = 0;
#pragma omp parallel num_threads(nt) reduction(| : status)
    {
        omp_set_num_threads(1); /* a oneDNN call inside this thread's block runs on it alone */
        const int t = omp_get_thread_num(), tt = omp_get_num_threads();
        float* w = NULL;
        int64_t cap = 0;
        for (int64_t it = items * t / tt; it < items * (t + 1) / tt && !status; ++it) {
            const int64_t p = it / rb, r = it % rb;
            const int64_t lo = blocks * r / rb * g;
            int64_t hi = blocks * (r + 1) / rb * g;
            if (hi > m) hi = m;
            const int64_t mb = hi - lo;
            if (mb <= 0) continue;
            if (mb * n > cap) {
                free(w);
                cap = mb * n;
                w = malloc((size_t)cap * sizeof(float));
                if (!w) {
                    cap = 0;
                    status = -1;
                    break;
                }
            }
            const uint16_t* ab = a + oa[p] + (ta ? lo : lo * lda);
            int st = gemm(ta ? 'T' : 'N', tb ? 'T' : 'N', mb, n, k, 1.0f, ab, lda, b + ob[p], ldb, 0.0f, w, n);
            if (st) {
                status = st;
                break;
            }
            uint16_t* cb = c + oc[p] + lo * ldc;
            for (int64_t i = 0; i < mb; ++i) {
                const float* wr = w + i * n;
                uint16_t* cr = cb + i * ldc;
                for (int64_t j = 0; j < n; ++j) cr[j] = round_bf16(wr[j]);
            }
        }
        free(w);
    }
    return status;
}
