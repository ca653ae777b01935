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

/* -- bfloat16 (bits in uint16_t): casts, and add/sub/mul/div computed in float32 ------------
 *
 * float32 -> bfloat16 rounds to nearest, ties to even, as ml_dtypes does (the reference of the
 * numpy kernels these replace): denormals rounded like any value, every NaN to the quiet NaN
 * of its sign (0x7fc0 | sign). bfloat16 -> float32 is exact (the bits shifted). A binary op
 * widens both operands to float32, runs the one IEEE operation and rounds once at the store:
 * the bits of numpy's float32 op on the widened operands, rounded by ml_dtypes.
 *
 * With AVX512-BF16 (-march=native on a CPU that lists avx512_bf16) and units != 0 (opt-in:
 * 2x slower than the plain path on the AMD EPYC measured, which gcc vectorises), the
 * rounding runs on vcvtneps2bf16 for 16 floats at a time none of which is a NaN or a denormal
 * (the instruction keeps NaN payloads and flushes denormals); the others take the plain path.
 */
#ifdef __AVX512BF16__
#include <immintrin.h>
#endif

static inline uint16_t bf16_round(float x) {
    union {
        float f;
        uint32_t u;
    } v = {x};
    const uint32_t u = v.u;
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((u >> 16) & 0x8000u) | 0x7fc0u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline float bf16_widen(uint16_t h) {
    union {
        uint32_t u;
        float f;
    } v = {(uint32_t)h << 16};
    return v.f;
}

/* y[i] = round(x[i]) for i < n; units: 1 to use vcvtneps2bf16 where built with it */
static void round_run(int64_t n, const float* x, uint16_t* y, int units) {
    int64_t i = 0;
#ifdef __AVX512BF16__
    if (units) {
        const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
        const __m512i inf = _mm512_set1_epi32(0x7f800000), tiny = _mm512_set1_epi32(0x00800000);
        for (; i + 16 <= n; i += 16) {
            const __m512 v = _mm512_loadu_ps(x + i);
            const __m512i a = _mm512_and_si512(_mm512_castps_si512(v), abs_mask);
            /* NaN (a > inf) or a nonzero denormal (0 < a < 2^-126): the plain path's bits */
            const __mmask16 odd = _mm512_cmpgt_epi32_mask(a, inf) |
                                  (_mm512_cmplt_epi32_mask(a, tiny) & _mm512_cmpgt_epi32_mask(a, _mm512_setzero_si512()));
            if (odd) {
                for (int j = 0; j < 16; ++j) y[i + j] = bf16_round(x[i + j]);
            } else {
                _mm256_storeu_si256((__m256i*)(y + i), (__m256i)_mm512_cvtneps_pbh(v));
            }
        }
    }
#else
    (void)units;
#endif
#pragma omp simd
    for (int64_t k = i; k < n; ++k) y[k] = bf16_round(x[k]);
}

#ifdef _OPENMP
#include <omp.h>
#endif

/* this thread's part [lo, hi) of n elements (cut at multiples of 64) */
static inline void part(int64_t n, int64_t* lo, int64_t* hi) {
    int t = 0, tt = 1;
#ifdef _OPENMP
    t = omp_get_thread_num();
    tt = omp_get_num_threads();
#endif
    *lo = n * t / tt / 64 * 64;
    *hi = t + 1 == tt ? n : n * (t + 1) / tt / 64 * 64;
}

/* float32 -> bfloat16, n elements, over nt threads */
int bf16_from_f32(int64_t n, const void* x_, void* y_, int units, int nt) {
    const float* x = x_;
    uint16_t* y = y_;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int64_t lo, hi;
        part(n, &lo, &hi);
        round_run(hi - lo, x + lo, y + lo, units);
    }
    return 0;
}

/* bfloat16 -> float32, n elements, over nt threads */
int bf16_to_f32(int64_t n, const void* x_, void* y_, int nt) {
    const uint16_t* x = x_;
    float* y = y_;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int64_t lo, hi;
        part(n, &lo, &hi);
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) y[i] = bf16_widen(x[i]);
    }
    return 0;
}

#define BF16_BLOCK 256 /* floats computed per chunk before the rounding store (in L1) */

#define BF16_LOOP(expr)                                  \
    _Pragma("omp simd") for (int64_t j = 0; j < m; ++j) w[j] = (expr);
#define BF16_OPS(p, q)               \
    switch (op) {                    \
        case 0: BF16_LOOP(p + q) break; \
        case 1: BF16_LOOP(p - q) break; \
        case 2: BF16_LOOP(p * q) break; \
        default: BF16_LOOP(p / q)       \
    }

/* w[j] = a[j] (op) b[j] for j < m in float32; a (or b) a single value sa (sb) where a (b) is NULL */
static inline void bf16_ops(int op, int64_t m, const uint16_t* a, const uint16_t* b, float sa, float sb,
                            float* w) {
    if (!a) {
        BF16_OPS(sa, bf16_widen(b[j]))
    } else if (!b) {
        BF16_OPS(bf16_widen(a[j]), sb)
    } else {
        BF16_OPS(bf16_widen(a[j]), bf16_widen(b[j]))
    }
}

/* y = a (op) b in bfloat16, computed in float32 (op codes of binary_op). na, nb: n, the length
 * of a trailing block the operand repeats (n a multiple of it), or 1 (a single value). */
int bf16_binary(int op, int64_t n, int64_t na, int64_t nb, const void* a_, const void* b_, void* y_, int units,
                int nt) {
    const uint16_t *a = a_, *b = b_;
    uint16_t* y = y_;
    if (op < 0 || op > 3) return -1;
    const float sa = bf16_widen(a[0]), sb = bf16_widen(b[0]);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int64_t lo, hi;
        part(n, &lo, &hi);
        float w[BF16_BLOCK];
        for (int64_t s = lo; s < hi; s += BF16_BLOCK) {
            const int64_t m = hi - s < BF16_BLOCK ? hi - s : BF16_BLOCK;
            if (na == 1 || nb == 1 || (na == n && nb == n)) {
                bf16_ops(op, m, na == 1 ? NULL : a + s, nb == 1 ? NULL : b + s, sa, sb, w);
            } else { /* one operand repeats a block: runs of the block, no wrap inside */
                const int64_t per = na == n ? nb : na;
                for (int64_t j = 0; j < m;) {
                    const int64_t off = (s + j) % per, run = per - off < m - j ? per - off : m - j;
                    bf16_ops(op, run, na == n ? a + s + j : a + off, nb == n ? b + s + j : b + off, 0, 0, w + j);
                    j += run;
                }
            }
            round_run(m, w, y + s, units);
        }
    }
    return 0;
}
