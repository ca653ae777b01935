// Kernels that only move elements: built once per (context, element size); E is an unsigned
// integer type of that size, so one build serves every dtype of the size. See common.h.cl.

// y[dst(i)] = x[src(i)] over ix's iteration space; s0 = source strides, s1 = destination
// strides (elements). Serves copy, permute, expand, slice, concat and pad.
__kernel void strided_copy(__global E* y, long yo, __global const E* x, long xo, long n,
                           Index ix) {
    long i = get_global_id(0) * PER, i1 = min(n, i + PER);
    if (ix.flat) {
        for (; i < i1; ++i) y[yo + i] = x[xo + i];
        return;
    }
    long is = xo, id = yo, unused = 0;
    INDEX_WALK(ix, i, i1, is, id, unused,
               for (long j = 0; j < run; ++j) y[id + j * walk_t1] = x[is + j * walk_t0];)
}

// y[p, j, q] = x[p, idx[j], q]; an index outside [0, A) is reported in err and reads nothing.
__kernel void gather(__global E* y, long yo, __global const E* x, long xo,
                     __global const long* idx, long io, long P, long J, long Q, long A,
                     __global long* err) {
    long i = get_global_id(0);
    if (i >= P * J * Q) return;
    long o = indexed_offset(i, idx, io, J, Q, A, err);
    y[yo + i] = o < 0 ? 0 : x[xo + o];
}

// gather with wrap (Paddle's rule for a user's index): an index in [-A, 0) counts from the end;
// one outside [-A, A) is reported in err and reads nothing.
__kernel void gather_wrap(__global E* y, long yo, __global const E* x, long xo,
                          __global const long* idx, long io, long P, long J, long Q, long A,
                          __global long* err) {
    long i = get_global_id(0);
    if (i >= P * J * Q) return;
    long q = i % Q, t = i / Q;
    long j = t % J, p = t / J;
    long k = idx[io + j];
    long w = k < 0 ? k + A : k;
    if (w < 0 || w >= A) {
        err[0] = 1;
        err[1] = k;
        y[yo + i] = 0;
        return;
    }
    y[yo + i] = x[xo + (p * A + w) * Q + q];
}

// y[p, idx[j], q] = src[p, j, q]; with duplicate indices any one value wins.
__kernel void scatter(__global E* y, long yo, __global const long* idx, long io,
                      __global const E* src, long so, long P, long J, long Q, long A,
                      __global long* err) {
    long i = get_global_id(0);
    if (i >= P * J * Q) return;
    long o = indexed_offset(i, idx, io, J, Q, A, err);
    if (o >= 0) y[yo + o] = src[so + i];
}
