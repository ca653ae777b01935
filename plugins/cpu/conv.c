/* The CPU plugin's 2-d convolution (plugins/cpu/conv.py builds it): im2col by blocks of output
 * columns into a scratch that stays in the cache, each block one BLAS product.
 *
 * x (n, c, h, w) and wt (o, c/groups, kh, kw), both C-contiguous, y (n, o, oh, ow). The work is
 * cut into items (image, group, block of `cb` output positions); each OpenMP thread takes items
 * in turn, writes the block's columns (c/groups * kh * kw rows of cb values, zero where the
 * window reads padding) into its own scratch and multiplies the group's weight rows by them
 * into y. A 1x1 kernel of stride 1 without padding reads x in place (no copy). BLAS is the
 * one the plugin's products use (its cblas_?gemm at address fn; ilp64: 64-bit integers), run
 * on one thread inside each item. Returns 0, or 1 when the scratch cannot be allocated.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifdef T_DOUBLE
#define T double
#else
#define T float
#endif

typedef void (*gemm64_t)(int, int, int, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, T*,
                         int64_t);
typedef void (*gemm32_t)(int, int, int, int, int, int, T, const T*, int, const T*, int, T, T*, int);

enum { ROW_MAJOR = 101, NO_TRANS = 111 };

static void product(int64_t fn, int ilp64, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
                    int64_t ldb, T* c, int64_t ldc) {
    if (ilp64)
        ((gemm64_t)(intptr_t)fn)(ROW_MAJOR, NO_TRANS, NO_TRANS, m, n, k, (T)1, a, lda, b, ldb, (T)0, c, ldc);
    else
        ((gemm32_t)(intptr_t)fn)(ROW_MAJOR, NO_TRANS, NO_TRANS, (int)m, (int)n, (int)k, (T)1, a, (int)lda, b,
                                 (int)ldb, (T)0, c, (int)ldc);
}

/* the columns l0 .. l0+nl of one group's im2col (rows: channel, kernel row, kernel column) */
static void columns(const T* x, int64_t cg, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t ow, int64_t sh,
                    int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t l0, int64_t nl, T* col) {
    for (int64_t c = 0; c < cg; ++c) {
        const T* xc = x + c * h * w;
        for (int64_t i = 0; i < kh; ++i) {
            for (int64_t j = 0; j < kw; ++j) {
                T* row = col + ((c * kh + i) * kw + j) * nl;
                int64_t l = l0, end = l0 + nl;
                while (l < end) {
                    const int64_t oy = l / ow, ox0 = l % ow;
                    int64_t run = ow - ox0;
                    if (run > end - l) run = end - l;
                    const int64_t iy = oy * sh - ph + i * dh;
                    T* dst = row + (l - l0);
                    if (iy < 0 || iy >= h) {
                        memset(dst, 0, (size_t)run * sizeof(T));
                    } else {
                        const T* src = xc + iy * w;
                        const int64_t base = ox0 * sw - pw + j * dw;
                        if (sw == 1 && base >= 0 && base + run <= w) {
                            memcpy(dst, src + base, (size_t)run * sizeof(T));
                        } else {
                            for (int64_t t = 0; t < run; ++t) {
                                const int64_t ix = base + t * sw;
                                dst[t] = (ix >= 0 && ix < w) ? src[ix] : (T)0;
                            }
                        }
                    }
                    l += run;
                }
            }
        }
    }
}

int conv2d_fwd(int64_t fn, int ilp64, const void* x_, const void* wt_, void* y_, int64_t n, int64_t c, int64_t h,
               int64_t w, int64_t o, int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw,
               int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t groups, int64_t cb, int nt) {
    const T *x = x_, *wt = wt_;
    T* y = y_;
    const int64_t cg = c / groups, og = o / groups, k = cg * kh * kw, l = oh * ow;
    const int direct = kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 && dh == 1 && dw == 1;
    if (cb < 1 || cb > l) cb = l;
    const int64_t blocks = (l + cb - 1) / cb, items = n * groups * blocks;
    if (nt > items) nt = (int)items;
    if (nt < 1) nt = 1;
    T* scratch = NULL;
    if (!direct) {
        scratch = malloc((size_t)nt * (size_t)(k * cb) * sizeof(T));
        if (!scratch) return 1;
    }
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int64_t it = 0; it < items; ++it) {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        const int64_t b = it % blocks, g = (it / blocks) % groups, i = it / (blocks * groups);
        const int64_t l0 = b * cb, nl = (l0 + cb <= l) ? cb : l - l0;
        const T* xg = x + (i * c + g * cg) * h * w;
        T* yg = y + (i * o + g * og) * l + l0;
        if (direct) {
            product(fn, ilp64, og, nl, k, wt + g * og * k, k, xg + l0, l, yg, l);
        } else {
            T* col = scratch + (int64_t)tid * k * cb;
            columns(xg, cg, h, w, kh, kw, ow, sh, sw, ph, pw, dh, dw, l0, nl, col);
            product(fn, ilp64, og, nl, k, wt + g * og * k, k, col, nl, yg, l);
        }
    }
    free(scratch);
    return 0;
}
