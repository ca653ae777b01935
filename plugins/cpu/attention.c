/* Fused scaled dot-product attention for the CPU plugin (plugins/cpu/attention.py builds it).
 *
 * Per (batch, head) and per block of query rows (R in the forward, RB in the backward),
 * everything stays in the L1/L2 cache: the block's scores (rows x Lk), their softmax, and the
 * products with V (forward) or the gradients (backward). Nothing of size Lq x Lk is written to
 * memory (the backward recomputes the weights, as flash attention does), and a causal mask
 * skips the keys a row does not see instead of computing and masking them. Heads are shared
 * out over OpenMP threads when there is enough work.
 *
 * q: (BH, Lq, D), k: (BH, Lk, D), v: (BH, Lk, Dv), do/o: (BH, Lq, Dv), all contiguous.
 * Causal: query i sees keys j <= i + Lk - Lq (aligned to the end), as the decomposition's mask.
 * s = q @ k^T * scale, p = softmax(s) (exp by a polynomial, within 2 ulp), o = p @ v.
 * Backward: dp = do @ v^T, ds = p * (dp - rowsum(p * dp)), dq = scale * ds @ k,
 * dk = ds^T @ (q * scale), dv = p^T @ do.
 *
 * Compiled once per element type: float, or double with -DT_DOUBLE. One build holds both vector
 * widths: the file includes itself (by __FILE__: build it by an absolute path, as the plugin does)
 * once for 32-byte vectors (AVX2: attn_fwd, attn_bwd) and once for 64-byte ones (AVX-512:
 * attn_fwd_wide, attn_bwd_wide; attention.py picks them by the CPU and the head sizes, and a
 * compiler that targets no AVX-512 builds them as generic vectors, never run there), so a first
 * training step starts one compiler for attention, not two. Where the wide vectors do not pay
 * (compiler.py's attention_wide: an AMD Zen 4 runs them in two halves) the plugin builds it with
 * -DATTN_NARROW_ONLY: the _wide entries then run the AVX2 code, and the build is half as long.
 * attn_fwd_bf16 / attn_bwd_bf16 take bfloat16 tensors (AMP), computed in T, the width an argument.
 * Every entry returns 0, or -1 when a thread could not allocate its scratch rows.
 */
#ifndef ATTN_VB /* the first pass: what both vector widths share, then the file once per width */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef T_DOUBLE
#define T double
typedef int64_t TI; /* the integer of T's width */
#else
#define T float
typedef int32_t TI;
#endif
#define R 4        /* query rows per block */
#define RB (4 * R) /* query rows per block of the backward */

static inline int64_t up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

/* rows visible to query i: keys [0, n) */
static inline int64_t visible(int64_t i, int64_t lq, int64_t lk, int causal) {
    if (!causal) return lk;
    int64_t n = i + lk - lq + 1;
    return n < 0 ? 0 : (n > lk ? lk : n);
}

/* a (rows x d, row stride d) to at (d x ld), zero padded to ld columns; by blocks of 16 rows,
 * which stay in the L1 cache (a whole column at a time: 2x slower at 128 x 64) */
static void transpose_pad(const T* a, int64_t rows, int64_t d, T* at, int64_t ld) {
    for (int64_t j0 = 0; j0 < rows; j0 += 16) {
        const int64_t j1 = j0 + 16 < rows ? j0 + 16 : rows;
        for (int64_t c = 0; c < d; ++c)
            for (int64_t j = j0; j < j1; ++j) at[c * ld + j] = a[j * d + c];
    }
    for (int64_t c = 0; c < d; ++c)
        for (int64_t j = rows; j < ld; ++j) at[c * ld + j] = 0;
}

/* a (rows x d) to ap (rows x dp), zero padded to dp columns */
static void pad_cols(const T* a, int64_t rows, int64_t d, T* ap, int64_t dp) {
    for (int64_t j = 0; j < rows; ++j) {
        memcpy(ap + j * dp, a + j * d, d * sizeof(T));
        for (int64_t c = d; c < dp; ++c) ap[j * dp + c] = 0;
    }
}

static int64_t rows_max(int64_t i0, int64_t rr, int64_t lq, int64_t lk, int causal, int64_t* nv) {
    int64_t m = 0;
    for (int r = 0; r < R; ++r) {
        nv[r] = r < rr ? visible(i0 + r, lq, lk, causal) : 0;
        m = nv[r] > m ? nv[r] : m;
    }
    return m;
}

#define ATTN_VB 32 /* AVX2 (AVX-512 measured no faster on Zen 4, which splits it, and pads a head of 8 floats) */
#define V(name) name##_n
#include __FILE__
#undef ATTN_VB
#undef V
#ifndef ATTN_NARROW_ONLY /* -DATTN_NARROW_ONLY: the _wide entries run the AVX2 code (half the build) */
#define ATTN_VB 64 /* AVX-512, for head sizes of whole 64-byte vectors and 32+ keys (attention.py) */
#define V(name) name##_w
#include __FILE__
#else
#define forward_w forward_n
#define backward_w backward_n
#endif

/* the entry points: each width's forward and backward */
int attn_fwd(const void* q, const void* k, const void* v, void* o, int64_t bh, int64_t lq, int64_t lk, int64_t d,
             int64_t dv, double scale, int causal) {
    return forward_n(q, k, v, o, bh, lq, lk, d, dv, scale, causal);
}
int attn_bwd(const void* q, const void* k, const void* v, const void* dout, void* dq, void* dk, void* dv,
             int64_t bh, int64_t lq, int64_t lk, int64_t d, int64_t dvn, double scale, int causal) {
    return backward_n(q, k, v, dout, dq, dk, dv, bh, lq, lk, d, dvn, scale, causal);
}
int attn_fwd_wide(const void* q, const void* k, const void* v, void* o, int64_t bh, int64_t lq, int64_t lk, int64_t d,
                  int64_t dv, double scale, int causal) {
    return forward_w(q, k, v, o, bh, lq, lk, d, dv, scale, causal);
}
int attn_bwd_wide(const void* q, const void* k, const void* v, const void* dout, void* dq, void* dk, void* dv,
                  int64_t bh, int64_t lq, int64_t lk, int64_t d, int64_t dvn, double scale, int causal) {
    return backward_w(q, k, v, dout, dq, dk, dv, bh, lq, lk, d, dvn, scale, causal);
}

/* bfloat16 entries (AMP's low dtype): q, k, v (and do) as bf16 bits, widened to T (exactly) into
 * scratch; the T kernel of the width `wide` picks; the outputs rounded to bf16 once (to nearest,
 * ties to even; NaN stays NaN). Returns 0, or -1 without memory. */
static inline T from_bf16(uint16_t h) {
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return (T)f;
}

static inline uint16_t to_bf16(T x) {
    const float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* a quiet NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static void widen(const void* src, T* dst, int64_t n) {
    const uint16_t* s = src;
#pragma omp parallel for schedule(static) if (n > (1 << 20))
    for (int64_t i = 0; i < n; ++i) dst[i] = from_bf16(s[i]);
}

static void narrow(const T* src, void* dst, int64_t n) {
    uint16_t* o = dst;
#pragma omp parallel for schedule(static) if (n > (1 << 20))
    for (int64_t i = 0; i < n; ++i) o[i] = to_bf16(src[i]);
}

int attn_fwd_bf16(const void* q, const void* k, const void* v, void* o, int64_t bh, int64_t lq, int64_t lk, int64_t d,
                  int64_t dv, double scale, int causal, int wide) {
    const int64_t nq = bh * lq * d, nk = bh * lk * d, nv = bh * lk * dv, no = bh * lq * dv;
    T* w = malloc(sizeof(T) * (nq + nk + nv + no));
    if (!w) return -1;
    widen(q, w, nq);
    widen(k, w + nq, nk);
    widen(v, w + nq + nk, nv);
    T* of = w + nq + nk + nv;
    const int st = (wide ? forward_w : forward_n)(w, w + nq, w + nq + nk, of, bh, lq, lk, d, dv, scale, causal);
    narrow(of, o, no);
    free(w);
    return st;
}

int attn_bwd_bf16(const void* q, const void* k, const void* v, const void* dout, void* dq, void* dk, void* dv,
                  int64_t bh, int64_t lq, int64_t lk, int64_t d, int64_t dvn, double scale, int causal, int wide) {
    const int64_t nq = bh * lq * d, nk = bh * lk * d, nv = bh * lk * dvn, no = bh * lq * dvn;
    T* w = malloc(sizeof(T) * 2 * (nq + nk + nv) + sizeof(T) * no);
    if (!w) return -1;
    T *qf = w, *kf = qf + nq, *vf = kf + nk, *gf = vf + nv, *dqf = gf + no, *dkf = dqf + nq, *dvf = dkf + nk;
    widen(q, qf, nq);
    widen(k, kf, nk);
    widen(v, vf, nv);
    widen(dout, gf, no);
    const int st = (wide ? backward_w : backward_n)(qf, kf, vf, gf, dqf, dkf, dvf, bh, lq, lk, d, dvn, scale, causal);
    narrow(dqf, dq, nq);
    narrow(dkf, dk, nk);
    narrow(dvf, dv, nv);
    free(w);
    return st;
}

#else /* one vector width: ATTN_VB bytes, every name below made V(name) */
#define VB ATTN_VB
#define vt V(vt)
#define vi V(vi)
#define rows_x4 V(rows_x4)
#define tile_abt V(tile_abt)
#define tile_pb V(tile_pb)
#define ptb_cols V(ptb_cols)
#define tile_ptb V(tile_ptb)
#define vsel V(vsel)
#define vexp V(vexp)
#define hmax V(hmax)
#define hsum V(hsum)
#define softmax_rows V(softmax_rows)
#define rows_scaled V(rows_scaled)
#define forward V(forward)
#define backward V(backward)
#define W ((int64_t)(VB / sizeof(T))) /* lanes */
#define TJ (2 * W)                    /* key columns per tile */
typedef T vt __attribute__((vector_size(VB), aligned(sizeof(T))));
typedef TI vi __attribute__((vector_size(VB), aligned(sizeof(T))));
#define VLOAD(p) (*(const vt*)(p))
#define VSTORE(p, x) (*(vt*)(p) = (x))
/* x in every lane: one broadcast (adding -0, unlike +0, changes no value and folds away; the
 * former (vt){0} + x cost an add before each broadcast) */
#define BCAST(x) ((T)(x) + -(vt){0})
/* keeps four vectors in registers: GCC otherwise reloads them in each multiply-add (20 loads
 * per 16 multiply-adds, bound by the loads instead of the multiply-adds) */
#if (VB == 32 && defined(__AVX__)) || (VB == 64 && defined(__AVX512F__)) /* vectors of registers */
#define IN_REGS(a, b, c, d) __asm__("" : "+v"(a), "+v"(b), "+v"(c), "+v"(d))
#else
#define IN_REGS(a, b, c, d) ((void)0)
#endif

/* out[r][:4W] (row stride ld) = alpha * sum_{c < n} a[r][c] * b[c][:4W] for R rows; a: stride lda,
 * b: stride ldb. 16 sums in registers (AVX-512VL gives 32 vector registers), b's four vectors
 * loaded once per c: with R x 2 sums and GCC reloading b in each multiply-add these products ran
 * at 50-60 GFLOP/s on one Zen 4 core, at ~95-110 so. */
static void rows_x4(const T* a, int64_t lda, const T* b, int64_t ldb, int64_t n, T* out, int64_t ld, T alpha) {
    vt acc[R][4];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = (vt){0};
    for (int64_t c = 0; c < n; ++c) {
        const T* bc = b + c * ldb;
        vt b0 = VLOAD(bc), b1 = VLOAD(bc + W), b2 = VLOAD(bc + 2 * W), b3 = VLOAD(bc + 3 * W);
        IN_REGS(b0, b1, b2, b3);
        for (int r = 0; r < R; ++r) {
            const vt x = BCAST(a[r * lda + c]);
            acc[r][0] += x * b0;
            acc[r][1] += x * b1;
            acc[r][2] += x * b2;
            acc[r][3] += x * b3;
        }
    }
    for (int r = 0; r < R; ++r)
        for (int u = 0; u < 4; ++u) VSTORE(out + r * ld + u * W, acc[r][u] * BCAST(alpha));
}

/* out[r][j] (r < R, j < n, row stride ld) = sum_d a[r][d] * bt[d][j]; a: R rows of length d with
 * stride lda (rows past rr are zero), bt: d x ldb (ldb >= up(n, TJ), padded with zeros). Full
 * blocks of rows take two tiles (4 vectors) at a time (rows_x4). */
static void tile_abt(const T* a, int64_t lda, int64_t rr, const T* bt, int64_t ldb, int64_t d, int64_t n,
                     T* out, int64_t ld, T alpha) {
    int64_t j0 = 0;
    if (rr == R)
        for (; j0 + TJ < n; j0 += 2 * TJ) /* both tiles within up(n, TJ) <= ldb */
            rows_x4(a, lda, bt + j0, ldb, d, out + j0, ld, alpha);
    for (; j0 < n; j0 += TJ) {
        vt acc[R][2];
        for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = (vt){0};
        for (int64_t c = 0; c < d; ++c) {
            const vt b0 = VLOAD(bt + c * ldb + j0), b1 = VLOAD(bt + c * ldb + j0 + W);
            for (int r = 0; r < R; ++r) {
                const vt x = BCAST(r < rr ? a[r * lda + c] : 0);
                acc[r][0] += x * b0;
                acc[r][1] += x * b1;
            }
        }
        for (int r = 0; r < R; ++r) {
            VSTORE(out + r * ld + j0, acc[r][0] * BCAST(alpha));
            VSTORE(out + r * ld + j0 + W, acc[r][1] * BCAST(alpha));
        }
    }
}

/* y[r][:dp] = sum_{j < n} p[r][j] * b[j][:dp]; p: R rows (stride ldp, zero past each row's
 * keys), b: n x dp (dp a multiple of W), y: R rows of stride dp */
static void tile_pb(const T* p, int64_t ldp, const T* b, int64_t dp, int64_t n, T* y) {
    int64_t c0 = 0;
    for (; c0 + 4 * W <= dp; c0 += 4 * W) rows_x4(p, ldp, b + c0, dp, n, y + c0, dp, 1); /* 4 vectors */
    for (; c0 < dp; c0 += 2 * W) {
        const int two = c0 + W < dp;
        vt acc[R][2];
        for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = (vt){0};
        for (int64_t j = 0; j < n; ++j) {
            const vt b0 = VLOAD(b + j * dp + c0), b1 = two ? VLOAD(b + j * dp + c0 + W) : (vt){0};
            for (int r = 0; r < R; ++r) {
                const vt x = BCAST(p[r * ldp + j]);
                acc[r][0] += x * b0;
                acc[r][1] += x * b1;
            }
        }
        for (int r = 0; r < R; ++r) {
            VSTORE(y + r * dp + c0, acc[r][0]);
            if (two) VSTORE(y + r * dp + c0 + W, acc[r][1]);
        }
    }
}

/* acc[j][:nc W] (row stride dp) += sum_{r < RB} p[r][j] * b[r][:nc W] for j < n, nc (1 to 4) a
 * constant where it is inlined; p's rows zero past n up to a multiple of 4. 4 keys at a time,
 * their 4 x nc sums in registers (one sum per vector over the RB rows ran at 62 GFLOP/s, bound by
 * the adds' latency; 16 sums at ~95). */
static inline __attribute__((always_inline)) void ptb_cols(const T* p, int64_t ldp, const T* b, int64_t dp,
                                                           int64_t n, T* acc, const int nc) {
    for (int64_t j = 0; j < n; j += 4) {
        vt s[4][4];
        for (int u = 0; u < 4; ++u) s[u][0] = s[u][1] = s[u][2] = s[u][3] = BCAST(0);
        for (int r = 0; r < RB; ++r) {
            vt bv[4];
            for (int w = 0; w < nc; ++w) bv[w] = VLOAD(b + r * dp + w * W);
            if (nc == 4) IN_REGS(bv[0], bv[1], bv[2], bv[3]);
            const T* pr = p + r * ldp + j;
            for (int u = 0; u < 4; ++u) {
                const vt x = BCAST(pr[u]);
                for (int w = 0; w < nc; ++w) s[u][w] += x * bv[w];
            }
        }
        for (int u = 0; u < 4 && j + u < n; ++u) {
            T* a = acc + (j + u) * dp;
            for (int w = 0; w < nc; ++w) VSTORE(a + w * W, VLOAD(a + w * W) + s[u][w]);
        }
    }
}

/* acc[j][:dp] += sum_{r < RB} p[r][j] * b[r][:dp] for j < n; b: RB rows of stride dp; by chunks
 * of 4 vectors of columns (ptb_cols) */
static void tile_ptb(const T* p, int64_t ldp, const T* b, int64_t dp, int64_t n, T* acc) {
    for (int64_t c0 = 0; c0 < dp; c0 += 4 * W) {
        const int64_t nc = dp - c0 >= 4 * W ? 4 : (dp - c0) / W;
        if (nc == 4)
            ptb_cols(p, ldp, b + c0, dp, n, acc + c0, 4);
        else if (nc == 3)
            ptb_cols(p, ldp, b + c0, dp, n, acc + c0, 3);
        else if (nc == 2)
            ptb_cols(p, ldp, b + c0, dp, n, acc + c0, 2);
        else
            ptb_cols(p, ldp, b + c0, dp, n, acc + c0, 1);
    }
}

/* lanes of a where m (a comparison's all-ones lanes), else b */
static inline vt vsel(vi m, vt a, vt b) { return (vt)((m & (vi)a) | (~m & (vi)b)); }

/* exp on x <= 0 (or NaN), a vector at a time (vector extensions: one source for AVX2,
 * AVX-512, NEON). exp(x) = 2^k exp(r), r = x - k ln2 in [-ln2/2, ln2/2], exp(r) by its Taylor
 * polynomial (float: degree 7, double: degree 13; within 2 ulp). x below the log of the
 * smallest normal gives that normal (softmax adds it to a sum of at least 1: no change), NaN
 * stays NaN (it fails every comparison). */
static inline vt vexp(vt x) {
#ifdef T_DOUBLE
    const T lo = -708.3964185322641, hi_ln2 = 6.93147180369123816490e-01, lo_ln2 = 1.90821492927058770002e-10;
    const T magic = 6755399441055744.0; /* 1.5 * 2^52: adding it rounds to an integer */
    const int deg = 13, mant = 52, bias = 1023;
#else
    const T lo = -87.33654f, hi_ln2 = 0.693359375f, lo_ln2 = -2.12194440e-4f;
    const T magic = 12582912.0f; /* 1.5 * 2^23 */
    const int deg = 7, mant = 23, bias = 127;
#endif
    x = vsel(x < BCAST(lo), BCAST(lo), x);
    const vt kf = (x * BCAST(1.4426950408889634) + BCAST(magic)) - BCAST(magic);
    const vt r = (x - kf * BCAST(hi_ln2)) - kf * BCAST(lo_ln2);
    T c[14];
    c[0] = 1;
    for (int i = 1; i <= deg; ++i) c[i] = c[i - 1] / i;
    vt p = BCAST(c[deg]);
    for (int i = deg - 1; i >= 0; --i) p = p * r + BCAST(c[i]);
    const vi e = (__builtin_convertvector(kf, vi) + (TI)bias) << mant;
    return p * (vt)e;
}

static inline T hmax(vt v) {
    T m = v[0];
    for (int i = 1; i < W; ++i) m = v[i] > m ? v[i] : m;
    return m;
}

static inline T hsum(vt v) {
    T s = 0;
    for (int i = 0; i < W; ++i) s += v[i];
    return s;
}

/* softmax in place of R rows of s (stride ld, already scaled): row r over its keys [0, nv[r]),
 * zero from there to m (m <= ld; ld a multiple of W). The R rows go through each pass
 * together: their dependency chains (max, sum, the exp polynomial) overlap. */
static void softmax_rows(T* s, int64_t ld, const int64_t* nv, int64_t m) {
    vi iota;
    for (int i = 0; i < W; ++i) iota[i] = i;
    const vt ninf = BCAST(-INFINITY);
    int64_t n = 0;
    for (int r = 0; r < R; ++r) n = nv[r] > n ? nv[r] : n;
    vt vm[R], vs[R], mx[R], inv[R];
    for (int r = 0; r < R; ++r) vm[r] = ninf, vs[r] = BCAST(0);
    for (int64_t j = 0; j < n; j += W)
        for (int r = 0; r < R; ++r) {
            const vt x = vsel(iota + (TI)j < (TI)nv[r], VLOAD(s + r * ld + j), ninf);
            vm[r] = vsel(x > vm[r], x, vm[r]);
        }
    for (int r = 0; r < R; ++r) mx[r] = BCAST(hmax(vm[r]));
    for (int64_t j = 0; j < n; j += W)
        for (int r = 0; r < R; ++r) {
            const vt e = vsel(iota + (TI)j < (TI)nv[r], vexp(VLOAD(s + r * ld + j) - mx[r]), BCAST(0));
            VSTORE(s + r * ld + j, e);
            vs[r] += e;
        }
    for (int r = 0; r < R; ++r) inv[r] = BCAST((T)1 / hsum(vs[r])); /* no keys: 1/0, times zeros: NaN */
    for (int64_t j = 0; j < n; j += W)
        for (int r = 0; r < R; ++r) VSTORE(s + r * ld + j, VLOAD(s + r * ld + j) * inv[r]);
    for (int r = 0; r < R; ++r) {
        const int64_t z = nv[r] ? up(n, W) : 0; /* a row with no keys: all zero */
        if (m > z) memset(s + r * ld + z, 0, sizeof(T) * (m - z));
    }
}

/* dst[r][:dp] = src[r][:d] * alpha for r < rr, zero padded (rows past rr: zero) */
static void rows_scaled(const T* src, int64_t d, int64_t rr, int64_t rows, T alpha, T* dst, int64_t dp) {
    for (int64_t r = 0; r < rows; ++r) {
        T* o = dst + r * dp;
        if (r >= rr) {
            memset(o, 0, sizeof(T) * dp);
        } else if (d == dp) {
            for (int64_t c = 0; c < d; c += W) VSTORE(o + c, VLOAD(src + r * d + c) * BCAST(alpha));
        } else {
            for (int64_t c = 0; c < d; ++c) o[c] = src[r * d + c] * alpha;
            for (int64_t c = d; c < dp; ++c) o[c] = 0;
        }
    }
}

/* returns 0, or -1 when scratch memory could not be had */
static int forward(const void* q_, const void* k_, const void* v_, void* o_, int64_t bh, int64_t lq, int64_t lk,
                   int64_t d, int64_t dv, double scale, int causal) {
    const T *q = q_, *k = k_, *v = v_;
    T* o = o_;
    const int64_t ldk = up(lk, TJ), dvp = up(dv, W);
    int failed = 0;
#pragma omp parallel if (bh * lq * lk * (d + dv) > (1 << 22)) reduction(| : failed)
    {
        T* kt = malloc(sizeof(T) * (d * ldk + lk * dvp + R * ldk + R * dvp));
        if (!kt) failed = 1;
#pragma omp for schedule(static)
        for (int64_t b = 0; b < bh; ++b) {
            if (!kt) continue;
            T *vpad = kt + d * ldk, *s = vpad + lk * dvp, *y = s + R * ldk;
            const T *qb = q + b * lq * d, *kb = k + b * lk * d, *vb = v + b * lk * dv;
            T* ob = o + b * lq * dv;
            transpose_pad(kb, lk, d, kt, ldk);
            const T* vp = vb; /* v's rows, padded to whole vectors when dv is not */
            if (dv != dvp) {
                pad_cols(vb, lk, dv, vpad, dvp);
                vp = vpad;
            }
            for (int64_t i0 = 0; i0 < lq; i0 += R) {
                const int64_t rr = lq - i0 < R ? lq - i0 : R;
                int64_t nv[R];
                const int64_t n = rows_max(i0, rr, lq, lk, causal, nv);
                tile_abt(qb + i0 * d, d, rr, kt, ldk, d, n, s, ldk, (T)scale);
                softmax_rows(s, ldk, nv, n);
                tile_pb(s, ldk, vp, dvp, n, y);
                for (int r = 0; r < rr; ++r) {
                    if (nv[r] == 0)
                        for (int64_t c = 0; c < dv; ++c) ob[(i0 + r) * dv + c] = NAN; /* softmax of no keys */
                    else
                        memcpy(ob + (i0 + r) * dv, y + r * dvp, dv * sizeof(T));
                }
            }
        }
        free(kt);
    }
    return failed ? -1 : 0;
}

static int backward(const void* q_, const void* k_, const void* v_, const void* do_, void* dq_, void* dk_,
                    void* dv__, int64_t bh, int64_t lq, int64_t lk, int64_t d, int64_t dv, double scale, int causal) {
    const T *q = q_, *k = k_, *v = v_, *dout = do_;
    T *dq = dq_, *dk = dk_, *dv_ = dv__;
    const int64_t ldk = up(lk, TJ), dp = up(d, W), dvp = up(dv, W);
    int failed = 0;
#pragma omp parallel if (bh * lq * lk * (d + dv) > (1 << 21)) reduction(| : failed)
    {
        const int64_t need = (d + dv) * ldk + lk * (2 * dp + dvp) + 2 * RB * ldk + RB * (dp + dvp) + R * dp;
        T* kt = malloc(sizeof(T) * need);
        if (!kt) failed = 1;
#pragma omp for schedule(static)
        for (int64_t b = 0; b < bh; ++b) {
            if (!kt) continue;
            T *vt_ = kt + d * ldk, *kpad = vt_ + dv * ldk, *dka = kpad + lk * dp, *dva = dka + lk * dp;
            T *p = dva + lk * dvp, *g = p + RB * ldk, *qr = g + RB * ldk, *dor = qr + RB * dp, *y = dor + RB * dvp;
            const T *qb = q + b * lq * d, *kb = k + b * lk * d, *vb = v + b * lk * dv, *gb = dout + b * lq * dv;
            transpose_pad(kb, lk, d, kt, ldk);
            transpose_pad(vb, lk, dv, vt_, ldk);
            const T* kp = kb; /* k's rows, padded to whole vectors when d is not */
            if (d != dp) {
                pad_cols(kb, lk, d, kpad, dp);
                kp = kpad;
            }
            memset(dka, 0, sizeof(T) * lk * dp);
            memset(dva, 0, sizeof(T) * lk * dvp);
            for (int64_t i1 = 0; i1 < lq; i1 += RB) {
                /* keys the block's rows see, at most (the last row sees the most) */
                const int64_t last = (i1 + RB < lq ? i1 + RB : lq) - 1;
                const int64_t nb = causal ? visible(last, lq, lk, causal) : lk;
                const int64_t nbp = up(nb, TJ);
                for (int64_t i0 = i1; i0 < i1 + RB; i0 += R) {
                    T *pb = p + (i0 - i1) * ldk, *gbk = g + (i0 - i1) * ldk;
                    const int64_t rr = i0 >= lq ? 0 : (lq - i0 < R ? lq - i0 : R);
                    int64_t nv[R];
                    const int64_t n = rows_max(i0, rr, lq, lk, causal, nv), np_ = up(n, TJ);
                    if (rr == 0) {
                        for (int r = 0; r < R; ++r) {
                            memset(pb + r * ldk, 0, sizeof(T) * nbp);
                            memset(gbk + r * ldk, 0, sizeof(T) * nbp);
                        }
                        continue;
                    }
                    tile_abt(qb + i0 * d, d, rr, kt, ldk, d, n, pb, ldk, (T)scale);
                    softmax_rows(pb, ldk, nv, np_);
                    tile_abt(gb + i0 * dv, dv, rr, vt_, ldk, dv, n, gbk, ldk, (T)1);
                    for (int r = 0; r < R; ++r) { /* dp -> ds = p * (dp - rowsum(p * dp)) */
                        T *pr = pb + r * ldk, *gr = gbk + r * ldk;
                        vt dot = BCAST(0);
                        for (int64_t j = 0; j < np_; j += W) dot += VLOAD(pr + j) * VLOAD(gr + j);
                        const vt dt = BCAST(hsum(dot));
                        for (int64_t j = 0; j < np_; j += W) VSTORE(gr + j, VLOAD(pr + j) * (VLOAD(gr + j) - dt));
                        if (nbp > np_) {
                            memset(pr + np_, 0, sizeof(T) * (nbp - np_));
                            memset(gr + np_, 0, sizeof(T) * (nbp - np_));
                        }
                    }
                    tile_pb(gbk, ldk, kp, dp, n, y); /* dq rows = scale * ds @ k */
                    for (int r = 0; r < rr; ++r) {
                        T* out = dq + (b * lq + i0 + r) * d;
                        if (!nv[r]) { /* a row that sees no key: NaN, as its output */
                            for (int64_t c = 0; c < d; ++c) out[c] = NAN;
                        } else if (d == dp) {
                            for (int64_t c = 0; c < d; c += W) VSTORE(out + c, VLOAD(y + r * dp + c) * BCAST(scale));
                        } else {
                            for (int64_t c = 0; c < d; ++c) out[c] = y[r * dp + c] * (T)scale;
                        }
                    }
                }
                const int64_t rb = lq - i1 < RB ? lq - i1 : RB;
                rows_scaled(qb + i1 * d, d, rb, RB, (T)scale, qr, dp); /* the block's q * scale, padded */
                rows_scaled(gb + i1 * dv, dv, rb, RB, (T)1, dor, dvp);  /* and its do */
                tile_ptb(g, ldk, qr, dp, nb, dka);                     /* dk += ds^T @ (q * scale) */
                tile_ptb(p, ldk, dor, dvp, nb, dva);                    /* dv += p^T @ do */
            }
            for (int64_t j = 0; j < lk; ++j) {
                memcpy(dk + (b * lk + j) * d, dka + j * dp, d * sizeof(T));
                memcpy(dv_ + (b * lk + j) * dv, dva + j * dvp, dv * sizeof(T));
            }
        }
        free(kt);
    }
    return failed ? -1 : 0;
}

#undef vt
#undef vi
#undef rows_x4
#undef tile_abt
#undef tile_pb
#undef ptb_cols
#undef tile_ptb
#undef vsel
#undef vexp
#undef hmax
#undef hsum
#undef softmax_rows
#undef rows_scaled
#undef forward
#undef backward
#undef VB
#undef W
#undef TJ
#undef VLOAD
#undef VSTORE
#undef BCAST
#undef IN_REGS
#endif
