/* Non-temporal row writes (x86): the output goes to memory without first reading its cache
   lines. The pass that stores a row computes it chunk by chunk into a small array (it stays in
   registers) and writes each chunk out at once with non-temporal stores: oarlock_stream64 in
   full 64-byte lines where AVX-512 has them (the destination on a 64-byte line, chunks of
   whole lines), oarlock_stream32 in 32-byte halves (on a 32-byte line); elements after the
   last whole vector are stored plainly. The caller checks the row's alignment
   (OARLOCK_LINE64 / OARLOCK_LINE32: the mask of address bits that must be zero; else it stores
   plainly) and fences once when its rows are done. No alignment test inside: with one the
   loop cost softmax 8-10 % (docs/benchmarks.md). Without AVX every stream is a memcpy.
   Kernels get the lines after this comment as they are (helpers.py reads this file). */
#include <string.h>
#if defined(__AVX__)
#include <immintrin.h>
static inline void oarlock_stream32_f32(float* restrict d, const float* restrict s, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) _mm256_stream_ps(d + j, _mm256_loadu_ps(s + j));
    for (; j < n; ++j) d[j] = s[j];
}
static inline void oarlock_stream32_f64(double* restrict d, const double* restrict s, int64_t n) {
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) _mm256_stream_pd(d + j, _mm256_loadu_pd(s + j));
    for (; j < n; ++j) d[j] = s[j];
}
#define OARLOCK_LINE32 31
#if defined(__AVX512F__)
static inline void oarlock_stream64_f32(float* restrict d, const float* restrict s, int64_t n) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) _mm512_stream_ps(d + j, _mm512_loadu_ps(s + j));
    for (; j < n; ++j) d[j] = s[j];
}
static inline void oarlock_stream64_f64(double* restrict d, const double* restrict s, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) _mm512_stream_pd(d + j, _mm512_loadu_pd(s + j));
    for (; j < n; ++j) d[j] = s[j];
}
#define OARLOCK_LINE64 63
#else
static inline void oarlock_stream64_f32(float* restrict d, const float* restrict s, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) _mm256_stream_ps(d + j, _mm256_loadu_ps(s + j));
    for (; j < n; ++j) d[j] = s[j];
}
static inline void oarlock_stream64_f64(double* restrict d, const double* restrict s, int64_t n) {
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) _mm256_stream_pd(d + j, _mm256_loadu_pd(s + j));
    for (; j < n; ++j) d[j] = s[j];
}
#define OARLOCK_LINE64 31
#endif
#define oarlock_stream_fence() _mm_sfence()
#else
static inline void oarlock_stream32_f32(float* d, const float* s, int64_t n) {
    memcpy(d, s, n * sizeof(float));
}
static inline void oarlock_stream64_f32(float* d, const float* s, int64_t n) {
    memcpy(d, s, n * sizeof(float));
}
static inline void oarlock_stream32_f64(double* d, const double* s, int64_t n) {
    memcpy(d, s, n * sizeof(double));
}
static inline void oarlock_stream64_f64(double* d, const double* s, int64_t n) {
    memcpy(d, s, n * sizeof(double));
}
#define OARLOCK_LINE32 0
#define OARLOCK_LINE64 0
#define oarlock_stream_fence() ((void)0)
#endif
