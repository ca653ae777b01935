/* Index kernels of the CPU plugin (plugins/cpu/index.py builds them): scatter_add, gather and
 * where. scatter_add: y[o, idx[i], :] += src[o, i, :]
 * for i in order, y already a copy of x (an embedding's gradient: 1024 token ids into a 46 x 64
 * table took 0.32-0.40 ms in the tiny Llama step as numpy's sort and reduceat).
 *
 * Each element of y receives its additions in the order of i, as numpy's add.at adds them, so
 * the result has add.at's bits. The team's threads take contiguous shares of a row's columns
 * (every addition to one element stays on one thread, in order).
 *
 * Compiled once per element type: float, or double with -DT_DOUBLE. Returns -1, or the first
 * position i whose index is outside [0, size) (then nothing has been added).
 */
#include <stdint.h>
#include <string.h>

#ifdef T_DOUBLE
#define T double
#else
#define T float
#endif

int64_t scatter_add_rows(void* y_, const void* src_, const int64_t* idx, int64_t outer, int64_t n, int64_t size,
                         int64_t row, int nt) {
    T* restrict y = y_;
    const T* restrict src = src_;
    for (int64_t i = 0; i < n; ++i)
        if (idx[i] < 0 || idx[i] >= size) return i;
    if (nt < 1) nt = 1;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int t = 0; t < nt; ++t) {
        const int64_t lo = row * t / nt, hi = row * (t + 1) / nt;
        for (int64_t o = 0; o < outer; ++o) {
            T* yo = y + o * size * row;
            const T* so = src + o * n * row;
            for (int64_t i = 0; i < n; ++i) {
                T* restrict d = yo + idx[i] * row;
                const T* restrict s = so + i * row;
                for (int64_t j = lo; j < hi; ++j) d[j] += s[j];
            }
        }
    }
    return -1;
}

/* gather along one axis, any element type (rows of `row` bytes): y[o, j, :] = x[o, idx[j], :]
 * for o < outer, j < n. With wrap, an index in [-size, 0) counts from the end (Paddle's rule);
 * returns -1, or the first position j whose index is outside the range (then nothing is
 * written). */
int64_t gather_rows(void* y_, const void* x_, const int64_t* idx, int64_t outer, int64_t n, int64_t size,
                    int64_t row, int wrap) {
    char* restrict y = y_;
    const char* restrict x = x_;
    const int64_t lo = wrap ? -size : 0;
    for (int64_t j = 0; j < n; ++j)
        if (idx[j] < lo || idx[j] >= size) return j;
    for (int64_t o = 0; o < outer; ++o) {
        const char* xo = x + o * size * row;
        char* yo = y + o * n * row;
        if (row == 4) { /* a gather along the last axis of float32 / int32 (rotary's rotate-half) */
            for (int64_t j = 0; j < n; ++j) {
                const int64_t k = idx[j] < 0 ? idx[j] + size : idx[j];
                memcpy(yo + 4 * j, xo + 4 * k, 4);
            }
        } else if (row == 8) {
            for (int64_t j = 0; j < n; ++j) {
                const int64_t k = idx[j] < 0 ? idx[j] + size : idx[j];
                memcpy(yo + 8 * j, xo + 8 * k, 8);
            }
        } else {
            for (int64_t j = 0; j < n; ++j) {
                const int64_t k = idx[j] < 0 ? idx[j] + size : idx[j];
                memcpy(yo + j * row, xo + k * row, (size_t)row);
            }
        }
    }
    return -1;
}

/* z[j] = c[j] ? x[j] : y[j] for one row of `n` elements of the unsigned type U (the element's
 * bits: exact for every dtype, NaN payloads included), the operands read at their element
 * strides. Branchless: both operands are loaded and the condition widened to a mask, so the
 * contiguous cases vectorise (a branch per element on a random mask, relu's gradient, ran at
 * 1.75 ms per million elements; numpy's where as bit operations took five passes). */
#define WHERE_ROW(U)                                                                                     \
    do {                                                                                                 \
        U* zr_ = (U*)zr;                                                                                 \
        const U* xr_ = (const U*)(x + xo * item);                                                        \
        const U* yr_ = (const U*)(y + yo * item);                                                        \
        const uint8_t* cr_ = c + co;                                                                     \
        if (cl == 1 && xl == 1 && yl == 1) {                                                             \
            for (int64_t j = 0; j < last; ++j) {                                                         \
                const U a = xr_[j], b = yr_[j], m = (U)((U)0 - (U)(cr_[j] != 0));                        \
                zr_[j] = (U)((a & m) | (b & (U)~m));                                                     \
            }                                                                                            \
        } else if (cl == 1 && xl == 0 && yl == 1) {                                                      \
            const U a = xr_[0];                                                                          \
            for (int64_t j = 0; j < last; ++j) {                                                         \
                const U b = yr_[j], m = (U)((U)0 - (U)(cr_[j] != 0));                                    \
                zr_[j] = (U)((a & m) | (b & (U)~m));                                                     \
            }                                                                                            \
        } else if (cl == 1 && xl == 1 && yl == 0) {                                                      \
            const U b = yr_[0];                                                                          \
            for (int64_t j = 0; j < last; ++j) {                                                         \
                const U a = xr_[j], m = (U)((U)0 - (U)(cr_[j] != 0));                                    \
                zr_[j] = (U)((a & m) | (b & (U)~m));                                                     \
            }                                                                                            \
        } else {                                                                                         \
            for (int64_t j = 0; j < last; ++j) {                                                         \
                const U a = xr_[j * xl], b = yr_[j * yl], m = (U)((U)0 - (U)(cr_[j * cl] != 0));         \
                zr_[j] = (U)((a & m) | (b & (U)~m));                                                     \
            }                                                                                            \
        }                                                                                                \
    } while (0)

/* where(c, x, y) into z (C order, rank dims of `shape`), each operand read through its own
 * element strides (0 along a broadcast dim); `item` bytes an element. A condition constant
 * along the last dim (its stride 0) copies whole rows from the operand it picks; otherwise
 * each row is a branchless select (WHERE_ROW). */
void where_select(void* z_, const uint8_t* c, const void* x_, const void* y_, int64_t rank, const int64_t* shape,
                  const int64_t* cs, const int64_t* xs, const int64_t* ys, int64_t item) {
    char* restrict z = z_;
    const char* x = x_;
    const char* y = y_;
    const int64_t last = rank > 0 ? shape[rank - 1] : 1;
    const int64_t cl = rank > 0 ? cs[rank - 1] : 0, xl = rank > 0 ? xs[rank - 1] : 0, yl = rank > 0 ? ys[rank - 1] : 0;
    int64_t rows = 1;
    for (int64_t d = 0; d + 1 < rank; ++d) rows *= shape[d];
    int64_t pos[16] = {0};
    int64_t co = 0, xo = 0, yo = 0;
    for (int64_t r = 0; r < rows; ++r) {
        char* zr = z + r * last * item;
        if (cl == 0 && (c[co] ? xl : yl) == 1) {
            memcpy(zr, c[co] ? x + xo * item : y + yo * item, (size_t)(last * item));
        } else if (item == 4) {
            WHERE_ROW(uint32_t);
        } else if (item == 8) {
            WHERE_ROW(uint64_t);
        } else if (item == 2) {
            WHERE_ROW(uint16_t);
        } else if (item == 1) {
            WHERE_ROW(uint8_t);
        } else {
            for (int64_t j = 0; j < last; ++j)
                memcpy(zr + j * item, c[co + j * cl] ? x + (xo + j * xl) * item : y + (yo + j * yl) * item,
                       (size_t)item);
        }
        for (int64_t d = rank - 2; d >= 0; --d) { /* the next row: odometer over the leading dims */
            co += cs[d], xo += xs[d], yo += ys[d];
            if (++pos[d] < shape[d]) break;
            co -= cs[d] * shape[d], xo -= xs[d] * shape[d], yo -= ys[d] * shape[d];
            pos[d] = 0;
        }
    }
}
