// Per-dtype kernels: elementwise math and comparisons, reductions, matmul, arange,
// scatter_add and philox_uniform. Built once per (context, dtype); see common.h.cl.

// ---- integer-safe arithmetic (signed overflow wraps, as numpy does) ----
#if IS_BOOL
#define ADD(a, b) ((a) | (b))
#define MUL(a, b) ((a) & (b))
#define SUB(a, b) ((a) ^ (b))
#define NEG(a) (a)
#elif IS_FLOAT
#define ADD(a, b) ((a) + (b))
#define MUL(a, b) ((a) * (b))
#define SUB(a, b) ((a) - (b))
#define NEG(a) (-(a))
#else
#define ADD(a, b) ((T)((UT)(a) + (UT)(b)))
#define MUL(a, b) ((T)((UT)(a) * (UT)(b)))
#define SUB(a, b) ((T)((UT)(a) - (UT)(b)))
#define NEG(a) ((T)(-(UT)(a)))
#endif

#if IS_FLOAT
// NOTE: numpy's maximum/minimum propagate NaN; fmax/fmin would drop it.
#define MAXIMUM(a, b) (((a) > (b) || isnan(a)) ? (a) : (b))
#define MINIMUM(a, b) (((a) < (b) || isnan(a)) ? (a) : (b))
#define SIGN(a) (isnan(a) ? (a) : (ACC)(((a) > 0) - ((a) < 0)))
#define ABS(a) fabs(a)
#else
#define MAXIMUM(a, b) ((a) > (b) ? (a) : (b))
#define MINIMUM(a, b) ((a) < (b) ? (a) : (b))
#if IS_SIGNED
#define SIGN(a) ((ACC)(((a) > 0) - ((a) < 0)))
#define ABS(a) ((a) < 0 ? NEG(a) : (a))
#else
#define SIGN(a) ((ACC)((a) > 0))
#define ABS(a) (a)
#endif
#endif

#if IS_FLOAT
// numpy's npy_divmod: floor division and a remainder with the sign of the divisor.
inline ACC py_floordiv(ACC a, ACC b) {
    if (b == 0) return a / b;
    ACC mod = fmod(a, b);
    ACC div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
    if (div != 0) {
        ACC fd = floor(div);
        if (div - fd > (ACC)0.5) fd += 1;
        return fd;
    }
    return copysign((ACC)0, a / b);
}
inline ACC py_mod(ACC a, ACC b) {
    if (b == 0) return fmod(a, b);
    ACC mod = fmod(a, b);
    if (mod != 0) {
        if ((b < 0) != (mod < 0)) mod += b;
    } else {
        mod = copysign((ACC)0, b);
    }
    return mod;
}
#define POW(a, b) pow(a, b)
#else
// NOTE: integer division by zero gives 0 (numpy's result) instead of trapping the device;
// MIN / -1 wraps to MIN.
inline ACC py_floordiv(ACC a, ACC b) {
    if (b == 0) return 0;
#if IS_SIGNED
    if (b == -1) return NEG(a);
    ACC q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
#else
    return a / b;
#endif
}
inline ACC py_mod(ACC a, ACC b) {
    if (b == 0) return 0;
#if IS_SIGNED
    if (b == -1) return 0;
    ACC r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
#else
    return a % b;
#endif
}
inline ACC ipow(ACC a, ACC b) {
#if IS_SIGNED
    if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
#endif
    UT r = 1, base = (UT)a;
    UT e = (UT)b;
    while (e) {
        if (e & 1) r = (UT)(r * base);
        base = (UT)(base * base);
        e >>= 1;
    }
    return (ACC)(T)r;
}
#define POW(a, b) ipow(a, b)
#endif

// ---- elementwise ----
// Each work item handles PER consecutive elements (a build option; see programs.py).
#define UNARY(NAME, EXPR)                                                                    \
    __kernel void NAME(__global T* y, long yo, __global const T* x, long xo, long n) {       \
        long i0 = get_global_id(0) * PER, i1 = min(n, i0 + PER);                             \
        for (long i = i0; i < i1; ++i) {                                                     \
            ACC a = LOAD(x, xo + i);                                                         \
            STORE(y, yo + i, (EXPR));                                                        \
        }                                                                                    \
    }

// Binary ops broadcast in-kernel: operand strides are 0 along broadcast dims; ix.flat says
// 1: both operands contiguous, 2: a is one element, 3: b is one element (a loop the compiler
// vectorises; the strided walk measured half the bandwidth), 0: the strided walk. The outermost
// dim needs no division (its index is what remains), so rank-1 broadcasts divide nothing.
#define BINARY(NAME, OUT_T, OUT_STORE, EXPR)                                                 \
    __kernel void NAME(__global OUT_T* z, long zo, __global const T* xa, long ao,             \
                       __global const T* xb, long bo, long n, Index ix) {                    \
        long i0 = get_global_id(0) * PER, i1 = min(n, i0 + PER);                             \
        if (ix.flat == 1) {                                                                  \
            for (long i = i0; i < i1; ++i) {                                                 \
                ACC a = LOAD(xa, ao + i);                                                    \
                ACC b = LOAD(xb, bo + i);                                                    \
                OUT_STORE(z, zo + i, (EXPR));                                                \
            }                                                                                \
            return;                                                                          \
        }                                                                                    \
        if (ix.flat == 2) { /* one element of a against all of b */                          \
            ACC a = LOAD(xa, ao);                                                            \
            for (long i = i0; i < i1; ++i) {                                                 \
                ACC b = LOAD(xb, bo + i);                                                    \
                OUT_STORE(z, zo + i, (EXPR));                                                \
            }                                                                                \
            return;                                                                          \
        }                                                                                    \
        if (ix.flat == 3) { /* all of a against one element of b */                          \
            ACC b = LOAD(xb, bo);                                                            \
            for (long i = i0; i < i1; ++i) {                                                 \
                ACC a = LOAD(xa, ao + i);                                                    \
                OUT_STORE(z, zo + i, (EXPR));                                                \
            }                                                                                \
            return;                                                                          \
        }                                                                                    \
        long ia = ao, ib = bo, iz = zo;                                                      \
        INDEX_WALK(ix, i0, i1, ia, ib, iz, for (long j = 0; j < run; ++j) {                  \
            ACC a = LOAD(xa, ia + j * walk_t0);                                              \
            ACC b = LOAD(xb, ib + j * walk_t1);                                              \
            OUT_STORE(z, zo + i0 + j, (EXPR));                                               \
        })                                                                                   \
    }
#define STORE_BOOL(z, i, v) ((z)[i] = (uchar)((v) ? 1 : 0))

#if IS_FLOAT
UNARY(u_exp, exp(a))
UNARY(u_log, log(a))
UNARY(u_sqrt, sqrt(a))
UNARY(u_rsqrt, (ACC)1 / sqrt(a))
UNARY(u_sin, sin(a))
UNARY(u_cos, cos(a))
UNARY(u_tanh, tanh(a))
UNARY(u_erf, erf(a))
UNARY(u_floor, floor(a))
UNARY(u_ceil, ceil(a))
BINARY(b_div, T, STORE, a / b)
#endif
#if IS_BOOL
UNARY(u_logical_not, !a)
BINARY(b_logical_and, uchar, STORE_BOOL, a && b)
BINARY(b_logical_or, uchar, STORE_BOOL, a || b)
#else
UNARY(u_neg, NEG(a))
UNARY(u_sign, SIGN(a))
BINARY(b_sub, T, STORE, SUB(a, b))
BINARY(b_pow, T, STORE, POW(a, b))
BINARY(b_floor_divide, T, STORE, py_floordiv(a, b))
BINARY(b_remainder, T, STORE, py_mod(a, b))
#endif
UNARY(u_abs, ABS(a))
BINARY(b_add, T, STORE, ADD(a, b))
BINARY(b_mul, T, STORE, MUL(a, b))
BINARY(b_maximum, T, STORE, MAXIMUM(a, b))
BINARY(b_minimum, T, STORE, MINIMUM(a, b))
BINARY(b_eq, uchar, STORE_BOOL, a == b)
BINARY(b_ne, uchar, STORE_BOOL, a != b)
BINARY(b_lt, uchar, STORE_BOOL, a < b)
BINARY(b_le, uchar, STORE_BOOL, a <= b)
BINARY(b_gt, uchar, STORE_BOOL, a > b)
BINARY(b_ge, uchar, STORE_BOOL, a >= b)

__kernel void where_(__global T* z, long zo, __global const uchar* cond, long co,
                     __global const T* xa, long ao, __global const T* xb, long bo, long n,
                     Index ix) {
    long i = get_global_id(0) * PER, i1 = min(n, i + PER);
    if (ix.flat) {
        for (; i < i1; ++i) STORE(z, zo + i, cond[co + i] ? LOAD(xa, ao + i) : LOAD(xb, bo + i));
        return;
    }
    long ic = co, ia = ao, ib = bo;
    INDEX_WALK(ix, i, i1, ic, ia, ib, for (long j = 0; j < run; ++j) {
        STORE(z, zo + i + j, cond[ic + j * walk_t0] ? LOAD(xa, ia + j * walk_t1) : LOAD(xb, ib + j * walk_t2));
    })
}

// ---- reductions ----
// *_rows: one work-group per (row, chunk) of a (rows, R) array, tree-reduced in local memory.
// *_cols: one work item per (a, b) of an (A, R, B) array, reducing over R in order.
#define REDUCE(NAME, IDENT, COMB)                                                            \
    __kernel __attribute__((reqd_work_group_size(LS, 1, 1)))                                 \
    void NAME##_rows(__global T* y, long yo, __global const T* x, long xo, long R,           \
                     long chunk, long nchunks) {                                             \
        __local ACC sh[LS];                                                                  \
        long g = get_group_id(0);                                                            \
        long row = g / nchunks, beg = (g % nchunks) * chunk;                                 \
        long end = min(R, beg + chunk);                                                      \
        int l = get_local_id(0);                                                             \
        ACC acc = IDENT;                                                                     \
        for (long k = beg + l; k < end; k += LS) {                                           \
            ACC a = acc, b = LOAD(x, xo + row * R + k);                                      \
            acc = COMB;                                                                      \
        }                                                                                    \
        sh[l] = acc;                                                                         \
        barrier(CLK_LOCAL_MEM_FENCE);                                                        \
        for (int s = LS / 2; s > 0; s >>= 1) {                                               \
            if (l < s) {                                                                     \
                ACC a = sh[l], b = sh[l + s];                                                \
                sh[l] = COMB;                                                                \
            }                                                                                \
            barrier(CLK_LOCAL_MEM_FENCE);                                                    \
        }                                                                                    \
        if (l == 0) STORE(y, yo + g, sh[0]);                                                 \
    }                                                                                        \
    __kernel void NAME##_cols(__global T* y, long yo, __global const T* x, long xo, long A,  \
                              long R, long B) {                                              \
        long i = get_global_id(0);                                                           \
        if (i >= A * B) return;                                                              \
        long base = xo + (i / B) * R * B + i % B;                                            \
        ACC acc = IDENT;                                                                     \
        for (long r = 0; r < R; ++r) {                                                       \
            ACC a = acc, b = LOAD(x, base + r * B);                                          \
            acc = COMB;                                                                      \
        }                                                                                    \
        STORE(y, yo + i, acc);                                                               \
    }

#if !IS_BOOL
REDUCE(r_sum, (ACC)0, ADD(a, b))
REDUCE(r_prod, (ACC)1, MUL(a, b))
#endif
REDUCE(r_max, (ACC)T_MIN, MAXIMUM(a, b))
REDUCE(r_min, (ACC)T_MAX, MINIMUM(a, b))

// Does (v2, i2) beat (v1, i1)? Ties go to the smaller index; NaN beats everything (numpy).
#if IS_FLOAT
#define BEATS(CMP, v1, i1, v2, i2) \
    (isnan(v1) ? (isnan(v2) && (i2) < (i1)) \
               : (isnan(v2) || (v2) CMP (v1) || ((v2) == (v1) && (i2) < (i1))))
#else
#define BEATS(CMP, v1, i1, v2, i2) ((v2) CMP (v1) || ((v2) == (v1) && (i2) < (i1)))
#endif

#define ARGREDUCE(NAME, CMP)                                                                 \
    __kernel __attribute__((reqd_work_group_size(LS, 1, 1)))                                 \
    void NAME##_rows(__global long* y, long yo, __global const T* x, long xo, long R) {      \
        __local ACC sv[LS];                                                                  \
        __local long si[LS];                                                                 \
        long row = get_group_id(0);                                                          \
        int l = get_local_id(0);                                                             \
        ACC bv = 0;                                                                          \
        long bi = -1;                                                                        \
        for (long k = l; k < R; k += LS) {                                                   \
            ACC v = LOAD(x, xo + row * R + k);                                               \
            if (bi < 0 || BEATS(CMP, bv, bi, v, k)) { bv = v; bi = k; }                      \
        }                                                                                    \
        sv[l] = bv;                                                                          \
        si[l] = bi;                                                                          \
        barrier(CLK_LOCAL_MEM_FENCE);                                                        \
        for (int s = LS / 2; s > 0; s >>= 1) {                                               \
            if (l < s) {                                                                     \
                long oi = si[l + s];                                                         \
                ACC ov = sv[l + s];                                                          \
                if (oi >= 0 && (si[l] < 0 || BEATS(CMP, sv[l], si[l], ov, oi))) {           \
                    sv[l] = ov;                                                              \
                    si[l] = oi;                                                              \
                }                                                                            \
            }                                                                                \
            barrier(CLK_LOCAL_MEM_FENCE);                                                    \
        }                                                                                    \
        if (l == 0) y[yo + row] = si[0];                                                     \
    }                                                                                        \
    __kernel void NAME##_cols(__global long* y, long yo, __global const T* x, long xo,       \
                              long A, long R, long B) {                                      \
        long i = get_global_id(0);                                                           \
        if (i >= A * B) return;                                                              \
        long base = xo + (i / B) * R * B + i % B;                                            \
        ACC bv = LOAD(x, base);                                                              \
        long bi = 0;                                                                         \
        for (long r = 1; r < R; ++r) {                                                       \
            ACC v = LOAD(x, base + r * B);                                                   \
            if (BEATS(CMP, bv, bi, v, r)) { bv = v; bi = r; }                                \
        }                                                                                    \
        y[yo + i] = bi;                                                                      \
    }

ARGREDUCE(r_argmax, >)
ARGREDUCE(r_argmin, <)

// ---- batched matmul: TSxTS tiles in local memory, each work item computes WPT rows ----
#if !IS_BOOL
#define TS 32
#define WPT 4
#define RTS (TS / WPT)
__kernel __attribute__((reqd_work_group_size(TS, RTS, 1)))
void matmul(__global T* c, long co, __global const T* a, long ao, __global const T* b, long bo,
            long M, long N, long K) {
    __local ACC As[TS][TS + 1];
    __local ACC Bs[TS][TS + 1];
    int lc = get_local_id(0), lr = get_local_id(1);
    long col = get_group_id(0) * TS + lc;
    long row0 = get_group_id(1) * TS + lr;
    long bt = get_global_id(2);
    a += ao + bt * M * K;
    b += bo + bt * K * N;
    c += co + bt * M * N;
    ACC acc[WPT];
    for (int w = 0; w < WPT; ++w) acc[w] = 0;
    for (long t = 0; t < K; t += TS) {
        for (int w = 0; w < WPT; ++w) {
            long r = row0 + w * RTS;
            int rr = lr + w * RTS;
            As[rr][lc] = (r < M && t + lc < K) ? LOAD(a, r * K + t + lc) : (ACC)0;
            Bs[rr][lc] = (t + rr < K && col < N) ? LOAD(b, (t + rr) * N + col) : (ACC)0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; ++k) {
            ACC bk = Bs[k][lc];
            for (int w = 0; w < WPT; ++w) acc[w] = ADD(acc[w], MUL(As[lr + w * RTS][k], bk));
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int w = 0; w < WPT; ++w) {
        long r = row0 + w * RTS;
        if (r < M && col < N) STORE(c, r * N + col, acc[w]);
    }
}
#endif

// ---- batched matmul for CPU devices: an RM x CW register block per item ----
// NOTE: on PoCL's CPU device a work-group runs its items one after another (vectorised only
// where it can prove it pays), so the 32x32 local-memory tile above mostly copies. Here an
// item holds RM rows x CW columns of C in vector registers: per k, one vector load of B's row
// and RM scalar loads of A. The sum runs over k in order, like the tiled kernel. a * b + c
// under FP_CONTRACT (the compiler fuses it into the FMA instruction; 15-35% faster than
// without), not fma(): PoCL's vector fma() is a library call, 2-3x slower. PoCL (3.0) also
// calls vload8/vstore8 as functions and keeps arrays indexed in loops it does not unroll on
// the stack, so the loads are spelled out (LD8) and the loops over the block unrolled: the
// 6 x 2 float8 accumulators take 12 of AVX2's 16 registers (with 8 rows they spilled, and
// every FMA went through memory: 3-4x slower).
#if IS_FLOAT && !IS_HALF
#define MM_RM 6
#if IS_DOUBLE
#define VT double8
#define MM_NV 1
#else
#define VT float8
#define MM_NV 2
#endif
#define MM_CW (8 * MM_NV)
// 8 consecutive elements as a vector; the same with those at or past w read as 0; a vector
// into 8 consecutive elements
#define LD8(p) ((VT)((p)[0], (p)[1], (p)[2], (p)[3], (p)[4], (p)[5], (p)[6], (p)[7]))
#define LD8W(p, w)                                                                               \
    ((VT)((w) > 0 ? (p)[0] : 0, (w) > 1 ? (p)[1] : 0, (w) > 2 ? (p)[2] : 0, (w) > 3 ? (p)[3] : 0, \
          (w) > 4 ? (p)[4] : 0, (w) > 5 ? (p)[5] : 0, (w) > 6 ? (p)[6] : 0, (w) > 7 ? (p)[7] : 0))
#define ST8(p, x)                                                                                \
    ((p)[0] = (x).s0, (p)[1] = (x).s1, (p)[2] = (x).s2, (p)[3] = (x).s3, (p)[4] = (x).s4,         \
     (p)[5] = (x).s5, (p)[6] = (x).s6, (p)[7] = (x).s7)
// acc[r][v] += a_r * b[v] for the block's rows r; ark(r) is row r's element of A at this k
#define MM_FMA(ark)                                                                              \
    _Pragma("unroll") for (int r = 0; r < MM_RM; ++r) {                                          \
        T ar_ = ark(r);                                                                          \
        _Pragma("unroll") for (int v = 0; v < MM_NV; ++v) acc[r][v] = ar_ * bk[v] + acc[r][v];    \
    }
// Store the block at c (C's row row0, column col; rows past M and columns past w dropped)
#define MM_STORE(c, N, rows, w)                                                                  \
    _Pragma("unroll") for (int r = 0; r < MM_RM; ++r) {                                          \
        if (r >= (rows)) break;                                                                  \
        _Pragma("unroll") for (int v = 0; v < MM_NV; ++v) {                                      \
            if ((w) >= 8 * v + 8) {                                                              \
                ST8((c) + r * (N) + 8 * v, acc[r][v]);                                           \
            } else {                                                                             \
                T o_[8];                                                                         \
                ST8(o_, acc[r][v]);                                                              \
                for (int j = 0; j < 8 && 8 * v + j < (w); ++j) (c)[r * (N) + 8 * v + j] = o_[j]; \
            }                                                                                    \
        }                                                                                        \
    }
#define MM_ZERO                                                                                  \
    VT acc[MM_RM][MM_NV];                                                                        \
    _Pragma("unroll") for (int r = 0; r < MM_RM; ++r)                                            \
        _Pragma("unroll") for (int v = 0; v < MM_NV; ++v) acc[r][v] = 0;

// Operands in place: A with any strides (sam, sak; a transposed A is sam = 1 and needs no
// copy), B with contiguous rows; rows past M repeat the last row and are not stored, a ragged
// block of columns reads B's row with the columns past N as zeros. For operands that stay in
// cache (the Llama's projections, attention heads and weight gradients) this saves the
// packing launches below and their copies, which cost as much as the product itself.
__kernel void matmul_strided(__global T* c, long co, __global const T* a, long ao, long sab,
                             long sam, long sak, __global const T* b, long bo, long sbb, long M,
                             long N, long K) {
#pragma OPENCL FP_CONTRACT ON
    long jb = get_global_id(0), ib = get_global_id(1), bt = get_global_id(2);
    long col = jb * MM_CW, row0 = ib * MM_RM;
    if (row0 >= M || col >= N) return;
    __global const T* pb = b + bo + bt * sbb + col;
    __global const T* pa[MM_RM];
#pragma unroll
    for (int r = 0; r < MM_RM; ++r) pa[r] = a + ao + bt * sab + (row0 + r < M ? row0 + r : M - 1) * sam;
    MM_ZERO
    long w = N - col;
#define A_AT(r) pa[r][k * sak]
    if (w >= MM_CW) {
        for (long k = 0; k < K; ++k) {
            VT bk[MM_NV];
#pragma unroll
            for (int v = 0; v < MM_NV; ++v) bk[v] = LD8(pb + k * N + 8 * v);
            MM_FMA(A_AT)
        }
    } else {
        for (long k = 0; k < K; ++k) {
            VT bk[MM_NV];
#pragma unroll
            for (int v = 0; v < MM_NV; ++v) bk[v] = LD8W(pb + k * N + 8 * v, w - 8 * v);
            MM_FMA(A_AT)
        }
    }
#undef A_AT
    MM_STORE(c + co + bt * M * N + row0 * N + col, N, M - row0, w)
}

// Large operands: A and B are first packed into panels (A: [batch][M/RM][K][RM], B:
// [batch][N/CW][K][CW], zero padded), so an item walks two contiguous streams (no page
// stride per k). Measured 5-8x the tiled kernel (benchmarks/opencl.py).
__kernel void matmul_pack_a(__global T* ap, __global const T* a, long ao, long M, long K, long n) {
    long i0 = get_global_id(0) * PER, i1 = min(n, i0 + PER);
    long mb = (M + MM_RM - 1) / MM_RM;
    for (long i = i0; i < i1; ++i) {
        long r = i % MM_RM, t = i / MM_RM;
        long k = t % K, u = t / K;
        long row = (u % mb) * MM_RM + r, bt = u / mb;
        ap[i] = row < M ? a[ao + (bt * M + row) * K + k] : (T)0;
    }
}
__kernel void matmul_pack_b(__global T* bp, __global const T* b, long bo, long K, long N, long n) {
    long i0 = get_global_id(0) * PER, i1 = min(n, i0 + PER);
    long nb = (N + MM_CW - 1) / MM_CW;
    for (long i = i0; i < i1; ++i) {
        long v = i % MM_CW, t = i / MM_CW;
        long k = t % K, u = t / K;
        long col = (u % nb) * MM_CW + v, bt = u / nb;
        bp[i] = col < N ? b[bo + (bt * K + k) * N + col] : (T)0;
    }
}
__kernel void matmul_packed(__global T* c, long co, __global const T* ap, __global const T* bp,
                            long M, long N, long K) {
#pragma OPENCL FP_CONTRACT ON
    long jb = get_global_id(0), ib = get_global_id(1), bt = get_global_id(2);
    long col = jb * MM_CW, row0 = ib * MM_RM;
    if (row0 >= M) return;
    long mb = (M + MM_RM - 1) / MM_RM, nb = (N + MM_CW - 1) / MM_CW;
    __global const T* pa = ap + (bt * mb + ib) * K * MM_RM;
    __global const T* pb = bp + (bt * nb + jb) * K * MM_CW;
    MM_ZERO
#define A_AT(r) pa[k * MM_RM + r]
    for (long k = 0; k < K; ++k) {
        VT bk[MM_NV];
#pragma unroll
        for (int v = 0; v < MM_NV; ++v) bk[v] = LD8(pb + k * MM_CW + 8 * v);
        MM_FMA(A_AT)
    }
#undef A_AT
    MM_STORE(c + co + bt * M * N + row0 * N + col, N, M - row0, N - col)
}

// Few rows (a decoding step's matrix-vector products): an item reads its row of A and CW
// columns of B in place and sums over k in order.
__kernel void matmul_small(__global T* c, long co, __global const T* a, long ao, __global const T* b,
                           long bo, long M, long N, long K) {
#pragma OPENCL FP_CONTRACT ON
    long jb = get_global_id(0), row = get_global_id(1), bt = get_global_id(2);
    long col = jb * MM_CW;
    if (col >= N || row >= M) return;
    __global const T* pa = a + ao + (bt * M + row) * K;
    __global const T* pb = b + bo + bt * K * N + col;
    c += co + (bt * M + row) * N + col;
    long w = N - col;
    VT acc[MM_NV];
#pragma unroll
    for (int v = 0; v < MM_NV; ++v) acc[v] = 0;
    for (long k = 0; k < K; ++k) {
        T ak = pa[k];
#pragma unroll
        for (int v = 0; v < MM_NV; ++v)
            acc[v] = ak * (w >= MM_CW ? LD8(pb + k * N + 8 * v) : LD8W(pb + k * N + 8 * v, w - 8 * v)) + acc[v];
    }
#pragma unroll
    for (int v = 0; v < MM_NV; ++v) {
        T o_[8];
        ST8(o_, acc[v]);
        for (int j = 0; j < 8 && 8 * v + j < w; ++j) c[8 * v + j] = o_[j];
    }
}
#endif

// ---- creation ----
#if IS_FLOAT && HAS_FP64
#define ARANGE_T double
#elif IS_FLOAT
#define ARANGE_T float
#else
#define ARANGE_T long
#endif
__kernel void arange(__global T* y, long yo, ARANGE_T start, ARANGE_T step, long n) {
    long i = get_global_id(0);
    if (i >= n) return;
#if IS_FLOAT
    STORE(y, yo + i, start + (ARANGE_T)i * step);
#else
    STORE(y, yo + i, (T)((ulong)start + (ulong)i * (ulong)step));
#endif
}

// ---- scatter_add: y[p, idx[j], q] += src[p, j, q], atomically ----
// 8-byte values need cl_khr_int64_base_atomics; without it the host reports the missing kernel.
#if !IS_BOOL && (T_SIZE != 8 || HAS_I64_ATOMICS)
inline void atomic_add_t(__global T* p, ACC v) {
#if !IS_FLOAT && !IS_HALF && (T_SIZE == 4)
    atomic_add((volatile __global int*)p, (int)v);
#elif !IS_FLOAT && (T_SIZE == 8)
    atom_add((volatile __global long*)p, (long)v);
#elif T_SIZE == 4
    volatile __global uint* w = (volatile __global uint*)p;
    uint old = *w, seen;
    do {
        seen = old;
        float nv = as_float(seen) + v;
        old = atomic_cmpxchg(w, seen, as_uint(nv));
    } while (old != seen);
#elif T_SIZE == 8
    volatile __global ulong* w = (volatile __global ulong*)p;
    ulong old = *w, seen;
    do {
        seen = old;
        old = atom_cmpxchg(w, seen, as_ulong(as_double(seen) + v));
    } while (old != seen);
#else
    // NOTE: 1- and 2-byte values: compare-and-swap on the aligned 32-bit word holding them
    // (buffers are allocated in multiples of 8 bytes, so the word is inside the buffer;
    // little-endian devices only).
    ulong addr = (ulong)p;
    volatile __global uint* w = (volatile __global uint*)(addr & ~(ulong)3);
    uint shift = (uint)(addr & 3) * 8;
    uint mask = ((1u << (8 * T_SIZE)) - 1u) << shift;
    uint old = *w, seen;
    do {
        seen = old;
        T_BITS bits = (T_BITS)((seen & mask) >> shift);
        ACC cur = LOAD((T*)&bits, 0);
        STORE_PRIVATE((T*)&bits, 0, ADD(cur, v));
        uint nw = (seen & ~mask) | ((uint)bits << shift);
        old = atomic_cmpxchg(w, seen, nw);
    } while (old != seen);
#endif
}

__kernel void scatter_add(__global T* y, long yo, __global const long* idx, long io,
                          __global const T* src, long so, long P, long J, long Q, long A,
                          __global long* err) {
    long i = get_global_id(0);
    if (i >= P * J * Q) return;
    long o = indexed_offset(i, idx, io, J, Q, A, err);
    if (o >= 0) atomic_add_t(y + yo + o, LOAD(src, so + i));
}
#endif

// CPU devices, P * Q columns or more than a group: item (p, q) owns column q of y[p] and adds
// src[p, j, q] for j in order, with no atomics (numpy's np.add.at order, so the sums are
// deterministic; an embedding gradient's few rows no longer serialise on compare-and-swap).
#if !IS_BOOL
__kernel void scatter_add_cols(__global T* y, long yo, __global const long* idx, long io,
                               __global const T* src, long so, long P, long J, long Q, long A,
                               __global long* err) {
    long i = get_global_id(0);
    if (i >= P * Q) return;
    long p = i / Q, q = i % Q;
    __global const T* s = src + so + p * J * Q + q;
    long yb = yo + p * A * Q + q;
    for (long j = 0; j < J; ++j) {
        long k = idx[io + j];
        if (k < 0 || k >= A) {
            err[0] = 1;
            err[1] = k;
            continue;
        }
        STORE(y, yb + k * Q, ADD(LOAD(y, yb + k * Q), LOAD(s, j * Q)));
    }
}
#endif

// ---- philox_uniform: Philox4x32-10 (Salmon et al., Random123) ----
#if IS_FLOAT && !IS_HALF
inline uint4 philox4x32_10(uint4 c, uint2 k) {
    for (int r = 0; r < 10; ++r) {
        if (r > 0) {
            k.x += 0x9E3779B9u;
            k.y += 0xBB67AE85u;
        }
        uint lo0 = 0xD2511F53u * c.x, hi0 = mul_hi(0xD2511F53u, c.x);
        uint lo1 = 0xCD9E8D57u * c.z, hi1 = mul_hi(0xCD9E8D57u, c.z);
        c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}

// The raw generator, for known-answer tests: out[0..3] = Philox4x32-10(ctr, key).
__kernel void philox_bits(__global uint* out, uint4 ctr, uint2 key) {
    vstore4(philox4x32_10(ctr, key), 0, out);
}

__kernel void philox_uniform(__global T* y, long yo, long n, ulong offset, uint k0, uint k1) {
    long g = get_global_id(0);
    if (g * 4 >= n) return;
    ulong ctr = offset + (ulong)g;
    uint4 c = philox4x32_10((uint4)((uint)ctr, (uint)(ctr >> 32), 0, 0), (uint2)(k0, k1));
    uint bits[4] = {c.x, c.y, c.z, c.w};
    for (int w = 0; w < 4; ++w) {
        long i = g * 4 + w;
        // NOTE: (bits >> 8) has 24 bits, so the product is exact in float and double.
        if (i < n) y[yo + i] = (T)(bits[w] >> 8) * (T)5.9604644775390625e-8;
    }
}
#endif

// ---- argsort along the last axis: a stable merge sort of (key, index) pairs ----
// Rows of R elements; runs of SORT_C sorted by insertion first, then one launch per run width
// merges pairs of runs: each work item finds where its SORT_C outputs start by a binary search
// along the merge path, then merges them in order (O(n) per launch, O(n log n) in all).
// NOTE: NaN is greater than every number (last ascending, first descending), as numpy and
// Paddle sort; NaNs, and equal values (-0.0 == +0.0), keep their order.
#define SORT_C 16
#if IS_FLOAT
#define SORT_NAN(v) isnan(v)
#else
#define SORT_NAN(v) 0
#endif
// a goes strictly before b in the sorted order
inline int sort_before(ACC a, ACC b, int desc) {
    if (desc) return !SORT_NAN(b) && (SORT_NAN(a) || a > b);
    return !SORT_NAN(a) && (SORT_NAN(b) || a < b);
}

// Work item g sorts elements [c * SORT_C, (c + 1) * SORT_C) of row g / chunks (stable insertion).
__kernel void argsort_block(__global T* ky, __global long* iy, long yo, __global const T* x, long xo,
                            long rows, long R, int desc) {
    long chunks = (R + SORT_C - 1) / SORT_C, g = get_global_id(0);
    if (g >= rows * chunks) return;
    long row = g / chunks, s = (g % chunks) * SORT_C, m = min((long)SORT_C, R - s);
    ACC kv[SORT_C];
    long iv[SORT_C];
    for (long a = 0; a < m; ++a) {
        ACC v = LOAD(x, xo + row * R + s + a);
        long b = a;
        for (; b > 0 && sort_before(v, kv[b - 1], desc); --b) {
            kv[b] = kv[b - 1];
            iv[b] = iv[b - 1];
        }
        kv[b] = v;
        iv[b] = s + a;
    }
    for (long a = 0; a < m; ++a) {
        STORE(ky, row * R + s + a, kv[a]);
        iy[yo + row * R + s + a] = iv[a];
    }
}

// Merge runs [s, s + w) and [s + w, s + 2w) of every row (w a multiple of SORT_C): work item
// g writes outputs [c * SORT_C, (c + 1) * SORT_C) of its row; the left run wins ties (stable).
__kernel void argsort_merge(__global T* kd, __global long* id, long ido, __global const T* ks,
                            __global const long* is, long iso, long rows, long R, long w, int desc) {
    long chunks = (R + SORT_C - 1) / SORT_C, g = get_global_id(0);
    if (g >= rows * chunks) return;
    long row = g / chunks, o = (g % chunks) * SORT_C;
    long s = o / (2 * w) * (2 * w), mid = min(s + w, R), end = min(s + 2 * w, R);
    long na = mid - s, nb = end - mid, d = o - s;
    __global const T* ka = ks + row * R + s;
    __global const T* kb = ka + na;
    long lo = max(0L, d - nb), hi = min(d, na);
    while (lo < hi) {  // i outputs from the left run and d - i from the right precede output d
        long m = lo + (hi - lo) / 2;
        if (!sort_before(LOAD(kb, d - 1 - m), LOAD(ka, m), desc)) lo = m + 1; else hi = m;
    }
    long i = lo, j = d - lo, stop = min(o + SORT_C, end);
    __global const long* ia = is + iso + row * R + s;
    __global const long* ib = ia + na;
    for (long out = row * R + o; out < row * R + stop; ++out) {
        int left = j >= nb || (i < na && !sort_before(LOAD(kb, j), LOAD(ka, i), desc));
        STORE(kd, out, left ? LOAD(ka, i) : LOAD(kb, j));
        id[ido + out] = left ? ia[i] : ib[j];
        if (left) ++i; else ++j;
    }
}
