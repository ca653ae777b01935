/* The CPU plugin's 2-d convolution (plugins/cpu/conv.py builds it).
 *
 * x (n, c, h, w) and wt (o, c/groups, kh, kw), both C-contiguous, y (n, o, oh, ow). Two paths:
 *
 * - implicit (kernels larger than 1x1, implicit_ok): x is copied once, zero-padded and split by
 *   stride phases, so that every row of the im2col matrix is a run of that copy; a register-tiled
 *   product (small_product) reads the runs in place. Items (image, group, block of output rows)
 *   go to the OpenMP team.
 * - im2col (1x1 kernels): items (image, group, block of `cb` output positions); each thread
 *   writes the block's columns into its own scratch (zero where the window reads padding) and
 *   multiplies the group's weight rows by them with BLAS (the plugin's cblas_?gemm at address
 *   fn; ilp64: 64-bit integers; one thread inside each item). A 1x1 kernel of stride 1 without
 *   padding reads x in place.
 *
 * Items are taken dynamically: a thread the OS puts off takes fewer. The padded copy or the
 * scratch is buf (buf_elems elements) where it is large enough (the caller keeps it between
 * runs: a fresh malloc of a few hundred KB is an mmap whose pages fault in on every call), else
 * allocated here. Returns 0, or 1 when memory cannot be allocated.
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

/* NOTE: the product of a group's weight rows (og x k, few rows) by a block of columns (k x nl,
 * row stride ldb, readable up to a whole tile past nl) in register tiles of MR rows by NV
 * vectors: BLAS packs both operands on every call, which costs as much as the arithmetic when
 * og is 16-64 and the block a few hundred columns. The weights are packed once per call
 * (pack: a tile's MR weights of one column of b are adjacent), the columns read in place. GCC's
 * vector extensions (-march=native), the scalar broadcast by the multiply: 32-byte vectors
 * (AVX2's 8 floats) in tiles of 4 rows x 3 vectors. CONV_VEC=64 (AVX-512's 16 floats, tiles of
 * 8 x 2), CONV_MR and CONV_NV build other tiles (conv.py's TILE_OPTIONS): on the AMD EPYC
 * (Zen 4) VM AVX-512 and the other tiles tried (4x4, 6x4, 8x3, 8x2 of 8 floats) ran no faster,
 * within the noise of a loaded machine (docs/benchmarks.md); its 64-byte loads of b, at any
 * float offset, all cross a cache line. */
#if defined(CONV_VEC)
#define VB CONV_VEC
#else
#define VB 32
#endif
#if defined(CONV_MR)
#define MR CONV_MR
#elif VB == 64
#define MR 8
#else
#define MR 4
#endif
#if defined(CONV_NV)
#define NV CONV_NV
#elif VB == 64
#define NV 2
#else
#define NV 3
#endif
#define VW ((int64_t)(VB / sizeof(T)))
typedef T vec __attribute__((vector_size(VB)));

static inline vec loadu(const T* p) {
    vec v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* c's columns j .. j+cols: plain (wp 0), or positions of a wp-wide grid of which each row's first
 * ow are outputs (rows of ow in c) and the rest are dropped */
static inline void store(T* c, const T* v, int64_t j, int64_t cols, int64_t wp, int64_t ow) {
    if (!wp) {
        memcpy(c + j, v, (size_t)cols * sizeof(T));
        return;
    }
    int64_t row = j / wp, q = j % wp;
    for (int64_t t = 0; t < cols;) {
        const int64_t seg = wp - q < cols - t ? wp - q : cols - t;
        const int64_t valid = ow - q < seg ? (ow > q ? ow - q : 0) : seg;
        memcpy(c + row * ow + q, v + t, (size_t)valid * sizeof(T));
        t += seg;
        q = 0;
        ++row;
    }
}

/* one tile: MR rows of the packed weights (ap: k x MR, row r of the tile at ap[p * MR + r], zero
 * past the group's rows) by nv (at most NV; a constant where inlined) vectors of columns j.. of b;
 * the first `rows` rows stored */
static inline __attribute__((always_inline)) void tile(const int nv, int64_t rows, int64_t k, const T* ap, const T* b,
                                                       int64_t ldb, const int64_t* off, T* c, int64_t ldc, int64_t j,
                                                       int64_t cols, int64_t wp, int64_t ow) {
    vec acc[MR][NV];
    for (int r = 0; r < MR; ++r)
        for (int v = 0; v < nv; ++v) acc[r][v] = (vec){0};
    b += j;
    for (int64_t p = 0; p < k; ++p) {
        const T* bp = off ? b + off[p] : b + p * ldb;
        const T* ar = ap + p * MR;
        vec bv[NV];
        for (int v = 0; v < nv; ++v) bv[v] = loadu(bp + v * VW);
        for (int r = 0; r < MR; ++r)
            for (int v = 0; v < nv; ++v) acc[r][v] += bv[v] * ar[r];
    }
    for (int64_t r = 0; r < rows; ++r) {
        T tmp[NV * VW];
        memcpy(tmp, acc[r], (size_t)nv * sizeof(vec));
        store(c + r * ldc, tmp, j, cols, wp, ow);
    }
}

/* the weights of a group (m x k, row stride lda) packed for tile: ceil(m / MR) panels of k x MR,
 * rows past m zero */
static void pack(int64_t m, int64_t k, const T* a, int64_t lda, T* ap) {
    for (int64_t i = 0; i < m; i += MR, ap += k * MR)
        for (int64_t p = 0; p < k; ++p)
            for (int64_t r = 0; r < MR; ++r) ap[p * MR + r] = i + r < m ? a[(i + r) * lda + p] : (T)0;
}

/* c (m rows, row stride ldc) = a (m x k, packed by pack) @ b (k x n), b's row p at b + p * ldb, or
 * at b + off[p] given off, readable a whole tile past n; with wp, column j of b is output
 * (j / wp, j % wp) of ow-wide rows in c, kept where j % wp < ow (store) */
static void small_product(int64_t m, int64_t n, int64_t k, const T* ap, const T* b, int64_t ldb, const int64_t* off,
                          T* c, int64_t ldc, int64_t wp, int64_t ow) {
    for (int64_t j = 0; j < n; j += NV * VW) {
        const int64_t cols = n - j < NV * VW ? n - j : NV * VW;
        const int nv = (int)((cols + VW - 1) / VW); /* the last tile: as few vectors as it needs */
        for (int64_t i = 0; i < m; i += MR) {
            const int64_t rows = m - i < MR ? m - i : MR;
            T* ci = c + i * ldc;
            if (nv == NV)
                tile(NV, rows, k, ap + i * k, b, ldb, off, ci, ldc, j, cols, wp, ow);
#if NV > 1
            else if (nv == 1)
                tile(1, rows, k, ap + i * k, b, ldb, off, ci, ldc, j, cols, wp, ow);
#endif
#if NV > 2
            else if (nv == 2)
                tile(2, rows, k, ap + i * k, b, ldb, off, ci, ldc, j, cols, wp, ow);
#endif
            else
                tile(NV, rows, k, ap + i * k, b, ldb, off, ci, ldc, j, cols, wp, ow);
        }
    }
}

/* the columns l0 .. l0+nl of one group's im2col (rows: channel, kernel row, kernel column; row
 * stride ldb), zero where the window reads padding */
static void columns(const T* x, int64_t cg, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t ow, int64_t sh,
                    int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t l0, int64_t nl, int64_t ldb,
                    T* col) {
    const int64_t oy0 = l0 / ow, oy1 = (l0 + nl - 1) / ow;
    for (int64_t c = 0; c < cg; ++c) {
        const T* xc = x + c * h * w;
        for (int64_t i = 0; i < kh; ++i) {
            for (int64_t j = 0; j < kw; ++j) {
                T* row = col + ((c * kh + i) * kw + j) * ldb - l0; /* indexed by output position */
                const int64_t off = j * dw - pw;                   /* ix = ox * sw + off */
                const int64_t xlo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                const int64_t xhi = w - off <= 0 ? 0 : (w - off + sw - 1) / sw;
                for (int64_t oy = oy0; oy <= oy1; ++oy) {
                    const int64_t base = oy * ow;
                    const int64_t a = (base < l0 ? l0 : base) - base;
                    const int64_t b = (base + ow > l0 + nl ? l0 + nl : base + ow) - base;
                    T* d = row + base;
                    const int64_t iy = oy * sh - ph + i * dh;
                    if (iy < 0 || iy >= h) {
                        for (int64_t ox = a; ox < b; ++ox) d[ox] = (T)0;
                        continue;
                    }
                    const T* src = xc + iy * w + off;
                    int64_t lo = xlo > a ? xlo : a, hi = xhi < b ? xhi : b;
                    if (lo > b) lo = b;
                    if (hi < lo) hi = lo;
                    for (int64_t ox = a; ox < lo; ++ox) d[ox] = (T)0;
                    if (sw == 1)
                        for (int64_t ox = lo; ox < hi; ++ox) d[ox] = src[ox];
                    else
                        for (int64_t ox = lo; ox < hi; ++ox) d[ox] = src[ox * sw];
                    for (int64_t ox = hi; ox < b; ++ox) d[ox] = (T)0;
                }
            }
        }
    }
}

/* No im2col: x is copied once into a zero-padded buffer split by stride phases (plane (rp, cp) of a
 * channel holds the padded rows rp, rp + sh, ... and columns cp, cp + sw, ...; hq x wq each), so
 * that row p = (channel, kernel row i, kernel column j) of the columns of output (oy, ox) is that
 * buffer at off[p] + oy * wq + ox: the product reads it in place, consecutive outputs
 * consecutive in memory (as a wq-wide grid whose first ow columns are kept). */
static int implicit(const T* x, const T* wt, T* y, int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int64_t kh,
                    int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                    int64_t dw, int64_t groups, int64_t rows, T* buf, int64_t buf_elems, int nt) {
    const int64_t cg = c / groups, og = o / groups, k = cg * kh * kw;
    const int64_t hp = (oh - 1) * sh + (kh - 1) * dh + 1, wp = (ow - 1) * sw + (kw - 1) * dw + 1;
    const int64_t hq = (hp + sh - 1) / sh, wq = (wp + sw - 1) / sw, sub = hq * wq, plane = sh * sw * sub;
    const int64_t slack = wq + NV * VW; /* what a tile reads past the last plane */
    const int64_t need = n * c * plane + slack;
    T* own = buf_elems >= need ? NULL : malloc((size_t)need * sizeof(T));
    T* xp = own ? own : buf;
    int64_t* off = malloc((size_t)k * sizeof(int64_t));
    const int64_t panels = (og + MR - 1) / MR * MR * k; /* a group's packed weights */
    T* ap = malloc((size_t)(groups * panels) * sizeof(T));
    if (!xp || !off || !ap) {
        free(own);
        free(off);
        free(ap);
        return 1;
    }
    for (int64_t g = 0; g < groups; ++g) pack(og, k, wt + g * og * k, k, ap + g * panels);
    for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t i = 0; i < kh; ++i)
            for (int64_t j = 0; j < kw; ++j) {
                const int64_t ry = i * dh, rx = j * dw;
                off[(ci * kh + i) * kw + j] =
                    ci * plane + ((ry % sh) * sw + rx % sw) * sub + (ry / sh) * wq + rx / sw;
            }
    memset(xp + n * c * plane, 0, (size_t)slack * sizeof(T));
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int64_t pc = 0; pc < n * c; ++pc) {
        const T* src = x + pc * h * w;
        for (int64_t rp = 0; rp < sh; ++rp)
            for (int64_t cp = 0; cp < sw; ++cp)
                for (int64_t t = 0; t < hq; ++t) {
                    T* d = xp + pc * plane + (rp * sw + cp) * sub + t * wq;
                    const int64_t iy = t * sh + rp - ph;
                    if (iy < 0 || iy >= h) {
                        memset(d, 0, (size_t)wq * sizeof(T));
                        continue;
                    }
                    const T* sr = src + iy * w;
                    if (sw == 1) { /* columns q read x's column q - pw: zero left of q0 and from q1 */
                        const int64_t q0 = pw < wq ? pw : wq, q1 = w + pw < wq ? w + pw : wq;
                        memset(d, 0, (size_t)q0 * sizeof(T));
                        memcpy(d + q0, sr + q0 - pw, (size_t)(q1 - q0) * sizeof(T));
                        memset(d + q1, 0, (size_t)(wq - q1) * sizeof(T));
                        continue;
                    }
                    for (int64_t q = 0; q < wq; ++q) { /* NOTE: measured faster than memset + strided copy */
                        const int64_t ix = q * sw + cp - pw;
                        d[q] = (ix >= 0 && ix < w) ? sr[ix] : (T)0;
                    }
                }
    }
    const int64_t blocks = (oh + rows - 1) / rows, items = n * groups * blocks;
#pragma omp parallel for schedule(dynamic) num_threads(nt) if (nt > 1)
    for (int64_t it = 0; it < items; ++it) {
        const int64_t b = it % blocks, g = (it / blocks) % groups, i = it / (blocks * groups);
        const int64_t r0 = b * rows, r1 = (b + 1) * rows < oh ? (b + 1) * rows : oh;
        small_product(og, (r1 - r0 - 1) * wq + ow, k, ap + g * panels, xp + (i * c + g * cg) * plane + r0 * wq, 0,
                      off, y + ((i * o + g * og) * oh + r0) * ow, oh * ow, wq, ow);
    }
    free(ap);
    free(off);
    free(own);
    return 0;
}

int conv2d_fwd(int64_t fn, int ilp64, const void* x_, const void* wt_, void* y_, int64_t n, int64_t c, int64_t h,
               int64_t w, int64_t o, int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw,
               int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t groups, int64_t cb, int implicit_ok,
               void* buf_, int64_t buf_elems, int nt) {
    const T *x = x_, *wt = wt_;
    T* y = y_;
    const int64_t cg = c / groups, og = o / groups, k = cg * kh * kw, l = oh * ow;
    const int direct = kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 && dh == 1 && dw == 1;
    if (implicit_ok && (kh > 1 || kw > 1)) { /* a 1x1 kernel reads a quarter of a strided copy */
        int64_t rows = cb / ow < 1 ? 1 : cb / ow, per = n * groups;
        if (per * ((oh + rows - 1) / rows) < nt) rows = (oh * per + nt - 1) / nt < 1 ? 1 : (oh * per + nt - 1) / nt;
        return implicit(x, wt, y, n, c, h, w, o, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, groups, rows, buf_, buf_elems,
                        nt);
    }
    if (cb < 1 || cb > l) cb = l;
    const int64_t blocks = (l + cb - 1) / cb, items = n * groups * blocks;
    if (nt > items) nt = (int)items;
    if (nt < 1) nt = 1;
    T *scratch = NULL, *own = NULL;
    if (!direct) {
        scratch = buf_elems >= nt * k * cb ? (T*)buf_ : (own = malloc((size_t)nt * (size_t)(k * cb) * sizeof(T)));
        if (!scratch) return 1;
    }
#pragma omp parallel for schedule(dynamic) num_threads(nt) if (nt > 1)
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
            columns(xg, cg, h, w, kh, kw, ow, sh, sw, ph, pw, dh, dw, l0, nl, nl, col);
            product(fn, ilp64, og, nl, k, wt + g * og * k, k, col, nl, yg, l);
        }
    }
    free(own);
    return 0;
}

/* unfold (im2col) of x (n, c, h, w) into y (n, c*kh*kw, oh*ow): one row of y per (image, channel,
 * kernel offset), zero where the window reads padding; rows go to the OpenMP team (no scratch). */
int unfold2d(const void* x_, void* y_, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t oh,
             int64_t ow, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int nt) {
    const T* x = x_;
    T* y = y_;
    const int64_t rows = n * c * kh * kw, l = oh * ow;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t kj = r % kw, ki = (r / kw) % kh, plane = r / (kh * kw);
        const T* xp = x + plane * h * w;
        T* yr = y + r * l;
        for (int64_t i = 0; i < oh; ++i) {
            const int64_t yi = i * sh - ph + ki * dh;
            T* yo = yr + i * ow;
            if (yi < 0 || yi >= h) {
                memset(yo, 0, (size_t)ow * sizeof(T));
                continue;
            }
            const T* xrow = xp + yi * w;
            const int64_t x0 = kj * dw - pw;
            for (int64_t j = 0; j < ow; ++j) {
                const int64_t xj = j * sw + x0;
                yo[j] = (xj >= 0 && xj < w) ? xrow[xj] : (T)0;
            }
        }
    }
    return 0;
}

/* col2im for conv2d_transpose: cols (n, co*kh*kw, h*w), the products of the transposed weight by
 * the input, summed into y (n, co, oh, ow) at row i*sh - ph + ki*dh and column j*sw - pw + kj*dw
 * (outside: cropped). One output plane per item, so no two threads write the same element. */
int col2im2d(const void* cols_, void* y_, int64_t n, int64_t co, int64_t h, int64_t w, int64_t kh, int64_t kw,
             int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int nt) {
    const T* cols = cols_;
    T* y = y_;
    const int64_t planes = n * co, l = h * w;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int64_t p = 0; p < planes; ++p) {
        T* yp = y + p * oh * ow;
        memset(yp, 0, (size_t)(oh * ow) * sizeof(T));
        for (int64_t ki = 0; ki < kh; ++ki)
            for (int64_t kj = 0; kj < kw; ++kj) {
                const T* cr = cols + (p * kh * kw + ki * kw + kj) * l;
                for (int64_t i = 0; i < h; ++i) {
                    const int64_t yi = i * sh - ph + ki * dh;
                    if (yi < 0 || yi >= oh) continue;
                    T* yrow = yp + yi * ow;
                    const T* crow = cr + i * w;
                    const int64_t x0 = kj * dw - pw;
                    if (sw == 1 && x0 >= 0 && x0 + w <= ow) {
                        T* yo = yrow + x0;
                        for (int64_t j = 0; j < w; ++j) yo[j] += crow[j];
                    } else {
                        for (int64_t j = 0; j < w; ++j) {
                            const int64_t xj = j * sw + x0;
                            if (xj >= 0 && xj < ow) yrow[xj] += crow[j];
                        }
                    }
                }
            }
    }
    return 0;
}

/* relu of n elements (y may be x); NaN stays NaN. */
int relu_fwd(const void* x_, void* y_, int64_t n, int nt) {
    const T* x = x_;
    T* y = y_;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > (T)0 ? x[i] : (x[i] != x[i] ? x[i] : (T)0);
    return 0;
}
