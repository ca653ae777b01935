/* Layout kernels of the cpu plugin (plugins/cpu/layout.py). */
#include <stdint.h>
#include <string.h>


/* y = a permutation of x's runs of `run` bytes (the trailing axes a permutation keeps, moved
 * as one block). y is written in order: its outer axes are oshape[0..rank) (row-major) and
 * istride[k] is x's byte stride along y's axis k. The input is read as streams of runs, one
 * per position of y's inner axes: numpy's iterator took 3-4x a copy's time for the same
 * bytes in runs of 64 (a strided 4 KB step between neighbouring runs of the output). */
static void copy_runs(char* y, const char* src, int64_t n, int64_t run, int64_t step) {
    if (run == 64) {
        for (int64_t i = 0; i < n; ++i, y += 64, src += step) __builtin_memcpy(y, src, 64);
    } else if (run % 32 == 0) {
        for (int64_t i = 0; i < n; ++i, y += run, src += step)
            for (int64_t c = 0; c < run; c += 32) __builtin_memcpy(y + c, src + c, 32);
    } else if (run % 16 == 0) {
        for (int64_t i = 0; i < n; ++i, y += run, src += step)
            for (int64_t c = 0; c < run; c += 16) __builtin_memcpy(y + c, src + c, 16);
    } else {
        for (int64_t i = 0; i < n; ++i, y += run, src += step) memcpy(y, src, (size_t)run);
    }
}

#if defined(__SSE2__)
#include <immintrin.h>
/* copy_runs with non-temporal stores: y (64-byte aligned) written by whole cache lines
 * without first reading them (run a multiple of 64) */
static void stream_runs(char* y, const char* src, int64_t n, int64_t run, int64_t step) {
    for (int64_t i = 0; i < n; ++i, y += run, src += step)
        for (int64_t c = 0; c < run; c += 16)
            _mm_stream_si128((__m128i*)(y + c), _mm_loadu_si128((const __m128i*)(src + c)));
}
#define OARLOCK_CAN_STREAM 1
#else
#define OARLOCK_CAN_STREAM 0
#endif

/* nt: threads of the OpenMP team, each writing a contiguous share of y's outer positions;
 * stream: write y with non-temporal stores (y 64-byte aligned, run a multiple of 64) */
int permute_runs(const char* restrict x, char* restrict y, int64_t rank, const int64_t* restrict oshape,
                 const int64_t* restrict istride, int64_t run, int nt, int stream) {
    if (stream && (!OARLOCK_CAN_STREAM || run % 64 || ((uintptr_t)y & 63))) stream = 0;
    if (rank < 1 || rank > 16 || run < 1) return 1;
    int64_t total = 1;
    for (int64_t k = 0; k < rank; ++k) total *= oshape[k];
    if (total == 0) return 0;
    const int64_t n = oshape[rank - 1], step = istride[rank - 1], outer = total / n;
    if (nt > outer) nt = (int)outer;
    if (nt < 1) nt = 1;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int t = 0; t < nt; ++t) {
        const int64_t lo = outer * t / nt, hi = outer * (t + 1) / nt;
        int64_t idx[16] = {0}, p = lo;
        const char* base = x;
        for (int64_t k = rank - 2; k >= 0; --k) { /* the multi-index of outer position lo */
            idx[k] = p % oshape[k];
            p /= oshape[k];
            base += idx[k] * istride[k];
        }
        char* yo = y + lo * n * run;
        for (int64_t o = lo; o < hi; ++o, yo += n * run) {
#if OARLOCK_CAN_STREAM
            if (stream)
                stream_runs(yo, base, n, run, step);
            else
#endif
                copy_runs(yo, base, n, run, step);
            for (int64_t k = rank - 2; k >= 0; --k) { /* the next outer position */
                base += istride[k];
                if (++idx[k] < oshape[k]) break;
                base -= istride[k] * oshape[k];
                idx[k] = 0;
            }
        }
#if OARLOCK_CAN_STREAM
        if (stream) _mm_sfence();
#endif
    }
    return 0;
}

/* y = the parts xs[0..nparts) side by side along an axis: each of y's `rows` outer positions
 * holds lens[p] bytes of each part p in turn (a concat; the parts and y C-contiguous). The
 * team's threads take equal contiguous shares of y's bytes: np.concatenate copied the Llama
 * block's three (1, 8, 4, 128, 64) gradients on one thread at ~13 GB/s. */
int concat_rows(const char* const* xs, const int64_t* restrict lens, int64_t nparts, char* restrict y,
                int64_t rows, int nt) {
    int64_t ylen = 0;
    for (int64_t p = 0; p < nparts; ++p) ylen += lens[p];
    const int64_t total = rows * ylen;
    if (total <= 0) return 0;
    if (nt < 1) nt = 1;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int t = 0; t < nt; ++t) {
        int64_t lo = total * t / nt;
        const int64_t hi = total * (t + 1) / nt;
        if (lo >= hi) continue;
        int64_t r = lo / ylen, off = lo % ylen, p = 0;
        while (off >= lens[p]) off -= lens[p++]; /* the part and offset of byte lo */
        while (lo < hi) {
            int64_t n = lens[p] - off;
            if (n > hi - lo) n = hi - lo;
            memcpy(y + lo, xs[p] + r * lens[p] + off, (size_t)n);
            lo += n;
            off += n;
            if (off == lens[p]) {
                off = 0;
                if (++p == nparts) {
                    p = 0;
                    ++r;
                }
            }
        }
    }
    return 0;
}
