// Kernels that only move elements: built once per (context, element size); E is an unsigned
// integer type of that size, so one build serves every dtype of the size. See common.h.cl.

// y[dst(i)] = x[src(i)] over ix's iteration space; s0 = source strides, s1 = destination
// strides (elements). Serves copy, permute, expand, slice, concat and pad.
// NOTE: an item finds its first element's multi-index by division once, then walks runs of
// the innermost dim and carries like an odometer: 64-bit division per element per dim cost
// PoCL's CPU device 0.25 GB/s on a permute (the attention heads' transposes).
__kernel void strided_copy(__global E* y, long yo, __global const E* x, long xo, long n,
                           Index ix) {
    long i = get_global_id(0) * PER, i1 = min(n, i + PER);
    if (ix.flat) {
        for (; i < i1; ++i) y[yo + i] = x[xo + i];
        return;
    }
    int last = (int)ix.rank - 1;
    long c[MAXD];
    long is = xo, id = yo, r = i;
    for (int d = last; d >= 0; --d) {
        long size = ix.shape[d];
        c[d] = d ? r % size : r;
        r = d ? r / size : 0;
        is += c[d] * ix.s0[d];
        id += c[d] * ix.s1[d];
    }
    long ss = ix.s0[last], sd = ix.s1[last], inner = ix.shape[last];
    while (i < i1) {
        long run = min(i1 - i, inner - c[last]);
        for (long j = 0; j < run; ++j) y[id + j * sd] = x[is + j * ss];
        i += run;
        is += run * ss;
        id += run * sd;
        c[last] += run;
        for (int d = last; d > 0 && c[d] == ix.shape[d]; --d) {  // carry into the next dim
            is += ix.s0[d - 1] - ix.shape[d] * ix.s0[d];
            id += ix.s1[d - 1] - ix.shape[d] * ix.s1[d];
            c[d] = 0;
            c[d - 1] += 1;
        }
    }
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

// y[p, idx[j], q] = src[p, j, q]; with duplicate indices any one value wins.
__kernel void scatter(__global E* y, long yo, __global const long* idx, long io,
                      __global const E* src, long so, long P, long J, long Q, long A,
                      __global long* err) {
    long i = get_global_id(0);
    if (i >= P * J * Q) return;
    long o = indexed_offset(i, idx, io, J, Q, A, err);
    if (o >= 0) y[yo + o] = src[so + i];
}
