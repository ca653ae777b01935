/* The CPU plugin's convolution in the blocked layout NCHWc (plugins/cpu/conv_nchwc.py builds it),
 * float32, blocks of B = 16 channels: a tensor (n, c, h, w) is held as (n, ceil(c / B), h, w, B),
 * channel k of pixel (y, x) at [k / B][y][x][k % B], channels past c zero.
 *
 * conv_nchwc: y (n, ceil(o / B), oh, ow, B) = relu?(conv(x, wt) + bias (+ r)), one group, where x
 * is blocked (xb = 1) or plain NCHW (xb = 0: the first layer, whose few channels would be mostly
 * padding as a block). Output channels are the vector: the weights are packed (each call, or once
 * while a bound program's weights stay: wk below) as
 * (o / B, c blocks, kh, kw, channels of the block, B), every input value is broadcast and
 * multiplied by a vector of B output channels; a tile keeps T output positions of one row times
 * OBT blocks of output channels in registers and writes them once, with the bias, the residual and
 * the relu applied (the program's epilogue: conv, then + bias, then + r, then relu, in that order,
 * as the unfused ops round). No padded copy: a position whose window reaches past the image's left
 * or right edge is a tile of one position that skips the columns outside; rows outside are
 * skipped for the whole row. Items (image, block of output channels, output row) go to the OpenMP
 * team, taken dynamically.
 *
 * to_nchwc / from_nchwc: the layout conversions at the boundaries of a blocked region; pool_nchwc:
 * the global sum or max over the pixels, read in the blocked layout, written plain.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define B 16
/* NOTE: 16-float vectors where AVX-512 is there, else 8 (a block is then two). A first version
 * measured 8-float vectors faster on Zen 4 (each broadcast input value feeding two FMAs, a 512-bit
 * FMA running as two 256-bit halves); with the tiles as they are now, 16-float vectors (the
 * broadcast folded into the FMA's memory operand) are 10-15 % faster on every layer of the
 * ResNet-style model (docs/benchmarks.md, "Issue 41, fourth pass"). NCHWC_VW=8 builds 8-float
 * vectors. */
#if defined(NCHWC_VW)
#define VW NCHWC_VW
#elif defined(__AVX512F__)
#define VW 16
#else
#define VW 8
#endif
#define NVB (B / VW) /* vectors per block of channels */
/* accumulators a tile may keep: 32 vector registers with AVX-512, 16 with AVX2. 16-float vectors:
 * 16, rows of 16 positions of one block or 8 of two (28 was as fast on the model's layers, and
 * took 2.4 times as long to build: every tile width up to 28 unrolled) */
#if defined(NCHWC_ACC)
#define ACC NCHWC_ACC
#elif defined(__AVX512F__) && VW == 16
#define ACC 16
#elif defined(__AVX512F__)
#define ACC 24
#else
#define ACC 12
#endif
typedef float vf __attribute__((vector_size(VW * 4)));
typedef int vi __attribute__((vector_size(VW * 4)));

static inline vf ld(const float* p) {
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void st(float* p, vf v) { memcpy(p, &v, sizeof v); }

struct geo {
    int64_t c, h, w, cb, cib, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, ob;
    int64_t xcs, xci, xws; /* x: stride of a channel block, of a channel inside it, of a column */
};

/* acc += the products of one kernel offset's input channels (ci_n of them) for T positions from xp
 * (position t at xp + t * xstep, channel ci at + ci * xci); positions t < L and t >= T - R are
 * outside the image at this offset and skipped. S partial sums over the channels where the tile is
 * narrow: one position's few accumulators would otherwise wait on the FMA's latency. */
static inline __attribute__((always_inline)) void chans(const int T, const int OBT, const int S, const int L,
                                                        const int R, vf* acc, const float* xp, const float* wq,
                                                        int64_t ci_n, int64_t xci, int64_t xstep, int64_t wob) {
    const int NA = OBT * NVB;
    int64_t ci = 0;
    for (; ci + S <= ci_n; ci += S) {
#pragma GCC unroll 4
        for (int q = 0; q < S; ++q) {
            vf wv[2 * NVB]; /* fixed size (OBT <= 2): a variable one is a stack allocation per channel */
#pragma GCC unroll 4
            for (int o = 0; o < OBT; ++o)
#pragma GCC unroll 4
                for (int v = 0; v < NVB; ++v) wv[o * NVB + v] = ld(wq + o * wob + (ci + q) * B + v * VW);
            const float* xc = xp + (ci + q) * xci;
#pragma GCC unroll 32
            for (int t = L; t < T - R; ++t) {
                const float xv = xc[t * xstep];
#pragma GCC unroll 4
                for (int a = 0; a < NA; ++a) acc[(q * NA + a) * T + t] += xv * wv[a];
            }
        }
    }
    for (; ci < ci_n; ++ci) {
        vf wv[2 * NVB]; /* fixed size (OBT <= 2): a variable one is a stack allocation per channel */
#pragma GCC unroll 4
        for (int o = 0; o < OBT; ++o)
#pragma GCC unroll 4
            for (int v = 0; v < NVB; ++v) wv[o * NVB + v] = ld(wq + o * wob + ci * B + v * VW);
        const float* xc = xp + ci * xci;
#pragma GCC unroll 32
        for (int t = L; t < T - R; ++t) {
            const float xv = xc[t * xstep];
#pragma GCC unroll 4
            for (int a = 0; a < NA; ++a) acc[a * T + t] += xv * wv[a];
        }
    }
}

/* a tile's accumulators + bias (+ r) (relu) stored at their positions of y (RES, RELU known) */
static inline __attribute__((always_inline)) void epilogue(const int T, const int OBT, const struct geo* g,
                                                           const vf* acc, const float* bias, const float* r,
                                                           float* y, int64_t ob0, int64_t oy, int64_t ox0,
                                                           const int RES, const int RELU) {
    const int64_t plane = g->oh * g->ow * B;
#pragma GCC unroll 4
    for (int o = 0; o < OBT; ++o)
#pragma GCC unroll 4
        for (int v = 0; v < NVB; ++v) {
            const vf bv = ld(bias + (ob0 + o) * B + v * VW);
#pragma GCC unroll 32
            for (int t = 0; t < T; ++t) {
                const int64_t at = (ob0 + o) * plane + (oy * g->ow + ox0 + t) * B + v * VW;
                vf s = acc[(o * NVB + v) * T + t] + bv;
                if (RES) s += ld(r + at);
                if (RELU) { /* x > 0 or NaN: kept; else +0 */
                    const vi keep = (s > 0) | (s != s);
                    s = (vf)((vi)s & keep);
                }
                st(y + at, s);
            }
        }
}

/* T positions (ox0, ox0 + 1, ...) of output row oy times OBT blocks of output channels from ob0;
 * kx only in [kx0, kx1); edges: the first and the last position may each be outside the image
 * at some kernel offsets (at most one on each side: row()'s choice), skipped there. */
static inline __attribute__((always_inline)) void tile(const int T, const int OBT, const struct geo* g,
                                                       const float* x, const float* wp, const float* bias,
                                                       const float* r, float* y, int64_t ob0, int64_t oy,
                                                       int64_t ox0, int64_t ky0, int64_t ky1, int64_t kx0,
                                                       int64_t kx1, int edges, int relu, const int64_t XS,
                                                       const int64_t CI, const int64_t PC) {
    const int S = T == 1 ? 4 : T == 2 ? 2 : 1, NA = OBT * NVB;
    vf acc[ACC]; /* acc[(s * NA + a) * T + t]: a fixed size, so that the unrolled tile keeps it in registers */
#pragma GCC unroll 32
    for (int a = 0; a < S * NA * T; ++a) acc[a] = (vf){0};
    /* XS, CI: the column step and the channels of a block where known when built (blocked
     * inputs: 16 or 32 floats, 16 channels), so that the broadcasts load at constant offsets;
     * PC: a plain input's channels where known (an RGB first layer's 3: its loop over them
     * unrolled, 97 -> 81 us for the ResNet-style stem, 1950 -> 1509 for a 7x7 s2 one) */
    const int64_t xstep = XS ? XS : g->sw * g->xws, xci = CI ? 1 : g->xci;
    const int64_t cib = CI ? CI : PC ? PC : g->cib, wob = g->cb * g->kh * g->kw * cib * B; /* one block of output channels */
    for (int64_t cb = 0; cb < g->cb; ++cb) {
        const int64_t ci_n = cib; /* the last block's channels past c: zero in x and in the weights */
        for (int64_t ky = ky0; ky < ky1; ++ky) {
            const float* xr = x + cb * g->xcs + (oy * g->sh - g->ph + ky * g->dh) * g->w * g->xws;
            for (int64_t kx = kx0; kx < kx1; ++kx) {
                const int64_t ix = ox0 * g->sw - g->pw + kx * g->dw;
                const float* xp = xr + ix * g->xws;
                const float* wq = wp + ob0 * wob + ((cb * g->kh + ky) * g->kw + kx) * cib * B;
                const int side = !edges ? 0 : (ix < 0) | (ix + (T - 1) * g->sw >= g->w) << 1;
                if (T == 1 || side == 0)
                    chans(T, OBT, S, 0, 0, acc, xp, wq, ci_n, xci, xstep, wob);
                else if (side == 1)
                    chans(T, OBT, S, 1, 0, acc, xp, wq, ci_n, xci, xstep, wob);
                else if (side == 2)
                    chans(T, OBT, S, 0, 1, acc, xp, wq, ci_n, xci, xstep, wob);
                else
                    chans(T, OBT, S, 1, 1, acc, xp, wq, ci_n, xci, xstep, wob);
            }
        }
    }
#pragma GCC unroll 4
    for (int q = 1; q < S; ++q)
#pragma GCC unroll 32
        for (int a = 0; a < NA * T; ++a) acc[a] += acc[q * NA * T + a];
    /* the epilogue in four copies, residual and relu known in each: one test per tile instead of
     * two per position (a 1x1 conv's tile is short: the tests were a sixth of its time) */
    if (r && relu)
        epilogue(T, OBT, g, acc, bias, r, y, ob0, oy, ox0, 1, 1);
    else if (r)
        epilogue(T, OBT, g, acc, bias, r, y, ob0, oy, ox0, 1, 0);
    else if (relu)
        epilogue(T, OBT, g, acc, bias, r, y, ob0, oy, ox0, 0, 1);
    else
        epilogue(T, OBT, g, acc, bias, r, y, ob0, oy, ox0, 0, 0);
}

#define TMAX(OBT) (ACC / ((OBT) * NVB))

/* the tiles of one output row: edges (one position each, the columns inside) and the inside in
 * tiles of TMAX(OBT) positions, the last as wide as what is left */
#define ROW(OBT)                                                                                              \
    do {                                                                                                      \
        int64_t ox = 0, end = g->ow;                                                                          \
        if (whole) { /* tiles over the whole row, their first and last positions skipped where outside */    \
            lo = 0;                                                                                           \
            hi = g->ow;                                                                                       \
        }                                                                                                     \
        for (; ox < lo; ++ox) {                                                                               \
            int64_t k0 = 0, k1 = g->kw;                                                                       \
            while (k0 < k1 && ox * g->sw - g->pw + k0 * g->dw < 0) ++k0;                                      \
            while (k1 > k0 && ox * g->sw - g->pw + (k1 - 1) * g->dw >= g->w) --k1;                            \
            tile(1, OBT, g, x, wp, bias, r, y, ob, oy, ox, ky0, ky1, k0, k1, 0, relu, XS, CI, PC);                        \
        }                                                                                                     \
        while (ox < hi) { /* tiles of equal width, at most TMAX(OBT) */                                      \
            const int64_t left = (hi - ox + TMAX(OBT) - 1) / TMAX(OBT), tw = (hi - ox + left - 1) / left;     \
            switch (tw) { REST_CASES(OBT) }                                                                   \
            ox += tw;                                                                                         \
        }                                                                                                     \
        for (; ox < end; ++ox) {                                                                              \
            int64_t k0 = 0, k1 = g->kw;                                                                       \
            while (k0 < k1 && ox * g->sw - g->pw + k0 * g->dw < 0) ++k0;                                      \
            while (k1 > k0 && ox * g->sw - g->pw + (k1 - 1) * g->dw >= g->w) --k1;                            \
            tile(1, OBT, g, x, wp, bias, r, y, ob, oy, ox, ky0, ky1, k0, k1, 0, relu, XS, CI, PC);                        \
        }                                                                                                     \
    } while (0)

#define CASE(OBT, T)                                                                                          \
    case T:                                                                                                   \
        if (T <= TMAX(OBT)) tile(T <= TMAX(OBT) ? T : 1, OBT, g, x, wp, bias, r, y, ob, oy, ox, ky0, ky1, 0,    \
                                g->kw, whole, relu, XS, CI, PC);                                                  \
        break;
#define REST_CASES(OBT)                                                                                       \
    CASE(OBT, 1) CASE(OBT, 2) CASE(OBT, 3) CASE(OBT, 4) CASE(OBT, 5) CASE(OBT, 6) CASE(OBT, 7)              \
    CASE(OBT, 8) CASE(OBT, 9) CASE(OBT, 10) CASE(OBT, 11) CASE(OBT, 12) CASE(OBT, 13)                        \
    CASE(OBT, 14) CASE(OBT, 15) CASE(OBT, 16) CASE(OBT, 17) CASE(OBT, 18) CASE(OBT, 19) CASE(OBT, 20)       \
    CASE(OBT, 21) CASE(OBT, 22) CASE(OBT, 23) CASE(OBT, 24) CASE(OBT, 25) CASE(OBT, 26) CASE(OBT, 27)       \
    CASE(OBT, 28)

/* one output row for OBT blocks of output channels from ob (XS, CI: tile's) */
static inline __attribute__((always_inline)) void row(const int OBT, const struct geo* g, const float* x,
                                                      const float* wp, const float* bias, const float* r, float* y,
                                                      int64_t ob, int64_t oy, int relu, const int64_t XS,
                                                      const int64_t CI, const int64_t PC) {
    int64_t ky0 = 0, ky1 = g->kh;
    while (ky0 < ky1 && oy * g->sh - g->ph + ky0 * g->dh < 0) ++ky0;
    while (ky1 > ky0 && oy * g->sh - g->ph + (ky1 - 1) * g->dh >= g->h) --ky1;
    /* inside: every column of the window within the image */
    int64_t lo = (g->pw + g->sw - 1) / g->sw, hi = g->w - 1 + g->pw - (g->kw - 1) * g->dw;
    hi = hi < 0 ? 0 : hi / g->sw + 1;
    if (hi > g->ow) hi = g->ow;
    if (lo > hi) lo = hi;
    /* whole rows in tiles: at most one position outside on each side (lo <= 1, ow - hi <= 1), and
     * a tile of two positions or more at each end */
#ifdef NCHWC_NO_WHOLE
    const int whole = 0;
#else
    const int whole = lo <= 1 && g->ow - hi <= 1 && g->ow >= 2 && (lo > 0 || hi < g->ow);
#endif
    if (OBT == 2)
        ROW(2);
    else
        ROW(1);
}

/* the weights (o, c, kh, kw) as (ceil(o / B), cb, kh, kw, cib, B), zero past o and c; each times
 * sc[its output channel] where sc is not NULL */
static void pack(const float* wt, const float* sc, float* wp, int64_t o, int64_t c, int64_t kh, int64_t kw,
                 int64_t cb, int64_t cib) {
    const int64_t obn = (o + B - 1) / B;
    for (int64_t ob = 0; ob < obn; ++ob)
        for (int64_t b = 0; b < cb; ++b)
            for (int64_t i = 0; i < kh; ++i)
                for (int64_t j = 0; j < kw; ++j)
                    for (int64_t ci = 0; ci < cib; ++ci) {
                        float* d = wp + ((((ob * cb + b) * kh + i) * kw + j) * cib + ci) * B;
                        const int64_t ch = b * cib + ci;
                        for (int64_t k = 0; k < B; ++k) {
                            const int64_t oc = ob * B + k;
                            const float v = oc < o && ch < c ? wt[((oc * c + ch) * kh + i) * kw + j] : 0.f;
                            d[k] = sc && oc < o ? v * sc[oc] : v;
                        }
                    }
}

/* y = relu?(conv(x, wt * sc) + bias (+ r)); bias (o,), sc NULL or (o,) (a scale per output
 * channel, the weight rounded once as that product), r NULL or like y; wp: the packed weights'
 * room (ceil(o / B) * cb * kh * kw * cib * B floats), bp: ceil(o / B) * B floats. wk: NULL, or
 * the room for a copy of wt and sc (o * c * kh * kw + o floats) kept beside wp across the calls
 * of a bound program, with *packed saying that wp holds them packed: weights equal byte for byte
 * to the last packed ones are not packed again (a program recomputes its folded weights every
 * run: the same bytes while the parameters do not change; a comparison reads half what the
 * packing moves). */
int conv_nchwc(const void* x_, const void* wt_, const void* bias_, const void* r_, void* y_, int64_t n, int64_t c,
               int64_t h, int64_t w, int xb, int64_t o, int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
               int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int relu, const void* sc_, void* wp_,
               void* bp_, void* wk_, int32_t* packed, int nt) {
    const float *x = x_, *wt = wt_, *bias = bias_, *r = r_;
    float *y = y_, *wp = wp_, *bp = bp_;
    struct geo g = {c, h, w, 0, 0, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, (o + B - 1) / B, 0, 0, 0};
    if (xb) {
        g.cb = (c + B - 1) / B, g.cib = B, g.xcs = h * w * B, g.xci = 1, g.xws = B;
    } else {
        g.cb = 1, g.cib = c, g.xcs = 0, g.xci = h * w, g.xws = 1;
    }
    const float* sc = sc_;
    char* wk = wk_;
    const size_t wbytes = (size_t)(o * c * kh * kw) * sizeof(float), sbytes = sc ? (size_t)o * sizeof(float) : 0;
    if (!wk || !*packed || memcmp(wk, wt, wbytes) != 0 || (sc && memcmp(wk + wbytes, sc, sbytes) != 0)) {
        pack(wt, sc, wp, o, c, kh, kw, g.cb, g.cib);
        if (wk) {
            memcpy(wk, wt, wbytes);
            if (sc) memcpy(wk + wbytes, sc, sbytes);
            *packed = 1;
        }
    }
    for (int64_t k = 0; k < g.ob * B; ++k) bp[k] = k < o ? bias[k] : 0.f;
    /* two blocks of output channels per tile (each broadcast feeds twice the FMAs), except where a
     * row fits one tile of one block and not of two (an 8-wide row: 8 positions x 1 block in
     * registers rather than two tiles of 4 x 2) */
    const int narrow = ow <= TMAX(1) && ow > TMAX(2);
    const int obt = g.ob % 2 == 0 && !narrow ? 2 : 1, groups = (int)(g.ob / obt);
    const int64_t xn = xb ? g.cb * g.xcs : c * h * w, yn = g.ob * oh * ow * B, items = n * groups * oh;
#pragma omp parallel for schedule(dynamic) num_threads(nt) if (nt > 1)
    for (int64_t it = 0; it < items; ++it) {
        const int64_t oy = it % oh, ob = (it / oh) % groups * obt, i = it / (oh * groups);
        const float* ri = r ? r + i * yn : NULL;
        const float* xi = x + i * xn;
        float* yi = y + i * yn;
        if (xb && sw == 1 && obt == 2)
            row(2, &g, xi, wp, bp, ri, yi, ob, oy, relu, B, B, 0);
        else if (xb && sw == 1)
            row(1, &g, xi, wp, bp, ri, yi, ob, oy, relu, B, B, 0);
        else if (xb && sw == 2 && obt == 2)
            row(2, &g, xi, wp, bp, ri, yi, ob, oy, relu, 2 * B, B, 0);
        else if (xb && sw == 2)
            row(1, &g, xi, wp, bp, ri, yi, ob, oy, relu, 2 * B, B, 0);
        else if (!xb && c == 3 && sw == 1 && obt == 1) /* an RGB first layer: its 3 channels known */
            row(1, &g, xi, wp, bp, ri, yi, ob, oy, relu, 1, 0, 3);
        else if (!xb && c == 3 && sw == 2 && obt == 2)
            row(2, &g, xi, wp, bp, ri, yi, ob, oy, relu, 2, 0, 3);
        else if (obt == 2)
            row(2, &g, xi, wp, bp, ri, yi, ob, oy, relu, 0, 0, 0);
        else
            row(1, &g, xi, wp, bp, ri, yi, ob, oy, relu, 0, 0, 0);
    }
    return 0;
}

/* x (n, c, hw) -> y (n, ceil(c / B), hw, B), channels past c zero */
int to_nchwc(const void* x_, void* y_, int64_t n, int64_t c, int64_t hw, int nt) {
    const float* x = x_;
    float* y = y_;
    const int64_t cb = (c + B - 1) / B;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int64_t p = 0; p < n * cb; ++p) {
        const int64_t i = p / cb, b = p % cb;
        float* d = y + p * hw * B;
        const int64_t k1 = c - b * B < B ? c - b * B : B;
        const float* s = x + (i * c + b * B) * hw;
        if (k1 < B) memset(d, 0, (size_t)(hw * B) * sizeof(float));
        for (int64_t q = 0; q < hw; ++q)
            for (int64_t k = 0; k < k1; ++k) d[q * B + k] = s[k * hw + q];
    }
    return 0;
}

/* x (n, ceil(c / B), hw, B) -> y (n, c, hw) */
int from_nchwc(const void* x_, void* y_, int64_t n, int64_t c, int64_t hw, int nt) {
    const float* x = x_;
    float* y = y_;
    const int64_t cb = (c + B - 1) / B;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int64_t p = 0; p < n * cb; ++p) {
        const int64_t i = p / cb, b = p % cb;
        const float* s = x + p * hw * B;
        const int64_t k1 = c - b * B < B ? c - b * B : B;
        float* d = y + (i * c + b * B) * hw;
        for (int64_t k = 0; k < k1; ++k)
            for (int64_t q = 0; q < hw; ++q) d[k * hw + q] = s[q * B + k];
    }
    return 0;
}

/* a partial result of pool_nchwc with one more value: the sum, or the max keeping a NaN */
static inline vf pool_step(int kind, vf acc, vf e) {
    if (!kind) return acc + e;
    const vi take = (e > acc) | (e != e);
    return (vf)(((vi)e & take) | ((vi)acc & ~take));
}

/* x (n, ceil(c / B), hw, B) -> y (n, c): the sum over hw (kind 0) or the max (kind 1; a NaN is
 * kept, as numpy's max), each block's 16 channels a row of vectors, four partial results over
 * the positions */
int pool_nchwc(const void* x_, void* y_, int64_t n, int64_t c, int64_t hw, int kind, int nt) {
    const int64_t cb = (c + B - 1) / B;
#pragma omp parallel for collapse(2) schedule(static) num_threads(nt) if (nt > 1)
    for (int64_t i = 0; i < n; ++i)
        for (int64_t b = 0; b < cb; ++b) {
            const float* s = (const float*)x_ + (i * cb + b) * hw * B;
            vf part[4][NVB];
            for (int u = 0; u < 4; ++u)
                for (int v = 0; v < NVB; ++v) part[u][v] = kind ? ld(s + v * VW) : (vf){0};
            int64_t q = 0;
            for (; q + 4 <= hw; q += 4)
#pragma GCC unroll 4
                for (int u = 0; u < 4; ++u)
#pragma GCC unroll 4
                    for (int v = 0; v < NVB; ++v) part[u][v] = pool_step(kind, part[u][v], ld(s + (q + u) * B + v * VW));
            for (; q < hw; ++q)
                for (int v = 0; v < NVB; ++v) part[0][v] = pool_step(kind, part[0][v], ld(s + q * B + v * VW));
            float out[B];
            for (int v = 0; v < NVB; ++v) {
                vf r = part[0][v];
                for (int u = 1; u < 4; ++u) r = pool_step(kind, r, part[u][v]);
                st(out + v * VW, r);
            }
            const int64_t k1 = c - b * B < B ? c - b * B : B;
            memcpy((float*)y_ + i * c + b * B, out, (size_t)k1 * sizeof(float));
        }
    return 0;
}

/* x (n, cb, h, w, B) -> y (n, cb, oh, ow, B): the max over each kh x kw window (stride sh, sw;
 * pt, pl rows and columns of padding before, never taken: only the window's pixels inside the
 * image are read; a NaN is kept, as numpy's max). Each block's 16 channels a row of vectors;
 * items (image, block, output row) to the team. Every window holds a pixel (the op's padding is
 * less than its kernel), so a block's zero channels past c stay zero. */
int maxpool_nchwc(const void* x_, void* y_, int64_t n, int64_t cb, int64_t h, int64_t w, int64_t oh, int64_t ow,
                  int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t pt, int64_t pl, int nt) {
    const float* x = x_;
    float* y = y_;
    const int64_t items = n * cb * oh;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int64_t it = 0; it < items; ++it) {
        const int64_t oy = it % oh, p = it / oh; /* p: image * cb + block */
        const float* s = x + p * h * w * B;
        float* d = y + (p * oh + oy) * ow * B;
        int64_t y0 = oy * sh - pt, y1 = y0 + kh;
        y0 = y0 < 0 ? 0 : y0;
        y1 = y1 > h ? h : y1;
        for (int64_t ox = 0; ox < ow; ++ox) {
            int64_t x0 = ox * sw - pl, x1 = x0 + kw;
            x0 = x0 < 0 ? 0 : x0;
            x1 = x1 > w ? w : x1;
            vf acc[NVB];
            for (int v = 0; v < NVB; ++v) acc[v] = ld(s + (y0 * w + x0) * B + v * VW);
            for (int64_t iy = y0; iy < y1; ++iy)
                for (int64_t ix = x0; ix < x1; ++ix)
#pragma GCC unroll 4
                    for (int v = 0; v < NVB; ++v) acc[v] = pool_step(1, acc[v], ld(s + (iy * w + ix) * B + v * VW));
            for (int v = 0; v < NVB; ++v) st(d + ox * B + v * VW, acc[v]);
        }
    }
    return 0;
}
