/* Batch-small weight-only products for the CPU plugin (plugins/cpu/quant.py builds it):
 * out[i, j] = sum_g scale[g, j] * sum_{t in group g} x[i, t] * q_j[t]  (+ bias[j]),
 * reading each weight as one byte (int8, float8_e4m3fn) or half a byte (int4) instead of
 * four: what a memory-bound decoding step at batch 1 needs. q is [n, k] int8 or float8
 * codes, or [n / 2, k] with channel 2r in the low nibble of row r and 2r + 1 in the high one
 * (two's complement); scale is [n] (group <= 0) or [ceil(k / group), n]. `kind` says which:
 * 0 int8, 1 int4, 2 fp8.
 *
 * The weights stream once, one channel (byte row, or packed int4 row) after the other: a row
 * is widened to float in registers and multiplied into every row of x while it sits in L1
 * (fp32 products and sums); nothing is written but out. NOTE: one row at a time, with a
 * software prefetch PREFETCH bytes ahead, reads the weights as one sequential stream: four
 * rows read side by side (the earlier layout of this loop, -DWOL_CHANNELS=4) streamed 8-9 G
 * int8 weights/s from memory on a Zen 4, one row 15 (one thread; float32 BLAS's GEMV 23 GB/s). int8 widens by sign extension and a
 * convert; float8 by a shift and a mask into float16 (its value / 256, exact) and the F16C /
 * AVX-512 half-to-float convert, the 256 folded into the scale. A group's partial products
 * stay in vector accumulators and are scaled once at the group's end (an FMA per group and
 * channel), the per-channel scale once at the end. Three builds of the same loop (the plugin
 * builds with -march=native, so the compiler is the CPU check and the kernel cache is keyed by
 * the CPU): AVX-512 (64 byte weights a channel per step, then the AVX2 steps for the rest of a
 * group), AVX2/FMA/F16C (32, 8), and a portable omp simd loop; -DWOL_NO_AVX512 / -DWOL_NO_AVX2
 * force the narrower ones (the tests run each). Leftover weights of a group (its length not a
 * multiple of 8) and channels (n not a multiple of the block) take scalar / one-channel paths;
 * int4 has the AVX2 and portable loops. The channels are cut into nt contiguous ranges
 * for the OpenMP team (the one the generated kernels and split products use): nt = 1 for
 * weights too small to pay for a second thread.
 */
#include <stdint.h>
#include <string.h>
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && !defined(WOL_NO_AVX2)
#include <immintrin.h>
#define WOL_AVX2 1
#ifndef PREFETCH
#define PREFETCH 2048 /* bytes ahead in the weight stream */
#endif
#if defined(__AVX512F__) && defined(__AVX512BW__) && !defined(WOL_NO_AVX512)
#define WOL_AVX512 1
#endif
#endif

#define INLINE static inline __attribute__((always_inline))

/* Channels a block (byte kinds) and packed rows a block (int4): one by default, so the
 * weights are read as one sequential stream (four rows read side by side streamed at less
 * than half the bandwidth: the prefetchers follow one stream, not four; see quant.py). */
#ifndef WOL_CHANNELS
#define WOL_CHANNELS 1
#endif
#ifndef WOL_PACKED_ROWS
#define WOL_PACKED_ROWS 1
#endif

/* weight kinds (the kernel's `kind` argument) */
enum { K_INT8 = 0, K_INT4 = 1, K_FP8 = 2 };

/* A float8_e4m3fn byte's value (the NaN codes 0x7f / 0xff read as 480: the caller never
 * passes them). Normal: sign, exponent + 120, mantissa << 20; subnormal: m * 2^-9. */
INLINE float fp8_val(int8_t v) {
    const uint32_t b = (uint8_t)v, e = (b >> 3) & 15, m = b & 7;
    float r;
    if (e) {
        const uint32_t bits = ((b & 0x80u) << 24) | ((e + 120u) << 23) | (m << 20);
        memcpy(&r, &bits, 4);
        return r;
    }
    r = (float)m * (1.0f / 512.0f);
    return (b & 0x80u) ? -r : r;
}

INLINE float byte_val(int8_t v, const int kind) { return kind == K_FP8 ? fp8_val(v) : (float)v; }

#ifdef WOL_AVX2
/* The vector paths widen float8 through float16: the byte's sign to bit 15 and its seven
 * other bits to bits 13..7 make the float16 of value / 256 exactly (normal and subnormal
 * alike), which F16C / AVX-512 convert; the 256 joins the scale at the group's end. */
#define FP8_UNIT 256.0f

INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* 8 int8 weights, sign-extended to int32 */
INLINE __m256i ld8(const int8_t *p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)); }

/* 8 weights widened to float (fp8: value / 256) */
INLINE __m256 w8(const int8_t *p, const int kind) {
    if (kind == K_FP8) {
        const __m128i h = _mm_slli_epi16(_mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)p)), 7);
        return _mm256_cvtph_ps(_mm_and_si128(h, _mm_set1_epi16((short)0xBF80)));
    }
    return _mm256_cvtepi32_ps(ld8(p));
}
#else
#define FP8_UNIT 1.0f
#endif

#ifdef WOL_AVX512
INLINE __m512 w16(const int8_t *p, const int kind) {
    const __m128i b = _mm_loadu_si128((const __m128i *)p);
    if (kind == K_FP8) {
        const __m256i h = _mm256_slli_epi16(_mm256_cvtepi8_epi16(b), 7);
        return _mm512_cvtph_ps(_mm256_and_si256(h, _mm256_set1_epi16((short)0xBF80)));
    }
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
}
#endif

/* One row x of the product with C byte channels r .. r + C - 1 (int8 or float8 rows of q at
 * q, stride k): res[c] = sum over groups of scale * partial (grouped), or scale[r + c] * sum. */
INLINE void byte_block(const float *restrict x, const int8_t *restrict q, const float *restrict scale, int64_t n,
                       int64_t k, int64_t gs, int grouped, int64_t r, const int C, const int kind,
                       float *restrict res) {
    float tail[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const float unit = kind == K_FP8 ? FP8_UNIT : 1.0f;
#ifdef WOL_AVX512
    __m512 tot[4]; /* the channel's scaled sum, reduced once at the end */
    for (int c = 0; c < C; c++) tot[c] = _mm512_setzero_ps();
#elif defined(WOL_AVX2)
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
#ifdef WOL_AVX512
        __m512 a5[4], b5[4], c5[4], d5[4]; /* four chains a channel: the FMA latency hidden */
        for (int c = 0; c < C; c++) a5[c] = b5[c] = c5[c] = d5[c] = _mm512_setzero_ps();
        for (; t + 64 <= hi; t += 64) {
            const __m512 x0 = _mm512_loadu_ps(x + t), x1 = _mm512_loadu_ps(x + t + 16);
            const __m512 x2 = _mm512_loadu_ps(x + t + 32), x3 = _mm512_loadu_ps(x + t + 48);
            for (int c = 0; c < C; c++) {
                const int8_t *w = q + c * k + t;
                _mm_prefetch((const char *)(w + PREFETCH), _MM_HINT_T0);
                a5[c] = _mm512_fmadd_ps(x0, w16(w, kind), a5[c]);
                b5[c] = _mm512_fmadd_ps(x1, w16(w + 16, kind), b5[c]);
                c5[c] = _mm512_fmadd_ps(x2, w16(w + 32, kind), c5[c]);
                d5[c] = _mm512_fmadd_ps(x3, w16(w + 48, kind), d5[c]);
            }
        }
#endif
        for (; t + 32 <= hi; t += 32) {
            const __m256 x0 = _mm256_loadu_ps(x + t), x1 = _mm256_loadu_ps(x + t + 8);
            const __m256 x2 = _mm256_loadu_ps(x + t + 16), x3 = _mm256_loadu_ps(x + t + 24);
            for (int c = 0; c < C; c++) {
                const int8_t *w = q + c * k + t;
                _mm_prefetch((const char *)(w + PREFETCH), _MM_HINT_T0);
                a[c] = _mm256_fmadd_ps(x0, w8(w, kind), a[c]);
                b[c] = _mm256_fmadd_ps(x1, w8(w + 8, kind), b[c]);
                a[c] = _mm256_fmadd_ps(x2, w8(w + 16, kind), a[c]);
                b[c] = _mm256_fmadd_ps(x3, w8(w + 24, kind), b[c]);
            }
        }
        for (; t + 8 <= hi; t += 8) {
            const __m256 x0 = _mm256_loadu_ps(x + t);
            for (int c = 0; c < C; c++) a[c] = _mm256_fmadd_ps(x0, w8(q + c * k + t, kind), a[c]);
        }
#else
        for (int c = 0; c < C; c++) {
            const int8_t *w = q + c * k;
            float p = 0.0f;
#pragma omp simd reduction(+ : p)
            for (int64_t u = t; u < hi; u++) p += x[u] * byte_val(w[u], kind);
            part[c] = p;
        }
        t = hi;
#endif
        for (; t < hi; t++)
            for (int c = 0; c < C; c++) part[c] += x[t] * byte_val(q[c * k + t], kind);
        for (int c = 0; c < C; c++) {
            const float s = grouped ? scale[g * n + r + c] : 1.0f;
#ifdef WOL_AVX512
            const __m512 s5 = _mm512_add_ps(_mm512_add_ps(a5[c], b5[c]), _mm512_add_ps(c5[c], d5[c]));
            const __m512 ab = _mm512_zextps256_ps512(_mm256_add_ps(a[c], b[c]));
            tot[c] = _mm512_fmadd_ps(_mm512_add_ps(s5, ab), _mm512_set1_ps(s * unit), tot[c]);
#elif defined(WOL_AVX2)
            tot[c] = _mm256_fmadd_ps(_mm256_add_ps(a[c], b[c]), _mm256_set1_ps(s * unit), tot[c]);
#endif
            tail[c] += part[c] * s;
        }
    }
    for (int c = 0; c < C; c++) {
#ifdef WOL_AVX512
        tail[c] += _mm512_reduce_add_ps(tot[c]);
#elif defined(WOL_AVX2)
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

/* Blocks b0 .. b1 - 1 of WOL_CHANNELS channels (int4: WOL_PACKED_ROWS packed rows), every row of x each. */
static void wol_range(const float *x, const int8_t *q, const float *scale, const float *bias, float *out, int64_t m,
                      int64_t n, int64_t k, int64_t gs, int grouped, int kind, int64_t b0, int64_t b1) {
    const int int4 = kind == K_INT4;
    const int64_t rows = int4 ? n / 2 : n, per = int4 ? WOL_PACKED_ROWS : WOL_CHANNELS;
    for (int64_t blk = b0; blk < b1; blk++) {
        const int64_t r = blk * per, left = rows - r;
        const int8_t *qr = q + r * k;
        const int64_t ch = int4 ? 2 * r : r; /* first channel */
        const int64_t nch = int4 ? 2 * (left < per ? left : per) : (left < per ? left : per);
        for (int64_t i = 0; i < m; i++) {
            float res[4];
            const float *xi = x + i * k;
            if (kind == K_INT8) {
                if (left >= WOL_CHANNELS)
                    byte_block(xi, qr, scale, n, k, gs, grouped, r, WOL_CHANNELS, K_INT8, res);
                else
                    for (int64_t c = 0; c < left; c++)
                        byte_block(xi, qr + c * k, scale, n, k, gs, grouped, r + c, 1, K_INT8, res + c);
            } else if (kind == K_FP8) {
                if (left >= WOL_CHANNELS)
                    byte_block(xi, qr, scale, n, k, gs, grouped, r, WOL_CHANNELS, K_FP8, res);
                else
                    for (int64_t c = 0; c < left; c++)
                        byte_block(xi, qr + c * k, scale, n, k, gs, grouped, r + c, 1, K_FP8, res + c);
            } else {
                if (left >= WOL_PACKED_ROWS)
                    i4_block(xi, qr, scale, n, k, gs, grouped, r, WOL_PACKED_ROWS, res);
                else
                    i4_block(xi, qr, scale, n, k, gs, grouped, r, 1, res);
            }
            float *o = out + i * n + ch;
            for (int64_t c = 0; c < nch; c++) o[c] = res[c] + (bias ? bias[ch + c] : 0.0f);
        }
    }
}

void wol_f32(const float *x, const int8_t *q, const float *scale, const float *bias, float *out, int64_t m,
             int64_t n, int64_t k, int64_t group, int64_t kind, int64_t nt) {
    const int int4 = kind == K_INT4;
    const int grouped = group > 0;
    const int64_t gs = grouped ? group : (k > 0 ? k : 1);
    const int64_t rows = int4 ? n / 2 : n, per = int4 ? WOL_PACKED_ROWS : WOL_CHANNELS;
    const int64_t blocks = (rows + per - 1) / per;
    if (nt > blocks) nt = blocks;
    if (nt < 1) nt = 1;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int64_t t = 0; t < nt; t++)
        wol_range(x, q, scale, bias, out, m, n, k, gs, grouped, (int)kind, blocks * t / nt, blocks * (t + 1) / nt);
}
