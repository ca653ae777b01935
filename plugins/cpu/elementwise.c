/* add, sub, mul and div of two arrays of one float type on the OpenMP team, for the CPU plugin
 * (kernels.py's binary kernels use it for large contiguous operands of the output's shape).
 *
 * numpy's loops run on one thread; these run on the team that also runs the products and the
 * generated kernels, whose threads are awake between kernels (threads.py's spin). Each element
 * is one IEEE operation, as numpy's: the same bits (no contraction is possible in a single
 * operation; no -ffast-math). y may be a or b (in place).
 *
 * op: 0 add, 1 sub, 2 mul, 3 div. Returns 0, or -1 for an unknown op. One operand may repeat
 * over the leading axes (rotary's x * cos).
 */
#include <stdint.h>

#ifdef T_DOUBLE
#define T double
#else
#define T float
#endif

#define OP(x, y) (op == 0 ? (x) + (y) : op == 1 ? (x) - (y) : op == 2 ? (x) * (y) : (x) / (y))
#define FLAT(expr)                                                                  \
    _Pragma("omp parallel for simd schedule(static) num_threads(nt) if (nt > 1)") \
    for (int64_t i = 0; i < n; ++i) y[i] = (expr);

/* na, nb: n, or the length of the trailing block an operand repeats over the leading axes
 * (kernels.py: a broadcast operand of the output's trailing shape; n a multiple of it) */
int binary_op(int op, int64_t n, int64_t na, int64_t nb, const void* a_, const void* b_, void* y_, int nt) {
    const T *a = a_, *b = b_;
    T* y = y_;
    if (op < 0 || op > 3) return -1;
    if (na == n && nb == n) {
        switch (op) { /* one loop per op: each vectorises on its own */
            case 0: FLAT(a[i] + b[i]) return 0;
            case 1: FLAT(a[i] - b[i]) return 0;
            case 2: FLAT(a[i] * b[i]) return 0;
            default: FLAT(a[i] / b[i]) return 0;
        }
    }
    const int64_t inner = na < nb ? na : nb, rows = n / inner;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int64_t r = 0; r < rows; ++r) {
        const T *ar = na == n ? a + r * inner : a, *br = nb == n ? b + r * inner : b;
        T* yr = y + r * inner;
#pragma omp simd
        for (int64_t j = 0; j < inner; ++j) yr[j] = OP(ar[j], br[j]);
    }
    return 0;
}
