/* Batch-small weight-only products for the CPU plugin (plugins/cpu/quant.py builds it):
 * out[i, j] = sum_g scale[g, j] * sum_{t in group g} x[i, t] * q_j[t]  (+ bias[j]),
 * reading each weight as one byte (int8) or half a byte (int4) instead of four: what a
 * memory-bound decoding step at batch 1 needs. One thread (an OpenMP team cost ~50 us a call
 * on the loaded 2-core VM, more than a tiny Llama layer takes). q is [n, k] int8, or [n / 2, k] with channel
 * 2r in the low nibble of row r and 2r + 1 in the high one (two's complement); scale is [n]
 * (group <= 0) or [ceil(k / group), n].
 */
#include <stdint.h>

static float dot_i8(const float *x, const int8_t *w, int64_t lo, int64_t hi) {
    float part = 0.0f;
#pragma omp simd reduction(+ : part)
    for (int64_t t = lo; t < hi; t++) part += x[t] * (float)w[t];
    return part;
}

/* both channels of a packed int4 row at once: the row is read once */
static void dot_i4(const float *x, const int8_t *w, int64_t lo, int64_t hi, float *even, float *odd) {
    float a = 0.0f, b = 0.0f;
#pragma omp simd reduction(+ : a, b)
    for (int64_t t = lo; t < hi; t++) {
        const int v = w[t];
        a += x[t] * (float)((int8_t)(v << 4) >> 4);
        b += x[t] * (float)(v >> 4);
    }
    *even = a;
    *odd = b;
}

void wol_f32(const float *x, const int8_t *q, const float *scale, const float *bias, float *out, int64_t m,
             int64_t n, int64_t k, int64_t group, int64_t int4) {
    const int64_t gs = group > 0 ? group : k;
    const int64_t ng = (k + gs - 1) / gs;
    const int64_t rows = int4 ? n / 2 : n;

    for (int64_t r = 0; r < rows; r++) {
        const int8_t *row = q + r * k;
        for (int64_t i = 0; i < m; i++) {
            const float *xi = x + i * k;
            float acc0 = 0.0f, acc1 = 0.0f;
            for (int64_t g = 0; g < ng; g++) {
                const int64_t lo = g * gs, hi = lo + gs < k ? lo + gs : k;
                const float *sg = scale + (group > 0 ? g * n : 0);
                if (int4) {
                    float e, o;
                    dot_i4(xi, row, lo, hi, &e, &o);
                    acc0 += e * sg[2 * r];
                    acc1 += o * sg[2 * r + 1];
                } else {
                    acc0 += dot_i8(xi, row, lo, hi) * sg[r];
                }
            }
            if (int4) {
                out[i * n + 2 * r] = acc0 + (bias ? bias[2 * r] : 0.0f);
                out[i * n + 2 * r + 1] = acc1 + (bias ? bias[2 * r + 1] : 0.0f);
            } else {
                out[i * n + r] = acc0 + (bias ? bias[r] : 0.0f);
            }
        }
    }
}
