/* Batch-small weight-only products for the CPU plugin (plugins/cpu/quant.py builds it):
 * out[i, j] = sum_g scale[g, j] * sum_{t in group g} x[i, t] * q_j[t]  (+ bias[j]),
 * reading each weight as one byte (int8) or half a byte (int4) instead of four: what a
 * memory-bound decoding step at batch 1 needs. q is [n, k] int8, or [n / 2, k] with channel
 * 2r in the low nibble of row r and 2r + 1 in the high one (two's complement); scale is [n]
 * (group <= 0) or [ceil(k / group), n].
 *
 * The weights stream once: a block of four channels (four int8 rows, or two packed int4 rows)
 * is widened to float in registers (sign-extend, convert) and multiplied into every row of x
 * while it sits in L1; nothing is written but out. A group's partial products stay in vector
 * accumulators and are scaled once at the group's end (an FMA per group and channel), the
 * per-channel scale once at the end. With AVX2 and FMA (the plugin builds with -march=native,
 * so the build is the CPU check: the kernel cache is keyed by the CPU) the loop is written in
 * intrinsics, 16 weights a channel per step; elsewhere the portable loop below it (omp simd).
 * Leftover weights of a group (its length not a multiple of 8) and channels (n not a multiple
 * of the block) take scalar / one-channel paths. The channel blocks are cut into nt contiguous
 * ranges for the OpenMP team (the one the generated kernels and split products use): nt = 1
 * for weights too small to pay for a second thread.
 */
#include <stdint.h>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define WOL_AVX2 1
#ifndef PREFETCH
#define PREFETCH 512 /* bytes ahead in each channel's row */
#endif
#endif

#define INLINE static inline __attribute__((always_inline))

#ifdef WOL_AVX2
INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* 8 int8 weights, sign-extended to int32 */
INLINE __m256i ld8(const int8_t *p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)); }
#endif

/* One row x of the product with C int8 channels r .. r + C - 1 (rows of q at q, stride k):
 * res[c] = sum over groups of scale * partial (grouped), or scale[r + c] * sum (per channel). */
INLINE void i8_block(const float *restrict x, const int8_t *restrict q, const float *restrict scale, int64_t n,
                     int64_t k, int64_t gs, int grouped, int64_t r, const int C, float *restrict res) {
    float tail[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#ifdef WOL_AVX2
    __m256 tot[4];
    for (int c = 0; c < C; c++) tot[c] = _mm256_setzero_ps();
#endif
    for (int64_t lo = 0, g = 0; lo < k; lo += gs, g++) {
        const int64_t hi = lo + gs < k ? lo + gs : k;
        int64_t t = lo;
        float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#ifdef WOL_AVX2
        __m256 a[4], b[4];
        for (int c = 0; c < C; c++) a[c] = b[c] = _mm256_setzero_ps();
        for (; t + 32 <= hi; t += 32) {
            const __m256 x0 = _mm256_loadu_ps(x + t), x1 = _mm256_loadu_ps(x + t + 8);
            const __m256 x2 = _mm256_loadu_ps(x + t + 16), x3 = _mm256_loadu_ps(x + t + 24);
            for (int c = 0; c < C; c++) {
                const int8_t *w = q + c * k + t;
                _mm_prefetch((const char *)(w + PREFETCH), _MM_HINT_T0);
                a[c] = _mm256_fmadd_ps(x0, _mm256_cvtepi32_ps(ld8(w)), a[c]);
                b[c] = _mm256_fmadd_ps(x1, _mm256_cvtepi32_ps(ld8(w + 8)), b[c]);
                a[c] = _mm256_fmadd_ps(x2, _mm256_cvtepi32_ps(ld8(w + 16)), a[c]);
                b[c] = _mm256_fmadd_ps(x3, _mm256_cvtepi32_ps(ld8(w + 24)), b[c]);
            }
        }
        for (; t + 16 <= hi; t += 16) {
            const __m256 x0 = _mm256_loadu_ps(x + t), x1 = _mm256_loadu_ps(x + t + 8);
            for (int c = 0; c < C; c++) {
                a[c] = _mm256_fmadd_ps(x0, _mm256_cvtepi32_ps(ld8(q + c * k + t)), a[c]);
                b[c] = _mm256_fmadd_ps(x1, _mm256_cvtepi32_ps(ld8(q + c * k + t + 8)), b[c]);
            }
        }
        if (t + 8 <= hi) {
            const __m256 x0 = _mm256_loadu_ps(x + t);
            for (int c = 0; c < C; c++) a[c] = _mm256_fmadd_ps(x0, _mm256_cvtepi32_ps(ld8(q + c * k + t)), a[c]);
            t += 8;
        }
#else
        for (int c = 0; c < C; c++) {
            const int8_t *w = q + c * k;
            float p = 0.0f;
#pragma omp simd reduction(+ : p)
            for (int64_t u = t; u < hi; u++) p += x[u] * (float)w[u];
            part[c] = p;
        }
        t = hi;
#endif
        for (; t < hi; t++)
            for (int c = 0; c < C; c++) part[c] += x[t] * (float)q[c * k + t];
        for (int c = 0; c < C; c++) {
            const float s = grouped ? scale[g * n + r + c] : 1.0f;
#ifdef WOL_AVX2
            tot[c] = _mm256_fmadd_ps(_mm256_add_ps(a[c], b[c]), _mm256_set1_ps(s), tot[c]);
#endif
            tail[c] += part[c] * s;
        }
    }
    for (int c = 0; c < C; c++) {
#ifdef WOL_AVX2
        tail[c] += hsum8(tot[c]);
#endif
        res[c] = grouped ? tail[c] : tail[c] * scale[r + c];
    }
}

/* One row x with P packed int4 rows p .. p + P - 1 (channels 2p .. 2p + 2P - 1): res[2c] low
 * nibbles, res[2c + 1] high ones. */
INLINE void i4_block(const float *restrict x, const int8_t *restrict q, const float *restrict scale, int64_t n,
                     int64_t k, int64_t gs, int grouped, int64_t p, const int P, float *restrict res) {
    float tail[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#ifdef WOL_AVX2
    __m256 tot[4];
    for (int c = 0; c < 2 * P; c++) tot[c] = _mm256_setzero_ps();
#endif
    for (int64_t lo = 0, g = 0; lo < k; lo += gs, g++) {
        const int64_t hi = lo + gs < k ? lo + gs : k;
        int64_t t = lo;
        float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#ifdef WOL_AVX2
        __m256 a[4];
        for (int c = 0; c < 2 * P; c++) a[c] = _mm256_setzero_ps();
        for (; t + 8 <= hi; t += 8) {
            const __m256 x0 = _mm256_loadu_ps(x + t);
            for (int c = 0; c < P; c++) {
                const __m256i v = ld8(q + c * k + t);
                const __m256 lo4 = _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(v, 28), 28));
                const __m256 hi4 = _mm256_cvtepi32_ps(_mm256_srai_epi32(v, 4));
                a[2 * c] = _mm256_fmadd_ps(x0, lo4, a[2 * c]);
                a[2 * c + 1] = _mm256_fmadd_ps(x0, hi4, a[2 * c + 1]);
            }
        }
#else
        for (int c = 0; c < P; c++) {
            const int8_t *w = q + c * k;
            float pe = 0.0f, po = 0.0f;
#pragma omp simd reduction(+ : pe, po)
            for (int64_t u = t; u < hi; u++) {
                const int v = w[u];
                pe += x[u] * (float)((int8_t)(v << 4) >> 4);
                po += x[u] * (float)(v >> 4);
            }
            part[2 * c] = pe;
            part[2 * c + 1] = po;
        }
        t = hi;
#endif
        for (; t < hi; t++)
            for (int c = 0; c < P; c++) {
                const int v = q[c * k + t];
                part[2 * c] += x[t] * (float)((int8_t)(v << 4) >> 4);
                part[2 * c + 1] += x[t] * (float)(v >> 4);
            }
        for (int c = 0; c < 2 * P; c++) {
            const float s = grouped ? scale[g * n + 2 * p + c] : 1.0f;
#ifdef WOL_AVX2
            tot[c] = _mm256_fmadd_ps(a[c], _mm256_set1_ps(s), tot[c]);
#endif
            tail[c] += part[c] * s;
        }
    }
    for (int c = 0; c < 2 * P; c++) {
#ifdef WOL_AVX2
        tail[c] += hsum8(tot[c]);
#endif
        res[c] = grouped ? tail[c] : tail[c] * scale[2 * p + c];
    }
}

/* Blocks b0 .. b1 - 1 of four channels (int4: two packed rows), every row of x each. */
static void wol_range(const float *x, const int8_t *q, const float *scale, const float *bias, float *out, int64_t m,
                      int64_t n, int64_t k, int64_t gs, int grouped, int int4, int64_t b0, int64_t b1) {
    const int64_t rows = int4 ? n / 2 : n, per = int4 ? 2 : 4;
    for (int64_t blk = b0; blk < b1; blk++) {
        const int64_t r = blk * per, left = rows - r;
        const int8_t *qr = q + r * k;
        const int64_t ch = int4 ? 2 * r : r; /* first channel */
        const int64_t nch = int4 ? 2 * (left < per ? left : per) : (left < per ? left : per);
        for (int64_t i = 0; i < m; i++) {
            float res[4];
            const float *xi = x + i * k;
            if (!int4) {
                if (left >= 4)
                    i8_block(xi, qr, scale, n, k, gs, grouped, r, 4, res);
                else
                    for (int64_t c = 0; c < left; c++) i8_block(xi, qr + c * k, scale, n, k, gs, grouped, r + c, 1, res + c);
            } else {
                if (left >= 2)
                    i4_block(xi, qr, scale, n, k, gs, grouped, r, 2, res);
                else
                    i4_block(xi, qr, scale, n, k, gs, grouped, r, 1, res);
            }
            float *o = out + i * n + ch;
            for (int64_t c = 0; c < nch; c++) o[c] = res[c] + (bias ? bias[ch + c] : 0.0f);
        }
    }
}

void wol_f32(const float *x, const int8_t *q, const float *scale, const float *bias, float *out, int64_t m,
             int64_t n, int64_t k, int64_t group, int64_t int4, int64_t nt) {
    const int grouped = group > 0;
    const int64_t gs = grouped ? group : (k > 0 ? k : 1);
    const int64_t rows = int4 ? n / 2 : n, per = int4 ? 2 : 4;
    const int64_t blocks = (rows + per - 1) / per;
    if (nt > blocks) nt = blocks;
    if (nt < 1) nt = 1;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int64_t t = 0; t < nt; t++)
        wol_range(x, q, scale, bias, out, m, n, k, gs, grouped, (int)int4, blocks * t / nt, blocks * (t + 1) / nt);
}
