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

// NOTE: float16 is a storage format here: loads widen to float and stores round to nearest
// even, so float16 works on every device, with or without cl_khr_fp16.
#if IS_HALF
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, v) vstore_half_rte((float)(v), (i), (p))
#else
#define LOAD(p, i) ((ACC)(p)[i])
#define STORE(p, i, v) ((p)[i] = (T)(v))
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
