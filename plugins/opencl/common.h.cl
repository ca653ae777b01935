// Shared prelude of every Oarlock OpenCL program. The host defines, per build:
//   T      storage type of the program's dtype (uchar for bool, half for float16)
//   UT     unsigned integer type of the same size (wrap-around integer arithmetic)
//   ACC    type the arithmetic runs in (float for float16, T otherwise)
//   IS_FLOAT IS_SIGNED IS_BOOL IS_HALF IS_DOUBLE HAS_FP64   0 or 1
//   T_MIN T_MAX   lowest and highest value (-INFINITY / INFINITY for floats)
//   LS  the work-group size of 1-d kernels and row reductions (a power of two)
#if IS_DOUBLE || HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

#define MAXD 8

// Up to three strided operands over one iteration space of `rank` dims; `flat` means every
// operand is contiguous over the whole space, so the element index is the linear index.
typedef struct {
    long rank;
    long flat;
    long shape[MAXD];
    long s0[MAXD];
    long s1[MAXD];
    long s2[MAXD];
} Index;

// Walk elements [i, i1) of ix's iteration space (i is advanced to i1) in runs along its
// innermost dim: the body runs once per run, with `run` elements from offsets o0, o1, o2 of
// the operands at strides s0, s1, s2 in ix (walk_t0, walk_t1, walk_t2 along the run). The
// multi-index of i is found by division once; past that it carries like an odometer.
// NOTE: a division chain per element per dim cost PoCL's CPU device 0.25 GB/s on a permute.
#define INDEX_WALK(ix, i, i1, o0, o1, o2, ...)                                               \
    {                                                                                        \
        int walk_last = (int)(ix).rank - 1;                                                  \
        long walk_c[MAXD], walk_r = (i);                                                     \
        for (int d = walk_last; d >= 0; --d) {                                               \
            long size = (ix).shape[d];                                                       \
            walk_c[d] = d ? walk_r % size : walk_r;                                          \
            walk_r = d ? walk_r / size : 0;                                                  \
            o0 += walk_c[d] * (ix).s0[d];                                                    \
            o1 += walk_c[d] * (ix).s1[d];                                                    \
            o2 += walk_c[d] * (ix).s2[d];                                                    \
        }                                                                                    \
        long walk_t0 = (ix).s0[walk_last], walk_t1 = (ix).s1[walk_last];                     \
        long walk_t2 = (ix).s2[walk_last], walk_n = (ix).shape[walk_last];                   \
        while ((i) < (i1)) {                                                                 \
            long run = min((i1) - (i), walk_n - walk_c[walk_last]);                          \
            __VA_ARGS__                                                                      \
            (i) += run;                                                                      \
            o0 += run * walk_t0;                                                             \
            o1 += run * walk_t1;                                                             \
            o2 += run * walk_t2;                                                             \
            walk_c[walk_last] += run;                                                        \
            for (int d = walk_last; d > 0 && walk_c[d] == (ix).shape[d]; --d) {              \
                o0 += (ix).s0[d - 1] - (ix).shape[d] * (ix).s0[d];                           \
                o1 += (ix).s1[d - 1] - (ix).shape[d] * (ix).s1[d];                           \
                o2 += (ix).s2[d - 1] - (ix).shape[d] * (ix).s2[d];                           \
                walk_c[d] = 0;                                                               \
                walk_c[d - 1] += 1;                                                          \
            }                                                                                \
        }                                                                                    \
    }

// NOTE: float16 is a storage format here: loads widen to float and stores round to nearest
// even, so float16 works on every device, with or without cl_khr_fp16. A NaN is stored as
// numpy narrows it (sign and top payload bits: 0x7e00 for the usual quiet NaN): PoCL's
// vstore_half_rte writes 0x7fff for every NaN. STORE_PRIVATE: into a private word.
#if IS_HALF
inline ushort nan_half_bits(float v) {
    uint u = as_uint(v), m = (u & 0x007fffffu) >> 13;
    return (ushort)(((u >> 16) & 0x8000u) | 0x7c00u | (m ? m : 1u));
}
inline void store_half(__global half* p, long i, float v) {
    if (isnan(v))
        ((__global ushort*)p)[i] = nan_half_bits(v);
    else
        vstore_half_rte(v, i, p);
}
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, v) store_half((p), (i), (float)(v))
#define STORE_PRIVATE(p, i, v) vstore_half_rte((float)(v), (i), (p))
#else
#define LOAD(p, i) ((ACC)(p)[i])
#define STORE(p, i, v) ((p)[i] = (T)(v))
#define STORE_PRIVATE(p, i, v) STORE(p, i, v)
#endif

// Indexed access along one axis (gather, scatter, scatter_add): work item i of P*J*Q picks
// index j and returns the flat offset (p*A + k)*Q + q into the indexed tensor, or -1 after
// recording an index outside [0, A) in err (the host raises; nothing is read or written).
inline long indexed_offset(long i, __global const long* idx, long io, long J, long Q, long A,
                           __global long* err) {
    long q = i % Q, t = i / Q;
    long j = t % J, p = t / J;
    long k = idx[io + j];
    if (k < 0 || k >= A) {
        err[0] = 1;
        err[1] = k;
        return -1;
    }
    return (p * A + k) * Q + q;
}
